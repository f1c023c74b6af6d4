"""Lab 7 (course_lib.widgets.sequences, long sequences and many experts), in process: each result against course_lib
recomputed here and against hand calculations, the figure's artists against the result, and the dependent controls
against the rules that keep every position valid. No browser and no kernel."""

from __future__ import annotations

import dataclasses
import re

import matplotlib

matplotlib.use("Agg")

import pytest
from lab_checks import assert_plain_and_finite, assert_png_matches_savefig, option_values

from course_lib import budget, hardware, parallelism, pipeline, units
from course_lib.widgets import sequences as sequences_module
from course_lib.widgets import sequences_lab

EIGHT_NODES = dataclasses.replace(hardware.DGX_H100, nodes=8)


def expected_plan(values: dict) -> parallelism.ParallelPlan:
    t = values["tensor_parallel"]
    return parallelism.ParallelPlan(
        data_parallel=8,
        tensor_parallel=t,
        pipeline_parallel=values["pipeline_parallel"],
        zero_stage=1,
        grad_accum_steps=values["microbatches"],
        sequence_parallel=t > 1,
        attention="flash",
        context_parallel=values["context_parallel"],
        context_parallel_kind=values["context_parallel_kind"],
        expert_parallel=values["expert_parallel"],
    )


def check_sequences_lab(lab):
    """The lab's result recomputed from its controls with course_lib, and the figure holding it."""
    values, result = lab.values(), lab.result
    assert_plain_and_finite(result)
    model = dataclasses.replace(sequences_module.MODELS[values["model"]], seq_len=values["seq_len"])
    plan = expected_plan(values)
    memory = parallelism.memory_breakdown(model, plan)
    assert result["memory_bytes_per_device"] == pytest.approx(float(memory.total), rel=1e-12)
    assert result["fits"] == (float(memory.total) <= 80e9)
    margin = parallelism.REFERENCE_CALIBRATION.memory_margin  # the default calibration's (validation derives it)
    assert result["fits_with_margin"] == (float(memory.total) * (1 + margin) <= 80e9)
    assert result["devices"] == 8 * values["tensor_parallel"] * values["pipeline_parallel"] * values["context_parallel"]
    c, e = values["context_parallel"], values["expert_parallel"]
    assert values["seq_len"] % c == 0 and model.experts % e == 0
    if values["context_parallel_kind"] == "all_to_all":
        assert (model.heads // values["tensor_parallel"]) % c == 0
    if model.experts > 1 and e > 1:
        tokens = values["seq_len"] / c
        stride = 1 if values["expert_placement"] == "one node" else 8
        layer = budget.moe_layer_times(model, EIGHT_NODES, e, tokens, stride, values["tensor_parallel"])
        assert result["all_to_all_s"] == pytest.approx(layer.all_to_all_s, rel=1e-12)
        assert result["expert_compute_s"] == pytest.approx(layer.expert_compute_s, rel=1e-12)
        assert result["all_to_all_across_s"] >= result["all_to_all_inside_s"]
    else:
        assert result["all_to_all_s"] == result["expert_compute_s"] == 0.0
    p, m = values["pipeline_parallel"], values["microbatches"]
    chosen = pipeline.pipeline_schedule(p, m, values["schedule"])
    assert result["bubble_fraction"] == chosen.bubble_fraction
    assert result["bubble_fraction_1f1b"] == pytest.approx((p - 1) / m)  # 1F1B: (p − 1)/m
    # The figure: the star at the current length on the chosen c's line, the bars' widths are the result's.
    star = lab.memory_figure.current
    assert star.get_xdata()[0] == values["seq_len"]
    assert star.get_ydata()[0] == pytest.approx(result["memory_bytes_per_device"], rel=1e-12)
    widths = [bar.get_width() for bar in lab.moe_figure.bars]
    assert widths[:2] == pytest.approx([result["all_to_all_inside_s"], result["all_to_all_across_s"]])
    bubbles = [bar.get_width() for bar in lab.bubble_figure.bars]
    assert bubbles == pytest.approx([result["bubble_fraction_1f1b"], result["bubble_fraction"]])
    summary = lab.summary.value
    assert units.format_bytes(result["memory_bytes_per_device"]) in summary
    assert not re.search(r"\bnan\b", summary.lower())
    assert ("does not fit" in summary) == (not result["fits"])


@pytest.fixture(scope="module")
def shared_lab():
    return sequences_lab()


@pytest.fixture
def lab(shared_lab):
    for name, value in sequences_module.DEFAULTS.items():
        shared_lab.controls[name].value = value
    assert shared_lab.values() == sequences_module.DEFAULTS
    return shared_lab


def test_defaults_mixtral_with_context_and_expert_parallelism(lab):
    assert lab.values() == {
        "model": "Mixtral 8x7B",
        "seq_len": 32768,
        "tensor_parallel": 1,
        "context_parallel_kind": "ring",
        "context_parallel": 8,
        "expert_parallel": 8,
        "expert_placement": "one node",
        "pipeline_parallel": 4,
        "schedule": "zb-h1",
        "microbatches": 8,
    }
    check_sequences_lab(lab)
    r = lab.result
    # c = 8 lets 32k tokens fit; without it only 4k does.
    assert (r["longest_fitting_seq_len"], r["longest_fitting_seq_len_without_c"]) == (32768, 4096)
    # ZB-H1 with t_F = t_B = t_W: (p − 1)(t_F + t_B − t_W) = 3 over m(t_F + t_b) = 24; 1F1B (p − 1)/m = 3/8.
    assert (r["bubble_fraction"], r["bubble_fraction_1f1b"]) == (0.125, 0.375)
    # Experts' compute by hand: 6 FLOPs × 4096 tokens × 2 experts × 3·4096·14336 weights at 494.5 TFLOP/s.
    assert r["expert_compute_s"] == pytest.approx(6 * 4096 * 2 * 3 * 4096 * 14336 / (0.5 * 989e12), rel=1e-12)
    assert_png_matches_savefig(lab)


def test_all_to_all_across_nodes_is_slower_than_inside(lab):
    lab.controls["expert_placement"].value = "across nodes"
    check_sequences_lab(lab)
    r = lab.result
    # 4096 tokens × 2 × 4096 × 2 B = 67.1 MB per call, 7/8 of it leaves each rank: at the stride of one node the
    # network (50 GB/s per GPU) carries it, ~1.17 ms a call; four calls per layer.
    assert r["all_to_all_s"] == r["all_to_all_across_s"]
    assert 1.1e-3 * 4 < r["all_to_all_across_s"] < 1.25e-3 * 4
    assert r["all_to_all_across_s"] > 5 * r["all_to_all_inside_s"]
    assert lab.moe_figure.bars[0].get_alpha() == 0.35 and lab.moe_figure.bars[1].get_alpha() == 1.0


def test_dense_models_offer_only_e_1_and_draw_no_bars(lab):
    lab.controls["model"].value = "Llama 3.1 70B"
    assert option_values(lab.controls["expert_parallel"]) == [1]
    assert lab.values()["expert_parallel"] == 1
    check_sequences_lab(lab)
    assert all(bar.get_width() == 0 for bar in lab.moe_figure.bars)
    assert "dense model" in lab.moe_figure.note.get_text()


def test_all_to_all_context_offers_only_c_that_split_the_heads(lab):
    # Transformer Engine asserts num_heads % cp_size == 0 for Q, K and V on a tensor-parallel rank's heads
    lab.controls["model"].value = "Llama 3.1 8B"  # 32 heads, 8 KV heads
    lab.controls["tensor_parallel"].value = 4  # 8 heads and 2 KV heads a rank
    lab.controls["context_parallel_kind"].value = "all_to_all"
    assert option_values(lab.controls["context_parallel"]) == [1, 2]
    assert lab.values()["context_parallel"] == 2  # 8 moved to the nearest valid c
    check_sequences_lab(lab)
    lab.controls["tensor_parallel"].value = 8  # 4 heads and 1 KV head a rank: no split
    assert option_values(lab.controls["context_parallel"]) == [1]
    check_sequences_lab(lab)
    for kind in ("ring", "all_gather"):  # neither needs whole heads
        lab.controls["context_parallel_kind"].value = kind
        assert option_values(lab.controls["context_parallel"]) == [1, 2, 4, 8, 16]
    lab.controls["context_parallel"].value = 8
    check_sequences_lab(lab)


def test_zb_h2_needs_2p_minus_1_microbatches(lab):
    lab.controls["pipeline_parallel"].value = 8
    lab.controls["schedule"].value = "zb-h2"
    assert option_values(lab.controls["microbatches"]) == [16, 32]  # m ≥ 2·8 − 1 = 15
    check_sequences_lab(lab)
    lab.controls["schedule"].value = "zb-h1"
    assert option_values(lab.controls["microbatches"]) == [8, 16, 32]  # m ≥ p
    check_sequences_lab(lab)


def test_memory_falls_by_the_context_split_of_activations(lab):
    """Activations per device fall c-fold; the model states do not move."""
    lab.controls["context_parallel"].value = 1
    alone = lab.typed_result.memory
    lab.controls["context_parallel"].value = 8
    split = lab.typed_result.memory
    assert float(split.activations) == pytest.approx(float(alone.activations) / 8, rel=1e-12)
    assert float(split.parameters) == pytest.approx(float(alone.parameters), rel=1e-12)


def test_bad_start_values_name_the_control():
    with pytest.raises(ValueError, match="expert_parallel"):
        sequences_lab(model="Llama 3.1 8B", expert_parallel=8)
    with pytest.raises(ValueError, match="microbatches"):
        sequences_lab(pipeline_parallel=8, schedule="zb-h2", microbatches=8)
