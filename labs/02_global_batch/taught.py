"""Where lab 2's graded questions are taught: the names and facts each needs, with the lesson (or "intro") that
teaches it; tests/test_taught.py explains the format and checks it."""

TAUGHT = {
    "q1": {
        r"B_\text{global} = b_\text{micro} \times N_\text{acc} \times N_\text{dp}": "03_parallelism",
        "Tensor- and pipeline-parallel workers cooperate on those same examples": "03_parallelism",
    },
    "q2": {r"B_\text{global} = b_\text{micro} \times N_\text{acc} \times N_\text{dp}": "03_parallelism"},
    "q3": {"parallelism.pipeline_bubble_fraction": "03_parallelism"},
}
