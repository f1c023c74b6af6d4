"""Report: a plan's boundary transfers as a table (``transfer_table``, ``format_transfer_table``) and everything the
partition explorer shows for one plan (``partition_report``), from the ideal model.
"""

from __future__ import annotations

import numpy as np

from .. import units
from ..hardware import Cluster
from ..parallelism.memory import memory_breakdown
from ..parallelism.models import TransformerModel
from ..parallelism.plan import ParallelPlan
from .step import _check_cluster_holds, _ideal_step_time, _microbatch_compute_s, _timed_transfers

__all__ = [
    "transfer_table",
    "format_transfer_table",
    "partition_report",
]


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
    nodes, else of the node's (``link_family``: its ``hardware.Link.family``); ``time_per_call_s``
    (``transfer_time_per_call``), ``time_s`` (per step: × calls) and ``exposed_s``, its share of the exposed time of
    the transfers it overlaps with (same axis and phase; ``step_time``'s dependency rule, compute at
    ``compute_efficiency`` × peak), so the axis totals are ``step_time``'s. Two DGX H100 nodes, t = 8 in a node
    and d = 2 across them, one micro-batch of GPT-3 (the
    gradients' 2 B × Ψ/8 = 43.7 GB reduced over the network, 2 × 1/2 × 43.7 GB / 50 GB/s ≈ 873 ms, of which the
    last backward pass, 372 ms at half of the H100's peak, hides as much: 873 − 372 ≈ 502 ms exposed):

    >>> from course_lib.hardware import H100, INFINIBAND_NDR_8X, NVLINK4, Cluster
    >>> from course_lib.parallelism import GPT3_175B, ParallelPlan
    >>> from course_lib.units import format_bytes, format_time
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
    >>> from course_lib.parallelism import GPT3_175B, ParallelPlan
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
    >>> from course_lib.parallelism import GPT3_175B, ParallelPlan
    >>> from course_lib.units import format_time
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
