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
# each rank's link. In this lab you first move the ranks $p$, the payload $S$, the bandwidth and the latency and
# watch both terms; then, in the graded questions, you count $n$ and $Q$ from the lab yourself and use them.
#
# **Time to learn:** about 1.4 hours by the course's rule, the graded questions included
# ([how it is counted](../notebooks/00_course_map.ipynb#How-long-each-part-takes)).
#
# **What you need:** lesson 02, in particular the ring all-reduce step by step, the α–β model, algbw and busbw,
# and what a bandwidth figure means.
#
# **Scope.** The lab is an ideal ring (and ideal binomial-tree, double-binary-tree, recursive-doubling and
# Rabenseifner algorithms) under the α–β model, with one $\alpha$ and one $B$ for every link: contention, NVLink
# SHARP, in-network reduction and NCCL's protocol switching, which lesson 02's measurements showed, are outside it.
#
# **How it is graded.** Write your answers where you see `...`. The cell `grader.check("q1")` after each question runs
# its public tests and tells you at once whether they pass. The grader also runs hidden tests with other inputs, chosen
# so that the usual slips (an off-by-one in $p-1$, a two-way bandwidth, bits for bytes) fail them, so make your answer
# right for every input, not only for the public example. All quantities are in SI base units: bytes, seconds, bytes per
# second. Where a question says not to call a course_lib function, the grader makes that function, and every course_lib
# function that uses it, raise an error while it runs your answer (whatever name you reach it by): an answer that calls
# it scores 0 on that question.

# %%
import math

from course_lib import collectives, hardware, units
from course_lib.widgets import readable_feedback

readable_feedback()  # the checks below mark their results with ✔ and ✘, which every font here has

# %% [markdown]
# ## The lab
#
# Move a slider and the numbers above the figure and the figure follow. On the left, time against payload on
# log–log axes for every algorithm that applies to the chosen number of ranks (recursive doubling and Rabenseifner
# need a power of two), the chosen one thick with its two terms dotted, the current payload marked, and the
# crossover $S^*$ dashed between the latency-bound and bandwidth-bound regions. On the right, the ring's chunks at
# the chosen step: a row per rank, a column per chunk, darker when the copy holds the sum of more ranks. The
# numbers above the figure include algbw and busbw: at a large payload, as $p$ grows, busbw stays near $B$ while
# algbw falls towards $B/2$ (lesson 02).
# %% tags=["nbval-ignore-output", "otter_ignore"]
# nbval-ignore-output: live widget; its output cannot be compared
from course_lib.widgets import ring_allreduce_lab

lab = ring_allreduce_lab()
lab

# %% [markdown]
# ## Explore
#
# Start from the default settings (8 ranks, 100 MB, 50 GB/s, 5 µs, ring). This question is not graded; its answer
# is below.
#
# 1. **Double the ranks at a large and at a small payload.** At 100 MB, move *ranks p* from 8 to 16: by what
#    factor does the ring's time grow? Now set the payload to 1 kB and do the same. Which term explains each answer?
#
# <details>
# <summary>Answer</summary>
#
# 1. At 100 MB: 3.57 ms → 3.9 ms, only 9 % more, because the bandwidth term $2(p-1)/p \cdot S/B$ barely moves
#    (1.75 → 1.875 × S/B). At 1 kB: 70 µs → 150 µs, more than double, because the latency term $2(p-1)\alpha$ grows
#    with p (14 → 30 steps). The dashed crossover $S^*$, where the two terms are equal, moves from 2 MB to 4 MB:
#    it doubles with $p$, as it does when α or $B$ doubles, so a wider ring, a slower startup or a faster link
#    pushes more payloads into the latency-bound region.
#
# </details>

# %% [markdown]
# ## Key figures at the default settings
#
# A fresh lab at its default settings, and the same time from the ring formula of `course_lib.collectives`:

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
# points: 3
# all_or_nothing: true

