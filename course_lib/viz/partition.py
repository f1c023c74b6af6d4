"""The partition explorer's figure: one model diagram split by a plan, the tensors that cross device boundaries, and
two bars (memory per device, where the step's time goes).

``PartitionFigure(figure)`` builds its axes on a matplotlib Figure once; ``update(report)`` takes the
``budget.PartitionReport`` of ``budget.partition_report`` (it reads its fields: the plan, the cluster, the
``MemoryBreakdown``, the ``StepTime`` and the ``TimedTransfer`` rows) and changes only its artists (all of them
animated, so a lab redraws them over a cached picture of the frames and legends).
"""

from __future__ import annotations

from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from .. import _check, units
from ..budget import PartitionReport, TimedTransfer
from .fast import FastText, FastTextGroup, LiveFigure
from .memory_budget import MEMORY_COMPONENTS
from .style import AXIS_COLORS, COLORS, MARGIN_STYLE, RANK_COLORS

__all__ = [
    "PartitionFigure",
    "STEP_SEGMENTS",
    "LINK_COLORS",
    "STAGE_COLORS",
    "transfer_row",
    "drawn_stages",
    "figure_texts",
    "PLAN_AXIS_COLORS",
    "expert_ranks",
    "sequence_halves",
]

MAX_STAGES_DRAWN = 8  # with more pipeline stages, the first four, a gap and the last three are drawn
MAX_STRIPES = 16  # tensor-parallel slices drawn inside a stage box (more are drawn as 16, the label says t)
MAX_REPLICAS_DRAWN = 3  # data-parallel copies drawn behind the model
FULL_SPACING_ROWS = 10  # rows listed one line apart; up to MAX_ROWS more are listed closer together
MAX_ROWS = 14  # boundary tensors listed (the rest are counted in the table's note)
MAX_SEQUENCE_CELLS = 64  # a ring of c ≤ 32 cuts the sequence into 2c zig-zag halves
MAX_EXPERTS_DRAWN = 64
STAGE_COLORS = ("#4C72B0", "#DD8452", "#55A868", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C", "#CCB974")
LINK_COLORS = {"NVLink": "#2F6DB5", "InfiniBand": "#C0392B"}  # by hardware.Link.family
# The axes' colours: the three classic ones and ZeRO (``style.AXIS_COLORS``), context (the sequence split), expert
# (the all-to-alls) and the experts' own gradient reduction (a darker data-parallel green).
PLAN_AXIS_COLORS = {**AXIS_COLORS, "context": "#1799A8", "expert": "#B8860B", "expert data": "#2E7D4F"}
# The step's time, left to right: (label, colour, its seconds in a budget.StepTime).
STEP_SEGMENTS = (
    ("compute", COLORS["compute"], lambda step: step.compute_s),
    ("bubble", "#AAAAAA", lambda step: step.bubble_s),
    ("exposed tensor parallel", AXIS_COLORS["tensor"], lambda step: step.exposed_s["tensor"]),
    ("exposed data parallel", AXIS_COLORS["data"], lambda step: step.exposed_s["data"] + _axis_s(step, "expert data")),
    ("pipeline sends", AXIS_COLORS["pipeline"], lambda step: step.exposed_s["pipeline"]),
    ("exposed context parallel", PLAN_AXIS_COLORS["context"], lambda step: _axis_s(step, "context")),
    ("exposed expert parallel", PLAN_AXIS_COLORS["expert"], lambda step: _axis_s(step, "expert")),
)
KEYED_SEGMENTS = 5  # segments with a row in the key under the bar; the last two are named above it when used
_AXIS_SHORT = {"tensor": "TP", "pipeline": "PP", "data": "DP", "context": "CP", "expert": "EP", "expert data": "EDP"}
_OP_SHORT = {
    "all_reduce": "all-reduce",
    "reduce_scatter": "reduce-scatter",
    "all_gather": "all-gather",
    "send_recv": "send/recv",
    "all_to_all": "all-to-all",
}
# The transfer table's columns: (header, x in axes fraction, alignment).
_COLUMNS = (
    ("", 0.0, "left"),
    ("axis", 0.025, "left"),
    ("tensor", 0.07, "left"),
    ("op", 0.455, "left"),
    ("payload/call", 0.665, "right"),
    ("calls/step", 0.755, "right"),
    ("link", 0.765, "left"),
    ("per step", 0.93, "right"),
    ("exposed", 1.01, "right"),
)


def _axis_s(step, axis: str) -> float:
    """A ``StepTime``'s exposed seconds on ``axis``, 0 for an axis the plan does not use."""
    return step.exposed_s.get(axis, 0.0)


def sequence_halves(context_parallel: int, kind: str) -> list:
    """The context-parallel rank that holds each piece of a sequence, in order: ring attention and the all-gather form
    cut it into 2c halves and rank i holds halves i and 2c − 1 − i (the zig-zag split that balances the causal mask;
    Transformer Engine's all-gather form reorders the gathered K/V into the same 2c chunks); the all-to-all form into c
    chunks, one per rank.

    >>> sequence_halves(4, "ring"), sequence_halves(4, "all_gather"), sequence_halves(4, "all_to_all")
    ([0, 1, 2, 3, 3, 2, 1, 0], [0, 1, 2, 3, 3, 2, 1, 0], [0, 1, 2, 3])
    """
    c = context_parallel
    if kind in ("ring", "all_gather"):
        return [min(half, 2 * c - 1 - half) for half in range(2 * c)]
    return list(range(c))


def expert_ranks(experts: int, expert_parallel: int, tensor_parallel: int, devices_per_node: int) -> list:
    """(rank, node) of the expert-parallel rank that holds each of a MoE layer's ``experts`` (E/e contiguous
    experts per rank); the e ranks of the first group sit ``tensor_parallel`` devices apart from device 0
    (``budget.axis_stride``), so a rank's node is rank · t // devices per node.

    >>> expert_ranks(8, 8, 2, 8)   # t = 2 pushes ranks 4–7 to the second node
    [(0, 0), (1, 0), (2, 0), (3, 0), (4, 1), (5, 1), (6, 1), (7, 1)]
    >>> expert_ranks(8, 2, 1, 8)
    [(0, 0), (0, 0), (0, 0), (0, 0), (1, 0), (1, 0), (1, 0), (1, 0)]
    """
    per_rank = experts // expert_parallel
    return [(j // per_rank, (j // per_rank) * tensor_parallel // devices_per_node) for j in range(experts)]


def _key_y(row: int) -> float:
    """The height of a bar's key row ``row``, in axes fractions of the bar's axes: under its tick labels."""
    return -0.95 - 0.34 * row


def transfer_row(number: int, timed: TimedTransfer) -> tuple:
    """The table row of one ``budget.TimedTransfer`` of a ``PartitionReport`` (formatted with units).

    >>> from course_lib.budget import TimedTransfer
    >>> from course_lib.hardware import NVLINK3
    >>> from course_lib.parallelism import BoundaryTransfer
    >>> ar = BoundaryTransfer("tensor", "layer outputs", "all_reduce", 5e7, 8, 1536, "none")
    >>> transfer_row(1, TimedTransfer(ar, ("in node",), NVLINK3, 0.472 / 1536, 0.472, 0.472))
    ('1', 'TP', 'layer outputs', 'all-reduce', '50 MB', '1536', 'NVLink', '472 ms', '472 ms')
    """
    transfer = timed.transfer
    return (
        str(number),
        _AXIS_SHORT[transfer.axis],
        transfer.tensor,
        _OP_SHORT[transfer.op],
        units.format_bytes(transfer.payload_bytes),
        str(transfer.calls_per_step),
        timed.link.family,
        units.format_time(timed.time_s),
        units.format_time(timed.exposed_s),
    )


def drawn_stages(stages: int) -> list:
    """The pipeline stages drawn (0-based), None for the gap when there are more than eight.

    >>> drawn_stages(3), drawn_stages(16)
    ([0, 1, 2], [0, 1, 2, 3, None, 13, 14, 15])
    """
    if stages <= MAX_STAGES_DRAWN:
        return list(range(stages))
    return [0, 1, 2, 3, None, stages - 3, stages - 2, stages - 1]


class BoxGroup(PolyCollection):
    """Rectangles drawn as one collection (one draw call instead of one per patch): ``set_boxes([(x, y, width,
    height, colour), ...])``; ``boxes`` holds their (x, y, width, height) in order."""

    def __init__(self, ax, **kwargs):
        super().__init__([], **kwargs)
        self.boxes: list = []
        ax.add_collection(self, autolim=False)

    def set_boxes(self, boxes) -> None:
        self.boxes = [tuple(box[:4]) for box in boxes]
        self.set_verts([[(x, y), (x + w, y), (x + w, y + h), (x, y + h)] for x, y, w, h, _ in boxes])
        self.set_facecolor([box[4] for box in boxes] or "none")


def _node_span(first_rank: int, count: int, per_node: int, named: bool = True) -> str:
    """The nodes ``count`` ranks from ``first_rank`` sit on: "node 3", "nodes 10–11" (``named=False``: "10–11")."""
    first, last = first_rank // per_node, (first_rank + count - 1) // per_node
    span = f"{first}" if first == last else f"{first}–{last}"
    return (f"node{'' if first == last else 's'} " if named else "") + span


class PartitionFigure(LiveFigure):
    """The model drawn once, split by a plan, with its boundary tensors, memory and step time (module docstring).

    Top left: the embedding, the transformer blocks grouped into pipeline stages (one colour per stage, the
    tensor-parallel slices as lines inside each stage, a red line where a tensor group leaves its node), the output
    layer; the data-parallel replicas as copies behind it; numbered markers where each boundary tensor crosses. With
    context parallelism (c > 1) each stage is cut in c dashed bands (a device holds s/c of each sequence) and, above
    the model, the sequence's 2c halves (ring: rank i holds halves i and 2c − 1 − i, the zig-zag split) or c chunks
    (all-to-all) in the colour of the rank that holds them. For a mixture of experts, under the model, one MoE
    layer's E experts in the colour of the expert-parallel rank that holds them, a red line where those ranks change
    node, the all-to-all's bracket under them and the link it runs on (blue NVLink, red the network).
    Bottom left: one row per boundary tensor (the markers' numbers): axis, tensor, collective or send, payload per
    call, calls per step, link, time per step, exposed time. Right: memory per device by component against the
    capacity, ``memory_margin`` (the reports' own, checked) as a hatched band under the capacity, drawn once with the
    static artists (a plan fits with the margin when its bar ends left of the band); the step time split into
    compute, bubble, exposed tensor-parallel, exposed data-parallel (the experts' own gradient group included) and
    pipeline sends, and the exposed context and expert all-to-alls, named above the bar in their colours when the plan
    uses them; under each bar a key of its parts with their values (zeros too). Past 10 rows the table's rows close
    up; past ``MAX_ROWS`` its note counts the rest.

    >>> from dataclasses import replace
    >>> from matplotlib.figure import Figure
    >>> from course_lib import budget, hardware, parallelism
    >>> live = PartitionFigure(Figure(figsize=(10, 5.0)))
    >>> plan = parallelism.ParallelPlan(tensor_parallel=16, pipeline_parallel=4, grad_accum_steps=64)
    >>> live.update(budget.partition_report(parallelism.GPT3_175B, plan, replace(hardware.DGX_A100, nodes=8)))
    >>> live.network_rows.get_texts()[:2], live.tensor_label.get_text()
    (['InfiniBand', 'InfiniBand'], 't = 16 tensor-parallel slices per stage (2 nodes: the red line)')
    """

    def __init__(self, figure, rect=(0.0, 0.0, 1.0, 1.0), memory_margin=0.0):
        x0, y0, w, h = rect
        self.memory_margin = _check.nonnegative("memory_margin", memory_margin)

        def place(x, y, width, height):
            return figure.add_axes((x0 + x * w, y0 + y * h, width * w, height * h))

        self.diagram_ax = place(0.01, 0.47, 0.68, 0.41)
        self.table_ax = place(0.01, 0.03, 0.72, 0.40)
        self.memory_ax = place(0.77, 0.72, 0.21, 0.09)
        self.step_ax = place(0.77, 0.23, 0.21, 0.09)
        super().__init__(self.diagram_ax, self.table_ax, self.memory_ax, self.step_ax)
        self.title = FastText(
            self.diagram_ax,
            (0.0, 1.0),
            size=10,
            weight="bold",
            va="bottom",
            transform=self.diagram_ax.transAxes,
            offset=(0, 18),
        )
        self.subtitle = FastText(
            self.diagram_ax, (0.0, 1.0), size=9, va="bottom", transform=self.diagram_ax.transAxes, offset=(0, 5)
        )
        self._build_diagram()
        self._build_table()
        self._build_bars()
        self.animated = tuple(self._animated)

    # ---- construction -------------------------------------------------------------------------------------------

    def _build_diagram(self):
        ax = self.diagram_ax
        ax.set_xlim(0, 100)
        ax.set_ylim(0, 50)
        ax.set_axis_off()
        anim = self._animated = [self.title, self.subtitle]
        # the data-parallel copies behind; the embedding, the drawn stages and the head (stage_bounds: the stages)
        self.replicas = BoxGroup(ax, edgecolor="#999999", linewidth=0.8, zorder=1)
        self.model_boxes = BoxGroup(ax, edgecolor="black", linewidth=0.8, zorder=3)
        self.stage_bounds: list = []
        self.stripes = ax.add_collection(LineCollection([], colors="white", linewidths=0.8, zorder=4))
        self.node_cuts = ax.add_collection(
            LineCollection([], colors=LINK_COLORS["InfiniBand"], linewidths=2.2, zorder=5)
        )
        self.gap = FastText(ax, (0, 31), "⋯", size=14, ha="center", va="center")
        self.end_labels = FastTextGroup(ax, size=8, ha="center", va="center", color="white", weight="bold")
        self.stage_labels = FastTextGroup(ax, size=8, ha="center", va="top")
        self.device_labels = FastTextGroup(ax, size=8, ha="center", va="top", color="#444444")
        self.hops = FastTextGroup(ax, size=10, ha="center", va="center", color=AXIS_COLORS["pipeline"], weight="bold")
        self.markers = ax.add_line(
            Line2D(
                [],
                [],
                linestyle="none",
                marker="o",
                markersize=13,
                markerfacecolor="white",
                markeredgewidth=1.5,
                zorder=6,
            )
        )
        self.sequence_cuts = ax.add_collection(
            LineCollection([], colors="#333333", linewidths=0.7, linestyles=(0, (2, 2)), zorder=4)
        )
        self.sequence_cells = BoxGroup(ax, edgecolor="white", linewidth=0.6, zorder=3)
        self.sequence_numbers = FastTextGroup(ax, size=8, ha="center", va="center", zorder=4)
        self.sequence_label = FastText(
            ax, (84.0, 50.3), size=8, ha="right", va="center", color=PLAN_AXIS_COLORS["context"]
        )
        self.expert_cells = BoxGroup(ax, edgecolor="white", linewidth=0.6, zorder=3)
        self.expert_numbers = FastTextGroup(ax, size=8, ha="center", va="center", zorder=4)
        self.expert_cuts = ax.add_collection(
            LineCollection([], colors=LINK_COLORS["InfiniBand"], linewidths=2.2, zorder=5)
        )
        self.expert_bracket = ax.add_collection(LineCollection([], linewidths=1.4, zorder=4))
        self.expert_title = FastText(ax, (67, 11.5), size=8, va="center", color=PLAN_AXIS_COLORS["expert"])
        self.expert_label = FastText(ax, (57.5, 1.9), size=8, va="center")
        self.marker_colors = {
            axis: ax.add_line(
                Line2D(
                    [],
                    [],
                    linestyle="none",
                    marker="o",
                    markersize=13,
                    markerfacecolor="white",
                    markeredgecolor=color,
                    markeredgewidth=1.5,
                    zorder=6,
                )
            )
            for axis, color in PLAN_AXIS_COLORS.items()
            if axis != "zero"
        }
        self.marker_numbers = FastTextGroup(ax, size=8, ha="center", va="center", weight="bold", zorder=7)
        self.tensor_label = FastText(ax, (0, 9), size=8, color=AXIS_COLORS["tensor"])
        self.data_label = FastText(ax, (0, 5), size=8, color=AXIS_COLORS["data"])
        self.zero_label = FastText(ax, (0, 1), size=8, color=AXIS_COLORS["zero"])
        anim += [
            self.replicas,
            self.model_boxes,
            self.stripes,
            self.node_cuts,
            self.gap,
            self.end_labels,
            self.stage_labels,
            self.device_labels,
            self.hops,
            self.sequence_cuts,
            self.sequence_cells,
            self.sequence_numbers,
            self.sequence_label,
            self.expert_cells,
            self.expert_numbers,
            self.expert_cuts,
            self.expert_bracket,
            self.expert_title,
            self.expert_label,
            *self.marker_colors.values(),
            self.marker_numbers,
            self.tensor_label,
            self.data_label,
            self.zero_label,
        ]

    def _build_table(self):
        ax = self.table_ax
        ax.set_xlim(0, 1)
        ax.set_ylim(FULL_SPACING_ROWS + 0.5, -1.5)
        ax.set_axis_off()
        for header, x, ha in _COLUMNS:
            ax.text(x, -1.0, header, ha=ha, va="center", fontsize=8, fontweight="bold")
        ax.plot([0, 1], [-0.5, -0.5], color="#888888", linewidth=0.6)
        # the table's strings, column by column; drawn as four groups (left-aligned, right-aligned, each link)
        self.columns: list = [[] for _ in _COLUMNS]
        self.table_left = FastTextGroup(ax, size=8, ha="left", va="center")
        self.table_right = FastTextGroup(ax, size=8, ha="right", va="center")
        self.nvlink_rows = FastTextGroup(ax, size=8, ha="left", va="center", color=LINK_COLORS["NVLink"])
        self.network_rows = FastTextGroup(
            ax, size=8, ha="left", va="center", color=LINK_COLORS["InfiniBand"], weight="bold"
        )
        self.table_note = FastText(ax, (0, MAX_ROWS), size=8, va="center", color="#444444")
        self._animated += [self.table_left, self.table_right, self.nvlink_rows, self.network_rows, self.table_note]

    def _build_bars(self):
        # Each bar's key is a list under it: a swatch, a name and the value (animated) per component or term, zeros
        # included (a component a plan lacks reads 0 B, where a legend would promise a colour that is not drawn).
        ax = self.memory_ax
        ax.set_xlim(0, 2)
        ax.set_ylim(-0.5, 0.5)
        ax.set_yticks([])
        ax.set_xticks([0, 0.5, 1, 1.5, 2], ["0", "½", "capacity", "1½", "2×"], fontsize=8)
        ax.axvline(1, color=COLORS["capacity"], linestyle="--", linewidth=1.2, zorder=4)
        below = 1 / (1 + self.memory_margin)  # static: a band redrawn on every update costs the lab ~8 ms (hatching)
        self.margin_zone = ax.add_patch(
            Rectangle((below, -0.5), 1 - below, 1, **MARGIN_STYLE, zorder=1, gid="memory-margin")
        )
        ax.set_title("memory per device (first stage)", fontsize=9, loc="left", pad=16)
        self.memory_segments = BoxGroup(ax, edgecolor="white", zorder=2)  # one box per component, in order
        self._key_rows(ax, [(name, COLORS[c]) for c, name in MEMORY_COMPONENTS.items()])
        y = _key_y(len(MEMORY_COMPONENTS))  # the margin's row: a hatched swatch like the band
        ax.add_patch(Rectangle((0.0, y - 0.1), 0.04, 0.2, transform=ax.transAxes, clip_on=False, **MARGIN_STYLE))
        ax.text(0.07, y, "fits with the margin?", fontsize=8, va="center", transform=ax.transAxes)
        self.memory_values = FastTextGroup(ax, size=8, ha="right", va="center", transform=ax.transAxes)
        self.memory_text = FastText(ax, (0, 1), size=8, transform=ax.transAxes, va="bottom", offset=(0, 3))
        ax = self.step_ax
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.5, 0.5)
        ax.set_yticks([])
        ax.set_xticks([0, 0.25, 0.5, 0.75, 1], ["0", "25 %", "50 %", "75 %", "100 %"], fontsize=8)
        ax.set_title("where the step's time goes", fontsize=9, loc="left", pad=16)
        self.step_segments = BoxGroup(ax, edgecolor="white", zorder=2)  # one box per STEP_SEGMENTS term
        self._key_rows(ax, [(label, color) for label, color, _ in STEP_SEGMENTS[:KEYED_SEGMENTS]])
        self.step_values = FastTextGroup(self.step_ax, size=8, ha="right", va="center", transform=ax.transAxes)
        self.step_text = FastText(ax, (0, 1), size=8, transform=ax.transAxes, va="bottom", offset=(0, 3))
        # the context and expert segments, named above the bar in their colours (no room for key rows under it)
        self.step_extra = [
            FastText(ax, (x, 1), size=8, ha="right", color=color, transform=ax.transAxes, va="bottom", offset=(0, 3))
            for x, (_, color, _) in zip((0.68, 1.0), STEP_SEGMENTS[KEYED_SEGMENTS:], strict=True)
        ]
        self._animated += [
            self.memory_segments,
            self.memory_values,
            self.memory_text,
            self.step_segments,
            self.step_values,
            self.step_text,
            *self.step_extra,
        ]

    @staticmethod
    def _key_rows(ax, entries):
        """A key under ``ax``'s tick labels: a swatch and a name per row (``_key_y``), the value right-aligned."""
        for row, (label, color) in enumerate(entries):
            y = _key_y(row)
            ax.add_patch(Rectangle((0.0, y - 0.1), 0.04, 0.2, facecolor=color, transform=ax.transAxes, clip_on=False))
            ax.text(0.07, y, label, fontsize=8, va="center", transform=ax.transAxes)

    # ---- update ---------------------------------------------------------------------------------------------------

    def update(self, report: PartitionReport) -> None:
        """Show ``report``, a ``budget.PartitionReport``."""
        if not isinstance(report, PartitionReport):
            raise ValueError(f"report must be a budget.PartitionReport, got a {type(report).__name__}")
        self._update_diagram(report)
        self._update_table(report)
        self._update_bars(report)

    def _update_diagram(self, r: PartitionReport):
        t, p, d, _, _, v = r.plan.sizes
        c, e = r.plan.context_parallel, r.plan.expert_parallel
        cluster = r.cluster
        g = cluster.devices_per_node
        split = f"d·t·p = {d}·{t}·{p}" if c == e == 1 else f"d·c·t·p = {d}·{c}·{t}·{p}"
        experts = f", e = {e} of d·c" if e > 1 else ""
        self.title.set_text(
            f"{r.model.name}: {split} = {r.plan.devices}{experts} of {cluster.devices} {cluster.accelerator.name} "
            f"({cluster.nodes} nodes of {g})"
        )
        self.subtitle.set_text(
            f"step {units.format_time(r.step.total_s)} · {units.format_count(r.tokens_per_s)} tokens/s · "
            f"MFU {units.format_percent(r.step.mfu)} · binding: {r.binding_constraint}"
            + (f" · as {r.framework.name.split(' (')[0]} runs it" if r.framework is not None else "")
            + (" · the ideal model: the framework does not run this plan" if r.not_run else "")
        )
        stages = drawn_stages(p)
        left, right, y, height = 9.0, 91.0, 24.0, 14.0
        slot = (right - left) / len(stages)
        width = slot * 0.82
        per_stage = r.model.layers // p
        # A stage on several nodes is labelled "10–11" under a row name "nodes" (left, under the embedding): eight
        # labels "nodes 10–11" would run into each other.
        spans_nodes = t > g and len(stages) > 4
        stripes, cuts, labels, devices, hops = [], [], [], [], []
        if spans_nodes:
            devices.append(((3.5, y - 7.8), "nodes"))
        boxes = [(0, y, 7, height, STAGE_COLORS[0]), (93, y, 7, height, STAGE_COLORS[(p - 1) % len(STAGE_COLORS)])]
        for index, stage in enumerate(stages):
            if stage is None:
                continue
            x = left + index * slot + (slot - width) / 2
            boxes.append((x, y, width, height, STAGE_COLORS[stage % len(STAGE_COLORS)]))
            shown = min(t, MAX_STRIPES)
            stripes += [[(x + width * k / shown, y), (x + width * k / shown, y + height)] for k in range(1, shown)]
            if t > g:  # a tensor group spans nodes: mark each node boundary inside the block
                cuts += [
                    [(x + width * k * g / t, y - 1), (x + width * k * g / t, y + height + 1)] for k in range(1, t // g)
                ]
            first_layer = stage * per_stage + 1
            layer_text = f"L{first_layer}–{first_layer + per_stage - 1}" if v == 1 else f"{v} chunks"
            labels.append(((x + width / 2, y - 0.8), f"stage {stage + 1}" if len(stages) <= 5 else f"{stage + 1}"))
            labels.append(((x + width / 2, y - 4.3), layer_text if len(stages) <= 5 else ""))
            first_rank = stage * t * d * c  # pipeline stages are outermost, at stride t·c·d
            devices.append(((x + width / 2, y - 7.8), _node_span(first_rank, t, g, named=not spans_nodes)))
            if index + 1 < len(stages):
                hops.append(((x + width + (slot - width) / 2, y + height / 2), "⇄"))
        gap = stages.index(None) if None in stages else None
        self.gap.set_visible(gap is not None)
        if gap is not None:
            self.gap.set_position((left + gap * slot + slot / 2, y + height / 2))
        self.model_boxes.set_boxes(boxes)
        self.stage_bounds = [box[:4] for box in boxes[2:]]
        self._update_sequence(r, boxes)
        self._update_experts(r)
        self.stripes.set_segments(stripes)
        self.node_cuts.set_segments(cuts)
        self.stage_labels.set_texts(labels)
        self.device_labels.set_texts(devices)
        self.hops.set_texts(hops)
        self.end_labels.set_texts([((3.5, y + height / 2), "emb"), ((96.5, y + height / 2), "head")])
        shifts = [1.6 * (k + 1) for k in range(min(d - 1, MAX_REPLICAS_DRAWN))]
        self.replicas.set_boxes([(s, y + s, 100 - s, height, "#EEEEEE") for s in reversed(shifts)])
        # the markers: TP inside the first stage, PP on its first hop, DP between the replicas (top right)
        first_x = left + (slot - width) / 2
        places = {
            "tensor": [(first_x + width * 0.5 + 4.5 * (k - 0.5), y + height + 3.5) for k in range(4)],
            "pipeline": [(first_x + width + (slot - width) / 2 + dx, y + height + 8.5) for dx in (-2.2, 2.2)],
            "data": [(95.5 - 4.5 * k, y + height + 8.5) for k in range(3)],
            "expert data": [(95.5 - 4.5 * k, y + height + 3.5) for k in range(3)],
            "context": [(56.0 + 3.0 * k, y + height + 8.5) for k in range(4)],  # left of the sequence's halves
            "expert": [(58.5, 10.2), (62.9, 10.2), (58.5, 5.6), (62.9, 5.6)],
        }
        numbers, positions = [], {axis: [] for axis in self.marker_colors}
        used = {axis: 0 for axis in self.marker_colors}
        for number, timed in enumerate(_listed(r.transfers), start=1):
            axis = timed.transfer.axis
            xy = places[axis][min(used[axis], len(places[axis]) - 1)]
            used[axis] += 1
            positions[axis].append(xy)
            numbers.append((xy, str(number)))
        for axis, line in self.marker_colors.items():
            line.set_data([xy[0] for xy in positions[axis]], [xy[1] for xy in positions[axis]])
        self.marker_numbers.set_texts(numbers)
        if t == 1:
            tensor_text = "t = 1: each block whole on one GPU, no tensor-parallel traffic"
        elif t > g:
            tensor_text = f"t = {t} tensor-parallel slices per stage ({t // g} nodes: the red line)"
        else:
            tensor_text = f"t = {t} tensor-parallel slices per stage, inside one node ({r.tensor_link})"
        self.tensor_label.set_text(tensor_text)
        self.data_label.set_text(
            f"× d = {d} data-parallel replicas (copies behind, {min(d - 1, MAX_REPLICAS_DRAWN)} drawn)"
            if d > 1
            else "d = 1: one replica, no data-parallel traffic"
        )
        zero = r.plan.zero_stage
        sharded = ("nothing", "optimizer state", "optimizer state and gradients", "parameters, gradients, optimizer")
        self.zero_label.set_text(
            f"ZeRO-{zero}: {sharded[zero]} split into d = {d} shards" if zero and d > 1 else f"ZeRO-{zero}: no shards"
        )

    def _update_sequence(self, r: PartitionReport, boxes) -> None:
        """The sequence split: each box of the model cut in c bands (a device holds s/c of every sequence's tokens),
        and above it the sequence's 2c zig-zag halves (ring, all-gather) or c chunks (all-to-all), coloured by the
        rank that holds them."""
        c, kind = r.plan.context_parallel, r.plan.context_parallel_kind
        cuts, cells, numbers, label = [], [], [], ""
        if c > 1:
            bands = min(c, MAX_STRIPES)
            for x, y, width, height, _ in boxes[2:]:  # the stages (the embedding and head keep their names legible)
                cuts += [[(x, y + height * k / bands), (x + width, y + height * k / bands)] for k in range(1, bands)]
            ranks = sequence_halves(c, kind)
            left, right, bottom, tall = 67.0, 84.0, 44.8, 3.4
            cell = (right - left) / len(ranks)
            for k, rank in enumerate(ranks):
                cells.append((left + k * cell, bottom, cell, tall, RANK_COLORS[rank % len(RANK_COLORS)]))
                if len(ranks) <= 8:
                    numbers.append(((left + (k + 0.5) * cell, bottom + tall / 2), str(rank)))
            s = units.format_count(r.model.seq_len)
            label = f"s = {s}, zig-zag halves" if len(ranks) == 2 * c else f"s = {s}, one chunk per rank"
        self.sequence_cuts.set_segments(cuts)
        self.sequence_cells.set_boxes(cells)
        self.sequence_numbers.set_texts(numbers)
        self.sequence_label.set_text(label)

    def _update_experts(self, r: PartitionReport) -> None:
        """One MoE layer's E experts coloured by the expert-parallel rank that holds them, a red line where the e
        ranks change node, and a bracket under them in the colour of the link their all-to-all runs on."""
        experts, e, g = r.model.experts, r.plan.expert_parallel, r.cluster.devices_per_node
        cells, numbers, cuts, bracket, title, label = [], [], [], [], "", ""
        link = next((x.link.family for x in r.transfers if x.transfer.axis == "expert"), "none")
        if experts > 1:
            held = expert_ranks(experts, e, r.plan.tensor_parallel, g)
            left, right, bottom, tall = 67.0, 99.0, 6.3, 3.6
            width = (right - left) / len(held)
            for j, (rank, node) in enumerate(held):
                cells.append((left + j * width, bottom, width, tall, RANK_COLORS[rank % len(RANK_COLORS)]))
                if j and node != held[j - 1][1]:
                    cuts.append([(left + j * width, bottom - 1.4), (left + j * width, bottom + tall + 0.3)])
            per_rank = (right - left) / e
            if e <= 16:
                numbers = [((left + (k + 0.5) * per_rank, bottom + tall / 2), str(k)) for k in range(e)]
            title = f"E = {experts} experts of a MoE layer, by rank"
            if e > 1:
                ticks = [left + (k + 0.5) * per_rank for k in range(e)]
                under = bottom - 0.9  # under the experts: the title sits over them
                bracket = [[(ticks[0], under), (ticks[-1], under)]] + [[(x, under), (x, bottom)] for x in ticks]
                nodes = _node_span(0, (e - 1) * r.plan.tensor_parallel + 1, g)
                label = f"e = {e} ranks on {nodes}: all-to-all on {link}"
            else:
                label = f"e = 1: every device holds all {experts} experts"
        self.expert_cells.set_boxes(cells)
        self.expert_numbers.set_texts(numbers)
        self.expert_cuts.set_segments(cuts)
        self.expert_bracket.set_segments(bracket)
        self.expert_bracket.set_color(LINK_COLORS.get(link, "#888888"))
        self.expert_title.set_text(title)
        self.expert_label.set_text(label)
        self.expert_label.set_color(LINK_COLORS.get(link, "#444444"))

    def _update_table(self, r: PartitionReport):
        transfers = _listed(r.transfers)
        rows = [transfer_row(number, x) for number, x in enumerate(transfers, start=1)]
        self.columns = [[row[column] for row in rows] for column in range(len(_COLUMNS))]
        placed = {"left": [], "right": []}
        spacing = min(1.0, FULL_SPACING_ROWS / max(len(rows), 1))  # past 10 rows, closer together
        for column, (_, x, ha) in enumerate(_COLUMNS):
            if column != 6:
                placed[ha] += [((x, k * spacing), row[column]) for k, row in enumerate(rows)]
        self.table_left.set_texts(placed["left"])
        self.table_right.set_texts(placed["right"])
        link_x = _COLUMNS[6][1]
        links = [((link_x, k * spacing), row[6]) for k, row in enumerate(rows)]
        self.nvlink_rows.set_texts([(xy, link) for xy, link in links if link != "InfiniBand"])
        self.network_rows.set_texts([(xy, link) for xy, link in links if link == "InfiniBand"])
        every = sum(x.time_s for x in r.transfers)
        hidden = every - sum(x.exposed_s for x in r.transfers)
        more = len(r.transfers) - len(rows)
        self.table_note.set_position((0, len(rows) * spacing + 0.3))
        self.table_note.set_text(
            f"hidden behind compute: {units.format_time(hidden)} of {units.format_time(every)}"
            + (f" ({more} more rows not listed)" if more else "")
            if transfers
            else "no tensor crosses a device boundary: one device holds everything"
        )

    def _update_bars(self, r: PartitionReport):
        capacity = r.capacity_bytes
        start, boxes = 0.0, []
        for component in MEMORY_COMPONENTS:
            share = getattr(r.memory, component) / capacity
            boxes.append((min(start, 2.0), -0.35, max(0.0, min(share, 2.0 - start)), 0.7, COLORS[component]))
            start += share
        self.memory_segments.set_boxes(boxes)
        margin = r.memory_margin
        if margin != self.memory_margin:
            raise ValueError(
                f"report's memory_margin must be the figure's {self.memory_margin} (its band is drawn once), "
                f"got {margin}"
            )
        with_margin = units.format_bytes(r.memory.total * (1 + margin))
        self.memory_values.set_texts(
            [((1.0, _key_y(row)), units.format_bytes(getattr(r.memory, c))) for row, c in enumerate(MEMORY_COMPONENTS)]
            + [((1.0, _key_y(len(MEMORY_COMPONENTS))), f"{'yes' if r.fits_with_margin else 'no'}: {with_margin}")]
        )
        verdict = "fits" if r.fits else "does not fit"
        self.memory_text.set_text(f"{units.format_bytes(r.memory.total)} of {units.format_bytes(capacity)}: {verdict}")
        total = r.step.total_s
        start, values, boxes = 0.0, [], []
        for row, (_label, color, seconds_of) in enumerate(STEP_SEGMENTS):
            seconds = seconds_of(r.step)
            share = seconds / total
            boxes.append((start, -0.35, share, 0.7, color))
            start += share
            values.append(((1.0, _key_y(row)), units.format_time(seconds)))
        self.step_segments.set_boxes(boxes)
        self.step_values.set_texts(values[:KEYED_SEGMENTS])
        self.step_text.set_text(f"step {units.format_time(total)}")
        for text, (_, _, seconds_of), axis in zip(
            self.step_extra, STEP_SEGMENTS[KEYED_SEGMENTS:], ("context", "expert"), strict=True
        ):
            used = axis in r.step.exposed_s
            text.set_text(f"{_AXIS_SHORT[axis]} {units.format_time(seconds_of(r.step))}" if used else "")


def _listed(transfers) -> tuple:
    """The transfers the table lists (and the diagram numbers): the first ``MAX_ROWS``."""
    return transfers[:MAX_ROWS]


def figure_texts(live: PartitionFigure) -> list:
    """Every string the figure shows in its animated artists (for tests)."""
    texts = []
    for artist in live.animated:
        if hasattr(artist, "get_texts"):
            texts += artist.get_texts()
        elif hasattr(artist, "get_text") and artist.get_visible():
            texts.append(artist.get_text())
    return texts
