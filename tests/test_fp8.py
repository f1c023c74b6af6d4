"""FP8 recipes (``parallelism.fp8``): compute at the FP8 peak, the bytes per parameter, FP8 activations, FP8
parameter gathers and expert dispatch, each against a hand calculation; and bf16 unchanged (FP8 is opt-in)."""

import math
from dataclasses import replace

import pytest

from course_lib.budget import step_time
from course_lib.budget.placement import group_collective_time
from course_lib.hardware import DGX_A100, DGX_H100, H100
from course_lib.parallelism import (
    FP8_RECIPES,
    FRAMEWORKS,
    LLAMA3_8B,
    MEGATRON_CORE,
    MIXTRAL_8X7B,
    PRECISION_RECIPES,
    TE_FP8,
    TE_FP8_PARAM_GATHER,
    Fp8Recipe,
    ParallelPlan,
    calibrated_cluster,
    calibrated_memory_breakdown,
    communication_volume_per_step,
    default_calibration,
    resolve_calibration,
)

# Llama 3 8B on one DGX H100: d = 8, the distributed optimizer (ZeRO-1), FlashAttention, b = 1, m = 16.
PLAN = ParallelPlan(data_parallel=8, micro_batch=1, grad_accum_steps=16, attention="flash", zero_stage=1)
TE = replace(MEGATRON_CORE, fp8=TE_FP8)
TE_PG = replace(MEGATRON_CORE, fp8=TE_FP8_PARAM_GATHER)
L, H, F, S, V = 32, 4096, 14336, 8192, 128256
LINEAR_PER_LAYER = 2 * H * H + 2 * H * 1024 + 3 * H * F  # W_Q, W_O, W_K, W_V (8 KV heads × 128), gate, up, down


def _memory(framework, plan=PLAN):
    return calibrated_memory_breakdown(LLAMA3_8B, plan, resolve_calibration("default", DGX_H100, framework))


def test_presets_have_no_fp8_and_bytes_per_parameter():
    assert all(framework.fp8 is None for framework in FRAMEWORKS.values())
    # Per linear-layer weight, Megatron's recipe (bf16 parameter, fp32 main gradient, Adam with fp32 master weights)
    # plus the FP8 copies: 2 + 4 + 12 + 2 (FP8 weight and transpose) = 20 B; with --fp8-param-gather the FP8
    # parameter and its transpose (1 + 1) take the bf16 parameter's 2 B: 18 B, as in bf16.
    assert sum(PRECISION_RECIPES[MEGATRON_CORE.precision]) + TE_FP8.weight_copy_bytes == 20
    assert sum(PRECISION_RECIPES[MEGATRON_CORE.precision]) + TE_FP8_PARAM_GATHER.weight_copy_bytes == 18
    gathers = (TE_FP8.gather_bytes, TE_FP8_PARAM_GATHER.gather_bytes, FP8_RECIPES["torchao-fsdp"].gather_bytes)
    assert gathers == (2, 1, 1)


def test_memory_by_hand():
    bf16, te, te_pg = _memory(MEGATRON_CORE), _memory(TE), _memory(TE_PG)
    # ZeRO-1 keeps parameters whole: TE adds 2 B per linear weight, 2 × 32 × 218,103,808 = 13.96 GB.
    assert LINEAR_PER_LAYER == LLAMA3_8B.matmul_weights_per_layer
    assert te.parameters - bf16.parameters == pytest.approx(2 * L * LINEAR_PER_LAYER, rel=1e-12)
    assert te_pg.parameters == pytest.approx(bf16.parameters, rel=1e-12)
    assert (te.gradients, te.optimizer_state) == (bf16.gradients, bf16.optimizer_state)
    # Saved inputs of the linear layers in 1 byte: attention and MLP inputs, W_O's and the down projection's inputs,
    # h + h + h + f per token and layer, over 32 layers and b·s = 8192 tokens (p = 1: one micro-batch in flight).
    assert bf16.activations - te.activations == pytest.approx(L * S * (3 * H + F), rel=1e-12)
    assert float(te.activations) == pytest.approx(float(te_pg.activations))


