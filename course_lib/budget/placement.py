"""Placement: where a plan's groups of ranks sit on a cluster, and the time of one collective call by such a group.

Placement follows Megatron-LM's rank order: tensor-parallel ranks are adjacent (inside the NVLink domain when
t ≤ devices per node), data-parallel ranks next (stride t), pipeline stages outermost (stride t·d). A group that
spans nodes runs hierarchically: its members inside a node first combine over NVLink, then each of them talks
across the network on its own share of the node's links (``group_collective_phases``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _check, collectives
from ..hardware import Cluster, Link
from ..parallelism.plan import ParallelPlan

__all__ = [
    "GroupPhase",
    "group_collective_phases",
    "group_collective_time",
    "axis_stride",
    "transfer_time_per_call",
]

_GROUP_OPS = ("all_reduce", "reduce_scatter", "all_gather", "send_recv")
_AXIS_STRIDE = {
    "tensor": lambda _plan: 1,
    "data": lambda plan: plan.tensor_parallel,
    "pipeline": lambda plan: plan.tensor_parallel * plan.data_parallel,
}


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
    ranks: _check.IntOrArray
    payload_bytes: _check.FloatOrArray
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
    >>> from course_lib.units import MB, format_bytes, format_time
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
    >>> from course_lib.units import format_time
    >>> format_time(group_collective_time("all_reduce", DGX_H100, 8, 1, 1e9))
    '3.9 ms'
    """
    phases = group_collective_phases(op, cluster, group_size, stride, payload_bytes)
    return _check.as_result(sum(phase.time_s for phase in phases))


def axis_stride(axis, plan: ParallelPlan):
    """Distance between neighbouring ranks of a group on ``axis`` in Megatron-LM's rank order (tensor innermost).

    >>> from course_lib.parallelism import ParallelPlan
    >>> axis_stride("tensor", ParallelPlan(tensor_parallel=8, data_parallel=4)), axis_stride("pipeline", ParallelPlan(
    ...     tensor_parallel=8, data_parallel=4, pipeline_parallel=2))
    (1, 32)
    """
    _check.choice("axis", axis, tuple(_AXIS_STRIDE))
    return _AXIS_STRIDE[axis](plan)


def transfer_time_per_call(transfer, plan: ParallelPlan, cluster: Cluster):
    """Seconds one call of a ``parallelism.BoundaryTransfer`` takes on ``cluster``, where ``plan`` places its group.

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import GPT3_175B, ParallelPlan, step_transfers
    >>> from course_lib.units import format_time
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
