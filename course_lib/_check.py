"""Argument checks shared by every public function (one place for the error messages).

Each check accepts a Python scalar or a numpy array, so the same public formula can be called on one value
in a lesson and on arrays of candidate plans in the plan search. A failed check raises ``ValueError`` naming
the parameter and the accepted range. Scalars come back as Python ``int``/``float``; arrays as ndarrays.
"""

from __future__ import annotations

import csv
import math
from numbers import Integral, Real
from pathlib import Path
from typing import TypeAlias, overload

import numpy as np

__all__ = [
    "count",
    "scalar_count",
    "positive",
    "scalar_positive",
    "nonnegative",
    "fraction",
    "choice",
    "flag",
    "csv_rows",
    "is_integer",
    "is_number",
    "as_result",
    "IntOrArray",
    "FloatOrArray",
]

# What a check returns and a formula computes: a Python int or float for a scalar argument, an ndarray for an array
# (one value per payload, per candidate plan, ...). A result's field typed with one holds whichever its inputs were.
IntOrArray: TypeAlias = "int | np.ndarray"
FloatOrArray: TypeAlias = "float | np.ndarray"


def is_integer(value) -> bool:
    """A scalar whole number (Python or numpy), not a bool: what a count may be.

    >>> import numpy as np
    >>> is_integer(3), is_integer(np.int64(3)), is_integer(3.0), is_integer(True)
    (True, True, False, False)
    """
    return isinstance(value, Integral) and not isinstance(value, (bool, np.bool_))


def is_number(value) -> bool:
    """A scalar real number (Python or numpy), not a bool.

    >>> import numpy as np
    >>> is_number(2.5), is_number(np.float32(2.5)), is_number("2.5"), is_number(False)
    (True, True, False, False)
    """
    return isinstance(value, Real) and not isinstance(value, (bool, np.bool_))


def _first_bad(array: np.ndarray, bad: np.ndarray):
    return array[bad].flat[0] if array.ndim else array.item()


def _reject_non_numbers(name: str, value) -> np.ndarray:
    if isinstance(value, (bool, np.bool_)) or isinstance(value, (str, bytes)) or value is None:
        raise ValueError(f"{name} must be a number, got {value!r}")
    try:
        array = np.asarray(value)
    except Exception as error:  # e.g. ragged sequences
        raise ValueError(f"{name} must be a number or an array of numbers, got {value!r}") from error
    if array.dtype == bool or not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        raise ValueError(f"{name} must be a number or an array of numbers, got {value!r}")
    if array.size == 0:
        raise ValueError(f"{name} must not be empty")
    return array


@overload
def count(name: str, value: float, minimum: int = 1) -> int: ...
@overload
def count(name: str, value: object, minimum: int = 1) -> IntOrArray: ...
def count(name: str, value, minimum: int = 1):
    """Check a whole-number count (ranks, layers, micro-batches) is an integer ≥ ``minimum``.

    Integer-valued floats such as ``4.0`` or ``1e3`` are accepted and returned as integers.

    >>> count("ranks", 8)
    8
    >>> count("ranks", 0)
    Traceback (most recent call last):
    ...
    ValueError: ranks must be an integer ≥ 1, got 0
    """
    if is_integer(value):
        if value < minimum:
            raise ValueError(f"{name} must be an integer ≥ {minimum}, got {value!r}")
        return int(value)
    array = _reject_non_numbers(name, value)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(array) | (array != np.floor(array)) | (array < minimum)
    if np.any(bad):
        raise ValueError(f"{name} must be an integer ≥ {minimum}, got {_first_bad(array, bad)!r}")
    result = array.astype(np.int64)
    return int(result) if result.ndim == 0 else result


@overload
def positive(name: str, value: float) -> float: ...
@overload
def positive(name: str, value: object) -> FloatOrArray: ...
def positive(name: str, value):
    """Check a size, rate or time is finite and > 0.

    >>> positive("bandwidth_bytes_per_s", 50e9)
    50000000000.0
    >>> positive("bandwidth_bytes_per_s", 0)
    Traceback (most recent call last):
    ...
    ValueError: bandwidth_bytes_per_s must be finite and > 0, got 0
    """
    if is_number(value):
        if not math.isfinite(value) or value <= 0:  # numbers.Real defines < and <=, not > or >=
            raise ValueError(f"{name} must be finite and > 0, got {value!r}")
        return float(value)
    array = _reject_non_numbers(name, value)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(array) | (array <= 0)
    if np.any(bad):
        raise ValueError(f"{name} must be finite and > 0, got {_first_bad(array, bad)!r}")
    return float(array) if array.ndim == 0 else array.astype(float)


