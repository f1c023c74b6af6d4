"""MPICH's collective algorithms: the names MPICH offers for each op, each with the course's cost model
(``MPICH_ALGORITHMS``), the control variable that forces one, and a job's check of its (op, algorithm) pairs and the
environment that forces them (the conventions are in ``course_lib.measure``'s docstring).
"""

from __future__ import annotations

from .. import _check
from .tables import OPS

__all__ = ["MPICH_ALGORITHMS"]

# MPICH's control-variable name per op, and for each algorithm MPICH offers (``mpivars`` of MPICH 5.0.2; "ccl" needs
# a CCL library, not here) the course's cost model in ``collectives.collective_cost`` (None: no model in the course).
_CVAR = {
    "all_reduce": "ALLREDUCE",
    "all_gather": "ALLGATHER",
    "reduce_scatter": "REDUCE_SCATTER",
    "broadcast": "BCAST",
    "reduce": "REDUCE",
    "all_to_all": "ALLTOALL",
}
MPICH_ALGORITHMS = {
    "all_reduce": {
        "auto": None,
        "ring": "ring",
        "recursive_doubling": "recursive_doubling",
        "reduce_scatter_allgather": "rabenseifner",  # Rabenseifner: recursive-halving RS + recursive-doubling AG
        "recursive_multiplying": None,
        "tree": None,
        "recexch": None,
        "k_reduce_scatter_allgather": None,
        "nb": None,
        "smp": None,
    },
    "all_gather": {
        "auto": None,
        "ring": "ring",
        "recursive_doubling": "recursive_doubling",
        "brucks": None,
        "k_brucks": None,
        "recexch_doubling": None,
        "recexch_halving": None,
        "nb": None,
    },
    "reduce_scatter": {
        "auto": None,
        # Pairwise exchange: p−1 steps of S/p bytes each, the ring's cost (Thakur, Rabenseifner & Gropp 2005, §4.4).
        "pairwise": "ring",
        "recursive_halving": "recursive_halving",
        "recursive_doubling": None,
        "noncommutative": None,
        "nb": None,
    },
    "broadcast": {
        "auto": None,
        "binomial": "binomial_tree",
        "scatter_ring_allgather": "ring",  # the course's broadcast "ring": binomial scatter + ring all-gather
        "scatter_recursive_doubling_allgather": None,
        "tree": None,
        "pipelined_tree": None,
        "nb": None,
        "smp": None,
    },
    "reduce": {
        "auto": None,
        "binomial": "binomial_tree",
        "reduce_scatter_gather": "rabenseifner",
        "nb": None,
        "smp": None,
    },
    "all_to_all": {
        "auto": None,
        "pairwise": "pairwise",
        "brucks": "bruck",
        "k_brucks": None,
        "scattered": None,
        "pairwise_sendrecv_replace": None,
        "nb": None,
    },
}


def _check_cases(cases):
    checked, seen = [], set()
    for op, algorithm in cases:
        _check.choice("op", op, OPS)
        if algorithm not in MPICH_ALGORITHMS[op]:
            raise ValueError(
                f"algorithm must be one of {', '.join(repr(a) for a in MPICH_ALGORITHMS[op])} (MPICH's names) for "
                f"op={op!r}; got {algorithm!r}"
            )
        if op in seen:
            raise ValueError(f"cases may hold each op once per job (MPICH reads its algorithm at start); {op!r} twice")
        seen.add(op)
        checked.append((op, algorithm))
    if not checked:
        raise ValueError("cases must not be empty")
    return checked


def _algorithm_env(cases):
    env = {"MPIR_CVAR_" + _CVAR[op] + "_INTRA_ALGORITHM": algorithm for op, algorithm in cases if algorithm != "auto"}
    if env:
        env.update(MPIR_CVAR_DEVICE_COLLECTIVES="none", MPIR_CVAR_COLLECTIVE_FALLBACK="print")
    return env
