# ---
# jupyter:
#   course:
#     track: depth
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 10 · Serve a model: prefill, decode and the KV cache
#
# Lesson 04 budgeted a training step: one large batch, every collective amortised over thousands of tokens, and a
# backward pass to hide transfers under. Serving asks the same budget different questions. After the prompt, the
# model produces one token at a time for every sequence it serves, and each token pays for reading every weight and
# for two tensor-parallel all-reduces per layer, with nothing to hide them under. This lesson prices one serving
# replica, runs it as inference engines do, checks that model against a published benchmark, and sizes one 8-GPU
# node for a number of users.

# %% [markdown]
# ## What you'll learn
#
# **Learning objective:** *price a serving replica: the memory its weights and KV cache take, the time to the first
# token and between tokens, and the throughput a batch buys, and choose its partition for serving, not for training.*
#
# Along the way you will be able to:
#
# - tell prefill from decode and say why the first is compute-bound and the second memory- and latency-bound;
# - size the KV cache under grouped-query attention and find how many sequences fit next to the weights;
# - split one output token's time into weight reads, KV-cache reads, arithmetic and all-reduce latency, and find the
#   batch at which the arithmetic catches up with the reads and the $t$ past which more GPUs make a token slower;
# - explain why a plan that trains well (ZeRO-3, a pipeline) may serve poorly;
# - price an engine's iteration in bf16, FP8 or INT4 and count the [paged KV cache](glossary.ipynb#paged-kv-cache)'s
#   blocks;
# - read a concurrency sweep ([TTFT](glossary.ipynb#ttft), [ITL](glossary.ipynb#itl) and throughput against the
#   users), find its [knee](glossary.ipynb#knee), and size a node for N users with a band.

# %% [markdown]
# ## Prerequisites
#
# - [01 · Count the work](01_mac.ipynb): FLOPs of a matrix multiply and of a transformer layer; the roofline and
#   the ridge point.
# - [02 · Move the data](02_nccl.ipynb): the all-reduce, the α–β model, latency-bound against bandwidth-bound.
# - [04 · Budget the bytes](04_communication_budget.ipynb): the transfers of a partition, exposed against hidden
#   communication, the step time of a training plan.
#
# **Time to learn:** about 1.5 hours by the course's rule
# ([how it is counted](00_course_map.ipynb#How-long-each-part-takes)).

# %%
import dataclasses

import matplotlib.pyplot as plt
import numpy as np

from course_lib import budget, collectives, hardware, parallelism, serving, units, viz
from course_lib.serving import validation
from course_lib.widgets import quiz

# %% [markdown]
# ## Mechanism
#
# **Role.** A serving replica is a group of $t \cdot p$ GPUs that holds one copy of a trained model and answers
# requests; a service runs as many replicas as its traffic needs. Its partition is chosen for the time each user
# waits and the tokens per second each GPU produces.
#
# Generating text runs a model in two phases (Pope et al. 2022; the JAX scaling book's inference chapter):
#
# - The **prefill** pushes the prompt's $s$ tokens through the model at once: matrix multiplies of $b \cdot s$ rows,
#   like a training forward pass, so it is compute-bound. It writes every token's keys and values into the **KV
#   cache** (the keys and values of attention, kept per layer for every token so far) and samples the first output
#   token: its duration is the **time to first token** (TTFT).
# - The **decode** then produces one token per sequence per step: $b$ rows meet every weight matrix, and attention
#   reads the whole cache. It reads all the weights to do little arithmetic (memory-bound), and its tensor-parallel
#   all-reduces are so small that only their latency counts. Its duration is the **time per output token (TPOT)**.
#
# **The engine.** A replica serves many users whose requests arrive at different times. An inference engine (vLLM,
# TensorRT-LLM, SGLang) runs *iterations*, each one forward pass over a mixed batch (some prompt tokens being
# prefilled, one new token for every sequence that is decoding), so that one read of the weights serves them all:
#
# - **continuous batching** (Yu et al.'s Orca, 2022): the batch is rebuilt every iteration; a finished sequence
#   leaves and a waiting request joins at once;
# - a **paged KV cache** (Kwon et al.'s vLLM, 2023): the cache is cut into blocks of 16 tokens, given to a sequence
#   as it grows; a request is admitted only if its blocks are free, and when none are left a running request is
#   preempted (its cache dropped, to be recomputed later);
# - **chunked prefill** (Agrawal et al.'s Sarathi, 2023): a prompt is cut into chunks that share iterations with the
#   decodes, under a budget of prompt tokens per iteration, so a long prefill no longer stalls every decoding sequence.
#
# Under load a user sees the TTFT (now including any wait in the queue) and the **inter-token latency (ITL)**: a
# request's time from its first to its last token over its tokens after the first, the TPOT as a benchmark measures it.
#
# **Trade-off.** Decoding more sequences together shares each weight read among them: throughput rises almost for
# free until the arithmetic catches up with the reads, while each sequence's tokens come a little slower and its KV
# cache takes memory. More GPUs per replica divide the reads but add latency-bound all-reduces.
#
# **Why it matters for AI.** Training amortises each collective over $b \cdot s$ tokens; decoding pays two
# all-reduces per layer for every token. A partition that trains efficiently may serve poorly.

