"""NCCL's model of its own collectives: the algorithm and protocol its tuner picks for a call, and the time it expects.

For every call NCCL chooses among algorithms and protocols with a cost model of its own (``ncclTopoTuneModel`` and
``ncclTopoGetAlgoTime`` in src/graph/tuning.cc, NVIDIA/nccl v2.30.7-1, Apache-2.0): time = latency + bytes /
bandwidth, the latency built from a per-call base and per-hop constants, the bandwidth from its topology graph and
each protocol's share of it. This module is that model. The one thing it does not copy is NCCL's topology search:
the graph's bandwidths come from a ``hardware.Cluster`` (NVLink as NCCL counts it, the network of the group's
members on a node), as described below. The constants, with their meaning, are in the course's
``shared/data/nccl_tuning_constants.md``.

Algorithms, for a group of n ranks on N nodes, k per node (n = k·N):

- ``ring``: one flat ring through all n ranks, on one node or many (no hierarchy). On several nodes every ring
  crosses each node's boundary once, through one NIC, and NCCL runs channels on every rail at once, so the ring's
  bus bandwidth is min(NVLink per GPU, the NICs of the group's k members on a node): a multi-rail flat ring.
- ``tree`` (all-reduce): a chain through the k GPUs of each node and a double binary tree between nodes. Its
  latency, 2·((k − 1)·intra + log2(N)·inter), has as many NVLink hops on one node as the ring's 2(n − 1).
- ``nvls``: NVLink SHARP, the NVSwitch reduces and multicasts (Hopper and later, one node).
- ``nvls_tree``: NVLS inside each node, a tree between nodes (all-reduce across nodes, Hopper and later).
- ``pat``: Parallel Aggregated Trees, all-gather and reduce-scatter with one GPU per node.

The all-to-all is not in the tuner: NCCL runs it as grouped point-to-point sends and receives (``all_to_all``).

Protocols: ``LL`` (8-byte lines of 4 bytes of data and a 4-byte flag: half the bandwidth, the lowest latency),
``LL128`` (128-byte lines with 120 bytes of data), ``Simple`` (full bandwidth, a flush and the highest latency).

``payload_bytes`` is nccl-tests' size S (``collectives``' convention): the buffer for all_reduce, the whole
gathered array for all_gather and reduce_scatter. Bandwidths are one-way, per GPU (NVLink) or per node (the
network), in bytes/s.

The launch floor: NCCL's tuner weighs algorithms by its cost model alone, which has no per-call host cost, while a
measured call (nccl-tests, a training step) also pays the host's enqueue and the kernel launch. Every call's time
here is the cluster's ``launch_floor_s`` (``hardware.LAUNCH_FLOOR_S``, fitted on nccl-tests logs) plus NCCL's time;
the floor is the same for every algorithm and protocol, so the tuner's choice is made without it and stays NCCL's.

>>> from course_lib.hardware import DGX_H100
>>> from course_lib.units import MiB, format_time
>>> small = estimate("all_reduce", DGX_H100, 8, 1, 16 * 1024)   # a decode step's all-reduce on one node
>>> small.algorithm, small.protocol, format_time(small.launch_floor_s), format_time(small.time_s)
('ring', 'LL', '4.8 µs', '20 µs')
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import _check
from .hardware import Cluster
from .units import GB, US

__all__ = [
    "OPS",
    "ALGORITHMS",
    "PROTOCOLS",
    "CHANNELS",
    "P2P_LL_THRESHOLD_BYTES",
    "NcclEstimate",
    "estimate",
    "candidates",
    "p2p_link",
    "send_recv",
    "all_to_all",
]

OPS = ("all_reduce", "reduce_scatter", "all_gather")  # the ops NCCL's tuner weighs (all_to_all is point-to-point)
ALGORITHMS = ("ring", "tree", "nvls", "nvls_tree", "pat")
PROTOCOLS = ("LL", "LL128", "Simple")
# Which algorithm runs which op (tuning.cc skips the others; CollNet needs SHARP switches and is left out).
_ALGORITHMS_FOR = {
    "all_reduce": ("ring", "tree", "nvls", "nvls_tree"),
    "reduce_scatter": ("ring", "nvls", "pat"),
    "all_gather": ("ring", "nvls", "pat"),
}
_SIMPLE_ONLY = frozenset({"nvls", "nvls_tree", "pat"})
# The channel count the model assumes where NCCL's tuner multiplies a per-channel cap by it: NCCL opens 16 to 32
# channels on 8-GPU NVSwitch nodes; at 16 the per-channel caps below bind on none of the course's presets.
CHANNELS = 16
# enqueue.cc, NCCL_PARAM(P2pLLThreshold, "P2P_LL_THRESHOLD", 16384): a send or receive uses the LL protocol when its
# bytes are at most nChannels × this, else Simple.
P2P_LL_THRESHOLD_BYTES = 16384

# tuning.cc, ncclTunerConstantsDefaults (µs): baseLatencies[algorithm][protocol] (LL, LL128, Simple).
_BASE_US = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4), "nvls": (0, 0, 0), "nvls_tree": (0, 0, 0),
            "pat": (8.0, 8.0, 8.0)}  # fmt: skip
# hwLatencies[hardware][algorithm][protocol] (µs): per hop over NVLink and over the network.
_NVLINK_US = {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4), "nvls": (0, 0, 25), "nvls_tree": (0, 0, 25),
              "pat": (0, 0, 4.0)}  # fmt: skip
_NET_US = {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0), "nvls": (0, 0, 18), "nvls_tree": (0, 0, 20.9),
           "pat": (0, 0, 14.0)}  # fmt: skip
# Bandwidth caps (GB/s), columns 1 node, 2 nodes, 3 or more. llMaxBws: on one node by GPU generation, across nodes
# by the host CPU (row 0 Intel, row 1 AMD); the others per channel, by GPU generation.
_LL_MAX_ONE_NODE = {"Ampere": 87.7, "Hopper": 141.0, "Blackwell": 282.0}
_LL_MAX_MULTI_NODE = {"Intel": (39.0, 20.4), "AMD": (22.5, 19.0)}  # Volta-row and Ampere-row values, N = 2 and ≥ 3
_PER_CHANNEL_RING_LL128 = {"Ampere": (20.0, 20.0, 20.0), "Hopper": (36.7, 36.7, 36.7), "Blackwell": (40.0, 40.0, 40.0)}
_PER_CHANNEL_TREE_LL128 = {"Ampere": (20.0, 20.0, 20.0), "Hopper": (36.7, 36.7, 29.0), "Blackwell": (55.6, 31.67, 20.0)}
_PER_CHANNEL_TREE = {"Ampere": (24.0, 23.6, 17.8), "Hopper": (38.7, 41.4, 36.0), "Blackwell": (70.0, 42.8, 24.0)}
_PER_CHANNEL_NVLS_TREE = {"Ampere": (24.0, 23.6, 17.8), "Hopper": (0.0, 57.7, 45.5), "Blackwell": (0.0, 96.0, 80.0)}
_NVLS_EFFICIENCY = {"Ampere": 0.0, "Hopper": 0.85, "Blackwell": 0.74}
_NET_OVERHEAD_US = {"Intel": 1.0, "AMD": 2.0}  # getNetOverhead: per ring step on several nodes (×3 for Simple)
# treeCorrectionFactor[protocol][log2(bytes / 64)]: "trees are not perfectly sticking to the model for medium sizes".
_TREE_CORRECTION = np.array([
    [1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0],
    [1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0],
    [.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9],
])  # fmt: skip


@dataclass(frozen=True)
class NcclEstimate:
    """NCCL's expectation for one call: the ``algorithm`` and ``protocol`` (picked by its tuner, or imposed), the
    ``latency_s`` and ``bandwidth_bytes_per_s`` (the algorithm bandwidth) of its cost model, the cluster's
    ``launch_floor_s``, and ``time_s`` = launch floor + latency + S / bandwidth (0 for a call that moves nothing).
    Fields are arrays when the call was evaluated on arrays."""

    op: str
    ranks: _check.IntOrArray
    nodes: _check.IntOrArray
    payload_bytes: _check.FloatOrArray
    algorithm: str | np.ndarray
    protocol: str | np.ndarray
    latency_s: _check.FloatOrArray
    bandwidth_bytes_per_s: _check.FloatOrArray
    time_s: _check.FloatOrArray
    launch_floor_s: _check.FloatOrArray = field(default=0.0, kw_only=True)


def _group(op, cluster: Cluster, ranks, nodes, payload_bytes):
    """Checked arguments: (n, N, k, S) as float arrays, and the architecture. ``nodes`` may exceed ``cluster.nodes``:
    the cluster gives the node's hardware, and the plan search weighs groups larger than its cluster."""
    _check.choice("op", op, OPS)
    return _placed_group(cluster, ranks, nodes, payload_bytes)


