"""Lab 5's plausible wrong answers, {question: [(mistake, source of the answer cell), ...]}: tests/test_grading.py
checks that each scores zero on its question and leaves the others at full marks."""

WRONG = {
    "q1": [
        (
            "tensor-parallel all-reduces counted once per layer",
            """
def transfers_per_axis(model, plan):
    t, p, d, b, m, v = plan.sizes
    activation = 2 * b * model.seq_len * model.hidden
    calls = model.layers // p * m * (2 if plan.sequence_parallel else 1)
    return {"tensor": (activation, calls) if t > 1 else (0, 0),
            "pipeline": (activation / t, 2 * m * v) if p > 1 else (0, 0)}
""",
        ),
        (
            "pipeline sends counted in one direction only",
            """
def transfers_per_axis(model, plan):
    t, p, d, b, m, v = plan.sizes
    activation = 2 * b * model.seq_len * model.hidden
    pairs = model.layers // p * m
    calls = (2 * pairs * (2 if plan.recompute == "full" else 1) + 2 * pairs) * (2 if plan.sequence_parallel else 1)
    return {"tensor": (activation, calls) if t > 1 else (0, 0),
            "pipeline": (activation / t, m * v) if p > 1 else (0, 0)}
""",
        ),
        (
            "sequence parallelism counted as all-reduces (one call each)",
            """
def transfers_per_axis(model, plan):
    t, p, d, b, m, v = plan.sizes
    activation = 2 * b * model.seq_len * model.hidden
    pairs = model.layers // p * m
    calls = 2 * pairs * (2 if plan.recompute == "full" else 1) + 2 * pairs
    return {"tensor": (activation, calls) if t > 1 else (0, 0),
            "pipeline": (activation / t, 2 * m * v) if p > 1 else (0, 0)}
""",
        ),
        (
            "virtual stages ignored",
            """
def transfers_per_axis(model, plan):
    t, p, d, b, m, v = plan.sizes
    activation = 2 * b * model.seq_len * model.hidden
    pairs = model.layers // p * m
    calls = (2 * pairs * (2 if plan.recompute == "full" else 1) + 2 * pairs) * (2 if plan.sequence_parallel else 1)
    return {"tensor": (activation, calls) if t > 1 else (0, 0),
            "pipeline": (activation / t, 2 * m) if p > 1 else (0, 0)}
""",
        ),
        (
            "full recomputation does not repeat the forward collectives",
            """
def transfers_per_axis(model, plan):
    t, p, d, b, m, v = plan.sizes
    activation = 2 * b * model.seq_len * model.hidden
    calls = 4 * (model.layers // p) * m * (2 if plan.sequence_parallel else 1)
    return {"tensor": (activation, calls) if t > 1 else (0, 0),
            "pipeline": (activation / t, 2 * m * v) if p > 1 else (0, 0)}
""",
        ),
        (
            "calls course_lib's answer",
            """
def transfers_per_axis(model, plan):
    out = {"tensor": (0, 0), "pipeline": (0, 0)}
    for axis in out:
        rows = [x for x in parallelism.boundary_tensors(model, plan) if x.axis == axis]
        if rows:
            out[axis] = (rows[0].payload_bytes, sum(x.calls_per_step for x in rows))
    return out
""",
        ),
    ],
    "q2": [
        (
            "t > devices per node, the placement ignored",
            """
def tensor_group_leaves_node(tensor_parallel, data_parallel, devices_per_node, tensor_innermost):
    return tensor_parallel > devices_per_node
""",
        ),
        (
            "t ≥ devices per node (a full node counted as leaving it)",
            """
def tensor_group_leaves_node(tensor_parallel, data_parallel, devices_per_node, tensor_innermost):
    stride = 1 if tensor_innermost else data_parallel
    return tensor_parallel * stride >= devices_per_node
""",
        ),
    ],
    "q3": [
        (
            "every micro-batch's backward pass hides it (the gradients are not final until the last one)",
            """
def exposed_reduce_scatter_s(model, plan, cluster):
    gradients = next(x for x in parallelism.step_transfers(model, plan) if x.axis == "data" and x.tensor == "gradients")
    reduce_s = budget.transfer_time_per_call(gradients, plan, cluster)
    shape = (model.seq_len, model.layers, model.hidden, model.vocab)
    forward = compute.transformer_forward_flops(plan.micro_batch, *shape)
    iteration = compute.transformer_flops_per_iteration(plan.micro_batch, *shape, recompute=plan.recompute)
    rate = 0.5 * cluster.accelerator.peak("bf16")
    backward_s = (iteration - forward) / (plan.tensor_parallel * plan.pipeline_parallel) / rate
    return max(0.0, reduce_s - plan.grad_accum_steps * backward_s)
""",
        ),
        (
            "the window is the whole iteration of a micro-batch, forward included",
            """
def exposed_reduce_scatter_s(model, plan, cluster):
    gradients = next(x for x in parallelism.step_transfers(model, plan) if x.axis == "data" and x.tensor == "gradients")
    reduce_s = budget.transfer_time_per_call(gradients, plan, cluster)
    shape = (model.seq_len, model.layers, model.hidden, model.vocab)
    iteration = compute.transformer_flops_per_iteration(plan.micro_batch, *shape, recompute=plan.recompute)
    window_s = iteration / (plan.tensor_parallel * plan.pipeline_parallel) / (0.5 * cluster.accelerator.peak("bf16"))
    return max(0.0, reduce_s - window_s)
""",
        ),
        (
            "a node's aggregate network bandwidth for the reduce-scatter",
            """
def exposed_reduce_scatter_s(model, plan, cluster):
    from dataclasses import replace
    aggregate = replace(cluster, inter_node_link=replace(cluster.inter_node_link, scope="per GPU"))
    gradients = next(x for x in parallelism.step_transfers(model, plan) if x.axis == "data" and x.tensor == "gradients")
    reduce_s = budget.transfer_time_per_call(gradients, plan, aggregate)
    shape = (model.seq_len, model.layers, model.hidden, model.vocab)
    forward = compute.transformer_forward_flops(plan.micro_batch, *shape)
    iteration = compute.transformer_flops_per_iteration(plan.micro_batch, *shape, recompute=plan.recompute)
    rate = 0.5 * cluster.accelerator.peak("bf16")
    backward_s = (iteration - forward) / (plan.tensor_parallel * plan.pipeline_parallel) / rate
    return max(0.0, reduce_s - backward_s)
""",
        ),
        (
            "no floor at 0: a backward pass longer than the reduce-scatter gives a negative time",
            """
def exposed_reduce_scatter_s(model, plan, cluster):
    gradients = next(x for x in parallelism.step_transfers(model, plan) if x.axis == "data" and x.tensor == "gradients")
    reduce_s = budget.transfer_time_per_call(gradients, plan, cluster)
    shape = (model.seq_len, model.layers, model.hidden, model.vocab)
    forward = compute.transformer_forward_flops(plan.micro_batch, *shape)
    iteration = compute.transformer_flops_per_iteration(plan.micro_batch, *shape, recompute=plan.recompute)
    rate = 0.5 * cluster.accelerator.peak("bf16")
    backward_s = (iteration - forward) / (plan.tensor_parallel * plan.pipeline_parallel) / rate
    return reduce_s - backward_s
""",
        ),
    ],
    "q4": [
        (
            "a node's aggregate network bandwidth for one collective",
            """
def critical_path_communication_s(model, plan, cluster):
    from dataclasses import replace
    aggregate = replace(cluster, inter_node_link=replace(cluster.inter_node_link, scope="per GPU"))
    return sum(x.calls_per_step * budget.transfer_time_per_call(x, plan, aggregate)
               for x in parallelism.boundary_tensors(model, plan) if x.phase == "none")
""",
        ),
        (
            "pipeline sends counted in one direction only",
            """
def critical_path_communication_s(model, plan, cluster):
    return sum(x.calls_per_step * budget.transfer_time_per_call(x, plan, cluster)
               for x in parallelism.boundary_tensors(model, plan)
               if x.phase == "none" and not (x.axis == "pipeline" and "backward" in x.tensor))
""",
        ),
        (
            "the parameter all-gather after the optimizer step left out",
            """
def critical_path_communication_s(model, plan, cluster):
    return sum(x.calls_per_step * budget.transfer_time_per_call(x, plan, cluster)
               for x in parallelism.boundary_tensors(model, plan) if x.axis in ("tensor", "pipeline"))
""",
        ),
        (
            "one call per transfer instead of its calls per step",
            """
def critical_path_communication_s(model, plan, cluster):
    return sum(budget.transfer_time_per_call(x, plan, cluster)
               for x in parallelism.boundary_tensors(model, plan) if x.phase == "none")
""",
        ),
        (
            "calls course_lib's answer",
            """
def critical_path_communication_s(model, plan, cluster):
    step = budget.step_time(model, plan, cluster, calibration=None)
    return step.exposed_s["tensor"] + step.exposed_s["pipeline"]
""",
        ),
    ],
}
