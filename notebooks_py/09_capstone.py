# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 09 · Plan a real run: a 70B model on 64 H100s
#
# *"I have a 70B model and 64 H100s in 8 nodes: how should I split it, and how long will a step take?"*
#
# This last lesson answers that question twice. First by hand, for one candidate plan: the memory each GPU holds,
# term by term; every tensor the plan sends, its size, how often and over which link; what is exposed; and the step
# time over a range of compute efficiencies. Then with the plan search of lesson 05: which plan it picks and why,
# how far that choice moves when the assumptions move, what to measure before committing 64 GPUs for weeks, and how
# the global batch and the sequence length enter. The answer is a plan with its step time, its MFU, its memory, and
# the range those numbers could take.

# %% [markdown]
# ## What you'll learn
#
# **Learning objective:** *plan the partition of a real model on a real cluster, by hand and with the plan search,
# and say how much to trust the answer.*
#
# Along the way you will be able to:
#
# - check a model preset against its published size, and size a cluster's links per GPU;
# - work out a candidate plan's memory per device term by term, and its transfers with their payloads, counts and
#   links;
# - turn compute, transfers and the dependency rule into a step time, over a range of compute efficiencies;
# - explain why the search's best plan beats the candidate, and test how fragile that choice is (compute
#   efficiency, fixed costs, overlap, network, memory headroom);
# - choose a plan with the best worst case, and the robust plan under the model's measured error (a memory margin
#   and a step-time band), list what to measure before committing, and choose the global batch and sequence length.

# %% [markdown]
# ## Prerequisites
#
# - [04 · Budget the bytes](04_communication_budget.ipynb): the transfers of a partition, exposed vs hidden time,
#   the step time.
# - [05 · Search for a plan](05_plan_search.ipynb): the plan search, its rejections and binding constraints.
# - [07 · Measure, don't assume](07_measure.ipynb): fitted α and B, published nccl-tests logs, measured exposed
#   communication.
# - [08 · Check the model against measurements](08_model_meets_measurements.ipynb): the calibration used here, what
#   it was fitted on, and where the model still misses.
# - Behind them: [03 · Split the work](03_parallelism.ipynb) (memory per device, sequence parallelism, ZeRO, the
#   pipeline bubble) and [01 · Count the work](01_mac.ipynb) (FLOPs of a layer, 6PD, MFU).
#
# **Time to learn:** about 2.5 hours (2 to read and run, half an hour for the exercises).

# %%
import dataclasses

import matplotlib.pyplot as plt

from course_lib import budget, compute, hardware, measure, parallelism, units, validation, viz
from course_lib.widgets import quiz

# %% [markdown]
# ## Mechanism
#
# **Role.** Planning a run turns a model, a cluster and a batch into a partition (data, tensor, pipeline and ZeRO
# sizes, micro-batch, schedule, recomputation) with a predicted memory per device and step time, and a list of the
# assumptions that prediction rests on.
#
# The procedure is the one of lesson 04, now applied end to end, with one step added at the end:
#
# 1. **Pin down the inputs**: the model's real shape, the cluster's links per GPU, the global batch and the
#    sequence length.
# 2. **Size one candidate by hand**: memory per device term by term; it must fit with headroom.
# 3. **List its transfers**: which tensor, which collective, how many bytes, how many calls per step, on which link.
# 4. **Price the step**: compute at an efficiency, the transfers as NCCL runs them (lesson 04), the exposed part by
#    the dependency rule, the bubble.
# 5. **Search** every partition under the same model, and explain why the winner wins.
# 6. **Stress the answer**: rerun the ranking under other plausible assumptions; if the winner's lead depends on
#    one of them, prefer the plan whose worst case is best, and measure that assumption before committing.
# 7. **Rank with the model's own error**: count a plan as fitting only with the memory margin the measured runs
#    asked for, and give every step time the band the held-out runs measured; commit to the plan whose band's high
#    end is lowest (the robust plan), not the fastest point estimate.
#
# **Trade-off.** The fastest plan under one set of assumptions often sits at an edge (memory nearly full, one link
# saturated); a plan a few percent slower may stay close to the best under every assumption.
#
# **Why it matters for AI.** A 70B pre-training or continued-training run occupies its cluster for weeks: a plan
# that is 10 % slower than it could be, or that runs out of memory on the first long batch, costs days.

# %% [markdown]
# ## The science
#
# ### The equations this lesson uses
#
# Memory per device, for the heaviest pipeline stage (lesson 03), with $\Psi_\text{stage}$ the parameters of the
# stage's $\lceil l/p \rceil$ layers (plus the embedding on the first stage):
#
# $$M_\text{device} = \underbrace{\frac{\Psi_\text{stage}}{t}\Big(\frac{b_\text{param}}{d_{\ge 3}} + \frac{b_\text{grad}}{d_{\ge 2}} + \frac{b_\text{opt}}{d_{\ge 1}}\Big)}_\text{model states, ZeRO stage} + \underbrace{\Big\lceil\frac{l}{p}\Big\rceil \cdot b\,s \cdot A_\text{token} \cdot \min(p, m)}_\text{activations, 1F1B} + M_\text{logits} + M_\text{framework}$$
#
# where $b_\text{param}$, $b_\text{grad}$ and $b_\text{opt}$ are the bytes per parameter of the weights, the gradients
# and the optimizer state as the framework keeps them ([glossary](glossary.ipynb#bytes-per-param)), $d_{\ge z}$ is $d$
# when the ZeRO stage is at least $z$ and 1 otherwise, $A_\text{token}$ the bytes one layer stores per token (lesson
# 03's table, for this architecture), $M_\text{logits}$ the last stage's logits and $M_\text{framework}$ the memory the
# framework holds beyond the model ([glossary](glossary.ipynb#memory-terms)).
#
# Step time (lesson 04), with a micro-batch slot $T_\text{slot} = t_f + t_b + T_\text{TP} + T_\text{PP}$:
#
# $$T_\text{step} = m\,T_\text{slot} + \frac{p-1}{v}\,T_\text{slot} + T_\text{DP, exposed},\qquad \text{MFU} = \frac{\text{model FLOPs of the step}}{N_\text{GPU}\cdot \text{peak} \cdot T_\text{step}}$$
#
# The **worst-case slowdown** of a plan $x$ over a set of scenarios $\sigma$ (each a set of assumptions, each with
# its own fastest plan) is
#
# $$R(x) = \max_\sigma \frac{T_\sigma(x)}{\min_y T_\sigma(y)},$$
#
# and the plan with the smallest $R$ has the best worst case (decision theory's *minimax regret*, as a ratio).
#
# The **robust plan** ranks with the model's measured error instead of chosen scenarios: with $\mu$ the memory margin
# and $r_{10}, r_{90}$ the 10th and 90th percentiles of measured / predicted step time on runs the calibration never
# saw (lesson 08), for plans whose replica spans $t \cdot p$ GPUs,
#
# $$x^\ast = \arg\min_{x:\ M(x)(1 + \mu) \le M_\text{HBM}} r_{90}(t\,p)\,T(x),\qquad T(x) \in \big[r_{10}\,T(x),\ r_{90}\,T(x)\big].$$
#
# ### Variables
#
# | Symbol | Code name | Meaning | Unit |
# |---|---|---|---|
# | $d, t, p, v, m, b$ | `data_parallel`, `tensor_parallel`, `pipeline_parallel`, `virtual_stages`, `grad_accum_steps`, `micro_batch` | the plan | – |
# | $B_\text{global}$, $s$ | `global_batch`, `seq_len` | sequences per step, tokens per sequence | –, tokens |
# | $\eta$ | `compute_efficiency` | achieved share of peak during compute (the ideal model) | – |
# | $A_\text{token}$ | `activation_bytes_per_token_per_layer` | bytes one layer stores per token | bytes |
# | $T_\sigma(x)$ | `step_time_s` | step time of plan $x$ in scenario $\sigma$ | s |
# | $R(x)$ | `worst_slowdown` | worst ratio to the scenario's best | – |
# | $\mu$ | `memory_margin` | memory a plan must leave spare, as a share of its predicted memory | – |
# | $r_{10}, r_{90}$ | `step_time_band` | 10th and 90th percentiles of measured / predicted step time | – |
#
# ### Two models, said each time
#
# Every time and memory figure below comes from one of two models of `course_lib`, and the code says which by
# passing `calibration=` explicitly:
#
# - **the ideal model** (`calibration=None`): lesson 04's physics, compute at an assumed efficiency $\eta$,
#   nominal links, no fixed costs, GPT-style FLOP and activation counts;
# - **the calibrated model** (`calibration=parallelism.default_calibration(CLUSTER)`): the same physics,
#   architecture-aware (grouped-query attention, gated MLP, separate output layer), run as nanotron runs a plan (fp32
#   gradient buffers, bucketed data-parallel traffic), with the logits, an efficiency, a fixed cost per layer and
#   micro-batch and the framework's own memory fitted on the Ultra-Scale Playbook's runs of nanotron on H100 nodes
#   (lesson 08 judges that fit on runs it never saw), and this cluster's own links: the Playbook cluster's were
#   measured, on another network, and are not carried over.
#
# The calibrated model is the course's best estimate; the ideal one is what you can redo with pencil and paper.
# Neither is a measurement.

