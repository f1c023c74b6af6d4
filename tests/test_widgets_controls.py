"""Every lab's controls, from its declared ``CONTROLS`` (``widgets._base.ControlSpec``): the widgets are the specs',
a starting value a control does not offer is refused naming the control, and every stop of every control gives a
plain, finite ``lab.result`` that is the view of a frozen typed result, a figure updated in place whose fast PNG
shows what ``savefig`` draws, and the numbers each lab's own checks (tests/test_widgets_<lab>.py) recompute."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets
import pytest
from lab_checks import assert_plain_and_finite, assert_png_matches_savefig, option_values, thinned
from test_widgets_batch import check_batch_figure, check_batch_result
from test_widgets_memory import check_memory_lab
from test_widgets_partition import check as check_partition_lab
from test_widgets_ring import check_ring_figure, check_ring_result
from test_widgets_schedule import check_pipeline_lab
from test_widgets_sequences import check_sequences_lab
from test_widgets_serving import check_serving_lab
from test_widgets_sweep import check_sweep_lab

from course_lib.measure import Measurements
from course_lib.widgets import batch, measure, memory, partition, ring, schedule, sequences, serving, sweep
from course_lib.widgets._base import ControlSpec, same_stop

MPI_RUNS = Path(__file__).resolve().parent.parent / "course_lib" / "data" / "mpi"

# lab module → its factory and what its own tests check at every position (lab 8 computes nothing when moved).
LIVE_LABS = {
    ring: (ring.ring_allreduce_lab, lambda lab: (check_ring_result(lab), check_ring_figure(lab, lab.figure))),
    batch: (batch.global_batch_lab, lambda lab: (check_batch_result(lab), check_batch_figure(lab, lab.figure))),
    memory: (memory.memory_budget_lab, lambda lab: check_memory_lab(lab, lab.figure)),
    schedule: (schedule.pipeline_lab, lambda lab: check_pipeline_lab(lab, lab.figure)),
    partition: (partition.partition_lab, check_partition_lab),
    serving: (serving.serving_lab, check_serving_lab),
    sweep: (sweep.concurrency_sweep_lab, check_sweep_lab),
    sequences: (sequences.sequences_lab, check_sequences_lab),
}
FACTORIES = {**{module: factory for module, (factory, _) in LIVE_LABS.items()}, measure: measure.measure_lab}
SPECS = [(module, spec) for module in FACTORIES for spec in module.CONTROLS]
# The sweep lab's configuration controls simulate a sweep at each new stop (seconds each): the slow tier moves them;
# its concurrency, which only reads the kept sweep, stays in the quick tier.
LIVE_SPECS = [
    pytest.param(module, spec, marks=pytest.mark.slow)
    if module is sweep and spec.name != "concurrency"
    else (module, spec)
    for module, spec in SPECS
    if module in LIVE_LABS
]


def spec_id(value):
    if isinstance(value, ControlSpec):
        return value.name
    return value.__name__.rsplit(".", 1)[-1]


_built = {}


def lab_at_defaults(module):
    """One lab per module for this test module, set back to its defaults (control by control, in the specs' order,
    twice: a control moved by a dependent rule, such as the schedule by v, comes back on the second pass)."""
    if module not in _built:
        _built[module] = FACTORIES[module]()
    lab = _built[module]
    for _ in range(2):
        for name, value in module.DEFAULTS.items():
            lab.controls[name].value = value
    values = lab.values()  # 5 × US and the 5e-06 stop are the same position
    assert list(values) == list(module.DEFAULTS)
    assert all(same_stop(values[name], default) for name, default in module.DEFAULTS.items()), values
    return lab


def stops_of(spec: ControlSpec, values: dict) -> list:
    """The spec's stops with the other controls at ``values``, ``thinned`` past 30."""
    return thinned(spec.choices(values))


# ---- the widgets are the specs' -----------------------------------------------------------------------------------


