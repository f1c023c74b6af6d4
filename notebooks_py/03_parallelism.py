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
# holds 80 GB. No single device can train it, so the work and the state must be split across many devices. There
# are several independent ways to split, and each one decides which tensors have to travel between devices, how
# much memory each device keeps, and how many examples one optimizer step really sees. This lesson applies the
# four basic splits to the same model and counts what each of them costs.

# %% [markdown]
# ## What you'll learn
#
# **Learning objective:** *account for accumulation and replication when sizing global batch.*
#
# Along the way you will be able to:
#
# - name the four splits (data, tensor, pipeline, state sharding with ZeRO 1–3) and, for each, the tensors that
#   cross device boundaries and the collective that moves them;
# - draw how tensor parallelism splits one transformer layer (a column-parallel then a row-parallel matrix
#   multiply, between the operators f and g), and what sequence parallelism changes: the same bytes, less memory;
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
# **Time to learn:** about 2.7 hours by the course's rule
# ([how it is counted](00_course_map.ipynb#How-long-each-part-takes)).
#
# Everything below is computed by `course_lib`; the notebook only calls it and prints the results.

# %%
import matplotlib.pyplot as plt

from course_lib import collectives, hardware, parallelism, pipeline, units, viz
from course_lib.viz.pipeline_schedule import SCHEDULE_NAMES
from course_lib.widgets import quiz

# %% [markdown]
# ## Mechanism
#
# **Role.** Parallelism splits model work and state across devices, to fit the model in memory and to use many
# devices' arithmetic at once.
#
# Parallel training has several independent axes:
#
# - **Data parallelism** gives every device (a *replica*) the whole model and a different slice of the batch. The
#   replicas compute different gradients and must agree on one update, so they average their gradients every step.
# - **Tensor parallelism** splits the matrix multiplications *inside* each layer. Every device holds a slice of
#   every weight matrix, works on the same examples, and the devices combine partial results inside every layer.
# - **Pipeline parallelism** gives each device (a *stage*) a group of consecutive layers. Activations flow forward
#   from stage to stage and their gradients flow back; the batch is cut into micro-batches so the stages can work
#   at the same time.
# - **State sharding** (ZeRO) keeps data parallelism's split of the batch but stops replicating the stored model
#   state: the optimizer state (stage 1), then the gradients (stage 2), then the parameters themselves (stage 3)
#   are partitioned across the data-parallel devices and gathered when needed.
#
# Plans are written with the axes' abbreviations: **DP** (data parallelism), **TP** (tensor parallelism), **PP**
# (pipeline parallelism) and, below, **SP** (sequence parallelism); "TP 8 × PP 8" is $t = 8$ and $p = 8$.
#
# Other schemes partition the sequence ([context parallelism](glossary.ipynb#context-parallelism)), the experts of a
# mixture-of-experts model, or both; they follow the same logic, and lesson 06 models them. The splits combine:
# a large run uses all of them at once, with $d \cdot t \cdot p = N_\text{GPU}$ devices for data-parallel size $d$,
# tensor-parallel size $t$ and pipeline-parallel size $p$ (Narayanan et al. 2021's notation).
#
# | Split | What is partitioned | Consequence |
# |---|---|---|
# | Data parallelism | the batch dimension | workers coordinate the resulting updates (a gradient all-reduce) |
# | Tensor / pipeline | within layers / across depth | different communication and scheduling patterns |
# | State sharding | the stored model state | can reduce per-device memory use |
#
# Building a plan takes three steps:
#
# 1. **Choose** which workload dimensions (examples, matrix dimensions, layers) or state components (parameters,
#    gradients, optimizer state) to partition.
# 2. **Assign** the resulting pieces to devices with suitable connectivity: the split that talks most often goes
#    on the fastest links.
# 3. **Schedule** the computation and the required exchanges so that the complete operation stays correct: every
#    device must see the values it would have seen on one big device.
#
# The plan's **inputs** are the model, the batch and the hardware (the workload's structure and the resource
# constraints); its **output** is a distributed execution plan (the device partitions and the communication they
# require). The trade-off: partitioning increases usable capacity, while communication and pipeline idle time can
# reduce scaling efficiency. So more GPUs are not a universal speed multiplier. The best arrangement depends on
# the model's shape, the sequence length, memory capacity, network topology, how the batch behaves, and the cost of
# coordinating the pieces into one correct training or inference computation.
#
# **Why it matters for AI.** Large models often exceed one device's practical resources (memory first, then
# time); parallelism makes their execution possible across a coordinated system.
#
# The figure applies each split to the same 4-layer model on 2 GPUs. Shaded regions are the GPUs; the coloured
# arrows mark what crosses between them, with labels taken from the cost model (`parallelism.boundary_tensors`).

