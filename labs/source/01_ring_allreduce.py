# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [raw]
# # ASSIGNMENT CONFIG
# # The graded master of lab 1 (otter-grader 7 format). `make assignments` (tools/assignments.py) runs
# # `otter assign` on it; it stages course_lib/ and requirements.txt next to a copy of this notebook first,
# # so that the autograder zip carries the course's code and runs on Gradescope as it does locally.
# # Its links are relative to labs/, where the student version goes (make assignments).
# name: 01_ring_allreduce
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
# # Lab 1 · Time a ring all-reduce
#
# Every data-parallel training step ends with an all-reduce of the gradients. Its time follows the α–β model of
# [lesson 02 · Move the data](../notebooks/02_nccl.ipynb): $T \approx n\alpha + Q/B$, a startup latency $\alpha$
# for each of the algorithm's $n$ steps plus the $Q$ bytes on the critical path over the one-way bandwidth $B$ of
# each rank's link. For the ring, $n = 2(p-1)$ and $Q = 2(p-1)/p \cdot S$. In this lab you first move the ranks
# $p$, the payload $S$, the bandwidth and the latency and watch both terms, the algbw and busbw that nccl-tests
# would report, the payload where the two terms are equal, the five all-reduce algorithms side by side, and, for
# rings of up to 8 ranks, the chunks moving step by step; then you derive the same numbers yourself in the graded
# questions.
#
# **What you need:** lesson 02, in particular the ring all-reduce step by step, the α–β model, algbw and busbw,
# and what a bandwidth figure means.
#
# **Scope.** The lab is an ideal ring (and ideal binomial-tree, double-binary-tree, recursive-doubling and
# Rabenseifner algorithms) under the α–β model, with one $\alpha$ and one $B$ for every link. It is not a
# topology-specific or every-collective traffic model: contention, NVLink SHARP, in-network reduction and NCCL's
# protocol switching are outside it, as the measurements in lesson 02 showed.
#
# **How it is graded.** Write your answers where you see `...`. The cell `grader.check("q1")` after each question
# runs its public tests and tells you at once whether they pass. The grader also runs hidden tests with other
# inputs, chosen so that the usual slips (an off-by-one in $p-1$, a two-way bandwidth, bits for bytes) fail them,
# so make your answer right for every input, not only for the public example. All quantities are in SI base units:
# bytes, seconds, bytes per second.

# %%
import math

from course_lib import collectives, hardware, units

# %% [markdown]
# ## The lab
#
# Move a slider and the numbers above the figure and the figure follow. On the left, time against payload on
# log–log axes for every algorithm that applies to the chosen number of ranks (recursive doubling and Rabenseifner
# need a power of two), the chosen one thick with its two terms dotted, the current payload marked, and the
# crossover $S^*$ dashed between the latency-bound and bandwidth-bound regions. On the right, the ring's chunks at
# the chosen step: a row per rank, a column per chunk, darker when the copy holds the sum of more ranks.
# %% tags=["nbval-ignore-output", "otter_ignore"]
# nbval-ignore-output: live widget; its output cannot be compared
from course_lib.widgets import ring_allreduce_lab

lab = ring_allreduce_lab()
lab