# %% [markdown]
# ## Worked example
#
# ### Step 1 · The model, checked against its published size
#
# `parallelism.LLAMA3_70B` is Llama 3.1 70B as its published configuration describes it: 80 layers of hidden size 8192,
# 64 query heads sharing 8 key/value heads (grouped-query attention), a gated ([SwiGLU](glossary.ipynb#swiglu)) MLP of
# 28,672, a vocabulary of 128,256 with separate input and output embeddings, trained on sequences of 8,192 tokens.

# %%
MODEL = parallelism.LLAMA3_70B
h, f, V, L = MODEL.hidden, MODEL.ffn_hidden, MODEL.vocab, MODEL.layers
kv_width = MODEL.kv_heads * MODEL.head_dim  # the width of K and of V: 8 heads × 128
attention_weights = 2 * h * h + 2 * h * kv_width  # W_Q, W_O: h × h; W_K, W_V: h × 1024
mlp_weights = 3 * h * f  # gate, up and down projections
norms = 2 * h  # two RMSNorm weights per layer
per_layer = attention_weights + mlp_weights + norms
embeddings = 2 * V * h + h  # input embedding, output layer, final norm
by_hand = L * per_layer + embeddings
print(f"per layer: attention {units.format_count(attention_weights)} + MLP {units.format_count(mlp_weights)} + norms")
print(f"           = {per_layer:,} parameters (the preset: {MODEL.params_per_layer:,})")
print(
    f"80 layers + embeddings {units.format_count(embeddings)} = {by_hand:,} parameters (the preset: {MODEL.params:,})"
)
print("published: 70.6 B (Meta's release of Llama 3.1 70B)")
print(
    f"shares of a layer: MLP {units.format_percent(mlp_weights / per_layer)}, "
    f"attention {units.format_percent(attention_weights / per_layer)}; K and V are {h // kv_width} times narrower than Q"
)

# %% [markdown]
# The count matches the preset to the parameter and the published 70.6 B. Note the shares: the MLP holds 82.4 % of a
# layer's weights, and grouped-query attention makes K and V eight times narrower than Q. The two embeddings
# (2.1 billion parameters) are a small share of the model but sit whole on one pipeline stage each.
#
# ### Step 2 · The cluster
#
# Eight DGX H100 nodes: 8 GPUs per node on NVLink 4 (900 GB/s two-way per GPU), and eight 400 Gb/s InfiniBand NDR
# adapters per node. The α–β formulas need one-way bandwidth per GPU (lesson 02).

# %%
CLUSTER = hardware.Cluster(
    "8 × DGX H100 (64 H100, NVLink 4 in a node, InfiniBand NDR between nodes)",
    hardware.H100,
    devices_per_node=8,
    nodes=8,
    intra_node_link=hardware.NVLINK4,
    inter_node_link=hardware.INFINIBAND_NDR_8X,
    source="NVIDIA DGX H100",
)
GPU = CLUSTER.accelerator
print(
    f"{CLUSTER.devices} × {GPU.name}: {units.format_bytes(GPU.hbm_capacity_bytes)} HBM, "
    f"{units.format_flops_rate(GPU.peak('bf16'))} dense bf16 peak"
)
print(
    f"NVLink, one-way per GPU:     {units.format_bandwidth(CLUSTER.intra_bandwidth_bytes_per_s)}, "
    f"α = {units.format_time(CLUSTER.intra_node_link.latency_s)}"
)
print(
    f"InfiniBand, one-way per GPU: {units.format_bandwidth(CLUSTER.inter_bandwidth_bytes_per_s)}, "
    f"α = {units.format_time(CLUSTER.inter_node_link.latency_s)}"
)
state_bytes = (
    parallelism.PARAM_BYTES + parallelism.GRAD_BYTES + parallelism.ADAM_OPTIMIZER_BYTES_PER_PARAM
) * MODEL.params
print(
    f"model states at 16 bytes per parameter: {units.format_bytes(state_bytes)} = "
    f"{state_bytes / GPU.hbm_capacity_bytes:.1f} GPUs' worth of HBM before any activation"
)

# %% [markdown]
# A factor of 9 separates the two links (NCCL's cost model, which prices the collectives below, counts NVLink 4 as
# 18 links × 20.6 GB/s = 370.8 GB/s, still 7.4 times the network's share). And the model states alone fill 14 of
# the 64 GPUs: the model must be split, and the split must avoid sending frequent traffic over the slower link.
#
# ### Step 3 · The global batch and the sequence length
#
# **Sequence length.** $s = 8192$, the length Llama 3 was trained at (after a short start at 4,096). It fixes the
# attention's share of the FLOPs and the activation memory per sequence.
#
# **Global batch.** $B_\text{global} = 512$ sequences, 4.2 M tokens per step: the batch Llama 3's paper reports for
# the early pre-training of its 405B model (4 M tokens), in the range where large models still gain from every token of a larger batch.
# Two things bound it: the optimiser (beyond a *critical batch size*, more tokens per step stop buying fewer steps)
# and the plan ($B_\text{global} = b \cdot m \cdot d$ must divide evenly, and $m$ must be large enough to amortise
# the bubble and the once-per-step data-parallel synchronisation). Step 12 returns to it with numbers.

# %%
SEQ_LEN = MODEL.seq_len
GLOBAL_BATCH = 512
layer_fwd, head_fwd, attention_core = budget.forward_flops_per_token(MODEL)
print(
    f"global batch: {GLOBAL_BATCH} sequences × {SEQ_LEN:,} tokens = {units.format_count(GLOBAL_BATCH * SEQ_LEN)} tokens"
)
print(
    f"forward FLOPs per token: {units.format_flops(L * layer_fwd + head_fwd)} "
    f"(≈ 2Ψ = {units.format_flops(2 * MODEL.params)}); the attention scores' share "
    f"{units.format_percent(L * attention_core / (L * layer_fwd + head_fwd))}"
)

# %% [markdown]
# ### Step 4 · A candidate plan, by hand: memory per device
#
# Start from lesson 04's rule of thumb: tensor parallelism inside a node ($t = 8$, on NVLink), pipeline parallelism
# across nodes until the model fits, data parallelism for the rest. With $p = 4$ stages of 20 layers, $d = 2$.
# Micro-batch $b = 1$, so $m = 512 / (1 \cdot 2) = 256$ micro-batches per step; ZeRO-1 (optimizer state sharded over
# the two replicas); sequence parallelism (lesson 03) and [FlashAttention](glossary.ipynb#flashattention), no
# recomputation; the 1F1B schedule.
#
# The calibrated model counts memory as nanotron holds it: bf16 parameters (2 bytes), an fp32 gradient buffer that the
# backward accumulates into (4 bytes), Adam's fp32 master weights and two moments (12 bytes), the activations of the
# $\min(p, m) = 4$ micro-batches the first stage holds under 1F1B, and the framework's own memory (CUDA context,
# NCCL buffers, allocator caches), fitted at about 2.9 GB.

