"""Lab 3 (memory budget) and lab 4 (pipeline schedule), in process: every control swept over its range, each result
checked against course_lib recomputed here, the figure's artists against the result, and the dependent controls
against the rules that make a plan valid. No browser and no kernel (tooling.md §5.4)."""

from __future__ import annotations

import io
import math
import random

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from course_lib import hardware, parallelism, pipeline, units  # noqa: E402
from course_lib.widgets import memory as memory_module  # noqa: E402
from course_lib.widgets import memory_budget_lab, pipeline_lab  # noqa: E402
from course_lib.widgets import schedule as schedule_module  # noqa: E402

PLAIN = (int, float, str, bool)
COMPONENTS = ("parameters", "gradients", "optimizer_state", "activations")


def option_values(control) -> list:
    """The values a control can take: its options, or every integer of a slider's range."""
    if hasattr(control, "options"):
        return [option[1] if isinstance(option, tuple) else option for option in control.options]
    if isinstance(control.value, bool):
        return [False, True]
    return list(range(control.min, control.max + 1, control.step))


def stops(control) -> list:
    """All values when there are at most 30, else the ends and at least 8 between (as the issue asks)."""
    values = option_values(control)
    if len(values) <= 30:
        return values
    inner = [values[round(i * (len(values) - 1) / 10)] for i in range(1, 10)]
    return [values[0], *dict.fromkeys(inner), values[-1]]


def assert_plain_and_finite(result: dict):
    for key, value in result.items():
        assert type(value) in PLAIN, f"result[{key!r}] is a {type(value).__name__}, not a plain Python value"
        if isinstance(value, float):
            assert math.isfinite(value), f"result[{key!r}] = {value}"


