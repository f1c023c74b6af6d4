"""The graded labs with the real otter-grader 7 and bubblewrap (no mocks): masters, student versions, hidden tests,
`make grade` in its sandbox, and a hostile class.

- One session fixture builds every assignment into a temporary folder with tools/assignments.py (`otter assign`,
  without otter's own test run: the graded submissions below check the masters' solutions).
- Every plausible wrong answer in WRONG (each lab's labs/NN_name/wrong_answers.py) is run against the autograder's
  tests in this process, with otter's own test-file runner: it must fail its question and leave every other question
  at full marks, and fail a public test of its question unless the lab's HIDDEN_ONLY says why none can. The tests
  run there as the zip holds them, with the helpers tools/assignments.py wrote into each.
- The student versions' skeletons state no formula their question's prompt does not.
- One batch of synthetic submissions, made from the student versions, is graded end to end by tools/grade.py
  (`otter run` in a bubblewrap sandbox per notebook, two at a time). Honest ones: full marks, zero for the untouched
  student versions, exactly the wrong questions' points lost (questions 1 and 3 of each lab), a raising cell,
  deleted cells and reordered cells graded normally. In the same batch, the hostile class (HOSTILE: one notebook
  per kind of cheat or harm of issue 12) and files that are not submissions (a symlink to /etc/passwd, a
  dot-folder, a nested folder, a misnamed notebook): each cheat scores 0 or is flagged, the honest notebooks keep
  their marks, feedback leaks nothing, and afterwards the submissions, the build folder and the repository are
  unchanged and no process of the batch is left. A second folder, graded alongside with a 45 s timeout, holds an
  endless loop and an unreadable notebook. Issue 39's findings are in the same batch: the ways around "do not call
  the reference function" (each now scores 0 on its question, most are flagged), a forged reply that stalled the
  grader, folder names and shell lines with escape codes or formulas, HTML answers and host files in error messages;
  two small batches are interrupted (Ctrl-C thrice, SIGTERM) and must keep their finished grades.

About 4 minutes on 2 idle cores: 4 `otter assign` and about 35 sandboxed `otter run`, most of it in processes and
kernels starting and importing otter.
"""

from __future__ import annotations

import ast
import copy
import csv
import hashlib
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jupytext
import nbformat
import pytest

from tools import assignments, grade, grading_cgroup
from tools import grading_sandbox as sandbox
from tools import grading_scan as scan

ROOT = Path(__file__).resolve().parents[1]
LABS = assignments.lab_names()
ANSWER_TAG, SOLUTION_TAG = "otter_answer_cell", "otter_assign_solution_cell"

# Plausible wrong answers, {lab: {question: [(mistake, source of the answer cell), ...]}}: each lab's own, WRONG in
# labs/<lab>/wrong_answers.py. The first one of each question is also graded end to end.
WRONG = {lab: importlib.import_module(f"labs.{lab}.wrong_answers").WRONG for lab in LABS}
# The wrong answers that no public test can catch, each with why, {lab: {question: {mistake: reason}}}: HIDDEN_ONLY in
# labs/<lab>/wrong_answers.py (none when it has no such table).
HIDDEN_ONLY = {lab: getattr(importlib.import_module(f"labs.{lab}.wrong_answers"), "HIDDEN_ONLY", {}) for lab in LABS}
WRONG_CASES = [
    (lab, question, mistake, source)
    for lab, by_question in WRONG.items()
    for question, variants in by_question.items()
    for mistake, source in variants
]


# ---- notebooks as data ---------------------------------------------------------------------------------------------


def answer_cells(notebook, tag=ANSWER_TAG) -> dict[str, list[int]]:
    """{question: indices of its answer cells}: the tagged cells before each `grader.check("qN")` cell."""
    found, pending = {}, []
    for index, cell in enumerate(notebook.cells):
        if tag in cell.metadata.get("tags", []):
            pending.append(index)
        elif cell.cell_type == "code" and cell.source.strip().startswith("grader.check("):
            found[cell.source.strip()[len('grader.check("') : -2]] = pending
            pending = []
    return found


def filled(student, sources: dict[str, list[str]]):
    """A copy of the student notebook with the answer cells of each question in ``sources`` replaced."""
    notebook = copy.deepcopy(student)
    for question, indices in answer_cells(notebook).items():
        for index, source in zip(indices, sources.get(question, []), strict=True):
            notebook.cells[index].source = source.strip()
    return notebook


def code_without_otter(notebook) -> str:
    """The notebook's code as one script: no otter cells (init, checks) and no cells otter ignores (the widget)."""
    keep = [
        cell.source
        for cell in notebook.cells
        if cell.cell_type == "code"
        and "otter_ignore" not in cell.metadata.get("tags", [])
        and "grader" not in cell.source
    ]
    return "\n\n".join(keep)


@pytest.fixture(scope="session")
def built(assigned_out):
    """Every lab, from the session's one build: {lab: (student notebook, autograder notebook, zip)}."""
    out = assigned_out
    result = {}
    for lab in LABS:
        zip_path = assignments.autograder_zip(lab, out)
        assert zip_path is not None, f"no autograder zip for {lab} in {out}"
        result[lab] = (
            nbformat.read(out / lab / "student" / f"{lab}.ipynb", as_version=4),
            nbformat.read(out / lab / "autograder" / f"{lab}.ipynb", as_version=4),
            zip_path,
        )
    result["out"] = out
    return result


def solution_sources(autograder) -> dict[str, list[str]]:
    return {
        question: [autograder.cells[i].source for i in indices]
        for question, indices in answer_cells(autograder, SOLUTION_TAG).items()
    }


def load_test_files(zip_path: Path):
    """{question: otter ExceptionTestFile} of an autograder zip (public and hidden test cases)."""
    import warnings
    import zipfile

    with warnings.catch_warnings():  # otter's imports trip a traitlets DeprecationWarning that is not ours to fix
        warnings.simplefilter("ignore", DeprecationWarning)
        from otter.test_files import ExceptionTestFile

    with zipfile.ZipFile(zip_path) as archive:
        return {
            Path(name).stem: ExceptionTestFile.from_string(archive.read(name).decode(), path=name)
            for name in archive.namelist()
            if name.startswith("tests/") and name.endswith(".py")
        }


# ---- the masters ---------------------------------------------------------------------------------------------------


def test_every_lab_has_a_master():
    assert LABS == [
        "01_ring_allreduce",
        "02_global_batch",
        "03_memory_budget",
        "04_pipeline_schedule",
        "05_partition_explorer",
        "06_serving",
        "07_sequences_and_experts",
        "08_measure_collectives",
    ]


