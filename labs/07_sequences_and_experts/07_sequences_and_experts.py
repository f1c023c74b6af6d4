# ---
# jupyter:
#   course:
#     track: depth
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [raw]
# # ASSIGNMENT CONFIG
# # The graded master of lab 7 (otter-grader 7 format). `make assignments` (tools/assignments.py) runs
# # `otter assign` on it; it stages course_lib/ and requirements.txt next to a copy of this notebook first,
# # so that the autograder zip carries the course's code and runs on Gradescope as it does locally.
# # Its links are relative to labs/, where the student version goes (make assignments).
# name: 07_sequences_and_experts
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
# # Lab 7 · Long sequences and many experts
#
# A **long sequence** fills a device with activations, so at 128k tokens one sequence no longer fits whatever $t$
# and $p$ do: [context parallelism](../notebooks/glossary.ipynb#context-parallelism) splits every sequence into $c$
# parts, one per rank. A [mixture of experts](../notebooks/glossary.ipynb#moe) sends each token to $k_E$ of its $E$
# expert MLPs: **expert parallelism** spreads the experts over $e$ ranks, and every MoE layer then moves the tokens
# to their experts' ranks and back in all-to-alls on the critical path. [Lesson 06 · Long sequences and many
# experts](../notebooks/06_sequences_and_experts.ipynb) builds both, and zero-bubble pipeline schedules. In this lab
# you first move a training plan's controls and watch the three effects, then compute the numbers yourself in the
# graded questions.
#
# **Time to learn:** about 1.4 hours by the course's rule, the graded questions included
# ([how it is counted](../notebooks/00_course_map.ipynb#How-long-each-part-takes)).
#
# **What you need:** lesson 06 · Long sequences and many experts (`06_sequences_and_experts`: context and expert
# parallelism, the all-to-all, ZB-H1 and ZB-H2), lesson 04's collective times on a cluster, lesson 03's memory per
# device and pipeline bubble, and lesson 02's collectives.
#
# **Scope.** A plan of $d = 8$ data-parallel ranks (ZeRO-1) times the $t$, $p$ and $c$ of the controls, one
# sequence per micro-batch, FlashAttention, sequence parallelism when $t > 1$, no recomputation, on DGX H100 nodes
# (80 GB). Memory is the course's calibrated model (`parallelism.memory_breakdown`'s default, the reference:
# Megatron-Core's precision recipe, the logits and the framework's own memory). The MoE layer is timed for one rank
# with NCCL's all-to-all (`budget.group_collective_time`) and a perfectly balanced router; the experts' multiplies
# run at half of the bf16 peak. The pipeline bubble comes from the course's simulator with
# $t_\text{F} = t_\text{B} = t_\text{W}$.
#
# **How it is graded.** Write your answers where you see `...`. The cell `grader.check("q1")` after each question runs
# its public tests and tells you at once whether they pass. The grader also runs hidden tests with other inputs, chosen
# so that the usual slips (forgetting the $(e-1)/e$ that stays on the rank, counting only the forward pass, using 1F1B's
# bubble for ZB-H1) fail them, so make your answer right for every input, not only for the public example. Sizes are in
# bytes (decimal: 1 GB = $10^9$ bytes), times in seconds. Where a question says not to call a course_lib function, the
# grader makes that function, and every course_lib function that uses it, raise an error while it runs your answer
# (whatever name you reach it by): an answer that calls it scores 0 on that question.

# %%
import dataclasses

from course_lib import budget, hardware, parallelism, pipeline, units
from course_lib.widgets import readable_feedback

readable_feedback()  # the checks below mark their results with ✔ and ✘, which every font here has

# %% [markdown]
# ## The lab
#
# On the left, memory per device against the sequence length $s$, for $c = 1$ (red) and for the chosen $c$ (blue),
# the star at the chosen $s$; the dashed line is the H100's 80 GB, and a plan must also stay below the hatched band
# to fit with the calibrated model's +52.1 % margin. $c$ divides the activations (each rank holds $s/c$ of every
# sequence's tokens) and, under ZeRO-1, the optimizer state, which is sharded over the $d \cdot c$ ranks that hold
# the same weights. In the middle, one MoE layer of one micro-batch on one rank: its four all-to-alls (dispatch and
# combine, forward and backward) with the $e$ expert ranks side by side in one node, and with one rank per node,
# beside the experts' own compute (the placement not chosen is faded). On the right, the pipeline bubble of the
# chosen schedule against 1F1B's, each as a share of the ideal step; ZB-H2 adds its bubble without the optimizer
# step's synchronisation, 0 % at the defaults, since its extra warm-up forwards fill each stage's bubble. The
# context-parallel slider offers only a $c$ that splits the sequence and, in its all-to-all form, both the query and
# the key/value heads of a tensor-parallel rank; the expert slider only divisors of the experts (1 for a dense model);
# the micro-batch slider only the $m$ the schedule runs with.

