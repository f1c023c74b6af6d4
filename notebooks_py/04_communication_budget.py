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
# # 04 · Budget the bytes: from a partition to a step time
#
# Lesson 03 counted what a partition costs in bytes: the memory each device keeps and the tensors it must send. Bytes
# are not yet time. A 50.3 MB all-reduce inside an NVLink node costs a few hundred microseconds, the same all-reduce
# across two nodes costs about 1.4 times as much, and either one costs nothing on the step time if independent compute
# hides it, or all of it if the next operator is waiting. This lesson turns a partition and a topology into a step
# time, and separates the exposed communication from the hidden: the budget of one plan. Lesson 05 uses this budget
# to search over plans.

# %% [markdown]
# ## What you'll learn
#
# **Learning objective:** *derive communication consequences from a chosen partition and topology.*
#
# Along the way you will be able to:
#
# - list the transfers a partition implies and estimate each one's time on its link with
#   $T_\text{comm} \approx n\alpha + Q/B_\text{eff}$;
# - decide which transfers can overlap compute (the dependency rule) and compute the exposed remainder;
# - explain why tensor parallelism belongs inside the NVLink domain, with numbers;
# - run a strong-scaling experiment and find where communication starts to dominate;
# - name a plan's binding constraint: which of compute, exposed communication and the pipeline bubble takes the
#   most time.

# %% [markdown]
# ## Prerequisites
#
# - [01 · Count the work](01_mac.ipynb): FLOPs of a transformer layer and of a training iteration; the roofline.
# - [02 · Move the data](02_nccl.ipynb): collectives, the α–β model, latency-bound vs bandwidth-bound,
#   hierarchical all-reduce.
# - [03 · Split the work](03_parallelism.ipynb): data, tensor, pipeline and ZeRO parallelism; memory per device;
#   the tensors that cross device boundaries; the pipeline bubble.
#
# **Time to learn:** about 2.1 hours by the course's rule
# ([how it is counted](00_course_map.ipynb#How-long-each-part-takes)).

# %%
import textwrap

import matplotlib.pyplot as plt

from course_lib import budget, collectives, hardware, parallelism, units, viz
from course_lib.widgets import quiz

# %% [markdown]
# ## Mechanism
#
# **Role.** A communication budget chooses the tensor, pipeline, data and state partitions of a model under the
# constraints of the topology (which devices are connected by what) and of the dependencies (which result is needed
# before what can start).
#
# Distributed execution divides work and state in several ways. Data parallelism processes different examples and
# synchronises the updates. Tensor parallelism splits operators and exchanges partial results. Pipeline parallelism
# assigns groups of layers to stages, which adds activation transfers and possible bubbles. State sharding
# distributes the parameters, gradients or optimizer state that would otherwise be replicated. These choices
# combine. More devices bring more memory and more arithmetic, but also more collectives, more synchronisation and
# more topology constraints. A good plan puts the frequent exchanges on suitable links and *measures* how much
# communication is exposed on the critical path, instead of assuming that all network time overlaps with compute.
#
# | What is specified | Value | Why it matters |
# |---|---|---|
# | Partitioned object | examples, tensor dimensions, layers or persistent state | different partitions create different communication patterns |
# | Collective cost | latency plus payload transfer | small messages can be latency-limited; large messages can be bandwidth-limited |
#
# The budget takes the **model and the device topology** (tensor sizes, the layer graph, the state layout and the
# link capacities) and produces a **distributed step** (scheduled compute, collectives and synchronisation). It is
# built in five steps, which are also the spine of this lesson's worked example:
#
# 1. **Choose** which dimensions of work and state need partitioning to meet the local memory and time
#    constraints.
# 2. **Derive** the transfers and collectives that each partition implies, rather than starting from a chip count.
# 3. **Map** the frequent communication onto topology regions with sufficient latency and bandwidth.
# 4. **Schedule** overlap only where producer and consumer dependencies allow it, without reusing a buffer before
#    its transfer has finished.
# 5. **Measure** the completed step (or token) latency, and adjust the partition size when the smaller local
#    compute no longer amortises the communication.
#
# **Trade-off.** Sharding can make a model fit but increase traffic; larger parallel groups can cut the local work
# so much that communication dominates.
#
# **Why it matters for AI.** Training and inference have different collective frequencies and batch shapes, so a
# partition that trains efficiently may serve poorly (lesson 10 serves a model).

