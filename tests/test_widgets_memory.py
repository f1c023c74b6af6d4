"""Lab 3 (course_lib.widgets.memory, the memory budget), in process: every control swept over its range, each
result checked against course_lib recomputed here, the figure's artists against the result, and the dependent
controls against the rules that make a plan valid. No browser and no kernel."""

from __future__ import annotations

import html
import random
import re

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets
import numpy as np
import pytest
from lab_checks import assert_plain_and_finite, assert_png_matches_savefig, assert_result_as_before, option_values

from course_lib import hardware, parallelism, units
from course_lib.viz.figure_check import NOT_APPLICABLE
from course_lib.widgets import memory as memory_module
from course_lib.widgets import memory_budget_lab

COMPONENTS = ("parameters", "gradients", "optimizer_state", "activations")
EXTRA = ("logits", "framework")  # what a framework's (calibrated) breakdown adds
NAN = re.compile(r"\bnan\b", re.IGNORECASE)  # not in "nanotron"


# ---- lab 3: memory budget ----------------------------------------------------------------------------------------


# The memory margin the lab judges "fits with the margin" by: the default calibration's (validation tests derive it).
MARGIN = parallelism.REFERENCE_CALIBRATION.memory_margin


def plan_of(values: dict) -> parallelism.ParallelPlan:
    return parallelism.ParallelPlan(
        data_parallel=values["data_parallel"],
        tensor_parallel=values["tensor_parallel"],
        pipeline_parallel=values["pipeline_parallel"],
        zero_stage=values["zero_stage"],
        micro_batch=values["micro_batch"],
        grad_accum_steps=values["grad_accum_steps"],
        recompute=values["recompute"],
        sequence_parallel=values["sequence_parallel"],
    )


def breakdown_of(model, plan, framework: str):
    """The breakdown course_lib gives ``plan`` under ``framework`` ("ideal": the ideal model), or None where the
    framework refuses it (``check_plan_for_model`` with its calibration raises: a ZeRO stage it runs no pipeline
    with)."""
    if framework == "ideal":
        parallelism.check_plan_for_model(model, plan)
        return parallelism.memory_breakdown(model, plan, calibration=None)
    try:
        return parallelism.memory_breakdown(model, plan, framework=framework)
    except ValueError as error:
        assert str(error) == parallelism.FRAMEWORKS[framework].refusal(plan)
        return None


def expected_memory(values: dict) -> dict:
    """The lab's numbers, recomputed from the control values with course_lib (None: a stage not run)."""
    model = parallelism.MODELS[values["model"]]
    plan = plan_of(values)
    memory = breakdown_of(model, plan, values["framework"])
    capacity = hardware.ACCELERATORS[values["device"]].hbm_capacity_bytes
    expected = {"runs": memory is not None}
    if memory is None:
        expected.update({f"{c}_bytes": None for c in (*COMPONENTS, *EXTRA)}, total_bytes=None, headroom_bytes=None)
        expected.update(fits=False, fits_with_margin=False)
    else:
        expected.update({f"{c}_bytes": getattr(memory, c) for c in (*COMPONENTS, *EXTRA)})
        expected.update(
            total_bytes=memory.total,
            fits=memory.total <= capacity,
            headroom_bytes=capacity - memory.total,
            fits_with_margin=memory.total * (1 + MARGIN) <= capacity,
        )
    expected.update(
        capacity_bytes=capacity,
        memory_margin=MARGIN,  # the calibrated model's
        devices=values["data_parallel"] * values["tensor_parallel"] * values["pipeline_parallel"],
    )
    for stage in parallelism.ZERO_STAGES:
        other = breakdown_of(model, plan.replace(zero_stage=stage), values["framework"])
        expected[f"zero{stage}_runs"] = other is not None
        expected[f"zero{stage}_total_bytes"] = None if other is None else other.total
        for c in COMPONENTS[:3]:
            expected[f"zero{stage}_{c}_bytes"] = None if other is None else getattr(other, c)
    return expected


