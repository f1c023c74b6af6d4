"""Step time: the time of one training step of a plan on a cluster, split into compute, bubble, and exposed and
hidden communication, and what binds it. Groups are placed as ``placement`` says.

The dependency rule that decides what is exposed:
- tensor-parallel collectives sit on the critical path: the next operator needs their result;
- pipeline sends sit on the critical path: the next stage waits for the activations;
- data-parallel gradient reduction overlaps the backward pass (buckets are reduced while earlier layers still
  compute their gradients); with ZeRO-3 the parameter gathers overlap the compute of the same micro-batch
  (prefetching the next layer); the parameter all-gather after a ZeRO-1/2 optimizer step is exposed.
A transfer is exposed only by the part that does not fit into the compute it may overlap with.

Step time = m·(t_F + t_bwd + TP + PP per micro-batch) + bubble + exposed data-parallel time, with the bubble
(p−1)/v of one micro-batch slot (Narayanan et al. 2021 Eq. 1), less with the zero-bubble schedules
(``_pipeline_bubble_s``). Compute runs at ``compute_efficiency`` × peak
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
>>> from course_lib.units import format_flops_rate, format_time
>>> plan = ParallelPlan(data_parallel=6, tensor_parallel=8, pipeline_parallel=64, micro_batch=1,
...                     grad_accum_steps=512, recompute="full", schedule="interleaved", virtual_stages=2)
>>> step = step_time(MEGATRON_1T, plan, SELENE_3072, calibration=None)
>>> format_time(step.total_s), step.binding_constraint
('2.01 min', 'compute')
>>> step = step_time(MEGATRON_1T, plan, SELENE_3072)   # the default calibration; measured: 163 TFLOP/s hardware
>>> format_time(step.total_s), format_flops_rate(step.hfu * SELENE_3072.accelerator.peak("bf16"))
('1.72 min', '162 TFLOP/s')
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _check
from ..compute import RECOMPUTE_OPTIONS, transformer_flops_per_iteration, transformer_forward_flops
from ..hardware import Cluster
from ..parallelism.calibration import Calibration, calibrated_cluster, resolve_calibration
from ..parallelism.fp8 import fp8_linear_weights_per_layer, fp8_peak
from ..parallelism.frameworks import PRECISION_RECIPES
from ..parallelism.models import TransformerModel
from ..parallelism.plan import ParallelPlan, capacity_padding, check_plan_for_model, stage_layers
from ..parallelism.schedule import pipeline_bubble_time
from ..parallelism.transfers import context_kv_bytes, expert_dispatch_bytes, step_transfers
from ..pipeline import ZERO_BUBBLE_SCHEDULES
from .placement import _transfer_call, group_collective_time

__all__ = [
    "StepTime",
    "step_time",
    "calibrated_step_time",
    "exposed_after_overlap",
    "bucketed_exposure",
    "binding_constraint",
    "model_flops_per_step",
    "forward_flops_per_token",
]


def exposed_after_overlap(communication_s, overlap_window_s):
    """The part of a transfer no compute hides: max(0, T_comm − T_window).

    ``overlap_window_s`` is the compute that does not depend on the transfer and may run meanwhile (0 for a
    transfer on the critical path). The card's example: 2.02 ms of communication against 1 ms of local compute.

    >>> from course_lib.units import format_time
    >>> format_time(exposed_after_overlap(2.02e-3, 1e-3)), format_time(exposed_after_overlap(2.02e-3, 0))
    ('1.02 ms', '2.02 ms')
    """
    communication_s = _check.nonnegative("communication_s", communication_s)
    overlap_window_s = _check.nonnegative("overlap_window_s", overlap_window_s)
    return _check.as_result(np.maximum(communication_s - overlap_window_s, 0.0))


@dataclass(frozen=True, eq=False)
class StepTime:
    """Where the time of one step goes (seconds). Fields may be arrays when plans were evaluated in bulk.

    ``mfu`` (model FLOPs utilisation) counts the model's FLOPs of the step, forward and backward, without
    recomputation; ``hfu`` (hardware FLOPs utilisation) adds the recomputed forward FLOPs. Both divide by
    devices × peak × step time. Narayanan et al. 2021's 163 TFLOP/s/GPU (Eq. (3), full recomputation) is a hardware
    figure: its MFU is about 6/8 of it.
    """

    compute_s: _check.FloatOrArray
    bubble_s: _check.FloatOrArray
    exposed_s: dict
    overlapped_s: dict
    total_s: _check.FloatOrArray
    mfu: _check.FloatOrArray = float("nan")
    hfu: _check.FloatOrArray = float("nan")

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
    calibration: Calibration | str | None = "default",
    framework=None,
):
    """Time of one optimizer step of ``plan`` on ``cluster``, split into compute, bubble, exposed and hidden comm.

    See the module docstring for the dependency rule, ``budget.placement``'s for the placement. ``calibration``:
    "default" (the documented calibration for ``cluster``, ``parallelism.default_calibration``), a
    ``parallelism.Calibration`` (both run ``calibrated_step_time``; ``compute_efficiency`` is then unused) or None
    (the ideal model, ``compute_efficiency`` × peak). ``framework`` (a ``parallelism.Framework`` or a key of
    ``parallelism.FRAMEWORKS``, e.g. "megatron") runs the plan as that framework does instead of the calibration's
    own (Megatron-LM for the default); the ideal model has none.

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import GPT2_1_5B, ParallelPlan
    >>> from course_lib.units import format_time
    >>> plan = ParallelPlan(data_parallel=8, micro_batch=4, grad_accum_steps=4)
    >>> step = step_time(GPT2_1_5B, plan, DGX_H100, calibration=None)   # the ideal model
    >>> format_time(step.compute_s), format_time(step.exposed_s["data"]), format_time(step.overlapped_s["data"])
    ('340 ms', '0 s', '9.25 ms')
    >>> format_time(step_time(GPT2_1_5B, plan, DGX_H100).total_s)     # the default calibration
    '563 ms'
    """
    _check_cluster_holds(plan, cluster)
    calibration = resolve_calibration(calibration, cluster, framework)
    if calibration is not None:
        return calibrated_step_time(model, plan, cluster, calibration, dtype)
    return _ideal_step_time(model, plan, cluster, compute_efficiency, dtype)[0]


def _check_cluster_holds(plan, cluster):
    if np.any(np.asarray(plan.devices) > cluster.devices):
        raise ValueError(f"plan needs {plan.devices} devices; the cluster has {cluster.devices}")


def _ideal_step_time(model, plan, cluster, compute_efficiency, dtype):
    """``step_time``'s ideal model (compute at ``compute_efficiency`` × peak): the StepTime, and the
    ``_timed_transfers`` result it was built from (``partition_report`` makes its ``TimedTransfer`` rows from it)."""
    m = plan.grad_accum_steps
    shape = (model.seq_len, model.layers, model.hidden, model.vocab)
    forward, backward = _microbatch_compute_s(model, plan, cluster, compute_efficiency, dtype)
    total_mb = forward + backward
    timed = _timed_transfers(model, plan, cluster, forward, backward)
    _, per_phase, exposed_phase = timed

    exposed = {"tensor": 0.0, "pipeline": 0.0, "data": 0.0}
    overlapped = {"tensor": 0.0, "pipeline": 0.0, "data": 0.0}
    for (axis, phase), seconds in per_phase.items():
        not_hidden = exposed_phase[(axis, phase)]
        exposed[axis] = exposed.get(axis, 0.0) + not_hidden
        overlapped[axis] = overlapped.get(axis, 0.0) + seconds - not_hidden

    # Tensor, pipeline, context and expert transfers recur in every micro-batch slot; gradients once per step.
    per_slot = sum(seconds for axis, seconds in exposed.items() if axis not in _STEP_AXES)
    slot = total_mb + per_slot / m  # one micro-batch through one stage
    # W: the weight-gradient GEMMs, as long as the forward's linear layers (all but the attention core)
    bubble = _pipeline_bubble_s(plan, slot, forward / total_mb, (1.0 - _attention_core_share(model)) * forward)
    compute = m * total_mb
    total = m * slot + bubble + sum(exposed[axis] for axis in _STEP_AXES if axis in exposed)
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


_STEP_AXES = ("data", "expert data")  # the axes whose transfers happen once per step, not in every micro-batch slot


def _microbatch_compute_s(model, plan, cluster, compute_efficiency, dtype):
    """(forward, backward with recomputation) seconds of one micro-batch on one device, ideal model."""
    efficiency = _check.fraction("compute_efficiency", compute_efficiency)
    rate = cluster.accelerator.peak(dtype) * efficiency
    split = plan.tensor_parallel * plan.pipeline_parallel * plan.context_parallel  # c ranks share each sequence
    shape = (model.seq_len, model.layers, model.hidden, model.vocab)
    forward = transformer_forward_flops(plan.micro_batch, *shape) / split / rate
    total_mb = transformer_flops_per_iteration(plan.micro_batch, *shape, recompute=plan.recompute) / split / rate
    return forward, total_mb - forward  # the backward includes recomputation


def _timed_transfers(model, plan, cluster, forward, backward):
    """The step's transfers with their seconds per step and their ``group_collective`` call, and per (axis,
    phase) their total and exposed seconds.

    The dependency rule: "none" hides behind nothing; "last backward" behind one micro-batch's backward;
    "forward"/"backward" transfers recur every micro-batch, each behind its own forward or backward, so m windows;
    "attention forward"/"attention backward" (ring attention's K/V blocks) behind the attention core's share of
    them, 4s²h of 24sh² + 4s²h per layer (Narayanan et al. 2021's count, ``compute.transformer_layer_forward_flops``).
    """
    m = plan.grad_accum_steps
    core = _attention_core_share(model)
    windows = {
        "forward": forward,
        "backward": backward,
        "attention forward": core * forward,
        "attention backward": core * forward * 2,
    }
    timed, per_phase = [], {}  # (axis, phase) -> total seconds per step of the transfers with that phase
    for transfer in step_transfers(model, plan):
        call = _transfer_call(transfer, plan, cluster)
        seconds = transfer.calls_per_step * call.time_s  # × transfer_time_per_call
        timed.append((transfer, seconds, call))
        key = (transfer.axis, transfer.phase)
        per_phase[key] = per_phase.get(key, 0.0) + seconds
    exposed = {}
    for (axis, phase), seconds in per_phase.items():
        window = {"none": 0.0, "last backward": backward}.get(phase, m * windows.get(phase, 0.0))
        exposed[(axis, phase)] = exposed_after_overlap(seconds, window)
    return timed, per_phase, exposed


def _attention_core_share(model):
    """The attention core's share of the forward FLOPs, 4s²h of 24sh² + 4s²h per layer with the output layer's 2Vh
    beside them (Narayanan et al. 2021's count, ``compute.transformer_forward_flops``)."""
    h, s = model.hidden, model.seq_len
    return model.layers * 4.0 * s * h / (model.layers * (24.0 * h * h + 4.0 * s * h) + 2.0 * model.vocab * h)


def _pipeline_bubble_s(plan: ParallelPlan, slot_s, forward_share, backward_weight_s):
    """The pipeline bubble of one step (seconds), from ``slot_s``, one micro-batch through one stage (its compute and
    the communication on its critical path).

    GPipe, 1F1B and interleaved: (p − 1)/v slots (Narayanan et al. 2021 Eq. 1). ZB-H1 and ZB-H2 split the slot into
    t_F (``forward_share`` of it, communication included), t_W = ``backward_weight_s`` (the weight-gradient GEMMs,
    which wait for nothing and send nothing) and t_B (the rest), and take ``parallelism.pipeline_bubble_time``, the
    simulator's idle time by formula: (p − 1)(t_F + t_B − t_W) for ZB-H1 where 1F1B has (p − 1)(t_F + t_B + t_W);
    for ZB-H2 (p − 1)·max(t_F + t_B − 2t_W, 0) without the optimizer step's synchronisation (``plan.optimizer_sync``
    False, Qi et al. 2024 §4), zero once t_F + t_B ≤ 2t_W, and at least (p − 1)t_F with it (both with t_W ≤ t_F,
    their Table 2). The split of the backward follows their Table 1: per layer F costs sbh(24h + 4s) FLOPs, B
    sbh(24h + 8s) and W 24sbh²: W is the linear layers' forward again, half their backward (a linear layer's input
    and weight gradients are one GEMM each, as large as its forward); the attention core's backward is all in B.

    >>> from course_lib.parallelism import ParallelPlan
    >>> plan = ParallelPlan(pipeline_parallel=4, grad_accum_steps=8)
    >>> _pipeline_bubble_s(plan, 3.0, 1 / 3, 1.0), _pipeline_bubble_s(plan.replace(schedule="zb-h1"), 3.0, 1 / 3, 1.0)
    (9.0, 3.0)
    >>> _pipeline_bubble_s(plan.replace(schedule="zb-h2", optimizer_sync=False), 3.0, 1 / 3, 1.0)
    0.0
    """
    p, v = plan.pipeline_parallel, plan.virtual_stages
    if plan.schedule not in ZERO_BUBBLE_SCHEDULES:
        return (p - 1) / v * slot_s
    forward_s = slot_s * forward_share
    return pipeline_bubble_time(
        p,
        plan.grad_accum_steps,
        plan.schedule,
        forward_time_s=forward_s,
        backward_time_s=slot_s - forward_s,
        backward_weight_time_s=backward_weight_s,
        optimizer_sync=plan.optimizer_sync,
    )


def model_flops_per_step(model: TransformerModel, plan: ParallelPlan, recompute=None):
    """FLOPs of one step, architecture-aware: 3 × the forward of every layer and the output layer, over the global
    batch, plus the recomputed forward (``recompute``; default the plan's: "full" one layer forward, "selective"
    the attention scores and their product with V). Per token a layer's forward is 2 FLOPs per matrix weight plus
    4sh for QKᵀ and the product with V (as Narayanan et al. 2021's appendix, no causal saving); the output layer
    2Vh. With ``recompute="none"`` this is the model FLOPs of MFU.

    >>> from course_lib.parallelism import GPT3_175B, ParallelPlan
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


def bucketed_exposure(total_s, bucket_s, window_s, occurrences: _check.IntOrArray = 1):
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


def _column_parallel_share(model: TransformerModel) -> float:
    """The share of a layer's matrix weights in its column-parallel linears (W_Q, W_K, W_V and the MLP's input
    matrices): the weight-gradient GEMMs that hide the backward tensor-parallel collectives when a framework
    overlaps them (Megatron-LM's asynchronous input-gradient all-reduce runs during the weight-gradient GEMM of the
    same linear).

    >>> from course_lib.parallelism import GPT3_175B
    >>> _column_parallel_share(GPT3_175B)   # (h² + 2h² + 4h²) / 12h²
    0.5833333333333334
    """
    assert model.kv_heads is not None  # __post_init__ resolved the default
    h, kv_width = model.hidden, model.kv_heads * model.head_dim
    weights = model.matmul_weights_per_layer  # what a token uses: with experts, the k it visits and the router
    mlp = weights - (2 * h * h + 2 * h * kv_width)
    inputs = h * h + 2 * h * kv_width + mlp * (2 / 3 if model.gated_mlp else 1 / 2)  # gate and up of (gate, up, down)
    return inputs / weights


def _context_exposed_mb(model: TransformerModel, plan: ParallelPlan, cluster: Cluster, layers, tokens, core_s):
    """(exposed, hidden) seconds per micro-batch of context parallelism's transfers on a stage of ``layers`` layers,
    each rank holding ``tokens`` tokens; ``core_s`` is one layer's attention-core forward on a rank.

    Ring (``parallelism.transfers._context_transfers``): each of the c − 1 hops of a layer's forward sends the K/V
    block while the rank computes the attention of the block it holds, 1/c of its attention core (the zig-zag split
    balances the causal work); backward, K/V and their gradients behind twice that. Full recomputation repeats the
    forward ring. All-gather (Llama 3's form): K and V gathered forward (again with full recomputation), gathered
    again backward and their gradients reduce-scattered, c times a rank's K or V each, all exposed. All-to-all
    (DeepSpeed-Ulysses): four all-to-alls forward and four backward, all exposed.
    """
    c, t = plan.context_parallel, plan.tensor_parallel
    if not np.any(np.asarray(c) > 1):
        return 0.0, 0.0
    repeat = 2 if plan.recompute == "full" else 1
    keys = context_kv_bytes(model, tokens, t)  # one of K or V on a rank, 16-bit
    if plan.context_parallel_kind == "ring":
        forward_hop = group_collective_time("send_recv", cluster, c, t, 2 * keys)
        backward_hop = group_collective_time("send_recv", cluster, c, t, 4 * keys)
        block = core_s / c
        exposed = (c - 1) * (
            repeat * exposed_after_overlap(forward_hop, block) + exposed_after_overlap(backward_hop, 2 * block)
        )
        total = (c - 1) * (repeat * forward_hop + backward_hop)
    elif plan.context_parallel_kind == "all_gather":
        gather = group_collective_time("all_gather", cluster, c, t, c * keys)
        scatter = group_collective_time("reduce_scatter", cluster, c, t, c * keys)
        exposed = total = 2 * ((repeat + 1) * gather + scatter)
    else:
        queries = 2.0 * tokens * model.hidden / t
        per_pass = 2 * group_collective_time("all_to_all", cluster, c, t, queries) + 2 * group_collective_time(
            "all_to_all", cluster, c, t, keys
        )
        exposed = total = (repeat + 1) * per_pass
    return layers * exposed, layers * (total - exposed)


def _expert_exposed_mb(model: TransformerModel, plan: ParallelPlan, cluster: Cluster, tokens, fp8_dispatch=False):
    """Exposed seconds per micro-batch of expert parallelism's all-to-alls on the heaviest stage: per MoE layer the
    dispatch and combine forward (again with full recomputation) and backward, each of a rank's tokens × k ×
    capacity factor × h × 2 bytes / t, on the critical path (``parallelism.transfers._expert_transfers``). With
    ``fp8_dispatch`` one of each pass's two all-to-alls carries 1 byte per element (the dispatch forward, the
    combine's gradient backward: DeepSeek-V3 §3.3.3), the other stays bf16.
    Not modelled: overlapping them with another micro-batch's compute (Megatron-Core's newer schedules can)."""
    e, t, p = plan.expert_parallel, plan.tensor_parallel, plan.pipeline_parallel
    if model.experts == 1 or not np.any(np.asarray(e) > 1):
        return 0.0
    repeat = 2 if plan.recompute == "full" else 1
    payload = expert_dispatch_bytes(model, tokens, t, plan.capacity_factor)
    moe_layers = -(-model.moe_layers // p)
    call = group_collective_time("all_to_all", cluster, e, t, payload)
    if fp8_dispatch:
        return moe_layers * (repeat + 1) * (call + group_collective_time("all_to_all", cluster, e, t, payload / 2))
    return moe_layers * 2 * (repeat + 1) * call


def _buckets(payload_bytes, bucket_bytes, layers):
    """How many collectives carry ``payload_bytes``: ⌈payload / bucket⌉ buckets (at least one), or one per layer
    of the stage when ``bucket_bytes`` is None (a framework that issues one collective per sharded unit)."""
    if bucket_bytes is None:
        return np.full(np.shape(payload_bytes), 1.0) * layers
    return np.maximum(np.ceil(payload_bytes / bucket_bytes), 1)


def calibrated_step_time(
    model: TransformerModel, plan: ParallelPlan, cluster: Cluster, calibration: Calibration, dtype="bf16"
):
    """Step time of the calibrated model: the heaviest pipeline stage, one micro-batch slot at a time.

    Per micro-batch on the heaviest stage (⌈l/p⌉ layers, the output layer on the last stage):
    - compute: its FLOPs (``model_flops_per_step``'s terms) / t at peak × efficiency, the efficiency
      ``gemm_efficiency`` · x/(x + ``gemm_half_flops``) with x the per-GPU forward FLOPs of one layer (small
      micro-batch × sequence, or large t, run below the big-GEMM efficiency), plus ``layer_overhead_s`` per layer;
    - tensor parallel, per layer: 2 all-reduces forward and 2 backward of b·s·h (sequence parallel: all-gather +
      reduce-scatter for each), full recomputation repeating the forward ones; on the critical path unless the
      framework overlaps them (``tensor_parallel_overlap``: "backward" hides the backward ones behind the
      weight-gradient GEMMs of the column-parallel linears, "all" also the forward ones behind the layer's GEMMs);
    - pipeline: the boundary activations sent forward and their gradients back, b·s·h/t each, v times with
      interleaving (``group_collective``: over NVLink inside a node, else the network); on the critical path
      unless the framework overlaps P2P with compute (``pipeline_overlap``, interleaved schedules only).
    Step = m slots + (p−1)/v slots of bubble (less with ZB-H1 and ZB-H2: ``_pipeline_bubble_s``) + the exposed
    data-parallel time.
    Data parallel, in the framework's buckets of ``bucket_bytes`` (each bucket a collective with its own latency;
    None: one per layer of the stage, as FSDP2 issues one per ``fully_shard`` unit),
    exposed by ``bucketed_exposure``: gradients (fp32 with a recipe that keeps an fp32 buffer) reduced once per step
    behind the last micro-batch's backward (ZeRO-0/1), or reduce-scattered every micro-batch behind its backward
    (ZeRO-2/3), if the framework overlaps them under that stage (``overlap_grad_reduce``; else after it, exposed);
    updated parameters all-gathered after the step behind the first forward (ZeRO-1/2), or gathered for every
    forward and backward (ZeRO-3; once per step with a pipeline under a framework that keeps the stage whole,
    ``reshard_with_pipeline`` False) — hidden only if the framework prefetches them under that stage
    (``prefetch_parameter_gathers``; DeepSpeed's ZeRO-1/2 gather in the optimizer step, exposed).
    Communication that overlaps compute slows it by ``overlap_slowdown`` × its time.
    A framework with an FP8 recipe (``Framework.fp8``, module ``parallelism.fp8``) runs the linear layers' GEMMs at
    the FP8 peak at the same efficiency (the router, the attention core, the output layer and the overheads as
    before; MFU and HFU still divide by the ``dtype`` peak), gathers the linear weights in ZeRO at the recipe's
    ``gather_bytes``, sequence parallelism's all-gathers at its ``tensor_parallel_gather_bytes`` and, with
    ``fp8_dispatch``, sends half the expert all-to-alls in FP8; an accelerator without an FP8 peak is an error.

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import PLAYBOOK_1B, Calibration, ParallelPlan
    >>> from course_lib.units import format_percent, format_time
    >>> plan = ParallelPlan(data_parallel=8, micro_batch=1, grad_accum_steps=32, attention="flash")
    >>> step = step_time(PLAYBOOK_1B, plan, DGX_H100, calibration=Calibration())
    >>> format_time(step.total_s), format_percent(step.mfu)
    ('2.56 s', '50 %')
    """
    check_plan_for_model(model, plan, calibration)
    cluster = calibrated_cluster(cluster, calibration)
    peak = cluster.accelerator.peak(dtype)
    t, p, d, b, m, v = plan.sizes
    c, e = plan.context_parallel, plan.expert_parallel
    layers = stage_layers(model.layers, p)
    tokens = 1.0 * b * model.seq_len / c  # a context-parallel rank's s/c tokens, each attending to all s
    layer_fwd, head_fwd, core_fwd = (x * tokens / t for x in forward_flops_per_token(model))
    # Experts padded to capacity (when a factor is set): the slowest rank computes tokens × k × factor / e tokens'
    # expert MLPs; dropless (None) computes no padding.
    padding = capacity_padding(plan.capacity_factor)
    layer_fwd = layer_fwd + (padding - 1) * 2.0 * model.routed_matmul_weights_per_layer * tokens / t
    efficiency = calibration.gemm_efficiency * layer_fwd / (layer_fwd + calibration.gemm_half_flops)
    rate = peak * efficiency
    fp8 = calibration.framework.fp8
    if fp8 is not None:
        # The linear GEMMs at the FP8 peak: in time, their FLOPs shrink by the peaks' ratio (the attention core and
        # the router stay 16-bit).
        router_fwd = 2.0 * model.router_weights_per_layer * tokens / t
        high = core_fwd + router_fwd
        layer_fwd = (layer_fwd - high) * peak / fp8_peak(cluster.accelerator) + high
    extra = {"none": 0.0, "selective": core_fwd, "full": layer_fwd}[plan.recompute]
    # The last stage also runs the output layer; with p = 1 one device runs everything.
    stage_fwd = layers * layer_fwd + head_fwd
    forward = stage_fwd / rate
    backward = (2 * stage_fwd + layers * extra) / rate
    overhead = layers * calibration.layer_overhead_s
    compute_mb = forward + backward + overhead

    activation = 2.0 * tokens * model.hidden  # one b×(s/c)×h tensor in 16 bit
    repeat = 2 if plan.recompute == "full" else 1

    def collective(op, size, stride, payload):
        return group_collective_time(op, cluster, size, stride, payload)

    if plan.sequence_parallel:  # the all-gathers in FP8 when the recipe gathers in FP8 (``parallelism.fp8``)
        gathered = activation * (2.0 if fp8 is None else fp8.tensor_parallel_gather_bytes) / 2
        tp_call = collective("all_gather", t, 1, gathered) + collective("reduce_scatter", t, 1, activation)
    else:
        tp_call = collective("all_reduce", t, 1, activation)
    # Per layer: 2 calls forward (again with full recomputation), 2 backward, each behind what the framework overlaps.
    gemm_fwd = layer_fwd / rate  # one layer's forward GEMMs (and each of its two backward halves)
    overlap = calibration.framework.tensor_parallel_overlap
    tp_fwd_window = gemm_fwd if overlap == "all" else 0.0
    tp_bwd_window = {"none": 0.0, "backward": _column_parallel_share(model) * gemm_fwd, "all": 2 * gemm_fwd}[overlap]
    tp_exposed_layer = repeat * exposed_after_overlap(2 * tp_call, tp_fwd_window) + exposed_after_overlap(
        2 * tp_call, tp_bwd_window
    )
    tp_mb = np.where(np.asarray(t) > 1, layers * tp_exposed_layer, 0.0)
    tp_hidden_mb = np.where(np.asarray(t) > 1, layers * tp_call * (2 * repeat + 2), 0.0) - tp_mb
    context_mb, context_hidden_mb = _context_exposed_mb(model, plan, cluster, layers, tokens, core_fwd / rate)
    expert_mb = _expert_exposed_mb(model, plan, cluster, tokens, fp8 is not None and fp8.fp8_dispatch)
    hop = group_collective_time("send_recv", cluster, p, t * d * c, activation / t)
    pp_all_mb = np.where(np.asarray(p) > 1, 2 * v * hop, 0.0)
    # Overlapped P2P (interleaved schedules): a stage's sends run while it computes its next chunk.
    pp_window = compute_mb if calibration.framework.pipeline_overlap else 0.0
    pp_mb = exposed_after_overlap(pp_all_mb, np.where(np.asarray(v) > 1, pp_window, 0.0))
    slot = compute_mb + tp_mb + pp_mb + context_mb + expert_mb
    # W: the weight-gradient GEMMs of the stage's linear layers and output layer (in FP8 time with an FP8 recipe),
    # with their share of the per-layer overhead (the compute's, split as its FLOPs are)
    weight_s = (layers * (layer_fwd - core_fwd) + head_fwd) / rate * compute_mb / (forward + backward)
    bubble = _pipeline_bubble_s(plan, slot, forward / (forward + backward), weight_s)

    param_b, grad_b, buffer_b, _ = PRECISION_RECIPES[calibration.framework.precision]
    params_here = (layers * model.params_per_layer + model.vocab * model.hidden) / t
    # Gradients over the d·c ranks that hold the same weights at stride t; with expert parallelism the routed
    # experts' (1/e of them here) over the d·c/e ranks that hold the same experts, at stride t·e (``placement``).
    group = d * c
    split = np.asarray(e) > 1  # plans (e may be an array) whose experts have a gradient group of their own
    split_experts = model.experts > 1 and bool(np.any(split))
    experts_here = (
        np.where(split, layers * model.routed_expert_params / model.layers / t, 0.0) if split_experts else 0.0
    )
    # Each group's parameters, and how many of them are linear-layer weights (an FP8 recipe may gather those in FP8).
    linear_here = layers * fp8_linear_weights_per_layer(model) / t - experts_here
    groups: list[tuple] = [(params_here - experts_here, linear_here, group, t, True)]
    if split_experts:
        groups.append((experts_here / e, experts_here / e, group // e, t * e, split))

    def stream(op, bytes_per_param, linear_bytes=None):
        """(seconds per occurrence of every bucket, of the boundary bucket) of ``op`` over each group's buckets,
        its linear-layer weights at ``linear_bytes`` (None: at ``bytes_per_param`` like the rest)."""
        total, boundary = 0.0, 0.0
        for params, linear, ranks, stride, used in groups:
            payload = bytes_per_param * params
            if linear_bytes is not None:
                payload = bytes_per_param * (params - linear) + linear_bytes * linear
            buckets = _buckets(payload, calibration.framework.bucket_bytes, layers)
            per_bucket = collective(op, ranks, stride, payload / buckets)
            runs = (np.asarray(ranks) > 1) & used
            total = total + np.where(runs, buckets * per_bucket, 0.0)
            boundary = np.maximum(boundary, np.where(runs, per_bucket, 0.0))
        return total, boundary

    stage = plan.zero_stage
    # ZeRO-3 under a framework that keeps a pipeline stage whole through the step (FSDP2 as torchtitan runs it): with
    # p > 1 the stage's parameters are gathered once and its gradients reduce-scattered once per step.
    once = (np.asarray(p) > 1) if stage == 3 and not calibration.framework.reshard_with_pipeline else False
    reduce_op = "all_reduce" if stage == 0 else "reduce_scatter"
    reduce_s, reduce_bucket = stream(reduce_op, 4.0 if buffer_b else grad_b)
    prefetch = 1.0 if calibration.framework.prefetches_gathers(stage) else 0.0
    overlap_reduce = 1.0 if calibration.framework.hides_grad_reduce(stage) else 0.0
    fwd_window, bwd_window = forward + 0.0 * m, backward + 0.0 * m
    reduce_window = overlap_reduce * bwd_window
    if stage >= 2:
        every = bucketed_exposure(reduce_s, reduce_bucket, reduce_window, m)
        exposed_data = np.where(once, bucketed_exposure(reduce_s, reduce_bucket, reduce_window), every)
        reduce_total = np.where(once, reduce_s, m * reduce_s)
    else:
        exposed_data = bucketed_exposure(reduce_s, reduce_bucket, reduce_window)
        reduce_total = reduce_s
    gather_s, gather_bucket = stream("all_gather", param_b, None if fp8 is None else fp8.gather_bytes)
    gather_total = 0.0
    if stage in (1, 2):
        exposed_data = exposed_data + bucketed_exposure(gather_s, gather_bucket, prefetch * fwd_window)
        gather_total = gather_s
    elif stage == 3:
        every = bucketed_exposure(gather_s, gather_bucket, prefetch * fwd_window, m)
        every = every + bucketed_exposure(gather_s, 0.0, prefetch * bwd_window, m)
        single = bucketed_exposure(gather_s, gather_bucket, prefetch * fwd_window)
        exposed_data = exposed_data + np.where(once, single, every)
        gather_total = np.where(once, gather_s, 2 * m * gather_s)
    hidden_data = np.maximum(reduce_total + gather_total - exposed_data, 0.0)
    slowdown = calibration.overlap_slowdown * hidden_data
    exposed = {
        "tensor": _check.as_result(m * tp_mb),
        "pipeline": _check.as_result(m * pp_mb),
        "data": _check.as_result(exposed_data + slowdown),
    }
    overlapped = {
        "tensor": _check.as_result(m * tp_hidden_mb),
        "pipeline": _check.as_result(m * (pp_all_mb - pp_mb)),
        "data": _check.as_result(hidden_data),
    }
    if np.any(np.asarray(c) > 1):
        exposed["context"] = _check.as_result(m * context_mb)
        overlapped["context"] = _check.as_result(m * context_hidden_mb)
    if split_experts:
        exposed["expert"], overlapped["expert"] = _check.as_result(m * expert_mb), 0.0
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