# %% [markdown]
# ## The science
#
# ### Communication approximation
#
# $$T_\text{comm} \approx n\,\alpha + \frac{Q}{B_\text{eff}}$$
#
# $n$ is the number of latency-bearing phases (steps that each pay a start-up cost), $\alpha$ the seconds per
# phase, $Q$ the bytes transferred on the critical path and $B_\text{eff}$ the useful bytes per second for the
# chosen algorithm and topology. A ring all-reduce over $p$ ranks of a buffer of $S$ bytes has $n = 2(p-1)$ and
# $Q = 2\,\tfrac{p-1}{p}\,S$ (lesson 02; here $p$ counts a collective's ranks, from the step time on it counts
# pipeline stages). Small messages are latency-limited ($n\alpha$ dominates); large ones are
# bandwidth-limited ($Q/B_\text{eff}$ dominates).
#
# *Assumptions:* it is a coarse model. Contention, overlap, the reduction's own compute and protocol behaviour can
# change both terms. No collective algorithm is universal: NCCL picks ring, tree or others by size and topology.
#
# ### Exposed and hidden communication
#
# A transfer costs step time only by the part that no independent compute covers:
#
# $$T_\text{exposed} = \max\left(0,\; T_\text{comm} - T_\text{window}\right)$$
#
# where $T_\text{window}$ is the compute that neither produces nor consumes the transferred data and may run
# meanwhile. The **dependency rule** of `course_lib.budget` decides the windows:
#
# - tensor-parallel collectives sit on the critical path ($T_\text{window} = 0$): the next operator needs their
#   result;
# - pipeline sends sit on the critical path: the next stage waits for the activations;
# - data-parallel gradient reduction overlaps the backward pass: buckets of finished gradients are reduced while
#   earlier layers still compute theirs (window: one micro-batch's backward); with ZeRO-3 the parameter gathers
#   overlap the compute of the same micro-batch (prefetching the next layer); the parameter all-gather after a
#   ZeRO-1/2 optimizer step is exposed.
#
# ### Step time
#
# $$T_\text{step} = m\,\big(t_\text{F} + t_\text{bwd} + T_\text{TP} + T_\text{PP}\big) + \frac{p-1}{v}\,\big(t_\text{F} + t_\text{bwd} + T_\text{TP} + T_\text{PP}\big) + T_\text{DP, exposed}$$
#
# with $m$ micro-batches per step, $t_\text{F}$ and $t_\text{bwd}$ the forward and backward compute of one micro-batch
# on one device, $T_\text{TP}$ and $T_\text{PP}$ the (exposed) tensor and pipeline communication per micro-batch, and
# the bubble $(p-1)/v$ micro-batch slots (Narayanan et al. 2021, Eq. 1). In this lesson's ideal model
# (`calibration=None`, which every cell below passes) compute runs at `compute_efficiency` × peak, 0.5 unless you pass
# another. Called without `calibration`, `budget.step_time` uses the course's default calibration instead, the
# reference: the framework preset Megatron-LM (`parallelism.MEGATRON_CORE`: its memory per parameter; its gradient
# buckets reduced during the backward pass, its parameter gathers overlapped with the next forward, the backward half of
# its tensor-parallel collectives overlapped with the weight-gradient GEMM), GEMMs at a fixed share of peak and a fixed
# cost per layer and micro-batch, both fitted on published Megatron-LM and NeMo runs on DGX H100s. Lesson 05 ranks plans
# with it; lesson 08 explains where it comes from.
#
# The step is thus made of three terms: compute, exposed communication (tensor, pipeline and the exposed part of the
# data-parallel traffic) and the bubble. The **binding constraint** of a plan is the largest of the three, the term
# that limits the step most (`budget.binding_constraint`): a compute-bound plan gains most from faster kernels, a
# plan bound by exposed communication from faster links or more overlap, a bubble-bound one from more
# micro-batches or interleaving. A plan search (lesson 05) adds two reasons a plan cannot run at all: "memory" (it does not
# fit) and "batch divisibility" (its sizes do not divide the global batch).
#
# ### Variables
#
# | Symbol | Code name | Meaning | Unit |
# |---|---|---|---|
# | $n$ | `phases` | latency-bearing phases of one collective | – |
# | $\alpha$ | `latency_s` | start-up cost of one phase | s |
# | $Q$ | `wire_bytes` (of `CollectiveCost`) | bytes on the critical path | bytes |
# | $S$ | `payload_bytes` | a collective's buffer size | bytes |
# | $B_\text{eff}$ | `bandwidth_bytes_per_s` | useful one-way bandwidth per device | bytes/s |
# | $T_\text{window}$ | `overlap_window_s` | independent compute a transfer can hide behind | s |
# | $d, t, p, v, m, b$ | `data_parallel`, `tensor_parallel`, `pipeline_parallel`, `virtual_stages`, `grad_accum_steps`, `micro_batch` | the plan (lesson 03) | – |
# | $\eta$ | `compute_efficiency` | achieved share of peak FLOP/s during compute | – |
#
# ### What the model assumes, and what it ignores
#
# - **Placement** follows Megatron-LM's rank order: tensor-parallel ranks are adjacent (inside one NVLink node
#   when $t \le 8$), data-parallel ranks next, pipeline stages outermost.
# - **Collectives** run as NCCL runs them, priced by NCCL's own cost model (`course_lib.nccl`, after its
#   `src/graph/tuning.cc`): a flat ring through all the group's ranks, NCCL's tree (a chain in each node, a double
#   binary tree between nodes) or NVLink SHARP on Hopper and later, with the protocol (LL, LL128 or Simple) that its
#   tuner expects to be fastest for the size. A ring that spans nodes runs a channel on every rail, so its bandwidth
#   is the smaller of a GPU's NVLink and the NICs of the group's members on a node. Lesson 02's textbook
#   hierarchical all-reduce is not among them; NCCL's own hierarchical algorithms are its tree and NVLS tree (one
#   level inside each node, another between nodes), and CollNet (switches that reduce), which the course leaves out.
# - **Links** are the presets of `course_lib.hardware`: the network at its nominal one-way bandwidth per GPU, NVLink
#   at the rate NCCL counts (below the datasheet's), NCCL's latencies per call and per hop, and α = 1 µs (NVLink)
#   or 5 µs (network) for a pipeline send.
# - **Ignored:** contention between concurrent collectives, congestion in the network's upper levels, kernel launch
#   overheads, the slowdown of compute kernels that share the GPU with communication kernels, optimizer-step time,
#   data loading, and any variation of $\eta$ with the matrix shapes. $\eta = 0.5$ is a guess, not a measurement.
#   Treat the model as a way to compare plans and find their binding constraint, not as a prediction to the
#   second.

# %% [markdown]
# ## Worked example
#
# ### A synthetic collective
#
# Four latency-bearing phases of 5 µs plus 100 MB at 50 GB/s:

# %%
example_comm_s = collectives.comm_time(
    phases=4, latency_s=5 * units.US, payload_bytes=100 * units.MB, bandwidth_bytes_per_s=50 * units.GB
)
print(f"T_comm = 4 × 5 µs + 100 MB / 50 GB/s = {units.format_time(example_comm_s)}")

# %% [markdown]
# Whether those 2.02 ms cost anything depends on the compute next to them and on the dependencies. The table
# compares three amounts of local compute. "No overlap" is a transfer whose consumer waits (a window of 0); "valid
# overlap" is one with an overlap schedule that the dependencies allow (the whole local compute is its window).

