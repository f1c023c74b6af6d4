"""`make grade SUBMISSIONS=dir`: grade a folder of lab submissions offline: each runs in a sandbox, the tests here.

Usage (through `make grade`):

    python -m tools.grade SUBMISSIONS [--assignments build/assignments] [--grades PATH] [--feedback DIR]
                          [--timeout 300] [--jobs N] [--unsafe]

SUBMISSIONS holds one folder per student with that student's notebooks, named as the labs are:
SUBMISSIONS/<student>/01_ring_allreduce.ipynb, ... Each notebook is graded with the autograder zip that
`make assignments` built for its lab, after checking the zip's SHA-256 against the one `make assignments` recorded
(a changed zip stops the run). The submissions are only ever read. For each notebook, one per core:

1. the integrity scan (tools/grading_scan.py) reads its code with Python's ast, without running it, in a child
   process with memory and time limits, and lists what it tries besides answering (flags);
2. a private copy of it goes into a fresh folder in a tmpfs, and tools/grading_runner.py runs its code there, in a
   bubblewrap sandbox (tools/grading_sandbox.py: no network, nothing of the host writable or secret visible, its
   own PID namespace, an unprivileged user, limits on memory, processes, CPU and file size), then waits for calls;
   at --timeout seconds the whole sandbox is killed;
3. the verdict is made here, outside the sandbox (tools/grading_verifier.py): the autograder's test files, public
   and hidden, run in this process against proxies of the notebook's answers, whose calls go to the worker as
   plain data and come back as plain data; the student's code never sees a test, an expected value or a score.

grades.csv has one row per question (student, lab, question, points, max_points, status, flags, reason), status
being "graded", "not graded" (with the reason), "timed out" or "flagged" (graded, but the scan or the results show
something an instructor should read: flags and reason say what; a public test's message that quotes the hidden
tests is withheld from the feedback and flagged). Files that are not gradable (symlinks, files
outside SUBMISSIONS, dot-folders, nested folders, misnamed files) get a "not graded" row with the reason. The
feedback file FEEDBACK/<student>/<lab>.txt (at most 20 kB; and <lab>.html, the same text HTML-escaped) gives the
points per question, otter's messages for the public tests (an answer's exception by its class alone) and only
"passed"/"failed" for the hidden ones; never flags, logs or the hidden tests' messages. The instructor
report (grading-report.txt next to the grades file) lists the flags, the notebooks not graded and why, and the
files skipped. Every name, flag and reason is written with its control characters escaped (``printable``). One
notebook's failure never stops the batch, and grades.csv is always written: Ctrl-C (however often) and SIGTERM stop
the notebooks being graded, whose rows, with those not started, say "not graded", reason "interrupted". The grades file
defaults to grades.csv next to SUBMISSIONS, the feedback folder to feedback/ next to the grades file.
"""

from __future__ import annotations

import argparse
import ast
import csv
import dataclasses
import difflib
import hashlib
import html
import io
import json
import os
import queue
import re
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from . import grading_cgroup
from .assignments import (
    DEFAULT_OUT,
    autograder_zip,
    checksum_path,
    lab_names,
    sha256,
)
from .grading_sandbox import (
    Limits,
    SlotUsers,
    bwrap_works,
    prepare_work_folder,
    processes_limit,
    runner_command,
    start_sandboxed,
    stop_sandboxed,
)
from .grading_scan import scan_limited
from .grading_verifier import INTERRUPTED, Worker, WorkerFailed, summary, verify

COLUMNS = ("student", "lab", "question", "points", "max_points", "status", "flags", "reason")
STATUSES = ("graded", "not graded", "timed out", "flagged")
DEFAULT_TIMEOUT_S = 300
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
FEEDBACK_BYTES = 20_000
SUBMISSION_BYTES = 20 * 2**20  # a lab notebook is well under 1 MB
REPORT_NAME = "grading-report.txt"


