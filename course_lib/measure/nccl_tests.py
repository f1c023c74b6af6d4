"""nccl-tests' logs (all_reduce_perf, all_gather_perf, ...) read into a ``Measurements`` table: its full data rows
or the short excerpts some publications keep, the rank count from its ``#  Rank`` lines or from busbw/algbw.
"""

from __future__ import annotations

import re

import numpy as np

from .. import _check, collectives, units
from .tables import OPS, Measurements, Row

__all__ = ["read_nccl_tests"]

_NCCL_ROW = re.compile(
    r"(?P<size>\d+)\s+(?P<count>\d+)\s+(?P<type>\w+)\s+(?P<redop>\w+)\s+(?P<root>-?\d+)"
    r"\s+(?P<time>[\d.]+)\s+(?P<algbw>[\d.]+)\s+(?P<busbw>[\d.]+)\s+(?P<wrong>\S+)"
    r"\s+(?P<time_in>[\d.]+)\s+(?P<algbw_in>[\d.]+)\s+(?P<busbw_in>[\d.]+)\s+(?P<wrong_in>\S+)"
)
# Some published excerpts keep only size, time, algbw and busbw (thousands separated with "_").
_SHORT_ROW = re.compile(r"(?P<size>[\d_]+)\s+(?P<time>[\d.]+)\s+(?P<algbw>[\d.]+)\s+(?P<busbw>[\d.]+)")
_PREFIX = re.compile(r"^\s*(?:\[\d+,\d+\]<stdout>:|\d+:(?=\s))?\s*")
_NCCL_OPS = {f"{op}_perf": op for op in OPS} | {"alltoall_perf": "all_to_all", "sendrecv_perf": "send_recv"}
_READ_OPS = (*OPS, "send_recv")  # sendrecv_perf: point-to-point, busbw = algbw (sendrecv.cu, SendRecvGetBw)


def _ranks_from_ratio(op, rows):
    """n from busbw/algbw = busbw_factor(op, n), read on the row with the largest algbw (least rounding)."""
    if op == "send_recv":
        raise ValueError("ranks must be given for send_recv: its busbw equals algbw whatever the rank count")
    size, time_s, algbw, busbw = max(rows, key=lambda r: r[2])
    if algbw <= 0:
        raise ValueError("ranks must be given: the log has no rank lines and no non-zero algbw to infer it from")
    ratio = busbw / algbw
    candidates = np.arange(2, 4097)
    errors = np.abs(collectives.busbw_factor(op, candidates) - ratio)
    if errors.min() <= 0.002 * ratio:  # the log's columns have 2 decimals
        return int(candidates[np.argmin(errors)])
    raise ValueError(f"ranks must be given: busbw/algbw = {ratio:.4f} matches no rank count for op={op!r}")


def read_nccl_tests(text, op=None, ranks=None, placement="out_of_place", nodes=None):
    """Parse nccl-tests output (all_reduce_perf, all_gather_perf, ..., sendrecv_perf) into a ``Measurements`` table.

    ``op`` is read from the ``<op>_perf`` name in the text when not given; ``ranks`` from the ``#  Rank`` lines
    nccl-tests prints, else from busbw/algbw (= ``collectives.busbw_factor(op, n)``; 1 for send_recv, whose ranks must
    then be given). ``nodes``, the nodes the ranks
    ran on (an integer ≥ 1 dividing ``ranks``), from the hosts those lines name (``... on <host> device ...``) when
    not given, else unknown; the table keeps it as ``conditions["nodes"]`` (``Measurements.nodes``), which
    ``calibrate_cluster`` needs. ``placement`` picks the out-of-place or in-place columns. Times are nccl-tests'
    average over its iterations (so median = p10 = p90); algbw and busbw are the log's own columns, in bytes/s. A
    log reporting wrong results, or whose data lines do not parse, raises ``ValueError``.

    >>> log = '''#  Rank  0 Group  0 Pid  101 on node-a device  0 [0x1b] NVIDIA H100 80GB HBM3
    ... #  Rank  1 Group  0 Pid  102 on node-b device  0 [0x1b] NVIDIA H100 80GB HBM3
    ...      1024   256  float  sum  -1   20.00   0.05   0.05   0   20.00   0.05   0.05   0'''
    >>> table = read_nccl_tests(log, op="all_reduce")
    >>> table.ranks, table.nodes
    (2, 2)
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be the log's text (a str), got {type(text).__name__}")
    _check.choice("placement", placement, ("out_of_place", "in_place"))
    if op is None:
        found = {_NCCL_OPS[name] for name in re.findall(r"\b(\w+_perf)\b", text) if name in _NCCL_OPS}
        if len(found) != 1:
            raise ValueError(f"op must be given: the log names {sorted(found) or 'no'} nccl-tests binary")
        op = found.pop()
    _check.choice("op", op, _READ_OPS)
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
    nodes = _nodes(text, ranks, nodes)
    iterations = re.search(r"\biters:\s*(\d+)", text)
    rows = tuple(
        Row(op, "nccl", ranks, size, t * units.US, t * units.US, t * units.US, a * units.GB, b * units.GB,
            int(iterations[1]) if iterations else 0, False)
        for size, t, a, b in parsed
    )  # fmt: skip
    conditions = {"source": "nccl-tests log", "placement": placement, "time": "nccl-tests average over iterations"}
    return Measurements(rows, conditions | ({} if nodes is None else {"nodes": nodes}))


def _nodes(text, ranks, nodes):
    """``nodes`` checked (an integer ≥ 1 dividing ``ranks``), or the distinct hosts of the log's rank lines, or None."""
    hosts = set(re.findall(r"#\s*Rank\s+\d+\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device", text))
    if nodes is None:
        nodes = len(hosts) or None
        if nodes is None:
            return None
    nodes = _check.count("nodes", nodes)
    if ranks % nodes:
        raise ValueError(f"nodes must divide ranks (the same number of ranks on each node): {ranks} ranks on {nodes}")
    if hosts and len(hosts) != nodes:
        raise ValueError(f"nodes must match the log, whose rank lines name {len(hosts)} hosts; got nodes={nodes}")
    return nodes
