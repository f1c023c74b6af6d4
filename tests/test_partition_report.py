"""budget.partition_report: every number of the partition explorer against hand calculations (α–β by hand)."""

import pytest

from course_lib import budget, hardware
from course_lib.compute import transformer_forward_flops
from course_lib.parallelism import GPT3_175B, ParallelPlan, TransformerModel, memory_breakdown

# Two nodes of 8 H100: NVLink 450 GB/s one-way per GPU, α = 1 µs; InfiniBand NDR 400 GB/s per node = 50 GB/s per
# GPU, α = 5 µs.
CLUSTER_2x8 = hardware.Cluster("2 × DGX H100", hardware.H100, 8, 2, hardware.NVLINK4, hardware.INFINIBAND_NDR_8X)
NV_B, NV_A, IB_B, IB_A = 450e9, 1e-6, 50e9, 5e-6
TINY = TransformerModel("tiny", layers=4, hidden=1024, heads=16, vocab=1000, seq_len=512)
# d = 2, t = 4, p = 2 on 16 GPUs: tensor groups at stride 1 (in node), data groups at stride 4 (in node),
# pipeline stages at stride t·d = 8 (the two stages sit on different nodes).
PLAN = ParallelPlan(data_parallel=2, tensor_parallel=4, pipeline_parallel=2, micro_batch=1, grad_accum_steps=4)


def _by(report, axis):
    return [x for x in report["transfers"] if x["axis"] == axis]


def test_hand_computed_transfers_of_a_plan_spanning_two_nodes():
    report = budget.partition_report(TINY, PLAN, CLUSTER_2x8)
    activation = 2 * 1 * 512 * 1024  # b·s·h in 16 bit
    tensor = _by(report, "tensor")
    # 2 all-reduces forward and 2 backward per layer and micro-batch: 2 layers per stage × 4 micro-batches × 2.
    assert [(x["op"], x["payload_bytes"], x["calls_per_step"]) for x in tensor] == [
        ("all_reduce", activation, 16),
        ("all_reduce", activation, 16),
    ]
    ring_4 = 2 * 3 * NV_A + 2 * 3 / 4 * activation / NV_B  # 2(n−1)α + 2(n−1)/n·S/B, n = 4, over NVLink
    for x in tensor:
        assert x["link"] == hardware.NVLINK4.name and not x["crosses_nodes"]
        assert x["link_family"] == "NVLink"
        assert x["time_s"] == pytest.approx(16 * ring_4, rel=1e-12)
        assert x["exposed_s"] == pytest.approx(x["time_s"], rel=1e-12)  # on the critical path
    pipeline = _by(report, "pipeline")
    # activations forward and their gradients backward, b·s·h/t each, once per micro-batch each way, over the network
    assert [(x["payload_bytes"], x["calls_per_step"]) for x in pipeline] == [(activation / 4, 4)] * 2
    for x in pipeline:
        assert x["link"] == hardware.INFINIBAND_NDR_8X.name and x["crosses_nodes"]
        assert x["link_family"] == "InfiniBand"
        assert x["time_s"] == pytest.approx(4 * (IB_A + activation / 4 / IB_B), rel=1e-12)
    (data,) = _by(report, "data")
    grads = 2 * TINY.params / (4 * 2)
    assert (data["op"], data["payload_bytes"], data["calls_per_step"]) == ("all_reduce", grads, 1)
    assert data["link"] == hardware.NVLINK4.name
    assert data["time_s"] == pytest.approx(2 * NV_A + grads / NV_B, rel=1e-12)  # n = 2: 2α + S/B
    # the gradient all-reduce hides behind the last micro-batch's backward (2 × forward, no recomputation)
    forward = transformer_forward_flops(1, 512, 4, 1024, 1000) / 8 / (0.5 * hardware.H100.peak("bf16"))
    assert data["exposed_s"] == pytest.approx(max(0.0, data["time_s"] - 2 * forward), abs=1e-15)


