"""What crosses between the grader and a sandboxed submission: plain data as JSON lines, never objects.

The grader (tools/grading_verifier.py, trusted, outside the sandbox) sends a question's inputs; the worker
(tools/grading_runner.py, in the sandbox, in the same process as the student's code) sends back what the answer
returned. Both sides use these two functions, written so that what the grader decodes can only be plain data:

- ``encode`` turns None, bools, ints, finite and non-finite floats, strings, lists, tuples, dicts, numpy scalars and
  arrays, and (only where ``dataclasses=True``: the grader's inputs) course_lib's dataclasses into JSON values;
  anything else becomes ``{"$opaque": its type's name}``;
- ``decode`` turns them back. A course_lib dataclass is rebuilt only where the caller passes ``build`` (the worker
  rebuilds the grader's inputs: ``Link``, ``ParallelPlan``, ``Cluster``, ...); the grader decodes answers without
  it, so an answer is at most None, a bool, a number, a string, or a list, tuple or dict of them. What cannot be
  read (an object, a dataclass) becomes an ``Opaque``, which equals nothing and converts to nothing.

Standard library only: the worker loads this file inside the sandbox beside the runner.

>>> decode(json.loads(json.dumps(encode({"tensor": (50331648, 3072), "note": float("nan")}))))
{'tensor': (50331648, 3072), 'note': nan}
>>> decode(encode(object()))
<an object the grader cannot read>
>>> decode(encode(Opaque("PlanResult")))
<a PlanResult the grader cannot read>
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import re
import time
import types

LINE_BYTES = 4 * 2**20  # the longest message the worker accepts (a test's inputs)
ANSWER_BYTES = 2**20  # the largest reply the worker sends as it is; a larger answer goes as an opaque object
REPLY_BYTES = ANSWER_BYTES + 2**12  # the longest reply the grader reads
DEPTH = 40  # nested lists, tuples, dicts and dataclasses
OPAQUE_NAME_CHARS = 60
# What the grader decodes is bounded before it is built (issue 39: a forged reply of 4 MiB whose dict keys all hashed
# alike took three minutes to build): a JSON object has at most OBJECT_KEYS keys, a list, tuple or dict at most
# ITEMS items, a whole value at most NODES of them, and a decoded dict only str keys, whose hashes Python randomises
# per process and which a reply cannot make collide (int keys n·(2**61 − 1) all hash to 0).
OBJECT_KEYS = 64
ITEMS = 2**17
NODES = 2**18
DEADLINE_EVERY = 2**12  # nodes between two looks at the clock


class Opaque:
    """An answer the grader cannot read (an object): it equals nothing, and ``number()`` of it is None."""

    __slots__ = ("type_name",)

    def __init__(self, type_name: str):
        words = re.sub(r"[^A-Za-z0-9_. ]", "", str(type_name))[:OPAQUE_NAME_CHARS].strip()
        self.type_name = words or "object"

    def __repr__(self) -> str:
        article = "an" if self.type_name[:1].lower() in "aeiou" else "a"
        return f"<{article} {self.type_name} the grader cannot read>"

    def __eq__(self, other) -> bool:
        return False

    __hash__ = None


def encode(value, dataclasses_too: bool = False, depth: int = 0):
    """``value`` as a JSON value (see the module's docstring); ``dataclasses_too`` for the grader's inputs."""
    if depth > DEPTH:
        raise ValueError(f"value nested deeper than {DEPTH} levels")
    if value is None or type(value) in (bool, int, str):
        return value
    if type(value) is float:
        return value if math.isfinite(value) else {"$float": repr(value)}
    if type(value).__module__ == "numpy":
        if hasattr(value, "tolist"):  # a numpy scalar or array: its Python value(s)
            return encode(value.tolist(), dataclasses_too, depth + 1)
    if type(value) in (list, tuple):
        items = [encode(item, dataclasses_too, depth + 1) for item in value]
        return items if type(value) is list else {"$tuple": items}
    if type(value) in (dict, types.MappingProxyType):  # a frozen dataclass's mapping field is a mappingproxy
        pairs = [[encode(key, dataclasses_too, depth + 1), encode(item, dataclasses_too, depth + 1)]
                 for key, item in value.items()]  # fmt: skip
        return {"$dict": pairs}
    if dataclasses_too and dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        if cls.__module__.startswith("course_lib."):
            fields = {
                field.name: encode(getattr(value, field.name), dataclasses_too, depth + 1)
                for field in dataclasses.fields(value)
                if field.init
            }
            return {"$dataclass": f"{cls.__module__}:{cls.__qualname__}", "fields": fields}
    if isinstance(value, Opaque):
        return {"$opaque": value.type_name}
    return {"$opaque": type(value).__name__}


class DecodeTimeout(Exception):
    """Decoding went past its deadline."""


def decode(data, build=None, deadline: float | None = None):
    """The value ``data`` (a JSON value made by ``encode``) stands for. ``build(qualified_name, fields)`` rebuilds
    a dataclass (the worker, for the grader's inputs); without it a dataclass decodes to an ``Opaque``, and a dict
    may only have str keys. Raises ValueError on anything ``encode`` does not make or past the bounds (DEPTH, ITEMS,
    NODES), DecodeTimeout past ``deadline`` (``time.monotonic()``), checked every DEADLINE_EVERY nodes.

    >>> decode({"$dict": [[1, 2]]})
    Traceback (most recent call last):
    ValueError: malformed dict key
    """
    return _decode(data, build, 0, [0], deadline)


def _decode(data, build, depth: int, count: list, deadline):
    if depth > DEPTH:
        raise ValueError(f"value nested deeper than {DEPTH} levels")
    count[0] += 1
    if count[0] > NODES:
        raise ValueError(f"value of more than {NODES} items")
    if deadline is not None and count[0] % DEADLINE_EVERY == 0 and time.monotonic() > deadline:
        raise DecodeTimeout("decoding ran past the deadline")
    if data is None or type(data) in (bool, int, float, str):
        return data
    if type(data) is list:
        if len(data) > ITEMS:
            raise ValueError(f"list of more than {ITEMS} items")
        return [_decode(item, build, depth + 1, count, deadline) for item in data]
    if type(data) is dict and len(data) <= 2:
        return _decode_object(data, build, depth, count, deadline)
    raise ValueError("not a value this protocol makes")


def _decode_object(data: dict, build, depth: int, count: list, deadline):
    """A tuple, dict, non-finite float, opaque object or dataclass, as ``encode`` writes them in a JSON object."""
    if set(data) == {"$tuple"} and type(data["$tuple"]) is list:
        if len(data["$tuple"]) > ITEMS:
            raise ValueError(f"tuple of more than {ITEMS} items")
        return tuple(_decode(item, build, depth + 1, count, deadline) for item in data["$tuple"])
    if set(data) == {"$dict"} and type(data["$dict"]) is list:
        pairs = data["$dict"]
        if len(pairs) > ITEMS or not all(type(pair) is list and len(pair) == 2 for pair in pairs):
            raise ValueError("malformed dict")
        keys = [_decode(key, build, depth + 1, count, deadline) for key, _ in pairs]
        allowed = (str,) if build is None else (str, int, float, bool, tuple, type(None))
        if not all(type(key) in allowed for key in keys):
            raise ValueError("malformed dict key")
        values = [_decode(value, build, depth + 1, count, deadline) for _, value in pairs]
        return dict(zip(keys, values, strict=True))
    if set(data) == {"$float"} and data["$float"] in ("nan", "inf", "-inf"):
        return float(data["$float"])
    if set(data) == {"$opaque"} and type(data["$opaque"]) is str:
        return Opaque(data["$opaque"][: 4 * OPAQUE_NAME_CHARS])
    if set(data) == {"$dataclass", "fields"} and type(data["fields"]) is dict:
        name = str(data["$dataclass"])[: 4 * OPAQUE_NAME_CHARS]
        if build is None:
            return Opaque(name.rpartition(":")[2])
        fields = {str(key): _decode(value, build, depth + 1, count, deadline) for key, value in data["fields"].items()}
        return build(str(data["$dataclass"]), fields)
    raise ValueError("not a value this protocol makes")


def build_course_dataclass(qualified_name: str, fields: dict):
    """The course_lib dataclass ``module:QualName`` made from ``fields`` (the worker's ``build``)."""
    module_name, _, qualname = qualified_name.partition(":")
    if not module_name.startswith("course_lib.") or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", qualname):
        raise ValueError(f"not a course_lib dataclass: {qualified_name[:80]}")
    target = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    if not (isinstance(target, type) and dataclasses.is_dataclass(target)):
        raise ValueError(f"not a course_lib dataclass: {qualified_name[:80]}")
    return target(**fields)


def dumps(message: dict) -> bytes:
    """One message as one line of strict JSON (no NaN: ``encode`` spells non-finite floats out)."""
    return json.dumps(message, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii") + b"\n"


def loads(line: bytes, limit: int = LINE_BYTES) -> dict:
    """The message of one line; ValueError if it is not one (longer than ``limit``, not JSON, not an object, an
    object of more than OBJECT_KEYS keys)."""
    if len(line) > limit:
        raise ValueError(f"message longer than {limit} bytes")
    try:
        message = json.loads(line, parse_constant=_no_constant, object_pairs_hook=_small_object)
    except RecursionError:
        raise ValueError("message nested too deeply") from None
    if type(message) is not dict:
        raise ValueError("message is not a JSON object")
    return message


def _small_object(pairs: list) -> dict:
    if len(pairs) > OBJECT_KEYS:
        raise ValueError(f"a JSON object of more than {OBJECT_KEYS} keys")
    return dict(pairs)


def _no_constant(name: str):
    raise ValueError(f"{name} is not allowed in a message")
