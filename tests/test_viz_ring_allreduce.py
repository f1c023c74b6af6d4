"""course_lib.viz.ring_allreduce, the ring step by step in lesson 02 and the ring lab's step grid: what each figure
holds (patches, lines, texts), never pixels, and that a live figure updated twice matches one built at once."""

import matplotlib

matplotlib.use("Agg")


import matplotlib.pyplot as plt
import numpy as np
import pytest
from lab_checks import assert_updates_match_a_fresh_build, by_gid
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

from course_lib.simulate import simulate
from course_lib.viz.ring_allreduce import RingStepFigure, level_colors, plot_ring_allreduce_steps, plot_ring_step
from course_lib.viz.style import EMPTY_COLOR

# --- plot_ring_step / plot_ring_allreduce_steps ----------------------------------------------------------------


def arrows(ax):
    return [p for p in ax.patches if isinstance(p, FancyArrowPatch)]


def final_squares(ax):
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
        finals, squares = final_squares(ax)
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


# --- bad input -------------------------------------------------------------------------------------------------


def ring_sim():
    return simulate("all_reduce", 4, elements=4)


BAD_CALLS = [
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
]


@pytest.mark.parametrize("call, parameter", BAD_CALLS, ids=[f"{i}-{p}" for i, (_, p) in enumerate(BAD_CALLS)])
def test_bad_input_names_the_parameter(call, parameter):
    with pytest.raises(ValueError, match=rf"^{parameter}\b"):
        call()


# --- the live figure of the ring lab ---------------------------------------------------------------------------


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
