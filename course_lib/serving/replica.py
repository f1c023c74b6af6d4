"""Serving: prefill, decode, the KV cache, and why a partition that trains well may serve poorly.

Generating text runs the model in two phases (Pope et al. 2022, "Efficiently Scaling Transformer Inference"; the
JAX scaling book, "All About Transformer Inference"):

- **prefill** runs the prompt's s tokens through the model at once. Its matrix multiplies have s·b rows, like a
  training step's forward pass, so it is compute-bound; it writes every token's keys and values into the **KV
  cache** and samples the first output token (the time to first token).
- **decode** then produces one token per sequence per step. Each step multiplies only b rows (one per sequence)
  by every weight matrix, and attends over the whole cache, so it reads all the weights and the batch's KV cache
  from HBM to do little arithmetic: memory-bound until the batch b reaches the accelerator's ridge point.

A decode step on one pipeline stage costs two rooflines, one per kind of operation (the scaling book's "Theoretical
Step Time (General)"): the weight matrix multiplies, max(weight bytes / HBM bandwidth, 2·b·weights / peak FLOP/s),
and attention over the cache, max(KV bytes / HBM bandwidth, attention FLOPs / peak FLOP/s), which stays
bandwidth-bound (its intensity is the heads per KV head, far below any ridge point). Tensor parallelism divides both
by t but adds 2 all-reduces of the b×h activations per layer, so small they cost α per step (latency-bound);
pipeline parallelism divides them by p but runs the stages one after the other, plus p − 1 sends per token.

Every quantity is in SI units (bytes, seconds, FLOP, FLOP/s, bytes/s); numeric arguments may be numpy arrays (a
curve over batch sizes, or over t). Weights and the cache split evenly over the devices, as in
``parallelism.memory_breakdown`` (the embedding's imbalance between pipeline stages is ignored).

>>> from course_lib.parallelism import LLAMA3_70B
>>> from course_lib.units import format_time
>>> kv_cache_bytes(LLAMA3_70B.layers, LLAMA3_70B.kv_heads, LLAMA3_70B.head_dim, context_len=1, sequences=1)
327680
>>> from course_lib.hardware import DGX_H100
>>> step = decode_step(LLAMA3_70B, DGX_H100, tensor_parallel=8, pipeline_parallel=1, sequences=1, context_len=4096)
>>> format_time(step.time_per_output_token_s), step.bound
('8.44 ms', 'memory')
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _check, compute
from ..budget.placement import group_collective, group_collective_time
from ..hardware import Accelerator, Cluster
from ..parallelism.memory import ACTIVATION_BYTES
from ..parallelism.models import TransformerModel
from ..parallelism.plan import check_pipeline_split, check_tensor_split, splits_evenly

__all__ = [
    "serves_with_tensor_parallel",
    "kv_cache_bytes",
    "kv_cache_bytes_per_device",
    "weight_bytes_per_device",
    "decode_activation_bytes",
    "max_sequences",
    "ServingMemory",
    "serving_memory",
    "max_sequences_that_fit",
    "matmul_params",
    "prefill_flops",
    "decode_flops",
    "Prefill",
    "prefill",
    "decode_step_time_s",
    "DecodeStep",
    "decode_step",
    "latency_throughput_curve",
    "decode_compute_bound_sequences",
    "DECODE_COMPUTE_EFFICIENCY",
    "latency_optimal_tensor_parallel",
    "LOGIT_BYTES",
]

LOGIT_BYTES = 4  # logits are kept in fp32 for sampling


def _kv_heads_split(kv_heads, tensor_parallel):
    """Whether t ranks can share kv KV heads: t divides kv, or kv divides t (each head then replicated t/kv times)."""
    return (kv_heads % tensor_parallel == 0) | (tensor_parallel % kv_heads == 0)


def serves_with_tensor_parallel(model: TransformerModel, tensor_parallel) -> bool:
    """Whether t ranks can serve ``model``: t divides its heads (``parallelism.splits_evenly``) and t divides its KV
    heads or is a multiple of them (each KV head then replicated t/kv times, as vLLM does).

    >>> from course_lib.parallelism import LLAMA3_70B   # 64 heads, 8 KV heads
    >>> [t for t in (1, 2, 4, 8, 16, 32, 64) if serves_with_tensor_parallel(LLAMA3_70B, t)] == [1, 2, 4, 8, 16, 32, 64]
    True
    >>> serves_with_tensor_parallel(LLAMA3_70B, 3)
    False
    """
    t = _check.count("tensor_parallel", tensor_parallel)
    return bool(splits_evenly(model, t) and _kv_heads_split(model.kv_heads, t))


def _kv_heads_per_device(kv_heads, tensor_parallel):
    """KV heads each tensor-parallel rank holds: kv/t, or 1 (replicated t/kv times) when t > kv.

    vLLM and Megatron-LM split the KV heads across the t ranks; with more ranks than KV heads each rank keeps a copy
    of one head, so t must divide kv or kv must divide t.
    """
    kv = np.asarray(kv_heads)
    t = np.asarray(tensor_parallel)
    if not np.all(_kv_heads_split(kv, t)):
        raise ValueError(f"tensor_parallel must divide kv_heads ({kv_heads}) or be a multiple of it, got {t}")
    return np.maximum(kv // t, 1)


def kv_cache_bytes(layers, kv_heads, head_dim, context_len, sequences, bytes_per_element: float = 2):
    """Bytes of the KV cache: layers × 2 (K and V) × KV heads × head size × context × sequences × bytes.

    Grouped-query attention enters through ``kv_heads`` (the heads that have their own K and V, not the query
    heads). The scaling book's LLaMA 2-13B example: one 8192-token sequence in bf16 holds 6.7 GB.

    >>> from course_lib.units import format_bytes
    >>> format_bytes(kv_cache_bytes(40, 40, 128, 8192, 1))
    '6.71 GB'
    """
    l = _check.count("layers", layers)
    kv = _check.count("kv_heads", kv_heads)
    d = _check.count("head_dim", head_dim)
    c = _check.count("context_len", context_len)
    b = _check.count("sequences", sequences)
    e = _check.positive("bytes_per_element", bytes_per_element)
    total = l * 2 * kv * d * c * b * e
    return int(total) if np.ndim(total) == 0 and float(total).is_integer() else _check.as_result(total)


def kv_cache_bytes_per_device(
    layers,
    kv_heads,
    head_dim,
    context_len,
    sequences,
    tensor_parallel: _check.IntOrArray = 1,
    pipeline_parallel: _check.IntOrArray = 1,
    bytes_per_element: float = 2,
):
    """KV cache one device holds: its l/p layers and its share of the KV heads, kv/t (1 when t > kv: replicated).

    >>> kv_cache_bytes_per_device(80, 8, 128, 1, 1, tensor_parallel=8) * 8 == kv_cache_bytes(80, 8, 128, 1, 1)
    True
    >>> kv_cache_bytes_per_device(80, 8, 128, 1, 1, tensor_parallel=16) * 16 / kv_cache_bytes(80, 8, 128, 1, 1)
    2.0
    """
    l = _check.count("layers", layers)
    kv = _check.count("kv_heads", kv_heads)
    t = _check.count("tensor_parallel", tensor_parallel)
    p = _check.count("pipeline_parallel", pipeline_parallel)
    whole = kv_cache_bytes(l, kv, head_dim, context_len, sequences, bytes_per_element)
    return _check.as_result(whole / (l * kv) * (l / p) * _kv_heads_per_device(kv, t))


def weight_bytes_per_device(params, tensor_parallel=1, pipeline_parallel=1, bytes_per_param=2):
    """Weights one device holds for serving: params × bytes per parameter / (t·p); no gradients, no optimizer.

    >>> from course_lib.units import format_bytes
    >>> format_bytes(weight_bytes_per_device(70e9, tensor_parallel=8))   # bf16
    '17.5 GB'
    """
    n = _check.positive("params", params)
    t = _check.count("tensor_parallel", tensor_parallel)
    p = _check.count("pipeline_parallel", pipeline_parallel)
    e = _check.positive("bytes_per_param", bytes_per_param)
    return _check.as_result(n * e / (t * p))


def decode_activation_bytes(
    sequences, hidden, ffn_hidden, vocab, tensor_parallel: _check.IntOrArray = 1, gated_mlp=True, bytes_per_element=2
):
    """Live activations of one decode step on a device: b × (residual h + the MLP's widest intermediates + logits).

    One token per sequence: the residual stream (h), the MLP's up-projections and their product (3f/t gated,
    f/t plain: the widest tensors of a layer) and the fp32 logits over the device's share of the vocabulary (V/t).
    Nothing is kept between layers, so this is one layer's working set: kilobytes to megabytes, tiny next to the
    weights and the KV cache.

    >>> from course_lib.units import format_bytes
    >>> format_bytes(decode_activation_bytes(64, 8192, 28672, 128256, tensor_parallel=8))
    '6.53 MB'
    """
    b = _check.count("sequences", sequences)
    h = _check.count("hidden", hidden)
    f = _check.count("ffn_hidden", ffn_hidden)
    v = _check.count("vocab", vocab)
    t = _check.count("tensor_parallel", tensor_parallel)
    gated = _check.flag("gated_mlp", gated_mlp)
    e = _check.positive("bytes_per_element", bytes_per_element)
    mlp = (3 if gated else 1) * f / t
    return _check.as_result(b * (e * (h + mlp) + LOGIT_BYTES * v / t))


def max_sequences(
    capacity_bytes, weight_bytes, kv_bytes_per_sequence, activation_bytes_per_sequence: _check.FloatOrArray = 0
):
    """The largest batch of sequences whose KV caches (and activations) fit next to the weights: 0 if none.

    ⌊(capacity − weights) / (KV + activations per sequence)⌋. The scaling book's LLaMA 3-70B in bf16 on 16 TPU v5e
    (16 GB each), fully sharded at 8192 tokens: 43 caches.

    >>> max_sequences(16 * 16e9, 140e9, kv_cache_bytes(80, 8, 128, 8192, 1))
    43
    """
    capacity = _check.positive("capacity_bytes", capacity_bytes)
    weights = _check.nonnegative("weight_bytes", weight_bytes)
    per_kv = _check.positive("kv_bytes_per_sequence", kv_bytes_per_sequence)
    per_act = _check.nonnegative("activation_bytes_per_sequence", activation_bytes_per_sequence)
    count = np.floor(np.maximum(capacity - weights, 0.0) / (per_kv + per_act)).astype(np.int64)
    return int(count) if count.ndim == 0 else count


def _check_partition(model: TransformerModel, tensor_parallel, pipeline_parallel):
    t = _check.count("tensor_parallel", tensor_parallel)
    p = _check.count("pipeline_parallel", pipeline_parallel)
    check_tensor_split(model.heads, t)
    check_pipeline_split(model.layers, p)
    _kv_heads_per_device(model.kv_heads, t)
    return t, p


def _replicated_kv_params_per_layer(model: TransformerModel, tensor_parallel):
    """W_K and W_V parameters a rank holds beyond its even share, because t > kv replicates KV heads."""
    t = np.asarray(tensor_parallel)
    extra_heads = _kv_heads_per_device(model.kv_heads, t) - model.kv_heads / t
    return 2 * model.hidden * model.head_dim * extra_heads


def matmul_params(model: TransformerModel) -> int:
    """Parameters a decode step reads and multiplies by (2 FLOPs each per token): all but the lookup tables.

    The input embedding (and GPT's learned positions) is a lookup of b rows, not a matrix multiply, so an untied
    input table is neither read in full nor counted in the FLOPs; a tied one is read as the output head.

    >>> from course_lib.parallelism import LLAMA3_8B
    >>> LLAMA3_8B.params - matmul_params(LLAMA3_8B) == LLAMA3_8B.vocab * LLAMA3_8B.hidden   # the untied input table
    True
    """
    lookups = (0 if model.tied_embeddings else model.vocab * model.hidden) + (
        model.seq_len * model.hidden if model.style == "gpt" else 0
    )
    return model.params - lookups


@dataclass(frozen=True, eq=False)
class ServingMemory:
    """Bytes per device while serving: weights, KV cache and one decode step's activations (arrays in bulk)."""

    weights: _check.FloatOrArray
    kv_cache: _check.FloatOrArray
    activations: _check.FloatOrArray

    @property
    def total(self):
        """Weights + KV cache + activations."""
        return self.weights + self.kv_cache + self.activations


def serving_memory(
    model: TransformerModel,
    tensor_parallel,
    pipeline_parallel,
    sequences,
    context_len,
    bytes_per_param=2,
    kv_bytes_per_element=2,
) -> ServingMemory:
    """Per-device memory of a serving replica of t·p devices holding ``sequences`` caches of ``context_len`` tokens.

    Weights: Ψ/(t·p) parameters (plus the W_K, W_V copies when t > kv heads); KV cache: ``kv_cache_bytes_per_device``
    (count every batch in flight in ``sequences``); activations: ``decode_activation_bytes``.

    >>> from course_lib.parallelism import LLAMA3_70B
    >>> from course_lib.units import format_bytes
    >>> mem = serving_memory(LLAMA3_70B, 8, 1, sequences=32, context_len=8192)
    >>> format_bytes(mem.weights), format_bytes(mem.kv_cache), format_bytes(mem.activations)
    ('17.6 GB', '10.7 GB', '3.26 MB')
    """
    t, p = _check_partition(model, tensor_parallel, pipeline_parallel)
    e = _check.positive("bytes_per_param", bytes_per_param)
    _check.positive("kv_bytes_per_element", kv_bytes_per_element)
    params = model.params / (t * p) + model.layers / p * _replicated_kv_params_per_layer(model, t)
    kv = kv_cache_bytes_per_device(
        model.layers, model.kv_heads, model.head_dim, context_len, sequences, t, p, kv_bytes_per_element
    )
    activations = decode_activation_bytes(
        sequences, model.hidden, model.ffn_hidden, model.vocab, t, model.gated_mlp, ACTIVATION_BYTES
    )
    return ServingMemory(_check.as_result(params * e), kv, activations)


def max_sequences_that_fit(
    model: TransformerModel,
    accelerator: Accelerator,
    tensor_parallel,
    pipeline_parallel,
    context_len,
    bytes_per_param=2,
    kv_bytes_per_element=2,
):
    """The largest batch of sequences at ``context_len`` whose memory fits the accelerator's HBM (0: the weights
    alone do not fit). Replicated KV heads (t > kv heads) cost room: Llama 3.1 70B at 8192 tokens on H100s:

    >>> from course_lib.hardware import H100
    >>> from course_lib.parallelism import LLAMA3_70B
    >>> max_sequences_that_fit(LLAMA3_70B, H100, 8, 1, 8192), max_sequences_that_fit(LLAMA3_70B, H100, 16, 1, 8192)
    (185, 211)
    """
    one = serving_memory(
        model, tensor_parallel, pipeline_parallel, 1, context_len, bytes_per_param, kv_bytes_per_element
    )
    return max_sequences(accelerator.hbm_capacity_bytes, one.weights, one.kv_cache, one.activations)


def prefill_flops(model: TransformerModel, prompt_len, sequences=1):
    """FLOPs of a prompt's prefill: 2 × matmul parameters per token, plus causal attention 2·l·h·s(s+1) per sequence.

    With a causal mask token i attends to i tokens: 4·h·i FLOPs per layer (QKᵀ and the product with V), summing to
    2h·s(s+1); this is the s² term, half of the 4s²h that training counts use for the full s×s matrix (Narayanan
    et al. 2021, appendix).

    >>> from course_lib.parallelism import LLAMA3_70B
    >>> from course_lib.units import format_flops
    >>> format_flops(prefill_flops(LLAMA3_70B, 8192))   # the scaling book: 2 × 70e9 × 8192 = 1.15e15 + attention
    '1.23 PFLOP'
    """
    s = _check.count("prompt_len", prompt_len)
    b = _check.count("sequences", sequences)
    attention = 2.0 * model.layers * model.hidden * s * (s + 1)
    return _check.as_result(b * (2.0 * matmul_params(model) * s + attention))


def decode_flops(model: TransformerModel, sequences, context_len):
    """FLOPs of one decode step: b × (2 × matmul parameters + attention 4·l·h·context over the cached tokens).

    >>> from course_lib.parallelism import LLAMA3_8B
    >>> from course_lib.units import format_flops
    >>> format_flops(decode_flops(LLAMA3_8B, 1, 1))
    '15 GFLOP'
    """
    return _check.as_result(sum(_decode_flops_parts(model, sequences, context_len)))


# Decode's multiplies have one row per sequence: skinny GEMMs that reach less of peak than training's. The course
# states one efficiency for them, as for prefill and the training step's ideal model (lesson 04): a stated
# assumption, not a measurement; pass another to see what it changes.
DECODE_COMPUTE_EFFICIENCY = 0.5


def _decode_flops_parts(model: TransformerModel, sequences, context_len):
    """(weight multiplies, attention) FLOPs of one decode step of the whole model."""
    b = _check.count("sequences", sequences)
    c = _check.count("context_len", context_len)
    return 2.0 * b * matmul_params(model), 4.0 * b * model.layers * model.hidden * c


def _check_cluster(cluster: Cluster, tensor_parallel, pipeline_parallel):
    devices = np.asarray(tensor_parallel) * np.asarray(pipeline_parallel)
    if np.any(devices > cluster.devices):
        raise ValueError(f"a replica needs t·p = {devices} devices; the cluster has {cluster.devices}")


def _all_reduce_terms(cluster: Cluster, tensor_parallel, payload_bytes):
    """(latency, bandwidth) seconds of one tensor-parallel all-reduce, the launch floor counted with the latency (a
    cost per call, not per byte); the group's ranks are adjacent (stride 1)."""
    call = group_collective("all_reduce", cluster, tensor_parallel, 1, payload_bytes)
    fixed = call.launch_floor_s + call.latency_s
    return fixed, call.time_s - fixed


def _hop_s(cluster: Cluster, tensor_parallel, pipeline_parallel, payload_bytes):
    """One stage-to-stage send; a replica's t·p devices are adjacent, so consecutive stages are t ranks apart."""
    return group_collective_time("send_recv", cluster, pipeline_parallel, tensor_parallel, payload_bytes)


@dataclass(frozen=True, eq=False)
class Prefill:
    """Where a prompt's prefill time goes (seconds): compute, tensor-parallel all-reduces, pipeline sends."""

    compute_s: _check.FloatOrArray
    all_reduce_s: _check.FloatOrArray
    pipeline_hop_s: _check.FloatOrArray

    @property
    def time_to_first_token_s(self):
        """The prefill's total: the first output token is sampled from its last logits."""
        return _check.as_result(self.compute_s + self.all_reduce_s + self.pipeline_hop_s)


def prefill(
    model: TransformerModel,
    cluster: Cluster,
    tensor_parallel,
    pipeline_parallel,
    prompt_len,
    sequences=1,
    compute_efficiency=0.5,
    dtype="bf16",
) -> Prefill:
    """Time of the prefill of ``sequences`` prompts of ``prompt_len`` tokens on a replica of t·p devices.

    Compute-bound: ``prefill_flops`` / (t · peak · efficiency), the p stages running one after the other (one
    prompt has no second micro-batch to fill a pipeline). Per layer, 2 all-reduces of the b·s·h activations
    (as in training's forward pass, large enough to be bandwidth-bound); p − 1 sends of b·s·h/t between stages.

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import LLAMA3_70B
    >>> from course_lib.units import format_time
    >>> pre = prefill(LLAMA3_70B, DGX_H100, 8, 1, prompt_len=8192)
    >>> format_time(pre.compute_s), format_time(pre.all_reduce_s), format_time(pre.time_to_first_token_s)
    ('310 ms', '68.4 ms', '378 ms')
    """
    t, p = _check_partition(model, tensor_parallel, pipeline_parallel)
    _check_cluster(cluster, t, p)
    efficiency = _check.fraction("compute_efficiency", compute_efficiency)
    peak = cluster.accelerator.peak(dtype)
    flops = prefill_flops(model, prompt_len, sequences)
    compute_s = flops / (t * peak * efficiency)
    activation = ACTIVATION_BYTES * sequences * prompt_len * model.hidden
    latency, bandwidth = _all_reduce_terms(cluster, t, activation)
    all_reduce = 2 * model.layers * (latency + bandwidth)
    hops = (p - 1) * _hop_s(cluster, t, p, activation / t)
    return Prefill(*(_check.as_result(x) for x in (compute_s, all_reduce, hops)))


def decode_step_time_s(
    weight_bytes, kv_bytes, matmul_flops, attention_flops, hbm_bandwidth_bytes_per_s, peak_flops_per_s
):
    """One decode step on one device, two rooflines: max(weights/BW, matmul FLOPs/peak) + max(KV/BW, attention/peak).

    The weight matrix multiplies turn compute-bound once the batch passes the ridge point; attention over the
    cache does not (the scaling book's "Theoretical Step Time (General)"). Its pop quiz: a 30B model in int8 on 16
    TPU v5e (8.1e11 B/s, 1.97e14 FLOP/s each), 100 kB of KV per token, 8192 tokens, batch 4 then 256:

    >>> from course_lib.units import format_time
    >>> kv = 100e3 * 8192
    >>> format_time(decode_step_time_s(30e9 / 16, 4 * kv / 16, 2 * 4 * 30e9 / 16, 0, 8.1e11, 1.97e14))
    '2.57 ms'
    >>> format_time(decode_step_time_s(30e9 / 16, 256 * kv / 16, 2 * 256 * 30e9 / 16, 0, 8.1e11, 1.97e14))
    '21.1 ms'
    """
    weights = _check.nonnegative("weight_bytes", weight_bytes)
    kv = _check.nonnegative("kv_bytes", kv_bytes)
    matmul = _check.nonnegative("matmul_flops", matmul_flops)
    attention = _check.nonnegative("attention_flops", attention_flops)
    bandwidth = _check.positive("hbm_bandwidth_bytes_per_s", hbm_bandwidth_bytes_per_s)
    peak = _check.positive("peak_flops_per_s", peak_flops_per_s)
    return _check.as_result(
        np.maximum(weights / bandwidth, matmul / peak) + np.maximum(kv / bandwidth, attention / peak)
    )


@dataclass(frozen=True, eq=False)
class DecodeStep:
    """Where one decode step's time goes (seconds) and what it yields. Fields are arrays over batch sizes or t.

    Per pipeline stage (one device): ``weight_read_s`` and ``matmul_compute_s`` (the weight multiplies' two
    rooflines), ``kv_read_s`` and ``attention_compute_s`` (attention's), ``all_reduce_latency_s`` and
    ``all_reduce_bandwidth_s`` (the stage's 2·l/p tensor-parallel all-reduces: the launch floor + n·α, and Q/B).
    Per token: ``pipeline_hop_s`` (the p − 1 sends). ``batches_in_flight`` batches of ``sequences`` sequences share
    the pipeline.
    """

    sequences: _check.IntOrArray
    tensor_parallel: _check.IntOrArray
    pipeline_parallel: _check.IntOrArray
    batches_in_flight: _check.IntOrArray
    weight_read_s: _check.FloatOrArray
    matmul_compute_s: _check.FloatOrArray
    kv_read_s: _check.FloatOrArray
    attention_compute_s: _check.FloatOrArray
    all_reduce_latency_s: _check.FloatOrArray
    all_reduce_bandwidth_s: _check.FloatOrArray
    pipeline_hop_s: _check.FloatOrArray

    @property
    def stage_s(self):
        """One stage's busy time per step: both rooflines plus its all-reduces."""
        return _check.as_result(
            np.maximum(self.weight_read_s, self.matmul_compute_s)
            + np.maximum(self.kv_read_s, self.attention_compute_s)
            + self.all_reduce_latency_s
            + self.all_reduce_bandwidth_s
        )

    @property
    def time_per_output_token_s(self):
        """Seconds between a sequence's tokens: max(p stages in turn + p − 1 hops, k batches through one stage).

        A token must leave the last stage before the next can enter the first, so one batch waits for all p
        stages; with k batches in flight a stage serves each of them once per token.
        """
        p, k = self.pipeline_parallel, self.batches_in_flight
        return _check.as_result(np.maximum(p * self.stage_s + self.pipeline_hop_s, k * self.stage_s))

    @property
    def tokens_per_s_per_replica(self):
        """k·b tokens every ``time_per_output_token_s``."""
        return _check.as_result(self.batches_in_flight * self.sequences / self.time_per_output_token_s)

    @property
    def tokens_per_s_per_device(self):
        """Replica throughput over its t·p devices."""
        return _check.as_result(self.tokens_per_s_per_replica / (self.tensor_parallel * self.pipeline_parallel))

    @property
    def bound(self):
        """ "compute" when the step's arithmetic (weight multiplies and attention) takes longer than its HBM reads
        (weights and the KV cache), else "memory"."""
        arithmetic = self.matmul_compute_s + self.attention_compute_s
        label = np.where(arithmetic > self.weight_read_s + self.kv_read_s, "compute", "memory")
        return str(label) if label.ndim == 0 else label


def decode_step(
    model: TransformerModel,
    cluster: Cluster,
    tensor_parallel,
    pipeline_parallel,
    sequences,
    context_len,
    batches_in_flight=1,
    bytes_per_param=2,
    kv_bytes_per_element=2,
    dtype="bf16",
    compute_efficiency=DECODE_COMPUTE_EFFICIENCY,
) -> DecodeStep:
    """One decode step of ``sequences`` sequences at ``context_len`` cached tokens on a replica of t·p devices.

    Each device reads its weights (``matmul_params``/(t·p), bytes per parameter) and its batch's KV cache
    (``kv_cache_bytes_per_device``) at the accelerator's HBM bandwidth, or is bound by ``decode_flops``/(t·p) at
    ``compute_efficiency`` × its peak (``DECODE_COMPUTE_EFFICIENCY``, a stated assumption); each layer
    all-reduces the b×h activations twice over the t ranks (``budget.group_collective``, as NCCL runs it: LL on one
    node, a tree across nodes); each token crosses p − 1 stage boundaries with b·h/t bytes. The replica's devices
    are adjacent (tensor ranks innermost). Arrays give a curve.

    >>> import numpy as np
    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import LLAMA3_8B
    >>> from course_lib.units import format_time
    >>> step = decode_step(LLAMA3_8B, DGX_H100, 1, 1, sequences=np.array([1, 64, 320, 640]), context_len=512)
    >>> [format_time(x) for x in step.time_per_output_token_s], step.bound.tolist()
    (['4.5 ms', '5.76 ms', '16.1 ms', '32.2 ms'], ['memory', 'memory', 'memory', 'compute'])

    At 320 sequences the multiplies alone are compute-bound (9.8 ms of arithmetic at half of peak against 4.5 ms of
    weight reads), but the batch's KV cache adds 6.4 ms of reads: the step as a whole is still memory-bound.
    """
    t, p = _check_partition(model, tensor_parallel, pipeline_parallel)
    _check_cluster(cluster, t, p)
    b = _check.count("sequences", sequences)
    c = _check.count("context_len", context_len)
    k = _check.count("batches_in_flight", batches_in_flight)
    e = _check.positive("bytes_per_param", bytes_per_param)
    _check.positive("kv_bytes_per_element", kv_bytes_per_element)
    efficiency = _check.fraction("compute_efficiency", compute_efficiency)
    accelerator = cluster.accelerator
    bandwidth, peak = accelerator.hbm_bandwidth_bytes_per_s, accelerator.peak(dtype) * efficiency
    read_params = matmul_params(model) / (t * p) + model.layers / p * _replicated_kv_params_per_layer(model, t)
    weight_read = e * read_params / bandwidth
    matmul_flops, attention_flops = _decode_flops_parts(model, b, c)
    matmul, attention = matmul_flops / (t * p) / peak, attention_flops / (t * p) / peak
    kv_read = kv_cache_bytes_per_device(model.layers, model.kv_heads, model.head_dim, c, b, t, p, kv_bytes_per_element)
    latency, bandwidth_term = _all_reduce_terms(cluster, t, ACTIVATION_BYTES * b * model.hidden)
    calls = 2 * model.layers / p
    hops = (p - 1) * _hop_s(cluster, t, p, ACTIVATION_BYTES * b * model.hidden / t)
    return DecodeStep(
        b,
        t,
        p,
        k,
        *(
            _check.as_result(x)
            for x in (
                weight_read,
                matmul,
                kv_read / bandwidth,
                attention,
                calls * latency,
                calls * bandwidth_term,
                hops,
            )
        ),
    )


def latency_throughput_curve(
    model: TransformerModel,
    cluster: Cluster,
    tensor_parallel,
    pipeline_parallel,
    context_len,
    batches_in_flight=1,
    bytes_per_param=2,
    kv_bytes_per_element=2,
    dtype="bf16",
    compute_efficiency=DECODE_COMPUTE_EFFICIENCY,
) -> DecodeStep:
    """``decode_step`` over every batch size from 1 to the largest that fits (the KV caches of all k batches in
    flight must fit): time per output token against tokens/s, the latency–throughput curve.

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import LLAMA3_8B
    >>> from course_lib.units import format_time
    >>> curve = latency_throughput_curve(LLAMA3_8B, DGX_H100, 1, 1, context_len=8192)
    >>> int(curve.sequences[-1]), format_time(curve.time_per_output_token_s[-1])
    (59, '23.4 ms')
    """
    k = _check.count("batches_in_flight", batches_in_flight)
    fits = max_sequences_that_fit(
        model,
        cluster.accelerator,
        tensor_parallel,
        pipeline_parallel,
        context_len,
        bytes_per_param,
        kv_bytes_per_element,
    )
    largest = fits // k
    if largest < 1:
        raise ValueError(
            f"no batch fits: {model.name} with tensor_parallel={tensor_parallel}, pipeline_parallel={pipeline_parallel}"
            f", batches_in_flight={k} and context_len={context_len} exceeds {cluster.accelerator.name}'s memory"
        )
    sequences = np.arange(1, int(largest) + 1)
    return decode_step(
        model,
        cluster,
        tensor_parallel,
        pipeline_parallel,
        sequences,
        context_len,
        k,
        bytes_per_param,
        kv_bytes_per_element,
        dtype,
        compute_efficiency,
    )


def decode_compute_bound_sequences(peak_flops_per_s, hbm_bandwidth_bytes_per_s, bytes_per_param=2):
    """The batch above which decode's weight multiplies are compute-bound: peak / bandwidth × bytes per param / 2.

    2·b FLOPs per parameter against the bytes per parameter read; t and p cancel. The scaling book: 240 for bf16 on
    TPU v5e, 120 with int8 weights and bf16 arithmetic; an H100 in bf16 295.2 (compute-bound from a batch of 296).

    >>> v5e = (1.97e14, 8.2e11)   # peak bf16 FLOP/s, HBM bytes/s
    >>> round(decode_compute_bound_sequences(*v5e)), round(decode_compute_bound_sequences(*v5e, bytes_per_param=1))
    (240, 120)
    """
    peak = _check.positive("peak_flops_per_s", peak_flops_per_s)
    bandwidth = _check.positive("hbm_bandwidth_bytes_per_s", hbm_bandwidth_bytes_per_s)
    e = _check.positive("bytes_per_param", bytes_per_param)
    return _check.as_result(compute.ridge_point_flops_per_byte(peak, bandwidth) * e / 2)


def latency_optimal_tensor_parallel(
    model: TransformerModel,
    cluster: Cluster,
    sequences,
    context_len,
    pipeline_parallel=1,
    dtype="bf16",
    compute_efficiency=DECODE_COMPUTE_EFFICIENCY,
) -> int:
    """The t with the lowest time per output token, among those that split the model and fit the cluster's memory.

    More t divides the weight and KV reads but adds α to each of the 2·l all-reduces per token; past some t (sooner
    once the group leaves the NVLink domain) the latency term wins and latency rises again.

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import LLAMA3_8B
    >>> latency_optimal_tensor_parallel(LLAMA3_8B, DGX_H100, sequences=1, context_len=4096)
    8
    """
    _, p = _check_partition(model, 1, pipeline_parallel)
    options = np.array(
        [
            t
            for t in range(1, cluster.devices // p + 1)
            if serves_with_tensor_parallel(model, t)
            and serving_memory(model, t, p, sequences, context_len).total <= cluster.accelerator.hbm_capacity_bytes
        ]
    )
    if options.size == 0:
        raise ValueError(
            f"no tensor_parallel fits: {model.name} with pipeline_parallel={p}, {sequences} sequences of "
            f"{context_len} tokens exceeds {cluster.name}'s memory"
        )
    step = decode_step(model, cluster, options, p, sequences, context_len, dtype=dtype,
                       compute_efficiency=compute_efficiency)  # fmt: skip
    return int(options[np.argmin(step.time_per_output_token_s)])
