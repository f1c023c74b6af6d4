"""Lab 7 · long sequences and many experts: memory against the sequence length with context parallelism, a MoE
layer's all-to-alls inside and across nodes, and a zero-bubble pipeline schedule against 1F1B.

The plan: d = 8 data-parallel ranks (ZeRO-1), t, p, c (ring, all-gather or all-to-all) and e from the controls, one
sequence per micro-batch, m micro-batches, FlashAttention, sequence parallelism with t > 1, no recomputation, on DGX
H100 nodes.
Every number comes from course_lib:

- memory per device: ``parallelism.memory_breakdown`` (the calibrated model, Megatron-LM's recipe; the 1F1B activations
  a ZB-H1 stage also holds, a micro-batch waiting for its W with only W's inputs) at every sequence length of the
  slider, for c = 1 and the chosen c, against the H100's 80 GB and the calibration's memory margin
  (``REFERENCE_CALIBRATION.memory_margin``);
- one MoE layer of one micro-batch on one rank (s/c tokens): ``budget.moe_layer_times`` with the e ranks side by
  side (stride 1, one node) and one per node (stride 8, across nodes), beside the experts' compute;
- the bubble: ``pipeline.pipeline_schedule`` of the chosen schedule and of 1F1B for (p, m), t_F = t_B = t_W.

``compute`` returns a ``SequencesResult`` (the lab's own frozen result, holding those results as they come), which
alone the figure and the summary read; ``lab.result`` is its plain dict. Every position of every control is valid:
c takes only values that split the heads (all-to-all) and the sequence, e only divisors of the experts (1 for a
dense model), m only counts the schedule runs with (ZB-H2 needs m ≥ 2p − 1).

>>> from course_lib import units
>>> lab = sequences_lab()
>>> lab.result["model"], units.format_bytes(lab.result["memory_bytes_per_device"]), lab.result["fits"]
('Mixtral 8x7B', '55.5 GB', True)
>>> lab.controls["model"].value = "Llama 3.1 8B"
>>> lab.controls["expert_parallel"].options
(('1', 1),)
"""

from __future__ import annotations

import dataclasses
import functools

from matplotlib.figure import Figure

from .. import _check, budget, hardware, parallelism, pipeline, units
from ..budget.experts import MoeLayerTimes
from ..pipeline import PipelineTimeline
from ..viz.fast import Panel, PartialRedraw
from ..viz.sequences import BubbleFigure, MoeLayerFigure, SequenceMemoryFigure
from ..viz.style import COLORS, FIT_COLOR
from ._base import ControlSpec, Lab, control_defaults

__all__ = [
    "SequencesLab",
    "SequencesResult",
    "sequences_lab",
    "CONTROLS",
    "DEFAULTS",
    "MODELS",
    "SEQ_LENS",
    "CLUSTER",
    "DATA_PARALLEL",
    "MEMORY_MARGIN",
    "PLACEMENTS",
    "lab_plan",
]

MODELS = {
    model.name: model
    for model in (parallelism.LLAMA3_8B, parallelism.LLAMA3_70B, parallelism.MIXTRAL_8X7B, parallelism.MIXTRAL_8X22B)
}
SEQ_LENS = tuple(4096 * 2**k for k in range(9))  # 4k … 1M tokens
TENSOR_PARALLEL = (1, 2, 4, 8)
CONTEXT_PARALLEL = (1, 2, 4, 8, 16)
PIPELINE_PARALLEL = (1, 2, 4, 8)  # each divides the layers of every model here (32, 80, 56)
MICROBATCHES = (8, 16, 32)
SCHEDULES = ("1f1b", "zb-h1", "zb-h2")
PLACEMENTS = {"one node": 1, "across nodes": 8}  # the expert group's stride: side by side, or one rank per node
DATA_PARALLEL = 8  # every e here divides d·c
CLUSTER = dataclasses.replace(hardware.DGX_H100, nodes=8, name="8 × DGX H100")
MEMORY_MARGIN = parallelism.REFERENCE_CALIBRATION.memory_margin
MOE_EFFICIENCY = 0.5  # the experts' GEMMs at half of the bf16 peak (budget.moe_layer_times' default)