# %% [markdown]
# ### Question 1 · The ring all-reduce time (3 points)
#
# Count the ring's work in the lab's right panel (set a few ranks, 4 for instance, and move *ring step*): how many
# steps does the ring all-reduce take for $p$ ranks, and what does each rank send to its neighbour in one step, as a
# share of the payload $S$? Every step pays the startup latency $\alpha$ once, and the ranks send at the same time,
# each over its own link of one-way bandwidth $B$.
#
# Write `ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s)`, the time in seconds under
# the α–β model, from your count. Do not call `collectives.ring_allreduce_time`, `collective_time` or
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
def test_q1_four_ranks(ring_allreduce_time):
    assert callable(ring_allreduce_time), "define the function ring_allreduce_time"

    forbidden = {"collective_time", "collective_cost", "ring_allreduce_time"}
    files = ("course_lib/collectives.py",)
    result, called = calling(ring_allreduce_time, 4, 100e6, 50e9, 5e-6, forbidden=forbidden, files=files)
    assert not called, f"build the time from the α–β model instead of calling {', '.join(sorted(called))}"
    got = number(result)
    assert got is not None, f"return the time in seconds as a float, got {result!r:.80}"
    want = 3.03e-3  # 6·5 µs + 6·25 MB / 50 GB/s
    assert abs(got - want) <= 1e-6 * want, (
        f"4 ranks, 100 MB at 50 GB/s, α = 5 µs: expected {want:.6g} s, got {got:.6g} s"
    )


test_q1_four_ranks(ring_allreduce_time)


# %%
# HIDDEN
def test_q1_other_rings(ring_allreduce_time):
    forbidden = {"collective_time", "collective_cost", "ring_allreduce_time"}
    files = ("course_lib/collectives.py",)
    cases = [  # (ranks, payload, bandwidth, latency) and the time 2(p − 1)·α + 2(p − 1)/p · S/B, worked out by hand
        ((2, 1e9, 100e9, 5e-6), 0.01001),  # the smallest ring: 2(p − 1) = 2 steps, not 2p = 4
        ((64, 1e9, 25e9, 5e-6), 0.07938),  # many ranks: bandwidth term 2·63/64·S/B, not 2S/B or 2·63·S/B
        ((8, 1.0, 100e9, 10e-6), 1.4000001750e-4),  # latency-bound: 14 α
        ((8, 1e9, 100e9, 0.0), 0.0175),  # bandwidth-bound: 2·7/8·S/B, with B one-way (not halved, not doubled)
        ((1, 1e9, 100e9, 5e-6), 0.0),  # one rank: nothing moves
    ]
    for case, want in cases:
        result, called = calling(ring_allreduce_time, *case, forbidden=forbidden, files=files)
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
# ### Question 2 · When does the ring beat recursive doubling? (2 points)
#
# On a power-of-two number of ranks the lab also draws recursive doubling. Set 8 ranks and move the payload: at
# 1 kB recursive doubling is the fastest, at 100 MB the ring beats it. Read the two algorithms' costs off the lab
# (the summary gives each algorithm's time; lesson 02's table of steps $n$ and bytes $Q$ says why) and find where
# they swap.
#
# Write `ring_beats_recursive_doubling_bytes(ranks, bandwidth_bytes_per_s, latency_s)`: the payload $S$ (bytes) at
# which a ring all-reduce and a recursive-doubling all-reduce over `ranks` ranks (a power of two, at least 4) take
# the same time under the α–β model, with the same $B$ and $\alpha$ for both. Above it the ring is faster. Do not
# call `collectives.equal_time_payload_bytes` (the other functions of `collectives` are allowed). Check it on the
# lab: at your payload the two times it shows must be equal.

# %% [raw]
# # BEGIN SOLUTION


