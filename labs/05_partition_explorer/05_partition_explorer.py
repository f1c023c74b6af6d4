# ---
# jupyter:
#   course:
#     track: core
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [raw]
# # ASSIGNMENT CONFIG
# # The graded master of lab 5 (otter-grader 7 format). `make assignments` (tools/assignments.py) runs
# # `otter assign` on it; it stages course_lib/ and requirements.txt next to a copy of this notebook first,
# # so that the autograder zip carries the course's code and runs on Gradescope as it does locally.
# # Its links are relative to labs/, where the student version goes (make assignments).
# name: 05_partition_explorer
# requirements: requirements.txt
# autograder_files:
#   - course_lib
# python_version: "3.11"
# export_cell: false
# check_all_cell: true
# tests:
#   ok_format: false
# generate:
#   show_stdout: true
#   show_hidden: true

# %% [markdown]
# # Lab 5 · Partition explorer: the tensors that cross each boundary
#
# A partition decides which tensors must leave a device, how often, and over which link;
# [lesson 04 · Budget the bytes](../notebooks/04_communication_budget.ipynb) priced them. In this lab you split one
# model over a cluster with the partition explorer, watch every boundary tensor and its link, then compute the
# budget yourself in the graded questions.
#
# **Time to learn:** about 1.4 hours by the course's rule, the graded questions included
# ([how it is counted](../notebooks/00_course_map.ipynb#How-long-each-part-takes)).
#
# **What you need:** lessons 03 and 04, in particular the transfers a partition implies (step 2), the placement of
# the groups on NVLink and InfiniBand (step 3) and the dependency rule (step 4).
#
# **Scope.** The ideal model of lesson 04: compute at half of the device's peak, the links at the rates NCCL counts
# (NVLink) or the datasheet gives (the network), Megatron-LM's rank order (tensor-parallel ranks adjacent,
# data-parallel ranks $t$ apart, pipeline stages outermost), and every collective run as NCCL runs it
# (`budget.group_collective`: the ring, tree or NVLink SHARP its tuner expects to be fastest, each GPU on its own
# network rail when the group spans nodes). The graded questions use this model. The explorer's *framework* control
# runs the plan as a framework (Megatron-LM, DeepSpeed, PyTorch FSDP2 alone or pipelined as torchtitan runs it,
# nanotron) does, with the course's calibrated reference model (`budget.step_time`'s default): its GEMM efficiency,
# its precision, the transfers it overlaps with compute and the ZeRO stages it combines with a pipeline. Megatron-LM, for one, hides the backward tensor-parallel
# all-reduce behind the weight-gradient GEMMs, and does not run ZeRO-3 with a pipeline: the lab then says so and
# shows the ideal model's numbers.
#
# **How it is graded.** Write your answers where you see `...`. The cell `grader.check("q1")` after each question runs
# its public tests and tells you at once whether they pass. The grader also runs hidden tests with other inputs, chosen
# so that the usual slips (a collective counted once per layer, pipeline sends in one direction, an off-by-one, a node's
# aggregate bandwidth used for one collective) fail them, so make your answer right for every input, not only for the
# public example. Sizes are in bytes, times in seconds. Where a question says not to call a course_lib function, the
# grader makes that function, and every course_lib function that uses it, raise an error while it runs your answer
# (whatever name you reach it by): an answer that calls it scores 0 on that question.

# %%
from course_lib import budget, compute, hardware, parallelism, units
from course_lib.widgets import readable_feedback

readable_feedback()  # the checks below mark their results with ✔ and ✘, which every font here has