def lab_plan(values: dict) -> parallelism.ParallelPlan:
    """The ``ParallelPlan`` the controls describe (schedule "1f1b": the memory of a ZB-H1 stage is 1F1B's).

    >>> lab_plan(DEFAULTS).sizes, lab_plan(DEFAULTS).expert_parallel
    ((1, 4, 8, 1, 8, 1), 8)
    """
    t = values["tensor_parallel"]
    return parallelism.ParallelPlan(
        data_parallel=DATA_PARALLEL,
        tensor_parallel=t,
        pipeline_parallel=values["pipeline_parallel"],
        zero_stage=1,
        micro_batch=1,
        grad_accum_steps=values["microbatches"],
        sequence_parallel=t > 1,
        attention="flash",
        context_parallel=values["context_parallel"],
        context_parallel_kind=values["context_parallel_kind"],
        expert_parallel=values["expert_parallel"],
    )


@functools.lru_cache(maxsize=64)
def _at_length(name: str, seq_len: int) -> parallelism.TransformerModel:
    """The model ``name`` trained on sequences of ``seq_len`` tokens (one object per pair: its cached properties
    are computed once)."""
    return dataclasses.replace(MODELS[name], seq_len=seq_len)


@functools.lru_cache(maxsize=256)
def _memory_curve(name: str, plan: tuple) -> tuple:
    """Total bytes per device at every length of ``SEQ_LENS`` for the plan of the controls ``plan`` (sorted items);
    cached, so moving the sequence slider costs nothing."""
    values = dict(plan)
    return tuple(float(parallelism.memory_breakdown(_at_length(name, s), lab_plan(values)).total) for s in SEQ_LENS)


@functools.lru_cache(maxsize=128)
def _timeline(stages: int, microbatches: int, schedule: str) -> PipelineTimeline:
    """``pipeline.pipeline_schedule`` of (p, m, schedule), t_F = t_B = t_W = 1 (simulated once per process)."""
    return pipeline.pipeline_schedule(stages, microbatches, schedule)


def _context_options(values: dict) -> tuple:
    model, t, kind = MODELS[values["model"]], values["tensor_parallel"], values["context_parallel_kind"]
    return tuple(
        c for c in CONTEXT_PARALLEL if parallelism.splits_context_and_experts(model, t, c, kind, expert_parallel=1)
    )


def _expert_options(values: dict) -> tuple:
    experts = MODELS[values["model"]].experts
    return tuple(e for e in (1, 2, 4, 8) if experts > 1 and experts % e == 0) or (1,)


def _microbatch_options(values: dict) -> tuple:
    p, schedule = values["pipeline_parallel"], values["schedule"]
    fewest = pipeline.zero_bubble_min_microbatches(p, schedule) if schedule != "1f1b" else 1
    return tuple(m for m in MICROBATCHES if m >= fewest)


def _tokens(n) -> str:
    return f"{units.format_seq_len(n)} tokens"


# Mixtral 8x7B at 32k tokens, t = 1, c = 8 (ring), e = 8 in one node, p = 4 with ZB-H1 and 8 micro-batches.
CONTROLS = (
    ControlSpec("model", "model", tuple(MODELS), parallelism.MIXTRAL_8X7B.name, kind="dropdown"),
    ControlSpec("seq_len", "sequence length s", SEQ_LENS, 32768, _tokens),
    ControlSpec("tensor_parallel", "tensor parallel t", TENSOR_PARALLEL, 1),
    ControlSpec(
        "context_parallel_kind", "context parallel kind", parallelism.CONTEXT_PARALLEL_KINDS, "ring", kind="buttons"
    ),
    ControlSpec(
        "context_parallel",
        "context parallel c",
        _context_options,
        8,
        depends_on=("model", "tensor_parallel", "context_parallel_kind"),
    ),
    ControlSpec("expert_parallel", "expert parallel e", _expert_options, 8, depends_on=("model",)),
    ControlSpec("expert_placement", "e ranks sit", tuple(PLACEMENTS), "one node", kind="buttons"),
    ControlSpec("pipeline_parallel", "pipeline parallel p", PIPELINE_PARALLEL, 4),
    ControlSpec("schedule", "schedule", SCHEDULES, "zb-h1", kind="buttons"),
    ControlSpec(
        "microbatches", "micro-batches m", _microbatch_options, 8, depends_on=("pipeline_parallel", "schedule")
    ),
)
DEFAULTS = control_defaults(CONTROLS)
_PLAN_CONTROLS = tuple(name for name in DEFAULTS if name not in ("model", "seq_len", "expert_placement", "schedule"))


