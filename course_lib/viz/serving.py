"""Figures for serving (lesson 10): the latency–throughput curve of decode, and where a token's time goes.

Each figure is a ``fast.LiveFigure``: its constructor builds it on the axes it is given and ``update(result)`` moves
its artists (``set_data``, ``set_width``) to a new result, so a lab redraws without rebuilding; a ``plot_*`` wrapper
builds it and updates it once. Every number drawn comes from ``course_lib.serving``; this module only draws.
"""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.ticker import NullFormatter

from .. import serving, units
from .fast import FastText, FastTextGroup, LiveFigure
from .style import AXIS_COLORS, COLORS, axes_or_new, label_units, seconds_formatter

__all__ = [
    "DECODE_SEGMENTS",
    "LatencyThroughputFigure",
    "DecodeBreakdownFigure",
    "plot_latency_throughput",
    "plot_decode_breakdown",
    "ConcurrencySweepFigure",
    "plot_concurrency_sweep",
]

ALL_REDUCE_BANDWIDTH_COLOR = "#DA8BC3"  # distinct from the KV cache's red and the latency term's orange
# The parts of one token's time on the critical path, left to right: (legend text, colour, seconds of a DecodeStep).
# p stages run in turn, so each per-stage term counts p times; the weight term is whichever roofline binds.
DECODE_SEGMENTS = (
    (
        "weights (read or multiply)",
        COLORS["parameters"],
        lambda s: s.pipeline_parallel * np.maximum(s.weight_read_s, s.matmul_compute_s),
    ),
    (
        "KV cache read",
        COLORS["activations"],
        lambda s: s.pipeline_parallel * np.maximum(s.kv_read_s, s.attention_compute_s),
    ),
    ("all-reduce latency (floor + n·α)", COLORS["latency"], lambda s: s.pipeline_parallel * s.all_reduce_latency_s),
    (
        "all-reduce bandwidth (Q/B)",
        ALL_REDUCE_BANDWIDTH_COLOR,
        lambda s: s.pipeline_parallel * s.all_reduce_bandwidth_s,
    ),
    ("pipeline hops", AXIS_COLORS["pipeline"], lambda s: s.pipeline_hop_s),
)


def _checked_step(step, *, curve: bool):
    if not isinstance(step, serving.DecodeStep):
        raise ValueError(f"the result must be a serving.DecodeStep (from serving.decode_step), got {step!r}")
    arrays = np.ndim(step.time_per_output_token_s) > 0
    if curve and (not arrays or np.ndim(step.sequences) != 1):
        raise ValueError("curve must hold a DecodeStep over batch sizes (serving.latency_throughput_curve)")
    if not curve and arrays:
        raise ValueError("the current point must be one decode step (scalar fields), not a curve")
    return step


