"""From a measurement to a cluster: ``calibrate_cluster`` fits a ``hardware.Cluster``'s links to measured collective
times (nccl-tests logs, ``run_collective_sweep`` results), so that the budget and the planner run on the machine that
was measured.

Each scope gets two parameters of the model ``budget.group_collective`` runs on that cluster, a bandwidth B and a
latency L, put where that model reads them:

- in node (tables with nodes == 1), on NVIDIA GPUs (NCCL's own model, ``nccl.estimate``): B is the intra-node link's
  ``nccl_bandwidth_bytes_per_s`` (one-way per GPU), L its ``fabric_latency_s``, what each NVLink hop costs beyond
  NCCL's table; on other devices (MPI's α–β ring): B one-way per device, L the link's ``latency_s`` (α per step);
- across nodes (tables with nodes > 1): B is the network's one-way bandwidth per node; L its ``fabric_latency_s``,
  what each network step costs beyond NCCL's table (NVIDIA), or its ``latency_s`` (other devices).

The in-node scope is fitted first (its tables depend on nothing else), then the network with the fitted in-node link
in place. A fit minimises the sum of squared relative errors (T_model − T)/T over every row of its tables, every size
alike: Levenberg–Marquardt on (ln B, ln(L + 0.1 µs)) within ×/÷ 1,000 of the cluster's B and 0 ≤ L ≤ 10 ms, started
from a scan and a golden-section search of B (the model is a minimum over NCCL's algorithms, so its error is flat in B
wherever another limit binds, a plateau a gradient cannot leave). A parameter the tables do not constrain (putting the
cluster's own value back raises the error by at most 0.1 %) keeps the cluster's value, and the link's note says so.
Deterministic; about 25 evaluations of the model per scope, 1–2 ms each for a 30-row table.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np

from .. import budget, units
from ..hardware import Cluster, Link
from .tables import Measurements

__all__ = ["CalibrationWarning", "calibrate_cluster"]

_SCOPES = budget.LEVELS  # ("in node", "across nodes")
# The calls budget.group_collective models: the collectives NCCL's tuner weighs and nccl-tests' sendrecv_perf (each
# rank sends to the next; on NVIDIA GPUs nccl.send_recv, over p2p_link's link).
_MODEL_OPS = ("all_reduce", "reduce_scatter", "all_gather", "send_recv")
_LATENCY_FLOOR_S = 0.1 * units.US  # the latency's log scale: L + 0.1 µs, so that L = 0 is reachable
_MAX_LATENCY_S = 10e-3
_BANDWIDTH_RANGE = 1e3  # the fit stays within the cluster's B ×/÷ this
_WARN_RESIDUAL = 0.25  # a fit missing a size ≥ 1 MiB by more than this warns
_WARN_FROM_BYTES = units.MiB
# A parameter whose starting value raises Σ errors² by at most this share over the best fit is not constrained by
# the tables: it keeps the cluster's value (far below what a measurement's noise moves).
_INDISTINCT = 1e-3


class CalibrationWarning(UserWarning):
    """A calibration whose fitted model misses some measured size ≥ 1 MiB by more than 25 %."""


@dataclass(frozen=True)
class _Entry:
    """One table placed on the cluster: ``ranks`` on ``nodes`` nodes, ``stride`` apart in ``budget``'s rank order."""

    label: str
    op: str
    ranks: int
    nodes: int
    stride: int
    sizes_bytes: np.ndarray
    measured_s: np.ndarray