# %%
CAL = parallelism.default_calibration(CLUSTER)  # the Playbook's fit (nanotron on H100 nodes), this cluster's links
CANDIDATE = parallelism.ParallelPlan(
    data_parallel=2,
    tensor_parallel=8,
    pipeline_parallel=4,
    zero_stage=1,
    micro_batch=1,
    grad_accum_steps=GLOBAL_BATCH // 2,
    recompute="none",
    sequence_parallel=True,
    attention="flash",
)
t, p, d, b, m = (
    CANDIDATE.tensor_parallel,
    CANDIDATE.pipeline_parallel,
    CANDIDATE.data_parallel,
    CANDIDATE.micro_batch,
    CANDIDATE.grad_accum_steps,
)
stage_layers = parallelism.stage_layers(L, p)
stage_params = stage_layers * per_layer + V * h  # the first stage also holds the input embedding
per_gpu_params = stage_params / t
# Bytes per token that one layer keeps for the backward (lesson 03's table, Llama architecture, FlashAttention):
# the residual side (2 norm inputs, attention and MLP inputs: 8h) is split over t by sequence parallelism; Q and the
# attention output 2h + 2h, K and V 2·1024 + 2·1024, the gated MLP 8f and FlashAttention's log-sum-exp 4a over t.
a_token = (8 * h + 2 * h + 4 * kv_width + 2 * h + 8 * f + 4 * MODEL.heads) / t
hand = {
    "parameters (2 B)": 2 * per_gpu_params,
    "gradients, fp32 buffer (4 B)": 4 * per_gpu_params,
    "optimizer state (12 B / d)": 12 * per_gpu_params / d,
    "activations": stage_layers * b * SEQ_LEN * a_token * min(p, m),
    "framework (fitted)": CAL.framework_bytes,
}
tool = parallelism.memory_breakdown(MODEL, CANDIDATE, calibration=CAL)
tool_terms = [tool.parameters, tool.gradients, tool.optimizer_state, tool.activations, tool.framework]
print(
    f"first stage: {stage_layers} layers + embedding = {units.format_count(stage_params)} parameters, "
    f"{units.format_count(per_gpu_params)} per GPU; {units.format_bytes(a_token)} per token per layer"
)
print(f"{'term':36} {'by hand':>9} {'memory_breakdown':>17}")
for (name, value), value_tool in zip(hand.items(), tool_terms, strict=True):
    print(f"{name:36} {units.format_bytes(value):>9} {units.format_bytes(value_tool):>17}")
print(
    f"{'total':36} {units.format_bytes(sum(hand.values())):>9} {units.format_bytes(tool.total):>17}"
    f"   of {units.format_bytes(GPU.hbm_capacity_bytes)}"
)
ideal_memory = parallelism.memory_breakdown(MODEL, CANDIDATE, calibration=None)
print(
    f"the ideal model's count: {units.format_bytes(ideal_memory.total)}, of which activations "
    f"{units.format_bytes(ideal_memory.activations)} (GPT's 34h + 5as bytes per token: it stores attention scores)"
)

# %% [markdown]
# The hand count and `memory_breakdown` agree term by term. The candidate fits with 23 GB to spare. Three things a
# quick estimate misses are visible in the table: the fp32 gradient buffer (two thirds of the optimizer state here),
# the 4 micro-batches of activations the first stage holds under 1F1B, and the gated MLP, which stores $8f$ bytes
# per token where GPT's MLP stores $4 \cdot 4h = 16h$ — for this model $8f = 28h$. The ideal model counts the GPT
# way and knows no FlashAttention: it stores the $5as$ bytes of attention scores per token (lesson 03), which at
# $s = 8192$ are about nine times the rest, and finds 260 GB. That is why a search under the ideal model (step 9 runs
# one for comparison) picks selective recomputation: it drops exactly those scores, as FlashAttention never stores
# them. Lesson 05's searches, like step 8's, rank with the calibrated model instead.
#
# ### Step 5 · The candidate's transfers
#
# `budget.transfer_table` lists every tensor the plan sends in one step (from `parallelism.boundary_tensors`), with
# its collective, its payload $S$, its group, the levels of the cluster it crosses, and its time as NCCL runs it on
# those links (`budget.transfer_time_per_call`). This is the ideal model's list: 16-bit gradients, nominal links.

# %%
rows = budget.transfer_table(MODEL, CANDIDATE, CLUSTER)
print(budget.format_transfer_table(rows))
per_axis = {axis: sum(r["time_s"] for r in rows if r["axis"] == axis) for axis in ("tensor", "pipeline", "data")}
print("per step: " + ", ".join(f"{axis} {units.format_time(seconds)}" for axis, seconds in per_axis.items()))

# %% [markdown]
# Read it as a budget:
#
# - **tensor parallel**: 4 kinds of call (an all-gather and a reduce-scatter of the $b \cdot s \cdot h$ activations,
#   forward and backward; sequence parallelism turns each all-reduce into that pair, lesson 03), each 134 MB and
#   354 µs on NVLink (NCCL's ring with the Simple protocol), 10,240 calls of each kind per step (2 per layer ×
#   20 layers × 256 micro-batches): 14.5 s per step, every call on the critical path;
# - **pipeline**: 256 sends each way of the $bsh/t$ slice, 16.8 MB, between nodes: 345 µs each;
# - **data parallel**: one reduce-scatter of this GPU's 4.41 GB of gradients and one all-gather of the updated
#   parameters, once per step each, between the two replicas in different nodes: 44.1 ms each. (The ideal model
#   splits the parameters evenly over the stages, 2 bytes × Ψ/32, ignoring that the first stage also holds the
#   embedding.)
#
# ### Step 6 · Exposed time and the step time, by hand
#
# The ideal model's step, by the dependency rule of lesson 04. One micro-batch on one GPU computes $1/(t \cdot p)$
# of the model's FLOPs for one sequence, forward and backward (3 × the forward, lesson 01's count that the ideal
# model uses). Tensor and pipeline transfers are exposed. The gradient reduce-scatter may hide behind the last
# micro-batch's backward pass; the parameter all-gather after the optimizer step cannot hide.

# %%
forward_flops = compute.transformer_forward_flops(b, SEQ_LEN, L, h, V)  # one micro-batch, the whole model
peak = GPU.peak("bf16")
tp_pp = per_axis["tensor"] + per_axis["pipeline"]  # exposed: on the critical path
gradients_rs, parameters_ag = (r["time_s"] for r in rows if r["axis"] == "data")
print(
    f"{'η':>5} {'t_f + t_b':>10} {'exposed DP':>11} {'slot':>9} {'bubble':>8} {'step (hand)':>12} "
    f"{'step_time':>10} {'MFU':>6}"
)
for eta in (0.3, 0.4, 0.5, 0.6, 0.7):
    t_f = forward_flops / (t * p) / (eta * peak)
    t_b = 2 * t_f
    exposed_dp = budget.exposed_after_overlap(gradients_rs, t_b) + parameters_ag
    slot = t_f + t_b + tp_pp / m
    bubble = (p - 1) * slot
    step_hand = m * slot + bubble + exposed_dp
    step = budget.step_time(MODEL, CANDIDATE, CLUSTER, compute_efficiency=eta, calibration=None)
    print(
        f"{eta:>5.1f} {units.format_time(t_f + t_b):>10} {units.format_time(exposed_dp):>11} "
        f"{units.format_time(slot):>9} {units.format_time(bubble):>8} {units.format_time(step_hand):>12} "
        f"{units.format_time(step.total_s):>10} {units.format_percent(step.mfu):>6}"
    )
print(f"exposed tensor + pipeline per step: {units.format_time(tp_pp)}, whatever η is")

# %% [markdown]
# The hand calculation reproduces `budget.step_time` at every efficiency. Two things stand out. The exposed
# tensor-parallel time, 14.5 s per step, does not shrink when the GPUs compute faster, so the faster the compute, the
# larger its share: at η = 0.7 it is nearly a quarter of the step (14.5 s of 58.7 s). And the MFU is always below η:
# at η = 0.5 the plan reaches 39.8 %. Everything here is the ideal model; the next step asks what it leaves out.
#
# ### Step 7 · What the calibrated model adds
#
# The same plan under the calibrated model (`calibration=CAL`):

