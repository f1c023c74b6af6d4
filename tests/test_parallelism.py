"""Memory and traffic of each split against ZeRO, Korthikanti et al. and Narayanan et al."""

from dataclasses import replace

import numpy as np
import pytest

from course_lib import compute, hardware, parallelism
from course_lib.parallelism import (
    GPT3_175B,
    MEGATRON_1T,
    MT_NLG_530B,
    ParallelPlan,
    TransformerModel,
    activation_bytes_per_layer,
    check_plan_for_model,
    communication_volume_per_step,
    global_batch,
    memory_breakdown,
    pipeline_bubble_fraction,
    pipeline_in_flight_microbatches,
    splits_evenly,
    step_transfers,
    zero_model_state_bytes,
)
from course_lib.pipeline import pipeline_schedule

# ZeRO (Rajbhandari et al. 2020) Table 1: per-device model-state memory in GB, as printed.
# Columns: model (Ψ), stage; rows: DP degree N_d.
ZERO_TABLE1 = {
    7.5e9: {
        1: [120, 52.5, 35.6, 31.4, 30.4, 30.1],
        2: [120, 41.3, 21.6, 16.6, 15.4, 15.1],
        3: [120, 30, 7.5, 1.88, 0.47, 0.12],
    },
    128e9: {1: [2048, 896, 608, 536, 518, 513], 2: [2048, 704, 368, 284, 263, 257], 3: [2048, 512, 128, 32, 8, 2]},
    1e12: {
        1: [16000, 7000, 4750, 4187, 4046, 4011],
        2: [16000, 5500, 2875, 2218, 2054, 2013],
        3: [16000, 4000, 1000, 250, 62.5, 15.6],
    },
}
DP_DEGREES = [1, 4, 16, 64, 256, 1024]
CELLS = [
    (psi, stage, n_d, printed)
    for psi, stages in ZERO_TABLE1.items()
    for stage, column in stages.items()
    for n_d, printed in zip(DP_DEGREES, column, strict=True)
]


def test_table1_has_54_cells():
    assert len(CELLS) == 54


@pytest.mark.parametrize("psi, stage, n_d, printed", CELLS)
def test_zero_table1(psi, stage, n_d, printed):
    computed_gb = zero_model_state_bytes(psi, n_d, stage) / 1e9
    # The paper rounds the 7.5B columns to 3 significant figures and truncates the large 128B/1T values
    # (513.5 → 513, 4187.5 → 4187): compare within the printed precision.
    tolerance = 1.0 if printed >= 100 else 0.005 * printed + 0.005
    assert computed_gb == pytest.approx(printed, abs=tolerance)
    if printed >= 100:
        assert int(computed_gb) == int(printed)  # truncation reproduces the printed integer exactly


def test_zero_worked_example_and_baseline():
    # ZeRO §5 text: Ψ = 7.5B, N_d = 64: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB; §3.1: GPT-2 1.5B needs 24 GB.
    values = [zero_model_state_bytes(7.5e9, 64, stage) / 1e9 for stage in range(4)]
    assert values == pytest.approx([120, 31.40625, 16.640625, 1.875])
    assert zero_model_state_bytes(1.5e9, 1, 0) == pytest.approx(24e9)


@pytest.mark.parametrize("mp, printed_os, printed_osg", [(1, 7.6, 14.4), (2, 15.2, 28.8), (16, 121.6, 230.4)])
def test_zero_table2_maximum_model_sizes(mp, printed_os, printed_osg):
    # 32 GB V100s, N_d = 64, model parallel degree MP: Ψ_max = 32 GB × MP / (bytes per parameter per device).
    # The paper truncates the MP = 1 value (7.64 → 7.6) and multiplies it by MP, so compare per MP at 0.1 B.
    per_param_os = zero_model_state_bytes(1.0, 64, 1)
    per_param_osg = zero_model_state_bytes(1.0, 64, 2)
    assert int(32e9 / per_param_os / 1e8) / 10 * mp == pytest.approx(printed_os)
    assert int(32e9 / per_param_osg / 1e8) / 10 * mp == pytest.approx(printed_osg)


# Korthikanti et al. 2022 Table 2 (activation bytes per layer), written out for s, b, h, a, t.
def _table2(s, b, h, a, t):
    sbh = s * b * h
    return {
        ("none", False, 1): sbh * (34 + 5 * a * s / h),
        ("none", False, t): sbh * (10 + 24 / t + 5 * a * s / (h * t)),
        ("none", True, t): sbh * (34 / t + 5 * a * s / (h * t)),
        ("selective", False, t): sbh * (10 + 24 / t),
        ("selective", True, t): sbh * (34 / t),
        ("full", False, t): 2 * sbh,
    }


@pytest.mark.parametrize("model", [GPT3_175B, MT_NLG_530B, MEGATRON_1T])
@pytest.mark.parametrize("t", [1, 2, 8])
def test_korthikanti_table2(model, t):
    expected = _table2(model.seq_len, 1, model.hidden, model.heads, t)
    for (recompute, sp, tp), value in expected.items():
        got = activation_bytes_per_layer(model.seq_len, 1, model.hidden, model.heads, tp, sp, recompute)
        assert got == pytest.approx(value, rel=1e-12), (recompute, sp, tp)


