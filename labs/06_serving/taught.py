"""Where lab 6's graded questions are taught: the names and facts each needs, with the lesson (or "intro") that
teaches it; tests/test_taught.py explains the format and checks it."""

TAUGHT = {
    "q1": {
        "model.head_dim": "10_serving",
        "model.kv_heads": "10_serving",
        "model.layers": "01_mac",
        "a K and a V for each layer and each KV head": "10_serving",
    },
    "q2": {
        "until the arithmetic catches up with the reads": "10_serving",
        "only a whole batch of 296 makes them take longer": "10_serving",
    },
    "q3": {
        "cluster.accelerator.hbm_capacity_bytes": "04_communication_budget",
        "cluster.devices": "03_parallelism",
        "memory.total": "03_parallelism",
        "model.heads": "03_parallelism",
        "model.kv_heads": "10_serving",
        "serving.decode_step": "10_serving",
        "serving.serving_memory": "10_serving",
        "The t at which decode latency stops falling": "10_serving",
    },
    "q4": {
        "budget.group_collective_time": "04_communication_budget",
        "cluster.accelerator.hbm_bandwidth_bytes_per_s": "10_serving",
        "cluster.accelerator.peak": "10_serving",
        "model.head_dim": "10_serving",
        "model.hidden": "01_mac",
        "model.kv_heads": "10_serving",
        "model.layers": "01_mac",
        "serving.DECODE_COMPUTE_EFFICIENCY": "10_serving",
        "serving.kv_cache_bytes": "10_serving",
        "serving.matmul_params": "10_serving",
        "two all-reduces per layer": "10_serving",
    },
    "q5": {
        "the smallest concurrency whose throughput reaches 90 % of the most": "intro",
    },
}
