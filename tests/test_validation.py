"""The Playbook's measured runs (Tazi et al. 2025) and the model replayed on them (course_lib.validation).

The counts and FLOPs per token are the data's own (its README); the validation targets are issue 24's. Each fitted
constant of the calibration is checked outside the runs it was fitted on. Where the model does not reach a target
yet, the test stays at the target and is marked xfail(strict=True) with the figure it measures and its cause, so
that an improvement shows (strict: an unexpected pass fails until the mark is removed).
"""

import numpy as np
import pytest

from course_lib import parallelism, validation


@pytest.fixture(scope="module")
def runs():
    return validation.load_playbook_runs()


@pytest.fixture(scope="module")
def replay(runs):
    return validation.replay_runs(runs)


@pytest.fixture(scope="module")
def replay_before(runs):
    return validation.replay_runs(runs, calibration=None)


def test_the_runs_are_all_there(runs):
    # The data's README: 3,306 runs, 1,758 with measured MFU (1B 534, 3B 593, 8B 493, 80B 138).
    assert len(runs) == 3306 and runs.succeeded.sum() == 1758
    succeeded = {label: int((runs.succeeded & (runs["model"] == label)).sum()) for label in ("1B", "3B", "8B", "80B")}
    assert succeeded == {"1B": 534, "3B": 593, "8B": 493, "80B": 138}
    assert np.all(runs["gpus"] == runs["dp"] * runs["tp"] * runs["pp"]) and np.all(runs["seq_len"] == 4096)
    ran = runs.succeeded
    assert np.nanmax(runs["measured_memory_bytes"][ran]) == pytest.approx(77.4e9)  # printed range 0.8–77.4 GB
    assert np.isnan(runs["measured_mfu"][~ran]).all()


@pytest.mark.parametrize(
    "model, pipeline_parallel, readme",
    [
        # The README's "nanotron get_flops/token" column, with 6Vh added for a separate embedding (untied or PP > 1).
        (parallelism.PLAYBOOK_1B, 1, 9.664e9),
        (parallelism.PLAYBOOK_1B, 2, 1.1275e10),
        (parallelism.PLAYBOOK_3B, 1, 2.567e10),
        (parallelism.PLAYBOOK_3B, 4, 2.809e10),
        (parallelism.PLAYBOOK_8B, 1, 5.959e10),
        (parallelism.PLAYBOOK_80B, 1, 5.121e11),
    ],
)
def test_playbook_flops_per_token_match_the_data(model, pipeline_parallel, readme):
    assert validation.playbook_flops_per_token(model, pipeline_parallel) == pytest.approx(readme, rel=5e-4)


def test_measured_mfu_is_that_flop_count_at_the_h100_peak(runs):
    # MFU = FLOPs/token × tokens/s/GPU / 989.5 TFLOP/s, within the printing's rounding (MFU to 0.1 %).
    ran = runs.succeeded & (runs["measured_mfu"] > 0.05)
    for label, model in (("1B", parallelism.PLAYBOOK_1B), ("80B", parallelism.PLAYBOOK_80B)):
        here = ran & (runs["model"] == label)
        flops = validation.playbook_flops_per_token(model, runs["pp"][here])
        mfu = flops * runs["measured_tokens_per_s_per_gpu"][here] / validation.PLAYBOOK_PEAK_FLOPS_PER_S
        assert np.median(np.abs(mfu / runs["measured_mfu"][here] - 1)) < 0.01


def test_spearman_by_hand():
    # x ranks 1,2,3,4; y ranks 1,3,2,4: d² = 0,1,1,0 → ρ = 1 − 6·2/(4·15) = 0.8. Ties take the average rank.
    assert validation.spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert validation.spearman([1, 1, 2], [1, 1, 2]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="x and y must be 1-D of the same length"):
        validation.spearman([1, 2], [1, 2, 3])


def test_refused_runs_are_counted_not_dropped(replay_before, replay):
    # Before: 337 runs have pipeline stages that do not divide the layers (e.g. PP = 3 for 16 layers). The calibrated
    # model splits them unevenly (the heaviest stage sets memory and time) and represents every run.
    assert replay_before.refused == {"pipeline stages do not divide the layers": 337}
    assert (~replay_before.represented).sum() == 337
    assert validation.validation_figures(replay_before)["refused"] == 337
    assert replay.refused == {} and replay.represented.all()


def test_figures_before_the_calibration(replay_before, runs):
    # The uncalibrated course model on the held-out runs (issue 10's "before").
    before = validation.validation_figures(replay_before, np.isin(runs["model"], HELD_OUT))
    assert round(before["memory_median_abs_error"], 3) == 0.432
    assert round(before["fit_agreement"], 3) == 0.836
    assert round(before["mfu_spearman"], 2) == 0.71
    assert before["best_pick_share"] == 0.0


