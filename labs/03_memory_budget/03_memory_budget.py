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
# # The graded master of lab 3 (otter-grader 7 format). `make assignments` (tools/assignments.py) runs
# # `otter assign` on it; it stages course_lib/ and requirements.txt next to a copy of this notebook first,
# # so that the autograder zip carries the course's code and runs on Gradescope as it does locally.
# # Its links are relative to labs/, where the student version goes (make assignments).
# name: 03_memory_budget
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
# # Lab 3 · Fit a model on a device
#
# Whether a plan runs at all is decided by the memory of one device. [Lesson 03 · Split the
# work](../notebooks/03_parallelism.ipynb) counted it in two parts: the model states, 16 bytes per parameter with
# mixed-precision Adam (2 of 16-bit parameters, 2 of gradients, 12 of optimizer state), and the activations each
# layer stores for the backward pass (Korthikanti et al. 2022). ZeRO shares the model states among the $d$
# data-parallel replicas instead of copying them; tensor parallelism ($t$) and pipeline parallelism ($p$) split the
# model itself; recomputation, sequence parallelism and the pipeline schedule decide the activations. In this lab
# you first change one of these at a time and watch each component against the device's capacity, then compute
# the budgets yourself in the graded questions.
#
# **Time to learn:** about 1.5 hours by the course's rule, the graded questions included
# ([how it is counted](../notebooks/00_course_map.ipynb#How-long-each-part-takes)).
#
# **What you need:** lesson 03, in particular the memory anatomy of one device, the ZeRO stages and ZeRO's
# Table 1.
#
# **Scope.** The memory is that of the first pipeline stage under the 1F1B schedule (it holds the most activations,
# those of $\min(p, m)$ micro-batches), with the parameters split evenly over $t \cdot p$ devices. Temporary
# buffers, the logits, memory fragmentation and the [framework](../notebooks/glossary.ipynb#framework)'s own memory
# are not counted, so a real plan needs headroom.
#
# **The default.** The lab starts on the *ideal model* (its *framework* control reads "ideal model"): lesson 03's
# accounting and nothing else, which the graded questions check term by term. The same control switches to a real
# framework's model: its own bytes per parameter, the logits of the last stage and the memory the fit found beside
# the model's (see [What a framework stores](#What-a-framework-stores) below).
#
# **How it is graded.** Write your answers where you see `...`. The cell `grader.check("q1")` after each question runs
# its public tests and tells you at once whether they pass. The public tests already fail the usual slips (partitioning
# one component too many or too few, an off-by-one in the smallest degree that fits); the grader also runs hidden tests
# with other inputs, so make your answer right for every input, not only for the public examples. Sizes are in bytes
# (decimal: 1 GB = $10^9$ bytes). Where a question says not to call a course_lib function, the grader makes that
# function, and every course_lib function that uses it, raise an error while it runs your answer (whatever name you
# reach it by): an answer that calls it scores 0 on that question.

# %%
from course_lib import hardware, parallelism, units
from course_lib.widgets import readable_feedback

readable_feedback()  # the checks below mark their results with ✔ and ✘, which every font here has

# %% [markdown]
# ## The lab
#
# On the left, the plan under each ZeRO stage as stacked bars (parameters, gradients, optimizer state,
# activations) on a linear axis that ends at twice the device's capacity; the selected stage is outlined, and a bar
# that runs off the axis gets an arrow and its total. On the right, every component of the selected plan on a log
# axis from 100 kB to 100 TB. The tensor-parallel
# slider offers only the divisors of the model's attention heads and the pipeline slider only the divisors of its
# layers, so every position is a plan the model can be split into. The hatched band under the capacity is the margin
# a plan should leave (the calibrated model's, measured on real runs); a framework's legend greys out what no bar
# holds, and a ZeRO stage the framework does not run with the plan (one it lacks, or one it does not combine with a
# pipeline) is an empty slot, with no number.
# %% tags=["nbval-ignore-output", "otter_ignore"]
# nbval-ignore-output: live widget; its output cannot be compared
from course_lib.widgets import memory_budget_lab

lab = memory_budget_lab()
lab

