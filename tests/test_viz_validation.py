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

from course_lib import published_runs, validation
from course_lib.viz.validation import (
    NODE_COLORS,
    NODE_GROUP_COLORS,
    NODE_GROUPS,
    PUBLISHED_KIND_COLORS,
    HealthyRatioFigure,
    LossSurfaceFigure,
    PredictedMeasuredFigure,
    PublishedRunsFigure,
    ResidualsFigure,
    plot_healthy_ratio,
    plot_loss_surface,
    plot_predicted_measured,
    plot_published_runs,
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


def test_published_runs_places_each_replayed_run_by_kind_and_split():
    replay = published_runs.replay_published_runs()
    runs = replay.runs
    ax = plot_published_runs(replay)
    drawn = {}
    for collection in ax.collections:
        kind, is_held = collection.get_label().split("|")
        np.testing.assert_allclose(collection.get_edgecolor()[0], to_rgba(PUBLISHED_KIND_COLORS[kind]))
        filled = len(collection.get_facecolor()) and collection.get_facecolor()[0][3] > 0
        assert bool(filled) == (is_held == "True")  # held-out runs filled, fitted runs hollow
        drawn[kind, is_held == "True"] = collection.get_offsets()
    # 23 fitted GPT rows, 85 held out (make validate); Grok-1's six runs are the only mixture of experts.
    assert sum(len(points) for (_, held), points in drawn.items() if not held) == 23
    assert sum(len(points) for (_, held), points in drawn.items() if held) == 85
    assert len(drawn["mixture of experts", True]) == 6 and ("mixture of experts", False) not in drawn
    # Llama 3 405B on 8,192 GPUs: measured 164 tokens/s per GPU, predicted 159 (-2.9 %), a held-out dense BF16 point.
    row = np.flatnonzero(runs["id"] == "llama3-405b-8192gpu")[0]
    point = replay.measured_tokens_per_s_per_gpu[row], replay.predicted_tokens_per_s_per_gpu[row]
    assert point[1] / point[0] - 1 == pytest.approx(-0.029, abs=0.001)
    assert any(np.allclose(p, point) for p in drawn["dense BF16", True])
    diagonal, upper, lower = ax.lines
    np.testing.assert_allclose(diagonal.get_ydata(), diagonal.get_xdata())
    np.testing.assert_allclose(upper.get_ydata() / upper.get_xdata(), 1.15)
    np.testing.assert_allclose(lower.get_ydata() / lower.get_xdata(), 0.85)


def test_published_runs_updated_twice_draws_what_a_fresh_one_draws():
    # Every published run, then only the Llama 3 family's (fewer points, other limits, no MoE), in both orders.
    every_run = published_runs.replay_published_runs()
    llama = published_runs.load_published_runs()
    llama3 = published_runs.replay_published_runs(llama.subset(llama["family"] == "llama3"))

    def build():
        figure = Figure(figsize=(6, 4.5), dpi=72)
        return figure, PublishedRunsFigure(figure.add_axes((0.16, 0.12, 0.8, 0.8)))

    for first, second in ((every_run, llama3), (llama3, every_run)):
        assert_updates_match_a_fresh_build(build, _update(first), _update(second))


def _sick_replay():
    """Five 1B runs by hand: three on 1 node (MFU 0.1, 0.1 and 0.04, predicted 2×, 4× and 10× too high: the 0.04 run
    is below half its cell's best, unhealthy), two on 2 nodes (0.2 and 0.05: the second unhealthy, ratios 1 and 8)."""
    runs = validation.PlaybookRuns(
        {
            "model": np.array(["1B"] * 5),
            "status": np.array(["success"] * 5),
            "nodes": np.array([1, 1, 1, 2, 2]),
            "tp": np.ones(5, dtype=int),
            "pp": np.ones(5, dtype=int),
            "zero_stage": np.zeros(5, dtype=int),
            "measured_mfu": np.array([0.1, 0.1, 0.04, 0.2, 0.05]),
            "measured_memory_bytes": np.full(5, 40e9),
        }
    )
    columns = {
        "predicted_mfu": np.array([0.2, 0.4, 0.4, 0.2, 0.4]),
        "predicted_memory_bytes": np.full(5, 40e9),
        "predicted_fits": np.ones(5, dtype=bool),
    }
    return validation.Replay(runs, columns)


def test_healthy_ratio_draws_all_runs_and_the_healthy_ones():
    figure = HealthyRatioFigure(plt.subplots()[1])
    ax = figure.ax
    figure.update((_sick_replay(), None))
    every, healthy = ax.lines[1], ax.lines[4]  # ax.lines[0] is the line at 1; each series has two cap lines
    np.testing.assert_allclose(every.get_ydata(), [4.0, 4.5])  # medians of (2, 4, 10) and (1, 8)
    np.testing.assert_allclose(healthy.get_ydata(), [3.0, 1.0])  # medians of (2, 4) and (1)
    assert [tick.get_text() for tick in ax.get_xticklabels()] == ["1\n(3/2)", "2\n(2/1)"]  # nodes (all/healthy)
    assert [text.get_text() for text in ax.texts] == ["4×", "4.5×", "3×", "1×"]
    figure.update((_sick_replay(), None))
    assert len(ax.lines) == 7 and len(ax.texts) == 4  # redrawn, not added


def test_healthy_ratio_on_the_playbook_grows_with_nodes_only_for_all_runs(replay, runs):
    held = np.isin(runs["model"], validation.HELD_OUT_MODELS)
    ax = plot_healthy_ratio(replay, held)
    every, healthy = ax.lines[1].get_ydata(), ax.lines[4].get_ydata()
    # make validate's held-out ratios by nodes: 0.98× on 1 node, 10.25× on 64; the healthy runs within 10 % up to 32.
    assert every[0] == pytest.approx(0.98, abs=0.01) and every[-1] == pytest.approx(10.25, abs=0.01)
    assert np.all(np.abs(healthy[:-1] - 1) < 0.1) and healthy[-1] == pytest.approx(1.27, abs=0.01)


def test_loss_surface_takes_the_reference_grid():
    efficiencies, overheads = published_runs.REFERENCE_FIT_GRID
    surface = np.ones((len(efficiencies), len(overheads)))
    surface[11, 15] = 0.07  # 62 % of peak, 1.5 ms: the reference's constants
    ax = plot_loss_surface(surface, grid=published_runs.REFERENCE_FIT_GRID)
    assert [float(v[0]) for v in ax.lines[0].get_data()] == [15.0, 11.0]
    assert (efficiencies[11], overheads[15]) == (0.62, 0.0015)
    assert not ax.texts  # 744 cells: too many to write each loss in
    with pytest.raises(ValueError, match="result must be a surface of the grid's shape"):
        LossSurfaceFigure(plt.subplots()[1]).update(surface)


def test_a_written_loss_surface_never_ties_its_minimum_with_a_neighbour():
    efficiencies, overheads = validation.FIT_GRID
    surface = np.full((len(efficiencies), len(overheads)), 0.2)
    surface[3, 4], surface[3, 5], surface[4, 4] = 0.086, 0.092, 0.094  # all three read "9" with no decimals
    ax = plot_loss_surface(surface)
    labels = sorted((text.get_text() for text in ax.texts), key=float)
    assert labels[:3] == ["8.6", "9.2", "9.4"] and len(ax.texts) == surface.size


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
        HealthyRatioFigure,
    ],
    ids=["predicted-mfu", "predicted-memory", "residuals-nodes", "residuals-zero-stage-memory", "healthy-ratio"],
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