@pytest.fixture(scope="module")
def surface(runs):
    return validation.fit_loss_surface(runs)


@pytest.mark.slow
def test_the_fit_sees_only_the_1b_and_3b_runs_and_returns_the_calibration(runs, surface):
    with pytest.raises(ValueError, match="models"):
        validation.fit_playbook_calibration(runs, models=("1B", "8B"))
    fitted = validation.fit_playbook_calibration(runs, surface=surface)
    assert fitted == validation.PLAYBOOK_CALIBRATION


@pytest.mark.slow
def test_the_fit_has_three_constants_and_its_optimum_is_inside_its_grid(surface):
    # Efficiency and fixed cost: the minimum of the one-node loss, away from every edge of the grid; the median error
    # there is 8.8 %; no other constant of the step time is fitted (the links are measured, the framework cited).
    i, j = np.unravel_index(np.argmin(surface), surface.shape)
    assert 0 < i < surface.shape[0] - 1 and 0 < j < surface.shape[1] - 1, (i, j)
    cal = validation.PLAYBOOK_CALIBRATION
    assert (validation.FIT_GRID[0][i], validation.FIT_GRID[1][j]) == (cal.gemm_efficiency, cal.layer_overhead_s)
    assert round(float(surface[i, j]), 3) == 0.088
    assert cal.gemm_half_flops == 0 and cal.network_efficiency == 1 and cal.framework is parallelism.NANOTRON


def test_the_links_are_the_nccl_tests_logs_measurements():
    # PLAYBOOK_NVLINK and PLAYBOOK_EFA are measure.calibrate_cluster's fit of the shipped p5 logs, not a fit to runs.
    measured = validation.playbook_measured_cluster()
    for stored, fitted in (
        (parallelism.PLAYBOOK_NVLINK, measured.intra_node_link),
        (parallelism.PLAYBOOK_EFA, measured.inter_node_link),
    ):
        for name in ("bandwidth_bytes_per_s", "fabric_latency_s", "latency_s"):
            assert getattr(stored, name) == pytest.approx(getattr(fitted, name), rel=1e-3), name
        assert (stored.direction, stored.scope, stored.basis) == (fitted.direction, fitted.scope, "measured")
    assert parallelism.PLAYBOOK_NVLINK.nccl_bandwidth_bytes_per_s == pytest.approx(
        measured.intra_node_link.nccl_bandwidth_bytes_per_s, rel=1e-3
    )


def test_the_efficiency_is_below_the_best_measured_gemm_and_carries_to_megatrons_largest_run():
    # Independent checks of gemm_efficiency (fitted on nanotron's one-node H100 runs): a layer's FLOPs cannot run
    # faster than the best bf16 GEMM measured on an H100 (792.1 of 989 TFLOP/s); carried to Selene's A100s it
    # predicts the 1T row of Narayanan et al.'s Table 1 (163 TFLOP/s, 52 % of peak) within 15 %.
    cal = validation.PLAYBOOK_CALIBRATION
    assert cal.gemm_efficiency < validation.H100_BEST_GEMM_SHARE == pytest.approx(0.801, abs=1e-3)
    one_trillion = validation.NARAYANAN_TABLE1[-1]
    assert validation.narayanan_table1_tflops(one_trillion[:7]) == pytest.approx(one_trillion[-1], rel=0.15)


def test_the_fixed_cost_fitted_on_one_node_holds_on_two_nodes(replay, runs):
    # layer_overhead_s was fitted on one-node runs; on two nodes (the network now in play, the fit never saw them)
    # the median predicted/measured MFU stays within 10 %: 1.07× for the 1B and 3B, 0.97× for the 8B and 80B.
    for models, expected in ((validation.FIT_MODELS, 1.07), (HELD_OUT, 0.97)):
        median = validation.residuals_by(replay, "nodes", np.isin(runs["model"], models))[2][0]
        assert round(median, 2) == expected and abs(median - 1) <= 0.10


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="path must be the Playbook runs CSV"):
        validation.load_playbook_runs(tmp_path / "nothing.csv")


# ---- targets (issue 24), on the held-out runs: the 8B and 80B models, which no calibration may see -----------------

HELD_OUT = validation.HELD_OUT_MODELS


@pytest.fixture(scope="module")
def held_out(replay, runs):
    return validation.validation_figures(replay, np.isin(runs["model"], HELD_OUT))


