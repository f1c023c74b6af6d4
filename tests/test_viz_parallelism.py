"""course_lib.viz.parallelism, the figures of lesson 03 and the labs' live figures: what each figure holds (artists,
labels, scales, texts), never pixels, and that a live figure updated twice matches one built at once."""

import dataclasses
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from lab_checks import assert_updates_match_a_fresh_build
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

from course_lib import hardware, parallelism, units
from course_lib.parallelism import GPT3_175B, ParallelPlan, memory_breakdown
from course_lib.pipeline import pipeline_schedule
from course_lib.viz.parallelism import (
    MEMORY_COMPONENTS,
    MODEL_MEMORY_COMPONENTS,
    ComparisonBarsFigure,
    GlobalBatchFigure,
    MemoryBarsFigure,
    MemoryBudgetFigure,
    PipelineScheduleFigure,
    box_edge_width,
    memory_components_of,
    microbatch_label_size,
    plot_memory_breakdown,
    plot_parallelism_splits,
    plot_pipeline_schedule,
    plot_tensor_parallel_layer,
    schedule_title,
)
from course_lib.viz.style import COLORS


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


# ---- pipeline Gantt chart -----------------------------------------------------------------------------------------


def _gantt_boxes(ax) -> dict:
    """(kind, chunk) -> (patch, its boxes as (start, end, stage) rows, sorted): the visible boxes of a Gantt chart on
    ``ax``, read back from the paths of its patches (gid "pipeline-<kind>-chunk<c>")."""
    boxes = {}
    for patch in ax.patches:
        gid = str(patch.get_gid())
        if gid.startswith(("pipeline-forward-", "pipeline-backward-")) and patch.get_visible():
            _, kind, chunk = gid.split("-")
            corners = patch.get_path().vertices.reshape(-1, 5, 2)
            rows = np.column_stack([corners[:, 0, 0], corners[:, 1, 0], corners[:, :4, 1].mean(axis=1)])
            boxes[kind, int(chunk.removeprefix("chunk"))] = (patch, rows[np.lexsort(rows.T[::-1])])
    return boxes


def _gantt_texts(ax, gid) -> list:
    return [text for text in ax.texts if text.get_gid() == gid and text.get_visible()]


def _expected_boxes(timeline) -> dict:
    """(kind, chunk) -> the timeline's ops as (start, end, stage) rows in units of t_f, sorted."""
    expected = {}
    for op in timeline.ops:
        row = (op.start_s / timeline.forward_time_s, op.end_s / timeline.forward_time_s, float(op.stage))
        expected.setdefault((op.kind, op.chunk), []).append(row)
    return {key: np.array(sorted(rows)) for key, rows in expected.items()}


