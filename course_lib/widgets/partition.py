"""Lab 5 · the partition explorer: one model diagram, every split, the tensors that cross each device boundary.

Every number comes from one call, ``budget.partition_report`` (by default the ideal model: ``memory_breakdown`` and
``step_time`` with ``calibration=None``, ``step_transfers`` timed on the cluster's links; the *framework* control runs
the calibrated model as Megatron-LM, DeepSpeed, FSDP2 or nanotron run the plan, and a plan the framework does not run
is the ideal model's report saying so, ``not_run``): ``compute`` returns that
``budget.PartitionReport``, which alone the figure (``viz.partition.PartitionFigure``) and the summary read and
``lab.typed_result`` holds. ``lab.result`` shows it as a plain dict: ``PartitionReport.as_dict()`` (the plan's sizes,
memory per device, the step's terms, ``transfers``: one dict per boundary tensor) and the lab's ``cluster`` (the
node type chosen), ``schedule``, ``recompute``, ``sequence_parallel``, ``tensor_link`` and ``tensor_time_s``. The
cluster is nodes of 8 A100 or 8 H100, NVLink inside a node and InfiniBand
between nodes; Megatron-LM's placement puts the tensor-parallel ranks next to each other, so t ≤ 8 keeps them in one
node and t = 16 spans two.

Only valid plans are reachable. The controls are declared in ``CONTROLS`` in the order their stops depend on each
other: the model (a dense preset, a mixture of experts (Mixtral 8x7B, 8x22B, DeepSeekMoE 16B), or the custom layers,
hidden size and heads, whose heads divide the hidden size; their sliders show only while the model is “custom”), the
node type, then t (the divisors of the model's heads that divide a node's 8 GPUs or are multiples of them: a tensor
group fills part of one node or whole nodes), c (context parallelism: sizes up to 32 that divide the sequence) and the
attention split (ring attention's zig-zag halves always; DeepSpeed-Ulysses' all-to-all form only where c divides the
heads per tensor rank and the key/value heads), p (the divisors of its layers with t·c·p ≤ 4096 GPUs), e (expert
parallelism: the divisors of the model's experts, 1 for a dense model), d (with d·t·c·p ≤ 4096 and e dividing d·c:
Megatron-Core carves the expert ranks out of the data and context ranks), the node count (only clusters that hold the
plan's d·t·c·p GPUs), the schedule (interleaving needs p > 1 and a divisor v ≥ 2 of the layers per stage), v and m
(interleaved: multiples of p). Moving a control gives each later one that depends on it its new stops
(``Lab.sync_choices``): t up pushes d down when the plan would pass 4096 GPUs, e up pushes d up to a multiple of e/c,
and either grows the cluster when it no longer holds the plan.

>>> from course_lib import units
>>> lab = partition_lab()
>>> lab.result["transfers"][0]["link_family"], units.format_time(lab.result["step_time_s"])
('NVLink', '17.3 s')
>>> lab.controls["tensor_parallel"].value, lab.controls["pipeline_parallel"].value = 16, 4
>>> lab.result["tensor_link"], units.format_time(lab.result["step_time_s"])
('InfiniBand', '18.8 s')
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from matplotlib.figure import Figure

from .. import budget, hardware, parallelism, units
from ..viz.partition import PartitionFigure
from ._base import ControlSpec, Lab, control_defaults, plan_from

__all__ = [
    "PartitionLab",
    "partition_lab",
    "CONTROLS",
    "DEFAULTS",
    "MODELS",
    "CLUSTERS",
    "CUSTOM",
    "MEMORY_MARGIN",
    "MAX_DEVICES",
    "model_for",
    "cluster_for",
    "cluster_choice",
]

CUSTOM = "custom"
# The calibrated model's memory margin (+52.1 %: the 90th percentile of measured/predicted memory on the Playbook's
# healthy held-out runs), drawn on the memory bar: the ideal model this lab shows misses more, so a plan that fits
# only without it is a gamble.
MEMORY_MARGIN = parallelism.REFERENCE_CALIBRATION.memory_margin
MODELS = {
    m.name: m
    for m in (
        parallelism.GPT3_175B,
        parallelism.MEGATRON_1T,
        parallelism.LLAMA3_8B,
        parallelism.LLAMA3_70B,
        parallelism.MIXTRAL_8X7B,
        parallelism.MIXTRAL_8X22B,
        parallelism.DEEPSEEK_MOE_16B,
    )
}
# The node types (``hardware.NODE_TYPES``, the serving lab's too); the default is A100 nodes: the explorer opens on
# Korthikanti et al. 2022's GPT-3 175B split on 8 nodes of 8 A100.
CLUSTERS = dict(hardware.NODE_TYPES)
DEFAULT_CLUSTER = "nodes of 8 A100 (NVLink 3, InfiniBand HDR)"
MAX_DEVICES = 4096
NODE_COUNTS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
DATA_PARALLEL_SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
GRAD_ACCUM_STEPS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
MAX_TENSOR_PARALLEL, MAX_PIPELINE_PARALLEL, MAX_VIRTUAL_STAGES = 64, 128, 8
CONTEXT_PARALLEL_SIZES = (1, 2, 4, 8, 16, 32)
EXPERT_PARALLEL_SIZES = (1, 2, 4, 8, 16, 32, 64)
CUSTOM_LAYERS = (12, 24, 32, 40, 48, 64, 80, 96, 128)
CUSTOM_HIDDEN = (1024, 2048, 4096, 5120, 6144, 8192, 12288, 16384, 20480, 25600)
CUSTOM_HEADS = (8, 16, 32, 40, 48, 64, 96, 128, 160)
SCHEDULES = ("1f1b", "gpipe", "interleaved")
MODEL_CONTROLS = ("model", "layers", "hidden", "heads")  # what model_for reads


def model_for(values: dict) -> parallelism.TransformerModel:
    """The model the controls name: a preset, or the custom layers/hidden/heads (GPT-style, V = 51,200, s = 2048).

    >>> model_for({**DEFAULTS, "model": CUSTOM, "layers": 24, "hidden": 2048, "heads": 16}).params > 1e9
    True
    """
    if values["model"] == CUSTOM:
        return parallelism.TransformerModel(CUSTOM, values["layers"], values["hidden"], values["heads"], 51200, 2048)
    return MODELS[values["model"]]


def cluster_for(values: dict) -> hardware.Cluster:
    """The cluster the controls name: ``nodes`` nodes of the chosen node type."""
    node = CLUSTERS[values["cluster"]]
    return replace(node, name=f"{values['nodes']} × {node.name.split(' (')[0]}", nodes=values["nodes"])


def cluster_choice(cluster: hardware.Cluster) -> str:
    """The ``CLUSTERS`` choice ``cluster`` is made of (``cluster_for``'s inverse): the node type with its accelerator
    and links.

    >>> cluster_choice(cluster_for({**DEFAULTS, "nodes": 2})) == DEFAULTS["cluster"]
    True
    """
    node_type = (cluster.accelerator, cluster.intra_node_link, cluster.inter_node_link)
    return next(
        choice
        for choice, node in CLUSTERS.items()
        if (node.accelerator, node.intra_node_link, node.inter_node_link) == node_type
    )


# ---- each dependent control's stops, from the controls before it ------------------------------------------------


def heads_stops(values: dict) -> tuple:
    """The custom heads that divide the custom hidden size.

    >>> heads_stops({"hidden": 5120})
    (8, 16, 32, 40, 64, 128, 160)
    """
    return tuple(heads for heads in CUSTOM_HEADS if values["hidden"] % heads == 0)


def tensor_parallel_stops(values: dict) -> tuple:
    """t: the divisors of the model's heads up to 64 that divide a node's GPUs or are multiples of them
    (``budget.group_collective_phases`` places a group within one node or on whole nodes).

    >>> tensor_parallel_stops(DEFAULTS)   # GPT-3 175B: 96 heads; 3, 6, 12 do not fit a node of 8
    (1, 2, 4, 8, 16, 24, 32, 48)
    """
    per_node = CLUSTERS[values["cluster"]].devices_per_node
    sizes = np.arange(1, MAX_TENSOR_PARALLEL + 1)
    even = parallelism.splits_evenly(model_for(values), tensor_parallel=sizes)  # every size in one vectorised call
    return tuple(int(t) for t in sizes[even] if per_node % t == 0 or t % per_node == 0)


def context_parallel_stops(values: dict) -> tuple:
    """c: the sizes up to 32 that divide the model's sequence (ring attention's split), with t·c ≤ ``MAX_DEVICES``.

    >>> context_parallel_stops(DEFAULTS)   # GPT-3 175B: s = 2048
    (1, 2, 4, 8, 16, 32)
    """
    model, t = model_for(values), values["tensor_parallel"]
    sizes = np.asarray(CONTEXT_PARALLEL_SIZES)
    even = parallelism.splits_context_and_experts(model, t, sizes, "ring")
    return tuple(int(c) for c in sizes[even] if t * c <= MAX_DEVICES)


def context_parallel_kind_stops(values: dict) -> tuple:
    """With c = 1 the ring alone (no form does anything); with c > 1 the ring and the all-gather form always, and
    DeepSpeed-Ulysses' all-to-all form where c divides the query and key/value heads per tensor-parallel rank
    (``parallelism.splits_context_and_experts``).

    >>> context_parallel_kind_stops({**DEFAULTS, "context_parallel": 4}), context_parallel_kind_stops(DEFAULTS)
    (('ring', 'all_gather', 'all_to_all'), ('ring',))
    >>> context_parallel_kind_stops({**DEFAULTS, "context_parallel": 32})   # 96 heads / t = 8: 12 per rank
    ('ring', 'all_gather')
    """
    c = values["context_parallel"]
    if c == 1:
        return ("ring",)
    ulysses = parallelism.splits_context_and_experts(model_for(values), values["tensor_parallel"], c, "all_to_all")
    return parallelism.CONTEXT_PARALLEL_KINDS if ulysses else ("ring", "all_gather")


def expert_parallel_stops(values: dict) -> tuple:
    """e: the divisors of the model's experts up to 64 (1 for a dense model) for which some d gives e | d·c within
    ``MAX_DEVICES`` (Megatron-Core carves the expert ranks out of the data and context ranks).

    >>> expert_parallel_stops({**DEFAULTS, "model": "Mixtral 8x7B"}), expert_parallel_stops(DEFAULTS)
    ((1, 2, 4, 8), (1,))
    """
    model = model_for(values)
    sizes = np.asarray(EXPERT_PARALLEL_SIZES)
    even = parallelism.splits_context_and_experts(model, expert_parallel=sizes)
    return tuple(int(e) for e in sizes[even] if data_parallel_stops({**values, "expert_parallel": int(e)}))


def pipeline_parallel_stops(values: dict) -> tuple:
    """p: the divisors of the model's layers up to 128 with t·c·p ≤ ``MAX_DEVICES``.

    >>> pipeline_parallel_stops({**DEFAULTS, "tensor_parallel": 48})   # 48 · 96 > 4096
    (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48)
    """
    sizes = np.arange(1, min(MAX_PIPELINE_PARALLEL, model_for(values).layers) + 1)
    even = parallelism.splits_evenly(model_for(values), pipeline_parallel=sizes)
    devices = values["tensor_parallel"] * values["context_parallel"]
    return tuple(int(p) for p in sizes[even] if devices * p <= MAX_DEVICES)


def data_parallel_stops(values: dict) -> tuple:
    """d: the sizes with d·t·c·p ≤ ``MAX_DEVICES`` and e dividing d·c (the expert ranks are data and context ranks).

    >>> data_parallel_stops({"tensor_parallel": 8, "pipeline_parallel": 16, "context_parallel": 1,
    ...                      "expert_parallel": 1})
    (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
    >>> data_parallel_stops({"tensor_parallel": 1, "pipeline_parallel": 1, "context_parallel": 2,
    ...                      "expert_parallel": 8})[:3]
    (4, 8, 12)
    """
    c, e = values["context_parallel"], values["expert_parallel"]
    devices = values["tensor_parallel"] * values["pipeline_parallel"] * c
    return tuple(d for d in DATA_PARALLEL_SIZES if d * devices <= MAX_DEVICES and (d * c) % e == 0)


def nodes_stops(values: dict) -> tuple:
    """The node counts whose GPUs hold the plan's d·t·c·p.

    >>> nodes_stops({**DEFAULTS, "tensor_parallel": 16})[:3]   # 128 GPUs need 16 nodes of 8
    (16, 24, 32)
    """
    devices = values["data_parallel"] * values["tensor_parallel"] * values["pipeline_parallel"]
    devices *= values["context_parallel"]
    per_node = CLUSTERS[values["cluster"]].devices_per_node
    return tuple(n for n in NODE_COUNTS if n * per_node >= devices)


def chunks_per_stage(values: dict) -> tuple:
    """The virtual stages v ≥ 2 (up to 8) an interleaved schedule can cut each of p > 1 stages into: the divisors of
    the layers per stage.

    >>> chunks_per_stage(DEFAULTS), chunks_per_stage({**DEFAULTS, "pipeline_parallel": 1})   # 12 layers per stage
    ((2, 3, 4, 6), ())
    """
    p = values["pipeline_parallel"]
    per_stage = model_for(values).layers // p
    return tuple(v for v in range(2, MAX_VIRTUAL_STAGES + 1) if p > 1 and per_stage % v == 0)


def schedule_stops(values: dict) -> tuple:
    """The schedules: interleaved only where ``chunks_per_stage`` offers a v."""
    interleaving = bool(chunks_per_stage(values))
    return tuple(s for s in SCHEDULES if s != "interleaved" or interleaving)


def virtual_stages_stops(values: dict) -> tuple:
    """v: ``chunks_per_stage`` with the interleaved schedule, else 1."""
    return chunks_per_stage(values) if values["schedule"] == "interleaved" else (1,)


def grad_accum_steps_stops(values: dict) -> tuple:
    """m: ``GRAD_ACCUM_STEPS``; with the interleaved schedule (Megatron-LM needs m a multiple of p) those multiples
    of p and p, 2p, 4p, 8p.

    >>> grad_accum_steps_stops({"schedule": "interleaved", "pipeline_parallel": 16})
    (16, 32, 48, 64, 96, 128, 192, 256, 384, 512)
    """
    p = values["pipeline_parallel"]
    if values["schedule"] != "interleaved":
        return GRAD_ACCUM_STEPS
    return tuple(sorted(m for m in set(GRAD_ACCUM_STEPS) | {p * k for k in (1, 2, 4, 8)} if m % p == 0))


KIND_LABELS = {"ring": "ring (zig-zag)", "all_gather": "all-gather (Llama 3)", "all_to_all": "all-to-all (Ulysses)"}
IDEAL = "ideal"  # the framework control's first choice: no framework, the ideal model
FRAMEWORK_LABELS = {
    IDEAL: "ideal model",
    "megatron": "Megatron-LM",
    "deepspeed": "DeepSpeed",
    "fsdp2": "PyTorch FSDP2",
    "fsdp2-pipeline": "FSDP2 + pipeline (torchtitan)",
    "nanotron": "nanotron",
    "generic": "generic calibration",
    "exposed": "nothing overlapped (bound)",
}
# What each of a framework's overlap options hides: whether the framework hides it for the plan, the words, and
# whether the plan has such transfers.
HIDES = (
    (lambda f, _: f.tensor_parallel_overlap == "backward",
     "the backward tensor-parallel calls behind the weight-gradient GEMMs", lambda plan: plan.tensor_parallel > 1),
    (lambda f, _: f.tensor_parallel_overlap == "all", "the tensor-parallel calls behind the GEMMs",
     lambda plan: plan.tensor_parallel > 1),
    (lambda f, plan: f.hides_grad_reduce(plan.zero_stage), "gradient buckets behind the backward pass",
     lambda plan: plan.data_parallel * plan.context_parallel > 1),
    (lambda f, plan: f.prefetches_gathers(plan.zero_stage), "ZeRO's parameter gathers behind the compute before them",
     lambda plan: plan.zero_stage > 0 and plan.data_parallel * plan.context_parallel > 1),
    (lambda f, _: f.pipeline_overlap, "pipeline sends behind the next chunk", lambda plan: plan.virtual_stages > 1),
)  # fmt: skip
SIZES = ("tensor_parallel", "context_parallel", "expert_parallel", "pipeline_parallel", "data_parallel")
# GPT-3 175B on 8 nodes of 8 A100 as Korthikanti et al. 2022 split it inside a node (t = 8, p = 8), d = 1.
CONTROLS = (
    ControlSpec("model", "model", (*MODELS, CUSTOM), parallelism.GPT3_175B.name, kind="dropdown"),
    ControlSpec("layers", "custom: layers", CUSTOM_LAYERS, 96),
    ControlSpec("hidden", "custom: hidden size", CUSTOM_HIDDEN, 12288),
    ControlSpec("heads", "custom: heads", heads_stops, 96, depends_on=("hidden",)),
    ControlSpec("cluster", "cluster", tuple(CLUSTERS), DEFAULT_CLUSTER, kind="dropdown"),
    ControlSpec(
        "framework",
        "framework",
        (IDEAL, *parallelism.FRAMEWORKS),
        IDEAL,
        lambda key: FRAMEWORK_LABELS.get(key, key),
        kind="dropdown",
    ),
    ControlSpec(
        "tensor_parallel", "tensor parallel t", tensor_parallel_stops, 8, depends_on=(*MODEL_CONTROLS, "cluster")
    ),
    ControlSpec(
        "context_parallel",
        "context parallel c",
        context_parallel_stops,
        1,
        depends_on=(*MODEL_CONTROLS, "tensor_parallel"),
    ),
    ControlSpec(
        "context_parallel_kind",
        "attention split",
        context_parallel_kind_stops,
        "ring",
        KIND_LABELS.__getitem__,
        kind="buttons",
        depends_on=(*MODEL_CONTROLS, "tensor_parallel", "context_parallel"),
    ),
    ControlSpec(
        "pipeline_parallel",
        "pipeline parallel p",
        pipeline_parallel_stops,
        8,
        depends_on=(*MODEL_CONTROLS, "tensor_parallel", "context_parallel"),
    ),
    ControlSpec(
        "expert_parallel",
        "expert parallel e",
        expert_parallel_stops,
        1,
        depends_on=(*MODEL_CONTROLS, "tensor_parallel", "context_parallel", "pipeline_parallel"),
    ),
    ControlSpec("data_parallel", "data parallel d", data_parallel_stops, 1, depends_on=SIZES[:4]),
    ControlSpec("nodes", "nodes", nodes_stops, 8, depends_on=("cluster", *SIZES)),
    ControlSpec(
        "schedule",
        "schedule",
        schedule_stops,
        "1f1b",
        kind="buttons",
        depends_on=(*MODEL_CONTROLS, "pipeline_parallel"),
    ),
    ControlSpec(
        "virtual_stages",
        "virtual stages v",
        virtual_stages_stops,
        1,
        depends_on=(*MODEL_CONTROLS, "pipeline_parallel", "schedule"),
    ),
    ControlSpec(
        "grad_accum_steps",
        "micro-batches m",
        grad_accum_steps_stops,
        64,
        depends_on=("pipeline_parallel", "schedule"),
    ),
    ControlSpec("micro_batch", "micro-batch b (seq.)", range(1, 17), 1, kind="int slider"),
    ControlSpec("zero_stage", "ZeRO stage", parallelism.ZERO_STAGES, 1, kind="buttons"),
    ControlSpec("sequence_parallel", "sequence parallel (no effect when t = 1)", (False, True), False, kind="checkbox"),
    ControlSpec("recompute", "recomputation", parallelism.RECOMPUTE_OPTIONS, "selective", kind="buttons"),
)
DEFAULTS = control_defaults(CONTROLS)


class PartitionLab(Lab):
    """Split a model over a cluster and see every tensor that crosses a device boundary (module docstring)."""

    CONTROLS = CONTROLS

    def __init__(self, **initial):
        controls = self.build_controls(self.start_values(initial))
        figure = Figure(figsize=(10, 5.0), dpi=self.dpi)
        figure.patch.set_facecolor("white")
        self.partition_figure = PartitionFigure(figure, memory_margin=MEMORY_MARGIN)
        self.enable_partial_redraw(figure, self.partition_figure.animated)
        super().__init__("Lab 5 · Partition explorer", controls, figure)
        self.show_custom_model()

    def sync_controls(self, changed: str) -> None:
        """The base's settling of dependent stops; a change of model shows or hides the custom model's sliders."""
        super().sync_controls(changed)
        if changed == "model":
            self.show_custom_model()

    def show_custom_model(self) -> None:
        """Show the custom layers, hidden size and heads sliders only while the model is the custom one."""
        display = "" if self.controls["model"].value == CUSTOM else "none"
        for name in MODEL_CONTROLS[1:]:
            self.controls[name].layout.display = display

    # ---- the three parts of a lab ---------------------------------------------------------------------------------

    def compute(self, values: dict) -> budget.PartitionReport:
        """One ``budget.partition_report`` of the plan, model and cluster the controls name."""
        framework = None if values["framework"] == IDEAL else values["framework"]
        return budget.partition_report(
            model_for(values), plan_from(values), cluster_for(values), memory_margin=MEMORY_MARGIN, framework=framework
        )

    def result_dict(self, r: budget.PartitionReport) -> dict:
        """``result``: ``r.as_dict()``, then the node type chosen, the plan's choices and the tensor-parallel link."""
        return {
            **r.as_dict(),
            "cluster": cluster_choice(r.cluster),
            "schedule": r.plan.schedule,
            "recompute": r.plan.recompute,
            "sequence_parallel": r.plan.sequence_parallel,
            "tensor_link": r.tensor_link,
            "tensor_time_s": r.tensor_time_s,
        }

    def draw(self, r: budget.PartitionReport) -> None:
        self.partition_figure.update(r)

    def summary_html(self, r: budget.PartitionReport) -> str:
        b, s = units.format_bytes, units.format_time
        margin = f"+{units.format_percent(r.memory_margin)} margin"
        if r.fits:
            fit = f"fits, {'also' if r.fits_with_margin else '<b>but not</b>'} with the {margin} (hatched)"
        else:
            fit = "<b style='color:#C0392B'>does not fit</b>"
        links = []
        for axis, what in (("tensor", "tensor-parallel collectives"),
                           ("context", f"context parallel ({KIND_LABELS[r.plan.context_parallel_kind]})"),
                           ("expert", "expert all-to-alls")):  # fmt: skip
            rows = [x for x in r.transfers if x.transfer.axis == axis]
            if rows:
                seconds, exposed = sum(x.time_s for x in rows), sum(x.exposed_s for x in rows)
                shown = "all exposed" if exposed == seconds else f"{s(exposed)} exposed"
                links.append(f"{what} on <b>{rows[0].link.family}</b>: {s(seconds)} per step, {shown}")
        tp = "; ".join(links) if links else "no tensor parallelism"
        return (
            f"<b>{r.model.name}</b> on {r.plan.devices} of {r.cluster.devices} {r.cluster.accelerator.name}, global "
            f"batch {r.plan.global_batch} sequences: memory per device {b(r.memory.total)} of {b(r.capacity_bytes)} "
            f"({fit}); step <b>{s(r.step.total_s)}</b>, exposed communication {s(r.step.exposed_communication_s)}, "
            f"bubble {s(r.step.bubble_s)}; binding: {r.binding_constraint}.<br>{tp}.<br>{framework_html(r)}"
            f"<small>{model_note(r)}; the {margin} is the memory the "
            f"calibrated model needed to spare on the Playbook's measured runs. The model “custom” shows sliders for "
            f"its layers, hidden size and heads; t, c, p, e, d, v, m and the nodes offer only values that make a "
            f"valid plan.</small>"
        )


def framework_html(r: budget.PartitionReport) -> str:
    """The summary's line on the framework: why it does not run the plan, or what it hides and how much ("" for the
    ideal model).

    >>> from dataclasses import replace
    >>> from course_lib import budget, hardware, parallelism
    >>> plan = parallelism.ParallelPlan(tensor_parallel=8, data_parallel=2, grad_accum_steps=8)
    >>> two_nodes = replace(hardware.DGX_H100, nodes=2)
    >>> print(framework_html(budget.partition_report(parallelism.GPT3_175B, plan, two_nodes, framework="megatron")))
    Megatron-LM hides 655 ms of the 2.49 s its transfers take: the backward tensor-parallel calls behind the \
weight-gradient GEMMs; gradient buckets behind the backward pass.<br>
    """
    if r.not_run:
        return f"<b style='color:#C0392B'>{r.not_run}</b>: the numbers are the ideal model's.<br>"
    if r.framework is None:
        return ""
    s = units.format_time
    every = sum(x.time_s for x in r.transfers)
    hidden = every - sum(x.exposed_s for x in r.transfers)
    mechanisms = [words for hides, words, has in HIDES if hides(r.framework, r.plan) and has(r.plan)]
    how = ": " + "; ".join(mechanisms) if mechanisms else " (it overlaps none of this plan's transfers with compute)"
    name = r.framework.short_name
    return f"{name} hides {s(hidden)} of the {s(every)} its transfers take{how}.<br>"


def model_note(r: budget.PartitionReport) -> str:
    """Which model the numbers come from, for the summary's small print."""
    if r.framework is None:
        return "The ideal model (compute at half of peak, nominal links)"
    return (
        f"As {r.framework.name} runs it: the calibrated model for this cluster (GEMM efficiency by size, a fixed cost "
        f"per layer, the measured network, the framework's precision recipe and overlaps; memory of the heaviest "
        f"stage with the logits and the framework's own)"
    )


def partition_lab(**initial) -> PartitionLab:
    """The partition explorer; keyword arguments set controls' initial values (``DEFAULTS`` lists the names).

    >>> lab = partition_lab(tensor_parallel=16, nodes=16)
    >>> lab.result["tensor_link"], lab.result["devices"]
    ('InfiniBand', 128)
    """
    return PartitionLab(**initial)
