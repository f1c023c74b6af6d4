"""Figures for lessons 04 and 05 (budget the bytes, search for a plan): where one step's time goes, and the landscape
of a plan search.

Every number drawn comes from ``course_lib.budget``; this module only draws.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from matplotlib.ticker import LogLocator, NullFormatter

from .. import budget, units
from .style import AXIS_COLORS, COLORS, axes_or_new, bytes_formatter, label_units, seconds_formatter

__all__ = [
    "plot_step_timeline",
    "plot_plan_search",
    "plan_text",
    "THIN_SEGMENT_SHARE",
    "CONSTRAINT_COLORS",
    "CONSTRAINT_MARKERS",
    "CRITICAL_PATH_SEGMENTS",
    "seconds_formatter",
]

# One fixed colour and marker per binding constraint (budget.BINDING_CONSTRAINTS), so every search figure reads the
# same: the shapes tell the constraints apart where the colours are hard to (printed in grey, or a colour-blind eye).
CONSTRAINT_COLORS = {
    "compute": COLORS["compute"],
    "exposed communication": COLORS["exposed"],
    "bubble": "#2CA6A4",
    "memory": "#9A9A9A",
    "batch divisibility": COLORS["latency"],
}
CONSTRAINT_MARKERS = {
    "compute": "o",
    "exposed communication": "^",
    "bubble": "s",
    "memory": "o",
    "batch divisibility": "D",
}
# The highlighted plans, in order: a marker each (gold, edged in black), so that plans side by side stay apart.
HIGHLIGHT_MARKERS = (("*", 190), ("D", 60), ("P", 90), ("X", 90))
HIGHLIGHT_COLOR = "#FFD92F"
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


# A segment narrower than this share of the time axis is under about a pixel at notebook width: it is drawn, but
# named in a note under the bars instead of the legend, whose entries must each show something.
THIN_SEGMENT_SHARE = 0.002


def plot_step_timeline(step, ax=None, title=None):
    """Two bars for one training step: the critical path, and the communication hidden under compute.

    Top bar, left to right: compute, exposed tensor-parallel, exposed pipeline, bubble, exposed data-parallel time;
    the segments add up to ``step.total_s``. Bottom bar: communication that overlaps compute
    (``step.overlapped_s``), drawn so that it ends where the compute segment ends, under the compute that hides it.
    Zero-time segments are left out. Each segment is one bar patch with gid ``"critical:<legend text>"`` or
    ``"hidden:<axis>"``. A segment too thin to see (under ``THIN_SEGMENT_SHARE`` of the axis) is named, with its
    time, in a note under the bars (gid ``"thin-segments"``) rather than in the legend. The x axis is in seconds, its
    ticks labelled in one unit (``seconds_formatter``: like ``format_time`` but never switching to minutes along an
    axis).

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
    handles, thin = [], []
    left = 0.0
    for name, color, seconds in CRITICAL_PATH_SEGMENTS:
        width = float(seconds(step))
        if width <= 0:
            continue
        bar = ax.barh(
            y_critical, width, height, left=left, color=color, edgecolor="white", linewidth=0.8, label=name, zorder=3
        )
        bar.patches[0].set_gid(f"critical:{name}")
        _keep_or_note(bar, name, width, span, handles, thin)
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
    _draw_hidden(ax, step, y_hidden, height, span, handles, thin)
    ax.axvline(float(step.compute_s), color="#555555", linestyle=":", linewidth=1, zorder=2)
    if thin:
        ax.text(
            0.0,
            -0.5,
            "too thin to see: " + ", ".join(thin),
            ha="left",
            va="center",
            fontsize=8,
            style="italic",
            color="#555555",
            gid="thin-segments",
        )

    ax.set_xlim(0, span)
    ax.set_ylim(-0.7, 1.6)
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


def _keep_or_note(bar, name, seconds, span, handles, thin):
    """Put a drawn segment in the legend, or in the note of segments too thin to see."""
    if seconds >= THIN_SEGMENT_SHARE * span:
        handles.append(bar)
    else:
        thin.append(f"{name} {units.format_time(seconds)}")