# %% [markdown]
# ## What a framework stores
#
# The ideal model counts ZeRO's 16 bytes per parameter. Frameworks keep other copies, and a plan that fits on
# paper can fail on the cluster for it. What the lab counts for each (`parallelism.FRAMEWORKS`, every behaviour cited
# to the framework's source in `Framework.sources`; bytes per parameter before ZeRO shards them, as parameters +
# gradients + optimizer state):
#
# - *Megatron-LM and nanotron* accumulate each gradient in an fp32 *main gradient*, 4 bytes, which replaces the
#   16-bit one: 2 + 4 + 12 = 18 bytes. Where both run a plan their bars are the same, but they do not run the same
#   plans: Megatron-LM runs ZeRO-2 and 3 only without a pipeline (Megatron-FSDP), nanotron not at all.
# - *DeepSpeed* keeps the 16-bit gradients and makes an fp32 copy of a shard only during the optimizer step:
#   ZeRO's 16 bytes.
# - *FSDP2* keeps fp32 parameter shards and reduces fp32 gradients, 4 + 4 + 8 bytes: 16 as well. (The lab splits these 16
#   bytes as ZeRO's 2 + 2 + 12; under ZeRO-3, which shards all three alike, the total is the same.) Alone it runs no
#   pipeline; *with pipelining, as torchtitan runs it*, it combines every ZeRO stage with a pipeline, but under ZeRO-3 a
#   stage keeps its parameters and fp32 gradients whole through the step (one gather before the first micro-batch, one
#   reduce-scatter after the last), on top of its shards.
# - Every framework also holds the *logits* on the last pipeline stage, 10 bytes per vocabulary entry and token
#   (bf16 logits, the fp32 copy the loss takes, its fp32 gradient), and a fixed *framework memory*: the CUDA
#   context, NCCL's buffers, the allocator's cache and fragmentation. That last term is a fit, not physics: the median,
#   over the Ultra-Scale Playbook's 1B and 3B runs with nanotron, of the memory measured beyond what the model counts,
#   judged afterwards on the 8B and 80B runs; it also absorbs whatever else the model misses, and every other
#   framework, the course's default calibration (Megatron-LM on DGX H100 nodes) included, carries it over unchanged.
#
# With a framework the lab shows the heaviest pipeline stage: the first (most activations) or the last (the logits).
# Each framework's rules (the ZeRO stages it runs, those it combines with a pipeline, its pipeline schedules) and the
# default plan under each:

# %%
from course_lib.viz.pipeline_schedule import SCHEDULE_NAMES  # GPipe, 1F1B, ...
from course_lib.widgets.memory import FRAMEWORK_LABELS  # the names the lab's framework control shows

default_plan = parallelism.ParallelPlan(
    data_parallel=8,
    tensor_parallel=8,
    pipeline_parallel=8,
    zero_stage=1,
    grad_accum_steps=64,
    recompute="selective",
    sequence_parallel=True,
)
ideal_recipe = parallelism.PARAM_BYTES + parallelism.GRAD_BYTES + parallelism.ADAM_OPTIMIZER_BYTES_PER_PARAM


zero_stages = units.format_zero_stages  # "ZeRO-0/1", or "none"
print(f"{'framework':20} {'bytes per parameter':22} {'runs':13} {'with p > 1':13} default plan under ZeRO 0, 1, 2, 3")
for key, label in FRAMEWORK_LABELS.items():
    framework = None if key == "ideal" else parallelism.FRAMEWORKS[key]
    report = parallelism.memory_budget_report(parallelism.GPT3_175B, default_plan, hardware.A100, framework=framework)
    totals = ", ".join("not run" if b is None else units.format_bytes(b.total) for b in report.by_zero_stage)
    if framework is None:
        recipe, runs, piped = f"{ideal_recipe} B = 2 + 2 + 12", "any", "any"
    else:
        param, grad, buffer, optimizer = parallelism.PRECISION_RECIPES[framework.precision]
        recipe = f"{param + grad + buffer + optimizer} B = {param} + {grad + buffer} + {optimizer}"
        runs = zero_stages(framework.zero_stages)
        piped = zero_stages(framework.zero_stages_with_pipeline)
    print(f"{label:20} {recipe:22} {runs:13} {piped:13} {totals}")
