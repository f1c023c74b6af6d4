"""Figures of the course, one module per concept a lesson or a lab draws. Every ``plot_*`` function takes ``ax=None``
(``axes=None`` for multi-panel figures), draws with labelled units and returns what it drew on. Importing
``course_lib.viz`` imports matplotlib; the formula modules never do.

The modules, each named after the lesson's concept or the lab that shows its figure live: ``course`` (lesson 00's
map), ``compute`` (lesson 01: roofline, FLOPs by part), ``collectives`` (lesson 02: what each collective does, which
rank sends what, time against payload), ``ring_allreduce`` (lesson 02 and lab 1: the ring step by step),
``parallelism`` (lesson 03: the four splits of one model, one layer under tensor parallelism), ``global_batch``
(lab 2), ``memory_budget`` (lessons 01 and 03, lab 3: memory per device), ``pipeline_schedule`` (lesson 03 and lab 4:
the Gantt chart), ``budget`` (lesson 04: step timeline; lesson 05: plan search), ``measure`` (lesson 07 and lab 8),
``partition`` (lab 5), ``serving`` (lesson 10 and lab 6) and ``validation`` (lesson 08).

The labs' figures are *live figures*, ``fast.LiveFigure``s: built by their constructor on axes the caller places,
then changed by ``update(result)`` with the result of one call into the formula layer. They are
``CollectiveTimeFigure`` and ``RingStepFigure`` (lab 1), ``GlobalBatchFigure`` (lab 2), ``MemoryBudgetFigure`` (lab 3,
its bars the lessons' ``MemoryBarsFigure``), ``PipelineScheduleFigure`` and ``ComparisonBarsFigure`` (lab 4),
``measure.SweepFigure`` (lab 8, beside lesson 07's ``AlgorithmsFigure`` and ``StepFigure``), ``PartitionFigure``
(lab 5), ``LatencyThroughputFigure`` and ``DecodeBreakdownFigure`` (lab 6), and lesson 08's ``PublishedRunsFigure``,
``PredictedMeasuredFigure``, ``ResidualsFigure`` and ``HealthyRatioFigure``. A lesson's ``plot_*`` function draws the
same figure by building it and updating it once (``plot_pipeline_schedule``: one ``PipelineScheduleFigure``;
``plot_ring_allreduce_steps``: one ``RingStepFigure`` a step; the ranks on a circle, ``plot_ring_step``, are a
picture of their own). ``fast`` holds
how they draw in a few milliseconds (``PartialRedraw``, ``CachedText``, ``FastText``), ``style`` the colours, tick
formatters and axes checks every figure shares, and ``figure_check`` what a reader would trip on in a figure (text
over text, text cut or too small, legend entries with nothing drawn) and the numbers its text holds, which
tests/test_figures.py checks on every figure of the lessons and labs.

>>> from course_lib import viz
>>> sorted(name for name in viz.__all__ if name.startswith("plot_"))[:3]
['plot_collective_data', 'plot_collective_steps', 'plot_collective_time_vs_payload']
"""

from .budget import plot_plan_search, plot_step_timeline
from .collectives import (
    CollectiveTimeFigure,
    collective_steps_legend,
    plot_collective_data,
    plot_collective_steps,
    plot_collective_time_vs_payload,
)
from .compute import plot_flops_breakdown, plot_roofline
from .course import notebook_tracks, plot_course_map
from .fast import LiveFigure
from .global_batch import GlobalBatchFigure
from .memory_budget import MemoryBarsFigure, MemoryBudgetFigure, plot_memory_breakdown
from .parallelism import plot_parallelism_splits, plot_tensor_parallel_layer
from .pipeline_schedule import ComparisonBarsFigure, PipelineScheduleFigure, plot_pipeline_schedule
from .ring_allreduce import RingStepFigure, plot_ring_allreduce_steps, plot_ring_step
from .serving import (
    ConcurrencySweepFigure,
    DecodeBreakdownFigure,
    LatencyThroughputFigure,
    plot_concurrency_sweep,
    plot_decode_breakdown,
    plot_latency_throughput,
)
from .validation import PredictedMeasuredFigure, ResidualsFigure, plot_predicted_measured, plot_residuals

__all__ = [
    "notebook_tracks",
    "plot_course_map",
    "plot_roofline",
    "plot_flops_breakdown",
    "plot_collective_data",
    "plot_ring_step",
    "plot_ring_allreduce_steps",
    "plot_collective_steps",
    "collective_steps_legend",
    "plot_collective_time_vs_payload",
    "plot_pipeline_schedule",
    "plot_memory_breakdown",
    "plot_parallelism_splits",
    "plot_tensor_parallel_layer",
    "plot_step_timeline",
    "plot_plan_search",
    "LiveFigure",
    "CollectiveTimeFigure",
    "RingStepFigure",
    "GlobalBatchFigure",
    "MemoryBarsFigure",
    "MemoryBudgetFigure",
    "PipelineScheduleFigure",
    "ComparisonBarsFigure",
    "plot_latency_throughput",
    "plot_decode_breakdown",
    "LatencyThroughputFigure",
    "DecodeBreakdownFigure",
    "plot_concurrency_sweep",
    "ConcurrencySweepFigure",
    "plot_predicted_measured",
    "plot_residuals",
    "PredictedMeasuredFigure",
    "ResidualsFigure",
]
