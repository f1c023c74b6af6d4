"""Lab 4 (course_lib.widgets.schedule, the pipeline schedule), in process: every control swept over its range, each
result checked against course_lib recomputed here, the figure's artists against the result, and the dependent
controls against the rules that make a plan valid. No browser and no kernel."""

from __future__ import annotations

import math
import random

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from lab_checks import (
    assert_plain_and_finite,
    assert_png_matches_savefig,
    assert_result_as_before,
    option_values,
    stops,
)

from course_lib import parallelism, pipeline, units
from course_lib.widgets import pipeline_lab
from course_lib.widgets import schedule as schedule_module

COMPONENTS = ("parameters", "gradients", "optimizer_state", "activations")


# ---- lab 4: pipeline schedule ------------------------------------------------------------------------------------


def assert_valid_schedule(p, m, v, schedule):
    parallelism.ParallelPlan(pipeline_parallel=p, grad_accum_steps=m, virtual_stages=v, schedule=schedule)
    assert 1 <= p <= 16 and 1 <= m <= 64 and 1 <= v <= 4


def gantt_boxes(lab) -> dict:
    """(kind, chunk) -> (start, end, stage) rows, sorted, of the boxes the figure draws, read back from its paths."""
    boxes = {}
    for (kind, chunk), patch in lab.gantt.boxes.items():
        if patch.get_visible():
            corners = patch.get_path().vertices.reshape(-1, 5, 2)
            rows = np.column_stack([corners[:, 0, 0], corners[:, 1, 0], corners[:, :4, 1].mean(axis=1)])
            boxes[("forward", "backward")[kind], chunk] = rows[np.lexsort(rows.T[::-1])]
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
    assert len(lab.gantt.idle.get_path().vertices) == 5 * p
    assert lab.gantt.ax.get_xlim()[1] == pytest.approx(timeline.total_s * 1.005)
    assert lab.gantt.ax.get_ylim() == (p - 0.5, -0.5)
    assert [label.get_text() for label in lab.gantt.y_tick_labels if label.get_visible()] == [
        f"stage {s}" for s in range(1, p + 1)
    ]
    shown = [label for label in lab.gantt.labels if label.get_visible()]
    assert not shown or [label.get_text() for label in shown] == [str(op.microbatch + 1) for op in timeline.ops]
    # The check panel and the texts.
    assert [bar.get_height() for bar in lab.checks.bars[0]] == [
        result["bubble_fraction"],
        result["formula_bubble_fraction"],
    ]
    assert [bar.get_height() for bar in lab.checks.bars[1]] == [
        result["peak_in_flight"],
        result["formula_peak_in_flight"],
    ]
    percent = units.format_percent(result["bubble_fraction"])
    assert [text.get_text() for text in lab.checks.texts[0]] == [percent, units.format_percent(formula)]
    assert [text.get_text() for text in lab.checks.texts[1]] == [units.format_count(held, digits=4)] * 2
    assert lab.gantt.title.get_text().endswith(f"m = {m}: bubble {percent}")
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
        label.get_text() for label in schedule_lab.gantt.labels if label.get_visible() and label.get_position()[1] == 0
    ]
    assert stage_0 == ["1", "2", "3", "4", "1", "5", "2", "6", "3", "7", "4", "8", "5", "6", "7", "8"]  # 1F1B
    assert_png_matches_savefig(schedule_lab)


@pytest.mark.parametrize("schedule", ["gpipe", "interleaved"])  # 1F1B, the default: test_widgets_controls.py
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
    assert schedule_lab.result["ops"] == 8192 and not any(label.get_visible() for label in schedule_lab.gantt.labels)
    assert_png_matches_savefig(schedule_lab)


def test_pipeline_legend_names_each_chunk_of_v(schedule_lab):
    # The legend is static (one picture per v): moving v shows its own, and the fast PNG still matches savefig.
    for v, chunks in ((2, ", chunks 1, 2"), (4, ", chunks 1, 2, 3, 4"), (3, ", chunks 1, 2, 3"), (1, "")):
        schedule_lab.controls["virtual_stages"].value = v
        legend = [text.get_text() for text in schedule_lab.gantt.ax.get_legend().get_texts()]
        assert legend == [f"forward{chunks}", f"backward{chunks}", "idle (bubble)"]
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


# ---- the typed result: one PipelineScheduleReport per refresh, one model call, the same plain dict -----------------


def pipeline_result_as_before(values: dict) -> dict:
    """``lab.result`` as the lab built it before it had a typed result (the simulation and the two formulas called
    one by one), written out here once more so that the dict view cannot drift."""
    p, m, v, schedule = values["stages"], values["microbatches"], values["virtual_stages"], values["schedule"]
    timeline = pipeline.pipeline_schedule(p, m, schedule, v, forward_time_s=1.0, backward_time_s=2.0)
    total, bubble = float(timeline.total_s), float(timeline.bubble_s)
    return {
        **{"stages": p, "microbatches": m, "virtual_stages": v, "schedule": schedule, "time_unit": "t_F"},
        **{"forward_time": 1.0, "backward_time": 2.0, "total_time": total, "ideal_time": float(timeline.ideal_s)},
        **{"bubble_time": bubble, "bubble_fraction": float(timeline.bubble_fraction)},
        **{"bubble_share_of_step": bubble / total, "peak_in_flight": float(timeline.peak_in_flight(0))},
        "ops": len(timeline.ops),
        "formula_bubble_fraction": float(parallelism.pipeline_bubble_fraction(p, m, v)),
        "formula_peak_in_flight": float(parallelism.pipeline_in_flight_microbatches(p, m, schedule, v)),
    }


def test_pipeline_result_is_one_frozen_schedule_report(schedule_lab):
    import dataclasses

    report = schedule_lab.typed_result
    assert isinstance(report, parallelism.PipelineScheduleReport)
    assert isinstance(report.timeline, pipeline.PipelineTimeline)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.formula_bubble_fraction = 0.0  # pyright: ignore[reportAttributeAccessIssue]
    with pytest.raises(ValueError, match="formula_bubble_fraction must be finite and ≥ 0"):
        dataclasses.replace(report, formula_bubble_fraction=-0.5)
    with pytest.raises(ValueError, match="timeline must be a pipeline.PipelineTimeline"):
        dataclasses.replace(report, timeline=None)
    assert not {"timeline", "report"} & set(vars(schedule_lab))  # no side channel: the figure reads typed_result


def test_pipeline_dict_view_is_what_it_was_for_many_settings(schedule_lab):
    assert_result_as_before(schedule_lab, pipeline_result_as_before, moves=30, seed=13)


def test_pipeline_refresh_calls_the_model_once(schedule_lab):
    """One report per refresh (the lab caches reports: the cache is emptied first), even when v moves the schedule."""
    from unittest import mock

    with mock.patch.object(parallelism, "pipeline_schedule_report", wraps=parallelism.pipeline_schedule_report) as call:
        for name, value in (("stages", 8), ("microbatches", 32), ("virtual_stages", 2)):
            schedule_module._report.cache_clear()
            call.reset_mock()
            schedule_lab.controls[name].value = value
            assert call.call_count == 1, name
