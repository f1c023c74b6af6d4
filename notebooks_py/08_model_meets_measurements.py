# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 08 · Check the model against measurements: where a step-time model holds and where it breaks
#
# Lessons 03 and 04 built a model that turns a plan into memory per device and a step time, and lesson 05's plan
# search ranks thousands of plans with it. Lesson 07 measured single collectives. This lesson puts the whole model
# next to 3,306 measured training runs, 1,758 of which ran (the others crashed or ran out of memory): the Ultra-Scale
# Playbook's Llama-style 1B to 80B models on 1 to 64 nodes of 8 × H100. It calibrates the model with what was
# measured (the network, from nccl-tests logs), what is documented (the framework's behaviour) and three named
# constants fitted on the small models only, judges it on the large models it never saw, and shows which terms hold,
# which break, and what no constant can repair. The rule it ends with: *use the model to reason and rank, measure to
# decide.*

# %% [markdown]
# ## What you'll learn
#
# **Learning objective:** *judge a performance model against measured runs: fit it honestly, test it on held-out
# data, find the term that fails, and decide what the model may and may not be used for.*
#
# Along the way you will be able to:
#
# - replay a measured run through the model (its plan, its cluster) and compare predicted with measured memory,
#   "fits or crashes" and MFU;
# - say what each of the three fitted constants stands for, why they are fitted on the 1B and 3B runs and judged on
#   the 8B and 80B runs, and how each is checked on data it was not fitted on;
# - read a fit's loss surface: where its minimum lies, and which constants trade against each other;
# - read the validation figures: median error, agreement, rank correlation, and "is the predicted best near the
#   measured best?";
# - group the residuals by the plan column that switches a term on (nodes, $t$, $p$, ZeRO) and name the term that
#   fails;
# - explain why the predicted best plan of a cell is often not the measured best, and why 64-node runs at 1–5 % MFU
#   are out of any calibration's reach.

# %% [markdown]
# ## Prerequisites
#
# - [04 · Budget the bytes](04_communication_budget.ipynb): the step-time model, exposed communication.
# - [05 · Search for a plan](05_plan_search.ipynb): the plan search and the calibrated model it ranks with.
# - [07 · Measure, don't assume](07_measure.ipynb): fitting a model to measurements, residuals, spread.
#
# **Time to learn:** about 1.5 hours (1 hour to read and run, half an hour for the exercises). Every cell runs in a
# few seconds, except the loss surface (about 10 s).

# %%
import matplotlib.pyplot as plt
import numpy as np

from course_lib import parallelism, units, validation
from course_lib.viz import validation as viz_validation
from course_lib.widgets import quiz

runs = validation.load_playbook_runs()
HELD_OUT = np.isin(runs["model"], validation.HELD_OUT_MODELS)  # the 8B and 80B runs: never seen by the fit

# %% [markdown]
# ## Mechanism
#
# **Role.** A model that ranks plans is only as good as the plans it gets right. Validation is the step that
# says, with numbers, where the model may be trusted.
#
# Each measured run is *replayed*: its model (layers, hidden size, [FFN](glossary.ipynb#ffn), grouped-query attention,
# vocabulary), its plan (data, tensor and pipeline sizes, ZeRO stage, micro-batch, accumulation) and its cluster (that
# many nodes of 8 × H100, NVLink inside a node, AWS [EFA](glossary.ipynb#efa) between nodes) go into the same functions
# lesson 04 uses: `parallelism.memory_breakdown` gives the memory per GPU, hence "fits in 80 GB?", and
# `budget.step_time` the step, hence tokens/s and MFU. `validation.replay_runs` does this for all 3,306 runs at once.
# Then:
#
# 1. **Fit** a few constants on the runs of the 1B and 3B models (`validation.fit_playbook_calibration`); take
#    everything that can be measured or read from a framework's source from there instead.
# 2. **Hold out** the 8B and 80B runs: every judgement is made on them.
# 3. **Compare** predicted with measured, run by run, and summarise (median error, rank correlation, picks).
# 4. **Group** the residuals by what switches each term of the model on, to find the term that fails.

