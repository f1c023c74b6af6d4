"""Figures for lesson 04 (budget the bytes): where one step's time goes, and the landscape of a plan search.

Every number drawn comes from ``course_lib.budget``; this module only draws.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from matplotlib.ticker import LogLocator, NullFormatter

from .. import budget, units
from .style import AXIS_COLORS, COLORS, axes_or_new, bytes_formatter, label_units, seconds_formatter

__all__ = ["plot_step_timeline", "plot_plan_search", "CONSTRAINT_COLORS", "CRITICAL_PATH_SEGMENTS", "seconds_formatter"]

# One fixed colour per binding constraint (budget.BINDING_CONSTRAINTS), so every search figure reads the same.
CONSTRAINT_COLORS = {
    "compute": COLORS["compute"],
    "exposed communication": COLORS["exposed"],
    "bubble": AXIS_COLORS["pipeline"],
    "memory": "#9A9A9A",
    "batch divisibility": COLORS["latency"],
}
# Critical-path segments, left to right: (legend text, colour, function of the StepTime giving seconds).
CRITICAL_PATH_SEGMENTS = (
    ("compute", COLORS["compute"], lambda step: step.compute_s),
    ("tensor parallel (exposed)", AXIS_COLORS["tensor"], lambda step: step.exposed_s["tensor"]),
    ("pipeline parallel (exposed)", AXIS_COLORS["pipeline"], lambda step: step.exposed_s["pipeline"]),
    ("bubble", COLORS["bubble"], lambda step: step.bubble_s),
    ("data parallel (exposed)", AXIS_COLORS["data"], lambda step: step.exposed_s["data"]),
)
_AXIS_NAMES = {"tensor": "tensor parallel", "pipeline": "pipeline parallel", "data": "data parallel"}


def _checked_step(step):
    if not isinstance(step, budget.StepTime):
        raise ValueError(f"step must be a budget.StepTime (from budget.step_time), got {step!r}")
    values = [step.compute_s, step.bubble_s, step.total_s, *step.exposed_s.values(), *step.overlapped_s.values()]
    if any(np.ndim(value) for value in values):
        raise ValueError(
            "step must hold one plan's times (scalar fields); it holds arrays: call budget.step_time on a single plan"
        )
    return step


def _segment_text(ax, x0, width, y, text, text_color, axis_span):
    """Write ``text`` inside a bar segment when it fits (about 0.9 % of the axis per character)."""
    if width >= 0.0095 * axis_span * (len(text) + 1):
        ax.text(x0 + width / 2, y, text, ha="center", va="center", fontsize=8, color=text_color, zorder=4)


def plot_step_timeline(step, ax=None, title=None):
    """Two bars for one training step: the critical path, and the communication hidden under compute.

    Top bar, left to right: compute, exposed tensor-parallel, exposed pipeline, bubble, exposed data-parallel time;
    the segments add up to ``step.total_s``. Bottom bar: communication that overlaps compute
    (``step.overlapped_s``), drawn so that it ends where the compute segment ends, under the compute that hides it.
    Zero-time segments are left out. Each segment is one bar patch with gid ``"critical:<legend text>"`` or
    ``"hidden:<axis>"``. The x axis is in seconds, its ticks labelled in one unit (``seconds_formatter``: like
    ``format_time`` but never switching to minutes along an axis).

    >>> import matplotlib.pyplot as plt
    >>> from course_lib import budget
    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import GPT2_1_5B, ParallelPlan
    >>> step = budget.step_time(GPT2_1_5B, ParallelPlan(data_parallel=8, micro_batch=4, grad_accum_steps=4), DGX_H100,
    ...                        calibration=None)
    >>> ax = plot_step_timeline(step)
    >>> [p.get_gid() for p in ax.patches]
    ['critical:compute', 'hidden:data']
    >>> plt.close("all")
    """
    step = _checked_step(step)
    if title is not None and not isinstance(title, str):
        raise ValueError(f"title must be a string or None, got {title!r}")
    ax = axes_or_new(ax, figsize=(8, 3.2))
    total = float(step.total_s)
    span = total * 1.22  # room for the total on the right
    y_critical, y_hidden, height = 1.0, 0.0, 0.6
    handles = []
    left = 0.0
    for name, color, seconds in CRITICAL_PATH_SEGMENTS:
        width = float(seconds(step))
        if width <= 0:
            continue
        bar = ax.barh(
            y_critical, width, height, left=left, color=color, edgecolor="white", linewidth=0.8, label=name, zorder=3
        )
        bar.patches[0].set_gid(f"critical:{name}")
        handles.append(bar)
        _segment_text(
            ax,
            left,
            width,
            y_critical,
            units.format_time(width),
            "black" if color == COLORS["bubble"] else "white",
            span,
        )
        left += width
    ax.text(
        left + 0.01 * span,
        y_critical,
        f"total {units.format_time(total)}",
        ha="left",
        va="center",
        fontsize=9,
        fontweight="bold",
    )

    compute_end = float(step.compute_s)
    hidden = [(axis, float(seconds)) for axis, seconds in step.overlapped_s.items() if seconds > 0]
    hidden_total = sum(seconds for _, seconds in hidden)
    right = compute_end
    for axis, seconds in hidden:
        name = f"{_AXIS_NAMES.get(axis, axis)} (hidden)"
        bar = ax.barh(
            y_hidden,
            seconds,
            height,
            left=right - seconds,
            color=AXIS_COLORS.get(axis, "#777777"),
            alpha=0.55,
            hatch="//",
            edgecolor="white",
            linewidth=0.8,
            label=name,
            zorder=3,
        )
        bar.patches[0].set_gid(f"hidden:{axis}")
        handles.append(bar)
        _segment_text(ax, right - seconds, seconds, y_hidden, units.format_time(seconds), "black", span)
        right -= seconds
    if hidden:
        ax.text(
            compute_end + 0.01 * span,
            y_hidden,
            f"hidden {units.format_time(hidden_total)}",
            ha="left",
            va="center",
            fontsize=9,
        )
    else:
        ax.text(
            0.01 * span,
            y_hidden,
            "nothing overlaps compute",
            ha="left",
            va="center",
            fontsize=9,
            style="italic",
            color="#555555",
        )
    ax.axvline(compute_end, color="#555555", linestyle=":", linewidth=1, zorder=2)

    ax.set_xlim(0, span)
    ax.set_ylim(-0.6, 1.6)
    ax.set_yticks([y_critical, y_hidden], ["critical path", "hidden under\ncompute"])
    ax.xaxis.set_major_formatter(seconds_formatter)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.tick_params(axis="y", length=0)
    if title is None:
        title = f"One step: {units.format_time(total)}; binding constraint: {step.binding_constraint}"
    label_units(ax, "time (s)", "", title)
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=3, frameon=False, fontsize=9)
    return ax


def _plan_text(row):
    text = (
        f"d={row['data_parallel']} t={row['tensor_parallel']} p={row['pipeline_parallel']} "
        f"ZeRO-{row['zero_stage']} b={row['micro_batch']}"
    )
    if row["virtual_stages"] > 1:
        text += f" v={row['virtual_stages']}"
    extras = [f"{row['recompute']} recompute"] if row["recompute"] != "none" else []
    extras += ["SP"] if row["sequence_parallel"] else []
    return text + ("\n" + ", ".join(extras) if extras else "") + f"\n{units.format_time(row['step_time_s'])}"


def _checked_rows(highlight_rows, rows):
    if isinstance(highlight_rows, (str, bytes)) or not hasattr(highlight_rows, "__iter__"):
        raise ValueError(f"highlight_rows must be a sequence of row numbers, got {highlight_rows!r}")
    checked = []
    for row in highlight_rows:
        if isinstance(row, (bool, np.bool_)) or not isinstance(row, Integral) or not 0 <= row < rows:
            raise ValueError(f"highlight_rows must hold row numbers in 0..{rows - 1}, got {row!r}")
        checked.append(int(row))
    return checked


def plot_plan_search(search, ax=None, highlight_rows=(0,)):
    """Every plan of a search: memory per device (x) against step time (y, log), coloured by binding constraint.

    Rows that do not fit (constraint "memory") lie right of the "HBM capacity" line at ``search.capacity_bytes``.
    The legend counts the plans per constraint. ``highlight_rows`` (row 0 is the fastest plan that fits) are
    starred and annotated with their plan. Both axes are logarithmic (memory spans orders of magnitude between
    replicated and sharded plans). One scatter per constraint, with gid ``"plans:<constraint>"``.

    >>> import matplotlib.pyplot as plt
    >>> from course_lib import budget
    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import GPT2_1_5B
    >>> ax = plot_plan_search(budget.search_plans(GPT2_1_5B, DGX_H100, global_batch=512, calibration=None))
    >>> ax.get_yscale(), ax.get_legend().get_texts()[0].get_text()
    ('log', 'compute (409)')
    >>> plt.close("all")
    """
    if not isinstance(search, budget.PlanSearch):
        raise ValueError(f"search must be a budget.PlanSearch (from budget.search_plans), got {search!r}")
    rows = len(search)
    highlight = _checked_rows(highlight_rows, rows)
    ax = axes_or_new(ax)
    columns = search.columns
    constraints = np.asarray(columns["binding_constraint"]).astype(str) if rows else np.array([], dtype=str)
    memory = np.asarray(columns["memory_bytes"], dtype=float)
    time = np.asarray(columns["step_time_s"], dtype=float)
    present = [c for c in CONSTRAINT_COLORS if np.any(constraints == c)]
    present += sorted(set(constraints) - set(present))
    handles = {}
    # The most common constraint at the back, the rarest on top, so that a few plans are never hidden by many.
    for constraint in sorted(present, key=lambda c: -int(np.sum(constraints == c))):
        chosen = constraints == constraint
        points = ax.scatter(
            memory[chosen],
            time[chosen],
            s=10,
            alpha=0.3 if constraint == "memory" else 0.7,  # plans that do not fit recede behind those that do
            linewidths=0,
            color=CONSTRAINT_COLORS.get(constraint, "#333333"),
            label=f"{constraint} ({int(chosen.sum())})",
            zorder=2,
        )
        points.set_gid(f"plans:{constraint}")
        handles[constraint] = points
    capacity = float(search.capacity_bytes)
    line = ax.axvline(capacity, color=COLORS["capacity"], linestyle="--", linewidth=1.5, zorder=3)
    line.set_gid("capacity")
    ax.set_xscale("log")
    low, high = ax.get_xlim()
    right_side = rows and np.log(capacity / low) / np.log(high / low) > 0.6  # then write the label on its left
    ax.text(
        capacity,
        0.99,
        f" HBM capacity {units.format_bytes(capacity)} ",
        transform=ax.get_xaxis_transform(),
        ha="right" if right_side else "left",
        va="top",
        fontsize=9,
        color=COLORS["capacity"],
        zorder=4,
        gid="capacity-label",
        bbox=dict(facecolor="white", edgecolor="none", alpha=0.85, pad=1),
    )
    if highlight:
        ax.scatter(
            memory[highlight],
            time[highlight],
            marker="*",
            s=220,
            color="#FFD92F",
            edgecolors="black",
            linewidths=0.9,
            zorder=5,
            gid="highlight",
            label="_highlight",
        )
        for k, row in enumerate(highlight):
            ax.annotate(
                _plan_text(search.row(row)),
                (memory[row], time[row]),
                xytext=(40, 12 + 50 * k),
                textcoords="offset points",
                fontsize=8,
                ha="left",
                va="bottom",
                zorder=6,
                bbox=dict(boxstyle="round,pad=0.3", facecolor="white", edgecolor="#777777", alpha=0.9),
                arrowprops=dict(arrowstyle="-", color="#555555", linewidth=0.8),
                gid="highlight-label",
            )
    if not rows:
        ax.text(0.5, 0.5, "no plans to show", transform=ax.transAxes, ha="center", va="center", fontsize=10)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(bytes_formatter)
    ax.yaxis.set_major_formatter(seconds_formatter)
    # Memory spans decades: label decades only on x (1-2-5 steps crowd at notebook width); time gets more steps.
    for axis, subs in ((ax.xaxis, (1.0,)), (ax.yaxis, (1.0, 1.5, 2.0, 3.0, 5.0, 7.0))):
        axis.set_major_locator(LogLocator(base=10, subs=subs))
        axis.set_minor_formatter(NullFormatter())
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    label_units(
        ax,
        "memory per device (bytes)",
        "step time (s)",
        f"{rows} plans: {int(np.sum(search.feasible)) if rows else 0} fit in memory",
    )
    if present:
        ax.legend(
            handles=[handles[c] for c in present],
            title="binding constraint",
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            frameon=False,
            fontsize=9,
            title_fontsize=9,
            markerscale=1.5,
        )
    return ax