# %% tags=["nbval-ignore-output", "otter_ignore"]
# nbval-ignore-output: live widget; its output cannot be compared
from course_lib.widgets import sequences_lab

lab = sequences_lab()
lab

# %% [markdown]
# ## Explore
#
# Start from the default settings: Mixtral 8x7B at 32,768 tokens, $t = 1$, ring context parallelism with $c = 8$,
# $e = 8$ in one node, $p = 4$ with ZB-H1 and 8 micro-batches. This question is not graded; the answer is below.
#
# 1. **Ring, all-gather or all-to-all.** Switch *context parallel kind* to all_gather, then to all_to_all. What
#    happens to the memory? Then choose Llama 3.1 8B with $t = 4$, then $t = 8$: which $c$ does each kind offer, and
#    why?
#
# <details>
# <summary>Answer</summary>
#
# 1. Every kind leaves $s/c$ tokens on each rank, so the memory barely moves: 55.8 GB with the all-gather form,
#    which also holds one layer's whole-sequence K and V and their gradients during the backward, 55.5 GB with the
#    all-to-all form as with the ring. They differ in what moves: the ring passes K and V blocks around and hides
#    them behind attention, the all-gather form gathers all of K and V before attention and waits for it, the
#    all-to-all form regroups the heads. With Llama 3.1 8B at $t = 4$, each tensor-parallel rank holds 8 of the 32
#    query heads and 2 of the 8 key/value heads; the all-to-all form gives each context rank whole heads, K and V
#    included (Transformer Engine asserts it), so it offers only $c \le 2$; at $t = 8$ a rank holds one key/value
#    head, and only $c = 1$ remains. The ring and the all-gather form offer up to 16 either way. At $t = 8$ the
#    longest sequence that fits is 64k tokens with the all-to-all form and 512k with the ring at $c = 8$.
#
# </details>

# %% [markdown]
# ## Key figures at the default settings
#
# A fresh lab at the default settings, and the same numbers computed with course_lib:

# %% tags=["otter_ignore"]
reference = sequences_lab()
r = reference.result
print(
    f"{r['model']} at {r['seq_len']:,} tokens, t·p·c = {r['tensor_parallel']}·{r['pipeline_parallel']}·{r['context_parallel']}"
)
print(
    f"memory per device        {units.format_bytes(r['memory_bytes_per_device']):>9} (fits: {r['fits']}, "
    f"with the margin: {r['fits_with_margin']})"
)
print(
    f"longest that fits        {r['longest_fitting_seq_len']:>9,} tokens (c = 1: {r['longest_fitting_seq_len_without_c']:,})"
)
print(f"all-to-alls in one node  {units.format_time(r['all_to_all_inside_s']):>9}")
print(f"all-to-alls across nodes {units.format_time(r['all_to_all_across_s']):>9}")
print(f"experts' compute         {units.format_time(r['expert_compute_s']):>9}")
print(
    f"bubble ZB-H1 / 1F1B      {units.format_percent(r['bubble_fraction']):>9} / {units.format_percent(r['bubble_fraction_1f1b'])}"
)
eight_nodes = dataclasses.replace(hardware.DGX_H100, nodes=8, name="8 × DGX H100")
layer = budget.moe_layer_times(parallelism.MIXTRAL_8X7B, eight_nodes, 8, 4096, 1)
print(
    f"budget.moe_layer_times(MIXTRAL_8X7B, 8 nodes, e = 8, 4096 tokens, stride 1): "
    f"{units.format_time(layer.all_to_all_s)}; agrees with the lab: {layer.all_to_all_s == r['all_to_all_inside_s']}"
)