# %% [markdown]
# ## The science
#
# ### What is compared
#
# MFU (model FLOPs utilisation) is the model's FLOPs per token × tokens/s per GPU ÷ peak, here the H100's dense bf16
# peak of 989.5 TFLOP/s; the Playbook reports it without the recomputed forward pass (lesson 01: MFU, not HFU), and
# `validation.playbook_flops_per_token` reproduces its FLOP count. A predicted and a measured MFU therefore compare
# throughputs. Memory is the peak memory per GPU the framework reported. A run "ran" when it completed; it "crashed"
# when it ran out of memory or failed otherwise.
#
# ### The calibration: measured, cited, fitted
#
# The calibrated model (`parallelism.Calibration`) takes as much as it can from outside the runs it is judged on:
#
# - **measured:** the links. `measure.calibrate_cluster` fits NCCL's model to the shipped nccl-tests logs of the
#   Playbook's machine, AWS p5 nodes (lesson 05's method): NVLink inside a node, EFA between nodes;
# - **cited:** the framework, nanotron (`parallelism.NANOTRON`): 18 bytes per parameter (bf16 weights, an fp32
#   gradient buffer, fp32 master weights and Adam), its 25 MB gradient buckets, ZeRO-1 at most, no prefetch of
#   parameter gathers, each behaviour with the line of nanotron's source that says so;
# - **fitted:** three constants, each checked on data it was not fitted on.
#
# It is the default of `step_time`, `search_plans` and `memory_breakdown` (`calibration="default"`);
# **`calibration=None`** is the ideal model of lessons 03 and 04.

# %%
cal = parallelism.PLAYBOOK_CALIBRATION
print(cal.name)
print(f"  measured  NVLink: {cal.intra_node_link.note}")
print(f"  measured  EFA:    {cal.inter_node_link.note}")
print(f"  cited     framework: {cal.framework.name}, {cal.framework.cited('precision')[:60]}…")
for name, meaning, value, check in (
    (
        "gemm_efficiency",
        "share of peak at which the layers' FLOPs run",
        units.format_percent(cal.gemm_efficiency),
        f"below the best measured H100 GEMM, {units.format_percent(validation.H100_BEST_GEMM_SHARE)}",
    ),
    (
        "layer_overhead_s",
        "fixed cost per layer and micro-batch",
        units.format_time(cal.layer_overhead_s),
        "fitted on one node, judged on two",
    ),
    (
        "framework_bytes",
        "memory per GPU the model does not count",
        units.format_bytes(cal.framework_bytes),
        "judged on the 8B and 80B runs' memory",
    ),
):
    print(f"  fitted    {name:17} {value:>8}  {meaning}; check: {check}")

# %% [markdown]
# The two time constants are fitted on the 56 one-node runs of the 1B and 3B models, where the only link is the
# measured NVLink: nothing of the network can leak into them. The fit evaluates its objective, the median
# |log(predicted / measured MFU)|, on a grid of the two and takes the minimum. The surface shows what the fit knows:

# %%
surface = validation.fit_loss_surface(runs)  # about 100 replays of the 56 one-node runs
fig, ax = plt.subplots(figsize=(7, 5), layout="constrained")
viz_validation.plot_loss_surface(surface, ax=ax)
ax.set_title("The fit's loss: median |log(predicted / measured MFU)|, %, one-node 1B and 3B runs")
plt.show()
best = np.unravel_index(np.argmin(surface), surface.shape)
print(f"minimum {units.format_percent(float(surface[best]), digits=2)} at efficiency {validation.FIT_GRID[0][best[0]]:.2f}, "
      f"{units.format_time(validation.FIT_GRID[1][best[1]])} per layer and micro-batch")  # fmt: skip

# %% [markdown]
# The minimum lies inside the grid, not on an edge. It sits in a valley running from low efficiency with
# little fixed cost to high efficiency with a lot: both constants make a micro-batch slower, and one node's runs
# tell them apart only through the micro-batch size. That is why each constant needs a check from elsewhere: the
# efficiency, 55 % of peak, stays below the 80.1 % that the best bf16 GEMM reaches on an H100 (a layer, with its
# attention, norms and activations, cannot beat its largest matrix multiply), and carried to Megatron's A100 runs it
# predicts the 1T model's 163 TFLOP/s within 15 % (Step 6); the fixed cost, fitted on one node, keeps the two-node
# runs within 10 % (Step 4).