# %%
ideal = budget.step_time(MODEL, CANDIDATE, CLUSTER, compute_efficiency=0.5, calibration=None)
calibrated = budget.step_time(MODEL, CANDIDATE, CLUSTER, calibration=CAL)
gemm_flops = layer_fwd * b * SEQ_LEN / t  # one layer's forward for one micro-batch on one GPU
gemm_eff = CAL.gemm_efficiency * gemm_flops / (gemm_flops + CAL.gemm_half_flops)
fixed = CAL.layer_overhead_s * stage_layers * (m + p - 1)
print(f"{'':28} {'ideal, η = 0.5':>15} {'calibrated':>11}")
for label, x, y in (
    ("compute", ideal.compute_s, calibrated.compute_s),
    ("bubble", ideal.bubble_s, calibrated.bubble_s),
    ("exposed tensor parallel", ideal.exposed_s["tensor"], calibrated.exposed_s["tensor"]),
    ("exposed pipeline", ideal.exposed_s["pipeline"], calibrated.exposed_s["pipeline"]),
    ("exposed data parallel", ideal.exposed_s["data"], calibrated.exposed_s["data"]),
    ("step", ideal.total_s, calibrated.total_s),
):
    print(f"{label:28} {units.format_time(x):>15} {units.format_time(y):>11}")
print(f"{'MFU':28} {units.format_percent(ideal.mfu):>15} {units.format_percent(calibrated.mfu):>11}")
print(
    f"GEMM efficiency at {units.format_flops(gemm_flops)} per layer and micro-batch: "
    f"{units.format_percent(gemm_eff)} of peak; fixed cost {units.format_time(CAL.layer_overhead_s)} per layer "
    f"and micro-batch: {units.format_time(fixed)} per step (big-GEMM efficiency {units.format_percent(CAL.gemm_efficiency)})"
)
print(
    f"links: this cluster's own, network {units.format_bandwidth(CLUSTER.inter_bandwidth_bytes_per_s)} per GPU "
    f"(the Playbook's measured EFA is not carried over)"
)

# %% [markdown]
# The calibrated model is 8 s slower. Its matrix multiplies run a little faster (55 % of peak, against the ideal
# model's 50 %), but it adds a fixed 1.6 ms per layer and micro-batch: with 256 micro-batches of 20 layers that is
# 8.29 s per step, an eighth of the compute. Its links are this cluster's own, as in the ideal model, so its
# transfers differ only by what nanotron sends (fp32 gradients). Step 9 asks what happens when the fitted numbers are
# wrong for this cluster.
#
# ### Step 8 · The plan search: why its best plan wins
#
# `budget.search_plans` enumerates every factorisation of the 64 GPUs with every micro-batch size, ZeRO stage,
# recomputation, sequence parallelism and interleaving, under the calibrated model (FlashAttention, as the
# calibration's runs used). By default it counts a plan as fitting only with the calibration's memory margin to
# spare (step 10); steps 8 and 9 first rank as if the model's memory were exact, `memory_margin=0.0`, to see what
# the point estimates alone pick. Each row's step time carries its band (p10–p90, step 10), which does not change
# the ranking:

# %%
search = budget.search_plans(MODEL, CLUSTER, GLOBAL_BATCH, calibration=CAL, attention=("flash",), memory_margin=0.0)
print(
    f"{search.evaluated:,} plans considered; rejected: "
    + ", ".join(f"{reason} {count:,}" for reason, count in search.rejected.items())
    + f"; {int(search.feasible.sum()):,} ranked"
)
candidate_row = search.find(**{name: getattr(CANDIDATE, name) for name in budget.PLAN_FIELDS})
print(search.table([0, 1, 2, 3, candidate_row]))
best = search.row(0)
print(
    f"best: MFU {units.format_percent(best['mfu'])}, {units.format_count(GLOBAL_BATCH * SEQ_LEN / best['step_time_s'] / 64)} "
    f"tokens/s per GPU; memory {units.format_bytes(best['memory_bytes'])} of "
    f"{units.format_bytes(search.capacity_bytes)}"
)

# %% [markdown]
# "Framework" rejects the plans that combine a pipeline with ZeRO-2 or 3, which nanotron does not run. The winner
# keeps the rule of thumb's shape, $t = 8$ inside a node and a pipeline across nodes, but with half the candidate's
# stages ($p = 2$), twice its replicas ($d = 4$) and two interleaved chunks per GPU. Compare its breakdown with the
# candidate's:

# %%
best_plan = search.plan(0)
best_step = budget.step_time(MODEL, best_plan, CLUSTER, calibration=CAL)
best_memory = parallelism.memory_breakdown(MODEL, best_plan, calibration=CAL)
print(f"{'':26} {'candidate':>10} {'best':>10}")
for label, x, y in (
    ("compute (incl. fixed cost)", calibrated.compute_s, best_step.compute_s),
    (
        "  of which fixed cost",
        fixed,
        CAL.layer_overhead_s
        * (L // best_plan.pipeline_parallel)
        * (best_plan.grad_accum_steps + (best_plan.pipeline_parallel - 1) / best_plan.virtual_stages),
    ),
    ("bubble", calibrated.bubble_s, best_step.bubble_s),
    ("exposed tensor parallel", calibrated.exposed_s["tensor"], best_step.exposed_s["tensor"]),
    ("exposed pipeline", calibrated.exposed_s["pipeline"], best_step.exposed_s["pipeline"]),
    ("exposed data parallel", calibrated.exposed_s["data"], best_step.exposed_s["data"]),
    ("step", calibrated.total_s, best_step.total_s),
):
    print(f"{label:26} {units.format_time(x):>10} {units.format_time(y):>10}")
print(
    f"{'activations':26} {units.format_bytes(tool.activations):>10} {units.format_bytes(best_memory.activations):>10}"
)

# %% [markdown]
# The winner wins by little (82.1 s against 84.2 s), on two terms. The bubble: with two stages of two chunks each, it
# waits $(p - 1)/v = 1/2$ of a micro-batch slot where the candidate waits 3 (319 ms against 974 ms). And compute
# (67 s against 68.5 s): the last stage also runs the output layer, as costly as one more layer, once per
# micro-batch, beside 40 layers instead of 20. Everything else is the same: $t = 8$ exposes 14.5 s of
# tensor-parallel collectives on NVLink in both, the pipeline sends cost the same, and the fixed cost per layer and
# micro-batch is paid as often (20 layers × 256 micro-batches, or 40 × 128). Its data-parallel traffic grows with its
# replicas but stays small.
#
# Two warnings are already in the tables. The winner's activations are 34 GB against 27.2 GB (interleaving keeps
# more micro-batches in flight), and it uses 76.5 GB of 80 GB: 96 % of HBM. And its lead is smaller than rows 1 and
# 2 are apart from it (82.1 s and 82.3 s), so any assumption that moves a few percent can reorder them.
#
# ### Step 9 · How sensitive is the choice?
#
# Each scenario below changes one assumption of the calibrated model and reruns the search (each search takes a
# fraction of a second): the compute efficiency, the fixed cost, the overlap, the network, the memory headroom. One
# is the calibration's own alternative (no fixed cost); the other four are what-ifs, each sized by a measurement:
#
# - **GEMMs at 64 % instead of the fitted 55 %.** Lesson 05 carried the calibration to Megatron's 1T run on A100s and
#   predicted 141 TFLOP/s per GPU where the paper measured 163: the efficiency at which the two would agree is about
#   64 % (55 % × 163/141).
# - **Overlap slows compute by 30 %.** The calibrated model lets overlapped communication cost compute nothing. Lee et
#   al. (2025) measured GEMMs on A100, H100, MI250 and MI210 while collectives ran beside them: an average slowdown of
#   18.9 %, at most 40 %. 30 % lies between the two.
# - **Network at 58 %.** The nccl-tests log of the Playbook's two EFA nodes fits best at 232 of 400 GB/s per node,
#   58 %, though it cannot tell that from the datasheet's rate (lesson 08); step 11 meets an InfiniBand log that
#   agrees.
# - **11 GB less memory.** On lesson 08's held-out runs the calibrated memory model's median error is 13.3 %, about
#   11 GB of an 80 GB H100, and it errs by counting too little (every run it wrongly thought would fit crashed): 11 GB
#   less is one typical miss.

# %%
SCENARIOS = {  # why these values: the list above
    "calibrated": CAL,
    "GEMMs at 64 % (not 55 %)": dataclasses.replace(CAL, gemm_efficiency=0.64),  # lesson 05: 55 % × 163/141
    "no fixed cost per layer": dataclasses.replace(CAL, layer_overhead_s=0.0),
    # Lee et al. 2025 (arXiv:2507.03114): compute 18.9 % slower on average while overlapped, at most 40 %
    "overlap slows compute 30 %": dataclasses.replace(CAL, overlap_slowdown=0.3),
    # the EFA log's best fit, 232 of 400 GB/s per node, which the log cannot tell from the datasheet (lesson 08)
    "network at 58 %": dataclasses.replace(CAL, network_efficiency=0.58),
    # lesson 08: the calibrated memory's median error on the held-out runs, 13.3 % of 80 GB
    "11 GB less memory": dataclasses.replace(CAL, framework_bytes=CAL.framework_bytes + 11 * units.GB),
}
searches = {"calibrated": search} | {
    name: budget.search_plans(MODEL, CLUSTER, GLOBAL_BATCH, calibration=cal, attention=("flash",), memory_margin=0.0)
    for name, cal in SCENARIOS.items()
    if name != "calibrated"
}
winner = search.fields(0)
print(f"{'scenario':27} {'its best plan (d t p ZeRO b m v recompute)':44} {'step':>7} {'MFU':>5} {'winner slower':>13}")
for name, found in searches.items():
    r = found.row(0)
    plan_text = (
        f"{r['data_parallel']:>2} {r['tensor_parallel']} {r['pipeline_parallel']} {r['zero_stage']} "
        f"{r['micro_batch']} {r['grad_accum_steps']:>3} {r['virtual_stages']} {r['recompute']}"
    )
    try:
        row = found.find(**winner)
        ours = (
            f"+{units.format_percent(found.row(row)['step_time_s'] / r['step_time_s'] - 1)}"
            if found.feasible[row]
            else "does not fit"
        )
    except ValueError:
        ours = "not a plan"
    print(
        f"{name:27} {plan_text:44} {units.format_time(r['step_time_s']):>7} "
        f"{units.format_percent(r['mfu']):>5} {ours:>13}"
    )
ideal_search = budget.search_plans(MODEL, CLUSTER, GLOBAL_BATCH, compute_efficiency=0.5, calibration=None)
print("\nthe ideal model of lesson 04 (η = 0.5), for comparison:")
print(ideal_search.table([0]))

# %% [markdown]
# The winner is the best plan of every scenario but one. A faster GEMM or no fixed cost speed every plan up alike
# (73.8 s and 73.9 s); the overlap and the slower network hardly move it (82.2 s and 82.5 s): its data-parallel traffic
# is small and its tensor-parallel traffic stays on NVLink. With 11 GB less memory it does not fit at all, and a
# four-stage pipeline over two replicas wins (83.9 s).
#
# The ideal model picks another shape ($d = 16$, $t = 4$, no pipeline, ZeRO-3, selective recomputation): with no
# fixed cost per micro-batch and no fp32 gradients, ZeRO-3's parameter gathers hide behind compute and a pipeline's
# bubble is pure loss.
#
# Memory headroom can also be examined without a new search: `PlanSearch.fastest_within` re-ranks the calibrated
# search under a smaller memory limit.

# %%
limits = {share: search.fastest_within(share * search.capacity_bytes) for share in (1.0, 0.95, 0.9, 0.85)}
for share, row in limits.items():
    print(
        f"at most {units.format_percent(share)} of HBM ({units.format_bytes(share * search.capacity_bytes)}): row {row}"
    )
print(search.table(sorted(set(limits.values()))))

# %% [markdown]
# Asking for headroom moves down the same family: with 5 % kept free, the winner's split with four interleaved chunks
# (73.1 GB, 82.1 s); with 10 %, the same split without interleaving (69.7 GB, 82.3 s); with 15 %, four stages over
# two replicas (67.5 GB, 83.9 s).
#
# ### Step 10 · A plan with the best worst case
#
# The winner is fragile. `budget.worst_case_ranking` takes the ten fastest plans of every scenario's search and
# ranks them by their worst slowdown $R$: in each scenario, the plan's step time over that scenario's best.

# %%
ranking = budget.worst_case_ranking(searches, candidates=10)
print(f"{len(ranking)} candidate plans; the best worst cases, and the calibrated winner:")
print(f"{'d t p ZeRO b m v recompute SP':31} {'worst':>6}  {'in scenario':27} {'calibrated step':>15}")
winner_rank = next(i for i, r in enumerate(ranking) if all(r[k] == winner[k] for k in budget.PLAN_FIELDS))
for r in ranking[:3] + [ranking[winner_rank]]:
    plan_text = (
        f"{r['data_parallel']:>2} {r['tensor_parallel']} {r['pipeline_parallel']} {r['zero_stage']} "
        f"{r['micro_batch']} {r['grad_accum_steps']:>3} {r['virtual_stages']} {r['recompute']:>4} "
        f"{'yes' if r['sequence_parallel'] else 'no'}"
    )
    worst = "∞" if r["worst_slowdown"] == float("inf") else f"{r['worst_slowdown']:.2f}×"
    print(
        f"{plan_text:31} {worst:>6}  {r['worst_scenario']:27} {units.format_time(r['step_time_s']['calibrated']):>15}"
    )
MINIMAX = parallelism.ParallelPlan(
    **{name: value for name, value in ranking[0].items() if name in budget.PLAN_FIELDS},
    schedule="interleaved" if ranking[0]["virtual_stages"] > 1 else "1f1b",
)
minimax = budget.step_time(MODEL, MINIMAX, CLUSTER, calibration=CAL)
minimax_memory = parallelism.memory_breakdown(MODEL, MINIMAX, calibration=CAL)
times = ranking[0]["step_time_s"].values()
print(
    f"best worst case: step {units.format_time(minimax.total_s)} (calibrated; {units.format_time(min(times))} to "
    f"{units.format_time(max(times))} over the scenarios), MFU {units.format_percent(minimax.mfu)}, "
    f"memory {units.format_bytes(minimax_memory.total)}"
)

# %% [markdown]
# The best worst case over these scenarios: **$d = 2$, $t = 8$, $p = 4$ with two interleaved chunks per GPU, ZeRO-1,
# micro-batch 1 ($m = 256$), no recomputation, sequence parallelism**: the candidate of step 2, interleaved. Its step
# is never more than 1.02 times that of the best plan of any scenario, while the calibrated winner is infinitely worse
# in one (it does not fit). Its calibrated step time is 83.9 s (MFU 38 %), between 75.3 s and 84.1 s over the
# scenarios, and it uses 67.5 GB. Why it holds up: its tensor group fills one node, so the heavy tensor-parallel
# traffic stays on NVLink and the network carries only pipeline sends and two replicas' gradients; and with four
# stages each GPU holds a quarter of the model, which leaves room for a memory model that counts 11 GB too little.
#
# The scenarios were chosen by hand, one assumption at a time. Lesson 08 measured how wrong the calibrated model is
# on runs it never saw. A plan's real memory was up to 38.4 % above the predicted one (the 90th percentile), and the
# calibration carries that margin to any cluster (`CAL.memory_margin`): it belongs to how the framework holds memory.
# Its real step time was between $r_{10}$ and $r_{90}$ times the predicted one, a band that widens with the nodes a
# model replica spans, where the model's network terms miss most. That band was measured on the Playbook's AWS EFA
# nodes only, so a calibration carried to this InfiniBand cluster has none (`CAL.step_time_band` is empty): here we
# borrow it (`validation.PLAYBOOK_STEP_TIME_BAND`), the only spread anyone measured for this model, knowing that
# InfiniBand's may be narrower. The search ranks with both: a plan fits only with the margin to spare, and
# `PlanSearch.robust()` is the plan whose band's high end is lowest.

# %%
BAND = validation.PLAYBOOK_STEP_TIME_BAND  # measured on EFA (lesson 08); borrowed for this cluster
print("the step-time band by the GPUs a replica spans, t·p: " + "; ".join(
    f"≥ {start}: {low:.2f}–{high:.2f}×" for start, low, high in BAND))  # fmt: skip
uncertain = budget.search_plans(
    MODEL, CLUSTER, GLOBAL_BATCH, calibration=CAL, attention=("flash",), step_time_band=BAND
)
fastest_row, robust_row = uncertain.fastest(), uncertain.robust()
print(
    f"with the +{units.format_percent(uncertain.memory_margin)} margin, {int(uncertain.feasible.sum()):,} plans fit "
    f"(without it {int(search.feasible.sum()):,}); the fastest (row {fastest_row}) and the robust plan "
    f"(row {robust_row}):"
)
print(uncertain.table([fastest_row, robust_row]))
minimax_needs = float(minimax_memory.total) * (1 + CAL.memory_margin)
print(f"the best worst case needs {units.format_bytes(minimax_needs)} with the margin: it does not fit")
RECOMMENDED = uncertain.plan(robust_row)
recommended = budget.step_time(MODEL, RECOMMENDED, CLUSTER, calibration=CAL)
recommended_memory = parallelism.memory_breakdown(MODEL, RECOMMENDED, calibration=CAL)
robust = uncertain.row(robust_row)
band = units.format_time_band(robust["step_time_s"], robust["step_time_low_s"], robust["step_time_high_s"])
print(
    f"recommended: step {band}, MFU {units.format_percent(recommended.mfu)}, memory {units.format_bytes(recommended_memory.total)}"
)

# %% [markdown]
# The margin removes the best worst case (it needs 93.4 GB with it) and the winner of step 8; of the 752 plans that
# fit by the point estimate, 503 fit with it. The fastest of those is the candidate of step 2 itself ($d = 2$, $t = 8$,
# $p = 4$, no interleaving): 84.2 s by the model, but 1.8 to 47 min by the band, because its model replica spans four
# nodes and the held-out runs whose replica spanned four or more ran 1.31 to 33.58 times as long as predicted. The
# **recommendation is the robust plan: $d = 32$, $t = 2$, no pipeline, ZeRO-3, micro-batches of two sequences
# ($m = 8$), full recomputation, no sequence parallelism**: 89.9 s by the model (MFU 35.5 %), 80 s to 4.4 min by the
# band, 54.7 GB of memory. Its replica sits inside one node, where the held-out runs stayed within 0.89 to 2.93 times
# the prediction; what crosses the network is ZeRO-3's data-parallel traffic (11.8 s exposed, the parameter gathers of
# every micro-batch).
#
# Two cautions come with it. The band was measured on the Playbook's ZeRO-0 and ZeRO-1 runs over AWS EFA and borrowed
# here: ZeRO-3's gathers on InfiniBand are outside what it saw, so the network and the overlap (step 11) are the first
# things to measure. And a band is a spread, not a guarantee: one held-out run in ten ran slower than its high end.
#
# ### Step 11 · What to measure before committing
#
# The scenarios show which assumptions decide the choice; each can be measured in an hour, before a run that takes
# weeks:
#
# 1. **The network's real rate.** The calibrated model runs this cluster's network at its datasheet rate; the
#    Playbook's EFA log fits best at 58 % of it. Run nccl-tests across two of your nodes, and read it as lesson 07
#    did: a published log of two 8 × H100 nodes on InfiniBand, against this course's model of the same all-reduce:

# %%
log = measure.read_nccl_tests((measure.DATA_DIR / "nccl_tests" / "nebius_2x8xH100_ib_all_reduce.txt").read_text())
two_nodes = hardware.Cluster("2 × DGX H100", GPU, 8, 2, hardware.NVLINK4, hardware.INFINIBAND_NDR_8X)
largest = log.rows[-1]
print(
    f"measured, {log.ranks} ranks, {units.format_bytes(largest.size_bytes)}: {units.format_time(largest.median_s)}, "
    f"busbw {units.format_bandwidth(largest.busbw_bytes_per_s)}"
)
for label, fraction in (("nominal InfiniBand", 1.0), ("58 % of nominal", 0.58)):
    cluster = budget.calibrated_cluster(two_nodes, dataclasses.replace(CAL, network_efficiency=fraction))
    model_s = budget.group_collective_time("all_reduce", cluster, 16, 1, largest.size_bytes)
    print(f"model, network at {label:21}: {units.format_time(model_s)}")

# %% [markdown]
#    On that InfiniBand cluster NCCL took 34.4 ms: slower than the nominal model's 27.3 ms (which runs NVLink SHARP
#    inside each node and a tree between the nodes, as NCCL's tuner would pick), and as slow as the model with the
#    network at 58 % of nominal, 34.8 ms. So "network at 58 %" is the likelier scenario there; step 10's best worst
#    case is within 1.02× of the best in it, as in every scenario. Measure yours; if it matches, rerun the search with
#    `network_efficiency=0.58`.
# 2. **The fixed cost per layer and micro-batch.** Time a few training steps of the model cut to 2 layers, at
#    $b = 1$ and $b = 4$, with warm-up and the maximum over ranks as lesson 07 timed collectives: the measured time
#    per layer and micro-batch, less its FLOPs at the GEMM efficiency, is this constant.
# 3. **Overlap.** Time a step with data-parallel communication on and off (lesson 07's exposed-communication
#    measurement): the slowdown of compute under overlap is `overlap_slowdown`.
# 4. **Peak memory** of the chosen plan for a few steps at full sequence length (`torch.cuda.max_memory_allocated`
#    and the allocator's reserved bytes): if it is well under the margin's 75.7 GB, the faster plans the margin
#    excluded come back into play.
#
# ### Step 12 · Choosing the global batch and the sequence length
#
# For the recommended plan, the step time and the throughput at other global batches (the same $d \cdot b$, so only
# $m$ changes), and the attention's share of the FLOPs at other sequence lengths:

# %%
print(f"{'global batch':>12} {'tokens':>13} {'m':>4} {'step':>8} {'MFU':>6} {'tokens/s per GPU':>17}")
for batch in (128, 256, 512, 1024):
    plan = RECOMMENDED.replace(grad_accum_steps=batch // (RECOMMENDED.data_parallel * RECOMMENDED.micro_batch))
    step = budget.step_time(MODEL, plan, CLUSTER, calibration=CAL)
    print(
        f"{batch:>12} {units.format_count(batch * SEQ_LEN):>13} {plan.grad_accum_steps:>4} "
        f"{units.format_time(step.total_s):>8} {units.format_percent(step.mfu):>6} "
        f"{units.format_count(batch * SEQ_LEN / step.total_s / CLUSTER.devices):>17}"
    )
for seq in (2048, 4096, 8192, 32768):
    model_s = dataclasses.replace(MODEL, seq_len=seq)
    layer, head, core = budget.forward_flops_per_token(model_s)
    print(
        f"s = {seq:>6,}: the attention scores' share of the forward FLOPs "
        f"{units.format_percent(L * core / (L * layer + head))}"
    )
tokens_15t = 15e12
days = compute.training_flops(MODEL.params, tokens_15t) / (CLUSTER.devices * peak * recommended.mfu) / 86400
print(
    f"Llama 3's 15 T tokens on these 64 GPUs at MFU {units.format_percent(recommended.mfu)}: "
    f"{units.format_count(days)} days, {days / 365:.1f} years"
)

# %% [markdown]
# - **The global batch** trades the optimiser against the hardware. For the recommended plan the MFU is the same at
#   every batch: without a pipeline there is no bubble to amortise, and ZeRO-3 gathers the parameters again for
#   every micro-batch, so the step grows in proportion to $m$ (a plan with a pipeline, like step 10's best worst
#   case, loses MFU below 256 sequences to its bubble, $(p-1)/(v \cdot m)$). The optimiser then sets the batch: past
#   the critical batch size, larger batches need more tokens to reach the same loss. 512 × 8192 is 4.2 M tokens per
#   step, the size Llama 3 405B started with, although in 4,096-token sequences (about 1,000 of them), before
#   doubling to 8 M and 16 M tokens as training went on (Grattafiori et al. 2024, §3.4.1). Choose $B_\text{global}$
#   as a multiple of $d \cdot b$ (and of $d \cdot b \cdot p$ when interleaving).
# - **The sequence length** is set by the data and the context the model must handle; its cost is the attention's
#   share (13.4 % of the FLOPs at 8,192, over a third at 32,768) and the activation memory per sequence, both linear
#   in $s$ per token. A longer sequence at the same tokens per step means fewer sequences: keep
#   $B_\text{global} \cdot s$ fixed, not $B_\text{global}$.
# - **Scale check (lesson 01's 6PD).** Pre-training on Llama 3's 15 T tokens would take this cluster almost nine
#   years: 64 H100s are a cluster for fine-tuning or continued pre-training of a 70B model on billions of tokens,
#   not for pre-training it.

# %% [markdown]
# ## Figures
#
# ### The plan landscape
#
# Every plan of the calibrated search: memory per GPU against step time, coloured and shaped by what binds it.
# Marked, each with a shape of its own and named in the legend under the figure: the calibrated winner (row 0), the
# recommended plan and the by-hand candidate.

# %%
recommended_row = search.find(**uncertain.fields(robust_row))
fig, ax = plt.subplots(figsize=(9, 6.4), layout="constrained")
viz.plot_plan_search(
    search,
    ax=ax,
    highlight_rows=(0, recommended_row, candidate_row),
    highlight_labels=(
        "row 0, the calibrated winner",
        f"row {recommended_row}, recommended",
        f"row {candidate_row}, the candidate",
    ),
)
plt.show()

# %% [markdown]
# The winner sits at the capacity line's edge; the recommended plan about a tenth slower, with 25.3 GB to spare.
# What binds the plans that fit (the largest term of each step: compute, the bubble or exposed communication)?

# %%
bound = search.columns["binding_constraint"][search.feasible].tolist()
print(", ".join(f"{bound.count(name):,} bound by {name}" for name in sorted(set(bound), key=bound.count, reverse=True)))
print(f"the 20 fastest: {', '.join(sorted(set(search.columns['binding_constraint'][:20].tolist())))}")

# %% [markdown]
# Most plans that fit are bound by compute, and so are the fastest: the exposed communication of a good plan (its
# tensor-parallel collectives on NVLink) stays well below its compute.
#
# ### Where the step goes: candidate, winner, recommended
#
# The critical path (top bar) and the communication hidden under compute (bottom bar), calibrated model.

# %%
fig, axes = plt.subplots(3, 1, figsize=(9, 9), layout="constrained", sharex=True)
for ax, (label, step) in zip(
    axes,
    (("candidate (t = 8, p = 4, d = 2)", calibrated), ("calibrated winner", best_step), ("recommended", recommended)),
    strict=True,
):
    viz.plot_step_timeline(step, ax=ax, title=f"{label}: {units.format_time(step.total_s)}")
plt.show()

# %% [markdown]
# The candidate and the winner compute for about as long (68.5 s and 67 s) and expose the same tensor-parallel time
# (14.5 s: $t = 8$ in each); they differ in the bubble. The recommended plan has no bubble and little tensor-parallel
# time (1.86 s at $t = 2$), but computes longer (78.1 s: full recomputation repeats the forward pass) and exposes
# ZeRO-3's parameter gathers over the network (9.97 s): it is slower by the point estimate and safer by the band.

# %% [markdown]
# ## Misconception
#
# > *"The plan search gives the answer: take row 0."*
#
# Row 0 is the best plan *under the model's assumptions*. Here it uses 96 % of HBM, so it does not fit with the margin
# the measured runs ask for, and its lead over the next rows is smaller than the spread of the scenarios above: a
# memory model that counts 11 GB too little makes it crash. A plan search is a way to find the few plans worth
# measuring and the assumptions that decide between them, not a substitute for measuring them. The same holds for the rule of thumb the candidate followed
# ($t = 8$ in a node, pipeline across nodes): it was derived for GPT-3-size models on Selene; here the search keeps its
# shape and tunes the rest (the stages, the replicas, the interleaving), which is where the measurements decide.

# %% [markdown]
# ## Self-check
#
# Pick an answer and press *Check*.

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="Under the calibrated model the search's winner (d = 4, t = 8, p = 2, two interleaved chunks) and the "
        "candidate (d = 2, t = 8, p = 4, one chunk) expose the same 14.3 s of tensor-parallel time. Where does the "
        "winner gain?",
        options=(
            "In the bubble: (p − 1)/v is 1/2 of a micro-batch slot for the winner, 3 for the candidate",
            "In the tensor-parallel traffic, since t = 8 is faster with more replicas",
            "In the GEMM efficiency, since its micro-batches are larger",
        ),
        answer=0,
        explanation="The bubble costs (p − 1)/v micro-batch slots: two stages of two chunks wait half a slot, four "
        "stages of one chunk wait three (318 ms against 972 ms). Both use b = 1 and t = 8, so their GEMMs and "
        "tensor-parallel collectives are the same.",
    )
)

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="In the by-hand step, the exposed tensor-parallel time stays 14.3 s while η goes from 0.3 to 0.7. "
        "What happens to its share of the step?",
        options=(
            "It grows: the compute shrinks, the blocking collectives do not",
            "It stays the same: both scale with η",
            "It shrinks: faster GPUs also send faster",
        ),
        answer=0,
        explanation="The collectives' time depends on the links, not on the compute efficiency, and they sit on the "
        "critical path. A faster GPU makes the same exposed communication a larger part of a shorter step.",
    )
)

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="Plan X is fastest in 5 of 6 scenarios but does not fit in memory in the sixth. Plan Y is at most "
        "6 % slower than the best in every scenario. Which has the better worst case, and why?",
        options=(
            "Y: its worst slowdown is 1.06×; X's is infinite, since a plan that does not fit cannot run",
            "X: it wins most scenarios, so its average is best",
            "Neither: the worst case only counts the calibrated scenario",
        ),
        answer=0,
        explanation="The worst case takes the maximum slowdown over the scenarios, not the average. A plan that "
        "runs out of memory in a plausible scenario fails the run; a plan that is never far from the best is the "
        "safer commitment until the deciding assumption is measured.",
    )
)

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="You double the sequence length from 8,192 to 16,384 and want the same tokens per step. What do you "
        "change?",
        options=(
            "Halve the global batch in sequences (for example m), and expect a larger attention share of the FLOPs "
            "and twice the activations per sequence",
            "Nothing: the global batch counts sequences, so the tokens double and that is fine",
            "Double the data-parallel size, since each sequence is twice as long",
        ),
        answer=0,
        explanation="Tokens per step = B_global × s. Keeping it fixed means half the sequences. Per token, attention "
        "costs 4sh FLOPs per layer, so its share grows with s, and the activations stored per micro-batch are "
        "proportional to b·s.",
    )
)

