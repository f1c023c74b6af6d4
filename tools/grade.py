"""`make grade SUBMISSIONS=dir`: grade a folder of lab submissions offline with `otter run` (no Docker).

Usage (through `make grade`):

    python tools/grade.py SUBMISSIONS [--assignments build/assignments] [--grades PATH] [--feedback DIR]
                          [--timeout 300] [--jobs N]

SUBMISSIONS holds one folder per student with that student's notebooks, named as the labs are:
SUBMISSIONS/<student>/01_ring_allreduce.ipynb, ... Each notebook is graded with the autograder zip that
`make assignments` built for its lab (build/assignments/<lab>/autograder/*.zip):

1. it is copied into a temporary folder (the submission itself is only ever read), with its kernel set to the
   course's python3 kernel (a student's own kernel name would not exist here);
2. `otter run` executes it in a fresh kernel and runs every public and hidden test; a run that takes longer than
   --timeout seconds is stopped, with its kernel;
3. its results.json becomes one row per question in the grades file (columns student, lab, question, points,
   max_points) and a feedback file FEEDBACK/<student>/<lab>.txt with every test's outcome.

A notebook that raises is graded anyway (otter runs every cell and then every test). One that times out, or
that otter cannot grade at all (not a notebook, another lab's notebook, a dead kernel), scores zero on every
question of its lab, and its feedback says why. Nothing stops the batch. The grades file defaults to
grades.csv next to SUBMISSIONS, and the feedback folder to feedback/ next to the grades file.
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from assignments import DEFAULT_OUT, autograder_zip, lab_names, otter_environment  # noqa: E402

COLUMNS = ("student", "lab", "question", "points", "max_points")
DEFAULT_TIMEOUT_S = 300
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


@dataclass
class Graded:
    """The outcome of grading one notebook: a row per question, the feedback text and the wall time."""

    student: str
    lab: str
    scores: dict  # question -> (points, max_points)
    feedback: str
    seconds: float
    problem: str = ""  # why the notebook was not graded, in a few words ("" if otter graded it)

    @property
    def rows(self) -> list[tuple]:
        return [
            (self.student, self.lab, question, points, max_points)
            for question, (points, max_points) in self.scores.items()
        ]

    @property
    def points(self) -> float:
        return sum(points for points, _ in self.scores.values())

    @property
    def max_points(self) -> float:
        return sum(max_points for _, max_points in self.scores.values())


def questions(zip_path: Path) -> dict[str, float]:
    """{question: points} of an autograder zip, read from its tests/*.py (parsed, not executed)."""
    found = {}
    with zipfile.ZipFile(zip_path) as archive:
        for name in sorted(archive.namelist()):
            if not (name.startswith("tests/") and name.endswith(".py")):
                continue
            values = {}
            for node in ast.parse(archive.read(name).decode("utf-8")).body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    try:
                        values[node.targets[0].id] = ast.literal_eval(node.value)
                    except ValueError:
                        pass
            points = values.get("points")
            found[values.get("name", Path(name).stem)] = float(sum(points) if isinstance(points, list) else points)
    return dict(sorted(found.items(), key=lambda item: (len(item[0]), item[0])))  # q2 before q10


def points_of(value) -> float:
    """A score from results.json as a number: 0 for a missing or NaN score."""
    return 0.0 if value is None or math.isnan(float(value)) else float(value)


def number(value) -> str:
    """A score as the CSV shows it: 2 rather than 2.0."""
    return f"{points_of(value):g}"


def kill_tree(process: subprocess.Popen) -> None:
    """Kill ``process`` and every process it started (otter's kernel runs in a session of its own)."""
    import psutil

    try:
        family = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        family = []
    for member in family:
        try:
            member.kill()
        except psutil.NoSuchProcess:
            pass
    process.kill()
    process.wait()
    psutil.wait_procs(family, timeout=10)


def prepared_copy(submission: Path, folder: Path) -> Path:
    """Copy ``submission`` into ``folder`` for grading, with the course's kernelspec if it is a notebook."""
    copy = folder / submission.name
    data = submission.read_bytes()
    try:
        notebook = json.loads(data)
        if isinstance(notebook.get("metadata"), dict) and notebook["metadata"].get("kernelspec") != KERNELSPEC:
            notebook["metadata"]["kernelspec"] = dict(KERNELSPEC)
            data = json.dumps(notebook, indent=1, ensure_ascii=False).encode("utf-8")
    except (ValueError, AttributeError):
        pass  # not a notebook: otter will say so
    copy.write_bytes(data)
    return copy


def feedback_text(student: str, lab: str, scores: dict, body: str) -> str:
    total = sum(p for p, _ in scores.values())
    possible = sum(m for _, m in scores.values())
    lines = [f"{lab}: {number(total)} / {number(possible)} points ({student})", ""]
    lines += [
        f"  {question}: {number(points)} / {number(max_points)}" for question, (points, max_points) in scores.items()
    ]
    return "\n".join(lines + ["", body.rstrip(), ""])


def grade_notebook(
    submission: Path, zip_path: Path, student: str, lab: str, timeout_s: float = DEFAULT_TIMEOUT_S
) -> Graded:
    """Grade one notebook with ``otter run``; never raises for a problem of the submission itself."""
    zero = {question: (0.0, max_points) for question, max_points in questions(zip_path).items()}
    start = time.perf_counter()

    def not_graded(problem: str, reason: str) -> Graded:
        text = feedback_text(student, lab, zero, f"Not graded: {reason} So every question scores 0.")
        return Graded(student, lab, zero, text, time.perf_counter() - start, problem)

    with tempfile.TemporaryDirectory(prefix=f"grade-{lab}-") as scratch:
        scratch = Path(scratch)
        inbox, out = scratch / "submission", scratch / "results"
        inbox.mkdir()
        out.mkdir()
        try:
            copy = prepared_copy(submission, inbox)
        except OSError as error:
            return not_graded("unreadable file", f"the file could not be read ({error.strerror}).")
        log_path = scratch / "otter.log"
        command = [
            sys.executable,
            "-m",
            "otter",
            "run",
            "--no-logo",
            "-a",
            str(zip_path.resolve()),
            "-o",
            str(out),
            str(copy),
        ]
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                command,
                cwd=scratch,
                env=otter_environment(scratch),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
            try:
                status = process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                kill_tree(process)
                return not_graded(
                    f"timed out after {timeout_s:g} s",
                    f"the notebook did not finish within {timeout_s:g} s (an endless loop, or a very "
                    "slow cell?). Make it run top to bottom in a fresh kernel (Kernel > Restart Kernel "
                    "and Run All Cells) and submit it again.",
                )
        results_path = out / "results.json"
        if not results_path.exists():
            tail = "\n".join(log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-15:])
            return not_graded(
                f"otter could not grade it, exit status {status}",
                f"otter could not grade it (exit status {status}). The end of otter's log:\n{tail}\n",
            )
        results = json.loads(results_path.read_text(encoding="utf-8"))
    scores, sections = dict(zero), []
    for test in results.get("tests", []):
        name = test.get("name")
        if name in scores:
            scores[name] = (points_of(test.get("score")), scores[name][1])
            sections.append(test.get("output", "").rstrip())
    text = feedback_text(student, lab, scores, "\n\n".join(sections))
    return Graded(student, lab, scores, text, time.perf_counter() - start)


def find_submissions(folder: Path, labs: list[str]) -> tuple[list[tuple[str, str, Path]], list[str]]:
    """([(student, lab, notebook)], notes about files that are not gradable submissions)."""
    found, notes = [], []
    for student in sorted(path for path in folder.iterdir() if not path.name.startswith(".")):
        if not student.is_dir():
            notes.append(f"{student.name}: not a student folder, skipped")
            continue
        for path in sorted(student.iterdir()):
            if path.suffix == ".ipynb" and path.stem in labs:
                found.append((student.name, path.stem, path))
            elif not path.name.startswith("."):
                notes.append(f"{student.name}/{path.name}: not a lab notebook ({', '.join(labs)}), skipped")
    return found, notes


def write_results(graded: list[Graded], grades: Path, feedback: Path) -> None:
    grades.parent.mkdir(parents=True, exist_ok=True)
    with open(grades, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(COLUMNS)
        for item in sorted(graded, key=lambda g: (g.student, g.lab)):
            for student, lab, question, points, max_points in item.rows:
                writer.writerow([student, lab, question, number(points), number(max_points)])
    for item in graded:
        path = feedback / item.student / f"{item.lab}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(item.feedback, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("submissions", type=Path, help="folder of <student>/<lab>.ipynb")
    parser.add_argument(
        "--assignments",
        type=Path,
        default=DEFAULT_OUT,
        help="where `make assignments` put the autograder zips (default: build/assignments)",
    )
    parser.add_argument("--grades", type=Path, help="grades CSV to write (default: grades.csv next to SUBMISSIONS)")
    parser.add_argument("--feedback", type=Path, help="feedback folder (default: feedback/ next to the grades CSV)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        help=f"seconds one notebook may take (default: {DEFAULT_TIMEOUT_S})",
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="notebooks graded at once")
    arguments = parser.parse_args(argv)
    submissions = arguments.submissions.resolve()
    if not submissions.is_dir():
        parser.error(f"{arguments.submissions} is not a folder (expected SUBMISSIONS/<student>/<lab>.ipynb)")
    grades = (arguments.grades or submissions.parent / "grades.csv").resolve()
    feedback = (arguments.feedback or grades.parent / "feedback").resolve()
    for output in (grades, feedback):
        if output.is_relative_to(submissions):
            parser.error(f"{output} is inside {submissions}: grading never writes into the submissions folder")

    zips = {lab: autograder_zip(lab, arguments.assignments) for lab in lab_names()}
    found, notes = find_submissions(submissions, list(zips))
    missing = sorted({lab for _, lab, _ in found if zips[lab] is None})
    if missing or not any(zips.values()):
        print(
            f"error: no autograder zip for {', '.join(missing) or 'any lab'} in {arguments.assignments}: "
            "run `make assignments` first",
            file=sys.stderr,
        )
        return 2
    for note in notes:
        print(f"note: {note}")
    if not found:
        print(
            f"error: no lab notebooks in {submissions} (expected <student>/<lab>.ipynb with <lab> one of "
            f"{', '.join(zips)})",
            file=sys.stderr,
        )
        return 2

    def grade(item):
        student, lab, path = item
        result = grade_notebook(path, zips[lab], student, lab, arguments.timeout)
        status = f" NOT GRADED: {result.problem}" if result.problem else ""
        print(
            f"{student}/{lab}: {number(result.points)} / {number(result.max_points)} in {result.seconds:.1f} s{status}",
            flush=True,
        )
        return result

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, arguments.jobs)) as pool:
        graded = list(pool.map(grade, found))
    write_results(graded, grades, feedback)
    problems = sum(1 for item in graded if item.problem)
    print(
        f"graded {len(graded)} notebooks of {len({s for s, _, _ in found})} students in "
        f"{time.perf_counter() - start:.1f} s ({problems} not gradable); wrote {grades} and {feedback}/"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
