"""Units: SI base-unit constants and the formatters that turn them into readable text.

Every function in course_lib takes and returns SI base units (bytes, seconds, bytes/s, FLOP, FLOP/s). Prefixes
are decimal by default, as in the papers and in nccl-tests (1 GB = 1e9 bytes, so 100 MB at 50 GB/s is 2 ms);
binary prefixes (KiB, MiB, ...) are separate names. Conversion for display happens here and nowhere else.

>>> 100 * MB / (50 * GB)   # seconds
0.002
>>> format_time(4 * 5 * US + 100 * MB / (50 * GB))
'2.02 ms'
"""

from __future__ import annotations

import math
import numbers

from . import _check

__all__ = [
    "format_seq_len",
    "format_zero_stages",
    "KB",
    "MB",
    "GB",
    "TB",
    "PB",
    "KiB",
    "MiB",
    "GiB",
    "TiB",
    "NS",
    "US",
    "MS",
    "S",
    "MINUTE",
    "HOUR",
    "DAY",
    "TFLOP",
    "PFLOP",
    "GBIT",
    "format_quantity",
    "format_bytes",
    "format_time",
    "format_time_band",
    "format_bandwidth",
    "format_flops",
    "format_flops_rate",
    "format_count",
    "format_percent",
]

# Decimal (SI) byte prefixes: the convention of ZeRO, Megatron-LM, nccl-tests and hardware datasheets.
KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
PB = 1e15
# Binary (IEC) prefixes: what nvidia-smi and most operating systems print.
KiB = 2.0**10
MiB = 2.0**20
GiB = 2.0**30
TiB = 2.0**40
# Time.
NS = 1e-9
US = 1e-6
MS = 1e-3
S = 1.0
MINUTE = 60.0
HOUR = 3600.0
DAY = 86400.0
# Work and link rates.
TFLOP = 1e12
PFLOP = 1e15
GBIT = 1e9 / 8  # bytes in a gigabit: network links are sold in Gb/s (200 Gb/s HDR InfiniBand = 25 GB/s)

_DECIMAL = [
    (1e-12, "p"),
    (1e-9, "n"),
    (1e-6, "µ"),
    (1e-3, "m"),
    (1.0, ""),
    (1e3, "k"),
    (1e6, "M"),
    (1e9, "G"),
    (1e12, "T"),
    (1e15, "P"),
    (1e18, "E"),
]
_BINARY = [(1.0, ""), (KiB, "Ki"), (MiB, "Mi"), (GiB, "Gi"), (TiB, "Ti"), (2.0**50, "Pi"), (2.0**60, "Ei")]


