"""Every figure the lessons and labs draw, checked like prose (issue 25, item 2).

**Readable.** ``course_lib.viz.figure_check.figure_problems`` finds no text over another, none cut by an edge, none
under 7 pt as displayed and no legend entry with nothing drawn (its module docstring states the rules): on every
figure a lesson draws, as its notebook stores it (the figure's dpi, ``bbox_inches="tight"``, the inline backend's),
and on every lab's figure as the lab renders it (``Lab.dpi``, no crop), at its start and at the states of
``LAB_STATES`` (the slow tier moves every control through its stops).

**True.** Every number in a figure's titles, axis labels, legends and notes (``figure_numbers``: tick labels are the
scale, not a result) is one of the values ``FIGURE_NUMBERS`` works out for that figure with ``course_lib``, formatted
as the figure formats it, and each value listed as shown is in the figure. The inputs a lesson names as its
constants (its model, plan and cluster) are read from the lesson; every result is computed here again, so a figure
that draws a name rebound by a later cell (lesson 04's step timeline once drew the 1T model's step under the GPT-3
title) fails.

A lesson's figures are the ones its twin draws: its code cells run in order, in ``notebooks/`` as the kernel runs
them, and each ``plt.show()`` hands over the figures open at that point, named by the heading above the cell. The labs
a lesson opens (lesson 04's partition explorers) are checked as labs. Running the lessons takes about a minute (lesson
07 measures live), so the lessons' tests are in the slow tier (``make test``); the check's own tests and the labs' at
their listed states are quick.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import os
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import jupytext
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from course_lib import (
    budget,
    collectives,
    compute,
    hardware,
    measure,
    parallelism,
    published_runs,
    serving,
    units,
    validation,
)
from course_lib.viz import figure_check
from course_lib.viz.collectives import demo_inputs
from course_lib.viz.fast import FastTextGroup
from course_lib.viz.figure_check import figure_numbers, figure_problems, figure_quantities
from course_lib.widgets import _base
from tools import assignments

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted(path.stem for path in (ROOT / "notebooks_py").glob("*.py"))
# A call that draws a figure in a lesson's or a lab's source: a plot function, a live figure or a lab.
DRAWING_CALL = re.compile(r"\b(?:viz(?:_\w+)?\.plot_\w+|\w+_lab)\(")


# ---- the figures of the lessons -------------------------------------------------------------------------------------


@functools.cache
def lesson_figures(lesson: str) -> tuple[list, dict]:
    """Run lesson ``lesson``'s twin as its kernel would; return [(heading, figure)] in the order shown, and its
    namespace."""
    notebook = jupytext.read(ROOT / "notebooks_py" / f"{lesson}.py")
    namespace: dict = {"__name__": "__main__"}
    shown, heading = [], ""

    def show(*_args, **_kwargs):
        for number in plt.get_fignums():
            shown.append((heading, plt.figure(number)))
        plt.close("all")

    here, original_show = os.getcwd(), plt.show
    os.chdir(ROOT / "notebooks")
    plt.show = show
    try:
        for cell in notebook.cells:
            if cell.cell_type == "markdown":
                headings = [line for line in cell.source.splitlines() if line.startswith("#")]
                heading = headings[-1].lstrip("# ") if headings else heading
                continue
            source = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(source, f"notebooks_py/{lesson}.py", "exec"), namespace)
    finally:
        plt.show = original_show
        os.chdir(here)
    return shown, namespace


def readable_problems(figures) -> list[str]:
    return [
        f"{heading} (figure {index}): {problem}"
        for index, (heading, fig) in enumerate(figures)
        for problem in figure_problems(fig, dpi=fig.dpi, bbox_inches="tight")
    ]


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS)
def test_every_figure_of_a_lesson_is_readable(lesson):
    figures, namespace = lesson_figures(lesson)
    cells = [cell.source for cell in jupytext.read(ROOT / "notebooks_py" / f"{lesson}.py").cells]
    drawing = [source for source in cells if "plt.show()" in source]
    assert len({id(fig) for _, fig in figures}) >= len(drawing), f"{lesson}: a cell that shows a figure drew none"
    assert not readable_problems(figures), "\n".join(readable_problems(figures))
    labs = [value for value in namespace.values() if isinstance(value, _base.Lab)]
    problems = [problem for lab in labs for problem in figure_problems(lab.figure, dpi=lab.dpi)]
    assert not problems, f"{lesson}'s labs: " + "\n".join(problems)


def test_every_drawing_call_of_the_lessons_and_labs_is_checked():
    """The figures checked here are found by running the lessons and opening the labs: every call that draws, in a
    lesson's twin or a lab's master, is in a cell that shows a figure or is a lab this module opens."""
    for lesson in LESSONS:
        for cell in jupytext.read(ROOT / "notebooks_py" / f"{lesson}.py").cells:
            if cell.cell_type == "code" and DRAWING_CALL.search(cell.source):
                calls = set(DRAWING_CALL.findall(cell.source))
                labs = {call[:-1] for call in calls if call.endswith("_lab(")}
                assert "plt.show()" in cell.source or labs <= set(LAB_FACTORIES), (lesson, calls)
    for lab in assignments.lab_names():
        source = (ROOT / "labs" / lab / f"{lab}.py").read_text(encoding="utf-8")
        factories = {call[:-1] for call in DRAWING_CALL.findall(source) if call.endswith("_lab(")}
        assert factories and factories <= set(LAB_FACTORIES), (lab, factories)


# ---- the figures of the labs ----------------------------------------------------------------------------------------


def _factory(name):
    if name == "measure_lab":
        from course_lib.widgets.measure import measure_lab

        return measure_lab
    from course_lib import widgets

    return getattr(widgets, name)


LAB_FACTORIES = (
    "ring_allreduce_lab",
    "global_batch_lab",
    "memory_budget_lab",
    "pipeline_lab",
    "measure_lab",
    "partition_lab",
    "serving_lab",
    "concurrency_sweep_lab",
    "sequences_lab",
)
# States a reader reaches and a figure once got wrong: the partition explorer's node labels at t = 16 ("nodes
# 10–11nodes 12–13"), lab 1's greyed-out algorithms at 6 ranks, lab 3's tiny bars (GPT-2), its empty slots (nanotron's
# ZeRO-2 with p > 1) and a framework's legend, lab 6 with pipeline hops and at its longest steps, lab 7 with a dense
# model (no bars) and at its longest sequence.
LAB_STATES = {
    "ring_allreduce_lab": [{}, {"ranks": 6}, {"ranks": 2}],
    "global_batch_lab": [{}],
    "memory_budget_lab": [
        {},
        {"model": "GPT-2 1.5B"},
        {"framework": "nanotron", "zero_stage": 2},
        {"framework": "megatron"},
    ],
    "pipeline_lab": [{}, {"schedule": "interleaved", "virtual_stages": 2}],
    "measure_lab": [{}],
    "partition_lab": [{}, {"tensor_parallel": 16}, {"tensor_parallel": 16, "pipeline_parallel": 4}],
    "serving_lab": [{}, {"pipeline_parallel": 2}, {"sequences": 1024}],
    # its knee's label left of the line (a late knee) and right of it (an early one), a refusal's message
    "concurrency_sweep_lab": [
        {},
        {"model": "Llama 3.1 8B", "tensor_parallel": 1, "output_tokens": 32, "concurrency": 1},
        {"device": "A100 SXM 80GB", "weights": "fp8"},
    ],
    "sequences_lab": [{}, {"model": "Llama 3.1 70B"}, {"expert_placement": "across nodes", "seq_len": 1048576}],
}


def lab_problems(lab) -> list[str]:
    return figure_problems(lab.figure, dpi=lab.dpi)


@pytest.mark.parametrize("factory", LAB_FACTORIES)
def test_every_lab_figure_is_readable_at_its_start_and_the_listed_states(factory):
    problems = []
    for state in LAB_STATES[factory]:
        lab = _factory(factory)(**state)
        problems += [f"{factory}({state}): {problem}" for problem in lab_problems(lab)]
    assert not problems, "\n".join(problems)


def _stops(control) -> list:
    if isinstance(control.value, bool):
        return [not control.value]
    if hasattr(control, "_options_values"):
        values = list(control._options_values)
    elif hasattr(control, "min") and hasattr(control, "max"):
        values = list(range(control.min, control.max + 1, getattr(control, "step", 1) or 1))
    else:
        return []
    return values[:: max(1, len(values) // 6)] + values[-1:]


@pytest.mark.slow
@pytest.mark.parametrize("factory", LAB_FACTORIES)
def test_every_lab_figure_is_readable_as_each_control_moves(factory):
    lab = _factory(factory)()
    problems = []
    for name, control in lab.controls.items():
        start = control.value
        for value in _stops(control):
            if value == control.value:
                continue
            control.value = value
            problems += [f"{name} = {value!r}: {problem}" for problem in lab_problems(lab)]
        control.value = start
    assert not problems, "\n".join(problems)


def test_the_labs_render_at_the_size_the_check_assumes():
    # figure_check counts a CSS point as 96/72 pixels: at 96 dpi a lab's 8-pt text shows at 8 pt. At the former
    # 72 dpi it showed at 6 (lab 6's legend "at about 6 px").
    assert _base.Lab.dpi == 96
    lab = _factory("serving_lab")()
    width, height = lab.figure.get_size_inches() * lab.dpi
    png = bytes(lab.image.value)
    assert png[16:24] == int(round(width)).to_bytes(4, "big") + int(round(height)).to_bytes(4, "big")


# ---- the check itself -----------------------------------------------------------------------------------------------


def _figure(width=4, height=3, dpi=100):
    fig = Figure(figsize=(width, height), dpi=dpi)
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def test_a_clean_figure_has_no_problems():
    fig, ax = _figure()
    ax.plot([0, 1], [0, 1], label="ideal")
    ax.bar([0.5], [0.5], width=0.2, label="measured")
    ax.legend(loc="upper left")
    ax.set_title("25.4 s per step")
    ax.set_xlabel("x (s)")
    assert figure_problems(fig, bbox_inches="tight") == []


def test_text_over_text_and_tick_labels_over_each_other_are_found():
    fig, ax = _figure()
    ax.text(0.5, 0.5, "a long label here", transform=ax.transAxes)
    ax.text(0.52, 0.51, "another one", transform=ax.transAxes)
    ax.set_xticks(np.arange(30))  # thirty tick labels in three inches
    problems = figure_problems(fig)
    assert any(problem.startswith("text 'a long label here' overlaps text 'another one'") for problem in problems)
    assert any(re.match(r"tick label '\d+' overlaps tick label '\d+'", problem) for problem in problems)
    fig, ax = _figure()
    ax.text(0.5, 0.5, "apart", transform=ax.transAxes)
    ax.text(0.5, 0.3, "apart too", transform=ax.transAxes)
    assert figure_problems(fig) == []


def test_labels_of_a_fast_text_group_running_into_each_other_are_found():
    # lab 5 at t = 16 once read "nodes 10–11nodes 12–13": labels drawn as glyph outlines have a Text's box too
    fig, ax = _figure(dpi=96)
    ax.set_xlim(0, 100)
    group = FastTextGroup(ax, size=9, ha="center", va="center")
    group.set_texts([((50, 0.5), "nodes 10–11")])
    fig.canvas.draw()
    ((_, box),) = group.text_boxes(fig.canvas.get_renderer())
    width = box.width / (ax.transData.transform((1, 0))[0] - ax.transData.transform((0, 0))[0])  # in data units
    group.set_texts([((50, 0.5), "nodes 10–11"), ((50 + 0.9 * width, 0.5), "nodes 12–13")])
    (problem,) = figure_problems(fig)
    assert problem.startswith("text 'nodes 10–11' overlaps text 'nodes 12–13'")
    group.set_texts([((50, 0.5), "nodes 10–11"), ((50 + 1.2 * width, 0.5), "nodes 12–13")])
    assert figure_problems(fig) == []


def test_text_cut_by_the_edge_and_by_its_axes_is_found():
    fig, ax = _figure()
    ax.text(0.9, 0.5, "runs off the right edge", transform=fig.transFigure)
    assert figure_problems(fig) == ["text 'runs off the right edge' is cut by the figure's edge"]
    # a tight save takes every text in: nothing is cut by the edge then
    assert figure_problems(fig, bbox_inches="tight") == []
    fig, ax = _figure()
    ax.text(0.8, 0.5, "clipped here", transform=ax.transAxes, clip_on=True)
    assert figure_problems(fig) == ["text 'clipped here' is cut by its axes"]


def test_small_text_is_measured_at_the_displayed_size():
    # the rule: s pt saved at d dpi shows at s · d / 96 pt (one image pixel per CSS pixel)
    fig, ax = _figure(dpi=72)
    ax.set_title("title", fontsize=9)
    assert figure_problems(fig) == ["text 'title' is 6.8 pt at its displayed size, below 7 pt"]
    assert figure_problems(fig, dpi=100) == []  # 9 pt at 100 dpi: 9.4 pt
    fig, ax = _figure(dpi=100)
    ax.text(0.5, 0.5, "small", fontsize=6.5)
    assert figure_problems(fig) == ["text 'small' is 6.8 pt at its displayed size, below 7 pt"]


def test_a_legend_entry_with_nothing_drawn_is_found():
    fig, ax = _figure()
    ax.bar([0, 1], [0.0, 0.0], color="#C44E52", label="activations")  # bars of height 0
    ax.plot([0, 1], [1, 2], color="#4C72B0", label="shown")
    ax.plot([5, 6], [5, 6], color="#55A868", label="out of view")
    ax.set_xlim(-1, 2)
    ax.set_ylim(0, 3)
    ax.legend()
    assert sorted(figure_problems(fig)) == [
        "legend entry 'activations' has nothing drawn in its axes",
        "legend entry 'out of view' has nothing drawn in its axes",
    ]


def test_an_error_bar_without_bars_is_found():
    # lesson 07's H100 fit promised p10–p90 bars that a published log (one time per size) cannot have
    fig, ax = _figure()
    ax.errorbar([1, 2, 3], [1, 2, 3], yerr=np.zeros((2, 3)), fmt="o", label="median, p10–p90")
    ax.legend()
    assert figure_problems(fig) == ["legend entry 'median, p10–p90' has nothing drawn in its axes"]
    ax.errorbar([1, 2, 3], [1, 2, 3], yerr=0.3, fmt="o", label="with spread")
    ax.legend()
    assert figure_problems(fig) == ["legend entry 'median, p10–p90' has nothing drawn in its axes"]


def test_proxy_handles_match_by_colour_or_marker():
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig, ax = _figure()
    ax.scatter([0.5], [0.5], marker="^", color="#4C72B0")
    ax.add_patch(matplotlib.patches.Rectangle((0.1, 0.1), 0.2, 0.2, color="#C44E52"))
    ax.legend(
        handles=[
            Patch(color="#C44E52", label="red box"),
            Line2D([], [], ls="", marker="^", color="#555555", label="triangles, any colour"),
            Patch(color="#55A868", label="green, nowhere"),
            Line2D([], [], ls="", marker="s", color="#555555", label="squares, nowhere"),
        ]
    )
    assert figure_problems(fig) == [
        "legend entry 'green, nowhere' has nothing drawn in its axes",
        "legend entry 'squares, nowhere' has nothing drawn in its axes",
    ]


def test_a_greyed_out_entry_is_left_out_on_purpose():
    fig, ax = _figure()
    ax.plot([0, 1], [0, 1], label="drawn")
    (hidden,) = ax.plot([0, 1], [1, 0], label="needs 2^k ranks")
    hidden.set_visible(False)
    legend = ax.legend()
    assert figure_problems(fig) == ["legend entry 'needs 2^k ranks' has nothing drawn in its axes"]
    legend.get_texts()[1].set_gid(figure_check.NOT_APPLICABLE)
    assert figure_problems(fig) == []


def test_figure_numbers_reads_titles_labels_legends_and_notes_not_ticks():
    fig, ax = _figure()
    ax.plot([0, 1000], [0, 1], label="ring: 3.57 ms at 100 MB")
    ax.legend()
    ax.set_title("GPT-3 175B, d = 16 on 1,024 A100s: 25.4 s, 37.5 %")
    ax.set_xlabel("payload S (bytes)")
    ax.text(0.5, 0.5, "crossover 2.4 MB; ZeRO-1; p10–p90; 2×")
    numbers = ["16", "1,024", "25.4 s", "37.5 %", "2.4 MB", "1", "2×", "3.57 ms", "100 MB"]
    assert sorted(figure_numbers(fig, ignore=("GPT-3 175B",))) == sorted(numbers)
    assert sorted(figure_quantities(fig, ignore=("GPT-3 175B",))) == sorted(set(numbers) - {"16", "1,024", "1"})
    assert sorted(figure_numbers(fig)) == sorted([*numbers, "3"])  # GPT-3's 3 (175B is a name: no space)


# ---- numbers: each one in a figure's text is the computed value ------------------------------------------------------

f_time, f_bytes, f_pct, f_count = units.format_time, units.format_bytes, units.format_percent, units.format_count


def _step_texts(step, title_numbers=()) -> tuple[list, list]:
    """(every value a step timeline may write, those it must): its segments, total, hidden time, thin segments."""
    segments = [step.compute_s, *step.exposed_s.values(), step.bubble_s, *step.overlapped_s.values()]
    hidden = sum(step.overlapped_s.values())
    shown = [f_time(step.total_s), *title_numbers] + ([f_time(hidden)] if hidden > 0 else [])
    return shown + [f_time(s) for s in segments if s > 0], shown


def _search_texts(search, rows) -> list:
    constraints = search.columns["binding_constraint"]
    texts = [str(len(search)), str(int(np.sum(search.feasible))), f_bytes(search.capacity_bytes)]
    texts += [str(int(np.sum(constraints == c))) for c in set(constraints)]
    for row in rows:
        plan = search.row(row)
        texts += [str(row), f_time(plan["step_time_s"])]
        texts += [str(plan[field]) for field in ("data_parallel", "tensor_parallel", "pipeline_parallel")]
        texts += [str(plan["zero_stage"]), str(plan["micro_batch"])]
        texts += [str(plan["virtual_stages"])] if plan["virtual_stages"] > 1 else []
    return texts


def _lesson_01_flops(_ns):
    gpt3, batch = parallelism.GPT3_175B, 1536
    sizes = (batch, gpt3.seq_len, gpt3.layers, gpt3.hidden, gpt3.vocab)
    total = compute.transformer_flops_per_iteration(*sizes, recompute="full")
    parts = compute.transformer_flops_by_part(*sizes, recompute="full")
    texts = [text for part in parts for text in (units.format_flops(part.total_flops), f_pct(part.total_flops / total))]
    return texts + [units.format_flops(total), "3", *map(str, sizes), "2 ×", "1 ×"]  # "Eq. 3", the passes' ×


def _lesson_01_roofline(_ns):
    accelerators = (hardware.H100, hardware.A100, hardware.B200, hardware.TPU_V5E)
    texts = []
    for accelerator in accelerators:
        peak, bandwidth = accelerator.peak("bf16"), accelerator.hbm_bandwidth_bytes_per_s
        texts += [f"{compute.ridge_point_flops_per_byte(peak, bandwidth):.0f} FLOP/byte", units.format_flops_rate(peak)]
    h100 = hardware.H100
    for m in (1, 8, 8192):  # the worked example's GEMMs placed on the roof (M = 128 is left out, lesson 01 says)
        intensity = compute.arithmetic_intensity(compute.gemm_flops(m, 8192, 8192), compute.gemm_bytes(m, 8192, 8192))
        rate = compute.attainable_flops_per_s(intensity, h100.peak("bf16"), h100.hbm_bandwidth_bytes_per_s)
        shown = f"{intensity:,.0f}" if intensity >= 100 else f"{intensity:.3g}"
        texts += [str(m), f"{shown} FLOP/byte", units.format_flops_rate(rate)]
    return texts


def _lesson_01_memory(_ns):
    totals = [
        parallelism.MemoryBreakdown(*parallelism.zero_model_state_breakdown(params, 1, 0), activations=0.0).total
        for params in (1.5e9, 7.5e9, parallelism.GPT3_175B.params)
    ]
    return [f_bytes(hardware.H100.hbm_capacity_bytes), *map(f_bytes, totals)]


def _collective_steps(op, algorithms):
    texts = []
    for algorithm in algorithms:
        cost = collectives.collective_cost(op, 4, demo_inputs(op, 4)[0].nbytes, algorithm)
        texts += [f_bytes(cost.wire_bytes)]
    return lambda _ns: texts


def _lesson_02_time(_ns):
    report = collectives.collective_report("all_reduce", 8, 100 * units.MB, 50 * units.GB, 5 * units.US)
    crossover = collectives.latency_bandwidth_crossover_bytes("all_reduce", 8, 50 * units.GB, 5 * units.US)
    return ["8", "50 GB/s", "5 µs", f_time(report.time_s), "100 MB", f_bytes(crossover)]


def _lesson_03_memory(ns):
    model, capacity = parallelism.GPT3_175B, hardware.A100.hbm_capacity_bytes
    totals = [parallelism.memory_breakdown(model, plan, calibration=None).total for plan in ns["PLANS"].values()]
    # The axis ends at 1.2 × the largest of the capacity and the totals within 2.5× it; a bar above it is drawn
    # shrunk to it, "at 1/N scale" (N = total / axis top, two significant digits).
    top = 1.2 * max([capacity] + [total for total in totals if total <= 2.5 * capacity])
    scales = [f"{total / top:.2g}" for total in totals if total > top]
    assert scales, "lesson 03's figure has a bar above its axis: the check of its scale must be able to fail"
    scales = [scale for scale in scales if not scale.isdigit()]  # "1/26": a bare number, which quantities skip
    return [f_bytes(capacity)] + [f_bytes(total) for total in totals] + scales


def _lesson_03_schedules(_ns):
    bubbles = [parallelism.pipeline_bubble_fraction(4, 8, v) for v in (1, 1, 2)]
    return ["10 ms"] + [f_pct(bubble) for bubble in bubbles]


def _lesson_10_serving(_ns):
    step = serving.decode_step(parallelism.LLAMA3_70B, hardware.DGX_H100, 8, 1, 64, 4096)
    return ["64", f_time(step.time_per_output_token_s), f_count(step.tokens_per_s_per_device)]


def _lesson_10_sweep(_ns):
    # Step 10's point (64 users) and knee, simulated again: 4 requests per user, at least 16 (the scheduler's
    # default for a sweep), at each power of 2 up to 512
    llama, node = parallelism.LLAMA3_70B, hardware.DGX_H100
    cost = serving.iteration_time(llama, node, 8, weights="fp8", kv_cache="fp8")
    blocks = serving.kv_cache_blocks(llama, node.accelerator, 8, weights="fp8", kv_cache="fp8")
    runs = {
        users: serving.simulate_engine(
            cost,
            kv_blocks=blocks,
            prompt_tokens=2048,
            output_tokens=128,
            requests=max(4 * users, 16),
            concurrency=users,
        )
        for users in (2**k for k in range(10))
    }
    rates = {users: run.output_tokens_per_s for users, run in runs.items()}
    knee = min(users for users, rate in rates.items() if rate >= 0.9 * max(rates.values()))
    point = runs[64]
    return ["64", f_time(point.median_ttft_s), f_time(point.median_itl_s), f_count(point.output_tokens_per_s),
            f_count(point.output_tokens_per_s / 8), str(knee), f_pct(0.9)]  # fmt: skip


def _lesson_04_step(ns):
    plan, cluster = ns["PLAN"], hardware.SELENE_3072
    step = budget.step_time(parallelism.GPT3_175B, plan, cluster, calibration=None)
    sizes = [plan.data_parallel, plan.tensor_parallel, plan.pipeline_parallel, plan.devices]
    return _step_texts(step, [str(size) for size in sizes])


def _lesson_04_scaling(ns):
    possible, required = [], []
    for devices in (8, 256, 3072):
        d = devices // 8  # the strong-scaling plan at that size (not the lesson's `plan`, which later cells rebind)
        plan = parallelism.ParallelPlan(
            data_parallel=d,
            tensor_parallel=8,
            zero_stage=1,
            micro_batch=1,
            grad_accum_steps=ns["SCALING_BATCH"] // d,
            recompute="selective",
            sequence_parallel=True,
        )
        step = budget.step_time(ns["SCALING_MODEL"], plan, hardware.SELENE_3072, calibration=None)
        title = [str(devices), f_time(step.total_s), f_pct(step.exposed_communication_s / step.total_s)]
        some, must = _step_texts(step, title)
        possible, required = possible + some, required + must
    return possible, required


def _lesson_10_payload(_ns):
    cluster = hardware.SELENE_3072
    bandwidth, latency = cluster.intra_bandwidth_bytes_per_s, cluster.intra_node_link.latency_s
    payload = parallelism.ACTIVATION_BYTES * parallelism.GPT3_175B.hidden
    time = collectives.collective_time("all_reduce", 8, payload, bandwidth, latency, "ring")
    crossover = collectives.latency_bandwidth_crossover_bytes("all_reduce", 8, bandwidth, latency)
    return ["8", units.format_bandwidth(bandwidth), f_time(latency), f_time(time), f_bytes(payload), f_bytes(crossover)]


def _lesson_05_landscape(ns):
    search = budget.search_plans(parallelism.MEGATRON_1T, hardware.SELENE_3072, global_batch=3072, memory_margin=0.0)
    paper = search.find(**{name: getattr(ns["paper_plan"], name) for name in budget.PLAN_FIELDS})  # the paper's plan
    return _search_texts(search, (0, paper))


def _lesson_07_sweep(ns):
    fit = measure.fit_alpha_beta(ns["recorded"].select(algorithm="ring"))
    rate = units.format_bandwidth(fit.bandwidth_bytes_per_s)
    return [f_bytes(fit.crossover_bytes), str(fit.ranks), f_time(fit.latency_s), rate]


def _lesson_07_step(ns):
    step = ns["steps"]["device"]
    texts = [f_time(seconds) for seconds in step.exposed_s.values()]
    return texts + [
        str(step.ranks),
        units.format_flops(step.backward_flops),
        f_bytes(step.gradient_bytes, binary=True),
        str(step.buckets),
    ]


def _lesson_08_reference_surface(ns):
    """The reference's loss surface: too many cells to write each loss in; its title counts the fitted runs."""
    replay = published_runs.replay_published_runs(ns["published"])
    return [str(int(np.sum(~ns["published"].held_out & replay.replayed)))]


