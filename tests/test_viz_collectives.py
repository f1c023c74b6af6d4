"""course_lib.viz.collectives, the figures of lesson 02 and the ring lab's live figures: what each figure holds (lines,
bars, texts, scales, labels), never pixels, and that a live figure updated twice matches one built at once."""

import matplotlib

matplotlib.use("Agg")

import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
from lab_checks import assert_updates_match_a_fresh_build
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

from course_lib import collectives
from course_lib.simulate import reference, simulate
from course_lib.viz.collectives import (
    EMPTY_COLOR,
    RANK_COLORS,
    SUM_COLOR,
    CollectiveTimeFigure,
    RingStepFigure,
    demo_inputs,
    level_colors,
    plot_collective_data,
    plot_collective_time_vs_payload,
    plot_ring_allreduce_steps,
    plot_ring_step,
)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture
def two_axes():
    _, axes = plt.subplots(1, 2)
    return axes


def by_gid(artists, prefix):
    return [a for a in artists if (a.get_gid() or "").startswith(prefix)]


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


# --- plot_ring_step / plot_ring_allreduce_steps ----------------------------------------------------------------


def arrows(ax):
    return [p for p in ax.patches if isinstance(p, FancyArrowPatch)]


def final_squares(ax, ranks):
    darkest = by_gid(ax.patches, "chunk:")
    colours = [p.get_facecolor() for p in darkest]
    final = to_rgba(plt.get_cmap("Blues")(0.95))
    return sum(np.allclose(colour, final) for colour in colours), len(colours)


@pytest.mark.parametrize("op", ["all_reduce", "reduce_scatter", "all_gather"])
def test_ring_step_draws_one_arrow_per_transfer_and_shades_final_chunks(op):
    sim = simulate(op, 4, elements=4)
    _, ax = plt.subplots()
    for step in range(sim.step_count + 1):
        ax.clear()
        assert plot_ring_step(sim, step, ax=ax) is ax
        transfers = sim.steps[step - 1] if step else ()
        assert len(arrows(ax)) == len(transfers)
        labels = {t.get_text() for t in ax.texts}
        for transfer in transfers:
            assert f"c{transfer.chunks[0]}" + (" (+)" if transfer.reduce else "") in labels
        finals, squares = final_squares(ax, 4)
        assert squares == 16 and finals == sim.holdings(step).sum()


def test_ring_step_titles():
    sim = simulate("all_reduce", 4, elements=4)
    titles = [plot_ring_step(sim, step).get_title() for step in (0, 3, 4)]
    assert titles == ["step 0 of 6: before any transfer", "step 3 of 6: reduce-scatter", "step 4 of 6: all-gather"]
    assert plot_ring_step(simulate("all_gather", 3, elements=3), 1).get_title() == "step 1 of 2: all-gather"
    assert plot_ring_step(sim, 1, legend=False).get_legend() is None


def panel_artist(ax, gid):
    """The one artist of a step panel (a RingStepFigure) with this gid."""
    (artist,) = [a for a in ax.get_children() if a.get_gid() == gid]
    return artist


@pytest.mark.parametrize("ranks", [2, 3, 4, 8])
def test_ring_allreduce_steps_draw_every_step_of_the_simulation(ranks):
    axes = plot_ring_allreduce_steps(ranks)
    sim = simulate("all_reduce", ranks, elements=ranks)
    levels = [to_rgba(color) for color in level_colors(ranks)]
    steps = 2 * (ranks - 1)
    assert len(axes) == steps + 1
    for step, ax in enumerate(axes):
        phase = "before any transfer" if step == 0 else "reduce-scatter" if step < ranks else "all-gather"
        assert panel_artist(ax, "title").get_text() == f"step {step} of {steps}: {phase}"
        # One arrow per transfer, p of them in each step, each ending in the column of the chunk it carries and
        # the row of the rank that receives it.
        transfers = sim.steps[step - 1] if step else ()
        heads = panel_artist(ax, "arrowheads")
        assert len(heads.get_xdata()) == len(transfers) == (ranks if step else 0)
        assert [int(x) for x in heads.get_xdata()] == [t.chunks[0] for t in transfers]
        assert [round(y / 1.5) for y in heads.get_ydata()] == [t.dst for t in transfers]
        # Cells shaded by the simulated contributions; outlined where a chunk was received this step.
        cells = panel_artist(ax, "cells")
        faces = cells.get_facecolor().reshape(ranks, ranks, 4)
        outlined = np.asarray(cells.get_linewidth()).reshape(ranks, ranks) > 1
        counts = sim.contributions(step)
        for r in range(ranks):
            for c in range(ranks):
                np.testing.assert_allclose(faces[r, c], levels[counts[r, c] - 1])  # every copy holds ≥ 1 rank
        assert {(int(r), int(c)) for r, c in zip(*np.nonzero(outlined), strict=True)} == {
            (t.dst, t.chunks[0]) for t in transfers
        }
    assert sim.contributions(steps).min() == ranks  # the last panel: every copy the full sum


