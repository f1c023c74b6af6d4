"""Step time, exposure and the plan search: identities, hand values and agreement between scalar and bulk paths."""

from dataclasses import replace

import numpy as np
import pytest

from course_lib import budget, hardware, nccl, parallelism
from course_lib.budget import exposed_after_overlap, group_collective_time, search_plans, step_time
from course_lib.collectives import latency_bandwidth_crossover_bytes
from course_lib.compute import transformer_flops_per_iteration, transformer_forward_flops
from course_lib.parallelism import (
    GPT2_1_5B,
    GPT3_175B,
    MEGATRON_1T,
    MEGATRON_22B,
    ParallelPlan,
    memory_breakdown,
    pipeline_bubble_fraction,
    step_transfers,
)

CLUSTER_2x8 = hardware.Cluster("2 × DGX H100", hardware.H100, 8, 2, hardware.NVLINK4, hardware.INFINIBAND_NDR_8X)
FLOOR = hardware.LAUNCH_FLOOR_S  # every NCCL call's launch floor, 4.8 µs


def test_card_example_exposure():
    # 2.02 ms of communication against 1 ms of local compute: 1.02 ms exposed even with a perfect overlap schedule.
    assert exposed_after_overlap(2.02e-3, 1e-3) == pytest.approx(1.02e-3)
    assert exposed_after_overlap(2.02e-3, 5e-3) == 0.0


def test_group_placement_puts_members_on_nodes_in_megatron_order():
    c = CLUSTER_2x8
    assert budget.group_placement(c, 8, 1) == (8, 1)
    assert budget.group_placement(c, 16, 1) == (8, 2)
    assert budget.group_placement(c, 8, 2) == (4, 2)  # ranks 0, 2, 4, 6 and 8, ..., 14
    assert budget.group_placement(c, 2, 8) == (1, 2)  # a data-parallel group behind t = 8
    assert budget.group_placement(c, 4, 8) == (1, 4)  # more nodes than the cluster has: the search weighs such plans


def test_group_calls_by_hand_on_two_h100_nodes():
    # NVLink 4 at NCCL's 18 × 20.6 = 370.8 GB/s per GPU, InfiniBand NDR 50 GB/s per GPU (400 GB/s per node), Intel
    # hosts; S = 1 GB. NCCL's constants: shared/data/nccl_tuning_constants.md.
    c = CLUSTER_2x8
    # Every call also pays the launch floor, FLOOR = hardware.LAUNCH_FLOOR_S = 4.8 µs.
    # 8 ranks in one node: NVLS, 25 µs + S / (370.8 × 0.85 × 15/16 × 2 × 8/14 GB/s).
    one_node = budget.group_collective("all_reduce", c, 8, 1, 1e9)
    assert (one_node.algorithm, one_node.protocol, one_node.levels) == ("nvls", "Simple", ("in node",))
    assert one_node.time_s == pytest.approx(FLOOR + 25e-6 + 1e9 / (370.8e9 * 0.85 * 15 / 16 * 2 * 8 / 14))
    # 16 ranks on two nodes: NVLS inside, a tree between: 25 + 2 × 20.9 µs, NVLS's bandwidth (the network's 2 ×
    # 400 GB/s does not bind) × 16/30.
    two_nodes = budget.group_collective("all_reduce", c, 16, 1, 1e9)
    assert (two_nodes.algorithm, two_nodes.levels) == ("nvls_tree", ("in node", "across nodes"))
    assert two_nodes.time_s == pytest.approx(FLOOR + 66.8e-6 + 1e9 / (370.8e9 * 0.85 * 15 / 16 * 2 * 16 / 30))
    assert two_nodes.time_s == pytest.approx(3.24438e-3, rel=1e-5)
    # One member per node (stride 8): the ring over the network's 50 GB/s beats the tree's 0.92 × 2 × 50 / 2; its
    # latency 8.4 + 2 × 14 µs (the network's tree hop when one GPU per node) × 1.4 (NCCL's ring plateau).
    flat = budget.group_collective("all_reduce", c, 2, 8, 1e9)
    assert (flat.algorithm, flat.protocol, flat.levels) == ("ring", "Simple", ("across nodes",))
    assert flat.time_s == pytest.approx(FLOOR + 1.4 * 36.4e-6 + 1e9 / 50e9)
    # Point-to-point sends: the network's α + S / 50 GB/s, or NVLink's α + S / 370.8 GB/s.
    assert group_collective_time("send_recv", c, 2, 8, 1e9) == pytest.approx(FLOOR + 5e-6 + 1e9 / 50e9)
    assert group_collective_time("send_recv", c, 2, 1, 1e9) == pytest.approx(FLOOR + 1e-6 + 1e9 / 370.8e9)
    assert budget.group_collective("send_recv", c, 2, 1, 1e9).levels == ("in node",)
    assert group_collective_time("all_reduce", c, 1, 1, 1e9) == 0.0


def test_group_calls_in_bulk_agree_with_one_group_at_a_time():
    sizes, strides = np.array([16, 8, 2, 4]), np.array([1, 2, 8, 1])
    for op in ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "send_recv"):
        bulk = budget.group_collective(op, CLUSTER_2x8, sizes, strides, 1e9)
        for i, (n, stride) in enumerate(zip(sizes, strides, strict=True)):
            one = budget.group_collective(op, CLUSTER_2x8, int(n), int(stride), 1e9)
            assert one.algorithm == bulk.algorithm[i] and one.protocol == bulk.protocol[i]
            assert one.time_s == pytest.approx(bulk.time_s[i], rel=1e-12)


def test_group_all_to_all_is_ncclS_grouped_point_to_point():
    # 8 ranks in a node: NVLink's 1 µs + 7/8 of S at 370.8 GB/s. 16 ranks on two nodes: half of S leaves the node
    # through each GPU's 50 GB/s while 7/16 crosses NVLink. Stride 8: one member per node, 1/2 of S on the network.
    c = CLUSTER_2x8
    one_node = budget.group_collective("all_to_all", c, 8, 1, 1e9)
    assert (one_node.algorithm, one_node.protocol, one_node.levels) == ("p2p", "Simple", ("in node",))
    assert one_node.time_s == pytest.approx(FLOOR + 1e-6 + 7 / 8 * 1e9 / 370.8e9)
    two_nodes = budget.group_collective("all_to_all", c, 16, 1, 1e9)
    assert two_nodes.levels == ("in node", "across nodes") and two_nodes.ranks_per_node == 8
    assert two_nodes.time_s == pytest.approx(FLOOR + 5e-6 + 8 / 16 * 1e9 / 50e9)
    across = budget.group_collective("all_to_all", c, 2, 8, 1e9)
    assert across.levels == ("across nodes",) and across.time_s == pytest.approx(FLOOR + 5e-6 + 1 / 2 * 1e9 / 50e9)
    assert group_collective_time("all_to_all", c, 1, 1, 1e9) == 0.0
    assert budget.group_collective("all_to_all", c, 16, 1, 1e9, algorithm="p2p").time_s == two_nodes.time_s
    with pytest.raises(ValueError, match="algorithm must be None or 'p2p' and protocol None for all_to_all"):
        budget.group_collective("all_to_all", c, 8, 1, 1e9, algorithm="ring")
    with pytest.raises(ValueError, match="algorithm must be None or 'p2p' and protocol None for all_to_all"):
        budget.group_collective("all_to_all", c, 8, 1, 1e9, protocol="LL")