# %% [markdown]
# ## Graded questions
#
# Each question names the function to define. Models are `parallelism.TransformerModel`s such as
# `parallelism.MIXTRAL_8X7B`: `model.hidden`, `model.experts`, `model.experts_per_token` ($k_E$), `model.seq_len`, and
# `model.routed_matmul_weights_per_layer`, the weights of the $k_E$ experts a token visits in one layer. A model
# trained on sequences of $s$ tokens is `dataclasses.replace(model, seq_len=s)`. Plans are
# `parallelism.ParallelPlan`s; clusters are `hardware.Cluster`s: `cluster.devices_per_node`, and
# `cluster.accelerator` with `peak("bf16")`.

# %%
# IGNORE: otter leaves this cell out of the student version and the autograder. The tests below call helpers of
# tools/grading_helpers.py, which `make assignments` writes into each test that calls them (tools/assignments.py).
import os
import sys

sys.path.insert(0, os.path.abspath("../.."))  # the repository, for tools/ (this master runs in labs/NN_name/)
from tools.grading_helpers import calling, number

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 2
# all_or_nothing: true

# %% [markdown]
# ### Question 1 · The bytes of a MoE layer's all-to-alls (2 points)
#
# A rank holds `tokens` tokens; each goes to `experts_per_token` experts, so the rank's dispatch buffer holds
# tokens × $k_E$ vectors of `hidden` numbers, `bytes_per_element` bytes each, and the combine brings as many back.
# The experts are spread evenly over `expert_parallel` ranks ($e$), so on average $1/e$ of the buffer is for
# experts the rank holds itself and never leaves it. Write `moe_all_to_all_bytes(tokens, experts_per_token, hidden,
# expert_parallel, bytes_per_element=2)`: the bytes one rank sends in one MoE layer's all-to-alls during one
# training step of one micro-batch, dispatch and combine, forward and backward (no recomputation). Do not call
# `parallelism.step_transfers` or `parallelism.communication_volume_per_step`: the tests check your bytes against
# their expert rows.

# %% [raw]
# # BEGIN SOLUTION


# %%
def moe_all_to_all_bytes(tokens, experts_per_token, hidden, expert_parallel, bytes_per_element=2):
    """Bytes one rank sends in one MoE layer's dispatch and combine, forward and backward."""
    # BEGIN SOLUTION
    one_call = tokens * experts_per_token * hidden * bytes_per_element  # the rank's buffer S
    return 4 * one_call * (expert_parallel - 1) / expert_parallel  # 1/e of S stays on the rank
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q1_public(moe_all_to_all_bytes):
    assert callable(moe_all_to_all_bytes), "define the function moe_all_to_all_bytes"

    forbidden = {"step_transfers", "communication_volume_per_step"}
    files = ("course_lib/parallelism/transfers.py",)
    result, called = calling(moe_all_to_all_bytes, 4096, 2, 4096, 8, forbidden=forbidden, files=files)
    assert not called, f"count the bytes yourself instead of calling {', '.join(sorted(called))}"
    got = number(result)
    assert got is not None and abs(got - 234_881_024) <= 1e-9 * 234_881_024, (
        "Mixtral 8x7B (h = 4096, k = 2), 4096 tokens a rank, e = 8, bf16: expected 234,881,024 B (4 all-to-alls of "
        f"4096 × 2 × 4096 × 2 B, 7/8 of each leaving the rank), got {result!r:.80}"
    )
    result, called = calling(moe_all_to_all_bytes, 4096, 2, 4096, 8, 1, forbidden=forbidden, files=files)
    got = number(result)
    assert not called and got is not None and abs(got - 117_440_512) <= 1e-9 * 117_440_512, (
        f"the same in FP8 (bytes_per_element = 1): expected 117,440,512 B, half of it, got {result!r:.80}"
    )


test_q1_public(moe_all_to_all_bytes)