def test_korthikanti_published_ratios():
    # 5as/h = 80 for GPT-3 and 64 for MT-NLG; selective recomputation saves 70 % and 65 % of activation memory.
    for model, ratio, saving in ((GPT3_175B, 80, 0.70), (MT_NLG_530B, 64, 0.65)):
        assert 5 * model.heads * model.seq_len / model.hidden == ratio
        full = activation_bytes_per_layer(model.seq_len, 1, model.hidden, model.heads)
        selective = activation_bytes_per_layer(model.seq_len, 1, model.hidden, model.heads, recompute="selective")
        assert round(1 - selective / full, 2) == saving


def test_first_stage_activations_eq5_and_eq6():
    # 1F1B: the first stage holds p micro-batches × L/p layers = L layers' worth, for any p (Korthikanti §4.2.3).
    model = GPT3_175B
    s, h, a, layers, t = model.seq_len, model.hidden, model.heads, model.layers, 8
    for p in (1, 4, 8, 16):
        plan = ParallelPlan(tensor_parallel=t, pipeline_parallel=p, grad_accum_steps=64, sequence_parallel=True)
        assert memory_breakdown(model, plan, calibration=None).activations == pytest.approx(
            s * 1 * h * layers / t * (34 + 5 * a * s / h)
        )  # Eq. (5)
        selective = plan.replace(recompute="selective")
        assert memory_breakdown(model, selective, calibration=None).activations == pytest.approx(
            34 * s * h * layers / t
        )  # Eq. (6)
    interleaved = ParallelPlan(
        tensor_parallel=t,
        pipeline_parallel=8,
        grad_accum_steps=64,
        sequence_parallel=True,
        recompute="selective",
        schedule="interleaved",
        virtual_stages=2,
    )
    assert memory_breakdown(model, interleaved, calibration=None).activations == pytest.approx(
        34 * s * h * layers / t * (1 + 7 / (8 * 2))
    )


def test_in_flight_micro_batches():
    assert pipeline_in_flight_microbatches(8, 4) == 4  # fewer micro-batches than stages
    assert pipeline_in_flight_microbatches(8, 64, "gpipe") == 64


def test_model_states_split_over_tensor_and_pipeline_then_zero():
    plan = ParallelPlan(data_parallel=16, tensor_parallel=8, pipeline_parallel=8, zero_stage=1)
    mem = memory_breakdown(GPT3_175B, plan, calibration=None)
    psi = GPT3_175B.params / 64
    assert (mem.parameters, mem.gradients, mem.optimizer_state) == pytest.approx((2 * psi, 2 * psi, 12 * psi / 16))


def test_global_batch_examples():
    assert global_batch(8, 16, 64) == 8192  # the card
    assert global_batch(2, 4, 128) == 1024  # playbook: 4M tokens at seq 4096, mbs 2 on 128 GPUs → 4 steps
    assert global_batch(2, 1, 512) == 1024
    plan = ParallelPlan(data_parallel=4, tensor_parallel=8, pipeline_parallel=4, micro_batch=2, grad_accum_steps=8)
    assert plan.global_batch == 64 and plan.devices == 128  # t and p add devices, not examples


def test_pipeline_bubble():
    assert pipeline_bubble_fraction(4, 8) == pytest.approx(3 / 8)
    assert pipeline_bubble_fraction(8, 64, virtual_stages=4) == pytest.approx(7 / 256)
    assert pipeline_bubble_fraction(1, 1) == 0
    with pytest.raises(ValueError, match="multiple of stages"):
        pipeline_bubble_fraction(4, 6, virtual_stages=2)


def test_zero_communication_volumes_section7():
    # At one micro-batch: stage 0, 1, 2 move 2Ψ per device (× (d−1)/d for rings), stage 3 moves 3Ψ (1.5×).
    d = 64
    psi_bytes = 2 * GPT3_175B.params  # 16-bit elements
    volumes = [
        communication_volume_per_step(GPT3_175B, ParallelPlan(data_parallel=d, zero_stage=z))["data"] for z in range(4)
    ]
    ring = (d - 1) / d
    assert volumes == pytest.approx([2 * psi_bytes * ring] * 3 + [3 * psi_bytes * ring])


def test_tensor_parallel_volume_matches_narayanan():
    # 8bsh(t−1)/t elements per layer per device per micro-batch (§3.2), 2 bytes each; l_stage layers, m micro-batches.
    b, t, p, m = 2, 8, 4, 16
    plan = ParallelPlan(tensor_parallel=t, pipeline_parallel=p, micro_batch=b, grad_accum_steps=m)
    model = GPT3_175B
    per_layer = 8 * b * model.seq_len * model.hidden * (t - 1) / t * 2
    volume = communication_volume_per_step(model, plan)
    assert volume["tensor"] == pytest.approx(per_layer * model.layers / p * m)
    # Sequence parallelism: all-gather + reduce-scatter instead of all-reduce, the same bytes.
    assert communication_volume_per_step(model, plan.replace(sequence_parallel=True))["tensor"] == pytest.approx(
        volume["tensor"]
    )
    # ZeRO §8: full recomputation adds two more all-reduces per layer: 12·s·h·b instead of 8.
    full = communication_volume_per_step(model, plan.replace(recompute="full"))["tensor"]
    assert full == pytest.approx(volume["tensor"] * 12 / 8)


