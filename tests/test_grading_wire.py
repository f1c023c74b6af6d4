"""What crosses between the grader and a sandboxed submission (tools/grading_wire.py): plain data both ways,
course_lib's dataclasses rebuilt only in the worker, objects never (quick tier)."""

from __future__ import annotations

import dataclasses

import pytest

from course_lib import hardware, parallelism
from tools import grading_wire
from tools.grading_wire import Opaque, build_course_dataclass, decode, encode

# ---- what crosses -------------------------------------------------------------------------------------------------


def crossed(value, build=None):
    """``value`` after a trip through the wire: encoded, written as a JSON line, read, decoded."""
    line = grading_wire.dumps({"value": encode(value, dataclasses_too=build is not None)})
    return decode(grading_wire.loads(line)["value"], build)


@pytest.mark.parametrize(
    "value",
    [None, True, 0, -7, 2**80, 0.1, "α β", [], [1, [2.5, "x"]], (1, 2), (), {"tensor": (50331648, 3072)}, {2: None}],
)
def test_plain_data_crosses_unchanged_with_its_type(value):
    back = crossed(value)
    assert back == value and type(back) is type(value)


def test_non_finite_floats_cross_as_floats_in_strict_json():
    assert [repr(x) for x in crossed([float("nan"), float("inf"), -float("inf")])] == ["nan", "inf", "-inf"]
    assert b"NaN" not in grading_wire.dumps({"v": encode(float("nan"))})


def test_numpy_answers_become_python_numbers():
    import numpy

    assert crossed(numpy.float64(0.5)) == 0.5 and type(crossed(numpy.float64(0.5))) is float
    assert crossed(numpy.int64(3)) == 3 and type(crossed(numpy.int64(3))) is int
    assert crossed(numpy.array([1.0, 2.0])) == [1.0, 2.0]


def test_objects_arrive_as_opaque_values_that_equal_nothing():
    class Anything(float):
        def __eq__(self, other):
            return True

    for cheat in (Anything(1.0), object(), lambda: 1, parallelism.ParallelPlan()):
        back = crossed(cheat)
        assert isinstance(back, Opaque) and back != back and not (back == 3.03e-3)
    assert repr(crossed(object())) == "<an object the grader cannot read>"


PRESETS = [
    hardware.NVLINK4,
    hardware.INFINIBAND_NDR_8X,
    hardware.H100,
    hardware.DGX_H100,
    hardware.AWS_P5,
    dataclasses.replace(hardware.DGX_A100, nodes=16),
    hardware.SELENE_3072,
    parallelism.LLAMA3_70B,
    parallelism.GPT3_175B,
]


@pytest.mark.parametrize("preset", PRESETS, ids=lambda preset: type(preset).__name__ + ":" + str(preset.name))
def test_course_presets_are_rebuilt_equal_in_the_worker(preset):
    assert crossed(preset, build_course_dataclass) == preset


def test_a_plan_is_rebuilt_with_every_field():
    plan = parallelism.ParallelPlan(
        data_parallel=16, tensor_parallel=8, pipeline_parallel=8, zero_stage=1, grad_accum_steps=96,
        recompute="selective", sequence_parallel=True,
    )  # fmt: skip
    back = crossed(plan, build_course_dataclass)
    assert type(back) is parallelism.ParallelPlan
    assert {f.name: getattr(back, f.name) for f in dataclasses.fields(plan)} == dataclasses.asdict(plan)


def test_only_course_lib_dataclasses_are_rebuilt_and_only_in_the_worker():
    with pytest.raises(ValueError, match="not a course_lib dataclass"):
        build_course_dataclass("subprocess:Popen", {"args": ["true"]})
    with pytest.raises(ValueError, match="not a course_lib dataclass"):
        build_course_dataclass("course_lib.units:format_time", {})
    assert isinstance(crossed(hardware.NVLINK4, None), Opaque)  # the grader never rebuilds what an answer returns
    assert isinstance(decode(encode(hardware.NVLINK4, dataclasses_too=True)), Opaque)


@pytest.mark.parametrize(
    "line",
    [b"[1, 2]", b"not json", b'{"v": NaN}', b"[" * 100_000 + b"]" * 100_000, b'{"v": "' + b"x" * (5 * 2**20) + b'"}'],
    ids=["not an object", "not json", "NaN", "deep", "long"],
)
def test_a_malformed_message_is_a_value_error(line):
    with pytest.raises(ValueError):
        grading_wire.loads(line)


@pytest.mark.parametrize(
    "data",
    [{"x": 1}, {"$tuple": 3}, {"$dict": [[1]]}, {"$dict": [[[1], 2]]}, {"$float": "1e999"}, {"$dataclass": "a"}],
)
def test_decode_refuses_what_encode_never_makes(data):
    with pytest.raises(ValueError):
        decode(data)