@pytest.mark.parametrize(
    "p, m, schedule, v, title, legend",
    [
        (4, 8, "1f1b", 1, "1F1B, p = 4, m = 8: bubble 37.5 %", ["forward", "backward", "idle (bubble)"]),
        (
            4,
            8,
            "interleaved",
            2,
            "Interleaved 1F1B, p = 4, v = 2, m = 8: bubble 18.8 %",
            ["forward, chunks 1, 2", "backward, chunks 1, 2", "idle (bubble)"],
        ),
        (4, 4, "gpipe", 1, "GPipe, p = 4, m = 4: bubble 75 %", ["forward", "backward", "idle (bubble)"]),
    ],
)
def test_gantt_has_one_box_per_op_at_its_times(p, m, schedule, v, title, legend):
    timeline = pipeline_schedule(p, m, schedule, v)
    ax = plot_pipeline_schedule(timeline)
    drawn, expected = _gantt_boxes(ax), _expected_boxes(timeline)
    assert sorted(drawn) == sorted(expected) == [(kind, c) for kind in ("backward", "forward") for c in range(v)]
    for key, rows in expected.items():
        np.testing.assert_allclose(drawn[key][1], rows, rtol=0, atol=1e-12)
    assert sum(len(rows) for _, rows in drawn.values()) == len(timeline.ops) == 2 * p * m * v
    assert [text.get_text() for text in _gantt_texts(ax, "pipeline-title")] == [title]
    assert ax.get_xlabel() == "time (units of $t_f$)"
    assert ax.get_ylim() == (p - 0.5, -0.5)  # stage 0 on top
    assert [text.get_text() for text in ax.get_legend().get_texts()] == legend
    assert drawn["forward", 0][0].get_facecolor() == pytest.approx(to_rgba(COLORS["forward"]))
    assert drawn["backward", 0][0].get_facecolor() == pytest.approx(to_rgba(COLORS["backward"]))
    if v == 2:  # the later chunk lighter: mixed 55 % with white
        assert drawn["forward", 1][0].get_facecolor()[:3] == pytest.approx(
            [c + 0.55 * (1 - c) for c in to_rgba(COLORS["forward"])[:3]]
        )
    # Small charts label every box with its micro-batch, counted from 1, at the box's centre.
    numbers = sorted((*text.get_position(), text.get_text()) for text in _gantt_texts(ax, "pipeline-microbatch"))
    unit = timeline.forward_time_s
    assert numbers == sorted(
        ((op.start_s + op.end_s) / 2 / unit, op.stage, str(op.microbatch + 1)) for op in timeline.ops
    )
    idle = next(patch for patch in ax.patches if patch.get_gid() == "pipeline-idle")
    assert idle.get_path().vertices.reshape(-1, 5, 2)[:, :, 0].max(axis=1) == pytest.approx([timeline.total_s] * p)


def test_gantt_numbers_as_large_as_the_boxes_allow():
    # On an 8 × 4.5 inch figure, a 1F1B chunk's forward is 20 points wide: the numbers get the largest size, 9
    # points; interleaved, a chunk's forward is half as wide: 8 points; 8 stages of 32 interleaved: none fit.
    for args, size in (((4, 8, "1f1b"), 9.0), ((4, 8, "interleaved", 2), 8.0)):
        timeline = pipeline_schedule(*args)
        ax = plot_pipeline_schedule(timeline)
        numbers = _gantt_texts(ax, "pipeline-microbatch")
        assert len(numbers) == len(timeline.ops)
        assert {text.get_fontsize() for text in numbers} == {size}
        box = ax.get_position()
        chunk_pt = box.width * 8 * 72 / (timeline.virtual_stages * timeline.total_s)
        assert size == math.floor(microbatch_label_size(chunk_pt, box.height * 4.5 * 72, 4, 8))
    timeline = pipeline_schedule(8, 32, "interleaved", 2)
    ax = plot_pipeline_schedule(timeline)
    assert len(ax.texts) > len(timeline.ops) == 2 * 8 * 32 * 2  # one number per op in the pool, none shown
    assert sum(len(rows) for _, rows in _gantt_boxes(ax).values()) == 1024
    assert not _gantt_texts(ax, "pipeline-microbatch")


def test_gantt_in_units_of_t_f_for_real_seconds():
    timeline = pipeline_schedule(4, 8, "1f1b", forward_time_s=2e-3, backward_time_s=4e-3)
    ax = plot_pipeline_schedule(timeline)
    ends = [rows[:, 1].max() for _, rows in _gantt_boxes(ax).values()]
    assert max(ends) == pytest.approx(33.0) and max(ends) * 2e-3 == pytest.approx(timeline.total_s)
    assert ax.get_xlabel() == "time (units of $t_f$ = 2 ms)"
    assert ax.get_xlim()[1] == pytest.approx(33 * 1.005)


def test_gantt_of_many_stages_labels_about_eight_rows():
    ax = plot_pipeline_schedule(pipeline_schedule(32, 4, "gpipe"))
    assert ax.get_ylim() == (31.5, -0.5)
    assert [text.get_text() for text in _gantt_texts(ax, None) if text.get_text().startswith("stage")] == [
        f"stage {s}" for s in range(0, 32, 4)
    ]


