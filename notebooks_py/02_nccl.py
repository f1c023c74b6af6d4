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
# # 02 · Move the data: collectives and what they cost
#
# As soon as a model is split across devices, the pieces must exchange data: gradients are summed across replicas,
# partial results of a split matrix multiply are combined, shards of parameters are gathered before use. These
# exchanges are **collectives**, operations that every device of a group calls together.

# %% [markdown]
# ## What you'll learn
#
# - What broadcast, reduce, all-reduce, reduce-scatter, all-gather, all-to-all and send/recv do, by simulating
#   ranks that hold small integer arrays and checking every result against a direct numpy computation.
# - How a ring all-reduce works: a reduce-scatter followed by an all-gather, $2(p-1)$ steps that each move $S/p$
#   bytes per rank.
# - The α–β cost model $T_\text{comm} \approx n\alpha + Q/B_\text{eff}$, and the costs of ring, binomial-tree,
#   recursive-doubling, Rabenseifner and [NCCL](glossary.ipynb#nccl)'s double-binary-tree algorithms side by side.
# - When a collective is latency-bound and when bandwidth-bound, and the payload where it switches.
# - How to read nccl-tests' *algbw* and *busbw*, and what a bandwidth figure means: one-way or two-way, per GPU or
#   per node, nominal or measured.
# - What an all-reduce across nodes costs as NCCL's multi-rail flat ring and as a hierarchical all-reduce
#   ([NVLink](glossary.ipynb#nvlink) inside each node, the network between nodes), and what the hierarchy really saves:
#   latency steps.

# %% [markdown]
# ## Prerequisites
#
# - [01_mac: count the work](01_mac.ipynb): FLOPs, bytes, bandwidth and the
#   roofline, and the `course_lib.units` conventions (SI base units, decimal prefixes: 100 MB at 50 GB/s is 2 ms).
#
# **Time to learn:** about 1.7 hours by the course's rule
# ([how it is counted](00_course_map.ipynb#How-long-each-part-takes)).

# %%
import matplotlib.pyplot as plt
import numpy as np

from course_lib import collectives, hardware, simulate, units, viz
from course_lib.widgets import quiz

# %% [markdown]
# ## Mechanism
#
# A **communicator** is a group of $p$ processes, called *ranks* $0 \dots p-1$, usually one per GPU. Each rank
# holds a buffer, and a collective is called by all ranks together. When it returns, every rank's buffer holds a
# defined result:
#
# | collective | before | after |
# |---|---|---|
# | **broadcast** | the root holds the data | every rank holds the root's data |
# | **reduce** | every rank holds a buffer | the root holds the element-wise sum |
# | **all-reduce** | every rank holds a buffer | every rank holds the sum |
# | **reduce-scatter** | every rank holds a buffer of $p$ chunks | rank $r$ holds chunk $r$ of the sum |
# | **all-gather** | rank $r$ holds chunk $r$ | every rank holds all $p$ chunks |
# | **all-to-all** | rank $i$ holds $p$ blocks, block $j$ meant for rank $j$ | rank $j$ holds block $j$ of every rank |
# | **send/recv** | rank $r$ holds a buffer | rank $r+1$ holds it (point to point; here every rank sends around a ring) |
#
# In training, all-reduce sums gradients across data-parallel replicas and combines the partial outputs of a
# tensor-parallel layer; reduce-scatter and all-gather are the two halves ZeRO uses to shard gradients and
# parameters; all-to-all routes tokens to experts; send/recv passes activations between pipeline stages. Lesson 03
# places each of them.
#
# How the data moves is the *algorithm*, a sequence of **steps**. In one step each rank sends at most one message
# and receives at most one (ranks are *single-ported*); a receiver either overwrites its copy of the data or adds
# the message into it. `course_lib.simulate` runs each collective this way on numpy arrays, recording every
# transfer, and `simulate.reference` computes the expected result directly with numpy. Here are four ranks,
# each with a buffer of four integers; rank $r$'s value for chunk $j$ is $10(r+1) + j$, so every number tells
# where it came from.

# %%
ranks = 4
inputs = [np.arange(ranks) + 10 * (r + 1) for r in range(ranks)]
per_op_inputs = {op: inputs for op in collectives.OPS}
per_op_inputs["all_gather"] = [buffer[r : r + 1] for r, buffer in enumerate(inputs)]  # rank r brings chunk r only
for op in ("broadcast", "reduce", "all_reduce", "reduce_scatter", "all_gather", "all_to_all", "send_recv"):
    algorithm = collectives.ALGORITHMS[op][0]  # "ring" ("pairwise" for all_to_all)
    sim = simulate.simulate(op, ranks, per_op_inputs[op], algorithm=algorithm, root=0)
    expected = simulate.reference(op, per_op_inputs[op], root=0)
    correct = all(np.array_equal(out, ref) for out, ref in zip(sim.outputs, expected, strict=True))
    print(f"{op} ({algorithm}; steps: {sim.step_count}), matches numpy: {correct}")
    for r in range(ranks):
        print(f"  rank {r}: {str(sim.inputs[r]):>13} → {sim.outputs[r]}")

# %% [markdown]
# Read the sums: all-reduce leaves $10+20+30+40 = 100$ (plus $4j$) in chunk $j$ on every rank; reduce leaves it
# only on the root (the other ranks keep their inputs); reduce-scatter leaves chunk $r$ of it on rank $r$. In the
# all-to-all, rank $j$ ends with element $j$ of every rank's buffer: a transpose of the ranks × blocks grid. The
# *Figures* section draws four of them as before/after grids. (Broadcast takes 5 steps, not the $p - 1 = 3$ of
# passing the buffer along: MPICH's long-message broadcast, Thakur et al. 2005, scatters the chunks down a binomial
# tree in $\lceil\lg p\rceil = 2$ steps, then all-gathers them around the ring in $p - 1$, so that each step
# carries a chunk, not the whole buffer.)
#
# ### Ring all-reduce, step by step
#
# The ring all-reduce arranges the ranks in a circle, rank $r$ sending only to rank $r+1$ (mod $p$), and cuts
# the buffer into $p$ chunks. It runs in two phases:
#
# 1. **Reduce-scatter, $p-1$ steps.** In each step every rank passes one chunk to its neighbour, which adds it to
#    its own copy. A chunk travels around the ring collecting one contribution per hop; after $p-1$ hops it holds
#    the sum of all $p$ ranks. At the end, rank $r$ holds the finished chunk $r$.
# 2. **All-gather, $p-1$ steps.** The finished chunks travel around the ring once more, this time overwriting,
#    until every rank holds all of them.
#
# The four-rank ring, every step, as `course_lib.simulate` records it: the shade of a chunk counts the ranks'
# contributions it holds; arrows carry the chunk of their column to the next rank (rank 3's goes round to rank 0);
# outlined copies are the ones just received.