# %%
print(f"{'local compute':>14} {'exposed, no overlap':>20} {'step':>9} {'exposed, valid overlap':>23} {'step':>9}")
for compute_s in (4 * units.MS, 2 * units.MS, 1 * units.MS):
    blocked = budget.exposed_after_overlap(example_comm_s, 0.0)
    overlapped = budget.exposed_after_overlap(example_comm_s, compute_s)
    print(
        f"{units.format_time(compute_s):>14} {units.format_time(blocked):>20} "
        f"{units.format_time(compute_s + blocked):>9} {units.format_time(overlapped):>23} "
        f"{units.format_time(compute_s + overlapped):>9}"
    )

# %% [markdown]
# With 4 ms of local compute a valid overlap schedule hides the transfer completely. Cut the local compute to 1 ms
# (by splitting the work over more devices, say) and even a perfect overlap leaves 1.02 ms exposed; without one,
# the step triples from 1 ms to 3.02 ms. The rest of the lesson applies this arithmetic to every transfer of a
# real plan.
#
# ### Step 1 · Choose what must be partitioned
#
# GPT-3 175B on Selene's 80 GB A100s (Narayanan et al. 2021's cluster: 8 GPUs per node on NVLink, 8 × 200 Gb/s
# InfiniBand per node). Lesson 03 showed that its 2.8 TB of model states need $t \cdot p = 64$ with selective
# recomputation and sequence parallelism to fit; a data-parallel dimension of 16 then uses 1024 GPUs, with the
# global batch of 1536 sequences Narayanan et al. use for GPT-3. `PLAN` is that plan.

# %%
MODEL = parallelism.GPT3_175B
CLUSTER = hardware.SELENE_3072
PLAN = parallelism.ParallelPlan(
    data_parallel=16,
    tensor_parallel=8,
    pipeline_parallel=8,
    zero_stage=1,
    micro_batch=1,
    grad_accum_steps=96,
    recompute="selective",
    sequence_parallel=True,
)
memory = parallelism.memory_breakdown(MODEL, PLAN, calibration=None)  # the ideal model of lesson 03
print(
    f"{MODEL.name} on {units.format_count(PLAN.devices)} of the {units.format_count(CLUSTER.devices)} GPUs of "
    f"{CLUSTER.name}"
)
print(
    f"global batch {units.format_count(PLAN.global_batch)} sequences, {PLAN.grad_accum_steps} micro-batches "
    f"per pipeline per step"
)
print(
    f"memory per GPU {units.format_bytes(memory.total)} of {units.format_bytes(CLUSTER.accelerator.hbm_capacity_bytes)}"
)
peak_flops_per_s = CLUSTER.accelerator.peak("bf16")
print(f"peak per GPU (bf16): {units.format_flops_rate(peak_flops_per_s)}; this lesson computes at half of it")
print(
    f"NVLink, one-way per GPU:     {units.format_bandwidth(CLUSTER.intra_bandwidth_bytes_per_s)}, "
    f"α = {units.format_time(CLUSTER.intra_node_link.latency_s)}"
)
print(
    f"InfiniBand, one-way per GPU: {units.format_bandwidth(CLUSTER.inter_bandwidth_bytes_per_s)}, "
    f"α = {units.format_time(CLUSTER.inter_node_link.latency_s)}"
)

# %% [markdown]
# The plan fits with room to spare. Note the factor of 12 between the two links: each GPU has 300 GB/s to its
# node-mates but only 25 GB/s (its share of the node's 8 × 200 Gb/s) to the rest of the cluster. (NCCL's cost
# model counts an A100's NVLink as 12 links × 20 GB/s = 240 GB/s, which is what the collectives below run at.)
#
# ### Step 2 · Derive the transfers the partition implies
#
# `budget.transfer_table` lists every tensor that crosses a device boundary in one step (from
# `parallelism.step_transfers`), the levels of the cluster its group spans, and its time:
# `budget.transfer_time_per_call` prices one call as NCCL would run it, given where the group's ranks sit (tensor
# ranks adjacent, data ranks $t$ apart, pipeline ranks $t \cdot d$ apart: `budget.axis_stride`).

# %%
print(budget.format_transfer_table(budget.transfer_table(MODEL, PLAN, CLUSTER)))

# %% [markdown]
# Three very different profiles come out of one plan:
#
# - **tensor parallel:** 9216 small calls per step (two per layer, for each of four kinds of tensor, × 12 layers
#   per stage × 96 micro-batches), each 221 µs on NVLink (NCCL's ring with the Simple protocol), 2.03 s in all,
#   every one of them blocking;
# - **pipeline parallel:** 192 sends of 6.29 MB (the $bsh/t$ slice) over InfiniBand, 25.1 ms each way, blocking;
# - **data parallel:** one reduce-scatter of the 5.46 GB gradient shard and one all-gather of the updated
#   parameters, 205 ms each over InfiniBand, and the reduce-scatter can overlap the last backward pass.
#
# Recomputation changes the tensor-parallel count. This plan's selective recomputation redoes only the attention
# scores, inside each device (every GPU holds whole heads), so it adds no collective. *Full* recomputation keeps only
# each layer's input (lesson 03), so the backward pass first runs the layer's forward pass again, its collectives
# included: full recomputation repeats the forward tensor-parallel collectives, once more per layer and micro-batch
# (`parallelism.step_transfers` counts them so), while the backward ones run once as before.
#
# The partition explorer draws the same plan: the model once, its 96 layers in 8 pipeline stages of 12, each stage
# cut into $t = 8$ slices inside one node, 16 data-parallel replicas behind it, and a numbered marker where each of
# these tensors crosses a device boundary, listed below the drawing with its payload, calls per step, link, time
# per step and the part of it nothing hides. Beside it: the memory of one GPU against its 80 GB, and where the step's
# time goes. Move any control: the transfers, links and bars follow (the ideal model of this lesson: compute at half
# of peak, nominal link rates).

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (the partition explorer); its numbers are printed in the next cell
from course_lib.widgets import partition_lab

