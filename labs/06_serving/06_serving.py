# ---
# jupyter:
#   course:
#     track: depth
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [raw]
# # ASSIGNMENT CONFIG
# # The graded master of lab 6 (otter-grader 7 format). `make assignments` (tools/assignments.py) runs
# # `otter assign` on it; it stages course_lib/ and requirements.txt next to a copy of this notebook first,
# # so that the autograder zip carries the course's code and runs on Gradescope as it does locally.
# # Its links are relative to labs/, where the student version goes (make assignments).
# name: 06_serving
# requirements: requirements.txt
# autograder_files:
#   - course_lib
# python_version: "3.11"
# export_cell: false
# check_all_cell: true
# tests:
#   ok_format: false
# generate:
#   show_stdout: true
#   show_hidden: true

# %% [markdown]
# # Lab 6 · Serve a model: prefill, decode and the KV cache
#
# A partition that trains well may serve poorly. [Lesson 10 · Serve a model](../notebooks/10_serving.ipynb) shows
# why: the **prefill** pushes a prompt's tokens through the model at once, compute-bound like a training step's
# forward pass; the **decode** then makes one token per sequence per step, reading every weight and the batch's **KV
# cache** to do little arithmetic, memory-bound, with two tensor-parallel all-reduces per layer so small that only
# their latency counts. In this lab you first move a serving replica's controls and watch where the time goes, then
# compute the numbers yourself in the graded questions.
#
# **Time to learn:** about 1.7 hours by the course's rule, the graded questions included
# ([how it is counted](../notebooks/00_course_map.ipynb#How-long-each-part-takes)).
#
# **What you need:** lesson 10 (the KV cache, prefill and decode, the latency–throughput curve, the t at which
# decode latency stops falling), lesson 04's transfers of a partition, lesson 02's α–β model of an all-reduce, and
# lesson 01's roofline.
#
# **Scope.** One replica of $t \cdot p$ GPUs on 8-GPU nodes (tensor ranks side by side, as many nodes as needed),
# bf16 weights and KV cache, one batch of sequences in flight. The prefill runs at half of the GPU's peak FLOP/s;
# a decode step is timed at the context of the request's last token (prompt + generated tokens), its slowest step.
# Not modelled in this first widget: paged or quantised caches and requests that arrive at different times (the
# concurrency sweep after it adds them), speculative decoding.
#
# **How it is graded.** Write your answers where you see `...`. The cell `grader.check("q1")` after each question runs
# its public tests and tells you at once whether they pass. The grader also runs hidden tests with other inputs, chosen
# so that the usual slips (counting K but not V, all query heads instead of the KV heads, one all-reduce per layer
# instead of two) fail them, so make your answer right for every input, not only for the public example. Sizes are in
# bytes (decimal: 1 GB = $10^9$ bytes), times in seconds. Where a question says not to call a course_lib function, the
# grader makes that function, and every course_lib function that uses it, raise an error while it runs your answer
# (whatever name you reach it by): an answer that calls it scores 0 on that question.

# %%
from course_lib import budget, hardware, parallelism, serving, units
from course_lib.widgets import readable_feedback

readable_feedback()  # the checks below mark their results with ✔ and ✘, which every font here has

# %% [markdown]
# ## The lab
#
# On the left, decode's latency–throughput curve: each point is a batch size, from one sequence to the largest
# whose KV caches fit, with the time per output token against the tokens per second each GPU produces; the star is
# the current batch. On the right, where one output token's time goes: weight reads (or their multiplies, once the
# batch is large enough), KV-cache reads, the all-reduces' latency and bandwidth terms, and the pipeline's hops (the
# key under the bar names only the parts the step has: no hops at $p = 1$).
# The tensor-parallel slider offers only the $t$ that split the model's heads and KV heads evenly (or copy whole KV
# heads), the pipeline slider only divisors of its layers, so every position is a replica the model can be split
# into. The graded questions below work out what it shows as you move the batch, the model and $t$: the cache per
# token, the batch at which decode turns compute-bound, the $t$ past which latency rises.
# %% tags=["nbval-ignore-output", "otter_ignore"]
# nbval-ignore-output: live widget; its output cannot be compared
from course_lib.widgets import serving_lab

lab = serving_lab()
lab