# %%
viz.plot_ring_allreduce_steps(ranks=ranks)
plt.show()
ring = simulate.simulate("all_reduce", ranks, inputs, algorithm="ring")
print(
    f"steps: {ring.step_count} = 2(p − 1); each rank sends {ring.critical_path_elements} elements in all, "
    f"= 2(p − 1)/p × {inputs[0].size} elements"
)

# %% [markdown]
# After step 3 each rank holds one finished chunk (rank $r$ holds chunk $r$); after step 6 every rank holds all
# four. Every step, every link of the ring carries one chunk, $S/p$ of the buffer, so each rank sends
# $2(p-1)/p \cdot S$ in all, just under $2S$ however many ranks there are, while the number of steps grows with $p$.
# Those two facts are the cost model.

# %% [markdown]
# ## The science
#
# ### The α–β model
#
# Sending one message of $S$ bytes between two ranks takes a fixed startup time plus a time per byte,
# $\alpha + S/B$ (Hockney's model, the basis of the analysis of Thakur, Rabenseifner & Gropp 2005). A collective
# that runs in $n$ steps, each of which starts messages, costs (`collectives.comm_time(phases, latency_s,
# payload_bytes, bandwidth_bytes_per_s)`):
# $$T_\text{comm} \approx n\,\alpha + \frac{Q}{B_\text{eff}}$$
#
# | symbol | code name | meaning | unit |
# |---|---|---|---|
# | $n$ | `phases` | latency-bearing phases (steps) of the algorithm | count |
# | $\alpha$ | `latency_s` | startup time of one phase: software overhead, link and switch latency | s |
# | $Q$ | `CollectiveCost.wire_bytes` (the `payload_bytes` argument of `comm_time`) | bytes transferred on the critical path | bytes |
# | $B_\text{eff}$ | `bandwidth_bytes_per_s` | useful bytes/s for the chosen algorithm and topology (one-way, per rank) | bytes/s |
# | $S$ | `payload_bytes` (of `collective_time`) | the buffer size as nccl-tests defines it | bytes |
# | $p$ | `ranks` | ranks in the communicator | count |
#
# **Collective cost is latency plus payload transfer.** The first term counts how many times the algorithm pays
# the startup cost; the second, how long its bytes occupy the slowest link.
#
# *Assumptions.* This is a coarse model. Contention between messages sharing a link, overlap with computation,
# the reduction arithmetic (a third term, $\gamma$ per byte reduced, zero by default in
# `collectives.collective_time`) and protocol switching can all change both terms, so $\alpha$ and
# $B_\text{eff}$ are best fitted to measurements of the system at hand, not read off a datasheet. Published
# measurements and topologies are examples, not interchangeable performance constants.
#
# ### Algorithms for all-reduce
#
# For the ring, the mechanism above gives $n = 2(p-1)$ phases and $Q = 2(p-1)/p \cdot S$
# (`collectives.ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s)`):
# $$T_\text{ring} = 2(p-1)\,\alpha + \frac{2(p-1)}{p}\cdot\frac{S}{B}$$
# Its bandwidth term is optimal: $2(p-1)/p \cdot S$ per rank is the least an all-reduce must send (Patarasuk & Yuan
# 2009). Its latency term, though, grows linearly with $p$. Other algorithms trade the two terms differently
# (`collectives.collective_cost(op, ranks, payload_bytes, algorithm)`; the first four from the MPICH
# implementations of Thakur et al., the last from NCCL; $\lg$ is $\log_2$, recursive doubling and Rabenseifner
# need a power-of-two $p$):
#
# | all-reduce algorithm | phases $n$ | bytes $Q$ | idea |
# |---|---|---|---|
# | ring | $2(p-1)$ | $2\frac{p-1}{p}S$ | reduce-scatter + all-gather around a ring |
# | binomial tree | $2\lceil\lg p\rceil$ | $2\lceil\lg p\rceil S$ | reduce up a tree to rank 0, broadcast back down |
# | recursive doubling | $\lg p$ | $\lg p \cdot S$ | exchange the whole buffer with partners at distance 1, 2, 4, … |
# | Rabenseifner | $2\lg p$ | $2\frac{p-1}{p}S$ | recursive-halving reduce-scatter + recursive-doubling all-gather |
# | double binary tree | $2\lfloor\lg p\rfloor$ | $2S + \lfloor\lg p\rfloor S/k$ | two trees, each reducing then broadcasting half the buffer, pipelined in $k$ chunks |
#
# Which rank sends what at each step of the first four, simulated on 4 ranks holding 4 int64 elements each
# (S = 32 B; red arrows add into the receiver's copy, blue ones overwrite it), with each picture's $n$ and $Q$ in
# its title:

# %%
fig, axes = plt.subplots(2, 2, figsize=(10, 6.2), layout="constrained")
for ax, algorithm in zip(axes.flat, ("ring", "binomial_tree", "recursive_doubling", "rabenseifner"), strict=True):
    viz.plot_collective_steps("all_reduce", algorithm, ranks=ranks, ax=ax)
viz.collective_steps_legend(fig)
plt.show()
for algorithm in ("ring", "binomial_tree", "recursive_doubling", "rabenseifner"):
    cost = collectives.collective_cost("all_reduce", ranks, 32, algorithm)
    print(f"{algorithm:<19} collective_cost for S = 32 B: n = {cost.phases}, Q = {units.format_bytes(cost.wire_bytes)}")

