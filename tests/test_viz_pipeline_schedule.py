"""course_lib.viz.pipeline_schedule, the pipeline timeline of lesson 03 and lab 4's live figures: what each figure
holds (artists, labels, scales, texts), never pixels, and that a live figure updated twice matches one built at once."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from lab_checks import assert_updates_match_a_fresh_build
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

from course_lib import parallelism
from course_lib.pipeline import OP_KINDS, pipeline_schedule
from course_lib.viz.figure_check import TICK_GID
from course_lib.viz.pipeline_schedule import (
    ComparisonBarsFigure,
    PipelineScheduleFigure,
    box_edge_width,
    microbatch_label_size,
    plot_pipeline_schedule,
    schedule_title,
)
from course_lib.viz.style import COLORS

# ---- pipeline Gantt chart -----------------------------------------------------------------------------------------


def _gantt_boxes(ax) -> dict:
    """(kind, chunk) -> (patch, its boxes as (start, end, stage) rows, sorted): the visible boxes of a Gantt chart on
    ``ax``, read back from the paths of its patches (gid "pipeline-<kind>-chunk<c>")."""
    boxes = {}
    for patch in ax.patches:
        gid = str(patch.get_gid()).split("-")
        if len(gid) == 3 and gid[1] in OP_KINDS and patch.get_visible():
            _, kind, chunk = gid
            corners = patch.get_path().vertices.reshape(-1, 5, 2)
            rows = np.column_stack([corners[:, 0, 0], corners[:, 1, 0], corners[:, :4, 1].mean(axis=1)])
            boxes[kind, int(chunk.removeprefix("chunk"))] = (patch, rows[np.lexsort(rows.T[::-1])])
    return boxes


def _gantt_texts(ax, gid) -> list:
    return [text for text in ax.texts if text.get_gid() == gid and text.get_visible()]


def _expected_boxes(timeline) -> dict:
    """(kind, chunk) -> the timeline's ops as (start, end, stage) rows in units of t_F, sorted."""
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
    assert ax.get_xlabel() == "time (units of $t_\\text{F}$)"
    assert ax.get_ylim() == (p - 0.5, -0.5)  # stage 1 (row 0) on top
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


@pytest.mark.parametrize("schedule", ["zb-h1", "zb-h2"])
def test_gantt_draws_b_and_w_apart(schedule):
    # A split backward: F, B and W boxes each in their colour (no whole-backward box), named in the legend; the title
    # adds the bubble without the optimizer step's synchronisation where it differs (ZB-H2).
    timeline = pipeline_schedule(4, 8, schedule, backward_weight_time_s=0.5)  # t_B = 1.5, t_W = 0.5
    ax = plot_pipeline_schedule(timeline)
    drawn, expected = _gantt_boxes(ax), _expected_boxes(timeline)
    assert sorted(drawn) == sorted(expected) == [("backward_input", 0), ("backward_weight", 0), ("forward", 0)]
    for key, rows in expected.items():
        np.testing.assert_allclose(drawn[key][1], rows, rtol=0, atol=1e-12)
        assert drawn[key][0].get_facecolor() == pytest.approx(to_rgba(COLORS[key[0]]))
    assert COLORS["backward_weight"] != COLORS["backward_input"]
    assert sum(len(rows) for _, rows in drawn.values()) == len(timeline.ops) == 3 * 4 * 8
    assert [text.get_text() for text in ax.get_legend().get_texts()] == [
        "forward",
        "backward B (input gradient)",
        "backward W (weight gradient)",
        "idle (bubble)",
    ]
    # 3·(1 + 1.5 − 0.5) = 6 of 24 and 3·max(T_F, 1 + 1.5 − 1) = 4.5 (the same without the synchronisation).
    titles = {"zb-h1": "ZB-H1, p = 4, m = 8: bubble 25 %", "zb-h2": "ZB-H2, p = 4, m = 8: bubble 18.8 %"}
    assert [text.get_text() for text in _gantt_texts(ax, "pipeline-title")] == [titles[schedule]]
    equal_times = plot_pipeline_schedule(pipeline_schedule(4, 8, schedule))
    titles = {"zb-h1": "ZB-H1, p = 4, m = 8: bubble 12.5 %", "zb-h2": titles["zb-h2"].replace("18.8", "12.5")}
    titles["zb-h2"] += " (0 % without the optimizer sync)"
    assert [text.get_text() for text in _gantt_texts(equal_times, "pipeline-title")] == [titles[schedule]]
    # The numbers are sized for the narrowest box, a W half as wide as a forward.
    numbers = _gantt_texts(ax, "pipeline-microbatch")
    box = ax.get_position()
    narrowest_pt = box.width * 8 * 72 * 0.5 / timeline.total_s
    assert len(numbers) == len(timeline.ops)
    size = math.floor(microbatch_label_size(narrowest_pt, box.height * 4.5 * 72, 4, 8))
    assert {t.get_fontsize() for t in numbers} == {size} and size < 9


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
    assert ax.get_xlabel() == "time (units of $t_\\text{F}$ = 2 ms)"
    assert ax.get_xlim()[1] == pytest.approx(33 * 1.005)


