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
# # 01 · Count the work: FLOPs, bytes and the roofline
#
# Before a model can be split across devices you need two numbers for it: how much arithmetic one training step
# performs, and how many bytes it must hold and move.

# %% [markdown]
# ## What you'll learn
#
# - Why a multiply-accumulate (MAC) is counted as **two** floating-point operations (FLOPs), and why a matrix product
#   $[M\times K]\cdot[K\times N]$ costs $MNK$ MACs $= 2MNK$ FLOPs. You will check the rule by counting every
#   operation on tiny matrices.
# - How the FLOPs of a transformer layer ($24bsh^2 + 4bs^2h$ forward) follow GEMM by GEMM, why training costs about
#   $6PD$ FLOPs, and how Megatron-LM's per-iteration formula and training-time estimate are built.
# - What arithmetic intensity is, how the **roofline** $T = \max(T_\text{math}, T_\text{mem})$ decides whether a
#   kernel is compute-bound or memory-bound, and where the ridge point of real accelerators lies.
# - How many bytes each parameter costs in mixed-precision training with Adam ($2 + 2 + 12 = 16$), the first entry
#   of the memory budget that the rest of the course divides among devices.

# %% [markdown]
# ## Prerequisites
#
# None: this is the first lesson. It assumes you can read Python and numpy, know how a matrix product is defined,
# and have met a neural-network layer as "multiply by a weight matrix, then apply a nonlinearity".
#
# **Time to learn:** about 1.6 hours by the course's rule
# ([how it is counted](00_course_map.ipynb#How-long-each-part-takes)).
#
# All quantities in `course_lib` are in SI base units (FLOP, bytes, seconds, FLOP/s, bytes/s) with decimal
# prefixes: 1 GB is $10^9$ bytes, as in the papers quoted here. They are converted to text only for printing, by
# the formatters in `course_lib.units`.

# %%
import matplotlib.pyplot as plt
import numpy as np

from course_lib import compute, hardware, parallelism, units, viz
from course_lib.widgets import quiz

# %% [markdown]
# ## Mechanism
#
# Accelerators are built to do one thing very fast: multiply two numbers and add the product to a running sum.
#
# 1. **A multiply-accumulate is two FLOPs.** `c += x * y` is a multiply and an add. Papers and
#    datasheets count FLOPs, not MACs, so one MAC counts as 2 FLOPs.
# 2. **A matrix product is a grid of dot products.** Each of the $M\cdot N$ outputs of $[M\times K]\cdot[K\times N]$
#    is a dot product of length $K$: $K$ MACs. The whole product is $MNK$ MACs, $2MNK$ FLOPs.
# 3. **A transformer is mostly matrix products** (GEMMs, general matrix multiplies). Adding them up layer by layer
#    gives the FLOPs of a forward pass. The backward pass costs about twice as much, so a training step costs
#    about three forward passes (four if activations are recomputed).
# 4. **Every GEMM also moves bytes.** Its inputs must be read from the accelerator's memory (**HBM**, high-bandwidth
#    memory: the DRAM stacked beside the chip) and its output written back. Arithmetic and memory traffic each take
#    time; whichever takes longer sets the pace.
# 5. **Training holds more than the weights.** Gradients and optimizer state sit next to the parameters, 16 bytes
#    per parameter in all with mixed-precision Adam: for a large model, more than one device can hold.
#
# Step 2 can be checked by brute force. `compute.count_matmul_operations` multiplies two small matrices the
# schoolbook way and counts every scalar multiply and add. Here it multiplies a $2\times 3$ by a $3\times 4$ matrix.

# %%
a = np.arange(1, 7).reshape(2, 3)
b = np.arange(1, 13).reshape(3, 4)
product, multiplies, adds = compute.count_matmul_operations(a, b)
m, k = a.shape
n = b.shape[1]
print(f"[{m}×{k}]·[{k}×{n}] = \n{product.astype(int)}")
print(f"matches numpy's a @ b: {np.array_equal(product, a @ b)}")
print(f"multiplies: {units.format_count(multiplies)}  (M·N·K = {units.format_count(m * n * k)})")
print(f"adds:       {units.format_count(adds)}  (M·N·(K − 1) = {units.format_count(m * n * (k - 1))})")
print(f"exact operation count: {units.format_flops(multiplies + adds)}")
print(f"2MNK convention:       {units.format_flops(compute.gemm_flops(m, n, k))}")

# %% [markdown]
# Each of the 8 outputs took 3 multiplies but only 2 adds: the first product starts the sum. The exact count is
# $MN(2K-1) = 40$, the convention $2MNK = 48$ counts the first add too, as the hardware does (a MAC unit adds to an
# accumulator that starts at zero). The gap, a fraction $1/(2K)$, vanishes for the $K$ in the thousands of real layers:

# %%
print(f"{'shape':>22} {'exact MN(2K−1)':>16} {'2MNK':>12} {'convention over exact':>22}")
for m, k, n in [(2, 1, 2), (2, 3, 4), (4, 16, 4), (4, 256, 4)]:
    _, multiplies, adds = compute.count_matmul_operations(np.ones((m, k)), np.ones((k, n)))
    convention = compute.gemm_flops(m, n, k)
    print(
        f"{f'[{m}×{k}]·[{k}×{n}]':>22} {units.format_flops(multiplies + adds):>16} "
        f"{units.format_flops(convention):>12} {units.format_percent(convention / (multiplies + adds) - 1):>22}"
    )

# %% [markdown]
# For $K = 1$ (an outer product) there are no adds at all and the convention doubles the true count; at
# $K = 256$ it is off by 0.196 %. Published FLOP counts, hardware peaks and this course all use $2MNK$.

# %% [markdown]
# ## The science
#
# ### Work: FLOPs of a GEMM, a layer, a model and a training run
#
# | symbol | code name | meaning | unit |
# |---|---|---|---|
# | $M, K, N$ | `m`, `k`, `n` | GEMM shape $[M\times K]\cdot[K\times N]$ | count |
# | $b$ | `batch` | sequences a layer processes at once (lesson 03's micro-batch) | count |
# | $B_\text{global}$ | `batch` (of Eq. 3) | sequences in one iteration's global batch | count |
# | $s$ | `seq_len` | tokens per sequence | count |
# | $h$ | `hidden` | hidden size of the model | count |
# | $l$ | `layers` | transformer layers | count |
# | $V$ | `vocab` | vocabulary size | count |
# | $P$ (ZeRO writes $\Psi$) | `params` | parameters of the model | count |
# | $D$ (Eq. 4 writes it T) | `tokens` | training tokens | count |
# | $N_\text{GPU}$ (Eq. 4's n) | `gpus` | accelerators working on the run | count |
# | $X$ | `achieved_flops_per_s_per_gpu` | FLOP/s each GPU actually achieves | FLOP/s |
#
# **GEMM** (`compute.gemm_flops(m, n, k)`):
# $$F_\text{GEMM} = 2MNK \qquad\text{(exactly } MN(2K-1)\text{ operations)}$$
#
# **One transformer layer, forward** (`compute.transformer_layer_forward_flops(batch, seq_len, hidden)`), as
# derived in the appendix of Narayanan et al. (2021) for a GPT-style layer with an MLP of width $4h$:
# $$F_\text{layer} = 24bsh^2 + 4bs^2h$$
# The next cell derives it GEMM by GEMM. The $bsh^2$ terms are the weight matrices: $12h^2$ weights per layer,
# each used in one MAC per token, $2 \times 12h^2$ FLOPs per token. The $bs^2h$ terms are attention: every token is
# compared with every other token of its sequence, which grows with $s^2$ and involves no weights at all.
# The whole forward pass adds the logit layer, a $[bs\times h]\cdot[h\times V]$ GEMM
# (`compute.transformer_forward_flops`): $F_\text{fwd} = l\,(24bsh^2 + 4bs^2h) + 2bshV$.
#
# **Training.** The backward pass computes two GEMMs for every forward GEMM, one for the gradient with respect to
# the layer's input and one for the gradient with respect to its weights, each as large as the forward GEMM. So
# backward $\approx 2\times$ forward and one training iteration $\approx 3\times$ forward. Recomputing activations
# in the backward pass (full recomputation, used to save memory) adds a fourth forward pass of every layer. Per
# token, the forward pass is about $2P$ FLOPs (one MAC per parameter), hence Kaplan et al.'s (2020) estimate
# (`compute.training_flops(params, tokens)`):
# $$C \approx 6PD$$
# Megatron-LM's exact count of one iteration over a global batch of $B_\text{global}$ sequences, Narayanan et al. Eq. (3), with
# full recomputation (`compute.transformer_flops_per_iteration(..., recompute=True)`):
# $$F = 96B_\text{global}slh^2\left(1 + \frac{s}{6h} + \frac{V}{16lh}\right)$$
# and without recomputation (`recompute=False`) $72B_\text{global}slh^2\left(1 + \frac{s}{6h} + \frac{V}{12lh}\right)$.
# Dividing by the cluster's achieved rate gives Eq. (4) (`compute.training_time_s`):
# $$\text{training time} \approx \frac{8DP}{N_\text{GPU}X}$$
# where $8 = 2 + 4 + 2$ is forward, backward and recomputation per parameter and token, and the approximations
# $6h \gg s$, $16lh \gg V + s$ drop the attention and logit terms.
#
# **Parameters**, Narayanan et al. Eq. (2) (`compute.transformer_params(layers, hidden, vocab, seq_len)`):
# $$P = 12lh^2\left(1 + \frac{13}{12h} + \frac{V + s}{12lh}\right)$$
# $12lh^2$ is the weight matrices, $13lh$ the biases and LayerNorm parameters, $(V + s)h$ the token and position
# embeddings.
#
# *Assumptions:* dense GPT-style layers (no [mixture of experts](glossary.ipynb#moe), no grouped-query attention), MLP
# width $4h$, FLOPs counted regardless of precision; softmax, LayerNorm, activation functions and the optimizer step are
# left out (they are small next to the GEMMs). The paper calls Eq. (3) a lower bound for that reason.
#
# The derivation of $F_\text{layer}$, one GEMM at a time, for a GPT-3 layer ($h = 12288$) processing one
# sequence of $s = 2048$ tokens. Attention runs per head, but $a$ heads of width $h/a$ add up to one product of
# width $h$, so the head count drops out.