def check_memory_lab(lab, figure):
    values, result = lab.values(), lab.result
    assert lab.figure is figure
    assert_plain_and_finite(result)
    model = parallelism.MODELS[values["model"]]
    assert model.heads % values["tensor_parallel"] == 0 and model.layers % values["pipeline_parallel"] == 0
    for key, value in expected_memory(values).items():
        assert result[key] == (None if value is None else pytest.approx(value, rel=1e-12)), key
    assert type(result["fits"]) is bool
    assert result["framework"] == memory_module.FRAMEWORK_LABELS[values["framework"]]
    # The stacked bars hold the result: each ZeRO stage's components, bottom to top, and the same activations; a
    # stage the framework does not run is an empty slot labelled so, with no bar and no total.
    ideal = values["framework"] == "ideal"
    # "with a pipeline" when the pipeline is why: every stage not run is one the framework has (nanotron lacks ZeRO-2/3)
    framework = None if ideal else parallelism.FRAMEWORKS[values["framework"]]
    lacks = framework is not None and any(
        stage not in framework.zero_stages for stage in parallelism.ZERO_STAGES if not result[f"zero{stage}_runs"]
    )
    label = f"not run by {result['framework']}" + ("" if lacks else "\nwith a pipeline")
    top = 2 * result["capacity_bytes"]
    for stage, bars in enumerate(lab.memory_figure.bars.stacks):
        slot, text = lab.memory_figure.bars.empty_slots[stage], lab.memory_figure.bars.empty_texts[stage]
        total_text = lab.memory_figure.bars.totals[stage]
        if not result[f"zero{stage}_runs"]:
            assert [bar.get_height() for bar in bars] == [0.0] * len(bars)
            assert slot.get_visible() and slot.get_height() == pytest.approx(0.9 * top)
            assert text.get_visible() and text.get_text() == label and not total_text.get_visible()
            continue
        assert not slot.get_visible() and not text.get_visible() and total_text.get_visible()
        stage_breakdown = breakdown_of(model, plan_of(values).replace(zero_stage=stage), values["framework"])
        heights = [float(getattr(stage_breakdown, c)) for c in (*COMPONENTS, *EXTRA)]
        assert heights[:3] == pytest.approx([result[f"zero{stage}_{c}_bytes"] for c in COMPONENTS[:3]], rel=1e-12)
        if result["runs"]:
            assert heights[3] == pytest.approx(result["activations_bytes"], rel=1e-12)
        if ideal:
            assert heights[4:] == [0.0, 0.0]  # the ideal model counts no logits and no framework memory
        drawn = [lab.memory_figure.bars.scales[stage] * height for height in heights]  # shrunk above the axis
        assert [bar.get_height() for bar in bars] == pytest.approx(drawn, rel=1e-12)
        assert [bar.get_y() for bar in bars] == pytest.approx(np.cumsum([0.0, *drawn[:-1]]), rel=1e-12)
        assert sum(heights) == pytest.approx(result[f"zero{stage}_total_bytes"], rel=1e-12)
        assert bars[0].get_alpha() == (1.0 if stage == values["zero_stage"] else 0.4)
        assert units.format_bytes(result[f"zero{stage}_total_bytes"]) in total_text.get_text()
    assert lab.memory_figure.bars.components == (*COMPONENTS, *EXTRA)  # every component a framework counts
    # The legend greys out what no bar holds: the ideal model's logits and framework memory, the logits of a pipeline
    # whose heaviest stage is the first; every component when no stage runs (FSDP2 alone runs no pipeline).
    held = {c for c in EXTRA for k in range(4) if result[f"zero{k}_runs"] and bar_height(lab, k, c) > 0}
    some_bar = any(result[f"zero{k}_runs"] for k in range(4))
    for c, text in lab.memory_figure.bars.legend_texts.items():
        greyed = (c in EXTRA and c not in held) or not some_bar
        assert (text.get_gid() == NOT_APPLICABLE, text.get_color() == "#AAAAAA") == (greyed, greyed), c
    if ideal:
        assert not held
    outline = lab.memory_figure.bars.selected_outline
    assert outline.get_x() + outline.get_width() / 2 == pytest.approx(values["zero_stage"])
    shown = 0.9 * top if not result["runs"] else min(result["total_bytes"], top)
    assert outline.get_height() == pytest.approx(shown)
    assert lab.memory_figure.stack_ax.get_ylim() == pytest.approx((0, top))
    assert lab.memory_figure.bars.capacity_line.get_ydata()[0] == result["capacity_bytes"]
    keys = [f"{c}_bytes" for c in (*COMPONENTS, *EXTRA)] + ["total_bytes"]
    for bar, key in zip(lab.memory_figure.log_bars, keys, strict=True):
        width = bar.get_x() + bar.get_width()
        assert width == pytest.approx(result[key], rel=1e-9) if result[key] else bar.get_width() == 0.0
    verdict = lab.memory_figure.verdict.get_text()
    zone = lab.memory_figure.bars.margin_zone  # the hatched band: capacity / (1 + margin) up to the capacity
    assert zone.get_y() == pytest.approx(result["capacity_bytes"] / (1 + MARGIN))
    assert zone.get_y() + zone.get_height() == pytest.approx(result["capacity_bytes"])
    summary = lab.summary.value
    assert lab.memory_figure.log_missing.get_visible() == (not result["runs"])
    if not result["runs"]:
        assert verdict == label.replace("\n", " ") and lab.memory_figure.log_missing.get_text() == label
        assert f"Not run by {result['framework']}</b>: {html.escape(result['not_run_reason'])}" in summary
        assert result["not_run_reason"] and not result["fits"] and not result["fits_with_margin"]
        assert not NAN.search(summary)
        return
    if result["fits"]:
        also = "also" if result["fits_with_margin"] else "but not"
        headroom = units.format_bytes(result["headroom_bytes"])
        assert verdict == f"fits, {headroom} headroom; {also} with the +{units.format_percent(MARGIN)} margin"
    else:
        assert verdict == f"does not fit by {units.format_bytes(-result['headroom_bytes'])}"
    shown_keys = [f"{c}_bytes" for c in (*COMPONENTS, *(() if ideal else EXTRA))] + ["total_bytes", "capacity_bytes"]
    for key in shown_keys:
        assert units.format_bytes(result[key]) in summary, key
    assert (
        "</b>, " + units.format_bytes(result["headroom_bytes"]) + " headroom"
        if result["fits"]
        else "does not fit</b> by " + units.format_bytes(-result["headroom_bytes"])
    ) in summary
    assert ("16 B per parameter" if ideal else "B per parameter before ZeRO shards it") in summary
    assert not NAN.search(summary) and not NAN.search(verdict)