# %%
def ring_beats_recursive_doubling_bytes(ranks, bandwidth_bytes_per_s, latency_s):
    """Payload (bytes) at which ring and recursive-doubling all-reduces over ``ranks`` ranks take equal time."""
    # BEGIN SOLUTION
    # ring: 2(p − 1) steps, 2(p − 1)/p · S bytes; recursive doubling: lg p steps, the whole S in each: lg p · S
    ring_steps, doubling_steps = 2 * (ranks - 1), math.log2(ranks)
    ring_share, doubling_share = 2 * (ranks - 1) / ranks, math.log2(ranks)
    # ring_steps·α + ring_share·S/B = doubling_steps·α + doubling_share·S/B, solved for S
    return (ring_steps - doubling_steps) * latency_s * bandwidth_bytes_per_s / (doubling_share - ring_share)
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q2_eight_ranks(ring_beats_recursive_doubling_bytes):
    assert callable(ring_beats_recursive_doubling_bytes), "define the function ring_beats_recursive_doubling_bytes"

    forbidden = {"equal_time_payload_bytes", "latency_bandwidth_crossover_bytes"}
    files = ("course_lib/collectives.py",)
    result, called = calling(ring_beats_recursive_doubling_bytes, 8, 50e9, 5e-6, forbidden=forbidden, files=files)
    assert not called, f"find the payload from the two algorithms' costs instead of calling {', '.join(called)}"
    got = number(result)
    assert got is not None, f"return the payload in bytes as a number, got {result!r:.80}"
    # The usual slips give other numbers: the ring's own crossover p·α·B = 2 MB, a ring sending 2S instead of
    # 2(p − 1)/p · S (2.75 MB), Rabenseifner's 2 lg p steps for recursive doubling (1.6 MB).
    slips = {2e6: "that is where the ring's own two terms are equal (p·α·B), not where the two algorithms meet"}
    for slip, hint in slips.items():
        assert abs(got - slip) > 1e-6 * slip, f"8 ranks at 50 GB/s, α = 5 µs: {hint}"
    want = 2.2e6  # ring 14 α + 1.75 S/B, recursive doubling 3 α + 3 S/B: equal at S = 11 α B / 1.25
    assert abs(got - want) <= 1e-6 * want, f"8 ranks at 50 GB/s with α = 5 µs: expected 2.2 MB, got {got:.6g} B"


test_q2_eight_ranks(ring_beats_recursive_doubling_bytes)


# %%
# HIDDEN
def test_q2_other_rings(ring_beats_recursive_doubling_bytes):
    forbidden = {"equal_time_payload_bytes", "latency_bandwidth_crossover_bytes"}
    files = ("course_lib/collectives.py",)
    # S = (2(p − 1) − lg p)·α·B / (lg p − 2(p − 1)/p), worked out by hand
    for case, want in [
        ((4, 50e9, 5e-6), 2e6),  # (6 − 2)/(2 − 1.5) = 8 α B; the ring's own crossover would be 1 MB
        ((16, 450e9, 1e-6), 5.505882352941176e6),  # 26/2.125 α B
        ((64, 25e9, 5e-6), 3.7209302325581396e6),  # 120/4.03125 α B
        ((1024, 50e9, 2e-6), 2.5443788137661703e7),  # 2036/8.001953125 α B
    ]:
        result, called = calling(ring_beats_recursive_doubling_bytes, *case, forbidden=forbidden, files=files)
        got = number(result)
        assert not called and got is not None and abs(got - want) <= 1e-6 * want, (
            f"ring_beats_recursive_doubling_bytes{case}: expected {want:.6g} B, got {result!r:.80}"
        )


test_q2_other_rings(ring_beats_recursive_doubling_bytes)

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
# nccl-tests times a collective on a buffer of `size` bytes and prints algbw $= S/T$ ($T$ the time) and busbw $=$ algbw
# $\times$ a factor that depends on the collective and on the number of ranks $p$. Here is a row of `all_reduce_perf` on
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

    forbidden = {"algbw_bytes_per_s", "busbw_bytes_per_s", "busbw_factor", "algbw_from_busbw"}
    files = ("course_lib/collectives.py",)
    result, called = calling(
        busbw_bytes_per_s, "all_reduce", 8, 1073741824, 5741.2e-6, forbidden=forbidden, files=files
    )
    assert not called, f"compute busbw yourself instead of calling {', '.join(sorted(called))}"
    got = number(result)
    assert got is not None, f"return bytes per second as a number, got {result!r:.80}"
    assert abs(got - 327.29e9) <= 1e-4 * 327.29e9, f"the row above: expected 327.29 GB/s, got {got / 1e9:.6g} GB/s"
    result, called = calling(busbw_bytes_per_s, "all_gather", 8, 1e9, 10e-3, forbidden=forbidden, files=files)
    got = number(result)
    assert not called and got is not None and abs(got - 87.5e9) <= 1e-6 * 87.5e9, (
        f"an all-gather of 1 GB on 8 ranks in 10 ms: algbw 100 GB/s, busbw 87.5 GB/s (its own factor, not the "
        f"all-reduce's), got {result!r:.80}"
    )


