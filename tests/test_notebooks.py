"""The notebooks as files (no kernel; nbval runs them): twins in sync, clean stored outputs, deliberate nbval tags,
prerequisite and relative links, the course's lesson skeleton, and what labs/ holds.

Three kinds of notebook:
- the lessons (notebooks/, their py:percent twins in notebooks_py/) and the graded masters (labs/NN_name/NN_name,
  twin beside it in the lab's folder): outputs stored by `make notebooks` (tools/execute_notebooks.py) and checked
  by nbval;
- the student versions of the labs (labs/): written by `make assignments` from the masters, with
  no twin and no outputs but the picture of each lab (a student runs them; test_grading checks that they match a
  fresh build).

Each failure names the notebook, the cell index (0-based, as in the .ipynb) and what to do. Most problems found here
are fixed by editing the .py and running `make notebooks` again.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest

from course_lib import glossary_entries as glossary
from tools.assignments import lab_names, master_path
from tools.twins import difference, twin_of

ROOT = Path(__file__).resolve().parents[1]
MASTERS = [master_path(lab) for lab in lab_names()]
STUDENT_VERSIONS = sorted(ROOT.glob("labs/*.ipynb"))
# The notebooks with a py:percent twin and stored outputs.
EXECUTED = sorted(ROOT.glob("notebooks/*.ipynb")) + MASTERS
NOTEBOOKS = EXECUTED + STUDENT_VERSIONS
TWINS = sorted(ROOT.glob("notebooks_py/*.py")) + [path.with_suffix(".py") for path in MASTERS]
LESSONS = [path for path in EXECUTED if path.parent.name == "notebooks" and re.match(r"\d\d_", path.name)]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
IGNORE_OUTPUT = "nbval-ignore-output"
REGENERATE = "edit the .py if needed, then run `make notebooks`"

# What a stored output must not contain: each pattern with the fix it calls for.
FORBIDDEN = [
    (re.compile(r"Traceback \(most recent call last\)"), "a traceback", "make the cell run without raising"),
    (re.compile(r"0x[0-9a-f]{6,}"), "a memory address", "display a value, not an object's default repr"),
    (
        re.compile(
            r"\bnp\.(?:u?int(?:8|16|32|64)|float(?:16|32|64|128)|complex(?:64|128|256)|longdouble|bool_?|str_"
            r"|bytes_|datetime64|timedelta64)\(|\bnp\.(?:True|False)_\b"
        ),
        "a numpy scalar repr",
        "convert with float()/int()/bool() or format it with course_lib.units",
    ),
    (re.compile(r"<ipywidgets\."), "an ipywidgets object repr", "display the widget itself (last line of the cell)"),
    (
        re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\b\d\d:\d\d:\d\d\b"),
        "a timestamp",
        "do not print the date or time of the run",
    ),
]

# The course's lesson skeleton: (section, keywords a heading must contain, case-insensitively).
SKELETON = [
    ("what you'll learn", r"what you(?:'|’)?ll learn|what you will learn|learning objective"),
    ("prerequisites", r"prerequisite"),
    ("the mechanism", r"mechanism|how .*works"),
    ("the science", r"science|equation|formula"),
    ("worked example", r"example"),
    ("figures", r"figure|plot|visuali[sz]"),
    ("misconception", r"misconception|common mistake|pitfall"),
    ("self-check", r"self[- ]?check|check yourself|check your understanding|quiz"),
    ("history", r"histor"),
    ("summary", r"summary|recap|takeaway"),
    ("exercises", r"exercise|problems|practice"),
    ("sources", r"sources|references|bibliography|further reading"),
    ("what's next", r"what(?:'|’)?s next|what is next|next steps?|next lesson|up next"),
]

HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+[\"'][^)]*[\"'])?\s*\)|\bhref\s*=\s*[\"']([^\"']+)[\"']")


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def ids(paths):
    return [rel(path) for path in paths]


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def first_line(source: str) -> str:
    return next((line.strip() for line in source.splitlines() if line.strip()), "")[:60]


def markdown_lines(notebook):
    """(cell index, line, heading match or None) for every line of the markdown cells; a line inside a fenced code
    block, or a fence itself, is never a heading."""
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "markdown":
            continue
        fenced = False
        for line in cell.source.splitlines():
            if FENCE.match(line):
                fenced = not fenced
                yield index, line, None
            else:
                yield index, line, None if fenced else HEADING.match(line)


def headings(notebook) -> list[tuple[int, int, str]]:
    """(cell index, level, text) of every ATX heading in the markdown cells, outside fenced code blocks."""
    return [(index, len(match.group(1)), match.group(2)) for index, _, match in markdown_lines(notebook) if match]


def section_text(notebook, keyword: str) -> list[tuple[int, str]]:
    """(cell index, text) of the markdown under every heading containing ``keyword``, up to the next heading of
    the same or a higher level (possibly in a later cell)."""
    pieces, level = [], None
    for index, line, match in markdown_lines(notebook):
        if match:
            depth = len(match.group(1))
            if level is not None and depth <= level:
                level = None
            if level is None and keyword in match.group(2).lower():
                level = depth
                continue
        if level is not None:
            pieces.append((index, line))
    return pieces


def links(text: str) -> list[str]:
    return [markdown or html for markdown, html in LINK.findall(text)]


def relative_notebook_target(target: str) -> str | None:
    """The path part of a relative link to a notebook, or None for anything else (web links, anchors, files)."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or target.startswith("/") or not parts.path.endswith(".ipynb"):
        return None
    return unquote(parts.path)


