"""pytest configuration for the whole repository (the settings themselves are in pyproject.toml)."""

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from tools import assignments

# A lab's own checks (labs/NN_name/prose_numbers.py), imported by tests/test_lesson_numbers.py, report a failed assert
# with its values, as a test module's do.
pytest.register_assert_rewrite("labs")

ROOT = Path(__file__).resolve().parent

# jsonschema (imported by nbformat, which the notebook tests and tools import) imports rfc3987-syntax when it can,
# which compiles a Lark grammar at import time (2-4 s a process, each pytest-xdist worker being one) for a URI format
# check nbformat never makes; blocked, jsonschema skips that one check. tools/assignments.py does the same for
# otter's processes (SITECUSTOMIZE there). Under `make test` nbval has imported it before this file runs.
sys.modules.setdefault("rfc3987_syntax", None)

# ---- test tiers ------------------------------------------------------------------------------------------------------
# Every test belongs to the quick tier unless one of these markers says otherwise (registered in pyproject.toml).
# `make quick` runs `-m "not (notebook or grading or browser or env or slow)"`; `make test` runs every tier. The four
# tiers that start heavy real components are applied here by path, so a new test file in those places is tiered
# without anyone remembering to mark it; `slow` is marked by hand on the few seconds-long tests of other files.
TIER_PATHS = {
    "notebook": ("notebooks/", "labs/", "tests/test_execute_notebooks.py"),
    "grading": ("tests/test_grading.py", "tests/test_grading_checks.py", "tests/test_grading_cgroup.py"),
    "browser": ("tests/browser/",),
    "env": ("tests/test_environments.py", "tests/test_binder.py"),
}
# pytest-xdist (`make test`, `make quick`: -n auto --dist loadscope) hands out whole modules: a notebook's cells run
# in one kernel, one after another, and a test module's module fixtures are built once. TierScheduling (below) also
# keeps the grading modules together, since they share one build of every lab (a session fixture, built once per
# worker that needs it). xdist's own loadgroup cannot do it: with pytest 9 it no longer sees its groups.
GRADING_SCOPE = "grading"

# Hypothesis: `make test` runs the full profile (as many examples as the most demanding property test asked for
# before there were profiles); `make quick` the small one (`--hypothesis-profile quick`), enough to catch a broken
# property in the inner loop.
settings.register_profile("full", max_examples=300, deadline=None)
settings.register_profile("quick", max_examples=25, deadline=None)
settings.load_profile("full")


def tier_of(relative_path: str) -> str | None:
    """The tier a test file belongs to by its path relative to the repository ('tests/browser/x.py': 'browser'), or
    None for the quick tier."""
    for tier, prefixes in TIER_PATHS.items():
        if relative_path.startswith(prefixes):
            return tier
    return None


# The longest work starts first, so that with one worker a core the run does not end on it alone (with
# --no-loadscope-reorder pytest-xdist hands out scopes in collection order, a new one to a worker when it has two
# tests or fewer left): the grading modules (about 5 minutes), the browser tests, the notebooks, then the rest.
START_FIRST = ("grading", "browser", "notebook")


def pytest_collection_modifyitems(items):
    tiers = {}
    for item in items:
        path = Path(str(item.path)).resolve()
        relative = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.as_posix()
        tier = tiers[item.nodeid] = tier_of(relative)
        if tier is not None:
            item.add_marker(getattr(pytest.mark, tier))
    items.sort(key=lambda item: START_FIRST.index(tiers[item.nodeid]) if tiers[item.nodeid] in START_FIRST else 3)


@pytest.hookimpl(tryfirst=True)  # before xdist's own (firstresult: the first scheduler returned is used)
def pytest_xdist_make_scheduler(config, log):
    """Under --dist loadscope, a scheduler that hands out a module at a time, the grading modules as one."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class TierScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return GRADING_SCOPE if tier_of(path) == "grading" else path

    return TierScheduling(config, log)


# The py:percent twins of the notebooks (notebooks_py/ for the lessons, labs/NN_name/NN_name.py for the graded
# masters) are not modules: --doctest-modules must not import them, even when pytest is pointed at their folder (the
# notebooks themselves, notebooks/*.ipynb and labs/NN_name/NN_name.ipynb, run under nbval). Nor are the other files
# of a lab's folder (its wrong answers, its explore answers): the tests in tests/ import them. The student versions
# in labs/ have no stored outputs to compare and `...` for answers: tests/test_grading.py grades them untouched
# (zero points, no crash) and the browser tests run them in JupyterLab.
# (A list, not the glob "labs/*.ipynb": fnmatch's * also matches "/", so the glob would hide the masters too.)
collect_ignore_glob = ["notebooks_py/*.py", "labs/*/*.py"]
collect_ignore = [path.relative_to(ROOT).as_posix() for path in sorted((ROOT / "labs").glob("*.ipynb"))]


def pytest_configure(config):
    # nbval's kernels inherit this environment. Give them the one the stored outputs were made in
    # (tools/execute_notebooks.py): a fixed set/dict order, and matplotlib's inline backend (MPLBACKEND
    # would replace it and drop every figure). `make test` sets the same; this covers a bare `pytest`.
    if getattr(config.option, "nbval", False):
        os.environ["PYTHONHASHSEED"] = "0"
        os.environ.pop("MPLBACKEND", None)


@pytest.fixture(autouse=True)
def close_figures():
    """No test leaves a pyplot figure open for the next one (the viz modules' ``plot_*`` open them)."""
    yield
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close("all")


ASSIGNMENT_CACHE = ROOT / "build" / "test-cache" / "assignments"


@pytest.fixture(scope="session")
def assigned_out(tmp_path_factory) -> Path:
    """For the grading tests (tests/test_grading*.py): every lab assigned (otter assign, without its own test run),
    in a temporary folder of this session.

    The build is kept in build/test-cache/assignments/<hash of its inputs>/ (tools/assignments.py's inputs_hash, the
    one `make sync` compares), so a second run with the same masters, course_lib, tools and lock copies it instead of
    running otter assign again (about 30 s); only the newest build is kept. Each session gets its own copy, so a test
    that changes a zip changes no cache."""
    key = assignments.inputs_hash(assignments.lab_names())
    cached = ASSIGNMENT_CACHE / key
    ASSIGNMENT_CACHE.mkdir(parents=True, exist_ok=True)
    with open(ASSIGNMENT_CACHE / ".lock", "w") as lock:  # one build at a time, across workers and test runs
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (cached / "complete").exists():
            build_assignments(key, cached)
    out = tmp_path_factory.mktemp("assignments") / "out"
    shutil.copytree(cached, out, ignore=shutil.ignore_patterns("complete"))
    return out


def build_assignments(key: str, cached: Path) -> None:
    """Assign every lab into ``cached`` (via a folder of its own, renamed when complete); drop older builds."""
    building = ASSIGNMENT_CACHE / f"{key}.building-{os.getpid()}"
    shutil.rmtree(building, ignore_errors=True)
    done = subprocess.run(
        [sys.executable, "-m", "tools.assignments", "--out", str(building), "--no-run-tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"tools/assignments.py failed:\n{done.stdout}\n{done.stderr}"
    (building / "complete").write_text(key + "\n", encoding="utf-8")
    for old in ASSIGNMENT_CACHE.iterdir():
        if old not in (building, ASSIGNMENT_CACHE / ".lock"):
            shutil.rmtree(old, ignore_errors=True)
    building.rename(cached)