def test_gantt_draws_on_a_given_axes():
    _, ax = plt.subplots()
    assert plot_pipeline_schedule(pipeline_schedule(2, 2), ax=ax) is ax
    assert sum(len(rows) for _, rows in _gantt_boxes(ax).values()) == 8


@pytest.mark.parametrize("bad", [None, "1f1b", parallelism.ParallelPlan(pipeline_parallel=4)])
def test_gantt_bad_input(bad):
    with pytest.raises(ValueError, match="timeline"):
        plot_pipeline_schedule(bad)


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
    for container, field in zip(ax.containers, fields, strict=True):
        heights = [bar.get_height() for bar in container]
        assert heights == pytest.approx([getattr(b, field) for b in breakdowns.values()])
        assert [bar.get_y() for bar in container] == pytest.approx(bottoms)
        bottoms += heights
    assert bottoms == pytest.approx([b.total for b in breakdowns.values()])
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
    assert [t.get_text() for t in live.totals] == ["48 GB", "↑ 1 TB\ndoes not fit"]
    assert live.totals[1].get_position()[1] == pytest.approx(0.98 * 96e9)
    assert [o.get_visible() for o in live.over_outlines] == [False, True]
    outline = live.selected_outline
    assert outline.get_visible() and (outline.get_x(), outline.get_height()) == pytest.approx((-0.3, 48e9))
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"] and "bytes" in ax.get_ylabel()
    live.update([small, small])  # no capacity, nothing selected: 1.18 × the tallest bar
    assert ax.get_ylim() == pytest.approx((0, 1.18 * 48e9))
    assert not live.capacity_line.get_visible() and not live.selected_outline.get_visible()
    assert not any(o.get_visible() for o in live.over_outlines)


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
    for bars, breakdown in zip(live.bars.stacks, calibrated, strict=True):
        assert bars[-1].get_y() + bars[-1].get_height() == pytest.approx(breakdown.total, rel=1e-12)
    assert len(live.log_bars) == 6  # five components and the total
    assert live.log_bars[4].get_x() + live.log_bars[4].get_width() == pytest.approx(calibrated[1].logits)
    with pytest.raises(ValueError, match="components"):
        MemoryBarsFigure(Figure().add_subplot(), ["a"], ("parameters", "kv_cache"))
    with pytest.raises(ValueError, match="one breakdown per plan"):
        live.update(calibrated[:2], 1, 80e9)


# ---- the four splits ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def split_axes():
    return plot_parallelism_splits()


def test_split_panels_mark_the_crossing_tensors_and_their_collectives(split_axes):
    axes = split_axes
    assert axes.shape == (2, 2)
    titles = [ax.get_title() for ax in axes.flat]
    assert [t.split()[0] for t in titles] == ["Data", "Tensor", "Pipeline", "ZeRO"]
    expected = [
        ["gradients: all-reduce"],
        ["partial sums: all-reduce ×2 per layer fwd, ×2 bwd"],
        ["activations fwd / gradients bwd: send/recv"],
        ["parameters: all-gather", "gradients: reduce-scatter"],
    ]
    for ax, wanted in zip(axes.flat, expected, strict=True):
        labels = [t.get_text() for t in ax.texts if t.get_gid() == "boundary-label"]
        assert len(labels) == 1
        for phrase in wanted:
            assert phrase in labels[0], (ax.get_title(), labels[0])
        arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch) and p.get_gid() == "boundary-arrow"]
        assert arrows
        assert {p.get_gid() for p in ax.patches} >= {"device-0", "device-1"}
    assert tuple(axes[0, 0].figure.get_size_inches()) == (11, 8)


