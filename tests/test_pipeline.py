"""The pipeline event simulation against Narayanan et al.'s bubble formulas, Megatron-LM's order, Qi et al.'s
zero-bubble schedules (ZB-H1, ZB-H2: their Table 2 and per-worker memory), and its own rules."""

import hashlib
import itertools
import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from course_lib import pipeline
from course_lib.parallelism import (
    pipeline_bubble_fraction,
    pipeline_bubble_time,
    pipeline_in_flight_microbatches,
    zero_bubble_stage_in_flight,
)
from course_lib.pipeline import PipelineOp, device_op_order, pipeline_schedule, zero_bubble_min_microbatches


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
@pytest.mark.parametrize("backward_time_s", [2.0, 1.0])
def test_flush_schedules_take_m_plus_p_minus_1_slots(schedule, backward_time_s):
    # Narayanan et al. 2021 §2.2.1 (its letters): t_pb = (p−1)(t_f + t_b), t_id = m(t_f + t_b), bubble (p−1)/m.
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
    # p = 4 devices, v = 2 chunks, m = 8 micro-batches, t_bwd = 2 t_F: 8 + 3/2 slots of 3 t_F instead of 8 + 3.
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
    (1, 2, "zb-h1", 1),
    (4, 4, "zb-h1", 1),
    (4, 9, "zb-h1", 1),
    (3, 5, "zb-h2", 1),
    (4, 12, "zb-h2", 1),
]


def _dependency_of(op, p, v):
    if op.kind == "forward":
        if op.stage > 0:
            return ("forward", op.microbatch, op.chunk, op.stage - 1)
        return ("forward", op.microbatch, op.chunk - 1, p - 1) if op.chunk > 0 else None
    if op.kind == "backward_weight":  # W after its own B
        return ("backward_input", op.microbatch, op.chunk, op.stage)
    if op.stage < p - 1:  # a backward or a B after the next stage's
        return (op.kind, op.microbatch, op.chunk, op.stage + 1)
    if op.chunk < v - 1:
        return (op.kind, op.microbatch, op.chunk + 1, 0)
    return ("forward", op.microbatch, op.chunk, op.stage)


def _kinds(schedule):
    return ("forward", "backward_input", "backward_weight") if schedule.startswith("zb") else ("forward", "backward")


@pytest.mark.parametrize("p, m, schedule, v", CASES)
@pytest.mark.parametrize("backward_time_s", [2.0, 1.0, 0.5])
def test_timeline_is_a_valid_execution(p, m, schedule, v, backward_time_s):
    # t_W a fifth of t_bwd, so that B and W take different times from each other and from F.
    timeline = pipeline_schedule(p, m, schedule, v, 1.0, backward_time_s, backward_weight_time_s=backward_time_s / 5)
    keys = Counter((op.stage, op.microbatch, op.chunk, op.kind) for op in timeline.ops)
    expected = {(s, i, c, k) for s in range(p) for i in range(m) for c in range(v) for k in _kinds(schedule)}
    assert set(keys) == expected and all(n == 1 for n in keys.values())
    end = {(op.kind, op.microbatch, op.chunk, op.stage): op.end_s for op in timeline.ops}
    durations = {"forward": 1.0, "backward": backward_time_s, "backward_input": 0.8 * backward_time_s}
    durations["backward_weight"] = backward_time_s / 5
    for op in timeline.ops:
        assert op.duration_s == pytest.approx(durations[op.kind] / v)
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


def _fused_cases():
    for p in range(1, 7):
        for m in range(1, 13):
            for t_b in (2.0, 1.0, 0.5, 3.7):
                for schedule in ("gpipe", "1f1b"):
                    yield p, m, schedule, 1, 1.3, t_b
                for v in (2, 3):
                    if m % p == 0:
                        yield p, m, "interleaved", v, 1.3, t_b