# %% [markdown]
# ## The concurrency sweep
#
# The widget above times one batch that starts and ends together. An engine (vLLM, TensorRT-LLM, SGLang) serving
# many users schedules each *iteration* anew (**continuous batching**), keeps the KV cache in blocks of 16 tokens (a
# **paged KV cache**) and splits a long prompt into chunks that share iterations with the decodes (**chunked
# prefill**): [lesson 10](../notebooks/10_serving.ipynb) (steps 8–10) builds these, this widget runs them. For each
# concurrency $N$ from 1 to 512 it simulates $N$ users in a closed loop, each sending its next request as soon as
# its last one ends (what `genai-perf` and vLLM's benchmark call concurrency), and plots the median **time to first
# token** (TTFT), the median **inter-token latency** (ITL, the time between two tokens of one request) and the
# replica's output tokens per second. The **knee** (dashed) is the smallest concurrency whose throughput reaches
# 90 % of the most the sweep reaches (the dotted line): past it, more users add little throughput and mostly wait
# longer. The star is the concurrency you chose.
#
# Changing the model, the GPUs or a length simulates the sweep again (a few seconds); moving only *concurrency*
# reuses it. A configuration the engine cannot run ([FP8](../notebooks/glossary.ipynb#fp8) on an A100, which has
# no FP8 arithmetic; weights that leave no memory for the cache) shows why instead of a curve.

# %% tags=["nbval-ignore-output", "otter_ignore"]
# nbval-ignore-output: live widget; its output cannot be compared
from course_lib.widgets import concurrency_sweep_lab

sweep_lab = concurrency_sweep_lab()
sweep_lab

# %% [markdown]
# ### Explore the sweep
#
# Start from the sweep's defaults: Llama 3.1 70B on $t = 8$ H100s, bf16 weights and KV cache, 1024-token prompts,
# 256 output tokens, 64 requests in flight. This question is not graded; the answer is below.
#
# 1. **Past the knee.** Move *concurrency* from 1 to 512. How do the TTFT, the ITL and the throughput change, where
#    is the knee, and what grows past it?
#
# <details>
# <summary>Answer</summary>
#
# 1. The throughput grows from 102 tokens/s at 1 request to 3830 at 512, the ITL from 9.64 to 65.5 ms: more
#    sequences share each read of the weights, and each adds its KV-cache read. The TTFT grows from 48.8 ms to 348 ms
#    at 8 requests: 8 prompts of 1024 tokens that arrive together fill one prefill iteration of 8192 tokens (vLLM's
#    token budget per iteration). With more users their requests spread out over the iterations, and the TTFT stays
#    near that up to 256 requests. The knee is at 256 requests, 3820 of the sweep's 3830 tokens/s: the engine runs
#    at most 256 sequences at once (vLLM's `max_num_seqs`), so at 512 half of the requests wait in the queue, and
#    the TTFT jumps to 17.4 s for no more throughput.
#
# </details>

# %% [markdown]
# ## Key figures at the default settings
#
# A fresh lab at the default settings, and the same replica computed with `course_lib.serving`:

# %% tags=["otter_ignore"]
reference = serving_lab()
r = reference.result
print(
    f"{r['model']} on t·p = {r['tensor_parallel']}·{r['pipeline_parallel']} {r['device']}, {r['sequences']} "
    f"sequences, {r['prompt_len']} + {r['generated_tokens']} tokens"
)
print(f"KV cache of the batch    {units.format_bytes(r['kv_cache_bytes']):>9}")
print(f"memory per GPU           {units.format_bytes(r['total_bytes']):>9} (fits: {r['fits']})")
print(f"time to first token      {units.format_time(r['time_to_first_token_s']):>9}")
print(f"time per output token    {units.format_time(r['time_per_output_token_s']):>9} ({r['bound']}-bound)")
print(f"tokens/s per GPU         {units.format_count(r['tokens_per_s_per_device']):>9}")
step = serving.decode_step(parallelism.LLAMA3_70B, hardware.DGX_H100, 8, 1, sequences=8, context_len=1280)
print(
    f"serving.decode_step(LLAMA3_70B, DGX_H100, 8, 1, 8, 1280): {units.format_time(step.time_per_output_token_s)}; "
    f"agrees with the lab: {step.time_per_output_token_s == r['time_per_output_token_s']}"
)

# %% [markdown]
# The concurrency sweep at its defaults, and the same sweep from `serving.concurrency_sweep_report`:

# %% tags=["otter_ignore"]
swept = concurrency_sweep_lab().typed_result
print(
    f"{swept.model.name} on t = {swept.tensor_parallel} {swept.cluster.accelerator.name}, weights {swept.weights}, "
    f"KV cache {swept.kv_cache}, {swept.prompt_tokens} + {swept.output_tokens} tokens a request"
)
print(f"KV cache: {swept.kv_blocks:,} blocks of {swept.block_size_tokens} tokens, {swept.requests_in_cache} requests")
print(f"{'concurrency':>11} {'TTFT':>9} {'ITL':>9} {'tokens/s':>9}")
columns = (swept.concurrencies, swept.median_ttft_s, swept.median_itl_s, swept.output_tokens_per_s)
for c, ttft, itl, rate in zip(*columns, strict=True):
    print(f"{c:>11} {units.format_time(ttft):>9} {units.format_time(itl):>9} {units.format_count(rate):>9}")
most = units.format_count(max(swept.output_tokens_per_s))
print(
    f"knee: {swept.knee_concurrency} requests, the first to reach "
    f"{units.format_percent(swept.knee_fraction, digits=2)} of the most, {most} tokens/s"
)
again = serving.concurrency_sweep_report(
    parallelism.LLAMA3_70B, hardware.DGX_H100, 8, prompt_tokens=1024, output_tokens=256, concurrency=64
)
print(
    f"the same from serving.concurrency_sweep_report: {(again.output_tokens_per_s == swept.output_tokens_per_s).all()}"
)

# %% [markdown]
# ## Graded questions
#
# Each question names the function to define. Models are `parallelism.TransformerModel`s such as
# `parallelism.LLAMA3_70B`: `model.layers`, `model.heads` (query heads), `model.kv_heads`, `model.head_dim`,
# `model.hidden`. Clusters are `hardware.Cluster`s such as `hardware.DGX_H100`: `cluster.accelerator` has
# `hbm_capacity_bytes`, `hbm_bandwidth_bytes_per_s` and `peak("bf16")`; `cluster.devices` counts its GPUs.

# %%
# IGNORE: otter leaves this cell out of the student version and the autograder. The tests below call helpers of
# tools/grading_helpers.py, which `make assignments` writes into each test that calls them (tools/assignments.py).
import os
import sys

sys.path.insert(0, os.path.abspath("../.."))  # the repository, for tools/ (this master runs in labs/NN_name/)
from tools.grading_helpers import calling, number

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 2
# all_or_nothing: true

# %% [markdown]
# ### Question 1 · The KV cache with grouped-query attention (2 points)
#
# Write `kv_cache_bytes(model, context_len, sequences, bytes_per_element=2)`: the bytes of the KV cache of
# `sequences` sequences of `context_len` tokens each, for the whole model (all layers, all GPUs together), with
# `bytes_per_element` bytes per stored number. Build it from the model's shape; do not call `serving.kv_cache_bytes`,
# `serving.kv_cache_bytes_per_device` or `serving.serving_memory`.

# %% [raw]
# # BEGIN SOLUTION


# %%
def kv_cache_bytes(model, context_len, sequences, bytes_per_element=2):
    """Bytes of the KV cache of ``sequences`` sequences of ``context_len`` tokens (all layers, K and V)."""
    # BEGIN SOLUTION
    per_token = model.layers * 2 * model.kv_heads * model.head_dim  # K and V, per layer, per KV head
    return per_token * context_len * sequences * bytes_per_element
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q1_public(kv_cache_bytes):
    assert callable(kv_cache_bytes), "define the function kv_cache_bytes"

    from course_lib import parallelism

    forbidden = {"kv_cache_bytes", "kv_cache_bytes_per_device", "serving_memory"}
    files = ("course_lib/serving/replica.py", "course_lib/serving/reports.py")
    result, called = calling(kv_cache_bytes, parallelism.LLAMA3_70B, 4096, 1, forbidden=forbidden, files=files)
    assert not called, f"build it from the model's shape instead of calling {', '.join(sorted(called))}"
    got = number(result)
    assert got is not None, f"return bytes as a number, got {result!r:.80}"
    assert abs(got - 1_342_177_280) <= 1e-9 * 1_342_177_280, (
        "Llama 3.1 70B (80 layers, 8 KV heads of 128), one sequence of 4096 tokens in bf16: expected 1,342,177,280 B "
        f"(a K and a V per layer and per KV head), got {got:.10g} B"
    )
    got = number(calling(kv_cache_bytes, parallelism.LLAMA3_70B, 4096, 1, 1, forbidden=forbidden, files=files)[0])
    assert got == 671_088_640, (
        f"the same cache in an 8-bit format (bytes_per_element=1): expected 671,088,640 B, half of bf16's; got {got}"
    )