def bar_height(lab, stage, component):
    return lab.memory_figure.bars.stacks[stage][(*COMPONENTS, *EXTRA).index(component)].get_height()


@pytest.fixture(scope="module")
def shared_memory_lab():
    return memory_budget_lab()


def reset(lab, defaults):
    for name, value in defaults.items():  # in order: the model first (it sets the t and p options)
        lab.controls[name].value = value
    assert lab.values() == defaults
    return lab


@pytest.fixture
def memory_lab(shared_memory_lab):
    """The module's memory lab, set back to the defaults (building one takes about half a second)."""
    return reset(shared_memory_lab, memory_module.DEFAULTS)


def test_memory_defaults_are_the_plan_that_fits(memory_lab):
    assert memory_lab.values() == {
        "model": "GPT-3 175B",
        "framework": "ideal",
        "zero_stage": 1,
        "data_parallel": 8,
        "tensor_parallel": 8,
        "pipeline_parallel": 8,
        "recompute": "selective",
        "sequence_parallel": True,
        "micro_batch": 1,
        "grad_accum_steps": 64,
        "device": hardware.A100.name,
    }
    check_memory_lab(memory_lab, memory_lab.figure)
    result = memory_lab.result
    # The lesson's numbers (03_parallelism, "… + DP 8, ZeRO-1"): 15 GB of model states, 10.3 GB of activations.
    assert units.format_bytes(result["model_states_bytes"]) == "15 GB"
    assert units.format_bytes(result["activations_bytes"]) == "10.3 GB"
    assert result["fits"] is True and result["devices"] == 512
    assert_png_matches_savefig(memory_lab)


def test_memory_model_change_offers_only_valid_sizes(memory_lab):
    """Every model offers the divisors of its heads (t ≤ 64) and layers (p ≤ 128); both ends of each are plans."""
    figure, controls = memory_lab.figure, memory_lab.controls
    for name, model in parallelism.MODELS.items():
        controls["model"].value = name
        heads = [t for t in range(1, 65) if model.heads % t == 0]
        layers = [p for p in range(1, 129) if model.layers % p == 0]
        assert option_values(controls["tensor_parallel"]) == heads
        assert option_values(controls["pipeline_parallel"]) == layers
        check_memory_lab(memory_lab, figure)
        for t, p in ((heads[-1], layers[-1]), (heads[0], layers[0])):
            controls["tensor_parallel"].value, controls["pipeline_parallel"].value = t, p
            check_memory_lab(memory_lab, figure)