def _lesson_08_healthy(ns):
    """The median predicted/measured MFU by nodes of the held-out runs, all and healthy; the nodes' 8 × H100."""
    replay, held = validation.replay_runs(ns["runs"]), ns["HELD_OUT"]
    healthy = held & validation.healthy_runs(ns["runs"])
    groups = [validation.residuals_by(replay, "nodes", rows) for rows in (held, healthy)]
    medians = [median for group in groups for median, *_ in group.values()]
    return [f"{median:.2g}×" for median in medians] + [f"{validation.PLAYBOOK_CLUSTER_NODE.devices} ×"]


def _lesson_09_landscape(ns):
    # the default search (the reference's margin and band); marked: row 0 (recommended), the fastest plan without the
    # margin, the candidate
    model, cluster, batch, cal = ns["MODEL"], ns["CLUSTER"], ns["GLOBAL_BATCH"], ns["CAL"]
    search = budget.search_plans(model, cluster, batch, calibration=cal, attention=("flash",))
    bare = budget.search_plans(model, cluster, batch, calibration=cal, attention=("flash",), memory_margin=0.0)
    candidate = search.find(**{name: getattr(ns["CANDIDATE"], name) for name in budget.PLAN_FIELDS})
    return _search_texts(search, (0, search.find(**bare.fields(0)), candidate))


