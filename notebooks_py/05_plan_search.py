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
# # 05 · Search for a plan: rank every partition a cluster allows
#
# Lesson 04 priced one plan: its transfers, the part of each that nothing hides, its step time and the term that
# binds it. A cluster allows thousands of plans, and the one a paper used is not always the one to use on your
# model, batch and machine. This lesson runs the same budget over every plan a cluster allows, rejects those that
# cannot run, ranks the rest, and reads why each loses to the one above it.

# %% [markdown]
# ## What you'll learn
#
# **Learning objective:** *derive communication consequences from a chosen partition and topology*, for every
# partition a cluster allows, and choose one.
#
# Along the way you will be able to:
#
# - say what a plan search enumerates, and the four reasons it rejects a candidate (the partition, the framework,
#   the batch, memory);
# - read a ranked table of plans and the binding constraint of each (which of compute, exposed communication and
#   the pipeline bubble takes the most time);
# - compare the model with a published run, and say why it misses on either side;
# - read a plan landscape: memory per device against step time, by binding constraint.

# %% [markdown]
# ## Prerequisites
#
# - [03 · Split the work](03_parallelism.ipynb): the plan's sizes $d, t, p, v, m, b$, ZeRO stages, recomputation
#   and sequence parallelism; memory per device.
# - [04 · Budget the bytes](04_communication_budget.ipynb): the step time of one plan, exposed and hidden
#   communication, the bubble, the binding constraint.
#
# **Time to learn:** about 1.1 hours by the course's rule
# ([how it is counted](00_course_map.ipynb#How-long-each-part-takes)).

# %%
import dataclasses

import matplotlib.pyplot as plt
import numpy as np

from course_lib import budget, compute, hardware, parallelism, units, viz
from course_lib.widgets import quiz

# %% [markdown]
# ## Mechanism
#
# **Role.** A plan search chooses the partition: it turns the budget of one plan (lesson 04) into a ranking of
# every plan a cluster allows, with the reason each one loses.
#
# It works in four steps:
#
# 1. **Enumerate** every factorisation $d \cdot t \cdot p$ of the cluster's device count, crossed with micro-batch
#    sizes, ZeRO stages, recomputation, sequence parallelism and interleaving.
# 2. **Reject** the plans that cannot run: $t$ does not divide the heads ("partition"; the ideal model also needs
#    $p \cdot v$ to divide the layers, the calibrated one splits them unevenly and its heaviest stage sets the pace);
#    the framework does not run the plan: it lacks its ZeRO stage or its pipeline schedule, or does not combine that
#    stage with a pipeline ("framework"); $b \cdot d$ does not divide the global batch ("batch divisibility"); or the
#    first stage does not fit in the device's memory ("memory").
# 3. **Estimate** the step time of each plan left, as lesson 04 did for one.
# 4. **Rank** them by step time (among equal times, the one with more memory to spare first) and name each one's
#    binding constraint.
#
# **Trade-off.** The search is only as good as the model that prices each plan: it ranks plans well where the
# model's errors are alike for all of them, and it cannot see a cost the model leaves out.
#
# **Why it matters for AI.** The best partition depends on the model's size, the batch, the cluster and the
# framework; a plan copied from a paper for another model or machine can be slower, or not fit at all.

# %% [markdown]
# ## The science
#
# A plan uses every device: $d \cdot t \cdot p = N_\text{GPU}$, and the global batch is
# $B_\text{global} = b \cdot m \cdot d$ (lesson 03). For each plan that partitions the model and the batch, the
# search computes the memory of the first pipeline stage (the fullest) and the step
#
# $$T_\text{step} = T_\text{compute} + T_\text{exposed} + T_\text{bubble}$$
#
# of lesson 04, and ranks by $T_\text{step}$. The binding constraint is the largest of the three terms, or
# "memory" for a plan that does not fit.
#
# | Symbol | Code name | Meaning | Unit |
# |---|---|---|---|
# | $d, t, p, v, m, b$ | `data_parallel`, `tensor_parallel`, `pipeline_parallel`, `virtual_stages`, `grad_accum_steps`, `micro_batch` | the plan (lesson 03) | – |
# | $N_\text{GPU}$ | `cluster.devices` | devices the plan uses, all of the cluster's | – |
# | $B_\text{global}$ | `global_batch` | sequences per optimizer step | samples |
# | $T_\text{step}$ | `step_time_s` (a column of `PlanSearch`) | modelled step time | s |
#
# *Assumptions:* those of lesson 04's step time, and by default the course's calibration (next section). The
# search does not try every framework option (bucket sizes, other schedules, expert or context parallelism) and
# treats all devices as alike.

