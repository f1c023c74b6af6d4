# ---
# jupyter:
#   course:
#     track: core
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 03 · Split the work: data, tensor, pipeline and state parallelism
#
# A 175-billion-parameter model needs about 2.8 TB just for its weights, gradients and Adam state, and an A100
# holds 80 GB: the work and the state must be split across many devices. Each way to split decides which tensors
# travel between devices, how much memory each device keeps, and how many examples one optimizer step sees. This
# lesson applies the four basic splits to the same model and counts what each costs.

# %% [markdown]
# ## What you'll learn
#
# **Learning objective:** *account for accumulation and replication when sizing global batch.*
#
# Along the way you will be able to:
#
# - name the four splits (data, tensor, pipeline, state sharding with ZeRO 1–3) and, for each, the tensors that
#   cross device boundaries and the collective that moves them;
# - draw how tensor parallelism splits one transformer layer, and what sequence parallelism changes: the same
#   bytes, less memory;
# - compute the memory of one device: parameters, gradients and optimizer state (16 bytes per parameter with
#   mixed-precision Adam) plus stored activations (Korthikanti et al.), and reproduce ZeRO's Table 1;
# - compute the global batch $B_\text{global} = b_\text{micro} \times N_\text{acc} \times N_\text{dp}$, and explain why tensor and
#   pipeline groups add devices but not examples;
# - read a pipeline schedule ([GPipe](glossary.ipynb#gpipe), [1F1B](glossary.ipynb#one-f-one-b), interleaved) as a timeline, with its bubble $(p-1)/m$ or
#   $(p-1)/(v\,m)$ and its activation memory;
# - estimate the bytes each device sends per step on each parallel axis.

# %% [markdown]
# ## Prerequisites
#
# - [01 · Count the work](01_mac.ipynb): FLOPs of a transformer layer, bytes per parameter.
# - [02 · Move the data](02_nccl.ipynb): what all-reduce, reduce-scatter, all-gather and send/recv do, and the
#   α–β cost model.
#
# **Time to learn:** about 1.8 hours by the course's rule
# ([how it is counted](00_course_map.ipynb#How-long-each-part-takes)).

# %%
import matplotlib.pyplot as plt

from course_lib import collectives, hardware, parallelism, pipeline, units, viz
from course_lib.viz.pipeline_schedule import SCHEDULE_NAMES
from course_lib.widgets import quiz

# %% [markdown]
# ## Mechanism
#
# Parallelism splits model work and state across devices, to fit the model in memory and to use many devices'
# arithmetic at once. Parallel training has several independent axes:
#
# - **Data parallelism** gives every device (a *replica*) the whole model and a different slice of the batch; the
#   replicas average their gradients every step to agree on one update.
# - **Tensor parallelism** splits the matrix multiplications *inside* each layer: every device holds a slice of
#   every weight matrix, works on the same examples, and the devices combine partial results inside every layer.
# - **Pipeline parallelism** gives each device (a *stage*) a group of consecutive layers. Activations flow forward
#   from stage to stage and their gradients flow back; the batch is cut into micro-batches so the stages can work
#   at the same time.
# - **State sharding** (ZeRO) keeps data parallelism's split of the batch but partitions the stored model state
#   across the data-parallel devices, gathering it when needed: the optimizer state (stage 1), then the gradients
#   (stage 2), then the parameters (stage 3).
#
# Plans are written with the axes' abbreviations: **DP** (data parallelism), **TP** (tensor parallelism), **PP**
# (pipeline parallelism) and, below, **SP** (sequence parallelism); "TP 8 × PP 8" is $t = 8$ and $p = 8$.
#
# Other schemes partition the sequence ([context parallelism](glossary.ipynb#context-parallelism)) or the experts of a
# mixture-of-experts model; they follow the same logic, and lesson 06 models them. The splits combine: a large run
# uses them all at once, with $d \cdot t \cdot p = N_\text{GPU}$ devices for data-parallel size $d$, tensor-parallel
# size $t$ and pipeline-parallel size $p$ (Narayanan et al. 2021's notation).
#
# A plan takes the model, the batch and the hardware and produces a distributed execution plan in three steps:
# **choose** what to partition (examples, matrix dimensions, layers, or the stored state), **assign** the pieces
# to devices (the split that talks most often on the fastest links), and **schedule** the computation and the
# exchanges so that every device sees the values it would have seen on one big device. The trade-off:
# partitioning adds usable capacity, while communication and pipeline idle time reduce scaling efficiency, so more
# GPUs are not a universal speed multiplier. It matters for AI because large models exceed one device's memory
# first, then its time.
#
# The figure applies each split to the same 4-layer model on 2 GPUs. Shaded regions are the GPUs; the coloured
# arrows mark what crosses between them, with labels taken from the cost model (`parallelism.boundary_tensors`).

# %%
fig, axes = plt.subplots(4, 1, figsize=(8, 13), layout="constrained")  # one split per row, at the notebook's width
viz.plot_parallelism_splits(axes)
plt.show()

# %% [markdown]
# To see sizes and counts, list the boundary crossings of one training step of GPT-3 175B split 4 ways along each
# axis (micro-batch of 1 sequence of 2048 tokens; the pipeline plan runs 8 micro-batches per step, the others 1):
# per kind of tensor, the collective that moves it, the payload of one call, the calls per step, and which compute
# could hide it ("none": the next operation waits for it).

# %%
model = parallelism.GPT3_175B
splits = {
    "data, d = 4": parallelism.ParallelPlan(data_parallel=4),
    "tensor, t = 4": parallelism.ParallelPlan(tensor_parallel=4),
    "pipeline, p = 4": parallelism.ParallelPlan(pipeline_parallel=4, grad_accum_steps=8),
    "ZeRO-3, d = 4": parallelism.ParallelPlan(data_parallel=4, zero_stage=3),
}
print(f"{model.name}: {units.format_count(model.params)} parameters, {model.layers} layers, hidden {model.hidden}")
print(f"{'split':16} {'tensor crossing a boundary':46} {'collective':15} {'payload':>9} {'calls':>6}  hidden by")
for name, plan in splits.items():
    for transfer in parallelism.boundary_tensors(model, plan):
        print(
            f"{name:16} {transfer.tensor:46} {transfer.op:15} {units.format_bytes(transfer.payload_bytes):>9} "
            f"{transfer.calls_per_step:>6}  {transfer.phase}"
        )

# %% [markdown]
# Data parallelism moves the whole gradient (2 bytes × Ψ = 349 GB) once per step, in buckets all-reduced during the
# last micro-batch's backward pass while earlier layers still compute theirs (lesson 04 prices what stays exposed).
# Tensor parallelism moves small activation tensors (b·s·h × 2 bytes = 50 MB) but 192 times per step in each
# direction, two per layer, each blocking the next operator. Pipeline parallelism sends one activation tensor per
# micro-batch across each stage boundary, and the receiving stage waits for it. ZeRO-3 gathers the parameters for
# the forward and again for the backward, and reduce-scatters the gradients.

