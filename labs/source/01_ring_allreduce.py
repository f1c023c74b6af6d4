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
# Every data-parallel step ends with an all-reduce of the gradients, and its cost follows the α–β model of
# lesson 02: a latency $\alpha$ for every step of the algorithm, plus the bytes on the critical path over the
# one-way bandwidth $B$ of each rank's link. In this lab you first move the sliders to see how the ranks, the
# payload, the bandwidth and the startup latency set the time; then you derive the same numbers yourself.
#
# **What you need:** [lesson 02 · Move the data](../notebooks/02_nccl.ipynb), in particular the ring
# all-reduce step by step, the α–β model, algbw and busbw, and what a bandwidth figure means.
#
# **How it is graded.** Write your answers where you see `...`. The cell `grader.check("q1")` after each question
# runs its public tests and tells you at once whether they pass. The grader also runs hidden tests with other
# inputs, chosen so that the usual slips (an off-by-one in $p-1$, a two-way bandwidth, bits for bytes) fail them,
# so make your answer right for every input, not only for the public example. All quantities are in SI base units:
# bytes, seconds, bytes per second.

# %%
from course_lib import collectives, hardware, units

# %% [markdown]
# ## Explore
#
# The lab computes everything with `course_lib.collectives`. On the left, the time of an all-reduce against its
# payload for every algorithm that applies to the chosen number of ranks, with the current setting marked; on the
# right, the chunks of a small ring moving step by step. Above the figure: the time split into its latency and
# bandwidth terms, the algbw and busbw that nccl-tests would report, and the crossover payload where the two terms
# are equal. Things to try:
#
# - Double the ranks at a large payload: the ring's time hardly changes (its bandwidth term tends to $2S/B$). Do
#   the same at a tiny payload: the time nearly doubles (the latency term grows with $p$).
# - Predict where the crossover moves when you double $\alpha$, or $B$, or $p$; then check it.
# - Compare algbw and busbw as the ranks grow: which one stays near the link bandwidth?

# %% tags=["nbval-ignore-output", "otter_ignore"]
# nbval-ignore-output: live widget; its output cannot be compared
from course_lib.widgets import ring_allreduce_lab

ring_allreduce_lab()

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
    import math
    import numbers

    from course_lib import collectives
    assert callable(ring_allreduce_time), "define the function ring_allreduce_time"
    called = set(ring_allreduce_time.__code__.co_names) & {"ring_allreduce_time", "collective_time",
                                                             "collective_cost"}
    assert not called, f"build the time from the α–β model instead of calling {', '.join(sorted(called))}"
    got = ring_allreduce_time(4, 100e6, 50e9, 5e-6)
    want = collectives.ring_allreduce_time(4, 100e6, 50e9, 5e-6)
    assert isinstance(got, numbers.Real), f"return the time in seconds as a number, got {got!r}"
    assert math.isclose(got, want, rel_tol=1e-6), \
        f"4 ranks, 100 MB at 50 GB/s, α = 5 µs: expected {want:.6g} s, got {got:.6g} s"


test_q1_card_example(ring_allreduce_time)

# %%
# HIDDEN
def test_q1_other_rings(ring_allreduce_time):
    import math
    import numbers

    from course_lib import collectives
    cases = [
        (2, 1e9, 100e9, 5e-6),   # the smallest ring: 2(p − 1) = 2 steps, not 2p = 4
        (64, 1e9, 25e9, 5e-6),   # many ranks: bandwidth term 2·63/64·S/B, not 2S/B or 2·63·S/B
        (8, 1.0, 100e9, 10e-6),  # latency-bound: 14 α
        (8, 1e9, 100e9, 0.0),    # bandwidth-bound: 2·7/8·S/B, with B one-way (not halved, not doubled)
        (1, 1e9, 100e9, 5e-6),   # one rank: nothing moves
    ]
    for case in cases:
        want = collectives.ring_allreduce_time(*case)
        got = ring_allreduce_time(*case)
        assert isinstance(got, numbers.Real) and math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-12), \
            f"ring_allreduce_time{case}: expected {want:.6g} s, got {got!r}"


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
    import math
    import numbers
    assert callable(crossover_payload_bytes), "define the function crossover_payload_bytes"
    assert "latency_bandwidth_crossover_bytes" not in crossover_payload_bytes.__code__.co_names, \
        "derive S* from the two terms instead of calling collectives.latency_bandwidth_crossover_bytes"
    got = crossover_payload_bytes(8, 50e9, 5e-6)
    assert isinstance(got, numbers.Real), f"return the payload in bytes as a number, got {got!r}"
    assert math.isclose(got, 2e6, rel_tol=1e-6), f"8 ranks at 50 GB/s with α = 5 µs: expected 2 MB, got {got:.6g} B"


