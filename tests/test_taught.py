"""Each graded question needs only what was taught before it (issue 25): labs/NN_name/taught.py lists, per question,
the course_lib names its solution uses and the facts it needs, each with where a learner meets it first: a lesson
("04_communication_budget") or "intro", the lab's own text before the question (its introduction, the explore
answers and the earlier questions' prompts, not the question's own prompt, its solutions or its tests).

The checks:
- the table lists exactly the course_lib names the master's solution uses: attributes of a course_lib module
  (`serving.matmul_params`) and attributes of anything else but a module from outside course_lib (`model.kv_heads`,
  `cluster.accelerator.peak`), as the solution writes them; a key with a space is a fact, listed by hand;
- each entry appears where the table says: a module's name as written, in the place's code or prose; another
  attribute as an attribute, a keyword argument or a code span (`.kv_heads`, `kv_heads=`, `` `kv_heads ``), each
  attribute of the chain; a fact as a phrase of the place's prose (case and line breaks aside);
- a lesson named is one the lab builds on: no later than the last lesson its "What you need" names.
"""

from __future__ import annotations

import ast
import importlib
import re
from functools import cache
from pathlib import Path

import nbformat
import pytest

from tools.assignments import lab_names, master_path

ROOT = Path(__file__).resolve().parents[1]
LABS = [lab for lab in lab_names() if (ROOT / "labs" / lab / "taught.py").exists()]
INTRO = "intro"
MARKER = re.compile(r"\s*#\s*(BEGIN|END)\s+(QUESTION|SOLUTION|TESTS)\b", re.IGNORECASE)


@cache
def lesson_text(name: str) -> tuple[str, str]:
    """(code, prose) of the lesson notebooks/<name>.ipynb: its cells' sources."""
    cells = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4).cells
    code = "\n".join(cell.source for cell in cells if cell.cell_type == "code")
    prose = "\n".join(cell.source for cell in cells if cell.cell_type == "markdown")
    return code, prose


