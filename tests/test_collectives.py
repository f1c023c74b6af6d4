"""The α–β cost model against the card's example, nccl-tests' definitions and hand-derived Thakur et al. costs."""

import math

import numpy as np
import pytest

from course_lib import collectives
from course_lib.collectives import (
    ALGORITHMS,
    OPS,
    algbw_bytes_per_s,
    algbw_from_busbw,
    busbw_bytes_per_s,
    busbw_factor,
    collective_cost,
    collective_time,
    comm_time,
    hierarchical_allreduce_time,
    latency_bandwidth_crossover_bytes,
    multirail_ring_allreduce_time,
    ring_allreduce_time,
)
from course_lib.simulate import simulate
from course_lib.units import GB, MB, US


def test_card_worked_example():
    # "four latency-bearing phases at 5 µs plus 100 MB at 50 GB/s gives about 2.02 ms"
    assert comm_time(4, 5 * US, 100 * MB, 50 * GB) == pytest.approx(2.02e-3, rel=1e-12)


# nccl-tests doc/PERFORMANCE.md summary and src/*.cu *GetBw.
NCCL_TESTS_FACTORS = {
    2: {"all_reduce": 1.0, "all_gather": 0.5},
    4: {"all_reduce": 1.5, "all_gather": 0.75},
    8: {"all_reduce": 1.75, "all_gather": 0.875},
    16: {"all_reduce": 1.875, "all_gather": 0.9375},
}


@pytest.mark.parametrize("n", sorted(NCCL_TESTS_FACTORS))
def test_busbw_factors_match_nccl_tests(n):
    printed = NCCL_TESTS_FACTORS[n]
    assert busbw_factor("all_reduce", n) == printed["all_reduce"]
    assert busbw_factor("all_gather", n) == printed["all_gather"]
    assert busbw_factor("reduce_scatter", n) == printed["all_gather"]  # (n−1)/n
    assert busbw_factor("all_to_all", n) == printed["all_gather"]  # (n−1)/n
    assert busbw_factor("broadcast", n) == 1.0
    assert busbw_factor("reduce", n) == 1.0
    assert busbw_factor("send_recv", n) == 1.0  # sendrecv.cu: factor 1


def test_busbw_is_algbw_times_factor_and_inverts():
    # An 8-rank all-reduce of 1 GB in 5 ms: algbw 200 GB/s, busbw 200 × 1.75 = 350 GB/s.
    assert algbw_bytes_per_s(1 * GB, 5e-3) == pytest.approx(200 * GB)
    assert busbw_bytes_per_s("all_reduce", 8, 1 * GB, 5e-3) == pytest.approx(350 * GB)
    assert algbw_from_busbw("all_reduce", 8, 350 * GB) == pytest.approx(200 * GB)


@pytest.mark.parametrize(
    "op, algorithm",
    [
        ("all_reduce", "ring"),
        ("reduce_scatter", "ring"),
        ("all_gather", "ring"),
        ("all_to_all", "pairwise"),
        ("all_reduce", "rabenseifner"),
    ],
)
@pytest.mark.parametrize("ranks", [2, 4, 8, 16])
def test_busbw_of_a_bandwidth_optimal_algorithm_equals_the_link_bandwidth(op, algorithm, ranks):
    # nccl-tests' point: with zero latency, busbw of a bandwidth-optimal algorithm is the link's bandwidth.
    bandwidth = 100 * GB
    time = collective_time(op, ranks, 1 * GB, bandwidth, 0.0, algorithm)
    assert busbw_bytes_per_s(op, ranks, 1 * GB, time) == pytest.approx(bandwidth, rel=1e-12)


