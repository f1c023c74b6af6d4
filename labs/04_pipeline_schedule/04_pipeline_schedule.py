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
# # The graded master of lab 4 (otter-grader 7 format). `make assignments` (tools/assignments.py) runs
# # `otter assign` on it; it stages course_lib/ and requirements.txt next to a copy of this notebook first,
# # so that the autograder zip carries the course's code and runs on Gradescope as it does locally.
# # Its links are relative to labs/, where the student version goes (make assignments).
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
# A pipeline of $p$ stages cannot keep every device busy: the first micro-batch has to travel through every stage before
# the last one has work, and the last backward pass drains them again. [Lesson 03 · Split the
# work](../notebooks/03_parallelism.ipynb) measured that idle time, the bubble, as a fraction of the ideal time
# $m\,(t_\text{F} + t_\text{bwd})$, for GPipe, 1F1B and the interleaved schedule (each device holding $v$ model chunks).
# In this lab a simulation runs the schedules event by event and measures the bubble without being told any formula; you
# first change the stages, the micro-batches, the chunks and the schedule and watch the idle time, then derive the
# costs yourself in the graded questions and check them against the simulation.
#
# **Time to learn:** about 1.4 hours by the course's rule, the graded questions included
# ([how it is counted](../notebooks/00_course_map.ipynb#How-long-each-part-takes)).
#
# **What you need:** lesson 03, in particular the pipeline schedules (GPipe, 1F1B, interleaved) and the bubble.
#
# **Scope.** Every stage takes the same time, $t_\text{F}$ forward and $t_\text{bwd} = 2\,t_\text{F}$ backward per
# micro-batch (a chunk of an interleaved stage takes $1/v$ of that), and sending activations between stages is free, so
# every gap in the timeline is bubble. Times are in units of $t_\text{F}$.
#
# **How it is graded.** Write your answers where you see `...`. The cell `grader.check("q1")` after each question runs
# its public tests and tells you at once whether they pass. The public tests already fail the usual slips (measuring the
# bubble against the wrong time, an off-by-one in the number of micro-batches, forgetting that interleaving needs a
# multiple of $p$); the grader also runs hidden tests with other inputs, so make your answer right for every input, not
# only for the public examples. Where a question says not to call a course_lib function, the grader makes that function,
# and every course_lib function that uses it, raise an error while it runs your answer (whatever name you reach it by):
# an answer that calls it scores 0 on that question.

# %%
from course_lib import parallelism, pipeline, units
from course_lib.widgets import readable_feedback

readable_feedback()  # the checks below mark their results with ✔ and ✘, which every font here has

# %% [markdown]
# ## The lab
#
# The timeline has one row per stage (one device each), stage 1 on top: blue boxes are forward passes, orange boxes
# backward passes, lighter shades later model chunks of an interleaved stage, and grey is idle time. Numbers in the
# boxes are micro-batches, when they fit; stages and micro-batches are both counted from 1. On the right, the bubble
# the simulation measured next to `parallelism.pipeline_bubble_fraction`, and the micro-batches whose activations
# stage 1 (the first) holds at its peak next to `parallelism.pipeline_in_flight_microbatches`. The bubble is measured
# against the ideal time, so it exceeds 100 % when there are fewer micro-batches than $p - 1$. GPipe and 1F1B have
# $v = 1$: moving *virtual stages v* above 1 selects the interleaved schedule, which needs $m$ to be a multiple of
# $p$, so the micro-batch slider then moves in steps of $p$.
# %% tags=["nbval-ignore-output", "otter_ignore"]
# nbval-ignore-output: live widget; its output cannot be compared
from course_lib.widgets import pipeline_lab

lab = pipeline_lab()
lab

# %% [markdown]
# ## Explore
#
# Start from the default settings: 1F1B with $p = 4$ stages and $m = 8$ micro-batches. This question is not graded;
# its answer is below.
#
# 1. **Interleave.** Move *virtual stages v* to 2, then 4. What happens to the bubble and to the activations held?
#    Why does the micro-batch slider now move in steps of 4?
#
# <details>
# <summary>Answer</summary>
#
# 1. $v = 2$ halves the bubble to 18.8 % (step 28.5 $t_\text{F}$) and $v = 4$ quarters it to 9.38 % (26.25
#    $t_\text{F}$): each chunk op is $v$ times shorter, so filling the pipeline is too. Stage 1 then holds 5.5 and 4.75
#    micro-batches of activations instead of 4, and every micro-batch crosses the stage boundaries $v$ times: the
#    interleaved schedule trades memory and communication for time. It sends micro-batches through the chunks in
#    groups of $p$, so $m$ must be a multiple of $p = 4$.
#
# </details>

# %% [markdown]
# ## Key figures at the default settings
#
# A fresh lab at 1F1B with $p = 4$ and $m = 8$, and the formulas of `course_lib.parallelism`:

# %% tags=["otter_ignore"]
reference = pipeline_lab()
r = reference.result


def in_forward_times(value):
    """A time in units of the forward time t_F."""
    return units.format_quantity(value, "t_F", digits=4, min_prefix="")