def decoded(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA")).astype(int)


def assert_png_matches_savefig(lab):
    """The fast PNG (cached background + animated artists) shows what a full ``savefig`` draws."""
    buffer = io.BytesIO()
    lab.figure.savefig(buffer, format="png", dpi=lab.dpi)
    shown, full = decoded(lab.image.value), decoded(buffer.getvalue())
    assert shown.shape == full.shape
    differing = (np.abs(shown - full).max(axis=2) > 40).mean()
    assert differing < 0.005, f"{differing:.2%} of the pixels differ from savefig"


# ---- lab 3: memory budget ----------------------------------------------------------------------------------------


def expected_memory(values: dict) -> dict:
    """The lab's numbers, recomputed from the control values with course_lib."""
    model = parallelism.MODELS[values["model"]]
    plan = parallelism.ParallelPlan(
        data_parallel=values["data_parallel"],
        tensor_parallel=values["tensor_parallel"],
        pipeline_parallel=values["pipeline_parallel"],
        zero_stage=values["zero_stage"],
        micro_batch=values["micro_batch"],
        grad_accum_steps=values["grad_accum_steps"],
        recompute=values["recompute"],
        sequence_parallel=values["sequence_parallel"],
    )
    parallelism.check_plan_for_model(model, plan)
    memory = parallelism.memory_breakdown(model, plan)
    capacity = hardware.ACCELERATORS[values["device"]].hbm_capacity_bytes
    expected = {f"{c}_bytes": getattr(memory, c) for c in COMPONENTS}
    expected.update(
        total_bytes=memory.total,
        capacity_bytes=capacity,
        fits=memory.total <= capacity,
        headroom_bytes=capacity - memory.total,
        devices=values["data_parallel"] * values["tensor_parallel"] * values["pipeline_parallel"],
    )
    for stage in parallelism.ZERO_STAGES:
        other = parallelism.memory_breakdown(model, plan.replace(zero_stage=stage))
        expected[f"zero{stage}_total_bytes"] = other.total
        for c in COMPONENTS[:3]:
            expected[f"zero{stage}_{c}_bytes"] = getattr(other, c)
    return expected


def check_memory_lab(lab, figure):
    values, result = lab.values(), lab.result
    assert lab.figure is figure
    assert_plain_and_finite(result)
    model = parallelism.MODELS[values["model"]]
    assert model.heads % values["tensor_parallel"] == 0 and model.layers % values["pipeline_parallel"] == 0
    for key, value in expected_memory(values).items():
        assert result[key] == pytest.approx(value, rel=1e-12), key
    assert type(result["fits"]) is bool
    # The stacked bars hold the result: each ZeRO stage's components, bottom to top, and the same activations.
    for stage, bars in lab.stack_bars.items():
        heights = [result[f"zero{stage}_{c}_bytes"] for c in COMPONENTS[:3]] + [result["activations_bytes"]]
        assert [bar.get_height() for bar in bars] == pytest.approx(heights, rel=1e-12)
        assert [bar.get_y() for bar in bars] == pytest.approx(np.cumsum([0.0, *heights[:-1]]), rel=1e-12)
        assert sum(heights) == pytest.approx(result[f"zero{stage}_total_bytes"], rel=1e-12)
        assert bars[0].get_alpha() == (1.0 if stage == values["zero_stage"] else 0.4)
    outline = lab.stack_outline
    assert outline.get_x() + outline.get_width() / 2 == pytest.approx(values["zero_stage"])
    assert outline.get_height() == pytest.approx(min(result["total_bytes"], 2 * result["capacity_bytes"]))
    assert lab.stack_axes.get_ylim() == pytest.approx((0, 2 * result["capacity_bytes"]))
    assert lab.capacity_line.get_ydata()[0] == result["capacity_bytes"]
    for bar, key in zip(lab.log_bars, [f"{c}_bytes" for c in COMPONENTS] + ["total_bytes"], strict=True):
        assert bar.get_x() + bar.get_width() == pytest.approx(result[key], rel=1e-9)
    verdict = lab.verdict.get_text()
    if result["fits"]:
        assert verdict == f"fits, {units.format_bytes(result['headroom_bytes'])} headroom"
    else:
        assert verdict == f"does not fit by {units.format_bytes(-result['headroom_bytes'])}"
    for stage, text in enumerate(lab.stack_totals):
        assert units.format_bytes(result[f"zero{stage}_total_bytes"]) in text.get_text()
    summary = lab.summary.value
    for key in (
        "parameters_bytes",
        "gradients_bytes",
        "optimizer_state_bytes",
        "activations_bytes",
        "total_bytes",
        "capacity_bytes",
    ):
        assert units.format_bytes(result[key]) in summary, key
    assert (
        "</b>, " + units.format_bytes(result["headroom_bytes"]) + " headroom"
        if result["fits"]
        else "does not fit</b> by " + units.format_bytes(-result["headroom_bytes"])
    ) in summary
    assert "nan" not in summary.lower() and "nan" not in verdict.lower()


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


def test_memory_sweep_each_control(memory_lab):
    """Each control over its options (all when at most 30), the others at their defaults; then back."""
    figure = memory_lab.figure
    for name in memory_module.DEFAULTS:
        control = memory_lab.controls[name]
        values = stops(control)
        assert len(values) >= 2, name
        for value in values:
            control.value = value
            assert control.value == value
            check_memory_lab(memory_lab, figure)
        reset(memory_lab, memory_module.DEFAULTS)


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
                result = memory_lab.compute(state)
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
        low, high = lab.log_axes.get_xlim()
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
    assert huge.stack_totals[0].get_text().startswith("↑ ")


def test_memory_random_walk_keeps_every_invariant(memory_lab):
    rng = random.Random(3)
    names = list(memory_lab.controls)
    for _ in range(15):
        control = memory_lab.controls[rng.choice(names)]
        control.value = rng.choice(option_values(control))
        check_memory_lab(memory_lab, memory_lab.figure)


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
    ],
)
def test_memory_bad_initial_values_raise(initial, message):
    with pytest.raises(ValueError, match=message):
        memory_budget_lab(**initial)


