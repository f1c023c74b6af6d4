"""Figures for long sequences and many experts (lab 7): memory per device against the sequence length with and
without context parallelism, one MoE layer's all-to-alls inside and across nodes beside its experts' compute, and
a pipeline schedule's bubble against 1F1B's.

Each figure is a ``fast.LiveFigure``: built once on its axes, ``update(result)`` moves its artists. Every number drawn
comes from ``course_lib`` (``parallelism.memory_breakdown``, ``budget.moe_layer_times``,
``pipeline.pipeline_schedule``); this module only draws.
"""

from __future__ import annotations

import numpy as np
from matplotlib.patches import Rectangle

from .. import _check, units
from ..budget.experts import MoeLayerTimes
from ..pipeline import PipelineTimeline
from .fast import FastText, FastTextGroup, LiveFigure
from .serving import _nice_above
from .style import COLORS, MARGIN_STYLE, bytes_formatter, label_units, seconds_formatter

__all__ = ["SequenceMemoryFigure", "MoeLayerFigure", "BubbleFigure", "MOE_BARS", "plot_sequence_memory"]

WITHOUT_C_COLOR = COLORS["activations"]
WITH_C_COLOR = COLORS["parameters"]
MEMORY_LIMITS = (1e9, 1e14)  # 1 GB to 100 TB: every model, plan and sequence of the lab, fixed so the axes stay drawn
# The MoE panel's bars, top to bottom: (label, colour).
MOE_BARS = (
    ("all-to-alls, e in one node", COLORS["bandwidth"]),
    ("all-to-alls, e across nodes", COLORS["exposed"]),
    ("experts' compute", COLORS["overlapped"]),
)


class SequenceMemoryFigure(LiveFigure):
    """Memory per device (y, log) against the sequence length (x, log 2), for c = 1 and for the chosen c, with the
    device's HBM as a dashed line and, under it, the hatched band of ``memory_margin`` (a plan must stay below
    capacity / (1 + margin) to fit with that margin). Built on ``ax`` for ``capacity_bytes``.

    ``update(result)`` takes (sequence lengths, totals with c = 1, totals with the chosen c, c, the current length):
    the two lines, the marker on the chosen c's line at the current length and the text above them.

    >>> from matplotlib.figure import Figure
    >>> figure = SequenceMemoryFigure(Figure().add_subplot(), 80e9, 0.384)
    >>> figure.update(((4096, 8192), (60e9, 90e9), (20e9, 30e9), 4, 8192))
    >>> figure.text.get_text()
    's = 8k, c = 4: 30 GB per device (c = 1: 90 GB)'
    """

    def __init__(self, ax, capacity_bytes, memory_margin, seq_lens=None):
        super().__init__(ax)
        self.capacity_bytes = _check.positive("capacity_bytes", capacity_bytes)
        self.memory_margin = _check.nonnegative("memory_margin", memory_margin)
        (self.without_c,) = ax.plot([], [], color=WITHOUT_C_COLOR, marker="o", markersize=3, gid="c = 1")
        (self.with_c,) = ax.plot([], [], color=WITH_C_COLOR, marker="o", markersize=3, gid="chosen c")
        (self.current,) = ax.plot([], [], linestyle="none", marker="*", markersize=13, color="black", gid="current")
        capacity = ax.axhline(
            self.capacity_bytes, color=COLORS["capacity"], linestyle="--", linewidth=1.3, gid="capacity"
        )
        low = self.capacity_bytes / (1 + self.memory_margin)
        band = ax.add_patch(
            Rectangle((0, low), 1, self.capacity_bytes - low, transform=ax.get_yaxis_transform(), **MARGIN_STYLE)
        )
        band.set_gid("memory-margin")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_ylim(*MEMORY_LIMITS)
        if seq_lens is not None:
            seq_lens = list(seq_lens)
            ax.set_xlim(seq_lens[0] / 1.3, seq_lens[-1] * 1.3)
            ax.set_xticks(seq_lens[::2], [units.format_seq_len(s) for s in seq_lens[::2]])
        ax.yaxis.set_major_formatter(bytes_formatter)
        ax.grid(True, which="major", alpha=0.25)
        label_units(ax, "sequence length s (tokens)", "memory per device (bytes)")
        ax.set_title("Memory per device against s", size=11)
        ax.legend(
            [self.without_c, self.with_c, capacity, band],
            ["c = 1", "chosen c", f"HBM {units.format_bytes(self.capacity_bytes)}",
             f"+{units.format_percent(self.memory_margin)} margin"],
            loc="lower right",
            fontsize=8,
            frameon=False,
        )  # fmt: skip
        self.text = FastText(ax, (0.02, 0.97), "", size=9, ha="left", va="top", transform=ax.transAxes)
        self.animated = (self.without_c, self.with_c, self.current, self.text)

    def update(self, result) -> None:
        """Draw both lines and the current point from ``result`` = (lengths, c = 1 totals, totals, c, length)."""
        seq_lens, without_c, with_c, c, current = result
        x = np.asarray(seq_lens, dtype=float)
        without_c, with_c = np.asarray(without_c, dtype=float), np.asarray(with_c, dtype=float)
        if not (x.shape == without_c.shape == with_c.shape) or current not in seq_lens:
            raise ValueError("the result must hold one total per sequence length, and the current length among them")
        self.without_c.set_data(x, without_c)
        self.with_c.set_data(x, with_c)
        here = float(with_c[list(seq_lens).index(current)])
        self.current.set_data([current], [here])
        alone = float(without_c[list(seq_lens).index(current)])
        self.text.set_text(
            f"s = {units.format_seq_len(current)}, c = {c}: {units.format_bytes(here)} per device"
            + (f" (c = 1: {units.format_bytes(alone)})" if c > 1 else "")
        )


