"""Integrity scan of a submission: what its code tries besides answering, read with Python's ``ast`` (never run).

``scan_notebook(notebook)`` returns a list of ``Flag(kind, cell, line, detail)``, one per suspicious construct in
the notebook's code cells. The kinds (``KINDS``):

- ``otter internals``: imports or uses otter beyond ``otter.Notebook`` (its test classes, runners, results), or
  names otter's files (``tests/``, ``results.json``...);
- ``introspection``: frames (of functions, generators, coroutines, tracebacks), stacks, tracers, the garbage
  collector's object lists, /proc, an object's ``__class__``, ``__subclasses__``, ``__dict__``, ``__code__``...;
- ``patches a module``: assigns or deletes an attribute of ``math``, ``numpy``, ``builtins``, ``course_lib``,
  otter or the ``grader`` (also through ``setattr`` or an alias such as ``np`` or ``from course_lib import x``);
- ``files``: opens a file for writing, deletes, renames or creates files and folders, %%writefile;
- ``processes``: subprocess, os.system/popen/exec/spawn/fork, signals, os.kill, shell escapes and the magics that
  reach outside Python in every form IPython runs them (``!cmd``, ``x = !cmd``, ``%%bash``, ``%load_ext``, ``%pip``,
  ``get_ipython().system(...)``; the code inside ``%time`` and ``%%capture`` is scanned as any other);
- ``environment``: reads environment variables or ``sys.argv``;
- ``dynamic code``: exec, eval, compile, __import__, importlib, attribute names computed at run time (``getattr``,
  ``operator.attrgetter``, ``methodcaller``, ``__getattribute__`` with a name that is not a constant, on any
  object), a dangerous module or builtin passed around as a value (``x = os``, ``_w = open``, ``f(getattr)``), and
  every magic but the harmless few of ``ALLOWED_MAGICS`` (``%config``, ``%autocall``...): what would hide the rest
  from this scan;
- ``reference internals``: course_lib's private names (``collectives._BUSBW_FACTORS``), which hold what the
  reference functions compute;
- ``unreadable code``: a cell that IPython or Python cannot read (it raises when it runs; what it would do is not
  known), or nested too deeply to scan.

The scan reads exactly the code the worker runs: the sources tools/grading_runner.py's ``code_cells`` gives (otter's
lines replaced by a stub, lines split as Python's tokenizer splits them), as ``python_source`` transforms them.

A flag is a reason for an instructor to read the notebook, not a verdict: tools/grade.py writes the flags into
grades.csv (status "flagged") and the instructor report, never into the student's feedback.

>>> [f.kind for f in scan_sources(["import math", "math.isclose = lambda *a, **k: True"])]
['patches a module']
>>> scan_sources(["def f(x):\\n    return 2 * x"])
[]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .grading_runner import code_cells, python_source

ROOT = Path(__file__).resolve().parents[1]
KINDS = (
    "otter internals",
    "introspection",
    "patches a module",
    "files",
    "processes",
    "environment",
    "dynamic code",
    "reference internals",
    "unreadable code",
)
PROTECTED_MODULES = ("math", "cmath", "numpy", "builtins", "course_lib", "otter", "operator", "numbers", "sys")
OTTER_ALLOWED = {"Notebook"}  # `import otter; grader = otter.Notebook(...)`: otter's init cell
GRADER_ALLOWED = {"check", "check_all", "export", "to_pdf"}
INTROSPECTION_ATTRIBUTES = {
    "_getframe",
    "_current_frames",
    "f_back",
    "f_locals",
    "f_globals",
    "f_builtins",
    "f_code",
    "tb_frame",
    "gi_frame",
    "cr_frame",
    "ag_frame",
    "gi_code",
    "cr_code",
    "ag_code",
    "gi_yieldfrom",
    "cr_await",
    "ag_await",
    "tb_next",
    "f_trace",
    "__traceback__",
    "monitoring",
    "settrace_all_threads",
    "setprofile_all_threads",
    "_current_exceptions",
    "settrace",
    "setprofile",
    "gettrace",
    "getprofile",
    "get_referrers",
    "get_referents",
    "get_objects",
    "currentframe",
    "getouterframes",
    "getinnerframes",
}
INTROSPECTION_MODULES = {"inspect", "gc", "traceback", "ctypes", "dis", "pickle", "dill", "marshal"}
PROCESS_MODULES = {
    "subprocess",
    "signal",
    "multiprocessing",
    "pty",
    "pexpect",
    "psutil",
    "asyncio.subprocess",
    "atexit",  # code that runs after the tests, e.g. to rewrite their results
    "threading",  # code that runs beside the tests, out of sight of a tracer
    "_thread",
    "concurrent.futures",
}
OS_PROCESS = re.compile(r"^(system|popen|exec\w*|spawn\w*|fork\w*|kill\w*|abort|_exit|posix_spawn\w*|setsid|nice)$")
OS_FILES = re.compile(
    r"^(remove|unlink|rmdir|removedirs|rename|renames|replace|mkdir|makedirs|chmod|chown|lchown|symlink|link|"
    r"truncate|ftruncate|open|write|mkfifo|mknod|utime|chdir|fchmod)$"
)
PATH_WRITES = {"write_text", "write_bytes", "unlink", "rmdir", "touch", "mkdir", "symlink_to", "hardlink_to"}
# Otter's files in the grading folder: its tests, results and log.
OTTER_FILES = re.compile(r"(^|/|\*)(tests|autograder|results|source)/|results\.(json|pkl)|\.otter_log|otter_config")
DYNAMIC = {"exec", "eval", "compile", "__import__", "execfile", "globals", "vars", "breakpoint", "locals"}
# Read on any object, these reach what a function, class or module is made of (and so a disabled reference function's
# code, or every class of the process).
INTERNAL_ATTRIBUTES = {
    "__code__", "__globals__", "__closure__", "__builtins__", "__class__", "__subclasses__", "__mro__", "__bases__",
    "__base__", "__dict__", "__kwdefaults__", "__defaults__", "__wrapped__", "__func__", "__self__",
    "__getattribute__", "__reduce__", "__reduce_ex__", "__loader__", "__spec__",
}  # fmt: skip
# A module or builtin that is dangerous to pass around as a value: under another name, the scan could not see what
# it does (``x = os; x.system(...)``, ``_w = open``).
DANGEROUS_MODULES = {
    "os", "posix", "sys", "subprocess", "shutil", "builtins", "importlib", "inspect", "gc", "ctypes", "signal",
    "threading", "_thread", "multiprocessing", "runpy", "code", "pty", "atexit", "operator", "types", "marshal",
    "pickle", "tempfile",
}  # fmt: skip
# Of these, every attribute is dangerous as a value; of the others (os, sys, operator...), the ones named here.
DANGEROUS_THROUGHOUT = {
    "subprocess", "shutil", "builtins", "importlib", "inspect", "gc", "ctypes", "signal", "threading", "_thread",
    "multiprocessing", "runpy", "pty", "atexit", "marshal", "pickle", "tempfile",
}  # fmt: skip
DANGEROUS_ATTRIBUTES = {"sys._getframe", "sys.settrace", "sys.setprofile", "sys.modules", "operator.attrgetter",
                        "operator.methodcaller", "types.FunctionType", "types.CodeType"}  # fmt: skip
DANGEROUS_BUILTINS = {
    "open", "exec", "eval", "compile", "__import__", "getattr", "setattr", "delattr", "vars", "globals", "locals",
    "breakpoint",
}  # fmt: skip
# Attribute lookups by a name given at run time.
COMPUTED_LOOKUPS = {
    "getattr", "builtins.getattr", "setattr", "builtins.setattr", "delattr", "builtins.delattr", "hasattr",
    "operator.attrgetter", "operator.methodcaller", "inspect.getattr_static", "object.__getattribute__",
    "type.__getattribute__",
}  # fmt: skip
GRADER_MODULES = {"__main__", "grading_runner", "grading_helpers", "grading_wire", "tools", "IPython", "ipykernel"}


@dataclass(frozen=True)
class Flag:
    kind: str
    cell: int  # the code cell's index among the notebook's cells, from 1
    line: int
    detail: str

    def __str__(self) -> str:
        return f"{self.kind} (cell {self.cell}, line {self.line}: {self.detail})"


def dotted(node: ast.AST) -> str:
    """``a.b.c`` for an attribute chain on a name, "" otherwise."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Call):  # e.g. Path("x").write_text: keep the tail
        return ".".join(["()", *reversed(parts)])
    return ""