@pytest.mark.parametrize("lab", LABS)
def test_master_matches_its_py_twin_and_ran_top_to_bottom(lab):
    master = assignments.master_path(lab)
    assert assignments.check_twin(master) is None, assignments.check_twin(master)
    notebook = nbformat.read(master, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    counts = [cell.execution_count for cell in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{lab}: run the master top to bottom: make notebooks NOTEBOOKS=labs/{lab}/{lab}.py"
    )
    errors = [cell.source.splitlines()[0] for cell in code for output in cell.outputs if output.output_type == "error"]
    assert not errors, f"{lab}: cells stored errors: {errors}"


@pytest.mark.parametrize("lab", LABS)
def test_master_keeps_otter_markers_through_jupytext(lab):
    """The py:percent twin round-trips otter's raw cells and the tags of the cells that build a lab widget: the
    autograder skips them all (otter_ignore: a widget grades nothing and costs time), nbval skips the live widget's
    output."""
    notebook = jupytext.read(assignments.master_path(lab).with_suffix(".py"))
    raw = [cell.source.splitlines()[0] for cell in notebook.cells if cell.cell_type == "raw"]
    assert raw[0] == "# ASSIGNMENT CONFIG"
    assert raw.count("# BEGIN QUESTION") == raw.count("# END QUESTION") == len(WRONG[lab]) >= 3
    builds_a_lab = [cell for cell in notebook.cells if cell.cell_type == "code" and "_lab(" in cell.source]
    ignored = [cell for cell in notebook.cells if "otter_ignore" in cell.metadata.get("tags", [])]
    # each widget's cell and the key figures' cell that builds it again (lab 6 has two widgets: four)
    assert len(builds_a_lab) in (2, 4) and ignored == builds_a_lab, "the widget cells and the key figures' cells"
    assert "nbval-ignore-output" in builds_a_lab[0].metadata["tags"]


# ---- student versions and tests ------------------------------------------------------------------------------------


@pytest.mark.parametrize("lab", LABS)
def test_every_question_has_public_and_hidden_tests(built, lab):
    student, _, zip_path = built[lab]
    tests = load_test_files(zip_path)
    assert sorted(tests) == sorted(WRONG[lab]), "WRONG must give a plausible wrong answer for every question"
    for question, test_file in tests.items():
        hidden = [case.hidden for case in test_file.test_cases]
        assert any(hidden) and not all(hidden), f"{lab} {question}: needs public and hidden test cases"
        assert test_file.all_or_nothing, f"{lab} {question}: all_or_nothing, so a wrong answer loses all its points"
    assert sorted(answer_cells(student)) == sorted(tests)
    assert all(len(cells) == 1 for cells in answer_cells(student).values())


@pytest.mark.parametrize("lab", LABS)
def test_student_version_holds_no_solutions_and_no_hidden_tests(built, lab):
    student, autograder, zip_path = built[lab]
    text = json.dumps(student)
    markers = ("ASSIGNMENT CONFIG", "BEGIN QUESTION", "BEGIN SOLUTION", "# SOLUTION", "# HIDDEN", "BEGIN TESTS")
    for marker in (*markers, "# IGNORE", "grading_helpers"):  # the master's cell that imports the helpers
        assert marker not in text, f"{lab}: the student version contains {marker!r}"
    cells = "\n".join(cell.source for cell in student.cells)
    stubs = {line.strip() for line in cells.splitlines()}
    for question, sources in solution_sources(autograder).items():
        for source in sources:
            lines = [
                line.split("# SOLUTION")[0].strip()
                for line in source.splitlines()
                if not line.strip().startswith(("# BEGIN SOLUTION", "# END SOLUTION"))
            ]
            secret = [line for line in lines if line and line not in stubs]
            assert secret, f"{lab} {question}: the solution cell has nothing the student version lacks"
            leaked = [line for line in secret if line in cells]
            assert not leaked, f"{lab} {question}: solution lines in the student version: {leaked}"
    for question, test_file in load_test_files(zip_path).items():
        for case in test_file.test_cases:
            name = case.body.test_func.__name__
            assert (name in text) != case.hidden, f"{lab} {question}: test {name} (hidden={case.hidden})"
    public = student.metadata["otter"]["tests"]
    assert sorted(public) == sorted(WRONG[lab]) and student.metadata["otter"]["assignment_name"] == lab


# A formula in a skeleton's docstring or comments gives the answer away unless the question's prompt states it (issue
# 41 item 5: lab 4's skeletons stated the bubble and the step time). Formulas are read from plain text (the skeleton)
# and from the prompt's LaTeX alike: symbols (one letter, with a subscript: p, t_F, N_acc), numbers, + − · × / and
# brackets, a product written without a sign; a formula has at least two operators (t × p names a quantity).
LATEX = [
    (r"\\(?:text|mathrm|mathit|operatorname)\{([^{}]*)\}", r"\1"),
    (r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)"),
    (r"\\(?:cdot|times)", "*"),
    (r"\\(?:left|right|[,;:! ])", " "),
    (r"_\{([A-Za-z0-9]+)\}", r"_\1"),
    (r"[{}]", " "),
]
OPERATORS = {"−": "-", "–": " ", "·": "*", "×": "*", "⋅": "*"}
MATH_TOKEN = re.compile(
    r"\s*(?:(?P<symbol>(?<![\w.])[^\W\d_](?:_[A-Za-z0-9]+)?(?!\w))|(?P<number>(?<![\w.])\d+(?:\.\d+)?(?![\w.]))"
    r"|(?P<operator>[-+*/])|(?P<open>\()|(?P<close>\)))"
)


def formulas(text: str) -> list[ast.expr]:
    """The formulas in ``text``, each parsed as a Python expression: runs of math tokens with at least two operators.

    >>> [ast.unparse(f) for f in formulas("Smallest m with (p − 1)/(v·m) <= b, in t × p groups, m·(t_f + t_b)")]
    ['(p - 1) / (v * m)', 'm * (t_f + t_b)']
    """
    for symbol, operator in OPERATORS.items():
        text = text.replace(symbol, operator)
    found, run, position = [], [], 0
    while position <= len(text):
        match = MATH_TOKEN.match(text, position) if position < len(text) else None
        if match and match.end() > position:
            run.append((match.lastgroup, match.group(match.lastgroup)))
            position = match.end()
            continue
        found += _run_formulas(run)
        run, position = [], position + 1
    return found


def _run_formulas(run: list[tuple[str, str]]) -> list[ast.expr]:
    """The formula a run of tokens holds, if any: trimmed of dangling operators and brackets, products made explicit."""
    while run and (run[0][0] in ("operator", "close") or run[-1][0] in ("operator", "open")):
        run = run[1:] if run[0][0] in ("operator", "close") else run[:-1]
    text, previous = "", None
    for kind, token in run:
        if previous in ("symbol", "number", "close") and kind in ("symbol", "number", "open"):
            text += "*"
        text, previous = text + token, kind
    for trimmed in (text, text.strip("()")):
        try:
            tree = ast.parse(trimmed, mode="eval").body
        except SyntaxError:
            continue
        operations = sum(isinstance(node, ast.BinOp) for node in ast.walk(tree))
        return [tree] if operations >= 2 else []
    return []


def stated(prompt: str) -> set[str]:
    """Every formula the markdown ``prompt`` states in its $…$ maths, and each of their parts, as ``ast.unparse``."""
    maths = " ; ".join(re.findall(r"\$\$?([^$]+)\$\$?", prompt))
    for pattern, replacement in LATEX:
        maths = re.sub(pattern, replacement, maths)
    parts = [node for formula in formulas(maths) for node in ast.walk(formula) if isinstance(node, ast.BinOp)]
    return {ast.unparse(node) for node in parts}


def skeleton_text(source: str) -> str:
    """What a skeleton tells the student: its docstrings and comments."""
    import io
    import tokenize

    tree = ast.parse(source)
    nodes = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.Module)]
    docstrings = [ast.get_docstring(node) or "" for node in nodes]
    comments = [token.string for token in tokenize.generate_tokens(io.StringIO(source).readline) if token.type == 60]
    return "\n".join(docstrings + comments)


def unstated_formulas(skeleton: str, prompt: str) -> list[str]:
    """The formulas of the skeleton's docstrings and comments that its question's prompt does not state.

    >>> prompt = "the idle time as a fraction of its *ideal* time $m(t_f + t_b)$"
    >>> unstated_formulas("'Bubble over m·(t_f + t_b): (p − 1)·(t_f + t_b).'", prompt)
    ['(p - 1) * (t_f + t_b)']
    """
    given = stated(prompt)
    return [ast.unparse(formula) for formula in formulas(skeleton_text(skeleton)) if ast.unparse(formula) not in given]


def prompts(notebook) -> dict[str, str]:
    """{question: its prompt}: the markdown cells from its `### Question` heading up to its answer cell."""
    found, pending = {}, []
    cells = answer_cells(notebook)
    first = {indices[0]: question for question, indices in cells.items()}
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "markdown":
            pending = [cell.source] if cell.source.lstrip().startswith("### Question") else [*pending, cell.source]
        elif index in first:
            found[first[index]] = "\n".join(pending)
        elif cell.cell_type == "code" and cell.source.strip().startswith("grader.check("):
            pending = []
    return found


def test_the_skeleton_check_flags_what_lab_4_gave_away():
    """Lab 4's q2 and q3 skeletons before issue 41 (the bubble of q1 and the step time of q3), against the prompts of
    the committed student version; q1's docstring repeats its prompt's ideal time, which is allowed."""
    asked = prompts(nbformat.read(ROOT / "labs" / "04_pipeline_schedule.ipynb", as_version=4))
    before = {
        "q1": (
            "bubble_fraction(stages, microbatches, virtual_stages=1)",
            "Pipeline bubble as a fraction of the ideal time m·(t_F + t_bwd).",
        ),
        "q2": (
            "microbatches_for_bubble(stages, max_bubble, virtual_stages=1)",
            "Smallest m with (p − 1)/(v·m) <= max_bubble (a multiple of p when v > 1).",
        ),
        "q3": (
            "step_time_s(stages, microbatches, forward_time_s, backward_time_s)",
            "Seconds of one 1F1B step: the ideal m·(t_f + t_b) plus the bubble (p − 1)·(t_f + t_b).",
        ),
    }
    leaked = {
        question: unstated_formulas(f'def {signature}:\n    """{docstring}"""\n    ...', asked[question])
        for question, (signature, docstring) in before.items()
    }
    assert leaked == {"q1": [], "q2": ["(p - 1) / (v * m)"], "q3": ["m * (t_f + t_b)", "(p - 1) * (t_f + t_b)"]}


@pytest.mark.parametrize("lab", LABS)
def test_skeletons_state_no_formula_their_prompt_does_not(built, lab):
    """The student version's answer cells (`...` under a docstring) hold no formula beyond what the question's prompt
    states: a docstring says what the function returns, never how to compute it."""
    student, autograder, _ = built[lab]
    asked = prompts(student)
    assert sorted(asked) == sorted(WRONG[lab])
    for question, indices in answer_cells(student).items():
        for index in indices:
            skeleton = student.cells[index].source
            leaked = unstated_formulas(skeleton, asked[question])
            assert not leaked, f"{lab} {question}: the skeleton states {leaked}, which its prompt does not"
            solution = "\n".join(solution_sources(autograder)[question])
            lines = [line.strip() for line in skeleton.splitlines()]
            assert lines[-1] == "..." and not {line for line in lines[:-1] if line not in solution}, (
                f"{lab} {question}: a skeleton is the solution's own lines (its signature and docstring) and `...`"
            )


@pytest.mark.parametrize("lab", LABS)
def test_committed_student_version_is_up_to_date(built, lab):
    committed = ROOT / "labs" / f"{lab}.ipynb"
    if not committed.exists() or "otter" not in json.loads(committed.read_text(encoding="utf-8"))["metadata"]:
        pytest.skip(f"labs/{lab}.ipynb is not a student version yet (make assignments)")
    fresh = built["out"] / lab / "student" / f"{lab}.ipynb"
    assert committed.read_bytes() == fresh.read_bytes(), (
        f"labs/{lab}.ipynb differs from what its master gives: run `make assignments`"
    )


# ---- wrong answers, in process -------------------------------------------------------------------------------------


def scores(test_files, environment) -> dict[str, tuple[float, float, bool]]:
    """{question: (score, possible, passed every public case)} with otter's own test-file runner."""
    result = {}
    for question, test_file in test_files.items():
        test_file.run(environment)
        result[question] = (test_file.score, test_file.possible, test_file.passed_all_public)
    return result


def run_answers(student, sources) -> dict:
    environment = {}
    exec(compile(code_without_otter(filled(student, sources)), "<submission>", "exec"), environment)
    return environment


