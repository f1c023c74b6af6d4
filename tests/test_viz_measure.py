"""course_lib.viz.measure: each figure draws the numbers it is given (read back from the artists)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from course_lib import collectives
from course_lib.measure import SCHEDULES, Measurements, Row, StepMeasurements, fit_alpha_beta
from course_lib.viz.measure import SweepFigure, plot_algorithms, plot_step, plot_sweep


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _table(algorithm="ring", latency_s=5e-6, bandwidth=2e9, spread=0.1):
    rows = []
    for size in (2**k for k in range(3, 25, 3)):
        t = collectives.collective_time("all_reduce", 2, size, bandwidth, latency_s, algorithm)
        rows.append(Row("all_reduce", algorithm, 2, size, t, t * (1 - spread), t * (1 + spread), size / t, size / t,
                        5, False))  # fmt: skip
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
    figure = SweepFigure()
    ax = figure.build(plt.subplots()[1])
    figure.update((_table(), None))
    drawn = len(ax.lines) + len(ax.collections)
    figure.update((_table(latency_s=50e-6), None))
    assert len(ax.lines) + len(ax.collections) == drawn  # the old points were removed, not drawn over
    assert ax.lines[0].get_ydata()[0] == pytest.approx(_table(latency_s=50e-6).median_s[0])


def test_algorithms_plots_each_time_over_the_fastest():
    table = Measurements.concat([_table("ring"), _table("recursive_doubling", latency_s=3e-6, bandwidth=1.5e9)])
    ax = plot_algorithms(table)
    ratios = np.array([line.get_ydata() for line in ax.lines if line.get_label() in ("ring", "recursive_doubling")])
    np.testing.assert_allclose(ratios.min(axis=0), 1.0)
    # at 8 B recursive doubling (1 phase of 3 µs) beats ring (2 phases of 5 µs): ring is ~3.3× slower there
    ring = next(line for line in ax.lines if line.get_label() == "ring")
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