def test_held_out_figures(held_out):
    # The calibrated model on the 8B and 80B runs, which the fit never saw (make validate prints them).
    assert round(held_out["memory_median_abs_error"], 3) == 0.133
    assert round(held_out["fit_agreement"], 3) == 0.916 and round(held_out["crashed_share"], 3) == 0.619
    assert {m: round(rho, 2) for m, rho in held_out["mfu_spearman_per_model"].items()} == {"8B": 0.78, "80B": 0.70}
    assert round(held_out["mfu_median_abs_error"], 2) == 1.98
    ratios = {n: round(r, 2) for n, r in held_out["mfu_ratio_median_by_nodes"].items()}
    assert ratios == {1: 0.98, 2: 0.97, 4: 2.1, 8: 2.51, 16: 2.15, 32: 4.36, 64: 10.25}


# Why a target is not met: the figure and its cause (the residual is far from one node: 0.98× on one node and 0.97× on
# two, 2.1× on 4, 10× on 64; it sits in runs whose pipeline crosses nodes with small micro-batches, 0.1–1.8 s per
# micro-batch beyond the model whatever the bytes sent, a thousand times what the measured EFA gives nanotron's
# three-message P2P sends; no cited mechanism of nanotron or EFA accounts for it yet).
_CROSS_NODE = (
    "the model misses by 2–10× on 4–64 nodes (0.98× on one node): runs whose pipeline crosses nodes with small "
    "micro-batches lose 0.1–1.8 s per micro-batch, whatever the bytes sent, which neither the measured EFA links "
    "nor nanotron's P2P protocol (two blocking metadata sends before each tensor) accounts for"
)
_UNMET = {
    "fit_agreement": "91.6 % (base rate: 61.9 % of the held-out runs crashed): every miss is a run predicted to fit "
    "that crashed (139, none the other way), 66 GB predicted at the median, 87 % of them with a pipeline; nanotron's "
    "18 B per parameter (cited) lowered the prediction from the old fit's 20, and the data do not say which crashed "
    "for memory",
    "mfu_spearman_worst_model": "0.70 (80B; 8B 0.78): " + _CROSS_NODE,
    "mfu_median_abs_error": "198 %: " + _CROSS_NODE,
}


@pytest.mark.parametrize(
    "name, target",
    [
        pytest.param(name, target, marks=pytest.mark.xfail(strict=True, reason=_UNMET[name]) if name in _UNMET else ())
        for name, _, target, _ in validation.TARGETS
    ],
)
def test_held_out_target(held_out, name, target):
    check = next(check for figure, _, _, check in validation.TARGETS if figure == name)
    assert check(held_out[name]), f"{name} {held_out[name]:.3f}, target {target}"


# ---- a sick cluster told from a wrong model (issue 37): the healthy runs, at least half their cell's best MFU ------


def test_healthy_runs_are_at_least_half_their_cells_best(runs):
    healthy = validation.healthy_runs(runs)
    assert int(healthy.sum()) == 582 and not (healthy & ~runs.succeeded).any()
    # by hand, one cell: the 8B runs on one node; the best ran at the largest MFU, half of it is the bar
    cell = (runs["model"] == "8B") & (runs["nodes"] == 1) & runs.succeeded
    best = runs["measured_mfu"][cell].max()
    assert np.array_equal(healthy[cell], runs["measured_mfu"][cell] >= 0.5 * best)
    # the gap grows with nodes: at 64 nodes 10 of 281 runs that ran are healthy, on one node 58 of 69
    assert [int((healthy & (runs["nodes"] == n)).sum()) for n in (1, 64)] == [58, 10]


def test_healthy_held_out_figures(replay, runs):
    figures = validation.healthy_figures(replay, np.isin(runs["model"], HELD_OUT))
    assert figures["healthy_runs"] == 181
    assert round(figures["healthy_mfu_median_abs_error"], 3) == 0.098
    assert round(figures["healthy_spearman_8b"], 2) == 0.87 and round(figures["best_run_mfu_abs_error"], 3) == 0.06


@pytest.mark.parametrize("name, check", [(name, check) for name, _, _, check in validation.HEALTHY_TARGETS])
def test_healthy_held_out_targets(replay, runs, name, check):
    # issue 37: held-out healthy runs' MFU median error ≤ 15 %, rank correlation (8B) ≥ 0.85; each held-out cell's
    # best run within 15 % (median over cells)
    figures = validation.healthy_figures(replay, np.isin(runs["model"], HELD_OUT))
    assert check(figures[name]), (name, figures[name])


# ---- the picks with a memory margin (issue 24, item 4): taken from the runs the fit saw, judged on the held-out cells


def test_the_memory_margin_comes_from_the_fit_split_and_is_the_documented_one(replay):
    assert round(validation.memory_margin(replay), 3) == validation.PLAYBOOK_MEMORY_MARGIN
    # The held-out runs would give another margin: the documented one never saw them.
    assert validation.memory_margin(replay, models=HELD_OUT) != pytest.approx(validation.PLAYBOOK_MEMORY_MARGIN)