# %% [markdown]
# ## The science
#
# ### The KV cache
#
# A K and a V for each layer and each KV head, for every token of context: per sequence of $n_\text{ctx}$ cached tokens
#
# $$M_\text{KV} = 2 \cdot l \cdot n_{kv} \cdot d_\text{head} \cdot n_\text{ctx} \cdot 2\text{ bytes (bf16)}$$
#
# with $n_{kv}$ key-value heads of $d_\text{head} = h/a$ values each ([glossary](glossary.ipynb#kv-heads)). Under
# **grouped-query attention (GQA)** several query heads share one KV head, so $n_{kv} < a$ and the cache shrinks by
# $a / n_{kv}$. A replica holds its share of the weights, the caches of its sequences and one step's activations; no
# gradients, no optimizer state.
#
# ### One decode step
#
# Each GPU of a replica of $t$ GPUs runs two rooflines (lesson 01), one per kind of operation, plus its all-reduces:
#
# $$T_\text{token} = \max\!\left(\frac{2\,\Psi_\text{mm}}{t\,B_\text{HBM}},\ \frac{2\,b\,\Psi_\text{mm}}{t\,\eta R}\right)
#   + \frac{b\,M_\text{KV}}{t\,B_\text{HBM}} + 2\,l\;T_\text{AR}\!\left(b \cdot h \cdot 2\text{ bytes}\right)$$
#
# The first term is the weight multiplies: reading the $\Psi_\text{mm}$ weights a decode step multiplies by
# (2 bytes each) against their $2b$ FLOPs per weight at $\eta$ of the peak $R$. The second is the batch's KV cache,
# read at the HBM bandwidth $B_\text{HBM}$ (attention's arithmetic is far below any ridge point). The third is two
# all-reduces per layer of one token's activations per sequence, $T_\text{AR}$ as NCCL runs it (lesson 02):
# latency-bound, a launch floor plus $n\alpha$. The multiplies catch up with the weight reads at the batch
#
# $$b^* = \frac{R}{B_\text{HBM}} \cdot \frac{2\text{ bytes}}{2\text{ FLOPs}} \cdot \eta$$
#
# (the ridge point of lesson 01, per parameter): below it, decoding more sequences together is nearly free.
# The time to first token is the prefill's compute, $2\,\Psi_\text{mm}\,s$ FLOPs plus causal attention, at $\eta R$
# on $t$ GPUs, plus its all-reduces of $s \cdot h \cdot 2$ bytes, large enough to be bandwidth-bound.
#
# ### One engine iteration
#
# An engine's iteration is the decode step generalised to $b_\text{iter}$ rows, its prompt tokens plus its decoding
# sequences, with the weights at their own precision:
#
# $$T_\text{iter} = \max\!\left(\frac{M_\text{weights}}{\eta_\text{HBM} B_\text{HBM}},\ \frac{2\,b_\text{iter}\,\Psi_\text{mm}}{t\,\eta R}\right)
#   + \frac{M_\text{KV,batch}}{\eta_\text{HBM} B_\text{HBM}} + 2\,l\;T_\text{AR}\!\left(b_\text{iter} \cdot h \cdot 2\text{ bytes}\right)$$
#
# $M_\text{weights}$ is a GPU's share of the weights (2 bytes a weight in bf16, 1 in FP8, half a byte in INT4),
# $M_\text{KV,batch}$ the cache its decoding sequences read (1 byte a value in FP8), $\eta_\text{HBM}$ the share of
# the datasheet's HBM bandwidth an engine reaches and $\eta$ the share of the precision's peak $R$ (an H100's FP8
# peak is twice its bf16 one; INT4 weights are multiplied in bf16). Inside a node $T_\text{AR}$ is the engine's own
# one-shot or two-shot all-reduce kernel (`serving.custom_all_reduce_time_s`). The paged cache holds
# $\lfloor (0.9\,M_\text{HBM} - M_\text{weights} - M_\text{act}) / M_\text{block} \rfloor$ blocks on each GPU (vLLM
# gives the cache what 90 % of the memory leaves, `gpu_memory_utilization`); a sequence of $n$ tokens holds
# $\lceil n/16 \rceil$ of them. A mixture of experts (lesson 06) reads, per layer, only the experts its $b_\text{iter}$
# tokens visit: with $E$ experts, $k_E$ of them per token and uniform routing, $E\,(1 - (1 - k_E/E)^{b_\text{iter}})$
# (`serving.expected_experts_visited`). With few experts, as in Mixtral 8x7B (8 experts, 2 per token), a few dozen
# tokens an iteration already visit nearly all of them: a mixture of experts saves decode's bytes at small batches only.
#
# ### Variables
#
# | Symbol | Code name | Meaning | Unit |
# |---|---|---|---|
# | $b$ | `sequences` | sequences decoded together (the batch) | – |
# | $n_\text{ctx}$ | `context_len` | tokens in a sequence's cache (prompt + generated) | tokens |
# | $n_{kv}$, $d_\text{head}$ | `kv_heads`, `head_dim` | key-value heads, values per head | – |
# | $\Psi_\text{mm}$ | `serving.matmul_params` | weights a decode step multiplies by | parameters |
# | $B_\text{HBM}$ | `memory_bandwidth_bytes_per_s` (an accelerator's `hbm_bandwidth_bytes_per_s`) | the accelerator's HBM bandwidth | bytes/s |
# | $R$ | `peak_flops_per_s` | the accelerator's peak FLOP/s at the precision | FLOP/s |
# | $\eta$ | `compute_efficiency` | the share of the peak the multiplies reach | – |
# | $T_\text{AR}$ | `budget.group_collective_time` | one all-reduce as NCCL runs it | s |
# | $b_\text{iter}$ | `prefill_tokens + decode_sequences` | an engine iteration's rows | – |
# | $\eta_\text{HBM}$ | `hbm_bandwidth_fraction` | share of the HBM bandwidth an engine reaches | – |
# | $M_\text{weights}$, $M_\text{KV,batch}$ | `serving_weight_bytes_per_device`, `kv_cache_bytes_per_device` | weights, cache read per GPU | bytes |
# | $M_\text{KV}$ | `kv_cache_bytes` | one sequence's KV cache | bytes |
# | $M_\text{act}$, $M_\text{block}$ | `decode_activation_bytes`, `kv_block_bytes` | one step's activations, one KV block | bytes |
# | $T_\text{token}$, $T_\text{iter}$ | `time_per_output_token_s`, `iteration_time` | time per output token, one engine iteration's time | s |
#
# *Assumptions:* steps 1–6 price one batch of sequences in flight, all at the same context length, with
# $\eta = 0.5$ for prefill and decode alike (`serving.DECODE_COMPUTE_EFFICIENCY`, a stated assumption), bf16 weights
# and cache and the full datasheet bandwidth: the uncalibrated model. From step 7 on, the engine's model
# (`serving.iteration_time`) prices each iteration with the measured and fitted efficiencies, and its scheduler
# (`serving.simulate_engine`) replays requests arriving at different times. The replica's GPUs are adjacent, tensor
# ranks innermost.

# %% [markdown]
# ## Worked example
#
# ### Step 1 · The same all-reduce in training and in decoding
#
# The tensor-parallel all-reduce shows the difference first. In training (and prefill) it carries $b \cdot s \cdot h$
# activations: 50.3 MB for one GPT-3 sequence of 2048 tokens. In decoding each new token is one position, so the same
# all-reduce carries $b \cdot h \cdot 2$ bytes, 24.6 kB at batch 1. Both, with the α–β model on the NVLink of
# Selene's A100 nodes (lesson 04's cluster):

# %%
MODEL = parallelism.GPT3_175B
SELENE = hardware.SELENE_3072
training_payload = parallelism.ACTIVATION_BYTES * 1 * MODEL.seq_len * MODEL.hidden
decode_payload = parallelism.ACTIVATION_BYTES * 1 * MODEL.hidden
nvlink_bw = SELENE.intra_bandwidth_bytes_per_s
nvlink_alpha = SELENE.intra_node_link.latency_s
for label, payload in (("training, b·s·h·2", training_payload), ("decode, b·h·2", decode_payload)):
    report = collectives.collective_report("all_reduce", 8, payload, nvlink_bw, nvlink_alpha)
    print(
        f"{label:18} {units.format_bytes(payload):>8}: latency n·α = {report.phases} × "
        f"{units.format_time(nvlink_alpha)} = {units.format_time(report.latency_term_s):>6}, "
        f"bandwidth Q/B = {units.format_time(report.bandwidth_term_s):>7}, {report.regime}"
    )
