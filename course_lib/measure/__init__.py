"""Measure, don't assume: real collectives on MPI, α and B fitted from the times, exposed communication of real steps.

The only part of ``course_lib`` that starts processes. ``run_collective_sweep`` runs a real MPI job
(``mpiexec -n p python -m course_lib.measure worker ...``, MPICH through the ``mpich`` and ``mpi4py`` wheels) and
returns a ``Measurements`` table; ``read_nccl_tests`` reads GPU logs of nccl-tests into the same table;
``fit_alpha_beta`` fits T = n·α + Q/B with the phase count n and critical-path bytes Q that
``course_lib.collectives.collective_cost`` gives; ``measure_step`` times a data-parallel step in several schedules
and reads the exposed communication off the completed steps.

Timing follows nccl-tests (doc/PERFORMANCE.md) and the OSU micro-benchmarks: float32 buffers, every size warmed up,
each timed iteration started after a barrier, its time the **maximum over ranks**; the table keeps the median and the
10th and 90th percentiles over iterations. algbw = S/t and busbw = algbw · ``collectives.busbw_factor(op, p)``,
nccl-tests' definitions, with S as nccl-tests defines it for each op.

MPICH's algorithm is chosen with its control variable ``MPIR_CVAR_<OP>_INTRA_ALGORITHM`` (the names below are those
``mpivars`` lists for MPICH 5.0.2). With a forced algorithm the job also sets ``MPIR_CVAR_DEVICE_COLLECTIVES=none``
(so the shared-memory device does not replace it) and ``MPIR_CVAR_COLLECTIVE_FALLBACK=print``: when the algorithm
cannot run for a size (e.g. fewer elements than ranks) MPICH says so and runs its own choice; the row is then marked
``fell_back`` and ``fit_alpha_beta`` leaves it out.

>>> table = read_nccl_tests('''# nThread 1 nGpus 1 minBytes 8 maxBytes 32 step: 2(factor) warmup iters: 5 iters: 20
... #       size    count   type  redop  root    time  algbw  busbw #wrong    time  algbw  busbw #wrong
...          8        2  float    sum    -1   10.00   0.00   0.00      0   10.00   0.00   0.00      0
...    1048576   262144  float    sum    -1   30.00  34.95  61.17      0   30.00  34.95  61.17      0
...    2097152   524288  float    sum    -1   50.00  41.94  73.40      0   50.00  41.94  73.40      0
... ''', op="all_reduce", ranks=8)
>>> len(table), table.ranks, units.format_time(table.median_s[0])
(3, 8, '10 µs')
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import platform
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import typing
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .. import _check, budget, collectives, units

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
    "measure_step",
]

# The collectives MPI can time here: nccl-tests' ops (send_recv is point-to-point, not a collective).
# The course's data folder (data/ at the repository's root, beside course_lib): the recorded MPI runs (mpi/) and the
# published nccl-tests logs (nccl_tests/) that lesson 05 and lab 5 read.
DATA_DIR = Path(__file__).resolve().parents[2] / "data"
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all")

# MPICH's control-variable name per op, and for each algorithm MPICH offers (``mpivars`` of MPICH 5.0.2; "ccl" needs
# a CCL library, not here) the course's cost model in ``collectives.collective_cost`` (None: no model in the course).
_CVAR = {
    "all_reduce": "ALLREDUCE",
    "all_gather": "ALLGATHER",
    "reduce_scatter": "REDUCE_SCATTER",
    "broadcast": "BCAST",
    "reduce": "REDUCE",
    "all_to_all": "ALLTOALL",
}
MPICH_ALGORITHMS = {
    "all_reduce": {
        "auto": None,
        "ring": "ring",
        "recursive_doubling": "recursive_doubling",
        "reduce_scatter_allgather": "rabenseifner",  # Rabenseifner: recursive-halving RS + recursive-doubling AG
        "recursive_multiplying": None,
        "tree": None,
        "recexch": None,
        "k_reduce_scatter_allgather": None,
        "nb": None,
        "smp": None,
    },
    "all_gather": {
        "auto": None,
        "ring": "ring",
        "recursive_doubling": "recursive_doubling",
        "brucks": None,
        "k_brucks": None,
        "recexch_doubling": None,
        "recexch_halving": None,
        "nb": None,
    },
    "reduce_scatter": {
        "auto": None,
        # Pairwise exchange: p−1 steps of S/p bytes each, the ring's cost (Thakur, Rabenseifner & Gropp 2005, §4.4).
        "pairwise": "ring",
        "recursive_halving": "recursive_halving",
        "recursive_doubling": None,
        "noncommutative": None,
        "nb": None,
    },
    "broadcast": {
        "auto": None,
        "binomial": "binomial_tree",
        "scatter_ring_allgather": "ring",  # the course's broadcast "ring": binomial scatter + ring all-gather
        "scatter_recursive_doubling_allgather": None,
        "tree": None,
        "pipelined_tree": None,
        "nb": None,
        "smp": None,
    },
    "reduce": {
        "auto": None,
        "binomial": "binomial_tree",
        "reduce_scatter_gather": "rabenseifner",
        "nb": None,
        "smp": None,
    },
    "all_to_all": {
        "auto": None,
        "pairwise": "pairwise",
        "brucks": "bruck",
        "k_brucks": None,
        "scattered": None,
        "pairwise_sendrecv_replace": None,
        "nb": None,
    },
}

# The schedules ``measure_step`` times (see its docstring).
SCHEDULES = ("compute", "communication", "blocking", "nonblocking", "nonblocking_test", "nonblocking_async")

_INSTALL_HINT = "install them with `pip install mpi4py mpich` (or conda-forge's mpi4py and mpich)"


class MeasurementError(RuntimeError):
    """An MPI job that failed: a wrong result, a rank that died, or one that hung past ``timeout_s``."""


# --- sizes ------------------------------------------------------------------------------------------------------

_SIZE_UNITS = {"": 1, "B": 1, "K": 2**10, "KB": 2**10, "KIB": 2**10, "M": 2**20, "MB": 2**20, "MIB": 2**20}
_SIZE_UNITS |= {"G": 2**30, "GB": 2**30, "GIB": 2**30}


def _parse_size(text):
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", text)
    if not match or match[2].upper() not in _SIZE_UNITS:
        raise ValueError(f"sizes must be sizes like 8B, 64KB or 1GB; got {text!r}")
    value = float(match[1]) * _SIZE_UNITS[match[2].upper()]
    if value < 1 or value != int(value):
        raise ValueError(f"sizes must be whole numbers of bytes ≥ 1; got {text!r}")
    return int(value)


def parse_sizes(sizes):
    """Sizes in bytes from ``"8B:64MB"`` (every power of two from 8 B to 64 MiB), ``"1KB,4KB"`` or a list of ints.

    K, M and G are binary here, as in nccl-tests' ``-b 8 -e 64M`` (1 MB = 2^20 B = 1 MiB).

    >>> parse_sizes("8B:64B"), parse_sizes("1KB,1MiB"), parse_sizes([4, 8])
    ((8, 16, 32, 64), (1024, 1048576), (4, 8))
    >>> parse_sizes("64MB:8B")
    Traceback (most recent call last):
    ...
    ValueError: sizes must go from small to large (start:end), got '64MB:8B'
    """
    if isinstance(sizes, str):
        if ":" in sizes:
            parts = sizes.split(":")
            if len(parts) != 2:
                raise ValueError(f"sizes must be start:end (doubling) or a comma-separated list; got {sizes!r}")
            start, end = (_parse_size(part) for part in parts)
            if start > end:
                raise ValueError(f"sizes must go from small to large (start:end), got {sizes!r}")
            result = [start]
            while result[-1] * 2 <= end:
                result.append(result[-1] * 2)
            return tuple(result)
        return tuple(_parse_size(part) for part in sizes.split(","))
    try:
        values = list(sizes)
    except TypeError:
        raise ValueError(f"sizes must be a string like '8B:64MB' or a list of byte counts; got {sizes!r}") from None
    if not values:
        raise ValueError("sizes must not be empty")
    return tuple(int(_check.count("sizes", value)) for value in values)


# --- the table --------------------------------------------------------------------------------------------------


class Row(NamedTuple):
    """One size of one collective: times in seconds over the timed iterations, bandwidths in bytes/s."""

    op: str
    algorithm: str
    ranks: int
    size_bytes: int
    median_s: float
    p10_s: float
    p90_s: float
    algbw_bytes_per_s: float
    busbw_bytes_per_s: float
    iterations: int
    fell_back: bool


_ROW_TYPES = typing.get_type_hints(Row)


@dataclass(frozen=True)
class Measurements:
    """A table of measured collective times (one ``Row`` per op, algorithm and size) and the run's conditions.

    ``conditions`` says where and how it was measured (host, cores, MPI library and version, whether ranks >
    cores, or the source of a published log). Columns are available as numpy arrays (``table.median_s``, ...).

    >>> row = Row("all_reduce", "ring", 2, 1024, 1e-5, 9e-6, 2e-5, 1.024e8, 1.024e8, 20, False)
    >>> t = Measurements((row,), {"host": "example"})
    >>> Measurements.from_csv(t.to_csv()) == t
    True
    """

    rows: tuple[Row, ...]
    conditions: dict = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "rows", tuple(Row(*row) for row in self.rows))

    def __len__(self):
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def column(self, name):
        """One column as a numpy array (``name`` is a ``Row`` field)."""
        _check.choice("name", name, Row._fields)
        return np.array([getattr(row, name) for row in self.rows])

    size_bytes = property(lambda self: self.column("size_bytes"))
    median_s = property(lambda self: self.column("median_s"))
    p10_s = property(lambda self: self.column("p10_s"))
    p90_s = property(lambda self: self.column("p90_s"))
    algbw_bytes_per_s = property(lambda self: self.column("algbw_bytes_per_s"))
    busbw_bytes_per_s = property(lambda self: self.column("busbw_bytes_per_s"))

    def _single(self, name):
        values = sorted({getattr(row, name) for row in self.rows}, key=str)
        if len(values) != 1:
            raise ValueError(f"measurements mix several values of {name} ({values}); select one first")
        return values[0]

    op = property(lambda self: self._single("op"))
    algorithm = property(lambda self: self._single("algorithm"))
    ranks = property(lambda self: self._single("ranks"))

    def select(self, **where):
        """The rows whose fields equal the given values, e.g. ``table.select(algorithm="ring")``."""
        for name in where:
            _check.choice("field", name, Row._fields)
        rows = tuple(row for row in self.rows if all(getattr(row, k) == v for k, v in where.items()))
        if not rows:
            raise ValueError(f"no rows with {where}; the table has {sorted({r.algorithm for r in self.rows})}")
        return replace(self, rows=rows)

    @classmethod
    def concat(cls, tables):
        """One table of the rows of several tables measured under the same conditions (the first one's kept)."""
        tables = list(tables)
        if not tables:
            raise ValueError("tables must not be empty")
        return cls(tuple(row for table in tables for row in table.rows), dict(tables[0].conditions))

    def to_csv(self, path=None):
        """CSV text (conditions as ``# key: json`` lines, floats in repr form so loading gives them back exactly).

        Written to ``path`` too when given."""
        out = io.StringIO()
        for key, value in self.conditions.items():
            out.write(f"# {key}: {json.dumps(value)}\n")
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(Row._fields)
        for row in self.rows:
            writer.writerow([repr(value) if isinstance(value, float) else value for value in row])
        text = out.getvalue()
        if path is not None:
            Path(path).write_text(text)
        return text

    @classmethod
    def from_csv(cls, text_or_path):
        """Load a table written by ``to_csv`` (a path or the CSV text itself)."""
        text = str(text_or_path)
        if "\n" not in text:
            text = Path(text).read_text()
        conditions, lines = {}, []
        for line in text.splitlines():
            if line.startswith("# "):
                key, _, value = line[2:].partition(": ")
                conditions[key] = json.loads(value)
            elif line.strip():
                lines.append(line)
        reader = csv.reader(lines)
        header = next(reader, None)
        if tuple(header or ()) != Row._fields:
            raise ValueError(f"a measurements CSV must have the columns {', '.join(Row._fields)}; got {header}")
        convert = {int: int, float: float, str: str, bool: lambda text: {"True": True, "False": False}[text]}
        rows = [
            Row(*(convert[_ROW_TYPES[name]](v) for name, v in zip(Row._fields, values, strict=True)))
            for values in reader
        ]
        return cls(tuple(rows), conditions)

    def to_text(self):
        """A readable table (sizes binary, times and bandwidths with units)."""
        lines = [f"{'op':<14} {'algorithm':<24} {'p':>3} {'size':>9} {'median':>9} {'p10':>9} {'p90':>9} {'busbw':>11}"]
        for r in self.rows:
            lines.append(
                f"{r.op:<14} {r.algorithm + (' (fell back)' if r.fell_back else ''):<24} {r.ranks:>3} "
                f"{units.format_bytes(r.size_bytes, binary=True):>9} {units.format_time(r.median_s):>9} "
                f"{units.format_time(r.p10_s):>9} {units.format_time(r.p90_s):>9} "
                f"{units.format_bandwidth(r.busbw_bytes_per_s):>11}"
            )
        return "\n".join(lines)

    def __repr__(self):
        ops = sorted({r.op for r in self.rows})
        algorithms = sorted({r.algorithm for r in self.rows})
        where = self.conditions.get("mpi_library") or self.conditions.get("source", "")
        host = self.conditions.get("host", "")
        return (
            f"Measurements({', '.join(ops)}; {', '.join(algorithms)}; {len(self.rows)} rows"
            + (f"; {where}" if where else "")
            + (f" on {host}" if host else "")
            + ")"
        )


def _row(op, algorithm, ranks, size_bytes, times_s, fell_back=False):
    times = np.asarray(times_s, dtype=float)
    median = float(np.median(times))
    algbw = collectives.algbw_bytes_per_s(size_bytes, median)
    busbw = algbw * collectives.busbw_factor(op, ranks)
    p10, p90 = (float(v) for v in np.percentile(times, [10, 90]))
    return Row(op, algorithm, int(ranks), int(size_bytes), median, p10, p90, algbw, busbw, len(times), bool(fell_back))


# --- running MPI jobs -------------------------------------------------------------------------------------------


def _mpiexec():
    """The mpiexec next to this Python (the mpich wheel's), else the one on PATH; a clear error if neither."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise MeasurementError(f"mpi4py is not installed: {_INSTALL_HINT}") from None
    beside = Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if not found:
        raise MeasurementError(f"mpiexec was not found next to {sys.executable} nor on PATH: {_INSTALL_HINT}")
    return found


def _cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _processes():
    """{pid: (state, ppid, session)} of every process, from /proc (Linux; elsewhere empty)."""
    table = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        table[int(entry.name)] = (fields[0], int(fields[1]), int(fields[3]))  # state, ppid, (pgrp), session
    return table


def _job_members(root, marker):
    """Live processes of the job: ``root``'s descendants, its session, and any process whose environment carries
    ``marker`` (hydra starts each rank in a session of its own, and a rank outliving mpiexec is re-parented)."""
    table = _processes()
    members, frontier = set(), {root}
    while frontier:
        members |= frontier
        frontier = {pid for pid, (_, ppid, _) in table.items() if ppid in frontier} - members
    members |= {pid for pid, (_, _, session) in table.items() if session == root}
    for pid in table.keys() - members:
        try:
            if marker in Path(f"/proc/{pid}/environ").read_bytes():
                members.add(pid)
        except OSError:
            continue
    return {pid for pid in members if pid in table and table[pid][0] != "Z"}


def _kill_job(process, marker):
    """Kill the whole job: mpiexec, its proxy, every rank (frozen first, so none can start another), and wait up to
    5 s until none of them is alive."""
    try:
        os.killpg(process.pid, signal.SIGSTOP)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + 5
    members = _job_members(process.pid, marker)
    while members and time.monotonic() < deadline:
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        time.sleep(0.02)
        members = _job_members(process.pid, marker)
    process.wait()


def _progress_printer(total, label, stream):
    """A text progress bar on ``stream`` (``progress=True``: stderr, for the command line; a notebook passes
    ``sys.stdout``)."""
    stream = sys.stderr if stream is True else stream
    start = time.perf_counter()

    def show(done):
        width = 30
        filled = int(width * done / total) if total else width
        text = f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} {time.perf_counter() - start:.1f} s"
        stream.write(text + ("\n" if done >= total else ""))
        stream.flush()

    return show


def _run_job(ranks, spec, env_extra, timeout_s, expected_records=0, progress=False, label="measuring"):
    """Run ``mpiexec -n ranks python -m course_lib.measure worker SPEC``; return rank 0's records and conditions.

    The job runs in its own session; past ``timeout_s`` (or on any failure) the whole process group is killed and a
    ``MeasurementError`` carries the ranks' stderr."""
    ranks = _check.count("ranks", ranks, minimum=2)
    timeout_s = _check.positive("timeout_s", timeout_s)
    cores = _cores()
    command = [_mpiexec(), "-n", str(ranks), sys.executable, "-m", "course_lib.measure", "worker", json.dumps(spec)]
    marker = f"{os.getpid()}-{time.monotonic_ns()}"
    env = dict(os.environ, PYTHONUNBUFFERED="1", COURSE_LIB_MEASURE_JOB=marker, **env_extra)
    # One BLAS thread per rank: the ranks already share the cores.
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    show = _progress_printer(expected_records, label, progress) if progress and expected_records else None
    records, buffer = [], b""
    with tempfile.TemporaryFile() as stderr_file, tempfile.TemporaryDirectory() as errors:
        env["COURSE_LIB_MEASURE_ERRORS"] = errors
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=stderr_file, stdin=subprocess.DEVNULL, env=env,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + timeout_s
        timed_out = False
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(process.stdout, selectors.EVENT_READ)
                while True:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        timed_out = True
                        break
                    if not selector.select(timeout=min(remaining, 0.5)):
                        continue
                    chunk = os.read(process.stdout.fileno(), 65536)
                    if not chunk:
                        break
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if line.strip().startswith(b"{"):
                            records.append(json.loads(line))
                            if show and records[-1]["kind"] in ("row", "step"):
                                show(sum(r["kind"] in ("row", "step") for r in records))
            if not timed_out:
                try:
                    process.wait(timeout=max(deadline - time.monotonic(), 0.1))
                except subprocess.TimeoutExpired:
                    timed_out = True
        finally:
            _kill_job(process, f"COURSE_LIB_MEASURE_JOB={marker}".encode())
            process.stdout.close()
        stderr_file.seek(0)
        stderr = stderr_file.read().decode(errors="replace")
        said = [line for path in sorted(Path(errors).glob("rank-*.txt")) for line in path.read_text().splitlines()]
    lines = stderr.strip().splitlines()
    tail = "\n".join([line for line in said if line not in lines] + lines[-30:])
    if timed_out:
        raise MeasurementError(
            f"the MPI job ({ranks} ranks) did not finish within timeout_s={timeout_s:g} s; it was killed. "
            f"Its stderr:\n{tail or '(empty)'}"
        )
    if process.returncode != 0 or not records or records[-1]["kind"] != "done":
        raise MeasurementError(
            f"the MPI job ({ranks} ranks) failed (exit status {process.returncode}). Its stderr:\n{tail or '(empty)'}"
        )
    info = next(r for r in records if r["kind"] == "conditions")
    conditions = {
        "host": socket.gethostname(),
        "cpu": _cpu_model(),
        "cores": cores,
        "ranks_exceed_cores": ranks > cores,
        "mpi_library": info["mpi_library"],
        "mpi4py": __import__("mpi4py").__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
    }
    return [r for r in records if r["kind"] in ("row", "step")], conditions


def _oversubscription_warning(ranks):
    cores = _cores()
    if ranks > cores:
        warnings.warn(
            f"{ranks} ranks on {cores} cores: ranks share cores and MPICH's busy-polling ranks wait for each other, "
            "so small-message times are far above the network's (the result's conditions say ranks_exceed_cores)",
            stacklevel=3,
        )


def _check_cases(cases):
    checked, seen = [], set()
    for op, algorithm in cases:
        _check.choice("op", op, OPS)
        if algorithm not in MPICH_ALGORITHMS[op]:
            raise ValueError(
                f"algorithm must be one of {', '.join(repr(a) for a in MPICH_ALGORITHMS[op])} (MPICH's names) for "
                f"op={op!r}; got {algorithm!r}"
            )
        if op in seen:
            raise ValueError(f"cases may hold each op once per job (MPICH reads its algorithm at start); {op!r} twice")
        seen.add(op)
        checked.append((op, algorithm))
    if not checked:
        raise ValueError("cases must not be empty")
    return checked


def _algorithm_env(cases):
    env = {"MPIR_CVAR_" + _CVAR[op] + "_INTRA_ALGORITHM": algorithm for op, algorithm in cases if algorithm != "auto"}
    if env:
        env.update(MPIR_CVAR_DEVICE_COLLECTIVES="none", MPIR_CVAR_COLLECTIVE_FALLBACK="print")
    return env


def _sweep(cases, ranks, sizes_bytes, iterations, warmup, timeout_s, progress, fault=None):
    """Run one sweep job; return its raw records (every iteration's time) and the conditions."""
    cases = _check_cases(cases)
    ranks = _check.count("ranks", ranks, minimum=2)
    sizes = parse_sizes(sizes_bytes)
    iterations = _check.count("iterations", iterations)
    warmup = _check.count("warmup", warmup)
    _oversubscription_warning(ranks)
    spec = {
        "job": "sweep",
        "cases": [{"op": op, "algorithm": algorithm} for op, algorithm in cases],
        "sizes_bytes": list(sizes),
        "iterations": iterations,
        "warmup": warmup,
        "fault": fault,
    }
    records, conditions = _run_job(
        ranks, spec, _algorithm_env(cases), timeout_s, len(cases) * len(sizes), progress, "sweep"
    )
    conditions.update(iterations=iterations, warmup=warmup, timing="max over ranks per iteration, after a barrier")
    return records, conditions


def run_collective_sweeps(
    cases, ranks, sizes_bytes, *, iterations=20, warmup=5, timeout_s=120.0, progress=False, _fault=None
):
    """Time several (op, MPICH algorithm) pairs, each op at most once, in ONE MPI job; see ``run_collective_sweep``."""
    records, conditions = _sweep(cases, ranks, sizes_bytes, iterations, warmup, timeout_s, progress, _fault)
    rows = [_row(r["op"], r["algorithm"], ranks, r["size_bytes"], r["times_s"], r["fell_back"]) for r in records]
    return Measurements(tuple(rows), conditions)


def compare_algorithms(
    op, ranks, sizes_bytes, algorithms, *, rounds=4, iterations=5, warmup=3, timeout_s=120.0, progress=False
):
    """Time several MPICH ``algorithms`` of ``op`` fairly on a shared machine: ``rounds`` rounds, each running every
    algorithm's sweep in turn (``iterations`` each); the iterations of all rounds are pooled per algorithm and size.

    A busy spell of the machine then falls on every algorithm alike, instead of on whichever ran during it. Returns
    one ``Measurements`` with ``rounds × iterations`` timed iterations per row.
    """
    algorithms = list(algorithms) if not isinstance(algorithms, str) else [algorithms]
    for algorithm in algorithms:
        _check_cases([(op, algorithm)])
    if not algorithms or len(set(algorithms)) != len(algorithms):
        raise ValueError(f"algorithms must be a non-empty list without repeats, got {algorithms}")
    rounds = _check.count("rounds", rounds)
    pooled, fell_back, conditions = {}, {}, {}
    for _ in range(rounds):
        for algorithm in algorithms:
            records, conditions = _sweep([(op, algorithm)], ranks, sizes_bytes, iterations, warmup, timeout_s, progress)
            for r in records:
                key = (algorithm, r["size_bytes"])
                pooled.setdefault(key, []).extend(r["times_s"])
                fell_back[key] = fell_back.get(key, False) or r["fell_back"]
    rows = [_row(op, algorithm, ranks, size, times, fell_back[(algorithm, size)])
            for (algorithm, size), times in pooled.items()]  # fmt: skip
    conditions.update(iterations=rounds * iterations, rounds=rounds, iterations_per_round=iterations)
    return Measurements(tuple(rows), conditions)


def run_collective_sweep(
    op, ranks, sizes_bytes, algorithm="auto", *, iterations=20, warmup=5, timeout_s=120.0, progress=False
):
    """Time ``op`` with MPICH's ``algorithm`` on ``ranks`` MPI processes at each size; return a ``Measurements``.

    ``sizes_bytes``: nccl-tests' S for the op (``parse_sizes`` forms: ``"8B:64MB"``, a list of ints); rounded down
    to whole float32 elements (and to a multiple of ``ranks`` elements for all_gather, reduce_scatter and
    all_to_all). Each size: ``warmup`` untimed calls, then ``iterations`` timed ones, each after a barrier, each
    taken as the maximum over ranks. The result of every size is checked against the exact expected values
    (small integers in float32): a wrong result raises ``MeasurementError``, as does a rank that dies, or a job
    still running after ``timeout_s`` (then killed with all its processes). More ranks than cores runs, with a
    warning, and ``conditions["ranks_exceed_cores"]`` says so. ``progress``: True for a bar on stderr, or a stream
    (a notebook passes ``sys.stdout``).

    >>> table = run_collective_sweep("all_reduce", 2, "1KB,64KB", "ring", iterations=3, warmup=1)
    >>> table.size_bytes.tolist(), table.conditions["mpi_library"].startswith("MPICH")
    ([1024, 65536], True)
    """
    return run_collective_sweeps(
        [(op, algorithm)],
        ranks,
        sizes_bytes,
        iterations=iterations,
        warmup=warmup,
        timeout_s=timeout_s,
        progress=progress,
    )


# --- published logs ---------------------------------------------------------------------------------------------

_NCCL_ROW = re.compile(
    r"(?P<size>\d+)\s+(?P<count>\d+)\s+(?P<type>\w+)\s+(?P<redop>\w+)\s+(?P<root>-?\d+)"
    r"\s+(?P<time>[\d.]+)\s+(?P<algbw>[\d.]+)\s+(?P<busbw>[\d.]+)\s+(?P<wrong>\S+)"
    r"\s+(?P<time_in>[\d.]+)\s+(?P<algbw_in>[\d.]+)\s+(?P<busbw_in>[\d.]+)\s+(?P<wrong_in>\S+)"
)
# Some published excerpts keep only size, time, algbw and busbw (thousands separated with "_").
_SHORT_ROW = re.compile(r"(?P<size>[\d_]+)\s+(?P<time>[\d.]+)\s+(?P<algbw>[\d.]+)\s+(?P<busbw>[\d.]+)")
_PREFIX = re.compile(r"^\s*(?:\[\d+,\d+\]<stdout>:|\d+:(?=\s))?\s*")
_NCCL_OPS = {f"{op}_perf": op for op in OPS} | {"alltoall_perf": "all_to_all"}


def _ranks_from_ratio(op, rows):
    """n from busbw/algbw = busbw_factor(op, n), read on the row with the largest algbw (least rounding)."""
    size, time_s, algbw, busbw = max(rows, key=lambda r: r[2])
    if algbw <= 0:
        raise ValueError("ranks must be given: the log has no rank lines and no non-zero algbw to infer it from")
    ratio = busbw / algbw
    candidates = np.arange(2, 4097)
    errors = np.abs(collectives.busbw_factor(op, candidates) - ratio)
    if errors.min() <= 0.002 * ratio:  # the log's columns have 2 decimals
        return int(candidates[np.argmin(errors)])
    raise ValueError(f"ranks must be given: busbw/algbw = {ratio:.4f} matches no rank count for op={op!r}")


def read_nccl_tests(text, op=None, ranks=None, placement="out_of_place"):
    """Parse nccl-tests output (all_reduce_perf, all_gather_perf, ...) into a ``Measurements`` table.

    ``op`` is read from the ``<op>_perf`` name in the text when not given; ``ranks`` from the ``#  Rank`` lines
    nccl-tests prints, else from busbw/algbw (= ``collectives.busbw_factor(op, n)``). ``placement`` picks the
    out-of-place or in-place columns. Times are nccl-tests' average over its iterations (so median = p10 = p90);
    algbw and busbw are the log's own columns, in bytes/s. A log reporting wrong results, or whose data lines do
    not parse, raises ``ValueError``.
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be the log's text (a str), got {type(text).__name__}")
    _check.choice("placement", placement, ("out_of_place", "in_place"))
    if op is None:
        found = {_NCCL_OPS[name] for name in re.findall(r"\b(\w+_perf)\b", text) if name in _NCCL_OPS}
        if len(found) != 1:
            raise ValueError(f"op must be given: the log names {sorted(found) or 'no'} nccl-tests binary")
        op = found.pop()
    _check.choice("op", op, OPS)
    parsed, short = [], False
    for number, raw in enumerate(text.splitlines(), 1):
        line = _PREFIX.sub("", raw, count=1).rstrip()
        if not line or not line[0].isdigit():
            continue
        match = _NCCL_ROW.fullmatch(line)
        if match:
            if match["wrong"] not in ("0", "N/A") or match["wrong_in"] not in ("0", "N/A"):
                raise ValueError(f"line {number}: nccl-tests reports wrong results (#wrong); not a valid time")
            suffix = "" if placement == "out_of_place" else "_in"
            values = (int(match["size"]), *(float(match[k + suffix]) for k in ("time", "algbw", "busbw")))
        elif (match := _SHORT_ROW.fullmatch(line)) is not None:
            short = True
            values = (int(match["size"].replace("_", "")), *(float(match[k]) for k in ("time", "algbw", "busbw")))
        else:
            raise ValueError(f"line {number} looks like a data row but does not parse as nccl-tests output: {raw!r}")
        parsed.append(values)
    if not parsed:
        raise ValueError("text holds no nccl-tests data rows (size count type redop root time algbw busbw ...)")
    if short and placement == "in_place":
        raise ValueError("placement='in_place' needs the in-place columns, which this log does not have")
    rank_lines = set(re.findall(r"#\s*Rank\s+(\d+)\s+Group", text))
    if ranks is None:
        ranks = len(rank_lines) if len(rank_lines) >= 2 else _ranks_from_ratio(op, parsed)
    ranks = _check.count("ranks", ranks, minimum=2)
    iterations = re.search(r"\biters:\s*(\d+)", text)
    rows = tuple(
        Row(op, "nccl", ranks, size, t * units.US, t * units.US, t * units.US, a * units.GB, b * units.GB,
            int(iterations[1]) if iterations else 0, False)
        for size, t, a, b in parsed
    )  # fmt: skip
    conditions = {"source": "nccl-tests log", "placement": placement, "time": "nccl-tests average over iterations"}
    return Measurements(rows, conditions)


# --- fitting ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AlphaBetaFit:
    """T = n·α + Q/B fitted to measured times (SI units): α in s, B one-way per-rank bandwidth in bytes/s."""

    op: str
    algorithm: str
    ranks: int
    latency_s: float
    bandwidth_bytes_per_s: float
    sizes_bytes: np.ndarray
    measured_s: np.ndarray
    predicted_s: np.ndarray
    relative_residuals: np.ndarray
    median_relative_residual: float
    crossover_bytes: float

    def predict_s(self, payload_bytes):
        """The fitted model's time for ``payload_bytes`` (nccl-tests' S)."""
        return collectives.collective_time(
            self.op, self.ranks, payload_bytes, self.bandwidth_bytes_per_s, self.latency_s, self.algorithm
        )

    def __str__(self):
        return (
            f"{self.op} {self.algorithm} p={self.ranks}: α = {units.format_time(self.latency_s)}, "
            f"B = {units.format_bandwidth(self.bandwidth_bytes_per_s)}, "
            + (f"crossover {units.format_bytes(self.crossover_bytes)}, " if self.latency_s > 0 else "α clamped at 0, ")
            + f"median |residual| {units.format_percent(self.median_relative_residual)}"
        )


def fit_alpha_beta(measurements, algorithm=None, size_range_bytes=None):
    """Fit α and B of T = n(p)·α + Q(p, S)/B to a table of one op, algorithm and rank count.

    n and Q per size come from ``collectives.collective_cost(op, p, S, algorithm)``; ``algorithm`` is the course's
    cost model (``collectives.ALGORITHMS[op]``), by default the one matching the MPICH algorithm measured
    (required for ``auto`` and nccl-tests logs). Least squares on relative errors, (T_model − T)/T, so a 10 µs and
    a 10 ms point count alike. Rows where MPICH fell back to another algorithm are left out, and with
    ``size_range_bytes=(low, high)`` so are sizes outside [low, high] (fit near the sizes you will predict: one α
    and one B rarely describe six decades of sizes). The crossover is the size at which n·α = Q/B.

    >>> from course_lib.collectives import collective_time
    >>> sizes = [2**k for k in range(3, 27, 2)]
    >>> times = [collective_time("all_reduce", 4, s, 2e9, 20e-6, "ring") for s in sizes]
    >>> rows = tuple(Row("all_reduce", "ring", 4, s, t, t, t, s / t, 1.5 * s / t, 1, False)
    ...              for s, t in zip(sizes, times, strict=True))
    >>> fit = fit_alpha_beta(Measurements(rows))
    >>> units.format_time(fit.latency_s), units.format_bandwidth(fit.bandwidth_bytes_per_s)
    ('20 µs', '2 GB/s')
    """
    if not isinstance(measurements, Measurements):
        raise ValueError(f"measurements must be a Measurements table, got {type(measurements).__name__}")
    low, high = 0, math.inf
    if size_range_bytes is not None:
        try:
            low, high = (float(v) for v in size_range_bytes)
        except (TypeError, ValueError):
            raise ValueError(f"size_range_bytes must be (low, high) in bytes, got {size_range_bytes!r}") from None
        if not 0 <= low <= high:
            raise ValueError(f"size_range_bytes must satisfy 0 ≤ low ≤ high, got {size_range_bytes!r}")
    rows = tuple(r for r in measurements.rows if not r.fell_back and low <= r.size_bytes <= high)
    table = Measurements(rows, measurements.conditions)
    if not table.rows:
        raise ValueError("measurements must hold rows where MPICH ran the algorithm asked for; none here")
    op, measured_algorithm, ranks = table.op, table.algorithm, table.ranks
    if algorithm is None:
        algorithm = MPICH_ALGORITHMS.get(op, {}).get(measured_algorithm)
        if algorithm is None:
            raise ValueError(
                f"algorithm must be given (one of {', '.join(collectives.ALGORITHMS[op])}): the table's "
                f"{measured_algorithm!r} has no cost model of its own"
            )
    if algorithm not in collectives.ALGORITHMS[op]:
        raise ValueError(f"algorithm must be one of {', '.join(collectives.ALGORITHMS[op])} for op={op!r}")
    sizes = table.size_bytes.astype(float)
    times = table.median_s
    if len(set(sizes.tolist())) < 3:
        raise ValueError(f"measurements must hold at least three different sizes to fit α and B; got {len(sizes)}")
    if np.any(~np.isfinite(times) | (times <= 0)):
        raise ValueError("measurements' times must be finite and > 0")
    cost = collectives.collective_cost(op, ranks, sizes, algorithm)
    phases = np.broadcast_to(np.asarray(cost.phases, dtype=float), sizes.shape)
    design = np.column_stack([phases, np.asarray(cost.wire_bytes, dtype=float)]) / times[:, None]
    target = np.ones_like(times)
    (alpha, inverse_b), *_ = np.linalg.lstsq(design, target, rcond=None)
    if alpha < 0:  # the data are bandwidth-bound throughout: the best fit with α ≥ 0 has α = 0
        alpha = 0.0
        inverse_b = float(design[:, 1] @ target / (design[:, 1] @ design[:, 1]))
    if inverse_b <= 0:
        raise ValueError(
            "measurements show no growth of time with size (the fitted 1/B is ≤ 0): add larger sizes to fit B"
        )
    predicted = phases * alpha + np.asarray(cost.wire_bytes) * inverse_b
    residuals = (predicted - times) / times
    bandwidth = 1.0 / inverse_b
    crossover = (
        collectives.latency_bandwidth_crossover_bytes(op, ranks, bandwidth, alpha, algorithm) if alpha > 0 else 0.0
    )
    return AlphaBetaFit(
        op, algorithm, ranks, float(alpha), float(bandwidth), sizes, times, predicted, residuals,
        float(np.median(np.abs(residuals))), float(crossover),
    )  # fmt: skip


# --- overlap, measured ------------------------------------------------------------------------------------------

_MATRIX_N = 256  # each "layer" is a few float32 256×256 matrix multiplies, 2·256³ FLOP each


@dataclass(frozen=True)
class StepMeasurements:
    """Step times of each schedule (median, p10, p90 over iterations, max over ranks) and the exposed communication.

    ``exposed_s[s]`` = median step time of schedule s − median of ``compute`` alone (the completed step read off the
    clock, not assumed), for the schedules that compute and communicate."""

    ranks: int
    backward_flops: float
    gradient_bytes: int
    buckets: int
    median_s: dict
    p10_s: dict
    p90_s: dict
    conditions: dict

    @property
    def exposed_s(self):
        compute = self.median_s["compute"]
        return {name: t - compute for name, t in self.median_s.items() if name not in ("compute", "communication")}

    def predicted_exposed_s(self, fit):
        """``course_lib.budget``'s exposed time for each schedule from a fitted α and B (an ``AlphaBetaFit``).

        Blocking, and non-blocking with nothing driving progress: the whole all-reduce is exposed (no progress
        means the buckets move only inside the final Wait, each paying its own α). With progress (Test calls or
        MPICH's progress thread): the buckets' time minus the compute they can hide behind — all layers but the
        first —, and never less than the last bucket, which starts when the compute is done."""
        compute = self.median_s["compute"]
        whole = fit.predict_s(self.gradient_bytes)
        bucket = fit.predict_s(self.gradient_bytes / self.buckets)
        overlapped = max(
            bucket,
            budget.exposed_after_overlap(self.buckets * bucket, compute * (self.buckets - 1) / self.buckets),
        )
        predictions = {
            "blocking": budget.exposed_after_overlap(whole, 0.0),
            "nonblocking": budget.exposed_after_overlap(self.buckets * bucket, 0.0),
            "nonblocking_test": overlapped,
            "nonblocking_async": overlapped,
        }
        return {name: predictions[name] for name in self.median_s if name in predictions}

    def to_csv(self, path=None):
        """CSV text: the step's parameters and conditions as ``# key: json`` lines, one row per schedule."""
        header = {"ranks": self.ranks, "backward_flops": self.backward_flops, "gradient_bytes": self.gradient_bytes}
        header |= {"buckets": self.buckets} | self.conditions
        lines = [f"# {key}: {json.dumps(value)}" for key, value in header.items()]
        lines.append("schedule,median_s,p10_s,p90_s")
        lines += [f"{n},{self.median_s[n]!r},{self.p10_s[n]!r},{self.p90_s[n]!r}" for n in self.median_s]
        text = "\n".join(lines) + "\n"
        if path is not None:
            Path(path).write_text(text)
        return text

    @classmethod
    def from_csv(cls, text_or_path):
        """Load what ``to_csv`` wrote (a path or the text).

        >>> step = StepMeasurements(2, 1e9, 1024, 4, {"compute": 0.1}, {"compute": 0.09}, {"compute": 0.2}, {})
        >>> StepMeasurements.from_csv(step.to_csv()) == step
        True
        """
        text = str(text_or_path)
        if "\n" not in text:
            text = Path(text).read_text()
        header, rows = {}, []
        for line in text.splitlines():
            if line.startswith("# "):
                key, _, value = line[2:].partition(": ")
                header[key] = json.loads(value)
            elif line.strip() and not line.startswith("schedule,"):
                rows.append(line.split(","))
        fixed = {key: header.pop(key) for key in ("ranks", "backward_flops", "gradient_bytes", "buckets")}
        median, p10, p90 = ({row[0]: float(row[i]) for row in rows} for i in (1, 2, 3))
        return cls(fixed["ranks"], float(fixed["backward_flops"]), fixed["gradient_bytes"], fixed["buckets"],
                   median, p10, p90, header)  # fmt: skip

    def to_text(self, fit=None):
        """One line per schedule: median step time, its p10–p90 spread, the exposed time (and the prediction)."""
        predicted = self.predicted_exposed_s(fit) if fit is not None else {}
        lines = [f"{'schedule':<18} {'step':>9} {'p10–p90':>19} {'exposed':>9}" + ("  predicted" if fit else "")]
        for name, median in self.median_s.items():
            exposed = self.exposed_s.get(name)
            lines.append(
                f"{name:<18} {units.format_time(median):>9} "
                f"{units.format_time(self.p10_s[name]) + '–' + units.format_time(self.p90_s[name]):>19} "
                f"{units.format_time(exposed) if exposed is not None else '':>9}"
                + (f"  {units.format_time(predicted[name])}" if name in predicted else "")
            )
        return "\n".join(lines)


def measure_step(
    ranks=2,
    backward_flops=2e9,
    gradient_bytes=16 * 2**20,
    buckets=4,
    *,
    schedules=SCHEDULES,
    device_flops_per_s=None,
    iterations=10,
    warmup=2,
    timeout_s=300.0,
    progress=False,
):
    """Time a data-parallel step on ``ranks`` MPI processes in each of ``schedules``.

    The "backward pass" is ``buckets`` layers of float32 matrix multiplies totalling about ``backward_flops``; the
    gradient is ``gradient_bytes`` of float32, all-reduced (sum, result checked). Schedules: ``compute`` alone;
    ``communication`` alone (one blocking all-reduce); ``blocking`` (compute, then the all-reduce);
    ``nonblocking`` (an ``Iallreduce`` per bucket posted as its layer finishes, one ``Waitall`` at the end, nothing
    driving progress meanwhile); ``nonblocking_test`` (the same with ``Testall`` between the matrix multiplies);
    ``nonblocking_async`` (the same as ``nonblocking`` with MPICH's progress thread, ``MPIR_CVAR_ASYNC_PROGRESS=1``,
    in a second job). With ``device_flops_per_s`` the backward pass runs on a modelled accelerator instead: each
    matrix multiply is a wait of 2n³/rate seconds during which the host core is free (as a GPU's host is), so the
    cores can move the gradient meanwhile; without it, the cores both compute and copy (shared-memory MPI has no
    DMA engine). Step times are max over ranks after a barrier; the iterations are interleaved (each times
    every schedule in turn) so that a busy spell of a shared machine slows all schedules alike.
    """
    ranks = _check.count("ranks", ranks, minimum=2)
    backward_flops = _check.positive("backward_flops", backward_flops)
    gradient_bytes = _check.count("gradient_bytes", gradient_bytes)
    buckets = _check.count("buckets", buckets)
    iterations = _check.count("iterations", iterations)
    warmup = _check.count("warmup", warmup, minimum=0)
    schedules = tuple(_check.choice("schedules", s, SCHEDULES) for s in schedules)
    if "compute" not in schedules:
        raise ValueError("schedules must include 'compute': exposed time is read against compute alone")
    if device_flops_per_s is not None:
        device_flops_per_s = _check.positive("device_flops_per_s", device_flops_per_s)
    flops_per_matmul = 2 * _MATRIX_N**3
    matmuls = max(1, round(backward_flops / buckets / flops_per_matmul))
    _oversubscription_warning(ranks)
    base = {
        "job": "step",
        "matrix_n": _MATRIX_N,
        "buckets": buckets,
        "matmuls_per_layer": matmuls,
        "gradient_bytes": gradient_bytes,
        "device_s_per_matmul": flops_per_matmul / device_flops_per_s if device_flops_per_s else None,
        "iterations": iterations,
        "warmup": warmup,
    }
    jobs = [([s for s in schedules if s != "nonblocking_async"], {})]
    if "nonblocking_async" in schedules:
        jobs.append((["nonblocking_async"], {"MPIR_CVAR_ASYNC_PROGRESS": "1"}))
    median, p10, p90, conditions = {}, {}, {}, {}
    for names, env in jobs:
        records, conditions = _run_job(
            ranks, {**base, "schedules": names}, env, timeout_s, len(names), progress, "step schedules"
        )
        for record in records:
            times = np.asarray(record["times_s"])
            median[record["schedule"]] = float(np.median(times))
            p10[record["schedule"]], p90[record["schedule"]] = (float(v) for v in np.percentile(times, [10, 90]))
    conditions.update(iterations=iterations, warmup=warmup, matmuls_per_layer=matmuls, matrix_n=_MATRIX_N)
    conditions.update(compute="modelled accelerator" if device_flops_per_s else "numpy on the ranks' cores")
    if device_flops_per_s:
        conditions.update(device_flops_per_s=device_flops_per_s)
    actual_flops = float(buckets * matmuls * flops_per_matmul)
    elements = max(gradient_bytes // 4, buckets)
    elements -= elements % buckets
    ordered = {name: median[name] for name in schedules}
    return StepMeasurements(ranks, actual_flops, elements * 4, buckets, ordered, p10, p90, conditions)
