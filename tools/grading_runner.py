"""The worker: runs a submission's code, then answers the grader's calls. The only grading code in the sandbox.

tools/grade.py starts it inside bubblewrap (tools/grading_sandbox.py) as

    python tools/grading_runner.py LIMITS_JSON NOTEBOOK

with a pipe from the grader on stdin and a pipe to it on stdout, and then

1. it lowers its resource limits (LIMITS_JSON: {"address_space_bytes", "processes", "cpu_s", "file_bytes"}, see
   ``resource.setrlimit``); everything the notebook starts inherits them;
2. it keeps the two pipes for itself, points the standard streams at /dev/null and runs the notebook's code cells
   in order in an IPython shell in this process, as a kernel would (magics work), leaving out the cells otter
   leaves out (tagged ``otter_ignore``) and otter's own lines (``import otter``, ``grader = otter.Notebook(...)``,
   ``grader.check(...)``); a cell that raises is reported and the next one runs;
3. it says ``{"ready": true, "cells": N, "failed": K}`` and answers, one JSON line each (tools/grading_wire.py):
   - ``{"id", "op": "lookup", "names": [...]}``: what each name of the notebook is, ``{"kind": "callable"}``,
     ``{"kind": "value", "value": ...}`` or ``{"kind": "missing"}``;
   - ``{"id", "op": "call", "name", "args", "kwargs", "forbidden", "files"}``: the answer's result as plain data,
     ``{"result": ..., "called": [...]}`` (``called``: the reference functions in ``forbidden`` it called, watched
     as tools/grading_helpers.py's ``calling`` does), or ``{"raised": [the exception's class names], "message"}``;
   until the grader closes the pipe.

It holds no test, no expected value and no score: the grader (tools/grading_verifier.py) keeps those outside the
sandbox, and trusts nothing this process says beyond reading it as plain data. The student's code runs in this
same process and may change any of it; what it can gain is only to answer wrongly. Standard library, IPython and
the two tools/ files beside it.
"""

from __future__ import annotations

import json
import os
import re
import resource
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # grading_wire.py and grading_helpers.py, beside it

from grading_helpers import calling
from grading_wire import build_course_dataclass, decode, dumps, encode, loads

ANSWER_BYTES = 2**20  # the largest reply sent as it is (the grader refuses lines over grading_wire.LINE_BYTES)
MESSAGE_CHARS = 300  # of an exception's message; the grader cuts and escapes it again
# Otter's own lines in a student notebook: its set-up and the public checks, which need otter's tests/ folder.
OTTER_LINE = re.compile(
    r"\s*(import\s+otter|grader\s*=\s*otter\.Notebook\(.*\)|grader\.(check|check_all|export)\(.*\))\s*(#.*)?"
)


def apply_limits(limits: dict) -> None:
    """Lower this process's limits (and so its children's) to ``limits``; never raises them."""
    for name, key in (
        ("RLIMIT_AS", "address_space_bytes"),
        ("RLIMIT_NPROC", "processes"),
        ("RLIMIT_CPU", "cpu_s"),
        ("RLIMIT_FSIZE", "file_bytes"),
    ):
        if limits.get(key) is None:
            continue
        which = getattr(resource, name)
        soft, hard = resource.getrlimit(which)
        value = int(limits[key])
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))


def code_cells(notebook: dict) -> list[str]:
    """The sources the grading runs: every code cell but those tagged ``otter_ignore``, without otter's lines.

    >>> code_cells({"cells": [{"cell_type": "code", "metadata": {}, "source": ["import otter\\n", "x = 1"]},
    ...                       {"cell_type": "code", "metadata": {"tags": ["otter_ignore"]}, "source": "lab()"},
    ...                       {"cell_type": "code", "metadata": {}, "source": 'grader.check("q1")'}]})
    ['x = 1']
    """
    sources = []
    for cell in notebook.get("cells", []):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        metadata = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        tags = metadata.get("tags") if isinstance(metadata.get("tags"), list) else []
        if "otter_ignore" in tags:
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        kept = [line for line in source.splitlines() if not OTTER_LINE.fullmatch(line)]
        if any(line.strip() for line in kept):
            sources.append("\n".join(kept))
    return sources


def run_cells(sources: list[str]):
    """(the IPython shell, how many cells raised) after running ``sources`` in order."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
    failed = 0
    for source in sources:
        result = shell.run_cell(source, store_history=False, silent=False)
        failed += not result.success
    return shell, failed


def lookup(namespace: dict, names: list) -> dict:
    found = {}
    for name in names:
        if not isinstance(name, str) or name not in namespace:
            found[str(name)] = {"kind": "missing"}
        elif callable(namespace[name]):
            found[name] = {"kind": "callable"}
        else:
            found[name] = {"kind": "value", "value": readable(namespace[name])}
    return found


def readable(value):
    try:
        return encode(value)
    except (ValueError, RecursionError):
        return {"$opaque": "value nested too deeply"}


def call(namespace: dict, message: dict) -> dict:
    function = namespace.get(str(message.get("name")))
    try:
        args = decode(message.get("args", {"$tuple": []}), build_course_dataclass)
        kwargs = decode(message.get("kwargs", {"$dict": []}), build_course_dataclass)
        forbidden = set(message.get("forbidden") or ())
        files = tuple(message.get("files") or ())
        if forbidden:  # through a lambda: an attribute the answer sets on itself cannot change how it is watched
            answer = function
            result, called = calling(lambda *a, **k: answer(*a, **k), *args, forbidden=forbidden, files=files, **kwargs)
        else:
            result, called = function(*args, **kwargs), set()
    except BaseException as error:  # whatever the answer raised (SystemExit too) is its answer
        names = [cls.__name__ for cls in type(error).__mro__]
        return {"raised": names, "message": str(error)[:MESSAGE_CHARS]}
    return {"result": readable(result), "called": sorted(called)}


def serve(namespace: dict, requests, replies) -> None:
    """Answer each request line of ``requests`` on ``replies`` until the grader closes the pipe."""
    for line in requests:
        try:
            message = loads(line)
        except ValueError:
            continue
        op = message.get("op")
        if op == "lookup":
            reply = {"names": lookup(namespace, list(message.get("names") or ()))}
        elif op == "call":
            reply = call(namespace, message)
        else:
            reply = {"error": "unknown op"}
        line = dumps({"id": message.get("id"), **reply})
        if len(line) > ANSWER_BYTES:  # an answer too large to send: the grader reads it as an object it cannot read
            line = dumps({"id": message.get("id"), "result": {"$opaque": "answer larger than 1 MB"}, "called": []})
        replies.write(line)
        replies.flush()


def main(argv: list[str]) -> int:
    limits_json, notebook_path = argv
    apply_limits(json.loads(limits_json))
    # The pipes to the grader, on descriptors the notebook's processes do not inherit; its own streams go nowhere.
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDWR)
    for descriptor in (0, 1, 2):
        os.dup2(null, descriptor)
    import warnings

    warnings.simplefilter("ignore")
    with open(notebook_path, encoding="utf-8") as stream:
        sources = code_cells(json.load(stream))
    shell, failed = run_cells(sources)
    replies.write(dumps({"ready": True, "cells": len(sources), "failed": failed}))
    replies.flush()
    serve(shell.user_ns, requests, replies)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
