"""Reports over one serving replica: a plan's training step beside its serving figures (``PlanComparison``), and
everything the serving lab shows for one replica from one call (``ServingReport``). The formulas they gather are in
``serving.replica``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _check
from ..budget.placement import axis_stride, group_collective_time
from ..budget.step import StepTime, step_time
from ..hardware import Cluster
from ..parallelism.memory import memory_breakdown
from ..parallelism.models import TransformerModel
from ..parallelism.plan import ParallelPlan
from .replica import (
    DecodeStep,
    Prefill,
    ServingMemory,
    decode_compute_bound_sequences,
    decode_step,
    kv_cache_bytes,
    max_sequences_that_fit,
    prefill,
    serving_memory,
)

__all__ = ["PlanComparison", "compare_training_and_serving", "ServingReport", "serving_report"]


@dataclass(frozen=True, eq=False)
class PlanComparison:
    """One plan's training step and its serving figures side by side.

    ``training`` is ``budget.step_time``'s breakdown, ``training_tokens_per_s_per_device`` the global batch's tokens
    per step per device; ``prefill`` and ``decode`` are a replica of the plan's t·p devices serving; the memory
    fields say whether each fits the accelerator's HBM. ``zero3_gather_per_token_s`` is what serving with a ZeRO-3
    plan's sharding left on would add to every token: an all-gather of the replica's weights over the d ranks
    (0 for stages 0–2), the scaling book's "FSDP is impossible" for generation.
    """

    training: StepTime
    training_tokens_per_s_per_device: _check.FloatOrArray
    training_fits: bool | np.ndarray
    prefill: Prefill
    decode: DecodeStep
    serving_memory: ServingMemory
    serving_fits: bool | np.ndarray
    zero3_gather_per_token_s: _check.FloatOrArray

    @property
    def time_to_first_token_s(self):
        """The prefill's time."""
        return self.prefill.time_to_first_token_s

    @property
    def time_per_output_token_s(self):
        """The decode step's time per output token."""
        return self.decode.time_per_output_token_s

    @property
    def serving_tokens_per_s_per_device(self):
        """Decode throughput per device."""
        return self.decode.tokens_per_s_per_device


def compare_training_and_serving(
    model: TransformerModel,
    plan: ParallelPlan,
    cluster: Cluster,
    sequences,
    context_len,
    prompt_len,
    batches_in_flight=1,
    compute_efficiency=0.5,
    dtype="bf16",
) -> PlanComparison:
    """The plan's training step on ``cluster`` next to what its t and p give when serving (one replica per t·p
    devices; the data-parallel size becomes the number of replicas, ZeRO sharding is dropped: serving keeps whole
    weights on each replica).

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import LLAMA3_8B, ParallelPlan
    >>> from course_lib.units import format_time
    >>> both = compare_training_and_serving(LLAMA3_8B, ParallelPlan(data_parallel=8, zero_stage=3,
    ...     grad_accum_steps=8), DGX_H100, sequences=1, context_len=4096, prompt_len=1024)
    >>> format_time(both.training.total_s), format_time(both.time_per_output_token_s)
    ('7.25 s', '4.64 ms')
    """
    # The α–β model with the given efficiency (no calibration), like the decode and prefill estimates beside it.
    training = step_time(model, plan, cluster, compute_efficiency, dtype, calibration=None)
    tokens = plan.global_batch * model.seq_len / (training.total_s * plan.devices)
    training_fits = memory_breakdown(model, plan, calibration=None).total <= cluster.accelerator.hbm_capacity_bytes
    t, p = plan.tensor_parallel, plan.pipeline_parallel
    k = _check.count("batches_in_flight", batches_in_flight)
    pre = prefill(model, cluster, t, p, prompt_len, sequences, compute_efficiency, dtype)
    step = decode_step(
        model, cluster, t, p, sequences, context_len, k, dtype=dtype, compute_efficiency=compute_efficiency
    )
    memory = serving_memory(model, t, p, k * np.asarray(sequences), context_len)
    serving_fits = memory.total <= cluster.accelerator.hbm_capacity_bytes
    gather = 0.0
    if plan.zero_stage == 3:
        stride = axis_stride("data", plan)
        gather = group_collective_time("all_gather", cluster, plan.data_parallel, stride, memory.weights)
    return PlanComparison(
        training,
        _check.as_result(tokens),
        _as_flag(training_fits),
        pre,
        step,
        memory,
        _as_flag(serving_fits),
        _check.as_result(gather),
    )