# %% [markdown]
# ### Inside one layer: how tensor parallelism splits it, and sequence parallelism
#
# Megatron-LM (Shoeybi et al. 2019, §3) splits each block of a transformer layer, attention and MLP alike, into two
# matrix multiplies (GEMMs) that need no communication between them:
#
# 1. a **column-parallel** GEMM: each of the $t$ GPUs holds a slice of the weight's *columns* (for attention, the
#    $Q$, $K$, $V$ projections of $a/t$ heads; for the MLP, $4h/t$ of the $4h$ hidden units) and computes its slice of
#    the output from the whole input $X$. The attention of those heads, or the [GeLU](glossary.ipynb#gelu) of those units, then runs
#    locally on the slice;
# 2. a **row-parallel** GEMM: each GPU holds the matching *rows* of the next weight and multiplies its slice by
#    them. The result is a full $b \times s \times h$ tensor on every GPU, but each holds only a **partial sum**: the
#    true output is the sum over the $t$ GPUs.
#
# Two conjugate operators wrap each block, named as in the paper (names, not symbols of the course's maths). **g**,
# after the row-parallel GEMM, all-reduces the partial sums forward (its backward is the identity). **f**, before the
# column-parallel GEMM, is the identity forward (every GPU has the whole $X$) and all-reduces the input's gradient
# backward, since each GPU computed only its slice's contribution. Hence *two all-reduces of a $b \times s \times h$
# tensor forward and two backward per layer*: the figure's top half.
#
# LayerNorm, dropout and the residual add run on the whole $b \times s \times h$ tensor, repeated on all $t$ GPUs,
# each storing its activations in full. **Sequence parallelism** (Korthikanti et al. 2022, §4.2.2) splits these
# regions along the *sequence*, each GPU keeping $s/t$ of the tokens, which is valid because they treat each token
# separately (the figure's bottom half): before the column-parallel GEMM, **g** all-gathers the sequence slices into
# the whole $X$ (backward: reduce-scatters the gradient); after the row-parallel GEMM, **ḡ** reduce-scatters the
# partial sums, so each GPU receives the *summed* output for its own $s/t$ tokens (backward: all-gathers).

# %%
fig, axes = plt.subplots(2, 1, figsize=(8, 7.6), layout="constrained")
viz.plot_tensor_parallel_layer(sequence_parallel=False, ax=axes[0])
viz.plot_tensor_parallel_layer(sequence_parallel=True, ax=axes[1])
plt.show()

# %% [markdown]
# The bytes do not change: a ring all-reduce *is* a reduce-scatter followed by an all-gather (lesson 02), and
# sequence parallelism only moves the all-gather half to the other end of the block. For one GPT-3 activation on
# 8 GPUs, the bytes and what sequence parallelism buys in memory:

# %%
activation_payload = parallelism.ACTIVATION_BYTES * 1 * model.seq_len * model.hidden  # one b·s·h tensor, b = 1
all_reduce = collectives.collective_cost("all_reduce", 8, activation_payload)
halves = [collectives.collective_cost(op, 8, activation_payload) for op in ("reduce_scatter", "all_gather")]
print(
    f"one b·s·h activation, {units.format_bytes(activation_payload)} on t = 8: all-reduce sends "
    f"{units.format_bytes(all_reduce.wire_bytes)} per GPU; reduce-scatter + all-gather "
    f"{units.format_bytes(halves[0].wire_bytes)} + {units.format_bytes(halves[1].wire_bytes)} = "
    f"{units.format_bytes(sum(x.wire_bytes for x in halves))}"
)
for sp in (False, True):
    stored = parallelism.activation_bytes_per_layer(
        model.seq_len, 1, model.hidden, model.heads, tensor_parallel=8, sequence_parallel=sp, recompute="selective"
    )
    print(
        f"GPT-3 layer, t = 8, selective recomputation, sequence parallel {'yes' if sp else 'no '}: stores "
        f"{units.format_bytes(stored)} = sbh × {stored / (model.seq_len * model.hidden):.2f}"
    )

# %% [markdown]
# The activations per layer fall from $sbh(10 + 24/t)$ to $sbh \cdot 34/t$: the 10 bytes per element stored whole
# on every GPU (derived in the worked example) are split 8 ways too, 4.25 instead of 13 bytes per $sbh$ element at
# $t = 8$.