# %%
batch, seq_len, hidden = 1, 2048, 12288
tokens_in_batch = batch * seq_len
gemms = [  # (name, [rows × inner]·[inner × cols], how many such GEMMs)
    ("Q, K, V projections", (tokens_in_batch, hidden, 3 * hidden), 1),
    ("scores Q·Kᵀ (per sequence)", (seq_len, hidden, seq_len), batch),
    ("scores · V (per sequence)", (seq_len, seq_len, hidden), batch),
    ("output projection", (tokens_in_batch, hidden, hidden), 1),
    ("MLP up, h → 4h", (tokens_in_batch, hidden, 4 * hidden), 1),
    ("MLP down, 4h → h", (tokens_in_batch, 4 * hidden, hidden), 1),
]
layer_total = 0
print(f"{'GEMM':<28} {'shape':>26} {'FLOP':>11}")
for name, (rows, inner, cols), count in gemms:
    flops = count * compute.gemm_flops(rows, cols, inner)
    layer_total += flops
    print(f"{name:<28} {f'[{rows}×{inner}]·[{inner}×{cols}]':>26} {units.format_flops(flops):>11}")
formula = compute.transformer_layer_forward_flops(batch, seq_len, hidden)
print(f"{'sum of the GEMMs':<55} {units.format_flops(layer_total):>11}")
print(f"{'24bsh² + 4bs²h':<55} {units.format_flops(formula):>11}")
print(f"equal: {layer_total == formula}")

# %% [markdown]
# The four weight GEMMs are $6bsh^2 + 2bsh^2 + 8bsh^2 + 8bsh^2 = 24bsh^2$; the two attention products are
# $2bs^2h$ each. At $s = 2048$ and $h = 12288$ the attention products are only $4bs^2h / 24bsh^2 = s/(6h) = 2.8\,\%$
# of the layer: the weights dominate unless sequences are longer than about $6h$ tokens.
#
# ### Memory traffic: arithmetic intensity and the roofline
#
# | symbol | code name | meaning | unit |
# |---|---|---|---|
# | $F$ | `flops` | work of the kernel | FLOP |
# | $Q_\text{mem}$ | `bytes_moved` | bytes read from and written to HBM | bytes |
# | $I$ | `intensity_flops_per_byte` | arithmetic intensity $F/Q_\text{mem}$ | FLOP/byte |
# | $R$ | `peak_flops_per_s` | peak rate of the accelerator (dense, for one data type) | FLOP/s |
# | $B_\text{HBM}$ | `memory_bandwidth_bytes_per_s` | HBM bandwidth | bytes/s |
#
# A kernel needs $T_\text{math} = F/R$ to do its arithmetic and $T_\text{mem} = Q_\text{mem}/B_\text{HBM}$ to move its
# bytes. If the two overlap perfectly, the time is the larger of them (`compute.roofline_time`):
# $$T = \max\left(T_\text{math},\ T_\text{mem}\right) = \max\left(\frac{F}{R},\ \frac{Q_\text{mem}}{B_\text{HBM}}\right)$$
# Dividing $F$ by $T$ gives the **attainable rate** (`compute.attainable_flops_per_s`), the roofline itself:
# $$R_\text{attainable} = \min(R,\ I \cdot B_\text{HBM}), \qquad I = \frac{F}{Q_\text{mem}}$$
# The two regimes meet at the **ridge point** $I^* = R/B_\text{HBM}$ (`compute.ridge_point_flops_per_byte`). Below it a
# kernel is memory-bound and more FLOP/s would not help; above it, compute-bound. A
# [bf16](glossary.ipynb#number-formats) (2-byte) GEMM reads both inputs and writes its output at least once:
# $Q_\text{mem} = 2(MK + KN + MN)$ bytes (`compute.gemm_bytes`). When one dimension $M$ is much smaller than $K$ and $N$
# (a few tokens against large weight matrices), $I = MNK/(MK + KN + MN) \approx M$: the intensity is about the number of
# tokens in the batch.
#
# *Assumptions:* each operand crosses HBM exactly once (perfect on-chip reuse), compute and memory traffic overlap
# completely, and the peak is the dense datasheet figure. Real kernels sit below the roofline; it is an upper bound
# on the rate, a lower bound on the time.
#
# ### Memory capacity: bytes per parameter
#
# ZeRO (Rajbhandari et al. 2020, §3.1) counts the model states of mixed-precision training with Adam: 16-bit
# parameters (`parallelism.PARAM_BYTES` = 2) and gradients (`parallelism.GRAD_BYTES` = 2) used in the forward and
# backward passes, plus an fp32 master copy of the parameters, Adam's momentum and variance, $4 + 4 + 4 = 12$
# bytes (`parallelism.ADAM_OPTIMIZER_BYTES_PER_PARAM`, the paper's $K$, written $K_\text{opt}$ here):
# $$M_\text{states} = (2 + 2 + K_\text{opt})\,\Psi = 16\,\Psi \text{ bytes}$$
# (`parallelism.zero_model_state_bytes(params, data_parallel=1, stage=0)`). Activations, temporary buffers and
# fragmentation come on top; lesson 03 adds them.

