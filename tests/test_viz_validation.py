"""course_lib.viz.validation: each figure draws the numbers it is given (read back from the artists)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from lab_checks import assert_updates_match_a_fresh_build
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

from course_lib import validation
from course_lib.viz.validation import (
    NODE_COLORS,
    NODE_GROUP_COLORS,
    NODE_GROUPS,
    PredictedMeasuredFigure,
    ResidualsFigure,
    plot_predicted_measured,
    plot_residuals,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def runs():
    return validation.load_playbook_runs()


@pytest.fixture(scope="module")
def replay(runs):
    return validation.replay_runs(runs)


def _tiny_replay():
    """Four runs by hand: two on 1 node (predicted/measured MFU 2 and 4), one on 2 nodes (0.5), one that crashed."""
    runs = validation.PlaybookRuns(
        {
            "model": np.array(["1B", "1B", "8B", "8B"]),
            "status": np.array(["success", "success", "success", "oom"]),
            "nodes": np.array([1, 1, 2, 2]),
            "tp": np.array([1, 2, 1, 1]),
            "pp": np.array([1, 1, 2, 2]),
            "zero_stage": np.array([0, 1, 1, 1]),
            "measured_mfu": np.array([0.1, 0.1, 0.4, np.nan]),
            "measured_memory_bytes": np.array([40e9, 50e9, 60e9, np.nan]),
        }
    )
    columns = {
        "predicted_mfu": np.array([0.2, 0.4, 0.2, 0.3]),
        "predicted_memory_bytes": np.array([20e9, 50e9, 90e9, 70e9]),
        "predicted_fits": np.array([True, True, False, True]),
    }
    return validation.Replay(runs, columns)


def test_residuals_by_hand():
    groups = validation.residuals_by(_tiny_replay(), "nodes")
    # 1 node: ratios 2 and 4 → median 3, quartiles 2.5 and 3.5; 2 nodes: the crashed run is left out → 0.5 alone.
    assert groups == {1: (3.0, 2.5, 3.5, 2), 2: (0.5, 0.5, 0.5, 1)}
    memory = validation.residuals_by(_tiny_replay(), "zero_stage", quantity="memory")
    assert memory == {0: (0.5, 0.5, 0.5, 1), 1: pytest.approx((1.25, 1.125, 1.375, 2))}  # 50/50, 90/60


def test_predicted_measured_places_every_run_that_ran(replay, runs):
    held = np.isin(runs["model"], validation.HELD_OUT_MODELS)
    ax = plot_predicted_measured(replay, held)
    shown = replay.represented & runs.succeeded & (runs["measured_mfu"] > 0)
    drawn = np.vstack([c.get_offsets() for c in ax.collections])
    expected = np.column_stack([runs["measured_mfu"][shown], replay.columns["predicted_mfu"][shown]])
    np.testing.assert_allclose(np.sort(drawn, axis=0), np.sort(expected, axis=0))
    for collection in ax.collections:
        group, is_held = collection.get_label().split("|")
        for nodes in NODE_GROUPS[group]:
            np.testing.assert_allclose(collection.get_edgecolor()[0], to_rgba(NODE_COLORS[nodes]))
        filled = len(collection.get_facecolor()) and collection.get_facecolor()[0][3] > 0
        assert bool(filled) == (is_held == "True")  # held-out runs filled, fitted runs hollow
        here = shown & np.isin(runs["nodes"], NODE_GROUPS[group]) & (held == (is_held == "True"))
        assert len(collection.get_offsets()) == here.sum()
    assert {nodes for counts in NODE_GROUPS.values() for nodes in counts} == set(runs["nodes"].tolist())
    assert len(set(NODE_GROUP_COLORS.values())) == len(NODE_GROUPS) == 4  # four colours a reader can tell apart
    (diagonal,) = [line for line in ax.lines if line.get_label() == "predicted = measured"]
    np.testing.assert_allclose(diagonal.get_xdata(), diagonal.get_ydata())


def test_predicted_measured_memory_in_bytes_and_updates_in_place():
    tiny = _tiny_replay()
    figure = PredictedMeasuredFigure(plt.subplots()[1], "memory")
    ax = figure.ax
    figure.update((tiny, np.array([False, False, True, True])))
    drawn = len(ax.lines) + len(ax.collections)
    figure.update((tiny, np.array([False, False, True, True])))
    assert len(ax.lines) + len(ax.collections) == drawn  # the old points were removed, not drawn over
    offsets = np.vstack([c.get_offsets() for c in ax.collections])
    np.testing.assert_allclose(np.sort(offsets[:, 0]), [40e9, 50e9, 60e9])
    np.testing.assert_allclose(np.sort(offsets[:, 1]), [20e9, 50e9, 90e9])


def test_residuals_figure_draws_the_medians_and_quartiles():
    figure = ResidualsFigure(plt.subplots()[1], "nodes")
    ax = figure.ax
    figure.update((_tiny_replay(), None))
    points = ax.lines[1]  # ax.lines[0] is the line at 1
    np.testing.assert_allclose(points.get_ydata(), [3.0, 0.5])
    (bars,) = ax.collections
    np.testing.assert_allclose([segment[:, 1].min() for segment in bars.get_segments()], [2.5, 0.5])
    np.testing.assert_allclose([segment[:, 1].max() for segment in bars.get_segments()], [3.5, 0.5])
    assert [tick.get_text() for tick in ax.get_xticklabels()] == ["1\n(2)", "2\n(1)"]  # the group, its runs
    assert [text.get_text() for text in ax.texts] == ["3×", "0.5×"]  # each median above its bar
    figure.update((_tiny_replay(), None))
    assert len(ax.lines) == 2 + 2 and len(ax.collections) == 1  # axhline, points, two cap lines: redrawn, not added


def test_residuals_on_the_held_out_runs_drift_with_nodes(replay, runs):
    held = np.isin(runs["model"], validation.HELD_OUT_MODELS)
    axes = plot_residuals(replay, held)
    nodes = axes[0].lines[1].get_ydata()
    assert nodes[0] == pytest.approx(0.98, abs=0.01) and nodes[-1] == pytest.approx(10.25, abs=0.01)  # make validate


def test_bad_arguments_name_what_they_accept(replay):
    with pytest.raises(ValueError, match="quantity must be one of mfu, memory"):
        PredictedMeasuredFigure(plt.subplots()[1], "tokens")
    with pytest.raises(ValueError, match="column must be one of nodes, tp, pp, zero_stage"):
        ResidualsFigure(plt.subplots()[1], "dp")
    with pytest.raises(ValueError, match="axes must hold one Axes per column"):
        plot_residuals(replay, axes=[plt.subplots()[1]])
    with pytest.raises(ValueError, match="column must be one of"):
        validation.residuals_by(replay, "mbs")
    with pytest.raises(ValueError, match="nodes must be a node count with successful 80B runs"):
        validation.best_in_cell(replay, "80B", 1)


@pytest.mark.parametrize(
    "live_figure",
    [
        lambda ax: PredictedMeasuredFigure(ax, "mfu"),
        lambda ax: PredictedMeasuredFigure(ax, "memory"),
        lambda ax: ResidualsFigure(ax, "nodes"),
        lambda ax: ResidualsFigure(ax, "zero_stage", "memory"),
    ],
    ids=["predicted-mfu", "predicted-memory", "residuals-nodes", "residuals-zero-stage-memory"],
)
def test_figures_updated_twice_draw_what_fresh_ones_draw(replay, runs, live_figure):
    # Each figure takes (replay, a boolean mask of runs): the Playbook's runs with the held-out ones, and the tiny
    # replay (fewer points, other limits, fewer groups), in both orders.
    def build():
        figure = Figure(figsize=(6, 4.5), dpi=72)
        return figure, live_figure(figure.add_axes((0.16, 0.12, 0.8, 0.8)))

    every_run = _update((replay, np.isin(runs["model"], validation.HELD_OUT_MODELS)))
    tiny = _update((_tiny_replay(), np.array([False, False, True, True])))
    for first, second in ((every_run, tiny), (tiny, every_run)):
        assert_updates_match_a_fresh_build(build, first, second)


def _update(result):
    return lambda live: live.update(result)
