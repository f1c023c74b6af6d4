"""Memory: the bytes one device holds for a plan. Model states under ZeRO (Rajbhandari et al. 2020), the activations
each layer stores for the backward, term by term (Korthikanti et al. 2022), the micro-batches a pipeline stage holds,
and their sum per device (``memory_breakdown``: by default calibrated, ``calibrated_memory_breakdown``;
``calibration=None``, the ideal model of lessons 03 and 04); ``memory_budget_report`` sets the sum under every ZeRO
stage, the ideal model's or a framework's, against a device's capacity (``MemoryBudgetReport``, lab 3's one call).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _check
from ..compute import RECOMPUTE_OPTIONS
from ..hardware import Accelerator
from ..pipeline import SIMULATED_SCHEDULES, ZERO_BUBBLE_SCHEDULES, ZERO_BUBBLE_WARMUP, check_schedule
from .calibration import Calibration, resolve_calibration
from .fp8 import fp8_linear_weights_per_layer
from .frameworks import PRECISION_RECIPES, Framework, resolve_framework
from .models import TransformerModel
from .plan import (
    ATTENTION_OPTIONS,
    ZERO_STAGES,
    ParallelPlan,
    capacity_padding,
    check_plan_for_model,
    check_tensor_split,
    kv_heads_per_tensor_rank,
    stage_layers,
)

__all__ = [
    "MemoryBreakdown",
    "PARAM_BYTES",
    "GRAD_BYTES",
    "ACTIVATION_BYTES",
    "ADAM_OPTIMIZER_BYTES_PER_PARAM",
    "zero_model_state_breakdown",
    "zero_model_state_bytes",
    "StoredActivation",
    "STORED_ACTIVATIONS",
    "stored_activation_bytes",
    "activation_bytes_per_layer",
    "activation_bytes_per_token_per_layer",
    "expert_activation_bytes_per_token",
    "weight_gradient_bytes_per_token_per_layer",
    "context_kv_bytes",
    "context_gather_bytes",
    "pipeline_in_flight_microbatches",
    "zero_bubble_stage_in_flight",
    "memory_breakdown",
    "calibrated_memory_breakdown",
    "MemoryBudgetReport",
    "memory_budget_report",
]

# Mixed-precision Adam (ZeRO §3.1): fp16/bf16 parameters 2Ψ and gradients 2Ψ; fp32 master parameters, momentum
# and variance 4Ψ + 4Ψ + 4Ψ = KΨ with K = 12. In total 16 bytes per parameter.
PARAM_BYTES = 2
GRAD_BYTES = 2
ACTIVATION_BYTES = 2  # activations stored and exchanged between devices are 16-bit
ADAM_OPTIMIZER_BYTES_PER_PARAM = 12


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per device by component (for the first pipeline stage, which holds the most activations; with a
    ``Calibration``, for the heaviest stage). ``logits`` (the output layer's logits and their loss buffers) and
    ``framework`` (CUDA context, allocator) are counted only with a ``Calibration``; otherwise 0."""

    parameters: _check.FloatOrArray
    gradients: _check.FloatOrArray
    optimizer_state: _check.FloatOrArray
    activations: _check.FloatOrArray
    logits: _check.FloatOrArray = 0.0
    framework: _check.FloatOrArray = 0.0

    @property
    def model_states(self):
        """Parameters + gradients + optimizer state (what ZeRO partitions)."""
        return self.parameters + self.gradients + self.optimizer_state

    @property
    def total(self):
        """Everything counted here (without a ``Calibration``, temporary buffers and fragmentation are not)."""
        return self.model_states + self.activations + self.logits + self.framework


def zero_model_state_breakdown(params, data_parallel, stage, optimizer_bytes_per_param=ADAM_OPTIMIZER_BYTES_PER_PARAM):
    """Per-device (parameters, gradients, optimizer state) bytes under ZeRO stage 0–3 (ZeRO §5).

    Stage 0 is plain data parallelism: everything replicated, (2 + 2 + K)Ψ. Stage 1 (P_os) partitions the
    optimizer state, stage 2 (P_os+g) also the gradients, stage 3 (P_os+g+p) also the parameters, each over the
    N_d data-parallel ranks.

    >>> [round(x / 1e9, 2) for x in zero_model_state_breakdown(7.5e9, 64, stage=2)]
    [15.0, 0.23, 1.41]
    """
    psi = _check.positive("params", params)
    n_d = _check.count("data_parallel", data_parallel)
    _check.choice("stage", stage, ZERO_STAGES)
    k = _check.nonnegative("optimizer_bytes_per_param", optimizer_bytes_per_param)
    parameters = PARAM_BYTES * psi / (n_d if stage >= 3 else 1)
    gradients = GRAD_BYTES * psi / (n_d if stage >= 2 else 1)
    optimizer = k * psi / (n_d if stage >= 1 else 1)
    return tuple(_check.as_result(x) for x in (parameters, gradients, optimizer))


def zero_model_state_bytes(params, data_parallel, stage, optimizer_bytes_per_param=ADAM_OPTIMIZER_BYTES_PER_PARAM):
    """Per-device model-state bytes: 16Ψ, 4Ψ + KΨ/N_d, 2Ψ + (2+K)Ψ/N_d, (4+K)Ψ/N_d for stages 0–3 (ZeRO §5).

    >>> from course_lib.units import format_bytes
    >>> format_bytes(zero_model_state_bytes(1e12, 1024, stage=3))   # ZeRO Table 1: 15.6 GB
    '15.6 GB'
    """
    return _check.as_result(sum(zero_model_state_breakdown(params, data_parallel, stage, optimizer_bytes_per_param)))