# %% [markdown]
# ### The figures that judge a model
#
# | figure | what it asks | target |
# |---|---|---|
# | memory, median absolute % error | is the memory per GPU of the runs that ran right? | ≤ 15 % |
# | fits vs ran, agreement | does "predicted to fit" match "ran"? (beside it, its base rate: the share that crashed) | ≥ 92 % |
# | MFU rank correlation (Spearman), worst model | does the model order each model's runs as measured? | ≥ 0.85 |
# | MFU median absolute % error | is the predicted throughput right? | ≤ 30 % |
# | cells whose pick is within 10 % | in each (model, nodes) cell, is the model's pick (among plans it thinks fit with a margin) within 10 % of the measured best? | ≥ 50 % |
#
# A rank correlation can be high while every prediction is 3× too high: ranking and predicting are different
# questions, and a planner needs the ranking most.
#
# **Where the targets come from.** No paper publishes a bar for this comparison: the targets are the course's own,
# fixed before the calibration was refitted and never lowered since (an unmet one stays in the tests as an expected
# failure that states its figure and its cause). Each is what a planner needs of the model: a memory error well below
# the memory margin the picks keep, so that the margin, not luck, decides what fits; an agreement on "fits" judged
# beside its base rate, since a model that always answers "crashes" would already agree with every crashed run; a
# ranking good enough, and picks close enough to the measured best often enough, to replace a sweep of every plan by a
# measured shortlist; and a throughput error small enough for the model's step time to size a compute budget.
#
# ### Variables
#
# | symbol | in code | meaning | unit |
# |---|---|---|---|
# | MFU | `predicted_mfu`, `measured_mfu` | model FLOPs utilisation | fraction |
# | $M_\text{peak}$ | `predicted_memory_bytes`, `measured_memory_bytes` | peak memory per GPU | bytes |
# | $\rho$ | `validation.spearman` | Spearman's rank correlation | – |
# | ratio | `validation.residuals_by` | predicted / measured, per run | – |
# | $N_\text{nodes}$, $t$, $p$ | `nodes`, `tp`, `pp` | nodes, tensor- and pipeline-parallel sizes | – |
#
# ### What the comparison assumes
#
# - One framework (nanotron), one cluster, one sequence length (4,096) and one global batch (1M tokens): the
#   calibration describes this stack, not every stack.
# - The data are what the Playbook's public figure shows (`course_lib/data/playbook_runs.README.md`): one measurement
#   per run, no spread; a crash may be an out-of-memory or another failure.
# - The model knows only the terms of lessons 03 and 04 (compute, tensor, pipeline and data-parallel collectives,
#   bubble, memory by component). Whatever the cluster does that no term describes ends up in the residuals.

# %% [markdown]
# ## Worked example
#
# ### Step 1 · The runs

# %%
for model in ("1B", "3B", "8B", "80B"):
    here = runs["model"] == model
    ran = int((here & runs.succeeded).sum())
    role = "held out" if model in validation.HELD_OUT_MODELS else "fitted on"
    print(f"{model:>4}: {int(here.sum()):>4} runs, {ran:>4} ran, {int(here.sum()) - ran:>4} crashed  ({role})")
print(f"all:  {len(runs)} runs, {int(runs.succeeded.sum())} ran")

# %% [markdown]
# ### Step 2 · Replay: before and after calibration
#
# `make validate` prints the same two tables: the ideal model of lesson 04 (`calibration=None`, compute at 50 % of
# peak, nominal links), then the calibrated default, on the fitted and the held-out runs.

# %%
before = validation.replay_runs(runs, calibration=None)
after = validation.replay_runs(runs)  # the default: PLAYBOOK_CALIBRATION on this cluster
print("== before: the ideal model (calibration=None)")
print(validation.figures_report(before))
print("\n== after: the calibrated default")
print(validation.figures_report(after))
held = validation.validation_figures(after, HELD_OUT)
print(
    f"held out: predicted fits vs ran {units.format_percent(held['fit_agreement'])}, beside its base rate: "
    f"{units.format_percent(held['crashed_share'])} of the runs crashed"
)

