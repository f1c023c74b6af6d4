"""Lab 5 (the partition explorer) in a real JupyterLab: GPT-3 175B on 8 nodes of 8 A100, the tensor-parallel
slider moved from t = 8 to t = 16 (the next value it offers): the summary's tensor-parallel link changes from NVLink
to InfiniBand and the exposed communication grows (issue 13's browser test). Run alone:
``.venv/bin/python -m pytest -q tests/browser -k partition``; fixtures in conftest.py."""

from __future__ import annotations

import re

from test_labs_in_browser import CHANGE_TIMEOUT_MS, RUN_ALL, RUN_ALL_TIMEOUT_MS, text_of, wait_for_idle_kernel

from course_lib import units

PATH = "labs/05_partition_explorer.ipynb"
SECONDS = {"ns": units.NS, "µs": units.US, "ms": units.MS, "s": 1.0, "min": units.MINUTE, "h": units.HOUR}


def exposed_s(summary: str) -> float:
    """The exposed communication the summary states, in seconds ("exposed communication 978 ms")."""
    match = re.search(r"exposed communication ([\d.]+) (ns|µs|ms|s|min|h)\b", summary)
    assert match, f"no exposed communication in the summary: {summary[:300]!r}"
    return float(match.group(1)) * SECONDS[match.group(2)]


def tensor_link(summary: str) -> str:
    match = re.search(r"tensor-parallel collectives on (\w+)", summary)
    assert match, f"no tensor-parallel link in the summary: {summary[:300]!r}"
    return match.group(1)


def test_tensor_parallel_past_the_node_moves_to_infiniband(page, lab_server, artifacts_dir):
    from playwright.sync_api import expect

    page.goto(f"{lab_server.url}/lab/tree/{PATH}?reset", wait_until="domcontentloaded")
    wait_for_idle_kernel(page, PATH, timeout_ms=60_000)
    page.evaluate(RUN_ALL, [PATH, RUN_ALL_TIMEOUT_MS])
    notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").first
    lab = notebook.locator(".widget-vbox:has(> .course-lab-summary)").first
    summary = lab.locator(".course-lab-summary").first
    expect(summary).to_have_text(re.compile(r"tensor-parallel collectives on"), timeout=CHANGE_TIMEOUT_MS)
    wait_for_idle_kernel(page, PATH)

    slider = lab.locator(".widget-slider:has(.widget-label:text-is('tensor parallel t'))").first
    slider.scroll_into_view_if_needed()
    readout = slider.locator(".widget-readout").first
    expect(readout).to_have_text("8")
    before = text_of(summary)
    assert tensor_link(before) == "NVLink", before
    slider.locator(".noUi-handle").first.focus()
    slider.locator(".noUi-handle").first.press("ArrowRight")  # t: 8 → 16, the next value offered

    expect(readout).to_have_text("16", timeout=CHANGE_TIMEOUT_MS)
    expect(summary).to_have_text(re.compile(r"tensor-parallel collectives on InfiniBand"), timeout=CHANGE_TIMEOUT_MS)
    wait_for_idle_kernel(page, PATH)
    after = text_of(summary)
    assert tensor_link(after) == "InfiniBand"
    assert exposed_s(after) > exposed_s(before), (before, after)
    lab.screenshot(path=artifacts_dir / "05_partition_explorer-t16.png")
    print(
        f"t = 8 → 16: tensor-parallel link {tensor_link(before)} → {tensor_link(after)}, exposed communication "
        f"{units.format_time(exposed_s(before))} → {units.format_time(exposed_s(after))}; screenshot in {artifacts_dir}"
    )
