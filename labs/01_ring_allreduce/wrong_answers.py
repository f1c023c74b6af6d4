"""Lab 1's plausible wrong answers, {question: [(mistake, source of the answer cell), ...]}: tests/test_grading.py
checks that each scores zero on its question and leaves the others at full marks."""

WRONG = {
    "q1": [
        (
            "2p steps instead of 2(p-1)",
            """
def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    return 2 * ranks * latency_s + 2 * (ranks - 1) / ranks * payload_bytes / bandwidth_bytes_per_s
""",
        ),
        (
            "two-way bandwidth",
            """
def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    steps = 2 * (ranks - 1)
    return steps * latency_s + steps * payload_bytes / ranks / (2 * bandwidth_bytes_per_s)
""",
        ),
        (
            "the whole payload in every step",
            """
def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    steps = 2 * (ranks - 1)
    return steps * latency_s + steps * payload_bytes / bandwidth_bytes_per_s
""",
        ),
        (
            "reduce-scatter only",
            """
def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    return (ranks - 1) * latency_s + (ranks - 1) / ranks * payload_bytes / bandwidth_bytes_per_s
""",
        ),
        (
            "latency once per phase",
            """
def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    return 2 * latency_s + 2 * (ranks - 1) / ranks * payload_bytes / bandwidth_bytes_per_s
""",
        ),
        (
            "calls course_lib's answer",
            """
def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    return collectives.ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s)
""",
        ),
    ],
    "q2": [
        (
            "the ring's own crossover p·α·B",
            """
def ring_beats_recursive_doubling_bytes(ranks, bandwidth_bytes_per_s, latency_s):
    return ranks * latency_s * bandwidth_bytes_per_s
""",
        ),
        (
            "a ring sending 2S instead of 2(p-1)/p·S",
            """
def ring_beats_recursive_doubling_bytes(ranks, bandwidth_bytes_per_s, latency_s):
    return (2 * (ranks - 1) - math.log2(ranks)) * latency_s * bandwidth_bytes_per_s / (math.log2(ranks) - 2)
""",
        ),
        (
            "Rabenseifner's 2 lg p steps for recursive doubling",
            """
def ring_beats_recursive_doubling_bytes(ranks, bandwidth_bytes_per_s, latency_s):
    lg = math.log2(ranks)
    return (2 * (ranks - 1) - 2 * lg) * latency_s * bandwidth_bytes_per_s / (lg - 2 * (ranks - 1) / ranks)
""",
        ),
        (
            "calls course_lib's answer",
            """
def ring_beats_recursive_doubling_bytes(ranks, bandwidth_bytes_per_s, latency_s):
    return collectives.equal_time_payload_bytes(
        "all_reduce", ranks, bandwidth_bytes_per_s, latency_s, "ring", "recursive_doubling"
    )
""",
        ),
    ],
    "q3": [
        (
            "the all-reduce factor for every collective",
            """
def busbw_bytes_per_s(op, ranks, size_bytes, time_s):
    return size_bytes / time_s * 2 * (ranks - 1) / ranks
""",
        ),
        (
            "(n-1)/n for all-reduce too",
            """
def busbw_bytes_per_s(op, ranks, size_bytes, time_s):
    return size_bytes / time_s * (1.0 if op == "broadcast" else (ranks - 1) / ranks)
""",
        ),
        (
            "the factor inverted",
            """
def busbw_bytes_per_s(op, ranks, size_bytes, time_s):
    factor = {"all_reduce": 2 * (ranks - 1) / ranks, "broadcast": 1.0}.get(op, (ranks - 1) / ranks)
    return size_bytes / time_s / factor
""",
        ),
        (
            "algbw, no factor",
            """
def busbw_bytes_per_s(op, ranks, size_bytes, time_s):
    return size_bytes / time_s
""",
        ),
    ],
    "q4": [
        (
            "NVLink's two-way figure",
            """
nvlink_allreduce_s = collectives.ring_allreduce_time(8, 2e9, 900e9, 1e-6)
infiniband_allreduce_s = collectives.ring_allreduce_time(16, 2e9, 50e9, 5e-6)
""",
        ),
        (
            "bits read as bytes",
            """
nvlink_allreduce_s = collectives.ring_allreduce_time(8, 2e9, 450e9, 1e-6)
infiniband_allreduce_s = collectives.ring_allreduce_time(16, 2e9, 400e9, 5e-6)
""",
        ),
        (
            "the network's latency for NVLink",
            """
nvlink_allreduce_s = collectives.ring_allreduce_time(8, 2e9, 450e9, 5e-6)
infiniband_allreduce_s = collectives.ring_allreduce_time(16, 2e9, 50e9, 5e-6)
""",
        ),
        (
            "the per-node InfiniBand preset given to one GPU",
            """
from course_lib import hardware

nvlink_allreduce_s = collectives.ring_allreduce_time(8, 2e9, 450e9, 1e-6)
infiniband = hardware.INFINIBAND_NDR_8X.one_way_bytes_per_s_per_device(devices_per_node=1)
infiniband_allreduce_s = collectives.ring_allreduce_time(16, 2e9, infiniband, 5e-6)
""",
        ),
        (
            "NVLink's preset figure as published",
            """
from course_lib import hardware

nvlink_allreduce_s = collectives.ring_allreduce_time(8, 2e9, hardware.NVLINK4.bandwidth_bytes_per_s, 1e-6)
infiniband_allreduce_s = collectives.ring_allreduce_time(16, 2e9, 50e9, 5e-6)
""",
        ),
    ],
}