def _significant(x: float, digits: int) -> str:
    """``x`` to ``digits`` significant figures, trailing zeros dropped, never in exponent form (1 ≤ x < 10000)."""
    decimals = max(digits - 1 - int(math.floor(math.log10(abs(x)))), 0) if x else 0
    text = f"{x:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_quantity(value: float, unit: str, *, digits: int = 3, binary: bool = False, min_prefix: str = "p") -> str:
    """Format ``value`` (in the base unit ``unit``) with the prefix that keeps the mantissa in [1, 1000).

    >>> format_quantity(0.00202, "s")
    '2.02 ms'
    >>> format_quantity(1536, "B", binary=True)
    '1.5 KiB'
    >>> format_quantity(0, "B")
    '0 B'
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise ValueError(f"value must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"value must be finite, got {value!r}")
    _check.count("digits", digits)
    if value == 0:
        return f"0 {unit}"
    table = _BINARY if binary else _DECIMAL[[p for _, p in _DECIMAL].index(min_prefix) :]
    if not binary:
        value = float(f"{value:.{digits}g}")  # round first, so 999.7 MB carries over to "1 GB"
    scale, prefix = table[0]
    for candidate_scale, candidate_prefix in table:
        if abs(value) >= candidate_scale:
            scale, prefix = candidate_scale, candidate_prefix
    mantissa = float(f"{value / scale:.{digits}g}")
    if binary and abs(mantissa) >= 1024 and (scale, prefix) != table[-1]:
        scale, prefix = table[table.index((scale, prefix)) + 1]
        mantissa = float(f"{value / scale:.{digits}g}")
    return f"{_significant(mantissa, digits)} {prefix}{unit}"


def format_bytes(size_bytes: float, *, binary: bool = False, digits: int = 3) -> str:
    """Format a size: decimal prefixes by default, binary (IEC) with ``binary=True``.

    >>> format_bytes(100e6)
    '100 MB'
    >>> format_bytes(80 * GiB, binary=True)
    '80 GiB'
    >>> format_bytes(80 * GiB)
    '85.9 GB'
    """
    return format_quantity(size_bytes, "B", binary=binary, digits=digits, min_prefix="")


def format_time(time_s: float, *, digits: int = 3) -> str:
    """Format a duration: ns … s, then min, h and days for long runs.

    >>> format_time(2.02e-3)
    '2.02 ms'
    >>> format_time(5e-6)
    '5 µs'
    >>> format_time(2.93e6)
    '33.9 days'
    """
    seconds = float(time_s)
    if not math.isfinite(seconds):
        raise ValueError(f"time_s must be finite, got {time_s!r}")
    for length, name in ((DAY, "days"), (HOUR, "h"), (MINUTE, "min")):
        if abs(seconds) >= 100 and abs(seconds) >= length:
            return f"{_significant(float(f'{seconds / length:.{digits}g}'), digits)} {name}"
    return format_quantity(seconds, "s", digits=digits)


def format_time_band(time_s: float, low_s: float, high_s: float) -> str:
    """Format a duration with its band, the band to two digits and its unit written once when both ends share it.

    >>> format_time_band(2.31, 1.9, 4.04), format_time_band(0.85, 0.64, 2.7), format_time_band(2.0, 2.0, 2.0)
    ('2.31 s (1.9–4 s)', '850 ms (640 ms–2.7 s)', '2 s')
    """
    point = format_time(time_s)
    if low_s == time_s == high_s:
        return point
    (low, low_unit), (high, high_unit) = (format_time(t, digits=2).rsplit(" ", 1) for t in (low_s, high_s))
    return (
        f"{point} ({low}–{high} {high_unit})"
        if low_unit == high_unit
        else f"{point} ({low} {low_unit}–{high} {high_unit})"
    )


def format_bandwidth(bandwidth_bytes_per_s: float, *, digits: int = 3) -> str:
    """Format a bandwidth in bytes per second.

    >>> format_bandwidth(50e9)
    '50 GB/s'
    """
    return format_quantity(bandwidth_bytes_per_s, "B/s", digits=digits, min_prefix="")


def format_flops(flops: float, *, digits: int = 3) -> str:
    """Format an amount of work in floating-point operations (exponent form beyond exa).

    >>> format_flops(2 * 4096**3)
    '137 GFLOP'
    >>> format_flops(6.3e24)
    '6.3e24 FLOP'
    """
    value = float(flops)
    if math.isfinite(value) and abs(value) >= 1e21:
        mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
        return f"{_significant(float(mantissa), digits)}e{int(exponent)} FLOP"
    return format_quantity(value, "FLOP", digits=digits, min_prefix="")


def format_flops_rate(flops_per_s: float, *, digits: int = 3) -> str:
    """Format a compute rate.

    >>> format_flops_rate(312e12)
    '312 TFLOP/s'
    """
    return format_quantity(flops_per_s, "FLOP/s", digits=digits, min_prefix="")


def format_count(number: float, *, digits: int = 3) -> str:
    """Format a large count (parameters, tokens) in words.

    >>> format_count(175e9)
    '175 billion'
    >>> format_count(1.008e12)
    '1.01 trillion'
    >>> format_count(8192)
    '8192'
    """
    value = float(number)
    if not math.isfinite(value):
        raise ValueError(f"number must be finite, got {number!r}")
    for scale, word in ((1e12, "trillion"), (1e9, "billion"), (1e6, "million")):
        if abs(value) >= scale:
            return f"{_significant(float(f'{value / scale:.{digits}g}'), digits)} {word}"
    return f"{value:.0f}" if value == round(value) else _significant(float(f"{value:.{digits}g}"), digits)


def format_zero_stages(stages) -> str:
    """Format a set of ZeRO stages as the course writes them: "ZeRO-0/1", or "none" for no stage.

    >>> format_zero_stages((0, 1)), format_zero_stages(()), format_zero_stages([3])
    ('ZeRO-0/1', 'none', 'ZeRO-3')
    """
    stages = tuple(stages)
    if any(isinstance(s, bool) or not isinstance(s, numbers.Integral) or not 0 <= int(s) <= 3 for s in stages):
        raise ValueError(f"stages must be ZeRO stages (whole numbers 0 to 3), got {stages!r}")
    return "ZeRO-" + "/".join(str(stage) for stage in stages) if stages else "none"


def format_seq_len(tokens: int) -> str:
    """Format a sequence length as models state it, in binary k (2¹⁰) and M (2²⁰) tokens, whole ones.

    >>> format_seq_len(32768), format_seq_len(131072), format_seq_len(2**20)
    ('32k', '128k', '1M')
    """
    if isinstance(tokens, bool) or not isinstance(tokens, numbers.Integral) or tokens < 1:
        raise ValueError(f"tokens must be a whole number ≥ 1, got {tokens!r}")
    return f"{tokens // 2**20}M" if tokens >= 2**20 else f"{tokens // 2**10}k"


def format_percent(share: float, *, digits: int = 3) -> str:
    """Format a share (0.052 → '5.2 %').

    >>> format_percent(0.4375)
    '43.8 %'
    """
    value = float(share) * 100
    if not math.isfinite(value):
        raise ValueError(f"share must be finite, got {share!r}")
    return f"{_significant(float(f'{value:.{digits}g}'), digits) if value else '0'} %"
