"""Lab 7's plausible wrong answers, {question: [(mistake, source of the answer cell), ...]}: tests/test_grading.py
checks that each scores zero on its question and leaves the others at full marks."""

WRONG = {
    "q1": [
        (
            "(e − 1)/e forgotten: the rank's own experts' share counted as sent",
            """
def moe_all_to_all_bytes(tokens, experts_per_token, hidden, expert_parallel, bytes_per_element=2):
    return 4 * tokens * experts_per_token * hidden * bytes_per_element
""",
        ),
        (
            "only the forward pass (dispatch and combine once)",
            """
def moe_all_to_all_bytes(tokens, experts_per_token, hidden, expert_parallel, bytes_per_element=2):
    one_call = tokens * experts_per_token * hidden * bytes_per_element
    return 2 * one_call * (expert_parallel - 1) / expert_parallel
""",
        ),
        (
            "k forgotten: one copy of each token",
            """
def moe_all_to_all_bytes(tokens, experts_per_token, hidden, expert_parallel, bytes_per_element=2):
    return 4 * tokens * hidden * bytes_per_element * (expert_parallel - 1) / expert_parallel
""",
        ),
        (
            "2 bytes whatever bytes_per_element",
            """
def moe_all_to_all_bytes(tokens, experts_per_token, hidden, expert_parallel, bytes_per_element=2):
    return 4 * tokens * experts_per_token * hidden * 2 * (expert_parallel - 1) / expert_parallel
""",
        ),
    ],
    "q2": [
        (
            "c ignored: every length checked with c = 1",
            """
def longest_fitting_seq_len(model, plan, seq_lens, capacity_bytes):
    alone = plan.replace(context_parallel=1, context_parallel_kind="ring")
    fitting = [s for s in seq_lens
               if parallelism.memory_breakdown(dataclasses.replace(model, seq_len=s), alone).total <= capacity_bytes]
    return max(fitting) if fitting else None
""",
        ),
        (
            "the shortest length that fits instead of the longest",
            """
def longest_fitting_seq_len(model, plan, seq_lens, capacity_bytes):
    fitting = [s for s in seq_lens
               if parallelism.memory_breakdown(dataclasses.replace(model, seq_len=s), plan).total <= capacity_bytes]
    return min(fitting) if fitting else None
""",
        ),
        (
            "the lengths taken as sorted: the last that fits before the first that does not",
            """
def longest_fitting_seq_len(model, plan, seq_lens, capacity_bytes):
    best = None
    for s in seq_lens:
        if parallelism.memory_breakdown(dataclasses.replace(model, seq_len=s), plan).total > capacity_bytes:
            break
        best = s
    return best
""",
        ),
    ],
    "q3": [
        (
            "1F1B's bubble (p − 1)/m for ZB-H1",
            """
def zb_h1_bubble_fraction(stages, microbatches, forward_time_s, backward_input_time_s, backward_weight_time_s):
    return (stages - 1) / microbatches
""",
        ),
        (
            "the ideal step without the weight gradients, m·(t_F + t_B)",
            """
def zb_h1_bubble_fraction(stages, microbatches, forward_time_s, backward_input_time_s, backward_weight_time_s):
    bubble = (stages - 1) * (forward_time_s + backward_input_time_s - backward_weight_time_s)
    return bubble / (microbatches * (forward_time_s + backward_input_time_s))
""",
        ),
        (
            "Qi et al.'s (p − 1)(t_F + t_B − t_W) for every op time (no synchronisation, t_W > t_F not handled)",
            """
def zb_h1_bubble_fraction(stages, microbatches, forward_time_s, backward_input_time_s, backward_weight_time_s):
    bubble = (stages - 1) * (forward_time_s + backward_input_time_s - backward_weight_time_s)
    return bubble / (microbatches * (forward_time_s + backward_input_time_s + backward_weight_time_s))
""",
        ),
        (
            "the bubble's share of the whole step instead of the ideal step",
            """
def zb_h1_bubble_fraction(stages, microbatches, forward_time_s, backward_input_time_s, backward_weight_time_s):
    timeline = pipeline.pipeline_schedule(
        stages, microbatches, "zb-h1", forward_time_s=forward_time_s,
        backward_time_s=backward_input_time_s + backward_weight_time_s, backward_weight_time_s=backward_weight_time_s,
    )
    return timeline.bubble_s / timeline.total_s
""",
        ),
        (
            "the general form without the first stage's wait for the first gradient, (p − 1)t_B",
            """
def zb_h1_bubble_fraction(stages, microbatches, forward_time_s, backward_input_time_s, backward_weight_time_s):
    t_F, t_B, t_W = forward_time_s, backward_input_time_s, backward_weight_time_s
    return (stages - 1) * max(t_F, t_F + t_B - t_W) / (microbatches * (t_F + t_B + t_W))
""",
        ),
        (
            "the general form without the last stage's late start, (p − 1)t_F",
            """
def zb_h1_bubble_fraction(stages, microbatches, forward_time_s, backward_input_time_s, backward_weight_time_s):
    t_F, t_B, t_W = forward_time_s, backward_input_time_s, backward_weight_time_s
    return (stages - 1) * max(t_B, t_F + t_B - t_W) / (microbatches * (t_F + t_B + t_W))
""",
        ),
    ],
    "q4": [
        (
            "the forward all-to-alls only (two calls per layer)",
            """
def expert_layer_times(model, cluster, expert_parallel, tokens):
    payload = tokens * model.experts_per_token * model.hidden * 2
    inside, across = (
        2 * budget.group_collective_time("all_to_all", cluster, expert_parallel, stride, payload)
        for stride in (1, cluster.devices_per_node)
    )
    return inside, across, 6 * tokens * model.routed_matmul_weights_per_layer / (0.5 * cluster.accelerator.peak("bf16"))
""",
        ),
        (
            "across nodes at stride e instead of one rank per node",
            """
def expert_layer_times(model, cluster, expert_parallel, tokens):
    payload = tokens * model.experts_per_token * model.hidden * 2
    inside, across = (
        4 * budget.group_collective_time("all_to_all", cluster, expert_parallel, stride, payload)
        for stride in (1, expert_parallel)
    )
    return inside, across, 6 * tokens * model.routed_matmul_weights_per_layer / (0.5 * cluster.accelerator.peak("bf16"))
""",
        ),
        (
            "the experts' forward only (2 FLOPs per weight)",
            """
def expert_layer_times(model, cluster, expert_parallel, tokens):
    payload = tokens * model.experts_per_token * model.hidden * 2
    inside, across = (
        4 * budget.group_collective_time("all_to_all", cluster, expert_parallel, stride, payload)
        for stride in (1, cluster.devices_per_node)
    )
    return inside, across, 2 * tokens * model.routed_matmul_weights_per_layer / (0.5 * cluster.accelerator.peak("bf16"))
""",
        ),
        (
            "the payload without k (one copy of each token)",
            """
def expert_layer_times(model, cluster, expert_parallel, tokens):
    payload = tokens * model.hidden * 2
    inside, across = (
        4 * budget.group_collective_time("all_to_all", cluster, expert_parallel, stride, payload)
        for stride in (1, cluster.devices_per_node)
    )
    return inside, across, 6 * tokens * model.routed_matmul_weights_per_layer / (0.5 * cluster.accelerator.peak("bf16"))
""",
        ),
        (
            "the payload's (e − 1)/e applied again: group_collective_time already leaves 1/e on the rank",
            """
def expert_layer_times(model, cluster, expert_parallel, tokens):
    e = expert_parallel
    payload = tokens * model.experts_per_token * model.hidden * 2 * (e - 1) / e
    inside, across = (
        4 * budget.group_collective_time("all_to_all", cluster, e, stride, payload)
        for stride in (1, cluster.devices_per_node)
    )
    return inside, across, 6 * tokens * model.routed_matmul_weights_per_layer / (0.5 * cluster.accelerator.peak("bf16"))
""",
        ),
    ],
}
