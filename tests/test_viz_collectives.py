"""course_lib.viz.collectives, the figures of lesson 02 and the ring lab's time panel: what each figure holds (lines,
bars, texts, scales, labels), never pixels, and that a live figure updated twice matches one built at once."""

import matplotlib

matplotlib.use("Agg")

import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
from lab_checks import assert_updates_match_a_fresh_build, by_gid
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

from course_lib import collectives
from course_lib.simulate import reference, simulate
from course_lib.viz.collectives import (
    SUM_COLOR,
    CollectiveTimeFigure,
    demo_inputs,
    plot_collective_data,
    plot_collective_time_vs_payload,
)
from course_lib.viz.style import RANK_COLORS


@pytest.fixture
def two_axes():
    _, axes = plt.subplots(1, 2)
    return axes


# --- plot_collective_data --------------------------------------------------------------------------------------


def row_values(ax, ranks):
    """The numbers the cells of each row show, left to right (a "Σ 100" cell shows 100)."""
    rows = [[] for _ in range(ranks)]
    for text in sorted(ax.texts, key=lambda t: t.get_position()[0]):
        x, y = text.get_position()
        rows[round(y)].append(int(re.search(r"-?\d+$", text.get_text()).group()))
    return rows


@pytest.mark.parametrize("op", collectives.OPS)
@pytest.mark.parametrize("ranks", [3, 4])
def test_collective_data_after_panel_shows_the_simulated_outputs(op, ranks, two_axes):
    axes = plot_collective_data(op, ranks, axes=two_axes)
    assert len(axes) == 2
    assert [ax.get_title() for ax in axes] == ["before", f"after {op}"]
    inputs = demo_inputs(op, ranks)
    outputs = simulate(op, ranks, inputs, algorithm="pairwise" if op == "all_to_all" else "ring").outputs
    assert row_values(axes[1], ranks) == [list(out) for out in outputs]
    assert row_values(axes[1], ranks) == [list(out) for out in reference(op, inputs)]
    if op != "broadcast":  # broadcast shows only the root's input (the others are never used)
        assert row_values(axes[0], ranks) == [list(array) for array in inputs]


def test_collective_data_inputs_identify_rank_and_chunk():
    assert [list(a) for a in demo_inputs("all_reduce", 3)] == [[10, 11, 12], [20, 21, 22], [30, 31, 32]]


def test_collective_data_colours_sums_and_sources():
    def face(ax, r, c):
        return next(p.get_facecolor() for p in ax.patches if p.get_xy() == (c - 0.5, r - 0.5))

    axes = plot_collective_data("all_reduce", 4)
    assert all(t.get_text().startswith("Σ ") for t in axes[1].texts) and len(axes[1].texts) == 16
    assert face(axes[1], 2, 1) == to_rgba(SUM_COLOR)
    axes = plot_collective_data("all_gather", 4)
    assert face(axes[1], 0, 3) == to_rgba(RANK_COLORS[3])  # rank 0 now holds rank 3's chunk
    axes = plot_collective_data("all_to_all", 4)
    assert "pairwise" in axes[1].get_xlabel() and "by source rank" in axes[1].get_xlabel()


def test_collective_data_other_algorithms_and_given_axes():
    fig, given = plt.subplots(1, 2)
    axes = plot_collective_data("all_reduce", 4, algorithm="recursive_doubling", axes=given)
    assert list(axes) == list(given) and "recursive_doubling, 2 steps" in axes[1].get_xlabel()
    axes = plot_collective_data("all_to_all", 4, algorithm="bruck")
    assert "bruck" in axes[1].get_xlabel()


# --- plot_collective_time_vs_payload ---------------------------------------------------------------------------