def _fused_digest(**kwargs) -> tuple:
    digest = hashlib.sha256()
    cases = list(_fused_cases())
    for args in cases:
        t = pipeline_schedule(*args, **kwargs)
        rows = [(op.stage, op.microbatch, op.chunk, op.kind, op.start_s.hex(), op.end_s.hex()) for op in t.ops]
        digest.update(repr((args, rows, t.total_s.hex(), t.peak_in_flight(0))).encode())
    return len(cases), digest.hexdigest()


def test_fused_schedules_are_unchanged_by_the_split_backward():
    # Regression: every op (stage, micro-batch, chunk, kind, start, end, bit for bit), the makespan and stage 0's peak
    # of 808 GPipe, 1F1B and interleaved steps, as the simulation gave them before B and W existed (main at 702ce4c).
    # They run the backward whole, so t_W changes nothing.
    before = (808, "da97ec77bc05f54ce0d3b373d19eeef26f4bd28ad1999293ab07a27ed0ecf2af")
    assert _fused_digest() == before
    assert _fused_digest(backward_weight_time_s=0.1) == before


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b", "interleaved"])
def test_fused_schedules_idle_the_same_with_or_without_the_step_synchronisation(schedule):
    # Stage 0 starts first and ends last: its idle time is the step's bubble.
    for p in range(1, 7):
        for m in (p, 2 * p, 3 * p + (schedule != "interleaved")):
            timeline = pipeline_schedule(p, m, schedule, 2 if schedule == "interleaved" else 1)
            assert timeline.unsynchronised_bubble_s == pytest.approx(timeline.bubble_s, abs=1e-12)
            assert timeline.stage_bubble_s(0) == pytest.approx(timeline.bubble_s, abs=1e-12)
            assert timeline.unsynchronised_bubble_fraction == pytest.approx(timeline.bubble_fraction, abs=1e-12)


def test_zero_bubble_orders_follow_qi_et_al_figure_3():
    # Written out by hand from §2.1 and §2.2 for p = 3, m = 5 (F, B, W and the micro-batch from 1): ZB-H1 warms up as
    # 1F1B and runs each W s micro-batches after its B; ZB-H2 warms up with 2(p − s − 1) forwards and delays W by 2s.
    letter = {"forward": "F", "backward_input": "B", "backward_weight": "W"}

    def row(schedule, stage):
        return " ".join(f"{letter[k]}{i + 1}" for k, i, c in device_op_order(3, 5, schedule, stage=stage) if c == 0)

    assert [row("zb-h1", s) for s in range(3)] == [
        "F1 F2 F3 B1 W1 F4 B2 W2 F5 B3 W3 B4 W4 B5 W5",
        "F1 F2 B1 F3 B2 W1 F4 B3 W2 F5 B4 W3 B5 W4 W5",
        "F1 B1 F2 B2 F3 B3 W1 F4 B4 W2 F5 B5 W3 W4 W5",
    ]
    assert [row("zb-h2", s) for s in range(3)] == [
        "F1 F2 F3 F4 F5 B1 W1 B2 W2 B3 W3 B4 W4 B5 W5",
        "F1 F2 F3 B1 F4 B2 F5 B3 W1 B4 W2 B5 W3 W4 W5",
        "F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 W1 W2 W3 W4 W5",
    ]


def _zero_bubble_grid():
    """(schedule, p, m, t_F, t_B, t_W) over stages, micro-batches and op times, exact (dyadic) so that == holds."""
    ratios = [(1, 1, 1), (1, 1.5, 0.5), (1, 1.25, 0.75), (2, 1, 1), (1, 2, 1), (1, 1, 0.5), (1, 0.5, 1), (0.5, 1, 1)]
    ratios += [(1, 1, 2), (1, 2, 2), (0.25, 3, 0.5), (2, 0.5, 1.5)]
    for schedule in ("zb-h1", "zb-h2"):
        for p in range(1, 8):
            fewest = zero_bubble_min_microbatches(p, schedule)
            for m in (fewest, fewest + 1, 2 * fewest + 3):
                for t_f, t_b, t_w in ratios:
                    yield schedule, p, m, float(t_f), float(t_b), float(t_w)