# %% [markdown]
# ## Worked example
#
# ### A training run, counted three ways
#
# GPT-3 175B (Narayanan et al. Table 1 setting: $l = 96$, $h = 12288$, $V = 51200$, $s = 2048$, global batch
# $B_\text{global} = 1536$). First the FLOPs of one iteration with and without recomputation, then the same iteration estimated
# with $6PD$, where $D = B_\text{global}s$ tokens.

# %%
gpt3 = parallelism.GPT3_175B
global_batch = 1536
with_recompute = compute.transformer_flops_per_iteration(
    global_batch, gpt3.seq_len, gpt3.layers, gpt3.hidden, gpt3.vocab, recompute=True
)
without_recompute = compute.transformer_flops_per_iteration(
    global_batch, gpt3.seq_len, gpt3.layers, gpt3.hidden, gpt3.vocab, recompute=False
)
six_pd = compute.training_flops(gpt3.params, global_batch * gpt3.seq_len)
print(f"parameters (Eq. 2):                      {units.format_count(gpt3.params, digits=4)}")
print(f"one iteration, Eq. (3) with recompute:    {units.format_flops(with_recompute)}")
print(f"one iteration, without recomputation:     {units.format_flops(without_recompute)}")
print(f"one iteration, 6PD:                       {units.format_flops(six_pd)}")
print(f"recomputation adds                        {units.format_percent(with_recompute / without_recompute - 1)}")
print(f"6PD misses (attention and logits)         {units.format_percent(1 - six_pd / without_recompute)}")

# %% [markdown]
# $6PD$ lands within 3 % of the exact count without recomputation: for a model this wide, the weight GEMMs are
# nearly all the work. Full recomputation adds a third (one more forward on top of three). Scaled up to whole
# runs, the same counts give the training-time estimates of Eq. (4) and the compute of a modern run:

# %%
gpt3_days = compute.training_time_s(tokens=300e9, params=175e9, gpus=1024, achieved_flops_per_s_per_gpu=140e12)
one_t = parallelism.MEGATRON_1T
one_t_days = compute.training_time_s(tokens=450e9, params=one_t.params, gpus=3072, achieved_flops_per_s_per_gpu=163e12)
llama3_70b = compute.training_flops(params=70e9, tokens=15e12)
print(f"GPT-3 175B, 300B tokens, 1024 A100s at 140 TFLOP/s each: {units.format_time(gpt3_days)}  (paper: 34 days)")
print(
    f"{units.format_count(one_t.params)}-parameter model, 450B tokens, 3072 A100s at 163 TFLOP/s: "
    f"{units.format_time(one_t_days)}  (paper: 84 days)"
)
print(f"LLaMA-3 70B on 15T tokens, 6PD: {units.format_flops(llama3_70b)}  (scaling book: 6.3e24)")

# %% [markdown]
# Eq. (4) reproduces the paper's 34 and 84 days from $X$, the rate each GPU *actually achieved* (140 and
# 163 TFLOP/s), not the A100's 312 TFLOP/s peak (the misconception below).
#
# ### Parameter count: Eq. (2) against Narayanan et al. Table 1
#
# Eq. (2) against the parameter counts the paper prints for the configurations it trained ($V = 51200$, $s = 2048$):

# %%
table1 = [
    (36, 4096, 7.5e9),
    (80, 12288, 145.6e9),
    (96, 16384, 310.1e9),
    (105, 20480, 529.6e9),
    (128, 25600, 1008.0e9),
]  # (layers, hidden, parameters as printed in Table 1)
print(f"{'layers':>6} {'hidden':>7} {'Eq. (2)':>15} {'Table 1':>15} {'12lh² of Eq. (2)':>17}")
for layers, hidden, printed in table1:
    eq2 = compute.transformer_params(layers, hidden, vocab=51200, seq_len=2048)
    print(
        f"{layers:>6} {hidden:>7} {units.format_count(eq2, digits=4):>15} {units.format_count(printed, digits=4):>15} "
        f"{units.format_percent(12 * layers * hidden**2 / eq2):>17}"
    )

# %% [markdown]
# Every row agrees to the printed precision, and the $12lh^2$ term is nearly all of each count: a transformer's
# parameters live in its weight matrices.
#
# ### Roofline: which GEMMs can use the peak?
#
# The presets in `course_lib.hardware` carry each accelerator's dense bf16 peak, HBM bandwidth and capacity, each
# with its source, and so its ridge point:

