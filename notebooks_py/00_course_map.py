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
# # 00 · Find your way: the course map
#
# **Parallelism as a memory and communication budget** teaches how large models are split across accelerators and
# what every split costs. A model that does not fit on one device must be divided, and each way of dividing it —
# by examples, inside layers, across layers, or by sharding the stored state — decides two budgets: the **memory**
# each device must hold and the **bytes** that must cross device boundaries, how often and over which link. By
# the end you can take a model, a batch and a cluster and derive how much memory each device needs, which tensors
# cross device boundaries, how long each collective takes, how much of that time is exposed on the critical path,
# and which partition to choose.
#
# **Who it is for.** Engineers and students who know Python and a little linear algebra and want to reason about
# distributed training and serving with numbers rather than rules of thumb: self-learners in JupyterLab, learners
# on Binder, and instructors who hand the labs out as graded assignments.
#
# **How it is built.** Every number in these notebooks is computed by one small Python package, `course_lib`, whose
# formulas are tested against published tables ([ZeRO](glossary.ipynb#zero)'s Table 1, nccl-tests' bus-bandwidth
# factors, Korthikanti et al.'s activation table, Narayanan et al.'s FLOP derivation) and against simulations
# (collectives run step by step on numpy arrays; pipeline schedules run event by event). The notebooks call it; they
# never re-derive a formula.
#
# **Time to learn:** about 0.6 hours by the course's rule ([how it is counted](#How-long-each-part-takes)).

# %%
from pathlib import Path

import matplotlib.pyplot as plt

from course_lib import hardware, units, viz

# %% [markdown]
# ## The chain of lessons
#
# The lessons build on each other; read them in order. Each lesson starts with what you will learn and which
# earlier lessons it needs, and ends with exercises and the sources of every number. The figure draws the **core
# path** solid and the **depth tracks** dashed (each notebook says which it is in its metadata, `course.track`).

# %%
fig, ax = plt.subplots(figsize=(13, 4.2), layout="constrained")
viz.plot_course_map(ax=ax, tracks=viz.notebook_tracks(Path.cwd().parent))
plt.show()

