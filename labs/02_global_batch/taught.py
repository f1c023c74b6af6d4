"""Where lab 2's graded questions are taught (issue 25): per question, the course_lib names its solution uses and
the facts it needs (a key with a space, a phrase of the lesson), each with where a learner meets it first: a lesson
("03_parallelism"), no later than those the lab's "What you need" names, or "intro" (this lab's own text before the
question). tests/test_taught.py checks that the names are those the solution uses and that each appears there."""

TAUGHT = {
    "q1": {
        r"B_\text{global} = b_\text{micro} \times N_\text{acc} \times N_\text{dp}": "03_parallelism",
        "Tensor- and pipeline-parallel workers cooperate on those same examples": "03_parallelism",
    },
    "q2": {r"B_\text{global} = b_\text{micro} \times N_\text{acc} \times N_\text{dp}": "03_parallelism"},
    "q3": {"parallelism.pipeline_bubble_fraction": "03_parallelism"},
}
