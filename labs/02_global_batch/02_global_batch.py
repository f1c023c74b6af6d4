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
# # The graded master of lab 2 (otter-grader 7 format). `make assignments` (tools/assignments.py) runs
# # `otter assign` on it; it stages course_lib/ and requirements.txt next to a copy of this notebook first,
# # so that the autograder zip carries the course's code and runs on Gradescope as it does locally.
# # Its links are relative to labs/, where the student version goes (make assignments).
# name: 02_global_batch
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
# # Lab 2 · Count the examples in a step
#
# How many examples does one optimizer step see? [Lesson 03 · Split the work](../notebooks/03_parallelism.ipynb)
# gave the rule $B_\text{global} = b_\text{micro} \times N_\text{acc} \times N_\text{dp}$: each of the $d$
# data-parallel replicas works through $N_\text{acc}$ micro-batches of $b$ examples. Tensor- and pipeline-parallel
# groups split the work on those *same* examples, so they multiply the devices, $d \times t \times p$, but not the
# examples. In this lab you first move the six numbers and watch both counts; then you use that accounting to size
# real runs in the graded questions.
#
# **Time to learn:** about 1.1 hours by the course's rule, the graded questions included
# ([how it is counted](../notebooks/00_course_map.ipynb#How-long-each-part-takes)).
#
# **What you need:** lesson 03, in particular the global batch and the pipeline bubble.
#
# **Scope.** The count is nominal: every replica runs the same micro-batch and the same number of accumulation
# steps, and every sequence is `seq_len` tokens long. Sequence packing, variable batches and uneven schedules change
# the effective number of examples and need their own accounting.
#
# **How it is graded.** Write your answers where you see `...`. The cell `grader.check("q1")` after each question
# runs its public tests and tells you at once whether they pass. The public tests already fail the usual slips
# (letting the tensor- or pipeline-parallel size multiply the batch, confusing tokens with sequences); the grader
# also runs hidden tests with other inputs, so make your answer right for every input, not only for the public
# examples.

# %%
from course_lib import parallelism, units
from course_lib.widgets import readable_feedback

readable_feedback()  # the checks below mark their results with ✔ and ✘, which every font here has

# %% [markdown]
# ## The lab
#
# On the left, the devices: a row per data-parallel replica (the first 8 are drawn), its $t \times p$ devices in
# the row (shaded by pipeline stage, at most 16 drawn), and on the right of each row the range of examples that
# replica works on in one step: every device of a row works on the same ones. On the right, the two counts on a log
# scale, each bar built from its factors: devices $= d \cdot t \cdot p$ and examples $= b \cdot N_\text{acc} \cdot
# d$. Only $d$ (green) appears in both: with fewer replicas, the batch comes back only through more accumulation
# steps (more time per step) or a larger micro-batch (more activation memory per device).
# %% tags=["nbval-ignore-output", "otter_ignore"]
# nbval-ignore-output: live widget; its output cannot be compared
from course_lib.widgets import global_batch_lab

lab = global_batch_lab()
lab

# %% [markdown]
# ## Explore
#
# Start from the default settings: the lesson's example, $b = 8$, $N_\text{acc} = 16$, $d = 64$, with $t = p = 1$
# and 2048-token sequences. This question is not graded; its answer is below.
#
# 1. **Add tensor parallelism.** Move *tensor parallel t* from 1 to 8. What happens to the number of devices, and
#    to the global batch? Which rows of the left panel change, and how?
#
# <details>
# <summary>Answer</summary>
#
# 1. The devices grow from 64 to 512 and the global batch stays at 8192: each replica's row grows from one device
#    to eight, and every row keeps its 128 examples (b × N_acc). The bar of devices gains a red t segment; the bar of
#    examples does not move. Pipeline stages act the same way: with $p = 4$ on top, 2048 devices share the same
#    8192 examples, 128 per group of $t \times p = 32$ devices.
#
# </details>

# %% [markdown]
# ## Key figures at the default settings
#
# A fresh lab at the lesson's example, and the global batch from `course_lib.parallelism`:

# %% tags=["otter_ignore"]
reference = global_batch_lab()
r = reference.result
print(
    f"b = {r['micro_batch']}, N_acc = {r['grad_accum_steps']}, d = {r['data_parallel']}, "
    f"t = {r['tensor_parallel']}, p = {r['pipeline_parallel']}, seq_len = {r['seq_len']} tokens"
)
print(f"global batch            {units.format_count(r['global_batch'])} examples")
print(f"tokens per step         {units.format_count(r['tokens_per_step'])} ({r['tokens_per_step']})")
print(f"devices                 {units.format_count(r['devices'])}")
print(
    f"examples per replica    {units.format_count(r['examples_per_replica_per_step'])} (b × N_acc), shared by its "
    f"t × p = {r['devices_per_replica']} device(s)"
)
formula = parallelism.global_batch(micro_batch=8, grad_accum_steps=16, data_parallel=64)
print(f"parallelism.global_batch(8, 16, 64) = {formula}; agrees with the lab: {formula == r['global_batch']}")

