"""The table of measured collective times: ``Row`` (one op, algorithm and size), ``Measurements`` (the rows and
the run's conditions, to and from CSV), ``parse_sizes`` (sizes as nccl-tests writes them, ``"8B:64MB"``) and where the
course keeps its recorded tables (``DATA_DIR``).

A row from timed iterations keeps what ``course_lib.measure`` documents: the median and the 10th and 90th percentiles
of the iterations' times, algbw = S/t and busbw = algbw · ``collectives.busbw_factor(op, p)``.
"""

from __future__ import annotations

import csv
import importlib.resources
import io
import json
import re
import typing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .. import _check, collectives, units

__all__ = ["DATA_DIR", "OPS", "Row", "Measurements", "parse_sizes"]

# The course's data folder, course_lib/data/ (package data, so in every install): the recorded MPI runs (mpi/) and the
# published nccl-tests logs (nccl_tests/) that lesson 07 and lab 8 read. importlib.resources finds it wherever
# course_lib is installed; for a package on the file system, which every pip install (editable or not) leaves, that
# is a pathlib.Path, which Path() keeps, so callers can glob it.
DATA_DIR = Path(str(importlib.resources.files("course_lib") / "data"))
# The collectives MPI can time here: nccl-tests' ops (send_recv is point-to-point, not a collective).
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all")


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
    cores, or the source of a published log) and, under ``"nodes"``, on how many nodes the ranks ran (``nodes``).
    Columns are available as numpy arrays (``table.median_s``, ...).

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

    @property
    def nodes(self) -> int | None:
        """The nodes the ranks ran on, evenly spread (``conditions["nodes"]``: 1 for ``run_collective_sweep``, whose
        ranks share this machine; given to ``read_nccl_tests`` or read from its log), or None if the table does not
        say.

        >>> Measurements((), {"nodes": 2}).nodes, Measurements(()).nodes
        (2, None)
        """
        value = self.conditions.get("nodes")
        return None if value is None else _check.count("nodes", value)

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
