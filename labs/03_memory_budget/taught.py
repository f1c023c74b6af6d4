"""Where lab 3's graded questions are taught (issue 25): per question, the course_lib names its solution uses and
the facts it needs (a key with a space, a phrase of the lesson), each with where a learner meets it first: a lesson
("03_parallelism"), no later than those the lab's "What you need" names, or "intro" (this lab's own text before the
question). tests/test_taught.py checks that the names are those the solution uses and that each appears there."""

TAUGHT = {
    "q1": {"ZeRO's Table 1 gives the per-device model-state memory": "03_parallelism"},
    "q2": {"parallelism.zero_model_state_bytes": "03_parallelism"},
    "q3": {"parallelism.memory_breakdown": "03_parallelism", "plan.replace": "intro"},
}
