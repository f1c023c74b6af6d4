# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lab 3 · Fit a model on a device
#
# Whether a plan runs at all is decided by the memory of one device. [Lesson 03 · Split the
# work](../notebooks/03_parallelism.ipynb) counted it in two parts: the model states, 16 bytes per parameter with
# mixed-precision Adam (2 of 16-bit parameters, 2 of gradients, 12 of optimizer state), and the activations each
# layer stores for the backward pass (Korthikanti et al. 2022). ZeRO shares the model states among the $d$
# data-parallel replicas instead of copying them; tensor parallelism ($t$) and pipeline parallelism ($p$) split the
# model itself; recomputation, sequence parallelism and the pipeline schedule decide the activations. In this lab
# you change one of these at a time and watch each component against the device's capacity.
#
# **Scope.** The memory is that of the first pipeline stage (it holds the most activations) under the 1F1B
# schedule, with the parameters split evenly over $t \cdot p$ devices. Temporary buffers, the logits, memory
# fragmentation and the framework's own memory are not counted, so a real plan needs headroom.

# %%
from course_lib import hardware, parallelism, units
from course_lib.widgets import memory_budget_lab

# %% [markdown]
# ## The lab
#
# On the left, the plan under each ZeRO stage as stacked bars (parameters, gradients, optimizer state,
# activations) on a linear axis that ends at twice the device's capacity; the selected stage is outlined, and a bar
# that runs off the axis gets an arrow and its total. On the right, every component of the selected plan on a log
# axis from 100 kB to 100 TB, so that both a few megabytes and tens of terabytes can be read. The tensor-parallel
# slider offers only the divisors of the model's attention heads and the pipeline slider only the divisors of its
# layers, so every position is a plan the model can be split into.

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget; its output cannot be compared
lab = memory_budget_lab()
lab

# %% [markdown]
# ## Explore
#
# Start from the default settings for each question: GPT-3 175B on 80 GB A100s with $d = t = p = 8$ (512 devices),
# ZeRO-1, selective recomputation with sequence parallelism, one sequence per micro-batch and 64 micro-batches per
# step.
#
# 1. **Step through the ZeRO stages.** Move *ZeRO stage* from 0 to 3. Which component shrinks at each stage, by how
#    much, and which one never does?
# 2. **The floor of ZeRO-1.** At ZeRO-1, raise *data parallel d* from 8 to 1024. What happens to the optimizer
#    state and to the total? What is the least memory ZeRO-1 can reach however many replicas you add, and what does
#    the last step cost in devices?
# 3. **The micro-batch.** Raise *micro-batch b* one sequence at a time. At which $b$ does the plan stop fitting, and
#    by how much? Then choose *full* recomputation: does $b = 7$ fit now, and what did it save?
# 4. **Micro-batches in flight.** Lower *micro-batches m* from 64 to 4, then raise it to 256. Why do the activations
#    change below $m = 8$ and not above?
# 5. **Sequence parallelism and recomputation.** Untick *sequence parallel*, then also set recomputation to
#    *none*. How large are the activations in each case, and why does sequence parallelism matter only when
#    $t > 1$?
# 6. **A smaller device.** Switch *device* to the 16 GB TPU v5e. By how much does the default plan miss, and which
#    single change of ZeRO stage makes it fit?
#
# <details>
# <summary>Answers</summary>
#
# 1. ZeRO-0 holds 53.9 GB, most of it optimizer state (32.7 GB). ZeRO-1 partitions the optimizer state over the 8
#    replicas (32.7 → 4.09 GB, total 25.3 GB); ZeRO-2 also the gradients (5.46 GB → 682 MB, total 20.5 GB); ZeRO-3
#    also the parameters (5.46 GB → 682 MB, total 15.7 GB). The activations, 10.3 GB, never change: ZeRO shards the
#    model states, not the activations.
# 2. The optimizer state falls as 1/d, from 4.09 GB to 32 MB, and the total from 25.3 to 21.2 GB. The floor is what
#    ZeRO-1 does not partition: the 16-bit parameters and gradients, 5.46 + 5.46 = 10.9 GB, plus the activations,
#    about 21.2 GB in all. The last doubling, from 512 to 1024 replicas, adds 32,768 devices to save 32 MB on each.
# 3. $b = 6$ fits (76.6 GB, 3.39 GB headroom); $b = 7$ does not fit by 6.88 GB (86.9 GB). With full recomputation
#    each layer keeps only its input, and $b = 7$ needs 48.8 GB: the activations drop from 71.9 to 33.8 GB, paid for
#    by running the forward pass twice.
# 4. With 1F1B the first stage holds the activations of min(p, m) micro-batches: 4 at $m = 4$ (5.13 GB, half of
#    10.3 GB) and 8 = p for any $m \ge 8$, so 64 or 256 micro-batches cost the same memory (they cost time in the
#    bubble instead; see lab 4).
# 5. Without sequence parallelism the activations grow from 10.3 to 31.4 GB: the 10sbh bytes of LayerNorm and
#    dropout per layer are replicated on every tensor-parallel device instead of split 8 ways. Without
#    recomputation either, they are 55.6 GB (the attention scores, 5as/h per sbh element, are kept). At $t = 1$
#    there is nothing to split: 10 + 24/t and 34/t are both 34.
# 6. It misses by 9.27 GB (25.3 GB on 16 GB). ZeRO-3 brings it to 15.7 GB, which fits with 276 MB to spare, a
#    margin no real run would trust (see the scope above).
#
# </details>

# %% [markdown]
# ## Key figures at the default settings
#
# A fresh lab at the default plan, and the same plan computed with `course_lib.parallelism`:

# %%
reference = memory_budget_lab()
r = reference.result
print(f"{r['model']} ({units.format_count(r['params'])} parameters) on {r['devices']} × {r['device']}: "
      f"d = {r['data_parallel']}, t = {r['tensor_parallel']}, p = {r['pipeline_parallel']}, ZeRO-{r['zero_stage']}")
for name in ("parameters", "gradients", "optimizer_state", "activations", "total"):
    print(f"{name.replace('_', ' '):18} {units.format_bytes(r[name + '_bytes']):>9}")
print(f"capacity           {units.format_bytes(r['capacity_bytes']):>9}")
print(f"fits: {r['fits']}, headroom {units.format_bytes(r['headroom_bytes'])}")
plan = parallelism.ParallelPlan(data_parallel=8, tensor_parallel=8, pipeline_parallel=8, zero_stage=1,
                                micro_batch=1, grad_accum_steps=64, recompute="selective", sequence_parallel=True)
total = parallelism.memory_breakdown(parallelism.GPT3_175B, plan).total
print(f"parallelism.memory_breakdown(GPT3_175B, plan).total = {units.format_bytes(total)}; agrees with the lab: "
      f"{total == r['total_bytes']}; fits an {units.format_bytes(hardware.A100.hbm_capacity_bytes)} A100: "
      f"{total <= hardware.A100.hbm_capacity_bytes}")
