"""Lab 1 (course_lib.widgets.ring) in-process (no browser, no kernel): every control swept over its range, each
result checked against the formula recomputed here by hand and against course_lib, the figure updated in place, the
summary in units, and the dependent controls never reaching an invalid combination."""

import matplotlib

matplotlib.use("Agg")

import io
import math

import numpy as np
import pytest
import traitlets
from lab_checks import assert_plain_and_finite, assert_result_as_before, option_values, png_pixels
from matplotlib.colors import to_rgba

from course_lib import collectives, simulate, units
from course_lib.viz.ring_allreduce import level_colors
from course_lib.widgets.ring import (
    MAX_STEP_RANKS,
    PAYLOADS_BYTES,
    RANKS,
    ring_allreduce_lab,
)

RING_RESULT_KEYS = {
    "time_s",
    "latency_term_s",
    "bandwidth_term_s",
    "algbw_bytes_per_s",
    "busbw_bytes_per_s",
    "crossover_bytes",
    "phases",
    "regime",
}
POWER_OF_TWO_ONLY = {"recursive_doubling", "rabenseifner"}


# --- lab 1: ring all-reduce ------------------------------------------------------------------------------------


def alpha_beta_by_hand(p, size, algorithm):
    """(phases n, wire bytes Q) of each all-reduce algorithm, from lesson 02's table, computed here without
    course_lib: ring 2(p−1), 2(p−1)/p·S; binomial tree 2⌈lg p⌉, 2⌈lg p⌉·S; recursive doubling lg p, lg p·S;
    Rabenseifner 2 lg p, 2(p−1)/p·S; double binary tree 2⌊lg p⌋, 2S + ⌊lg p⌋·S/64 (64 chunks per tree)."""
    lg = math.ceil(math.log2(p))
    depth = math.floor(math.log2(p))
    return {
        "ring": (2 * (p - 1), 2 * (p - 1) / p * size),
        "binomial_tree": (2 * lg, 2 * lg * size),
        "recursive_doubling": (lg, lg * size),
        "rabenseifner": (2 * lg, 2 * (p - 1) / p * size),
        "double_binary_tree": (2 * depth, (2 + depth / 64) * size),
    }[algorithm]


def check_ring_result(lab):
    values, result = lab.values(), lab.result
    p, size = values["ranks"], values["payload_bytes"]
    bandwidth, latency, algorithm = values["bandwidth_bytes_per_s"], values["latency_s"], values["algorithm"]
    phases, wire = alpha_beta_by_hand(p, size, algorithm)
    time_s = phases * latency + wire / bandwidth
    assert RING_RESULT_KEYS <= set(result)
    assert_plain_and_finite(result)
    assert result["phases"] == phases
    assert result["latency_term_s"] == pytest.approx(phases * latency, rel=1e-12)
    assert result["bandwidth_term_s"] == pytest.approx(wire / bandwidth, rel=1e-12)
    assert result["time_s"] == pytest.approx(time_s, rel=1e-12)
    assert result["algbw_bytes_per_s"] == pytest.approx(size / time_s, rel=1e-12)
    assert result["busbw_bytes_per_s"] == pytest.approx(size / time_s * 2 * (p - 1) / p, rel=1e-12)
    assert result["crossover_bytes"] == pytest.approx(phases * latency * bandwidth / (wire / size), rel=1e-12)
    latency_term, bandwidth_term = phases * latency, wire / bandwidth
    tie = math.isclose(latency_term, bandwidth_term, rel_tol=1e-9)  # at the crossover: bandwidth-bound from there up
    assert result["regime"] == ("latency-bound" if latency_term > bandwidth_term and not tie else "bandwidth-bound")
    # ... and exactly what course_lib says.
    assert result["time_s"] == collectives.collective_time("all_reduce", p, size, bandwidth, latency, algorithm)
    assert result["busbw_bytes_per_s"] == collectives.busbw_bytes_per_s("all_reduce", p, size, result["time_s"])
    assert result["crossover_bytes"] == collectives.latency_bandwidth_crossover_bytes(
        "all_reduce", p, bandwidth, latency, algorithm
    )
    times = {
        a: collectives.collective_time("all_reduce", p, size, bandwidth, latency, a)
        for a in collectives.ALGORITHMS["all_reduce"]
        if a not in POWER_OF_TWO_ONLY or p & (p - 1) == 0
    }
    assert result["fastest_algorithm"] == min(times, key=times.get)