# %% [markdown]
# ## The core path and the depth tracks
#
# **The core path** is the chain that counts the work (01), moves the data (02), splits the work (03) and budgets
# the bytes (04), then [lab 5](../labs/05_partition_explorer.ipynb), where you derive every transfer a partition
# implies, and lesson 05 as a short capstone: search every plan a cluster allows and say what binds each. By the rule
# below, the core path takes about **9.9 hours** and the whole course about **28.0 hours**.
#
# Each depth notebook adds one thing to the core path; take those you need, in any order their prerequisites allow:
#
# - [06 · Long sequences and many experts](06_sequences_and_experts.ipynb): splitting the sequence and a mixture of
#   experts over GPUs, pipelines without a bubble and 8-bit training, for what the core's four splits do not fit.
# - [07 · Measure, don't assume](07_measure.ipynb): real collectives timed on MPI, α and B fitted from them.
# - [08 · Check the model against measurements](08_model_meets_measurements.ipynb): the model held to 1,758
#   measured runs, and a calibration.
# - [09 · Plan a real run](09_capstone.ipynb): the full capstone, a 70B model planned as its framework will run it,
#   with a band from lessons 07 and 08.
# - [10 · Serve a model](10_serving.ipynb): the model serving requests, not training: prefill and decode, the KV
#   cache, an inference engine's batching and scheduler, and how many users a node serves.
# - [Lab 1](../labs/01_ring_allreduce.ipynb), [lab 2](../labs/02_global_batch.ipynb),
#   [lab 3](../labs/03_memory_budget.ipynb) and [lab 4](../labs/04_pipeline_schedule.ipynb): practice with sliders and
#   graded questions on the ring all-reduce (02), the global batch, the memory budget and the pipeline schedule (03).
# - [Lab 6](../labs/06_serving.ipynb): serving a model; [lab 7](../labs/07_sequences_and_experts.ipynb): lesson 06's
#   sequences and experts; [lab 8](../labs/08_measure_collectives.ipynb): lesson 07's measurements, graded.
# - The [glossary](glossary.ipynb): a reference to look terms up in as you meet them (the lessons define each at
#   first use); reading it through counts in the whole course.
#
# | Lesson | Track | You learn to | Needs | Time |
# |---|---|---|---|---|
# | [00 · Course map](00_course_map.ipynb) (this page) | core | find your way: the chain, the core path, the notation, the hardware | — | 0.6 h |
# | [01 · Count the work](01_mac.ipynb) | core | count FLOPs (a MAC is 2 FLOPs; a [GEMM](glossary.ipynb#gemm) is $2MNK$), use the roofline, budget bytes per parameter | Python, matrices | 1.6 h |
# | [02 · Move the data](02_nccl.ipynb) | core | say what each collective does, cost it with $T \approx n\alpha + Q/B_\text{eff}$, read algbw and busbw | 01 | 1.7 h |
# | [03 · Split the work](03_parallelism.ipynb) | core | split a model by data, tensor, pipeline and ZeRO; size memory per device and the global batch | 01, 02 | 1.8 h |
# | [04 · Budget the bytes](04_communication_budget.ipynb) | core | derive a partition's transfers, separate exposed from hidden time, price one plan's step | 01–03 | 1.6 h |
# | [05 · Search for a plan](05_plan_search.ipynb) | core | search every plan a cluster allows, read why each loses, compare the model with a published run | 03, 04 | 1.1 h |
# | [06 · Long sequences and many experts](06_sequences_and_experts.ipynb) | depth | split long sequences and many experts over GPUs, find the longest sequence that fits, price what the new axes move, read zero-bubble pipelines and 8-bit training | 03, 04, 05 | 1.4 h |
# | [07 · Measure, don't assume](07_measure.ipynb) | depth | time real collectives on [MPI](glossary.ipynb#mpi), fit α and B, measure exposed communication, read nccl-tests logs | 02, 04, 05 | 1.5 h |
# | [08 · Check the model against measurements](08_model_meets_measurements.ipynb) | depth | replay 3,306 measured runs (1,758 of which ran) through the model, calibrate on some and judge on the others, find the term that fails; rank with the model, decide by measuring | 04, 05, 07 | 1.5 h |
# | [09 · Plan a real run](09_capstone.ipynb) | depth | plan a 70-billion-parameter model on 64 H100s by hand, then with the search as Megatron-LM will run it: one plan with its memory margin and step-time band, the assumptions that could change it, what to measure first | 04, 05, 07, 08 | 1.5 h |
# | [10 · Serve a model](10_serving.ipynb) | depth | tell [prefill](glossary.ipynb#prefill) from [decode](glossary.ipynb#decode), size the [KV cache](glossary.ipynb#kv-cache), split a token's time into weight reads, cache reads and all-reduce latency, trade latency for throughput, choose a partition for serving; price an engine's iterations, read a concurrency sweep and its [knee](glossary.ipynb#knee), size a node for N users | 01, 02, 04 | 1.5 h |
# | [Glossary](glossary.ipynb) | depth | look up a term, an abbreviation or a symbol where you meet it | — | 0.6 h |
#
# **Labs.** Eight widget labs practise the lessons with sliders, in the order you meet their lessons:
#
# | Lab | Track | After lesson | Time |
# |---|---|---|---|
# | [01 · the ring all-reduce](../labs/01_ring_allreduce.ipynb) | depth | 02 | 1.4 h |
# | [02 · the global batch](../labs/02_global_batch.ipynb) | depth | 03 | 1.1 h |
# | [03 · the memory budget](../labs/03_memory_budget.ipynb) | depth | 03 | 1.5 h |
# | [04 · the pipeline schedule](../labs/04_pipeline_schedule.ipynb) | depth | 03 | 1.4 h |
# | [05 · the partition explorer](../labs/05_partition_explorer.ipynb) | core | 04 | 1.4 h |
# | [06 · serving](../labs/06_serving.ipynb) | depth | 10 | 1.7 h |
# | [07 · sequences and experts](../labs/07_sequences_and_experts.ipynb) | depth | 06 | 1.4 h |
# | [08 · measuring collectives](../labs/08_measure_collectives.ipynb) | depth | 07 | 1.6 h |
#
# Each has a question to explore, with its answer, then three to five graded questions that ask you to derive the
# lab's model yourself: write your answer where you see `...` and run the `grader.check("q1")` cell below it for
# immediate feedback.