# ---- lab 4: pipeline schedule ------------------------------------------------------------------------------------


def assert_valid_schedule(p, m, v, schedule):
    parallelism.ParallelPlan(pipeline_parallel=p, grad_accum_steps=m, virtual_stages=v, schedule=schedule)
    assert 1 <= p <= 16 and 1 <= m <= 64 and 1 <= v <= 4


def gantt_boxes(lab) -> dict:
    """(kind, chunk) -> (start, end, stage) rows, sorted, of the boxes the figure draws, read back from its paths."""
    boxes = {}
    for (kind, chunk), patch in lab.boxes.items():
        if patch.get_visible():
            corners = patch.get_path().vertices.reshape(-1, 5, 2)
            rows = np.column_stack([corners[:, 0, 0], corners[:, 1, 0], corners[:, :4, 1].mean(axis=1)])
            boxes[schedule_module._KINDS[kind], chunk] = rows[np.lexsort(rows.T[::-1])]
    return boxes


def check_pipeline_lab(lab, figure):
    values, result = lab.values(), lab.result
    p, m, v, schedule = values["stages"], values["microbatches"], values["virtual_stages"], values["schedule"]
    assert lab.figure is figure
    assert_plain_and_finite(result)
    assert_valid_schedule(p, m, v, schedule)
    timeline = pipeline.pipeline_schedule(p, m, schedule, v, forward_time_s=1.0, backward_time_s=2.0)
    formula = parallelism.pipeline_bubble_fraction(p, m, v)
    held = parallelism.pipeline_in_flight_microbatches(p, m, schedule, v)
    assert (result["stages"], result["microbatches"], result["virtual_stages"], result["schedule"]) == (
        p,
        m,
        v,
        schedule,
    )
    assert result["total_time"] == timeline.total_s and result["ideal_time"] == timeline.ideal_s == m * 3
    assert result["bubble_fraction"] == timeline.bubble_fraction
    assert result["formula_bubble_fraction"] == formula
    assert math.isclose(result["bubble_fraction"], formula, rel_tol=1e-12, abs_tol=1e-15)
    assert result["peak_in_flight"] == timeline.peak_in_flight(0) == pytest.approx(held)
    assert result["formula_peak_in_flight"] == pytest.approx(held)
    assert result["ops"] == len(timeline.ops) == 2 * p * m * v
    # The Gantt chart draws exactly the timeline's ops, one box each, and one idle row per stage.
    expected = {}
    for op in timeline.ops:
        expected.setdefault((op.kind, op.chunk), []).append((op.start_s, op.end_s, float(op.stage)))
    drawn = gantt_boxes(lab)
    assert sorted(drawn) == sorted(expected)
    for key, boxes in expected.items():
        assert np.array_equal(drawn[key], np.array(sorted(boxes))), key
    assert len(lab.idle.get_path().vertices) == 5 * p
    assert lab.gantt_axes.get_xlim()[1] == pytest.approx(timeline.total_s * 1.005)
    assert lab.gantt_axes.get_ylim() == (p - 0.5, -0.5)
    assert [label.get_text() for label in lab.y_tick_labels if label.get_visible()] == [f"stage {s}" for s in range(p)]
    shown = [label for label in lab.labels if label.get_visible()]
    assert not shown or [label.get_text() for label in shown] == [str(op.microbatch + 1) for op in timeline.ops]
    # The check panel and the texts.
    assert [bar.get_height() for bar in lab.check_bars[0]] == [
        result["bubble_fraction"],
        result["formula_bubble_fraction"],
    ]
    assert [bar.get_height() for bar in lab.check_bars[1]] == [
        result["peak_in_flight"],
        result["formula_peak_in_flight"],
    ]
    percent = units.format_percent(result["bubble_fraction"])
    assert [text.get_text() for text in lab.check_texts[0]] == [percent, units.format_percent(formula)]
    assert [text.get_text() for text in lab.check_texts[1]] == [units.format_count(held, digits=4)] * 2
    assert lab.title.get_text().endswith(f"m = {m}: bubble {percent}")
    assert f"<b>{percent}</b>" in lab.summary.value and "= simulated" in lab.summary.value
    assert "≠" not in lab.summary.value and "nan" not in lab.summary.value.lower()