def output_texts(output) -> list[tuple[str, str]]:
    """(kind, text) of every textual part of a stored output (images and widget views are skipped)."""
    if output.output_type == "stream":
        return [(f"stream {output.name}", output.text)]
    if output.output_type == "error":
        return [("error", "\n".join([output.ename, output.evalue, *output.traceback]))]
    return [
        (mime, value if isinstance(value, str) else str(value))
        for mime, value in output.get("data", {}).items()
        if not mime.startswith("image/") and mime != WIDGET_VIEW
    ]


# ---- the .ipynb and its py:percent twin --------------------------------------------------------------------------


# twin_of and the comparison live in tools/twins.py, which the pre-commit hook runs too.
@pytest.mark.parametrize("path", EXECUTED, ids=ids(EXECUTED))
def test_notebook_has_a_py_twin_with_the_same_cells(path):
    problem = difference(path, twin_of(path))
    if problem:
        pytest.fail(problem, pytrace=False)


@pytest.mark.parametrize("path", TWINS, ids=ids(TWINS))
def test_py_twin_has_a_notebook(path):
    has_header = path.read_text(encoding="utf-8").splitlines()[:2] == ["# ---", "# jupyter:"]
    assert has_header, (
        f"{rel(path)} has no jupytext header: every .py here is a notebook's twin (code that is "
        "not a notebook belongs in course_lib)"
    )
    notebook = twin_of(path)
    assert notebook.exists(), (
        f"{rel(path)}: no notebook {rel(notebook)}; run `make notebooks NOTEBOOKS={rel(path)}` and commit it"
    )


# ---- stored outputs ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", EXECUTED, ids=ids(EXECUTED))
def test_stored_outputs_are_clean_and_in_order(path):
    notebook, problems = read(path), []
    if "widgets" in notebook.metadata:
        problems.append(f"notebook metadata.widgets holds widget state: {REGENERATE}")
    expected = 1
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        where = f"cell {index} ({first_line(cell.source)!r})"
        if not cell.source.strip():
            problems.append(f"cell {index} is an empty code cell: delete it")
            continue
        if "execution" in cell.metadata:
            problems.append(f"{where} has metadata.execution (timings): {REGENERATE}")
        if cell.execution_count != expected:
            count = cell.execution_count
            state = "was not executed" if count is None else f"has execution_count {count}"
            problems.append(f"{where} {state}, expected {expected} (cells run top to bottom once): {REGENERATE}")
        expected += 1
        for output in cell.outputs:
            if output.output_type == "error":
                problems.append(
                    f"{where} stored an error, {output.ename}: {output.evalue}; make it run, then `make notebooks`"
                )
                continue
            for kind, text in output_texts(output):
                if kind == "stream stderr":
                    problems.append(f"{where} wrote to stderr ({first_line(text)!r}); remove the cause of the warning")
                for pattern, what, fix in FORBIDDEN:
                    if match := pattern.search(text):
                        problems.append(f"{where} output ({kind}) holds {what}, {match.group()!r}: {fix}")
    assert not problems, f"{rel(path)}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_ignored_outputs_are_deliberate(path):
    problems = []
    for index, cell in enumerate(read(path).cells):
        tagged = IGNORE_OUTPUT in cell.metadata.get("tags", [])
        if tagged and not re.search(rf"^\s*# {IGNORE_OUTPUT}:[ \t]*\S", cell.source, re.MULTILINE):
            problems.append(
                f"cell {index} ({first_line(cell.source)!r}) is tagged {IGNORE_OUTPUT} without a reason: "
                f"add a comment line '# {IGNORE_OUTPUT}: <why its output cannot be compared>' "
                "(e.g. a live widget), or remove the tag"
            )
        shows_widget = any(WIDGET_VIEW in output.get("data", {}) for output in cell.get("outputs", []))
        if shows_widget and not tagged:
            problems.append(
                f"cell {index} ({first_line(cell.source)!r}) displays a widget but is not tagged: start "
                f"it with `# %% tags=[\"{IGNORE_OUTPUT}\"]` and a '# {IGNORE_OUTPUT}: <reason>' line"
            )
    assert not problems, f"{rel(path)}:\n  " + "\n  ".join(problems)


