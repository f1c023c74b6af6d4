"""An inference engine's scheduler, simulated request by request: continuous batching, a paged KV cache with
preemption, chunked prefill, and requests arriving at a fixed concurrency or a Poisson rate.

An engine (vLLM, TensorRT-LLM, SGLang) runs *iterations*. Before each one its scheduler decides which sequences
take part and with how many tokens; one forward pass then runs them all, and every sequence that has computed all
its tokens samples one new token. This module replays that loop as vLLM V1 runs it
(vllm-project/vllm@00024d3 ``vllm/v1/core/sched/scheduler.py``, ``Scheduler.schedule``):

- **Continuous batching** (Yu et al., "Orca", OSDI 2022): the batch is rebuilt every iteration. A sequence that
  produced its last token leaves at the end of that iteration and frees its blocks; a waiting request joins the
  next iteration.
- **Paged KV cache** (Kwon et al., "PagedAttention", SOSP 2023): ``kv_blocks`` blocks of ``block_size_tokens``
  tokens; a sequence whose cache holds n tokens holds ceil(n / block_size_tokens) blocks and takes a new block when
  it crosses a block boundary. A waiting request is admitted only if the blocks of its scheduled tokens are free;
  when a running sequence needs a block and none is free, the most recently admitted running request is
  **preempted**: it loses its cache and goes back to the head of the waiting queue, to be recomputed (prompt and
  the tokens it had generated) when it is admitted again (``self.running.pop()`` and ``_preempt_request`` in
  ``Scheduler.schedule``; vLLM's "Optimization and Tuning" page: "Preempted requests are recomputed when
  sufficient KV cache space becomes available again", https://docs.vllm.ai/en/v0.9.1/configuration/optimization.html).
  No request is admitted in an iteration that preempted one (``if not preempted_reqs:`` before the waiting loop).
- **Chunked prefill** (vLLM V1's default): each iteration has a budget of ``max_num_batched_tokens`` tokens. The
  running requests are served first in admission order, a decoding sequence taking 1 token and a partly prefilled
  prompt the rest of its prompt up to what the budget leaves; then waiting requests are admitted in arrival order
  (first come, first served) with chunks of their prompts, while the budget, the free blocks and
  ``max_num_seqs`` allow. Under first come, first served a partly prefilled prompt is always the last running
  request, so decodes come first: "the scheduler prioritizes decode requests"
  (https://docs.vllm.ai/en/v0.9.1/configuration/optimization.html, "Chunked Prefill").
- **Without chunked prefill** (``chunked_prefill=False``) the scheduler is vLLM V0's default one
  (vllm-project/vllm@v0.6.0 ``vllm/core/scheduler.py``, ``Scheduler._schedule_default``: "First, it batches as many
  prefill requests as possible. And it schedules decodes.", then "Don't schedule decodes if prefills are
  scheduled."): an iteration that admits requests prefills their whole prompts and nothing else; the running
  sequences decode only in iterations that admit nobody. A long prompt therefore stalls every decode for its whole
  prefill: the interference chunked prefill removes. As V0 requires
  (``SchedulerConfig._verify_args``: "max_num_batched_tokens (…) is smaller than max_model_len (…)" without
  chunking), the budget must then hold the longest request.
- **Capacity policy.** vLLM admits a request when the blocks of the tokens it computes now are free, and preempts
  when a running one needs a block (``capacity_policy="max_utilization"``, the name of TensorRT-LLM's policy that
  does the same). TensorRT-LLM's default, ``"guaranteed_no_evict"``, admits a request only when the blocks of its
  whole prompt and output are free and reserves them, so "a started request is never paused"
  (https://nvidia.github.io/TensorRT-LLM/performance/performance-tuning-guide/useful-runtime-flags.html, "Capacity
  Scheduler Policy"): fewer requests run at once, none is recomputed.

Each iteration's time is the engine's cost (``IterationTime``: the iteration's prompt tokens, the tokens those
attend to, the decoding sequences and their cached tokens), and the clock advances by it. vLLM's defaults:
``max_num_batched_tokens=8192`` is the API server's default on a GPU with ≥ 70 GiB (H100, H200, MI300X; 2048 on
smaller GPUs and A100) and ``max_num_seqs=256`` the default on GPUs under 70 GiB and A100 (1024 on the large ones)
(vllm-project/vllm@00024d3 ``vllm/engine/arg_utils.py``, ``EngineArgs.get_batch_defaults``); the block size is 16
tokens on NVIDIA GPUs (``CacheConfig.block_size`` has no static default; ``check_and_update_config`` in
``vllm/platforms/cuda.py`` sets 16).

>>> cost = lambda prefill, attended, decodes, context: 0.010 + 1e-5 * prefill + 1e-4 * decodes
>>> run = simulate_engine(cost, kv_blocks=10_000, prompt_tokens=512, output_tokens=64, requests=64, concurrency=8)
>>> round(run.median_ttft_s * 1e3, 2), round(run.median_itl_s * 1e3, 2), run.preemptions
(50.96, 10.8, 0)

Llama 3.1 70B in bf16 on the 8 H100s of a DGX, 64 users sending 1,024-token prompts for 128 tokens each, with the
engine's cost and paged cache (``engine.iteration_time``, ``engine.kv_cache_blocks``):

>>> from course_lib.hardware import DGX_H100, H100
>>> from course_lib.parallelism import LLAMA3_70B
>>> from course_lib.units import format_time
>>> from course_lib.serving import iteration_time, kv_cache_blocks
>>> blocks = kv_cache_blocks(LLAMA3_70B, H100, 8)
>>> run = simulate_engine(iteration_time(LLAMA3_70B, DGX_H100, 8), kv_blocks=blocks, prompt_tokens=1024,
...                       output_tokens=128, requests=256, concurrency=64)
>>> blocks, format_time(run.median_ttft_s), format_time(run.median_itl_s), round(run.output_tokens_per_s)
(89775, '348 ms', '31.7 ms', 1846)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Protocol

import numpy as np

from .. import _check
from .engine import blocks_per_sequence

__all__ = [
    "CAPACITY_POLICIES",
    "IterationTime",
    "EngineRun",
    "simulate_engine",
    "ConcurrencySweep",
    "concurrency_sweep",
    "KNEE_THROUGHPUT_FRACTION",
    "knee_concurrency",
    "REQUESTS_PER_USER",
]

# How a request's KV blocks are granted (module docstring): vLLM's on demand, or TensorRT-LLM's default reservation.
CAPACITY_POLICIES = ("max_utilization", "guaranteed_no_evict")

# A sweep level's default requests per user (concurrency_sweep).
REQUESTS_PER_USER = 4

# The knee: the smallest swept concurrency whose throughput reaches this fraction of the sweep's maximum.
KNEE_THROUGHPUT_FRACTION = 0.9


def knee_concurrency(concurrencies, output_tokens_per_s, fraction=KNEE_THROUGHPUT_FRACTION) -> int:
    """The knee of a sweep: the smallest of ``concurrencies`` (increasing) whose output throughput reaches (is at
    least) ``fraction`` of the sweep's maximum. Lab 6's question 5 asks for it; its tests disable this function.

    >>> knee_concurrency([1, 2, 4, 8], [100.0, 450.0, 900.0, 1000.0])
    4
    """
    levels = _levels(concurrencies)
    rate = np.atleast_1d(np.asarray(_check.nonnegative("output_tokens_per_s", output_tokens_per_s), dtype=float))
    share = _check.fraction("fraction", fraction)
    if rate.shape != levels.shape:
        raise ValueError(
            f"output_tokens_per_s must hold one throughput per concurrency ({levels.size}), got shape {rate.shape}"
        )
    return int(levels[np.argmax(rate >= share * rate.max())])


def _levels(concurrencies) -> np.ndarray:
    """A sweep's concurrencies as an increasing array of counts (``_check.count`` refuses an empty one)."""
    levels = np.atleast_1d(np.asarray(_check.count("concurrencies", concurrencies), dtype=np.int64))
    if levels.ndim != 1 or np.any(np.diff(levels) <= 0):
        raise ValueError(f"concurrencies must be an increasing sequence, got {levels.tolist()}")
    return levels