# %% [markdown]
# ## Explore
#
# Start from the default settings (8 ranks, 100 MB, 50 GB/s, 5 µs, ring) for each question. These are not
# graded; the answers are below.
#
# 1. **Find the payload where the two terms are equal.** Move *payload S* down from 100 MB and watch the latency
#    term and the bandwidth term above the figure. At which payload are they equal, and what is the time there?
#    Does the marked point sit on the dashed line then?
# 2. **Double the ranks at a large and at a small payload.** At 100 MB, move *ranks p* from 8 to 16: by what
#    factor does the ring's time grow? Now set the payload to 1 kB and do the same. Which term explains each answer?
# 3. **Move the crossover.** Predict where the dashed line goes when you double α (5 → 10 µs), then B
#    (50 → 100 GB/s), then p (8 → 16); move one slider at a time and check. (Question 2 asks for the formula.)
# 4. **Pick the fastest algorithm.** At 1 kB and at 100 MB, which algorithm is fastest on 8 ranks (the summary
#    marks it in bold)? Then set 12 ranks: which algorithms are left, and which wins at 1 kB and at 100 MB?
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
# 1. At 2 MB both terms are 70 µs ($14\alpha$, and 3.5 MB at 50 GB/s), so the time is 140 µs, twice either term,
#    and the point sits on the dashed line. Below 2 MB the summary says latency-bound, from 2 MB up
#    bandwidth-bound.
# 2. At 100 MB: 3.57 ms → 3.9 ms, only 9 % more, because the bandwidth term $2(p-1)/p \cdot S/B$ barely moves
#    (1.75 → 1.875 × S/B). At 1 kB: 70 µs → 150 µs, more than double, because the latency term $2(p-1)\alpha$ grows
#    with p (14 → 30 steps).
# 3. Each doubling doubles $S^*$: 2 MB → 4 MB for α, for B and for p. A slower startup or a faster link pushes more
#    payloads into the latency-bound region.
# 4. At 1 kB recursive doubling (15.1 µs: only $\lg 8 = 3$ steps); at 100 MB Rabenseifner (3.53 ms, just ahead of
#    the ring's 3.57 ms: the same bytes in 6 steps instead of 14; NCCL's double binary tree takes 4.12 ms). With 12
#    ranks the ring, the binomial tree and the double binary tree are offered (the other two need a power of two):
#    the double binary tree wins at 1 kB (30 µs against the binomial tree's 40.2 µs and the ring's 110 µs), the ring
#    at 100 MB (3.78 ms against 4.12 ms and 16 ms).
# 5. busbw: 50, 49.9, 49.2 and 39.8 GB/s; algbw: 50, 28.5, 25 and 19.9 GB/s. busbw undoes the ring's factor of
#    nearly 2 in bytes per rank, so it stays near the link's bandwidth, which is why nccl-tests reports it;
#    algbw = S/T falls towards B/2. At 1024 ranks the latency term, 2046 × 5 µs = 10.2 ms of the 50.2 ms, pulls
#    busbw below the link's rate even at 1 GB.
# 6. After step 3 ($p-1$, the end of the reduce-scatter) rank r holds the finished chunk r; after step 6 every rank
#    holds all four. Each rank sends one chunk per step, $2(p-1) = 6$ chunks of $S/4$: $1.5\,S$, the
#    $2(p-1)/p \cdot S$ of the model.
#
# </details>

# %% [markdown]
# ## Key figures at the default settings
#
# A fresh lab at the card's numbers, and the same time from the ring formula of `course_lib.collectives`:

# %% tags=["otter_ignore"]
reference = ring_allreduce_lab()
r = reference.result
print(
    f"{r['ranks']} ranks, S = {units.format_bytes(r['payload_bytes'])}, "
    f"B = {units.format_bandwidth(r['bandwidth_bytes_per_s'])}, α = {units.format_time(r['latency_s'])}, "
    f"{r['algorithm']}"
)
print(f"time T                  {units.format_time(r['time_s'])}")
print(f"latency term n·α        {units.format_time(r['latency_term_s'])}  (n = {r['phases']})")
print(
    f"bandwidth term Q/B      {units.format_time(r['bandwidth_term_s'])}  (Q = {units.format_bytes(r['wire_bytes'])})"
)
print(f"algbw = S/T             {units.format_bandwidth(r['algbw_bytes_per_s'])}")
print(f"busbw                   {units.format_bandwidth(r['busbw_bytes_per_s'])}")
print(f"crossover S*            {units.format_bytes(r['crossover_bytes'])}  ({r['regime']} at this payload)")
print(f"fastest algorithm       {r['fastest_algorithm']}")
formula = collectives.ring_allreduce_time(8, 100 * units.MB, 50 * units.GB, 5 * units.US)
print(
    f"collectives.ring_allreduce_time(8, 100 MB, 50 GB/s, 5 µs) = {units.format_time(formula)}; "
    f"agrees with the lab: {math.isclose(formula, r['time_s'], rel_tol=1e-12)}"
)

# %% [markdown]
# ## Graded questions
#
# Each question names the function or variable to define. Functions take their arguments in SI base units and
# return SI base units.

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 3
# all_or_nothing: true

# %% [markdown]
# ### Question 1 · The ring all-reduce time (3 points)
#
# A ring all-reduce of $S$ bytes over $p$ ranks is a reduce-scatter followed by an all-gather. Each runs $p-1$
# steps; in every step each rank sends one chunk of $S/p$ bytes to its neighbour, over a link of one-way bandwidth
# $B$, and every step pays the startup latency $\alpha$.
#
# Write `ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s)`, the time in seconds under
# the α–β model. Build it from the model: do not call `collectives.ring_allreduce_time`, `collective_time` or
# `collective_cost` (`collectives.comm_time` is allowed). A ring of one rank has nothing to exchange.
# Check it against the lab: the time it shows for your settings must match.