print("\npipeline schedules:")
for key, label in list(FRAMEWORK_LABELS.items())[1:]:
    schedules = parallelism.FRAMEWORKS[key].schedules
    print(f"  {label:20} {', '.join(SCHEDULE_NAMES[schedule] for schedule in schedules) or 'no pipeline'}")
print(
    f"logits: {units.format_count(parallelism.MEGATRON_CORE.logits_bytes_per_element)} B per vocabulary entry and "
    f"token; framework memory (fitted on the Playbook's runs, carried into the default calibration): "
    f"{units.format_bytes(parallelism.REFERENCE_CALIBRATION.framework_bytes)}"
)

# %% [markdown]
# ## Explore
#
# Start from the default settings: GPT-3 175B on 80 GB A100s with $d = t = p = 8$ (512 devices), ZeRO-1, selective
# recomputation with sequence parallelism, one sequence per micro-batch and 64 micro-batches per step. This question
# is not graded; its answer is below.
#
# 1. **Trade compute for memory.** Raise *micro-batch b* one sequence at a time. At which $b$ does the plan stop
#    fitting, and by how much? Then choose *full* recomputation: does $b = 7$ fit now, and what did it save?
#
# <details>
# <summary>Answer</summary>
#
# 1. $b = 6$ fits (76.6 GB, 3.39 GB headroom); $b = 7$ does not fit by 6.88 GB (86.9 GB). With full recomputation
#    each layer keeps only its input, and $b = 7$ needs 48.8 GB: the activations drop from 71.9 to 33.8 GB, paid for
#    by running the forward pass twice.
#
# </details>

# %% [markdown]
# ## Key figures at the default settings
#
# A fresh lab at the default plan, and the same plan computed with `course_lib.parallelism`:

# %% tags=["otter_ignore"]
reference = memory_budget_lab()
r = reference.result
print(
    f"{r['model']} ({units.format_count(r['params'])} parameters) on {r['devices']} × {r['device']}: "
    f"d = {r['data_parallel']}, t = {r['tensor_parallel']}, p = {r['pipeline_parallel']}, ZeRO-{r['zero_stage']}"
)
for name in ("parameters", "gradients", "optimizer_state", "activations", "total"):
    print(f"{name.replace('_', ' '):18} {units.format_bytes(r[name + '_bytes']):>9}")
print(f"capacity           {units.format_bytes(r['capacity_bytes']):>9}")
print(f"fits: {r['fits']}, headroom {units.format_bytes(r['headroom_bytes'])}")
total = parallelism.memory_breakdown(parallelism.GPT3_175B, default_plan, calibration=None).total  # defined above
print(
    f"memory_breakdown(GPT3_175B, default_plan, calibration=None).total = {units.format_bytes(total)}; agrees with the lab: "
    f"{total == r['total_bytes']}; fits an {units.format_bytes(hardware.A100.hbm_capacity_bytes)} A100: "
    f"{total <= hardware.A100.hbm_capacity_bytes}"
)

# %% [markdown]
# ## Graded questions
#
# Each question names the function or variable to define. "Fits" means at most the device's capacity:
# `bytes_needed <= capacity_bytes`. A plan is a `parallelism.ParallelPlan` (lesson 03), a frozen record: to try it
# with one field changed, `plan.replace(micro_batch=2)` returns a copy with that field set and the others kept.

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
# points: 3
# all_or_nothing: true

# %% [markdown]
# ### Question 1 · The ZeRO stages (3 points)
#
# Write `model_state_bytes(params, data_parallel, stage)`: the bytes of model states one device holds when a
# model of $\Psi$ = `params` parameters is trained with mixed-precision Adam (2 bytes of parameters, 2 of
# gradients and $K_\text{opt} = 12$ of optimizer state per parameter) by $N_d$ = `data_parallel` replicas under ZeRO stage
# 0, 1, 2 or 3. Build it from what each stage partitions; do not call `parallelism.zero_model_state_bytes` or
# `parallelism.zero_model_state_breakdown`.

# %% [raw]
# # BEGIN SOLUTION