@dataclasses.dataclass(frozen=True, eq=False)
class SequencesResult:
    """What lab 7 shows for one position of its controls: the ``model`` (at the chosen sequence length) and ``plan``;
    ``seq_lens`` and the total memory per device at each, ``memory_without_c`` (c = 1) and ``memory_with_c``;
    ``memory``, the ``parallelism.MemoryBreakdown`` at the chosen length; the MoE layer with the e ranks in one
    node and across nodes (``budget.MoeLayerTimes``, None for a dense model or e = 1) and the chosen
    ``expert_placement``; the ``one_f_one_b`` and chosen ``timeline`` (``pipeline.PipelineTimeline``)."""

    model: parallelism.TransformerModel
    plan: parallelism.ParallelPlan
    seq_lens: tuple
    memory_without_c: tuple
    memory_with_c: tuple
    memory: parallelism.MemoryBreakdown
    moe_inside: MoeLayerTimes | None
    moe_across: MoeLayerTimes | None
    expert_placement: str
    one_f_one_b: PipelineTimeline
    timeline: PipelineTimeline

    def __post_init__(self):
        if not (len(self.seq_lens) == len(self.memory_without_c) == len(self.memory_with_c)):
            raise ValueError("seq_lens, memory_without_c and memory_with_c must have one entry per length")
        _check.choice("expert_placement", self.expert_placement, tuple(PLACEMENTS))
        if (self.moe_inside is None) != (self.moe_across is None):
            raise ValueError("moe_inside and moe_across must both be MoeLayerTimes or both None")
        if (self.one_f_one_b.stages, self.one_f_one_b.microbatches) != (
            self.timeline.stages,
            self.timeline.microbatches,
        ):
            raise ValueError("one_f_one_b and timeline must simulate the same p and m")

    @property
    def capacity_bytes(self) -> float:
        return float(CLUSTER.accelerator.hbm_capacity_bytes)

    @property
    def fits(self) -> bool:
        return bool(float(self.memory.total) <= self.capacity_bytes)

    @property
    def fits_with_margin(self) -> bool:
        return bool(float(self.memory.total) * (1 + MEMORY_MARGIN) <= self.capacity_bytes)

    def longest_fitting(self, totals) -> int | None:
        """The longest of ``seq_lens`` whose total in ``totals`` fits the HBM (None if none does)."""
        fitting = [s for s, total in zip(self.seq_lens, totals, strict=True) if total <= self.capacity_bytes]
        return max(fitting) if fitting else None

    @property
    def moe_chosen(self) -> MoeLayerTimes | None:
        """The MoE layer with the e ranks where the placement control puts them."""
        return self.moe_inside if self.expert_placement == "one node" else self.moe_across


