# ---
# jupyter:
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
# Whether a plan runs at all is decided by the memory of one device: the model states (16-bit parameters and
# gradients, 12 bytes of Adam state per parameter) and the activations stored for the backward pass. ZeRO shares
# the model states among the data-parallel replicas instead of copying them; tensor and pipeline parallelism split
# the model itself. In this lab you first move the sliders to see each component against the device's capacity,
# then compute the budgets yourself.
#
# **What you need:** [lesson 03 · Split the work](../notebooks/03_parallelism.ipynb), in particular the memory
# anatomy of one device, the ZeRO stages and ZeRO's Table 1.
#
# **How it is graded.** Write your answers where you see `...`. The cell `grader.check("q1")` after each question
# runs its public tests and tells you at once whether they pass. The grader also runs hidden tests with other
# inputs, chosen so that the usual slips (partitioning one component too many or too few, an off-by-one in the
# smallest degree that fits) fail them, so make your answer right for every input, not only for the public
# example. Sizes are in bytes (decimal: 1 GB = $10^9$ bytes).

# %%
from course_lib import hardware, parallelism, units

# %% [markdown]
# ## Explore
#
# The lab computes the memory of the first pipeline stage with `parallelism.memory_breakdown`. On the left, the
# plan under each ZeRO stage as stacked bars against the device's capacity; on the right, every component of the
# selected plan on a log axis. Things to try:
#
# - With GPT-3 175B, step through ZeRO stages 0 to 3 at 8 data-parallel replicas: which component shrinks at each
#   stage, and which never does?
# - At ZeRO-1, double the data-parallel size several times: the model states approach a floor. Which floor?
# - Raise the micro-batch until the plan no longer fits; then switch recomputation on.

# %% tags=["nbval-ignore-output", "otter_ignore"]
# nbval-ignore-output: live widget; its output cannot be compared
from course_lib.widgets import memory_budget_lab

memory_budget_lab()

# %% [markdown]
# ## Graded questions
#
# Each question names the function or variable to define. "Fits" means at most the device's capacity:
# `bytes_needed <= capacity_bytes`.

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
# gradients and $K = 12$ of optimizer state per parameter) by $N_d$ = `data_parallel` replicas under ZeRO stage
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
    import math
    import numbers
    assert callable(model_state_bytes), "define the function model_state_bytes"
    called = set(model_state_bytes.__code__.co_names) & {"zero_model_state_bytes", "zero_model_state_breakdown"}
    assert not called, f"build it from what each stage partitions instead of calling {', '.join(sorted(called))}"
    got = model_state_bytes(7.5e9, 64, 0)
    assert isinstance(got, numbers.Real), f"return bytes as a number, got {got!r}"
    assert math.isclose(got, 120e9, rel_tol=1e-6), f"7.5B parameters at stage 0: expected 120 GB, got {got:.4g} B"
    got = model_state_bytes(1e12, 1024, 3)
    assert math.isclose(got, 15.625e9, rel_tol=1e-6), \
        f"1T parameters at stage 3 over 1024 replicas (ZeRO's Table 1): expected 15.6 GB, got {got:.4g} B"


test_q1_public(model_state_bytes)

# %%
# HIDDEN
def test_q1_every_stage(model_state_bytes):
    import math

    from course_lib import parallelism
    cases = [(params, data_parallel, stage) for params in (7.5e9, 175e9) for data_parallel in (1, 8, 64)
             for stage in (0, 1, 2, 3)]
    for params, data_parallel, stage in cases:
        want = parallelism.zero_model_state_bytes(params, data_parallel, stage)
        got = model_state_bytes(params, data_parallel, stage)
        assert math.isclose(got, want, rel_tol=1e-6), \
            f"model_state_bytes({params:g}, {data_parallel}, stage={stage}): expected {want:.4g} B, got {got:.4g} B"


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
    got = smallest_data_parallel(7.5e9, 3, 16e9)
    assert got == 8, f"7.5B parameters, ZeRO-3, 16 GB: 120 GB / 16 GB = 7.5, so expected 8 replicas, got {got!r}"


