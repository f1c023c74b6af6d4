"""course_lib's docstring examples are self-contained: each imports what it uses, so it runs as written when copied
into a fresh notebook, and pytest needs no conftest.py to run them."""

import ast
import builtins
import doctest
import importlib
import os
import pkgutil
import subprocess
import symtable
import sys
from pathlib import Path

import pytest

import course_lib

ROOT = Path(__file__).resolve().parents[1]

# Without the repository's conftest.py (--noconftest), nbval or the addopts of pyproject.toml.
NO_CONFTEST_COMMAND = ["-m", "pytest", "-p", "no:nbval", "-o", "addopts=", "--doctest-modules", "--noconftest"]


@pytest.mark.slow  # every doctest again, in a process of its own (about 15 s); the quick tier runs them with conftest
def test_the_doctests_pass_without_conftest():
    env = {name: value for name, value in os.environ.items() if name != "PYTEST_ADDOPTS"}
    done = subprocess.run(
        [sys.executable, *NO_CONFTEST_COMMAND, "course_lib"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    assert " passed" in done.stdout.splitlines()[-1] and " failed" not in done.stdout.splitlines()[-1]


def own_names(module) -> set:
    """What ``module`` defines itself (a function, class or assignment at its top level) or re-exports (``__all__``):
    the names a docstring example may use without importing them, as ``pytest --doctest-modules`` runs it in the
    module's namespace. What the module merely imports is not among them."""
    names = set(getattr(module, "__all__", ()))
    for node in ast.parse(Path(module.__file__).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(name.id for name in ast.walk(target) if isinstance(name, ast.Name))
    return names


def free_names(source: str) -> set:
    """The global names ``source`` reads without binding them (an import, an assignment, a loop variable...)."""
    top = symtable.symtable(source, "<doctest>", "exec")
    bound = {symbol.get_name() for symbol in top.get_symbols() if symbol.is_assigned() or symbol.is_imported()}
    free = set()
    tables = [top]
    while tables:
        table = tables.pop()
        tables.extend(table.get_children())
        for symbol in table.get_symbols():
            if symbol.is_referenced() and (symbol.is_global() if table is not top else True):
                free.add(symbol.get_name())
    return free - bound


def course_lib_doctests():
    for info in pkgutil.walk_packages(course_lib.__path__, "course_lib."):
        if info.name.endswith(".__main__"):
            continue  # pytest does not import a __main__.py for its doctests either
        module = importlib.import_module(info.name)
        for test in doctest.DocTestFinder().find(module):
            if test.examples and test.filename == module.__file__:
                yield module, test


def test_every_doctest_imports_the_names_its_module_only_imports():
    """An example may call what its module defines; everything else (a unit, a formatter, ``plt``, ``np``, another
    course_lib module) it imports itself, so it does not depend on what the module happens to import."""
    missing = {}
    for module, test in course_lib_doctests():
        source = "\n".join(example.source for example in test.examples)
        names = free_names(source) - own_names(module) - set(dir(builtins))
        if names:
            missing[test.name] = sorted(names)
    assert not missing, f"examples that use names they do not import: {missing}"


@pytest.mark.parametrize(
    "source, free",
    [
        ("from course_lib.units import MB\nx = 2 * MB\nx", set()),
        ("format_time(2 * MB)", {"format_time", "MB"}),
        ("[format_bytes(s) for s in sizes]", {"format_bytes", "sizes"}),
        ("import matplotlib.pyplot as plt\nplt.close('all')", set()),
        ("for t in range(3):\n    print(t, GB)\n", {"GB", "range", "print"}),
    ],
)
def test_free_names_finds_what_an_example_does_not_bind(source, free):
    assert free_names(source) == free