def test_memory_model_change_keeps_the_nearest_valid_sizes(memory_lab):
    controls = memory_lab.controls
    controls["model"].value = parallelism.GPT2_1_5B.name  # 25 heads, 48 layers: t = 8 → 5, p = 8 stays
    assert (controls["tensor_parallel"].value, controls["pipeline_parallel"].value) == (5, 8)
    controls["model"].value = parallelism.MT_NLG_530B.name  # 128 heads, 105 layers: t = 5 → 4, p = 8 → 7
    assert (controls["tensor_parallel"].value, controls["pipeline_parallel"].value) == (4, 7)
    check_memory_lab(memory_lab, memory_lab.figure)


def test_memory_every_reachable_plan_is_valid(memory_lab):
    """Every (model, t, p) the sliders can offer is a plan course_lib accepts, with finite numbers."""
    values = memory_lab.values()
    for name, model in parallelism.MODELS.items():
        for t in memory_module.tensor_parallel_options(model):
            for p in memory_module.pipeline_parallel_options(model):
                state = {**values, "model": name, "tensor_parallel": t, "pipeline_parallel": p}
                result = memory_lab.result_dict(memory_lab.compute(state))
                assert_plain_and_finite(result)
                assert result["total_bytes"] == pytest.approx(expected_memory(state)["total_bytes"], rel=1e-12)


def test_memory_extremes_read_on_the_fixed_axes(memory_lab):
    # GPT-2 1.5B on one A100 with plain data parallelism: 16 bytes × 1.56 billion parameters = 24.9 GB of states.
    small = memory_budget_lab(
        model=parallelism.GPT2_1_5B.name,
        data_parallel=1,
        tensor_parallel=1,
        pipeline_parallel=1,
        zero_stage=0,
        recompute="full",
        sequence_parallel=False,
        grad_accum_steps=1,
    )
    assert units.format_bytes(small.result["model_states_bytes"]) == "24.9 GB" and small.result["fits"]
    # Megatron's 1T model on 3072 GPUs (Narayanan et al. 2021 Table 1: t = 8, p = 64, d = 6).
    large = memory_budget_lab(
        model=parallelism.MEGATRON_1T.name,
        data_parallel=6,
        tensor_parallel=8,
        pipeline_parallel=64,
        zero_stage=1,
        micro_batch=1,
        grad_accum_steps=256,
    )
    assert large.result["devices"] == 3072 and large.result["fits"]
    for lab in (small, large):
        check_memory_lab(lab, lab.figure)
        assert lab.result["total_bytes"] < 0.93 * 2 * lab.result["capacity_bytes"]  # a whole bar, not an arrow
        low, high = lab.memory_figure.log_ax.get_xlim()
        assert all(low < lab.result[f"{c}_bytes"] < high for c in COMPONENTS)
    # The largest plan a learner can pick does not fit by tens of terabytes, still a finite, formatted number.
    huge = reset(
        memory_lab,
        {
            **memory_module.DEFAULTS,
            "model": parallelism.MEGATRON_1T.name,
            "data_parallel": 1,
            "tensor_parallel": 1,
            "pipeline_parallel": 1,
            "zero_stage": 0,
            "recompute": "none",
            "sequence_parallel": False,
            "micro_batch": 64,
        },
    )
    check_memory_lab(huge, huge.figure)
    assert not huge.result["fits"] and huge.result["headroom_bytes"] < -10 * units.TB
    assert huge.memory_figure.bars.totals[0].get_text().startswith("↑ ")


def test_memory_random_walk_keeps_every_invariant(memory_lab):
    rng = random.Random(3)
    names = list(memory_lab.controls)
    for _ in range(15):
        control = memory_lab.controls[rng.choice(names)]
        control.value = rng.choice(option_values(control))
        check_memory_lab(memory_lab, memory_lab.figure)


@pytest.mark.parametrize("framework", list(memory_module.FRAMEWORK_LABELS))
def test_memory_every_framework_under_every_stage_with_and_without_a_pipeline(memory_lab, framework):
    """Every framework, every ZeRO stage, p = 8 and p = 1: a breakdown or a labelled empty slot, never an error."""
    controls = memory_lab.controls
    controls["framework"].value = framework
    for p in (8, 1):
        controls["pipeline_parallel"].value = p
        for stage in parallelism.ZERO_STAGES:
            controls["zero_stage"].value = stage
            check_memory_lab(memory_lab, memory_lab.figure)
        runs = [memory_lab.result[f"zero{k}_runs"] for k in parallelism.ZERO_STAGES]
        # the framework's own rule (each rule is tested against its citation in test_frameworks)
        expected = [
            framework == "ideal" or parallelism.FRAMEWORKS[framework].runs(k, p) for k in parallelism.ZERO_STAGES
        ]
        assert runs == expected, (framework, p)