def test_pipeline_volume_is_bsh_each_way_per_micro_batch():
    b, m = 4, 32
    model = GPT3_175B
    plan = ParallelPlan(pipeline_parallel=8, micro_batch=b, grad_accum_steps=m)
    bsh_bytes = 2 * b * model.seq_len * model.hidden
    assert communication_volume_per_step(model, plan)["pipeline"] == pytest.approx(2 * bsh_bytes * m)
    # Narayanan §4.1 scatter/gather: with t = 8 each device sends bsh/t; interleaving v = 2 doubles the crossings.
    split = plan.replace(tensor_parallel=8, schedule="interleaved", virtual_stages=2)
    assert communication_volume_per_step(model, split)["pipeline"] == pytest.approx(2 * bsh_bytes / 8 * m * 2)


def test_transfers_list_names_what_crosses_each_boundary():
    plan = ParallelPlan(data_parallel=2, tensor_parallel=2, pipeline_parallel=2, zero_stage=3, grad_accum_steps=2)
    crossing = [(x.axis, x.op) for x in step_transfers(GPT3_175B, plan) if x.group_size > 1]
    assert crossing == [
        ("tensor", "all_reduce"),
        ("tensor", "all_reduce"),
        ("pipeline", "send_recv"),
        ("pipeline", "send_recv"),
        ("data", "all_gather"),
        ("data", "all_gather"),
        ("data", "reduce_scatter"),
    ]
    assert all(x.on_critical_path for x in step_transfers(GPT3_175B, plan) if x.axis != "data")


def test_one_device_communicates_nothing():
    volume = communication_volume_per_step(GPT3_175B, ParallelPlan(grad_accum_steps=8, recompute="full"))
    assert volume == {"data": 0.0, "tensor": 0.0, "pipeline": 0.0}


def test_model_requires_heads_to_divide_hidden():
    with pytest.raises(ValueError, match="heads"):
        TransformerModel("bad", 2, 100, 3, 10, 16)


def test_splits_evenly_is_the_divisibility_rule():
    # GPT-3 175B: 96 heads, 96 layers. t must divide 96; p·v must divide 96.
    t = np.arange(1, 97)
    assert list(t[splits_evenly(GPT3_175B, tensor_parallel=t)]) == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 96]
    assert splits_evenly(GPT3_175B, 8, 16, 6) and not splits_evenly(GPT3_175B, 8, 16, 4)  # 96 chunks; 64 ∤ 96
    with pytest.raises(ValueError, match="pipeline_parallel × virtual_stages must divide layers"):
        check_plan_for_model(
            GPT3_175B, ParallelPlan(pipeline_parallel=16, virtual_stages=4, schedule="interleaved", grad_accum_steps=16)
        )


# ---- architectures -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", list(parallelism.MODELS.values()), ids=lambda m: m.name)
def test_gpt_presets_count_parameters_as_narayanan_eq_2(model):
    # P = 12lh² + 13lh + (V + s)h (Narayanan et al. 2021 Eq. 2), exactly, from the architecture's parts.
    l, h, v, s = model.layers, model.hidden, model.vocab, model.seq_len
    assert model.params == 12 * l * h**2 + 13 * l * h + (v + s) * h
    assert model.params == pytest.approx(compute.transformer_params(l, h, v, s), rel=1e-15)


# Published parameter counts of Meta's releases (the safetensors totals of meta-llama/Llama-3.1-8B, -70B, -405B,
# Llama-3.2-1B and -3B, as their model cards print them).
LLAMA_PUBLISHED = {
    "Llama 3.2 1B": 1_235_814_400,
    "Llama 3.2 3B": 3_212_749_824,
    "Llama 3.1 8B": 8_030_261_248,
    "Llama 3.1 70B": 70_553_706_496,
    "Llama 3.1 405B": 405_853_388_800,
}


@pytest.mark.parametrize("name, published", LLAMA_PUBLISHED.items())
def test_llama_presets_have_the_published_parameter_count(name, published):
    assert parallelism.LLAMA_MODELS[name].params == published


def test_llama_layer_by_hand():
    # Llama 3.1 8B layer: W_Q, W_O 4096² each; W_K, W_V 4096 × (8 · 128) each; SwiGLU 3 × 4096 × 14336; two RMSNorm
    # weights of 4096. 33,554,432 + 8,388,608 + 176,160,768 + 8,192 = 218,112,000.
    assert parallelism.LLAMA3_8B.params_per_layer == 218_112_000
    # Untied: embedding and head 2 × 128,256 × 4096, plus the final norm 4096.
    assert parallelism.LLAMA3_8B.embedding_params == 2 * 128_256 * 4096 + 4096