# %% [markdown]
# ## How long each part takes
#
# Every time in the course is counted by one rule, from the notebooks themselves (`python -m tools.course_time`
# prints it; a test checks that what each notebook, this map and the README state agrees with it within 10 %):
# prose at 100 words a minute, 2 minutes for each code cell you run, 10 minutes for each exercise or explore
# question, 15 minutes for each graded question. A word is a run of letters or digits ("all-reduce", "2.02" and
# "don't" are one word each); in an equation each symbol counts as a word, so $T \approx n\alpha + Q/B_\text{eff}$
# is six. An exercise's or a graded question's minutes include reading it and its answer. A learner new to multi-GPU
# training may need longer.

# %% [markdown]
# ## How to use the course
#
# - **On your machine (JupyterLab).** With `python3` (3.10 or newer) and `make`, run `make lab` in the repository:
#   it creates a virtual environment with the locked package versions and opens this notebook. `make test` runs
#   every test, including a check that each notebook still produces the outputs stored in it.
# - **On Binder.** Once the course is on GitHub, mybinder.org opens the same notebooks in your browser from its
#   repository, nothing to install (the README says how; the course's website links each page there). Sessions are
#   temporary: download what you want to keep.
# - **Reading.** Run the cells top to bottom (*Run → Run All Cells*). Change a number in a code cell and run it
#   again: every quantity is printed with its unit ("2.02 ms", "100 MB", "50 GB/s").
# - **Self-checks.** Each lesson has multiple-choice questions that answer immediately with an explanation. They
#   are for you; nothing is recorded.
# - **Glossary.** Every term, abbreviation, symbol and hardware name is in the [glossary](glossary.ipynb), with the
#   lesson that introduces it and its source; a lesson links an entry where you first meet a term it does not define.
# - **Graded labs.** The labs' questions are otter-grader assignments. On your own, `grader.check` runs each
#   question's public tests and tells you at once whether your answer passes. Instructors also have hidden tests
#   and grade a class offline: the README's instructor section says how.