@pytest.fixture(scope="module")
def shared_schedule_lab():
    return pipeline_lab()


@pytest.fixture
def schedule_lab(shared_schedule_lab):
    """The module's pipeline lab, set back to the defaults."""
    controls = shared_schedule_lab.controls
    controls["schedule"].value = "1f1b"  # v = 1 and m free again, then p and m
    controls["stages"].value, controls["microbatches"].value = 4, 8
    assert shared_schedule_lab.values() == schedule_module.DEFAULTS
    return shared_schedule_lab


def test_pipeline_defaults(schedule_lab):
    assert schedule_lab.values() == {"stages": 4, "microbatches": 8, "virtual_stages": 1, "schedule": "1f1b"}
    check_pipeline_lab(schedule_lab, schedule_lab.figure)
    result = schedule_lab.result
    # Narayanan et al. 2021: (p − 1)/m = 3/8; (m + p − 1)(t_f + t_b) = 33 t_f; 1F1B holds min(p, m) = 4.
    assert (result["bubble_fraction"], result["total_time"], result["peak_in_flight"]) == (0.375, 33.0, 4.0)
    stage_0 = [
        label.get_text() for label in schedule_lab.labels if label.get_visible() and label.get_position()[1] == 0
    ]
    assert stage_0 == ["1", "2", "3", "4", "1", "5", "2", "6", "3", "7", "4", "8", "5", "6", "7", "8"]  # 1F1B
    assert_png_matches_savefig(schedule_lab)


@pytest.mark.parametrize("schedule", parallelism.SCHEDULES)
@pytest.mark.parametrize("name", ["stages", "microbatches", "virtual_stages"])
def test_pipeline_sweep_each_control(schedule_lab, schedule, name):
    figure = schedule_lab.figure
    schedule_lab.controls["schedule"].value = schedule
    if name != "stages":
        schedule_lab.controls["stages"].value = 4 if schedule == "interleaved" else 6
    control = schedule_lab.controls[name]
    if name == "virtual_stages":
        values = [1, 2, 3, 4, 1]  # moving v switches between 1F1B and interleaving
    elif schedule == "gpipe":  # the lab's code path is 1F1B's: the ends and a few values between
        values = [1, 2, 5, 11, 16] if name == "stages" else [1, 2, 7, 31, 64]
    else:
        values = stops(control)
    expected_schedule = schedule
    for value in values:
        control.value = value
        check_pipeline_lab(schedule_lab, figure)
        if name == "virtual_stages":  # v ≥ 2 is interleaving; back at v = 1 it is plain 1F1B
            if value >= 2:
                expected_schedule = "interleaved"
            elif expected_schedule == "interleaved":
                expected_schedule = "1f1b"
            assert schedule_lab.values()["schedule"] == expected_schedule
        assert control.value == value


def test_pipeline_the_largest_timeline(schedule_lab):
    controls = schedule_lab.controls
    controls["schedule"].value = "interleaved"
    controls["stages"].value = 16
    controls["microbatches"].value = 64
    controls["virtual_stages"].value = 4
    check_pipeline_lab(schedule_lab, schedule_lab.figure)
    assert schedule_lab.result["ops"] == 8192 and not any(label.get_visible() for label in schedule_lab.labels)
    assert_png_matches_savefig(schedule_lab)


