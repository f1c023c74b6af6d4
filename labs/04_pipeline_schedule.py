# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lab 4 · Shrink the pipeline bubble
#
# A pipeline of $p$ stages cannot keep every device busy: the first micro-batch has to travel through every stage
# before the last one has work, and the last backward pass drains them again. [Lesson 03 · Split the
# work](../notebooks/03_parallelism.ipynb) gave the cost of that idle time, the bubble, as a fraction of the ideal
# time $m\,(t_f + t_b)$: $(p-1)/m$ for GPipe and 1F1B, and $(p-1)/(v\,m)$ when each device holds $v$ model chunks
# (the interleaved schedule). In this lab a simulation runs the schedules event by event and measures the bubble
# without being told the formula; you change the stages, the micro-batches, the chunks and the schedule, and
# compare what it measures with what the formula predicts.
#
# **Scope.** Every stage takes the same time, $t_f$ forward and $t_b = 2\,t_f$ backward per micro-batch (a chunk
# of an interleaved stage takes $1/v$ of that), and sending activations between stages is free, so every gap in the
# timeline is bubble. Times are in units of $t_f$.

# %%
from course_lib import parallelism, units
from course_lib.widgets import pipeline_lab

# %% [markdown]
# ## The lab
#
# The timeline has one row per stage (one device each), stage 0 on top: blue boxes are forward passes, purple boxes
# backward passes, lighter shades later model chunks of an interleaved stage, and grey is idle time. Numbers in the
# boxes are micro-batches, when they fit. On the right, the bubble the simulation measured next to
# `parallelism.pipeline_bubble_fraction`, and the micro-batches whose activations stage 0 holds at its peak next to
# `parallelism.pipeline_in_flight_microbatches`. GPipe and 1F1B have $v = 1$: moving *virtual stages v* above 1
# selects the interleaved schedule, which needs $m$ to be a multiple of $p$, so the micro-batch slider then moves in
# steps of $p$.

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget; its output cannot be compared
lab = pipeline_lab()
lab

# %% [markdown]
# ## Explore
#
# Start from the default settings for each question: 1F1B with $p = 4$ stages and $m = 8$ micro-batches.
#
# 1. **More micro-batches.** Move *micro-batches m* from 4 to 16. How does the bubble change, and does the idle time
#    itself (in $t_f$) change?
# 2. **GPipe against 1F1B.** Switch between *GPipe* and *1F1B*. What changes in the timeline, in the bubble, and in
#    the activations stage 0 holds?
# 3. **Interleave.** Move *virtual stages v* to 2, then 4. What happens to the bubble and to the activations held?
#    Why does the micro-batch slider now move in steps of 4?
# 4. **A bubble above 100 %.** Set $p = 8$ and $m = 4$. How large is the bubble, and what share of the step does
#    it take? What does a bubble above 100 % mean?
# 5. **The largest pipeline.** Set $p = 16$, $m = 64$ with 1F1B, then $v = 4$. Compare the two bubbles and the
#    activations held: what does interleaving buy, and what does it cost?
#
# <details>
# <summary>Answers</summary>
#
# 1. The bubble is $(p-1)/m$: 75 % at $m = 4$, 37.5 % at 8 and 18.8 % at 16. The idle time stays 9 $t_f$, that is
#    $(p-1)(t_f + t_b)$: filling and draining the pipeline costs the same however many micro-batches follow, so more
#    micro-batches only spread it over more work.
# 2. The step takes 33 $t_f$ either way and the bubble is 37.5 % for both. GPipe runs all 8 forwards before any
#    backward, so stage 0 holds the activations of 8 micro-batches; 1F1B starts the backward passes as soon as it
#    can and holds 4 = p. 1F1B does not make the pipeline faster; it makes it cheaper in memory.
# 3. $v = 2$ halves the bubble to 18.8 % (step 28.5 $t_f$) and $v = 4$ quarters it to 9.38 % (26.25 $t_f$): each
#    chunk op is $v$ times shorter, so filling the pipeline is too. Stage 0 then holds 5.5 and 4.75 micro-batches of
#    activations instead of 4, and every micro-batch crosses the stage boundaries $v$ times. The interleaved
#    schedule sends micro-batches through the chunks in groups of $p$, so $m$ must be a multiple of $p = 4$.
# 4. $(8-1)/4$ = 175 %: the devices idle 21 $t_f$ for 12 $t_f$ of work each, and the bubble takes 63.6 % of the
#    33 $t_f$ step. The bubble is measured against the ideal time, so it exceeds 100 % whenever $m < p - 1$: most of
#    the step is spent filling and draining.
# 5. 1F1B: 23.4 % (45 $t_f$ of bubble in a 237 $t_f$ step), 16 micro-batches held. With $v = 4$: 5.86 % (11.25
#    $t_f$ in 203.25 $t_f$), but 19.75 micro-batches held and four times the stage-to-stage traffic. Interleaving
#    trades memory and communication for time.
#
# </details>

# %% [markdown]
# ## Key figures at the default settings
#
# A fresh lab at 1F1B with $p = 4$ and $m = 8$, and the formulas of `course_lib.parallelism`:

# %%
reference = pipeline_lab()
r = reference.result


def t_f(value):
    """A time in units of the forward time t_f."""
    return units.format_quantity(value, "t_f", digits=4, min_prefix="")


print(f"schedule {r['schedule']!r}: p = {r['stages']} stages, m = {r['microbatches']} micro-batches, "
      f"v = {r['virtual_stages']}")
print(f"step (simulated)        {t_f(r['total_time'])}")
print(f"ideal m·(t_f + t_b)     {t_f(r['ideal_time'])}")
print(f"bubble                  {t_f(r['bubble_time'])} = {units.format_percent(r['bubble_fraction'])} of the ideal "
      f"time, {units.format_percent(r['bubble_share_of_step'])} of the step")
print(f"stage 0 holds           {units.format_count(r['peak_in_flight'])} micro-batches of activations")
formula = parallelism.pipeline_bubble_fraction(4, 8)
held = parallelism.pipeline_in_flight_microbatches(4, 8, "1f1b")
print(f"parallelism.pipeline_bubble_fraction(4, 8) = {units.format_percent(formula)}, "
      f"pipeline_in_flight_microbatches(4, 8) = {held}; agree with the simulation: "
      f"{formula == r['bubble_fraction'] and held == r['peak_in_flight']}")