@pytest.fixture(scope="module")
def held_out_picks(replay, runs):
    rows = np.isin(runs["model"], HELD_OUT)
    return validation.validation_figures(replay, rows, memory_margin=validation.PLAYBOOK_MEMORY_MARGIN)


def test_picks_without_the_margin_crash_in_most_cells(held_out):
    # The base the margin is judged against: 8 of 12 picks did not run; 61.9 % of the held-out runs crashed.
    assert held_out["picks_crashed"] == 8 and round(held_out["crashed_share"], 3) == 0.619


_PICK_CRASHED = pytest.mark.xfail(
    strict=True,
    reason="2 of 12 picks did not run with the +38.4 % margin (8 without): the 80B on 16 and 64 nodes, 4·4·8 and "
    "16·4·8 ZeRO-1 b1, predicted 57 and 51 GB; the data say 'crashed or OOM' without telling which, and both put an "
    "8-stage pipeline across nodes, where the runs that did run lost most of their speed",
)


@pytest.mark.parametrize(
    "name, check",
    [
        pytest.param(name, check, marks=_PICK_CRASHED if name == "picks_crashed" else ())
        for name, _, _, check in validation.PICK_TARGETS
    ],
)
def test_pick_targets_with_the_margin(held_out_picks, name, check):
    assert check(held_out_picks[name]), held_out_picks[name]


def test_picks_with_the_margin(held_out_picks):
    assert held_out_picks["picks_crashed"] == 2 and round(held_out_picks["best_pick_share"] * 12) == 7


def test_a_negative_margin_is_refused(replay):
    with pytest.raises(ValueError, match="memory_margin"):
        validation.validation_figures(replay, memory_margin=-0.1)


# ---- the step-time band and the robust pick (issue 24, item 4): the band from the held-out runs ---------------------


def test_the_step_time_band_comes_from_the_held_out_runs_and_is_the_documented_one(replay, runs):
    band = validation.step_time_band(replay)
    assert tuple((start, round(low, 3), round(high, 3)) for start, low, high in band) == (
        validation.PLAYBOOK_STEP_TIME_BAND
    )
    # by hand for the first row: the held-out runs whose replica fits in a node (t·p < 8)
    ok = replay.represented & runs.succeeded & np.isin(runs["model"], HELD_OUT) & (runs["measured_mfu"] > 0)
    here = ok & (runs["tp"] * runs["pp"] < 8)
    measured = (
        runs["gbs_samples_computed"][here] * 4096 / (runs["measured_tokens_per_s_per_gpu"][here] * runs["gpus"][here])
    )
    ratio = np.sort(measured / replay.columns["predicted_step_s"][here])
    assert np.mean(ratio <= band[0][1]) == pytest.approx(0.1, abs=1 / len(ratio) + 1e-9)
    assert np.mean(ratio <= band[0][2]) == pytest.approx(0.9, abs=1 / len(ratio) + 1e-9)
    # the band widens with the nodes a replica spans: the inter-node terms are where the model misses most
    highs = [high for _, _, high in band]
    assert highs == sorted(highs) and highs[-1] > 8 * highs[0]
    # the runs the calibration was fitted on give another band
    fit_band = validation.step_time_band(replay, models=validation.FIT_MODELS)
    assert abs(fit_band[-1][2] - band[-1][2]) > 1


@pytest.fixture(scope="module")
def robust_picks(replay, runs):
    rows = np.isin(runs["model"], HELD_OUT)
    band = validation.PLAYBOOK_STEP_TIME_BAND
    margin = validation.PLAYBOOK_MEMORY_MARGIN
    return validation.validation_figures(replay, rows, memory_margin=margin, step_time_band=band)["robust_picks"]


@pytest.mark.parametrize(
    "name, _text, _target, check", validation.PICK_TARGETS, ids=[name for name, *_ in validation.PICK_TARGETS]
)
def test_pick_targets_of_the_robust_pick(robust_picks, name, _text, _target, check):
    assert check(robust_picks[name]), robust_picks[name]


def test_robust_picks(robust_picks, replay, runs):
    # 6 of 12 cells within 10 % of the measured best (the fastest pick: 7), none crashed (the fastest pick: 1)
    assert robust_picks["picks_crashed"] == 0 and round(robust_picks["best_pick_share"] * 12) == 6
    # The judgement does not lean on the held-out band: the band of the runs the fit saw picks as well.
    fit_band = validation.step_time_band(replay, models=validation.FIT_MODELS)
    rows = np.isin(runs["model"], HELD_OUT)
    margin = validation.PLAYBOOK_MEMORY_MARGIN
    assert validation.validation_figures(replay, rows, margin, fit_band)["robust_picks"] == robust_picks
