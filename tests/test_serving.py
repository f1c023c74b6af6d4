"""course_lib.serving against published figures and hand calculations.

Published sources:
- SB7: the JAX scaling book (Austin et al. 2025), "All About Transformer Inference", inference.md at commit
  0819a7d8c55ddc113f5cba0285a5f97380cac1e3 of github.com/jax-ml/scaling-book.
- SB8: the same book, "Serving LLaMA 3-70B on TPUs", applied-inference.md at the same commit.
- The configuration of Llama 3.1 70B (huggingface.co/meta-llama/Llama-3.1-70B, config.json: num_hidden_layers 80,
  num_key_value_heads 8, num_attention_heads 64, hidden_size 8192, so head_dim 128).
"""

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from course_lib import budget, serving
from course_lib.hardware import DGX_H100, H100, ICI_V5E, INFINIBAND_NDR_8X, NVLINK4, TPU_V5E, Cluster
from course_lib.parallelism import GPT3_175B, LLAMA3_8B, LLAMA3_70B, ParallelPlan, TransformerModel

# Four DGX H100 nodes: NVLink 4 inside (450 GB/s one-way per GPU, α = 1 µs), 8 × 400 Gb/s NDR between (50 GB/s
# per GPU, α = 5 µs).
H100_NODES = Cluster("4 × DGX H100", H100, 8, 4, NVLINK4, INFINIBAND_NDR_8X)
HBM = H100.hbm_bandwidth_bytes_per_s
PEAK = H100.peak("bf16")
NVLINK_B, NVLINK_ALPHA = 450e9, 1e-6
NET_B, NET_ALPHA = 50e9, 5e-6
FLOOR = 4.8e-6  # hardware.LAUNCH_FLOOR_S: every NCCL call's launch floor


def kv_bytes_of(model, context_len, sequences, bytes_per_element=2):
    return serving.kv_cache_bytes(
        model.layers, model.kv_heads, model.head_dim, context_len, sequences, bytes_per_element
    )


# --- published figures -------------------------------------------------------------------------------------------


def test_kv_cache_of_llama2_13b_sb7():
    # SB7, "What about memory?": "8192 (T) × 40 (K) × 128 (H) × 40 (L) × 2 (bytes) × 2 = 6.7 GB".
    assert serving.kv_cache_bytes(40, 40, 128, 8192, 1) == 8192 * 40 * 128 * 40 * 2 * 2 == 6_710_886_400


def test_kv_cache_per_token_of_llama31_70b_from_its_config():
    # config.json: 80 layers × 2 (K and V) × 8 KV heads × 128 × 2 bytes (bf16) = 327,680 bytes per token.
    assert kv_bytes_of(LLAMA3_70B, 1, 1) == 80 * 2 * 8 * 128 * 2 == 327_680
    # SB8, "What's the LLaMA Serving Story?": in int8 "2 * K * H * L = 2 * 8 * 128 * 80 = 160kB" (163,840 bytes;
    # its table then rounds the bf16 figure to "324kB").
    assert kv_bytes_of(LLAMA3_70B, 1, 1, bytes_per_element=1) == 163_840
    # The same product at 4,096 tokens in fp16: 1,342,177,280 bytes (IETF draft-calabria-bmwg-ai-fabric-inference-
    # bench, appendix "70B parameter model at FP16 with 4K context").
    assert kv_bytes_of(LLAMA3_70B, 4096, 1) == 1_342_177_280


# SB7, "Modeling throughput and latency for LLaMA 2-13B": 8 TPU v5e (8.2e11 B/s, 1.97e14 FLOP/s each), 13e9
# parameters in bf16, 8192-token caches; the first table with 40 KV heads, the second with 8 (1:5 GQA).
SB7_BATCHES = [1, 8, 16, 32, 64, 240]
SB7_MHA_STEP_MS = [4.98, 12.13, 20.30, 36.65, 69.33, 249.09]
SB7_GQA_STEP_MS = [4.17, 5.60, 7.23, 10.50, 17.04, 52.99]
SB7_GQA_TOKENS_PER_S = [239.94, 1429.19, 2212.48, 3047.62, 3756.62, 4529.34]