@pytest.mark.parametrize(
    "model, script_estimate_b",
    [
        (parallelism.PLAYBOOK_1B, 1.34),
        (parallelism.PLAYBOOK_3B, 3.57),
        (parallelism.PLAYBOOK_8B, 8.86),
        (parallelism.PLAYBOOK_80B, 80.0),
    ],
)
def test_playbook_models_match_the_benchmark_scripts_estimates(model, script_estimate_b):
    # nanotron scripts/scaling_benchmarks.py prints 1.34B, 3.57B, 8.86B, "≈80B" for these shapes.
    assert round(model.params / 1e9, 2 if script_estimate_b < 10 else 0) == script_estimate_b


def test_gated_and_grouped_query_attention_change_the_counts_by_hand():
    # h = 64, a = 4 (head 16), kv = 2, f = 100, V = 10, s = 8, l = 1.
    base = dict(layers=1, hidden=64, heads=4, vocab=10, seq_len=8, ffn_hidden=100)
    llama = TransformerModel("t", **base, kv_heads=2, gated_mlp=True, tied_embeddings=False, style="llama")
    # 2·64² + 2·64·32 + 3·64·100 + 2·64 = 8192 + 4096 + 19200 + 128 = 31616; embeddings 2·10·64 + 64 = 1344.
    assert llama.params_per_layer == 31_616 and llama.params == 31_616 + 1_344
    gpt = TransformerModel("t", **base)
    # 2·64² + 2·64² + 2·64·100 + biases (64 + 128 + 64) + (100 + 64) + LayerNorms 4·64
    # = 8192 + 8192 + 12,800 + 256 + 164 + 256 = 29,860; embeddings 10·64 + positions 8·64 = 1152.
    assert gpt.params_per_layer == 29_860 and gpt.params == 29_860 + 1_152


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("kv_heads", 3, "kv_heads must divide heads"),
        ("kv_heads", 0, "kv_heads"),
        ("ffn_hidden", -1, "ffn_hidden"),
        ("style", "bert", "style"),
        ("gated_mlp", "yes", "gated_mlp"),
        ("tied_embeddings", None, "tied_embeddings"),
    ],
)
def test_architecture_fields_are_validated(field, value, message):
    with pytest.raises(ValueError, match=message):
        TransformerModel("bad", 2, 64, 4, 10, 16, **{field: value})


# ---- the calibrated memory model, term by term (issue 10 items 2 and 9) ------------------------------------------


def test_architecture_aware_activations_reduce_to_korthikanti_for_gpt():
    # GPT (f = 4h, multi-head, dropout): 34h + 5as per token per layer (Korthikanti et al. 2022 Eq. (1)), the
    # residual side 10h unsplit without sequence parallelism, everything split with it.
    m = parallelism.GPT3_175B
    h, a, s = m.hidden, m.heads, m.seq_len
    per = parallelism.activation_bytes_per_token_per_layer
    assert per(m, 8) == pytest.approx(10 * h + (24 * h + 5 * a * s) / 8)
    assert per(m, 8, True) == pytest.approx((34 * h + 5 * a * s) / 8)
    assert per(m, 8, True, "selective") == pytest.approx(34 * h / 8)
    assert per(m, 8, True, attention="flash") == pytest.approx((34 * h + 4 * a) / 8)
    assert per(m, 8, True, "full") == pytest.approx(2 * h / 8)


def test_gated_gqa_activations_term_by_term():
    # Llama 3.1 8B (h 4096, f 14336, 8 KV heads of 128 → k = 1024, 32 heads), t = 4 with sequence parallelism:
    # residual side 8h, attention Q 2h + K, V 4k + output 2h, gated MLP 8f, softmax 2as (standard) or 4a (flash).
    m = parallelism.LLAMA3_8B
    h, f, k, a, s = 4096, 14336, 1024, 32, 8192
    per = parallelism.activation_bytes_per_token_per_layer
    assert per(m, 4, True) == pytest.approx((8 * h + 4 * h + 4 * k + 8 * f + 2 * a * s) / 4)
    assert per(m, 4, True, attention="flash") == pytest.approx((8 * h + 4 * h + 4 * k + 8 * f + 4 * a) / 4)
    assert per(m, 4, False, attention="flash") == pytest.approx(8 * h + (4 * h + 4 * k + 8 * f + 4 * a) / 4)