def _placed_group(cluster: Cluster, ranks, nodes, payload_bytes):
    """``_group`` for any op: the checks of the cluster, the group and the payload."""
    if not isinstance(cluster, Cluster):
        raise ValueError(f"cluster must be a hardware.Cluster, got {type(cluster).__name__}")
    architecture = cluster.accelerator.architecture
    if architecture not in _NVLS_EFFICIENCY:
        raise ValueError(
            f"cluster.accelerator must be an NVIDIA GPU NCCL has tuning tables for (architecture one of "
            f"{', '.join(_NVLS_EFFICIENCY)}); {cluster.accelerator.name!r} has architecture {architecture!r}"
        )
    n = np.asarray(_check.count("ranks", ranks), dtype=float)
    nodes_ = np.asarray(_check.count("nodes", nodes), dtype=float)
    size = np.asarray(_check.nonnegative("payload_bytes", payload_bytes), dtype=float)
    if np.any(nodes_ > n):
        raise ValueError(
            f"nodes must be at most ranks (each node holds a rank of the group), got {ranks} ranks on {nodes} nodes"
        )
    per_node = n / nodes_  # NCCL's ppn: an average when the ranks do not fill their nodes evenly (tuning.cc)
    if np.any(np.ceil(per_node) > cluster.devices_per_node):
        raise ValueError(
            f"ranks / nodes must be at most the cluster's {cluster.devices_per_node} devices per node, "
            f"got {ranks} ranks on {nodes} nodes"
        )
    return n, nodes_, per_node, size, architecture


