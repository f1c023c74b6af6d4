"""Figures of memory per device (lessons 01 and 03, lab 3): stacked bars of each plan's memory against a device's
capacity, and the memory lab's two panels.

Every number drawn comes from ``parallelism.memory_breakdown``; this module only draws. ``MemoryBarsFigure`` and
``MemoryBudgetFigure`` are live figures (see ``fast.LiveFigure``): the memory lab updates its ``MemoryBudgetFigure``
on every move of its controls, and the lessons' ``plot_memory_breakdown`` builds a ``MemoryBarsFigure`` and updates
it once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import matplotlib.transforms as mtransforms
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.markers import TICKLEFT
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator, NullLocator

from .. import _check, parallelism, units
from .fast import CachedText, LiveFigure
from .figure_check import NOT_APPLICABLE, TICK_GID
from .style import COLORS, EMPTY_COLOR, FIT_COLOR, MARGIN_STYLE, axes_or_new, bytes_formatter

__all__ = [
    "plot_memory_breakdown",
    "MemoryBarsFigure",
    "MemoryBudgetFigure",
    "MEMORY_COMPONENTS",
    "MODEL_MEMORY_COMPONENTS",
    "memory_components_of",
]

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
    model's four (``MODEL_MEMORY_COMPONENTS``) and any other that is not 0 in some breakdown; none without a
    breakdown (every plan not run: FSDP2 alone runs no pipeline).

    >>> from course_lib import parallelism
    >>> calibrated = parallelism.MemoryBreakdown(1.0, 1.0, 1.0, 1.0, logits=2.0)
    >>> memory_components_of([calibrated]), memory_components_of([])
    (('parameters', 'gradients', 'optimizer_state', 'activations', 'logits'), ())
    """
    breakdowns = list(breakdowns)
    return tuple(
        field
        for field in MEMORY_COMPONENTS
        if (field in MODEL_MEMORY_COMPONENTS and breakdowns) or any(float(getattr(b, field)) != 0 for b in breakdowns)
    )


_BAR_WIDTH = 0.6
_EMPTY_SLOT_SHARE = 0.9  # an empty slot (a plan not run) reaches this share of the axis
EMPTY_EDGE_COLOR = "#999999"
# A bar over the capacity: outlined and labelled in the capacity line's colour, not in red, which is activations'.
OVER_CAPACITY_COLOR = COLORS["capacity"]


def _hidden_slots(ax, x, **style) -> list:
    """One hidden rectangle of a bar's width at each of ``x``, 0 high (``update`` sets its height): outlines, slots."""
    return [ax.add_patch(Rectangle((xi - _BAR_WIDTH / 2, 0), _BAR_WIDTH, 0, visible=False, **style)) for xi in x]