def calibrate_cluster(cluster: Cluster, tables) -> Cluster:
    """``cluster`` with its links fitted to measured collective times, one ``Measurements`` or a sequence of them.

    Each table must say on how many nodes its ranks ran (``Measurements.nodes``: ``read_nccl_tests(..., nodes=)``;
    1 for ``run_collective_sweep``): tables on one node fit the in-node link, tables on several the network (the
    scopes and parameters are in the module's docstring). Each scope needs at least 3 different sizes. The fitted
    links say so (basis "measured", the tables as their source, a note with the fitted figures and the residuals);
    a scope without tables keeps the cluster's link. The result runs unchanged in ``budget.group_collective_time``,
    ``budget.step_time``, ``budget.search_plans``, ``budget.partition_report`` and ``serving``. A fit that misses
    some size ≥ 1 MiB by more than 25 % warns (``CalibrationWarning``) with the worst size.

    A table made by the model itself gives its parameters back:

    >>> import dataclasses
    >>> import numpy as np
    >>> from course_lib import budget
    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.measure import Measurements, Row
    >>> slower = dataclasses.replace(DGX_H100.intra_node_link, nccl_bandwidth_bytes_per_s=300e9)
    >>> truth = dataclasses.replace(DGX_H100, intra_node_link=slower)
    >>> sizes = [2**k for k in range(3, 31, 3)]
    >>> times = budget.group_collective_time("all_reduce", truth, 8, 1, np.array(sizes, dtype=float))
    >>> rows = [Row("all_reduce", "nccl", 8, s, t, t, t, s / t, 1.75 * s / t, 20, False)
    ...         for s, t in zip(sizes, times, strict=True)]
    >>> fitted = calibrate_cluster(DGX_H100, Measurements(tuple(rows), {"nodes": 1}))
    >>> f"{fitted.intra_node_link.nccl_bandwidth_bytes_per_s / 1e9:.1f} GB/s", fitted.intra_node_link.basis
    ('300.0 GB/s', 'measured')
    """
    if not isinstance(cluster, Cluster):
        raise ValueError(f"cluster must be a hardware.Cluster, got {type(cluster).__name__}")
    entries = _entries(cluster, _as_tables(tables))
    intra_entries = [e for e in entries if e.nodes == 1]
    inter_entries = [e for e in entries if e.nodes > 1]
    result, fitted = cluster, []
    if intra_entries:
        result = replace(result, intra_node_link=_fit_scope(result, _SCOPES[0], intra_entries))
        fitted.append(_SCOPES[0])
    if inter_entries:
        result = replace(result, inter_node_link=_fit_scope(result, _SCOPES[1], inter_entries))
        fitted.append(_SCOPES[1])
    return replace(result, name=f"{cluster.name}, calibrated ({' and '.join(fitted)})")


def _as_tables(tables) -> tuple[Measurements, ...]:
    if isinstance(tables, Measurements):
        return (tables,)
    try:
        tables = tuple(tables)
    except TypeError:
        raise ValueError(f"tables must be a Measurements or a sequence of them, got {type(tables).__name__}") from None
    if not tables or not all(isinstance(table, Measurements) for table in tables):
        raise ValueError("tables must be a Measurements or a non-empty sequence of them")
    return tables


def _entries(cluster: Cluster, tables) -> list[_Entry]:
    """Each table checked and placed: one op, one rank count, its nodes known, a placement the cluster can hold."""
    entries = []
    for index, table in enumerate(tables):
        if not table.rows:
            raise ValueError(f"tables[{index}] has no rows")
        try:
            op, ranks, _ = table.op, table.ranks, table.algorithm
        except ValueError as error:  # several ops, rank counts or algorithms in one table
            raise ValueError(f"tables[{index}]: {error}") from None
        nodes, label = table.nodes, _label(table, index)
        if nodes is None:
            raise ValueError(
                f"tables[{index}] ({label}) has no placement: its conditions do not say on how many nodes the ranks "
                "ran (read_nccl_tests(..., nodes=) sets conditions['nodes'])"
            )
        if op not in _MODEL_OPS:
            raise ValueError(f"{label} measures {op!r}, which the model does not run (one of "
                             f"{', '.join(_MODEL_OPS)})")  # fmt: skip
        if ranks % nodes:
            raise ValueError(f"tables[{index}] has nodes={nodes}, which does not divide its {ranks} ranks")
        per_node = ranks // nodes
        if per_node > cluster.devices_per_node:
            raise ValueError(
                f"tables[{index}] has {per_node} ranks per node, more than the cluster's devices_per_node "
                f"({cluster.devices_per_node})"
            )
        stride = cluster.devices_per_node // per_node
        placed = budget.group_placement(replace(cluster, nodes=max(cluster.nodes, nodes)), ranks, stride)
        if placed != (per_node, nodes):
            raise ValueError(f"tables[{index}]: {per_node} ranks per node must divide the cluster's devices_per_node "
                             f"({cluster.devices_per_node}) to be placed as budget places groups")  # fmt: skip
        sizes, times = table.size_bytes.astype(float), table.median_s
        if np.any(sizes < 1) or np.any(~np.isfinite(times) | (times <= 0)):
            raise ValueError(f"tables[{index}] must have sizes ≥ 1 byte and finite times > 0")
        entries.append(_Entry(label, op, ranks, nodes, stride, sizes, times))
    return entries