@dataclass(frozen=True)
class StoredActivation:
    """One tensor a GPT layer stores for its backward pass (Korthikanti et al. 2022 §4.1): its bytes are
    ``sbh_bytes`` · s·b·h + ``as2b_bytes`` · a·s²·b (16-bit values, 1-byte dropout masks). ``split_by_tensor`` says
    whether tensor parallelism already splits it over t (it lies between a column- and a row-parallel GEMM);
    the others (LayerNorm and dropout, the GEMMs' inputs) are split only by sequence parallelism."""

    block: str
    tensor: str
    sbh_bytes: float
    as2b_bytes: float
    split_by_tensor: bool


# Korthikanti et al. 2022 §4.1, term by term: attention 11sbh + 5as²b, MLP 19sbh, the two LayerNorms 4sbh.
STORED_ACTIVATIONS = (
    StoredActivation("attention", "input of the Q, K, V projections", 2, 0, False),
    StoredActivation("attention", "Q and K (for QKᵀ)", 4, 0, True),
    StoredActivation("attention", "softmax output", 0, 2, True),
    StoredActivation("attention", "softmax dropout mask", 0, 1, True),
    StoredActivation("attention", "softmax dropout output (for × V)", 0, 2, True),
    StoredActivation("attention", "V (for × V)", 2, 0, True),
    StoredActivation("attention", "input of the output projection", 2, 0, True),
    StoredActivation("attention", "attention dropout mask", 1, 0, False),
    StoredActivation("MLP", "input of the first linear layer", 2, 0, False),
    StoredActivation("MLP", "GeLU input (4h wide)", 8, 0, True),
    StoredActivation("MLP", "input of the second linear layer (4h wide)", 8, 0, True),
    StoredActivation("MLP", "MLP dropout mask", 1, 0, False),
    StoredActivation("LayerNorm", "inputs of the two LayerNorms", 4, 0, False),
)
_LINEAR_SBH = sum(x.sbh_bytes for x in STORED_ACTIVATIONS)  # 34
_REPLICATED_SBH = sum(x.sbh_bytes for x in STORED_ACTIVATIONS if not x.split_by_tensor)  # 10
_SCORES_AS2B = sum(x.as2b_bytes for x in STORED_ACTIVATIONS)  # 5


def stored_activation_bytes(seq_len, micro_batch, hidden, heads, tensor_parallel=1, sequence_parallel=False):
    """Bytes per device of each tensor of ``STORED_ACTIVATIONS`` (no recomputation), in that order.

    Their sum is ``activation_bytes_per_layer``: sbh(34 + 5as/h) at t = 1 (Korthikanti et al. 2022 Eq. (1)).

    >>> from course_lib.units import format_bytes
    >>> rows = stored_activation_bytes(2048, 1, 12288, 96, tensor_parallel=8)
    >>> format_bytes(sum(rows)), format_bytes(rows[-1])   # the LayerNorm inputs stay whole without SP
    ('579 MB', '101 MB')
    """
    s = _check.count("seq_len", seq_len)
    b = _check.count("micro_batch", micro_batch)
    h = _check.count("hidden", hidden)
    a = _check.count("heads", heads)
    t = _check.count("tensor_parallel", tensor_parallel)
    sp = _check.flag("sequence_parallel", sequence_parallel)
    check_tensor_split(a, t)
    return tuple(
        _check.as_result(
            (x.sbh_bytes * s * b * h + x.as2b_bytes * a * s * s * b) / (t if x.split_by_tensor or sp else 1)
        )
        for x in STORED_ACTIVATIONS
    )


def activation_bytes_per_layer(
    seq_len,
    micro_batch,
    hidden,
    heads,
    tensor_parallel: _check.IntOrArray = 1,
    sequence_parallel=False,
    recompute="none",
):
    """Activation bytes one transformer layer stores for the backward pass (Korthikanti et al. 2022, Table 2).

    With s = seq_len, b = micro_batch, h = hidden, a = heads, t = tensor_parallel (16-bit activations, 1-byte
    dropout masks, LayerNorm statistics and biases ignored):

    ==========================  =========================  =========================
    recompute                   sequence_parallel=False    sequence_parallel=True
    ==========================  =========================  =========================
    "none"                      sbh(10 + 24/t + 5as/(ht))  sbh(34/t + 5as/(ht))
    "selective"                 sbh(10 + 24/t)             sbh(34/t)
    "full"                      2sbh                       2sbh
    ==========================  =========================  =========================

    With t = 1 and no recomputation this is Eq. (1), sbh(34 + 5as/h): the sum of ``STORED_ACTIVATIONS``. Full
    recomputation keeps only each layer's input (2sbh, as the paper's Table 2 lists it; with sequence parallelism
    Megatron-LM can shard it further).

    >>> from course_lib.units import format_bytes, format_percent
    >>> format_bytes(activation_bytes_per_layer(2048, 1, 12288, 96))   # GPT-3: 5as/h = 80 vs 34
    '2.87 GB'
    >>> format_percent(1 - activation_bytes_per_layer(2048, 1, 12288, 96, recompute="selective")
    ...                / activation_bytes_per_layer(2048, 1, 12288, 96))   # "saves 70%"
    '70.2 %'
    """
    s = _check.count("seq_len", seq_len)
    b = _check.count("micro_batch", micro_batch)
    h = _check.count("hidden", hidden)
    a = _check.count("heads", heads)
    t = _check.count("tensor_parallel", tensor_parallel)
    sp = _check.flag("sequence_parallel", sequence_parallel)
    _check.choice("recompute", recompute, RECOMPUTE_OPTIONS)
    check_tensor_split(a, t)
    sbh = 1.0 * s * b * h
    # STORED_ACTIVATIONS summed: softmax output, its dropout mask and dropout output, 5as²b / t; without SP the 10sbh
    # of LayerNorm, dropout and the GEMMs' inputs are not split, the other 24sbh are.
    attention_scores = _SCORES_AS2B * a * s / (h * t)
    replicated = _LINEAR_SBH / t if sp else _REPLICATED_SBH + (_LINEAR_SBH - _REPLICATED_SBH) / t
    per_layer = {
        "none": sbh * (replicated + attention_scores),
        "selective": sbh * replicated,
        "full": 2.0 * sbh + 0.0 * t,
    }[recompute]
    return _check.as_result(per_layer)