class MemoryBarsFigure(LiveFigure):
    """Live stacked bars of per-device memory, one bar per plan, against a device's capacity, on one axes.

    Each bar stacks ``components`` (fields of ``MEMORY_COMPONENTS``, bottom to top, in ``COLORS``) of one
    ``parallelism.MemoryBreakdown``, its total written above it. With a capacity a dashed line marks it, and a bar above
    it gets a dashed outline in the capacity line's colour (red is activations') and "does not fit". The y axis ends at
    ``capacity_multiple`` × the capacity when given (a lab's scale then changes only with the device), else at 1.2 × the
    largest of the capacity and the totals within 2.5× it (1.18 × the largest total without a capacity); a bar above the
    axis is drawn shrunk to the axis's height, each component keeping its share, and its total and scale are written
    under the top, after an arrow. With ``selected`` that bar is
    opaque and outlined in black, the others faded. Texts are ``fontsize`` points, the y tick labels ``y_tick_fontsize``
    (at most ``y_ticks`` intervals). ``update(breakdowns, capacity_bytes=None, selected=None, missing_label=...)``
    takes one breakdown per plan, in ``plan_labels`` order; one with bytes in a component the figure was built without
    raises ``ValueError``. None instead of a breakdown (a plan that a framework does not run) draws an empty slot, a
    dashed outline the height of the axis with ``missing_label`` written up it, and no total.
    With ``memory_margin`` (a share, e.g. ``PLAYBOOK_CALIBRATION.memory_margin``) a hatched band under the capacity
    line, from capacity / (1 + margin) up to it, marks the memory a plan must leave spare to fit with that margin,
    with its own legend entry. The legend, under the axes, has ``legend_columns`` columns (default: one row up to four
    entries, else three).

    >>> from matplotlib.figure import Figure
    >>> from course_lib import parallelism
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
        memory_margin=None,
        legend_columns=None,
    ):
        super().__init__(ax)
        self.components = tuple(components)
        self.memory_margin = None if memory_margin is None else _check.nonnegative("memory_margin", memory_margin)
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
        self.over_outlines = _hidden_slots(
            ax, x, fill=False, edgecolor=OVER_CAPACITY_COLOR, linestyle="--", linewidth=2, zorder=4, gid="over-capacity"
        )
        self.selected_outline = ax.add_patch(
            Rectangle((-_BAR_WIDTH / 2, 0), _BAR_WIDTH, 0, fill=False, edgecolor="black", linewidth=2.0, zorder=4.5)
        )
        self.selected_outline.set_visible(False)
        # A plan with no breakdown (a framework does not run it): an empty slot, labelled up its middle.
        self.empty_slots = _hidden_slots(
            ax,
            x,
            facecolor=EMPTY_COLOR,
            edgecolor=EMPTY_EDGE_COLOR,
            linestyle="--",
            linewidth=1.2,
            zorder=2,
            gid="not-run",
        )
        self.empty_texts = [  # on the slot's colour, over the capacity line and the margin band
            CachedText.add(
                ax,
                xi,
                0,
                ha="center",
                va="center",
                rotation=90,
                fontsize=fontsize,
                color="#555555",
                zorder=5,
                bbox=dict(facecolor=EMPTY_COLOR, edgecolor="none", pad=1),
            )
            for xi in x
        ]
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
        self.margin_zone = None
        if self.memory_margin is not None:
            self.margin_zone = ax.add_patch(
                Rectangle(
                    (0, 0),
                    1,
                    0,
                    transform=left,
                    **MARGIN_STYLE,
                    zorder=1,
                    gid="memory-margin",
                    label=f"the +{units.format_percent(self.memory_margin)} margin (fit below it)",
                )
            )
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
            CachedText.add(
                ax, 0, 0, transform=tick_labels, ha="right", va="center", fontsize=y_tick_fontsize, gid=TICK_GID
            )
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
        handles = [*self.containers, *([self.margin_zone] if self.margin_zone is not None else [])]
        legend = ax.legend(
            handles=handles,
            loc="upper center",
            bbox_to_anchor=(0.5, legend_top),
            ncol=legend_columns or (len(handles) if len(handles) <= 4 else 3),
            frameon=False,
            fontsize=fontsize,
            handlelength=1.5,
            columnspacing=1.2,
        )
        self.legend_texts = dict(zip(self.components, legend.get_texts(), strict=False))
        if self.margin_zone is not None:
            self.margin_zone.set_visible(False)  # after the legend, whose handle copies the zone's visibility
        self.animated = (
            *[bar for bars in self.containers for bar in bars],
            *self.over_outlines,
            *self.empty_slots,
            *self.empty_texts,
            self.selected_outline,
            *self.totals,
            self.capacity_line,
            self.capacity_text,
            *([self.margin_zone] if self.margin_zone is not None else []),
            self.y_tick_marks,
            *self.y_tick_labels,
        )
        self._top_shown = None

    def static_key(self, held):
        """The legend depends on which components some bar holds (``held``: ``memory_components_of``)."""
        return tuple(field for field in self.components if field in held)

    def set_static(self, held) -> None:
        """Grey out, in the legend, the components no bar holds (the logits: the ideal model counts none, and the
        heaviest stage of a pipeline is not the last, which holds them). The texts stay: the legend keeps its size."""
        for field, text in self.legend_texts.items():
            shown = field in held
            text.set_color("black" if shown else "#AAAAAA")
            text.set_gid(None if shown else NOT_APPLICABLE)  # greyed out, nothing drawn: figure_check knows why

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

    def update(self, breakdowns, capacity_bytes=None, selected=None, missing_label="not run") -> None:
        """Draw ``breakdowns`` (one ``MemoryBreakdown`` per plan, or None for a plan that is not run: an empty slot
        labelled ``missing_label``) against ``capacity_bytes``, plan ``selected`` outlined."""
        breakdowns = list(breakdowns)
        if len(breakdowns) != len(self.stacks):
            raise ValueError(f"breakdowns must hold one breakdown per plan ({len(self.stacks)}), got {len(breakdowns)}")
        for index, breakdown in enumerate(breakdowns):
            if breakdown is None:
                continue
            left_out = [f for f in MEMORY_COMPONENTS if f not in self.components and float(getattr(breakdown, f))]
            if left_out:
                raise ValueError(
                    f"breakdowns[{index}] has bytes in {left_out}, which this figure was built without: build it "
                    f"with components=memory_components_of(breakdowns)"
                )
        capacity = None if capacity_bytes is None else float(capacity_bytes)
        totals = [0.0 if breakdown is None else float(breakdown.total) for breakdown in breakdowns]
        top = self._top(totals, capacity)
        if top != self._top_shown:
            self._set_scale(top)
        self.capacity_line.set_visible(capacity is not None)
        self.capacity_text.set_visible(capacity is not None)
        if capacity is not None:
            self.capacity_line.set_ydata([capacity, capacity])
            self.capacity_text.set_y(capacity)
            self.capacity_text.set_text(f"capacity\n{units.format_bytes(capacity)}")
        if self.margin_zone is not None:
            self.margin_zone.set_visible(capacity is not None)
            if capacity is not None:
                below = capacity / (1 + self.memory_margin)
                self.margin_zone.set_y(below)
                self.margin_zone.set_height(capacity - below)
        slot_height = _EMPTY_SLOT_SHARE * top
        self.scales = [min(1.0, top / total) if total > 0 else 1.0 for total in totals]  # drawn height / true
        for index, (bars, breakdown, total) in enumerate(zip(self.stacks, breakdowns, totals, strict=True)):
            missing = breakdown is None
            self.empty_slots[index].set_visible(missing)
            self.empty_texts[index].set_visible(missing)
            if missing:
                self.empty_slots[index].set_height(slot_height)
                self.empty_texts[index].set_y(slot_height / 2)
                self.empty_texts[index].set_text(missing_label)
            # A bar taller than the axis is drawn shrunk to the axis's height, every component keeping its share,
            # and says so: cut at the top instead, it showed only its lowest components (lesson 03's DP 64 bar showed
            # its parameters, not the optimizer state that dominates it; issue 41).
            scale = self.scales[index]
            bottom = 0.0
            for bar, field in zip(bars, self.components, strict=True):
                height = 0.0 if missing else scale * float(getattr(breakdown, field))
                bar.set_y(bottom)
                bar.set_height(height)
                bar.set_alpha(None if selected is None else 1.0 if index == selected else 0.4)
                bottom += height
            over = capacity is not None and total > capacity
            self.over_outlines[index].set_visible(over)
            self.over_outlines[index].set_height(scale * total)
            text = units.format_bytes(total)
            text += f"\nat 1/{1 / scale:.2g} scale" if scale < 1 else ""
            text += "\ndoes not fit" if over else ""
            label = self.totals[index]
            label.set_visible(not missing)
            if total > 0.93 * top:  # above the axis, or too close to its top for the text: under the top, an arrow
                label.set_text("↑ " + text)
                label.set_y(0.98 * top)
                label.set_verticalalignment("top")
            else:
                label.set_text(text)
                label.set_y(total + 0.01 * top)
                label.set_verticalalignment("bottom")
            label.set_color(OVER_CAPACITY_COLOR if over else "black")
        self.selected_outline.set_visible(selected is not None)
        if selected is not None:
            self.selected_outline.set_x(selected - _BAR_WIDTH / 2)
            shown = slot_height if breakdowns[selected] is None else min(totals[selected], top)
            self.selected_outline.set_height(shown)


def plot_memory_breakdown(breakdowns, capacity_bytes=None, ax=None):
    """Stacked bars of per-device memory, one bar per plan: a ``MemoryBarsFigure`` built on ``ax`` and drawn once.

    ``breakdowns`` maps a label (the bar's tick) to a ``parallelism.MemoryBreakdown``; each bar stacks every component
    that is not 0 in some plan (only those are in the legend), its total printed above it. With ``capacity_bytes`` a
    dashed line marks the device's memory; bars above it get a dashed outline in its colour and "does not fit". When a
    bar is more than 2.5× the capacity the y axis stops short of it, so the bars that nearly fit stay readable, and
    that bar is drawn shrunk to fit (its components keep their shares) with its total and its scale printed.

    >>> import matplotlib.pyplot as plt
    >>> from course_lib import parallelism
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
    # Only what some bar holds: a legend entry with nothing drawn (activations left at 0) promises a colour in vain.
    held = [f for f in memory_components_of(breakdowns.values()) if any(getattr(b, f) for b in breakdowns.values())]
    figure = MemoryBarsFigure(ax, list(breakdowns), held or MODEL_MEMORY_COMPONENTS[:1])
    figure.update(breakdowns.values(), capacity)
    return ax


# ---- live figure: the memory lab's two panels ---------------------------------------------------------------------


class MemoryBudgetFigure(LiveFigure):
    """Live per-device memory of a few plans against the device's capacity, on two axes placed by the caller.

    Left (``stack_ax``): a ``MemoryBarsFigure`` of the plans (``components`` stacked) on a linear axis from 0 to twice
    the capacity, the selected plan opaque and outlined, and above the axes whether it fits. Right (``log_ax``): each
    component of the selected plan and its total on a fixed log axis ``log_range_bytes``. ``legend_columns`` is the
    left legend's (``MemoryBarsFigure``), which greys out the components no bar holds: a static part that depends on
    ``memory_components_of`` the breakdowns (``static_key``, ``set_static``; ``panel`` for ``PartialRedraw``).
    ``update(breakdowns, selected, capacity_bytes, missing_label="not run")`` takes one ``parallelism.MemoryBreakdown``
    per plan (in ``plan_labels`` order; None for a plan that is not run: an empty slot labelled ``missing_label``, and
    that label as the verdict and across the right panel when it is the selected one), the index of the selected one
    and the device's memory in bytes.

    >>> from matplotlib.figure import Figure
    >>> from course_lib import parallelism
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
        memory_margin=None,
        legend_columns=None,
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
            memory_margin=memory_margin,
            legend_columns=legend_columns,
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
            log_ax, log_range_bytes[1], -0.6, "capacity", ha="center", va="bottom", fontsize=8, color=COLORS["capacity"]
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
        log_ax.set_title("selected plan, every component", fontsize=9, pad=20)  # above the "capacity" label
        self.log_missing = CachedText.add(
            log_ax,
            0.5,
            0.5,
            transform=log_ax.transAxes,
            ha="center",
            va="center",
            fontsize=8,
            color="#555555",
            bbox=dict(facecolor="white", edgecolor="none", pad=1),  # over the capacity line
        )
        for side in ("top", "right"):
            log_ax.spines[side].set_visible(False)
        self.animated = (
            *self.bars.animated,
            *self.log_bars,
            self.log_capacity,
            self.log_capacity_text,
            self.log_missing,
            self.verdict,
        )
        self._capacity_shown = None
        # One legend per set of components held: the four of the ideal model, with a framework's memory, with logits.
        self.static_examples = tuple(
            dict.fromkeys(
                self.bars.static_key(held)
                for held in (self.bars.components, MODEL_MEMORY_COMPONENTS, (*MODEL_MEMORY_COMPONENTS, "framework"))
            )
        )

    def static_key(self, held):
        """The left legend depends on which components some bar holds (``MemoryBarsFigure.static_key``)."""
        return self.bars.static_key(held)

    def set_static(self, held) -> None:
        self.bars.set_static(held)

    def update(self, breakdowns, selected, capacity_bytes, missing_label="not run") -> None:
        """Draw ``breakdowns`` (one ``MemoryBreakdown`` per plan, None for one not run), plan ``selected`` chosen,
        against the capacity."""
        capacity = float(capacity_bytes)
        self.bars.update(breakdowns, capacity, selected, missing_label)
        if capacity != self._capacity_shown:
            self.log_capacity.set_xdata([capacity, capacity])
            self.log_capacity_text.set_x(capacity)
            self._capacity_shown = capacity
        chosen = breakdowns[selected]
        self.log_missing.set_visible(chosen is None)
        low = self.log_bars[0].get_x()
        if chosen is None:
            self.log_missing.set_text(missing_label)
            for bar in self.log_bars:
                bar.set_width(0.0)
            self.verdict.set_text(missing_label.replace("\n", " "))
            self.verdict.set_color(COLORS["capacity"])
            return
        total = float(chosen.total)
        values = [float(getattr(chosen, field)) for field in self.bars.components] + [total]
        for bar, value in zip(self.log_bars, values, strict=True):
            bar.set_width(max(value - low, 0.0))

        headroom = capacity - total
        fits = total <= capacity
        if fits:
            verdict = f"fits, {units.format_bytes(headroom)} headroom"
        else:
            verdict = f"does not fit by {units.format_bytes(-headroom)}"
        margin = self.bars.memory_margin
        if margin is not None and fits:
            shown = units.format_percent(margin)
            with_margin = total * (1 + margin) <= capacity
            verdict += f"; {'also' if with_margin else 'but not'} with the +{shown} margin"
        self.verdict.set_text(verdict)
        self.verdict.set_color(FIT_COLOR if fits else COLORS["exposed"])