def _floor_log2(x):
    return np.floor(np.log2(np.maximum(x, 1.0)))


def _tree_correction(protocol_index, size):
    """NCCL's treeCorrectionFactor for the tree all-reduce's bandwidth at ``size`` bytes. NCCL applies entry
    floor(log2(size / 64)) for 64 B ≤ size < 512 MiB, a step at each power of two; the course interpolates between the
    entries in log2(size), so that a larger message never comes out faster (each doubling raises the factor by less
    than 2×), and uses 1 outside that range, as NCCL does."""
    position = np.log2(np.maximum(size, 1.0) / 64)
    entries = np.append(_TREE_CORRECTION[protocol_index, :23], 1.0)  # from 2^23 × 64 B = 512 MiB on: no correction
    inside = (size >= 64) & (position < 23)
    return np.where(inside, np.interp(np.clip(position, 0, 23), np.arange(24), entries), 1.0)


def _ll_max(cluster: Cluster, multi, column, architecture):
    """tuning.cc's llMaxBws (B/s): by GPU generation on one node, by host CPU across nodes."""
    multi_node = np.take(_LL_MAX_MULTI_NODE[cluster.host_cpu], np.maximum(column - 1, 0))
    return np.where(multi, multi_node, _LL_MAX_ONE_NODE[architecture]) * GB