def _lesson_00_map(_ns):
    """The map's numbers: the lessons, lesson 08's runs that ran, and lesson 09's GPUs ("70B on 64 H100s")."""
    capstone = lesson_figures("09_capstone")[1]
    runs = int(np.sum(validation.load_playbook_runs().succeeded))
    numbers = [lesson[:2] for lesson in LESSONS if lesson[:2].isdigit() and lesson[:2] != "00"]  # 01, 02, ...
    return numbers + [f"{runs:,}", str(capstone["CLUSTER"].devices)]


def _lesson_06_memory(_ns):
    model = dataclasses.replace(parallelism.LLAMA3_8B, seq_len=524288)
    plan = parallelism.ParallelPlan(
        tensor_parallel=8, sequence_parallel=True, attention="flash", recompute="full", zero_stage=1
    )
    totals = [parallelism.memory_breakdown(model, plan.replace(context_parallel=c)).total for c in (1, 2, 4, 8)]
    return [f_bytes(hardware.H100.hbm_capacity_bytes), *map(f_bytes, totals)]


def _lesson_06_schedules(_ns):
    # (p − 1)(t_F + t_B ± t_W) over m(t_f + t_b) with t_F = t_B = t_W = 1 (1F1B, ZB-H1); ZB-H2: 0 unsynchronised
    return [f_pct(3 * 3 / 24), f_pct(3 * 1 / 24), f_pct(0.0)]


