"""Figures of the pipeline schedule (lesson 03, lab 4): a pipeline timeline as a Gantt chart, and the lab's bars of
a quantity as simulated against its formula.

Every number drawn comes from ``course_lib.pipeline``; this module only draws. ``PipelineScheduleFigure`` and
``ComparisonBarsFigure`` are live figures (see ``fast.LiveFigure``): the pipeline lab updates them on every move of
its controls, and the lesson's ``plot_pipeline_schedule`` builds a ``PipelineScheduleFigure`` and updates it once.
"""

from __future__ import annotations

import math

import matplotlib.transforms as mtransforms
import numpy as np
from matplotlib.colors import to_rgb, to_rgba
from matplotlib.font_manager import FontProperties
from matplotlib.legend_handler import HandlerTuple
from matplotlib.lines import Line2D
from matplotlib.markers import TICKDOWN, TICKLEFT
from matplotlib.patches import Patch, PathPatch, Rectangle
from matplotlib.path import Path
from matplotlib.textpath import TextToPath
from matplotlib.ticker import MaxNLocator

from .. import units
from ..pipeline import OP_KINDS, ZERO_BUBBLE_SCHEDULES, PipelineTimeline, pipeline_schedule
from .fast import CachedText, LiveFigure
from .figure_check import TICK_GID
from .style import COLORS, axes_or_new

__all__ = [
    "plot_pipeline_schedule",
    "PipelineScheduleFigure",
    "ComparisonBarsFigure",
    "SCHEDULE_NAMES",
    "KIND_NAMES",
    "MIN_LABEL_SIZE",
    "chunk_color",
    "text_color",
    "box_edge_width",
    "microbatch_label_size",
    "schedule_title",
]

SCHEDULE_NAMES = {
    "gpipe": "GPipe",
    "1f1b": "1F1B",
    "interleaved": "Interleaved 1F1B",
    "zb-h1": "ZB-H1",
    "zb-h2": "ZB-H2",
}
# The legend's name of each kind of op (``pipeline.OP_KINDS``).
KIND_NAMES = {
    "forward": "forward",
    "backward": "backward",
    "backward_input": "backward B (input gradient)",
    "backward_weight": "backward W (weight gradient)",
}
_BOX_HEIGHT = 0.78  # a pipeline box's height, in stage rows
MIN_LABEL_SIZE = 6.0  # points: smaller micro-batch numbers are left out of the boxes


def _lighter(color, share):
    """``color`` mixed with white: share 0 keeps it, 1 gives white."""
    r, g, b = to_rgb(color)
    return (r + (1 - r) * share, g + (1 - g) * share, b + (1 - b) * share)


