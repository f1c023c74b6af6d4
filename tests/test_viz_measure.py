"""course_lib.viz.measure: each figure draws the numbers it is given (read back from the artists)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from lab_checks import assert_updates_match_a_fresh_build
from matplotlib.figure import Figure

from course_lib import collectives
from course_lib.measure import SCHEDULES, Measurements, Row, StepMeasurements, fit_alpha_beta
from course_lib.viz.measure import AlgorithmsFigure, StepFigure, SweepFigure, plot_algorithms, plot_step, plot_sweep


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _table(algorithm="ring", latency_s=5e-6, bandwidth=2e9, spread=0.1, sizes=range(3, 25, 3), fell_back=()):
    """One algorithm on 2 ranks at 2^k bytes for k in ``sizes``; MPICH fell back at the k in ``fell_back``."""
    rows = []
    for k in sizes:
        size = 2**k
        t = collectives.collective_time("all_reduce", 2, size, bandwidth, latency_s, algorithm)
        rows.append(Row("all_reduce", algorithm, 2, size, t, t * (1 - spread), t * (1 + spread), size / t, size / t,
                        5, k in fell_back))  # fmt: skip
    return Measurements(tuple(rows))


def test_sweep_draws_the_medians_their_spread_and_the_fit():
    table = _table()
    fit = fit_alpha_beta(table)
    ax = plot_sweep(table, fit)
    points = ax.lines[0]
    np.testing.assert_allclose(points.get_xdata(), table.size_bytes)
    np.testing.assert_allclose(points.get_ydata(), table.median_s)
    (bars,) = [c for c in ax.collections if len(c.get_segments()) == len(table)]
    lows = [segment[:, 1].min() for segment in bars.get_segments()]
    np.testing.assert_allclose(lows, table.p10_s)
    fitted = next(line for line in ax.lines if line.get_label().startswith("fit"))
    np.testing.assert_allclose(fitted.get_ydata(), fit.predict_s(fitted.get_xdata()), rtol=1e-12)
    assert any(f"α = {'5 µs'}" in line.get_label() for line in ax.lines)


def test_sweep_figure_updates_in_place():
    figure = SweepFigure(plt.subplots()[1])
    ax = figure.ax
    figure.update((_table(), None))
    drawn = len(ax.lines) + len(ax.collections)
    figure.update((_table(latency_s=50e-6), None))
    assert len(ax.lines) + len(ax.collections) == drawn  # the old points were removed, not drawn over
    assert ax.lines[0].get_ydata()[0] == pytest.approx(_table(latency_s=50e-6).median_s[0])


def test_algorithms_plots_each_time_over_the_fastest():
    table = Measurements.concat([_table("ring"), _table("recursive_doubling", latency_s=3e-6, bandwidth=1.5e9)])
    ax = plot_algorithms(table)
    lines = {line.get_gid(): line for line in ax.lines if str(line.get_gid()).startswith("algorithm:")}
    assert [line.get_label() for line in lines.values()] == ["recursive doubling", "ring"]
    ratios = np.array([line.get_ydata() for line in lines.values()])
    np.testing.assert_allclose(ratios.min(axis=0), 1.0)
    # at 8 B recursive doubling (1 phase of 3 µs) beats ring (2 phases of 5 µs): ring is ~3.3× slower there
    ring = lines["algorithm:ring"]
    assert ring.get_ydata()[0] == pytest.approx((2 * 5e-6 + 8 / 2e9) / (3e-6 + 8 / 1.5e9), rel=1e-9)


def test_step_stacks_compute_and_exposed():
    median = dict(zip(SCHEDULES, (0.05, 0.03, 0.08, 0.082, 0.06, 0.07), strict=True))
    step = StepMeasurements(2, 2e9, 16 * 2**20, 4, median, median, median, {})
    ax = plot_step(step)
    heights = [(round(p.get_x() + p.get_width() / 2), p.get_y(), p.get_height()) for p in ax.patches if p.get_height()]
    # blocking (x = 2): compute 50 ms from 0, then 30 ms exposed on top
    assert (2, 0.0, pytest.approx(0.05)) in heights and (2, pytest.approx(0.05), pytest.approx(0.03)) in heights
    labels = [text.get_text() for text in ax.texts]
    assert "exposed\n30 ms" in labels and "exposed\n10 ms" in labels


def _built(live_figure):
    """A builder for ``assert_updates_match_a_fresh_build``: ``live_figure`` on the axes of a new 6 × 4 in figure."""

    def build():
        figure = Figure(figsize=(6, 4), dpi=72)
        return figure, live_figure(figure.add_axes((0.14, 0.14, 0.8, 0.76)))

    return build


def _sweep(table, fitted):
    result = (table, fit_alpha_beta(table) if fitted else None)
    return lambda live: live.update(result)


@pytest.mark.parametrize(
    "first, second",
    [
        # a fit (its lines, the crossover and set y limits) then none: the limits follow the second table alone
        (_sweep(_table(fell_back=(24,)), True), _sweep(_table(latency_s=50e-6, sizes=range(10, 20)), False)),
        (_sweep(_table(sizes=range(3, 12), spread=0.4), False), _sweep(_table(bandwidth=9e9, fell_back=(3,)), True)),
    ],
)
def test_sweep_figure_updated_twice_draws_what_a_fresh_one_draws(first, second):
    assert_updates_match_a_fresh_build(_built(SweepFigure), first, second)
    _, live = _built(SweepFigure)()
    first(live)
    second(live)
    assert len(live.ax.get_legend().get_texts()) == len(set(live.ax.get_legend_handles_labels()[1]))  # once each


def _algorithms(*tables):
    table = Measurements.concat(list(tables))
    return lambda live: live.update(table)


def test_algorithms_figure_updated_twice_draws_what_a_fresh_one_draws():
    three = _algorithms(_table("ring"), _table("recursive_doubling", 3e-6, 1.5e9), _table("rabenseifner", 4e-6, 3e9))
    two = _algorithms(_table("ring", sizes=range(12, 22)), _table("recursive_doubling", 1e-6, 1e9, sizes=range(12, 22)))
    assert_updates_match_a_fresh_build(_built(AlgorithmsFigure), three, two)


def _step(median, fitted):
    step = StepMeasurements(2, 2e9, 16 * 2**20, 4, median, median, median, {})
    result = (step, fit_alpha_beta(_table()) if fitted else None)
    return lambda live: live.update(result)


def test_step_figure_updated_twice_draws_what_a_fresh_one_draws():
    slow = _step(dict(zip(SCHEDULES, (0.05, 0.03, 0.08, 0.082, 0.06, 0.07), strict=True)), True)
    fast = _step(dict(zip(SCHEDULES[:3], (0.02, 0.01, 0.025), strict=True)), False)
    assert_updates_match_a_fresh_build(_built(StepFigure), slow, fast)
    assert_updates_match_a_fresh_build(_built(StepFigure), fast, slow)