# %%
fig, axes = plt.subplots(4, 1, figsize=(8, 13), layout="constrained")  # one split per row, at the notebook's width
viz.plot_parallelism_splits(axes)
plt.show()

# %% [markdown]
# The diagram is schematic. To see sizes and counts, list the boundary crossings of one training step of GPT-3
# 175B split 4 ways along each axis (micro-batch of 1 sequence of 2048 tokens; the pipeline plan runs 8
# micro-batches per step, the others 1). Each row is one kind of tensor: the collective that moves it, the
# payload of one call, how many calls per step, and which compute could hide it ("none" means the next operation
# waits for it).

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
# Three different patterns appear. Data parallelism moves the whole gradient (2 bytes × Ψ = 349 GB) once per step,
# in buckets during the last micro-batch's backward pass: each bucket is all-reduced as soon as its layers'
# gradients are ready, while earlier layers still compute theirs, so only what does not fit into that one backward
# pass, at least the last bucket, is exposed (lesson 04 prices it). Tensor parallelism moves small activation
# tensors (b·s·h × 2 bytes = 50 MB) but 192 times per step in each direction, two per layer, each one blocking the
# next operator. Pipeline parallelism sends one activation tensor per micro-batch across each stage boundary, and
# the receiving stage waits for it. ZeRO-3 has three transfers where plain data parallelism has one: the
# parameters are gathered for the forward and again for the backward, and the gradients are reduce-scattered.

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
# after the row-parallel GEMM, all-reduces the partial sums in the forward pass (its backward is the identity: the
# incoming gradient is already whole). **f**, before the column-parallel GEMM, is the identity forward (every GPU
# already has the whole $X$) and all-reduces the input's gradient backward, because each GPU computed only its slice's
# contribution to it. Hence *two all-reduces of a $b \times s \times h$ tensor forward and two backward per layer*: the
# figure's top half.
#
# Outside the GEMMs, LayerNorm, dropout and the residual add run on the whole $b \times s \times h$ tensor: the
# *same* computation repeated on all $t$ GPUs, each storing its activations in full. **Sequence parallelism**
# (Korthikanti et al. 2022, §4.2.2) splits these regions along the *sequence*: each GPU keeps $s/t$ of the tokens,
# which is valid because LayerNorm, dropout and the residual treat each token separately. The operators change
# accordingly (the figure's bottom half): before the column-parallel GEMM, **g** all-gathers the sequence slices
# into the whole $X$ (backward: reduce-scatters the gradient); after the row-parallel GEMM, **ḡ** reduce-scatters
# the partial sums, so that each GPU receives the *summed* output for its own $s/t$ tokens (backward: all-gathers).

# %%
fig, axes = plt.subplots(2, 1, figsize=(8, 7.6), layout="constrained")
viz.plot_tensor_parallel_layer(sequence_parallel=False, ax=axes[0])
viz.plot_tensor_parallel_layer(sequence_parallel=True, ax=axes[1])
plt.show()

# %% [markdown]
# Why the bytes do not change: a ring all-reduce *is* a reduce-scatter followed by an all-gather (lesson 02).
# Sequence parallelism only moves the all-gather half to the other end of the block, past the LayerNorm and dropout
# that now work on slices. The cost model says so for one GPT-3 activation on 8 GPUs, and shows what sequence
# parallelism buys in memory:

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
# Same bytes on the wire, and the activations per layer fall from $sbh(10 + 24/t)$ to $sbh \cdot 34/t$: the 10 bytes
# per element that LayerNorm, dropout and the GEMMs' inputs stored whole on every GPU (derived term by term in the
# worked example below) are now split 8 ways too; at $t = 8$ that is 4.25 instead of 13 bytes per $sbh$ element.
# Lesson 04 lists these four collectives per layer for a real plan, under the names "sequence-sharded activations
# gathered" and "layer outputs reduce-scattered".