def chunk_color(kind, chunk, chunks):
    """Colour of a pipeline box: ``COLORS[kind]`` (forward or backward), lighter for later model chunks of an
    interleaved stage (``chunk`` of ``chunks``).

    >>> from matplotlib.colors import to_rgb
    >>> from course_lib.viz.style import COLORS
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


def schedule_title(
    schedule, stages, microbatches, virtual_stages, bubble_fraction, unsynchronised_bubble_fraction=None
) -> str:
    """The title of a pipeline timeline: schedule, p (v when interleaved), m and the bubble; and the bubble without
    the optimizer step's synchronisation (``PipelineTimeline.unsynchronised_bubble_fraction``) when given and
    different.

    >>> schedule_title("interleaved", 4, 8, 2, 0.1875)
    'Interleaved 1F1B, p = 4, v = 2, m = 8: bubble 18.8 %'
    >>> schedule_title("zb-h2", 4, 8, 1, 0.125, 0.0)
    'ZB-H2, p = 4, m = 8: bubble 12.5 % (0 % without the optimizer sync)'
    """
    title = f"{SCHEDULE_NAMES[schedule]}, p = {stages}"
    title += f", v = {virtual_stages}" if schedule == "interleaved" else ""
    title += f", m = {microbatches}: bubble {units.format_percent(bubble_fraction)}"
    unsynchronised = unsynchronised_bubble_fraction
    if unsynchronised is not None and not math.isclose(unsynchronised, bubble_fraction, abs_tol=1e-12):
        title += f" ({units.format_percent(unsynchronised)} without the optimizer sync)"
    return title


def plot_pipeline_schedule(timeline, ax=None):
    """A pipeline timeline as a Gantt chart: the lab's ``PipelineScheduleFigure``, built on ``ax`` and drawn once.

    One row per stage (stage 1 on top: stages are counted from 1, as the micro-batches), one box per op: forward boxes
    in ``COLORS["forward"]``, backward boxes in ``COLORS["backward"]`` (a split backward's B and W in
    ``COLORS["backward_input"]`` and ``COLORS["backward_weight"]``), later model chunks of an interleaved stage in
    lighter shades, each named in the legend. Boxes are labelled with the micro-batch number counted from 1, as in
    Narayanan et al. 2021's Figures 3 and 4, when the number fits; grey behind the boxes is idle time, the bubble. The x
    axis is in units of t_F (``timeline.forward_time_s``), so a full-stage forward is 1 wide whatever the real duration;
    its label gives t_F when it is not 1 s. The boxes are one ``PathPatch`` per (kind, chunk) with gid
    ``"pipeline-<kind>-chunk<c>"``, the idle background has gid ``"pipeline-idle"``, the title gid ``"pipeline-title"``.

    >>> import matplotlib.pyplot as plt
    >>> from course_lib.pipeline import pipeline_schedule
    >>> ax = plot_pipeline_schedule(pipeline_schedule(4, 8, "1f1b", forward_time_s=0.01, backward_time_s=0.02))
    >>> [text.get_text() for text in ax.texts if text.get_gid() == "pipeline-title"], ax.get_xlabel()
    (['1F1B, p = 4, m = 8: bubble 37.5 %'], 'time (units of $t_\\\\text{F}$ = 10 ms)')
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


# ---- live figures: the pipeline lab's Gantt chart and its check bars ----------------------------------------------

_KINDS = OP_KINDS
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
    """The timeline's boxes (in units of t_F), one compound path per (kind, chunk), and its ops' label positions."""
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
        "narrowest": float(np.min(end - start)),  # the narrowest box: sets the numbers' size and the gaps' width
        "paths": paths,
        "centre": (start + end) / 2,
        "stage": stage,
        "kind": kind,
        "chunk": chunk,
        "label": [str(op.microbatch + 1) for op in ops],
    }


def _drawn_kinds(timeline) -> tuple[str, ...]:
    """The kinds of op a timeline holds: forward and backward, or forward, B and W when its backward is split."""
    split = timeline.schedule in ZERO_BUBBLE_SCHEDULES
    return ("forward", "backward_input", "backward_weight") if split else ("forward", "backward")


def _stage_ticks(stages: int) -> list[int]:
    """The stages (0-based rows) whose row a Gantt chart labels: every one up to 16 stages, else about 8 of them,
    whose names (counted from 1, as the micro-batches) are round numbers.

    >>> _stage_ticks(4), _stage_ticks(32)
    ([0, 1, 2, 3], [0, 3, 7, 11, 15, 19, 23, 27, 31])
    """
    if stages <= _ALL_STAGE_TICKS:
        return list(range(stages))
    names = MaxNLocator(integer=True, nbins=8).tick_values(1, stages)
    return sorted({0} | {int(t) - 1 for t in names if 1 <= t <= stages})


def _text_width_pt(text: str, fontsize: float) -> float:
    return TextToPath().get_text_width_height_descent(text, FontProperties(size=fontsize), ismath=False)[0]


