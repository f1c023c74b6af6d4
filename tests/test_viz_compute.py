"""course_lib.viz.compute, the figures of lesson 01: what each figure holds (lines, bars, texts, scales, labels),
never pixels."""

import matplotlib

matplotlib.use("Agg")

import math
import re

import numpy as np
import pytest
from lab_checks import by_gid

from course_lib import compute, hardware
from course_lib.viz.compute import plot_flops_breakdown, plot_roofline

GPT3 = dict(batch=1536, seq_len=2048, layers=96, hidden=12288, vocab=51200)
SMALL = dict(batch=2, seq_len=64, layers=3, hidden=32, vocab=100)  # every count exact in float64


# --- plot_roofline ---------------------------------------------------------------------------------------------


def test_roofline_lines_are_the_formula_for_each_default_accelerator():
    ax = plot_roofline()
    presets = (hardware.A100, hardware.H100, hardware.B200, hardware.TPU_V5E)
    assert len(ax.lines) == len(presets)
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    assert "(FLOP/byte)" in ax.get_xlabel() and "(FLOP/s)" in ax.get_ylabel()
    for line, preset in zip(ax.lines, presets, strict=True):
        x, y = line.get_data()
        peak, bandwidth = preset.peak("bf16"), preset.hbm_bandwidth_bytes_per_s
        np.testing.assert_array_equal(y, compute.attainable_flops_per_s(x, peak, bandwidth))
        ridge = compute.ridge_point_flops_per_byte(peak, bandwidth)
        assert preset.name in line.get_label() and f"ridge {ridge:.0f} FLOP/byte" in line.get_label()
        assert ridge in x  # the corner is drawn exactly
        (marker,) = by_gid(ax.collections, f"ridge:{preset.name}")
        np.testing.assert_allclose(marker.get_offsets(), [[ridge, peak]])
    low, high = ax.get_xlim()
    assert (low, high) == (1.0, 1e4)
    assert ax.yaxis.get_major_formatter()(312e12, 0) == "312 TFLOP/s"
    texts = " ".join(t.get_text() for t in ax.texts)
    assert "memory-bound on A100" in texts and "compute-bound on A100" in texts and "153 FLOP/byte" in texts


def test_roofline_points_sit_on_the_first_accelerators_roof_and_widen_the_range():
    intensity = compute.arithmetic_intensity(compute.gemm_flops(4096, 4096, 4096), compute.gemm_bytes(4096, 4096, 4096))
    ax = plot_roofline(
        [hardware.H100, hardware.A100], points=[("GEMM 4096³", intensity), ("tiny", 0.25), ("huge", 5e4)]
    )
    assert len(ax.lines) == 2
    points = [c for c in ax.collections if str(c.get_gid()).startswith("point:")]
    xs = np.array([intensity, 0.25, 5e4])
    expected = compute.attainable_flops_per_s(xs, hardware.H100.peak("bf16"), hardware.H100.hbm_bandwidth_bytes_per_s)
    np.testing.assert_allclose(np.concatenate([c.get_offsets() for c in points]), np.column_stack([xs, expected]))
    assert len({c.get_paths()[0].vertices.tobytes() for c in points}) == 3  # a marker of its own each
    labels = [c.get_label() for c in points]  # named in the legend, not in notes over the lines
    assert labels[0] == "GEMM 4096³: 1,365 FLOP/byte → 989 TFLOP/s" and not ax.texts[2:]
    assert ax.get_legend().get_texts()[-3].get_text() == labels[0]
    low, high = ax.get_xlim()
    assert low <= 0.25 and high >= 5e4


def test_roofline_other_dtype_uses_that_peak():
    ax = plot_roofline([hardware.H100], dtype="fp8")
    assert ax.lines[0].get_ydata().max() == hardware.H100.peak("fp8")


# --- plot_flops_breakdown --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "recompute, bars", [(True, 5 * 3 + 2), ("full", 17), (False, 6 * 2), ("none", 12), ("selective", 6 * 2 + 2)]
)
def test_flops_breakdown_sums_exactly_to_the_iteration_count(recompute, bars):
    ax = plot_flops_breakdown(**SMALL, recompute=recompute)
    widths = [patch.get_width() for patch in ax.patches]
    assert len(widths) == bars
    assert math.fsum(widths) == compute.transformer_flops_per_iteration(**SMALL, recompute=recompute)


def test_flops_breakdown_parts_follow_the_appendix_and_gpt3_adds_up():
    ax = plot_flops_breakdown(**GPT3)
    total = compute.transformer_flops_per_iteration(**GPT3)
    assert math.fsum(p.get_width() for p in ax.patches) == pytest.approx(total, rel=1e-12)
    b, s, l, h, v = (GPT3[k] for k in ("batch", "seq_len", "layers", "hidden", "vocab"))
    forward = {
        label: p.get_width()
        for p in ax.patches
        for label, pass_name in [p.get_gid().split("|")]
        if pass_name == "forward"
    }
    assert forward["QKV projections (6bsh²)"] == 6 * b * s * h**2 * l
    assert forward["attention scores QKᵀ (2bs²h)"] == 2 * b * s**2 * h * l
    assert forward["MLP h → 4h → h (16bsh²)"] == 16 * b * s * h**2 * l
    assert forward["logits (2bshV, never recomputed)"] == 2 * b * s * h * v
    shares = [float(re.search(r"\(([\d.]+) %\)", t.get_text()).group(1)) for t in ax.texts]
    assert len(shares) == 6 and sum(shares) == pytest.approx(100, abs=0.1)
    assert "FLOP" in ax.get_xlabel() and "4.51 EFLOP" in ax.get_title()
    assert ax.xaxis.get_major_formatter()(1e18, 0) == "1 EFLOP"


# --- bad input -------------------------------------------------------------------------------------------------


BAD_CALLS = [
    (lambda: plot_roofline([]), "accelerators"),
    (lambda: plot_roofline(["H100"]), "accelerators"),
    (lambda: plot_roofline([hardware.A100], dtype="fp4"), "dtype"),
    (lambda: plot_roofline(points=[("x", -1.0)]), "points"),
    (lambda: plot_roofline(points=[("x",)]), "points"),
    (lambda: plot_roofline(points="GEMM"), "points"),
    (lambda: plot_flops_breakdown(0, 2048, 96, 12288, 51200), "batch"),
    (lambda: plot_flops_breakdown(1, 2048, 96, 122.5, 51200), "hidden"),
    (lambda: plot_flops_breakdown(1, 2048, 96, 12288, 51200, recompute="partial"), "recompute"),
]


@pytest.mark.parametrize("call, parameter", BAD_CALLS, ids=[f"{i}-{p}" for i, (_, p) in enumerate(BAD_CALLS)])
def test_bad_input_names_the_parameter(call, parameter):
    with pytest.raises(ValueError, match=rf"^{parameter}\b"):
        call()