@pytest.mark.parametrize("kv_heads, step_ms", [(40, SB7_MHA_STEP_MS), (8, SB7_GQA_STEP_MS)])
def test_llama2_13b_decode_step_times_sb7(kv_heads, step_ms):
    chips, params = 8, 13e9
    b = np.array(SB7_BATCHES)
    kv = serving.kv_cache_bytes(40, kv_heads, 128, 8192, b)
    step = serving.decode_step_time_s(2 * params / chips, kv / chips, 2 * b * params / chips, 0, 8.2e11, 1.97e14)
    # The book rounds the cache to 6.7 GB (1.34 GB with GQA); the exact 6.71 GB moves the times by < 0.2 %.
    assert step * 1e3 == pytest.approx(step_ms, rel=2e-3)


def test_llama2_13b_gqa_throughput_sb7():
    b = np.array(SB7_BATCHES)
    kv = serving.kv_cache_bytes(40, 8, 128, 8192, b)
    step = serving.decode_step_time_s(26e9 / 8, kv / 8, 2 * b * 13e9 / 8, 0, 8.2e11, 1.97e14)
    assert b / step == pytest.approx(SB7_GQA_TOKENS_PER_S, rel=2e-3)


def test_pop_quiz_30b_decode_latency_sb7():
    # SB7 pop quiz: 30B parameters in int8 on a TPU v5e 4x4 (16 chips, 8.1e11 B/s, 1.97e14 FLOP/s), 100 kB of KV
    # per token, 8192 tokens. Batch 4: "(4 * 819e6 + 30e9) / (16 * 8.1e11) = 2.5 ms" (the quotient is 2.567 ms);
    # batch 256: "(256 * 819e6) / (16 * 8.1e11) + (2 * 256 * 30e9) / (16 * 1.97e14) = 21ms".
    kv, chips = 100e3 * 8192, 16
    small = serving.decode_step_time_s(30e9 / chips, 4 * kv / chips, 2 * 4 * 30e9 / chips, 0, 8.1e11, 1.97e14)
    large = serving.decode_step_time_s(30e9 / chips, 256 * kv / chips, 2 * 256 * 30e9 / chips, 0, 8.1e11, 1.97e14)
    assert small == pytest.approx((4 * 819.2e6 + 30e9) / (16 * 8.1e11)) and round(small * 1e3, 1) == 2.6
    assert round(large * 1e3) == 21
    # The two rooflines matter: one max over weights + KV (full overlap) would give 18.5 ms, not the book's 21 ms.
    assert (30e9 + 256 * kv) / (chips * 8.1e11) == pytest.approx(18.5e-3, rel=1e-2)


def test_llama3_70b_decode_at_batch_32_sb8():
    # SB8: batch 32, 8192 tokens, int8 everything on a TPU v5e 4x2: KV "160e3 * 8192 * 32 = 41.9e9" bytes, total
    # 112 GB, step "112e9 / (8 * 8.1e11) = 17ms", "32 / .017 = 1882 tokens / sec, or 235 tokens / sec / chip";
    # on a 4x4 "17 / 2 = 8.5ms".
    kv = 160e3 * 8192 * 32
    step8 = serving.decode_step_time_s(70e9 / 8, kv / 8, 2 * 32 * 70e9 / 8, 0, 8.1e11, 1.97e14)
    step16 = serving.decode_step_time_s(70e9 / 16, kv / 16, 2 * 32 * 70e9 / 16, 0, 8.1e11, 1.97e14)
    assert round(step8 * 1e3) == 17 and step16 == pytest.approx(step8 / 2)
    # The book divides by the rounded 17 ms; the unrounded step gives 1.6 % fewer tokens per chip.
    assert 32 / step8 / 8 == pytest.approx(235, rel=2e-2)


def test_compute_bound_batch_sb7_sb8():
    # SB7: "B ≥ 240 = B_crit" for bf16 on TPU v5e (1.97e14 / 8.2e11); "if we have int8 parameters but do our
    # computation in bf16, the critical batch size drops to 120".
    assert serving.decode_compute_bound_sequences(1.97e14, 8.2e11) == pytest.approx(240, abs=0.5)
    assert serving.decode_compute_bound_sequences(1.97e14, 8.2e11, bytes_per_param=1) == pytest.approx(120, abs=0.5)
    # H100 in bf16: 989e12 / 3.35e12 = 295.2 (SB's GPU chapter: an H100's ridge is about 295).
    assert serving.decode_compute_bound_sequences(PEAK, HBM) == pytest.approx(295.2, abs=0.05)