def test_group_all_to_all_off_nccl_is_the_textbook_pairwise_exchange():
    # TPU v5e (no NCCL): MPI's pairwise exchange in the α–β model, n − 1 steps of S/n at the slowest link's α, at the
    # slower of the device's ICI share and its own network share when the group spans nodes.
    tpu = hardware.Cluster("TPU", hardware.TPU_V5E, 4, 2, hardware.ICI_V5E, hardware.INFINIBAND_NDR_8X)
    one_node = budget.group_collective("all_to_all", tpu, 4, 1, 1e9)
    alpha, intra = tpu.intra_node_link.latency_s, tpu.intra_bandwidth_bytes_per_s
    assert (one_node.algorithm, one_node.protocol) == ("pairwise", "α–β")
    assert one_node.time_s == pytest.approx(3 * alpha + 3 / 4 * 1e9 / intra)
    two_nodes = budget.group_collective("all_to_all", tpu, 8, 1, 1e9)
    alpha = max(alpha, tpu.inter_node_link.latency_s)
    slowest = min(intra, tpu.inter_bandwidth_bytes_per_s)
    assert two_nodes.time_s == pytest.approx(7 * alpha + 7 / 8 * 1e9 / slowest)
    with pytest.raises(ValueError, match="algorithm must be 'pairwise' \\(or None\\) and protocol None for all_to_all"):
        budget.group_collective("all_to_all", tpu, 4, 1, 1e9, algorithm="ring")


def test_group_calls_refuse_other_collectives():
    with pytest.raises(ValueError, match="op must be one of 'all_reduce'"):
        budget.group_collective("broadcast", CLUSTER_2x8, 8, 1, 1e9)


def test_single_device_step_is_pure_compute():
    plan = ParallelPlan(micro_batch=2, grad_accum_steps=3)
    step = step_time(GPT2_1_5B, plan, hardware.DGX_H100, compute_efficiency=0.5, calibration=None)
    flops = transformer_flops_per_iteration(
        6, GPT2_1_5B.seq_len, GPT2_1_5B.layers, GPT2_1_5B.hidden, GPT2_1_5B.vocab, recompute="none"
    )
    assert step.total_s == pytest.approx(flops / (989e12 * 0.5))
    assert step.compute_s == step.total_s
    assert step.bubble_s == 0 and step.exposed_communication_s == 0
    assert step.binding_constraint == "compute"


PLANS = [
    ParallelPlan(data_parallel=2, tensor_parallel=8, micro_batch=1, grad_accum_steps=4),
    ParallelPlan(
        data_parallel=4,
        tensor_parallel=2,
        pipeline_parallel=2,
        zero_stage=3,
        micro_batch=2,
        grad_accum_steps=4,
        recompute="full",
        sequence_parallel=True,
    ),
    ParallelPlan(
        tensor_parallel=4,
        pipeline_parallel=4,
        grad_accum_steps=8,
        schedule="interleaved",
        virtual_stages=2,
        zero_stage=1,
    ),
    ParallelPlan(data_parallel=16, zero_stage=2, micro_batch=1, grad_accum_steps=2, recompute="selective"),
]


@pytest.mark.parametrize("plan", PLANS)
def test_step_time_adds_up(plan):
    step = step_time(GPT3_175B, plan, CLUSTER_2x8, calibration=None)
    parts = step.compute_s + step.bubble_s + sum(step.exposed_s.values())
    assert step.total_s == pytest.approx(parts)
    assert step.total_s >= step.compute_s
    # The bubble is (p−1)/(v·m) of the time the stage spends on its m micro-batches.
    busy = step.compute_s + step.exposed_s["tensor"] + step.exposed_s["pipeline"]
    assert step.bubble_s == pytest.approx(
        busy * pipeline_bubble_fraction(plan.pipeline_parallel, plan.grad_accum_steps, plan.virtual_stages)
    )
    assert all(v >= 0 for v in step.overlapped_s.values())
    assert step.overlapped_s["tensor"] == 0 and step.overlapped_s["pipeline"] == 0  # critical path: never hidden


def test_data_parallel_reduction_hides_behind_the_backward_until_it_cannot():
    plan = ParallelPlan(data_parallel=16, micro_batch=8, grad_accum_steps=1)
    fast = step_time(GPT2_1_5B, plan, CLUSTER_2x8, calibration=None)
    assert fast.exposed_s["data"] == 0 and fast.overlapped_s["data"] > 0
    slow_network = hardware.Cluster(
        "slow",
        hardware.H100,
        1,
        16,
        hardware.NVLINK4,
        hardware.Link("1 Gb/s", 0.125e9, "one-way", "per node", "nominal", 5e-6, "-", "-"),
    )
    slow = step_time(GPT2_1_5B, plan, slow_network, calibration=None)
    total = slow.exposed_s["data"] + slow.overlapped_s["data"]
    assert total == pytest.approx(group_collective_time("all_reduce", slow_network, 16, 1, 2 * GPT2_1_5B.params))
    assert slow.exposed_s["data"] > 0.9 * total  # the backward window is far shorter than the reduction
    assert slow.binding_constraint == "exposed communication"


def test_tensor_parallel_across_nodes_costs_more_than_inside():
    inside = step_time(
        GPT3_175B, ParallelPlan(tensor_parallel=8, data_parallel=2, grad_accum_steps=2), CLUSTER_2x8, calibration=None
    )
    across = step_time(GPT3_175B, ParallelPlan(tensor_parallel=16, grad_accum_steps=4), CLUSTER_2x8, calibration=None)
    # NVLS in one node (179 µs a 50.3 MB call, the launch floor included) against NVLS inside and a tree between nodes
    # (231 µs), twice as many calls per device (4 micro-batches of 96 layers instead of 2): 2.6 times the exposed
    # tensor-parallel time.
    assert across.exposed_s["tensor"] / inside.exposed_s["tensor"] == pytest.approx(2.586, rel=1e-3)


def test_plan_needing_more_devices_than_the_cluster_is_refused():
    with pytest.raises(ValueError, match="devices"):
        step_time(GPT3_175B, ParallelPlan(data_parallel=16), hardware.DGX_H100, calibration=None)


@pytest.fixture(scope="module")
def search_1t():
    return search_plans(MEGATRON_1T, hardware.SELENE_3072, 3072, calibration=None)


def _expected_plan_count(devices):
    count = 0
    divisors = [x for x in range(1, devices + 1) if devices % x == 0]
    for t in divisors:
        for p in divisors:
            if devices % (t * p):
                continue
            per_shape = 4 * 4 * 3  # micro-batches × ZeRO stages × recomputation
            sp = 2 if t > 1 else 1
            v = 3 if p > 1 else 1
            count += per_shape * sp * v
    return count