# ---- links -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", LESSONS, ids=ids(LESSONS))
def test_prerequisites_link_only_to_earlier_lessons(path):
    number, problems = int(path.name[:2]), []
    for index, line in section_text(read(path), "prerequisite"):
        for target in links(line):
            target_path = relative_notebook_target(target)
            resolved = (path.parent / target_path).resolve() if target_path else None
            match = re.fullmatch(r"(\d\d)_\w+\.ipynb", resolved.name) if resolved else None
            if not match or resolved.parent != path.parent:
                problems.append(
                    f"cell {index}: the prerequisites link to {target!r}; they may link only to earlier "
                    "lessons in notebooks/ (NN_name.ipynb)"
                )
            elif int(match.group(1)) >= number:
                problems.append(
                    f"cell {index}: {target!r} is not an earlier lesson than {path.name}: a lesson's "
                    "prerequisites come before it"
                )
            elif not resolved.exists():
                problems.append(f"cell {index}: {target!r} does not exist")
    assert not problems, f"{rel(path)}:\n  " + "\n  ".join(problems)


COURSE_MAP = ROOT / "notebooks" / "00_course_map.ipynb"
GLOSSARY = ROOT / "notebooks" / "glossary.ipynb"
MATH = re.compile(r"\$([^$]+)\$")
CODE = re.compile(r"`([A-Za-z_][A-Za-z0-9_.]*)`")
# The one symbol the course lets name two quantities, as 00 says: a collective's ranks and the pipeline stages.
SHARED_SYMBOLS = {"p"}


def symbol_table_rows(notebook, headers) -> list[tuple[int, list[str], str]]:
    """(cell index, symbols, second cell) of every row of a markdown table whose first two header cells are one of
    ``headers`` (lower case): the symbols are the $...$ pieces of the first column, split at commas."""
    rows, header = [], False
    for index, line, _ in markdown_lines(notebook):
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.lstrip().startswith("|") else []
        if not cells:
            header = False
        elif tuple(cell.lower() for cell in cells[:2]) in headers:
            header = True
        elif header and len(cells) >= 2 and not set(cells[0]) <= set("-: "):
            rows.append(
                (index, [part.strip() for piece in MATH.findall(cells[0]) for part in piece.split(",")], cells[1])
            )
    return rows


def variable_tables(notebook) -> list[tuple[int, list[str], list[str]]]:
    """(cell index, symbols, code names) of every row of a markdown table whose header has "Symbol" and "Code name"
    (or "in code"): the code names are the `...` of the second column outside brackets, an attribute by its last
    part (`CollectiveCost.wire_bytes` is `wire_bytes`)."""
    return [
        # "(of `f`)" qualifies, it names no quantity
        (index, symbols, [name.rsplit(".", 1)[-1] for name in CODE.findall(re.sub(r"\([^)]*\)", "", second))])
        for index, symbols, second in symbol_table_rows(notebook, {("symbol", "code name"), ("symbol", "in code")})
    ]


