"""The code each MPI rank runs (``mpiexec -n p python -m course_lib.measure worker SPEC``).

Imported only inside an MPI job: ``from mpi4py import MPI`` initialises MPI. Rank 0 writes one JSON object per line
to stdout (``course_lib.measure.jobs`` reads them as they come, for its progress bar); every rank writes its
errors to stderr and aborts the whole job, so a wrong result is never reported as a time.

Timing (as nccl-tests and the OSU micro-benchmarks do): every size is warmed up, then each timed iteration starts
after a barrier and its time is the **maximum over ranks** of that rank's wall time (a collective is done only when
its slowest rank is done).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

import numpy as np

# MPICH prints this when the algorithm forced through MPIR_CVAR_<OP>_INTRA_ALGORITHM cannot run for the arguments
# given and MPIR_CVAR_COLLECTIVE_FALLBACK=print (it then runs its own choice).
_FALLBACK_TEXT = ("cannot be applied", "not usable for the provided arguments")


def _emit(record):
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def _say(rank, message):
    """A rank's error message, to stderr and to a file of its own in $COURSE_LIB_MEASURE_ERRORS: mpiexec may exit
    (on an abort) before it has forwarded the ranks' stderr."""
    text = f"rank {rank}: {message}\n"
    sys.stderr.write(text)
    sys.stderr.flush()
    folder = os.environ.get("COURSE_LIB_MEASURE_ERRORS")
    if folder:
        with open(os.path.join(folder, f"rank-{rank}.txt"), "a") as file:
            file.write(text)


def _fail(comm, message):
    _say(comm.rank, message)
    comm.Abort(3)


def _pattern(count, offset):
    """float32 values offset + (i mod 5): small integers, so every sum below is exact in float32."""
    return (np.arange(count) % 5 + offset).astype(np.float32)


