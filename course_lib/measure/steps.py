"""Exposed communication, measured: ``measure_step`` times a data-parallel step (a backward pass of matrix
multiplies, the all-reduce of its gradient) on MPI in each of ``SCHEDULES`` and returns a ``StepMeasurements``, which
reads the exposed communication off the completed steps and sets ``course_lib.budget``'s prediction beside it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import _check, budget, units
from .jobs import _oversubscription_warning, _run_job

__all__ = ["SCHEDULES", "StepMeasurements", "measure_step"]

# The schedules ``measure_step`` times (see its docstring).
SCHEDULES = ("compute", "communication", "blocking", "nonblocking", "nonblocking_test", "nonblocking_async")
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
