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
    for name, why in (
        ("megatron", "it combines no ZeRO stage above 1 with a pipeline"),
        ("deepspeed", "it combines no ZeRO stage above 1 with a pipeline"),
        ("nanotron", "it runs ZeRO-0 and ZeRO-1 only"),
        ("fsdp2", "it has no pipeline parallelism"),
    ):
        with pytest.raises(ValueError, match=f"is not run by {FRAMEWORKS[name].short_name}: {why} \\("):
            budget.step_time(MODEL, plan, H100_NODES, framework=name)


def test_the_default_framework_is_megatron_core_on_the_reference_cluster():
    # The default a learner plans with is the reference calibration: Megatron-Core (calibration.py says so where it
    # defines it); naming the framework changes nothing.
    plan = ParallelPlan(data_parallel=4, tensor_parallel=8, zero_stage=1, grad_accum_steps=8)
    default = budget.step_time(MODEL, plan, H100_NODES)
    named = budget.step_time(MODEL, plan, H100_NODES, framework="megatron")
    assert named.total_s == default.total_s and named.exposed_s == default.exposed_s
    assert parallelism.default_calibration(H100_NODES) is parallelism.REFERENCE_CALIBRATION
    assert parallelism.REFERENCE_CALIBRATION.framework is parallelism.MEGATRON_CORE


# Each preset's rules of what it runs, one row per cited rule: (framework, plan fields, runs?). The citations are the
# preset's ``sources`` for "zero_stages", "max_zero_stage_with_pipeline" and "schedules".
RUN_RULES = [
    # nanotron README.md:172, :182: ZeRO-1 only, with or without a pipeline; :170, :185: AFAB and 1F1B engines.
    ("nanotron", dict(zero_stage=1), True),
    ("nanotron", dict(zero_stage=2), False),
    ("nanotron", dict(zero_stage=3), False),
    ("nanotron", dict(zero_stage=1, pipeline_parallel=4), True),
    ("nanotron", dict(pipeline_parallel=4, schedule="gpipe"), True),
    ("nanotron", dict(pipeline_parallel=4, schedule="interleaved", virtual_stages=2), False),
    # Megatron-Core: the distributed optimizer (ZeRO-1) with pipelines; schedules.py: 1F1B or interleaved, no GPipe.
    ("megatron", dict(zero_stage=1, pipeline_parallel=4, schedule="interleaved", virtual_stages=2), True),
    ("megatron", dict(zero_stage=3), True),
    ("megatron", dict(pipeline_parallel=4, schedule="gpipe"), False),
    ("megatron", dict(pipeline_parallel=4, schedule="zb-h1"), False),
    # DeepSpeed: pipe/engine.py:76-77, ZeRO-2/3 incompatible with pipelines; TrainSchedule, 1F1B-like, only.
    ("deepspeed", dict(zero_stage=3), True),
    ("deepspeed", dict(zero_stage=1, pipeline_parallel=4), True),
    ("deepspeed", dict(zero_stage=2, pipeline_parallel=4), False),
    ("deepspeed", dict(pipeline_parallel=4, schedule="interleaved", virtual_stages=2), False),
    # FSDP2 without pipelining: no pipeline at all; torchtitan's pipelining: every ZeRO stage, ZB1P but no ZB-H2.
    ("fsdp2", dict(zero_stage=3), True),
    ("fsdp2", dict(pipeline_parallel=4), False),
    ("fsdp2-pipeline", dict(zero_stage=3, pipeline_parallel=4, schedule="zb-h1"), True),
    ("fsdp2-pipeline", dict(zero_stage=3, pipeline_parallel=4, schedule="zb-h2"), False),
]