test_q3_the_row(busbw_bytes_per_s)


# %%
# HIDDEN
def test_q3_other_collectives(busbw_bytes_per_s):
    forbidden = {"algbw_bytes_per_s", "busbw_bytes_per_s", "busbw_factor", "algbw_from_busbw"}
    files = ("course_lib/collectives.py",)
    cases = [  # S/t times nccl-tests' factor: 2(n − 1)/n all-reduce, (n − 1)/n reduce-scatter and all-gather, 1
        (("all_gather", 16, 1e9, 2.5e-3), 375e9),
        (("reduce_scatter", 4, 256e6, 1e-3), 192e9),
        (("broadcast", 8, 1e9, 4e-3), 250e9),
        (("all_reduce", 2, 64e6, 1e-3), 64e9),
        (("all_reduce", 64, 4e9, 50e-3), 157.5e9),
    ]
    for case, want in cases:
        result, called = calling(busbw_bytes_per_s, *case, forbidden=forbidden, files=files)
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
# A datasheet's bandwidth is not yet the $B$ of the α–β model, the bandwidth over which one rank sends in one
# direction. Each `hardware.Link` records its figure, `bandwidth_bytes_per_s` (in bytes per second, whatever unit
# the datasheet used), and what that figure means: its `direction` (`"one-way"`, or `"two-way"`: both directions
# added), its `scope` (`"per GPU"`, or `"per node"`: the node's whole network, shared by its GPUs) and its `basis`
# (`"nominal"`, a datasheet's, or `"measured"`). Print `hardware.NVLINK4` and `hardware.INFINIBAND_NDR_8X` to see.
#
# Write `ring_allreduce_over_link_s(ranks, payload_bytes, link, devices_per_node, latency_s)`: the time in seconds
# of a ring all-reduce of `payload_bytes` over `ranks` GPUs, each sending over its own share of `link`, in nodes of
# `devices_per_node` GPUs (a per-node figure is shared by all of them, whether or not they are in the ring), with
# $\alpha$ = `latency_s`. `link` is any link of `hardware` whose figure is per GPU or per node (not TPU ICI's per-link
# ones). Work out $B$ from the link's fields yourself, without calling `Link.one_way_bytes_per_s_per_device` or a
# `Cluster`'s bandwidth properties, then time the ring with course_lib's reference `collectives.ring_allreduce_time`
# (so that a slip in question 1 does not carry over here). Check it on four all-reduces of 2 GB of gradients:
#
# 1. over the 8 H100 GPUs of one DGX H100 node, on `hardware.NVLINK4`, whose datasheet figure is 900 GB/s per GPU,
#    counted in both directions; $\alpha$ = 1 µs;
# 2. over 16 GPUs, one in each of 16 DGX H100 nodes, the ring running through `hardware.INFINIBAND_NDR_8X`: each of
#    a node's 8 GPUs has its own 400 Gb/s adapter (a one-way figure, in bits per second), and the preset records
#    the node's eight together; $\alpha$ = 5 µs;
# 3. over 4 H100 GPUs of one node, on `hardware.NVLINK4_MEASURED`, a measured one-way bus bandwidth; $\alpha$ = 1 µs;
# 4. over 8 GPUs, one in each of 8 nodes of 4 GPUs, on an InfiniBand HDR network of 4 × 200 Gb/s per node (the
#    `hardware.INFINIBAND_HDR_8X` preset with its figure halved); $\alpha$ = 5 µs.
#
# The hidden tests use other links of `hardware` (other NVLink generations, other networks) and other rings.

# %% [raw]
# # BEGIN SOLUTION