# %% [markdown]
# ## The science
#
# ### 1. Global batch accounting
#
# $$B_\text{global} = b_\text{micro} \times N_\text{acc} \times N_\text{dp}$$
#
# Data-parallel replicas contribute different examples. Tensor- and pipeline-parallel workers cooperate on those
# same examples, and therefore do not multiply the effective global batch. The accumulation count $N_\text{acc}$
# is also the number of micro-batches $m$ each pipeline processes per step.
#
# *Assumptions:* every replica uses the same micro-batch and the same accumulation count. Variable batches and
# specialised schedules need explicit accounting.
#
# ### 2. Memory anatomy of one device
#
# Mixed-precision training with Adam stores, per parameter, a 16-bit copy of the weights (2 bytes), a 16-bit
# gradient (2 bytes) and an fp32 optimizer state of $K_\text{opt} = 12$ bytes (master weights, momentum and
# variance, 4 bytes each). ZeRO (Rajbhandari et al. 2020, §3.1), which calls it $K$, writes this as
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
# The $34\,sbh$ part grows linearly with the sequence; the $5as^2b$ part is the attention scores (softmax output,
# its dropout mask and the dropout output) and grows with $s^2$. Tensor parallelism divides the per-layer terms it
# splits by $t$; sequence parallelism splits the rest; *selective recomputation* drops the $5as/h$ term by
# recomputing the attention scores in the backward pass; *full recomputation* keeps only each layer's input,
# $2sbh$.
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
# - **Data parallel** (ZeRO §7): a ring all-reduce is a reduce-scatter plus an all-gather, each moving $\Psi$
#   elements per device, so plain data parallelism moves $2\Psi$ per step. ZeRO-1 and 2 also move $2\Psi$; ZeRO-3
#   adds a second parameter all-gather for the backward pass: $3\Psi$, 1.5 times the baseline. (Exactly, a ring
#   moves $(N_d - 1)/N_d$ of this.)
# - **Tensor parallel** (Narayanan et al. 2021, §3.2): two all-reduces of a $b \times s \times h$ tensor in the
#   forward pass and two in the backward pass of every layer (the operators g and f of the figure above),
#   $8\,bsh\,(t-1)/t$ elements per layer per device per micro-batch. With sequence parallelism each all-reduce
#   becomes a reduce-scatter plus an all-gather: the same elements.
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
# An example: a micro-batch of 8 examples, 16 accumulation steps and 64 data-parallel replicas.

# %%
example_batch = parallelism.global_batch(micro_batch=8, grad_accum_steps=16, data_parallel=64)
print(f"8 × 16 × 64 = {units.format_count(example_batch)} samples per optimizer step (nominal)")

# %% [markdown]
# The Ultra-Scale Playbook (Tazi et al. 2025) sizes a batch from the other end: it wants about 4 M tokens per step
# at a sequence length of 4096, which is 1024 samples. With a micro-batch of 2 on 128 GPUs that takes 4
# accumulation steps; on 512 GPUs it takes 1.

# %%
seq_len = 4096
for gpus, accumulation in ((128, 4), (512, 1)):
    samples = parallelism.global_batch(micro_batch=2, grad_accum_steps=accumulation, data_parallel=gpus)
    print(
        f"{gpus:4d} replicas × micro-batch 2 × {accumulation} steps = {units.format_count(samples)} samples "
        f"= {units.format_count(samples * seq_len)} tokens"
    )

# %% [markdown]
# Now keep that batch shape and add tensor and pipeline parallelism: the number of devices grows 32-fold,
# the number of examples per step does not.

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
# The Playbook's own benchmark runs show the same accounting on real hardware. In its published run data (the
# interactive explorer behind the Playbook; 8B model, 4 nodes of 8 H100s, global batch 256 sequences of 4096
# tokens), configurations as different as these all process the same 256 samples per step:

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
# The count is *nominal*. Sequence packing (several short documents in one sequence) and uneven batches change the
# effective number of examples, and a log can disagree with the configuration: in the same data set a few
# successful runs are labelled "GBS 256" although their settings give another number, such as one 32-node run:

# %%
mislabelled = parallelism.global_batch(micro_batch=1, grad_accum_steps=64, data_parallel=64)
print(f"reported 256 samples; b = 1 × N_acc = 64 × d = 64 gives {units.format_count(mislabelled)} samples")