class LatencyThroughputFigure(LiveFigure):
    """Decode's latency–throughput curve: tokens/s per device (x, log) against time per output token (y, log), built
    on ``ax``.

    Each batch size is a point; larger batches move right (more tokens per weight read) and up (more KV read and,
    past the ridge, more arithmetic per step). ``update(result)`` takes one result, the pair ``(curve, current)``: it
    redraws the curve (a DecodeStep over batch sizes) and moves the marker to the current decode step (one
    DecodeStep, or None for no marker). It changes the axes' limits besides the ``animated`` artists; ``snap=True``
    puts them on whole decades, so that a lab redraws its axes only when they change.

    >>> from matplotlib.figure import Figure
    >>> from course_lib import serving
    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import LLAMA3_8B
    >>> curve = serving.latency_throughput_curve(LLAMA3_8B, DGX_H100, 1, 1, context_len=4096)
    >>> figure = LatencyThroughputFigure(Figure().add_subplot())
    >>> figure.update((curve, serving.decode_step(LLAMA3_8B, DGX_H100, 1, 1, 16, 4096)))
    >>> figure.current.get_xdata()[0] > 0, figure.text.get_text()
    (True, 'b = 16: 7.04 ms per token, 2270 tokens/s per device')
    """

    def __init__(self, ax, snap=False):
        super().__init__(ax)
        self.snap = bool(snap)
        (self.curve,) = ax.plot([], [], color=COLORS["compute"], marker=".", markersize=3, linewidth=1.2, gid="curve")
        (self.current,) = ax.plot(
            [], [], linestyle="none", marker="*", markersize=14, color=COLORS["exposed"], gid="current"
        )
        self.text = FastText(ax, (0.02, 0.96), "", size=10, ha="left", va="top", transform=ax.transAxes)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(seconds_formatter)
        ax.yaxis.set_minor_formatter(seconds_formatter)
        label_units(
            ax, "throughput (tokens/s per device)", "time per output token (s)", "Decode: latency against throughput"
        )
        ax.grid(True, which="both", alpha=0.25)
        self.animated = (self.curve, self.current, self.text)

    def update(self, result) -> None:
        """Draw ``curve`` and mark ``current``, from ``result`` = (curve, current)."""
        if not isinstance(result, tuple) or len(result) != 2:
            raise ValueError(f"the result must be the pair (curve, current), got a {type(result).__name__}")
        curve, current = result
        curve = _checked_step(curve, curve=True)
        x, y = np.asarray(curve.tokens_per_s_per_device), np.asarray(curve.time_per_output_token_s)
        self.curve.set_data(x, y)
        if current is None:
            self.current.set_data([], [])
            self.text.set_text("")
            xs, ys = x, y
        else:
            current = _checked_step(current, curve=False)
            cx, cy = float(current.tokens_per_s_per_device), float(current.time_per_output_token_s)
            self.current.set_data([cx], [cy])
            self.text.set_text(
                f"b = {int(current.sequences)}: {units.format_time(cy)} per token, "
                f"{units.format_count(cx)} tokens/s per device"
            )
            xs, ys = np.append(x, cx), np.append(y, cy)
        (x0, x1), (y0, y1) = (xs.min() / 1.5, xs.max() * 1.5), (ys.min() / 1.3, ys.max() * 1.3)
        if self.snap:
            x0, x1, y0, y1 = _decade_below(x0), _decade_above(x1), _decade_below(y0), _decade_above(y1)
        self.ax.set_xlim(x0, x1)
        self.ax.set_ylim(y0, y1)
        if self.snap:  # labels on the minor ticks only when they fit: within one decade
            self.ax.yaxis.set_minor_formatter(seconds_formatter if y1 / y0 <= 10 * (1 + 1e-9) else NullFormatter())


