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


def test_calling_disables_a_forbidden_function_under_any_name_in_any_thread_and_inside_course_lib():
    """Issue 39's ways around the old watch (a profiler of one thread, callers told apart by their file's path):
    each now meets the disabled function, and the function works again afterwards."""
    import asyncio
    import operator
    import types

    alias = collectives.ring_allreduce_time
    code = compile("lambda ranks: alias(ranks, 1e9, 50e9, 5e-6)", "/srv/course_lib/x.py", "eval")
    forged = types.FunctionType(code.co_consts[0], {"alias": alias})
    routes = {
        "an alias": lambda ranks: alias(ranks, 1e9, 50e9, 5e-6),
        "a computed attrgetter": lambda ranks: operator.attrgetter("ring_" + "allreduce_time")(collectives)(
            ranks, 1e9, 50e9, 5e-6
        ),
        "another thread": lambda ranks: asyncio.run(asyncio.to_thread(alias, ranks, 1e9, 50e9, 5e-6)),
        "a course_lib file name": forged,
    }
    forbidden = {"collective_time", "collective_cost", "ring_allreduce_time"}
    for route, answer in routes.items():
        assert calling(answer, 8, forbidden=forbidden, files=FILES) == (None, {"ring_allreduce_time"}), route
    # course_lib's wrappers of a forbidden function launder nothing: they call the disabled function
    wrapper = lambda ranks: collectives.time_terms("all_reduce", ranks, 1e9, 50e9, 5e-6).total_s  # noqa: E731
    assert calling(wrapper, 8, forbidden=forbidden, files=FILES) == (None, {"collective_cost"})
    allowed = lambda ranks: collectives.comm_time(2 * (ranks - 1), 5e-6, 1e9, 50e9)  # noqa: E731
    assert calling(allowed, 8, forbidden=forbidden, files=FILES) == (allowed(8), set())
    assert calling(alias, 8, 1e9, 50e9, 5e-6, forbidden=forbidden, files=("course_lib/units.py",))[1] == set()
    assert alias(4, 100e6, 50e9, 5e-6) == pytest.approx(3.03e-3)  # restored: 6·5 µs + 6·25 MB / 50 GB/s


def test_calling_disables_methods_and_properties_too():
    from course_lib import hardware

    files = ("course_lib/hardware.py",)
    link = lambda: hardware.NVLINK4.one_way_bytes_per_s_per_device()  # noqa: E731
    forbidden = {"one_way_bytes_per_s_per_device"}
    assert calling(link, forbidden=forbidden, files=files) == (None, {"one_way_bytes_per_s_per_device"})
    assert link() == 450e9  # NVLink 4: 900 GB/s two-way, 450 GB/s each way
    read = lambda: hardware.DGX_H100.intra_bandwidth_bytes_per_s  # noqa: E731
    assert calling(read, forbidden={"intra_bandwidth_bytes_per_s"}, files=files) == (
        None,
        {"intra_bandwidth_bytes_per_s"},
    )
    assert read() == 450e9


def test_every_forbidden_name_of_every_lab_is_a_function_calling_can_disable():
    """A name the tests forbid but ``reference_functions`` cannot find would not be disabled: none."""
    import importlib
    import pathlib

    for test in sorted(pathlib.Path("labs").glob("0*/0*_*.py")):
        tree = ast.parse(test.read_text(encoding="utf-8"))
        for function in [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]:
            values = {
                node.targets[0].id: ast.literal_eval(node.value)
                for node in function.body
                if isinstance(node, ast.Assign)
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in ("forbidden", "files")
            }
            if "forbidden" not in values:
                continue
            for path in values["files"]:
                importlib.import_module(path.removesuffix(".py").replace("/", "."))
            found = grading_helpers.reference_functions(values["files"])
            assert set(values["forbidden"]) <= set(found), (test, set(values["forbidden"]) - set(found))


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
    defined = [node.name for node in function.body if isinstance(node, ast.FunctionDef)]
    assert defined == ["number", "reference_functions", "disable", "calling"]  # and what calling calls
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