def pipeline_in_flight_microbatches(stages, microbatches, schedule="1f1b", virtual_stages: _check.IntOrArray = 1):
    """Micro-batches whose activations the first pipeline stage holds at its peak.

    GPipe runs all m forwards first, so it holds m. 1F1B holds min(p, m) (Narayanan et al. 2021 §2.2.1). The
    interleaved schedule holds p·(1 + (p−1)/(p·v)) worth of full-stage micro-batches (Korthikanti et al. 2022 §4.2.3),
    or m when m is too small for the warm-up to finish (m = p). ZB-H1 holds p and ZB-H2 2p − 1, none of them
    waiting for its W at the peak (Qi et al. 2024 Table 2: pM_B and (2p − 1)M_B; ``zero_bubble_stage_in_flight``);
    ``pipeline.pipeline_schedule`` simulates all five.

    >>> pipeline_in_flight_microbatches(8, 64), pipeline_in_flight_microbatches(8, 64, "gpipe")
    (8, 64)
    >>> pipeline_in_flight_microbatches(8, 64, "zb-h1"), pipeline_in_flight_microbatches(8, 64, "zb-h2")
    (8, 15)
    """
    p = _check.count("stages", stages)
    m = _check.count("microbatches", microbatches)
    _check.choice("schedule", schedule, SIMULATED_SCHEDULES)
    v = _check.count("virtual_stages", virtual_stages)
    if schedule == "gpipe":
        return m
    if schedule == "interleaved":
        # Megatron-LM's warm-up on stage 0 runs 2(p−1) + (v−1)p chunk-forwards, then one more before the first
        # backward: p + (p−1)/v full-stage micro-batches; with m = p every forward fits in the warm-up, so m.
        return _check.as_result(np.minimum(m, p + (p - 1) / v))
    if schedule in ZERO_BUBBLE_SCHEDULES:
        check_schedule(p, m, schedule, v)
        held = zero_bubble_stage_in_flight(p, schedule, stage=0)  # whole micro-batches: none waits for its W
        return held if np.ndim(held) else int(held)
    in_flight = np.minimum(p, m)
    return in_flight if np.ndim(in_flight) else int(in_flight)


def zero_bubble_stage_in_flight(stages, schedule="zb-h1", stage: _check.IntOrArray = 0, weight_pending_share=1.0):
    """Peak activations stage s of ZB-H1 or ZB-H2 holds, in micro-batches (units of M_B, one micro-batch's whole stage
    activations): (p − s)M_B + s·M_W for ZB-H1 and (2p − 2s − 1)M_B + 2s·M_W for ZB-H2 (Qi et al. 2024 §2.3, worker
    i = s + 1), where ``weight_pending_share`` = M_W/M_B is what a micro-batch keeps between its B and its W.

    Each stage keeps k(p − 1) + 1 micro-batches in flight (k = 1 for ZB-H1, 2 for ZB-H2), k·s of them waiting for
    their W at the peak; stage 0 holds the most, (k(p − 1) + 1)·M_B. Their Table 1 gives M_B = sb(34h + 5as) and
    M_W = 32sbh per layer. Holds once m reaches ``pipeline.zero_bubble_min_microbatches``.

    >>> zero_bubble_stage_in_flight(4, "zb-h1", stage=3), zero_bubble_stage_in_flight(4, "zb-h1", 3, 0.5)
    (4.0, 2.5)
    >>> zero_bubble_stage_in_flight(4, "zb-h2", stage=0), zero_bubble_stage_in_flight(4, "zb-h2", 3, 0.5)
    (7.0, 4.0)
    """
    p = _check.count("stages", stages)
    k = ZERO_BUBBLE_WARMUP[_check.choice("schedule", schedule, ZERO_BUBBLE_SCHEDULES)]
    s = _check.count("stage", stage, minimum=0)
    if np.any(np.asarray(s) >= np.asarray(p)):
        raise ValueError(f"stage must be in 0..p − 1 = {np.asarray(p) - 1}, got {stage!r}")
    share = _check.fraction("weight_pending_share", weight_pending_share, allow_zero=True)
    full, waiting_for_w = k * (p - 1 - s) + 1, k * s
    return _check.as_result(full + share * waiting_for_w)


