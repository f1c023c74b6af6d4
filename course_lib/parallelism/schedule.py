"""A pipeline schedule simulated and by formula: ``pipeline_schedule_report`` runs ``pipeline.pipeline_schedule`` (an
event simulation that knows nothing of the bubble formula) and sets beside it ``pipeline_bubble_fraction``
(p − 1)/(v·m) and ``pipeline_in_flight_microbatches``, so that every schedule checks the formulas against the
simulation (``PipelineScheduleReport``, lab 4's one call).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

from .. import _check
from ..pipeline import PipelineTimeline, pipeline_schedule
from .memory import pipeline_in_flight_microbatches
from .plan import pipeline_bubble_fraction

__all__ = ["PipelineScheduleReport", "pipeline_schedule_report"]


@dataclass(frozen=True, eq=False)
class PipelineScheduleReport:
    """One step of a pipeline schedule: the simulated ``timeline`` and what the formulas say of it,
    ``formula_bubble_fraction`` (p − 1)/(v·m) and ``formula_peak_in_flight`` (the micro-batches stage 0 holds at its
    peak). The simulated numbers are read off the timeline once each (its properties scan every op).

    >>> report = pipeline_schedule_report(4, 8, "1f1b")
    >>> report.total_s, report.bubble_fraction, report.formula_bubble_fraction, report.peak_in_flight
    (33.0, 0.375, 0.375, 4.0)
    """

    timeline: PipelineTimeline
    formula_bubble_fraction: float
    formula_peak_in_flight: float

    def __post_init__(self):
        if not isinstance(self.timeline, PipelineTimeline):
            raise ValueError(f"timeline must be a pipeline.PipelineTimeline, got {type(self.timeline).__name__}")
        for name in ("formula_bubble_fraction", "formula_peak_in_flight"):
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
        """ "gpipe", "1f1b" or "interleaved"."""
        return self.timeline.schedule

    @cached_property
    def total_s(self) -> float:
        """The simulated step, first forward to last backward."""
        return float(self.timeline.total_s)

    @property
    def ideal_s(self) -> float:
        """m·(t_f + t_b), the step without a bubble."""
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
    def peak_in_flight(self) -> float:
        """Simulated: the most micro-batches whose activations stage 0 holds at once."""
        return float(self.timeline.peak_in_flight(0))

    @property
    def bubble_matches(self) -> bool:
        """Whether the simulated bubble fraction is the formula's (up to rounding)."""
        return math.isclose(self.bubble_fraction, self.formula_bubble_fraction, abs_tol=1e-12)

    @property
    def peak_in_flight_matches(self) -> bool:
        """Whether the simulated peak of stage 0 is the formula's (up to rounding)."""
        return math.isclose(self.peak_in_flight, self.formula_peak_in_flight)


def pipeline_schedule_report(
    stages, microbatches, schedule="1f1b", virtual_stages=1, forward_time_s=1.0, backward_time_s=2.0
) -> PipelineScheduleReport:
    """Simulate one step of ``schedule`` (``pipeline.pipeline_schedule``, same arguments) and set the formulas for its
    bubble and for the micro-batches stage 0 holds beside it (``PipelineScheduleReport``).

    >>> from course_lib.units import format_percent
    >>> report = pipeline_schedule_report(4, 8, "interleaved", virtual_stages=2)
    >>> format_percent(report.bubble_fraction), report.bubble_matches, report.peak_in_flight
    ('18.8 %', True, 5.5)
    """
    timeline = pipeline_schedule(stages, microbatches, schedule, virtual_stages, forward_time_s, backward_time_s)
    p, m, v = timeline.stages, timeline.microbatches, timeline.virtual_stages
    return PipelineScheduleReport(
        timeline,
        float(pipeline_bubble_fraction(p, m, v)),
        float(pipeline_in_flight_microbatches(p, m, schedule, v)),
    )
