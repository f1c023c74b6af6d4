"""How long each notebook takes, by one fixed rule, and whether it is on the core path or a depth track (issue 41).

Usage:

    python -m tools.course_time

prints one row per notebook (its py:percent twin, its ``course.track``, its hours by the rule and the hours it
states), then the core path's and the whole course's hours by the rule.

The rule (``notebook_time``), applied to a lesson's or a lab master's py:percent twin, the source of its notebook:

- **prose** at ``WORDS_PER_MINUTE`` = 100 words a minute, the words of every markdown cell (``words``). A word is a
  run of letters or digits; an apostrophe, a hyphen or a decimal point or comma between two such runs joins them
  ("don't", "all-reduce", "2.02", "1,758" are one word each). A link counts its text, not its address; an image,
  an HTML tag and markdown's markup count nothing. In maths (``$...$``, ``$$...$$``) each symbol is a word: a
  letter or number run, a Greek letter, the words of ``\\text{...}``; commands that only lay out (``\\frac``,
  ``\\cdot``, ``\\left``) and operators count nothing, so $T \\approx n\\alpha + Q/B_\\text{eff}$ is 6 words
  (T, n, α, Q, B, eff), read as one reads a short phrase.
- **code** at ``CODE_CELL_MINUTES`` = 2 minutes a code cell a learner runs: in a lab, the cells a student version
  keeps outside the graded questions (not those otter drops, whose first line is ``# IGNORE``).
- **exercises and explore questions** at ``QUESTION_MINUTES`` = 10 minutes each: the top-level numbered items of
  the section headed "Exercises" (a lesson) or "Explore" (a lab), outside its folded answers (``<details>``).
- **graded questions** at ``GRADED_MINUTES`` = 15 minutes each: otter's ``# BEGIN QUESTION`` raw cells of a lab
  master. A graded question's 15 minutes are all its time: the cells between ``# BEGIN QUESTION`` and
  ``# END QUESTION`` (prompt, solution, tests) add nothing more.

Only what the learner meets counts: raw cells (otter's configuration) count nothing.

>>> words("A GEMM costs $2MNK$ FLOPs, i.e. [twice](glossary.ipynb#gemm) its MACs.")
9
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

# jupytext imports nbformat, which imports jsonschema, which compiles rfc3987-syntax's grammar at import (seconds)
# for a check nbformat never makes: blocked, as in tools/twins.py.
sys.modules.setdefault("rfc3987_syntax", None)

import jupytext  # noqa: E402 (after the block above)

ROOT = Path(__file__).resolve().parents[1]
WORDS_PER_MINUTE = 100
CODE_CELL_MINUTES = 2
QUESTION_MINUTES = 10
GRADED_MINUTES = 15
TRACKS = ("core", "depth")
# The sections whose numbered items are questions a learner works: a lesson's exercises, a lab's explore questions.
QUESTION_SECTIONS = re.compile(r"^#{2,3}\s+(Exercises|Explore)\b", re.MULTILINE)
# "**Time to learn:** about 2.5 hours", near a notebook's top.
STATED = re.compile(r"\*\*Time to learn:\*\* about (\d+(?:\.\d+)?) hours?\b")
STATED_WITHIN_LINES = 60

GREEK = (
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi pi rho sigma tau "
    "upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega"
).split()
WORD = re.compile(r"[^\W_]+(?:['’.,-][^\W_]+)*")
MATH = re.compile(r"\$\$(.+?)\$\$|\$([^$\n]+?)\$", re.DOTALL)
TEX_TEXT = re.compile(r"\\(?:text|mathrm|textrm|mathit|textit|textbf|mathbf|operatorname)\s*\{([^{}]*)\}")
TEX_COMMAND = re.compile(r"\\([A-Za-z]+)")
IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
LINK = re.compile(r"\[((?:[^\]\\]|\\.)*)\]\([^)]*\)")
HTML_TAG = re.compile(r"<[^>]+>")
URL = re.compile(r"https?://\S+")
DETAILS = re.compile(r"<details>.*?</details>", re.DOTALL)
NUMBERED_ITEM = re.compile(r"^\d+\.\s", re.MULTILINE)
HEADING = re.compile(r"^(#{1,6})\s+(.*)$", re.MULTILINE)


def math_words(tex: str) -> int:
    """The symbols of a maths span: letter or number runs, Greek letters and the words of ``\\text{...}``.

    >>> math_words(r"T \\approx n\\alpha + Q/B_\\text{eff}")
    6
    >>> math_words(r"\\frac{2(p-1)}{p} \\cdot S")
    5
    """
    text = TEX_TEXT.sub(lambda match: f" {match.group(1)} ", tex)
    text = TEX_COMMAND.sub(lambda match: " g " if match.group(1) in GREEK else " ", text)
    return len(re.findall(r"[^\W_]+", text))


def words(markdown: str) -> int:
    """The words of a markdown text as the rule counts them (this module's docstring says how).

    >>> words("Ring all-reduce: 2.02 ms, not 1,758 µs; see <https://nccl.dev>.")
    7
    """
    symbols = 0

    def as_symbols(match: re.Match) -> str:
        nonlocal symbols
        symbols += math_words(match.group(1) or match.group(2))
        return " "

    text = MATH.sub(as_symbols, markdown)
    text = IMAGE.sub(" ", text)
    text = LINK.sub(lambda match: f" {match.group(1)} ", text)
    text = URL.sub(" ", HTML_TAG.sub(" ", text))
    return symbols + len(WORD.findall(text))


def question_items(markdown: str) -> int:
    """The numbered items at the top level of a markdown text, its folded answers (``<details>``) left out.

    >>> question_items("1. Fit α.\\n   More on it.\\n2. Fit B.\\n<details>\\n\\n1. α = 5 µs\\n</details>")
    2
    """
    return len(NUMBERED_ITEM.findall(DETAILS.sub("", markdown)))


@dataclass(frozen=True)
class NotebookTime:
    """A notebook's counts under the rule, its track and the hours it states."""

    path: str
    track: str | None
    words: int
    code_cells: int
    questions: int
    graded: int
    stated_hours: float | None

    @property
    def minutes(self) -> float:
        """Minutes by the rule: words / 100 + 2 per code cell + 10 per question + 15 per graded question."""
        return (
            self.words / WORDS_PER_MINUTE
            + CODE_CELL_MINUTES * self.code_cells
            + QUESTION_MINUTES * self.questions
            + GRADED_MINUTES * self.graded
        )

    @property
    def hours(self) -> float:
        return self.minutes / 60


def stated_hours(text: str) -> float | None:
    """The hours a notebook states near its top ("**Time to learn:** about N hours"), None if it states none.

    >>> stated_hours("# Lab\\n\\n**Time to learn:** about 1.5 hours, the graded questions included.")
    1.5
    """
    found = STATED.findall("\n".join(text.splitlines()[:STATED_WITHIN_LINES]))
    if len(found) > 1:
        raise ValueError(f"the text states its time {len(found)} times near its top; state it once")
    return float(found[0]) if found else None


def notebook_time(twin: Path, root: Path = ROOT) -> NotebookTime:
    """The rule applied to a notebook's py:percent ``twin`` (a lesson's or a lab master's)."""
    text = twin.read_text(encoding="utf-8")
    notebook = jupytext.reads(text, fmt="py:percent")
    counted_words = code_cells = questions = graded = 0
    in_question = in_graded = False
    for cell in notebook.cells:
        source = cell.source
        if cell.cell_type == "raw":
            marker = re.match(r"\s*#\s*(BEGIN|END)\s+QUESTION\b", source, re.IGNORECASE)
            if marker:
                in_graded = marker.group(1).upper() == "BEGIN"
                graded += in_graded
            continue
        if in_graded:
            continue
        if cell.cell_type == "code":
            code_cells += bool(source.strip()) and not source.lstrip().startswith("# IGNORE")
            continue
        for level, heading in HEADING.findall(source):
            if len(level) <= 2:
                in_question = bool(QUESTION_SECTIONS.match(f"{level} {heading}"))
        if in_question:
            questions += question_items(source)
        else:
            counted_words += words(source)
    track = notebook.metadata.get("course", {}).get("track")
    relative = twin.resolve().relative_to(root.resolve()).as_posix()
    return NotebookTime(relative, track, counted_words, code_cells, questions, graded, stated_hours(text))


def twins(root: Path = ROOT) -> list[Path]:
    """Every notebook's py:percent twin: the lessons (the course map and the glossary too), then the lab masters."""
    lessons = sorted((root / "notebooks_py").glob("*.py"))
    masters = sorted(path for path in (root / "labs").glob("[0-9][0-9]_*/[0-9][0-9]_*.py") if path.stem == path.parent.name)
    return lessons + masters


def course_times(root: Path = ROOT) -> list[NotebookTime]:
    return [notebook_time(twin, root) for twin in twins(root)]


def total_hours(times: list[NotebookTime], track: str | None = None) -> float:
    """The hours by the rule of ``times``, or of those on ``track`` only."""
    return sum(time.hours for time in times if track is None or time.track == track)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    times = course_times()
    print(f"{'notebook':56} {'track':6} {'words':>6} {'code':>4} {'exer':>4} {'graded':>6} {'rule h':>6} {'stated h':>8}")
    for time in times:
        stated = "—" if time.stated_hours is None else f"{time.stated_hours:g}"
        print(
            f"{time.path:56} {time.track or '—':6} {time.words:6} {time.code_cells:4} {time.questions:4} "
            f"{time.graded:6} {time.hours:6.2f} {stated:>8}"
        )
    print(f"core path: {total_hours(times, 'core'):.1f} h by the rule; whole course: {total_hours(times):.1f} h")
    return 0


if __name__ == "__main__":
    sys.exit(main())
