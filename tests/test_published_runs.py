"""The published runs (course_lib/data/published_runs.csv): every row has a source, its plan covers its GPUs as
Megatron-Core places them, and its throughput, model FLOP/s and MFU agree with each other and with the model's FLOP
count as each source counts it."""

import csv
from dataclasses import replace

import numpy as np
import pytest

from course_lib import hardware
from course_lib.budget.step import forward_flops_per_token
from course_lib.parallelism import models
from course_lib.published_runs import FIT_FAMILIES, PUBLISHED_RUNS_CSV, load_published_runs

RUNS = load_published_runs()

# The presets whose shapes are the published models' (models.py cites their config.json files). NeMo's GPT3-175B is
# GPT-3 with Megatron's padded vocabulary; the preset's 51,200 moves the FLOP count by < 0.1 %.
PRESETS = {
    "LLAMA3-8B": models.LLAMA3_8B,
    "LLAMA3_8B": models.LLAMA3_8B,
    "LLAMA3-70B": models.LLAMA3_70B,
    "LLAMA3_70B": models.LLAMA3_70B,
    "LLAMA3.1_405B": models.LLAMA3_405B,
    "GPT3-175B": models.GPT3_175B,
}
# Which attention FLOPs each source's "model TFLOP/s" counts (README, "How each source counts FLOPs"): NeMo 24.07
# counts QKᵀ and AV over the whole s × s square (4sh per layer per token, the course's forward_flops_per_token),
# Megatron-Bridge only the causal half (2sh).
CAUSAL_ATTENTION = {"nemo-24.07": False, "megatron-bridge-25.09": True, "megatron-bridge-25.11": True,
                    "megatron-bridge-26.04.01": True}  # fmt: skip
# The one row whose two figures disagree beyond rounding (README, "Suspicious cells"): 26.04.01's Llama 3 70B
# publishes 1,664 tokens/s and 731 TFLOP/s, 2.2 % fewer FLOPs per token than the same page's other releases count.
INCONSISTENT = {"mb260401-llama3-70b"}
# Published TFLOP/s have 3 significant figures (e.g. 731): a rounding of up to 0.07 %; tokens/s 3–5 figures.
RATIO_TOLERANCE = 0.0025


def training_flops_per_token(model, seq_len, *, causal):
    """3 × forward: 2 FLOPs per matrix weight, attention's QKᵀ and AV (4sh per layer, half of it when causal), the
    output layer 2Vh (Narayanan et al. 2021, Eq. 3, per token)."""
    layer, head, core = forward_flops_per_token(replace(model, seq_len=seq_len))
    return 3 * (model.layers * (layer - (core / 2 if causal else 0)) + head)


def test_the_file_parses_and_every_row_has_a_source():
    assert len(RUNS) == 152
    with PUBLISHED_RUNS_CSV.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(RUNS)
    for row in rows:
        assert row["source"] and len(row["source_detail"]) > 40, row["id"]
        assert row["tokens_per_s_per_gpu"] or row["tflops_per_s_per_gpu"], row["id"]  # a measurement, always
        # A derived cell is named, and only columns that exist are named.
        assert set(filter(None, row["derived"].split(";"))) <= set(rows[0]), row["id"]


def test_the_rows_cover_the_kinds_the_targets_split_by():
    h100 = np.char.startswith(RUNS["gpu"].astype(str), "H100")
    dense_bf16 = ~RUNS.is_moe & ~RUNS.is_fp8 & ~RUNS.is_context_parallel & (RUNS["precision"] == "bf16")
    assert (RUNS.is_fp8 & h100).sum() >= 10 and (dense_bf16 & h100).sum() >= 10
    assert (RUNS.is_context_parallel & h100).sum() >= 10 and (RUNS.is_moe & h100).sum() >= 10
    assert len(set(RUNS["family"])) >= 4
    assert set(FIT_FAMILIES) <= set(RUNS["family"]) and 0 < (~RUNS.held_out).sum() < RUNS.held_out.sum()