def test_time_vs_payload_curves_are_the_cost_model():
    ax = plot_collective_time_vs_payload()
    curves = by_gid(ax.lines, "time:")
    assert [c.get_gid() for c in curves] == [f"time:{a}" for a in collectives.ALGORITHMS["all_reduce"]]
    assert all(c.get_visible() for c in curves)
    payload, time = curves[0].get_data()
    np.testing.assert_allclose(time, collectives.ring_allreduce_time(8, payload, 50e9, 5e-6), rtol=1e-12)
    for curve in curves[1:]:
        x, y = curve.get_data()
        expected = collectives.collective_time("all_reduce", 8, x, 50e9, 5e-6, curve.get_gid().removeprefix("time:"))
        np.testing.assert_allclose(y, expected, rtol=1e-12)
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    assert "(bytes)" in ax.get_xlabel() and "(s)" in ax.get_ylabel()
    assert ax.get_title() == "all_reduce, 8 ranks, 50 GB/s, 5 µs"
    assert ax.get_xlim() == pytest.approx((1e3, 1e10))
    assert ax.xaxis.get_major_formatter()(1e6, 0) == "1 MB"
    assert ax.yaxis.get_major_formatter()(2e-3, 0) == "2 ms"
    # the time range is the curves': the fastest at 1 kB / 4 up to the slowest at 10 GB × 3
    slowest = max(
        collectives.collective_time("all_reduce", 8, 1e10, 50e9, 5e-6, a) for a in collectives.ALGORITHMS["all_reduce"]
    )
    assert ax.get_ylim()[1] == pytest.approx(3 * slowest)
    assert not by_gid(ax.lines, "mark")[0].get_visible()  # no payload marked


def test_time_vs_payload_crossover_line_and_regions():
    ax = plot_collective_time_vs_payload("all_gather", 4, 100e9, 2e-6)
    (line,) = by_gid(ax.lines, "crossover")
    crossover = collectives.latency_bandwidth_crossover_bytes("all_gather", 4, 100e9, 2e-6)
    assert list(line.get_xdata()) == [crossover, crossover] and line.get_visible()
    regions = [patch for patch in ax.patches if patch.get_visible() and patch.get_alpha() == pytest.approx(0.08)]
    left, right = sorted(regions, key=lambda patch: patch.get_x())
    assert (left.get_x(), left.get_x() + left.get_width()) == pytest.approx((1e3, crossover))
    assert (right.get_x(), right.get_x() + right.get_width()) == pytest.approx((crossover, 1e10))
    # the two dotted ring terms meet at the crossover
    (latency_term,) = by_gid(ax.lines, "term:latency")
    (bandwidth_term,) = by_gid(ax.lines, "term:bandwidth")
    x = bandwidth_term.get_xdata()
    at = np.interp(np.log(crossover), np.log(x), np.log(bandwidth_term.get_ydata()))
    assert np.exp(at) == pytest.approx(latency_term.get_ydata()[0], rel=1e-3)


def test_time_vs_payload_skips_power_of_two_algorithms_and_marks_a_payload():
    ax = plot_collective_time_vs_payload(ranks=6, mark_payload_bytes=100e6)
    curves = [c for c in by_gid(ax.lines, "time:") if c.get_visible()]
    assert [c.get_gid() for c in curves] == ["time:ring", "time:binomial_tree", "time:double_binary_tree"]
    (dot,) = by_gid(ax.lines, "mark")
    ring = collectives.ring_allreduce_time(6, 100e6, 50e9, 5e-6)
    np.testing.assert_allclose(np.ravel(dot.get_data()), [100e6, ring])
    assert curves[0].get_label() == "ring: 3.38 ms at 100 MB"
    assert [t.get_text() for t in ax.get_legend().get_texts()][:3] == [
        "ring: 3.38 ms at 100 MB",
        "binomial tree",
        "double binary tree",
    ]


def test_time_vs_payload_all_to_all_and_zero_latency():
    ax = plot_collective_time_vs_payload("all_to_all", 16)
    assert [c.get_gid() for c in by_gid(ax.lines, "time:") if c.get_visible()] == ["time:pairwise", "time:bruck"]
    assert by_gid(ax.lines, "crossover")[0].get_xdata()[0] == collectives.latency_bandwidth_crossover_bytes(
        "all_to_all", 16, 50e9, 5e-6, "pairwise"
    )
    ax = plot_collective_time_vs_payload(latency_s=0, algorithms=["ring"])
    assert [c.get_gid() for c in by_gid(ax.lines, "time:") if c.get_visible()] == ["time:ring"]
    assert not by_gid(ax.lines, "crossover")[0].get_visible() and not by_gid(ax.lines, "term:latency")[0].get_visible()
    assert len(ax.get_legend().get_lines()) == 2  # the ring and its bandwidth term