print(
    f"latency–bandwidth crossover for 8 ranks: {units.format_bytes(report.crossover_bytes)}, which the decode "
    f"all-reduce reaches at b = {report.crossover_bytes / decode_payload:.0f} sequences"
)

# %% [markdown]
# The training all-reduce is bandwidth-bound (the bandwidth term is 20 times the latency term); the decode all-reduce is
# the opposite, a hundred times more latency than transfer, and stays latency-bound until about a hundred sequences
# are decoded together.
#
# ### Step 2 · The memory of a replica
#
# The rest of the lesson serves Llama 3.1 70B (80 layers, 64 query heads that share 8 KV heads: grouped-query
# attention) on H100s with `course_lib.serving`. First the memory: the bf16 weights and, per sequence,
# $2 \cdot l \cdot n_{kv} \cdot d_\text{head}$ values per token of context.

# %%
SERVE_MODEL = parallelism.LLAMA3_70B
H100_NODE = hardware.DGX_H100
SERVE_CLUSTER = dataclasses.replace(H100_NODE, name="4 × DGX H100", nodes=4)  # four such nodes on InfiniBand
shape = (SERVE_MODEL.layers, SERVE_MODEL.kv_heads, SERVE_MODEL.head_dim)
kv_per_token = serving.kv_cache_bytes(*shape, context_len=1, sequences=1)
kv_8k = serving.kv_cache_bytes(*shape, context_len=8192, sequences=1)
kv_8k_all_heads = serving.kv_cache_bytes(SERVE_MODEL.layers, SERVE_MODEL.heads, SERVE_MODEL.head_dim, 8192, 1)
print(
    f"KV cache per token: {SERVE_MODEL.layers} layers × 2 (K and V) × {SERVE_MODEL.kv_heads} KV heads × "
    f"{SERVE_MODEL.head_dim} × 2 bytes = {units.format_bytes(kv_per_token)}"
)
print(
    f"one sequence of 8192 tokens: {units.format_bytes(kv_8k)} "
    f"(a K and a V for each of the {SERVE_MODEL.heads} query heads: {units.format_bytes(kv_8k_all_heads)})"
)
print(f"weights in bf16: {units.format_bytes(serving.weight_bytes_per_device(SERVE_MODEL.params))}")
for t in (8, 16):
    fit = serving.max_sequences_that_fit(SERVE_MODEL, hardware.H100, t, 1, 8192)
    print(f"t = {t:>2}: {fit} sequences of 8192 tokens fit next to the weights on 80 GB H100s")
fit_8 = serving.max_sequences_that_fit(SERVE_MODEL, hardware.H100, 8, 1, 8192)
memory_8 = serving.serving_memory(SERVE_MODEL, 8, 1, sequences=fit_8, context_len=8192)
print(
    f"serving_memory at t = 8 with those {fit_8}: weights {units.format_bytes(memory_8.weights)} + KV cache "
    f"{units.format_bytes(memory_8.kv_cache)} + activations {units.format_bytes(memory_8.activations)} = "
    f"{units.format_bytes(memory_8.total)} per GPU"
)

# %% [markdown]
# Grouped-query attention divides the cache by eight: with a K and V per query head, one long conversation would
# hold more than a quarter of an H100. The weights alone need two H100s; from $t = 8$ on, the room left decides the
# batch (past $t = 8$ each rank keeps a copy of one KV head, so $t = 16$ does not double it).
# `serving.serving_memory(model, t, p, sequences, context_len)` adds up what one GPU holds; the largest batch is the
# last whose `total` fits.
#
# ### Step 3 · One request: prefill, then decode
#
# One request on one node ($t = 8$): a 1024-token prompt, then decode steps at 2048 tokens of context.

# %%
pre = serving.prefill(SERVE_MODEL, H100_NODE, 8, 1, prompt_len=1024)
one = serving.decode_step(SERVE_MODEL, H100_NODE, 8, 1, sequences=1, context_len=2048)
ridge_batch = serving.decode_compute_bound_sequences(
    H100_NODE.accelerator.peak("bf16"), H100_NODE.accelerator.hbm_bandwidth_bytes_per_s
)
print(
    f"prefill, 1024 tokens: matrix multiplies {units.format_time(pre.compute_s)} (at half of peak), "
    f"{2 * SERVE_MODEL.layers} all-reduces {units.format_time(pre.all_reduce_s)}: "
    f"time to first token {units.format_time(pre.time_to_first_token_s)}"
)
print(
    f"decode, 1 token: weight reads {units.format_time(one.weight_read_s)} vs their arithmetic "
    f"{units.format_time(one.matmul_compute_s)}; KV reads {units.format_time(one.kv_read_s)}; "
    f"{2 * SERVE_MODEL.layers} all-reduces: latency {units.format_time(one.all_reduce_latency_s)}, "
    f"bandwidth {units.format_time(one.all_reduce_bandwidth_s)}"
)
print(
    f"time per output token {units.format_time(one.time_per_output_token_s)} ({one.bound}-bound); "
    f"all-reduce latency is {units.format_percent(one.all_reduce_latency_s / one.time_per_output_token_s)} of it"
)
half_ridge_batch = ridge_batch * serving.DECODE_COMPUTE_EFFICIENCY
print(
    f"the multiplies alone take as long as the weight reads at a batch of {ridge_batch:.1f} sequences at full peak, "
    f"{half_ridge_batch:.1f} at the decode's half of peak: longer from {int(ridge_batch) + 1} and from "
    f"{int(half_ridge_batch) + 1} sequences on"
)
print(
    f"weights a decode step multiplies by (serving.matmul_params): {units.format_count(serving.matmul_params(SERVE_MODEL))}"
    f" of the {units.format_count(SERVE_MODEL.params)} parameters"
)
print(
    f"all-reduce payloads: prefill 1024 · h · 2 bytes = "
    f"{units.format_bytes(1024 * SERVE_MODEL.hidden * parallelism.ACTIVATION_BYTES)}, "
    f"decode h · 2 bytes = {units.format_bytes(SERVE_MODEL.hidden * parallelism.ACTIVATION_BYTES)}"
)