# %% [markdown]
# When the batch matters (learning-rate schedules, comparisons between runs), compute it from the plan rather
# than trusting a label.
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
# Then the activations. Where does $sbh(34 + 5as/h)$ come from? Walk through one layer's forward pass and list
# every tensor the backward pass will need (Korthikanti et al. 2022, §4.1). Each is $s \times b \times h$ values of
# 2 bytes (16-bit), or $4h$ wide in the MLP, or $a \times s \times s$ for the attention scores; a dropout mask takes
# 1 byte per value. The last column says whether tensor parallelism already splits the tensor over $t$ (it lies
# between a column- and a row-parallel GEMM, in the figure above) or whether every GPU stores it whole. Bytes for
# GPT-3, one sequence ($b = 1$, $s = 2048$, $h = 12288$, $a = 96$):

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
# $34\,sbh + 5\,as^2b = sbh(34 + 5as/h)$, Korthikanti et al.'s Eq. 1. Under tensor parallelism 24 of the 34 bytes
# (and all the attention scores) are divided by $t$; the other 10 (the LayerNorm inputs, the two dropout masks and
# the inputs of the two column-parallel GEMMs) stay whole on every GPU, which gives $sbh(10 + 24/t + 5as/(ht))$
# (Eq. 2). Sequence parallelism splits those 10 along the sequence as well: $sbh(34/t + 5as/(ht))$.
#
# Recomputation trades these bytes for FLOPs. Dividing by $sbh$ shows the two terms of Eq. 1: 34 bytes per element
# for the linear parts, and $5as/h$ for the attention scores.

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
# For GPT-3 the attention-score term (80 bytes per $sbh$ element) is larger than everything else together (34),
# which is why recomputing only the attention scores saves 70 % of the activation memory (Korthikanti et al. report
# 70 % for GPT-3 and 65 % for [MT-NLG](glossary.ipynb#mt-nlg), for 2.7 % and 1.6 % extra FLOPs). Without recomputation one 2048-token
# sequence needs 275 GB of activations, far more than any device.
#
# ### ZeRO's Table 1, reproduced
#
# ZeRO's Table 1 gives the per-device model-state memory for 7.5B, 128B and 1T parameters at six data-parallel
# degrees. Below, each cell computed with `parallelism.zero_model_state_bytes` stands next to the value the paper
# prints. A ✓ marks a cell that fits in a 32 GB V100; ◆ marks the cells the paper sets in bold, the smallest
# data-parallel degree in the table at which each column fits.

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
# All 54 cells agree with the formula within the paper's rounding. The paper is not consistent about that
# rounding: the 7.5B columns are rounded to three significant figures (21.5625 → 21.6, 1.875 → 1.88, and
# 0.1172 → 0.12, the largest relative gap), but the large 128B and 1T values are *truncated* to integers
# (513.5 → 513, 4187.5 → 4187, 2013.67 → 2013). A test that compares against the printed table must allow for
# both. The ✓ cells show what the bold cells mean: with 64-way data parallelism, ZeRO-1 fits a 7.5B model, ZeRO-2
# a larger one, and only ZeRO-3's partitioning of the parameters themselves brings 128B (and, at 1024 devices, 1T)
# into a 32 GB device. Model states only: activations still come on top. How much larger for ZeRO-2? Its model
# states are linear in Ψ, so the largest model that fits is the capacity over the bytes per parameter:

# %%
zero2_bytes_per_param = parallelism.zero_model_state_bytes(1, 64, stage=2)  # 2 + 14/64 bytes per parameter
zero2_largest = V100_BYTES / zero2_bytes_per_param
print(
    f"ZeRO-2, N_d = 64: {zero2_bytes_per_param:.5f} bytes per parameter; largest model in "
    f"{units.format_bytes(V100_BYTES)}: {units.format_count(zero2_largest)} = {zero2_largest / 7.5e9:.2f} × 7.5B"
)
print(f"15B would need {units.format_bytes(parallelism.zero_model_state_bytes(15e9, 64, stage=2), digits=3)}")

