"""course_lib.viz.memory_budget, memory per device in lessons 01 and 03 and lab 3's live figure: what each figure
holds (bars, labels, scales, texts), never pixels, and that a live figure updated twice matches one built at once."""

import dataclasses

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from lab_checks import assert_updates_match_a_fresh_build
from matplotlib.figure import Figure

from course_lib import hardware, parallelism, units
from course_lib.parallelism import GPT3_175B, ParallelPlan, memory_breakdown
from course_lib.viz.memory_budget import (
    MEMORY_COMPONENTS,
    MODEL_MEMORY_COMPONENTS,
    MemoryBarsFigure,
    MemoryBudgetFigure,
    memory_components_of,
    plot_memory_breakdown,
)

# ---- memory breakdown ---------------------------------------------------------------------------------------------


def _gpt3_breakdowns():
    return {
        "d=64": memory_breakdown(GPT3_175B, ParallelPlan(data_parallel=64), calibration=None),
        "d=64 ZeRO-3": memory_breakdown(
            GPT3_175B, ParallelPlan(data_parallel=64, zero_stage=3, recompute="full"), calibration=None
        ),
        "t=8 p=8 d=8": memory_breakdown(
            GPT3_175B,
            ParallelPlan(data_parallel=8, tensor_parallel=8, pipeline_parallel=8, grad_accum_steps=64),
            calibration=None,
        ),
        "t=8 p=8 d=8 ZeRO-1": memory_breakdown(
            GPT3_175B,
            ParallelPlan(
                data_parallel=8,
                tensor_parallel=8,
                pipeline_parallel=8,
                zero_stage=1,
                grad_accum_steps=64,
                recompute="selective",
                sequence_parallel=True,
            ),
            calibration=None,
        ),
    }


def test_memory_bars_stack_the_breakdown_fields():
    breakdowns = _gpt3_breakdowns()
    capacity = hardware.A100.hbm_capacity_bytes
    ax = plot_memory_breakdown(breakdowns, capacity_bytes=capacity)
    fields = ["parameters", "gradients", "optimizer_state", "activations"]
    assert [c.get_label() for c in ax.containers] == ["parameters", "gradients", "optimizer state", "activations"]
    bottoms = np.zeros(len(breakdowns))
    # a bar above the axis is drawn shrunk to its height, each component at its share (the others at true height)
    scales = [min(1.0, ax.get_ylim()[1] / b.total) for b in breakdowns.values()]
    assert min(scales) < 1 and max(scales) == 1
    for container, field in zip(ax.containers, fields, strict=True):
        heights = [bar.get_height() for bar in container]
        assert heights == pytest.approx(
            [s * getattr(b, field) for s, b in zip(scales, breakdowns.values(), strict=True)]
        )
        assert [bar.get_y() for bar in container] == pytest.approx(bottoms)
        bottoms += heights
    assert bottoms == pytest.approx([s * b.total for s, b in zip(scales, breakdowns.values(), strict=True)])
    line = next(line for line in ax.lines if line.get_gid() == "capacity")
    assert line.get_visible() and list(line.get_ydata()) == [capacity, capacity]
    texts = [t.get_text() for t in ax.texts if t.get_visible()]
    assert any("80 GB" in t for t in texts)
    over = [b.total > capacity for b in breakdowns.values()]
    assert over == [True, False, True, False]
    assert sum("does not fit" in t for t in texts) == sum(over)
    assert len([p for p in ax.patches if p.get_gid() == "over-capacity" and p.get_visible()]) == sum(over)
    for breakdown in breakdowns.values():
        assert any(units.format_bytes(breakdown.total) in t for t in texts)
    assert [t.get_text() for t in ax.get_xticklabels()] == list(breakdowns)
    assert ax.get_ylim()[1] < breakdowns["d=64"].total  # the 3 TB bar is off scale, the others readable
    assert "bytes" in ax.get_ylabel()


def test_memory_bars_without_capacity():
    breakdowns = dict(list(_gpt3_breakdowns().items())[1:])
    ax = plot_memory_breakdown(breakdowns)
    assert not [line for line in ax.lines if line.get_gid() == "capacity" and line.get_visible()]
    assert not any("does not fit" in t.get_text() for t in ax.texts if t.get_visible())
    assert not any("capacity" in t.get_text() for t in ax.texts if t.get_visible())
    assert ax.get_ylim()[1] > max(b.total for b in breakdowns.values())


