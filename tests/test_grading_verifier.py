"""The two-process verdict without the sandbox: the worker (tools/grading_runner.py, a real process running a real
notebook) and the verifier (tools/grading_verifier.py, otter's own test files run here against proxies of its
answers). Slow tier: each test starts a worker (IPython and course_lib, about a second). What crosses the pipes is in
tests/test_grading_wire.py; the sandboxed end-to-end batch in tests/test_grading.py."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import textwrap
import time

import pytest

from course_lib import hardware, parallelism
from tools import grading_sandbox, grading_verifier
from tools.grading_helpers import calling, raises_value_error

pytestmark = pytest.mark.slow

# ---- a real worker, unsandboxed -------------------------------------------------------------------------------------

ANSWERS = """
import math, os, sys
from course_lib import collectives

def ring(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    steps = 2 * (ranks - 1)
    return steps * latency_s + steps * payload_bytes / ranks / bandwidth_bytes_per_s

def shortcut(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    return collectives.ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s)

class PlanError(ValueError):
    pass

def strict(x):
    if x < 0:
        raise PlanError("x must be >= 0, got " + "\\n" * 3 + "é" * 500)
    return {"tensor": (x, 2 * x)}

def interrupts():
    raise KeyboardInterrupt

def exits():
    os._exit(3)

def sleeps():
    import time
    time.sleep(60)

def nodes(cluster, plan):
    return cluster.nodes * plan.tensor_parallel

seen = []


def record(x):
    seen.append(x)
    return x


def spy():
    return repr(seen)


value = 7.5
print("printed text goes nowhere")
"""


def notebook_with(*sources: str) -> dict:
    cells = [{"cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": None}
             for source in sources]  # fmt: skip
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


@pytest.fixture
def worker(tmp_path):
    """A worker process (unsandboxed) that ran ANSWERS, and the verifier's end of its pipes; killed afterwards."""
    notebook = notebook_with(
        "import otter\ngrader = otter.Notebook('x.ipynb')",
        ANSWERS,
        "raise RuntimeError('a cell that fails')",
        'grader.check("q1")',
    )
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    command = grading_sandbox.runner_command(grading_sandbox.Limits(), path)
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    end = grading_verifier.Worker(process.stdin, process.stdout, time.monotonic() + 60)
    yield end
    process.kill()
    process.wait()


def test_the_worker_runs_the_notebook_without_otter_lines_and_counts_failed_cells(worker):
    assert worker.wait_ready() == {"ready": True, "cells": 2, "failed": 1}


def test_answers_are_called_in_the_worker_and_return_plain_data(worker):
    worker.wait_ready()
    env = grading_verifier.environment_of(worker, ["ring", "strict", "value", "absent"])
    assert set(env) == {"ring", "strict", "value"} and env["value"] == 7.5
    assert env["ring"](4, 100e6, 50e9, 5e-6) == pytest.approx(3.03e-3, rel=1e-12)
    assert env["strict"](3) == {"tensor": (3, 6)}
    assert raises_value_error(env["strict"], -1)  # a ValueError subclass in the worker is a ValueError here
    with pytest.raises(ValueError) as raised:
        env["strict"](-1)
    message = str(raised.value)
    assert message == f"PlanError raised by your answer: {grading_verifier.UNSHOWN}"  # not the answer's own text


def test_reference_calls_are_watched_in_the_worker(worker):
    worker.wait_ready()
    env = grading_verifier.environment_of(worker, ["ring", "shortcut"])
    forbidden, files = {"ring_allreduce_time"}, ("course_lib/collectives.py",)
    assert calling(env["ring"], 4, 1e8, 5e10, 5e-6, forbidden=forbidden, files=files)[1] == set()
    assert calling(env["shortcut"], 4, 1e8, 5e10, 5e-6, forbidden=forbidden, files=files)[1] == {"ring_allreduce_time"}


def test_course_objects_reach_the_answer_rebuilt(worker):
    worker.wait_ready()
    env = grading_verifier.environment_of(worker, ["nodes"])
    plan = parallelism.ParallelPlan(tensor_parallel=8)
    assert env["nodes"](dataclasses.replace(hardware.DGX_H100, nodes=4), plan) == 32


def test_base_exceptions_of_an_answer_never_stop_the_grader(worker):
    worker.wait_ready()
    env = grading_verifier.environment_of(worker, ["interrupts", "ring"])
    with pytest.raises(grading_verifier.AnswerRaised, match="KeyboardInterrupt"):
        env["interrupts"]()
    assert env["ring"](2, 1.0, 1.0, 0.0) == 1.0  # the worker goes on answering


def test_a_worker_that_ends_fails_every_later_call_with_a_reason(worker):
    worker.wait_ready()
    env = grading_verifier.environment_of(worker, ["exits", "ring"])
    with pytest.raises(grading_verifier.WorkerFailed, match="process ended"):
        env["exits"]()
    with pytest.raises(grading_verifier.WorkerFailed):
        env["ring"](2, 1.0, 1.0, 0.0)
    assert not worker.failure.timed_out


def test_a_call_that_hangs_times_out_at_the_deadline(worker):
    worker.wait_ready()
    env = grading_verifier.environment_of(worker, ["sleeps"])
    worker.deadline = time.monotonic() + 1.0
    start = time.monotonic()
    with pytest.raises(grading_verifier.WorkerFailed):
        env["sleeps"]()
    assert worker.failure.timed_out and time.monotonic() - start < 10


# ---- otter's test files, run here ---------------------------------------------------------------------------------

TEST_FILE = textwrap.dedent("""
    from otter.test_files import test_case

    OK_FORMAT = False
    name = "q1"
    points = 3
    all_or_nothing = True

    @test_case(points=None, hidden=False)
    def test_q1_public(ring):
        assert callable(ring), "define the function ring"
        assert abs(ring(4, 100e6, 50e9, 5e-6) - 3.03e-3) <= 3.03e-9, "4 ranks: expected 3.03 ms"

    @test_case(points=None, hidden=True)
    def test_q1_hidden(ring):
        want = 0.01001  # never sent to the worker
        assert abs(ring(2, 1e9, 100e9, 5e-6) - want) <= 1e-6 * want
""")


def autograder_with(test_source: str) -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("tests/q1.py", test_source)
    return buffer.getvalue()


def test_the_verdict_scores_public_and_hidden_cases_in_the_grader(worker):
    worker.wait_ready()
    results = grading_verifier.verify(worker, autograder_with(TEST_FILE))
    summary = grading_verifier.summary(results)
    assert summary["q1"]["score"] == 3 and summary["q1"]["hidden_passed"] is True


def test_a_missing_answer_fails_with_the_public_message(worker):
    worker.wait_ready()
    results = grading_verifier.verify(worker, autograder_with(TEST_FILE.replace("ring", "missing_answer")))
    summary = grading_verifier.summary(results)
    assert summary["q1"]["score"] == 0 and "define the function missing_answer" in summary["q1"]["public"]
    assert "0.01001" not in summary["q1"]["public"]  # the hidden case's failure stays here


SPY_FILES = {  # q1's cases give the answer an input each; q2's public message shows what the answer has seen
    "q1": textwrap.dedent("""
        from otter.test_files import test_case

        OK_FORMAT = False
        name = "q1"
        points = 1

        @test_case(points=None, hidden=False)
        def test_q1_public(record):
            record(1.0)

        @test_case(points=None, hidden=True)
        def test_q1_hidden(record):
            record(98765.4321)
    """),
    "q2": textwrap.dedent("""
        from otter.test_files import test_case

        OK_FORMAT = False
        name = "q2"
        points = 1

        @test_case(points=None, hidden=False)
        def test_q2_public(spy):
            assert False, f"the answer says {spy()!r:.80}"
    """),
}


def test_no_hidden_input_reaches_the_worker_before_every_public_message_is_written(worker):
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, source in SPY_FILES.items():
            archive.writestr(f"tests/{name}.py", source)
    worker.wait_ready()
    summary = grading_verifier.summary(grading_verifier.verify(worker, buffer.getvalue()))
    assert "[1.0]" in summary["q2"]["public"]  # the spy ran, after q1's public case
    assert "98765" not in summary["q2"]["public"]  # but before q1's hidden one