test_q2_public(smallest_data_parallel)

# %%
# HIDDEN
def test_q2_other_budgets(smallest_data_parallel):
    from course_lib import parallelism

    def reference(params, stage, capacity):  # the definition, searched; every stage fits by 2048 replicas or never
        fits = [n for n in range(1, 2049) if parallelism.zero_model_state_bytes(params, n, stage) <= capacity]
        return fits[0] if fits else None

    cases = [(7.5e9, 2, 16e9), (7.5e9, 1, 40e9), (175e9, 3, 80e9), (1.5e9, 0, 32e9), (5e9, 3, 80e9),
             (175e9, 1, 80e9), (7.5e9, 2, 15e9), (175e9, 0, 80e9)]  # exact fit, floors, stage 0 both ways
    for case in cases:
        want = reference(*case)
        got = smallest_data_parallel(*case)
        assert got == want, f"smallest_data_parallel{case}: expected {want}, got {got!r}"


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
# Activations grow with the micro-batch; model states do not. Write `largest_micro_batch(model, plan,
# capacity_bytes)`: the largest micro-batch $b \ge 1$ for which `parallelism.memory_breakdown(model, plan)` with
# that micro-batch fits in `capacity_bytes` (all of it: model states and activations), or 0 if even $b = 1$
# does not fit. `plan.replace(micro_batch=b)` gives a copy of the plan with another micro-batch.

# %% [raw]
# # BEGIN SOLUTION

# %%
def largest_micro_batch(model, plan, capacity_bytes):
    """Largest micro-batch whose per-device memory fits in ``capacity_bytes`` (0 if none does)."""
    # BEGIN SOLUTION
    micro_batch = 0
    while parallelism.memory_breakdown(model, plan.replace(micro_batch=micro_batch + 1)).total <= capacity_bytes:
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
    plan = parallelism.ParallelPlan(data_parallel=8, tensor_parallel=8, pipeline_parallel=8, zero_stage=1,
                                    grad_accum_steps=64, recompute="selective", sequence_parallel=True)
    got = largest_micro_batch(parallelism.GPT3_175B, plan, 80e9)
    assert got == 6, f"GPT-3 175B, the lab's default plan, on an 80 GB A100: expected 6, got {got!r}"


test_q3_public(largest_micro_batch)

# %%
# HIDDEN
def test_q3_other_plans(largest_micro_batch):
    from course_lib import parallelism

    def reference(model, plan, capacity):
        fits = [b for b in range(1, 513)
                if parallelism.memory_breakdown(model, plan.replace(micro_batch=b)).total <= capacity]
        return fits[-1] if fits else 0

    gpt3, mt_nlg = parallelism.GPT3_175B, parallelism.MT_NLG_530B
    cases = [
        (gpt3, parallelism.ParallelPlan(data_parallel=16, tensor_parallel=8, pipeline_parallel=8, zero_stage=1,
                                        grad_accum_steps=64), 80e9),  # no recomputation: activations dominate
        (gpt3, parallelism.ParallelPlan(data_parallel=8, tensor_parallel=8, pipeline_parallel=12, zero_stage=3,
                                        grad_accum_steps=32, recompute="full"), 141e9),
        (mt_nlg, parallelism.ParallelPlan(data_parallel=4, tensor_parallel=8, pipeline_parallel=35, zero_stage=1,
                                          grad_accum_steps=70, recompute="selective", sequence_parallel=True), 80e9),
        (gpt3, parallelism.ParallelPlan(tensor_parallel=8, zero_stage=0), 80e9),  # model states alone too big
    ]
    for model, plan, capacity in cases:
        want = reference(model, plan, capacity)
        got = largest_micro_batch(model, plan, capacity)
        assert got == want, f"largest_micro_batch({model.name}, {plan}, {capacity:g}): expected {want}, got {got!r}"


test_q3_other_plans(largest_micro_batch)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [markdown]
# ## Before you submit
#
# Restart the kernel and run all cells: the last cell reruns every public test. Then submit this notebook
# (`03_memory_budget.ipynb`) as your instructor asks.
