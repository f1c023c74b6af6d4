"""Make every notebook's stored outputs: build X.ipynb from its py:percent twin X.py and execute it.

Usage (through `make notebooks`, which sets PYTHONHASHSEED=0):

    python -m tools.execute_notebooks [PATH ...]

PATH is a lesson or a graded lab's master, as its .py or its .ipynb; by default every notebooks_py/*.py and
labs/NN_name/NN_name.py that has a jupytext header. Where the twin of a notebook is, jupytext.toml says: a lesson
notebooks/X.ipynb has its twin in notebooks_py/X.py, a master labs/X/X.ipynb beside it in labs/X/X.py (the lab
folder's own jupytext.toml; a file with no jupytext.toml above it is paired in its own folder). (The student
versions in labs/ are made from the masters by `make assignments` and have no twin.) For each X.py:

1. the cells come from X.py (read with jupytext and jupytext.toml's filters, so cell tags survive); metadata
   that the filters keep out of X.py (cell ids, nbgrader or otter metadata) comes from the existing X.ipynb;
2. it runs with nbclient in the .ipynb's folder (where its relative links and files are), in a python3 kernel of
   the current environment (ipykernel started from this interpreter), with PYTHONHASHSEED=0 and without MPLBACKEND;
3. the result is normalised so that two runs write byte-identical files: no execution timings, no widget state,
   no Python version, widget model ids renumbered, cell ids deterministic, a stream split by the kernel's
   flushes joined again; then X.ipynb is written (nbformat: indent 1, trailing newline).

A cell that raises stops that notebook (its X.ipynb is left as it was), is reported with its index, and the
script exits with status 1 after trying the other notebooks.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
import uuid
from pathlib import Path

import ipykernel.kernelspec
import jupytext
import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from jupytext.combine import combine_inputs_with_outputs
from jupytext.config import load_jupytext_config
from jupytext.formats import long_form_multiple_formats
from jupytext.paired_paths import InconsistentPath, find_base_path_and_format, paired_paths
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
KERNEL_NAME = "python3"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": KERNEL_NAME}
CELL_TIMEOUT_S = 600
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# The pairing when no jupytext.toml applies to a file: X.ipynb and X.py side by side.
SAME_FOLDER = "ipynb,py:percent"


class CurrentEnvironmentKernels(KernelSpecManager):
    """Every kernel name resolves to ipykernel run by this interpreter (like nbval's --nbval-current-env)."""

    def get_kernel_spec(self, _kernel_name):
        return self.kernel_spec_class(
            resource_dir=ipykernel.kernelspec.RESOURCES, **ipykernel.kernelspec.get_kernel_dict()
        )


def kernel_environment() -> dict[str, str]:
    """This process's environment with a fixed hash seed and no MPLBACKEND (which would disable inline figures)."""
    env = {key: value for key, value in os.environ.items() if key != "MPLBACKEND"}
    env["PYTHONHASHSEED"] = "0"
    return env


def has_jupytext_header(path: Path) -> bool:
    return path.read_text(encoding="utf-8").splitlines()[:2] == ["# ---", "# jupyter:"]


def default_sources() -> list[Path]:
    masters = [path for path in sorted((ROOT / "labs").glob("*/*.py")) if path.stem == path.parent.name]
    candidates = sorted((ROOT / "notebooks_py").glob("*.py")) + masters
    return [path for path in candidates if has_jupytext_header(path)]


def pair(path: Path) -> tuple[Path, Path]:
    """(X.py, X.ipynb) for a notebook given as either file, paired as the jupytext.toml above it says.

    Raises ``ValueError`` if that configuration pairs ``path`` with no py:percent file and no notebook.
    """
    config = load_jupytext_config(str(path))
    formats = config.default_formats(str(path)) if config else SAME_FOLDER
    if formats is None:
        raise ValueError(f"{path}: jupytext.toml pairs no notebook with it (formats = {config.formats!r})")
    try:
        _, fmt = find_base_path_and_format(str(path), long_form_multiple_formats(formats))
        paths = {Path(paired).suffix: Path(paired) for paired, _ in paired_paths(str(path), fmt, formats)}
    except InconsistentPath as error:
        raise ValueError(f"{path}: {error}") from None
    if set(paths) != {".py", ".ipynb"}:
        raise ValueError(f"{path}: paired as {formats!r}, not as a notebook and its .py twin")
    return paths[".py"], paths[".ipynb"]


def build(source: Path, target: Path) -> nbformat.NotebookNode:
    """The notebook to execute: cells and their tags from ``source`` (X.py), the rest kept from ``target``
    (X.ipynb) if it exists."""
    config = load_jupytext_config(str(source))
    notebook = jupytext.read(source, config=config)
    old_ids = set()
    if target.exists():
        previous = jupytext.read(target)
        old_ids = {cell.get("id") for cell in previous.cells} - {None}  # nbformat < 4.5 had no cell ids
        notebook = combine_inputs_with_outputs(notebook, previous, fmt="py:percent")
    # jupytext gives new cells random ids; derive them from the content instead, so a rerun keeps them.
    taken = set(old_ids)
    for index, cell in enumerate(notebook.cells):
        if cell.get("id") in old_ids:
            continue
        digest = hashlib.sha1(f"{source.stem}\n{index}\n{cell.source}".encode()).hexdigest()
        new_id = next(digest[i : i + 8] for i in range(len(digest) - 7) if digest[i : i + 8] not in taken)
        cell["id"] = new_id
        taken.add(new_id)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    notebook.nbformat, notebook.nbformat_minor = 4, max(notebook.nbformat_minor, 5)
    return notebook


class CellFailed(Exception):
    """A cell raised (or timed out, or the kernel died); the message names the cell and the error."""


def execute(notebook: nbformat.NotebookNode, folder: Path) -> float:
    """Run ``notebook`` in place with ``folder`` as working directory; return the wall time in seconds.

    Raises ``CellFailed`` naming the cell if a cell raises, times out or kills the kernel.
    """
    current = {"index": None}
    manager = AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=CurrentEnvironmentKernels())
    client = NotebookClient(
        notebook,
        km=manager,
        kernel_name=KERNEL_NAME,
        timeout=CELL_TIMEOUT_S,
        startup_timeout=120,
        record_timing=False,
        store_widget_state=False,
        resources={"metadata": {"path": str(folder)}},
        on_cell_start=lambda cell_index, **_: current.update(index=cell_index),  # nbclient passes cell= too
    )
    start = time.perf_counter()
    try:
        client.execute(env=kernel_environment())
    except Exception as error:
        summary = f"{error.ename}: {error.evalue}" if hasattr(error, "ename") else f"{type(error).__name__}: {error}"
        raise CellFailed(f"{describe_cell(notebook, current['index'])} raised {summary}") from error
    return time.perf_counter() - start


