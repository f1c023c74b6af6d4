"""Collective sweeps on MPI: ``run_collective_sweep`` times one op with one of MPICH's algorithms over a range of
sizes, ``run_collective_sweeps`` several ops in one job, and ``compare_algorithms`` several algorithms of one op in
interleaved rounds; each returns a ``Measurements`` table.
"""

from __future__ import annotations

from .. import _check
from .jobs import _oversubscription_warning, _run_job
from .mpich import _algorithm_env, _check_cases
from .tables import Measurements, _row, parse_sizes

__all__ = ["run_collective_sweep", "run_collective_sweeps", "compare_algorithms"]


def _sweep(cases, ranks, sizes_bytes, iterations, warmup, timeout_s, progress, fault=None):
    """Run one sweep job; return its raw records (every iteration's time) and the conditions."""
    cases = _check_cases(cases)
    ranks = _check.count("ranks", ranks, minimum=2)
    sizes = parse_sizes(sizes_bytes)
    iterations = _check.count("iterations", iterations)
    warmup = _check.count("warmup", warmup)
    _oversubscription_warning(ranks)
    spec = {
        "job": "sweep",
        "cases": [{"op": op, "algorithm": algorithm} for op, algorithm in cases],
        "sizes_bytes": list(sizes),
        "iterations": iterations,
        "warmup": warmup,
        "fault": fault,
    }
    records, conditions = _run_job(
        ranks, spec, _algorithm_env(cases), timeout_s, len(cases) * len(sizes), progress, "sweep"
    )
    # mpiexec starts every rank on this machine: one node.
    conditions.update(iterations=iterations, warmup=warmup, timing="max over ranks per iteration, after a barrier",
                      nodes=1)  # fmt: skip
    return records, conditions


def run_collective_sweeps(
    cases, ranks, sizes_bytes, *, iterations=20, warmup=5, timeout_s=120.0, progress=False, _fault=None
):
    """Time several (op, MPICH algorithm) pairs, each op at most once, in ONE MPI job; see ``run_collective_sweep``."""
    records, conditions = _sweep(cases, ranks, sizes_bytes, iterations, warmup, timeout_s, progress, _fault)
    rows = [_row(r["op"], r["algorithm"], ranks, r["size_bytes"], r["times_s"], r["fell_back"]) for r in records]
    return Measurements(tuple(rows), conditions)


def compare_algorithms(
    op, ranks, sizes_bytes, algorithms, *, rounds=4, iterations=5, warmup=3, timeout_s=120.0, progress=False
):
    """Time several MPICH ``algorithms`` of ``op`` fairly on a shared machine: ``rounds`` rounds, each running every
    algorithm's sweep in turn (``iterations`` each); the iterations of all rounds are pooled per algorithm and size.

    A busy spell of the machine then falls on every algorithm alike, instead of on whichever ran during it. Returns
    one ``Measurements`` with ``rounds × iterations`` timed iterations per row.
    """
    algorithms = list(algorithms) if not isinstance(algorithms, str) else [algorithms]
    for algorithm in algorithms:
        _check_cases([(op, algorithm)])
    if not algorithms or len(set(algorithms)) != len(algorithms):
        raise ValueError(f"algorithms must be a non-empty list without repeats, got {algorithms}")
    rounds = _check.count("rounds", rounds)
    pooled, fell_back, conditions = {}, {}, {}
    for _ in range(rounds):
        for algorithm in algorithms:
            records, conditions = _sweep([(op, algorithm)], ranks, sizes_bytes, iterations, warmup, timeout_s, progress)
            for r in records:
                key = (algorithm, r["size_bytes"])
                pooled.setdefault(key, []).extend(r["times_s"])
                fell_back[key] = fell_back.get(key, False) or r["fell_back"]
    rows = [_row(op, algorithm, ranks, size, times, fell_back[(algorithm, size)])
            for (algorithm, size), times in pooled.items()]  # fmt: skip
    conditions.update(iterations=rounds * iterations, rounds=rounds, iterations_per_round=iterations)
    return Measurements(tuple(rows), conditions)


def run_collective_sweep(
    op, ranks, sizes_bytes, algorithm="auto", *, iterations=20, warmup=5, timeout_s=120.0, progress=False
):
    """Time ``op`` with MPICH's ``algorithm`` on ``ranks`` MPI processes at each size; return a ``Measurements``.

    ``sizes_bytes``: nccl-tests' S for the op (``parse_sizes`` forms: ``"8B:64MB"``, a list of ints); rounded down
    to whole float32 elements (and to a multiple of ``ranks`` elements for all_gather, reduce_scatter and
    all_to_all). Each size: ``warmup`` untimed calls, then ``iterations`` timed ones, each after a barrier, each
    taken as the maximum over ranks. The result of every size is checked against the exact expected values
    (small integers in float32): a wrong result raises ``MeasurementError``, as does a rank that dies, or a job
    still running after ``timeout_s`` (then killed with all its processes). More ranks than cores runs, with a
    warning, and ``conditions["ranks_exceed_cores"]`` says so; ``conditions["nodes"]`` is 1 (every rank runs on this
    machine). ``progress``: True for a bar on stderr, or a stream (a notebook passes ``sys.stdout``).

    >>> table = run_collective_sweep("all_reduce", 2, "1KB,64KB", "ring", iterations=3, warmup=1)
    >>> table.size_bytes.tolist(), table.conditions["mpi_library"].startswith("MPICH")
    ([1024, 65536], True)
    """
    return run_collective_sweeps(
        [(op, algorithm)],
        ranks,
        sizes_bytes,
        iterations=iterations,
        warmup=warmup,
        timeout_s=timeout_s,
        progress=progress,
    )
