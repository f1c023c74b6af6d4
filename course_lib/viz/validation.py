"""Figures for lesson 08 (the model meets the measurements): predicted against measured MFU and memory for the
Ultra-Scale Playbook's runs, the residuals grouped by the plan column that switches each term of the model on, and
the calibration fit's loss over its two step-time constants.

Each figure is a ``fast.LiveFigure``: its constructor builds the empty axes it is given, ``update(result)`` draws a
replay on them anew, removing what the last update drew; ``plot_*`` builds one, updates it once and returns what it
drew on. Numbers come from ``course_lib.validation``
(``replay_runs``, ``residuals_by``); this module only draws.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from .. import units, validation
from .fast import LiveFigure, ResultArtists
from .style import COLORS, axes_or_new, bytes_formatter, label_units, percent_formatter

__all__ = [
    "NODE_COLORS",
    "NODE_GROUPS",
    "NODE_GROUP_COLORS",
    "PredictedMeasuredFigure",
    "ResidualsFigure",
    "LossSurfaceFigure",
    "plot_loss_surface",
    "plot_predicted_measured",
    "plot_residuals",
]

# The Playbook's node counts (1–64 nodes of 8 × H100) in four groups, one clearly distinct colour each, cool to warm:
# seven shades of one colour map on small markers could not be told apart.
NODE_GROUPS = {"1 node": (1,), "2–4 nodes": (2, 4), "8–16 nodes": (8, 16), "32–64 nodes": (32, 64)}
NODE_GROUP_COLORS = dict(zip(NODE_GROUPS, ("#1B7837", "#4575B4", "#F46D43", "#A50026"), strict=True))
NODE_COLORS = {nodes: NODE_GROUP_COLORS[group] for group, counts in NODE_GROUPS.items() for nodes in counts}
# The Playbook prints MFU with one decimal (course_lib/data/playbook_runs.README.md): its small values fall in columns.
MFU_STEP = 0.001
_QUANTITIES = {
    # quantity: (measured column, predicted column, axis label, formatter, log axes)
    "mfu": ("measured_mfu", "predicted_mfu", "MFU", percent_formatter, True),
    "memory": ("measured_memory_bytes", "predicted_memory_bytes", "memory per GPU", bytes_formatter, False),
}


def _shown_runs(replay, quantity):
    """The runs a figure can place: they ran, the model represents them, and the measurement is positive."""
    measured = replay.runs[_QUANTITIES[quantity][0]]
    return replay.represented & replay.runs.succeeded & (measured > 0)


class PredictedMeasuredFigure(LiveFigure):
    """Predicted against measured ``quantity`` (``"mfu"`` or ``"memory"``), built on ``ax``: one point per run that
    ran, coloured by nodes, hollow circles for the runs the calibration was fitted on (1B, 3B), filled triangles for
    the held-out runs (8B, 80B); the line y = x.

    ``update(result)`` takes one result, the pair ``(replay, held_out)``: a ``validation.Replay`` and a boolean mask
    of its held-out runs. Each update draws anew: ``animated`` are the artists it drew and the legend.
    """

    def __init__(self, ax, quantity="mfu"):
        if quantity not in _QUANTITIES:
            raise ValueError(f"quantity must be one of {', '.join(_QUANTITIES)}, got {quantity!r}")
        super().__init__(ax)
        self.quantity = quantity
        _, _, label, formatter, log = _QUANTITIES[quantity]
        if log:
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.xaxis.set_major_formatter(formatter)
        ax.yaxis.set_major_formatter(formatter)
        ax.grid(True, which="major", alpha=0.3)
        label_units(ax, f"measured {label}", f"predicted {label}")
        self.drawn = ResultArtists(ax)

    def update(self, result) -> None:
        """Draw ``result`` = (replay, held_out)."""
        replay, held_out = result
        held_out = np.asarray(held_out, dtype=bool)
        ax, drawn = self.ax, self.drawn
        drawn.clear()
        measured_name, predicted_name, *_ = _QUANTITIES[self.quantity]
        measured, predicted = replay.runs[measured_name], replay.columns[predicted_name]
        shown = _shown_runs(replay, self.quantity)
        nodes = replay.runs["nodes"]
        for group, counts in reversed(NODE_GROUPS.items()):  # the fewest runs (1 node) last, on top
            for held, marker in ((False, "o"), (True, "^")):
                here = shown & np.isin(nodes, counts) & (held_out == held)
                if not here.any():
                    continue
                color = NODE_GROUP_COLORS[group]
                drawn.add(ax.scatter(measured[here], predicted[here], s=22, marker=marker, linewidths=0.9,
                                     facecolors=color if held else "none", edgecolors=color,
                                     label=f"{group}|{held}"))  # fmt: skip
        low = min(measured[shown].min(), predicted[shown].min())
        high = max(measured[shown].max(), predicted[shown].max())
        drawn.add(*ax.plot([low, high], [low, high], color=COLORS["capacity"], lw=1, label="predicted = measured"))
        handles = [Patch(color=NODE_GROUP_COLORS[group], label=group)
                   for group, counts in NODE_GROUPS.items() if (shown & np.isin(nodes, counts)).any()]  # fmt: skip
        handles += [
            Line2D([], [], ls="", marker="o", mfc="none", mec="#555555", label="fitted on (1B, 3B)"),
            Line2D([], [], ls="", marker="^", color="#555555", label="held out (8B, 80B)"),
            Line2D([], [], color=COLORS["capacity"], lw=1, label="predicted = measured"),
        ]
        legend = ax.legend(handles=handles, fontsize=8, loc="upper left", ncol=2)
        self.animated = (*drawn.artists, legend)
        if self.quantity == "mfu" and np.any(measured[shown] < 10 * MFU_STEP):
            drawn.add(ax.text(0.98, 0.03, f"the columns on the left: the Playbook prints MFU to "
                              f"{units.format_percent(MFU_STEP)}", transform=ax.transAxes, ha="right", va="bottom",
                              fontsize=8, color="#444444"))  # fmt: skip
            self.animated = (*drawn.artists, legend)


class ResidualsFigure(LiveFigure):
    """Predicted/measured ratio of ``quantity`` grouped by one plan ``column`` (``validation.RESIDUAL_TERMS``), built
    on ``ax``: the median of each group with its 25th–75th percentile bar, on a log axis around 1 (a term the model
    gets wrong drifts with its column).

    ``update(result)`` takes one result, the pair ``(replay, rows)``: a ``validation.Replay`` and the boolean mask of
    the runs to group (None: all). Each update draws anew: ``animated`` are the artists it drew.
    """

    def __init__(self, ax, column="nodes", quantity="mfu"):
        if column not in validation.RESIDUAL_TERMS:
            raise ValueError(f"column must be one of {', '.join(validation.RESIDUAL_TERMS)}, got {column!r}")
        if quantity not in _QUANTITIES:
            raise ValueError(f"quantity must be one of {', '.join(_QUANTITIES)}, got {quantity!r}")
        super().__init__(ax)
        self.column, self.quantity = column, quantity
        ax.set_yscale("log")
        # Ratios labelled 0.5×, 1×, 2×, 5×, 10×, ...: a log axis around 1 with only 10⁰ and 10¹ said too little.
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _position: f"{value:g}×"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.axhline(1.0, color=COLORS["capacity"], lw=1)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        label_units(
            ax, f"{validation.RESIDUAL_TERMS[column]}\n(runs)", f"predicted / measured {_QUANTITIES[quantity][2]}"
        )
        self.drawn = ResultArtists(ax)

    def update(self, result) -> None:
        """Draw ``result`` = (replay, rows)."""
        replay, rows = result
        ax, drawn = self.ax, self.drawn
        drawn.clear()
        groups = validation.residuals_by(replay, self.column, rows, self.quantity)
        values = list(groups)
        x = np.arange(len(values))
        median, low, high, runs = (np.array([groups[v][i] for v in values]) for i in range(4))
        drawn.add(ax.errorbar(x, median, yerr=[median - low, high - median], fmt="o", color=COLORS["exposed"],
                              capsize=3))  # fmt: skip
        # The median above its bar, the runs under the group's tick: notes beside the points ran into each other.
        for xi, m, top in zip(x, median, high, strict=True):
            drawn.add(ax.annotate(f"{m:.2g}×", (xi, top), xytext=(0, 3), textcoords="offset points", fontsize=8,
                                  ha="center", va="bottom"))  # fmt: skip
        ax.set_xticks(x, [f"{v}\n({n})" for v, n in zip(values, runs, strict=True)])
        ax.set_xlim(-0.5, len(values) - 0.5)
        bottom, ceiling = ax.get_ylim()
        ax.set_ylim(min(bottom, low.min() / 1.3), max(ceiling, high.max() * 1.8))  # room for the medians' notes
        self.animated = drawn.artists


class LossSurfaceFigure(LiveFigure):
    """The calibration fit's objective (``validation.fit_loss_surface``: median |log(predicted / measured MFU)| over
    the one-node 1B and 3B runs) over ``validation.FIT_GRID``, built on ``ax``: one cell per (fixed cost per layer
    and micro-batch, efficiency), coloured by the loss in percent, its value written in it; the minimum is circled.

    ``update(result)`` takes the surface (rows: efficiencies, columns: fixed costs). Each update draws anew.
    """

    def __init__(self, ax):
        super().__init__(ax)
        efficiencies, overheads = validation.FIT_GRID
        ax.set_xticks(range(len(overheads)), [f"{o * 1e3:g}" for o in overheads])
        ax.set_yticks(range(len(efficiencies)), [f"{e:.0%}" for e in efficiencies])
        label_units(ax, "fixed cost per layer and micro-batch (ms)", "efficiency (share of peak)")
        self.drawn = ResultArtists(ax)

    def update(self, result) -> None:
        """Draw ``result``, the surface."""
        surface = np.asarray(result, dtype=float)
        ax, drawn = self.ax, self.drawn
        drawn.clear()
        drawn.add(ax.imshow(100 * surface, origin="lower", cmap="viridis_r", vmax=50, aspect="auto"))
        for (i, j), value in np.ndenumerate(surface):
            color = "white" if value > 0.3 else "black"
            drawn.add(ax.text(j, i, f"{100 * value:.0f}", ha="center", va="center", fontsize=8, color=color))
        i, j = np.unravel_index(np.argmin(surface), surface.shape)
        drawn.add(*ax.plot([j], [i], "o", ms=16, mfc="none", mec=COLORS["exposed"], mew=2, label="minimum"))
        self.animated = drawn.artists


def plot_loss_surface(surface, ax=None):
    """``LossSurfaceFigure`` of ``surface`` (``validation.fit_loss_surface``); returns the Axes.

    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> surface = np.ones((11, 9)); surface[3, 4] = 0.05
    >>> ax = plot_loss_surface(surface)
    >>> [float(v[0]) for v in ax.lines[0].get_data()], float(ax.images[0].get_array()[3, 4])   # (x, y), loss %
    ([4.0, 3.0], 5.0)
    >>> plt.close("all")
    """
    figure = LossSurfaceFigure(axes_or_new(ax, figsize=(7, 5)))
    figure.update(surface)
    return figure.ax


def plot_predicted_measured(replay, held_out, quantity="mfu", ax=None):
    """``PredictedMeasuredFigure`` of ``replay`` (held-out runs in ``held_out``); returns the Axes.

    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> from course_lib import validation
    >>> runs = validation.load_playbook_runs()
    >>> held = np.isin(runs["model"], validation.HELD_OUT_MODELS)
    >>> ax = plot_predicted_measured(validation.replay_runs(runs), held)
    >>> sum(len(c.get_offsets()) for c in ax.collections)   # every run that ran and reported an MFU above 0
    1744
    >>> plt.close("all")
    """
    figure = PredictedMeasuredFigure(axes_or_new(ax, figsize=(6.5, 5)), quantity)
    figure.update((replay, held_out))
    return figure.ax


def plot_residuals(replay, rows=None, columns=tuple(validation.RESIDUAL_TERMS), quantity="mfu", axes=None):
    """One ``ResidualsFigure`` per plan column, side by side; returns the list of Axes.

    >>> import matplotlib.pyplot as plt
    >>> from course_lib import validation
    >>> axes = plot_residuals(validation.replay_runs(validation.load_playbook_runs()))
    >>> [ax.get_xlabel().split("\\n")[0] for ax in axes], axes[0].get_xticklabels()[0].get_text()
    (['network (nodes)', 'tensor parallel (t)', 'pipeline (p)', 'ZeRO'], '1\\n(69)')
    >>> plt.close("all")
    """
    rows = np.ones(len(replay.runs), dtype=bool) if rows is None else rows
    if axes is None:
        _, axes = plt.subplots(1, len(columns), figsize=(3 * len(columns), 3.6), sharey=True, layout="constrained")
        axes = np.atleast_1d(axes)
    if len(axes) != len(columns):
        raise ValueError(f"axes must hold one Axes per column ({len(columns)}), got {len(axes)}")
    for ax, column in zip(axes, columns, strict=True):
        ResidualsFigure(ax, column, quantity).update((replay, rows))
    return list(axes)
