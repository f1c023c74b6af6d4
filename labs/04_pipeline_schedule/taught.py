"""Where lab 4's graded questions are taught: the names and facts each needs, with the lesson (or "intro") that
teaches it; tests/test_taught.py explains the format and checks it."""

TAUGHT = {
    "q1": {r"its bubble $(p-1)/m$ or $(p-1)/(v\,m)$": "03_parallelism"},
    "q2": {"parallelism.pipeline_bubble_fraction": "03_parallelism"},
    "q3": {r"its bubble $(p-1)/m$ or $(p-1)/(v\,m)$": "03_parallelism"},
    "q4": {"its activation memory": "03_parallelism"},
}