def _label(table: Measurements, index) -> str:
    where = table.conditions.get("source") or table.conditions.get("mpi_library") or "measurements"
    host = table.conditions.get("host")
    nodes = table.nodes
    placed = f"{table.ranks} ranks" + (f" on {nodes} node{'s' if nodes > 1 else ''}" if nodes else "")
    return f"tables[{index}]: {where}{' on ' + host if host else ''}, {table.op}, {placed}"


def _nvidia(cluster: Cluster) -> bool:
    return bool(cluster.accelerator.architecture)


def _start(cluster: Cluster, scope) -> tuple[float, float]:
    """The cluster's own (B, L) for a scope: the parameters the fit starts from and keeps when unconstrained."""
    if scope == _SCOPES[0]:
        link = cluster.intra_node_link
        if _nvidia(cluster):
            return cluster.nccl_intra_bandwidth_bytes_per_s, link.fabric_latency_s
        return cluster.intra_bandwidth_bytes_per_s, link.latency_s + link.fabric_latency_s
    link = cluster.inter_node_link
    per_node = cluster.inter_bandwidth_bytes_per_s * cluster.devices_per_node
    return per_node, link.fabric_latency_s if _nvidia(cluster) else link.latency_s + link.fabric_latency_s


def _link(cluster: Cluster, scope, bandwidth, latency) -> Link:
    """The scope's link of ``cluster`` with bandwidth B (one-way, per GPU in a node, per node across) and latency L
    where the model reads them (module docstring)."""
    inside = scope == _SCOPES[0]
    link = cluster.intra_node_link if inside else cluster.inter_node_link
    fields = dict(bandwidth_bytes_per_s=bandwidth, direction="one-way", scope="per GPU" if inside else "per node")
    if _nvidia(cluster):
        fields["fabric_latency_s"] = latency
        if inside:
            fields["nccl_bandwidth_bytes_per_s"] = bandwidth
    else:
        fields |= dict(latency_s=latency, fabric_latency_s=0.0, nccl_bandwidth_bytes_per_s=None)
    return replace(link, **fields)


def _with_link(cluster: Cluster, scope, link: Link) -> Cluster:
    return replace(cluster, **{"intra_node_link" if scope == _SCOPES[0] else "inter_node_link": link})


def _relative_errors(cluster: Cluster, scope, entries, bandwidth, latency) -> np.ndarray:
    """(T_model − T)/T of every row of ``entries``, the scope's link at (B, L)."""
    trial = _with_link(cluster, scope, _link(cluster, scope, bandwidth, latency))
    errors = []
    for entry in entries:
        model = budget.group_collective_time(entry.op, trial, entry.ranks, entry.stride, entry.sizes_bytes)
        errors.append((model - entry.measured_s) / entry.measured_s)
    return np.concatenate(errors)


def _fit_scope(cluster: Cluster, scope, entries) -> Link:
    """The scope's link fitted to ``entries`` (module docstring), with its note; warns on a residual > 25 % ≥ 1 MiB."""
    sizes = np.concatenate([entry.sizes_bytes for entry in entries])
    if len(np.unique(sizes)) < 3:
        raise ValueError(
            f"tables in the {scope!r} scope must hold at least 3 different sizes to fit a bandwidth and a latency; "
            f"got {len(np.unique(sizes))} ({', '.join(entry.label for entry in entries)})"
        )
    nodes = max(entry.nodes for entry in entries)
    base = replace(cluster, nodes=max(cluster.nodes, nodes))  # a one-node cluster may be given a network's tables
    start = _start(base, scope)

    def errors(theta):
        return _relative_errors(base, scope, entries, *_parameters(theta))

    (bandwidth, latency), residuals, kept = _fit(errors, start)
    _warn_if_off(scope, entries, residuals)
    return _described(cluster, scope, entries, bandwidth, latency, residuals, kept)


