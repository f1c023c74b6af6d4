"""Report: a plan's boundary transfers placed and timed on a cluster (``TimedTransfer``; ``transfer_table`` and
``format_transfer_table`` show them as a table) and everything the partition explorer shows for one plan
(``partition_report``, a ``PartitionReport``), from the ideal model or as a framework runs it (the calibrated model).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from .. import _check, units
from ..hardware import Cluster, Link
from ..parallelism.calibration import Calibration, calibrated_cluster, resolve_calibration
from ..parallelism.frameworks import Framework, resolve_framework
from ..parallelism.memory import MemoryBreakdown, _ideal_memory_breakdown, calibrated_memory_breakdown
from ..parallelism.models import TransformerModel
from ..parallelism.plan import ParallelPlan
from ..parallelism.transfers import BoundaryTransfer, step_transfers
from .placement import LEVELS, _transfer_call
from .step import (
    StepTime,
    _check_cluster_holds,
    _ideal_step_time,
    _microbatch_compute_s,
    _timed_transfers,
    calibrated_step_time,
)

__all__ = [
    "TimedTransfer",
    "PartitionReport",
    "transfer_table",
    "format_transfer_table",
    "partition_report",
]

AXES = ("tensor", "pipeline", "data")


@dataclass(frozen=True)
class TimedTransfer:
    """One tensor that crosses a device boundary in a step, placed and timed on a cluster (the ideal model).

    ``transfer`` is the ``parallelism.BoundaryTransfer`` as ``step_transfers`` lists it (axis, tensor, op, payload
    of one call, group size, calls per step, phase: what it may hide behind); ``levels`` the levels of the cluster
    its traffic runs on (``LEVELS``, in that order, ``budget.GroupCall.levels``);
    ``link`` the network's ``hardware.Link`` if it crosses nodes, else the node's; ``time_per_call_s``
    (``transfer_time_per_call``), ``time_s`` per step (× calls) and ``exposed_s``, its share of the exposed time of
    the transfers it overlaps with (same axis and phase, ``step_time``'s dependency rule). ``as_dict()`` is the row
    of ``transfer_table``.

    >>> from course_lib.hardware import NVLINK4
    >>> from course_lib.parallelism import BoundaryTransfer
    >>> grads = BoundaryTransfer("data", "gradients", "all_reduce", 1e9, 2, 1, "last backward")
    >>> TimedTransfer(grads, ("in node",), NVLINK4, 2.2e-3, 2.2e-3, 1e-3).as_dict()["link_family"]
    'NVLink'
    >>> TimedTransfer(grads, ("in node",), NVLINK4, 2.2e-3, 2.2e-3, 3e-3)
    Traceback (most recent call last):
    ValueError: exposed_s must be at most time_s (0.0022), got 0.003
    """

    transfer: BoundaryTransfer
    levels: tuple[str, ...]
    link: Link
    time_per_call_s: float
    time_s: float
    exposed_s: float

    def __post_init__(self):
        transfer = self.transfer
        if (
            not isinstance(transfer, BoundaryTransfer)
            or np.ndim(transfer.calls_per_step)
            or np.ndim(transfer.group_size)
        ):
            raise ValueError(f"transfer must be one parallelism.BoundaryTransfer (scalar sizes), got {transfer!r}")
        if not transfer.crosses_boundary:
            raise ValueError(f"transfer must cross a device boundary (group_size > 1, calls > 0), got {transfer!r}")
        if not isinstance(self.levels, tuple) or not self.levels or self.levels != _ordered_levels(self.levels):
            raise ValueError(f"levels must be a tuple of one or both of {LEVELS}, in that order, got {self.levels!r}")
        if not isinstance(self.link, Link):
            raise ValueError(f"link must be a hardware.Link, got {self.link!r}")
        per_call = _check.nonnegative("time_per_call_s", self.time_per_call_s)
        seconds = _check.nonnegative("time_s", self.time_s)
        if not math.isclose(seconds, transfer.calls_per_step * per_call, rel_tol=1e-9):
            raise ValueError(
                f"time_s must be calls_per_step × time_per_call_s ({transfer.calls_per_step} × {per_call}), "
                f"got {self.time_s!r}"
            )
        if _check.nonnegative("exposed_s", self.exposed_s) > seconds * (1 + 1e-9):
            raise ValueError(f"exposed_s must be at most time_s ({seconds}), got {self.exposed_s!r}")

    @property
    def crosses_nodes(self) -> bool:
        """Whether a phase of it runs across nodes (on the network)."""
        return LEVELS[1] in self.levels

    def as_dict(self) -> dict:
        """The row of ``transfer_table``: the transfer's fields, ``levels`` joined ("in node + across nodes"),
        ``link`` and ``link_family`` (the link's name and ``hardware.Link.family``), ``crosses_nodes`` and the times,
        as plain Python values."""
        transfer = self.transfer
        return {
            "axis": transfer.axis,
            "tensor": transfer.tensor,
            "op": transfer.op,
            "payload_bytes": float(transfer.payload_bytes),
            "group_size": int(transfer.group_size),
            "calls_per_step": int(transfer.calls_per_step),
            "phase": transfer.phase,
            "levels": " + ".join(self.levels),
            "link": self.link.name,
            "link_family": self.link.family,
            "crosses_nodes": self.crosses_nodes,
            "time_per_call_s": float(self.time_per_call_s),
            "time_s": float(self.time_s),
            "exposed_s": float(self.exposed_s),
        }


def _ordered_levels(levels) -> tuple:
    return tuple(level for level in LEVELS if level in levels)


def transfer_table(
    model: TransformerModel, plan: ParallelPlan, cluster: Cluster, *, compute_efficiency=0.5, dtype="bf16"
) -> tuple[dict, ...]:
    """One row per tensor that crosses a device boundary in a step of ``plan`` on ``cluster`` (the ideal model,
    ``step_time`` with ``calibration=None``): the lessons' table of a plan's transfers, ``TimedTransfer.as_dict()``
    of each of ``partition_report``'s ``transfers``.

    Each row is a plain dict: ``axis``, ``tensor``, ``op``, ``payload_bytes`` (S of one call), ``group_size``,
    ``calls_per_step`` and ``phase`` (what it may hide behind) from ``parallelism.boundary_tensors``; ``levels``,
    the levels its traffic runs on ("in node", "across nodes" or "in node + across nodes", from
    ``budget.GroupCall.levels``); ``crosses_nodes`` and ``link``, the name of the network's link if it crosses
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
    timed = _timed_rows(cluster, *_timed_transfers(model, plan, cluster, forward, backward))
    return tuple(row.as_dict() for row in timed)


def _timed_rows(cluster, timed, per_phase, exposed_phase) -> tuple[TimedTransfer, ...]:
    """The ``TimedTransfer`` of each boundary-crossing transfer of ``_timed_transfers``' result."""
    rows = []
    for transfer, seconds, call in timed:
        if not transfer.crosses_boundary:
            continue
        levels = call.levels
        link = cluster.inter_node_link if LEVELS[1] in levels else cluster.intra_node_link
        key = (transfer.axis, transfer.phase)
        share = float(seconds / per_phase[key]) if per_phase[key] > 0 else 0.0
        per_call = float(call.time_s)
        rows.append(TimedTransfer(transfer, levels, link, per_call, float(seconds), share * exposed_phase[key]))
    return tuple(rows)


def _step_axis(axis: str, step: StepTime) -> str:
    """The axis of ``step.exposed_s`` that a transfer on ``axis`` counts under: its own, or "data" for the experts'
    gradient group ("expert data") in a calibrated step, which streams both groups' buckets as one data axis."""
    return axis if axis in step.exposed_s or axis != "expert data" else "data"


def _calibrated_rows(model, plan, cluster, calibration: Calibration, step: StepTime) -> tuple[TimedTransfer, ...]:
    """The ``TimedTransfer`` of each boundary-crossing transfer of a calibrated ``step``: each placed on the
    calibration's cluster (its links and network, ``calibrated_cluster``), listed as the framework sends it
    (``step_transfers`` with its FP8 recipe).

    The calibrated model times each axis as a whole, so its seconds are apportioned over the axis's rows by a stated
    rule. A row's ``time_s`` is the axis's total (exposed + overlapped) times the row's share of the axis's seconds
    per step with each call timed on its own (calls × ``group_collective``): exact for the tensor, pipeline, context
    and expert rows, which the calibrated model times per call the same way; for the data-parallel rows a share of what
    the calibrated model counts per axis (buckets with a latency each, fp32 gradients where the recipe reduces in
    fp32, the compute slowed by overlapped traffic, ``overlap_slowdown``). A row the framework leaves on the critical
    path (``_framework_exposes``) is exposed in full; the rest of the axis's exposed time goes to its other rows in
    proportion to their ``time_s``."""
    network = calibrated_cluster(cluster, calibration)
    calls = [
        (transfer, _transfer_call(transfer, plan, network))
        for transfer in step_transfers(model, plan, calibration.framework.fp8)
        if transfer.crosses_boundary
    ]
    per_axis: dict = {}
    for transfer, call in calls:
        axis = _step_axis(transfer.axis, step)
        per_axis[axis] = per_axis.get(axis, 0.0) + transfer.calls_per_step * call.time_s
    timed = []  # (transfer, call, axis, seconds per step, on the critical path)
    for transfer, call in calls:
        axis = _step_axis(transfer.axis, step)
        alone = transfer.calls_per_step * call.time_s
        share = float(alone / per_axis[axis]) if per_axis[axis] > 0 else 0.0
        seconds = share * float(step.exposed_s[axis] + step.overlapped_s[axis])
        timed.append((transfer, call, axis, seconds, _framework_exposes(transfer, plan, calibration.framework)))
    rest, others = {}, {}  # per axis: exposed seconds left after the critical rows; seconds of the other rows
    for _, _, axis, seconds, critical in timed:
        rest[axis] = rest.get(axis, float(step.exposed_s[axis])) - (seconds if critical else 0.0)
        others[axis] = others.get(axis, 0.0) + (0.0 if critical else seconds)
    rows = []
    for transfer, call, axis, seconds, critical in timed:
        share = seconds / others[axis] if others[axis] > 0 else 0.0
        exposed = seconds if critical else min(max(rest[axis], 0.0) * share, seconds)
        link = network.inter_node_link if LEVELS[1] in call.levels else network.intra_node_link
        rows.append(TimedTransfer(transfer, call.levels, link, seconds / transfer.calls_per_step, seconds, exposed))
    return tuple(rows)


def _framework_exposes(transfer: BoundaryTransfer, plan: ParallelPlan, framework: Framework) -> bool:
    """Whether ``framework`` leaves every call of ``transfer`` on the critical path, as ``calibrated_step_time`` does:
    the tensor-parallel calls it does not overlap (``tensor_parallel_overlap``: "none" all, "backward" the forward
    ones), pipeline sends unless it overlaps P2P with an interleaved schedule, the expert and Ulysses all-to-alls."""
    if transfer.axis == "tensor":
        overlap = framework.tensor_parallel_overlap
        return overlap == "none" or (overlap == "backward" and transfer.tensor.endswith("forward"))
    if transfer.axis == "pipeline":
        return not (framework.pipeline_overlap and plan.virtual_stages > 1)
    return transfer.op == "all_to_all"


def format_transfer_table(rows) -> str:
    """``transfer_table``'s rows (or the ``transfers`` of ``PartitionReport.as_dict()``) as a text table, one line
    per tensor, quantities with their units: the levels of the cluster its group spans, time per call and per step,
    the part of it nothing hides, and what it may hide behind.

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import GPT3_175B, ParallelPlan
    >>> rows = transfer_table(GPT3_175B, ParallelPlan(tensor_parallel=8), DGX_H100)
    >>> print(format_transfer_table(rows[:1]))  # doctest: +NORMALIZE_WHITESPACE
    axis tensor collective payload ranks links per call calls per step exposed hidden by
    tensor layer outputs (partial sums), forward all_reduce 50.3 MB 8 in node 179 µs 192 34.3 ms 34.3 ms none
    """
    width = max([8, *(len(row["axis"]) for row in rows)])  # "expert data" is wider than the three classic axes
    lines = [
        f"{'axis':{width}} {'tensor':46} {'collective':14} {'payload':>8} {'ranks':>5} {'links':21} {'per call':>8} "
        f"{'calls':>6} {'per step':>9} {'exposed':>9}  hidden by"
    ]
    for row in rows:
        lines.append(
            f"{row['axis']:{width}} {row['tensor']:46} {row['op']:14} {units.format_bytes(row['payload_bytes']):>8} "
            f"{row['group_size']:>5} {row['levels']:21} {units.format_time(row['time_per_call_s']):>8} "
            f"{row['calls_per_step']:>6} {units.format_time(row['time_s']):>9} {units.format_time(row['exposed_s']):>9}"
            f"  {row['phase']}"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class PartitionReport:
    """Everything the partition explorer shows for one plan, from the ideal model or as a framework runs it:
    ``partition_report``'s result.

    Fields, the formula layer's results as they come: the ``model``, ``plan`` and ``cluster``; ``memory``, the
    ``parallelism.MemoryBreakdown`` per device (the ideal model: the first pipeline stage, ``logits`` and
    ``framework`` 0; a framework: the heaviest stage, ``calibrated_memory_breakdown``); ``step``, the ``StepTime``
    (``step_time`` with ``calibration=None``, or the framework's calibrated step); ``transfers``, the
    ``TimedTransfer`` of every tensor that crosses a device boundary (``transfer_table``'s rows), whose exposed times
    add up to ``step.exposed_s`` axis by axis (a calibrated step counts the experts' gradient group under "data");
    ``memory_margin``, the share of its memory a plan must leave spare to count as fitting with a margin;
    ``framework``, the ``parallelism.Framework`` that runs the plan (None: the ideal model); ``not_run``, why the
    framework asked for does not run the plan ("" when it does or none was asked for: ``Framework.refusal``), the
    numbers then the ideal model's. Derived: ``capacity_bytes``, ``fits``, ``fits_with_margin``, ``binding_constraint``
    ("memory" when the plan does not fit), ``tokens_per_s``, ``tensor_link`` and ``tensor_time_s``. ``as_dict()``:
    the plain dict of numbers and strings that tests, graders and lessons read.
    """

    model: TransformerModel
    plan: ParallelPlan
    cluster: Cluster
    memory: MemoryBreakdown
    step: StepTime
    transfers: tuple[TimedTransfer, ...]
    memory_margin: float = 0.0
    framework: Framework | None = None
    not_run: str = ""

    def __post_init__(self):
        types = (
            ("model", TransformerModel),
            ("plan", ParallelPlan),
            ("cluster", Cluster),
            ("memory", MemoryBreakdown),
            ("step", StepTime),
        )
        for name, kind in types:
            if not isinstance(getattr(self, name), kind):
                raise ValueError(f"{name} must be a {kind.__name__}, got {getattr(self, name)!r}")
        if np.ndim(self.plan.devices):
            raise ValueError(f"plan must be one plan (scalar sizes), got sizes {self.plan.sizes}")
        if self.plan.devices > self.cluster.devices:
            raise ValueError(f"cluster must hold the plan's {self.plan.devices} devices, got {self.cluster.devices}")
        if any(np.ndim(getattr(self.memory, field.name)) for field in dataclasses.fields(MemoryBreakdown)):
            raise ValueError("memory must be one plan's MemoryBreakdown (scalar fields), not arrays")
        total = self.step.total_s
        if np.ndim(total) or not (math.isfinite(total) and total > 0):
            raise ValueError(f"step must be one plan's StepTime with a finite total_s > 0, got total_s={total!r}")
        if not isinstance(self.transfers, tuple) or not all(isinstance(x, TimedTransfer) for x in self.transfers):
            raise ValueError(f"transfers must be a tuple of TimedTransfer, got {self.transfers!r}")
        _check.nonnegative("memory_margin", self.memory_margin)
        if self.framework is not None and not isinstance(self.framework, Framework):
            raise ValueError(
                f"framework must be None (the ideal model) or a parallelism.Framework, got {self.framework!r}"
            )
        if not isinstance(self.not_run, str) or (self.not_run and self.framework is not None):
            raise ValueError(f"not_run must be a sentence only in a report of the ideal model, got {self.not_run!r}")
        for axis in self.step.exposed_s:  # AXES, and "context", "expert", "expert data" when the plan uses them
            exposed = sum(x.exposed_s for x in self.transfers if _step_axis(x.transfer.axis, self.step) == axis)
            if not math.isclose(exposed, self.step.exposed_s[axis], rel_tol=1e-9, abs_tol=1e-15):
                raise ValueError(
                    f"transfers must add up to step's exposed {axis} time ({self.step.exposed_s[axis]} s), got "
                    f"{exposed} s"
                )

    @property
    def capacity_bytes(self) -> float:
        """One device's HBM."""
        return float(self.cluster.accelerator.hbm_capacity_bytes)

    @property
    def fits(self) -> bool:
        """Whether ``memory.total`` fits one device's HBM."""
        return bool(self.memory.total <= self.capacity_bytes)

    @property
    def fits_with_margin(self) -> bool:
        """Whether ``memory.total`` × (1 + ``memory_margin``) fits one device's HBM."""
        return bool(self.memory.total * (1 + self.memory_margin) <= self.capacity_bytes)

    @property
    def binding_constraint(self) -> str:
        """What limits the plan: "memory" if it does not fit, else the step's ``binding_constraint``."""
        return str(self.step.binding_constraint) if self.fits else "memory"

    @property
    def tokens_per_s(self) -> float:
        """Tokens trained per second: global batch × sequence length / step time."""
        return float(self.plan.global_batch * self.model.seq_len / self.step.total_s)

    @property
    def tensor_link(self) -> str:
        """The ``hardware.Link.family`` the tensor-parallel collectives run on ("none" without tensor parallelism)."""
        return next((x.link.family for x in self.transfers if x.transfer.axis == "tensor"), "none")

    @property
    def tensor_time_s(self) -> float:
        """Seconds per step of every tensor-parallel collective (all on the critical path: all exposed)."""
        return float(sum(x.time_s for x in self.transfers if x.transfer.axis == "tensor"))

    def as_dict(self) -> dict:
        """The report as plain Python values: the plan's sizes; ``parameters_bytes``, ``gradients_bytes``,
        ``optimizer_state_bytes``, ``activations_bytes``, ``logits_bytes``, ``framework_bytes``,
        ``memory_bytes_per_device``, ``capacity_bytes``, ``fits``, ``memory_margin``, ``fits_with_margin``; the step:
        ``compute_s``, ``bubble_s``, ``exposed_tensor_s``, ``exposed_pipeline_s``, ``exposed_data_s`` (and
        ``exposed_context_s``, ``exposed_expert_s``, ``exposed_expert_data_s`` when the plan uses them),
        ``exposed_communication_s``, ``step_time_s``, ``binding_constraint``, ``tokens_per_s``, ``mfu``;
        ``transfers``, a list of ``TimedTransfer.as_dict()`` (``transfer_table``'s rows); and ``framework``, the
        framework's name ("ideal model" without one) and ``not_run``."""
        model, plan, cluster, memory, step = self.model, self.plan, self.cluster, self.memory, self.step
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
            "logits_bytes": float(memory.logits),
            "framework_bytes": float(memory.framework),
            "memory_bytes_per_device": float(memory.total),
            "capacity_bytes": self.capacity_bytes,
            "fits": self.fits,
            "memory_margin": self.memory_margin,
            "fits_with_margin": self.fits_with_margin,
            "compute_s": float(step.compute_s),
            "bubble_s": float(step.bubble_s),
            "exposed_tensor_s": float(step.exposed_s["tensor"]),
            "exposed_pipeline_s": float(step.exposed_s["pipeline"]),
            "exposed_data_s": float(step.exposed_s["data"]),
            **{
                f"exposed_{axis.replace(' ', '_')}_s": float(seconds)
                for axis, seconds in step.exposed_s.items()
                if axis not in AXES
            },
            "exposed_communication_s": float(step.exposed_communication_s),
            "step_time_s": float(step.total_s),
            "binding_constraint": self.binding_constraint,
            "tokens_per_s": self.tokens_per_s,
            "mfu": float(step.mfu),
            "transfers": [x.as_dict() for x in self.transfers],
            "framework": "ideal model" if self.framework is None else self.framework.name,
            "not_run": self.not_run,
        }


def partition_report(
    model: TransformerModel,
    plan: ParallelPlan,
    cluster: Cluster,
    *,
    compute_efficiency=0.5,
    dtype="bf16",
    memory_margin=0.0,
    framework=None,
) -> PartitionReport:
    """Everything the partition explorer shows for one plan as a ``PartitionReport``: one evaluation of the model,
    its memory judged also with ``memory_margin`` to spare.

    ``framework=None``: the ideal model (``memory_breakdown`` and ``step_time`` with ``calibration=None``, compute at
    ``compute_efficiency`` × peak, the transfers timed once for both the step and its ``transfers``; the plan checked
    against the model once). A framework (a ``parallelism.Framework`` or a key of ``parallelism.FRAMEWORKS``): the
    calibrated model as that framework runs the plan, under the default calibration for ``cluster``
    (``step_time(..., framework=...)``, ``calibrated_memory_breakdown``; ``compute_efficiency`` unused), its
    transfers' times apportioned from the calibrated step axis by axis (``_calibrated_rows`` states the rule). A
    plan the framework does not run (ZeRO-2/3 with a pipeline under Megatron-LM or nanotron) is a state, not an
    error: the report of the ideal model, its ``not_run`` saying why (``Framework.refusal``).

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
    ...     tp = r.transfers[0]
    ...     print(t, r.tensor_link, tp.transfer.calls_per_step, format_time(tp.time_s), format_time(r.step.total_s))
    8 NVLink 1536 657 ms 17.3 s
    16 InfiniBand 3072 1.82 s 18.8 s
    >>> r.as_dict()["step_time_s"] == r.step.total_s, r.as_dict()["transfers"][0]["link_family"]
    (True, 'InfiniBand')

    As Megatron-LM runs the t = 16 plan: it hides the backward tensor-parallel all-reduces behind the weight-gradient
    GEMMs, so less of the tensor-parallel time is exposed than its whole:

    >>> r = partition_report(GPT3_175B, plan.replace(tensor_parallel=16, pipeline_parallel=4),
    ...                      replace(DGX_A100, nodes=8), framework="megatron")
    >>> tp = sum(x.time_s for x in r.transfers if x.transfer.axis == "tensor")
    >>> format_time(tp), format_time(r.step.exposed_s["tensor"]), r.as_dict()["framework"].split(" (")[0]
    ('3.64 s', '1.82 s', 'Megatron-LM')
    >>> [format_time(x.exposed_s) for x in r.transfers if x.transfer.axis == "tensor"]   # forward, backward
    ['1.82 s', '0 s']
    >>> r = partition_report(GPT3_175B, plan.replace(zero_stage=3), replace(DGX_A100, nodes=8), framework="megatron")
    >>> print(r.framework, r.not_run.split(": it ")[0])   # then the rule and its citation
    None zero_stage=3 with pipeline_parallel=8 is not run by Megatron-LM
    """
    _check_cluster_holds(plan, cluster)
    not_run = "" if framework is None else resolve_framework(framework).refusal(plan)
    if framework is None or not_run:
        step, timed = _ideal_step_time(model, plan, cluster, compute_efficiency, dtype)  # checks the plan
        memory = _ideal_memory_breakdown(model, plan)
        rows = _timed_rows(cluster, *timed)
        return PartitionReport(model, plan, cluster, memory, step, rows, memory_margin, not_run=not_run)
    calibration = resolve_calibration("default", cluster, framework)
    assert calibration is not None
    step = calibrated_step_time(model, plan, cluster, calibration, dtype)  # checks the plan for model and framework
    memory = calibrated_memory_breakdown(model, plan, calibration)
    rows = _calibrated_rows(model, plan, cluster, calibration, step)
    return PartitionReport(model, plan, cluster, memory, step, rows, memory_margin, calibration.framework)
