# ---
# jupyter:
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
# formulas are tested against published tables (ZeRO's Table 1, nccl-tests' bus-bandwidth factors, Korthikanti et
# al.'s activation table, Narayanan et al.'s FLOP derivation) and against simulations (collectives run step by step
# on numpy arrays; pipeline schedules run event by event). The notebooks call it; they never re-derive a formula.

# %%
import matplotlib.pyplot as plt

from course_lib import hardware, units, viz

# %% [markdown]
# ## The chain of lessons
#
# The lessons build on each other; read them in order. Each lesson starts with what you will learn and which
# earlier lessons it needs, and ends with exercises and the sources of every number.

# %%
fig, ax = plt.subplots(figsize=(11, 4.2), layout="constrained")
viz.plot_course_map(ax=ax)
plt.show()

# %% [markdown]
# | Lesson | You learn to | Needs |
# |---|---|---|
# | [01 · Count the work](01_mac.ipynb) | count FLOPs (a MAC is 2 FLOPs; a GEMM is 2mnk), use the roofline, budget bytes per parameter | Python, matrices |
# | [02 · Move the data](02_nccl.ipynb) | say what each collective does, cost it with $T \approx n\alpha + Q/B_\text{eff}$, read algbw and busbw | 01 |
# | [03 · Split the work](03_parallelism.ipynb) | split a model by data, tensor, pipeline and ZeRO; size memory per device and the global batch | 01, 02 |
# | [04 · Budget the bytes](04_communication_budget.ipynb) | derive a partition's transfers, separate exposed from hidden time, search for a plan | 01–03 |
# | [05 · Measure, don't assume](05_measure.ipynb) | time real collectives on MPI, fit α and B, measure exposed communication, read nccl-tests logs | 02, 04 |
# | [06 · Check the model against measurements](06_model_meets_measurements.ipynb) | replay 1,758 measured runs through the model, calibrate on some and judge on the others, find the term that fails; rank with the model, decide by measuring | 04, 05 |
#
# **Labs.** Four widget labs practise the lessons with sliders: [the ring all-reduce](../labs/01_ring_allreduce.ipynb)
# (after 02), [the global batch](../labs/02_global_batch.ipynb), [the memory budget](../labs/03_memory_budget.ipynb)
# and [the pipeline schedule](../labs/04_pipeline_schedule.ipynb) (after 03). Each has guided questions to explore,
# with their answers, then 3 or 4 graded questions that ask you to derive the lab's model yourself: write your
# answer where you see `...` and run the `grader.check("q1")` cell below it for immediate feedback.

# %% [markdown]
# ## How to use the course
#
# - **On your machine (JupyterLab).** With `python3` (3.10 or newer) and `make`, run `make lab` in the repository:
#   it creates a virtual environment with the locked package versions and opens this notebook. `make test` runs
#   every test, including a check that each notebook still produces the outputs stored in it.
# - **On Binder.** The *launch Binder* badge in the README opens the same notebooks in your browser with nothing to
#   install. Sessions are temporary: download what you want to keep.
# - **Reading.** Run the cells top to bottom (*Run → Run All Cells*). Change a number in a code cell and run it
#   again: every quantity is printed with its unit ("2.02 ms", "100 MB", "50 GB/s").
# - **Self-checks.** Each lesson has multiple-choice questions that answer immediately with an explanation. They
#   are for you; nothing is recorded.
# - **Graded labs.** The labs' questions are otter-grader assignments. On your own, `grader.check` runs each
#   question's public tests and tells you at once whether your answer passes. Instructors also have hidden tests
#   and grade a class offline: the README's instructor section says how.