def test_search_enumerates_the_full_space(search_1t):
    assert search_1t.evaluated == _expected_plan_count(3072)
    assert sum(search_1t.rejected.values()) + int(search_1t.feasible.sum()) == search_1t.evaluated
    assert (
        len(search_1t)
        == search_1t.evaluated - search_1t.rejected["partition"] - search_1t.rejected["batch divisibility"]
    )


def test_search_ranks_feasible_plans_by_step_time(search_1t):
    c = search_1t.columns
    fits = c["fits"]
    assert fits[: int(fits.sum())].all() and not fits[int(fits.sum()) :].any()
    times = c["step_time_s"][fits]
    assert np.all(np.diff(times) >= -1e-9)
    assert np.all(c["memory_bytes"][fits] <= hardware.A100.hbm_capacity_bytes)
    assert np.all(c["memory_bytes"][~fits] > hardware.A100.hbm_capacity_bytes)
    assert set(np.unique(c["binding_constraint"])) <= set(budget.BINDING_CONSTRAINTS)
    assert np.all((c["binding_constraint"] == "memory") == ~fits)
    assert np.all(c["data_parallel"] * c["tensor_parallel"] * c["pipeline_parallel"] == 3072)
    assert np.all(c["micro_batch"] * c["grad_accum_steps"] * c["data_parallel"] == 3072)


def test_bulk_and_scalar_evaluations_agree(search_1t):
    rows = list(range(0, 5)) + list(range(len(search_1t) - 3, len(search_1t)))
    for row in rows:
        plan = search_1t.plan(row)
        scalar = step_time(MEGATRON_1T, plan, hardware.SELENE_3072, calibration=None)
        assert scalar.total_s == pytest.approx(search_1t.columns["step_time_s"][row], rel=1e-12)
        assert memory_breakdown(MEGATRON_1T, plan, calibration=None).total == pytest.approx(
            search_1t.columns["memory_bytes"][row], rel=1e-12
        )


def test_the_published_1t_plan_fits_and_find_returns_its_row(search_1t):
    # Narayanan et al. 2021 trained the 1T model with t = 8, p = 64 (d = 6), b = 1, interleaved, full recompute.
    c = search_1t.columns
    match = (
        (c["tensor_parallel"] == 8)
        & (c["pipeline_parallel"] == 64)
        & (c["micro_batch"] == 1)
        & (c["recompute"] == "full")
        & (c["zero_stage"] == 0)
        & (c["virtual_stages"] == 2)
        & ~c["sequence_parallel"]
    )
    assert match.sum() == 1
    assert c["fits"][match][0]
    fields = dict(tensor_parallel=8, pipeline_parallel=64, micro_batch=1, recompute="full", zero_stage=0)
    row = search_1t.find(**fields, virtual_stages=2, sequence_parallel=False)
    assert row == np.flatnonzero(match)[0]
    assert row == 397  # the ideal model's rank of the paper's plan (lesson 05 states the calibrated one's)
    with pytest.raises(ValueError, match=r"2 plans match tensor_parallel=8, .*, virtual_stages=2 \(rows 397, 400\)"):
        search_1t.find(**fields, virtual_stages=2)  # with and without sequence parallelism
    with pytest.raises(ValueError, match="no plan matches tensor_parallel=5"):
        search_1t.find(tensor_parallel=5)
    with pytest.raises(ValueError, match="tensor is not a field"):
        search_1t.find(tensor=8)
    with pytest.raises(ValueError, match="at least one field"):
        search_1t.find()


def test_table_lists_the_rows_asked_for(search_1t):
    caption, *lines = search_1t.table([0, 397]).splitlines()
    assert caption == "fits: memory ≤ 80 GB (no margin); step: a point estimate (no measured band)"
    assert lines[0].split() == ("row d t p ZeRO b m v recompute SP memory step exposed bubble binding".split())
    # Row 0 is the fastest plan that fits; row 397 the paper's plan (Narayanan et al. 2021, Table 1).
    assert lines[1].split()[:10] == "0 24 8 16 1 1 128 4 selective yes".split()
    assert lines[2].split() == "397 6 8 64 0 1 512 2 full no 51.5 GB 2.01 min 6.27 s 6.98 s compute".split()
    with pytest.raises(ValueError, match="rows"):
        search_1t.table([len(search_1t)])


def test_search_rejects_batches_that_cannot_be_formed():
    found = search_plans(GPT2_1_5B, hardware.DGX_H100, global_batch=7, calibration=None)
    assert found.rejected["batch divisibility"] > 0
    assert np.all(found.columns["data_parallel"] == 1)  # only d = 1 divides 7 among d ∈ {1, 2, 4, 8}


# Numbers lesson 04 states in its exercise answers, where no output beside them prints them. Each assertion holds
# the number to the precision the prose gives it.
SELENE_GPT3_PLAN = ParallelPlan(
    data_parallel=16,
    tensor_parallel=8,
    pipeline_parallel=8,
    zero_stage=1,
    micro_batch=1,
    grad_accum_steps=96,
    recompute="selective",
    sequence_parallel=True,
)


def test_lesson_04_exercise_1_exposed_gradients_do_not_depend_on_m():
    # "the data-parallel reduce-scatter took 205 ms against a 149 ms window ... 56 ms stay exposed" with 96 or 8
    # micro-batches; with 8 "the exposed share grows".
    selene = hardware.SELENE_3072
    steps = {
        m: step_time(GPT3_175B, SELENE_GPT3_PLAN.replace(grad_accum_steps=m), selene, calibration=None) for m in (96, 8)
    }
    (gradients,) = [
        t for t in step_transfers(GPT3_175B, SELENE_GPT3_PLAN) if t.op == "reduce_scatter" and t.axis == "data"
    ]
    reduce_scatter_s = budget.transfer_time_per_call(gradients, SELENE_GPT3_PLAN, selene)
    assert round(reduce_scatter_s * 1e3) == 205
    assert round(steps[96].overlapped_s["data"] * 1e3) == 149
    for step in steps.values():
        assert round((step.exposed_s["data"] - reduce_scatter_s) * 1e3) == 56  # the all-gather is wholly exposed
    assert steps[8].exposed_s["data"] == pytest.approx(steps[96].exposed_s["data"], rel=1e-12)
    share = {m: s.exposed_communication_s / s.total_s for m, s in steps.items()}
    assert share[8] > share[96]


def test_lesson_07_exercise_1_the_cross_node_all_reduce_by_hand():
    # Lesson 07's exercise 1 (GPT-3's t = 16 all-reduce on Selene, from lesson 04): "NCCL runs the flat ring with
    # LL128: 75.2 µs + 50.3 MB / 98.1 GB/s = 588 µs, against 423 µs inside one node."
    activation_bytes = 2 * GPT3_175B.seq_len * GPT3_175B.hidden
    best = nccl.candidates("all_reduce", hardware.SELENE_3072, 16, 2, activation_bytes)[0]
    assert (best["algorithm"], best["protocol"]) == ("ring", "LL128")
    # Latency: 14 + (30 − 2) × 1.9 + 2 × 4.0 µs; bandwidth: 0.92 × min(240, 8 × 25 GB/s) × 16/30.
    assert best["latency_s"] == pytest.approx(75.2e-6)
    assert best["bandwidth_bytes_per_s"] == pytest.approx(0.92 * 200e9 * 16 / 30)
    assert round(best["time_s"] * 1e6) == 588
    inside = budget.group_collective("all_reduce", hardware.SELENE_3072, 8, 1, activation_bytes)
    assert (inside.algorithm, inside.protocol) == ("ring", "Simple")  # no NVLS on the A100
    assert inside.time_s == pytest.approx(FLOOR + 56e-6 + activation_bytes / (240e9 * 8 / 14))
    assert round(inside.time_s * 1e6) == 428  # the launch floor on NCCL's 423 µs