def activation_bytes_per_token_per_layer(
    model: TransformerModel,
    tensor_parallel: _check.IntOrArray = 1,
    sequence_parallel=False,
    recompute="none",
    attention="standard",
    capacity_factor=None,
    fp8_activations=False,
):
    """Bytes one layer stores for the backward, per token of the micro-batch, term by term (16-bit activations).

    Korthikanti et al. 2022 §4's counting, generalised to the architecture (h hidden, f MLP, k = kv_heads·head_dim,
    a heads, s sequence):
    - the residual side: the two norms' inputs 2h + 2h, the attention and MLP inputs 2h + 2h, and (GPT) the two
      dropout masks h + h (1 byte each): split over t only with sequence parallelism;
    - attention: Q 2h, K and V 2k + 2k, the output (input of the output projection) 2h; standard attention adds the
      softmax 2as (GPT: + its dropout mask as + dropout output 2as = 5as); FlashAttention stores no scores, only an
      fp32 log-sum-exp per head, 4a; selective recomputation drops the scores;
    - MLP: the activation's input and output 2f + 2f; a gated MLP also the up projection and the product, 8f in all;
      a mixture of experts, the mean over the layers of its experts' (``expert_activation_bytes_per_token``, with
      ``capacity_factor``).
    Full recomputation keeps only the layer's input, 2h. For GPT with f = 4h this is Korthikanti's 34h + 5as
    (Eq. (1) per token); with t and sequence parallelism, everything divided by t.
    ``fp8_activations`` (an FP8 recipe's, ``parallelism.fp8``): the inputs of the dense linear layers (attention
    and MLP inputs, the output projection's input, the down projection's input) are saved in 1 byte: h + h + h + f
    fewer (the experts' own inputs are not changed here).

    >>> from course_lib.parallelism import GPT3_175B, PLAYBOOK_1B
    >>> activation_bytes_per_token_per_layer(GPT3_175B) * 2048 == activation_bytes_per_layer(2048, 1, 12288, 96)
    True
    >>> activation_bytes_per_token_per_layer(PLAYBOOK_1B, attention="flash")   # 12h + 4k + 8f + 4a
    98432.0
    >>> activation_bytes_per_token_per_layer(PLAYBOOK_1B, attention="flash", fp8_activations=True)   # − 3h − f
    84096.0
    """
    t = _check.count("tensor_parallel", tensor_parallel)
    sp = _check.flag("sequence_parallel", sequence_parallel)
    fp8 = _check.flag("fp8_activations", fp8_activations)
    _check.choice("recompute", recompute, RECOMPUTE_OPTIONS)
    _check.choice("attention", attention, ATTENTION_OPTIONS)
    check_tensor_split(model.heads, t)
    assert model.kv_heads is not None and model.ffn_hidden is not None  # TransformerModel resolved the defaults
    h, f, a, s = model.hidden, model.ffn_hidden, model.heads, model.seq_len
    kv_width = model.kv_heads * model.head_dim
    gpt = model.style == "gpt"
    residual = 8.0 * h + (2.0 * h if gpt else 0.0)
    attention_linear = 2.0 * h + 4.0 * kv_width + 2.0 * h
    mlp = (8.0 if model.gated_mlp else 4.0) * f + expert_activation_bytes_per_token(model, capacity_factor)
    if attention == "flash":
        scores = 4.0 * a
    elif recompute == "selective":
        scores = 0.0
    else:
        scores = (5.0 if gpt else 2.0) * a * s
    if fp8:  # 1 byte instead of 2 for the attention and MLP inputs, the output and down projections' inputs
        residual, attention_linear, mlp = residual - 2.0 * h, attention_linear - h, mlp - f
    split = residual / t if sp else residual
    per_token = split + (attention_linear + mlp + scores) / t
    if recompute == "full":
        per_token = 2.0 * h / t if sp else 2.0 * h
    return _check.as_result(per_token + 0.0 * t)


def memory_breakdown(
    model: TransformerModel,
    plan: ParallelPlan,
    optimizer_bytes_per_param=ADAM_OPTIMIZER_BYTES_PER_PARAM,
    calibration: Calibration | str | None = "default",
    framework=None,
) -> MemoryBreakdown:
    """Per-device memory of a plan: by default the documented calibration (``calibration="default"``:
    ``calibrated_memory_breakdown`` under ``REFERENCE_CALIBRATION``'s memory assumptions), with ``calibration=None``
    the ideal model of lessons 03 and 04 below, or under any ``Calibration``.

    The ideal model, the first pipeline stage: model states and stored activations. Model states: the device's Ψ/(t·p)
    parameters (an even split; the embedding's imbalance is ignored) under ZeRO over the d data-parallel ranks.
    Activations: ``activation_bytes_per_layer`` × L/p layers × the micro-batches in flight
    (``pipeline_in_flight_microbatches``). Not counted: temporary buffers, the logits, fragmentation and the framework's
    own memory, so leave headroom.

    >>> from course_lib.parallelism import GPT3_175B, ParallelPlan
    >>> from course_lib.units import format_bytes
    >>> plan_of_3d = ParallelPlan(data_parallel=8, tensor_parallel=8, pipeline_parallel=8, zero_stage=1, micro_batch=1,
    ...                           grad_accum_steps=64, recompute="selective", sequence_parallel=True)
    >>> mem = memory_breakdown(GPT3_175B, plan_of_3d, calibration=None)
    >>> format_bytes(mem.model_states), format_bytes(mem.activations)
    ('15 GB', '10.3 GB')

    The calibrated model (``calibrated_memory_breakdown``) is architecture-aware and counts the framework's precision
    recipe (nanotron's and Megatron's fp32 main gradients, 18 bytes per parameter; DeepSpeed's 16), the logits, the
    framework's memory and uneven splits:

    >>> [format_bytes(memory_breakdown(GPT3_175B, plan_of_3d, framework=name).model_states)
    ...  for name in ("nanotron", "megatron", "deepspeed")]
    ['21 GB', '21 GB', '15.4 GB']
    """
    calibration = resolve_calibration(calibration, framework=framework)
    if calibration is not None:
        return calibrated_memory_breakdown(model, plan, calibration)
    check_plan_for_model(model, plan)
    return _ideal_memory_breakdown(model, plan, optimizer_bytes_per_param)