def test_pipeline_dependent_controls(schedule_lab):
    controls = schedule_lab.controls
    controls["virtual_stages"].value = 2  # v ≥ 2 selects interleaving
    assert schedule_lab.values() == {"stages": 4, "microbatches": 8, "virtual_stages": 2, "schedule": "interleaved"}
    slider = controls["microbatches"]
    assert (slider.min, slider.step, slider.max) == (4, 4, 64)
    controls["stages"].value = 3  # m = 8 is no multiple of 3: the nearest multiple
    assert (slider.value, slider.min, slider.step, slider.max) == (9, 3, 3, 63)
    slider.value = 10  # not on the slider's grid: snapped to a multiple of p
    assert slider.value == 9
    controls["stages"].value = 16  # m = 9 → 16, the smallest multiple
    assert slider.value == 16
    controls["schedule"].value = "gpipe"  # v back to 1, m free again
    assert schedule_lab.values() == {"stages": 16, "microbatches": 16, "virtual_stages": 1, "schedule": "gpipe"}
    assert (slider.min, slider.step, slider.max) == (1, 1, 64)
    controls["schedule"].value = "interleaved"  # v at least 2
    assert schedule_lab.values()["virtual_stages"] == 2
    controls["virtual_stages"].value = 1  # v = 1 is plain 1F1B
    assert schedule_lab.values()["schedule"] == "1f1b"
    check_pipeline_lab(schedule_lab, schedule_lab.figure)


def test_pipeline_every_reachable_state_is_valid():
    """Whatever the controls held and whichever one moved, ``_make_valid`` leaves a schedule course_lib accepts."""
    from course_lib.widgets._base import choice_buttons, int_slider

    controls = {
        "stages": int_slider("p", 1, 16, 1),
        "microbatches": int_slider("m", 1, 64, 1),
        "virtual_stages": int_slider("v", 1, 4, 1),
        "schedule": choice_buttons("s", list(parallelism.SCHEDULES), "1f1b"),
    }
    microbatches = [1, 7, 48, 64]
    for p in range(1, 17):
        for m in microbatches:
            for v in range(1, 5):
                for schedule in parallelism.SCHEDULES:
                    for changed in controls:
                        slider = controls["microbatches"]
                        slider.min, slider.step, slider.max = 1, 1, 64
                        controls["stages"].value, slider.value = p, m
                        controls["virtual_stages"].value, controls["schedule"].value = v, schedule
                        schedule_module.PipelineLab._make_valid(controls, changed)
                        state = {name: control.value for name, control in controls.items()}
                        assert_valid_schedule(
                            state["stages"], state["microbatches"], state["virtual_stages"], state["schedule"]
                        )
                        if changed != "microbatches":  # the control moved keeps its value; m may snap
                            assert state[changed] == {"stages": p, "virtual_stages": v, "schedule": schedule}[changed]


def test_pipeline_random_walk_keeps_every_invariant(schedule_lab):
    rng = random.Random(5)
    names = list(schedule_lab.controls)
    for _ in range(12):
        name = rng.choice(names)
        control = schedule_lab.controls[name]
        control.value = rng.choice(option_values(control) if name != "microbatches" else range(1, 65))
        check_pipeline_lab(schedule_lab, schedule_lab.figure)


@pytest.mark.parametrize(
    "initial, message",
    [
        ({"stage": 4}, "unknown control"),
        ({"stages": 0}, "stages must be an integer in 1..16"),
        ({"microbatches": 65}, "microbatches must be an integer in 1..64"),
        ({"virtual_stages": 2.0}, "virtual_stages must be an integer"),
        ({"schedule": "zero-bubble"}, "schedule must be one of"),
        ({"virtual_stages": 2}, "virtual_stages must be 1 unless"),
        ({"schedule": "interleaved", "virtual_stages": 2, "microbatches": 6}, "multiple of pipeline_parallel"),
    ],
)
def test_pipeline_bad_initial_values_raise(initial, message):
    with pytest.raises(ValueError, match=message):
        pipeline_lab(**initial)


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