explorer = partition_lab(
    data_parallel=16,
    tensor_parallel=8,
    pipeline_parallel=8,
    zero_stage=1,
    micro_batch=1,
    grad_accum_steps=96,
    recompute="selective",
    sequence_parallel=True,
    nodes=128,
)
explorer


# %%
def print_transfers(result):
    """The explorer's boundary tensors (the rows of its table, in the order of its markers) and its step."""
    print(budget.format_transfer_table(result["transfers"]))
    print(
        f"step {units.format_time(result['step_time_s'])}: exposed communication "
        f"{units.format_time(result['exposed_communication_s'])}, bubble {units.format_time(result['bubble_s'])}, "
        f"binding: {result['binding_constraint']}"
    )


print_transfers(explorer.result)

# %% [markdown]
# The explorer's rows are the table's: the four tensor-parallel collectives take 508 ms each per step on NVLink, all
# exposed; of the gradient reduce-scatter's 205 ms, only 55.7 ms is exposed (the rest hides behind the last
# backward pass); the parameter all-gather after the optimizer step hides behind nothing.
#
# ### Step 3 · Map the frequent exchanges to fast links
#
# Tensor parallelism communicates after every layer, so it belongs on the fastest links. Compare the same 1024 GPUs
# and the same global batch with $t = 8$ (one node per tensor group) and $t = 16$ (each group spans two nodes).
# With $t = 16$ on 1024 GPUs the data-parallel size halves to $d = 8$, so each pipeline must run twice the
# micro-batches, $m = 192$ instead of 96, to keep the global batch at 1536 sequences.

# %%
variants = {
    "t = 8, inside a node": PLAN,
    "t = 16, across 2 nodes": PLAN.replace(tensor_parallel=16, data_parallel=8, grad_accum_steps=192),
}
activation_bytes = parallelism.ACTIVATION_BYTES * PLAN.micro_batch * MODEL.seq_len * MODEL.hidden
steps = {}
one_call, tp_calls = {}, {}
for name, plan in variants.items():
    one_call[name] = budget.group_collective_time("all_reduce", CLUSTER, plan.tensor_parallel, 1, activation_bytes)
    tp_calls[name] = sum(x.calls_per_step for x in parallelism.step_transfers(MODEL, plan) if x.axis == "tensor")
    steps[name] = budget.step_time(MODEL, plan, CLUSTER, calibration=None)
    print(
        f"{name:23} d = {plan.data_parallel:2d}, m = {plan.grad_accum_steps}: one "
        f"{units.format_bytes(activation_bytes)} all-reduce {units.format_time(one_call[name]):>7}; "
        f"step {units.format_time(steps[name].total_s)}, exposed tensor-parallel "
        f"{units.format_time(steps[name].exposed_s['tensor'])}, "
        f"memory {units.format_bytes(parallelism.memory_breakdown(MODEL, plan, calibration=None).total)}"
    )
inside, across = variants
print(
    f"t = 16 against t = 8: each call {one_call[across] / one_call[inside]:.2f}× slower, "
    f"{tp_calls[across] / tp_calls[inside]:.0f}× the tensor-parallel calls per GPU (m = "
    f"{variants[across].grad_accum_steps} instead of {variants[inside].grad_accum_steps}): exposed tensor-parallel "
    f"time {steps[across].exposed_s['tensor'] / steps[inside].exposed_s['tensor']:.1f}×, "
    f"step {steps[across].total_s / steps[inside].total_s:.2f}×"
)

# %% [markdown]
# On the explorer, $t = 16$ on the same 1024 GPUs ($d = 8$, 192 micro-batches per step): the red line inside each
# stage is the node boundary the tensor groups now cross, and the link column of the tensor-parallel rows turns from
# NVLink to InfiniBand.

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (the partition explorer); its numbers are printed in the next cell
across_lab = partition_lab(
    data_parallel=8,
    tensor_parallel=16,
    pipeline_parallel=8,
    zero_stage=1,
    micro_batch=1,
    grad_accum_steps=192,
    recompute="selective",
    sequence_parallel=True,
    nodes=128,
)
across_lab

# %%
print_transfers(across_lab.result)

# %% [markdown]
# Crossing the node boundary makes each all-reduce 1.39 times slower. Inside a node NCCL runs a ring over NVLink with
# the Simple protocol; across two nodes it runs one flat ring through all 16 GPUs, with a channel on each of the
# node's 8 InfiniBand rails, so the ring's bus bandwidth is the node's 8 × 25 GB/s, a little below NVLink, and with
# the network's higher latency per hop its tuner switches to the LL128 protocol (lesson 07's exercise 5 works it out).
# With twice the micro-batches each GPU also makes twice the calls: exposed tensor-parallel time grows 2.8-fold, and
# since these calls are all on the critical path the step grows 1.11-fold. The larger group halves the memory per GPU,
# which is the only reason to accept it. This is Narayanan et al.'s first takeaway: use tensor parallelism up to the
# size of a server, then pipeline parallelism across servers.
#
# ### Step 4 · Overlap only where the dependencies allow
#
# `budget.step_time` applies the dependency rule to every transfer of the plan and adds up the step:

# %%
step = steps["t = 8, inside a node"]
print(f"compute (at {units.format_percent(0.5)} of peak)   {units.format_time(step.compute_s):>8}")
print(f"pipeline bubble                  {units.format_time(step.bubble_s):>8}")
for axis in ("tensor", "pipeline", "data"):
    print(
        f"{axis + ' parallel':17} exposed {units.format_time(step.exposed_s[axis]):>8}, "
        f"hidden {units.format_time(step.overlapped_s[axis]):>8}"
    )
print(
    f"step time                        {units.format_time(step.total_s):>8}  "
    f"(binding constraint: {step.binding_constraint})"
)
print(
    f"exposed communication: {units.format_time(step.exposed_communication_s)}, "
    f"{units.format_percent(step.exposed_communication_s / step.total_s)} of the step; "
    f"exposed communication and bubble add {units.format_percent((step.total_s - step.compute_s) / step.compute_s)}"
    f" to the compute"
)

