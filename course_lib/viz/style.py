"""Shared look of the course's figures: axes creation, colours and unit-aware tick labels.

No global state: nothing here touches ``matplotlib.rcParams``; every figure gets its look from these helpers.
"""

from __future__ import annotations

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter

from .. import _check, units

__all__ = [
    "axes_or_new",
    "checked_axes",
    "checked_drawn_ranks",
    "COLORS",
    "AXIS_COLORS",
    "RANK_COLORS",
    "EMPTY_COLOR",
    "FIT_COLOR",
    "MARGIN_STYLE",
    "bytes_formatter",
    "binary_bytes_formatter",
    "time_formatter",
    "rate_formatter",
    "flops_rate_formatter",
    "percent_formatter",
    "seconds_label",
    "seconds_formatter",
    "label_units",
]

# One colour per memory component, per parallel axis and per kind of time, used by every figure.
COLORS = {
    "parameters": "#4C72B0",
    "gradients": "#DD8452",
    "optimizer_state": "#55A868",
    "activations": "#C44E52",
    "logits": "#8172B3",
    "framework": "#937860",
    "compute": "#4C72B0",
    "forward": "#4C72B0",
    "backward": "#DD8452",
    "backward_input": "#DD8452",  # B of a split backward: the backward's critical half, its colour
    "backward_weight": "#55A868",  # W, the weight gradient that zero-bubble schedules move into the bubble
    "bubble": "#CCCCCC",
    "exposed": "#C44E52",
    "overlapped": "#8DC68F",
    "capacity": "#222222",
    "latency": "#DD8452",
    "bandwidth": "#4C72B0",
}
AXIS_COLORS = {"data": "#55A868", "tensor": "#C44E52", "pipeline": "#8172B3", "zero": "#DD8452"}
# One light colour per rank (black text stays readable on each): the ranks of the collectives' pictures, the replicas
# of the global batch lab. A picture with one row or block per rank draws at most this many.
RANK_COLORS = ("#A1C9F4", "#FFB482", "#8DE5A1", "#FF9F9B", "#D0BBFF", "#DEBB9B", "#FAB0E4", "#FFFEA3")
EMPTY_COLOR = "#F0F0F0"  # a chunk of a buffer that holds nothing (yet)
FIT_COLOR = "#2E7D32"  # the verdict of a plan that fits its device
# The memory margin under a device's capacity (a band, and its swatch in a key): hatched in the capacity line's colour.
MARGIN_STYLE = {
    "facecolor": mcolors.to_rgba(COLORS["capacity"], 0.1),
    "edgecolor": mcolors.to_rgba(COLORS["capacity"], 0.5),
    "hatch": "///",
    "linewidth": 0,
}
_MAX_DRAWN_RANKS = len(RANK_COLORS)


def axes_or_new(ax=None, figsize=(8, 4.5)):
    """Return ``ax``, or the axes of a new figure sized for a notebook column."""
    if ax is not None:
        return ax
    _, new_ax = plt.subplots(figsize=figsize, layout="constrained")
    return new_ax


def checked_axes(axes, needed, name="axes"):
    """The first ``needed`` Axes of ``axes`` (any array-like of Axes), flattened; ValueError if too few."""
    flat = list(np.ravel(np.asarray(axes, dtype=object)))
    if len(flat) < needed or not all(isinstance(a, plt.Axes) for a in flat):
        raise ValueError(f"{name} must hold at least {needed} matplotlib Axes, got {axes!r}")
    return flat


def checked_drawn_ranks(ranks, minimum=1):
    """``ranks`` if it is an integer from ``minimum`` to 8: a picture with one row or block (one colour) per rank.

    >>> checked_drawn_ranks(9)
    Traceback (most recent call last):
    ...
    ValueError: ranks must be an integer in 1..8 (one readable row or block per rank), got 9
    """
    p = _check.count("ranks", ranks, minimum=minimum)
    if not isinstance(p, int) or p > _MAX_DRAWN_RANKS:
        raise ValueError(
            f"ranks must be an integer in {minimum}..{_MAX_DRAWN_RANKS} (one readable row or block "
            f"per rank), got {ranks!r}"
        )
    return p


def _formatter(function):
    return FuncFormatter(lambda value, _position: function(value) if value else "0")


bytes_formatter = _formatter(lambda v: units.format_bytes(v, digits=3))
# For axes with ticks at powers of two (log base 2): "4 KiB" where the decimal formatter would print "4.1 kB".
binary_bytes_formatter = _formatter(lambda v: units.format_bytes(v, binary=True, digits=3))
time_formatter = _formatter(lambda v: units.format_time(v, digits=3))
rate_formatter = _formatter(lambda v: units.format_bandwidth(v, digits=3))
flops_rate_formatter = _formatter(lambda v: units.format_flops_rate(v, digits=3))
percent_formatter = _formatter(lambda v: units.format_percent(v, digits=3))


def seconds_label(value, _position=None) -> str:
    """Tick label in seconds: format_time below 100 s, then whole seconds (one unit along an axis, no minutes)."""
    if not value:
        return "0"
    if abs(value) < 100:
        return units.format_time(value)
    return f"{value:,.0f} s" if value == round(value) else f"{value:,.1f} s"


seconds_formatter = FuncFormatter(seconds_label)


def label_units(ax, xlabel: str, ylabel: str, title: str | None = None):
    """Set both axis labels (each naming its unit) and an optional title."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    return ax