# %% [markdown]
# ## Graded questions
#
# Each question names the function or variable to define. Every plan below uses all of its devices:
# $N_\text{GPU} = N_\text{dp} \cdot t \cdot p$.

# %%
# IGNORE: otter leaves this cell out of the student version and the autograder. The tests below call helpers of
# tools/grading_helpers.py, which `make assignments` writes into each test that calls them (tools/assignments.py).
import os
import sys

sys.path.insert(0, os.path.abspath("../.."))  # the repository, for tools/ (this master runs in labs/NN_name/)
from tools.grading_helpers import number, raises_value_error

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 2
# all_or_nothing: true

# %% [markdown]
# ### Question 1 · Samples per step from the devices (2 points)
#
# Write `global_batch_samples(micro_batch, grad_accum_steps, devices, tensor_parallel, pipeline_parallel)`: the
# global batch in samples of a plan that spreads `devices` accelerators over tensor-parallel groups of size $t$,
# pipelines of $p$ stages and as many data-parallel replicas as that leaves. If $t \cdot p$ does not divide
# `devices`, raise `ValueError`. Check a few settings against the lab.

# %% [raw]
# # BEGIN SOLUTION


# %%
def global_batch_samples(micro_batch, grad_accum_steps, devices, tensor_parallel, pipeline_parallel):
    """Samples per optimizer step when ``devices`` are split into t × p groups and data-parallel replicas."""
    # BEGIN SOLUTION
    if devices % (tensor_parallel * pipeline_parallel):
        raise ValueError(f"tensor_parallel × pipeline_parallel must divide devices ({devices})")
    data_parallel = devices // (tensor_parallel * pipeline_parallel)
    return micro_batch * grad_accum_steps * data_parallel  # t and p share the same examples
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q1_public(global_batch_samples):
    assert callable(global_batch_samples), "define the function global_batch_samples"

    result = global_batch_samples(8, 16, 64, 1, 1)
    assert type(number(result)) is int and number(result) == 8192, (
        f"micro-batch 8, 16 accumulation steps, 64 replicas: expected 8192 samples (an int), got {result!r:.80}"
    )
    assert raises_value_error(global_batch_samples, 1, 1, 12, 8, 1), (
        "12 devices cannot be split into tensor-parallel groups of 8: raise ValueError"
    )
    result = global_batch_samples(2, 4, 256, 4, 2)
    assert number(result) == 256, (
        "micro-batch 2, 4 accumulation steps, 256 devices with t = 4 and p = 2: 32 replicas, expected 256 samples "
        f"(tensor and pipeline groups share their replica's examples), got {result!r:.80}"
    )


test_q1_public(global_batch_samples)


# %%
# HIDDEN
def test_q1_split_devices(global_batch_samples):
    # b·acc·n/(t·p), worked out by hand; t and p must not multiply the batch; each case has t·p > 1
    cases = [((8, 16, 512, 8, 1), 8192), ((8, 16, 2048, 8, 4), 8192), ((2, 8, 1024, 4, 8), 512)]
    cases += [((1, 64, 4096, 8, 16), 2048), ((4, 1, 32, 1, 2), 64)]
    for case, want in cases:
        result = global_batch_samples(*case)
        got = number(result)
        assert type(got) is int and got == want, f"global_batch_samples{case}: expected {want}, got {result!r:.80}"


test_q1_split_devices(global_batch_samples)

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
# ### Question 2 · Accumulation steps for a target batch (2 points)
#
# Write `accumulation_steps(target_global_batch, micro_batch, devices, tensor_parallel, pipeline_parallel)`: the
# number of accumulation steps $N_\text{acc}$ that gives exactly `target_global_batch` samples per step. Raise
# `ValueError` if no whole number of steps does (or if $t \cdot p$ does not divide `devices`).

# %% [raw]
# # BEGIN SOLUTION