# %% [markdown]
# The prefill is a training forward pass: 1024 rows per matrix multiply, compute-bound, with bandwidth-bound
# all-reduces of 16.8 MB. A decode step reads every weight it multiplies by at 3.35 TB/s (`serving.matmul_params`:
# all but the input embedding table, of which it looks up only $b$ rows), and its arithmetic at half of peak
# (`serving.DECODE_COMPUTE_EFFICIENCY`) takes 150 times less time than those reads. It pays its two all-reduces per
# layer as pure latency: 3.17 ms for 160 of them (NCCL's ring with the LL protocol, 15 µs each: 6.6 µs per call and
# 0.6 µs for each of its 14 hops, plus a launch floor of 4.8 µs per call, fitted on measured logs in lesson 07).
# Both costs are per step, not per sequence, so decoding many sequences together is almost free until the arithmetic
# catches up with the reads. At
# full peak that is the H100's ridge point per parameter: at 295.2 sequences the multiplies take as long as the
# reads, and only a whole batch of 296 makes them take longer. At the decode's half of peak they catch up at 147.6,
# so from 148 sequences on.
#
# ### Step 4 · Latency against throughput
#
# Each point of the latency–throughput curve is a batch size, up to the largest whose caches fit: the time per
# output token against the tokens per second each GPU produces.

# %%
curve = serving.latency_throughput_curve(SERVE_MODEL, H100_NODE, 8, 1, context_len=4096)
print(f"{'batch':>6} {'per token':>10} {'tokens/s per GPU':>17} {'bound':>8}")
for b in (1, 16, 64, 256, int(curve.sequences[-1])):
    row = serving.decode_step(SERVE_MODEL, H100_NODE, 8, 1, b, 4096)
    print(
        f"{b:>6} {units.format_time(row.time_per_output_token_s):>10} "
        f"{units.format_count(row.tokens_per_s_per_device):>17} {row.bound:>8}"
    )
first, at_64 = (serving.decode_step(SERVE_MODEL, H100_NODE, 8, 1, b, 4096) for b in (1, 64))
print(
    f"1 → 64 sequences: time per token × {at_64.time_per_output_token_s / first.time_per_output_token_s:.2f}, "
    f"tokens/s per GPU × {at_64.tokens_per_s_per_device / first.tokens_per_s_per_device:.1f}"
)
fig, ax = plt.subplots(figsize=(7, 4.2), layout="constrained")
viz.plot_latency_throughput(curve, at_64, ax=ax)
plt.show()

# %% [markdown]
# From 1 to 64 sequences the time per token grows 1.62-fold while the tokens per GPU grow 39.6-fold; past a few
# hundred, the KV reads (each sequence reads its own cache) take over, and even the 371 sequences whose caches fit
# leave the step memory-bound. Serving trades latency for throughput along this curve; training has no such curve.
#
# ### Step 5 · The t at which decode latency stops falling
#
# For one sequence, more tensor parallelism divides the weight reads by $t$ but adds latency-bearing steps to each of
# the 160 all-reduces per token, and past 8 GPUs the group leaves the NVLink node and pays InfiniBand's 5 µs steps. On
# four DGX H100 nodes ($t = 1$ and 2 do not fit):

# %%
ts = np.array([4, 8, 16, 32])
sweep = serving.decode_step(SERVE_MODEL, SERVE_CLUSTER, ts, 1, sequences=1, context_len=4096)
print(f"{'t':>3} {'weight reads':>13} {'KV reads':>9} {'all-reduce α':>13} {'all-reduce Q/B':>15} {'per token':>10}")
for i, t in enumerate(ts):
    print(
        f"{t:>3} {units.format_time(sweep.weight_read_s[i]):>13} {units.format_time(sweep.kv_read_s[i]):>9} "
        f"{units.format_time(sweep.all_reduce_latency_s[i]):>13} "
        f"{units.format_time(sweep.all_reduce_bandwidth_s[i]):>15} "
        f"{units.format_time(sweep.time_per_output_token_s[i]):>10}"
    )
best_t = serving.latency_optimal_tensor_parallel(SERVE_MODEL, SERVE_CLUSTER, sequences=1, context_len=4096)
print(f"lowest time per output token at t = {best_t}")
print(
    f"t = 16 → 32: weight reads {units.format_time(sweep.weight_read_s[2] - sweep.weight_read_s[3])} shorter, "
    f"all-reduce latency {units.format_time(sweep.all_reduce_latency_s[3] - sweep.all_reduce_latency_s[2])} longer"
)

# %% [markdown]
# Going from 16 to 32 GPUs saves 1.27 ms of weight reads and adds 1.6 ms of all-reduce latency: the latency term
# overtakes the shrinking reads, and the time per token rises again. The bandwidth term stays small beside them
# (367 µs per token at $t = 32$, for 160 all-reduces of 16.4 kB).
#
# ### Step 6 · A plan that trains well and serves poorly
#
# Three training plans for this model on the same 32 GPUs (global batch 64 sequences of 8192 tokens), all of which
# fit: ZeRO-3 over all 32 GPUs; $t = 8$ with ZeRO-3 over $d = 4$ (the fastest plan lesson 05's search finds); and
# $t = 8$ with an interleaved pipeline of $p = 4$. `serving.compare_training_and_serving` times each one's step
# (lesson 04's budget, uncalibrated) next to a serving replica of its $t \cdot p$ GPUs with 8 sequences of 4096 tokens.

# %%
common = dict(micro_batch=1)
candidate_plans = {
    "ZeRO-3, d = 32": parallelism.ParallelPlan(
        data_parallel=32, zero_stage=3, grad_accum_steps=2, recompute="full", **common
    ),
    "t = 8, ZeRO-3 d = 4": parallelism.ParallelPlan(
        data_parallel=4,
        tensor_parallel=8,
        zero_stage=3,
        grad_accum_steps=16,
        recompute="selective",
        sequence_parallel=True,
        **common,
    ),
    "t = 8, p = 4": parallelism.ParallelPlan(
        tensor_parallel=8,
        pipeline_parallel=4,
        zero_stage=1,
        grad_accum_steps=64,
        schedule="interleaved",
        virtual_stages=4,
        recompute="selective",
        sequence_parallel=True,
        **common,
    ),
}
compared = {
    name: serving.compare_training_and_serving(
        SERVE_MODEL, plan, SERVE_CLUSTER, sequences=8, context_len=4096, prompt_len=1024
    )
    for name, plan in candidate_plans.items()
}
print(
    f"{'plan':20} {'train step':>10} {'tokens/s/GPU':>12} │ {'replica':>7} {'fits':>5} {'first token':>11} "
    f"{'per token':>10} {'tokens/s/GPU':>12}"
)
for name, both in compared.items():
    plan = candidate_plans[name]
    print(
        f"{name:20} {units.format_time(both.training.total_s):>10} "
        f"{units.format_count(both.training_tokens_per_s_per_device):>12} │ "
        f"{plan.tensor_parallel * plan.pipeline_parallel:>4} GPU {'yes' if both.serving_fits else 'no':>5} "
        f"{units.format_time(both.time_to_first_token_s):>11} {units.format_time(both.time_per_output_token_s):>10} "
        f"{units.format_count(both.serving_tokens_per_s_per_device):>12}"
    )