def course_notation() -> dict[str, set[str]]:
    """00's notation table as code name -> the symbols written for it (a row's symbols and code names pair up in
    order when their counts match; otherwise every symbol of the row belongs to each of its code names)."""
    notation: dict[str, set[str]] = {}
    for _, symbols, names in variable_tables(read(COURSE_MAP)):
        pairs = (
            zip(symbols, names, strict=True) if len(symbols) == len(names) else ((s, n) for n in names for s in symbols)
        )
        for symbol, name in pairs:
            notation.setdefault(name, set()).add(symbol)
    return notation


def test_course_notation_gives_each_symbol_one_quantity():
    rows = variable_tables(read(COURSE_MAP))
    assert len(rows) > 20, "00's notation table not found (a table headed Symbol | Code name under ## Notation)"
    seen: dict[str, str] = {}
    for _, symbols, names in rows:
        for symbol in symbols:
            meaning = ", ".join(names)
            if symbol in seen and symbol not in SHARED_SYMBOLS:
                raise AssertionError(
                    f"00's notation table gives ${symbol}$ two quantities: {seen[symbol]} and {meaning}"
                )
            seen[symbol] = meaning


@pytest.mark.parametrize("path", EXECUTED, ids=ids(EXECUTED))
def test_variable_tables_use_the_course_notation(path):
    """A lesson's or lab's own variable table writes each code name that 00's table lists with one of 00's symbols."""
    notation = course_notation()
    for index, symbols, names in variable_tables(read(path)):
        pairs = (
            zip(symbols, names, strict=True) if len(symbols) == len(names) else ((s, n) for n in names for s in symbols)
        )
        for symbol, name in pairs:
            assert name not in notation or symbol in notation[name] or len(symbols) != len(names), (
                f"{rel(path)}, cell {index}: ${symbol}$ for `{name}`, which 00's notation table writes "
                f"{' or '.join(f'${s}$' for s in sorted(notation[name]))}; use 00's symbol ({REGENERATE})"
            )
        if len(symbols) != len(names):
            for name in names:
                assert name not in notation or notation[name] & set(symbols), (
                    f"{rel(path)}, cell {index}: none of {symbols} is 00's symbol for `{name}` "
                    f"({' or '.join(sorted(notation[name]))}); use 00's symbol ({REGENERATE})"
                )


def test_the_glossary_defines_every_symbol_of_the_course_notation():
    defined = glossary_symbols()
    missing = [
        symbol for _, symbols, _ in variable_tables(read(COURSE_MAP)) for symbol in symbols if symbol not in defined
    ]
    assert not missing, (
        f"00's notation table has {missing}, which course_lib/glossary_entries.py does not define: add them"
    )


@pytest.mark.parametrize("path", EXECUTED, ids=ids(EXECUTED))
def test_variable_tables_give_each_symbol_its_glossary_meaning(path):
    """A lesson's or lab's variable table gives a symbol the code name the glossary gives it ($r$ is a rank's index,
    not a ratio): each symbol stands for one quantity across the course."""
    entries, problems = glossary_symbols(), []
    for index, symbols, names in variable_tables(read(path)):
        pairs = (
            zip(symbols, [[n] for n in names], strict=True)
            if len(symbols) == len(names)
            else ((s, names) for s in symbols)
        )
        for symbol, named in pairs:
            entry = entries.get(symbol)
            meant = {name.strip() for name in entry.code_name.split(",")} if entry and entry.code_name else None
            if meant is not None and not meant & set(named):
                problems.append(
                    f"cell {index}: ${symbol}$ for {', '.join(f'`{n}`' for n in named)}, which the glossary gives "
                    f"{', '.join(f'`{n}`' for n in sorted(meant))}; use another symbol ({REGENERATE})"
                )
    assert not problems, f"{rel(path)}:\n  " + "\n  ".join(problems)


WORD = re.compile(r"[a-z]{3,}")
# Words too common to say that two meanings agree.
COMMON = {"the", "and", "for", "one", "per", "each", "every", "with", "that", "this", "from", "its", "are", "not"}


def meaning_tables(notebook) -> list[tuple[int, list[str], str]]:
    """(cell index, symbols, meaning) of every row of a markdown table headed "Symbol | Meaning" (no code names)."""
    return symbol_table_rows(notebook, {("symbol", "meaning")})


