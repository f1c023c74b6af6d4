"""Placement: where a plan's groups of ranks sit on a cluster, and the time of one collective call by such a group.

Placement follows Megatron-LM's rank order: tensor-parallel ranks are adjacent (inside the NVLink domain when
t ≤ devices per node), data-parallel ranks next (stride t), pipeline stages outermost (stride t·d). With context
(c) and expert (e) parallelism, Megatron-Core's order: context and expert groups at stride t (an expert group of
e ≤ devices per node at t = 1 stays in a node), gradients over the d·c data and context ranks at stride t, the
routed experts' over the d·c/e that hold the same experts at stride t·e, pipeline stages at stride t·c·d. A group of n
ranks then has k members on each of N nodes, and its collective runs as NCCL runs it (``nccl.estimate``): a flat
ring over all n ranks with a channel on every rail, a tree, or NVLink SHARP, whichever NCCL's tuner expects to be
fastest for that size; a point-to-point send (``send_recv``) crosses the network when the group spans nodes; an
all-to-all runs as NCCL's grouped sends and receives (``nccl.all_to_all``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields

import numpy as np

from .. import _check, collectives, nccl
from ..hardware import Cluster
from ..parallelism.plan import ParallelPlan

__all__ = [
    "LEVELS",
    "GroupCall",
    "group_placement",
    "group_collective",
    "group_collective_time",
    "axis_stride",
    "transfer_time_per_call",
]

_GROUP_OPS = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "send_recv")
LEVELS = ("in node", "across nodes")  # the levels of a cluster a group can span
# Megatron-Core's default order "tp-cp-ep-dp-pp" (megatron/core/parallel_state.py, ``initialize_model_parallel``):
# tensor innermost, then context; the data-parallel gradient group is the d·c data and context ranks at stride t
# (context parallelism piggybacks on it); the expert ranks ("tp-ep-dp-pp" among the same ranks) sit at stride t, the
# ranks that hold the same experts ("expert data") at stride t·e; pipeline stages outermost, at stride t·c·d.
_AXIS_STRIDE = {
    "tensor": lambda _plan: 1,
    "context": lambda plan: plan.tensor_parallel,
    "expert": lambda plan: plan.tensor_parallel,
    "data": lambda plan: plan.tensor_parallel,
    "expert data": lambda plan: plan.tensor_parallel * plan.expert_parallel,
    "pipeline": lambda plan: plan.tensor_parallel * plan.data_parallel * plan.context_parallel,
}


@dataclass(frozen=True)
class GroupCall(nccl.NcclEstimate):
    """One collective call by a group of ranks placed on a cluster: an ``nccl.NcclEstimate`` (``ranks`` on
    ``nodes`` nodes, the ``algorithm`` and ``protocol``, ``latency_s``, ``bandwidth_bytes_per_s`` and ``time_s``;
    "p2p" and "Simple" for ``send_recv``, "p2p" for ``all_to_all``, "ring" (``all_to_all``: "pairwise") and "α–β"
    on devices NCCL does not run on) with the most ``ranks_per_node`` (k) the group has on one node. Fields are
    arrays when groups were evaluated in bulk; ``levels`` needs one group."""

    ranks_per_node: _check.IntOrArray

    @property
    def levels(self) -> tuple[str, ...]:
        """The levels of the cluster the call's traffic runs on (``LEVELS``, in that order): "in node" when k > 1,
        "across nodes" when N > 1; () for a group of one rank."""
        if np.ndim(self.ranks_per_node) or np.ndim(self.nodes):
            raise ValueError("levels needs one group: this call was evaluated on arrays of groups")
        in_node = self.nodes == 1 and self.ranks > 1 if self.op == "send_recv" else self.ranks_per_node > 1
        spans = (in_node, self.nodes > 1)
        return tuple(level for level, used in zip(LEVELS, spans, strict=True) if used)


def group_placement(cluster: Cluster, group_size, stride):
    """(k, N): members of a group of ``group_size`` ranks ``stride`` apart on each node of ``cluster`` (fewer on the
    last node when k does not divide the group), and the nodes it spans (Megatron-LM's rank order fills a node
    before the next).

    >>> from course_lib.hardware import SELENE_3072
    >>> group_placement(SELENE_3072, 16, 1), group_placement(SELENE_3072, 8, 2), group_placement(SELENE_3072, 12, 1)
    ((8, 2), (4, 2), (8, 2))
    """
    n = _check.count("group_size", group_size)
    stride = _check.count("stride", stride)
    g = cluster.devices_per_node
    k = np.where(stride >= g, 1, np.minimum(n, np.maximum(g // stride, 1)))
    nodes = np.maximum(-(-n // k), 1)  # not checked against cluster.nodes: the plan search weighs plans too big for it
    as_int = (lambda x: int(x)) if np.ndim(k) == 0 else (lambda x: np.asarray(x, dtype=np.int64))
    return as_int(k), as_int(nodes)


def group_collective(op, cluster: Cluster, group_size, stride, payload_bytes, *, algorithm=None, protocol=None):
    """One collective call by a group of ranks ``stride`` apart, placed on ``cluster`` (``group_placement``), as
    NCCL runs it (``nccl.estimate``; ``algorithm=``/``protocol=`` impose one): a ``GroupCall``. ``send_recv`` is
    one message to the next rank: over the network (each GPU's share of its node's NICs, the network's latency
    and the fabric's) when the group spans nodes, else over NVLink (``nccl.p2p_link``). ``all_to_all`` is NCCL's
    grouped point-to-point (``nccl.all_to_all``; algorithm "p2p").

    Two DGX H100 nodes on InfiniBand, 16 ranks at stride 1, all-reducing 1 GB: a tree across the nodes with NVLink
    SHARP inside them; 16 KiB takes the double binary tree with the LL protocol:

    >>> from course_lib.hardware import NEBIUS_H100_IB
    >>> from course_lib.units import format_time
    >>> call = group_collective("all_reduce", NEBIUS_H100_IB, 16, 1, 1e9)
    >>> call.ranks_per_node, call.nodes, call.algorithm, call.protocol, format_time(call.time_s), call.levels
    (8, 2, 'nvls_tree', 'Simple', '3.24 ms', ('in node', 'across nodes'))
    >>> small = group_collective("all_reduce", NEBIUS_H100_IB, 16, 1, 16 * 1024)
    >>> small.algorithm, small.protocol, format_time(small.time_s)
    ('tree', 'LL', '31.2 µs')
    >>> a2a = group_collective("all_to_all", NEBIUS_H100_IB, 16, 1, 1e9)   # half of S leaves each node at 50 GB/s
    >>> a2a.algorithm, a2a.protocol, format_time(a2a.time_s), a2a.levels
    ('p2p', 'Simple', '10 ms', ('in node', 'across nodes'))
    """
    one_group = (  # hashable arguments: the call can be remembered
        isinstance(op, str)
        and isinstance(cluster, Cluster)
        and all(isinstance(value, _SCALARS) for value in (group_size, stride, payload_bytes))
        and all(name is None or isinstance(name, str) for name in (algorithm, protocol))
    )
    call = _remembered_group_call if one_group else _group_call
    return call(op, cluster, group_size, stride, payload_bytes, algorithm, protocol)


_SCALARS = (int, float, np.integer, np.floating)


def _group_call(op, cluster: Cluster, group_size, stride, payload_bytes, algorithm, protocol) -> GroupCall:
    """``group_collective``, computed (scalars or arrays of groups)."""
    if op not in _GROUP_OPS:
        raise ValueError(f"op must be one of {', '.join(map(repr, _GROUP_OPS))} for a training step; got {op!r}")
    k, nodes = group_placement(cluster, group_size, stride)
    size = _check.nonnegative("payload_bytes", payload_bytes)
    n = group_size
    if op == "send_recv":
        if algorithm is not None or protocol is not None:
            raise ValueError("algorithm and protocol must be None for send_recv (one point-to-point message)")
        if cluster.accelerator.architecture:
            call = nccl.send_recv(cluster, n, nodes, size)
            return GroupCall(**{field.name: getattr(call, field.name) for field in fields(call)}, ranks_per_node=k)
        latency, bandwidth = nccl.p2p_link(cluster, np.asarray(nodes) > 1)  # MPI: the α–β link, no launch floor
        time = np.where(np.asarray(n) > 1, latency + size / bandwidth, 0.0)
        scalar = np.ndim(time) == 0
        return GroupCall(op, n, nodes, size, "p2p" if scalar else np.full(np.shape(time), "p2p"),
                         "Simple" if scalar else np.full(np.shape(time), "Simple"), _check.as_result(latency),
                         _check.as_result(bandwidth), _check.as_result(time), ranks_per_node=k)  # fmt: skip
    if not cluster.accelerator.architecture:  # not an NVIDIA GPU: MPI's flat ring, the textbook α–β model
        return _textbook_ring(op, cluster, n, k, nodes, size, algorithm, protocol)
    if op == "all_to_all":
        if algorithm not in (None, "p2p") or protocol is not None:
            raise ValueError(
                "algorithm must be None or 'p2p' and protocol None for all_to_all (NCCL runs it as grouped "
                f"point-to-point messages); got algorithm={algorithm!r}, protocol={protocol!r}"
            )
        call = nccl.all_to_all(cluster, n, nodes, size)
    else:
        call = nccl.estimate(op, cluster, n, nodes, size, algorithm=algorithm, protocol=protocol)
    return GroupCall(**{field.name: getattr(call, field.name) for field in fields(call)}, ranks_per_node=k)


# One group's call, remembered: a lab's update asks for the same few calls again and again, and NCCL's tuner weighs
# about 20 algorithm and protocol pairs per call (~2 ms). The key is scalars, strings and a frozen Cluster (typed: 8
# and 8.0 are kept apart, as the result holds the arguments as given); the result, frozen, is shared by the callers.
_remembered_group_call = functools.lru_cache(maxsize=4096, typed=True)(_group_call)


def _textbook_ring(op, cluster: Cluster, n, k, nodes, size, algorithm, protocol) -> GroupCall:
    """A flat ring over the group's n ranks in the α–β model (``collectives.time_terms``), for accelerators NCCL does
    not run on (MPI on CPUs, a cluster ``measure.calibrate_cluster`` fitted on an MPI sweep): each step costs the
    slowest link's α, and the ring runs at the slower of a device's link in a node and its members' network share.
    An all-to-all is MPI's pairwise exchange, its steps at the slower of a device's link and its own network share."""
    textbook = "pairwise" if op == "all_to_all" else "ring"
    if algorithm not in (None, textbook) or protocol is not None:
        raise ValueError(
            f"algorithm must be {textbook!r} (or None) and protocol None for {op} on {cluster.accelerator.name!r}, "
            f"which NCCL does not run on; got algorithm={algorithm!r}, protocol={protocol!r}"
        )
    spans = np.asarray(nodes) > 1
    inter, intra = cluster.inter_node_link, cluster.intra_node_link
    intra_s, inter_s = intra.latency_s + intra.fabric_latency_s, inter.latency_s + inter.fabric_latency_s
    latency_s = np.where(spans, np.maximum(intra_s, inter_s), intra_s)
    # A ring's k channels leave the node on k rails at once; a pairwise exchange step sends each GPU's block to a peer
    # on another node through that GPU's own share of the NICs.
    network = (1 if op == "all_to_all" else k) * cluster.inter_bandwidth_bytes_per_s
    bandwidth = np.where(spans, np.where(np.asarray(k) > 1, np.minimum(cluster.intra_bandwidth_bytes_per_s, network),
                                         network), cluster.intra_bandwidth_bytes_per_s)  # fmt: skip
    terms = collectives.time_terms(op, n, size, bandwidth, latency_s, textbook) if np.any(np.asarray(n) > 1) else None
    time = np.where(np.asarray(n) > 1, terms.total_s if terms else 0.0, 0.0)
    latency = np.where(np.asarray(n) > 1, terms.latency_s if terms else 0.0, 0.0)
    shape = np.shape(time)
    algorithm_, protocol_ = (textbook, "α–β") if not shape else (np.full(shape, textbook), np.full(shape, "α–β"))
    algbw = np.where(time > latency, size / np.where(time > latency, time - latency, 1.0), np.inf)
    return GroupCall(op, n, nodes, size, algorithm_, protocol_, _check.as_result(latency), _check.as_result(algbw),
                     _check.as_result(time), ranks_per_node=k)  # fmt: skip


def group_collective_time(op, cluster: Cluster, group_size, stride, payload_bytes):
    """Seconds of one collective call by a group of ranks ``stride`` apart, placed on ``cluster``:
    ``group_collective``'s ``time_s``.

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.units import format_time
    >>> format_time(group_collective_time("all_reduce", DGX_H100, 8, 1, 1e9))   # NVLink SHARP
    '2.99 ms'
    """
    return group_collective(op, cluster, group_size, stride, payload_bytes).time_s


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
    >>> format_time(transfer_time_per_call(step_transfers(GPT3_175B, plan)[0], plan, DGX_H100))   # NVLS, 50.3 MB
    '179 µs'
    """
    return _transfer_call(transfer, plan, cluster).time_s


def _transfer_call(transfer, plan: ParallelPlan, cluster: Cluster) -> GroupCall:
    """``group_collective`` of one call of ``transfer``, its group placed by ``plan`` (``axis_stride``)."""
    return group_collective(
        transfer.op, cluster, transfer.group_size, axis_stride(transfer.axis, plan), transfer.payload_bytes
    )