# %%
print(f"{'accelerator':<16} {'peak bf16':>14} {'HBM bandwidth':>14} {'ridge point':>16} {'HBM':>8}")
for accelerator in hardware.ACCELERATORS.values():
    ridge = compute.ridge_point_flops_per_byte(accelerator.peak("bf16"), accelerator.hbm_bandwidth_bytes_per_s)
    print(
        f"{accelerator.name:<16} {units.format_flops_rate(accelerator.peak('bf16')):>14} "
        f"{units.format_bandwidth(accelerator.hbm_bandwidth_bytes_per_s):>14} "
        f"{units.format_count(round(ridge)):>6} FLOP/byte {units.format_bytes(accelerator.hbm_capacity_bytes):>8}"
    )

# %% [markdown]
# From 153 to 295 FLOP/byte on every chip: a kernel must do a few hundred FLOPs for each byte it moves to
# keep the arithmetic units busy. Now four bf16 GEMMs that multiply $M$ tokens by an $8192\times 8192$ weight
# matrix on an H100: one token (a matrix–vector product), 8 tokens (a decode step of a small inference batch),
# 128 tokens, and 8192 tokens (a training micro-batch).

# %%
h100 = hardware.H100
peak, bandwidth = h100.peak("bf16"), h100.hbm_bandwidth_bytes_per_s
gemm_shapes = [(1, 8192, 8192), (8, 8192, 8192), (128, 8192, 8192), (8192, 8192, 8192)]  # (M tokens, K, N)
roofline_points = []  # (label, intensity) for the figure below
print(f"{'M':>5} {'FLOP':>11} {'bytes':>9} {'intensity':>16} {'time':>9} {'attainable':>14} {'of peak':>8}")
for m, k, n in gemm_shapes:
    flops, moved = compute.gemm_flops(m, n, k), compute.gemm_bytes(m, n, k)
    intensity = compute.arithmetic_intensity(flops, moved)
    time_s = compute.roofline_time(flops, moved, peak, bandwidth)
    rate = compute.attainable_flops_per_s(intensity, peak, bandwidth)
    if m != 128:  # left out of the figure only, where its label would crowd the M = 8192 one
        roofline_points.append((f"M = {m}", intensity))
    print(
        f"{m:>5} {units.format_flops(flops):>11} {units.format_bytes(moved):>9} "
        f"{units.format_count(round(intensity)):>6} FLOP/byte {units.format_time(time_s):>9} "
        f"{units.format_flops_rate(rate):>14} {units.format_percent(rate / peak):>8}"
    )

# %% [markdown]
# The first three GEMMs take almost the same time, 40.1 to 41.3 µs: the time it takes to read the 134 MB weight
# matrix from HBM, once however many tokens use it. Only the training-sized GEMM, at 2731 FLOP/byte, is
# compute-bound and can run at the 989 TFLOP/s peak. This is why inference batches tokens together, and why a
# decode step with few tokens is memory-bound however fast the arithmetic is.
#
# ### The first memory budget
#
# Model states at 16 bytes per parameter, for ZeRO's GPT-2 example ($\Psi = 1.5$ billion), the 7.5B model of ZeRO
# §5, GPT-3 and the 1T model, against one 80 GB H100:

# %%
models = [("GPT-2 1.5B", 1.5e9), ("GPT 7.5B", 7.5e9), ("GPT-3 175B", gpt3.params), ("GPT 1T", one_t.params)]
bytes_per_param = parallelism.PARAM_BYTES + parallelism.GRAD_BYTES + parallelism.ADAM_OPTIMIZER_BYTES_PER_PARAM
print(
    f"bytes per parameter: {parallelism.PARAM_BYTES} (fp16 parameters) + {parallelism.GRAD_BYTES} (fp16 "
    f"gradients) + {parallelism.ADAM_OPTIMIZER_BYTES_PER_PARAM} (fp32 copy, momentum, variance) "
    f"= {bytes_per_param}"
)
print(
    f"{'model':<12} {'fp16 parameters':>16} {'gradients':>10} {'optimizer':>10} {'model states':>13} "
    f"{'H100s to hold them':>19}"
)
for name, params in models:
    parameters, gradients, optimizer = parallelism.zero_model_state_breakdown(params, data_parallel=1, stage=0)
    states = parallelism.zero_model_state_bytes(params, data_parallel=1, stage=0)
    devices = int(np.ceil(states / h100.hbm_capacity_bytes))
    print(
        f"{name:<12} {units.format_bytes(parameters):>16} {units.format_bytes(gradients):>10} "
        f"{units.format_bytes(optimizer):>10} {units.format_bytes(states):>13} {units.format_count(devices):>19}"
    )

# %% [markdown]
# The first row is ZeRO's own example: GPT-2 needs 24 GB for model states while its fp16 parameters alone are
# 3 GB. At 7.5 billion parameters the model states (120 GB) already exceed an 80 GB GPU; GPT-3's 2.8 TB needs at
# least 35 H100s just to be stored, before a single activation. That is the first reason to split a model across
# devices; the arithmetic is the second: the 34 days above already assume 1024 GPUs.