@pytest.mark.parametrize("path", EXECUTED, ids=ids(EXECUTED))
def test_meaning_tables_agree_with_the_glossary(path):
    """A "Symbol | Meaning" table (no code names) gives each symbol the glossary defines a meaning that shares a word
    with the glossary's definition ($k$, "gradient buckets", against "chunks a pipelined tree cuts the buffer
    into", does not)."""
    entries, problems = glossary_symbols(), []
    for index, symbols, meaning in meaning_tables(read(path)):
        for symbol in symbols:
            entry = entries.get(symbol)
            if entry is None:
                continue
            shared = (set(WORD.findall(meaning.lower())) & set(WORD.findall(entry.definition.lower()))) - COMMON
            if not shared:
                problems.append(
                    f"cell {index}: ${symbol}$ is {meaning!r} here, but the glossary defines it as "
                    f"{entry.definition!r}; use another symbol, or say the same thing ({REGENERATE})"
                )
    assert not problems, f"{rel(path)}:\n  " + "\n  ".join(problems)


# A symbol's meaning as the prose gives it: the thing it counts ("$k$ chunks", "$n$ latency-bearing steps", "ranks
# $n$", "rank count $n$"), one of these nouns, or "index" where it numbers one of them ("rank $r$", "stage $k$"); a
# variable table's row reads the same way ("| $k$ | gradient buckets |").
SYMBOL = r"\$(\\?[A-Za-z]+(?:_(?:\w|\{[^{}$]*\}|\\text\{[^{}$]*\}))?)\$"
NOUNS = (
    "rank",
    "chunk",
    "bucket",
    "micro-batch",
    "rail",
    "phase",
    "step",
    "stage",
    "layer",
    "node",
    "GPU",
    "device",
    "head",
    "replica",
    "expert",
)
NOUN = r"(" + "|".join(NOUNS) + r")"
# At most one word between a symbol and the noun it counts, not a word that starts a new phrase.
FILLER = r"(?:(?!(?:and|or|of|per|for|the|a|an|in|to|on|at|by|with|from|than|as|is|are|each|every)\b)[a-z-]+\s+)?"
COUNTED = re.compile(SYMBOL + r"\s+" + FILLER + NOUN + r"(?:s|es)\b")  # a count is plural
NAMED = re.compile(r"\b" + NOUN + r"(s|es)?\s+(count\s+)?" + SYMBOL)
INDEX = "index"


def glossary_symbols() -> dict[str, glossary.Entry]:
    """Each symbol the glossary defines ("k", "N_\\text{rails}"), with its entry."""
    return {
        symbol.strip(): entry
        for entry in glossary.ENTRIES
        if entry.kind == "symbol"
        for piece in MATH.findall(entry.term)
        for symbol in piece.split(",")
    }


def sentences(source: str) -> list[str]:
    """A markdown cell's text, lines joined, each table row apart: a row of one symbol reads "$k$ gradient
    buckets" (its symbol and its meaning, the first cell after it not in code), then each of its other cells.

    >>> sentences("rank $r$ holds\\nchunk $r$\\n| $k$ | `k` | chunks |\\n| $n$, $Q$ | phases |")
    ['$k$ chunks', '`k`', 'chunks', 'phases', 'rank $r$ holds chunk $r$']
    """
    rows, prose = [], []
    for line in source.splitlines():
        if not line.lstrip().startswith("|"):
            prose.append(line)
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        meaning = next((cell for cell in cells[1:] if not cell.startswith("`")), "")
        if len(MATH.findall(cells[0])) == 1 and "," not in cells[0]:
            rows.append(f"{cells[0]} {meaning}")
        rows += cells[1:]
    return rows + [" ".join(" ".join(prose).split())]


def symbol_uses(paths) -> dict[str, dict[str, list[str]]]:
    """symbol -> the noun it counts, or INDEX -> where ("notebooks/02_nccl.ipynb, cell 12"), for every symbol the
    prose pairs with a noun."""
    uses: dict[str, dict[str, list[str]]] = {}
    for path in paths:
        for index, cell in enumerate(read(path).cells):
            if cell.cell_type != "markdown":
                continue
            texts = sentences(cell.source)
            pairs = [(m.group(1), m.group(2)) for text in texts for m in COUNTED.finditer(text)]
            pairs += [
                (m.group(4), m.group(1) if m.group(2) or m.group(3) else INDEX)
                for text in texts
                for m in NAMED.finditer(text)
            ]
            for symbol, noun in pairs:
                uses.setdefault(symbol, {}).setdefault(noun, []).append(f"{rel(path)}, cell {index}")
    return uses