def test_largest_batch_of_llama3_70b_on_16_v5e_sb8():
    # SB8 table, bf16 row: 140 GB of parameters on 16 TPU v5e (16 GB each) leaves 116 GB: "43" caches at 8k.
    assert serving.max_sequences(16 * 16e9, 140e9, kv_bytes_of(LLAMA3_70B, 8192, 1)) == 43


def test_llama3_70b_prefill_sb8():
    # SB8, "What about prefill?": 8192 tokens on 16 TPU v5e at 40 % utilisation: "2 * 70e9 * 8192 / (16 * 1.97e14 *
    # 0.4) = 0.91s". The book counts 2 FLOPs per parameter per token; serving adds causal attention's s² term.
    v5e_slice = Cluster("TPU v5e 4x4", TPU_V5E, 16, 1, ICI_V5E, ICI_V5E)
    pre = serving.prefill(LLAMA3_70B, v5e_slice, 16, 1, prompt_len=8192, compute_efficiency=0.4)
    rate = 16 * 1.97e14 * 0.4
    attention = 2 * 80 * 8192 * 8192 * 8193 / rate
    assert pre.compute_s == pytest.approx(2 * serving.matmul_params(LLAMA3_70B) * 8192 / rate + attention)
    # Without the attention term, and with the book's rounded 70e9 parameters, the book's figure:
    assert (pre.compute_s - attention) * 70e9 / serving.matmul_params(LLAMA3_70B) == pytest.approx(0.91, rel=5e-3)
    assert attention / pre.compute_s == pytest.approx(0.072, abs=1e-3)  # the s² term: 7 % at 8k tokens


# --- memory per device, by hand -----------------------------------------------------------------------------------


def test_kv_cache_per_device_splits_heads_and_layers():
    whole = kv_bytes_of(LLAMA3_8B, 1000, 3)
    assert whole == 32 * 2 * 8 * 128 * 1000 * 3 * 2
    assert serving.kv_cache_bytes_per_device(32, 8, 128, 1000, 3, tensor_parallel=2, pipeline_parallel=4) == (whole / 8)
    # t = 16 > 8 KV heads: each rank keeps one KV head, a copy of a head its neighbour also keeps.
    per_device = serving.kv_cache_bytes_per_device(80, 8, 128, 1000, 3, tensor_parallel=16, pipeline_parallel=2)
    assert per_device == 40 * 2 * 1 * 128 * 1000 * 3 * 2


def test_slips_change_the_kv_cache():
    right = kv_bytes_of(LLAMA3_70B, 4096, 8)
    k_only = LLAMA3_70B.layers * LLAMA3_70B.kv_heads * LLAMA3_70B.head_dim * 4096 * 8 * 2  # K counted, V forgotten
    all_heads = serving.kv_cache_bytes(80, LLAMA3_70B.heads, 128, 4096, 8)  # query heads instead of KV heads
    assert right == 2 * k_only and all_heads == 8 * right


def test_tensor_parallel_must_match_kv_heads():
    with pytest.raises(ValueError, match="tensor_parallel must divide kv_heads"):
        serving.kv_cache_bytes_per_device(80, 8, 128, 1, 1, tensor_parallel=3)
    with pytest.raises(ValueError, match="tensor_parallel must divide heads"):
        serving.serving_memory(LLAMA3_70B, 5, 1, 1, 1)
    with pytest.raises(ValueError, match="pipeline_parallel × virtual_stages must divide layers"):
        serving.serving_memory(LLAMA3_70B, 8, 3, 1, 1)


def test_serving_memory_by_hand():
    mem = serving.serving_memory(LLAMA3_70B, 16, 2, sequences=4, context_len=2048)
    # Weights: Ψ/(t·p) plus, per layer, the W_K and W_V rows of the replicated half KV head (t = 16 > 8).
    extra_params = 40 * 2 * 8192 * 128 * (1 - 8 / 16)
    assert mem.weights == pytest.approx(2 * (LLAMA3_70B.params / 32 + extra_params))
    assert mem.kv_cache == 40 * 2 * 1 * 128 * 2048 * 4 * 2
    assert mem.activations == 4 * (2 * (8192 + 3 * 28672 / 16) + 4 * 128256 / 16)
    assert mem.total == mem.weights + mem.kv_cache + mem.activations
    assert serving.weight_bytes_per_device(70e9, 4, 2, bytes_per_param=1) == 70e9 / 8


