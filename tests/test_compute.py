"""FLOP counting, the roofline and Narayanan et al.'s formulas against their derivations and published values."""

import numpy as np
import pytest

from course_lib import hardware
from course_lib.compute import (
    arithmetic_intensity,
    attainable_flops_per_s,
    count_matmul_operations,
    gemm_bytes,
    gemm_flops,
    ridge_point_flops_per_byte,
    roofline_time,
    training_flops,
    training_time_s,
    transformer_flops_by_part,
    transformer_flops_per_iteration,
    transformer_forward_flops,
    transformer_params,
)
from course_lib.units import DAY


@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (2, 4, 3), (3, 5, 2), (4, 4, 4)])
def test_gemm_rule_on_tiny_matrices(m, k, n):
    rng = np.random.default_rng(0)
    a, b = rng.integers(-5, 5, (m, k)), rng.integers(-5, 5, (k, n))
    product, multiplies, adds = count_matmul_operations(a, b)
    assert np.array_equal(product, a @ b)
    assert multiplies == m * n * k  # one multiply per MAC
    assert adds == m * n * (k - 1)  # exact count: mn(2k − 1) operations
    assert gemm_flops(m, n, k) == 2 * multiplies  # the convention: a MAC is 2 FLOPs


def _layer_forward_from_gemms(batch, seq, hidden, heads):
    """Narayanan et al. 2021 appendix, rebuilt GEMM by GEMM."""
    tokens, head_dim = batch * seq, hidden // heads
    qkv = gemm_flops(tokens, 3 * hidden, hidden)
    scores = batch * heads * gemm_flops(seq, seq, head_dim)
    over_values = batch * heads * gemm_flops(seq, head_dim, seq)
    projection = gemm_flops(tokens, hidden, hidden)
    mlp = gemm_flops(tokens, 4 * hidden, hidden) + gemm_flops(tokens, hidden, 4 * hidden)
    return qkv + scores + over_values + projection + mlp


@pytest.mark.parametrize(
    "batch, seq, layers, hidden, heads, vocab",
    [
        (2, 16, 3, 64, 4, 100),  # tiny: exact integers
        (1536, 2048, 96, 12288, 96, 51200),  # GPT-3 175B at the paper's batch
        (3072, 2048, 128, 25600, 160, 51200),  # the 1T model
    ],
)
def test_eq3_matches_the_appendix_derivation(batch, seq, layers, hidden, heads, vocab):
    layer = _layer_forward_from_gemms(batch, seq, hidden, heads)
    logits = gemm_flops(batch * seq, vocab, hidden)
    with_recompute = layers * 4 * layer + 3 * logits  # forward + backward (2×) + recomputed forward
    without = layers * 3 * layer + 3 * logits
    closed_form = 96 * batch * seq * layers * hidden**2 * (1 + seq / (6 * hidden) + vocab / (16 * layers * hidden))
    assert transformer_flops_per_iteration(batch, seq, layers, hidden, vocab) == pytest.approx(
        with_recompute, rel=1e-12
    )
    assert with_recompute == pytest.approx(closed_form, rel=1e-12)  # Eq. (3) is the same count
    assert transformer_flops_per_iteration(batch, seq, layers, hidden, vocab, recompute=False) == pytest.approx(
        without, rel=1e-12
    )
    assert transformer_forward_flops(batch, seq, layers, hidden, vocab) == pytest.approx(
        layers * layer + logits, rel=1e-12
    )


def test_selective_recompute_adds_only_the_attention_core():
    b, s, l, h, v = 1, 2048, 96, 12288, 51200
    extra = transformer_flops_per_iteration(b, s, l, h, v, "selective") - transformer_flops_per_iteration(
        b, s, l, h, v, "none"
    )
    assert extra == pytest.approx(l * 4 * b * s**2 * h)
    # Korthikanti et al. 2022 quote 2.7 % extra FLOPs for GPT-3 (1.6 % for MT-NLG 530B): the whole attention core's
    # forward + backward, s/(6h) of the iteration. One recomputed forward, as counted here, is a third of that.
    share = extra / transformer_flops_per_iteration(b, s, l, h, v, "none")
    assert round(3 * share * 100, 1) == 2.7
    s, l, h = 2048, 105, 20480
    share = (
        transformer_flops_per_iteration(b, s, l, h, v, "selective")
        / transformer_flops_per_iteration(b, s, l, h, v, "none")
        - 1
    )
    assert round(3 * share * 100, 1) == 1.6


@pytest.mark.parametrize("recompute", [True, "full", False, "none", "selective"])
def test_flops_by_part_are_the_appendix_terms(recompute):
    # By hand, Narayanan et al. 2021's appendix: per layer, forward, QKV 6bsh², scores 2bs²h, over values 2bs²h,
    # output projection 2bsh², MLP 16bsh² (24bsh² + 4bs²h together); logits 2bshV once. s ≠ h and l > 1, so
    # a part that swaps s and h, or counts the logits per layer, gives another number.
    b, s, l, h, v = 2, 16, 3, 64, 100
    by_hand = {
        "qkv_projections": 6 * b * s * h**2 * l,
        "attention_scores": 2 * b * s**2 * h * l,
        "attention_over_values": 2 * b * s**2 * h * l,
        "output_projection": 2 * b * s * h**2 * l,
        "mlp": 16 * b * s * h**2 * l,
        "logits": 2 * b * s * h * v,
    }
    recomputed = {
        True: set(by_hand) - {"logits"},
        "full": set(by_hand) - {"logits"},
        "selective": {"attention_scores", "attention_over_values"},  # the s × s products (Korthikanti et al. 2022)
        False: set(),
        "none": set(),
    }[recompute]
    parts = transformer_flops_by_part(b, s, l, h, v, recompute)
    assert [part.part for part in parts] == list(by_hand)
    for part in parts:
        assert type(part.forward_flops) is int and part.forward_flops == by_hand[part.part], part.part
        assert part.backward_flops == 2 * by_hand[part.part]
        assert part.recompute_flops == (by_hand[part.part] if part.part in recomputed else 0), part.part
    assert sum(part.forward_flops for part in parts) == transformer_forward_flops(b, s, l, h, v)
    assert sum(part.total_flops for part in parts) == transformer_flops_per_iteration(b, s, l, h, v, recompute)