def test_step_time_by_hand():
    calibration = default_calibration(DGX_H100)
    bf16 = step_time(LLAMA3_8B, PLAN, DGX_H100, framework=MEGATRON_CORE)
    fp8 = step_time(LLAMA3_8B, PLAN, DGX_H100, framework=TE)
    # One layer's forward per token: 2 FLOPs per linear weight + 4sh (QKᵀ and ·V); the output layer 2Vh.
    linear, core, head = S * 2.0 * LINEAR_PER_LAYER, S * 4.0 * S * H, S * 2.0 * V * H
    x = linear + core
    rate = 989e12 * calibration.gemm_efficiency * x / (x + calibration.gemm_half_flops)
    overhead = L * calibration.layer_overhead_s
    bf16_mb = 3 * (L * x + head) / rate + overhead  # forward + backward (2×), no recomputation
    fp8_mb = 3 * (L * (linear * 989 / 1979 + core) + head) / rate + overhead  # linear GEMMs at 1979 TFLOP/s
    assert float(bf16.compute_s) == pytest.approx(16 * bf16_mb, rel=1e-9)
    assert float(fp8.compute_s) == pytest.approx(16 * fp8_mb, rel=1e-9)
    assert float(fp8.compute_s) / float(bf16.compute_s) == pytest.approx(0.659, abs=0.001)  # the reference's constants
    # MFU still divides by the bf16 peak: FP8 shows as a higher MFU.
    assert float(fp8.mfu) / float(bf16.mfu) == pytest.approx(float(bf16.total_s) / float(fp8.total_s))


def test_fp8_without_an_fp8_peak_names_the_field_and_the_accelerators():
    with pytest.raises(
        ValueError,
        match=r"framework\.fp8 needs an accelerator with an FP8 peak \(H100 SXM 80GB, "
        r"H200 SXM 141GB, B200\), got A100 SXM 80GB",
    ):
        step_time(LLAMA3_8B, PLAN, DGX_A100, framework=TE)
    assert H100.peak("fp8") == 1979e12


def test_bad_recipes():
    with pytest.raises(ValueError, match=r"fp8 must be None or a parallelism.Fp8Recipe \(FP8_RECIPES: 'te', "):
        replace(MEGATRON_CORE, fp8="te")  # type: ignore[arg-type]  (the recipe, not its key)
    with pytest.raises(ValueError, match="gather_bytes must be 1"):
        Fp8Recipe("x", gather_bytes=4)
    with pytest.raises(ValueError, match="weight_copy_bytes"):
        Fp8Recipe("x", weight_copy_bytes=-1)


def test_fp8_parameter_gathers_by_hand():
    # ZeRO-3, m = 1: the parameters are all-gathered for the forward and for the backward, (d − 1)/d of the payload
    # sent by each device; FP8 gathers move 1 byte instead of 2 for each of the 32 × 218,103,808 linear weights.
    plan = ParallelPlan(data_parallel=8, zero_stage=3)
    bf16 = communication_volume_per_step(LLAMA3_8B, plan)
    fp8 = communication_volume_per_step(LLAMA3_8B, plan, TE_FP8_PARAM_GATHER)
    assert bf16["data"] - fp8["data"] == pytest.approx(2 * 7 / 8 * L * LINEAR_PER_LAYER, rel=1e-12)
    assert communication_volume_per_step(LLAMA3_8B, plan, TE_FP8) == bf16  # TE alone gathers bf16
    # The calibrated model (ZeRO-1, m = 1, gathers not prefetched, so exposed whole): the distributed optimizer's
    # all-gather after the step, in 160 MB buckets, moves 1 byte instead of 2 for each linear weight.
    plan = ParallelPlan(data_parallel=8, grad_accum_steps=1, zero_stage=1)
    calibration = resolve_calibration("default", DGX_H100, MEGATRON_CORE)
    cluster = calibrated_cluster(DGX_H100, calibration)
    params = L * LLAMA3_8B.params_per_layer + V * H

    def gather_s(payload):
        buckets = math.ceil(payload / 160e6)
        return buckets * group_collective_time("all_gather", cluster, 8, 1, payload / buckets)

    exposed = [
        step_time(
            LLAMA3_8B, plan, DGX_H100, framework=replace(MEGATRON_CORE, fp8=fp8, prefetch_parameter_gathers=())
        ).exposed_s["data"]
        for fp8 in (TE_FP8, TE_FP8_PARAM_GATHER)
    ]
    saved = gather_s(2 * params) - gather_s(2 * params - L * LINEAR_PER_LAYER)
    assert float(exposed[0] - exposed[1]) == pytest.approx(saved, rel=1e-9)
    assert saved > 0