# %% [markdown]
# ## Figures
#
# Where one GPT-3 training iteration spends its FLOPs (batch 1536, full recomputation). Each bar is one part of
# the model summed over all 96 layers, split into the forward pass, the backward pass and the recomputed forward.

# %%
fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
viz.plot_flops_breakdown(global_batch, gpt3.seq_len, gpt3.layers, gpt3.hidden, gpt3.vocab, recompute=True, ax=ax)
plt.show()
bars = {}  # each part's share of the iteration, read off the bars (their gid is "part|pass")
for bar in ax.patches:
    part = bar.get_gid().split("|")[0]
    bars[part] = bars.get(part, 0.0) + bar.get_width()
print(", ".join(f"{part}: {units.format_percent(width / sum(bars.values()))}" for part, width in bars.items()))
weights = sum(width for part, width in bars.items() if "projection" in part or "MLP" in part)
print(
    f"the four weight GEMMs (QKV, output projection, MLP's two): {units.format_percent(weights / sum(bars.values()))}"
)

# %% [markdown]
# The MLP alone is two thirds of the work (64.7 %), the four weight GEMMs together 97 %. The logit layer is small and
# has no recomputation segment. The bars add up exactly to Eq. (3)'s 4.51 EFLOP.
#
# The roofline of four accelerators, with the worked example's GEMMs for $M$ = 1, 8 and 8192 tokens placed on the
# H100's roofline (the first one drawn; its memory-bound region is shaded on the left, its compute-bound region on
# the right). The $M = 128$ GEMM would sit at 124 FLOP/byte, 416 TFLOP/s, still on the slope.

# %%
fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
viz.plot_roofline(
    accelerators=(hardware.H100, hardware.A100, hardware.B200, hardware.TPU_V5E),
    dtype="bf16",
    points=roofline_points,
    ax=ax,
)
plt.show()

# %% [markdown]
# Left of each ridge point the roofline climbs with slope 1: the rate is intensity × bandwidth, and a faster chip
# helps only if its memory is faster. The B200's ridge (281 FLOP/byte) is close to the H100's (295): peak and
# bandwidth grew together, so the same kernels stay memory-bound.
#
# The first memory budget as a picture: the model states of three of the models above, each on a single device,
# against the 80 GB of an H100 (dashed); lesson 03 adds activations. The right panel draws GPT-3's bar on its own
# scale.

# %%
model_states = {
    name: parallelism.MemoryBreakdown(
        *parallelism.zero_model_state_breakdown(params, data_parallel=1, stage=0), activations=0.0
    )
    for name, params in models[:3]
}
fig, (ax, ax_gpt3) = plt.subplots(1, 2, figsize=(10, 4.5), width_ratios=(2.4, 1), layout="constrained")
viz.plot_memory_breakdown(model_states, capacity_bytes=h100.hbm_capacity_bytes, ax=ax)
viz.plot_memory_breakdown({"GPT-3 175B": model_states["GPT-3 175B"]}, ax=ax_gpt3)
ax_gpt3.set_title("GPT-3 175B, the whole bar")
if ax_gpt3.get_legend() is not None:  # the left panel's legend names the same colours
    ax_gpt3.get_legend().remove()
plt.show()
for name, states in model_states.items():
    print(
        f"{name}: model states {units.format_bytes(states.model_states)} = "
        f"{states.model_states / h100.hbm_capacity_bytes:.2f} × an H100's 80 GB; optimizer state "
        f"{units.format_bytes(states.optimizer_state)}, {units.format_percent(states.optimizer_state / states.model_states)}"
    )

# %% [markdown]
# The optimizer state (green), not the fp16 parameters, is three quarters of each model's states: $12$ of the $16$
# bytes. Lesson 03 shows how ZeRO cuts exactly this bar by partitioning it across data-parallel devices.

# %% [markdown]
# ## Misconception
#
# **"The datasheet's peak FLOP/s is what a training run gets."** The peak is the flat part of the roofline. A kernel
# reaches it only if its arithmetic intensity is above the ridge point and everything else (kernel launches,
# communication, pipeline idle time, the non-GEMM operations) is hidden. The worked example showed a decode-like
# GEMM at under 3 % of peak. Even well-tuned large-scale training sits well below it, as Narayanan et al.'s own
# numbers show:

# %%
a100_peak = hardware.A100.peak("bf16")
for label, achieved in (("GPT-3 175B run", 140e12), ("1T-parameter run", 163e12)):
    # The paper counts the recomputed forward (8 FLOPs per parameter and token, Eq. 3): a hardware-FLOPs rate (HFU).
    # The model FLOPs (6 per parameter and token, MFU) are 6/8 of it.
    print(
        f"{label}: {units.format_flops_rate(achieved)} achieved per A100 of {units.format_flops_rate(a100_peak)} "
        f"peak = {units.format_percent(achieved / a100_peak)} HFU; model FLOPs only: "
        f"{units.format_flops_rate(achieved * 6 / 8)} = {units.format_percent(achieved * 6 / 8 / a100_peak)} MFU"
    )
