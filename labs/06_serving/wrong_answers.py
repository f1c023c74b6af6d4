"""Lab 6's plausible wrong answers, {question: [(mistake, source of the answer cell), ...]}: tests/test_grading.py
checks that each scores zero on its question and leaves the others at full marks."""

WRONG = {
    "q1": [
        (
            "K counted, V forgotten",
            """
def kv_cache_bytes(model, context_len, sequences, bytes_per_element=2):
    return model.layers * model.kv_heads * model.head_dim * context_len * sequences * bytes_per_element
""",
        ),
        (
            "all query heads instead of the KV heads",
            """
def kv_cache_bytes(model, context_len, sequences, bytes_per_element=2):
    return model.layers * 2 * model.heads * model.head_dim * context_len * sequences * bytes_per_element
""",
        ),
        (
            "2 bytes whatever bytes_per_element",
            """
def kv_cache_bytes(model, context_len, sequences, bytes_per_element=2):
    return model.layers * 2 * model.kv_heads * model.head_dim * context_len * sequences * 2
""",
        ),
    ],
    "q2": [
        (
            "rounded up: equal times counted as compute-bound",
            """
def compute_bound_batch(peak_flops_per_s, hbm_bandwidth_bytes_per_s, bytes_per_param):
    import math
    return math.ceil(peak_flops_per_s * bytes_per_param / (2 * hbm_bandwidth_bytes_per_s))
""",
        ),
        (
            "the ridge point in FLOPs per byte, not per parameter",
            """
def compute_bound_batch(peak_flops_per_s, hbm_bandwidth_bytes_per_s, bytes_per_param):
    return int(peak_flops_per_s // hbm_bandwidth_bytes_per_s) + 1
""",
        ),
        (
            "one FLOP per weight and sequence",
            """
def compute_bound_batch(peak_flops_per_s, hbm_bandwidth_bytes_per_s, bytes_per_param):
    return int(peak_flops_per_s * bytes_per_param // hbm_bandwidth_bytes_per_s) + 1
""",
        ),
    ],
    "q3": [
        (
            "memory not checked",
            """
def lowest_latency_t(model, cluster, sequences, context_len):
    usable = [
        t for t in range(1, cluster.devices + 1)
        if model.heads % t == 0 and (model.kv_heads % t == 0 or t % model.kv_heads == 0)
    ]
    return min(
        usable,
        key=lambda t: serving.decode_step(model, cluster, t, 1, sequences, context_len).time_per_output_token_s,
    )
""",
        ),
        (
            "powers of two only",
            """
def lowest_latency_t(model, cluster, sequences, context_len):
    best_t, best_s = None, None
    for t in (1, 2, 4, 8, 16, 32, 64, 128):
        if t > cluster.devices or model.heads % t or (model.kv_heads % t and t % model.kv_heads):
            continue
        if serving.serving_memory(model, t, 1, sequences, context_len).total > cluster.accelerator.hbm_capacity_bytes:
            continue
        seconds = serving.decode_step(model, cluster, t, 1, sequences, context_len).time_per_output_token_s
        if best_s is None or seconds < best_s:
            best_t, best_s = t, seconds
    return best_t
""",
        ),
        (
            "the most tokens/s per GPU instead of the lowest latency",
            """
def lowest_latency_t(model, cluster, sequences, context_len):
    best_t, best_rate = None, None
    for t in range(1, cluster.devices + 1):
        if model.heads % t or (model.kv_heads % t and t % model.kv_heads):
            continue
        if serving.serving_memory(model, t, 1, sequences, context_len).total > cluster.accelerator.hbm_capacity_bytes:
            continue
        rate = serving.decode_step(model, cluster, t, 1, sequences, context_len).tokens_per_s_per_device
        if best_rate is None or rate > best_rate:
            best_t, best_rate = t, rate
    return best_t
""",
        ),
    ],
    "q4": [
        (
            "one all-reduce per layer instead of two",
            """
def time_per_output_token(model, cluster, tensor_parallel, sequences, context_len):
    t, b = tensor_parallel, sequences
    bandwidth = cluster.accelerator.hbm_bandwidth_bytes_per_s
    peak = cluster.accelerator.peak("bf16") * serving.DECODE_COMPUTE_EFFICIENCY
    params = serving.matmul_params(model) / t
    weights = max(2 * params / bandwidth, 2 * b * params / peak)
    cache = serving.kv_cache_bytes(model.layers, model.kv_heads, model.head_dim, context_len, b) / t
    attention = max(cache / bandwidth, 4 * b * model.layers * model.hidden * context_len / t / peak)
    one_all_reduce = budget.group_collective_time("all_reduce", cluster, t, 1, 2 * b * model.hidden)
    return weights + attention + model.layers * one_all_reduce
""",
        ),
        (
            "the cache counted once (K only)",
            """
def time_per_output_token(model, cluster, tensor_parallel, sequences, context_len):
    t, b = tensor_parallel, sequences
    bandwidth = cluster.accelerator.hbm_bandwidth_bytes_per_s
    peak = cluster.accelerator.peak("bf16") * serving.DECODE_COMPUTE_EFFICIENCY
    params = serving.matmul_params(model) / t
    weights = max(2 * params / bandwidth, 2 * b * params / peak)
    cache = model.layers * model.kv_heads * model.head_dim * context_len * b * 2 / t
    attention = max(cache / bandwidth, 4 * b * model.layers * model.hidden * context_len / t / peak)
    one_all_reduce = budget.group_collective_time("all_reduce", cluster, t, 1, 2 * b * model.hidden)
    return weights + attention + 2 * model.layers * one_all_reduce
""",
        ),
        (
            "all query heads in the cache",
            """
def time_per_output_token(model, cluster, tensor_parallel, sequences, context_len):
    t, b = tensor_parallel, sequences
    bandwidth = cluster.accelerator.hbm_bandwidth_bytes_per_s
    peak = cluster.accelerator.peak("bf16") * serving.DECODE_COMPUTE_EFFICIENCY
    params = serving.matmul_params(model) / t
    weights = max(2 * params / bandwidth, 2 * b * params / peak)
    cache = serving.kv_cache_bytes(model.layers, model.heads, model.head_dim, context_len, b) / t
    attention = max(cache / bandwidth, 4 * b * model.layers * model.hidden * context_len / t / peak)
    one_all_reduce = budget.group_collective_time("all_reduce", cluster, t, 1, 2 * b * model.hidden)
    return weights + attention + 2 * model.layers * one_all_reduce
""",
        ),
        (
            "the multiplies at the full peak instead of the stated decode efficiency",
            """
def time_per_output_token(model, cluster, tensor_parallel, sequences, context_len):
    t, b = tensor_parallel, sequences
    bandwidth, peak = cluster.accelerator.hbm_bandwidth_bytes_per_s, cluster.accelerator.peak("bf16")
    params = serving.matmul_params(model) / t
    weights = max(2 * params / bandwidth, 2 * b * params / peak)
    cache = serving.kv_cache_bytes(model.layers, model.kv_heads, model.head_dim, context_len, b) / t
    attention = max(cache / bandwidth, 4 * b * model.layers * model.hidden * context_len / t / peak)
    one_all_reduce = budget.group_collective_time("all_reduce", cluster, t, 1, 2 * b * model.hidden)
    return weights + attention + 2 * model.layers * one_all_reduce
""",
        ),
        (
            "memory rooflines only (the multiplies never bind)",
            """
def time_per_output_token(model, cluster, tensor_parallel, sequences, context_len):
    t, b = tensor_parallel, sequences
    bandwidth = cluster.accelerator.hbm_bandwidth_bytes_per_s
    cache = serving.kv_cache_bytes(model.layers, model.kv_heads, model.head_dim, context_len, b) / t
    reads = (2 * serving.matmul_params(model) / t + cache) / bandwidth
    one_all_reduce = budget.group_collective_time("all_reduce", cluster, t, 1, 2 * b * model.hidden)
    return reads + 2 * model.layers * one_all_reduce
""",
        ),
    ],
    "q5": [
        (
            "strictly above the threshold: reaching it does not count",
            """
def knee_concurrency(concurrencies, output_tokens_per_s, fraction=0.9):
    threshold = fraction * max(output_tokens_per_s)
    for concurrency, rate in zip(concurrencies, output_tokens_per_s):
        if rate > threshold:
            return int(concurrency)
""",
        ),
        (
            "the concurrency of the highest throughput",
            """
def knee_concurrency(concurrencies, output_tokens_per_s, fraction=0.9):
    rates = list(output_tokens_per_s)
    return int(concurrencies[rates.index(max(rates))])
""",
        ),
        (
            "a fraction of the last point's throughput, not of the maximum",
            """
def knee_concurrency(concurrencies, output_tokens_per_s, fraction=0.9):
    threshold = fraction * list(output_tokens_per_s)[-1]
    for concurrency, rate in zip(concurrencies, output_tokens_per_s):
        if rate >= threshold:
            return int(concurrency)
""",
        ),
        (
            "the position in the sweep instead of the concurrency",
            """
def knee_concurrency(concurrencies, output_tokens_per_s, fraction=0.9):
    threshold = fraction * max(output_tokens_per_s)
    for index, rate in enumerate(output_tokens_per_s):
        if rate >= threshold:
            return index
""",
        ),
        (
            "90 % whatever the fraction",
            """
def knee_concurrency(concurrencies, output_tokens_per_s, fraction=0.9):
    threshold = 0.9 * max(output_tokens_per_s)
    for concurrency, rate in zip(concurrencies, output_tokens_per_s):
        if rate >= threshold:
            return int(concurrency)
""",
        ),
        (
            "the last concurrency below the threshold",
            """
def knee_concurrency(concurrencies, output_tokens_per_s, fraction=0.9):
    threshold = fraction * max(output_tokens_per_s)
    below = [c for c, rate in zip(concurrencies, output_tokens_per_s) if rate < threshold]
    return int(below[-1]) if below else int(concurrencies[0])
""",
        ),
    ],
}
