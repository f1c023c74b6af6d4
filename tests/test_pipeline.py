"""The pipeline event simulation against Narayanan et al.'s bubble formulas, Megatron-LM's order, and its own rules."""

import itertools
import math
from collections import Counter

import numpy as np
import pytest

from course_lib import pipeline
from course_lib.parallelism import pipeline_bubble_fraction, pipeline_in_flight_microbatches
from course_lib.pipeline import PipelineOp, device_op_order, pipeline_schedule


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
@pytest.mark.parametrize("backward_time_s", [2.0, 1.0])
def test_flush_schedules_take_m_plus_p_minus_1_slots(schedule, backward_time_s):
    # Narayanan et al. 2021 §2.2.1: t_pb = (p−1)(t_f + t_b), t_id = m(t_f + t_b), bubble (p−1)/m.
    for p in range(1, 9):
        for m in range(1, 17):
            timeline = pipeline_schedule(p, m, schedule, 1, 1.0, backward_time_s)
            assert timeline.total_s == (m + p - 1) * (1.0 + backward_time_s), (p, m)
            assert timeline.ideal_s == m * (1.0 + backward_time_s)
            assert timeline.bubble_fraction == pipeline_bubble_fraction(p, m), (p, m)


@pytest.mark.parametrize("backward_time_s", [2.0, 1.0])
def test_interleaved_bubble_is_divided_by_v(backward_time_s):
    # Narayanan et al. 2021 §2.2.2: (p−1)/(v·m), m a multiple of p. The simulation agrees in every case tried.
    for p in range(2, 9):
        for v in range(2, 5):
            for m in (p, 2 * p, 3 * p, 4 * p):
                timeline = pipeline_schedule(p, m, "interleaved", v, 1.0, backward_time_s)
                assert timeline.bubble_fraction == pytest.approx(pipeline_bubble_fraction(p, m, v), rel=1e-12), (
                    p,
                    v,
                    m,
                )
                assert timeline.total_s == pytest.approx((m + (p - 1) / v) * (1.0 + backward_time_s), rel=1e-12)


def test_narayanan_figure_4():
    # p = 4 devices, v = 2 chunks, m = 8 micro-batches, t_b = 2 t_f: 8 + 3/2 slots of 3 t_f instead of 8 + 3.
    interleaved = pipeline_schedule(4, 8, "interleaved", 2)
    flush = pipeline_schedule(4, 8, "1f1b")
    assert (interleaved.total_s, flush.total_s) == (pytest.approx(28.5), 33.0)
    assert (interleaved.bubble_s, flush.bubble_s) == (pytest.approx(4.5), 9.0)


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_peak_in_flight_matches_parallelism(schedule):
    for p in range(1, 9):
        for m in range(1, 17):
            expected = pipeline_in_flight_microbatches(p, m, schedule)
            assert pipeline_schedule(p, m, schedule).peak_in_flight(0) == expected, (p, m)
    assert pipeline_schedule(4, 8, "gpipe").peak_in_flight(0) == 8
    assert pipeline_schedule(4, 8, "1f1b").peak_in_flight(0) == 4
    assert pipeline_schedule(4, 8, "1f1b").peak_in_flight(3) == 1  # the last stage runs 1F1B from the start


def test_interleaved_peak_in_flight():
    # Korthikanti et al. 2022 §4.2.3: p·(1 + (p−1)/(p·v)) = p + (p−1)/v full-stage micro-batches on the first
    # stage, reached whenever the step has more chunk-forwards (m·v) than stage 0's warm-up, (p−1)·2 + (v−1)·p.
    # With m = p the warm-up covers every forward (Megatron runs all forwards first), and the peak is m = p.
    for p in range(2, 9):
        for v in range(2, 5):
            for m in (p, 2 * p, 3 * p):
                warmup = (p - 1) * 2 + (v - 1) * p
                peak = pipeline_schedule(p, m, "interleaved", v).peak_in_flight(0)
                assert peak == pytest.approx(pipeline_in_flight_microbatches(p, m, "interleaved", v)), (p, v, m)
                if m * v > warmup:
                    assert peak == pytest.approx(p + (p - 1) / v)
                else:
                    assert m == p and peak == p, (p, v, m)


def test_interleaved_order_follows_megatron():
    # Worked by hand from Megatron-LM's get_model_chunk_id for p = 2, v = 2, m = 4, rank 0: warm-up
    # (2 − 0 − 1)·2 + (2 − 1)·2 = 4 chunk-forwards, micro-batches in groups of p = 2.
    expected = [
        ("forward", 0, 0),
        ("forward", 1, 0),
        ("forward", 0, 1),
        ("forward", 1, 1),
        ("forward", 2, 0),
        ("backward", 0, 1),
        ("forward", 3, 0),
        ("backward", 1, 1),
        ("forward", 2, 1),
        ("backward", 0, 0),
        ("forward", 3, 1),
        ("backward", 1, 0),
        ("backward", 2, 1),
        ("backward", 3, 1),
        ("backward", 2, 0),
        ("backward", 3, 0),
    ]
    assert device_op_order(2, 4, "interleaved", 2, stage=0) == expected
    last = device_op_order(2, 4, "interleaved", 2, stage=1)
    # The last stage warms up with (v − 1)·p = 2 chunk-forwards, then alternates forward and backward.
    assert last[:5] == [("forward", 0, 0), ("forward", 1, 0), ("forward", 0, 1), ("backward", 0, 1), ("forward", 1, 1)]


