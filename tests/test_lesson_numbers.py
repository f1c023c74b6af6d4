"""Every number in the prose of the lessons comes from the output beside it or is checked here (issue 15).

A quantity in a markdown cell (a number with a unit: "3.57 ms", "78.3 %", "201 GB/s") must appear, as written, in
the stored outputs of its notebook. The few that cannot (figures quoted from a source, the answers of the exercises,
which the learner computes) are listed in CHECKED, and each is worked out by a test below with ``course_lib``. The
list is kept honest both ways: a listed quantity must still be in the prose, and a quantity that is neither printed
nor listed fails. The masters of the labs follow the same rule; the answers to their explore questions are checked
by moving the lab's controls.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import nbformat
import pytest

from course_lib import budget, collectives, compute, hardware, measure, parallelism, units, validation

ROOT = Path(__file__).resolve().parents[1]
UNIT = (
    r"(?:ms|µs|ns|s|kB|MB|GB|TB|KiB|MiB|GiB|GB/s|TB/s|Gb/s|Tb/s|TFLOP/s|PFLOP/s|EFLOP|GFLOP|TFLOP|FLOP/byte"
    r"|FLOP|%|days)"
)
# Bytes print with a space ("8 B"); "175B" without one is a model's name (its parameter count), not a size.
QUANTITY = re.compile(r"(?<![\w.$^{])(\d+(?:[.,]\d+)*)(?:\s?" + UNIT + r"|\sB)(?![\w/])")
YEAR = re.compile(r"^(?:19|20)\d\ds$")  # "the 2010s"

CHECKED = {
    "00_course_map": {
        "2.02 ms": "how units print a time: test_course_map_examples_are_how_units_print",
        "100 MB": "how units print a size: test_course_map_examples_are_how_units_print",
    },
    "01_mac": {
        "241 GFLOP": "exercise 1",
        "193 MB": "exercise 1",
        "1247 FLOP/byte": "exercise 1",
        "243 µs": "exercise 1",
        "25.4 days": "exercise 2",
        "2.039 TB/s": "exercise 3: the A100's datasheet HBM bandwidth",
        "112 GB": "exercise 4",
        "14 GB": "exercise 4",
    },
    "02_nccl": {
        "62239 µs": "quoted from the published nccl-tests log; the code cell uses it",
        "127997 µs": "quoted from the published nccl-tests log; the code cell uses it",
        "3.2 Tb/s": "the misconception's node rate, 8 × 400 Gb/s of InfiniBand NDR",
        "6.6 µs": "NCCL's tuning model, hardware.NCCL_BASE_LATENCY_S",
        "0.6 µs": "NCCL's tuning model, hardware.NCCL_NVLINK_HOP_LATENCY_S",
        "40 ms": "the single-rail flat ring of the hierarchical all-reduce table, 37.6 to 45 ms",
        "188.5 GB/s": "exercise 3's given busbw",
        "8 GiB": "exercise 3's given buffer",
        "0.4 %": "exercise 1",
        "3.6 MB": "exercise 2",
        "201 GB/s": "exercise 3",
        "42.7 ms": "exercise 3",
        "600 kB": "exercise 5",
    },
    "03_parallelism": {
        "2.8 TB": "GPT-3's 16 bytes of model state per parameter: test_lesson_03_computed_figures",
        "50 MB": "GPT-3's b·s·h × 2 bytes: test_lesson_03_computed_figures",
        "30%": "quoted from ZeRO §3.2 (Rajbhandari et al. 2020)",
        "70 %": "selective recomputation's saving for GPT-3: test_lesson_03_computed_figures",
        "65 %": "Korthikanti et al.'s figure for MT-NLG; exercise 3 computes 65.3 %",
        "2.7 %": "quoted from Korthikanti et al. 2022 (extra FLOPs of selective recomputation, GPT-3)",
        "1.6 %": "quoted from Korthikanti et al. 2022 (extra FLOPs of selective recomputation, MT-NLG)",
        "10 ms": "the timeline's chosen t_f, T_F = 10 * units.MS in the code",
        "52 %": "Narayanan et al. 2021: 163 of the A100's 312 TFLOP/s, test_lesson_03_computed_figures",
        "15 GB": "exercise 2",
        "3.28 GB": "exercise 2",
        "18.3 GB": "exercise 2",
        "1.64 GB": "exercise 2",
        "0.82 GB": "exercise 2",
        "15.8 GB": "exercise 2",
        "65.3 %": "exercise 3",
        "4.4 %": "exercise 4",
    },
    "04_communication_budget": {
        "2.8 TB": "GPT-3's 16 bytes of model state per parameter, lesson 03: test_lesson_03_computed_figures",
        "200 Gb/s": "Selene's InfiniBand HDR adapters, hardware.SELENE_3072: test_lesson_04_quoted_figures",
        "3.35 TB/s": "the H100's datasheet HBM bandwidth, hardware.H100: test_lesson_04_quoted_figures",
        "52 %": "Narayanan et al. 2021: 163 of the A100's 312 TFLOP/s, test_lesson_03_computed_figures",
        "12.9 TB/s": "quoted from Narayanan et al. 2021 §5.9 (effective bisection bandwidth of the 3072-GPU run)",
        "2.04 ms": "exercise 1",
        "22 %": "exercise 4",
        "88 %": "exercise 4",
    },
    "05_measure": {
        "100 ms": "the recorded run's longest times: test_lesson_05_recorded_run",
        "1 MiB": "only the live sweep prints it; the recorded run's B at 1 MiB: test_lesson_05_recorded_run",
        "1 MB": "exercise 2's chosen cut-off, not a result",
        "64 MB": "exercise 2's chosen cut-off, not a result",
        "450 GB/s": "NVLink 4's one-way rate per GPU, hardware.NVLINK4: test_lesson_05_recorded_run",
    },
    "06_model_meets_measurements": {
        "80 GB": "the H100's HBM: test_lesson_06_quoted_figures",
        "989.5 TFLOP/s": "the Playbook's peak, validation.PLAYBOOK_PEAK_FLOPS_PER_S: test_lesson_06_quoted_figures",
        "25 MB": "the calibration's gradient bucket (PyTorch DDP's default): test_lesson_06_quoted_figures",
    },
    "07_capstone": {
        "10 %": "a hypothetical slowdown in the motivation, not a result",
        "900 GB/s": "the DGX H100 datasheet's NVLink 4, hardware.NVLINK4: test_lesson_07_quoted_figures",
        "400 Gb/s": "the DGX H100 datasheet's ConnectX-7, hardware.INFINIBAND_NDR_8X: test_lesson_07_quoted_figures",
        "43 %": "quoted from Llama 3's paper (Grattafiori et al. 2024): test_lesson_07_quoted_figures",
        "430 TFLOP/s": "quoted from Llama 3's paper (Grattafiori et al. 2024): test_lesson_07_quoted_figures",
        "19 GB": "80 GB less the candidate's 61 GB: test_lesson_07_headroom",
        "98 %": "the winner's 78.3 GB of 80 GB: test_lesson_07_headroom",
        "11 %": "the recommended plan's worst case, 1.11×: test_lesson_07_headroom",
        "17.5 GB": "80 GB less the recommended plan's 62.5 GB: test_lesson_07_headroom",
        "7.72 GB": "exercise 1",
        "50 %": "exercise 2's given scenario",
        "63.4 s": "exercise 2",
        "0.3 %": "exercise 2",
        "68.4 s": "exercise 2",
        "19.9 %": "exercise 3",
        "44 s": "exercise 3",
        "33.1 s": "exercise 4",
        "51.6 s": "exercise 5",
        "0.2 %": "exercise 5",
        "128 GB": "exercise 5",
        "16 GB": "exercise 5",
    },
    # Lab masters (their student versions carry the same prose; outputs are stored in the masters only). The answers
    # to the explore questions come from moving the lab's controls: the tests below move them.
    "labs/source/01_ring_allreduce": {
        "1 kB": "the payload explore 2 and 4 and question 2 set, not a result",
        "1 GB": "the payload explore 5 sets, not a result",
        "10 µs": "explore 3's doubled α, not a result",
        "100 GB/s": "explore 3's doubled B, not a result",
        "2 GB": "question 4's given gradients, not a result",
        "1 µs": "question 4's given NVLink α, not a result",
        "900 GB/s": "the DGX H100 datasheet's NVLink 4, hardware.NVLINK4: test_lab_01_explore_answers",
        "400 Gb/s": "the DGX H100 datasheet's ConnectX-7, hardware.INFINIBAND_NDR_8X: test_lab_01_explore_answers",
        "3.5 MB": "explore 1",
        "140 µs": "explore 1",
        "3.9 ms": "explore 2",
        "9 %": "explore 2",
        "150 µs": "explore 2",
        "4 MB": "explore 3",
        "15.1 µs": "explore 4",
        "3.53 ms": "explore 4",
        "4.12 ms": "explore 4",
        "30 µs": "explore 4",
        "40.2 µs": "explore 4",
        "110 µs": "explore 4",
        "3.78 ms": "explore 4",
        "16 ms": "explore 4",
        "39.8 GB/s": "explore 5",
        "19.9 GB/s": "explore 5",
        "10.2 ms": "explore 5",
        "50.2 ms": "explore 5",
    },
    "labs/source/02_global_batch": {},  # every quantity in its prose is printed beside it
    "labs/source/03_memory_budget": {
        "1 GB": "the definition of a decimal gigabyte, not a result",
        "100 kB": "the right panel's log axis, widgets.memory.LOG_AXIS_BYTES: test_lab_03_explore_answers",
        "100 TB": "the right panel's log axis, widgets.memory.LOG_AXIS_BYTES: test_lab_03_explore_answers",
        "53.9 GB": "explore 1",
        "32.7 GB": "explore 1",
        "682 MB": "explore 1",
        "20.5 GB": "explore 1",
        "15.7 GB": "explore 1 and 6",
        "32 MB": "explore 2",
        "21.2 GB": "explore 2",
        "10.9 GB": "explore 2",
        "76.6 GB": "explore 3",
        "3.39 GB": "explore 3",
        "6.88 GB": "explore 3",
        "86.9 GB": "explore 3",
        "48.8 GB": "explore 3",
        "33.8 GB": "explore 3",
        "5.13 GB": "explore 4",
        "31.4 GB": "explore 5",
        "55.6 GB": "explore 5",
        "9.27 GB": "explore 6",
        "16 GB": "explore 6: the TPU v5e's HBM",
        "276 MB": "explore 6",
    },
    "labs/source/04_pipeline_schedule": {
        "100 %": "explore 4's threshold (a bubble above the ideal time), not a result",
        "75 %": "explore 1",
        "18.8 %": "explore 1 and 3",
        "9.38 %": "explore 3",
        "175 %": "explore 4",
        "63.6 %": "explore 4",
        "23.4 %": "explore 5",
        "5.86 %": "explore 5",
    },
    "labs/source/05_measure_collectives": {
        "8 B": "the sweep's first size; the recorded sizes of question 1: test_lab_05_quoted_figures",
        "20 %": "explore 1's given tolerance, not a result",
        "64 MiB": "explore 3's given setting, not a result",
        "512 KiB": "the last of question 1's recorded sizes: test_lab_05_quoted_figures",
        "1 GiB": "question 2's row of the published nccl-tests log: test_lab_05_quoted_figures",
        "4253.0 µs": "question 2's row of the published nccl-tests log: test_lab_05_quoted_figures",
        "441.81 GB/s": "question 2's row of the published nccl-tests log: test_lab_05_quoted_figures",
    },
    "labs/source/06_partition_explorer": {
        "200 Gb/s": "the default cluster's InfiniBand HDR adapters: test_lab_06_explore_answers",
        "18.6 s": "explore 3",
        "3.5 s": "explore 3",
        "945 ms": "explore 3",
    },
    "labs/source/07_serving": {
        "80 GB": "the H100's HBM: test_lab_07_explore_answers",
        "5 µs": "InfiniBand's α, hardware.INFINIBAND_NDR_8X: test_lab_07_explore_answers",
        "291 ms": "explore 1",
        "85.8 ms": "explore 1",
        "5.19 ms": "explore 1",
        "2.24 ms": "explore 1",
        "3.15 s": "explore 1",
        "8.33 ms": "explore 1",
        "9.08 ms": "explore 2",
        "14 ms": "explore 2",
        "18.9 ms": "explore 2",
        "46.7 ms": "explore 2",
        "16 ms": "explore 2",
        "4.72 MB": "explore 3",
        "328 kB": "explore 3",
        "11.4 ms": "explore 4",
        "7.45 ms": "explore 2 and 4",
        "6.52 ms": "explore 4",
        "8.45 ms": "explore 4",
        "14.2 ms": "explore 4",
        "1.37 ms": "explore 4",
        "7.04 ms": "explore 4",
        "7.65 ms": "explore 5",
        "344 GB": "explore 6",
        "43 GB": "explore 6",
        "93.1 s": "explore 6",
        "20.4 ms": "explore 6",
        "12.8 ms": "explore 6",
    },
}


def prose_and_outputs(name):
    """A lesson by name ("03_parallelism") or a lab master by its path ("labs/source/06_partition_explorer")."""
    notebook = nbformat.read(ROOT / f"{name if '/' in name else 'notebooks/' + name}.ipynb", as_version=4)
    prose = [(index, cell.source) for index, cell in enumerate(notebook.cells) if cell.cell_type == "markdown"]
    outputs = "\n".join(
        output.get("text", "") + str(output.get("data", {}).get("text/plain", ""))
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    return prose, outputs, code


@pytest.mark.parametrize("name", sorted(CHECKED))
def test_every_quantity_in_the_prose_is_printed_or_checked(name):
    prose, outputs, _ = prose_and_outputs(name)
    found = {(index, match.group(0)) for index, text in prose for match in QUANTITY.finditer(text)}
    found = {(index, quantity) for index, quantity in found if not YEAR.match(quantity)}
    unbacked = sorted((index, q) for index, q in found if q not in outputs and q not in CHECKED[name])
    assert not unbacked, (
        f"{name}: quantities in the prose that no output shows and no test checks (cell, quantity): {unbacked}; "
        "print them beside the prose, or check them in tests/test_lesson_numbers.py"
    )
    stale = sorted(set(CHECKED[name]) - {quantity for _, quantity in found})
    assert not stale, f"{name}: CHECKED lists quantities the prose no longer has: {stale}"


def test_course_map_examples_are_how_units_print():
    assert units.format_time(collectives.comm_time(4, 5 * units.US, 100 * units.MB, 50 * units.GB)) == "2.02 ms"
    assert units.format_bytes(100e6) == "100 MB"


def test_lesson_01_exercise_answers():
    flops, moved = compute.gemm_flops(2048, 14336, 4096), compute.gemm_bytes(2048, 14336, 4096)
    assert units.format_flops(flops) == "241 GFLOP" and units.format_bytes(moved) == "193 MB"
    assert round(compute.arithmetic_intensity(flops, moved)) == 1247
    h100 = hardware.H100
    time_s = compute.roofline_time(flops, moved, h100.peak("bf16"), h100.hbm_bandwidth_bytes_per_s)
    assert units.format_time(time_s) == "243 µs" and time_s == pytest.approx(flops / 989e12)  # compute-bound
    days = compute.training_flops(175e9, 300e9) / (1024 * 140e12) / 86400
    assert f"{days:.1f} days" == "25.4 days" and f"{days * 8 / 6:.1f}" == "33.9"
    assert units.format_bandwidth(hardware.A100.hbm_bandwidth_bytes_per_s, digits=4) == "2.039 TB/s"
    assert units.format_bytes(parallelism.zero_model_state_bytes(7e9, 1, 0)) == "112 GB"
    assert units.format_bytes(2 * 7e9) == "14 GB"


def test_lesson_02_quoted_figures():
    _, _, code = prose_and_outputs("02_nccl")
    assert "62239 * units.US" in code and "127997 * units.US" in code  # the published times the cells use
    ndr = hardware.INFINIBAND_NDR_8X
    assert ndr.bandwidth_bytes_per_s * 8 == pytest.approx(3.2e12)  # 8 × 400 Gb/s = 3.2 Tb/s, in bits
    assert hardware.NCCL_BASE_LATENCY_S == pytest.approx(6.6e-6)
    assert hardware.NCCL_NVLINK_HOP_LATENCY_S == pytest.approx(0.6e-6)
    nvlink, network = hardware.NVLINK4, hardware.INFINIBAND_NDR_8X
    links = (
        nvlink.one_way_bytes_per_s_per_device(),
        nvlink.latency_s,
        network.one_way_bytes_per_s_per_device(devices_per_node=8),
        network.latency_s,
    )
    single_rail = [
        collectives.multirail_ring_allreduce_time(1 * units.GB, nodes, 8, *links, rails=1) for nodes in (2, 4, 16, 64)
    ]
    assert all(35e-3 < time_s < 46e-3 for time_s in single_rail), single_rail  # "about 40 ms whatever the nodes"


def test_lesson_02_exercise_answers():
    ring = collectives.ring_allreduce_time(16, 1e9, 50e9, 5e-6)
    assert units.format_time(ring) == "37.6 ms" and units.format_percent(2 * 15 * 5e-6 / ring, digits=1) == "0.4 %"
    crossover = collectives.latency_bandwidth_crossover_bytes("all_reduce", 8, 450e9, 1e-6)
    assert units.format_bytes(crossover) == "3.6 MB"
    algbw = 188.5e9 / collectives.busbw_factor("all_gather", 16)
    assert units.format_bandwidth(algbw) == "201 GB/s"
    assert units.format_time(8 * 2**30 / algbw) == "42.7 ms"
    swap = collectives.equal_time_payload_bytes("all_reduce", 8, 50e9, 5e-6, "recursive_doubling", "rabenseifner")
    assert units.format_bytes(swap) == "600 kB"


def test_lesson_03_computed_figures():
    gpt3 = parallelism.GPT3_175B
    states = parallelism.zero_model_state_bytes(gpt3.params, 1, 0)
    assert f"{states / 1e12:.1f} TB" == "2.8 TB"  # 16 bytes per parameter, replicated by plain data parallelism
    assert round(2 * 2048 * gpt3.hidden / 1e6) == 50  # one b·s·h tensor of 2-byte activations, in MB
    saving = 1 - activation_bytes(gpt3, recompute="selective") / activation_bytes(gpt3)
    assert units.format_percent(saving, digits=2) == "70 %"
    assert units.format_percent(163e12 / hardware.A100.peak("bf16"), digits=2) == "52 %"
    _, _, code = prose_and_outputs("03_parallelism")
    assert "T_F, T_B = 10 * units.MS, 20 * units.MS" in code


def activation_bytes(model, recompute="none"):
    return parallelism.activation_bytes_per_layer(model.seq_len, 1, model.hidden, model.heads, recompute=recompute)


def test_lesson_03_exercise_answers():
    psi = 7.5e9
    assert units.format_bytes(2 * psi) == "15 GB"
    answers = ((32, "3.28 GB", "18.3 GB"), (64, "1.64 GB", "16.6 GB"), (128, "820 MB", "15.8 GB"))
    for data_parallel, sharded, total in answers:
        assert units.format_bytes(14 * psi / data_parallel) == sharded  # the prose writes 820 MB as 0.82 GB
        assert units.format_bytes(parallelism.zero_model_state_bytes(psi, data_parallel, 2)) == total
    mt_nlg = parallelism.MT_NLG_530B
    assert 5 * mt_nlg.heads * mt_nlg.seq_len / mt_nlg.hidden == 64
    saving = 1 - activation_bytes(mt_nlg, recompute="selective") / activation_bytes(mt_nlg)
    assert units.format_percent(saving) == "65.3 %" and units.format_percent(saving, digits=2) == "65 %"
    assert parallelism.pipeline_bubble_fraction(8, 139) > 0.05 >= parallelism.pipeline_bubble_fraction(8, 140)
    # interleaved m must be a multiple of p: 32 is not enough, 40 is the next one
    assert parallelism.pipeline_bubble_fraction(8, 32, 4) > 0.05 >= parallelism.pipeline_bubble_fraction(8, 40, 4)
    assert units.format_percent(parallelism.pipeline_bubble_fraction(8, 40, 4), digits=2) == "4.4 %"


def test_lesson_04_quoted_figures():
    selene = hardware.SELENE_3072
    assert selene.inter_node_link.bandwidth_bytes_per_s == 8 * 200 * units.GBIT  # 8 × 200 Gb/s per node
    assert selene.inter_bandwidth_bytes_per_s == pytest.approx(25e9)  # each GPU's share, printed beside the prose
    assert units.format_bandwidth(hardware.H100.hbm_bandwidth_bytes_per_s) == "3.35 TB/s"


def test_lesson_04_exercise_answers():
    assert units.format_time(collectives.comm_time(8, 5 * units.US, 100 * units.MB, 50 * units.GB)) == "2.04 ms"
    # 2: 8 micro-batches instead of 96 leave the reduce-scatter's 205 ms against the same 149 ms window
    for micro_batches in (96, 8):
        plan = parallelism.ParallelPlan(
            data_parallel=16, tensor_parallel=8, pipeline_parallel=8, zero_stage=1, micro_batch=1,
            grad_accum_steps=micro_batches, recompute="selective", sequence_parallel=True,
        )  # fmt: skip
        step = budget.step_time(parallelism.GPT3_175B, plan, hardware.SELENE_3072, calibration=None)
        assert units.format_time(step.overlapped_s["data"]) == "149 ms"
        assert units.format_time(step.exposed_s["data"]) == "260 ms"  # the reduce-scatter's 55.5 ms + the 205 ms gather

    def strong_scaling(data_parallel, global_batch):
        plan = parallelism.ParallelPlan(
            data_parallel=data_parallel, tensor_parallel=8, zero_stage=1, micro_batch=1,
            grad_accum_steps=global_batch // data_parallel, recompute="selective", sequence_parallel=True,
        )  # fmt: skip
        return budget.step_time(parallelism.MEGATRON_22B, plan, hardware.SELENE_3072, calibration=None)

    first, last = strong_scaling(1, 3072), strong_scaling(384, 3072)
    assert units.format_percent(last.exposed_communication_s / last.total_s, digits=2) == "22 %"
    assert units.format_percent(first.total_s * 8 / (last.total_s * 3072), digits=2) == "88 %"
    assert units.format_time(last.exposed_s["data"]) == "287 ms"  # "the data-parallel term stays at 287 ms"


def test_lesson_05_recorded_run():
    recorded = measure.Measurements.from_csv(next((measure.DATA_DIR / "mpi").glob("*_all_reduce.csv")))
    times = [row.median_s for row in recorded]
    assert min(times) < 10e-6 and 100e-3 < max(times) < 1.0 and max(times) / min(times) > 1e4  # "over four decades"
    ring = recorded.select(algorithm="ring")
    at = {size: ring.select(size_bytes=size).rows[0].busbw_bytes_per_s for size in (2**20, 2**26)}
    assert at[2**26] < at[2**20]  # "B measured at 64 MiB is lower than at 1 MiB"
    assert hardware.NVLINK4.one_way_bytes_per_s_per_device() == pytest.approx(450e9)


def test_lesson_06_quoted_figures():
    assert units.format_bytes(hardware.H100.hbm_capacity_bytes) == "80 GB"
    assert validation.PLAYBOOK_PEAK_FLOPS_PER_S == 989.5e12
    assert units.format_bytes(validation.PLAYBOOK_CALIBRATION.bucket_bytes) == "25 MB"


# Lesson 07's setting: Llama 3 70B on eight DGX H100 nodes, the calibrated model, 512 sequences per step.
CAPSTONE = dataclasses.replace(hardware.DGX_H100, nodes=8)
CAL = validation.PLAYBOOK_CALIBRATION
CANDIDATE = parallelism.ParallelPlan(
    data_parallel=2, tensor_parallel=8, pipeline_parallel=4, zero_stage=1, grad_accum_steps=256,
    sequence_parallel=True, attention="flash",
)  # fmt: skip
RECOMMENDED = parallelism.ParallelPlan(
    data_parallel=4, tensor_parallel=2, pipeline_parallel=8, zero_stage=1, grad_accum_steps=128, virtual_stages=2,
    schedule="interleaved", recompute="full", sequence_parallel=True, attention="flash",
)  # fmt: skip
WINNER = {"data_parallel": 16, "tensor_parallel": 4, "pipeline_parallel": 1, "zero_stage": 2, "micro_batch": 4}


def test_lesson_07_quoted_figures():
    assert hardware.NVLINK4.bandwidth_bytes_per_s == 900e9 and hardware.NVLINK4.direction == "two-way"
    assert hardware.INFINIBAND_NDR_8X.bandwidth_bytes_per_s == 8 * 400 * units.GBIT  # 8 adapters of 400 Gb/s
    assert units.format_percent(430e12 / hardware.H100.peak("bf16"), digits=2) == "43 %"


def test_lesson_07_headroom():
    capacity = hardware.H100.hbm_capacity_bytes
    candidate = parallelism.memory_breakdown(parallelism.LLAMA3_70B, CANDIDATE, calibration=CAL).total
    assert units.format_bytes(candidate) == "61 GB" and units.format_bytes(capacity - candidate, digits=2) == "19 GB"
    recommended = parallelism.memory_breakdown(parallelism.LLAMA3_70B, RECOMMENDED, calibration=CAL).total
    assert units.format_bytes(recommended) == "62.5 GB" and units.format_bytes(capacity - recommended) == "17.5 GB"
    _, outputs, _ = prose_and_outputs("07_capstone")
    assert "memory 78.3 GB of 80 GB" in outputs and units.format_percent(78.3e9 / capacity, digits=2) == "98 %"
    assert "1.11×  network at nominal" in outputs  # the recommended plan's worst case: 11 % slower


def test_lesson_07_exercise_answers():
    model = parallelism.LLAMA3_70B
    in_flight = parallelism.pipeline_in_flight_microbatches(8, 128, "interleaved", 2)
    by_hand = 2 * model.hidden / 2 * model.seq_len * 10 * in_flight
    assert in_flight == 11.5 and units.format_bytes(by_hand) == "7.72 GB"
    assert by_hand == pytest.approx(parallelism.memory_breakdown(model, RECOMMENDED, calibration=CAL).activations)
    # 2: the network at 50 % of nominal
    slow_network = dataclasses.replace(CAL, network_efficiency=0.5)
    search = budget.search_plans(model, CAPSTONE, 512, calibration=slow_network, attention=("flash",))
    best = search.row(0)["step_time_s"]
    winner = search.row(search.find(**WINNER, grad_accum_steps=8, recompute="full", sequence_parallel=True))
    assert units.format_time(best) == "63.4 s"
    assert units.format_percent(winner["step_time_s"] / best - 1, digits=1) == "0.3 %"
    assert units.format_time(budget.step_time(model, RECOMMENDED, CAPSTONE, calibration=slow_network).total_s) == (
        "68.4 s"
    )
    # 3: the ideal model's exposed tensor-parallel share at η = 0.7, and the step at which it is a quarter
    step = budget.step_time(model, CANDIDATE, CAPSTONE, compute_efficiency=0.7, calibration=None)
    assert units.format_percent(step.exposed_s["tensor"] / step.total_s) == "19.9 %"
    assert units.format_time(step.exposed_s["tensor"] / 0.25, digits=2) == "44 s"
    # 4: 256 sequences per step
    search = budget.search_plans(model, CAPSTONE, 256, calibration=CAL, attention=("flash",))
    assert units.format_time(search.row(0)["step_time_s"]) == "33.1 s"
    # 5: Llama 3 8B on one node
    search = budget.search_plans(parallelism.LLAMA3_8B, hardware.DGX_H100, 512, calibration=CAL, attention=("flash",))
    first, second = search.row(0)["step_time_s"], search.row(1)["step_time_s"]
    assert units.format_time(first) == "51.6 s" and units.format_percent(second / first - 1, digits=1) == "0.2 %"
    states = parallelism.zero_model_state_bytes(parallelism.LLAMA3_8B.params, 1, 0)
    assert units.format_bytes(states) == "128 GB"
    assert (
        units.format_bytes(parallelism.zero_model_state_bytes(parallelism.LLAMA3_8B.params, 8, 3), digits=2) == "16 GB"
    )


@pytest.mark.slow
def test_lab_01_explore_answers():
    from course_lib.widgets import ring_allreduce_lab

    def run(**settings):  # the lab at its defaults (8 ranks, 100 MB, 50 GB/s, 5 µs, ring), then the controls moved
        lab = ring_allreduce_lab()
        for name, value in settings.items():
            lab.controls[name].value = value
        return lab.result

    def ms(r, key="time_s"):
        return units.format_time(r[key])

    assert hardware.NVLINK4.bandwidth_bytes_per_s == 900e9 and hardware.NVLINK4.direction == "two-way"
    assert hardware.INFINIBAND_NDR_8X.bandwidth_bytes_per_s == 8 * 400 * units.GBIT  # 8 adapters of 400 Gb/s
    # 1: the payload where the two terms are equal
    equal = run(payload_bytes=2 * units.MB)
    assert ms(equal, "latency_term_s") == ms(equal, "bandwidth_term_s") == "70 µs"
    assert units.format_bytes(equal["wire_bytes"]) == "3.5 MB" and ms(equal) == "140 µs"
    # 2: double the ranks at 100 MB and at 1 kB
    default, doubled = run(), run(ranks=16)
    assert (ms(default), ms(doubled)) == ("3.57 ms", "3.9 ms")
    assert units.format_percent(doubled["time_s"] / default["time_s"] - 1, digits=1) == "9 %"
    assert (ms(run(payload_bytes=1e3)), ms(run(payload_bytes=1e3, ranks=16))) == ("70 µs", "150 µs")
    # 3: each doubling doubles the crossover
    for setting in ({"latency_s": 10 * units.US}, {"bandwidth_bytes_per_s": 100 * units.GB}, {"ranks": 16}):
        assert units.format_bytes(run(**setting)["crossover_bytes"]) == "4 MB"
    # 4: the fastest algorithm on 8 and on 12 ranks
    small = run(payload_bytes=1e3)
    assert small["fastest_algorithm"] == "recursive_doubling" and ms(small, "recursive_doubling_time_s") == "15.1 µs"
    assert default["fastest_algorithm"] == "rabenseifner" and ms(default, "rabenseifner_time_s") == "3.53 ms"
    assert ms(default, "double_binary_tree_time_s") == "4.12 ms"
    small = run(ranks=12, payload_bytes=1e3)
    assert small["fastest_algorithm"] == "double_binary_tree"
    assert [ms(small, f"{a}_time_s") for a in ("double_binary_tree", "binomial_tree", "ring")] == [
        "30 µs",
        "40.2 µs",
        "110 µs",
    ]
    large = run(ranks=12)
    assert large["fastest_algorithm"] == "ring"
    assert [ms(large, f"{a}_time_s") for a in ("ring", "double_binary_tree", "binomial_tree")] == [
        "3.78 ms",
        "4.12 ms",
        "16 ms",
    ]
    # 5: algbw against busbw at 1 GB ("busbw: 50, 49.9, 49.2 and 39.8 GB/s; algbw: 50, 28.5, 25 and 19.9 GB/s")
    rates = [run(payload_bytes=1 * units.GB, ranks=p) for p in (2, 8, 64)]
    assert [units.format_bandwidth(r["busbw_bytes_per_s"]) for r in rates] == ["50 GB/s", "49.9 GB/s", "49.2 GB/s"]
    assert [units.format_bandwidth(r["algbw_bytes_per_s"]) for r in rates] == ["50 GB/s", "28.5 GB/s", "25 GB/s"]
    widest = run(payload_bytes=1 * units.GB, ranks=1024)
    assert units.format_bandwidth(widest["busbw_bytes_per_s"]) == "39.8 GB/s"
    assert units.format_bandwidth(widest["algbw_bytes_per_s"]) == "19.9 GB/s"
    assert (ms(widest, "latency_term_s"), ms(widest)) == ("10.2 ms", "50.2 ms") and widest["phases"] == 2046


def test_lab_03_explore_answers():
    from course_lib.widgets import memory, memory_budget_lab

    def fit(**settings):  # the lab at its defaults (GPT-3 175B, d = t = p = 8, ZeRO-1), then the controls moved
        lab = memory_budget_lab()
        for name, value in settings.items():
            lab.controls[name].value = value
        return {key: units.format_bytes(value) for key, value in lab.result.items() if key.endswith("_bytes")}

    assert tuple(units.format_bytes(b) for b in memory.LOG_AXIS_BYTES) == ("100 kB", "100 TB")
    # 1: the ZeRO stages
    default = fit()
    assert (default["zero0_total_bytes"], default["zero0_optimizer_state_bytes"]) == ("53.9 GB", "32.7 GB")
    assert (default["zero2_gradients_bytes"], default["zero2_total_bytes"]) == ("682 MB", "20.5 GB")
    assert (default["zero3_parameters_bytes"], default["zero3_total_bytes"]) == ("682 MB", "15.7 GB")
    # 2: ZeRO-1's floor at d = 1024
    widest = fit(data_parallel=1024)
    assert (widest["optimizer_state_bytes"], widest["total_bytes"]) == ("32 MB", "21.2 GB")
    assert units.format_bytes(2 * 5456744448) == "10.9 GB" and widest["parameters_bytes"] == "5.46 GB"
    # 3: the micro-batch, then full recomputation
    assert (fit(micro_batch=6)["total_bytes"], fit(micro_batch=6)["headroom_bytes"]) == ("76.6 GB", "3.39 GB")
    seven = memory_budget_lab()
    seven.controls["micro_batch"].value = 7
    assert not seven.result["fits"] and units.format_bytes(-seven.result["headroom_bytes"]) == "6.88 GB"
    assert units.format_bytes(seven.result["total_bytes"]) == "86.9 GB"
    recomputed = fit(micro_batch=7, recompute="full")
    assert (recomputed["total_bytes"], recomputed["activations_bytes"]) == ("48.8 GB", "33.8 GB")
    # 4: fewer micro-batches in flight; 5: without sequence parallelism, then without recomputation
    assert fit(grad_accum_steps=4)["activations_bytes"] == "5.13 GB"
    assert fit(sequence_parallel=False)["activations_bytes"] == "31.4 GB"
    assert fit(sequence_parallel=False, recompute="none")["activations_bytes"] == "55.6 GB"
    # 6: the 16 GB TPU v5e
    tpu = memory_budget_lab()
    tpu.controls["device"].value = "TPU v5e"
    assert units.format_bytes(tpu.result["capacity_bytes"]) == "16 GB"
    assert units.format_bytes(-tpu.result["headroom_bytes"]) == "9.27 GB"
    tpu.controls["zero_stage"].value = 3
    assert tpu.result["fits"] and units.format_bytes(tpu.result["headroom_bytes"]) == "276 MB"


def test_lab_04_explore_answers():
    from course_lib.widgets import pipeline_lab

    def run(**settings):  # the lab at its defaults (1F1B, p = 4, m = 8), then the controls moved as the question says
        lab = pipeline_lab()
        for name, value in settings.items():
            lab.controls[name].value = value
        r = lab.result
        return units.format_percent(r["bubble_fraction"]), r["bubble_time"], r["total_time"], r["peak_in_flight"]

    # 1: more micro-batches, the same 9 t_f of idle time
    assert run(microbatches=4)[:2] == ("75 %", 9.0) and run(microbatches=16)[:2] == ("18.8 %", 9.0)
    # 3: interleaving, v = 2 then 4
    assert run(virtual_stages=2)[0] == "18.8 %" and run(virtual_stages=2)[2:] == (28.5, 5.5)
    assert run(virtual_stages=4) == ("9.38 %", 2.25, 26.25, 4.75)
    # 4: p = 8, m = 4, a bubble above 100 %
    lab = pipeline_lab()
    lab.controls["stages"].value, lab.controls["microbatches"].value = 8, 4
    assert units.format_percent(lab.result["bubble_fraction"]) == "175 %"
    assert units.format_percent(lab.result["bubble_share_of_step"]) == "63.6 %" and lab.result["total_time"] == 33.0
    # 5: the largest pipeline, 1F1B then v = 4
    assert run(stages=16, microbatches=64) == ("23.4 %", 45.0, 237.0, 16.0)
    assert run(stages=16, microbatches=64, virtual_stages=4) == ("5.86 %", 11.25, 203.25, 19.75)


def test_lab_05_quoted_figures():
    _, _, code = prose_and_outputs("labs/source/05_measure_collectives")
    assert "RECORDED_SIZES_BYTES = [8, 32, 128, 512, 2048, 8192, 32768, 131072, 524288]" in code
    assert units.format_bytes(524288, binary=True) == "512 KiB" and units.format_bytes(8) == "8 B"
    log = (measure.DATA_DIR / "nccl_tests" / "aws_p5_1node_8xH100_nvlink_all_reduce.txt").read_text(encoding="utf-8")
    row = next(line.split() for line in log.splitlines() if "  1073741824  " in line)
    assert row[6:9] == ["4253.0", "252.47", "441.81"]  # time (µs), algbw, busbw (GB/s)
    assert units.format_bytes(2**30, binary=True) == "1 GiB"
    busbw = collectives.busbw_bytes_per_s("all_reduce", 8, 2**30, 4253.0e-6)
    assert busbw == pytest.approx(441.81e9, rel=1e-3)


def test_lab_06_explore_answers():
    from course_lib.widgets import partition_lab

    lab = partition_lab()
    assert units.format_time(lab.result["tensor_time_s"]) == "945 ms"  # the default's exposed tensor-parallel time
    assert hardware.INFINIBAND_HDR_8X.bandwidth_bytes_per_s == 8 * 200 * units.GBIT and "HDR" in lab.result["cluster"]
    lab.controls["tensor_parallel"].value = 16
    lab.controls["pipeline_parallel"].value = 4
    assert lab.result["devices"] == 64
    assert units.format_time(lab.result["step_time_s"]) == "18.6 s"
    assert units.format_time(lab.result["tensor_time_s"]) == "3.5 s"


def test_lab_07_explore_answers():
    from course_lib.widgets import serving_lab

    def serve(**settings):  # the lab at its defaults, then the controls moved as the question says
        lab = serving_lab()
        for name, value in settings.items():
            lab.controls[name].value = value
        return lab.result

    def ms(r, key):
        return units.format_time(r[key])

    default = serve()
    assert units.format_bytes(default["capacity_bytes"]) == "80 GB"
    assert units.format_time(hardware.INFINIBAND_NDR_8X.latency_s) == "5 µs"
    # 1: prefill against decode, then 8192-token prompts
    assert (ms(default, "prefill_compute_s"), ms(default, "prefill_all_reduce_s")) == ("291 ms", "85.8 ms")
    assert (ms(default, "weight_read_s"), ms(default, "all_reduce_latency_s")) == ("5.19 ms", "2.24 ms")
    long_prompt = serve(prompt_len=8192)
    assert (ms(long_prompt, "time_to_first_token_s"), ms(long_prompt, "time_per_output_token_s")) == (
        "3.15 s",
        "8.33 ms",
    )
    # 2: batching
    assert ms(serve(sequences=64), "time_per_output_token_s") == "9.08 ms"
    assert ms(serve(sequences=256), "time_per_output_token_s") == "14 ms" and serve(sequences=256)["bound"] == "memory"
    at_384 = serve(sequences=384)
    assert ms(at_384, "time_per_output_token_s") == "18.9 ms" and at_384["bound"] == "compute"
    at_1024 = serve(sequences=1024)
    assert (ms(at_1024, "time_per_output_token_s"), ms(at_1024, "kv_read_s")) == ("46.7 ms", "16 ms")
    # 3: grouped-query attention against GPT-3's full multi-head cache
    gpt3 = serve(model="GPT-3 175B")
    assert units.format_bytes(gpt3["kv_cache_bytes_per_sequence_token"]) == "4.72 MB"
    assert units.format_bytes(default["kv_cache_bytes_per_sequence_token"]) == "328 kB"
    # 4: the tensor-parallel degree at batch 1
    times = {t: ms(serve(sequences=1, tensor_parallel=t), "time_per_output_token_s") for t in (4, 8, 16, 32, 64)}
    assert times == {4: "11.4 ms", 8: "7.45 ms", 16: "6.52 ms", 32: "8.45 ms", 64: "14.2 ms"}
    for t, weights, latency in ((16, "2.64 ms", "3.84 ms"), (32, "1.37 ms", "7.04 ms")):  # beyond the optimum
        r = serve(sequences=1, tensor_parallel=t)
        assert (ms(r, "weight_read_s"), ms(r, "all_reduce_latency_s")) == (weights, latency)
    # 5: a pipeline of 4 stages
    assert ms(serve(pipeline_parallel=4), "time_per_output_token_s") == "7.65 ms"
    # the answers' unitless counts: tokens/s per GPU, the ridge point and the sequences that fit
    rates = {b: units.format_count(serve(sequences=b)["tokens_per_s_per_device"]) for b in (1, 64, 384, 1024)}
    assert rates == {1: "16.8", 64: "881", 384: "2540", 1024: "2740"}, rates
    assert round(default["compute_bound_sequences"]) == 295 and default["max_sequences"] == 1187
    assert gpt3["max_sequences"] == 48 and serve(prompt_len=131072)["max_sequences"] == 11
    assert units.format_count(serve(pipeline_parallel=4)["tokens_per_s_per_device"]) == "32.7"
    # 6: 131,072-token prompts
    longest = serve(prompt_len=131072)
    assert units.format_bytes(longest["kv_cache_bytes"]) == "344 GB"
    assert units.format_bytes(longest["kv_cache_bytes_per_device"]) == "43 GB"
    assert (ms(longest, "time_to_first_token_s"), ms(longest, "time_per_output_token_s")) == ("93.1 s", "20.4 ms")
    assert (ms(longest, "kv_read_s"), ms(longest, "weight_read_s")) == ("12.8 ms", "5.19 ms")
