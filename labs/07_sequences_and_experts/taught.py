"""Where lab 7's graded questions are taught: the names and facts each needs, with the lesson (or "intro") that
teaches it; tests/test_taught.py explains the format and checks it."""

TAUGHT = {
    "q1": {
        "dispatch and combine, forward and backward": "intro",
        "keeps $1/e$ of its payload": "06_sequences_and_experts",
    },
    "q2": {
        "memory.total": "03_parallelism",
        "parallelism.memory_breakdown": "03_parallelism",
        "stores the activations of $s/c$ tokens": "06_sequences_and_experts",
    },
    "q3": {
        "pipeline.pipeline_schedule": "03_parallelism",
        "timeline.bubble_fraction": "03_parallelism",
        r"$(p-1)(t_\text{F} + t_\text{B} - t_\text{W})$": "06_sequences_and_experts",
        r"(p-1)\max(t_\text{F},\ t_\text{B},\ t_\text{F} + t_\text{B} - t_\text{W})": "06_sequences_and_experts",
    },
    "q4": {
        "budget.group_collective_time": "04_communication_budget",
        "cluster.accelerator.peak": "04_communication_budget",
        "cluster.devices_per_node": "04_communication_budget",
        "model.experts_per_token": "06_sequences_and_experts",
        "model.hidden": "01_mac",
        "model.routed_matmul_weights_per_layer": "intro",
        "dispatch and combine, forward and backward": "intro",
    },
}
