"""Figures for lesson 07 (measure, don't assume): measured collective times against the α–β model, MPICH's algorithms
side by side, and the exposed communication of each step schedule.

Each figure is a ``fast.LiveFigure``: its constructor builds the empty axes it is given, ``update(result)`` draws a
result on them anew, removing what the last update drew (lab 8's sweep updates the same figure after each run);
``plot_*`` builds one, updates it once and returns the Axes. Numbers come from ``course_lib.measure``; this module
only draws.
"""

from __future__ import annotations

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .. import collectives, units
from .fast import LiveFigure, ResultArtists
from .style import AXIS_COLORS, COLORS, axes_or_new, binary_bytes_formatter, label_units, time_formatter

__all__ = [
    "SweepFigure",
    "AlgorithmsFigure",
    "StepFigure",
    "plot_sweep",
    "plot_algorithms",
    "plot_step",
]

_ALGORITHM_COLORS = ("#222222", "#55A868", "#C44E52", "#8172B3", "#4C72B0", "#DD8452")
# How the legend names MPICH's algorithms (MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM values): "auto" is no algorithm of its
# own but MPICH choosing one per size.
_ALGORITHM_LABELS = {
    "auto": "auto (MPICH picks one per size)",
    "recursive_doubling": "recursive doubling",
    "reduce_scatter_allgather": "reduce-scatter + all-gather",
}


class SweepFigure(LiveFigure):
    """Measured median time against size (log–log) with the p10–p90 spread, the fitted α–β line and its two terms,
    built on ``ax``.

    ``update(result)`` takes one result, the pair ``(table, fit)``: a ``Measurements`` of one op, algorithm and rank
    count, and its ``AlphaBetaFit`` or None. Each update draws anew: ``animated`` are the artists it drew, the legend
    and the title.
    """

    def __init__(self, ax):
        super().__init__(ax)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(binary_bytes_formatter)
        ax.yaxis.set_major_formatter(time_formatter)
        ax.grid(True, which="major", alpha=0.3)
        self.drawn = ResultArtists(ax)

    def update(self, result) -> None:
        """Draw ``result`` = (table, fit)."""
        table, fit = result
        ax, drawn = self.ax, self.drawn
        drawn.clear()
        sizes, median = table.size_bytes, table.median_s
        spread = np.vstack([median - table.p10_s, table.p90_s - median])
        fell_back = table.column("fell_back")
        ok = ~fell_back
        if np.any(spread[:, ok] > 0):
            drawn.add(ax.errorbar(sizes[ok], median[ok], yerr=spread[:, ok], fmt="o", ms=4, color="#222222", capsize=2,
                                  label="measured: median, p10–p90"))  # fmt: skip
        else:  # one time per size (a published log): no spread to draw, and the legend promises none
            drawn.add(*ax.plot(sizes[ok], median[ok], "o", ms=4, color="#222222", label="measured (one time per size)"))
        if fell_back.any():
            skipped = "MPICH fell back (not fitted)"
            drawn.add(*ax.plot(sizes[fell_back], median[fell_back], "x", color="#999999", label=skipped))
        if fit is not None:
            grid = np.geomspace(sizes.min(), sizes.max(), 200)
            terms = collectives.time_terms(
                fit.op, fit.ranks, grid, fit.bandwidth_bytes_per_s, fit.latency_s, fit.algorithm
            )
            latency = terms.latency_s
            drawn.add(*ax.plot(grid, terms.total_s, "-", color=COLORS["exposed"], label="fit: n·α + Q/B"))
            drawn.add(*ax.plot(grid, latency, ":", color=COLORS["latency"],
                               label=f"n·α (α = {units.format_time(fit.latency_s)})"))  # fmt: skip
            drawn.add(*ax.plot(grid, terms.bandwidth_s, "--", color=COLORS["bandwidth"],
                               label=f"Q/B (B = {units.format_bandwidth(fit.bandwidth_bytes_per_s)})"))  # fmt: skip
            if fit.crossover_bytes > 0:
                drawn.add(ax.axvline(fit.crossover_bytes, color="#777777", lw=0.8))
                # At the top of the axes: the measured points near the crossover lie low, at the latency floor.
                drawn.add(ax.annotate(f"crossover {units.format_bytes(fit.crossover_bytes)}",
                                      (fit.crossover_bytes, 0.98), xycoords=("data", "axes fraction"), rotation=90,
                                      ha="right", va="top", fontsize=8))  # fmt: skip
            ax.set_ylim(min(median.min(), latency[0]) / 2, median.max() * 2)
        label_units(ax, "payload S (bytes)", "time per call (max over ranks)",
                    f"{table.op} · {table.algorithm} · {table.ranks} ranks")  # fmt: skip
        self.animated = (*drawn.artists, ax.legend(fontsize=8, loc="upper left"), ax.title)