# %% [markdown]
# ## The science
#
# ### 1. Global batch accounting
#
# $$B_\text{global} = b_\text{micro} \times N_\text{acc} \times N_\text{dp}$$
#
# Data-parallel replicas contribute different examples. Tensor- and pipeline-parallel workers cooperate on those
# same examples, and therefore do not multiply the effective global batch. The accumulation count $N_\text{acc}$
# is also the number of micro-batches $m$ each pipeline processes per step. *Assumption:* every replica uses the
# same micro-batch and accumulation count.
#
# ### 2. Memory anatomy of one device
#
# Mixed-precision training with Adam stores, per parameter, 16-bit weights (2 bytes), a 16-bit gradient (2 bytes)
# and an fp32 optimizer state of $K_\text{opt} = 12$ bytes (master weights, momentum and variance). ZeRO
# (Rajbhandari et al. 2020, §3.1), which calls it $K$, writes this as
#
# $$M_\text{states} = 2\Psi + 2\Psi + K_\text{opt}\Psi = 16\,\Psi .$$
#
# Partitioning across the $N_d$ data-parallel devices (ZeRO §5) gives, per device,
#
# | ZeRO stage | partitions | bytes per device |
# |---|---|---|
# | 0 (plain data parallel) | nothing | $(2 + 2 + K_\text{opt})\Psi$ |
# | 1, $P_{os}$ | optimizer state | $4\Psi + K_\text{opt}\Psi / N_d$ |
# | 2, $P_{os+g}$ | + gradients | $2\Psi + (2 + K_\text{opt})\Psi / N_d$ |
# | 3, $P_{os+g+p}$ | + parameters | $(2 + 2 + K_\text{opt})\Psi / N_d$ |
#
# With tensor and pipeline parallelism, each device holds only $\Psi/(t\,p)$ of the parameters to begin with.
#
# The **activations** a layer stores for its backward pass (Korthikanti et al. 2022, Eq. 1), in bytes, with 16-bit
# activations and 1-byte dropout masks:
#
# $$A_\text{layer} = s\,b\,h\left(34 + \frac{5\,a\,s}{h}\right)$$
#
# The $34\,sbh$ part grows linearly with the sequence; the $5as^2b$ part, the attention scores (softmax output, its
# dropout mask and the dropout output), with $s^2$. Tensor parallelism divides the terms it splits by $t$; sequence
# parallelism splits the rest; *selective recomputation* drops the $5as/h$ term by recomputing the attention scores
# in the backward pass; *full recomputation* keeps only each layer's input, $2sbh$.
#
# ### 3. Pipeline schedules and the bubble
#
# With $p$ stages and $m$ micro-batches, **GPipe** (all forward, then all backward) and **1F1B** (one forward, one
# backward; PipeDream-Flush) idle for $(p-1)$ micro-batch slots at the start and end of every step, so the bubble time
# $t_\text{pb}$, as a fraction of the ideal time $t_\text{id} = m(t_\text{F} + t_\text{bwd})$
# ([glossary](glossary.ipynb#bubble-time)), is (Narayanan et al. 2021, §2.2)
#
# $$\frac{t_\text{pb}}{t_\text{id}} = \frac{p-1}{m}, \qquad \text{interleaved with } v \text{ chunks per device: } \frac{p-1}{v\,m}.$$
#
# GPipe runs all $m$ forwards before any backward, so the first stage holds the activations of $m$ micro-batches;
# 1F1B alternates one forward and one backward after a warm-up, so it holds at most $p$. The interleaved schedule
# needs $m$ to be a multiple of $p$ and multiplies the stage-to-stage traffic by $v$.
#
# ### 4. Communication volume per step
#
# - **Data parallel** (ZeRO §7): a reduce-scatter plus an all-gather, each moving $\Psi$ elements per device:
#   $2\Psi$ per step, for ZeRO-1 and 2 as well; ZeRO-3 adds a second parameter all-gather for the backward pass:
#   $3\Psi$, 1.5 times the baseline. (Exactly, a ring moves $(N_d - 1)/N_d$ of this.)
# - **Tensor parallel** (Narayanan et al. 2021, §3.2): two all-reduces of a $b \times s \times h$ tensor forward
#   and two backward per layer (g and f), $8\,bsh\,(t-1)/t$ elements per layer per device per micro-batch. With
#   sequence parallelism each all-reduce becomes a reduce-scatter plus an all-gather: the same elements.
# - **Pipeline parallel**: $bsh$ elements between consecutive stages per micro-batch, forward and backward;
#   Megatron-LM's scatter/gather optimisation (§4.1) cuts what crosses the network to $bsh/t$.
#
# ### Variables
#
# | Symbol | Code name | Meaning | Unit |
# |---|---|---|---|
# | $B_\text{global}$ | `global_batch` | examples per optimizer step | samples |
# | $b_\text{micro}$, $b$ | `micro_batch` | examples per micro-batch, per replica | samples |
# | $N_\text{acc}$, $m$ | `grad_accum_steps` | accumulation steps = micro-batches per pipeline per step | – |
# | $N_\text{dp}$, $N_d$, $d$ | `data_parallel` | data-parallel replicas | – |
# | $t$ | `tensor_parallel` | tensor-parallel group size | – |
# | $p$ | `pipeline_parallel` | pipeline stages | – |
# | $v$ | `virtual_stages` | model chunks per device (interleaved schedule) | – |
# | $\Psi$ | `params` | parameters | parameters |
# | $K_\text{opt}$ | `optimizer_bytes_per_param` | optimizer-state bytes per parameter (12 for Adam) | bytes |
# | $s$, $h$, $a$, $l$ | `seq_len`, `hidden`, `heads`, `layers` | sequence length, hidden size, heads, layers | tokens, – |
# | $t_\text{F}$, $t_\text{bwd}$ | `forward_time_s`, `backward_time_s` | forward and whole backward of one micro-batch through one stage (lesson 06 splits the backward, $t_\text{bwd} = t_\text{B} + t_\text{W}$) | s |
#
# *Assumptions of the memory model:* an even split of the parameters over $t\,p$ devices (the embedding's
# imbalance is ignored); the first pipeline stage, which holds the most activations; no temporary buffers, logits,
# fragmentation or framework memory (ZeRO §3.2 reports out-of-memory errors "with over 30% of memory still
# available in some extreme cases"), so a plan needs headroom.

# %% [markdown]
# ## Worked example
#
# ### Global batch: replication multiplies examples, splitting does not
#
# The Ultra-Scale Playbook (Tazi et al. 2025) sizes a batch in tokens: about 4 M tokens per step at a sequence
# length of 4096 is 1024 samples. With a micro-batch of 2 on 128 GPUs that takes 4 accumulation steps; on 512 GPUs,
# 1.

# %%
seq_len = 4096
for gpus, accumulation in ((128, 4), (512, 1)):
    samples = parallelism.global_batch(micro_batch=2, grad_accum_steps=accumulation, data_parallel=gpus)
    print(
        f"{gpus:4d} replicas × micro-batch 2 × {accumulation} steps = {units.format_count(samples)} samples "
        f"× {seq_len} tokens = {units.format_count(samples * seq_len)} tokens"
    )

# %% [markdown]
# Now take a micro-batch of 8, 16 accumulation steps and 64 data-parallel replicas, and add tensor and pipeline
# parallelism: the number of devices grows 32-fold, the number of examples per step does not.

# %%
for t, p in ((1, 1), (8, 1), (8, 4)):
    plan = parallelism.ParallelPlan(
        data_parallel=64, tensor_parallel=t, pipeline_parallel=p, micro_batch=8, grad_accum_steps=16
    )
    print(
        f"d = 64, t = {t}, p = {p}: {units.format_count(plan.devices):>4} devices, "
        f"global batch {units.format_count(plan.global_batch)} samples"
    )

# %% [markdown]
# The Playbook's published run data (8B model, 4 nodes of 8 H100s, global batch 256 sequences of 4096 tokens) shows
# the same accounting on real hardware: configurations as different as these all process 256 samples per step.

# %%
# (data, tensor, pipeline, micro-batch, accumulation): rows of the Ultra-Scale Playbook's run data, 8B on 32 GPUs
playbook_rows = ((16, 1, 2, 1, 16), (8, 4, 1, 4, 8), (8, 2, 2, 2, 16), (4, 1, 8, 1, 64))
for d, t, p, b, acc in playbook_rows:
    plan = parallelism.ParallelPlan(
        data_parallel=d, tensor_parallel=t, pipeline_parallel=p, micro_batch=b, grad_accum_steps=acc
    )
    print(
        f"d = {d:2d}, t = {t}, p = {p}, b = {b}, N_acc = {acc:2d}: {units.format_count(plan.devices)} GPUs, "
        f"{units.format_count(plan.global_batch)} samples = {units.format_count(plan.global_batch * seq_len)} tokens"
    )