def test_memory_nanotron_leaves_zero_2_and_3_empty(memory_lab):
    controls = memory_lab.controls
    controls["framework"].value, controls["zero_stage"].value = "nanotron", 2
    result = memory_lab.result
    assert (result["runs"], result["total_bytes"], result["zero3_total_bytes"]) == (False, None, None)
    assert [result[f"zero{k}_runs"] for k in range(4)] == [True, True, False, False]
    assert [t.get_text() for t in memory_lab.memory_figure.bars.empty_texts if t.get_visible()] == [
        "not run by nanotron"
    ] * 2  # nanotron has ZeRO-1 only, with or without a pipeline (README.md:172, :182)
    assert "Not run by nanotron</b>: zero_stage=2 is not run by nanotron: it runs ZeRO-0 and ZeRO-1 only" in (
        memory_lab.summary.value
    )
    assert "huggingface/nanotron" in memory_lab.summary.value  # the behaviour's source
    assert_png_matches_savefig(memory_lab)
    # ZeRO-1 runs: 18 B per parameter (2 + 4 + 12/8 of 2.73 billion a device), 10.3 GB of activations, 2.86 GB of
    # framework memory; the heaviest stage is the first, whose logits are on the last.
    controls["zero_stage"].value = 1
    result = memory_lab.result
    assert units.format_bytes(result["model_states_bytes"]) == "21 GB"
    assert units.format_bytes(result["activations_bytes"]) == "10.3 GB"
    assert (units.format_bytes(result["framework_bytes"]), result["logits_bytes"]) == ("2.86 GB", 0.0)
    assert units.format_bytes(result["total_bytes"]) == "34.1 GB" and result["fits_with_margin"]
    assert "the logits are on the last stage" in memory_lab.summary.value


@pytest.mark.parametrize(
    "initial, message",
    [
        ({"modle": "GPT-3 175B"}, "unknown control"),
        ({"model": "GPT-5"}, "model must be one of"),
        ({"tensor_parallel": 5}, "tensor_parallel must be one of"),
        ({"model": parallelism.GPT2_1_5B.name, "tensor_parallel": 8}, "tensor_parallel must be one of"),
        ({"zero_stage": 4}, "zero_stage must be one of"),
        ({"sequence_parallel": 1}, "sequence_parallel must be one of"),
        ({"device": "V100"}, "device must be one of"),
        ({"framework": "jax"}, "framework must be one of"),
        ({"framework": None}, "framework must be one of"),
    ],
)
def test_memory_bad_initial_values_raise(initial, message):
    with pytest.raises(ValueError, match=message):
        memory_budget_lab(**initial)


def test_toggle_buttons_are_named_in_the_column_of_the_sliders(memory_lab):
    """A ToggleButtons control is shown in a row after a label as wide as the sliders' descriptions, holding its
    name (ipywidgets 8 would put its own description on a line of its own); the other controls are shown as they
    are."""
    from course_lib.widgets._base import CONTROL_STYLE

    shown = {id(child): child for child in memory_lab.children}
    for name, control in memory_lab.controls.items():
        if name in ("zero_stage", "recompute"):
            row = next(
                child for child in memory_lab.children if isinstance(child, widgets.HBox) and control in child.children
            )
            label, buttons = row.children
            assert buttons is control and control.description == ""
            assert label.value == {"zero_stage": "ZeRO stage", "recompute": "recomputation"}[name]
            assert label.layout.width == CONTROL_STYLE["description_width"] == control.style.description_width
        else:
            assert id(control) in shown and control.description


# ---- the typed result: one MemoryBudgetReport per refresh, one model call, the same plain dict --------------------


