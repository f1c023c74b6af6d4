"""The worker: runs a submission's code, then answers the grader's calls. The only grading code in the sandbox.

tools/grade.py starts it inside bubblewrap (tools/grading_sandbox.py) as

    python tools/grading_runner.py LIMITS_JSON NOTEBOOK [FILE ...]

(FILE: the course_lib files whose functions the lab's tests forbid, e.g. course_lib/collectives.py) with a pipe
from the grader on stdin and a pipe to it on stdout, and then

1. it lowers its resource limits (LIMITS_JSON: {"address_space_bytes", "processes", "cpu_s", "file_bytes"}, see
   ``resource.setrlimit``); everything the notebook starts inherits them;
2. it imports those files' modules and notes their functions (``reference_table``), before any code of the
   notebook runs;
3. it keeps the two pipes for itself, points the standard streams at /dev/null and runs the notebook's code cells
   in order in an IPython shell in this process, as a kernel would (magics work), leaving out the cells otter
   leaves out (tagged ``otter_ignore``) and running a stub in place of each of otter's own lines (``import otter``,
   ``grader = otter.Notebook(...)``, ``grader.check(...)``): ``code_cells`` and ``python_source``, which the
   integrity scan reads too; a cell that raises is reported and the next one runs;
4. it says ``{"ready": true, "cells": N, "failed": K}`` and answers, one JSON line each (tools/grading_wire.py):
   - ``{"id", "op": "lookup", "names": [...]}``: what each name of the notebook is, ``{"kind": "callable"}``,
     ``{"kind": "value", "value": ...}`` or ``{"kind": "missing"}``;
   - ``{"id", "op": "call", "name", "args", "kwargs", "forbidden", "files"}``: the answer's result as plain data,
     ``{"result": ..., "called": [...]}`` (the reference functions named in ``forbidden`` are disabled during
     the call, as tools/grading_helpers.py's ``calling`` does, on the function objects noted in step 2: ``called``
     names those the answer called), or ``{"raised": [the exception's class names], "message"}``;
   until the grader closes the pipe.

It holds no test, no expected value and no score: the grader (tools/grading_verifier.py) keeps those outside the
sandbox, and trusts nothing this process says beyond reading it as plain data. The student's code runs in this
same process and may change any of it; what it can gain is only to answer wrongly (or to rebuild a disabled
function from its public source, which the integrity scan flags where it reaches into a function's internals).
Standard library, IPython and the two tools/ files beside it.
"""

from __future__ import annotations

import json
import os
import re
import resource
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # grading_wire.py and grading_helpers.py, beside it

from grading_helpers import disable, reference_functions
from grading_wire import ANSWER_BYTES, build_course_dataclass, decode, dumps, encode, loads

MESSAGE_CHARS = 300  # of an exception's message; the grader cuts and escapes it again
# Otter's own lines in a student notebook: its set-up and the public checks, which need otter's tests/ folder.
OTTER_LINE = re.compile(
    r"\s*(import\s+otter|grader\s*=\s*otter\.Notebook\(.*\)|grader\.(check|check_all|export)\(.*\))\s*(#.*)?"
)


def apply_limits(limits: dict) -> None:
    """Lower this process's limits (and so its children's) to ``limits``; never raises them."""
    for name, key in (
        ("RLIMIT_AS", "address_space_bytes"),
        ("RLIMIT_NPROC", "processes"),
        ("RLIMIT_CPU", "cpu_s"),
        ("RLIMIT_FSIZE", "file_bytes"),
    ):
        if limits.get(key) is None:
            continue
        which = getattr(resource, name)
        soft, hard = resource.getrlimit(which)
        value = int(limits[key])
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))


# Python's tokenizer ends a line at \n, \r\n or \r only (str.splitlines() also at \f, \v, \x1c-\x1e, \x85, U+2028
# and U+2029, which Python reads inside a line: a comment would hide what follows).
LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
# What stands in for an otter line: the line's own indentation and a statement that does nothing, so that the code
# around it means what it meant (a line removed would join what it separated, e.g. the two ends of a string).
OTTER_STUB = "None  # an otter line, not run by the grader"