class MoeLayerFigure(LiveFigure):
    """One MoE layer of one micro-batch on one rank: three horizontal bars (``MOE_BARS``), the four all-to-alls with
    the e ranks in one node and across nodes, and the experts' compute, with each one's time. ``update(result)``
    takes (inside, across, chosen) (two ``budget.MoeLayerTimes`` and "one node" or "across nodes"), or None for a
    dense model (no bars). ``snap=True`` puts the x limit on 1, 2 or 5 × 10^k, so a lab redraws the axis only
    when that changes.

    >>> from dataclasses import replace
    >>> from matplotlib.figure import Figure
    >>> from course_lib import budget, hardware, parallelism, units
    >>> eight = replace(hardware.DGX_H100, nodes=8)
    >>> times = [budget.moe_layer_times(parallelism.MIXTRAL_8X7B, eight, 8, 4096, s) for s in (1, 8)]
    >>> figure = MoeLayerFigure(Figure().add_subplot())
    >>> figure.update((*times, "across nodes"))
    >>> [units.format_time(bar.get_width()) for bar in figure.bars]
    ['657 µs', '4.74 ms', '17.5 ms']
    """

    def __init__(self, ax, snap=False):
        super().__init__(ax)
        self.snap = bool(snap)
        positions = np.arange(len(MOE_BARS))[::-1]
        self.bars = [
            ax.barh(y, 0.0, 0.6, color=color, gid=label).patches[0]
            for y, (label, color) in zip(positions, MOE_BARS, strict=True)
        ]
        ax.set_yticks(positions, [label for label, _ in MOE_BARS], size=9)
        ax.set_ylim(-0.6, len(MOE_BARS) - 0.4)
        ax.xaxis.set_major_formatter(seconds_formatter)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        label_units(ax, "seconds per MoE layer and micro-batch", "")
        ax.set_title("One MoE layer: all-to-alls vs experts", size=11)
        self.values = FastTextGroup(ax, size=9, ha="left", va="center")
        self.note = FastText(ax, (0.5, 0.5), "", size=10, ha="center", va="center", transform=ax.transAxes)
        self.animated = (*self.bars, self.values, self.note)

    def update(self, result) -> None:
        """Set the bars from ``result`` = (inside, across, chosen placement), or None (a dense model)."""
        if result is None:
            for bar in self.bars:
                bar.set_width(0.0)
            self.values.set_texts([])
            self.note.set_text("a dense model: no experts, no all-to-all")
            self.ax.set_xlim(0, 1e-3)
            return
        inside, across, chosen = result
        if not (isinstance(inside, MoeLayerTimes) and isinstance(across, MoeLayerTimes)):
            raise ValueError("the result must be (inside, across, placement) with two budget.MoeLayerTimes")
        if chosen not in ("one node", "across nodes"):
            raise ValueError(f"the placement must be 'one node' or 'across nodes', got {chosen!r}")
        widths = (inside.all_to_all_s, across.all_to_all_s, inside.expert_compute_s)
        chosen_bar = 0 if chosen == "one node" else 1
        for index, (bar, width) in enumerate(zip(self.bars, widths, strict=True)):
            bar.set_width(width)
            bar.set_alpha(0.35 if index == 1 - chosen_bar else 1.0)  # the placement not chosen, faded
        upper = max(widths) * 1.45
        upper = _nice_above(upper) if self.snap else upper
        self.ax.set_xlim(0, upper)
        self.values.set_texts(
            [
                ((width + upper * 0.01, bar.get_y() + bar.get_height() / 2), units.format_time(width))
                for bar, width in zip(self.bars, widths, strict=True)
            ]
        )
        self.note.set_text("")


