"""Lab 6 · the partition explorer: one model diagram, every split, the tensors that cross each device boundary.

Every number comes from one call, ``budget.partition_report`` (the ideal model: ``memory_breakdown`` and
``step_time`` with ``calibration=None``, ``step_transfers`` timed on the cluster's links): ``compute`` returns that
``budget.PartitionReport``, which alone the figure (``viz.partition.PartitionFigure``) and the summary read and
``lab.typed_result`` holds. ``lab.result`` shows it as a plain dict: ``PartitionReport.as_dict()`` (the plan's sizes,
memory per device, the step's terms, ``transfers``: one dict per boundary tensor) and the lab's ``cluster`` (the
node type chosen), ``schedule``, ``recompute``, ``sequence_parallel``, ``tensor_link`` and ``tensor_time_s``. The
cluster is nodes of 8 A100 or 8 H100, NVLink inside a node and InfiniBand
between nodes; Megatron-LM's placement puts the tensor-parallel ranks next to each other, so t ≤ 8 keeps them in one
node and t = 16 spans two.

Only valid plans are reachable: t takes the divisors of the model's heads that divide a node's 8 GPUs or are
multiples of them (a tensor group fills part of one node or whole nodes), p the divisors of its layers, v (with the
interleaved schedule) the divisors of the layers per stage, m (interleaved) multiples of p; d·t·p is at most 4096
GPUs and the node count offers only clusters that hold the plan (moving t, p or d past the cluster grows it).

>>> from course_lib import units
>>> lab = partition_lab()
>>> lab.result["transfers"][0]["link_family"], units.format_time(lab.result["step_time_s"])
('NVLink', '16.9 s')
>>> lab.controls["tensor_parallel"].value, lab.controls["pipeline_parallel"].value = 16, 4
>>> lab.result["tensor_link"], units.format_time(lab.result["step_time_s"])
('InfiniBand', '18.6 s')
"""

from __future__ import annotations

from dataclasses import replace

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from .. import budget, hardware, parallelism, units
from ..viz.partition import PartitionFigure
from ._base import (
    CONTROL_LAYOUT,
    CONTROL_STYLE,
    Lab,
    check_choices,
    choice_buttons,
    dropdown,
    initial_values,
    int_slider,
    nearest_option,
    option_slider,
    plan_from,
    set_options,
)

__all__ = [
    "PartitionLab",
    "partition_lab",
    "DEFAULTS",
    "MODELS",
    "CLUSTERS",
    "CUSTOM",
    "MAX_DEVICES",
    "options_for",
    "model_for",
    "cluster_for",
    "cluster_choice",
]

CUSTOM = "custom"
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

# GPT-3 175B on 8 nodes of 8 A100 as Korthikanti et al. 2022 split it inside a node (t = 8, p = 8), d = 1.
DEFAULTS = {
    "model": parallelism.GPT3_175B.name,
    "cluster": next(iter(CLUSTERS)),
    "nodes": 8,
    "data_parallel": 1,
    "tensor_parallel": 8,
    "pipeline_parallel": 8,
    "schedule": "1f1b",
    "virtual_stages": 1,
    "zero_stage": 1,
    "sequence_parallel": False,
    "recompute": "selective",
    "micro_batch": 1,
    "grad_accum_steps": 64,
    "layers": 96,
    "hidden": 12288,
    "heads": 96,
}


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


def options_for(values: dict) -> dict:
    """Every dependent control's options given the others' values, and the values snapped onto them, in the order
    that keeps each plan valid: heads (custom), t, p, d, schedule, v, m, nodes. Returns {name: (options, value)}.
    t takes divisors of the heads that divide the node or are multiples of it (``budget.group_collective_phases``
    places a group on whole nodes or within one).

    >>> opts = options_for({**DEFAULTS, "tensor_parallel": 16, "nodes": 8})
    >>> opts["nodes"][1]   # t = 16, p = 8: 128 GPUs need 16 nodes
    16
    >>> options_for({**DEFAULTS, "schedule": "interleaved"})["virtual_stages"][0]   # 12 layers per stage
    (2, 3, 4, 6)
    """
    values = dict(values)
    out = {}

    def settle(name, options, prefer_up=False):
        options = tuple(options)
        value = values[name]
        if value not in options:
            if isinstance(value, str):  # the schedule: interleaving no longer possible
                value = options[0]
            elif prefer_up:
                value = min((o for o in options if o >= value), default=options[-1])
            else:
                value = nearest_option(options, value)
        values[name] = value
        out[name] = (options, value)

    settle("heads", [a for a in CUSTOM_HEADS if values["hidden"] % a == 0])
    model = model_for(values)
    d, p = values["data_parallel"], values["pipeline_parallel"]
    per_node = CLUSTERS[values["cluster"]].devices_per_node
    sizes = range(1, MAX_TENSOR_PARALLEL + 1)
    even = parallelism.splits_evenly(model, tensor_parallel=np.array(sizes))  # every size in one vectorised call
    settle(
        "tensor_parallel",
        [
            t
            for t, splits in zip(sizes, even, strict=True)
            if splits
            and (per_node % t == 0 or t % per_node == 0)  # a group fills part of a node, or whole nodes
            and d * t * p <= MAX_DEVICES
        ],
    )
    t = values["tensor_parallel"]
    sizes = range(1, min(MAX_PIPELINE_PARALLEL, model.layers) + 1)
    even = parallelism.splits_evenly(model, pipeline_parallel=np.array(sizes))
    settle(
        "pipeline_parallel", [p for p, splits in zip(sizes, even, strict=True) if splits and d * t * p <= MAX_DEVICES]
    )
    p = values["pipeline_parallel"]
    settle("data_parallel", [d for d in DATA_PARALLEL_SIZES if d * t * p <= MAX_DEVICES])
    d = values["data_parallel"]
    per_stage = model.layers // p
    chunks = [v for v in range(2, MAX_VIRTUAL_STAGES + 1) if per_stage % v == 0]
    settle("schedule", [s for s in SCHEDULES if s != "interleaved" or (p > 1 and chunks)])
    interleaved = values["schedule"] == "interleaved"
    settle("virtual_stages", chunks if interleaved else [1])
    steps = sorted(set(GRAD_ACCUM_STEPS) | ({p * k for k in (1, 2, 4, 8)} if interleaved else set()))
    settle("grad_accum_steps", [m for m in steps if not interleaved or m % p == 0])
    settle("nodes", [n for n in NODE_COUNTS if n * per_node >= d * t * p], prefer_up=True)
    return out


