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
# # 07 · Measure, don't assume: real collectives, fitted α and B, exposed communication
#
# Every number so far was modelled. Lesson 04's budget ends differently: *"measure completed step or token latency
# and adjust"*. This lesson runs real collectives with a real MPI library on this machine, fits α and B to the times,
# reads published GPU measurements the same way, and measures how much of a gradient all-reduce a step really hides.

# %% [markdown]
# ## What you'll learn
#
# **Learning objective:** *measure a collective's latency and bandwidth, and the exposed communication of a step,
# instead of assuming them.*
#
# Along the way you will be able to:
#
# - run an MPI collective sweep (MPICH through mpi4py) and read its table (median, p10–p90, algbw, busbw);
# - fit α and B of $T = n\alpha + Q/B$ with the algorithm's own $n$ and $Q$, find the crossover size, and compare
#   MPICH's algorithms with the course's cost models, size by size;
# - read a published nccl-tests log into the same table, and say which algorithm and protocol NCCL runs for a call,
#   by its own cost model, and how close that model comes to the log;
# - turn a measurement into a cluster (`measure.calibrate_cluster`) and re-plan on it;
# - measure exposed communication = completed step − compute alone, and explain why posting a non-blocking
#   collective does not by itself overlap it;
# - avoid the usual measuring mistakes.

# %% [markdown]
# ## Prerequisites
#
# - [02 · Move the data](02_nccl.ipynb): collectives and their algorithms, the α–β model, algbw and busbw.
# - [04 · Budget the bytes](04_communication_budget.ipynb): exposed and hidden communication, the overlap window.
# - [05 · Search for a plan](05_plan_search.ipynb): the plan search, which step 5 re-runs on a measured cluster.
#
# **Time to learn:** about 1.5 hours by the course's rule
# ([how it is counted](00_course_map.ipynb#How-long-each-part-takes)). The live cells need `mpi4py` and `mpich`
# (in the course's environment); each runs in under a minute on two cores.

# %%
import dataclasses
import os
import sys
import warnings

import matplotlib.pyplot as plt

from course_lib import budget, hardware, measure, nccl, parallelism, serving, units
from course_lib.viz import measure as viz_measure
from course_lib.widgets import quiz

# The course's data folder (recorded runs and published logs).
DATA = measure.DATA_DIR

# %% [markdown]
# ## Mechanism
#
# **Role.** The model says what a plan should cost, the measurement what it does cost, and the difference which term
# of the model to correct (α, B, or the overlap assumed).
#
# An MPI job is $p$ processes ("ranks") started together by `mpiexec`; each calls the same collective on its own
# buffer. MPICH implements the algorithms lesson 02 costs (ring, recursive doubling, Rabenseifner's reduce-scatter +
# all-gather, binomial trees), others such as [Bruck](glossary.ipynb#bruck)'s and pairwise exchange, and lets a run
# force one, e.g. `MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=ring`. `course_lib.measure` starts such a job, and for
# every size:
#
# 1. fills float32 buffers with small integers, so the exact result is known;
# 2. calls the collective a few times untimed (**warm-up**: first calls pay for connection set-up, page faults and
#    cold caches);
# 3. times each iteration after a **barrier**, and keeps the **maximum over ranks** (a collective is over only when
#    its slowest rank is done), stricter than nccl-tests and the OSU micro-benchmarks, which average over ranks by
#    default;
# 4. **checks the data**: a wrong result is an error, never a time;
# 5. reports the median and the 10th and 90th percentiles over iterations, algbw $= S/T$ and busbw $=$ algbw
#    $\times$ `busbw_factor(op, p)` (nccl-tests' definitions).
#
# `measure.measure_step` times a data-parallel step (a "backward pass" and a gradient all-reduce) in several schedules.