# Hand-derived costs for p = 8, S = 8 MB, α = 2 µs, B = 10 GB/s (S/B = 800 µs), from the MPICH/Thakur formulas
# (lg 8 = 3, (p−1)/p = 7/8).
S, ALPHA, BW = 8 * MB, 2 * US, 10 * GB
HAND = {
    ("all_reduce", "ring"): 14 * ALPHA + 2 * 7 / 8 * 800 * US,
    ("all_reduce", "recursive_doubling"): 3 * ALPHA + 3 * 800 * US,
    ("all_reduce", "rabenseifner"): 6 * ALPHA + 2 * 7 / 8 * 800 * US,
    ("all_reduce", "binomial_tree"): 6 * ALPHA + 6 * 800 * US,
    # Double binary tree, k = 64 chunks per tree: 2⌊lg 8⌋ = 6 levels up and down; the busiest rank sends 2S, and
    # the first chunk's trip adds 6 chunks of S/(2·64): Q = 2S + 6·S/128.
    ("all_reduce", "double_binary_tree"): 6 * ALPHA + (2 + 6 / 128) * 800 * US,
    ("reduce_scatter", "ring"): 7 * ALPHA + 7 / 8 * 800 * US,
    ("reduce_scatter", "recursive_halving"): 3 * ALPHA + 7 / 8 * 800 * US,
    ("all_gather", "ring"): 7 * ALPHA + 7 / 8 * 800 * US,
    ("all_gather", "recursive_doubling"): 3 * ALPHA + 7 / 8 * 800 * US,
    ("broadcast", "binomial_tree"): 3 * ALPHA + 3 * 800 * US,
    ("broadcast", "ring"): (3 + 7) * ALPHA + 2 * 7 / 8 * 800 * US,
    ("reduce", "binomial_tree"): 3 * ALPHA + 3 * 800 * US,
    ("reduce", "rabenseifner"): 6 * ALPHA + 2 * 7 / 8 * 800 * US,
    ("reduce", "ring"): (7 + 3) * ALPHA + 2 * 7 / 8 * 800 * US,
    ("all_to_all", "pairwise"): 7 * ALPHA + 7 / 8 * 800 * US,
    ("all_to_all", "bruck"): 3 * ALPHA + 3 / 2 * 800 * US,
    ("send_recv", "ring"): ALPHA + 800 * US,
}


def test_hand_table_covers_every_algorithm():
    assert set(HAND) == {(op, a) for op in OPS for a in ALGORITHMS[op]}


@pytest.mark.parametrize("op, algorithm", sorted(HAND))
def test_costs_match_hand_derivation(op, algorithm):
    assert collective_time(op, 8, S, BW, ALPHA, algorithm) == pytest.approx(HAND[(op, algorithm)], rel=1e-12)


def test_reduction_cost_gamma_is_added_only_for_reductions():
    gamma = 1e-12  # s/byte
    base = collective_time("all_reduce", 8, S, BW, ALPHA)
    assert collective_time("all_reduce", 8, S, BW, ALPHA, reduce_s_per_byte=gamma) == pytest.approx(
        base + 7 / 8 * S * gamma
    )
    assert collective_time("all_gather", 8, S, BW, ALPHA, reduce_s_per_byte=gamma) == collective_time(
        "all_gather", 8, S, BW, ALPHA
    )


def test_ring_allreduce_is_reduce_scatter_plus_all_gather():
    for ranks in (2, 3, 8, 100):
        assert ring_allreduce_time(ranks, S, BW, ALPHA) == pytest.approx(
            collective_time("reduce_scatter", ranks, S, BW, ALPHA) + collective_time("all_gather", ranks, S, BW, ALPHA)
        )


def test_ring_allreduce_bandwidth_term_tends_to_twice_payload_over_bandwidth():
    limit = 2 * S / BW
    terms = [ring_allreduce_time(p, S, BW, 0.0) for p in (2, 8, 64, 1024, 10**6)]
    assert terms == sorted(terms)  # grows with p ...
    assert terms[-1] == pytest.approx(limit, rel=1e-5)  # ... towards 2S/B
    assert all(t <= limit for t in terms)


def test_non_power_of_two_counts_use_ceil_log2_steps():
    assert collective_cost("broadcast", 6, 1.0, "binomial_tree").phases == 3
    assert collective_cost("all_to_all", 5, 1.0, "bruck").phases == 3
    with pytest.raises(ValueError, match="power of two"):
        collective_cost("all_reduce", 6, 1.0, "recursive_doubling")


