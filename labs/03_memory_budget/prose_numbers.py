"""The quantities in lab 3's prose that no output prints (CHECKED: what each is, what checks it) and check(), which
works out the explore answers by moving the lab's controls; tests/test_lesson_numbers.py runs it."""

from course_lib import units

CHECKED = {
    "1 GB": "the definition of a decimal gigabyte, not a result",
    "100 kB": "the right panel's log axis, widgets.memory.LOG_AXIS_BYTES: check()",
    "100 TB": "the right panel's log axis, widgets.memory.LOG_AXIS_BYTES: check()",
    "53.9 GB": "explore 1",
    "32.7 GB": "explore 1",
    "682 MB": "explore 1",
    "20.5 GB": "explore 1",
    "15.7 GB": "explore 1 and 6",
    "32 MB": "explore 2",
    "21.2 GB": "explore 2",
    "10.9 GB": "explore 2",
    "76.6 GB": "explore 3",
    "3.39 GB": "explore 3",
    "6.88 GB": "explore 3",
    "86.9 GB": "explore 3",
    "48.8 GB": "explore 3",
    "33.8 GB": "explore 3",
    "5.13 GB": "explore 4",
    "31.4 GB": "explore 5",
    "55.6 GB": "explore 5",
    "9.27 GB": "explore 6",
    "16 GB": "explore 6: the TPU v5e's HBM",
    "276 MB": "explore 6",
    "11.2 GB": "explore 7",
    "5.59 GB": "explore 7",
    "4.2 GB": "explore 7",
    "101 GB": "explore 7: Megatron-LM at p = 1, ZeRO-2",
    "62.4 GB": "explore 7: Megatron-LM at p = 1, ZeRO-3",
    "64": "the default micro-batches per step, a setting, not a result",
    "1024": "explore 2's data parallel d, a setting, not a result",
    "256": "explore 4's micro-batches, a setting, not a result",
    "32,768": "explore 2: the last doubling's added devices, 512 × 8 × 8 = 32,768: check()",
    "71.9": "explore 3: the activations at b = 7 without full recomputation: check()",
    "24": "explore 5: 10 + 24/t bytes per sbh element with selective recomputation, the lesson's formula",
    "34": "explore 5: 34/t bytes per sbh element without recomputation (Korthikanti et al. 2022, Eq. 2 without 5as/h)",
}


def check():
    from course_lib.widgets import memory, memory_budget_lab

    assert (1024 - 512) * 8 * 8 == 32768  # 2: the last doubling of d adds 512 replicas of t × p = 64 devices

    def fit(**settings):  # the lab at its defaults (GPT-3 175B, d = t = p = 8, ZeRO-1, ideal model), then moved
        lab = memory_budget_lab()
        for name, value in settings.items():
            lab.controls[name].value = value
        return {
            key: units.format_bytes(value)
            for key, value in lab.result.items()
            if key.endswith("_bytes") and value is not None  # None: a ZeRO stage the framework does not run
        }

    assert tuple(units.format_bytes(b) for b in memory.LOG_AXIS_BYTES) == ("100 kB", "100 TB")
    # 1: the ZeRO stages
    default = fit()
    assert (default["zero0_total_bytes"], default["zero0_optimizer_state_bytes"]) == ("53.9 GB", "32.7 GB")
    assert (default["zero2_gradients_bytes"], default["zero2_total_bytes"]) == ("682 MB", "20.5 GB")
    assert (default["zero3_parameters_bytes"], default["zero3_total_bytes"]) == ("682 MB", "15.7 GB")
    # 2: ZeRO-1's floor at d = 1024
    widest = fit(data_parallel=1024)
    assert (widest["optimizer_state_bytes"], widest["total_bytes"]) == ("32 MB", "21.2 GB")
    assert units.format_bytes(2 * 5456744448) == "10.9 GB" and widest["parameters_bytes"] == "5.46 GB"
    # 3: the micro-batch, then full recomputation
    assert (fit(micro_batch=6)["total_bytes"], fit(micro_batch=6)["headroom_bytes"]) == ("76.6 GB", "3.39 GB")
    seven = memory_budget_lab()
    seven.controls["micro_batch"].value = 7
    assert not seven.result["fits"] and units.format_bytes(-seven.result["headroom_bytes"]) == "6.88 GB"
    assert units.format_bytes(seven.result["total_bytes"]) == "86.9 GB"
    assert units.format_bytes(seven.result["activations_bytes"]) == "71.9 GB"  # "drop from 71.9 to 33.8 GB"
    recomputed = fit(micro_batch=7, recompute="full")
    assert (recomputed["total_bytes"], recomputed["activations_bytes"]) == ("48.8 GB", "33.8 GB")
    # 4: fewer micro-batches in flight; 5: without sequence parallelism, then without recomputation
    assert fit(grad_accum_steps=4)["activations_bytes"] == "5.13 GB"
    assert fit(sequence_parallel=False)["activations_bytes"] == "31.4 GB"
    assert fit(sequence_parallel=False, recompute="none")["activations_bytes"] == "55.6 GB"
    # 6: the 16 GB TPU v5e
    tpu = memory_budget_lab()
    tpu.controls["device"].value = "TPU v5e"
    assert units.format_bytes(tpu.result["capacity_bytes"]) == "16 GB"
    assert units.format_bytes(-tpu.result["headroom_bytes"]) == "9.27 GB"
    tpu.controls["zero_stage"].value = 3
    assert tpu.result["fits"] and units.format_bytes(tpu.result["headroom_bytes"]) == "276 MB"
    # 7: Megatron-LM (18 B a parameter, its framework memory), at p = 1 (ZeRO-2 and 3 come back), then nanotron,
    # DeepSpeed and FSDP2 + pipelining
    megatron = fit(framework="megatron")
    assert (megatron["total_bytes"], default["total_bytes"]) == ("34.1 GB", "25.3 GB")
    assert (default["gradients_bytes"], megatron["gradients_bytes"]) == ("5.46 GB", "11.2 GB")
    assert (megatron["parameters_bytes"], megatron["optimizer_state_bytes"]) == ("5.59 GB", "4.2 GB")
    assert (megatron["framework_bytes"], megatron["activations_bytes"], megatron["logits_bytes"]) == (
        "2.86 GB",
        "10.3 GB",
        "0 B",
    )
    for framework, runs_without_pipeline in (("megatron", [True] * 4), ("nanotron", [True, True, False, False])):
        runs = memory_budget_lab(framework=framework).result
        assert [runs[f"zero{k}_runs"] for k in range(4)] == [True, True, False, False]
        unpiped = memory_budget_lab(framework=framework)
        unpiped.controls["pipeline_parallel"].value = 1
        assert [unpiped.result[f"zero{k}_runs"] for k in range(4)] == runs_without_pipeline
    unpiped = fit(framework="megatron", pipeline_parallel=1)
    assert (unpiped["zero2_total_bytes"], unpiped["zero3_total_bytes"]) == ("101 GB", "62.4 GB")
    assert fit(framework="nanotron") == megatron  # the same recipe: the same bars where nanotron runs the plan
    assert fit(framework="deepspeed")["total_bytes"] == "28.5 GB"
    torchtitan = fit(framework="fsdp2-pipeline")
    assert (torchtitan["zero2_total_bytes"], torchtitan["zero3_total_bytes"]) == ("23.6 GB", "35.5 GB")
