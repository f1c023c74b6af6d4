"""The quantities in lab 6's prose that no output prints (CHECKED: what each is, what checks it) and check(), which
works out the explore answers by moving the lab's controls; tests/test_lesson_numbers.py runs it."""

from course_lib import hardware, units

CHECKED = {
    "200 Gb/s": "the default cluster's InfiniBand HDR adapters: check()",
    "18.7 s": "explore 3",
    "3.61 s": "explore 3",
    "1.3 s": "explore 3",
}


def check():
    from course_lib.widgets import partition_lab

    lab = partition_lab()
    assert units.format_time(lab.result["tensor_time_s"]) == "1.3 s"  # the default's exposed tensor-parallel time
    assert hardware.INFINIBAND_HDR_8X.bandwidth_bytes_per_s == 8 * 200 * units.GBIT and "HDR" in lab.result["cluster"]
    lab.controls["tensor_parallel"].value = 16
    lab.controls["pipeline_parallel"].value = 4
    assert lab.result["devices"] == 64
    assert units.format_time(lab.result["step_time_s"]) == "18.7 s"
    assert units.format_time(lab.result["tensor_time_s"]) == "3.61 s"
