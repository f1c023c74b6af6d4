"""The serving model against published serving benchmarks: each row replayed as its engine ran it, two constants
fitted on some rows, the rest judged (issue 38's targets).

Each row of ``serving.published`` (NVIDIA NIM's concurrency sweeps, TensorRT-LLM's offline throughput tables and
its online table) is replayed on the engine's replica (its model, GPUs, t, p and precisions) with
``engine.iteration_time``:

- **offline maximum throughput** (every request queued at once): the engine full of sequences — as many as its KV
  blocks hold for the whole request (TensorRT-LLM's default capacity policy reserves them, ``GUARANTEED_NO_EVICT``),
  at most its largest batch — in steady state (``steady_state``);
- **concurrency rows** (N users in a closed loop): the same steady state with N sequences: the inter-token latency
  is the time a sequence waits between its tokens, the throughput N·output / (TTFT + (output − 1)·ITL);
- **TTFT at concurrency 1**: one prompt's prefill on an idle engine, in chunks of the engine's token budget.

The steady state spreads the prompts' prefill over the iterations (what chunked prefill and in-flight batching do):
a cycle in which all N sequences are replaced runs N·I prefill tokens and N·O decode rows in max(O, ⌈N·(I + O) /
budget⌉) iterations of equal mix, the decoding sequences at their mean context I + O/2. Queueing past saturation is
the scheduler's (``serving.scheduler``).

Two constants are fitted, on the fitted rows only (``FIT_ROWS``: Llama 3.1 8B's): ``EngineEfficiency.gemm_efficiency``
(the share of peak a deep multiply reaches inside a whole layer: it absorbs the layer's other kernels) and
``iteration_overhead_s`` (the engine's fixed cost per iteration: scheduling, sampling, the host's launches).
Everything else is measured (decode's HBM fraction and the GEMMs' fall with depth from DeepGEMM's kernels,
``engine.DECODE_HBM_BANDWIDTH_FRACTION`` and ``engine.fit_gemm_depth``; ``engine.CUSTOM_ALL_REDUCE_FIT``) or cited
(the engines' defaults).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .. import hardware
from ..units import format_percent, format_time
from .engine import (
    DEFAULT_EFFICIENCY,
    ENGINES,
    EngineCost,
    EngineEfficiency,
    iteration_time,
    kv_cache_blocks,
    max_sequences_in_blocks,
)
from .published import PUBLISHED_SERVING_GPUS, PUBLISHED_SERVING_MODELS, PublishedServingRow, load_published_serving
from .scheduler import knee_concurrency, simulate_engine

__all__ = [
    "SteadyState",
    "steady_state",
    "time_to_first_token_s",
    "batch_latency_s",
    "ServingReplay",
    "replay_published_serving",
    "FIT_ROWS",
    "SERVING_FIT_GRID",
    "fit_serving_efficiency",
    "SERVING_TARGETS",
    "serving_figures",
    "SaturationSweep",
    "saturation_sweeps",
    "SATURATION_TARGET",
    "serving_report",
]

# The engines the published rows name, as ``engine.ENGINES``: NIM's FP8 profiles on H100 run TensorRT-LLM (NIM for
# LLMs, "Supported Models": its optimized profiles are TensorRT-LLM engines, named tensorrt_llm-h100-fp8-tp2-…).
_ENGINE_OF = {"nim": "tensorrt-llm", "tensorrt-llm": "tensorrt-llm", "vllm": "vllm"}
# One DGX node of each published GPU (the rows use at most 8).
_NODE_OF = {hardware.A100.name: hardware.DGX_A100, hardware.H100.name: hardware.DGX_H100,
            hardware.H200.name: hardware.DGX_H200}  # fmt: skip
# FP16 runs as bf16 (the same bytes and peak). A KV cache the source leaves unstated is the weights' precision: NVIDIA's
# ModelOpt FP8 checkpoints quantize it too (hf_quant_config.json: "kv_cache_quant_algo": "FP8").
_PRECISION = {"bf16": "bf16", "fp16": "bf16", "fp8": "fp8", "int4": "int4"}
# TensorRT-LLM's token budget per iteration (BuildConfig max_num_tokens, 8192).
MAX_NUM_TOKENS = 8192


@dataclass(frozen=True)
class SteadyState:
    """An engine's steady state with ``sequences`` requests of I prompt and O output tokens in flight (seconds,
    tokens/s): ``iteration_s`` one iteration, ``iterations_per_cycle`` (while all N are replaced once),
    ``itl_s`` the time between a sequence's tokens, ``output_tokens_per_s`` the engine's."""

    sequences: int
    iteration_s: float
    iterations_per_cycle: float
    itl_s: float
    output_tokens_per_s: float


def steady_state(cost: EngineCost, sequences, input_tokens, output_tokens, max_num_batched_tokens=MAX_NUM_TOKENS):
    """The steady state of ``sequences`` requests in flight (see the module's docstring): one cycle runs N·I
    prefill tokens and N·O decode rows in max(O, ⌈N·(I + O) / budget⌉) equal iterations.

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import LLAMA3_8B
    >>> from course_lib.serving import iteration_time
    >>> from course_lib.units import format_time
    >>> state = steady_state(iteration_time(LLAMA3_8B, DGX_H100, 1, weights="fp8"), 64, 1000, 1000)
    >>> state.iterations_per_cycle, format_time(state.itl_s), round(state.output_tokens_per_s)
    (1000.0, '10 ms', 6381)
    """
    n, i, o = int(sequences), int(input_tokens), int(output_tokens)
    iterations = float(max(o, -(-n * (i + o) // int(max_num_batched_tokens))))
    prefill = n * i / iterations
    decode = n * o / iterations
    attended = n * i * (i + 1) / 2 / iterations
    context = decode * (i + o / 2)
    # the iteration's mix, its counts rounded (a cost takes whole tokens)
    seconds = float(cost(round(prefill), attended, max(round(decode), 1), context))
    return SteadyState(n, seconds, iterations, seconds * iterations / o, n * o / (seconds * iterations))


def time_to_first_token_s(cost: EngineCost, input_tokens, max_num_batched_tokens=MAX_NUM_TOKENS) -> float:
    """One prompt's prefill on an idle engine, in chunks of the token budget (each chunk attends to all before it).

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import LLAMA3_70B
    >>> from course_lib.serving import iteration_time
    >>> from course_lib.units import format_time
    >>> format_time(time_to_first_token_s(iteration_time(LLAMA3_70B, DGX_H100, 8), 20000))
    '957 ms'
    """
    i, budget = int(input_tokens), int(max_num_batched_tokens)
    starts = np.arange(0, i, budget)
    sizes = np.minimum(budget, i - starts)
    return float(np.sum(cost(sizes, sizes * starts + sizes * (sizes + 1) // 2, 0, 0)))


def batch_latency_s(cost: EngineCost, batch, input_tokens, output_tokens) -> float:
    """A fixed batch run to its end (vLLM's latency benchmark): the batch's prefill in one iteration, then
    output − 1 decode iterations of the whole batch, its context growing by one token a step.

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import LLAMA3_8B
    >>> from course_lib.serving import iteration_time
    >>> from course_lib.units import format_time
    >>> format_time(batch_latency_s(iteration_time(LLAMA3_8B, DGX_H100, 1), 8, 32, 128))
    '990 ms'
    """
    b, i, o = int(batch), int(input_tokens), int(output_tokens)
    steps = np.arange(1, o)
    decode = cost(0, 0, b, b * (i + steps))
    return float(cost(b * i, b * i * (i + 1) // 2, 0, 0) + np.sum(decode))


def _replica(row: PublishedServingRow, efficiency: EngineEfficiency):
    """((cost, KV blocks, the row's ``Engine`` preset), "") of a row's replica, or (None, why it cannot be replayed)."""
    model = PUBLISHED_SERVING_MODELS.get(row.model)
    accelerator = PUBLISHED_SERVING_GPUS.get(row.gpu)
    if model is None or accelerator is None:
        return None, f"no preset for {row.model if model is None else row.gpu}"
    if row.weights not in _PRECISION:
        return None, f"weights {row.weights} not modelled"
    weights = _PRECISION[row.weights]
    kv = _PRECISION.get(row.kv_cache or row.weights, "bf16")
    if kv == "int4":
        kv = "bf16"
    name = _ENGINE_OF[row.engine]
    spec = ENGINES[name]
    cluster = replace(_NODE_OF[accelerator.name], nodes=max(1, -(-row.gpus // 8)))
    t, p = row.tensor_parallel, row.pipeline_parallel
    try:
        cost = iteration_time(model, cluster, t, p, weights=weights, kv_cache=kv, efficiency=efficiency, engine=name)
        total = spec.memory_of == "total"
        blocks = kv_cache_blocks(model, accelerator, t, p, weights=weights, kv_cache=kv,
                                 block_size_tokens=spec.block_size_tokens,
                                 gpu_memory_utilization=spec.memory_fraction if total else 0.9,
                                 free_gpu_memory_fraction=None if total else spec.memory_fraction)  # fmt: skip
    except ValueError as error:
        return None, str(error).split(":")[0]
    return (cost, blocks, spec), ""


# What a row is judged on: ("itl", "ttft", "throughput") and which rows give each; "batch_latency" (vLLM's fixed batch
# of 8 run to its end) is reported beside them, without a target of its own.
KINDS = ("itl", "ttft", "throughput", "batch_latency")


@dataclass(frozen=True, eq=False)
class ServingReplay:
    """Predicted against measured for every (row, kind) the rows give: ``kind`` ("itl": concurrency rows' inter-token
    latency; "ttft": time to first token at concurrency 1; "throughput": offline maximum output tokens/s),
    ``measured``, ``predicted`` (NaN where refused, ``reason`` says why), ``row`` (index into ``rows``),
    ``fitted`` (True for the rows the constants were fitted on)."""

    rows: tuple
    efficiency: EngineEfficiency
    kind: np.ndarray
    row: np.ndarray
    measured: np.ndarray
    predicted: np.ndarray
    reason: np.ndarray
    fitted: np.ndarray

    @property
    def error(self) -> np.ndarray:
        """predicted / measured − 1."""
        return self.predicted / self.measured - 1

    def median_abs_error(self, kind: str, held_out: bool = True) -> tuple[float, int]:
        """(median |error|, count) over the replayed (row, kind) pairs of ``kind``, held out or fitted."""
        chosen = (self.kind == kind) & (self.reason == "") & (self.fitted != held_out)
        return (float(np.median(np.abs(self.error[chosen]))) if chosen.any() else float("nan")), int(chosen.sum())


def _fitted(row: PublishedServingRow) -> bool:
    return any(all(getattr(row, k) == v for k, v in rule.items()) for rule in FIT_ROWS)


def replay_published_serving(rows=None, efficiency: EngineEfficiency = DEFAULT_EFFICIENCY) -> ServingReplay:
    """Replay every published row through ``engine.iteration_time`` at ``efficiency`` (see the module's docstring).

    >>> replay = replay_published_serving()
    >>> sorted(set(replay.kind.tolist()))
    ['batch_latency', 'itl', 'throughput', 'ttft']
    """
    rows = load_published_serving() if rows is None else tuple(rows)
    kinds, indices, measured, predicted, reasons, fitted = [], [], [], [], [], []

    def add(kind, i, value, prediction, reason):
        kinds.append(kind)
        indices.append(i)
        measured.append(value)
        predicted.append(prediction)
        reasons.append(reason)
        fitted.append(_fitted(rows[i]))

    for i, row in enumerate(rows):
        replica, reason = _replica(row, efficiency)
        wanted = []
        if row.mode == "offline" and row.output_tokens_per_s:
            wanted.append(("throughput", row.output_tokens_per_s))
        if row.mode == "concurrency" and row.itl_s:
            wanted.append(("itl", row.itl_s))
        if row.mode == "concurrency" and row.concurrency == 1 and row.ttft_s:
            wanted.append(("ttft", row.ttft_s))
        if row.mode == "latency_batch" and row.e2e_latency_s:
            wanted.append(("batch_latency", row.e2e_latency_s))
        for kind, value in wanted:
            if replica is None:
                add(kind, i, value, np.nan, reason)
                continue
            cost, blocks, spec = replica
            largest = spec.max_num_seqs
            fit = max_sequences_in_blocks(blocks, row.input_tokens + row.output_tokens, spec.block_size_tokens)
            if kind == "ttft":
                add(kind, i, value, time_to_first_token_s(cost, row.input_tokens), "")
            elif kind == "batch_latency":
                add(kind, i, value, batch_latency_s(cost, row.batch or 1, row.input_tokens, row.output_tokens), "")
            elif kind == "throughput":
                n = min(fit, largest)
                state = steady_state(cost, n, row.input_tokens, row.output_tokens)
                add(kind, i, value, state.output_tokens_per_s, "")
            else:
                n = int(row.concurrency or 1)
                if n > min(fit, largest):
                    add(kind, i, value, np.nan, "more users than the KV cache holds: queueing (the scheduler's)")
                    continue
                add(kind, i, value, steady_state(cost, n, row.input_tokens, row.output_tokens).itl_s, "")
    columns = (np.array(kinds), np.array(indices), np.array(measured, dtype=float), np.array(predicted, dtype=float),
               np.array(reasons, dtype=object), np.array(fitted))  # fmt: skip
    return ServingReplay(rows, efficiency, *columns)


# The fitted rows: NVIDIA NIM's Llama 3.1 8B sweep (one H100, FP8: its ITL at every load and its TTFT at
# concurrency 1) and TensorRT-LLM 0.17's Llama 3.1 8B offline rows on H100. Held out: every other model (Llama 3.1/3.3
# 70B, 405B, Mixtral 8x7B and 8x22B), every other GPU (H200, A100) and TensorRT-LLM 1.0 and 0.14.
FIT_ROWS = (
    {"source": "nim-1.8.0", "model": "Llama 3.1 8B"},
    {"source": "trtllm-0.17-offline", "model": "Llama 3.1 8B", "gpu": "H100-SXM-80GB"},
)
# (gemm_efficiency, iteration_overhead_s): 30 % to 90 % of peak for a deep GEMM, no overhead to 4 ms per iteration.
SERVING_FIT_GRID = (
    tuple(round(0.30 + 0.02 * k, 2) for k in range(31)),
    tuple(round(2e-4 * k, 4) for k in range(21)),
)


def _fit_loss(rows, efficiency) -> float:
    replay = replay_published_serving(rows, efficiency)
    ok = replay.reason == ""
    return float(np.mean(np.abs(np.log(replay.predicted[ok] / replay.measured[ok]))))


def fit_serving_efficiency(rows=None, base: EngineEfficiency = DEFAULT_EFFICIENCY) -> tuple[EngineEfficiency, tuple]:
    """``base`` with the (gemm_efficiency, iteration_overhead_s) of ``SERVING_FIT_GRID`` that minimise the mean
    |log(predicted / measured)| over the fitted rows (``FIT_ROWS``), every kind alike; never a held-out row. The
    HBM fraction, the GEMMs' fall with depth and the all-reduce stay as measured. Returns (efficiency, its grid
    indices)."""
    rows = load_published_serving() if rows is None else tuple(rows)
    fitted_rows = tuple(row for row in rows if _fitted(row))
    surface = np.array([[_fit_loss(fitted_rows, replace(base, gemm_efficiency=g, iteration_overhead_s=o))
                         for o in SERVING_FIT_GRID[1]] for g in SERVING_FIT_GRID[0]])  # fmt: skip
    i, j = np.unravel_index(np.argmin(surface), surface.shape)
    best = replace(base, gemm_efficiency=SERVING_FIT_GRID[0][i], iteration_overhead_s=SERVING_FIT_GRID[1][j])
    return best, (int(i), int(j))


# Issue 38's targets on the held-out rows: (kind, label, bound on the median |error|).
SERVING_TARGETS = (
    ("itl", "inter-token latency (concurrency rows)", 0.20),
    ("ttft", "time to first token at concurrency 1", 0.20),
    ("throughput", "maximum (offline) throughput", 0.20),
)


def serving_figures(replay: ServingReplay) -> dict:
    """{kind: (median |error| held out, rows held out, median |error| fitted, rows fitted)} for each kind."""
    return {kind: (*replay.median_abs_error(kind, True), *replay.median_abs_error(kind, False)) for kind in KINDS}


# The saturation target: the predicted knee within this factor of the published one, for every held-out sweep.
SATURATION_TARGET = 2.0


@dataclass(frozen=True)
class SaturationSweep:
    """One published concurrency sweep beside its replay through the scheduler: the concurrencies, the published and
    the simulated output tokens/s, and each one's knee (the smallest concurrency reaching
    ``scheduler.KNEE_THROUGHPUT_FRACTION`` of its sweep's maximum: ``scheduler.knee_concurrency``)."""

    model: str
    input_tokens: int
    output_tokens: int
    fitted: bool
    concurrency: tuple
    measured_tokens_per_s: tuple
    predicted_tokens_per_s: tuple

    @property
    def measured_knee(self) -> int:
        """The published sweep's knee."""
        return knee_concurrency(self.concurrency, self.measured_tokens_per_s)

    @property
    def predicted_knee(self) -> int:
        """The simulated sweep's knee."""
        return knee_concurrency(self.concurrency, self.predicted_tokens_per_s)

    @property
    def knee_ratio(self) -> float:
        """Predicted knee / published knee."""
        return self.predicted_knee / self.measured_knee


def saturation_sweeps(rows=None, efficiency: EngineEfficiency = DEFAULT_EFFICIENCY, requests_per_user=4) -> tuple:
    """Every published concurrency sweep replayed request by request (``scheduler.simulate_engine`` in the closed
    loop at each of its concurrencies, ``requests_per_user`` × N requests: each user's fourth request already meets
    the steady state; eight give the same throughput to 0.2 %), on the row's replica, KV blocks and engine defaults
    (its block size, largest batch and capacity policy, ``MAX_NUM_TOKENS`` per iteration): ``SaturationSweep``s."""
    rows = load_published_serving() if rows is None else tuple(rows)
    groups: dict = {}
    for row in rows:
        if row.mode == "concurrency" and row.output_tokens_per_s:
            groups.setdefault((row.source, row.model, row.gpu, row.input_tokens, row.output_tokens), []).append(row)
    sweeps = []
    for key, members in groups.items():
        members.sort(key=lambda r: r.concurrency)
        replica, _ = _replica(members[0], efficiency)
        if replica is None:
            continue
        cost, blocks, spec = replica
        predicted = []
        for row in members:
            n = int(row.concurrency)
            run = simulate_engine(cost, kv_blocks=blocks, block_size_tokens=spec.block_size_tokens,
                                  prompt_tokens=row.input_tokens, output_tokens=row.output_tokens,
                                  requests=requests_per_user * n, concurrency=n,
                                  max_num_seqs=spec.max_num_seqs, max_num_batched_tokens=MAX_NUM_TOKENS,
                                  capacity_policy=spec.capacity_policy)  # fmt: skip
            predicted.append(float(run.output_tokens_per_s))
        measured = tuple(float(r.output_tokens_per_s) for r in members)
        levels = tuple(int(r.concurrency) for r in members)
        sweeps.append(SaturationSweep(key[1], key[3], key[4], _fitted(members[0]), levels, measured, tuple(predicted)))
    return tuple(sweeps)


def serving_report(before: ServingReplay, after: ServingReplay) -> str:
    """The before/after error table ``make validate`` prints: for each target, the median |error| on the held-out
    rows before (the uncalibrated model) and after (the fitted engine model), and on the fitted rows; then vLLM's
    fixed-batch latency rows, held out (another engine), reported without a target."""
    eff = after.efficiency
    lines = [
        f"fitted on {', '.join(' '.join(rule.values()) for rule in FIT_ROWS)}: gemm_efficiency "
        f"{eff.gemm_efficiency}, iteration_overhead_s {format_time(eff.iteration_overhead_s)}; measured: "
        f"hbm_bandwidth_fraction {eff.hbm_bandwidth_fraction}, gemm_half_depth {eff.gemm_half_depth:.0f}, the "
        f"custom all-reduce",
        f"{'target (median |error|, held out)':<48}{'before':>10}{'after':>10}{'rows':>6}{'fitted rows':>14}  met",
    ]
    b, a = serving_figures(before), serving_figures(after)
    share = lambda x: "—" if np.isnan(x) else format_percent(x)  # noqa: E731
    for kind, label, bound in SERVING_TARGETS:
        met = "yes" if a[kind][0] <= bound else "NO"
        lines.append(f"{label:<48}{share(b[kind][0]):>10}{share(a[kind][0]):>10}{a[kind][1]:>6}"
                     f"{share(a[kind][2]):>9} ({a[kind][3]}){'':>1}  {met} (≤ {bound:.0%})")  # fmt: skip
    extra = "end-to-end latency of a fixed batch of 8 (vLLM)"
    lines.append(f"{extra:<48}{share(b['batch_latency'][0]):>10}{share(a['batch_latency'][0]):>10}"
                 f"{a['batch_latency'][1]:>6}{'':>14}  (no target: reported)")  # fmt: skip
    refused = {}
    for reason in after.reason[after.reason != ""]:
        refused[reason] = refused.get(reason, 0) + 1
    lines.append("not replayed: " + ("; ".join(f"{n} ({r})" for r, n in sorted(refused.items())) or "none"))
    return "\n".join(lines)