test_q1_public(kv_cache_bytes)


# %%
# HIDDEN
def test_q1_other_models(kv_cache_bytes):
    from course_lib import parallelism

    forbidden = {"kv_cache_bytes", "kv_cache_bytes_per_device", "serving_memory"}
    files = ("course_lib/serving/replica.py", "course_lib/serving/reports.py")
    cases = [  # layers × 2 (K, V) × KV heads × head size × context × sequences × bytes, by hand
        ((parallelism.LLAMA3_8B, 8192, 4), 4_294_967_296),  # 32 × 2 × 8 × 128 × 8192 × 4 × 2
        ((parallelism.GPT3_175B, 2048, 3), 28_991_029_248),  # 96 × 2 × 96 × 128 × 2048 × 3 × 2: every head has K, V
        ((parallelism.LLAMA3_405B, 131072, 1, 1), 33_822_867_456),  # 126 × 2 × 8 × 128 × 131072 in int8
        ((parallelism.LLAMA32_3B, 1000, 7), 802_816_000),  # 28 × 2 × 8 × 128 × 1000 × 7 × 2
        ((parallelism.LLAMA32_1B, 128000, 2, 1), 4_194_304_000),  # 16 × 2 × 8 × 64 × 128000 × 2 × 1
    ]
    for case, want in cases:
        result, called = calling(kv_cache_bytes, *case, forbidden=forbidden, files=files)
        got = number(result)
        shown = (case[0].name, *case[1:])
        assert not called and got is not None and abs(got - want) <= 1e-9 * want, (
            f"kv_cache_bytes{shown}: expected {want:,} B, got {result!r:.80}"
        )


test_q1_other_models(kv_cache_bytes)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 2
# all_or_nothing: true

# %% [markdown]
# ### Question 2 · The batch at which decode turns compute-bound (2 points)
#
# In one decode step a GPU reads each of its weights once (`bytes_per_param` bytes) and multiplies it by the batch:
# 2 FLOPs per weight and per sequence. Write `compute_bound_batch(peak_flops_per_s, hbm_bandwidth_bytes_per_s,
# bytes_per_param)`: the smallest whole batch $b$ at which those multiplies take *longer* than reading the weights
# (at the given peak FLOP/s and HBM bandwidth). Do not call `serving.decode_compute_bound_sequences`. Check your
# answer in the lab, whose summary says from which batch the multiplies are compute-bound: it runs decode's
# multiplies at half of peak (`serving.DECODE_COMPUTE_EFFICIENCY`), so give your function half the peak to compare.

# %% [raw]
# # BEGIN SOLUTION