@pytest.mark.parametrize("key, fields, runs", RUN_RULES)
def test_each_preset_runs_what_its_sources_say_everywhere(key, fields, runs):
    framework = FRAMEWORKS[key]
    plan = ParallelPlan(data_parallel=8, grad_accum_steps=8, **fields)
    assert framework.runs(plan.zero_stage, plan.pipeline_parallel, plan.schedule) is runs
    assert (framework.refusal(plan) == "") is runs
    # Enforced everywhere: the step, the memory, the memory lab's report and the partition explorer's report.
    report = parallelism.memory_budget_report(MODEL, plan, hardware.H100, framework=key)
    partition = budget.partition_report(MODEL, plan, H100_NODES, framework=key)
    assert report.runs is runs and (partition.not_run == "") is runs
    if runs:
        budget.step_time(MODEL, plan, H100_NODES, framework=key)
        return
    assert report.reason == partition.not_run == framework.refusal(plan)
    rules = ("zero_stages", "max_zero_stage_with_pipeline", "schedules")
    assert any(
        framework.refusal(plan).endswith(f" ({framework.cited(rule)})") for rule in rules if framework.cited(rule)
    )
    for function in (budget.step_time, parallelism.memory_breakdown):
        args = (MODEL, plan, H100_NODES) if function is budget.step_time else (MODEL, plan)
        with pytest.raises(ValueError, match="is not run by"):
            function(*args, framework=key)


def test_the_search_rejects_what_each_preset_does_not_run():
    found = budget.search_plans(MODEL, H100_NODES, global_batch=256, framework="nanotron")
    rows = [found.row(i) for i in range(len(found))]
    assert rows and all(row["zero_stage"] <= 1 and row["virtual_stages"] == 1 for row in rows)
    assert found.rejected["framework"] > 0
    deepspeed = budget.search_plans(MODEL, H100_NODES, global_batch=256, framework="deepspeed")
    assert all(
        r["pipeline_parallel"] == 1 or r["virtual_stages"] == 1 for r in map(deepspeed.row, range(len(deepspeed)))
    )


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
    overlapped = dataclasses.replace(parallelism.MEGATRON_CORE, name="p2p overlap")
    exposed_p2p = dataclasses.replace(parallelism.MEGATRON_CORE, name="no p2p overlap", pipeline_overlap=False)
    for v, hidden in ((1, False), (2, True)):
        plan = ParallelPlan(data_parallel=4, pipeline_parallel=8, grad_accum_steps=16, virtual_stages=v,
                            schedule="interleaved" if v > 1 else "1f1b")  # fmt: skip
        base = budget.step_time(MODEL, plan, H100_NODES, framework=exposed_p2p)
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
    after = dataclasses.replace(parallelism.NANOTRON, name="reduce after the backward", overlap_grad_reduce=())
    exposed = budget.step_time(MODEL, plan, H100_NODES, framework=after)
    traffic = overlapped.exposed_s["data"] + overlapped.overlapped_s["data"]
    assert exposed.exposed_s["data"] == pytest.approx(traffic, rel=1e-9) and overlapped.exposed_s["data"] < traffic


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_deepspeed_overlaps_its_data_parallel_traffic_under_zero3_only(stage):
    # zero/config.py:138, :384-385: overlap_comm defaults to False below ZeRO-3 (gradients reduced after the
    # backward); stage_1_and_2.py:2367-2370: ZeRO-1/2's parameter all-gather runs inside step(), before it returns.
    # So below stage 3 every data-parallel byte is exposed: exposed = the whole traffic, nothing hidden.
    plan = ParallelPlan(data_parallel=32, zero_stage=stage, micro_batch=1, grad_accum_steps=8)
    step = budget.step_time(MODEL, plan, H100_NODES, framework="deepspeed")
    traffic = step.exposed_s["data"] + step.overlapped_s["data"]
    assert traffic > 0
    if stage < 3:
        assert step.overlapped_s["data"] == 0.0 and step.exposed_s["data"] == pytest.approx(traffic, rel=1e-12)
    else:
        assert step.exposed_s["data"] < traffic / 2


