# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [raw]
# # ASSIGNMENT CONFIG
# # The graded master of lab 4 (otter-grader 7 format). `make assignments` (tools/assignments.py) runs
# # `otter assign` on it; it stages course_lib/ and requirements.txt next to a copy of this notebook first,
# # so that the autograder zip carries the course's code and runs on Gradescope as it does locally.
# name: 04_pipeline_schedule
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
# # Lab 4 · Shrink the pipeline bubble
#
# A pipeline of $p$ stages cannot keep every device busy: the first micro-batch must travel through all the stages
# before the last one has work, and the last backward pass drains them again. That idle time, the bubble, is paid
# once per optimizer step, so more micro-batches per step hide it better; interleaving several model chunks per
# device shrinks it further. In this lab you first watch simulated schedules, then derive their cost.
#
# **What you need:** [lesson 03 · Split the work](../notebooks/03_parallelism.ipynb), in particular the pipeline
# schedules (GPipe, 1F1B, interleaved) and the bubble $(p-1)/(v\,m)$.
#
# **How it is graded.** Write your answers where you see `...`. The cell `grader.check("q1")` after each question
# runs its public tests and tells you at once whether they pass. The grader also runs hidden tests with other
# inputs, chosen so that the usual slips (measuring the bubble against the wrong time, an off-by-one in the number
# of micro-batches, forgetting that interleaving needs a multiple of $p$) fail them, so make your answer right for
# every input, not only for the public example.

# %%
from course_lib import parallelism, pipeline, units

# %% [markdown]
# ## Explore
#
# The lab simulates one optimizer step event by event with `pipeline.pipeline_schedule`: each device runs its
# forward and backward passes in the order its schedule prescribes, as soon as their inputs are ready. It draws the
# timeline, and prints the bubble it measured next to the formula, and how many micro-batches of activations the
# first stage holds at its peak. Times are in units of one micro-batch's forward time through one stage, $t_f$,
# with $t_b = 2t_f$. Things to try:
#
# - With 4 stages, go from 4 to 16 micro-batches: how does the bubble scale? Does the idle time itself change?
# - Switch between GPipe and 1F1B: what changes in the timeline, the bubble, and the activations held?
# - Set 2 virtual stages: why does the micro-batch slider now move in steps of $p$?

# %% tags=["nbval-ignore-output", "otter_ignore"]
# nbval-ignore-output: live widget; its output cannot be compared
from course_lib.widgets import pipeline_lab

pipeline_lab()

# %% [markdown]
# ## Graded questions
#
# Each question names the function to define. $p$ is the number of stages, $m$ the micro-batches per step and
# $v$ the model chunks (virtual stages) per device; $v = 1$ is GPipe or 1F1B.

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 2
# all_or_nothing: true

# %% [markdown]
# ### Question 1 · The bubble (2 points)
#
# Write `bubble_fraction(stages, microbatches, virtual_stages=1)`: the idle time of a step as a fraction of its
# *ideal* time $m\,(t_f + t_b)$, the time the same work would take with no bubble. Do not call
# `parallelism.pipeline_bubble_fraction` or `pipeline.pipeline_schedule`; compare with the lab.

# %% [raw]
# # BEGIN SOLUTION

# %%
def bubble_fraction(stages, microbatches, virtual_stages=1):
    """Pipeline bubble as a fraction of the ideal time m·(t_f + t_b)."""
    # BEGIN SOLUTION
    return (stages - 1) / (virtual_stages * microbatches)
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS

# %%
def test_q1_public(bubble_fraction):
    import math
    import numbers
    assert callable(bubble_fraction), "define the function bubble_fraction"
    called = set(bubble_fraction.__code__.co_names) & {"pipeline_bubble_fraction", "pipeline_schedule"}
    assert not called, f"derive the bubble instead of calling {', '.join(sorted(called))}"
    got = bubble_fraction(4, 8)
    assert isinstance(got, numbers.Real), f"return a fraction as a number, got {got!r}"
    assert math.isclose(got, 0.375, rel_tol=1e-9), f"4 stages, 8 micro-batches: expected 0.375, got {got!r}"


