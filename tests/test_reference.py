"""The default a learner plans with, the reference calibration (parallelism.REFERENCE_CALIBRATION: Megatron-Core on
DGX H100 nodes with NDR InfiniBand), judged on published well-tuned runs it was not fitted on (published_runs).

Issue 37's targets: held-out published runs within 15 % median |tokens/s error| for each of dense, FP8,
context-parallel and MoE runs; Llama 3 405B's published plans within 15 %; the step-time band p90 / p10 ≤ 1.5. A
target out of reach stays at its value, marked xfail(strict=True) with the figure and its cause.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

from course_lib import hardware, measure, parallelism, published_runs
from course_lib.published_runs import REFERENCE_FIT_GRID, published_figures, replay_published_runs

REFERENCE = parallelism.REFERENCE_CALIBRATION


@pytest.fixture(scope="module")
def replay():
    return replay_published_runs()


@pytest.mark.slow
def test_the_fit_sees_only_the_gpt_rows_and_returns_the_reference_constants():
    runs = published_runs.load_published_runs()
    surface = published_runs.reference_fit_surface(runs)
    efficiency, overhead = published_runs.fit_reference_calibration(runs, surface=surface)
    assert (efficiency, overhead) == (REFERENCE.gemm_efficiency, REFERENCE.layer_overhead_s)
    i, j = np.unravel_index(np.argmin(surface), surface.shape)  # the optimum lies inside the grid, not on its edge
    assert 0 < i < len(REFERENCE_FIT_GRID[0]) - 1 and 0 < j < len(REFERENCE_FIT_GRID[1]) - 1
    # The held-out rows never reach the fit: changing every one of them changes nothing.
    scrambled = replace(runs, columns={**runs.columns})
    held = runs.held_out
    scrambled.columns["tokens_per_s_per_gpu"] = np.where(held, 1.0, runs["tokens_per_s_per_gpu"])
    assert np.array_equal(published_runs.reference_fit_surface(scrambled), surface)


def test_the_fitted_rows_are_the_gpt_family_and_every_kind_is_held_out(replay):
    runs = replay.runs
    assert set(runs["family"][~runs.held_out]) == {"gpt"} == set(published_runs.FIT_FAMILIES)
    figures = published_figures(replay)
    assert figures["fitted"][1] == 23  # Megatron-LM's weak scaling (9), NeMo's GPT-3 (4), DGX Cloud's GPT-3 (10)
    assert all(figures[kind][1] >= 6 for kind in published_runs.KIND_LABELS)


def test_the_reference_links_are_the_nccl_tests_logs_measurements():
    # NVLink on the 8 × H100 board (one p5 node's log) and NDR InfiniBand (two Nebius nodes' log), fitted by
    # measure.calibrate_cluster, not to training runs.
    logs = measure.DATA_DIR / "nccl_tests"
    p5 = measure.read_nccl_tests((logs / "aws_p5_1node_8xH100_nvlink_all_reduce.txt").read_text(), nodes=1)
    nebius = measure.read_nccl_tests((logs / "nebius_2x8xH100_ib_all_reduce.txt").read_text(), nodes=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", measure.CalibrationWarning)
        measured = measure.calibrate_cluster(hardware.NEBIUS_H100_IB, [p5, nebius])
    assert REFERENCE.inter_node_link.fabric_latency_s == pytest.approx(measured.inter_node_link.fabric_latency_s)
    # The bandwidth is the datasheet's: on two nodes NVLink bounds every size, and the fit's best (210 GB/s per node)
    # follows the log hardly better than 400 GB/s does (its median error at ≥ 1 MiB, 11.1 % against 11.7 %).
    assert REFERENCE.inter_node_link.bandwidth_bytes_per_s == hardware.INFINIBAND_NDR_8X.bandwidth_bytes_per_s == 400e9
    assert measured.inter_node_link.bandwidth_bytes_per_s == pytest.approx(210e9, rel=0.01)
    assert REFERENCE.intra_node_link.nccl_bandwidth_bytes_per_s == pytest.approx(
        measured.intra_node_link.nccl_bandwidth_bytes_per_s, rel=1e-4
    )  # 274.48 GB/s, stored to 5 figures


def test_the_band_and_the_margin_are_their_functions_on_the_shipped_runs(replay):
    from course_lib import validation

    assert REFERENCE.step_time_band == published_runs.reference_step_time_band(replay)
    playbook = validation.replay_runs(validation.load_playbook_runs())
    margin = validation.memory_margin(playbook, validation.HELD_OUT_MODELS, healthy=True)
    assert REFERENCE.memory_margin == round(margin, 3)
    # framework memory: the Playbook's fit (no published run reports memory), stated as carried over
    assert REFERENCE.framework_bytes == parallelism.PLAYBOOK_CALIBRATION.framework_bytes


_UNMET = {
    "moe": "22.8 %: Grok-1, the only MoE rows the course can represent, is predicted 9–10 % too fast in BF16 and "
    "36–38 % in FP8: the model charges no router, token permutation or grouped-GEMM inefficiency and no load "
    "imbalance (routing is dropless and balanced), which FP8's faster GEMMs leave larger in share",
}


@pytest.mark.parametrize(
    "kind",
    [
        pytest.param(kind, marks=pytest.mark.xfail(strict=True, reason=_UNMET[kind]) if kind in _UNMET else ())
        for kind in published_runs.KIND_LABELS
    ],
)
def test_held_out_published_runs_by_kind(replay, kind):
    error, _ = published_figures(replay)[kind]
    assert error <= published_runs.MEDIAN_ERROR_TARGET


def test_llama3_405b_published_plans(replay):
    """Llama 3 (arXiv 2407.21783, Table 4): TP 8, PP 16, FSDP over the rest, at 8k tokens on 8,192 and 16,384 GPUs
    and at 128k with CP 16: each row's tokens/s within 15 %."""
    rows = np.flatnonzero(replay.runs["source"] == "llama3-paper")
    assert len(rows) == 3 and replay.replayed[rows].all()
    errors = {replay.runs["id"][i]: float(replay.error[i]) for i in rows}
    assert all(abs(e) <= 0.15 for e in errors.values()), errors


def test_the_capstones_band_is_narrow_enough_to_plan_with():
    ((start, low, high),) = REFERENCE.step_time_band
    assert start == 1 and low < 1 < high and high / low <= 1.5