# %% [markdown]
# ## The science
#
# ### The model to fit
#
# Lesson 02's cost of one collective call on $p$ ranks with payload $S$ (nccl-tests' $S$):
#
# $$T(S) = n(p)\,\alpha + \frac{Q(p, S)}{B}$$
#
# with $n$ the latency-bearing steps and $Q$ the bytes on the critical path, both from
# `collectives.collective_cost(op, p, S, algorithm)`: ring all-reduce $n = 2(p-1)$, $Q = 2\frac{p-1}{p}S$; recursive
# doubling $n = \lg p$, $Q = S \lg p$. $T$ is linear in $\alpha$ and $1/B$, so least squares finds them. Measured
# times span over four decades (a few µs to over 100 ms), so the fit minimises **relative** errors,
# $\sum_i \big((T_\text{model}(S_i) - T_i)/T_i\big)^2$: otherwise the largest sizes would decide everything. The
# **crossover** $S^*$, where $n\alpha = Q/B$, separates latency-bound from bandwidth-bound sizes.
#
# ### Exposed communication, measured
#
# $$T_\text{exposed} = T_\text{step} - T_\text{compute alone}$$
#
# read off completed steps, next to lesson 04's prediction, `budget.exposed_after_overlap(T_comm, window)`. With the
# gradient in $N_\text{buckets}$ buckets, each posted when its layer's backward finishes, the last bucket starts when
# the compute ends: at best $T_\text{exposed} \ge T_\text{comm}(S/N_\text{buckets})$.
#
# ### Variables
#
# | symbol | meaning | unit |
# |---|---|---|
# | $p$ | ranks (MPI processes) | – |
# | $S$ | payload as nccl-tests defines it (the reduced buffer for all-reduce) | bytes |
# | $n$, $Q$ | phases and critical-path bytes of the algorithm | –, bytes |
# | $\alpha$ | per-phase latency | s |
# | $B$ | one-way per-rank bandwidth | bytes/s |
# | $T$ | median time of one call, max over ranks | s |
# | $N_\text{buckets}$ | gradient buckets | – |
#
# ### What a measurement assumes
#
# - The ranks here share one machine: "the network" is MPICH's shared-memory path, and $B$ a memory-copy bandwidth.
#   Large buffers fall out of the caches, so $B$ measured at 64 MiB is lower than at 1 MiB: one $B$ is a summary.
# - Other programs share the cores: the spread (p10–p90) is part of the result.

# %% [markdown]
# ## Worked example
#
# ### Step 1 · Run a sweep, live
#
# Two ranks, all-reduce, every power of two from 8 B to 64 MiB, MPICH's ring (the numbers change from run to run):

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: a live MPI measurement; its times differ on every run
live = measure.run_collective_sweep("all_reduce", 2, "8B:64MB", "ring", iterations=10, progress=sys.stdout)
live_fit = measure.fit_alpha_beta(live)
print(live.to_text())
print(live_fit)

# %% [markdown]
# ### Step 2 · The recorded run: fit α and B
#
# The same sweep for four algorithms, recorded on the course's build machine; the file names the machine, the MPI
# library and its version:

# %%
recorded = measure.Measurements.from_csv(next((DATA / "mpi").glob("*_all_reduce.csv")))
for key in ("host", "cpu", "cores", "ranks_exceed_cores", "mpi_library", "mpi4py", "iterations", "warmup", "timing"):
    print(f"{key:>18}: {recorded.conditions[key]}")

# %%
ring = recorded.select(algorithm="ring")
ring_fit = measure.fit_alpha_beta(ring)
print(ring_fit)
for size in (8, 2**16, 2**26):
    row = ring.select(size_bytes=size).rows[0]
    print(
        f"{units.format_bytes(size, binary=True):>7}: measured {units.format_time(row.median_s)} "
        f"(p10–p90 {units.format_time(row.p10_s)}–{units.format_time(row.p90_s)}), "
        f"fit {units.format_time(ring_fit.predict_s(size))}, busbw {units.format_bandwidth(row.busbw_bytes_per_s)}"
    )

# %% [markdown]
# α is a few microseconds, one synchronised hand-off through shared memory; B is of the order of a GB/s, a memory
# copy on a busy two-core machine. The crossover lands at some ten kilobytes: below it the size barely matters, above
# it the time doubles with the size. The 64 MiB row, far above its fit, shows where one α and one B fail (the buffers
# no longer fit in the caches).

# %% [markdown]
# ### Step 3 · Which algorithm wins where: measured, then modelled
#
# Fit each algorithm with its own cost model: ring ($n = 2(p-1)$), recursive doubling ($n = \lg p$) and
# reduce-scatter + all-gather (Rabenseifner, $n = 2\lg p$). At $p = 2$ the differences are in the constants MPICH
# pays per step and per byte.