# %% [markdown]
# ## The lab
#
# On the left, the model drawn once: the embedding, its layers grouped into pipeline stages (one colour per
# stage), the output layer; inside each stage, the tensor-parallel slices (a red line where a tensor group leaves
# its node); behind it, the data-parallel replicas. A numbered marker sits where each boundary tensor crosses, and
# the table below lists it: axis, tensor, collective or send, payload per call, calls per step, link (NVLink in
# blue, InfiniBand in red), time per step and the part of it that no compute hides. On the right, the memory of one
# device against its capacity and where the step's time goes. The sliders offer only values that make a valid plan;
# moving $d$, $t$ or $p$ (or $c$, below) past the cluster adds nodes.
#
# Two more axes belong to [lesson 06](../notebooks/06_sequences_and_experts.ipynb); skip them until then. *Context
# parallel c* cuts each sequence in $c$ parts (dashed bands across each stage; with [ring
# attention](../notebooks/glossary.ipynb#ring-attention), the [zig-zag
# split](../notebooks/glossary.ipynb#zig-zag-split) drawn above the model). *Expert parallel e* ([expert
# parallelism](../notebooks/glossary.ipynb#expert-parallelism)) spreads each mixture-of-experts layer's experts over
# $e$ of the $d \cdot c$ data and context ranks, drawn under the model with the link of their all-to-alls.
# %% tags=["nbval-ignore-output", "otter_ignore"]
# nbval-ignore-output: live widget; its output cannot be compared
from course_lib.widgets import partition_lab

lab = partition_lab()
lab

# %% [markdown]
# ## Explore
#
# Start from the default settings: GPT-3 175B on 8 nodes of 8 A100 (NVLink 3 inside a node, 8 × 200 Gb/s
# InfiniBand per node), $d = 1$, $t = 8$, $p = 8$, ZeRO-1, selective recomputation, one sequence per micro-batch and
# 64 micro-batches per step. This question is not graded; the answer is below.
#
# 1. **Leave the node.** Set *tensor parallel t* to 16 and *pipeline parallel p* to 4: the same 64 GPUs as the
#    default. On which link do the tensor-parallel rows run now, what does one call cost, and is the step faster or
#    slower than the default's?
#
# <details>
# <summary>Answer</summary>
#
# 1. A tensor-parallel group of 16 spans two nodes (the red line inside each stage), so its all-reduces leave
#    NVLink: each 50.3 MB call runs as NCCL's flat ring through both nodes on their InfiniBand rails, 593 µs instead
#    of 428 µs. Each device also holds twice the layers, so each row counts 3072 calls instead of 1536 (at the default,
#    two per layer for each of a stage's 12 layers and each of the 64 micro-batches). The step takes 18.8 s against the
#    default's 17.3 s: 3.64 s of tensor-parallel time is exposed instead of 1.31 s. The exchange a step makes
#    thousands of times belongs on the fastest link.
#
# </details>

# %% [markdown]
# ## Key figures
#
# A fresh lab at the default plan and at the explore question's, its tensor-parallel rows and its step:

# %% tags=["otter_ignore"]
reference = partition_lab()
for t, p in ((8, 8), (16, 4)):
    reference.controls["tensor_parallel"].value = t
    reference.controls["pipeline_parallel"].value = p
    r = reference.result
    rows = [x for x in r["transfers"] if x["axis"] == "tensor"]
    print(
        f"t = {t:2}, p = {p}: {len(rows)} tensor-parallel rows of {units.format_bytes(rows[0]['payload_bytes'])} × "
        f"{rows[0]['calls_per_step']} calls on {r['tensor_link']}, {units.format_time(rows[0]['time_per_call_s'])} "
        f"a call; {r['devices']} GPUs, tensor-parallel time exposed {units.format_time(r['tensor_time_s'])}, "
        f"step {units.format_time(r['step_time_s'])}"
    )

# %% [markdown]
# ## Graded questions
#
# Each question names the function to define. `model` is a `parallelism.TransformerModel` (fields `layers`,
# `hidden`, `seq_len`, ...), `plan` a `parallelism.ParallelPlan` (`plan.sizes` is $(t, p, d, b, m, v)$), `cluster`
# a `hardware.Cluster`. Activations cross boundaries in 16 bit (2 bytes per element).

# %%
# IGNORE: otter leaves this cell out of the student version and the autograder. The tests below call helpers of
# tools/grading_helpers.py, which `make assignments` writes into each test that calls them (tools/assignments.py).
import os
import sys

sys.path.insert(0, os.path.abspath("../.."))  # the repository, for tools/ (this master runs in labs/NN_name/)
from tools.grading_helpers import calling

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 3
# all_or_nothing: true

