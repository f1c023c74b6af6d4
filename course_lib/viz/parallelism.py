"""Figures for lesson 03 (split the work): pipeline timelines, per-device memory, and the four splits of one model.

Every number drawn comes from ``course_lib.pipeline`` and ``course_lib.parallelism``; this module only draws.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_rgb
from matplotlib.patches import FancyArrowPatch, Patch, Rectangle
from matplotlib.ticker import MaxNLocator

from .. import _validate, parallelism, units
from ..pipeline import PipelineTimeline
from ._style import AXIS_COLORS, COLORS, axes_or_new, bytes_formatter, label_units

__all__ = [
    "plot_pipeline_schedule",
    "plot_memory_breakdown",
    "plot_parallelism_splits",
    "SCHEDULE_NAMES",
    "MEMORY_COMPONENTS",
]

SCHEDULE_NAMES = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": "Interleaved 1F1B"}
# MemoryBreakdown field -> legend text, bottom to top of each stacked bar.
MEMORY_COMPONENTS = {
    "parameters": "parameters",
    "gradients": "gradients",
    "optimizer_state": "optimizer state",
    "activations": "activations",
}
_DEVICE_FILL = ("#DCE8F5", "#FBE3D0")  # background of GPU 0 and GPU 1 in the split diagram
_DEVICE_EDGE = ("#4C72B0", "#DD8452")


def _lighter(color, share):
    """``color`` mixed with white: share 0 keeps it, 1 gives white."""
    r, g, b = to_rgb(color)
    return (r + (1 - r) * share, g + (1 - g) * share, b + (1 - b) * share)


def _chunk_color(kind, chunk, chunks):
    return _lighter(COLORS[kind], 0.55 * chunk / (chunks - 1) if chunks > 1 else 0.0)


def _text_color(rgb):
    r, g, b = to_rgb(rgb)
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.6 else "white"


def _box(x0, x1, y, height):
    return [(x0, y - height / 2), (x1, y - height / 2), (x1, y + height / 2), (x0, y + height / 2)]


def plot_pipeline_schedule(timeline, ax=None):
    """Draw a pipeline timeline as a Gantt chart: one row per stage (stage 0 on top), one box per op.

    Forward boxes use ``COLORS["forward"]``, backward boxes ``COLORS["backward"]``; with the interleaved schedule
    later model chunks get lighter shades. Boxes are labelled with the micro-batch number counted from 1, as in
    Narayanan et al. 2021's Figures 3 and 4, when the box is wide enough. Grey behind the boxes is idle time: the
    bubble. Convention: the x axis is in units of t_f (``timeline.forward_time_s``), so a full-stage forward is 1
    wide whatever the real duration; the axis label gives t_f in seconds when it is not 1 s. Boxes are one
    ``PolyCollection`` per (kind, chunk) with gid ``"pipeline-<kind>-chunk<c>"``; the idle background has gid
    ``"pipeline-idle"``.

    >>> from course_lib.pipeline import pipeline_schedule
    >>> ax = plot_pipeline_schedule(pipeline_schedule(4, 8, "1f1b"))
    >>> ax.get_title()
    '1F1B, p = 4, m = 8: bubble 37.5 %'
    >>> plt.close("all")
    """
    if not isinstance(timeline, PipelineTimeline):
        raise ValueError(f"timeline must be a PipelineTimeline (from pipeline.pipeline_schedule), got {timeline!r}")
    ax = axes_or_new(ax)
    p, v, unit = timeline.stages, timeline.virtual_stages, timeline.forward_time_s
    end = timeline.total_s / unit
    height = 0.78
    idle = PolyCollection(
        [_box(0.0, end, s, height) for s in range(p)],
        facecolors=COLORS["bubble"],
        edgecolors="none",
        alpha=0.6,
        zorder=1,
    )
    idle.set_gid("pipeline-idle")
    ax.add_collection(idle)

    # Labels fit when a chunk-forward box is wider than its text (estimated from the axes' size in points).
    fig = ax.figure
    width_pt = ax.get_position().width * fig.get_figwidth() * 72
    height_pt = ax.get_position().height * fig.get_figheight() * 72
    chunk_width_pt = width_pt * (1.0 / v) / max(end, 1e-12)
    digits = len(str(timeline.microbatches))
    fontsize = min(9.0, 0.8 * height_pt / max(p, 1) * height, chunk_width_pt / (0.62 * digits + 0.5))
    show_labels = fontsize >= 6.0
    edge = 0.6 if chunk_width_pt >= 4 else 0.3 if chunk_width_pt >= 1.5 else 0.0  # white gaps between boxes

    handles = []
    for kind in ("forward", "backward"):
        for chunk in range(v):
            ops = [op for op in timeline.ops if op.kind == kind and op.chunk == chunk]
            color = _chunk_color(kind, chunk, v)
            boxes = PolyCollection(
                [_box(op.start_s / unit, op.end_s / unit, op.stage, height) for op in ops],
                facecolors=[color],
                edgecolors="white",
                linewidths=edge,
                zorder=2,
            )
            boxes.set_gid(f"pipeline-{kind}-chunk{chunk}")
            ax.add_collection(boxes)
            name = kind if v == 1 else f"{kind}, chunk {chunk + 1}"
            handles.append(Patch(facecolor=color, edgecolor="white", label=name))
            if show_labels:
                for op in ops:
                    ax.text(
                        (op.start_s + op.end_s) / 2 / unit,
                        op.stage,
                        str(op.microbatch + 1),
                        ha="center",
                        va="center",
                        fontsize=fontsize,
                        color=_text_color(color),
                        zorder=3,
                    )
    idle_handle = Patch(facecolor=COLORS["bubble"], alpha=0.6, label="idle (bubble)")
    if v == 1:
        handles, columns = handles + [idle_handle], 3
    else:  # two rows, forward over backward: the legend fills column by column
        blank = Patch(facecolor="none", edgecolor="none", label=" ")
        handles = [h for pair in zip(handles[:v], handles[v:], strict=True) for h in pair] + [idle_handle, blank]
        columns = v + 1

    ax.set_xlim(0, end * 1.005)
    ax.set_ylim(p - 0.5, -0.5)  # stage 0 on top
    ticks = range(p) if p <= 16 else MaxNLocator(integer=True, nbins=8).tick_values(0, p - 1)
    ticks = [int(t) for t in ticks if 0 <= t < p]
    ax.set_yticks(ticks, [f"stage {t}" for t in ticks])
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=12))
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    xlabel = "time (units of $t_f$)" if unit == 1.0 else f"time (units of $t_f$ = {units.format_time(unit)})"
    title = f"{SCHEDULE_NAMES[timeline.schedule]}, p = {p}"
    title += f", v = {v}" if timeline.schedule == "interleaved" else ""
    title += f", m = {timeline.microbatches}: bubble {units.format_percent(timeline.bubble_fraction)}"
    label_units(ax, xlabel, "pipeline stage (one per device)", title)
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.14),
        ncol=columns,
        frameon=False,
        fontsize=9 if v <= 3 else 8,
        columnspacing=1.2,
        handlelength=1.5,
    )
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


def plot_memory_breakdown(breakdowns, capacity_bytes=None, ax=None):
    """Stacked bars of per-device memory: parameters, gradients, optimizer state and activations, one bar per plan.

    ``breakdowns`` maps a label (the bar's tick) to a ``parallelism.MemoryBreakdown``. Each bar's total is printed
    above it. With ``capacity_bytes`` a dashed line marks the device's memory; bars above it get a red dashed
    outline and "does not fit". When a bar is more than 2.5× the capacity the y axis stops short of it (its
    rectangles keep their true heights) and an arrow label gives its total, so the bars that nearly fit stay
    readable.

    >>> mem = parallelism.memory_breakdown(parallelism.GPT3_175B, parallelism.ParallelPlan(tensor_parallel=8,
    ...                                    pipeline_parallel=8, data_parallel=8, zero_stage=1, recompute="full"))
    >>> ax = plot_memory_breakdown({"t=8 p=8 d=8": mem}, capacity_bytes=80e9)
    >>> [c.get_label() for c in ax.containers]
    ['parameters', 'gradients', 'optimizer state', 'activations']
    >>> plt.close("all")
    """
    breakdowns = _checked_breakdowns(breakdowns)
    capacity = None if capacity_bytes is None else _validate.positive("capacity_bytes", capacity_bytes)
    ax = axes_or_new(ax)
    labels = [str(label) for label in breakdowns]
    x = np.arange(len(labels), dtype=float)
    totals = np.array([b.total for b in breakdowns.values()], dtype=float)
    bottom = np.zeros(len(labels))
    width = 0.6
    for field, name in MEMORY_COMPONENTS.items():
        heights = np.array([getattr(b, field) for b in breakdowns.values()], dtype=float)
        bars = ax.bar(
            x,
            heights,
            width,
            bottom=bottom,
            color=COLORS[field],
            label=name,
            edgecolor="white",
            linewidth=0.6,
            zorder=2,
        )
        for bar in bars:
            bar.set_gid(f"memory-{field}")
        bottom = bottom + heights

    peak = float(totals.max()) if totals.max() > 0 else 1.0
    if capacity is not None:
        shown = [t for t in totals if t <= 2.5 * capacity]
        top = 1.2 * max([capacity] + shown)
        line = ax.axhline(
            capacity,
            color=COLORS["capacity"],
            linestyle="--",
            linewidth=1.5,
            zorder=3,
            label=f"capacity {units.format_bytes(capacity)}",
        )
        line.set_gid("capacity")
        ax.text(
            1.01,
            capacity,
            f"capacity\n{units.format_bytes(capacity)}",
            transform=ax.get_yaxis_transform(),
            va="center",
            ha="left",
            fontsize=9,
            color=COLORS["capacity"],
            gid="capacity-label",
        )
    else:
        top = 1.18 * peak
    for xi, total in zip(x, totals, strict=True):
        over = capacity is not None and total > capacity
        if over:
            outline = Rectangle(
                (xi - width / 2, 0),
                width,
                total,
                fill=False,
                edgecolor=COLORS["exposed"],
                linestyle="--",
                linewidth=2,
                zorder=4,
            )
            outline.set_gid("over-capacity")
            ax.add_patch(outline)
        text = units.format_bytes(total) + ("\ndoes not fit" if over else "")
        if total > top:  # off the chart
            ax.text(
                xi,
                0.98 * top,
                "↑ " + text,
                ha="center",
                va="top",
                fontsize=9,
                zorder=5,
                color=COLORS["exposed"],
                bbox=dict(facecolor="white", edgecolor="none", alpha=0.85, pad=1.5),
            )
        else:
            ax.text(
                xi,
                total + 0.01 * top,
                text,
                ha="center",
                va="bottom",
                fontsize=9,
                zorder=5,
                color=COLORS["exposed"] if over else "black",
            )
    ax.set_ylim(0, top)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.set_xticks(x, labels)
    ax.yaxis.set_major_formatter(bytes_formatter)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    label_units(ax, "", "memory per device (bytes)")
    ax.tick_params(axis="x", labelsize=9)
    ax.legend(
        handles=list(ax.containers),
        loc="upper center",
        bbox_to_anchor=(0.5, -0.12 if "\n" in "".join(labels) else -0.08),
        ncol=4,
        frameon=False,
        fontsize=9,
    )
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
    ax.text(x + w / 2, y + h + 0.05, name, ha="center", va="bottom", fontsize=7, zorder=4)


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