# %% [markdown]
# ZeRO-2 fits a model 1.92 times the 7.5B one, not twice: 15B would need 33.3 GB. (The paper's Table 2 rounds the
# same bound to 14.4B.)
#
# ### Per-device memory of real plans
#
# Now the whole budget for GPT-3 175B on 80 GB A100s, with `parallelism.memory_breakdown` (first pipeline stage,
# micro-batch 1, 64 micro-batches per step when there is a pipeline). Each plan changes one thing.
#
# The cell passes [`calibration=None`](glossary.ipynb#calibration): the ideal model of this lesson, 16 bytes of
# model state per parameter and the activations above. Called without it, `memory_breakdown` (and lesson 04's
# `budget.step_time`, lesson 05's `budget.search_plans`) uses the course's default calibration instead, the
# *reference*: the memory of a real [framework](glossary.ipynb#framework), Megatron-LM (Megatron-Core) as it runs on
# DGX H100 nodes (its precision recipe's bytes per parameter, its logits, and a fixed framework memory for the CUDA
# context and buffers, measured on the Ultra-Scale Playbook's runs). Lesson 08 explains where its constants come from.

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
# Reading down the table: plain data parallelism replicates 2.8 TB of model states, so adding replicas never
# helps memory. ZeRO-3 with full recomputation shards those states 64 ways and fits, at the price of 1.5× the
# data-parallel traffic and a third more compute. Tensor parallelism inside one 8-GPU node divides the model states
# by 8 (the activations by less: without sequence parallelism 10 of the 34 bytes per $sbh$ stay replicated), which
# still leaves 405 GB. Adding 8 pipeline stages divides the states by 8 again, and then the *schedule* decides the
# activations: GPipe stores all 64 micro-batches (445 GB), 1F1B only 8 (55.6 GB). Selective recomputation plus
# sequence parallelism shrinks the activations to 10.3 GB and brings the plan under 80 GB; a data-parallel dimension
# with ZeRO-1 then spreads the optimizer state too, leaving room for a larger micro-batch.
#
# ### What a framework stores, and what it combines
#
# The 16 bytes per parameter above are ZeRO's recipe (§3.1): 16-bit parameters and gradients, and 12 bytes of fp32
# master weights and Adam moments. A real framework stores its own recipe, and it also decides which ZeRO stages it
# runs at all, which of them it combines with a pipeline, and which pipeline schedules it offers. The calibrated model
# reads all of it from a *framework preset* (`parallelism.FRAMEWORKS`), each behaviour cited to the framework's source
# at a release (`Framework.sources`); `megatron` is the default calibration's. The cell below asks `memory_breakdown`
# for the model states of GPT-3 175B on one device and with ZeRO-1 over 8 data-parallel ranks under each preset, per
# parameter, and prints what each preset runs and which ZeRO stages it overlaps (where each behaviour comes from, file
# and line, is printed under Sources).

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
# Three recipes come out:
#
# - **16 B**, ZeRO's: DeepSpeed keeps bf16 gradients and builds a partition's fp32 gradient only during the
#   optimizer step; FSDP2 keeps the sharded parameters in fp32 (the optimizer steps on them) and reduces fp32
#   gradients into fp32 shards, 4 + 4 + 8 bytes, the same total.
# - **18 B**, Megatron-LM's and nanotron's: the weight-gradient GEMM accumulates straight into an fp32 *main
#   gradient*, which replaces the bf16 gradient (2 + 4 + 12). With ZeRO-1 over $N_d$ ranks that is Megatron's
#   documented "6 + 12/d": 7.5 B at $N_d = 8$, against 5.5 B for ZeRO's recipe.
# - **20 B**, a bf16 gradient kept beside an fp32 accumulation buffer (2 + 2 + 4 + 12): no preset above stores it; a
#   bare `Calibration()` (`generic`) does.
#
# Two bytes per parameter look small, but on one GPU of GPT-3 175B's TP 8 × PP 8 plan they are 5.59 GB of model states
# without ZeRO, room for several micro-batches' activations.
#
# What a framework *runs* matters as much. ZeRO-2 and ZeRO-3 shard the gradients, which a pipeline accumulates
# over all its micro-batches before reducing them. DeepSpeed's pipeline engine refuses them ("ZeRO-2 and ZeRO-3 are
# incompatible with pipeline parallelism", Sources); Megatron-LM pairs its distributed optimizer (ZeRO-1) with
# pipelines and runs ZeRO-2 and 3 only without one (Megatron-FSDP); nanotron implements ZeRO-1 and nothing above
# it, with or without a pipeline. The schedules differ too: nanotron runs GPipe and 1F1B, Megatron-LM 1F1B and its
# interleaved variant (no GPipe), DeepSpeed 1F1B alone, FSDP2 no pipeline at all. torchtitan runs FSDP2 *with* pipelining, as
# Llama 3 trained: a pipeline stage then keeps its parameters and gradients whole for the step and reduce-scatters
# once after the last micro-batch (`reshard_with_pipeline=False`). Lesson 05's search rejects as "framework" every
# plan its preset does not run: ZeRO-2 or 3 with a pipeline under the default (Megatron-LM), any ZeRO-2 or 3 and any
# interleaving under nanotron.
#
# What a framework *overlaps* can depend on the ZeRO stage. The second table lists, for each preset, the stages
# under which it reduces gradient buckets during the backward pass and gathers updated parameters behind compute
# (lesson 04 prices both). Megatron-LM does both at every stage; nanotron reduces behind the backward but gathers its
# ZeRO-1 parameters after the optimizer step, on the critical path; DeepSpeed overlaps neither below ZeRO-3
# (`overlap_comm` is off by default below stage 3, and its ZeRO-1/2 `step()` all-gathers the updated weights before
# it returns). Each of these behaviours is cited, file and line, under Sources.
#
# ### Communication volume per step
#
# Each split also has a traffic bill. `parallelism.communication_volume_per_step` adds up, for one device, the
# bytes it sends per step on each axis (ring algorithms; one micro-batch per step unless a pipeline needs more).

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
# The rows check the three formulas of the science section:
#
# - **Data parallel:** 688 GB is $2 \cdot \tfrac{63}{64} \cdot 2\Psi$ bytes, ZeRO's $2\Psi$ elements with the ring's
#   $(N_d-1)/N_d$. ZeRO-1 and ZeRO-2 cost the same as plain data parallelism; ZeRO-3 costs 1.5 times as much.
#   (ZeRO-2 with several micro-batches per step reduce-scatters its partitioned gradients after each of them, so its
#   volume grows with $m$; the figure here is for $m = 1$.)
# - **Tensor parallel:** 302 MB per layer per micro-batch at $t = 4$ is $8\,bsh\,(t-1)/t$ elements of 2 bytes with
#   $bsh = 1 \cdot 2048 \cdot 12288$; at $t = 8$ the factor $(t-1)/t$ grows from 0.75 to 0.875. The volume does
#   not fall as the group grows, while each device's share of the compute does.
# - **Pipeline parallel:** 101 MB per micro-batch is $bsh$ elements forward plus $bsh$ backward; combined with
#   $t = 8$ the scatter/gather optimisation sends only $bsh/t$ across the stage boundary (805 MB per step for 64
#   micro-batches instead of 6.44 GB).
#
# So data parallelism sends by far the most bytes per step (688 GB for DP 64, against 33.8 GB for TP 8), but in
# one call per step that can overlap the backward pass. Tensor parallelism sends fewer bytes, in 192 small calls
# per direction, each of which blocks the next operator; that, not the volume, is why it is kept inside the fast
# NVLink domain of a node. Lesson 04 turns these bytes into time.

