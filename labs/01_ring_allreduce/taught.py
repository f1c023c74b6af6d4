"""Where lab 1's graded questions are taught (issue 25): per question, the course_lib names its solution uses and
the facts it needs (a key with a space, a phrase of the lesson), each with where a learner meets it first: a lesson
("03_parallelism"), no later than those the lab's "What you need" names, or "intro" (this lab's own text before the
question). tests/test_taught.py checks that the names are those the solution uses and that each appears there."""

TAUGHT = {
    "q1": {"$2(p-1)$ steps that each move $S/p$ bytes per rank": "02_nccl"},
    "q2": {"recursive doubling and Rabenseifner need a power-of-two $p$": "02_nccl"},
    "q3": {"busbw = algbw × $2(p-1)/p$ for all-reduce": "02_nccl"},
    "q4": {
        "collectives.ring_allreduce_time": "02_nccl",
        "link.bandwidth_bytes_per_s": "02_nccl",
        "link.direction": "02_nccl",
        "link.scope": "02_nccl",
        "one-way or two-way, per GPU or per node, nominal or measured": "02_nccl",
    },
}
