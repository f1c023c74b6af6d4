"""The widget labs. Each factory returns an ipywidgets box with ``.controls`` (name → control, declared in the lab's
``CONTROLS``), ``.typed_result`` (the frozen result of the lab's one call into the formula layer), ``.result`` (its
plain dict view, updated synchronously) and ``.figure`` (a matplotlib Figure built once and updated); ``_base``
describes the contract.
``course_lib.widgets.quiz`` holds the lessons' self-check questions (multiple choice with immediate feedback).

Importing ``course_lib.widgets`` imports ipywidgets and matplotlib; the formula modules never do.

>>> from course_lib.widgets import ring_allreduce_lab
>>> lab = ring_allreduce_lab()
>>> sorted(lab.controls)[:3]
['algorithm', 'bandwidth_bytes_per_s', 'latency_s']
"""

from importlib import import_module

__all__ = [
    "ring_allreduce_lab",
    "global_batch_lab",
    "memory_budget_lab",
    "pipeline_lab",
    "partition_lab",
    "serving_lab",
    "concurrency_sweep_lab",
    "sequences_lab",
    "readable_feedback",
]

_HOME = {
    "ring_allreduce_lab": ".ring",
    "global_batch_lab": ".batch",
    "memory_budget_lab": ".memory",
    "pipeline_lab": ".schedule",
    "partition_lab": ".partition",
    "serving_lab": ".serving",
    "concurrency_sweep_lab": ".sweep",
    "sequences_lab": ".sequences",
    "readable_feedback": ".feedback",  # otter's results in glyphs every font has (the graded labs call it)
}


def __getattr__(name):
    # Each lab is imported when first used, so a notebook that opens one lab does not build the others' modules.
    if name in _HOME:
        return getattr(import_module(_HOME[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
