"""Write notebooks_py/glossary.py, the twin of notebooks/glossary.ipynb, from course_lib.glossary_entries (one source of
truth: tests/test_glossary.py checks that the notebook shows ``glossary.markdown()``).

Usage: python -m tools.write_glossary, then make notebooks NOTEBOOKS=notebooks_py/glossary.py
"""

from __future__ import annotations

from pathlib import Path

from course_lib import glossary_entries as glossary

ROOT = Path(__file__).resolve().parents[1]
TWIN = ROOT / "notebooks_py" / "glossary.py"

# The glossary is a reference, on the depth track (its course.track; tools/course_time.py): the lessons define each
# term at first use, so the core path does not need it read through.
HEADER = """\
# ---
# jupyter:
#   course:
#     track: depth
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---
"""

INTRODUCTION = """\
# Glossary

Every term, abbreviation, symbol, hardware and software name and the plan notation that the lessons and labs use,
with a one-line definition, the lesson or lab where you meet it first, and the source of any fact it states. A
lesson links an entry at the term's first use (`glossary.ipynb#hbm`); the symbols are those of the
[course map's notation table](00_course_map.ipynb#Notation), then the lessons' own. The table is written from
`course_lib.glossary_entries`, and a test checks that every lesson and lab defines or links each term where a learner
first meets it."""


def markdown_cell(text: str) -> str:
    """A py:percent markdown cell holding ``text``."""
    lines = [f"# {line}".rstrip() for line in text.splitlines()]
    return "# %% [markdown]\n" + "\n".join(lines) + "\n"


def twin_text() -> str:
    return HEADER + "\n" + markdown_cell(INTRODUCTION) + "\n" + markdown_cell(glossary.markdown())


def main() -> None:
    TWIN.write_text(twin_text())
    print(f"wrote {TWIN.relative_to(ROOT)}; now run: make notebooks NOTEBOOKS={TWIN.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
