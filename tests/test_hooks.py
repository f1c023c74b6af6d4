"""The pre-commit hooks (.pre-commit-config.yaml, `make hooks`) and the twins' check they run (tools/twins.py).

tests/test_notebooks.py runs the twins' comparison on every lesson and master; here, the hooks' configuration, the
command line of tools/twins.py, and (slow tier) the hooks themselves on the whole tree.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest
import yaml
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from tools import twins

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / ".pre-commit-config.yaml"
PRE_COMMIT = Path(sys.executable).parent / "pre-commit"


def hooks() -> list[dict]:
    return [hook for repo in yaml.safe_load(CONFIG.read_text(encoding="utf-8"))["repos"] for hook in repo["hooks"]]


def test_config_is_valid_and_runs_only_programs_of_the_venv():
    done = subprocess.run([str(PRE_COMMIT), "validate-config", str(CONFIG)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    assert [repo["repo"] for repo in config["repos"]] == ["local"], "a hook repository would be fetched from the web"
    assert {hook["id"] for hook in hooks()} == {"ruff-check", "ruff-format", "notebook-twins"}
    for hook in hooks():
        program = hook["entry"].split()[0]
        assert hook["language"] == "system" and program.startswith(".venv/bin/"), hook
        assert (ROOT / program).exists(), f"{hook['id']} runs {program}, which `make` installs: run make hooks"


def test_twins_hook_sees_every_lesson_and_master_and_no_student_version():
    files = re.compile(next(hook["files"] for hook in hooks() if hook["id"] == "notebook-twins"))
    paired = {path for pair in twins.every_pair() for path in pair}
    assert len(paired) >= 2 * 14, sorted(paired)
    for path in paired:
        assert files.search(path.relative_to(ROOT).as_posix()), path
    lab_folder = ROOT / "labs" / "01_ring_allreduce"
    others = [lab_folder / name for name in ("jupytext.toml", "wrong_answers.py", "prose_numbers.py")]
    for path in [*ROOT.glob("labs/*.ipynb"), *others, ROOT / "tools/twins.py"]:
        assert not files.search(path.relative_to(ROOT).as_posix()), path


def lesson_pair(root: Path, sources: list[str]) -> tuple[Path, Path]:
    """notebooks/01_x.ipynb and its twin notebooks_py/01_x.py under ``root``, with code cells ``sources``."""
    notebook, twin = root / "notebooks" / "01_x.ipynb", root / "notebooks_py" / "01_x.py"
    lesson = new_notebook(cells=[new_markdown_cell("# A lesson"), *map(new_code_cell, sources)])
    for path, fmt in ((notebook, "ipynb"), (twin, "py:percent")):
        path.parent.mkdir(exist_ok=True)
        jupytext.write(lesson, path, fmt=fmt)
    return notebook, twin


def test_twins_accepts_a_pair_in_step_and_skips_what_is_not_a_twin(tmp_path, capsys):
    notebook, twin = lesson_pair(tmp_path, ["x = 1", "x + 1"])
    assert twins.main([str(notebook), str(twin), str(ROOT / "labs" / "01_ring_allreduce.ipynb")]) == 0
    assert capsys.readouterr().err == ""


def test_twins_names_the_pair_the_difference_and_what_to_run(tmp_path, capsys):
    notebook, twin = lesson_pair(tmp_path, ["x = 1", "x + 1"])
    twin.write_text(twin.read_text(encoding="utf-8").replace("x + 1", "x + 2"), encoding="utf-8")
    assert twins.main([str(twin)]) == 1
    message = capsys.readouterr().err
    assert f"{notebook.as_posix()} cell 2 differs from {twin.as_posix()}" in message
    assert "the .ipynb has 'x + 1' where the .py has 'x + 2'" in message
    assert f"`make notebooks NOTEBOOKS={twin.as_posix()}`" in message
    twin.write_text(twin.read_text(encoding="utf-8") + "\n# %%\ny = 3\n", encoding="utf-8")
    notebook.unlink()
    assert twins.main([str(twin)]) == 1
    assert f"no notebook {notebook.as_posix()}; run `make notebooks NOTEBOOKS=" in capsys.readouterr().err


def test_twins_counts_cells(tmp_path, capsys):
    notebook, twin = lesson_pair(tmp_path, ["x = 1"])
    twin.write_text(twin.read_text(encoding="utf-8") + "\n# %%\ny = 3\n", encoding="utf-8")
    assert twins.main([str(notebook)]) == 1
    assert f"{notebook.as_posix()} has 2 cells, {twin.as_posix()} has 3" in capsys.readouterr().err


@pytest.mark.slow  # the hooks on every file of the tree: 5-15 s
def test_hooks_pass_on_the_tree(tmp_path):
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: pre-commit runs on the files git tracks")
    environment = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path)}  # its cache, not the user's ~/.cache
    done = subprocess.run(
        [str(PRE_COMMIT), "run", "--all-files", "--color", "never"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
