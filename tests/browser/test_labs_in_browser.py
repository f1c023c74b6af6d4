"""Each widget lab in a real JupyterLab, as a learner uses it: open the notebook, run all cells, move a slider.

For every ``labs/*.ipynb`` (the student versions of the graded labs, as a learner gets them, answers still
``...``): JupyterLab (started by conftest.py on a copy of the labs) opens the notebook; once its kernel is idle,
"Run All Cells"; once the lab (the widget box holding the
``course-lab-summary``) is rendered, the first visible slider's handle gets the keyboard focus and one arrow key (right,
or left when the slider is at its end). The test then checks what the learner sees:

- the slider's readout shows another value AND the summary (the Python result, formatted with units) changed:
  the change went to the kernel, the callback ran and its result came back to the page;
- the lab's figure is an ``<img>`` that loaded (natural width > 0);
- no cell shows an error: no error output or traceback, no "Error displaying widget";
- every ``grader.check("qN")`` cell shows otter's feedback on question N (its public tests, failing, since the
  answers are still ``...``): a self-learner gets it in the browser, with nothing else installed.

A screenshot of the lab after the change, and one of the whole page, go to ``$BROWSER_ARTIFACTS`` (or a pytest
temporary folder; never into the repository). Run alone: ``.venv/bin/python -m pytest tests/browser``. On the
course's 2-core machine: about 8 s to start JupyterLab and Chromium, then 10-18 s per lab (opening the notebook
and starting its kernel are most of it), 70-90 s in all.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
LABS = sorted((ROOT / "labs").glob("*.ipynb"))
RUN_ALL_TIMEOUT_MS = 120_000
CHANGE_TIMEOUT_MS = 20_000

# The notebook panel showing `path` (relative to the server's root), or null while it is not open yet.
FIND_PANEL = """
(path) => {
  const app = window.jupyterapp;
  if (!app || !app.shell) return null;
  for (const widget of app.shell.widgets('main')) {
    if (widget.context && widget.context.path === path && widget.sessionContext) return widget;
  }
  return null;
}
"""

KERNEL_IDLE = f"""
(path) => {{
  const panel = ({FIND_PANEL})(path);
  const kernel = panel && panel.sessionContext.isReady && panel.sessionContext.session
    && panel.sessionContext.session.kernel;
  return Boolean(kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle');
}}
"""

# "Run All Cells" through JupyterLab's own command (as the Run menu does); resolves when every cell has run,
# to true when none failed.
RUN_ALL = f"""
async ([path, timeoutMs]) => {{
  const panel = ({FIND_PANEL})(path);
  window.jupyterapp.shell.activateById(panel.id);
  const run = window.jupyterapp.commands.execute('notebook:run-all-cells');
  const timeout = new Promise((_, reject) =>
    setTimeout(() => reject(new Error(`Run All Cells did not finish within ${{timeoutMs}} ms`)), timeoutMs));
  return await Promise.race([run, timeout]);
}}
"""

# The questions whose otter feedback ("q1 results: ...") an output of the notebook shows.
FEEDBACK_SHOWN = """
(node) => Array.from(node.querySelectorAll('.jp-OutputArea-output'))
  .flatMap((output) => Array.from(output.innerText.matchAll(/^\\s*(q\\d+) results:/gm), (match) => match[1]))
"""

# Every output of the notebook that shows an error, as text.
ERROR_OUTPUTS = """
(root) => {
  const found = [];
  const errorMime =
    '[data-mime-type="application/vnd.jupyter.stderr"], [data-mime-type="application/vnd.jupyter.error"]';
  for (const output of root.querySelectorAll('.jp-OutputArea-output')) {
    const text = output.textContent || '';
    const isErrorOutput = output.matches(errorMime) || output.querySelector(errorMime);
    if ((isErrorOutput && /Error|Traceback/.test(text)) || /Error displaying widget|model not found/i.test(text)) {
      found.push(text.slice(0, 2000));
    }
  }
  return found;
}
"""


def text_of(locator) -> str:
    """The element's text with its whitespace collapsed, as Playwright's to_have_text compares it (textContent:
    it does not depend on whether the element is laid out, unlike innerText)."""
    return " ".join((locator.text_content() or "").split())


def wait_for_idle_kernel(page, path: str, timeout_ms: int = 30_000) -> None:
    """Wait until the notebook's kernel is connected and idle; on timeout, say what the page shows instead."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    try:
        page.wait_for_function(KERNEL_IDLE, arg=path, timeout=timeout_ms)
    except PlaywrightTimeoutError:
        dialogs = page.locator(".jp-Dialog").all_inner_texts()
        status = page.locator("#jp-main-statusbar").all_inner_texts()
        pytest.fail(
            f"{path}: the kernel was not idle within {timeout_ms / 1000:.0f} s; dialogs: {dialogs or 'none'}; "
            f"status bar: {status}",
            pytrace=False,
        )


PARAMS = [pytest.param(path, id=path.stem) for path in LABS] or [
    pytest.param(None, id="no-labs", marks=pytest.mark.skip(reason="no lab notebooks in labs/ yet"))
]


@pytest.mark.parametrize("notebook", PARAMS)
def test_lab_runs_and_answers_a_slider(notebook: Path, page, lab_server, artifacts_dir):
    from playwright.sync_api import expect

    path = f"labs/{notebook.name}"
    started = time.monotonic()
    # ?reset: a clean workspace, so the notebooks opened by the previous tests are not reopened (and re-run).
    page.goto(f"{lab_server.url}/lab/tree/{path}?reset", wait_until="domcontentloaded")
    wait_for_idle_kernel(page, path, timeout_ms=60_000)
    loaded = time.monotonic()

    all_ran = page.evaluate(RUN_ALL, [path, RUN_ALL_TIMEOUT_MS])
    notebook_node = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").first
    lab = notebook_node.locator(".widget-vbox:has(> .course-lab-summary)").first
    summary = lab.locator(".course-lab-summary").first
    expect(summary).to_have_text(re.compile(r"\S"), timeout=CHANGE_TIMEOUT_MS)
    wait_for_idle_kernel(page, path)
    ran = time.monotonic()
    errors = notebook_node.evaluate(ERROR_OUTPUTS)
    assert all_ran is True and not errors, (
        f"{path}: Run All Cells {'succeeded' if all_ran else 'stopped at an error'}; error outputs:\n"
        + "\n---\n".join(errors)
    )
    questions = sorted(nbformat.read(notebook, as_version=4).metadata["otter"]["tests"])
    shown = sorted(set(notebook_node.evaluate(FEEDBACK_SHOWN)))
    assert questions and shown == questions, (
        f"{path}: otter's feedback is shown for {shown}, expected every question {questions} (grader.check)"
    )

    slider = lab.locator(".widget-slider:visible").first  # lab 5 hides the custom model's sliders
    slider.scroll_into_view_if_needed()  # JupyterLab does not lay out cells far outside the view
    expect(slider).to_be_visible()
    handle, readout = slider.locator(".noUi-handle").first, slider.locator(".widget-readout").first
    expect(readout).to_be_visible()
    readout_before, summary_before = text_of(readout), text_of(summary)
    assert readout_before and summary_before, f"{path}: empty readout {readout_before!r} or summary {summary_before!r}"
    at_end = handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax")
    handle.focus()
    pressed = time.monotonic()
    handle.press("ArrowLeft" if at_end else "ArrowRight")

    expect(readout, "the slider's readout did not change after an arrow key").not_to_have_text(
        readout_before, timeout=CHANGE_TIMEOUT_MS
    )
    expect(summary, "the lab's summary (its Python result) did not change after the slider moved").not_to_have_text(
        summary_before, timeout=CHANGE_TIMEOUT_MS
    )
    wait_for_idle_kernel(page, path)
    changed = time.monotonic()
    readout_after, summary_after = text_of(readout), text_of(summary)

    figure = lab.locator("img.widget-image").last  # the PNG of the lab's figure, the box's last child
    expect(figure).to_be_attached()
    natural_width, shown_width = figure.evaluate(
        "(img) => [img.complete ? img.naturalWidth : 0, Math.round(img.getBoundingClientRect().width)]"
    )
    assert natural_width > 0, f"{path}: the lab's figure <img> has not loaded (natural width 0)"
    errors = notebook_node.evaluate(ERROR_OUTPUTS)
    assert not errors, f"{path}: an output shows an error after the slider moved:\n" + "\n---\n".join(errors)

    lab.screenshot(path=artifacts_dir / f"{notebook.stem}.png")
    page.screenshot(path=artifacts_dir / f"{notebook.stem}-page.png")
    print(
        f"{path}: readout {readout_before!r} -> {readout_after!r}; summary {summary_before[:90]!r}... -> "
        f"{summary_after[:90]!r}...; figure {natural_width} px wide, shown {shown_width} px wide; "
        f"open {loaded - started:.1f} s, run all {ran - loaded:.1f} s, slider to new summary "
        f"{changed - pressed:.2f} s, total {time.monotonic() - started:.1f} s; screenshots in {artifacts_dir}"
    )
