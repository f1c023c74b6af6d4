"""The calibrated step-time model against Narayanan et al. 2021 (arXiv 2104.04473): Table 1 and §5.2 (Table 2).

Table 1's rows (verified from the paper's text): heads, hidden, layers, t, p, GPUs, batch and the achieved TFLOP/s per
GPU, which counts Eq. (3)'s FLOPs (full recomputation: a hardware-FLOPs figure, ``StepTime.hfu`` × 312 TFLOP/s).
The runs used the interleaved schedule (§5.1); the micro-batch size is not printed, so the test uses 1. §5.2 (Table 2):
GPT-3 175B at batch 1536, ZeRO-3 without model parallelism (micro-batch 4 on 384 GPUs, 2 on 768) measured 144 and 88
TFLOP/s, PTD-P (t = 8, p = 12, micro-batch 1) 153 and 149. No constant is fitted on these rows. Two models: the
uncalibrated physics (``Calibration()``: big-GEMM efficiency 0.5, nominal links) with DeepSpeed's prefetching of
ZeRO-3 gathers, and the course's default (``calibration="default"``: ``parallelism.default_calibration`` on Selene).
Ideal: Table 1 within 15 % in 7 of 10 rows; §5.2 PTD-P faster at 768 GPUs, not at 384. Default (the reference
calibration, Megatron-Core, carried over to Selene), which is also the runs as their framework ran them for Table 1:
within 15 % in 10 of 10 rows, mean error 5.2 % against the ideal model's 12.8 %; §5.2 PTD-P faster at neither, under
Megatron-Core's or DeepSpeed's ZeRO-3 (strict xfail: with prefetched gathers the model hides all of ZeRO-3's
traffic, which 2021's DeepSpeed did not).
"""

import pytest

from course_lib import validation

SELENE = validation.NARAYANAN_UNCALIBRATED
TABLE1 = validation.NARAYANAN_TABLE1  # (heads, hidden, layers, t, p, GPUs, batch, TFLOP/s per GPU)


def table1_prediction(heads, hidden, layers, t, p, gpus, batch, calibration=SELENE):
    return validation.narayanan_table1_tflops((heads, hidden, layers, t, p, gpus, batch), calibration)


def test_table1_predictions():
    # Printed here so a failure shows all rows; the targets are the parametrised tests below.
    predicted = [round(table1_prediction(*row[:7])) for row in TABLE1]
    assert predicted == [156, 145, 129, 118, 124, 126, 130, 131, 131, 131]


@pytest.mark.parametrize(
    "row",
    [
        row
        if i < 7
        else pytest.param(
            row,
            marks=pytest.mark.xfail(
                strict=True,
                reason="compute efficiency: the uncalibrated model predicts 131 TFLOP/s for the 175B, 530B and 1T rows "
                "(−15 %, −20 %, −20 % of 155, 163, 163): one big-GEMM efficiency of 0.5 for every size, where "
                "Megatron's 12288- to 25600-wide GEMMs reach about 52 % of peak end to end; its NVLink all-reduces "
                "run at NCCL's 240 GB/s (the A100 log measures 235 GB/s of bus bandwidth), where the datasheet's "
                "300 GB/s used to hide part of that shortfall; the A100 has no calibration of its own",
            ),
        )
        for i, row in enumerate(TABLE1)
    ],
)
def test_table1_throughput_within_15_percent(row):
    *config, published = row
    assert table1_prediction(*config) == pytest.approx(published, rel=0.15)


def _zero3_and_ptdp(gpus, zero3_micro_batch, calibration=SELENE):
    return validation.narayanan_zero3_and_ptdp(gpus, zero3_micro_batch, calibration)


def test_section_5_2_figures():
    # Predicted hardware TFLOP/s per GPU (ZeRO-3, PTD-P): 156 and 134 at 384 GPUs, 77 and 132 at 768.
    for gpus, micro_batch, expected in ((384, 4, (156, 134)), (768, 2, (77, 132))):
        steps = _zero3_and_ptdp(gpus, micro_batch)
        assert tuple(round(step.hfu * 312) for step in steps) == expected


@pytest.mark.parametrize(
    "gpus, zero3_micro_batch",
    [
        pytest.param(
            384,
            4,
            marks=pytest.mark.xfail(
                strict=True,
                reason="overlap: at 384 GPUs the model hides all of ZeRO-3's parameter gathers and gradient "
                "reduce-scatters behind compute (NCCL's ring at the nominal 25 GB/s per GPU, with DeepSpeed's "
                "prefetch and no slowdown of compute while they run), so ZeRO-3 predicts 156 TFLOP/s against PTD-P's "
                "134; measured 144 vs 153 (at 768 GPUs the flat ring's 767 steps expose 38 s and the order is right)",
            ),
        ),
        (768, 2),
    ],
)
def test_section_5_2_ptdp_beats_zero3(gpus, zero3_micro_batch):
    zero3, ptdp = _zero3_and_ptdp(gpus, zero3_micro_batch)
    assert ptdp.total_s < zero3.total_s