def test_calibrated_memory_of_the_heaviest_stage_by_hand():
    # Playbook 8B (untied, 32 layers) on t = 2, p = 3 (uneven: 11 layers on the heaviest stage), d = 4, ZeRO-1,
    # b = 2, m = 8, FlashAttention with sequence parallelism, recipe 2 + 2 + 4 + 12 bytes per parameter.
    m = parallelism.PLAYBOOK_8B
    cal = parallelism.Calibration(framework_bytes=1e9)
    plan = parallelism.ParallelPlan(
        data_parallel=4,
        tensor_parallel=2,
        pipeline_parallel=3,
        zero_stage=1,
        micro_batch=2,
        grad_accum_steps=8,
        sequence_parallel=True,
        attention="flash",
    )
    mem = parallelism.memory_breakdown(m, plan, calibration=cal)
    h, f, v, s, a = 4096, 14336, 131072, 4096, 32
    layer_params = 4 * h * h + 3 * h * f + 2 * h
    first_params = (11 * layer_params + v * h) / 2  # the input embedding on the first stage
    per_token = (8 * h + 4 * h + 4 * h + 8 * f + 4 * a) / 2  # 32 KV heads: k = h
    activations = 2 * s * per_token * 11 * 3  # 1F1B: min(p, m) = 3 micro-batches in flight on the first stage
    assert mem.parameters == pytest.approx(2 * first_params)
    assert mem.gradients == pytest.approx(6 * first_params)
    assert mem.optimizer_state == pytest.approx(12 * first_params / 4)
    assert mem.activations == pytest.approx(activations)
    assert mem.logits == 0 and mem.framework == 1e9
    # The last stage: 11 layers, the output layer and final norm, 1 micro-batch, and the logits 2·s·V/t × 10 B.
    last_params = (11 * layer_params + v * h + h) / 2
    last = (2 + 6 + 12 / 4) * last_params + 2 * s * per_token * 11 + 2 * s * v / 2 * 10
    assert mem.total == pytest.approx((2 + 6 + 12 / 4) * first_params + activations + 1e9)
    assert mem.total - 1e9 > last  # the first stage is the heavier one here
    single = parallelism.memory_breakdown(m, plan.replace(pipeline_parallel=1, grad_accum_steps=24), calibration=cal)
    assert single.logits == pytest.approx(2 * s * v / 2 * 10)


def test_calibrated_plans_the_framework_cannot_run_are_refused():
    cal = parallelism.Calibration()
    with pytest.raises(ValueError, match="zero_stage=2 with pipeline_parallel=2 is not run by generic"):
        parallelism.memory_breakdown(
            parallelism.PLAYBOOK_1B, parallelism.ParallelPlan(pipeline_parallel=2, zero_stage=2), calibration=cal
        )
    with pytest.raises(ValueError, match="attention"):
        parallelism.ParallelPlan(attention="paged")
    with pytest.raises(ValueError, match="precision"):
        parallelism.Framework("fp8 everywhere", precision="fp8")
    with pytest.raises(ValueError, match="tensor_parallel_overlap"):
        parallelism.Framework("overlapping", tensor_parallel_overlap="some")
    with pytest.raises(ValueError, match="framework must be a parallelism.Framework"):
        parallelism.Calibration(framework="megatron")


def test_default_calibration_is_the_reference_and_carried_over_elsewhere():
    from course_lib import budget, validation

    # The reference (Megatron-Core on DGX H100 + NDR InfiniBand) on H100 nodes with InfiniBand; the Playbook's
    # calibration is its own cluster's case study, passed explicitly (validation replays its runs with it).
    reference = parallelism.REFERENCE_CALIBRATION
    assert parallelism.default_calibration(replace(hardware.DGX_H100, nodes=8)) is reference
    assert parallelism.default_calibration(hardware.NEBIUS_H100_IB) is reference
    assert reference.framework is parallelism.MEGATRON_CORE
    assert reference.intra_node_link is parallelism.PLAYBOOK_NVLINK  # the HGX H100 board's NVLink, measured
    assert reference.inter_node_link is parallelism.REFERENCE_INFINIBAND
    assert validation.PLAYBOOK_CALIBRATION is parallelism.PLAYBOOK_CALIBRATION
    assert parallelism.PLAYBOOK_CALIBRATION.inter_node_link is parallelism.PLAYBOOK_EFA
    assert parallelism.PLAYBOOK_CALIBRATION.framework is parallelism.NANOTRON
    # Carried over elsewhere (the Playbook's EFA cluster included): the fitted constants and the framework; not the
    # links, nor the band.
    for cluster in (hardware.SELENE_3072, replace(validation.PLAYBOOK_CLUSTER_NODE, nodes=4), hardware.DGX_H200):
        carried = parallelism.default_calibration(cluster)
        assert carried.intra_node_link is None and carried.inter_node_link is None and carried.step_time_band == ()
        kept = ("gemm_efficiency", "gemm_half_flops", "layer_overhead_s", "framework_bytes", "framework")
        assert all(getattr(carried, name) == getattr(reference, name) for name in kept)
        assert budget.calibrated_cluster(cluster, carried).inter_node_link is cluster.inter_node_link
    # "default" is that calibration; None the ideal model.
    selene = parallelism.default_calibration(hardware.SELENE_3072)
    plan = ParallelPlan(data_parallel=8, tensor_parallel=8, pipeline_parallel=8, micro_batch=1, grad_accum_steps=64)
    by_default = budget.step_time(GPT3_175B, plan, hardware.SELENE_3072)
    assert by_default.total_s == budget.step_time(GPT3_175B, plan, hardware.SELENE_3072, calibration=selene).total_s
    ideal = budget.step_time(GPT3_175B, plan, hardware.SELENE_3072, calibration=None)
    assert ideal.total_s != by_default.total_s
    memory = parallelism.memory_breakdown(GPT3_175B, plan)
    assert memory.framework == reference.framework_bytes
    assert parallelism.memory_breakdown(GPT3_175B, plan, calibration=None).framework == 0