test_q1_public(bubble_fraction)

# %%
# HIDDEN
def test_q1_other_pipelines(bubble_fraction):
    import math

    from course_lib import pipeline
    for stages, microbatches, virtual in [(8, 32, 1), (2, 3, 1), (4, 8, 2), (8, 16, 4), (1, 5, 1), (6, 4, 1)]:
        schedule = "interleaved" if virtual > 1 else "1f1b"
        want = pipeline.pipeline_schedule(stages, microbatches, schedule, virtual_stages=virtual).bubble_fraction
        got = bubble_fraction(stages, microbatches, virtual) if virtual > 1 else bubble_fraction(stages, microbatches)
        assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12), \
            f"bubble_fraction({stages}, {microbatches}, virtual_stages={virtual}): simulated {want:.6g}, got {got!r}"


test_q1_other_pipelines(bubble_fraction)

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
# ### Question 2 · Enough micro-batches (3 points)
#
# Write `microbatches_for_bubble(stages, max_bubble, virtual_stages=1)`: the smallest number of micro-batches $m$
# whose bubble is at most `max_bubble` (a fraction of the ideal time, as in question 1). With interleaving
# ($v > 1$), $m$ must also be a multiple of $p$. A budget of 5 % is `max_bubble=0.05`.

# %% [raw]
# # BEGIN SOLUTION

# %%
def microbatches_for_bubble(stages, max_bubble, virtual_stages=1):
    """Smallest m with (p − 1)/(v·m) <= max_bubble (a multiple of p when v > 1)."""
    # BEGIN SOLUTION
    step = stages if virtual_stages > 1 else 1  # interleaving needs m to be a multiple of p
    microbatches = step
    while parallelism.pipeline_bubble_fraction(stages, microbatches, virtual_stages) > max_bubble:
        microbatches += step
    return microbatches
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS

# %%
def test_q2_public(microbatches_for_bubble):
    assert callable(microbatches_for_bubble), "define the function microbatches_for_bubble"
    got = microbatches_for_bubble(4, 0.25)
    assert got == 12, f"4 stages, bubble at most 25 %: expected 12 micro-batches, got {got!r}"


test_q2_public(microbatches_for_bubble)

# %%
# HIDDEN
def test_q2_other_budgets(microbatches_for_bubble):
    from course_lib import parallelism

    def reference(stages, max_bubble, virtual=1):  # the definition, searched
        step = stages if virtual > 1 else 1
        return next(m for m in range(step, 100_000, step)
                    if parallelism.pipeline_bubble_fraction(stages, m, virtual) <= max_bubble)

    cases = [(8, 0.05), (6, 0.05), (5, 0.1), (12, 0.03), (1, 0.05),  # 6 and 5: a bubble of exactly the budget
             (4, 0.05, 2), (8, 0.05, 4), (3, 0.2, 2)]                 # interleaved: m a multiple of p
    for case in cases:
        want = reference(*case)
        got = microbatches_for_bubble(*case)
        assert got == want, f"microbatches_for_bubble{case}: expected {want}, got {got!r}"


test_q2_other_budgets(microbatches_for_bubble)

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
# ### Question 3 · The step time (2 points)
#
# Write `step_time_s(stages, microbatches, forward_time_s, backward_time_s)`: the time of one optimizer step of a
# 1F1B pipeline in seconds, where `forward_time_s` and `backward_time_s` are $t_f$ and $t_b$ of one micro-batch
# through one stage, and communication is free. Derive it (do not call `pipeline.pipeline_schedule`); the lab's
# timeline has a total time to compare with (in units of $t_f$, with $t_b = 2t_f$).

# %% [raw]
# # BEGIN SOLUTION

