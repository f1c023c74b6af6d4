"""Lab 3's plausible wrong answers, {question: [(mistake, source of the answer cell), ...]}: tests/test_grading.py
checks that each scores zero on its question and leaves the others at full marks."""

WRONG = {
    "q1": [
        (
            "stage 1 also partitions the gradients",
            """
def model_state_bytes(params, data_parallel, stage):
    return (2 * params / (data_parallel if stage >= 3 else 1) + 2 * params / (data_parallel if stage >= 1 else 1)
            + 12 * params / (data_parallel if stage >= 1 else 1))
""",
        ),
        (
            "no fp32 master copy (K = 8)",
            """
def model_state_bytes(params, data_parallel, stage):
    return (2 * params / (data_parallel if stage >= 3 else 1) + 2 * params / (data_parallel if stage >= 2 else 1)
            + 8 * params / (data_parallel if stage >= 1 else 1))
""",
        ),
        (
            "stage 3 does not partition the parameters",
            """
def model_state_bytes(params, data_parallel, stage):
    return (2 * params + 2 * params / (data_parallel if stage >= 2 else 1)
            + 12 * params / (data_parallel if stage >= 1 else 1))
""",
        ),
        (
            "calls course_lib's answer",
            """
def model_state_bytes(params, data_parallel, stage):
    return parallelism.zero_model_state_bytes(params, data_parallel, stage)
""",
        ),
    ],
    "q2": [
        (
            "rounds down",
            """
def smallest_data_parallel(params, stage, capacity_bytes):
    floor = {0: 16, 1: 4, 2: 2, 3: 0}[stage] * params
    if floor > capacity_bytes or (stage > 0 and floor == capacity_bytes):
        return None
    if stage == 0:
        return 1
    return max(1, int((16 * params - floor) / (capacity_bytes - floor)))
""",
        ),
        (
            "must fit with room to spare (<)",
            """
def smallest_data_parallel(params, stage, capacity_bytes):
    floor = {0: 16, 1: 4, 2: 2, 3: 0}[stage] * params
    if floor >= capacity_bytes:
        return None
    replicas = 1
    while parallelism.zero_model_state_bytes(params, replicas, stage) >= capacity_bytes:
        replicas += 1
        if stage == 0:
            return None
    return replicas
""",
        ),
        (
            "ignores the floors",
            """
import math
def smallest_data_parallel(params, stage, capacity_bytes):
    return max(1, math.ceil(16 * params / capacity_bytes))
""",
        ),
    ],
    "q3": [
        (
            "one past the largest that fits",
            """
def largest_micro_batch(model, plan, capacity_bytes):
    micro_batch = 1
    plans = lambda b: plan.replace(micro_batch=b)
    while parallelism.memory_breakdown(model, plans(micro_batch), calibration=None).total <= capacity_bytes:
        micro_batch += 1
    return micro_batch
""",
        ),
        (
            "1 when nothing fits",
            """
def largest_micro_batch(model, plan, capacity_bytes):
    micro_batch = 1
    plans = lambda b: plan.replace(micro_batch=b)
    while parallelism.memory_breakdown(model, plans(micro_batch + 1), calibration=None).total <= capacity_bytes:
        micro_batch += 1
    return micro_batch
""",
        ),
    ],
    "q4": [
        (
            "the fp32 gradient buffer is never sharded",
            """
def recipe_model_state_bytes(params, data_parallel, stage, recipe):
    p, g, b, o = recipe
    return (p * params / (data_parallel if stage >= 3 else 1) + g * params / (data_parallel if stage >= 2 else 1)
            + b * params + o * params / (data_parallel if stage >= 1 else 1))
""",
        ),
        (
            "ZeRO's three terms only (the buffer left out)",
            """
def recipe_model_state_bytes(params, data_parallel, stage, recipe):
    p, g, b, o = recipe
    return (p * params / (data_parallel if stage >= 3 else 1) + g * params / (data_parallel if stage >= 2 else 1)
            + o * params / (data_parallel if stage >= 1 else 1))
""",
        ),
        (
            "stage 1 also shards the gradients",
            """
def recipe_model_state_bytes(params, data_parallel, stage, recipe):
    p, g, b, o = recipe
    return (p * params / (data_parallel if stage >= 3 else 1) + (g + b) * params / (data_parallel if stage >= 1 else 1)
            + o * params / (data_parallel if stage >= 1 else 1))
""",
        ),
    ],
}