# %%
fits = {name: measure.fit_alpha_beta(recorded.select(algorithm=name)) for name in
        ("ring", "recursive_doubling", "reduce_scatter_allgather")}  # fmt: skip
for name, fit in fits.items():
    print(f"{name:>25}: {fit}")

# %%
sizes = sorted({row.size_bytes for row in recorded})
print(f"{'size':>8}  {'fastest measured':>25}  {'fastest by the fitted models':>28}")
for size in sizes[::3]:
    measured = min(fits, key=lambda name: recorded.select(algorithm=name, size_bytes=size).rows[0].median_s)
    modelled = min(fits, key=lambda name: fits[name].predict_s(size))
    print(f"{units.format_bytes(size, binary=True):>8}  {measured:>25}  {modelled:>28}")

# %% [markdown]
# Where the two columns disagree, the differences between algorithms at two ranks are a few percent, about the size of
# the noise. With `ranks=4` the phase counts part: ring's $2(p-1) = 6$ steps against recursive doubling's $\lg 4 = 2$.

# %% [markdown]
# ### Step 4 · A published GPU log: H100, NVLink in a node, InfiniBand across two
#
# `measure.read_nccl_tests` reads nccl-tests output into the same table. Two published all-reduce logs: eight
# H100 in one AWS p5 node (NVLink 4 / NVSwitch), and sixteen H100 on two Nebius nodes joined by InfiniBand.

# %%
logs = {
    "1 node, 8× H100, NVLink": "aws_p5_1node_8xH100_nvlink_all_reduce.txt",
    "2 nodes, 16× H100, InfiniBand": "nebius_2x8xH100_ib_all_reduce.txt",
}
gpu = {}
for label, name in logs.items():
    table = measure.read_nccl_tests((DATA / "nccl_tests" / name).read_text())
    gpu[label] = (table, measure.fit_alpha_beta(table, "ring"))
    largest = table.rows[-1]
    print(
        f"{label}: {len(table)} sizes, p = {table.ranks}, largest {units.format_bytes(largest.size_bytes)} "
        f"at busbw {units.format_bandwidth(largest.busbw_bytes_per_s)}\n    {gpu[label][1]}"
    )

# %% [markdown]
# Read with the ring model, the NVLink node gives α around a microsecond per step and B in the hundreds of GB/s,
# more than NVLink's 371 GB/s as NCCL counts it: at large sizes NCCL runs NVLink SHARP, whose switch reduces. On two
# nodes B = 393 GB/s is what a flat ring gets with a channel on each of a node's eight 400 Gb/s rails,
# 8 × 50 GB/s = 400 GB/s. The two-node fit is worse: one α and one B cannot describe what NCCL runs there. The fit's
# residual tests the model.
#
# #### What NCCL actually runs: its own cost model
#
# For every call NCCL's tuner weighs a few algorithms, each with three protocols, by a cost model of its own
# (time = latency + bytes / bandwidth), and runs the cheapest. `course_lib.nccl` is that model, with NCCL's constants:
#
# - **ring**: one flat ring through all the ranks; its bus bandwidth is the smaller of NVLink as NCCL counts it
#   (18 links × 20.6 GB/s = 371 GB/s on an H100, not the datasheet's 450 GB/s) and the node's rails (8 × 50 GB/s);
# - **tree**: a chain through the GPUs of each node and a double binary tree between nodes: the gain is lg N network
#   steps for N nodes;
# - **NVLS** (NVLink SHARP, Hopper and later): the NVSwitch reduces, so each GPU sends its data once; across nodes
#   NVLS inside and a tree between (`nvls_tree`);
# - protocols: **LL** (each 8-byte line carries 4 bytes of data and a flag: half the bandwidth, the lowest latency),
#   **LL128** (120 of 128 bytes) and **Simple** (all the bandwidth, the highest latency).
#
# Its pick for an all-reduce on one DGX H100 node and on two nodes joined by InfiniBand:

# %%
for cluster, ranks, nodes, where in (
    (hardware.DGX_H100, 8, 1, "8 H100, one node"),
    (hardware.NEBIUS_H100_IB, 16, 2, "16 H100, two nodes on InfiniBand"),
):
    print(f"{where}: NCCL's pick, and the best ring and tree")
    for size in (8, 16 * units.KiB, 1 * units.MiB, 64 * units.MiB, 1 * units.GiB):
        rows = nccl.candidates("all_reduce", cluster, ranks, nodes, size)
        best = {name: next(r for r in rows if r["algorithm"] == name) for name in ("ring", "tree")}
        print(
            f"  {units.format_bytes(size):>8}: {rows[0]['algorithm']:>9} {rows[0]['protocol']:<6} "
            f"{units.format_time(rows[0]['time_s']):>8}   ring {units.format_time(best['ring']['time_s']):>8} "
            f"({best['ring']['protocol']}), tree {units.format_time(best['tree']['time_s']):>8} "
            f"({best['tree']['protocol']})"
        )

# %% [markdown]
# Small buffers go to LL, large ones to Simple; inside one node NVLS takes the large buffers. Across two nodes the
# tree wins the small sizes, 25.2 µs against the flat ring's 40 µs. How good is the model? Against the two-node log,
# from the datasheet alone:

# %%
nebius_table = gpu["2 nodes, 16× H100, InfiniBand"][0]
for row in nebius_table.rows[::4]:
    predicted = nccl.estimate("all_reduce", hardware.NEBIUS_H100_IB, 16, 2, row.size_bytes)
    print(
        f"{units.format_bytes(row.size_bytes):>8}: predicted {units.format_time(predicted.time_s):>8} "
        f"({predicted.algorithm}, {predicted.protocol}), measured {units.format_time(row.median_s):>8}: "
        f"{predicted.time_s / row.median_s:.2f}×"
    )

# %% [markdown]
# NCCL's tuner has no cost for the call itself (the enqueue and the kernel launch); the course adds a launch floor of
# 4.8 µs per call, the same for every algorithm (`hardware.LAUNCH_FLOOR_S`, fitted on logs at 8 B to 1 KiB). With it
# the model gives 0.74 to 1.01 of the measured time from 16 B to 256 KiB (the 8-byte row, 45.7 µs among neighbours of
# 30 µs, is one slow measurement); from 512 KiB up it is optimistic, 0.59 to 0.79: it is built to *rank* the
# algorithms, not to time them. `tests/test_nccl.py` holds it to every log in `data/nccl_tests/`: within a factor of
# 2 at every size on all but three (one a TCP transport at half its [NICs](glossary.ipynb#nic)' rate), and a median
# error of at most 25 % from 1 MiB up on five of the eight (not this one). `budget` times every collective with it.

# %% [markdown]
# ### Step 5 · From your measurement to your plan
#
# A fit of α and B describes a table; the planner needs a *cluster*. `measure.calibrate_cluster(cluster, tables)`
# fits NCCL's model (above) to the tables: from one-node tables the NVLink bandwidth and a latency per NVLink hop,
# from multi-node tables the network's bandwidth per node and a latency per network step. Each table must say where
# its ranks ran (`measure.read_nccl_tests(..., nodes=)`). The result is a `hardware.Cluster` that `budget` and
# `serving` use unchanged.

# %%
p5_log = measure.read_nccl_tests(
    (DATA / "nccl_tests" / "aws_p5_1node_8xH100_nvlink_all_reduce.txt").read_text(), nodes=1
)
nebius_log = measure.read_nccl_tests((DATA / "nccl_tests" / "nebius_2x8xH100_ib_all_reduce.txt").read_text(), nodes=2)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    measured = measure.calibrate_cluster(hardware.NEBIUS_H100_IB, [p5_log, nebius_log])
for link in (measured.intra_node_link, measured.inter_node_link):
    print(f"{link.name}:\n    {link.note}")
for warning in caught:
    print(f"CalibrationWarning: {warning.message}")

# %% [markdown]
# Read the fitted figures as fits. NVLink at 274 GB/s per GPU is less than the 371 GB/s NCCL counts: its model
# reaches full bandwidth sooner than the log does. The network comes out at 210 GB/s per node, about half the
# datasheet's 400, with 2.07 µs per network step more than NCCL's table: the fit slows the tree's 512 KiB–8 MiB calls,
# which NCCL's model gives too fast. That absorbs a shortfall of the model; it does not measure the NICs. The
# `measure.CalibrationWarning` names the size no single pair of figures follows (16 MiB across two nodes).
#
# The same questions on the datasheet's cluster and on the measured one, each planned on its own links (for the
# datasheet's, the calibration's links set to `None`): the plan search for Llama 3.1 8B on the two nodes (global batch
# 256), and the decode of Llama 3.1 70B at batch 1 and 4096 tokens on four such nodes, at $t$ = 8 and 16.

