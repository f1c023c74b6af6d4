"""Pipeline schedules as an event simulation: GPipe, 1F1B (PipeDream-Flush) and Megatron-LM's interleaved 1F1B.

Each of the p devices holds one pipeline stage (v model chunks with the interleaved schedule) and runs its
forward and backward passes in the order its schedule prescribes. An op starts when its device is free *and* the
op it depends on has finished; communication takes no time. The makespan against the ideal time m·(t_f + t_b)
gives the bubble, which the simulation finds without being told the formula:

>>> timeline = pipeline_schedule(4, 8, "1f1b")
>>> timeline.total_s, timeline.ideal_s, timeline.bubble_fraction   # (m + p − 1)(t_f + t_b); (p − 1)/m
(33.0, 24.0, 0.375)
>>> pipeline_schedule(4, 8, "interleaved", virtual_stages=2).bubble_fraction   # (p − 1)/(v·m)
0.1875

Times are in seconds (t_f and t_b are per micro-batch for a whole stage; with v chunks each chunk op takes t/v).
The defaults t_f = 1 s and t_b = 2 s make the timeline read in units of t_f.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from . import _check

__all__ = ["SCHEDULES", "PipelineOp", "PipelineTimeline", "pipeline_schedule", "device_op_order"]

# The schedules simulated here; a ``parallelism.ParallelPlan`` takes one of them.
SCHEDULES = ("gpipe", "1f1b", "interleaved")


@dataclass(frozen=True)
class PipelineOp:
    """One forward or backward pass of one micro-batch through one model chunk on one device (stage)."""

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
    """The simulated schedule of one optimizer step: every op with its start and end time (seconds)."""

    stages: int
    microbatches: int
    schedule: str
    virtual_stages: int
    forward_time_s: float
    backward_time_s: float
    ops: tuple[PipelineOp, ...]

    @property
    def total_s(self) -> float:
        """Makespan: from the first forward to the last backward."""
        return max(op.end_s for op in self.ops) - min(op.start_s for op in self.ops)

    @property
    def ideal_s(self) -> float:
        """m·(t_f + t_b): one device's work, the step time without a bubble (Narayanan et al.'s t_id)."""
        return self.microbatches * (self.forward_time_s + self.backward_time_s)

    @property
    def bubble_s(self) -> float:
        """total_s − ideal_s: the time each device idles (t_pb)."""
        return self.total_s - self.ideal_s

    @property
    def bubble_fraction(self) -> float:
        """bubble_s / ideal_s, Narayanan et al. 2021's t_pb / t_id (not the share of the whole step).

        >>> pipeline_schedule(8, 32, "gpipe").bubble_fraction
        0.21875
        """
        return self.bubble_s / self.ideal_s

    def stage_ops(self, stage: int) -> tuple:
        """The ops of one device, in the order it runs them."""
        stage = self._check_stage(stage)
        return tuple(sorted((op for op in self.ops if op.stage == stage), key=lambda op: op.start_s))

    def peak_in_flight(self, stage: int = 0) -> float:
        """Most micro-batches whose activations ``stage`` holds at once, in full-stage units.

        A chunk's forward stores 1/v of a stage's activations for one micro-batch; its backward frees them.
        GPipe holds m, 1F1B min(p, m), interleaved p + (p − 1)/v once m·v exceeds the warm-up; with m = p the
        interleaved warm-up covers every forward and stage 0 holds p (parallelism's formula gives p + (p − 1)/v).

        >>> [pipeline_schedule(4, 8, s).peak_in_flight() for s in ("gpipe", "1f1b")]
        [8.0, 4.0]
        >>> pipeline_schedule(4, 8, "interleaved", virtual_stages=2).peak_in_flight()   # p + (p − 1)/v
        5.5
        """
        held = peak = 0
        for op in self.stage_ops(stage):
            held += 1 if op.kind == "forward" else -1
            peak = max(peak, held)
        return float(Fraction(peak, self.virtual_stages))

    def _check_stage(self, stage) -> int:
        stage = _check.count("stage", stage, minimum=0)
        if not isinstance(stage, int) or stage >= self.stages:
            raise ValueError(f"stage must be an integer in 0..{self.stages - 1}, got {stage!r}")
        return stage


def _scalar_count(name, value, minimum=1):
    result = _check.count(name, value, minimum)
    if not isinstance(result, int):
        raise ValueError(f"{name} must be a single integer, not an array; got {value!r}")
    return result


def _scalar_positive(name, value):
    result = _check.positive(name, value)
    if not isinstance(result, float):
        raise ValueError(f"{name} must be a single number, not an array; got {value!r}")
    return result


def _interleaved_chunk(k: int, p: int, v: int, forward: bool) -> int:
    """Megatron-LM's ``get_model_chunk_id``: chunk of the k-th forward (or backward) op of a device."""
    chunk = (k % (p * v)) // p
    return chunk if forward else v - 1 - chunk


def _interleaved_microbatch(k: int, p: int, v: int) -> int:
    """Micro-batch of the k-th op: groups of p micro-batches go through every chunk before the next group."""
    return (k // (p * v)) * p + k % p


def device_op_order(stages, microbatches, schedule="1f1b", virtual_stages=1, stage=0) -> list:
    """The (kind, micro-batch, chunk) ops device ``stage`` runs, in the order its schedule prescribes.

    GPipe: all forwards, then all backwards. 1F1B (PipeDream-Flush): min(p − s − 1, m) warm-up forwards, then one
    forward and one backward in turn, then the remaining backwards. Interleaved (Megatron-LM,
    ``forward_backward_pipelining_with_interleaving``): (p − s − 1)·2 + (v − 1)·p warm-up chunk-forwards (at
    most m·v), then 1F1B over chunk ops, taking micro-batches in groups of p through chunks 0, 1, … v − 1
    forward and v − 1, … 0 backward (``get_model_chunk_id``).

    >>> device_op_order(2, 3, "1f1b", stage=0)
    [('forward', 0, 0), ('forward', 1, 0), ('backward', 0, 0), ('forward', 2, 0), ('backward', 1, 0),
     ('backward', 2, 0)]
    """
    p, m, v = _check_schedule(stages, microbatches, schedule, virtual_stages)
    s = _scalar_count("stage", stage, minimum=0)
    if s >= p:
        raise ValueError(f"stage must be an integer in 0..{p - 1}, got {stage!r}")
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


def _check_schedule(stages, microbatches, schedule, virtual_stages):
    p = _scalar_count("stages", stages)
    m = _scalar_count("microbatches", microbatches)
    _check.choice("schedule", schedule, SCHEDULES)
    v = _scalar_count("virtual_stages", virtual_stages)
    if schedule == "interleaved":
        if v < 2:
            raise ValueError(f"virtual_stages must be ≥ 2 with schedule='interleaved', got {v}")
        if m % p:
            raise ValueError(
                f"microbatches must be a multiple of stages ({p}) for the interleaved schedule "
                f"(Narayanan et al. 2021 §2.2.2), got {m}"
            )
    elif v != 1:
        raise ValueError(f"virtual_stages must be 1 unless schedule='interleaved', got {v}")
    return p, m, v


def _dependency(kind, microbatch, chunk, stage, p, v):
    """The op (kind, micro-batch, chunk, stage) that must finish first, or None."""
    if kind == "forward":
        if stage > 0:
            return ("forward", microbatch, chunk, stage - 1)
        return ("forward", microbatch, chunk - 1, p - 1) if chunk > 0 else None
    if stage < p - 1:
        return ("backward", microbatch, chunk, stage + 1)
    if chunk < v - 1:
        return ("backward", microbatch, chunk + 1, 0)
    return ("forward", microbatch, chunk, stage)  # the loss: the last chunk's backward follows its own forward


def pipeline_schedule(
    stages, microbatches, schedule="1f1b", virtual_stages=1, forward_time_s=1.0, backward_time_s=2.0
) -> PipelineTimeline:
    """Simulate one step of a pipeline schedule: every device runs its ops in order, as soon as inputs are ready.

    ``forward_time_s`` and ``backward_time_s`` are t_f and t_b of one micro-batch through one whole stage; each of
    the v chunks of an interleaved stage takes t/v. Communication is free, so the gaps are pure bubble. Raises
    RuntimeError if the prescribed orders deadlock (they do not for these schedules).

    >>> from course_lib.units import format_percent, format_time
    >>> t = pipeline_schedule(4, 4, "gpipe", forward_time_s=1e-3, backward_time_s=2e-3)
    >>> format_time(t.total_s), format_percent(t.bubble_fraction)
    ('21 ms', '75 %')
    """
    p, m, v = _check_schedule(stages, microbatches, schedule, virtual_stages)
    t_f = _scalar_positive("forward_time_s", forward_time_s)
    t_b = _scalar_positive("backward_time_s", backward_time_s)
    duration = {"forward": t_f / v, "backward": t_b / v}
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
    return PipelineTimeline(p, m, schedule, v, t_f, t_b, tuple(ops))
