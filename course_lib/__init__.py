"""course_lib: the cost models, simulations and figures of the course "Parallelism as a memory and communication
budget". Every quantity is in SI base units (bytes, seconds, bytes/s, FLOP, FLOP/s); ``course_lib.units`` formats
them for display.

Formula modules (imported here; none of them imports matplotlib or ipywidgets, so ``import course_lib`` is fast):
``units``, ``hardware``, ``compute`` (lesson 01), ``collectives`` and ``simulate`` (lesson 02), ``pipeline`` and
``parallelism`` (lesson 03), ``budget`` (lessons 04 and 05), ``serving`` (prefill, decode and the KV cache; lesson 04).
``parallelism`` and ``budget`` are packages of one concept per module, their names re-exported at the top:
``parallelism.models``, ``.plan``, ``.calibration`` (the calibrated model's one home), ``.memory``, ``.transfers``;
``budget.placement``, ``.step``, ``.search``, ``.report``. Each module imports only from the layers below it:
units, hardware → compute, collectives, simulate, pipeline → parallelism → budget → serving, validation, measure →
viz → widgets. Figures live in ``course_lib.viz``; the labs' widgets and the lessons' self-check questions
(``course_lib.widgets.quiz``) in ``course_lib.widgets``, which import matplotlib and ipywidgets.

>>> from course_lib import collectives, units
>>> units.format_time(collectives.comm_time(4, 5 * units.US, 100 * units.MB, 50 * units.GB))
'2.02 ms'
"""

from . import budget, collectives, compute, hardware, parallelism, serving, units

__all__ = ["budget", "collectives", "compute", "hardware", "parallelism", "serving", "units"]
