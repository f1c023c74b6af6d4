"""Figures for lesson 03 (split the work): pipeline timelines, per-device memory, and the four splits of one model.

Every number drawn comes from ``course_lib.pipeline`` and ``course_lib.parallelism``; this module only draws.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

import matplotlib.pyplot as plt
import matplotlib.transforms as mtransforms
import numpy as np
from matplotlib.collections import PatchCollection
from matplotlib.colors import to_rgb, to_rgba
from matplotlib.font_manager import FontProperties
from matplotlib.legend_handler import HandlerTuple
from matplotlib.lines import Line2D
from matplotlib.markers import TICKDOWN, TICKLEFT
from matplotlib.patches import FancyArrowPatch, Patch, PathPatch, Rectangle
from matplotlib.path import Path
from matplotlib.textpath import TextToPath
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator

from .. import _check, parallelism, units
from ..pipeline import PipelineTimeline, pipeline_schedule
from .collectives import RANK_COLORS
from .fast import CachedText, FastText, FastTextGroup, LiveFigure
from .style import AXIS_COLORS, COLORS, axes_or_new, bytes_formatter

__all__ = [
    "plot_pipeline_schedule",
    "plot_memory_breakdown",
    "plot_parallelism_splits",
    "plot_tensor_parallel_layer",
    "tp_operator_label",
    "TP_OPERATORS",
    "TP_LAYOUT_COLORS",
    "TP_LAYOUT_NAMES",
    "SCHEDULE_NAMES",
    "MEMORY_COMPONENTS",
    "MODEL_MEMORY_COMPONENTS",
    "memory_components_of",
    "MemoryBarsFigure",
    "MIN_LABEL_SIZE",
    "PipelineScheduleFigure",
    "ComparisonBarsFigure",
    "MemoryBudgetFigure",
    "GlobalBatchFigure",
    "count_of",
    "FIT_COLOR",
    "chunk_color",
    "text_color",
    "box_edge_width",
    "microbatch_label_size",
    "schedule_title",
]

SCHEDULE_NAMES = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": "Interleaved 1F1B"}
# MemoryBreakdown field -> legend text, bottom to top of each stacked bar: every component a breakdown reports.
MEMORY_COMPONENTS = {
    "parameters": "parameters",
    "gradients": "gradients",
    "optimizer_state": "optimizer state",
    "activations": "activations",
    "logits": "logits",
    "framework": "framework",
}
# What every breakdown counts (logits and framework memory are 0 unless memory_breakdown is given a Calibration).
MODEL_MEMORY_COMPONENTS = ("parameters", "gradients", "optimizer_state", "activations")
_BOX_HEIGHT = 0.78  # a pipeline box's height, in stage rows
MIN_LABEL_SIZE = 6.0  # points: smaller micro-batch numbers are left out of the boxes
_DEVICE_FILL = ("#DCE8F5", "#FBE3D0")  # background of GPU 0 and GPU 1 in the split diagram
_DEVICE_EDGE = ("#4C72B0", "#DD8452")


def _lighter(color, share):
    """``color`` mixed with white: share 0 keeps it, 1 gives white."""
    r, g, b = to_rgb(color)
    return (r + (1 - r) * share, g + (1 - g) * share, b + (1 - b) * share)


def chunk_color(kind, chunk, chunks):
    """Colour of a pipeline box: ``COLORS[kind]`` (forward or backward), lighter for later model chunks of an
    interleaved stage (``chunk`` of ``chunks``).

    >>> chunk_color("forward", 0, 2) == to_rgb(COLORS["forward"])
    True
    """
    return _lighter(COLORS[kind], 0.55 * chunk / (chunks - 1) if chunks > 1 else 0.0)


def text_color(rgb):
    """Black or white, whichever reads better on a box of colour ``rgb``.

    >>> text_color("#4C72B0"), text_color("#DCE8F5")
    ('white', 'black')
    """
    r, g, b = to_rgb(rgb)
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.6 else "white"


def box_edge_width(chunk_width_pt):
    """Width (points) of the white gaps between pipeline boxes whose narrowest box, one chunk's forward, is
    ``chunk_width_pt`` points wide: none once the gaps would hide the boxes.

    >>> box_edge_width(10), box_edge_width(2), box_edge_width(1)
    (0.6, 0.3, 0.0)
    """
    return 0.6 if chunk_width_pt >= 4 else 0.3 if chunk_width_pt >= 1.5 else 0.0


def microbatch_label_size(chunk_width_pt, axes_height_pt, stages, microbatches):
    """Font size (points) of the micro-batch numbers in boxes whose narrowest, one chunk's forward, is
    ``chunk_width_pt`` wide, in ``stages`` rows of an axes ``axes_height_pt`` high: at most 9, and small enough for
    the widest number to fit. A Gantt chart writes them at this size rounded down to whole points, when that is at
    least its ``min_label_size`` (by default ``MIN_LABEL_SIZE``, 6 points).

    >>> microbatch_label_size(40, 240, 4, 8), round(microbatch_label_size(5, 240, 4, 32), 2)
    (9.0, 2.96)
    """
    digits = len(str(microbatches))
    return min(9.0, 0.8 * axes_height_pt / max(stages, 1) * _BOX_HEIGHT, chunk_width_pt / (0.62 * digits + 0.45))


def schedule_title(schedule, stages, microbatches, virtual_stages, bubble_fraction) -> str:
    """The title of a pipeline timeline: schedule, p (v when interleaved), m and the bubble.

    >>> schedule_title("interleaved", 4, 8, 2, 0.1875)
    'Interleaved 1F1B, p = 4, v = 2, m = 8: bubble 18.8 %'
    """
    title = f"{SCHEDULE_NAMES[schedule]}, p = {stages}"
    title += f", v = {virtual_stages}" if schedule == "interleaved" else ""
    return title + f", m = {microbatches}: bubble {units.format_percent(bubble_fraction)}"


def plot_pipeline_schedule(timeline, ax=None):
    """A pipeline timeline as a Gantt chart: the lab's ``PipelineScheduleFigure``, built on ``ax`` and drawn once.

    One row per stage (stage 0 on top), one box per op: forward boxes in ``COLORS["forward"]``, backward boxes in
    ``COLORS["backward"]``, later model chunks of an interleaved stage in lighter shades, each named in the legend.
    Boxes are labelled with the micro-batch number counted from 1, as in Narayanan et al. 2021's Figures 3 and 4,
    when the number fits; grey behind the boxes is idle time, the bubble. The x axis is in units of t_f
    (``timeline.forward_time_s``), so a full-stage forward is 1 wide whatever the real duration; its label gives
    t_f when it is not 1 s. The boxes are one ``PathPatch`` per (kind, chunk) with gid
    ``"pipeline-<kind>-chunk<c>"``, the idle background has gid ``"pipeline-idle"``, the title gid
    ``"pipeline-title"``.

    >>> from course_lib.pipeline import pipeline_schedule
    >>> ax = plot_pipeline_schedule(pipeline_schedule(4, 8, "1f1b", forward_time_s=0.01, backward_time_s=0.02))
    >>> [text.get_text() for text in ax.texts if text.get_gid() == "pipeline-title"], ax.get_xlabel()
    (['1F1B, p = 4, m = 8: bubble 37.5 %'], 'time (units of $t_f$ = 10 ms)')
    >>> plt.close("all")
    """
    if not isinstance(timeline, PipelineTimeline):
        raise ValueError(f"timeline must be a PipelineTimeline (from pipeline.pipeline_schedule), got {timeline!r}")
    ax = axes_or_new(ax)
    figure = PipelineScheduleFigure(
        ax,
        max_stages=timeline.stages,
        max_virtual_stages=timeline.virtual_stages,
        label_pool=len(timeline.ops),
        fontsize=10,
    )
    figure.update(timeline)
    return ax


def _checked_breakdowns(breakdowns):
    if not isinstance(breakdowns, Mapping) or not breakdowns:
        raise ValueError(
            f"breakdowns must be a non-empty mapping of label -> parallelism.MemoryBreakdown, got {breakdowns!r}"
        )
    for label, breakdown in breakdowns.items():
        if not isinstance(breakdown, parallelism.MemoryBreakdown):
            raise ValueError(f"breakdowns[{label!r}] must be a parallelism.MemoryBreakdown, got {breakdown!r}")
        if any(np.ndim(getattr(breakdown, field)) for field in MEMORY_COMPONENTS):
            raise ValueError(f"breakdowns[{label!r}] must hold one plan (scalar fields), not arrays")
    return breakdowns


def memory_components_of(breakdowns) -> tuple:
    """The ``MEMORY_COMPONENTS`` that stacked bars of ``breakdowns`` must draw for each bar to reach its total: the
    model's four (``MODEL_MEMORY_COMPONENTS``) and any other that is not 0 in some breakdown.

    >>> calibrated = parallelism.MemoryBreakdown(1.0, 1.0, 1.0, 1.0, logits=2.0)
    >>> memory_components_of([calibrated])
    ('parameters', 'gradients', 'optimizer_state', 'activations', 'logits')
    """
    return tuple(
        field
        for field in MEMORY_COMPONENTS
        if field in MODEL_MEMORY_COMPONENTS or any(float(getattr(b, field)) != 0 for b in breakdowns)
    )


_BAR_WIDTH = 0.6


class MemoryBarsFigure(LiveFigure):
    """Live stacked bars of per-device memory, one bar per plan, against a device's capacity, on one axes.

    Each bar stacks ``components`` (fields of ``MEMORY_COMPONENTS``, bottom to top, in ``COLORS``) of one
    ``parallelism.MemoryBreakdown``, its total written above it. With a capacity a dashed line marks it, and a bar
    above it gets a red dashed outline and "does not fit". The y axis ends at ``capacity_multiple`` × the capacity
    when given (a lab's scale then changes only with the device), else at 1.2 × the largest of the capacity and the
    totals within 2.5× it (1.18 × the largest total without a capacity); a bar above the axis keeps its true height
    and its total is written under the top, after an arrow. With ``selected`` that bar is opaque and outlined in
    black, the others faded. Texts are ``fontsize`` points, the y tick labels ``y_tick_fontsize`` (at most ``y_ticks``
    intervals). ``update(breakdowns, capacity_bytes=None, selected=None)`` takes one breakdown per plan,
    in ``plan_labels`` order; one with bytes in a component the figure was built without raises ``ValueError``.

    >>> from matplotlib.figure import Figure
    >>> live = MemoryBarsFigure(Figure().add_subplot(), ["t=8 p=8 d=8"])
    >>> plan = parallelism.ParallelPlan(tensor_parallel=8, pipeline_parallel=8, data_parallel=8, zero_stage=1)
    >>> ideal = parallelism.memory_breakdown(parallelism.GPT3_175B, plan, calibration=None)  # the four model components
    >>> live.update([ideal], capacity_bytes=80e9)
    >>> live.totals[0].get_text(), live.capacity_text.get_text()
    ('22 GB', 'capacity\\n80 GB')
    """

    def __init__(
        self,
        ax,
        plan_labels,
        components=MODEL_MEMORY_COMPONENTS,
        capacity_multiple=None,
        fontsize=9,
        y_ticks=8,
        y_tick_fontsize=10,
        title=None,
        legend_top=None,
    ):
        super().__init__(ax)
        self.components = tuple(components)
        unknown = [field for field in self.components if field not in MEMORY_COMPONENTS]
        if unknown or not self.components:
            raise ValueError(f"components must be fields of MEMORY_COMPONENTS {list(MEMORY_COMPONENTS)}, got {unknown}")
        self.capacity_multiple = capacity_multiple
        self.y_ticks = y_ticks
        labels = [str(label) for label in plan_labels]
        x = np.arange(len(labels), dtype=float)
        zeros = np.zeros(len(labels))
        self.containers = []
        for field in self.components:
            bars = ax.bar(
                x,
                zeros,
                _BAR_WIDTH,
                color=COLORS[field],
                label=MEMORY_COMPONENTS[field],
                edgecolor="white",
                linewidth=0.6,
                zorder=2,
            )
            for bar in bars:
                bar.set_gid(f"memory-{field}")
            self.containers.append(bars)
        self.stacks = [[bars[index] for bars in self.containers] for index in range(len(labels))]  # one per plan
        self.over_outlines = [
            ax.add_patch(
                Rectangle(
                    (xi - _BAR_WIDTH / 2, 0),
                    _BAR_WIDTH,
                    0,
                    fill=False,
                    edgecolor=COLORS["exposed"],
                    linestyle="--",
                    linewidth=2,
                    zorder=4,
                    gid="over-capacity",
                    visible=False,
                )
            )
            for xi in x
        ]
        self.selected_outline = ax.add_patch(
            Rectangle((-_BAR_WIDTH / 2, 0), _BAR_WIDTH, 0, fill=False, edgecolor="black", linewidth=2.0, zorder=4.5)
        )
        self.selected_outline.set_visible(False)
        self.totals = [
            CachedText.add(
                ax,
                xi,
                0,
                ha="center",
                va="bottom",
                fontsize=fontsize,
                zorder=5,
                bbox=dict(facecolor="white", edgecolor="none", alpha=0.85, pad=1),
            )
            for xi in x
        ]
        left = mtransforms.blended_transform_factory(ax.transAxes, ax.transData)
        self.capacity_line = ax.axhline(
            0, color=COLORS["capacity"], linestyle="--", linewidth=1.5, zorder=3, gid="capacity", visible=False
        )
        self.capacity_text = CachedText.add(
            ax, 1.01, 0, transform=left, ha="left", va="center", fontsize=fontsize, color=COLORS["capacity"]
        )
        self.capacity_text.set_gid("capacity-label")
        # The y scale follows the bars (or the device), so its ticks are artists of their own, redrawn with the bars.
        # 7 pt left of the spine, as matplotlib puts its own: the 3.5 pt tick and a 3.5 pt pad
        tick_labels = left + mtransforms.ScaledTranslation(-7 / 72, 0, ax.figure.dpi_scale_trans)
        self.y_tick_marks = ax.add_artist(
            Line2D(
                [],
                [],
                transform=left,
                marker=TICKLEFT,
                linestyle="none",
                color="black",
                markersize=3.5,
                markeredgewidth=0.8,
                clip_on=False,
            )
        )
        self.y_tick_labels = [
            CachedText.add(ax, 0, 0, transform=tick_labels, ha="right", va="center", fontsize=y_tick_fontsize)
            for _ in range(2 * y_ticks)
        ]
        ax.set_xlim(-0.6, len(labels) - 0.4)
        ax.set_ylim(0, 1)
        ax.set_xticks(x, labels)
        ax.set_yticks([])
        ax.tick_params(axis="x", labelsize=fontsize)
        # The tick labels are not the axis' own: pad the label by the widest one ("1.25 TB", 7 characters).
        ax.set_ylabel("memory per device (bytes)", fontsize=fontsize + 1, labelpad=0.62 * y_tick_fontsize * 7 + 6)
        if title:
            ax.set_title(title, fontsize=fontsize + 1)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        if legend_top is None:
            legend_top = -0.12 if any("\n" in label for label in labels) else -0.08
        ax.legend(
            handles=self.containers,
            loc="upper center",
            bbox_to_anchor=(0.5, legend_top),
            ncol=len(self.components) if len(self.components) <= 4 else 3,
            frameon=False,
            fontsize=fontsize,
            handlelength=1.5,
            columnspacing=1.2,
        )
        self.animated = (
            *[bar for bars in self.containers for bar in bars],
            *self.over_outlines,
            self.selected_outline,
            *self.totals,
            self.capacity_line,
            self.capacity_text,
            self.y_tick_marks,
            *self.y_tick_labels,
        )
        self._top_shown = None

    def _top(self, totals, capacity) -> float:
        """Where the y axis ends (see the class docstring)."""
        if capacity is None:
            peak = max(totals)
            return 1.18 * peak if peak > 0 else 1.0
        if self.capacity_multiple is not None:
            return self.capacity_multiple * capacity
        return 1.2 * max([capacity] + [total for total in totals if total <= 2.5 * capacity])

    def _set_scale(self, top) -> None:
        self.ax.set_ylim(0, top)
        locator = MaxNLocator(nbins=self.y_ticks, steps=[1, 2, 2.5, 5, 10])  # matplotlib's AutoLocator steps
        ticks = [t for t in locator.tick_values(0, top) if 0 <= t <= top][: len(self.y_tick_labels)]
        self.y_tick_marks.set_data([0.0] * len(ticks), ticks)
        for index, label in enumerate(self.y_tick_labels):
            label.set_visible(index < len(ticks))
            if index < len(ticks):
                label.set_y(ticks[index])
                label.set_text(bytes_formatter(ticks[index], index))
        self._top_shown = top

    def update(self, breakdowns, capacity_bytes=None, selected=None) -> None:
        """Draw ``breakdowns`` (one ``MemoryBreakdown`` per plan) against ``capacity_bytes``, plan ``selected``
        outlined."""
        breakdowns = list(breakdowns)
        if len(breakdowns) != len(self.stacks):
            raise ValueError(f"breakdowns must hold one breakdown per plan ({len(self.stacks)}), got {len(breakdowns)}")
        for index, breakdown in enumerate(breakdowns):
            left_out = [f for f in MEMORY_COMPONENTS if f not in self.components and float(getattr(breakdown, f))]
            if left_out:
                raise ValueError(
                    f"breakdowns[{index}] has bytes in {left_out}, which this figure was built without: build it "
                    f"with components=memory_components_of(breakdowns)"
                )
        capacity = None if capacity_bytes is None else float(capacity_bytes)
        totals = [float(breakdown.total) for breakdown in breakdowns]
        top = self._top(totals, capacity)
        if top != self._top_shown:
            self._set_scale(top)
        self.capacity_line.set_visible(capacity is not None)
        self.capacity_text.set_visible(capacity is not None)
        if capacity is not None:
            self.capacity_line.set_ydata([capacity, capacity])
            self.capacity_text.set_y(capacity)
            self.capacity_text.set_text(f"capacity\n{units.format_bytes(capacity)}")
        for index, (bars, breakdown, total) in enumerate(zip(self.stacks, breakdowns, totals, strict=True)):
            bottom = 0.0
            for bar, field in zip(bars, self.components, strict=True):
                height = float(getattr(breakdown, field))
                bar.set_y(bottom)
                bar.set_height(height)
                bar.set_alpha(None if selected is None else 1.0 if index == selected else 0.4)
                bottom += height
            over = capacity is not None and total > capacity
            self.over_outlines[index].set_visible(over)
            self.over_outlines[index].set_height(total)
            text = units.format_bytes(total) + ("\ndoes not fit" if over else "")
            label = self.totals[index]
            if total > 0.93 * top:  # above the axis, or too close to its top for the text: under the top, an arrow
                label.set_text("↑ " + text)
                label.set_y(0.98 * top)
                label.set_verticalalignment("top")
            else:
                label.set_text(text)
                label.set_y(total + 0.01 * top)
                label.set_verticalalignment("bottom")
            label.set_color(COLORS["exposed"] if over else "black")
        self.selected_outline.set_visible(selected is not None)
        if selected is not None:
            self.selected_outline.set_x(selected - _BAR_WIDTH / 2)
            self.selected_outline.set_height(min(totals[selected], top))


def plot_memory_breakdown(breakdowns, capacity_bytes=None, ax=None):
    """Stacked bars of per-device memory, one bar per plan: a ``MemoryBarsFigure`` built on ``ax`` and drawn once.

    ``breakdowns`` maps a label (the bar's tick) to a ``parallelism.MemoryBreakdown``; each bar stacks every component
    that is not 0 in some plan (``memory_components_of``), its total printed above it. With ``capacity_bytes`` a
    dashed line marks the device's memory; bars above it get a red dashed outline and "does not fit". When a bar is
    more than 2.5× the capacity the y axis stops short of it (its rectangles keep their true heights) and an arrow
    label gives its total, so the bars that nearly fit stay readable.

    >>> plan = parallelism.ParallelPlan(tensor_parallel=8, pipeline_parallel=8, data_parallel=8, zero_stage=1,
    ...                                 recompute="full")
    >>> mem = parallelism.memory_breakdown(parallelism.GPT3_175B, plan, calibration=None)
    >>> ax = plot_memory_breakdown({"t=8 p=8 d=8": mem}, capacity_bytes=80e9)
    >>> [c.get_label() for c in ax.containers]
    ['parameters', 'gradients', 'optimizer state', 'activations']
    >>> plt.close("all")
    """
    breakdowns = _checked_breakdowns(breakdowns)
    capacity = None if capacity_bytes is None else _check.positive("capacity_bytes", capacity_bytes)
    ax = axes_or_new(ax)
    figure = MemoryBarsFigure(ax, list(breakdowns), memory_components_of(breakdowns.values()))
    figure.update(breakdowns.values(), capacity)
    return ax


# ---- the four splits of one model -------------------------------------------------------------------------------

# A model small enough to draw: 4 layers, and plans on 2 devices. The arrow labels come from
# parallelism.boundary_tensors on these plans, so the diagram says what the cost model counts.
_TINY_MODEL = parallelism.TransformerModel("4-layer example", layers=4, hidden=64, heads=4, vocab=256, seq_len=32)
_SPLIT_PLANS = {
    "data": parallelism.ParallelPlan(data_parallel=2),
    "tensor": parallelism.ParallelPlan(tensor_parallel=2),
    "pipeline": parallelism.ParallelPlan(pipeline_parallel=2),
    "zero": parallelism.ParallelPlan(data_parallel=2, zero_stage=3),
}
_OP_NAMES = {
    "all_reduce": "all-reduce",
    "all_gather": "all-gather",
    "reduce_scatter": "reduce-scatter",
    "send_recv": "send/recv",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "all_to_all": "all-to-all",
}


def _short_tensor(transfer):
    name = transfer.tensor
    for key, short in (
        ("partial sums", "partial sums"),
        ("activation gradients", "gradients"),
        ("activations", "activations"),
        ("parameters", "parameters"),
        ("gradients", "gradients"),
    ):
        if key in name:
            return short
    return name


def _split_label(split):
    """Arrow label for one split, built from the transfers the cost model lists for it."""
    transfers = parallelism.boundary_tensors(_TINY_MODEL, _SPLIT_PLANS[split])
    if split == "tensor":
        plan = _SPLIT_PLANS[split]
        per_layer = (_TINY_MODEL.layers // plan.pipeline_parallel) * plan.grad_accum_steps
        counts = {
            ("forward" if "forward" in t.tensor else "backward"): t.calls_per_step // per_layer for t in transfers
        }
        op = _OP_NAMES[transfers[0].op]
        return f"{_short_tensor(transfers[0])}: {op} ×{counts['forward']} per layer fwd, ×{counts['backward']} bwd"
    if split == "pipeline":
        direction = " / ".join(f"{_short_tensor(t)} {'fwd' if 'forward' in t.tensor else 'bwd'}" for t in transfers)
        ops = dict.fromkeys(_OP_NAMES[t.op] for t in transfers)
        return f"{direction}: {', '.join(ops)}"
    by_tensor = {}
    for t in transfers:
        by_tensor.setdefault(_short_tensor(t), {})[_OP_NAMES[t.op]] = None
    return "; ".join(f"{name}: {', '.join(ops)}" for name, ops in by_tensor.items())


_LAYER_X = [1.75 + 2.05 * i for i in range(4)]  # left edge of each layer box
_LAYER_W = 1.65
_PIPELINE_LAYER_X = [1.75, 3.7, 6.25, 8.2]  # a wider gap where the stages meet


def _region(ax, x0, y0, x1, y1, device):
    ax.add_patch(
        Rectangle(
            (x0, y0),
            x1 - x0,
            y1 - y0,
            facecolor=_DEVICE_FILL[device],
            edgecolor=_DEVICE_EDGE[device],
            linewidth=1.5,
            zorder=0,
            gid=f"device-{device}",
        )
    )
    ax.text(
        x0 + 0.1,
        y1 - 0.1,
        f"GPU {device}",
        ha="left",
        va="top",
        fontsize=9,
        fontweight="bold",
        color=_DEVICE_EDGE[device],
        zorder=1,
    )


def _matrix(ax, x, y, w, h, name, share=None):
    """A weight matrix. ``share`` = (owned half, other half style): None draws it whole."""
    if share is None:
        ax.add_patch(Rectangle((x, y), w, h, facecolor=COLORS["parameters"], edgecolor="white", zorder=3))
    else:
        half, other = share
        owned_x = x if half == 0 else x + w / 2
        other_x = x + w / 2 if half == 0 else x
        ax.add_patch(Rectangle((owned_x, y), w / 2, h, facecolor=COLORS["parameters"], edgecolor="white", zorder=3))
        if other == "absent":
            ax.add_patch(
                Rectangle(
                    (other_x, y),
                    w / 2,
                    h,
                    fill=False,
                    edgecolor=COLORS["parameters"],
                    linestyle=":",
                    linewidth=1,
                    zorder=3,
                )
            )
        else:  # gathered for the layer's compute, then freed
            ax.add_patch(
                Rectangle(
                    (other_x, y),
                    w / 2,
                    h,
                    facecolor="white",
                    edgecolor=COLORS["parameters"],
                    hatch="////",
                    linewidth=0.8,
                    zorder=3,
                )
            )
    ax.text(x + w / 2, y + h + 0.05, name, ha="center", va="bottom", fontsize=8, zorder=4)


def _layer(ax, i, y_mid, height, share=None, title=None, xs=_LAYER_X):
    x = xs[i]
    ax.add_patch(
        Rectangle(
            (x, y_mid - height / 2), _LAYER_W, height, facecolor="white", edgecolor="#555555", linewidth=1, zorder=2
        )
    )
    ax.text(
        x + _LAYER_W / 2,
        y_mid + height / 2 - 0.07,
        title or f"layer {i + 1}",
        ha="center",
        va="top",
        fontsize=8,
        zorder=4,
    )
    w, h = 0.62, 0.5
    base = y_mid - height / 2 + 0.12
    _matrix(ax, x + 0.13, base, w, h, "attn", share)
    _matrix(ax, x + _LAYER_W - 0.13 - w, base, w, h, "MLP", share)


def _batch(ax, y_mid, height, text):
    ax.add_patch(
        Rectangle(
            (0.2, y_mid - height / 2),
            1.2,
            height,
            facecolor=COLORS["activations"],
            alpha=0.25,
            edgecolor=COLORS["activations"],
            zorder=2,
        )
    )
    ax.text(0.8, y_mid, text, ha="center", va="center", fontsize=8, zorder=4)


def _flow(ax, y_mid, layers=(0, 1, 2, 3), with_batch=True, xs=_LAYER_X):
    """Grey arrows: the forward pass from the batch through the layers (within one device)."""
    starts = ([1.4] if with_batch else []) + [xs[i] + _LAYER_W for i in layers][:-1]
    ends = ([xs[layers[0]]] if with_batch else []) + [xs[i] for i in layers][1:]
    for x0, x1 in zip(starts, ends, strict=True):
        ax.add_patch(
            FancyArrowPatch(
                (x0, y_mid),
                (x1, y_mid),
                arrowstyle="-|>",
                mutation_scale=8,
                color="#777777",
                linewidth=1,
                zorder=2,
                gid="flow",
            )
        )


def _model_row(ax, y_mid, height, batch_text, share=None, layer_title=None):
    _batch(ax, y_mid, height * 0.6, batch_text)
    for i in range(4):
        _layer(ax, i, y_mid, height, share, layer_title(i) if layer_title else None)
    _flow(ax, y_mid)


def _boundary_arrow(ax, start, end, axis, style="<|-|>"):
    ax.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle=style,
            mutation_scale=10,
            color=AXIS_COLORS[axis],
            linewidth=1.8,
            zorder=5,
            gid="boundary-arrow",
        )
    )


def _boundary_label(ax, x, y, text, axis):
    ax.text(
        x,
        y,
        text,
        ha="center",
        va="center",
        fontsize=9,
        color="black",
        zorder=6,
        gid="boundary-label",
        bbox=dict(boxstyle="round,pad=0.3", facecolor="white", edgecolor=AXIS_COLORS[axis], linewidth=1.2),
    )


def _note(ax, text):
    ax.text(5.0, 0.02, text, ha="center", va="bottom", fontsize=8, style="italic", color="#333333")


_TOP, _BOTTOM = (3.55, 6.05), (0.5, 3.0)  # y ranges of the GPU 0 and GPU 1 regions in the stacked panels
_ROW_H = 1.55


def _two_copies(ax, axis, label, batch_text, share_top=None, share_bottom=None, layer_title=None):
    _region(ax, 0.05, _TOP[0], 9.95, _TOP[1], 0)
    _region(ax, 0.05, _BOTTOM[0], 9.95, _BOTTOM[1], 1)
    y_top = (_TOP[0] + _TOP[1]) / 2 - 0.1
    y_bottom = (_BOTTOM[0] + _BOTTOM[1]) / 2 - 0.1
    _model_row(ax, y_top, _ROW_H, batch_text, share_top, layer_title)
    _model_row(ax, y_bottom, _ROW_H, batch_text, share_bottom, layer_title)
    for x in _LAYER_X:
        _boundary_arrow(ax, (x + _LAYER_W / 2, y_bottom + _ROW_H / 2), (x + _LAYER_W / 2, y_top - _ROW_H / 2), axis)
    _boundary_label(ax, 5.8, (_TOP[0] + _BOTTOM[1]) / 2, label, axis)


def _draw_data(ax):
    _two_copies(ax, "data", _split_label("data"), "½ batch")
    _note(ax, "each GPU: the whole model, half the batch")


def _draw_tensor(ax):
    _two_copies(
        ax,
        "tensor",
        _split_label("tensor"),
        "batch",
        share_top=(0, "absent"),
        share_bottom=(1, "absent"),
        layer_title=lambda i: f"layer {i + 1} (½)",
    )
    _note(ax, "each GPU: half of every weight matrix, the whole batch")


def _draw_pipeline(ax):
    xs = _PIPELINE_LAYER_X
    boundary = (xs[1] + _LAYER_W + xs[2]) / 2
    _region(ax, 0.05, 0.5, boundary, 6.05, 0)
    _region(ax, boundary, 0.5, 9.95, 6.05, 1)
    y_mid = 3.5
    _batch(ax, y_mid, _ROW_H * 0.6, "batch")
    for i in range(4):
        _layer(ax, i, y_mid, _ROW_H, xs=xs)
    _flow(ax, y_mid, layers=(0, 1), xs=xs)
    _flow(ax, y_mid, layers=(2, 3), with_batch=False, xs=xs)
    x0, x1 = xs[1] + _LAYER_W + 0.05, xs[2] - 0.05
    _boundary_arrow(ax, (x0, y_mid + 0.3), (x1, y_mid + 0.3), "pipeline", style="-|>")
    _boundary_arrow(ax, (x1, y_mid - 0.3), (x0, y_mid - 0.3), "pipeline", style="-|>")
    _boundary_label(ax, boundary, 1.75, _split_label("pipeline"), "pipeline")
    _note(ax, "each GPU: half the layers, the whole batch in micro-batches")


def _draw_zero(ax):
    _two_copies(ax, "zero", _split_label("zero"), "½ batch", share_top=(0, "gathered"), share_bottom=(1, "gathered"))
    _note(ax, "each GPU: half the batch; stores ½ of parameters, gradients, optimizer state (hatched: gathered)")


_SPLITS = (
    ("Data parallel", _draw_data),
    ("Tensor parallel", _draw_tensor),
    ("Pipeline parallel", _draw_pipeline),
    ("ZeRO stage 3 (sharded data parallel)", _draw_zero),
)


def plot_parallelism_splits(axes=None):
    """The same 4-layer model split four ways on 2 GPUs: data, tensor, pipeline parallel and ZeRO stage 3.

    Each layer holds two weight matrices (attention and MLP); shaded regions are the GPUs. Coloured double arrows
    mark the tensors that cross a GPU boundary, and their label names the tensor and the collective. The labels
    are built from ``parallelism.boundary_tensors`` on a 4-layer model with the matching 2-GPU plans, so the
    diagram and the cost model agree. Tensor parallel: each GPU keeps half of each matrix (dotted: the half it
    does not hold). ZeRO-3: each GPU stores half of each matrix and gathers the other half (hatched) for the
    layer's forward and backward. Returns the 2 × 2 array of Axes (or ``axes`` as given, 4 Axes).

    >>> axes = plot_parallelism_splits()
    >>> [t.get_text() for t in axes[0, 0].texts if t.get_gid() == "boundary-label"]
    ['gradients: all-reduce']
    >>> plt.close("all")
    """
    if axes is None:
        _, axes = plt.subplots(2, 2, figsize=(11, 8), layout="constrained")
    else:
        axes = np.asarray(axes, dtype=object)
        if axes.size != 4 or not all(hasattr(a, "add_patch") for a in axes.flat):
            raise ValueError(f"axes must hold 4 matplotlib Axes, got {axes.size} item(s)")
    for ax, (title, draw) in zip(axes.flat, _SPLITS, strict=True):
        draw(ax)
        ax.set_xlim(0, 10)
        ax.set_ylim(0, 6.4)
        ax.set_axis_off()
        ax.set_title(title, fontsize=11, fontweight="bold")
    return axes


# ---- one transformer layer under tensor parallelism (Megatron-LM's f and g) --------------------------------------

# The conjugate operators around each block (Shoeybi et al. 2019 §3, Fig. 3; Korthikanti et al. 2022 §4.2.2, Fig. 5):
# without sequence parallelism f is the identity forward and an all-reduce backward, g an all-reduce forward and the
# identity backward; with it, f becomes an all-gather forward (reduce-scatter backward) and g a reduce-scatter forward
# (all-gather backward). (operator name, forward op, backward op), in the order they sit in a block.
# The last field is the tensor the collective carries (forward; backward, its gradient).
TP_OPERATORS = {
    False: (
        ("f", "identity", "all_reduce", "bwd: ∂ of the b·s·h input"),
        ("g", "all_reduce", "identity", "fwd: b·s·h partial sums"),
    ),
    True: (
        ("g", "all_gather", "reduce_scatter", "b·(s/t)·h slices → b·s·h"),
        ("ḡ", "reduce_scatter", "all_gather", "b·s·h partial sums → slices"),
    ),
}
# Where a tensor lives: on every GPU whole, split over t along the heads / hidden columns, or split along the sequence.
TP_LAYOUT_COLORS = {"replicated": "#E6E6E6", "tensor-split": "#F4C7C8", "sequence-split": "#CFE3CF"}
TP_LAYOUT_NAMES = {
    "replicated": "whole b·s·h on every GPU (replicated)",
    "tensor-split": "split over t GPUs: heads / hidden columns",
    "sequence-split": "split over t GPUs along the sequence (SP)",
}
# Each block, left to right: (gid, box text, layout without SP). "norm" and "residual" boxes become sequence-split
# with SP; the GEMMs and the core (attention heads, GeLU) are tensor-split either way.
_TP_BLOCKS = (
    (
        "attention",
        (
            ("norm", "LayerNorm", "replicated"),
            ("f", None, None),
            ("column-parallel", "Q, K, V\nGEMM\nW: columns", "tensor-split"),
            ("core", "attention\na/t heads", "tensor-split"),
            ("row-parallel", "output\nGEMM\nW: rows", "tensor-split"),
            ("g", None, None),
            ("residual", "dropout\n+ residual", "replicated"),
        ),
    ),
    (
        "MLP",
        (
            ("norm", "LayerNorm", "replicated"),
            ("f", None, None),
            ("column-parallel", "h → 4h/t\nGEMM\nW: columns", "tensor-split"),
            ("core", "GeLU\n4h/t", "tensor-split"),
            ("row-parallel", "4h/t → h\nGEMM\nW: rows", "tensor-split"),
            ("g", None, None),
            ("residual", "dropout\n+ residual", "replicated"),
        ),
    ),
)


def tp_operator_label(forward_op, backward_op, carries) -> str:
    """The label under one conjugate operator: the collective it runs forward and backward, and what it carries.

    >>> tp_operator_label("all_reduce", "identity", "fwd: b·s·h partial sums")
    'fwd: all-reduce\\nbwd: identity\\nfwd: b·s·h partial sums'
    """
    names = {**_OP_NAMES, "identity": "identity"}
    return f"fwd: {names[forward_op]}\nbwd: {names[backward_op]}\n{carries}"


def plot_tensor_parallel_layer(sequence_parallel=False, ax=None):
    """One transformer layer under tensor parallelism: the attention block, then the MLP block, each a
    column-parallel GEMM followed by a row-parallel one between Megatron-LM's conjugate operators f and g.

    The box colours say where each tensor lives (``TP_LAYOUT_NAMES``): the GEMMs and what lies between them are split
    over the t GPUs; LayerNorm, dropout and the residual work on the whole b·s·h tensor on every GPU, or, with
    ``sequence_parallel=True``, on a 1/t slice of the sequence. The circles are the operators (``TP_OPERATORS``),
    each labelled with the collective it runs forward and backward on the b·s·h activation (or its gradient); the
    title counts them per layer from ``parallelism.step_transfers``, so the figure and the cost model agree.

    >>> ax = plot_tensor_parallel_layer(sequence_parallel=True)
    >>> [t.get_text() for t in ax.texts if t.get_gid() == "name-MLP"]
    ['g', 'ḡ']
    >>> plt.close("all")
    """
    sp = _check.flag("sequence_parallel", sequence_parallel)
    ax = axes_or_new(ax, figsize=(8, 3.6))
    operators = dict(zip(("f", "g"), TP_OPERATORS[sp], strict=True))
    # The per-layer counts come from the cost model, on a 2-GPU plan of a small model (one micro-batch).
    plan = parallelism.ParallelPlan(tensor_parallel=2, sequence_parallel=sp)
    model = parallelism.TransformerModel("1-layer example", layers=1, hidden=64, heads=4, vocab=256, seq_len=32)
    forward = {}
    for transfer in parallelism.step_transfers(model, plan):
        if transfer.axis == "tensor" and "forward" in transfer.tensor:
            forward[_OP_NAMES[transfer.op]] = transfer.calls_per_step
    counts = " + ".join(f"{count} {op}s" for op, count in forward.items())
    width, gap = 1.05, 0.22
    step = width + gap
    for row, (block, elements) in enumerate(_TP_BLOCKS):
        y = 2.9 - 2.25 * row
        ax.text(-0.15, y, block, ha="right", va="center", fontsize=9, fontweight="bold", rotation=90)
        x = 0.0
        centers = []
        for gid, text, layout in elements:
            if text is None:  # an operator: a circle and its forward / backward collectives
                name, fwd, bwd, carries = operators[gid]
                cx = x + 0.32
                ax.add_patch(
                    plt.Circle((cx, y), 0.3, facecolor="white", edgecolor=AXIS_COLORS["tensor"], lw=1.8, zorder=3)
                )
                ax.text(
                    cx, y, name, ha="center", va="center", fontsize=10, fontweight="bold", gid=f"name-{block}", zorder=4
                )
                ax.text(
                    cx,
                    y - 0.46,
                    tp_operator_label(fwd, bwd, carries),
                    ha="center",
                    va="top",
                    fontsize=8,
                    linespacing=1.1,
                    gid=f"operator-{block}",
                    zorder=4,
                )
                centers.append((x, x + 0.64))
                x += 0.64 + gap
                continue
            if sp and layout == "replicated":
                layout = "sequence-split"
            ax.add_patch(
                Rectangle(
                    (x, y - 0.45),
                    width,
                    0.9,
                    facecolor=TP_LAYOUT_COLORS[layout],
                    edgecolor="#555555",
                    lw=1,
                    zorder=2,
                    gid=f"{block}/{gid}/{layout}",
                )
            )
            ax.text(x + width / 2, y, text, ha="center", va="center", fontsize=8, linespacing=1.1, zorder=4)
            centers.append((x, x + width))
            x += step
        for (_, right), (left, _) in itertools.pairwise(centers):
            ax.add_patch(
                FancyArrowPatch(
                    (right, y), (left, y), arrowstyle="-|>", mutation_scale=8, color="#777777", lw=1, zorder=1
                )
            )
    ax.legend(
        handles=[
            Patch(facecolor=TP_LAYOUT_COLORS[k], edgecolor="#555555", label=TP_LAYOUT_NAMES[k])
            for k in (("replicated", "tensor-split") if not sp else ("sequence-split", "tensor-split"))
        ],
        loc="upper center",
        bbox_to_anchor=(0.5, 1.0),
        ncol=2,
        fontsize=8,
        frameon=False,
    )
    title = "without" if not sp else "with"
    ax.set_title(f"Tensor parallelism {title} sequence parallelism: forward, per layer, {counts}", fontsize=10)
    ax.set_xlim(-0.4, x - gap + 0.05)
    ax.set_ylim(-0.95, 3.85)
    ax.set_aspect("equal")
    ax.set_axis_off()
    return ax


# ---- live figures: the pipeline lab's Gantt chart and its check bars ----------------------------------------------

_KINDS = ("forward", "backward")
_ALL_STAGE_TICKS = 16  # up to this many stages every row is labelled; above, about 8 of them


def _box_path(x0, x1, y, height) -> Path:
    """One compound path of n axis-aligned boxes (drawn in a single call, however many there are)."""
    top, bottom = y - height / 2, y + height / 2
    vertices = np.stack(
        [np.stack(corner, -1) for corner in ((x0, top), (x1, top), (x1, bottom), (x0, bottom), (x0, top))], axis=1
    ).reshape(-1, 2)
    codes = np.tile([Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY], len(x0))
    return Path(vertices, codes.astype(Path.code_type))


def _gantt_geometry(timeline) -> dict:
    """The timeline's boxes (in units of t_f), one compound path per (kind, chunk), and its ops' label positions."""
    unit, ops = timeline.forward_time_s, timeline.ops
    start, end = (np.array([getattr(op, name) for op in ops], float) / unit for name in ("start_s", "end_s"))
    stage = np.array([op.stage for op in ops], float)
    kind = np.array([_KINDS.index(op.kind) for op in ops])
    chunk = np.array([op.chunk for op in ops])
    paths = {}
    for k in range(len(_KINDS)):
        for c in range(timeline.virtual_stages):
            mine = (kind == k) & (chunk == c)
            paths[k, c] = _box_path(start[mine], end[mine], stage[mine], _BOX_HEIGHT)
    return {
        "end": float(timeline.total_s / unit),
        "paths": paths,
        "centre": (start + end) / 2,
        "stage": stage,
        "kind": kind,
        "chunk": chunk,
        "label": [str(op.microbatch + 1) for op in ops],
    }


def _stage_ticks(stages: int) -> list[int]:
    """The stages whose row a Gantt chart labels: every one up to 16 stages, else about 8 of them.

    >>> _stage_ticks(4), _stage_ticks(32)
    ([0, 1, 2, 3], [0, 4, 8, 12, 16, 20, 24, 28])
    """
    if stages <= _ALL_STAGE_TICKS:
        return list(range(stages))
    return [int(t) for t in MaxNLocator(integer=True, nbins=8).tick_values(0, stages - 1) if 0 <= t < stages]


def _text_width_pt(text: str, fontsize: float) -> float:
    return TextToPath().get_text_width_height_descent(text, FontProperties(size=fontsize), ismath=False)[0]


class PipelineScheduleFigure(LiveFigure):
    """Live Gantt chart of a pipeline timeline, on axes placed by the caller: one row per stage (stage 0 on top),
    one box per op (``chunk_color``), idle time grey behind them, the micro-batch numbers in the boxes when they
    fit, time in units of t_f. ``update(timeline)`` takes a ``pipeline.pipeline_schedule(...)`` of up to
    ``max_stages`` stages and ``max_virtual_stages`` chunks; both scales change with it, so the ticks are artists of
    their own (``animated``) rather than the axes'.

    The numbers are ``microbatch_label_size`` rounded down to whole points (at most 9, one bitmap per size), written
    when that is at least ``min_label_size``, and when there are at most ``label_pool`` of them. The legend names
    forward and backward with one shade per chunk, and the x label gives t_f when it is not 1 s (``xlabel`` replaces
    it): both depend on the timeline only through ``static_key`` (v and the label). Ticks, axis labels and legend
    are ``fontsize`` points, the title 2 more; they sit at fixed distances in points from the axes.

    >>> from matplotlib.figure import Figure
    >>> from course_lib.pipeline import pipeline_schedule
    >>> live = PipelineScheduleFigure(Figure(figsize=(9, 4)).add_axes((0.1, 0.25, 0.6, 0.6)))
    >>> live.update(pipeline_schedule(4, 8, "interleaved", 2))
    >>> live.title.get_text(), live.ax.get_xlabel()
    ('Interleaved 1F1B, p = 4, v = 2, m = 8: bubble 18.8 %', 'time (units of $t_f$)')
    >>> [text.get_text() for text in live.ax.get_legend().get_texts()]
    ['forward, chunks 1, 2', 'backward, chunks 1, 2', 'idle (bubble)']
    >>> live.update(pipeline_schedule(4, 8, "1f1b"))
    >>> sum(label.get_visible() for label in live.labels), live.labels[0].get_fontsize()
    (64, 9.0)
    """

    def __init__(
        self,
        ax,
        max_stages=16,
        max_virtual_stages=4,
        label_pool=128,
        xlabel=None,
        fontsize=8,
        min_label_size=MIN_LABEL_SIZE,
    ):
        super().__init__(ax)
        self.max_stages, self.max_virtual_stages = int(max_stages), int(max_virtual_stages)
        self.xlabel, self.fontsize, self.min_label_size = xlabel, float(fontsize), float(min_label_size)
        self.idle = ax.add_patch(
            PathPatch(
                Path(np.zeros((1, 2))),
                facecolor=COLORS["bubble"],
                edgecolor="none",
                alpha=0.6,
                zorder=1,
                gid="pipeline-idle",
            )
        )
        # One compound path per (kind, chunk): forward/backward boxes of each model chunk.
        self.boxes = {
            (k, c): ax.add_patch(
                PathPatch(
                    Path(np.zeros((1, 2))),
                    edgecolor="white",
                    linewidth=0.6,
                    zorder=2,
                    visible=False,
                    gid=f"pipeline-{kind}-chunk{c}",
                )
            )
            for k, kind in enumerate(_KINDS)
            for c in range(self.max_virtual_stages)
        }
        # RGBA of each (kind, chunk) for each v; later chunks of an interleaved stage are lighter.
        self._colors = {
            v: np.array([[to_rgba(chunk_color(kind, chunk, v)) for chunk in range(v)] for kind in _KINDS])
            for v in range(1, self.max_virtual_stages + 1)
        }
        self._text_colors = {
            v: [[text_color(chunk_color(kind, chunk, v)) for chunk in range(v)] for kind in _KINDS]
            for v in range(1, self.max_virtual_stages + 1)
        }
        self._label_size = 9.0
        self.labels = [
            CachedText.add(
                ax,
                0,
                0,
                ha="center",
                va="center",
                fontsize=self._label_size,
                zorder=3,
                visible=False,
                gid="pipeline-microbatch",
            )
            for _ in range(label_pool)
        ]

        # Ticks, labels and legend at fixed distances in points from the axes, whatever their size.
        def shifted(transform, dx_pt, dy_pt):
            return transform + mtransforms.ScaledTranslation(dx_pt / 72, dy_pt / 72, ax.figure.dpi_scale_trans)

        size = self.fontsize
        below = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
        left = mtransforms.blended_transform_factory(ax.transAxes, ax.transData)
        tick = dict(linestyle="none", color="black", markersize=3.5, markeredgewidth=0.8, clip_on=False)
        self.x_tick_marks = ax.add_artist(Line2D([], [], transform=below, marker=TICKDOWN, **tick))
        self.y_tick_marks = ax.add_artist(Line2D([], [], transform=left, marker=TICKLEFT, **tick))
        # 7 points from the spine, as matplotlib puts its own: the 3.5-point tick and a 3.5-point pad
        self.x_tick_labels = [
            CachedText.add(ax, 0, 0, transform=shifted(below, 0, -7), ha="center", va="top", fontsize=size)
            for _ in range(16)
        ]
        self.y_tick_labels = [
            CachedText.add(ax, 0, 0, transform=shifted(left, -7, 0), ha="right", va="center", fontsize=size)
            for _ in range(min(self.max_stages, _ALL_STAGE_TICKS))
        ]
        ax.set_xticks([])
        ax.set_yticks([])
        self._xlabel_pad = 7 + 1.2 * size + 3  # under the tick labels
        self._legend_top = self._xlabel_pad + 1.3 * size  # under the x label ($t_f$ reaches below the line)
        self._legend_anchor = shifted(ax.transAxes, 0, -self._legend_top)
        widest = _text_width_pt(f"stage {self.max_stages - 1}", size)
        ax.set_ylabel("pipeline stage (one per device)", fontsize=size, labelpad=7 + widest + 4)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        self.title = CachedText.add(
            ax, 0.5, 1, transform=shifted(ax.transAxes, 0, 6), ha="center", va="bottom", fontsize=size + 2
        )
        self.title.set_gid("pipeline-title")
        self.animated = (
            self.idle,
            *self.boxes.values(),
            *self.labels,
            self.x_tick_marks,
            self.y_tick_marks,
            *self.x_tick_labels,
            *self.y_tick_labels,
            self.title,
        )
        # One small timeline of each v in t_f = 1 s: the static artists of every v a lab can show.
        self.static_examples = tuple(
            pipeline_schedule(1, 1) if v == 1 else pipeline_schedule(2, 2, "interleaved", v)
            for v in range(1, self.max_virtual_stages + 1)
        )
        self._static_shown = None
        self._shown_rows = None
        self._geometries = {}  # id(timeline) → (timeline, its boxes): a lab moving back and forth redraws, not rebuilds

    def time_label(self, timeline) -> str:
        """The x label: ``xlabel``, else time in units of t_f, with its value when it is not 1 s."""
        if self.xlabel is not None:
            return self.xlabel
        unit = timeline.forward_time_s
        return "time (units of $t_f$)" if unit == 1.0 else f"time (units of $t_f$ = {units.format_time(unit)})"

    def static_key(self, timeline):
        """The legend depends on the timeline's v (one shade per chunk), the x label on its t_f."""
        return timeline.virtual_stages, self.time_label(timeline)

    def set_static(self, timeline) -> None:
        """The x label and the legend for ``timeline``: forward and backward, each with one swatch per chunk."""
        v, xlabel = key = self.static_key(timeline)
        ax, size = self.ax, self.fontsize
        ax.set_xlabel(xlabel, fontsize=size, labelpad=self._xlabel_pad)
        handles = [
            tuple(Patch(facecolor=chunk_color(kind, c, v), edgecolor="white", linewidth=0.6) for c in range(v))
            for kind in _KINDS
        ]
        chunks = "" if v == 1 else ", chunks " + ", ".join(str(c + 1) for c in range(v))
        ax.legend(
            [*handles, Patch(facecolor=COLORS["bubble"], alpha=0.6)],
            [f"{kind}{chunks}" for kind in _KINDS] + ["idle (bubble)"],
            handler_map={tuple: HandlerTuple(ndivide=None, pad=0.0)},
            loc="upper center",
            bbox_to_anchor=(0.5, 0.0),
            bbox_transform=self._legend_anchor,
            borderaxespad=0.0,
            ncol=3,
            frameon=False,
            fontsize=size,
            handlelength=1.5 if v == 1 else 1.0 * v,  # one em per chunk's swatch
            columnspacing=1.5,
        )
        self._static_shown = key

    def update(self, timeline) -> None:
        """Draw ``timeline`` (a ``pipeline.PipelineTimeline``)."""
        p, m, v = timeline.stages, timeline.microbatches, timeline.virtual_stages
        if p > self.max_stages or v > self.max_virtual_stages:
            raise ValueError(
                f"this Gantt chart draws at most {self.max_stages} stages and {self.max_virtual_stages} chunks, "
                f"got p = {p}, v = {v}"
            )
        if self.static_key(timeline) != self._static_shown:  # a lab has set them already (set_static_state)
            self.set_static(timeline)
        cached = self._geometries.get(id(timeline))
        if cached is None or cached[0] is not timeline:  # the boxes of a timeline drawn before are kept
            if len(self._geometries) >= 32:
                self._geometries.clear()
            cached = self._geometries[id(timeline)] = (timeline, _gantt_geometry(timeline))
        gantt = cached[1]
        ax, end = self.ax, gantt["end"]
        self.idle.set_path(_box_path(np.zeros(p), np.full(p, end), np.arange(p, dtype=float), _BOX_HEIGHT))
        ax.set_xlim(0, end * 1.005)
        ticks = [t for t in MaxNLocator(nbins=10, integer=True).tick_values(0, end) if 0 <= t <= end]
        self.x_tick_marks.set_data(ticks, [0.0] * len(ticks))
        for index, label in enumerate(self.x_tick_labels):
            label.set_visible(index < len(ticks))
            if index < len(ticks):
                label.set_x(ticks[index])
                label.set_text(f"{ticks[index]:g}")
        if p != self._shown_rows:
            ax.set_ylim(p - 0.5, -0.5)  # stage 0 on top
            rows = _stage_ticks(p)
            self.y_tick_marks.set_data([0.0] * len(rows), rows)
            for index, label in enumerate(self.y_tick_labels):
                label.set_visible(index < len(rows))
                if index < len(rows):
                    label.set_y(rows[index])
                    label.set_text(f"stage {rows[index]}")
            self._shown_rows = p
        self.title.set_text(schedule_title(timeline.schedule, p, m, v, timeline.bubble_fraction))

        # Box edges and labels only where they fit: sizes in points of the axes, where the figure's layout engine,
        # if it has one (a lesson's figure; a lab places its axes), puts them.
        figure = ax.figure
        if figure.get_layout_engine() is not None:
            figure.get_layout_engine().execute(figure)
        box = ax.get_position()
        width_pt = box.width * figure.get_figwidth() * 72
        height_pt = box.height * figure.get_figheight() * 72
        chunk_pt = width_pt / (v * end)  # a chunk's forward, the narrowest box
        edge = box_edge_width(chunk_pt)
        for (k, c), patch in self.boxes.items():
            patch.set_visible(c < v)
            if c < v:
                patch.set_path(gantt["paths"][k, c])
                patch.set_facecolor(self._colors[v][k, c])
                patch.set_linewidth(edge)
        count = len(gantt["label"])
        size = float(math.floor(microbatch_label_size(chunk_pt, height_pt, p, m)))
        show = count <= len(self.labels) and size >= self.min_label_size
        if show and size != self._label_size:
            for label in self.labels:
                label.set_fontsize(size)
            self._label_size = size
        colors = self._text_colors[v]
        for i, label in enumerate(self.labels):
            if show and i < count:
                label.set_position((gantt["centre"][i], gantt["stage"][i]))
                label.set_text(gantt["label"][i])
                label.set_color(colors[gantt["kind"][i]][gantt["chunk"][i]])
                label.set_visible(True)
            elif label.get_visible():
                label.set_visible(False)


class ComparisonBarsFigure(LiveFigure):
    """Live pairs of bars, one small axes each: a quantity as simulated against its formula, each bar labelled with
    its value. ``update(pairs)`` takes one (simulated, formula) pair per axes; each axes is scaled to its pair.

    >>> from matplotlib.figure import Figure
    >>> figure = Figure()
    >>> live = ComparisonBarsFigure([figure.add_subplot()], ["bubble"], [("grey", "black")], [str])
    >>> live.update([(0.375, 0.375)])
    >>> [text.get_text() for text in live.texts[0]]
    ['0.375', '0.375']
    """

    def __init__(self, axes, titles, colors, formatters, names=("simulated", "formula")):
        super().__init__(*axes)
        self.formatters = tuple(formatters)
        self.bars, self.texts = [], []
        for ax, title, pair in zip(axes, titles, colors, strict=True):
            self.bars.append(
                [ax.add_patch(Rectangle((i - 0.3, 0), 0.6, 0, facecolor=color)) for i, color in enumerate(pair)]
            )
            self.texts.append([CachedText.add(ax, i, 0, ha="center", va="bottom", fontsize=8) for i in range(2)])
            ax.set_xlim(-0.6, 1.6)
            ax.set_xticks([0, 1], list(names), fontsize=8)
            ax.set_yticks([])
            ax.set_title(title, fontsize=8)
            for side in ("top", "right", "left"):
                ax.spines[side].set_visible(False)
        self.animated = tuple(artist for group in (*self.bars, *self.texts) for artist in group)

    def update(self, pairs) -> None:
        """Set each axes' bars to its (simulated, formula) pair."""
        for ax, bars, texts, fmt, (simulated, formula) in zip(
            self.axes, self.bars, self.texts, self.formatters, pairs, strict=True
        ):
            top = max(simulated, formula)
            ax.set_ylim(0, 1.35 * top if top > 0 else 1.0)
            for bar, text, value in zip(bars, texts, (simulated, formula), strict=True):
                bar.set_height(value)
                text.set_y(value)
                text.set_text(fmt(value))


# ---- live figure: the memory lab's two panels ---------------------------------------------------------------------

FIT_COLOR = "#2E7D32"


class MemoryBudgetFigure(LiveFigure):
    """Live per-device memory of a few plans against the device's capacity, on two axes placed by the caller.

    Left (``stack_ax``): a ``MemoryBarsFigure`` of the plans (``components`` stacked) on a linear axis from 0 to twice
    the capacity, the selected plan opaque and outlined, and above the axes whether it fits. Right (``log_ax``): each
    component of the selected plan and its total on a fixed log axis ``log_range_bytes``.
    ``update(breakdowns, selected, capacity_bytes)`` takes one ``parallelism.MemoryBreakdown`` per plan (in
    ``plan_labels`` order), the index of the selected one and the device's memory in bytes.

    >>> from matplotlib.figure import Figure
    >>> figure = Figure(figsize=(9, 4))
    >>> live = MemoryBudgetFigure(figure.add_axes((0.1, 0.2, 0.4, 0.6)), figure.add_axes((0.7, 0.2, 0.25, 0.6)), ["a"])
    >>> plan = parallelism.ParallelPlan(tensor_parallel=8, pipeline_parallel=8, data_parallel=8, zero_stage=1)
    >>> live.update([parallelism.memory_breakdown(parallelism.GPT3_175B, plan, calibration=None)], 0, 80e9)
    >>> live.verdict.get_text()
    'fits, 58 GB headroom'
    """

    def __init__(
        self,
        stack_ax,
        log_ax,
        plan_labels,
        log_range_bytes=(1e5, 1e14),
        stack_title=None,
        components=MODEL_MEMORY_COMPONENTS,
    ):
        super().__init__(stack_ax, log_ax)
        self.stack_ax, self.log_ax = stack_ax, log_ax
        self.bars = MemoryBarsFigure(
            stack_ax,
            plan_labels,
            components,
            capacity_multiple=2.0,
            fontsize=8,
            y_ticks=4,
            y_tick_fontsize=8,
            title=stack_title,
            legend_top=-0.15,
        )
        figure = stack_ax.figure
        # An Axes child placed in figure coordinates: savefig draws animated Axes children, not figure ones.
        self.verdict = CachedText.add(
            stack_ax, 0.5, 0.965, transform=figure.transFigure, ha="center", va="top", fontsize=11, fontweight="bold"
        )

        # Right: the selected plan's components on a fixed log axis.
        names = list(self.bars.components) + ["total"]
        colors = [COLORS[c] for c in self.bars.components] + ["#555555"]
        low = log_range_bytes[0] / 10  # bars start left of the axis, so the smallest value still shows a stub
        self.log_bars = [
            log_ax.add_patch(Rectangle((low, i - 0.35), 0, 0.7, facecolor=color, edgecolor="none"))
            for i, color in enumerate(colors)
        ]
        self.log_capacity = log_ax.axvline(log_range_bytes[1], color=COLORS["capacity"], linestyle="--", linewidth=1.4)
        self.log_capacity_text = CachedText.add(
            log_ax, log_range_bytes[1], -0.6, "capacity", ha="center", va="bottom", fontsize=7, color=COLORS["capacity"]
        )
        log_ax.set_xscale("log")
        log_ax.set_xlim(*log_range_bytes)
        log_ax.set_ylim(len(names) - 0.5, -0.5)
        log_ax.set_yticks(range(len(names)), [MEMORY_COMPONENTS.get(n, n) for n in names], fontsize=8)
        log_ax.xaxis.set_major_formatter(bytes_formatter)
        decades = np.log10(log_range_bytes)
        log_ax.set_xticks([10.0**k for k in range(math.ceil(decades[0]), math.floor(decades[1]) + 1, 2)])
        log_ax.xaxis.set_minor_locator(NullLocator())
        log_ax.tick_params(axis="x", labelsize=7)
        log_ax.set_xlabel("bytes per device (log)", fontsize=8)
        log_ax.set_title("selected plan, every component", fontsize=9, pad=12)
        for side in ("top", "right"):
            log_ax.spines[side].set_visible(False)
        self.animated = (
            *self.bars.animated,
            *self.log_bars,
            self.log_capacity,
            self.log_capacity_text,
            self.verdict,
        )
        self._capacity_shown = None

    def update(self, breakdowns, selected, capacity_bytes) -> None:
        """Draw ``breakdowns`` (one ``MemoryBreakdown`` per plan), plan ``selected`` chosen, against the capacity."""
        capacity = float(capacity_bytes)
        self.bars.update(breakdowns, capacity, selected)
        if capacity != self._capacity_shown:
            self.log_capacity.set_xdata([capacity, capacity])
            self.log_capacity_text.set_x(capacity)
            self._capacity_shown = capacity
        chosen = breakdowns[selected]
        total = float(chosen.total)
        low = self.log_bars[0].get_x()
        values = [float(getattr(chosen, field)) for field in self.bars.components] + [total]
        for bar, value in zip(self.log_bars, values, strict=True):
            bar.set_width(max(value - low, 0.0))

        headroom = capacity - total
        fits = total <= capacity
        if fits:
            self.verdict.set_text(f"fits, {units.format_bytes(headroom)} headroom")
        else:
            self.verdict.set_text(f"does not fit by {units.format_bytes(-headroom)}")
        self.verdict.set_color(FIT_COLOR if fits else COLORS["exposed"])


# ---- live figure: the global batch lab's devices and factors ------------------------------------------------------


def count_of(count: int, noun: str) -> str:
    """``count`` ``noun``s, the count formatted and the noun plural unless it is one.

    >>> count_of(1, "replica"), count_of(4096, "device")
    ('1 replica', '4096 devices')
    """
    return f"{units.format_count(count)} {noun}" + ("" if count == 1 else "s")


_STAGE_SHADE = 0.22  # odd pipeline stages are this much darker, so the stages of a replica can be told apart
_FACTOR_COLORS = {
    "b": "#9DB4CF",
    "acc": "#5C7FA8",
    "d": AXIS_COLORS["data"],
    "t": AXIS_COLORS["tensor"],
    "p": AXIS_COLORS["pipeline"],
}
_TRANSPARENT = (0.0, 0.0, 0.0, 0.0)


def _darker(color, share: float) -> tuple:
    red, green, blue = to_rgb(color)
    return (red * (1 - share), green * (1 - share), blue * (1 - share), 1.0)


_REPLICA_SHADES = tuple((to_rgba(color), _darker(color, _STAGE_SHADE)) for color in RANK_COLORS)


def _count_label(value, _position=None) -> str:
    """Tick label of the log bar axis: 1, 10, 100, 1000, 10k, 100k, 1M, 10M."""
    return {1e4: "10k", 1e5: "100k", 1e6: "1M", 1e7: "10M"}.get(value, f"{value:.0f}")


class GlobalBatchFigure(LiveFigure):
    """Live picture of which parallel axes multiply the examples of a step and which only add devices.

    Left (``grid_ax``): the devices, one row per data-parallel replica (up to ``shown_replicas`` rows of
    ``shown_devices`` cells, shaded by pipeline stage) with the range of examples each replica works on. Right
    (``bars_ax``): two log-scale bars built from their factors, devices = d · t · p and examples = b · N_acc · d,
    the shared factor d in the same colour, on the fixed range ``count_limits``. ``update(result)`` takes a mapping
    with the plan's ``micro_batch``, ``grad_accum_steps``, ``data_parallel``, ``tensor_parallel``,
    ``pipeline_parallel`` and ``seq_len`` and what ``parallelism`` makes of them: ``global_batch``,
    ``tokens_per_step``, ``devices``, ``devices_per_replica`` and ``examples_per_replica_per_step``.

    >>> from matplotlib.figure import Figure
    >>> figure = Figure(figsize=(9, 4))
    >>> live = GlobalBatchFigure(figure.add_axes((0, 0, 0.6, 1)), figure.add_axes((0.66, 0.2, 0.32, 0.68)))
    >>> live.update(dict(micro_batch=8, grad_accum_steps=16, data_parallel=2, tensor_parallel=2, pipeline_parallel=1,
    ...                  seq_len=2048, global_batch=256, tokens_per_step=524288, devices=4, devices_per_replica=2,
    ...                  examples_per_replica_per_step=128))
    >>> live.example_labels.get_texts()
    ['1–128', '129–256']
    """

    def __init__(self, grid_ax, bars_ax, shown_replicas=8, shown_devices=16, count_limits=(1.0, 4e7)):
        super().__init__(grid_ax, bars_ax)
        self.shown_replicas, self.shown_devices = shown_replicas, shown_devices
        self._build_grid(grid_ax)
        self._build_bars(bars_ax, count_limits)
        self.animated = (
            self.cells,
            self.brackets,
            self.row_labels,
            self.example_labels,
            self.stage_labels,
            self.examples_header,
            self.grid_title,
            self.grid_subtitle,
            *self.grid_notes,
            *self.segments.values(),
            self.segment_labels,
            self.devices_total,
            self.examples_total,
            self.tokens_note,
        )

    def _build_grid(self, ax) -> None:
        ax.set_axis_off()
        ax.set_autoscale_on(False)
        # Data units: one cell per device; x from the row labels to the examples' labels, y downwards.
        ax.set_xlim(-4.2, self.shown_devices + 6.6)
        ax.set_ylim(self.shown_replicas + 2.4, -2.6)
        cells = [
            Rectangle((column + 0.06, row + 0.1), 0.88, 0.8)
            for row in range(self.shown_replicas)
            for column in range(self.shown_devices)
        ]
        self.cells = ax.add_collection(PatchCollection(cells, facecolors="none", edgecolors="none"), autolim=False)
        (self.brackets,) = ax.plot([], [], color="#444444", linewidth=1.1)
        # Labels of one style are one path each (FastTextGroup): the replicas, their examples, the pipeline stages.
        self.row_labels = FastTextGroup(ax, ha="right", va="center", size=8)
        self.example_labels = FastTextGroup(ax, ha="left", va="center", size=8)
        self.stage_labels = FastTextGroup(ax, ha="center", va="bottom", size=7, color="#555555")
        self.examples_header = FastText(
            ax, (0.0, -0.15), "its examples", ha="left", va="bottom", size=7, color="#555555"
        )
        self.grid_title = FastText(ax, (0.02, 0.985), "", transform=ax.transAxes, ha="left", va="top", size=10)
        self.grid_subtitle = FastText(
            ax, (0.02, 0.92), "", transform=ax.transAxes, ha="left", va="top", size=8, color="#444444"
        )
        self.grid_notes = [
            FastText(
                ax,
                (0.02, 0.09 - 0.055 * line),
                "",
                transform=ax.transAxes,
                ha="left",
                va="center",
                size=8,
                color="#444444",
            )
            for line in range(2)
        ]

    def _build_bars(self, ax, count_limits) -> None:
        ax.set_yscale("log")
        ax.set_autoscale_on(False)
        ax.set_xlim(-0.6, 1.6)
        ax.set_ylim(*count_limits)
        decades = range(math.ceil(math.log10(count_limits[0])), math.floor(math.log10(count_limits[1])) + 1)
        ax.yaxis.set_major_locator(FixedLocator([10.0**k for k in decades]))
        ax.yaxis.set_major_formatter(FuncFormatter(_count_label))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_locator(FixedLocator([0, 1]))
        ax.xaxis.set_major_formatter(
            FuncFormatter(lambda x, _pos: ("devices\nd · t · p", "examples per step\nb · N_acc · d")[int(round(x))])
        )
        ax.tick_params(labelsize=8)
        ax.grid(True, axis="y", alpha=0.25)
        ax.set_title("log scale: each factor is one segment", fontsize=9)
        self.segments = {}
        for bar, factors in ((0, ("d", "t", "p")), (1, ("b", "acc", "d"))):
            for factor in factors:
                self.segments[bar, factor] = ax.add_patch(
                    Rectangle(
                        (bar - 0.35, 1.0), 0.7, 0.0, linewidth=0.6, edgecolor="white", facecolor=_FACTOR_COLORS[factor]
                    )
                )
        self.segment_labels = FastTextGroup(
            ax, ha="center", va="center", size=7.5, color="white", weight="bold", zorder=5
        )
        self.devices_total = FastText(ax, (0, 1.0), "", ha="center", va="bottom", size=8.5, offset=(0, 2))
        self.examples_total = FastText(ax, (1, 1.0), "", ha="center", va="bottom", size=8.5, offset=(0, 2))
        self.tokens_note = FastText(
            ax, (0.4, -0.2), "", transform=ax.transAxes, ha="center", va="top", size=8, color="#444444"
        )

    def update(self, result) -> None:
        """Draw the plan and the counts in ``result`` (see the class docstring for its keys)."""
        self._update_grid(result)
        self._update_bars(result)

    def _update_grid(self, r) -> None:
        d, t, p = r["data_parallel"], r["tensor_parallel"], r["pipeline_parallel"]
        per_replica, examples = r["devices_per_replica"], r["examples_per_replica_per_step"]
        rows, columns = min(d, self.shown_replicas), min(per_replica, self.shown_devices)
        faces = []
        for row in range(self.shown_replicas):
            shades = _REPLICA_SHADES[row % len(_REPLICA_SHADES)]
            for column in range(self.shown_devices):
                # Columns run stage by stage: stage column // t holds tensor ranks 0 … t − 1.
                visible = row < rows and column < columns
                faces.append(shades[(column // t) % 2] if visible else _TRANSPARENT)
        self.cells.set_facecolor(faces)

        right = columns + 0.25
        xs, ys = [], []
        for row in range(rows):
            xs += [right, right + 0.3, right + 0.3, right, np.nan]
            ys += [row + 0.1, row + 0.1, row + 0.9, row + 0.9, np.nan]
        self.brackets.set_data(xs, ys)
        self.row_labels.set_texts(((-0.3, row + 0.5), f"replica {row}") for row in range(rows))
        self.example_labels.set_texts(
            ((right + 0.55, row + 0.5), f"{row * examples + 1}–{(row + 1) * examples}") for row in range(rows)
        )
        # One label per pipeline stage, centred over its t columns (when there is more than one stage).
        self.stage_labels.set_texts(
            ((column + min(t, columns - column) / 2, -0.15), f"s{column // t}")
            for column in range(0, columns, t)
            if p > 1
        )

        self.grid_title.set_text(
            f"{count_of(r['devices'], 'device')} = {count_of(d, 'replica')} × {count_of(per_replica, 'device')} each"
        )
        self.examples_header.set_position((right + 0.55, -0.15))
        self.grid_subtitle.set_text(
            f"a row is one data-parallel replica: t × p = {t} × {p} devices, the same examples"
            if per_replica > 1
            else "a row is one data-parallel replica, here one device (t = p = 1)"
        )
        notes = []
        if d > rows:
            notes.append(
                f"showing the first {rows} of {d} replicas; all {d} together: "
                f"{units.format_count(r['global_batch'])} examples"
            )
        if per_replica > columns:
            notes.append(f"showing {columns} of the {per_replica} devices of each replica (t × p = {t} × {p})")
        if p > 1 and not notes:
            notes.append("shades alternate by pipeline stage (s0, s1, …)")
        for note, text in zip(self.grid_notes, notes + ["", ""], strict=False):
            note.set_text(text)

    def _update_bars(self, r) -> None:
        factors = {
            (0, "d"): r["data_parallel"],
            (0, "t"): r["tensor_parallel"],
            (0, "p"): r["pipeline_parallel"],
            (1, "b"): r["micro_batch"],
            (1, "acc"): r["grad_accum_steps"],
            (1, "d"): r["data_parallel"],
        }
        names = {"d": "d", "t": "t", "p": "p", "b": "b", "acc": "N_acc"}
        bottoms, labels = {0: 1.0, 1: 1.0}, []
        for (bar, factor), value in factors.items():
            bottom = bottoms[bar]
            top = bottom * value
            self.segments[bar, factor].set_y(bottom)
            self.segments[bar, factor].set_height(top - bottom)
            if math.log10(value) >= 0.45:  # room for a line of text in the segment
                labels.append(((bar, math.sqrt(bottom * top)), f"{names[factor]} = {value}"))
            bottoms[bar] = top
        self.segment_labels.set_texts(labels)
        self.devices_total.set_position((0, r["devices"]))
        self.devices_total.set_text(units.format_count(r["devices"]))
        self.examples_total.set_position((1, r["global_batch"]))
        self.examples_total.set_text(units.format_count(r["global_batch"]))
        self.tokens_note.set_text(
            f"× s = {r['seq_len']} tokens: {units.format_count(r['tokens_per_step'])} tokens per step"
        )