def test_crossover_payload_balances_the_two_terms():
    s_star = latency_bandwidth_crossover_bytes("all_reduce", 8, 50 * GB, 5 * US)
    assert s_star == pytest.approx(8 * 5 * US * 50 * GB)  # ring all-reduce: S* = p·α·B = 2 MB
    cost = collective_cost("all_reduce", 8, s_star)
    assert cost.phases * 5 * US == pytest.approx(cost.wire_bytes / (50 * GB))


def test_hierarchical_allreduce_reduces_to_flat_rings():
    intra, inter = (450 * GB, 1 * US), (50 * GB, 5 * US)
    assert hierarchical_allreduce_time(S, 1, 8, *intra, *inter) == pytest.approx(ring_allreduce_time(8, S, *intra))
    assert hierarchical_allreduce_time(S, 4, 1, *intra, *inter) == pytest.approx(ring_allreduce_time(4, S, *inter))
    # 2 nodes × 8: the network carries only S/8 per GPU, so it beats a flat ring over the network by far.
    assert hierarchical_allreduce_time(S, 2, 8, *intra, *inter) < ring_allreduce_time(16, S, *inter) / 4


def test_hierarchical_allreduce_hand_value():
    # RS + AG in node: 2 × (7 × 3 µs + 7/8 × 1 GB / 450 GB/s); ring AR of 125 MB over 4 nodes at 50 GB/s.
    expected = 2 * (7 * 3e-6 + 7 / 8 * 1e9 / 450e9) + (6 * 10e-6 + 2 * 3 / 4 * 125e6 / 50e9)
    assert hierarchical_allreduce_time(1 * GB, 4, 8, 450 * GB, 3e-6, 50 * GB, 10e-6) == pytest.approx(expected)


def test_functions_accept_arrays_for_curves():
    import numpy as np

    payloads = np.logspace(3, 10, 8)
    times = ring_allreduce_time(8, payloads, 50 * GB, 5 * US)
    assert times.shape == (8,)
    assert times[3] == pytest.approx(ring_allreduce_time(8, float(payloads[3]), 50 * GB, 5 * US))
    assert math.isclose(float(np.diff(np.log(times))[-1]), math.log(10), rel_tol=1e-2)  # bandwidth-bound: ∝ S


# ---- time_terms, applicable_algorithms and collective_report ---------------------------------------------------


def test_time_terms_by_hand():
    # Ring all-reduce, p = 4, S = 100 MB, B = 50 GB/s, α = 5 µs: n = 2(p−1) = 6 steps → 30 µs; Q = 2·3/4·S = 150 MB
    # → 3 ms; R = 3/4·S = 75 MB at γ = 1 ns/B → 75 ms.
    terms = collectives.time_terms("all_reduce", 4, 100 * MB, 50 * GB, 5 * US, reduce_s_per_byte=1e-9)
    assert terms.latency_s == pytest.approx(30e-6, rel=1e-12)
    assert terms.bandwidth_s == pytest.approx(3e-3, rel=1e-12)
    assert terms.reduction_s == pytest.approx(75e-3, rel=1e-12)
    assert terms.total_s == pytest.approx(30e-6 + 3e-3 + 75e-3, rel=1e-12)


def test_time_terms_regime_flips_at_the_crossover_and_works_on_arrays():
    # Ring all-reduce crossover S* = p·α·B = 8 · 5 µs · 50 GB/s = 2 MB.
    sizes = np.array([1.0, 1.999e6, 2e6, 2.001e6, 1e9])
    regimes = collectives.time_terms("all_reduce", 8, sizes, 50 * GB, 5 * US).regime
    assert list(regimes) == ["latency-bound", "latency-bound", "bandwidth-bound", "bandwidth-bound", "bandwidth-bound"]
    assert collectives.time_terms("all_reduce", 8, 2e6, 50 * GB, 5 * US).regime == "bandwidth-bound"  # a tie


