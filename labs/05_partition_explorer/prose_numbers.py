"""The quantities in lab 5's prose that no output prints (CHECKED: what each is, what checks it) and check(), which
works out the explore answers by moving the lab's controls; tests/test_lesson_numbers.py runs it."""

import inspect

from course_lib import budget, hardware, parallelism, units

CHECKED = {
    "200 Gb/s": "the default cluster's InfiniBand HDR adapters: check()",
    "18.8 s": "explore 3",
    "3.64 s": "explore 3",
    "1.31 s": "explore 3",
    "428 µs": "explore 1: one tensor-parallel call at the defaults",
    "339 ms": "explore 4: each sequence-parallel row",
    "1.35 s": "explore 4: the sequence-parallel rows' total",
    "537 MB": "explore 6: the all-to-all's payload per call",
    "1.27 ms": "explore 6: an all-to-all call inside a node",
    "2.69 ms": "explore 6: an all-to-all call over two nodes",
    "0 s": "explore 7: Megatron-LM's exposed backward tensor-parallel row",
    "657 ms": "explore 1 and 7: a tensor-parallel row",
    "15.1 s": "explore 7: the step as Megatron-LM runs it",
    "62 %": "explore 7: the reference calibration's GEMM efficiency, parallelism.REFERENCE_CALIBRATION: check()",
    "50 %": "explore 7: the ideal model's compute efficiency, budget's ideal: check()",
    "84.6 GB": "explore 7: the memory as Megatron-LM runs it",
    "3072": "explore 1: 4 all-reduces × 12 layers × 64 micro-batches: check()",
    "12": "explore 1: GPT-3's 96 layers over 8 stages",
    "32,768": "explore 6: the all-to-all's tokens, 32768 × 2 × 4096 × 2 bytes: check()",
    "4096": "explore 6: Mixtral 8x7B's hidden size, 32768 × 2 × 4096 × 2 bytes: check()",
}


def check():
    from course_lib.widgets import partition_lab

    lab = partition_lab()
    assert units.format_time(lab.result["tensor_time_s"]) == "1.31 s"  # the default's exposed tensor-parallel time
    tensor_rows = [row for row in lab.result["transfers"] if row["axis"] == "tensor"]
    assert {units.format_time(row["time_per_call_s"]) for row in tensor_rows} == {"428 µs"}
    assert sum(row["calls_per_step"] for row in tensor_rows) == 3072 == 4 * 12 * 64  # explore 1: 2 rows of 1536 calls
    sequence_parallel = partition_lab(sequence_parallel=True)
    tensor_rows = [row for row in sequence_parallel.result["transfers"] if row["axis"] == "tensor"]
    assert len(tensor_rows) == 4 and {units.format_time(row["time_s"]) for row in tensor_rows} == {"339 ms"}
    assert units.format_time(sequence_parallel.result["tensor_time_s"]) == "1.35 s"
    assert hardware.INFINIBAND_HDR_8X.bandwidth_bytes_per_s == 8 * 200 * units.GBIT and "HDR" in lab.result["cluster"]
    lab.controls["tensor_parallel"].value = 16
    lab.controls["pipeline_parallel"].value = 4
    assert lab.result["devices"] == 64
    assert units.format_time(lab.result["step_time_s"]) == "18.8 s"
    assert units.format_time(lab.result["tensor_time_s"]) == "3.64 s"

    check_experts_and_framework()


def check_experts_and_framework():
    """Explore 6 and 7, by moving the controls as the prose says."""
    from course_lib.widgets import partition_lab

    lab = partition_lab()
    moves = {
        "model": "Mixtral 8x7B",
        "cluster": "nodes of 8 H100 (NVLink 4, InfiniBand NDR)",
        "tensor_parallel": 1,
        "pipeline_parallel": 4,
        "grad_accum_steps": 16,
        "recompute": "full",
        "expert_parallel": 8,
    }
    for name, value in moves.items():
        lab.controls[name].value = value
    assert lab.values()["data_parallel"] == 8
    rows = [row for row in lab.result["transfers"] if row["axis"] == "expert"]
    assert len(rows) == 4 and {row["link_family"] for row in rows} == {"NVLink"}
    assert {units.format_bytes(row["payload_bytes"]) for row in rows} == {"537 MB"}
    assert rows[0]["payload_bytes"] == 32768 * 2 * 4096 * 2
    assert {units.format_time(row["time_per_call_s"]) for row in rows} == {"1.27 ms"}
    lab.controls["tensor_parallel"].value = 2
    rows = [row for row in lab.result["transfers"] if row["axis"] == "expert"]
    assert {row["link_family"] for row in rows} == {"InfiniBand"}
    assert {units.format_time(row["time_per_call_s"]) for row in rows} == {"2.69 ms"}
    assert len(lab.partition_figure.expert_cuts.get_segments()) == 1
    lab = partition_lab(framework="megatron")
    rows = [row for row in lab.result["transfers"] if row["axis"] == "tensor"]
    assert [units.format_time(row["exposed_s"]) for row in rows] == ["657 ms", "0 s"]
    assert units.format_time(lab.result["step_time_s"]) == "15.1 s"
    assert lab.result["compute_s"] < partition_lab().result["compute_s"]  # shorter than the ideal model's 17.3 s
    assert parallelism.REFERENCE_CALIBRATION.gemm_efficiency == 0.62
    assert inspect.signature(budget.partition_report).parameters["compute_efficiency"].default == 0.5  # the ideal
    assert units.format_bytes(lab.result["memory_bytes_per_device"]) == "84.6 GB" and not lab.result["fits"]
    lab.controls["zero_stage"].value = 3
    assert "zero_stage=3 with pipeline_parallel=8 is not run by Megatron-LM" in lab.result["not_run"]
    assert units.format_time(lab.result["step_time_s"]) == "17.3 s"  # the ideal model's numbers again
    lab.controls["framework"].value = "fsdp2-pipeline"
    assert lab.result["not_run"] == ""