# %%
# HIDDEN
def test_q1_other_layers(moe_all_to_all_bytes):
    import dataclasses

    from course_lib import parallelism

    forbidden = {"step_transfers", "communication_volume_per_step"}
    files = ("course_lib/parallelism/transfers.py",)
    cases = [  # 4 × tokens × k × h × bytes × (e − 1)/e, by hand
        ((4096, 2, 4096, 1), 0.0),  # e = 1: every expert on the rank, nothing moves
        ((1000, 2, 4096, 2), 32_768_000.0),  # half of each buffer leaves
        ((2048, 6, 2048, 64, 1), 99_090_432.0),  # DeepSeekMoE-like: k = 6, FP8 dispatch
        ((3000, 1, 1024, 16, 4), 46_080_000.0),  # fp32
    ]
    for case, want in cases:
        result, called = calling(moe_all_to_all_bytes, *case, forbidden=forbidden, files=files)
        got = number(result)
        assert not called and got is not None and abs(got - want) <= 1e-9 * max(want, 1.0), (
            f"moe_all_to_all_bytes{case}: expected {want:,.0f} B, got {result!r:.80}"
        )
    # Against course_lib's transfer rows: the expert rows of one micro-batch's step, per MoE layer.
    for model, tokens, e in ((parallelism.MIXTRAL_8X22B, 8192, 4), (parallelism.MIXTRAL_8X7B, 32768, 8)):
        trained = dataclasses.replace(model, seq_len=tokens)
        plan = parallelism.ParallelPlan(data_parallel=e, expert_parallel=e)
        rows = [x for x in parallelism.step_transfers(trained, plan) if x.axis == "expert"]
        want = sum(float(x.bytes_sent_per_device) for x in rows) / trained.moe_layers
        case = (tokens, model.experts_per_token, model.hidden, e)
        result, called = calling(moe_all_to_all_bytes, *case, forbidden=forbidden, files=files)
        got = number(result)
        assert not called and got is not None and abs(got - want) <= 1e-9 * want, (
            f"moe_all_to_all_bytes{case} ({model.name}): expected {want:,.0f} B, got {result!r:.80}"
        )


test_q1_other_layers(moe_all_to_all_bytes)

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
# ### Question 2 · The longest sequence that fits, with and without $c$ (2 points)
#
# Write `longest_fitting_seq_len(model, plan, seq_lens, capacity_bytes)`: the longest of the sequence lengths
# `seq_lens` (in any order) at which `model`, trained on sequences of that length with `plan`, fits a device of
# `capacity_bytes`: the `total` of `parallelism.memory_breakdown(...)` (its default, calibrated model) at most the
# capacity. Return `None` if none fits. Memory grows with the sequence, but check every length. The tests call it
# with the same plan at $c = 1$ and at larger $c$, as the lab's memory panel compares them.

# %% [raw]
# # BEGIN SOLUTION


# %%
def longest_fitting_seq_len(model, plan, seq_lens, capacity_bytes):
    """The longest of ``seq_lens`` at which ``model`` trained with ``plan`` fits ``capacity_bytes``, or None."""
    # BEGIN SOLUTION
    longest = None
    for seq_len in seq_lens:
        memory = parallelism.memory_breakdown(dataclasses.replace(model, seq_len=seq_len), plan)
        if memory.total <= capacity_bytes and (longest is None or seq_len > longest):
            longest = seq_len
    return longest
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q2_public(longest_fitting_seq_len):
    assert callable(longest_fitting_seq_len), "define the function longest_fitting_seq_len"
    from course_lib import parallelism

    plan = parallelism.ParallelPlan(
        data_parallel=8, pipeline_parallel=4, zero_stage=1, grad_accum_steps=8, attention="flash",
        context_parallel=8, expert_parallel=8,
    )  # fmt: skip
    lengths = tuple(4096 * 2**k for k in range(9))  # 4k … 1M tokens
    got = longest_fitting_seq_len(parallelism.MIXTRAL_8X7B, plan, lengths, 80e9)
    assert number(got) == 32768, (
        f"Mixtral 8x7B with the lab's default plan (c = 8) on 80 GB: expected 32768 tokens, got {got!r:.80}"
    )
    alone = longest_fitting_seq_len(parallelism.MIXTRAL_8X7B, plan.replace(context_parallel=1), lengths, 80e9)
    assert number(alone) == 4096, f"the same plan with c = 1: expected 4096 tokens, got {alone!r:.80}"
    longest_first = longest_fitting_seq_len(parallelism.MIXTRAL_8X7B, plan, lengths[::-1], 80e9)
    assert number(longest_first) == 32768, (
        f"the same lengths, longest first (seq_lens need not be sorted): expected 32768 tokens, got {longest_first!r:.80}"
    )


test_q2_public(longest_fitting_seq_len)


