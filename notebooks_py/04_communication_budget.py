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
# Lesson 03 counted what a partition costs in bytes. Bytes are not yet time: a 50.3 MB all-reduce inside an NVLink
# node costs a few hundred microseconds, across two nodes about 1.4 times as much, and either costs nothing on the
# step if independent compute hides it, or all of it if the next operator is waiting. This lesson turns a partition
# and a topology into a step time, and separates the exposed communication from the hidden: the budget of one plan.

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
# **Time to learn:** about 1.6 hours by the course's rule
# ([how it is counted](00_course_map.ipynb#How-long-each-part-takes)).

# %%
import textwrap

import matplotlib.pyplot as plt

from course_lib import budget, collectives, hardware, parallelism, units, viz
from course_lib.widgets import quiz

# %% [markdown]
# ## Mechanism
#
# A communication budget chooses the tensor, pipeline, data and state partitions of a model under the constraints
# of the topology (which devices are connected by what) and of the dependencies (which result is needed before what
# can start). Each partition implies its own exchanges (lesson 03), and more devices bring more memory and
# arithmetic but also more collectives and synchronisation. A good plan puts the frequent exchanges on suitable
# links and *measures* how much communication is exposed on the critical path, instead of assuming that all network
# time overlaps with compute.
#
# The budget takes the **model and the device topology** and produces a **distributed step** (scheduled compute,
# collectives and synchronisation), in five steps, which are also the spine of the worked example:
#
# 1. **Choose** which dimensions of work and state need partitioning to meet the memory and time constraints.
# 2. **Derive** the transfers and collectives each partition implies, rather than starting from a chip count.
# 3. **Map** the frequent communication onto links with sufficient latency and bandwidth.
# 4. **Schedule** overlap only where producer and consumer dependencies allow it.
# 5. **Measure** the completed step, and adjust the partition size when the smaller local compute no longer
#    amortises the communication.
#
# **Trade-off.** Sharding can make a model fit but increase traffic; larger parallel groups can cut the local work
# so much that communication dominates. Training and inference also differ in collective frequency and batch shape,
# so a partition that trains efficiently may serve poorly.

# %% [markdown]
# ## The science
#
# ### Communication approximation
#
# $$T_\text{comm} \approx n\,\alpha + \frac{Q}{B_\text{eff}}$$
#
# $n$ is the number of latency-bearing phases, $\alpha$ the seconds per phase, $Q$ the bytes transferred on the
# critical path and $B_\text{eff}$ the useful bytes per second for the chosen algorithm and topology. A ring
# all-reduce over $p$ ranks of a buffer of $S$ bytes has $n = 2(p-1)$ and $Q = 2\,\tfrac{p-1}{p}\,S$ (lesson 02;
# here $p$ counts a collective's ranks, from the step time on it counts pipeline stages). *Assumptions:* a coarse
# model; contention, overlap, the reduction's compute and protocol behaviour can change both terms, and NCCL picks
# ring, tree or others by size and topology.
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
# another. Without `calibration`, `budget.step_time` uses the course's default calibration, Megatron-LM's framework
# preset with its overlaps and GEMM efficiency fitted on published runs on DGX H100s (lesson 08 explains it).
#
# The step thus has three terms: compute, exposed communication and the bubble. The **binding constraint** of a
# plan is the largest (`budget.binding_constraint`): a compute-bound plan gains most from faster kernels, one bound
# by exposed communication from faster links or more overlap, a bubble-bound one from more micro-batches or
# interleaving. A plan search (lesson 05) adds two reasons a plan cannot run at all: "memory" and "batch
# divisibility".
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
# - **Collectives** run as NCCL runs them, priced by NCCL's own cost model (`course_lib.nccl`, Sources): a flat
#   ring through all the group's ranks, NCCL's tree or NVLink SHARP, with the protocol its tuner expects to be
#   fastest. A ring that spans nodes runs a channel on every rail, so its bandwidth is the smaller of a GPU's NVLink
#   and the NICs of the group's members on a node.
# - **Links** are the presets of `course_lib.hardware`: the network at its nominal one-way bandwidth per GPU, NVLink
#   at the rate NCCL counts, and α = 1 µs (NVLink) or 5 µs (network) for a pipeline send.
# - **Ignored:** contention between collectives, congestion, kernel launch overheads, the slowdown of compute that
#   shares the GPU with communication, optimizer-step time, data loading, and any variation of $\eta$ with the
#   shapes. $\eta = 0.5$ is a guess: use the model to compare plans and find their binding constraint, not to
#   predict a step to the second.

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
# Whether those 2.02 ms cost anything depends on the compute beside them and on the dependencies. "No overlap": the
# consumer waits (a window of 0); "valid overlap": the dependencies let the whole local compute be the window.

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
# With 4 ms of local compute a valid overlap hides the transfer completely. Cut the compute to 1 ms (by splitting
# the work over more devices, say) and even a perfect overlap leaves 1.02 ms exposed; without one, the step triples
# from 1 ms to 3.02 ms.
#
# ### Step 1 · Choose what must be partitioned
#
# GPT-3 175B on Selene's 80 GB A100s (Narayanan et al. 2021's cluster: 8 GPUs per node on NVLink, 8 × 200 Gb/s
# InfiniBand per node). Lesson 03 showed that its 2.8 TB of model states need $t \cdot p = 64$ with selective
# recomputation and sequence parallelism to fit; $d = 16$ then uses 1024 GPUs, with Narayanan et al.'s global batch
# of 1536 sequences. `PLAN` is that plan.

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
# The plan fits with room to spare. Note the factor of 12 between the links: each GPU has 300 GB/s to its
# node-mates but only 25 GB/s (its share of the node's 8 × 200 Gb/s) to the rest of the cluster. (NCCL counts an
# A100's NVLink as 12 links × 20 GB/s = 240 GB/s, the rate the collectives below run at.)
#
# ### Step 2 · Derive the transfers the partition implies
#
# `budget.transfer_table` lists every tensor that crosses a device boundary in one step (from
# `parallelism.step_transfers`), the levels of the cluster its group spans, and its time:
# `budget.transfer_time_per_call` prices one call as NCCL would run it, given where the group's ranks sit (tensor
# ranks adjacent, data ranks $t$ apart, pipeline ranks $t \cdot d$ apart). The last columns apply step 4's
# dependency rule: the time per step that nothing hides.