def test_each_symbol_has_one_meaning_in_every_lesson_and_lab():
    """A symbol counts or numbers one thing across the lessons and the labs: what the glossary's entry lists (its
    ``nouns``; $p$, the one shared symbol, lists ranks and stages), or, for a symbol the glossary does not define,
    one thing wherever it appears."""
    entries, problems = glossary_symbols(), []
    for symbol, nouns in sorted(symbol_uses([path for path in EXECUTED if path != GLOSSARY]).items()):
        entry = entries.get(symbol)
        allowed = set(entry.nouns) if entry is not None else None
        wrong = sorted(set(nouns) - allowed) if allowed is not None else sorted(nouns) if len(nouns) > 1 else []
        for noun in wrong:
            meaning = (
                f"the glossary gives it {', '.join(sorted(allowed)) or 'none of these'}"
                if allowed is not None
                else f"also {sorted(nouns)}"
            )
            use = "as an index" if noun == INDEX else f"counting {noun}"
            problems.append(f"${symbol}$ {use} in {'; '.join(nouns[noun])}: {meaning}")
    assert not problems, (
        "a symbol with two meanings: rename it in the prose (the glossary, course_lib/glossary_entries.py, and 00's "
        "notation table say which symbol means what)\n  " + "\n  ".join(problems)
    )


def link_base(path: Path) -> Path:
    """The folder a notebook's relative links start from: its own, except for a master, whose text is written for
    its student version in labs/."""
    return ROOT / "labs" if path in MASTERS else path.parent


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_relative_notebook_links_exist(path):
    problems, base = [], link_base(path)
    for index, cell in enumerate(read(path).cells):
        texts = (
            [cell.source]
            if cell.cell_type == "markdown"
            else [
                text
                for output in cell.get("outputs", [])
                for mime, text in output_texts(output)
                if mime in ("text/markdown", "text/html")
            ]
        )
        for text in texts:
            for target in links(text):
                target_path = relative_notebook_target(target)
                if target_path and not (base / target_path).exists():
                    problems.append(
                        f"cell {index}: link to {target!r}, but {rel(base)}/{target_path} does not exist; fix the link"
                    )
    assert not problems, f"{rel(path)}:\n  " + "\n  ".join(problems)


# ---- the lesson skeleton -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", [p for p in LESSONS if int(p.name[:2]) >= 1], ids=ids([p for p in LESSONS if int(p.name[:2]) >= 1])
)
def test_lesson_follows_the_skeleton(path):
    found = headings(read(path))
    problems = []
    if not found or found[0][1] != 1:
        where = f"cell {found[0][0]}: the first heading is {found[0][2]!r}" if found else "there is no heading"
        problems.append(
            f"{where}; the lesson must open with its title as a level-1 heading, with a verb ('# Count the work: ...')"
        )
    texts = [text.lower() for _, _, text in found]
    missing = [
        f"{section} (a heading containing {keywords.replace('(?:', '(')!r})"
        for section, keywords in SKELETON
        if not any(re.search(keywords, text) for text in texts)
    ]
    if missing:
        problems.append(
            "missing sections of the course's lesson skeleton: add a markdown heading for each of\n    "
            + "\n    ".join(missing)
        )
    assert not problems, f"{rel(path)}:\n  " + "\n  ".join(problems)


# ---- labs/: the student versions -------------------------------------------------------------------------------------


def test_labs_holds_a_student_version_of_every_master_and_nothing_else():
    masters = [path.name for path in MASTERS]
    students = [path.name for path in STUDENT_VERSIONS]
    assert masters and students == masters, (
        f"labs/ holds {students}, the lab folders the masters {masters}: run `make assignments` and commit labs/*.ipynb"
    )
    twins = sorted(path.name for path in (ROOT / "labs").glob("*.py"))
    assert not twins, (
        f"labs/ holds {twins}: the student versions have no py:percent twin (labs/jupytext.toml); "
        "edit the masters in the lab folders (labs/NN_name/) instead and delete these"
    )


def is_lab_picture(output) -> bool:
    """A picture of a lab as make assignments keeps it in a student version: display data, a PNG, no widget view."""
    data = output.get("data", {})
    return output.output_type == "display_data" and "image/png" in data and WIDGET_VIEW not in data


