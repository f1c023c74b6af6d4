"""`make assignments`: the student versions and autograder zips of the graded labs, made by otter-grader 7.

Usage (through `make assignments`):

    python -m tools.assignments [--out build/assignments] [--student-dir DIR] [--no-run-tests] [MASTER ...]

MASTER is a graded master, labs/NN_name/NN_name.ipynb in the lab's own folder (its .py twin beside it is the
source, as for the lessons); by default all of them. For each master:

1. its cells must match its py:percent twin (else: `make notebooks NOTEBOOKS=labs/NN_name/NN_name.py`);
2. it is copied into a temporary folder next to a snapshot of course_lib/ and a requirements.txt holding
   course_lib's dependencies at the versions of requirements.lock: the master's ASSIGNMENT CONFIG puts both into
   the autograder zip, so that the zip grades the same way on Gradescope as with `otter run` here. In the copy, each
   test gets the source of the helpers it calls (tools/grading_helpers.py) at the top of its body, so that every
   test stands alone in the autograder (the master itself imports them in a cell that otter drops, `# IGNORE`);
3. `otter assign` writes OUT/NN_name/student/NN_name.ipynb (solutions and hidden tests removed, public tests in
   its metadata) and OUT/NN_name/autograder/ (the autograder notebook and NN_name-autograder_<time>.zip); unless
   --no-run-tests, otter first grades the master's solutions with every test; the zip's SHA-256 goes into
   OUT/NN_name/autograder.sha256, which tools/grade.py checks before grading, and the hash of everything it was
   made from into OUT/NN_name/inputs.sha256 (`make sync` rebuilds a lab only when that hash changed);
4. the student version is normalised (no jupytext metadata, cell ids derived from the content, so that an
   unchanged master gives a byte-identical file), gets back the picture of each lab the master stored (otter strips
   every output; ``with_lab_pictures``) and, with --student-dir, is copied to DIR/NN_name.ipynb.

OUT/NN_name/ is deleted and rebuilt each time. Otter's kernels and this script's `otter` processes run with the
environment of `otter_environment` (see there).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LABS = ROOT / "labs"
HELPERS = ROOT / "tools" / "grading_helpers.py"
DEFAULT_OUT = ROOT / "build" / "assignments"
LOCK = ROOT / "requirements.lock"
# course_lib's own dependencies (pyproject.toml [project.dependencies]): what the autograder needs besides otter.
AUTOGRADER_PACKAGES = ("numpy", "matplotlib", "ipywidgets")
# The autograder's Python: `python_version` in every master's ASSIGNMENT CONFIG, the course's Python (binder/).
PYTHON = "3.11"

# jsonschema imports rfc3987-syntax, which compiles a Lark grammar at import time (3-4 s of CPU), for a URI format
# check that nbformat never uses. Every `otter` process and every grading kernel imports nbformat, and with it one
# `otter run` took about 28 s instead of 7 s on the course's 2-core machine. Blocking the module makes jsonschema
# skip that one check (it imports the module optionally).
SITECUSTOMIZE = """\
# Written by tools/assignments.py for otter's processes and kernels; see SITECUSTOMIZE there.
import sys
sys.modules.setdefault("rfc3987_syntax", None)
"""


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

# What a lab's assignment is made from besides its master: when none of it changed, a build is up to date
# (`make sync`, and the grading tests' cache of builds in conftest.py).
SHARED_INPUTS = ("course_lib/**/*", "tools/assignments.py", "tools/grading_helpers.py", "requirements.lock")


def lab_names(labs_dir: Path = LABS) -> list[str]:
    """The labs that have a graded master, labs/NN_name/NN_name.ipynb: ["01_ring_allreduce", ...]."""
    return sorted(
        path.stem for path in labs_dir.glob("[0-9][0-9]_*/[0-9][0-9]_*.ipynb") if path.stem == path.parent.name
    )


def master_path(lab: str, labs_dir: Path = LABS) -> Path:
    """The graded master of ``lab``, in the lab's folder: labs/NN_name/NN_name.ipynb."""
    return labs_dir / lab / f"{lab}.ipynb"


def files_digest(files: list[Path], salt: str = "") -> str:
    """SHA-256 over ``salt`` and the name (relative to the repository) and bytes of each file, in the given order."""
    digest = hashlib.sha256(salt.encode())
    for path in files:
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def inputs_hash(labs: list[str]) -> str:
    """SHA-256 over every file that assigning ``labs`` reads (their masters and SHARED_INPUTS) and otter's version."""
    from importlib.metadata import version

    shared = [path for pattern in SHARED_INPUTS for path in sorted(ROOT.glob(pattern)) if path.is_file()]
    files = [master_path(lab) for lab in sorted(labs)] + [path for path in shared if "__pycache__" not in path.parts]
    return files_digest(files, salt=f"otter-grader {version('otter-grader')}\n")