class AlgorithmsFigure(LiveFigure):
    """Each algorithm's median time divided by the fastest algorithm's at that size (1 = the best there), built on
    ``ax``.

    ``update(result)`` takes one result, a ``Measurements`` of one op and rank count holding several algorithms at the
    same sizes. Each update draws anew: ``animated`` are the lines it drew, the legend and the title.
    """

    def __init__(self, ax):
        super().__init__(ax)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(binary_bytes_formatter)
        ax.grid(True, alpha=0.3)
        self.drawn = ResultArtists(ax)

    def update(self, result) -> None:
        """Draw ``result``, a ``Measurements`` of several algorithms."""
        table = result
        ax, drawn = self.ax, self.drawn
        drawn.clear()
        algorithms = sorted({row.algorithm for row in table})
        sizes = sorted({row.size_bytes for row in table})
        times = {a: {r.size_bytes: r.median_s for r in table.select(algorithm=a)} for a in algorithms}
        best = np.array([min(times[a].get(s, np.inf) for a in algorithms) for s in sizes])
        for color, algorithm in zip(_ALGORITHM_COLORS, algorithms, strict=False):
            ratio = np.array([times[algorithm].get(s, np.nan) for s in sizes]) / best
            label = _ALGORITHM_LABELS.get(algorithm, algorithm)
            drawn.add(*ax.plot(sizes, ratio, "o-", ms=3, color=color, label=label, gid=f"algorithm:{algorithm}"))
        drawn.add(ax.axhline(1.0, color="#999999", lw=0.8))
        label_units(ax, "payload S (bytes)", "median time ÷ fastest at that size",
                    f"{table.op} · {table.ranks} ranks: which MPICH algorithm wins where")  # fmt: skip
        self.animated = (*drawn.artists, ax.legend(fontsize=8), ax.title)


class StepFigure(LiveFigure):
    """One bar per schedule: compute alone, then the exposed communication above it, p10–p90 whiskers, and the
    budget's prediction as a marker, built on ``ax``.

    ``update(result)`` takes one result, the pair ``(step, fit)``: a ``StepMeasurements`` and an ``AlphaBetaFit`` (or
    None for no prediction). Each update draws anew: ``animated`` are the artists it drew, the legend and the title.
    """

    def __init__(self, ax):
        super().__init__(ax)
        ax.yaxis.set_major_formatter(time_formatter)
        ax.grid(True, axis="y", alpha=0.3)
        self.drawn = ResultArtists(ax)

    def update(self, result) -> None:
        """Draw ``result`` = (step, fit)."""
        step, fit = result
        ax, drawn = self.ax, self.drawn
        drawn.clear()
        names = list(step.median_s)
        compute = step.median_s["compute"]
        predicted = step.predicted_exposed_s(fit) if fit is not None else {}
        x = np.arange(len(names))
        for i, name in enumerate(names):
            median = step.median_s[name]
            if name == "communication":
                drawn.add(ax.bar(i, median, color=AXIS_COLORS["data"], width=0.6))  # the data-parallel all-reduce
            else:
                drawn.add(ax.bar(i, min(median, compute), color=COLORS["compute"], width=0.6))
                if median > compute:
                    drawn.add(ax.bar(i, median - compute, bottom=compute, color=COLORS["exposed"], width=0.6))
            drawn.add(ax.vlines(i, step.p10_s[name], step.p90_s[name], color="#222222", lw=1))
            if name in predicted:
                drawn.add(*ax.plot(i, compute + predicted[name], "D", color="#222222", ms=5, mfc="white"))
            exposed = step.exposed_s.get(name)
            if exposed is not None:  # above the whisker and the prediction, which would strike it through
                top = max(median, step.p90_s[name], compute + predicted.get(name, 0.0))
                drawn.add(ax.annotate(f"exposed\n{units.format_time(exposed)}", (i, top), textcoords="offset points",
                                      xytext=(0, 4), ha="center", va="bottom", fontsize=8))  # fmt: skip
        ax.set_xticks(x, [name.replace("_", "\n") for name in names])
        ax.set_ylim(0, max(*step.p90_s.values(), *(compute + v for v in predicted.values())) * 1.3)
        handles = [
            Patch(color=COLORS["compute"], label="compute alone"),
            Patch(color=COLORS["exposed"], label="exposed = step − compute"),
            Patch(color=AXIS_COLORS["data"], label="all-reduce alone"),
        ]
        if predicted:
            handles.append(
                Line2D([], [], ls="", marker="D", color="#222222", mfc="white", label="predicted (fitted α, B)")
            )
        legend = ax.legend(handles=handles, fontsize=8, loc="upper left")
        label_units(ax, "schedule", "step time (median, max over ranks)",
                    f"{step.ranks} ranks, {units.format_flops(step.backward_flops)} backward, "
                    f"{units.format_bytes(step.gradient_bytes, binary=True)} gradient, {step.buckets} buckets",
                    )  # fmt: skip
        self.animated = (*drawn.artists, legend, ax.title)


def plot_sweep(table, fit=None, ax=None):
    """Measured times with their spread, and the fitted α–β line (see ``SweepFigure``); returns the Axes."""
    figure = SweepFigure(axes_or_new(ax))
    figure.update((table, fit))
    return figure.ax


def plot_algorithms(table, ax=None):
    """MPICH's algorithms side by side, as time over the fastest (see ``AlgorithmsFigure``); returns the Axes."""
    figure = AlgorithmsFigure(axes_or_new(ax))
    figure.update(table)
    return figure.ax


def plot_step(step, fit=None, ax=None):
    """Compute and exposed communication of each step schedule (see ``StepFigure``); returns the Axes."""
    figure = StepFigure(axes_or_new(ax))
    figure.update((step, fit))
    return figure.ax
