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
def ring_allreduce_over_link_s(ranks, payload_bytes, link, devices_per_node, latency_s):
    bandwidth = link.bandwidth_bytes_per_s
    if link.scope == "per node":
        bandwidth /= devices_per_node
    return collectives.ring_allreduce_time(ranks, payload_bytes, bandwidth, latency_s)
""",
        ),
        (
            "bits read as bytes: the figure, already in bytes/s, divided by 8 again",
            """
def ring_allreduce_over_link_s(ranks, payload_bytes, link, devices_per_node, latency_s):
    bandwidth = link.bandwidth_bytes_per_s / 8
    if link.direction == "two-way":
        bandwidth /= 2
    if link.scope == "per node":
        bandwidth /= devices_per_node
    return collectives.ring_allreduce_time(ranks, payload_bytes, bandwidth, latency_s)
""",
        ),
        (
            "the per-node figure given to one GPU",
            """
def ring_allreduce_over_link_s(ranks, payload_bytes, link, devices_per_node, latency_s):
    bandwidth = link.bandwidth_bytes_per_s
    if link.direction == "two-way":
        bandwidth /= 2
    return collectives.ring_allreduce_time(ranks, payload_bytes, bandwidth, latency_s)
""",
        ),
        (
            "every figure shared by the node's GPUs, per-GPU ones too",
            """
def ring_allreduce_over_link_s(ranks, payload_bytes, link, devices_per_node, latency_s):
    bandwidth = link.bandwidth_bytes_per_s / devices_per_node
    if link.direction == "two-way":
        bandwidth /= 2
    return collectives.ring_allreduce_time(ranks, payload_bytes, bandwidth, latency_s)
""",
        ),
        (
            "a per-node figure divided by 8 (bits to bytes, or the DGX's 8 adapters), not by the node's GPUs",
            """
def ring_allreduce_over_link_s(ranks, payload_bytes, link, devices_per_node, latency_s):
    bandwidth = link.bandwidth_bytes_per_s
    if link.direction == "two-way":
        bandwidth /= 2
    if link.scope == "per node":
        bandwidth /= 8
    return collectives.ring_allreduce_time(ranks, payload_bytes, bandwidth, latency_s)
""",
        ),
        (
            "every NVLink halved, by its family instead of its direction",
            """
def ring_allreduce_over_link_s(ranks, payload_bytes, link, devices_per_node, latency_s):
    bandwidth = link.bandwidth_bytes_per_s
    if link.family == "NVLink":
        bandwidth /= 2
    if link.scope == "per node":
        bandwidth /= devices_per_node
    return collectives.ring_allreduce_time(ranks, payload_bytes, bandwidth, latency_s)
""",
        ),
        (
            "calls course_lib's conversion",
            """
def ring_allreduce_over_link_s(ranks, payload_bytes, link, devices_per_node, latency_s):
    bandwidth = link.one_way_bytes_per_s_per_device(devices_per_node)
    return collectives.ring_allreduce_time(ranks, payload_bytes, bandwidth, latency_s)
""",
        ),
    ],
}