# %% [markdown]
# ## Figures
#
# ### Per-device memory against an 80 GB A100
#
# The plans of the worked example as stacked bars; the dashed line is the A100's 80 GB. Bars far above the line
# are drawn shrunk to the axis (every component keeps its share), with their total and scale printed.

# %%
fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
viz.plot_memory_breakdown(breakdowns, capacity_bytes=capacity, ax=ax)
plt.show()

# %% [markdown]
# Optimizer state (green) dominates every plan without ZeRO: 12 of the 16 bytes per parameter. Activations (red)
# decide whether a pipelined plan fits, and the schedule and recomputation decide the activations.
#
# ### Pipeline schedules as timelines
#
# `pipeline.pipeline_schedule` simulates one step: every stage runs its operations in the order its schedule prescribes,
# each as soon as its input is ready (communication is free here, so every gap is bubble). Here $p = 4$ stages, $m = 8$
# micro-batches, $t_\text{F}$ = 10 ms and $t_\text{bwd} = 2\,t_\text{F}$ per micro-batch per stage; the numbers in the
# boxes are micro-batches.

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
# The simulation finds the bubble without being told the formula. Compare its measurements with
# $(p-1)/(v\,m)$ and with the activation memory the first stage must hold:

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
# GPipe and 1F1B take the same 330 ms for 240 ms of work per device: the same bubble, 3 idle slots out of 8, 37.5 %: 1F1B does not make the pipeline faster, it makes it
# cheaper, holding the activations of 4 micro-batches instead of 8. Interleaving 2 chunks per device halves the
# bubble to 18.8 % at the price of 5.5 micro-batches of activations and twice the stage-to-stage traffic. In every
# schedule the cure for the bubble is the same: many more micro-batches than stages, $m \gg p$.

# %% [markdown]
# ## Misconception
#
# > *Doubling GPU count does not guarantee halving runtime; communication and serial dependencies remain.*
#
# Take the 4-stage pipeline above and double it to 8 stages, with the same 8 micro-batches. Each stage now holds
# half the layers, so $t_\text{F}$ and $t_\text{bwd}$ halve. The pipeline's serial dependency (a stage cannot start a
# micro-batch before the stage before it has finished it) does not shrink:

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
# The bubble grew from 3/8 to 7/8 of the ideal time. Tensor parallelism shows the communication half of the
# misconception: going from $t = 4$ to $t = 8$ halves each device's share of a layer's FLOPs but *raises* the bytes
# each device sends per layer, from 302 MB to 352 MB (the table above). Adding devices adds aggregate resources;
# whether it adds speed depends on what the split costs.

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

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="Which ZeRO stage increases data-parallel communication over plain data parallelism, and by how much?",
        options=("Stage 1, by 2×", "Stage 2, by 1.5×", "Stage 3, by 1.5×"),
        answer=2,
        explanation="Stages 1 and 2 replace the all-reduce by a reduce-scatter and an all-gather of the same total "
        "volume, 2Ψ. Stage 3 gathers the parameters again for the backward pass: 3Ψ, 1.5× the baseline.",
    )
)