def test_stored_activations_add_up_to_korthikantis_34_and_5():
    # Korthikanti et al. 2022 §4.1: attention 11sbh + 5as²b, MLP 19sbh, LayerNorms 4sbh; 10sbh not split by t (Eq. 2)
    rows = parallelism.STORED_ACTIVATIONS
    by_block = {}
    for row in rows:
        by_block[row.block] = by_block.get(row.block, 0) + row.sbh_bytes
    assert by_block == {"attention": 11, "MLP": 19, "LayerNorm": 4}
    assert sum(r.as2b_bytes for r in rows) == 5
    assert sum(r.sbh_bytes for r in rows if not r.split_by_tensor) == 10
    # the attention scores live between the column- and row-parallel GEMMs: split by t
    assert all(r.split_by_tensor for r in rows if r.as2b_bytes)


@pytest.mark.parametrize("t, sp", [(1, False), (8, False), (8, True), (4, True)])
def test_stored_activation_bytes_sum_to_table2(t, sp):
    s, h, a = GPT3_175B.seq_len, GPT3_175B.hidden, GPT3_175B.heads
    rows = parallelism.stored_activation_bytes(s, 2, h, a, tensor_parallel=t, sequence_parallel=sp)
    expected = _table2(s, 2, h, a, t)[("none", sp, t)]
    assert sum(rows) == pytest.approx(expected, rel=1e-12)
    # hand count: the two LayerNorm inputs, 4 bytes per element of the 2 × 2048 × 12288 tensor, split only with SP
    assert rows[-1] == pytest.approx(4 * s * 2 * h / (t if sp else 1))
    with pytest.raises(ValueError, match="tensor_parallel"):
        parallelism.stored_activation_bytes(s, 1, h, a, tensor_parallel=5)


def test_global_batch_report_counts_examples_and_devices():
    # The Ultra-Scale Playbook's 4M-token batch: b = 2, 4 accumulation steps, d = 128 at 4096 tokens; with t = 8 and
    # p = 4 each replica is 32 devices sharing the same 8 examples.
    report = parallelism.global_batch_report(2, 4, 128, seq_len=4096, tensor_parallel=8, pipeline_parallel=4)
    assert (report.global_batch, report.tokens_per_step) == (1024, 4_194_304)
    assert (report.devices, report.devices_per_replica, report.examples_per_replica_per_step) == (4096, 32, 8)


def test_memory_budget_report_is_zero_section_5_under_each_stage():
    # Per device Ψ = P/(t·p) parameters; ZeRO §5 with K = 12 over N_d = 8: 16Ψ, 4Ψ + 12Ψ/8, 2Ψ + 14Ψ/8, 16Ψ/8.
    plan = ParallelPlan(data_parallel=8, tensor_parallel=8, pipeline_parallel=8, zero_stage=2, grad_accum_steps=64)
    report = parallelism.memory_budget_report(GPT3_175B, plan, hardware.A100)
    psi = GPT3_175B.params / 64
    states = [16 * psi, 4 * psi + 12 * psi / 8, 2 * psi + 14 * psi / 8, 16 * psi / 8]
    assert [b.model_states for b in report.by_zero_stage] == pytest.approx(states, rel=1e-12)
    assert len({b.activations for b in report.by_zero_stage}) == 1 and report.memory is report.by_zero_stage[2]
    assert report.in_flight_microbatches == 8.0  # 1F1B: min(p, m)
    assert report.headroom_bytes == pytest.approx(80e9 - report.memory.total) and report.fits
    for name, bad in (("model", "GPT-3 175B"), ("plan", None), ("accelerator", hardware.DGX_A100)):
        arguments = {"model": GPT3_175B, "plan": plan, "accelerator": hardware.A100, name: bad}
        with pytest.raises(ValueError, match=f"^{name} must be a"):
            parallelism.memory_budget_report(**arguments)


def test_memory_budget_report_as_a_framework_runs_it_by_hand():
    # GPT-2 1.5B on one replica group of d = 8 (t = p = 1), ZeRO-1, b = 1: Ψ = l(12h² + 13h) + Vh + sh (tied, learned
    # positions); nanotron's 18 B recipe 2Ψ + 4Ψ + 12Ψ/8, DeepSpeed's 16 B 2Ψ + 2Ψ + 12Ψ/8; activations s·l(34h + 5as)
    # (Korthikanti Eq. (1), one micro-batch in flight); logits s·V × 10 B; 2.86 GB of fitted framework memory.
    l, h, a, vocab, s = 48, 1600, 25, 50257, 1024
    psi = l * (12 * h**2 + 13 * h) + vocab * h + s * h
    activations = s * l * (34 * h + 5 * a * s)
    logits, framework = s * vocab * 10, 2861158144
    plan = ParallelPlan(data_parallel=8, zero_stage=1, grad_accum_steps=16)
    for name, grads in (("nanotron", 4), ("deepspeed", 2)):
        report = parallelism.memory_budget_report(parallelism.GPT2_1_5B, plan, hardware.H100, framework=name)
        memory = report.memory
        supported = (True, True, False, False) if name == "nanotron" else (True,) * 4  # nanotron: ZeRO-1 only
        assert memory is not None and report.runs and report.supported == supported
        assert report.reason == (
            "" if name == "deepspeed" else parallelism.NANOTRON.refusal(plan.replace(zero_stage=2))
        )
        assert float(memory.model_states) == pytest.approx((2 + grads + 12 / 8) * psi, rel=1e-12)
        assert (float(memory.activations), float(memory.logits)) == pytest.approx((activations, logits), rel=1e-12)
        assert float(memory.framework) == framework
        total = (2 + grads + 12 / 8) * psi + activations + logits + framework
        assert float(memory.total) == pytest.approx(total, rel=1e-12)
        assert report.headroom_bytes == pytest.approx(80e9 - total) and report.framework is parallelism.FRAMEWORKS[name]
    assert psi == parallelism.GPT2_1_5B.params