def test_zero_bubble_simulation_equals_its_formulas():
    # Every stage s idles (p − 1 − s)·X, X = t_F + t_B − k·min(t_F, t_W) ≥ 0; with the step's synchronisation the
    # bubble is (p − 1)·max(t_F, X), without it (p − 1)·X (pipeline_bubble_time); 2 × 7 × 3 × 12 = 504 steps.
    cases = 0
    for schedule, p, m, t_f, t_b, t_w in _zero_bubble_grid():
        timeline = pipeline_schedule(p, m, schedule, 1, t_f, t_b + t_w, backward_weight_time_s=t_w)
        times = (t_f, t_b + t_w, t_w)
        sync = pipeline_bubble_time(p, m, schedule, 1, *times)
        no_sync = pipeline_bubble_time(p, m, schedule, 1, *times, optimizer_sync=False)
        assert (timeline.bubble_s, timeline.unsynchronised_bubble_s) == (sync, no_sync), (schedule, p, m, times)
        k = 1 if schedule == "zb-h1" else 2
        x = max(t_f + t_b - k * min(t_f, t_w), 0.0)
        assert [timeline.stage_bubble_s(s) for s in range(p)] == [(p - 1 - s) * x for s in range(p)]
        assert timeline.ideal_s == m * (t_f + t_b + t_w)
        cases += 1
    assert cases == 504


def test_zb_h1_bubble_is_the_first_stages_waits_or_the_last_stages_late_start():
    # Lesson 06's account of ZB-H1's bubble, (p − 1)·max(t_F, t_B, t_F + t_B − t_W): the first stage idles once for
    # the first gradient, (p − 1)t_B after its warm-up, then p − 1 times t_F − t_W in the cool-down (when t_W < t_F);
    # the last stage starts (p − 1)t_F late and never idles; the step ends when the later of the two ends.
    cases = 0
    for schedule, p, m, t_f, t_b, t_w in _zero_bubble_grid():
        if schedule != "zb-h1" or p == 1:
            continue
        timeline = pipeline_schedule(p, m, schedule, 1, t_f, t_b + t_w, backward_weight_time_s=t_w)
        first, last = (
            sorted((op for op in timeline.ops if op.stage == s), key=lambda op: op.start_s) for s in (0, p - 1)
        )
        waits = [
            after.start_s - before.end_s for before, after in itertools.pairwise(first) if after.start_s > before.end_s
        ]
        assert waits == [(p - 1) * t_b] + [t_f - t_w] * (p - 1 if t_w < t_f else 0), (p, m, t_f, t_b, t_w)
        assert last[0].start_s == (p - 1) * t_f and all(a.end_s == b.start_s for a, b in itertools.pairwise(last))
        assert timeline.total_s == max(first[-1].end_s, last[-1].end_s)
        assert timeline.bubble_s == (p - 1) * max(t_f, t_b, t_f + t_b - t_w)
        cases += 1
    assert cases == 6 * 3 * 12


def test_zero_bubble_table_2():
    # Qi et al. 2024 Table 2, for T_W ≤ T_F (as in their Table 1, T_W < T_F < T_B): bubble (p − 1)(T_F + T_B + T_W)
    # for 1F1B, (p − 1)(T_F + T_B − T_W) for ZB-H1, (p − 1)(T_F + T_B − 2T_W) for ZB-H2 (the last without the
    # optimizer step's synchronisation, §2.2 and §4); peak memory pM_B, pM_B and (2p − 1)M_B.
    for schedule, p, m, t_f, t_b, t_w in _zero_bubble_grid():
        if t_w > t_f or t_f + t_b < 2 * t_w:
            continue
        fused = pipeline_schedule(p, m, "1f1b", 1, t_f, t_b + t_w)
        split = pipeline_schedule(p, m, schedule, 1, t_f, t_b + t_w, backward_weight_time_s=t_w)
        assert fused.bubble_s == (p - 1) * (t_f + t_b + t_w)
        assert fused.peak_in_flight(0) == min(p, m) == p
        if schedule == "zb-h1":
            assert split.bubble_s == split.unsynchronised_bubble_s == (p - 1) * (t_f + t_b - t_w)
            assert split.peak_in_flight(0) == p
        else:
            assert split.unsynchronised_bubble_s == (p - 1) * (t_f + t_b - 2 * t_w)
            assert split.peak_in_flight(0) == 2 * p - 1


