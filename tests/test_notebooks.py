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