class PartitionLab(Lab):
    """Split a model over a cluster and see every tensor that crosses a device boundary (module docstring)."""

    def __init__(self, **initial):
        values = initial_values(DEFAULTS, initial, "partition lab")
        check_choices(
            values,
            {
                "model": [*MODELS, CUSTOM],
                "cluster": list(CLUSTERS),
                "layers": CUSTOM_LAYERS,
                "hidden": CUSTOM_HIDDEN,
                "zero_stage": parallelism.ZERO_STAGES,
                "recompute": parallelism.RECOMPUTE_OPTIONS,
                "micro_batch": range(1, 17),
                "sequence_parallel": (True, False),
            },
        )
        opts = {name: options for name, (options, _) in options_for(values).items()}
        check_choices(values, opts, " with the other controls given")
        controls = {
            "model": dropdown("model", [*MODELS, CUSTOM], values["model"]),
            "cluster": dropdown("cluster", CLUSTERS, values["cluster"]),
            "nodes": option_slider("nodes", opts["nodes"], values["nodes"]),
            "data_parallel": option_slider("data parallel d", opts["data_parallel"], values["data_parallel"]),
            "tensor_parallel": option_slider("tensor parallel t", opts["tensor_parallel"], values["tensor_parallel"]),
            "pipeline_parallel": option_slider(
                "pipeline parallel p", opts["pipeline_parallel"], values["pipeline_parallel"]
            ),
            "schedule": choice_buttons("schedule", list(opts["schedule"]), values["schedule"]),
            "virtual_stages": option_slider("virtual stages v", opts["virtual_stages"], values["virtual_stages"]),
            "zero_stage": choice_buttons(
                "ZeRO stage", [(str(k), k) for k in parallelism.ZERO_STAGES], values["zero_stage"]
            ),
            "sequence_parallel": widgets.Checkbox(
                value=values["sequence_parallel"],
                description="sequence parallel (no effect when t = 1)",
                style=CONTROL_STYLE,
                layout=CONTROL_LAYOUT,
            ),
            "recompute": choice_buttons("recomputation", list(parallelism.RECOMPUTE_OPTIONS), values["recompute"]),
            "micro_batch": int_slider("micro-batch b (seq.)", 1, 16, values["micro_batch"]),
            "grad_accum_steps": option_slider("micro-batches m", opts["grad_accum_steps"], values["grad_accum_steps"]),
            "layers": option_slider("custom: layers", CUSTOM_LAYERS, values["layers"]),
            "hidden": option_slider("custom: hidden size", CUSTOM_HIDDEN, values["hidden"]),
            "heads": option_slider("custom: heads", opts["heads"], values["heads"]),
        }
        figure = Figure(figsize=(10, 5.0), dpi=self.dpi)
        figure.patch.set_facecolor("white")
        self.partition_figure = PartitionFigure(figure)
        self.enable_partial_redraw(figure, self.partition_figure.animated)
        super().__init__("Lab 6 · Partition explorer", controls, figure)

    # ---- dependent options --------------------------------------------------------------------------------------

    def sync_controls(self, _changed) -> None:
        for name, (options, value) in options_for(self.values()).items():
            set_options(self.controls[name], options, value)

    # ---- the three parts of a lab ---------------------------------------------------------------------------------

    def compute(self, values: dict) -> budget.PartitionReport:
        """One ``budget.partition_report`` of the plan, model and cluster the controls name."""
        return budget.partition_report(model_for(values), plan_from(values), cluster_for(values))

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
        fit = "fits" if r.fits else "<b style='color:#C0392B'>does not fit</b>"
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
            f"<small>The ideal model (compute at half of peak, nominal links). The custom sliders apply when the model "
            f"is “custom”; t, p, v, m and the nodes offer only values that make a valid plan.</small>"
        )


def partition_lab(**initial) -> PartitionLab:
    """The partition explorer; keyword arguments set controls' initial values (``DEFAULTS`` lists the names).

    >>> lab = partition_lab(tensor_parallel=16, nodes=16)
    >>> lab.result["tensor_link"], lab.result["devices"]
    ('InfiniBand', 128)
    """
    return PartitionLab(**initial)