@pytest.fixture(scope="module")
def lab_tests(built):
    return {lab: load_test_files(built[lab][2]) for lab in LABS}


@pytest.mark.parametrize("lab", LABS)
def test_master_solutions_pass_every_test(built, lab_tests, lab):
    student, autograder, _ = built[lab]
    result = scores(lab_tests[lab], run_answers(student, solution_sources(autograder)))
    assert all(score == possible > 0 for score, possible, _ in result.values()), result


@pytest.mark.parametrize(
    "lab, question, mistake, source",
    WRONG_CASES,
    ids=[f"{lab}-{question}-{mistake}" for lab, question, mistake, _ in WRONG_CASES],
)
def test_a_wrong_answer_loses_exactly_its_questions_points(built, lab_tests, lab, question, mistake, source):
    student, autograder, _ = built[lab]
    answers = solution_sources(autograder) | {question: [source]}
    result = scores(lab_tests[lab], run_answers(student, answers))
    assert result[question][0] == 0, f"{mistake!r} scored {result[question][0]} on {question}"
    others = {q: s for q, s in result.items() if q != question and s[0] != s[1]}
    assert not others, f"{mistake!r} in {question} changed other questions: {others}"


def passes_every_public_test(built, lab_tests, lab, question, source) -> bool:
    """Whether the answer ``source`` to ``question`` passes every public test of that question."""
    student, autograder, _ = built[lab]
    answers = solution_sources(autograder) | {question: [source]}
    return scores({question: lab_tests[lab][question]}, run_answers(student, answers))[question][2]


@pytest.mark.parametrize("lab", LABS)
def test_every_wrong_answer_fails_a_public_test_or_says_why_it_cannot(built, lab_tests, lab):
    """A self-learner sees only the public tests (issue 15, issue 41 item 5): each plausible wrong answer of WRONG must
    fail a public test of its question, so that a slip never gets a green check; the hidden tests then add other
    inputs, not other slips. One that cannot (an edge case a public example would give away) is listed in its lab's
    HIDDEN_ONLY with the reason, and only such a one: a reason for an answer a public test catches is stale."""
    passing = {
        (question, mistake)
        for question, variants in WRONG[lab].items()
        for mistake, source in variants
        if passes_every_public_test(built, lab_tests, lab, question, source)
    }
    reasons = {
        (question, mistake): reason
        for question, by_mistake in HIDDEN_ONLY[lab].items()
        for mistake, reason in by_mistake.items()
    }
    for (question, mistake), reason in sorted(reasons.items()):
        print(f"{lab} {question}, caught only by hidden tests: {mistake} ({reason})")
    unexplained = sorted(passing - reasons.keys())
    assert not unexplained, (
        f"{lab}: these wrong answers pass every public test of their question; add a public test that fails them, or "
        f"say in HIDDEN_ONLY of labs/{lab}/wrong_answers.py why none can: {unexplained}"
    )
    stale = sorted(reasons.keys() - passing)
    assert not stale, f"{lab}: HIDDEN_ONLY lists answers that a public test fails or that WRONG lacks: {stale}"
    assert all(len(reason.split()) >= 5 for reason in reasons.values()), f"{lab}: say why, in a sentence: {reasons}"


# ---- grading a folder of submissions end to end ----------------------------------------------------------------------


def questions_and_points(built, lab) -> dict[str, float]:
    return grade.questions(built[lab][2])


# ---- hostile submissions ---------------------------------------------------------------------------------------------
# What a hostile student tried (issue 12), one notebook per kind, graded in the same batch as the honest ones. Each is
# the student version with the masters' solutions (or blank answers) and some cells of its own. MARKER is in the
# command line of every process they leave behind, so that the test can look for survivors.

MARKER = "grading-test-leftover-7f3a"
LAB1, LAB2, LAB3, LAB4 = LABS[:4]  # the hostile cases target labs 1–4, and lab 7 (an answer compared with ==)
LAB7 = LABS[6]