class _Scanner(ast.NodeVisitor):
    def __init__(self, cell: int, aliases: dict[str, str]):
        self.cell = cell
        self.aliases = aliases  # local name -> module path it stands for (shared across cells)
        self.flags: list[Flag] = []

    def flag(self, kind: str, node: ast.AST, detail: str) -> None:
        self.flags.append(Flag(kind, self.cell, getattr(node, "lineno", 0), detail[:80]))

    def resolve(self, name: str) -> str:
        """The module path behind a dotted name: np.linalg -> numpy.linalg."""
        head, _, rest = name.partition(".")
        base = self.aliases.get(head, head)
        return f"{base}.{rest}" if rest else base

    def check_module(self, module: str, node: ast.AST) -> None:
        top = module.split(".")[0]
        if top in GRADER_MODULES:
            self.flag("otter internals", node, f"import {module} (the grader's or IPython's internals)")
        if top == "otter" and module != "otter":
            self.flag("otter internals", node, f"import {module}")
        if top in INTROSPECTION_MODULES:
            self.flag("introspection", node, f"import {module}")
        if module in PROCESS_MODULES or top in PROCESS_MODULES:
            self.flag("processes", node, f"import {module}")
        if top in ("importlib", "runpy", "code", "codeop"):
            self.flag("dynamic code", node, f"import {module}")
        if module in ("shutil", "tempfile") or top == "shutil":
            self.flag("files", node, f"import {module}")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.check_module(alias.name, node)
            local = alias.asname or alias.name.split(".")[0]
            self.aliases[local] = alias.name if alias.asname else alias.name.split(".")[0]
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        self.check_module(module, node)
        for alias in node.names:
            full = f"{module}.{alias.name}"
            if module.split(".")[0] == "course_lib" and alias.name.startswith("_"):
                self.flag("reference internals", node, full)
            if module == "otter" and alias.name not in OTTER_ALLOWED:
                self.flag("otter internals", node, f"from otter import {alias.name}")
            if module.split(".")[0] == "os" and (OS_PROCESS.match(alias.name) or alias.name in ("environ", "getenv")):
                self.flag(
                    "processes" if OS_PROCESS.match(alias.name) else "environment", node, f"from os import {alias.name}"
                )
            if module == "sys" and alias.name in (
                "argv",
                "orig_argv",
                "_getframe",
                "settrace",
                "setprofile",
                "modules",
            ):
                self.flag(
                    "environment" if "argv" in alias.name else "introspection", node, f"from sys import {alias.name}"
                )
            self.aliases[alias.asname or alias.name] = full
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.classify(self.resolve(dotted(node)), node.attr, node, isinstance(node.ctx, ast.Store))
        self.passed_around(node)
        self.generic_visit(node)

    def passed_around(self, node: ast.AST) -> None:
        """Flag a dangerous module or builtin read as a value (not called, not the object of an attribute): an
        alias, an argument, an item of a list would hide what it is used for."""
        if not isinstance(getattr(node, "ctx", None), ast.Load):
            return
        parent = getattr(node, "parent", None)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return
        if isinstance(parent, ast.Call) and parent.func is node:
            return
        name = self.resolve(dotted(node))
        if not name or name.startswith("()"):
            return
        top, _, attribute = name.partition(".")
        dangerous = (
            name in DANGEROUS_BUILTINS
            or name in DANGEROUS_ATTRIBUTES
            or (top in DANGEROUS_MODULES and not attribute)
            or (top in DANGEROUS_THROUGHOUT and attribute.count(".") == 0)
            or (top == "os" and bool(OS_PROCESS.match(attribute) or OS_FILES.match(attribute)))
        )
        if dangerous:
            self.flag("dynamic code", node, f"{name} used as a value (an alias hides what it does)")

    def classify(self, name: str, attribute: str, node: ast.AST, stored: bool = False) -> None:
        """Flag the attribute ``attribute`` of ``name`` (its resolved dotted name), read as ``x.attr`` or as
        ``getattr(x, "attr")`` with a constant string, which the scan reads as the same thing."""
        if attribute in INTROSPECTION_ATTRIBUTES and not name.startswith("numpy."):
            self.flag("introspection", node, name or attribute)
        elif name.startswith("otter.") and name.split(".")[1] not in OTTER_ALLOWED:
            self.flag("otter internals", node, name)
        elif name.startswith("grader.") and name.split(".")[1] not in GRADER_ALLOWED:
            self.flag("otter internals", node, name)
        elif name in ("os.environ", "os.environb", "os.getenv", "os.putenv", "sys.argv", "sys.orig_argv"):
            self.flag("environment", node, name)
        elif name.startswith("os.") and OS_PROCESS.match(name.split(".")[1]):
            self.flag("processes", node, name)
        elif name.startswith("os.") and OS_FILES.match(name.split(".")[1]):
            self.flag("files", node, name)
        elif name.startswith(("shutil.", "tempfile.")):
            self.flag("files", node, name)
        elif attribute in PATH_WRITES and not name.startswith(("os.", "numpy.", "course_lib.")):
            self.flag("files", node, name or attribute)
        elif attribute in ("__subclasses__", "__mro__", "__bases__", "__dict__", "__class__") and stored:
            self.flag("patches a module", node, name or attribute)
        elif name == "sys.modules" or attribute in INTERNAL_ATTRIBUTES:
            self.flag("introspection", node, name or attribute)
        elif name.startswith("course_lib.") and attribute.startswith("_") and not attribute.startswith("__"):
            self.flag("reference internals", node, name)
        elif name.split(".")[0] in ("builtins", "__builtins__") and attribute in DYNAMIC:  # builtins.exec
            self.flag("dynamic code", node, name)

    def protected(self, target: ast.AST) -> str:
        """The dotted name of ``target`` if it is an attribute of a protected module (or the grader)."""
        name = dotted(target)
        if not name:
            return ""
        resolved = self.resolve(name)
        top = resolved.split(".")[0]
        if top in PROTECTED_MODULES or top in ("grader", "__builtins__"):
            return resolved
        return ""

    def check_targets(self, targets, node) -> None:
        for target in targets:
            for element in ast.walk(target):
                if isinstance(element, ast.Attribute) and self.protected(element):
                    self.flag("patches a module", node, self.protected(element))
                elif isinstance(element, ast.Subscript) and self.protected(element.value):
                    self.flag("patches a module", node, self.protected(element.value) + "[...]")
                elif (
                    isinstance(element, ast.Subscript)
                    and isinstance(element.value, ast.Name)
                    and element.value.id == "__builtins__"
                ):
                    self.flag("patches a module", node, "__builtins__[...]")

    def visit_Assign(self, node: ast.Assign) -> None:
        self.check_targets(node.targets, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.check_targets([node.target], node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.check_targets([node.target], node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        self.check_targets(node.targets, node)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        function = dotted(node.func)
        resolved = self.resolve(function) if function else ""
        last = resolved.split(".")[-1]
        if resolved in ("setattr", "delattr", "object.__setattr__", "object.__delattr__", "type.__setattr__"):
            if node.args and (self.protected(node.args[0]) or dotted(node.args[0]).split(".")[0] in ("grader",)):
                self.flag("patches a module", node, f"{resolved}({dotted(node.args[0])}, ...)")
            elif (
                node.args
                and isinstance(node.args[0], ast.Name)
                and self.resolve(node.args[0].id).split(".")[0] in (PROTECTED_MODULES)
            ):
                self.flag("patches a module", node, f"{resolved}({node.args[0].id}, ...)")
        if resolved in DYNAMIC or last in ("import_module", "reload", "__import__"):
            self.flag("dynamic code", node, resolved)
        if resolved in ("open", "io.open", "codecs.open", "builtins.open") or (
            last == "open" and resolved.startswith("()")
        ):
            mode = (
                node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"), None)
            )
            if mode is not None and not (isinstance(mode, ast.Constant) and set(str(mode.value)) <= set("rbt")):
                self.flag("files", node, f"{resolved or 'open'}(..., mode={ast.unparse(mode)[:20]})")
            path = node.args[0] if node.args else None
            if isinstance(path, ast.Constant) and str(path.value).startswith("/proc"):
                self.flag("introspection", node, f"open({path.value!r})")
        self.computed_lookup(node, resolved, last)
        if resolved == "IPython.get_ipython":  # the bare name is flagged where it is read (visit_Name)
            self.flag("processes", node, "get_ipython() (runs magics and shell commands)")
        self.generic_visit(node)

    def computed_lookup(self, node: ast.Call, resolved: str, last: str) -> None:
        """getattr(x, name), operator.attrgetter(name), x.__getattribute__(name)...: a name that is not a constant
        string is flagged, whatever the object; a constant one is read as the attribute itself."""
        if resolved not in COMPUTED_LOOKUPS and last not in ("__getattribute__", "__getattr__", "getattr_static"):
            return
        names = list(node.args[:1]) if last in ("attrgetter", "methodcaller") else list(node.args[1:2])
        if last in ("__getattribute__", "__getattr__") and node.args:
            names = [node.args[-1]]
        if last == "attrgetter":
            names = list(node.args)
        names += [keyword.value for keyword in node.keywords if keyword.arg in ("name", "attr")]
        target = dotted(node.args[0]) if node.args and last not in ("attrgetter", "methodcaller") else ""
        if (
            not names
            or node.keywords
            and any(keyword.arg is None for keyword in node.keywords)
            or any(isinstance(arg, ast.Starred) for arg in node.args)
        ):
            self.flag("dynamic code", node, f"{resolved or last}(<computed name>)")
            return
        for name in names:
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                self.flag("dynamic code", node, f"{resolved or last}({target or '...'}, <computed name>)")
                continue
            for attribute in name.value.split("."):  # attrgetter("a.b"): each step; getattr(sys, "x") is sys.x
                owner = self.resolve(target) if target else ""
                self.classify(f"{owner}.{attribute}" if owner else attribute, attribute, node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and OTTER_FILES.search(node.value):
            self.flag("otter internals", node, f"the path {node.value[:40]!r}")

    def visit_Name(self, node: ast.Name) -> None:
        self.passed_around(node)
        if node.id == "get_ipython" and isinstance(node.ctx, ast.Load):
            self.flag("processes", node, "get_ipython (runs magics and shell commands)")
        if node.id == "__builtins__":
            self.flag("patches a module" if isinstance(node.ctx, ast.Store) else "introspection", node, node.id)
        self.generic_visit(node)


# The magics a lab needs, which do nothing outside Python: every other magic is flagged (%config, %autocall, %alias,
# %run... reach the shell, files or IPython's own settings, or change what the next cells mean). The code that %time,
# %timeit and %%capture run is scanned as any other.
ALLOWED_MAGICS = {"matplotlib", "time", "timeit", "capture", "who", "whos", "precision", "pprint"}
CODE_MAGICS = {"time", "timeit", "capture"}
SHELL_MAGICS = {
    "bash", "sh", "system", "sx", "script", "perl", "ruby", "python", "python2", "python3", "pypy", "pip", "conda",
    "mamba", "micromamba", "uv", "sc", "cd", "pushd", "popd", "env", "set_env", "load_ext", "reload_ext", "alias",
    "macro", "javascript", "js", "html", "svg",
}  # fmt: skip
FILE_MAGICS = {"writefile", "file", "save", "logstart", "notebook", "store", "load", "run", "edit", "bookmark"}
TIMEIT_OPTIONS = re.compile(r"^\s*(?:-[a-z]+\s*\d*(?=\s)\s*)*")


class _Magics(ast.NodeTransformer):
    """Replaces IPython's calls for magics and shell escapes (as its TransformerManager writes them) by ``None``,
    noting the magics not allowed (``special``) and the code the allowed ones run (``inner``)."""

    def __init__(self):
        self.special: list[tuple[int, str, str]] = []  # (line, kind, text)
        self.inner: list[str] = []

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        function = node.func
        if not (
            isinstance(function, ast.Attribute)
            and isinstance(function.value, ast.Call)
            and isinstance(function.value.func, ast.Name)
            and function.value.func.id == "get_ipython"
            and not function.value.args
        ):
            return node
        arguments = [arg.value if isinstance(arg, ast.Constant) else None for arg in node.args]
        if function.attr in ("system", "getoutput"):
            self.special.append((node.lineno, "processes", f"!{str(arguments[0] if arguments else '')[:56]}"))
        elif function.attr in ("run_line_magic", "run_cell_magic") and arguments and isinstance(arguments[0], str):
            name = arguments[0]
            code = [arg for arg in arguments[1:] if isinstance(arg, str)]
            if name not in ALLOWED_MAGICS or len(code) != len(arguments) - 1:
                kind = "files" if name in FILE_MAGICS else "processes" if name in SHELL_MAGICS else "dynamic code"
                self.special.append((node.lineno, kind, f"%{name} {' '.join(code)[:50]}".strip()))
            elif name in CODE_MAGICS:
                line, cell = code[0] if code else "", code[1] if len(code) > 1 else None
                if name != "capture":  # %%capture's line holds its options and the name of its result
                    self.inner.append(TIMEIT_OPTIONS.sub("", line, count=1))
                if cell is not None:
                    self.inner.append(cell)
        else:
            return node  # any other use of get_ipython() is left for the scanner to flag
        return ast.copy_location(ast.Constant(None), node)


def scan_sources(sources: list[str], cells: list[int] | None = None) -> list[Flag]:
    """Flags of a list of code cell sources, each read as ``python_source`` gives it (``cells``: their numbers in the
    notebook, default 1, 2, ...)."""
    aliases: dict[str, str] = {}
    flags: list[Flag] = []
    for index, source in zip(cells or range(1, len(sources) + 1), sources, strict=True):
        pending, depth = [source], 0
        while pending and depth < 20:  # the code %time runs may itself hold magics
            depth += 1
            inner = []
            for part in pending:
                found, more = _scan_one(part, index, aliases)
                flags += found
                inner += more
            pending = inner
        if pending:
            flags.append(Flag("unreadable code", index, 0, "magics nested too deeply to scan"))
    return flags


def _scan_one(source: str, index: int, aliases: dict[str, str]) -> tuple[list[Flag], list[str]]:
    """(the flags of one source, the sources its allowed magics run)."""
    try:
        tree = ast.parse(python_source(source))
    except (SyntaxError, ValueError, RecursionError, IndexError) as error:
        where = getattr(error, "lineno", 0) or 0
        return [Flag("unreadable code", index, where, f"the cell does not parse ({type(error).__name__})")], []
    magics = _Magics()
    scanner = _Scanner(index, aliases)
    try:
        tree = magics.visit(tree)
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                child.parent = parent  # type: ignore[attr-defined]
        scanner.visit(tree)
    except RecursionError:
        scanner.flags.append(Flag("unreadable code", index, 0, "code nested too deeply to scan"))
    special = [Flag(kind, index, line, text) for line, kind, text in magics.special]
    return special + scanner.flags, magics.inner


def scan_notebook(notebook: dict) -> list[Flag]:
    """Flags of a notebook given as parsed JSON (nbformat 4): the code the worker runs, cell by cell
    (tools/grading_runner.py's ``code_cells``)."""
    cells = code_cells(notebook)
    return scan_sources([source for _, source in cells], [number for number, _ in cells])


def scan_bytes(data: bytes) -> list[Flag]:
    """Flags of a notebook file's bytes; [] for what is not a notebook (otter refuses it anyway)."""
    try:
        notebook = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return []
    return scan_notebook(notebook)


# The scan of one submission runs in a child process under these limits (tools/grade.py): a notebook crafted to make
# the parser grow (a 19 MB one reached 10 GB) is flagged "too large to scan" instead of taking the batch down.
SCAN_ADDRESS_SPACE_BYTES = 2 * 2**30
SCAN_TIMEOUT_S = 120.0


def scan_limited(
    data: bytes, address_space_bytes=SCAN_ADDRESS_SPACE_BYTES, timeout_s=SCAN_TIMEOUT_S, cancel=None
) -> str:
    """``summarise(scan_bytes(data))`` computed in a child process that may use at most ``address_space_bytes`` of
    memory and ``timeout_s`` seconds; "too large to scan (...)" when it cannot finish within them; "" at once when
    ``cancel`` (a threading.Event) is set. Never raises for the submission's sake.

    >>> import json
    >>> cell = {"cell_type": "code", "source": "import os\\nos.system('ls')"}
    >>> scan_limited(json.dumps({"cells": [cell]}).encode())
    'processes (cell 1: os.system)'
    """
    command = [sys.executable, "-B", "-m", "tools.grading_scan", "--address-space-bytes", str(int(address_space_bytes))]
    # The notebook and the answer go through unnamed files, not pipes: nothing to keep writing or reading while
    # waiting (a retried Popen.communicate does not resume writing its input: CPython 3.11 subprocess.py
    # _communicate registers stdin only when given input). A session of its own: a Ctrl-C at the terminal reaches
    # the grader, which stops this child itself.
    with tempfile.TemporaryFile() as given, tempfile.TemporaryFile() as output, tempfile.TemporaryFile() as errors:
        given.write(data)
        given.seek(0)
        child = subprocess.Popen(command, stdin=given, stdout=output, stderr=errors, cwd=ROOT, start_new_session=True)
        end = time.monotonic() + timeout_s
        try:
            while child.poll() is None:
                if (cancel is not None and cancel.is_set()) or time.monotonic() > end:
                    child.kill()
                    child.wait()
                    if cancel is not None and cancel.is_set():
                        return ""
                    return f"too large to scan (it ran past {timeout_s:g} s)"
                time.sleep(0.02)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        output.seek(0)
        errors.seek(0)
        out, err = output.read(), errors.read()
    if child.returncode != 0:
        last = err.decode("utf-8", errors="replace").strip().splitlines()[-1:] or [f"exit {child.returncode}"]
        return f"too large to scan ({last[0][:120]})"
    return out.decode("utf-8", errors="replace").strip()


def main(argv: list[str] | None = None) -> int:
    """``python -m tools.grading_scan --address-space-bytes N``: the summary of the notebook on stdin, under that
    memory limit (set before reading it)."""
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument("--address-space-bytes", type=int, default=SCAN_ADDRESS_SPACE_BYTES)
    limit = arguments.parse_args(argv).address_space_bytes
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sys.setrecursionlimit(10_000)  # deeply nested code is flagged, not a crash: RecursionError is caught below
    try:
        print(summarise(scan_bytes(sys.stdin.buffer.read())))
    except (MemoryError, RecursionError) as error:
        print(f"{type(error).__name__}: the scan needed more than it may use", file=sys.stderr)
        return 1
    return 0


def summarise(flags: list[Flag], limit: int = 6) -> str:
    """One line for grades.csv: the kinds found, each with its first places."""
    by_kind: dict[str, list[Flag]] = {}
    for flag in flags:
        by_kind.setdefault(flag.kind, []).append(flag)
    parts = []
    for kind, found in by_kind.items():
        places = ", ".join(f"cell {f.cell}: {f.detail}" for f in found[:2])
        more = f" and {len(found) - 2} more" if len(found) > 2 else ""
        parts.append(f"{kind} ({places}{more})")
    return "; ".join(parts[:limit])


if __name__ == "__main__":
    sys.exit(main())
