"""The verdict, outside the sandbox: otter's test files run here, against proxies of the student's answers.

tools/grade.py starts the worker (tools/grading_runner.py) in the sandbox with two pipes, then calls ``verify``:

1. ``Worker`` reads the worker's "ready" line, then sends requests and reads replies, one JSON line each
   (tools/grading_wire.py), never past the notebook's deadline and never more than ``LINE_BYTES`` a line;
2. the autograder zip's test files (tests/qN.py: public and hidden cases, the helpers tools/assignments.py wrote
   into them) are loaded here, in the grader, with otter's own ``ExceptionTestFile``; they never enter the sandbox;
3. each name a test takes (``ring_allreduce_time``, ...) is looked up in the worker: a function becomes a
   ``RemoteAnswer``, whose every call sends its inputs to the worker and returns what the answer returned, decoded
   as plain data (an exception it raised is raised here as a built-in exception of the same family, named, without
   the answer's message); a value comes back as plain data;
4. otter runs each test file's cases here and scores them: the expected values, the comparisons and the scores
   never leave this process.

The student's code can answer, answer wrongly, raise, hang or end the worker; it cannot see a hidden test, reach
this process or write a result. ``calling`` (tools/grading_helpers.py) has the worker disable the reference functions a
test forbids while the answer runs (the function objects it noted before the notebook ran) and say which the
answer called.
"""

from __future__ import annotations

import builtins
import io
import os
import select
import time
import zipfile
from dataclasses import dataclass

from .grading_wire import REPLY_BYTES, DecodeTimeout, decode, dumps, encode, loads

ERROR_CHARS = 160  # of an exception's message, in a public test's feedback
# An exception the answer raised is raised here as the first of these in its class's MRO (a ValueError subclass as
# ValueError, so that `raises_value_error` works); anything else as AnswerRaised. Never BaseException: SystemExit
# or KeyboardInterrupt from an answer must not stop the grader.
FAMILIES = (
    "ValueError",
    "TypeError",
    "ZeroDivisionError",
    "OverflowError",
    "ArithmeticError",
    "KeyError",
    "IndexError",
    "LookupError",
    "AttributeError",
    "NameError",
    "RecursionError",
    "NotImplementedError",
    "RuntimeError",
    "AssertionError",
)