def _bus_bandwidth(op, algorithm, protocol, cluster: Cluster, nodes, per_node, architecture):
    """NCCL's bus bandwidth (B/s) of one algorithm and protocol: the graph's bandwidth (nChannels × per-channel
    speed, here from the cluster's links) with tuning.cc's refinements."""
    multi = nodes > 1
    column = np.where(nodes == 1, 0, np.where(nodes == 2, 1, 2)).astype(int)
    intra = cluster.nccl_intra_bandwidth_bytes_per_s
    net = per_node * cluster.inter_bandwidth_bytes_per_s  # the NICs of the group's members on one node (rails)
    nvls = intra * _NVLS_EFFICIENCY[architecture] * (CHANNELS - 1) / CHANNELS
    if algorithm == "ring" or algorithm == "pat":
        bus = np.where(multi, np.where(per_node > 1, np.minimum(intra, net), net), intra)
        if algorithm == "pat":
            return 0.75 * bus
        if protocol == "LL":
            return np.minimum(_ll_max(cluster, multi, column, architecture), 0.5 * bus)
        if protocol == "LL128":
            return np.minimum(0.92 * bus, CHANNELS * np.take(_PER_CHANNEL_RING_LL128[architecture], column) * GB)
        return bus
    if algorithm == "tree":
        # On one or two nodes NCCL's tuner reads the tree graph's intra-node bandwidth (bw = nNodes <= 2 ? bwIntra :
        # bwInter): on two nodes the two trees cross the network in opposite directions, so the course gives it
        # twice the rails' bandwidth, capped by NVLink; on more nodes the rails'.
        tree_net = np.where(nodes == 2, 2 * net, net)
        bus = np.where(multi, np.where(per_node > 1, np.minimum(intra, tree_net), tree_net), intra)
        bus = np.minimum(0.92 * bus, CHANNELS * np.take(_PER_CHANNEL_TREE[architecture], column) * GB)
        if protocol == "LL":
            return np.minimum(bus / 3.8, _ll_max(cluster, multi, column, architecture))
        if protocol == "LL128":
            share = np.where(multi, 120 / 128, 7 / 9)
            return np.minimum(bus * share, CHANNELS * np.take(_PER_CHANNEL_TREE_LL128[architecture], column) * GB)
        return bus
    if algorithm == "nvls":
        return nvls * (2.0 if op == "all_reduce" else (per_node - 1) / per_node)
    between = np.where(nodes <= 2, 2 * net, net)  # nvls_tree
    return np.minimum(
        np.minimum(2 * nvls, between), CHANNELS * np.take(_PER_CHANNEL_NVLS_TREE[architecture], column) * GB
    )


def _enabled(op, algorithm, protocol, cluster: Cluster, nodes, per_node, architecture):
    """Whether NCCL would run this algorithm and protocol on this group (tuning.cc's and enqueue's rules)."""
    if protocol != "Simple" and algorithm in _SIMPLE_ONLY:
        return np.zeros(np.shape(nodes), dtype=bool)
    multi = nodes > 1
    nvls_capable = _NVLS_EFFICIENCY[architecture] > 0 and cluster.intra_node_link.family == "NVLink"
    rules = {
        "ring": np.ones(np.shape(nodes), dtype=bool),
        "tree": np.full(np.shape(nodes), op == "all_reduce"),
        "nvls": nvls_capable & ~multi & (per_node > 1),
        "nvls_tree": (op == "all_reduce") & nvls_capable & multi & (per_node > 1),
        "pat": (op != "all_reduce") & (per_node == 1) & multi,
    }
    return rules[algorithm]


def _latency_s(op, algorithm, protocol, cluster: Cluster, n, nodes, per_node, size):
    """NCCL's latency (s) of one algorithm and protocol, tuning.cc's formulas, with its ring plateau."""
    p = PROTOCOLS.index(protocol)
    multi = nodes > 1
    steps = 2 * (n - 1) if op == "all_reduce" else n - 1
    base = _BASE_US[algorithm][p]
    # Each link's fabric_latency_s: what its steps cost beyond NCCL's table (0 on the presets' NVLink; a measurement
    # fitted by measure.calibrate_cluster may set it).
    intra_lat = _NVLINK_US[algorithm][p] + cluster.intra_node_link.fabric_latency_s / US
    fabric = cluster.inter_node_link.fabric_latency_s / US
    inter_lat = np.where(per_node == 1, _NET_US["tree"][p], _NET_US[algorithm][p]) + fabric
    if protocol == "Simple":
        inter_lat = inter_lat + fabric  # the flush
    levels = _floor_log2(nodes)
    if algorithm == "ring":
        overhead = np.where(multi, _NET_OVERHEAD_US[cluster.host_cpu] * (3 if protocol == "Simple" else 1), 0.0)
        inter_steps = np.where(multi, 2 * (nodes - 1) if op == "all_reduce" else nodes - 1, 0)
        latency = base + (steps - inter_steps) * np.maximum(intra_lat, overhead) + inter_steps * inter_lat
        if protocol == "Simple" and op == "all_reduce":  # "plateau effect of ring" (×1.9 before Ampere)
            latency = np.where(multi & (size / (CHANNELS * n) >= 64), 1.4 * latency, latency)
    elif algorithm == "tree":
        latency = base + 2 * ((per_node - 1) * intra_lat + levels * inter_lat)
    elif algorithm == "nvls":
        latency = intra_lat + 0.0 * n
    elif algorithm == "nvls_tree":
        latency = base + intra_lat + 2 * levels * inter_lat
    else:
        latency = base + levels * inter_lat / 3.5 + 2.8 * n
    return latency * US