# %% [markdown]
# Only the data-parallel reduce-scatter can hide, and only partly: its 205 ms exceed the last micro-batch's
# backward pass (149 ms), so 55.7 ms stay exposed, plus the whole 205 ms parameter all-gather that follows the
# optimizer step. Under this lesson's dependency rule everything tensor- and pipeline-parallel is exposed. Exposed
# communication and the bubble together add 19 % to the compute. The figure section draws this step as a timeline.
#
# #### What the framework hides
#
# The dependency rule is a bound, not a law: a framework can split an operator so that part of its communication
# runs beside compute that does not need it. The calibrated model (lesson 08) runs a plan as a framework preset
# says (`framework=`, a key of `parallelism.FRAMEWORKS`), each overlap cited to the framework's source. Some overlaps
# depend on the ZeRO stage (lesson 03's second framework table), so the cell prints what each preset does under this
# plan's ZeRO-1. The same plan under three presets: `exposed`, the pessimistic bound (nothing overlaps that could);
# `megatron`, the default calibration's framework, Megatron-LM (Core) with `--overlap-grad-reduce` and
# `--overlap-param-gather`; and `nanotron`:

# %%
FRAMEWORK_KEYS = ("exposed", "megatron", "nanotron")
framework_steps = {key: budget.step_time(MODEL, PLAN, CLUSTER, framework=key) for key in FRAMEWORK_KEYS}
print(
    f"{'framework':10} {'compute':>8} {'bubble':>7} {'TP exposed':>11} {'hidden':>7} {'PP exposed':>11} "
    f"{'DP exposed':>11} {'hidden':>7} {'all exposed':>12} {'step':>7}"
)
for key, framework_step in framework_steps.items():
    exposed, hidden = framework_step.exposed_s, framework_step.overlapped_s
    print(
        f"{key:10} {units.format_time(framework_step.compute_s):>8} {units.format_time(framework_step.bubble_s):>7} "
        f"{units.format_time(exposed['tensor']):>11} {units.format_time(hidden['tensor']):>7} "
        f"{units.format_time(exposed['pipeline']):>11} {units.format_time(exposed['data']):>11} "
        f"{units.format_time(hidden['data']):>7} {units.format_time(framework_step.exposed_communication_s):>12} "
        f"{units.format_time(framework_step.total_s):>7}"
    )
BEHAVIOURS = {  # field: what it says under this plan's ZeRO stage
    "overlap_grad_reduce": lambda preset: (
        f"gradient buckets reduced during the backward under "
        f"ZeRO-{PLAN.zero_stage}: {'yes' if preset.hides_grad_reduce(PLAN.zero_stage) else 'no'}"
    ),
    "prefetch_parameter_gathers": lambda preset: (
        f"ZeRO-{PLAN.zero_stage}'s parameter all-gather behind compute: "
        f"{'yes' if preset.prefetches_gathers(PLAN.zero_stage) else 'no'}"
    ),
    "tensor_parallel_overlap": lambda preset: (
        f"tensor-parallel collectives overlapped: {preset.tensor_parallel_overlap}"
    ),
}
for key in FRAMEWORK_KEYS[1:]:
    preset = parallelism.FRAMEWORKS[key]
    print(f"\n{key}:")
    for field, behaviour in BEHAVIOURS.items():
        cited = f"{behaviour(preset)} ({preset.cited(field)})"
        print(textwrap.fill(cited, width=116, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False))

# %% [markdown]
# The compute is the same in every row (the calibrated model's, not this lesson's half of peak); only what hides
# changes:
#
# - **`overlap_grad_reduce`** (Megatron-LM and nanotron, at every ZeRO stage they run): gradient buckets are reduced
#   while the last micro-batch's backward pass still computes earlier layers' gradients. nanotron hides 123 ms of the
#   data-parallel traffic this way; the bound hides nothing and exposes 779 ms. DeepSpeed does it only under ZeRO-3
#   (lesson 03).
# - **`prefetch_parameter_gathers`** (Megatron-LM's `--overlap-param-gather`): the all-gather of the parameters
#   updated by the ZeRO-1 optimizer step runs during the next step's first forward pass, from a forward pre-hook.
#   nanotron gathers them right after the optimizer step, exposed: its data-parallel time exposed is 656 ms against
#   Megatron-LM's 469 ms.
# - **`tensor_parallel_overlap="backward"`** (Megatron-LM): in the backward pass the all-reduce of the input gradient
#   (a reduce-scatter with sequence parallelism) runs while the weight-gradient GEMM computes. Half of the
#   tensor-parallel time hides: 1.02 s of the 2.03 s. The forward collectives stay exposed (`--tp-comm-overlap`
#   would chunk those GEMMs too; it is off by default). nanotron's `tp_linear_async_communication` overlaps only a
#   forward all-gather and is off by default.
#
# Megatron-LM's step, the default's, is 22.4 s against 23.8 s for the bound: its exposed communication is 1.53 s,
# not 2.86 s, and its bubble shrinks too (1.49 s against 1.57 s), since each bubble slot carries a micro-batch's
# exposed tensor-parallel time. nanotron's step, 23.7 s, is hardly shorter than the bound's. Overlap is not free on a
# GPU: hidden traffic slows the compute it shares the GPU with. The model can charge that
# (`Calibration.overlap_slowdown`, added to the exposed data-parallel time); the default calibration leaves it at 0,
# its fitted constants absorbing what there is. The pipeline sends stay exposed in all three rows: Megatron-LM
# overlaps them only in its interleaved schedule, and this plan is not interleaved.
#
# ### Step 5 · Measure, and adjust the partition size
#
# **Strong scaling.** Fix the model (GPT 22B, $t = 8$ on one node) and the global batch (768 sequences), and grow
# the data-parallel size from 1 to 384, i.e. from 8 to 3072 GPUs. Every doubling halves each device's compute;
# the data-parallel synchronisation per step does not shrink.