# %%
for label, cluster in (("datasheet", hardware.NEBIUS_H100_IB), ("measured", measured)):
    # the default's constants and framework on the cluster's own links (None: the datasheet's for the first)
    own_links = dataclasses.replace(
        parallelism.default_calibration(cluster), intra_node_link=None, inter_node_link=None
    )
    found = budget.search_plans(parallelism.LLAMA3_8B, cluster, 256, calibration=own_links)
    best = found.row(0)
    four = dataclasses.replace(cluster, nodes=4)
    decode = {t: serving.decode_step(parallelism.LLAMA3_70B, four, t, 1, 1, 4096) for t in (8, 16)}
    print(
        f"{label:>9}: fastest plan d={best['data_parallel']} t={best['tensor_parallel']} "
        f"p={best['pipeline_parallel']} ZeRO-{best['zero_stage']}, {units.format_time(best['step_time_s'])} a step, "
        f"{units.format_time(best['exposed_communication_s'])} exposed; decode t = 8: "
        f"{units.format_time(decode[8].time_per_output_token_s)}, t = 16: "
        f"{units.format_time(decode[16].time_per_output_token_s)}, latency-optimal t = "
        f"{serving.latency_optimal_tensor_parallel(parallelism.LLAMA3_70B, four, 1, 4096)}"
    )

# %% [markdown]
# Training barely notices: the same plan wins, its exposed communication grows by 28 %, the step by 0.5 %. Serving
# nearly changes its answer. On the datasheet $t = 16$ (two nodes per replica) is the fastest decode by 9 %: NCCL's
# tree across two nodes costs only 25 µs an all-reduce in its model (31.2 µs with the launch floor). On the measured
# network the two come within about 1 % (8.35 ms against 8.44 ms). The published logs decide: a 16 KiB all-reduce
# takes 17.5 µs on eight GPUs in a node and 37.2 µs on sixteen across two, so $t = 16$ pays 160 × 19.8 µs = 3.16 ms
# more and saves only half of the 5.19 ms of weight reads: $t = 8$ wins. The fit misses these two sizes by a few µs
# each (20 µs and 35.3 µs), enough to blur a 1 % decision: read a decision this close from the measurement.
#
# ### Step 6 · Overlap, measured
#
# A data-parallel step on two ranks: a "backward pass" of 4 layers, and a 16 MiB gradient all-reduced in 4 buckets
# (bucket $i$ holds layer $i$'s gradients and can start when that layer is done). The schedules:
#
# | schedule | what runs |
# |---|---|
# | `compute` | the backward pass alone |
# | `communication` | the all-reduce alone (one blocking call) |
# | `blocking` | backward, then the blocking all-reduce |
# | `nonblocking` | an `Iallreduce` per bucket, posted as its layer finishes; one `Waitall` at the end; nothing else calls MPI |
# | `nonblocking_test` | the same, calling `Testall` while the layers compute |
# | `nonblocking_async` | `nonblocking` with MPICH's progress thread (`MPIR_CVAR_ASYNC_PROGRESS=1`) |
#
# On a GPU the host core is free while the device computes, and a NIC or [copy engine](glossary.ipynb#copy-engine)
# moves the bytes; to model that, `device_flops_per_s=40e9` makes each layer a wait of its FLOPs over 40 GFLOP/s,
# during which the rank's core can copy. Without it the ranks multiply matrices with numpy on the same two cores that
# must also copy the gradient. Live first, the modelled accelerator:

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: a live MPI measurement; its times differ on every run
live_step = measure.measure_step(2, device_flops_per_s=40e9, progress=sys.stdout)
print(live_step.to_text(live_fit))

# %% [markdown]
# And the runs recorded for the course. To predict them, which fit? The step moves a 16 MiB all-reduce (or four
# 4 MiB buckets), far above the sizes that dominate the full-range fit. Both fits against the all-reduce alone:

# %%
steps = {kind: measure.StepMeasurements.from_csv(next((DATA / "mpi").glob(f"*_step_{kind}.csv")))
         for kind in ("device", "cpu")}  # fmt: skip