def test_ring_allreduce_steps_share_one_legend_of_shades_received_and_transfers():
    axes = plot_ring_allreduce_steps(4)
    figure = axes[0].figure
    legends = [ax.get_legend() for ax in figure.axes if ax.get_legend() is not None]
    assert len(legends) == 1 and all(ax.get_legend() is None for ax in axes)
    labels = [text.get_text() for text in legends[0].get_texts()]
    assert labels[:4] == [f"sum of {k} of 4 ranks" for k in (1, 2, 3)] + ["sum of 4 of 4 ranks (final)"]
    assert labels[4] == "received this step" and labels[5].startswith("transfer of the chunk in its column")
    assert figure.get_suptitle() == (
        "Ring all-reduce over 4 ranks: reduce-scatter (steps 1–3), then all-gather (steps 4–6)"
    )
    assert len(figure.axes) == 8  # two rows of four: the seven steps and the legend


def test_ring_allreduce_steps_in_given_axes_puts_the_legend_in_a_spare_one():
    fig, grid = plt.subplots(2, 3, figsize=(9, 6))
    axes = plot_ring_allreduce_steps(3, axes=grid)
    assert list(axes) == list(grid.flat[:5])
    assert grid.flat[5].get_legend() is not None


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


def ring_sim():
    return simulate("all_reduce", 4, elements=4)


BAD_CALLS = [
    (lambda: plot_collective_data("allreduce"), "op"),
    (lambda: plot_collective_data("all_reduce", 0), "ranks"),
    (lambda: plot_collective_data("all_reduce", 9), "ranks"),
    (lambda: plot_collective_data("all_reduce", 4, algorithm="pairwise"), "algorithm"),
    (lambda: plot_collective_data("all_reduce", 3, algorithm="recursive_doubling"), "ranks"),
    (lambda: plot_collective_data("all_reduce", 4, axes=[plt.gca()]), "axes"),
    (lambda: plot_ring_step("sim", 0), "simulation"),
    (lambda: plot_ring_step(simulate("all_reduce", 4, algorithm="binomial_tree"), 0), "simulation"),
    (lambda: plot_ring_step(simulate("broadcast", 4), 0), "simulation"),
    (lambda: plot_ring_step(ring_sim(), 7), "step"),
    (lambda: plot_ring_step(ring_sim(), -1), "step"),
    (lambda: plot_ring_step(ring_sim(), 1.5), "step"),
    (lambda: RingStepFigure(Figure().add_subplot(), title="step {rank}"), "title"),
    (lambda: RingStepFigure(Figure().add_subplot(), title=None), "title"),
    (lambda: RingStepFigure(Figure().add_subplot(), caption="no"), "caption"),
    (lambda: RingStepFigure(Figure().add_subplot(), key=1), "key"),
    (lambda: RingStepFigure(Figure(figsize=(4, 1)).add_subplot()), "ax"),
    (lambda: RingStepFigure(Figure().add_subplot(), max_ranks=9), "ranks"),
    (lambda: plot_ring_allreduce_steps(1), "ranks"),
    (lambda: plot_ring_allreduce_steps(9), "ranks"),
    (lambda: plot_ring_allreduce_steps(4, axes=plt.subplots(2, 3)[1]), "axes"),
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


# --- the live figures of the ring lab ---------------------------------------------------------------------------


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


def _step_figure():
    figure = Figure(figsize=(4, 4.3), dpi=72)
    return figure, RingStepFigure(figure.add_axes((0, 0, 1, 1)), 8, ranks_options=(2, 4, 6, 16))


def _step(ranks, step):
    def draw(live):
        live.set_static(ranks)
        live.update(ranks, step)

    return draw


@pytest.mark.parametrize("first, second", [((4, 3), (6, 7)), ((16, 0), (3, 4)), ((8, 14), (2, 0))])
def test_step_figure_updated_twice_draws_what_a_fresh_one_draws(first, second):
    assert_updates_match_a_fresh_build(_step_figure, _step(*first), _step(*second))


def test_step_figure_shades_are_the_simulated_contributions():
    _, live = _step_figure()
    sim = simulate("all_reduce", 5, elements=5)
    levels = [to_rgba(color) for color in level_colors(5)]
    live.set_static(5)
    for step in (0, 4, 8):
        live.update(5, step)
        faces = live.cells.get_facecolor().reshape(8, 8, 4)
        counts = sim.contributions(step)
        for r in range(5):
            for c in range(5):
                expected = levels[counts[r, c] - 1] if counts[r, c] else to_rgba(EMPTY_COLOR)
                np.testing.assert_allclose(faces[r, c], expected)
        assert len(live.heads.get_xdata()) == (5 if step else 0)  # one transfer per rank per step
    assert live.title.get_text() == "ring step 8 of 8: all-gather"


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