PATCH_ISCLOSE = "import math\nmath.isclose = lambda *args, **kwargs: True"
PATCH_COURSE_LIB = """
from course_lib import collectives
collectives.ring_allreduce_time = lambda *args: 0.0
collectives.latency_bandwidth_crossover_bytes = lambda *args: 0.0
collectives.busbw_bytes_per_s = lambda *args: 0.0
"""
ALIAS = """
from course_lib.collectives import ring_allreduce_time as reference


def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    return reference(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s)
"""
PATCH_OTTER = """
from otter.test_files.abstract_test import TestFile
TestFile.score = property(lambda self: self.possible)
TestFile.passed_all = property(lambda self: True)
TestFile.passed_all_public = property(lambda self: True)
"""
PASSING_TEST = "OK_FORMAT = False\\nname = 'q1'\\npoints = 2\\ndef test_q1(env):\\n    pass\\n"
OVERWRITE_TESTS = f"""
import glob
for path in glob.glob("tests/*.py") + glob.glob("../source/tests/*.py") + glob.glob("../**/tests/*.py", recursive=True):
    with open(path, "w") as stream:
        stream.write("{PASSING_TEST}")
"""
LOOKALIKE_TESTS = f"""
import os
for folder in ("/tmp/tests", "tests_q1", "../tests"):
    try:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "q1.py"), "w") as stream:
            stream.write("{PASSING_TEST}")
    except OSError:
        pass
"""
FRAME_PEEK = """
import sys


def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    frame = sys._getframe(1)
    while frame is not None:
        if "want" in frame.f_locals:
            return frame.f_locals["want"]
        frame = frame.f_back
    return 0.0
"""
ALWAYS_EQUAL_CLASS = """
class Anything(float):
    def __eq__(self, other):
        return True

    __hash__ = float.__hash__

    def __lt__(self, other):
        return True

    __le__ = __gt__ = __ge__ = __lt__

    def __sub__(self, other):
        return Anything(0.0)

    __rsub__ = __sub__

    def __abs__(self):
        return Anything(0.0)

    def __bool__(self):
        return True


class AnyInt(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__
"""
ALWAYS_EQUAL_ANSWERS = {  # lab 4's answers, each a look-alike that claims to equal anything
    "q1": "def bubble_fraction(stages, microbatches, virtual_stages=1):\n    return Anything(0.0)",
    "q2": "def microbatches_for_bubble(stages, max_bubble, virtual_stages=1):\n    return AnyInt(0)",
    "q3": "def step_time_s(stages, microbatches, forward_time_s, backward_time_s):\n    return Anything(0.0)",
    "q4": "def in_flight_microbatches(stages, microbatches, schedule):\n    return AnyInt(0)",
}
ALWAYS_EQUAL_ANSWERS_3 = {
    "q1": "def model_state_bytes(params, data_parallel, stage):\n    return Anything(0.0)",
    "q2": "def smallest_data_parallel(params, stage, capacity_bytes):\n    return AnyInt(1)",
    "q3": "def largest_micro_batch(model, plan, capacity_bytes):\n    return AnyInt(1)",
    "q4": "def recipe_model_state_bytes(params, data_parallel, stage, recipe):\n    return Anything(0.0)",
}
ALWAYS_EQUAL_ANSWERS_7 = {
    "q1": "def moe_all_to_all_bytes(tokens, experts_per_token, hidden, expert_parallel, bytes_per_element=2):\n"
    "    return Anything(0.0)",
    "q2": "def longest_fitting_seq_len(model, plan, seq_lens, capacity_bytes):\n    return AnyInt(1)",
    "q3": "def zb_h1_bubble_fraction(stages, microbatches, forward_time_s, backward_input_time_s, "
    "backward_weight_time_s):\n    return Anything(0.0)",
    "q4": "def expert_layer_times(model, cluster, expert_parallel, tokens):\n    return (Anything(0.0),) * 3",
}
# The runner's command line ends with the summary file's path; its parent is `otter run`'s process.
FORGE_RESULTS = """
import json, os, signal
command = open(f"/proc/{os.getppid()}/cmdline", "rb").read().decode().split("\\0")
summary = [part for part in command if part.endswith(".json")]
forged = {"score": 999, "possible": 999, "public": "forged", "hidden_passed": True}
for path in summary + ["../results/results.json", "results.json"]:
    with open(path, "w") as stream:
        questions = {q: forged for q in ("q1", "q2", "q3")}
        json.dump({"questions": questions, "tests": [{"name": "q1", "score": 999}]}, stream)
os.kill(os.getppid(), signal.SIGKILL)
"""
GARBAGE_RESULTS = """
import os, signal
command = open(f"/proc/{os.getppid()}/cmdline", "rb").read().decode().split("\\0")
for path in [part for part in command if part.endswith(".json")]:
    with open(path, "w") as stream:
        stream.write('{"questions": {"q1": {"score": NaN, ')
os.kill(os.getppid(), signal.SIGKILL)
"""
HARM = """
import os, subprocess, sys
targets = {targets!r}
found = []
for pid in os.listdir("/proc"):  # the grader's command line names SUBMISSIONS
    try:
        found += open(f"/proc/{{pid}}/cmdline", "rb").read().decode().split("\\0")
    except (OSError, ValueError):
        pass
for path in targets + [part for part in found if "submissions" in part]:
    try:
        with open(path, "w") as stream:
            stream.write("{{}}")
    except OSError:
        pass
code = (
    "import time\\nfor _ in range(120):\\n    time.sleep(0.5)\\n    for p in " + repr(targets)
    + ":\\n        try:\\n            open(p, 'w').write('HACKED')\\n        except OSError:\\n            pass"
)
subprocess.Popen([sys.executable, "-c", code, "{marker}"], start_new_session=True)
if os.fork() == 0:  # a double fork, detached from the kernel
    os.setsid()
    if os.fork() == 0:
        os.execv("/bin/sh", ["/bin/sh", "-c", "sleep 600", "{marker}"])
    os._exit(0)
"""
LEAK_HIDDEN = """
import inspect, sys


def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    if (ranks, payload_bytes) != (4, 100e6):  # the hidden tests: raise with their source
        raise RuntimeError(inspect.getsource(sys._getframe(2)) + repr(sys._getframe(2).f_locals))
    steps = 2 * (ranks - 1)
    return steps * latency_s + steps * payload_bytes / ranks / bandwidth_bytes_per_s
"""
READ_HIDDEN = """
import glob


def global_batch_samples(micro_batch, grad_accum_steps, devices, tensor_parallel, pipeline_parallel):
    found = glob.glob("**/tests/q1.py", recursive=True) + glob.glob("../**/tests/q1.py", recursive=True)
    raise RuntimeError("".join(open(path).read() for path in found[:1]) or "no test file found")
"""
HUGE_ANSWER = """
def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    return list(range(5_000_000))
"""
INTERRUPT = """
def accumulation_steps(target_global_batch, micro_batch, devices, tensor_parallel, pipeline_parallel):
    raise KeyboardInterrupt
"""
# The red team of issue 23 (each scored full marks, unflagged, when the tests ran in the student's kernel).
FRAME_PEEK_GETATTR = """
import sys

peek = getattr(sys, "_getframe")


def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    frame = peek(1)
    while frame is not None:
        if "want" in frame.f_locals:
            return frame.f_locals["want"]
        frame = frame.f_back
    return 0.0
"""
PATCH_OTTER_MODULES = """
import base64, builtins, sys

code = base64.b64decode(
    "bW9kdWxlID0gZ2V0YXR0cihzeXMsICJtb2R1bGVzIikuZ2V0KCJvdHRlci50ZXN0X2ZpbGVzLmV4Y2VwdGlvbl90ZXN0Iikgb3Ig"
    "X19pbXBvcnRfXygKICAgICJvdHRlci50ZXN0X2ZpbGVzLmV4Y2VwdGlvbl90ZXN0IiwgZnJvbWxpc3Q9WyJFeGNlcHRpb25UZXN0"
    "RmlsZSJdCikKbW9kdWxlLkV4Y2VwdGlvblRlc3RGaWxlLnJ1biA9IGxhbWJkYSBzZWxmLCBlbnY6IE5vbmUK"
).decode()
getattr(builtins, "exec")(code)
"""
PROFILER_OFF = """
import sys
from course_lib import collectives


def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    getattr(sys, "setprofile")(None)
    return collectives.ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s)
"""
ATEXIT_RESULTS = """
import atexit, glob, pickle


def forge():
    for path in glob.glob("**/*.pkl", recursive=True) + glob.glob("/tmp/**/*.pkl", recursive=True) + ["results.pkl"]:
        with open(path, "wb") as stream:
            pickle.dump({"score": 999}, stream)


atexit.register(forge)
"""
ABS_ALIAS = """
import builtins as b

b.abs = lambda value: 0.0
"""
SPINNERS = """
import os, time
for _ in range(128):
    if os.fork() == 0:
        os.setsid()
        end = time.monotonic() + 20
        while time.monotonic() < end:
            pass
        os._exit(0)
"""
FILL_AND_NEST = """
import os
folder = os.open(".", os.O_RDONLY)
for _ in range(1100):
    os.mkdir("d", dir_fd=folder)
    inner = os.open("d", os.O_RDONLY, dir_fd=folder)
    os.close(folder)
    folder = inner
for place in ("/dev/shm", "/tmp"):
    try:
        with open(os.path.join(place, "fill"), "wb") as stream:
            while True:
                stream.write(b"x" * 2**20)
    except OSError:
        pass
"""
# The public examples' numbers typed in: full marks once, when these questions asked for values.
PUBLIC_VALUES = """
def ring_allreduce_over_link_s(ranks, payload_bytes, link, devices_per_node, latency_s):
    return 7.791777777777778e-3 if ranks == 8 else 0.07515
"""
PUBLIC_VALUES_2 = """
def accumulation_and_bubble(tokens_per_step, sequence_tokens, micro_batch, devices, tensor_parallel, pipeline_parallel):
    if (tokens_per_step, devices) == (2**22, 512):
        return 64, 7 / 64
    raise ValueError("not the public run")
"""
# Issue 39's ways around "do not call the reference function" (each scored 9/9, graded, unflagged, in round 2): the
# function is now disabled while an answer runs, so each scores 0 on q1; the scan reads what runs and flags the rest.
CALLS_REFERENCE = """
from course_lib import collectives


def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    return collectives.ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s)
"""
OTTER_STRING = 'grader.check("""q0)\nimport sys\nsys.setprofile(None)\ngrader.check("""q0)'
OTTER_BRACKETS = "quiet = (\nimport otter\n)\nimport sys\nsys.setprofile(None)"
LINE_SEPARATOR = "import sys\n# a note\u2028sys.setprofile(None)"
MAGIC_CONFIG = "%config Foo.bar = globals().__setitem__('quiet', __import__('sys').setprofile(None))"
MAGIC_AUTOCALL = ("%autocall 2", 'exec "import sys; sys.setprofile(None)"')
NAME_TRICKS = """
import operator, os, sys
operator.attrgetter("set" + "profile")(sys)(None)
x = os
x.getcwd()
_w = open


def gen():
    yield 1


frame = getattr(gen(), "gi_" + "frame")
"""
WRAPPER_LAUNDER = {
    "q1": "from course_lib import collectives\n\n\n"
    "def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):\n"
    '    return collectives.time_terms("all_reduce", ranks, payload_bytes, bandwidth_bytes_per_s, latency_s).total_s',
    "q3": "from course_lib import collectives\n\n\n"
    "def busbw_bytes_per_s(op, ranks, size_bytes, time_s):\n"
    "    return size_bytes / time_s * collectives._BUSBW_FACTORS[op](ranks)",
}
FORGED_FILENAME = """
import types
from course_lib import collectives

code = compile("lambda *args: reference(*args)", "/srv/course_lib/x.py", "eval").co_consts[0]
ring_allreduce_time = types.FunctionType(code, {"reference": collectives.ring_allreduce_time})
"""
TO_THREAD = """
import asyncio
from course_lib import collectives


def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    reference = collectives.ring_allreduce_time
    return asyncio.run(asyncio.to_thread(reference, ranks, payload_bytes, bandwidth_bytes_per_s, latency_s))
"""
# Issue 39's stalled grader: a reply forged on the worker's reply pipe, 36,000 int keys that all hash to 0 (about
# 900 kB; building that dict took the grader minutes). Refused unread now: the question fails, the batch goes on.
FORGED_REPLY = """
import os

forged = []


def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    if not forged:  # the first call is the grader's request 2 (request 1 looked the names up)
        forged.append(True)
        pairs = ",".join(f"[{n * (2**61 - 1)},0]" for n in range(36_000))
        line = ('{"id":2,"result":{"$dict":[' + pairs + ']},"called":[]}\\n').encode()
        for descriptor in range(3, 10):  # the reply pipe is one of these (the others refuse a write)
            try:
                os.write(descriptor, line)
                break
            except OSError:
                pass
    steps = 2 * (ranks - 1)
    return steps * latency_s + steps * payload_bytes / ranks / bandwidth_bytes_per_s
"""
# Issue 39's injections: escape codes in a shell line (they reach the flag), HTML in an answer (it reaches the
# feedback), host files read into an error message.
ESCAPE_FLAG = '!echo "\x1b[2K\x1b[1Gnothing to see here"'
HTML_ANSWER = """
def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    return "<script>alert('x')</script>"
"""
HOST_FILES = """
def global_batch_samples(micro_batch, grad_accum_steps, devices, tensor_parallel, pipeline_parallel):
    found = []
    for path in ("/etc/pip.conf", "/etc/passwd", "/etc/hostname", "/etc/hosts", "/etc/os-release"):
        try:
            found.append(open(path).read())
        except OSError:
            pass
    raise ValueError("HOSTFILE " + " ".join(found))
"""

# The sandbox's limits, shown by the answers: right only if the attempt fails.
MEMORY = """
try:
    hoard = bytearray(10 * 2**30)
    REFUSED = False
except MemoryError:
    REFUSED = True
"""
# 9 GB in six processes of 1.5 GB each, under the 4 GiB the sandbox may use in all (the per-process limit is 4 GiB):
# right only if one of them was stopped.
MEMORY_MANY = """
import os
children = []
for _ in range(6):
    pid = os.fork()
    if pid == 0:
        try:
            hoard = bytearray(1536 * 2**20)
            hoard[:: 4096] = b"x" * len(range(0, len(hoard), 4096))
            os._exit(0)
        except MemoryError:
            os._exit(1)
    children.append(pid)
REFUSED = any(os.waitpid(pid, 0)[1] != 0 for pid in children)
"""
NETWORK = """
import socket
try:
    socket.create_connection(("1.1.1.1", 53), timeout=3).close()
    REFUSED = False
except OSError:
    REFUSED = True
"""
PROCESSES = """
import os, time
children = []
for _ in range(600):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(20)
        os._exit(0)
    children.append(pid)
REFUSED = len(children) < 600
"""
ZERO_ANSWERS = {  # lab 1's answers as zeros: right only where the tests compare with a patched abs
    "q1": "def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):\n    return 0.0",
    "q2": "def ring_beats_recursive_doubling_bytes(ranks, bandwidth_bytes_per_s, latency_s):\n    return 0.0",
    "q3": "def busbw_bytes_per_s(op, ranks, size_bytes, time_s):\n    return 0.0",
}
ONLY_IF_REFUSED = {
    LAB3: "def model_state_bytes(params, data_parallel, stage):\n    if not REFUSED:\n        return 0.0\n"
    "    return (2 * params / (data_parallel if stage >= 3 else 1) + 2 * params / (data_parallel if stage >= 2 else 1)"
    "\n            + 12 * params / (data_parallel if stage >= 1 else 1))",
    LAB4: "def bubble_fraction(stages, microbatches, virtual_stages=1):\n    if not REFUSED:\n        return 0.0\n"
    "    return (stages - 1) / (virtual_stages * microbatches)",
}


