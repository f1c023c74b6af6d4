"""The quantities in lab 3's prose that no output prints (CHECKED: what each is, what checks it) and check(), which
works out the explore answers by moving the lab's controls; tests/test_lesson_numbers.py runs it."""

from course_lib import units

CHECKED = {
    "1 GB": "the definition of a decimal gigabyte, not a result",
    "100 kB": "the right panel's log axis, widgets.memory.LOG_AXIS_BYTES: check()",
    "100 TB": "the right panel's log axis, widgets.memory.LOG_AXIS_BYTES: check()",
    "76.6 GB": "the explore answer",
    "3.39 GB": "the explore answer",
    "6.88 GB": "the explore answer",
    "86.9 GB": "the explore answer",
    "48.8 GB": "the explore answer",
    "33.8 GB": "the explore answer",
    "64": "the default micro-batches per step, a setting, not a result",
    "71.9": "the explore answer: the activations at b = 7 without full recomputation: check()",
}


def check():
    from course_lib.widgets import memory, memory_budget_lab

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
    # the explore question: the micro-batch, then full recomputation
    assert (fit(micro_batch=6)["total_bytes"], fit(micro_batch=6)["headroom_bytes"]) == ("76.6 GB", "3.39 GB")
    seven = memory_budget_lab()
    seven.controls["micro_batch"].value = 7
    assert not seven.result["fits"] and units.format_bytes(-seven.result["headroom_bytes"]) == "6.88 GB"
    assert units.format_bytes(seven.result["total_bytes"]) == "86.9 GB"
    assert units.format_bytes(seven.result["activations_bytes"]) == "71.9 GB"  # "drop from 71.9 to 33.8 GB"
    recomputed = fit(micro_batch=7, recompute="full")
    assert (recomputed["total_bytes"], recomputed["activations_bytes"]) == ("48.8 GB", "33.8 GB")
    # What a framework stores: Megatron-LM and nanotron store the same 18 bytes a parameter (the same bars where both
    # run the plan); Megatron-LM runs ZeRO-2 and 3 only without a pipeline, nanotron not at all
    assert fit(framework="nanotron") == fit(framework="megatron")
    for framework, runs_without_pipeline in (("megatron", [True] * 4), ("nanotron", [True, True, False, False])):
        runs = memory_budget_lab(framework=framework).result
        assert [runs[f"zero{k}_runs"] for k in range(4)] == [True, True, False, False]
        unpiped = memory_budget_lab(framework=framework)
        unpiped.controls["pipeline_parallel"].value = 1
        assert [unpiped.result[f"zero{k}_runs"] for k in range(4)] == runs_without_pipeline