# %% [markdown]
# - **Ring:** every rank sends one chunk to its right neighbour in every step: 3 steps that add (reduce-scatter),
#   3 that copy (all-gather), 6 chunks of 8 B on the critical path.
# - **Binomial tree:** partial sums go up the tree to rank 0, then the sum comes back down. Few ranks work in each
#   step, and every message is the whole 32 B: 4 × 32 B = 128 B.
# - **Recursive doubling:** partners at distance 1, then 2, swap whole buffers and add: 2 steps, but 2 × 32 B.
# - **Rabenseifner:** the same partners, but each sends only the half (then the quarter) of the buffer the other
#   will own: recursive halving (red) leaves rank r with chunk r summed, recursive doubling (blue) gathers the
#   chunks back, 16 + 8 + 8 + 16 = 48 B: the ring's bytes in $2\lg p$ steps. It needs partners at growing
#   distances, which a real topology may not offer at full bandwidth.
#
# NCCL's tree all-reduce (since NCCL 2.4) is the table's last row, a **double binary tree** (Sanders, Speck & Träff
# 2009): two binary trees over the same ranks, each rank an inner node in one and a leaf in the other. Each tree
# reduces half of the buffer up to its root and broadcasts it back down, streamed in $k$ chunks so that every level
# works at once: α is paid once per level each way, $2\lfloor\lg p\rfloor$. The busiest rank sends $S/2$ up and
# $S/2$ to each of two children in the tree where it is inner, and $S/2$ up in the other, $2S$ in all; the first
# chunk's trip adds $2\lfloor\lg p\rfloor$ chunks of $S/(2k)$, with $k$ = `collectives.DOUBLE_BINARY_TREE_CHUNKS`
# = 64, an assumption (NCCL cuts fixed-size chunks, so its $k$ grows with $S$). This cost is derived, not drawn:
# `course_lib.simulate` runs unpipelined steps only.
#
# ### Latency-bound or bandwidth-bound: the crossover
#
# The two terms are equal at the payload $S^*$ (`collectives.latency_bandwidth_crossover_bytes`). For the ring,
# $2(p-1)\alpha = 2\frac{p-1}{p}\frac{S^*}{B}$ gives
# $$S^*_\text{ring} = p\,\alpha\,B$$
# Below $S^*$ the collective is latency-bound: halving the payload barely changes its time, and fewer phases win.
# Above it, bandwidth-bound: time grows linearly with the payload, and the smallest $Q$ wins.
#
# ### algbw and busbw: how nccl-tests reports bandwidth
#
# NVIDIA's nccl-tests measure a collective's time $T$ for a buffer of $S$ bytes and print two bandwidths
# (`doc/PERFORMANCE.md`):
#
# - **algbw** $= S/T$ (`collectives.algbw_bytes_per_s`); it depends on $p$: a ring all-reduce's algbw falls as
#   ranks are added.
# - **busbw** $=$ algbw $\times$ factor (`collectives.busbw_bytes_per_s`, `collectives.busbw_factor`), with the
#   factor chosen so that busbw is the bandwidth each rank's link actually sustained, comparable with the
#   hardware's one-way link bandwidth independently of $p$. For all-reduce the factor is $2(p-1)/p$, exactly the
#   ring's $Q/S$; for reduce-scatter, all-gather and all-to-all $(p-1)/p$; for broadcast, reduce and send/recv 1.
#
# The factor is derived from the minimum traffic per rank, so it holds for any algorithm that moves data point to
# point. A busbw above the link's wire rate is a sign that the hardware did something else, such as reducing inside
# the switch.
#
# ### What a bandwidth figure means
#
# Datasheets and papers print bandwidths with different meanings. Before a figure can go into $B$, three questions
# (the fields of `hardware.Link`):
#
# - **Direction** (`direction`): *two-way* figures add both directions of a full-duplex link. A ring sends in one
#   direction, so $B$ is the *one-way* figure, half the two-way one.
# - **Scope** (`scope`): *per link*, *per GPU* or *per node*. Network bandwidth is often quoted per node (all its
#   network adapters, its [NICs](glossary.ipynb#nic), together); in an all-reduce every GPU works at the same time,
#   so each gets its share. TPU interconnect (ICI, `hardware.ICI_V4`) is quoted per link and per direction: each
#   chip has six links, two per axis of a 3D torus (Jouppi et al. 2023), and a collective drives as many of them as
#   the topology lets it (`one_way_bytes_per_s_per_device(links_per_device=...)`).
# - **Basis** (`basis`): *nominal* (datasheet, signalling rate) or *measured* (a benchmark such as nccl-tests).
#   Measured is lower (370 GB/s against NVLink 4's 450 GB/s one-way, below): protocol overhead and imperfect
#   overlap of the transfers.
#
# `Link.one_way_bytes_per_s_per_device(devices_per_node)` converts any preset into the one-way, per-GPU figure the
# α–β formulas need.
#
# ### Hierarchical all-reduce
#
# A cluster has two kinds of links: fast NVLink inside a node of $G$ GPUs, a slower network between the
# $N_\text{nodes}$ nodes. A single ring through all $GN_\text{nodes}$ GPUs must cross the network, and each of its
# steps is only as fast as its slowest hop. The hierarchical all-reduce (`collectives.hierarchical_allreduce_time`)
# keeps most traffic on NVLink:
#
# 1. reduce-scatter inside each node over NVLink: GPU $i$ of every node now holds the node's sum of shard $i$,
#    $S/G$ bytes;
# 2. all-reduce of each shard across the nodes, the $G$ GPUs of a node working in parallel, each over its own
#    network adapter (a ring of $N_\text{nodes}$ ranks with payload $S/G$);
# 3. all-gather inside each node over NVLink.
#
# $$T_\text{hier} = T_\text{RS}^\text{NVLink}(G, S) + T_\text{ring}^\text{net}(N_\text{nodes}, S/G) + T_\text{AG}^\text{NVLink}(G, S)$$
#
# This is the communication-budget principle in miniature: keep the heavy exchanges on the fast links, and send
# only what must cross the slow ones.

# %% [markdown]
# The step counts and bytes of the model are the ones the simulation records. For each collective of the
# Mechanism section, the simulated steps and the bytes sent on the critical path, against
# `collectives.collective_cost` for the same payload (int64 elements, 8 bytes each):