# %% [raw]
# # BEGIN SOLUTION


# %%
def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    """Seconds for a ring all-reduce of ``payload_bytes`` over ``ranks`` ranks (α–β model)."""
    # BEGIN SOLUTION
    steps = 2 * (ranks - 1)  # reduce-scatter, then all-gather: p − 1 steps each
    chunk_bytes = payload_bytes / ranks  # what each rank sends in one step
    return steps * latency_s + steps * chunk_bytes / bandwidth_bytes_per_s
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q1_card_example(ring_allreduce_time):
    assert callable(ring_allreduce_time), "define the function ring_allreduce_time"
    import numpy

    def number(value):  # exactly a float or an int (a numpy scalar as its value), never an object claiming equality
        if type(value) in (numpy.float64, numpy.float32, numpy.int64, numpy.int32):
            value = value.item()
        return value if type(value) in (float, int) else None

    import sys

    def calling(function, *args):  # (result, {forbidden course_lib functions it called, under whatever name})
        called = set()

        def watch(frame, event, arg):
            code = frame.f_code
            if event == "call" and code.co_name in {"collective_time", "collective_cost", "ring_allreduce_time"}:
                if code.co_filename.replace("\\", "/").endswith(("course_lib/collectives.py",)):
                    caller = frame.f_back.f_code.co_filename.replace("\\", "/") if frame.f_back else ""
                    if "course_lib/" not in caller:
                        called.add(code.co_name)

        previous = sys.getprofile()
        sys.setprofile(watch)
        try:
            return function(*args), called
        finally:
            sys.setprofile(previous)

    result, called = calling(ring_allreduce_time, 4, 100e6, 50e9, 5e-6)
    assert not called, f"build the time from the α–β model instead of calling {', '.join(sorted(called))}"
    got = number(result)
    assert got is not None, f"return the time in seconds as a float, got {result!r:.80}"
    want = 3.03e-3  # 6·5 µs + 6·25 MB / 50 GB/s
    assert abs(got - want) <= 1e-6 * want, (
        f"4 ranks, 100 MB at 50 GB/s, α = 5 µs: expected {want:.6g} s, got {got:.6g} s"
    )


test_q1_card_example(ring_allreduce_time)


# %%
# HIDDEN
def test_q1_other_rings(ring_allreduce_time):
    import numpy

    def number(value):  # exactly a float or an int (a numpy scalar as its value), never an object claiming equality
        if type(value) in (numpy.float64, numpy.float32, numpy.int64, numpy.int32):
            value = value.item()
        return value if type(value) in (float, int) else None

    import sys

    def calling(function, *args):  # (result, {forbidden course_lib functions it called, under whatever name})
        called = set()

        def watch(frame, event, arg):
            code = frame.f_code
            if event == "call" and code.co_name in {"collective_time", "collective_cost", "ring_allreduce_time"}:
                if code.co_filename.replace("\\", "/").endswith(("course_lib/collectives.py",)):
                    caller = frame.f_back.f_code.co_filename.replace("\\", "/") if frame.f_back else ""
                    if "course_lib/" not in caller:
                        called.add(code.co_name)

        previous = sys.getprofile()
        sys.setprofile(watch)
        try:
            return function(*args), called
        finally:
            sys.setprofile(previous)

    cases = [  # (ranks, payload, bandwidth, latency) and the time 2(p − 1)·α + 2(p − 1)/p · S/B, worked out by hand
        ((2, 1e9, 100e9, 5e-6), 0.01001),  # the smallest ring: 2(p − 1) = 2 steps, not 2p = 4
        ((64, 1e9, 25e9, 5e-6), 0.07938),  # many ranks: bandwidth term 2·63/64·S/B, not 2S/B or 2·63·S/B
        ((8, 1.0, 100e9, 10e-6), 1.4000001750e-4),  # latency-bound: 14 α
        ((8, 1e9, 100e9, 0.0), 0.0175),  # bandwidth-bound: 2·7/8·S/B, with B one-way (not halved, not doubled)
        ((1, 1e9, 100e9, 5e-6), 0.0),  # one rank: nothing moves
    ]
    for case, want in cases:
        result, called = calling(ring_allreduce_time, *case)
        assert not called, f"ring_allreduce_time{case} called {', '.join(sorted(called))}"
        got = number(result)
        assert got is not None and abs(got - want) <= max(1e-6 * want, 1e-12), (
            f"ring_allreduce_time{case}: expected {want:.6g} s, got {result!r:.80}"
        )


