"""Figure of the global batch lab (lab 2): which parallel axes multiply the examples of a step and which only add
devices.

Every number drawn is one of a ``parallelism.GlobalBatchReport``; this module only draws. ``GlobalBatchFigure``
is a live figure (see ``fast.LiveFigure``): the lab updates it on every move of its controls.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.collections import PatchCollection
from matplotlib.colors import to_rgb, to_rgba
from matplotlib.patches import Rectangle
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from .. import units
from .fast import FastText, FastTextGroup, LiveFigure
from .style import AXIS_COLORS, RANK_COLORS

__all__ = ["GlobalBatchFigure", "count_of"]


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
    the shared factor d in the same colour, on the fixed range ``count_limits``. ``update(report)`` takes a
    ``parallelism.GlobalBatchReport``: its plan's sizes and what they make of the step (``global_batch``,
    ``tokens_per_step``, ``devices``, ``devices_per_replica``, ``examples_per_replica_per_step``).

    >>> from matplotlib.figure import Figure
    >>> from course_lib import parallelism
    >>> figure = Figure(figsize=(9, 4))
    >>> live = GlobalBatchFigure(figure.add_axes((0, 0, 0.6, 1)), figure.add_axes((0.66, 0.2, 0.32, 0.68)))
    >>> live.update(parallelism.global_batch_report(8, 16, 2, seq_len=2048, tensor_parallel=2))
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

    def update(self, report) -> None:
        """Draw the plan and the counts of ``report``, a ``parallelism.GlobalBatchReport``."""
        self._update_grid(report)
        self._update_bars(report)

    def _update_grid(self, r) -> None:
        d, t, p = r.plan.data_parallel, r.plan.tensor_parallel, r.plan.pipeline_parallel
        per_replica, examples = r.devices_per_replica, r.examples_per_replica_per_step
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
            f"{count_of(r.devices, 'device')} = {count_of(d, 'replica')} × {count_of(per_replica, 'device')} each"
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
                f"{units.format_count(r.global_batch)} examples"
            )
        if per_replica > columns:
            notes.append(f"showing {columns} of the {per_replica} devices of each replica (t × p = {t} × {p})")
        if p > 1 and not notes:
            notes.append("shades alternate by pipeline stage (s0, s1, …)")
        for note, text in zip(self.grid_notes, notes + ["", ""], strict=False):
            note.set_text(text)

    def _update_bars(self, r) -> None:
        plan = r.plan
        factors = {
            (0, "d"): plan.data_parallel,
            (0, "t"): plan.tensor_parallel,
            (0, "p"): plan.pipeline_parallel,
            (1, "b"): plan.micro_batch,
            (1, "acc"): plan.grad_accum_steps,
            (1, "d"): plan.data_parallel,
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
        self.devices_total.set_position((0, r.devices))
        self.devices_total.set_text(units.format_count(r.devices))
        self.examples_total.set_position((1, r.global_batch))
        self.examples_total.set_text(units.format_count(r.global_batch))
        self.tokens_note.set_text(f"× s = {r.seq_len} tokens: {units.format_count(r.tokens_per_step)} tokens per step")