def _candidate(op, algorithm, protocol, cluster: Cluster, n, nodes, per_node, size, architecture):
    """(latency s, algorithm bandwidth B/s, enabled) of one algorithm and protocol; arrays broadcast."""
    bus = _bus_bandwidth(op, algorithm, protocol, cluster, nodes, per_node, architecture)
    steps = 2 * (n - 1) if op == "all_reduce" else n - 1
    if algorithm == "tree":
        bandwidth = 0.5 * bus * _tree_correction(PROTOCOLS.index(protocol), size)
    elif algorithm == "ring" or (algorithm != "pat" and op == "all_reduce"):
        bandwidth = bus * n / np.maximum(steps, 1)  # busBw to algBw
    else:  # NVLS and PAT all-gather / reduce-scatter: tuning.cc converts no bus bandwidth
        bandwidth = bus
    enabled = _enabled(op, algorithm, protocol, cluster, nodes, per_node, architecture)
    latency = _latency_s(op, algorithm, protocol, cluster, n, nodes, per_node, size)
    return latency, bandwidth, enabled & (bandwidth > 0)


def _weighed(op, cluster: Cluster, pairs, n, nodes, per_node, size, architecture):
    """[(algorithm, protocol, latency s, algorithm bandwidth B/s, time s)] of each pair, broadcast to the arguments'
    shape; the time is infinite where NCCL would not run that pair."""
    shape = np.broadcast(n, nodes, size).shape
    weighed = []
    for algorithm, protocol in pairs:
        latency, bandwidth, enabled = _candidate(
            op, algorithm, protocol, cluster, n, nodes, per_node, size, architecture
        )
        latency, bandwidth = np.broadcast_to(latency, shape), np.broadcast_to(bandwidth, shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            time = np.where(enabled, latency + size / np.where(enabled, bandwidth, 1.0), np.inf)
        weighed.append((algorithm, protocol, latency, bandwidth, time))
    return weighed


def candidates(op, cluster: Cluster, ranks, nodes, payload_bytes) -> tuple[dict, ...]:
    """Every algorithm and protocol NCCL's tuner weighs for one call of ``op`` by ``ranks`` ranks on ``nodes``
    nodes of ``cluster`` (scalars): one dict each, ``algorithm``, ``protocol``, ``latency_s``,
    ``bandwidth_bytes_per_s`` and ``time_s``, fastest first. The first is what ``estimate`` picks. The times are the
    tuner's, without the cluster's launch floor (which ``estimate`` adds to the pick).

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.units import format_time
    >>> for row in candidates("all_reduce", DGX_H100, 8, 1, 1e9)[:3]:
    ...     print(row["algorithm"], row["protocol"], format_time(row["time_s"]))
    nvls Simple 2.99 ms
    ring Simple 4.78 ms
    ring LL128 5.17 ms

    By hand, NVLink at NCCL's 370.8 GB/s: NVLS 25 µs + 1 GB / (370.8 × 0.85 × 15/16 × 2 × 8/14 GB/s); the ring
    with Simple (8.4 + 14 × 3.4) µs + 1 GB / (370.8 × 8/14 GB/s); with LL128 (14 + 14 × 1.9) µs at 0.92 of that.
    """
    for name, value in (("ranks", ranks), ("nodes", nodes), ("payload_bytes", payload_bytes)):
        if np.ndim(value):
            raise ValueError(f"{name} must be one number for candidates(), got an array of shape {np.shape(value)}")
    n, nodes_, per_node, size, architecture = _group(op, cluster, ranks, nodes, payload_bytes)
    pairs = [(algorithm, protocol) for algorithm in _ALGORITHMS_FOR[op] for protocol in PROTOCOLS]
    rows = [
        {"algorithm": a, "protocol": p, "latency_s": float(latency), "bandwidth_bytes_per_s": float(bandwidth),
         "time_s": float(time)}
        for a, p, latency, bandwidth, time in _weighed(op, cluster, pairs, n, nodes_, per_node, size, architecture)
        if np.isfinite(time)
    ]  # fmt: skip
    return tuple(sorted(rows, key=lambda row: row["time_s"]))


def estimate(op, cluster: Cluster, ranks, nodes, payload_bytes, *, algorithm=None, protocol=None) -> NcclEstimate:
    """NCCL's expected time for one call of ``op`` by ``ranks`` ranks spread evenly over ``nodes`` nodes of
    ``cluster``, moving ``payload_bytes``: the fastest algorithm and protocol of its tuner, or the ones given
    (``algorithm=``/``protocol=``, like ``NCCL_ALGO``/``NCCL_PROTO``). Arguments may be arrays (they broadcast). A
    group of one rank, or an empty payload, takes 0 s.

    Two nodes of 8 × H100 on InfiniBand: a 16 KiB all-reduce runs the tree with LL (latency-bound), 1 GiB the
    NVLS tree with Simple:

    >>> from course_lib.hardware import NEBIUS_H100_IB
    >>> from course_lib.units import format_time
    >>> for size in (16 * 1024, 2**30):
    ...     call = estimate("all_reduce", NEBIUS_H100_IB, 16, 2, size)
    ...     print(call.algorithm, call.protocol, format_time(call.time_s))
    tree LL 31.2 µs
    nvls_tree Simple 3.48 ms
    >>> format_time(estimate("all_reduce", NEBIUS_H100_IB, 16, 2, 2**30, algorithm="ring").time_s)
    '5.62 ms'
    """
    n, nodes_, per_node, size, architecture = _group(op, cluster, ranks, nodes, payload_bytes)
    algorithms = _ALGORITHMS_FOR[op]
    if algorithm is not None:
        _check.choice("algorithm", algorithm, algorithms)
        algorithms = (algorithm,)
    protocols = PROTOCOLS if protocol is None else (_check.choice("protocol", protocol, PROTOCOLS),)
    pairs = [(a, p) for a in algorithms for p in protocols if not (p != "Simple" and a in _SIMPLE_ONLY)]
    if not pairs:
        raise ValueError(
            f"protocol must be 'Simple' for algorithm {algorithm!r} (NCCL runs it with no other), got {protocol!r}"
        )
    weighed = _weighed(op, cluster, pairs, n, nodes_, per_node, size, architecture)
    latencies, bandwidths = [w[2] for w in weighed], [w[3] for w in weighed]
    times = np.stack([w[4] for w in weighed])
    if np.any(np.all(np.isinf(times), axis=0)):
        raise ValueError(
            f"algorithm {algorithm!r} does not run {op} on this group (nvls: one node of Hopper or later; nvls_tree: "
            "several nodes of Hopper or later; pat: one GPU per node; tree: all_reduce only)"
        )
    best = np.argmin(times, axis=0)
    pick = lambda stacked: np.take_along_axis(np.stack(stacked), best[None], axis=0)[0]  # noqa: E731
    time = np.min(times, axis=0)
    idle = (n == 1) | (size == 0)
    names = np.array([a for a, _ in pairs]), np.array([p for _, p in pairs])
    algorithm_, protocol_ = names[0][best], names[1][best]
    scalar = not np.ndim(time)
    return NcclEstimate(
        op=op,
        ranks=ranks,
        nodes=nodes,
        payload_bytes=payload_bytes,
        algorithm=str(algorithm_) if scalar else algorithm_,
        protocol=str(protocol_) if scalar else protocol_,
        latency_s=_check.as_result(np.where(idle, 0.0, pick(latencies))),
        bandwidth_bytes_per_s=_check.as_result(pick(bandwidths)),
        time_s=_check.as_result(np.where(idle, 0.0, cluster.launch_floor_s + time)),
        launch_floor_s=_check.as_result(np.where(idle, 0.0, cluster.launch_floor_s)),
    )


def p2p_link(cluster: Cluster, across_nodes):
    """(latency s, one-way bandwidth B/s) of one point-to-point message between two GPUs of ``cluster``: over the
    network when ``across_nodes`` (each GPU's share of its node's NICs; the network's latency and the fabric's), else
    over NVLink as NCCL counts it. ``across_nodes`` may be an array of booleans.

    >>> from course_lib.hardware import NEBIUS_H100_IB
    >>> from course_lib.units import format_bandwidth
    >>> [format_bandwidth(p2p_link(NEBIUS_H100_IB, spans)[1]) for spans in (False, True)]
    ['371 GB/s', '50 GB/s']
    """
    if not isinstance(cluster, Cluster):
        raise ValueError(f"cluster must be a hardware.Cluster, got {type(cluster).__name__}")
    inter, intra = cluster.inter_node_link, cluster.intra_node_link
    spans = np.asarray(across_nodes, dtype=bool)
    latency = np.where(spans, inter.latency_s + inter.fabric_latency_s, intra.latency_s + intra.fabric_latency_s)
    bandwidth = np.where(spans, cluster.inter_bandwidth_bytes_per_s, cluster.nccl_intra_bandwidth_bytes_per_s)
    return _check.as_result(latency), _check.as_result(bandwidth)


def send_recv(cluster: Cluster, ranks, nodes, payload_bytes) -> NcclEstimate:
    """One point-to-point message of ``payload_bytes`` from each of ``ranks`` ranks on ``nodes`` nodes of ``cluster``
    to the next (nccl-tests' sendrecv_perf: every rank sends to rank + 1 and receives from rank − 1 at once, each
    pair on its own links): an ``NcclEstimate`` with algorithm "p2p", protocol "Simple". The slowest message sets the
    time: over the network (``p2p_link``) when the group spans nodes, else over NVLink; T = launch floor + α + S / B.
    Arguments may be arrays (they broadcast); a group of one rank takes 0 s.

    >>> from course_lib.hardware import NEBIUS_H100_IB
    >>> from course_lib.units import format_time
    >>> [format_time(send_recv(NEBIUS_H100_IB, 8 * nodes, nodes, 1e9).time_s) for nodes in (1, 2)]   # 1 GB
    ['2.7 ms', '20 ms']
    """
    n, nodes_, _per_node, size, _architecture = _placed_group(cluster, ranks, nodes, payload_bytes)
    latency, bandwidth = p2p_link(cluster, nodes_ > 1)
    alone = n == 1
    time = np.where(alone, 0.0, cluster.launch_floor_s + latency + size / bandwidth)
    scalar = not np.ndim(time)
    return NcclEstimate(
        op="send_recv",
        ranks=ranks,
        nodes=nodes,
        payload_bytes=payload_bytes,
        algorithm="p2p" if scalar else np.full(np.shape(time), "p2p"),
        protocol="Simple" if scalar else np.full(np.shape(time), "Simple"),
        latency_s=_check.as_result(np.broadcast_to(latency, np.shape(time))),
        bandwidth_bytes_per_s=_check.as_result(np.broadcast_to(bandwidth, np.shape(time))),
        time_s=_check.as_result(time),
        launch_floor_s=_check.as_result(np.where(alone, 0.0, cluster.launch_floor_s)),
    )


def all_to_all(cluster: Cluster, ranks, nodes, payload_bytes) -> NcclEstimate:
    """NCCL's all-to-all of ``payload_bytes`` (S, what each rank holds in all, S/n per destination) by ``ranks`` (n)
    ranks spread evenly over ``nodes`` (N) nodes of ``cluster``, k = n/N on each: an ``NcclEstimate`` with algorithm
    "p2p". Arguments may be arrays (they broadcast); one rank, or an empty payload, takes 0 s.

    NCCL runs no ring or tree for it: ``ncclAlltoAll`` appends one ``ncclSend`` and one ``ncclRecv`` per rank to a
    group (src/enqueue.cc, ``ncclFuncAlltoAll``; nccl-tests' alltoall_perf calls ncclGroupStart, n × (ncclSend,
    ncclRecv), ncclGroupEnd), and the group's point-to-point schedule (src/init.cc, ``ncclP2pSchedule``) runs the
    peers over several channels at once. The course takes every peer as concurrent, so each GPU's links carry its
    bytes at once:

    - the (k − 1)/n·S for peers on its node over NVLink (NVSwitch: every pair at full bandwidth B_NVLink),
    - the (n − k)/n·S for peers on other nodes through its share of the node's NICs, B_net,

    T = floor + α + max((k − 1)/n·S / B_NVLink, (n − k)/n·S / B_net), with the cluster's launch floor and α the
    network's (``p2p_link``) when the group spans nodes, else NVLink's. On one node T = floor + α + (n − 1)/n·S /
    B_NVLink, so nccl-tests' busbw = (n − 1)/n·S/T tends to B_NVLink. The protocol reported is NCCL's rule with one
    channel: LL when one message S/n is at most ``P2P_LL_THRESHOLD_BYTES``, else Simple. The time is the same for both:
    LL's lower latency and its halved bandwidth (8-byte lines carrying 4 bytes of data) are not modelled, since NCCL's
    tuner has no point-to-point latencies to copy, and halving the bandwidth alone would make a message just below the
    threshold slower than one just above it. Not modelled either: PXN (a message sent through the NVLink peer on the
    destination's rail) and the network's congestion.

    Eight H100s on one node, then sixteen on two nodes (B_net = 50 GB/s: 15/16 − 7/16 = 1/2 of S leaves the node):

    >>> from course_lib.hardware import NEBIUS_H100_IB
    >>> from course_lib.units import format_time
    >>> one, two = all_to_all(NEBIUS_H100_IB, 8, 1, 1e9), all_to_all(NEBIUS_H100_IB, 16, 2, 1e9)
    >>> one.algorithm, one.protocol, format_time(one.time_s), format_time(two.time_s)
    ('p2p', 'Simple', '2.37 ms', '10 ms')
    """
    n, nodes_, per_node, size, _architecture = _placed_group(cluster, ranks, nodes, payload_bytes)
    spans = nodes_ > 1
    latency, network = p2p_link(cluster, spans)
    nvlink = cluster.nccl_intra_bandwidth_bytes_per_s
    local_s = (per_node - 1) / n * size / nvlink
    remote_s = np.where(spans, (n - per_node) / n * size / network, 0.0)
    idle = (n == 1) | (size == 0)
    transfer_s = np.where(idle, 0.0, np.maximum(local_s, remote_s))
    time = np.where(idle, 0.0, cluster.launch_floor_s + latency + transfer_s)
    with np.errstate(divide="ignore", invalid="ignore"):
        bandwidth = np.where(transfer_s > 0, size / np.where(transfer_s > 0, transfer_s, 1.0), np.inf)
    scalar = not np.ndim(time)
    protocol = np.where(size / n <= P2P_LL_THRESHOLD_BYTES, "LL", "Simple")
    return NcclEstimate(
        op="all_to_all",
        ranks=ranks,
        nodes=nodes,
        payload_bytes=payload_bytes,
        algorithm="p2p" if scalar else np.full(np.shape(time), "p2p"),
        protocol=str(protocol) if scalar else np.broadcast_to(protocol, np.shape(time)).copy(),
        latency_s=_check.as_result(np.where(idle, 0.0, latency)),
        bandwidth_bytes_per_s=_check.as_result(bandwidth),
        time_s=_check.as_result(time),
        launch_floor_s=_check.as_result(np.where(idle, 0.0, cluster.launch_floor_s)),
    )