serve_search = budget.search_plans(SERVE_MODEL, SERVE_CLUSTER, global_batch=64, calibration=None)
fastest = serve_search.plan(0)
print(
    f"the search's fastest plan: d = {fastest.data_parallel}, t = {fastest.tensor_parallel}, "
    f"p = {fastest.pipeline_parallel}, ZeRO-{fastest.zero_stage}"
)
zero3 = compared["ZeRO-3, d = 32"]
print(f"ZeRO-3, d = 32 in training: bound by {zero3.training.binding_constraint}")
print(
    f"ZeRO-3 kept sharded while serving: all-gather {units.format_bytes(zero3.serving_memory.weights)} of weights "
    f"for every token, {units.format_time(zero3.zero3_gather_per_token_s)} per token"
)

# %% [markdown]
# All three train within a second of each other (19.5 s to 20.1 s), and ZeRO-3 over 32 GPUs is even compute-bound: its
# gathers hide under two micro-batches of 8192 tokens each. Served, they differ by orders of magnitude:
#
# - **ZeRO-3, d = 32 serves poorly.** Its replica is one GPU ($t = p = 1$), which cannot hold 141 GB of weights; kept
#   sharded, it would all-gather them for every token, 369 ms per token against 9.02 ms for a $t = 8$ replica. In
#   training one gather feeds 8192 tokens of each micro-batch; in decoding it feeds one.
# - **The pipeline serves a quarter as much.** With one batch in flight the four stages take turns on every token, so
#   the latency is that of $t = 8$ alone (plus three sends) while three quarters of the GPUs wait: 27.6 tokens/s per
#   GPU against 111. Only several batches in flight, each with its own KV cache, fill it.
#
# With step 5: by the datasheet's links the lowest decode latency for one sequence is at $t = 16$ (two nodes;
# the published logs of lesson 07 favour $t = 8$), and the ZeRO-3 plan that trains well is the one that serves
# worst.

# %% [markdown]
# ### Step 7 · Precision: FP8 and INT4 weights, an FP8 cache
#
# From here on, the engine's model: `serving.iteration_time(model, cluster, t, weights=..., kv_cache=...)` prices one
# iteration from its rows, with the efficiencies engines reach (`serving.DEFAULT_EFFICIENCY`), and
# `serving.kv_cache_blocks` counts the paged cache's blocks. Llama 3.1 70B on one DGX H100 ($t = 8$): a decode
# iteration of 64 sequences at 2048 cached tokens, and a prefill of 8192 prompt tokens alone, in each precision:

# %%
ENGINE = serving.DEFAULT_EFFICIENCY
print(f"engine efficiencies: {ENGINE.name}")
print(
    f"  HBM bandwidth reached η_HBM = {units.format_percent(ENGINE.hbm_bandwidth_fraction)}, GEMMs at "
    f"η = {units.format_percent(ENGINE.gemm_efficiency)} of peak, all-reduce: {ENGINE.all_reduce}, "
    f"{units.format_time(ENGINE.iteration_overhead_s)} per iteration"
)
PRECISIONS = (("bf16", "bf16"), ("fp8", "bf16"), ("fp8", "fp8"), ("int4", "fp8"))
print(
    f"{'weights':>7} {'KV':>5} {'weights/GPU':>11} {'KV blocks':>9} {'decode ×64':>10} {'of which reads':>14} {'prefill 8192':>12}"
)
for weights, kv in PRECISIONS:
    cost = serving.iteration_time(SERVE_MODEL, H100_NODE, 8, weights=weights, kv_cache=kv)
    blocks = serving.kv_cache_blocks(SERVE_MODEL, hardware.H100, 8, weights=weights, kv_cache=kv)
    step = cost.breakdown(0, 0, 64, 64 * 2048)
    stored, _ = serving.serving_weight_bytes_per_device(SERVE_MODEL, 8, weights=weights)
    print(
        f"{weights:>7} {kv:>5} {units.format_bytes(stored):>11} {units.format_count(blocks):>9} "
        f"{units.format_time(step.time_s):>10} {units.format_time(step.weight_read_s + step.kv_read_s):>14} "
        f"{units.format_time(cost(8192, 8192 * 8193 // 2, 0, 0)):>12}"
    )

# %% [markdown]
# Decode is a read, so it speeds up with the bytes: FP8 weights halve the weight reads, an FP8 cache halves the
# cache reads and doubles the blocks, INT4 weights halve the weight reads again. The prefill is arithmetic: FP8
# multiplies run at twice the bf16 peak, while INT4 weights are multiplied in bf16, which leaves the prefill as slow
# as in bf16. (FP8 needs a Hopper GPU or later: on an A100, `weights="fp8"` raises `ValueError`.)
#
# ### Step 8 · The paged KV cache: blocks, and what fits
#
# With FP8 weights and cache, how many requests of 2048 prompt tokens and 128 output tokens fit at once, and what a
# cache that reserved each request's longest possible context (8192 tokens, say) would hold instead:

# %%
blocks = serving.kv_cache_blocks(SERVE_MODEL, hardware.H100, 8, weights="fp8", kv_cache="fp8")
per_request = serving.blocks_per_sequence(2048 + 128)
print(
    f"{units.format_count(blocks)} blocks of 16 tokens; a request of 2048 + 128 tokens holds {per_request} of them "
    f"(⌈2176 / 16⌉): {serving.max_sequences_in_blocks(blocks, 2048 + 128)} such requests fit at once"
)
print(
    f"reserving 8192 tokens for each: {serving.max_sequences_in_blocks(blocks, 8192)} requests; "
    f"vLLM's default cap max_num_seqs = {serving.ENGINES['vllm'].max_num_seqs}"
)

# %% [markdown]
# Paging holds what the requests use, not what they might: 1512 requests of this length fit, against 401 if each
# reserved 8192 tokens. Both exceed the 256 sequences vLLM runs at once by default (`max_num_seqs`), so here the
# engine caps the batch; with prompts of tens of thousands of tokens the cache binds, and the scheduler preempts.
#
# ### Step 9 · Continuous batching and chunked prefill: one run
#
# `serving.simulate_engine` replays an engine's scheduler request by request (vLLM's: continuous batching, the paged
# cache with preemption, chunked prefill), stepping the clock by the cost of each iteration. Sixteen users, each
# sending a request of 2048 prompt tokens and 128 output tokens and the next one as soon as it is answered, 64
# requests in all, on the FP8 replica of step 8, under four schedules:

# %%
fp8_cost = serving.iteration_time(SERVE_MODEL, H100_NODE, 8, weights="fp8", kv_cache="fp8")
SCHEDULES = {
    "prefill first, no chunks": dict(chunked_prefill=False),
    "chunks, 8192 tokens an iteration": dict(),
    "chunks, 2048 tokens an iteration": dict(max_num_batched_tokens=2048),
    "chunks, 512 tokens an iteration": dict(max_num_batched_tokens=512),
}
print(f"{'schedule':33} {'TTFT':>8} {'ITL':>8} {'longest gap':>11} {'tokens/s':>8}")
runs = {}
for name, options in SCHEDULES.items():
    runs[name] = run = serving.simulate_engine(
        fp8_cost, kv_blocks=blocks, prompt_tokens=2048, output_tokens=128, requests=64, concurrency=16, **options
    )
    print(
        f"{name:33} {units.format_time(run.median_ttft_s):>8} {units.format_time(run.median_itl_s):>8} "
        f"{units.format_time(np.nanmax(run.max_itl_s)):>11} {units.format_count(run.output_tokens_per_s):>8}"
    )
first = runs["chunks, 8192 tokens an iteration"]
print("the default's first six iterations:")
print(f"  sequences {first.iteration_sequences[:6].tolist()}")
print(f"  times     {[units.format_time(x) for x in first.iteration_time_s[:6]]}")

# %% [markdown]
# TTFT and ITL are medians over the requests; the longest gap is the longest wait any user saw between two of its
# tokens. The first iterations show **continuous batching**: the sixteen prompts arrive together, the first iteration
# prefills four of them (4 × 2048 tokens fill its budget of 8192), the second four more while the first four decode,
# and so on; from the fifth on, the iterations are decode steps of 16 sequences, and each request that finishes is
# replaced at once by its user's next one. Without chunks an iteration that admits prompts runs only prefills, so the
# first four users wait 644 ms for their second token. With chunks every decode shares its iteration with the
# prefills, and the budget sets the stall: an iteration with 8192 prompt tokens takes 212 ms, and smaller budgets cut
# the longest gap to 57.7 ms and 27.2 ms, at a little throughput (each iteration reads the weights for fewer rows).
#
# ### Step 10 · The concurrency sweep: latency, throughput and the knee
#
# The curve engines publish: the same replica and requests at 1 to 512 concurrent users, each concurrency a
# closed-loop run of the scheduler (`serving.concurrency_sweep_report`, the sweep lab 6 draws). The **knee** is the
# smallest concurrency whose throughput reaches 90 % of the sweep's highest (`knee_concurrency`): past it, more users
# buy little throughput and mostly wait.

# %%
report = serving.concurrency_sweep_report(
    SERVE_MODEL, H100_NODE, 8, weights="fp8", kv_cache="fp8", prompt_tokens=2048, output_tokens=128, concurrency=64
)
sweep = report.sweep
print(f"{'users':>5} {'TTFT':>8} {'p90 TTFT':>8} {'ITL':>8} {'tokens/s':>8} {'requests/s':>10} {'in a batch':>10}")
for i, users in enumerate(sweep.concurrency):
    print(
        f"{users:>5} {units.format_time(sweep.median_ttft_s[i]):>8} {units.format_time(sweep.p90_ttft_s[i]):>8} "
        f"{units.format_time(sweep.median_itl_s[i]):>8} {units.format_count(sweep.output_tokens_per_s[i]):>8} "
        f"{sweep.requests_per_s[i]:>10.1f} {sweep.mean_batch_sequences[i]:>10.1f}"
    )
print(f"knee: {sweep.knee_concurrency} users (90 % of {units.format_count(sweep.output_tokens_per_s.max())} tokens/s)")
queued = 512 - serving.ENGINES["vllm"].max_num_seqs
print(
    f"at 512 users, {queued} wait for one of the 256 places: {queued} / {sweep.requests_per_s[-1]:.1f} requests/s = "
    f"{units.format_time(queued / sweep.requests_per_s[-1])} of queueing (Little's law)"
)
viz.plot_concurrency_sweep(report)
plt.show()

# %% [markdown]
# Up to a few dozen users the replica is the decode step of step 4 again: from 1 to 16 users the throughput grows
# sevenfold while the ITL only doubles. Then the batch's cache reads and arithmetic catch up with the weight reads,
# each added user slows every other, and the throughput flattens. Past 256 users the engine runs no more sequences at
# once (`max_num_seqs`), so the rest queue: the ITL and the throughput stay, and every added user waits in line, a
# TTFT that grows with the queue (Little's law: the requests waiting divided by the requests served per second). A
# service is sized left of that point, at the ITL its users accept.

# %% [markdown]
# ### Step 11 · The model against a published curve
#
# NVIDIA published the sweep of its inference service NIM (TensorRT-LLM underneath) for Llama 3.3 70B, the same
# architecture as Llama 3.1 70B, in FP8 on two H100s ($t = 2$), requests of 200 prompt and 200 output tokens at 1 to
# 250 users (`serving.published`, with its source). The engine's efficiencies were measured or fitted on *other*
# rows (two constants, on Llama 3.1 8B's published rows only): this curve judges the model. The ITL is the
# validation's steady state (`serving.validation`); TTFT and throughput come from the scheduler, run with
# TensorRT-LLM's defaults.

# %%
trt = serving.ENGINES["tensorrt-llm"]
print(
    f"fitted on: {'; '.join(' '.join(rule.values()) for rule in validation.FIT_ROWS)} — gemm_efficiency "
    f"{ENGINE.gemm_efficiency}, iteration_overhead_s {units.format_time(ENGINE.iteration_overhead_s)}"
)
replay = validation.replay_published_serving()
nim = [
    i
    for i, row in enumerate(replay.rows)
    if row.source == "nim-1.8.0" and row.model == "Llama 3.3 70B" and row.input_tokens == 200
]
nim_cost = serving.iteration_time(SERVE_MODEL, H100_NODE, 2, weights="fp8", kv_cache="fp8", engine="tensorrt-llm")
nim_blocks = serving.kv_cache_blocks(
    SERVE_MODEL, hardware.H100, 2, weights="fp8", kv_cache="fp8", block_size_tokens=trt.block_size_tokens,
    free_gpu_memory_fraction=trt.memory_fraction,
)  # fmt: skip
print(f"{'users':>5} │ {'ITL':>7} {'model':>7} {'error':>7} │ {'tokens/s':>8} {'model':>6} │ {'TTFT':>7} {'model':>7}")
for i in nim:
    row = replay.rows[i]
    itl = replay.predicted[(replay.row == i) & (replay.kind == "itl")][0]
    run = serving.simulate_engine(
        nim_cost, kv_blocks=nim_blocks, block_size_tokens=trt.block_size_tokens, prompt_tokens=200,
        output_tokens=200, requests=max(10 * row.concurrency, 50), concurrency=row.concurrency,
        max_num_seqs=trt.max_num_seqs,
    )  # fmt: skip
    print(
        f"{row.concurrency:>5} │ {units.format_time(row.itl_s):>7} {units.format_time(itl):>7} "
        f"{units.format_percent(itl / row.itl_s - 1):>7} │ "
        f"{units.format_count(row.output_tokens_per_s):>8} {units.format_count(run.output_tokens_per_s):>6} │ "
        f"{units.format_time(row.ttft_s):>7} {units.format_time(run.median_ttft_s):>7}"
    )