# %%
print(f"{'collective':<16} {'algorithm':<10} {'steps':>6} {'model n':>8} {'bytes Q':>8} {'model Q':>8}")
for op in collectives.OPS:
    algorithm = collectives.ALGORITHMS[op][0]
    sim = simulate.simulate(op, ranks, per_op_inputs[op], algorithm=algorithm)
    cost = collectives.collective_cost(op, ranks, sim.payload_bytes, algorithm)
    simulated_q = sim.critical_path_elements * sim.inputs[0].itemsize
    print(
        f"{op:<16} {algorithm:<10} {sim.step_count:>6} {cost.phases:>8} "
        f"{units.format_bytes(simulated_q):>8} {units.format_bytes(cost.wire_bytes):>8}"
    )

# %% [markdown]
# They agree row by row: $n$ and $Q$ are counts of what the algorithm does; only $\alpha$ and $B_\text{eff}$ come
# from the hardware.

# %% [markdown]
# ## Worked example
#
# ### A synthetic collective: four phases and 100 MB
#
# Four latency-bearing phases at 5 µs each, plus 100 MB moved at 50 GB/s (`collectives.comm_time`); then a 4-rank
# ring all-reduce of the same 100 MB at the same α and $B$, split by `collectives.time_terms` into its two terms
# with its regime named:

# %%
synthetic = collectives.comm_time(4, 5 * units.US, 100 * units.MB, 50 * units.GB)
print(f"synthetic: T_comm = 4 × 5 µs + 100 MB / 50 GB/s = {units.format_time(synthetic)}")
print(
    f"  of which the phases {units.format_time(collectives.comm_time(4, 5 * units.US, 0, 50 * units.GB))}, "
    f"the payload {units.format_time(collectives.comm_time(0, 0, 100 * units.MB, 50 * units.GB))}"
)
ring4 = collectives.time_terms("all_reduce", 4, 100 * units.MB, 50 * units.GB, 5 * units.US)
print(
    f"ring all-reduce, 4 ranks, 100 MB: latency term {units.format_time(ring4.latency_s)}, "
    f"bandwidth term {units.format_time(ring4.bandwidth_s)}, total {units.format_time(ring4.total_s)}: "
    f"{ring4.regime}, {units.format_percent(ring4.bandwidth_s / ring4.total_s)} of it the payload"
)

# %% [markdown]
# The synthetic collective takes about 2.02 ms, of which the four phases are only 20 µs: it is bandwidth-bound, and
# so is the ring all-reduce (30 µs of phases, 3 ms on the wire). Beside 1 ms of computation this communication is
# exposed on the critical path unless an overlap schedule hides it; lesson 04 works out when one exists.
#
# ### All-reduce algorithms side by side
#
# Eight ranks, $B$ = 50 GB/s (an [InfiniBand](glossary.ipynb#infiniband) NDR port's share per GPU) and $\alpha$ = 5 µs,
# for payloads from 1 kB to 1 GB. The fastest algorithm of each row is marked.

# %%
bandwidth, latency = 50 * units.GB, 5 * units.US
algorithms = collectives.applicable_algorithms("all_reduce", 8)
payloads = [1 * units.KB, 64 * units.KB, 1 * units.MB, 16 * units.MB, 256 * units.MB, 1 * units.GB]
print(f"{'payload':>8} " + " ".join(f"{name:>19}" for name in algorithms))
for payload in payloads:
    times = collectives.collective_report("all_reduce", 8, payload, bandwidth, latency).times_by_algorithm
    fastest = min(times.values())
    print(
        f"{units.format_bytes(payload):>8} "
        + " ".join(f"{units.format_time(times[a]) + (' *' if times[a] == fastest else '  '):>19}" for a in algorithms)
    )
print("crossover S* where nα = Q/B:")
for name in algorithms:
    crossover = collectives.latency_bandwidth_crossover_bytes("all_reduce", 8, bandwidth, latency, algorithm=name)
    print(f"  {name:<20} {units.format_bytes(crossover)}")

# %% [markdown]
# At 1 kB every algorithm is latency-bound and recursive doubling wins with only $\lg 8 = 3$ phases against the
# ring's 14. From 1 MB up Rabenseifner, which moves the minimum $2(p-1)/p \cdot S$ in fewer phases than the ring,
# wins; by 16 MB recursive doubling and the binomial tree, which move the whole buffer several times, have fallen
# behind even the ring. The ring's crossover is $p\alpha B$ = 8 × 5 µs × 50 GB/s = 2 MB: data-parallel gradients,
# sent in pieces of tens of MB (lessons 03 and 04), are bandwidth-bound, the small all-reduces of inference
# latency-bound. On paper Rabenseifner also beats the double binary tree; NCCL runs the tree because its messages go
# between tree neighbours, which map onto real topologies.
#
# **Ring or double binary tree?** `collectives.equal_time_payload_bytes` finds the payload where the two take equal
# time:

# %%
print(
    f"{'ranks':>6} {'ring phases':>12} {'tree phases':>12} {'ring Q/S':>9} {'tree Q/S':>9} {'tree/ring Q':>12} "
    f"{'tree faster below':>18}"
)
for p in (8, 64, 512):
    ring_cost = collectives.collective_cost("all_reduce", p, 1.0, "ring")
    tree_cost = collectives.collective_cost("all_reduce", p, 1.0, "double_binary_tree")
    crossing = collectives.equal_time_payload_bytes("all_reduce", p, bandwidth, latency, "ring", "double_binary_tree")
    print(
        f"{p:>6} {ring_cost.phases:>12} {tree_cost.phases:>12} {ring_cost.wire_bytes:>9.3f} "
        f"{tree_cost.wire_bytes:>9.3f} {tree_cost.wire_bytes / ring_cost.wire_bytes:>12.3f} "
        f"{units.format_bytes(crossing):>18}"
    )

# %% [markdown]
# On 8 ranks the tree is faster only below 6.74 MB; on 64 ranks up to 228 MB, on 512 ranks up to 1.74 GB: the
# ring's latency term grows with $p$, the tree's with $\lg p$, while the tree's extra bytes shrink from 1.170 times
# the ring's on 8 ranks to 1.072 on 512. So NCCL picks the tree for small and medium all-reduces on many GPUs and the
# ring for large ones.
#
# ### Reading nccl-tests: algbw and busbw
#
# Two published all-reduce measurements of 16 GiB on one 8-GPU node: an AWS
# [p5.48xlarge](glossary.ipynb#cloud-instances) (8× H100, NVLink 4, [out-of-place](glossary.ipynb#out-of-place) time
# 62239 µs; at this size NCCL runs **NVLS**, NVLink SHARP, in which the switches do the reduction) and an 8× A100
# node (NVLink 3, 127997 µs):

