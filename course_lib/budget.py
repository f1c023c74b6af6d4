"""Budget: the time of one training step of a plan on a cluster, what is exposed, and a search over plans.

Placement follows Megatron-LM's rank order: tensor-parallel ranks are adjacent (inside the NVLink domain when
t ≤ devices per node), data-parallel ranks next (stride t), pipeline stages outermost (stride t·d). A group that
spans nodes runs hierarchically: its members inside a node first combine over NVLink, then each of them talks
across the network on its own share of the node's links (``group_collective_phases``).

The dependency rule that decides what is exposed:
- tensor-parallel collectives sit on the critical path: the next operator needs their result;
- pipeline sends sit on the critical path: the next stage waits for the activations;
- data-parallel gradient reduction overlaps the backward pass (buckets are reduced while earlier layers still
  compute their gradients); with ZeRO-3 the parameter gathers overlap the compute of the same micro-batch
  (prefetching the next layer); the parameter all-gather after a ZeRO-1/2 optimizer step is exposed.
A transfer is exposed only by the part that does not fit into the compute it may overlap with.

Step time = m·(t_f + t_b + TP + PP per micro-batch) + bubble + exposed data-parallel time, with the bubble
(p−1)/v of one micro-batch slot (Narayanan et al. 2021 Eq. 1). Compute runs at ``compute_efficiency`` × peak
(default 0.5; the paper's 1T run reached 163 of 312 TFLOP/s, 52 %).

That is the ideal model of lessons 03 and 04 (``calibration=None``). By default (``calibration="default"``,
``parallelism.default_calibration``) ``step_time`` and ``search_plans`` run the calibrated model instead
(``calibrated_step_time``, with a ``parallelism.Calibration``): architecture-aware FLOPs, GEMM-size-dependent
efficiency, a fixed cost per layer and micro-batch, the heaviest of unevenly split pipeline stages, data-parallel
traffic in buckets, and one dependency rule for every ZeRO stage (``bucketed_exposure``): a parameter gather may hide
behind the previous layer's compute when the framework prefetches, a gradient bucket behind the rest of the
backward; the step's first gather and last bucket cannot hide.

>>> from course_lib.hardware import SELENE_3072
>>> from course_lib.parallelism import MEGATRON_1T, ParallelPlan
>>> plan = ParallelPlan(data_parallel=6, tensor_parallel=8, pipeline_parallel=64, micro_batch=1,
...                     grad_accum_steps=512, recompute="full", schedule="interleaved", virtual_stages=2)
>>> step = step_time(MEGATRON_1T, plan, SELENE_3072, calibration=None)
>>> format_time(step.total_s), step.binding_constraint
('1.99 min', 'compute')
>>> step = step_time(MEGATRON_1T, plan, SELENE_3072)   # the default calibration; measured: 163 TFLOP/s hardware
>>> format_time(step.total_s), format_flops_rate(step.hfu * SELENE_3072.accelerator.peak("bf16"))
('86.4 s', '194 TFLOP/s')
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np

from . import _check, collectives, units
from .compute import RECOMPUTE_OPTIONS, transformer_flops_per_iteration, transformer_forward_flops
from .hardware import Cluster, Link
from .parallelism import (
    ATTENTION_OPTIONS,
    PRECISION_RECIPES,
    ZERO_STAGES,
    Calibration,
    ParallelPlan,
    TransformerModel,
    check_plan_for_model,
    memory_breakdown,
    resolve_calibration,
    splits_evenly,
    stage_layers,
    step_transfers,
)

__all__ = [
    "exposed_after_overlap",
    "GroupPhase",
    "group_collective_phases",
    "group_collective_time",
    "axis_stride",
    "transfer_time_per_call",
    "transfer_table",
    "format_transfer_table",
    "StepTime",
    "step_time",
    "calibrated_step_time",
    "calibrated_cluster",
    "model_flops_per_step",
    "forward_flops_per_token",
    "bucketed_exposure",
    "PlanSearch",
    "search_plans",
    "PLAN_FIELDS",
    "worst_case_ranking",
    "BINDING_CONSTRAINTS",
    "partition_report",
    "binding_constraint",
]

# The fields that name one plan of a search (the schedule follows from virtual_stages).
PLAN_FIELDS = (
    "data_parallel",
    "tensor_parallel",
    "pipeline_parallel",
    "zero_stage",
    "micro_batch",
    "grad_accum_steps",
    "recompute",
    "sequence_parallel",
    "virtual_stages",
    "attention",
)
_GROUP_OPS = ("all_reduce", "reduce_scatter", "all_gather", "send_recv")
BINDING_CONSTRAINTS = ("compute", "exposed communication", "bubble", "memory", "batch divisibility")
_AXIS_STRIDE = {
    "tensor": lambda plan: 1,
    "data": lambda plan: plan.tensor_parallel,
    "pipeline": lambda plan: plan.tensor_parallel * plan.data_parallel,
}


def exposed_after_overlap(communication_s, overlap_window_s):
    """The part of a transfer no compute hides: max(0, T_comm − T_window).

    ``overlap_window_s`` is the compute that does not depend on the transfer and may run meanwhile (0 for a
    transfer on the critical path). The card's example: 2.02 ms of communication against 1 ms of local compute.

    >>> format_time(exposed_after_overlap(2.02e-3, 1e-3)), format_time(exposed_after_overlap(2.02e-3, 0))
    ('1.02 ms', '2.02 ms')
    """
    communication_s = _check.nonnegative("communication_s", communication_s)
    overlap_window_s = _check.nonnegative("overlap_window_s", overlap_window_s)
    return _check.as_result(np.maximum(communication_s - overlap_window_s, 0.0))


@dataclass(frozen=True)
class GroupPhase:
    """One phase of a group collective: ``op`` by ``ranks`` ranks on one level of the cluster.

    ``level`` is "in node" (the NVLink domain) or "across nodes" (the network); ``link`` is that level's
    ``hardware.Link`` and ``bandwidth_bytes_per_s`` what the α–β formulas need from it (one-way, per GPU: for the
    network, the GPU's share of its node's links). ``cost`` holds n, Q, R (``collectives.collective_cost``) and
    ``terms`` n·α, Q/B, R·γ (``collectives.time_terms``). A phase on one rank moves nothing and takes 0 s. Fields
    are arrays when groups were evaluated in bulk.
    """

    level: str
    op: str
    ranks: int
    payload_bytes: float
    link: Link
    bandwidth_bytes_per_s: float
    latency_s: float
    cost: collectives.CollectiveCost
    terms: collectives.TimeTerms

    @property
    def time_s(self):
        """Seconds this phase takes: n·α + Q/B + R·γ."""
        return self.terms.total_s


def group_collective_phases(op, cluster: Cluster, group_size, stride, payload_bytes) -> tuple:
    """The phases of one collective call by a group of ranks ``stride`` apart, placed on ``cluster``, in order.

    k = members of the group per node, N = nodes it spans. all_reduce is hierarchical: reduce-scatter in node over
    k ranks on S, all-reduce across nodes over N ranks on S/k (each of a node's k members on its own share of the
    network), all-gather in node over k on S. reduce_scatter is its first two phases; all_gather is an all-gather
    across nodes on S/k, then in node on S; send_recv crosses the network when the group spans nodes, else stays
    in node (the other phase has one rank). Inside one node (N = 1) these are the flat rings.

    A group of 16 ranks at stride 1 on 8-GPU nodes (Selene: NVLink 300 GB/s and α = 1 µs, InfiniBand 25 GB/s
    and α = 5 µs per GPU), all-reducing 50 MB:

    >>> from course_lib.hardware import SELENE_3072
    >>> for phase in group_collective_phases("all_reduce", SELENE_3072, 16, 1, 50 * MB):
    ...     print(phase.level, phase.op, phase.ranks, format_bytes(phase.payload_bytes), format_time(phase.time_s))
    in node reduce_scatter 8 50 MB 153 µs
    across nodes all_reduce 2 6.25 MB 260 µs
    in node all_gather 8 50 MB 153 µs
    """
    collectives.check_algorithm(op, "ring")
    if op not in _GROUP_OPS:
        raise ValueError(f"op must be one of {', '.join(map(repr, _GROUP_OPS))} for a training step; got {op!r}")
    n = _check.count("group_size", group_size)
    stride = _check.count("stride", stride)
    s = _check.positive("payload_bytes", payload_bytes)
    g = cluster.devices_per_node
    k = np.where(stride >= g, 1, np.minimum(n, np.maximum(g // stride, 1)))
    nodes = np.maximum(n // k, 1)
    if op == "send_recv":  # one message: over the network if the group spans nodes, else over NVLink
        spans = nodes > 1
        layout = (("in node", op, np.where(spans, 1, n), s), ("across nodes", op, np.where(spans, n, 1), s))
    else:
        in_node, across = ("in node", op, k, s), ("across nodes", op, nodes, s / k)
        layout = {
            "all_reduce": (("in node", "reduce_scatter", k, s), across, ("in node", "all_gather", k, s)),
            "reduce_scatter": (in_node, across),
            "all_gather": (across, in_node),
        }[op]
    return tuple(_group_phase(cluster, *phase) for phase in layout)


def _group_phase(cluster: Cluster, level, op, ranks, payload_bytes) -> GroupPhase:
    if level == "in node":
        link, bandwidth = cluster.intra_node_link, cluster.intra_bandwidth_bytes_per_s
    else:
        link, bandwidth = cluster.inter_node_link, cluster.inter_bandwidth_bytes_per_s
    ranks = int(ranks) if np.ndim(ranks) == 0 else np.asarray(ranks)
    terms = collectives.time_terms(op, ranks, payload_bytes, bandwidth, link.latency_s)
    return GroupPhase(
        level=level,
        op=op,
        ranks=ranks,
        payload_bytes=payload_bytes,
        link=link,
        bandwidth_bytes_per_s=bandwidth,
        latency_s=link.latency_s,
        terms=terms,
        cost=terms.cost,
    )


def group_collective_time(op, cluster: Cluster, group_size, stride, payload_bytes):
    """Time of one collective call by a group of ranks ``stride`` apart, placed on ``cluster``: the sum of its
    ``group_collective_phases``.

    >>> from course_lib.hardware import DGX_H100
    >>> format_time(group_collective_time("all_reduce", DGX_H100, 8, 1, 1e9))
    '3.9 ms'
    """
    phases = group_collective_phases(op, cluster, group_size, stride, payload_bytes)
    return _check.as_result(sum(phase.time_s for phase in phases))


def axis_stride(axis, plan: ParallelPlan):
    """Distance between neighbouring ranks of a group on ``axis`` in Megatron-LM's rank order (tensor innermost).

    >>> axis_stride("tensor", ParallelPlan(tensor_parallel=8, data_parallel=4)), axis_stride("pipeline", ParallelPlan(
    ...     tensor_parallel=8, data_parallel=4, pipeline_parallel=2))
    (1, 32)
    """
    _check.choice("axis", axis, tuple(_AXIS_STRIDE))
    return _AXIS_STRIDE[axis](plan)


def transfer_time_per_call(transfer, plan: ParallelPlan, cluster: Cluster):
    """Seconds one call of a ``parallelism.BoundaryTransfer`` takes on ``cluster``, where ``plan`` places its group.

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import GPT3_175B, step_transfers
    >>> plan = ParallelPlan(tensor_parallel=8)
    >>> format_time(transfer_time_per_call(step_transfers(GPT3_175B, plan)[0], plan, DGX_H100))
    '210 µs'
    """
    return _check.as_result(sum(phase.time_s for phase in _transfer_phases(transfer, plan, cluster)))


def _transfer_phases(transfer, plan: ParallelPlan, cluster: Cluster) -> tuple:
    """``group_collective_phases`` of one call of ``transfer``, its group placed by ``plan`` (``axis_stride``)."""
    return group_collective_phases(
        transfer.op, cluster, transfer.group_size, axis_stride(transfer.axis, plan), transfer.payload_bytes
    )


def transfer_table(
    model: TransformerModel, plan: ParallelPlan, cluster: Cluster, *, compute_efficiency=0.5, dtype="bf16"
) -> tuple[dict, ...]:
    """One row per tensor that crosses a device boundary in a step of ``plan`` on ``cluster`` (the ideal model,
    ``step_time`` with ``calibration=None``): the one list of a plan's transfers, for the lessons' tables and
    ``partition_report``.

    Each row is a plain dict: ``axis``, ``tensor``, ``op``, ``payload_bytes`` (S of one call), ``group_size``,
    ``calls_per_step`` and ``phase`` (what it may hide behind) from ``parallelism.boundary_tensors``; ``levels``,
    the levels its phases run on with more than one rank ("in node", "across nodes" or "in node + across nodes",
    from ``group_collective_phases``); ``crosses_nodes`` and ``link``, the name of the network's link if it crosses
    nodes, else of the node's (``link_family``: its ``hardware.Link.family``);
    ``time_per_call_s`` (``transfer_time_per_call``), ``time_s``
    (per step: × calls) and ``exposed_s``, its share of the exposed time of the transfers it overlaps with (same axis
    and phase; ``step_time``'s dependency rule, compute at ``compute_efficiency`` × peak), so the axis totals are
    ``step_time``'s. Two DGX H100 nodes, t = 8 in a node and d = 2 across them, one micro-batch of GPT-3 (the
    gradients' 2 B × Ψ/8 = 43.7 GB reduced over the network, 2 × 1/2 × 43.7 GB / 50 GB/s ≈ 873 ms, of which the
    last backward pass, 372 ms at half of the H100's peak, hides as much: 873 − 372 ≈ 502 ms exposed):

    >>> from course_lib.hardware import H100, INFINIBAND_NDR_8X, NVLINK4
    >>> from course_lib.parallelism import GPT3_175B
    >>> two_nodes = Cluster("2 × DGX H100", H100, 8, 2, NVLINK4, INFINIBAND_NDR_8X)
    >>> rows = transfer_table(GPT3_175B, ParallelPlan(data_parallel=2, tensor_parallel=8), two_nodes)
    >>> [(row["axis"], row["op"], row["levels"], row["link"].split()[0], row["calls_per_step"]) for row in rows]
    [('tensor', 'all_reduce', 'in node', 'NVLink', 192), ('tensor', 'all_reduce', 'in node', 'NVLink', 192), \
('data', 'all_reduce', 'across nodes', 'InfiniBand', 1)]
    >>> format_bytes(rows[2]["payload_bytes"]), format_time(rows[2]["time_s"]), format_time(rows[2]["exposed_s"])
    ('43.7 GB', '873 ms', '502 ms')
    """
    _check_cluster_holds(plan, cluster)
    forward, backward = _microbatch_compute_s(model, plan, cluster, compute_efficiency, dtype)
    return _transfer_rows(cluster, *_timed_transfers(model, plan, cluster, forward, backward))


def _transfer_rows(cluster, timed, per_phase, exposed_phase) -> tuple[dict, ...]:
    """``transfer_table``'s rows from ``_timed_transfers``' result."""
    rows = []
    for transfer, seconds, phases in timed:
        if not transfer.crosses_boundary:
            continue
        spanned = {phase.level for phase in phases if np.all(np.asarray(phase.ranks) > 1)}
        levels = tuple(level for level in ("in node", "across nodes") if level in spanned)
        crosses_nodes = "across nodes" in levels
        link = cluster.inter_node_link if crosses_nodes else cluster.intra_node_link
        key = (transfer.axis, transfer.phase)
        share = float(seconds / per_phase[key]) if per_phase[key] > 0 else 0.0
        rows.append(
            {
                "axis": transfer.axis,
                "tensor": transfer.tensor,
                "op": transfer.op,
                "payload_bytes": float(transfer.payload_bytes),
                "group_size": int(transfer.group_size),
                "calls_per_step": int(transfer.calls_per_step),
                "phase": transfer.phase,
                "levels": " + ".join(levels),
                "link": link.name,
                "link_family": link.family,
                "crosses_nodes": crosses_nodes,
                "time_per_call_s": float(sum(phase.time_s for phase in phases)),
                "time_s": float(seconds),
                "exposed_s": float(share * exposed_phase[key]),
            }
        )
    return tuple(rows)


def format_transfer_table(rows) -> str:
    """``transfer_table``'s rows (or ``partition_report``'s ``transfers``) as a text table, one line per tensor,
    quantities with their units: the levels of the cluster its group spans, time per call and per step, the part
    of it nothing hides, and what it may hide behind.

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import GPT3_175B
    >>> rows = transfer_table(GPT3_175B, ParallelPlan(tensor_parallel=8), DGX_H100)
    >>> print(format_transfer_table(rows[:1]))  # doctest: +NORMALIZE_WHITESPACE
    axis tensor collective payload ranks links per call calls per step exposed hidden by
    tensor layer outputs (partial sums), forward all_reduce 50.3 MB 8 in node 210 µs 192 40.3 ms 40.3 ms none
    """
    lines = [
        f"{'axis':8} {'tensor':46} {'collective':14} {'payload':>8} {'ranks':>5} {'links':21} {'per call':>8} "
        f"{'calls':>6} {'per step':>9} {'exposed':>9}  hidden by"
    ]
    for row in rows:
        lines.append(
            f"{row['axis']:8} {row['tensor']:46} {row['op']:14} {units.format_bytes(row['payload_bytes']):>8} "
            f"{row['group_size']:>5} {row['levels']:21} {units.format_time(row['time_per_call_s']):>8} "
            f"{row['calls_per_step']:>6} {units.format_time(row['time_s']):>9} {units.format_time(row['exposed_s']):>9}"
            f"  {row['phase']}"
        )
    return "\n".join(lines)


@dataclass(frozen=True, eq=False)
class StepTime:
    """Where the time of one step goes (seconds). Fields may be arrays when plans were evaluated in bulk.

    ``mfu`` (model FLOPs utilisation) counts the model's FLOPs of the step, forward and backward, without
    recomputation; ``hfu`` (hardware FLOPs utilisation) adds the recomputed forward FLOPs. Both divide by
    devices × peak × step time. Narayanan et al. 2021's 163 TFLOP/s/GPU (Eq. (3), full recomputation) is a hardware
    figure: its MFU is about 6/8 of it.
    """

    compute_s: float
    bubble_s: float
    exposed_s: dict
    overlapped_s: dict
    total_s: float
    mfu: float = float("nan")
    hfu: float = float("nan")

    @property
    def exposed_communication_s(self):
        """Communication time nothing hides: tensor + pipeline + exposed data-parallel."""
        return sum(self.exposed_s.values())

    @property
    def binding_constraint(self):
        """The largest of the step's three terms, the one that most limits it: "compute", "exposed communication"
        or "bubble" (ties go to compute, then to exposed communication).

        >>> StepTime(21.4, 1.67, {"tensor": 1.73}, {}, 24.8).binding_constraint   # compute 21.4 of 24.8 s
        'compute'
        >>> StepTime(2.0, 1.0, {"tensor": 3.0}, {}, 6.0).binding_constraint
        'exposed communication'
        """
        return binding_constraint(self.compute_s, self.exposed_communication_s, self.bubble_s)


def binding_constraint(compute_s, exposed_communication_s, bubble_s):
    """What binds a step: the largest of its compute, exposed communication and bubble (vectorised: arrays give an
    array of labels). Ties go to compute, then to exposed communication.

    >>> binding_constraint(21.4, 1.73, 1.67), binding_constraint(1.0, 0.5, 2.0)
    ('compute', 'bubble')
    """
    compute = np.asarray(_check.nonnegative("compute_s", compute_s))
    exposed = np.asarray(_check.nonnegative("exposed_communication_s", exposed_communication_s))
    bubble = np.asarray(_check.nonnegative("bubble_s", bubble_s))
    label = np.where(
        (compute >= exposed) & (compute >= bubble),
        "compute",
        np.where(exposed >= bubble, "exposed communication", "bubble"),
    )
    return str(label) if label.ndim == 0 else label


def step_time(
    model: TransformerModel,
    plan: ParallelPlan,
    cluster: Cluster,
    compute_efficiency=0.5,
    dtype="bf16",
    calibration="default",
):
    """Time of one optimizer step of ``plan`` on ``cluster``, split into compute, bubble, exposed and hidden comm.

    See the module docstring for the placement and the dependency rule. ``calibration``: "default" (the documented
    calibration for ``cluster``, ``parallelism.default_calibration``), a ``parallelism.Calibration`` (both run
    ``calibrated_step_time``; ``compute_efficiency`` is then unused) or None (the ideal model, ``compute_efficiency``
    × peak).

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import GPT2_1_5B, ParallelPlan
    >>> plan = ParallelPlan(data_parallel=8, micro_batch=4, grad_accum_steps=4)
    >>> step = step_time(GPT2_1_5B, plan, DGX_H100, calibration=None)   # the ideal model
    >>> format_time(step.compute_s), format_time(step.exposed_s["data"]), format_time(step.overlapped_s["data"])
    ('340 ms', '0 s', '12.1 ms')
    >>> format_time(step_time(GPT2_1_5B, plan, DGX_H100).total_s)     # the default calibration
    '1.06 s'
    """
    _check_cluster_holds(plan, cluster)
    calibration = resolve_calibration(calibration, cluster)
    if calibration is not None:
        return calibrated_step_time(model, plan, cluster, calibration, dtype)
    return _ideal_step_time(model, plan, cluster, compute_efficiency, dtype)[0]


def _check_cluster_holds(plan, cluster):
    if np.any(np.asarray(plan.devices) > cluster.devices):
        raise ValueError(f"plan needs {plan.devices} devices; the cluster has {cluster.devices}")


def _ideal_step_time(model, plan, cluster, compute_efficiency, dtype):
    """``step_time``'s ideal model (compute at ``compute_efficiency`` × peak): the StepTime, and the
    ``_timed_transfers`` result it was built from (``partition_report`` makes its table rows from it)."""
    p, m, v = plan.pipeline_parallel, plan.grad_accum_steps, plan.virtual_stages
    shape = (model.seq_len, model.layers, model.hidden, model.vocab)
    forward, backward = _microbatch_compute_s(model, plan, cluster, compute_efficiency, dtype)
    total_mb = forward + backward
    timed = _timed_transfers(model, plan, cluster, forward, backward)
    _, per_phase, exposed_phase = timed

    exposed = {"tensor": 0.0, "pipeline": 0.0, "data": 0.0}
    overlapped = {"tensor": 0.0, "pipeline": 0.0, "data": 0.0}
    for (axis, phase), seconds in per_phase.items():
        not_hidden = exposed_phase[(axis, phase)]
        exposed[axis] = exposed[axis] + not_hidden
        overlapped[axis] = overlapped[axis] + seconds - not_hidden

    slot = total_mb + (exposed["tensor"] + exposed["pipeline"]) / m  # one micro-batch through one stage
    bubble = (p - 1) / v * slot
    compute = m * total_mb
    total = m * slot + bubble + exposed["data"]
    samples = plan.global_batch
    model_flops = transformer_flops_per_iteration(samples, *shape, recompute="none")
    hardware_flops = transformer_flops_per_iteration(samples, *shape, recompute=plan.recompute)
    peak_time = plan.devices * cluster.accelerator.peak(dtype) * total
    step = StepTime(
        _check.as_result(compute),
        _check.as_result(bubble),
        {k: _check.as_result(x) for k, x in exposed.items()},
        {k: _check.as_result(x) for k, x in overlapped.items()},
        _check.as_result(total),
        _check.as_result(model_flops / peak_time),
        _check.as_result(hardware_flops / peak_time),
    )
    return step, timed


def _microbatch_compute_s(model, plan, cluster, compute_efficiency, dtype):
    """(forward, backward with recomputation) seconds of one micro-batch on one device, ideal model."""
    efficiency = _check.fraction("compute_efficiency", compute_efficiency)
    rate = cluster.accelerator.peak(dtype) * efficiency
    t, p = plan.tensor_parallel, plan.pipeline_parallel
    shape = (model.seq_len, model.layers, model.hidden, model.vocab)
    forward = transformer_forward_flops(plan.micro_batch, *shape) / (t * p) / rate
    total_mb = transformer_flops_per_iteration(plan.micro_batch, *shape, recompute=plan.recompute) / (t * p) / rate
    return forward, total_mb - forward  # the backward includes recomputation


def _timed_transfers(model, plan, cluster, forward, backward):
    """The step's transfers with their seconds per step and their ``group_collective_phases``, and per (axis,
    phase) their total and exposed seconds.

    The dependency rule: "none" hides behind nothing; "last backward" behind one micro-batch's backward;
    "forward"/"backward" transfers recur every micro-batch, each behind its own forward or backward, so m windows.
    """
    m = plan.grad_accum_steps
    windows = {"forward": forward, "backward": backward}
    timed, per_phase = [], {}  # (axis, phase) -> total seconds per step of the transfers with that phase
    for transfer in step_transfers(model, plan):
        phases = _transfer_phases(transfer, plan, cluster)
        seconds = transfer.calls_per_step * sum(phase.time_s for phase in phases)  # × transfer_time_per_call
        timed.append((transfer, seconds, phases))
        key = (transfer.axis, transfer.phase)
        per_phase[key] = per_phase.get(key, 0.0) + seconds
    exposed = {}
    for (axis, phase), seconds in per_phase.items():
        window = {"none": 0.0, "last backward": backward}.get(phase, m * windows.get(phase, 0.0))
        exposed[(axis, phase)] = exposed_after_overlap(seconds, window)
    return timed, per_phase, exposed


def calibrated_cluster(cluster: Cluster, calibration: Calibration) -> Cluster:
    """``cluster`` with the calibration's links (when set) and its network at ``network_efficiency`` of nominal.

    >>> from course_lib.hardware import DGX_H100
    >>> format_bandwidth(calibrated_cluster(DGX_H100, Calibration(network_efficiency=0.5)).inter_bandwidth_bytes_per_s)
    '25 GB/s'
    """
    intra = calibration.intra_node_link or cluster.intra_node_link
    inter = calibration.inter_node_link or cluster.inter_node_link
    if calibration.network_efficiency != 1.0:
        inter = replace(
            inter,
            name=f"{inter.name} at {calibration.network_efficiency:.0%}",
            bandwidth_bytes_per_s=inter.bandwidth_bytes_per_s * calibration.network_efficiency,
        )
    if calibration.network_latency_s is not None:
        inter = replace(inter, latency_s=calibration.network_latency_s)
    return replace(cluster, intra_node_link=intra, inter_node_link=inter)


def model_flops_per_step(model: TransformerModel, plan: ParallelPlan, recompute=None):
    """FLOPs of one step, architecture-aware: 3 × the forward of every layer and the output layer, over the global
    batch, plus the recomputed forward (``recompute``; default the plan's: "full" one layer forward, "selective"
    the attention scores and their product with V). Per token a layer's forward is 2 FLOPs per matrix weight plus
    4sh for QKᵀ and the product with V (as Narayanan et al. 2021's appendix, no causal saving); the output layer
    2Vh. With ``recompute="none"`` this is the model FLOPs of MFU.

    >>> from course_lib.parallelism import GPT3_175B
    >>> from course_lib.compute import transformer_flops_per_iteration
    >>> plan = ParallelPlan(grad_accum_steps=1536, recompute="full")
    >>> f"{model_flops_per_step(GPT3_175B, plan) / transformer_flops_per_iteration(1536, 2048, 96, 12288, 51200):.4f}"
    '1.0000'
    """
    recompute = plan.recompute if recompute is None else _check.choice("recompute", recompute, RECOMPUTE_OPTIONS)
    layer, head, core = forward_flops_per_token(model)
    extra = {"none": 0.0, "selective": core, "full": layer}[recompute]
    tokens = 1.0 * plan.global_batch * model.seq_len
    return _check.as_result(tokens * (3 * (model.layers * layer + head) + model.layers * extra))


def forward_flops_per_token(model: TransformerModel):
    """(one layer's forward, the output layer's forward, the attention core's forward) FLOPs per token: 2 per matrix
    weight, 4sh for QKᵀ and the product with V (no causal saving), 2Vh for the output layer.

    >>> from course_lib.parallelism import GPT3_175B
    >>> layer, head, core = forward_flops_per_token(GPT3_175B)
    >>> layer == 24 * 12288**2 + 4 * 2048 * 12288, head == 2 * 51200 * 12288   # Narayanan et al. 2021, per token
    (True, True)
    """
    h, s = model.hidden, model.seq_len
    core = 4.0 * s * h
    return 2.0 * model.matmul_weights_per_layer + core, 2.0 * model.vocab * h, core


def bucketed_exposure(total_s, bucket_s, window_s, occurrences=1):
    """Exposed seconds of a stream of bucketed collectives (total ``total_s`` per occurrence, the boundary bucket
    ``bucket_s``) that may overlap ``window_s`` of independent compute, ``occurrences`` times per step.

    The dependency rule, one for every ZeRO stage: each occurrence hides behind its window what fits,
    max(0, T − W); the step's boundary bucket cannot hide (the first parameter gather has no earlier layer to
    prefetch behind, the last gradient bucket no later layer), so at least ``bucket_s`` is exposed once.

    >>> bucketed_exposure(10e-3, 1e-3, 4e-3), bucketed_exposure(10e-3, 1e-3, 20e-3, occurrences=4)
    (0.006, 0.001)
    """
    total_s = _check.nonnegative("total_s", total_s)
    bucket_s = _check.nonnegative("bucket_s", bucket_s)
    window_s = _check.nonnegative("window_s", window_s)
    occurrences = _check.count("occurrences", occurrences)
    behind = np.maximum(total_s - window_s, 0.0)
    return _check.as_result((occurrences - 1) * behind + np.maximum(behind, bucket_s))


def calibrated_step_time(
    model: TransformerModel, plan: ParallelPlan, cluster: Cluster, calibration: Calibration, dtype="bf16"
):
    """Step time of the calibrated model: the heaviest pipeline stage, one micro-batch slot at a time.

    Per micro-batch on the heaviest stage (⌈l/p⌉ layers, the output layer on the last stage):
    - compute: its FLOPs (``model_flops_per_step``'s terms) / t at peak × efficiency, the efficiency
      ``gemm_efficiency`` · x/(x + ``gemm_half_flops``) with x the per-GPU forward FLOPs of one layer (small
      micro-batch × sequence, or large t, run below the big-GEMM efficiency), plus ``layer_overhead_s`` per layer;
    - tensor parallel, on the critical path, per layer: 2 all-reduces forward and 2 backward of b·s·h (sequence
      parallel: all-gather + reduce-scatter for each), full recomputation repeating the forward ones;
    - pipeline, on the critical path: the boundary activations sent forward and their gradients back, b·s·h/t
      each, v times with interleaving (``group_collective_phases``: over NVLink inside a node, else the network).
    Step = m slots + (p−1)/v slots of bubble + the exposed data-parallel time.
    Data parallel, in buckets of ``bucket_bytes`` (each bucket a collective with its own latency), exposed by
    ``bucketed_exposure``: gradients (fp32 with the "bf16-fp32-grads" recipe) reduced once per step behind the last
    micro-batch's backward (ZeRO-0/1), or reduce-scattered every micro-batch behind its backward (ZeRO-2/3);
    updated parameters all-gathered after the step behind the first forward (ZeRO-1/2), or gathered for every
    forward and backward (ZeRO-3) — hidden only if the framework prefetches (``prefetch_parameter_gathers``).
    Communication that overlaps compute slows it by ``overlap_slowdown`` × its time.

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import PLAYBOOK_1B
    >>> plan = ParallelPlan(data_parallel=8, micro_batch=1, grad_accum_steps=32, attention="flash")
    >>> step = step_time(PLAYBOOK_1B, plan, DGX_H100, calibration=Calibration())
    >>> format_time(step.total_s), format_percent(step.mfu)
    ('2.56 s', '50 %')
    """
    check_plan_for_model(model, plan, calibration)
    cluster = calibrated_cluster(cluster, calibration)
    peak = cluster.accelerator.peak(dtype)
    t, p, d, b, m, v = plan.sizes
    layers = stage_layers(model.layers, p)
    tokens = 1.0 * b * model.seq_len
    layer_fwd, head_fwd, core_fwd = (x * tokens / t for x in forward_flops_per_token(model))
    efficiency = calibration.gemm_efficiency * layer_fwd / (layer_fwd + calibration.gemm_half_flops)
    rate = peak * efficiency
    extra = {"none": 0.0, "selective": core_fwd, "full": layer_fwd}[plan.recompute]
    # The last stage also runs the output layer; with p = 1 one device runs everything.
    stage_fwd = layers * layer_fwd + head_fwd
    forward = stage_fwd / rate
    backward = (2 * stage_fwd + layers * extra) / rate
    overhead = layers * calibration.layer_overhead_s
    compute_mb = forward + backward + overhead

    activation = 2.0 * tokens * model.hidden  # one b×s×h tensor in 16 bit
    repeat = 2 if plan.recompute == "full" else 1

    def collective(op, size, stride, payload):
        return group_collective_time(op, cluster, size, stride, payload)

    if plan.sequence_parallel:
        gather = collective("all_gather", t, 1, activation)
        scatter = collective("reduce_scatter", t, 1, activation)
        tp_layer = (gather + scatter) * (2 * repeat + 2)
    else:
        tp_layer = collective("all_reduce", t, 1, activation) * (2 * repeat + 2)
    tp_mb = np.where(np.asarray(t) > 1, layers * tp_layer, 0.0)
    hop = group_collective_time("send_recv", cluster, p, t * d, activation / t)
    pp_mb = np.where(np.asarray(p) > 1, 2 * v * hop, 0.0)
    slot = compute_mb + tp_mb + pp_mb
    bubble = (p - 1) / v * slot

    param_b, grad_b, buffer_b, _ = PRECISION_RECIPES[calibration.precision]
    params_here = (layers * model.params_per_layer + model.vocab * model.hidden) / t
    reduce_bytes = (4.0 if buffer_b else grad_b) * params_here
    gather_bytes = param_b * params_here
    stride = t

    def stream(op, payload):
        buckets = np.maximum(np.ceil(payload / calibration.bucket_bytes), 1)
        per_bucket = collective(op, d, stride, payload / buckets)
        return np.where(np.asarray(d) > 1, buckets * per_bucket, 0.0), np.where(np.asarray(d) > 1, per_bucket, 0.0)

    stage = plan.zero_stage
    reduce_op = "all_reduce" if stage == 0 else "reduce_scatter"
    reduce_s, reduce_bucket = stream(reduce_op, reduce_bytes)
    prefetch = 1.0 if calibration.prefetch_parameter_gathers else 0.0
    fwd_window, bwd_window = forward + 0.0 * m, backward + 0.0 * m
    if stage >= 2:
        exposed_data = bucketed_exposure(reduce_s, reduce_bucket, bwd_window, m)
        reduce_total = m * reduce_s
    else:
        exposed_data = bucketed_exposure(reduce_s, reduce_bucket, bwd_window)
        reduce_total = reduce_s
    gather_s, gather_bucket = stream("all_gather", gather_bytes)
    gather_total = 0.0
    if stage in (1, 2):
        exposed_data = exposed_data + bucketed_exposure(gather_s, gather_bucket, prefetch * fwd_window)
        gather_total = gather_s
    elif stage == 3:
        exposed_data = exposed_data + bucketed_exposure(gather_s, gather_bucket, prefetch * fwd_window, m)
        exposed_data = exposed_data + bucketed_exposure(gather_s, 0.0, prefetch * bwd_window, m)
        gather_total = 2 * m * gather_s
    hidden_data = np.maximum(reduce_total + gather_total - exposed_data, 0.0)
    slowdown = calibration.overlap_slowdown * hidden_data
    exposed = {
        "tensor": _check.as_result(m * tp_mb),
        "pipeline": _check.as_result(m * pp_mb),
        "data": _check.as_result(exposed_data + slowdown),
    }
    overlapped = {"tensor": 0.0, "pipeline": 0.0, "data": _check.as_result(hidden_data)}
    total = m * slot + bubble + exposed["data"]
    peak_time = plan.devices * peak * total
    return StepTime(
        _check.as_result(m * compute_mb),
        _check.as_result(bubble),
        exposed,
        overlapped,
        _check.as_result(total),
        _check.as_result(model_flops_per_step(model, plan, "none") / peak_time),
        _check.as_result(model_flops_per_step(model, plan) / peak_time),
    )


@dataclass(frozen=True, eq=False)
class PlanSearch:
    """Every plan considered, as columns (numpy arrays, one row per plan), ranked: feasible plans first, fastest
    first. ``rejected`` counts plans by reason ("partition", "batch divisibility", "memory")."""

    columns: dict
    evaluated: int
    rejected: dict
    capacity_bytes: float

    def __len__(self):
        return len(self.columns["step_time_s"])

    @property
    def feasible(self):
        """Boolean mask of the rows that fit in memory."""
        return self.columns["fits"]

    def row(self, row: int) -> dict:
        """One row as plain Python values."""
        return {name: values[row].item() for name, values in self.columns.items()}

    def plan(self, row: int) -> ParallelPlan:
        """The ParallelPlan of one row (row 0 is the best feasible plan)."""
        c = self.columns
        return ParallelPlan(
            data_parallel=int(c["data_parallel"][row]),
            tensor_parallel=int(c["tensor_parallel"][row]),
            pipeline_parallel=int(c["pipeline_parallel"][row]),
            zero_stage=int(c["zero_stage"][row]),
            micro_batch=int(c["micro_batch"][row]),
            grad_accum_steps=int(c["grad_accum_steps"][row]),
            recompute=str(c["recompute"][row]),
            sequence_parallel=bool(c["sequence_parallel"][row]),
            schedule=str(c["schedule"][row]),
            virtual_stages=int(c["virtual_stages"][row]),
            attention=str(c["attention"][row]),
        )

    def best(self, count: int = 5) -> list:
        """The ``count`` fastest feasible plans."""
        count = _check.count("count", count)
        return [self.plan(row) for row in range(min(count, int(np.sum(self.feasible))))]

    def fastest_within(self, memory_bytes) -> int:
        """The row of the fastest plan that needs at most ``memory_bytes`` per device (e.g. the capacity less some
        headroom); re-ranks this search without evaluating any plan again. Raises ValueError if none does.

        >>> from course_lib.hardware import DGX_H100
        >>> from course_lib.parallelism import GPT2_1_5B
        >>> found = search_plans(GPT2_1_5B, DGX_H100, global_batch=512, calibration=None)   # the ideal model
        >>> found.fastest_within(80 * GB), found.fastest_within(10 * GB)   # row 0 needs 12.1 GB (see ``table``)
        (0, 90)
        >>> found.row(90)["recompute"], format_bytes(found.row(90)["memory_bytes"])
        ('selective', '5.79 GB')
        """
        limit = _check.positive("memory_bytes", memory_bytes)
        rows = np.flatnonzero(self.feasible & (self.columns["memory_bytes"] <= limit))
        if len(rows) == 0:
            raise ValueError(f"memory_bytes must leave room for at least one plan; no plan needs {limit:.3g} B or less")
        return int(rows[0])

    def fields(self, row: int) -> dict:
        """The ``PLAN_FIELDS`` of one row, as plain Python values: what ``find`` needs to find the plan again."""
        return {name: self.columns[name][row].item() for name in PLAN_FIELDS}

    def find(self, **fields) -> int:
        """The one row whose columns equal ``fields`` (e.g. ``tensor_parallel=8, zero_stage=0``).

        Raises ValueError naming the fields when no row or several rows match, or a field is not a column.

        >>> from course_lib.hardware import DGX_H100
        >>> from course_lib.parallelism import GPT2_1_5B
        >>> found = search_plans(GPT2_1_5B, DGX_H100, global_batch=512, calibration=None)
        >>> found.find(data_parallel=8, zero_stage=2, micro_batch=1, recompute="none")
        7
        >>> found.find(data_parallel=8, zero_stage=3)
        Traceback (most recent call last):
        ...
        ValueError: 12 plans match data_parallel=8, zero_stage=3 (rows 0, 1, 3, 6, ...); name more fields
        """
        if not fields:
            raise ValueError(f"find needs at least one field; the fields are {', '.join(self.columns)}")
        unknown = sorted(set(fields) - set(self.columns))
        if unknown:
            raise ValueError(
                f"{', '.join(unknown)} is not a field of the search; the fields are {', '.join(self.columns)}"
            )
        match = np.ones(len(self), dtype=bool)
        for name, value in fields.items():
            match &= self.columns[name] == value
        rows = np.flatnonzero(match)
        wanted = ", ".join(f"{name}={value!r}" for name, value in fields.items())
        if len(rows) == 0:
            raise ValueError(
                f"no plan matches {wanted} (the columns hold only plans that partition the model and the batch)"
            )
        if len(rows) > 1:
            shown = ", ".join(str(row) for row in rows[:4]) + (", ..." if len(rows) > 4 else "")
            raise ValueError(f"{len(rows)} plans match {wanted} (rows {shown}); name more fields")
        return int(rows[0])

    def table(self, rows=range(5)) -> str:
        """Rows of the search as a text table: the plan (d, t, p, ZeRO stage, b, m, v, recomputation, sequence
        parallelism), its memory per device, step time, exposed communication, bubble and binding constraint.

        >>> from course_lib.hardware import DGX_H100
        >>> from course_lib.parallelism import GPT2_1_5B
        >>> print(search_plans(GPT2_1_5B, DGX_H100, global_batch=512, calibration=None).table([0, 7]))
         row    d   t   p ZeRO  b    m  v recompute  SP   memory     step  exposed   bubble  binding
           0    8   1   1    3  1   64  1      none  no  12.1 GB   1.36 s      0 s      0 s  compute
           7    8   1   1    2  1   64  1      none  no  14.8 GB   1.37 s  6.06 ms      0 s  compute
        """
        rows = [_check.count("rows", row, minimum=0) for row in rows]
        for row in rows:
            if row >= len(self):
                raise ValueError(f"rows must be row numbers in 0..{len(self) - 1}, got {row}")
        lines = [
            f"{'row':>4} {'d':>4} {'t':>3} {'p':>3} {'ZeRO':>4} {'b':>2} {'m':>4} {'v':>2} {'recompute':>9} {'SP':>3} "
            f"{'memory':>8} {'step':>8} {'exposed':>8} {'bubble':>8}  binding"
        ]
        for row in rows:
            r = self.row(row)
            lines.append(
                f"{row:>4} {r['data_parallel']:>4} {r['tensor_parallel']:>3} {r['pipeline_parallel']:>3} "
                f"{r['zero_stage']:>4} {r['micro_batch']:>2} {r['grad_accum_steps']:>4} {r['virtual_stages']:>2} "
                f"{r['recompute']:>9} {'yes' if r['sequence_parallel'] else 'no':>3} "
                f"{units.format_bytes(r['memory_bytes']):>8} {units.format_time(r['step_time_s']):>8} "
                f"{units.format_time(r['exposed_communication_s']):>8} {units.format_time(r['bubble_s']):>8}  "
                f"{r['binding_constraint']}"
            )
        return "\n".join(lines)


def worst_case_ranking(searches: dict, candidates: int = 10) -> list[dict]:
    """The plans of several searches of one model and cluster (one per scenario: calibration, efficiency, ...),
    ranked by their worst slowdown: in each scenario a plan's step time over that scenario's fastest feasible plan.

    The candidates are the ``candidates`` fastest feasible plans of every search. A plan a scenario does not hold,
    or that does not fit there, counts as infinitely slow in it. Each row: the plan's ``PLAN_FIELDS``,
    ``step_time_s`` and ``slowdown`` (dicts by scenario), ``worst_slowdown`` and ``worst_scenario``. The first row
    is the plan with the best worst case (minimax regret): rarely the fastest anywhere, never far from it.

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import GPT2_1_5B
    >>> searches = {f"η = {eta}": search_plans(GPT2_1_5B, DGX_H100, 512, compute_efficiency=eta, calibration=None)
    ...             for eta in (0.3, 0.6)}
    >>> [(round(row["worst_slowdown"], 4), row["worst_scenario"]) for row in worst_case_ranking(searches, 3)][-2:]
    [(1.0003, 'η = 0.6'), (1.0262, 'η = 0.6')]
    """
    count = _check.count("candidates", candidates)
    if not searches:
        raise ValueError("searches must hold at least one PlanSearch, by scenario name")
    names = list(searches)
    empty = [name for name, search in searches.items() if not np.any(search.feasible)]
    if empty:
        raise ValueError(f"searches must each hold a plan that fits; {', '.join(map(repr, empty))} holds none")
    index = {}
    for name, search in searches.items():
        keys = zip(*(search.columns[field].tolist() for field in PLAN_FIELDS), strict=True)
        index[name] = {key: row for row, key in enumerate(keys) if search.feasible[row]}
    pool = {}
    for search in searches.values():
        for row in range(min(count, int(np.sum(search.feasible)))):
            pool.setdefault(tuple(search.fields(row).values()), None)
    fastest = {name: float(searches[name].columns["step_time_s"][0]) for name in names}
    ranked = []
    for key in pool:
        times = {
            name: float(searches[name].columns["step_time_s"][index[name][key]]) if key in index[name] else np.inf
            for name in names
        }
        slowdown = {name: times[name] / fastest[name] for name in names}
        worst = max(names, key=lambda name: slowdown[name])
        ranked.append(
            dict(zip(PLAN_FIELDS, key, strict=True))
            | {"step_time_s": times, "slowdown": slowdown, "worst_slowdown": slowdown[worst], "worst_scenario": worst}
        )
    ranked.sort(key=lambda row: row["worst_slowdown"])  # stable: ties keep the first search's order
    return ranked


def _factorisations(devices: int):
    """All (d, t, p) with d·t·p = devices."""
    divisors = [x for x in range(1, devices + 1) if devices % x == 0]
    return [(devices // (t * p), t, p) for t in divisors for p in divisors if (devices // t) % p == 0]


def _options(name, values, check):
    """Check a non-empty collection of options, each with ``check``; return them without repeats, in order."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{name} must be a list of options, got {values!r}")
    checked = tuple(dict.fromkeys(check(v) for v in values))
    if not checked:
        raise ValueError(f"{name} must not be empty")
    return checked


def search_plans(
    model: TransformerModel,
    cluster: Cluster,
    global_batch,
    *,
    micro_batch_sizes=(1, 2, 4, 8),
    zero_stages=ZERO_STAGES,
    recompute=RECOMPUTE_OPTIONS,
    sequence_parallel=(False, True),
    virtual_stages=(1, 2, 4),
    compute_efficiency=0.5,
    dtype="bf16",
    calibration="default",
    attention=("standard",),
) -> PlanSearch:
    """Enumerate plans that use every device of ``cluster`` and rank those that fit.

    Plans: every factorisation d·t·p of the device count, × micro-batch sizes × ZeRO stages × recomputation ×
    sequence parallelism (only with t > 1) × virtual stages (v = 1 is 1F1B; v > 1 the interleaved schedule, only
    with p > 1). Rejected: "partition" (t does not divide the heads, or p·v the layers), "batch divisibility"
    (b·d does not divide the global batch, or m is not a multiple of p when interleaving), "memory" (the first
    stage's memory exceeds the device's HBM). The rest are ranked by step time; plans rejected for memory are kept
    in the columns (``fits`` False) so a figure can show them. Every row has its MFU and HFU (``StepTime``).

    ``calibration`` as in ``step_time`` (default "default"; None: the ideal model). Calibrated, the calibrated
    memory and step time rank the plans, p·v need not divide the
    layers, and plans combining p > 1 with a ZeRO stage above the calibration's ``max_zero_stage_with_pipeline``
    are rejected as "framework". ``attention`` lists the attention options ("standard", "flash") to consider.

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import GPT2_1_5B
    >>> found = search_plans(GPT2_1_5B, DGX_H100, global_batch=512, calibration=None)
    >>> found.evaluated, found.rejected
    (1632, {'partition': 1200, 'batch divisibility': 0, 'memory': 23})
    >>> best = found.row(0)   # GPT-2's 25 heads rule out tensor parallelism; NVLink hides ZeRO-3's gathers
    >>> best["data_parallel"], best["tensor_parallel"], best["zero_stage"], best["binding_constraint"]
    (8, 1, 3, 'compute')
    """
    batch = _check.count("global_batch", global_batch)
    micro_batch_sizes = _options("micro_batch_sizes", micro_batch_sizes, lambda v: _check.count("micro_batch_sizes", v))
    zero_stages = _options("zero_stages", zero_stages, lambda v: _check.choice("zero_stages", v, ZERO_STAGES))
    recompute = _options("recompute", recompute, lambda v: _check.choice("recompute", v, RECOMPUTE_OPTIONS))
    sequence_parallel = _options("sequence_parallel", sequence_parallel, lambda v: _check.flag("sequence_parallel", v))
    virtual_stages = _options("virtual_stages", virtual_stages, lambda v: _check.count("virtual_stages", v))
    attention = _options("attention", attention, lambda v: _check.choice("attention", v, ATTENTION_OPTIONS))
    _check.fraction("compute_efficiency", compute_efficiency)
    cluster.accelerator.peak(dtype)
    calibration = resolve_calibration(calibration, cluster)
    rejected = {"partition": 0, "batch divisibility": 0, "memory": 0}
    if calibration is not None:
        rejected = {"partition": 0, "framework": 0, "batch divisibility": 0, "memory": 0}
    rows = {
        name: []
        for name in (
            "data_parallel",
            "tensor_parallel",
            "pipeline_parallel",
            "zero_stage",
            "micro_batch",
            "grad_accum_steps",
            "recompute",
            "sequence_parallel",
            "schedule",
            "virtual_stages",
            "attention",
            "memory_bytes",
            "compute_s",
            "bubble_s",
            "exposed_communication_s",
            "step_time_s",
            "mfu",
            "hfu",
        )
    }
    evaluated = 0
    shapes = np.array(
        [(d, t, p, b) for (d, t, p) in _factorisations(cluster.devices) for b in micro_batch_sizes], dtype=np.int64
    ).reshape(-1, 4)
    d, t, p, b = shapes.T
    for stage, rc, sp, v, attn in itertools.product(
        zero_stages, recompute, sequence_parallel, virtual_stages, attention
    ):
        considered = (t > 1) | (not sp)
        considered &= (p > 1) | (v == 1)
        evaluated += int(considered.sum())
        if calibration is None:
            partition_ok = considered & splits_evenly(model, t, p, v)
            rejected["partition"] += int((considered & ~partition_ok).sum())
        else:
            split_ok = considered & splits_evenly(model, t)
            rejected["partition"] += int((considered & ~split_ok).sum())
            partition_ok = split_ok & ((p == 1) | (stage <= calibration.max_zero_stage_with_pipeline))
            rejected["framework"] += int((split_ok & ~partition_ok).sum())
        m = np.where(batch % (b * d) == 0, batch // (b * d), 0)
        batch_ok = partition_ok & (m > 0) & ((v == 1) | (m % p == 0))
        rejected["batch divisibility"] += int((partition_ok & ~batch_ok).sum())
        if not batch_ok.any():
            continue
        keep = batch_ok
        plan = ParallelPlan(
            data_parallel=d[keep],
            tensor_parallel=t[keep],
            pipeline_parallel=p[keep],
            zero_stage=stage,
            micro_batch=b[keep],
            grad_accum_steps=m[keep],
            recompute=rc,
            sequence_parallel=sp,
            schedule="interleaved" if v > 1 else "1f1b",
            virtual_stages=np.full(int(keep.sum()), v),
            attention=attn,
        )
        memory = np.broadcast_to(memory_breakdown(model, plan, calibration=calibration).total, d[keep].shape)
        step = step_time(model, plan, cluster, compute_efficiency, dtype, calibration)
        size = len(memory)
        for name, values in (
            ("data_parallel", d[keep]),
            ("tensor_parallel", t[keep]),
            ("pipeline_parallel", p[keep]),
            ("zero_stage", np.full(size, stage)),
            ("micro_batch", b[keep]),
            ("grad_accum_steps", m[keep]),
            ("recompute", np.full(size, rc)),
            ("sequence_parallel", np.full(size, sp)),
            ("schedule", np.full(size, "interleaved" if v > 1 else "1f1b")),
            ("virtual_stages", np.full(size, v)),
            ("attention", np.full(size, attn)),
            ("memory_bytes", memory),
            ("compute_s", np.broadcast_to(step.compute_s, (size,))),
            ("bubble_s", np.broadcast_to(step.bubble_s, (size,))),
            ("exposed_communication_s", np.broadcast_to(step.exposed_communication_s, (size,))),
            ("step_time_s", np.broadcast_to(step.total_s, (size,))),
            ("mfu", np.broadcast_to(step.mfu, (size,))),
            ("hfu", np.broadcast_to(step.hfu, (size,))),
        ):
            rows[name].append(values)
    columns = {name: np.concatenate(parts) if parts else np.array([]) for name, parts in rows.items()}
    capacity = cluster.accelerator.hbm_capacity_bytes
    fits = columns["memory_bytes"] <= capacity
    rejected["memory"] = int((~fits).sum())
    # Feasible first, then fastest; equal times (to 1 ns) go to the plan with more memory headroom.
    order = np.lexsort((columns["memory_bytes"], np.round(columns["step_time_s"], 9), ~fits))
    columns = {name: values[order] for name, values in columns.items()}
    columns["fits"] = fits[order]
    binding = binding_constraint(columns["compute_s"], columns["exposed_communication_s"], columns["bubble_s"])
    columns["binding_constraint"] = np.where(columns["fits"], binding, "memory")
    return PlanSearch(columns, evaluated, rejected, capacity)


def partition_report(
    model: TransformerModel, plan: ParallelPlan, cluster: Cluster, *, compute_efficiency=0.5, dtype="bf16"
) -> dict:
    """Everything the partition explorer shows for one plan, as plain Python values, from the ideal model
    (``memory_breakdown``, ``step_time`` with ``calibration=None`` and ``transfer_table``).

    Keys: the plan's sizes; ``parameters_bytes``, ``gradients_bytes``, ``optimizer_state_bytes``,
    ``activations_bytes`` (per device, the first pipeline stage), ``logits_bytes`` and ``framework_bytes`` (0 in the
    ideal model), ``memory_bytes_per_device``,
    ``capacity_bytes``, ``fits``; the step: ``compute_s``, ``bubble_s``, ``exposed_tensor_s``,
    ``exposed_pipeline_s``, ``exposed_data_s``, ``exposed_communication_s``, ``step_time_s``,
    ``binding_constraint`` ("memory" when the plan does not fit), ``tokens_per_s``, ``mfu``; and ``transfers``:
    ``transfer_table``'s rows (one dict per boundary tensor: ``axis``, ``tensor``, ``op``, ``payload_bytes``,
    ``calls_per_step``, ``group_size``, ``link``, ``crosses_nodes``, ``time_s`` per step, ``exposed_s``, …).

    GPT-3 175B on 8 nodes of 8 A100: t = 16 instead of 8 (p = 4 instead of 8, the same 64 GPUs) puts the
    tensor-parallel all-reduces on InfiniBand, and the step gets slower.

    >>> from dataclasses import replace
    >>> from course_lib.hardware import DGX_A100
    >>> from course_lib.parallelism import GPT3_175B
    >>> plan = ParallelPlan(tensor_parallel=8, pipeline_parallel=8, grad_accum_steps=64, recompute="selective")
    >>> for t, p in ((8, 8), (16, 4)):
    ...     r = partition_report(GPT3_175B, plan.replace(tensor_parallel=t, pipeline_parallel=p),
    ...                          replace(DGX_A100, nodes=8))
    ...     tp = r["transfers"][0]
    ...     print(t, tp["link"].split()[0], tp["calls_per_step"], format_time(tp["time_s"]),
    ...           format_time(r["step_time_s"]))
    8 NVLink 1536 472 ms 16.9 s
    16 InfiniBand 3072 1.75 s 18.6 s
    """
    memory = memory_breakdown(model, plan, calibration=None)
    _check_cluster_holds(plan, cluster)
    step, timed = _ideal_step_time(model, plan, cluster, compute_efficiency, dtype)  # the transfers timed once
    transfers = list(_transfer_rows(cluster, *timed))
    total = float(memory.total)
    capacity = float(cluster.accelerator.hbm_capacity_bytes)
    fits = total <= capacity
    t, p, d, b, m, v = plan.sizes
    return {
        "model": model.name,
        "layers": int(model.layers),
        "data_parallel": int(d),
        "tensor_parallel": int(t),
        "pipeline_parallel": int(p),
        "virtual_stages": int(v),
        "zero_stage": int(plan.zero_stage),
        "micro_batch": int(b),
        "grad_accum_steps": int(m),
        "devices": int(plan.devices),
        "devices_per_node": int(cluster.devices_per_node),
        "nodes": int(cluster.nodes),
        "global_batch": int(plan.global_batch),
        "device": cluster.accelerator.name,
        "parameters_bytes": float(memory.parameters),
        "gradients_bytes": float(memory.gradients),
        "optimizer_state_bytes": float(memory.optimizer_state),
        "activations_bytes": float(memory.activations),
        "logits_bytes": float(memory.logits),  # 0 in the ideal model; the figure stacks every component
        "framework_bytes": float(memory.framework),
        "memory_bytes_per_device": total,
        "capacity_bytes": capacity,
        "fits": bool(fits),
        "compute_s": float(step.compute_s),
        "bubble_s": float(step.bubble_s),
        "exposed_tensor_s": float(step.exposed_s["tensor"]),
        "exposed_pipeline_s": float(step.exposed_s["pipeline"]),
        "exposed_data_s": float(step.exposed_s["data"]),
        "exposed_communication_s": float(step.exposed_communication_s),
        "step_time_s": float(step.total_s),
        "binding_constraint": step.binding_constraint if fits else "memory",
        "tokens_per_s": float(plan.global_batch * model.seq_len / step.total_s),
        "mfu": float(step.mfu),
        "transfers": transfers,
    }