# %%
SCALING_MODEL = parallelism.MEGATRON_22B
SCALING_BATCH = 768
scaling = {}
for d in (1, 2, 4, 8, 16, 32, 64, 128, 256, 384):
    plan = parallelism.ParallelPlan(
        data_parallel=d,
        tensor_parallel=8,
        zero_stage=1,
        micro_batch=1,
        grad_accum_steps=SCALING_BATCH // d,
        recompute="selective",
        sequence_parallel=True,
    )
    scaling[plan.devices] = budget.step_time(SCALING_MODEL, plan, CLUSTER, calibration=None)
first_devices, first_step = next(iter(scaling.items()))
print(f"{SCALING_MODEL.name}, global batch {SCALING_BATCH}, t = 8")
print(
    f"{'GPUs':>5} {'step':>9} {'compute':>9} {'exposed TP':>11} {'exposed DP':>11} {'exposed share':>14} "
    f"{'efficiency':>11}"
)
for devices, result in scaling.items():
    efficiency = first_step.total_s * first_devices / (result.total_s * devices)
    print(
        f"{units.format_count(devices):>5} {units.format_time(result.total_s):>9} "
        f"{units.format_time(result.compute_s):>9} {units.format_time(result.exposed_s['tensor']):>11} "
        f"{units.format_time(result.exposed_s['data']):>11} "
        f"{units.format_percent(result.exposed_communication_s / result.total_s):>14} "
        f"{units.format_percent(efficiency):>11}"
    )
last_devices, last_step = list(scaling.items())[-1]
print(
    f"{units.format_count(last_devices // first_devices)} times the GPUs, "
    f"{units.format_count(round(first_step.total_s / last_step.total_s))} times faster"
)

# %% [markdown]
# Up to a few hundred GPUs the scaling is nearly perfect, with a near-constant 17.5 % of tensor-parallel communication
# that shrinks in step with the compute (it is per micro-batch). The data-parallel term behaves differently: the
# exposed gradient reduce-scatter and parameter all-gather level off between 258 ms and 294 ms from 128 GPUs on,
# while the compute falls from 3 min to under half a second. At 3072 GPUs, 45.8 % of the step is exposed
# communication and the efficiency is 65.7 %: 384 times the devices buy a 252-fold speed-up. This is where step 5
# says *adjust*: a larger batch, fewer devices, or a plan whose data-parallel traffic can hide (ZeRO stages and
# bucket sizes change the windows).
#
# **Serving is not training.** A trained model answering requests runs the same layers with other shapes: a prompt
# once, then one token per sequence per step, each step reading every weight and paying two tensor-parallel
# all-reduces per layer so small that only their latency counts, with no backward pass to hide them under. So a
# partition that trains well may serve poorly; [10 · Serve a model](10_serving.ipynb) prices serving with this
# lesson's budget.

# %% [markdown]
# ## Figures
#
# ### One step of the GPT-3 plan
#
# The top bar is the critical path; the bottom bar is the communication hidden under compute.

# %%
fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
gpt3_step = steps["t = 8, inside a node"]  # by its key: a name such as `step` may be rebound by a later cell
viz.plot_step_timeline(
    gpt3_step,
    ax=ax,
    title=f"{MODEL.name}, d = {PLAN.data_parallel}, t = {PLAN.tensor_parallel}, p = {PLAN.pipeline_parallel} on "
    f"{PLAN.devices} {CLUSTER.accelerator.name}: {units.format_time(gpt3_step.total_s)} per step",
)
plt.show()

# %% [markdown]
# Compute dominates, 21.4 of the 25.4 s, which is why the step's binding constraint is "compute". The two largest
# overheads are the tensor-parallel collectives (red, 2.03 s) and the bubble (grey, 1.71 s); with the 50.2 ms of
# pipeline sends and the 261 ms of exposed data-parallel traffic, the exposed communication (2.34 s) outweighs the
# bubble, so faster links would help this plan more than more micro-batches. Only the
# data-parallel reduce-scatter hides, and only in part, under the last backward pass.
#
# ### Strong scaling: the same step at 8, 256 and 3072 GPUs
#
# Three steps of the strong-scaling experiment, each on its own time axis. Watch the share of the compute (blue).

# %%
fig, axes = plt.subplots(3, 1, figsize=(8, 9), layout="constrained")
for ax, devices in zip(axes, (8, 256, 3072), strict=True):
    viz.plot_step_timeline(
        scaling[devices],
        ax=ax,
        title=f"{units.format_count(devices)} GPUs: {units.format_time(scaling[devices].total_s)}"
        f", exposed {units.format_percent(scaling[devices].exposed_communication_s / scaling[devices].total_s)}",
    )
plt.show()

# %% [markdown]
# At 8 GPUs the tensor-parallel collectives are a thin slice after three minutes of compute. At 3072 the compute
# is under half a second and the data-parallel synchronisation, which did not shrink, is a large part of the step.

# %% [markdown]
# ## Misconception
#
# > *Adding devices increases aggregate resources but can lower efficiency; aggregate link rates do not determine
# > the latency of a particular collective.*
#
# The strong-scaling table showed the first half: 384 times the GPUs, 65.7 % efficiency. For the second half, take
# one node's aggregate NVLink rate, the kind of figure a datasheet adds up, and divide step 3's tensor-parallel
# all-reduce by it:

# %%
aggregate_bw = CLUSTER.devices_per_node * CLUSTER.intra_bandwidth_bytes_per_s
naive_s = activation_bytes / aggregate_bw
actual_s = one_call["t = 8, inside a node"]  # step 3: the 8-rank all-reduce as NCCL runs it
print(f"aggregate NVLink of one node: {units.format_bandwidth(aggregate_bw)}")
print(f"{units.format_bytes(activation_bytes)} / aggregate rate = {units.format_time(naive_s)}")
print(
    f"one 8-rank all-reduce of it as NCCL runs it: {units.format_time(actual_s)}, "
    f"{units.format_count(round(actual_s / naive_s))} times longer"
)

