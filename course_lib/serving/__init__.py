"""Serving: prefill, decode, the KV cache, and why a partition that trains well may serve poorly. One concept per
module, every public name reachable as ``serving.X``: ``replica`` (the KV cache, memory per device, prefill, decode
and the latency–throughput curve of one replica), ``reports`` (a plan's training step beside its serving figures;
the serving lab's one call, ``serving_report``), ``engine`` (one engine iteration's cost, the paged KV cache,
precisions, MoE at inference), ``published`` (the published serving benchmarks, cited row by row), ``scheduler``
(an engine's scheduler simulated request by request: continuous batching, paged KV cache, chunked prefill,
queueing; ``simulate_engine``, ``concurrency_sweep``) and ``sweep`` (one configuration's concurrency sweep reported
whole: the sweep lab's one call, ``concurrency_sweep_report``).

>>> from course_lib import serving
>>> from course_lib.parallelism import LLAMA3_70B
>>> serving.kv_cache_bytes(LLAMA3_70B.layers, LLAMA3_70B.kv_heads, LLAMA3_70B.head_dim, context_len=1, sequences=1)
327680
"""

from . import engine, published, replica, reports, scheduler, sweep
from .engine import *
from .published import *
from .replica import *
from .reports import *
from .scheduler import *
from .sweep import *

__all__ = []
__all__ += published.__all__
__all__ += replica.__all__
__all__ += reports.__all__
__all__ += engine.__all__
__all__ += scheduler.__all__
__all__ += sweep.__all__
