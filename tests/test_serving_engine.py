"""course_lib.serving.engine against hand counts, the old model, a measurement and a simulation.

Sources:
- The custom all-reduce measured on H100 (sgl-project/sglang pull request #2904, "custom allreduce" table):
  ``engine.CUSTOM_ALL_REDUCE_MEASURED`` holds it; the fit must reproduce it.
- vLLM's dispatch between its one-shot and two-shot kernels (csrc/custom_all_reduce.cuh, REDUCE_CASE) and its
  8 MiB buffer (custom_all_reduce.py, max_size).
- The occupancy expectation E·(1 − (1 − k/E)^b), checked against a seeded simulation of top-k routing.
"""

import time

import numpy as np
import pytest

from course_lib import budget, serving
from course_lib.hardware import A100, DGX_A100, DGX_H100, H100, NEBIUS_H100_IB
from course_lib.parallelism import LLAMA3_8B, LLAMA3_70B, LLAMA3_405B, MIXTRAL_8X7B
from course_lib.serving import engine

HBM = H100.hbm_bandwidth_bytes_per_s


# --- the old model is a special case -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "cluster", "t", "p"),
    [(LLAMA3_8B, DGX_H100, 1, 1), (LLAMA3_70B, DGX_H100, 8, 1), (LLAMA3_70B, DGX_H100, 4, 2),
     (LLAMA3_70B, NEBIUS_H100_IB, 16, 1), (LLAMA3_405B, NEBIUS_H100_IB, 8, 2)],
)  # fmt: skip
def test_uncalibrated_iteration_is_the_old_decode_step(model, cluster, t, p):
    b = np.array([1, 7, 64, 300, 1000])
    c = np.array([1, 512, 4096, 4096, 8192])
    cost = engine.iteration_time(model, cluster, t, p, efficiency=engine.UNCALIBRATED)
    old = serving.decode_step(model, cluster, t, p, b, c)
    new = cost.breakdown(0, 0, b, b * c)
    for name in ("weight_read_s", "matmul_compute_s", "kv_read_s", "attention_compute_s", "all_reduce_latency_s",
                 "all_reduce_bandwidth_s", "pipeline_hop_s"):  # fmt: skip
        np.testing.assert_allclose(getattr(new, name), getattr(old, name), rtol=1e-12, err_msg=name)
    np.testing.assert_allclose(cost(0, 0, b, b * c), old.time_per_output_token_s, rtol=1e-12)