class PipelineScheduleFigure(LiveFigure):
    """Live Gantt chart of a pipeline timeline, on axes placed by the caller: one row per stage (stage 1 on top),
    one box per op (``chunk_color``), idle time grey behind them, the micro-batch numbers in the boxes when they
    fit, time in units of t_F. ``update(timeline)`` takes a ``pipeline.pipeline_schedule(...)`` of up to
    ``max_stages`` stages and ``max_virtual_stages`` chunks; both scales change with it, so the ticks are artists of
    their own (``animated``) rather than the axes'.

    The numbers are ``microbatch_label_size`` rounded down to whole points (at most 9, one bitmap per size), written
    when that is at least ``min_label_size``, and when there are at most ``label_pool`` of them. The legend names
    forward and backward (or B and W, when the backward is split) with one shade per chunk, and the x label gives
    t_F when it is not 1 s (``xlabel`` replaces it): both depend on the timeline only through ``static_key`` (v, the
    kinds of op and the label). Ticks, axis labels and legend are ``fontsize`` points, the title 2 more; they sit at
    fixed distances in points from the axes. The title gives the bubble, and the bubble without the optimizer
    step's synchronisation where that differs (ZB-H2: ``schedule_title``).

    >>> from matplotlib.figure import Figure
    >>> from course_lib.pipeline import pipeline_schedule
    >>> live = PipelineScheduleFigure(Figure(figsize=(9, 4)).add_axes((0.1, 0.25, 0.6, 0.6)))
    >>> live.update(pipeline_schedule(4, 8, "interleaved", 2))
    >>> live.title.get_text(), live.ax.get_xlabel()
    ('Interleaved 1F1B, p = 4, v = 2, m = 8: bubble 18.8 %', 'time (units of $t_\\\\text{F}$)')
    >>> [text.get_text() for text in live.ax.get_legend().get_texts()]
    ['forward, chunks 1, 2', 'backward, chunks 1, 2', 'idle (bubble)']
    >>> live.update(pipeline_schedule(4, 8, "1f1b"))
    >>> sum(label.get_visible() for label in live.labels), live.labels[0].get_fontsize()
    (64, 9.0)
    >>> live.update(pipeline_schedule(4, 8, "zb-h1"))
    >>> [text.get_text() for text in live.ax.get_legend().get_texts()][1:3]
    ['backward B (input gradient)', 'backward W (weight gradient)']
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
            CachedText.add(
                ax, 0, 0, transform=shifted(below, 0, -7), ha="center", va="top", fontsize=size, gid=TICK_GID
            )
            for _ in range(16)
        ]
        self.y_tick_labels = [
            CachedText.add(
                ax, 0, 0, transform=shifted(left, -7, 0), ha="right", va="center", fontsize=size, gid=TICK_GID
            )
            for _ in range(min(self.max_stages, _ALL_STAGE_TICKS))
        ]
        ax.set_xticks([])
        ax.set_yticks([])
        self._xlabel_pad = 7 + 1.2 * size + 3  # under the tick labels
        self._legend_top = self._xlabel_pad + 1.3 * size  # under the x label ($t_\text{F}$ reaches below the line)
        self._legend_anchor = shifted(ax.transAxes, 0, -self._legend_top)
        widest = _text_width_pt(f"stage {self.max_stages}", size)
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
        # One small timeline of each v in t_F = 1 s: the static artists of every v a lab can show.
        self.static_examples = tuple(
            pipeline_schedule(1, 1) if v == 1 else pipeline_schedule(2, 2, "interleaved", v)
            for v in range(1, self.max_virtual_stages + 1)
        )
        self._static_shown = None
        self._shown_rows = None
        self._geometries = {}  # id(timeline) → (timeline, its boxes): a lab moving back and forth redraws, not rebuilds

    def time_label(self, timeline) -> str:
        """The x label: ``xlabel``, else time in units of t_F, with its value when it is not 1 s."""
        if self.xlabel is not None:
            return self.xlabel
        unit = timeline.forward_time_s
        label = r"time (units of $t_\text{F}$"  # lesson 03's forward time (the course map's notation)
        return f"{label})" if unit == 1.0 else f"{label} = {units.format_time(unit)})"

    def static_key(self, timeline):
        """The legend depends on the timeline's v (one shade per chunk) and kinds of op, the x label on its t_F."""
        return timeline.virtual_stages, _drawn_kinds(timeline), self.time_label(timeline)

    def set_static(self, timeline) -> None:
        """The x label and the legend for ``timeline``: each kind of op with one swatch per chunk."""
        v, kinds, xlabel = key = self.static_key(timeline)
        ax, size = self.ax, self.fontsize
        ax.set_xlabel(xlabel, fontsize=size, labelpad=self._xlabel_pad)
        handles = [
            tuple(Patch(facecolor=chunk_color(kind, c, v), edgecolor="white", linewidth=0.6) for c in range(v))
            for kind in kinds
        ]
        chunks = "" if v == 1 else ", chunks " + ", ".join(str(c + 1) for c in range(v))
        ax.legend(
            [*handles, Patch(facecolor=COLORS["bubble"], alpha=0.6)],
            [f"{KIND_NAMES[kind]}{chunks}" for kind in kinds] + ["idle (bubble)"],
            handler_map={tuple: HandlerTuple(ndivide=None, pad=0.0)},
            loc="upper center",
            bbox_to_anchor=(0.5, 0.0),
            bbox_transform=self._legend_anchor,
            borderaxespad=0.0,
            ncol=len(kinds) + 1,
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
        gantt = self._geometry(timeline)
        end = gantt["end"]
        self.idle.set_path(_box_path(np.zeros(p), np.full(p, end), np.arange(p, dtype=float), _BOX_HEIGHT))
        self._set_time_axis(end)
        if p != self._shown_rows:
            self._set_stage_rows(p)
        title = schedule_title(
            timeline.schedule, p, m, v, timeline.bubble_fraction, timeline.unsynchronised_bubble_fraction
        )
        self.title.set_text(title)
        # Box edges and labels only where they fit.
        width_pt, height_pt = self._axes_size_pt()
        narrowest_pt = width_pt * gantt["narrowest"] / end  # with t_bwd ≥ t_F, a chunk's forward
        self._draw_boxes(gantt, v, _drawn_kinds(timeline), box_edge_width(narrowest_pt))
        self._draw_labels(gantt, v, float(math.floor(microbatch_label_size(narrowest_pt, height_pt, p, m))))

    def _geometry(self, timeline) -> dict:
        """``_gantt_geometry(timeline)``, kept for the timelines drawn before: a lab moving back and forth redraws."""
        cached = self._geometries.get(id(timeline))
        if cached is None or cached[0] is not timeline:
            if len(self._geometries) >= 32:
                self._geometries.clear()
            cached = self._geometries[id(timeline)] = (timeline, _gantt_geometry(timeline))
        return cached[1]

    def _set_time_axis(self, end) -> None:
        """The x limits, ticks and tick labels of a timeline ``end`` units of t_F long."""
        self.ax.set_xlim(0, end * 1.005)
        ticks = [t for t in MaxNLocator(nbins=10, integer=True).tick_values(0, end) if 0 <= t <= end]
        self.x_tick_marks.set_data(ticks, [0.0] * len(ticks))
        for index, label in enumerate(self.x_tick_labels):
            label.set_visible(index < len(ticks))
            if index < len(ticks):
                label.set_x(ticks[index])
                label.set_text(f"{ticks[index]:g}")

    def _set_stage_rows(self, stages) -> None:
        """The y limits, ticks and tick labels of ``stages`` rows, stage 1 on top."""
        self.ax.set_ylim(stages - 0.5, -0.5)
        rows = _stage_ticks(stages)
        self.y_tick_marks.set_data([0.0] * len(rows), rows)
        for index, label in enumerate(self.y_tick_labels):
            label.set_visible(index < len(rows))
            if index < len(rows):
                label.set_y(rows[index])
                label.set_text(f"stage {rows[index] + 1}")  # counted from 1, as the micro-batches in the boxes
        self._shown_rows = stages

    def _axes_size_pt(self) -> tuple[float, float]:
        """The axes' width and height in points, where the figure's layout engine, if it has one (a lesson's figure;
        a lab places its axes), puts them."""
        figure = self.ax.figure
        if figure.get_layout_engine() is not None:
            figure.get_layout_engine().execute(figure)
        box = self.ax.get_position()
        return box.width * figure.get_figwidth() * 72, box.height * figure.get_figheight() * 72

    def _draw_boxes(self, gantt, v, kinds, edge) -> None:
        """The boxes of ``kinds`` of op in the ``v`` chunks of ``gantt`` (``_gantt_geometry``), with white gaps
        ``edge`` points wide."""
        for (k, c), patch in self.boxes.items():
            shown = c < v and _KINDS[k] in kinds
            patch.set_visible(shown)
            if shown:
                patch.set_path(gantt["paths"][k, c])
                patch.set_facecolor(self._colors[v][k, c])
                patch.set_linewidth(edge)

    def _draw_labels(self, gantt, v, size) -> None:
        """The micro-batch numbers of ``gantt`` at ``size`` points, or none when that is below ``min_label_size`` or
        the pool of labels is too small for them."""
        count = len(gantt["label"])
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