# %%
measured = [
    ("8× H100 (NVLink 4, NVLS)", 17179869184, 62239 * units.US, hardware.NVLINK4),
    ("8× A100 (NVLink 3)", 17179869184, 127997 * units.US, hardware.NVLINK3),
]
print(f"busbw factor for all_reduce on 8 ranks: 2(p − 1)/p = {collectives.busbw_factor('all_reduce', 8)}")
for name, size_bytes, time_s, link in measured:
    algbw = collectives.algbw_bytes_per_s(size_bytes, time_s)
    busbw = collectives.busbw_bytes_per_s("all_reduce", 8, size_bytes, time_s)
    wire = link.one_way_bytes_per_s_per_device()
    print(
        f"{name}: S = {units.format_bytes(size_bytes, binary=True)}, t = {units.format_time(time_s)}, "
        f"algbw = {units.format_bandwidth(algbw)}, busbw = {units.format_bandwidth(busbw)} "
        f"= {units.format_percent(busbw / wire)} of the {units.format_bandwidth(wire)} one-way NVLink"
    )

# %% [markdown]
# The A100 node's busbw, 235 GB/s, is 78.3 % of its NVLink's 300 GB/s one-way rate, a typical ratio of measured to
# nominal. The H100 node's 483 GB/s is *above* its NVLink's 450 GB/s: with NVLS the
# [NVSwitches](glossary.ipynb#nvswitch) perform the reduction, so each GPU sends less than the $2(p-1)/p \cdot S$
# the busbw factor assumes (ring-only H100 runs reach about 370 GB/s). Busbw is a normalisation, not a link speed.
#
# ### Bandwidth semantics: from datasheet to $B$
#
# The link presets, each with its published figure, its meaning, and the one-way per-device bandwidth a ring gets
# from it (a ring on one axis of the TPU's torus runs both ways at once, so it drives two ICI links per chip):

# %%
print(
    f"{'link':<44} {'published':>10} {'direction':>9} {'scope':>9} {'basis':>9} {'links':>5} {'one-way per device':>19}"
)
for link, links in (
    (hardware.NVLINK3, 1),
    (hardware.NVLINK4, 1),
    (hardware.NVLINK4_MEASURED, 1),
    (hardware.INFINIBAND_HDR_8X, 1),
    (hardware.INFINIBAND_NDR_8X, 1),
    (hardware.ICI_V4, 1),
    (hardware.ICI_V4, 2),
):
    per_device = link.one_way_bytes_per_s_per_device(devices_per_node=8, links_per_device=links)
    print(
        f"{link.name:<44} {units.format_bandwidth(link.bandwidth_bytes_per_s):>10} {link.direction:>9} "
        f"{link.scope:>9} {link.basis:>9} {links:>5} {units.format_bandwidth(per_device):>19}"
    )

# %% [markdown]
# The same H100 has "900 GB/s" of NVLink (both directions added) and 450 GB/s usable by a ring, of which about
# 370 GB/s is measured by a ring all-reduce. Its node has eight 400 Gb/s InfiniBand ports: 3.2 Tb/s = 400 GB/s
# for the node, 50 GB/s for each GPU, nine times less than NVLink. A factor of 2 (direction), 8 (scope) and about
# 1.2 (basis) separate the largest number one could quote from the one that belongs in the model. The TPU v4's
# 50 GB/s is one direction of *one* of its six ICI links.
#
# The model can now be checked against the 8× H100 measurements. Its $\alpha$ must not come from the rows it is
# checked against, so it is taken from a source: NCCL's own tuning model ([LL protocol](glossary.ipynb#ll-protocol),
# Sources) charges 6.6 µs per call plus 0.6 µs per NVLink hop, and an 8-GPU ring all-reduce has 14 hops; the
# presets round the result to 1 µs per step. The ring formula with that $\alpha$, against the published times of the
# smallest and the largest buffer:

# %%
nccl_model_s = hardware.NCCL_BASE_LATENCY_S + 14 * hardware.NCCL_NVLINK_HOP_LATENCY_S
nvlink_alpha = hardware.NVLINK4.latency_s
print(
    f"NCCL's model, 8-GPU ring all-reduce: {units.format_time(nccl_model_s)} = "
    f"{units.format_time(nccl_model_s / 14)} per step; preset α: {units.format_time(nvlink_alpha)}"
)
for label, size_bytes, measured_s in (("8 B", 8, 12.90 * units.US), ("16 GiB", 17179869184, 62239 * units.US)):
    nominal = collectives.ring_allreduce_time(
        8, size_bytes, hardware.NVLINK4.one_way_bytes_per_s_per_device(), nvlink_alpha
    )
    ring_measured = collectives.ring_allreduce_time(
        8, size_bytes, hardware.NVLINK4_MEASURED.bandwidth_bytes_per_s, nvlink_alpha
    )
    print(
        f"{label:>7}: ring model {units.format_time(nominal)} at 450 GB/s, {units.format_time(ring_measured)} at "
        f"370 GB/s; nccl-tests measured {units.format_time(measured_s)}"
    )

# %% [markdown]
# The 8-byte all-reduce is pure latency: 14 phases × 1 µs = 14 µs in the model (15 µs in NCCL's own), 12.9 µs
# measured. At 16 GiB the ring model with the measured ring bandwidth predicts 81.3 ms, and NVLS did better
# (62.2 ms) by not being a ring at all: a model is only as good as its assumption about the algorithm.

# %% [markdown]
# ### Hierarchical all-reduce across nodes
#
# A 1 GB gradient all-reduce over DGX H100 nodes (8 GPUs each, NVLink 4 at 450 GB/s one-way and $\alpha$ = 1 µs
# inside, InfiniBand NDR at 50 GB/s per GPU and $\alpha$ = 5 µs between nodes), three ways: hierarchical; a flat
# ring over all GPUs through a single **rail** (a rail is the same GPU's network adapter in every node, joined
# through the switches: here one GPU's adapter carries the whole ring); and the flat ring as NCCL runs it, one ring
# per rail (8 rails):