# %% [markdown]
# The aggregate rate pretends that every byte may use every link of the node at once. In a ring all-reduce each GPU
# sends and receives $2\,\tfrac{p-1}{p}\,S$ over its own links only, in 14 dependent steps, each paying α: the
# aggregate rate of the node tells nothing about that chain. The same holds at cluster scale: Narayanan et al.
# report an effective bisection bandwidth of 12.9 TB/s for the data-parallel all-reduce of their 3072-GPU run, but
# that aggregate says nothing about one 50.3 MB tensor-parallel all-reduce inside a node, which takes the 428 µs that
# one GPU's links and the ring's 14 steps allow.
#
# On the partition explorer: GPT-3 175B on 8 nodes of 8 A100, $t = 8$ and $p = 8$. Move $t$ from 8 to 16 and watch
# the tensor-parallel rows: their link turns from NVLink to InfiniBand, and their exposed time grows although each
# tensor group now commands twice the GPUs, twice the NVLink ports and a share of two nodes' network.

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (the partition explorer); its numbers are printed in the next cell
misconception = partition_lab(nodes=8, tensor_parallel=8, pipeline_parallel=8)
misconception

# %%
cases = {
    "t = 8,  p = 8 (64 GPUs)": {"tensor_parallel": 8, "pipeline_parallel": 8},
    "t = 16, p = 8 (128 GPUs)": {"tensor_parallel": 16, "pipeline_parallel": 8},
    "t = 16, p = 4 (64 GPUs)": {"tensor_parallel": 16, "pipeline_parallel": 4},
}
for name, sizes in cases.items():
    for control, value in sizes.items():
        misconception.controls[control].value = value
    r = misconception.result
    print(
        f"{name:25} tensor-parallel on {r['tensor_link']:10} exposed {units.format_time(r['exposed_tensor_s']):>7}; "
        f"step {units.format_time(r['step_time_s']):>6}, MFU {units.format_percent(r['mfu'])}"
    )

# %% [markdown]
# Doubling $t$ past the node doubles the GPUs: the step gets shorter (17.3 s to 9.95 s), but not twice as short,
# and the MFU falls from 40.8 % to 35.5 %, because the exposed tensor-parallel time grows (1.31 s to 1.82 s) instead
# of halving with the compute. Keep the 64 GPUs and spend the extra tensor
# parallelism on fewer pipeline stages instead, and the step gets slower outright, 17.3 s to 18.8 s: the same
# resources, rearranged so that the most frequent exchange leaves the node.

# %% [markdown]
# ## Self-check
#
# Pick an answer and press *Check*.

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="Which partition commonly splits a single matrix operation across devices?",
        options=(
            "Tensor parallelism",
            "Pipeline parallelism: each stage runs its own share of the layers",
            "ZeRO-3: each device stores a shard of every weight matrix",
        ),
        answer=0,
        explanation="Tensor parallelism partitions operator dimensions and requires communication to assemble or "
        "combine the resulting values.",
    )
)

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="ZeRO-3 and tensor parallelism both store only a slice of each weight matrix on a device. Which of "
        "them splits the matrix multiply itself, and what does that cost inside every layer?",
        options=(
            "ZeRO-3: each device multiplies by its own slice, then the gradients are reduce-scattered",
            "Tensor parallelism: each device multiplies by its slice, and a collective combines the partial results "
            "before the next operator can run",
            "Both: a device that stores a slice computes with that slice, so both need a collective per layer",
        ),
        answer=1,
        explanation="ZeRO-3 all-gathers the whole weight before each layer and runs the whole multiply on its own "
        "examples, so the gathers can be prefetched. Tensor parallelism computes with the slice: its partial sums must "
        "be combined (the g and f operators of lesson 03) on the critical path of every layer.",
    )
)

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="A collective takes 2.02 ms. The local compute next to it takes 1 ms, and its consumer is the very "
        "next operator. How much step time does the collective add?",
        options=("0 ms: communication overlaps compute", "1.02 ms", "2.02 ms"),
        answer=2,
        explanation="The consumer waits for the result, so no compute can hide it: the window is 0 and all 2.02 ms "
        "are exposed. Only with a valid overlap schedule would 1.02 ms remain.",
    )
)

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="Why does tensor parallelism usually stay inside one NVLink node while data parallelism spans the "
        "cluster?",
        options=(
            "Tensor-parallel collectives are frequent and on the critical path; data-parallel gradient "
            "reduction is once per step and can overlap the backward pass",
            "Data parallelism moves fewer bytes per step than tensor parallelism in every plan",
            "NCCL cannot run tensor-parallel collectives over InfiniBand",
        ),
        answer=0,
        explanation="Placement follows frequency and dependency: thousands of blocking calls per step need the "
        "fastest links; one overlappable reduction per step can live on the slower network.",
    )
)

# %% [markdown]
# ## History
#
# - **2019–2020: ZeRO's communication accounting.** Rajbhandari et al. (arXiv 1910.02054, SC'20) showed that
#   sharding optimizer state and gradients costs no more traffic than plain data parallelism ($2\Psi$), and that
#   sharding the parameters too costs 1.5× ($3\Psi$): the first widely used method that priced memory savings in
#   bytes sent.
# - **2021: placement by frequency.** Narayanan et al. (arXiv 2104.04473, SC'21) put tensor parallelism inside
#   NVLink servers and pipeline parallelism across them, overlapped data-parallel all-reduce with the backward pass,
#   and reached 52 % of peak (hardware FLOPs, HFU) on 3072 GPUs, with the budget of each axis worked out explicitly.
# - **2023: topology as a design variable.** The TPU v4 paper (Jouppi et al., arXiv 2304.01433, ISCA 2023)
#   describes a 4096-chip machine whose 3D-torus interconnect is rewired by optical circuit switches, so a job can
#   get the topology (including a twisted torus) that suits its partition; the optics are under 5 % of system cost
#   and 3 % of its power. The partition and the topology are chosen together.
#
# These are examples, not interchangeable performance constants: the TPU's torus and the ZeRO stages describe
# particular systems and methods, and no collective algorithm is assumed to be universal.