test_q1_other_rings(ring_allreduce_time)

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
# ### Question 2 · Latency-bound or bandwidth-bound (2 points)
#
# Write `crossover_payload_bytes(ranks, bandwidth_bytes_per_s, latency_s)`: the payload $S^*$ at which the
# latency term and the bandwidth term of a ring all-reduce are equal. Below it the all-reduce is latency-bound,
# above it bandwidth-bound. Derive it from the two terms of question 1 (do not call
# `collectives.latency_bandwidth_crossover_bytes`), then compare it with the crossover the lab prints.

# %% [raw]
# # BEGIN SOLUTION


# %%
def crossover_payload_bytes(ranks, bandwidth_bytes_per_s, latency_s):
    """Payload (bytes) at which a ring all-reduce's latency and bandwidth terms are equal."""
    # BEGIN SOLUTION
    # 2(p − 1)·α = 2(p − 1)/p · S/B  ⇒  S = p·α·B
    return ranks * latency_s * bandwidth_bytes_per_s
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q2_eight_ranks(crossover_payload_bytes):
    assert callable(crossover_payload_bytes), "define the function crossover_payload_bytes"
    import numpy

    def number(value):  # exactly a float or an int (a numpy scalar as its value), never an object claiming equality
        if type(value) in (numpy.float64, numpy.float32, numpy.int64, numpy.int32):
            value = value.item()
        return value if type(value) in (float, int) else None

    import sys

    def calling(function, *args):  # (result, {forbidden course_lib functions it called, under whatever name})
        called = set()

        def watch(frame, event, arg):
            code = frame.f_code
            if event == "call" and code.co_name in {
                "latency_bandwidth_crossover_bytes",
                "collective_cost",
                "collective_time",
            }:
                if code.co_filename.replace("\\", "/").endswith(("course_lib/collectives.py",)):
                    caller = frame.f_back.f_code.co_filename.replace("\\", "/") if frame.f_back else ""
                    if "course_lib/" not in caller:
                        called.add(code.co_name)

        previous = sys.getprofile()
        sys.setprofile(watch)
        try:
            return function(*args), called
        finally:
            sys.setprofile(previous)

    result, called = calling(crossover_payload_bytes, 8, 50e9, 5e-6)
    assert not called, f"derive S* from the two terms instead of calling {', '.join(sorted(called))}"
    got = number(result)
    assert got is not None, f"return the payload in bytes as a number, got {result!r:.80}"
    assert abs(got - 2e6) <= 1e-6 * 2e6, f"8 ranks at 50 GB/s with α = 5 µs: expected 2 MB, got {got:.6g} B"


test_q2_eight_ranks(crossover_payload_bytes)


# %%
# HIDDEN
def test_q2_other_rings(crossover_payload_bytes):
    import numpy

    def number(value):  # exactly a float or an int (a numpy scalar as its value), never an object claiming equality
        if type(value) in (numpy.float64, numpy.float32, numpy.int64, numpy.int32):
            value = value.item()
        return value if type(value) in (float, int) else None

    import sys

    def calling(function, *args):  # (result, {forbidden course_lib functions it called, under whatever name})
        called = set()

        def watch(frame, event, arg):
            code = frame.f_code
            if event == "call" and code.co_name in {
                "latency_bandwidth_crossover_bytes",
                "collective_cost",
                "collective_time",
            }:
                if code.co_filename.replace("\\", "/").endswith(("course_lib/collectives.py",)):
                    caller = frame.f_back.f_code.co_filename.replace("\\", "/") if frame.f_back else ""
                    if "course_lib/" not in caller:
                        called.add(code.co_name)

        previous = sys.getprofile()
        sys.setprofile(watch)
        try:
            return function(*args), called
        finally:
            sys.setprofile(previous)

    # S* = p·α·B (2(p − 1)·α = 2(p − 1)/p · S/B), worked out by hand
    for case, want in [
        ((2, 50e9, 5e-6), 5e5),
        ((64, 25e9, 5e-6), 8e6),
        ((16, 450e9, 1e-6), 7.2e6),
        ((3, 12.5e9, 20e-6), 7.5e5),
    ]:
        result, called = calling(crossover_payload_bytes, *case)
        got = number(result)
        assert not called and got is not None and abs(got - want) <= 1e-6 * want, (
            f"crossover_payload_bytes{case}: expected {want:.6g} B, got {result!r:.80}"
        )