def test_flops_by_part_of_gpt3_add_up_to_eq3():
    parts = transformer_flops_by_part(1536, 2048, 96, 12288, 51200)  # full recomputation: Eq. (3)
    total = sum(part.total_flops for part in parts)
    assert total == pytest.approx(transformer_flops_per_iteration(1536, 2048, 96, 12288, 51200), rel=1e-12)
    assert total == pytest.approx(
        96 * 1536 * 2048 * 96 * 12288**2 * (1 + 2048 / (6 * 12288) + 51200 / (16 * 96 * 12288))
    )


@pytest.mark.parametrize(
    "arguments, parameter",
    [
        ((0, 16, 3, 64, 100), "batch"),
        ((2, 16.5, 3, 64, 100), "seq_len"),
        ((2, 16, np.array([3, 4]), 64, 100), "layers"),
        ((2, 16, 3, -64, 100), "hidden"),
        ((2, 16, 3, 64, "100"), "vocab"),
        ((2, 16, 3, 64, 100, "partial"), "recompute"),
    ],
)
def test_flops_by_part_bad_input_names_the_parameter(arguments, parameter):
    with pytest.raises(ValueError, match=rf"^{parameter}\b"):
        transformer_flops_by_part(*arguments)


# Narayanan et al. 2021 Table 1: configurations and printed parameter counts (billions).
TABLE1 = [(36, 4096, 7.5), (80, 12288, 145.6), (96, 16384, 310.1), (105, 20480, 529.6), (128, 25600, 1008.0)]


@pytest.mark.parametrize("layers, hidden, printed", TABLE1)
def test_parameter_count_eq2_matches_table1(layers, hidden, printed):
    assert transformer_params(layers, hidden, 51200, 2048) / 1e9 == pytest.approx(printed, abs=0.05)


def test_gpt3_parameter_count():
    assert transformer_params(96, 12288, 51200, 2048) / 1e9 == pytest.approx(174.6, abs=0.05)


def test_eq4_training_time_examples():
    # GPT-3: 300B tokens, 1024 A100s at 140 TFLOP/s → "34 days"; 1T: 450B tokens, 3072 GPUs, 163 TFLOP/s → "84 days".
    assert round(training_time_s(300e9, 175e9, 1024, 140e12) / DAY) == 34
    assert round(training_time_s(450e9, transformer_params(128, 25600, 51200, 2048), 3072, 163e12) / DAY) == 84


def test_six_n_d():
    assert training_flops(70e9, 15e12) == pytest.approx(6.3e24)  # scaling book: LLaMA-3 70B
    assert training_flops(1, 1) == 6


def test_ridge_points_match_the_scaling_book():
    assert round(ridge_point_flops_per_byte(hardware.H100.peak("bf16"), hardware.H100.hbm_bandwidth_bytes_per_s)) == 295
    assert round(ridge_point_flops_per_byte(hardware.B200.peak("bf16"), hardware.B200.hbm_bandwidth_bytes_per_s)) == 281
    assert ridge_point_flops_per_byte(1.97e14, 8.2e11) == pytest.approx(240, abs=1)  # TPU v5e "about 240"


def test_matmul_intensity_is_about_the_batch_for_small_batches():
    # Scaling book: bf16 X[B,D]·Y[D,F] has intensity BDF/(BD + DF + BF) ≈ B when B ≪ D, F.
    b, d, f = 128, 16384, 16384
    intensity = arithmetic_intensity(gemm_flops(b, f, d), gemm_bytes(b, f, d))
    assert intensity == pytest.approx(b * d * f / (b * d + d * f + b * f))
    assert intensity == pytest.approx(b, rel=0.02)


def test_roofline_takes_the_slower_resource():
    peak, bandwidth = 1e15, 1e12  # ridge at 1000 FLOP/byte
    assert roofline_time(1e12, 1e6, peak, bandwidth) == pytest.approx(1e-3)  # compute-bound
    assert roofline_time(1e9, 1e9, peak, bandwidth) == pytest.approx(1e-3)  # memory-bound
    assert attainable_flops_per_s(10, peak, bandwidth) == pytest.approx(1e13)
    assert attainable_flops_per_s(5000, peak, bandwidth) == pytest.approx(peak)


def test_parameter_count_eq2_exactly():
    # Eq. (2) expanded: 12lh² + 13lh + (V + s)h, to floating-point rounding (a dropped s·h term, 1e-5 of the 7.5B
    # count, fails this; the 0.05 B tolerance against the printed counts does not).
    for layers, hidden, _ in TABLE1:
        exact = 12 * layers * hidden**2 + 13 * layers * hidden + (51200 + 2048) * hidden
        assert transformer_params(layers, hidden, 51200, 2048) == pytest.approx(exact, rel=1e-12)
