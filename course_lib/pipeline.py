"""Pipeline schedules as an event simulation: GPipe, 1F1B (PipeDream-Flush), Megatron-LM's interleaved 1F1B, and the
zero-bubble schedules ZB-H1 and ZB-H2 of Qi et al. 2024 ("Zero Bubble Pipeline Parallelism", ICLR 2024, arXiv
2401.10241), whose backward pass is split in two.

Each of the p devices holds one pipeline stage (v model chunks with the interleaved schedule) and runs its
forward and backward passes in the order its schedule prescribes. An op starts when its device is free *and* the
op it depends on has finished; communication takes no time. The makespan against the ideal time m·(t_F + t_bwd)
gives the bubble, which the simulation finds without being told the formula:

>>> timeline = pipeline_schedule(4, 8, "1f1b")
>>> timeline.total_s, timeline.ideal_s, timeline.bubble_fraction   # (m + p − 1)(t_F + t_bwd); (p − 1)/m
(33.0, 24.0, 0.375)
>>> pipeline_schedule(4, 8, "interleaved", virtual_stages=2).bubble_fraction   # (p − 1)/(v·m)
0.1875
>>> pipeline_schedule(4, 8, "zb-h1").bubble_s   # (p − 1)(t_F + t_B − t_W) with t_F = t_B = t_W: a third of 1F1B's
3.0

Times are in seconds (t_F and t_bwd are per micro-batch for a whole stage; with v chunks each chunk op takes t/v).
The defaults t_F = 1 s and t_bwd = 2 s make the timeline read in units of t_F. GPipe, 1F1B and interleaved run the
backward as one op (``"backward"``); ZB-H1 and ZB-H2 split it (Qi et al. §2) into B, the input gradient
(``"backward_input"``, t_B), which the previous stage waits for, and W, the weight gradient (``"backward_weight"``,
t_W), which nothing waits for and which the schedule moves into the bubble; t_B + t_W = t_bwd, by default t_W = t_bwd/2,
so that t_F = t_B = t_W as in the paper's analysis.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from . import _check

__all__ = [
    "SCHEDULES",
    "ZERO_BUBBLE_SCHEDULES",
    "SIMULATED_SCHEDULES",
    "ZERO_BUBBLE_WARMUP",
    "OP_KINDS",
    "PipelineOp",
    "PipelineTimeline",
    "pipeline_schedule",
    "device_op_order",
    "zero_bubble_min_microbatches",
    "check_schedule",
    "check_backward_weight_time",
]

# The schedules with one backward op per micro-batch and model chunk (lab 4's buttons).
SCHEDULES = ("gpipe", "1f1b", "interleaved")
# Qi et al. 2024 §2's handcrafted schedules, the backward split into B and W; a ``parallelism.ParallelPlan`` takes
# these too (``SIMULATED_SCHEDULES``), under a framework that splits the backward (``Framework.split_backward``).
ZERO_BUBBLE_SCHEDULES = ("zb-h1", "zb-h2")
SIMULATED_SCHEDULES = SCHEDULES + ZERO_BUBBLE_SCHEDULES
# Warm-up forwards per later stage, k: stage s runs k·(p − s − 1) warm-up forwards, one more, then its first B (ZB-H1
# as 1F1B; ZB-H2 twice as many, §2.2's extra warm-up forwards), and runs the W of micro-batch i − k·s after the B of i.
ZERO_BUBBLE_WARMUP = {"zb-h1": 1, "zb-h2": 2}
# An op's kind: a forward, a whole backward (B + W), or the backward's two halves.
OP_KINDS = ("forward", "backward", "backward_input", "backward_weight")
# What an op changes in the micro-batches its stage holds, (held whole, waiting for their W): F adds one held whole,
# a whole backward frees it, B keeps only W's inputs of it, W frees those.
_HELD_CHANGE = {
    "forward": (1, 0),
    "backward": (-1, 0),
    "backward_input": (-1, 1),
    "backward_weight": (0, -1),
}


@dataclass(frozen=True)
class PipelineOp:
    """One pass of one micro-batch through one model chunk on one device (stage): ``kind`` is one of ``OP_KINDS``."""

    stage: int
    microbatch: int
    chunk: int
    kind: str
    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        """end_s − start_s."""
        return self.end_s - self.start_s


@dataclass(frozen=True)
class PipelineTimeline:
    """The simulated schedule of one optimizer step: every op with its start and end time (seconds).

    ``backward_time_s`` is t_bwd, the whole backward of one micro-batch through a stage; the zero-bubble schedules run
    it as B (``backward_input_time_s``) and W (``backward_weight_time_s``).
    """

    stages: int
    microbatches: int
    schedule: str
    virtual_stages: int
    forward_time_s: float
    backward_time_s: float
    ops: tuple[PipelineOp, ...]
    backward_weight_time_s: float

    @property
    def backward_input_time_s(self) -> float:
        """t_B = t_bwd − t_W: the input-gradient half of the backward."""
        return self.backward_time_s - self.backward_weight_time_s

    @property
    def total_s(self) -> float:
        """Makespan: from the first forward to the last backward."""
        return max(op.end_s for op in self.ops) - min(op.start_s for op in self.ops)

    @property
    def ideal_s(self) -> float:
        """m·(t_F + t_bwd): one device's work, the step time without a bubble (Narayanan et al.'s t_id)."""
        return self.microbatches * (self.forward_time_s + self.backward_time_s)

    @property
    def bubble_s(self) -> float:
        """total_s − ideal_s: the time each device idles (t_pb) in a step that ends when the slowest stage ends."""
        return self.total_s - self.ideal_s

    @property
    def bubble_fraction(self) -> float:
        """bubble_s / ideal_s, Narayanan et al. 2021's t_pb / t_id (not the share of the whole step).

        >>> pipeline_schedule(8, 32, "gpipe").bubble_fraction
        0.21875
        """
        return self.bubble_s / self.ideal_s

    @cached_property
    def _stage_spans(self) -> tuple[float, ...]:
        first, last = [float("inf")] * self.stages, [float("-inf")] * self.stages
        for op in self.ops:
            first[op.stage] = min(first[op.stage], op.start_s)
            last[op.stage] = max(last[op.stage], op.end_s)
        return tuple(end - start for start, end in zip(first, last, strict=True))

    def stage_bubble_s(self, stage: int) -> float:
        """The time ``stage`` idles between its first op and its last (its busy time is ideal_s).

        >>> [pipeline_schedule(4, 8, "zb-h2").stage_bubble_s(s) for s in range(4)]   # t_F = t_B = t_W: none
        [0.0, 0.0, 0.0, 0.0]
        """
        return self._stage_spans[self._check_stage(stage)] - self.ideal_s

    @property
    def unsynchronised_bubble_s(self) -> float:
        """The bubble when nothing synchronises the stages between steps: the most any stage idles between its first
        op and its last (``stage_bubble_s``).

        Each stage then starts its next step as soon as its own ops are done, so steps repeat every ideal_s +
        unsynchronised_bubble_s. Qi et al. 2024 §4 get there by replacing the optimizer step's all-reduces (gradient
        norm, NaN check) with a check after the step ("post-validation"); their Table 2 bubbles of ZB-H2 are this
        measure. For GPipe, 1F1B and interleaved stage 0 starts first and ends last: it equals ``bubble_s``.

        >>> timeline = pipeline_schedule(4, 8, "zb-h2")
        >>> timeline.bubble_s, timeline.unsynchronised_bubble_s   # the last stage starts (p − 1)·t_F late
        (3.0, 0.0)
        """
        return max(self._stage_spans) - self.ideal_s

    @property
    def unsynchronised_bubble_fraction(self) -> float:
        """unsynchronised_bubble_s / ideal_s."""
        return self.unsynchronised_bubble_s / self.ideal_s

    def stage_ops(self, stage: int) -> tuple:
        """The ops of one device, in the order it runs them."""
        stage = self._check_stage(stage)
        return tuple(sorted((op for op in self.ops if op.stage == stage), key=lambda op: op.start_s))

    def peak_in_flight(self, stage: int = 0, weight_pending_share: float = 1.0) -> float:
        """Most micro-batches whose activations ``stage`` holds at once, in full-stage units.

        A chunk's forward stores 1/v of a stage's activations for one micro-batch; its backward frees them.
        GPipe holds m, 1F1B min(p, m), interleaved p + (p − 1)/v once m·v exceeds the warm-up; with m = p the
        interleaved warm-up covers every forward and stage 0 holds p (parallelism's formula gives p + (p − 1)/v).

        With the backward split (ZB-H1, ZB-H2), B frees what only it needs and keeps W's inputs until W runs: a
        micro-batch between its B and its W counts ``weight_pending_share`` (M_W/M_B in Qi et al.'s Table 1, at most
        1); the default 1 counts every micro-batch from its F to its W. Stage s then holds (p − s) + s·share
        (ZB-H1) or (2p − 2s − 1) + 2s·share (ZB-H2) micro-batches (Qi et al. §2.3).

        >>> [pipeline_schedule(4, 8, s).peak_in_flight() for s in ("gpipe", "1f1b")]
        [8.0, 4.0]
        >>> pipeline_schedule(4, 8, "interleaved", virtual_stages=2).peak_in_flight()   # p + (p − 1)/v
        5.5
        >>> zb = pipeline_schedule(4, 8, "zb-h2")
        >>> zb.peak_in_flight(0), zb.peak_in_flight(3), zb.peak_in_flight(3, weight_pending_share=0.5)
        (7.0, 7.0, 4.0)
        """
        share = _check.fraction("weight_pending_share", weight_pending_share, allow_zero=True)
        full = pending = 0
        peak = 0.0
        for op in self.stage_ops(stage):
            full_change, pending_change = _HELD_CHANGE[op.kind]
            full, pending = full + full_change, pending + pending_change
            peak = max(peak, full + share * pending)
        return peak / self.virtual_stages

    def _check_stage(self, stage) -> int:
        stage = _check.count("stage", stage, minimum=0)
        if not isinstance(stage, int) or stage >= self.stages:
            raise ValueError(f"stage must be an integer in 0..{self.stages - 1}, got {stage!r}")
        return stage


def _scalar_schedule(stages, microbatches, schedule, virtual_stages) -> tuple[int, int, int]:
    """``check_schedule`` for one schedule to simulate: p, m and v single integers."""
    p, m = _check.scalar_count("stages", stages), _check.scalar_count("microbatches", microbatches)
    v = _check.scalar_count("virtual_stages", virtual_stages)
    check_schedule(p, m, schedule, v)
    return p, m, v


def zero_bubble_min_microbatches(stages, schedule):
    """The fewest micro-batches a zero-bubble schedule runs with: k(p − 1) + 1, p for ZB-H1 and 2p − 1 for ZB-H2.

    Stage 0 runs k(p − 1) warm-up forwards and one more before its first B (``ZERO_BUBBLE_WARMUP``); with fewer
    micro-batches the warm-up cannot fill and the schedule is not the paper's.

    >>> zero_bubble_min_microbatches(4, "zb-h1"), zero_bubble_min_microbatches(4, "zb-h2")
    (4, 7)
    """
    p = _check.count("stages", stages)
    k = ZERO_BUBBLE_WARMUP[_check.choice("schedule", schedule, ZERO_BUBBLE_SCHEDULES)]
    return k * (p - 1) + 1


def _interleaved_chunk(k: int, p: int, v: int, forward: bool) -> int:
    """Megatron-LM's ``get_model_chunk_id``: chunk of the k-th forward (or backward) op of a device."""
    chunk = (k % (p * v)) // p
    return chunk if forward else v - 1 - chunk


def _interleaved_microbatch(k: int, p: int, v: int) -> int:
    """Micro-batch of the k-th op: groups of p micro-batches go through every chunk before the next group."""
    return (k // (p * v)) * p + k % p


def _zero_bubble_order(p: int, m: int, s: int, k: int) -> list:
    """Stage s of ZB-H1 (k = 1) or ZB-H2 (k = 2): k(p − s − 1) warm-up forwards; then for each micro-batch i a forward
    (while any is left), the B of i and, from i = k·s on, the W of i − k·s; the k·s W left over at the end.

    Delaying W by k·s keeps k(p − 1) + 1 micro-batches in flight on every stage: worker i (from 1) holds
    (p − i + 1)M_B + (i − 1)M_W with ZB-H1 and (2p − 2i + 1)M_B + (2i − 2)M_W with ZB-H2 (Qi et al. 2024 §2.3).
    """
    warmup = k * (p - s - 1)
    order = [("forward", i, 0) for i in range(warmup)]
    for i in range(m):
        if warmup + i < m:
            order.append(("forward", warmup + i, 0))
        order.append(("backward_input", i, 0))
        if i >= k * s:
            order.append(("backward_weight", i - k * s, 0))
    return order + [("backward_weight", i, 0) for i in range(m - k * s, m)]


def device_op_order(stages, microbatches, schedule="1f1b", virtual_stages=1, stage=0) -> list:
    """The (kind, micro-batch, chunk) ops device ``stage`` runs, in the order its schedule prescribes.

    GPipe: all forwards, then all backwards. 1F1B (PipeDream-Flush): min(p − s − 1, m) warm-up forwards, then one
    forward and one backward in turn, then the remaining backwards. Interleaved (Megatron-LM,
    ``forward_backward_pipelining_with_interleaving``): (p − s − 1)·2 + (v − 1)·p warm-up chunk-forwards (at
    most m·v), then 1F1B over chunk ops, taking micro-batches in groups of p through chunks 0, 1, … v − 1
    forward and v − 1, … 0 backward (``get_model_chunk_id``). ZB-H1 and ZB-H2 (Qi et al. 2024 §2.1, §2.2): 1F1B
    with B in place of the backward, k(p − s − 1) warm-up forwards and each W k·s micro-batches after its B
    (``ZERO_BUBBLE_WARMUP``), the last ones at the end, where they fill the bubble of the drain.

    >>> device_op_order(2, 3, "1f1b", stage=0)
    [('forward', 0, 0), ('forward', 1, 0), ('backward', 0, 0), ('forward', 2, 0), ('backward', 1, 0),
     ('backward', 2, 0)]
    >>> letter = {"forward": "F", "backward_input": "B", "backward_weight": "W"}
    >>> for s in range(3):   # ZB-H1, p = 3, m = 5, as Qi et al.'s Figure 3 draws it
    ...     print(" ".join(f"{letter[kind]}{i + 1}" for kind, i, _ in device_op_order(3, 5, "zb-h1", stage=s)))
    F1 F2 F3 B1 W1 F4 B2 W2 F5 B3 W3 B4 W4 B5 W5
    F1 F2 B1 F3 B2 W1 F4 B3 W2 F5 B4 W3 B5 W4 W5
    F1 B1 F2 B2 F3 B3 W1 F4 B4 W2 F5 B5 W3 W4 W5
    """
    p, m, v = _scalar_schedule(stages, microbatches, schedule, virtual_stages)
    s = _check.scalar_count("stage", stage, minimum=0)
    if s >= p:
        raise ValueError(f"stage must be an integer in 0..{p - 1}, got {stage!r}")
    if schedule in ZERO_BUBBLE_SCHEDULES:
        return _zero_bubble_order(p, m, s, ZERO_BUBBLE_WARMUP[schedule])
    if schedule == "gpipe":
        return [("forward", i, 0) for i in range(m)] + [("backward", i, 0) for i in range(m)]
    if schedule == "1f1b":
        warmup = min(p - s - 1, m)
        forwards = [("forward", i, 0) for i in range(m)]
        backwards = [("backward", i, 0) for i in range(m)]
    else:
        total = m * v
        warmup = min((p - s - 1) * 2 + (v - 1) * p, total)
        forwards = [
            ("forward", _interleaved_microbatch(k, p, v), _interleaved_chunk(k, p, v, True)) for k in range(total)
        ]
        backwards = [
            ("backward", _interleaved_microbatch(k, p, v), _interleaved_chunk(k, p, v, False)) for k in range(total)
        ]
    order = forwards[:warmup]
    steady = len(forwards) - warmup
    for k in range(steady):
        order += [forwards[warmup + k], backwards[k]]
    return order + backwards[steady:]


def check_schedule(stages, microbatches, schedule="1f1b", virtual_stages: _check.IntOrArray = 1):
    """Check that a schedule runs with these p, m and v (numbers or arrays) and return them as counts.

    Interleaving needs v ≥ 2 and m a multiple of p (Narayanan et al. 2021 §2.2.2), the other schedules v = 1, and
    ZB-H1 and ZB-H2 at least ``zero_bubble_min_microbatches`` micro-batches. The simulation and the formulas check
    their arguments here.

    >>> check_schedule(4, 6, "zb-h2")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: microbatches must be ≥ 2(p − 1) + 1 = 7 for schedule='zb-h2' with p = 4 stages (...), got 6
    """
    p = _check.count("stages", stages)
    m = _check.count("microbatches", microbatches)
    _check.choice("schedule", schedule, SIMULATED_SCHEDULES)
    v = _check.count("virtual_stages", virtual_stages)
    if schedule == "interleaved":
        if np.any(np.asarray(v) < 2):
            raise ValueError(f"virtual_stages must be ≥ 2 with schedule='interleaved', got {v}")
        if np.any(np.asarray(m) % np.asarray(p)):
            raise ValueError(
                f"microbatches must be a multiple of stages ({p}) for the interleaved schedule "
                f"(Narayanan et al. 2021 §2.2.2), got {m}"
            )
    elif np.any(np.asarray(v) != 1):
        raise ValueError(f"virtual_stages must be 1 unless schedule='interleaved', got {v}")
    if schedule in ZERO_BUBBLE_SCHEDULES:
        k = ZERO_BUBBLE_WARMUP[schedule]
        fewest = zero_bubble_min_microbatches(p, schedule)
        if np.any(np.asarray(m) < fewest):
            raise ValueError(
                f"microbatches must be ≥ {k}(p − 1) + 1 = {fewest} for schedule={schedule!r} with p = {p} stages "
                f"(stage 0 runs {k}(p − 1) warm-up forwards and one more before its first B; Qi et al. 2024 §2), "
                f"got {m}"
            )
    return p, m, v


def check_backward_weight_time(backward_weight_time_s, backward_time_s):
    """t_W (numbers or arrays): half of t_bwd when None (t_B = t_W, Qi et al.'s analysis), else finite, > 0 and < t_bwd.

    >>> check_backward_weight_time(None, 2.0), check_backward_weight_time(0.5, 2.0)
    (1.0, 0.5)
    """
    t_b = _check.positive("backward_time_s", backward_time_s)
    if backward_weight_time_s is None:
        return t_b / 2
    t_w = _check.positive("backward_weight_time_s", backward_weight_time_s)
    if np.any(np.asarray(t_w) >= t_b):
        raise ValueError(
            f"backward_weight_time_s must be < backward_time_s ({backward_time_s!r}), the whole backward B + W, "
            f"so that B takes a positive time; got {backward_weight_time_s!r}"
        )
    return t_w


def _dependency(kind, microbatch, chunk, stage, p, v):
    """The op (kind, micro-batch, chunk, stage) that must finish first, or None."""
    if kind == "forward":
        if stage > 0:
            return ("forward", microbatch, chunk, stage - 1)
        return ("forward", microbatch, chunk - 1, p - 1) if chunk > 0 else None
    if kind == "backward_weight":  # W needs the output gradient its own stage's B received
        return ("backward_input", microbatch, chunk, stage)
    # A backward, or B: the gradient comes from the next stage (the same kind of op there).
    if stage < p - 1:
        return (kind, microbatch, chunk, stage + 1)
    if chunk < v - 1:
        return (kind, microbatch, chunk + 1, 0)
    return ("forward", microbatch, chunk, stage)  # the loss: the last chunk's backward follows its own forward


def pipeline_schedule(
    stages,
    microbatches,
    schedule="1f1b",
    virtual_stages=1,
    forward_time_s=1.0,
    backward_time_s=2.0,
    backward_weight_time_s=None,
) -> PipelineTimeline:
    """Simulate one step of a pipeline schedule: every device runs its ops in order, as soon as inputs are ready.

    ``forward_time_s`` and ``backward_time_s`` are t_F and t_bwd of one micro-batch through one whole stage; each of
    the v chunks of an interleaved stage takes t/v. ``backward_weight_time_s`` is t_W, the weight-gradient share of
    t_bwd that ZB-H1 and ZB-H2 run as an op of its own (default t_bwd/2; B then takes t_bwd − t_W); the other schedules
    run the backward whole and ignore it. Communication is free, so the gaps are pure bubble. Raises
    RuntimeError if the prescribed orders deadlock (they do not for these schedules).

    >>> from course_lib.units import format_percent, format_time
    >>> t = pipeline_schedule(4, 4, "gpipe", forward_time_s=1e-3, backward_time_s=2e-3)
    >>> format_time(t.total_s), format_percent(t.bubble_fraction)
    ('21 ms', '75 %')
    >>> pipeline_schedule(4, 8, "zb-h1", backward_time_s=1.5, backward_weight_time_s=0.5).bubble_s   # 3·(1 + 1 − ½)
    4.5
    """
    p, m, v = _scalar_schedule(stages, microbatches, schedule, virtual_stages)
    t_f = _check.scalar_positive("forward_time_s", forward_time_s)
    t_b = _check.scalar_positive("backward_time_s", backward_time_s)
    if backward_weight_time_s is not None:
        _check.scalar_positive("backward_weight_time_s", backward_weight_time_s)
    t_w = float(check_backward_weight_time(backward_weight_time_s, t_b))
    duration = {"forward": t_f / v, "backward": t_b / v, "backward_input": (t_b - t_w) / v, "backward_weight": t_w / v}
    queues = [device_op_order(p, m, schedule, v, s) for s in range(p)]
    position = [0] * p
    free_at = [0.0] * p
    finished = {}  # (kind, micro-batch, chunk, stage) -> end time
    blocked = {}  # op a device waits for -> that device
    ops = []
    runnable = list(range(p - 1, -1, -1))
    while runnable:
        s = runnable.pop()
        queue = queues[s]
        while position[s] < len(queue):
            kind, microbatch, chunk = queue[position[s]]
            needed = _dependency(kind, microbatch, chunk, s, p, v)
            if needed is not None and needed not in finished:
                blocked[needed] = s
                break
            start = max(free_at[s], finished[needed] if needed is not None else 0.0)
            end = start + duration[kind]
            key = (kind, microbatch, chunk, s)
            finished[key] = end
            ops.append(PipelineOp(s, microbatch, chunk, kind, start, end))
            free_at[s] = end
            position[s] += 1
            if key in blocked:
                runnable.append(blocked.pop(key))
    if len(ops) < sum(len(queue) for queue in queues):
        waiting = {s: queues[s][position[s]] for s in range(p) if position[s] < len(queues[s])}
        raise RuntimeError(
            f"pipeline schedule {schedule!r} (p={p}, m={m}, v={v}) deadlocked: each device's next op "
            f"waits for one that never runs; next ops (kind, micro-batch, chunk) by device: {waiting}. "
            f"This is a bug in the schedule order."
        )
    ops.sort(key=lambda op: (op.start_s, op.stage))
    return PipelineTimeline(p, m, schedule, v, t_f, t_b, tuple(ops), backward_weight_time_s=t_w)
