"""Collectives: the α–β cost of each collective and algorithm, and nccl-tests' algbw/busbw.

The model (Hockney; Thakur, Rabenseifner & Gropp 2005): a message of m bytes between two ranks takes α + m/B,
with α the per-message startup latency in seconds and B the **one-way, per-rank** link bandwidth in bytes/s.
Ranks are single-ported: in one step each rank sends at most one message and receives at most one. A collective
that runs in n steps costs

    T = n·α + Q/B + R·γ

where Q is the bytes on the critical path (per step, the largest message any rank sends; summed over steps),
R the bytes each rank reduces and γ the reduction cost in s/byte (zero by default, as in most GPU analyses).
This is the card's T_comm ≈ nα + Q/B_eff.

``payload_bytes`` is the buffer size S exactly as nccl-tests defines it: the buffer being reduced or broadcast
for all_reduce, reduce and broadcast; the whole gathered (or to-be-scattered) array for all_gather and
reduce_scatter; everything one rank sends, its own chunk included, for all_to_all; the message for send_recv.

>>> from course_lib.units import GB, MB, US, format_time
>>> format_time(comm_time(4, 5 * US, 100 * MB, 50 * GB))   # the card's worked example
'2.02 ms'
>>> format_time(ring_allreduce_time(8, 1 * GB, 100 * GB, 5 * US))
'17.6 ms'
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from . import _check

__all__ = [
    "OPS",
    "ALGORITHMS",
    "POWER_OF_TWO_ONLY",
    "DOUBLE_BINARY_TREE_CHUNKS",
    "REGIMES",
    "CollectiveCost",
    "TimeTerms",
    "CollectiveReport",
    "comm_time",
    "check_algorithm",
    "applicable_algorithms",
    "collective_cost",
    "time_terms",
    "collective_time",
    "collective_report",
    "ring_allreduce_time",
    "RING_OPS",
    "ring_allreduce_step_count",
    "ring_step_phase",
    "busbw_factor",
    "algbw_bytes_per_s",
    "busbw_bytes_per_s",
    "algbw_from_busbw",
    "latency_bandwidth_crossover_bytes",
    "equal_time_payload_bytes",
    "hierarchical_allreduce_time",
    "multirail_ring_allreduce_time",
]

OPS = ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "all_to_all", "send_recv")

# Which algorithms apply to which collective. Costs and sources are in ``collective_cost``.
ALGORITHMS = {
    "all_reduce": ("ring", "binomial_tree", "recursive_doubling", "rabenseifner", "double_binary_tree"),
    "reduce_scatter": ("ring", "recursive_halving"),
    "all_gather": ("ring", "recursive_doubling"),
    "broadcast": ("ring", "binomial_tree"),
    "reduce": ("ring", "binomial_tree", "rabenseifner"),
    "all_to_all": ("pairwise", "bruck"),
    "send_recv": ("ring",),
}
# Algorithms whose step structure needs a power-of-two number of ranks (MPICH falls back to other algorithms
# otherwise; we refuse rather than print a cost for an algorithm that would not run as modelled).
POWER_OF_TWO_ONLY = frozenset({"recursive_doubling", "recursive_halving", "rabenseifner"})
# The pipelining assumption of the double binary tree: each tree's half of the buffer streams through it in this many
# chunks of S/(2k). A course assumption, not an NCCL constant: NCCL cuts fixed-size chunks, so its k grows with S and
# the fill term below vanishes for large buffers (its tuning model, src/graph/tuning.cc, counts tree algbw = busbw/2,
# that is Q = 2S, with no fill term). k = 64 keeps the fill under lg p/64 of S.
DOUBLE_BINARY_TREE_CHUNKS = 64
# A collective is latency-bound while its latency term n·α exceeds its bandwidth term Q/B (below the crossover S*),
# bandwidth-bound from the crossover up.
REGIMES = ("latency-bound", "bandwidth-bound")

# nccl-tests doc/PERFORMANCE.md and src/*.cu (*GetBw): busbw = algbw × factor.
_BUSBW_FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0 + 0 * n,
    "reduce": lambda n: 1.0 + 0 * n,
    "all_to_all": lambda n: (n - 1) / n,
    "send_recv": lambda n: 1.0 + 0 * n,
}


@dataclass(frozen=True)
class CollectiveCost:
    """The three coefficients of T = phases·α + wire_bytes/B + reduced_bytes·γ for one collective call."""

    phases: _check.IntOrArray
    wire_bytes: _check.FloatOrArray
    reduced_bytes: _check.FloatOrArray


def comm_time(phases, latency_s, payload_bytes, bandwidth_bytes_per_s):
    """T_comm = n·α + Q/B_eff: n latency-bearing phases of α seconds plus Q bytes at B_eff bytes/s.

    ``bandwidth_bytes_per_s`` is the useful (effective) one-way bandwidth for the chosen algorithm and topology.
    ``phases`` may be 0 (nothing to wait for); ``payload_bytes`` may be 0 (nothing to move).

    >>> comm_time(4, 5e-6, 100e6, 50e9)    # 4 × 5 µs + 100 MB at 50 GB/s
    0.00202
    """
    phases = _check.count("phases", phases, minimum=0)
    latency_s = _check.nonnegative("latency_s", latency_s)
    payload_bytes = _check.nonnegative("payload_bytes", payload_bytes)
    bandwidth_bytes_per_s = _check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    return _check.as_result(phases * latency_s + payload_bytes / bandwidth_bytes_per_s)


def check_algorithm(op, algorithm) -> None:
    """Raise ``ValueError`` unless ``op`` is a collective and ``algorithm`` one of its algorithms.

    >>> check_algorithm("all_reduce", "ring")
    >>> check_algorithm("all_gather", "bruck")
    Traceback (most recent call last):
    ValueError: algorithm must be one of 'ring', 'recursive_doubling' for op='all_gather'; got 'bruck'
    """
    _check.choice("op", op, OPS)
    if algorithm not in ALGORITHMS[op]:
        raise ValueError(
            f"algorithm must be one of {', '.join(repr(a) for a in ALGORITHMS[op])} for op={op!r}; got {algorithm!r}"
        )


def _is_power_of_two(p) -> np.ndarray:
    p = np.asarray(p)
    return (p & (p - 1)) == 0


def applicable_algorithms(op, ranks) -> tuple[str, ...]:
    """The algorithms of ``op`` that run as modelled on ``ranks`` ranks, in ``ALGORITHMS`` order.

    Recursive doubling/halving and Rabenseifner need a power-of-two number of ranks (``POWER_OF_TWO_ONLY``);
    MPICH falls back to another algorithm otherwise, so the course does not offer them there.

    >>> applicable_algorithms("all_reduce", 8)
    ('ring', 'binomial_tree', 'recursive_doubling', 'rabenseifner', 'double_binary_tree')
    >>> applicable_algorithms("all_reduce", 12)
    ('ring', 'binomial_tree', 'double_binary_tree')
    """
    _check.choice("op", op, OPS)
    p = _check.count("ranks", ranks)
    if not isinstance(p, int):
        raise ValueError(f"ranks must be a single integer, got {ranks!r}")
    return tuple(a for a in ALGORITHMS[op] if a not in POWER_OF_TWO_ONLY or _is_power_of_two(p))


def _check_ranks_for(algorithm, p) -> None:
    if algorithm in POWER_OF_TWO_ONLY and not np.all(_is_power_of_two(p)):
        bad = np.asarray(p)[~_is_power_of_two(p)].flat[0]
        raise ValueError(f"ranks must be a power of two for algorithm={algorithm!r}, got {bad!r}")


def _bruck_blocks_sent(p):
    """Σ over Bruck's ⌈lg p⌉ steps of the number of block indices in [0, p) with bit k set."""
    p = np.asarray(p)
    total = np.zeros_like(p)
    for k in range(int(np.ceil(np.log2(np.max(p)))) if np.max(p) > 1 else 0):
        period = 2 ** (k + 1)
        total = total + (p // period) * 2**k + np.maximum(p % period - 2**k, 0)
    return total if total.ndim else int(total)


def collective_cost(op, ranks, payload_bytes, algorithm="ring") -> CollectiveCost:
    """Steps, critical-path bytes and reduced bytes of one collective call (p = ranks, S = payload_bytes).

    ===============  ===================  =====================  ==================  ===================
    op               algorithm            phases n               wire bytes Q        reduced bytes R
    ===============  ===================  =====================  ==================  ===================
    all_reduce       ring                 2(p−1)                 2(p−1)/p·S          (p−1)/p·S
    all_reduce       binomial_tree        2⌈lg p⌉                2⌈lg p⌉·S           ⌈lg p⌉·S
    all_reduce       recursive_doubling   lg p                   lg p·S              lg p·S
    all_reduce       rabenseifner         2 lg p                 2(p−1)/p·S          (p−1)/p·S
    all_reduce       double_binary_tree   2⌊lg p⌋                2S + ⌊lg p⌋·S/k †   min(p−1, 2)·S/2
    reduce_scatter   ring                 p−1                    (p−1)/p·S           (p−1)/p·S
    reduce_scatter   recursive_halving    lg p                   (p−1)/p·S           (p−1)/p·S
    all_gather       ring                 p−1                    (p−1)/p·S           0
    all_gather       recursive_doubling   lg p                   (p−1)/p·S           0
    broadcast        binomial_tree        ⌈lg p⌉                 ⌈lg p⌉·S            0
    broadcast        ring                 ⌈lg p⌉ + p−1           2(p−1)/p·S          0
    reduce           binomial_tree        ⌈lg p⌉                 ⌈lg p⌉·S            ⌈lg p⌉·S
    reduce           ring                 p−1 + ⌈lg p⌉           2(p−1)/p·S          (p−1)/p·S
    reduce           rabenseifner         2 lg p                 2(p−1)/p·S          (p−1)/p·S
    all_to_all       pairwise             p−1                    (p−1)/p·S           0
    all_to_all       bruck                ⌈lg p⌉                 ⌈lg p⌉·S/2 (*)      0
    send_recv        ring                 1 (0 if p = 1)         S (0 if p = 1)      0
    ===============  ===================  =====================  ==================  ===================

    Sources: the MPICH comment blocks of Thakur et al.'s algorithms (``src/mpi/coll/``): all-gather ring and
    recursive doubling, all-reduce recursive doubling and Rabenseifner (recursive-halving reduce-scatter +
    recursive-doubling all-gather), reduce-scatter recursive halving, broadcast binomial and scatter + ring
    all-gather (our broadcast "ring"), reduce binomial and Rabenseifner (reduce-scatter + binomial gather),
    all-to-all Bruck (lg p·S/2 for power-of-two p) and pairwise exchange. Ring all-reduce is ring reduce-scatter
    followed by ring all-gather (Patarasuk & Yuan 2009; nccl-tests' t = (S/B)·2(n−1)/n). Binomial-tree all-reduce is
    a binomial reduce followed by a binomial broadcast. Reduce "ring" is the time-reverse of the broadcast "ring"
    (ring reduce-scatter, then a binomial gather to the root). Recursive doubling/halving and Rabenseifner need a
    power-of-two ``ranks``; the others take any ``ranks`` ≥ 1. One rank communicates nothing.
    (*) Bruck's step k sends the blocks whose index has bit k set: p/2 blocks of S/p for a power of two, and
    exactly that count of blocks otherwise (fewer than ⌈lg p⌉·S/2 in all).
    † The double binary tree is NCCL's tree all-reduce (NCCL 2.4; the two-tree scheme of Sanders, Speck & Träff
    2009, "Two-tree algorithms for full bandwidth broadcast, reduction and scan", Parallel Computing 35(12):581–594):
    two binary trees over the same p ranks, each rank a leaf in one and an inner node in the other; each tree reduces
    half of the buffer up to its root and broadcasts it back down, pipelined in k = ``DOUBLE_BINARY_TREE_CHUNKS``
    chunks of S/(2k). The busiest rank (inner in one tree: S/2 up and S/2 to each of two children; a leaf in the
    other: S/2 up) sends 2S, the traffic NCCL's tuning model charges a tree (algbw = busbw/2, src/graph/tuning.cc);
    trees of fewer than 5 ranks move less, so there the model is an upper bound. α is paid once per tree level on
    the way up and once on the way down, 2⌊lg p⌋ in all (NCCL's tree latency has the same 2·log2 form), and the
    first chunk's trip through those levels, 2⌊lg p⌋ chunks of S/(2k), is the pipeline's fill and drain. A rank
    adds its two children's halves (R = S; S/2 when p = 2). Not simulated (``simulate`` runs unpipelined steps).

    >>> collective_cost("all_reduce", 4, 1e6)
    CollectiveCost(phases=6, wire_bytes=1500000.0, reduced_bytes=750000.0)
    >>> collective_cost("all_gather", 8, 8e6, "recursive_doubling")
    CollectiveCost(phases=3, wire_bytes=7000000.0, reduced_bytes=0.0)
    """
    check_algorithm(op, algorithm)
    p = _check.count("ranks", ranks)
    s = _check.positive("payload_bytes", payload_bytes)
    _check_ranks_for(algorithm, p)
    lg = np.ceil(np.log2(p))  # exact for powers of two; ⌈lg p⌉ steps otherwise
    depth = np.floor(np.log2(p))  # ⌊lg p⌋: the depth of a balanced binary tree of p ranks
    share = (p - 1) / p  # (p−1)/p: the fraction of S a rank must send or receive in RS/AG
    zero = 0.0 * s
    # Only the requested entry is evaluated (each value is a function of nothing but the names above).
    table = {
        ("all_reduce", "ring"): lambda: (2 * (p - 1), 2 * share * s, share * s),
        ("all_reduce", "binomial_tree"): lambda: (2 * lg, 2 * lg * s, lg * s),
        ("all_reduce", "recursive_doubling"): lambda: (lg, lg * s, lg * s),
        ("all_reduce", "rabenseifner"): lambda: (2 * lg, 2 * share * s, share * s),
        ("all_reduce", "double_binary_tree"): lambda: (
            2 * depth,
            np.where(p > 1, 2.0, 0.0) * s + depth * s / DOUBLE_BINARY_TREE_CHUNKS,
            np.minimum(p - 1, 2) * s / 2,
        ),
        ("reduce_scatter", "ring"): lambda: (p - 1, share * s, share * s),
        ("reduce_scatter", "recursive_halving"): lambda: (lg, share * s, share * s),
        ("all_gather", "ring"): lambda: (p - 1, share * s, zero),
        ("all_gather", "recursive_doubling"): lambda: (lg, share * s, zero),
        ("broadcast", "binomial_tree"): lambda: (lg, lg * s, zero),
        ("broadcast", "ring"): lambda: (lg + p - 1, 2 * share * s, zero),
        ("reduce", "binomial_tree"): lambda: (lg, lg * s, lg * s),
        ("reduce", "ring"): lambda: (p - 1 + lg, 2 * share * s, share * s),
        ("reduce", "rabenseifner"): lambda: (2 * lg, 2 * share * s, share * s),
        ("all_to_all", "pairwise"): lambda: (p - 1, share * s, zero),
        ("all_to_all", "bruck"): lambda: (lg, _bruck_blocks_sent(p) * s / p, zero),
        ("send_recv", "ring"): lambda: (np.minimum(p - 1, 1), np.minimum(p - 1, 1) * s, zero),
    }
    phases, wire, reduced = table[(op, algorithm)]()
    as_count = (lambda x: int(x)) if np.ndim(phases) == 0 else (lambda x: np.asarray(x, dtype=np.int64))
    return CollectiveCost(as_count(phases), _check.as_result(wire), _check.as_result(reduced))


@dataclass(frozen=True)
class TimeTerms:
    """The terms of T = n·α + Q/B + R·γ for one collective call (scalars, or arrays over payloads).

    ``regime`` is "latency-bound" while n·α > Q/B and "bandwidth-bound" from the crossover up (a tie within
    rounding counts as bandwidth-bound, so the crossover payload itself is the first bandwidth-bound one).
    """

    latency_s: _check.FloatOrArray
    bandwidth_s: _check.FloatOrArray
    reduction_s: _check.FloatOrArray
    cost: CollectiveCost  # the n, Q and R the terms come from

    @property
    def total_s(self):
        """n·α + Q/B + R·γ."""
        return _check.as_result(self.latency_s + self.bandwidth_s + self.reduction_s)

    @property
    def regime(self):
        """ "latency-bound" or "bandwidth-bound" (an array of them for array terms)."""
        tie = np.isclose(self.latency_s, self.bandwidth_s, rtol=1e-9, atol=0.0)
        latency_bound = (np.asarray(self.latency_s) > np.asarray(self.bandwidth_s)) & ~tie
        regime = np.where(latency_bound, REGIMES[0], REGIMES[1])
        return str(regime) if regime.ndim == 0 else regime


def time_terms(
    op, ranks, payload_bytes, bandwidth_bytes_per_s, latency_s, algorithm="ring", reduce_s_per_byte=0.0
) -> TimeTerms:
    """The latency term n·α, the bandwidth term Q/B and the reduction term R·γ of one collective call.

    n, Q and R come from ``collective_cost``; ``bandwidth_bytes_per_s`` is the one-way bandwidth of each rank's
    link (per GPU), ``latency_s`` is α. ``payload_bytes`` may be an array (a curve over payloads).

    >>> from course_lib.units import GB, KB, MB, US, format_time
    >>> terms = time_terms("all_reduce", 4, 100 * MB, 50 * GB, 5 * US)
    >>> format_time(terms.latency_s), format_time(terms.bandwidth_s), terms.regime
    ('30 µs', '3 ms', 'bandwidth-bound')
    >>> time_terms("all_reduce", 4, 1 * KB, 50 * GB, 5 * US).regime
    'latency-bound'
    """
    cost = collective_cost(op, ranks, payload_bytes, algorithm)
    latency_s = _check.nonnegative("latency_s", latency_s)
    bandwidth = _check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    gamma = _check.nonnegative("reduce_s_per_byte", reduce_s_per_byte)
    return TimeTerms(
        _check.as_result(cost.phases * latency_s + 0.0 * cost.wire_bytes),
        _check.as_result(cost.wire_bytes / bandwidth),
        _check.as_result(cost.reduced_bytes * gamma),
        cost,
    )


def collective_time(
    op, ranks, payload_bytes, bandwidth_bytes_per_s, latency_s, algorithm="ring", reduce_s_per_byte=0.0
):
    """Time of one collective call under the α–β(–γ) model: n·α + Q/B + R·γ (see ``collective_cost``).

    ``bandwidth_bytes_per_s`` is the one-way bandwidth of each rank's link (per GPU, not per node, and not the
    two-way figure datasheets often print); ``latency_s`` is α, the startup cost of one step.

    >>> from course_lib.units import GB, MB, US, format_time
    >>> format_time(collective_time("all_gather", 8, 1 * GB, 450 * GB, 3 * US))
    '1.97 ms'
    >>> format_time(collective_time("all_reduce", 8, 1 * MB, 450 * GB, 3 * US, algorithm="recursive_doubling"))
    '15.7 µs'
    """
    return time_terms(op, ranks, payload_bytes, bandwidth_bytes_per_s, latency_s, algorithm, reduce_s_per_byte).total_s


def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    """Ring all-reduce: 2(p−1) steps of S/p bytes, T = 2(p−1)·α + 2(p−1)/p · S/B.

    It is a ring reduce-scatter followed by a ring all-gather. Its bandwidth term equals the lower bound for any
    all-reduce, 2(p−1)/p·S/B (Patarasuk & Yuan 2009): each rank must send, and receive, at least 2(p−1)/p·S bytes.
    The term tends to 2S/B as p grows.

    >>> from course_lib.units import GB, MB, US, format_time
    >>> format_time(ring_allreduce_time(4, 100 * MB, 50 * GB, 5 * US))
    '3.03 ms'
    """
    return collective_time("all_reduce", ranks, payload_bytes, bandwidth_bytes_per_s, latency_s, "ring")


# The collectives whose ring algorithm is a ring: every step, each rank passes one chunk to the next.
RING_OPS = ("all_reduce", "reduce_scatter", "all_gather")


@functools.cache
def ring_allreduce_step_count(ranks: int) -> int:
    """Steps of the ring all-reduce, 2(p − 1) (from ``collective_cost``; cached per p).

    >>> ring_allreduce_step_count(8)
    14
    """
    return int(collective_cost("all_reduce", ranks, 1.0, "ring").phases)


def ring_step_phase(op, ranks, step) -> str:
    """What step ``step`` of a ring ``op`` (one of ``RING_OPS``) over ``ranks`` ranks does: an all-reduce is a
    reduce-scatter (steps 1 … p − 1), then an all-gather (steps p … 2(p − 1)); step 0 is before any transfer. The
    steps are ``collective_cost``'s phases.

    >>> [ring_step_phase("all_reduce", 4, step) for step in (0, 3, 4)]
    ['before any transfer', 'reduce-scatter', 'all-gather']
    """
    _check.choice("op", op, RING_OPS)
    p = _check.count("ranks", ranks)
    step = _check.count("step", step, minimum=0)
    if not isinstance(p, int) or not isinstance(step, int):
        raise ValueError(f"ranks and step must be single integers, got ranks={ranks!r}, step={step!r}")
    steps = collective_cost(op, p, 1.0, "ring").phases
    if step > steps:
        raise ValueError(f"step must be in 0..{steps} (the steps of a ring {op} over {p} ranks), got {step!r}")
    if step == 0:
        return "before any transfer"
    if op != "all_reduce":
        return op.replace("_", "-")
    # A ring all-reduce is a ring reduce-scatter followed by a ring all-gather (collective_cost).
    return "reduce-scatter" if step <= collective_cost("reduce_scatter", p, 1.0, "ring").phases else "all-gather"


def busbw_factor(op, ranks):
    """nccl-tests' bus-bandwidth factor: busbw = algbw × factor (doc/PERFORMANCE.md's summary, AlltoAll included, as
    alltoall.cu's AlltoAllGetBw computes it; send_recv from sendrecv.cu).

    all_reduce 2(n−1)/n; reduce_scatter, all_gather, all_to_all (n−1)/n; broadcast, reduce, send_recv 1.

    >>> busbw_factor("all_reduce", 8)
    1.75
    >>> busbw_factor("all_gather", 16)
    0.9375
    """
    _check.choice("op", op, OPS)
    n = _check.count("ranks", ranks)
    return _check.as_result(_BUSBW_FACTORS[op](n))


def algbw_bytes_per_s(payload_bytes, time_s):
    """nccl-tests' algorithm bandwidth: algbw = S/t (S as nccl-tests defines it for the op).

    >>> from course_lib.units import GB, MS, format_bandwidth
    >>> format_bandwidth(algbw_bytes_per_s(1 * GB, 5 * MS))
    '200 GB/s'
    """
    return _check.as_result(_check.positive("payload_bytes", payload_bytes) / _check.positive("time_s", time_s))


def busbw_bytes_per_s(op, ranks, payload_bytes, time_s):
    """nccl-tests' bus bandwidth: busbw = algbw × busbw_factor(op, ranks).

    It normalises away the rank count so it can be compared with a link's peak one-way bandwidth.

    >>> from course_lib.units import GB, MS, format_bandwidth
    >>> format_bandwidth(busbw_bytes_per_s("all_reduce", 8, 1 * GB, 5 * MS))
    '350 GB/s'
    """
    return _check.as_result(algbw_bytes_per_s(payload_bytes, time_s) * busbw_factor(op, ranks))


def algbw_from_busbw(op, ranks, busbw):
    """Invert busbw = algbw × factor; undefined for one rank of a collective whose factor is 0.

    >>> from course_lib.units import GB, format_bandwidth
    >>> format_bandwidth(algbw_from_busbw("all_reduce", 8, 350 * GB))
    '200 GB/s'
    """
    busbw = _check.positive("busbw", busbw)
    factor = busbw_factor(op, ranks)
    if np.any(np.asarray(factor) == 0):
        raise ValueError(f"ranks must be ≥ 2 to convert busbw for op={op!r} (its factor is 0 at one rank)")
    return _check.as_result(busbw / factor)


def latency_bandwidth_crossover_bytes(op, ranks, bandwidth_bytes_per_s, latency_s, algorithm="ring"):
    """The payload S* at which the latency term n·α equals the bandwidth term Q/B.

    Below S* the collective is latency-bound, above it bandwidth-bound. For ring all-reduce S* = p·α·B.

    >>> from course_lib.units import GB, US, format_bytes
    >>> format_bytes(latency_bandwidth_crossover_bytes("all_reduce", 8, 50 * GB, 5 * US))
    '2 MB'
    """
    _check.count("ranks", ranks, minimum=2)
    bandwidth = _check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    latency = _check.nonnegative("latency_s", latency_s)
    per_byte = collective_cost(op, ranks, 1.0, algorithm)  # Q and n for S = 1 byte; Q is linear in S
    return _check.as_result(per_byte.phases * latency * bandwidth / per_byte.wire_bytes)


def equal_time_payload_bytes(op, ranks, bandwidth_bytes_per_s, latency_s, algorithm, other_algorithm):
    """The payload at which two algorithms of ``op`` take equal time, or None if their times never cross.

    Both times are n·α + Q/B with Q proportional to S, so they are two lines in S: they cross once, at
    S = (n₁ − n₂)·α·B / (q₂ − q₁) with q = Q/S, when the algorithm with more phases moves fewer bytes. Below that
    payload the one with fewer phases is faster, above it the one with fewer bytes.

    >>> from course_lib.units import GB, US, format_bytes
    >>> format_bytes(equal_time_payload_bytes("all_reduce", 64, 50 * GB, 5 * US, "ring", "double_binary_tree"))
    '228 MB'
    >>> equal_time_payload_bytes("all_reduce", 8, 50 * GB, 5 * US, "ring", "rabenseifner") is None   # never
    True
    """
    _check.count("ranks", ranks, minimum=2)
    bandwidth = _check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    latency = _check.nonnegative("latency_s", latency_s)
    if np.ndim(ranks) or np.ndim(bandwidth) or np.ndim(latency):
        raise ValueError("ranks, bandwidth_bytes_per_s and latency_s must be single numbers")
    check_algorithm(op, algorithm)
    if other_algorithm not in ALGORITHMS[op]:
        raise ValueError(
            f"other_algorithm must be one of {', '.join(map(repr, ALGORITHMS[op]))} for op={op!r}; "
            f"got {other_algorithm!r}"
        )
    one = collective_cost(op, ranks, 1.0, algorithm)  # Q and n for S = 1 byte; Q is linear in S
    other = collective_cost(op, ranks, 1.0, other_algorithm)
    extra_latency_s = (one.phases - other.phases) * latency
    extra_seconds_per_byte = (other.wire_bytes - one.wire_bytes) / bandwidth
    if extra_seconds_per_byte == 0 or extra_latency_s == 0 or (extra_latency_s > 0) != (extra_seconds_per_byte > 0):
        return None
    return float(extra_latency_s / extra_seconds_per_byte)


@dataclass(frozen=True)
class CollectiveReport:
    """Everything the course reports about one collective call: cost, terms, regime, bandwidths, alternatives.

    For one rank nothing moves: ``time_s`` is 0 and ``algbw_bytes_per_s``, ``busbw_bytes_per_s`` and
    ``crossover_bytes`` are None. ``times_by_algorithm`` holds the time of every algorithm
    ``applicable_algorithms(op, ranks)`` offers, this one included.
    """

    op: str
    algorithm: str
    ranks: int
    payload_bytes: float
    bandwidth_bytes_per_s: float
    latency_s: float
    phases: int
    wire_bytes: float
    reduced_bytes: float
    latency_term_s: float
    bandwidth_term_s: float
    time_s: float
    regime: str
    algbw_bytes_per_s: float | None
    busbw_bytes_per_s: float | None
    crossover_bytes: float | None
    times_by_algorithm: Mapping[str, float]


def collective_report(op, ranks, payload_bytes, bandwidth_bytes_per_s, latency_s, algorithm="ring"):
    """One collective call, reported whole: the one call a lab, a figure or a lesson needs (scalars only).

    >>> from course_lib.units import GB, MB, US, format_bandwidth, format_bytes, format_time
    >>> r = collective_report("all_reduce", 4, 100 * MB, 50 * GB, 5 * US)
    >>> format_time(r.time_s), r.regime, format_bandwidth(r.busbw_bytes_per_s), format_bytes(r.crossover_bytes)
    ('3.03 ms', 'bandwidth-bound', '49.5 GB/s', '1 MB')
    >>> list(r.times_by_algorithm) == list(applicable_algorithms("all_reduce", 4))
    True
    >>> [format_time(t) for t in r.times_by_algorithm.values()]
    ['3.03 ms', '8.02 ms', '4.01 ms', '3.02 ms', '4.08 ms']
    """
    p = _check.count("ranks", ranks)
    if not isinstance(p, int):
        raise ValueError(f"ranks must be a single integer, got {ranks!r}")
    size = _check.positive("payload_bytes", payload_bytes)
    if isinstance(size, np.ndarray):
        raise ValueError(f"payload_bytes must be a single number for a report, got an array of shape {np.shape(size)}")
    # Scalar ranks and payload give scalar terms: float() and int() only state it.
    terms = time_terms(op, p, size, bandwidth_bytes_per_s, latency_s, algorithm)
    cost, time_s = terms.cost, float(terms.total_s)
    times = {
        a: time_s if a == algorithm else float(collective_time(op, p, size, bandwidth_bytes_per_s, latency_s, a))
        for a in applicable_algorithms(op, p)
    }
    crossover = latency_bandwidth_crossover_bytes(op, p, bandwidth_bytes_per_s, latency_s, algorithm) if p > 1 else None
    return CollectiveReport(
        op=op,
        algorithm=algorithm,
        ranks=p,
        payload_bytes=size,
        bandwidth_bytes_per_s=float(bandwidth_bytes_per_s),
        latency_s=float(latency_s),
        phases=int(cost.phases),
        wire_bytes=float(cost.wire_bytes),
        reduced_bytes=float(cost.reduced_bytes),
        latency_term_s=float(terms.latency_s),
        bandwidth_term_s=float(terms.bandwidth_s),
        time_s=time_s,
        regime=str(terms.regime),
        algbw_bytes_per_s=float(algbw_bytes_per_s(size, time_s)) if time_s > 0 else None,
        busbw_bytes_per_s=float(busbw_bytes_per_s(op, p, size, time_s)) if time_s > 0 else None,
        crossover_bytes=None if crossover is None else float(crossover),
        times_by_algorithm=MappingProxyType(times),
    )


def _checked_two_level(payload_bytes, nodes, devices_per_node, intra_bw, intra_latency, inter_bw, inter_latency):
    """Validated (S, N, g, (B_intra, α_intra), (B_inter, α_inter)) of a collective over nodes of g devices."""
    return (
        _check.positive("payload_bytes", payload_bytes),
        _check.count("nodes", nodes),
        _check.count("devices_per_node", devices_per_node),
        (
            _check.positive("intra_bandwidth_bytes_per_s", intra_bw),
            _check.nonnegative("intra_latency_s", intra_latency),
        ),
        (
            _check.positive("inter_bandwidth_bytes_per_s", inter_bw),
            _check.nonnegative("inter_latency_s", inter_latency),
        ),
    )


def hierarchical_allreduce_time(
    payload_bytes,
    nodes,
    devices_per_node,
    intra_bandwidth_bytes_per_s,
    intra_latency_s,
    inter_bandwidth_bytes_per_s,
    inter_latency_s,
):
    """Two-level all-reduce: ring reduce-scatter inside each node, ring all-reduce of each 1/g shard across nodes
    (the g devices of a node work in parallel, each on its own network link), ring all-gather inside the node.

    T = RS_intra(g, S) + AR_inter(N, S/g) + AG_intra(g, S), with g = devices_per_node and N = nodes. Bandwidths
    are one-way per GPU: NVLink inside the node, the GPU's share of the node's network links between nodes.
    With one node it is the ring all-reduce over NVLink; with one device per node, the ring over the network.

    >>> from course_lib.units import GB, US, format_time
    >>> format_time(hierarchical_allreduce_time(1 * GB, 4, 8, 450 * GB, 3 * US, 50 * GB, 10 * US))
    '7.74 ms'
    """
    s, nodes, g, intra_link, inter_link = _checked_two_level(
        payload_bytes,
        nodes,
        devices_per_node,
        intra_bandwidth_bytes_per_s,
        intra_latency_s,
        inter_bandwidth_bytes_per_s,
        inter_latency_s,
    )
    intra = collective_time("reduce_scatter", g, s, *intra_link) + collective_time("all_gather", g, s, *intra_link)
    inter = ring_allreduce_time(nodes, s / g, *inter_link)
    return _check.as_result(intra + inter)


def multirail_ring_allreduce_time(
    payload_bytes,
    nodes,
    devices_per_node,
    intra_bandwidth_bytes_per_s,
    intra_latency_s,
    inter_bandwidth_bytes_per_s,
    inter_latency_s,
    rails=None,
):
    """Flat ring all-reduce over all N·g devices, run as one ring per network rail, the way NCCL runs it.

    NCCL opens several rings (channels) at once, each leaving a node through a different GPU's network card, so
    every card carries one ring. With r = ``rails`` rings (default g = ``devices_per_node``, one per card) each ring
    all-reduces S/r over all N·g ranks. A ring's step waits for its slowest hop: a network hop gets one card's
    one-way bandwidth (``inter_bandwidth_bytes_per_s``, the GPU's share of the node's links), an NVLink hop the
    GPU's NVLink bandwidth shared by the r rings that pass through it; α is the network's. So

    T = 2(Ng−1)·α_inter + 2(Ng−1)/(Ng) · (S/r) / min(B_inter, B_intra/r)

    and with r = g and B_inter = B_node/g the bandwidth term is about 2S/B_node, the same network term as
    ``hierarchical_allreduce_time``; what the hierarchy saves is latency steps (2(N−1) across the network
    instead of 2(Ng−1)). With one node it is the ring all-reduce over NVLink. Bandwidths are one-way per GPU.

    >>> from course_lib.units import GB, US, format_time
    >>> format_time(multirail_ring_allreduce_time(1 * GB, 4, 8, 450 * GB, 1 * US, 50 * GB, 5 * US))
    '5.15 ms'
    >>> format_time(multirail_ring_allreduce_time(1 * GB, 4, 8, 450 * GB, 1 * US, 50 * GB, 5 * US, rails=1))
    '39.1 ms'
    """
    s, nodes, g, (intra_bandwidth, intra_latency), (inter_bandwidth, inter_latency) = _checked_two_level(
        payload_bytes,
        nodes,
        devices_per_node,
        intra_bandwidth_bytes_per_s,
        intra_latency_s,
        inter_bandwidth_bytes_per_s,
        inter_latency_s,
    )
    rails = g if rails is None else _check.count("rails", rails)
    if not isinstance(rails, int) or rails > g:
        raise ValueError(f"rails must be a single integer in [1, devices_per_node={g}], got {rails!r}")
    if nodes == 1:
        return ring_allreduce_time(g, s, intra_bandwidth, intra_latency)
    per_ring_bandwidth = np.minimum(inter_bandwidth, intra_bandwidth / rails)
    latency = np.maximum(inter_latency, intra_latency)
    return ring_allreduce_time(nodes * g, s / rails, per_ring_bandwidth, latency)