def code_cells(notebook: dict) -> list[tuple[int, str]]:
    """[(the cell's number in the notebook, from 1; its source)] of the code the grading runs: every code cell but
    those tagged ``otter_ignore``, otter's lines each replaced by ``OTTER_STUB`` (cells of nothing else left out).
    The integrity scan (tools/grading_scan.py) reads exactly these sources, as ``python_source`` transforms them.

    >>> code_cells({"cells": [{"cell_type": "code", "metadata": {}, "source": ["import otter\\n", "x = 1"]},
    ...                       {"cell_type": "code", "metadata": {"tags": ["otter_ignore"]}, "source": "lab()"},
    ...                       {"cell_type": "code", "metadata": {}, "source": 'grader.check("q1")'}]})
    [(1, 'None  # an otter line, not run by the grader\\nx = 1')]
    """
    sources = []
    for index, cell in enumerate(notebook.get("cells", []) if isinstance(notebook, dict) else [], 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        metadata = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        tags = metadata.get("tags") if isinstance(metadata.get("tags"), list) else []
        if "otter_ignore" in tags:
            continue
        source = cell.get("source", "")
        source = "".join(map(str, source)) if isinstance(source, list) else str(source)
        lines, others = [], False
        for line in LINE.findall(source):
            body = line.rstrip("\r\n")
            if OTTER_LINE.fullmatch(body):
                indent = body[: len(body) - len(body.lstrip(" \t"))]
                line = indent + OTTER_STUB + line[len(body) :]
            else:
                others = others or bool(body.strip())
            lines.append(line)
        if others:
            sources.append((index, "".join(lines)))
    return sources


def python_source(source: str) -> str:
    """The Python that IPython runs for a cell's ``source`` (magics and shell escapes as calls of
    ``get_ipython()``); ValueError or SyntaxError if IPython cannot read it. The worker runs exactly this (no
    prefilter: no automagic, no autocall), and the integrity scan reads exactly this.

    >>> python_source("%time x = 1")
    "get_ipython().run_line_magic('time', 'x = 1')\\n"
    """
    import warnings

    from IPython.core.inputtransformer2 import TransformerManager

    with warnings.catch_warnings():  # a line IPython splits at U+2028 lacks its end of line: it warns, then reads it
        warnings.simplefilter("ignore")
        return TransformerManager().transform_cell(source)


def run_cells(sources: list[str]):
    """(the IPython shell, how many cells raised) after running ``sources`` in order, each as ``python_source``
    gives it."""
    from IPython.core.async_helpers import _pseudo_sync_runner
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.automagic = False
    config.InteractiveShell.autocall = 0
    shell = InteractiveShell.instance(config=config)
    failed = 0
    for source in sources:
        try:
            code = python_source(source)
        except (SyntaxError, ValueError, RecursionError, IndexError):
            failed += 1
            continue
        # As InteractiveShell.run_cell does (IPython 9.18 interactiveshell.py _run_cell), with the cell's Python given.
        coroutine = shell.run_cell_async(source, store_history=False, silent=False, transformed_cell=code)
        runner = shell.loop_runner if shell.should_run_async(source, transformed_cell=code) else _pseudo_sync_runner
        result = runner(coroutine)
        failed += not result.success
    return shell, failed


def module_of(path_ending: str) -> str | None:
    """The module a path ending of the tests' ``files`` names: course_lib/parallelism/memory.py ->
    course_lib.parallelism.memory; None for anything else."""
    match = re.fullmatch(r"(course_lib(?:/[A-Za-z_][A-Za-z0-9_]*)*)\.py", str(path_ending))
    return match.group(1).replace("/", ".") if match else None


def reference_table(files: list[str]) -> dict:
    """{path ending: reference_functions of it}, the modules imported first: found before the notebook runs, so that
    what the notebook later puts in their place is not what ``disable`` disables."""
    import importlib

    table = {}
    for ending in files:
        name = module_of(ending)
        if name is None:
            continue
        try:
            importlib.import_module(name)
        except Exception:  # a module that does not import here cannot be called by an answer either
            continue
        table[ending] = reference_functions((ending,))
    return table


def lookup(namespace: dict, names: list) -> dict:
    found = {}
    for name in names:
        if not isinstance(name, str) or name not in namespace:
            found[str(name)] = {"kind": "missing"}
        elif callable(namespace[name]):
            found[name] = {"kind": "callable"}
        else:
            found[name] = {"kind": "value", "value": readable(namespace[name])}
    return found


def readable(value):
    try:
        return encode(value)
    except (ValueError, RecursionError):
        return {"$opaque": "value nested too deeply"}


def call(namespace: dict, message: dict, references: dict) -> dict:
    """The reply to a call: the answer's result as plain data (encoded while the functions ``forbidden`` names are
    still disabled: a result that computes when it is read computes without them), the names of those it called;
    or what it raised."""
    function = namespace.get(str(message.get("name")))
    try:
        args = decode(message.get("args", {"$tuple": []}), build_course_dataclass)
        kwargs = decode(message.get("kwargs", {"$dict": []}), build_course_dataclass)
        forbidden = {str(name) for name in message.get("forbidden") or ()}
        files = [str(ending) for ending in message.get("files") or ()]
    except BaseException as error:
        return {"raised": [cls.__name__ for cls in type(error).__mro__], "message": str(error)[:MESSAGE_CHARS]}
    found: dict = {}
    for ending in files:  # the functions found before the notebook ran (any file not foreseen: found now)
        for name, functions in references.get(ending, reference_functions((ending,))).items():
            found.setdefault(name, []).extend(functions)
    called, restore = disable(found, forbidden) if forbidden else (set(), lambda: None)
    try:
        try:
            result = readable(function(*args, **kwargs))
        except BaseException as error:  # whatever the answer raised (SystemExit too) is its answer
            if not called:
                names = [cls.__name__ for cls in type(error).__mro__]
                return {"raised": names, "message": str(error)[:MESSAGE_CHARS]}
            result = None  # it raised what a disabled function raised: the test says which one it called
    finally:
        restore()
    return {"result": result, "called": sorted(called)}


def serve(namespace: dict, requests, replies, references: dict) -> None:
    """Answer each request line of ``requests`` on ``replies`` until the grader closes the pipe."""
    for line in requests:
        try:
            message = loads(line)
        except ValueError:
            continue
        op = message.get("op")
        if op == "lookup":
            reply = {"names": lookup(namespace, list(message.get("names") or ()))}
        elif op == "call":
            reply = call(namespace, message, references)
        else:
            reply = {"error": "unknown op"}
        line = dumps({"id": message.get("id"), **reply})
        if len(line) > ANSWER_BYTES:  # an answer too large to send: the grader reads it as an object it cannot read
            line = dumps({"id": message.get("id"), "result": {"$opaque": "answer larger than 1 MB"}, "called": []})
        replies.write(line)
        replies.flush()


def main(argv: list[str]) -> int:
    limits_json, notebook_path, *files = argv
    apply_limits(json.loads(limits_json))
    references = reference_table(files)  # before any of the notebook's code runs
    # The pipes to the grader, on descriptors the notebook's processes do not inherit; its own streams go nowhere.
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDWR)
    for descriptor in (0, 1, 2):
        os.dup2(null, descriptor)
    import warnings

    warnings.simplefilter("ignore")
    with open(notebook_path, encoding="utf-8") as stream:
        sources = [source for _, source in code_cells(json.load(stream))]
    shell, failed = run_cells(sources)
    replies.write(dumps({"ready": True, "cells": len(sources), "failed": failed}))
    replies.flush()
    serve(shell.user_ns, requests, replies, references)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