def test_split_labels_come_from_the_cost_model(split_axes):
    # The ops named on the arrows are exactly those parallelism.boundary_tensors lists for 2-GPU plans.
    model = parallelism.TransformerModel("4-layer example", 4, 64, 4, 256, 32)
    plans = [
        ParallelPlan(data_parallel=2),
        ParallelPlan(tensor_parallel=2),
        ParallelPlan(pipeline_parallel=2),
        ParallelPlan(data_parallel=2, zero_stage=3),
    ]
    axes = split_axes
    names = {
        "all_reduce": "all-reduce",
        "all_gather": "all-gather",
        "reduce_scatter": "reduce-scatter",
        "send_recv": "send/recv",
    }
    for ax, plan in zip(axes.flat, plans, strict=True):
        label = next(t.get_text() for t in ax.texts if t.get_gid() == "boundary-label")
        ops = {names[t.op] for t in parallelism.boundary_tensors(model, plan)}
        assert ops == {name for name in names.values() if name in label}


def test_splits_on_given_axes_and_bad_axes():
    _, axes = plt.subplots(2, 2)
    returned = plot_parallelism_splits(axes)
    assert returned.shape == (2, 2) and returned[1, 1] is axes[1, 1]
    assert axes[1, 1].get_title().startswith("ZeRO")
    _, three = plt.subplots(1, 3)
    with pytest.raises(ValueError, match="axes"):
        plot_parallelism_splits(three)
    with pytest.raises(ValueError, match="axes"):
        plot_parallelism_splits(["a", "b", "c", "d"])


# ---- the labs' live figures ----------------------------------------------------------------------------------------


def _gantt_figure():
    figure = Figure(figsize=(9, 4), dpi=72)
    return figure, PipelineScheduleFigure(figure.add_axes((0.09, 0.25, 0.63, 0.64)))


def _timeline(stages, microbatches, schedule, virtual_stages=1, forward_time_s=1.0):
    timeline = pipeline_schedule(
        stages,
        microbatches,
        schedule,
        virtual_stages,
        forward_time_s=forward_time_s,
        backward_time_s=2 * forward_time_s,
    )
    return lambda live: live.update(timeline)


@pytest.mark.parametrize(
    "first, second",
    [
        (_timeline(4, 8, "1f1b"), _timeline(4, 8, "interleaved", 2)),
        (_timeline(16, 64, "gpipe"), _timeline(2, 3, "1f1b", forward_time_s=0.01)),
        (_timeline(8, 16, "interleaved", 4), _timeline(8, 32, "gpipe")),
    ],
)
def test_gantt_figure_updated_twice_draws_what_a_fresh_one_draws(first, second):
    assert_updates_match_a_fresh_build(_gantt_figure, first, second)


def test_gantt_figure_boxes_are_the_timeline_in_units_of_t_f():
    _, live = _gantt_figure()
    timeline = pipeline_schedule(4, 8, "interleaved", 2, forward_time_s=0.01, backward_time_s=0.02)
    live.update(timeline)
    for (kind, chunk), patch in live.boxes.items():
        ops = [op for op in timeline.ops if (op.kind, op.chunk) == (("forward", "backward")[kind], chunk)]
        assert patch.get_visible() == bool(ops)
        if ops:
            corners = patch.get_path().vertices.reshape(-1, 5, 2)
            np.testing.assert_allclose(corners[:, 0, 0], [op.start_s / 0.01 for op in ops])
            np.testing.assert_allclose(corners[:, 1, 0], [op.end_s / 0.01 for op in ops])
            assert patch.get_linewidth() == box_edge_width(0.63 * 9 * 72 / (2 * timeline.total_s / 0.01))
    assert live.ax.get_xlim()[1] == pytest.approx(timeline.total_s / 0.01 * 1.005)
    assert live.title.get_text() == "Interleaved 1F1B, p = 4, v = 2, m = 8: bubble 18.8 %"
    assert live.ax.get_xlabel() == "time (units of $t_f$ = 10 ms)"