# %% [markdown]
# Calibration fixes memory: the median error on the held-out runs falls from 43.2 % to 13.3 %, and "predicted to fit"
# agrees with "ran" in 91.6 % of them, against a base rate of 61.9 % (the share that crashed: a model that always said
# "does not fit" would agree that often). The precision recipe (nanotron's 18 bytes per parameter), the logits and a
# fixed framework memory were the missing terms, and none of them is specific to the 1B and 3B models. Throughput is
# another story. On one and two nodes the calibrated model is within 3 % of the measured MFU on runs it never saw
# (the `by nodes` lists: 0.98× and 0.97×, against 1.34× and 1.36× before): the measured NVLink, the efficiency and
# the fixed cost removed that residual. From four nodes on it overestimates, 2.1× on 4 nodes and 10× on 64, so the
# held-out MFU error stays at 198 % and the rank correlation at 0.78 (8B) and 0.70 (80B), below the 0.85 target. The
# network is measured, not fitted, so no constant absorbs that gap any more: it is there to be seen.
#
# ### Step 3 · Why the predicted best is not the measured best
#
# In each (model, nodes) cell, the model picks the plan with the highest predicted MFU among those it thinks fit.
# A plan is written $d \cdot t \cdot p$, its ZeRO stage, then micro-batch × accumulation steps: **2·1·4 ZeRO-1
# b1×128** is 2 replicas, no tensor parallelism, 4 pipeline stages, ZeRO-1 and 128 micro-batches of 1 sequence
# per step ([glossary](glossary.ipynb#plan-notation)).

# %%
for model in validation.HELD_OUT_MODELS:
    for nodes in (1, 2, 4, 8, 16, 32, 64):
        try:
            cell = validation.best_in_cell(after, model, nodes)
        except ValueError:
            continue  # no run of this model completed on so few nodes
        best, pick = cell["measured best"], cell["predicted best"]
        outcome = units.format_percent(pick["measured_mfu"]) if pick["ran"] else "crashed"
        print(
            f"{model:>3} on {nodes:>2} nodes: measured best {best['plan']:<22} {units.format_percent(best['measured_mfu']):>7}"
            f" | model's pick {pick['plan']:<22} predicted {units.format_percent(pick['predicted_mfu']):>7},"
            f" measured {outcome}"
        )
print(
    f"picks within 10 % of the measured best: {round(held['best_pick_share'] * held['cells'])} of {held['cells']} cells"
)

# %% [markdown]
# Two failures dominate. Most of the model's picks *crashed* (8 of 12): the plans it ranks first tend to sit closer
# to the 80 GB limit (a larger micro-batch, less sharding) than the measured best, and there a memory error of 10 %
# decides between the fastest run and a crash. Where the pick ran but fell short, it is a plan the model thinks cheap
# and which measured far slower (8B on one node: a two-stage pipeline, predicted 48.4 %, measured 16.6 %). A planner
# should therefore never take the single top row: take the best plans that fit with a margin, and measure a few.
#
# ### Step 4 · The residuals by term
#
# Each term of the model is switched on by one plan column: the network by the node count, the tensor-parallel
# collectives by $t$, the pipeline's bubble and sends by $p$, the data-parallel traffic by the ZeRO stage. If a term
# is wrong, the predicted/measured ratio drifts with its column. On the held-out runs:

# %%
for column, term in validation.RESIDUAL_TERMS.items():
    mfu = validation.residuals_by(after, column, HELD_OUT)
    memory = validation.residuals_by(after, column, HELD_OUT, quantity="memory")
    print(f"{term}: predicted / measured (median over runs)")
    print("  MFU:    " + ", ".join(f"{value}: {median:.2f}×" for value, (median, *_) in mfu.items()))
    print("  memory: " + ", ".join(f"{value}: {median:.2f}×" for value, (median, *_) in memory.items()))

# %% [markdown]
# Memory holds on every column, between 0.80× and 0.99×, except for deep pipelines, where the model undercounts more
# (the first stage of a 16- or 32-stage pipeline holds more than the model gives it). MFU does not: the ratio is near 1
# on one or two nodes and grows with the node count, with the pipeline's depth (1.33× without a pipeline, 10.24× with 16
# stages) and with $t$ from 4 up. Which term is wrong? The columns cannot say on their own: deep pipelines and large
# tensor-parallel groups run on many nodes, so a drift with $p$ is also a drift with the node count. Hold one column
# still and vary the other: among the runs whose pipeline stays inside a node, the model is close; among those whose
# pipeline crosses nodes with small micro-batches, it misses by a fixed time per micro-batch, up to seconds, whatever
# the bytes sent: far more than the measured EFA gives nanotron's sends (each tensor preceded by two blocking metadata
# messages). That points at how these runs crossed the network, not at a rate the model could rescale: no mechanism of
# nanotron or EFA that we can cite accounts for it yet, so the model leaves it in the residuals.
#
# Before and after, by node count: which residual each part of the calibration removed.

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True, layout="constrained")
for ax, replay, label in ((axes[0], before, "before: the ideal model"), (axes[1], after, "after: calibrated")):
    viz_validation.ResidualsFigure(ax, "nodes").update((replay, HELD_OUT))
    ax.set_title(label)