at_peak = compute.training_time_s(tokens=300e9, params=175e9, gpus=1024, achieved_flops_per_s_per_gpu=a100_peak)
print(
    f"GPT-3 training time if every GPU ran at peak: {units.format_time(at_peak)}, "
    f"with the achieved rate: {units.format_time(gpt3_days)}"
)

# %% [markdown]
# About half the peak, and that was a record at the time. Both published rates count the forward pass that full
# recomputation runs a second time: they are a **hardware FLOPs utilisation (HFU)**. The **model FLOPs utilisation
# (MFU)** counts only the 6 FLOPs per parameter and token the model needs, 6/8 of it; the Ultra-Scale Playbook's
# runs, lesson 08, report MFU. Planning with the peak would have promised 15.2 days for a run that took 34, so time
# estimates in this course take an achieved rate or an explicit efficiency, never the bare peak.

# %% [markdown]
# ## Self-check

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="How many FLOPs does the product [64×128]·[128×32] take, by the 2MNK convention?",
        options=("262,144", "524,288", "1,048,576"),
        answer=1,
        explanation="M·N·K = 64·32·128 = 262,144 multiply-accumulates, and each MAC counts as two FLOPs: 524,288.",
    )
)

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt=(
            "A bf16 kernel on an H100 (989 TFLOP/s, 3.35 TB/s, ridge point ≈ 295 FLOP/byte) has an arithmetic "
            "intensity of 30 FLOP/byte. What bounds its rate?"
        ),
        options=(
            "Compute: it can run at about 989 TFLOP/s",
            "Memory: at most about 30 × 3.35 TB/s ≈ 100 TFLOP/s",
            "Memory: at most about 3.35 TB/s ÷ 30 ≈ 0.11 TFLOP/s",
        ),
        answer=1,
        explanation=(
            "30 FLOP/byte is left of the ridge point, so the attainable rate is intensity × bandwidth, "
            "about 100 TFLOP/s, a tenth of the peak (FLOP/byte × byte/s gives FLOP/s; dividing gives nonsense units)."
        ),
    )
)

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="How much memory do the model states of a 10-billion-parameter model take in mixed-precision Adam training?",
        options=("20 GB", "40 GB", "160 GB"),
        answer=2,
        explanation=(
            "2 bytes of fp16 parameters + 2 of gradients + 12 of optimizer state (fp32 copy, momentum, "
            "variance) = 16 bytes per parameter: 160 GB. 20 GB is the fp16 parameters alone."
        ),
    )
)

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="Why does training a dense transformer cost about 6 FLOPs per parameter per token?",
        options=(
            "2 for the forward pass and 4 for the backward pass (gradients for the inputs and for the weights)",
            "2 for the forward pass, 2 for the backward pass and 2 for the optimizer step",
            "Because the Adam update costs 6 FLOPs per parameter",
        ),
        answer=0,
        explanation=(
            "Each weight is used in one multiply-accumulate per token in the forward pass (2 FLOPs); the "
            "backward pass needs two GEMMs of the same size per forward GEMM (4 FLOPs). The optimizer's update is a "
            "few FLOPs per parameter per step, not per token: negligible next to 6 per token."
        ),
    )
)

# %% [markdown]
# ## History
#
# - **2009: the roofline model.** Williams, Waterman and Patterson proposed plotting attainable performance against
#   operational intensity, with a flat roof at peak compute and a slanted one at memory bandwidth, to show at a
#   glance which resource limits a kernel on a multicore chip.
# - **2020: $C \approx 6N$ per token.** Kaplan et al.'s scaling-law paper counted the forward pass of a
#   transformer as about $2N$ add-multiply operations per token, "the factor of two comes from the
#   multiply-accumulate operation used in matrix multiplication", and the backward pass as twice that, giving the
#   $6N$ FLOPs per training token that compute budgets are still written in.
# - **2020: 16 bytes per parameter.** ZeRO (Rajbhandari et al., SC'20) spelled out the model-state memory of
#   mixed-precision Adam, $2\Psi + 2\Psi + 12\Psi$, and showed that it, not the fp16 weights, is what limits the
#   model a data-parallel GPU can train.
# - **2021: FLOPs per iteration and training time.** Narayanan et al. (SC'21) derived Eq. (2)–(4), GEMM by GEMM,
#   to report the throughput of their 3072-GPU runs as a fraction of peak and to estimate training times. The same
#   paper is the course's main source for how tensor, pipeline and data parallelism combine (lesson 03).