def test_report_totals_are_step_time_and_memory_breakdown():
    report = budget.partition_report(TINY, PLAN, CLUSTER_2x8)
    step = budget.step_time(TINY, PLAN, CLUSTER_2x8, calibration=None)
    memory = memory_breakdown(TINY, PLAN, calibration=None)
    assert report["step_time_s"] == pytest.approx(float(step.total_s), rel=1e-12)
    assert report["memory_bytes_per_device"] == pytest.approx(float(memory.total), rel=1e-12)
    components = ("parameters", "gradients", "optimizer_state", "activations")
    assert sum(report[f"{c}_bytes"] for c in components) == pytest.approx(report["memory_bytes_per_device"], rel=1e-12)
    for axis in ("tensor", "pipeline", "data"):
        per_axis = sum(x["exposed_s"] for x in _by(report, axis))
        assert report[f"exposed_{axis}_s"] == pytest.approx(per_axis, rel=1e-12, abs=1e-15)
    parts = ("compute_s", "bubble_s", "exposed_tensor_s", "exposed_pipeline_s", "exposed_data_s")
    assert sum(report[k] for k in parts) == pytest.approx(report["step_time_s"], rel=1e-12)
    assert report["tokens_per_s"] == pytest.approx(PLAN.global_batch * 512 / report["step_time_s"], rel=1e-12)
    assert report["fits"] and report["binding_constraint"] in budget.BINDING_CONSTRAINTS


def test_tensor_group_spanning_nodes_uses_each_gpus_share_of_the_network():
    plan = ParallelPlan(tensor_parallel=16, grad_accum_steps=2)
    report = budget.partition_report(TINY, plan, CLUSTER_2x8)
    (forward, _backward) = _by(report, "tensor")
    s = 2 * 512 * 1024
    # hierarchical: reduce-scatter over 8 in node, all-reduce of S/8 over 2 nodes at 50 GB/s, all-gather over 8
    per_call = 2 * (7 * NV_A + 7 / 8 * s / NV_B) + (2 * IB_A + (s / 8) / IB_B)
    assert forward["link"] == hardware.INFINIBAND_NDR_8X.name and forward["crosses_nodes"]
    assert forward["time_s"] == pytest.approx(forward["calls_per_step"] * per_call, rel=1e-12)
    # the slip "a node's aggregate 400 GB/s for one collective" would give a smaller time
    slip = 2 * (7 * NV_A + 7 / 8 * s / NV_B) + (2 * IB_A + (s / 8) / 400e9)
    assert forward["time_s"] > forward["calls_per_step"] * slip * 1.05


def test_gpt3_tensor_parallel_past_the_node_on_the_same_gpus_is_slower():
    # The misconception: 64 A100 on 8 nodes; t = 16 (p = 4) instead of t = 8 (p = 8) puts the tensor-parallel
    # collectives on InfiniBand and the step gets slower though each tensor group has twice the GPUs.
    from dataclasses import replace

    cluster = replace(hardware.DGX_A100, nodes=8)
    plan = ParallelPlan(
        tensor_parallel=8,
        pipeline_parallel=8,
        grad_accum_steps=64,
        zero_stage=1,
        recompute="selective",
        sequence_parallel=True,
    )
    inside = budget.partition_report(GPT3_175B, plan, cluster)
    across = budget.partition_report(GPT3_175B, plan.replace(tensor_parallel=16, pipeline_parallel=4), cluster)
    assert {x["link"] for x in _by(inside, "tensor")} == {hardware.NVLINK3.name}
    assert {x["link"] for x in _by(across, "tensor")} == {hardware.INFINIBAND_HDR_8X.name}
    assert across["exposed_tensor_s"] > 3 * inside["exposed_tensor_s"]
    assert across["step_time_s"] > inside["step_time_s"]


def test_a_plan_larger_than_the_cluster_is_refused():
    with pytest.raises(ValueError, match="plan needs 32 devices; the cluster has 16"):
        budget.partition_report(TINY, PLAN.replace(data_parallel=4), CLUSTER_2x8)