# %%
def model_state_bytes(params, data_parallel, stage):
    """Model-state bytes per device under ZeRO ``stage`` over ``data_parallel`` replicas (mixed-precision Adam)."""
    # BEGIN SOLUTION
    parameters = 2 * params / (data_parallel if stage >= 3 else 1)
    gradients = 2 * params / (data_parallel if stage >= 2 else 1)
    optimizer_state = 12 * params / (data_parallel if stage >= 1 else 1)
    return parameters + gradients + optimizer_state
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q1_public(model_state_bytes):
    assert callable(model_state_bytes), "define the function model_state_bytes"

    forbidden = {"zero_model_state_bytes", "zero_model_state_breakdown"}
    files = ("course_lib/parallelism/memory.py",)
    for case, want, what in [
        ((7.5e9, 64, 0), 120e9, "7.5B parameters at stage 0: expected 120 GB"),
        ((1e12, 1024, 3), 15.625e9, "1T parameters at stage 3 over 1024 replicas (ZeRO's Table 1): expected 15.6 GB"),
        ((7.5e9, 64, 1), 31.40625e9, "7.5B at stage 1 over 64 replicas (ZeRO's Table 1): expected 31.4 GB"),
        ((7.5e9, 16, 2), 21.5625e9, "7.5B at stage 2 over 16 replicas (ZeRO's Table 1): expected 21.6 GB"),
    ]:
        result, called = calling(model_state_bytes, *case, forbidden=forbidden, files=files)
        assert not called, f"build it from what each stage partitions instead of calling {', '.join(sorted(called))}"
        got = number(result)
        assert got is not None, f"return bytes as a number, got {result!r:.80}"
        assert abs(got - want) <= 1e-6 * want, f"{what}, got {got:.4g} B"


test_q1_public(model_state_bytes)


# %%
# HIDDEN
def test_q1_every_stage(model_state_bytes):
    forbidden = {"zero_model_state_bytes", "zero_model_state_breakdown"}
    files = ("course_lib/parallelism/memory.py",)
    cases = [  # (params, replicas, stage): 2Ψ + 2Ψ + 12Ψ bytes, each term divided by N_d once its stage partitions it
        ((7500000000.0, 1, 0), 120000000000.0),
        ((7500000000.0, 1, 1), 120000000000.0),
        ((7500000000.0, 1, 2), 120000000000.0),
        ((7500000000.0, 1, 3), 120000000000.0),
        ((7500000000.0, 8, 0), 120000000000.0),
        ((7500000000.0, 8, 1), 41250000000.0),
        ((7500000000.0, 8, 2), 28125000000.0),
        ((7500000000.0, 8, 3), 15000000000.0),
        ((7500000000.0, 64, 0), 120000000000.0),
        ((7500000000.0, 64, 1), 31406250000.0),
        ((7500000000.0, 64, 2), 16640625000.0),
        ((7500000000.0, 64, 3), 1875000000.0),
        ((175000000000.0, 1, 0), 2800000000000.0),
        ((175000000000.0, 1, 1), 2800000000000.0),
        ((175000000000.0, 1, 2), 2800000000000.0),
        ((175000000000.0, 1, 3), 2800000000000.0),
        ((175000000000.0, 8, 0), 2800000000000.0),
        ((175000000000.0, 8, 1), 962500000000.0),
        ((175000000000.0, 8, 2), 656250000000.0),
        ((175000000000.0, 8, 3), 350000000000.0),
        ((175000000000.0, 64, 0), 2800000000000.0),
        ((175000000000.0, 64, 1), 732812500000.0),
        ((175000000000.0, 64, 2), 388281250000.0),
        ((175000000000.0, 64, 3), 43750000000.0),
    ]
    for case, want in cases:
        result, called = calling(model_state_bytes, *case, forbidden=forbidden, files=files)
        got = number(result)
        assert not called and got is not None and abs(got - want) <= 1e-6 * want, (
            f"model_state_bytes{case}: expected {want:.4g} B, got {result!r:.80}"
        )


test_q1_every_stage(model_state_bytes)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 3
# all_or_nothing: true

# %% [markdown]
# ### Question 2 · The smallest data-parallel degree that fits (3 points)
#
# Write `smallest_data_parallel(params, stage, capacity_bytes)`: the smallest whole number of replicas $N_d \ge 1$
# at which the model states of ZeRO `stage` fit in `capacity_bytes`, or `None` if no number of replicas is enough.
# (Which stages have a floor that no $N_d$ can get under?) Use course_lib's `parallelism.zero_model_state_bytes`
# rather than your function from question 1, so that a slip there does not carry over. Check your reasoning in
# the lab: pick a model and a stage, and watch the model states in its bar as you raise the data-parallel size.

