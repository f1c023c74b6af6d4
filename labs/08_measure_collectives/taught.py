"""Where lab 8's graded questions are taught: the names and facts each needs, with the lesson (or "intro") that
teaches it; tests/test_taught.py explains the format and checks it."""

TAUGHT = {
    "q1": {"the fit minimises **relative** errors": "07_measure"},
    "q2": {"busbw = algbw × $2(p-1)/p$ for all-reduce": "02_nccl"},
    "q3": {"Which algorithm wins where": "07_measure"},
    "q4": {"keeps the **maximum over ranks**": "07_measure"},
    "q5": {
        "budget.step_time": "04_communication_budget",
        "measure.CalibrationWarning": "07_measure",
        "measure.calibrate_cluster": "07_measure",
        "measure.read_nccl_tests": "07_measure",
    },
}