@overload
def nonnegative(name: str, value: float) -> float: ...
@overload
def nonnegative(name: str, value: object) -> FloatOrArray: ...
def nonnegative(name: str, value):
    """Check a quantity that may be zero (a latency, a reduction cost) is finite and ≥ 0.

    >>> nonnegative("latency_s", 0)
    0.0
    >>> nonnegative("latency_s", -1e-6)
    Traceback (most recent call last):
    ...
    ValueError: latency_s must be finite and ≥ 0, got -1e-06
    """
    if is_number(value):
        if not math.isfinite(value) or value < 0:  # numbers.Real defines < and <=, not > or >=
            raise ValueError(f"{name} must be finite and ≥ 0, got {value!r}")
        return float(value)
    array = _reject_non_numbers(name, value)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(array) | (array < 0)
    if np.any(bad):
        raise ValueError(f"{name} must be finite and ≥ 0, got {_first_bad(array, bad)!r}")
    return float(array) if array.ndim == 0 else array.astype(float)


def scalar_count(name: str, value, minimum: int = 1) -> int:
    """``count`` for an argument that must be one integer (a simulation's size), not an array.

    >>> scalar_count("stages", [2, 4])
    Traceback (most recent call last):
    ...
    ValueError: stages must be a single integer, not an array; got [2, 4]
    """
    result = count(name, value, minimum)
    if not isinstance(result, int):
        raise ValueError(f"{name} must be a single integer, not an array; got {value!r}")
    return result


def scalar_positive(name: str, value) -> float:
    """``positive`` for an argument that must be one number, not an array."""
    result = positive(name, value)
    if not isinstance(result, float):
        raise ValueError(f"{name} must be a single number, not an array; got {value!r}")
    return result


def fraction(name: str, value, *, allow_zero: bool = False):
    """Check an efficiency or share lies in (0, 1] (or [0, 1] with ``allow_zero``).

    >>> fraction("compute_efficiency", 1.5)
    Traceback (most recent call last):
    ...
    ValueError: compute_efficiency must be in (0, 1], got 1.5
    """
    low = "[0" if allow_zero else "(0"
    if is_number(value):
        too_low = value < 0 if allow_zero else value <= 0  # numbers.Real defines < and <=, not > or >=
        if not math.isfinite(value) or too_low or not value <= 1:
            raise ValueError(f"{name} must be in {low}, 1], got {value!r}")
        return float(value)
    raise ValueError(f"{name} must be a number in {low}, 1], got {value!r}")


def choice(name: str, value, options):
    """Check ``value`` is one of ``options`` (compared with ==; strings, ints or bools).

    >>> choice("op", "all_reduce", ("all_reduce", "all_gather"))
    'all_reduce'
    >>> choice("op", "allreduce", ("all_reduce", "all_gather"))
    Traceback (most recent call last):
    ...
    ValueError: op must be one of 'all_reduce', 'all_gather'; got 'allreduce'
    """
    for option in options:
        if type(value) is type(option) and value == option:
            return value
    raise ValueError(f"{name} must be one of {', '.join(repr(o) for o in options)}; got {value!r}")


def flag(name: str, value) -> bool:
    """Check a yes/no switch is a bool (not 0/1 or a string).

    >>> flag("sequence_parallel", "yes")
    Traceback (most recent call last):
    ...
    ValueError: sequence_parallel must be True or False, got 'yes'
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ValueError(f"{name} must be True or False, got {value!r}")


def csv_rows(path, *, what: str, column: str) -> list[dict]:
    """The rows of the CSV file at ``path`` (a dict per row, cells as text), checked once where a data file enters:
    it exists and has ``column`` (``what`` names the file in the message).

    >>> csv_rows("no/such.csv", what="the Playbook runs CSV", column="model")
    Traceback (most recent call last):
    ...
    ValueError: path must be the Playbook runs CSV; no/such.csv does not exist
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path must be {what}; {path} does not exist")
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows or column not in rows[0]:
        raise ValueError(f"path must be {what} with its columns ({column}, ...); {path} has none")
    return rows


@overload
def as_result(value: float) -> float: ...
@overload
def as_result(value: object) -> FloatOrArray: ...
def as_result(value):
    """Return a 0-d result as a Python float (readable in notebooks), arrays unchanged.

    >>> import numpy as np
    >>> as_result(np.float64(2.5))
    2.5
    """
    array = np.asarray(value)
    return float(array) if array.ndim == 0 else array