def _theta(bandwidth, latency) -> np.ndarray:
    return np.array([np.log(bandwidth), np.log(latency + _LATENCY_FLOOR_S)])


def _parameters(theta) -> tuple[float, float]:
    return float(np.exp(theta[0])), max(float(np.exp(theta[1])) - _LATENCY_FLOOR_S, 0.0)


def _fit(errors, start) -> tuple[tuple[float, float], np.ndarray, dict]:
    """(B, L) minimising Σ errors(θ)² over θ = (ln B, ln(L + 0.1 µs)) (a search of B, then Levenberg–Marquardt), its
    errors, and the best-fit value of each parameter put back to ``start`` because that fits as well (within 0.1 %)."""
    origin = _theta(*start)
    lower = np.array([origin[0] - np.log(_BANDWIDTH_RANGE), np.log(_LATENCY_FLOOR_S)])
    upper = np.array([origin[0] + np.log(_BANDWIDTH_RANGE), np.log(_MAX_LATENCY_S + _LATENCY_FLOOR_S)])
    origin = np.clip(origin, lower, upper)
    theta, residual = _levenberg_marquardt(errors, *_bandwidth_search(errors, origin), lower, upper)
    kept = {}
    for i, name in enumerate(("bandwidth", "latency")):
        back = theta.copy()
        back[i] = origin[i]
        back_residual = residual if theta[i] == origin[i] else errors(back)
        if back_residual @ back_residual <= (residual @ residual) * (1 + _INDISTINCT):
            kept[name] = _parameters(theta)[i]
            theta, residual = back, back_residual
    bandwidth, latency = _parameters(theta)
    return (start[0] if "bandwidth" in kept else bandwidth, start[1] if "latency" in kept else latency), residual, kept


def _bandwidth_search(errors, origin, tolerance=0.3) -> tuple[np.ndarray, np.ndarray]:
    """(θ, errors(θ)) at the starting latency with the best B seen: B ×/÷ 10 and 100 around the start, then a
    golden-section search between the best one's neighbours (the lowest of equals: above a plateau's edge the error no
    longer depends on B) down to ``tolerance`` in ln B. It brackets a minimum beside a plateau, which a gradient
    misses."""
    seen = []

    def cost(ln_b):
        theta = np.array([ln_b, origin[1]])
        residual = errors(theta)
        seen.append((float(residual @ residual), ln_b, theta, residual))
        return seen[-1][0]

    scan = origin[0] + np.log([0.01, 0.1, 1.0, 10.0, 100.0])
    best = int(np.argmin([cost(ln_b) for ln_b in scan]))
    low, high = scan[max(best - 1, 0)], scan[min(best + 1, len(scan) - 1)]
    ratio = (np.sqrt(5) - 1) / 2
    left, right = high - ratio * (high - low), low + ratio * (high - low)
    cost_left, cost_right = cost(left), cost(right)
    while high - low > tolerance:
        if cost_left <= cost_right:  # ties go to the lower bandwidth, off the plateau
            high, right, cost_right = right, left, cost_left
            left = high - ratio * (high - low)
            cost_left = cost(left)
        else:
            low, left, cost_left = left, right, cost_right
            right = low + ratio * (high - low)
            cost_right = cost(right)
    _, _, theta, residual = min(seen, key=lambda entry: entry[:2])  # the lowest cost, then the lowest B
    return theta, residual