class SequencesLab(Lab):
    """Long sequences and many experts (see the module docstring)."""

    CONTROLS = CONTROLS

    def __init__(self, **initial):
        controls = self.build_controls(self.start_values(initial))
        self._build_figure()
        super().__init__("Lab 7 · Long sequences and many experts", controls, self.figure)

    def compute(self, values: dict) -> SequencesResult:
        """The memory curves, the MoE layer and the two pipeline timelines for the controls' ``values``."""
        name, s = values["model"], values["seq_len"]
        model, plan = _at_length(name, s), lab_plan(values)
        key = tuple(sorted((k, values[k]) for k in _PLAN_CONTROLS))
        alone = tuple(sorted({**dict(key), "context_parallel": 1}.items()))
        inside = across = None
        if model.experts > 1 and plan.expert_parallel > 1:
            tokens, t, e = s / plan.context_parallel, plan.tensor_parallel, plan.expert_parallel
            inside, across = (
                budget.moe_layer_times(model, CLUSTER, e, tokens, stride, t, MOE_EFFICIENCY)
                for stride in PLACEMENTS.values()
            )
        p, m = plan.pipeline_parallel, plan.grad_accum_steps
        return SequencesResult(
            model,
            plan,
            SEQ_LENS,
            _memory_curve(name, alone),
            _memory_curve(name, key),
            parallelism.memory_breakdown(model, plan),
            inside,
            across,
            values["expert_placement"],
            _timeline(p, m, "1f1b"),
            _timeline(p, m, values["schedule"]),
        )

    def result_dict(self, r: SequencesResult) -> dict:
        """``result``: plain numbers and names."""
        plan, chosen = r.plan, r.moe_chosen
        return {
            "model": r.model.name,
            "seq_len": int(r.model.seq_len),
            "tensor_parallel": int(plan.tensor_parallel),
            "context_parallel": int(plan.context_parallel),
            "context_parallel_kind": plan.context_parallel_kind,
            "expert_parallel": int(plan.expert_parallel),
            "expert_placement": r.expert_placement,
            "pipeline_parallel": int(plan.pipeline_parallel),
            "microbatches": int(plan.grad_accum_steps),
            "schedule": r.timeline.schedule,
            "devices": int(plan.devices),
            "memory_bytes_per_device": float(r.memory.total),
            "activations_bytes": float(r.memory.activations),
            "capacity_bytes": r.capacity_bytes,
            "fits": r.fits,
            "memory_margin": MEMORY_MARGIN,
            "fits_with_margin": r.fits_with_margin,
            "longest_fitting_seq_len": r.longest_fitting(r.memory_with_c) or 0,
            "longest_fitting_seq_len_without_c": r.longest_fitting(r.memory_without_c) or 0,
            "all_to_all_inside_s": r.moe_inside.all_to_all_s if r.moe_inside else 0.0,
            "all_to_all_across_s": r.moe_across.all_to_all_s if r.moe_across else 0.0,
            "all_to_all_s": chosen.all_to_all_s if chosen else 0.0,
            "expert_compute_s": chosen.expert_compute_s if chosen else 0.0,
            "bubble_fraction": float(r.timeline.bubble_fraction),
            "bubble_fraction_1f1b": float(r.one_f_one_b.bubble_fraction),
            "unsynchronised_bubble_fraction": float(r.timeline.unsynchronised_bubble_fraction),
        }

    def _build_figure(self) -> None:
        figure = Figure(figsize=(11.5, 4.0), dpi=self.dpi)
        figure.patch.set_facecolor("white")
        self.figure = figure
        capacity = float(CLUSTER.accelerator.hbm_capacity_bytes)
        self.memory_figure = SequenceMemoryFigure(
            figure.add_axes((0.085, 0.14, 0.275, 0.74)), capacity, MEMORY_MARGIN, SEQ_LENS
        )
        self.moe_figure = MoeLayerFigure(figure.add_axes((0.53, 0.14, 0.22, 0.74)), snap=True)
        self.bubble_figure = BubbleFigure(figure.add_axes((0.81, 0.3, 0.17, 0.58)))

    def draw(self, r: SequencesResult) -> None:
        self.memory_figure.update(
            (r.seq_lens, r.memory_without_c, r.memory_with_c, int(r.plan.context_parallel), int(r.model.seq_len))
        )
        self.moe_figure.update(None if r.moe_inside is None else (r.moe_inside, r.moe_across, r.expert_placement))
        self.bubble_figure.update((r.one_f_one_b, r.timeline))

    def render(self) -> None:
        """Draw the animated artists over cached pictures: the memory and bubble panels never change their axes; the
        MoE panel's picture is kept per x limit (1, 2 or 5 × 10^k), built from a picture of each axis."""
        limit = float(self.moe_figure.ax.get_xlim()[1])
        if self._redraw is None:
            ax = self.moe_figure.ax
            panels = [
                Panel((0.0, 0.37), (self.memory_figure.ax,), lambda _e: None, lambda _e: None, (None,)),
                Panel((0.37, 0.79), (ax,), lambda e: e, lambda e: ax.set_xlim(0, e), (limit,), layered=True),
                Panel((0.79, 1.0), (self.bubble_figure.ax,), lambda _e: None, lambda _e: None, (None,)),
            ]
            animated = [*self.memory_figure.animated, *self.moe_figure.animated, *self.bubble_figure.animated]
            self._redraw = PartialRedraw(type(self).__qualname__, self.figure, animated, panels)
        self._redraw.set_static_state(limit)
        super().render()

    def summary_html(self, r: SequencesResult) -> str:
        b, s = units.format_bytes, units.format_time
        plan, total = r.plan, float(r.memory.total)
        if r.fits_with_margin:
            verdict = (
                f"<b style='color:{FIT_COLOR}'>fits</b>, also with the +{units.format_percent(MEMORY_MARGIN)} margin"
            )
        elif r.fits:
            verdict = (
                f"<b style='color:{FIT_COLOR}'>fits</b>, but not with the +{units.format_percent(MEMORY_MARGIN)} margin"
            )
        else:
            verdict = f"<b style='color:{COLORS['exposed']}'>does not fit</b>"
        longest, alone = r.longest_fitting(r.memory_with_c), r.longest_fitting(r.memory_without_c)
        reach = (
            f"longest that fits: {_tokens(longest) if longest else 'none'} with c = {plan.context_parallel}, "
            f"{_tokens(alone) if alone else 'none'} with c = 1"
        )
        chosen = r.moe_chosen
        if chosen is None:
            experts = "No all-to-all: " + (
                "a dense model." if r.model.experts == 1 else "e = 1 (every rank holds every expert)."
            )
        else:
            experts = (
                f"One MoE layer, e = {plan.expert_parallel} {r.expert_placement}: all-to-alls "
                f"<b>{s(chosen.all_to_all_s)}</b> (in one node {s(r.moe_inside.all_to_all_s)}, across nodes "
                f"{s(r.moe_across.all_to_all_s)}) against {s(chosen.expert_compute_s)} of experts' compute."
            )
        timeline = r.timeline
        return (
            f"<b>{r.model.name}</b>, s = {r.model.seq_len:,} tokens, d·t·p·c = {DATA_PARALLEL}·{plan.tensor_parallel}·"
            f"{plan.pipeline_parallel}·{plan.context_parallel} = {plan.devices} H100s "
            f"(c {plan.context_parallel_kind}, e = {plan.expert_parallel}).<br>"
            f"Memory per device <b>{b(total)}</b> of {b(r.capacity_bytes)}: {verdict}; {reach}.<br>"
            f"{experts}<br>"
            f"Bubble: {timeline.schedule.upper()} {units.format_percent(float(timeline.bubble_fraction))} of the "
            f"ideal step against 1F1B's {units.format_percent(float(r.one_f_one_b.bubble_fraction))} "
            f"(without the optimizer's synchronisation "
            f"{units.format_percent(float(timeline.unsynchronised_bubble_fraction))})."
            "<br><small>Memory: the calibrated model (Megatron-LM's recipe), ZeRO-1 over d = 8, FlashAttention, no "
            "recomputation, 1F1B's activations (Megatron-LM runs no zero-bubble schedule; ZB-H1 holds as many, ZB-H2 "
            "more). The bubble: t_F = t_B = t_W.</small>"
        )


def sequences_lab(**initial) -> SequencesLab:
    """Lab 7; keyword arguments set controls' initial values (``DEFAULTS`` lists the names).

    >>> lab = sequences_lab(model="Llama 3.1 70B", tensor_parallel=8, seq_len=131072, context_parallel=16)
    >>> lab.result["expert_parallel"], lab.result["context_parallel"]
    (1, 16)
    """
    return SequencesLab(**initial)