# %% [markdown]
# ### Question 1 · The boundary transfers of a plan (3 points)
#
# Write `transfers_per_axis(model, plan)`: a dict `{"tensor": (payload_bytes, calls_per_step), "pipeline":
# (payload_bytes, calls_per_step)}` for one device and one step, where `payload_bytes` is one call's payload and
# `calls_per_step` counts every call of that axis (all its collectives, or all its sends and receives' messages,
# in both directions). Megatron-LM's tensor parallelism exchanges the $b \cdot s \cdot h$ activations with two
# all-reduces per layer in the forward pass and two in the backward pass, for every micro-batch; full recomputation
# repeats the forward ones; with sequence parallelism each all-reduce becomes a reduce-scatter plus an all-gather
# of the same tensor (count both). A pipeline stage sends its boundary activations ($b \cdot s \cdot h / t$ per
# device) forward and receives their gradients backward once per micro-batch, $v$ times with $v$ virtual stages.
# An axis of size 1 has no transfers: return `(0, 0)` for it. Build it from these rules; do not call
# `parallelism.step_transfers`, `parallelism.boundary_tensors` or `budget.partition_report`.

# %% [raw]
# # BEGIN SOLUTION


# %%
def transfers_per_axis(model, plan):
    """{"tensor": (payload bytes, calls per step), "pipeline": (...)} for one device and one step."""
    # BEGIN SOLUTION
    t, p, d, b, m, v = plan.sizes
    activation = 2 * b * model.seq_len * model.hidden
    layer_micro_batches = model.layers // p * m
    forward = 2 * layer_micro_batches * (2 if plan.recompute == "full" else 1)
    calls = (forward + 2 * layer_micro_batches) * (2 if plan.sequence_parallel else 1)
    tensor = (activation, calls) if t > 1 else (0, 0)
    pipeline = (activation / t, 2 * m * v) if p > 1 else (0, 0)
    return {"tensor": tensor, "pipeline": pipeline}
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q1_public(transfers_per_axis):
    from course_lib import parallelism

    assert callable(transfers_per_axis), "define the function transfers_per_axis"

    forbidden = {"step_transfers", "boundary_tensors", "partition_report"}
    files = ("course_lib/parallelism/transfers.py", "course_lib/budget/report.py")
    plan = parallelism.ParallelPlan(tensor_parallel=8, pipeline_parallel=8, grad_accum_steps=64, recompute="selective")
    result, called = calling(transfers_per_axis, parallelism.GPT3_175B, plan, forbidden=forbidden, files=files)
    assert not called, f"build it from the rules instead of calling {', '.join(sorted(called))}"
    assert isinstance(result, dict) and set(result) == {"tensor", "pipeline"}, (
        f"return a dict with the keys 'tensor' and 'pipeline', got {result!r:.80}"
    )
    payload, calls = result["tensor"]
    assert abs(payload - 50331648) <= 1, f"tensor payload: 2 bytes × b·s·h = 50.3 MB, got {payload!r:.40}"
    assert calls == 3072, (
        f"tensor calls: 2 forward + 2 backward all-reduces × 12 layers × 64 micro-batches = 3072, got {calls!r:.40}"
    )
    payload, calls = result["pipeline"]
    assert abs(payload - 6291456) <= 1 and calls == 128, (
        f"pipeline: 6.29 MB (b·s·h/t in 16 bit), 64 sends forward and 64 backward = 128, got {result['pipeline']!r:.60}"
    )
    # Full recomputation runs each layer's forward again in the backward pass, its two all-reduces with it.
    plan = parallelism.ParallelPlan(tensor_parallel=4, pipeline_parallel=16, grad_accum_steps=32, recompute="full")
    calls = transfers_per_axis(parallelism.GPT3_175B, plan)["tensor"][1]
    assert calls == 1152, (
        "t = 4, p = 16, m = 32, full recomputation: (2 forward + 2 again in the recomputation + 2 backward) "
        f"all-reduces × 6 layers × 32 micro-batches = 1152 tensor calls, got {calls!r:.40}"
    )
    # With v virtual stages a micro-batch crosses each device's boundaries v times each way.
    plan = parallelism.ParallelPlan(
        tensor_parallel=8, pipeline_parallel=8, grad_accum_steps=64, schedule="interleaved", virtual_stages=2
    )
    calls = transfers_per_axis(parallelism.GPT3_175B, plan)["pipeline"][1]
    assert calls == 256, (
        f"p = 8, m = 64, v = 2 (interleaved): 2 directions × 64 micro-batches × 2 chunks = 256 pipeline calls, "
        f"got {calls!r:.40}"
    )
    # Sequence parallelism: each all-reduce becomes a reduce-scatter and an all-gather, two calls.
    plan = parallelism.ParallelPlan(
        tensor_parallel=8, pipeline_parallel=8, grad_accum_steps=64, recompute="selective", sequence_parallel=True
    )
    calls = transfers_per_axis(parallelism.GPT3_175B, plan)["tensor"][1]
    assert calls == 6144, (
        "t = 8, p = 8, m = 64 with sequence parallelism: 4 all-reduces, each a reduce-scatter and an all-gather, "
        f"× 12 layers × 64 micro-batches = 6144 tensor calls, got {calls!r:.40}"
    )