def test_flush_orders():
    assert device_op_order(3, 4, "gpipe", stage=1) == [("forward", i, 0) for i in range(4)] + [
        ("backward", i, 0) for i in range(4)
    ]
    assert device_op_order(3, 4, "1f1b", stage=0)[:4] == [
        ("forward", 0, 0),
        ("forward", 1, 0),
        ("forward", 2, 0),
        ("backward", 0, 0),
    ]
    assert device_op_order(3, 4, "1f1b", stage=2)[:3] == [("forward", 0, 0), ("backward", 0, 0), ("forward", 1, 0)]


CASES = [
    (1, 3, "1f1b", 1),
    (4, 8, "gpipe", 1),
    (4, 3, "1f1b", 1),
    (4, 8, "1f1b", 1),
    (3, 6, "interleaved", 3),
    (4, 8, "interleaved", 2),
    (4, 4, "interleaved", 4),
    (5, 10, "interleaved", 2),
]


def _dependency_of(op, p, v):
    if op.kind == "forward":
        if op.stage > 0:
            return ("forward", op.microbatch, op.chunk, op.stage - 1)
        return ("forward", op.microbatch, op.chunk - 1, p - 1) if op.chunk > 0 else None
    if op.stage < p - 1:
        return ("backward", op.microbatch, op.chunk, op.stage + 1)
    if op.chunk < v - 1:
        return ("backward", op.microbatch, op.chunk + 1, 0)
    return ("forward", op.microbatch, op.chunk, op.stage)


@pytest.mark.parametrize("p, m, schedule, v", CASES)
@pytest.mark.parametrize("backward_time_s", [2.0, 1.0, 0.5])
def test_timeline_is_a_valid_execution(p, m, schedule, v, backward_time_s):
    timeline = pipeline_schedule(p, m, schedule, v, 1.0, backward_time_s)
    keys = Counter((op.stage, op.microbatch, op.chunk, op.kind) for op in timeline.ops)
    expected = {(s, i, c, k) for s in range(p) for i in range(m) for c in range(v) for k in ("forward", "backward")}
    assert set(keys) == expected and all(n == 1 for n in keys.values())
    end = {(op.kind, op.microbatch, op.chunk, op.stage): op.end_s for op in timeline.ops}
    for op in timeline.ops:
        assert op.duration_s == pytest.approx((1.0 if op.kind == "forward" else backward_time_s) / v)
        needed = _dependency_of(op, p, v)
        if needed is not None:
            assert op.start_s >= end[needed] - 1e-12, (op, needed)
    for s in range(p):
        ops = timeline.stage_ops(s)
        assert all(a.end_s <= b.start_s + 1e-12 for a, b in itertools.pairwise(ops)), s
        assert [(op.kind, op.microbatch, op.chunk) for op in ops] == device_op_order(p, m, schedule, v, s)
    assert min(op.start_s for op in timeline.ops) == 0.0


def test_each_device_is_busy_exactly_its_ideal_time():
    timeline = pipeline_schedule(4, 8, "interleaved", 2, forward_time_s=3e-3, backward_time_s=6e-3)
    for s in range(4):
        assert sum(op.duration_s for op in timeline.stage_ops(s)) == pytest.approx(timeline.ideal_s)
    assert timeline.bubble_s == pytest.approx(timeline.total_s - 8 * 9e-3)
    assert isinstance(timeline.ops[0], PipelineOp)


def test_a_deadlocked_order_raises_instead_of_looping(monkeypatch):
    def backwards_first(_stages, microbatches, _schedule="1f1b", _virtual_stages=1, _stage=0):
        return [("backward", i, 0) for i in range(microbatches)] + [("forward", i, 0) for i in range(microbatches)]

    monkeypatch.setattr(pipeline, "device_op_order", backwards_first)
    with pytest.raises(RuntimeError, match="deadlocked"):
        pipeline_schedule(3, 2, "1f1b")


@pytest.mark.parametrize(
    "kwargs, parameter",
    [
        (dict(stages=0), "stages"),
        (dict(stages=2.5), "stages"),
        (dict(stages=True), "stages"),
        (dict(stages=np.array([2, 4])), "stages"),
        (dict(microbatches=0), "microbatches"),
        (dict(microbatches="8"), "microbatches"),
        (dict(microbatches=math.nan), "microbatches"),
        (dict(schedule="zero-bubble"), "schedule"),
        (dict(schedule="1F1B"), "schedule"),
        (dict(virtual_stages=2), "virtual_stages"),
        (dict(virtual_stages=0), "virtual_stages"),
        (dict(schedule="interleaved", virtual_stages=1), "virtual_stages"),
        (dict(schedule="interleaved", virtual_stages=2, microbatches=6), "microbatches"),
        (dict(forward_time_s=0), "forward_time_s"),
        (dict(forward_time_s=-1.0), "forward_time_s"),
        (dict(forward_time_s=math.inf), "forward_time_s"),
        (dict(backward_time_s=math.nan), "backward_time_s"),
        (dict(backward_time_s="2"), "backward_time_s"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, parameter):
    arguments = dict(stages=4, microbatches=8) | kwargs
    with pytest.raises(ValueError, match=parameter):
        pipeline_schedule(**arguments)


@pytest.mark.parametrize("stage", [4, -1, 1.5, "0"])
def test_bad_stage_names_the_parameter(stage):
    timeline = pipeline_schedule(4, 8)
    with pytest.raises(ValueError, match="stage"):
        timeline.peak_in_flight(stage)
    with pytest.raises(ValueError, match="stage"):
        device_op_order(4, 8, "1f1b", 1, stage)
