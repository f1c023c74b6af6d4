"""The test tiers (conftest.py) and `make nb`'s choice of notebooks (tools/changed_notebooks.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tools import assignments, changed_notebooks

ROOT = Path(__file__).resolve().parents[1]

LESSONS = sorted(path.name for path in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
# Every notebook in notebooks/: the lessons and the glossary (markdown only: it imports nothing).
NOTEBOOKS = sorted(path.name for path in (ROOT / "notebooks").glob("*.ipynb"))
MASTERS = sorted(f"{lab}.ipynb" for lab in assignments.lab_names())


@pytest.fixture(scope="module")
def conftest(request):
    """The repository's conftest.py as pytest loaded it (a plugin registered under its path)."""
    return request.config.pluginmanager.get_plugin(str(ROOT / "conftest.py"))


@pytest.mark.parametrize(
    ("path", "tier"),
    [
        ("notebooks/01_mac.ipynb", "notebook"),
        ("labs/01_ring_allreduce/01_ring_allreduce.ipynb", "notebook"),
        ("tests/test_execute_notebooks.py", "notebook"),
        ("tests/test_grading.py", "grading"),
        ("tests/test_grading_checks.py", "grading"),
        ("tests/test_grading_cgroup.py", "grading"),
        ("tests/browser/test_labs_in_browser.py", "browser"),
        ("tests/test_environments.py", "env"),
        ("tests/test_binder.py", "env"),
        ("tests/test_collectives.py", None),
        ("course_lib/collectives.py", None),
        ("tests/test_notebooks.py", None),  # reads the notebooks as files: quick
    ],
)
def test_each_path_has_its_tier(conftest, path, tier):
    assert conftest.tier_of(path) == tier


@pytest.mark.slow  # collects the whole suite twice (about 20 s)
def test_quick_tier_selects_most_tests_and_no_heavy_one(conftest):
    # Collect-only (no test runs): what `make quick` would run, against everything.
    def collected(*options):
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *options],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return [line for line in done.stdout.splitlines() if "::" in line]

    everything = collected()
    quick = collected("-m", "not (notebook or grading or browser or env or slow)", "tests", "course_lib")
    assert len(quick) >= 0.85 * len(everything), f"make quick runs {len(quick)} of {len(everything)} tests"
    heavy = [nodeid for nodeid in quick if conftest.tier_of(nodeid.split("::")[0]) is not None]
    assert heavy == []


def names(changed: set[str]) -> list[str]:
    return [path.name for path in changed_notebooks.changed_notebooks(changed)]


def test_a_twin_change_selects_its_notebook_alone():
    assert names({"notebooks_py/01_mac.py"}) == ["01_mac.ipynb"]
    assert names({"labs/06_serving/06_serving.py"}) == ["06_serving.ipynb"]


def test_a_lab_folder_file_that_no_notebook_runs_selects_nothing():
    assert names({"labs/06_serving/wrong_answers.py", "labs/06_serving/prose_numbers.py"}) == []


def test_the_graded_tests_helpers_select_the_masters_that_import_them():
    # Every master imports tools/grading_helpers.py in its `# IGNORE` cell.
    assert names({"tools/grading_helpers.py"}) == MASTERS


def test_nothing_that_a_notebook_runs_selects_nothing():
    assert names(set()) == []
    assert names({"README.md", "tests/test_collectives.py", "tools/grade.py"}) == []


def test_a_lazily_exported_lab_selects_only_its_master():
    # course_lib.widgets imports serving_lab's module on first use: only lab 6 imports it.
    assert names({"course_lib/widgets/serving.py"}) == ["06_serving.ipynb"]


def test_a_module_started_as_a_program_counts():
    # The MPI worker is never imported by a notebook: measure starts it with `python -m course_lib.measure worker`.
    assert {"07_measure.ipynb", "08_measure_collectives.ipynb"} <= set(names({"course_lib/measure/worker.py"}))


def test_a_formula_module_every_notebook_imports_selects_them_all():
    # course_lib/__init__.py imports the formula modules, so every notebook that imports course_lib runs them.
    assert sorted(names({"course_lib/units.py"})) == sorted(LESSONS + MASTERS)


def test_data_and_settings_select_every_notebook():
    for path in ("course_lib/data/playbook_runs.csv", "tests/nbval_sanitize.cfg", "requirements.lock"):
        assert sorted(names({path})) == sorted(NOTEBOOKS + MASTERS), path


def test_relative_imports_resolve_from_the_importing_module():
    found = changed_notebooks.imported_modules("from .. import units\nfrom .style import COLORS", "course_lib.viz.x")
    assert found == {"course_lib", "course_lib.units", "course_lib.viz", "course_lib.viz.style"}
    # In a package's __init__, one dot is the package itself.
    assert changed_notebooks.imported_modules("from . import budget", "course_lib", is_package=True) == {
        "course_lib",
        "course_lib.budget",
    }
