"""The serving model as inference engines run it: one iteration's cost, the paged KV cache, precision, MoE at inference.

An engine (vLLM, TensorRT-LLM, SGLang) runs *iterations*: each is one forward pass over a mixed batch of new prompt
tokens (a prefill, or a chunk of one) and one new token for every sequence that is decoding. On each device of a
replica of t·p devices an iteration costs the two rooflines of ``replica.decode_step`` (the weight multiplies, and
attention over the cache), now with what engines measurably reach:

- the weights are read **once per iteration**, shared by all its rows (prefill tokens + decoding sequences), at a
  fraction of the datasheet's HBM bandwidth (``EngineEfficiency.hbm_bandwidth_fraction``, fitted on published rows);
  their multiplies cost 2 FLOPs per weight and row at ``gemm_efficiency`` of the precision's peak;
- attention reads the cached K and V of every decoding sequence and does 4·l·h FLOPs per attended token;
- inside a node, the 2 all-reduces per layer run the engine's own one-shot or two-shot kernel (``custom_all_reduce``),
  not NCCL; across nodes, or above the kernel's buffer, NCCL (``budget.group_collective``: LL and the launch floor);
- a fixed cost per iteration (scheduling, sampling, the host's launches): ``iteration_overhead_s``, a fit.

``iteration_time`` returns an ``EngineCost``: a callable (prefill_tokens, prefill_attended_tokens, decode_sequences,
decode_context_tokens) → seconds, vectorised over numpy arrays, which the scheduler (``serving.scheduler``) steps.
``kv_cache_blocks`` counts the paged cache's blocks. Precisions are named: weights "bf16", "fp8" or "int4"
(weight-only W4A16), the KV cache "bf16" or "fp8".

With the efficiencies of the uncalibrated model (``UNCALIBRATED``: the full HBM bandwidth, half of peak, NCCL, no
overhead) an iteration of b decoding sequences is ``replica.decode_step`` exactly:

>>> from course_lib.hardware import DGX_H100
>>> from course_lib.parallelism import LLAMA3_70B
>>> from course_lib.serving import decode_step
>>> cost = iteration_time(LLAMA3_70B, DGX_H100, 8, efficiency=UNCALIBRATED)
>>> cost(0, 0, 1, 4096) == decode_step(LLAMA3_70B, DGX_H100, 8, 1, 1, 4096).time_per_output_token_s
True

A prefill of s tokens alone (s·(s + 1)/2 attended) is ``replica.prefill`` where it is compute-bound:

>>> from course_lib.serving import prefill
>>> cost(8192, 8192 * 8193 // 2, 0, 0) == prefill(LLAMA3_70B, DGX_H100, 8, 1, 8192).time_to_first_token_s
True
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from .. import _check
from ..budget.placement import group_collective, group_collective_time
from ..hardware import Accelerator, Cluster
from ..parallelism.memory import ACTIVATION_BYTES
from ..parallelism.models import TransformerModel
from ..parallelism.transfers import expert_dispatch_bytes
from ..units import GB, KB, MB, GiB, KiB, MiB
from .replica import (
    DECODE_COMPUTE_EFFICIENCY,
    DecodeStep,
    _check_cluster,
    _check_partition,
    _replicated_kv_params_per_layer,
    decode_activation_bytes,
    kv_cache_bytes_per_device,
    matmul_params,
)

__all__ = [
    "Precision",
    "WEIGHT_PRECISIONS",
    "KV_CACHE_PRECISIONS",
    "check_precisions",
    "Engine",
    "ENGINES",
    "CUSTOM_ALL_REDUCE_MEASURED",
    "CustomAllReduceFit",
    "CUSTOM_ALL_REDUCE_FIT",
    "custom_all_reduce_time_s",
    "EngineEfficiency",
    "UNCALIBRATED",
    "GEMM_M4096_MEASURED",
    "fit_gemm_depth",
    "GEMM_EFFICIENCY_CAP",
    "GEMM_HALF_DEPTH",
    "GEMM_M64_BANDWIDTH_MEASURED",
    "DECODE_HBM_BANDWIDTH_FRACTION",
    "DEFAULT_EFFICIENCY",
    "IterationBreakdown",
    "EngineCost",
    "iteration_time",
    "serving_weight_bytes_per_device",
    "kv_cache_blocks",
    "blocks_per_sequence",
    "max_sequences_in_blocks",
    "expected_experts_visited",
]


# ---- precision ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Precision:
    """How a tensor is stored and multiplied: ``bytes_per_element`` in HBM, ``arithmetic`` the data type its matrix
    multiplies run in (an ``Accelerator.peak`` key), ``source`` what says engines run it so."""

    name: str
    bytes_per_element: float
    arithmetic: str
    source: str


WEIGHT_PRECISIONS = MappingProxyType(
    {
        "bf16": Precision("bf16", 2.0, "bf16", "the checkpoints' own precision"),
        # FP8 (E4M3) weights and activations, multiplied at the FP8 peak: vLLM's "fp8" quantization and
        # TensorRT-LLM's FP8 recipe (NVIDIA ModelOpt), as the published FP8 checkpoints ship.
        "fp8": Precision("fp8", 1.0, "fp8", "vLLM docs, Quantization > FP8 W8A8; TensorRT-LLM FP8 (ModelOpt)"),
        # 4-bit weights, 16-bit activations (W4A16): the weights are read at half a byte and dequantised in the
        # kernel, the multiply runs in 16 bits (AWQ, Lin et al. 2024, arXiv 2306.00978; the Marlin kernel, Frantar
        # et al. 2024, arXiv 2408.11743): it saves HBM traffic, not arithmetic.
        "int4": Precision("int4", 0.5, "bf16", "AWQ (arXiv 2306.00978); Marlin W4A16 (arXiv 2408.11743)"),
    }
)
KV_CACHE_PRECISIONS = MappingProxyType(
    {
        "bf16": Precision("bf16", 2.0, "bf16", "the model's precision (vLLM kv_cache_dtype 'auto')"),
        # vLLM --kv-cache-dtype fp8 (E4M3, scaled), TensorRT-LLM's FP8 KV cache: half the bytes per cached token.
        "fp8": Precision("fp8", 1.0, "fp8", "vLLM docs, Quantized KV Cache (--kv-cache-dtype fp8)"),
    }
)


def check_precisions(accelerator: Accelerator, weights: str, kv_cache: str) -> tuple[Precision, Precision]:
    """The named precisions of the weights and the KV cache, checked against what ``accelerator`` computes in.

    An FP8 tensor needs FP8 arithmetic (Hopper and later; an A100 has none): a ``ValueError`` names the parameter.

    >>> from course_lib.hardware import A100, H100
    >>> [p.bytes_per_element for p in check_precisions(H100, "int4", "fp8")]
    [0.5, 1.0]
    >>> check_precisions(A100, "fp8", "bf16")
    Traceback (most recent call last):
    ...
    ValueError: weights must be a precision A100 SXM 80GB computes in ('bf16', 'int4'); got 'fp8'
    """
    chosen = []
    for name, value, table in (("weights", weights, WEIGHT_PRECISIONS), ("kv_cache", kv_cache, KV_CACHE_PRECISIONS)):
        _check.choice(name, value, tuple(table))
        supported = tuple(k for k, p in table.items() if p.arithmetic in accelerator.peak_flops_per_s)
        if value not in supported:
            raise ValueError(f"{name} must be a precision {accelerator.name} computes in {supported}; got {value!r}")
        chosen.append(table[value])
    return chosen[0], chosen[1]


def serving_weight_bytes_per_device(model: TransformerModel, tensor_parallel, pipeline_parallel=1, *, weights="bf16"):
    """Weight bytes one device stores and reads per iteration (the input embedding is a lookup: not read whole), at
    the named precision: (stored, read). The layers at its bytes per parameter with the W_K, W_V copies when t > KV
    heads (as ``replica.serving_memory``); the embedding and output head in bf16, as the FP8 and INT4 recipes leave
    them (vLLM's FP8 and llm-compressor's schemes and AWQ quantize the layers' linear weights, not ``lm_head``).

    >>> from course_lib.parallelism import LLAMA3_8B
    >>> [round(x / 1e9, 2) for x in serving_weight_bytes_per_device(LLAMA3_8B, 1, weights="fp8")]
    [9.08, 8.03]
    """
    t, p = _check_partition(model, tensor_parallel, pipeline_parallel)
    e = WEIGHT_PRECISIONS[_check.choice("weights", weights, tuple(WEIGHT_PRECISIONS))].bytes_per_element
    layers = e * (model.params - model.embedding_params) / (t * p)
    layers += e * model.layers / p * _replicated_kv_params_per_layer(model, t)  # a rank's own copies: not split by t
    table = 2.0 * model.embedding_params  # bf16
    read_table = 2.0 * (matmul_params(model) - (model.params - model.embedding_params))  # the head and final norm
    return _check.as_result(layers + table / (t * p)), _check.as_result(layers + read_table / (t * p))


# ---- engines --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Engine:
    """An inference engine's defaults that set its cost and capacity, each cited.

    ``block_size_tokens``: tokens per KV block; ``memory_fraction`` of ``memory_of`` ("total": vLLM's
    gpu_memory_utilization, a share of the whole device; "free": TensorRT-LLM's free_gpu_memory_fraction, a share of
    what the weights and activations leave); ``max_num_seqs`` the largest batch it schedules;
    ``one_shot_max_bytes`` ((t_max, bytes), ...) the custom all-reduce runs one-shot below ``bytes`` for t ≤
    ``t_max`` (two-shot above, up to ``custom_all_reduce_max_bytes``; NCCL beyond); ``custom_all_reduce_sizes`` the
    t it supports.
    """

    name: str
    block_size_tokens: int
    memory_fraction: float
    memory_of: str
    max_num_seqs: int
    one_shot_max_bytes: tuple
    custom_all_reduce_max_bytes: float
    custom_all_reduce_sizes: tuple
    source: str

    def one_shot_below_bytes(self, tensor_parallel: int) -> float:
        """The payload below which the custom all-reduce runs one-shot for t ranks.

        >>> ENGINES["vllm"].one_shot_below_bytes(8), ENGINES["tensorrt-llm"].one_shot_below_bytes(8)
        (262144.0, 500000.0)
        """
        for t_max, limit in self.one_shot_max_bytes:
            if tensor_parallel <= t_max:
                return float(limit)
        return 0.0


ENGINES = MappingProxyType(
    {
        # vLLM: CacheConfig.DEFAULT_BLOCK_SIZE = 16 (vllm-project/vllm@002f10e0 vllm/config/cache.py); the
        # gpu_memory_utilization of the whole device 0.9 and max_num_seqs 256 (vllm/engine/arg_utils.py EngineArgs,
        # v0.6; 0.92 in vllm/config/cache.py on main). Custom all-reduce for t in (2, 4, 6, 8) below 8 MiB
        # (vllm/distributed/device_communicators/custom_all_reduce.py, max_size=8192 * 1024); one-shot
        # (cross_device_reduce_1stage) for t = 2, t ≤ 4 below 512 KiB, t ≤ 8 below 256 KiB, else two-shot
        # (csrc/custom_all_reduce.cuh @036bb685, CustomAllreduce::allreduce, REDUCE_CASE).
        "vllm": Engine(
            "vLLM",
            block_size_tokens=16,
            memory_fraction=0.9,
            memory_of="total",
            max_num_seqs=256,
            one_shot_max_bytes=((2, 8 * MiB), (4, 512 * KiB), (8, 256 * KiB)),
            custom_all_reduce_max_bytes=8 * MiB,
            custom_all_reduce_sizes=(2, 4, 6, 8),
            source="vllm/config/cache.py; vllm/engine/arg_utils.py; csrc/custom_all_reduce.cuh",
        ),
        # TensorRT-LLM: KvCacheConfig tokens_per_block 32 and free_gpu_memory_fraction 0.9 of the memory left after
        # the engine loads (tensorrt_llm/llmapi/llm_args.py, KvCacheConfig); max_batch_size 2048
        # (tensorrt_llm/builder.py BuildConfig's default, with max_num_tokens 8192). Custom all-reduce
        # (AllReduceStrategy AUTO): one-shot for t ≤ 2 below 16 MB, t ≤ 4 below 1 MB, else below 500 kB; two-shot up
        # to 8 MB; NCCL beyond (TensorRT-LLM release/0.14 cpp/tensorrt_llm/plugins/ncclPlugin/allreducePlugin.cpp,
        # selectImplementation).
        "tensorrt-llm": Engine(
            "TensorRT-LLM",
            block_size_tokens=32,
            memory_fraction=0.9,
            memory_of="free",
            max_num_seqs=2048,
            one_shot_max_bytes=((2, 16 * MB), (4, 1 * MB), (8, 500 * KB)),
            custom_all_reduce_max_bytes=8 * MB,
            custom_all_reduce_sizes=(2, 4, 8),
            source="tensorrt_llm/llmapi/llm_args.py KvCacheConfig; allreducePlugin.cpp selectImplementation",
        ),
    }
)


# ---- the custom all-reduce, fitted on a measurement -----------------------------------------------------------------

# The custom all-reduce measured on H100 SXM (one node, NVLink 4), TensorRT-LLM's one-shot/two-shot kernels as SGLang
# ports them (sgl-kernel, whose SelectImplementation uses the thresholds of ENGINES["tensorrt-llm"] in KiB: one-shot
# for t = 2, below 1 MiB for t = 4, below 512 KiB for t = 8): sgl-project/sglang pull request #2904
# (https://github.com/sgl-project/sglang/pull/2904, "unit test performance in H100 (without cuda graph)", the "custom
# allreduce" table). Sizes are elements of a 16-bit type (the test's sizes 512 … 1048576: "1KB to 1MB"), so bytes are
# twice them. Rows: (t, payload bytes, seconds).
CUSTOM_ALL_REDUCE_MEASURED = tuple(
    (t, 2 * size, ms * 1e-3)
    for size, times in (
        (512, (0.0037, 0.0048, 0.0059)),
        (4096, (0.0039, 0.0037, 0.0057)),
        (32768, (0.0045, 0.0048, 0.0078)),
        (262144, (0.0079, 0.0139, 0.0167)),
        (524288, (0.0125, 0.0202, 0.0221)),
        (1048576, (0.0199, 0.0311, 0.0338)),
    )
    for t, ms in zip((2, 4, 8), times, strict=True)
)
_MEASURED_ONE_SHOT_BELOW = ((2, 16 * MiB), (4, 1 * MiB), (8, 512 * KiB))  # sgl-kernel's thresholds, bytes


def _one_shot(table, tensor_parallel, payload_bytes):
    limit = np.select([np.asarray(tensor_parallel) <= t for t, _ in table], [b for _, b in table], 0.0)
    return np.asarray(payload_bytes) < limit


def _read_bytes(tensor_parallel, payload_bytes, one_shot):
    """Bytes each rank reads from its peers over NVLink: one-shot (t − 1)·S (every peer's whole buffer); two-shot
    2·(t − 1)/t·S (a reduce-scatter then an all-gather of S/t chunks)."""
    t = np.asarray(tensor_parallel, dtype=float)
    return np.where(one_shot, (t - 1) * payload_bytes, 2 * (t - 1) / t * payload_bytes)


@dataclass(frozen=True)
class CustomAllReduceFit:
    """The custom all-reduce's time, fitted by least squares on ``CUSTOM_ALL_REDUCE_MEASURED``:
    one-shot ``base_s`` + (t − 1)·``per_peer_s`` + (t − 1)·S / B, two-shot the same plus ``two_shot_extra_s`` (its
    second barrier) with 2(t − 1)/t·S read. B = ``nvlink_fraction`` × the node's one-way NVLink bandwidth per GPU.

    A fit, not physics: ``base_s`` absorbs the kernel launch, the copy into the shared buffer (the measurement ran
    without CUDA graphs, an upper bound for engines that capture them) and the barrier's flag round trip; the
    fraction, the 36 blocks the kernel uses (too few to saturate NVLink at these sizes).
    """

    base_s: float
    per_peer_s: float
    two_shot_extra_s: float
    nvlink_fraction: float
    nvlink_bytes_per_s: float  # the one-way NVLink bandwidth per GPU of the measured node

    @classmethod
    def fitted(cls, rows=CUSTOM_ALL_REDUCE_MEASURED, nvlink_bytes_per_s=450e9) -> CustomAllReduceFit:
        """Least squares of the relative error over ``rows`` (t, bytes, seconds): the model is linear in its four
        constants."""
        t, size, seconds = (np.array(column, dtype=float) for column in zip(*rows, strict=True))
        one = _one_shot(_MEASURED_ONE_SHOT_BELOW, t, size)
        design = np.column_stack([np.ones_like(t), t - 1, ~one, _read_bytes(t, size, one)])
        # relative errors weigh alike: a 1 µs miss matters at 4 µs, not at 34 µs
        (base, per_peer, extra, per_byte), *_ = np.linalg.lstsq(design / seconds[:, None], np.ones_like(t), rcond=None)
        return cls(float(base), float(per_peer), float(extra), float(1 / per_byte / nvlink_bytes_per_s),
                   float(nvlink_bytes_per_s))  # fmt: skip

    def time_s(self, tensor_parallel, payload_bytes, one_shot, nvlink_bytes_per_s=None):
        """Seconds of one call: ``one_shot`` (bool or array) picks the kernel; ``nvlink_bytes_per_s`` the node's
        one-way NVLink per GPU (default: the measured node's)."""
        link = self.nvlink_bytes_per_s if nvlink_bytes_per_s is None else nvlink_bytes_per_s
        t = np.asarray(tensor_parallel, dtype=float)
        fixed = self.base_s + (t - 1) * self.per_peer_s + np.where(one_shot, 0.0, self.two_shot_extra_s)
        return _check.as_result(fixed + _read_bytes(t, payload_bytes, one_shot) / (self.nvlink_fraction * link))


CUSTOM_ALL_REDUCE_FIT = CustomAllReduceFit.fitted()


def _all_reduce_terms(cluster: Cluster, tensor_parallel: int, payload_bytes, engine: str, custom: bool):
    """(fixed, transfer) seconds of one tensor-parallel all-reduce of ``payload_bytes`` (an array): the engine's
    custom kernel where it runs (``custom``, inside a node, a t it supports, below its buffer), else NCCL as
    ``replica`` times it (the launch floor and NCCL's latency fixed, the rest transfer). 0 for an empty payload."""
    spec = ENGINES[engine]
    size = np.asarray(payload_bytes, dtype=float)
    call = group_collective("all_reduce", cluster, tensor_parallel, 1, size)
    fixed = np.asarray(call.launch_floor_s + call.latency_s, dtype=float)
    transfer = np.asarray(call.time_s, dtype=float) - fixed
    t = tensor_parallel
    in_node = t <= cluster.devices_per_node and t in spec.custom_all_reduce_sizes and cluster.accelerator.architecture
    if custom and t > 1 and in_node:
        runs = (size > 0) & (size < spec.custom_all_reduce_max_bytes)
        one_shot = size < spec.one_shot_below_bytes(t)
        total = CUSTOM_ALL_REDUCE_FIT.time_s(t, size, one_shot, cluster.intra_bandwidth_bytes_per_s)
        floor = CUSTOM_ALL_REDUCE_FIT.time_s(t, 0.0, one_shot, cluster.intra_bandwidth_bytes_per_s)
        fixed, transfer = np.where(runs, floor, fixed), np.where(runs, total - floor, transfer)
    return fixed, transfer


def custom_all_reduce_time_s(cluster: Cluster, tensor_parallel, payload_bytes, engine="vllm"):
    """One tensor-parallel all-reduce as ``engine`` runs it inside a node: its one-shot or two-shot kernel
    (``CUSTOM_ALL_REDUCE_FIT``, at the node's NVLink bandwidth) below its buffer's size, else NCCL
    (``budget.group_collective``: LL with the launch floor); NCCL too across nodes or for a t the kernel lacks.
    ``payload_bytes`` may be an array.

    8 ranks of a DGX H100 all-reducing one decode token of Llama 3.1 70B (16 KiB): the custom kernel against NCCL's
    LL ring:

    >>> from course_lib.budget import group_collective
    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.units import format_time
    >>> nccl = group_collective("all_reduce", DGX_H100, 8, 1, 16384).time_s
    >>> format_time(custom_all_reduce_time_s(DGX_H100, 8, 16384)), format_time(nccl)
    ('5.88 µs', '20 µs')
    """
    _check.choice("engine", engine, tuple(ENGINES))
    t = int(_check.count("tensor_parallel", tensor_parallel))
    size = _check.nonnegative("payload_bytes", payload_bytes)
    fixed, transfer = _all_reduce_terms(cluster, t, size, engine, custom=True)
    return _check.as_result(fixed + transfer)


# ---- efficiencies ---------------------------------------------------------------------------------------------------

# FP8 GEMMs of M = 4096 rows measured on an H800 SXM5 (the H100's tensor cores and FP8 peak, 1979 TFLOP/s dense):
# deepseek-ai/DeepGEMM@55ab91f7 README.md, "Normal GEMMs for dense models" (NVCC 12.8). Rows: (N, K, TFLOP/s). The
# efficiency falls with the depth K each output tile accumulates over (K = 512: 30 % of peak; K = 16384: 69 %).
GEMM_M4096_MEASURED = (
    (2112, 7168, 1058e12),
    (24576, 1536, 990e12),
    (32768, 512, 590e12),
    (7168, 16384, 1358e12),
    (4096, 7168, 1304e12),
    (7168, 2048, 1025e12),
)
_GEMM_MEASURED_PEAK = 1979e12


def fit_gemm_depth(rows=GEMM_M4096_MEASURED, peak_flops_per_s=_GEMM_MEASURED_PEAK) -> tuple[float, float]:
    """(cap, half_depth): the efficiency of a GEMM of depth K is cap · K / (K + half_depth), fitted by least squares
    of the relative error on ``rows`` (1/efficiency is linear in 1/K). A fit: each output tile pays a fixed
    prologue and epilogue (loading its first operands, writing its result) worth ``half_depth`` of accumulation.

    >>> cap, half = fit_gemm_depth()
    >>> round(cap, 3), round(half)
    (0.683, 645)
    """
    _, depth, flops = (np.array(column, dtype=float) for column in zip(*rows, strict=True))
    efficiency = flops / peak_flops_per_s
    design = np.column_stack([np.ones_like(depth), 1 / depth]) * efficiency[:, None]
    (inverse_cap, slope), *_ = np.linalg.lstsq(design, np.ones_like(depth), rcond=None)
    return float(1 / inverse_cap), float(slope / inverse_cap)


GEMM_EFFICIENCY_CAP, GEMM_HALF_DEPTH = fit_gemm_depth()
# The same kernels at M = 64 rows, memory-bound (the weights dominate the bytes): the HBM bandwidth a weight-streaming
# multiply reaches on Hopper, GB/s, the same six shapes (DeepGEMM@55ab91f7 README.md, "Memory bandwidth" column),
# against the H800 SXM5's datasheet 3.35 TB/s (the H100 SXM's HBM3). Their median, 2.39 TB/s, is 71 % of it.
GEMM_M64_BANDWIDTH_MEASURED = (1688e9, 2455e9, 2143e9, 2668e9, 2320e9, 2470e9)
DECODE_HBM_BANDWIDTH_FRACTION = float(np.median(GEMM_M64_BANDWIDTH_MEASURED) / 3.35e12)


def _gemm_depths(model: TransformerModel, tensor_parallel: int, expert_parallel: int) -> tuple:
    """((weights a token multiplies, the depth K each is accumulated over on a device), ...) for one token through
    the model: attention's QKV (K = h) and output (K = h/t) projections, each MLP's up (K = h) and down (K = f/t; a
    whole expert's f_e under expert parallelism) projections, the router and the output head (K = h)."""
    assert model.kv_heads is not None and model.ffn_hidden is not None and model.moe_ffn_hidden is not None
    h, t = model.hidden, tensor_parallel
    kv_width = model.kv_heads * model.head_dim
    up = 2 if model.gated_mlp else 1
    dense_layers = model.layers - model.moe_layers
    fe = model.moe_ffn_hidden
    visited = model.experts_per_token + model.shared_experts
    expert_depth = fe if expert_parallel > 1 else fe / t
    return (
        (model.layers * h * (h + 2 * kv_width), h),
        (model.layers * h * h, h / t),
        (dense_layers * up * h * model.ffn_hidden, h),
        (dense_layers * h * model.ffn_hidden, model.ffn_hidden / t),
        (model.moe_layers * visited * up * h * fe, h),
        (model.moe_layers * visited * h * fe, expert_depth),
        (model.moe_layers * h * model.experts, h),
        (model.vocab * h, h),
    )


@dataclass(frozen=True)
class EngineEfficiency:
    """What an engine reaches of the hardware, and which all-reduce it runs inside a node.

    ``hbm_bandwidth_fraction``: the share of the datasheet's HBM bandwidth decode's weight and KV reads reach;
    ``gemm_efficiency``: the share of the precision's peak a deep multiply reaches (and attention); a multiply of
    depth K per device reaches ``gemm_efficiency`` · K / (K + ``gemm_half_depth``) (0: every depth alike), so tensor
    parallelism, which makes the output and down projections shallower (K/t), lowers it; ``all_reduce``:
    "custom" (the engine's one-shot/two-shot kernel, ``custom_all_reduce_time_s``) or "nccl" (NCCL everywhere);
    ``iteration_overhead_s``: a fixed cost per iteration (the engine's scheduling, sampling and launches between
    forward passes). ``name`` says where the numbers come from.
    """

    name: str
    hbm_bandwidth_fraction: float
    gemm_efficiency: float
    all_reduce: str = "custom"
    iteration_overhead_s: float = 0.0
    gemm_half_depth: float = 0.0

    def __post_init__(self):
        _check.fraction("hbm_bandwidth_fraction", self.hbm_bandwidth_fraction)
        _check.fraction("gemm_efficiency", self.gemm_efficiency)
        _check.nonnegative("gemm_half_depth", self.gemm_half_depth)
        _check.choice("all_reduce", self.all_reduce, ("custom", "nccl"))
        _check.nonnegative("iteration_overhead_s", self.iteration_overhead_s)


# The model before issue 38: every byte at the datasheet's bandwidth, half of peak (``DECODE_COMPUTE_EFFICIENCY``),
# NCCL's all-reduce, nothing between iterations. ``replica.decode_step`` is this case.
UNCALIBRATED = EngineEfficiency("uncalibrated (datasheet bandwidth, half of peak, NCCL)", 1.0,
                                DECODE_COMPUTE_EFFICIENCY, "nccl", 0.0)  # fmt: skip
# The default: decode's HBM fraction, the GEMMs' fall with depth and the custom all-reduce from their measurements;
# two constants fitted on the published Llama 3.1 8B rows (``serving.validation.fit_serving_efficiency``, which
# reproduces them): the deep GEMMs' share of peak, 0.60 (below the 0.68 DeepGEMM's kernels alone reach: it absorbs
# the layer's other kernels, norms, rotary embeddings, activations and quantization), and 1.4 ms per iteration (the
# engine's scheduling, sampling and launches between forward passes). Fits, not physics.
DEFAULT_EFFICIENCY = EngineEfficiency(
    "measured (DeepGEMM, the custom all-reduce) and fitted on Llama 3.1 8B's published rows",
    hbm_bandwidth_fraction=round(DECODE_HBM_BANDWIDTH_FRACTION, 3),
    gemm_efficiency=0.60,
    all_reduce="custom",
    iteration_overhead_s=1.4e-3,
    gemm_half_depth=round(GEMM_HALF_DEPTH),
)


# ---- one iteration --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class IterationBreakdown(DecodeStep):
    """Where one engine iteration's time goes: ``DecodeStep``'s fields for the iteration's rows (``sequences`` holds
    the decoding sequences; the weight multiplies cover prefill tokens too), plus the MoE layers' expert all-to-alls
    per stage (``expert_all_to_all_s``) and the fixed ``overhead_s``."""

    expert_all_to_all_s: _check.FloatOrArray
    overhead_s: _check.FloatOrArray

    @property
    def stage_s(self):
        """One stage's busy time: both rooflines, its all-reduces and its expert all-to-alls."""
        return _check.as_result(super().stage_s + self.expert_all_to_all_s)

    @property
    def time_s(self):
        """The iteration: the p stages in turn, the p − 1 hops, and the fixed overhead."""
        return _check.as_result(self.time_per_output_token_s + self.overhead_s)


def expected_experts_visited(experts, experts_per_token, tokens):
    """The distinct experts b tokens visit in one MoE layer, in expectation, each routed to k of E uniformly:
    E·(1 − (1 − k/E)^b). Each expert is among a token's k with probability k/E, independently across tokens, so it
    is missed by all b with probability (1 − k/E)^b (the occupancy expectation; the same formula as the "expected
    number of activated experts" of MoE inference studies, e.g. Huang et al. 2024, "Toward Efficient Inference for
    Mixture of Experts", NeurIPS, §3). Real routers are skewed, which visits fewer.

    >>> round(float(expected_experts_visited(8, 2, 1)), 3), round(float(expected_experts_visited(8, 2, 16)), 3)
    (2.0, 7.92)
    """
    e = _check.count("experts", experts)
    k = _check.count("experts_per_token", experts_per_token)
    if np.any(np.asarray(k) > np.asarray(e)):
        raise ValueError(f"experts_per_token must be ≤ experts ({experts}), got {experts_per_token}")
    b = _check.nonnegative("tokens", tokens)
    return _check.as_result(e * (1.0 - (1.0 - k / e) ** b))


def _dense_or_moe(model: TransformerModel):
    """(one routed expert's weights, the routed experts' weights overall) — (0, 0) for a dense model."""
    if model.experts == 1:
        return 0.0, 0.0
    routed = float(model.routed_expert_params)
    return routed / (model.moe_layers * model.experts), routed


@dataclass(frozen=True, eq=False)
class EngineCost:
    """One engine iteration's time on a replica (``iteration_time`` builds it): call it with (prefill_tokens,
    prefill_attended_tokens, decode_sequences, decode_context_tokens) — scalars or arrays — for seconds, or
    ``breakdown`` with the same for an ``IterationBreakdown``. The per-row and per-token rates are computed once
    here; the payload-dependent collectives are tabulated per row count up to ``rows_tabulated`` (computed directly
    above it)."""

    model: TransformerModel
    cluster: Cluster
    tensor_parallel: int
    pipeline_parallel: int
    weights: str
    kv_cache: str
    efficiency: EngineEfficiency
    engine: str
    expert_parallel: int
    rows_tabulated: int = 16384
    _rates: dict = field(init=False, repr=False)

    def __post_init__(self):
        model, cluster, t, p = self.model, self.cluster, self.tensor_parallel, self.pipeline_parallel
        weight_precision, kv_precision = check_precisions(cluster.accelerator, self.weights, self.kv_cache)
        _check.choice("engine", self.engine, tuple(ENGINES))
        e = _check.count("expert_parallel", self.expert_parallel)
        if e not in (1, t) or (e > 1 and (model.experts == 1 or model.experts % e)):
            raise ValueError(
                f"expert_parallel must be 1 or tensor_parallel ({t}) and divide the experts ({model.experts}) of a "
                f"mixture of experts; got {e}"
            )
        accelerator = cluster.accelerator
        eff = self.efficiency
        bandwidth = accelerator.hbm_bandwidth_bytes_per_s * eff.hbm_bandwidth_fraction
        depths = _gemm_depths(model, t, e)
        weights_per_token = sum(w for w, _ in depths)
        slowdown = sum(w * (k + eff.gemm_half_depth) / k for w, k in depths) / weights_per_token
        matmul_peak = accelerator.peak(weight_precision.arithmetic) * eff.gemm_efficiency / slowdown
        attention_peak = accelerator.peak("bf16") * eff.gemm_efficiency  # FlashAttention runs in 16 bits
        expert, routed = _dense_or_moe(model)
        read = serving_weight_bytes_per_device(model, t, p, weights=self.weights)[1]
        routed_bytes = weight_precision.bytes_per_element * routed / (t * p)
        active_matmul = matmul_params(model) + model.active_params - model.params  # k of the E experts
        kv_token = kv_cache_bytes_per_device(
            model.layers, model.kv_heads, model.head_dim, 1, 1, t, p, kv_precision.bytes_per_element
        )
        rates = {
            "dense_read_s": (read - routed_bytes) / bandwidth,
            # the visited experts' bytes per device: one expert's share on this device × the MoE layers it holds
            "expert_read_s": weight_precision.bytes_per_element * expert * model.moe_layers / (t * p) / bandwidth,
            "matmul_s_per_row": 2.0 * active_matmul / (t * p) / matmul_peak,
            "kv_s_per_token": kv_token / bandwidth,
            "attention_s_per_token": 4.0 * model.layers * model.hidden / (t * p) / attention_peak,
        }
        rows = np.arange(self.rows_tabulated + 1)
        latency, bandwidth_term, hops, a2a = self._collectives(rows)
        rates.update(latency=latency, bandwidth=bandwidth_term, hops=hops, a2a=a2a)
        object.__setattr__(self, "_rates", rates)

    def _collectives(self, rows):
        """(all-reduce latency, all-reduce bandwidth, pipeline hops, expert all-to-alls) seconds for arrays of rows."""
        model, cluster, t, p = self.model, self.cluster, self.tensor_parallel, self.pipeline_parallel
        payload = ACTIVATION_BYTES * rows * model.hidden
        moe = model.experts > 1 and self.expert_parallel > 1
        # With expert parallelism each MoE layer's second all-reduce becomes a dispatch and a combine all-to-all.
        calls = (2 * model.layers - (model.moe_layers if moe else 0)) / p
        latency, bandwidth = _all_reduce_terms(cluster, t, payload, self.engine, self.efficiency.all_reduce == "custom")
        idle = rows == 0
        latency, bandwidth = np.where(idle, 0.0, calls * latency), np.where(idle, 0.0, calls * bandwidth)
        hops = (p - 1) * group_collective_time("send_recv", cluster, p, t, payload.astype(float) / t) if p > 1 else 0
        a2a = 0.0
        if moe:
            dispatch = expert_dispatch_bytes(model, rows.astype(float), t)
            a2a = 2 * model.moe_layers / p * group_collective_time("all_to_all", cluster, t, 1, dispatch)
        as_array = lambda x: np.broadcast_to(np.asarray(x, dtype=float), rows.shape)  # noqa: E731
        return (
            as_array(latency),
            as_array(bandwidth),
            as_array(np.where(idle, 0.0, hops)),
            as_array(np.where(idle, 0.0, a2a)),
        )

    def _lookup(self, rows):
        """The tabulated collectives at ``rows`` (int array), computed directly beyond the table."""
        r = self._rates
        if np.all(rows <= self.rows_tabulated):
            return r["latency"][rows], r["bandwidth"][rows], r["hops"][rows], r["a2a"][rows]
        flat = np.ravel(rows)
        return tuple(np.reshape(x, np.shape(rows)) for x in self._collectives(flat))

    def breakdown(self, prefill_tokens, prefill_attended_tokens, decode_sequences, decode_context_tokens):
        """The iteration's ``IterationBreakdown`` (arrays broadcast)."""
        prefill = _check.count("prefill_tokens", prefill_tokens, minimum=0)
        attended = _check.nonnegative("prefill_attended_tokens", prefill_attended_tokens)
        decode = _check.count("decode_sequences", decode_sequences, minimum=0)
        context = _check.nonnegative("decode_context_tokens", decode_context_tokens)
        r = self._rates
        rows = np.asarray(prefill) + np.asarray(decode)
        busy = rows > 0
        model = self.model
        visited = 0.0
        if model.experts > 1:
            visited = expected_experts_visited(model.experts, model.experts_per_token, rows)
        weight_read = np.where(busy, r["dense_read_s"] + r["expert_read_s"] * visited, 0.0)
        latency, bandwidth, hops, a2a = self._lookup(rows)
        return IterationBreakdown(
            decode,
            self.tensor_parallel,
            self.pipeline_parallel,
            1,
            _check.as_result(weight_read),
            _check.as_result(rows * r["matmul_s_per_row"]),
            _check.as_result(np.asarray(context) * r["kv_s_per_token"]),
            _check.as_result((np.asarray(attended) + np.asarray(context)) * r["attention_s_per_token"]),
            _check.as_result(latency),
            _check.as_result(bandwidth),
            _check.as_result(hops),
            _check.as_result(a2a),
            _check.as_result(np.where(busy, self.efficiency.iteration_overhead_s, 0.0)),
        )

    def __call__(self, prefill_tokens, prefill_attended_tokens, decode_sequences, decode_context_tokens) -> float:
        """Seconds of one iteration (0 for an empty one); an array where the arguments are (the scheduler's
        ``IterationTime`` protocol, which types the scalar case)."""
        step = self.breakdown(prefill_tokens, prefill_attended_tokens, decode_sequences, decode_context_tokens)
        return step.time_s  # type: ignore[return-value]


def iteration_time(
    model: TransformerModel,
    cluster: Cluster,
    tensor_parallel,
    pipeline_parallel=1,
    *,
    weights="bf16",
    kv_cache="bf16",
    efficiency: EngineEfficiency = DEFAULT_EFFICIENCY,
    engine="vllm",
    expert_parallel=1,
) -> EngineCost:
    """One engine iteration's cost on a replica of t·p adjacent devices of ``cluster``: an ``EngineCost``.

    ``weights`` ("bf16", "fp8", "int4") and ``kv_cache`` ("bf16", "fp8") name the precisions (``WEIGHT_PRECISIONS``;
    a precision the accelerator lacks raises ``ValueError``); ``efficiency`` what the engine reaches
    (``DEFAULT_EFFICIENCY``, fitted; ``UNCALIBRATED``, the model before); ``engine`` ("vllm", "tensorrt-llm") whose
    all-reduce runs inside a node; ``expert_parallel`` 1 (experts split over the t ranks like the MLP) or t (each rank
    holds E/t whole experts; dispatch and combine all-to-alls replace the MoE layer's all-reduce).

    Llama 3.1 70B in FP8 on 8 H100s: one token for 64 sequences of 2048 cached tokens, and the same batch with a
    2048-token prefill chunk beside it:

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import LLAMA3_70B
    >>> from course_lib.units import format_time
    >>> cost = iteration_time(LLAMA3_70B, DGX_H100, 8, weights="fp8", kv_cache="fp8")
    >>> format_time(cost(0, 0, 64, 64 * 2048)), format_time(cost(2048, 2048 * 2049 // 2, 64, 64 * 2048))
    ('9.84 ms', '59.3 ms')
    >>> step = cost.breakdown(0, 0, 64, 64 * 2048)
    >>> all_reduces = step.all_reduce_latency_s + step.all_reduce_bandwidth_s
    >>> [format_time(x) for x in (step.weight_read_s, step.kv_read_s, all_reduces, step.overhead_s)]
    ['3.69 ms', '1.12 ms', '3.62 ms', '1.4 ms']

    The decode step reads 8.8 GB of FP8 weights per GPU at 71 % of 3.35 TB/s and the batch's cache; its 160
    all-reduces of 1 MiB run two-shot (vLLM's kernel above 256 KiB at t = 8). The prefill chunk's 2112 rows make
    the multiplies compute-bound and its all-reduces (35 MB, above the kernel's 8 MiB) NCCL's.
    """
    t, p = _check_partition(model, tensor_parallel, pipeline_parallel)
    _check_cluster(cluster, t, p)
    if not isinstance(efficiency, EngineEfficiency):
        raise ValueError(f"efficiency must be a serving.EngineEfficiency, got {efficiency!r}")
    return _engine_cost(model, cluster, int(t), int(p), weights, kv_cache, efficiency, engine, expert_parallel)


# The scheduler and the lab ask for the same few replicas again and again; an EngineCost is frozen, so it is shared.
@functools.lru_cache(maxsize=64)
def _engine_cost(model, cluster, t, p, weights, kv_cache, efficiency, engine, expert_parallel) -> EngineCost:
    return EngineCost(model, cluster, t, p, weights, kv_cache, efficiency, engine, expert_parallel)


# ---- the paged KV cache ---------------------------------------------------------------------------------------------


def kv_cache_blocks(
    model: TransformerModel,
    accelerator: Accelerator,
    tensor_parallel,
    pipeline_parallel=1,
    *,
    weights="bf16",
    kv_cache="bf16",
    block_size_tokens=16,
    gpu_memory_utilization=0.9,
    free_gpu_memory_fraction=None,
    max_num_batched_tokens=8192,
) -> int:
    """The KV blocks of ``block_size_tokens`` tokens one replica's devices hold (each device its layers' and heads'
    share of every block), in the memory left after the weights and the activations of one forward pass over
    ``max_num_batched_tokens`` rows (the profile run vLLM makes before it sizes the cache).

    vLLM (default): the blocks fill ``gpu_memory_utilization`` × the device's memory (0.9, ``ENGINES["vllm"]``; the
    memory as the device reports it, 80 GiB for a marketed "80 GB" part),
    less the weights and activations. TensorRT-LLM: pass ``free_gpu_memory_fraction`` (0.9 in its KvCacheConfig) —
    that share of what the weights and activations leave — and its ``block_size_tokens`` (32). The block count is
    the same on every device of the replica (its t·p devices split each block evenly).

    >>> from course_lib.hardware import H100
    >>> from course_lib.parallelism import LLAMA3_70B
    >>> kv_cache_blocks(LLAMA3_70B, H100, 8), kv_cache_blocks(LLAMA3_70B, H100, 8, kv_cache="fp8")
    (89775, 179550)

    Per GPU: 77.3 GB (0.9 × 80 GiB) − 17.6 GB of bf16 weights − 0.84 GB of activations for 8192 rows leaves 58.9 GB;
    a block of 16 tokens holds 80 layers × K and V × 1 KV head × 128 × 16 × 2 bytes = 655 kB of it.
    """
    t, p = (int(x) for x in _check_partition(model, tensor_parallel, pipeline_parallel))
    _, kv_precision = check_precisions(accelerator, weights, kv_cache)
    block = _check.count("block_size_tokens", block_size_tokens)
    tokens = _check.count("max_num_batched_tokens", max_num_batched_tokens)
    stored, _ = serving_weight_bytes_per_device(model, t, p, weights=weights)
    activations = decode_activation_bytes(tokens, model.hidden, model.ffn_hidden, model.vocab, t, model.gated_mlp,
                                          ACTIVATION_BYTES)  # fmt: skip
    # What the engine's allocator sees: a marketed "80 GB" part reports 80 GiB (81920 MiB, ``hardware``'s note), and
    # both engines take their share of that (torch.cuda.mem_get_info's total; cudaMemGetInfo's free).
    capacity = accelerator.hbm_capacity_bytes / GB * GiB
    if free_gpu_memory_fraction is None:
        share = _check.fraction("gpu_memory_utilization", gpu_memory_utilization)
        free = share * capacity - stored - activations
    else:
        share = _check.fraction("free_gpu_memory_fraction", free_gpu_memory_fraction)
        free = share * (capacity - stored - activations)
    block_bytes = kv_cache_bytes_per_device(
        model.layers, model.kv_heads, model.head_dim, block, 1, t, p, kv_precision.bytes_per_element
    )
    blocks = int(np.floor(free / block_bytes)) if free > 0 else 0
    if blocks < 1:
        raise ValueError(
            f"model must fit with room for one KV block: {model.name} with weights={weights!r} on "
            f"tensor_parallel={t}, pipeline_parallel={p} leaves {free / 1e9:.2f} GB of {accelerator.name}'s "
            f"{capacity / GiB:.0f} GiB; raise tensor_parallel or pipeline_parallel"
        )
    return blocks


def blocks_per_sequence(tokens, block_size_tokens=16):
    """Blocks a sequence of n tokens holds: ⌈n / block size⌉ (its last block partly empty).

    >>> blocks_per_sequence(16), blocks_per_sequence(17), blocks_per_sequence(2048 + 128)
    (1, 2, 136)
    """
    n = _check.count("tokens", tokens)
    block = _check.count("block_size_tokens", block_size_tokens)
    result = -(-np.asarray(n) // block)
    return int(result) if np.ndim(result) == 0 else result


def max_sequences_in_blocks(blocks, tokens, block_size_tokens=16):
    """Sequences of n tokens the blocks hold at once: ⌊blocks / ⌈n / block size⌉⌋.

    >>> max_sequences_in_blocks(1280, 2048), max_sequences_in_blocks(1280, 2049)   # 128 blocks, then 129
    (10, 9)
    """
    total = _check.count("blocks", blocks, minimum=0)
    result = np.asarray(total) // blocks_per_sequence(tokens, block_size_tokens)
    return int(result) if np.ndim(result) == 0 else result