def test_zero_bubble_worked_numbers():
    # §2.1: with T_F = T_B = T_W ZB-H1's bubble is a third of 1F1B's; §2.2: ZB-H2's is zero once the optimizer step
    # no longer synchronises the stages (§4), else the last stage's late start, (p − 1)·T_F.
    for p, m in ((4, 8), (8, 24), (16, 64)):
        one_f_one_b = pipeline_schedule(p, m, "1f1b")
        h1, h2 = (pipeline_schedule(p, m, s) for s in ("zb-h1", "zb-h2"))
        assert h1.bubble_s * 3 == one_f_one_b.bubble_s == 3 * (p - 1)
        assert (h2.unsynchronised_bubble_s, h2.bubble_s) == (0.0, p - 1.0)
    # Times in proportion to Table 1's FLOPs for a GPT-3 175B layer (h = 12288) at s = 2048: F sbh(24h + 4s),
    # B sbh(24h + 8s), W 24sbh², i.e. 37 : 38 : 36 (× 8192 sbh), so T_B + T_W = 2T_F and T_W < T_F < T_B.
    h, s = 12288, 2048
    t_f, t_b, t_w = (Fraction(24 * h + 4 * s, 8192), Fraction(24 * h + 8 * s, 8192), Fraction(24 * h, 8192))
    assert (t_f, t_b, t_w) == (37, 38, 36) and t_b + t_w == 2 * t_f
    one_f_one_b = pipeline_schedule(8, 32, "1f1b", 1, 37.0, 74.0)
    h1 = pipeline_schedule(8, 32, "zb-h1", 1, 37.0, 74.0, backward_weight_time_s=36.0)
    h2 = pipeline_schedule(8, 32, "zb-h2", 1, 37.0, 74.0, backward_weight_time_s=36.0)
    assert (one_f_one_b.bubble_s, h1.bubble_s, h2.unsynchronised_bubble_s) == (7 * 111, 7 * 39, 7 * 3)
    assert h2.bubble_s == 7 * 37  # synchronised, the last stage's (p − 1)·T_F
    assert h1.peak_in_flight(0) == 8 and h2.peak_in_flight(0) == 15


def test_zero_bubble_memory_per_worker():
    # Qi et al. §2.3: worker i (from 1) holds (p − i + 1)M_B + (i − 1)M_W with ZB-H1 and (2p − 2i + 1)M_B +
    # (2i − 2)M_W with ZB-H2, in units of M_B: the micro-batches between their B and their W count M_W/M_B. Table 1:
    # M_B = sb(34h + 5as), M_W = 32sbh; for GPT-3 175B's layer (h = 12288, a = 96) at s = 2048, M_W/M_B = 0.28.
    h, a, s = 12288, 96, 2048
    table_1_share = 32 * h / (34 * h + 5 * a * s)
    assert table_1_share == pytest.approx(0.2807, abs=1e-4)
    for schedule in ("zb-h1", "zb-h2"):
        for p in (1, 2, 4, 7):
            for m in (zero_bubble_min_microbatches(p, schedule), 3 * p + 1):
                timeline = pipeline_schedule(p, m, schedule)
                for share in (0.0, 0.5, 1.0, table_1_share):
                    for i in range(1, p + 1):
                        if schedule == "zb-h1":
                            paper = (p - i + 1) + (i - 1) * share
                        else:
                            paper = (2 * p - 2 * i + 1) + (2 * i - 2) * share
                        simulated = timeline.peak_in_flight(i - 1, weight_pending_share=share)
                        assert simulated == pytest.approx(paper, abs=1e-12), (schedule, p, m, share, i)
                        assert zero_bubble_stage_in_flight(p, schedule, i - 1, share) == pytest.approx(paper)
                assert timeline.peak_in_flight(0) == pipeline_in_flight_microbatches(p, m, schedule)