# %% [markdown]
# The count is *nominal*: sequence packing and uneven batches change the effective number of examples, and a run's
# label can disagree with its settings (a few runs of the same data set are labelled "GBS 256" although their
# settings give another number). When the batch matters, compute it from the plan.
#
# ### Memory anatomy of GPT-3 175B
#
# The model states first: 16 bytes per parameter, replicated on every data-parallel device unless ZeRO shards them.

# %%
params_bytes, grads_bytes, optimizer_bytes = parallelism.zero_model_state_breakdown(model.params, 1, stage=0)
print(f"{model.name}: Ψ = {units.format_count(model.params)} parameters")
print(f"  parameters (2 B/param)        {units.format_bytes(params_bytes):>9}")
print(f"  gradients (2 B/param)         {units.format_bytes(grads_bytes):>9}")
print(f"  optimizer state (12 B/param)  {units.format_bytes(optimizer_bytes):>9}")
print(
    f"  model states (16 B/param)     {units.format_bytes(params_bytes + grads_bytes + optimizer_bytes):>9}"
    f"  = {units.format_count((params_bytes + grads_bytes + optimizer_bytes) / hardware.A100.hbm_capacity_bytes)}"
    f" × an {units.format_bytes(hardware.A100.hbm_capacity_bytes)} A100"
)

# %% [markdown]
# Then the activations. Where does $sbh(34 + 5as/h)$ come from? List every tensor one layer's forward pass keeps
# for the backward (Korthikanti et al. 2022, §4.1): $s \times b \times h$ values of 2 bytes, $4h$ wide in the MLP,
# $a \times s \times s$ for the attention scores, 1 byte per value for a dropout mask. The last column says whether
# tensor parallelism splits the tensor over $t$ (it lies between a column- and a row-parallel GEMM) or every GPU
# stores it whole. Bytes for GPT-3, one sequence ($b = 1$, $s = 2048$, $h = 12288$, $a = 96$):

# %%
s, b, h, a = model.seq_len, 1, model.hidden, model.heads
tensor_bytes = parallelism.stored_activation_bytes(s, b, h, a)
print(f"{'block':10} {'stored tensor':43} {'× sbh':>6} {'× as²b':>7} {'GPT-3':>9}  split by t?")
for row, stored in zip(parallelism.STORED_ACTIVATIONS, tensor_bytes, strict=True):
    print(
        f"{row.block:10} {row.tensor:43} {row.sbh_bytes or '':>6} {row.as2b_bytes or '':>7} "
        f"{units.format_bytes(stored):>9}  {'yes' if row.split_by_tensor else 'no: whole on every GPU'}"
    )
linear = sum(row.sbh_bytes for row in parallelism.STORED_ACTIVATIONS)
scores = sum(row.as2b_bytes for row in parallelism.STORED_ACTIVATIONS)
whole = sum(row.sbh_bytes for row in parallelism.STORED_ACTIVATIONS if not row.split_by_tensor)
print(f"sum: {linear} sbh + {scores} as²b = sbh({linear} + {scores}as/h) = {units.format_bytes(sum(tensor_bytes))}")
print(
    f"kept whole under tensor parallelism: {whole} of {linear} bytes per sbh element; t divides the other {linear - whole}"
)
for t in (2, 8):
    split = parallelism.stored_activation_bytes(s, b, h, a, tensor_parallel=t)
    kept_whole = sum(x for x, row in zip(split, parallelism.STORED_ACTIVATIONS, strict=True) if not row.split_by_tensor)
    print(
        f"t = {t}: {units.format_bytes(sum(split))} per GPU = sbh × {sum(split) / (s * b * h):.0f}, "
        f"of which the tensors kept whole {units.format_bytes(kept_whole)} = sbh × {kept_whole / (s * b * h):.0f}"
    )

# %% [markdown]
# The attention block stores $11\,sbh + 5\,as^2b$, the MLP $19\,sbh$, the two LayerNorms $4\,sbh$: in all
# $sbh(34 + 5as/h)$, Korthikanti et al.'s Eq. 1. Tensor parallelism divides 24 of the 34 bytes (and all the
# attention scores) by $t$; the other 10 (the LayerNorm inputs, the two dropout masks and the inputs of the two
# column-parallel GEMMs) stay whole on every GPU: $sbh(10 + 24/t + 5as/(ht))$ (Eq. 2). Sequence parallelism splits
# those 10 as well: $sbh(34/t + 5as/(ht))$. Recomputation trades these bytes for FLOPs:

# %%
no_recompute = parallelism.activation_bytes_per_layer(s, b, h, a)
selective = parallelism.activation_bytes_per_layer(s, b, h, a, recompute="selective")
full = parallelism.activation_bytes_per_layer(s, b, h, a, recompute="full")
print(
    f"per layer, no recomputation: {units.format_bytes(no_recompute):>8} = sbh × {no_recompute / (s * b * h):.0f}"
    f"  (34 + 5as/h, with 5as/h = {(no_recompute - selective) / (s * b * h):.0f})"
)
print(f"per layer, selective:        {units.format_bytes(selective):>8} = sbh × {selective / (s * b * h):.0f}")
print(f"per layer, full:             {units.format_bytes(full):>8} = sbh × {full / (s * b * h):.0f}")
print(f"all {model.layers} layers, no recomputation: {units.format_bytes(no_recompute * model.layers)} per sequence")
print(f"selective recomputation saves {units.format_percent(1 - selective / no_recompute)} of activation memory")

# %% [markdown]
# For GPT-3 the attention-score term (80 bytes per $sbh$ element) outweighs everything else together (34), so
# recomputing only the attention scores saves 70 % of the activation memory for 2.7 % extra FLOPs (Korthikanti et
# al.). Without recomputation one 2048-token sequence needs 275 GB of activations, far more than any device.
#
# ### ZeRO's Table 1, reproduced
#
# ZeRO's Table 1 gives the per-device model-state memory for 7.5B, 128B and 1T parameters at six data-parallel
# degrees. Each cell computed with `parallelism.zero_model_state_bytes` stands next to the paper's. ✓ marks a cell
# that fits in a 32 GB V100; ◆ the cells the paper sets in bold, the smallest degree at which each column fits.

# %%
# ZeRO (Rajbhandari et al. 2020), Table 1, p. 11: GB as printed, columns P_os, P_os+g, P_os+g+p.
ZERO_TABLE_1_GB = {
    7.5e9: {
        1: (120, 120, 120),
        4: (52.5, 41.3, 30),
        16: (35.6, 21.6, 7.5),
        64: (31.4, 16.6, 1.88),
        256: (30.4, 15.4, 0.47),
        1024: (30.1, 15.1, 0.12),
    },
    128e9: {
        1: (2048, 2048, 2048),
        4: (896, 704, 512),
        16: (608, 368, 128),
        64: (536, 284, 32),
        256: (518, 263, 8),
        1024: (513, 257, 2),
    },
    1e12: {
        1: (16000, 16000, 16000),
        4: (7000, 5500, 4000),
        16: (4750, 2875, 1000),
        64: (4187, 2218, 250),
        256: (4046, 2054, 62.5),
        1024: (4011, 2013, 15.6),
    },
}
ZERO_TABLE_1_BOLD = {(7.5e9, 64, 1), (7.5e9, 16, 2), (7.5e9, 4, 3), (128e9, 64, 3), (1e12, 1024, 3)}
V100_BYTES = 32 * units.GB