# %%
nvlink, network = hardware.NVLINK4, hardware.INFINIBAND_NDR_8X
per_gpu_nvlink = nvlink.one_way_bytes_per_s_per_device()
per_gpu_network = network.one_way_bytes_per_s_per_device(devices_per_node=8)
links = (per_gpu_nvlink, nvlink.latency_s, per_gpu_network, network.latency_s)
print(f"{'nodes':>5} {'GPUs':>5} {'hierarchical':>13} {'flat, 1 rail':>13} {'flat, 8 rails':>14}")
for nodes in (2, 4, 16, 64):
    hierarchical = collectives.hierarchical_allreduce_time(1 * units.GB, nodes, 8, *links)
    single_rail = collectives.multirail_ring_allreduce_time(1 * units.GB, nodes, 8, *links, rails=1)
    multirail = collectives.multirail_ring_allreduce_time(1 * units.GB, nodes, 8, *links)
    print(
        f"{nodes:>5} {nodes * 8:>5} {units.format_time(hierarchical):>13} {units.format_time(single_rail):>13} "
        f"{units.format_time(multirail):>14}"
    )

# %% [markdown]
# The single-rail flat ring pushes $2(p-1)/p \cdot S \approx 2$ GB through one adapter at 50 GB/s: about 40 ms
# whatever the node count, five times the hierarchical all-reduce. NCCL does not run that ring. It runs a flat ring
# as several rings at once (channels), each leaving a node through a different GPU's adapter: one ring per network
# *rail* (`collectives.multirail_ring_allreduce_time`, the last column). With $N_\text{rails} = G$ rails each ring
# all-reduces $S/G$ over all $GN_\text{nodes}$ GPUs at one adapter's bandwidth $B_\text{node}/G$, so its network term is
# $\frac{2(GN_\text{nodes}-1)}{GN_\text{nodes}}\cdot\frac{S/G}{B_\text{node}/G} \approx 2S/B_\text{node}$, the
# hierarchical all-reduce's. Up to 16 nodes the multi-rail ring is even faster in the table above, because it streams
# NVLink and network traffic at once while the hierarchical phases run one after another. What the hierarchy saves
# is latency: its network ring has $2(N_\text{nodes}-1)$ steps, the flat ring $2(GN_\text{nodes}-1)$, each paying
# the network's α. That shows most on small buffers:

# %%
print(f"{'nodes':>5} {'network steps: hier.':>21} {'flat':>5} {'1 MB: hierarchical':>19} {'flat, 8 rails':>14}")
for nodes in (2, 4, 16, 64):
    hier_steps = collectives.collective_cost("all_reduce", nodes, 1.0).phases
    flat_steps = collectives.collective_cost("all_reduce", nodes * 8, 1.0).phases
    hierarchical = collectives.hierarchical_allreduce_time(1 * units.MB, nodes, 8, *links)
    multirail = collectives.multirail_ring_allreduce_time(1 * units.MB, nodes, 8, *links)
    print(
        f"{nodes:>5} {hier_steps:>21} {flat_steps:>5} {units.format_time(hierarchical):>19} "
        f"{units.format_time(multirail):>14}"
    )

# %% [markdown]
# On 64 nodes the flat ring takes 1022 network steps to the hierarchy's 126, and a 1 MB all-reduce costs it
# 5.11 ms against 653 µs. So the hierarchy earns its keep where latency dominates, and NCCL reaches the same end
# with its tree, whose network steps grow only with $\lg N_\text{nodes}$.
#
# ### What NCCL actually runs
#
# For every call NCCL weighs its algorithms (the flat ring over all ranks, with a channel on every network rail; its
# tree, a chain through the GPUs of each node and a double binary tree between nodes; NVLS, where the NVSwitch
# reduces) and three protocols, from the lowest latency to the highest bandwidth, with a cost model of its own,
# time = latency + bytes / bandwidth, and runs the cheapest. From lesson 04 on, `budget` times every collective of a
# plan with that model (`course_lib.nccl`); the textbook formulas above are how to read it. Lesson 07 (depth) opens
# the model, with NCCL's constants, and holds it to measured logs.

# %% [markdown]
# ## Figures
#
# What four collectives do to four ranks' buffers, before and after (rows are ranks, columns chunks; colour shows
# which rank the data came from, dark cells with Σ are sums over all ranks): all-reduce, its two halves
# reduce-scatter and all-gather, and all-to-all.

# %%
fig, axes = plt.subplots(4, 2, figsize=(8, 15), layout="constrained")
for row, op in zip(axes, ("all_reduce", "reduce_scatter", "all_gather", "all_to_all"), strict=True):
    viz.plot_collective_data(op, ranks=4, axes=row)
plt.show()

# %% [markdown]
# Reduce-scatter then all-gather is an all-reduce, at the same cost (ZeRO §7.1 uses this identity: sharding the
# gradients costs no extra communication). The all-to-all is a transpose: column $j$ of rank $i$ becomes column $i$
# of rank $j$.
#
# Time against payload for the five all-reduce algorithms (8 ranks, 50 GB/s, 5 µs), with the ring's two terms
# dotted and the 100 MB payload of the synthetic example marked:

# %%
fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
viz.plot_collective_time_vs_payload(
    op="all_reduce",
    ranks=8,
    bandwidth_bytes_per_s=50 * units.GB,
    latency_s=5 * units.US,
    mark_payload_bytes=100 * units.MB,
    ax=ax,
)
plt.show()
ring8 = collectives.collective_report("all_reduce", 8, 100 * units.MB, 50 * units.GB, 5 * units.US)
print(
    f"8-rank ring at 100 MB: {units.format_time(ring8.time_s)}, {ring8.phases} phases, "
    f"Q = {units.format_bytes(ring8.wire_bytes)} through each rank's link"
)

# %% [markdown]
# On a log–log plot a latency-bound collective is a flat line and a bandwidth-bound one a line of slope 1. The ring
# is flat up to its crossover (2 MB), then climbs along the bandwidth lower bound; the binomial tree and recursive
# doubling start lower but climb on a higher line (they move the full buffer $\lg p$ times); the double binary tree
# starts as low as Rabenseifner and climbs just above the ring ($2S$ against $1.75S$). At the marked 100 MB the
# 8-rank ring takes 3.57 ms, not the synthetic example's 2.02 ms: 14 phases instead of 4, and
# $2 \cdot 7/8 \cdot 100$ MB = 175 MB through each rank's link.

