"""The glossary (course_lib.glossary_entries) as the lessons and labs use it (issue 25): the glossary notebook shows the
module's text; the lessons and labs, read in the order of the course, define or link every glossary term at its
first use; and each entry names the notebook that introduces it.

The order of the course: the lessons by number, each lab after the last lesson its "What you need" names (the course
map's order). A term is defined in a cell that bolds it (``**HBM** (High Bandwidth Memory) ...``) or links its entry
(``[HBM](glossary.ipynb#hbm)``); a use is a match of one of the entry's aliases in a markdown cell, outside link
targets. A use in a cell that does not define the term, with no definition in an earlier cell, fails.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import nbformat
import pytest

from course_lib import glossary_entries as glossary
from tools.assignments import lab_names, master_path

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "notebooks" / "glossary.ipynb"
LINK_TARGET = re.compile(r"\]\([^)]*\)|https?://\S+")  # link targets and bare addresses are not prose
BOLD = re.compile(r"\*\*(.+?)\*\*", re.DOTALL)
NEEDS = re.compile(r"\*\*What you need:\*\*(.*?)(?:\n\s*\n|$)", re.DOTALL)


def lab_follows(lab: str) -> str:
    """The number of the last lesson a lab's "What you need" names ('03'), after which the course map places it."""
    text = "\n".join(cell.source for cell in nbformat.read(master_path(lab), as_version=4).cells)
    needs = NEEDS.search(text)
    assert needs, f"labs/{lab}: no '**What you need:**' paragraph naming the lessons it builds on"
    return max(re.findall(r"\b(\d\d)\b", needs.group(1)))


@cache
def chain() -> tuple[tuple[str, Path], ...]:
    """(name as linked from notebooks/, path) of every lesson and lab master in the order of the course."""
    lessons = sorted(ROOT.glob("notebooks/[0-9][0-9]_*.ipynb"))
    labs = {lab: lab_follows(lab) for lab in lab_names()}
    order = []
    for lesson in lessons:
        order.append((lesson.name, lesson))
        order += [(f"../labs/{lab}.ipynb", master_path(lab)) for lab in labs if labs[lab] == lesson.name[:2]]
    return tuple(order)


@cache
def alias_pattern(entry: glossary.Entry) -> re.Pattern | None:
    if not entry.aliases:
        return None
    return re.compile(r"(?<![\w-])(?:" + "|".join(entry.aliases) + r")(?![\w])")


def markdown_cells(path: Path) -> list[tuple[int, str]]:
    return [
        (index, cell.source)
        for index, cell in enumerate(nbformat.read(path, as_version=4).cells)
        if cell.cell_type == "markdown"
    ]


def bolded_in(source: str, entry: glossary.Entry) -> bool:
    """Whether a cell defines ``entry`` in its prose: bolds one of its aliases, or has it in the first column of a
    table row (a variable table's row defines its symbol)."""
    pattern = alias_pattern(entry)
    if pattern is None:
        return False
    rows = [line.strip().strip("|").split("|")[0] for line in source.splitlines() if line.lstrip().startswith("|")]
    return any(pattern.search(text) for text in BOLD.findall(source) + rows)


def defined_in(source: str, entry: glossary.Entry) -> bool:
    """Whether a cell defines ``entry``: links its glossary entry, or defines it in its prose (``bolded_in``)."""
    return f"glossary.ipynb#{entry.anchor})" in source or bolded_in(source, entry)


@cache
def first_uses() -> dict[str, tuple[str, int, bool]]:
    """anchor -> (notebook, cell index, defined there) of each entry's first use in the order of the course."""
    found = {}
    for name, path in chain():
        for index, source in markdown_cells(path):
            text = LINK_TARGET.sub("]", source)
            for entry in glossary.ENTRIES:
                pattern = alias_pattern(entry)
                if entry.anchor in found or pattern is None:
                    continue
                if pattern.search(text) or defined_in(source, entry):
                    found[entry.anchor] = (name, index, defined_in(source, entry))
    return found


@cache
def introductions() -> dict[str, str]:
    """anchor -> the notebook that introduces the entry: the first to define it in its prose, else its first use."""
    bolded: dict[str, str] = {}
    for name, path in chain():
        for _, source in markdown_cells(path):
            for entry in glossary.ENTRIES:
                if entry.anchor not in bolded and bolded_in(source, entry):
                    bolded[entry.anchor] = name
    return {anchor: bolded.get(anchor, name) for anchor, (name, _, _) in first_uses().items()}


def test_the_chain_is_the_course_maps_order():
    names = [name for name, _ in chain()]
    assert names[0] == "00_course_map.ipynb" and len(names) == len(lab_names()) + len(
        list(ROOT.glob("notebooks/[0-9][0-9]_*.ipynb"))
    )
    first_lab = next(index for index, name in enumerate(names) if name.startswith("../labs/"))
    assert names[first_lab - 1] == "02_nccl.ipynb", "lab 1 (the ring all-reduce) follows lesson 02"


@pytest.mark.parametrize("entry", [e for e in glossary.ENTRIES if e.aliases], ids=lambda e: e.anchor)
def test_every_term_is_defined_or_linked_at_its_first_use(entry):
    # A term the prose never uses (RMSNorm appears in a code comment only) has nothing to check.
    name, index, defined = first_uses().get(entry.anchor, (None, 0, True))
    assert defined, (
        f"glossary term {entry.term!r} is first used in {name}, cell {index}, which neither defines it (bold at "
        f"its definition: **...**) nor links its entry ([...](glossary.ipynb#{entry.anchor})): define it there in "
        "plain words, or link the glossary"
    )


@pytest.mark.parametrize("entry", [e for e in glossary.ENTRIES if e.aliases], ids=lambda e: e.anchor)
def test_each_entry_names_the_notebook_that_introduces_it(entry):
    # A term the prose never uses is introduced where its entry says (in a code comment, or by the glossary itself).
    name = introductions().get(entry.anchor, entry.introduced_in)
    assert entry.introduced_in == name, (
        f"glossary entry {entry.anchor}: introduced_in = {entry.introduced_in!r}, but {name} introduces it (the "
        "first notebook to define it in its prose, bold or in a variable table, else the first to use it); set "
        "introduced_in to that (course_lib/glossary_entries.py)"
    )


def test_the_glossary_notebook_shows_the_module():
    cells = markdown_cells(GLOSSARY)
    assert any(source == glossary.markdown() for _, source in cells), (
        "notebooks/glossary.ipynb does not hold course_lib.glossary_entries.markdown() as one markdown cell: run "
        "`python -m tools.write_glossary` (it rewrites notebooks_py/glossary.py), then `make notebooks "
        "NOTEBOOKS=notebooks_py/glossary.py`"
    )