test_q2_other_rings(crossover_payload_bytes)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 2
# all_or_nothing: true

# %% [markdown]
# ### Question 3 · From an nccl-tests row to busbw (2 points)
#
# nccl-tests times a collective on a buffer of `size` bytes and prints algbw $= S/t$ and busbw $=$ algbw $\times$
# a factor that depends on the collective and on the number of ranks $n$. Here is a row of `all_reduce_perf` on
# 8 GPUs, with its busbw column blanked:
#
# ```
# #       size         count      type   redop    root     time   algbw   busbw
# #        (B)    (elements)                               (us)  (GB/s)  (GB/s)
#   1073741824     268435456     float     sum      -1   5741.2  187.02       ?
# ```
#
# Write `busbw_bytes_per_s(op, ranks, size_bytes, time_s)` for `op` in `"all_reduce"`, `"reduce_scatter"`,
# `"all_gather"` and `"broadcast"`, returning busbw in bytes per second, without calling `collectives`'
# `busbw_*` or `algbw_*` functions. Then check it on the row above (mind the units of the columns).

# %% [raw]
# # BEGIN SOLUTION


# %%
def busbw_bytes_per_s(op, ranks, size_bytes, time_s):
    """nccl-tests' bus bandwidth (bytes/s) of one collective call of ``size_bytes`` that took ``time_s``."""
    # BEGIN SOLUTION
    share = (ranks - 1) / ranks
    factor = {"all_reduce": 2 * share, "reduce_scatter": share, "all_gather": share, "broadcast": 1.0}[op]
    return size_bytes / time_s * factor
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q3_the_row(busbw_bytes_per_s):
    assert callable(busbw_bytes_per_s), "define the function busbw_bytes_per_s"
    import numpy

    def number(value):  # exactly a float or an int (a numpy scalar as its value), never an object claiming equality
        if type(value) in (numpy.float64, numpy.float32, numpy.int64, numpy.int32):
            value = value.item()
        return value if type(value) in (float, int) else None

    import sys

    def calling(function, *args):  # (result, {forbidden course_lib functions it called, under whatever name})
        called = set()

        def watch(frame, event, arg):
            code = frame.f_code
            if event == "call" and code.co_name in {
                "algbw_bytes_per_s",
                "busbw_bytes_per_s",
                "busbw_factor",
                "algbw_from_busbw",
            }:
                if code.co_filename.replace("\\", "/").endswith(("course_lib/collectives.py",)):
                    caller = frame.f_back.f_code.co_filename.replace("\\", "/") if frame.f_back else ""
                    if "course_lib/" not in caller:
                        called.add(code.co_name)

        previous = sys.getprofile()
        sys.setprofile(watch)
        try:
            return function(*args), called
        finally:
            sys.setprofile(previous)

    result, called = calling(busbw_bytes_per_s, "all_reduce", 8, 1073741824, 5741.2e-6)
    assert not called, f"compute busbw yourself instead of calling {', '.join(sorted(called))}"
    got = number(result)
    assert got is not None, f"return bytes per second as a number, got {result!r:.80}"
    assert abs(got - 327.29e9) <= 1e-4 * 327.29e9, f"the row above: expected 327.29 GB/s, got {got / 1e9:.6g} GB/s"


test_q3_the_row(busbw_bytes_per_s)


# %%
# HIDDEN
def test_q3_other_collectives(busbw_bytes_per_s):
    import numpy

    def number(value):  # exactly a float or an int (a numpy scalar as its value), never an object claiming equality
        if type(value) in (numpy.float64, numpy.float32, numpy.int64, numpy.int32):
            value = value.item()
        return value if type(value) in (float, int) else None

    import sys

    def calling(function, *args):  # (result, {forbidden course_lib functions it called, under whatever name})
        called = set()

        def watch(frame, event, arg):
            code = frame.f_code
            if event == "call" and code.co_name in {
                "algbw_bytes_per_s",
                "busbw_bytes_per_s",
                "busbw_factor",
                "algbw_from_busbw",
            }:
                if code.co_filename.replace("\\", "/").endswith(("course_lib/collectives.py",)):
                    caller = frame.f_back.f_code.co_filename.replace("\\", "/") if frame.f_back else ""
                    if "course_lib/" not in caller:
                        called.add(code.co_name)

        previous = sys.getprofile()
        sys.setprofile(watch)
        try:
            return function(*args), called
        finally:
            sys.setprofile(previous)

    cases = [  # S/t times nccl-tests' factor: 2(n − 1)/n all-reduce, (n − 1)/n reduce-scatter and all-gather, 1
        (("all_gather", 16, 1e9, 2.5e-3), 375e9),
        (("reduce_scatter", 4, 256e6, 1e-3), 192e9),
        (("broadcast", 8, 1e9, 4e-3), 250e9),
        (("all_reduce", 2, 64e6, 1e-3), 64e9),
        (("all_reduce", 64, 4e9, 50e-3), 157.5e9),
    ]
    for case, want in cases:
        result, called = calling(busbw_bytes_per_s, *case)
        got = number(result)
        assert not called and got is not None and abs(got - want) <= 1e-6 * want, (
            f"busbw_bytes_per_s{case}: expected {want:.6g} B/s, got {result!r:.80}"
        )