def test_uncalibrated_prefill_is_the_old_prefill():
    cost = engine.iteration_time(LLAMA3_70B, DGX_H100, 8, efficiency=engine.UNCALIBRATED)
    for s in (1024, 8192):
        old = serving.prefill(LLAMA3_70B, DGX_H100, 8, 1, s).time_to_first_token_s
        assert cost(s, s * (s + 1) // 2, 0, 0) == pytest.approx(old, rel=1e-12)


def test_iteration_terms_by_hand():
    """Llama 3.1 8B in bf16 on one H100 at the default efficiencies: each term from the datasheet by hand."""
    eff = engine.DEFAULT_EFFICIENCY
    cost = engine.iteration_time(LLAMA3_8B, DGX_H100, 1)
    step = cost.breakdown(512, 512 * 513 // 2, 32, 32 * 1000)
    weights = 2 * (LLAMA3_8B.params - LLAMA3_8B.vocab * LLAMA3_8B.hidden)  # the input table is a lookup
    assert step.weight_read_s == pytest.approx(weights / (HBM * eff.hbm_bandwidth_fraction))
    peak = 989e12 * eff.gemm_efficiency
    # Each multiply at the share its depth K allows, K / (K + K½): only the MLP's down projection is deeper (14336).
    h, f, k_half = 4096, 14336, eff.gemm_half_depth
    shallow = 32 * (h * (h + 2 * 1024) + h * h + 2 * h * f) + 128256 * h
    deep = 32 * h * f
    slowdown = (shallow * (h + k_half) / h + deep * (f + k_half) / f) / (shallow + deep)
    assert shallow + deep == pytest.approx(weights / 2, rel=1e-4)  # all but the norms
    assert step.matmul_compute_s == pytest.approx(2 * 544 * weights / 2 / peak * slowdown)
    kv_per_token = 32 * 2 * 8 * 128 * 2  # layers, K and V, KV heads, head size, bytes
    assert step.kv_read_s == pytest.approx(32 * 1000 * kv_per_token / (HBM * eff.hbm_bandwidth_fraction))
    assert step.attention_compute_s == pytest.approx(4 * 32 * 4096 * (512 * 513 / 2 + 32000) / peak)
    assert step.all_reduce_latency_s == step.all_reduce_bandwidth_s == step.pipeline_hop_s == 0
    assert cost(512, 512 * 513 // 2, 32, 32000) == pytest.approx(
        max(step.weight_read_s, step.matmul_compute_s) + max(step.kv_read_s, step.attention_compute_s)
        + eff.iteration_overhead_s
    )  # fmt: skip
    assert cost(0, 0, 0, 0) == 0.0


def test_tensor_parallel_makes_the_multiplies_shallower():
    """The output and down projections accumulate over h/t and f/t: a 70B layer's multiplies reach less of peak per
    GPU at t = 8 than at t = 1 (per row, 8 GPUs take more than an eighth of one GPU's time)."""
    one = engine.iteration_time(LLAMA3_70B, DGX_H100, 1, weights="fp8").breakdown(4096, 0, 0, 0).matmul_compute_s
    eight = engine.iteration_time(LLAMA3_70B, DGX_H100, 8, weights="fp8").breakdown(4096, 0, 0, 0).matmul_compute_s
    assert 1.05 < eight * 8 / one < 1.3
    flat = engine.EngineEfficiency("flat", 0.7, 0.6)
    one, eight = (engine.iteration_time(LLAMA3_70B, DGX_H100, t, weights="fp8", efficiency=flat)
                  .breakdown(4096, 0, 0, 0).matmul_compute_s for t in (1, 8))  # fmt: skip
    assert eight * 8 == pytest.approx(one)


def test_gemm_depth_fit_reproduces_its_measurement():
    cap, half = engine.fit_gemm_depth()
    for _, depth, flops in engine.GEMM_M4096_MEASURED:
        assert cap * depth / (depth + half) == pytest.approx(flops / 1979e12, rel=0.2)
    assert engine.DECODE_HBM_BANDWIDTH_FRACTION == pytest.approx((2320 + 2455) / 2 / 3350)


def test_weights_are_read_once_per_iteration():
    """A decode batch shares the weight read: 64 sequences cost far less than 64 single ones."""
    cost = engine.iteration_time(LLAMA3_70B, DGX_H100, 8)
    one, many = cost(0, 0, 1, 2048), cost(0, 0, 64, 64 * 2048)
    assert many < 4 * one
    step = cost.breakdown(0, 0, np.array([1, 64]), np.array([2048, 64 * 2048]))
    assert step.weight_read_s[0] == step.weight_read_s[1]


def test_iteration_time_is_vectorised_and_fast():
    cost = engine.iteration_time(LLAMA3_70B, DGX_H100, 8, weights="fp8", kv_cache="fp8")
    rng = np.random.default_rng(0)
    prefill = rng.integers(0, 2048, 1000)
    decode = rng.integers(1, 256, 1000)
    args = (prefill, prefill * (prefill + 1) // 2, decode, decode * 3000)
    seconds = cost(*args)
    assert seconds.shape == (1000,)
    assert seconds[3] == pytest.approx(cost(*(int(a[3]) for a in args)))
    times = []
    for _ in range(15):
        started = time.perf_counter()
        cost(*args)
        times.append(time.perf_counter() - started)
    assert np.median(times) < 1e-3


# --- precision -----------------------------------------------------------------------------------------------------


def test_precisions_bytes_and_peaks():
    bf16, fp8, int4 = (engine.iteration_time(LLAMA3_70B, DGX_H100, 8, weights=w) for w in ("bf16", "fp8", "int4"))
    reads = [c.breakdown(0, 0, 1, 1).weight_read_s for c in (bf16, fp8, int4)]
    head = 2 * (LLAMA3_70B.vocab * LLAMA3_70B.hidden + LLAMA3_70B.hidden) / 8  # output head and norm stay bf16
    layers = (reads[0] * HBM * engine.DEFAULT_EFFICIENCY.hbm_bandwidth_fraction - head) / 2  # parameters per GPU
    for read, e in zip(reads, (2, 1, 0.5), strict=True):
        assert read * HBM * engine.DEFAULT_EFFICIENCY.hbm_bandwidth_fraction == pytest.approx(e * layers + head)
    # FP8 multiplies at the FP8 peak (1979 against bf16's 989 TFLOP/s); W4A16 multiplies in bf16.
    big = [c.breakdown(8192, 0, 0, 0).matmul_compute_s for c in (bf16, fp8, int4)]
    assert big[0] / big[1] == pytest.approx(1979 / 989)
    assert big[2] == pytest.approx(big[0])
    # The FP8 cache holds twice the tokens.
    assert engine.kv_cache_blocks(LLAMA3_70B, H100, 8, kv_cache="fp8") in (
        2 * engine.kv_cache_blocks(LLAMA3_70B, H100, 8) + d for d in (0, 1)
    )


@pytest.mark.parametrize(("argument", "kwargs"), [("weights", {"weights": "fp8"}), ("kv_cache", {"kv_cache": "fp8"})])
def test_a_precision_the_accelerator_lacks_is_refused(argument, kwargs):
    with pytest.raises(ValueError, match=f"^{argument} must be a precision A100"):
        engine.iteration_time(LLAMA3_8B, DGX_A100, 1, **kwargs)
    with pytest.raises(ValueError, match=f"^{argument} must be"):
        engine.kv_cache_blocks(LLAMA3_8B, A100, 1, **kwargs)
    with pytest.raises(ValueError, match="^weights must be one of"):
        engine.iteration_time(LLAMA3_8B, DGX_H100, 1, weights="int8")


def test_bad_iteration_input():
    cost = engine.iteration_time(LLAMA3_8B, DGX_H100, 1)
    with pytest.raises(ValueError, match="^decode_sequences must be"):
        cost(0, 0, -1, 0)
    with pytest.raises(ValueError, match="^prefill_attended_tokens must be"):
        cost(1, -1, 0, 0)
    with pytest.raises(ValueError, match="^efficiency must be"):
        engine.iteration_time(LLAMA3_8B, DGX_H100, 1, efficiency=0.8)
    with pytest.raises(ValueError, match="^hbm_bandwidth_fraction must be in"):
        engine.EngineEfficiency("x", 1.2, 0.8)


# --- the custom all-reduce ----------------------------------------------------------------------------------------


def test_custom_all_reduce_fit_reproduces_its_measurement():
    fit = engine.CUSTOM_ALL_REDUCE_FIT
    errors = []
    for t, size, seconds in engine.CUSTOM_ALL_REDUCE_MEASURED:
        one_shot = size < {2: 16 * 2**20, 4: 2**20, 8: 2**19}[t]
        errors.append(fit.time_s(t, size, one_shot) / seconds - 1)
    assert np.max(np.abs(errors)) < 0.2
    assert np.median(np.abs(errors)) < 0.07
    # What the fit means: a few µs fixed, NVLink read at a third of its 450 GB/s with 36 blocks.
    assert 3e-6 < fit.base_s < 5e-6 and 0.25 < fit.nvlink_fraction < 0.45


def test_custom_all_reduce_follows_vllms_dispatch():
    kib = 1024
    time = lambda size: engine.custom_all_reduce_time_s(DGX_H100, 8, size)  # noqa: E731
    fit = engine.CUSTOM_ALL_REDUCE_FIT
    assert time(255 * kib) == pytest.approx(fit.time_s(8, 255 * kib, True, 450e9))  # one-shot below 256 KiB
    assert time(256 * kib) == pytest.approx(fit.time_s(8, 256 * kib, False, 450e9))  # two-shot from it
    nccl = budget.group_collective("all_reduce", DGX_H100, 8, 1, 8 * 2**20).time_s
    assert time(8 * 2**20) == pytest.approx(nccl)  # the 8 MiB buffer is full: NCCL
    across = budget.group_collective("all_reduce", NEBIUS_H100_IB, 16, 1, 16 * kib).time_s
    assert engine.custom_all_reduce_time_s(NEBIUS_H100_IB, 16, 16 * kib) == pytest.approx(across)
    # In a node the kernel beats NCCL at a decode step's size.
    assert time(16 * kib) < budget.group_collective("all_reduce", DGX_H100, 8, 1, 16 * kib).time_s / 2


# --- the paged KV cache --------------------------------------------------------------------------------------------


def test_kv_cache_blocks_by_hand():
    """Llama 3.1 8B on one H100, vLLM's defaults, counted by hand."""
    weights = 2 * LLAMA3_8B.params
    rows = 8192
    activations = rows * (2 * (4096 + 3 * 14336) + 4 * 128256)  # residual, MLP intermediates, fp32 logits
    block = 32 * 2 * 8 * 128 * 16 * 2  # layers, K and V, KV heads, head size, 16 tokens, bytes
    expected = int((0.9 * 80 * 2**30 - weights - activations) // block)  # an "80 GB" H100 reports 80 GiB
    assert engine.kv_cache_blocks(LLAMA3_8B, H100, 1) == expected
    tensorrt = int((0.9 * (80 * 2**30 - weights - activations)) // (2 * block))
    assert engine.kv_cache_blocks(LLAMA3_8B, H100, 1, block_size_tokens=32, free_gpu_memory_fraction=0.9) == tensorrt


@pytest.mark.parametrize("tokens", [1, 15, 16, 17, 2048, 2049, 4000, 8192])
def test_paged_never_holds_more_than_contiguous(tokens):
    """At equal memory (all of the device's 80 GiB, one row's activations), the paged cache holds at most the
    sequences a contiguous one does, and as many when n is a multiple of the block."""
    blocks = engine.kv_cache_blocks(LLAMA3_70B, H100, 8, gpu_memory_utilization=1.0, max_num_batched_tokens=1)
    paged = engine.max_sequences_in_blocks(blocks, tokens)
    weights, _ = engine.serving_weight_bytes_per_device(LLAMA3_70B, 8)
    activations = serving.decode_activation_bytes(1, 8192, 28672, 128256, 8)
    contiguous = serving.max_sequences(80 * 2**30 - activations, weights, serving.kv_cache_bytes_per_device(
        80, 8, 128, tokens, 1, 8))  # fmt: skip
    assert paged <= contiguous
    if tokens % 16 == 0:
        assert contiguous - paged <= contiguous // blocks + 1  # only the last partial block of memory differs
    # the replica's own count (marketed 80 GB, each sequence's activations) holds fewer still
    assert contiguous >= serving.max_sequences_that_fit(LLAMA3_70B, H100, 8, 1, tokens)


def test_blocks_per_sequence_and_bad_input():
    assert engine.blocks_per_sequence(np.array([1, 16, 17, 32, 33])).tolist() == [1, 1, 2, 2, 3]
    with pytest.raises(ValueError, match="^block_size_tokens must be"):
        engine.kv_cache_blocks(LLAMA3_8B, H100, 1, block_size_tokens=0)
    with pytest.raises(ValueError, match="^gpu_memory_utilization must be in"):
        engine.kv_cache_blocks(LLAMA3_8B, H100, 1, gpu_memory_utilization=0)
    with pytest.raises(ValueError, match="^model must fit"):
        engine.kv_cache_blocks(LLAMA3_405B, H100, 1, weights="fp8")
    with pytest.raises(ValueError, match="^block_size_tokens must be"):
        engine.max_sequences_in_blocks(100, 10, block_size_tokens=-16)


# --- mixtures of experts -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("experts", "k", "tokens"), [(8, 2, 1), (8, 2, 3), (8, 2, 16), (64, 6, 10), (256, 8, 32)])
def test_experts_visited_against_a_simulation(experts, k, tokens):
    rng = np.random.default_rng(1)
    trials = 4000
    # each token picks k distinct experts uniformly: the first k of a random permutation
    picks = np.argsort(rng.random((trials, tokens, experts)), axis=-1)[..., :k]
    visited = np.array([np.unique(trial).size for trial in picks])
    expected = engine.expected_experts_visited(experts, k, tokens)
    standard_error = visited.std(ddof=1) / np.sqrt(trials) if visited.std() > 0 else 1e-9
    assert abs(visited.mean() - expected) < 4 * standard_error + 1e-9


def test_moe_decode_reads_the_visited_experts():
    """Mixtral 8x7B on one GPU: one token reads the dense part and 2 of 8 experts a layer; a large batch all 8."""
    cost = engine.iteration_time(MIXTRAL_8X7B, DGX_H100, 1)
    bandwidth = HBM * engine.DEFAULT_EFFICIENCY.hbm_bandwidth_fraction
    expert = 3 * 4096 * 14336
    dense = 2 * (serving.matmul_params(MIXTRAL_8X7B) - 32 * 8 * expert)
    for b, visited in ((1, 2.0), (10_000, 8.0)):
        read = cost.breakdown(0, 0, b, b).weight_read_s * bandwidth
        assert read == pytest.approx(dense + 2 * 32 * visited * expert)
    # FLOPs: k experts per token, not E; the experts' down projections (K = 14336) deeper than the rest (K = 4096)
    step = cost.breakdown(0, 0, 1, 1)
    active = serving.matmul_params(MIXTRAL_8X7B) - 32 * 6 * expert
    down = 32 * 2 * 4096 * 14336
    k_half = engine.DEFAULT_EFFICIENCY.gemm_half_depth
    slowdown = ((active - down) * (4096 + k_half) / 4096 + down * (14336 + k_half) / 14336) / active
    assert step.matmul_compute_s * 989e12 * engine.DEFAULT_EFFICIENCY.gemm_efficiency == pytest.approx(
        2 * active * slowdown
    )


def test_expert_parallel_all_to_alls_reuse_the_training_model():
    cost = engine.iteration_time(MIXTRAL_8X7B, DGX_H100, 8, expert_parallel=8)
    step = cost.breakdown(0, 0, 64, 64 * 1024)
    call = budget.experts.moe_layer_times(MIXTRAL_8X7B, DGX_H100, 8, 64, tensor_parallel=8).call_s
    assert step.expert_all_to_all_s == pytest.approx(2 * 32 * call)
    plain = engine.iteration_time(MIXTRAL_8X7B, DGX_H100, 8).breakdown(0, 0, 64, 64 * 1024)
    assert plain.expert_all_to_all_s == 0
    # the all-to-alls replace each MoE layer's second all-reduce: 32 all-reduces a step instead of 64
    assert step.all_reduce_latency_s == pytest.approx(plain.all_reduce_latency_s / 2)
    assert step.all_reduce_bandwidth_s == pytest.approx(plain.all_reduce_bandwidth_s / 2)
    with pytest.raises(ValueError, match="^expert_parallel must be"):
        engine.iteration_time(MIXTRAL_8X7B, DGX_H100, 8, expert_parallel=4)
    with pytest.raises(ValueError, match="^expert_parallel must be"):
        engine.iteration_time(LLAMA3_8B, DGX_H100, 8, expert_parallel=8)
