"""Figures for lesson 08 (the model meets the measurements): predicted against measured tokens/s per GPU for the
published, well-tuned runs the reference calibration is fitted and judged on; predicted against measured MFU and
memory for the Ultra-Scale Playbook's runs, the residuals grouped by the plan column that switches each term of the
model on, the ratio by nodes of all its runs against its healthy ones (a sick cluster's signature), and the
calibration fits' loss over their two step-time constants.

Each figure is a ``fast.LiveFigure``: its constructor builds the empty axes it is given, ``update(result)`` draws a
replay on them anew, removing what the last update drew; ``plot_*`` builds one, updates it once and returns what it
drew on. Numbers come from ``course_lib.validation``
(``replay_runs``, ``residuals_by``, ``healthy_runs``) and ``course_lib.published_runs`` (``replay_published_runs``);
this module only draws.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from .. import published_runs, units, validation
from .fast import LiveFigure, ResultArtists
from .style import COLORS, FIT_COLOR, axes_or_new, bytes_formatter, label_units, percent_formatter

__all__ = [
    "NODE_COLORS",
    "NODE_GROUPS",
    "NODE_GROUP_COLORS",
    "PUBLISHED_KIND_COLORS",
    "PredictedMeasuredFigure",
    "PublishedRunsFigure",
    "ResidualsFigure",
    "HealthyRatioFigure",
    "LossSurfaceFigure",
    "plot_loss_surface",
    "plot_predicted_measured",
    "plot_published_runs",
    "plot_healthy_ratio",
    "plot_residuals",
    "published_kind",
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


# The published runs' kinds, one colour each (``published_kind``: the first that applies, in this order).
PUBLISHED_KIND_COLORS = {
    "mixture of experts": "#A50026",
    "context-parallel": "#F46D43",
    "FP8": "#4575B4",
    "dense BF16": "#1B7837",
}


def published_kind(runs) -> np.ndarray:
    """One kind per published run for a figure's colour: mixture of experts, else context-parallel, else FP8, else
    dense BF16 (``published_figures`` counts an FP8 context-parallel run in both of its kinds; a point has one colour).

    >>> from course_lib import published_runs
    >>> kinds = published_kind(published_runs.load_published_runs())
    >>> sorted(set(kinds.tolist())) == sorted(PUBLISHED_KIND_COLORS)
    True
    """
    return np.select(
        [runs.is_moe, runs.is_context_parallel, runs.is_fp8], list(PUBLISHED_KIND_COLORS)[:3], "dense BF16"
    )


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


def _ratio_axis(ax) -> None:
    """A log y axis of predicted/measured ratios around the line at 1."""
    ax.set_yscale("log")
    # Ratios labelled 0.5×, 1×, 2×, 5×, 10×, ...: a log axis around 1 with only 10⁰ and 10¹ said too little.
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _position: f"{value:g}×"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.axhline(1.0, color=COLORS["capacity"], lw=1)
    ax.grid(True, axis="y", which="both", alpha=0.3)


class PublishedRunsFigure(LiveFigure):
    """Predicted against measured tokens/s per GPU of the published runs, built on ``ax`` (log axes): one point per
    run the model replays, coloured by kind (``published_kind``), hollow circles for the runs the reference was
    fitted on (``published_runs.FIT_FAMILIES``), filled triangles for the held-out ones; the line y = x and, dashed,
    ±15 % (issue 37's target for each kind's median).

    ``update(result)`` takes a ``published_runs.PublishedReplay``. Each update draws anew: ``animated`` are the
    artists it drew and the legend.
    """

    def __init__(self, ax):
        super().__init__(ax)
        ax.set_xscale("log")
        ax.set_yscale("log")
        tokens = FuncFormatter(lambda value, _position: units.format_count(value))
        ax.xaxis.set_major_formatter(tokens)
        ax.yaxis.set_major_formatter(tokens)
        ax.grid(True, which="major", alpha=0.3)
        label_units(ax, "measured tokens/s per GPU", "predicted tokens/s per GPU")
        self.drawn = ResultArtists(ax)

    def update(self, result) -> None:
        """Draw ``result``, a ``PublishedReplay``."""
        replay = result
        ax, drawn = self.ax, self.drawn
        drawn.clear()
        measured, predicted = replay.measured_tokens_per_s_per_gpu, replay.predicted_tokens_per_s_per_gpu
        kinds, held_out = published_kind(replay.runs), replay.runs.held_out
        for kind, color in PUBLISHED_KIND_COLORS.items():
            for held, marker in ((False, "o"), (True, "^")):
                here = replay.replayed & (kinds == kind) & (held_out == held)
                if here.any():
                    drawn.add(ax.scatter(measured[here], predicted[here], s=26, marker=marker, linewidths=0.9,
                                         facecolors=color if held else "none", edgecolors=color,
                                         label=f"{kind}|{held}"))  # fmt: skip
        shown = replay.replayed
        low = min(measured[shown].min(), predicted[shown].min()) / 1.2
        high = max(measured[shown].max(), predicted[shown].max()) * 1.2
        drawn.add(*ax.plot([low, high], [low, high], color=COLORS["capacity"], lw=1, label="predicted = measured"))
        for share in (1 + published_runs.MEDIAN_ERROR_TARGET, 1 - published_runs.MEDIAN_ERROR_TARGET):
            drawn.add(*ax.plot([low, high], [share * low, share * high], color=COLORS["capacity"], lw=0.8, ls="--",
                               label=f"×{share:g}"))  # fmt: skip
        handles = [Patch(color=color, label=kind) for kind, color in PUBLISHED_KIND_COLORS.items()
                   if (shown & (kinds == kind)).any()]  # fmt: skip
        handles += [
            Line2D([], [], ls="", marker="o", mfc="none", mec="#555555", label="fitted on (GPT)"),
            Line2D([], [], ls="", marker="^", color="#555555", label="held out (other families)"),
            Line2D([], [], color=COLORS["capacity"], lw=1, label="predicted = measured"),
            Line2D([], [], color=COLORS["capacity"], lw=0.8, ls="--", label="±15 %"),
        ]
        legend = ax.legend(handles=handles, fontsize=8, loc="upper left", ncol=2)
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
        _ratio_axis(ax)
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


class HealthyRatioFigure(LiveFigure):
    """Predicted/measured MFU by nodes for all the runs in a set and for its healthy ones (``validation.healthy_runs``),
    built on ``ax``: each group's median with its 25th–75th percentile bar, on a log axis around 1. A model that is
    right and a cluster that degrades at scale show as a gap that grows with nodes for all the runs while the healthy
    ones stay near 1.

    ``update(result)`` takes the pair ``(replay, rows)``: a ``validation.Replay`` and the boolean mask of the runs to
    group (None: all). Each update draws anew: ``animated`` are the artists it drew and the legend.
    """

    SERIES = (("all runs", COLORS["exposed"], -0.12), ("healthy runs", FIT_COLOR, 0.12))

    def __init__(self, ax):
        super().__init__(ax)
        _ratio_axis(ax)
        label_units(ax, "nodes of 8 × H100 (runs: all / healthy)", "predicted / measured MFU")
        self.drawn = ResultArtists(ax)

    def update(self, result) -> None:
        """Draw ``result`` = (replay, rows)."""
        replay, rows = result
        rows = np.ones(len(replay.runs), dtype=bool) if rows is None else np.asarray(rows, dtype=bool)
        ax, drawn = self.ax, self.drawn
        drawn.clear()
        groups = {
            "all runs": validation.residuals_by(replay, "nodes", rows),
            "healthy runs": validation.residuals_by(replay, "nodes", rows & validation.healthy_runs(replay.runs)),
        }
        values = sorted(groups["all runs"])
        position = {value: i for i, value in enumerate(values)}
        highest, lowest = 1.0, 1.0
        for label, color, shift in self.SERIES:
            here = [v for v in values if v in groups[label]]
            x = np.array([position[v] + shift for v in here])
            median, low, high = (np.array([groups[label][v][i] for v in here]) for i in range(3))
            drawn.add(ax.errorbar(x, median, yerr=[median - low, high - median], fmt="o-", color=color, capsize=3,
                                  lw=1, label=label))  # fmt: skip
            # All runs' medians above their bars, the healthy runs' below theirs: side by side they ran into each other.
            above = label == "all runs"
            for xi, m, top, bottom in zip(x, median, high, low, strict=True):
                drawn.add(ax.annotate(f"{m:.2g}×", (xi, top if above else bottom), xytext=(0, 3 if above else -3),
                                      textcoords="offset points", fontsize=7, ha="center",
                                      va="bottom" if above else "top", color=color))  # fmt: skip
            highest, lowest = max(highest, high.max()), min(lowest, low.min())
        runs = {label: {v: group[v][3] for v in group} for label, group in groups.items()}  # runs per group
        ax.set_xticks(range(len(values)), [f"{v}\n({runs['all runs'][v]}/{runs['healthy runs'].get(v, 0)})"
                                           for v in values])  # fmt: skip
        ax.set_xlim(-0.5, len(values) - 0.5)
        ax.set_ylim(lowest / 1.5, highest * 1.8)  # room for the notes
        legend = ax.legend(fontsize=8, loc="upper left")
        self.animated = (*drawn.artists, legend)


def label_decimals(values, most=2) -> int:
    """The fewest decimals (up to ``most``) at which the smallest of ``values`` reads differently from every other
    one, so that a written grid never shows its minimum tied with a neighbour (three cells all reading "9").

    >>> label_decimals([9.4, 9.2, 8.6, 12.0]), label_decimals([9.0, 12.0]), label_decimals([8.64, 8.61])
    (1, 0, 2)
    """
    values = np.asarray(values, dtype=float).ravel()
    smallest = int(np.argmin(values))
    others = np.delete(values, smallest)
    for decimals in range(most + 1):
        if not np.any(np.round(others, decimals) == np.round(values[smallest], decimals)):
            return decimals
    return most


class LossSurfaceFigure(LiveFigure):
    """A calibration fit's objective over its ``grid`` (efficiencies, fixed costs), built on ``ax``: one cell per
    (fixed cost per layer and micro-batch, efficiency), coloured by the loss in percent, its value written in it when
    the grid has at most ``LABELLED_CELLS`` cells, with as many decimals as it takes to tell the minimum from every
    other cell (``label_decimals``); the minimum is circled. The Playbook's fit
    (``validation.fit_loss_surface`` over ``validation.FIT_GRID``, the default) and the reference's
    (``published_runs.reference_fit_surface`` over ``published_runs.REFERENCE_FIT_GRID``) both draw here.

    ``update(result)`` takes the surface (rows: efficiencies, columns: fixed costs). Each update draws anew.
    """

    LABELLED_CELLS = 150

    def __init__(self, ax, grid=validation.FIT_GRID):
        super().__init__(ax)
        efficiencies, overheads = grid
        self.shape = (len(efficiencies), len(overheads))
        every = max(1, len(overheads) // 10)  # at most about ten labels along the axis
        ax.set_xticks(range(0, len(overheads), every), [f"{o * 1e3:g}" for o in overheads[::every]])
        every = max(1, len(efficiencies) // 12)
        ax.set_yticks(range(0, len(efficiencies), every), [f"{e:.0%}" for e in efficiencies[::every]])
        label_units(ax, "fixed cost per layer and micro-batch (ms)", "efficiency (share of peak)")
        self.drawn = ResultArtists(ax)

    def update(self, result) -> None:
        """Draw ``result``, the surface."""
        surface = np.asarray(result, dtype=float)
        if surface.shape != self.shape:
            raise ValueError(f"result must be a surface of the grid's shape {self.shape}, got {surface.shape}")
        ax, drawn = self.ax, self.drawn
        drawn.clear()
        drawn.add(ax.imshow(100 * surface, origin="lower", cmap="viridis_r", vmax=50, aspect="auto"))
        if surface.size <= self.LABELLED_CELLS:
            decimals = label_decimals(100 * surface)
            for (i, j), value in np.ndenumerate(surface):
                color = "white" if value > 0.3 else "black"
                text = f"{100 * value:.{decimals}f}"
                drawn.add(ax.text(j, i, text, ha="center", va="center", fontsize=8 - decimals, color=color))
        i, j = np.unravel_index(np.argmin(surface), surface.shape)
        drawn.add(*ax.plot([j], [i], "o", ms=16, mfc="none", mec=COLORS["exposed"], mew=2, label="minimum"))
        self.animated = drawn.artists


def plot_loss_surface(surface, ax=None, grid=validation.FIT_GRID):
    """``LossSurfaceFigure`` of ``surface`` over ``grid`` (``validation.fit_loss_surface`` over ``validation.FIT_GRID``
    or ``published_runs.reference_fit_surface`` over ``published_runs.REFERENCE_FIT_GRID``); returns the Axes.

    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> surface = np.ones((11, 9)); surface[3, 4] = 0.05
    >>> ax = plot_loss_surface(surface)
    >>> [float(v[0]) for v in ax.lines[0].get_data()], float(ax.images[0].get_array()[3, 4])   # (x, y), loss %
    ([4.0, 3.0], 5.0)
    >>> plt.close("all")
    """
    figure = LossSurfaceFigure(axes_or_new(ax, figsize=(7, 5)), grid)
    figure.update(surface)
    return figure.ax


def plot_published_runs(replay, ax=None):
    """``PublishedRunsFigure`` of ``replay`` (``published_runs.replay_published_runs``); returns the Axes.

    >>> import matplotlib.pyplot as plt
    >>> from course_lib import published_runs
    >>> ax = plot_published_runs(published_runs.replay_published_runs())
    >>> sum(len(c.get_offsets()) for c in ax.collections)   # every run the model replays: 23 fitted, 85 held out
    108
    >>> plt.close("all")
    """
    figure = PublishedRunsFigure(axes_or_new(ax, figsize=(7, 5.5)))
    figure.update(replay)
    return figure.ax


def plot_healthy_ratio(replay, rows=None, ax=None):
    """``HealthyRatioFigure`` of ``replay`` (the runs in ``rows``; None: all); returns the Axes.

    >>> import matplotlib.pyplot as plt
    >>> from course_lib import validation
    >>> ax = plot_healthy_ratio(validation.replay_runs(validation.load_playbook_runs()))
    >>> [round(float(y), 2) for y in ax.lines[1].get_ydata()][-1], ax.get_xticklabels()[-1].get_text()  # 64 nodes
    (12.99, '64\\n(272/10)')
    >>> plt.close("all")
    """
    figure = HealthyRatioFigure(axes_or_new(ax, figsize=(7, 4)))
    figure.update((replay, rows))
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
