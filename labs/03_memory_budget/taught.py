"""Where lab 3's graded questions are taught: the names and facts each needs, with the lesson (or "intro") that
teaches it; tests/test_taught.py explains the format and checks it."""

TAUGHT = {
    "q1": {"ZeRO's Table 1 gives the per-device model-state memory": "03_parallelism"},
    "q2": {"parallelism.zero_model_state_bytes": "03_parallelism"},
    "q3": {"parallelism.memory_breakdown": "03_parallelism", "plan.replace": "intro"},
    "q4": {"bytes per parameter before ZeRO shards them": "intro"},
}