class WorkerFailed(Exception):
    """The worker stopped answering: it ended, broke the protocol or ran out of time, or the batch was interrupted.
    ``reason`` says which."""

    def __init__(self, reason: str, timed_out: bool = False, interrupted: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.timed_out = timed_out
        self.interrupted = interrupted


class AnswerRaised(Exception):
    """An answer raised an exception that is not one of FAMILIES."""


def escaped(text: str, limit: int = ERROR_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters, non-ASCII and control characters escaped.

    >>> escaped("bad\\nvalue \\u03b1" + "x" * 200)[:20]
    'bad value \\\\u03b1xxxx'
    """
    line = " ".join(str(text)[: 4 * limit].split())  # (a bound before the work, then the exact one)
    return line.encode("ascii", "backslashreplace").decode("ascii")[:limit]


INTERRUPTED = "interrupted"
POLL_S = 0.25  # how often a wait on the worker looks at ``cancel``


class Worker:
    """The grader's end of the two pipes to one worker; every read and write gives up at ``deadline``, or once
    ``cancel`` (a threading.Event: Ctrl-C, SIGTERM) is set."""

    def __init__(self, to_worker, from_worker, deadline: float, cancel=None):
        self.cancel = cancel
        self._out = to_worker.fileno()
        self._in = from_worker.fileno()
        os.set_blocking(self._out, False)
        os.set_blocking(self._in, False)
        self._buffer = b""
        self._next_id = 0
        self.deadline = deadline
        self.failure: WorkerFailed | None = None
        self.ready: dict = {}

    def _remaining(self) -> float:
        if self.cancel is not None and self.cancel.is_set():
            self.fail(INTERRUPTED, interrupted=True)
        left = self.deadline - time.monotonic()
        if left <= 0:
            self.fail("the notebook ran out of time", timed_out=True)
        return min(left, POLL_S)

    def fail(self, reason: str, timed_out: bool = False, interrupted: bool = False):
        if self.failure is None:
            self.failure = WorkerFailed(reason, timed_out, interrupted)
        raise self.failure

    def _line(self) -> bytes:
        while b"\n" not in self._buffer:
            if len(self._buffer) > REPLY_BYTES:
                self.fail(f"the worker sent a line longer than {REPLY_BYTES} bytes")
            readable, _, _ = select.select([self._in], [], [], self._remaining())
            if not readable:
                continue
            try:
                chunk = os.read(self._in, 2**16)
            except BlockingIOError:
                continue
            if not chunk:
                self.fail("the notebook's process ended (os._exit, a crash, or a limit of the sandbox)")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _send(self, data: bytes) -> None:
        while data:
            _, writable, _ = select.select([], [self._out], [], self._remaining())
            if not writable:
                continue
            try:
                data = data[os.write(self._out, data) :]
            except BlockingIOError:
                continue
            except (BrokenPipeError, OSError):
                self.fail("the notebook's process ended (os._exit, a crash, or a limit of the sandbox)")

    def receive(self) -> dict:
        if self.failure is not None:
            raise self.failure
        try:
            return loads(self._line(), REPLY_BYTES)
        except (ValueError, RecursionError) as error:
            self.fail(f"the worker broke the protocol ({error})")

    def wait_ready(self) -> dict:
        """The worker's first line, once the notebook has run: {"ready": True, "cells": N, "failed": K}."""
        message = self.receive()
        if message.get("ready") is not True:
            self.fail("the worker broke the protocol (no ready line)")
        self.ready = message
        return message

    def request(self, op: str, **fields) -> dict:
        """Send one request and return its reply (the reply to an earlier request that timed out is skipped)."""
        if self.failure is not None:
            raise self.failure
        self._next_id += 1
        ask = self._next_id
        self._send(dumps({"id": ask, "op": op, **fields}))
        while True:
            reply = self.receive()
            if reply.get("id") == ask:
                return reply


@dataclass(frozen=True)
class RemoteAnswer:
    """A student's function, as the tests see it: calling it runs the answer in the worker."""

    worker: Worker
    name: str

    def __call__(self, *args, **kwargs):
        return self.call_watched(args, kwargs, (), ())[0]

    def call_watched(self, args: tuple, kwargs: dict, forbidden, files) -> tuple:
        """(the answer's result, the names of ``forbidden`` reference functions it called): see ``calling``."""
        reply = self.worker.request(
            "call",
            name=self.name,
            args=encode(tuple(args), dataclasses_too=True),
            kwargs=encode(dict(kwargs), dataclasses_too=True),
            forbidden=sorted(forbidden),
            files=list(files),
        )
        if "raised" in reply:
            raise raised(reply)
        try:
            result = decode(reply.get("result"), deadline=self.worker.deadline)
        except DecodeTimeout:
            self.worker.fail("the notebook ran out of time", timed_out=True)
        except (ValueError, RecursionError):
            raise AnswerRaised(f"{self.name} returned something the grader cannot read") from None
        called = reply.get("called")
        called = {str(name) for name in called} & set(forbidden) if isinstance(called, list) else set()
        return result, called

    def __repr__(self) -> str:
        return f"<your function {self.name}>"


UNSHOWN = "its message is not shown here (run the public test in your notebook to read it)"


def raised(reply: dict) -> Exception:
    """The exception to raise here for an answer's: the first built-in family of FAMILIES in its class's MRO, named,
    without the answer's message: text an answer chose (a file it read) never reaches the feedback; the student
    reads the message by running the public test in the notebook."""
    names = reply.get("raised") if isinstance(reply.get("raised"), list) else []
    names = [str(name) for name in names]
    family = next((name for name in names if name in FAMILIES), None)
    message = f"{escaped(names[0], 60) if names else 'an exception'} raised by your answer: {UNSHOWN}"
    return getattr(builtins, family)(message) if family else AnswerRaised(message)


def load_test_files(autograder: bytes) -> list:
    """otter's ExceptionTestFile for each tests/*.py of the autograder zip (its bytes), read here, never unpacked."""
    from otter.test_files import ExceptionTestFile

    files = []
    with zipfile.ZipFile(io.BytesIO(autograder)) as archive:
        for name in sorted(archive.namelist()):
            if name.startswith("tests/") and name.endswith(".py"):
                files.append(ExceptionTestFile.from_string(archive.read(name).decode("utf-8"), path=name))
    return files


def environment_of(worker: Worker, names: list[str]) -> dict:
    """{name: RemoteAnswer or plain value} for each of ``names`` the notebook defines; a name it lacks is absent
    (otter then passes None, and the public test says what to define)."""
    reply = worker.request("lookup", names=sorted(names))
    found = reply.get("names") if isinstance(reply.get("names"), dict) else {}
    env = {}
    for name in names:
        entry = found.get(name) if isinstance(found.get(name), dict) else {}
        if entry.get("kind") == "callable":
            env[name] = RemoteAnswer(worker, name)
        elif entry.get("kind") == "value":
            try:
                env[name] = decode(entry.get("value"), deadline=worker.deadline)
            except DecodeTimeout:
                worker.fail("the notebook ran out of time", timed_out=True)
            except (ValueError, RecursionError):
                continue
    return env


def params(case) -> list[str]:
    """The names a test case takes (its function's parameters), as otter's ``test_case.call_func`` passes them."""
    return case.body._get_func_params()


def verify(worker: Worker, autograder: bytes) -> dict:
    """{question: otter's test file, run and scored here} for every question of the autograder zip (its bytes).

    Every public case of every question runs before any hidden one: the worker sees no hidden input before the
    last public message (the feedback's only text from an answer) is written, so none can be carried into one."""
    tests = load_test_files(autograder)
    env = environment_of(worker, sorted({name for test in tests for case in test.test_cases for name in params(case)}))
    results = {id(test): [] for test in tests}
    for hidden in (False, True):
        for test in tests:
            every_case = test.test_cases
            test.test_cases = [case for case in every_case if case.hidden == hidden]
            test.run(env)
            results[id(test)] += test.test_case_results
            test.test_cases = every_case
    for test in tests:  # the results in the test file's own order, as otter reports them
        order = {id(case): index for index, case in enumerate(test.test_cases)}
        test.test_case_results = sorted(results[id(test)], key=lambda result: order[id(result.test_case)])
    return {test.name: test for test in tests}


PUBLIC_SUMMARY_CHARS = 4000  # per question; tools/grade.py cuts the whole feedback to its own limit too


def summary(results: dict) -> dict:
    """{question: {score, possible, public, hidden_passed}} of the test files ``verify`` ran."""
    out = {}
    for name, test_file in results.items():
        hidden = [case.passed for case in test_file.test_case_results if case.test_case.hidden]
        out[str(name)] = {
            "score": test_file.score,
            "possible": test_file.possible,
            "public": test_file.summary(public_only=True)[:PUBLIC_SUMMARY_CHARS],
            "hidden_passed": all(hidden) if hidden else None,
        }
    return out