# --- bad input -------------------------------------------------------------------------------------------------


BAD_CALLS = [
    (lambda: plot_collective_data("allreduce"), "op"),
    (lambda: plot_collective_data("all_reduce", 0), "ranks"),
    (lambda: plot_collective_data("all_reduce", 9), "ranks"),
    (lambda: plot_collective_data("all_reduce", 4, algorithm="pairwise"), "algorithm"),
    (lambda: plot_collective_data("all_reduce", 3, algorithm="recursive_doubling"), "ranks"),
    (lambda: plot_collective_data("all_reduce", 4, axes=[plt.gca()]), "axes"),
    (lambda: plot_collective_time_vs_payload(op="gather"), "op"),
    (lambda: plot_collective_time_vs_payload(ranks=1), "ranks"),
    (lambda: plot_collective_time_vs_payload(bandwidth_bytes_per_s=0), "bandwidth_bytes_per_s"),
    (lambda: plot_collective_time_vs_payload(latency_s=-1e-6), "latency_s"),
    (lambda: plot_collective_time_vs_payload(algorithms=["tree"]), "algorithms"),
    (lambda: plot_collective_time_vs_payload(algorithms=[]), "algorithms"),
    (lambda: plot_collective_time_vs_payload(ranks=6, algorithms=["recursive_doubling"]), "ranks"),
    (lambda: plot_collective_time_vs_payload(payload_range_bytes=(1e6, 1e3)), "payload_range_bytes"),
    (lambda: plot_collective_time_vs_payload(payload_range_bytes=(0, 1e3)), "payload_range_bytes"),
    (lambda: plot_collective_time_vs_payload(payload_range_bytes=1e6), "payload_range_bytes"),
    (lambda: plot_collective_time_vs_payload(mark_payload_bytes=-5), "mark_payload_bytes"),
]


@pytest.mark.parametrize("call, parameter", BAD_CALLS, ids=[f"{i}-{p}" for i, (_, p) in enumerate(BAD_CALLS)])
def test_bad_input_names_the_parameter(call, parameter):
    with pytest.raises(ValueError, match=rf"^{parameter}\b"):
        call()


# --- the live figure of the ring lab's time panel --------------------------------------------------------------


def _time_figure():
    figure = Figure(figsize=(6, 4), dpi=72)
    return figure, CollectiveTimeFigure(figure.add_axes((0.15, 0.3, 0.8, 0.6)), ranks_options=(2, 6, 8))


def _report(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s, algorithm):
    return collectives.collective_report(
        "all_reduce", ranks, payload_bytes, bandwidth_bytes_per_s, latency_s, algorithm
    )


def _show(report):
    def draw(live):
        live.set_static(report.ranks)
        live.update(report)

    return draw


@pytest.mark.parametrize(
    "first, second",
    [
        (_report(8, 1e8, 50e9, 5e-6, "rabenseifner"), _report(6, 1e3, 1e9, 1e-4, "binomial_tree")),
        (_report(6, 1e10, 1e12, 1e-7, "ring"), _report(8, 2e6, 50e9, 5e-6, "recursive_doubling")),
    ],
)
def test_time_figure_updated_twice_draws_what_a_fresh_one_draws(first, second):
    assert_updates_match_a_fresh_build(_time_figure, _show(first), _show(second))