@pytest.mark.parametrize(
    "op, ranks, expected",
    [
        ("all_reduce", 8, ("ring", "binomial_tree", "recursive_doubling", "rabenseifner", "double_binary_tree")),
        ("all_reduce", 6, ("ring", "binomial_tree", "double_binary_tree")),
        ("reduce_scatter", 3, ("ring",)),
        ("reduce_scatter", 4, ("ring", "recursive_halving")),
        ("all_to_all", 5, ("pairwise", "bruck")),
        ("all_gather", 1, ("ring", "recursive_doubling")),  # 1 = 2⁰
    ],
)
def test_applicable_algorithms(op, ranks, expected):
    assert collectives.applicable_algorithms(op, ranks) == expected
    for algorithm in expected:  # every algorithm offered can be costed
        collectives.collective_cost(op, ranks, 1e6, algorithm)


def test_collective_report_is_the_sum_of_its_parts():
    # p = 8, S = 1 GB, B = 100 GB/s, α = 5 µs: ring n = 14 → 70 µs, Q = 1.75 GB → 17.5 ms; algbw = S/T,
    # busbw = 1.75·algbw (nccl-tests), crossover p·α·B = 4 MB.
    r = collectives.collective_report("all_reduce", 8, 1 * GB, 100 * GB, 5 * US)
    assert (r.phases, r.wire_bytes, r.reduced_bytes) == (14, pytest.approx(1.75e9), pytest.approx(0.875e9))
    assert r.latency_term_s == pytest.approx(70e-6) and r.bandwidth_term_s == pytest.approx(17.5e-3)
    assert r.time_s == pytest.approx(17.57e-3, rel=1e-12) and r.regime == "bandwidth-bound"
    assert r.algbw_bytes_per_s == pytest.approx(1e9 / 17.57e-3, rel=1e-12)
    assert r.busbw_bytes_per_s == pytest.approx(1.75 * 1e9 / 17.57e-3, rel=1e-12)
    assert r.crossover_bytes == pytest.approx(4e6, rel=1e-12)
    # Recursive doubling: lg 8 = 3 steps of the whole buffer: 15 µs + 3 GB / 100 GB/s = 30.015 ms.
    assert r.times_by_algorithm["recursive_doubling"] == pytest.approx(30.015e-3, rel=1e-12)
    assert r.times_by_algorithm["ring"] == r.time_s
    assert set(r.times_by_algorithm) == set(collectives.applicable_algorithms("all_reduce", 8))


def test_collective_report_of_one_rank_moves_nothing():
    r = collectives.collective_report("all_reduce", 1, 1 * MB, 100 * GB, 5 * US)
    assert r.time_s == 0 and r.algbw_bytes_per_s is None and r.busbw_bytes_per_s is None and r.crossover_bytes is None


def test_collective_report_refuses_arrays_and_bad_algorithms():
    with pytest.raises(ValueError, match="payload_bytes must be a single number"):
        collectives.collective_report("all_reduce", 8, np.array([1e6, 2e6]), 100 * GB, 5 * US)
    with pytest.raises(ValueError, match="ranks must be a power of two"):
        collectives.collective_report("all_reduce", 6, 1e6, 100 * GB, 5 * US, algorithm="rabenseifner")


# ---- NCCL's double binary tree and the multi-rail flat ring -------------------------------------------------------


@pytest.mark.parametrize(
    "ranks, phases, wire, reduced",
    [
        # p, 2⌊lg p⌋, 2S·[p > 1] + ⌊lg p⌋·S/64, min(p − 1, 2)·S/2 (S = 1 byte)
        (1, 0, 0.0, 0.0),
        (2, 2, 2 + 1 / 64, 0.5),
        (3, 2, 2 + 1 / 64, 1.0),
        (8, 6, 2 + 3 / 64, 1.0),
        (12, 6, 2 + 3 / 64, 1.0),
        (1024, 20, 2 + 10 / 64, 1.0),
    ],
)
def test_double_binary_tree_cost_by_hand(ranks, phases, wire, reduced):
    assert collectives.DOUBLE_BINARY_TREE_CHUNKS == 64
    cost = collective_cost("all_reduce", ranks, 1.0, "double_binary_tree")
    assert cost.phases == phases
    assert cost.wire_bytes == pytest.approx(wire, rel=1e-12)
    assert cost.reduced_bytes == pytest.approx(reduced, rel=1e-12)