# %% [markdown]
# ## History
#
# - **2018–2019: pipelines.** GPipe (Huang et al., arXiv 1811.06965) split a network into stages and micro-batches
#   and flushed the pipeline every step; PipeDream (Narayanan et al., arXiv 1806.03377) introduced the
#   one-forward-one-backward order, and its flushed variant PipeDream-Flush (arXiv 2006.09503) is today's 1F1B.
# - **2019: tensor parallelism for transformers.** Megatron-LM (Shoeybi et al., arXiv 1909.08053) split the
#   attention heads and the MLP's inner dimension so that each layer needs only two all-reduces forward and two
#   backward.
# - **2019–2020: state sharding.** ZeRO (Rajbhandari et al., arXiv 1910.02054, SC'20) noticed that data parallelism
#   stores 16Ψ bytes on every replica and partitioned the optimizer state, gradients and parameters, trading memory
#   for at most 1.5× communication.
# - **2021: the axes analysed together.** *Large-model tensor, pipeline, and data parallelism analyzed together.*
#   The Megatron-LM study of Narayanan et al. (arXiv 2104.04473, SC'21) quantified how the strategies interact,
#   introduced the interleaved schedule, and ran a 1-trillion-parameter model on 3072 A100s at 163 teraFLOP/s per
#   GPU, 52 % of peak. That is a hardware-FLOPs figure (HFU): it counts the forward pass that full recomputation
#   repeats; the model FLOPs utilisation (MFU) is 6/8 of it (lesson 01). Its message is that model partitioning
#   and hardware communication must be designed together: tensor parallelism
#   inside a server, pipeline parallelism across servers, data parallelism to scale out.
# - **2022: activations.** Korthikanti et al. (arXiv 2205.05198) counted activation memory per layer and added
#   sequence parallelism and selective recomputation.

# %% [markdown]
# ## Summary
#
# - Four splits: data (the batch), tensor (inside layers), pipeline (across depth), state sharding (the stored
#   state). They combine, with $d \cdot t \cdot p = N_\text{GPU}$.
# - Each split has its boundary traffic: data parallel all-reduces gradients once per step (overlappable); tensor
#   parallel all-reduces activations twice per layer in each direction (blocking; with sequence parallelism each
#   all-reduce becomes a reduce-scatter and an all-gather of the same bytes); pipeline parallel sends
#   activations between stages per micro-batch (blocking); ZeRO-3 gathers parameters twice and costs 1.5×.
# - Memory per device = model states ($16\Psi$ with mixed-precision Adam, divided by $t\,p$ and sharded by ZeRO)
#   + activations ($sbh(34 + 5as/h)$ per layer, times the layers and micro-batches in flight, cut by
#   recomputation and sequence parallelism).
# - $B_\text{global} = b_\text{micro} \times N_\text{acc} \times N_\text{dp}$: only replication and accumulation multiply
#   examples. The count is nominal; packing and uneven batches change the effective count.
# - Pipeline bubble $(p-1)/m$ (GPipe and 1F1B alike), $(p-1)/(v\,m)$ interleaved; 1F1B holds $p$ micro-batches
#   of activations, GPipe $m$.
# - More devices are not a speed multiplier: communication and serial dependencies remain.

# %% [markdown]
# ## Exercises
#
# 1. **Global batch.** A run uses micro-batch 2, sequence length 4096, $t = 4$, $p = 2$ on 256 GPUs and wants
#    about 4 M tokens per step. What are $d$, the number of accumulation steps $N_\text{acc}$, and the exact
#    number of tokens per step? Check with `parallelism.global_batch`.
# 2. **ZeRO.** For a 7.5B-parameter model, what is the smallest data-parallel degree $N_d$ at which ZeRO-2
#    model states fit in 16 GB? Compute with `parallelism.zero_model_state_bytes` for $N_d$ = 32, 64, 128.
# 3. **Activations.** For the 530B MT-NLG model ($a = 128$, $s = 2048$, $h = 20480$), compute $5as/h$ and the share
#    of activation memory selective recomputation saves with `parallelism.activation_bytes_per_layer`.
# 4. **Bubble.** A pipeline has $p = 8$ stages. How many micro-batches does 1F1B need for a bubble of at most 5 %
#    of the ideal time? How many with the interleaved schedule at $v = 4$ (remember $m$ must be a multiple of
#    $p$)? Verify both with `pipeline.pipeline_schedule`.
# 5. **Tensor traffic.** For GPT-3 175B with $b = 1$, how many bytes does one device send per layer per
#    micro-batch at $t = 2$, and what is the limit as $t$ grows?
#
# <details>
# <summary>Answers</summary>
#
# 1. $d = 256/(4 \cdot 2) = 32$. 4 M tokens at 4096 per sequence is 1024 sequences, so
#    $N_\text{acc} = 1024/(2 \cdot 32) = 16$, and $B_\text{global} = 2 \times 16 \times 32 = 1024$ samples = 4,194,304 tokens.
# 2. ZeRO-2 stores $2\Psi + 14\Psi/N_d$: 15 GB + 3.28 GB = 18.3 GB at $N_d = 32$; 15 GB + 1.64 GB = 16.6 GB at 64;
#    15 GB + 0.82 GB = 15.8 GB at 128. So $N_d = 128$; the floor is $2\Psi$ = 15 GB however large $N_d$ grows.
# 3. $5 \cdot 128 \cdot 2048 / 20480 = 64$; selective recomputation saves $64/(34 + 64)$ = 65.3 %, Korthikanti et
#    al.'s 65 %.
# 4. 1F1B: $(p-1)/m \le 0.05$ needs $m \ge 140$. Interleaved, $v = 4$: $7/(4m) \le 0.05$ needs $m \ge 35$, and the
#    next multiple of 8 is $m = 40$ (bubble 4.4 %).
# 5. $8\,bsh\,(t-1)/t$ elements × 2 bytes = $16 \cdot 2048 \cdot 12288 \cdot \tfrac12$ bytes = 201 MB at $t = 2$;
#    as $t \to \infty$ it tends to $16\,bsh$ bytes = 403 MB: a larger group never sends less per device.
#
# </details>