class IterationTime(Protocol):
    """One engine iteration's wall time in seconds from its four totals, scalars or arrays (``engine.iteration_time``
    returns one, an ``EngineCost``)."""

    def __call__(self, prefill_tokens, prefill_attended_tokens, decode_sequences, decode_context_tokens) -> float: ...


@dataclass(frozen=True)
class EngineRun:
    """One simulated run: per-request times (seconds from the run's start), per-iteration records, and the figures
    a serving benchmark reports.

    ``itl_s`` holds every gap between two consecutive tokens of a request (request after request, in request
    order): what vLLM's benchmark calls the inter-token latencies (vllm-project/vllm@00024d3
    ``vllm/benchmarks/serve.py``, ``calculate_metrics``: ``itls``), whose percentiles show a stall such as a long
    prefill that ``median_itl_s`` (a request's mean gap) averages away.
    """

    arrival_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    itl_s: np.ndarray
    iteration_start_s: np.ndarray
    iteration_time_s: np.ndarray
    iteration_sequences: np.ndarray
    iteration_in_system: np.ndarray
    iteration_blocks_used: np.ndarray
    iteration_preemptions: np.ndarray
    kv_blocks: int

    @property
    def ttft_s(self) -> np.ndarray:
        """Each request's time to first token: its first token's time minus its arrival."""
        return self.first_token_s - self.arrival_s

    @property
    def e2e_latency_s(self) -> np.ndarray:
        """Each request's end-to-end latency: its finish minus its arrival."""
        return self.finish_s - self.arrival_s

    @property
    def request_itl_s(self) -> np.ndarray:
        """Each request's inter-token latency (finish − first token) / (output tokens − 1); NaN for 1 output token
        (what vLLM's benchmark calls TPOT: ``(output.latency - output.ttft) / (output_len - 1)`` in
        ``calculate_metrics``, vllm-project/vllm@00024d3 ``vllm/benchmarks/serve.py``; genai-perf's inter-token
        latency)."""
        gaps = (self.output_tokens - 1).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(gaps > 0, (self.finish_s - self.first_token_s) / gaps, np.nan)

    @property
    def median_ttft_s(self) -> float:
        return float(np.median(self.ttft_s))

    @property
    def p90_ttft_s(self) -> float:
        return float(np.percentile(self.ttft_s, 90))

    @property
    def median_itl_s(self) -> float:
        """The median over requests of each request's inter-token latency (NaN if every request has 1 output
        token)."""
        itl = self.request_itl_s
        return float(np.median(itl[np.isfinite(itl)])) if np.isfinite(itl).any() else float("nan")

    @property
    def p99_itl_s(self) -> float:
        """The 99th percentile of every gap between consecutive tokens (vLLM benchmark's "P99 ITL")."""
        return float(np.percentile(self.itl_s, 99)) if self.itl_s.size else float("nan")

    @property
    def max_itl_s(self) -> np.ndarray:
        """Each request's longest gap between two consecutive tokens (NaN for 1 output token): the stall its
        user sees."""
        gaps = self.output_tokens - 1
        result = np.full(gaps.size, np.nan)
        has_gaps = gaps > 0
        starts = (np.cumsum(gaps) - gaps)[has_gaps]
        if starts.size:
            result[has_gaps] = np.maximum.reduceat(self.itl_s, starts)
        return result

    @property
    def duration_s(self) -> float:
        """From the first arrival to the last finish."""
        return float(self.finish_s.max() - self.arrival_s.min())

    @property
    def output_tokens_per_s(self) -> float:
        """Total output tokens ÷ the time from the first arrival to the last finish."""
        return float(self.output_tokens.sum()) / self.duration_s

    @property
    def requests_per_s(self) -> float:
        return self.arrival_s.size / self.duration_s

    @property
    def preemptions(self) -> int:
        """How many times a running request was preempted (and later recomputed)."""
        return int(self.iteration_preemptions.sum())

    @property
    def mean_batch_sequences(self) -> float:
        """The mean over iterations of the sequences an iteration runs (prefill chunks and decodes)."""
        return float(self.iteration_sequences.mean())

    @property
    def mean_in_system(self) -> float:
        """The time-averaged number of requests waiting or running (each iteration weighted by its time; idle
        gaps count as 0), over the run's duration: L in Little's law."""
        return float(np.dot(self.iteration_in_system, self.iteration_time_s)) / self.duration_s