@pytest.mark.parametrize(
    "breakdowns, capacity, parameter",
    [
        ({}, None, "breakdowns"),
        ([1, 2], None, "breakdowns"),
        ({"a": 3.0}, None, "breakdowns"),
        ({"a": parallelism.MemoryBreakdown(np.ones(2), 1.0, 1.0, 1.0)}, None, "breakdowns"),
        ({"a": parallelism.MemoryBreakdown(1.0, 1.0, 1.0, 1.0)}, 0, "capacity_bytes"),
        ({"a": parallelism.MemoryBreakdown(1.0, 1.0, 1.0, 1.0)}, "80 GB", "capacity_bytes"),
    ],
)
def test_memory_bad_input(breakdowns, capacity, parameter):
    with pytest.raises(ValueError, match=parameter):
        plot_memory_breakdown(breakdowns, capacity_bytes=capacity)


def test_memory_bars_stack_every_component_a_breakdown_reports():
    # A hand-made breakdown: 10 + 5 + 20 + 8 + 3 + 2 = 48 GB, every field of MemoryBreakdown in the stack.
    hand = parallelism.MemoryBreakdown(10e9, 5e9, 20e9, 8e9, logits=3e9, framework=2e9)
    assert set(MEMORY_COMPONENTS) == {f.name for f in dataclasses.fields(parallelism.MemoryBreakdown)}
    ax = plot_memory_breakdown({"hand": hand, "model only": parallelism.MemoryBreakdown(1e9, 1e9, 1e9, 1e9)})
    assert [c.get_label() for c in ax.containers] == list(MEMORY_COMPONENTS.values())
    assert [c[0].get_height() for c in ax.containers] == [10e9, 5e9, 20e9, 8e9, 3e9, 2e9]
    top = ax.containers[-1][0]
    assert top.get_y() + top.get_height() == pytest.approx(48e9)
    assert [c[1].get_height() for c in ax.containers][4:] == [0.0, 0.0]
    assert "48 GB" in [t.get_text() for t in ax.texts]
    assert [t.get_text() for t in ax.get_legend().get_texts()][4:] == ["logits", "framework"]
    plt.close("all")


def test_memory_bars_of_a_calibrated_breakdown_reach_its_total():
    plan = ParallelPlan(tensor_parallel=8, pipeline_parallel=8, data_parallel=8, zero_stage=1)
    calibrated = memory_breakdown(GPT3_175B, plan, calibration=parallelism.Calibration())
    assert calibrated.logits > 0  # the component the model-state bars used to leave out
    assert memory_components_of([calibrated]) == (*MODEL_MEMORY_COMPONENTS, "logits")
    ax = plot_memory_breakdown({"calibrated": calibrated}, capacity_bytes=80e9)
    stack_top = sum(c[0].get_height() for c in ax.containers)
    assert stack_top == pytest.approx(calibrated.total, rel=1e-12)
    assert stack_top - calibrated.model_states - calibrated.activations == pytest.approx(calibrated.logits)
    plt.close("all")


def test_memory_bars_scale_ticks_and_selection():
    # 10 + 5 + 20 + 13 = 48 GB against 80 GB: the axis ends at 1.2 × 80 GB = 96 GB, ticks every 20 GB.
    ax = Figure().add_subplot()
    live = MemoryBarsFigure(ax, ["a", "b"])
    small = parallelism.MemoryBreakdown(10e9, 5e9, 20e9, 13e9)
    live.update([small, parallelism.MemoryBreakdown(1e12, 0.0, 0.0, 0.0)], capacity_bytes=80e9, selected=0)
    assert ax.get_ylim() == pytest.approx((0, 96e9))
    shown = [t.get_text() for t in live.y_tick_labels if t.get_visible()]
    assert shown == ["0", "20 GB", "40 GB", "60 GB", "80 GB"]
    assert list(live.y_tick_marks.get_ydata()) == [0, 20e9, 40e9, 60e9, 80e9]
    assert [t.get_text() for t in live.totals] == ["48 GB", "↑ 1 TB\nat 1/10 scale\ndoes not fit"]
    # the 1 TB bar is drawn at the axis height, 96 GB, all parameters (its one component)
    assert sum(bar.get_height() for bar in live.stacks[1]) == pytest.approx(96e9)
    assert live.totals[1].get_position()[1] == pytest.approx(0.98 * 96e9)
    assert [o.get_visible() for o in live.over_outlines] == [False, True]
    outline = live.selected_outline
    assert outline.get_visible() and (outline.get_x(), outline.get_height()) == pytest.approx((-0.3, 48e9))
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"] and "bytes" in ax.get_ylabel()
    live.update([small, small])  # no capacity, nothing selected: 1.18 × the tallest bar
    assert ax.get_ylim() == pytest.approx((0, 1.18 * 48e9))
    assert not live.capacity_line.get_visible() and not live.selected_outline.get_visible()
    assert not any(o.get_visible() for o in live.over_outlines)


