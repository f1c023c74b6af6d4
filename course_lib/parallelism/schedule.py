"""A pipeline schedule simulated and by formula: ``pipeline_schedule_report`` runs ``pipeline.pipeline_schedule`` (an
event simulation that knows nothing of the bubble formula) and sets beside it the formulas for its bubble
(``pipeline_bubble_fraction`` (p − 1)/(v·m), or ``pipeline_bubble_time`` for the zero-bubble schedules) and for the
micro-batches stage 0 holds (``pipeline_in_flight_microbatches``), so that every schedule checks the formulas against
the simulation (``PipelineScheduleReport``, lab 4's one call).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .. import _check
from ..pipeline import (
    SCHEDULES,
    ZERO_BUBBLE_SCHEDULES,
    ZERO_BUBBLE_WARMUP,
    PipelineTimeline,
    check_backward_weight_time,
    check_schedule,
    pipeline_schedule,
)
from .memory import pipeline_in_flight_microbatches
from .plan import pipeline_bubble_fraction

__all__ = ["PipelineScheduleReport", "pipeline_schedule_report", "pipeline_bubble_time"]


def pipeline_bubble_time(
    stages,
    microbatches,
    schedule="1f1b",
    virtual_stages=1,
    forward_time_s=1.0,
    backward_time_s=2.0,
    backward_weight_time_s=None,
    optimizer_sync=True,
):
    """The time each device idles in one step, by formula (seconds): the bubble ``pipeline.pipeline_schedule``
    simulates (``bubble_s``, or ``unsynchronised_bubble_s`` with ``optimizer_sync=False``).

    GPipe and 1F1B: (p − 1)(t_F + t_bwd); interleaved: that divided by v (Narayanan et al. 2021 §2.2,
    ``pipeline_bubble_fraction`` × m(t_F + t_bwd)). ZB-H1 and ZB-H2 split t_bwd into t_B + t_W
    (``backward_weight_time_s``, default t_bwd/2): stage s idles (p − 1 − s)·X between its first op and its last, where
    X = t_F + t_B − k·min(t_F, t_W), at least 0, k = 1 for ZB-H1 and 2 for ZB-H2 (``pipeline.ZERO_BUBBLE_WARMUP``).
    With t_W ≤ t_F (transformers: Qi et al.'s Table 1 gives T_W < T_F < T_B) the longest, (p − 1)X, is their Table 2:
    (p − 1)(T_F + T_B − T_W) and (p − 1)(T_F + T_B − 2T_W); with t_W > t_F, t_F takes the place of t_W (our
    extension, checked against the simulation on a grid of op times).

    ``optimizer_sync`` (default): the step ends when every stage has ended, as when the optimizer step all-reduces
    across stages (gradient norm, NaN check). Stage s starts s·t_F after stage 0, so the bubble is the largest
    s·t_F + (p − 1 − s)X, (p − 1)·max(t_F, X): ZB-H2's t_F = t_B = t_W step keeps (p − 1)t_F. Without it
    (``False``; Qi et al. §4 replace the synchronisation by a check after the step), each stage starts its next step
    when it is done, and the bubble is (p − 1)X, Table 2's measure. For the other schedules both are the same.

    >>> [pipeline_bubble_time(4, 8, s) for s in ("1f1b", "zb-h1", "zb-h2")]   # t_F = t_B = t_W = 1 s: ⅓ of 1F1B's
    [9.0, 3.0, 3.0]
    >>> pipeline_bubble_time(4, 8, "zb-h2", optimizer_sync=False)   # Qi et al. §2.2: zero bubble
    0.0
    """
    p, m, v = check_schedule(stages, microbatches, schedule, virtual_stages)
    t_f = _check.positive("forward_time_s", forward_time_s)
    t_b = _check.positive("backward_time_s", backward_time_s)
    t_w = check_backward_weight_time(backward_weight_time_s, t_b)
    _check.flag("optimizer_sync", optimizer_sync)
    if schedule not in ZERO_BUBBLE_SCHEDULES:
        return _check.as_result(pipeline_bubble_fraction(p, m, v) * m * (t_f + t_b))
    k = ZERO_BUBBLE_WARMUP[schedule]
    per_stage = np.maximum(t_f + (t_b - t_w) - k * np.minimum(t_f, t_w), 0.0)  # X: stage s idles (p − 1 − s)·X
    if optimizer_sync:
        per_stage = np.maximum(per_stage, t_f)  # ... and the last stage starts (p − 1)·t_F late
    return _check.as_result((p - 1) * per_stage)


@dataclass(frozen=True, eq=False)
class PipelineScheduleReport:
    """One step of a pipeline schedule: the simulated ``timeline`` and what the formulas say of it,
    ``formula_bubble_fraction`` (p − 1)/(v·m) for GPipe, 1F1B and interleaved, ``pipeline_bubble_time`` over the ideal
    time for ZB-H1 and ZB-H2 (``formula_unsynchronised_bubble_fraction`` without the optimizer step's synchronisation)
    and ``formula_peak_in_flight`` (the micro-batches stage 0 holds at its peak). The simulated numbers are read off the
    timeline once each (its properties scan every op).

    >>> report = pipeline_schedule_report(4, 8, "1f1b")
    >>> report.total_s, report.bubble_fraction, report.formula_bubble_fraction, report.peak_in_flight
    (33.0, 0.375, 0.375, 4.0)
    """

    timeline: PipelineTimeline
    formula_bubble_fraction: float
    formula_peak_in_flight: float
    formula_unsynchronised_bubble_fraction: float

    def __post_init__(self):
        if not isinstance(self.timeline, PipelineTimeline):
            raise ValueError(f"timeline must be a pipeline.PipelineTimeline, got {type(self.timeline).__name__}")
        for name in ("formula_bubble_fraction", "formula_peak_in_flight", "formula_unsynchronised_bubble_fraction"):
            value = getattr(self, name)
            if not isinstance(value, float):
                raise ValueError(f"{name} must be a float, got {value!r}")
            _check.nonnegative(name, value)

    @property
    def stages(self) -> int:
        """p."""
        return self.timeline.stages

    @property
    def microbatches(self) -> int:
        """m, micro-batches per step."""
        return self.timeline.microbatches

    @property
    def virtual_stages(self) -> int:
        """v, model chunks per device (1 unless interleaved)."""
        return self.timeline.virtual_stages

    @property
    def schedule(self) -> str:
        """ "gpipe", "1f1b", "interleaved", "zb-h1" or "zb-h2"."""
        return self.timeline.schedule

    @cached_property
    def total_s(self) -> float:
        """The simulated step, first forward to last backward."""
        return float(self.timeline.total_s)

    @property
    def ideal_s(self) -> float:
        """m·(t_F + t_bwd), the step without a bubble."""
        return float(self.timeline.ideal_s)

    @cached_property
    def bubble_s(self) -> float:
        """Simulated idle time per device: total_s − ideal_s."""
        return float(self.timeline.bubble_s)

    @cached_property
    def bubble_fraction(self) -> float:
        """Simulated bubble over the ideal time (Narayanan et al.'s t_pb / t_id)."""
        return float(self.timeline.bubble_fraction)

    @property
    def bubble_share_of_step(self) -> float:
        """Simulated bubble over the whole step."""
        return self.bubble_s / self.total_s

    @cached_property
    def unsynchronised_bubble_fraction(self) -> float:
        """Simulated bubble over the ideal time when no synchronisation separates the steps (the longest stage's
        idle time; ``PipelineTimeline.unsynchronised_bubble_s``)."""
        return float(self.timeline.unsynchronised_bubble_fraction)

    @cached_property
    def peak_in_flight(self) -> float:
        """Simulated: the most micro-batches whose activations stage 0 holds at once."""
        return float(self.timeline.peak_in_flight(0))

    @property
    def bubble_matches(self) -> bool:
        """Whether the simulated bubble fractions, with and without the synchronisation, are the formulas' (up to
        rounding)."""
        return math.isclose(self.bubble_fraction, self.formula_bubble_fraction, abs_tol=1e-12) and math.isclose(
            self.unsynchronised_bubble_fraction, self.formula_unsynchronised_bubble_fraction, abs_tol=1e-12
        )

    @property
    def peak_in_flight_matches(self) -> bool:
        """Whether the simulated peak of stage 0 is the formula's (up to rounding)."""
        return math.isclose(self.peak_in_flight, self.formula_peak_in_flight)


def pipeline_schedule_report(
    stages,
    microbatches,
    schedule="1f1b",
    virtual_stages=1,
    forward_time_s=1.0,
    backward_time_s=2.0,
    backward_weight_time_s=None,
) -> PipelineScheduleReport:
    """Simulate one step of ``schedule`` (``pipeline.pipeline_schedule``, same arguments) and set the formulas for its
    bubble and for the micro-batches stage 0 holds beside it (``PipelineScheduleReport``).

    >>> from course_lib.units import format_percent
    >>> report = pipeline_schedule_report(4, 8, "interleaved", virtual_stages=2)
    >>> format_percent(report.bubble_fraction), report.bubble_matches, report.peak_in_flight
    ('18.8 %', True, 5.5)
    >>> zb = pipeline_schedule_report(4, 8, "zb-h2")   # t_F = t_B = t_W
    >>> zb.bubble_fraction, zb.unsynchronised_bubble_fraction, zb.bubble_matches, zb.peak_in_flight   # 2p − 1 held
    (0.125, 0.0, True, 7.0)
    """
    timeline = pipeline_schedule(
        stages, microbatches, schedule, virtual_stages, forward_time_s, backward_time_s, backward_weight_time_s
    )
    p, m, v = timeline.stages, timeline.microbatches, timeline.virtual_stages
    times = (timeline.forward_time_s, timeline.backward_time_s, timeline.backward_weight_time_s)
    if schedule in SCHEDULES:  # the same bubble with or without the synchronisation
        synchronised = unsynchronised = float(pipeline_bubble_fraction(p, m, v))
    else:
        synchronised, unsynchronised = (
            float(pipeline_bubble_time(p, m, schedule, v, *times, optimizer_sync=sync)) / timeline.ideal_s
            for sync in (True, False)
        )
    return PipelineScheduleReport(
        timeline,
        synchronised,
        float(pipeline_in_flight_microbatches(p, m, schedule, v)),
        unsynchronised,
    )