print("held-out rows, error = model / measured − 1:")
BAND = {}
for kind in validation.KINDS:
    chosen = (replay.kind == kind) & (replay.reason == "") & ~replay.fitted
    BAND[kind] = np.percentile(replay.error[chosen], [10, 90])
    median, rows = replay.median_abs_error(kind)
    print(
        f"  {kind:10} {rows:>3} rows: median |error| {units.format_percent(median)}, p10 to p90 "
        f"{units.format_percent(BAND[kind][0])} to {units.format_percent(BAND[kind][1])}"
    )

# %% [markdown]
# The inter-token latency follows the published curve, from 18.8 ms at one user to 48.2 ms at 250, on the short
# side throughout (16.8 ms to 42.2 ms): engines reach less of the HBM bandwidth on this model than on the 8B rows the
# constants were fitted on. The throughput is high by as much. The TTFT is what the model gets least right under
# load: its simulated users, whose requests all have one length, stay in step and send their prompts together, while
# the measured users drift apart. Over the 29 held-out concurrency rows the ITL's median error is 14.5 %, always
# short (−25.7 % to −9.7 %, p10 to p90): the band the capstone uses (`make validate` prints the whole table).
#
# ## Serving capstone: Llama 3.1 70B on 8 H100s for N users
#
# *How many users can one DGX H100 serve with Llama 3.1 70B, each reading its answer at no less than 20 tokens a
# second (an ITL of at most 50 ms), and how many tokens a second does the node make?* Requests of 2048 prompt and 128
# output tokens, FP8 weights and cache, vLLM. The node can run one replica of $t = 8$, two of $t = 4$ or four of
# $t = 2$; each is swept, and each swept concurrency kept if its ITL, raised by the validation's error band (the
# held-out rows measured 1 / (1 + p90 error) to 1 / (1 + p10 error) times the model's ITL), stays under 50 ms.

# %%
TARGET_ITL_S = 50 * units.MS
print(f"target: an ITL of at most {units.format_time(TARGET_ITL_S)}, {1 / TARGET_ITL_S:.0f} tokens a second per user")
slow, fast = 1 / (1 + BAND["itl"][0]), 1 / (1 + BAND["itl"][1])  # measured ITL ÷ the model's, p10 and p90 rows
low, high = 1 / (1 + BAND["throughput"][1]), 1 / (1 + BAND["throughput"][0])  # measured tokens/s ÷ the model's
print(
    f"measured ITL = {fast:.2f} to {slow:.2f} × the model's; measured throughput = {low:.2f} to {high:.2f} × the model's"
)
CAPSTONE_LEVELS = [8, 16, 24, 32, 48, 64, 96, 128]
print(f"{'split':>10} {'users (band)':>13} {'model ITL':>9} {'tokens/s':>8} {'band':>12}")
answers = {}
for t in (8, 4, 2):
    cost = serving.iteration_time(SERVE_MODEL, H100_NODE, t, weights="fp8", kv_cache="fp8")
    node_blocks = serving.kv_cache_blocks(SERVE_MODEL, hardware.H100, t, weights="fp8", kv_cache="fp8")
    swept = serving.concurrency_sweep(
        cost, CAPSTONE_LEVELS, kv_blocks=node_blocks, prompt_tokens=2048, output_tokens=128, requests=256
    )
    replicas = 8 // t
    safe = np.flatnonzero(swept.median_itl_s * slow <= TARGET_ITL_S)[-1]  # the pessimistic end of the band
    hopeful = np.flatnonzero(swept.median_itl_s * fast <= TARGET_ITL_S)[-1]
    answers[t] = (replicas * swept.concurrency[safe], replicas * swept.output_tokens_per_s[safe])
    print(
        f"{replicas} × t = {t} {replicas * swept.concurrency[safe]:>5} ({replicas * swept.concurrency[hopeful]:>3}) "
        f"{units.format_time(swept.median_itl_s[safe]):>9} {units.format_count(answers[t][1]):>8} "
        f"{units.format_count(low * answers[t][1]):>5} to {units.format_count(high * answers[t][1]):>4}"
    )

# %% [markdown]
# **The answer.** One DGX H100 serves about **64 users** with Llama 3.1 70B in FP8 at an ITL of at most 50 ms,
# whichever way it is split, and up to 96 if the engine does as well as the best held-out rows (the band is the
# sweep's levels: 64 means "at least 64, fewer than 96"). Two replicas of $t = 4$ make the most tokens, about 1970
# a second (1380 to 2120 with the throughput's band): at this load the ITL is set by the batch, not by the
# all-reduces of step 5, and two replicas each decode half the users with smaller all-reduce groups.
#
# **What to measure first.** The ITL at the answer's load on the real engine: vLLM's serving benchmark with 64
# concurrent users (`--max-concurrency 64`) and requests of 2048 and 128 tokens, on the chosen split. That one number
# replaces the band: it says whether the HBM share and the cost per iteration, fitted on an 8B model, hold for this
# one. Then the KV blocks the engine reports at start-up, against step 8's, and the TTFT under load if the first token
# matters.

# %% [markdown]
# ## Figures
#
# ### Latency-bound and bandwidth-bound all-reduce on NVLink
#
# The time of one 8-rank all-reduce against its payload, for the algorithms of lesson 02, on Selene's NVLink; the
# dot marks GPT-3's 24.6 kB decode payload. The training payload, 50.3 MB, lies far to the right of the crossover.

# %%
fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
viz.plot_collective_time_vs_payload(
    op="all_reduce",
    ranks=8,
    bandwidth_bytes_per_s=nvlink_bw,
    latency_s=nvlink_alpha,
    payload_range_bytes=(1e3, 1e9),
    mark_payload_bytes=decode_payload,
    ax=ax,
)
plt.show()

# %% [markdown]
# Left of the crossover the number of phases decides: recursive doubling's $\lg p = 3$ phases beat the ring's 14 for
# the decode payload. Right of it the bytes decide and the ring is optimal. (These are the textbook algorithms;
# lesson 02 shows what NCCL runs instead, and NCCL picks its algorithm per call.)

# %% [markdown]
# ## Misconception
#
# > *A decode all-reduce moves only a few kilobytes, so on NVLink it costs nothing.*
#
# The bytes are indeed nothing: step 3's bandwidth term for 160 all-reduces of 16.4 kB is a fraction of the
# latency. But an all-reduce is a chain of dependent steps, each paying its latency, and a token pays 160 of them one
# after the other: step 3 prints their share, more than a third of every token (37.7 %). What a small collective costs
# is its number of steps times α (and the launch floor), which no aggregate link rate tells.