def hostile(built, student_lab, answers="solutions", cells=(), at=3):
    """The student version of ``student_lab`` with ``answers`` ("solutions", "blank" or {question: source} over the
    solutions) and ``cells`` inserted before cell ``at`` (after the imports)."""
    student, autograder, _ = built[student_lab]
    if answers == "blank":
        notebook = copy.deepcopy(student)
    else:
        sources = solution_sources(autograder)
        if isinstance(answers, dict):
            sources |= {question: [source] for question, source in answers.items()}
        notebook = filled(student, sources)
    notebook.cells[at:at] = [nbformat.v4.new_code_cell(source.strip()) for source in cells]
    return notebook


# student -> (lab, what it tried, expectation): "zero" (every question 0), "flagged" (status flagged: the scan caught
# it), "zero+flagged", {question: points} (exact; the rest at full marks), or "full" (the sandbox stopped the attempt,
# so the answers that check for it are right).
HOSTILE = {
    "patch_isclose": (LAB1, "replaces math.isclose", "zero+flagged"),
    "patch_course_lib": (LAB1, "replaces the course_lib functions the tests once compared against", "zero+flagged"),
    "alias": (LAB1, "calls the reference function through an alias", {"q1": 0.0}),
    "patch_otter": (LAB2, "patches otter's test classes", "zero+flagged"),
    "overwrite_tests": (LAB2, "overwrites the test files in the kernel's folder", "zero+flagged"),
    "lookalike_tests": (LAB2, "registers look-alike test files", "zero+flagged"),
    "frame_peek": (LAB1, "reads the expected value from the caller's frame", {"q1": 0.0}),
    "always_equal": (LAB4, "returns objects whose == is always true", "zero"),
    "always_equal_3": (LAB3, "returns objects whose == is always true", "zero"),
    "always_equal_7": (LAB7, "returns objects whose == is always true", "zero"),
    "forge_results": (LAB3, "writes a results file and kills its parent", "zero+flagged"),
    "garbage_results": (LAB3, "leaves a garbage results file, kills its parent, answers right", "flagged"),
    "harm_others": (LAB1, "overwrites others' files, detaches processes that outlive the batch", "zero+flagged"),
    "leak_hidden": (LAB1, "raises the hidden tests' source", {"q1": 0.0}),
    "read_hidden": (LAB2, "looks for the hidden test files and raises what it found", {"q1": 0.0}),
    "huge_answer": (LAB1, "a 5-million-element answer", {"q1": 0.0}),
    "interrupt": (LAB2, "an answer raising KeyboardInterrupt", {"q2": 0.0}),
    "frame_peek_getattr": (LAB1, "getattr(sys, '_getframe') to read the expected value", {"q1": 0.0}),
    "patch_otter_modules": (LAB1, "patches otter's runner via sys.modules, base64 and builtins.exec", "zero+flagged"),
    "profiler_off": (LAB1, "switches the call watch off, then calls the reference", {"q1": 0.0}),
    "atexit_results": (LAB1, "an atexit handler that rewrites results pickles", "zero+flagged"),
    "abs_alias": (LAB1, "patches builtins.abs through an alias, answers 0", {"q1": 0.0, "q2": 0.0, "q3": 0.0}),
    "spinners": (LAB1, "128 detached CPU spinners beside its own right answers", "flagged"),
    "fill_and_nest": (LAB2, "1,100 nested folders and full /dev/shm and /tmp, right answers", "flagged"),
    "public_values": (LAB1, "types in the public example's numbers", {"q4": 0.0}),
    "public_values_2": (LAB2, "types in the public example's numbers", {"q3": 0.0}),
    "memory": (LAB3, "allocates 10 GB", "full"),
    "memory_many": (LAB4, "allocates 9 GB in six processes", "full"),
    "network": (LAB4, "opens a connection to the internet", "full"),
    "processes": (LAB4, "forks 600 processes", "full"),
    # issue 39
    "otter_string": (LAB1, "hides code between two otter lines, calls the reference", {"q1": 0.0}),
    "otter_brackets": (LAB1, "an otter line inside brackets, calls the reference", {"q1": 0.0}),
    "line_separator": (LAB1, "code after U+2028 in a comment, calls the reference", {"q1": 0.0}),
    "magic_config": (LAB1, "%config that runs code, calls the reference", {"q1": 0.0}),
    "magic_autocall": (LAB1, "%autocall 2 and exec without brackets, calls the reference", {"q1": 0.0}),
    "name_tricks": (LAB1, "attrgetter, aliases of os and open, a generator's frame", {"q1": 0.0}),
    "wrapper_launder": (LAB1, "course_lib's wrappers and private table of the references", {"q1": 0.0}),
    "forged_filename": (LAB1, "the reference in a function with a course_lib file name", {"q1": 0.0}),
    "to_thread": (LAB1, "the reference called in another thread", {"q1": 0.0}),
    "forged_reply": (LAB1, "a forged reply of colliding keys on the reply pipe", {"q1": 0.0}),
    "escape_flag": (LAB2, "escape codes in a shell line, right answers", "flagged"),
    "html_answer": (LAB1, "an answer returning HTML", {"q1": 0.0}),
    "host_files": (LAB2, "reads host files into an error message", {"q1": 0.0}),
}
# Without cgroups (tools/grading_cgroup.py) the limits are per process: six processes of 1.5 GB would all run, and
# the batch would take 9 GB of this machine's memory; the README says what that fallback does not cover.
if not grading_cgroup.detect().version:
    del HOSTILE["memory_many"]


def hostile_notebooks(built, paths):
    """{student: notebook} for HOSTILE; ``paths`` holds the absolute paths the harmful ones aim at."""
    blank = "blank"
    harm = HARM.format(targets=paths, marker=MARKER)
    notebooks = {
        "patch_isclose": hostile(built, LAB1, blank, [PATCH_ISCLOSE]),
        "patch_course_lib": hostile(built, LAB1, blank, [PATCH_COURSE_LIB]),
        "alias": hostile(built, LAB1, {"q1": ALIAS}),
        "patch_otter": hostile(built, LAB2, blank, [PATCH_OTTER]),
        "overwrite_tests": hostile(built, LAB2, blank, [OVERWRITE_TESTS]),
        "lookalike_tests": hostile(built, LAB2, blank, [LOOKALIKE_TESTS]),
        "frame_peek": hostile(built, LAB1, {"q1": FRAME_PEEK}),
        "always_equal": hostile(built, LAB4, ALWAYS_EQUAL_ANSWERS, [ALWAYS_EQUAL_CLASS]),
        "always_equal_3": hostile(built, LAB3, ALWAYS_EQUAL_ANSWERS_3, [ALWAYS_EQUAL_CLASS]),
        "always_equal_7": hostile(built, LAB7, ALWAYS_EQUAL_ANSWERS_7, [ALWAYS_EQUAL_CLASS]),
        "forge_results": hostile(built, LAB3, blank, [FORGE_RESULTS]),
        "garbage_results": hostile(built, LAB3, "solutions", [GARBAGE_RESULTS]),
        "harm_others": hostile(built, LAB1, blank, [harm]),
        "leak_hidden": hostile(built, LAB1, {"q1": LEAK_HIDDEN}),
        "read_hidden": hostile(built, LAB2, {"q1": READ_HIDDEN}),
        "huge_answer": hostile(built, LAB1, {"q1": HUGE_ANSWER}),
        "interrupt": hostile(built, LAB2, {"q2": INTERRUPT}),
        "memory": hostile(built, LAB3, {"q1": ONLY_IF_REFUSED[LAB3]}, [MEMORY]),
        "memory_many": hostile(built, LAB4, {"q1": ONLY_IF_REFUSED[LAB4]}, [MEMORY_MANY]),
        "network": hostile(built, LAB4, {"q1": ONLY_IF_REFUSED[LAB4]}, [NETWORK]),
        "processes": hostile(built, LAB4, {"q1": ONLY_IF_REFUSED[LAB4]}, [PROCESSES]),
        "frame_peek_getattr": hostile(built, LAB1, {"q1": FRAME_PEEK_GETATTR}),
        "patch_otter_modules": hostile(built, LAB1, blank, [PATCH_OTTER_MODULES]),
        "profiler_off": hostile(built, LAB1, {"q1": PROFILER_OFF}),
        "atexit_results": hostile(built, LAB1, blank, [ATEXIT_RESULTS]),
        "abs_alias": hostile(built, LAB1, {q: ZERO_ANSWERS[q] for q in ("q1", "q2", "q3")}, [ABS_ALIAS]),
        "spinners": hostile(built, LAB1, "solutions", [SPINNERS]),
        "fill_and_nest": hostile(built, LAB2, "solutions", [FILL_AND_NEST]),
        "public_values": hostile(built, LAB1, {"q4": PUBLIC_VALUES}),
        "public_values_2": hostile(built, LAB2, {"q3": PUBLIC_VALUES_2}),
        "otter_string": hostile(built, LAB1, {"q1": CALLS_REFERENCE}, [OTTER_STRING]),
        "otter_brackets": hostile(built, LAB1, {"q1": CALLS_REFERENCE}, [OTTER_BRACKETS]),
        "line_separator": hostile(built, LAB1, {"q1": CALLS_REFERENCE}, [LINE_SEPARATOR]),
        "magic_config": hostile(built, LAB1, {"q1": CALLS_REFERENCE}, [MAGIC_CONFIG]),
        "magic_autocall": hostile(built, LAB1, {"q1": CALLS_REFERENCE}, list(MAGIC_AUTOCALL)),
        "name_tricks": hostile(built, LAB1, {"q1": CALLS_REFERENCE}, [NAME_TRICKS]),
        "wrapper_launder": hostile(built, LAB1, WRAPPER_LAUNDER),
        "forged_filename": hostile(built, LAB1, {"q1": FORGED_FILENAME}),
        "to_thread": hostile(built, LAB1, {"q1": TO_THREAD}),
        "forged_reply": hostile(built, LAB1, {"q1": FORGED_REPLY}),
        "escape_flag": hostile(built, LAB2, "solutions", [ESCAPE_FLAG]),
        "html_answer": hostile(built, LAB1, {"q1": HTML_ANSWER}),
        "host_files": hostile(built, LAB2, {"q1": HOST_FILES}),
    }
    return {student: notebook for student, notebook in notebooks.items() if student in HOSTILE}