# (lesson, heading, index under it) → (function of the lesson's namespace giving the values, or (possible,
# required), "numbers" or "quantities" (a diagram's bare numbers are names: ranks, chunks, micro-batches), names
# whose digits are no numbers).
FIGURE_NUMBERS = {
    ("00_course_map", "The chain of lessons", 0): (_lesson_00_map, "numbers", ()),
    ("01_mac", "Figures", 0): (_lesson_01_flops, "numbers", ()),
    ("01_mac", "Figures", 1): (_lesson_01_roofline, "numbers", (hardware.H100.name, hardware.A100.name)),
    ("01_mac", "Figures", 2): (_lesson_01_memory, "quantities", ("GPT-3 175B",)),
    ("02_nccl", "Ring all-reduce, step by step", 0): (lambda _ns: [], "quantities", ()),
    ("02_nccl", "Algorithms for all-reduce", 0): (
        _collective_steps("all_reduce", ["ring", "binomial_tree", "recursive_doubling", "rabenseifner"]),
        "quantities",
        (),
    ),
    ("02_nccl", "Figures", 0): (lambda _ns: [], "quantities", ()),  # four collectives' data, before and after
    ("02_nccl", "Figures", 1): (_lesson_02_time, "numbers", ()),
    ("03_parallelism", "Mechanism", 0): (lambda _ns: [], "quantities", ()),
    ("03_parallelism", "Inside one layer: how tensor parallelism splits it, and sequence parallelism", 0): (
        lambda _ns: [],
        "quantities",
        (),
    ),
    ("03_parallelism", "Per-device memory against an 80 GB A100", 0): (_lesson_03_memory, "quantities", ()),
    ("03_parallelism", "Pipeline schedules as timelines", 0): (_lesson_03_schedules, "quantities", ()),
    ("04_communication_budget", "One step of the GPT-3 plan", 0): (
        _lesson_04_step,
        "numbers",
        ("GPT-3 175B", hardware.SELENE_3072.accelerator.name),
    ),
    ("04_communication_budget", "Strong scaling: the same step at 8, 256 and 3072 GPUs", 0): (
        _lesson_04_scaling,
        "numbers",
        (),
    ),
    ("05_plan_search", "The plan landscape", 0): (_lesson_05_landscape, "numbers", ()),
    ("06_sequences_and_experts", "Memory per GPU at 524,288 tokens", 0): (
        _lesson_06_memory,
        "quantities",
        (parallelism.LLAMA3_8B.name,),
    ),
    ("06_sequences_and_experts", "1F1B, ZB-H1 and ZB-H2", 0): (_lesson_06_schedules, "quantities", ()),
    ("07_measure", "The recorded ring sweep against its fit", 0): (_lesson_07_sweep, "numbers", ()),
    ("07_measure", "MPICH's algorithms side by side (recorded)", 0): (lambda _ns: ["2"], "numbers", ()),
    ("07_measure", "Where the step's time goes (recorded, modelled accelerator)", 0): (
        _lesson_07_step,
        "numbers",
        (),
    ),
    ("08_model_meets_measurements", "The reference calibration: measured, cited, fitted", 0): (
        _lesson_08_reference_surface,
        "numbers",
        (),
    ),
    ("08_model_meets_measurements", "Step 8 · How to recognise a sick cluster", 0): (
        _lesson_08_healthy,
        "numbers",
        ("8B", "80B"),
    ),
    ("08_model_meets_measurements", "The reference against published runs", 0): (
        lambda _ns: [f_pct(published_runs.MEDIAN_ERROR_TARGET)],  # the dashed band's ±15 %
        "numbers",
        ("BF16", "FP8"),
    ),
    ("08_model_meets_measurements", "The case study: predicted against measured MFU", 0): (
        lambda _ns: [f_pct(0.001), "1", "2", "4", "8", "16", "32", "64"],  # MFU's printed step; the node groups
        "numbers",
        ("1B", "3B", "8B", "80B"),
    ),
    ("09_capstone", "The plan landscape", 0): (_lesson_09_landscape, "numbers", ()),
    ("10_serving", "Step 4 · Latency against throughput", 0): (_lesson_10_serving, "numbers", ()),
    ("10_serving", "Step 10 · The concurrency sweep: latency, throughput and the knee", 0): (
        _lesson_10_sweep,
        "numbers",
        (),
    ),
    ("10_serving", "Latency-bound and bandwidth-bound all-reduce on NVLink", 0): (_lesson_10_payload, "numbers", ()),
}