print(
    f"{'Ψ':>11} {'N_d':>5} | {'P_os: ours / paper':^27} | {'P_os+g: ours / paper':^27} | {'P_os+g+p: ours / paper':^27}"
)
largest_gap = (0.0, None)
for psi, rows in ZERO_TABLE_1_GB.items():
    for n_d, printed in rows.items():
        cells = []
        for stage, paper_gb in zip((1, 2, 3), printed, strict=True):
            ours = parallelism.zero_model_state_bytes(psi, n_d, stage=stage)
            paper = paper_gb * units.GB
            mark = ("◆" if (psi, n_d, stage) in ZERO_TABLE_1_BOLD else "✓") if ours <= V100_BYTES else " "
            cells.append(f"{units.format_bytes(ours, digits=6):>12} / {units.format_bytes(paper, digits=4):>9} {mark}")
            gap = abs(ours - paper) / paper
            if gap > largest_gap[0]:
                largest_gap = (gap, (psi, n_d, stage, ours, paper))
        print(f"{units.format_count(psi):>11} {n_d:>5} | " + " | ".join(cells))
gap, (psi, n_d, stage, ours, paper) = largest_gap
print(
    f"largest relative gap: {units.format_percent(gap)} ({units.format_count(psi)}, N_d = {n_d}, stage {stage}: "
    f"{units.format_bytes(ours, digits=4)} printed as {units.format_bytes(paper)})"
)

# %% [markdown]
# All 54 cells agree with the formula within the paper's rounding (three significant figures for 7.5B, integers
# truncated for the large models). With 64-way data parallelism ZeRO-1 fits a 7.5B model in a 32 GB device, ZeRO-2
# one almost twice as large (16.6 GB at 7.5B, and its states are linear in Ψ), and only ZeRO-3's partitioning of the
# parameters brings 128B (and, at 1024 devices, 1T) into one. Model states only: activations still come on top.
#
# ### Per-device memory of real plans
#
# Now the whole budget for GPT-3 175B on 80 GB A100s, with `parallelism.memory_breakdown` (first pipeline stage,
# micro-batch 1, 64 micro-batches per step when there is a pipeline). Each plan changes one thing. The cell passes
# [`calibration=None`](glossary.ipynb#calibration): this lesson's ideal model. Without it, `memory_breakdown` uses
# the course's default calibration, the memory of a real [framework](glossary.ipynb#framework), Megatron-LM on DGX
# H100 nodes (its bytes per parameter, its logits and a fixed framework memory); lesson 08 explains its constants.

# %%
PLANS = {
    "DP 64": parallelism.ParallelPlan(data_parallel=64),
    "DP 64\nZeRO-3\nfull rec.": parallelism.ParallelPlan(data_parallel=64, zero_stage=3, recompute="full"),
    "TP 8": parallelism.ParallelPlan(tensor_parallel=8),
    "TP 8\nPP 8\nGPipe": parallelism.ParallelPlan(
        tensor_parallel=8, pipeline_parallel=8, grad_accum_steps=64, schedule="gpipe"
    ),
    "TP 8\nPP 8\n1F1B": parallelism.ParallelPlan(tensor_parallel=8, pipeline_parallel=8, grad_accum_steps=64),
    "TP 8\nPP 8, 1F1B\nsel. + SP": parallelism.ParallelPlan(
        tensor_parallel=8, pipeline_parallel=8, grad_accum_steps=64, recompute="selective", sequence_parallel=True
    ),
    "… + DP 8\nZeRO-1": parallelism.ParallelPlan(
        data_parallel=8,
        tensor_parallel=8,
        pipeline_parallel=8,
        grad_accum_steps=64,
        zero_stage=1,
        recompute="selective",
        sequence_parallel=True,
    ),
}
capacity = hardware.A100.hbm_capacity_bytes
breakdowns = {label: parallelism.memory_breakdown(model, plan, calibration=None) for label, plan in PLANS.items()}
print(f"{'plan':28} {'devices':>7} {'params':>9} {'grads':>9} {'optimizer':>9} {'activations':>11} {'total':>9}")
for label, mem in breakdowns.items():
    verdict = "fits" if mem.total <= capacity else "does not fit"
    print(
        f"{' '.join(label.split()):28} {PLANS[label].devices:>7} {units.format_bytes(mem.parameters):>9} "
        f"{units.format_bytes(mem.gradients):>9} {units.format_bytes(mem.optimizer_state):>9} "
        f"{units.format_bytes(mem.activations):>11} {units.format_bytes(mem.total):>9}  {verdict}"
    )

# %% [markdown]
# Plain data parallelism replicates 2.8 TB of model states. ZeRO-3 with full recomputation shards them 64 ways and
# fits, for 1.5× the data-parallel traffic and a third more compute. Tensor parallelism inside one 8-GPU node
# divides the states by 8 (the activations by less), which still leaves 405 GB.
# Adding 8 pipeline stages divides the states by 8 again, and then the *schedule* decides the activations: GPipe
# stores all 64 micro-batches (445 GB), 1F1B only 8 (55.6 GB). Selective recomputation plus sequence parallelism
# shrinks the activations to 10.3 GB, under 80 GB; ZeRO-1 over 8 replicas then spreads the optimizer state too.
#
# ### What a framework stores, and what it combines
#
# The 16 bytes per parameter above are ZeRO's recipe (§3.1). A real framework stores its own recipe, and decides
# which ZeRO stages it runs, which of them it combines with a pipeline, and which schedules it offers. The
# calibrated model reads all of it from a *framework preset* (`parallelism.FRAMEWORKS`; `megatron` is the default
# calibration's). The cell prints each preset's model states of GPT-3 175B per parameter, on one device and with
# ZeRO-1 over 8 data-parallel ranks, what it runs, and which ZeRO stages it overlaps (where each behaviour comes
# from is cited under Sources).

# %%
FRAMEWORK_KEYS = ("megatron", "nanotron", "deepspeed", "fsdp2", "fsdp2-pipeline", "generic")
ZERO1_PLAN = parallelism.ParallelPlan(data_parallel=8, zero_stage=1)


def state_bytes_per_param(plan, framework):
    """Model-state bytes per parameter of GPT-3 175B on one device of ``plan``, as ``framework`` stores them."""
    return parallelism.memory_breakdown(model, plan, framework=framework).model_states / model.params