def _levenberg_marquardt(errors, theta, residual, lower, upper, max_iterations=30):
    """(θ, errors(θ)) minimising Σ errors(θ)² within [lower, upper], from θ and its ``residual``: Levenberg–Marquardt
    with a forward-difference Jacobian, steps at most e² in either parameter and clipped to the box (Madsen, Nielsen
    & Tingleff 2004, "Methods for non-linear least squares problems", §3.2)."""
    cost, damping = float(residual @ residual), 1e-2
    for _ in range(max_iterations):
        jacobian = np.empty((residual.size, theta.size))
        for i in range(theta.size):
            h = 1e-6 if theta[i] + 1e-6 <= upper[i] else -1e-6
            shifted = theta.copy()
            shifted[i] += h
            jacobian[:, i] = (errors(shifted) - residual) / h
        normal, gradient = jacobian.T @ jacobian, jacobian.T @ residual
        while damping < 1e12:
            step = np.linalg.solve(normal + damping * np.diag(np.diag(normal) + 1e-12), -gradient)
            trial = np.clip(theta + np.clip(step, -2.0, 2.0), lower, upper)
            trial_residual = errors(trial)
            trial_cost = float(trial_residual @ trial_residual)
            if trial_cost < cost:
                break
            damping *= 4
        else:
            return theta, residual
        converged = cost - trial_cost <= 1e-4 * cost
        theta, residual, cost, damping = trial, trial_residual, trial_cost, damping / 3
        if converged:
            break
    return theta, residual


def _warn_if_off(scope, entries, residuals):
    sizes = np.concatenate([entry.sizes_bytes for entry in entries])
    labels = [entry.label for entry in entries for _ in entry.sizes_bytes]
    large = np.flatnonzero((sizes >= _WARN_FROM_BYTES) & (np.abs(residuals) > _WARN_RESIDUAL))
    if large.size:
        worst = large[np.argmax(np.abs(residuals[large]))]
        warnings.warn(
            f"the fit {scope} misses the measured time by {residuals[worst]:+.0%} at "
            f"{units.format_bytes(sizes[worst], binary=True)} ({labels[worst]}): the model cannot follow this table "
            f"there, so predictions near that size are that far off",
            CalibrationWarning,
            stacklevel=4,
        )


def _described(cluster: Cluster, scope, entries, bandwidth, latency, residuals, kept) -> Link:
    """The fitted link, its source naming the tables and its note the fitted figures and the residuals."""
    nvidia = _nvidia(cluster)
    link = _link(cluster, scope, bandwidth, latency)
    inside = scope == _SCOPES[0]
    latency_name = "extra latency per NVLink hop" if inside else "fabric latency per network step"
    latency_name = latency_name if nvidia else "α per step"
    bandwidth_name = "one-way per GPU" if inside else "one-way per node"
    sizes = np.concatenate([entry.sizes_bytes for entry in entries])
    worst = int(np.argmax(np.abs(residuals)))
    large = sizes >= _WARN_FROM_BYTES
    unconstrained = " (the cluster's: the tables do not tell it from the best fit, {}, within 0.1 %)"
    note = (
        f"fitted by measure.calibrate_cluster to {residuals.size} rows ({scope}, "
        f"{'NCCL' if nvidia else 'α–β ring'} model): B = {units.format_bandwidth(bandwidth)} {bandwidth_name}"
        + (unconstrained.format(units.format_bandwidth(kept["bandwidth"])) if "bandwidth" in kept else "")
        + f", {latency_name} {units.format_time(latency)}"
        + (unconstrained.format(units.format_time(kept["latency"])) if "latency" in kept else "")
        + "; "
        f"relative error median {np.median(np.abs(residuals)):.1%}"
        + (f" ({np.median(np.abs(residuals[large])):.1%} at ≥ 1 MiB)" if large.any() else "")
        + f", worst {residuals[worst]:+.1%} at {units.format_bytes(sizes[worst], binary=True)}"
    )
    source = "measured: " + "; ".join(entry.label for entry in entries)
    fields = dict(name=f"{link.name}, fitted", basis="measured", source=source, note=note)
    if not nvidia:
        fields["latency_source"] = f"fitted ({scope}): {source}"
    return replace(link, **fields)