def test_zero_bubble_needs_enough_microbatches():
    # Stage 0 runs k(p − 1) warm-up forwards and one more before its first B: m ≥ p (ZB-H1), m ≥ 2p − 1 (ZB-H2).
    assert [zero_bubble_min_microbatches(p, "zb-h1") for p in (1, 4, 8)] == [1, 4, 8]
    assert [zero_bubble_min_microbatches(p, "zb-h2") for p in (1, 4, 8)] == [1, 7, 15]
    for schedule, fewest in (("zb-h1", 4), ("zb-h2", 7)):
        pipeline_schedule(4, fewest, schedule)
        with pytest.raises(ValueError, match=rf"^microbatches must be ≥ .* = {fewest} for schedule='{schedule}'"):
            pipeline_schedule(4, fewest - 1, schedule)
        with pytest.raises(ValueError, match="microbatches"):
            pipeline_bubble_time(4, fewest - 1, schedule)
        with pytest.raises(ValueError, match="microbatches"):
            pipeline_in_flight_microbatches(4, fewest - 1, schedule)


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
        (dict(schedule="zb-h3"), "schedule"),
        (dict(schedule="ZB-H1"), "schedule"),
        (dict(schedule="zb-h1", virtual_stages=2), "virtual_stages"),
        (dict(schedule="zb-h1", microbatches=3), "microbatches"),
        (dict(schedule="zb-h2", microbatches=6), "microbatches"),
        (dict(schedule="zb-h1", backward_weight_time_s=-0.5), "backward_weight_time_s"),
        (dict(schedule="zb-h1", backward_weight_time_s=0), "backward_weight_time_s"),
        (dict(schedule="zb-h1", backward_weight_time_s=2.0), "backward_weight_time_s"),
        (dict(schedule="zb-h1", backward_weight_time_s=math.nan), "backward_weight_time_s"),
        (dict(schedule="zb-h1", backward_weight_time_s=np.array([0.5, 1.0])), "backward_weight_time_s"),
        (dict(schedule="1f1b", backward_weight_time_s=3.0), "backward_weight_time_s"),
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
        timeline.stage_bubble_s(stage)
    with pytest.raises(ValueError, match="stage"):
        device_op_order(4, 8, "1f1b", 1, stage)
    with pytest.raises(ValueError, match="stage"):
        zero_bubble_stage_in_flight(4, "zb-h1", stage)


@pytest.mark.parametrize("share", [-0.1, 1.5, math.nan, "half", None])
def test_bad_weight_pending_share_names_the_parameter(share):
    with pytest.raises(ValueError, match=r"^weight_pending_share must be .*\[0, 1\]"):
        pipeline_schedule(4, 8, "zb-h1").peak_in_flight(0, share)
    with pytest.raises(ValueError, match="weight_pending_share"):
        zero_bubble_stage_in_flight(4, "zb-h1", 0, share)


# The step models' bubble for ZB-H1 and ZB-H2 (budget.step_time) against the simulator fed the same F, B and W times.
_STEP_CASES = [  # (p, m, recompute, seq_len): unequal F/B/W from recomputation and the attention core's s²
    (4, 4, "none", 1024),
    (4, 8, "none", 8192),
    (4, 13, "full", 4096),
    (8, 15, "none", 2048),
    (8, 32, "full", 16384),
]