def test_gantt_of_many_stages_labels_about_eight_rows():
    ax = plot_pipeline_schedule(pipeline_schedule(32, 4, "gpipe"))
    assert ax.get_ylim() == (31.5, -0.5)
    assert [text.get_text() for text in _gantt_texts(ax, TICK_GID) if text.get_text().startswith("stage")] == [
        f"stage {s}"
        for s in (1, 4, 8, 12, 16, 20, 24, 28, 32)  # counted from 1, as the micro-batches
    ]


def test_gantt_draws_on_a_given_axes():
    _, ax = plt.subplots()
    assert plot_pipeline_schedule(pipeline_schedule(2, 2), ax=ax) is ax
    assert sum(len(rows) for _, rows in _gantt_boxes(ax).values()) == 8


@pytest.mark.parametrize("bad", [None, "1f1b", parallelism.ParallelPlan(pipeline_parallel=4)])
def test_gantt_bad_input(bad):
    with pytest.raises(ValueError, match="timeline"):
        plot_pipeline_schedule(bad)


# ---- the lab's live figures ----------------------------------------------------------------------------------------


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
        (_timeline(4, 8, "interleaved", 2), _timeline(4, 8, "zb-h2")),
        (_timeline(4, 8, "zb-h1"), _timeline(4, 8, "1f1b")),
    ],
)
def test_gantt_figure_updated_twice_draws_what_a_fresh_one_draws(first, second):
    assert_updates_match_a_fresh_build(_gantt_figure, first, second)


def test_gantt_figure_boxes_are_the_timeline_in_units_of_t_f():
    _, live = _gantt_figure()
    timeline = pipeline_schedule(4, 8, "interleaved", 2, forward_time_s=0.01, backward_time_s=0.02)
    live.update(timeline)
    for (kind, chunk), patch in live.boxes.items():
        ops = [op for op in timeline.ops if (op.kind, op.chunk) == (OP_KINDS[kind], chunk)]
        assert patch.get_visible() == bool(ops)
        if ops:
            corners = patch.get_path().vertices.reshape(-1, 5, 2)
            np.testing.assert_allclose(corners[:, 0, 0], [op.start_s / 0.01 for op in ops])
            np.testing.assert_allclose(corners[:, 1, 0], [op.end_s / 0.01 for op in ops])
            assert patch.get_linewidth() == box_edge_width(0.63 * 9 * 72 / (2 * timeline.total_s / 0.01))
    assert live.ax.get_xlim()[1] == pytest.approx(timeline.total_s / 0.01 * 1.005)
    assert live.title.get_text() == "Interleaved 1F1B, p = 4, v = 2, m = 8: bubble 18.8 %"
    assert live.ax.get_xlabel() == "time (units of $t_\\text{F}$ = 10 ms)"


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
    # legend for the same timeline (the lab's t_F = 1, t_bwd = 2 t_F).
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