# %% [raw]
# # BEGIN SOLUTION


# %%
def smallest_data_parallel(params, stage, capacity_bytes):
    """Smallest N_d whose ZeRO-``stage`` model states fit in ``capacity_bytes``, or None if none does."""
    # BEGIN SOLUTION
    floor_bytes = {0: 16, 1: 4, 2: 2, 3: 0}[stage] * params  # what ZeRO does not partition at this stage
    if stage == 0:
        return 1 if floor_bytes <= capacity_bytes else None
    if floor_bytes >= capacity_bytes:  # the partitioned part can shrink towards 0, never below it
        return None
    replicas = 1
    while parallelism.zero_model_state_bytes(params, replicas, stage) > capacity_bytes:
        replicas += 1
    return replicas
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q2_public(smallest_data_parallel):
    assert callable(smallest_data_parallel), "define the function smallest_data_parallel"

    result = smallest_data_parallel(7.5e9, 3, 16e9)
    assert type(number(result)) is int and number(result) == 8, (
        f"7.5B parameters, ZeRO-3, 16 GB: 120 GB / 16 GB = 7.5, so expected 8 replicas (an int), got {result!r:.80}"
    )
    result = smallest_data_parallel(7.5e9, 3, 15e9)
    assert number(result) == 8, (
        f"7.5B parameters, ZeRO-3, 15 GB: 8 replicas need exactly 15 GB, which fits (at most the capacity), "
        f"got {result!r:.80}"
    )
    result = smallest_data_parallel(7.5e9, 1, 16e9)
    assert result is None, (
        f"7.5B parameters, ZeRO-1, 16 GB: the unpartitioned parameters and gradients alone take 30 GB, expected None, "
        f"got {result!r:.80}"
    )


test_q2_public(smallest_data_parallel)


# %%
# HIDDEN
def test_q2_other_budgets(smallest_data_parallel):
    cases = [  # the smallest N_d with model states ≤ capacity (searched up to 2048 once, by hand), or None: never
        ((7.5e9, 2, 16e9), 105),  # exact fit
        ((7.5e9, 1, 40e9), 9),
        ((175e9, 3, 80e9), 35),
        ((1.5e9, 0, 32e9), 1),  # stage 0 fits
        ((5e9, 3, 80e9), 1),
        ((175e9, 1, 80e9), None),  # the floors: 4Ψ and 2Ψ stay on every GPU
        ((7.5e9, 2, 15e9), None),
        ((175e9, 0, 80e9), None),  # stage 0 does not fit
    ]
    for case, want in cases:
        result = smallest_data_parallel(*case)
        if want is None:
            assert result is None, f"smallest_data_parallel{case}: expected None, got {result!r:.80}"
        else:
            got = number(result)
            assert type(got) is int and got == want, (
                f"smallest_data_parallel{case}: expected {want}, got {result!r:.80}"
            )


test_q2_other_budgets(smallest_data_parallel)

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
# ### Question 3 · The largest micro-batch that fits (2 points)
#
# Activations grow with the micro-batch; model states do not. Write `largest_micro_batch(model, plan, capacity_bytes)`:
# the largest micro-batch $b \ge 1$ for which `parallelism.memory_breakdown(model, plan, calibration=None)` (lesson 03's
# [ideal model](../notebooks/glossary.ipynb#calibration), as in the lab above) with that micro-batch fits in
# `capacity_bytes` (all of it: model states and activations), or 0 if even $b = 1$ does not fit.
# `plan.replace(micro_batch=b)` gives a copy of the plan with another micro-batch.

# %% [raw]
# # BEGIN SOLUTION


