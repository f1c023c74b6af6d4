"""The quantities in lab 8's prose that no output prints (CHECKED: what each is, what checks it) and check(), which
checks the figures it quotes; tests/test_lesson_numbers.py holds the rule and runs check()."""

import re
from pathlib import Path

import pytest

from course_lib import collectives, measure, parallelism, units

CHECKED = {
    "8 B": "the sweep's first size; the recorded sizes of question 1: check()",
    "64 MiB": "the explore question's given setting, not a result",
    "512 KiB": "the last of question 1's recorded sizes: check()",
    "1 GiB": "question 2's row of the published nccl-tests log: check()",
    "4253.0 µs": "question 2's row of the published nccl-tests log: check()",
    "441.81 GB/s": "question 2's row of the published nccl-tests log: check()",
    "13": "the graded questions' points, summed from the master's headings: check()",
    "32": "question 5's plan, 32 micro-batches, given, not a result",
}


def check():
    code = Path(__file__).with_name("08_measure_collectives.py").read_text(encoding="utf-8")
    assert "RECORDED_SIZES_BYTES = [8, 32, 128, 512, 2048, 8192, 32768, 131072, 524288]" in code
    assert units.format_bytes(524288, binary=True) == "512 KiB" and units.format_bytes(8) == "8 B"
    log = (measure.DATA_DIR / "nccl_tests" / "aws_p5_1node_8xH100_nvlink_all_reduce.txt").read_text(encoding="utf-8")
    row = next(line.split() for line in log.splitlines() if "  1073741824  " in line)
    assert row[6:9] == ["4253.0", "252.47", "441.81"]  # time (µs), algbw, busbw (GB/s)
    assert units.format_bytes(2**30, binary=True) == "1 GiB"
    busbw = collectives.busbw_bytes_per_s("all_reduce", 8, 2**30, 4253.0e-6)
    assert busbw == pytest.approx(441.81e9, rel=1e-3)
    check_question_5_plan(code)
    points = [int(n) for n in re.findall(r"^# ### Question \d+ · .*\((\d+) points?\)$", code, re.M)]
    assert len(points) == 5 and sum(points) == 13  # "Five questions, 13 points"


def check_question_5_plan(code):
    """Question 5 says its public plan is the one lesson 07's search picks on two H100 nodes (step 5): it is the
    search's first row on lesson 07's Nebius nodes and on the question's p5 nodes, with the default calibration and
    with the cluster's own links alike."""
    import dataclasses

    from course_lib import budget, hardware

    for cluster in (hardware.NEBIUS_H100_IB, hardware.AWS_P5):
        own_links = dataclasses.replace(
            parallelism.default_calibration(cluster), intra_node_link=None, inter_node_link=None
        )
        for calibration in ("default", own_links):
            pick = budget.search_plans(parallelism.LLAMA3_8B, cluster, 256, calibration=calibration).row(0)
            assert {k: pick[k] for k in PLAN_FIELDS} == {k: getattr(QUESTION_5_PLAN, k) for k in PLAN_FIELDS}, (
                cluster.name,
                pick,
            )
    assert "data_parallel=8, tensor_parallel=2, zero_stage=3, micro_batch=1, grad_accum_steps=32, " in code


PLAN_FIELDS = (
    "data_parallel", "tensor_parallel", "pipeline_parallel", "zero_stage", "micro_batch", "grad_accum_steps",
    "recompute", "sequence_parallel", "schedule", "virtual_stages", "attention",
)  # fmt: skip
# Question 5's public plan, as its master writes it
QUESTION_5_PLAN = parallelism.ParallelPlan(
    data_parallel=8, tensor_parallel=2, zero_stage=3, micro_batch=1, grad_accum_steps=32, recompute="selective"
)
