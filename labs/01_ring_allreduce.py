# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lab 1 · Time a ring all-reduce
#
# Every data-parallel training step ends with an all-reduce of the gradients. Its time follows the α–β model of
# [lesson 02 · Move the data](../notebooks/02_nccl.ipynb): $T \approx n\alpha + Q/B$, a startup latency $\alpha$
# for each of the algorithm's $n$ steps plus the $Q$ bytes on the critical path over the one-way bandwidth $B$ of
# each rank's link. For the ring, $n = 2(p-1)$ and $Q = 2(p-1)/p \cdot S$. This lab lets you move the ranks $p$,
# the payload $S$, the bandwidth and the latency and watch both terms, the algbw and busbw that nccl-tests would
# report, the payload where the two terms are equal, the four all-reduce algorithms side by side, and, for rings of
# up to 8 ranks, the chunks moving step by step.
#
# **Scope.** The lab is an ideal ring (and ideal tree, recursive-doubling and Rabenseifner algorithms) under the
# α–β model, with one $\alpha$ and one $B$ for every link. It is not a topology-specific or every-collective
# traffic model: contention, NVLink SHARP, in-network reduction and NCCL's protocol switching are outside it, as the
# measurements in lesson 02 showed.

# %%
import math

from course_lib import collectives, units
from course_lib.widgets import ring_allreduce_lab

# %% [markdown]
# ## The lab
#
# Move a slider and the numbers above the figure and the figure follow. On the left, time against payload on
# log–log axes for every algorithm that applies to the chosen number of ranks (recursive doubling and Rabenseifner
# need a power of two), the chosen one thick with its two terms dotted, the current payload marked, and the
# crossover $S^*$ dashed between the latency-bound and bandwidth-bound regions. On the right, the ring's chunks at
# the chosen step: a row per rank, a column per chunk, darker when the copy holds the sum of more ranks.

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget; its output cannot be compared
lab = ring_allreduce_lab()
lab

# %% [markdown]
# ## Explore
#
# Start from the default settings (8 ranks, 100 MB, 50 GB/s, 5 µs, ring) for each question.
#
# 1. **Find the payload where the two terms are equal.** Move *payload S* down from 100 MB and watch the latency
#    term and the bandwidth term above the figure. At which payload are they equal, and what is the time there?
#    Does the marked point sit on the dashed line then?
# 2. **Double the ranks at a large and at a small payload.** At 100 MB, move *ranks p* from 8 to 16: by what
#    factor does the ring's time grow? Now set the payload to 1 kB and do the same. Which term explains each answer?
# 3. **Predict the crossover.** The ring's crossover is $S^* = p\,\alpha\,B$. Predict where the dashed line goes
#    when you double α (5 → 10 µs), then B (50 → 100 GB/s), then p (8 → 16); move one slider at a time and check.
# 4. **Pick the fastest algorithm.** At 1 kB and at 100 MB, which algorithm is fastest on 8 ranks (the summary
#    marks it in bold)? Then set 12 ranks: which algorithms are left, and which wins at 1 kB?
# 5. **algbw against busbw.** Set the payload to 1 GB and move *ranks p* through 2, 8, 64 and 1024. Which of the
#    two bandwidths stays near the link's 50 GB/s, and why does the other one fall? What pulls busbw down at 1024
#    ranks?
# 6. **Step through the ring.** Set 4 ranks and move *ring step* from 0 to 6. After which step does every rank hold
#    one finished chunk (the darkest shade)? How many chunks does each rank send in all, and what fraction of the
#    buffer is that?
#
# <details>
# <summary>Answers</summary>
#
# 1. At 2 MB ($S^* = p\alpha B$ = 8 × 5 µs × 50 GB/s): both terms are 70 µs ($14\alpha$, and 3.5 MB at
#    50 GB/s), so the time is 140 µs, twice either term, and the point sits on the dashed line. Below 2 MB the
#    summary says latency-bound, from 2 MB up bandwidth-bound.
# 2. At 100 MB: 3.57 ms → 3.9 ms, only 9 % more, because the bandwidth term $2(p-1)/p \cdot S/B$ barely moves
#    (1.75 → 1.875 × S/B). At 1 kB: 70 µs → 150 µs, more than double, because the latency term $2(p-1)\alpha$ grows
#    with p (14 → 30 steps).
# 3. Each doubling doubles $S^*$: 2 MB → 4 MB for α, for B and for p. A slower startup or a faster link pushes more
#    payloads into the latency-bound region.
# 4. At 1 kB recursive doubling (15.1 µs: only $\lg 8 = 3$ steps); at 100 MB Rabenseifner (3.53 ms, just ahead of
#    the ring's 3.57 ms: the same bytes in 6 steps instead of 14). With 12 ranks only the ring and the binomial tree
#    are offered, and the tree wins at 1 kB (40.2 µs against 110 µs) while the ring wins at 100 MB (3.78 ms against
#    16 ms).
# 5. busbw: 50, 49.9, 49.2 and 39.8 GB/s; algbw: 50, 28.5, 25 and 19.9 GB/s. busbw = algbw × 2(p − 1)/p undoes
#    the ring's factor of nearly 2 in bytes per rank, so it stays near the link's bandwidth, which is why nccl-tests
#    reports it; algbw = S/T falls towards B/2. At 1024 ranks the latency term, 2046 × 5 µs = 10.2 ms of the
#    50.2 ms, pulls busbw below the link's rate even at 1 GB.
# 6. After step 3 ($p-1$, the end of the reduce-scatter) rank r holds the finished chunk r; after step 6 every rank
#    holds all four. Each rank sends one chunk per step, $2(p-1) = 6$ chunks of $S/4$: $1.5\,S$, the
#    $2(p-1)/p \cdot S$ of the model.
#
# </details>

# %% [markdown]
# ## Key figures at the default settings
#
# A fresh lab at the card's numbers, and the same time from the ring formula of `course_lib.collectives`:

# %%
reference = ring_allreduce_lab()
r = reference.result
print(f"{r['ranks']} ranks, S = {units.format_bytes(r['payload_bytes'])}, "
      f"B = {units.format_bandwidth(r['bandwidth_bytes_per_s'])}, α = {units.format_time(r['latency_s'])}, "
      f"{r['algorithm']}")
print(f"time T                  {units.format_time(r['time_s'])}")
print(f"latency term n·α        {units.format_time(r['latency_term_s'])}  (n = {r['phases']})")
print(f"bandwidth term Q/B      {units.format_time(r['bandwidth_term_s'])}  (Q = {units.format_bytes(r['wire_bytes'])})")
print(f"algbw = S/T             {units.format_bandwidth(r['algbw_bytes_per_s'])}")
print(f"busbw = algbw × 2(p−1)/p {units.format_bandwidth(r['busbw_bytes_per_s'])}  (2(p−1)/p = {r['busbw_factor']})")
print(f"crossover S*            {units.format_bytes(r['crossover_bytes'])}  ({r['regime']} at this payload)")
print(f"fastest algorithm       {r['fastest_algorithm']}")
formula = collectives.ring_allreduce_time(8, 100 * units.MB, 50 * units.GB, 5 * units.US)
print(f"collectives.ring_allreduce_time(8, 100 MB, 50 GB/s, 5 µs) = {units.format_time(formula)}; "
      f"agrees with the lab: {math.isclose(formula, r['time_s'], rel_tol=1e-12)}")
