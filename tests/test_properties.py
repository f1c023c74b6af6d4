"""Properties that must hold for every input (hypothesis; how many examples is the profile's: conftest.py)."""

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from course_lib.collectives import ALGORITHMS, OPS, collective_time, ring_allreduce_time
from course_lib.parallelism import GPT3_175B, ParallelPlan, memory_breakdown, zero_model_state_bytes

POWER_OF_TWO_ONLY = {"recursive_doubling", "recursive_halving", "rabenseifner"}
PAIRS = [(op, algorithm) for op in OPS for algorithm in ALGORITHMS[op]]

sizes = st.floats(min_value=1.0, max_value=1e12, allow_nan=False, allow_infinity=False)
bandwidths = st.floats(min_value=1e6, max_value=1e13, allow_nan=False, allow_infinity=False)
latencies = st.floats(min_value=0.0, max_value=1e-3, allow_nan=False, allow_infinity=False)


def ranks_for(algorithm):
    if algorithm in POWER_OF_TWO_ONLY:
        return st.integers(0, 12).map(lambda e: 2**e)
    return st.integers(1, 4096)


@st.composite
def collective_calls(draw):
    op, algorithm = draw(st.sampled_from(PAIRS))
    return op, algorithm, draw(ranks_for(algorithm)), draw(sizes), draw(latencies)


@given(collective_calls(), bandwidths, bandwidths)
def test_more_bandwidth_never_increases_time(call, b1, b2):
    op, algorithm, ranks, size, latency = call
    slow, fast = sorted((b1, b2))
    assert collective_time(op, ranks, size, fast, latency, algorithm) <= collective_time(
        op, ranks, size, slow, latency, algorithm
    )


@given(collective_calls(), bandwidths, st.floats(1.0, 1e3))
def test_time_grows_with_payload_and_latency(call, bandwidth, factor):
    op, algorithm, ranks, size, latency = call
    base = collective_time(op, ranks, size, bandwidth, latency, algorithm)
    assert collective_time(op, ranks, size * factor, bandwidth, latency, algorithm) >= base
    assert collective_time(op, ranks, size, bandwidth, latency * factor + 1e-9, algorithm) >= base


@given(st.sampled_from(PAIRS), sizes, bandwidths, latencies)
def test_one_rank_communicates_nothing(pair, size, bandwidth, latency):
    op, algorithm = pair
    assert collective_time(op, 1, size, bandwidth, latency, algorithm) == 0.0


@given(st.integers(1, 10**5), sizes, bandwidths, latencies)
def test_ring_allreduce_is_reduce_scatter_then_all_gather(ranks, size, bandwidth, latency):
    parts = collective_time("reduce_scatter", ranks, size, bandwidth, latency) + collective_time(
        "all_gather", ranks, size, bandwidth, latency
    )
    assert ring_allreduce_time(ranks, size, bandwidth, latency) == pytest.approx(parts, rel=1e-12)


@given(st.integers(2, 10**6), sizes, bandwidths)
def test_ring_bandwidth_term_tends_to_two_q_over_b(ranks, size, bandwidth):
    term = ring_allreduce_time(ranks, size, bandwidth, 0.0)
    limit = 2 * size / bandwidth
    assert term <= limit * (1 + 1e-12)
    assert limit - term == pytest.approx(limit / ranks, rel=1e-9)  # the gap is exactly 2Q/(pB)


@given(st.floats(1e6, 1e13), st.integers(1, 4096), st.floats(0, 16))
def test_a_higher_zero_stage_never_increases_memory(params, data_parallel, optimizer_bytes):
    values = [zero_model_state_bytes(params, data_parallel, stage, optimizer_bytes) for stage in range(4)]
    assert all(later <= earlier * (1 + 1e-12) for earlier, later in itertools.pairwise(values))


@given(
    st.sampled_from([1, 2, 4, 8]),
    st.sampled_from([1, 2, 4, 8]),
    st.sampled_from([1, 2, 4]),
    st.integers(1, 64),
    st.booleans(),
)
def test_recomputation_and_zero_never_increase_plan_memory(d, t, b, m, sp):
    totals = []
    for stage in range(4):
        for recompute in ("none", "selective", "full"):
            plan = ParallelPlan(
                data_parallel=d,
                tensor_parallel=t,
                pipeline_parallel=4,
                zero_stage=stage,
                micro_batch=b,
                grad_accum_steps=m,
                recompute=recompute,
                sequence_parallel=sp,
            )
            totals.append((stage, recompute, memory_breakdown(GPT3_175B, plan, calibration=None).total))
    by_key = {(s, r): total for s, r, total in totals}
    for stage in range(4):
        assert by_key[(stage, "none")] >= by_key[(stage, "selective")] >= by_key[(stage, "full")]
    for recompute in ("none", "selective", "full"):
        assert all(by_key[(s, recompute)] >= by_key[(s + 1, recompute)] for s in range(3))