def _draw_hidden(ax, step, y_hidden, height, span, handles, thin):
    """The bottom bar: each axis' hidden communication, ending where the compute ends, and its total."""
    compute_end = float(step.compute_s)
    hidden = [(axis, float(seconds)) for axis, seconds in step.overlapped_s.items() if seconds > 0]
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
        _keep_or_note(bar, name, seconds, span, handles, thin)
        _segment_text(ax, right - seconds, seconds, y_hidden, units.format_time(seconds), "black", span)
        right -= seconds
    if hidden:
        text, style = f"hidden {units.format_time(sum(seconds for _, seconds in hidden))}", "normal"
        x, color = compute_end + 0.01 * span, "black"
    else:
        text, style, x, color = "nothing overlaps compute", "italic", 0.01 * span, "#555555"
    ax.text(x, y_hidden, text, ha="left", va="center", fontsize=9, style=style, color=color)


def plan_text(row) -> str:
    """A plan of a search's row in the course's notation, on one line: sizes, ZeRO stage, micro-batch, then what it
    recomputes and whether it uses sequence parallelism.

    >>> plan_text({"data_parallel": 12, "tensor_parallel": 8, "pipeline_parallel": 32, "zero_stage": 1,
    ...            "micro_batch": 1, "virtual_stages": 4, "recompute": "selective", "sequence_parallel": True})
    'd=12 t=8 p=32 ZeRO-1 b=1 v=4, selective recompute, SP'
    """
    text = (
        f"d={row['data_parallel']} t={row['tensor_parallel']} p={row['pipeline_parallel']} "
        f"ZeRO-{row['zero_stage']} b={row['micro_batch']}"
    )
    if row["virtual_stages"] > 1:
        text += f" v={row['virtual_stages']}"
    extras = [f"{row['recompute']} recompute"] if row["recompute"] != "none" else []
    extras += ["SP"] if row["sequence_parallel"] else []
    return ", ".join([text, *extras])


def _checked_rows(highlight_rows, rows):
    if isinstance(highlight_rows, (str, bytes)) or not hasattr(highlight_rows, "__iter__"):
        raise ValueError(f"highlight_rows must be a sequence of row numbers, got {highlight_rows!r}")
    checked = []
    for row in highlight_rows:
        if isinstance(row, (bool, np.bool_)) or not isinstance(row, Integral) or not 0 <= row < rows:
            raise ValueError(f"highlight_rows must hold row numbers in 0..{rows - 1}, got {row!r}")
        checked.append(int(row))
    if len(checked) > len(HIGHLIGHT_MARKERS):
        raise ValueError(f"highlight_rows must hold at most {len(HIGHLIGHT_MARKERS)} rows, got {len(checked)}")
    return checked


def _checked_labels(highlight_labels, rows):
    if highlight_labels is None:
        return [f"row {row}" for row in rows]
    if isinstance(highlight_labels, str) or not hasattr(highlight_labels, "__iter__"):
        raise ValueError(
            f"highlight_labels must be a sequence of strings, one per highlighted row, got {highlight_labels!r}"
        )
    labels = list(highlight_labels)
    if len(labels) != len(rows) or not all(isinstance(label, str) and label for label in labels):
        raise ValueError(
            f"highlight_labels must hold one non-empty string per highlighted row ({len(rows)}), "
            f"got {highlight_labels!r}"
        )
    return labels