# %%
def compute_bound_batch(peak_flops_per_s, hbm_bandwidth_bytes_per_s, bytes_per_param):
    """Smallest whole batch whose weight multiplies (2·b FLOPs per weight) outlast the weight reads."""
    # BEGIN SOLUTION
    # 2·b·N / peak > N·e / BW  ⇔  b > peak·e / (2·BW): the next integer above the ratio, even when it is whole
    return int(peak_flops_per_s * bytes_per_param // (2 * hbm_bandwidth_bytes_per_s)) + 1
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q2_public(compute_bound_batch):
    assert callable(compute_bound_batch), "define the function compute_bound_batch"

    forbidden, files = {"decode_compute_bound_sequences"}, ("course_lib/serving/replica.py",)
    result, called = calling(compute_bound_batch, 989e12, 3.35e12, 2, forbidden=forbidden, files=files)
    assert not called, "compute it from the FLOPs and bytes per weight instead of decode_compute_bound_sequences"
    got = number(result)
    assert got == 296 and float(got).is_integer(), (
        f"an H100 (989 TFLOP/s bf16, 3.35 TB/s) with bf16 weights: expected 296 sequences, got {result!r:.80}"
    )
    for case, want, why in (
        ((989e12, 3.35e12, 1), 148, "with 1-byte weights each weight read feeds half the FLOPs' worth of bytes"),
        ((4e12, 1e12, 2), 5, "at b = 4 the multiplies take exactly as long as the reads: compute-bound from 5"),
    ):
        got = number(calling(compute_bound_batch, *case, forbidden=forbidden, files=files)[0])
        assert got == want, f"compute_bound_batch{case}: expected {want} ({why}), got {got}"


test_q2_public(compute_bound_batch)


# %%
# HIDDEN
def test_q2_other_devices(compute_bound_batch):
    forbidden, files = {"decode_compute_bound_sequences"}, ("course_lib/serving/replica.py",)
    cases = [  # the next whole number above peak × bytes / (2 × bandwidth), by hand
        ((1.97e14, 8.2e11, 2), 241),  # TPU v5e, bf16 (the scaling book's 240)
        ((1.97e14, 8.2e11, 1), 121),  # int8 weights, bf16 arithmetic (its 120)
        ((989e12, 3.35e12, 1), 148),  # H100 with int8 weights: half the batch
        ((2.25e15, 8e12, 2), 282),  # B200
        ((312e12, 2.039e12, 2), 154),  # A100
        ((2e14, 1e12, 2), 201),  # exactly 200: at b = 200 the multiplies take as long as the reads, not longer
    ]
    for case, want in cases:
        result, called = calling(compute_bound_batch, *case, forbidden=forbidden, files=files)
        got = number(result)
        assert not called and got == want, f"compute_bound_batch{case}: expected {want}, got {result!r:.80}"


test_q2_other_devices(compute_bound_batch)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 3
# all_or_nothing: true

# %% [markdown]
# ### Question 3 · The t past which latency rises (3 points)
#
# Write `lowest_latency_t(model, cluster, sequences, context_len)`: among the tensor-parallel sizes $t$ from 1 to
# `cluster.devices` that a replica with $p = 1$ can use, the one with the lowest time per output token for
# `sequences` sequences of `context_len` tokens; past it, latency rises. A usable $t$ divides `model.heads`, and
# either divides `model.kv_heads` or is a multiple of it; and the replica must fit: the `total` of
# `serving.serving_memory(model, t, 1, sequences, context_len)` at most `cluster.accelerator.hbm_capacity_bytes`.
# Return `None` if no $t$ fits. Time each with `serving.decode_step(model, cluster, t, 1, sequences,
# context_len).time_per_output_token_s`; do not call `serving.latency_optimal_tensor_parallel`.

# %% [raw]
# # BEGIN SOLUTION


# %%
def lowest_latency_t(model, cluster, sequences, context_len):
    """The usable t (p = 1) that fits and has the lowest time per output token, or None if none fits."""
    # BEGIN SOLUTION
    best_t, best_s = None, None
    for t in range(1, cluster.devices + 1):
        if model.heads % t or (model.kv_heads % t and t % model.kv_heads):
            continue
        memory = serving.serving_memory(model, t, 1, sequences, context_len)
        if memory.total > cluster.accelerator.hbm_capacity_bytes:
            continue
        seconds = serving.decode_step(model, cluster, t, 1, sequences, context_len).time_per_output_token_s
        if best_s is None or seconds < best_s:
            best_t, best_s = t, seconds
    return best_t
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q3_public(lowest_latency_t):
    assert callable(lowest_latency_t), "define the function lowest_latency_t"
    from course_lib import hardware, parallelism

    forbidden, files = {"latency_optimal_tensor_parallel"}, ("course_lib/serving/replica.py",)
    four_nodes = hardware.Cluster("4 × DGX H100", hardware.H100, 8, 4, hardware.NVLINK4, hardware.INFINIBAND_NDR_8X)
    result, called = calling(
        lowest_latency_t, parallelism.LLAMA3_70B, four_nodes, 1, 4096, forbidden=forbidden, files=files
    )
    assert not called, "compare the decode steps yourself instead of calling latency_optimal_tensor_parallel"
    assert result == 16 and not isinstance(result, bool), (
        f"Llama 3.1 70B, one sequence of 4096 tokens, four DGX H100 nodes: expected t = 16, got {result!r:.80}"
    )
    three_nodes = hardware.Cluster("3 × DGX H100", hardware.H100, 8, 3, hardware.NVLINK4, hardware.INFINIBAND_NDR_8X)
    result = calling(lowest_latency_t, parallelism.GPT3_175B, three_nodes, 1, 4096, forbidden=forbidden, files=files)[0]
    assert result == 24, f"GPT-3 175B (96 heads) on three nodes: expected t = 24, not only powers of 2; got {result!r}"
    result = calling(lowest_latency_t, parallelism.GPT3_175B, hardware.DGX_H100, 16, 4096, forbidden=forbidden,
                     files=files)[0]  # fmt: skip
    assert result is None, f"GPT-3 175B with 16 sequences on one node fits at no t: expected None, got {result!r}"


test_q3_public(lowest_latency_t)


# %%
# HIDDEN
def test_q3_other_cases(lowest_latency_t):
    from course_lib import hardware, parallelism

    forbidden, files = {"latency_optimal_tensor_parallel"}, ("course_lib/serving/replica.py",)

    def nodes(count, node):
        return hardware.Cluster(
            f"{count} × {node.name}", node.accelerator, 8, count, node.intra_node_link, node.inter_node_link
        )

    h100, a100, b200 = hardware.DGX_H100, hardware.DGX_A100, hardware.DGX_B200
    cases = [  # the answers of serving.latency_optimal_tensor_parallel (None where it finds nothing that fits)
        ((parallelism.LLAMA3_8B, nodes(1, h100), 1, 4096), 8),
        ((parallelism.LLAMA3_405B, nodes(4, h100), 1, 4096), 32),
        ((parallelism.LLAMA3_405B, nodes(1, h100), 1, 4096), None),  # 810 GB of weights on 8 × 80 GB
        ((parallelism.LLAMA3_70B, nodes(4, h100), 64, 32768), None),  # past t = 8 the cache no longer shrinks
        ((parallelism.GPT3_175B, nodes(4, h100), 1, 2048), 24),  # 96 heads: t = 24 is usable, not only powers of 2
        ((parallelism.GPT3_175B, nodes(8, h100), 8, 2048), 24),
        ((parallelism.LLAMA32_3B, nodes(4, h100), 1, 4096), 4),
        ((parallelism.LLAMA3_70B, nodes(2, a100), 16, 8192), 8),
        ((parallelism.LLAMA3_70B, nodes(4, b200), 1, 4096), 8),
    ]
    for case, want in cases:
        result, called = calling(lowest_latency_t, *case, forbidden=forbidden, files=files)
        shown = (case[0].name, case[1].name, *case[2:])
        assert not called and result == want and not isinstance(result, bool), (
            f"lowest_latency_t{shown}: expected {want}, got {result!r:.80}"
        )


test_q3_other_cases(lowest_latency_t)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q4
# points: 3
# all_or_nothing: true

# %% [markdown]
# ### Question 4 · The time per output token of a plan (3 points)
#
# Write `time_per_output_token(model, cluster, tensor_parallel, sequences, context_len)` for a replica with $p = 1$
# and a $t$ that divides `model.kv_heads` (so every GPU holds $1/t$ of the weights and of the cache), built from the
# two rooflines of a decode step and its collectives, on one GPU:
#
# - the weight multiplies: the longer of reading the GPU's share of `serving.matmul_params(model)` parameters
#   (2 bytes each) at the HBM bandwidth, and multiplying them (2 FLOPs per parameter and per sequence) at
#   `serving.DECODE_COMPUTE_EFFICIENCY` × `peak("bf16")` (half of peak: the rate the course states for decode's
#   skinny multiplies);
# - attention: the longer of reading the GPU's share of the batch's KV cache (bf16), and its arithmetic, $4 \cdot
#   b \cdot l \cdot h \cdot$ `context_len` FLOPs for the whole model, at the same rate;
# - the tensor-parallel all-reduces of the $b \times h$ activations (2 bytes each) of every layer, each timed with
#   `budget.group_collective_time("all_reduce", cluster, t, 1, payload_bytes)`. How many per layer?
#
# Use `serving.kv_cache_bytes` for the cache (not your answer to question 1), and do not call `serving.decode_step`,
# `serving.latency_throughput_curve` or `serving.compare_training_and_serving`. The lab's decode bar shows the same
# terms.

# %% [raw]
# # BEGIN SOLUTION


# %%
def time_per_output_token(model, cluster, tensor_parallel, sequences, context_len):
    """Seconds per output token of a replica with t = ``tensor_parallel`` and p = 1 (t divides the KV heads)."""
    # BEGIN SOLUTION
    t, b = tensor_parallel, sequences
    bandwidth = cluster.accelerator.hbm_bandwidth_bytes_per_s
    peak = cluster.accelerator.peak("bf16") * serving.DECODE_COMPUTE_EFFICIENCY
    params = serving.matmul_params(model) / t
    weights = max(2 * params / bandwidth, 2 * b * params / peak)
    cache = serving.kv_cache_bytes(model.layers, model.kv_heads, model.head_dim, context_len, b) / t
    attention = max(cache / bandwidth, 4 * b * model.layers * model.hidden * context_len / t / peak)
    one_all_reduce = budget.group_collective_time("all_reduce", cluster, t, 1, 2 * b * model.hidden)
    return weights + attention + 2 * model.layers * one_all_reduce  # two all-reduces per layer (Megatron-LM)
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q4_public(time_per_output_token):
    assert callable(time_per_output_token), "define the function time_per_output_token"
    from course_lib import hardware, parallelism

    forbidden = {"decode_step", "latency_throughput_curve", "compare_training_and_serving"}
    files = ("course_lib/serving/replica.py", "course_lib/serving/reports.py")
    result, called = calling(
        time_per_output_token, parallelism.LLAMA3_70B, hardware.DGX_H100, 8, 1, 4096, forbidden=forbidden, files=files
    )
    assert not called, f"build it from its terms instead of calling {', '.join(sorted(called))}"
    got, want = number(result), 0.008437410377762253
    assert got is not None and abs(got - want) <= 1e-9 * want, (
        f"Llama 3.1 70B on a DGX H100, t = 8, one sequence of 4096 tokens: expected {want * 1e3:.4f} ms (5.19 ms of "
        f"weight reads, 3.17 ms of all-reduce latency), got {result!r:.80}"
    )
    result = calling(time_per_output_token, parallelism.LLAMA3_70B, hardware.DGX_H100, 8, 512, 1024,
                     forbidden=forbidden, files=files)[0]  # fmt: skip
    got, want = number(result), 0.03314362329747629
    assert got is not None and abs(got - want) <= 1e-9 * want, (
        f"the same replica with 512 sequences of 1024 tokens (compute-bound at half of peak, with the KV reads): "
        f"expected {want * 1e3:.4f} ms, got {result!r:.80}"
    )


test_q4_public(time_per_output_token)


# %%
# HIDDEN
def test_q4_other_plans(time_per_output_token):
    from course_lib import hardware, parallelism

    forbidden = {"decode_step", "latency_throughput_curve", "compare_training_and_serving"}
    files = ("course_lib/serving/replica.py", "course_lib/serving/reports.py")

    def nodes(count, node):
        return hardware.Cluster(
            f"{count} × {node.name}", node.accelerator, 8, count, node.intra_node_link, node.inter_node_link
        )

    h100 = hardware.DGX_H100
    cases = [  # serving.decode_step(model, cluster, t, 1, b, context).time_per_output_token_s
        ((parallelism.LLAMA3_70B, h100, 8, 512, 4096), 0.05237482014523749),  # compute-bound multiplies
        ((parallelism.LLAMA3_8B, h100, 1, 1, 512), 0.004500584539701492),  # t = 1: no all-reduce
        ((parallelism.LLAMA3_8B, h100, 2, 320, 1024), 0.012999433032916372),
        ((parallelism.GPT3_175B, nodes(2, h100), 16, 8, 2048), 0.018101551093263227),  # across two nodes
        ((parallelism.GPT3_175B, nodes(2, h100), 12, 1, 2048), 0.014571376670231262),
        ((parallelism.LLAMA3_405B, nodes(1, hardware.DGX_B200), 8, 64, 8192), 0.025114298525957448),
        ((parallelism.LLAMA3_70B, hardware.DGX_A100, 4, 16, 16384), 0.030692839008045505),
        ((parallelism.LLAMA32_3B, hardware.DGX_H200, 2, 1024, 128), 0.010288932915722554),
    ]
    for case, want in cases:
        result, called = calling(time_per_output_token, *case, forbidden=forbidden, files=files)
        got = number(result)
        shown = (case[0].name, case[1].name, *case[2:])
        assert not called and got is not None and abs(got - want) <= 1e-9 * want, (
            f"time_per_output_token{shown}: expected {want:.6g} s, got {result!r:.80}"
        )


test_q4_other_plans(time_per_output_token)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q5
# points: 2
# all_or_nothing: true

# %% [markdown]
# ### Question 5 · The knee of a concurrency sweep (2 points)
#
# A sweep measures a replica's output throughput at increasing concurrencies. Write
# `knee_concurrency(concurrencies, output_tokens_per_s, fraction=0.9)`: the knee by the rule the sweep above uses
# (and [lesson 10](../notebooks/10_serving.ipynb) teaches in its step 10), the smallest concurrency whose throughput reaches
# (is at least) `fraction` of the sweep's maximum throughput. `concurrencies` is increasing, `output_tokens_per_s`
# holds one throughput per concurrency (lists or arrays); return the concurrency itself, a whole number. Do not use
# the knee that `course_lib` works out (`knee_concurrency` of a sweep or a report). Check your answer on the lab's
# sweep: the key figures above print its throughputs and its knee.

# %% [raw]
# # BEGIN SOLUTION


# %%
def knee_concurrency(concurrencies, output_tokens_per_s, fraction=0.9):
    """The smallest of ``concurrencies`` whose throughput is at least ``fraction`` of the sweep's maximum."""
    # BEGIN SOLUTION
    threshold = fraction * max(output_tokens_per_s)  # of the maximum, not of the last point: past the knee
    for concurrency, rate in zip(concurrencies, output_tokens_per_s, strict=True):  # throughput may fall again
        if rate >= threshold:  # reaching it counts
            return int(concurrency)
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q5_public(knee_concurrency):
    assert callable(knee_concurrency), "define the function knee_concurrency"

    forbidden = {"knee_concurrency"}
    files = ("course_lib/serving/scheduler.py", "course_lib/serving/sweep.py")
    cases = [
        # (concurrencies, throughput, fraction), the knee, why
        (([1, 2, 4, 8], [100.0, 450.0, 900.0, 1000.0]), 4, "900 is exactly 90 % of 1000: reaching it counts"),
        (([1, 2, 4, 8, 16], [200.0, 700.0, 1000.0, 950.0, 600.0]), 4, "90 % of the maximum, 1000, not of the last"),
        (([1, 2, 4, 8], [100.0, 450.0, 900.0, 1000.0], 0.4), 2, "with fraction = 0.4 the threshold is 400"),
        (([1, 3, 10, 30], [50.0, 140.0, 420.0, 460.0]), 10, "return the concurrency, not its position"),
    ]
    for args, want, why in cases:
        result, called = calling(knee_concurrency, *args, forbidden=forbidden, files=files)
        assert not called, "find the knee from the throughputs yourself instead of calling knee_concurrency"
        got = number(result)
        assert got == want and float(got).is_integer(), (
            f"knee_concurrency{args}: expected {want} ({why}), got {result!r:.80}"
        )


test_q5_public(knee_concurrency)


# %%
# HIDDEN
def test_q5_other_sweeps(knee_concurrency):
    forbidden = {"knee_concurrency"}
    files = ("course_lib/serving/scheduler.py", "course_lib/serving/sweep.py")
    powers = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    cases = [  # the knee by the rule, by hand
        # two sweeps of the lab (at an earlier fit of the engine): Llama 3.1 8B on one H100 (its most at 512, its knee
        # at the engine's cap), Llama 3.1 70B on 8 H100s with 32 output tokens (the knee at 64: 647.68 ≥ 635.5)
        ((powers, [127.57, 249.45, 477.57, 879.91, 1521.58, 2396.59, 3367.06, 4210.56, 4709.47, 4722.75]), 256),
        ((powers, [92.09, 162.17, 261.75, 377.73, 494.49, 586.98, 647.68, 683.72, 701.49, 706.09]), 64),
        (([1, 2, 4], [10.0, 10.0, 10.0]), 1),  # flat: the first already reaches it
        (([64], [5000.0]), 64),  # one point
        (([1, 2, 4, 8], [100, 300, 270, 299], 1.0), 2),  # fraction 1: the first maximum, integers in
        (([2, 6, 18, 54, 162], [90.0, 250.0, 640.0, 712.0, 711.0], 0.95), 54),  # 0.95 × 712 = 676.4
        (([1, 2, 4, 8, 16], [100.0, 899.9, 950.0, 1000.0, 300.0]), 4),  # 899.9 falls just short of 900
    ]
    for args, want in cases:
        result, called = calling(knee_concurrency, *args, forbidden=forbidden, files=files)
        got = number(result)
        assert not called and got == want, f"knee_concurrency{args}: expected {want}, got {result!r:.80}"


test_q5_other_sweeps(knee_concurrency)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [markdown]
# ## Before you submit
#
# Restart the kernel and run all cells: the last cell reruns every public test. Then submit this notebook
# (`06_serving.ipynb`) as your instructor asks.