def _lengths(name: str, value, requests: int) -> np.ndarray:
    lengths = _check.count(name, value)
    if isinstance(lengths, int):
        return np.full(requests, lengths, dtype=np.int64)
    if lengths.shape != (requests,):
        raise ValueError(f"{name} must be one integer or one per request ({requests}), got shape {lengths.shape}")
    return lengths


def _arrivals(requests: int, concurrency, request_rate_per_s, seed) -> np.ndarray | None:
    """The open loop's Poisson arrival times (the first at 0, as vLLM's benchmark sends its first request at once);
    None for the closed loop, whose arrivals follow finishes."""
    if (concurrency is None) == (request_rate_per_s is None):
        raise ValueError(
            "exactly one of concurrency (closed loop) and request_rate_per_s (open loop) must be given, got "
            f"concurrency={concurrency!r}, request_rate_per_s={request_rate_per_s!r}"
        )
    if concurrency is not None:
        _check.scalar_count("concurrency", concurrency)
        return None
    rate = _check.scalar_positive("request_rate_per_s", request_rate_per_s)
    gaps = np.random.default_rng(_check.scalar_count("seed", seed, minimum=0)).exponential(1 / rate, requests)
    return np.concatenate(([0.0], np.cumsum(gaps[:-1])))


def _preemption_point(need: np.ndarray, held: np.ndarray, free: int) -> int:
    """How many of the running requests (in admission order) keep running: vLLM's loop allocates each one's new
    blocks in turn and, when none are free, preempts from the tail (``self.running.pop()``) until they are or the
    request itself was popped. The result is the largest m whose first m requests' new blocks fit in the free
    blocks plus those the preempted requests m… held."""
    if need.sum() <= free:
        return need.size
    prefix_need = np.concatenate(([0], np.cumsum(need)))
    suffix_held = np.concatenate((np.cumsum(held[::-1])[::-1], [0]))
    return int(np.flatnonzero(prefix_need <= free + suffix_held)[-1])