def test_fsdp2_issues_one_collective_per_layer():
    # FSDP2 all-gathers and reduce-scatters one fully_shard unit (a transformer block in torchtitan) at a time,
    # whatever its size: with nothing overlapped, the data-parallel time is, by hand, per micro-batch 2 gathers (forward
    # and backward) and one reduce-scatter of each layer's shard, plus the output layer's bytes spread over them.
    plan = ParallelPlan(data_parallel=32, zero_stage=3, micro_batch=1, grad_accum_steps=2)
    bare = dataclasses.replace(
        parallelism.FSDP2, name="FSDP2, nothing overlapped", overlap_grad_reduce=(), prefetch_parameter_gathers=()
    )
    step = budget.step_time(MODEL, plan, H100_NODES, framework=bare)
    cal = parallelism.resolve_calibration("default", H100_NODES, bare)
    cluster = parallelism.calibrated_cluster(H100_NODES, cal)
    params = MODEL.layers * MODEL.params_per_layer + MODEL.vocab * MODEL.hidden
    per_layer = params / MODEL.layers
    # The model's bytes for ZeRO's recipe: 16-bit parameters gathered, 16-bit gradients reduce-scattered.
    gather = group_collective_time("all_gather", cluster, 32, 1, 2.0 * per_layer)
    reduce = group_collective_time("reduce_scatter", cluster, 32, 1, 2.0 * per_layer)
    by_hand = plan.grad_accum_steps * MODEL.layers * (2 * gather + reduce)
    assert step.exposed_s["data"] == pytest.approx(by_hand, rel=1e-9)


CITED_FIELDS = (
    "precision",
    "zero_stages",
    "max_zero_stage_with_pipeline",
    "schedules",
    "overlap_grad_reduce",
    "prefetch_parameter_gathers",
)


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
    required = (set(CITED_FIELDS) - {"zero_stages"}) | differs  # every stage is the bare default: cited if not
    missing = [name for name in sorted(required) if not framework.cited(name)]
    assert not missing, f"{framework.name}: no source for {missing}"
    for field, citation in framework.sources:
        assert hasattr(framework, field) and "@" in citation and ":" in citation, (field, citation)


def test_only_torchtitan_runs_the_zero_bubble_schedules():
    # PyTorch's pipelining splits the backward (ScheduleInterleavedZeroBubble, ScheduleZBVZeroBubble); Megatron-Core,
    # DeepSpeed and nanotron run each backward whole. Each preset that runs a pipeline says why, with its source.
    assert [key for key, framework in FRAMEWORKS.items() if framework.split_backward] == ["fsdp2-pipeline"]
    for key in ("megatron", "deepspeed", "fsdp2-pipeline", "nanotron"):
        assert "@" in FRAMEWORKS[key].cited("schedules"), key
    plan = ParallelPlan(data_parallel=8, pipeline_parallel=4, grad_accum_steps=8, attention="flash")
    one_f_one_b = budget.step_time(MODEL, plan, H100_NODES, framework="fsdp2-pipeline")
    # PyTorch offers ZB1P (ZB-H1's memory), not ZB-H2: the ideal model still draws ZB-H2, a framework that runs it
    # does not exist among the presets.
    zb_runner = dataclasses.replace(parallelism.FSDP2_PIPELINE, name="both", schedules=("1f1b", "zb-h1", "zb-h2"))
    for schedule in ("zb-h1", "zb-h2"):
        step = budget.step_time(MODEL, plan.replace(schedule=schedule), H100_NODES, framework=zb_runner)
        assert 0 < step.bubble_s < one_f_one_b.bubble_s
        assert step.compute_s == one_f_one_b.compute_s and step.exposed_s == one_f_one_b.exposed_s
        for key in ("megatron", "deepspeed", "nanotron", "generic", "exposed"):
            with pytest.raises(ValueError, match=f"schedule='{schedule}' is not run by .*: its pipeline schedules are"):
                budget.step_time(MODEL, plan.replace(schedule=schedule), H100_NODES, framework=key)
    assert budget.step_time(MODEL, plan.replace(schedule="zb-h1"), H100_NODES, framework="fsdp2-pipeline").bubble_s > 0
    with pytest.raises(ValueError, match="schedule='zb-h2' is not run by PyTorch FSDP2 with pipelining"):
        budget.step_time(MODEL, plan.replace(schedule="zb-h2"), H100_NODES, framework="fsdp2-pipeline")
    # A framework opts in by its schedules: Megatron-Core given ZB-H1 runs it on its own overlaps.
    split = dataclasses.replace(FRAMEWORKS["megatron"], schedules=("1f1b", "interleaved", "zb-h1"))
    assert split.split_backward
    assert budget.step_time(MODEL, plan.replace(schedule="zb-h1"), H100_NODES, framework=split).bubble_s < (
        budget.step_time(MODEL, plan, H100_NODES, framework="megatron").bubble_s
    )
