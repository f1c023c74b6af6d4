"""`make nb`: the notebooks whose stored outputs an uncommitted change may have changed, one path a line.

Usage (through `make nb`, which runs nbval on what this prints):

    python -m tools.changed_notebooks [--base REV]

A lesson (notebooks/X.ipynb) or a graded master (labs/X/X.ipynb) is listed when, compared with REV (default
HEAD, the last commit; untracked files count as changed):
- the notebook or its py:percent twin changed;
- a course_lib module it imports changed, directly or through the modules those import (read from the code with
  ``ast``, never by importing it; importing ``course_lib.viz.x`` runs ``course_lib/__init__.py`` and
  ``course_lib/viz/__init__.py`` too, so they count), or, for a master, the tools module it imports (the graded
  tests' helpers, tools/grading_helpers.py);
- anything every notebook depends on changed: the data files, the nbval settings, the lock or pyproject.toml.
Nothing is printed when nothing changed. Exit status 2 if this is not a git checkout.

>>> sorted(module_files("course_lib.units"))[-1].name
'units.py'
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "course_lib"
# The packages whose modules a notebook's outputs depend on: course_lib, and tools for the masters' test helpers.
PACKAGES = (PACKAGE, "tools")
# Changes that can change any notebook's run or its comparison with the stored outputs.
EVERY_NOTEBOOK = ("course_lib/data/", "tests/nbval_sanitize.cfg", "requirements.lock", "pyproject.toml")


def notebook_twins() -> dict[Path, Path]:
    """{notebook: its py:percent twin} for every lesson's and graded master's twin (jupytext.toml pairs them),
    whether or not its notebook has been made yet."""
    lessons = {ROOT / "notebooks" / f"{py.stem}.ipynb": py for py in sorted((ROOT / "notebooks_py").glob("*.py"))}
    masters = {
        py.with_suffix(".ipynb"): py for py in sorted((ROOT / "labs").glob("*/*.py")) if py.stem == py.parent.name
    }
    return lessons | masters


def executed_notebooks() -> dict[Path, Path]:
    """{notebook: its py:percent twin} for every lesson and graded master that exists."""
    return {notebook: py for notebook, py in notebook_twins().items() if notebook.exists()}


def changed_files(base: str = "HEAD") -> set[str]:
    """Paths (relative to the repository, POSIX) that differ from ``base`` in the work tree, or are untracked."""

    def git(*args: str) -> list[str]:
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True)
        return [line for line in done.stdout.splitlines() if line]

    return set(git("diff", "--name-only", base)) | set(git("ls-files", "--others", "--exclude-standard"))


def module_path(module: str) -> Path | None:
    """The file of a course_lib module or package ('course_lib.viz': course_lib/viz/__init__.py), or None."""
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def imported_modules(source: str, module: str | None = None, is_package: bool = False) -> set[str]:
    """The course_lib (and tools) modules that ``source`` imports, each with the packages above it (their __init__ runs
    first).

    ``module`` is the importing module's own name, to resolve relative imports (``from .. import units``); a
    name imported from a package may be a submodule (``from course_lib import units``), so both are listed.

    >>> sorted(imported_modules("from course_lib import units"))
    ['course_lib', 'course_lib.units']
    >>> sorted(imported_modules("from .style import COLORS", "course_lib.viz.compute"))
    ['course_lib', 'course_lib.viz', 'course_lib.viz.style']
    """
    names: set[str] = set()
    nodes = list(ast.walk(ast.parse(source)))
    for node in nodes:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if module is None:
                    continue
                parts = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    # A module that starts another course_lib module as a program names it in a string (`python -m course_lib.x`).
    started = {
        f"{node.value}.__main__"
        for node in nodes
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(f"{PACKAGE}.")
    }
    found = set()
    for name in names | started:
        parts = name.split(".")
        if parts[0] not in PACKAGES:
            continue
        for end in range(1, len(parts) + 1):
            prefix = ".".join(parts[:end])
            if module_path(prefix) is not None:
                found.add(prefix)
            elif end == len(parts) and ".".join(parts[:-1]) in found:
                found.update(lazy_exports(".".join(parts[:-1])).get(parts[-1], ()))
    return found


@cache
def lazy_exports(package: str) -> dict[str, tuple[str, ...]]:
    """{name: (module,)} for a package that imports a name's submodule on first use, through a dict of names to
    relative module names in its __init__ (as ``course_lib.widgets`` does); empty for any other package.

    >>> lazy_exports("course_lib.widgets")["serving_lab"]
    ('course_lib.widgets.serving',)
    """
    path = module_path(package)
    if path is None or path.name != "__init__.py":
        return {}
    exports = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if all(isinstance(part, ast.Constant) and isinstance(part.value, str) for part in (key, value)):
                    if value.value.startswith(".") and module_path(package + value.value) is not None:
                        exports[key.value] = (package + value.value,)
    return exports


@cache
def module_files(module: str) -> frozenset[Path]:
    """The files of ``module`` and of every course_lib module it imports, directly or not."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(direct_imports(name))
    return frozenset(path for name in seen if (path := module_path(name)) is not None)


@cache
def direct_imports(module: str) -> frozenset[str]:
    """The course_lib modules that ``module``'s own code imports (each file is read and parsed once)."""
    path = module_path(module)
    if path is None:
        return frozenset()
    return frozenset(imported_modules(path.read_text(encoding="utf-8"), module, path.name == "__init__.py"))


def notebook_dependencies(notebook: Path, twin: Path) -> set[Path]:
    """The files a notebook's stored outputs depend on: itself, its twin and the course_lib modules it runs."""
    files = {notebook, twin}
    for module in imported_modules(twin.read_text(encoding="utf-8")):
        files |= module_files(module)
    return files


def notebook_inputs(notebook: Path, twin: Path) -> list[Path]:
    """Every file, in path order, whose change may change a notebook's stored outputs: its dependencies and what
    every notebook depends on (EVERY_NOTEBOOK); `make sync` hashes them."""
    every = [path for prefix in EVERY_NOTEBOOK for path in [ROOT / prefix, *(ROOT / prefix).rglob("*")]]
    return sorted(path for path in notebook_dependencies(notebook, twin) | set(every) if path.is_file())


def changed_notebooks(changed: set[str]) -> list[Path]:
    """The executed notebooks that a change of the ``changed`` paths may affect, in path order."""
    if any(path.startswith(EVERY_NOTEBOOK) for path in changed):
        return sorted(executed_notebooks())
    touched = {ROOT / path for path in changed}
    return sorted(
        notebook for notebook, twin in executed_notebooks().items() if notebook_dependencies(notebook, twin) & touched
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="HEAD", help="the revision to compare with (default: HEAD)")
    args = parser.parse_args(argv)
    try:
        changed = changed_files(args.base)
    except (subprocess.CalledProcessError, FileNotFoundError) as error:
        print(f"tools/changed_notebooks.py: cannot ask git what changed: {error}", file=sys.stderr)
        return 2
    for notebook in changed_notebooks(changed):
        print(notebook.relative_to(ROOT).as_posix())
    return 0


if __name__ == "__main__":
    sys.exit(main())