# %%
def ring_allreduce_over_link_s(ranks, payload_bytes, link, devices_per_node, latency_s):
    """Seconds for a ring all-reduce of ``payload_bytes`` over ``ranks`` GPUs, each with its share of ``link``."""
    # BEGIN SOLUTION
    bandwidth = link.bandwidth_bytes_per_s  # already bytes per second, whatever unit the datasheet used
    if link.direction == "two-way":
        bandwidth /= 2  # in B each rank sends in one direction
    if link.scope == "per node":
        bandwidth /= devices_per_node  # the node's network is shared by all its GPUs
    return collectives.ring_allreduce_time(ranks, payload_bytes, bandwidth, latency_s)
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS


# %%
def test_q4_dgx_h100(ring_allreduce_over_link_s):
    import dataclasses

    from course_lib import hardware

    assert callable(ring_allreduce_over_link_s), "define the function ring_allreduce_over_link_s"

    forbidden = {
        "one_way_bytes_per_s_per_device",
        "intra_bandwidth_bytes_per_s",
        "inter_bandwidth_bytes_per_s",
        "nccl_intra_bandwidth_bytes_per_s",
    }
    files = ("course_lib/hardware.py",)

    # The ring's time for 2 GB at B = gb_per_s GB/s: 2(p − 1)·α + 2(p − 1)/p · S/B.
    def ring(ranks, gb_per_s, latency_s):
        return 2 * (ranks - 1) * latency_s + 2 * (ranks - 1) / ranks * 2e9 / (gb_per_s * 1e9)

    hdr_4x = dataclasses.replace(
        hardware.INFINIBAND_HDR_8X, name="InfiniBand HDR, 4 × 200 Gb/s per node", bandwidth_bytes_per_s=100e9
    )
    cases = [  # (the ring, its arguments, the expected time, {the B of a slip in GB/s: what the slip is})
        (
            "8 GPUs of a DGX H100 on NVLINK4",
            (8, 2e9, hardware.NVLINK4, 8, 1e-6),
            7.791777777777778e-3,  # 14·1 µs + 1.75 · 2 GB / 450 GB/s (half the two-way 900 GB/s)
            {
                900: "that is the time at 900 GB/s, NVLINK4's figure with both directions added (direction "
                "'two-way'); in B each rank sends in one direction",
                56.25: "that is 450 GB/s divided by 8: NVLINK4's figure is one GPU's (scope 'per GPU'), not shared "
                "by the node's GPUs, and it is already in bytes per second",
                112.5: "that is 900 GB/s divided by 8: NVLINK4's figure is one GPU's (scope 'per GPU') and counts "
                "both directions (direction 'two-way')",
            },
        ),
        (
            "16 GPUs, one per DGX H100 node, on INFINIBAND_NDR_8X",
            (16, 2e9, hardware.INFINIBAND_NDR_8X, 8, 5e-6),
            0.07515,  # 30·5 µs + 1.875 · 2 GB / 50 GB/s (the node's 8 × 400 Gb/s = 400 GB/s shared by 8 GPUs)
            {
                400: "that is the time at 400 GB/s, INFINIBAND_NDR_8X's whole node (scope 'per node', 8 × 400 Gb/s) "
                "given to one GPU; each GPU has its own share of the node's adapters",
                6.25: "that is 50 GB/s divided by 8 again: bandwidth_bytes_per_s is already in bytes per second "
                "(8 × 400 Gb/s = 400 GB/s for the node)",
                25: "that is 50 GB/s halved: INFINIBAND_NDR_8X's figure is one-way already (direction 'one-way')",
            },
        ),
        (
            "4 GPUs of a DGX H100 on NVLINK4_MEASURED",
            (4, 2e9, hardware.NVLINK4_MEASURED, 8, 1e-6),
            8.114108108108108e-3,  # 6·1 µs + 1.5 · 2 GB / 370 GB/s (a measured one-way figure, as is)
            {
                185: "that is 370 GB/s halved: NVLINK4_MEASURED's figure is one-way (direction 'one-way'); halve a "
                "two-way figure, whatever the link's family",
            },
        ),
        (
            "8 GPUs, one per node of 4 GPUs, on 4 × 200 Gb/s of InfiniBand HDR per node",
            (8, 2e9, hdr_4x, 4, 5e-6),
            0.14007,  # 14·5 µs + 1.75 · 2 GB / 25 GB/s (the node's 100 GB/s shared by its 4 GPUs)
            {
                12.5: "that is 100 GB/s divided by 8: a per-node figure is shared by the node's devices_per_node GPUs, "
                "here 4",
            },
        ),
    ]
    for name, args, want, slips in cases:
        result, called = calling(ring_allreduce_over_link_s, *args, forbidden=forbidden, files=files)
        assert not called, f"work out B from the link's fields instead of calling {', '.join(sorted(called))}"
        got = number(result)
        assert got is not None, f"{name}: return the time in seconds as a float, got {result!r:.80}"
        for gb_per_s, hint in slips.items():
            slip = ring(args[0], gb_per_s, args[4])
            assert abs(got - slip) > 1e-3 * slip, f"{name}: {hint}"
        assert abs(got - want) <= 1e-3 * want, (
            f"{name}: expected {want:.4g} s, got {got:.4g} s (one-way or two-way? one GPU or the node?)"
        )


