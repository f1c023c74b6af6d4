"""The quantities in lab 8's prose that no output prints (CHECKED: what each is, what checks it) and check(), which
checks the figures it quotes; tests/test_lesson_numbers.py holds the rule and runs check()."""

from pathlib import Path

import pytest

from course_lib import collectives, measure, units

CHECKED = {
    "8 B": "the sweep's first size; the recorded sizes of question 1: check()",
    "20 %": "explore 1's given tolerance, not a result",
    "64 MiB": "explore 3's given setting, not a result",
    "512 KiB": "the last of question 1's recorded sizes: check()",
    "1 GiB": "question 2's row of the published nccl-tests log: check()",
    "4253.0 µs": "question 2's row of the published nccl-tests log: check()",
    "441.81 GB/s": "question 2's row of the published nccl-tests log: check()",
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