fig.suptitle("Predicted / measured MFU on the 8B and 80B runs, by nodes")
plt.show()

# %% [markdown]
# | residual (held-out runs) | before | after | what removed it |
# |---|---|---|---|
# | memory, median error | 43.2 % | 13.3 % | nanotron's precision recipe (cited), the logits, the framework's memory (fitted) |
# | MFU on 1 and 2 nodes | 1.34×, 1.36× | 0.98×, 0.97× | the measured NVLink, the efficiency and the fixed cost (fitted on one node) |
# | MFU on 4 to 64 nodes | 3.1× to 15× | 2.1× to 10× | nothing yet: the measured network is not the cause |
#
# ### Step 5 · What calibration cannot fix: 64 nodes

# %%
sixty_four = runs.succeeded & (runs["nodes"] == 64) & after.represented
for model in ("1B", "3B", "8B", "80B"):
    here = sixty_four & (runs["model"] == model)
    measured, predicted = runs["measured_mfu"][here], after.columns["predicted_mfu"][here]
    print(
        f"{model:>3} on 64 nodes: {int(here.sum()):>3} runs, measured MFU median "
        f"{units.format_percent(float(np.median(measured)))}, best {units.format_percent(float(measured.max()))},"
        f" under 5 %: {units.format_percent(float(np.mean(measured < 0.05)))}; predicted median "
        f"{units.format_percent(float(np.median(predicted)))}"
    )

# %% [markdown]
# On 64 nodes three runs in four or more measured under 5 % MFU (the medians are 0.3–2.3 %), even for the models whose
# best run there reached 5.2 % to 18.7 %: plan families that run well on one node collapse across 512 GPUs. The model
# predicts several times more. No constant fitted on the 1B and 3B runs can produce this: a collapse that depends on
# the plan and the scale is not a rate or an overhead. Calibration can fix what the model has the right *form* for:
# memory components, an efficiency, a fixed cost per layer. It cannot fix a mechanism the model does not have, and a
# constant that seemed to (the old "network at 30 % of nominal", which the measured EFA log contradicts) only hides
# where the mechanism is missing.
#
# ### Step 6 · Carried to another cluster and framework
#
# The default calibration also runs on clusters it was not fitted on (`parallelism.default_calibration`: the same
# framework, efficiency and fixed cost, the cluster's own links).
# Narayanan et al.'s Megatron-LM runs on Selene's A100s are such a test, before (the physics without fitted
# constants) and after (the default):

# %%
print("before:", validation.narayanan_report(validation.NARAYANAN_UNCALIBRATED), sep="\n")
print("after:", validation.narayanan_report("default"), sep="\n")
predicted = {
    label: [validation.narayanan_table1_tflops(row, cal) for row in validation.NARAYANAN_TABLE1]
    for label, cal in (("default", "default"), ("ideal", validation.NARAYANAN_UNCALIBRATED))
}
for label, rates in predicted.items():
    errors = [abs(x / row[-1] - 1) for x, row in zip(rates, validation.NARAYANAN_TABLE1, strict=True)]
    print(f"Table 1, {label}: mean |error| {units.format_percent(sum(errors) / len(errors))}")
one_trillion = validation.NARAYANAN_TABLE1[-1]
print(
    f"the 1T row: predicted {units.format_flops_rate(predicted['default'][-1] * 1e12)}, "
    f"measured {units.format_flops_rate(one_trillion[-1] * 1e12)}"
)
zero3, _ = validation.narayanan_zero3_and_ptdp(768, 2, "default", tuple(validation.NARAYANAN_FRAMEWORKS.values()))
print(f"ZeRO-3 on 768 GPUs with DeepSpeed's prefetch: {units.format_flops_rate(zero3.hfu * 312e12)} (measured 88)")