# %% [markdown]
# ## Worked example
#
# The cluster is lesson 04's: Selene, 3072 A100s in nodes of 8.

# %%
CLUSTER = hardware.SELENE_3072

# %% [markdown]
# ### The 1T model on Selene
#
# `budget.search_plans` runs the four steps above; under the default framework, Megatron-LM, a pipeline with ZeRO-2
# or 3 is rejected as "framework". It ranks by the course's *calibrated* model (`calibration="default"`), the
# reference of lessons 03 and 04: Megatron-LM's behaviour (what it stores, runs and overlaps), GEMMs at a share of
# peak and a fixed cost per layer and micro-batch fitted on published Megatron-LM and NeMo runs on DGX H100s (lesson
# 08), and a framework memory measured on the Ultra-Scale Playbook's runs. On Selene the search carries all of it
# over to the A100s and Selene's links, without a measured band: a step here is a point estimate.
# `calibration=None` is the ideal model of lesson 04's worked example. A plan fits here when its predicted memory is
# within the GPU's (`memory_margin=0.0`); by default the search also asks for the calibration's margin, the share of
# memory the calibrated model missed on the measured runs lesson 08 replays (+52.1 %; lesson 09 plans with it).
# First Narayanan et al.'s largest case: the 1T model on all 3072 GPUs of Selene with a global batch of 3072.


# %%
search = budget.search_plans(parallelism.MEGATRON_1T, CLUSTER, global_batch=3072, memory_margin=0.0)
print(
    f"{parallelism.MEGATRON_1T.name}: {units.format_count(parallelism.MEGATRON_1T.params)} parameters, "
    f"{units.format_count(CLUSTER.devices)} GPUs, global batch 3072"
)
counts = {f"rejected for {reason}": count for reason, count in search.rejected.items()}
counts["ranked (they fit in memory)"] = int(np.sum(search.feasible))
print(f"{'plans considered':33} {search.evaluated:>6}")
for label, count in counts.items():
    print(f"  {label:31} {count:>6}  ({units.format_percent(count / search.evaluated)})")
print(search.table(range(6)))

# %% [markdown]
# Every top plan uses selective recomputation and sequence parallelism, and every one is compute-bound. Row 0 keeps
# $t = 8$ inside a node and runs a deep interleaved pipeline ($p = 32$, $v = 4$): its exposed communication and
# bubble (2.38 s and 2.15 s) are small beside a step of 73.8 s. The rows below it trade the terms differently: row 1
# has no pipeline and no bubble at all, $t = 32$ across four nodes and ZeRO-3 over 96 replicas, and exposes 8.64 s
# instead; rows 2 to 4 run $t = 16$ across two nodes with shallower pipelines. All six are within a few seconds of
# each other, closer than the model can rank them with confidence (lesson 08). The counts above show how few
# candidates reach the ranking: half fail to partition the model (160 heads divide few ways), a quarter are plans
# the framework does not run (ZeRO-2 or 3 with a pipeline), and most of the rest would not fit in 80 GB.
#
# How does the paper's own plan fare? Narayanan et al. ran this model with $t = 8$, $p = 64$ ($d = 6$),
# micro-batch 1, the interleaved schedule and full activation recomputation (sequence parallelism and selective
# recomputation came a year later). We take $v = 2$ chunks per device, an assumption, find that row by its fields
# (`PlanSearch.find` refuses if none or several rows match), and compare the calibrated and the ideal model with the
# paper. The paper's 163 TFLOP/s counts Eq. (3)'s FLOPs, recomputed forward included: a *hardware* FLOPs utilisation
# (HFU); `StepTime` reports it as `hfu` and the model FLOPs utilisation, without recomputation, as `mfu`:

# %%
paper_row = search.find(
    data_parallel=6,
    tensor_parallel=8,
    pipeline_parallel=64,
    micro_batch=1,
    virtual_stages=2,
    recompute="full",
    sequence_parallel=False,
    zero_stage=0,
)
print(search.table([paper_row]))
paper_plan = search.plan(paper_row)
paper_step = budget.step_time(parallelism.MEGATRON_1T, paper_plan, CLUSTER)  # the default calibration, as the search
ideal_step = budget.step_time(parallelism.MEGATRON_1T, paper_plan, CLUSTER, calibration=None)
# Narayanan et al. 2021, Eq. (3): FLOPs per iteration with full recomputation, the count behind their 163 TFLOP/s
# (hardware FLOPs: the recomputed forward counts; StepTime.hfu uses the same count, StepTime.mfu leaves it out)
model_1t = parallelism.MEGATRON_1T
iteration_flops = compute.transformer_flops_per_iteration(
    3072, model_1t.seq_len, model_1t.layers, model_1t.hidden, model_1t.vocab, recompute="full"
)
measured_rate = 163 * units.TFLOP  # per GPU, Narayanan et al. 2021, Table 1
peak = CLUSTER.accelerator.peak("bf16")
measured_step_s = iteration_flops / (CLUSTER.devices * measured_rate)
print(
    f"measured (paper):          {units.format_flops_rate(measured_rate)} per GPU = "
    f"{units.format_percent(measured_rate / peak)} of {units.format_flops_rate(peak)} (HFU), "
    f"a step of {units.format_time(measured_step_s)}"
)
for label, paper in (("default calibration:", paper_step), ("ideal model (None, 0.5):", ideal_step)):
    print(
        f"{label:26} {units.format_flops_rate(paper.hfu * peak)} per GPU = {units.format_percent(paper.hfu)} HFU, "
        f"{units.format_percent(paper.mfu)} MFU, a step of {units.format_time(paper.total_s)} "
        f"(binding: {paper.binding_constraint})"
    )
# What the default calibration's two fitted constants mean for this step: the same step without the fixed cost
calibration = parallelism.default_calibration(CLUSTER)
without_fixed_cost = budget.step_time(
    parallelism.MEGATRON_1T, paper_plan, CLUSTER, calibration=dataclasses.replace(calibration, layer_overhead_s=0.0)
)
layers_per_gpu = model_1t.layers // paper_plan.pipeline_parallel
print(
    f"the default calibration: {calibration.framework.short_name}, GEMMs at "
    f"{units.format_percent(calibration.gemm_efficiency)} of peak, "
    f"{units.format_time(calibration.layer_overhead_s)} per layer and micro-batch"
)
print(
    f"  without the fixed cost: {units.format_flops_rate(without_fixed_cost.hfu * peak)} per GPU, a step of "
    f"{units.format_time(without_fixed_cost.total_s)}"
)
print(
    f"  the fixed cost adds "
    f"{units.format_time(paper_step.total_s - without_fixed_cost.total_s)}, of which "
    f"{layers_per_gpu} layers × {paper_plan.grad_accum_steps} micro-batches × "
    f"{units.format_time(calibration.layer_overhead_s)} = "
    f"{units.format_time(layers_per_gpu * paper_plan.grad_accum_steps * calibration.layer_overhead_s)} in the compute"
)