def _indexed(figures):
    counts: dict = {}
    for heading, fig in figures:
        index = counts[heading] = counts.get(heading, -1) + 1
        yield heading, index, fig


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS)
def test_every_number_in_a_lesson_figure_is_the_computed_value(lesson):
    figures, namespace = lesson_figures(lesson)
    failures = []
    for heading, index, fig in _indexed(figures):
        key = (lesson, heading, index)
        assert key in FIGURE_NUMBERS, f"{key}: a figure whose numbers no entry of FIGURE_NUMBERS works out"
        expected, kind, names = FIGURE_NUMBERS[key]
        values = expected(namespace)
        possible, required = values if isinstance(values, tuple) else (values, values)
        found = (figure_quantities if kind == "quantities" else figure_numbers)(fig, ignore=names)
        unexpected = sorted(set(found) - set(possible))
        missing = sorted(set(required) - set(found))
        if unexpected or missing:
            failures.append(f"{heading} (figure {index}): not computed {unexpected}, computed but not shown {missing}")
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_a_rebound_name_in_a_title_is_caught():
    # lesson 04's bug: the step timeline titled "GPT-3 175B, ... on 1024 A100s" drew the 1T model's step (1.99 min)
    from course_lib.viz import plot_step_timeline

    ns = {"PLAN": lesson_figures("04_communication_budget")[1]["PLAN"]}
    possible, required = _lesson_04_step(ns)
    wrong = budget.step_time(parallelism.MEGATRON_1T, lesson_figures("05_plan_search")[1]["paper_plan"],
                             hardware.SELENE_3072, calibration=None)  # fmt: skip
    ax = plot_step_timeline(wrong, title=f"GPT-3 175B, d = 16, t = 8, p = 8 on 1024 GPUs: {f_time(wrong.total_s)}")
    found = figure_numbers(ax.figure, ignore=("GPT-3 175B",))
    assert set(found) - set(possible) and set(required) - set(found)