@pytest.mark.parametrize("min_label_size, shown_sizes", [(6.0, [6.0, 9.0]), (7.0, [None, 9.0])])
def test_gantt_figure_numbers_in_whole_points_where_they_fit(min_label_size, shown_sizes):
    # A chunk's forward is 7.2 points wide interleaved (numbers of 6.7 points fit: 6), 14.4 with v = 1 (9, the
    # largest); the lab asks for at least 7 points.
    figure = Figure(figsize=(9, 4), dpi=72)
    live = PipelineScheduleFigure(figure.add_axes((0.09, 0.25, 0.63, 0.64)), min_label_size=min_label_size)
    width_pt, height_pt = 0.63 * 9 * 72, 0.64 * 4 * 72
    timelines = (pipeline_schedule(4, 8, "interleaved", 2), pipeline_schedule(4, 8, "1f1b"))
    for shown, size in zip(timelines, shown_sizes, strict=True):
        live.update(shown)
        chunk_pt = width_pt / (shown.virtual_stages * shown.total_s)
        assert math.floor(microbatch_label_size(chunk_pt, height_pt, 4, 8)) == (6 if shown.virtual_stages == 2 else 9)
        visible = [label for label in live.labels if label.get_visible()]
        assert [label.get_text() for label in visible] == ([str(op.microbatch + 1) for op in shown.ops] if size else [])
        assert {label.get_fontsize() for label in visible} == ({size} if size else set())


def test_gantt_figure_refuses_a_timeline_larger_than_it_was_built_for():
    _, live = _gantt_figure()  # 16 stages, 4 chunks
    with pytest.raises(ValueError, match="at most 16 stages and 4 chunks, got p = 17"):
        live.update(pipeline_schedule(17, 2, "gpipe"))


@pytest.mark.parametrize("schedule, v", [("1f1b", 1), ("interleaved", 2)])
def test_the_lesson_and_the_lab_draw_one_gantt_chart(schedule, v):
    # plot_pipeline_schedule is the lab's PipelineScheduleFigure, updated once: the same boxes, colours, texts and
    # legend for the same timeline (the lab's t_f = 1, t_b = 2 t_f).
    from course_lib.widgets import pipeline_lab

    lab = pipeline_lab(stages=4, microbatches=8, schedule=schedule, virtual_stages=v)
    ax = plot_pipeline_schedule(pipeline_schedule(4, 8, schedule, v))
    lesson, live = _gantt_boxes(ax), _gantt_boxes(lab.gantt.ax)
    assert sorted(lesson) == sorted(live) and len(lesson) == 2 * v
    for key, (patch, rows) in lesson.items():
        assert np.array_equal(rows, live[key][1])
        assert patch.get_facecolor() == live[key][0].get_facecolor()
        assert type(patch) is type(live[key][0])
    for gid in ("pipeline-title", None):  # the title, and the tick labels
        assert [t.get_text() for t in _gantt_texts(ax, gid)] == [t.get_text() for t in _gantt_texts(lab.gantt.ax, gid)]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        t.get_text() for t in lab.gantt.ax.get_legend().get_texts()
    ]
    idle = [next(p for p in axes.patches if p.get_gid() == "pipeline-idle") for axes in (ax, lab.gantt.ax)]
    assert np.array_equal(idle[0].get_path().vertices, idle[1].get_path().vertices)
    assert ax.get_xlim() == lab.gantt.ax.get_xlim() and ax.get_ylim() == lab.gantt.ax.get_ylim()
    # The numbers: the lab writes them from 7 points, the lesson from 6; where both do, the same ones.
    lab_numbers = [(*t.get_position(), t.get_text()) for t in _gantt_texts(lab.gantt.ax, "pipeline-microbatch")]
    lesson_numbers = [(*t.get_position(), t.get_text()) for t in _gantt_texts(ax, "pipeline-microbatch")]
    assert len(lesson_numbers) == 64 * v and len(lab_numbers) == (64 if v == 1 else 0)
    assert not lab_numbers or lab_numbers == lesson_numbers
    assert [box_edge_width(w) for w in (4, 3.9, 1.5, 1.49)] == [0.6, 0.3, 0.3, 0.0]
    assert schedule_title("1f1b", 4, 8, 1, 0.375) == "1F1B, p = 4, m = 8: bubble 37.5 %"


