"""Where lab 1's graded questions are taught: the names and facts each needs, with the lesson (or "intro") that
teaches it; tests/test_taught.py explains the format and checks it."""

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