@dataclass
class Graded:
    """The outcome of grading one notebook (or of refusing a file): its rows, feedback and what the report says."""

    student: str
    lab: str
    scores: dict  # question -> (points, max_points)
    feedback: str
    seconds: float
    status: str = "graded"
    reason: str = ""  # why it was not graded, timed out or flagged; for grades.csv and the report
    flags: str = ""  # the integrity scan's summary; grades.csv and the report only
    path: str = ""  # the file, relative to SUBMISSIONS

    @property
    def rows(self) -> list[tuple]:
        if not self.scores:  # a refused file: one row, no question
            return [(self.student, self.lab, "", 0.0, "", self.status, self.flags, self.reason)]
        return [
            (self.student, self.lab, question, points, max_points, self.status, self.flags, self.reason)
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


def watched_files(autograder: bytes) -> list[str]:
    """The course_lib files whose functions the zip's tests forbid (each test's ``files = (...)``), sorted: the
    worker notes their functions before the notebook runs (tools/grading_runner.py's ``reference_table``)."""
    found = set()
    with zipfile.ZipFile(io.BytesIO(autograder)) as archive:
        for name in archive.namelist():
            if not (name.startswith("tests/") and name.endswith(".py")):
                continue
            for node in ast.walk(ast.parse(archive.read(name).decode("utf-8"))):
                if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["files"]:
                    try:
                        value = ast.literal_eval(node.value)
                    except ValueError:
                        continue
                    found |= {str(path) for path in value if str(path).startswith("course_lib/")}
    return sorted(found)


def hidden_lines(zip_path: Path) -> set[str]:
    """Lines of the zip's hidden test cases that no public one has (and their names): feedback must not quote them."""
    hidden, public = set(), set()
    with zipfile.ZipFile(zip_path) as archive:
        for name in archive.namelist():
            if not (name.startswith("tests/") and name.endswith(".py")):
                continue
            source = archive.read(name).decode("utf-8")
            for node in ast.parse(source).body:
                if not isinstance(node, ast.FunctionDef):
                    continue
                is_hidden = any(
                    isinstance(keyword.value, ast.Constant) and keyword.value.value is True
                    for decorator in node.decorator_list
                    if isinstance(decorator, ast.Call)
                    for keyword in decorator.keywords
                    if keyword.arg == "hidden"
                )
                lines = {line.strip() for line in (ast.get_source_segment(source, node) or "").splitlines()}
                (hidden if is_hidden else public).update(lines)
                if is_hidden:
                    hidden.add(node.name)
    return {line for line in hidden - public if len(line) >= 16}


# What a terminal, a spreadsheet or an editor would act on or hide: C0 and C1 controls (ESC among them), DEL, the
# Unicode line and paragraph separators, zero-width and bidirectional formatting characters (issue 39: a student
# folder named "mallory\x1b[2K\x1b[1Gbob" rewrote the console line it was printed on).
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
CONTROL_BUT_NEWLINE = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]"
)


def printable(text, keep_newlines: bool = False) -> str:
    """``text`` with every control character escaped as Python writes it (``\\x1b``, ``\\u2028``): one line of what it
    holds, which no terminal or spreadsheet acts on.

    >>> print(printable("mallory" + chr(27) + "[2K" + chr(0x2028) + "bob"))
    mallory\\x1b[2K\\u2028bob
    """
    pattern = CONTROL_BUT_NEWLINE if keep_newlines else CONTROL
    return pattern.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), str(text))


def number(value) -> str:
    """A score as the CSV shows it: 2 rather than 2.0."""
    return f"{float(value):g}"


def check_autograders(zips: dict[str, Path | None], out: Path) -> str | None:
    """None if every zip has the SHA-256 `make assignments` recorded, else what is wrong and what to do."""
    for lab, zip_path in zips.items():
        if zip_path is None:
            continue
        record = checksum_path(lab, out)
        try:
            recorded = record.read_text(encoding="utf-8").split()
        except OSError:
            return f"no recorded SHA-256 for {lab}'s autograder ({record}): run `make assignments`"
        if recorded[-1:] != [zip_path.name] or len(recorded) != 2:
            return f"{record} does not name {zip_path.name}: run `make assignments`"
        if sha256(zip_path) != recorded[0]:
            return (
                f"{zip_path} changed since `make assignments` recorded its SHA-256 in {record}: it may have been "
                "tampered with; grading stopped. Run `make assignments` again, then grade."
            )
    return None


