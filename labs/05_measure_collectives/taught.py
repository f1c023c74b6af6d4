"""Where lab 5's graded questions are taught (issue 25): per question, the course_lib names its solution uses and
the facts it needs (a key with a space, a phrase of the lesson), each with where a learner meets it first: a lesson
("03_parallelism"), no later than those the lab's "What you need" names, or "intro" (this lab's own text before the
question). tests/test_taught.py checks that the names are those the solution uses and that each appears there."""

TAUGHT = {
    "q1": {"the fit minimises **relative** errors": "05_measure"},
    "q2": {"busbw = algbw × $2(p-1)/p$ for all-reduce": "02_nccl"},
    "q3": {"Which algorithm wins where": "05_measure"},
    "q4": {"keeps the **maximum over ranks**": "05_measure"},
    "q5": {
        "budget.step_time": "04_communication_budget",
        "measure.CalibrationWarning": "05_measure",
        "measure.calibrate_cluster": "05_measure",
        "measure.read_nccl_tests": "05_measure",
    },
}