# %% [markdown]
# ## Notation
#
# The same symbols are used in the prose, in the equations and — under the code name — in `course_lib`; the
# [glossary](glossary.ipynb#Symbols) lists them with the symbols the lessons add. Quantities
# are in SI base units; decimal prefixes by default (1 GB = $10^9$ bytes), binary ones (GiB) only where named.
#
# | Symbol | Code name | Meaning | Unit |
# |---|---|---|---|
# | $M, N, K$ | `m`, `n`, `k` | GEMM dimensions: $[M\times K]\cdot[K\times N]$ | — |
# | $b$ (or $b_\text{micro}$) | `micro_batch` | sequences one replica processes at once (a micro-batch) | samples |
# | $B_\text{global}$ | `global_batch` | samples per optimizer step, $b \cdot m \cdot d$ | samples |
# | $s$ | `seq_len` | sequence length | tokens |
# | $h$ | `hidden` | hidden size of the transformer | — |
# | $a$ | `heads` | attention heads | — |
# | $l$ | `layers` | transformer layers | — |
# | $V$ | `vocab` | vocabulary size | — |
# | $\Psi$ (or $P$) | `params` | parameter count | parameters |
# | $D$ | `tokens` | training tokens | tokens |
# | $N_\text{GPU}$ | `gpus` | accelerators working on one run, $d \cdot t \cdot p$ | — |
# | $K_\text{opt}$ | `optimizer_bytes_per_param` | optimizer-state bytes per parameter (12 for mixed-precision Adam) | bytes |
# | $I$ | `intensity_flops_per_byte` | arithmetic intensity | FLOP/byte |
# | $R$ | `peak_flops_per_s` | peak FLOP rate of an accelerator | FLOP/s |
# | $R_\text{attainable}$ | `attainable_flops_per_s` | the rate the roofline allows a kernel, $\min(R, I \cdot B_\text{HBM})$ | FLOP/s |
# | $B_\text{HBM}$ | `memory_bandwidth_bytes_per_s` | [HBM](glossary.ipynb#hbm) bandwidth of an accelerator | bytes/s |
# | $T$ | `time_s` | a time; with a subscript, the time of what it names ($T_\text{comm}$, $T_\text{step}$, …) | s |
# | $T_\text{math}$, $T_\text{mem}$ | `roofline_time` | compute time, memory time; $T = \max$ of the two | s |
# | $p$ | `ranks` | ranks taking part in a collective (lessons 02, 04 and 07) | — |
# | $S$ | `payload_bytes` | a collective's buffer size, as nccl-tests defines it | bytes |
# | $n$ | `phases` | latency-bearing steps of a collective | — |
# | $Q$ | `wire_bytes` | bytes on a collective's critical path | bytes |
# | $\alpha$ | `latency_s` | startup latency of one step | s |
# | $B_\text{eff}$ (or $B$) | `bandwidth_bytes_per_s` | effective one-way bandwidth per rank | bytes/s |
# | $G$, $N_\text{nodes}$ | `devices_per_node`, `nodes` | GPUs per node, nodes (lesson 02's hierarchical all-reduce) | — |
# | $N_\text{rails}$ | `rails` | network rails a flat ring runs on, one ring each (lesson 02) | — |
# | $k$ | `DOUBLE_BINARY_TREE_CHUNKS` | chunks a pipelined tree cuts the buffer into (lesson 02) | — |
# | $\gamma$ | `reduce_s_per_byte` | reduction cost | s/byte |
# | algbw, busbw | `algbw_bytes_per_s`, `busbw_bytes_per_s` | nccl-tests' algorithm and bus bandwidth | bytes/s |
# | $d$ (or $N_d$, $N_\text{dp}$) | `data_parallel` | data-parallel replicas | — |
# | $t$ | `tensor_parallel` | tensor-parallel group size | — |
# | $p$ | `pipeline_parallel` | pipeline stages (lesson 03 on) | — |
# | $m$ (or $N_\text{acc}$) | `grad_accum_steps` | micro-batches per step (gradient accumulation) | — |
# | $v$ | `virtual_stages` | model chunks per device (interleaved schedule) | — |
# | $t_\text{F}$ | `forward_time_s` | forward pass (F) of one micro-batch through one pipeline stage | s |
# | $t_\text{bwd}$ | `backward_time_s` | whole backward of one micro-batch through one stage, $t_\text{B} + t_\text{W}$ | s |
# | $t_\text{B}$, $t_\text{W}$ | `backward_input_time_s`, `backward_weight_time_s` | the backward's two passes: input gradient (B), weight gradient (W) | s |
# | $T_\text{comm}$ | `comm_time`, `collective_time` | time of a collective, $n\alpha + Q/B_\text{eff}$ | s |
# | $T_\text{step}$ | `step_time_s` | time of one optimizer step | s |
# | $i$, $j$ | — | an index: of a rank, a chunk, a measurement | — |
#
# Each symbol names one quantity, with one exception the literature forces on us: $p$ is the ranks of a collective (as
# in MPI's papers: lessons 02, 04 and 07) and the pipeline stages (as in Megatron-LM's: lesson 03 on); lesson 04 uses
# both and says where each applies. A symbol in brackets is a second form a lesson keeps where it follows a paper:
# ZeRO's $N_d$ in its memory formulas, $N_\text{dp}$ in lesson 03's global batch, the accumulation count $N_\text{acc}$
# in the global batch, $P$ in Narayanan et al.'s formulas (lesson 01), and the plain $B$ of the α–β model for a
# bandwidth. `course_lib.pipeline` and `parallelism.pipeline_bubble_fraction` name $p$ and $m$ `stages` and
# `microbatches`, the names their graded lab uses.
#
# Letters the sources use for two things are settled once here (`tests/test_notation.py` holds every lesson and lab
# to it; a lesson adds its own symbols in its *Variables* table, and each must mean one thing):
# - **$R$** is the FLOP-rate family ($R$, $R_\text{attainable}$). The reduction arithmetic of a collective is written
#   out as $\gamma$ per byte reduced, and the capstone's worst slowdown of a plan is $\Lambda(x)$.
# - **$B$** is a bandwidth ($B$, $B_\text{eff}$, $B_\text{node}$, $B_\text{HBM}$), with one other member:
#   $B_\text{global}$, the global batch. HBM bandwidth is $B_\text{HBM}$.
# - **F, B and W** are the names of the three passes of a micro-batch (forward, input gradient, weight gradient),
#   upright and only as labels: $t_\text{F}$, $t_\text{B}$, $t_\text{W}$ their times, $M_\text{B}$, $M_\text{W}$ what
#   each keeps. A schedule that does not split the backward ([GPipe](glossary.ipynb#gpipe),
#   [1F1B](glossary.ipynb#one-f-one-b), interleaved: lessons 03, 04, 09 and lab 4) uses $t_\text{F}$ and the whole
#   backward $t_\text{bwd} = t_\text{B} + t_\text{W}$.
# - **$T$** is a time ($T_\text{comm}$, $T_\text{step}$, …); a count of tokens is $D$ (training tokens) or
#   $n_\text{tok}$ (the tokens one rank routes, lesson 06). Lesson 01 quotes Narayanan et al.'s Eq. (4), which writes
#   the training tokens as T, and says so in its table.
# - **$G$** is the GPUs per node. Megatron-LM's two tensor-parallel operators keep their paper's names **f** and
#   **g** (lesson 03's figure) as names in bold, never as symbols in the maths; the MLP's inner width is
#   $h_\text{ffn}$ (lesson 09).
# - **$k$** is the chunks of a pipelined tree (lesson 02); $k_E$, the experts a token visits (lesson 06), is a symbol
#   of its own.

