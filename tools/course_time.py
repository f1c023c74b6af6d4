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
import json
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

    >>> words("Ring all-reduce: 2.02 ms, not 1,758 µs; see <https://nccl.dev>.")   # the address counts nothing
    8
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

    page: str  # the notebook a learner opens, without its suffix: "notebooks/01_mac", "labs/01_ring_allreduce"
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

    >>> stated_hours("# Lab\\n\\n**Time to learn:** about 1.5 hours by the course's rule.")
    1.5
    """
    found = STATED.findall("\n".join(text.splitlines()[:STATED_WITHIN_LINES]))
    if len(found) > 1:
        raise ValueError(f"the text states its time {len(found)} times near its top; state it once")
    return float(found[0]) if found else None


def page_of(twin: Path) -> str:
    """The notebook a learner opens for a twin, as "notebooks/X" or "labs/X" (a lab's student version).

    >>> page_of(Path("notebooks_py/01_mac.py")), page_of(Path("labs/01_ring_allreduce/01_ring_allreduce.py"))
    ('notebooks/01_mac', 'labs/01_ring_allreduce')
    """
    return f"labs/{twin.stem}" if twin.parent.parent.name == "labs" else f"notebooks/{twin.stem}"


def notebook_time(twin: Path) -> NotebookTime:
    """The rule applied to a notebook's py:percent ``twin`` (a lesson's or a lab master's)."""
    text = twin.read_text(encoding="utf-8")
    notebook = jupytext.reads(text, fmt="py:percent")
    counted_words = code_cells = questions = graded = 0
    in_questions = in_graded = False
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
        # A cell is read a heading at a time: a level-2 heading opens or closes a question section, and a level-3
        # "Explore ..." inside another section (lab 6's "### Explore the sweep") opens one too, until the next
        # level-2 heading, which may follow in the same cell.
        starts = [match.start() for match in HEADING.finditer(source)]
        for begin, end in zip([0, *starts], [*starts, len(source)], strict=True):
            part = source[begin:end]
            heading = HEADING.match(part)
            if heading:
                level, title = heading.groups()
                if len(level) <= 2 or (len(level) == 3 and QUESTION_SECTIONS.match(f"{level} {title}")):
                    in_questions = bool(QUESTION_SECTIONS.match(f"{level} {title}"))
            if in_questions:
                questions += question_items(part)
            else:
                counted_words += words(part)
    track = notebook.metadata.get("course", {}).get("track")
    return NotebookTime(page_of(twin), track, counted_words, code_cells, questions, graded, stated_hours(text))


def twins(root: Path = ROOT) -> list[Path]:
    """Every notebook's py:percent twin: the lessons (with the course map and the glossary), then the lab masters."""
    lessons = sorted((root / "notebooks_py").glob("*.py"))
    labs = (root / "labs").glob("[0-9][0-9]_*/[0-9][0-9]_*.py")
    return lessons + sorted(path for path in labs if path.stem == path.parent.name)


def course_times(root: Path = ROOT) -> list[NotebookTime]:
    """The rule applied to every notebook of the course under ``root``."""
    return [notebook_time(twin) for twin in twins(root)]


def total_hours(times: list[NotebookTime], track: str | None = None) -> float:
    """The hours by the rule of ``times``, or of those on ``track`` only."""
    return sum(time.hours for time in times if track is None or time.track == track)


# ---- what the course map and the README state ------------------------------------------------------------------------

# "the core path takes about **14.6 hours** and the whole course about **38.6 hours**", on one line.
TOTALS = re.compile(
    r"the core path takes about \*\*(\d+(?:\.\d+)?) hours\*\* and the whole course about \*\*(\d+(?:\.\d+)?) hours\*\*"
)
TABLE_ROW = re.compile(r"^(?:# )?\|.*\|$", re.MULTILINE)
ROW_TARGET = re.compile(r"\]\((?:\.\./|[a-z_]+/)*?((?:labs/)?)([0-9][0-9]_\w+|glossary)\.ipynb[#)]")
ROW_HOURS = re.compile(r"\| (\d+(?:\.\d+)?) h \|")
ROW_TRACK = re.compile(r"\| (core|depth) \|")


@dataclass(frozen=True)
class Row:
    """A table row that gives a notebook's track and hours (the course map's and the README's tables)."""

    page: str
    track: str | None
    hours: float | None


def table_rows(text: str) -> dict[str, Row]:
    """The rows of the markdown tables in ``text`` (a README, or a twin's "# "-prefixed markdown) whose first link
    is a notebook, by the page it links ("notebooks/01_mac", "labs/01_ring_allreduce").

    >>> table_rows("| [01](01_mac.ipynb) | core | 2.0 h |\\n| [Lab 1](../labs/01_ring.ipynb) | depth | 2.2 h |")
    {'notebooks/01_mac': Row(page='notebooks/01_mac', track='core', hours=2.0), \
'labs/01_ring': Row(page='labs/01_ring', track='depth', hours=2.2)}
    """
    rows = {}
    for line in TABLE_ROW.findall(text):
        target, track, hours = ROW_TARGET.search(line), ROW_TRACK.search(line), ROW_HOURS.search(line)
        if target is None or hours is None:
            continue  # not a row that gives a notebook's time (the map's other tables link lessons too)
        page = f"{'labs' if target.group(1) else 'notebooks'}/{target.group(2)}"
        rows.setdefault(page, Row(page, track and track.group(1), float(hours.group(1))))
    return rows


def stated_totals(text: str) -> tuple[float, float] | None:
    """(core path, whole course) hours that ``text`` states in TOTALS' sentence, None if it states none."""
    found = TOTALS.search(text)
    return (float(found.group(1)), float(found.group(2))) if found else None


def hours_text(hours: float) -> str:
    """Hours as the course states them: to a tenth of an hour."""
    return f"{hours:.1f}"


def restated_notebook(text: str, hours: float) -> str:
    """``text`` (a twin) with the hours it states near its top replaced by ``hours``.

    >>> restated_notebook("**Time to learn:** about 1.5 hours by the rule.", 2.04)
    '**Time to learn:** about 2.0 hours by the rule.'
    """
    lines = text.splitlines(keepends=True)
    head, rest = "".join(lines[:STATED_WITHIN_LINES]), "".join(lines[STATED_WITHIN_LINES:])
    return STATED.sub(lambda found: found.group(0).replace(found.group(1), hours_text(hours), 1), head) + rest


def row_cells(line: str) -> tuple[str, list[str]]:
    """A table row as (its "# " prefix in a twin, or "", its cells stripped)."""
    prefix = "# " if line.startswith("# ") else ""
    return prefix, [cell.strip() for cell in line[len(prefix) :].strip()[1:-1].split("|")]


def restated_tables(text: str, times: list[NotebookTime]) -> str:
    """``text`` (the course map's twin, the README) with each notebook's row of a table headed "Track" and "Time"
    given its track and its hours by the rule (the two cells added where a row lacks them, as a row added by hand
    may), and TOTALS' sentence restated.

    >>> time = NotebookTime("notebooks/10_x", "depth", 6000, 0, 0, 0, 1.0)
    >>> print(restated_tables("| Lesson | Track | Time |\\n|---|---|---|\\n| [10](10_x.ipynb) |", [time]))
    | Lesson | Track | Time |
    |---|---|---|
    | [10](10_x.ipynb) | depth | 1.0 h |
    """
    by_page = {time.page: time for time in times}
    lines, header = text.split("\n"), None
    for index, line in enumerate(lines):
        if not TABLE_ROW.fullmatch(line):
            header = None
            continue
        prefix, cells = row_cells(line)
        if header is None:
            header = cells
            continue
        target = ROW_TARGET.search(line)
        page = target and f"{'labs' if target.group(1) else 'notebooks'}/{target.group(2)}"
        if page not in by_page or not {"Track", "Time"} <= set(header):
            continue
        track_column, time_column = header.index("Track"), header.index("Time")
        if len(cells) < len(header) and not any(cell in TRACKS for cell in cells):
            cells.insert(track_column, "")
        if len(cells) < len(header) and not any(ROW_HOURS.search(f"| {cell} |") for cell in cells):
            cells.insert(time_column, "")
        cells[track_column] = by_page[page].track or ""
        cells[time_column] = f"{hours_text(by_page[page].hours)} h"
        lines[index] = prefix + "| " + " | ".join(cells) + " |"
    core, whole = hours_text(total_hours(times, "core")), hours_text(total_hours(times))
    sentence = f"the core path takes about **{core} hours** and the whole course about **{whole} hours**"
    return TOTALS.sub(sentence, "\n".join(lines))


def sync_markdown(twin: Path) -> None:
    """Copy the markdown cells of ``twin`` into its notebook (outputs kept): what ``write`` changed needs no rerun."""
    from tools.twins import twin_of

    path = twin_of(twin)
    notebook = json.loads(path.read_text(encoding="utf-8"))
    sources = [cell.source for cell in jupytext.read(twin).cells]
    if len(sources) != len(notebook["cells"]):
        raise ValueError(f"{path} and {twin} hold different cells: run `make notebooks NOTEBOOKS={twin}` first")
    for cell, source in zip(notebook["cells"], sources, strict=True):
        if cell["cell_type"] == "markdown":
            cell["source"] = source.splitlines(keepends=True)
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")


def write(root: Path = ROOT) -> list[Path]:
    """Restate the hours by the rule where the course states them: each twin's "**Time to learn:**" (and its
    notebook's markdown), the course map's and the README's tables and totals. Returns the files changed."""
    times, changed = course_times(root), []
    course_map = root / "notebooks_py" / "00_course_map.py"
    for twin, time in zip(twins(root), times, strict=True):
        text = twin.read_text(encoding="utf-8")
        new = restated_notebook(text, time.hours) if time.stated_hours is not None else text
        new = restated_tables(new, times) if twin == course_map else new
        if new != text:
            twin.write_text(new, encoding="utf-8")
            sync_markdown(twin)
            changed.append(twin)
    readme = root / "README.md"
    text = readme.read_text(encoding="utf-8")
    if restated_tables(text, times) != text:
        readme.write_text(restated_tables(text, times), encoding="utf-8")
        changed.append(readme)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--write",
        action="store_true",
        help="restate the hours by the rule in each notebook, the course map and the README",
    )
    arguments = parser.parse_args(argv)
    if arguments.write:
        for path in write():
            print(f"restated: {path.relative_to(ROOT)}")
        print("then `make assignments` (or `make sync`) rebuilds the student versions of the labs restated")
    times = course_times()
    columns = ("track", 6), ("words", 6), ("code", 5), ("exercises", 9), ("graded", 6), ("rule", 6), ("stated", 6)
    print(
        f"{'notebook':40} "
        + " ".join(f"{name:>{width}}" if name != "track" else f"{name:6}" for name, width in columns)
    )
    for time in times:
        stated = "—" if time.stated_hours is None else f"{time.stated_hours:g} h"
        print(
            f"{time.page:40} {time.track or '—':6} {time.words:6} {time.code_cells:5} {time.questions:9} "
            f"{time.graded:6} {time.hours:4.2f} h {stated:>6}"
        )
    print(f"core path: {total_hours(times, 'core'):.1f} h by the rule; whole course: {total_hours(times):.1f} h")
    return 0


if __name__ == "__main__":
    sys.exit(main())