def test_a_bar_above_the_axis_shows_every_component_at_its_share():
    # Lesson 03's DP 64 plan of GPT-3 175B (2.8 TB) beside plans near 80 GB: cut at the axis top, its bar showed only
    # its parameters; shrunk to the axis, its optimizer state (12 of its 16 bytes per parameter) shows as 3/4 of it.
    ax = Figure().add_subplot()
    live = MemoryBarsFigure(ax, ["small", "DP 64"])
    huge = parallelism.MemoryBreakdown(350e9, 350e9, 2100e9, 0.0)
    live.update([parallelism.MemoryBreakdown(10e9, 5e9, 20e9, 13e9), huge], capacity_bytes=80e9)
    top = ax.get_ylim()[1]
    heights = [bar.get_height() for bar in live.stacks[1]]
    assert sum(heights) == pytest.approx(top) and heights[2] / sum(heights) == pytest.approx(0.75)
    assert live.totals[1].get_text() == "↑ 2.8 TB\nat 1/29 scale\ndoes not fit"


def test_memory_figure_refuses_to_leave_a_component_out():
    plan = ParallelPlan(tensor_parallel=8, data_parallel=8)  # no pipeline: every ZeRO stage is allowed
    calibrated = [
        memory_breakdown(GPT3_175B, plan.replace(zero_stage=stage), calibration=parallelism.Calibration())
        for stage in range(4)
    ]
    _, live = _memory_figure()
    with pytest.raises(ValueError, match="logits"):
        live.update(calibrated, 1, 80e9)
    figure = Figure(figsize=(9, 4), dpi=72)
    live = MemoryBudgetFigure(
        figure.add_axes((0.1, 0.2, 0.44, 0.63)),
        figure.add_axes((0.71, 0.2, 0.26, 0.63)),
        ["ZeRO-0", "ZeRO-1", "ZeRO-2", "ZeRO-3"],
        components=memory_components_of(calibrated),
    )
    live.update(calibrated, 1, 80e9)
    for bars, breakdown, scale in zip(live.bars.stacks, calibrated, live.bars.scales, strict=True):
        assert bars[-1].get_y() + bars[-1].get_height() == pytest.approx(scale * breakdown.total, rel=1e-12)
    assert len(live.log_bars) == 6  # five components and the total
    assert live.log_bars[4].get_x() + live.log_bars[4].get_width() == pytest.approx(calibrated[1].logits)
    with pytest.raises(ValueError, match="components"):
        MemoryBarsFigure(Figure().add_subplot(), ["a"], ("parameters", "kv_cache"))
    with pytest.raises(ValueError, match="one breakdown per plan"):
        live.update(calibrated[:2], 1, 80e9)


# ---- the lab's live figure -----------------------------------------------------------------------------------------


def _memory_figure(**options):
    figure = Figure(figsize=(9, 4), dpi=72)
    live = MemoryBudgetFigure(
        figure.add_axes((0.1, 0.2, 0.44, 0.63)),
        figure.add_axes((0.71, 0.2, 0.26, 0.63)),
        ["ZeRO-0", "ZeRO-1", "ZeRO-2", "ZeRO-3"],
        **options,
    )
    return figure, live


def _memory(plan, selected, capacity_bytes, model=GPT3_175B):
    breakdowns = [memory_breakdown(model, plan.replace(zero_stage=stage), calibration=None) for stage in range(4)]
    return lambda live: live.update(breakdowns, selected, capacity_bytes), breakdowns


def test_memory_figure_updated_twice_draws_what_a_fresh_one_draws():
    plan = ParallelPlan(tensor_parallel=8, pipeline_parallel=8, data_parallel=8, recompute="selective")
    first, _ = _memory(plan, 1, 80e9)
    second, _ = _memory(ParallelPlan(data_parallel=64), 3, 32e9, parallelism.GPT2_1_5B)
    assert_updates_match_a_fresh_build(_memory_figure, first, second)