bucket_fit = measure.fit_alpha_beta(ring, size_range_bytes=(2**20, 2**26))
gradient_bytes = steps["device"].gradient_bytes
sizes = (gradient_bytes, gradient_bytes // steps["device"].buckets)  # the whole gradient, one bucket
in_step = steps["device"].median_s["communication"]  # the step's all-reduce of the whole gradient, alone
print(f"fit on 1–64 MiB: {bucket_fit}")
print(f"{'all-reduce of':24}" + "".join(f"{units.format_bytes(size, binary=True):>10}" for size in sizes))
print(f"{'measured in the step':24}{units.format_time(in_step):>10}")
print(
    f"{'measured in the sweep':24}"
    + "".join(f"{units.format_time(ring.select(size_bytes=size).rows[0].median_s):>10}" for size in sizes)
)
for label, fit in (("full-range fit", ring_fit), ("1–64 MiB fit", bucket_fit)):
    error = units.format_percent(fit.predict_s(gradient_bytes) / in_step - 1)
    print(f"{label:24}" + "".join(f"{units.format_time(fit.predict_s(size)):>10}" for size in sizes)
          + f"   (+{error} against the step's)")  # fmt: skip

# %% [markdown]
# The rule of thumb says trust the fit made at the sizes you will predict (1–64 MiB, α clamped at 0), and it follows
# the sweep there: 13.4 ms at 16 MiB against the sweep's 13.9 ms. But the step's own all-reduce of the same 16 MiB
# took 7.86 ms, and against it the full-range fit (9.51 ms, 20.9 % high) beats the 1–64 MiB fit (13.4 ms, 70.5 %
# high): the sweep and the step ran minutes apart on a shared machine and disagree with each other by more than either
# fit does with the step. A check against the very operation decides: the predictions below use the full-range fit.
# Lesson 04's prediction (`budget.exposed_after_overlap` with the buckets' fitted times, never less than the last
# bucket) next to the measured exposed time:

# %%
for recorded_step in steps.values():
    print(f"backward pass on {recorded_step.conditions['compute']}:")
    print(recorded_step.to_text(ring_fit), end="\n\n")

# %% [markdown]
# In the modelled-accelerator table, `blocking` exposes the whole all-reduce, as lesson 04 says. `nonblocking` is no
# better: MPICH moves a non-blocking collective's bytes only when a rank calls into MPI, and nothing does until
# `Waitall`. Calling `Testall` while the device computes drives the progress and hides most of it; what stays exposed,
# 3.98 ms, is about one bucket's all-reduce (the sweep took 3.05 ms at 4 MiB; the fit says 2.38 ms), the last one.
# MPICH's progress thread busy-polls: with two ranks on two cores it competes with them, and is no better than
# `blocking` (MPICH asks for a free hardware thread per progress thread).
#
# With the backward pass on the CPU no schedule hides the all-reduce by more than the spread: the cores that multiply
# are the ones that copy. Overlap needs an agent that moves the bytes while the compute runs: a NIC's
# [DMA](glossary.ipynb#dma), a GPU's copy engine, or a free core. Lesson 04's prediction assumes one exists.

# %% [markdown]
# ## Figures
#
# ### The recorded ring sweep against its fit

# %%
viz_measure.plot_sweep(ring, ring_fit)
plt.show()

# %% [markdown]
# ### MPICH's algorithms side by side (recorded)

# %%
viz_measure.plot_algorithms(recorded)
plt.show()

# %% [markdown]
# ### Where the step's time goes (recorded, modelled accelerator)

# %%
viz_measure.plot_step(steps["device"], ring_fit)
plt.show()

# %% [markdown]
# ## Misconception: pitfalls of measuring
#
# "I timed the all-reduce once and it took 3 ms." Each of these changes that number:
#
# - **No warm-up.** The first call sets up connections and buffers and touches fresh pages, a one-off cost that
#   does not shrink with the message: benchmarks run untimed warm-up iterations first (nccl-tests prints how many in
#   its header; the course's sweeps take `warmup=`).
# - **No barrier.** Without one a rank that arrives late makes the others' timers include its lateness.
# - **The mean over ranks, or rank 0's time.** The collective is done when its last rank is: report the maximum over
#   ranks, or say which you report.
# - **More ranks than cores.** MPICH's ranks busy-poll; two ranks sharing a core wait for each other's time slice,
#   and small messages take many times their few microseconds, varying from run to run. `course_lib.measure` allows
#   it, warns, and records `ranks_exceed_cores` in the conditions:

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: a live MPI measurement; its times differ on every run
import warnings

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    crowded = measure.run_collective_sweep("all_reduce", os.cpu_count() + 1, "8B,64KB", "ring", iterations=5)
print(*(str(w.message) for w in caught), sep="\n")
print(crowded.to_text(), "\nranks_exceed_cores:", crowded.conditions["ranks_exceed_cores"])

# %% [markdown]
# - **One number.** The p10–p90 spread on a shared machine is wide (the sweeps' tables print it): a difference between
#   two algorithms smaller than the spread is not a finding.

# %% [markdown]
# ## Self-check

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="You fit ring all-reduce times at p = 8 with the recursive-doubling model (n = 3 instead of 14). "
        "What happens to α?",
        options=(
            "Nothing: α does not depend on the model",
            "It comes out about 14/3 times too large",
            "It comes out 14/3 times too small",
        ),
        answer=1,
        explanation="The fit sees the same latency total n·α; dividing it by 3 phases instead of 14 inflates α.",
    )
)

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt="Gradient buckets are all-reduced with MPI_Iallreduce as soon as each is ready, and nothing calls MPI "
        "until MPI_Waitall after the backward pass. How much of the communication is hidden?",
        options=("All of it", "Most of it, except the last bucket", "Little or none of it"),
        answer=2,
        explanation="Without calls into MPI (Test, or a progress thread) the library moves the data inside Waitall, "
        "after the compute: posting early does not overlap by itself.",
    )
)