@pytest.mark.parametrize("path", STUDENT_VERSIONS, ids=ids(STUDENT_VERSIONS))
def test_student_version_is_unexecuted_otter_output(path):
    notebook = read(path)
    assert notebook.metadata.get("otter", {}).get("assignment_name") == path.stem, (
        f"{rel(path)} is not otter's student version of {path.stem}: run `make assignments`"
    )
    executed = [
        index
        for index, cell in enumerate(notebook.cells)
        if cell.cell_type == "code"
        and (cell.execution_count is not None or not all(is_lab_picture(output) for output in cell.outputs))
    ]
    assert not executed, (
        f"{rel(path)}: cells {executed} hold outputs other than a lab's picture; a student version is stored as otter "
        "writes it, plus the pictures of its labs (make assignments)"
    )
    assert "jupytext" not in notebook.metadata, f"{rel(path)} has jupytext metadata; rebuild it with make assignments"


def lab_cells(notebook) -> list[int]:
    """The code cells, tagged otter_ignore, that build the lab a student explores (``lab = ..._lab(...)``)."""
    return [
        index
        for index, cell in enumerate(notebook.cells)
        if cell.cell_type == "code"
        and "otter_ignore" in cell.metadata.get("tags", [])
        and re.search(r"^lab = \w+_lab\(", cell.source, re.MULTILINE)
    ]


@pytest.mark.parametrize("lab", lab_names())
def test_every_lab_shows_a_picture_of_its_initial_state_without_a_kernel(lab):
    # Opened without a kernel (GitHub, nbviewer, a static site) a lab shows its figure, not "PartitionLab(...)": the
    # master stores the widget's PNG beside its view (Lab._repr_mimebundle_), and the student version the same PNG
    # as display data (tools/assignments.py, with_lab_pictures), which running the cell replaces with the live lab.
    master, student = read(master_path(lab)), read(ROOT / "labs" / f"{lab}.ipynb")
    (index,) = lab_cells(master) or [None]
    assert index is not None, f"{rel(master_path(lab))}: no cell `lab = ..._lab(...)` tagged otter_ignore"
    shown = [output.data for output in master.cells[index].outputs if "image/png" in output.get("data", {})]
    assert len(shown) == 1 and WIDGET_VIEW in shown[0], (
        f"{rel(master_path(lab))}, cell {index}: the lab's output holds no picture beside its widget view: {REGENERATE}"
    )
    png = base64.b64decode(shown[0]["image/png"])
    assert png.startswith(b"\x89PNG") and len(png) > 2000, f"{rel(master_path(lab))}, cell {index}: not a picture"
    (student_index,) = [i for i, cell in enumerate(student.cells) if cell.source == master.cells[index].source]
    pictures = student.cells[student_index].outputs
    assert len(pictures) == 1 and is_lab_picture(pictures[0]), (
        f"labs/{lab}.ipynb, cell {student_index}: no picture of the lab (only a PNG, no widget view); run "
        "`make assignments`"
    )
    assert pictures[0].data["image/png"] == shown[0]["image/png"], (
        f"labs/{lab}.ipynb: its picture differs from the master's; run `make assignments`"
    )


def jupytext_pairs(path: Path) -> list[Path]:
    """The files jupytext pairs ``path`` with (itself included), by the jupytext.toml that applies to it."""
    from jupytext.config import load_jupytext_config
    from jupytext.formats import long_form_multiple_formats
    from jupytext.paired_paths import find_base_path_and_format, paired_paths

    formats = load_jupytext_config(str(path)).default_formats(str(path))
    if formats is None:
        return [path]
    _, fmt = find_base_path_and_format(str(path), long_form_multiple_formats(formats))
    return sorted(Path(paired) for paired, _ in paired_paths(str(path), fmt, formats))


@pytest.mark.parametrize("path", NOTEBOOKS + TWINS, ids=ids(NOTEBOOKS + TWINS))
def test_jupytext_pairs_lessons_and_masters_with_their_twin_and_student_versions_with_nothing(path):
    expected = [path] if path in STUDENT_VERSIONS else sorted([path, twin_of(path)])
    assert jupytext_pairs(path) == expected, (
        f"jupytext pairs {rel(path)} with {[rel(paired) for paired in jupytext_pairs(path)]}: jupytext.toml pairs "
        "notebooks/X.ipynb with notebooks_py/X.py, a lab folder's jupytext.toml its master with the .py beside it, and "
        'labs/jupytext.toml (formats = "ipynb") a student version with nothing'
    )