def _ideal_memory_breakdown(
    model: TransformerModel, plan: ParallelPlan, optimizer_bytes_per_param=ADAM_OPTIMIZER_BYTES_PER_PARAM
) -> MemoryBreakdown:
    """``memory_breakdown``'s ideal model, for a plan the caller has already checked against the model
    (``check_plan_for_model``): ``budget.partition_report`` checks it once, in its step time."""
    dense, experts = _dense_and_expert_params(model, plan)
    model_parallel = plan.tensor_parallel * plan.pipeline_parallel
    zero_group, expert_zero_group = _zero_groups(plan)
    parameters, gradients, optimizer = zero_model_state_breakdown(
        dense / model_parallel, zero_group, plan.zero_stage, optimizer_bytes_per_param
    )
    if model.experts > 1:  # the routed experts: e ranks share them, ZeRO shards them over the d·c/e that hold them
        expert_states = zero_model_state_breakdown(
            experts / model_parallel, expert_zero_group, plan.zero_stage, optimizer_bytes_per_param
        )
        parameters, gradients, optimizer = (
            x + y for x, y in zip((parameters, gradients, optimizer), expert_states, strict=True)
        )
    per_layer = activation_bytes_per_layer(
        model.seq_len,
        plan.micro_batch,
        model.hidden,
        model.heads,
        plan.tensor_parallel,
        plan.sequence_parallel,
        plan.recompute,
    )
    in_flight = pipeline_in_flight_microbatches(
        plan.pipeline_parallel, plan.grad_accum_steps, plan.schedule, plan.virtual_stages
    )
    if model.experts > 1 and plan.recompute != "full":
        tokens = 1.0 * plan.micro_batch * model.seq_len
        per_layer = per_layer + tokens * expert_activation_bytes_per_token(model, plan.capacity_factor) / (
            plan.tensor_parallel
        )
    # Context parallelism: each of the c ranks stores its s/c tokens (their scores against all s keys included), and
    # under the all-gather form one layer's gathered K/V and their gradients at a time.
    activations = per_layer / plan.context_parallel * (model.layers / plan.pipeline_parallel) * in_flight
    activations = activations + context_gather_bytes(model, plan)
    return MemoryBreakdown(parameters, gradients, optimizer, _check.as_result(activations))


def _dense_and_expert_params(model: TransformerModel, plan: ParallelPlan):
    """(parameters every rank of an expert group holds, the routed experts' parameters / e): the model's, before the
    tensor and pipeline split."""
    experts = model.routed_expert_params
    return model.params - experts, experts / plan.expert_parallel


def _zero_groups(plan: ParallelPlan):
    """(d·c, d·c/e): the ranks that hold the same dense weights and the same experts, over which ZeRO shards their
    states and gradients are reduced (Megatron-Core: the data-and-context group, the expert data-parallel group)."""
    data = plan.data_parallel * plan.context_parallel
    return data, data // plan.expert_parallel


def expert_activation_bytes_per_token(model: TransformerModel, capacity_factor=None):
    """Activation bytes per token a mixture of experts stores beyond one dense MLP of ``ffn_hidden``, the mean over
    the l layers (0 for a dense model). A MoE layer stores, per token, the MLP activations of the k routed experts
    it visits, times the capacity factor c_f when one is set (their buffers are padded to capacity; 1 when dropless,
    ``capacity_factor`` None: ``plan.capacity_padding``), and of the shared experts
    (8f_e each when gated, else 4f_e, as ``activation_bytes_per_token_per_layer`` counts an MLP), plus the k·c_f
    copies of the token (2h each) the dispatch hands the experts; a dense layer stores one MLP of f.
    Whichever device runs an expert stores them: with expert parallelism the e ranks of a group exchange tokens,
    so each still holds tokens × k × c_f expert inputs on average.

    >>> from course_lib.parallelism import LLAMA3_8B, MIXTRAL_8X7B
    >>> expert_activation_bytes_per_token(MIXTRAL_8X7B)   # (2 − 1) · 8 · 14336 + 2 · 2 · 4096
    131072.0
    >>> expert_activation_bytes_per_token(LLAMA3_8B)
    0.0
    """
    factor = capacity_padding(capacity_factor)
    if model.experts == 1:
        return 0.0
    assert model.moe_ffn_hidden is not None and model.ffn_hidden is not None
    per_unit = 8.0 if model.gated_mlp else 4.0
    routed = model.experts_per_token * factor
    moe = (routed + model.shared_experts) * per_unit * model.moe_ffn_hidden + 2.0 * model.hidden * routed
    return model.moe_layers * (moe - per_unit * model.ffn_hidden) / model.layers


def weight_gradient_bytes_per_token_per_layer(
    model: TransformerModel,
    tensor_parallel: _check.IntOrArray = 1,
    sequence_parallel=False,
    capacity_factor=None,
    fp8_activations=False,
):
    """Bytes per token one layer keeps between a micro-batch's B and its W (the zero-bubble schedules' M_W): what the
    linear layers' weight-gradient GEMMs read, each linear layer's input and the gradient of its output, 2 bytes a
    value; B frees the rest (the attention core's and the activation function's tensors).

    Values per token: the inputs of W_Q, W_K, W_V (h), of W_O (h), of the MLP's first matrices (h) and of its last
    (f); the gradients of their outputs, h + 2k (k = kv_heads·head_dim), h, f (2f gated) and h. A MoE layer has
    these for each of the k routed experts a token visits (times the capacity padding, ``plan.capacity_padding``) and
    each shared expert, of size f_e. For GPT (f = 4h, k = h) it is 7h + 9h values, 32h bytes: Qi et al. 2024 Table 1's
    M_W = 32sbh. As ``activation_bytes_per_token_per_layer`` counts them: the inputs of W_Q/W_K/W_V and of the MLP and
    the gradients of W_O's and the MLP's outputs (h wide) are split over t only with sequence parallelism, the rest
    always; with ``fp8_activations`` the dense layers' saved inputs take 1 byte.

    >>> from course_lib.parallelism import GPT3_175B, MIXTRAL_8X7B
    >>> weight_gradient_bytes_per_token_per_layer(GPT3_175B) / GPT3_175B.hidden   # Qi et al.'s 32sbh
    32.0
    >>> weight_gradient_bytes_per_token_per_layer(MIXTRAL_8X7B) / MIXTRAL_8X7B.hidden   # 2 experts of f = 3.5h
    59.0
    """
    t = _check.count("tensor_parallel", tensor_parallel)
    sp = _check.flag("sequence_parallel", sequence_parallel)
    fp8 = _check.flag("fp8_activations", fp8_activations)
    check_tensor_split(model.heads, t)
    assert model.kv_heads is not None and model.ffn_hidden is not None and model.moe_ffn_hidden is not None
    h, kv_width = model.hidden, model.kv_heads * model.head_dim
    gate = 2.0 if model.gated_mlp else 1.0
    input_bytes = 1.0 if fp8 else 2.0

    def mlp(ffn, copies, inputs_bytes):
        """(residual-side, split) bytes of ``copies`` MLPs of hidden size ``ffn``."""
        return copies * (inputs_bytes * h + 2.0 * h), copies * (inputs_bytes * ffn + 2.0 * gate * ffn)

    dense_residual, dense_split = mlp(model.ffn_hidden, 1.0, input_bytes)
    routed = model.experts_per_token * capacity_padding(capacity_factor) + model.shared_experts
    moe_residual, moe_split = mlp(model.moe_ffn_hidden, routed, 2.0)
    share = model.moe_layers / model.layers
    residual = input_bytes * h + 2.0 * h + (1 - share) * dense_residual + share * moe_residual
    split = input_bytes * h + 2.0 * (h + 2 * kv_width) + (1 - share) * dense_split + share * moe_split
    return _check.as_result((residual / t if sp else residual) + split / t)