def read_regular_file(path: Path, limit: int) -> bytes:
    """The bytes of ``path`` if it is a regular file (not a symlink) of at most ``limit`` bytes; else OSError."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"not a regular file: {path.name}")
        if info.st_size > limit:
            raise OSError(f"larger than {limit // 2**20} MB")
        with os.fdopen(descriptor, "rb", closefd=False) as stream:
            data = stream.read(limit + 1)
    finally:
        os.close(descriptor)
    if len(data) > limit:
        raise OSError(f"larger than {limit // 2**20} MB")
    return data


def prepared_notebook(data: bytes) -> bytes | None:
    """The notebook with the course's kernelspec, or None if ``data`` is not a notebook."""
    try:
        notebook = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        return None
    if not isinstance(notebook.get("metadata"), dict):
        notebook["metadata"] = {}
    notebook["metadata"]["kernelspec"] = dict(KERNELSPEC)
    return json.dumps(notebook, indent=1, ensure_ascii=False).encode("utf-8")


def clip(text: str, limit: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[: max(0, limit - 40)].decode("utf-8", errors="ignore") + "\n[... cut: feedback too long]\n"


def feedback_text(student: str, lab: str, scores: dict, body: str) -> str:
    """The student's feedback: points per question, then ``body``; at most FEEDBACK_BYTES."""
    total = sum(p for p, _ in scores.values())
    possible = sum(m for _, m in scores.values())
    lines = [f"{lab}: {number(total)} / {number(possible)} points ({printable(student)})", ""]
    lines += [
        f"  {question}: {number(points)} / {number(max_points)}" for question, (points, max_points) in scores.items()
    ]
    return clip("\n".join(lines + ["", printable(body.rstrip(), keep_newlines=True), ""]), FEEDBACK_BYTES)


def sandbox_environment() -> dict[str, str]:
    """The sandbox's whole environment: nothing of the grader's. Its home is its own /tmp."""
    return {
        "HOME": "/tmp",
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": "/tmp/matplotlib",
        "IPYTHONDIR": "/tmp/ipython",
    }


def stopped_reason(failure: WorkerFailed, status: int | None) -> str:
    """Why the worker stopped answering, in a few words, with the signal that killed it if one did."""
    if status is not None and (status < 0 or 128 < status <= 128 + 64):  # bwrap exits with 128 + the signal
        return f"{failure.reason}; killed by signal {-status if status < 0 else status - 128}"
    return failure.reason


def quotes_hidden_tests(texts: dict, secrets: set[str]) -> list[str]:
    """The questions whose public tests' messages quote a line of the hidden tests (e.g. an answer that raised
    an exception holding the test file it read)."""
    return [question for question, (public, _) in texts.items() if any(secret in public for secret in secrets)]


def results_body(texts: dict, withheld: list[str] = ()) -> str:
    """Public tests' messages as otter shows them, hidden tests as passed or failed; fits FEEDBACK_BYTES."""
    budget = max(200, (FEEDBACK_BYTES - 1500) // max(1, len(texts)))
    sections = []
    for question, (public, hidden) in texts.items():
        if question in withheld:
            public = f"{question} results: message withheld (it quoted the hidden tests); ask your instructor"
        lines = [clip(public.rstrip(), budget)]
        if hidden is not None:
            lines.append(f"{question} hidden tests: {'passed' if hidden else 'failed'}")
        sections.append("\n".join(lines))
    return "\n\n".join(sections)


def grade_notebook(
    submission: Path,
    zip_path: Path,
    student: str,
    lab: str,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    unsafe: bool = False,
    limits: Limits | None = None,
    expected_sha256: str | None = None,
    slot: int = 0,
    cancel: threading.Event | None = None,
) -> Graded:
    """Grade one notebook: its code runs in a sandbox as a worker, the tests run here (tools/grading_verifier.py);
    never raises for a problem of the submission itself. Once ``cancel`` is set (Ctrl-C, SIGTERM) it stops the
    sandbox and says the notebook was not graded: interrupted."""
    expected = questions(zip_path)
    zero = {question: (0.0, max_points) for question, max_points in expected.items()}
    start = time.perf_counter()
    limits = limits or Limits(cpu_s=int(timeout_s) + 5)

    def outcome(status: str, reason: str, student_reason: str, flags: str = "") -> Graded:
        text = feedback_text(student, lab, zero, f"Not graded: {student_reason} So every question scores 0.")
        status = "flagged" if flags else status  # the reason still says what happened
        return Graded(student, lab, zero, text, time.perf_counter() - start, status, reason, flags)

    try:
        data = read_regular_file(submission, SUBMISSION_BYTES)
    except OSError as error:
        reason = f"unreadable file: {error.strerror or error}"
        return outcome("not graded", reason, "the file could not be read (is it a notebook you saved?).")
    cancel = cancel or threading.Event()
    flags = scan_limited(data, cancel=cancel)
    if cancel.is_set():
        return outcome("not graded", INTERRUPTED, "grading was interrupted; ask your instructor.")
    notebook = prepared_notebook(data)
    if notebook is None:
        return outcome("not graded", "not a notebook", "the file is not a Jupyter notebook (.ipynb JSON).", flags)
    autograder = zip_path.read_bytes()  # read once: the bytes checked are the bytes whose tests run
    if expected_sha256 and hashlib.sha256(autograder).hexdigest() != expected_sha256:
        return outcome("not graded", "the autograder zip changed during grading", "a grader problem.", flags)
    work = Path(tempfile.mkdtemp(prefix=f"grade-{lab}-", dir=scratch_root()))
    log_path = work.parent / f"{work.name}.log"
    process, memory_limit_hit = None, False
    try:
        copy = work / f"{lab}.ipynb"
        copy.write_bytes(notebook)
        environment = sandbox_environment()
        prepare_work_folder(work, slot)
        command = runner_command(limits, copy, watched_files(autograder))
        process = start_sandboxed(work, environment, command, log_path, unsafe, slot, pipes=True)
        worker = Worker(process.stdin, process.stdout, time.monotonic() + timeout_s, cancel)
        try:
            worker.wait_ready()
            results = verify(worker, autograder)
        except WorkerFailed:
            pass
    finally:
        if process is not None:
            memory_limit_hit = stop_sandboxed(process, slot)
        log_path.unlink(missing_ok=True)
        remove_tree(work)
    if worker.failure is not None and worker.failure.interrupted:
        return outcome("not graded", INTERRUPTED, "grading was interrupted; ask your instructor.")
    if worker.failure is not None and worker.failure.timed_out:
        return outcome(
            "timed out",
            f"timed out after {timeout_s:g} s",
            f"the notebook did not finish within {timeout_s:g} s (an endless loop, or a very slow cell?). "
            "Make it run top to bottom in a fresh kernel (Kernel > Restart Kernel and Run All Cells) and "
            "submit it again.",
            flags,
        )
    if worker.failure is not None and memory_limit_hit:
        reason = grading_cgroup.memory_limit_reason(slot)
        return outcome("not graded", reason, f"{reason}.", flags)
    if worker.failure is not None:
        reason = stopped_reason(worker.failure, process.returncode)
        return outcome("not graded", reason, f"{worker.failure.reason}.", flags)
    found = summary(results)
    texts = {question: (found[question]["public"], found[question]["hidden_passed"]) for question in expected}
    scores = {question: (float(found[question]["score"]), max_points) for question, max_points in expected.items()}
    withheld = quotes_hidden_tests(texts, hidden_lines(zip_path))
    if withheld:
        leak = f"leaks hidden tests ({', '.join(withheld)}: a public test's message quotes them)"
        flags = "; ".join(filter(None, [flags, leak]))
    body = results_body(texts, withheld)
    failed_cells = worker.ready.get("failed")
    if type(failed_cells) is int and failed_cells > 0:
        body = f"{failed_cells} of your notebook's code cells raised an error when the grader ran them.\n\n{body}"
    text = feedback_text(student, lab, scores, body)
    status = "flagged" if flags else "graded"
    return Graded(student, lab, scores, text, time.perf_counter() - start, status, "", flags)


def remove_tree(path: Path) -> None:
    """Remove ``path`` and all it holds, however deep and whatever its permissions, and never raise: a submission
    can leave a tree ``shutil.rmtree`` cannot remove (it recurses, and 1,100 nested folders raise RecursionError) or
    folders without write permission. coreutils' ``chmod -R`` and ``rm -rf`` walk with fts, iteratively. A tree left
    behind anyway is reported on stderr; the next notebook gets a fresh folder of its own."""
    for command in (["chmod", "-R", "u+rwx", "--", str(path)], ["rm", "-rf", "--one-file-system", "--", str(path)]):
        subprocess.run(command, capture_output=True, check=False)
    if os.path.lexists(path):
        print(f"grade: could not remove the work folder {path}", file=sys.stderr)


def scratch_root() -> str | None:
    """A tmpfs for the sandboxes' work folders (/dev/shm) if there is one, else the default temporary folder."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def likely_lab(name: str, labs: list[str]) -> str:
    """The lab a misnamed file may be meant for ("" if none): same number, or a close name."""
    number_match = re.match(r"\D*0*(\d+)", name)
    if number_match:
        same = [lab for lab in labs if int(lab[:2]) == int(number_match.group(1))]
        if same:
            return same[0]
    close = difflib.get_close_matches(name.lower(), labs, n=1, cutoff=0.5)
    return close[0] if close else ""


def refused(student: str, relative: str, reason: str, lab: str = "") -> Graded:
    hint = f" (meant for {lab}?)" if lab else ""
    return Graded(student, lab, {}, "", 0.0, "not graded", f"{relative}: {reason}{hint}", "", relative)


def find_submissions(folder: Path, labs: list[str]) -> tuple[list[tuple[str, str, Path]], list[Graded]]:
    """([(student, lab, notebook)], [a "not graded" Graded for every file or folder that is not a submission])."""
    found, skipped = [], []
    root = folder.resolve()

    def outside(path: Path) -> bool:
        return path.is_symlink() or not path.resolve().is_relative_to(root)

    for entry in sorted(folder.iterdir()):
        name = entry.name
        if outside(entry):
            skipped.append(refused(name, name, "a symlink or outside SUBMISSIONS, refused"))
        elif not entry.is_dir():
            skipped.append(refused("", name, "not in a student folder", likely_lab(Path(name).stem, labs)))
        elif name.startswith("."):
            inside = sorted(p.name for p in entry.rglob("*.ipynb"))[:5]
            what = f" holding {', '.join(inside)}" if inside else ""
            skipped.append(refused(name, name + "/", f"a hidden folder (its name starts with a dot){what}"))
        else:
            for path in sorted(entry.iterdir()):
                relative = f"{name}/{path.name}"
                if outside(path):
                    skipped.append(refused(name, relative, "a symlink or outside SUBMISSIONS, refused"))
                elif path.is_dir():
                    inside = sorted(p.name for p in path.rglob("*.ipynb"))[:5]
                    what = f" holding {', '.join(inside)}" if inside else ""
                    lab = likely_lab(inside[0], labs) if inside else ""
                    skipped.append(refused(name, relative + "/", f"a folder inside a student folder{what}", lab))
                elif not path.is_file():
                    skipped.append(refused(name, relative, "not a regular file, refused"))
                elif path.suffix == ".ipynb" and path.stem in labs:
                    found.append((name, path.stem, path))
                else:
                    lab = likely_lab(path.stem, labs) if path.suffix == ".ipynb" else ""
                    skipped.append(refused(name, relative, f"not named as a lab ({', '.join(labs)}.ipynb)", lab))
    return found, skipped


# A spreadsheet runs a cell that starts with one of these as a formula (=HYPERLINK(...), +cmd|..., @SUM(...)), also
# after leading spaces, and in their fullwidth forms, which some read as the ASCII ones; a leading apostrophe makes it
# text (OWASP, "CSV Injection"). Tab and carriage return start formulas in some too.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def spreadsheet_safe(text: str) -> str:
    """``text`` as a spreadsheet shows it as text: prefixed with ' when it would start a formula, after any leading
    whitespace too.

    >>> print(spreadsheet_safe("=HYPERLINK(A1)"), spreadsheet_safe("alice"), spreadsheet_safe("-2"))
    '=HYPERLINK(A1) alice '-2
    >>> fullwidth = chr(0xFF1D) + "HYPERLINK(A1)"
    >>> print(spreadsheet_safe(" =HYPERLINK(A1)"), spreadsheet_safe(fullwidth) == "'" + fullwidth)
    ' =HYPERLINK(A1) True
    """
    return "'" + text if text.startswith(FORMULA_STARTS) or text.lstrip().startswith(FORMULA_STARTS) else text


def write_results(graded: list[Graded], grades: Path, feedback: Path) -> None:
    """grades.csv (every row) and a feedback file per graded notebook."""
    grades.parent.mkdir(parents=True, exist_ok=True)
    partial = grades.with_name(grades.name + ".partial")
    with open(partial, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(COLUMNS)
        for item in sorted(graded, key=lambda g: (g.student, g.lab, g.path)):
            for student, lab, question, points, max_points, status, flags, reason in item.rows:
                max_text = number(max_points) if max_points != "" else ""
                text = [spreadsheet_safe(printable(x)) for x in (student, lab, question, status, flags, reason)]
                writer.writerow([*text[:3], number(points), max_text, *text[3:]])
    partial.replace(grades)
    for item in graded:
        if not item.feedback:
            continue
        path = feedback / item.student / f"{item.lab}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(item.feedback, encoding="utf-8")
        path.with_suffix(".html").write_text(feedback_html(item.feedback), encoding="utf-8")


def feedback_html(feedback: str) -> str:
    """The feedback as a page to upload where feedback is rendered as HTML: every character of it escaped, so that an
    answer returning "<script>..." shows as that text.

    >>> print(feedback_html("got '<b>1</b>' & more").splitlines()[3])
    <pre>got &#x27;&lt;b&gt;1&lt;/b&gt;&#x27; &amp; more</pre>
    """
    return f'<!DOCTYPE html>\n<html>\n<meta charset="utf-8">\n<pre>{html.escape(feedback, quote=True)}</pre>\n</html>\n'


def write_report(graded: list[Graded], path: Path, unsafe: bool, limits: str = "") -> None:
    """The instructor report: flagged, not graded and timed-out notebooks, skipped files, with the reasons."""
    lines = ["Grading report (for instructors; students never see it)", ""]
    if unsafe:
        lines += ["UNSAFE: graded without the sandbox (make grade UNSAFE=1).", ""]
    if limits:
        lines += [limits[:1].upper() + limits[1:] + ".", ""]
    counts = {status: sum(1 for g in graded if g.status == status) for status in STATUSES}
    lines.append(", ".join(f"{count} {status}" for status, count in counts.items()))
    for status in ("flagged", "timed out", "not graded"):
        items = [g for g in graded if g.status == status]
        if not items:
            continue
        lines += ["", f"{status.upper()}:"]
        for item in sorted(items, key=lambda g: (g.student, g.lab, g.path)):
            where = printable(item.path or f"{item.student}/{item.lab}.ipynb")
            points = f" {number(item.points)} / {number(item.max_points)}" if item.scores else ""
            lines.append(f"  {where}:{points}")
            if item.reason:
                lines.append(f"    reason: {printable(item.reason)}")
            if item.flags:
                lines.append(f"    flags: {printable(item.flags)}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def parse_arguments(argv: list[str] | None) -> tuple[argparse.Namespace, Path, Path, Path]:
    """(arguments, submissions folder, grades CSV, feedback folder), resolved; exits (status 2) on a bad command line,
    or if an output would go inside the submissions."""
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
    parser.add_argument(
        "--unsafe",
        action="store_true",
        help="grade without the bubblewrap sandbox: the notebooks can read and change your files (see README)",
    )
    arguments = parser.parse_args(argv)
    submissions = arguments.submissions.resolve()
    if not submissions.is_dir():
        parser.error(f"{arguments.submissions} is not a folder (expected SUBMISSIONS/<student>/<lab>.ipynb)")
    grades = (arguments.grades or submissions.parent / "grades.csv").resolve()
    feedback = (arguments.feedback or grades.parent / "feedback").resolve()
    for output in (grades, feedback):
        if output.is_relative_to(submissions):
            parser.error(f"{output} is inside {submissions}: grading never writes into the submissions folder")
    return arguments, submissions, grades, feedback


def cannot_grade(zips: dict[str, Path | None], found: list, assignments: Path, unsafe: bool) -> str | None:
    """None if grading can start, else why not: a lab submitted (or every lab) has no autograder zip, a zip is not the
    one `make assignments` recorded, or (unless ``unsafe``) bubblewrap cannot make a sandbox here."""
    missing = sorted({lab for _, lab, _ in found if zips[lab] is None})
    if missing or not any(zips.values()):
        return f"no autograder zip for {', '.join(missing) or 'any lab'} in {assignments}: run `make assignments` first"
    return check_autograders(zips, assignments) or (None if unsafe else bwrap_works())


def grade_batch(
    found: list[tuple[str, str, Path]],
    zips: dict[str, Path | None],
    arguments: argparse.Namespace,
    cancel: threading.Event | None = None,
) -> tuple[list[Graded], bool, str]:
    """(a Graded for every submission found, whether ``cancel`` interrupted the batch, the limits per notebook in one
    line for the report): ``arguments.jobs`` notebooks at once, each in a sandbox of its own. Once ``cancel`` is set
    (main sets it on Ctrl-C and SIGTERM) the notebooks being graded are stopped and, with those not started, not
    graded: interrupted; the finished ones keep their grades."""
    cancel = cancel or threading.Event()
    hashes = {lab: sha256(path) for lab, path in zips.items() if path is not None}
    jobs = max(1, arguments.jobs)
    slots = queue.SimpleQueue()  # one sandbox user per notebook graded at once
    for slot in range(jobs):
        slots.put(slot)

    def interrupted(student: str, lab: str) -> Graded:
        zero = {question: (0.0, max_points) for question, max_points in questions(zips[lab]).items()}
        text = feedback_text(student, lab, zero, "Not graded: grading was interrupted; ask your instructor.")
        return Graded(student, lab, zero, text, 0.0, "not graded", INTERRUPTED)

    def grade(item):
        student, lab, path = item
        if cancel.is_set():
            result = interrupted(student, lab)
            result.path = f"{student}/{lab}.ipynb"
            return result
        limits = Limits(cpu_s=int(arguments.timeout) + 5)
        slot = slots.get()
        try:
            limits = dataclasses.replace(limits, processes=processes_limit(limits, slot))
            result = grade_notebook(
                path, zips[lab], student, lab, arguments.timeout, arguments.unsafe, limits, hashes[lab], slot, cancel
            )
        except Exception as error:  # a grader problem with this notebook: report it, go on with the batch
            zero = {question: (0.0, max_points) for question, max_points in questions(zips[lab]).items()}
            reason = f"internal error while grading: {type(error).__name__}"
            text = feedback_text(student, lab, zero, "Not graded: a problem of the grader; ask your instructor.")
            result = Graded(student, lab, zero, text, 0.0, "not graded", reason)
        finally:
            slots.put(slot)
        result.path = f"{student}/{lab}.ipynb"
        note = f" {result.status.upper()}: {result.reason or result.flags}" if result.status != "graded" else ""
        print(
            printable(f"{student}/{lab}: {number(result.points)} / {number(result.max_points)} in "
                      f"{result.seconds:.1f} s{note}"),
            flush=True,
        )  # fmt: skip
        return result

    groups = grading_cgroup.SlotGroups(jobs)  # a cgroup per slot, where the machine has them
    if not groups.hierarchy.version:
        print(f"warning: {groups.description()}", file=sys.stderr)
    pool = ThreadPoolExecutor(max_workers=jobs)
    with groups, SlotUsers(jobs):
        futures = [pool.submit(grade, item) for item in found]
        pending = set(futures)
        while pending:  # in short waits, so that the main thread runs a signal's handler at once
            pending = wait(pending, timeout=0.2, return_when=FIRST_EXCEPTION).not_done
        pool.shutdown(wait=True)
        graded = [future.result() for future in futures]
    return graded, cancel.is_set(), groups.description()


def on_signals(cancel: threading.Event) -> dict:
    """Make Ctrl-C (SIGINT, however often) and SIGTERM set ``cancel`` instead of raising in the middle of the batch:
    the batch stops its notebooks and returns, and grades.csv is written. The previous handlers, to restore."""

    def handler(number, _frame):
        if not cancel.is_set():
            print(f"grade: {signal.Signals(number).name}: stopping; the notebooks not finished are not graded",
                  file=sys.stderr, flush=True)  # fmt: skip
        cancel.set()

    return {number: signal.signal(number, handler) for number in (signal.SIGINT, signal.SIGTERM)}


def main(argv: list[str] | None = None) -> int:
    arguments, submissions, grades, feedback = parse_arguments(argv)
    zips = {lab: autograder_zip(lab, arguments.assignments) for lab in lab_names()}
    found, skipped = find_submissions(submissions, list(zips))
    problem = cannot_grade(zips, found, arguments.assignments, arguments.unsafe)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if arguments.unsafe:
        print("warning: UNSAFE: grading without the sandbox; the notebooks run with your rights", file=sys.stderr)
    for item in skipped:
        print(f"not graded: {printable(item.reason)}")
    if not found:
        print(
            f"error: no lab notebooks in {submissions} (expected <student>/<lab>.ipynb with <lab> one of "
            f"{', '.join(zips)})",
            file=sys.stderr,
        )
        write_results(skipped, grades, feedback)
        return 2
    start = time.perf_counter()
    cancel = threading.Event()
    previous = on_signals(cancel)
    try:
        graded, interrupted, limits = grade_batch(found, zips, arguments, cancel)
        graded += skipped
        write_results(graded, grades, feedback)
        write_report(graded, grades.with_name(REPORT_NAME), arguments.unsafe, limits)
    finally:
        for number, handler in previous.items():
            # Once interrupted, a second or third Ctrl-C is ignored to the end, through the interpreter's exit too (it
            # restores the default action, which would end the process by SIGINT, of every handler but SIG_IGN:
            # CPython 3.11 Modules/signalmodule.c _PySignal_Fini).
            signal.signal(number, signal.SIG_IGN if cancel.is_set() else handler)
    counts = {status: sum(1 for g in graded if g.status == status) for status in STATUSES}
    print(
        f"graded {len(found)} notebooks of {len({s for s, _, _ in found})} students in "
        f"{time.perf_counter() - start:.1f} s ({', '.join(f'{n} {s}' for s, n in counts.items())}); "
        f"wrote {grades}, {grades.with_name(REPORT_NAME)} and {feedback}/"
    )
    if check_autograders(zips, arguments.assignments):
        print("warning: an autograder zip changed during grading: run `make assignments` and grade again")
        return 1
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
