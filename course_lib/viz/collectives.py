"""Figures for lesson 02 (move the data): what each collective does, which rank sends what at each step, and the
α–β time of each algorithm against the payload.

Data movement comes from ``course_lib.simulate`` (the recorded steps of a simulated collective), times from
``course_lib.collectives``; this module only draws. ``CollectiveTimeFigure`` is a live figure (see
``fast.LiveFigure``): the ring all-reduce lab updates it on every move of its controls, and the lessons'
``plot_collective_time_vs_payload`` builds one and updates it once. The ring all-reduce step by step is
``ring_allreduce``'s.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import to_hex
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch, Rectangle
from matplotlib.ticker import FixedLocator, NullLocator

from .. import _check, collectives, units
from .. import simulate as _simulate
from ..collectives import ALGORITHMS, OPS
from .fast import FastText, LiveFigure
from .figure_check import NOT_APPLICABLE
from .style import (
    COLORS,
    EMPTY_COLOR,
    RANK_COLORS,
    axes_or_new,
    bytes_formatter,
    checked_axes,
    checked_drawn_ranks,
    label_units,
    seconds_formatter,
)

__all__ = [
    "plot_collective_data",
    "plot_collective_steps",
    "collective_steps_legend",
    "chunk_label",
    "plot_collective_time_vs_payload",
    "demo_inputs",
    "CollectiveTimeFigure",
    "ALGORITHM_STYLES",
    "ALGORITHM_LABELS",
    "algorithm_style",
    "algorithm_label",
    "SUM_COLOR",
]

# A darker colour for sums over all ranks (RANK_COLORS: one light colour per source rank).
SUM_COLOR = "#4A4E8C"
_IGNORED_TEXT = "#9A9A9A"

_SUM = "sum"
_IGNORED = "ignored"

# (colour, line style) per algorithm; orange and blue are kept for the latency and bandwidth terms.
ALGORITHM_STYLES = {
    "ring": ("#222222", "-"),
    "pairwise": ("#222222", "-"),
    "binomial_tree": ("#8172B3", "-"),
    "bruck": ("#8172B3", "-"),
    "recursive_doubling": ("#55A868", "-"),
    "recursive_halving": ("#55A868", "-"),
    "rabenseifner": ("#C44E52", "--"),
    "double_binary_tree": ("#937860", "-."),
}
# How a legend or a button names each algorithm.
ALGORITHM_LABELS = {
    "ring": "ring",
    "pairwise": "pairwise",
    "binomial_tree": "binomial tree",
    "bruck": "Bruck",
    "recursive_doubling": "recursive doubling",
    "recursive_halving": "recursive halving",
    "rabenseifner": "Rabenseifner",
}


def algorithm_style(algorithm: str) -> tuple[str, str]:
    """(colour, line style) of ``algorithm``'s curves; grey dash-dot for an algorithm without a style of its own.

    >>> algorithm_style("ring"), algorithm_style("some_new_algorithm")
    (('#222222', '-'), ('#8C8C8C', '-.'))
    """
    return ALGORITHM_STYLES.get(algorithm, ("#8C8C8C", "-."))


def algorithm_label(algorithm: str) -> str:
    """How a legend names ``algorithm``.

    >>> algorithm_label("binomial_tree"), algorithm_label("double_binary_tree")
    ('binomial tree', 'double binary tree')
    """
    return ALGORITHM_LABELS.get(algorithm, algorithm.replace("_", " "))


# Cells and arrows are added with ``ax.add_artist`` rather than ``add_patch``: the limits are set explicitly, and
# skipping the per-patch autoscaling halves the drawing time. They still appear in ``ax.patches``.


# --- what each collective does ---------------------------------------------------------------------------------


def demo_inputs(op, ranks):
    """The small integer inputs ``plot_collective_data`` simulates: rank r's value for chunk c is 10·(r + 1) + c.

    One element per chunk, so a grid of ranks × chunks shows every value. For all_gather rank r's input is its
    own chunk r only; for all_to_all chunk c is the block rank r sends to rank c.

    >>> demo_inputs("all_reduce", 3)
    (array([10, 11, 12]), array([20, 21, 22]), array([30, 31, 32]))
    >>> demo_inputs("all_gather", 3)
    (array([10]), array([21]), array([32]))
    """
    _check.choice("op", op, OPS)
    p = _check.count("ranks", ranks)
    values = [np.array([10 * (r + 1) + c for c in range(p)], dtype=np.int64) for r in range(p)]
    if op == "all_gather":
        return tuple(row[r : r + 1] for r, row in enumerate(values))
    return tuple(values)


def _sources(op, p, root, after):
    """Grid (rank × chunk) of what each cell holds: a source rank, _SUM, _IGNORED or None (empty)."""
    grid = [[None] * p for _ in range(p)]
    for r in range(p):
        for c in range(p):
            if not after:
                if op == "all_gather":
                    grid[r][c] = r if c == r else None
                elif op == "broadcast":
                    grid[r][c] = root if r == root else None  # the other ranks' buffers are overwritten, unused
                else:
                    grid[r][c] = r
            elif op == "all_reduce":
                grid[r][c] = _SUM
            elif op == "reduce_scatter":
                grid[r][c] = _SUM if c == r else None
            elif op == "reduce":
                grid[r][c] = _SUM if r == root else _IGNORED  # unchanged inputs, not part of the result
            elif op == "all_gather":
                grid[r][c] = c
            elif op == "broadcast":
                grid[r][c] = root
            elif op == "all_to_all":
                grid[r][c] = c  # rank r's output, block from source c
            else:  # send_recv
                grid[r][c] = (r - 1) % p
    return grid


def _values(op, p, arrays, after):
    """Grid of the value shown in each cell (None where the rank holds no copy of that chunk)."""
    grid = [[None] * p for _ in range(p)]
    for r, array in enumerate(arrays):
        if (op == "all_gather" and not after) or (op == "reduce_scatter" and after):
            grid[r][r] = int(array[0])
        else:
            for c in range(p):
                grid[r][c] = int(array[c])
    return grid


def _draw_grid(ax, sources, values, p, title, xlabel):
    for r in range(p):
        for c in range(p):
            source, value = sources[r][c], values[r][c]
            if source is None:
                color, text, text_color = EMPTY_COLOR, None, None
            elif source == _SUM:
                color, text, text_color = SUM_COLOR, f"Σ {value}", "white"
            elif source == _IGNORED:
                color, text, text_color = EMPTY_COLOR, f"{value}", _IGNORED_TEXT
            else:
                color, text, text_color = RANK_COLORS[source], f"{value}", "black"
            ax.add_artist(Rectangle((c - 0.5, r - 0.5), 1, 1, facecolor=color, edgecolor="white", linewidth=2))
            if text is not None:
                ax.text(
                    c,
                    r,
                    text,
                    ha="center",
                    va="center",
                    fontsize=10 if p <= 6 else 8.5,
                    color=text_color,
                    gid=f"cell:{r}:{c}",
                )
    ax.set_xlim(-0.5, p - 0.5)
    ax.set_ylim(p - 0.5, -0.5)
    ax.set_xticks(range(p), [str(c) for c in range(p)])
    ax.set_yticks(range(p), [f"rank {r}" for r in range(p)])
    for r, tick in enumerate(ax.get_yticklabels()):
        tick.set_bbox(dict(facecolor=RANK_COLORS[r], edgecolor="none", boxstyle="round,pad=0.25"))
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_title(title)
    ax.set_xlabel(xlabel)


def plot_collective_data(op, ranks=4, algorithm=None, axes=None):
    """Two panels, before | after: each rank's buffer (rows) split into chunks (columns), for collective ``op``.

    The data is ``demo_inputs(op, ranks)`` (rank r's value for chunk c is 10·(r + 1) + c) and the after panel
    shows ``simulate.simulate(op, ranks, inputs, algorithm).outputs``. A cell is coloured by the rank its data
    came from (the colour of that rank's label), dark with "Σ" for a sum over all ranks, light grey when empty;
    grey text marks values that are not part of the result (reduce's non-root ranks keep their inputs). For
    all_to_all the columns are the blocks: by destination before, by source after. ``algorithm`` defaults to
    "ring" ("pairwise" for all_to_all); the outputs do not depend on it. ``ranks`` is 1 to 8; root is rank 0.

    >>> import matplotlib.pyplot as plt
    >>> axes = plot_collective_data("all_reduce")
    >>> [ax.get_title() for ax in axes]
    ['before', 'after all_reduce']
    >>> sorted({t.get_text() for t in axes[1].texts})
    ['Σ 100', 'Σ 104', 'Σ 108', 'Σ 112']
    >>> plt.close("all")
    """
    _check.choice("op", op, OPS)
    if algorithm is None:
        algorithm = ALGORITHMS[op][0]  # "ring" everywhere, "pairwise" for all_to_all
    p = checked_drawn_ranks(ranks)
    inputs = demo_inputs(op, p)
    sim = _simulate.simulate(op, p, inputs, algorithm=algorithm)  # checks algorithm (and power-of-two ranks)
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(8, 0.55 * p + 2.0), layout="constrained")
    axes = np.asarray(checked_axes(axes, 2)[:2], dtype=object)
    before_label = "block, by destination rank" if op == "all_to_all" else "chunk of the buffer"
    after_label = "block, by source rank" if op == "all_to_all" else "chunk of the buffer"
    _draw_grid(
        axes[0],
        _sources(op, p, sim.root, after=False),
        _values(op, p, sim.inputs, after=False),
        p,
        "before",
        before_label,
    )
    steps = f"{sim.step_count} step" + ("" if sim.step_count == 1 else "s")
    _draw_grid(
        axes[1],
        _sources(op, p, sim.root, after=True),
        _values(op, p, sim.outputs, after=True),
        p,
        f"after {op}",
        f"{after_label}  ({algorithm}, {steps})",
    )
    return axes


# --- time against payload --------------------------------------------------------------------------------------


def _checked_algorithms(op, ranks, algorithms):
    if algorithms is None:
        return list(collectives.applicable_algorithms(op, ranks))
    if isinstance(algorithms, str):
        algorithms = (algorithms,)
    try:
        chosen = list(algorithms)
    except TypeError as error:
        raise ValueError(
            f"algorithms must be an iterable of names from {ALGORITHMS[op]}, got {algorithms!r}"
        ) from error
    if not chosen or any(a not in ALGORITHMS[op] for a in chosen):
        raise ValueError(
            f"algorithms must be a non-empty selection of {', '.join(map(repr, ALGORITHMS[op]))} for "
            f"op={op!r}; got {algorithms!r}"
        )
    return list(dict.fromkeys(chosen))


def _checked_range(payload_range_bytes):
    try:
        low, high = payload_range_bytes
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"payload_range_bytes must be a (smallest, largest) pair of sizes in bytes, got {payload_range_bytes!r}"
        ) from error
    low = _check.positive("payload_range_bytes", low)
    high = _check.positive("payload_range_bytes", high)
    if not isinstance(low, float) or not isinstance(high, float) or not low < high:
        raise ValueError(
            f"payload_range_bytes must be two numbers with smallest < largest, got {payload_range_bytes!r}"
        )
    return low, high


def plot_collective_time_vs_payload(
    op="all_reduce",
    ranks=8,
    bandwidth_bytes_per_s=50e9,
    latency_s=5e-6,
    algorithms=None,
    payload_range_bytes=(1e3, 1e10),
    mark_payload_bytes=None,
    ax=None,
):
    """Log–log time of one collective against its payload S, one curve per algorithm (α–β model): the lab's
    ``CollectiveTimeFigure``, built on ``ax`` and updated once, with its legend inside the axes.

    Each curve is ``collectives.collective_time(op, ranks, S, bandwidth_bytes_per_s, latency_s, algorithm)``;
    by default every algorithm of ``collectives.ALGORITHMS[op]`` that applies to ``ranks`` (the power-of-two
    ones are skipped otherwise). The ring's two terms (for all_to_all, pairwise exchange's), n·α and Q/B from
    ``collectives.time_terms``, are drawn dotted; the vertical line is where they are equal,
    ``collectives.latency_bandwidth_crossover_bytes``, with the latency-bound side shaded left and the
    bandwidth-bound side right. ``mark_payload_bytes`` puts a dot on that algorithm's curve, labelled with its time.

    >>> import matplotlib.pyplot as plt
    >>> from course_lib.units import MB
    >>> ax = plot_collective_time_vs_payload(mark_payload_bytes=100 * MB)
    >>> ax.get_title()
    'all_reduce, 8 ranks, 50 GB/s, 5 µs'
    >>> [line.get_label() for line in ax.get_legend().get_lines()][:4]
    ['ring: 3.57 ms at 100 MB', 'binomial tree', 'recursive doubling', 'Rabenseifner']
    >>> plt.close("all")
    """
    _check.choice("op", op, OPS)
    p = _check.count("ranks", ranks, minimum=2)
    if not isinstance(p, int):
        raise ValueError(f"ranks must be a single integer ≥ 2, got {ranks!r}")
    bandwidth = _check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    latency = _check.nonnegative("latency_s", latency_s)
    if not isinstance(bandwidth, float) or not isinstance(latency, float):
        raise ValueError("bandwidth_bytes_per_s and latency_s must be single numbers")
    chosen = _checked_algorithms(op, p, algorithms)
    low, high = _checked_range(payload_range_bytes)
    mark = None if mark_payload_bytes is None else _check.positive("mark_payload_bytes", mark_payload_bytes)
    if mark is not None and not isinstance(mark, float):
        raise ValueError(f"mark_payload_bytes must be a single size in bytes, got {mark_payload_bytes!r}")

    reference = "ring" if "ring" in ALGORITHMS[op] else ALGORITHMS[op][0]
    # The curves decide the time range (times grow with the payload); the dotted terms are clipped to it.
    ends = [collectives.collective_time(op, p, np.array([low, high]), bandwidth, latency, a) for a in chosen]
    shortest, longest = min(float(t[0]) for t in ends), max(float(t[1]) for t in ends)
    ax = axes_or_new(ax)
    figure = CollectiveTimeFigure(
        ax, op, payload_range_bytes=(low, high), time_range_s=(shortest / 4, longest * 3), ranks_options=(p,)
    )
    figure.update(collectives.collective_report(op, p, low if mark is None else mark, bandwidth, latency, reference))
    for algorithm, line in figure.curves.items():
        line.set_visible(algorithm in chosen)
        line.set_linewidth(2)
    figure.point.set_visible(mark is not None)
    figure.point_label.set_visible(mark is not None)
    if mark is not None:
        figure.curves[reference].set_label(
            f"{algorithm_label(reference)}: {figure.point_label.get_text()} at {units.format_bytes(mark)}"
        )
    figure.latency_term.set_visible(latency > 0)
    figure.latency_term.set_label(f"{algorithm_label(reference)}: latency term n·α")
    figure.bandwidth_term.set_label(f"{algorithm_label(reference)}: bandwidth term Q/B")
    figure.crossover.set_label(f"crossover S* = {units.format_bytes(figure.crossover.get_xdata()[0])}")
    shown = [*(line for line in figure.curves.values() if line.get_visible())]
    shown += [line for line in (figure.latency_term, figure.bandwidth_term, figure.crossover) if line.get_visible()]
    ax.legend(handles=shown, loc="upper left", fontsize=8.5, framealpha=0.95)
    _note_coinciding(ax, op, p, high, bandwidth, latency, chosen, reference)
    ax.tick_params(labelsize=10)
    label_units(
        ax,
        "payload S (bytes)",
        "time (s)",
        f"{op}, {p} ranks, {units.format_bandwidth(bandwidth)}, {units.format_time(latency)}",
    )
    return ax


def _note_coinciding(ax, op, ranks, high, bandwidth, latency, chosen, reference):
    """Name the curves that lie on the reference's at the largest payload (within 25 %): drawn on top of each other,
    they would look like one."""
    times = {a: float(collectives.collective_time(op, ranks, high, bandwidth, latency, a)) for a in chosen}
    together = [a for a in chosen if abs(math.log(times[a] / times[reference])) < math.log(1.25)]
    if len(together) < 2:
        return
    names = [algorithm_label(a) for a in together]
    listed = ", ".join(names[:-1]) + f" and\n{names[-1]}"
    ax.text(  # in the empty corner above the curves, right of the crossover
        0.56,
        0.97,
        f"{listed} nearly coincide\nfor large S: they move about the same bytes",
        transform=ax.transAxes,
        ha="left",
        va="top",
        fontsize=8.5,
        color="#333333",
        gid="coincide-note",
        bbox=dict(facecolor="white", edgecolor="none", alpha=0.85, pad=1),
    )


# --- live figure: the ring all-reduce lab's time panel ------------------------------------------------------------


class CollectiveTimeFigure(LiveFigure):
    """Live log–log time of one collective against its payload, on fixed axes: one curve per algorithm (those that
    do not apply to the ranks hidden), the chosen algorithm's two terms dotted, the crossover S* with the latency-
    and bandwidth-bound sides shaded, and a dot at the chosen payload.

    ``update(report)`` takes a ``collectives.collective_report(...)``: the curves are ``collectives.collective_time``
    of every applicable algorithm over ``curve_payloads_bytes``, the dotted terms ``collectives.time_terms`` of the
    chosen one. The legend greys out the algorithms that do not apply to the ranks (``static_key``); every artist
    ``update`` changes sits above the grid and the frame (zorder > 2.5), so a partial redraw matches ``savefig``.

    >>> from matplotlib.figure import Figure
    >>> from course_lib import collectives, units
    >>> live = CollectiveTimeFigure(Figure().add_subplot())
    >>> live.update(collectives.collective_report("all_reduce", 8, 100 * units.MB, 50 * units.GB, 5 * units.US))
    >>> live.point_label.get_text(), units.format_bytes(live.crossover.get_xdata()[0])
    ('3.57 ms', '2 MB')
    """

    def __init__(
        self,
        ax,
        op="all_reduce",
        payload_range_bytes=(1e3, 1e10),
        time_range_s=(1e-7, 1e3),
        curve_payloads_bytes=None,
        ranks_options=(2, 3, 4, 8),
    ):
        super().__init__(ax)
        self.op = _check.choice("op", op, OPS)
        low, high = self.payload_range_bytes = _checked_range(payload_range_bytes)
        if curve_payloads_bytes is None:  # 10 points a decade: the curves are sums of a constant and a line
            curve_payloads_bytes = np.logspace(np.log10(low), np.log10(high), round(10 * np.log10(high / low)) + 1)
        self.curve_payloads_bytes = np.asarray(curve_payloads_bytes, dtype=float)
        self.static_examples = tuple({collectives.applicable_algorithms(op, p): p for p in ranks_options}.values())
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_autoscale_on(False)
        ax.set_xlim(low, high)
        ax.set_ylim(*time_range_s)
        decades = range(math.ceil(np.log10(low)), math.floor(np.log10(high)) + 1)
        ax.xaxis.set_major_locator(FixedLocator([10.0**k for k in decades]))
        t_low, t_high = time_range_s
        ax.yaxis.set_major_locator(
            FixedLocator([10.0**k for k in range(math.ceil(np.log10(t_low)), math.floor(np.log10(t_high)) + 1)])
        )
        ax.xaxis.set_major_formatter(bytes_formatter)
        ax.yaxis.set_major_formatter(seconds_formatter)
        ax.xaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_minor_locator(NullLocator())
        ax.tick_params(labelsize=8)
        ax.grid(True, which="major", alpha=0.25)
        ax.set_xlabel("payload S", fontsize=9, labelpad=2)
        ax.set_ylabel("time T", fontsize=9, labelpad=2)
        ax.set_title(f"{op.replace('_', '-')} time against payload (log–log)", fontsize=10)
        blend = ax.get_xaxis_transform()  # x in data (bytes), y in axes fraction

        def region(color):
            return ax.add_patch(
                Rectangle(
                    (low, 0), high - low, 1, transform=blend, linewidth=0, facecolor=color, alpha=0.08, zorder=2.6
                )
            )

        self.latency_region, self.bandwidth_region = region(COLORS["latency"]), region(COLORS["bandwidth"])
        regime_label = dict(transform=blend, ha="center", va="bottom", size=9, zorder=2.7)
        self.latency_label = FastText(ax, (low, 0.02), "latency-bound", color="#8A4B14", **regime_label)
        self.bandwidth_label = FastText(ax, (high, 0.02), "bandwidth-bound", color="#2B4A7A", **regime_label)
        self.crossover = ax.add_line(
            Line2D(
                [low, low],
                [0, 1],
                transform=blend,
                color="#333333",
                linestyle="--",
                linewidth=1.1,
                label="crossover S*",
                zorder=2.8,
                gid="crossover",
            )
        )
        placeholder = np.ones_like(self.curve_payloads_bytes)
        self.curves = {}
        for algorithm in ALGORITHMS[op]:
            color, style = algorithm_style(algorithm)
            (self.curves[algorithm],) = ax.plot(
                self.curve_payloads_bytes,
                placeholder,
                color=color,
                linestyle=style,
                linewidth=1.6,
                label=algorithm_label(algorithm),
                zorder=3,
                gid=f"time:{algorithm}",
            )
        term = dict(linestyle=":", linewidth=1.5, zorder=2.9)
        (self.latency_term,) = ax.plot(
            self.curve_payloads_bytes,
            placeholder,
            color=COLORS["latency"],
            label="n·α of the chosen",
            gid="term:latency",
            **term,
        )
        (self.bandwidth_term,) = ax.plot(
            self.curve_payloads_bytes,
            placeholder,
            color=COLORS["bandwidth"],
            label="Q/B of the chosen",
            gid="term:bandwidth",
            **term,
        )
        (self.point,) = ax.plot(
            [low], [1.0], marker="o", markersize=8, markeredgecolor="white", linestyle="none", zorder=5, gid="mark"
        )
        self.point_label = FastText(ax, (low, 1.0), "", offset=(7, -4), size=9, ha="left", va="top", zorder=6)
        # The legend sits below the axes: the curves, redrawn on every update, never pass over it.
        legend = ax.legend(
            handles=[*self.curves.values(), self.latency_term, self.bandwidth_term, self.crossover],
            loc="upper left",
            bbox_to_anchor=(-0.15, -0.15),
            ncols=3,
            fontsize=7.5,
            frameon=False,
            handlelength=2.0,
            columnspacing=1.0,
        )
        self.legend_texts = dict(zip(self.curves, legend.get_texts(), strict=False))
        self.animated = (
            *self.curves.values(),
            self.latency_term,
            self.bandwidth_term,
            self.point,
            self.point_label,
            self.crossover,
            self.latency_region,
            self.bandwidth_region,
            self.latency_label,
            self.bandwidth_label,
        )

    def static_key(self, ranks):
        """The legend depends on which algorithms apply to ``ranks``."""
        return collectives.applicable_algorithms(self.op, ranks)

    def set_static(self, ranks) -> None:
        """Grey out, in the legend, the algorithms that need a power-of-two number of ranks when ``ranks`` is not."""
        allowed = self.static_key(ranks)
        for algorithm, text in self.legend_texts.items():
            usable = algorithm in allowed
            text.set_text(algorithm_label(algorithm) + ("" if usable else " (2^k p)"))
            text.set_color("#222222" if usable else "#AAAAAA")
            text.set_gid(None if usable else NOT_APPLICABLE)  # greyed out, no curve: figure_check knows why

    def update(self, report) -> None:
        """Draw ``report`` (a ``collectives.CollectiveReport`` of this figure's op)."""
        p, bandwidth, latency, chosen = report.ranks, report.bandwidth_bytes_per_s, report.latency_s, report.algorithm
        payloads = self.curve_payloads_bytes
        terms = collectives.time_terms(self.op, p, payloads, bandwidth, latency, chosen)
        for algorithm, line in self.curves.items():
            usable = algorithm in report.times_by_algorithm
            line.set_visible(usable)
            if algorithm == chosen:
                line.set_ydata(terms.total_s)
            elif usable:
                line.set_ydata(collectives.collective_time(self.op, p, payloads, bandwidth, latency, algorithm))
            line.set_linewidth(2.6 if algorithm == chosen else 1.4)
        self.latency_term.set_ydata(terms.latency_s)
        self.bandwidth_term.set_ydata(terms.bandwidth_s)
        self.point.set_data([report.payload_bytes], [report.time_s])
        self.point.set_markerfacecolor(algorithm_style(chosen)[0])
        self.point_label.set_position((report.payload_bytes, report.time_s))
        low, high = self.payload_range_bytes
        right_half = report.payload_bytes > high / 100  # the label goes left of the dot in the last two decades
        self.point_label.set_offset((-7, -4) if right_half else (7, -4))
        self.point_label.set_horizontalalignment("right" if right_half else "left")
        self.point_label.set_text(units.format_time(report.time_s))

        crossover = report.crossover_bytes
        split = min(max(crossover, low), high)
        self.crossover.set_xdata([crossover, crossover])
        self.crossover.set_visible(low < crossover < high)
        self.latency_region.set_width(split - low)
        self.bandwidth_region.set_x(split)
        self.bandwidth_region.set_width(high - split)
        self.latency_label.set_visible(split > low * 10)
        self.latency_label.set_x(math.sqrt(low * split))
        self.bandwidth_label.set_visible(split < high / 10)
        self.bandwidth_label.set_x(math.sqrt(split * high))


# --- which rank sends what at each step ---------------------------------------------------------------------------

_ADDS_COLOR, _COPIES_COLOR = "#C44E52", "#4C72B0"


def chunk_label(chunks, ranks: int) -> str:
    """How ``plot_collective_steps`` labels a message: its chunks of the p-chunk buffer.

    >>> chunk_label((3,), 4), chunk_label((0, 1), 4), chunk_label((0, 1, 2, 3), 4), chunk_label((0, 2), 4)
    ('c3', 'c0–1', 'all', 'c0,2')
    """
    chunks = tuple(int(c) for c in chunks)
    if len(chunks) == ranks and sorted(chunks) == list(range(ranks)):
        return "all"
    if len(chunks) > 1 and list(chunks) == list(range(chunks[0], chunks[0] + len(chunks))):
        return f"c{chunks[0]}–{chunks[-1]}"
    return "c" + ",".join(str(c) for c in chunks)


def plot_collective_steps(op, algorithm="ring", ranks=4, ax=None):
    """Which rank sends what at each step of a simulated collective: one row per rank, one column per step.

    The collective runs in ``course_lib.simulate`` on ``demo_inputs(op, ranks)`` (one int64 element per chunk).
    Each recorded transfer is an arrow across its step's column from the sender's row to the receiver's row,
    labelled at its start with the chunks it carries (``chunk_label``: "c3", "c0–1", "all" for the whole buffer),
    red when the receiver adds it into its copy, blue when it overwrites its copy. The title gives the step count
    n and the bytes on the critical path Q (the largest message of each step, summed), the n and Q of
    ``collectives.collective_cost``. Arrows have gid ``"transfer <step> <src>-><dst>"`` (steps from 1).

    >>> import matplotlib.pyplot as plt
    >>> ax = plot_collective_steps("all_reduce", "recursive_doubling", ranks=4)
    >>> sorted(p.get_gid() for p in ax.patches if p.get_gid())[:3]
    ['transfer 1 0->1', 'transfer 1 1->0', 'transfer 1 2->3']
    >>> ax.get_title()
    'recursive doubling all-reduce, 4 ranks: n = 2 steps, Q = 64 B'
    >>> plt.close("all")
    """
    _check.choice("op", op, tuple(o for o in OPS if o != "all_to_all"))
    p = checked_drawn_ranks(ranks, minimum=2)
    sim = _simulate.simulate(op, p, demo_inputs(op, p), algorithm=algorithm)
    itemsize = sim.inputs[0].itemsize
    ax = axes_or_new(ax)
    steps = sim.step_count
    for r in range(p):
        ax.axhline(r, color="#BBBBBB", linewidth=0.8, zorder=1)
    for step in range(1, steps):
        ax.axvline(step + 0.5, color="#DDDDDD", linewidth=0.8, zorder=1)
    for step, transfers in enumerate(sim.steps, start=1):
        for transfer in transfers:
            color = _ADDS_COLOR if transfer.reduce else _COPIES_COLOR
            arrow = FancyArrowPatch(
                (step - 0.32, transfer.src),
                (step + 0.36, transfer.dst),
                arrowstyle="-|>",
                mutation_scale=10,
                linewidth=1.3,
                color=color,
                shrinkA=0,
                shrinkB=2,
                zorder=3,
            )
            arrow.set_gid(f"transfer {step} {transfer.src}->{transfer.dst}")
            ax.add_patch(arrow)
            upward = transfer.dst < transfer.src  # label on the side of the row the arrow leaves from
            ax.text(
                step - 0.36,
                transfer.src + (0.1 if upward else -0.1),
                chunk_label(transfer.chunks, p),
                fontsize=8,
                color=color,
                ha="left",
                va="top" if upward else "bottom",
                zorder=4,
            )
    ax.set_xlim(0.5, steps + 0.5)
    ax.set_ylim(p - 0.5, -0.6)  # rank 0 at the top
    ax.set_xticks(range(1, steps + 1))
    ax.set_yticks(range(p), [f"rank {r}" for r in range(p)])
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_xlabel("step")
    q_bytes = sim.critical_path_elements * itemsize
    ax.set_title(
        f"{algorithm_label(algorithm)} {op.replace('_', '-')}, {p} ranks: n = {steps} steps, "
        f"Q = {units.format_bytes(q_bytes)}",
        fontsize=10,
    )
    return ax


def collective_steps_legend(figure) -> None:
    """A legend for ``plot_collective_steps``' two arrow colours, below the axes of ``figure`` (constrained layout):
    only the kinds of arrow the figure draws (a broadcast only overwrites)."""
    entries = (
        (_ADDS_COLOR, "receiver adds it into its copy"),
        (_COPIES_COLOR, "receiver overwrites its copy"),
    )
    drawn = {
        to_hex(patch.get_edgecolor())
        for ax in figure.axes
        for patch in ax.patches
        if isinstance(patch, FancyArrowPatch)
    }
    figure.legend(
        handles=[
            Line2D([], [], color=color, marker=">", label=label) for color, label in entries if to_hex(color) in drawn
        ],
        loc="outside lower center",
        ncol=2,
        frameon=False,
        fontsize=9,
    )