# %% [markdown]
# ## Self-check
#
# Pick an answer and press *Check*.

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="A replica decodes 16 sequences instead of 1, far below the batch at which the multiplies catch up "
        "with the weight reads. What happens to the time per output token and to the tokens per second?",
        options=(
            "Both stay the same: the replica is memory-bound",
            "The time per token grows a little (16 KV caches to read); the tokens per second grow almost 16-fold",
            "The time per token grows 16-fold; the tokens per second stay the same",
        ),
        answer=1,
        explanation="The weight reads and the all-reduces are per step, shared by every sequence of the batch; only "
        "each sequence's own KV cache and its arithmetic add to the step.",
    )
)

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="ZeRO-3 over 32 GPUs trains Llama 3.1 70B as fast as t = 8 with ZeRO-3 over d = 4. Why does it serve "
        "far worse?",
        options=(
            "Its replica is one GPU that cannot hold the weights; kept sharded, it all-gathers them for every token",
            "ZeRO-3 needs more KV cache than tensor parallelism",
            "Serving cannot use data parallelism",
        ),
        answer=0,
        explanation="In training one all-gather of a layer's weights feeds every token of a micro-batch; in "
        "decoding it feeds one token per sequence, so the gathers dominate.",
    )
)

# %% [markdown]
# ## History
#
# - **2019: multi-query attention.** Shazeer let all query heads share one key and value head, shrinking the KV
#   cache every decode step reads; Ainslie et al.'s GQA (2023) generalised it to groups, as Llama 3 uses.
# - **2022: inference partitioned on purpose.** Pope et al. chose partitions for prefill and for decode separately
#   on TPU v4, with the latency–throughput trade-off as the object of the design. Yu et al.'s Orca scheduled
#   requests per iteration of the model rather than per batch.
# - **2023: the KV cache as paged memory.** Kwon et al.'s vLLM stored each sequence's cache in fixed-size blocks,
#   like an operating system's pages, so that far more sequences fit in the same memory.
# - **2023–2024: chunked prefill.** Agrawal et al.'s Sarathi and Sarathi-Serve cut prompts into chunks that ride
#   along with decodes, bounding the stall a prefill causes; vLLM's V1 engine schedules this way by default.

# %% [markdown]
# ## Summary
#
# - Serving runs a prefill (the prompt at once, compute-bound: the time to first token), then decode steps (one
#   token per sequence, reading every weight and the batch's KV cache: memory-bound).
# - The KV cache holds $2 \cdot l \cdot n_{kv} \cdot d_\text{head}$ values per token; grouped-query attention divides
#   it by $a/n_{kv}$, and the room left next to the weights sets the largest batch.
# - The batch shares each step's weight reads and all-reduces: throughput is almost free until the arithmetic
#   catches up with the reads (147.6 sequences for bf16 on an H100 at half of peak).
# - Two latency-bound all-reduces per layer per token: past some $t$ more GPUs make each token slower, and a plan
#   that trains well (ZeRO-3, a pipeline) may serve poorly.
# - An engine batches continuously, pages the cache and chunks prompts; FP8 and INT4 weights speed decode up by the
#   bytes they save. Past the knee more users mostly wait; past the running limit they queue.
# - The model's ITL is short by 9.7 % to 25.7 % (p10 to p90) on held-out published rows: size with that band, then
#   measure.

# %% [markdown]
# ## Exercises
#
# 1. **The pipeline's batches.** In step 6's pipeline replica ($p = 4$, $t = 8$, 8 sequences of 4096 tokens), how
#    many batches in flight (`batches_in_flight=` of `serving.decode_step`) bring the tokens per second per GPU back
#    to that of a $t = 8$ replica?
#
# <details>
# <summary>Answer</summary>
#
# 1. Four batches in flight bring the replica to 110.5 tokens/s per GPU against
#    110.9 for $t = 8$ alone (the three sends per token still cost a little); from five on each stage is busy all the
#    time and the two are equal. Four times the batches also means four times the KV caches in memory.
#
# </details>

# %% [markdown]
# ## Sources
#
# - R. Pope, S. Douglas, A. Chowdhery, J. Devlin, J. Bradbury, A. Levskaya, J. Heek, K. Xiao, S. Agrawal, J. Dean,
#   *Efficiently Scaling Transformer Inference*, MLSys 2023. arXiv:2211.05102. https://arxiv.org/abs/2211.05102
# - J. Austin et al., *How to Scale Your Model*, chapter "All About Transformer Inference" (the JAX scaling book).
#   https://jax-ml.github.io/scaling-book/inference/
# - N. Shazeer, *Fast Transformer Decoding: One Write-Head is All You Need*, 2019. arXiv:1911.02150.
# - J. Ainslie, J. Lee-Thorp, M. de Jong, Y. Zemlyanskiy, F. Lebrón, S. Sanghai, *GQA: Training Generalized
#   Multi-Query Transformer Models from Multi-Head Checkpoints*, EMNLP 2023. arXiv:2305.13245.
# - G.-I. Yu, J. S. Jeong, G.-W. Kim, S. Kim, B.-G. Chun, *Orca: A Distributed Serving System for Transformer-Based
#   Generative Models*, OSDI 2022.
# - W. Kwon, Z. Li, S. Zhuang, Y. Sheng, L. Zheng, C. H. Yu, J. E. Gonzalez, H. Zhang, I. Stoica, *Efficient Memory
#   Management for Large Language Model Serving with PagedAttention*, SOSP 2023. arXiv:2309.06180.
# - A. Agrawal et al., *SARATHI: Efficient LLM Inference by Piggybacking Decodes with Chunked Prefills*, 2023,
#   arXiv:2308.16369; *Taming Throughput-Latency Tradeoff in LLM Inference with Sarathi-Serve*, OSDI 2024,
#   arXiv:2403.02310.
# - vLLM documentation, *Optimization and Tuning* (chunked prefill, preemption, `max_num_batched_tokens`,
#   `max_num_seqs`). https://docs.vllm.ai/en/v0.9.1/configuration/optimization.html
# - NVIDIA NIM for LLMs, *Benchmarking*, Llama 3.3 70B Instruct results (FP8, two H100s): the curve of step 11, with
#   its rows in `course_lib/data/published_serving.csv`.
#   https://docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance.md#llama-33-70b-instruct-results
# - Llama 3.1 70B's shape (80 layers, 64 query heads, 8 KV heads): A. Grattafiori et al., *The Llama 3 Herd of
#   Models*, 2024, Table 3. arXiv:2407.21783.
# - NCCL, `src/graph/tuning.cc` (v2.30.7-1): the latencies of the LL protocol (`course_lib.nccl`).
#   https://github.com/NVIDIA/nccl

# %% [markdown]
# ## What's next
#
# You can now price a serving replica, choose its partition, run it as an engine does, read its concurrency sweep
# and size a node for a number of users with a band. [Lab 6 · serving](../labs/06_serving.ipynb) puts the replica and
# the sweep under sliders and asks you to compute their numbers yourself, the knee included.