def context_kv_bytes(model: TransformerModel, tokens, tensor_parallel: _check.IntOrArray = 1):
    """Bytes of one of K or V that a context-parallel rank holding ``tokens`` tokens computes, on one of t tensor-
    parallel ranks: tokens × (the key/value heads the rank holds, ``plan.kv_heads_per_tensor_rank``) × head size ×
    2 B.

    >>> from course_lib.parallelism import LLAMA3_8B
    >>> context_kv_bytes(LLAMA3_8B, 32768, 4) / 1e6   # 32768 tokens × 2 heads × 128 × 2 B
    16.777216
    """
    _check.nonnegative("tokens", tokens)
    return ACTIVATION_BYTES * tokens * kv_heads_per_tensor_rank(model, tensor_parallel) * model.head_dim


def context_gather_bytes(model: TransformerModel, plan: ParallelPlan):
    """Bytes a device holds for one layer at a time under context parallelism's all-gather form
    (``context_parallel_kind="all_gather"``, c > 1; 0 otherwise): in the backward, the whole sequence's K and V
    gathered again and their full-length gradients before the reduce-scatter, 4 · c · ``context_kv_bytes``
    (NVIDIA/TransformerEngine@v2.18 transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py:
    3786-3787 gather k_ag, v_ag; 4120-4121 reduce-scatter dk, dv: the forward saves only the rank's own K and V,
    line 3611, so this is a transient of one layer, not of every layer).

    >>> from course_lib.parallelism import LLAMA3_8B, ParallelPlan
    >>> from dataclasses import replace
    >>> plan = ParallelPlan(tensor_parallel=4, context_parallel=4, context_parallel_kind="all_gather")
    >>> context_gather_bytes(replace(LLAMA3_8B, seq_len=131072), plan) / 1e6   # 4 · 4 · 16.8 MB
    268.435456
    """
    c = plan.context_parallel
    if plan.context_parallel_kind != "all_gather":
        return 0.0 * c
    tokens = 1.0 * plan.micro_batch * model.seq_len / c
    gathered = 4.0 * c * context_kv_bytes(model, tokens, plan.tensor_parallel)
    return _check.as_result(np.where(np.asarray(c) > 1, gathered, 0.0))