def test_time_figure_curves_terms_and_crossover_are_the_report():
    _, live = _time_figure()
    report = _report(6, 1e8, 50e9, 5e-6, "ring")
    live.set_static(6)
    live.update(report)
    payloads = live.curve_payloads_bytes
    assert payloads[0] == 1e3 and payloads[-1] == pytest.approx(1e10) and len(payloads) == 71
    assert [a for a, line in live.curves.items() if line.get_visible()] == [
        "ring",
        "binomial_tree",
        "double_binary_tree",
    ]
    for algorithm in ("ring", "binomial_tree", "double_binary_tree"):
        np.testing.assert_allclose(
            live.curves[algorithm].get_ydata(),
            collectives.collective_time("all_reduce", 6, payloads, 50e9, 5e-6, algorithm),
            rtol=1e-12,
        )
    np.testing.assert_allclose(live.latency_term.get_ydata(), 10 * 5e-6)  # 2(p − 1) = 10 steps of α
    np.testing.assert_allclose(live.bandwidth_term.get_ydata(), 2 * 5 / 6 * payloads / 50e9, rtol=1e-12)
    assert live.crossover.get_xdata()[0] == pytest.approx(6 * 5e-6 * 50e9)  # S* = p·α·B for the ring
    assert live.point.get_xdata()[0] == 1e8 and live.point.get_ydata()[0] == report.time_s
    greyed = [text.get_text() for text in live.legend_texts.values() if text.get_color() == "#AAAAAA"]
    assert greyed == ["recursive doubling (2^k p)", "Rabenseifner (2^k p)"]


# ---- which rank sends what at each step (lesson 02, next to each algorithm's cost) ------------------------------


@pytest.mark.parametrize(
    "op, algorithm, ranks",
    [
        ("all_reduce", "ring", 4),
        ("all_reduce", "binomial_tree", 4),
        ("all_reduce", "recursive_doubling", 4),
        ("all_reduce", "rabenseifner", 4),
        ("all_reduce", "ring", 3),
        ("broadcast", "ring", 4),
    ],
)
def test_collective_steps_draw_every_transfer_of_the_simulation(op, algorithm, ranks):
    from course_lib.viz.collectives import plot_collective_steps

    ax = plot_collective_steps(op, algorithm, ranks=ranks)
    sim = simulate(op, ranks, demo_inputs(op, ranks), algorithm=algorithm)
    arrows = {p.get_gid(): p for p in ax.patches if isinstance(p, FancyArrowPatch) and p.get_gid()}
    expected = {
        f"transfer {step} {t.src}->{t.dst}": t for step, transfers in enumerate(sim.steps, start=1) for t in transfers
    }
    assert set(arrows) == set(expected)
    for gid, transfer in expected.items():  # red: the receiver adds in; blue: it overwrites
        red = to_rgba(arrows[gid].get_edgecolor())[0] > to_rgba(arrows[gid].get_edgecolor())[2]
        assert red == transfer.reduce, gid
    cost = collectives.collective_cost(op, ranks, sim.payload_bytes, algorithm)
    title = ax.get_title()
    assert f"n = {cost.phases} steps" in title and f"Q = {int(cost.wire_bytes)} B" in title, title
    assert len(ax.get_xticks()) == cost.phases
    plt.close("all")


def test_collective_steps_label_each_message_with_its_chunks():
    from course_lib.viz.collectives import chunk_label, plot_collective_steps

    # Rabenseifner on 4 ranks, step 1 (recursive halving): rank 0 sends chunks 2–3 to rank 2 and keeps 0–1.
    ax = plot_collective_steps("all_reduce", "rabenseifner", ranks=4)
    labels = [text.get_text() for text in ax.texts]
    assert labels[:4] == ["c2–3", "c2–3", "c0–1", "c0–1"]
    # Broadcast "ring" = binomial scatter (lg 4 = 2 steps: c2–3, then c1 and c3) + ring all-gather (3 steps): 5.
    ax = plot_collective_steps("broadcast", "ring", ranks=4)
    labels = [text.get_text() for text in ax.texts]
    assert labels[:3] == ["c2–3", "c1", "c3"] and len(ax.get_xticks()) == 5
    assert [chunk_label(c, 4) for c in [(0, 1, 2, 3), (2,), (1, 2), (1, 3)]] == ["all", "c2", "c1–2", "c1,3"]
    with pytest.raises(ValueError, match="op"):
        plot_collective_steps("all_to_all", "pairwise")
    with pytest.raises(ValueError, match="ranks"):
        plot_collective_steps("all_reduce", "ring", ranks=9)
    plt.close("all")
