"""The quantities in lab 5's prose that no output prints (CHECKED: what each is, what checks it) and check(), which
works out the explore answer and the scope's claims by moving the lab's controls; tests/test_lesson_numbers.py runs
it."""

from course_lib import hardware, units

CHECKED = {
    "200 Gb/s": "the default cluster's InfiniBand HDR adapters: check()",
    "12": "the explore answer: GPT-3's 96 layers over 8 stages, 2 × 12 × 64 = 1536 calls a row: check()",
}


def check():
    from course_lib.widgets import partition_lab

    lab = partition_lab()
    assert hardware.INFINIBAND_HDR_8X.bandwidth_bytes_per_s == 8 * 200 * units.GBIT and "HDR" in lab.result["cluster"]
    rows = [row for row in lab.result["transfers"] if row["axis"] == "tensor"]
    assert lab.result["layers"] // lab.values()["pipeline_parallel"] == 12
    assert [row["calls_per_step"] for row in rows] == [2 * 12 * 64] * 2  # a forward row and a backward row
    assert len(lab.partition_figure.node_cuts.get_segments()) == 0  # t = 8: every tensor group inside its node
    lab.controls["tensor_parallel"].value = 16
    lab.controls["pipeline_parallel"].value = 4
    assert lab.result["devices"] == 64 and lab.result["tensor_link"] == "InfiniBand"  # the same GPUs, off the node
    assert len(lab.partition_figure.node_cuts.get_segments()) > 0  # the red line inside each stage

    check_framework()


def check_framework():
    """The scope's claims about Megatron-LM, by moving the framework control as the prose says."""
    from course_lib.widgets import partition_lab

    ideal = partition_lab()
    lab = partition_lab(framework="megatron")
    rows = [row for row in lab.result["transfers"] if row["axis"] == "tensor"]
    exposed = [row["exposed_s"] for row in rows]
    assert exposed[0] > 0 and exposed[1] == 0  # the forward all-reduce exposed, the backward one hidden
    lab.controls["zero_stage"].value = 3
    assert "zero_stage=3 with pipeline_parallel=8 is not run by Megatron-LM" in lab.result["not_run"]
    ideal.controls["zero_stage"].value = 3
    assert lab.result["step_time_s"] == ideal.result["step_time_s"]  # the ideal model's numbers
