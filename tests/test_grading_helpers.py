"""The graded tests' helpers (tools/grading_helpers.py) and how `make assignments` writes them into each test
(tools/assignments.py's with_helpers and stage_master), without otter: the grading tests (tests/test_grading.py) run
the tests so written against every master's solutions and every wrong answer."""

from __future__ import annotations

import ast
import doctest
import json

import numpy
import pytest

from course_lib import collectives
from tools import assignments, grading_helpers
from tools.grading_helpers import calling, number

FILES = ("course_lib/collectives.py",)


@pytest.mark.parametrize("module", [grading_helpers, assignments], ids=lambda module: module.__name__)
def test_the_docstring_examples_pass(module):
    failed, attempted = doctest.testmod(module)
    assert attempted > 0 and failed == 0


def test_number_takes_exact_floats_and_ints_only():
    class Anything(float):
        def __eq__(self, other):
            return True

    assert number(numpy.float64(2.5)) == 2.5 and type(number(numpy.int32(3))) is int
    assert [number(value) for value in (Anything(1.0), True, "1", [1.0], numpy.array(1.0))] == [None] * 5


def test_calling_sees_a_forbidden_function_under_any_name_but_not_from_course_lib_itself():
    alias = collectives.ring_allreduce_time

    def renamed(ranks):
        return alias(ranks, 1e9, 50e9, 5e-6)

    def direct(ranks):
        return collectives.collective_time("all_reduce", ranks, 1e9, 50e9, 5e-6)

    result, called = calling(renamed, 8, forbidden={"ring_allreduce_time"}, files=FILES)
    assert called == {"ring_allreduce_time"} and result == collectives.ring_allreduce_time(8, 1e9, 50e9, 5e-6)
    assert calling(direct, 8, forbidden={"collective_time"}, files=FILES)[1] == {"collective_time"}
    # ring_allreduce_time calls collective_time inside course_lib: that call is the library's, not the answer's
    assert calling(renamed, 8, forbidden={"collective_time"}, files=FILES)[1] == set()
    assert calling(renamed, 8, forbidden={"ring_allreduce_time"}, files=("course_lib/units.py",))[1] == set()


def run_alone(source: str, *args):
    """Define the test of ``source`` in a namespace of its own (as otter's test file does) and call it."""
    namespace: dict = {}
    exec(compile(source, "<test>", "exec"), namespace)
    test = next(value for name, value in namespace.items() if name.startswith("test_"))
    return test(*args)


def test_a_test_gets_the_helpers_it_calls_and_then_stands_alone():
    source = """# HIDDEN
def test_q1(answer):
    assert callable(answer)
    result, called = calling(answer, 8, forbidden={"ring_allreduce_time"}, files=("course_lib/collectives.py",))
    assert not called and number(result) == 16
"""
    written = assignments.with_helpers(source, assignments.helper_sources())
    assert written.startswith("# HIDDEN\ndef test_q1(answer):\n    def number(value):")  # otter reads the comment
    function = ast.parse(written).body[0]
    assert isinstance(function, ast.FunctionDef)
    assert [node.name for node in function.body if isinstance(node, ast.FunctionDef)] == ["number", "calling"]
    run_alone(written, lambda ranks: 2 * ranks)
    with pytest.raises(AssertionError):
        run_alone(written, lambda ranks: collectives.ring_allreduce_time(ranks, 1e9, 50e9, 5e-6))
    with pytest.raises(NameError):  # without them, the test fails: the master's cell defines them, not the test
        run_alone(source, lambda ranks: 2 * ranks)


def test_a_test_that_calls_no_helper_or_binds_the_name_itself_is_left_alone():
    helpers = assignments.helper_sources()
    for source in (
        "def test_q1(answer):\n    assert answer(1) == 2\n",
        "def test_q1(number):\n    assert number == 2\n",
        "def test_q1(answer):\n    number = answer(1)\n    assert number == 2\n",
    ):
        assert assignments.with_helpers(source, helpers) == source


@pytest.mark.parametrize("lab", assignments.lab_names())
def test_every_test_of_a_staged_master_defines_what_it_calls(lab, tmp_path):
    staged = tmp_path / f"{lab}.ipynb"
    assignments.stage_master(assignments.master_path(lab), staged)
    helpers = set(assignments.helper_sources())
    tests = 0
    for cell in json.loads(staged.read_text(encoding="utf-8"))["cells"]:
        body = ast.parse("".join(cell["source"])).body if cell["cell_type"] == "code" else []
        function = body[0] if body else None
        if not (isinstance(function, ast.FunctionDef) and function.name.startswith("test_")):
            continue
        tests += 1
        called = {node.id for node in ast.walk(function) if isinstance(node, ast.Name)} & helpers
        defined = {node.name for node in function.body if isinstance(node, ast.FunctionDef)}
        assert called <= defined, f"{lab} {function.name} calls {sorted(called - defined)} without defining them"
    assert tests >= 6, f"{lab}: {tests} test cells found"