# %%
print(budget.format_transfer_table(budget.transfer_table(MODEL, PLAN, CLUSTER)))

# %% [markdown]
# Three very different profiles come out of one plan:
#
# - **tensor parallel:** 9216 small calls per step (two per layer, for each of four kinds of tensor, × 12 layers
#   per stage × 96 micro-batches), each 221 µs on NVLink, 508 ms per kind, every one of them blocking;
# - **pipeline parallel:** 192 sends of 6.29 MB (the $bsh/t$ slice) over InfiniBand, 25.1 ms each way, blocking;
# - **data parallel:** one reduce-scatter of the 5.46 GB gradient shard and one all-gather of the updated
#   parameters, 205 ms each over InfiniBand; only 55.7 ms of the reduce-scatter stays exposed, the rest hides
#   behind the last backward pass, while the all-gather after the optimizer step hides behind nothing.
#
# Recomputation changes the tensor-parallel count. Selective recomputation redoes only the attention scores, inside
# each device, so it adds no collective. *Full* recomputation keeps only each layer's input (lesson 03), so the
# backward pass first reruns the layer's forward: full recomputation repeats the forward tensor-parallel
# collectives, once more per layer and micro-batch (`parallelism.step_transfers` counts them so).
#
# The partition explorer draws the same plan: its 96 layers in 8 pipeline stages of 12, each stage cut into
# $t = 8$ slices inside one node, 16 data-parallel replicas behind it, and a numbered marker where each of these
# tensors crosses a device boundary, listed below the drawing as in the table; beside it, the memory of one GPU
# and where the step's time goes. Move any control: the transfers, links and bars follow.

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (the partition explorer); its rows are the table's above
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

