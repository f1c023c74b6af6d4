"""The concurrency sweep of one serving configuration, reported whole: what lab 6's sweep shows from one call.

A configuration is a model, a replica of t GPUs in one node, the precisions of its weights and of its KV cache, and
the prompt and output lengths of its requests. ``concurrency_sweep_report`` prices one engine iteration of that
replica (``engine.iteration_time``), counts the paged KV cache's blocks (``engine.kv_cache_blocks``) and runs the
engine's scheduler in the closed loop at every concurrency of ``SWEEP_CONCURRENCIES``
(``scheduler.concurrency_sweep``, with its requests per concurrency): the median time to first token (TTFT), the
median inter-token latency (ITL) and the output tokens per second at each, and the knee. The sweep is kept per
configuration (``functools.lru_cache``), so a report at another concurrency of the same configuration costs no
simulation. A configuration the engine rejects (a precision the accelerator lacks, weights that leave no room for the
cache, a request longer than the whole cache) is a report too, whose ``refusal`` says why: a lab draws it rather
than raising.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .. import _check
from ..hardware import Cluster
from ..parallelism.models import TransformerModel
from . import engine, scheduler

__all__ = [
    "SWEEP_CONCURRENCIES",
    "SWEEP_BLOCK_SIZE_TOKENS",
    "ConcurrencySweepReport",
    "concurrency_sweep_report",
]

# Concurrencies 1 … 512: NIM's published sweep spans 1–250; past vLLM's max_num_seqs = 256 running sequences only
# the queue grows (scheduler.simulate_engine's default), which the last point shows.
SWEEP_CONCURRENCIES = tuple(2**k for k in range(10))
# vLLM's default KV block size (engine.kv_cache_blocks' default, cited there).
SWEEP_BLOCK_SIZE_TOKENS = 16


@dataclass(frozen=True, eq=False)
class ConcurrencySweepReport:
    """One configuration's concurrency sweep and the point of it at ``concurrency``.

    ``sweep`` is ``scheduler.concurrency_sweep``'s result over ``SWEEP_CONCURRENCIES`` (None when the configuration
    is refused, and ``refusal`` then says why); ``kv_blocks`` the paged cache's blocks of ``block_size_tokens``
    (0 when refused). The point's figures (``ttft_s``, ``itl_s``, ``tokens_per_s``) are the sweep's at
    ``concurrency``, one of the swept concurrencies.
    """

    model: TransformerModel
    cluster: Cluster
    tensor_parallel: int
    weights: str
    kv_cache: str
    prompt_tokens: int
    output_tokens: int
    concurrency: int
    block_size_tokens: int
    kv_blocks: int
    sweep: scheduler.ConcurrencySweep | None
    refusal: str | None

    def __post_init__(self):
        if (self.sweep is None) == (self.refusal is None):
            raise ValueError("a report holds either a sweep or the refusal of its configuration, not both or neither")
        if self.sweep is not None and self.concurrency not in self.sweep.concurrency:
            raise ValueError(
                f"concurrency must be one of the swept {self.sweep.concurrency.tolist()}, got {self.concurrency!r}"
            )

    def _swept(self) -> scheduler.ConcurrencySweep:
        if self.sweep is None:
            raise ValueError(f"this configuration was refused ({self.refusal}): it has no sweep")
        return self.sweep

    @property
    def concurrencies(self) -> np.ndarray:
        """The swept concurrencies (``SWEEP_CONCURRENCIES`` when refused: the axis a figure keeps)."""
        return self.sweep.concurrency if self.sweep is not None else np.array(SWEEP_CONCURRENCIES)

    @property
    def median_ttft_s(self) -> np.ndarray:
        return self._swept().median_ttft_s

    @property
    def median_itl_s(self) -> np.ndarray:
        return self._swept().median_itl_s

    @property
    def output_tokens_per_s(self) -> np.ndarray:
        """The replica's output tokens per second at each concurrency."""
        return self._swept().output_tokens_per_s

    @property
    def knee_concurrency(self) -> int:
        """The smallest swept concurrency whose throughput reaches ``scheduler.KNEE_THROUGHPUT_FRACTION`` of the
        sweep's maximum (``scheduler.ConcurrencySweep.knee_concurrency``)."""
        return self._swept().knee_concurrency

    @property
    def knee_fraction(self) -> float:
        """The share of the sweep's most throughput that defines the knee (``scheduler.KNEE_THROUGHPUT_FRACTION``)."""
        return scheduler.KNEE_THROUGHPUT_FRACTION

    @property
    def knee_threshold_tokens_per_s(self) -> float:
        """The throughput the knee reaches: ``knee_fraction`` of the sweep's maximum."""
        return self.knee_fraction * float(self.output_tokens_per_s.max())

    @property
    def _index(self) -> int:
        return int(np.flatnonzero(self._swept().concurrency == self.concurrency)[0])

    @property
    def ttft_s(self) -> float:
        """The median time to first token at ``concurrency``."""
        return float(self.median_ttft_s[self._index])

    @property
    def itl_s(self) -> float:
        """The median inter-token latency at ``concurrency``."""
        return float(self.median_itl_s[self._index])

    @property
    def tokens_per_s(self) -> float:
        """The replica's output tokens per second at ``concurrency``."""
        return float(self.output_tokens_per_s[self._index])

    @property
    def tokens_per_s_per_device(self) -> float:
        return self.tokens_per_s / self.tensor_parallel

    @property
    def blocks_per_request(self) -> int:
        """The blocks one request holds at its last token: ⌈(prompt + output) / block⌉."""
        return int(engine.blocks_per_sequence(self.prompt_tokens + self.output_tokens, self.block_size_tokens))

    @property
    def requests_in_cache(self) -> int:
        """The most requests whose whole KV cache fits at once (0 when refused)."""
        return int(
            engine.max_sequences_in_blocks(
                self.kv_blocks, self.prompt_tokens + self.output_tokens, self.block_size_tokens
            )
        )