# %% [markdown]
# ## Summary
#
# - One MAC = 2 FLOPs; a GEMM $[M\times K]\cdot[K\times N]$ = $2MNK$ FLOPs (exactly $MN(2K-1)$; the gap is
#   $1/(2K)$).
# - A transformer layer's forward pass is $24bsh^2 + 4bs^2h$ FLOPs; training costs about $6PD$ (8PD with full
#   recomputation). Eq. (3) and (4) of Narayanan et al. turn this into FLOPs per iteration and days of training,
#   given an *achieved* rate per GPU.
# - Time is at least $\max(T_\text{math}, T_\text{mem})$. A kernel below the ridge point $R/B_\text{HBM}$ (153–295
#   FLOP/byte on current accelerators) is memory-bound; GEMMs with few tokens are.
# - Mixed-precision Adam holds 16 bytes per parameter in model states: 24 GB for 1.5 billion parameters, 2.8 TB
#   for GPT-3. Large models exceed one device's memory, which is the first reason to split them.

# %% [markdown]
# ## Exercises
#
# Use `course_lib` for every number.
#
# 1. An MLP projection of a LLaMA-style model multiplies $[2048\times 4096]$ activations by a $[4096\times 14336]$
#    weight matrix in bf16. How many FLOPs, how many bytes, what arithmetic intensity? Is it compute-bound on an
#    H100, and what is its roofline time?
# 2. Estimate GPT-3's training compute with $6PD$ ($P = 175$ billion, $D = 300$ billion tokens) and the time it
#    would take on 1024 A100s achieving 140 TFLOP/s each. Why is the answer shorter than Eq. (4)'s 34 days?
# 3. On an A100 (dense bf16), what is the smallest number of tokens $M$ for which the GEMM
#    $[M\times 8192]\cdot[8192\times 8192]$ is compute-bound?
#
# <details>
# <summary>Answers</summary>
#
# 1. `compute.gemm_flops(2048, 14336, 4096)` = 241 GFLOP; `compute.gemm_bytes(2048, 14336, 4096)` = 193 MB;
#    intensity ≈ 1247 FLOP/byte, far above the H100's ridge (≈ 295), so compute-bound;
#    `compute.roofline_time(...)` ≈ 243 µs (= FLOPs / 989 TFLOP/s).
# 2. `compute.training_flops(175e9, 300e9)` = 3.15e23 FLOP; divided by 1024 × 140 TFLOP/s that is 25.4 days.
#    Eq. (4) uses 8 FLOPs per parameter and token instead of 6, because the run recomputed activations:
#    25.4 × 8/6 = 33.9 days.
# 3. The A100's ridge is 312 TFLOP/s / 2.039 TB/s ≈ 153 FLOP/byte. The intensity
#    $8192M/(2M + 8192)$ first exceeds it at $M = 159$ (`compute.arithmetic_intensity` gives 153.06 there and
#    152.1 at $M = 158$). Rule of thumb: intensity ≈ $M$, slightly less.
#
# </details>

# %% [markdown]
# ## Sources
#
# - D. Narayanan, M. Shoeybi, J. Casper, P. LeGresley, M. Patwary, V. Korthikanti, D. Vainbrand, P. Kashinkunti,
#   J. Bernauer, B. Catanzaro, A. Phanishayee, M. Zaharia. *Efficient Large-Scale Language Model Training on GPU
#   Clusters Using Megatron-LM.* SC'21. [arXiv:2104.04473](https://arxiv.org/abs/2104.04473). Appendix (FLOPs of
#   GEMMs and layers), Eq. (2)–(4), Table 1, §5 (A100 peak 312 TFLOP/s).
# - J. Kaplan et al. *Scaling Laws for Neural Language Models.* 2020.
#   [arXiv:2001.08361](https://arxiv.org/abs/2001.08361), §2.1 ($C \approx 6N$).
# - S. Rajbhandari, J. Rasley, O. Ruwase, Y. He. *ZeRO: Memory Optimizations Toward Training Trillion Parameter
#   Models.* SC'20. [arXiv:1910.02054](https://arxiv.org/abs/1910.02054), §3.1 (16Ψ bytes; GPT-2 1.5B: 24 GB vs
#   3 GB).
# - S. Williams, A. Waterman, D. Patterson. *Roofline: An Insightful Visual Performance Model for Multicore
#   Architectures.* Communications of the ACM 52(4):65–76, 2009.
#   [doi:10.1145/1498765.1498785](https://doi.org/10.1145/1498765.1498785).
# - J. Austin et al. *How to Scale Your Model* (the JAX "scaling book"), repository jax-ml/scaling-book:
#   `roofline.md`, `transformers.md` (commit 0819a7d8c55ddc113f5cba0285a5f97380cac1e3) and `gpus.md` (commit
#   1a55377affc9ee8f10b549f689ad57e813623a7e): GEMM intensity, H100/B200 ridge points, LLaMA-3 70B = 6.3e24 FLOP.
#   <https://jax-ml.github.io/scaling-book/>
# - NVIDIA A100, H100, H200 and B200 datasheets for the hardware presets (each preset's `source` field in
#   `course_lib.hardware` names its exact source).

# %% [markdown]
# ## What's next
#
# A model that does not fit on one device, or would take years on one, is split across many. Splitting creates
# traffic between devices: [02_nccl: move the data](02_nccl.ipynb) counts what that traffic costs.