# %% [markdown]
# Carried over, the calibration gets both §5.2 comparisons right, where the uncalibrated physics gets the one at
# 384 GPUs wrong, and it fits Table 1 better (8 of 10 runs within 15 %, against 7; a mean error of 12.7 % against
# 12.8 %). The 1T model comes out at 141 TFLOP/s against 163 measured: the efficiency fitted on nanotron's H100 runs
# carries to Megatron's A100 runs within 15 %. What it misses still comes from where it was fitted: its fixed cost
# per layer, fitted on nanotron, slows Megatron's small models (112 and 105 predicted against 142 and 135 measured).
# And §5.2 comes out right for a reason that is not DeepSpeed's: the calibration's framework is nanotron, which does
# not prefetch ZeRO-3's gathers; run as DeepSpeed runs it, with prefetch, the model hides all of ZeRO-3's traffic and
# predicts 171 TFLOP/s at 768 GPUs against 88 measured (`make validate` prints both). Constants describe the stack
# they were fitted on.
#
# **The rule.** Use the model to reason and rank: which terms a plan pays, which constraint binds, which plans are
# certainly worse. Measure to decide: run the best few plans that fit with a margin, and pick by the measurement.

# %% [markdown]
# ## Figures
#
# ### Predicted against measured MFU
#
# Every run that ran (calibrated default), coloured by nodes (four groups, from 1 node to 32–64); hollow circles are
# the 1B and 3B runs the constants were fitted on, filled triangles the held-out 8B and 80B runs. Points above the
# line are runs the model overestimates. The columns on the left are the slowest runs: the Playbook prints MFU with
# one decimal, so their measured values fall on a few steps.

# %%
fig, ax = plt.subplots(figsize=(7, 5.5), layout="constrained")
viz_validation.plot_predicted_measured(after, HELD_OUT, "mfu", ax=ax)
ax.set_title("Predicted vs measured MFU, calibrated model")
plt.show()

# %% [markdown]
# The one- and two-node runs lie along the line; the colours move up and away from it as the node count grows, the
# held-out runs as much as the fitted ones.
#
# ### Predicted against measured memory

# %%
fig, ax = plt.subplots(figsize=(7, 5.5), layout="constrained")
viz_validation.plot_predicted_measured(after, HELD_OUT, "memory", ax=ax)
ax.set_title("Predicted vs measured memory per GPU, calibrated model")
plt.show()

# %% [markdown]
# Memory lies close to the line at every scale: a term-by-term count with the right precision recipe needs few
# constants.
#
# ### The residuals by term (held-out runs)
#
# One panel per term's switch; each group's median is written above its bar, and its number of runs under its value.

# %%
fig, axes = plt.subplots(1, 4, figsize=(12, 3.8), sharey=True, layout="constrained")
viz_validation.plot_residuals(after, HELD_OUT, axes=axes)
fig.suptitle("Predicted / measured MFU on the 8B and 80B runs: median and 25th–75th percentile")
plt.show()

# %% [markdown]
# ## Misconception
#
# > *A model fitted to measurements is a validated model.*
#
# A fit shows only that the constants can reproduce the data they were fitted on. Here the fitted runs reach a rank
# correlation of 0.88 (1B) and 0.79 (3B) (Step 2's table); the held-out runs, from the same cluster and framework,
# 0.78 and 0.70. A model is validated on data it did not see, with the figure that matters for its use stated in
# advance. The opposite mistake is as common: *"the model is 3× off, so it is useless."* Its memory is right to about
# 13.3 %, it names the binding constraint, and it predicts the runs on one or two nodes within a few percent: that is
# what a planner needs, provided the final choice is measured.
#
# A second trap: adding constants until the error is small. With enough of them, any model fits. Three constants,
# each checked elsewhere, beside a network that was measured, fail honestly and say where the model is missing a
# mechanism; a fitted "network efficiency" made the same residual look like physics.