def _ideal_times(model, plan, cluster):
    """(slot, t_F, t_W, the 1F1B step) of the ideal model, t_F and t_W from FLOPs written out here: per layer F is
    24bsh² + 4bs²h and W 24bsh² (Qi et al. 2024 Table 1), the output layer 2bshV in both; the backward is 2F,
    and full recomputation adds one F; the slot's communication goes with F and B in proportion to their compute."""
    from course_lib import budget

    b, s, h, l, vocab = plan.micro_batch, model.seq_len, model.hidden, model.layers, model.vocab
    rate = cluster.accelerator.peak("bf16") * 0.5 * plan.tensor_parallel * plan.pipeline_parallel
    forward = (l * (24 * b * s * h * h + 4 * b * s * s * h) + 2 * b * s * h * vocab) / rate
    weight = (l * 24 * b * s * h * h + 2 * b * s * h * vocab) / rate
    compute = forward * (4 if plan.recompute == "full" else 3)
    one_f_one_b = budget.step_time(model, plan.replace(schedule="1f1b"), cluster, calibration=None)
    slot = one_f_one_b.bubble_s / (plan.pipeline_parallel - 1)
    return slot, slot * forward / compute, weight, one_f_one_b


@pytest.mark.parametrize("p, m, recompute, seq_len", _STEP_CASES)
def test_ideal_step_bubble_is_the_simulated_one(p, m, recompute, seq_len):
    from dataclasses import replace

    from course_lib import budget, hardware, parallelism

    model, cluster = replace(parallelism.GPT2_1_5B, seq_len=seq_len), hardware.DGX_H100
    for schedule in ("zb-h1", "zb-h2"):
        if m < zero_bubble_min_microbatches(p, schedule):
            continue
        for sync in (True, False):
            plan = parallelism.ParallelPlan(
                data_parallel=8 // p,
                pipeline_parallel=p,
                grad_accum_steps=m,
                recompute=recompute,
                schedule=schedule,
                optimizer_sync=sync,
            )
            slot, t_f, t_w, one_f_one_b = _ideal_times(model, plan, cluster)
            assert t_w < t_f < slot - t_f - t_w  # T_W < T_F < T_B, as Qi et al.'s Table 1
            timeline = pipeline_schedule(p, m, schedule, 1, t_f, slot - t_f, backward_weight_time_s=t_w)
            simulated = timeline.bubble_s if sync else timeline.unsynchronised_bubble_s
            step = budget.step_time(model, plan, cluster, calibration=None)
            assert step.bubble_s == pytest.approx(simulated, rel=1e-9), (schedule, sync)
            assert step.total_s - step.bubble_s == pytest.approx(one_f_one_b.total_s - one_f_one_b.bubble_s)
            # 1F1B on the same times: the step model's (p − 1) slots, unchanged
            fused = pipeline_schedule(p, m, "1f1b", 1, t_f, slot - t_f)
            assert one_f_one_b.bubble_s == pytest.approx(fused.bubble_s, rel=1e-9)
            if schedule == "zb-h1":  # Qi et al. Table 2: (p − 1)(T_F + T_B − T_W)
                assert step.bubble_s == pytest.approx((p - 1) * (slot - 2 * t_w), rel=1e-9)


def zero_bubble_runner():
    """torchtitan's FSDP2 with pipelining given ZB-H2 too (PyTorch offers ZB1P, not ZB-H2): both schedules under one
    framework's overlaps, to check the step model's bubble and memory against the simulator."""
    from dataclasses import replace

    from course_lib import parallelism

    fsdp2 = parallelism.FSDP2_PIPELINE
    return replace(fsdp2, name="FSDP2 with pipelining and ZB-H2", schedules=(*fsdp2.schedules, "zb-h2"))


