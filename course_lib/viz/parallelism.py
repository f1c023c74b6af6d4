"""Figures of lesson 03 (split the work): the four splits of one model on two GPUs, and one transformer layer
under tensor parallelism.

The arrow labels and the collectives counted come from ``parallelism.boundary_tensors`` and
``parallelism.step_transfers``; this module only draws. The lesson's other figures are drawn by the modules of the
labs that show them live: ``pipeline_schedule`` (the pipeline timeline) and ``memory_budget`` (memory per device).
"""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import FancyArrowPatch, Patch, Rectangle

from .. import _check, parallelism
from .style import AXIS_COLORS, COLORS, axes_or_new

__all__ = [
    "plot_parallelism_splits",
    "plot_tensor_parallel_layer",
    "tp_operator_label",
    "TP_OPERATORS",
    "TP_LAYOUT_COLORS",
    "TP_LAYOUT_NAMES",
]

# ---- the four splits of one model -------------------------------------------------------------------------------

_DEVICE_FILL = ("#DCE8F5", "#FBE3D0")  # background of GPU 0 and GPU 1 in the split diagram
_DEVICE_EDGE = ("#4C72B0", "#DD8452")
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

    >>> import matplotlib.pyplot as plt
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

    >>> import matplotlib.pyplot as plt
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