def memory_result_as_before(values: dict) -> dict:
    """``lab.result`` as the lab built it before it had a typed result (memory_breakdown called once per ZeRO stage
    in the lab), written out here once more so that the dict view cannot drift; since the framework control, the
    same keys (None for a stage the framework does not run) and then the framework's."""
    model = parallelism.MODELS[values["model"]]
    device = hardware.ACCELERATORS[values["device"]]
    plan = parallelism.ParallelPlan(**{k: v for k, v in values.items() if k not in ("model", "device", "framework")})
    breakdowns = [breakdown_of(model, plan.replace(zero_stage=stage), values["framework"]) for stage in range(4)]
    memory = breakdowns[plan.zero_stage]
    capacity = float(device.hbm_capacity_bytes)
    total = None if memory is None else float(memory.total)
    in_flight = parallelism.pipeline_in_flight_microbatches(plan.pipeline_parallel, plan.grad_accum_steps)

    def bytes_of(breakdown, field):
        return None if breakdown is None else float(getattr(breakdown, field))

    result = {
        **{"model": model.name, "params": float(model.params), "layers": model.layers, "heads": model.heads},
        **{"device": device.name, "data_parallel": plan.data_parallel, "tensor_parallel": plan.tensor_parallel},
        **{"pipeline_parallel": plan.pipeline_parallel, "devices": int(plan.devices)},
        **{"global_batch": int(plan.global_batch), "zero_stage": plan.zero_stage, "schedule": plan.schedule},
        "in_flight_microbatches": float(in_flight),
        **{f"{c}_bytes": bytes_of(memory, c) for c in (*COMPONENTS, "model_states")},
        **{"total_bytes": total, "capacity_bytes": capacity, "fits": total is not None and total <= capacity},
        "headroom_bytes": None if total is None else capacity - total,
        **{"memory_margin": MARGIN, "fits_with_margin": total is not None and total * (1 + MARGIN) <= capacity},
    }
    for stage, other in zip(parallelism.ZERO_STAGES, breakdowns, strict=True):
        for field in ("parameters", "gradients", "optimizer_state", "total"):
            result[f"zero{stage}_{field}_bytes"] = bytes_of(other, field)
    result["framework"] = memory_module.FRAMEWORK_LABELS[values["framework"]]
    result.update(logits_bytes=bytes_of(memory, "logits"), framework_bytes=bytes_of(memory, "framework"))
    result.update(runs=memory is not None, not_run_reason=memory_lab_reason(values) if None in breakdowns else "")
    for stage, other in enumerate(breakdowns):
        result[f"zero{stage}_runs"] = other is not None
    return result


def memory_lab_reason(values: dict) -> str:
    """Why the plan's stage is not run, else why the first stage not run is not: the framework's refusal."""
    framework, plan = parallelism.FRAMEWORKS[values["framework"]], plan_of(values)
    runs = [framework.runs(k, plan.pipeline_parallel, plan.schedule) for k in parallelism.ZERO_STAGES]
    stage = plan.zero_stage if not runs[plan.zero_stage] else runs.index(False)
    return framework.refusal(plan.replace(zero_stage=stage))


def test_memory_result_is_one_frozen_memory_budget_report(memory_lab):
    import dataclasses

    report = memory_lab.typed_result
    assert isinstance(report, parallelism.MemoryBudgetReport)
    assert [b.total for b in report.by_zero_stage] == [
        parallelism.memory_breakdown(report.model, report.plan.replace(zero_stage=k), calibration=None).total
        for k in parallelism.ZERO_STAGES
    ]
    assert report.memory is report.by_zero_stage[1]  # the default plan is ZeRO-1
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.plan = report.plan  # pyright: ignore[reportAttributeAccessIssue]
    with pytest.raises(ValueError, match="by_zero_stage must be a tuple of 4"):
        dataclasses.replace(report, by_zero_stage=report.by_zero_stage[:3])
    with pytest.raises(ValueError, match="in_flight_microbatches must be finite and ≥ 0"):
        dataclasses.replace(report, in_flight_microbatches=-1.0)
    with pytest.raises(ValueError, match="accelerator must be a hardware.Accelerator"):
        dataclasses.replace(report, accelerator="A100")
    assert not hasattr(memory_lab, "breakdowns")  # no side channel: the figure reads typed_result


def test_memory_dict_view_is_what_it_was_for_many_settings(memory_lab):
    assert_result_as_before(memory_lab, memory_result_as_before, moves=40, seed=11)


def test_memory_refresh_calls_the_model_once(memory_lab):
    from unittest import mock

    with mock.patch.object(parallelism, "memory_budget_report", wraps=parallelism.memory_budget_report) as report:
        for name, value in (("zero_stage", 3), ("model", parallelism.GPT2_1_5B.name), ("device", hardware.H100.name)):
            report.reset_mock()
            memory_lab.controls[name].value = value  # the model moves t too: still one refresh
            assert report.call_count == 1, name