def test_fp8_expert_dispatch():
    # DeepSeek-V3's FP8 dispatch: the dispatch forward and the combine's gradient backward in 1 byte, the combine
    # forward and the dispatch's gradient in bf16: (1 + 2 + 2 + 1) / (2 + 2 + 2 + 2) = 3/4 of the bytes.
    plan = ParallelPlan(data_parallel=8, expert_parallel=8)
    bf16 = communication_volume_per_step(MIXTRAL_8X7B, plan)["expert"]
    fp8 = communication_volume_per_step(MIXTRAL_8X7B, plan, replace(TE_FP8, fp8_dispatch=True))["expert"]
    assert fp8 / bf16 == pytest.approx(0.75)
    assert communication_volume_per_step(MIXTRAL_8X7B, plan, TE_FP8)["expert"] == bf16  # off by default
    # The calibrated model: per MoE layer and pass, one all-to-all of b·s·k·h·2 bytes and one of half that, against
    # two of the full payload (e = 8 ranks at stride t = 1 inside the node).
    run = replace(plan, micro_batch=1, grad_accum_steps=4, attention="flash", recompute="full", zero_stage=1)
    cluster = calibrated_cluster(DGX_H100, resolve_calibration("default", DGX_H100, MEGATRON_CORE))
    payload = 2.0 * MIXTRAL_8X7B.seq_len * 2 * 4096
    full, half = (group_collective_time("all_to_all", cluster, 8, 1, x) for x in (payload, payload / 2))
    with_dispatch = replace(MEGATRON_CORE, fp8=replace(TE_FP8, fp8_dispatch=True))
    slow = step_time(MIXTRAL_8X7B, run, DGX_H100, framework=TE).exposed_s["expert"]
    fast = step_time(MIXTRAL_8X7B, run, DGX_H100, framework=with_dispatch).exposed_s["expert"]
    assert float(slow) == pytest.approx(4 * 32 * 2 * 3 * full, rel=1e-9)  # m · layers · 2 · (2 forward + 1 backward)
    assert float(fast) == pytest.approx(4 * 32 * 3 * (full + half), rel=1e-9)