def check_ring_figure(lab, figure):
    r = lab.result
    assert lab.figure is figure, "the figure was rebuilt"
    np.testing.assert_allclose(np.ravel(lab.time_figure.point.get_data()), [r["payload_bytes"], r["time_s"]])
    assert lab.time_figure.point_label.get_text() == units.format_time(r["time_s"])
    curve = lab.time_figure.curves[r["algorithm"]]
    assert curve.get_visible()
    np.testing.assert_allclose(
        curve.get_ydata(),
        collectives.collective_time(
            "all_reduce", r["ranks"], curve.get_xdata(), r["bandwidth_bytes_per_s"], r["latency_s"], r["algorithm"]
        ),
    )
    for algorithm, line in lab.time_figure.curves.items():
        assert line.get_visible() == (algorithm not in POWER_OF_TWO_ONLY or r["ranks"] & (r["ranks"] - 1) == 0)
    inside = PAYLOADS_BYTES[0] < r["crossover_bytes"] < PAYLOADS_BYTES[-1]
    assert lab.time_figure.crossover.get_visible() == inside
    if inside:
        assert list(lab.time_figure.crossover.get_xdata()) == [r["crossover_bytes"]] * 2
    summary = lab.summary.value
    for key in ("time_s", "latency_term_s", "bandwidth_term_s"):
        assert units.format_time(r[key]) in summary
    for key in ("algbw_bytes_per_s", "busbw_bytes_per_s"):
        assert units.format_bandwidth(r[key]) in summary
    assert units.format_bytes(r["crossover_bytes"]) in summary and r["regime"] in summary
    assert "nan" not in summary.lower()
    assert lab.image.value[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def ring():
    return ring_allreduce_lab()


def test_ring_defaults_are_the_cards_numbers(ring):
    values = ring.values()
    assert (values["algorithm"], values["ranks"], values["step"]) == ("ring", 8, 0)
    assert [values["payload_bytes"], values["bandwidth_bytes_per_s"], values["latency_s"]] == pytest.approx(
        [100 * units.MB, 50 * units.GB, 5 * units.US], rel=1e-12
    )
    r = ring.result
    assert units.format_time(r["time_s"]) == "3.57 ms"
    assert units.format_time(r["latency_term_s"]) == "70 µs" and units.format_time(r["bandwidth_term_s"]) == "3.5 ms"
    assert units.format_bytes(r["crossover_bytes"]) == "2 MB"  # p·α·B = 8 × 5 µs × 50 GB/s
    assert units.format_bandwidth(r["busbw_bytes_per_s"]) == "49 GB/s"
    assert r["regime"] == "bandwidth-bound" and r["phases"] == 14


@pytest.mark.parametrize(
    "name, low, high",
    [
        ("ranks", 2, 1024),
        ("payload_bytes", 1e3, 1e10),
        ("bandwidth_bytes_per_s", 1e9, 1e12),
        ("latency_s", 1e-7, 1e-4),
    ],
)
def test_ring_control_ranges_and_unit_readouts(ring, name, low, high):
    control = ring.controls[name]
    assert option_values(control)[0] == pytest.approx(low) and option_values(control)[-1] == pytest.approx(high)
    assert option_values(control) == sorted(option_values(control))
    labels = [label for label, _ in control.options]
    if name == "payload_bytes":
        assert "100 MB" in labels and "1 kB" in labels and "10 GB" in labels
    if name == "latency_s":
        assert "5 µs" in labels and "100 ns" in labels and "100 µs" in labels
    if name == "bandwidth_bytes_per_s":
        assert "50 GB/s" in labels and "1 TB/s" in labels


@pytest.mark.parametrize("ranks", RANKS)
def test_ring_every_algorithm_offered_for_every_rank_count(ring, ranks):
    figure = ring.figure
    ring.controls["ranks"].value = ranks
    offered = option_values(ring.controls["algorithm"])
    power_of_two = ranks & (ranks - 1) == 0
    assert offered == [a for a in collectives.ALGORITHMS["all_reduce"] if power_of_two or a not in POWER_OF_TWO_ONLY]
    for algorithm, payload in zip(offered, (PAYLOADS_BYTES[0], PAYLOADS_BYTES[-1], 1e6, 1e8), strict=False):
        ring.controls["algorithm"].value = algorithm
        ring.controls["payload_bytes"].value = payload
        check_ring_result(ring)
        check_ring_figure(ring, figure)
    step = ring.controls["step"]
    assert step.disabled == (ranks > MAX_STEP_RANKS)
    if ranks <= MAX_STEP_RANKS:
        assert step.max == 2 * (ranks - 1)
    ring.controls["algorithm"].value = "ring"
    ring.controls["payload_bytes"].value = 100 * units.MB


def test_ring_power_of_two_choice_falls_back_to_the_ring():
    lab = ring_allreduce_lab(algorithm="rabenseifner")
    lab.controls["ranks"].value = 6
    assert lab.controls["algorithm"].value == "ring" and lab.result["algorithm"] == "ring"
    check_ring_result(lab)
    with pytest.raises(traitlets.TraitError):  # not among the offered options: unreachable
        lab.controls["algorithm"].value = "recursive_doubling"
    lab.controls["ranks"].value = 16
    lab.controls["algorithm"].value = "recursive_doubling"
    check_ring_result(lab)
    assert "power-of-two" in lab.children[-3].value  # the note under the controls says why


def test_ring_step_view_follows_the_simulation():
    lab = ring_allreduce_lab(ranks=4)
    sim = simulate.simulate("all_reduce", 4, algorithm="ring", elements=4)
    levels = [to_rgba(c) for c in level_colors(4)]
    for step in range(0, 7):
        lab.controls["step"].value = step
        faces = lab.step_figure.cells.get_facecolor().reshape(MAX_STEP_RANKS, MAX_STEP_RANKS, 4)
        final = sim.holdings(step)
        for r in range(4):
            for c in range(4):
                if final[r, c]:
                    np.testing.assert_allclose(faces[r, c], levels[-1])  # the darkest shade: summed over all 4
        assert faces[4:, :, 3].max() == 0 and faces[:, 4:, 3].max() == 0  # unused cells hidden
        heads = lab.step_figure.heads.get_xdata()
        assert len(heads) == (0 if step == 0 else 4)  # one transfer per rank per step
        assert lab.result["step_phase"] == (
            "before any transfer" if step == 0 else "reduce-scatter" if step <= 3 else "all-gather"
        )
        assert lab.step_figure.title.get_text().startswith(f"ring step {step} of 6")
    assert sim.holdings(6).all()
    lab.controls["ranks"].value = 16
    assert not lab.step_figure.cells.get_visible() and all(text.get_visible() for text in lab.step_figure.too_many)
    assert "up to 8 ranks" in " ".join(text.get_text() for text in lab.step_figure.too_many)


def test_ring_partial_redraw_matches_a_full_draw():
    lab = ring_allreduce_lab()
    # Each change of ranks swaps the cached background of both panels (legend, grid labels); a stale one shows here.
    for changes in ({"ranks": 6, "step": 7}, {"ranks": 64, "payload_bytes": 1e3}, {"ranks": 2, "latency_s": 1e-4}):
        for name, value in changes.items():
            lab.controls[name].value = value
        blitted = png_pixels(lab.image.value).astype(int)
        buffer = io.BytesIO()
        lab.figure.savefig(buffer, format="png")
        full = png_pixels(buffer.getvalue()).astype(int)
        assert blitted.shape == full.shape
        assert np.abs(blitted - full).max() <= 2, f"stale background after {changes}"


def test_ring_time_plot_takes_the_whole_width_when_there_is_no_step_grid():
    # Issue 15: at p = 48 the time plot was 260 px wide beside an empty panel. Without a grid it takes the width.
    lab = ring_allreduce_lab()
    time_ax, step_ax = lab.time_figure.axes[0], lab.step_figure.ax
    narrow = time_ax.get_position().width
    assert narrow < 0.5 and step_ax.get_visible()
    lab.controls["ranks"].value = 48
    assert time_ax.get_position().width > 0.8 and not step_ax.get_visible()
    assert not lab.step_figure.title.get_visible()
    legend = time_ax.get_legend().get_window_extent(lab.figure.canvas.get_renderer())
    assert legend.x0 >= 0, "the legend stays on the figure"
    lab.controls["ranks"].value = 8
    assert time_ax.get_position().width == pytest.approx(narrow) and step_ax.get_visible()
    assert lab.step_figure.title.get_visible()


def test_ring_regime_flips_at_the_crossover():
    lab = ring_allreduce_lab(payload_bytes=2 * units.MB)  # S* = p·α·B = 8 × 5 µs × 50 GB/s
    assert lab.result["regime"] == "bandwidth-bound" and "at the crossover" in lab.summary.value
    assert units.format_time(lab.result["latency_term_s"]) == units.format_time(lab.result["bandwidth_term_s"])
    lab.controls["payload_bytes"].value = 1.5 * units.MB
    assert lab.result["regime"] == "latency-bound" and "at the crossover" not in lab.summary.value


def test_ring_values_within_rounding_error_name_the_same_stop():
    lab = ring_allreduce_lab(latency_s=100 * units.US)  # 9.999999999999999e-05, the 1e-4 stop
    assert lab.values()["latency_s"] == 1e-4
    assert option_values(lab.controls["latency_s"]).count(1e-4) == 1
    lab.controls["latency_s"].value = 5 * units.US
    assert lab.controls["latency_s"].label == "5 µs"
    check_ring_result(lab)
    with pytest.raises(traitlets.TraitError):  # a payload between the stops is not a position of the slider
        lab.controls["payload_bytes"].value = 64.5 * units.MB


def test_ring_initial_values():
    lab = ring_allreduce_lab(ranks=10, payload_bytes=64 * units.MB, latency_s=1.5 * units.US)
    assert lab.values()["ranks"] == 10 and lab.values()["payload_bytes"] == 64 * units.MB  # kept, not snapped
    check_ring_result(lab)
    for bad in (
        {"ranks": 1},
        {"ranks": 2048},
        {"payload_bytes": 0},
        {"bandwidth_bytes_per_s": 1e13},
        {"latency_s": -1e-6},
        {"algorithm": "rabenseifner", "ranks": 6},
        {"algorithm": "tree"},
        {"step": 15},
        {"colour": "red"},
    ):
        with pytest.raises(ValueError):
            ring_allreduce_lab(**bad)


# --- the typed result: one frozen RingResult per refresh, one model call, the same plain dict ---------------------


def ring_result_as_before(values):
    """``lab.result`` as the lab built it before it had a typed result: ``collective_report``'s numbers copied into
    a dict, written out here once more so that the dict view cannot drift."""
    p, step = values["ranks"], values["step"]
    report = collectives.collective_report(
        "all_reduce",
        p,
        values["payload_bytes"],
        values["bandwidth_bytes_per_s"],
        values["latency_s"],
        values["algorithm"],
    )
    times = dict(report.times_by_algorithm)
    return {
        **{key: getattr(report, key) for key in ("time_s", "latency_term_s", "bandwidth_term_s")},
        **{key: getattr(report, key) for key in ("algbw_bytes_per_s", "busbw_bytes_per_s")},
        "busbw_factor": collectives.busbw_factor("all_reduce", p),
        "crossover_bytes": report.crossover_bytes,
        "phases": int(report.phases),
        "wire_bytes": float(report.wire_bytes),
        "regime": report.regime,
        "fastest_algorithm": min(times, key=times.get),
        "ranks": p,
        **{key: getattr(report, key) for key in ("payload_bytes", "bandwidth_bytes_per_s", "latency_s", "algorithm")},
        "step": step,
        "ring_steps": 2 * (p - 1),
        "step_phase": (
            collectives.ring_step_phase("all_reduce", p, step)
            if p <= MAX_STEP_RANKS
            else "not drawn (more than 8 ranks)"
        ),
        **{f"{a}_time_s": t for a, t in times.items()},
    }


def test_ring_result_is_one_frozen_dataclass_holding_the_report():
    import dataclasses

    from course_lib.widgets.ring import RingResult

    ring = ring_allreduce_lab()  # 8 ranks: steps 0..14
    r = ring.typed_result
    assert isinstance(r, RingResult) and isinstance(r.report, collectives.CollectiveReport)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.step = 1
    assert r.report == collectives.collective_report(
        "all_reduce", r.report.ranks, r.report.payload_bytes, r.report.bandwidth_bytes_per_s, r.report.latency_s
    )
    with pytest.raises(ValueError, match="step must be in 0..14"):
        RingResult(r.report, 15, r.busbw_factor)
    with pytest.raises(ValueError, match="report must be of an all_reduce"):
        RingResult(collectives.collective_report("all_gather", 8, 1e6, 1e9, 1e-6), 0, 1.0)
    assert not hasattr(ring, "report")  # no side channel: the figure and the summary read typed_result


def test_ring_dict_view_is_what_it_was_for_many_settings():
    assert_result_as_before(ring_allreduce_lab(), ring_result_as_before, moves=120, seed=21)


def test_ring_refresh_calls_the_model_once(ring):
    from unittest import mock

    from course_lib.widgets import ring as ring_module

    with mock.patch.object(ring_module.collectives, "collective_report", wraps=collectives.collective_report) as report:
        for payload in PAYLOADS_BYTES[::10]:
            report.reset_mock()
            ring.controls["payload_bytes"].value = payload
            assert report.call_count == 1
        report.reset_mock()
        ring.controls["ranks"].value = 6  # moves the algorithm and the step too: still one refresh, one call
        assert report.call_count == 1