def test_memory_budget_report_leaves_a_stage_the_framework_does_not_run_empty():
    plan = ParallelPlan(data_parallel=8, tensor_parallel=8, pipeline_parallel=8, zero_stage=2, grad_accum_steps=64)
    report = parallelism.memory_budget_report(GPT3_175B, plan, hardware.A100, 0.384, framework=parallelism.NANOTRON)
    assert report.supported == (True, True, False, False) and report.by_zero_stage[2:] == (None, None)
    assert report.memory is None and not report.runs and report.headroom_bytes is None
    assert (report.fits, report.fits_with_margin) == (False, False)
    assert report.reason.startswith("zero_stage=2 is not run by nanotron: it runs ZeRO-0 and ZeRO-1 only (")
    ran = report.by_zero_stage[1]
    assert ran is not None
    assert ran.total == parallelism.memory_breakdown(GPT3_175B, plan.replace(zero_stage=1), framework="nanotron").total
    # FSDP2 as torchtitan runs it combines every stage with a pipeline; FSDP2 alone runs no pipeline at all.
    assert parallelism.memory_budget_report(GPT3_175B, plan, hardware.A100, framework="fsdp2-pipeline").runs
    fsdp2 = parallelism.memory_budget_report(GPT3_175B, plan, hardware.A100, framework="fsdp2")
    assert fsdp2.supported == (False,) * 4 and fsdp2.reason.startswith(
        "pipeline_parallel=8 is not run by PyTorch FSDP2"
    )
    # Without a pipeline nanotron still has ZeRO-1 only (README.md:172, :182); Megatron-LM and DeepSpeed every stage.
    flat = plan.replace(pipeline_parallel=1)
    for name, supported in (
        ("nanotron", (True, True, False, False)),
        ("megatron", (True,) * 4),
        ("deepspeed", (True,) * 4),
    ):
        assert parallelism.memory_budget_report(GPT3_175B, flat, hardware.A100, framework=name).supported == supported
    import dataclasses

    with pytest.raises(ValueError, match="None exactly for the stages the framework does not run"):
        dataclasses.replace(report, by_zero_stage=(ran, ran, ran, ran))
    with pytest.raises(ValueError, match="None exactly"):
        dataclasses.replace(report, framework=None)
    with pytest.raises(ValueError, match="framework must be a parallelism.Framework or one of 'megatron'"):
        parallelism.memory_budget_report(GPT3_175B, plan, hardware.A100, framework="jax")
    with pytest.raises(ValueError, match="framework must be None"):
        dataclasses.replace(report, framework="nanotron")


def test_pipeline_schedule_report_sets_the_formulas_beside_the_simulation():
    # Narayanan et al. 2021: (p − 1)/m, GPipe holds m; interleaving divides the bubble by v and holds p + (p − 1)/v.
    gpipe = parallelism.pipeline_schedule_report(8, 32, "gpipe")
    assert (gpipe.bubble_fraction, gpipe.formula_bubble_fraction) == (7 / 32, 7 / 32)
    assert (gpipe.peak_in_flight, gpipe.formula_peak_in_flight) == (32.0, 32.0)
    assert gpipe.total_s == (32 + 7) * 3.0 and gpipe.bubble_share_of_step == 7 / 39
    interleaved = parallelism.pipeline_schedule_report(4, 8, "interleaved", virtual_stages=2)
    assert interleaved.bubble_fraction == pytest.approx(3 / 16) and interleaved.peak_in_flight == 5.5
    assert interleaved.bubble_matches and interleaved.peak_in_flight_matches
    assert len(interleaved.timeline.ops) == 2 * 4 * 8 * 2


