"""Lab 6 (course_lib.widgets.serving, serving a model), in process: every control swept over its range, each result
checked against course_lib.serving recomputed here, the figure's artists against the result, and the dependent
controls against the rules that make a replica valid. No browser and no kernel."""

from __future__ import annotations

import io
import math
import random

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from lab_checks import (
    assert_plain_and_finite,
    assert_png_matches_savefig,
    assert_result_as_before,
    decoded,
    option_values,
)

from course_lib import hardware, parallelism, serving, units
from course_lib.widgets import serving as serving_module
from course_lib.widgets import serving_lab

NODES = {
    "A100 SXM 80GB": hardware.DGX_A100,
    "H100 SXM 80GB": hardware.DGX_H100,
    "H200 SXM 141GB": hardware.DGX_H200,
    "B200": hardware.DGX_B200,
}


def expected_serving(values: dict) -> dict:
    """The lab's numbers, recomputed from the control values with course_lib.serving."""
    model = serving_module.MODELS[values["model"]]
    t, p, b = values["tensor_parallel"], values["pipeline_parallel"], values["sequences"]
    context = values["prompt_len"] + values["generated_tokens"]
    node = NODES[values["device"]]
    nodes = -(-t * p // 8)  # 8 GPUs per node
    cluster = hardware.Cluster("replica", node.accelerator, 8, nodes, node.intra_node_link, node.inter_node_link)
    memory = serving.serving_memory(model, t, p, b, context)
    pre = serving.prefill(model, cluster, t, p, values["prompt_len"], b, 0.5)
    step = serving.decode_step(model, cluster, t, p, b, context)
    capacity = node.accelerator.hbm_capacity_bytes
    return {
        "devices": t * p,
        "nodes": nodes,
        "context_len": context,
        "weights_bytes": memory.weights,
        "kv_cache_bytes_per_device": memory.kv_cache,
        "activations_bytes": memory.activations,
        "total_bytes": memory.total,
        "capacity_bytes": capacity,
        "fits": memory.total <= capacity,
        "max_sequences": serving.max_sequences_that_fit(model, node.accelerator, t, p, context),
        "kv_cache_bytes": model.layers * 2 * model.kv_heads * model.head_dim * context * b * 2,
        "time_to_first_token_s": pre.time_to_first_token_s,
        "weight_read_s": step.weight_read_s,
        "kv_read_s": step.kv_read_s,
        "all_reduce_latency_s": step.all_reduce_latency_s,
        "all_reduce_bandwidth_s": step.all_reduce_bandwidth_s,
        "pipeline_hop_s": step.pipeline_hop_s,
        "time_per_output_token_s": step.time_per_output_token_s,
        "tokens_per_s_per_replica": b / step.time_per_output_token_s,
        "tokens_per_s_per_device": b / step.time_per_output_token_s / (t * p),
        "bound": step.bound,
    }


def check_serving_lab(lab):
    values, result = lab.values(), lab.result
    assert_plain_and_finite(result)
    model = serving_module.MODELS[values["model"]]
    t = values["tensor_parallel"]
    assert model.heads % t == 0 and (model.kv_heads % t == 0 or t % model.kv_heads == 0)
    assert model.layers % values["pipeline_parallel"] == 0
    for key, value in expected_serving(values).items():
        if isinstance(value, (bool, str)):
            assert result[key] == value, key
        else:
            assert result[key] == pytest.approx(value, rel=1e-12), key
    assert result["request_time_s"] == pytest.approx(
        result["time_to_first_token_s"] + (values["generated_tokens"] - 1) * result["time_per_output_token_s"]
    )
    # The figure: the current point and the breakdown hold the result; the curve ends at the largest batch that fits.
    curve = lab.curve_figure
    assert curve.current.get_xdata()[0] == pytest.approx(result["tokens_per_s_per_device"])
    assert curve.current.get_ydata()[0] == pytest.approx(result["time_per_output_token_s"])
    assert (
        lab.typed_result.curve.sequences[-1] == max(result["max_sequences"], 1)
        and lab.typed_result.curve.sequences[0] == 1
    )
    widths = [bar.get_width() for bar in lab.breakdown_figure.bars]
    p = values["pipeline_parallel"]
    assert widths[2] == pytest.approx(p * result["all_reduce_latency_s"])
    assert widths[4] == pytest.approx(result["pipeline_hop_s"])
    assert units.format_time(result["time_per_output_token_s"]) in lab.breakdown_figure.total.get_text()
    assert lab.breakdown_figure.title.get_text().startswith(f"t = {t}, p = {p}, b = {values['sequences']}: ")
    summary = lab.summary.value
    for key in ("weights_bytes", "kv_cache_bytes_per_device", "total_bytes", "kv_cache_bytes"):
        assert units.format_bytes(result[key]) in summary, key
    for key in ("time_to_first_token_s", "time_per_output_token_s"):
        assert units.format_time(result[key]) in summary, key
    assert ("fits</b>" in summary) == result["fits"] and "nan" not in summary.lower()


@pytest.fixture(scope="module")
def shared_serving_lab():
    return serving_lab()


def reset(lab, defaults):
    for name, value in defaults.items():  # in order: the model first (it sets the t and p options)
        lab.controls[name].value = value
    assert lab.values() == defaults
    return lab


@pytest.fixture
def lab(shared_serving_lab):
    return reset(shared_serving_lab, serving_module.DEFAULTS)


def test_defaults_llama3_70b_on_one_h100_node(lab):
    assert lab.values() == {
        "model": "Llama 3.1 70B",
        "device": "H100 SXM 80GB",
        "tensor_parallel": 8,
        "pipeline_parallel": 1,
        "sequences": 8,
        "prompt_len": 1024,
        "generated_tokens": 256,
    }
    check_serving_lab(lab)
    result = lab.result
    # By hand: 80 layers × 2 (K, V) × 8 KV heads × 128 × 2 bytes = 327,680 B per token; 1,280 tokens × 8 sequences.
    assert result["kv_cache_bytes"] == 327_680 * 1280 * 8 == 3_355_443_200
    assert result["kv_cache_bytes_per_device"] == 3_355_443_200 / 8
    # Decode: 2 × 80 all-reduces per token over 8 NVLink GPUs, each the launch floor and NCCL's ring with LL,
    # 4.8 + 6.6 + 14 × 0.6 = 19.8 µs: 3.17 ms of latency per token.
    assert result["all_reduce_latency_s"] == pytest.approx(2 * 80 * 19.8e-6)
    assert result["bound"] == "memory" and result["fits"] and result["nodes"] == 1
    assert round(result["compute_bound_sequences"], 1) == 147.6  # 989e12 × 0.5 / 3.35e12
    assert_png_matches_savefig(lab)


def test_model_change_offers_only_valid_sizes(lab):
    controls = lab.controls
    for name, model in serving_module.MODELS.items():
        controls["model"].value = name
        ts = [t for t in range(1, 65) if model.heads % t == 0 and (8 % t == 0 or t % 8 == 0)]
        if model.kv_heads != 8:  # GPT-3 175B: 96 KV heads, every divisor of the heads splits them
            ts = [t for t in range(1, 65) if model.heads % t == 0]
        assert option_values(controls["tensor_parallel"]) == ts, name
        assert option_values(controls["pipeline_parallel"]) == [p for p in range(1, 17) if model.layers % p == 0]
        check_serving_lab(lab)


def test_model_change_keeps_the_nearest_valid_sizes(lab):
    controls = lab.controls
    controls["tensor_parallel"].value, controls["pipeline_parallel"].value = 64, 16
    controls["model"].value = parallelism.LLAMA32_3B.name  # 24 heads, 28 layers: t = 64 → 24, p = 16 → 14
    assert (controls["tensor_parallel"].value, controls["pipeline_parallel"].value) == (24, 14)
    controls["model"].value = parallelism.LLAMA3_405B.name  # 128 heads, 126 layers: t = 24 → 32, p = 14 stays
    assert (controls["tensor_parallel"].value, controls["pipeline_parallel"].value) == (32, 14)
    check_serving_lab(lab)


@pytest.mark.slow
def test_every_reachable_replica_is_valid(lab):
    """Every (model, device, t, p) the controls can offer computes, at both ends of batch and context."""
    values = lab.values()
    for name, model in serving_module.MODELS.items():
        for device in serving_module.NODES:
            for t in serving_module.tensor_parallel_options(model):
                for p in serving_module.pipeline_parallel_options(model):
                    for b, s, g in ((1, 128, 1), (1024, 131072, 16384)):
                        state = dict(values, model=name, device=device, tensor_parallel=t, pipeline_parallel=p)
                        state.update(sequences=b, prompt_len=s, generated_tokens=g)
                        result = lab.result_dict(lab.compute(state))
                        assert_plain_and_finite(result)
                        assert result["nodes"] == math.ceil(t * p / 8)


def test_gqa_and_the_tensor_parallel_latency_turn(lab):
    controls = lab.controls
    # GPT-3 175B keeps K and V for all 96 heads (96 layers); Llama 3.1 70B for 8 of its 64 (80 layers), by hand.
    controls["model"].value = parallelism.GPT3_175B.name
    assert lab.result["kv_cache_bytes_per_sequence_token"] == 96 * 2 * 96 * 128 * 2
    controls["model"].value = parallelism.LLAMA3_70B.name
    assert lab.result["kv_cache_bytes_per_sequence_token"] == 80 * 2 * 8 * 128 * 2
    # Decode latency of one sequence falls from t = 4 to 16, then rises at 32 (the α of 160 all-reduces grows).
    controls["sequences"].value = 1
    tpot = {}
    for t in (4, 8, 16, 32):
        controls["tensor_parallel"].value = t
        tpot[t] = lab.result["time_per_output_token_s"]
    assert tpot[4] > tpot[8] > tpot[16] < tpot[32]


def test_past_the_memory_the_lab_says_so(lab):
    controls = lab.controls
    controls["model"].value = parallelism.LLAMA3_405B.name
    controls["tensor_parallel"].value, controls["pipeline_parallel"].value = 1, 1
    result = lab.result
    assert not result["fits"] and result["max_sequences"] == 0 and len(lab.typed_result.curve.sequences) == 1
    assert "does not fit</b>" in lab.summary.value and "not even one sequence fits" in lab.summary.value
    check_serving_lab(lab)


def test_random_walk_keeps_every_invariant(lab):
    rng = random.Random(7)
    names = list(lab.controls)
    for _ in range(15):
        control = lab.controls[rng.choice(names)]
        control.value = rng.choice(option_values(control))
        check_serving_lab(lab)
    assert_png_matches_savefig(lab)  # the pictures of each panel's axes follow the limits


def test_axes_snap_so_most_moves_keep_the_pictures(lab):
    """The curve's limits are whole decades and the bar's a 1, 2 or 5 × 10^k: moving the batch within a decade
    keeps both, so the figure is redrawn from the same pictures."""
    x0, x1 = lab.curve_figure.ax.get_xlim()
    y0, y1 = lab.curve_figure.ax.get_ylim()
    assert [math.log10(v) % 1 for v in (x0, x1, y0, y1)] == pytest.approx([0, 0, 0, 0], abs=1e-9)
    upper = lab.breakdown_figure.ax.get_xlim()[1]
    mantissa = upper / 10 ** math.floor(math.log10(upper) + 1e-9)
    assert any(mantissa == pytest.approx(m) for m in (1, 2, 5)), upper
    redraw = lab._redraw
    lab.controls["sequences"].value = 6
    assert lab._redraw is redraw and lab.result["time_per_output_token_s"] < upper
    assert_png_matches_savefig(lab)


def test_curve_is_log_spaced_and_rises(lab):
    curve = lab.typed_result.curve
    assert len(curve.sequences) <= serving_module.CURVE_POINTS
    assert np.all(np.diff(curve.sequences) > 0) and np.all(np.diff(curve.time_per_output_token_s) > 0)


@pytest.mark.parametrize(
    "initial, message",
    [
        ({"modle": "Llama 3.1 70B"}, "unknown control"),
        ({"model": "GPT-5"}, "model must be one of"),
        ({"device": "V100"}, "device must be one of"),
        ({"tensor_parallel": 3}, "tensor_parallel must be one of"),
        ({"model": parallelism.LLAMA32_3B.name, "tensor_parallel": 16}, "tensor_parallel must be one of"),
        ({"pipeline_parallel": 3}, "pipeline_parallel must be one of"),
        ({"sequences": 5}, "sequences must be one of"),
        ({"prompt_len": 1000}, "prompt_len must be one of"),
        ({"generated_tokens": True}, "generated_tokens must be one of"),
    ],
)
def test_bad_initial_values_raise(initial, message):
    with pytest.raises(ValueError, match=message):
        serving_lab(**initial)


@pytest.mark.slow
def test_fast_png_matches_savefig_as_the_axes_change(lab):
    """Moves that change the curve's and the bar's axis ranges (model, device, t, p, batch, context): the picture
    put together from cached axis layers shows what a full savefig draws, within a level or two of each pixel."""
    controls = lab.controls
    moves = [
        ("tensor_parallel", 1),
        ("model", parallelism.LLAMA3_8B.name),
        ("pipeline_parallel", 4),
        ("device", "B200"),
        ("sequences", 512),
        ("prompt_len", 131072),
        ("model", parallelism.GPT3_175B.name),
        ("tensor_parallel", 32),
    ]
    seen = set()
    for name, value in moves:
        controls[name].value = value
        seen.add(lab._axis_limits())
        assert_png_matches_savefig(lab)
        buffer = io.BytesIO()
        lab.figure.savefig(buffer, format="png", dpi=lab.dpi)
        assert np.abs(decoded(lab.image.value) - decoded(buffer.getvalue())).max() <= 2, (name, value)
    assert len(seen) >= 6  # the moves did change the axes


# --- the typed result: one ServingReport per refresh, one model call, the same plain dict --------------------------


def serving_result_as_before(values: dict) -> dict:
    """``lab.result`` as the lab built it before it had a typed result (from serving_memory, max_sequences_that_fit,
    prefill and decode_step called one by one), written out here once more so that the dict view cannot drift."""
    model = serving_module.MODELS[values["model"]]
    t, p, b = values["tensor_parallel"], values["pipeline_parallel"], values["sequences"]
    prompt, generated = values["prompt_len"], values["generated_tokens"]
    context = prompt + generated
    cluster = serving_module.replica_cluster(values["device"], t * p)
    device = cluster.accelerator
    memory = serving.serving_memory(model, t, p, b, context)
    pre = serving.prefill(model, cluster, t, p, prompt, b, 0.5)
    step = serving.decode_step(model, cluster, t, p, b, context)
    capacity, total = float(device.hbm_capacity_bytes), float(memory.total)
    ttft, tpot = float(pre.time_to_first_token_s), float(step.time_per_output_token_s)
    step_keys = ("weight_read_s", "matmul_compute_s", "kv_read_s", "attention_compute_s", "all_reduce_latency_s")
    return {
        **{"model": model.name, "device": device.name, "tensor_parallel": t, "pipeline_parallel": p},
        **{"devices": t * p, "nodes": cluster.nodes, "sequences": b, "prompt_len": prompt},
        **{"generated_tokens": generated, "context_len": context, "kv_heads": model.kv_heads},
        "weights_bytes": float(memory.weights),
        "kv_cache_bytes_per_device": float(memory.kv_cache),
        "activations_bytes": float(memory.activations),
        **{"total_bytes": total, "capacity_bytes": capacity, "fits": total <= capacity},
        "headroom_bytes": capacity - total,
        "max_sequences": int(serving.max_sequences_that_fit(model, device, t, p, context)),
        "kv_cache_bytes": float(serving.kv_cache_bytes(model.layers, model.kv_heads, model.head_dim, context, b)),
        "kv_cache_bytes_per_sequence_token": float(
            serving.kv_cache_bytes(model.layers, model.kv_heads, model.head_dim, 1, 1)
        ),
        "prefill_compute_s": float(pre.compute_s),
        "prefill_all_reduce_s": float(pre.all_reduce_s),
        "time_to_first_token_s": ttft,
        **{key: float(getattr(step, key)) for key in step_keys},
        "all_reduce_bandwidth_s": float(step.all_reduce_bandwidth_s),
        "pipeline_hop_s": float(step.pipeline_hop_s),
        "time_per_output_token_s": tpot,
        "bound": step.bound,
        "compute_bound_sequences": float(
            serving.decode_compute_bound_sequences(device.peak("bf16") * 0.5, device.hbm_bandwidth_bytes_per_s)
        ),  # decode's multiplies at serving.DECODE_COMPUTE_EFFICIENCY = 0.5 of peak
        "tokens_per_s_per_replica": float(step.tokens_per_s_per_replica),
        "tokens_per_s_per_device": float(step.tokens_per_s_per_device),
        "request_time_s": ttft + (generated - 1) * tpot,
    }


def test_result_is_one_frozen_serving_report(lab):
    import dataclasses

    report = lab.typed_result
    assert isinstance(report, serving.ServingReport)
    assert isinstance(report.step, serving.DecodeStep) and isinstance(report.curve, serving.DecodeStep)
    assert np.ndim(report.step.sequences) == 0 and np.ndim(report.curve.sequences) == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.prompt_len = 1
    with pytest.raises(ValueError, match="generated_tokens must be a whole number ≥ 1"):
        dataclasses.replace(report, generated_tokens=0)
    with pytest.raises(ValueError, match="max_sequences must be a whole number ≥ 0"):
        dataclasses.replace(report, max_sequences=-1)
    with pytest.raises(ValueError, match="step must be one batch's decode step"):
        dataclasses.replace(report, step=report.curve)
    assert not hasattr(lab, "curve") and not hasattr(lab, "step")  # no side channels: the figure reads typed_result


def test_dict_view_is_what_it_was_for_many_settings(lab):
    assert_result_as_before(lab, serving_result_as_before, moves=40, seed=7)


def test_refresh_calls_the_model_once(lab):
    """One serving_report per refresh; inside it decode is timed twice (the batch, and the curve's batch sizes)."""
    from unittest import mock

    with (
        mock.patch.object(serving, "serving_report", wraps=serving.serving_report) as report,
        mock.patch.object(serving.reports, "decode_step", wraps=serving.decode_step) as decode,
        mock.patch.object(serving.reports, "prefill", wraps=serving.prefill) as prefill,
    ):
        for name, value in (("sequences", 32), ("prompt_len", 4096), ("model", "Llama 3.2 3B")):
            for counter in (report, decode, prefill):
                counter.reset_mock()
            lab.controls[name].value = value
            assert (report.call_count, decode.call_count, prefill.call_count) == (1, 2, 1), name