# %% [markdown]
# ## Misconception
#
# **"A node with 3.2 Tb/s of network can all-reduce a megabyte in microseconds; more devices add more bandwidth,
# so collectives get faster."** Aggregate link rates do not determine the latency of a particular collective.
# Dividing a payload by the aggregate rate ignores the number of phases the algorithm needs, each paying $\alpha$,
# and the fact that each step waits for its slowest hop:

# %%
node_rate = hardware.INFINIBAND_NDR_8X.bandwidth_bytes_per_s  # 8 × 400 Gb/s, the node's aggregate
naive = collectives.comm_time(0, 0, 1 * units.MB, node_rate)
hierarchical = collectives.hierarchical_allreduce_time(
    1 * units.MB, 4, 8, per_gpu_nvlink, nvlink.latency_s, per_gpu_network, network.latency_s
)
print(
    f"1 MB / {units.format_bandwidth(node_rate)} aggregate: {units.format_time(naive)}; "
    f"hierarchical all-reduce over 4 DGX H100 nodes (model): {units.format_time(hierarchical)}, "
    f"{hierarchical / naive:.1f} times the estimate"
)
print(f"{'ranks':>6} {'aggregate bandwidth':>20} {'ring all-reduce of 1 MB':>24}")
for p in (8, 64, 512):
    time_s = collectives.ring_allreduce_time(p, 1 * units.MB, per_gpu_network, network.latency_s)
    print(f"{p:>6} {units.format_bandwidth(p * per_gpu_network):>20} {units.format_time(time_s):>24}")
ring_times = [collectives.ring_allreduce_time(p, 1 * units.MB, per_gpu_network, network.latency_s) for p in (8, 512)]
print(f"from 8 to 512 ranks: aggregate bandwidth × 64, time × {ring_times[1] / ring_times[0]:.1f}")

# %% [markdown]
# The aggregate-rate estimate is 20.7 times too optimistic even for the well-organised hierarchical all-reduce. And
# adding ranks to a ring multiplies the aggregate bandwidth by 64 while the time of a 1 MB all-reduce grows 49.0-fold,
# because the $2(p-1)\alpha$ term grows with every rank. What sets a collective's time is its algorithm's phases and
# its slowest link.

# %% [markdown]
# ## Self-check

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt=(
            "A 4 kB all-reduce runs over 64 ranks with α = 5 µs and B = 50 GB/s (ring crossover pαB = 16 MB). "
            "What dominates its time, and what helps?"
        ),
        options=(
            "The bandwidth term: use the ring, which moves the fewest bytes",
            "The latency term: prefer an algorithm with about lg p phases, such as a tree or recursive doubling",
            "The latency term: use the ring, which sends only 2(p − 1)/p · 4 kB per rank",
        ),
        answer=1,
        explanation=(
            "4 kB is far below the 16 MB crossover, so the ring's 2(p − 1)α = 630 µs dwarfs its bandwidth "
            "term; an algorithm with fewer phases is faster. The ring's few bytes help only the bandwidth term, "
            "and its 2(p − 1) = 126 phases are the problem."
        ),
    )
)

# %% tags=["nbval-ignore-output"]
# nbval-ignore-output: live widget (self-check); its output cannot be compared
quiz.MultipleChoice(
    quiz.Question(
        prompt=(
            "A datasheet gives NVLink 4 as 900 GB/s per GPU (both directions added). Which bandwidth belongs in "
            "the ring all-reduce formula?"
        ),
        options=("900 GB/s", "450 GB/s", "112.5 GB/s"),
        answer=1,
        explanation=(
            "A ring sends in one direction, so B is the one-way figure: 900 / 2 = 450 GB/s per GPU "
            "(about 370 GB/s measured)."
        ),
    )
)

# %% [markdown]
# ## History
#
# - **2005: collectives tuned by message size.** Thakur, Rabenseifner and Gropp described the algorithms of MPICH's
#   collectives and analysed each with the α–β(–γ) model: recursive doubling and binomial trees for short messages,
#   Rabenseifner's reduce-scatter + all-gather and ring algorithms for long ones.
# - **2009: the bandwidth-optimal ring.** Patarasuk and Yuan derived a tight lower bound on the data an all-reduce
#   must communicate and showed that a ring-based algorithm, which needs only tree connectivity, achieves it.
# - **2009: two trees for full bandwidth.** Sanders, Speck and Träff showed that two binary trees, each rank a leaf
#   in one and an inner node in the other, reach nearly full bandwidth in a logarithmic number of steps.
# - **2010s: NCCL and nccl-tests.** NVIDIA's Collective Communications Library brought ring (from NCCL 2.4 in
#   2019 the double binary tree, then in-switch NVLS) collectives to GPUs, within a node and across nodes; its
#   benchmark suite, nccl-tests, introduced the *bus bandwidth*. Horovod (Sergeev & Del Balso 2018) made the ring
#   all-reduce the standard way to average gradients in data-parallel deep learning.

# %% [markdown]
# ## Summary
#
# - Collectives are called by every rank of a group: broadcast, reduce, all-reduce, reduce-scatter, all-gather,
#   all-to-all and send/recv each leave a defined result, checkable against a direct computation.
# - Ring all-reduce = ring reduce-scatter + ring all-gather: $2(p-1)$ steps of $S/p$, bandwidth-optimal.
# - Collective cost is latency plus payload transfer: $T_\text{comm} \approx n\alpha + Q/B_\text{eff}$, with $n$
#   and $Q$ set by the algorithm and $\alpha$, $B_\text{eff}$ by the system (a coarse model).
# - Small messages are latency-bound (fewer phases wins), large ones bandwidth-bound (fewer bytes wins); the ring
#   switches at $S^* = p\alpha B$.
# - NCCL's tree, the pipelined double binary tree ($2\lfloor\lg p\rfloor$ phases, about $2S$ per rank), beats the
#   ring up to large buffers on many ranks (228 MB on 64 ranks at 50 GB/s and 5 µs).
# - nccl-tests' busbw = algbw × $2(p-1)/p$ for all-reduce is comparable with the one-way link rate; above the wire
#   rate it signals in-switch reduction.
# - A bandwidth figure needs its direction, scope and basis before it goes into $B$: NVLink 4 is 900 GB/s two-way,
#   450 one-way, about 370 measured; InfiniBand NDR is 400 GB/s per node, 50 per GPU; TPU ICI is quoted per link.
# - Across nodes NCCL's flat ring runs a channel on every network rail, so its network term is already the
#   hierarchical all-reduce's; the hierarchy saves latency steps. Aggregate bandwidth does not set a collective's
#   time; its phases and slowest link do.