def test_lesson_04_exercise_3_a_larger_batch_buys_back_efficiency():
    # "With 3072 sequences ... the data-parallel term stays about 290 ms, so the exposed share falls from 46 % to
    # about 27 % and the efficiency rises from 66 % to about 88 %."
    selene = hardware.SELENE_3072
    result = {}
    for batch in (768, 3072):
        steps = {}
        for d in (1, 384):
            plan = SELENE_GPT3_PLAN.replace(data_parallel=d, pipeline_parallel=1, grad_accum_steps=batch // d)
            steps[d] = step_time(MEGATRON_22B, plan, selene, calibration=None)
        last = steps[384]
        result[batch] = (
            round(100 * last.exposed_communication_s / last.total_s),
            round(100 * steps[1].total_s * 8 / (last.total_s * 3072)),
            round(last.exposed_s["data"] * 1e3, -1),
        )
    assert result == {768: (46, 66, 290), 3072: (27, 88, 290)}


def test_lesson_04_exercise_5_decode_crossover():
    # "The crossover on 8 ranks is 2.4 MB; b · 12288 · 2 bytes = 2.4 MB at b ≈ 98."
    selene = hardware.SELENE_3072
    crossover = latency_bandwidth_crossover_bytes(
        "all_reduce", 8, selene.intra_bandwidth_bytes_per_s, selene.intra_node_link.latency_s
    )
    assert crossover == pytest.approx(2.4e6)
    assert round(crossover / (GPT3_175B.hidden * 2)) == 98


# ---- the calibrated model, term by term (issue 10 item 9): m, p, t > 1, groups spanning nodes at a stride ---------

CLUSTER_4x8 = hardware.Cluster("4 × DGX H100", hardware.H100, 8, 4, hardware.NVLINK4, hardware.INFINIBAND_NDR_8X)
TOY = parallelism.TransformerModel(
    "toy", 4, 1024, 8, 32000, 1024, ffn_hidden=4096, kv_heads=8, gated_mlp=True, tied_embeddings=False, style="llama"
)
PLAIN = parallelism.Calibration(gemm_efficiency=0.5)


def _call_s(op, group_size, stride, payload_bytes):
    """One collective call on CLUSTER_4x8, as NCCL runs it: checked by hand in test_group_calls_by_hand_* and
    tests/test_nccl.py; here the step's assembly of the calls is what is checked."""
    return group_collective_time(op, CLUSTER_4x8, group_size, stride, payload_bytes)


def _toy_plan(**changes):
    fields = dict(data_parallel=8, tensor_parallel=2, pipeline_parallel=2, micro_batch=1, grad_accum_steps=4)
    fields.update(changes)
    return ParallelPlan(attention="flash", **fields)


def _toy_terms():
    """Hand values for _toy_plan() on CLUSTER_4x8 (t = 2, p = 2, d = 8, m = 4, b·s = 1024 tokens)."""
    h, f, s, v, t = 1024, 4096, 1024, 32000, 2
    tokens = 1024
    layer = 2 * (2 * h * h + 2 * h * h + 3 * h * f) + 4 * s * h  # per token, forward
    rate = 989e12 * 0.5
    forward = tokens * (2 * layer + 2 * v * h) / t / rate  # 2 layers per stage + the output layer
    backward = 2 * forward
    activation = 2 * tokens * h
    # TP: 4 all-reduces per layer (2 forward, 2 backward) of b·s·h over 2 GPUs in one node.
    tp = 2 * 4 * _call_s("all_reduce", 2, 1, activation)
    # PP: stage neighbours are t·d = 16 ranks apart, on another node: one message of S/t each way per micro-batch.
    pp = 2 * _call_s("send_recv", 2, 16, activation / t)
    slot = forward + backward + tp + pp
    # DP: 8 ranks at stride 2 → 4 per node on 2 nodes. fp32 gradients of the stage, in 25 MB buckets.
    params = (2 * TOY.params_per_layer + v * h) / t
    grads = 4 * params
    buckets = -(-grads // 25e6)
    sb = grads / buckets
    bucket = _call_s("all_reduce", 8, 2, sb)
    return dict(forward=forward, backward=backward, tp=tp, pp=pp, slot=slot, bucket=bucket, buckets=buckets)


def test_calibrated_step_by_hand():
    x = _toy_terms()
    step = step_time(TOY, _toy_plan(), CLUSTER_4x8, calibration=PLAIN)
    assert step.exposed_s["tensor"] == pytest.approx(4 * x["tp"], rel=1e-9)
    assert step.exposed_s["pipeline"] == pytest.approx(4 * x["pp"], rel=1e-9)
    # The gradient buckets hide behind one micro-batch's backward (not the whole micro-batch); the last cannot hide.
    reduction = x["buckets"] * x["bucket"]
    assert step.exposed_s["data"] == pytest.approx(max(reduction - x["backward"], x["bucket"]), rel=1e-9)
    assert step.bubble_s == pytest.approx(x["slot"], rel=1e-9)  # (p − 1)/v = 1 slot
    assert step.total_s == pytest.approx(5 * x["slot"] + step.exposed_s["data"], rel=1e-9)


def test_calibrated_recomputation_and_zero_terms_by_hand():
    x = _toy_terms()
    # Selective recomputation repeats no tensor-parallel collective; full recomputation repeats the 2 forward ones.
    selective = step_time(TOY, _toy_plan(recompute="selective"), CLUSTER_4x8, calibration=PLAIN)
    full = step_time(TOY, _toy_plan(recompute="full"), CLUSTER_4x8, calibration=PLAIN)
    assert selective.exposed_s["tensor"] == pytest.approx(4 * x["tp"], rel=1e-9)
    assert full.exposed_s["tensor"] == pytest.approx(4 * x["tp"] * 6 / 4, rel=1e-9)
    # ZeRO-2 on one stage of 4 layers (p = 1, d = 8 at stride 2: 4 per node, 2 nodes): the fp32 gradients are
    # reduce-scattered every micro-batch (m = 4 times), the bf16 parameters all-gathered once after the step, each in
    # its own 25 MB buckets.
    h, v, t = 1024, 32000, 2
    params = (4 * TOY.params_per_layer + v * h) / t
    grads, weights = 4 * params, 2 * params
    n_rs, n_ag = -(-grads // 25e6), -(-weights // 25e6)
    assert (n_rs, n_ag) == (8, 4)
    rs = _call_s("reduce_scatter", 8, 2, grads / n_rs)
    ag = _call_s("all_gather", 8, 2, weights / n_ag)
    layer = 2 * (4 * h * h + 3 * h * 4096) + 4 * 1024 * h
    forward = 1024 * (4 * layer + 2 * v * h) / t / (989e12 * 0.5)
    backward = 2 * forward
    gather_exposed = max(n_ag * ag - forward, ag)  # prefetched behind the first forward; the first bucket cannot hide
    for stage, expected, exposed in (
        (1, n_rs * rs + n_ag * ag, max(n_rs * rs - backward, rs) + gather_exposed),
        (
            2,
            4 * n_rs * rs + n_ag * ag,
            3 * max(n_rs * rs - backward, 0) + max(n_rs * rs - backward, rs) + gather_exposed,
        ),
    ):
        step = step_time(TOY, _toy_plan(zero_stage=stage, pipeline_parallel=1), CLUSTER_4x8, calibration=PLAIN)
        assert step.overlapped_s["data"] + step.exposed_s["data"] == pytest.approx(expected, rel=1e-9)
        assert step.exposed_s["data"] == pytest.approx(exposed, rel=1e-9)
    assert n_rs * rs > backward  # so that each micro-batch's reduction shows through its window


def test_bucketed_exposure_rule():
    # 10 buckets of 1 ms behind a 4 ms window: 6 ms exposed; behind a 20 ms window only the boundary bucket, once.
    assert budget.bucketed_exposure(10e-3, 1e-3, 4e-3) == pytest.approx(6e-3)
    assert budget.bucketed_exposure(10e-3, 1e-3, 20e-3, occurrences=4) == pytest.approx(1e-3)
    assert budget.bucketed_exposure(10e-3, 1e-3, 8e-3, occurrences=3) == pytest.approx(2 * 2e-3 + 2e-3)


def test_legacy_transfers_with_m_p_t_above_one():
    # GPT-3 on t = 4, p = 2, d = 2, m = 3: 48 layers per stage, 144 layer-micro-batches per step.
    base = dict(data_parallel=2, tensor_parallel=4, pipeline_parallel=2, grad_accum_steps=3)
    calls = {
        rc: [x.calls_per_step for x in step_transfers(GPT3_175B, ParallelPlan(recompute=rc, **base))][:2]
        for rc in ("none", "selective", "full")
    }
    assert calls == {"none": [288, 288], "selective": [288, 288], "full": [576, 288]}
    zero2 = step_transfers(GPT3_175B, ParallelPlan(zero_stage=2, **base))
    assert [(x.tensor, x.calls_per_step) for x in zero2 if x.axis == "data"] == [
        ("gradients", 3),
        ("updated parameters", 1),
    ]
    # The data-parallel volume: all-reduce 2(d−1)/d of 2 bytes × Ψ/(t·p).
    volume = parallelism.communication_volume_per_step(GPT3_175B, ParallelPlan(**base))
    assert volume["data"] == pytest.approx(2 * 1 / 2 * 2 * GPT3_175B.params / 8)


def test_mfu_and_hfu_of_the_published_1t_plan(search_1t):
    # HFU counts the recomputed forward (Eq. (3): 96Bslh²(1 + s/6h + V/16lh)), MFU does not (72Bslh²(1 + s/6h +
    # V/12lh)): for the 1T model their ratio is about 8/6, and HFU × step time × devices × peak = Eq. (3)'s FLOPs.
    fields = dict(tensor_parallel=8, pipeline_parallel=64, micro_batch=1, recompute="full", zero_stage=0)
    plan = search_1t.plan(search_1t.find(**fields, virtual_stages=2, sequence_parallel=False))
    step = step_time(MEGATRON_1T, plan, hardware.SELENE_3072, calibration=None)
    b, s, l, h, v = 3072, 2048, 128, 25600, 51200
    eq3 = 96 * b * s * l * h**2 * (1 + s / (6 * h) + v / (16 * l * h))
    assert step.hfu * 3072 * 312e12 * step.total_s == pytest.approx(eq3, rel=1e-9)
    model_flops = 72 * b * s * l * h**2 * (1 + s / (6 * h) + v / (12 * l * h))
    assert step.mfu * 3072 * 312e12 * step.total_s == pytest.approx(model_flops, rel=1e-9)
    assert step.hfu / step.mfu == pytest.approx(4 / 3, rel=0.01)


def test_search_reports_mfu_and_hfu_for_every_row():
    found = search_plans(GPT2_1_5B, hardware.DGX_H100, global_batch=512, micro_batch_sizes=(1, 2), calibration=None)
    row = found.row(0)
    assert 0 < row["mfu"] <= row["hfu"] <= 1
    plan = found.plan(0)
    step = step_time(GPT2_1_5B, plan, hardware.DGX_H100, calibration=None)
    assert row["mfu"] == pytest.approx(step.mfu) and row["hfu"] == pytest.approx(step.hfu)


# ---- the capstone's tools: one row per boundary tensor, re-ranking under a memory limit, the best worst case ----


def test_transfer_table_by_hand_on_two_nodes():
    # GPT-3 on 2 × 8 H100 (NVLink at NCCL's 370.8 GB/s; InfiniBand 50 GB/s per GPU, α = 5 µs), t = 8, d = 2, b = 1,
    # m = 2, ZeRO-1. One b·s·h activation: 2 × 2048 × 12288 = 50.33 MB.
    plan = ParallelPlan(data_parallel=2, tensor_parallel=8, grad_accum_steps=2, zero_stage=1)
    rows = budget.transfer_table(GPT3_175B, plan, CLUSTER_2x8)
    nvlink, infiniband = hardware.NVLINK4.name, hardware.INFINIBAND_NDR_8X.name
    assert [(r["axis"], r["op"], r["levels"], r["link"], r["crosses_nodes"], r["group_size"]) for r in rows] == [
        ("tensor", "all_reduce", "in node", nvlink, False, 8),
        ("tensor", "all_reduce", "in node", nvlink, False, 8),
        ("data", "reduce_scatter", "across nodes", infiniband, True, 2),
        ("data", "all_gather", "across nodes", infiniband, True, 2),
    ]
    activation = 2 * 2048 * 12288
    # NVLink SHARP over 8 in a node: 25 µs + S / (370.8 × 0.85 × 15/16 × 2 × 8/14 GB/s); 2 per layer × 96 layers
    # × 2 micro-batches.
    tp_call = FLOOR + 25e-6 + activation / (370.8e9 * 0.85 * 15 / 16 * 2 * 8 / 14)
    assert rows[0]["payload_bytes"] == activation and rows[0]["calls_per_step"] == 2 * 96 * 2
    assert rows[0]["time_per_call_s"] == pytest.approx(tp_call, rel=1e-9)
    assert rows[0]["time_s"] == pytest.approx(384 * tp_call, rel=1e-9)
    assert rows[0]["exposed_s"] == pytest.approx(rows[0]["time_s"], rel=1e-12)  # on the critical path
    # ZeRO-1 across the 2 nodes, one rank per node: reduce-scatter of 2 B × Ψ/8, NCCL's ring with Simple: 8.4 µs +
    # one network step at the network's tree latency (one GPU per node: 14 µs), S/2 at 50 GB/s.
    grads = 2 * GPT3_175B.params / 8
    assert rows[2]["payload_bytes"] == pytest.approx(grads)
    assert rows[2]["time_per_call_s"] == pytest.approx(FLOOR + 22.4e-6 + grads / 2 / 50e9, rel=1e-9)
    assert (rows[2]["calls_per_step"], rows[2]["phase"], rows[3]["phase"]) == (1, "last backward", "none")
    # The reduce-scatter hides behind the last micro-batch's backward: 2 × forward FLOPs / (t·p) at half of peak.
    backward = 2 * transformer_forward_flops(1, 2048, 96, 12288, 51200) / 8 / (0.5 * hardware.H100.peak("bf16"))
    assert rows[2]["exposed_s"] == pytest.approx(rows[2]["time_s"] - backward, rel=1e-9)
    assert rows[3]["exposed_s"] == pytest.approx(rows[3]["time_s"], rel=1e-12)  # after the optimizer step
    # A tensor group of 16 spans both nodes; pipeline stages t·d apart cross the network.
    for sequence_parallel in (False, True):  # all-reduces, or all-gathers (network first) and reduce-scatters
        plan = ParallelPlan(tensor_parallel=16, sequence_parallel=sequence_parallel)
        wide = budget.transfer_table(GPT3_175B, plan, CLUSTER_2x8)
        assert {(r["levels"], r["link"]) for r in wide} == {("in node + across nodes", infiniband)}
    piped = budget.transfer_table(GPT3_175B, ParallelPlan(tensor_parallel=8, pipeline_parallel=2), CLUSTER_2x8)
    send = next(r for r in piped if r["axis"] == "pipeline")
    assert send["levels"] == "across nodes" and send["payload_bytes"] == pytest.approx(activation / 8)
    assert send["time_per_call_s"] == pytest.approx(FLOOR + 5e-6 + activation / 8 / 50e9, rel=1e-9)
    text = budget.format_transfer_table(rows)
    assert len(text.splitlines()) == 5 and "50.3 MB" in text and "across nodes" in text


def test_transfer_table_is_the_partition_reports_and_sums_to_step_time():
    plan = ParallelPlan(data_parallel=2, tensor_parallel=4, pipeline_parallel=2, grad_accum_steps=4, zero_stage=1)
    rows = budget.transfer_table(GPT3_175B, plan, CLUSTER_2x8, compute_efficiency=0.4)
    report = budget.partition_report(GPT3_175B, plan, CLUSTER_2x8, compute_efficiency=0.4)
    assert [row.as_dict() for row in report.transfers] == list(rows) == report.as_dict()["transfers"]
    step = step_time(GPT3_175B, plan, CLUSTER_2x8, compute_efficiency=0.4, calibration=None)
    for axis in ("tensor", "pipeline", "data"):
        mine = [r for r in rows if r["axis"] == axis]
        assert sum(r["exposed_s"] for r in mine) == pytest.approx(step.exposed_s[axis], rel=1e-12, abs=1e-15)
        total = step.exposed_s[axis] + step.overlapped_s[axis]
        assert sum(r["time_s"] for r in mine) == pytest.approx(total, rel=1e-12, abs=1e-15)
        for r in mine:
            assert r["time_s"] == pytest.approx(r["calls_per_step"] * r["time_per_call_s"], rel=1e-12)


def test_fastest_within_is_the_brute_force_minimum():
    found = search_plans(GPT2_1_5B, hardware.DGX_H100, global_batch=512, micro_batch_sizes=(1, 2), calibration=None)
    memory, times, fits = (found.columns[k] for k in ("memory_bytes", "step_time_s", "fits"))
    for limit in (80e9, 12e9, 8e9, 6e9):
        allowed = fits & (memory <= limit)
        row = found.fastest_within(limit)
        assert memory[row] <= limit and fits[row]
        assert times[row] == pytest.approx(times[allowed].min())
    with pytest.raises(ValueError, match="memory_bytes"):
        found.fastest_within(1e6)
    assert found.find(**found.fields(7)) == 7


def _toy_search(times: dict, fits=None):
    """A PlanSearch holding plans named by their data-parallel size, with the given step times, fastest first."""
    names = sorted(times, key=times.get)
    size = len(names)
    columns = {
        "data_parallel": np.array(names),
        "tensor_parallel": np.ones(size, int),
        "pipeline_parallel": np.ones(size, int),
        "zero_stage": np.zeros(size, int),
        "micro_batch": np.ones(size, int),
        "grad_accum_steps": np.ones(size, int),
        "recompute": np.full(size, "none"),
        "sequence_parallel": np.zeros(size, bool),
        "virtual_stages": np.ones(size, int),
        "attention": np.full(size, "standard"),
        "step_time_s": np.array([times[n] for n in names], float),
        "fits": np.array([True if fits is None else fits[n] for n in names]),
    }
    return budget.PlanSearch(columns, size, {}, 80e9)


def test_worst_case_ranking_by_hand():
    # Scenario x: plans 1, 2, 3 take 10, 11, 15 s; scenario y: 20, 12, 10 s. Slowdowns against each best:
    # plan 1: x 1.0, y 2.0 → 2.0; plan 2: 1.1, 1.2 → 1.2; plan 3: 1.5, 1.0 → 1.5. Best worst case: plan 2.
    searches = {"x": _toy_search({1: 10.0, 2: 11.0, 3: 15.0}), "y": _toy_search({1: 20.0, 2: 12.0, 3: 10.0})}
    ranking = budget.worst_case_ranking(searches, candidates=1)
    assert [row["data_parallel"] for row in ranking] == [3, 1]  # only each scenario's fastest is a candidate
    ranking = budget.worst_case_ranking(searches, candidates=3)
    assert [row["data_parallel"] for row in ranking] == [2, 3, 1]
    assert [row["worst_slowdown"] for row in ranking] == pytest.approx([1.2, 1.5, 2.0])
    assert [row["worst_scenario"] for row in ranking] == ["y", "x", "y"]
    assert ranking[0]["step_time_s"] == {"x": 11.0, "y": 12.0}
    # A plan that does not fit in one scenario is infinitely slow there.
    searches["z"] = _toy_search({1: 5.0, 2: 6.0, 3: 7.0}, fits={1: True, 2: False, 3: True})
    ranking = budget.worst_case_ranking(searches, candidates=3)
    assert [row["data_parallel"] for row in ranking] == [3, 1, 2] and ranking[-1]["worst_slowdown"] == np.inf
    with pytest.raises(ValueError, match="searches"):
        budget.worst_case_ranking({})


def test_capstone_answer_llama3_70b_on_64_h100():
    # Lesson 09's one recommendation: on 8 DGX H100 nodes with InfiniBand the default is the reference itself
    # (Megatron-LM, margin +52.1 %, band 0.898–1.152 for every t·p). The default search's fastest plan, which is also
    # its robust plan, is d = 64, t = 1, ZeRO-3 (Megatron-FSDP), b = 1, full recomputation: 69.3 s (62–80 s),
    # 43.9 GB, 66.8 GB with the margin. Ranked without the margin, d = 16, t = 4 fills HBM. Over the lesson's
    # scenarios the recommended plan has the best worst case, 1.02×.
    from dataclasses import replace

    from course_lib.parallelism import LLAMA3_70B, REFERENCE_CALIBRATION, default_calibration

    cluster = hardware.Cluster("8 × DGX H100", hardware.H100, 8, 8, hardware.NVLINK4, hardware.INFINIBAND_NDR_8X)
    cal = default_calibration(cluster)
    assert cal is REFERENCE_CALIBRATION and cal.framework.short_name == "Megatron-LM"
    assert LLAMA3_70B.params == 70_553_706_496  # config.json of meta-llama/Llama-3.1-70B: 70.6 B
    found = search_plans(LLAMA3_70B, cluster, 512, calibration=cal, attention=("flash",))
    fields = ("data_parallel", "tensor_parallel", "pipeline_parallel", "zero_stage", "micro_batch", "recompute")
    best = found.row(0)
    assert tuple(best[k] for k in fields) == (64, 1, 1, 3, 1, "full") and best["grad_accum_steps"] == 8
    assert found.robust() == found.fastest() == 0  # a one-row band scales every plan alike
    assert best["step_time_s"] == pytest.approx(69.34, rel=1e-3)
    assert (best["step_time_low_s"], best["step_time_high_s"]) == pytest.approx(
        (0.898 * best["step_time_s"], 1.152 * best["step_time_s"])
    )
    assert best["memory_bytes"] == pytest.approx(43.9e9, rel=2e-3) and best["memory_bytes"] * 1.521 <= 80e9
    assert best["step_time_high_s"] / best["step_time_low_s"] <= 1.5  # issue 37's target for the capstone's band
    bare = search_plans(LLAMA3_70B, cluster, 512, calibration=cal, attention=("flash",), memory_margin=0.0)
    top = bare.row(0)
    assert tuple(top[k] for k in fields[:4]) == (16, 4, 1, 3) and top["memory_bytes"] > 0.99 * 80e9
    scenarios = {
        "calibrated": cal,
        "GEMMs at 55 %": replace(cal, gemm_efficiency=0.55),
        "no fixed cost": replace(cal, layer_overhead_s=0.0),
        "overlap slows compute 30 %": replace(cal, overlap_slowdown=0.3),
        "network at 52.5 %": replace(cal, network_efficiency=0.525),
    }
    searches = {name: search_plans(LLAMA3_70B, cluster, 512, calibration=c, attention=("flash",))
                for name, c in scenarios.items()}  # fmt: skip
    ranking = budget.worst_case_ranking(searches)
    assert all(ranking[0][k] == best[k] for k in budget.PLAN_FIELDS)
    assert ranking[0]["worst_slowdown"] == pytest.approx(1.0214, abs=1e-3)
    assert ranking[0]["worst_scenario"] == "no fixed cost"


def test_binding_constraint_is_the_largest_term_of_the_step():
    # A step of 24.8 s: compute 21.4 s, exposed communication 1.73 s, bubble 1.67 s. Compute binds, although exposed
    # communication is the larger of the two overheads (the rule before issue 15 named it).
    assert budget.binding_constraint(21.4, 1.73, 1.67) == "compute"
    assert budget.binding_constraint(1.0, 3.0, 2.0) == "exposed communication"
    assert budget.binding_constraint(1.0, 2.0, 3.0) == "bubble"
    assert budget.binding_constraint(0.0, 0.0, 0.0) == "compute"
    labels = budget.binding_constraint(np.array([5.0, 1.0, 1.0]), np.array([1.0, 4.0, 1.0]), np.array([1.0, 1.0, 4.0]))
    assert list(labels) == ["compute", "exposed communication", "bubble"]


def test_search_binding_agrees_with_each_rows_breakdown(search_1t):
    c = search_1t.columns
    fits = c["fits"]
    terms = np.stack([c["compute_s"], c["exposed_communication_s"], c["bubble_s"]])
    names = np.array(["compute", "exposed communication", "bubble"])
    largest = names[np.argmax(terms, axis=0)]
    assert np.array_equal(c["binding_constraint"][fits], largest[fits])
    # the three terms make up the step: the binding one is at least a third of it
    biggest = terms.max(axis=0)[fits]
    assert np.all(biggest >= c["step_time_s"][fits] / 3 - 1e-9)


def test_the_search_fits_plans_with_the_calibrations_margin():
    margin = parallelism.REFERENCE_CALIBRATION.memory_margin
    assert margin == parallelism.default_calibration(hardware.DGX_H100).memory_margin == 0.521
    found = budget.search_plans(parallelism.LLAMA3_8B, hardware.DGX_H100, global_batch=256)
    bare = budget.search_plans(parallelism.LLAMA3_8B, hardware.DGX_H100, global_batch=256, memory_margin=0.0)
    capacity = hardware.H100.hbm_capacity_bytes
    assert found.memory_margin == margin and bare.memory_margin == 0.0
    assert np.all(found.columns["memory_margin"] == margin)
    # "fits" is the brute-force check, memory × 1.521 ≤ 80 GB, and the margin rejects plans that fit without it
    assert np.array_equal(found.feasible, found.columns["memory_bytes"] * 1.521 <= capacity)
    assert found.rejected["memory"] == bare.rejected["memory"] + int(np.sum(bare.feasible)) - int(
        np.sum(found.feasible)
    )
    assert found.rejected["memory"] > bare.rejected["memory"]
    # the zero-margin search's fastest plan does not fit with the margin; re-ranked with it, it names the same plan
    row = bare.fastest_with_margin(margin)
    assert bare.row(0)["memory_bytes"] * (1 + margin) > capacity >= bare.row(row)["memory_bytes"] * (1 + margin)
    assert all(bare.row(r)["memory_bytes"] * (1 + margin) > capacity for r in range(row))
    assert bare.fields(row) == found.fields(found.fastest())
    with pytest.raises(ValueError, match="memory_margin"):
        found.fastest_with_margin(-0.5)


def test_the_ideal_model_has_no_margin_and_no_band():
    found = search_plans(GPT2_1_5B, hardware.DGX_H100, global_batch=512, calibration=None)
    assert found.memory_margin == 0.0 and found.step_time_band == ()
    c = found.columns
    assert np.array_equal(c["step_time_low_s"], c["step_time_s"]) and np.array_equal(
        c["step_time_high_s"], c["step_time_s"]
    )
    assert found.robust() == found.fastest() == 0
    # a margin and a band can be given to the ideal model too
    banded = search_plans(
        GPT2_1_5B, hardware.DGX_H100, 512, calibration=None, memory_margin=0.5, step_time_band=((1, 0.5, 2.0),)
    )
    assert np.allclose(banded.columns["step_time_high_s"], 2 * banded.columns["step_time_s"])
    assert np.sum(banded.feasible) < np.sum(found.feasible)


# The Playbook calibration's band by the GPUs a replica spans, t·p (validation.PLAYBOOK_STEP_TIME_BAND), by hand.
BAND_BY_HAND = {1: (0.891, 2.931), 2: (0.891, 2.931), 4: (0.891, 2.931), 8: (0.897, 7.384), 16: (0.921, 12.262)}


def test_every_row_has_the_step_time_band_of_its_model_parallel_size():
    from course_lib import validation

    # The reference's band is one row: every plan's band is 0.898–1.152 times its step, whatever t·p.
    reference = search_plans(parallelism.LLAMA3_8B, replace(hardware.DGX_H100, nodes=2), 256, attention=("flash",))
    c = reference.columns
    assert reference.step_time_band == ((1, 0.898, 1.152),)
    assert len(set(c["tensor_parallel"] * c["pipeline_parallel"])) > 3  # plans of several t·p
    assert np.allclose(c["step_time_low_s"], 0.898 * c["step_time_s"])
    assert np.allclose(c["step_time_high_s"], 1.152 * c["step_time_s"])
    assert reference.robust() == reference.fastest() == 0
    # The Playbook's cluster with its own calibration: a band that grows with t·p.
    cluster = replace(validation.PLAYBOOK_CLUSTER_NODE, nodes=2)
    found = search_plans(
        parallelism.LLAMA3_8B, cluster, 256, attention=("flash",), micro_batch_sizes=(1, 2),
        calibration=validation.PLAYBOOK_CALIBRATION,
    )  # fmt: skip
    assert found.step_time_band == validation.PLAYBOOK_STEP_TIME_BAND
    c = found.columns
    for row in range(0, len(found), 97):
        low, high = BAND_BY_HAND[int(c["tensor_parallel"][row] * c["pipeline_parallel"][row])]
        assert c["step_time_low_s"][row] == pytest.approx(low * c["step_time_s"][row])
        assert c["step_time_high_s"][row] == pytest.approx(high * c["step_time_s"][row])
    # the robust plan: the smallest high end among the plans that fit, by brute force
    fits = [row for row in range(len(found)) if found.feasible[row]]
    assert found.robust() == min(fits, key=lambda row: c["step_time_high_s"][row])
    assert found.fastest() == 0 and found.feasible[found.robust()]


def test_the_robust_plan_trades_speed_for_a_better_worst_case():
    from course_lib import validation

    # Only where the band grows with t·p: the Playbook's cluster with its own calibration (nanotron on EFA). Under the
    # reference's one-row band the robust plan is the fastest (test_capstone_answer_llama3_70b_on_64_h100).
    four_nodes = replace(validation.PLAYBOOK_CLUSTER_NODE, nodes=4)
    found = search_plans(
        parallelism.LLAMA3_70B, four_nodes, 256, attention=("flash",), calibration=validation.PLAYBOOK_CALIBRATION
    )
    fastest, robust = found.row(found.fastest()), found.row(found.robust())
    assert fastest["tensor_parallel"] * fastest["pipeline_parallel"] == 32  # spans four nodes: band up to 33.6×
    assert robust["tensor_parallel"] * robust["pipeline_parallel"] == 16  # spans two nodes: band up to 12.3×
    assert fastest["step_time_s"] < robust["step_time_s"] and robust["step_time_high_s"] < fastest["step_time_high_s"]
    assert fastest["step_time_high_s"] == pytest.approx(33.576 * fastest["step_time_s"])
    assert robust["step_time_high_s"] == pytest.approx(12.262 * robust["step_time_s"])


def test_search_enumerates_the_zero_bubble_schedules_on_request():
    from course_lib.pipeline import zero_bubble_min_microbatches

    model, cluster = parallelism.GPT2_1_5B, hardware.DGX_H100
    base = search_plans(model, cluster, 512, calibration=None)
    found = search_plans(model, cluster, 512, calibration=None, zero_bubble=("zb-h1", "zb-h2"))
    schedules = found.columns["schedule"]
    zero = np.isin(schedules, ("zb-h1", "zb-h2"))
    assert "schedule" not in base.fields(0) and "schedule" in found.fields(0)
    assert set(base.columns["schedule"]) == {"1f1b", "interleaved"} and zero.sum() > 0
    # The 1F1B and interleaved rows are the search without the option, as they were.
    assert (~zero).sum() == len(base) and found.evaluated > base.evaluated
    assert sorted(found.columns["step_time_s"][~zero]) == sorted(base.columns["step_time_s"])
    p, m = found.columns["pipeline_parallel"][zero], found.columns["grad_accum_steps"][zero]
    assert (p > 1).all() and (found.columns["virtual_stages"][zero] == 1).all()
    for schedule in ("zb-h1", "zb-h2"):
        rows = schedules == schedule
        assert (m[rows[zero]] >= zero_bubble_min_microbatches(p[rows[zero]], schedule)).all()
    for row in np.flatnonzero(zero)[:4]:  # each row is its plan's step time, evaluated alone
        plan = found.plan(int(row))
        assert plan.schedule == schedules[row]
        scalar = step_time(model, plan, cluster, calibration=None)
        assert scalar.total_s == pytest.approx(found.columns["step_time_s"][row], rel=1e-12)
        assert scalar.bubble_s < step_time(model, plan.replace(schedule="1f1b"), cluster, calibration=None).bubble_s
    # Calibrated: only a framework that splits the backward runs them; under the default (nanotron) all are refused.
    refused = search_plans(model, cluster, 512, zero_bubble=("zb-h1",))
    calibrated = search_plans(model, cluster, 512)
    assert set(refused.columns["schedule"]) == {"1f1b", "interleaved"}
    assert refused.rejected["framework"] > calibrated.rejected["framework"]
    torchtitan = search_plans(model, cluster, 512, framework="fsdp2-pipeline", zero_bubble=("zb-h1",))
    assert "zb-h1" in set(torchtitan.columns["schedule"])


def test_a_remembered_group_call_is_the_call_computed_afresh_for_that_very_cluster():
    """``group_collective`` remembers one group's call keyed by its arguments, the cluster included: each answer (here
    through ``_transfer_call``, as a step asks for it) equals the call computed afresh (``_group_call``), and a
    cluster that differs in one field (1 ms more per step across the network) gets its own answer, not the preset's."""
    from course_lib.budget.placement import _group_call, _transfer_call, axis_stride

    plan = ParallelPlan(tensor_parallel=8, data_parallel=4)
    network = hardware.DGX_H100.inter_node_link
    slower = replace(hardware.DGX_H100, inter_node_link=replace(network, fabric_latency_s=1e-3))
    assert hash(replace(hardware.H100)) == hash(hardware.H100)  # equal accelerators hash alike (a cache key)
    data = {}
    for cluster in (hardware.DGX_H100, slower, hardware.DGX_H100):
        for transfer in step_transfers(GPT3_175B, plan):
            stride = axis_stride(transfer.axis, plan)
            remembered = _transfer_call(transfer, plan, cluster)
            assert remembered == _group_call(transfer.op, cluster, transfer.group_size, stride,
                                             transfer.payload_bytes, None, None)  # fmt: skip
            if transfer.axis == "data":
                data[cluster.inter_node_link.fabric_latency_s] = remembered.time_s
    assert data[1e-3] > data[network.fabric_latency_s] + 1e-3  # the all-reduce's steps across the slower network