class BubbleFigure(LiveFigure):
    """The pipeline bubble of a schedule against 1F1B's, each over the ideal step (Narayanan et al.'s t_pb / t_id):
    two horizontal bars on a fixed 0–100 % axis. ``update(result)`` takes (1F1B's timeline, the chosen schedule's),
    two ``pipeline.PipelineTimeline`` of the same p and m.

    >>> from matplotlib.figure import Figure
    >>> from course_lib.pipeline import pipeline_schedule
    >>> figure = BubbleFigure(Figure().add_subplot())
    >>> figure.update((pipeline_schedule(4, 8, "1f1b"), pipeline_schedule(4, 8, "zb-h1")))
    >>> [round(bar.get_width(), 4) for bar in figure.bars], figure.labels.get_texts()[1]
    ([0.375, 0.125], 'ZB-H1: 12.5 %')
    """

    def __init__(self, ax):
        super().__init__(ax)
        self.bars = [
            ax.barh(y, 0.0, 0.6, color=color, gid=name).patches[0]
            for y, name, color in ((1, "1F1B", COLORS["bubble"]), (0, "chosen", COLORS["backward_weight"]))
        ]
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.6, 1.6)
        ax.set_yticks([])
        ax.xaxis.set_major_formatter(lambda x, _pos: f"{x:.0%}")
        for side in ("top", "right", "left"):
            ax.spines[side].set_visible(False)
        label_units(ax, "bubble / ideal step", "")
        ax.set_title("Pipeline bubble", size=11)
        self.labels = FastTextGroup(ax, size=9, ha="left", va="bottom")
        self.title = FastText(ax, (0.0, -0.3), "", size=9, ha="left", va="top", transform=ax.transAxes)
        self.animated = (*self.bars, self.labels, self.title)

    def update(self, result) -> None:
        """Set both bars from ``result`` = (1F1B's timeline, the chosen schedule's timeline)."""
        one_f_one_b, chosen = result
        if not (isinstance(one_f_one_b, PipelineTimeline) and isinstance(chosen, PipelineTimeline)):
            raise ValueError("the result must be two pipeline.PipelineTimeline: 1F1B's and the chosen schedule's")
        labels = []
        for bar, timeline in zip(self.bars, (one_f_one_b, chosen), strict=True):
            share = float(timeline.bubble_fraction)
            bar.set_width(min(share, 1.0))
            name = timeline.schedule.upper()
            text = f"{name}: {units.format_percent(share)}"
            unsynchronised = float(timeline.unsynchronised_bubble_fraction)
            if unsynchronised < share:  # ZB-H2: no bubble once no optimizer step synchronises the stages
                text += f" (unsynced {units.format_percent(unsynchronised)})"
            labels.append(((0.0, bar.get_y() + bar.get_height() + 0.02), text))
        self.labels.set_texts(labels)
        self.title.set_text(f"p = {chosen.stages}, m = {chosen.microbatches}")


def plot_sequence_memory(seq_lens, without_c, with_c, context_parallel, capacity_bytes, memory_margin=0.0, ax=None):
    """Build a ``SequenceMemoryFigure`` on ``ax`` (or a new one) and draw the two curves; return the axes.

    >>> import matplotlib.pyplot as plt
    >>> ax = plot_sequence_memory((4096, 8192), (60e9, 90e9), (20e9, 30e9), 4, 80e9)
    >>> ax.get_xscale(), ax.get_ylabel()
    ('log', 'memory per device (bytes)')
    >>> plt.close("all")
    """
    from .style import axes_or_new

    figure = SequenceMemoryFigure(axes_or_new(ax, figsize=(6, 4)), capacity_bytes, memory_margin, seq_lens)
    figure.update((seq_lens, without_c, with_c, context_parallel, seq_lens[-1]))
    return figure.ax
