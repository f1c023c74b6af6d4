"""Framework presets (course_lib.parallelism.frameworks): each one's precision recipe, what it overlaps and what it
combines, checked against hand calculations and against the framework's own documented figures."""

from __future__ import annotations

import dataclasses

import pytest

from course_lib import budget, hardware, parallelism
from course_lib.budget.placement import group_collective_time
from course_lib.parallelism import FRAMEWORKS, PRECISION_RECIPES, ParallelPlan

MODEL = parallelism.PLAYBOOK_1B
H100_NODES = dataclasses.replace(hardware.DGX_H100, nodes=4)


def model_states(framework, plan):
    return parallelism.memory_breakdown(MODEL, plan, framework=framework).model_states


@pytest.mark.parametrize(
    "recipe, total",
    [("fp16-zero", 16), ("bf16-fp32-grads", 20), ("fp32-main-grads", 18)],
)
def test_recipes_hold_their_documented_bytes_per_parameter(recipe, total):
    # ZeRO §3.1: 2 + 2 + 12 = 16 B (mixed-precision Adam); Megatron-LM's distributed optimizer guide: 18 B
    # (bf16 parameter 2, fp32 main gradient 4, fp32 parameter, momentum and variance 12); 20 B with a bf16 gradient
    # beside the fp32 buffer.
    assert sum(PRECISION_RECIPES[recipe]) == total


@pytest.mark.parametrize("d", [2, 8, 64])
def test_megatron_distributed_optimizer_holds_6_plus_12_over_d_bytes(d):
    # Megatron-LM's distributed optimizer guide: 6 + 12/d bytes per parameter (ZeRO-1); a recipe that keeps a bf16
    # gradient beside the fp32 buffer (the generic framework): 8 + 12/d. Same parameters, so the ratio is exact.
    plan = ParallelPlan(data_parallel=d, zero_stage=1)
    ratio = model_states("megatron", plan) / model_states("generic", plan)
    assert ratio == pytest.approx((6 + 12 / d) / (8 + 12 / d), rel=1e-12)
    assert model_states("nanotron", plan) == model_states("megatron", plan)  # nanotron's code: the same 18 B


def test_zero3_frameworks_shard_everything_over_d():
    plan = ParallelPlan(data_parallel=8, zero_stage=3)
    # DeepSpeed (ZeRO's 16 B) against Megatron's 18 B recipe, both fully sharded: 16/18.
    assert model_states("deepspeed", plan) / model_states("megatron", plan) == pytest.approx(16 / 18, rel=1e-12)
    assert model_states("fsdp2", plan) == pytest.approx(model_states("deepspeed", plan), rel=1e-12)


def test_fsdp2_with_pipelining_keeps_the_stage_whole_through_the_step():
    # torchtitan with pipelining does not reshard after forward, and PyTorch's pipelining keeps gradients unsharded
    # until one reduce-scatter after the last micro-batch: per parameter 2 (bf16) + 4 (fp32 gradients) whole, plus
    # the 16/d shards: 6 + 16/d, against 16/d when each layer is resharded.
    d = 4
    plan = ParallelPlan(data_parallel=d, pipeline_parallel=2, zero_stage=3, grad_accum_steps=8)
    resharding = dataclasses.replace(parallelism.FSDP2_PIPELINE, name="resharding", reshard_with_pipeline=True)
    ratio = model_states("fsdp2-pipeline", plan) / model_states(resharding, plan)
    assert ratio == pytest.approx((6 + 16 / d) / (16 / d), rel=1e-12)
    # Its traffic: one gather and one reduce-scatter per step instead of 2 gathers and 1 reduce-scatter per
    # micro-batch, so less data-parallel time in all.
    whole = budget.step_time(MODEL, plan, H100_NODES, framework="fsdp2-pipeline")
    every = budget.step_time(MODEL, plan, H100_NODES, framework=resharding)
    traffic = {name: x.exposed_s["data"] + x.overlapped_s["data"] for name, x in (("whole", whole), ("every", every))}
    assert traffic["whole"] < traffic["every"] / 4