# %% [markdown]
# ## Notation
#
# The same symbols are used in the prose, in the equations and — under the code name — in `course_lib`. Quantities
# are in SI base units; decimal prefixes by default (1 GB = $10^9$ bytes), binary ones (GiB) only where named.
#
# | Symbol | Code name | Meaning | Unit |
# |---|---|---|---|
# | $m, n, k$ | `m`, `n`, `k` | GEMM dimensions: $[m\times k]\cdot[k\times n]$ | — |
# | $B$ | `batch` | sequences in the batch a formula counts | samples |
# | $b$ | `micro_batch` | sequences per micro-batch on one replica | samples |
# | $s$ | `seq_len` | sequence length | tokens |
# | $h$ | `hidden` | hidden size of the transformer | — |
# | $a$ | `heads` | attention heads | — |
# | $l$ (or $L$) | `layers` | transformer layers | — |
# | $V$ | `vocab` | vocabulary size | — |
# | $\Psi$ (or $P$, $N$) | `params` | parameter count | parameters |
# | $D$ | `tokens` | training tokens | tokens |
# | $K$ | `optimizer_bytes_per_param` | optimizer-state bytes per parameter (12 for mixed-precision Adam) | bytes |
# | $I$ | `intensity_flops_per_byte` | arithmetic intensity | FLOP/byte |
# | $T_\text{math}$, $T_\text{mem}$ | `roofline_time` | compute time, memory time; $T = \max$ of the two | s |
# | $p$ | `ranks` | ranks taking part in a collective | — |
# | $S$ | `payload_bytes` | a collective's buffer size, as nccl-tests defines it | bytes |
# | $n$ | `phases` | latency-bearing steps of a collective | — |
# | $Q$ | `wire_bytes` | bytes on a collective's critical path | bytes |
# | $\alpha$ | `latency_s` | startup latency of one step | s |
# | $B_\text{eff}$ | `bandwidth_bytes_per_s` | effective one-way bandwidth per rank | bytes/s |
# | $\gamma$ | `reduce_s_per_byte` | reduction cost | s/byte |
# | algbw, busbw | `algbw_bytes_per_s`, `busbw_bytes_per_s` | nccl-tests' algorithm and bus bandwidth | bytes/s |
# | $d$ (or $N_d$) | `data_parallel` | data-parallel replicas | — |
# | $t$ | `tensor_parallel` | tensor-parallel group size | — |
# | $p$ | `pipeline_parallel`, `stages` | pipeline stages (the literature reuses $p$; each lesson says which) | — |
# | $m$ (or $N_\text{acc}$) | `grad_accum_steps`, `microbatches` | micro-batches per step (gradient accumulation) | — |
# | $v$ | `virtual_stages` | model chunks per device (interleaved schedule) | — |
# | $B_\text{global}$ | `global_batch` | samples per optimizer step, $b \cdot m \cdot d$ | samples |
# | $T_\text{comm}$ | `comm_time`, `collective_time` | time of a collective, $n\alpha + Q/B_\text{eff}$ | s |

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
# ## Where each part of the two concept cards is taught
#
# The course was written from two concept cards: *Data, tensor, pipeline, and state parallelism* (**P**) and
# *Parallelism as a memory and communication budget* (**B**). Every field of both is taught somewhere:
#
# | Card field | P: parallelism | B: communication budget |
# |---|---|---|
# | role | [03 · Mechanism](03_parallelism.ipynb#Mechanism); [01 · Worked example](01_mac.ipynb#Worked-example) (the first memory budget) | [04 · Mechanism](04_communication_budget.ipynb#Mechanism) |
# | description | [03 · Mechanism](03_parallelism.ipynb#Mechanism) and its figure of the same model under four splits | [04 · Mechanism](04_communication_budget.ipynb#Mechanism); [02 · hierarchical all-reduce](02_nccl.ipynb#The-science) |
# | specs | [03 · Mechanism](03_parallelism.ipynb#Mechanism) (table) | [04 · Mechanism](04_communication_budget.ipynb#Mechanism) (table); [02 · The science](02_nccl.ipynb#The-science) (latency plus payload) |
# | interfaces (in / out) | [03 · Mechanism](03_parallelism.ipynb#Mechanism) | [04 · Mechanism](04_communication_budget.ipynb#Mechanism); [02 · bandwidth semantics](02_nccl.ipynb#The-science) |
# | trade-off | [03 · Mechanism](03_parallelism.ipynb#Mechanism); [02 · Misconception](02_nccl.ipynb#Misconception) | [04 · Mechanism](04_communication_budget.ipynb#Mechanism) |
# | why it matters for AI (training vs inference) | [03 · Mechanism](03_parallelism.ipynb#Mechanism); [01 · memory budget](01_mac.ipynb#Worked-example) | [04 · Worked example, step 5](04_communication_budget.ipynb#Worked-example) (decode is latency-bound); [01 · roofline](01_mac.ipynb#Figures) (decode vs training GEMM) |
# | mechanism, every step | [03 · Mechanism](03_parallelism.ipynb#Mechanism) (3 steps); step 2 also [02 · hierarchical all-reduce](02_nccl.ipynb#Worked-example) | [04 · Mechanism](04_communication_budget.ipynb#Mechanism) (5 steps) and [04 · Worked example](04_communication_budget.ipynb#Worked-example), steps 1–5; "measure" also [02 · model vs nccl-tests](02_nccl.ipynb#Worked-example) |
# | misconception | [03 · Misconception](03_parallelism.ipynb#Misconception) | [04 · Misconception](04_communication_budget.ipynb#Misconception); [02 · Misconception](02_nccl.ipynb#Misconception) (aggregate link rates) |
# | check question | [03 · Self-check](03_parallelism.ipynb#Self-check), question 1 | [04 · Self-check](04_communication_budget.ipynb#Self-check), question 1 |
# | science: equation, variables, assumptions | [03 · The science](03_parallelism.ipynb#The-science) (global batch accounting) | [02 · The science](02_nccl.ipynb#The-science) ($T_\text{comm} \approx n\alpha + Q/B_\text{eff}$); [04 · The science](04_communication_budget.ipynb#The-science) |
# | engineering example | [03 · Worked example](03_parallelism.ipynb#Worked-example) (8 × 16 × 64 = 8192) | [02 · Worked example](02_nccl.ipynb#Worked-example) (2.02 ms); [04 · Worked example](04_communication_budget.ipynb#Worked-example) (against 1 ms of compute) |
# | evidence notes | [03 · Worked example](03_parallelism.ipynb#Worked-example) (packing, uneven batches) | [04 · The science](04_communication_budget.ipynb#The-science) and [History](04_communication_budget.ipynb#History); [02 · The science](02_nccl.ipynb#The-science) |
# | history | [03 · History](03_parallelism.ipynb#History) (Narayanan et al. 2021); [01 · History](01_mac.ipynb#History) | [04 · History](04_communication_budget.ipynb#History); [02 · History](02_nccl.ipynb#History) |
# | sources | [03 · Sources](03_parallelism.ipynb#Sources); [01 · Sources](01_mac.ipynb#Sources) | [04 · Sources](04_communication_budget.ipynb#Sources) (ZeRO, TPU v4); [02 · Sources](02_nccl.ipynb#Sources) |
# | learning objective | [03 · What you'll learn](03_parallelism.ipynb#What-you'll-learn) | [04 · What you'll learn](04_communication_budget.ipynb#What-you'll-learn) |
# | lab scope | [02 · Worked example](02_nccl.ipynb#Worked-example) (the ring all-reduce lab's scope) | the same |

# %% [markdown]
# ## What's next
#
# Start with [01 · Count the work](01_mac.ipynb): before splitting a model across devices, count how much work
# and how many bytes it takes on one.
