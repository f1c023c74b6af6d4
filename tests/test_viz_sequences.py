"""course_lib.viz.sequences (lab 7's figures) and budget.moe_layer_times: what each figure holds after an update,
against numbers worked out by hand; bad results refused."""

from __future__ import annotations

import dataclasses

import matplotlib

matplotlib.use("Agg")

import pytest
from lab_checks import assert_updates_match_a_fresh_build, by_gid
from matplotlib.figure import Figure

from course_lib import budget, hardware, parallelism
from course_lib.pipeline import pipeline_schedule
from course_lib.viz.sequences import BubbleFigure, MoeLayerFigure, SequenceMemoryFigure

EIGHT_NODES = dataclasses.replace(hardware.DGX_H100, nodes=8)


def test_moe_layer_times_by_hand():
    # Mixtral 8x7B, 8192 tokens a rank, e = 4, t = 2: S = 8192 × 2 × 4096 × 2 B / 2 = 67,108,864 B per call.
    layer = budget.moe_layer_times(parallelism.MIXTRAL_8X7B, EIGHT_NODES, 4, 8192, 1, 2)
    assert layer.payload_bytes == 67_108_864
    assert layer.all_to_all_s == 4 * layer.call_s
    assert layer.call_s == budget.group_collective_time("all_to_all", EIGHT_NODES, 4, 1, 67_108_864)
    # 6 FLOPs × 8192 tokens × 2 experts × 3·4096·14336 weights / t = 2, at half of 989 TFLOP/s.
    assert layer.expert_compute_s == pytest.approx(6 * 8192 * 2 * 3 * 4096 * 14336 / 2 / 494.5e12, rel=1e-12)
    assert layer.all_to_all_share == pytest.approx(layer.all_to_all_s / (layer.all_to_all_s + layer.expert_compute_s))


def test_moe_layer_times_across_nodes_runs_on_the_network():
    # e = 8 at stride 8: one rank on each of 8 nodes, 7/8 of S leaves each at its 50 GB/s share of the node's NICs.
    layer = budget.moe_layer_times(parallelism.MIXTRAL_8X7B, EIGHT_NODES, 8, 4096, 8)
    inside = budget.moe_layer_times(parallelism.MIXTRAL_8X7B, EIGHT_NODES, 8, 4096, 1)
    assert layer.payload_bytes == 4096 * 2 * 4096 * 2
    assert layer.call_s == pytest.approx(layer.payload_bytes * 7 / 8 / 50e9, rel=0.05)
    assert layer.call_s > 5 * inside.call_s


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ((parallelism.LLAMA3_8B, EIGHT_NODES, 2, 4096), "model"),
        ((parallelism.MIXTRAL_8X7B, EIGHT_NODES, 3, 4096), "expert_parallel"),
        ((parallelism.MIXTRAL_8X7B, EIGHT_NODES, 8, 0), "tokens"),
        ((parallelism.MIXTRAL_8X7B, EIGHT_NODES, 8, 4096, 1, 1, 1.5), "compute_efficiency"),
    ],
)
def test_moe_layer_times_refuses_bad_input(arguments, field):
    with pytest.raises(ValueError, match=field):
        budget.moe_layer_times(*arguments)


def test_memory_figure_holds_both_curves_and_the_capacity():
    figure = SequenceMemoryFigure(Figure().add_subplot(), 80e9, 0.384, (4096, 8192, 16384))
    figure.update(((4096, 8192, 16384), (70e9, 110e9, 190e9), (20e9, 30e9, 50e9), 8, 8192))
    assert list(figure.without_c.get_ydata()) == [70e9, 110e9, 190e9]
    assert list(figure.with_c.get_ydata()) == [20e9, 30e9, 50e9]
    assert (figure.current.get_xdata()[0], figure.current.get_ydata()[0]) == (8192, 30e9)
    (capacity,) = by_gid(figure.ax.lines, "capacity")
    assert capacity.get_ydata()[0] == 80e9
    (band,) = by_gid(figure.ax.patches, "memory-margin")
    assert band.get_y() == pytest.approx(80e9 / 1.384) and band.get_height() == pytest.approx(80e9 - 80e9 / 1.384)
    assert figure.text.get_text() == "s = 8k, c = 8: 30 GB per device (c = 1: 110 GB)"
    with pytest.raises(ValueError, match="current length"):
        figure.update(((4096, 8192), (1e9, 2e9), (1e9, 2e9), 1, 32768))


def test_moe_figure_bars_and_dense_note():
    times = [budget.moe_layer_times(parallelism.MIXTRAL_8X7B, EIGHT_NODES, 8, 4096, s) for s in (1, 8)]
    figure = MoeLayerFigure(Figure().add_subplot(), snap=True)
    figure.update((*times, "one node"))
    widths = [bar.get_width() for bar in figure.bars]
    assert widths == [times[0].all_to_all_s, times[1].all_to_all_s, times[0].expert_compute_s]
    assert figure.ax.get_xlim()[1] in (0.02, 0.05)  # 1.45 × 17.5 ms, snapped to 1, 2 or 5 × 10^k
    assert [bar.get_alpha() for bar in figure.bars] == [1.0, 0.35, 1.0]
    figure.update(None)
    assert [bar.get_width() for bar in figure.bars] == [0, 0, 0] and "dense" in figure.note.get_text()
    with pytest.raises(ValueError, match="placement"):
        figure.update((*times, "somewhere"))


def test_bubble_figure_shows_zb_h1_at_a_third_of_1f1b():
    figure = BubbleFigure(Figure().add_subplot())
    figure.update((pipeline_schedule(8, 16, "1f1b"), pipeline_schedule(8, 16, "zb-h1")))
    # 1F1B: (p − 1)/m = 7/16; ZB-H1: (p − 1)(t_F + t_B − t_W)/(m(t_F + t_b)) = 7/48.
    assert [bar.get_width() for bar in figure.bars] == pytest.approx([7 / 16, 7 / 48])
    assert figure.labels.get_texts() == ["1F1B: 43.8 %", "ZB-H1: 14.6 %"]
    with pytest.raises(ValueError, match="PipelineTimeline"):
        figure.update((None, None))


def test_updates_leave_nothing_behind():
    def build():
        figure = Figure(figsize=(4, 3))
        return figure, BubbleFigure(figure.add_subplot())

    assert_updates_match_a_fresh_build(
        build,
        lambda live: live.update((pipeline_schedule(4, 8, "1f1b"), pipeline_schedule(4, 8, "zb-h2"))),
        lambda live: live.update((pipeline_schedule(2, 8, "1f1b"), pipeline_schedule(2, 8, "zb-h1"))),
    )