def concurrency_sweep_report(
    model: TransformerModel,
    cluster: Cluster,
    tensor_parallel: int,
    *,
    weights: str = "bf16",
    kv_cache: str = "bf16",
    prompt_tokens: int,
    output_tokens: int,
    concurrency: int,
) -> ConcurrencySweepReport:
    """The concurrency sweep of ``model`` served by t = ``tensor_parallel`` GPUs of ``cluster`` with requests of
    ``prompt_tokens`` + ``output_tokens`` tokens, at each of ``SWEEP_CONCURRENCIES`` (the scheduler's requests per
    concurrency), pointed at ``concurrency``. The sweep is simulated once per configuration and kept.

    >>> from course_lib.hardware import DGX_A100, DGX_H100
    >>> from course_lib.parallelism import LLAMA3_8B
    >>> r = concurrency_sweep_report(LLAMA3_8B, DGX_H100, 1, prompt_tokens=1024, output_tokens=128, concurrency=8)
    >>> r.refusal is None, r.knee_concurrency in SWEEP_CONCURRENCIES
    (True, True)
    >>> concurrency_sweep_report(LLAMA3_8B, DGX_A100, 1, weights="fp8", prompt_tokens=1024, output_tokens=128,
    ...                          concurrency=8).refusal is not None
    True
    """
    prompt = _check.count("prompt_tokens", prompt_tokens)
    output = _check.count("output_tokens", output_tokens)
    level = _check.count("concurrency", concurrency)
    if level not in SWEEP_CONCURRENCIES:
        raise ValueError(f"concurrency must be one of {list(SWEEP_CONCURRENCIES)}, got {concurrency!r}")
    t = _check.count("tensor_parallel", tensor_parallel)
    # A name that is no precision at all is a caller's mistake (a ValueError); a precision this accelerator lacks,
    # or a model that does not fit, is a state the lab draws (the refusal).
    _check.choice("weights", weights, tuple(engine.WEIGHT_PRECISIONS))
    _check.choice("kv_cache", kv_cache, tuple(engine.KV_CACHE_PRECISIONS))
    kv_blocks, sweep, refusal = _sweep(model, cluster, t, weights, kv_cache, prompt, output)
    return ConcurrencySweepReport(
        model=model,
        cluster=cluster,
        tensor_parallel=t,
        weights=weights,
        kv_cache=kv_cache,
        prompt_tokens=prompt,
        output_tokens=output,
        concurrency=level,
        block_size_tokens=SWEEP_BLOCK_SIZE_TOKENS,
        kv_blocks=kv_blocks,
        sweep=sweep,
        refusal=refusal,
    )


@functools.lru_cache(maxsize=128)
def _sweep(model, cluster, tensor_parallel, weights, kv_cache, prompt_tokens, output_tokens):
    """(kv_blocks, sweep, None) for a configuration the engine runs, else (0, None, the engine's reason)."""
    try:
        cost = engine.iteration_time(model, cluster, tensor_parallel, weights=weights, kv_cache=kv_cache)
        blocks = engine.kv_cache_blocks(
            model,
            cluster.accelerator,
            tensor_parallel,
            weights=weights,
            kv_cache=kv_cache,
            block_size_tokens=SWEEP_BLOCK_SIZE_TOKENS,
        )
    except ValueError as refused:  # the engine names what it rejects (a precision, a model that does not fit)
        return 0, None, str(refused)
    needed = engine.blocks_per_sequence(prompt_tokens + output_tokens, SWEEP_BLOCK_SIZE_TOKENS)
    if blocks < needed:
        return (
            0,
            None,
            (
                f"one request of {prompt_tokens + output_tokens:,} tokens needs {needed:,} KV blocks of "
                f"{SWEEP_BLOCK_SIZE_TOKENS} tokens; the memory left after the weights holds {blocks:,}"
            ),
        )
    sweep = scheduler.concurrency_sweep(
        cost,  # pyright: ignore[reportArgumentType]  (annotated -> float; an EngineCost also takes arrays, §1)
        SWEEP_CONCURRENCIES,
        kv_blocks=blocks,
        block_size_tokens=SWEEP_BLOCK_SIZE_TOKENS,
        prompt_tokens=prompt_tokens,
        output_tokens=output_tokens,
    )
    return blocks, sweep, None