def test_double_binary_tree_beats_the_ring_on_latency_and_loses_on_bandwidth():
    # 64 ranks on InfiniBand (50 GB/s, 5 µs). Ring: 126 steps, Q = 2·63/64·S. Tree: 12 steps, Q = (2 + 6/64)·S.
    # Equal at 630 µs − 60 µs = ((2 + 6/64) − 126/64)·S/B → S = 570 µs · 50 GB/s / (8/64) = 228 MB.
    bandwidth, alpha = 50 * GB, 5 * US
    crossing = 570e-6 * bandwidth / (8 / 64)
    assert crossing == pytest.approx(228e6)
    ring, tree = ("ring", "double_binary_tree")
    small, large = 0.99 * crossing, 1.01 * crossing
    assert collective_time("all_reduce", 64, small, bandwidth, alpha, tree) < collective_time(
        "all_reduce", 64, small, bandwidth, alpha, ring
    )
    assert collective_time("all_reduce", 64, large, bandwidth, alpha, tree) > collective_time(
        "all_reduce", 64, large, bandwidth, alpha, ring
    )
    at = collective_time("all_reduce", 64, crossing, bandwidth, alpha, tree)
    assert at == pytest.approx(collective_time("all_reduce", 64, crossing, bandwidth, alpha, ring), rel=1e-12)


def test_double_binary_tree_bandwidth_term_is_near_the_ring_and_far_below_the_binomial_tree():
    # 1 GB on 1024 ranks: ring 2·1023/1024 = 1.998 S; double binary tree 2 + 10/64 = 2.156 S; binomial 20 S.
    terms = {
        a: collectives.time_terms("all_reduce", 1024, 1 * GB, 100 * GB, 0.0, a).bandwidth_s
        for a in ("ring", "double_binary_tree", "binomial_tree")
    }
    assert terms["double_binary_tree"] / terms["ring"] == pytest.approx((2 + 10 / 64) / (2 * 1023 / 1024))
    assert terms["binomial_tree"] / terms["double_binary_tree"] == pytest.approx(20 / (2 + 10 / 64))


def test_multirail_ring_by_hand():
    # 4 DGX H100 nodes, 1 GB: 8 rings (one per NIC), each all-reducing 125 MB over 32 ranks at
    # min(50 GB/s, 450/8 = 56.25 GB/s) = 50 GB/s with α = 5 µs: 62 × 5 µs + 2·31/32 × 125 MB / 50 GB/s.
    expected = 62 * 5e-6 + 2 * 31 / 32 * 125e6 / 50e9
    assert multirail_ring_allreduce_time(1 * GB, 4, 8, 450 * GB, 1 * US, 50 * GB, 5 * US) == pytest.approx(expected)
    # One rail is the single-channel flat ring through one GPU's NIC.
    assert multirail_ring_allreduce_time(1 * GB, 4, 8, 450 * GB, 1 * US, 50 * GB, 5 * US, rails=1) == pytest.approx(
        ring_allreduce_time(32, 1 * GB, 50 * GB, 5 * US)
    )
    # When NVLink shared by the rails is the slower hop: 8 rails, 200 GB/s NVLink → 25 GB/s per ring.
    slow = 62 * 5e-6 + 2 * 31 / 32 * 125e6 / 25e9
    assert multirail_ring_allreduce_time(1 * GB, 4, 8, 200 * GB, 1 * US, 50 * GB, 5 * US) == pytest.approx(slow)
    # One node: the ring over NVLink.
    assert multirail_ring_allreduce_time(1 * GB, 1, 8, 450 * GB, 1 * US, 50 * GB, 5 * US) == pytest.approx(
        ring_allreduce_time(8, 1 * GB, 450 * GB, 1 * US)
    )


