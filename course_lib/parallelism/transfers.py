"""Transfers: every tensor that crosses a device boundary in one training step of a plan (``step_transfers``), with
its collective, payload, group and calls per step, and the bytes each device sends on each axis. ``budget`` places
and times them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _check, collectives
from .fp8 import Fp8Recipe, fp8_linear_weights_per_layer
from .memory import ACTIVATION_BYTES, GRAD_BYTES, PARAM_BYTES, context_kv_bytes
from .models import TransformerModel
from .plan import ParallelPlan, capacity_padding, check_plan_for_model

__all__ = [
    "expert_dispatch_bytes",
    "BoundaryTransfer",
    "step_transfers",
    "boundary_tensors",
    "communication_volume_per_step",
]


def expert_dispatch_bytes(
    model: TransformerModel, tokens, tensor_parallel: _check.IntOrArray = 1, capacity_factor=None
):
    """One expert all-to-all's buffer per rank (dispatch or combine, forward or backward): the rank's ``tokens`` × k
    (``model.experts_per_token``) × the capacity padding (``capacity_padding``: 1 when dropless, None) × h × 2 bytes,
    / t (each tensor-parallel rank dispatches its
    share, Megatron-Core's all-to-all dispatcher with sequence parallelism); (e − 1)/e of it leaves the rank.

    >>> from course_lib.parallelism import MIXTRAL_8X7B
    >>> expert_dispatch_bytes(MIXTRAL_8X7B, 32768) / 1e6   # 32768 · 2 · 4096 · 2 B
    536.870912
    """
    if not isinstance(model, TransformerModel):
        raise ValueError(f"model must be a parallelism.TransformerModel, got {model!r}")
    _check.nonnegative("tokens", tokens)
    _check.count("tensor_parallel", tensor_parallel)
    padding = capacity_padding(capacity_factor)
    return ACTIVATION_BYTES * tokens * model.experts_per_token * padding * model.hidden / tensor_parallel


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
        """Bytes each device sends per step (ring algorithms, pairwise for an all-to-all; 0 for a group of one).

        >>> BoundaryTransfer("data", "gradients", "all_reduce", 1e9, 4, 1, "last backward").bytes_sent_per_device
        1500000000.0
        """
        algorithm = "pairwise" if self.op == "all_to_all" else "ring"
        cost = collectives.collective_cost(self.op, self.group_size, self.payload_bytes, algorithm)
        return _check.as_result(cost.wire_bytes * self.calls_per_step)


def step_transfers(
    model: TransformerModel, plan: ParallelPlan, fp8: Fp8Recipe | None = None
) -> tuple[BoundaryTransfer, ...]:
    """Every tensor that crosses a device boundary in one step, with its collective, size and count.

    Tensor parallel (Megatron-LM, per layer and micro-batch): 2 all-reduces of the b·s·h activations forward and 2
    backward; full recomputation repeats the 2 forward ones. With sequence parallelism each all-reduce becomes a
    reduce-scatter plus an all-gather of the same tensor (the same bytes). All on the critical path.
    Pipeline parallel: per micro-batch, the stage boundary's activations forward and their gradients backward
    (b·s·h/t per device with Megatron's scatter/gather, §4.1), v times more with interleaving; on the critical path.
    Data parallel: stage 0 all-reduces gradients once per step; stage 1 reduce-scatters gradients and all-gathers
    updated parameters; stage 2 reduce-scatters gradients every micro-batch (they are partitioned); stage 3
    also all-gathers parameters for every forward and backward (ZeRO §7: 2Ψ, 2Ψ, 2Ψ, 3Ψ at one micro-batch), over
    the d·c ranks that hold the same weights; with expert parallelism the routed experts' over the d·c/e ranks that
    hold the same experts (axis "expert data").
    Context parallel (axis "context", ``_context_transfers``): a device holds s/c tokens of each sequence, so every
    activation above is b·(s/c)·h; ring attention's K/V blocks, the all-gathers of K and V (Llama 3's form), or
    DeepSpeed-Ulysses' four all-to-alls per layer.
    Expert parallel (axis "expert", ``_expert_transfers``): the dispatch and combine all-to-alls of every MoE layer.
    Groups of one rank are listed too and cost nothing: ``boundary_tensors`` leaves them out.
    ``fp8`` (a ``parallelism.Fp8Recipe``, None for none): ZeRO's parameter all-gathers move the linear-layer weights
    at the recipe's ``gather_bytes``; sequence parallelism's all-gathers move its ``tensor_parallel_gather_bytes``
    per element; with ``fp8_dispatch`` the expert dispatch forward and the combine's gradient backward move 1 byte
    per element; everything else as without it (``parallelism.fp8``).

    Mixtral 8x7B with e = 8: per layer and micro-batch, 2 all-to-alls forward and 2 backward of s·k·h·2 bytes, 7/8
    of which leave the device:

    >>> from course_lib.parallelism import MIXTRAL_8X7B
    >>> dispatch = [x for x in step_transfers(MIXTRAL_8X7B, ParallelPlan(data_parallel=8, expert_parallel=8))
    ...             if x.axis == "expert"][0]
    >>> dispatch.tensor, dispatch.payload_bytes == 32768 * 2 * 4096 * 2, dispatch.calls_per_step
    ('expert dispatch (all-to-all), forward', True, 32)

    >>> from course_lib.parallelism import GPT3_175B, ParallelPlan
    >>> [t.tensor for t in boundary_tensors(GPT3_175B, ParallelPlan(data_parallel=2, tensor_parallel=8))]
    ['layer outputs (partial sums), forward', 'input gradients (partial sums), backward', 'gradients']
    """
    check_plan_for_model(model, plan)
    t, p, d, b, m, v = plan.sizes
    c = plan.context_parallel
    tokens = b * (model.seq_len // c)  # a device's tokens of one micro-batch: s/c of each sequence
    activation = ACTIVATION_BYTES * tokens * model.hidden  # one b×(s/c)×h tensor
    layers_here = model.layers // p
    per_mb = layers_here * m  # layer-micro-batch pairs per step on a device
    repeat = 2 if plan.recompute == "full" else 1
    forward_calls = 2 * per_mb * repeat
    transfers = []
    if plan.sequence_parallel:
        # an FP8 recipe may gather in FP8 (the layer-norm outputs forward, the output gradients backward)
        gathered = activation * (ACTIVATION_BYTES if fp8 is None else fp8.tensor_parallel_gather_bytes) / 2
        transfers += [
            BoundaryTransfer(
                "tensor",
                "sequence-sharded activations gathered, forward",
                "all_gather",
                gathered,
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
                "tensor", "activation gradients gathered, backward", "all_gather", gathered, t, 2 * per_mb, "none"
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
    if np.any(np.asarray(c) > 1):
        transfers += _context_transfers(model, plan, tokens, per_mb, repeat)
    if model.experts > 1 and np.any(np.asarray(plan.expert_parallel) > 1):
        transfers += _expert_transfers(model, plan, tokens, repeat, fp8 is not None and fp8.fp8_dispatch)
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
    # Gradients are reduced over the d·c ranks that hold the same weights (Megatron-Core piggybacks the context
    # ranks on the data-parallel group); with expert parallelism the routed experts' over the d·c/e that hold the
    # same experts ("expert data").
    group = d * c
    gather = None if fp8 is None else fp8.gather_bytes
    linear = model.layers * fp8_linear_weights_per_layer(model)  # the FP8 recipe's weights, every expert included
    if model.experts > 1 and np.any(np.asarray(plan.expert_parallel) > 1):
        experts_here = model.routed_expert_params / (plan.expert_parallel * t * p)
        dense = (model.params - model.routed_expert_params) / (t * p)
        dense_linear = (linear - model.routed_expert_params) / (t * p)
        transfers += _data_transfers("data", "", dense, group, plan, (dense_linear, gather))
        transfers += _data_transfers(
            "expert data", "expert ", experts_here, group // plan.expert_parallel, plan, (experts_here, gather)
        )
    else:
        transfers += _data_transfers("data", "", model.params / (t * p), group, plan, (linear / (t * p), gather))
    return tuple(transfers)


def _data_transfers(axis, prefix, params_here, group, plan: ParallelPlan, linear=(0.0, None)) -> list[BoundaryTransfer]:
    """The gradient reduction and parameter gathers of ``params_here`` parameters per device over ``group`` ranks
    under the plan's ZeRO stage (``step_transfers``' data-parallel rule); ``prefix`` names their tensors.
    ``linear``: (how many of them are linear-layer weights, the bytes each of those is gathered in; None: 16-bit)."""
    m = plan.grad_accum_steps
    grads, weights = GRAD_BYTES * params_here, PARAM_BYTES * params_here
    linear_here, gather_bytes = linear
    if gather_bytes is not None:
        weights = PARAM_BYTES * (params_here - linear_here) + gather_bytes * linear_here
    gradients, parameters = f"{prefix}gradients", f"updated {prefix}parameters"
    stage = plan.zero_stage
    if stage == 0:
        return [BoundaryTransfer(axis, gradients, "all_reduce", grads, group, 1 + 0 * m, "last backward")]
    if stage == 1:
        return [
            BoundaryTransfer(axis, gradients, "reduce_scatter", grads, group, 1 + 0 * m, "last backward"),
            BoundaryTransfer(axis, parameters, "all_gather", weights, group, 1 + 0 * m, "none"),
        ]
    if stage == 2:
        return [
            BoundaryTransfer(axis, gradients, "reduce_scatter", grads, group, m, "backward"),
            BoundaryTransfer(axis, parameters, "all_gather", weights, group, 1 + 0 * m, "none"),
        ]
    return [
        BoundaryTransfer(axis, f"{prefix}parameters for the forward", "all_gather", weights, group, m, "forward"),
        BoundaryTransfer(axis, f"{prefix}parameters for the backward", "all_gather", weights, group, m, "backward"),
        BoundaryTransfer(axis, gradients, "reduce_scatter", grads, group, m, "backward"),
    ]


def _context_transfers(model: TransformerModel, plan: ParallelPlan, tokens, per_mb, repeat) -> list[BoundaryTransfer]:
    """Context parallelism's transfers per step: the c ranks of a group each hold ``tokens`` of a micro-batch, K and
    V of ``context_kv_bytes`` each.

    "ring" (Liu et al. 2023, Ring Attention; Megatron-Core's cp_comm_type "p2p"): per layer and micro-batch each rank
    passes its K and V blocks to the next rank c − 1 times forward, and K, V and their gradients (twice that) c − 1
    times backward, each hop while the block it has computes (phases "attention forward" and "attention backward":
    what may hide them is the attention core's compute). The causal mask would leave the ranks unbalanced; the
    zig-zag split (each rank holds chunks i and 2c − 1 − i of 2c) balances them, so every rank does 1/c of the
    attention.
    "all_gather" (Llama 3, arXiv 2407.21783 §3.3.2; Megatron-Core's cp_comm_type "all_gather", run by Transformer
    Engine's AttnFuncWithCPAndKVAllGather, NVIDIA/TransformerEngine@v2.18 transformer_engine/pytorch/attention/
    dot_product_attention/context_parallel.py): per layer and micro-batch K and V are all-gathered before attention
    (lines 3213-3214), again in the backward (3786-3787), where the full-length dK and dV are reduce-scattered back
    (4120-4121); each gathered tensor is c times a rank's K or V. All exposed: "KV all-gather between CP ranks is
    exposed" (its docstring, 3016), as Llama 3 says ("the all-gather communication latency is exposed in the critical
    path").
    "all_to_all" (Jacobs et al. 2023, DeepSpeed-Ulysses): per layer and micro-batch four all-to-alls forward (Q, K,
    V from sequence-split to head-split, the output back) and four backward (their gradients), on the critical path.
    """
    c = plan.context_parallel
    t, m = plan.tensor_parallel, plan.grad_accum_steps
    queries = ACTIVATION_BYTES * tokens * model.hidden / t
    keys = context_kv_bytes(model, tokens, t)
    if plan.context_parallel_kind == "ring":
        hops = per_mb * (c - 1)
        return [
            BoundaryTransfer(
                "context", "K/V blocks around the ring, forward", "send_recv", 2 * keys, c, repeat * hops,
                "attention forward",
            ),
            BoundaryTransfer(
                "context", "K/V blocks and their gradients, backward", "send_recv", 4 * keys, c, hops,
                "attention backward",
            ),
        ]  # fmt: skip
    calls = 2 * per_mb + 0 * m
    if plan.context_parallel_kind == "all_gather":
        return [
            BoundaryTransfer("context", "K and V gathered (all-gather), forward", "all_gather", c * keys, c,
                             repeat * calls, "none"),
            BoundaryTransfer("context", "K and V gathered again (all-gather), backward", "all_gather", c * keys, c,
                             calls, "none"),
            BoundaryTransfer("context", "K and V gradients (reduce-scatter), backward", "reduce_scatter", c * keys,
                             c, calls, "none"),
        ]  # fmt: skip
    return [
        BoundaryTransfer("context", "Q and output (all-to-all), forward", "all_to_all", queries, c, repeat * calls,
                         "none"),
        BoundaryTransfer("context", "K and V (all-to-all), forward", "all_to_all", keys, c, repeat * calls, "none"),
        BoundaryTransfer("context", "Q and output gradients (all-to-all), backward", "all_to_all", queries, c, calls,
                         "none"),
        BoundaryTransfer("context", "K and V gradients (all-to-all), backward", "all_to_all", keys, c, calls, "none"),
    ]  # fmt: skip


def _expert_transfers(
    model: TransformerModel, plan: ParallelPlan, tokens, repeat, fp8_dispatch=False
) -> list[BoundaryTransfer]:
    """Expert parallelism's all-to-alls per step: per MoE layer of the heaviest stage and micro-batch, the dispatch
    (tokens to their experts' ranks) and the combine (results back) forward, both again backward (their gradients),
    on the critical path. Each rank's payload: its tokens × k × capacity factor × h × 2 bytes (/t: each
    tensor-parallel rank dispatches its share, Megatron-Core's all-to-all dispatcher with sequence parallelism);
    (e − 1)/e of it crosses devices. ``fp8_dispatch``: the dispatch forward and the combine backward (the gradient
    sent to the experts' down projections) in FP8, half the bytes (DeepSeek-V3, arXiv 2412.19437 §3.3.3)."""
    e, t, p, m = plan.expert_parallel, plan.tensor_parallel, plan.pipeline_parallel, plan.grad_accum_steps
    payload = expert_dispatch_bytes(model, tokens, t, plan.capacity_factor)
    calls = -(-model.moe_layers // p) * m
    fp8 = {("forward", "dispatch"), ("backward", "combine")} if fp8_dispatch else set()
    return [
        BoundaryTransfer(
            "expert",
            f"expert {name} (all-to-all), {pass_}",
            "all_to_all",
            payload / 2 if (pass_, name) in fp8 else payload,
            e,
            count,
            "none",
        )
        for pass_, count in (("forward", repeat * calls), ("backward", calls))
        for name in ("dispatch", "combine")
    ]


def boundary_tensors(model: TransformerModel, plan: ParallelPlan) -> tuple[BoundaryTransfer, ...]:
    """The transfers of ``step_transfers`` that actually cross a boundary (group of more than one rank).

    >>> from course_lib.parallelism import GPT3_175B, ParallelPlan
    >>> [(t.axis, t.op) for t in boundary_tensors(GPT3_175B, ParallelPlan(pipeline_parallel=4, grad_accum_steps=4))]
    [('pipeline', 'send_recv'), ('pipeline', 'send_recv')]
    """
    return tuple(x for x in step_transfers(model, plan) if x.crosses_boundary)


def communication_volume_per_step(model: TransformerModel, plan: ParallelPlan, fp8: Fp8Recipe | None = None) -> dict:
    """Bytes each device sends per step on each axis ("data", "tensor", "pipeline"; "context", "expert" and
    "expert data" when the plan uses them), ring algorithms (all-to-all: the (n − 1)/n of its payload it sends);
    ``fp8`` as ``step_transfers`` takes it.

    >>> from course_lib.parallelism import GPT3_175B, ParallelPlan
    >>> from course_lib.units import format_bytes
    >>> volume = communication_volume_per_step(GPT3_175B, ParallelPlan(data_parallel=64))
    >>> format_bytes(volume["data"])   # 2(d−1)/d × 2 bytes × Ψ
    '688 GB'
    """
    volume: dict[str, _check.FloatOrArray] = {"data": 0.0, "tensor": 0.0, "pipeline": 0.0}
    for transfer in step_transfers(model, plan, fp8):
        volume[transfer.axis] = volume.get(transfer.axis, 0.0) + transfer.bytes_sent_per_device
    return volume