def test_only_fsdp2_with_pipelining_combines_zero3_with_a_pipeline():
    plan = ParallelPlan(data_parallel=4, pipeline_parallel=8, zero_stage=3, grad_accum_steps=16)
    step = budget.step_time(MODEL, plan, H100_NODES, framework="fsdp2-pipeline")
    assert step.total_s > 0
    for name in ("megatron", "deepspeed", "nanotron", "fsdp2"):
        limit = FRAMEWORKS[name].max_zero_stage_with_pipeline
        with pytest.raises(ValueError, match=f"zero_stage must be at most {limit} with pipeline_parallel > 1"):
            budget.step_time(MODEL, plan, H100_NODES, framework=name)


def test_the_default_framework_changes_nothing():
    plan = ParallelPlan(data_parallel=4, tensor_parallel=8, zero_stage=1, grad_accum_steps=8)
    default = budget.step_time(MODEL, plan, H100_NODES)
    named = budget.step_time(MODEL, plan, H100_NODES, framework="nanotron")
    assert named.total_s == default.total_s and named.exposed_s == default.exposed_s


TP_PLAN = ParallelPlan(data_parallel=4, tensor_parallel=8, zero_stage=1, grad_accum_steps=8)


def test_backward_overlap_hides_the_input_gradient_all_reduces_behind_the_weight_gradient_gemms():
    none = budget.step_time(MODEL, TP_PLAN, H100_NODES, framework="nanotron")
    megatron = budget.step_time(MODEL, TP_PLAN, H100_NODES, framework="megatron")
    # By hand, per layer and micro-batch: 2 all-reduces of b·s·h bf16 forward (exposed) and 2 backward, hidden
    # behind the column-parallel weight-gradient GEMMs (W_Q, W_K, W_V, gate and up) as far as they last.
    cal = parallelism.resolve_calibration("default", H100_NODES, "megatron")
    cluster = parallelism.calibrated_cluster(H100_NODES, cal)
    call = group_collective_time("all_reduce", cluster, 8, 1, 2.0 * MODEL.seq_len * MODEL.hidden)
    layer_fwd = budget.forward_flops_per_token(MODEL)[0] * MODEL.seq_len / 8
    gemm = layer_fwd / (
        cluster.accelerator.peak("bf16") * cal.gemm_efficiency * layer_fwd / (layer_fwd + cal.gemm_half_flops)
    )
    h, kv, f = MODEL.hidden, MODEL.kv_heads * MODEL.head_dim, MODEL.ffn_hidden
    share = (h * h + 2 * h * kv + 2 * h * f) / MODEL.matmul_weights_per_layer
    per_layer = 2 * call + max(0.0, 2 * call - share * gemm)
    assert megatron.exposed_s["tensor"] == pytest.approx(8 * MODEL.layers * per_layer, rel=1e-9)
    assert none.exposed_s["tensor"] == pytest.approx(8 * MODEL.layers * 4 * call, rel=1e-9)
    # What is hidden is not lost: exposed + overlapped is the same traffic.
    assert megatron.exposed_s["tensor"] + megatron.overlapped_s["tensor"] == pytest.approx(none.exposed_s["tensor"])


def test_more_overlap_never_exposes_more():
    times = {}
    for overlap in ("none", "backward", "all"):
        framework = dataclasses.replace(parallelism.NANOTRON, name=overlap, tensor_parallel_overlap=overlap)
        times[overlap] = budget.step_time(MODEL, TP_PLAN, H100_NODES, framework=framework).exposed_s["tensor"]
    assert times["all"] <= times["backward"] < times["none"]


def test_pipeline_overlap_applies_to_interleaved_schedules_only():
    overlapped = dataclasses.replace(parallelism.NANOTRON, name="p2p overlap", pipeline_overlap=True)
    for v, hidden in ((1, False), (2, True)):
        plan = ParallelPlan(data_parallel=4, pipeline_parallel=8, grad_accum_steps=16, virtual_stages=v,
                            schedule="interleaved" if v > 1 else "1f1b")  # fmt: skip
        base = budget.step_time(MODEL, plan, H100_NODES, framework="nanotron")
        step = budget.step_time(MODEL, plan, H100_NODES, framework=overlapped)
        assert (step.exposed_s["pipeline"] < base.exposed_s["pipeline"]) is hidden
        assert step.exposed_s["pipeline"] + step.overlapped_s["pipeline"] == pytest.approx(base.exposed_s["pipeline"])