def test_memory_figure_stacks_are_the_breakdowns():
    _, live = _memory_figure()
    draw, breakdowns = _memory(ParallelPlan(data_parallel=64), 2, 32e9, parallelism.GPT2_1_5B)
    draw(live)
    assert live.bars.components == MODEL_MEMORY_COMPONENTS
    for bars, breakdown, scale in zip(live.bars.stacks, breakdowns, live.bars.scales, strict=True):
        heights = [getattr(breakdown, field) for field in MODEL_MEMORY_COMPONENTS]
        drawn = [scale * height for height in heights]  # a bar above the axis is shrunk to it
        assert [bar.get_height() for bar in bars] == pytest.approx(drawn, rel=1e-12)
        assert [bar.get_y() for bar in bars] == pytest.approx(np.cumsum([0.0, *drawn[:-1]]), rel=1e-12)
        assert sum(heights) == pytest.approx(breakdown.total, rel=1e-12)  # nothing left out of the stack
    assert live.stack_ax.get_ylim() == (0, 64e9) and live.bars.capacity_line.get_ydata()[0] == 32e9
    assert live.bars.selected_outline.get_visible() and live.bars.selected_outline.get_x() == pytest.approx(1.7)
    assert [bars[0].get_alpha() for bars in live.bars.stacks] == [0.4, 0.4, 1.0, 0.4]
    fits = breakdowns[2].total <= 32e9
    headroom = units.format_bytes(abs(32e9 - breakdowns[2].total))
    assert live.verdict.get_text() == (f"fits, {headroom} headroom" if fits else f"does not fit by {headroom}")


# ---- a plan a framework does not run: an empty, labelled slot ------------------------------------------------------


def _nanotron(plan, selected, capacity_bytes):
    """Lab 3's figure for ``plan`` under nanotron: every stage it runs, None for the others."""
    report = parallelism.memory_budget_report(GPT3_175B, plan, hardware.A100, framework="nanotron")
    label = "not run by nanotron\nwith a pipeline"
    return (lambda live: live.update(report.by_zero_stage, selected, capacity_bytes, label)), report


def _full_memory_figure():
    """Lab 3's: every component, the margin, a legend of four columns."""
    return _memory_figure(components=tuple(MEMORY_COMPONENTS), memory_margin=0.384, legend_columns=4)


def test_memory_figure_draws_a_stage_not_run_as_a_labelled_empty_slot():
    plan = ParallelPlan(data_parallel=8, tensor_parallel=8, pipeline_parallel=8, grad_accum_steps=64)
    draw, report = _nanotron(plan, 2, 80e9)
    assert report.supported == (True, True, False, False)
    _, live = _full_memory_figure()
    draw(live)
    bars = live.bars
    assert [slot.get_visible() for slot in bars.empty_slots] == [False, False, True, True]
    assert [slot.get_height() for slot in bars.empty_slots[2:]] == pytest.approx([0.9 * 160e9] * 2)
    assert [slot.get_gid() for slot in bars.empty_slots] == ["not-run"] * 4
    assert [t.get_text() for t in bars.empty_texts[2:]] == ["not run by nanotron\nwith a pipeline"] * 2
    assert [t.get_visible() for t in bars.totals] == [True, True, False, False]
    assert all(bar.get_height() == 0.0 for stack in bars.stacks[2:] for bar in stack)
    first = report.by_zero_stage[0]
    assert first is not None
    assert sum(bar.get_height() for bar in bars.stacks[0]) == pytest.approx(bars.scales[0] * first.total, rel=1e-12)
    assert bars.selected_outline.get_height() == pytest.approx(0.9 * 160e9)  # the empty slot, outlined
    assert live.verdict.get_text() == "not run by nanotron with a pipeline"
    assert live.log_missing.get_visible() and all(bar.get_width() == 0.0 for bar in live.log_bars)
    # Selecting a stage that runs brings its verdict and its components back; the slots stay.
    live.update(report.by_zero_stage, 1, 80e9, "not run by nanotron\nwith a pipeline")
    assert live.verdict.get_text().startswith("fits, ") and not live.log_missing.get_visible()
    assert [slot.get_visible() for slot in bars.empty_slots] == [False, False, True, True]
    ax = plot_memory_breakdown({"a": parallelism.MemoryBreakdown(1.0, 1.0, 1.0, 1.0)})
    assert not any(p.get_visible() for p in ax.patches if p.get_gid() == "not-run")
    plt.close("all")


def test_memory_figure_with_empty_slots_updated_twice_draws_what_a_fresh_one_draws():
    plan = ParallelPlan(data_parallel=8, tensor_parallel=8, pipeline_parallel=8, grad_accum_steps=64)
    first, _ = _memory(plan, 3, 80e9)
    second, _ = _nanotron(plan.replace(recompute="selective"), 3, 80e9)
    assert_updates_match_a_fresh_build(_full_memory_figure, first, second)
    assert_updates_match_a_fresh_build(_full_memory_figure, second, first)
