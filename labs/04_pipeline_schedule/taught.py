"""Where lab 4's graded questions are taught (issue 25): per question, the course_lib names its solution uses and
the facts it needs (a key with a space, a phrase of the lesson), each with where a learner meets it first: a lesson
("03_parallelism"), no later than those the lab's "What you need" names, or "intro" (this lab's own text before the
question). tests/test_taught.py checks that the names are those the solution uses and that each appears there."""

TAUGHT = {
    "q1": {r"its bubble $(p-1)/m$ or $(p-1)/(v\,m)$": "03_parallelism"},
    "q2": {"parallelism.pipeline_bubble_fraction": "03_parallelism"},
    "q3": {r"its bubble $(p-1)/m$ or $(p-1)/(v\,m)$": "03_parallelism"},
    "q4": {"its activation memory": "03_parallelism"},
}