@pytest.mark.parametrize("module", FACTORIES, ids=spec_id)
def test_controls_are_built_from_the_specs(module):
    lab = lab_at_defaults(module)
    values = lab.values()
    assert list(lab.controls) == [spec.name for spec in module.CONTROLS] == list(module.DEFAULTS)
    assert type(lab).CONTROLS is module.CONTROLS
    for spec in module.CONTROLS:
        control, choices = lab.controls[spec.name], spec.choices(values)
        assert lab.control_spec(spec.name) is spec
        if spec.kind == "int slider":
            assert isinstance(control, widgets.IntSlider)
            assert (control.min, control.max, control.step) == (choices[0], choices[-1], choices.step), spec.name
        elif spec.kind == "checkbox":
            assert isinstance(control, widgets.Checkbox) and control.description == spec.label
        else:
            kinds = {"dropdown": widgets.Dropdown, "buttons": widgets.ToggleButtons}
            assert isinstance(control, kinds.get(spec.kind, widgets.SelectionSlider)), spec.name
            assert option_values(control) == list(choices), spec.name
            assert [label for label, _ in control.options] == [spec.formatter(stop) for stop in choices]
        shown = control.description or next(
            row.children[0].value for row in lab.children if isinstance(row, widgets.HBox) and control in row.children
        )
        assert shown == spec.label


def bad_values(spec: ControlSpec, values: dict) -> list:
    """Values the control does not offer: off its range or stops, of the wrong type."""
    choices = spec.choices(values)
    if spec.kind == "int slider":
        return [choices[0] - 1, choices[-1] + 1, float(choices[0]), True, str(choices[0])]
    if spec.kind == "open slider":
        return [min(choices) / 2, max(choices) * 2, math.nan, str(choices[0]), True, None]
    if spec.kind == "checkbox":
        return [1, "yes", None]
    numeric = all(isinstance(stop, (int, float)) and not isinstance(stop, bool) for stop in choices)
    return [max(choices) + 1, True, None, str(choices[0])] if numeric else ["no such choice", 1, None]


@pytest.mark.parametrize("module, spec", SPECS, ids=spec_id)
def test_a_starting_value_the_control_does_not_offer_names_it(module, spec):
    for bad in bad_values(spec, module.DEFAULTS):
        with pytest.raises(ValueError, match=rf"^{spec.name} must be "):
            FACTORIES[module](**{spec.name: bad})


@pytest.mark.parametrize("module", FACTORIES, ids=spec_id)
def test_unknown_controls_are_refused(module):
    with pytest.raises(ValueError, match=r"unknown control\(s\) \['colour'\]"):
        FACTORIES[module](colour="red")


# ---- every stop of every control ----------------------------------------------------------------------------------


def assert_typed_result_and_its_view(lab):
    result = lab.typed_result
    assert dataclasses.is_dataclass(result) and type(result).__dataclass_params__.frozen  # pyright: ignore
    first = dataclasses.fields(result)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(result, first, None)
    assert lab.result == lab.result_dict(result)
    assert_plain_and_finite(lab.result)


@pytest.mark.parametrize("module, spec", LIVE_SPECS, ids=spec_id)
def test_every_stop_of_every_control(module, spec):
    """From the defaults, the control through every stop its spec gives (the ends and 9 between past 30 stops): the
    control takes it, the result is a frozen typed result with a plain, finite view, the lab's own checks hold, the
    figure is the same one; at the last stop the fast PNG shows what savefig draws."""
    lab = lab_at_defaults(module)
    figure, check = lab.figure, LIVE_LABS[module][1]
    for stop in stops_of(spec, lab.values()):
        lab.controls[spec.name].value = stop
        assert lab.values()[spec.name] == stop
        assert lab.figure is figure, "the figure was rebuilt"
        assert_typed_result_and_its_view(lab)
        check(lab)
    assert_png_matches_savefig(lab)


@pytest.mark.slow
@pytest.mark.parametrize("module", LIVE_LABS, ids=spec_id)
def test_fast_png_matches_savefig_at_every_stop(module):
    """The fast PNG (cached pictures of the static parts + the animated artists) against a full savefig at every
    stop of every control (about 350 positions, a minute: the quick tier checks the last stop of each)."""
    lab = lab_at_defaults(module)
    for spec in module.CONTROLS:
        for stop in stops_of(spec, lab.values()):
            lab.controls[spec.name].value = stop
            assert_png_matches_savefig(lab)
        lab = lab_at_defaults(module)


def test_lab_5_controls_change_what_run_measures_not_the_result():
    table = Measurements.from_csv(next(MPI_RUNS.glob("*_all_reduce.csv"))).select(algorithm="ring")
    lab = measure.measure_lab(recorded=table)
    shown, fit = dict(lab.result), lab.typed_result.fit
    for spec in measure.CONTROLS:
        for stop in stops_of(spec, lab.values()):
            lab.controls[spec.name].value = stop
            assert lab.result == shown and lab.typed_result.fit is fit
            assert spec.formatter(stop) in lab.summary.value or spec.name == "largest_bytes"