@cache
def master_parts(lab: str) -> dict:
    """A master read as a learner meets it: ``intro[q]`` (code, prose) before question q (without solutions, tests,
    `# IGNORE` cells and otter's raw cells), ``solution[q]`` (the code of q's solution), ``modules`` (the names its
    imports bind: {name: True if it is a course_lib module}) and ``needs`` (the lessons "What you need" names)."""
    cells = nbformat.read(master_path(lab), as_version=4).cells
    intro, solution, seen_code, seen_prose = {}, {}, [], []
    question, hidden = None, None
    for cell in cells:
        marker = MARKER.match(cell.source) if cell.cell_type == "raw" else None
        if marker:
            begin, kind = marker.group(1).upper() == "BEGIN", marker.group(2).upper()
            if begin and kind == "QUESTION":
                question = re.search(r"name:\s*(\w+)", cell.source).group(1)
                intro[question] = ("\n".join(seen_code), "\n".join(seen_prose))
            elif kind in ("SOLUTION", "TESTS"):
                hidden = kind if begin else None
            continue
        if hidden == "SOLUTION" and cell.cell_type == "code":
            solution[question] = solution.get(question, "") + cell.source + "\n"
        elif hidden is None and cell.cell_type == "markdown":
            seen_prose.append(cell.source)
        elif hidden is None and cell.cell_type == "code" and not cell.source.lstrip().startswith("# IGNORE"):
            seen_code.append(cell.source)
    modules = {}
    for cell in cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.Import):
                modules |= {(alias.asname or alias.name).split(".")[0]: False for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                ours = (node.module or "").split(".")[0] == "course_lib"
                modules |= {alias.asname or alias.name: ours for alias in node.names}
    first = " ".join(cell.source for cell in cells if cell.cell_type == "markdown" and "What you need" in cell.source)
    needs = re.search(r"\*\*What you need:\*\*(.*?)(?:\n\s*\n|$)", first, re.DOTALL)
    return {
        "intro": intro,
        "solution": solution,
        "modules": modules,
        "needs": sorted(set(re.findall(r"\b(\d\d)\b", needs.group(1)))) if needs else [],
    }


def names_used(source: str, modules: dict) -> set[str]:
    """The attribute chains of ``source`` that name course_lib things, longest only: ``serving.matmul_params``,
    ``model.kv_heads`` (not ``np.max``, ``math.ceil``: modules from outside course_lib).

    >>> sorted(names_used("x = serving.f(model.a.b) + np.max(model.c)", {"serving": True, "np": False}))
    ['model.a.b', 'model.c', 'serving.f']
    """
    chains = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            parts, root = [], node
            while isinstance(root, ast.Attribute):
                parts.append(root.attr)
                root = root.value
            if isinstance(root, ast.Name) and modules.get(root.id, True):
                chains.add(".".join([root.id, *reversed(parts)]))
    return {chain for chain in chains if not any(other.startswith(chain + ".") for other in chains)}


def appears(entry: str, code: str, prose: str, modules: dict) -> bool:
    """Whether a table entry (a name or a fact) is met in a place's ``code`` and ``prose``."""
    if " " in entry:
        flat = " ".join(prose.split()).lower()
        return " ".join(entry.split()).lower() in flat
    text = code + "\n" + prose
    root, *attributes = entry.split(".")
    if modules.get(root):
        return re.search(rf"(?<![\w.]){re.escape(entry)}\b", text) is not None
    return all(re.search(rf"\.{a}\b|\b{a}=|`{a}\b", text) for a in map(re.escape, attributes))


def taught(lab: str) -> dict:
    return importlib.import_module(f"labs.{lab}.taught").TAUGHT


def test_every_lab_lists_where_its_questions_are_taught():
    missing = [lab for lab in lab_names() if lab not in LABS]
    assert not missing, f"no labs/<lab>/taught.py for {missing}: list each question's names and facts (see labs/*)"


@pytest.mark.parametrize("lab", LABS)
def test_the_table_lists_the_names_each_solution_uses(lab):
    parts, table, problems = master_parts(lab), taught(lab), []
    if sorted(table) != sorted(parts["solution"]):
        problems.append(f"questions {sorted(table)} in taught.py, {sorted(parts['solution'])} in the master")
    for question, source in parts["solution"].items():
        used = names_used(source, parts["modules"])
        listed = {entry for entry in table.get(question, {}) if " " not in entry}
        if used - listed:
            problems.append(f"{question}'s solution uses {sorted(used - listed)}: say where each is taught")
        if listed - used:
            problems.append(f"{question} lists {sorted(listed - used)}, which its solution no longer uses")
    assert not problems, f"labs/{lab}/taught.py:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("lab", LABS)
def test_each_name_and_fact_is_taught_before_its_question(lab):
    parts, problems = master_parts(lab), []
    latest = max(parts["needs"], default="00")
    lessons = {path.stem[:2]: path.stem for path in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")}
    for question, entries in taught(lab).items():
        for entry, place in entries.items():
            if place == INTRO:
                code, prose = parts["intro"].get(question, ("", ""))
            elif place in lessons.values() and place[:2] <= latest:
                code, prose = lesson_text(place)
            else:
                problems.append(
                    f"{question}: {entry!r} is said to be taught in {place!r}, which is neither 'intro' nor a lesson "
                    f"up to {latest} (the last lesson the lab's 'What you need' names: {parts['needs']})"
                )
                continue
            if not appears(entry, code, prose, parts["modules"]):
                problems.append(f"{question}: {entry!r} does not appear in {place} (before the question, for intro)")
    assert not problems, f"labs/{lab}/taught.py:\n  " + "\n  ".join(problems)


def test_a_name_not_taught_fails():
    # The check can fail: a name the lessons never show, a fact they never state, an attribute they never read.
    modules = {"serving": True, "np": False}
    assert not appears("serving.no_such_function", "serving.decode_step(x)", "", modules)
    assert not appears("full recomputation repeats the backward", "", "full recomputation repeats the forward", modules)
    assert not appears("model.no_such_field", "model.layers", "`model.heads`", modules)
    assert appears("model.kv_heads", "", "`model.kv_heads` and `model.head_dim`", modules)
    assert appears("Full  recomputation repeats", "", "full\nrecomputation repeats the forward", modules)