# %%
# HIDDEN
def test_q2_other_plans(longest_fitting_seq_len):
    from course_lib import parallelism

    lengths = tuple(4096 * 2**k for k in range(9))
    dense = parallelism.ParallelPlan(
        data_parallel=8, tensor_parallel=8, pipeline_parallel=4, zero_stage=1, grad_accum_steps=8,
        attention="flash", sequence_parallel=True, context_parallel=16,
    )  # fmt: skip
    moe = parallelism.ParallelPlan(
        data_parallel=8, tensor_parallel=8, pipeline_parallel=8, zero_stage=1, grad_accum_steps=16,
        attention="flash", sequence_parallel=True, context_parallel=8, expert_parallel=8,
    )  # fmt: skip
    # Ulysses needs c to divide the 8 / t KV heads of a tensor-parallel rank: t = 2 leaves 4
    ulysses = dense.replace(tensor_parallel=2, context_parallel=4, context_parallel_kind="all_to_all")
    cases = [  # the lengths at which parallelism.memory_breakdown's total fits, the longest of them
        ((parallelism.LLAMA3_70B, dense, lengths, 80e9), 262144),
        ((parallelism.LLAMA3_70B, dense.replace(context_parallel=1), lengths, 80e9), 16384),
        ((parallelism.LLAMA3_70B, dense, lengths, 141e9), 524288),  # an H200
        ((parallelism.LLAMA3_8B, ulysses, (131072, 8192, 524288, 32768), 80e9), 32768),  # not in order
        ((parallelism.LLAMA3_8B, parallelism.ParallelPlan(attention="flash"), (65536, 131072), 80e9), None),
        ((parallelism.MIXTRAL_8X22B, moe, lengths, 80e9), 131072),
    ]
    for case, want in cases:
        got = longest_fitting_seq_len(*case)
        shown = (case[0].name, f"c = {case[1].context_parallel}", case[2], case[3])
        assert (got is None) if want is None else number(got) == want, (
            f"longest_fitting_seq_len{shown}: expected {want}, got {got!r:.80}"
        )


test_q2_other_plans(longest_fitting_seq_len)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 3
# all_or_nothing: true

# %% [markdown]
# ### Question 3 · ZB-H1's bubble against 1F1B's (3 points)
#
# A pipeline of `stages` stages runs `microbatches` micro-batches (at least as many as stages) with ZB-H1: each
# micro-batch's forward takes `forward_time_s` ($t_\text{F}$) on a stage, its backward is split into the input gradient
# B (`backward_input_time_s`, $t_\text{B}$) and the weight gradient W (`backward_weight_time_s`, $t_\text{W}$). Write
# `zb_h1_bubble_fraction(stages, microbatches, forward_time_s, backward_input_time_s, backward_weight_time_s)`: the
# bubble as a share of the ideal step $m(t_\text{F} + t_\text{B} + t_\text{W})$, as the course's simulator measures it
# (the step ends when every stage has ended). Simulate it with `pipeline.pipeline_schedule` or use the general form
# lesson 06 gives (Step 5: Qi et al.'s formula holds only while W is the shortest op); either way it must equal the
# simulation for every input, also where $t_\text{W} > t_\text{F}$. Do not call `parallelism.pipeline_bubble_time` or
# `parallelism.pipeline_schedule_report`. Compare your result with 1F1B's $(p-1)/m$ for the same $p$ and $m$.

# %% [raw]
# # BEGIN SOLUTION