# %%
def largest_micro_batch(model, plan, capacity_bytes):
    """Largest micro-batch whose per-device memory fits in ``capacity_bytes`` (0 if none does)."""

    # BEGIN SOLUTION
    def memory_with(b):
        return parallelism.memory_breakdown(model, plan.replace(micro_batch=b), calibration=None).total

    micro_batch = 0
    while memory_with(micro_batch + 1) <= capacity_bytes:
        micro_batch += 1
    return micro_batch
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q3_public(largest_micro_batch):
    from course_lib import parallelism

    assert callable(largest_micro_batch), "define the function largest_micro_batch"
    plan = parallelism.ParallelPlan(
        data_parallel=8,
        tensor_parallel=8,
        pipeline_parallel=8,
        zero_stage=1,
        grad_accum_steps=64,
        recompute="selective",
        sequence_parallel=True,
    )
    result = largest_micro_batch(parallelism.GPT3_175B, plan, 80e9)
    assert type(number(result)) is int and number(result) == 6, (
        f"GPT-3 175B, the lab's default plan, on an 80 GB A100: expected 6 (an int), got {result!r:.80}"
    )
    result = largest_micro_batch(parallelism.GPT3_175B, parallelism.ParallelPlan(tensor_parallel=8), 80e9)
    assert number(result) == 0, (
        f"GPT-3 175B with t = 8 alone needs far more than 80 GB per GPU even at micro-batch 1: expected 0, "
        f"got {result!r:.80}"
    )


test_q3_public(largest_micro_batch)


# %%
# HIDDEN
def test_q3_other_plans(largest_micro_batch):
    from course_lib import parallelism

    gpt3, mt_nlg = parallelism.GPT3_175B, parallelism.MT_NLG_530B
    cases = [  # the largest micro-batch whose memory fits (searched up to 512 once), 0 if none does
        (
            gpt3,
            parallelism.ParallelPlan(
                data_parallel=16, tensor_parallel=8, pipeline_parallel=8, zero_stage=1, grad_accum_steps=64
            ),
            80e9,
            1,
        ),  # no recomputation: activations dominate
        (
            gpt3,
            parallelism.ParallelPlan(
                data_parallel=8,
                tensor_parallel=8,
                pipeline_parallel=12,
                zero_stage=3,
                grad_accum_steps=32,
                recompute="full",
            ),
            141e9,
            28,
        ),
        (
            mt_nlg,
            parallelism.ParallelPlan(
                data_parallel=4,
                tensor_parallel=8,
                pipeline_parallel=35,
                zero_stage=1,
                grad_accum_steps=70,
                recompute="selective",
                sequence_parallel=True,
            ),
            80e9,
            3,
        ),
        (gpt3, parallelism.ParallelPlan(tensor_parallel=8, zero_stage=0), 80e9, 0),  # model states alone too big
    ]
    for model, plan, capacity, want in cases:
        result = largest_micro_batch(model, plan, capacity)
        got = number(result)
        assert type(got) is int and got == want, (
            f"largest_micro_batch({model.name}, {plan}, {capacity:g}): expected {want}, got {result!r:.80}"
        )


test_q3_other_plans(largest_micro_batch)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q4
# points: 2
# all_or_nothing: true

# %% [markdown]
# ### Question 4 · A framework's bytes per parameter (2 points)
#
# A framework's recipe counts more than ZeRO's three terms (see [What a framework stores](#What-a-framework-stores)).
# `parallelism.PRECISION_RECIPES` gives each as bytes per parameter of four copies: (16-bit parameters, 16-bit
# gradients, fp32 gradient buffer, optimizer state with the fp32 master weights); nanotron's and Megatron-LM's
# "fp32-main-grads" is `(2, 0, 4, 12)`. Write `recipe_model_state_bytes(params, data_parallel, stage, recipe)`: the
# model-state bytes one device holds for $\Psi$ = `params` parameters stored as `recipe` (such a tuple), over
# $N_d$ = `data_parallel` replicas under ZeRO `stage`. As in question 1, ZeRO-1 shards the optimizer state, ZeRO-2
# also the gradients (both gradient copies), ZeRO-3 also the parameters. Megatron-LM's documentation writes its
# distributed optimizer (ZeRO-1) as $6 + 12/d$ bytes per parameter: your function should agree.

# %% [raw]
# # BEGIN SOLUTION