zero_stages = units.format_zero_stages  # "ZeRO-0/1", or "none"
print(
    f"{'preset':15} {'recipe':16} {'one device':>10} {'ZeRO-1, N_d = 8':>16}  {'runs':12} {'with p > 1':12} schedules"
)
for key in FRAMEWORK_KEYS:
    preset = parallelism.FRAMEWORKS[key]
    piped = preset.zero_stages_with_pipeline
    schedules = ", ".join(SCHEDULE_NAMES[schedule] for schedule in preset.schedules) or "no pipeline"
    print(
        f"{key:15} {preset.precision:16} {state_bytes_per_param(parallelism.ParallelPlan(), key):>8g} B "
        f"{state_bytes_per_param(ZERO1_PLAN, key):>14g} B  {zero_stages(preset.zero_stages):12} "
        f"{zero_stages(piped):12} {schedules}"
    )
print(f"\n{'preset':15} {'gradient reduction hidden':26} parameter gathers prefetched")
for key in FRAMEWORK_KEYS:
    preset = parallelism.FRAMEWORKS[key]
    hidden = [stage for stage in preset.zero_stages if preset.hides_grad_reduce(stage)]
    prefetched = [stage for stage in preset.zero_stages if stage > 0 and preset.prefetches_gathers(stage)]
    print(f"{key:15} {zero_stages(hidden):26} {zero_stages(prefetched)}")
STAGE_PLAN = parallelism.ParallelPlan(tensor_parallel=8, pipeline_parallel=8, grad_accum_steps=64)
extra = (state_bytes_per_param(STAGE_PLAN, "megatron") - state_bytes_per_param(STAGE_PLAN, "deepspeed")) * model.params
print(f"\n18 B against 16 B on one GPU of TP 8 × PP 8 (first stage): {units.format_bytes(extra)} more model states")

# %% [markdown]
# Three recipes come out. **16 B**, ZeRO's: DeepSpeed, and PyTorch's [FSDP2](glossary.ipynb#fsdp) with fp32 sharded
# parameters and gradients (4 + 4 + 8). **18 B**, Megatron-LM's and nanotron's: the weight-gradient GEMM accumulates
# into an fp32 *main gradient* that replaces the bf16 one (2 + 4 + 12); with ZeRO-1 that is Megatron's documented
# "6 + 12/d", 7.5 B at $N_d = 8$. **20 B**, a bf16 gradient beside an fp32 buffer, which only a bare
# `Calibration()` (`generic`) stores. Two bytes per parameter look small, but on one GPU of the TP 8 × PP 8 plan they
# are 5.59 GB.
#
# What a framework *runs* matters as much. A pipeline accumulates gradients over all its micro-batches, which
# ZeRO-2 and 3 shard: DeepSpeed's pipeline engine refuses them, Megatron-LM pairs only ZeRO-1 with a pipeline,
# nanotron implements only ZeRO-1; torchtitan runs FSDP2 *with* pipelining, keeping a stage's parameters and
# gradients whole for the step. Lesson 05's search rejects as "framework" every plan its preset does not run. What
# a framework *overlaps* can depend on the ZeRO stage (the second table; lesson 04 prices it): DeepSpeed overlaps
# neither the gradient reduction nor the parameter gathers below ZeRO-3.
#
# ### Communication volume per step
#
# `parallelism.communication_volume_per_step` adds up the bytes one device sends per step on each axis (ring
# algorithms; one micro-batch per step unless a pipeline needs more).

