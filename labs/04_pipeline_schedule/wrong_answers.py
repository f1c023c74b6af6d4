"""Lab 4's plausible wrong answers, {question: [(mistake, source of the answer cell), ...]}: tests/test_grading.py
checks that each scores zero on its question and leaves the others at full marks."""

WRONG = {
    "q1": [
        (
            "the bubble as a share of the step",
            """
def bubble_fraction(stages, microbatches, virtual_stages=1):
    return (stages - 1) / (virtual_stages * microbatches + stages - 1)
""",
        ),
        (
            "ignores the virtual stages",
            """
def bubble_fraction(stages, microbatches, virtual_stages=1):
    return (stages - 1) / microbatches
""",
        ),
        (
            "p instead of p - 1",
            """
def bubble_fraction(stages, microbatches, virtual_stages=1):
    return stages / (virtual_stages * microbatches)
""",
        ),
    ],
    "q2": [
        (
            "strictly below the budget",
            """
def microbatches_for_bubble(stages, max_bubble, virtual_stages=1):
    step = stages if virtual_stages > 1 else 1
    microbatches = step
    while parallelism.pipeline_bubble_fraction(stages, microbatches, virtual_stages) >= max_bubble:
        microbatches += step
    return microbatches
""",
        ),
        (
            "ignores the multiple of p",
            """
def microbatches_for_bubble(stages, max_bubble, virtual_stages=1):
    microbatches = 1
    while (stages - 1) / (virtual_stages * microbatches) > max_bubble:
        microbatches += 1
    return microbatches
""",
        ),
        (
            "the bubble as a share of the step",
            """
def microbatches_for_bubble(stages, max_bubble, virtual_stages=1):
    step = stages if virtual_stages > 1 else 1
    microbatches = step
    while (stages - 1) / (virtual_stages * microbatches + stages - 1) > max_bubble:
        microbatches += step
    return microbatches
""",
        ),
    ],
    "q3": [
        (
            "no bubble",
            """
def step_time_s(stages, microbatches, forward_time_s, backward_time_s):
    return microbatches * (forward_time_s + backward_time_s)
""",
        ),
        (
            "m + p stage times",
            """
def step_time_s(stages, microbatches, forward_time_s, backward_time_s):
    return (microbatches + stages) * (forward_time_s + backward_time_s)
""",
        ),
    ],
    "q4": [
        (
            "1F1B always holds p",
            """
def in_flight_microbatches(stages, microbatches, schedule):
    return microbatches if schedule == "gpipe" else stages
""",
        ),
        (
            "GPipe and 1F1B swapped",
            """
def in_flight_microbatches(stages, microbatches, schedule):
    return microbatches if schedule == "1f1b" else min(stages, microbatches)
""",
        ),
    ],
}
