"""Whether each lesson and graded master holds the same cells as its py:percent twin (the pre-commit hook, and
tests/test_notebooks.py).

Usage (the pre-commit hook passes the files a commit changes):

    python -m tools.twins [PATH ...]

PATH is a lesson or a master, as its .ipynb or its .py; by default every pair. jupytext.toml pairs a lesson
notebooks/X.ipynb with notebooks_py/X.py, a lab folder's own jupytext.toml its master labs/X/X.ipynb with labs/X/X.py
beside it; any other file (a student version in labs/, a lab's wrong_answers.py, a tool) is not a twin and is
skipped. A pair
is in step when both files exist and hold the same cells, in order: the same type and source (stripped), read with
jupytext; outputs and metadata are not compared. The .py is the source: for each pair out of step this prints the
first difference and what to run (`make notebooks NOTEBOOKS=the .py`, which rebuilds the .ipynb from it), and the
exit status is 1.

>>> twin_of(Path("notebooks/01_mac.ipynb")).as_posix()
'notebooks_py/01_mac.py'
>>> twin_of(Path("labs/01_ring_allreduce/01_ring_allreduce.py")).as_posix()
'labs/01_ring_allreduce/01_ring_allreduce.ipynb'
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# jupytext imports nbformat, which imports jsonschema, which imports rfc3987-syntax when it can: that compiles a Lark
# grammar at import time (3-4 s, most of this tool's run) for a URI format check nbformat never makes. Blocked, as in
# conftest.py and tools/assignments.py; jsonschema then skips that one check.
sys.modules.setdefault("rfc3987_syntax", None)

import jupytext  # noqa: E402 (after the block above)

ROOT = Path(__file__).resolve().parents[1]


def twin_of(path: Path) -> Path:
    """The py:percent twin of a lesson (notebooks/X.ipynb: notebooks_py/X.py) or of a master (beside it), and the
    reverse, as jupytext.toml pairs them."""
    if path.parent.name == "notebooks":
        return path.parent.parent / "notebooks_py" / path.with_suffix(".py").name
    if path.parent.name == "notebooks_py":
        return path.parent.parent / "notebooks" / path.with_suffix(".ipynb").name
    return path.with_suffix(".ipynb" if path.suffix == ".py" else ".py")


def is_twinned(path: Path) -> bool:
    """Whether ``path`` is a lesson's or a master's notebook or twin (the files that come in pairs)."""
    folder = path.parent
    lessons = folder.name in ("notebooks", "notebooks_py")
    masters = folder.parent.name == "labs" and path.stem == folder.name
    return path.suffix in (".ipynb", ".py") and (lessons or masters)


def pair_of(path: Path) -> tuple[Path, Path]:
    """(notebook, twin) of the pair ``path`` belongs to."""
    return (path, twin_of(path)) if path.suffix == ".ipynb" else (twin_of(path), path)


def every_pair(root: Path = ROOT) -> list[tuple[Path, Path]]:
    """(notebook, twin) for every lesson and master under ``root``, and for a notebook or twin whose other half is
    missing."""
    patterns = ("notebooks/*.ipynb", "notebooks_py/*.py", "labs/*/*.ipynb", "labs/*/*.py")
    return sorted({pair_of(path) for pattern in patterns for path in root.glob(pattern) if is_twinned(path)})


def shown(path: Path) -> str:
    """``path`` relative to the repository when it is inside it (as the make command takes it)."""
    absolute = path.resolve()
    return absolute.relative_to(ROOT).as_posix() if absolute.is_relative_to(ROOT) else path.as_posix()


def cells(path: Path) -> list[tuple[str, str]]:
    """(type, stripped source) of every cell of a notebook or py:percent file."""
    return [(cell.cell_type, cell.source.strip()) for cell in jupytext.read(path).cells]


def first_difference(ours: str, theirs: str) -> tuple[str, str]:
    """The first line where two cell sources differ, as (ours, theirs) (repr, or "the end of the cell")."""
    end = "the end of the cell"
    lines = zip([*ours.splitlines(), end], [*theirs.splitlines(), end], strict=False)
    a, b = next((a, b) for a, b in lines if a != b)

    def quoted(line: str) -> str:
        return line if line == end else repr(line)

    return quoted(a), quoted(b)


def difference(notebook: Path, twin: Path) -> str | None:
    """None if ``notebook`` and its py:percent ``twin`` hold the same cells, else the first difference and what to
    run."""
    rebuild = f"`make notebooks NOTEBOOKS={shown(twin)}`"
    if not twin.exists():
        return (
            f"{shown(notebook)}: no py:percent twin {shown(twin)}; create it with `jupytext --sync {shown(notebook)}` "
            "(jupytext.toml says where the twin goes) and commit both"
        )
    if not notebook.exists():
        return f"{shown(twin)}: no notebook {shown(notebook)}; run {rebuild} and commit it"
    ours, theirs = cells(notebook), cells(twin)
    for index, (cell, twin_cell) in enumerate(zip(ours, theirs, strict=False)):
        if cell != twin_cell:
            what = (f"{cell[0]} cell", f"{twin_cell[0]} cell")
            if cell[0] == twin_cell[0]:
                what = first_difference(cell[1], twin_cell[1])
            return (
                f"{shown(notebook)} cell {index} differs from {shown(twin)}: the .ipynb has {what[0]} where the .py "
                f"has {what[1]}. The .py is the source: edit it if needed, then run {rebuild} to rebuild the .ipynb"
            )
    if len(ours) != len(theirs):
        return (
            f"{shown(notebook)} has {len(ours)} cells, {shown(twin)} has {len(theirs)}. The .py is the source: edit "
            f"it if needed, then run {rebuild} to rebuild the .ipynb"
        )
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="lessons or masters, .ipynb or .py (default: every pair)")
    arguments = parser.parse_args(argv)
    pairs = sorted({pair_of(path) for path in arguments.paths if is_twinned(path)}) if arguments.paths else every_pair()
    problems = [problem for problem in (difference(*pair) for pair in pairs) if problem]
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