def inputs_hash_path(lab: str, out: Path = DEFAULT_OUT) -> Path:
    """Where `make assignments` records ``inputs_hash([lab])`` of the build of ``lab`` under ``out``."""
    return out / lab / "inputs.sha256"


def otter_environment(scratch: Path) -> dict[str, str]:
    """The environment for an `otter` subprocess, whose kernels inherit it; its files go into ``scratch``.

    - JUPYTER_PATH puts first a `python3` kernelspec that runs ipykernel with this interpreter, so notebooks are
      graded in this environment even if the user has a personal `python3` kernel elsewhere;
    - PYTHONPATH adds a sitecustomize.py that skips a slow, unused import (SITECUSTOMIZE);
    - TMPDIR is inside ``scratch``: otter unpacks the autograder in a temporary folder, which a killed run would
      leave behind; the caller deletes ``scratch``.
    """
    from ipykernel.kernelspec import get_kernel_dict

    kernels = scratch / "jupyter" / "kernels" / "python3"
    kernels.mkdir(parents=True, exist_ok=True)
    (kernels / "kernel.json").write_text(json.dumps(get_kernel_dict(), indent=1), encoding="utf-8")
    site = scratch / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    tmp = scratch / "tmp"
    tmp.mkdir(exist_ok=True)
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)
    env["PYTHONHASHSEED"] = "0"
    env["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(scratch / "jupyter"), env.get("JUPYTER_PATH")]))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    env["TMPDIR"] = str(tmp)
    return env


def autograder_zip(lab: str, out: Path = DEFAULT_OUT) -> Path | None:
    """The autograder zip of ``lab`` under ``out`` (the newest, if several), or None if it has not been built."""
    zips = sorted((out / lab / "autograder").glob(f"{lab}-autograder_*.zip"))
    return zips[-1] if zips else None


def checksum_path(lab: str, out: Path = DEFAULT_OUT) -> Path:
    """Where `make assignments` records the SHA-256 of ``lab``'s autograder zip (``sha256sum`` format)."""
    return out / lab / "autograder.sha256"


def sha256(path: Path) -> str:
    """The SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(2**20), b""):
            digest.update(block)
    return digest.hexdigest()


def record_checksum(lab: str, zip_path: Path, out: Path = DEFAULT_OUT) -> Path:
    """Write the zip's SHA-256 next to it; tools/grade.py refuses a zip that no longer matches."""
    digest = sha256(zip_path)
    path = checksum_path(lab, out)
    path.write_text(f"{digest}  {zip_path.name}\n", encoding="utf-8")
    return path


def autograder_requirements(lock: Path = LOCK) -> str:
    """requirements.txt for the autograder: course_lib's dependencies, pinned as in the lock for its Python."""
    from packaging.markers import Marker

    wanted = re.compile(rf"^({'|'.join(AUTOGRADER_PACKAGES)})==", re.IGNORECASE)
    lines = []
    for line in lock.read_text(encoding="utf-8").splitlines():
        pin, _, marker = line.strip().partition(";")
        if wanted.match(pin) and (not marker.strip() or Marker(marker).evaluate({"python_version": PYTHON})):
            lines.append(pin.strip())
    missing = [name for name in AUTOGRADER_PACKAGES if not any(line.lower().startswith(name + "==") for line in lines)]
    if missing:
        raise SystemExit(f"error: {lock} has no pin for {', '.join(missing)}; run `make lock`")
    return (
        "# course_lib's dependencies at the versions of requirements.lock (tools/assignments.py)\n"
        + "\n".join(lines)
        + "\n"
    )


def cell_inputs(path: Path) -> list[tuple[str, str]]:
    import jupytext

    return [(cell.cell_type, cell.source.strip()) for cell in jupytext.read(path).cells]


def check_twin(master: Path) -> str | None:
    """None if the master .ipynb has the cells of its .py twin, else what to do."""
    twin = master.with_suffix(".py")
    if not twin.exists():
        return f"{master.name} has no py:percent twin {twin.name}"
    if cell_inputs(master) != cell_inputs(twin):
        return (
            f"{master.name} differs from {twin.name} (the source): run "
            f"`make notebooks NOTEBOOKS={twin.relative_to(ROOT) if twin.is_relative_to(ROOT) else twin}`"
        )
    return None


def helper_sources(path: Path = HELPERS) -> dict[str, str]:
    """{name: source without its docstring} of every function of tools/grading_helpers.py, in the file's order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    sources = {}
    for node in ast.parse("\n".join(lines)).body:
        if isinstance(node, ast.FunctionDef):
            first = node.body[0]
            documented = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            docstring = range(first.lineno, first.end_lineno + 1) if documented else range(0)
            numbers = range(node.lineno, node.end_lineno + 1)
            sources[node.name] = "\n".join(lines[number - 1] for number in numbers if number not in docstring)
    return sources


def with_helpers(source: str, helpers: dict[str, str]) -> str:
    """A test cell's source with the source of each helper its test function calls (and does not define or take as
    an argument itself), and of the helpers those call, written at the top of the function's body.

    >>> helpers = {"twice": "def twice(x):\\n    return 2 * x"}
    >>> print(with_helpers("def test_q1(f):\\n    assert twice(f(1)) == 2\\n", helpers))
    def test_q1(f):
        def twice(x):
            return 2 * x
    <BLANKLINE>
        assert twice(f(1)) == 2
    <BLANKLINE>
    """
    tree = ast.parse(source)
    test = next((node for node in tree.body if isinstance(node, ast.FunctionDef)), None)
    if test is None:
        return source
    names = [node for node in ast.walk(test) if isinstance(node, ast.Name)]
    bound = {arg.arg for arg in ast.walk(test.args) if isinstance(arg, ast.arg)}
    bound |= {node.id for node in names if not isinstance(node.ctx, ast.Load)}
    called = {node.id for node in names if isinstance(node.ctx, ast.Load)} - bound
    while True:  # and the helpers those helpers call (calling uses disable and reference_functions)
        more = {
            node.id
            for name in called & set(helpers)
            for node in ast.walk(ast.parse(helpers[name]))
            if isinstance(node, ast.Name) and node.id in helpers
        }
        if more <= called:
            break
        called |= more
    wanted = [code for name, code in helpers.items() if name in called]
    if not wanted:
        return source
    lines = source.splitlines(keepends=True)
    first = test.body[0].lineno - 1  # the helpers go before the body's first statement, at its indentation
    indent = " " * test.body[0].col_offset
    block = "".join(textwrap.indent(code, indent) + "\n\n" for code in wanted)
    return "".join(lines[:first]) + block + "".join(lines[first:])


def cell_source(cell: dict) -> str:
    """A cell's source as one string (nbformat stores it as a string or a list of lines)."""
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def stage_master(master: Path, target: Path) -> None:
    """Copy ``master`` to ``target`` with the helpers written into each of its otter test cells (those between the
    raw cells `# BEGIN TESTS` and `# END TESTS`)."""
    notebook = json.loads(master.read_text(encoding="utf-8"))
    helpers = helper_sources()
    in_tests = False
    for cell in notebook["cells"]:
        source = cell_source(cell)
        marker = re.match(r"\s*#\s*(BEGIN|END)\s+TESTS\b", source, flags=re.IGNORECASE)
        if cell["cell_type"] == "raw" and marker:
            in_tests = marker.group(1).upper() == "BEGIN"
        elif cell["cell_type"] == "code" and in_tests:
            cell["source"] = with_helpers(source, helpers)
    target.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def lab_pictures(master: dict) -> dict[str, list[dict]]:
    """{source of a code cell: its pictures} for each cell of ``master`` (a notebook as JSON) that displays a lab: an
    output holding both a widget view and the PNG a lab adds to it (``Lab._repr_mimebundle_``). Each picture is that
    output as display data without the view: the notebook stores no widget state, so a front end would show
    "model not found" for the view instead of falling back to the picture."""
    pictures = {}
    for cell in master["cells"]:
        shown = [
            output["data"]
            for output in cell.get("outputs", [])
            if WIDGET_VIEW in output.get("data", {}) and "image/png" in output.get("data", {})
        ]
        if cell["cell_type"] == "code" and shown:
            pictures[cell_source(cell)] = [
                {
                    "output_type": "display_data",
                    "data": {mime: data[mime] for mime in ("image/png", "text/plain") if mime in data},
                    "metadata": {},
                }
                for data in shown
            ]
    return pictures


