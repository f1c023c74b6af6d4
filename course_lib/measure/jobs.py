"""Running an MPI job: find ``mpiexec``, start ``mpiexec -n p python -m course_lib.measure worker SPEC`` in a session
of its own, read rank 0's records as they come (with a progress bar), kill the whole job past its timeout or on a
failure (``MeasurementError``), and record the conditions it ran under (host, cores, MPI library, versions).

The sweeps (``sweeps``) and the step measurements (``steps``) build a job's spec and run it here; each rank runs
``course_lib.measure.worker``.
"""

from __future__ import annotations

import json
import os
import platform
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from .. import _check

__all__ = ["MeasurementError"]

_INSTALL_HINT = "install them with `pip install mpi4py mpich` (or conda-forge's mpi4py and mpich)"


class MeasurementError(RuntimeError):
    """An MPI job that failed: a wrong result, a rank that died, or one that hung past ``timeout_s``."""


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