class DecodeBreakdownFigure(LiveFigure):
    """Where one output token's time goes: a horizontal bar of ``DECODE_SEGMENTS`` (one patch each, gid = legend
    text), for one decode step, built on ``ax``. The bar is the path of one batch through the p stages; when more
    batches are in flight than stages, the time per token is longer than the bar (each stage serves every batch), as
    the title says.

    ``update(result)`` takes one result, a ``serving.DecodeStep`` of one step: it sets the bars, the total and the
    title (the ``animated`` artists) and the axis' upper limit; ``snap=True`` puts that limit on 1, 2 or 5 × 10^k, so
    that a lab redraws the axis only when that changes, and draws the title as a ``FastText``.

    >>> from matplotlib.figure import Figure
    >>> from course_lib import serving, units
    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import LLAMA3_70B
    >>> figure = DecodeBreakdownFigure(Figure().add_subplot())
    >>> figure.update(serving.decode_step(LLAMA3_70B, DGX_H100, 8, 1, 1, 4096))
    >>> [p.get_gid() for p in figure.bars][:3]
    ['weights (read or multiply)', 'KV cache read', 'all-reduce latency (floor + n·α)']
    >>> [units.format_time(p.get_width()) for p in figure.bars][:3]
    ['5.19 ms', '50.1 µs', '3.17 ms']
    """

    def __init__(self, ax, snap=False):
        super().__init__(ax)
        self.snap = bool(snap)
        self.bars = [
            ax.barh(0, 0.0, 0.6, left=0.0, color=color, edgecolor="white", label=name).patches[0]
            for name, color, _ in DECODE_SEGMENTS
        ]
        for patch, (name, _, _) in zip(self.bars, DECODE_SEGMENTS, strict=True):
            patch.set_gid(name)
        self.total = FastText(ax, (0, 0), "", size=10, ha="left", va="center", weight="bold")
        # The title changes with every step: in a lab (snap) drawn as a FastText, 0.2 ms instead of 20.
        self.title = (
            FastText(ax, (0.5, 1.0), "", size=12, ha="center", va="bottom", transform=ax.transAxes, offset=(0, 6))
            if self.snap
            else ax.title
        )
        ax.set_yticks([])
        ax.set_ylim(-0.6, 0.6)
        ax.xaxis.set_major_formatter(seconds_formatter)
        for side in ("top", "right", "left"):
            ax.spines[side].set_visible(False)
        label_units(ax, "time per output token (s)", "")
        # The key under the axis names only the segments the step has (no "pipeline hops" at p = 1): a swatch and a
        # label each, redrawn with the bars (a matplotlib legend is static, and slow to redraw).
        self.key_swatches = ax.add_collection(
            PolyCollection([], transform=ax.transAxes, edgecolor="none", clip_on=False, zorder=4), autolim=False
        )
        self.key_labels = FastTextGroup(ax, size=10, ha="left", va="center", transform=ax.transAxes)
        self.animated = (*self.bars, self.total, self.title, self.key_swatches, self.key_labels)

    def update(self, result) -> None:
        """Set each segment's extent from ``result``, one ``serving.DecodeStep``."""
        step = _checked_step(result, curve=False)
        left = 0.0
        for patch, (_, _, seconds) in zip(self.bars, DECODE_SEGMENTS, strict=True):
            width = float(seconds(step))
            patch.set_x(left)
            patch.set_width(width)
            left += width
        self._update_key(step)
        tpot = float(step.time_per_output_token_s)
        self.total.set_position((left * 1.01, 0))
        self.total.set_text(units.format_time(tpot))
        upper = max(left, tpot) * 1.18
        self.ax.set_xlim(0, _nice_above(upper) if self.snap else upper)
        self.title.set_text(
            f"t = {step.tensor_parallel}, p = {step.pipeline_parallel}, b = {step.sequences}: "
            f"{units.format_time(tpot)} per token, {step.bound}-bound"
            + (f" ({step.batches_in_flight} batches share each stage)" if tpot > left * (1 + 1e-9) else "")
        )

    def _update_key(self, step) -> None:
        """The key's entries: the segments with time in ``step``, two to a row under the axis label."""
        shown = [(name, color) for name, color, seconds in DECODE_SEGMENTS if float(seconds(step)) > 0]
        swatches, labels = [], []
        for index, (name, color) in enumerate(shown):
            x, y = _KEY_COLUMNS[index % 2], _KEY_TOP - _KEY_ROW * (index // 2)
            swatches.append(([(x, y - 0.05), (x + 0.035, y - 0.05), (x + 0.035, y + 0.05), (x, y + 0.05)], color))
            labels.append(((x + 0.05, y), name))
        self.key_swatches.set_verts([verts for verts, _ in swatches])
        self.key_swatches.set_facecolor([color for _, color in swatches] or "none")
        self.key_labels.set_texts(labels)


_KEY_COLUMNS, _KEY_TOP, _KEY_ROW = (0.0, 0.52), -0.72, 0.3  # the key's places, in axes fractions


def _decade_below(x):
    return 10.0 ** np.floor(np.log10(x))


def _decade_above(x):
    return 10.0 ** np.ceil(np.log10(x))


def _nice_above(x, mantissas=(1, 2, 5, 10)):
    """The smallest 1, 2 or 5 × 10^k (or another of ``mantissas``, ending at 10) at least ``x``.

    >>> _nice_above(7.6e-3), _nice_above(0.021), _nice_above(0.05)
    (0.01, 0.05, 0.05)
    """
    decade = _decade_below(x)
    return float(next(m * decade for m in mantissas if m * decade >= x * (1 - 1e-12)))


def plot_latency_throughput(curve, current=None, ax=None):
    """Build a ``LatencyThroughputFigure`` on ``ax`` (or a new one), draw ``curve`` and ``current``; return the axes.

    >>> import matplotlib.pyplot as plt
    >>> from course_lib import serving
    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import LLAMA3_8B
    >>> ax = plot_latency_throughput(serving.latency_throughput_curve(LLAMA3_8B, DGX_H100, 1, 1, context_len=4096))
    >>> ax.get_xscale(), ax.get_ylabel()
    ('log', 'time per output token (s)')
    >>> plt.close("all")
    """
    figure = LatencyThroughputFigure(axes_or_new(ax, figsize=(7, 4.2)))
    figure.update((curve, current))
    return figure.ax


def plot_decode_breakdown(step, ax=None):
    """Build a ``DecodeBreakdownFigure`` on ``ax`` (or a new one) and draw ``step``; return the axes.

    >>> import matplotlib.pyplot as plt
    >>> from course_lib import serving
    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import LLAMA3_8B
    >>> ax = plot_decode_breakdown(serving.decode_step(LLAMA3_8B, DGX_H100, 8, 1, 1, 4096))
    >>> ax.get_title()
    't = 8, p = 1, b = 1: 1.85 ms per token, memory-bound'
    >>> plt.close("all")
    """
    figure = DecodeBreakdownFigure(axes_or_new(ax, figsize=(8, 2.6)))
    figure.update(step)
    return figure.ax


def _count_label(value, _position=None) -> str:
    return units.format_count(value) if value else "0"


class ConcurrencySweepFigure(LiveFigure):
    """The concurrency sweep of one serving configuration (``serving.ConcurrencySweepReport``), built on two axes:
    ``latency_ax`` holds the median time to first token and the median inter-token latency (log seconds),
    ``throughput_ax`` the replica's output tokens per second, both against the concurrency (log 2). A dashed line
    marks the knee on both, a star each curve's point at the report's concurrency; a configuration the model rejects
    (``report.refusal``) empties the axes and shows why.

    ``update(result)`` takes one ``ConcurrencySweepReport``. The x axis is fixed by ``concurrencies`` (the sweep's
    points); the y limits follow the data, on whole decades (latency) and on 1, 2 or 5 × 10^k (throughput) when
    ``snap``, so that a lab redraws an axis only when its limits change.
    """

    def __init__(self, latency_ax, throughput_ax, concurrencies, snap=False):
        super().__init__(latency_ax, throughput_ax)
        self.snap = bool(snap)
        self.latency_ax, self.throughput_ax = latency_ax, throughput_ax
        self._drawn = None  # the sweep whose curves are drawn
        concurrencies = np.asarray(concurrencies, dtype=float)
        style = dict(marker=".", markersize=6, linewidth=1.5)
        (self.ttft,) = latency_ax.plot([], [], color=COLORS["latency"], label="time to first token", **style)
        (self.itl,) = latency_ax.plot([], [], color=COLORS["compute"], label="inter-token latency", **style)
        (self.throughput,) = throughput_ax.plot([], [], color=COLORS["optimizer_state"], gid="throughput", **style)
        star = dict(linestyle="none", marker="*", markersize=14, color=COLORS["exposed"], zorder=5)
        (self.current,) = latency_ax.plot([], [], gid="current", **star)
        (self.current_throughput,) = throughput_ax.plot([], [], gid="current throughput", **star)
        knee = dict(color=AXIS_COLORS["pipeline"], linestyle="--", linewidth=1.2)
        self.knee_lines = [
            ax.plot([], [], transform=ax.get_xaxis_transform(), gid="knee", **knee)[0]
            for ax in (latency_ax, throughput_ax)
        ]
        (self.threshold,) = throughput_ax.plot([], [], color=AXIS_COLORS["pipeline"], linestyle=":", linewidth=1.0)
        self.knee_text = FastText(
            throughput_ax, (0, 0.03), "", size=10, ha="left", va="bottom", transform=throughput_ax.get_xaxis_transform()
        )
        self.latency_text = FastText(
            latency_ax, (0.02, 0.97), "", size=10, ha="left", va="top", transform=latency_ax.transAxes
        )
        self.throughput_text = FastText(
            throughput_ax, (0.02, 0.97), "", size=10, ha="left", va="top", transform=throughput_ax.transAxes
        )
        # A rejected configuration: its reason, in the latency axes, in lines of at most _MESSAGE_WIDTH characters.
        self.message = FastTextGroup(latency_ax, size=11, ha="center", va="center", transform=latency_ax.transAxes)
        for ax in (latency_ax, throughput_ax):
            ax.set_xscale("log", base=2)
            ax.set_xlim(concurrencies.min() / 1.4, concurrencies.max() * 1.4)
            ax.set_xticks(concurrencies, [f"{c:.0f}" for c in concurrencies])
            ax.minorticks_off()
            ax.grid(True, which="major", alpha=0.25)
        latency_ax.set_yscale("log")
        latency_ax.yaxis.set_major_formatter(seconds_formatter)
        latency_ax.yaxis.set_minor_formatter(NullFormatter())
        throughput_ax.yaxis.set_major_formatter(_count_label)
        label_units(latency_ax, "concurrency (requests in flight)", "median latency (s)", "Latency")
        label_units(throughput_ax, "concurrency (requests in flight)", "output tokens/s (replica)", "Throughput")
        # The key, lower right: a swatch of each latency curve and its name, drawn only with the curves (a refused
        # configuration has none, and a legend of what is not drawn would mislead).
        self.key_lines = [
            latency_ax.plot([], [], color=line.get_color(), linewidth=1.5, transform=latency_ax.transAxes)[0]
            for line in (self.ttft, self.itl)
        ]
        self.key_labels = FastTextGroup(latency_ax, size=9, ha="left", va="center", transform=latency_ax.transAxes)
        self.animated = (
            self.ttft,
            self.itl,
            self.throughput,
            self.current,
            self.current_throughput,
            *self.knee_lines,
            self.threshold,
            self.knee_text,
            self.latency_text,
            self.throughput_text,
            self.message,
            *self.key_lines,
            self.key_labels,
        )

    def update(self, result) -> None:
        """Draw the sweep of ``result``, one ``serving.ConcurrencySweepReport``, or the reason it was refused. A
        result of the sweep drawn last moves only the point and its texts (the curves, the knee and the limits
        stay)."""
        if not isinstance(result, serving.ConcurrencySweepReport):
            raise ValueError(f"the result must be a serving.ConcurrencySweepReport, got a {type(result).__name__}")
        if result.refusal is not None:
            self._drawn = None
            self._show_refusal(result.refusal)
            return
        if result.sweep is not self._drawn:
            self._draw_sweep(result)
            self._drawn = result.sweep
        c = float(result.concurrency)
        self.current.set_data([c, c], [result.ttft_s, result.itl_s])
        self.current_throughput.set_data([c], [result.tokens_per_s])
        self.latency_text.set_text(
            f"c = {result.concurrency}: first token {units.format_time(result.ttft_s)}, "
            f"then {units.format_time(result.itl_s)} a token"
        )
        self.throughput_text.set_text(
            f"c = {result.concurrency}: {units.format_count(result.tokens_per_s)} tokens/s "
            f"({units.format_count(result.tokens_per_s_per_device)} per GPU)"
        )

    def _draw_sweep(self, result) -> None:
        """The curves, the knee, the key and the y limits of ``result``'s sweep."""
        self.message.set_texts([])
        for line, y in zip(self.key_lines, _KEY_ROWS, strict=True):
            line.set_data([0.02, 0.08], [y, y])
        self.key_labels.set_texts(
            [((0.1, y), line.get_label()) for y, line in zip(_KEY_ROWS, (self.ttft, self.itl), strict=True)]
        )
        x = np.asarray(result.concurrencies, dtype=float)
        ttft, itl = np.asarray(result.median_ttft_s), np.asarray(result.median_itl_s)
        rate = np.asarray(result.output_tokens_per_s)
        self.ttft.set_data(x, ttft)
        self.itl.set_data(x, itl)
        self.throughput.set_data(x, rate)
        knee = float(result.knee_concurrency)
        for line in self.knee_lines:
            line.set_data([knee, knee], [0, 1])
        self.threshold.set_data([x.min() / 1.4, x.max() * 1.4], [result.knee_threshold_tokens_per_s] * 2)
        # right of the line, or left of it where the text would leave the axes
        right = knee <= x.max() / 16
        self.knee_text.set_horizontalalignment("left" if right else "right")
        self.knee_text.set_position((knee * (1.06 if right else 1 / 1.06), 0.03))
        self.knee_text.set_text(
            f"knee {result.knee_concurrency}: {units.format_percent(result.knee_fraction, digits=2)} of the most"
        )
        latency = np.concatenate([ttft, itl])
        low, high = latency.min() / 1.5, latency.max() * 1.5
        top = rate.max() * 1.3
        if self.snap:
            low, high, top = _decade_below(low), _decade_above(high), _nice_above(top, (1, 1.5, 2, 3, 5, 7, 10))
        self.latency_ax.set_ylim(low, high)
        self.throughput_ax.set_ylim(0, top)

    def _show_refusal(self, reason: str) -> None:
        for line in (self.ttft, self.itl, self.throughput, self.current, self.current_throughput, self.threshold):
            line.set_data([], [])
        for line in (*self.knee_lines, *self.key_lines):
            line.set_data([], [])
        self.key_labels.set_texts([])
        for text in (self.knee_text, self.latency_text, self.throughput_text):
            text.set_text("")
        lines = textwrap.wrap(f"Not served: {reason}", _MESSAGE_WIDTH)
        self.message.set_texts([((0.5, 0.6 + 0.08 * ((len(lines) - 1) / 2 - i)), line) for i, line in enumerate(lines)])
        if self.snap:  # the limits the sweep would most often have: no axis to redraw
            self.latency_ax.set_ylim(1e-3, 10.0)
            self.throughput_ax.set_ylim(0, 1e4)


_MESSAGE_WIDTH = 52  # characters per line of a refusal: the latency axes' width at 11 pt
_KEY_ROWS = (0.87, 0.8)  # the latency key's rows, in axes fractions: under the point's line


def plot_concurrency_sweep(report, axes=None):
    """Build a ``ConcurrencySweepFigure`` on ``axes`` (a pair, or a new figure's) and draw ``report``; return the
    axes."""
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(11.5, 4.2), layout="constrained")
    latency_ax, throughput_ax = axes
    figure = ConcurrencySweepFigure(latency_ax, throughput_ax, report.concurrencies)
    figure.update(report)
    return latency_ax, throughput_ax