def with_lab_pictures(student: dict, master: dict) -> int:
    """Store in ``student`` (otter's student version, whose outputs otter removes) the picture of the lab's initial
    state that ``master`` stored, in the cell with the same source; return how many cells got one. Opened without a
    kernel (GitHub, nbviewer, JupyterLab before the cell runs), the lab then shows its figure; running the cell
    replaces the picture with the live lab.

    >>> png, view = {"image/png": "iVBO", "text/plain": "Lab()"}, {WIDGET_VIEW: {"model_id": "0"}}
    >>> master = {"cells": [{"cell_type": "code", "source": "lab", "outputs": [{"data": {**png, **view}}]}]}
    >>> student = {"cells": [{"cell_type": "code", "source": "lab", "outputs": []}]}
    >>> with_lab_pictures(student, master), student["cells"][0]["outputs"][0]["data"] == png
    (1, True)
    """
    pictures, count = lab_pictures(master), 0
    for cell in student["cells"]:
        if cell["cell_type"] == "code" and cell_source(cell) in pictures:
            cell["outputs"] = pictures[cell_source(cell)]
            count += 1
    return count


def normalise_student_version(path: Path, master: Path | None = None) -> None:
    """Remove what changes between runs or machines from otter's student notebook, in place; with ``master``, put
    back the pictures of its labs (``with_lab_pictures``)."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    notebook["metadata"].pop("jupytext", None)
    if master is not None:
        with_lab_pictures(notebook, json.loads(master.read_text(encoding="utf-8")))
    taken = set()
    for index, cell in enumerate(notebook["cells"]):
        cell["metadata"].pop("lines_to_next_cell", None)
        cell["metadata"].pop("execution", None)
        digest = hashlib.sha1(f"{path.stem}\n{index}\n{cell_source(cell)}".encode()).hexdigest()
        cell["id"] = next(digest[i : i + 8] for i in range(len(digest) - 7) if digest[i : i + 8] not in taken)
        taken.add(cell["id"])
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")


def assign(master: Path, out: Path, run_tests: bool = True) -> tuple[Path, Path, float]:
    """Run `otter assign` on ``master``; return (student notebook, autograder zip, seconds)."""
    lab = master.stem
    result = out / lab
    if result.exists():
        shutil.rmtree(result)
    result.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"assign-{lab}-") as scratch:
        stage = Path(scratch) / "stage"
        stage.mkdir()
        stage_master(master, stage / master.name)
        shutil.copytree(
            ROOT / "course_lib",
            stage / "course_lib",
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints"),
        )
        (stage / "requirements.txt").write_text(autograder_requirements(), encoding="utf-8")
        command = [sys.executable, "-m", "otter", "assign", master.name, str(result.resolve())]
        if not run_tests:
            command.append("--no-run-tests")
        start = time.perf_counter()
        done = subprocess.run(command, cwd=stage, env=otter_environment(Path(scratch)), capture_output=True, text=True)
        seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(
            f"otter assign {master.name} failed (exit status {done.returncode}):\n"
            f"{(done.stdout + done.stderr).strip()[-3000:]}"
        )
    student = result / "student" / master.name
    zip_path = autograder_zip(lab, out)
    if not student.exists() or zip_path is None:
        raise RuntimeError(f"otter assign {master.name} wrote no student notebook or no autograder zip in {result}")
    normalise_student_version(student, master)
    record_checksum(lab, zip_path, out)
    inputs_hash_path(lab, out).write_text(inputs_hash([lab]) + "\n", encoding="utf-8")
    return student, zip_path, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("masters", nargs="*", type=Path, help="graded masters (default: labs/NN_*/NN_*.ipynb)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="build folder (default: build/assignments)")
    parser.add_argument(
        "--student-dir", type=Path, default=None, help="also copy each student version to DIR/NN_name.ipynb (e.g. labs)"
    )
    parser.add_argument(
        "--no-run-tests",
        action="store_true",
        help="do not let otter grade the master's solutions while assigning (faster)",
    )
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="masters assigned at once")
    arguments = parser.parse_args(argv)
    masters = [path.resolve().with_suffix(".ipynb") for path in arguments.masters] or [
        master_path(lab) for lab in lab_names()
    ]
    if not masters:
        parser.error(f"no graded masters in {LABS}/NN_name/")
    problems = [f"{master}: no such master" if not master.exists() else check_twin(master) for master in masters]
    if any(problems):
        parser.error("\n".join(problem for problem in problems if problem))

    def run(master):
        try:
            return master, assign(master, arguments.out, run_tests=not arguments.no_run_tests), None
        except RuntimeError as error:
            return master, None, error

    failed = 0
    with ThreadPoolExecutor(max_workers=max(1, arguments.jobs)) as pool:
        for master, built, error in pool.map(run, masters):
            if error:
                failed += 1
                print(f"FAILED {master.name}: {error}", file=sys.stderr)
                continue
            student, zip_path, seconds = built
            line = f"{master.stem}: {student.relative_to(arguments.out)}, {zip_path.relative_to(arguments.out)}"
            if arguments.student_dir:
                arguments.student_dir.mkdir(parents=True, exist_ok=True)
                shutil.copy(student, arguments.student_dir / student.name)
                line += f", copied to {arguments.student_dir / student.name}"
            print(f"{line} ({seconds:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