test_q2_eight_ranks(crossover_payload_bytes)

# %%
# HIDDEN
def test_q2_other_rings(crossover_payload_bytes):
    import math
    import numbers

    from course_lib import collectives
    for ranks, bandwidth, latency in [(2, 50e9, 5e-6), (64, 25e9, 5e-6), (16, 450e9, 1e-6), (3, 12.5e9, 20e-6)]:
        want = collectives.latency_bandwidth_crossover_bytes("all_reduce", ranks, bandwidth, latency)
        got = crossover_payload_bytes(ranks, bandwidth, latency)
        assert isinstance(got, numbers.Real) and math.isclose(got, want, rel_tol=1e-6), \
            f"crossover_payload_bytes({ranks}, {bandwidth:g}, {latency:g}): expected {want:.6g} B, got {got!r}"


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
    factors = {"all_reduce": 2 * (ranks - 1) / ranks, "reduce_scatter": (ranks - 1) / ranks,
               "all_gather": (ranks - 1) / ranks, "broadcast": 1.0}
    return size_bytes / time_s * factors[op]
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% [raw]
# # BEGIN TESTS

# %%
def test_q3_the_row(busbw_bytes_per_s):
    import math
    import numbers
    assert callable(busbw_bytes_per_s), "define the function busbw_bytes_per_s"
    called = {name for name in busbw_bytes_per_s.__code__.co_names if name.startswith(("busbw_", "algbw_"))}
    assert not called, f"compute busbw yourself instead of calling {', '.join(sorted(called))}"
    got = busbw_bytes_per_s("all_reduce", 8, 1073741824, 5741.2e-6)
    assert isinstance(got, numbers.Real), f"return bytes per second as a number, got {got!r}"
    assert math.isclose(got, 327.29e9, rel_tol=1e-4), f"the row above: expected 327.29 GB/s, got {got / 1e9:.6g} GB/s"


test_q3_the_row(busbw_bytes_per_s)

# %%
# HIDDEN
def test_q3_other_collectives(busbw_bytes_per_s):
    import math
    import numbers

    from course_lib import collectives
    cases = [("all_gather", 16, 1e9, 2.5e-3), ("reduce_scatter", 4, 256e6, 1e-3), ("broadcast", 8, 1e9, 4e-3),
             ("all_reduce", 2, 64e6, 1e-3), ("all_reduce", 64, 4e9, 50e-3)]
    for op, ranks, size, time in cases:
        want = collectives.busbw_bytes_per_s(op, ranks, size, time)
        got = busbw_bytes_per_s(op, ranks, size, time)
        assert isinstance(got, numbers.Real) and math.isclose(got, want, rel_tol=1e-6), \
            f"busbw_bytes_per_s({op!r}, {ranks}, {size:g}, {time:g}): expected {want:.6g} B/s, got {got!r}"


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
    import numbers
    for name, value in [("nvlink_allreduce_s", nvlink_allreduce_s), ("infiniband_allreduce_s", infiniband_allreduce_s)]:
        assert isinstance(value, numbers.Real) and value > 0, f"{name} must be a time in seconds, got {value!r}"
    assert nvlink_allreduce_s < infiniband_allreduce_s, "NVLink inside a node should be the faster of the two"


test_q4_numbers(nvlink_allreduce_s, infiniband_allreduce_s)

# %%
# HIDDEN
def test_q4_values(nvlink_allreduce_s, infiniband_allreduce_s):
    import math

    from course_lib import collectives
    nvlink = collectives.ring_allreduce_time(8, 2e9, 450e9, 1e-6)  # one-way: half the two-way 900 GB/s
    assert math.isclose(nvlink_allreduce_s, nvlink, rel_tol=1e-3), \
        f"nvlink_allreduce_s: expected {nvlink:.4g} s, got {nvlink_allreduce_s:.4g} s (one-way or two-way?)"
    infiniband = collectives.ring_allreduce_time(16, 2e9, 50e9, 5e-6)  # 400 Gb/s = 50 GB/s
    assert math.isclose(infiniband_allreduce_s, infiniband, rel_tol=1e-3), \
        f"infiniband_allreduce_s: expected {infiniband:.4g} s, got {infiniband_allreduce_s:.4g} s (bits or bytes?)"


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