# %%
def zb_h1_bubble_fraction(stages, microbatches, forward_time_s, backward_input_time_s, backward_weight_time_s):
    """ZB-H1's simulated bubble over the ideal step m·(t_F + t_B + t_W)."""
    # BEGIN SOLUTION
    t_F, t_B, t_W = forward_time_s, backward_input_time_s, backward_weight_time_s
    times = dict(forward_time_s=t_F, backward_time_s=t_B + t_W, backward_weight_time_s=t_W)  # the backward: B + W
    timeline = pipeline.pipeline_schedule(stages, microbatches, "zb-h1", **times)
    return timeline.bubble_fraction
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q3_public(zb_h1_bubble_fraction):
    assert callable(zb_h1_bubble_fraction), "define the function zb_h1_bubble_fraction"

    forbidden = {"pipeline_bubble_time", "pipeline_schedule_report"}
    files = ("course_lib/parallelism/schedule.py",)
    result, called = calling(zb_h1_bubble_fraction, 4, 8, 1.0, 1.0, 1.0, forbidden=forbidden, files=files)
    assert not called, f"simulate it or use the formula instead of calling {', '.join(sorted(called))}"
    got = number(result)
    assert got is not None and abs(got - 0.125) <= 1e-9, (
        "p = 4, m = 8, t_F = t_B = t_W = 1 s: expected 0.125 ((p − 1)(t_F + t_B − t_W) = 3 s over the ideal 24 s; "
        f"1F1B's is 0.375), got {result!r:.80}"
    )
    outside = [  # W is not the shortest op, so Qi et al.'s formula does not hold
        (
            (5, 10, 1.0, 0.5, 1.5),
            4 / 30,
            "the formula gives 0 s; the last stage starts (p − 1)t_F = 4 s late: 4 s over the ideal 30 s, 0.1333",
        ),
        (
            (6, 12, 1.0, 2.0, 1.5),
            10 / 54,
            "the formula gives 7.5 s; the first stage waits (p − 1)t_B = 10 s for the first gradient: 10 s over the "
            "ideal 54 s, 0.1852",
        ),
    ]
    for case, want, why in outside:
        result, called = calling(zb_h1_bubble_fraction, *case, forbidden=forbidden, files=files)
        got = number(result)
        assert not called and got is not None and abs(got - want) <= 1e-9, (
            f"zb_h1_bubble_fraction{case}: W is not the shortest op; {why}; got {result!r:.80}"
        )


test_q3_public(zb_h1_bubble_fraction)


# %%
# HIDDEN
def test_q3_other_pipelines(zb_h1_bubble_fraction):
    forbidden = {"pipeline_bubble_time", "pipeline_schedule_report"}
    files = ("course_lib/parallelism/schedule.py",)
    cases = [  # pipeline.pipeline_schedule(p, m, "zb-h1", t_F, t_B + t_W, t_W).bubble_fraction
        ((8, 16, 1.0, 1.0, 1.0), 0.14583333333333334),  # 7 s over 48 s
        ((4, 4, 1.0, 1.5, 0.5), 0.5),  # m = p: 3 × 2 s over 12 s
        ((8, 8, 1.0, 0.25, 2.0), 0.2692307692307692),  # t_W > t_F and t_B < t_F: the last stage starts 7 t_F late
        ((16, 32, 2.0, 3.0, 1.0), 0.3125),  # 15 × 4 s over 192 s
        ((3, 5, 1.0, 2.0, 1.5), 0.17777777777777778),  # t_W > t_F: t_F takes t_W's place, 2 × 2 s over 22.5 s
        ((6, 24, 1.5, 0.5, 2.0), 0.078125),
    ]
    for case, want in cases:
        result, called = calling(zb_h1_bubble_fraction, *case, forbidden=forbidden, files=files)
        got = number(result)
        assert not called and got is not None and abs(got - want) <= 1e-9, (
            f"zb_h1_bubble_fraction{case}: expected {want:.6g}, got {result!r:.80}"
        )


test_q3_other_pipelines(zb_h1_bubble_fraction)

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
# ### Question 4 · Should the expert ranks stay inside a node? (3 points)
#
# Write `expert_layer_times(model, cluster, expert_parallel, tokens)` for a rank holding `tokens` tokens of a
# mixture of experts whose every layer is a MoE layer, with $t = 1$. Return three numbers, the seconds of one MoE
# layer of one micro-batch (forward and backward):
#
# 1. its four all-to-alls (dispatch and combine, forward and backward) with the `expert_parallel` ranks side by
#    side, stride 1 (inside one node when $e$ is at most its GPUs);
# 2. the same with the ranks `cluster.devices_per_node` apart: one rank per node;
# 3. the experts' compute: each token visits `model.routed_matmul_weights_per_layer` weights, 2 FLOPs per weight
#    forward and 4 backward, at half of `cluster.accelerator.peak("bf16")`.
#
# Time one all-to-all with `budget.group_collective_time("all_to_all", cluster, expert_parallel, stride,
# payload_bytes)`, whose payload is the rank's whole buffer (tokens × $k_E$ × $h$ × 2 bytes; the function knows that
# $1/e$ of it stays). Do not call `budget.moe_layer_times`. Then look at your numbers for the public example: which
# placement adds little to the experts' compute, and which adds a quarter?

# %% [raw]
# # BEGIN SOLUTION