def simulate_engine(
    iteration_time: Callable[..., float],
    *,
    kv_blocks,
    block_size_tokens=16,
    prompt_tokens,
    output_tokens,
    requests=1000,
    concurrency=None,
    request_rate_per_s=None,
    max_num_seqs=256,
    max_num_batched_tokens=8192,
    chunked_prefill=True,
    capacity_policy="max_utilization",
    seed=0,
) -> EngineRun:
    """Run ``requests`` requests through the scheduler (module docstring) and return their times.

    Exactly one of ``concurrency`` (closed loop: that many users, each sending its next request when its previous
    one finishes, as genai-perf's and vLLM's benchmark ``--max-concurrency`` do) and ``request_rate_per_s`` (open
    loop: Poisson arrivals drawn with ``numpy.random.default_rng(seed)``) is given. ``prompt_tokens`` and
    ``output_tokens`` are one integer or one per request (in request order). A request's first token comes at the
    end of the iteration that completes its prefill; each later one at the end of an iteration that decodes it.

    In the closed loop no decision depends on the clock (a request arrives when another finishes), so the
    iterations' costs are asked for in one call with arrays (as ``IterationTime`` allows; a cost that refuses arrays
    is called once per iteration instead); the open loop asks once per iteration, as its arrivals need the clock.

    >>> step = lambda prefill, attended, decodes, context: 0.020 if prefill else 0.005
    >>> run = simulate_engine(step, kv_blocks=100, prompt_tokens=100, output_tokens=11, requests=2, concurrency=1)
    >>> run.ttft_s.round(6).tolist(), round(run.median_itl_s, 6), run.finish_s.round(6).tolist()
    ([0.02, 0.02], 0.005, [0.07, 0.14])
    """
    if not callable(iteration_time):
        raise ValueError(f"iteration_time must be a callable (an IterationTime), got {iteration_time!r}")
    requests = _check.scalar_count("requests", requests)
    engine = _Engine(
        kv_blocks=_check.scalar_count("kv_blocks", kv_blocks),
        block=_check.scalar_count("block_size_tokens", block_size_tokens),
        max_seqs=_check.scalar_count("max_num_seqs", max_num_seqs),
        budget=_check.scalar_count("max_num_batched_tokens", max_num_batched_tokens),
        chunked=_check.flag("chunked_prefill", chunked_prefill),
        reserve=_check.choice("capacity_policy", capacity_policy, CAPACITY_POLICIES) == "guaranteed_no_evict",
        prompts=_lengths("prompt_tokens", prompt_tokens, requests),
        outputs=_lengths("output_tokens", output_tokens, requests),
    )
    arrivals = _arrivals(requests, concurrency, request_rate_per_s, seed)
    if arrivals is None:
        engine.arrive(range(min(_check.scalar_count("concurrency", concurrency), requests)))
        while engine.done < requests:
            finished = engine.step()
            # Each user sends its next request at once: it arrives at the end of this iteration.
            engine.arrive(range(engine.next_request, min(engine.next_request + finished, requests)))
        return engine.run(_durations(iteration_time, engine.totals), None, None)
    starts, durations, now = [], [], 0.0
    while engine.done < requests:
        if engine.idle and arrivals[engine.next_request] > now:
            now = float(arrivals[engine.next_request])
        engine.arrive(range(engine.next_request, int(np.searchsorted(arrivals, now, side="right"))))
        engine.step()
        starts.append(now)
        durations.append(_duration(iteration_time, engine.totals[-1]))
        now += durations[-1]
    return engine.run(np.array(durations), np.array(starts), arrivals)