# %% [markdown]
# ## The hardware presets
#
# The lessons use these accelerators and links (`course_lib.hardware`). Every bandwidth says what it means:
# one-way or two-way, per link, per GPU or per node, nominal (datasheet) or measured. The formulas need the
# **one-way bandwidth per device**, the last column of the link table. FLOP/s figures are dense (no sparsity).

# %%
print(f"{'accelerator':16} {'bf16 peak':>13} {'HBM':>8} {'HBM bandwidth':>14}  source")
for accelerator in hardware.ACCELERATORS.values():
    print(
        f"{accelerator.name:16} {units.format_flops_rate(accelerator.peak('bf16')):>13} "
        f"{units.format_bytes(accelerator.hbm_capacity_bytes):>8} "
        f"{units.format_bandwidth(accelerator.hbm_bandwidth_bytes_per_s):>14}  {accelerator.source}"
    )

# %%
print(f"{'link':42} {'as published':>13} {'semantics':28} {'α per step':>10} {'one-way/GPU':>12}")
for link in hardware.LINKS.values():
    semantics = f"{link.direction}, {link.scope}, {link.basis}"
    per_device = link.one_way_bytes_per_s_per_device(devices_per_node=8)
    print(
        f"{link.name:42} {units.format_bandwidth(link.bandwidth_bytes_per_s):>13} {semantics:28} "
        f"{units.format_time(link.latency_s):>10} {units.format_bandwidth(per_device):>12}"
    )
print()
for link in hardware.LINKS.values():
    print(f"{link.name}: {link.source}")

# %% [markdown]
# (A per-node figure is divided among the node's 8 GPUs; a per-link figure is what one device sends on the one link
# a unidirectional ring uses.) The clusters of the lessons combine these: for example
# `hardware.SELENE_3072`, the 384 DGX A100 nodes on which Narayanan et al. trained a 1-trillion-parameter model.