test_q1_public(transfers_per_axis)


# %%
# HIDDEN
def test_q1_other_plans(transfers_per_axis):
    from course_lib import parallelism

    P = parallelism.ParallelPlan
    gpt3, one_t, llama = parallelism.GPT3_175B, parallelism.MEGATRON_1T, parallelism.LLAMA3_70B
    cases = [  # (model, plan, tensor (payload, calls), pipeline (payload, calls)), by hand from the rules
        (
            gpt3,
            P(tensor_parallel=8, pipeline_parallel=8, grad_accum_steps=64, recompute="full"),
            (50331648, 4608),
            (6291456, 128),
        ),  # full recomputation: the 2 forward all-reduces again
        (
            gpt3,
            P(
                data_parallel=16,
                tensor_parallel=8,
                pipeline_parallel=8,
                grad_accum_steps=96,
                recompute="selective",
                sequence_parallel=True,
            ),
            (50331648, 9216),
            (6291456, 192),
        ),  # SP: reduce-scatter + all-gather
        (
            gpt3,
            P(tensor_parallel=8, pipeline_parallel=8, grad_accum_steps=64, recompute="full", sequence_parallel=True),
            (50331648, 9216),
            (6291456, 128),
        ),
        (
            one_t,
            P(
                data_parallel=6,
                tensor_parallel=8,
                pipeline_parallel=64,
                grad_accum_steps=512,
                recompute="full",
                schedule="interleaved",
                virtual_stages=2,
            ),
            (104857600, 6144),
            (13107200, 2048),
        ),  # v = 2
        (llama, P(tensor_parallel=4, micro_batch=2, grad_accum_steps=8), (268435456, 2560), (0, 0)),  # p = 1
        (gpt3, P(pipeline_parallel=12, micro_batch=2, grad_accum_steps=24), (0, 0), (100663296, 48)),  # t = 1
    ]
    for model, plan, tensor, pipeline in cases:
        result = transfers_per_axis(model, plan)
        for axis, want in (("tensor", tensor), ("pipeline", pipeline)):
            got = result[axis]
            assert abs(got[0] - want[0]) <= 1e-9 * max(want[0], 1) and got[1] == want[1], (
                f"transfers_per_axis({model.name}, t, p, d, b, m, v = {plan.sizes}, recompute={plan.recompute}, "
                f"SP={plan.sequence_parallel})[{axis!r}]: expected {want}, got {got!r:.60}"
            )


test_q1_other_plans(transfers_per_axis)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 2
# all_or_nothing: true

# %% [markdown]
# ### Question 2 · Does tensor parallelism leave the node? (2 points)
#
# Write `tensor_group_leaves_node(tensor_parallel, data_parallel, devices_per_node, tensor_innermost)`: `True` if
# a tensor-parallel group has ranks on more than one node. Ranks are numbered node by node (ranks
# $0 \ldots G-1$ on node 0, $G = $ `devices_per_node`). With `tensor_innermost=True` (Megatron-LM's order) the $t$
# ranks of a group are adjacent; with `False` the data-parallel ranks are adjacent instead and a group's ranks are
# $d$ apart. All sizes are powers of two. Check your answer on the explorer: the red line inside a stage.

# %% [raw]
# # BEGIN SOLUTION