test_q4_dgx_h100(ring_allreduce_over_link_s)


# %%
# HIDDEN
def test_q4_other_links(ring_allreduce_over_link_s):
    import dataclasses

    from course_lib import hardware

    forbidden = {
        "one_way_bytes_per_s_per_device",
        "intra_bandwidth_bytes_per_s",
        "inter_bandwidth_bytes_per_s",
        "nccl_intra_bandwidth_bytes_per_s",
    }
    files = ("course_lib/hardware.py",)
    # A node of 4 GPUs with 4 NDR adapters: its figure shared by 4, not by a constant 8 (which is also 8 bits a byte)
    ndr_4x = dataclasses.replace(
        hardware.INFINIBAND_NDR_8X, name="InfiniBand NDR, 4 × 400 Gb/s per node", bandwidth_bytes_per_s=200e9
    )
    cases = [  # (ranks, payload, link, devices per node, α) and 2(p − 1)·α + 2(p − 1)/p · S/B, worked out by hand
        ((8, 1e9, hardware.NVLINK3, 8, 1e-6), 5.847333333333333e-3),  # two-way per GPU: B = 600/2 = 300 GB/s
        ((4, 1e9, hardware.NVLINK5, 8, 1e-6), 1.6726666666666667e-3),  # 6 µs + 1.5 GB / (1800/2 = 900 GB/s)
        # measured one-way busbw: 370 GB/s as is (not halved because it is NVLink, not shared because p = 8)
        ((8, 1e9, hardware.NVLINK4_MEASURED, 8, 1e-6), 4.743729729729730e-3),
        ((64, 1e9, hardware.INFINIBAND_HDR_8X, 8, 5e-6), 0.07938),  # 8 × 200 Gb/s = 200 GB/s per node, 25 per GPU
        ((4, 256e6, hardware.EFA_P5, 8, 5e-6), 7.71e-3),  # 3,200 Gb/s = 400 GB/s per node, 50 per GPU
        ((16, 1e9, hardware.EFA_P4DE, 8, 5e-6), 0.30015),  # 400 Gb/s = 50 GB/s per node, 6.25 per GPU
        ((8, 1e9, hardware.TCPX_A3_HIGH, 8, 5e-6), 0.14007),  # 4 × 200 Gb/s = 100 GB/s per node, 12.5 per GPU
        ((8, 1e9, ndr_4x, 4, 5e-6), 0.03507),  # 200 GB/s per node over 4 GPUs: 50 GB/s; 70 µs + 1.75 GB / 50 GB/s
    ]
    for case, want in cases:
        ranks, payload_bytes, link, devices_per_node, latency_s = case
        call = f"ring_allreduce_over_link_s({ranks}, {payload_bytes:g}, {link.name}, {devices_per_node}, {latency_s:g})"
        result, called = calling(ring_allreduce_over_link_s, *case, forbidden=forbidden, files=files)
        assert not called, f"{call} called {', '.join(sorted(called))}"
        got = number(result)
        assert got is not None and abs(got - want) <= 1e-6 * want, f"{call}: expected {want:.6g} s, got {result!r:.80}"


test_q4_other_links(ring_allreduce_over_link_s)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [markdown]
# ## Before you submit
#
# Restart the kernel and run all cells: the last cell reruns every public test. Then submit this notebook
# (`01_ring_allreduce.ipynb`) as your instructor asks.