# %% [markdown]
# ## Sources
#
# - NVIDIA, *Megatron Core — Parallelism Strategies* (developer guide).
#   https://docs.nvidia.com/megatron-core/developer-guide/latest/user-guide/parallelism-guide.html
# - D. Narayanan, M. Shoeybi, J. Casper, P. LeGresley, M. Patwary, V. Korthikanti, D. Vainbrand, P. Kashinkunti,
#   J. Bernauer, B. Catanzaro, A. Phanishayee, M. Zaharia, *Efficient Large-Scale Language Model Training on GPU
#   Clusters Using Megatron-LM*, SC'21. arXiv:2104.04473. https://arxiv.org/abs/2104.04473 — notation (p, t, d),
#   bubble (§2.2), communication volumes (§2.3, §3.2, §4.1), Table 1 configurations.
# - S. Rajbhandari, J. Rasley, O. Ruwase, Y. He, *ZeRO: Memory Optimizations Toward Training Trillion Parameter
#   Models*, SC'20. arXiv:1910.02054. https://arxiv.org/abs/1910.02054 — 16Ψ (§3.1), stages (§5), Table 1 (p. 11),
#   communication volume (§7).
# - V. Korthikanti, J. Casper, S. Lym, L. McAfee, M. Andersch, M. Shoeybi, B. Catanzaro, *Reducing Activation
#   Recomputation in Large Transformer Models*, MLSys'23. arXiv:2205.05198. https://arxiv.org/abs/2205.05198 —
#   activation memory per layer (Eq. 1, Table 2), selective recomputation.
# - N. Tazi, F. Mom, H. Zhao, P. Nguyen, M. Mekkouri, L. von Werra, T. Wolf, *The Ultra-Scale Playbook: Training
#   LLMs on GPU Clusters*, Hugging Face, 2025. https://huggingface.co/spaces/nanotron/ultrascale-playbook — global
#   batch example; the run configurations quoted come from its interactive benchmark figure.
# - Y. Huang et al., *GPipe: Efficient Training of Giant Neural Networks using Pipeline Parallelism*, NeurIPS 2019.
#   arXiv:1811.06965. https://arxiv.org/abs/1811.06965
# - D. Narayanan et al., *PipeDream: Generalized Pipeline Parallelism for DNN Training*, SOSP 2019.
#   arXiv:1806.03377. https://arxiv.org/abs/1806.03377 ; D. Narayanan et al., *Memory-Efficient Pipeline-Parallel
#   DNN Training* (PipeDream-2BW and PipeDream-Flush), ICML 2021. arXiv:2006.09503. https://arxiv.org/abs/2006.09503
# - M. Shoeybi et al., *Megatron-LM: Training Multi-Billion Parameter Language Models Using Model Parallelism*,
#   2019. arXiv:1909.08053. https://arxiv.org/abs/1909.08053
# - The frameworks' behaviours the framework presets encode (precision recipe, ZeRO stages, what combines with a
#   pipeline, schedules, overlaps), each cited to the framework's source at a release (`Framework.sources`):


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
# This lesson counted bytes: how many each device stores and how many it sends. [04 · Budget the bytes](04_communication_budget.ipynb)
# turns the bytes into time on a real cluster, separates the communication that hides behind compute from the
# communication that sits on the critical path, and searches over plans for the fastest one that fits.