# %% [markdown]
# The calibrated model predicts 162 TFLOP/s per GPU against the measured 163, and this is a prediction, not a fit:
# its constants were fitted on H100 runs of Megatron-LM and NeMo, and Narayanan et al.'s A100 run is not among them.
# The last lines show what the two constants mean for this step. GEMMs at 62 % of the A100's peak carry it: without
# the fixed cost the step would take 1.69 min (165 TFLOP/s). The fixed cost, 1.5 ms per layer and micro-batch, adds
# 1.63 s, mostly the 1.54 s of 2 layers × 512 micro-batches on each GPU: little beside a step this long, because each
# GPU holds only 2 of the 128 layers. The ideal model predicts 139 TFLOP/s: the paper's 52 % of peak is an end-to-end
# figure that *includes* the bubble and all exposed communication, so its matrix kernels ran well above the ideal
# model's `compute_efficiency = 0.5`, near the fitted 62 %. The search ranks the paper's plan at row 324 (the table
# above): the plans above it use sequence parallelism and selective recomputation, which did not exist in 2021. One
# run this close does not make every prediction as close: lesson 08 replays the calibrated model on published runs it
# was not fitted on. Use the model to compare plans and to see which constraint binds, and measure before trusting
# the second decimal.
#
# ### GPT 22B on 32 H100s
#
# A smaller case shows a different winner. GPT 22B on four DGX H100 nodes (32 GPUs), global batch 256:

# %%
SMALL_CLUSTER = hardware.Cluster(
    "4 × DGX H100",
    hardware.H100,
    devices_per_node=8,
    nodes=4,
    intra_node_link=hardware.NVLINK4,
    inter_node_link=hardware.INFINIBAND_NDR_8X,
)
small_search = budget.search_plans(parallelism.MEGATRON_22B, SMALL_CLUSTER, global_batch=256, memory_margin=0.0)
print(
    f"{parallelism.MEGATRON_22B.name} on {SMALL_CLUSTER.name}: considered "
    f"{units.format_count(small_search.evaluated)}; rejected: "
    + ", ".join(f"{reason} {units.format_count(count)}" for reason, count in small_search.rejected.items())
)
print(small_search.table(range(5)))
print(f"{'row':>4} {'compute':>8} {'exposed tensor parallel':>24}")
for row in range(5):
    small_step = budget.step_time(parallelism.MEGATRON_22B, small_search.plan(row), SMALL_CLUSTER)
    tensor_s = small_step.exposed_s["tensor"]
    print(f"{row:>4} {units.format_time(small_step.compute_s):>8} {units.format_time(tensor_s):>24}")

# %% [markdown]
# With only 32 GPUs and a 22B model, the fastest plans need no pipeline and little or no tensor parallelism. The
# winner shards everything with ZeRO-3 over all 32 GPUs, micro-batches of 2: its parameter gathers are on the wire
# every micro-batch, but Megatron-LM prefetches them behind the compute, so it exposes only 1.41 ms. Every top plan
# is compute-bound, and rows 0 to 3 compute alike, 4.08 s (a micro-batch of 2 on one GPU is as much work per GPU as
# one of 4 split over $t = 2$). They differ in what they expose and store: rows 1 to 3 pay the tensor-parallel
# collectives that row 0 avoids (99.8 ms without sequence parallelism, 154 ms with it, which in exchange brings row 1's
# 70.5 GB down to row 2's 58.4 GB); row 3 is row 2 under ZeRO-2 (79.1 GB). Row 4 runs 8 micro-batches of 2 instead of
# 4 of 4 and pays the fixed cost per layer and micro-batch twice as often: 4.37 s of compute. On this cluster the
# reference measured a band (the step column's p10–p90 of measured over predicted step times): the five bands
# overlap, so the model cannot tell these plans apart with confidence, only that each beats the rows far below.
#
# ### The framework changes the pick
#
# Both searches ranked plans as Megatron-LM runs them, the default calibration's framework (lesson 04's "What the
# framework hides"). `framework="nanotron"` ranks the same candidates as nanotron runs them (each behaviour cited in
# `parallelism.NANOTRON.sources`): its precision recipe is Megatron-LM's, but it runs no ZeRO-2 or 3 and no
# interleaved schedule, which the search rejects as "framework", it gathers the ZeRO-1 parameters after the optimizer
# step, on the critical path, and it overlaps no tensor-parallel collective. The fastest plan of each search
# (`memory_margin=0.0`, as above), under each, and where the default ranks nanotron's pick:

# %%
nanotron_search = budget.search_plans(
    parallelism.MEGATRON_1T, CLUSTER, global_batch=3072, memory_margin=0.0, framework="nanotron"
)
nanotron_small_search = budget.search_plans(
    parallelism.MEGATRON_22B, SMALL_CLUSTER, global_batch=256, memory_margin=0.0, framework="nanotron"
)
for label, default, nanotron in (
    (f"{parallelism.MEGATRON_1T.name} on {CLUSTER.name}", search, nanotron_search),
    (f"{parallelism.MEGATRON_22B.name} on {SMALL_CLUSTER.name}", small_search, nanotron_small_search),
):
    print(
        f"{label}: rejected for framework {units.format_count(default.rejected['framework'])} under the default, "
        f"{units.format_count(nanotron.rejected['framework'])} under nanotron; the default's (Megatron-LM's) pick, "
        "then nanotron's"
    )
    print(default.table([0]))
    print(nanotron.table([0]).splitlines()[-1])
    row = default.find(**nanotron.fields(0))
    print(
        f"nanotron's pick as Megatron-LM runs it: row {row} of the default search, "
        f"{units.format_time(default.columns['step_time_s'][row])}\n"
    )

# %% [markdown]
# nanotron rejects thousands more plans as "framework", the winners among them. On the 1T model its pick is the
# default's shape without interleaving ($v = 1$): its bubble grows from 2.15 s to 8.84 s, and the step takes 82.7 s
# against 73.8 s; run by Megatron-LM that plan would take 80.6 s, row 43. On GPT 22B nanotron cannot shard gradients
# or parameters, so ZeRO-3 over 32 GPUs is out: its pick is ZeRO-1 with $d = 8$, $t = 2$, $p = 2$ (5.02 s against
# the default's 4.08 s), which Megatron-LM would run in 4.83 s, row 27. A plan is fastest for a framework, not in
# general: search with the framework you will run.


# %% [markdown]
# ## Figures
#
# ### The plan landscape
#
# Every plan of the 1T search that partitions the model and the batch and that the framework runs, 10542 of the
# 49728 considered (the plans rejected for the partition, the framework or the batch have no step time to draw):
# memory per GPU against step time, coloured and shaped by what binds it. Row 0 (the best) and the paper's plan are
# marked, and named in the legend under the figure. The rarest constraints are drawn on top, and the plans that do
# not fit are faded, so that no colour hides another.

# %%
constraints = search.columns["binding_constraint"]
print(f"plans drawn {len(search)}, of which {int(np.sum(search.feasible))} fit; bound by:")
for constraint in budget.BINDING_CONSTRAINTS:
    if np.any(constraints == constraint):
        print(f"  {constraint:22} {int(np.sum(constraints == constraint)):>5}")
fig, ax = plt.subplots(figsize=(8, 5.6), layout="constrained")
viz.plot_plan_search(
    search,
    ax=ax,
    highlight_rows=(0, paper_row),
    highlight_labels=("row 0, the fastest", f"row {paper_row}, the paper's"),
)
plt.show()

# %% [markdown]
# Plans to the right of the capacity line do not fit (grey). Of the 1449 that fit, 1368 are compute-bound, the
# fastest included; 25 are bound by exposed communication and 56 by the bubble, and these lie well above the
# fastest: a plan whose coordination outweighs its compute is slow. Points side by side at one height are plans
# with nearly the same step time and different memory; among equal times the search ranks the plan with more
# headroom first.


# %% [markdown]
# ## Misconception
#
# > *The plan that exposes the least communication is the fastest.*
#
# Exposed communication is one of three terms. In the 22B search, find the plan that fits and exposes the least:

# %%
fitting = np.flatnonzero(small_search.feasible)
exposed = small_search.columns["exposed_communication_s"]
least_exposed = int(fitting[np.argmin(exposed[fitting])])
print(small_search.table([0, least_exposed]))
print(
    f"row {least_exposed} exposes {units.format_time(exposed[least_exposed])} against row 0's "
    f"{units.format_time(exposed[0])}, and its step is "
    f"{small_search.columns['step_time_s'][least_exposed] / small_search.columns['step_time_s'][0]:.2f}× as long: "
    f"compute {units.format_time(small_search.columns['compute_s'][least_exposed])} against "
    f"{units.format_time(small_search.columns['compute_s'][0])}"
)

# %% [markdown]
# The plan that exposes least keeps every collective off the critical path: no data parallelism ($d = 1$, so no
# gradient to reduce), no tensor parallelism, and a 32-stage interleaved pipeline whose sends Megatron-LM overlaps.
# It pays in compute: 7.37 s against row 0's 4.08 s. Each of its 256 micro-batches is one sequence, which pays the
# fixed cost per layer and micro-batch far more often, and 48 layers do not split evenly over 32 stages: the
# heaviest stage holds 2 layers, the last one the output layer too, and the slowest stage sets the pace. A plan is
# as fast as the sum of its three terms; the search compares the sums.

# %% [markdown]
# ## Self-check
#
# Pick an answer and press *Check*.

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="In the 1T search, most candidates never get a step time. Why?",
        options=(
            "They are too slow to be worth estimating",
            "They cannot run: the model or the batch does not divide among them, the framework does not combine their "
            "pipeline with their ZeRO stage, or they do not fit in memory",
            "The search samples a few plans at random",
        ),
        answer=1,
        explanation="The search estimates every plan that can run; half the 1T candidates do not partition 160 heads, "
        "a quarter pair a pipeline with ZeRO-2 or 3, which Megatron-LM does not run, and most of the rest do not fit "
        "in 80 GB.",
    )
)

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="The calibrated model predicts 162 TFLOP/s per GPU for Narayanan et al.'s 1T plan, which measured "
        "163. What does that say about the search's ranking?",
        options=(
            "Nothing: the ranking is only as good as the prediction of each plan",
            "The ranking is useless: a model that misses one run misses them all",
            "It compares plans and names their binding constraint; measure before trusting a step time to the second",
        ),
        answer=2,
        explanation="One run predicted within 1 % does not make every prediction as close: a model whose errors are "
        "alike across plans still orders them, and its absolute step time is an estimate. Lesson 08 measures how far "
        "it is from runs it was not fitted on.",
    )
)

# %% [markdown]
# ## History
#
# - **2021: plans compared by hand.** Narayanan et al. (arXiv 2104.04473, SC'21) analysed how tensor, pipeline
#   and data parallelism interact, measured their combinations on Selene, and drew takeaways from them: tensor
#   parallelism up to the size of a server, then pipeline parallelism across servers.
# - **2022: the search automated.** Alpa (Zheng et al., arXiv 2201.12023, OSDI 2022) searches the inter-operator
#   (pipeline) and intra-operator (tensor and data) partitions of a model automatically, with a cost model and
#   profiling, instead of a grid chosen by hand.

# %% [markdown]
# ## Summary
#
# - A plan search enumerates every factorisation $d \cdot t \cdot p$ with the other options, rejects the plans that
#   do not partition the model or the batch, that the framework does not run, or that do not fit, estimates the rest
#   and names each one's binding constraint.
# - Most candidates are rejected before any step time: the shape of the model and the batch and the memory decide
#   much of the choice.
# - The winner depends on the model, the batch, the cluster and the framework: the 1T model wants a deep interleaved
#   pipeline with $t = 8$ inside a node, GPT 22B on 32 H100s ZeRO-3 over all 32 GPUs and no tensor parallelism;
#   under nanotron, which runs neither interleaving nor ZeRO-3, both picks change.
# - The least communication is not the fastest plan: the step is compute, exposed communication and the bubble.
# - The calibrated model predicts Narayanan et al.'s 1T run (162 against 163 TFLOP/s per GPU), the ideal model falls
#   short of it: use the model to compare plans and find what binds, and measure.