# ---- the same rows under the course's default calibration (parallelism.default_calibration on Selene) ---------------
# The reference calibration carried over to Selene: its framework (Megatron-Core: the backward tensor-parallel
# all-reduces behind the weight-gradient GEMMs, P2P overlapped in interleaved schedules, ZeRO-3 gathers prefetched),
# its fixed cost (1.5 ms per layer and micro-batch) and efficiency (0.62 of peak), fitted on published H100 runs,
# Selene's own links. Nothing here was fitted on these rows. PTD-P is Megatron's own plan, so the default and the
# presets below agree on Table 1.

DEFAULT_TABLE1 = [157, 145, 128, 122, 139, 147, 153, 159, 160, 162]  # predicted TFLOP/s per GPU (hardware FLOPs)


def default_prediction(row):
    return table1_prediction(*row[:7], calibration="default")


def mean_error(predictions):
    return sum(abs(x / row[-1] - 1) for x, row in zip(predictions, TABLE1, strict=True)) / len(TABLE1)


def test_default_calibration_table1_predictions():
    assert [round(default_prediction(row)) for row in TABLE1] == DEFAULT_TABLE1


def test_default_calibration_table1_never_worse_than_the_ideal_model():
    default = mean_error([default_prediction(row) for row in TABLE1])
    ideal = mean_error([table1_prediction(*row[:7]) for row in TABLE1])
    assert default <= ideal, (default, ideal)  # 5.21 % against 12.77 %
    assert round(default, 4) == 0.0521 and round(ideal, 4) == 0.1277


@pytest.mark.parametrize("row", TABLE1)
def test_default_calibration_table1_within_15_percent(row):
    assert default_prediction(row) == pytest.approx(row[-1], rel=0.15)


def _default_zero3_and_ptdp(gpus, zero3_micro_batch):
    return _zero3_and_ptdp(gpus, zero3_micro_batch, calibration="default")


def test_default_calibration_section_5_2_figures():
    # Predicted hardware TFLOP/s per GPU (ZeRO-3, PTD-P); measured 144 vs 153 (384 GPUs) and 88 vs 149 (768 GPUs).
    for gpus, micro_batch, expected in ((384, 4, (193, 159)), (768, 2, (192, 156))):
        steps = _default_zero3_and_ptdp(gpus, micro_batch)
        assert tuple(round(step.hfu * 312) for step in steps) == expected


_ZERO3_HIDDEN = (
    "at 768 GPUs the model's ZeRO-3 traffic is 7.4 s per step of NCCL rings (two 350 GB all-gathers and a reduce-"
    "scatter over a node's eight HDR rails, 200 GB/s), all of it behind 30.5 s of compute; the measured 88 TFLOP/s "
    "means about 67 s per step, as if that traffic ran at about 16 GB/s per GPU, a single rail's rate and not the "
    "node's. Which part of 2021's DeepSpeed did that (its gathers' sizes and streams, its bucket order) is not yet "
    "a cited mechanism of the model"
)


@pytest.mark.xfail(
    strict=True,
    reason="ZeRO-3 with its gathers prefetched (Megatron-Core's, the default's framework) is predicted at 193 and "
    "192 TFLOP/s where DeepSpeed measured 144 and 88 (PTD-P: 159 and 156 predicted, 153 and 149 measured): "
    + _ZERO3_HIDDEN,
)
@pytest.mark.parametrize("gpus, zero3_micro_batch", [(384, 4), (768, 2)])
def test_default_calibration_section_5_2_ptdp_beats_zero3(gpus, zero3_micro_batch):
    zero3, ptdp = _default_zero3_and_ptdp(gpus, zero3_micro_batch)
    assert ptdp.total_s < zero3.total_s


# ---- the runs as their frameworks ran them (issue 24): Table 1 and PTD-P with the Megatron-LM preset, §5.2's ZeRO-3
# with the DeepSpeed preset (parallelism.frameworks; today's releases, not 2021's), under the default calibration.
FRAMEWORKS = validation.NARAYANAN_FRAMEWORKS


def preset_prediction(row):
    return validation.narayanan_table1_tflops(row[:7], "default", FRAMEWORKS["ptdp"])


def test_framework_presets_table1_predictions():
    assert [round(preset_prediction(row)) for row in TABLE1] == DEFAULT_TABLE1  # Megatron-LM is the default's


def test_framework_presets_table1_never_worse_than_the_ideal_model():
    presets = mean_error([preset_prediction(row) for row in TABLE1])
    ideal = mean_error([table1_prediction(*row[:7]) for row in TABLE1])
    assert presets <= ideal, (presets, ideal)  # 5.21 % against 12.8 %


@pytest.mark.parametrize("row", TABLE1)
def test_framework_presets_table1_within_15_percent(row):
    assert preset_prediction(row) == pytest.approx(row[-1], rel=0.15)


@pytest.mark.xfail(
    strict=True,
    reason="ZeRO-3 as DeepSpeed runs it: with its prefetch the model predicts 193 and 192 TFLOP/s at 384 and 768 GPUs "
    "where the paper measured 144 and 88 (PTD-P: 159 and 156 predicted, 153 and 149 measured): " + _ZERO3_HIDDEN,
)
@pytest.mark.parametrize("gpus, zero3_micro_batch", [(384, 4), (768, 2)])
def test_framework_presets_section_5_2_ptdp_beats_zero3(gpus, zero3_micro_batch):
    zero3, ptdp = validation.narayanan_zero3_and_ptdp(gpus, zero3_micro_batch, "default", tuple(FRAMEWORKS.values()))
    assert ptdp.total_s < zero3.total_s
