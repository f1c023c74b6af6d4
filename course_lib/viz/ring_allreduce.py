"""Figures of the ring all-reduce (lesson 02, lab 1): the ranks of a ring collective on a circle, one step at a
time, and the ring all-reduce step by step as a grid of ranks × chunks.

Data movement comes from ``course_lib.simulate`` (the recorded steps of a simulated ring), step counts and phases
from ``course_lib.collectives``; this module only draws. ``RingStepFigure`` is a live figure (see
``fast.LiveFigure``): the ring all-reduce lab updates it on every move of its controls, and the lesson's
``plot_ring_allreduce_steps`` builds one a step and updates it once.
"""

from __future__ import annotations

import functools
import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.collections import PatchCollection
from matplotlib.colors import to_rgba
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch, Patch, Rectangle
from matplotlib.path import Path

from .. import _check
from .. import simulate as _simulate
from ..collectives import RING_OPS, ring_allreduce_step_count, ring_step_phase
from .fast import FastText, LiveFigure
from .style import COLORS, EMPTY_COLOR, axes_or_new, checked_axes, checked_drawn_ranks

__all__ = [
    "plot_ring_step",
    "plot_ring_allreduce_steps",
    "RingStepFigure",
    "level_colors",
]

# Chunks and arrows are added with ``ax.add_artist`` rather than ``add_patch``: the limits are set explicitly, and
# skipping the per-patch autoscaling halves the drawing time. They still appear in ``ax.patches``.


def _ring_geometry(p):
    """Block centres on a circle (rank 0 on top, clockwise) with room between neighbouring blocks."""
    if p == 1:
        radius = 0.0
    elif p == 2:
        radius = 2.6
    else:
        radius = (p + 3.0) / (2 * math.sin(math.pi / p))
    angles = np.pi / 2 - 2 * np.pi * np.arange(p) / p
    return radius, angles


def _leaves_block(radius, angle, centre, half_width, half_height):
    x, y = radius * math.cos(angle), radius * math.sin(angle)
    return abs(x - centre[0]) > half_width or abs(y - centre[1]) > half_height