# %% [markdown]
# ### Step 3 · Map the frequent exchanges to fast links
#
# Tensor parallelism communicates inside every layer, so it belongs on the fastest links. Compare the same 1024 GPUs
# and global batch with $t = 8$ (one node per tensor group) and $t = 16$ (each group spans two nodes): $d$ halves to
# 8, so each pipeline runs twice the micro-batches, $m = 192$, to keep 1536 sequences.

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
# Crossing the node boundary makes each all-reduce 1.39 times slower: across two nodes NCCL runs one flat ring
# through all 16 GPUs, with a channel on each of the node's 8 InfiniBand rails, so the ring's bus bandwidth is the
# node's 8 × 25 GB/s, a little below NVLink, and the network's higher latency per hop makes its tuner switch
# protocol (lesson 07's exercise 1 works it out). With twice the micro-batches each GPU also makes twice the calls:
# exposed tensor-parallel time grows 2.8-fold and, all of it on the critical path, the step 1.11-fold. The larger
# group halves the memory per GPU, the only reason to accept it. This is Narayanan et al.'s first takeaway: tensor
# parallelism up to the size of a server, pipeline parallelism across servers. (On the explorer above, set $t = 16$,
# $d = 8$ and $m = 192$: a red line marks the node boundary the tensor groups now cross.)
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
# backward pass (149 ms). Everything tensor- and pipeline-parallel is exposed. Exposed communication and the bubble
# together add 19 % to the compute.
#
# #### What the framework hides
#
# The dependency rule is a bound, not a law: a framework can split an operator so that part of its communication
# runs beside compute that does not need it. The calibrated model (lesson 08) runs a plan as a framework preset
# says (`framework=`, a key of `parallelism.FRAMEWORKS`), each overlap cited to the framework's source; some depend
# on the ZeRO stage (lesson 03's second framework table). The same plan under three presets: `exposed`, the
# pessimistic bound; `megatron`, the default calibration's framework; and `nanotron`:

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
# The compute is the same in every row (the calibrated model's); only what hides changes:
#
# - **`overlap_grad_reduce`** (Megatron-LM and nanotron): gradient buckets are reduced while the last micro-batch's
#   backward pass still computes earlier layers' gradients; nanotron hides 123 ms this way, the bound nothing.
# - **`prefetch_parameter_gathers`** (Megatron-LM's `--overlap-param-gather`): the all-gather of the parameters
#   updated by the ZeRO-1 optimizer step runs during the next step's first forward pass. nanotron gathers them right
#   after the optimizer step, exposed: 656 ms of data-parallel time exposed against Megatron-LM's 469 ms.
# - **`tensor_parallel_overlap="backward"`** (Megatron-LM): the backward's input-gradient collective runs while the
#   weight-gradient GEMM computes, hiding 1.02 s of the 2.03 s; the forward collectives stay exposed.
#
# Megatron-LM's step is 22.4 s against 23.8 s for the bound: its exposed communication is 1.53 s, not 2.86 s, and
# its bubble shrinks too, since each bubble slot carries a micro-batch's exposed tensor-parallel time. Overlap is not
# free on a GPU: hidden traffic slows the compute it shares the GPU with (`Calibration.overlap_slowdown`, 0 in the
# default calibration, whose fitted constants absorb it). The pipeline sends stay exposed in all three rows.
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
# Up to a few hundred GPUs the scaling is nearly perfect: the tensor-parallel communication (17.5 % at 8 GPUs) is
# per micro-batch and shrinks with the compute. The exposed data-parallel term does not: it levels off between
# 258 ms and 294 ms from 128 GPUs on, while the compute falls from 3 min to under half a second. At 3072 GPUs, 45.8 %
# of the step is exposed communication and the efficiency is 65.7 %: 384 times the devices buy a 252-fold speed-up.
# This is where step 5 says *adjust*: a larger batch, fewer devices, or a plan whose data-parallel traffic can hide.
#
# **Serving is not training.** Serving runs the same layers one token per sequence per step, each step reading every
# weight and paying two tensor-parallel all-reduces per layer so small that only their latency counts, with no
# backward pass to hide them under: [10 · Serve a model](10_serving.ipynb) prices it with this lesson's budget.

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
# Compute dominates, 21.4 of the 25.4 s: the binding constraint is "compute". Of the overheads, the exposed
# communication (2.34 s, mostly the tensor-parallel collectives in red) outweighs the bubble (grey, 1.71 s), so
# faster links would help this plan more than more micro-batches.
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
# At 8 GPUs the only communication is the tensor-parallel collectives, 38 s after three minutes of compute; at 3072
# the data-parallel synchronisation, which did not shrink, is a large part of the step.