# %%
def tensor_group_leaves_node(tensor_parallel, data_parallel, devices_per_node, tensor_innermost):
    """Whether a tensor-parallel group spans more than one node."""
    # BEGIN SOLUTION
    stride = 1 if tensor_innermost else data_parallel
    return (tensor_parallel - 1) * stride >= devices_per_node  # the group's last rank lies past the node
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q2_public(tensor_group_leaves_node):
    assert callable(tensor_group_leaves_node), "define the function tensor_group_leaves_node"
    assert tensor_group_leaves_node(8, 4, 8, True) is False, "t = 8 adjacent ranks on 8-GPU nodes: one node (False)"
    assert tensor_group_leaves_node(16, 4, 8, True) is True, "t = 16 adjacent ranks on 8-GPU nodes: two nodes (True)"
    assert tensor_group_leaves_node(4, 4, 8, False) is True, (
        "t = 4 with the data-parallel ranks adjacent (d = 4) on 8-GPU nodes: ranks 0, 4, 8, 12, on two nodes (True)"
    )


test_q2_public(tensor_group_leaves_node)


# %%
# HIDDEN
def test_q2_placements(tensor_group_leaves_node):
    cases = [  # (t, d, g, tensor innermost) → spans nodes: ranks 0, s, ..., (t − 1)s with s = 1 or d
        ((8, 1, 8, True), False),
        ((4, 8, 8, True), False),
        ((2, 8, 8, False), True),  # ranks 0 and 8
        ((4, 2, 8, False), False),  # ranks 0, 2, 4, 6
        ((8, 2, 8, False), True),
        ((1, 64, 8, False), False),  # one rank never leaves
        ((4, 4, 4, True), False),
        ((8, 4, 4, True), True),
        ((32, 1, 8, True), True),
    ]
    for case, want in cases:
        got = tensor_group_leaves_node(*case)
        assert bool(got) == want, f"tensor_group_leaves_node{case}: expected {want}, got {got!r:.40}"


test_q2_placements(tensor_group_leaves_node)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 2
# all_or_nothing: true

# %% [markdown]
# ### Question 3 · How much of the gradient reduce-scatter stays exposed? (2 points)
#
# Under ZeRO-1 the gradients are reduce-scattered once per step. With $m$ micro-batches they accumulate over the
# step and are final only after the last micro-batch's backward pass: a layer's gradients can be reduce-scattered
# as soon as that backward pass has produced them, and not before, since every earlier micro-batch still adds to
# them. So only the last micro-batch's backward pass can hide the reduce-scatter (window: one micro-batch's
# backward), however many micro-batches the step has. Write `exposed_reduce_scatter_s(model, plan, cluster)`: the
# seconds of the reduce-scatter that this backward pass does not hide (0 when it hides all of it).
#
# - the reduce-scatter: the data-parallel transfer of `"gradients"` in `parallelism.step_transfers(model, plan)`,
#   one call priced by `budget.transfer_time_per_call(transfer, plan, cluster)` (it places the group on the links);
# - one micro-batch's backward pass on one device, with its recomputation: the FLOPs of the whole iteration of one
#   micro-batch (`compute.transformer_flops_per_iteration(b, s, l, h, V, recompute=...)`) minus its forward
#   (`compute.transformer_forward_flops(b, s, l, h, V)`), split over the $t \cdot p$ devices of a replica, at half
#   of the device's peak (`cluster.accelerator.peak("bf16")`).

# %% [raw]
# # BEGIN SOLUTION