# %% [markdown]
# ## Summary
#
# - Start from the partition, not the chip count: each split implies specific transfers (lesson 03), and each
#   transfer has a cost $T_\text{comm} \approx n\alpha + Q/B_\text{eff}$ on the link it uses.
# - Only the exposed part costs step time: $\max(0, T_\text{comm} - T_\text{window})$. Tensor and pipeline
#   transfers have no window; data-parallel gradients can hide behind the backward pass.
# - Put the frequent, blocking exchanges on the fast links: tensor parallelism inside the NVLink domain.
# - Strong scaling ends when the per-device compute no longer amortises the communication that does not shrink.
# - Serving runs the same layers with other shapes, one token per sequence per step with nothing to hide its
#   all-reduces under: a plan that trains well may serve poorly (lesson 10).
# - The step is compute, exposed communication and the bubble; the largest of the three is the plan's binding
#   constraint. The estimate is coarse and its compute efficiency is an assumption, so measure.

# %% [markdown]
# ## Exercises
#
# 1. **A synthetic collective.** With 8 latency phases of 5 µs and 100 MB at 50 GB/s, what is $T_\text{comm}$?
#    How much local compute does a valid overlap schedule need to hide it entirely? (`collectives.comm_time`)
# 2. **Exposed gradients.** In the GPT-3 plan above the data-parallel reduce-scatter took 205 ms against a
#    149 ms window. With 8 micro-batches (global batch 128) instead of 96, would the exposed part change? Use
#    `budget.step_time` and explain.
# 3. **Crossing nodes.** At $t = 16$ the tensor-parallel all-reduce of 50.3 MB spans two nodes and takes 593 µs,
#    against 428 µs at $t = 8$ inside one node. Which ring runs across the two nodes (lesson 02), which link bounds
#    its bandwidth, and how many of its steps cross the network? (Lesson 07's exercise 5 works out NCCL's pick by
#    hand, protocol and all.)
# 4. **Strong scaling.** Repeat the strong-scaling experiment with a global batch of 3072. At 3072 GPUs, what
#    share of the step is exposed communication, and what is the efficiency?
#
# <details>
# <summary>Answers</summary>
#
# 1. $8 \times 5\,\mu s + 100\,\text{MB} / 50\,\text{GB/s} = 40\,\mu s + 2\,\text{ms} = 2.04$ ms; the window must be
#    at least 2.04 ms of compute that neither produces nor consumes the transferred data.
# 2. No. The reduce-scatter happens once per step, after the *last* micro-batch, and its window is one
#    micro-batch's backward pass whatever $m$ is, so 55.7 ms stay exposed. What changes is the rest of the step: with
#    fewer micro-batches the compute is shorter and the bubble $(p-1)/m$ larger, so the exposed share grows.
# 3. One flat ring through all 16 GPUs, with a channel on each of the node's 8 rails (lesson 02's multi-rail ring).
#    Its bus bandwidth is the smaller of NVLink as NCCL counts it, 240 GB/s, and the node's rails together,
#    8 × 25 GB/s = 200 GB/s: the network bounds it. Of its 30 steps NCCL's model charges $2(N_\text{nodes}-1) = 2$
#    at the network's higher latency and 28 at NVLink's. Inside one node the ring has 14 steps, all on NVLink at the
#    full 240 GB/s.
# 4. With 3072 sequences, $m = 8$ at 3072 GPUs: the compute is 4 times longer while the data-parallel term stays
#    at 294 ms, so the exposed share falls from 45.8 % to about 27 % and the efficiency rises from 65.7 % to about
#    88 %. A larger batch is one way to buy back efficiency, if the optimisation tolerates it.
#
# </details>

# %% [markdown]
# ## Sources
#
# - S. Rajbhandari, J. Rasley, O. Ruwase, Y. He, *ZeRO: Memory Optimizations Toward Training Trillion Parameter
#   Models*, SC'20. arXiv:1910.02054. https://arxiv.org/abs/1910.02054 — communication volume (§7).
# - N. P. Jouppi, G. Kurian, S. Li, P. Ma, R. Nagarajan, L. Nai, N. Patil, S. Subramanian, A. Swing, B. Towles,
#   C. Young, X. Zhou, Z. Zhou, D. Patterson, *TPU v4: An Optically Reconfigurable Supercomputer for Machine Learning
#   with Hardware Support for Embeddings*, ISCA 2023. arXiv:2304.01433v3. https://arxiv.org/abs/2304.01433v3
# - D. Narayanan et al., *Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM*, SC'21.
#   arXiv:2104.04473. https://arxiv.org/abs/2104.04473 — Selene's configuration (§5), Eq. (1) and (3), Table 1
#   (1T model: t = 8, p = 64, 3072 GPUs, 163 teraFLOP/s per GPU, 52 % of peak in hardware FLOPs), takeaway #1, the 12.9 TB/s
#   effective bisection bandwidth (§5.9).
# - NVIDIA, nccl-tests, `doc/PERFORMANCE.md` (algorithm and bus bandwidth). https://github.com/NVIDIA/nccl-tests
# - R. Thakur, R. Rabenseifner, W. Gropp, *Optimization of Collective Communication Operations in MPICH*,
#   IJHPCA 19(1):49–66, 2005 — the α–β costs of ring, recursive doubling and Rabenseifner algorithms.
# - NCCL, `src/graph/tuning.cc` and `src/graph/topo.h` (v2.30.7-1): the cost model of `course_lib.nccl` (latencies
#   per call and per hop, each protocol's share of the bandwidth, the algorithm NCCL runs) and NVLink as NCCL counts
#   it. https://github.com/NVIDIA/nccl

# %% [markdown]
# ## What's next
#
# You can now go from a model, a batch and a cluster to the memory of each device, the transfers of each split, the
# exposed part of each transfer and the step time of one plan, and name what binds it. Next,
# [05 · Search for a plan](05_plan_search.ipynb) runs this budget over every plan a cluster allows and ranks them.
# [10 · Serve a model](10_serving.ipynb), a depth lesson, applies the budget to serving a trained model.