def calibrated_memory_breakdown(
    model: TransformerModel, plan: ParallelPlan, calibration: Calibration
) -> MemoryBreakdown:
    """Per-device memory of the heaviest pipeline stage under ``calibration``'s assumptions.

    Two stages can be the heaviest: the first holds ⌈l/p⌉ layers, the input embedding V·h/t and min(p, m)
    micro-batches of activations (1F1B; ``pipeline_in_flight_microbatches``); the last holds ⌈l/p⌉ layers, the
    output layer V·h/t (a copy when tied and p > 1) and one micro-batch (ZB-H1 and ZB-H2: also the k(p − 1) whose W
    is still to run, each holding only what W reads, ``weight_gradient_bytes_per_token_per_layer``: Qi et al. 2024
    §2.3's M_W; ``zero_bubble_stage_in_flight``), plus the logits
    b·s·V/t × ``logits_bytes_per_element``. With p = 1 they are the same device. Model states follow the framework's
    ``precision``: ZeRO-1 shards the optimizer state over d, ZeRO-2 also the gradients and their fp32 buffer, ZeRO-3
    also the parameters. Activations per layer:
    ``activation_bytes_per_token_per_layer`` × b·s, and under the all-gather form of context parallelism one layer's
    gathered K and V with their gradients (``context_gather_bytes``). ``framework_bytes`` is added once. A framework
    with an FP8 recipe (``Framework.fp8``) adds its ``weight_copy_bytes`` per linear-layer weight (not the router's:
    ``fp8_linear_weights_per_layer``) to the parameters (sharded as they are) and saves the linear layers' inputs in
    FP8 when the recipe does (``fp8_activations``).

    >>> from course_lib.parallelism import PLAYBOOK_1B, Calibration, ParallelPlan
    >>> from course_lib.units import format_bytes
    >>> plan = ParallelPlan(data_parallel=8, micro_batch=1, grad_accum_steps=32, attention="flash")
    >>> mem = memory_breakdown(PLAYBOOK_1B, plan, calibration=Calibration())
    >>> format_bytes(mem.model_states), format_bytes(mem.activations), format_bytes(mem.logits)
    ('26.8 GB', '6.45 GB', '5.37 GB')
    """
    check_plan_for_model(model, plan, calibration)
    t, p, _, b, m, _ = plan.sizes  # ZeRO's groups: d·c and d·c/e (``_zero_groups``)
    h, vocab = model.hidden, model.vocab
    layers = stage_layers(model.layers, p)
    embedding = 1.0 * vocab * h
    single = np.asarray(p) == 1
    # p = 1: every layer, the embedding, the output layer when untied and the final norm on one device.
    first_params = layers * model.params_per_layer + embedding + np.where(single, model.embedding_params - embedding, 0)
    last_params = layers * model.params_per_layer + embedding + h
    # The routed experts (the mean per layer): a device holds 1/e of them, sharded by ZeRO over the d·c/e that share
    # them; the rest over all d·c data- and context-parallel ranks.
    experts = layers * (model.routed_expert_params / model.layers)
    experts_here = experts / plan.expert_parallel
    first_params, last_params = first_params - experts, last_params - experts
    zero_group, expert_zero_group = _zero_groups(plan)
    param_b, grad_b, buffer_b, optimizer_b = PRECISION_RECIPES[calibration.framework.precision]
    fp8 = calibration.framework.fp8
    copy_b = 0.0 if fp8 is None else fp8.weight_copy_bytes  # FP8 weight copies per linear-layer weight
    dense_linear = layers * fp8_linear_weights_per_layer(model) - experts  # the weights FP8 caches a copy of
    stage = plan.zero_stage

    # ZeRO-3 under a framework that keeps a pipeline stage whole through the step (FSDP2 as torchtitan runs it): with
    # p > 1 the stage also holds its 16-bit parameters and its fp32 accumulated gradients unsharded.
    whole = np.where((np.asarray(p) > 1) & (stage == 3) & (not calibration.framework.reshard_with_pipeline), 1.0, 0.0)

    def shard(params, linear, group):
        per_device = params / t
        parameters = param_b * per_device / (group if stage >= 3 else 1) + whole * param_b * per_device
        if copy_b:
            parameters = parameters + copy_b * linear / t * (1 / (group if stage >= 3 else 1) + whole)
        gradients = (grad_b + buffer_b) * per_device / (group if stage >= 2 else 1) + whole * 4.0 * per_device
        optimizer = optimizer_b * per_device / (group if stage >= 1 else 1)
        return parameters, gradients, optimizer

    def states(params):
        dense, routed = shard(params, dense_linear, zero_group), shard(experts_here, experts_here, expert_zero_group)
        return tuple(x + y for x, y in zip(dense, routed, strict=True))

    tokens = 1.0 * b * model.seq_len / plan.context_parallel  # a context-parallel rank's s/c tokens
    per_layer = tokens * activation_bytes_per_token_per_layer(
        model,
        t,
        plan.sequence_parallel,
        plan.recompute,
        plan.attention,
        plan.capacity_factor,
        fp8_activations=fp8 is not None and fp8.fp8_activations,
    )
    in_flight = pipeline_in_flight_microbatches(p, m, plan.schedule, plan.virtual_stages)
    logits = tokens * vocab / t * calibration.framework.logits_bytes_per_element
    gathered = context_gather_bytes(model, plan)  # one layer's gathered K/V and their gradients (all-gather form)
    first = states(first_params) + (per_layer * layers * in_flight + gathered, np.where(single, logits, 0.0))
    last_activations = per_layer * layers + gathered
    if plan.schedule in ZERO_BUBBLE_SCHEDULES:  # and the k(p − 1) micro-batches waiting for their W, W's inputs only
        waiting = zero_bubble_stage_in_flight(p, plan.schedule, p - 1) - zero_bubble_stage_in_flight(
            p, plan.schedule, p - 1, weight_pending_share=0.0
        )
        pending = tokens * weight_gradient_bytes_per_token_per_layer(
            model, t, plan.sequence_parallel, plan.capacity_factor, fp8 is not None and fp8.fp8_activations
        )
        last_activations = last_activations + waiting * pending * layers
    last = states(last_params) + (last_activations, logits)
    first_total, last_total = sum(first), sum(last)
    heaviest = [np.where(first_total >= last_total, a, z) for a, z in zip(first, last, strict=True)]
    framework = calibration.framework_bytes + 0.0 * first_total
    return MemoryBreakdown(*(_check.as_result(x) for x in (*heaviest, framework)))


_TYPES = {
    "model": (TransformerModel, "a parallelism.TransformerModel"),
    "plan": (ParallelPlan, "a parallelism.ParallelPlan"),
    "accelerator": (Accelerator, "a hardware.Accelerator"),
}


def _check_types(**arguments) -> None:
    for name, value in arguments.items():
        kind, described = _TYPES[name]
        if not isinstance(value, kind):
            raise ValueError(f"{name} must be {described}, got {value!r}")