# %%
def accumulation_steps(target_global_batch, micro_batch, devices, tensor_parallel, pipeline_parallel):
    """N_acc such that micro_batch × N_acc × N_dp == target_global_batch."""
    # BEGIN SOLUTION
    if devices % (tensor_parallel * pipeline_parallel):
        raise ValueError(f"tensor_parallel × pipeline_parallel must divide devices ({devices})")
    per_accumulation_step = micro_batch * devices // (tensor_parallel * pipeline_parallel)
    steps, remainder = divmod(target_global_batch, per_accumulation_step)
    if remainder or steps < 1:
        raise ValueError(f"{target_global_batch} samples is not a whole number of steps of {per_accumulation_step}")
    return steps
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q2_public(accumulation_steps):
    assert callable(accumulation_steps), "define the function accumulation_steps"

    result = accumulation_steps(1024, 2, 128, 1, 1)
    assert type(number(result)) is int and number(result) == 4, (
        f"1024 samples with micro-batch 2 on 128 replicas: expected 4 steps (an int), got {result!r:.80}"
    )
    assert raises_value_error(accumulation_steps, 1000, 2, 128, 1, 1), (
        "1000 samples is not a whole number of steps of 256 samples: raise ValueError"
    )
    result = accumulation_steps(2048, 2, 256, 4, 2)
    assert number(result) == 32, (
        "2048 samples, micro-batch 2, 256 devices with t = 4 and p = 2: only the 32 replicas bring examples, "
        f"expected 32 steps, got {result!r:.80}"
    )


test_q2_public(accumulation_steps)


# %%
# HIDDEN
def test_q2_split_devices(accumulation_steps):
    # target / (b · n/(t·p)), worked out by hand; every case is exact
    for case, want in [
        ((1536, 1, 1024, 8, 8), 96),
        ((512, 4, 64, 4, 2), 16),
        ((4096, 2, 2048, 8, 4), 32),
        ((256, 1, 32, 2, 2), 32),
    ]:
        result = accumulation_steps(*case)
        got = number(result)
        assert type(got) is int and got == want, f"accumulation_steps{case}: expected {want}, got {result!r:.80}"
    for case in [(1536, 1, 1024, 8, 3), (100, 1, 64, 8, 1)]:
        assert raises_value_error(accumulation_steps, *case), (
            f"accumulation_steps{case} has no whole answer: raise ValueError"
        )


test_q2_split_devices(accumulation_steps)

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
# ### Question 3 · A real run (2 points)
#
# A team trains on 512 GPUs with tensor-parallel groups of $t = 4$ and pipelines of $p = 8$ stages, a micro-batch
# of 2 sequences of 2048 tokens, and wants $2^{22}$ = 4,194,304 tokens per optimizer step. How many accumulation
# steps does that take, and how large is the pipeline bubble?
#
# Write `accumulation_and_bubble(tokens_per_step, sequence_tokens, micro_batch, devices, tensor_parallel,
# pipeline_parallel)`, which answers both for any such run: it returns the pair `(accumulation_steps,
# bubble_fraction)`,
#
# - `accumulation_steps`: the accumulation steps $N_\text{acc}$ (an int) that give exactly `tokens_per_step` tokens
#   per step, each sample being one sequence of `sequence_tokens` tokens;
# - `bubble_fraction`: the pipeline bubble of this plan, as a fraction of the ideal time (1F1B). Recall that each
#   pipeline processes $N_\text{acc}$ micro-batches per step; `parallelism.pipeline_bubble_fraction` computes the
#   bubble.
#
# Raise `ValueError` if no whole number of steps gives exactly `tokens_per_step` tokens (or if $t \cdot p$ does not
# divide `devices`). Check it on the team's run; the hidden tests size other runs.

# %% [raw]
# # BEGIN SOLUTION