def normalise(notebook: nbformat.NotebookNode) -> None:
    """Remove everything that changes from run to run (or machine to machine) but is not an output."""
    metadata = notebook.metadata
    for key in ("widgets", "jupytext"):
        metadata.pop(key, None)
    metadata["kernelspec"] = dict(KERNELSPEC)
    language = dict(metadata.get("language_info", {"name": "python"}))
    language.pop("version", None)  # the interpreter's patch version: noise between maintainers' machines
    metadata["language_info"] = language
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        # The kernel flushes stdout whenever it likes, so one print can arrive as several stream outputs;
        # join neighbours (not all streams, as nbval does for comparing: that would move text past a figure).
        merged = []
        for output in cell.outputs:
            if (
                merged
                and output.output_type == "stream"
                and merged[-1].output_type == "stream"
                and merged[-1].name == output.name
            ):
                merged[-1].text += output.text
            else:
                merged.append(output)
        cell.outputs = merged
        for number, output in enumerate(cell.outputs):
            view = output.get("data", {}).get(WIDGET_VIEW)
            if view and view.get("model_id"):
                # The model is not stored (no widget state), so its random id only makes diffs.
                view["model_id"] = uuid.uuid5(uuid.NAMESPACE_OID, f"{cell.id}/{number}").hex


def describe_cell(notebook: nbformat.NotebookNode, index: int | None) -> str:
    if index is None:
        return "before the first cell (kernel start)"
    first_line = next((line for line in notebook.cells[index].source.splitlines() if line.strip()), "")
    return f"cell {index} ({first_line[:60]!r})"


def run(source: Path, target: Path) -> bool:
    """Build ``target`` (X.ipynb) from ``source`` (X.py), execute, normalise and write it; print one line; True if
    it worked."""
    name = source.relative_to(ROOT) if source.is_relative_to(ROOT) else source
    notebook = build(source, target)
    target.parent.mkdir(parents=True, exist_ok=True)  # a new lesson's notebooks/ may not exist yet
    try:
        seconds = execute(notebook, target.parent)
    except CellFailed as failure:  # keep the old .ipynb; go on with the other notebooks
        print(f"FAILED {name}: {failure}", file=sys.stderr)
        return False
    normalise(notebook)
    nbformat.validate(notebook)
    with open(target, "w", encoding="utf-8", newline="\n") as stream:
        nbformat.write(notebook, stream)
    shown = target.relative_to(ROOT) if target.is_relative_to(ROOT) else target
    print(f"{shown}: executed in {seconds:.1f} s")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks (X.py or X.ipynb); default: all of them")
    arguments = parser.parse_args(argv)
    pairs = []
    for path in [path.resolve() for path in arguments.paths] or default_sources():
        try:
            source, target = pair(path)
        except ValueError as error:
            parser.error(str(error))
        if not source.exists():
            parser.error(f"no py:percent twin: {source}")
        pairs.append((source, target))
    results = [run(source, target) for source, target in pairs]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