def test_pipeline_schedule_report_of_the_zero_bubble_schedules():
    # Qi et al. 2024 Table 2 with T_F = 1, T_B = 1.5, T_W = 0.5 (t_bwd = 2): ZB-H1 (p − 1)(T_F + T_B − T_W) = 3 · 2,
    # ZB-H2 without the optimizer step's synchronisation (p − 1)(T_F + T_B − 2T_W) = 3 · 1.5; with it the same, as
    # X = 1.5 ≥ T_F.
    h1 = parallelism.pipeline_schedule_report(4, 8, "zb-h1", backward_weight_time_s=0.5)
    assert (h1.bubble_s, h1.bubble_fraction, h1.formula_bubble_fraction) == (6.0, 0.25, 0.25)
    assert h1.unsynchronised_bubble_fraction == h1.formula_unsynchronised_bubble_fraction == 0.25
    assert (h1.peak_in_flight, h1.formula_peak_in_flight) == (4.0, 4.0) and h1.peak_in_flight_matches
    h2 = parallelism.pipeline_schedule_report(4, 8, "zb-h2", backward_weight_time_s=0.5)
    assert (h2.bubble_s, h2.unsynchronised_bubble_fraction, h2.formula_unsynchronised_bubble_fraction) == (
        4.5,
        4.5 / 24,
        4.5 / 24,
    )
    assert h2.bubble_matches and (h2.peak_in_flight, h2.formula_peak_in_flight) == (7.0, 7.0)
    # T_F = T_B = T_W: ZB-H2's stages never idle, but the step still waits (p − 1)·T_F for the last stage.
    equal = parallelism.pipeline_schedule_report(4, 8, "zb-h2")
    assert (equal.bubble_fraction, equal.unsynchronised_bubble_fraction) == (3 / 24, 0.0) and equal.bubble_matches
    assert equal.schedule == "zb-h2" and len(equal.timeline.ops) == 3 * 4 * 8


def test_pipeline_bubble_time_takes_arrays():
    # The formula for many plans at once, as the plan search calls the others: 1F1B, then ZB-H1 and ZB-H2 for
    # p = 2, 4, 8 (m = 16, T_F = T_B = T_W = 1 s).
    stages = np.array([2, 4, 8])
    assert parallelism.pipeline_bubble_time(stages, 16).tolist() == [3.0, 9.0, 21.0]
    assert parallelism.pipeline_bubble_time(stages, 16, "zb-h1").tolist() == [1.0, 3.0, 7.0]
    assert parallelism.pipeline_bubble_time(stages, 16, "zb-h2", optimizer_sync=False).tolist() == [0.0, 0.0, 0.0]
    # t_bwd = 2: T_B = 1.75, 1.5, 0.5; 3·(T_F + T_B − T_W), and with T_W > T_F the last stage's late start, 3·T_F.
    t_w = np.array([0.25, 0.5, 1.5])
    assert parallelism.pipeline_bubble_time(4, 16, "zb-h1", backward_weight_time_s=t_w).tolist() == [7.5, 6.0, 3.0]
    assert pipeline_schedule(4, 16, "zb-h1", backward_weight_time_s=1.5).bubble_s == 3.0
    with pytest.raises(ValueError, match="microbatches"):
        parallelism.pipeline_bubble_time(stages, 8, "zb-h2")  # p = 8 needs 15
    with pytest.raises(ValueError, match="virtual_stages must be 1 unless"):
        parallelism.pipeline_bubble_time(4, 8, "zb-h1", virtual_stages=2)


def test_zero_bubble_plans_in_the_ideal_step_model():
    # Qi et al. 2024 §2: ZB-H1 removes 2T_W per bubble slot; ZB-H2, without the optimizer step's synchronisation
    # (§4), leaves (p − 1)(T_F + T_B − 2T_W), here only the attention core's share (its backward is all in B), 4s²h of
    # the 24sh² + 4s²h FLOPs of a layer: for GPT-3 175B at s = 2048, 2.7 % of the forward, three times over.
    from course_lib import budget, hardware

    model, cluster = parallelism.GPT3_175B, hardware.SELENE_3072
    plan = ParallelPlan(data_parallel=8, pipeline_parallel=8, grad_accum_steps=64)  # t = 1: little communication
    steps = {
        (schedule, sync): budget.step_time(
            model, plan.replace(schedule=schedule, optimizer_sync=sync), cluster, calibration=None
        )
        for schedule in ("1f1b", "zb-h1", "zb-h2")
        for sync in (True, False)
    }
    one_f_one_b = steps[("1f1b", True)].bubble_s
    assert steps[("1f1b", False)].bubble_s == one_f_one_b  # the synchronisation changes nothing for 1F1B
    h1 = steps[("zb-h1", True)].bubble_s
    assert steps[("zb-h1", False)].bubble_s == h1
    assert 0.33 < h1 / one_f_one_b < 0.36  # about a third: T_F ≈ T_B ≈ T_W
    h2 = steps[("zb-h2", False)].bubble_s
    h, s = model.hidden, model.seq_len
    core = 4 * s * h / (24 * h * h + 4 * s * h + 2 * model.vocab * h / model.layers)
    # X = T_F + T_B − 2T_W per slot: the slot's pipeline sends and the core's share of its compute.
    slot, sends = one_f_one_b / 7, steps[("1f1b", True)].exposed_s["pipeline"] / 64
    assert h2 == pytest.approx(7 * (sends + (slot - sends) * core), rel=1e-9) and h2 / one_f_one_b < 0.03
    assert steps[("zb-h2", True)].bubble_s == pytest.approx(one_f_one_b / 3, rel=0.01)  # synchronised: (p − 1)T_F
    assert ParallelPlan(pipeline_parallel=8, grad_accum_steps=15, schedule="zb-h2").global_batch == 15
