"""Transfers: every tensor that crosses a device boundary in one training step of a plan (``step_transfers``), with
its collective, payload, group and calls per step, and the bytes each device sends on each axis. ``budget`` places
and times them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _check, collectives
from .memory import GRAD_BYTES, PARAM_BYTES
from .models import TransformerModel
from .plan import ParallelPlan, check_plan_for_model

__all__ = [
    "ACTIVATION_BYTES",
    "BoundaryTransfer",
    "step_transfers",
    "boundary_tensors",
    "communication_volume_per_step",
]

ACTIVATION_BYTES = 2  # activations exchanged between devices are 16-bit


@dataclass(frozen=True, eq=False)
class BoundaryTransfer:
    """One kind of tensor that crosses device boundaries during a training step.

    ``payload_bytes`` is S for one call of ``op`` (nccl-tests' convention), exchanged among ``group_size`` ranks,
    ``calls_per_step`` times per step. ``phase`` says which compute it can hide behind: "forward" or "backward" of
    the same micro-batch, "last backward" (the final micro-batch's backward), or "none" when the consumer waits for
    it (on the critical path).
    """

    axis: str
    tensor: str
    op: str
    payload_bytes: _check.FloatOrArray
    group_size: _check.IntOrArray
    calls_per_step: _check.IntOrArray
    phase: str

    @property
    def on_critical_path(self) -> bool:
        """True when no independent compute can hide it."""
        return self.phase == "none"

    @property
    def crosses_boundary(self) -> bool:
        """True when the group has more than one rank and the transfer happens at least once per step."""
        return bool(np.all(np.asarray(self.group_size) > 1) and np.all(np.asarray(self.calls_per_step) > 0))

    @property
    def bytes_sent_per_device(self):
        """Bytes each device sends per step (ring algorithms; 0 for a group of one).

        >>> BoundaryTransfer("data", "gradients", "all_reduce", 1e9, 4, 1, "last backward").bytes_sent_per_device
        1500000000.0
        """
        cost = collectives.collective_cost(self.op, self.group_size, self.payload_bytes)
        return _check.as_result(cost.wire_bytes * self.calls_per_step)


def step_transfers(model: TransformerModel, plan: ParallelPlan) -> tuple[BoundaryTransfer, ...]:
    """Every tensor that crosses a device boundary in one step, with its collective, size and count.

    Tensor parallel (Megatron-LM, per layer and micro-batch): 2 all-reduces of the b·s·h activations forward and 2
    backward; full recomputation repeats the 2 forward ones. With sequence parallelism each all-reduce becomes a
    reduce-scatter plus an all-gather of the same tensor (the same bytes). All on the critical path.
    Pipeline parallel: per micro-batch, the stage boundary's activations forward and their gradients backward
    (b·s·h/t per device with Megatron's scatter/gather, §4.1), v times more with interleaving; on the critical path.
    Data parallel: stage 0 all-reduces gradients once per step; stage 1 reduce-scatters gradients and all-gathers
    updated parameters; stage 2 reduce-scatters gradients every micro-batch (they are partitioned); stage 3
    also all-gathers parameters for every forward and backward (ZeRO §7: 2Ψ, 2Ψ, 2Ψ, 3Ψ at one micro-batch).
    Groups of one rank are listed too and cost nothing: ``boundary_tensors`` leaves them out.

    >>> from course_lib.parallelism import GPT3_175B, ParallelPlan
    >>> [t.tensor for t in boundary_tensors(GPT3_175B, ParallelPlan(data_parallel=2, tensor_parallel=8))]
    ['layer outputs (partial sums), forward', 'input gradients (partial sums), backward', 'gradients']
    """
    check_plan_for_model(model, plan)
    t, p, d, b, m, v = plan.sizes
    activation = ACTIVATION_BYTES * b * model.seq_len * model.hidden  # one b×s×h tensor
    layers_here = model.layers // p
    per_mb = layers_here * m  # layer-micro-batch pairs per step on a device
    forward_calls = 2 * per_mb * (2 if plan.recompute == "full" else 1)
    transfers = []
    if plan.sequence_parallel:
        transfers += [
            BoundaryTransfer(
                "tensor",
                "sequence-sharded activations gathered, forward",
                "all_gather",
                activation,
                t,
                forward_calls,
                "none",
            ),
            BoundaryTransfer(
                "tensor",
                "layer outputs reduce-scattered, forward",
                "reduce_scatter",
                activation,
                t,
                forward_calls,
                "none",
            ),
            BoundaryTransfer(
                "tensor", "activation gradients gathered, backward", "all_gather", activation, t, 2 * per_mb, "none"
            ),
            BoundaryTransfer(
                "tensor",
                "input gradients reduce-scattered, backward",
                "reduce_scatter",
                activation,
                t,
                2 * per_mb,
                "none",
            ),
        ]
    else:
        transfers += [
            BoundaryTransfer(
                "tensor", "layer outputs (partial sums), forward", "all_reduce", activation, t, forward_calls, "none"
            ),
            BoundaryTransfer(
                "tensor", "input gradients (partial sums), backward", "all_reduce", activation, t, 2 * per_mb, "none"
            ),
        ]
    stage_hops = (p > 1) * m * v  # v chunks per device: v times the stage crossings
    transfers += [
        BoundaryTransfer(
            "pipeline", "stage-boundary activations, forward", "send_recv", activation / t, p, stage_hops, "none"
        ),
        BoundaryTransfer(
            "pipeline",
            "stage-boundary activation gradients, backward",
            "send_recv",
            activation / t,
            p,
            stage_hops,
            "none",
        ),
    ]
    params_here = model.params / (t * p)
    grads, weights = GRAD_BYTES * params_here, PARAM_BYTES * params_here
    stage = plan.zero_stage
    if stage == 0:
        transfers.append(BoundaryTransfer("data", "gradients", "all_reduce", grads, d, 1 + 0 * m, "last backward"))
    elif stage == 1:
        transfers += [
            BoundaryTransfer("data", "gradients", "reduce_scatter", grads, d, 1 + 0 * m, "last backward"),
            BoundaryTransfer("data", "updated parameters", "all_gather", weights, d, 1 + 0 * m, "none"),
        ]
    elif stage == 2:
        transfers += [
            BoundaryTransfer("data", "gradients", "reduce_scatter", grads, d, m, "backward"),
            BoundaryTransfer("data", "updated parameters", "all_gather", weights, d, 1 + 0 * m, "none"),
        ]
    else:
        transfers += [
            BoundaryTransfer("data", "parameters for the forward", "all_gather", weights, d, m, "forward"),
            BoundaryTransfer("data", "parameters for the backward", "all_gather", weights, d, m, "backward"),
            BoundaryTransfer("data", "gradients", "reduce_scatter", grads, d, m, "backward"),
        ]
    return tuple(transfers)


def boundary_tensors(model: TransformerModel, plan: ParallelPlan) -> tuple[BoundaryTransfer, ...]:
    """The transfers of ``step_transfers`` that actually cross a boundary (group of more than one rank).

    >>> from course_lib.parallelism import GPT3_175B, ParallelPlan
    >>> [(t.axis, t.op) for t in boundary_tensors(GPT3_175B, ParallelPlan(pipeline_parallel=4, grad_accum_steps=4))]
    [('pipeline', 'send_recv'), ('pipeline', 'send_recv')]
    """
    return tuple(x for x in step_transfers(model, plan) if x.crosses_boundary)


def communication_volume_per_step(model: TransformerModel, plan: ParallelPlan) -> dict:
    """Bytes each device sends per step on each axis ("data", "tensor", "pipeline"), ring algorithms.

    >>> from course_lib.parallelism import GPT3_175B, ParallelPlan
    >>> from course_lib.units import format_bytes
    >>> volume = communication_volume_per_step(GPT3_175B, ParallelPlan(data_parallel=64))
    >>> format_bytes(volume["data"])   # 2(d−1)/d × 2 bytes × Ψ
    '688 GB'
    """
    volume: dict[str, _check.FloatOrArray] = {"data": 0.0, "tensor": 0.0, "pipeline": 0.0}
    for transfer in step_transfers(model, plan):
        volume[transfer.axis] = volume[transfer.axis] + transfer.bytes_sent_per_device
    return volume
