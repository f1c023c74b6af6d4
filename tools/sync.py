"""`make sync`: after an edit, re-execute the notebooks and rebuild the graded labs that it changed, and nothing else.

Usage (through `make sync`, which sets PYTHONHASHSEED=0):

    python -m tools.sync [--out build/assignments] [--student-dir labs]

1. Notebooks (as `make notebooks` makes them, tools/execute_notebooks.py): a lesson or a master is re-executed
   unless it is up to date, that is, unless the hash of what its stored outputs depend on (itself, its twin, the
   course_lib modules and tools it imports, what every notebook depends on: tools/changed_notebooks.py) is the one
   recorded in STAMPS when sync last executed or checked it. With no such record it is up to date when its twin is
   in step (tools/twins.py) and none of those files changed after the notebook's own last commit, committed or not
   (git): a course_lib change committed without re-executing the notebooks it affects makes them stale, and a fresh
   clone whose notebooks were committed with (or after) their code executes nothing.
2. Assignments (as `make assignments` makes them, tools/assignments.py, after step 1): a lab is rebuilt unless
   OUT/<lab>/inputs.sha256 holds the hash of what it is made from now (the hash the grading tests key their cache
   with) and its student version in STUDENT_DIR is the one built.

It says what it runs, or that nothing changed; the exit status is 1 if a notebook or a lab failed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from tools import assignments, changed_notebooks

ROOT = Path(__file__).resolve().parents[1]
STAMPS = ROOT / "build" / "sync" / "notebooks.json"


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def uncommitted() -> set[str]:
    """The files that git sees changed or untracked (tools/changed_notebooks.py); none outside a git checkout."""
    try:
        return changed_notebooks.changed_files("HEAD")
    except (subprocess.CalledProcessError, FileNotFoundError):
        return set()


def committed_since(notebook: Path) -> set[str]:
    """The files committed after the last commit that stored ``notebook`` (none for a notebook never committed, or
    outside a git checkout)."""

    def git(*args: str) -> list[str]:
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True)
        return [line for line in done.stdout.splitlines() if line]

    try:
        last = git("log", "-1", "--format=%H", "--", rel(notebook))
        return set(git("diff", "--name-only", last[0], "HEAD")) if last else set()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return set()


def stale_notebooks(
    twins: dict[Path, Path], stamps: dict[str, str], changed: set[str], since=committed_since
) -> list[Path]:
    """The notebooks of ``twins`` ({notebook: twin}) to execute again; records in ``stamps`` the hash of each
    notebook found up to date. ``changed``: the uncommitted files; ``since(notebook)``: the files committed after
    the notebook (``committed_since``)."""
    stale = []
    for notebook, twin in twins.items():
        inputs = changed_notebooks.notebook_inputs(notebook, twin)
        digest = assignments.files_digest(inputs)
        if stamps.get(rel(notebook)) == digest:
            continue
        from tools.twins import difference  # jupytext: imported only when a stamp does not match

        if difference(notebook, twin) is None and not {rel(path) for path in inputs} & (changed | since(notebook)):
            stamps[rel(notebook)] = digest
        else:
            stale.append(notebook)
    return stale


def stale_labs(labs: list[str], out: Path, student_dir: Path | None) -> list[str]:
    """The labs whose build under ``out`` (or student version in ``student_dir``) is missing or out of date."""
    stale = []
    for lab in labs:
        recorded = assignments.inputs_hash_path(lab, out)
        built = out / lab / "student" / f"{lab}.ipynb"
        copied = student_dir / f"{lab}.ipynb" if student_dir else built
        if not (
            recorded.exists()
            and recorded.read_text(encoding="utf-8").strip() == assignments.inputs_hash([lab])
            and built.exists()
            and copied.exists()
            and copied.read_bytes() == built.read_bytes()
        ):
            stale.append(lab)
    return stale


def sync_notebooks(stamps_path: Path = STAMPS) -> tuple[list[Path], list[Path]]:
    """Execute the stale notebooks; return (executed, failed)."""
    twins = changed_notebooks.notebook_twins()
    stamps = json.loads(stamps_path.read_text(encoding="utf-8")) if stamps_path.exists() else {}
    stale = stale_notebooks(twins, stamps, uncommitted())
    executed, failed = [], []
    if stale:
        from tools import execute_notebooks  # the kernel machinery: only when something runs

        print("make sync: executing", *(rel(notebook) for notebook in stale))
        for notebook in stale:
            if execute_notebooks.run(twins[notebook], notebook):
                stamps[rel(notebook)] = assignments.files_digest(
                    changed_notebooks.notebook_inputs(notebook, twins[notebook])
                )
                executed.append(notebook)
            else:
                failed.append(notebook)
    stamps_path.parent.mkdir(parents=True, exist_ok=True)
    stamps_path.write_text(json.dumps(stamps, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return executed, failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=assignments.DEFAULT_OUT, help="build folder of the assignments")
    parser.add_argument("--student-dir", type=Path, default=None, help="where the student versions are copied (labs)")
    arguments = parser.parse_args(argv)
    start = time.perf_counter()
    executed, failed = sync_notebooks()
    failed_masters = {notebook.stem for notebook in failed}
    labs = [lab for lab in assignments.lab_names() if lab not in failed_masters]
    stale = stale_labs(labs, arguments.out, arguments.student_dir)
    status = 1 if failed else 0
    if stale:
        print("make sync: assigning", *stale)
        options = ["--out", str(arguments.out)]
        if arguments.student_dir:
            options += ["--student-dir", str(arguments.student_dir)]
        status = assignments.main([str(assignments.master_path(lab)) for lab in stale] + options) or status
    if not (executed or failed or stale):
        seconds = time.perf_counter() - start
        print(
            f"make sync: nothing changed ({len(changed_notebooks.notebook_twins())} notebooks and "
            f"{len(labs)} labs up to date, {seconds:.1f} s)"
        )
    return status


if __name__ == "__main__":
    sys.exit(main())