def test_plan_sizes_multiply_to_the_gpu_count():
    # tp · pp · cp · dp = GPUs (Megatron-Core: world = tp · pp · cp · dp, megatron/core/parallel_state.py
    # initialize_model_parallel); for FSDP runs (torchtitan, Llama 3) dp is the FSDP degree.
    assert np.array_equal(RUNS["tp"] * RUNS["pp"] * RUNS["cp"] * RUNS["dp"], RUNS["gpus"])
    # Hand check, the Llama 3 paper's third row: 16,384 = 8 (TP) · 16 (CP) · 16 (PP) · 8 (DP).
    assert RUNS.row("llama3-405b-16384gpu-cp16")["dp"] == 16384 // (8 * 16 * 16) == 8
    assert np.array_equal(RUNS["nodes"], -(-RUNS["gpus"] // 8))


def test_experts_fold_into_the_data_and_context_parallel_ranks_as_megatron_places_them():
    # Megatron-Core (MoE parallel folding), NVIDIA/Megatron-LM@core_v0.19.0 megatron/core/parallel_state.py:874-884:
    # the expert layers' ranks are etp · ep · pp, and the world size must be a multiple of it. With an expert tensor
    # parallel size etp ≥ 1, ep · pp divides the GPUs in every row.
    assert np.all(RUNS["gpus"] % (RUNS["ep"] * RUNS["pp"]) == 0)
    # With etp = tp (Megatron's default when --expert-tensor-parallel-size is unset) only the Qwen3 235B rows break
    # the rule: 2 · 32 · 8 = 512 > 256 GPUs, so those recipes must run their experts with etp = 1.
    etp_equals_tp = RUNS["gpus"] % (RUNS["tp"] * RUNS["ep"] * RUNS["pp"]) == 0
    assert set(RUNS["id"][~etp_equals_tp]) == {"mb2509-qwen3-235b-a22b", "mb2511-qwen3-235b-a22b",
                                               "mb260401-qwen3-235b-a22b"}  # fmt: skip
    assert np.all(RUNS["ep"][~RUNS.is_moe] == 1)


def test_published_global_batches_agree_with_micro_batch_and_accumulation():
    # Megatron-Bridge 25.09/25.11 publish GA: GBS = MBS · DP · GA, DP = GPUs / (TP · PP · CP). Hand check, 25.11's
    # Llama 3 70B: 128 = 1 · (64 / (4 · 8 · 1) = 2) · 64. The one row that breaks it (README, "Suspicious cells"):
    # GPT-OSS 120B on H100, 512 ≠ 4 · 16 · 2 = 128.
    for row in (RUNS.row(i) for i in RUNS["id"] if "GA " in RUNS.row(i)["notes"]):
        ga = int(row["notes"].split("GA ")[1].split()[0])
        consistent = row["global_batch"] == row["micro_batch"] * row["dp"] * ga
        assert consistent == (row["id"] != "mb2511-gpt-oss-120b"), row["id"]


def test_tokens_and_flops_agree_with_the_models_flop_count():
    """Where a source gives both, TFLOP/s ÷ tokens/s is its FLOPs per token: 6N-like, with the attention term the
    source counts (``CAUSAL_ATTENTION``), within the published figures' rounding.

    By hand, NeMo 24.07's Llama 3 70B at s = 8192 (non-causal): per layer 2 · (2·8192² + 2·8192·1024 + 3·8192·28672)
    = 1.7113e9, plus 4 · 8192 · 8192 = 2.684e8, so 1.9797e9; × 80 layers = 1.5838e11, + the output layer
    2 · 128256 · 8192 = 2.1013e9, = 1.6048e11 forward; × 3 = 4.8144e11 FLOPs/token. Published: 734e12 / 1524 =
    4.8163e11, 0.04 % more.
    By hand, Megatron-Bridge 25.11's Llama 3 8B at s = 8192 (causal): 2 · 218,103,808 + 2 · 8192 · 4096 =
    5.0332e8 per layer, × 32 = 1.6106e10, + 2 · 128256 · 4096 = 1.0507e9, = 1.7157e10; × 3 = 5.1471e10.
    Published: 744e12 / 14451 = 5.1484e10, 0.03 % more.
    """
    nemo_70b = RUNS.row("nemo2407-llama3-70b")
    assert nemo_70b["flops_per_s_per_gpu"] / nemo_70b["tokens_per_s_per_gpu"] == pytest.approx(4.8163e11, rel=1e-4)
    assert training_flops_per_token(models.LLAMA3_70B, 8192, causal=False) == pytest.approx(4.8144e11, rel=1e-4)
    mb_8b = RUNS.row("mb2511-llama3-8b")
    assert mb_8b["flops_per_s_per_gpu"] / mb_8b["tokens_per_s_per_gpu"] == pytest.approx(5.1484e10, rel=1e-4)
    assert training_flops_per_token(models.LLAMA3_8B, 8192, causal=True) == pytest.approx(5.1471e10, rel=1e-4)

    checked = []
    both = ~np.isnan(RUNS["tokens_per_s_per_gpu"]) & ~np.isnan(RUNS["flops_per_s_per_gpu"])
    for i in np.flatnonzero(both & np.isin(RUNS["model"], list(PRESETS))):
        row = RUNS.row(RUNS["id"][i])
        counted = training_flops_per_token(
            PRESETS[row["model"]], int(row["seq_len"]), causal=CAUSAL_ATTENTION[row["source"]]
        )
        error = row["flops_per_s_per_gpu"] / row["tokens_per_s_per_gpu"] / counted - 1
        if row["id"] in INCONSISTENT:
            assert -0.025 < error < -0.02, (row["id"], error)
        else:
            assert abs(error) < RATIO_TOLERANCE, (row["id"], error)
        checked.append(row["id"])
    assert len(checked) == 12  # NeMo 24.07's GPT-3 175B (2) and Llama 3 (2), Megatron-Bridge's Llama 3 (8)


def test_the_other_attention_count_would_not_fit():
    """The attention term is what tells the two sources apart: counted the other way, Llama 3 8B at s = 8192 is off
    by 11–13 %, far beyond rounding."""
    for run_id, causal in (("nemo2407-llama3-8b", True), ("mb2511-llama3-8b", False)):
        row = RUNS.row(run_id)
        counted = training_flops_per_token(models.LLAMA3_8B, 8192, causal=causal)
        assert abs(row["flops_per_s_per_gpu"] / row["tokens_per_s_per_gpu"] / counted - 1) > 0.1


def test_mfu_is_model_flops_over_the_dense_bf16_peak():
    """Where a source gives MFU, it is the published TFLOP/s over the H100's dense BF16 peak (989 TFLOP/s,
    ``hardware.H100``), to the published rounding: MFU to 1 %, TFLOP/s to 0.1 (Megatron-LM) or to 10 (Llama 3: 430,
    400, 380). By hand: Megatron-LM's 1.7B, 408.8 / 989 = 0.4133 → "41 %"; Llama 3's 16K-GPU row, 400 / 989 =
    0.4044, printed 41 % (a TFLOP/s of 405 rounded to 400 would give 0.4095)."""
    peak = hardware.H100.peak("bf16")
    assert peak == 989e12
    given = ~np.isnan(RUNS["mfu"]) & ~np.isnan(RUNS["flops_per_s_per_gpu"])
    assert given.sum() == 12  # Megatron-LM's weak scaling (9) and the Llama 3 paper (3)
    for i in np.flatnonzero(given):
        flops_rounding = 5e12 if RUNS["source"][i] == "llama3-paper" else 0.05e12
        tolerance = 0.005 + flops_rounding / peak + 1e-9
        assert abs(RUNS["flops_per_s_per_gpu"][i] / peak - RUNS["mfu"][i]) <= tolerance, RUNS["id"][i]
    assert RUNS.row("mlm-weak-1.7b")["flops_per_s_per_gpu"] / peak == pytest.approx(0.4133, abs=1e-4)


def test_bad_input_names_the_parameter(tmp_path):
    with pytest.raises(ValueError, match="path"):
        load_published_runs(tmp_path / "missing.csv")
    empty = tmp_path / "empty.csv"
    empty.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="path"):
        load_published_runs(empty)
    with pytest.raises(ValueError, match="run_id"):
        RUNS.row("no-such-run")


# NVIDIA's DGX Cloud recipes publish the step time, the job's tokens/s, MFU and the model FLOPs of one sequence, and
# say which peak MFU divides by (989 TFLOP/s for BF16, 1979 for FP8). Two published cells disagree with the rest of
# their row (README, "Suspicious cells"): Grok-1 FP8 on 1,024 GPUs prints a step of 17.01 s where its tokens/s imply
# 17.10 s; Llama 3.1 405B's FLOPs per sequence count 16 query groups (the model has 8) and a sequence of 8129.
DGXC = np.flatnonzero(RUNS["source"] == "dgxc-benchmarking-25.02.01")


def test_dgx_cloud_rows_agree_with_their_own_step_time_and_mfu():
    """tokens/s = s · GBS / step; MFU = tokens/s · FLOPs per sequence / s / GPUs / peak. By hand, Llama 3.1 70B BF16
    on 64 GPUs: 8192 · 128 / 14.61 s = 71,771 tokens/s (published 71,756: the step printed to 0.01 s); MFU =
    71,756 · 3.94e15 / 8192 / 64 / 989e12 = 0.5452 (published 54.52 %)."""
    assert len(DGXC) == 70
    row = RUNS.row("dgxc-llama31-70b-bf16-64gpu")
    assert 8192 * 128 / row["step_time_s"] == pytest.approx(71771, abs=1)
    mfu = row["tokens_per_s"] * 3.94e15 / 8192 / 64 / 989e12
    assert mfu == pytest.approx(0.5452, abs=5e-5) and row["mfu"] == 0.5452
    for i in DGXC:
        s, gpus = RUNS["seq_len"][i], RUNS["gpus"][i]
        step = s * RUNS["global_batch"][i] / RUNS["tokens_per_s"][i]
        tolerance = 0.006 if RUNS["id"][i] == "dgxc-grok1-314b-fp8-1024gpu" else 0.0007  # the step's 3-4 figures
        assert step / RUNS["step_time_s"][i] - 1 == pytest.approx(0, abs=tolerance), RUNS["id"][i]
        if RUNS["id"][i] == "dgxc-grok1-314b-fp8-1024gpu":
            assert step / RUNS["step_time_s"][i] - 1 > 0.005
        mfu = RUNS["tokens_per_s"][i] * RUNS["flops_per_sequence"][i] / s / gpus / RUNS["mfu_peak_flops_per_s"][i]
        assert mfu == pytest.approx(RUNS["mfu"][i], abs=6e-5), RUNS["id"][i]  # MFU printed to 0.01 %
        per_gpu = RUNS["tokens_per_s"][i] / gpus
        assert RUNS["tokens_per_s_per_gpu"][i] == pytest.approx(per_gpu, abs=0.0051)  # rounded to 0.01
        peak = hardware.H100.peak("fp8" if RUNS.is_fp8[i] else "bf16")
        assert RUNS["mfu_peak_flops_per_s"][i] == pytest.approx(peak, rel=1e-3)  # 1979 printed, 1979e12 preset


def test_dgx_cloud_flops_per_sequence_is_the_non_causal_count():
    """Their formula (12lh²(1 + kv/a + s/h) + 18lfh + 6Vh per token) is the course's 3 × forward with attention over
    the whole square, to the 3 figures printed; Llama 3.1 405B's is 0.9 % high (16 query groups, 8129)."""
    presets = {"Llama 3.1 8B": models.LLAMA3_8B, "Llama 3.1 70B": models.LLAMA3_70B,
               "Llama 3.1 405B": models.LLAMA3_405B, "GPT 3 175B": models.GPT3_175B}  # fmt: skip
    checked = set()
    for i in DGXC:
        model = presets.get(RUNS["model"][i])
        if model is None:
            continue  # Nemotron-4 and Grok-1 have no preset
        s = int(RUNS["seq_len"][i])
        error = RUNS["flops_per_sequence"][i] / (s * training_flops_per_token(model, s, causal=False)) - 1
        if model is models.LLAMA3_405B:
            assert 0.008 < error < 0.01
        else:
            assert abs(error) < 0.0025, (RUNS["id"][i], error)
        checked.add(RUNS["model"][i])
    assert checked == set(presets)