# %%
VOLUME_PLANS = {
    "DP 64": parallelism.ParallelPlan(data_parallel=64),
    "DP 64, ZeRO-1": parallelism.ParallelPlan(data_parallel=64, zero_stage=1),
    "DP 64, ZeRO-2": parallelism.ParallelPlan(data_parallel=64, zero_stage=2),
    "DP 64, ZeRO-3": parallelism.ParallelPlan(data_parallel=64, zero_stage=3),
    "TP 4": parallelism.ParallelPlan(tensor_parallel=4),
    "TP 8": parallelism.ParallelPlan(tensor_parallel=8),
    "PP 8, m = 64": parallelism.ParallelPlan(pipeline_parallel=8, grad_accum_steps=64),
    "TP 8 × PP 8, m = 64": parallelism.ParallelPlan(tensor_parallel=8, pipeline_parallel=8, grad_accum_steps=64),
}
print(f"{'plan':22} {'data':>9} {'tensor':>9} {'pipeline':>9}   per layer per micro-batch (tensor)")
for label, plan in VOLUME_PLANS.items():
    volume = parallelism.communication_volume_per_step(model, plan)
    per_layer = volume["tensor"] / (model.layers // plan.pipeline_parallel * plan.grad_accum_steps)
    print(
        f"{label:22} {units.format_bytes(volume['data']):>9} {units.format_bytes(volume['tensor']):>9} "
        f"{units.format_bytes(volume['pipeline']):>9}   {units.format_bytes(per_layer) if per_layer else '–'}"
    )
baseline = parallelism.communication_volume_per_step(model, VOLUME_PLANS["DP 64"])["data"]
stage3 = parallelism.communication_volume_per_step(model, VOLUME_PLANS["DP 64, ZeRO-3"])["data"]
print(f"ZeRO-3 / plain data parallel: {stage3 / baseline:.2f} (ZeRO §7: 3Ψ against 2Ψ)")

# %% [markdown]
# The rows check the science section's formulas. Data parallel: 688 GB is $2 \cdot \tfrac{63}{64} \cdot 2\Psi$
# bytes, the same under ZeRO-1 and 2 (at $m = 1$), 1.5 times that under ZeRO-3. Tensor parallel: 302 MB per layer per micro-batch at $t = 4$, and more at $t = 8$, as $(t-1)/t$ grows
# from 0.75 to 0.875: the volume does not fall as the group grows, while each device's share of the compute does.
# Pipeline: 101 MB per micro-batch, $bsh$ elements each way; with $t = 8$ only the $bsh/t$ slice crosses the stage
# boundary (805 MB per step instead of 6.44 GB).
#
# So data parallelism sends by far the most bytes (688 GB for DP 64, against 33.8 GB for TP 8), in one call per step
# that can overlap the backward pass; tensor parallelism's small blocking calls, not their volume, are why it stays
# inside a node's NVLink domain. Lesson 04 turns these bytes into time.

# %% [markdown]
# ## Figures
#
# ### Per-device memory against an 80 GB A100
#
# The worked example's plans; the dashed line is the A100's 80 GB. Bars far above it are drawn shrunk to the axis
# (every component keeps its share), with their total and scale printed.

# %%
fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
viz.plot_memory_breakdown(breakdowns, capacity_bytes=capacity, ax=ax)
plt.show()

# %% [markdown]
# Optimizer state (green) is 12 of the 16 bytes per parameter of every plan without ZeRO; activations (red) decide
# whether a pipelined plan fits.
#
# ### Pipeline schedules as timelines
#
# `pipeline.pipeline_schedule` simulates one step: every stage runs its operations in its schedule's order, each as
# soon as its input is ready (communication is free here, so every gap is bubble). $p = 4$ stages, $m = 8$
# micro-batches, $t_\text{F}$ = 10 ms and $t_\text{bwd} = 2\,t_\text{F}$; the numbers in the boxes are micro-batches.

# %%
T_F, T_B = 10 * units.MS, 20 * units.MS
timelines = {
    "gpipe": pipeline.pipeline_schedule(4, 8, "gpipe", forward_time_s=T_F, backward_time_s=T_B),
    "1f1b": pipeline.pipeline_schedule(4, 8, "1f1b", forward_time_s=T_F, backward_time_s=T_B),
    "interleaved": pipeline.pipeline_schedule(
        4, 8, "interleaved", virtual_stages=2, forward_time_s=T_F, backward_time_s=T_B
    ),
}
fig, axes = plt.subplots(3, 1, figsize=(10, 9.5), layout="constrained")  # wide: the interleaved boxes are half as wide
for ax, timeline in zip(axes, timelines.values(), strict=True):
    viz.plot_pipeline_schedule(timeline, ax=ax)
plt.show()

# %% [markdown]
# The simulation finds the bubble without being told the formula; compare it with $(p-1)/(v\,m)$, and the
# activations the first stage holds:

# %%
print(
    f"{'schedule':12} {'step':>6} {'ideal':>6} {'bubble (sim.)':>14} {'(p−1)/(v·m)':>12} "
    f"{'in flight (sim.)':>17} {'in flight (model)':>18}"
)
for name, timeline in timelines.items():
    formula = parallelism.pipeline_bubble_fraction(timeline.stages, timeline.microbatches, timeline.virtual_stages)
    held = parallelism.pipeline_in_flight_microbatches(
        timeline.stages, timeline.microbatches, name, timeline.virtual_stages
    )
    print(
        f"{name:12} {units.format_time(timeline.total_s):>6} {units.format_time(timeline.ideal_s):>6} "
        f"{units.format_percent(timeline.bubble_fraction):>14} {units.format_percent(formula):>12} "
        f"{timeline.peak_in_flight(0):>17g} {float(held):>18g}"
    )

# %% [markdown]
# GPipe and 1F1B take the same 330 ms for 240 ms of work per device, the same bubble of 37.5 %: 1F1B does not make
# the pipeline faster, it makes it cheaper, holding the activations of 4 micro-batches instead of 8. Interleaving 2
# chunks per device halves the bubble to 18.8 %, for 5.5 micro-batches of activations and twice the stage-to-stage
# traffic. In every schedule the cure is many more micro-batches than stages, $m \gg p$.

# %% [markdown]
# ## Misconception
#
# > *Doubling GPU count does not guarantee halving runtime; communication and serial dependencies remain.*
#
# Double the 4-stage pipeline above to 8 stages, with the same 8 micro-batches: each stage holds half the layers,
# so $t_\text{F}$ and $t_\text{bwd}$ halve, but the serial dependency (a stage cannot start a micro-batch before
# the stage before it has finished it) does not shrink:

# %%
four_stages = pipeline.pipeline_schedule(4, 8, "1f1b", forward_time_s=T_F, backward_time_s=T_B)
eight_stages = pipeline.pipeline_schedule(8, 8, "1f1b", forward_time_s=T_F / 2, backward_time_s=T_B / 2)
for timeline in (four_stages, eight_stages):
    print(
        f"p = {timeline.stages}: step {units.format_time(timeline.total_s)}, "
        f"bubble {units.format_percent(timeline.bubble_fraction)} of the ideal time"
    )
print(f"twice the devices, speed-up {four_stages.total_s / eight_stages.total_s:.2f}×, not 2×")

# %% [markdown]
# The bubble grew from 3/8 to 7/8 of the ideal time. Tensor parallelism shows the communication half: going from
# $t = 4$ to $t = 8$ halves each device's share of a layer's FLOPs but *raises* the bytes each device sends per
# layer, from 302 MB to 352 MB.

# %% [markdown]
# ## Self-check
#
# Pick an answer and press *Check*.

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="Which strategy splits work inside an individual layer?",
        options=("Pipeline parallelism only", "Data replication only", "Tensor parallelism"),
        answer=2,
        explanation="Tensor parallelism divides a layer’s tensor computations; pipeline parallelism instead "
        "partitions groups of layers.",
    )
)

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="With sequence parallelism, what replaces each all-reduce of tensor parallelism, and how many bytes "
        "does each GPU send for it?",
        options=(
            "A reduce-scatter alone: half the bytes, since each GPU keeps only its slice of the sequence",
            "A reduce-scatter after the row-parallel GEMM and an all-gather before the next column-parallel GEMM: "
            "the same bytes as the all-reduce",
            "An all-gather before and after every GEMM: twice the bytes, the price of the memory it saves",
        ),
        answer=1,
        explanation="A ring all-reduce is a reduce-scatter followed by an all-gather. Sequence parallelism keeps "
        "both halves and moves the all-gather to the start of the next block, past the LayerNorm and dropout that "
        "now work on s/t tokens: the same bytes, and the 10 sbh bytes of activations kept whole are split t ways.",
    )
)

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="A run uses micro-batch 4, 8 accumulation steps, tensor parallel 8, pipeline parallel 4 and data "
        "parallel 16 (512 GPUs). How many samples does one optimizer step see?",
        options=("512", "16384", "65536"),
        answer=0,
        explanation="B_global = b × m × d = 4 × 8 × 16 = 512. The 8-way tensor and 4-way pipeline groups work on the same samples, so "
        "they multiply the devices (512) but not the batch.",
    )
)

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="Switching a pipeline from GPipe to 1F1B, with the same p and m, mainly changes…",
        options=(
            "the bubble, from (p−1)/m to (p−1)/(2m)",
            "the activation memory of the first stage, from m micro-batches to p",
            "the bytes sent between stages, from bsh to bsh/t",
        ),
        answer=1,
        explanation="Both schedules idle for (p−1) slots, so the bubble is (p−1)/m in both. 1F1B starts each "
        "backward early and frees activations, so at most p micro-batches are in flight instead of m.",
    )
)