print(
    f"schedule {r['schedule']!r}: p = {r['stages']} stages, m = {r['microbatches']} micro-batches, "
    f"v = {r['virtual_stages']}"
)
print(f"step (simulated)        {in_forward_times(r['total_time'])}")
print(f"ideal m·(t_F + t_bwd)   {in_forward_times(r['ideal_time'])}")
print(
    f"bubble                  {in_forward_times(r['bubble_time'])} = {units.format_percent(r['bubble_fraction'])} of the ideal "
    f"time, {units.format_percent(r['bubble_share_of_step'])} of the step"
)
print(f"stage 1 holds           {units.format_count(r['peak_in_flight'])} micro-batches of activations")
formula = parallelism.pipeline_bubble_fraction(4, 8)
held = parallelism.pipeline_in_flight_microbatches(4, 8, "1f1b")
print(
    f"parallelism.pipeline_bubble_fraction(4, 8) = {units.format_percent(formula)}, "
    f"pipeline_in_flight_microbatches(4, 8) = {held}; agree with the simulation: "
    f"{formula == r['bubble_fraction'] and held == r['peak_in_flight']}"
)

# %% [markdown]
# ## Graded questions
#
# Each question names the function to define. $p$ is the number of stages, $m$ the micro-batches per step and
# $v$ the model chunks (virtual stages) per device; $v = 1$ is GPipe or 1F1B.

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
# ### Question 1 · The bubble (2 points)
#
# Write `bubble_fraction(stages, microbatches, virtual_stages=1)`: the idle time of a step as a fraction of its *ideal*
# time $m\,(t_\text{F} + t_\text{bwd})$, the time the same work would take with no bubble. Derive it from the lab's
# timelines: how long does stage 1 idle (in $t_\text{F}$) as you change $p$, $m$ and $v$? Do not call
# `parallelism.pipeline_bubble_fraction` or `pipeline.pipeline_schedule` in your function; compare with the lab.

# %% [raw]
# # BEGIN SOLUTION


# %%
def bubble_fraction(stages, microbatches, virtual_stages=1):
    """Pipeline bubble as a fraction of the ideal time m·(t_F + t_bwd)."""
    # BEGIN SOLUTION
    return (stages - 1) / (virtual_stages * microbatches)
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q1_public(bubble_fraction):
    assert callable(bubble_fraction), "define the function bubble_fraction"

    forbidden = {"pipeline_schedule", "pipeline_bubble_fraction"}
    files = ("course_lib/parallelism/plan.py", "course_lib/pipeline.py")
    result, called = calling(bubble_fraction, 4, 8, forbidden=forbidden, files=files)
    assert not called, f"derive the bubble instead of calling {', '.join(sorted(called))}"
    got = number(result)
    assert got is not None, f"return a fraction as a number, got {result!r:.80}"
    assert abs(got - 0.375) <= 1e-9, f"4 stages, 8 micro-batches: expected 0.375, got {result!r:.80}"
    result, called = calling(bubble_fraction, 4, 8, 2, forbidden=forbidden, files=files)
    got = number(result)
    assert not called and got is not None and abs(got - 0.1875) <= 1e-9, (
        f"4 stages, 8 micro-batches, 2 chunks per device (the lab's interleaved default): expected 0.1875, "
        f"got {result!r:.80}"
    )


test_q1_public(bubble_fraction)


# %%
# HIDDEN
def test_q1_other_pipelines(bubble_fraction):
    forbidden = {"pipeline_schedule", "pipeline_bubble_fraction"}
    files = ("course_lib/parallelism/plan.py", "course_lib/pipeline.py")
    # (p − 1)/(v·m): idle over useful time, as the simulated schedules give it
    cases = [
        ((8, 32), 0.21875),
        ((2, 3), 1 / 3),
        ((4, 8, 2), 0.1875),
        ((8, 16, 4), 0.109375),
        ((1, 5), 0.0),
        ((6, 4), 1.25),
    ]
    for case, want in cases:
        result, called = calling(bubble_fraction, *case, forbidden=forbidden, files=files)
        got = number(result)
        assert not called and got is not None and abs(got - want) <= max(1e-9 * want, 1e-12), (
            f"bubble_fraction{case}: expected {want:.6g}, got {result!r:.80}"
        )


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
    """The fewest micro-batches whose bubble is at most max_bubble (a multiple of p when v > 1)."""
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

    result = microbatches_for_bubble(4, 0.25)
    assert type(number(result)) is int and number(result) == 12, (
        f"4 stages, bubble at most 25 %: expected 12 micro-batches (an int), got {result!r:.80}"
    )
    result = microbatches_for_bubble(4, 0.1, 2)
    assert number(result) == 16, (
        f"4 stages, 2 chunks per device, bubble at most 10 %: 15 micro-batches would do, but interleaving needs a "
        f"multiple of p = 4: expected 16, got {result!r:.80}"
    )


test_q2_public(microbatches_for_bubble)