def _duration(iteration_time, totals) -> float:
    elapsed = float(iteration_time(*totals))
    if not (elapsed > 0 and np.isfinite(elapsed)):
        raise ValueError(f"iteration_time must return a finite time > 0 s for an iteration with work, got {elapsed!r}")
    return elapsed


def _durations(iteration_time, totals: list) -> np.ndarray:
    """Every iteration's time: one call with arrays, or (for a cost that refuses them) one call per iteration."""
    columns = np.array(totals, dtype=np.int64).reshape(-1, 4).T
    try:
        elapsed = np.broadcast_to(np.asarray(iteration_time(*columns), dtype=float), columns[0].shape)
    except (TypeError, ValueError):  # e.g. ``if prefill_tokens:`` on an array
        return np.array([_duration(iteration_time, row) for row in totals])
    if not (np.all(elapsed > 0) and np.all(np.isfinite(elapsed))):
        bad = elapsed[~((elapsed > 0) & np.isfinite(elapsed))][0]
        raise ValueError(f"iteration_time must return a finite time > 0 s for an iteration with work, got {bad!r}")
    return elapsed


class _Engine:
    """The scheduler's state between iterations: per request, its tokens and cache (arrays indexed by request) and
    the iterations at whose end its events happen (turned into times once the iterations' times are known); the
    running requests in admission order; the waiting queue."""

    def __init__(self, *, kv_blocks, block, max_seqs, budget, chunked, reserve, prompts, outputs):
        # The longest cache a request holds: its prompt and every output token but the last (never fed back).
        longest = int((prompts + outputs - 1).max())
        if blocks_per_sequence(longest, block) > kv_blocks:
            raise ValueError(
                f"kv_blocks must hold the longest request (prompt_tokens + output_tokens − 1 = {longest} tokens, "
                f"{blocks_per_sequence(longest, block)} blocks of {block}), got {kv_blocks}"
            )
        if not chunked and longest > budget:
            raise ValueError(
                f"max_num_batched_tokens must be ≥ the longest request (prompt_tokens + output_tokens − 1 = "
                f"{longest}) when chunked_prefill is False (a preempted request is prefilled again whole), got {budget}"
            )
        self.kv_blocks, self.block, self.max_seqs, self.budget, self.chunked = (
            kv_blocks,
            block,
            max_seqs,
            budget,
            chunked,
        )
        self.prompts, self.outputs = prompts, outputs
        # Under guaranteed_no_evict a request reserves the blocks of its whole cache when it is admitted.
        self.reserved = np.asarray(blocks_per_sequence(prompts + outputs - 1, block)) if reserve else None
        n = prompts.size
        self.computed = np.zeros(n, dtype=np.int64)  # tokens in the request's KV cache
        self.num_tokens = prompts.copy()  # prompt + tokens generated so far
        self.held = np.zeros(n, dtype=np.int64)  # blocks held
        # The iteration at whose end each event happens; -1: before the first (time 0).
        self.arrival_at = np.full(n, -1)
        self.first_token_at = np.full(n, -1)
        self.last_token_at = np.full(n, -1)
        self.finish_at = np.full(n, -1)
        self.gap_offset = np.cumsum(outputs - 1) - (outputs - 1)  # where request i's gaps start
        self.gap_from = np.zeros(int((outputs - 1).sum()), dtype=np.int64)
        self.gap_to = np.zeros_like(self.gap_from)
        self.running = np.zeros(0, dtype=np.int64)
        self.waiting: deque[int] = deque()
        self.free = kv_blocks
        self.iteration = 0
        self.done = 0
        self.next_request = 0
        self.totals: list[tuple[int, int, int, int]] = []
        self.records: list[tuple[int, int, int, int]] = []

    @property
    def idle(self) -> bool:
        return not self.running.size and not self.waiting

    def arrive(self, new: range):
        """Requests ``new`` join the waiting queue (arriving at the end of the last iteration)."""
        self.arrival_at[new.start : new.stop] = self.iteration - 1
        self.waiting.extend(new)
        self.next_request = max(self.next_request, new.stop)

    def step(self) -> int:
        """Schedule and run one iteration (its four totals appended to ``totals``); return how many requests
        finished in it."""
        in_system = self.running.size + len(self.waiting)
        scheduled, preempted = self._schedule()
        running = self.running
        computed, num_tokens = self.computed[running], self.num_tokens[running]
        # A decode is a sequence with 1 token left after its first token; the rest compute prompt chunks.
        decoding = (scheduled == 1) & (num_tokens - computed == 1) & (num_tokens > self.prompts[running])
        prefilling = (scheduled > 0) & ~decoding
        chunk, start = scheduled[prefilling], computed[prefilling]
        totals = (
            int(chunk.sum()),
            int((chunk * start + chunk * (chunk + 1) // 2).sum()),
            int(decoding.sum()),
            int(num_tokens[decoding].sum()),
        )
        if totals[0] == 0 and totals[2] == 0:
            raise RuntimeError("the scheduler found no work (a bug: every request fits the cache and the budget)")
        self.totals.append(totals)
        self.records.append((int((scheduled > 0).sum()), in_system, self.kv_blocks - self.free, preempted))
        computed += scheduled
        self.computed[running] = computed
        finished = self._sample(running[computed == num_tokens])
        self.iteration += 1
        return finished

    def _schedule(self) -> tuple[np.ndarray, int]:
        """Decide the iteration: the tokens of each running request (admitted ones appended to ``running``), after
        any preemption; return them and the number of requests preempted."""
        running = self.running
        computed, held = self.computed[running], self.held[running]
        remaining = self.num_tokens[running] - computed
        slots = self.max_seqs - running.size
        if not self.chunked:  # V0: an iteration admitting prompts prefills them alone; otherwise all decode
            admitted, tokens = self._admit(slots, self.budget) if self.waiting and slots > 0 else (running[:0],) * 2
            if admitted.size:
                return np.concatenate((np.zeros_like(remaining), tokens)), 0
            scheduled = remaining
        else:
            scheduled = np.minimum(np.maximum(self.budget - (np.cumsum(remaining) - remaining), 0), remaining)
        # New blocks: blocks_per_sequence of the cache after this iteration, less those held (inline: a hot loop).
        need = np.where(scheduled > 0, np.maximum(-(-(computed + scheduled) // self.block) - held, 0), 0)
        keep = _preemption_point(need, held, self.free)
        preempted = running.size - keep
        if preempted:
            victims = running[keep:]
            self.free += int(held[keep:].sum())
            self.held[victims] = 0
            self.computed[victims] = 0
            self.waiting.extendleft(victims[::-1].tolist())  # at the head, in their order
            running, scheduled, need, held = running[:keep], scheduled[:keep], need[:keep], held[:keep]
            self.running = running
        self.free -= int(need.sum())
        self.held[running] = held + need
        left = self.budget - int(scheduled.sum())
        if self.chunked and not preempted and self.waiting and left > 0 and running.size < self.max_seqs:
            _, tokens = self._admit(self.max_seqs - running.size, left)
            scheduled = np.concatenate((scheduled, tokens))
        return scheduled, preempted

    def _admit(self, slots: int, budget: int) -> tuple[np.ndarray, np.ndarray]:
        """Admit waiting requests first come, first served (vLLM V1's waiting loop; V0's ``_schedule_prefills``):
        each takes its remaining tokens (a chunk of them, with chunked prefill) while the token budget, the free
        blocks and the free sequence slots allow; the first that does not fit stops the admission. The admitted
        join ``running`` with their blocks."""
        head = np.fromiter(islice(self.waiting, slots), dtype=np.int64)
        remaining = self.num_tokens[head] - self.computed[head]
        before = np.cumsum(remaining) - remaining
        if self.chunked:
            tokens = np.minimum(np.maximum(budget - before, 0), remaining)
        else:
            tokens = np.where(before + remaining <= budget, remaining, 0)
        blocks = -(-tokens // self.block) if self.reserved is None else self.reserved[head]
        fits = (tokens > 0) & (np.cumsum(blocks) <= self.free)
        count = fits.size if fits.all() else int(np.argmin(fits))
        for _ in range(count):
            self.waiting.popleft()
        admitted = head[:count]
        self.held[admitted] = blocks[:count]
        self.free -= int(blocks[:count].sum())
        self.running = np.concatenate((self.running, admitted))
        return admitted, tokens[:count]

    def _sample(self, sampled: np.ndarray) -> int:
        """The requests that computed all their tokens sample one each; those with all their output tokens leave
        and free their blocks. Return how many left."""
        it = self.iteration
        generated = self.num_tokens[sampled] - self.prompts[sampled]  # before this token
        first = generated == 0
        self.first_token_at[sampled[first]] = it  # once: a recomputed request has generated tokens
        later = sampled[~first]
        gaps = self.gap_offset[later] + generated[~first] - 1
        self.gap_from[gaps] = self.last_token_at[later]
        self.gap_to[gaps] = it
        self.last_token_at[sampled] = it
        self.num_tokens[sampled] += 1
        finished = sampled[generated + 1 == self.outputs[sampled]]
        if finished.size:
            self.finish_at[finished] = it
            self.free += int(self.held[finished].sum())
            self.held[finished] = 0
            self.running = self.running[~np.isin(self.running, finished)]
            self.done += finished.size
        return finished.size

    def run(self, durations: np.ndarray, starts: np.ndarray | None, arrivals: np.ndarray | None) -> EngineRun:
        """The run, its events turned into times: the closed loop's iterations follow each other back to back."""
        if starts is None:
            starts = np.cumsum(durations) - durations
        ends = np.concatenate(([0.0], starts + durations))  # ends[i + 1]: the end of iteration i; ends[0] = 0
        records = np.array(self.records, dtype=np.int64).reshape(-1, 4).T
        return EngineRun(
            arrival_s=ends[self.arrival_at + 1] if arrivals is None else arrivals,
            first_token_s=ends[self.first_token_at + 1],
            finish_s=ends[self.finish_at + 1],
            prompt_tokens=self.prompts,
            output_tokens=self.outputs,
            itl_s=ends[self.gap_to + 1] - ends[self.gap_from + 1],
            iteration_start_s=starts,
            iteration_time_s=durations,
            iteration_sequences=records[0],
            iteration_in_system=records[1],
            iteration_blocks_used=records[2],
            iteration_preemptions=records[3],
            kv_blocks=self.kv_blocks,
        )


@dataclass(frozen=True)
class ConcurrencySweep:
    """A closed-loop run at each concurrency: the figures a serving benchmark plots against concurrency.

    ``knee_concurrency`` is the smallest swept concurrency whose output-token throughput reaches
    ``KNEE_THROUGHPUT_FRACTION`` (90 %) of the sweep's maximum: past it, more users add little throughput and
    mostly wait longer (an operational rule of this course, stated here; with an iteration cost a + c·b for a
    batch of b, throughput b / (a + c·b) reaches 90 % of its limit 1/c at b = 9a/c).
    """

    concurrency: np.ndarray
    requests: np.ndarray
    median_ttft_s: np.ndarray
    p90_ttft_s: np.ndarray
    median_itl_s: np.ndarray
    p99_itl_s: np.ndarray
    output_tokens_per_s: np.ndarray
    requests_per_s: np.ndarray
    preemptions: np.ndarray
    mean_batch_sequences: np.ndarray

    @property
    def knee_concurrency(self) -> int:
        """The smallest concurrency whose throughput is ≥ 90 % of the sweep's maximum."""
        return knee_concurrency(self.concurrency, self.output_tokens_per_s)


def concurrency_sweep(
    iteration_time: Callable[..., float],
    concurrencies: Sequence[int] | np.ndarray,
    *,
    kv_blocks,
    prompt_tokens,
    output_tokens,
    requests=None,
    **engine,
) -> ConcurrencySweep:
    """``simulate_engine`` in the closed loop at each of ``concurrencies`` (increasing); ``engine`` passes the rest
    of its arguments (block size, ``max_num_seqs``, ...). Each level runs ``requests`` requests or, by default,
    ``REQUESTS_PER_USER`` (4) per user and at least 16: the first round, every user at once, then weighs a quarter
    of the figures, and a level costs about the same simulated time at every concurrency (per-request lengths
    given as arrays need ``requests``).

    >>> cost = lambda prefill, attended, decodes, context: 0.010 + 1e-4 * (decodes + prefill / 16)
    >>> sweep = concurrency_sweep(cost, [1, 16, 64, 128, 256], kv_blocks=10_000, prompt_tokens=16,
    ...                           output_tokens=8, requests=256)
    >>> sweep.output_tokens_per_s.round().tolist(), sweep.knee_concurrency
    ([99.0, 1379.0, 3902.0, 5614.0, 7191.0], 256)
    """
    levels = _levels(concurrencies)
    runs = [
        simulate_engine(
            iteration_time,
            kv_blocks=kv_blocks,
            prompt_tokens=prompt_tokens,
            output_tokens=output_tokens,
            requests=max(REQUESTS_PER_USER * int(level), 16) if requests is None else requests,
            concurrency=int(level),
            **engine,
        )
        for level in levels
    ]
    return ConcurrencySweep(
        concurrency=levels,
        requests=np.array([run.arrival_s.size for run in runs]),
        median_ttft_s=np.array([run.median_ttft_s for run in runs]),
        p90_ttft_s=np.array([run.p90_ttft_s for run in runs]),
        median_itl_s=np.array([run.median_itl_s for run in runs]),
        p99_itl_s=np.array([run.p99_itl_s for run in runs]),
        output_tokens_per_s=np.array([run.output_tokens_per_s for run in runs]),
        requests_per_s=np.array([run.requests_per_s for run in runs]),
        preemptions=np.array([run.preemptions for run in runs]),
        mean_batch_sequences=np.array([run.mean_batch_sequences for run in runs]),
    )