# %% [markdown]
# ## History
#
# - **2018–2019: pipelines.** GPipe (Huang et al.) split a network into stages and micro-batches and flushed the
#   pipeline every step; PipeDream (Narayanan et al.) introduced the one-forward-one-backward order, whose flushed
#   variant PipeDream-Flush is today's 1F1B.
# - **2019: tensor parallelism for transformers.** Megatron-LM (Shoeybi et al.) split the attention heads and the
#   MLP's inner dimension, two all-reduces forward and two backward per layer.
# - **2019–2020: state sharding.** ZeRO (Rajbhandari et al.) partitioned the optimizer state, gradients and
#   parameters that data parallelism replicates, for at most 1.5× the communication.
# - **2021: the axes analysed together.** Narayanan et al. (SC'21) quantified how the strategies interact,
#   introduced the interleaved schedule, and trained a 1-trillion-parameter model on 3072 A100s at 163 teraFLOP/s per
#   GPU, 52 % of peak in hardware FLOPs (HFU, lesson 01), with tensor parallelism inside a server, pipeline
#   parallelism across servers, data parallelism to scale out.
# - **2022: activations.** Korthikanti et al. counted activation memory per layer and added sequence parallelism and
#   selective recomputation.

# %% [markdown]
# ## Summary
#
# - Four splits, data, tensor, pipeline and state sharding, combined with $d \cdot t \cdot p = N_\text{GPU}$.
# - Data parallel all-reduces gradients once per step (overlappable); tensor parallel all-reduces activations twice
#   per layer in each direction (blocking); pipeline parallel sends activations per micro-batch (blocking); ZeRO-3
#   costs 1.5×.
# - Memory per device = model states ($16\Psi$, divided by $t\,p$ and sharded by ZeRO) + activations
#   ($sbh(34 + 5as/h)$ per layer, times the layers and micro-batches in flight).
# - $B_\text{global} = b_\text{micro} \times N_\text{acc} \times N_\text{dp}$: only replication and accumulation multiply
#   examples.
# - Pipeline bubble $(p-1)/m$ (GPipe and 1F1B alike), $(p-1)/(v\,m)$ interleaved; 1F1B holds $p$ micro-batches
#   of activations, GPipe $m$.

# %% [markdown]
# ## Exercises
#
# Labs 2, 3 and 4 practise the global batch, ZeRO's memory and the pipeline bubble; these two practise the rest.
#
# 1. **Activations.** For the 530B [MT-NLG](glossary.ipynb#mt-nlg) model ($a = 128$, $s = 2048$, $h = 20480$),
#    compute $5as/h$ and the share of activation memory selective recomputation saves with
#    `parallelism.activation_bytes_per_layer`.
# 2. **Tensor traffic.** For GPT-3 175B with $b = 1$, how many bytes does one device send per layer per
#    micro-batch at $t = 2$, and what is the limit as $t$ grows?
#
# <details>
# <summary>Answers</summary>
#
# 1. $5 \cdot 128 \cdot 2048 / 20480 = 64$; selective recomputation saves $64/(34 + 64)$ = 65.3 %, Korthikanti et
#    al.'s 65 % (for 1.6 % extra FLOPs).
# 2. $8\,bsh\,(t-1)/t$ elements × 2 bytes = $16 \cdot 2048 \cdot 12288 \cdot \tfrac12$ bytes = 201 MB at $t = 2$;
#    as $t \to \infty$ it tends to $16\,bsh$ bytes = 403 MB: a larger group never sends less per device.
#
# </details>

# %% [markdown]
# ## Sources
#
# - NVIDIA, *Megatron Core — Parallelism Strategies* (developer guide).
#   https://docs.nvidia.com/megatron-core/developer-guide/latest/user-guide/parallelism-guide.html
# - D. Narayanan et al., *Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM*, SC'21.
#   arXiv:2104.04473. https://arxiv.org/abs/2104.04473 — notation (p, t, d), bubble (§2.2), communication volumes
#   (§2.3, §3.2, §4.1), Table 1 configurations.
# - S. Rajbhandari, J. Rasley, O. Ruwase, Y. He, *ZeRO: Memory Optimizations Toward Training Trillion Parameter
#   Models*, SC'20. arXiv:1910.02054. https://arxiv.org/abs/1910.02054 — 16Ψ (§3.1), stages (§5), Table 1 (p. 11),
#   communication volume (§7).
# - V. Korthikanti et al., *Reducing Activation Recomputation in Large Transformer Models*, MLSys'23.
#   arXiv:2205.05198. https://arxiv.org/abs/2205.05198 — activation memory per layer (Eq. 1, Table 2), selective
#   recomputation.
# - N. Tazi et al., *The Ultra-Scale Playbook: Training LLMs on GPU Clusters*, Hugging Face, 2025.
#   https://huggingface.co/spaces/nanotron/ultrascale-playbook — global batch example; the run configurations quoted
#   come from its interactive benchmark figure.
# - Y. Huang et al., *GPipe: Efficient Training of Giant Neural Networks using Pipeline Parallelism*, NeurIPS 2019.
#   arXiv:1811.06965. https://arxiv.org/abs/1811.06965
# - D. Narayanan et al., *PipeDream: Generalized Pipeline Parallelism for DNN Training*, SOSP 2019.
#   arXiv:1806.03377. https://arxiv.org/abs/1806.03377 ; D. Narayanan et al., *Memory-Efficient Pipeline-Parallel
#   DNN Training* (PipeDream-2BW and PipeDream-Flush), ICML 2021. arXiv:2006.09503. https://arxiv.org/abs/2006.09503
# - M. Shoeybi et al., *Megatron-LM: Training Multi-Billion Parameter Language Models Using Model Parallelism*,
#   2019. arXiv:1909.08053. https://arxiv.org/abs/1909.08053
# - The frameworks' behaviours the framework presets encode (precision recipe, ZeRO stages, what combines with a
#   pipeline, schedules, overlaps), each cited to the framework's source at a release, file and lines
#   (`Framework.sources`); DeepSpeed's pipeline engine, for one, says "ZeRO-2 and ZeRO-3 are incompatible with
#   pipeline parallelism":


# %%
def short_citation(citation):
    """A preset's citation up to its first explanation: the repository, release, file and lines."""
    return citation.split(": ")[0].split("; ")[0]


print("sources (recipe; ZeRO stages; with a pipeline; schedules; overlaps):")
FIELDS = ("precision", "zero_stages", "max_zero_stage_with_pipeline", "schedules", "overlap_grad_reduce")
for key in FRAMEWORK_KEYS:
    preset = parallelism.FRAMEWORKS[key]
    cited = dict.fromkeys(short_citation(preset.cited(field)) for field in FIELDS if preset.cited(field))
    lines = list(cited) or ["none (a bare Calibration's defaults, no framework's)"]
    for number, citation in enumerate(lines):
        print(f"  {key + ':' if number == 0 else '':{len(key) + 1}} {citation}")

# %% [markdown]
# ## What's next
#
# This lesson counted bytes: how many each device stores and sends. [04 · Budget the bytes](04_communication_budget.ipynb)
# turns them into time on a real cluster and separates the communication that hides behind compute from the
# communication on the critical path.
