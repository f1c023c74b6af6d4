"""Where lab 6's graded questions are taught: the names and facts each needs, with the lesson (or "intro") that
teaches it; tests/test_taught.py explains the format and checks it."""

TAUGHT = {
    "q1": {
        "model.head_dim": "04_communication_budget",
        "model.kv_heads": "04_communication_budget",
        "model.layers": "01_mac",
        "a K and a V for each layer and each KV head": "04_communication_budget",
    },
    "q2": {
        "until the arithmetic catches up with the reads": "04_communication_budget",
        "only a whole batch of 296 makes them take longer": "04_communication_budget",
    },
    "q3": {
        "cluster.accelerator.hbm_capacity_bytes": "04_communication_budget",
        "cluster.devices": "03_parallelism",
        "memory.total": "03_parallelism",
        "model.heads": "03_parallelism",
        "model.kv_heads": "04_communication_budget",
        "serving.decode_step": "04_communication_budget",
        "serving.serving_memory": "04_communication_budget",
        "The t at which decode latency stops falling": "04_communication_budget",
    },
    "q4": {
        "budget.group_collective_time": "04_communication_budget",
        "cluster.accelerator.hbm_bandwidth_bytes_per_s": "04_communication_budget",
        "cluster.accelerator.peak": "04_communication_budget",
        "model.head_dim": "04_communication_budget",
        "model.hidden": "01_mac",
        "model.kv_heads": "04_communication_budget",
        "model.layers": "01_mac",
        "serving.DECODE_COMPUTE_EFFICIENCY": "04_communication_budget",
        "serving.kv_cache_bytes": "04_communication_budget",
        "serving.matmul_params": "04_communication_budget",
        "two all-reduces per layer": "04_communication_budget",
    },
    "q5": {
        "the smallest concurrency whose throughput reaches 90 % of the most": "intro",
    },
}
