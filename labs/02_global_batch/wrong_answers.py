"""Lab 2's plausible wrong answers, {question: [(mistake, source of the answer cell), ...]}: tests/test_grading.py
checks that each scores zero on its question and leaves the others at full marks."""

WRONG = {
    "q1": [
        (
            "tensor and pipeline sizes multiply the batch",
            """
def global_batch_samples(micro_batch, grad_accum_steps, devices, tensor_parallel, pipeline_parallel):
    if devices % (tensor_parallel * pipeline_parallel):
        raise ValueError("t·p must divide devices")
    return micro_batch * grad_accum_steps * devices
""",
        ),
        (
            "only the tensor size divides the devices",
            """
def global_batch_samples(micro_batch, grad_accum_steps, devices, tensor_parallel, pipeline_parallel):
    if devices % (tensor_parallel * pipeline_parallel):
        raise ValueError("t·p must divide devices")
    return micro_batch * grad_accum_steps * (devices // tensor_parallel)
""",
        ),
        (
            "no ValueError for an uneven split",
            """
def global_batch_samples(micro_batch, grad_accum_steps, devices, tensor_parallel, pipeline_parallel):
    return micro_batch * grad_accum_steps * (devices // (tensor_parallel * pipeline_parallel))
""",
        ),
    ],
    "q2": [
        (
            "tensor and pipeline sizes multiply the batch",
            """
def accumulation_steps(target_global_batch, micro_batch, devices, tensor_parallel, pipeline_parallel):
    steps, remainder = divmod(target_global_batch, micro_batch * devices)
    if remainder or steps < 1:
        raise ValueError("no whole number of steps")
    return steps
""",
        ),
        (
            "rounds up instead of raising",
            """
import math
def accumulation_steps(target_global_batch, micro_batch, devices, tensor_parallel, pipeline_parallel):
    return math.ceil(target_global_batch / (micro_batch * devices // (tensor_parallel * pipeline_parallel)))
""",
        ),
    ],
    "q3": [
        (
            "tokens counted as samples",
            """
def accumulation_and_bubble(tokens_per_step, sequence_tokens, micro_batch, devices, tensor_parallel, pipeline_parallel):
    if devices % (tensor_parallel * pipeline_parallel):
        raise ValueError("t·p must divide devices")
    replicas = devices // (tensor_parallel * pipeline_parallel)
    steps, remainder = divmod(tokens_per_step, micro_batch * replicas)
    if remainder or steps < 1:
        raise ValueError("no whole number of steps")
    return steps, parallelism.pipeline_bubble_fraction(pipeline_parallel, steps)
""",
        ),
        (
            "every device a replica",
            """
def accumulation_and_bubble(tokens_per_step, sequence_tokens, micro_batch, devices, tensor_parallel, pipeline_parallel):
    if devices % (tensor_parallel * pipeline_parallel):
        raise ValueError("t·p must divide devices")
    steps, remainder = divmod(tokens_per_step, micro_batch * devices * sequence_tokens)
    if remainder or steps < 1:
        raise ValueError("no whole number of steps")
    return steps, parallelism.pipeline_bubble_fraction(pipeline_parallel, steps)
""",
        ),
        (
            "the bubble as a share of the step",
            """
def accumulation_and_bubble(tokens_per_step, sequence_tokens, micro_batch, devices, tensor_parallel, pipeline_parallel):
    if devices % (tensor_parallel * pipeline_parallel):
        raise ValueError("t·p must divide devices")
    replicas = devices // (tensor_parallel * pipeline_parallel)
    steps, remainder = divmod(tokens_per_step, micro_batch * replicas * sequence_tokens)
    if remainder or steps < 1:
        raise ValueError("no whole number of steps")
    return steps, (pipeline_parallel - 1) / (steps + pipeline_parallel - 1)
""",
        ),
        (
            "the bubble over every replica's micro-batches",
            """
def accumulation_and_bubble(tokens_per_step, sequence_tokens, micro_batch, devices, tensor_parallel, pipeline_parallel):
    if devices % (tensor_parallel * pipeline_parallel):
        raise ValueError("t·p must divide devices")
    replicas = devices // (tensor_parallel * pipeline_parallel)
    steps, remainder = divmod(tokens_per_step, micro_batch * replicas * sequence_tokens)
    if remainder or steps < 1:
        raise ValueError("no whole number of steps")
    return steps, parallelism.pipeline_bubble_fraction(pipeline_parallel, steps * replicas)
""",
        ),
        (
            "rounds down instead of raising",
            """
def accumulation_and_bubble(tokens_per_step, sequence_tokens, micro_batch, devices, tensor_parallel, pipeline_parallel):
    if devices % (tensor_parallel * pipeline_parallel):
        raise ValueError("t·p must divide devices")
    replicas = devices // (tensor_parallel * pipeline_parallel)
    steps = tokens_per_step // (micro_batch * replicas * sequence_tokens)
    return steps, parallelism.pipeline_bubble_fraction(pipeline_parallel, steps)
""",
        ),
    ],
}