# %%
for cluster in hardware.CLUSTERS.values():
    print(
        f"{cluster.name}: {cluster.devices} × {cluster.accelerator.name}; "
        f"inside a node {units.format_bandwidth(cluster.intra_bandwidth_bytes_per_s)} one-way per GPU "
        f"({cluster.intra_node_link.name}), between nodes "
        f"{units.format_bandwidth(cluster.inter_bandwidth_bytes_per_s)} ({cluster.inter_node_link.name})"
    )

# %% [markdown]
# ## Where each learning objective is taught
#
# The course has two learning objectives: **size the global batch**, counting gradient accumulation and the
# replication that data parallelism implies, and **derive the communication a partition implies** on a given
# topology. Each row below is a piece of them, and where the course teaches it:
#
# | What you learn | Where |
# |---|---|
# | Size the global batch: micro-batch × accumulation steps × data-parallel replicas, and what tensor and pipeline parallelism do not multiply | [03 · What you'll learn](03_parallelism.ipynb#What-you'll-learn), [03 · Worked example](03_parallelism.ipynb#Worked-example) (8 × 16 × 64 = 8192); [lab 2](../labs/02_global_batch.ipynb) |
# | Derive the transfers and collectives a partition implies, rather than starting from a device count | [04 · What you'll learn](04_communication_budget.ipynb#What-you'll-learn), [04 · Mechanism](04_communication_budget.ipynb#Mechanism) |
# | What each split divides (examples, layers, tensor dimensions, stored state) and what it exchanges | [03 · Mechanism](03_parallelism.ipynb#Mechanism) and its figure of one model under four splits |
# | Memory per device: bytes per parameter, the first memory budget, then under each split | [01 · Worked example](01_mac.ipynb#Worked-example); [03 · Worked example](03_parallelism.ipynb#Worked-example); [lab 3](../labs/03_memory_budget.ipynb) |
# | What a collective costs: a latency per step plus the payload over the bandwidth, $T_\text{comm} \approx n\alpha + Q/B_\text{eff}$ | [02 · The science](02_nccl.ipynb#The-science), [02 · Worked example](02_nccl.ipynb#Worked-example); [lab 1](../labs/01_ring_allreduce.ipynb) |
# | What a bandwidth figure means (direction, scope, basis) and which one goes into $B$ | [02 · The science](02_nccl.ipynb#The-science), [02 · Misconception](02_nccl.ipynb#Misconception); [lab 1](../labs/01_ring_allreduce.ipynb) |
# | Place frequent exchanges on fast links: the hierarchical all-reduce | [02 · Worked example](02_nccl.ipynb#Worked-example); [04 · Mechanism](04_communication_budget.ipynb#Mechanism) |
# | The price of a split: sharding makes a model fit but adds traffic; larger groups shrink each device's work until communication dominates | [03 · Mechanism](03_parallelism.ipynb#Mechanism); [04 · Worked example](04_communication_budget.ipynb#Worked-example) (strong scaling) |
# | Exposed against overlapped communication, and why a step must be measured | [04 · The science](04_communication_budget.ipynb#The-science), [04 · Worked example](04_communication_budget.ipynb#Worked-example); [07 · Measure, don't assume](07_measure.ipynb) |
# | Training against serving: why a partition that trains well may serve poorly | [10 · Worked example](10_serving.ipynb#Worked-example) ([decode](glossary.ipynb#decode) is latency-bound); [01 · Figures](01_mac.ipynb#Figures) (the roofline); [lab 6](../labs/06_serving.ipynb) |
# | Pipeline bubbles and schedules | [03 · The science](03_parallelism.ipynb#The-science), [03 · Figures](03_parallelism.ipynb#Figures); [lab 4](../labs/04_pipeline_schedule.ipynb) |
# | The usual mistakes | the *Misconception* section of [02](02_nccl.ipynb#Misconception), [03](03_parallelism.ipynb#Misconception) and [04](04_communication_budget.ipynb#Misconception) |

# %% [markdown]
# ## What's next
#
# Start with [01 · Count the work](01_mac.ipynb): before splitting a model across devices, count how much work
# and how many bytes it takes on one.
