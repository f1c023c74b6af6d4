"""Measure, don't assume: real collectives on MPI, α and B fitted from the times, exposed communication of real steps.

The only part of ``course_lib`` that starts processes. ``run_collective_sweep`` runs a real MPI job
(``mpiexec -n p python -m course_lib.measure worker ...``, MPICH through the ``mpich`` and ``mpi4py`` wheels) and
returns a ``Measurements`` table; ``read_nccl_tests`` reads GPU logs of nccl-tests into the same table;
``fit_alpha_beta`` fits T = n·α + Q/B with the phase count n and critical-path bytes Q that
``course_lib.collectives.collective_cost`` gives; ``calibrate_cluster`` fits a ``hardware.Cluster``'s links to such
tables, so that ``budget`` and the plan search run on the measured machine; ``measure_step`` times a data-parallel
step in several schedules and reads the exposed communication off the completed steps.

One concept per submodule; every public name is importable from here. ``tables``: ``Row``, ``Measurements``,
``parse_sizes``, ``OPS`` and ``DATA_DIR``. ``mpich``: ``MPICH_ALGORITHMS`` and the control variables that force
one. ``jobs``: starting, watching and killing an MPI job (``MeasurementError``). ``sweeps``: ``run_collective_sweep``,
``run_collective_sweeps``, ``compare_algorithms``. ``nccl_tests``: ``read_nccl_tests``. ``fits``: ``AlphaBetaFit``,
``fit_alpha_beta``. ``calibrate``: ``calibrate_cluster``, ``CalibrationWarning``. ``steps``: ``StepMeasurements``,
``measure_step``, ``SCHEDULES``. ``worker``: what each rank runs; ``__main__``: the command line, and each rank's
entry point.

Timing is the course's own, stricter than the usual benchmarks': float32 buffers, every size warmed up, each timed
iteration started after a barrier, its time the **maximum over ranks** (the slowest rank is the one a step waits
for); the table keeps the median and the 10th and 90th percentiles over iterations. nccl-tests instead times
``iters`` back-to-back calls and reports their mean, averaged over ranks by default (its ``-a`` option: rank 0, mean,
min or max); the OSU micro-benchmarks put a barrier between iterations and report the average over ranks (the
maximum with ``-f``). So a nccl-tests time is a mean of pipelined calls, not a maximum. algbw = S/t and busbw =
algbw · ``collectives.busbw_factor(op, p)``, nccl-tests' definitions (doc/PERFORMANCE.md), with S as nccl-tests
defines it for each op.

MPICH's algorithm is chosen with its control variable ``MPIR_CVAR_<OP>_INTRA_ALGORITHM`` (the names below are those
``mpivars`` lists for MPICH 5.0.2). With a forced algorithm the job also sets ``MPIR_CVAR_DEVICE_COLLECTIVES=none``
(so the shared-memory device does not replace it) and ``MPIR_CVAR_COLLECTIVE_FALLBACK=print``: when the algorithm
cannot run for a size (e.g. fewer elements than ranks) MPICH says so and runs its own choice; the row is then marked
``fell_back`` and ``fit_alpha_beta`` leaves it out.

>>> from course_lib.units import format_time
>>> table = read_nccl_tests('''# nThread 1 nGpus 1 minBytes 8 maxBytes 32 step: 2(factor) warmup iters: 5 iters: 20
... #       size    count   type  redop  root    time  algbw  busbw #wrong    time  algbw  busbw #wrong
...          8        2  float    sum    -1   10.00   0.00   0.00      0   10.00   0.00   0.00      0
...    1048576   262144  float    sum    -1   30.00  34.95  61.17      0   30.00  34.95  61.17      0
...    2097152   524288  float    sum    -1   50.00  41.94  73.40      0   50.00  41.94  73.40      0
... ''', op="all_reduce", ranks=8)
>>> len(table), table.ranks, format_time(table.median_s[0])
(3, 8, '10 µs')
"""

from __future__ import annotations

from .calibrate import CalibrationWarning, calibrate_cluster
from .fits import AlphaBetaFit, fit_alpha_beta
from .jobs import MeasurementError
from .mpich import MPICH_ALGORITHMS
from .nccl_tests import read_nccl_tests
from .steps import SCHEDULES, StepMeasurements, measure_step
from .sweeps import compare_algorithms, run_collective_sweep, run_collective_sweeps
from .tables import DATA_DIR, OPS, Measurements, Row, parse_sizes

__all__ = [
    "DATA_DIR",
    "MPICH_ALGORITHMS",
    "OPS",
    "SCHEDULES",
    "MeasurementError",
    "Row",
    "Measurements",
    "AlphaBetaFit",
    "StepMeasurements",
    "parse_sizes",
    "run_collective_sweep",
    "run_collective_sweeps",
    "compare_algorithms",
    "read_nccl_tests",
    "fit_alpha_beta",
    "CalibrationWarning",
    "calibrate_cluster",
    "measure_step",
]