# %% [markdown]
# ## History
#
# - **1994–2005: MPI's collectives and their costs.** The MPI standard (1994) fixed the collectives' semantics;
#   Thakur, Rabenseifner and Gropp (2005) gave MPICH the algorithms it still selects by size and rank count, with
#   their α–β costs.
# - **Measuring them well.** The OSU micro-benchmarks and Intel's MPI Benchmarks set the conventions the course
#   builds on: warm-up, a barrier between iterations, statistics over ranks.
# - **nccl-tests.** NVIDIA's benchmark for its GPU collective library defined algbw and busbw, so that all-reduce
#   logs from different rank counts can be compared with a link's bandwidth.

# %% [markdown]
# ## Summary
#
# - Measure with warm-up, a barrier, the maximum over ranks, and report the spread; check the data.
# - Fit $T = n\alpha + Q/B$ with the algorithm's own $n$ and $Q$, on relative errors, and read the residuals.
# - NCCL picks an algorithm (ring, tree, NVLS) and a protocol (LL, LL128, Simple) for every call by its own cost
#   model, which `course_lib.nccl` reproduces: it ranks well and is optimistic for large calls.
# - `measure.calibrate_cluster` turns measurements into a cluster the planner uses; a plan chosen on the datasheet
#   may change on the measured network (here the decode's $t$: 16 wins by 9 % on the datasheet, by 1 % on the fitted
#   network, and the published logs themselves favour 8).
# - Exposed communication is the completed step minus compute alone. Posting a non-blocking collective is not
#   overlap: something must drive its progress, and the last bucket never hides.