# %% [markdown]
# ## History
#
# - **2021: planning by hand, at scale.** Narayanan et al. (SC'21) derived the bubble, the communication of each
#   axis and the memory of each plan by hand, and turned them into takeaways (tensor parallelism inside a server,
#   pipeline across servers) that practitioners used as rules for years.
# - **2022: searching automatically.** Alpa (Zheng et al., OSDI'22) searched inter- and intra-operator parallelism
#   automatically with a cost model and integer programming, and matched hand-tuned Megatron-LM plans on GPT models.
# - **2024: a 70B-class model in the open.** Llama 3's paper (Grattafiori et al.) reported its 4D parallelism (tensor,
#   context, pipeline, data with [FSDP](glossary.ipynb#fsdp)), the 405B model's batch schedule (4 M tokens, then 8 M and
#   16 M) and 38–43 % MFU on up to 16,384 H100s (380–430 TFLOP/s per GPU of 989).
# - **2025: measured plans published.** The Ultra-Scale Playbook (Tazi et al.) ran thousands of configurations on up
#   to 512 H100s and published them, with the memory and throughput each reached; the course's calibration is fitted
#   on them, and lesson 08 shows how far the model is from the measurements.

# %% [markdown]
# ## Summary
#
# - Start from the inputs: the model's real shape (70.55 billion parameters, checked), the links per GPU (450 vs 50 GB/s),
#   the global batch and sequence length, each justified.
# - A candidate by hand: memory term by term (fp32 gradient buffers, activations of the micro-batches in flight and
#   the framework's memory count), transfers with payload, calls and link, the step from the dependency rule; then
#   check it against the tools.
# - The search's winner ($d = 4$, $t = 8$, $p = 2$ interleaved, ZeRO-1, $b = 1$: 82.1 s, MFU 38.9 %) wins by a smaller
#   bubble, but sits at 96 % of HBM and does not fit if the memory model counts 11 GB too little.
# - The plan with the best worst case over the scenarios ($d = 2$, $t = 8$, $p = 4$ interleaved, ZeRO-1, $b = 1$:
#   83.9 s, MFU 38 %, 75.3 s to 84.1 s over the scenarios) is never more than 1.02 times as slow as the best, but
#   needs 93.4 GB with the +38.4 % memory margin the measured runs ask for.
# - The robust plan, recommended ($d = 32$, $t = 2$, ZeRO-3, $b = 2$, full recomputation: 89.9 s, 80 s to 4.4 min by
#   the band the Playbook's held-out runs measured, MFU 35.5 %, 54.7 GB), fits with the margin and has the lowest high
#   end of the band: its replica stays in one node.
# - Before committing, measure the network across nodes, the fixed cost per layer, the slowdown under overlap and
#   the peak memory; then rerun the search with the measured values.