@dataclass(frozen=True, eq=False)
class ServingReport:
    """One replica serving one batch of requests, reported whole: what the serving lab shows.

    ``memory`` is ``serving_memory`` per device at the last token's context (prompt + generated tokens);
    ``max_sequences`` the largest batch that fits there (``max_sequences_that_fit``, 0 if not even one);
    ``prefill`` the prompt's ``prefill``; ``step`` the ``decode_step`` of the batch at that context (the slowest step
    of the request) and ``curve`` the ``decode_step`` over ``curve``'s log-spaced batch sizes from 1 to the largest
    that fits (1 if none does); ``kv_cache_bytes`` the batch's whole cache over the replica,
    ``kv_cache_bytes_per_sequence_token`` one token's, and ``compute_bound_sequences`` the batch above which
    decode's matrix multiplies are compute-bound on this accelerator at the report's compute efficiency.
    """

    model: TransformerModel
    cluster: Cluster
    prompt_len: int
    generated_tokens: int
    memory: ServingMemory
    max_sequences: int
    prefill: Prefill
    step: DecodeStep
    curve: DecodeStep
    kv_cache_bytes: float
    kv_cache_bytes_per_sequence_token: float
    compute_bound_sequences: float

    def __post_init__(self):
        for name in ("prompt_len", "generated_tokens"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a whole number ≥ 1, got {value!r}")
        if not isinstance(self.max_sequences, int) or self.max_sequences < 0:
            raise ValueError(f"max_sequences must be a whole number ≥ 0, got {self.max_sequences!r}")
        if np.ndim(self.step.sequences) != 0:
            raise ValueError(f"step must be one batch's decode step, got one over {np.shape(self.step.sequences)}")
        replica = (self.step.tensor_parallel, self.step.pipeline_parallel)
        if (self.curve.tensor_parallel, self.curve.pipeline_parallel) != replica:
            raise ValueError(f"curve must be decode steps of step's replica (t, p) = {replica}")

    @property
    def tensor_parallel(self) -> int:
        """t, the replica's tensor-parallel size."""
        return int(self.step.tensor_parallel)

    @property
    def pipeline_parallel(self) -> int:
        """p, the replica's pipeline stages."""
        return int(self.step.pipeline_parallel)

    @property
    def devices(self) -> int:
        """t·p, the replica's devices."""
        return int(self.step.tensor_parallel * self.step.pipeline_parallel)

    @property
    def sequences(self) -> int:
        """b, the batch of sequences."""
        return int(self.step.sequences)

    @property
    def context_len(self) -> int:
        """The tokens the last token's step reads from the cache: prompt + generated."""
        return self.prompt_len + self.generated_tokens

    @property
    def capacity_bytes(self) -> float:
        """One device's HBM."""
        return float(self.cluster.accelerator.hbm_capacity_bytes)

    @property
    def fits(self) -> bool:
        """Whether ``memory.total`` fits one device's HBM."""
        return bool(self.memory.total <= self.capacity_bytes)

    @property
    def headroom_bytes(self) -> float:
        """HBM left per device (negative: missing)."""
        return self.capacity_bytes - float(self.memory.total)

    @property
    def request_time_s(self) -> float:
        """A whole request: the first token from the prefill, the other g − 1 from decode steps (each at most
        ``step``'s time)."""
        return float(self.prefill.time_to_first_token_s) + (self.generated_tokens - 1) * float(
            self.step.time_per_output_token_s
        )


def serving_report(
    model: TransformerModel,
    cluster: Cluster,
    tensor_parallel: int,
    pipeline_parallel: int,
    sequences: int,
    prompt_len: int,
    generated_tokens: int,
    compute_efficiency=0.5,
    curve_points: int = 80,
    dtype="bf16",
) -> ServingReport:
    """``sequences`` requests of ``prompt_len`` prompt tokens and ``generated_tokens`` output tokens on one replica
    of t·p devices of ``cluster``: the one call the serving lab makes (scalars only). Decode is timed twice, at the
    batch and over the ``curve_points`` log-spaced batch sizes of the latency–throughput curve (whose grid the batch
    is usually not on).

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import LLAMA3_70B
    >>> from course_lib.units import format_bytes, format_time
    >>> r = serving_report(LLAMA3_70B, DGX_H100, 8, 1, sequences=8, prompt_len=1024, generated_tokens=256)
    >>> format_bytes(r.kv_cache_bytes), format_time(r.step.time_per_output_token_s), r.max_sequences, r.fits
    ('3.36 GB', '8.74 ms', 1187, True)
    >>> len(r.curve.sequences), int(r.curve.sequences[0]), int(r.curve.sequences[-1])
    (63, 1, 1187)
    """
    prompt = _check.count("prompt_len", prompt_len)
    generated = _check.count("generated_tokens", generated_tokens)
    points = _check.count("curve_points", curve_points)
    context = prompt + generated  # the cache the last token reads
    accelerator = cluster.accelerator
    largest = int(max_sequences_that_fit(model, accelerator, tensor_parallel, pipeline_parallel, context))
    batches = np.unique(np.geomspace(1, max(largest, 1), points).round().astype(np.int64))
    replica = (model, cluster, tensor_parallel, pipeline_parallel)
    return ServingReport(
        model=model,
        cluster=cluster,
        prompt_len=prompt,
        generated_tokens=generated,
        memory=serving_memory(model, tensor_parallel, pipeline_parallel, sequences, context),
        max_sequences=largest,
        prefill=prefill(
            model, cluster, tensor_parallel, pipeline_parallel, prompt, sequences, compute_efficiency, dtype
        ),
        step=decode_step(*replica, sequences, context, dtype=dtype, compute_efficiency=compute_efficiency),
        curve=decode_step(*replica, batches, context, dtype=dtype, compute_efficiency=compute_efficiency),
        kv_cache_bytes=float(kv_cache_bytes(model.layers, model.kv_heads, model.head_dim, context, sequences)),
        kv_cache_bytes_per_sequence_token=float(kv_cache_bytes(model.layers, model.kv_heads, model.head_dim, 1, 1)),
        compute_bound_sequences=float(
            decode_compute_bound_sequences(
                accelerator.peak(dtype) * compute_efficiency, accelerator.hbm_bandwidth_bytes_per_s
            )
        ),
    )


def _as_flag(value):
    value = np.asarray(value)
    return bool(value) if value.ndim == 0 else value