def test_multirail_network_term_equals_the_hierarchical_one_up_to_the_rank_factor():
    # Both send about 2S/B_node over the network: multi-rail 2(Ng−1)/(Ng)·S/B_node, hierarchical 2(N−1)/N·S/B_node.
    # What the hierarchy saves is latency steps: 2(N−1) network steps instead of 2(Ng−1).
    nodes, g, node_bw = 16, 8, 400 * GB
    multirail = multirail_ring_allreduce_time(1 * GB, nodes, g, 450 * GB, 0.0, node_bw / g, 0.0)
    assert multirail == pytest.approx(2 * (nodes * g - 1) / (nodes * g) * 1 * GB / node_bw)
    network_only = hierarchical_allreduce_time(1 * GB, nodes, g, 1e30, 0.0, node_bw / g, 0.0)  # NVLink free
    assert network_only == pytest.approx(2 * (nodes - 1) / nodes * 1 * GB / node_bw)
    latency_multirail = multirail_ring_allreduce_time(1.0, nodes, g, 450 * GB, 0.0, node_bw / g, 5 * US)
    latency_hier = hierarchical_allreduce_time(1.0, nodes, g, 450 * GB, 0.0, node_bw / g, 5 * US)
    assert latency_multirail == pytest.approx(2 * 127 * 5 * US, rel=1e-3)
    assert latency_hier == pytest.approx(2 * 15 * 5 * US, rel=1e-3)


def test_multirail_rejects_more_rails_than_devices():
    with pytest.raises(ValueError, match="rails must be"):
        multirail_ring_allreduce_time(1 * GB, 4, 8, 450 * GB, 1 * US, 50 * GB, 5 * US, rails=9)


def test_ring_docstring_states_the_lower_bound_without_a_factor():
    doc = ring_allreduce_time.__doc__
    assert "within a factor" not in doc and "equals the lower bound" in doc


def test_equal_time_payload_by_hand():
    # 8 ranks, 50 GB/s, 5 µs. Recursive doubling (3 steps, 3S) against Rabenseifner (6 steps, 1.75S):
    # 3 × 5 µs = 1.25·S/B → S = 15 µs × 50 GB/s / 1.25 = 600 kB.
    args = ("all_reduce", 8, 50 * GB, 5 * US)
    assert collectives.equal_time_payload_bytes(*args, "recursive_doubling", "rabenseifner") == pytest.approx(600e3)
    assert collectives.equal_time_payload_bytes(*args, "rabenseifner", "recursive_doubling") == pytest.approx(600e3)
    # Ring (14 steps, 1.75S) against the double binary tree (6 steps, (2 + 3/64)S): 40 µs·B / (19/64) = 6.74 MB.
    assert collectives.equal_time_payload_bytes(*args, "ring", "double_binary_tree") == pytest.approx(
        40e-6 * 50e9 / (19 / 64)
    )
    # Never: Rabenseifner has as few steps as the tree and fewer bytes; the ring never beats Rabenseifner.
    assert collectives.equal_time_payload_bytes(*args, "rabenseifner", "double_binary_tree") is None
    assert collectives.equal_time_payload_bytes(*args, "ring", "rabenseifner") is None


@pytest.mark.parametrize("ranks", [2, 3, 4, 8, 9])
def test_ring_steps_and_phases_are_the_cost_models(ranks):
    # 2(p − 1) steps: p − 1 of reduce-scatter, in which the simulated receivers add, then p − 1 of all-gather.
    steps = collectives.ring_allreduce_step_count(ranks)
    assert steps == collectives.collective_cost("all_reduce", ranks, 1.0, "ring").phases == 2 * (ranks - 1)
    phases = [collectives.ring_step_phase("all_reduce", ranks, step) for step in range(steps + 1)]
    assert phases == ["before any transfer"] + ["reduce-scatter"] * (ranks - 1) + ["all-gather"] * (ranks - 1)
    sim = simulate("all_reduce", ranks, elements=ranks)
    assert sim.step_count == steps
    for step, transfers in enumerate(sim.steps, start=1):
        assert {transfer.reduce for transfer in transfers} == {phases[step] == "reduce-scatter"}, step
    assert collectives.ring_step_phase("all_gather", ranks, ranks - 1) == "all-gather"
    with pytest.raises(ValueError, match=rf"^step must be in 0\.\.{steps}\b"):
        collectives.ring_step_phase("all_reduce", ranks, steps + 1)
    with pytest.raises(ValueError, match="^op"):
        collectives.ring_step_phase("broadcast", ranks, 1)