# %%
def expert_layer_times(model, cluster, expert_parallel, tokens):
    """(all-to-alls inside a node, all-to-alls one rank per node, experts' compute): seconds of one MoE layer."""
    # BEGIN SOLUTION
    payload = tokens * model.experts_per_token * model.hidden * 2  # bf16
    inside = 4 * budget.group_collective_time("all_to_all", cluster, expert_parallel, 1, payload)
    across = 4 * budget.group_collective_time("all_to_all", cluster, expert_parallel, cluster.devices_per_node, payload)
    flops = 6 * tokens * model.routed_matmul_weights_per_layer  # 2 forward + 4 backward per weight
    return inside, across, flops / (0.5 * cluster.accelerator.peak("bf16"))
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q4_public(expert_layer_times):
    assert callable(expert_layer_times), "define the function expert_layer_times"
    import dataclasses

    from course_lib import hardware, parallelism

    forbidden, files = {"moe_layer_times"}, ("course_lib/budget/experts.py",)
    cluster = dataclasses.replace(hardware.DGX_H100, nodes=8, name="8 × DGX H100")
    result, called = calling(
        expert_layer_times, parallelism.MIXTRAL_8X7B, cluster, 8, 4096, forbidden=forbidden, files=files
    )
    assert not called, "time the all-to-alls and the compute yourself instead of calling moe_layer_times"
    wants = (0.0006566439697950377, 0.00473682048, 0.017509917226968656)
    gots = [number(x) for x in result] if isinstance(result, (tuple, list)) and len(result) == 3 else [None] * 3
    assert all(got is not None and abs(got - want) <= 1e-9 * want for got, want in zip(gots, wants, strict=True)), (
        "Mixtral 8x7B, 4096 tokens a rank, e = 8 on 8 DGX H100 nodes: expected (657 µs in one node, 4.74 ms "
        f"across nodes, 17.5 ms of experts' compute), got {result!r:.120}"
    )
    cluster = dataclasses.replace(hardware.DGX_H100, nodes=4, name="4 × DGX H100")
    result = expert_layer_times(parallelism.MIXTRAL_8X7B, cluster, 4, 4096)
    across = number(result[1]) if isinstance(result, (tuple, list)) and len(result) == 3 else None
    assert across is not None and abs(across - 0.00406573184) <= 1e-9 * 0.00406573184, (
        "e = 4 on 4 DGX H100 nodes, one rank per node (8 GPUs apart, not e = 4 apart): expected 4.07 ms across nodes, "
        f"got {result!r:.120}"
    )


test_q4_public(expert_layer_times)


# %%
# HIDDEN
def test_q4_other_layers(expert_layer_times):
    import dataclasses

    from course_lib import hardware, parallelism

    forbidden, files = {"moe_layer_times"}, ("course_lib/budget/experts.py",)
    h100 = dataclasses.replace(hardware.DGX_H100, nodes=8, name="8 × DGX H100")
    a100 = dataclasses.replace(hardware.DGX_A100, nodes=8, name="8 × DGX A100")
    cases = [  # budget.moe_layer_times(model, cluster, e, tokens, stride) at strides 1 and 8
        ((parallelism.MIXTRAL_8X7B, h100, 4, 4096), (0.0005661519741100324, 0.00406573184, 0.017509917226968656)),
        ((parallelism.MIXTRAL_8X22B, h100, 8, 16384), (0.003823863818770227, 0.02822492288, 0.12006800384207078)),
        ((parallelism.MIXTRAL_8X7B, a100, 2, 1024), (0.00016301013333333333, 0.00138137728, 0.013876048187076924)),
        ((parallelism.MIXTRAL_8X22B, a100, 4, 512), (0.0001804864, 0.00154914944, 0.011893755588923078)),
    ]
    for case, wants in cases:
        result, called = calling(expert_layer_times, *case, forbidden=forbidden, files=files)
        ok = isinstance(result, (tuple, list)) and len(result) == 3
        gots = [number(x) for x in result] if ok else [None] * 3
        shown = (case[0].name, case[1].name, *case[2:])
        assert not called and all(
            got is not None and abs(got - want) <= 1e-9 * want for got, want in zip(gots, wants, strict=True)
        ), f"expert_layer_times{shown}: expected {wants}, got {result!r:.120}"


test_q4_other_layers(expert_layer_times)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [markdown]
# ## Before you submit
#
# Restart the kernel and run all cells: the last cell reruns every public test. Then submit this notebook
# (`07_sequences_and_experts.ipynb`) as your instructor asks.
