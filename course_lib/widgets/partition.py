"""Lab 5 · the partition explorer: one model diagram, every split, the tensors that cross each device boundary.

Every number comes from one call, ``budget.partition_report`` (the ideal model: ``memory_breakdown`` and
``step_time`` with ``calibration=None``, ``step_transfers`` timed on the cluster's links): ``compute`` returns that
``budget.PartitionReport``, which alone the figure (``viz.partition.PartitionFigure``) and the summary read and
``lab.typed_result`` holds. ``lab.result`` shows it as a plain dict: ``PartitionReport.as_dict()`` (the plan's sizes,
memory per device, the step's terms, ``transfers``: one dict per boundary tensor) and the lab's ``cluster`` (the
node type chosen), ``schedule``, ``recompute``, ``sequence_parallel``, ``tensor_link`` and ``tensor_time_s``. The
cluster is nodes of 8 A100 or 8 H100, NVLink inside a node and InfiniBand
between nodes; Megatron-LM's placement puts the tensor-parallel ranks next to each other, so t ≤ 8 keeps them in one
node and t = 16 spans two.

Only valid plans are reachable. The controls are declared in ``CONTROLS`` in the order their stops depend on each
other: the model (a preset, or the custom layers, hidden size and heads, whose heads divide the hidden size; their
sliders show only while the model is “custom”), the
node type, then t (the divisors of the model's heads that divide a node's 8 GPUs or are multiples of them: a tensor
group fills part of one node or whole nodes), p (the divisors of its layers with t·p ≤ 4096 GPUs), d (with
d·t·p ≤ 4096), the node count (only clusters that hold the plan), the schedule (interleaving needs p > 1 and a
divisor v ≥ 2 of the layers per stage), v and m (interleaved: multiples of p). Moving a control gives each later one
that depends on it its new stops (``Lab.sync_choices``): t up pushes d down when the plan would pass 4096 GPUs, and
grows the cluster when it no longer holds the plan.

>>> from course_lib import units
>>> lab = partition_lab()
>>> lab.result["transfers"][0]["link_family"], units.format_time(lab.result["step_time_s"])
('NVLink', '17.3 s')
>>> lab.controls["tensor_parallel"].value, lab.controls["pipeline_parallel"].value = 16, 4
>>> lab.result["tensor_link"], units.format_time(lab.result["step_time_s"])
('InfiniBand', '18.7 s')
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
# The calibrated model's memory margin (+38.4 %: the Playbook's 1B and 3B runs' 90th percentile of measured/predicted
# memory), drawn on the memory bar: the ideal model this lab shows misses more, so a plan that fits only without it is
# a gamble.
MEMORY_MARGIN = parallelism.PLAYBOOK_CALIBRATION.memory_margin
MODELS = {
    m.name: m for m in (parallelism.GPT3_175B, parallelism.MEGATRON_1T, parallelism.LLAMA3_8B, parallelism.LLAMA3_70B)
}
CLUSTERS = {
    "nodes of 8 A100 (NVLink 3, InfiniBand HDR)": hardware.DGX_A100,
    "nodes of 8 H100 (NVLink 4, InfiniBand NDR)": hardware.DGX_H100,
}
MAX_DEVICES = 4096
NODE_COUNTS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
DATA_PARALLEL_SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
GRAD_ACCUM_STEPS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
MAX_TENSOR_PARALLEL, MAX_PIPELINE_PARALLEL, MAX_VIRTUAL_STAGES = 64, 128, 8
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


def pipeline_parallel_stops(values: dict) -> tuple:
    """p: the divisors of the model's layers up to 128 with t·p ≤ ``MAX_DEVICES``.

    >>> pipeline_parallel_stops({**DEFAULTS, "tensor_parallel": 48})   # 48 · 96 > 4096
    (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48)
    """
    sizes = np.arange(1, min(MAX_PIPELINE_PARALLEL, model_for(values).layers) + 1)
    even = parallelism.splits_evenly(model_for(values), pipeline_parallel=sizes)
    return tuple(int(p) for p in sizes[even] if values["tensor_parallel"] * p <= MAX_DEVICES)


def data_parallel_stops(values: dict) -> tuple:
    """d: the sizes with d·t·p ≤ ``MAX_DEVICES``.

    >>> data_parallel_stops({"tensor_parallel": 8, "pipeline_parallel": 16})
    (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
    """
    devices = values["tensor_parallel"] * values["pipeline_parallel"]
    return tuple(d for d in DATA_PARALLEL_SIZES if d * devices <= MAX_DEVICES)


def nodes_stops(values: dict) -> tuple:
    """The node counts whose GPUs hold the plan's d·t·p.

    >>> nodes_stops({**DEFAULTS, "tensor_parallel": 16})[:3]   # 128 GPUs need 16 nodes of 8
    (16, 24, 32)
    """
    devices = values["data_parallel"] * values["tensor_parallel"] * values["pipeline_parallel"]
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


SIZES = ("tensor_parallel", "pipeline_parallel", "data_parallel")
# GPT-3 175B on 8 nodes of 8 A100 as Korthikanti et al. 2022 split it inside a node (t = 8, p = 8), d = 1.
CONTROLS = (
    ControlSpec("model", "model", (*MODELS, CUSTOM), parallelism.GPT3_175B.name, kind="dropdown"),
    ControlSpec("layers", "custom: layers", CUSTOM_LAYERS, 96),
    ControlSpec("hidden", "custom: hidden size", CUSTOM_HIDDEN, 12288),
    ControlSpec("heads", "custom: heads", heads_stops, 96, depends_on=("hidden",)),
    ControlSpec("cluster", "cluster", tuple(CLUSTERS), next(iter(CLUSTERS)), kind="dropdown"),
    ControlSpec(
        "tensor_parallel", "tensor parallel t", tensor_parallel_stops, 8, depends_on=(*MODEL_CONTROLS, "cluster")
    ),
    ControlSpec(
        "pipeline_parallel",
        "pipeline parallel p",
        pipeline_parallel_stops,
        8,
        depends_on=(*MODEL_CONTROLS, "tensor_parallel"),
    ),
    ControlSpec("data_parallel", "data parallel d", data_parallel_stops, 1, depends_on=SIZES[:2]),
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
        return budget.partition_report(
            model_for(values), plan_from(values), cluster_for(values), memory_margin=MEMORY_MARGIN
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
        tp = (
            f"tensor-parallel collectives on <b>{r.tensor_link}</b>: {s(r.tensor_time_s)} per step, all exposed"
            if r.tensor_link != "none"
            else "no tensor parallelism"
        )
        return (
            f"<b>{r.model.name}</b> on {r.plan.devices} of {r.cluster.devices} {r.cluster.accelerator.name}, global "
            f"batch {r.plan.global_batch} sequences: memory per device {b(r.memory.total)} of {b(r.capacity_bytes)} "
            f"({fit}); step <b>{s(r.step.total_s)}</b>, exposed communication {s(r.step.exposed_communication_s)}, "
            f"bubble {s(r.step.bubble_s)}; binding: {r.binding_constraint}.<br>{tp}.<br>"
            f"<small>The ideal model (compute at half of peak, nominal links); the {margin} is the memory the "
            f"calibrated model needed to spare on the Playbook's measured runs. The model “custom” shows sliders for "
            f"its layers, hidden size and heads; t, p, d, v, m and the nodes offer only values that make a valid "
            f"plan.</small>"
        )


def partition_lab(**initial) -> PartitionLab:
    """The partition explorer; keyword arguments set controls' initial values (``DEFAULTS`` lists the names).

    >>> lab = partition_lab(tensor_parallel=16, nodes=16)
    >>> lab.result["tensor_link"], lab.result["devices"]
    ('InfiniBand', 128)
    """
    return PartitionLab(**initial)