# %%
def exposed_reduce_scatter_s(model, plan, cluster):
    """Seconds of the ZeRO-1 gradient reduce-scatter that the last micro-batch's backward pass does not hide."""
    # BEGIN SOLUTION
    gradients = next(x for x in parallelism.step_transfers(model, plan) if x.axis == "data" and x.tensor == "gradients")
    reduce_s = budget.transfer_time_per_call(gradients, plan, cluster)
    shape = (model.seq_len, model.layers, model.hidden, model.vocab)
    forward = compute.transformer_forward_flops(plan.micro_batch, *shape)
    iteration = compute.transformer_flops_per_iteration(plan.micro_batch, *shape, recompute=plan.recompute)
    rate = 0.5 * cluster.accelerator.peak("bf16")
    backward_s = (iteration - forward) / (plan.tensor_parallel * plan.pipeline_parallel) / rate
    return max(0.0, reduce_s - backward_s)
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q3_public(exposed_reduce_scatter_s):
    from dataclasses import replace

    from course_lib import hardware, parallelism

    assert callable(exposed_reduce_scatter_s), "define the function exposed_reduce_scatter_s"
    plan = parallelism.ParallelPlan(
        data_parallel=8, tensor_parallel=8, pipeline_parallel=2, zero_stage=1, grad_accum_steps=64
    )
    got = exposed_reduce_scatter_s(parallelism.GPT3_175B, plan, replace(hardware.DGX_H100, nodes=16))
    assert isinstance(got, (int, float)) and not isinstance(got, bool) and abs(got - 0.19632) < 1e-3, (
        f"GPT-3 175B, d = 8, t = 8, p = 2 on 16 H100 nodes: a 382 ms reduce-scatter, of which the last micro-batch's "
        f"186 ms backward pass hides 186 ms, leaves 196 ms exposed (in seconds: 0.196), got {got!r:.40}"
    )
    plan = parallelism.ParallelPlan(data_parallel=16, tensor_parallel=8, zero_stage=1, grad_accum_steps=8)
    got = exposed_reduce_scatter_s(parallelism.LLAMA3_70B, plan, replace(hardware.DGX_H100, nodes=16))
    assert got == 0, (
        f"Llama 3 70B, d = 16, t = 8 on 16 H100 nodes: the last micro-batch's 631 ms backward pass hides all of the "
        f"331 ms reduce-scatter: expected 0, got {got!r:.40}"
    )


test_q3_public(exposed_reduce_scatter_s)


# %%
# HIDDEN
def test_q3_other_plans(exposed_reduce_scatter_s):
    from dataclasses import replace

    from course_lib import hardware, parallelism

    P = parallelism.ParallelPlan
    gpt3, one_t, llama = parallelism.GPT3_175B, parallelism.MEGATRON_1T, parallelism.LLAMA3_70B
    h100, a100 = hardware.DGX_H100, hardware.DGX_A100
    cases = [  # reduce-scatter less one micro-batch's backward, at least 0 (computed once with course_lib)
        (
            gpt3,
            P(data_parallel=8, tensor_parallel=8, pipeline_parallel=2, zero_stage=1, grad_accum_steps=64),
            replace(a100, nodes=16),
            0.17523,
        ),  # 764 ms − 589 ms
        (
            gpt3,
            P(data_parallel=64, tensor_parallel=8, pipeline_parallel=4, zero_stage=1, grad_accum_steps=16),
            replace(h100, nodes=256),
            0.12287,
        ),  # 216 ms − 92.9 ms
        (
            gpt3,
            P(data_parallel=32, tensor_parallel=4, pipeline_parallel=4, zero_stage=1, grad_accum_steps=16),
            replace(h100, nodes=64),
            0.025965,
        ),  # 212 ms − 186 ms
        (
            one_t,
            P(data_parallel=4, tensor_parallel=8, pipeline_parallel=32, zero_stage=1, grad_accum_steps=64),
            replace(h100, nodes=128),
            0.052086,
        ),  # 118 ms − 66.1 ms
        (
            llama,
            P(data_parallel=32, tensor_parallel=8, zero_stage=1, grad_accum_steps=8),
            replace(h100, nodes=32),
            0.0,
        ),  # 342 ms against 631 ms: the backward pass hides all of it
    ]
    for model, plan, cluster, want in cases:
        got = exposed_reduce_scatter_s(model, plan, cluster)
        assert isinstance(got, (int, float)) and not isinstance(got, bool), f"expected seconds, got {got!r:.40}"
        assert abs(got - want) <= 1e-3 * max(want, 1e-3), (
            f"exposed_reduce_scatter_s({model.name}, t, p, d = {plan.sizes[:3]}, {cluster.nodes} nodes of "
            f"{cluster.accelerator.name}): expected {want:.4g} s, got {got!r:.40}"
        )


test_q3_other_plans(exposed_reduce_scatter_s)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q4
# points: 3
# all_or_nothing: true

# %% [markdown]
# ### Question 4 · The exposed communication of a plan (3 points)
#
# Write `critical_path_communication_s(model, plan, cluster)`: the seconds per step of every boundary tensor whose
# consumer waits for it (`transfer.phase == "none"`: the tensor-parallel collectives, the pipeline sends in both
# directions and, under ZeRO-1 and 2, the all-gather of the updated parameters). List the transfers with
# `parallelism.boundary_tensors(model, plan)` and price one call with `budget.transfer_time_per_call`: a group's
# time depends on where its ranks sit, and one collective runs on each GPU's own links, not on the node's aggregate.
# Do not call `budget.step_time` or `budget.partition_report`.