# %% [markdown]
# ## Misconception
#
# > *Adding devices increases aggregate resources but can lower efficiency; aggregate link rates do not determine
# > the latency of a particular collective.*
#
# The strong-scaling table showed the first half. For the second, divide step 3's tensor-parallel all-reduce by one
# node's aggregate NVLink rate, the kind of figure a datasheet adds up:

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
# sends and receives $2\,\tfrac{p-1}{p}\,S$ over its own links only, in 14 dependent steps, each paying α. The same
# holds at cluster scale: Narayanan et al. report an effective bisection bandwidth of 12.9 TB/s for their 3072-GPU
# run, which says nothing about one 50.3 MB all-reduce inside a node. Lab 5's partition explorer shows the
# consequence: moving $t$ past the node makes the tensor-parallel rows slower although each group commands more
# GPUs, more NVLink ports and a share of two nodes' network.

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
# - **2019–2020: ZeRO's communication accounting.** Rajbhandari et al. showed that sharding optimizer state and
#   gradients costs no more traffic than plain data parallelism ($2\Psi$), and sharding the parameters too 1.5×
#   ($3\Psi$): memory savings priced in bytes sent.
# - **2021: placement by frequency.** Narayanan et al. put tensor parallelism inside NVLink servers and pipeline
#   parallelism across them, overlapped the data-parallel all-reduce with the backward pass, and reached 52 % of
#   peak (hardware FLOPs, HFU) on 3072 GPUs.
# - **2023: topology as a design variable.** The TPU v4 (Jouppi et al., ISCA 2023), a 4096-chip machine whose 3D
#   torus is rewired by optical circuit switches (under 5 % of system cost, 3 % of its power), gives each job the
#   topology that suits its partition: partition and topology chosen together.

# %% [markdown]
# ## Summary
#
# - Start from the partition: each split implies specific transfers, each costing
#   $T_\text{comm} \approx n\alpha + Q/B_\text{eff}$ on its link.
# - Only the exposed part costs step time, $\max(0, T_\text{comm} - T_\text{window})$: tensor and pipeline
#   transfers have no window; data-parallel gradients can hide behind the backward pass.
# - Put the frequent, blocking exchanges on the fast links: tensor parallelism inside the NVLink domain.
# - Strong scaling ends when the per-device compute no longer amortises the communication that does not shrink.
# - The step is compute, exposed communication and the bubble; the largest is the plan's binding constraint.

# %% [markdown]
# ## Exercises
#
# 1. **Exposed gradients.** In the GPT-3 plan above the data-parallel reduce-scatter took 205 ms against a
#    149 ms window. With 8 micro-batches (global batch 128) instead of 96, would the exposed part change? Use
#    `budget.step_time` and explain.
# 2. **Crossing nodes.** At $t = 16$ the tensor-parallel all-reduce of 50.3 MB spans two nodes and takes 593 µs,
#    against 428 µs at $t = 8$ inside one node. Which ring runs across the two nodes (lesson 02), which link bounds
#    its bandwidth, and how many of its steps cross the network? (Lesson 07's exercise 1 works out NCCL's pick by
#    hand, protocol and all.)
# 3. **Strong scaling.** Repeat the strong-scaling experiment with a global batch of 3072. At 3072 GPUs, what
#    share of the step is exposed communication, and what is the efficiency?
#
# <details>
# <summary>Answers</summary>
#
# 1. No. The reduce-scatter happens once per step, after the *last* micro-batch, and its window is one
#    micro-batch's backward pass whatever $m$ is, so 55.7 ms stay exposed. What changes is the rest of the step: with
#    fewer micro-batches the compute is shorter and the bubble $(p-1)/m$ larger, so the exposed share grows.
# 2. One flat ring through all 16 GPUs, with a channel on each of the node's 8 rails (lesson 02's multi-rail ring).
#    Its bus bandwidth is the smaller of NVLink as NCCL counts it, 240 GB/s, and the node's rails together,
#    8 × 25 GB/s = 200 GB/s: the network bounds it. Of its 30 steps NCCL's model charges $2(N_\text{nodes}-1) = 2$
#    at the network's higher latency and 28 at NVLink's. Inside one node the ring has 14 steps, all on NVLink at the
#    full 240 GB/s.
# 3. With 3072 sequences, $m = 8$ at 3072 GPUs: the compute is 4 times longer while the data-parallel term stays
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