# %%
# HIDDEN
def test_q2_other_budgets(microbatches_for_bubble):
    cases = [  # the smallest m with (p − 1)/(v·m) ≤ budget; interleaved (v > 1): m a multiple of p
        ((8, 0.05), 140),
        ((6, 0.05), 100),  # 6 and 5: a bubble of exactly the budget
        ((5, 0.1), 40),
        ((12, 0.03), 367),
        ((1, 0.05), 1),
        ((4, 0.05, 2), 32),
        ((8, 0.05, 4), 40),
        ((3, 0.2, 2), 6),
    ]
    for case, want in cases:
        result = microbatches_for_bubble(*case)
        got = number(result)
        assert type(got) is int and got == want, f"microbatches_for_bubble{case}: expected {want}, got {result!r:.80}"


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
# Write `step_time_s(stages, microbatches, forward_time_s, backward_time_s)`: the time of one optimizer step of a 1F1B
# pipeline in seconds, where `forward_time_s` and `backward_time_s` are $t_\text{F}$ and $t_\text{bwd}$ of one
# micro-batch through one stage, and communication is free. Derive it (do not call `pipeline.pipeline_schedule`); the
# lab's timeline has a total time to compare with (in units of $t_\text{F}$, with $t_\text{bwd} = 2t_\text{F}$).

# %% [raw]
# # BEGIN SOLUTION


# %%
def step_time_s(stages, microbatches, forward_time_s, backward_time_s):
    """Seconds of one optimizer step of a 1F1B pipeline, communication free."""
    # BEGIN SOLUTION
    return (microbatches + stages - 1) * (forward_time_s + backward_time_s)
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q3_public(step_time_s):
    assert callable(step_time_s), "define the function step_time_s"

    forbidden = {"pipeline_schedule"}
    files = ("course_lib/parallelism/plan.py", "course_lib/pipeline.py")
    result, called = calling(step_time_s, 4, 8, 1.0, 2.0, forbidden=forbidden, files=files)
    assert not called, "derive the step time instead of calling pipeline.pipeline_schedule"
    got = number(result)
    assert got is not None, f"return seconds as a number, got {result!r:.80}"
    assert abs(got - 33.0) <= 33.0 * 1e-9, (
        f"4 stages, 8 micro-batches, t_F = 1 s, t_bwd = 2 s: expected 33 s, got {result!r:.80}"
    )


test_q3_public(step_time_s)


# %%
# HIDDEN
def test_q3_other_pipelines(step_time_s):
    forbidden = {"pipeline_schedule"}
    files = ("course_lib/parallelism/plan.py", "course_lib/pipeline.py")
    cases = [  # (m + p − 1)(t_F + t_bwd), as the simulated 1F1B schedules give it
        ((8, 32, 0.01, 0.02), 1.17),
        ((2, 2, 1.0, 3.0), 12.0),
        ((6, 4, 0.5, 1.5), 18.0),
        ((1, 7, 0.2, 0.4), 4.2),
        ((16, 64, 2e-3, 4e-3), 0.474),
    ]
    for case, want in cases:
        result, called = calling(step_time_s, *case, forbidden=forbidden, files=files)
        got = number(result)
        assert not called and got is not None and abs(got - want) <= 1e-6 * want, (
            f"step_time_s{case}: expected {want:.6g} s, got {result!r:.80}"
        )


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
    """Micro-batches whose activations stage 1 (the first) holds at its peak under GPipe or 1F1B."""
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

    forbidden = {"pipeline_in_flight_microbatches"}
    files = ("course_lib/parallelism/memory.py",)
    got = []
    for schedule in ("gpipe", "1f1b"):
        result, called = calling(in_flight_microbatches, 8, 64, schedule, forbidden=forbidden, files=files)
        assert not called, "derive it instead of calling parallelism.pipeline_in_flight_microbatches"
        got.append(number(result) if type(number(result)) is int else result)
    assert got == [64, 8], f"8 stages, 64 micro-batches: expected 64 (GPipe) and 8 (1F1B), ints, got {got!r:.80}"
    result, called = calling(in_flight_microbatches, 8, 4, "1f1b", forbidden=forbidden, files=files)
    assert not called and number(result) == 4, (
        f"8 stages but only 4 micro-batches, 1F1B: it cannot hold more micro-batches than there are, expected 4, "
        f"got {result!r:.80}"
    )


test_q4_public(in_flight_microbatches)


# %%
# HIDDEN
def test_q4_other_pipelines(in_flight_microbatches):
    forbidden = {"pipeline_in_flight_microbatches"}
    files = ("course_lib/parallelism/memory.py",)
    # GPipe holds every micro-batch, 1F1B at most p: (stages, micro-batches) -> (GPipe, 1F1B)
    cases = [((4, 2), (2, 2)), ((4, 4), (4, 4)), ((16, 64), (64, 16)), ((1, 8), (8, 1)), ((8, 7), (7, 7))]
    for (stages, microbatches), wants in cases:
        for schedule, want in zip(("gpipe", "1f1b"), wants, strict=True):
            result, called = calling(
                in_flight_microbatches, stages, microbatches, schedule, forbidden=forbidden, files=files
            )
            got = number(result)
            assert not called and type(got) is int and got == want, (
                f"in_flight_microbatches({stages}, {microbatches}, {schedule!r:.80}): expected {want}, got {result!r:.80}"
            )


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