# %% [markdown]
# ## Exercises
#
# 1. **Memory by hand.** For step 10's best worst case (`MINIMAX`), compute the first stage's memory term by term as in step 4: it
#    holds the candidate's layers (20 of the 80, plus the embedding, over $t = 8$; ZeRO-1 over $d = 2$; step 4's
#    41.5 kB per token per layer), but the interleaved schedule holds more micro-batches in flight
#    (`parallelism.pipeline_in_flight_microbatches(4, 256, "interleaved", 2)`). Compare with
#    `parallelism.memory_breakdown(MODEL, MINIMAX, calibration=CAL)`.
# 2. **A new scenario.** Add "network at 50 %" (`dataclasses.replace(CAL, network_efficiency=0.5)`) to `searches`.
#    Which plan wins it? Does the best worst case change?
# 3. **Efficiency range.** Under the ideal model, what share of the candidate's step is exposed tensor-parallel
#    time at η = 0.3 and at η = 0.7? At what η would it reach a quarter? (`budget.step_time(..., calibration=None)`)
# 4. **A different batch.** Rerun the scenario searches and the worst-case ranking at $B_\text{global} = 256$. Is
#    the best worst case the same?
# 5. **Another model.** Run the calibrated search for `parallelism.LLAMA3_8B` on one node (`hardware.DGX_H100`) with
#    $B_\text{global} = 512$. Which parallelism does it use, and why is little or no tensor parallelism needed?
#
# <details>
# <summary>Answers</summary>
#
# 1. Parameters, gradients, optimizer state and framework as step 4 printed them (4.54, 9.08, 13.6 and 2.86 GB);
#    activations $41.5\,\text{kB} \times 8192 \times 20$ layers $\times$ 5.5 micro-batches in flight = 37.4 GB,
#    against 4 micro-batches under 1F1B. Total 67.5 GB, as step 10 printed.
# 2. The calibrated winner wins it too (82.7 s), its split without interleaving just behind. The best worst case does
#    not change: it takes 84.3 s in that scenario (1.02× its best), and its worst case stays the 1.02× of "no fixed
#    cost per layer".
# 3. At η = 0.3 the step is 1.95 min and the 14.5 s of exposed tensor-parallel time are 12.4 % of it; at η = 0.7,
#    24.7 %. A quarter needs a step of 58 s, reached at η ≈ 0.71: above the calibration's efficiency (0.55), near the
#    0.8 that the best dense GEMMs reach. Between the plausible efficiencies the share doubles, which is why
#    the tensor-parallel degree matters more on faster GPUs.
# 4. Almost. At 256 sequences the calibrated winner is the same split with four interleaved chunks and $m = 64$
#    (41.2 s), and the best worst case is the same split with four chunks instead of two (1.02×): with half the
#    micro-batches the bubble's share doubles, and more chunks shrink it. The best worst case at 512 sequences is
#    1.03×.
# 5. Data parallelism with sharded states and little tensor parallelism: $d = 4$, $t = 2$, ZeRO-2, $b = 1$ with
#    sequence parallelism at 65.9 s, no recomputation; $d = 2$, $t = 2$, $p = 2$ with four interleaved chunks (ZeRO-1)
#    is 3.2 % behind. The memory margin decides the details: without it the same split without sequence parallelism
#    is 1.8 % faster (64.7 s), but its 58.5 GB would need 81 GB with the margin. The 8B model's 128 GB of model states
#    sharded over 8 GPUs is 16 GB each, so every GPU keeps large GEMMs, and all the traffic (gathers, gradient
#    reductions, tensor-parallel collectives) runs on NVLink.
#
# </details>