class _Collective:
    """Buffers, the call and the expected result of one collective at one payload (nccl-tests' S)."""

    def __init__(self, comm, op, payload_bytes):
        from mpi4py import MPI

        self.comm, self.op = comm, op
        p, r = comm.size, comm.rank
        per_rank_split = op in ("all_gather", "reduce_scatter", "all_to_all")
        elements = max(payload_bytes // 4, p if per_rank_split else 1)
        if per_rank_split:
            elements -= elements % p  # S must split into p equal chunks
        self.payload_bytes = elements * 4
        chunk = elements // p
        base = p * (p + 1) / 2  # Σ_r (r + 1)
        if op == "all_reduce":
            self.send, self.recv = _pattern(elements, r + 1), np.empty(elements, np.float32)
            self.expected = (np.arange(elements) % 5 * p + base).astype(np.float32)
            self.call = lambda: comm.Allreduce(self.send, self.recv, op=MPI.SUM)
        elif op == "all_gather":
            self.send, self.recv = _pattern(chunk, r + 1), np.empty(elements, np.float32)
            self.expected = np.concatenate([_pattern(chunk, k + 1) for k in range(p)])
            self.call = lambda: comm.Allgather(self.send, self.recv)
        elif op == "reduce_scatter":
            self.send, self.recv = _pattern(elements, r + 1), np.empty(chunk, np.float32)
            self.expected = (np.arange(r * chunk, (r + 1) * chunk) % 5 * p + base).astype(np.float32)
            self.call = lambda: comm.Reduce_scatter_block(self.send, self.recv, op=MPI.SUM)
        elif op == "broadcast":
            self.send = None
            self.recv = _pattern(elements, 1) if r == 0 else np.empty(elements, np.float32)
            self.expected = _pattern(elements, 1)
            self.call = lambda: comm.Bcast(self.recv, root=0)
        elif op == "reduce":
            self.send, self.recv = _pattern(elements, r + 1), np.empty(elements, np.float32)
            self.expected = (np.arange(elements) % 5 * p + base).astype(np.float32) if r == 0 else None
            self.call = lambda: comm.Reduce(self.send, self.recv, op=MPI.SUM, root=0)
        elif op == "all_to_all":
            # Block k of rank r's send buffer goes to rank k: r·p + k + 1 everywhere in it.
            self.send = np.repeat(np.arange(p, dtype=np.float32) + r * p + 1, chunk)
            self.recv = np.empty(elements, np.float32)
            self.expected = np.repeat(np.arange(p, dtype=np.float32) * p + r + 1, chunk)
            self.call = lambda: comm.Alltoall(self.send, self.recv)
        else:
            raise ValueError(f"unknown op {op!r}")

    def reset(self):
        if not (self.op == "broadcast" and self.comm.rank == 0):
            self.recv.fill(np.nan)

    def check(self, corrupt=False):
        if corrupt:
            self.recv[-1] += 1.0
        if self.expected is not None and not np.array_equal(self.recv, self.expected):
            bad = int(np.flatnonzero(self.recv != self.expected)[0])
            _fail(
                self.comm,
                f"wrong result of {self.op} at {self.payload_bytes} B: element {bad} is {float(self.recv[bad])!r}, "
                f"expected {float(self.expected[bad])!r}",
            )


def _fault(comm, spec, where):
    """Injected faults, for the tests of the parent's error handling (a rank that dies, hangs or computes wrong)."""
    fault = spec.get("fault")
    if not fault or fault["rank"] != comm.rank or fault["where"] != where:
        return False
    if fault["kind"] == "hang":
        _say(comm.rank, "injected fault: hanging")
        time.sleep(3600)
    if fault["kind"] == "die":
        _say(comm.rank, "injected fault: exiting with status 7")
        os._exit(7)
    return fault["kind"] == "corrupt"


def _warm_up(coll, warmup):
    """Warm-up calls with the C-level stderr captured, to see whether MPICH fell back to another algorithm."""
    with tempfile.TemporaryFile() as capture:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(capture.fileno(), 2)
        try:
            for _ in range(warmup):
                coll.call()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        capture.seek(0)
        text = capture.read().decode(errors="replace")
    if text:
        sys.stderr.write(text)
        sys.stderr.flush()
    return any(marker in text for marker in _FALLBACK_TEXT)


def _timed(comm, call, iterations):
    """Per iteration: barrier, time the call; then the maximum over ranks of each iteration's time (on rank 0)."""
    from mpi4py import MPI

    times = np.empty(iterations)
    for i in range(iterations):
        comm.Barrier()
        start = time.perf_counter()
        call()
        times[i] = time.perf_counter() - start
    slowest = np.empty_like(times)
    comm.Reduce(times, slowest, op=MPI.MAX, root=0)
    return slowest


def run_sweep(comm, spec):
    for case in spec["cases"]:
        for index, size in enumerate(spec["sizes_bytes"]):
            coll = _Collective(comm, case["op"], size)
            coll.reset()
            fell_back = _warm_up(coll, spec["warmup"])
            coll.check()
            corrupt = _fault(comm, spec, index)
            slowest = _timed(comm, coll.call, spec["iterations"])
            coll.check(corrupt)
            fell_back = comm.allreduce(fell_back)
            if comm.rank == 0:
                record = {"op": case["op"], "algorithm": case["algorithm"], "size_bytes": coll.payload_bytes}
                _emit({"kind": "row", **record, "times_s": slowest.tolist(), "fell_back": bool(fell_back)})


def _matmul_layer(matrices, chunks, between=None, device_s=None):
    """One "layer" of the backward pass: ``chunks`` float32 matrix multiplies, ``between()`` after each. With
    ``device_s`` each multiply runs on a (modelled) accelerator: the host waits ``device_s`` seconds, its core free."""
    a, b, out = matrices
    if device_s is not None:
        end = time.perf_counter() + chunks * device_s
        while (left := end - time.perf_counter()) > 0:
            if between is not None:  # the host calls into MPI every 0.5 ms while the device computes
                between()
            time.sleep(min(left, 5e-4) if between is not None else left)
        return
    for _ in range(chunks):
        np.matmul(a, b, out=out)
        if between is not None:
            between()


def _time_schedules(comm, spec, schedules, reduced, expected):
    """Warm up and time each of ``spec["schedules"]``, checking the all-reduced gradient ``reduced`` against
    ``expected`` after every step that communicates; rank 0 emits each schedule's times (max over ranks)."""
    from mpi4py import MPI

    names = spec["schedules"]
    for name in names:
        for _ in range(spec["warmup"]):
            schedules[name]()
    # Interleaved: iteration i times every schedule in turn, so a slow spell of the machine hits them all alike.
    times = {name: np.empty(spec["iterations"]) for name in names}
    for i in range(spec["iterations"]):
        for name in names:
            reduced.fill(np.nan)
            comm.Barrier()
            start = time.perf_counter()
            schedules[name]()
            times[name][i] = time.perf_counter() - start
            if name != "compute" and not np.array_equal(reduced, expected):
                _fail(comm, f"wrong all-reduce result in schedule {name!r}")
    for name in names:
        slowest = np.empty_like(times[name])
        comm.Reduce(times[name], slowest, op=MPI.MAX, root=0)
        if comm.rank == 0:
            _emit({"kind": "step", "schedule": name, "times_s": slowest.tolist()})


def run_step(comm, spec):
    from mpi4py import MPI

    n, buckets, chunks = spec["matrix_n"], spec["buckets"], spec["matmuls_per_layer"]
    device_s = spec.get("device_s_per_matmul")
    rng = np.random.default_rng(comm.rank)
    matrices = tuple(rng.random((n, n), dtype=np.float32) for _ in range(2)) + (np.empty((n, n), np.float32),)
    elements = max(spec["gradient_bytes"] // 4, buckets)
    elements -= elements % buckets
    gradient = _pattern(elements, comm.rank + 1)
    reduced = np.empty_like(gradient)
    expected = (np.arange(elements) % 5 * comm.size + comm.size * (comm.size + 1) / 2).astype(np.float32)
    send_buckets = np.split(gradient, buckets)
    recv_buckets = np.split(reduced, buckets)

    def compute():
        for _ in range(buckets):
            _matmul_layer(matrices, chunks, device_s=device_s)

    def communicate():
        comm.Allreduce(gradient, reduced, op=MPI.SUM)

    def blocking():
        compute()
        communicate()

    def bucketed(test):
        requests = []

        def poke():
            if requests:
                MPI.Request.Testall(requests)

        # The backward pass finishes the last layer first: bucket k holds that layer's gradients.
        for k in range(buckets):
            _matmul_layer(matrices, chunks, poke if test else None, device_s)
            requests.append(comm.Iallreduce(send_buckets[k], recv_buckets[k], op=MPI.SUM))
        MPI.Request.Waitall(requests)

    schedules = {
        "compute": compute,
        "communication": communicate,
        "blocking": blocking,
        "nonblocking": lambda: bucketed(False),
        "nonblocking_test": lambda: bucketed(True),
        "nonblocking_async": lambda: bucketed(False),
    }
    _time_schedules(comm, spec, schedules, reduced, expected)


def main(spec_json):
    spec = json.loads(spec_json)
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    if comm.rank == 0:
        _emit(
            {
                "kind": "conditions",
                "mpi_library": MPI.Get_library_version().strip().splitlines()[0],
                "mpi_standard": "{}.{}".format(*MPI.Get_version()),
                "ranks": comm.size,
            }
        )
    _fault(comm, spec, "start")
    try:
        (run_step if spec["job"] == "step" else run_sweep)(comm, spec)
    except Exception as error:  # any rank's Python error ends the whole job, with its message
        _fail(comm, f"{type(error).__name__}: {error}")
    comm.Barrier()
    if comm.rank == 0:
        _emit({"kind": "done"})