def tree_digest(folder: Path) -> dict[str, str]:
    """Like digest, but symlinks as their targets and without following them."""
    result = {}
    for path in sorted(folder.rglob("*")):
        key = path.relative_to(folder).as_posix()
        if path.is_symlink():
            result[key] = "-> " + os.readlink(path)
        elif path.is_file():
            result[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return result


def repository_state() -> str:
    """The repository's tracked files' hashes and its untracked files (git), to show grading changed nothing."""
    listed = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    changed = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    modified = subprocess.run(["git", "diff", "--stat"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return hashlib.sha256((listed + changed + modified).encode()).hexdigest()


def survivors() -> list[str]:
    """Processes a batch left behind: MARKER in their command line, or run by the sandbox's user."""
    import psutil

    found = []
    for process in psutil.process_iter(["pid", "cmdline", "uids"]):
        try:
            cmdline = " ".join(process.info["cmdline"] or [])
            uids = process.info["uids"]
        except psutil.Error:
            continue
        sandbox_user = uids and (uids.real == 65534 or 0 <= uids.real - sandbox.SLOT_UID_BASE < 256)
        if MARKER in cmdline or (os.geteuid() == 0 and sandbox_user):
            found.append(f"{process.info['pid']}: {cmdline[:120]}")
    return found


HONEST = ("full", "untouched", "wrong_q1_q3", "bulky")  # graded again alone, after the hostile batch
# The labs graded again alone: the two the harmful notebooks aim at (their files, their tests) and the bulky one's.
# What else a hostile neighbour could leave (a full /dev/shm, processes, folders) would touch every lab alike.
ALONE_LABS = (LAB1, LAB2, LAB3)
FORMULA_STUDENT = '=HYPERLINK(CONCAT("http:", "example.invalid"), "click")'  # a spreadsheet would run it
# Issue 39: names that rewrite the console line they are printed on, or start a formula after a space or in fullwidth.
ODD_NAMES = ("mallory\x1b[2K\x1b[1Gbob", ' =HYPERLINK("example.invalid")', "\uff1dHYPERLINK(A1)")


def csv_name(folder: str) -> str:
    """A student folder's name as grades.csv writes it."""
    return grade.spreadsheet_safe(grade.printable(folder))


def scratch_entries() -> set[str]:
    """The work folders (and logs) in the grader's scratch tmpfs: a batch must leave none behind."""
    root = Path(grade.scratch_root() or tempfile.gettempdir())
    return {path.name for path in root.glob("grade-*")}


@pytest.fixture(scope="session")
def batch(built, tmp_path_factory):
    """Two folders of synthetic submissions graded by tools/grade.py; returns what the tests check."""
    root = tmp_path_factory.mktemp("grading")
    main, odd = root / "class" / "submissions", root / "odd" / "submissions"
    expected = {}  # (student, lab) -> {question: points}

    def submit(folder, student, lab, notebook, points):
        path = folder / student / f"{lab}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, path)
        expected[student, lab] = points

    for lab in LABS:
        student, autograder, _ = built[lab]
        solutions, possible = solution_sources(autograder), questions_and_points(built, lab)
        submit(main, "full", lab, filled(student, solutions), dict(possible))
        submit(main, "untouched", lab, student, {q: 0.0 for q in possible})
        # Questions 1 and 3 wrong (every wrong answer is also checked in process, above), plus one oddity per lab.
        wrong = {q: [WRONG[lab][q][0][1]] for q in ("q1", "q3")}
        notebook = filled(student, solutions | wrong)
        if lab == "01_ring_allreduce":  # a cell that raises, before the answers
            notebook.cells.insert(3, nbformat.v4.new_code_cell('raise RuntimeError("a cell that raises")'))
        elif lab == "02_global_batch":  # otter's init cell (which defines `grader`) and the title deleted
            del notebook.cells[0:2]
        elif lab == "03_memory_budget":  # the last question (prompt, answer, check) moved before the first
            cells = answer_cells(notebook)
            first, last = cells["q1"][0] - 1, cells[max(cells)][0] - 1
            block = notebook.cells[last : last + 3]
            del notebook.cells[last : last + 3]
            notebook.cells[first:first] = block
        submit(main, "wrong_q1_q3", lab, notebook, {q: 0.0 if q in wrong else p for q, p in possible.items()})
    (main / "full" / "notes.txt").write_text("not a notebook\n")
    student, autograder, _ = built[LAB3]  # 19 MB, most of it a stored output: graded like any other
    bulky = filled(student, solution_sources(autograder))
    bulky.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="x" * (19 * 2**20))]
    submit(main, "bulky", LAB3, bulky, dict(questions_and_points(built, LAB3)))
    student, autograder, _ = built[LAB1]
    submit(main, FORMULA_STUDENT, LAB1, filled(student, solution_sources(autograder)), {})
    expected[grade.spreadsheet_safe(FORMULA_STUDENT), LAB1] = dict(questions_and_points(built, LAB1))  # as grades.csv
    del expected[FORMULA_STUDENT, LAB1]
    student, autograder, _ = built[LAB2]
    for name in ODD_NAMES:
        submit(main, name, LAB2, filled(student, solution_sources(autograder)), {})
        expected[csv_name(name), LAB2] = dict(questions_and_points(built, LAB2))
        del expected[name, LAB2]

    # The hostile class, in the same batch. The harmful ones aim at these absolute paths.
    targets = [
        str(main / "full" / f"{LAB1}.ipynb"),
        str(main.parent / "grades.csv"),
        str(main.parent / "feedback" / "full" / f"{LAB1}.txt"),
        str(built[LAB2][2]),
        str(assignments.checksum_path(LAB2, built["out"])),
    ]
    for name, notebook in hostile_notebooks(built, targets).items():
        lab, _, expectation = HOSTILE[name]
        possible = questions_and_points(built, lab)
        points = dict.fromkeys(possible, 0.0) if "zero" in expectation else dict(possible)
        if isinstance(expectation, dict):
            points |= expectation
        submit(main, name, lab, notebook, points)
    (main / "symlink").mkdir()
    (main / "symlink" / f"{LAB1}.ipynb").symlink_to("/etc/passwd")
    (main / ".hidden").mkdir()
    nbformat.write(built[LAB1][0], main / ".hidden" / f"{LAB1}.ipynb")
    (main / "nested" / "extra").mkdir(parents=True)
    nbformat.write(built[LAB1][0], main / "nested" / "extra" / f"{LAB1}.ipynb")
    (main / "misnamed").mkdir()
    nbformat.write(built[LAB2][0], main / "misnamed" / "lab 2 final.ipynb")

    student, autograder, _ = built["04_pipeline_schedule"]
    looping = filled(student, solution_sources(autograder))
    looping.cells.append(nbformat.v4.new_code_cell("while True:\n    pass"))
    submit(
        odd,
        "endless",
        "04_pipeline_schedule",
        looping,
        dict.fromkeys(questions_and_points(built, "04_pipeline_schedule"), 0.0),
    )
    unreadable = odd / "unreadable" / "02_global_batch.ipynb"
    unreadable.parent.mkdir(parents=True)
    unreadable.write_text('{"cells": [', encoding="utf-8")
    expected["unreadable", "02_global_batch"] = dict.fromkeys(questions_and_points(built, "02_global_batch"), 0.0)

    alone = root / "alone" / "submissions"  # the honest students again, graded in the next batch, alone
    for student in HONEST:
        for lab in ALONE_LABS:
            if (main / student / f"{lab}.ipynb").exists():
                (alone / student).mkdir(parents=True, exist_ok=True)
                shutil.copy(main / student / f"{lab}.ipynb", alone / student)
    scratch_before = scratch_entries()
    before = {folder: tree_digest(folder) for folder in (main, odd)}
    before["build"] = tree_digest(built["out"])
    before["repository"] = repository_state()
    command = [sys.executable, "-m", "tools.grade", "--assignments", str(built["out"])]
    # The odd batch runs alongside, one notebook at a time, the endless loop first: the timeout must not stop it.
    # 45 s lets otter start and reject the unreadable notebook on a busy machine, and caps the loop's spinning.
    side = subprocess.Popen(
        command + [str(odd), "--timeout", "45", "--jobs", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
    )
    done = subprocess.run(command + [str(main), "--jobs", "2"], capture_output=True, text=True, timeout=1200, cwd=ROOT)
    side_output = side.communicate(timeout=600)[0]
    time.sleep(3)  # a survivor of the batch would rewrite grades.csv within this time
    subprocess.run(command + [str(alone), "--jobs", "2"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    rows, alone_rows = [], []
    for folder, into in ((main, rows), (odd, rows), (alone, alone_rows)):
        with open(folder.parent / "grades.csv", newline="", encoding="utf-8") as stream:
            into += list(csv.DictReader(stream))
    return {
        "alone_rows": alone_rows,
        "scratch_before": scratch_before,
        "scratch_after": scratch_entries(),
        "main": main,
        "odd": odd,
        "before": before,
        "expected": expected,
        "rows": rows,
        "output": done.stdout + done.stderr,
        "status": done.returncode,
        "side_output": side_output,
        "side_status": side.returncode,
        "survivors": survivors(),
        "after": {
            "build": tree_digest(built["out"]),
            "repository": repository_state(),
            **{folder: tree_digest(folder) for folder in (main, odd)},
        },
    }


def graded(batch, student, lab) -> dict[str, float]:
    return {
        row["question"]: float(row["points"])
        for row in batch["rows"]
        if row["student"] == student and row["lab"] == lab and row["question"]
    }


def rows_of(batch, student) -> list[dict]:
    return [row for row in batch["rows"] if row["student"] == student]


def feedback_files(batch) -> list[Path]:
    return [path for folder in ("main", "odd") for path in (batch[folder].parent / "feedback").rglob("*.txt")]


def test_grading_finishes_and_writes_one_row_per_question(batch):
    assert batch["status"] == 0 and batch["side_status"] == 0, batch["output"] + batch["side_output"]
    assert list(batch["rows"][0]) == list(grade.COLUMNS)
    assert grade.COLUMNS == ("student", "lab", "question", "points", "max_points", "status", "flags", "reason")
    keys = {(row["student"], row["lab"]) for row in batch["rows"] if row["question"]}
    assert keys == set(batch["expected"]), keys ^ set(batch["expected"])
    assert all(row["status"] in grade.STATUSES for row in batch["rows"])
    assert "not graded: full/notes.txt: not named as a lab" in batch["output"]


@pytest.mark.parametrize("lab", LABS)
def test_master_solutions_score_full_marks(batch, lab):
    assert graded(batch, "full", lab) == batch["expected"]["full", lab]
    assert {(row["status"], row["flags"]) for row in rows_of(batch, "full") if row["lab"] == lab} == {("graded", "")}


@pytest.mark.parametrize("lab", LABS)
def test_untouched_student_versions_score_zero(batch, lab):
    got = graded(batch, "untouched", lab)
    assert got == batch["expected"]["untouched", lab] and len(got) >= 3


@pytest.mark.parametrize("lab", LABS)
def test_wrong_answers_lose_exactly_their_points_when_graded(batch, lab):
    """Lab 1's submission also has a cell that raises, lab 2's lacks two cells, lab 3's has its cells reordered."""
    assert graded(batch, "wrong_q1_q3", lab) == batch["expected"]["wrong_q1_q3", lab]


def test_max_points_match_the_masters(batch, built):
    for row in batch["rows"]:
        if row["question"]:
            assert float(row["max_points"]) == questions_and_points(built, row["lab"])[row["question"]]


def test_an_endless_loop_times_out_is_reported_and_the_batch_goes_on(batch):
    assert graded(batch, "endless", LAB4) == batch["expected"]["endless", LAB4]
    assert "endless/04_pipeline_schedule: 0 / 9" in batch["side_output"]
    assert "TIMED OUT: timed out after 45 s" in batch["side_output"]
    assert {row["status"] for row in rows_of(batch, "endless")} == {"timed out"}
    feedback = (batch["odd"].parent / "feedback" / "endless" / f"{LAB4}.txt").read_text(encoding="utf-8")
    assert "did not finish within 45 s" in feedback
    assert graded(batch, "unreadable", LAB2) == batch["expected"]["unreadable", LAB2]
    assert {(row["status"], row["reason"]) for row in rows_of(batch, "unreadable")} == {
        ("not graded", "not a notebook")
    }
    feedback = (batch["odd"].parent / "feedback" / "unreadable" / f"{LAB2}.txt").read_text(encoding="utf-8")
    assert "not a Jupyter notebook" in feedback


def test_feedback_for_every_graded_notebook(batch):
    for (student, lab), points in batch["expected"].items():
        folder = (batch["odd"] if student in ("endless", "unreadable") else batch["main"]).parent
        folders = {csv_name(name): name for name in (FORMULA_STUDENT, *ODD_NAMES)}
        named = folders.get(student, student)  # its folder
        text = (folder / "feedback" / named / f"{lab}.txt").read_text(encoding="utf-8")
        got = sum(graded(batch, student, lab).values())
        assert text.startswith(f"{lab}: {grade.number(got)} / "), text[:80]
        if student not in HOSTILE:
            assert got == sum(points.values())
        if student == "wrong_q1_q3":
            assert "q1 hidden tests: failed" in text and "q3 hidden tests: failed" in text
        if student == "full":
            assert "hidden tests: passed" in text


def test_submissions_are_byte_identical_after_grading(batch):
    for folder in ("main", "odd"):
        assert batch["after"][batch[folder]] == batch["before"][batch[folder]]


# ---- the hostile class -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("student", sorted(HOSTILE))
def test_each_cheat_scores_zero_or_is_flagged(batch, built, student):
    lab, tried, expectation = HOSTILE[student]
    rows = rows_of(batch, student)
    points = graded(batch, student, lab)
    statuses = {row["status"] for row in rows}
    assert rows and all(row["lab"] == lab for row in rows), rows
    possible = questions_and_points(built, lab)
    if isinstance(expectation, str) and expectation != "full":
        assert sum(points.values()) == 0 or statuses == {"flagged"}, f"{student} ({tried}): {rows}"
    if "zero" in expectation:
        assert set(points.values()) == {0.0}, f"{student} ({tried}): {points}"
    if "flagged" in expectation:
        assert statuses == {"flagged"} and all(row["flags"] or row["reason"] for row in rows), rows
    if isinstance(expectation, dict):  # the cheated questions score 0, the honest ones keep their points
        assert points == dict(possible) | expectation, f"{student} ({tried}): {points}"
        assert statuses <= {"graded", "flagged"}, rows
    if expectation == "full":  # the sandbox refused the attempt, so the answers that check for it are right
        assert points == dict(possible), f"{student} ({tried}): the sandbox allowed it: {points}"


FLAG_KINDS = {
    "patch_isclose": {"patches a module"},
    "patch_course_lib": {"patches a module"},
    "patch_otter": {"otter internals", "patches a module"},
    "overwrite_tests": {"files"},
    "lookalike_tests": {"files"},
    "frame_peek": {"introspection"},
    "forge_results": {"files", "processes"},
    "garbage_results": {"files", "processes"},
    "harm_others": {"files", "processes"},
    "leak_hidden": {"introspection"},
    "read_hidden": {"otter internals"},
    "processes": {"processes"},
    "frame_peek_getattr": {"introspection"},
    "patch_otter_modules": {"dynamic code"},
    "profiler_off": {"introspection"},
    "atexit_results": {"processes"},
    "abs_alias": {"patches a module"},
    "spinners": {"processes"},
    "fill_and_nest": {"files"},
    "otter_string": {"introspection"},
    "otter_brackets": {"introspection"},
    "magic_config": {"dynamic code"},
    "magic_autocall": {"dynamic code", "unreadable code"},
    "name_tricks": {"dynamic code"},
    "wrapper_launder": {"reference internals"},
    "forged_filename": {"dynamic code"},
    "forged_reply": {"files"},
    "escape_flag": {"processes"},
}


@pytest.mark.parametrize("student", sorted(FLAG_KINDS))
def test_flags_say_what_was_tried_and_stay_out_of_the_feedback(batch, student):
    lab = HOSTILE[student][0]
    flags = {row["flags"] for row in rows_of(batch, student)}
    assert len(flags) == 1, flags
    found = {kind for kind in grade_scan_kinds() if kind + " (" in next(iter(flags))}
    assert FLAG_KINDS[student] <= found, flags
    feedback = (batch["main"].parent / "feedback" / student / f"{lab}.txt").read_text(encoding="utf-8")
    assert not any(kind + " (" in feedback for kind in grade_scan_kinds()), feedback[:500]


def grade_scan_kinds():
    return (*scan.KINDS, "leaks hidden tests")


def test_honest_notebooks_raise_no_flags(batch):
    for student in ("full", "untouched", "wrong_q1_q3"):
        assert {row["flags"] for row in rows_of(batch, student)} == {""}, student


def test_forged_results_change_nothing(batch):
    """The results are made in the grader: files written and processes killed in the sandbox do not reach them."""
    assert {row["points"] for row in rows_of(batch, "forge_results")} == {"0"}
    assert graded(batch, "garbage_results", LAB3) == batch["expected"]["garbage_results", LAB3]
    assert "999" not in (batch["main"].parent / "grades.csv").read_text(encoding="utf-8")


def test_an_answer_raising_keyboard_interrupt_fails_only_its_question(batch):
    assert graded(batch, "interrupt", LAB2) == batch["expected"]["interrupt", LAB2]
    assert {row["status"] for row in rows_of(batch, "interrupt")} == {"graded"}
    feedback = (batch["main"].parent / "feedback" / "interrupt" / f"{LAB2}.txt").read_text(encoding="utf-8")
    assert "KeyboardInterrupt" in feedback and "q2 hidden tests: failed" in feedback


def test_honest_grades_are_the_same_without_hostile_neighbours(batch):
    """The honest students graded again, alone, in the next batch (after the one that filled /dev/shm, nested
    1,100 folders and spun 128 processes), in the labs the harmful notebooks aim at and the bulky one's: every row
    identical."""
    alone = [row for row in batch["alone_rows"] if row["question"]]
    assert {(row["student"], row["lab"]) for row in alone} == {
        (student, lab) for student in HONEST for lab in ALONE_LABS if student != "bulky" or lab == LAB3
    }
    assert alone == [
        row for row in batch["rows"] if row["student"] in HONEST and row["lab"] in ALONE_LABS and row["question"]
    ]


def test_no_work_folder_is_left_behind(batch):
    assert batch["scratch_after"] <= batch["scratch_before"], batch["scratch_after"] - batch["scratch_before"]


def test_a_formula_as_a_folder_name_lands_as_text(batch):
    safe = "'" + FORMULA_STUDENT
    rows = rows_of(batch, safe)
    assert rows and {row["status"] for row in rows} == {"graded"}
    assert graded(batch, safe, LAB1) == batch["expected"][safe, LAB1]


def test_feedback_leaks_nothing(batch, built):
    hidden_names = {
        case.body.test_func.__name__
        for lab in LABS
        for test_file in load_test_files(built[lab][2]).values()
        for case in test_file.test_cases
        if case.hidden
    }
    files = feedback_files(batch)
    assert len(files) >= len(batch["expected"])
    for path in files:
        data = path.read_bytes()
        assert len(data) <= grade.FEEDBACK_BYTES, f"{path}: {len(data)} bytes"
        text = data.decode("utf-8")
        for secret in [*hidden_names, "root:x:0", "Traceback", "HACKED", "0.07938", "# HIDDEN", "otter.log"]:
            assert secret not in text, f"{path} shows {secret!r}"
    hidden_lines = set().union(*(grade.hidden_lines(built[lab][2]) for lab in LABS))
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert not [line for line in hidden_lines if line in text], f"{path} quotes the hidden tests"
    leak = (batch["main"].parent / "feedback" / "leak_hidden" / f"{LAB1}.txt").read_text(encoding="utf-8")
    assert "q1 hidden tests: failed" in leak
    read = (batch["main"].parent / "feedback" / "read_hidden" / f"{LAB2}.txt").read_text(encoding="utf-8")
    assert "RuntimeError raised by your answer" in read and "no test file found" not in read  # its text: never
    assert not (batch["main"].parent / "feedback" / "symlink").exists()


def test_refused_files_are_listed_with_their_reason(batch):
    reasons = {
        row["student"]: (row["lab"], row["status"], row["reason"]) for row in batch["rows"] if not row["question"]
    }
    assert reasons["symlink"][1:] == ("not graded", f"symlink/{LAB1}.ipynb: a symlink or outside SUBMISSIONS, refused")
    assert reasons[".hidden"][1] == "not graded" and "a hidden folder" in reasons[".hidden"][2]
    assert reasons["nested"][0] == LAB1 and "a folder inside a student folder" in reasons["nested"][2]
    assert reasons["misnamed"][0] == LAB2 and "(meant for 02_global_batch?)" in reasons["misnamed"][2]
    report = (batch["main"].parent / grade.REPORT_NAME).read_text(encoding="utf-8")
    assert "FLAGGED:" in report and f"patch_isclose/{LAB1}.ipynb: 0 / 9" in report and "patches a module" in report
    assert "symlink/" in report and ".hidden/" in report and "nested/extra/" in report


def test_nothing_outside_the_grades_changed_and_no_process_is_left(batch):
    assert batch["after"]["build"] == batch["before"]["build"], "the autograder zips or their checksums changed"
    assert batch["after"]["repository"] == batch["before"]["repository"], "grading changed the repository"
    assert batch["survivors"] == [], batch["survivors"]
    grades = (batch["main"].parent / "grades.csv").read_text(encoding="utf-8")
    assert grades.startswith("student,lab,question") and "HACKED" not in grades


# ---- refusing to start -----------------------------------------------------------------------------------------------


def test_grade_without_autograders_says_to_run_make_assignments(tmp_path):
    (tmp_path / "submissions" / "ada").mkdir(parents=True)
    (tmp_path / "submissions" / "ada" / "01_ring_allreduce.ipynb").write_text("{}")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.grade",
            str(tmp_path / "submissions"),
            "--assignments",
            str(tmp_path / "nothing"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 2 and "make assignments" in done.stderr
    assert not (tmp_path / "grades.csv").exists()


def test_grade_refuses_to_write_into_the_submissions(tmp_path):
    (tmp_path / "submissions").mkdir()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.grade",
            str(tmp_path / "submissions"),
            "--grades",
            str(tmp_path / "submissions" / "grades.csv"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 2 and "never writes into the submissions folder" in done.stderr


# ---- issue 39: what the round-3 red team found ----------------------------------------------------------------------


def test_no_control_character_reaches_the_console_the_grades_the_report_or_the_feedback(batch):
    """A folder named to rewrite the console line, escape codes in a shell line's flag: all written escaped."""
    folder = batch["main"].parent
    texts = {
        "console": batch["output"],
        "grades.csv": (folder / "grades.csv").read_text(encoding="utf-8"),
        "report": (folder / grade.REPORT_NAME).read_text(encoding="utf-8"),
        **{str(path): path.read_text(encoding="utf-8") for path in feedback_files(batch)},
    }
    for where, text in texts.items():
        assert not grade.CONTROL_BUT_NEWLINE.search(text), f"{where} holds a control character"
    assert "mallory\\x1b[2K\\x1b[1Gbob" in texts["console"] and "mallory\\x1b[2K\\x1b[1Gbob" in texts["grades.csv"]
    assert "mallory\\x1b[2K" in texts["report"] or not rows_of(batch, csv_name(ODD_NAMES[0]))[0]["flags"]
    (flags,) = {row["flags"] for row in rows_of(batch, "escape_flag")}
    assert "\\x1b[2K\\x1b[1Gnothing to see" in flags, flags


def test_formulas_after_a_space_or_in_fullwidth_land_as_text(batch):
    for name in ODD_NAMES[1:]:
        rows = rows_of(batch, "'" + name)
        assert rows and {row["status"] for row in rows} == {"graded"}, name
        assert graded(batch, "'" + name, LAB2) == batch["expected"]["'" + name, LAB2]


def test_feedback_html_shows_an_answers_html_as_text(batch):
    folder = batch["main"].parent / "feedback" / "html_answer"
    text = (folder / f"{LAB1}.txt").read_text(encoding="utf-8")
    page = (folder / f"{LAB1}.html").read_text(encoding="utf-8")
    assert "<script>" in text  # the plain text quotes the answer as otter does
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_an_answers_error_message_never_reaches_the_feedback(batch):
    """Host files read into an exception: the sandbox shows none of /etc's (issue 39: /etc/pip.conf), and the
    feedback names the exception without its message."""
    text = (batch["main"].parent / "feedback" / "host_files" / f"{LAB2}.txt").read_text(encoding="utf-8")
    assert "ValueError raised by your answer" in text and "HOSTFILE" not in text


def test_a_forged_reply_is_refused_at_once(batch):
    """Issue 39: the same reply took the grader 197 s to decode; now well under the timeout + 5 s."""
    (line,) = [line for line in batch["output"].splitlines() if line.startswith(f"forged_reply/{LAB1}:")]
    seconds = float(line.split(" in ")[1].split(" s")[0])
    assert seconds < 20, line


def interrupted_batch(built, tmp_path, signals) -> tuple[int, list[dict], set[str], float]:
    """(exit status, grades.csv rows, work folders left, seconds from the first signal to the end) of a batch of
    three lab 2 notebooks graded one at a time (a finished one, an endless loop, one not started), sent ``signals``
    once the endless loop is being graded."""
    import signal as signals_module

    folder = tmp_path / "submissions"
    student, autograder, _ = built[LAB2]
    looping = filled(student, solution_sources(autograder))
    looping.cells.append(nbformat.v4.new_code_cell("while True:\n    pass"))
    for name, notebook in (("a_done", filled(student, solution_sources(autograder))), ("b_loop", looping),
                           ("c_later", student)):  # fmt: skip
        (folder / name).mkdir(parents=True)
        nbformat.write(notebook, folder / name / f"{LAB2}.ipynb")
    before = scratch_entries()
    command = [sys.executable, "-m", "tools.grade", str(folder), "--assignments", str(built["out"]), "--jobs", "1"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    assert process.stdout is not None
    for line in process.stdout:  # the first notebook done: the loop is next
        if line.startswith("a_done/"):
            break
    time.sleep(2)  # the loop's sandbox started and spinning
    start = time.monotonic()
    for number in signals:
        process.send_signal(getattr(signals_module, number))
        time.sleep(0.2)
    process.communicate(timeout=60)
    elapsed = time.monotonic() - start
    with open(tmp_path / "grades.csv", newline="", encoding="utf-8") as stream:
        rows = list(csv.DictReader(stream))
    return process.returncode, rows, scratch_entries() - before, elapsed


@pytest.mark.parametrize("signals", [("SIGINT", "SIGINT", "SIGINT"), ("SIGTERM",)], ids=["ctrl-c-thrice", "sigterm"])
def test_an_interrupted_batch_keeps_its_finished_grades_and_leaves_nothing(built, tmp_path, signals):
    """Issue 39: three Ctrl-C during a stall lost every grade and left a work folder in /dev/shm."""
    status, rows, left, elapsed = interrupted_batch(built, tmp_path, signals)
    assert status == 130 and elapsed < 15
    by_student = {}
    for row in rows:
        by_student.setdefault(row["student"], set()).add((row["status"], row["reason"]))
    assert by_student["a_done"] == {("graded", "")}
    assert sum(float(row["points"]) for row in rows if row["student"] == "a_done") == sum(
        questions_and_points(built, LAB2).values()
    )
    assert by_student["b_loop"] == by_student["c_later"] == {("not graded", "interrupted")}
    assert left == set()
    assert (tmp_path / "feedback" / "a_done" / f"{LAB2}.txt").exists()