# %% [raw]
# # BEGIN SOLUTION


# %%
def critical_path_communication_s(model, plan, cluster):
    """Seconds per step of the boundary tensors on the critical path."""
    # BEGIN SOLUTION
    return sum(
        transfer.calls_per_step * budget.transfer_time_per_call(transfer, plan, cluster)
        for transfer in parallelism.boundary_tensors(model, plan)
        if transfer.phase == "none"
    )
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q4_public(critical_path_communication_s):
    import math
    from dataclasses import replace

    from course_lib import hardware, parallelism

    assert callable(critical_path_communication_s), "define the function critical_path_communication_s"

    forbidden = {"step_time", "partition_report", "calibrated_step_time"}
    files = ("course_lib/budget/step.py", "course_lib/budget/report.py")
    plan = parallelism.ParallelPlan(
        tensor_parallel=8, pipeline_parallel=8, grad_accum_steps=64, zero_stage=1, recompute="selective"
    )
    got, called = calling(
        critical_path_communication_s,
        parallelism.GPT3_175B,
        plan,
        replace(hardware.DGX_A100, nodes=8),
        forbidden=forbidden,
        files=files,
    )
    assert not called, f"add up the transfers instead of calling {', '.join(sorted(called))}"
    assert math.isclose(got, 1.3476731699200002, rel_tol=1e-9), (
        f"GPT-3 175B, t = 8, p = 8 on 8 A100 nodes: 2 × 657 ms of tensor parallel + 2 × 16.7 ms of pipeline sends "
        f"= 1.35 s, got {got!r:.40}"
    )
    plan = plan.replace(data_parallel=4)
    got = critical_path_communication_s(parallelism.GPT3_175B, plan, replace(hardware.DGX_A100, nodes=32))
    assert math.isclose(got, 1.5114307033600003, rel_tol=1e-9), (
        f"the same with d = 4 on 32 A100 nodes: 1.35 s as before + the ZeRO-1 all-gather of the updated parameters, "
        f"164 ms = 1.51 s, got {got!r:.40}"
    )


test_q4_public(critical_path_communication_s)


# %%
# HIDDEN
def test_q4_other_plans(critical_path_communication_s):
    import math
    from dataclasses import replace

    from course_lib import hardware, parallelism

    P = parallelism.ParallelPlan
    gpt3, llama = parallelism.GPT3_175B, parallelism.LLAMA3_70B
    cases = [  # seconds per step of the transfers with phase "none" (computed once with course_lib)
        (
            gpt3,
            P(tensor_parallel=16, pipeline_parallel=4, grad_accum_steps=64, zero_stage=1, recompute="selective"),
            replace(hardware.DGX_A100, nodes=8),
            3.6600793586643476,
        ),  # t = 16: NCCL's flat ring over the two nodes' InfiniBand
        (
            gpt3,
            P(
                data_parallel=16,
                tensor_parallel=8,
                pipeline_parallel=8,
                zero_stage=1,
                grad_accum_steps=96,
                recompute="selective",
                sequence_parallel=True,
            ),
            hardware.SELENE_3072,
            2.2871864716799997,
        ),  # + all-gather
        (
            llama,
            P(data_parallel=4, tensor_parallel=16, zero_stage=2, grad_accum_steps=8),
            replace(hardware.DGX_H100, nodes=8),
            1.4058017947558297,
        ),
        (llama, P(data_parallel=8, zero_stage=3, grad_accum_steps=4), hardware.DGX_H100, 0.0),  # all hidden
    ]
    for model, plan, cluster, want in cases:
        got = critical_path_communication_s(model, plan, cluster)
        assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12), (
            f"critical_path_communication_s({model.name}, t, p, d = {plan.sizes[:3]}, ZeRO-{plan.zero_stage}, "
            f"{cluster.nodes} nodes): expected {want:.6g} s, got {got!r:.40}"
        )


test_q4_other_plans(critical_path_communication_s)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [markdown]
# ## Before you submit
#
# Restart the kernel and run all cells: the last cell reruns every public test. Then submit this notebook
# (`05_partition_explorer.ipynb`) as your instructor asks.