# %%
def step_time_s(stages, microbatches, forward_time_s, backward_time_s):
    """Seconds of one 1F1B step: the ideal m·(t_f + t_b) plus the bubble (p − 1)·(t_f + t_b)."""
    # BEGIN SOLUTION
    return (microbatches + stages - 1) * (forward_time_s + backward_time_s)
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS

# %%
def test_q3_public(step_time_s):
    import math
    import numbers
    assert callable(step_time_s), "define the function step_time_s"
    assert "pipeline_schedule" not in step_time_s.__code__.co_names, \
        "derive the step time instead of calling pipeline.pipeline_schedule"
    got = step_time_s(4, 8, 1.0, 2.0)
    assert isinstance(got, numbers.Real), f"return seconds as a number, got {got!r}"
    assert math.isclose(got, 33.0, rel_tol=1e-9), \
        f"4 stages, 8 micro-batches, t_f = 1 s, t_b = 2 s: expected 33 s, got {got!r}"


test_q3_public(step_time_s)

# %%
# HIDDEN
def test_q3_other_pipelines(step_time_s):
    import math

    from course_lib import pipeline
    for stages, microbatches, forward, backward in [(8, 32, 0.01, 0.02), (2, 2, 1.0, 3.0), (6, 4, 0.5, 1.5),
                                                    (1, 7, 0.2, 0.4), (16, 64, 2e-3, 4e-3)]:
        want = pipeline.pipeline_schedule(stages, microbatches, "1f1b", forward_time_s=forward,
                                          backward_time_s=backward).total_s
        got = step_time_s(stages, microbatches, forward, backward)
        assert math.isclose(got, want, rel_tol=1e-6), \
            f"step_time_s({stages}, {microbatches}, {forward}, {backward}): simulated {want:.6g} s, got {got!r}"


test_q3_other_pipelines(step_time_s)

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
# ### Question 4 · Activations held (2 points)
#
# The bubble is the same for GPipe and 1F1B; the memory is not. Write `in_flight_microbatches(stages,
# microbatches, schedule)` for `schedule` in `"gpipe"` and `"1f1b"`: how many micro-batches' activations the first
# stage holds at its peak. Do not call `parallelism.pipeline_in_flight_microbatches`; the lab prints this number.

# %% [raw]
# # BEGIN SOLUTION

# %%
def in_flight_microbatches(stages, microbatches, schedule):
    """Micro-batches whose activations stage 0 holds at its peak under GPipe or 1F1B."""
    # BEGIN SOLUTION
    if schedule == "gpipe":
        return microbatches  # every forward runs before the first backward
    return min(stages, microbatches)  # 1F1B: at most p forwards ahead of the backwards
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS

# %%
def test_q4_public(in_flight_microbatches):
    assert callable(in_flight_microbatches), "define the function in_flight_microbatches"
    assert "pipeline_in_flight_microbatches" not in in_flight_microbatches.__code__.co_names, \
        "derive it instead of calling parallelism.pipeline_in_flight_microbatches"
    got = in_flight_microbatches(8, 64, "gpipe"), in_flight_microbatches(8, 64, "1f1b")
    assert got == (64, 8), f"8 stages, 64 micro-batches: expected 64 (GPipe) and 8 (1F1B), got {got!r}"


test_q4_public(in_flight_microbatches)

# %%
# HIDDEN
def test_q4_other_pipelines(in_flight_microbatches):
    from course_lib import parallelism
    for stages, microbatches in [(4, 2), (4, 4), (16, 64), (1, 8), (8, 7)]:
        for schedule in ("gpipe", "1f1b"):
            want = parallelism.pipeline_in_flight_microbatches(stages, microbatches, schedule)
            got = in_flight_microbatches(stages, microbatches, schedule)
            assert got == want, \
                f"in_flight_microbatches({stages}, {microbatches}, {schedule!r}): expected {want}, got {got!r}"


test_q4_other_pipelines(in_flight_microbatches)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [markdown]
# ## Before you submit
#
# Restart the kernel and run all cells: the last cell reruns every public test. Then submit this notebook
# (`04_pipeline_schedule.ipynb`) as your instructor asks.
