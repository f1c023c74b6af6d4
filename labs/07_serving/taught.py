"""Where lab 7's graded questions are taught (issue 25): per question, the course_lib names its solution uses and
the facts it needs (a key with a space, a phrase of the lesson), each with where a learner meets it first: a lesson
("03_parallelism"), no later than those the lab's "What you need" names, or "intro" (this lab's own text before the
question). tests/test_taught.py checks that the names are those the solution uses and that each appears there."""

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
}