# %%
def recipe_model_state_bytes(params, data_parallel, stage, recipe):
    """Model-state bytes per device of a framework's recipe (bytes per parameter of the four copies) under ZeRO."""
    # BEGIN SOLUTION
    parameter_bytes, gradient_bytes, buffer_bytes, optimizer_bytes = recipe
    parameters = parameter_bytes * params / (data_parallel if stage >= 3 else 1)
    gradients = (gradient_bytes + buffer_bytes) * params / (data_parallel if stage >= 2 else 1)
    optimizer_state = optimizer_bytes * params / (data_parallel if stage >= 1 else 1)
    return parameters + gradients + optimizer_state
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q4_public(recipe_model_state_bytes):
    assert callable(recipe_model_state_bytes), "define the function recipe_model_state_bytes"

    for case, want, what in [
        ((1e9, 8, 1, (2, 0, 4, 12)), 7.5e9, "Megatron-LM's distributed optimizer, 6 + 12/8 bytes a parameter: 7.5 GB"),
        ((7.5e9, 64, 1, (2, 2, 0, 12)), 31.40625e9, "ZeRO's recipe at stage 1 over 64 replicas (Table 1): 31.4 GB"),
        ((7.5e9, 16, 2, (2, 2, 4, 12)), 23.4375e9, "bf16 gradients and their fp32 buffer, stage 2 over 16: 23.4 GB"),
        ((1e9, 8, 3, (2, 0, 4, 12)), 2.25e9, "fp32 main gradients, stage 3 over 8 replicas: 18 GB / 8 = 2.25 GB"),
    ]:
        result = recipe_model_state_bytes(*case)
        got = number(result)
        assert got is not None, f"return bytes as a number, got {result!r:.80}"
        assert abs(got - want) <= 1e-6 * want, f"{what}, got {got:.4g} B"


test_q4_public(recipe_model_state_bytes)


# %%
# HIDDEN
def test_q4_every_recipe_and_stage(recipe_model_state_bytes):
    cases = [  # 7.5B parameters, the three recipes: (p + g + b + o)Ψ, each term divided by N_d once its stage shards it
        ((7.5e9, 1, 0, (2, 2, 0, 12)), 120000000000.0),
        ((7.5e9, 8, 1, (2, 2, 0, 12)), 41250000000.0),
        ((7.5e9, 8, 2, (2, 2, 0, 12)), 28125000000.0),
        ((7.5e9, 8, 3, (2, 2, 0, 12)), 15000000000.0),
        ((7.5e9, 64, 0, (2, 2, 0, 12)), 120000000000.0),
        ((7.5e9, 64, 2, (2, 2, 0, 12)), 16640625000.0),
        ((7.5e9, 1, 3, (2, 2, 4, 12)), 150000000000.0),
        ((7.5e9, 8, 0, (2, 2, 4, 12)), 150000000000.0),
        ((7.5e9, 8, 1, (2, 2, 4, 12)), 71250000000.0),
        ((7.5e9, 8, 2, (2, 2, 4, 12)), 31875000000.0),
        ((7.5e9, 8, 3, (2, 2, 4, 12)), 18750000000.0),
        ((7.5e9, 64, 1, (2, 2, 4, 12)), 61406250000.0),
        ((7.5e9, 64, 2, (2, 2, 4, 12)), 17109375000.0),
        ((7.5e9, 64, 3, (2, 2, 4, 12)), 2343750000.0),
        ((7.5e9, 1, 2, (2, 0, 4, 12)), 135000000000.0),
        ((7.5e9, 8, 0, (2, 0, 4, 12)), 135000000000.0),
        ((7.5e9, 8, 1, (2, 0, 4, 12)), 56250000000.0),
        ((7.5e9, 8, 2, (2, 0, 4, 12)), 30000000000.0),
        ((7.5e9, 8, 3, (2, 0, 4, 12)), 16875000000.0),
        ((7.5e9, 64, 1, (2, 0, 4, 12)), 46406250000.0),
        ((7.5e9, 64, 2, (2, 0, 4, 12)), 16875000000.0),
        ((7.5e9, 64, 3, (2, 0, 4, 12)), 2109375000.0),
    ]
    for case, want in cases:
        result = recipe_model_state_bytes(*case)
        got = number(result)
        assert got is not None and abs(got - want) <= 1e-6 * want, (
            f"recipe_model_state_bytes{case}: expected {want:.4g} B, got {result!r:.80}"
        )


test_q4_every_recipe_and_stage(recipe_model_state_bytes)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [markdown]
# ## Before you submit
#
# Restart the kernel and run all cells: the last cell reruns every public test. Then submit this notebook
# (`03_memory_budget.ipynb`) as your instructor asks.