@dataclass(frozen=True, eq=False)
class MemoryBudgetReport:
    """One plan's memory per device against one accelerator's HBM, with the same plan under every ZeRO stage beside
    it: under the ideal model (``framework`` None: ``memory_breakdown(..., calibration=None)``, the first pipeline
    stage) or as a framework runs it (a ``Framework``: the calibrated model, its heaviest stage).

    ``by_zero_stage`` holds one ``MemoryBreakdown`` per stage of ``ZERO_STAGES`` (the activations do not depend on
    the stage), or None for a stage the framework does not run with this plan (``supported``; ``reason`` says why):
    no number, rather than a wrong one. ``in_flight_microbatches`` is the micro-batches whose activations the first
    stage holds at its peak (``pipeline_in_flight_microbatches``); ``memory`` the breakdown of the plan's own stage
    (None when the framework does not run it: ``runs``); ``memory_margin`` the share of its memory a plan must leave
    spare to count as fitting with a margin (``fits_with_margin``).
    """

    model: TransformerModel
    plan: ParallelPlan
    accelerator: Accelerator
    by_zero_stage: tuple[MemoryBreakdown | None, ...]
    in_flight_microbatches: float
    memory_margin: float = 0.0
    framework: Framework | None = None

    def __post_init__(self):
        _check_types(model=self.model, plan=self.plan, accelerator=self.accelerator)
        if self.framework is not None and not isinstance(self.framework, Framework):
            raise ValueError(
                f"framework must be None (the ideal model) or a parallelism.Framework, got {self.framework!r}"
            )
        if not all(isinstance(size, int) for size in self.plan.sizes):
            raise ValueError(f"plan must hold single sizes, not arrays, got sizes {self.plan.sizes}")
        breakdowns = self.by_zero_stage
        if not (
            isinstance(breakdowns, tuple)
            and len(breakdowns) == len(ZERO_STAGES)
            and all(b is None or (isinstance(b, MemoryBreakdown) and np.ndim(b.total) == 0) for b in breakdowns)
        ):
            raise ValueError(f"by_zero_stage must be a tuple of {len(ZERO_STAGES)} single MemoryBreakdowns (ZeRO 0–3)")
        if tuple(b is not None for b in breakdowns) != self.supported:
            raise ValueError(
                f"by_zero_stage must hold None exactly for the stages the framework does not run, {self.supported}"
            )
        _check.nonnegative("in_flight_microbatches", self.in_flight_microbatches)
        _check.nonnegative("memory_margin", self.memory_margin)

    @property
    def supported(self) -> tuple[bool, ...]:
        """Whether the framework runs the plan under each ZeRO stage (the ideal model: every one)."""
        if self.framework is None:
            return (True,) * len(ZERO_STAGES)
        plan = self.plan
        return tuple(bool(self.framework.runs(stage, plan.pipeline_parallel, plan.schedule)) for stage in ZERO_STAGES)

    @property
    def reason(self) -> str:
        """Why the plan's own stage is not run, else why the first stage not run is not ("" when every one is):
        ``Framework.refusal``."""
        if all(self.supported):
            return ""
        assert self.framework is not None
        stage = self.plan.zero_stage if self.memory is None else ZERO_STAGES[self.supported.index(False)]
        return self.framework.refusal(self.plan.replace(zero_stage=stage))

    @property
    def memory(self) -> MemoryBreakdown | None:
        """The breakdown under the plan's own ZeRO stage (None when the framework does not run it)."""
        return self.by_zero_stage[ZERO_STAGES.index(self.plan.zero_stage)]

    @property
    def runs(self) -> bool:
        """Whether the framework runs the plan under its own ZeRO stage."""
        return self.memory is not None

    @property
    def capacity_bytes(self) -> float:
        """One device's HBM."""
        return float(self.accelerator.hbm_capacity_bytes)

    @property
    def fits(self) -> bool:
        """Whether the plan runs and ``memory.total`` fits in ``capacity_bytes``."""
        return self.memory is not None and bool(float(self.memory.total) <= self.capacity_bytes)

    @property
    def fits_with_margin(self) -> bool:
        """Whether the plan runs and ``memory.total`` × (1 + ``memory_margin``) fits in ``capacity_bytes``."""
        memory = self.memory
        return memory is not None and bool(float(memory.total) * (1 + self.memory_margin) <= self.capacity_bytes)

    @property
    def headroom_bytes(self) -> float | None:
        """HBM left per device (negative: missing; None when the framework does not run the plan)."""
        return None if self.memory is None else self.capacity_bytes - float(self.memory.total)


def memory_budget_report(
    model: TransformerModel, plan: ParallelPlan, accelerator: Accelerator, memory_margin=0.0, framework=None
) -> MemoryBudgetReport:
    """Per-device memory of ``plan`` (single sizes) under every ZeRO stage, against ``accelerator``'s HBM
    (``MemoryBudgetReport``), judged also with ``memory_margin`` to spare: what the memory budget lab shows.

    ``framework`` None: the ideal model (``memory_breakdown(..., calibration=None)``, lessons 03 and 04). A
    ``Framework`` or a key of ``FRAMEWORKS``: the calibrated model as that framework runs the plan
    (``memory_breakdown(..., framework=framework)`` under ``REFERENCE_CALIBRATION``): its precision recipe, the logits
    and the fitted framework memory; a stage it does not run with this plan is None, not a number.

    >>> from course_lib.hardware import A100
    >>> from course_lib.parallelism import GPT3_175B, ParallelPlan
    >>> from course_lib.units import format_bytes
    >>> plan = ParallelPlan(data_parallel=8, tensor_parallel=8, pipeline_parallel=8, zero_stage=1,
    ...                     grad_accum_steps=64, recompute="selective", sequence_parallel=True)
    >>> report = memory_budget_report(GPT3_175B, plan, A100)   # 2.73 billion parameters a device
    >>> format_bytes(report.memory.total), report.fits, [format_bytes(b.total) for b in report.by_zero_stage]
    ('25.3 GB', True, ['53.9 GB', '25.3 GB', '20.5 GB', '15.7 GB'])
    >>> memory_budget_report(GPT3_175B, plan.replace(micro_batch=2, zero_stage=0), A100, 0.421).fits_with_margin
    False
    >>> nanotron = memory_budget_report(GPT3_175B, plan, A100, framework="nanotron")   # 18 B a parameter
    >>> [b and format_bytes(b.total) for b in nanotron.by_zero_stage], nanotron.supported
    (['63.5 GB', '34.1 GB', None, None], (True, True, False, False))
    """
    _check_types(model=model, plan=plan, accelerator=accelerator)
    if framework is None:
        breakdowns = tuple(
            memory_breakdown(model, plan.replace(zero_stage=stage), calibration=None) for stage in ZERO_STAGES
        )
    else:
        framework = resolve_framework(framework)
        calibration = resolve_calibration("default", framework=framework)
        assert calibration is not None
        breakdowns = tuple(
            calibrated_memory_breakdown(model, plan.replace(zero_stage=stage), calibration)
            if framework.runs(stage, plan.pipeline_parallel, plan.schedule)
            else None
            for stage in ZERO_STAGES
        )
    in_flight = pipeline_in_flight_microbatches(
        plan.pipeline_parallel, plan.grad_accum_steps, plan.schedule, plan.virtual_stages
    )
    return MemoryBudgetReport(model, plan, accelerator, breakdowns, float(in_flight), memory_margin, framework)