def test_search_runs_under_a_framework_and_says_what_it_rejects():
    found = budget.search_plans(MODEL, H100_NODES, global_batch=256, framework="fsdp2-pipeline")
    megatron = budget.search_plans(MODEL, H100_NODES, global_batch=256, framework="megatron")
    assert found.rejected["framework"] == 0 < megatron.rejected["framework"]


def test_gradient_reduction_without_overlap_is_exposed_after_the_backward():
    plan = ParallelPlan(data_parallel=32, zero_stage=1, micro_batch=1, grad_accum_steps=8)
    overlapped = budget.step_time(MODEL, plan, H100_NODES, framework="nanotron")
    after = dataclasses.replace(parallelism.NANOTRON, name="reduce after the backward", overlap_grad_reduce=False)
    exposed = budget.step_time(MODEL, plan, H100_NODES, framework=after)
    traffic = overlapped.exposed_s["data"] + overlapped.overlapped_s["data"]
    assert exposed.exposed_s["data"] == pytest.approx(traffic, rel=1e-9) and overlapped.exposed_s["data"] < traffic


CITED_FIELDS = ("precision", "max_zero_stage_with_pipeline", "overlap_grad_reduce", "prefetch_parameter_gathers")


@pytest.mark.parametrize("key", ["megatron", "deepspeed", "fsdp2", "fsdp2-pipeline", "nanotron"])
def test_every_preset_cites_its_behaviours(key):
    framework = FRAMEWORKS[key]
    bare = parallelism.Framework(name="bare")
    differs = {
        field.name
        for field in dataclasses.fields(framework)
        if field.name not in ("name", "sources", "logits_bytes_per_element")
        and getattr(framework, field.name) != getattr(bare, field.name)
    }
    missing = [name for name in sorted(set(CITED_FIELDS) | differs) if not framework.cited(name)]
    assert not missing, f"{framework.name}: no source for {missing}"
    for field, citation in framework.sources:
        assert hasattr(framework, field) and "@" in citation and ":" in citation, (field, citation)


def test_only_torchtitan_runs_the_zero_bubble_schedules():
    # PyTorch's pipelining splits the backward (ScheduleInterleavedZeroBubble, ScheduleZBVZeroBubble); Megatron-Core,
    # DeepSpeed and nanotron run each backward whole. Each preset that runs a pipeline says why, with its source.
    assert [key for key, framework in FRAMEWORKS.items() if framework.split_backward] == ["fsdp2-pipeline"]
    for key in ("megatron", "deepspeed", "fsdp2-pipeline", "nanotron"):
        assert "@" in FRAMEWORKS[key].cited("split_backward"), key
    plan = ParallelPlan(data_parallel=8, pipeline_parallel=4, grad_accum_steps=8, attention="flash")
    one_f_one_b = budget.step_time(MODEL, plan, H100_NODES, framework="fsdp2-pipeline")
    for schedule in ("zb-h1", "zb-h2"):
        step = budget.step_time(MODEL, plan.replace(schedule=schedule), H100_NODES, framework="fsdp2-pipeline")
        assert 0 < step.bubble_s < one_f_one_b.bubble_s
        assert step.compute_s == one_f_one_b.compute_s and step.exposed_s == one_f_one_b.exposed_s
        for key in ("megatron", "deepspeed", "nanotron", "generic", "exposed"):
            with pytest.raises(ValueError, match=f"schedule='{schedule}' needs .*Presets that do: 'fsdp2-pipeline'"):
                budget.step_time(MODEL, plan.replace(schedule=schedule), H100_NODES, framework=key)
    # A framework opts in by its flag: Megatron-Core with a split backward runs ZB-H1 on its own overlaps.
    split = dataclasses.replace(FRAMEWORKS["megatron"], split_backward=True)
    assert budget.step_time(MODEL, plan.replace(schedule="zb-h1"), H100_NODES, framework=split).bubble_s < (
        budget.step_time(MODEL, plan, H100_NODES, framework="megatron").bubble_s
    )