# %% [markdown]
# ## Self-check

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="Why are the constants fitted on the 1B and 3B runs and judged on the 8B and 80B runs?",
        options=(
            "The 8B and 80B runs are too slow to replay",
            "A fit always reproduces its own data; only data it never saw can show the model predicts",
            "The 1B and 3B runs have more nodes",
        ),
        answer=1,
        explanation="Judged on the fitted rows, any flexible model looks good; held-out rows test the model's form.",
    )
)

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="Predicted/measured MFU is about 1 for p = 1 and grows with the pipeline's depth; deep pipelines "
        "run on many nodes. What does that drift show?",
        options=(
            "The pipeline term is wrong",
            "A term switched on by p or by the node count is wrong: hold one still and compare along the other",
            "The GEMM efficiency is wrong",
        ),
        answer=1,
        explanation="A residual that drifts with one plan column points at the terms that column switches on, but "
        "when two columns move together the drift cannot tell them apart: it is a pointer, not a proof.",
    )
)

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="The model's top plan for a cell is 12 % faster than the second and sits 2 GB under the memory "
        "limit. What do you do?",
        options=(
            "Run it: the model ranked it first",
            "Measure the best few plans that fit with a margin and pick by the measurement",
            "Add a fourth constant to the calibration",
        ),
        answer=1,
        explanation="Memory errors of 10 % decide crashes at the limit, and throughput errors exceed 12 %: the model "
        "ranks, the measurement decides.",
    )
)

# %% [markdown]
# ## History
#
# - **1970s–1990s: analytical performance models.** LogP (Culler et al., 1993) and its relatives modelled parallel
#   programs with a handful of machine constants (latency, overhead, gap), and their authors checked them against
#   measured runs, the practice this lesson follows.
# - **2020–2021: models in the large-model papers.** Megatron-LM (Narayanan et al. 2021) estimated training time
#   from FLOPs and an achieved rate; ZeRO and its successors argued with communication volumes. Both measured the
#   plans they recommended.
# - **2025: measured sweeps in the open.** The Ultra-Scale Playbook (Tazi et al. 2025) published thousands of
#   configurations, crashes included, so a model can be judged on runs its authors did not choose.

# %% [markdown]
# ## Summary
#
# - Replay measured runs through the model; measure what can be measured (the links), cite what a framework does,
#   fit few, physically named constants on some runs, check each elsewhere and judge on the others.
# - A fit's loss surface shows which constants trade against each other; its minimum must lie inside the grid.
# - Memory is a count of components: with the right precision recipe and a framework constant it holds to about
#   13.3 % on runs it never saw.
# - Throughput holds on one or two nodes and breaks across many: the residuals grow with the node count, the pipeline
#   and large tensor-parallel groups, which move together; 64-node runs at 1–5 % MFU are beyond any calibration.
# - Use the model to reason and rank, measure to decide.

# %% [markdown]
# ## Exercises
#
# 1. Replay the runs with `parallelism.Calibration()` (the physics without fitted constants) and print
#    `validation.figures_report`. Which figures does each fitted constant move?
# 2. Fit the calibration yourself with `validation.fit_playbook_calibration(runs, surface=surface)` (with this
#    lesson's surface it only adds the memory constant) and check that it returns the constants printed above. Then try to fit on the 8B runs
#    (`models=("8B",)` is refused) and explain what the refusal protects.
# 3. Group the memory residuals by `"pp"` and explain why deep pipelines are undercounted: which stage holds the
#    most activations under 1F1B, and what does the model assume it holds?
# 4. Take lesson 05's plan search for GPT-3 175B on Selene with `calibration=None` and with the default. Which of the
#    top five plans change, and which constraint binds in each?

# %% [markdown]
# ## Sources
#
# - N. Tazi, F. Mom, H. Zhao, P. Nguyen, M. Mekkouri, L. von Werra, T. Wolf, *The Ultra-Scale Playbook: Training LLMs
#   on GPU Clusters*, Hugging Face, 2025 (Apache-2.0): the runs in `course_lib/data/playbook_runs.csv`, with their
#   provenance in `course_lib/data/playbook_runs.README.md`. https://huggingface.co/spaces/nanotron/ultrascale-playbook
# - D. Narayanan et al., *Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM*, SC'21,
#   arXiv 2104.04473: the FLOP counts, MFU vs hardware FLOPs, Table 1 and §5.2 (tested in `tests/test_narayanan.py`).
# - D. Culler et al., *LogP: Towards a Realistic Model of Parallel Computation*, PPoPP 1993.
# - C. Spearman, *The Proof and Measurement of Association between Two Things*, American Journal of Psychology 15,
#   1904: the rank correlation.

# %% [markdown]
# ## What's next
#
# You have seen where the model holds (memory, one and two nodes) and where it breaks (pipelines across many
# nodes). The capstone, [09 · Plan a real run](09_capstone.ipynb), asks you to plan a training run end to end: choose a
# partition with the model, say which terms you trust, and say what you would measure before deciding.