# %% [markdown]
# ## Exercises
#
# 1. **The paper's plan today.** Find Narayanan et al.'s 1T plan ($d = 6$, $t = 8$, $p = 64$, $v = 2$, $b = 1$, no
#    ZeRO) with selective recomputation and sequence parallelism in `search` (`search.find`). Is it faster than with
#    full recomputation? Does it run? What does row 0 change?
# 2. **The ideal model's winner.** Run the 22B search with `calibration=None`. Which plan wins, and where does the
#    calibrated search rank it? Why?
#
# <details>
# <summary>Answers</summary>
#
# 1. It would take 78.7 s against 1.72 min with full recomputation, but it needs 83.8 GB per GPU: the search rejects
#    it for memory. Row 0 halves the pipeline ($p = 32$), doubles $d$ to 12, shards the optimizer state (ZeRO-1) and
#    interleaves 4 chunks per device: 67 GB, 73.8 s.
# 2. ZeRO-3 over all 32 GPUs ($d = 32$, $t = p = 1$) with micro-batches of 1: 4.71 s with nothing exposed, because the
#    ideal model hides every parameter gather under the compute and has no fixed cost. The calibrated search ranks
#    it at row 78, 5.24 s: its 8 micro-batches of one sequence pay the fixed cost per layer and micro-batch twice as
#    often as row 0's 4 micro-batches of 2 (4.37 s of compute against 4.08 s), and behind half as much compute per
#    micro-batch the same gathers no longer all hide (865 ms exposed).
#
# </details>

# %% [markdown]
# ## Sources
#
# - D. Narayanan et al., *Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM*, SC'21.
#   arXiv:2104.04473. https://arxiv.org/abs/2104.04473 — Eq. (3), Table 1 (1T model: t = 8, p = 64, 3072 GPUs,
#   163 teraFLOP/s per GPU, 52 % of peak in hardware FLOPs), its takeaways on combining the three parallelisms.
# - The published runs the default calibration is fitted on (lesson 08; `course_lib/data/published_runs.README.md`):
#   Megatron-LM's weak-scaling table (NVIDIA/Megatron-LM `README.md`), NeMo's GPT-3 performance tables and NVIDIA DGX
#   Cloud's GPT-3 175B benchmarking recipe, all on DGX H100 nodes.
# - N. Tazi, F. Mom, H. Zhao, P. Nguyen, M. Mekkouri, L. von Werra, T. Wolf, *The Ultra-Scale Playbook: Training LLMs
#   on GPU Clusters*, Hugging Face, 2025: the measured runs the default calibration's framework memory and memory
#   margin come from (lesson 08). https://huggingface.co/spaces/nanotron/ultrascale-playbook
# - L. Zheng, Z. Li, H. Zhang, Y. Zhuang, Z. Chen, Y. Huang, Y. Wang, Y. Xu, D. Zhuo, E. P. Xing, J. E. Gonzalez,
#   I. Stoica, *Alpa: Automating Inter- and Intra-Operator Parallelism for Distributed Deep Learning*, OSDI 2022.
#   arXiv:2201.12023. https://arxiv.org/abs/2201.12023

# %% [markdown]
# ## What's next
#
# You can now go from a model, a batch and a cluster to a ranked list of plans, and say why each loses. This lesson
# ends the course's core path; if you have not done [lab 5](../labs/05_partition_explorer.ipynb) yet, do it now.
# Every notebook after it is a depth track ([the course map](00_course_map.ipynb#The-core-path-and-the-depth-tracks)
# says what each adds); next, [06 · Long sequences and many experts](06_sequences_and_experts.ipynb) adds the axes
# that long sequences and many experts need, zero-bubble pipelines and 8-bit training.
