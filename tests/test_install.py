"""course_lib installs as a regular package (not only editable): its subpackages and its data (course_lib/data/, read
with importlib.resources) go with it, so an installed copy works from any folder."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import course_lib
from course_lib import measure, published_runs, validation

ROOT = Path(__file__).resolve().parents[1]

# Run by the installed copy, from a folder that holds no course_lib: what it found, and where.
REPORT = """
import json, sys
from course_lib import measure, validation
runs = validation.load_playbook_runs()
files = measure.DATA_DIR.rglob("*")
print(json.dumps({
    "modules": sorted(module.__file__ for name, module in sys.modules.items() if name.startswith("course_lib")),
    "playbook_csv": str(validation.PLAYBOOK_CSV),
    "data_dir": str(measure.DATA_DIR),
    "data_files": sorted(p.relative_to(measure.DATA_DIR).as_posix() for p in files if p.is_file()),
    "runs": len(runs),
    "succeeded": int(runs.succeeded.sum()),
    "recorded_rows": len(measure.Measurements.from_csv(next((measure.DATA_DIR / "mpi").glob("*_all_reduce.csv")))),
}))
"""


def data_files(folder: Path) -> list:
    return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file())


def test_the_data_lives_in_the_package():
    package = Path(course_lib.__file__).parent
    assert measure.DATA_DIR == package / "data" == ROOT / "course_lib" / "data"
    assert validation.PLAYBOOK_CSV == measure.DATA_DIR / "playbook_runs.csv"
    assert published_runs.PUBLISHED_RUNS_CSV == measure.DATA_DIR / "published_runs.csv"
    assert {"README.md", "playbook_runs.csv", "playbook_runs.README.md", "published_runs.csv",
            "published_runs.README.md"} <= set(data_files(measure.DATA_DIR))  # fmt: skip


@pytest.mark.slow
def test_a_regular_install_reads_its_own_data_from_any_folder(tmp_path):
    # A copy of what the build reads, so that the build writes nothing into the repository (build/, *.egg-info).
    source = tmp_path / "source"
    shutil.copytree(ROOT / "course_lib", source / "course_lib", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    target = tmp_path / "site"
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps"]
    done = subprocess.run([*install, "--target", str(target), str(source)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", REPORT],
        cwd=elsewhere,
        env={**os.environ, "PYTHONPATH": str(target)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    installed = target / "course_lib"
    # The installed copy, every module of it: not the repository's (the test environment's editable install would
    # supply a subpackage that the regular install left out).
    assert found["modules"] and all(Path(file).is_relative_to(installed) for file in found["modules"])
    assert str(installed / "budget" / "__init__.py") in found["modules"]
    assert Path(found["data_dir"]) == installed / "data"
    assert Path(found["playbook_csv"]) == installed / "data" / "playbook_runs.csv"
    assert found["data_files"] == data_files(ROOT / "course_lib" / "data")  # every file of course_lib/data/
    assert (found["runs"], found["succeeded"]) == (3306, 1758)
    recorded = measure.Measurements.from_csv(next((measure.DATA_DIR / "mpi").glob("*_all_reduce.csv")))
    assert found["recorded_rows"] == len(recorded)
