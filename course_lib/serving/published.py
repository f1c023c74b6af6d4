"""Published serving benchmarks: what engines measured, one row per published measurement, each with its source.

``course_lib/data/published_serving.csv`` holds them, transcribed cell by cell from NVIDIA NIM's benchmarking pages
(closed-loop concurrency sweeps: TTFT, inter-token latency, throughput), TensorRT-LLM's performance overview (offline
maximum throughput at many input/output lengths and tensor-parallel sizes; an online table at fixed request rates)
and the other sources ``course_lib/data/published_serving.README.md`` lists with their versions and caveats. A cell the
source does not state is ``None`` here. Nothing is modelled: these are the measurements the serving model
(``serving.engine``, ``serving.scheduler``) is fitted on and judged against.

>>> rows = load_published_serving()
>>> nim = [r for r in rows if r.source == "nim-1.8.0" and r.model == "Llama 3.3 70B" and r.input_tokens == 5000]
>>> [(r.concurrency, r.ttft_s, r.itl_s, r.output_tokens_per_s) for r in nim[:2]]
[(1, 0.40677, 0.01858, 51.67), (5, 0.5467, 0.02183, 218.48)]
>>> from course_lib.parallelism import LLAMA3_70B
>>> PUBLISHED_SERVING_MODELS["Llama 3.3 70B"] is LLAMA3_70B
True
"""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass, fields
from pathlib import Path

from .. import _check, hardware
from ..parallelism.models import LLAMA2_70B, LLAMA3_8B, LLAMA3_70B, LLAMA3_405B, MIXTRAL_8X7B, MIXTRAL_8X22B

__all__ = [
    "PUBLISHED_SERVING_CSV",
    "SERVING_MODES",
    "PublishedServingRow",
    "load_published_serving",
    "PUBLISHED_SERVING_MODELS",
    "UNREPRESENTABLE_SERVING_MODELS",
    "PUBLISHED_SERVING_GPUS",
]

# Package data, found where course_lib is installed (as published_runs.PUBLISHED_RUNS_CSV).
PUBLISHED_SERVING_CSV = Path(str(importlib.resources.files("course_lib") / "data" / "published_serving.csv"))

# How the load was offered (README, "Columns"): ``offline`` = every request queued at once (trtllm-bench throughput,
# QPS = inf, MLPerf Offline); ``concurrency`` = N users in a closed loop (genai-perf / AIPerf, vLLM's
# --max-concurrency); ``rate`` = Poisson (or fixed) arrivals at request_rate_per_s; ``latency_batch`` = one fixed batch
# run to the end (vLLM's benchmark_latency.py).
SERVING_MODES = ("offline", "concurrency", "rate", "latency_batch")
WEIGHTS = ("bf16", "fp16", "fp8", "int8", "int4", "fp4")
KV_CACHES = ("bf16", "fp16", "fp8")
STATISTICS = ("mean", "median", "p90", "p99")


@dataclass(frozen=True)
class PublishedServingRow:
    """One published measurement in SI units (seconds, tokens/s, requests/s); ``None`` where the source is silent.

    ``output_tokens_per_s`` is the output tokens of all requests per second on all ``gpus`` together; ``itl_s`` the
    time between consecutive output tokens of one request (genai-perf's ITL, TensorRT-LLM's TPOT);
    ``latency_statistic`` says whether the latencies are means, medians or percentiles.
    """

    source: str
    engine: str
    engine_version: str
    model: str
    gpu: str
    gpus: int
    tensor_parallel: int
    pipeline_parallel: int
    weights: str
    kv_cache: str | None
    input_tokens: int
    output_tokens: int
    mode: str
    concurrency: int | None
    request_rate_per_s: float | None
    batch: int | None
    latency_statistic: str | None
    ttft_s: float | None
    itl_s: float | None
    e2e_latency_s: float | None
    output_tokens_per_s: float | None
    requests_per_s: float | None
    citation: str
    notes: str