# %% [markdown]
# ## Exercises
#
# 1. **Crossing nodes.** In lesson 04's GPT-3 plan on Selene (`hardware.SELENE_3072`, DGX A100 nodes), a
#    tensor-parallel group of $t = 16$ spans two nodes, and its all-reduce of the $b \cdot s \cdot h$ activations,
#    50.3 MB (`activation_bytes = 2 * parallelism.GPT3_175B.seq_len * parallelism.GPT3_175B.hidden`), takes 593 µs.
#    Which algorithm and protocol does NCCL pick, and why? Compute the flat ring's time with LL128 by hand (bus
#    bandwidth min(NVLink 240 GB/s as NCCL counts it, the node's 8 × 25 GB/s) = 200 GB/s, 0.92 of it for LL128,
#    × 16/30 for the algorithm bandwidth; latency 14 + 28 × 1.9 + 2 × 4.0 µs) and check with
#    `nccl.candidates("all_reduce", hardware.SELENE_3072, 16, 2, activation_bytes)`.
# 2. **The last bucket.** Run `measure.measure_step(2, device_flops_per_s=40e9, buckets=1)` and again with
#    `buckets=16`. Predict the exposed time of `nonblocking_test` for each from the fit before you run it; explain the
#    difference with the last-bucket rule.
#
# <details>
# <summary>Answers</summary>
#
# 1. The flat ring through all 16 GPUs with LL128: $14 + 28 \times 1.9 + 2 \times 4.0 = 75.2\,\mu s$ of latency
#    (the ring's 30 steps, 28 over NVLink and 2 across the network) and
#    $0.92 \times 200 \times 16/30 = 98.1$ GB/s of algorithm bandwidth: 75.2 µs + 50.3 MB / 98.1 GB/s = 588 µs by
#    NCCL's model, 593 µs with the launch floor, against 428 µs inside one node (the ring with Simple at
#    240 GB/s × 8/14: no NVLS on the A100). NCCL picks LL128 because across nodes the ring with Simple pays much more
#    latency (larger costs per hop, and NCCL's × 1.4 for a ring over several nodes): 184 µs against 75.2 µs, while
#    LL128's lower bandwidth (0.92 of Simple's) costs only 41 µs more on 50.3 MB (656 µs in all with Simple). The
#    tree with LL128 is a close second, 589 µs.
# 2. With one bucket nothing can start before the backward pass ends: `nonblocking_test` exposes the whole 16 MiB
#    all-reduce, as `blocking` does (`ring_fit.predict_s(2**24)`). With 16 buckets of 1 MiB, each bucket but the last
#    hides behind the next layer's compute (while its all-reduce is the shorter); the last starts only when the
#    compute ends, so about one 1 MiB all-reduce stays exposed (`ring_fit.predict_s(2**20)`), plus the spread.
#
# </details>

# %% [markdown]
# ## Sources
#
# - R. Thakur, R. Rabenseifner, W. Gropp, *Optimization of Collective Communication Operations in MPICH*,
#   IJHPCA 19(1):49–66, 2005 — the algorithms MPICH runs and their α–β costs.
# - MPICH 5.0.2, `mpivars` (the `MPIR_CVAR_<OP>_INTRA_ALGORITHM`, `MPIR_CVAR_ASYNC_PROGRESS` and
#   `MPIR_CVAR_COLLECTIVE_FALLBACK` control variables). https://www.mpich.org
# - L. Dalcin, Y.-L. L. Fang, *mpi4py: Status Update After 12 Years of Development*, Computing in Science &
#   Engineering 23(4):47–54, 2021. https://mpi4py.readthedocs.io
# - NVIDIA, nccl-tests, `doc/PERFORMANCE.md` (algbw and busbw). https://github.com/NVIDIA/nccl-tests
# - NVIDIA NCCL, `src/graph/tuning.cc` (the tuner's cost model: latency and bandwidth of each algorithm and protocol)
#   and `src/graph/topo.h` (an NVLink 4 link counted at 20.6 GB/s), https://github.com/NVIDIA/nccl v2.30.7-1 — the model
#   `course_lib.nccl` reproduces, with its constants cited beside them.
# - Published nccl-tests logs, with their licences and commits in `course_lib/data/README.md`:
#   aws-samples/awsome-distributed-training (MIT-0), dstackai/dstack (MPL-2.0), stas00/ml-engineering (CC BY-SA 4.0).
# - The OSU micro-benchmarks (Ohio State University, MVAPICH project): warm-up, a barrier between iterations, the
#   average over ranks (min and max with `-f`). https://mvapich.cse.ohio-state.edu/benchmarks/
# - NVIDIA, nccl-tests, `README.md`: `-n` timed iterations run back to back, `-a` (default 1) averages the time
#   over ranks.
# - T. Hoefler, A. Lumsdaine, *Message Progression in Parallel Computing – To Thread or not to Thread?*, IEEE
#   Cluster 2008 — why a non-blocking collective needs something to drive its progress.

# %% [markdown]
# ## What's next
#
# Lab 8 · measure collectives asks you to fit α and B, read busbw, choose an algorithm, read exposed communication
# from recorded tables, and carry an nccl-tests log through a calibrated cluster to a plan. Then
# [08 · Check the model against measurements](08_model_meets_measurements.ipynb) measures the whole model: its
# memory and step time against 3,306 training runs (1,758 of which ran), where it holds and where it breaks.