test_q3_other_collectives(busbw_bytes_per_s)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q4
# points: 2
# all_or_nothing: true

# %% [markdown]
# ### Question 4 · Which bandwidth goes into $B$? (2 points)
#
# Predict two all-reduces of 2 GB of gradients with course_lib's reference `collectives.ring_allreduce_time`
# (so that a slip in question 1 does not carry over here):
#
# 1. `nvlink_allreduce_s`: over the 8 H100 GPUs of one DGX H100 node, whose NVLink 4 datasheet figure is
#    900 GB/s per GPU, counted in both directions; $\alpha$ = 1 µs.
# 2. `infiniband_allreduce_s`: over 16 GPUs in 16 nodes, one GPU per node, each GPU with its own 400 Gb/s
#    InfiniBand NDR adapter (a one-way figure, in bits per second); $\alpha$ = 5 µs.
#
# `hardware.NVLINK4` and `hardware.INFINIBAND_NDR_8X` record what their figures mean.

# %% [raw]
# # BEGIN SOLUTION

# %%
nvlink_allreduce_s = collectives.ring_allreduce_time(8, 2e9, 900e9 / 2, 1e-6)  # SOLUTION
infiniband_allreduce_s = collectives.ring_allreduce_time(16, 2e9, 400e9 / 8, 5e-6)  # SOLUTION

# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q4_numbers(nvlink_allreduce_s, infiniband_allreduce_s):
    import numpy

    def number(value):  # exactly a float or an int (a numpy scalar as its value), never an object claiming equality
        if type(value) in (numpy.float64, numpy.float32, numpy.int64, numpy.int32):
            value = value.item()
        return value if type(value) in (float, int) else None

    for name, value in [("nvlink_allreduce_s", nvlink_allreduce_s), ("infiniband_allreduce_s", infiniband_allreduce_s)]:
        got = number(value)
        assert got is not None and got > 0, f"{name} must be a time in seconds, got {value!r:.80}"
    assert number(nvlink_allreduce_s) < number(infiniband_allreduce_s), "NVLink inside a node should be the faster"


test_q4_numbers(nvlink_allreduce_s, infiniband_allreduce_s)


# %%
# HIDDEN
def test_q4_values(nvlink_allreduce_s, infiniband_allreduce_s):
    import numpy

    def number(value):  # exactly a float or an int (a numpy scalar as its value), never an object claiming equality
        if type(value) in (numpy.float64, numpy.float32, numpy.int64, numpy.int32):
            value = value.item()
        return value if type(value) in (float, int) else None

    nvlink = 7.791777777777778e-3  # 8 ranks, 2 GB, 450 GB/s one-way (half the two-way 900 GB/s), 1 µs
    got = number(nvlink_allreduce_s)
    assert got is not None and abs(got - nvlink) <= 1e-3 * nvlink, (
        f"nvlink_allreduce_s: expected {nvlink:.4g} s, got {nvlink_allreduce_s!r:.80} (one-way or two-way?)"
    )
    infiniband = 0.07515  # 16 ranks, 2 GB, 400 Gb/s = 50 GB/s, 5 µs
    got = number(infiniband_allreduce_s)
    assert got is not None and abs(got - infiniband) <= 1e-3 * infiniband, (
        f"infiniband_allreduce_s: expected {infiniband:.4g} s, got {infiniband_allreduce_s!r:.80} (bits or bytes?)"
    )


test_q4_values(nvlink_allreduce_s, infiniband_allreduce_s)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [markdown]
# ## Before you submit
#
# Restart the kernel and run all cells: the last cell reruns every public test. Then submit this notebook
# (`01_ring_allreduce.ipynb`) as your instructor asks.
