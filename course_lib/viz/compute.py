"""Figures for lesson 01 (count the work): the roofline of real accelerators and where a training step's FLOPs go.

Every number drawn comes from ``course_lib.compute`` and ``course_lib.hardware``; this module only draws.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator

from .. import _check, compute, hardware, units
from .style import COLORS, axes_or_new, flops_rate_formatter, label_units

__all__ = ["plot_roofline", "plot_flops_breakdown"]

DEFAULT_ACCELERATORS = (hardware.A100, hardware.H100, hardware.B200, hardware.TPU_V5E)
_ROOFLINE_COLORS = ("#4C72B0", "#C44E52", "#55A868", "#8172B3", "#DD8452", "#937860", "#DA8BC3", "#8C8C8C")
_POINT_MARKERS = ("D", "s", "^", "v", "P", "X")  # the points on the first roofline, one shape each
_DEFAULT_INTENSITY_RANGE = (1.0, 1e4)  # FLOP/byte: holds every preset's ridge point (153 to 295 in bf16)

_intensity_formatter = FuncFormatter(lambda value, _position: f"{value:g}")
_flops_formatter = FuncFormatter(lambda value, _position: units.format_flops(value) if value else "0")


def _checked_accelerators(accelerators):
    if accelerators is None:
        return DEFAULT_ACCELERATORS
    if isinstance(accelerators, hardware.Accelerator):
        return (accelerators,)
    if isinstance(accelerators, (str, bytes)):
        raise ValueError(f"accelerators must be hardware.Accelerator presets, got {accelerators!r}")
    try:
        chosen = tuple(accelerators)
    except TypeError as error:
        raise ValueError(f"accelerators must be an iterable of hardware.Accelerator, got {accelerators!r}") from error
    if not chosen or not all(isinstance(a, hardware.Accelerator) for a in chosen):
        raise ValueError(f"accelerators must be a non-empty iterable of hardware.Accelerator, got {accelerators!r}")
    return chosen


def _checked_points(points):
    if points is None or isinstance(points, (str, bytes)):
        raise ValueError(f"points must be an iterable of (label, intensity_flops_per_byte) pairs, got {points!r}")
    try:
        pairs = [tuple(pair) for pair in points]
    except TypeError as error:
        raise ValueError(
            f"points must be an iterable of (label, intensity_flops_per_byte) pairs, got {points!r}"
        ) from error
    checked = []
    for pair in pairs:
        if len(pair) != 2 or not isinstance(pair[0], str) or not isinstance(pair[1], Real) or isinstance(pair[1], bool):
            raise ValueError(f"points must hold (label, intensity_flops_per_byte) pairs, got {pair!r}")
        checked.append((pair[0], _check.positive("points intensity_flops_per_byte", pair[1])))
    return checked


def _intensity_text(intensity):
    return f"{intensity:,.0f}" if intensity >= 100 else f"{intensity:.3g}"


def plot_roofline(accelerators=None, dtype="bf16", points=(), ax=None):
    """Draw attainable FLOP/s = min(peak, intensity × HBM bandwidth) against arithmetic intensity, log–log.

    One roofline per accelerator (default: A100, H100, B200, TPU v5e), each computed with
    ``compute.attainable_flops_per_s`` from the preset's dense ``dtype`` peak and HBM bandwidth; its ridge point
    (``compute.ridge_point_flops_per_byte``) is marked with a dot and named in the legend. The first
    accelerator's memory-bound (left of its ridge) and compute-bound (right) regions are shaded. ``points`` is
    an iterable of ``(label, intensity_flops_per_byte)`` pairs (for example GEMM shapes, with intensities from
    ``compute.gemm_flops`` / ``compute.gemm_bytes``) drawn on the first accelerator's roofline. The x range is
    1 to 10⁴ FLOP/byte, widened to hold every point.

    >>> import matplotlib.pyplot as plt
    >>> ax = plot_roofline(points=[("GEMM 4096³", 1365.3)])
    >>> ax.get_xscale(), ax.get_yscale(), len(ax.lines)
    ('log', 'log', 4)
    >>> plt.close("all")
    """
    chosen = _checked_accelerators(accelerators)
    for accelerator in chosen:
        accelerator.peak(dtype)  # ValueError naming dtype if a preset has no such peak
    pairs = _checked_points(points)

    low, high = _DEFAULT_INTENSITY_RANGE
    if pairs:
        low = min(low, min(i for _, i in pairs) / 2)
        high = max(high, max(i for _, i in pairs) * 2)
    ridges = [compute.ridge_point_flops_per_byte(a.peak(dtype), a.hbm_bandwidth_bytes_per_s) for a in chosen]
    low = min(low, min(ridges) / 2)
    high = max(high, max(ridges) * 2)

    ax = axes_or_new(ax)
    base = np.logspace(np.log10(low), np.log10(high), 200)
    for index, (accelerator, ridge) in enumerate(zip(chosen, ridges, strict=True)):
        color = _ROOFLINE_COLORS[index % len(_ROOFLINE_COLORS)]
        peak = accelerator.peak(dtype)
        bandwidth = accelerator.hbm_bandwidth_bytes_per_s
        intensity = np.unique(np.append(base, ridge))  # the exact corner, so the bend is sharp
        attainable = compute.attainable_flops_per_s(intensity, peak, bandwidth)
        ax.plot(
            intensity,
            attainable,
            color=color,
            linewidth=2,
            label=f"{accelerator.name}: ridge {ridge:.0f} FLOP/byte, peak {units.format_flops_rate(peak)}",
            gid=f"roofline:{accelerator.name}",
        )
        ax.scatter(
            [ridge],
            [peak],
            color=color,
            s=36,
            zorder=3,
            edgecolor="white",
            linewidth=0.8,
            gid=f"ridge:{accelerator.name}",
        )

    first, first_ridge = chosen[0], ridges[0]
    ax.axvspan(low, first_ridge, color=COLORS["latency"], alpha=0.08, linewidth=0)
    ax.axvspan(first_ridge, high, color=COLORS["bandwidth"], alpha=0.08, linewidth=0)
    short_name = first.name.split()[0] if first.name.split()[0] not in ("TPU",) else " ".join(first.name.split()[:2])
    ax.text(
        0.015,
        0.97,
        f"memory-bound on {short_name}\n(intensity < {first_ridge:.0f} FLOP/byte)",
        transform=ax.transAxes,
        va="top",
        ha="left",
        fontsize=9,
        color="#8A4B14",
    )
    ax.text(
        0.985,
        0.97,
        f"compute-bound on {short_name}\n(intensity > {first_ridge:.0f} FLOP/byte)",
        transform=ax.transAxes,
        va="top",
        ha="right",
        fontsize=9,
        color="#2B4A7A",
    )

    rates_low = min(a.hbm_bandwidth_bytes_per_s for a in chosen) * low
    rates_high = max(a.peak(dtype) for a in chosen)
    if pairs:
        peak, bandwidth = first.peak(dtype), first.hbm_bandwidth_bytes_per_s
        xs = np.array([i for _, i in pairs])
        ys = np.atleast_1d(compute.attainable_flops_per_s(xs, peak, bandwidth))
        # A marker of its own for each point, named in the legend with its numbers: a note beside each point would
        # lie over the other accelerators' lines (and, for points close together, over each other).
        for index, ((label, intensity), rate) in enumerate(zip(pairs, ys, strict=True)):
            ax.scatter(
                [intensity],
                [rate],
                marker=_POINT_MARKERS[index % len(_POINT_MARKERS)],
                s=46,
                color="#222222",
                edgecolor="white",
                linewidth=0.6,
                zorder=4,
                gid=f"point:{label}",
                label=f"{label}: {_intensity_text(intensity)} FLOP/byte → {units.format_flops_rate(rate)}",
            )

    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(low, high)
    ax.set_ylim(rates_low / 1.5, rates_high * 6)
    ax.xaxis.set_major_formatter(_intensity_formatter)
    ax.yaxis.set_major_formatter(flops_rate_formatter)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8.5, framealpha=0.95)
    label_units(
        ax,
        "arithmetic intensity (FLOP/byte)",
        "attainable rate (FLOP/s)",
        f"Roofline: attainable = min(peak, intensity × HBM bandwidth), dense {dtype}",
    )
    return ax


_PASSES = (
    ("forward", COLORS["forward"]),
    ("backward (2 × forward)", COLORS["backward"]),
    ("recomputation (1 × forward)", "#B8B8B8"),
)

# How a bar names each part of compute.transformer_flops_by_part: its forward FLOPs (per layer; the logits once).
_PART_LABELS = {
    "qkv_projections": "QKV projections (6bsh²)",
    "attention_scores": "attention scores QKᵀ (2bs²h)",
    "attention_over_values": "attention over values (2bs²h)",
    "output_projection": "output projection (2bsh²)",
    "mlp": "MLP h → 4h → h (16bsh²)",
    "logits": "logits (2bshV, never recomputed)",
}


def plot_flops_breakdown(batch, seq_len, layers, hidden, vocab, recompute=True, ax=None):
    """Horizontal stacked bars: the FLOPs of one training iteration, by part of the model and by pass.

    Parts as in Narayanan et al. 2021's appendix (each × ``layers``): QKV projections 6bsh², attention scores
    2bs²h, attention over values 2bs²h, output projection 2bsh², MLP 16bsh²; and the logits 2bshV. Each bar is
    split into the forward pass, the backward pass (2 × forward) and, with ``recompute``, the recomputed
    forward (``True``/``"full"``: every layer part; ``"selective"``: only the two s × s products; ``False``/
    ``"none"``: nothing). The bars add up exactly to ``compute.transformer_flops_per_iteration`` with the same
    arguments (Eq. (3) of the paper for full recomputation); each bar is annotated with its FLOPs and share.

    >>> import matplotlib.pyplot as plt
    >>> from course_lib import compute, units
    >>> ax = plot_flops_breakdown(1536, 2048, 96, 12288, 51200)   # GPT-3 175B, batch 1536
    >>> bars = sum(bar.get_width() for bar in ax.patches)
    >>> total = compute.transformer_flops_per_iteration(1536, 2048, 96, 12288, 51200)
    >>> units.format_flops(bars), units.format_flops(total), len(ax.patches)   # 5 layer parts × 3 passes + logits × 2
    ('4.51 EFLOP', '4.51 EFLOP', 17)
    >>> plt.close("all")
    """
    total = compute.transformer_flops_per_iteration(batch, seq_len, layers, hidden, vocab, recompute)  # validates
    parts = compute.transformer_flops_by_part(batch, seq_len, layers, hidden, vocab, recompute)
    recompute = compute.recompute_option(recompute)
    b, s, l, h, v = (int(size) for size in (batch, seq_len, layers, hidden, vocab))  # whole numbers, checked above

    ax = axes_or_new(ax)
    y = np.arange(len(parts))
    used_passes = set()
    for row, part in zip(y, parts, strict=True):
        segments = (part.forward_flops, part.backward_flops, part.recompute_flops)
        left = 0
        for (pass_name, color), width in zip(_PASSES, segments, strict=True):
            if width == 0:
                continue
            ax.barh(
                row,
                width,
                left=left,
                color=color,
                height=0.65,
                edgecolor="white",
                linewidth=0.5,
                gid=f"{_PART_LABELS[part.part]}|{pass_name}",
            )
            used_passes.add(pass_name)
            left += width
        ax.text(
            left,
            row,
            f"  {units.format_flops(left)} ({units.format_percent(left / total)})",
            va="center",
            ha="left",
            fontsize=9,
        )

    ax.set_yticks(y, [_PART_LABELS[part.part] for part in parts])
    ax.invert_yaxis()
    ax.set_xlim(0, max(part.total_flops for part in parts) * 1.35)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5))
    ax.xaxis.set_major_formatter(_flops_formatter)
    ax.legend(
        handles=[Patch(color=c, label=n) for n, c in _PASSES if n in used_passes],
        loc="upper right",
        fontsize=9,
        framealpha=0.95,
    )
    recompute_text = {
        "full": "full recomputation (Eq. 3)",
        "selective": "selective recomputation",
        "none": "no recomputation",
    }[recompute]
    label_units(
        ax,
        "FLOP per training iteration",
        "",
        f"One training iteration: {units.format_flops(total)}, {recompute_text}\n"
        f"global batch {b}, s = {s}, l = {l}, h = {h}, V = {v}",
    )
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    return ax