# %%
def accumulation_and_bubble(tokens_per_step, sequence_tokens, micro_batch, devices, tensor_parallel, pipeline_parallel):
    """(N_acc, pipeline bubble) of a run that wants ``tokens_per_step`` tokens per optimizer step."""
    # BEGIN SOLUTION
    if devices % (tensor_parallel * pipeline_parallel):
        raise ValueError(f"tensor_parallel × pipeline_parallel must divide devices ({devices})")
    replicas = devices // (tensor_parallel * pipeline_parallel)  # t and p share their replica's examples
    tokens_per_accumulation_step = micro_batch * replicas * sequence_tokens  # a sample is one sequence
    steps, remainder = divmod(tokens_per_step, tokens_per_accumulation_step)
    if remainder or steps < 1:
        raise ValueError(f"{tokens_per_step} tokens is not a whole number of steps of {tokens_per_accumulation_step}")
    return steps, parallelism.pipeline_bubble_fraction(pipeline_parallel, steps)  # each pipeline runs N_acc
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q3_public(accumulation_and_bubble):
    assert callable(accumulation_and_bubble), "define the function accumulation_and_bubble"

    run = "2**22 tokens per step, 2048-token sequences, micro-batch 2, 512 GPUs, t = 4, p = 8"
    result = accumulation_and_bubble(2**22, 2048, 2, 512, 4, 8)
    assert type(result) in (tuple, list) and len(result) == 2, (
        f"{run}: return the pair (accumulation_steps, bubble_fraction), got {result!r:.80}"
    )
    steps, bubble = number(result[0]), number(result[1])
    assert type(steps) is int, f"{run}: the accumulation steps must be an int, got {result[0]!r:.80}"
    # The usual slips, each with its own hint: 2**22 / (2 · 16 replicas) if tokens are counted as samples, and
    # 2048 sequences / (2 · 512) if every device is a replica
    assert steps != 131072, f"{run}: count samples (one sequence of 2048 tokens each), not tokens"
    assert steps != 2, (
        f"{run}: only the data-parallel replicas bring examples; a replica's t · p = 32 devices share them"
    )
    assert steps == 64, f"{run}: expected 64 accumulation steps (2048 sequences over 16 replicas of 2), got {steps}"
    assert bubble is not None, f"{run}: the bubble must be a float, got {result[1]!r:.80}"
    assert abs(bubble - 7 / 71) > 1e-6, (
        f"{run}: that is the bubble as a share of the whole step, (p − 1)/(m + p − 1); the question asks for a "
        "fraction of the ideal time"
    )
    assert abs(bubble - 7 / 1024) > 1e-6, (
        f"{run}: m is the micro-batches each pipeline processes in a step, N_acc, not those of all 16 replicas"
    )
    assert abs(bubble - 7 / 64) <= 1e-6 * 7 / 64, f"{run}: expected a bubble of 7/64 = 0.1094, got {bubble:.4g}"
    assert raises_value_error(accumulation_and_bubble, 4_000_000, 2048, 2, 512, 4, 8), (
        "4,000,000 tokens is not a whole number of 2048-token sequences (1953.125): raise ValueError"
    )
    assert raises_value_error(accumulation_and_bubble, 2**22 + 2048, 2048, 2, 512, 4, 8), (
        "2**22 + 2048 tokens is 2049 sequences, not a whole number of steps of 2 × 16 = 32: raise ValueError"
    )


test_q3_public(accumulation_and_bubble)


# %%
# HIDDEN
def test_q3_other_runs(accumulation_and_bubble):
    # (tokens, sequence, micro-batch, devices, t, p) and (N_acc, (p − 1)/N_acc), worked out by hand:
    # sequences = tokens / sequence, replicas = devices / (t · p), N_acc = sequences / (micro-batch · replicas)
    cases = [
        ((2**21, 4096, 1, 256, 8, 8), (128, 7 / 128)),  # 512 sequences, 4 replicas
        ((2**22, 4096, 4, 1024, 8, 16), (32, 15 / 32)),  # 1024 sequences, 8 replicas
        ((2**20, 1024, 8, 64, 1, 1), (2, 0.0)),  # 1024 sequences, 64 replicas, no pipeline: no bubble
        ((1536 * 2048, 2048, 1, 1024, 8, 8), (96, 7 / 96)),  # GPT-3's 1536 sequences, 16 replicas
        ((3 * 2**20, 4096, 2, 96, 2, 3), (24, 2 / 24)),  # 768 sequences, 16 replicas
    ]
    for case, (want_steps, want_bubble) in cases:
        result = accumulation_and_bubble(*case)
        assert type(result) in (tuple, list) and len(result) == 2, (
            f"accumulation_and_bubble{case}: expected a pair, got {result!r:.80}"
        )
        steps, bubble = number(result[0]), number(result[1])
        assert type(steps) is int and steps == want_steps, (
            f"accumulation_and_bubble{case}: expected {want_steps} steps, got {result!r:.80}"
        )
        assert bubble is not None and abs(bubble - want_bubble) <= 1e-6 * want_bubble + 1e-12, (
            f"accumulation_and_bubble{case}: expected a bubble of {want_bubble:.6g}, got {result!r:.80}"
        )
    for case in [
        (2**22 + 1024, 2048, 2, 512, 4, 8),  # 2048.5 sequences
        (2**22, 2048, 3, 512, 4, 8),  # 2048 sequences in steps of 3 × 16 = 48
        (2**15, 2048, 2, 512, 4, 8),  # 16 sequences: less than one step of 32
        (2**22, 2048, 2, 500, 4, 8),  # t · p = 32 does not divide 500 devices
    ]:
        assert raises_value_error(accumulation_and_bubble, *case), (
            f"accumulation_and_bubble{case} has no whole number of steps: raise ValueError"
        )


test_q3_other_runs(accumulation_and_bubble)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [markdown]
# ## Before you submit
#
# Restart the kernel and run all cells: the last cell reruns every public test. Then submit this notebook
# (`02_global_batch.ipynb`) as your instructor asks.
