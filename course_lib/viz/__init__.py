"""Figures of the course, one module per lesson. Every function takes ``ax=None`` (``axes=None`` for multi-panel
figures), draws with labelled units and returns what it drew on. Importing ``course_lib.viz`` imports matplotlib;
the formula modules never do.

>>> from course_lib import viz
>>> sorted(name for name in viz.__all__ if name.startswith("plot_"))[:3]
['plot_collective_data', 'plot_collective_time_vs_payload', 'plot_course_map']
"""

from .budget import plot_plan_search, plot_step_timeline
from .collectives import (
    plot_collective_data,
    plot_collective_time_vs_payload,
    plot_ring_allreduce_steps,
    plot_ring_step,
)
from .compute import plot_flops_breakdown, plot_roofline
from .course import plot_course_map
from .parallelism import plot_memory_breakdown, plot_parallelism_splits, plot_pipeline_schedule

__all__ = [
    "plot_course_map",
    "plot_roofline",
    "plot_flops_breakdown",
    "plot_collective_data",
    "plot_ring_step",
    "plot_ring_allreduce_steps",
    "plot_collective_time_vs_payload",
    "plot_pipeline_schedule",
    "plot_memory_breakdown",
    "plot_parallelism_splits",
    "plot_step_timeline",
    "plot_plan_search",
]