# %% [markdown]
# ## Sources
#
# - A. Grattafiori et al. (Llama Team, AI @ Meta), *The Llama 3 Herd of Models*, arXiv:2407.21783, 2024 — the
#   architecture (Table 3), training at 8,192 tokens, the batch schedule (§3.4.1: 4 M tokens in 4,096-token
#   sequences, then 8 M tokens in 8,192-token sequences, then 16 M), 4D parallelism and MFU (§3.3). https://arxiv.org/abs/2407.21783
# - Meta, Llama 3.1 70B release notes and `config.json` (meta-llama/Llama-3.1-70B): 70.6 B parameters, hidden 8192,
#   80 layers, 64 heads, 8 key/value heads, MLP 28,672, vocabulary 128,256.
# - N. Tazi et al., *The Ultra-Scale Playbook: Training LLMs on GPU Clusters*, Hugging Face, 2025 — the measured
#   runs behind `validation.PLAYBOOK_CALIBRATION` (`course_lib/data/playbook_runs.csv`, Apache-2.0).
# - D. Narayanan et al., *Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM*, SC'21.
#   arXiv:2104.04473 — the step time, the bubble and takeaway #1.
# - V. Korthikanti et al., *Reducing Activation Recomputation in Large Transformer Models*, MLSys 2023.
#   arXiv:2205.05198 — sequence parallelism and the activation count.
# - S. Rajbhandari et al., *ZeRO: Memory Optimizations Toward Training Trillion Parameter Models*, SC'20.
#   arXiv:1910.02054.
# - L. Zheng et al., *Alpa: Automating Inter- and Intra-Operator Parallelism for Distributed Deep Learning*,
#   OSDI'22. arXiv:2201.12023.
# - S. McCandlish, J. Kaplan, D. Amodei et al., *An Empirical Model of Large-Batch Training*, arXiv:1812.06162,
#   2018 — the critical batch size.
# - S. Lee, J. Oh, J. Kim, S. Go, J. Park, D. Mahajan, *Characterizing Compute-Communication Overlap in
#   GPU-Accelerated Distributed Deep Learning: Performance and Power Implications*, arXiv:2507.03114, 2025 — compute
#   18.9 % slower on average while communication overlaps it, at most 40 % (step 9's overlap scenario).
# - A published nccl-tests log of 2 × 8 H100 on InfiniBand: dstackai/dstack (MPL-2.0), in
#   `course_lib/data/nccl_tests/nebius_2x8xH100_ib_all_reduce.txt` (provenance in `course_lib/data/README.md`).
# - NVIDIA DGX H100 and H100 SXM datasheets: 8 GPUs per node, NVLink 4 at 900 GB/s, 8 × 400 Gb/s ConnectX-7,
#   989 TFLOP/s dense bf16, 80 GB HBM3.

# %% [markdown]
# ## What's next
#
# This is the last lesson of the chain. You can now take any model the planner can represent, a cluster and a
# batch, and plan a run: by hand for one candidate, with the search for all of them, and with scenarios for how
# much to trust the answer. Go back to the labs to practise the pieces under sliders ([Lab 3 · memory
# budget](../labs/03_memory_budget.ipynb) for step 4, [Lab 4 · pipeline schedule](../labs/04_pipeline_schedule.ipynb)
# for the bubble, [Lab 8 · measure collectives](../labs/08_measure_collectives.ipynb) for step 11), and plan your own
# model: replace `MODEL`, `CLUSTER` and `GLOBAL_BATCH` at the top of the worked example and run the notebook again.