def test_largest_batch_that_fits_by_hand():
    one = serving.serving_memory(LLAMA3_70B, 8, 2, 1, 8192)
    expected = int((80e9 - one.weights) // (one.kv_cache + one.activations))
    assert serving.max_sequences_that_fit(LLAMA3_70B, H100, 8, 2, 8192) == expected
    fits = serving.serving_memory(LLAMA3_70B, 8, 2, expected, 8192).total
    too_many = serving.serving_memory(LLAMA3_70B, 8, 2, expected + 1, 8192).total
    assert fits <= 80e9 < too_many
    assert serving.max_sequences_that_fit(LLAMA3_70B, H100, 1, 1, 8192) == 0  # 141 GB of weights: nothing fits


def test_matmul_params_leave_out_lookup_tables():
    assert serving.matmul_params(LLAMA3_70B) == LLAMA3_70B.params - 128256 * 8192  # untied input table
    tied = TransformerModel("tied", 2, 64, 4, 100, 16, kv_heads=2, gated_mlp=True, style="llama")
    assert serving.matmul_params(tied) == tied.params  # the one table is the output head too
    assert serving.matmul_params(GPT3_175B) == GPT3_175B.params - 2048 * 12288  # learned positions


# --- prefill and decode, by hand, with t and p > 1 -------------------------------------------------------------


def test_decode_flops_by_hand():
    # Per sequence: 2 FLOPs per multiplied parameter, and 4·h per cached token per layer (QKᵀ and the product with V).
    assert serving.decode_flops(LLAMA3_8B, 3, 100) == 3 * (2 * serving.matmul_params(LLAMA3_8B) + 4 * 32 * 4096 * 100)
    # Decoding token s + 1 at context s + 1 costs what the prefill of s + 1 tokens adds to that of s tokens.
    s = 500
    added = serving.prefill_flops(LLAMA3_8B, s + 1) - serving.prefill_flops(LLAMA3_8B, s)
    assert serving.decode_flops(LLAMA3_8B, 1, s + 1) == pytest.approx(added)


def test_prefill_by_hand_with_t_and_p():
    b, s, t, p = 2, 1000, 2, 2
    pre = serving.prefill(LLAMA3_8B, H100_NODES, t, p, prompt_len=s, sequences=b, compute_efficiency=0.5)
    flops = b * (2 * serving.matmul_params(LLAMA3_8B) * s + 2 * 32 * 4096 * s * (s + 1))
    assert serving.prefill_flops(LLAMA3_8B, s, b) == flops
    assert pre.compute_s == pytest.approx(flops / (t * PEAK * 0.5))
    activation = 2 * b * s * 4096
    # Two all-reduces per layer of the b·s·h activations over t = 2 ranks in a node, as NCCL runs them (16.4 MB:
    # the launch floor + NVLink SHARP, 4.8 µs + 25 µs + S / (370.8 GB/s × 0.85 × 15/16 × 2 × 2/2)).
    call = budget.group_collective("all_reduce", H100_NODES, t, 1, activation)
    assert call.algorithm == "nvls"
    assert call.time_s == pytest.approx(FLOOR + 25e-6 + activation / (370.8e9 * 0.85 * 15 / 8))
    assert pre.all_reduce_s == pytest.approx(2 * 32 * call.time_s)
    assert pre.pipeline_hop_s == pytest.approx((p - 1) * (FLOOR + NVLINK_ALPHA + activation / t / 370.8e9))
    assert pre.time_to_first_token_s == pytest.approx(pre.compute_s + pre.all_reduce_s + pre.pipeline_hop_s)


def test_decode_step_by_hand_with_t_and_p():
    b, c, t, p = 8, 3000, 4, 4
    step = serving.decode_step(LLAMA3_70B, H100_NODES, t, p, sequences=b, context_len=c)
    layers_here = 80 / p
    assert step.weight_read_s == pytest.approx(2 * serving.matmul_params(LLAMA3_70B) / (t * p) / HBM)
    # Decode's multiplies at serving.DECODE_COMPUTE_EFFICIENCY = 0.5 of peak, a stated assumption.
    assert step.matmul_compute_s == pytest.approx(2 * b * serving.matmul_params(LLAMA3_70B) / (t * p) / (PEAK * 0.5))
    assert step.kv_read_s == pytest.approx(layers_here * 2 * (8 / t) * 128 * c * b * 2 / HBM)
    assert step.attention_compute_s == pytest.approx(4 * b * layers_here * 8192 * c / t / (PEAK * 0.5))
    # Two all-reduces per layer of b × h × 2 bytes (128 KiB) over t = 4 NVLink ranks: NCCL's ring with LL,
    # the launch floor + (6.6 + 6 × 0.6) µs + S / (141 GB/s × 4/6).
    activation = 2 * b * 8192
    assert step.all_reduce_latency_s == pytest.approx(2 * layers_here * (FLOOR + 10.2e-6))
    assert step.all_reduce_bandwidth_s == pytest.approx(2 * layers_here * activation / (141e9 * 4 / 6))
    # Stages are t = 4 ranks apart: 2 per 8-GPU node, so the p − 1 = 3 sends cross InfiniBand.
    assert step.pipeline_hop_s == pytest.approx((p - 1) * (FLOOR + NET_ALPHA + activation / t / NET_B))
    stage = step.weight_read_s + step.kv_read_s + step.all_reduce_latency_s + step.all_reduce_bandwidth_s
    assert step.bound == "memory" and step.stage_s == pytest.approx(stage)
    assert step.time_per_output_token_s == pytest.approx(p * stage + step.pipeline_hop_s)
    assert step.tokens_per_s_per_replica == pytest.approx(b / step.time_per_output_token_s)
    assert step.tokens_per_s_per_device == pytest.approx(step.tokens_per_s_per_replica / 16)


def test_one_all_reduce_per_layer_would_halve_the_latency_term():
    step = serving.decode_step(LLAMA3_70B, DGX_H100, 8, 1, sequences=1, context_len=1024)
    one_call = budget.group_collective("all_reduce", DGX_H100, 8, 1, 2 * 8192)  # NCCL's ring with LL
    assert (one_call.algorithm, one_call.protocol) == ("ring", "LL")
    fixed = one_call.launch_floor_s + one_call.latency_s
    assert step.all_reduce_latency_s == pytest.approx(2 * 80 * fixed)  # 160 × (4.8 + 6.6 + 14 × 0.6) µs
    assert step.all_reduce_latency_s == pytest.approx(3.168e-3)
    assert fixed > 10 * (one_call.time_s - fixed)  # latency-bound


def test_a_pipeline_adds_latency_and_helps_throughput_only_with_batches_in_flight():
    b, c = 4, 2048
    flat = serving.decode_step(LLAMA3_70B, H100_NODES, 4, 1, b, c)
    piped = serving.decode_step(LLAMA3_70B, H100_NODES, 4, 4, b, c)
    # Each stage does a quarter of the work, but one batch visits the four in turn, and pays three sends.
    assert piped.stage_s == pytest.approx(flat.stage_s / 4)
    assert piped.time_per_output_token_s == pytest.approx(flat.time_per_output_token_s + piped.pipeline_hop_s)
    assert piped.tokens_per_s_per_replica < flat.tokens_per_s_per_replica
    full = serving.decode_step(LLAMA3_70B, H100_NODES, 4, 4, b, c, batches_in_flight=4)
    assert full.time_per_output_token_s == pytest.approx(piped.time_per_output_token_s)
    assert full.tokens_per_s_per_replica == pytest.approx(4 * piped.tokens_per_s_per_replica)
    # More batches than stages: each stage serves k batches per token, so the latency grows with k.
    over = serving.decode_step(LLAMA3_70B, H100_NODES, 4, 4, b, c, batches_in_flight=8)
    assert over.time_per_output_token_s == pytest.approx(8 * piped.stage_s)


def test_decode_turns_compute_bound_at_the_ridge():
    # At half of peak the weight multiplies turn compute-bound past 989e12 × 0.5 / 3.35e12 = 147.6 sequences (t and p
    # cancel); the step as a whole only when its arithmetic also outweighs the KV cache's reads.
    crossover = serving.decode_compute_bound_sequences(PEAK * 0.5, HBM)
    assert 147 < crossover < 148
    for t, p in ((1, 1), (8, 2)):
        step = serving.decode_step(LLAMA3_8B, H100_NODES, t, p, np.array([147, 148]), 128)
        assert (step.matmul_compute_s > step.weight_read_s).tolist() == [False, True], (t, p)
    # By hand, t = p = 1 at 128 tokens of context: b·(2P + 4·l·h·c) / (peak/2) = (2P + b·KV per sequence) / HBM.
    params, context = serving.matmul_params(LLAMA3_8B), 128
    kv = serving.kv_cache_bytes(32, 8, 128, context, 1)
    flip = (2 * params / HBM) / ((2 * params + 4 * 32 * 4096 * context) / (PEAK * 0.5) - kv / HBM)
    step = serving.decode_step(LLAMA3_8B, H100_NODES, 1, 1, np.array([int(flip), int(flip) + 1]), context)
    assert step.bound.tolist() == ["memory", "compute"] and int(flip) == 175


def test_latency_throughput_curve_runs_to_the_largest_batch_that_fits():
    curve = serving.latency_throughput_curve(LLAMA3_8B, DGX_H100, 2, 1, context_len=4096)
    largest = serving.max_sequences_that_fit(LLAMA3_8B, H100, 2, 1, 4096)
    assert curve.sequences.tolist() == list(range(1, largest + 1))
    assert np.all(np.diff(curve.time_per_output_token_s) > 0) and np.all(np.diff(curve.tokens_per_s_per_device) > 0)
    halves = serving.latency_throughput_curve(LLAMA3_8B, DGX_H100, 2, 2, context_len=4096, batches_in_flight=2)
    assert halves.sequences[-1] == serving.max_sequences_that_fit(LLAMA3_8B, H100, 2, 2, 4096) // 2
    with pytest.raises(ValueError, match="no batch fits"):
        serving.latency_throughput_curve(LLAMA3_70B, DGX_H100, 1, 1, context_len=4096)


def test_latency_stops_falling_once_the_all_reduce_latency_overtakes_the_weight_reads():
    # Llama 3.1 70B, one sequence at 4096 tokens, on four DGX H100 nodes: t = 1 and 2 do not fit (141 GB, 70.6 GB
    # of weights + cache); 16 is fastest; at 32 the all-reduces' α (now across 4 nodes) outgrows what t saves.
    assert serving.latency_optimal_tensor_parallel(LLAMA3_70B, H100_NODES, sequences=1, context_len=4096) == 16
    ts = np.array([4, 8, 16, 32])
    step = serving.decode_step(LLAMA3_70B, H100_NODES, ts, 1, 1, 4096)
    tpot = step.time_per_output_token_s
    assert tpot[0] > tpot[1] > tpot[2] < tpot[3]
    saved = step.weight_read_s[2] - step.weight_read_s[3]
    added = step.all_reduce_latency_s[3] - step.all_reduce_latency_s[2]
    assert added > saved
    # Inside one node the α per step is 1 µs: the 8B model's best t is the whole node.
    assert serving.latency_optimal_tensor_parallel(LLAMA3_8B, DGX_H100, sequences=1, context_len=4096) == 8


def test_comparison_shows_a_plan_that_trains_well_and_serves_poorly():
    # ZeRO-3 over all 32 GPUs (t = p = 1) trains Llama 3.1 70B compute-bound with nothing exposed; as a serving
    # replica it is one GPU that cannot hold 141 GB of weights, and kept sharded it gathers them every token.
    zero3 = ParallelPlan(data_parallel=32, zero_stage=3, micro_batch=1, grad_accum_steps=2, recompute="full")
    megatron = ParallelPlan(
        data_parallel=4,
        tensor_parallel=8,
        zero_stage=3,
        micro_batch=1,
        grad_accum_steps=16,
        recompute="selective",
        sequence_parallel=True,
    )
    a = serving.compare_training_and_serving(LLAMA3_70B, zero3, H100_NODES, 1, 4096, 1024)
    b = serving.compare_training_and_serving(LLAMA3_70B, megatron, H100_NODES, 1, 4096, 1024)
    assert a.training.total_s == budget.step_time(LLAMA3_70B, zero3, H100_NODES, calibration=None).total_s
    assert a.training_fits and b.training_fits
    assert a.training.total_s < 1.1 * b.training.total_s  # within 10 % of the Megatron-style plan
    assert a.training.binding_constraint == "compute"
    assert a.training_tokens_per_s_per_device == pytest.approx(64 * 8192 / (a.training.total_s * 32))
    assert not a.serving_fits and b.serving_fits
    # All-gather of one GPU's 141 GB over 32 ranks on 4 nodes: NCCL's flat ring with Simple at min(NVLink 370.8,
    # the node's 400 GB/s) × 32/31; latency 8.4 + 28 × 3.4 (NVLink hops) + 3 × 14 µs (network hops), and the launch
    # floor.
    weights = a.serving_memory.weights
    gather = FLOOR + 145.6e-6 + weights / (370.8e9 * 32 / 31)
    assert a.zero3_gather_per_token_s == pytest.approx(gather)
    assert a.zero3_gather_per_token_s / b.time_per_output_token_s == pytest.approx(43.7, rel=1e-2)  # 369 ms / 8.44 ms
    assert b.time_to_first_token_s == b.prefill.time_to_first_token_s
    assert b.serving_tokens_per_s_per_device == b.decode.tokens_per_s_per_device


def test_a_pipelined_plan_trains_as_well_and_serves_a_quarter_as_much_with_one_batch():
    # Two plans of the 70B model's training search on 32 H100s (global batch 64), both fitting: t = 8 with ZeRO-3 over
    # d = 4 (18.6 s a step, the fastest) and t = 8 with an interleaved pipeline of p = 4 (19.0 s).
    common = dict(tensor_parallel=8, micro_batch=1, recompute="selective", sequence_parallel=True)
    flat = ParallelPlan(data_parallel=4, zero_stage=3, grad_accum_steps=16, **common)
    piped = ParallelPlan(
        pipeline_parallel=4, zero_stage=1, grad_accum_steps=64, schedule="interleaved", virtual_stages=4, **common
    )
    a = serving.compare_training_and_serving(LLAMA3_70B, flat, H100_NODES, 8, 4096, 1024)
    b = serving.compare_training_and_serving(LLAMA3_70B, piped, H100_NODES, 8, 4096, 1024)
    assert a.training_fits and b.training_fits and b.training.total_s < 1.03 * a.training.total_s
    # Serving one batch, the pipeline's four stages wait for each other: a quarter of the tokens per device.
    assert b.serving_tokens_per_s_per_device < 0.26 * a.serving_tokens_per_s_per_device
    assert b.time_per_output_token_s > a.time_per_output_token_s
    c = serving.compare_training_and_serving(LLAMA3_70B, piped, H100_NODES, 8, 4096, 1024, batches_in_flight=4)
    assert c.serving_tokens_per_s_per_device == pytest.approx(4 * b.serving_tokens_per_s_per_device)
    assert c.serving_memory.kv_cache == pytest.approx(a.serving_memory.kv_cache)  # 4 batches on a quarter of layers


@given(
    t=st.sampled_from([1, 2, 4, 8, 16, 32]),
    p=st.sampled_from([1, 2, 4]),
    b=st.integers(1, 512),
    c=st.integers(1, 32768),
)
def test_properties_of_the_cache_and_the_decode_step(t, p, b, c):
    model = LLAMA3_70B
    whole = kv_bytes_of(model, c, b)
    per_device = serving.kv_cache_bytes_per_device(model.layers, model.kv_heads, model.head_dim, c, b, t, p)
    # Split evenly while t ≤ 8 KV heads; beyond, each copy of a head costs room: t/8 times the cache in all.
    assert per_device * t * p == pytest.approx(whole * max(1, t / model.kv_heads))
    if t * p > H100_NODES.devices:
        return
    step = serving.decode_step(model, H100_NODES, t, p, np.array([b, b + 1]), c)
    tpot = step.time_per_output_token_s
    assert tpot[1] >= tpot[0] and np.all(step.tokens_per_s_per_replica * tpot == pytest.approx([b, b + 1]))
    lower = (2 * serving.matmul_params(model) + whole) / (t * HBM)  # t devices read in parallel, p stages in turn
    assert tpot[0] >= lower * (1 - 1e-12)


def test_module_names_exist_and_no_plotting_is_imported():
    for name in serving.__all__:
        assert hasattr(serving, name), name
    code = "import sys, course_lib.serving; sys.exit('matplotlib' in sys.modules or 'ipywidgets' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