def _arc_angles(radius, angles, src, dst, p):
    """Start and end angles of the arrow src → dst along the circle, just outside both blocks."""
    start, end = angles[src], angles[src] - 2 * np.pi / p  # clockwise: dst = src + 1
    centres = [(radius * math.cos(a), radius * math.sin(a)) for a in (angles[src], angles[dst])]
    half_width, half_height = p / 2 + 0.35, 0.5 + 0.35
    samples = np.linspace(0, 2 * np.pi / p, 200)
    offset_start = next(
        (d for d in samples if _leaves_block(radius, start - d, centres[0], half_width, half_height)),
        samples[len(samples) // 3],
    )
    offset_end = next(
        (d for d in samples if _leaves_block(radius, end + d, centres[1], half_width, half_height)),
        samples[len(samples) // 3],
    )
    return start - offset_start, end + offset_end


def level_colors(p):
    """The shade of a chunk holding the sum of k = 1 … p ranks' data (light to dark), as RGBA tuples.

    >>> len(level_colors(4)), level_colors(4)[-1] == level_colors(8)[-1]
    (4, True)
    """
    cmap = plt.get_cmap("Blues")
    return [cmap(0.25 + 0.7 * k / max(p - 1, 1)) for k in range(p)]


def _ring_legend_handles(op, p):
    received = Patch(facecolor="white", edgecolor=COLORS["latency"], linewidth=2, label="received this step")
    if op == "all_gather":
        return [
            Patch(facecolor=level_colors(p)[-1], label="chunk held (final)"),
            Patch(facecolor=EMPTY_COLOR, edgecolor="#BBBBBB", label="not yet received"),
            received,
        ]
    levels = level_colors(p)
    handles = [
        Patch(facecolor=levels[k - 1], label=f"sum of {k} of {p} ranks" + (" (final)" if k == p else ""))
        for k in range(1, p + 1)
    ]
    return handles + [received]


def _chunk_style(op, count, is_final, levels, p):
    """Face colour of a chunk square and whether its text must be white."""
    if op == "all_gather":
        return (levels[-1], True) if is_final else (EMPTY_COLOR, False)
    return (levels[count - 1], count > p / 2) if count else (EMPTY_COLOR, False)


def _draw_chunks(ax, sim, step, origin_of_rank, font):
    """The p chunk squares of every rank, left to right from ``origin_of_rank(r)`` (lower-left corner)."""
    p = sim.ranks
    counts = sim.contributions(step)
    final = sim.holdings(step)
    received = _received(sim, step)
    levels = level_colors(p)
    for r in range(p):
        x0, y0 = origin_of_rank(r)
        for c in range(p):
            color, dark = _chunk_style(sim.op, int(counts[r, c]), bool(final[r, c]), levels, p)
            outlined = (r, c) in received
            ax.add_artist(
                Rectangle(
                    (x0 + c + 0.04, y0 + 0.04),
                    0.92,
                    0.92,
                    facecolor=color,
                    edgecolor=COLORS["latency"] if outlined else "white",
                    linewidth=2.2 if outlined else 1,
                    zorder=2 + outlined,
                    gid=f"chunk:{r}:{c}",
                )
            )
            ax.text(
                x0 + c + 0.5,
                y0 + 0.5,
                str(c),
                ha="center",
                va="center",
                fontsize=font,
                color="white" if dark else "#333333",
                zorder=4,
            )


def _received(sim, step) -> frozenset:
    """The (rank, chunk) cells that receive a chunk in step ``step`` of ``sim`` (none before the first)."""
    return frozenset((t.dst, c) for t in (sim.steps[step - 1] if step else ()) for c in t.chunks)


def _transfer_text(transfer):
    return ", ".join(f"c{c}" for c in transfer.chunks) + (" (+)" if transfer.reduce else "")


def _draw_ring_circle(ax, sim, step, font):
    p = sim.ranks
    radius, angles = _ring_geometry(p)
    centres = [(radius * math.cos(a), radius * math.sin(a)) for a in angles]
    _draw_chunks(ax, sim, step, lambda r: (centres[r][0] - p / 2, centres[r][1] - 0.5), font)
    for r, (cx, cy) in enumerate(centres):
        # The rank's name sits on the outer side of its block, away from the arrows.
        if p > 2 and abs(math.cos(angles[r])) > 0.5:
            side = 1 if math.cos(angles[r]) > 0 else -1
            ax.text(
                cx + side * (p / 2 + 0.25),
                cy + 0.5 - 0.5,
                f"rank {r}",
                ha="left" if side > 0 else "right",
                va="center",
                fontsize=font,
                fontweight="bold",
            )
        else:
            above = math.sin(angles[r]) >= 0
            ax.text(
                cx,
                cy + (0.7 if above else -0.7),
                f"rank {r}",
                ha="center",
                va="bottom" if above else "top",
                fontsize=font,
                fontweight="bold",
            )
    for transfer in sim.steps[step - 1] if step else ():
        start, end = _arc_angles(radius, angles, transfer.src, transfer.dst, p)
        theta = np.linspace(start, end, 40)
        path = Path(np.column_stack([radius * np.cos(theta), radius * np.sin(theta)]))
        ax.add_artist(
            FancyArrowPatch(
                path=path,
                arrowstyle="-|>",
                mutation_scale=14,
                color="#333333",
                linewidth=1.4,
                zorder=1,
                gid=f"transfer:{transfer.src}->{transfer.dst}",
            )
        )
        middle, label_radius = (start + end) / 2, radius + 1.0
        ax.text(
            label_radius * math.cos(middle),
            label_radius * math.sin(middle),
            _transfer_text(transfer),
            ha="center",
            va="center",
            fontsize=font,
            color="#222222",
            bbox=dict(facecolor="white", edgecolor="none", pad=0.5, alpha=0.9),
            zorder=5,
        )
    extent = max(
        abs(cx) + p / 2 + (3.4 if p > 2 and abs(math.cos(a)) > 0.5 else 0.6)
        for (cx, _), a in zip(centres, angles, strict=True)
    )
    ax.set_xlim(-extent, extent)
    ax.set_ylim(-radius - 1.8, radius + 1.8)


def plot_ring_step(simulation, step, ax=None, *, legend=True):
    """One step of a ring collective, its ranks on a circle: each rank's chunks, shaded by how many ranks' data
    they already hold.

    ``simulation`` is a ``simulate.simulate(...)`` result with op all_reduce, reduce_scatter or all_gather and
    algorithm "ring"; ``step`` runs from 0 (before any transfer) to ``simulation.step_count``. Each rank is a
    block of chunks (the number in a square is the chunk index) on a circle, rank 0 on top, clockwise; the shade
    counts the ranks whose contributions that copy of the chunk already sums (for all_gather: received or not).
    The state is the one after step ``step``, with one arrow per transfer of that step, from a rank to the next
    round the circle, labelled with the chunk it carries ("(+)": added into the receiver's copy); the received
    copies are outlined. Counts are replayed from the recorded transfers. ``legend=False`` leaves out the legend
    of shades. (Every step of an all-reduce as a grid of rows: ``plot_ring_allreduce_steps``.)

    >>> import matplotlib.pyplot as plt
    >>> from matplotlib.patches import FancyArrowPatch
    >>> from course_lib.simulate import simulate
    >>> ax = plot_ring_step(simulate("all_reduce", 4, elements=4), 3)
    >>> ax.get_title()
    'step 3 of 6: reduce-scatter'
    >>> sum(isinstance(patch, FancyArrowPatch) for patch in ax.patches)
    4
    >>> plt.close("all")
    """
    if not isinstance(simulation, _simulate.Simulation):
        raise ValueError(f"simulation must be a course_lib.simulate.Simulation, got {simulation!r}")
    if simulation.op not in RING_OPS or simulation.algorithm != "ring":
        raise ValueError(
            f"simulation must be a ring simulation of one of {', '.join(map(repr, RING_OPS))}; got "
            f"op={simulation.op!r}, algorithm={simulation.algorithm!r}"
        )
    step = _check.count("step", step, minimum=0)
    if not isinstance(step, int) or step > simulation.step_count:
        raise ValueError(f"step must be an integer in 0..{simulation.step_count} (the step count), got {step!r}")
    legend = _check.flag("legend", legend)
    p = simulation.ranks

    ax = axes_or_new(ax)
    font = 10 if p <= 4 else 9 if p <= 6 else 8
    _draw_ring_circle(ax, simulation, step, font)
    if legend:  # room on the right, inside the axes, so the legend never leaves the figure
        x_low, x_high = ax.get_xlim()
        y_low, y_high = ax.get_ylim()
        ax.set_xlim(x_low, x_high + 0.55 * (y_high - y_low))
    ax.set_aspect("equal")
    ax.set_axis_off()
    phase = ring_step_phase(simulation.op, p, step)
    ax.set_title(f"step {step} of {simulation.step_count}: {phase}", fontsize=11)
    if legend:
        ax.legend(handles=_ring_legend_handles(simulation.op, p), loc="center right", fontsize=9, frameon=False)
    return ax


# A panel of the grid of steps (plot_ring_allreduce_steps), in inches.
_PANEL_WIDTH_IN = 2.7  # the rank labels (a fifth of the panel) beside p chunks
_PANEL_ROOM_IN = 0.72  # above the grid the title and the chunk labels, below it a margin


def _panel_height_in(ranks: int) -> float:
    """The room plus the grid at 0.33 inches a data unit (rows are 1.5 apart), at most 2.6 inches (p ≥ 6)."""
    return _PANEL_ROOM_IN + min(0.33 * _grid_bottom(ranks), 2.6)


_TRANSFER_LABEL = (
    "transfer of the chunk in its column\nto the next rank (reduce-scatter:\nadded in; all-gather: copied)"
)


def _steps_text(first: int, last: int) -> str:
    return f"step {first}" if first == last else f"steps {first}–{last}"


def plot_ring_allreduce_steps(ranks=4, axes=None):
    """Every step of a ring all-reduce: the initial state, p − 1 reduce-scatter and p − 1 all-gather steps.

    Builds one ``RingStepFigure`` a panel (no caption, no key of shades) and updates it to its step, 0 … 2(p − 1),
    of the ring all-reduce ``simulate.simulate("all_reduce", ranks)``: the first row is the start and the
    reduce-scatter, the second row the all-gather, with one shared legend (at most four panels a row: more ranks
    take more rows). ``ranks`` is 2 to 8. With ``axes`` (at least 2(p − 1) + 1 Axes) the panels go there in order
    and the first spare Axes, if any, holds the legend (else the figure does). Returns the 2(p − 1) + 1 panel Axes,
    in step order; each panel's title is a path (``FastText``) with gid "title", its cells a collection with gid
    "cells", its arrowheads a line with gid "arrowheads".

    >>> import matplotlib.pyplot as plt
    >>> axes = plot_ring_allreduce_steps(4)
    >>> titles = [next(a for a in ax.patches if a.get_gid() == "title").get_text() for ax in axes]
    >>> len(axes), titles[3], titles[-1]
    (7, 'step 3 of 6: reduce-scatter', 'step 6 of 6: all-gather')
    >>> plt.close("all")
    """
    p = checked_drawn_ranks(ranks, minimum=2)
    steps = ring_allreduce_step_count(p)
    panels = steps + 1
    if axes is None:
        # The start and the reduce-scatter fill the first rows, the legend and the all-gather the next ones, at
        # most four panels a row (p panels each: step 0 … p − 1, then the legend and steps p … 2(p − 1)). The
        # panels' places are fixed (no layout engine): each RingStepFigure fits its grid to its panel's height.
        columns = min(p, 4)
        rows_per_phase = math.ceil(p / columns)
        phases = f"reduce-scatter ({_steps_text(1, p - 1)}), then all-gather ({_steps_text(p, steps)})"
        title = f"Ring all-reduce over {p} ranks:" + ("\n" if columns < 3 else " ") + phases  # two lines if narrow
        title_in, margin_in = 0.4 if columns >= 3 else 0.62, 0.1
        width = _PANEL_WIDTH_IN * columns + 2 * margin_in
        height = 2 * rows_per_phase * _panel_height_in(p) + title_in + margin_in
        fig = plt.figure(figsize=(width, height))
        grid = fig.subplots(
            2 * rows_per_phase,
            columns,
            squeeze=False,
            gridspec_kw=dict(
                left=margin_in / width,
                right=1 - margin_in / width,
                bottom=margin_in / height,
                top=1 - title_in / height,
                wspace=0,
                hspace=0,
            ),
        )
        first_phase = list(grid[:rows_per_phase].flat)
        second_phase = list(grid[rows_per_phase:].flat)
        step_axes = first_phase[:p] + second_phase[1:p]
        spare = [second_phase[0]] + first_phase[p:] + second_phase[p:]
        fig.suptitle(
            title,
            y=1 - 0.12 / height,
            va="top",
            fontsize=12,
        )
    else:
        flat = checked_axes(axes, panels)
        step_axes, spare = flat[:panels], flat[panels:]
    for step, ax in enumerate(step_axes):
        panel = RingStepFigure(
            ax, max_ranks=p, ranks_options=(p,), caption=False, key=False, title="step {step} of {steps}: {phase}"
        )
        panel.set_static(p)
        panel.update(p, step)
    handles = _ring_legend_handles("all_reduce", p) + [
        Line2D(
            [],
            [],
            color="#333333",
            linewidth=1.2,
            marker="v",
            markersize=5,
            label=_TRANSFER_LABEL,
        )
    ]
    for extra in spare:
        extra.set_axis_off()
    if spare:
        spare[0].legend(handles=handles, loc="center", fontsize=9, frameon=False)
    else:
        fig = step_axes[0].figure
        constrained = isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine)
        fig.legend(
            handles=handles,
            loc="outside lower center" if constrained else "lower center",
            ncols=3,
            fontsize=9,
            frameon=False,
        )
    return np.asarray(step_axes, dtype=object)


# --- live figure: the ring all-reduce lab's step grid -------------------------------------------------------------

_GRID_ROW_PITCH = 1.5  # the live step grid's distance between ranks' rows (room for the arrows between rows)
# Room around the step grid in its panel, in points: above it the title (and, in the lab, the caption), below it the
# key of shades or, without one, a margin for the arrow that closes the ring. Across, the grid spans these fractions.
_TITLE_ROOM_PT, _CAPTION_ROOM_PT, _KEY_ROOM_PT, _BOTTOM_MARGIN_PT = 40.0, 34.0, 31.0, 4.0
_GRID_LEFT_AT, _GRID_RIGHT_AT = 0.2, 0.97
_CHUNK_LABEL_Y = 0.1  # chunk labels sit this far (data units) above the first row
_CHUNK_LABEL_ROOM_PT = 14.0  # and are this tall: the arrow that closes the ring passes above them
_RECEIVED_RGBA, _WHITE_RGBA, _EMPTY_RGBA = to_rgba(COLORS["latency"]), to_rgba("white"), to_rgba(EMPTY_COLOR)
_STEP_TITLE = "ring step {step} of {steps}: {phase}"


@functools.cache
def _ring_simulation(ranks: int) -> _simulate.Simulation:
    return _simulate.simulate("all_reduce", ranks, algorithm="ring", elements=ranks)


@functools.cache
def _step_view(ranks: int, step: int):
    """(contribution counts (p × p), received cells, transfers of this step) after ``step`` steps of the ring."""
    sim = _ring_simulation(ranks)
    return sim.contributions(step), _received(sim, step), sim.steps[step - 1] if step else ()


@functools.cache
def _levels(ranks: int) -> tuple:
    return tuple(to_rgba(color) for color in level_colors(ranks))


def _grid_bottom(ranks: int) -> float:
    """Lowest data y of the step grid: the last row, plus the arrow that closes the ring below it."""
    return (ranks - 1) * _GRID_ROW_PITCH + 1.3


def _span(first: float, last: float, first_at: float, last_at: float) -> tuple[float, float]:
    """Axis limits that put data ``first`` at axes fraction ``first_at`` and ``last`` at ``last_at``."""
    per_fraction = (last - first) / (last_at - first_at)
    return first - first_at * per_fraction, first + (1 - first_at) * per_fraction


def _checked_title(title) -> str:
    """``title`` if it is a format string whose fields are among step, steps and phase."""
    if isinstance(title, str):
        try:
            title.format(step=0, steps=0, phase="")
            return title
        except (KeyError, IndexError, ValueError, AttributeError):
            pass
    raise ValueError(
        f"title must be a format string with fields among {{step}}, {{steps}} and {{phase}}, got {title!r}"
    )


class RingStepFigure(LiveFigure):
    """Live ring all-reduce, step by step: a grid of ranks (rows) × chunks (columns, labelled c0 …), each cell shaded
    by how many ranks' data that copy of the chunk holds after the step (``simulate.Simulation.contributions``), the
    received copies outlined, one arrow per transfer of the step. An arrow carries the chunk of its column down to
    the next rank's row (the last rank's goes round the right side to rank 0); the receiver adds it into its copy
    in the reduce-scatter and copies it in the all-gather, the phase the title names. Drawn for rings of up to
    ``max_ranks`` ranks; a larger ring gets a note instead. ``update(ranks, step)``; the grid's size is its static
    state (``static_key``).

    The lab's panel has a caption under the title and a key of shades below the grid. As one panel among many
    (``plot_ring_allreduce_steps``, one shared legend), ``caption=False`` and ``key=False`` leave them out and the
    grid takes their room; ``title`` formats the title from ``step``, ``steps`` (2(p − 1)) and ``phase``.

    >>> from matplotlib.figure import Figure
    >>> live = RingStepFigure(Figure().add_subplot())
    >>> live.set_static(4)
    >>> live.update(4, 3)
    >>> live.title.get_text(), len(live.heads.get_xdata())
    ('ring step 3 of 6: reduce-scatter', 4)
    >>> panel = RingStepFigure(Figure().add_subplot(), 4, (4,), caption=False, key=False, title="step {step}")
    >>> panel.set_static(4)
    >>> panel.update(4, 5)
    >>> panel.title.get_text(), [int(x) for x in panel.heads.get_xdata()]  # the columns: the chunks carried
    ('step 5', [3, 0, 1, 2])
    """

    def __init__(
        self, ax, max_ranks=8, ranks_options=(2, 3, 4, 5, 6, 7, 8, 9), *, caption=True, key=True, title=_STEP_TITLE
    ):
        super().__init__(ax)
        self.max_ranks = m = checked_drawn_ranks(max_ranks, minimum=2)
        caption, key = _check.flag("caption", caption), _check.flag("key", key)
        self.title_format = _checked_title(title)
        self.static_examples = tuple({self.static_key(p): p for p in ranks_options}.values())
        ax.set_axis_off()
        ax.set_autoscale_on(False)
        # The grid's bottom and top (axes fractions): the panel's height less the room of what is shown around it.
        self.height_pt = ax.bbox.height * 72 / ax.figure.dpi
        bottom_pt = _KEY_ROOM_PT if key else _BOTTOM_MARGIN_PT
        top_pt = _TITLE_ROOM_PT + (_CAPTION_ROOM_PT if caption else 0.0)
        if self.height_pt < 2 * (bottom_pt + top_pt):
            raise ValueError(
                f"ax must be at least {2 * (bottom_pt + top_pt):.0f} points tall for this grid and what is shown "
                f"around it, got {self.height_pt:.0f}"
            )
        self.grid_at = (bottom_pt / self.height_pt, 1 - top_pt / self.height_pt)
        cells = [Rectangle((c + 0.04, r * _GRID_ROW_PITCH), 0.92, 1.0) for r in range(m) for c in range(m)]
        self.cells = ax.add_collection(
            PatchCollection(cells, facecolors="none", edgecolors="none", zorder=2, gid="cells"), autolim=False
        )
        self.rank_labels = [
            FastText(
                ax, (-0.15, r * _GRID_ROW_PITCH + 0.5), f"rank {r}", ha="right", va="center", size=8.5, weight="bold"
            )
            for r in range(m)
        ]
        self.chunk_labels = [
            FastText(ax, (c + 0.5, -_CHUNK_LABEL_Y), f"c{c}", ha="center", va="bottom", size=8, color="#555555")
            for c in range(m)
        ]
        # All of one step's arrows are one line (segments split by NaN) plus one line of arrowheads, all pointing
        # down: a chunk moves down its column to the next rank's row; the ring closes around the right side.
        (self.shafts,) = ax.plot([], [], color="#333333", linewidth=1.2, zorder=3, gid="transfers")
        (self.heads,) = ax.plot(
            [], [], color="#333333", marker="v", markersize=5, linestyle="none", zorder=3, gid="arrowheads"
        )
        # The key of shades sits at the bottom of the panel, in axes fractions, whatever the grid's size.
        swatches = [Rectangle((0.2 + k * 0.04, 0.02), 0.035, 0.035) for k in range(m)]
        self.swatches = ax.add_collection(
            PatchCollection(swatches, facecolors="none", edgecolors="none", transform=ax.transAxes), autolim=False
        )
        self.swatch_label = FastText(ax, (0.2, 0.0375), "", transform=ax.transAxes, ha="left", va="center", size=8)
        # The title and caption hang from the top of the panel, in points.
        text = dict(transform=ax.transAxes, ha="center", color="#444444")
        self.title = FastText(
            ax, (0.55, 1.0), "", transform=ax.transAxes, ha="center", va="top", size=10, offset=(0, -4.5)
        )
        self.title.set_gid("title")
        caption_lines = (
            "each step, every rank passes one chunk (column)",
            "to the next: reduce-scatter adds it in,",
            "all-gather copies it. Outlined: received",
        )
        self.caption = [
            FastText(ax, (0.55, 1.0), line_text, va="top", size=8, offset=(0, -18.5 - 11.5 * line), **text)
            for line, line_text in enumerate(caption_lines if caption else ())
        ]
        self.key_shown = key
        too_many = (f"step-by-step view for rings of up to {m} ranks", f"(move ranks to {m} or fewer)")
        self.too_many = [
            FastText(ax, (0.55, 0.52 - 0.05 * line), line_text, va="center", size=10, **text)
            for line, line_text in enumerate(too_many)
        ]
        self.animated = (self.cells, self.shafts, self.heads, self.title)

    def static_key(self, ranks) -> int:
        """What the grid's static artists depend on: its size, or "no grid" (max_ranks + 1)."""
        return min(ranks, self.max_ranks + 1)

    def set_static(self, ranks) -> None:
        """The grid's labels, key of shades and limits for ``ranks`` ranks, or the note for larger rings."""
        shown = ranks <= self.max_ranks
        for index, (rank_label, chunk_label) in enumerate(zip(self.rank_labels, self.chunk_labels, strict=True)):
            rank_label.set_visible(shown and index < ranks)
            chunk_label.set_visible(shown and index < ranks)
        for artist in (self.swatches, self.swatch_label):
            artist.set_visible(shown and self.key_shown)
        for artist in self.caption:
            artist.set_visible(shown)
        for artist in self.too_many:
            artist.set_visible(not shown)
        if shown:  # the grid fills the panel whatever p is
            levels = _levels(ranks)
            self.swatches.set_facecolor([levels[k] if k < ranks else (0, 0, 0, 0) for k in range(self.max_ranks)])
            self.swatch_label.set_x(0.2 + ranks * 0.04 + 0.01)
            self.swatch_label.set_text(f"ranks summed: 1 … {ranks} (final)")
            self.ax.set_xlim(*_span(0.0, ranks + 0.45, _GRID_LEFT_AT, _GRID_RIGHT_AT))
            self.ax.set_ylim(*_span(_grid_bottom(ranks), 0.0, *self.grid_at))

    def update(self, ranks, step) -> None:
        """Draw the ring all-reduce over ``ranks`` ranks after ``step`` of its 2(p − 1) steps."""
        p, m = ranks, self.max_ranks
        shown = p <= m
        for artist in (self.cells, self.shafts, self.heads):
            artist.set_visible(shown)
        steps = ring_allreduce_step_count(p)
        if not shown:
            self.title.set_text(f"ring all-reduce over {p} ranks: {steps} steps")
            return
        counts, received, transfers = _step_view(p, step)
        levels = _levels(p)
        faces, edges, widths = [], [], []
        for row in range(m):
            for column in range(m):
                if row < p and column < p:
                    count = int(counts[row, column])
                    faces.append(levels[count - 1] if count else _EMPTY_RGBA)
                    hit = (row, column) in received
                    edges.append(_RECEIVED_RGBA if hit else _WHITE_RGBA)
                    widths.append(2.4 if hit else 0.5)
                else:
                    faces.append((0, 0, 0, 0))
                    edges.append((0, 0, 0, 0))
                    widths.append(0.0)
        self.cells.set_facecolor(faces)
        self.cells.set_edgecolor(edges)
        self.cells.set_linewidth(widths)

        xs, ys, head_x, head_y = [], [], [], []
        loop_x = p + 0.3
        # Above the chunk labels: their height in points, in data units (which depend on p and the panel's height).
        points_per_unit = self.height_pt * (self.grid_at[1] - self.grid_at[0]) / _grid_bottom(p)
        label_height = _CHUNK_LABEL_ROOM_PT / points_per_unit
        for transfer in transfers:
            x = transfer.chunks[0] + 0.5
            src_bottom = transfer.src * _GRID_ROW_PITCH + 1.0
            dst_top = transfer.dst * _GRID_ROW_PITCH
            if transfer.dst == transfer.src + 1:
                xs += [x, x, np.nan]
                ys += [src_bottom, dst_top - 0.12, np.nan]
            else:  # the ring closes: down out of the last row, up the right side, down into the first row
                below, above = src_bottom + 0.25, dst_top - _CHUNK_LABEL_Y - label_height
                xs += [x, x, loop_x, loop_x, x + 0.25, x + 0.25, np.nan]
                ys += [src_bottom, below, below, above, above, dst_top - 0.12, np.nan]
                x += 0.25  # beside the chunk label, not through it
            head_x.append(x)
            head_y.append(dst_top - 0.12)
        self.shafts.set_data(xs, ys)
        self.heads.set_data(head_x, head_y)
        phase = ring_step_phase("all_reduce", p, step)
        self.title.set_text(self.title_format.format(step=step, steps=steps, phase=phase))