def _checks_figure():
    figure = Figure(figsize=(3, 4), dpi=72)
    axes = [figure.add_axes((0.2, 0.6 - 0.42 * row, 0.7, 0.28)) for row in range(2)]
    return figure, ComparisonBarsFigure(axes, ["bubble", "held"], [("#CCCCCC", "#888888")] * 2, [str, str])


def test_comparison_bars_updated_twice_draw_what_fresh_ones_draw():
    assert_updates_match_a_fresh_build(
        _checks_figure,
        lambda live: live.update([(0.375, 0.375), (4.0, 4.0)]),
        lambda live: live.update([(0.0, 0.0), (1.0, 2.0)]),
    )
    _, live = _checks_figure()
    live.update([(0.5, 0.25), (0.0, 0.0)])
    assert [bar.get_height() for bar in live.bars[0]] == [0.5, 0.25]
    assert live.axes[0].get_ylim() == pytest.approx((0, 1.35 * 0.5)) and live.axes[1].get_ylim() == (0, 1.0)
    assert [text.get_text() for text in live.texts[0]] == ["0.5", "0.25"]


def _memory_figure():
    figure = Figure(figsize=(9, 4), dpi=72)
    live = MemoryBudgetFigure(
        figure.add_axes((0.1, 0.2, 0.44, 0.63)),
        figure.add_axes((0.71, 0.2, 0.26, 0.63)),
        ["ZeRO-0", "ZeRO-1", "ZeRO-2", "ZeRO-3"],
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
    for bars, breakdown in zip(live.bars.stacks, breakdowns, strict=True):
        heights = [getattr(breakdown, field) for field in MODEL_MEMORY_COMPONENTS]
        assert [bar.get_height() for bar in bars] == pytest.approx(heights, rel=1e-12)
        assert [bar.get_y() for bar in bars] == pytest.approx(np.cumsum([0.0, *heights[:-1]]), rel=1e-12)
        assert sum(heights) == pytest.approx(breakdown.total, rel=1e-12)  # nothing left out of the stack
    assert live.stack_ax.get_ylim() == (0, 64e9) and live.bars.capacity_line.get_ydata()[0] == 32e9
    assert live.bars.selected_outline.get_visible() and live.bars.selected_outline.get_x() == pytest.approx(1.7)
    assert [bars[0].get_alpha() for bars in live.bars.stacks] == [0.4, 0.4, 1.0, 0.4]
    fits = breakdowns[2].total <= 32e9
    headroom = units.format_bytes(abs(32e9 - breakdowns[2].total))
    assert live.verdict.get_text() == (f"fits, {headroom} headroom" if fits else f"does not fit by {headroom}")


def _batch_figure():
    figure = Figure(figsize=(9, 4), dpi=72)
    return figure, GlobalBatchFigure(figure.add_axes((0.0, 0.0, 0.6, 1.0)), figure.add_axes((0.66, 0.2, 0.32, 0.68)))


def _batch(b, acc, d, t, p, seq_len=2048):
    def draw(live):
        live.update(
            dict(
                micro_batch=b,
                grad_accum_steps=acc,
                data_parallel=d,
                tensor_parallel=t,
                pipeline_parallel=p,
                seq_len=seq_len,
                global_batch=b * acc * d,
                tokens_per_step=b * acc * d * seq_len,
                devices=d * t * p,
                devices_per_replica=t * p,
                examples_per_replica_per_step=b * acc,
            )
        )

    return draw


def test_batch_figure_updated_twice_draws_what_a_fresh_one_draws():
    assert_updates_match_a_fresh_build(_batch_figure, _batch(8, 16, 64, 1, 1), _batch(2, 3, 5, 4, 2, 4096))
    assert_updates_match_a_fresh_build(_batch_figure, _batch(64, 128, 1024, 64, 64), _batch(1, 1, 1, 1, 1))


# ---- one layer under tensor parallelism ----------------------------------------------------------------------------


def _tp_boxes(ax):
    """(x, block, role, layout) of every box, left to right within each block."""
    boxes = []
    for patch in ax.patches:
        gid = str(patch.get_gid())
        if gid.startswith(("attention/", "MLP/")):
            block, role, layout = gid.split("/")
            boxes.append((round(patch.get_x(), 3), block, role, layout))
    return sorted(boxes)


@pytest.mark.parametrize("sequence_parallel", [False, True])
def test_tp_layer_draws_column_then_row_parallel_gemms_between_f_and_g(sequence_parallel):
    ax = plot_tensor_parallel_layer(sequence_parallel=sequence_parallel)
    boxes = _tp_boxes(ax)
    for block in ("attention", "MLP"):
        roles = [role for _, b, role, _ in boxes if b == block]
        assert roles == ["norm", "column-parallel", "core", "row-parallel", "residual"]
        layouts = {role: layout for _, b, role, layout in boxes if b == block}
        # the GEMMs and what lies between them are split over t either way
        assert {layouts[r] for r in ("column-parallel", "core", "row-parallel")} == {"tensor-split"}
        # LayerNorm, dropout and the residual: whole on every GPU, or sequence-sharded with SP
        outer = "sequence-split" if sequence_parallel else "replicated"
        assert layouts["norm"] == layouts["residual"] == outer
        names = [t.get_text() for t in ax.texts if t.get_gid() == f"name-{block}"]
        assert names == (["g", "ḡ"] if sequence_parallel else ["f", "g"])
        # each operator's label sits between the GEMMs it wraps: f before the column GEMM, g after the row GEMM
        xs = sorted(t.get_position()[0] for t in ax.texts if t.get_gid() == f"operator-{block}")
        column_x = next(x for x, b, role, _ in boxes if b == block and role == "column-parallel")
        row_x = next(x for x, b, role, _ in boxes if b == block and role == "row-parallel")
        assert xs[0] < column_x < row_x < xs[1]


def test_tp_layer_collectives_are_megatrons_and_the_cost_models():
    plain = plot_tensor_parallel_layer(sequence_parallel=False)
    labels = [t.get_text() for t in plain.texts if t.get_gid() == "operator-attention"]
    # Shoeybi et al. 2019 §3: f = identity forward, all-reduce backward; g = all-reduce forward, identity backward
    assert labels[0].startswith("fwd: identity\nbwd: all-reduce")
    assert labels[1].startswith("fwd: all-reduce\nbwd: identity")
    assert "partial sums" in labels[1]
    assert plain.get_title().endswith("2 all-reduces")
    sp = plot_tensor_parallel_layer(sequence_parallel=True)
    labels = [t.get_text() for t in sp.texts if t.get_gid() == "operator-attention"]
    # Korthikanti et al. 2022 §4.2.2: g = all-gather fwd / reduce-scatter bwd; ḡ = reduce-scatter fwd / all-gather bwd
    assert labels[0].startswith("fwd: all-gather\nbwd: reduce-scatter")
    assert labels[1].startswith("fwd: reduce-scatter\nbwd: all-gather")
    assert sp.get_title().endswith("2 all-gathers + 2 reduce-scatters")
    # the counts in the title are the cost model's: per layer and micro-batch, forward
    model = parallelism.TransformerModel("1 layer", 1, 64, 4, 256, 32)
    ops = [
        (t.op, t.calls_per_step)
        for t in parallelism.step_transfers(model, ParallelPlan(tensor_parallel=2, sequence_parallel=True))
        if t.axis == "tensor" and "forward" in t.tensor
    ]
    assert sorted(ops) == [("all_gather", 2), ("reduce_scatter", 2)]
    legend = [text.get_text() for text in sp.get_legend().get_texts()]
    assert any("sequence" in text for text in legend) and not any("replicated" in text for text in legend)


def test_tp_layer_text_is_readable_and_bad_input():
    ax = plot_tensor_parallel_layer()
    assert min(t.get_fontsize() for t in ax.texts) >= 8
    _, given = plt.subplots()
    assert plot_tensor_parallel_layer(True, ax=given) is given
    with pytest.raises(ValueError, match="sequence_parallel"):
        plot_tensor_parallel_layer(sequence_parallel="yes")