def _draw_plans(ax, constraints, memory, time):
    """One scatter per binding constraint, the most common at the back; {constraint: scatter} in legend order."""
    present = [c for c in CONSTRAINT_COLORS if np.any(constraints == c)]
    present += sorted(set(constraints) - set(present))
    handles = {}
    # The most common constraint at the back, the rarest on top, so that a few plans are never hidden by many.
    for constraint in sorted(present, key=lambda c: -int(np.sum(constraints == c))):
        chosen = constraints == constraint
        points = ax.scatter(
            memory[chosen],
            time[chosen],
            s=12,
            marker=CONSTRAINT_MARKERS.get(constraint, "o"),
            alpha=0.3 if constraint == "memory" else 0.75,  # plans that do not fit recede behind those that do
            linewidths=0,
            color=CONSTRAINT_COLORS.get(constraint, "#333333"),
            label=f"{constraint} ({int(chosen.sum())})",
            zorder=2,
        )
        points.set_gid(f"plans:{constraint}")
        handles[constraint] = points
    return {constraint: handles[constraint] for constraint in present}


def _draw_capacity(ax, capacity, rows):
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


def plot_plan_search(search, ax=None, highlight_rows=(0,), highlight_labels=None):
    """Every plan of a search: memory per device (x) against step time (y, log), by binding constraint.

    Rows that do not fit (constraint "memory") lie right of the "HBM capacity" line at ``search.capacity_bytes``.
    Each constraint has its colour and marker (``CONSTRAINT_COLORS``, ``CONSTRAINT_MARKERS``); the legend on the
    right counts the plans per constraint. ``highlight_rows`` (row 0 is the fastest plan that fits; at most four) are
    marked each with its own gold marker (``HIGHLIGHT_MARKERS``) and named in a second legend below the axes: its
    label (``highlight_labels``, one per row; default "row N"), its step time and its plan (``plan_text``), so that
    no note covers the points. Both axes are logarithmic (memory spans orders of magnitude between replicated and
    sharded plans). One scatter per constraint, with gid ``"plans:<constraint>"``, and one per highlighted row,
    ``"highlight:<k>"``.

    >>> import matplotlib.pyplot as plt
    >>> from course_lib import budget
    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import GPT2_1_5B
    >>> ax = plot_plan_search(budget.search_plans(GPT2_1_5B, DGX_H100, global_batch=512, calibration=None))
    >>> ax.get_yscale(), ax.get_legend().get_texts()[0].get_text(), ax.figure.legends[0].get_texts()[0].get_text()
    ('log', 'compute (409)', 'row 0: 1.36 s\\nd=8 t=1 p=1 ZeRO-3 b=2')
    >>> plt.close("all")
    """
    if not isinstance(search, budget.PlanSearch):
        raise ValueError(f"search must be a budget.PlanSearch (from budget.search_plans), got {search!r}")
    rows = len(search)
    highlight = _checked_rows(highlight_rows, rows)
    labels = _checked_labels(highlight_labels, highlight)
    ax = axes_or_new(ax)
    columns = search.columns
    constraints = np.asarray(columns["binding_constraint"]).astype(str) if rows else np.array([], dtype=str)
    memory = np.asarray(columns["memory_bytes"], dtype=float)
    time = np.asarray(columns["step_time_s"], dtype=float)
    handles = _draw_plans(ax, constraints, memory, time)
    _draw_capacity(ax, float(search.capacity_bytes), rows)
    marked = []
    for k, (row, label) in enumerate(zip(highlight, labels, strict=True)):
        marker, size = HIGHLIGHT_MARKERS[k]
        marked.append(
            ax.scatter(
                memory[row],
                time[row],
                marker=marker,
                s=size,
                color=HIGHLIGHT_COLOR,
                edgecolors="black",
                linewidths=0.9,
                zorder=5 + k,
                gid=f"highlight:{k}",
                label=f"{label}: {units.format_time(time[row])}\n{plan_text(search.row(row))}",
            )
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
    legend_style = dict(frameon=False, fontsize=9, title_fontsize=9)
    if handles:
        ax.legend(
            handles=list(handles.values()),
            title="binding constraint",
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            markerscale=1.5,
            **legend_style,
        )
    if marked:  # below the figure: a figure legend, which the constrained layout makes room for
        ax.figure.legend(handles=marked, loc="outside lower left", labelspacing=0.7, **legend_style)
    return ax