def test_fp8_sequence_parallel_gathers_by_hand():
    """Transformer Engine quantises before the sequence-parallel all-gathers (NVIDIA/TransformerEngine@v2.18
    module/layernorm_linear.py:279-300 forward, module/base.py:1655-1684 backward): each all-gather moves 1 byte per
    element, each reduce-scatter still 2. Llama 3 8B, t = 8, one micro-batch of 8192 tokens: per layer 2 all-gathers
    and 2 reduce-scatters each way of the b·s·h activation, (t − 1)/t of each sent."""
    plan = ParallelPlan(tensor_parallel=8, sequence_parallel=True, attention="flash")
    bf16 = communication_volume_per_step(LLAMA3_8B, plan)["tensor"]
    fp8 = communication_volume_per_step(LLAMA3_8B, plan, TE_FP8)["tensor"]
    activation = 2 * S * H  # 67.1 MB
    assert bf16 == pytest.approx(L * 8 * activation * 7 / 8, rel=1e-12)  # 4 all-gathers + 4 reduce-scatters
    assert bf16 - fp8 == pytest.approx(L * 4 * activation / 2 * 7 / 8, rel=1e-12)  # the 4 all-gathers halve
    assert fp8 / bf16 == pytest.approx(0.75)
    assert communication_volume_per_step(LLAMA3_8B, plan.replace(sequence_parallel=False), TE_FP8)["tensor"] == (
        pytest.approx(communication_volume_per_step(LLAMA3_8B, plan.replace(sequence_parallel=False))["tensor"])
    )  # all-reduces of GEMM outputs: bf16 either way
    # The calibrated step: per layer the tensor-parallel call is an all-gather of half the bytes plus a reduce-scatter.
    run = plan.replace(grad_accum_steps=2)
    cluster = calibrated_cluster(DGX_H100, resolve_calibration("default", DGX_H100, MEGATRON_CORE))
    exposed = {
        name: float(step_time(LLAMA3_8B, run, DGX_H100, framework=replace(framework, tensor_parallel_overlap="none"))
                    .exposed_s["tensor"])
        for name, framework in (("bf16", MEGATRON_CORE), ("fp8", TE))
    }  # fmt: skip

    def gather(payload):
        return group_collective_time("all_gather", cluster, 8, 1, payload)

    saved = 2 * L * 4 * (gather(activation) - gather(activation / 2))  # m · layers · 4 all-gathers, none hidden
    assert exposed["bf16"] - exposed["fp8"] == pytest.approx(saved, rel=1e-9)


def test_the_router_stays_out_of_fp8():
    """Megatron-Core computes the router's logits with router_gating_linear, a bf16 matmul outside Transformer
    Engine's FP8 modules (NVIDIA/Megatron-LM@core_v0.19.0 megatron/core/transformer/moe/router.py:87-108): its 2hE
    FLOPs per token stay at the bf16 peak, and it has no FP8 weight copy."""
    from course_lib.parallelism import fp8_linear_weights_per_layer

    experts_h = 8 * 4096  # Mixtral's router: h × E
    assert MIXTRAL_8X7B.router_weights_per_layer == experts_h
    assert MIXTRAL_8X7B.stored_matmul_weights_per_layer - fp8_linear_weights_per_layer(MIXTRAL_8X7B) == experts_h
    plan = ParallelPlan(data_parallel=8, expert_parallel=8, attention="flash", recompute="full", zero_stage=1)
    calibration = resolve_calibration("default", DGX_H100, TE)
    bf16, fp8 = (
        calibrated_memory_breakdown(MIXTRAL_8X7B, plan, resolve_calibration("default", DGX_H100, framework))
        for framework in (MEGATRON_CORE, TE)
    )
    # FP8 copies (2 B) of every linear weight a GPU holds but the router: attention and one expert of each layer
    attention = 2 * 4096 * 4096 + 2 * 4096 * 1024
    assert fp8.parameters - bf16.parameters == pytest.approx(2 * 32 * (attention + 3 * 4096 * 14336), rel=1e-12)
    # Compute: x = the layer's forward FLOPs, the linear part at the FP8 peak, the router and the core at bf16's.
    tokens = MIXTRAL_8X7B.seq_len
    linear = tokens * 2.0 * (MIXTRAL_8X7B.matmul_weights_per_layer - experts_h)
    router, core = tokens * 2.0 * experts_h, tokens * 4.0 * tokens * 4096
    head = tokens * 2.0 * 32000 * 4096
    x = linear + router + core
    rate = 989e12 * calibration.gemm_efficiency * x / (x + calibration.gemm_half_flops)
    layer = linear * 989 / 1979 + router + core
    compute_mb = (3 * (32 * layer + head) + 32 * layer) / rate + 32 * calibration.layer_overhead_s  # full recompute
    assert float(step_time(MIXTRAL_8X7B, plan, DGX_H100, framework=TE).compute_s) == pytest.approx(compute_mb, rel=1e-9)
