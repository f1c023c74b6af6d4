"""tools/execute_notebooks.py (`make notebooks`): idempotent output, tags kept, a raising cell named, the twin found
where the repository's jupytext.toml files pair it.

Runs the tool on small notebooks in a temporary copy of the repository's layout (three kernel starts, a few
seconds): a lesson notebooks_py/X.py builds notebooks/X.ipynb, a master labs/X/X.py builds the .ipynb beside it.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HEADER = """# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---
"""

LESSON = (
    HEADER
    + """
# %% [markdown]
# # Count the work

# %%
from course_lib import units

print({"b", "a", "c", "d", "e"})  # set order depends on PYTHONHASHSEED
units.format_time(2.02e-3)

# %%
import time

for step in range(3):  # three flushes: three stream messages from the kernel, one stored output
    print(f"step {step}", flush=True)
    time.sleep(0.05)

# %%
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(3, 2))
ax.plot([0, 1], [0, 1])
plt.show()

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: a live widget
from course_lib.widgets.quiz import multiple_choice

multiple_choice("1 MAC is how many FLOPs?", ["1", "2"], 1, "A multiply and an add.")
"""
)

BROKEN = (
    HEADER
    + """
# %%
x = 1

# %%
raise ValueError("payload_bytes must be >= 0")
"""
)


def run_tool(*paths):
    env = {key: value for key, value in os.environ.items() if key != "PYTHONHASHSEED"}
    env["MPLBACKEND"] = "Agg"  # the tool must keep it away from the kernel, or the figure would vanish
    return subprocess.run(
        [sys.executable, "-m", "tools.execute_notebooks", *map(str, paths)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=ROOT,
    )


def test_two_runs_write_identical_files_and_a_raising_cell_is_named(tmp_path):
    # The repository's jupytext.toml, and a lab folder's in the broken master's folder.
    configs = {"jupytext.toml": "jupytext.toml", "labs/01_ring_allreduce/jupytext.toml": "labs/02_broken/jupytext.toml"}
    for config, copy in configs.items():
        (tmp_path / copy).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / copy).write_bytes((ROOT / config).read_bytes())
    (tmp_path / "notebooks_py").mkdir()
    lesson, notebook = tmp_path / "notebooks_py" / "01_lesson.py", tmp_path / "notebooks" / "01_lesson.ipynb"
    broken = tmp_path / "labs" / "02_broken" / "02_broken.py"
    lesson.write_text(LESSON, encoding="utf-8")
    broken.write_text(BROKEN, encoding="utf-8")

    first = run_tool(lesson, broken)
    assert first.returncode == 1, first.stderr
    assert f"{notebook}: executed in" in first.stdout
    assert "02_broken.py: cell 1 ('raise ValueError" in first.stderr and "ValueError: payload_bytes" in first.stderr
    assert not broken.with_suffix(".ipynb").exists()
    assert sorted(path.relative_to(tmp_path).as_posix() for path in tmp_path.rglob("*.ipynb")) == [
        "notebooks/01_lesson.ipynb"
    ]

    stored = notebook.read_bytes()
    second = run_tool(notebook)  # the .ipynb names its twin too
    assert second.returncode == 0, second.stderr
    assert notebook.read_bytes() == stored, "a second run changed the stored notebook"

    unpaired = run_tool(tmp_path / "labs" / "01_lesson.ipynb")
    assert unpaired.returncode == 2 and "jupytext.toml pairs no notebook with it" in unpaired.stderr, unpaired.stderr

    assert stored.endswith(b"}\n") and stored.startswith(b'{\n "cells": [\n  {\n   "cell_type"')  # indent 1
    notebook = json.loads(stored)
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert [cell["execution_count"] for cell in code] == [1, 2, 3, 4]
    seeded = subprocess.run(
        [sys.executable, "-c", 'print({"b", "a", "c", "d", "e"})'],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        check=True,
    ).stdout
    assert "".join(code[0]["outputs"][0]["text"]) == seeded
    assert code[0]["outputs"][1]["data"]["text/plain"] == ["'2.02 ms'"]
    steps = {"name": "stdout", "output_type": "stream", "text": ["step 0\n", "step 1\n", "step 2\n"]}
    assert code[1]["outputs"] == [steps]
    assert code[2]["outputs"][0]["data"]["text/plain"] == ["<Figure size 300x200 with 1 Axes>"]
    assert "image/png" in code[2]["outputs"][0]["data"]
    assert code[3]["metadata"] == {"tags": ["nbval-ignore-output"]}
    assert "application/vnd.jupyter.widget-view+json" in code[3]["outputs"][0]["data"]
    assert all("execution" not in cell["metadata"] for cell in notebook["cells"])
    assert set(notebook["metadata"]) == {"kernelspec", "language_info"}
    assert notebook["metadata"]["kernelspec"]["name"] == "python3"
    assert "version" not in notebook["metadata"]["language_info"]
