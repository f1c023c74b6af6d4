"""The quantities in lab 5's prose that no output prints (CHECKED: what each is, what checks it) and check(), which
works out the explore answers by moving the lab's controls; tests/test_lesson_numbers.py runs it."""

from course_lib import hardware, units

CHECKED = {
    "200 Gb/s": "the default cluster's InfiniBand HDR adapters: check()",
    "18.7 s": "explore 3",
    "3.61 s": "explore 3",
    "1.3 s": "explore 3",
    "423 µs": "explore 1: one tensor-parallel call at the defaults",
    "331 ms": "explore 4: each sequence-parallel row",
    "1.33 s": "explore 4: the sequence-parallel rows' total",
}


def check():
    from course_lib.widgets import partition_lab

    lab = partition_lab()
    assert units.format_time(lab.result["tensor_time_s"]) == "1.3 s"  # the default's exposed tensor-parallel time
    tensor_rows = [row for row in lab.result["transfers"] if row["axis"] == "tensor"]
    assert {units.format_time(row["time_per_call_s"]) for row in tensor_rows} == {"423 µs"}
    sequence_parallel = partition_lab(sequence_parallel=True)
    tensor_rows = [row for row in sequence_parallel.result["transfers"] if row["axis"] == "tensor"]
    assert len(tensor_rows) == 4 and {units.format_time(row["time_s"]) for row in tensor_rows} == {"331 ms"}
    assert units.format_time(sequence_parallel.result["tensor_time_s"]) == "1.33 s"
    assert hardware.INFINIBAND_HDR_8X.bandwidth_bytes_per_s == 8 * 200 * units.GBIT and "HDR" in lab.result["cluster"]
    lab.controls["tensor_parallel"].value = 16
    lab.controls["pipeline_parallel"].value = 4
    assert lab.result["devices"] == 64
    assert units.format_time(lab.result["step_time_s"]) == "18.7 s"
    assert units.format_time(lab.result["tensor_time_s"]) == "3.61 s"