@pytest.mark.parametrize("p, m, recompute, seq_len", _STEP_CASES)
def test_calibrated_step_bubble_is_the_simulated_one(p, m, recompute, seq_len):
    from dataclasses import replace

    from course_lib import budget, hardware, parallelism
    from course_lib.budget import forward_flops_per_token

    model, cluster = replace(parallelism.GPT2_1_5B, seq_len=seq_len), hardware.DGX_H100
    calibration = replace(parallelism.default_calibration(cluster), framework=zero_bubble_runner())
    layer, head, core = forward_flops_per_token(model)
    layers = -(-model.layers // p)
    stage_forward = layers * layer + head
    compute = 3 * stage_forward + (layers * layer if recompute == "full" else 0.0)  # FLOPs of F + B + W
    for schedule in ("zb-h1", "zb-h2"):
        if m < zero_bubble_min_microbatches(p, schedule):
            continue
        plan = parallelism.ParallelPlan(
            data_parallel=8 // p, pipeline_parallel=p, grad_accum_steps=m, recompute=recompute, schedule=schedule
        )
        one_f_one_b = budget.step_time(model, plan.replace(schedule="1f1b"), cluster, calibration=calibration)
        slot = one_f_one_b.bubble_s / (p - 1)
        compute_mb = one_f_one_b.compute_s / m  # with the per-layer overhead, shared out as the FLOPs are
        t_f = slot * stage_forward / compute
        t_w = compute_mb * (layers * (layer - core) + head) / compute
        timeline = pipeline_schedule(p, m, schedule, 1, t_f, slot - t_f, backward_weight_time_s=t_w)
        step = budget.step_time(model, plan, cluster, calibration=calibration)
        assert step.bubble_s == pytest.approx(timeline.bubble_s, rel=1e-9), schedule
        assert step.total_s - step.bubble_s == pytest.approx(one_f_one_b.total_s - one_f_one_b.bubble_s)
        assert step.bubble_s < one_f_one_b.bubble_s


def test_zero_bubble_plans_hold_the_simulated_activations():
    # The first stage holds what the simulator's stage 0 peaks at: p micro-batches for ZB-H1 (as 1F1B), 2p − 1 for
    # ZB-H2 (Qi et al. 2024 Table 2); under a calibration the last stage holds one micro-batch whole and the k(p − 1)
    # waiting for their W, each with only what W reads, M_W (Qi et al. §2.3, Table 1: 32sbh for GPT, against
    # M_B = sb(34h + 5as)): the simulator's peak of stage p − 1 with weight_pending_share = M_W/M_B.
    from course_lib import parallelism

    model = parallelism.GPT2_1_5B
    calibration = parallelism.Calibration(framework=zero_bubble_runner())
    h = model.hidden
    # GPT: M_W per token and layer is 32h bytes, Qi et al.'s Table 1
    assert parallelism.weight_gradient_bytes_per_token_per_layer(model) == 32 * h
    for p, m in ((4, 8), (8, 16), (6, 24)):
        base = parallelism.ParallelPlan(pipeline_parallel=p, grad_accum_steps=m, attention="flash")
        layers = -(-model.layers // p)
        m_b = parallelism.activation_bytes_per_token_per_layer(model, attention="flash") * model.seq_len * layers
        m_w = 32 * h * model.seq_len * layers
        one_f_one_b = parallelism.memory_breakdown(model, base, calibration=None).activations
        flat = parallelism.memory_breakdown(model, base, calibration=calibration)
        assert (flat.activations, flat.logits) == (pytest.approx(p * m_b), 0.0)  # 1F1B: the first stage
        for schedule in ("zb-h1", "zb-h2"):
            plan = base.replace(schedule=schedule)
            timeline = pipeline_schedule(p, m, schedule)
            first = timeline.peak_in_flight(0)
            assert first == {"zb-h1": p, "zb-h2": 2 * p - 1}[schedule]
            ideal = parallelism.memory_breakdown(model, plan, calibration=None).activations
            assert ideal == pytest.approx(one_f_one_b * first / p)
            last = timeline.peak_in_flight(p - 1, weight_pending_share=m_w / m_b) * m_b
            k = {"zb-h1": 1, "zb-h2": 2}[schedule]
            assert last == pytest.approx(m_b + k * (p - 1) * m_w)  # by hand
            parts = parallelism.calibrated_memory_breakdown(model, plan, calibration)
            # the heaviest of the two: the first stage's activations, or the last's with its logits
            want = max((first * m_b, 0.0), (last, float(parts.logits)), key=sum)
            assert (float(parts.activations), float(parts.logits)) == (pytest.approx(want[0]), pytest.approx(want[1]))
            assert last < (1 + k * (p - 1)) * m_b  # less than the k(p − 1) waiting micro-batches counted whole