_INTS = ("gpus", "tensor_parallel", "pipeline_parallel", "input_tokens", "output_tokens")
_OPTIONAL_INTS = ("concurrency", "batch")
_OPTIONAL_FLOATS = ("request_rate_per_s", "ttft_s", "itl_s", "e2e_latency_s", "output_tokens_per_s", "requests_per_s")
_CHOICES = {"mode": SERVING_MODES, "weights": WEIGHTS, "kv_cache": KV_CACHES + ("",),
            "latency_statistic": STATISTICS + ("",)}  # fmt: skip


def _row(cells: dict, line: int) -> PublishedServingRow:
    for name, allowed in _CHOICES.items():
        if cells[name] not in allowed:
            raise ValueError(f"{name} must be one of {allowed} (line {line}), got {cells[name]!r}")
    values: dict = {name: cells[name] or None for name in ("kv_cache", "latency_statistic")}
    for name in _INTS:
        values[name] = int(cells[name])
    for name in _OPTIONAL_INTS:
        values[name] = int(cells[name]) if cells[name] else None
    for name in _OPTIONAL_FLOATS:
        values[name] = float(cells[name]) if cells[name] else None
    text = {f.name for f in fields(PublishedServingRow)} - set(values)
    return PublishedServingRow(**values, **{name: cells[name] for name in text})


def load_published_serving(path=None) -> tuple[PublishedServingRow, ...]:
    """Read ``PUBLISHED_SERVING_CSV`` (course_lib/data/published_serving.csv), or ``path``, as frozen rows.

    >>> from collections import Counter
    >>> sorted(Counter(r.mode for r in load_published_serving()).items())
    [('concurrency', 79), ('latency_batch', 9), ('offline', 436), ('rate', 60)]
    >>> load_published_serving("no/such.csv")
    Traceback (most recent call last):
    ...
    ValueError: path must be the published serving CSV; no/such.csv does not exist
    """
    path = PUBLISHED_SERVING_CSV if path is None else path
    rows = _check.csv_rows(path, what="the published serving CSV", column="output_tokens_per_s")
    return tuple(_row(cells, line) for line, cells in enumerate(rows, start=2))


# The CSV's model names as the course's presets (parallelism.models cites each preset's config.json). Llama 3.3 70B
# has Llama 3.1 70B's shape: meta-llama/llama-models@5309637 models/sku_list.py, llama3_3_instruct_models(), gives it
# the arch_args of Llama 3.1 70B (dim 8192, n_layers 80, n_heads 64, n_kv_heads 8, ffn_dim_multiplier 1.3,
# multiple_of 4096 → 28,672, the Llama 3 vocabulary of 128,256); only its post-training differs. Llama 3 8B and 70B
# (vLLM's CI runs meta-llama/Meta-Llama-3-8B and -70B-Instruct) have the same arch_args as Llama 3.1 8B and 70B in the
# same file (llama3_base_models, llama3_instruct_models); Llama 3.1 changed the RoPE scaling and context length, not
# the shapes the course's presets hold.
PUBLISHED_SERVING_MODELS = {
    "Llama 3 8B": LLAMA3_8B,
    "Llama 3.1 8B": LLAMA3_8B,
    "Llama 3 70B": LLAMA3_70B,
    "Llama 3.1 70B": LLAMA3_70B,
    "Llama 3.3 70B": LLAMA3_70B,
    "Llama 3.1 405B": LLAMA3_405B,
    "Llama 2 70B": LLAMA2_70B,
    "Mixtral 8x7B": MIXTRAL_8X7B,
    "Mixtral 8x22B": MIXTRAL_8X22B,
}
# Models a source publishes that the course has no preset for, and why (their rows are kept, never judged).
UNREPRESENTABLE_SERVING_MODELS: dict[str, str] = {}
# The CSV's GPU names as the course's accelerators (hardware cites each datasheet).
PUBLISHED_SERVING_GPUS = {
    "A100-SXM-80GB": hardware.A100,
    "H100-SXM-80GB": hardware.H100,
    "H200-SXM-141GB": hardware.H200,
}