# %% [markdown]
# ## Exercises
#
# Use `course_lib` for every number.
#
# 1. Where is the latency/bandwidth crossover of a ring all-reduce over 8 GPUs on NVLink 4 (450 GB/s one-way,
#    $\alpha$ = 1 µs)? And over 64 GPUs on InfiniBand (50 GB/s, 5 µs)?
# 2. A published nccl-tests all_gather over 16 H100s (two GCP a3-mega nodes) peaks at busbw = 188.5 GB/s for an
#    8 GiB buffer. What were its algbw and its time?
#
# <details>
# <summary>Answers</summary>
#
# 1. `latency_bandwidth_crossover_bytes("all_reduce", 8, 450e9, 1e-6)` = 3.6 MB (= 8 × 1 µs × 450 GB/s);
#    with 64 ranks on InfiniBand, 16 MB. More ranks and a slower α push the crossover up.
# 2. busbw = algbw × factor, so algbw = busbw / `collectives.busbw_factor("all_gather", 16)` = 188.5 GB/s ÷ 15/16
#    = 201 GB/s; time = 8 GiB / algbw ≈ 42.7 ms.
#
# </details>

# %% [markdown]
# ## Sources
#
# - R. Thakur, R. Rabenseifner, W. Gropp. *Optimization of Collective Communication Operations in MPICH.*
#   International Journal of High Performance Computing Applications 19(1):49–66, 2005.
#   [doi:10.1177/1094342005051521](https://doi.org/10.1177/1094342005051521). Cost formulas as in the comment
#   blocks of MPICH `src/mpi/coll/` (repository pmodels/mpich, commit 6a79bf6575c3b5b41cabbd3d59340634d6f9412d).
# - P. Patarasuk, X. Yuan. *Bandwidth Optimal All-reduce Algorithms for Clusters of Workstations.* Journal of
#   Parallel and Distributed Computing 69(2):117–124, 2009.
#   [doi:10.1016/j.jpdc.2008.09.002](https://doi.org/10.1016/j.jpdc.2008.09.002).
# - NVIDIA nccl-tests, `doc/PERFORMANCE.md` (algbw, busbw and their factors) and `src/sendrecv.cu`, repository
#   [NVIDIA/nccl-tests](https://github.com/NVIDIA/nccl-tests), commit a0b82b2260cf5152b9f8c061bbf7eaf0ba096432.
# - NVIDIA NCCL, [NVIDIA/nccl](https://github.com/NVIDIA/nccl), `src/graph/tuning.cc` (NCCL's own latency
#   parameters for the LL protocol, 6.6 µs per call and 0.6 µs per NVLink hop; its tree's latency, 2·log2 levels of
#   hops). Lesson 07 opens the rest of its cost model.
# - P. Sanders, J. Speck, J. L. Träff. *Two-tree algorithms for full bandwidth broadcast, reduction and scan.*
#   Parallel Computing 35(12):581–594, 2009. [doi:10.1016/j.parco.2009.09.001](https://doi.org/10.1016/j.parco.2009.09.001).
# - S. Jeaugey. *Massively Scale Your Deep Learning Training with NCCL 2.4.* NVIDIA Technical Blog, February 2019
#   (the double binary tree in NCCL).
# - Measured nccl-tests outputs quoted above: 8× H100 p5.48xlarge all_reduce, aws-samples/awsome-distributed-training
#   `micro-benchmarks/nccl-tests/aws-batch/README.md`, commit 7217859f67bc693c52ff175ccc6082c41dbd7a1b (MIT-0);
#   8× A100 all_reduce, S. Bekman, *Machine Learning Engineering Open Book*, stas00/ml-engineering
#   `network/README.md`, commit 744d01e18b79512572f64a6bbd8b5f4a725203a7 (CC BY-SA 4.0); 16× H100 a3-mega
#   all_gather, dstackai/dstack `mkdocs/docs/examples/clusters/gcp.md`, commit
#   511c318c8a7672fb2a925041bfc2d7301a26272e (MPL-2.0).
# - J. Austin et al. *How to Scale Your Model*, jax-ml/scaling-book `gpus.md` (commit
#   1a55377affc9ee8f10b549f689ad57e813623a7e): NVLink 4 at 18 × 25 GB/s = 450 GB/s per direction, 8 × 400 Gbps
#   per node, ≈ 370 GB/s measured all-reduce bus bandwidth. <https://jax-ml.github.io/scaling-book/>
# - S. Rajbhandari, J. Rasley, O. Ruwase, Y. He. *ZeRO: Memory Optimizations Toward Training Trillion Parameter
#   Models.* SC'20. [arXiv:1910.02054](https://arxiv.org/abs/1910.02054), §7.1 (all-reduce = reduce-scatter +
#   all-gather, 2Ψ data movement).
# - N. P. Jouppi et al. *TPU v4: An Optically Reconfigurable Supercomputer for Machine Learning with Hardware
#   Support for Embeddings.* ISCA 2023. [arXiv:2304.01433v3](https://arxiv.org/abs/2304.01433v3). 4096 chips in a
#   3D torus of 4 × 4 × 4 cubes joined by optical circuit switches; six ICI links per chip, 400 Gb/s (50 GB/s) each
#   way per link. (The JAX scaling book's `tpus.md` lists 4.5e10 B/s one-way per link for v4p.)
# - A. Sergeev, M. Del Balso. *Horovod: fast and easy distributed deep learning in TensorFlow.* 2018.
#   [arXiv:1802.05799](https://arxiv.org/abs/1802.05799).

# %% [markdown]
# ## What's next
#
# You can now count a step's FLOPs and bytes (lesson 01) and price the collectives that move data between devices.
# [03_parallelism: split the work](03_parallelism.ipynb) splits a model by data, tensor, pipeline and state, and
# shows which collectives each split calls, on which tensors, how often.
