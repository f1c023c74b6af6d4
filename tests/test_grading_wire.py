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
    [None, True, 0, -7, 2**80, 0.1, "α β", [], [1, [2.5, "x"]], (1, 2), (), {"tensor": (50331648, 3072)}],
)
def test_plain_data_crosses_unchanged_with_its_type(value):
    back = crossed(value)
    assert back == value and type(back) is type(value)


def test_the_grader_decodes_str_keys_only_and_the_worker_the_grader_inputs_keys():
    with pytest.raises(ValueError, match="malformed dict key"):
        crossed({2: None})
    assert crossed({2: None}, build_course_dataclass) == {2: None}


def test_a_forged_reply_is_refused_before_it_is_built_and_decoding_keeps_its_deadline():
    """Issue 39: 4 MiB of int keys that all hash to 0 took the grader three minutes to build as a dict."""
    import json
    import time

    colliding = {"$dict": [[n * (2**61 - 1), 0] for n in range(200_000)]}
    line = json.dumps({"id": 1, "result": colliding}).encode()
    start = time.perf_counter()
    with pytest.raises(ValueError):
        decode(grading_wire.loads(line)["result"])
    assert time.perf_counter() - start < 1.0
    with pytest.raises(ValueError, match="more than 64 keys"):
        grading_wire.loads(json.dumps({str(n): 0 for n in range(65)}).encode())
    with pytest.raises(ValueError, match="longer than"):
        grading_wire.loads(b"[" * (grading_wire.REPLY_BYTES + 1), grading_wire.REPLY_BYTES)
    many = [[0] * 1000 for _ in range(grading_wire.NODES // 1000 + 1)]
    with pytest.raises(ValueError, match="more than"):
        decode(many)
    with pytest.raises(grading_wire.DecodeTimeout):
        decode([[0] * 100 for _ in range(100)], deadline=time.monotonic() - 1)
    assert decode([[0] * 100 for _ in range(100)], deadline=time.monotonic() + 60)[99][99] == 0


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