def test_every_lab_folder_has_the_same_jupytext_toml():
    # jupytext reads the jupytext.toml nearest to a notebook: each lab folder needs one (labs/jupytext.toml pairs
    # nothing), and they are copies of one file.
    configs = {lab: (ROOT / "labs" / lab / "jupytext.toml").read_bytes() for lab in lab_names()}
    first = lab_names()[0]
    differ = [lab for lab, config in configs.items() if config != configs[first]]
    assert not differ, f"labs/{differ[0]}/jupytext.toml differs from labs/{first}/jupytext.toml: copy that one"


def test_saving_in_jupyterlab_writes_the_twin_where_the_configs_say(tmp_path):
    # jupytext's contents manager (JupyterLab saves through its async one; the jupytext server extension installs it)
    # on a copy of the repository's pairing: saving a lesson writes notebooks_py/X.py (identical to the committed
    # twin) and no .py in notebooks/; saving a master writes its twin beside it; a student version gets no twin.
    import asyncio

    from jupytext import AsyncTextFileContentsManager

    copied = lesson, master, student = EXECUTED[0], MASTERS[0], STUDENT_VERSIONS[0]
    for path in (ROOT / "jupytext.toml", ROOT / "labs/jupytext.toml", master.parent / "jupytext.toml", *copied):
        (tmp_path / rel(path)).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel(path)).write_bytes(path.read_bytes())
    manager = AsyncTextFileContentsManager(root_dir=str(tmp_path))

    async def open_and_save(path):
        await manager.save(await manager.get(path), path)

    for path in copied:
        asyncio.run(open_and_save(rel(path)))

    written = sorted(path.relative_to(tmp_path).as_posix() for path in tmp_path.rglob("*.py"))
    assert written == sorted([rel(twin_of(lesson)), rel(twin_of(master))]), written
    for notebook in (lesson, master):
        saved = (tmp_path / rel(twin_of(notebook))).read_text(encoding="utf-8")
        assert saved == twin_of(notebook).read_text(encoding="utf-8"), (
            f"saving {rel(notebook)} in JupyterLab would change {rel(twin_of(notebook))}"
        )


# The course's internal spec (its two concept cards) stays out of what a learner reads: the word "card" and the
# spec's field names (issue 15). Every lesson, every lab (master and student version) and the README.
CARD_WORDS = re.compile(r"\bcards?\b|learningObjective|whyAI|engineeringExample|evidenceNotes|labScope", re.IGNORECASE)
CARD_FREE = [
    *(ROOT / "notebooks" / f"{name}.ipynb" for name in ("00_course_map", "01_mac", "02_nccl")),
    master_path("01_ring_allreduce"),
    ROOT / "labs" / "01_ring_allreduce.ipynb",
    *(
        ROOT / "notebooks" / f"{name}.ipynb"
        for name in (
            "03_parallelism",
            "04_communication_budget",
            "05_plan_search",
            "06_sequences_and_experts",
            "07_measure",
            "08_model_meets_measurements",
            "09_capstone",
            "10_serving",
        )
    ),
    *(
        path
        for name in (
            "02_global_batch",
            "03_memory_budget",
            "04_pipeline_schedule",
            "08_measure_collectives",
            "05_partition_explorer",
            "06_serving",
            "07_sequences_and_experts",
        )
        for path in (master_path(name), ROOT / "labs" / f"{name}.ipynb")
    ),
    ROOT / "README.md",
]


@pytest.mark.parametrize("path", CARD_FREE, ids=lambda path: rel(path))
def test_learner_facing_text_never_mentions_the_card(path):
    if path.suffix == ".ipynb":
        notebook = nbformat.read(path, as_version=4)
        texts = [(f"cell {i}", cell.source) for i, cell in enumerate(notebook.cells)]
        texts += [
            (f"cell {i} output", output.get("text", "") + str(output.get("data", {}).get("text/plain", "")))
            for i, cell in enumerate(notebook.cells)
            for output in cell.get("outputs", [])
        ]
    else:
        texts = [("text", path.read_text(encoding="utf-8"))]
    found = [(where, match.group()) for where, text in texts for match in CARD_WORDS.finditer(text)]
    assert not found, f"{rel(path)}: the course's spec shows through: {found[:5]}"