# ---- numbers in the labs' figures ------------------------------------------------------------------------------------


def _texts(fig) -> str:
    return " | ".join(text.text for text in figure_check.drawn_texts(fig)[0] if text.role != "tick label")


def test_the_partition_explorer_shows_its_report():
    lab = _factory("partition_lab")(tensor_parallel=16)
    shown = lab.typed_result
    # again, from what the lab shows, with the calibrated model's memory margin (the reference's: +52.1 %)
    margin = parallelism.REFERENCE_CALIBRATION.memory_margin
    report = budget.partition_report(shown.model, shown.plan, shown.cluster, memory_margin=margin)
    possible = [
        *map(f_bytes, (getattr(report.memory, c) for c in ("parameters", "gradients", "optimizer_state"))),
        *map(f_bytes, (report.memory.activations, report.memory.logits, report.memory.framework, report.memory.total)),
        f_bytes(report.capacity_bytes),
        f_bytes(report.memory.total * (1 + margin)),
        f_time(report.step.total_s),
        f_count(report.tokens_per_s),
        f_pct(report.step.mfu),
        *(f_time(s) for s in (report.step.compute_s, report.step.bubble_s, *report.step.exposed_s.values())),
    ]
    quantities = figure_quantities(lab.figure, ignore=(lab.typed_result.cluster.accelerator.name,))
    for row in report.transfers:
        possible += [f_bytes(row.transfer.payload_bytes), f_time(row.time_s), f_time(row.exposed_s)]
    every = sum(row.time_s for row in report.transfers)
    possible += [f_time(every), f_time(every - sum(row.exposed_s for row in report.transfers))]
    assert set(quantities) <= set(possible), _texts(lab.figure)
    assert {f_time(report.step.total_s), f_bytes(report.memory.total)} <= set(quantities)
    assert "nodes 10–11" not in _texts(lab.figure) and "10–11" in _texts(lab.figure)


def test_the_serving_lab_shows_its_step():
    lab = _factory("serving_lab")(pipeline_parallel=2)
    r = lab.typed_result
    step = serving.decode_step(r.model, r.cluster, r.tensor_parallel, r.pipeline_parallel, r.sequences, r.context_len)
    tpot, rate = f_time(step.time_per_output_token_s), f_count(step.tokens_per_s_per_device)
    expected = [str(r.sequences), tpot, rate, str(r.tensor_parallel), str(r.pipeline_parallel), str(r.sequences)]
    assert sorted(figure_numbers(lab.figure)) == sorted([*expected, tpot, tpot])
    key = lab.breakdown_figure.key_labels.get_texts()  # the key names the segments the step has, hops at p = 2
    assert (
        key[-1] == "pipeline hops"
        and "pipeline hops" not in _factory("serving_lab")().breakdown_figure.key_labels.get_texts()
    )
