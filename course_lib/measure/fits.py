"""α and B fitted from measured times: ``fit_alpha_beta`` fits T = n·α + Q/B to a ``Measurements`` table, with the
phase count n and critical-path bytes Q of ``collectives.collective_cost``, and returns an ``AlphaBetaFit`` (α, B,
the residuals, the crossover size and the fitted model's ``predict_s``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import collectives, units
from .mpich import MPICH_ALGORITHMS
from .tables import Measurements

__all__ = ["AlphaBetaFit", "fit_alpha_beta"]


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

    >>> from course_lib import units
    >>> from course_lib.collectives import collective_time
    >>> from course_lib.measure import Measurements, Row
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
