"""pytest configuration for the whole repository (the settings themselves are in pyproject.toml)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent

# The py:percent twins of the notebooks (notebooks_py/ for the lessons, labs/source/ for the graded masters) are not
# modules: --doctest-modules must not import them, even when pytest is pointed at their folder (the notebooks
# themselves, notebooks/*.ipynb and labs/source/*.ipynb, run under nbval). The student versions in labs/
# have no stored outputs to compare and `...` for answers: tests/test_grading.py grades them untouched (zero
# points, no crash) and the browser tests run them in JupyterLab.
# (A list, not the glob "labs/*.ipynb": fnmatch's * also matches "/", so the glob would hide labs/source/ too.)
collect_ignore_glob = ["notebooks_py/*.py", "labs/source/*.py"]
collect_ignore = [path.relative_to(ROOT).as_posix() for path in sorted((ROOT / "labs").glob("*.ipynb"))]


def pytest_configure(config):
    # nbval's kernels inherit this environment. Give them the one the stored outputs were made in
    # (tools/execute_notebooks.py): a fixed set/dict order, and matplotlib's inline backend (MPLBACKEND
    # would replace it and drop every figure). `make test` sets the same; this covers a bare `pytest`.
    if getattr(config.option, "nbval", False):
        os.environ["PYTHONHASHSEED"] = "0"
        os.environ.pop("MPLBACKEND", None)


@pytest.fixture(autouse=True, scope="session")
def _doctest_names(doctest_namespace):
    """Names every docstring example in course_lib may use without importing them: the unit constants and the
    display formatters of ``course_lib.units`` (so the formula modules need not import formatters they never call),
    and ``plt`` (so the figure modules' examples can close their figures without an import the module never uses)."""
    import matplotlib.pyplot as plt

    from course_lib import units

    doctest_namespace.update({name: getattr(units, name) for name in units.__all__})
    doctest_namespace["plt"] = plt


@pytest.fixture(scope="session")
def assigned_out(tmp_path_factory) -> Path:
    """For the grading tests (tests/test_grading*.py): every lab assigned once per session (otter assign, without
    its own test run) into a temporary folder."""
    out = tmp_path_factory.mktemp("assignments")
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "assignments.py"), "--out", str(out), "--no-run-tests"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"tools/assignments.py failed:\n{done.stdout}\n{done.stderr}"
    return out
