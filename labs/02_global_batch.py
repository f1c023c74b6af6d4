# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lab 2 · Count the examples in a step
#
# How many examples does one optimizer step see? [Lesson 03 · Split the work](../notebooks/03_parallelism.ipynb)
# gave the rule $B_\text{global} = b_\text{micro} \times N_\text{acc} \times N_\text{dp}$: each of the $d$
# data-parallel replicas works through $N_\text{acc}$ micro-batches of $b$ examples. Tensor- and pipeline-parallel
# groups split the work on those *same* examples, so they multiply the devices, $d \times t \times p$, but not the
# examples. In this lab you move the six numbers and watch both counts: the global batch in examples and in tokens,
# and the devices it takes.
#
# **Scope.** The count is nominal: every replica runs the same micro-batch and the same number of accumulation
# steps, and every sequence is `seq_len` tokens long. Sequence packing, variable batches and uneven schedules change
# the effective number of examples and need their own accounting.

# %%
from course_lib import parallelism, units
from course_lib.widgets import global_batch_lab

# %% [markdown]
# ## The lab
#
# On the left, the devices: a row per data-parallel replica (the first 8 are drawn), its $t \times p$ devices in
# the row (shaded by pipeline stage, at most 16 drawn), and on the right of each row the range of examples that
# replica works on in one step: every device of a row works on the same ones. On the right, the two counts on a log
# scale, each bar built from its factors: devices $= d \cdot t \cdot p$ and examples $= b \cdot N_\text{acc} \cdot
# d$. Only $d$ (green) appears in both.

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget; its output cannot be compared
lab = global_batch_lab()
lab

# %% [markdown]
# ## Explore
#
# Start from the default settings (the card's $b = 8$, $N_\text{acc} = 16$, $d = 64$, with $t = p = 1$ and
# 2048-token sequences) for each question.
#
# 1. **Add tensor parallelism.** Move *tensor parallel t* from 1 to 8. What happens to the number of devices, and
#    to the global batch? Which rows of the left panel change, and how?
# 2. **Add pipeline stages on top.** Keep $t = 8$ and move *pipeline parallel p* to 4. How many devices now, and
#    how many examples does each replica's group of devices share in one step?
# 3. **Keep the batch with fewer replicas.** Back at the defaults, halve *data parallel d* to 32. Which two other
#    controls can bring the global batch back to 8192, and what does each cost (think of memory and of time)?
# 4. **Size a batch in tokens.** The Ultra-Scale Playbook aims at about 4 million tokens per step with 4096-token
#    sequences and a micro-batch of 2. Set *sequence length* to 4096 and *micro-batch b* to 2: which $N_\text{acc}$
#    gives about 4 million tokens with 128 replicas, and with 512?
# 5. **Two layouts of 32 GPUs.** Lesson 03 quoted two runs of the Playbook on 32 GPUs: $d = 8, t = 4, p = 1, b = 4,
#    N_\text{acc} = 8$ and $d = 4, t = 1, p = 8, b = 1, N_\text{acc} = 64$. Set each one: how many devices and
#    examples do they have, and why are the left panels so different?
#
# <details>
# <summary>Answers</summary>
#
# 1. The devices grow from 64 to 512 and the global batch stays at 8192: each replica's row grows from one device
#    to eight, and every row keeps its 128 examples (b × N_acc). The bar of devices gains a red t segment; the bar of
#    examples does not move.
# 2. 64 × 8 × 4 = 2048 devices, and still 8192 examples: each group of t × p = 32 devices shares the same
#    128 examples per step.
# 3. *accumulation N_acc* to 32 (each replica works through twice as many micro-batches one after the other: about
#    twice the time per step, the same memory) or *micro-batch b* to 16 (twice the examples at once: about twice
#    the activation memory per device, fewer, larger kernels).
# 4. $N_\text{acc} = 4$ with 128 replicas and $N_\text{acc} = 1$ with 512: both give 1024 examples = 4.19 million
#    tokens (4,194,304).
# 5. Both use 32 devices and have 256 examples per step (4 × 8 × 8 and 1 × 64 × 4). The first has 8 replicas of
#    4 tensor-parallel devices, the second 4 replicas of an 8-stage pipeline: a different split of the same devices,
#    the same number of examples.
#
# </details>

# %% [markdown]
# ## Key figures at the default settings
#
# A fresh lab at the card's example, and the global batch from `course_lib.parallelism`:

# %%
reference = global_batch_lab()
r = reference.result
print(f"b = {r['micro_batch']}, N_acc = {r['grad_accum_steps']}, d = {r['data_parallel']}, "
      f"t = {r['tensor_parallel']}, p = {r['pipeline_parallel']}, seq_len = {r['seq_len']} tokens")
print(f"global batch            {units.format_count(r['global_batch'])} examples")
print(f"tokens per step         {units.format_count(r['tokens_per_step'])} ({r['tokens_per_step']})")
print(f"devices                 {units.format_count(r['devices'])}")
print(f"examples per replica    {units.format_count(r['examples_per_replica_per_step'])} (b × N_acc), shared by its "
      f"t × p = {r['devices_per_replica']} device(s)")
formula = parallelism.global_batch(micro_batch=8, grad_accum_steps=16, data_parallel=64)
print(f"parallelism.global_batch(8, 16, 64) = {formula}; agrees with the lab: {formula == r['global_batch']}")
