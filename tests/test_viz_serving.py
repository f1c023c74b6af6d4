"""Serving figures: what each holds (artists, data, labels, scales, texts), never pixels."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from lab_checks import assert_updates_match_a_fresh_build
from matplotlib.figure import Figure

from course_lib import serving
from course_lib.hardware import DGX_A100, DGX_H100, H100, INFINIBAND_NDR_8X, NVLINK4, Cluster
from course_lib.parallelism import LLAMA3_8B, LLAMA3_70B
from course_lib.viz.serving import (
    DECODE_SEGMENTS,
    ConcurrencySweepFigure,
    DecodeBreakdownFigure,
    LatencyThroughputFigure,
    plot_concurrency_sweep,
    plot_decode_breakdown,
    plot_latency_throughput,
)

H100_NODES = Cluster("4 × DGX H100", H100, 8, 4, NVLINK4, INFINIBAND_NDR_8X)


def test_curve_holds_every_batch_size_and_the_current_point():
    curve = serving.latency_throughput_curve(LLAMA3_8B, DGX_H100, 2, 1, context_len=4096)
    current = serving.decode_step(LLAMA3_8B, DGX_H100, 2, 1, 32, 4096)
    figure = LatencyThroughputFigure(plt.subplots()[1])
    ax = figure.ax
    figure.update((curve, current))
    np.testing.assert_allclose(figure.curve.get_xdata(), curve.tokens_per_s_per_device)
    np.testing.assert_allclose(figure.curve.get_ydata(), curve.time_per_output_token_s)
    assert len(figure.curve.get_xdata()) == curve.sequences[-1]
    assert figure.current.get_xdata()[0] == pytest.approx(current.tokens_per_s_per_device)
    assert figure.current.get_ydata()[0] == pytest.approx(current.time_per_output_token_s)
    assert figure.text.get_text().startswith("b = 32: ")
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    assert "tokens/s per device" in ax.get_xlabel() and "(s)" in ax.get_ylabel()
    x0, x1 = ax.get_xlim()
    assert x0 < min(curve.tokens_per_s_per_device) and x1 > max(curve.tokens_per_s_per_device)


def test_update_moves_the_same_artists():
    figure = LatencyThroughputFigure(plt.subplots()[1])
    ax = figure.ax
    figure.update((serving.latency_throughput_curve(LLAMA3_8B, DGX_H100, 1, 1, context_len=8192), None))
    line = figure.curve
    assert len(figure.current.get_xdata()) == 0 and figure.text.get_text() == ""
    longer = serving.latency_throughput_curve(LLAMA3_8B, DGX_H100, 1, 1, context_len=1024)
    figure.update((longer, serving.decode_step(LLAMA3_8B, DGX_H100, 1, 1, 4, 1024)))
    assert figure.curve is line and len(ax.lines) == 2
    assert len(line.get_xdata()) == longer.sequences[-1]


def test_breakdown_segments_add_up_to_one_batch_path():
    step = serving.decode_step(LLAMA3_70B, H100_NODES, 8, 2, 4, 4096)
    ax = plot_decode_breakdown(step)
    patches = [p for p in ax.patches if p.get_gid()]
    assert [p.get_gid() for p in patches] == [name for name, _, _ in DECODE_SEGMENTS]
    widths = [p.get_width() for p in patches]
    p = 2
    assert widths[0] == pytest.approx(p * step.weight_read_s)
    assert widths[1] == pytest.approx(p * step.kv_read_s)
    assert widths[2] == pytest.approx(p * step.all_reduce_latency_s)
    assert widths[3] == pytest.approx(p * step.all_reduce_bandwidth_s)
    assert widths[4] == pytest.approx(step.pipeline_hop_s) and widths[4] > 0
    assert sum(widths) == pytest.approx(step.time_per_output_token_s)
    assert patches[1].get_x() == pytest.approx(widths[0])
    assert ax.get_title().startswith("t = 8, p = 2, b = 4: ") and "memory-bound" in ax.get_title()


def test_breakdown_title_says_when_batches_queue_at_each_stage():
    figure = DecodeBreakdownFigure(plt.subplots()[1])
    ax = figure.ax
    figure.update(serving.decode_step(LLAMA3_70B, H100_NODES, 8, 2, 4, 4096, batches_in_flight=6))
    assert "6 batches share each stage" in ax.get_title()
    figure.update(serving.decode_step(LLAMA3_70B, H100_NODES, 8, 2, 4, 4096, batches_in_flight=2))
    assert "share" not in ax.get_title()


def test_compute_bound_weights_draw_the_multiply_time():
    step = serving.decode_step(LLAMA3_8B, DGX_H100, 1, 1, 320, 512)
    assert step.matmul_compute_s > step.weight_read_s  # the multiplies are compute-bound (the step is not: KV reads)
    ax = plot_decode_breakdown(step)
    assert ax.patches[0].get_width() == pytest.approx(step.matmul_compute_s)


def test_figures_refuse_the_wrong_results():
    one = serving.decode_step(LLAMA3_8B, DGX_H100, 1, 1, 1, 1024)
    curve = serving.latency_throughput_curve(LLAMA3_8B, DGX_H100, 1, 1, context_len=1024)
    with pytest.raises(ValueError, match="curve must hold"):
        plot_latency_throughput(one)
    with pytest.raises(ValueError, match="current point must be one decode step"):
        plot_latency_throughput(curve, curve)
    with pytest.raises(ValueError, match="serving.DecodeStep"):
        plot_decode_breakdown("fast")
    with pytest.raises(ValueError, match=r"the pair \(curve, current\), got a DecodeStep"):
        LatencyThroughputFigure(plt.subplots()[1]).update(curve)


def _curve(context_len, sequences=None, t=1):
    curve = serving.latency_throughput_curve(LLAMA3_8B, DGX_H100, t, 1, context_len=context_len)
    current = None if sequences is None else serving.decode_step(LLAMA3_8B, DGX_H100, t, 1, sequences, context_len)
    return lambda live: live.update((curve, current))


@pytest.mark.parametrize("snap", [False, True])
@pytest.mark.parametrize(
    "first, second",
    [(_curve(8192, 16), _curve(1024)), (_curve(1024), _curve(131072, 1, t=8)), (_curve(4096, 64), _curve(512, 2))],
)
def test_curve_figure_updated_twice_draws_what_a_fresh_one_draws(snap, first, second):
    def build():
        figure = Figure(figsize=(7, 4.2), dpi=72)
        return figure, LatencyThroughputFigure(figure.add_axes((0.12, 0.12, 0.8, 0.78)), snap=snap)

    assert_updates_match_a_fresh_build(build, first, second)


def _step(*args, **kwargs):
    step = serving.decode_step(LLAMA3_70B, H100_NODES, *args, **kwargs)
    return lambda live: live.update(step)


@pytest.mark.parametrize("snap", [False, True])
@pytest.mark.parametrize(
    "first, second",
    [
        (_step(8, 2, 4, 4096, batches_in_flight=6), _step(8, 1, 1, 1024)),
        (_step(1, 1, 64, 131072), _step(32, 1, 256, 4096, batches_in_flight=2)),
    ],
)
def test_breakdown_figure_updated_twice_draws_what_a_fresh_one_draws(snap, first, second):
    def build():
        figure = Figure(figsize=(8, 2.6), dpi=72)
        return figure, DecodeBreakdownFigure(figure.add_axes((0.05, 0.45, 0.9, 0.4)), snap=snap)

    assert_updates_match_a_fresh_build(build, first, second)


def _sweep_report(concurrency=16, **changes):
    settings = {"weights": "bf16", "prompt_tokens": 512, "output_tokens": 64, **changes}
    return serving.concurrency_sweep_report(LLAMA3_8B, DGX_H100, 1, concurrency=concurrency, **settings)


def test_sweep_figure_draws_the_three_curves_the_knee_and_the_point():
    r = _sweep_report()
    latency_ax, throughput_ax = plot_concurrency_sweep(r)
    lines = {line.get_label(): line for line in latency_ax.lines}
    assert np.array_equal(lines["time to first token"].get_ydata(), r.median_ttft_s)
    assert np.array_equal(lines["inter-token latency"].get_ydata(), r.median_itl_s)
    assert np.array_equal(lines["inter-token latency"].get_xdata(), serving.SWEEP_CONCURRENCIES)
    (curve,) = [line for line in throughput_ax.lines if line.get_gid() == "throughput"]
    assert np.array_equal(curve.get_ydata(), r.output_tokens_per_s)
    knees = [line for ax in (latency_ax, throughput_ax) for line in ax.lines if line.get_gid() == "knee"]
    assert [line.get_xdata()[0] for line in knees] == [r.knee_concurrency] * 2
    (star,) = [line for line in throughput_ax.lines if line.get_gid() == "current throughput"]
    assert (star.get_xdata()[0], star.get_ydata()[0]) == (16, r.tokens_per_s)
    assert latency_ax.get_xscale() == "log" and latency_ax.get_ylabel() == "median latency (s)"
    plt.close("all")


def test_sweep_figure_shows_a_refusal_instead_of_curves():
    refused = serving.concurrency_sweep_report(
        LLAMA3_70B, DGX_A100, 8, weights="fp8", prompt_tokens=512, output_tokens=64, concurrency=1
    )
    figure = ConcurrencySweepFigure(*plt.subplots(1, 2)[1], serving.SWEEP_CONCURRENCIES)
    figure.update(_sweep_report())
    figure.update(refused)
    assert all(len(line.get_xdata()) == 0 for line in (figure.ttft, figure.itl, figure.throughput, figure.current))
    text = " ".join(figure.message.get_texts())
    assert text.startswith("Not served:") and "fp8" in text
    with pytest.raises(ValueError, match="ConcurrencySweepReport"):
        figure.update(serving.decode_step(LLAMA3_8B, DGX_H100, 1, 1, 1, 1024))
    plt.close("all")


def _swept(concurrency, **changes):
    return lambda live: live.update(_sweep_report(concurrency, **changes))  # simulated when the test runs (kept)


@pytest.mark.parametrize("snap", [False, True])
@pytest.mark.parametrize(
    "first, second",
    [(_swept(1), _swept(512, output_tokens=32)), (_swept(64, prompt_tokens=2048), _swept(8))],
)
def test_sweep_figure_updated_twice_draws_what_a_fresh_one_draws(snap, first, second):
    def build():
        figure = Figure(figsize=(11.5, 4.2), dpi=72)
        axes = figure.add_axes((0.075, 0.13, 0.39, 0.77)), figure.add_axes((0.585, 0.13, 0.39, 0.77))
        return figure, ConcurrencySweepFigure(*axes, serving.SWEEP_CONCURRENCIES, snap=snap)

    assert_updates_match_a_fresh_build(build, first, second)
