"""course_lib.simulate: outputs against numpy, counts against the α–β model, the single-port rule, schedules."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from course_lib.collectives import ALGORITHMS as ALL_ALGORITHMS
from course_lib.collectives import collective_cost
from course_lib.simulate import NOT_SIMULATED, Simulation, Transfer, reference, simulate

# Written out here rather than imported, so a change to the model's rule shows up as a failing test.
POWER_OF_TWO_ONLY = {"recursive_doubling", "recursive_halving", "rabenseifner"}
# Every algorithm the simulation runs: all but the pipelined double binary tree, whose cost is modelled, not simulated.
ALGORITHMS = {op: tuple(a for a in algorithms if a not in NOT_SIMULATED) for op, algorithms in ALL_ALGORITHMS.items()}
ROOTED_OPS = {"broadcast", "reduce"}


def ranks_for(algorithm):
    return (1, 2, 4, 8, 16) if algorithm in POWER_OF_TWO_ONLY else tuple(range(1, 10))


def element_counts(op, p):
    """Payload sizes S in elements. 3p and 2p² split into equal chunks; 3p + 1 and 1 do not (1 < p leaves empty
    chunks). all_gather takes one equal chunk per rank, so it only allows multiples of p; every other
    (op, algorithm) allows any count."""
    if op == "all_gather":
        return (p, 3 * p)
    return tuple(dict.fromkeys((1, 3 * p + 1, 3 * p, 2 * p * p)))


# One test item per (op, algorithm, p); the element counts and roots run inside it (one item per count would
# mean ~3000 items and most of the run time spent in pytest's per-item overhead).
OP_ALGORITHM_RANKS = [
    (op, algorithm, p)
    for op, algorithms in ALGORITHMS.items()
    for algorithm in algorithms
    for p in ranks_for(algorithm)
]


def variants(op, p):
    """(elements, root) pairs to run: every element count, and for broadcast and reduce the roots 0 and p − 1."""
    roots = sorted({0, p - 1}) if op in ROOTED_OPS else (0,)
    return [(elements, root) for elements in element_counts(op, p) for root in roots]


def case_id(op, algorithm, p, elements=None, root=0):
    text = f"{op}-{algorithm}-p{p}"
    if elements is not None:
        text += f"-S{elements}" + (f"-root{root}" if op in ROOTED_OPS else "")
    return text


def random_inputs(op, p, elements, seed):
    """Wide random int64 values, so a chunk summed over the wrong set of ranks cannot match by accident."""
    per_rank = elements // p if op == "all_gather" else elements
    rng = np.random.default_rng(seed)
    return [rng.integers(-(10**12), 10**12, size=per_rank, dtype=np.int64) for _ in range(p)]


def runs(op, algorithm, p, even_only=False):
    """Yield (case name, simulation, inputs, elements, root) for every variant of (op, algorithm, p)."""
    for elements, root in variants(op, p):
        if even_only and elements % p:
            continue
        inputs = random_inputs(op, p, elements, seed=[p, elements, root])
        sim = simulate(op, p, inputs, algorithm, root)
        yield case_id(op, algorithm, p, elements, root), sim, inputs, elements, root


def params(triples):
    """pytest.param for each (op, algorithm, p), named after it."""
    return [pytest.param(*triple, id=case_id(*triple)) for triple in triples]


# --- 1. outputs equal numpy's answer --------------------------------------------------------------------------


@pytest.mark.parametrize("op, algorithm, p", params(OP_ALGORITHM_RANKS))
def test_outputs_equal_reference(op, algorithm, p):
    for name, sim, inputs, _elements, root in runs(op, algorithm, p):
        expected = reference(op, inputs, root=root)
        assert len(sim.outputs) == p, name
        for rank, (out, ref) in enumerate(zip(sim.outputs, expected, strict=True)):
            assert out.dtype == np.int64, name
            assert np.array_equal(out, ref), f"{name}, rank {rank}: {out} != {ref}"


@pytest.mark.parametrize(
    "op, root, expected",
    [
        ("all_reduce", 0, [[111, 222, 333, 444, 555]] * 3),
        ("reduce_scatter", 0, [[111, 222], [333, 444], [555]]),
        ("all_gather", 0, [[1, 2, 3, 4, 5, 10, 20, 30, 40, 50, 100, 200, 300, 400, 500]] * 3),
        ("broadcast", 2, [[100, 200, 300, 400, 500]] * 3),
        ("reduce", 1, [[1, 2, 3, 4, 5], [111, 222, 333, 444, 555], [100, 200, 300, 400, 500]]),
        ("all_to_all", 0, [[1, 2, 10, 20, 100, 200], [3, 4, 30, 40, 300, 400], [5, 50, 500]]),
        ("send_recv", 0, [[100, 200, 300, 400, 500], [1, 2, 3, 4, 5], [10, 20, 30, 40, 50]]),
    ],
)
def test_reference_by_hand(op, root, expected):
    inputs = [np.array([1, 2, 3, 4, 5]), np.array([10, 20, 30, 40, 50]), np.array([100, 200, 300, 400, 500])]
    outputs = reference(op, inputs, root=root)
    assert [out.tolist() for out in outputs] == expected


# --- 2. steps equal the model's phases --------------------------------------------------------------------------


@pytest.mark.parametrize("op, algorithm, p", params(OP_ALGORITHM_RANKS))
def test_step_count_equals_model_phases(op, algorithm, p):
    for name, sim, inputs, elements, _root in runs(op, algorithm, p):
        assert sim.step_count == len(sim.steps), name
        assert sim.step_count == collective_cost(op, p, elements * inputs[0].itemsize, algorithm).phases, name


# --- 3. bytes on the critical path and bytes reduced equal the model's Q and R --------------------------------


@pytest.mark.parametrize("op, algorithm, p", params(OP_ALGORITHM_RANKS))
def test_wire_and_reduced_bytes_equal_model(op, algorithm, p):
    for name, sim, inputs, elements, _root in runs(op, algorithm, p, even_only=True):  # equal chunks and blocks
        itemsize = inputs[0].itemsize
        assert sim.payload_bytes == elements * itemsize, name
        cost = collective_cost(op, p, sim.payload_bytes, algorithm)
        assert sim.critical_path_elements * itemsize == cost.wire_bytes, name
        assert sim.reduced_elements_per_rank * itemsize == cost.reduced_bytes, name


@pytest.mark.parametrize(
    "p, blocks_moved",
    # Σ over steps k of #{i < p : bit k of i set}: p/2 blocks per step for a power of two, fewer otherwise
    # (p = 3 moves 2 blocks where ⌈lg p⌉·p/2 would be 3; p = 9 moves 13 where it would be 18)
    [(2, 1), (3, 2), (4, 4), (5, 5), (6, 7), (7, 9), (8, 12), (9, 13)],
)
def test_bruck_critical_path_counts_the_blocks_with_bit_k_set(p, blocks_moved):
    block = 2 * p  # elements per block, S = 2p² elements
    sim = simulate("all_to_all", p, algorithm="bruck", elements=p * block)
    assert sim.critical_path_elements == blocks_moved * block
    assert collective_cost("all_to_all", p, sim.payload_bytes, "bruck").wire_bytes == blocks_moved * block * 8


# --- 4. the single-port rule, and transfers that describe what they move ----------------------------------------


@pytest.mark.parametrize("op, algorithm, p", params(OP_ALGORITHM_RANKS))
def test_each_rank_sends_and_receives_at_most_one_message_per_step(op, algorithm, p):
    for name, sim, _inputs, _elements, _root in runs(op, algorithm, p):
        for t, step in enumerate(sim.steps):
            senders = [transfer.src for transfer in step]
            receivers = [transfer.dst for transfer in step]
            assert len(step) >= 1, f"{name}: step {t} is empty"
            assert len(set(senders)) == len(senders), f"{name}: step {t}, a rank sends twice: {senders}"
            assert len(set(receivers)) == len(receivers), f"{name}: step {t}, a rank receives twice: {receivers}"
            assert all(
                0 <= transfer.src < p and 0 <= transfer.dst < p and transfer.src != transfer.dst for transfer in step
            ), name


@pytest.mark.parametrize("op, algorithm, p", params(OP_ALGORITHM_RANKS))
def test_transfer_elements_are_the_array_split_chunk_sizes(op, algorithm, p):
    for name, sim, _inputs, elements, _root in runs(op, algorithm, p):
        sizes = [len(chunk) for chunk in np.array_split(np.arange(elements), p)]
        for step in sim.steps:
            for transfer in step:
                chunk_sizes = [sizes[c % p] if op == "all_to_all" else sizes[c] for c in transfer.chunks]
                assert transfer.elements == sum(chunk_sizes), name
                assert not transfer.reduce or op in {"all_reduce", "reduce_scatter", "reduce"}, name


# --- 5–6. ring all-reduce: the literal schedule, and RS + AG ------------------------------------------------------


def test_ring_all_reduce_schedule_for_four_ranks():
    # Reduce-scatter step t: rank r sends chunk (r − 1 − t) mod 4 to r + 1 (NCCL's order: rank r ends with
    # chunk r). All-gather step t: rank r forwards chunk (r − t) mod 4.
    reduce_scatter = [
        [(0, 1, 3), (1, 2, 0), (2, 3, 1), (3, 0, 2)],
        [(0, 1, 2), (1, 2, 3), (2, 3, 0), (3, 0, 1)],
        [(0, 1, 1), (1, 2, 2), (2, 3, 3), (3, 0, 0)],
    ]
    all_gather = [
        [(0, 1, 0), (1, 2, 1), (2, 3, 2), (3, 0, 3)],
        [(0, 1, 3), (1, 2, 0), (2, 3, 1), (3, 0, 2)],
        [(0, 1, 2), (1, 2, 3), (2, 3, 0), (3, 0, 1)],
    ]
    sim = simulate("all_reduce", 4, elements=8)
    schedule = [[(t.src, t.dst, *t.chunks) for t in step] for step in sim.steps]
    assert schedule == reduce_scatter + all_gather
    assert [[t.reduce for t in step] for step in sim.steps] == [[True] * 4] * 3 + [[False] * 4] * 3
    assert {t.elements for step in sim.steps for t in step} == {2}


def test_ring_all_reduce_holdings_for_four_ranks():
    sim = simulate("all_reduce", 4, elements=8)
    nothing = np.zeros((4, 4), dtype=int)
    own = np.eye(4, dtype=int)  # after the reduce-scatter rank r holds chunk r summed over all ranks
    own_and_previous = own + np.roll(own, 1, axis=0)  # rank r also holds chunk r − 1
    for step in (0, 1, 2):
        assert np.array_equal(sim.holdings(step), nothing)
    assert np.array_equal(sim.holdings(3), own)
    assert np.array_equal(sim.holdings(4), own_and_previous)
    assert np.array_equal(sim.holdings(5), own_and_previous + np.roll(own, 2, axis=0))
    assert np.array_equal(sim.holdings(6), np.ones((4, 4), dtype=int))


@pytest.mark.parametrize(
    "op, algorithm, p",
    [
        ("broadcast", "ring", 5),
        ("reduce", "ring", 6),
        ("all_gather", "recursive_doubling", 8),
        ("send_recv", "ring", 3),
    ],
)
def test_holdings_end_complete_where_the_result_lands(op, algorithm, p):
    sim = simulate(op, p, algorithm=algorithm, root=p - 1)
    final = sim.holdings(sim.step_count)
    if op == "reduce":
        # root (relative rank 0) holds every chunk; every rank keeps its own chunk from the reduce-scatter, and
        # relative ranks 2 and 4 also keep the chunk their child sent them in the gather: 6 + 5 + 2 = 13
        assert final[p - 1].all() and np.diag(final).all() and final.sum() == 13
    else:
        assert final.all()
    assert not sim.holdings(0).all()


@pytest.mark.parametrize("p", range(1, 10))
@pytest.mark.parametrize("elements_per_rank", [3, 1])
def test_ring_all_reduce_is_ring_reduce_scatter_then_ring_all_gather(p, elements_per_rank):
    elements = p * elements_per_rank
    all_reduce = simulate("all_reduce", p, elements=elements)
    reduce_scatter = simulate("reduce_scatter", p, elements=elements)
    all_gather = simulate("all_gather", p, elements=elements)
    assert all_reduce.steps == reduce_scatter.steps + all_gather.steps
    assert all_reduce.step_count == 2 * (p - 1)


@pytest.mark.parametrize("p", [1, 2, 4, 8, 16])
def test_rabenseifner_is_recursive_halving_then_recursive_doubling(p):
    all_reduce = simulate("all_reduce", p, algorithm="rabenseifner", elements=3 * p)
    reduce_scatter = simulate("reduce_scatter", p, algorithm="recursive_halving", elements=3 * p)
    all_gather = simulate("all_gather", p, algorithm="recursive_doubling", elements=3 * p)
    assert all_reduce.steps == reduce_scatter.steps + all_gather.steps


def test_all_to_all_schedules_for_small_p():
    # Block index = source·p + destination.
    pairwise = simulate("all_to_all", 3, algorithm="pairwise")
    assert [[(t.src, t.dst, t.chunks) for t in step] for step in pairwise.steps] == [
        [(0, 1, (1,)), (1, 2, (5,)), (2, 0, (6,))],
        [(0, 2, (2,)), (1, 0, (3,)), (2, 1, (7,))],
    ]
    # Bruck, p = 4: slot i of rank r starts with its block for r + i; step k sends the slots with bit k set.
    bruck = simulate("all_to_all", 4, algorithm="bruck")
    assert [[(t.src, t.dst, t.chunks) for t in step] for step in bruck.steps] == [
        [(0, 1, (1, 3)), (1, 2, (6, 4)), (2, 3, (11, 9)), (3, 0, (12, 14))],
        [(0, 2, (2, 14)), (1, 3, (7, 3)), (2, 0, (8, 4)), (3, 1, (13, 9))],
    ]


# --- one rank, default inputs, no side effects --------------------------------------------------------------------


@pytest.mark.parametrize("op, algorithm", [(op, a) for op, algorithms in ALGORITHMS.items() for a in algorithms])
def test_one_rank_moves_nothing(op, algorithm):
    data = np.array([7, -3, 12, 5])
    sim = simulate(op, 1, [data], algorithm=algorithm)
    assert sim.steps == ()
    assert sim.critical_path_elements == 0 and sim.reduced_elements_per_rank == 0
    assert np.array_equal(sim.outputs[0], data)


def test_default_inputs_are_deterministic_int64():
    first, again = simulate("all_reduce", 4), simulate("all_reduce", 4)
    other_seed = simulate("all_reduce", 4, seed=1)
    assert [x.tolist() for x in first.inputs] == [x.tolist() for x in again.inputs]
    assert [x.tolist() for x in first.inputs] != [x.tolist() for x in other_seed.inputs]
    assert first.inputs[0].dtype == np.int64 and first.inputs[0].shape == (12,)  # 3 × ranks
    assert simulate("all_to_all", 4, algorithm="pairwise").inputs[0].shape == (32,)  # 2 × ranks²
    assert simulate("all_gather", 4, elements=20).inputs[0].shape == (5,)  # one chunk of S = 20


def test_inputs_are_not_modified_and_outputs_are_read_only():
    inputs = [np.arange(6) * (r + 1) for r in range(3)]
    copies = [x.copy() for x in inputs]
    sim = simulate("reduce", 3, inputs, root=1)
    assert all(np.array_equal(x, c) for x, c in zip(inputs, copies, strict=True))
    assert np.array_equal(sim.outputs[0], copies[0]) and np.array_equal(sim.outputs[2], copies[2])
    assert sim.outputs[1].tolist() == [0, 6, 12, 18, 24, 30]
    with pytest.raises(ValueError):
        sim.outputs[1][0] = 1
    assert inputs[0].flags.writeable  # the caller's arrays keep their flags


def test_simulation_and_transfer_are_frozen():
    sim = simulate("send_recv", 2, elements=4)
    assert isinstance(sim, Simulation) and isinstance(sim.steps[0][0], Transfer)
    assert sim.steps == ((Transfer(0, 1, (0, 1), 4, False), Transfer(1, 0, (0, 1), 4, False)),)
    with pytest.raises(AttributeError):
        sim.ranks = 3


# --- 7. property: ring all-reduce equals np.sum ---------------------------------------------------------------


@st.composite
def rank_arrays(draw, max_ranks=12, max_elements=40):
    p = draw(st.integers(1, max_ranks))
    elements = draw(st.integers(1, max_elements))
    return draw(hnp.arrays(np.int64, (p, elements)))  # full int64 range: sums may wrap, identically in both


@given(rank_arrays())
def test_ring_all_reduce_equals_numpy_sum(data):
    inputs = list(data)
    expected = np.sum(data, axis=0)
    sim = simulate("all_reduce", len(inputs), inputs)
    for out in sim.outputs:
        assert np.array_equal(out, expected)


@given(st.sampled_from([(op, a) for op, algorithms in ALGORITHMS.items() for a in algorithms]), st.data())
def test_any_collective_matches_reference_and_model_steps(op_algorithm, data):
    op, algorithm = op_algorithm
    p = 2 ** data.draw(st.integers(0, 4)) if algorithm in POWER_OF_TWO_ONLY else data.draw(st.integers(1, 10))
    root = data.draw(st.integers(0, p - 1))
    per_rank = data.draw(st.integers(1, 30))
    elements = p * per_rank if op == "all_gather" else per_rank
    inputs = random_inputs(op, p, elements, seed=data.draw(st.integers(0, 2**32 - 1)))
    sim = simulate(op, p, inputs, algorithm=algorithm, root=root)
    assert all(np.array_equal(a, b) for a, b in zip(sim.outputs, reference(op, inputs, root=root), strict=True))
    assert sim.step_count == collective_cost(op, p, elements * 8, algorithm).phases


# --- 8. bad input raises ValueError naming the parameter ------------------------------------------------------

TWO = [np.arange(4), np.arange(4)]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(op="allreduce", ranks=4), r"^op must be one of"),
        (dict(op="all_gather", ranks=4, algorithm="bruck"), r"^algorithm must be one of"),
        (dict(op="all_reduce", ranks=6, algorithm="recursive_doubling"), r"^ranks must be a power of two"),
        (dict(op="reduce_scatter", ranks=3, algorithm="recursive_halving"), r"^ranks must be a power of two"),
        (dict(op="reduce", ranks=12, algorithm="rabenseifner"), r"^ranks must be a power of two"),
        (dict(op="all_reduce", ranks=0), r"^ranks must be an integer ≥ 1"),
        (dict(op="all_reduce", ranks=2.5), r"^ranks must be an integer ≥ 1"),
        (dict(op="all_reduce", ranks=3, inputs=TWO), r"^inputs must hold one array per rank"),
        (dict(op="all_reduce", ranks=2, inputs=[np.arange(4), np.arange(5)]), r"^inputs must share one shape"),
        (dict(op="all_reduce", ranks=2, inputs=[np.arange(4), np.arange(4.0)]), r"^inputs must share one shape"),
        (dict(op="all_reduce", ranks=2, inputs=[np.ones((2, 2)), np.ones((2, 2))]), r"^inputs\[0\] must be"),
        (dict(op="all_reduce", ranks=2, inputs=[[], []]), r"^inputs\[0\] must be a non-empty"),
        (dict(op="all_reduce", ranks=2, inputs=[["a"], ["b"]]), r"^inputs\[0\] must hold numbers"),
        (dict(op="all_reduce", ranks=2, inputs=5), r"^inputs must be a sequence"),
        (dict(op="broadcast", ranks=4, root=4), r"^root must be"),
        (dict(op="reduce", ranks=4, root=-1), r"^root must be"),
        (dict(op="all_reduce", ranks=4, elements=0), r"^elements must be"),
        (dict(op="all_gather", ranks=4, elements=10), r"^elements must be a multiple of ranks"),
        (dict(op="all_reduce", ranks=2, inputs=TWO, elements=5), r"^elements must match"),
        (dict(op="all_reduce", ranks=2, seed=-1), r"^seed must be"),
    ],
)
def test_bad_arguments_raise_value_error_naming_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        simulate(**kwargs)


def test_the_double_binary_tree_is_refused_not_simulated():
    assert NOT_SIMULATED == {"double_binary_tree"}
    with pytest.raises(ValueError, match="algorithm must be one the simulation runs"):
        simulate("all_reduce", 8, algorithm="double_binary_tree")


def test_reference_and_holdings_reject_bad_arguments():
    with pytest.raises(ValueError, match=r"^op must be one of"):
        reference("gather", TWO)
    with pytest.raises(ValueError, match=r"^inputs must share one shape"):
        reference("all_reduce", [np.arange(3), np.arange(4)])
    with pytest.raises(ValueError, match=r"^root must be"):
        reference("broadcast", TWO, root=2)
    sim = simulate("all_reduce", 2, TWO)
    with pytest.raises(ValueError, match=r"^step must be"):
        sim.holdings(3)
    with pytest.raises(ValueError, match=r"^op='all_to_all' has no chunk holdings"):
        simulate("all_to_all", 2, algorithm="bruck").holdings(0)


def test_contributions_count_the_ranks_in_each_partial_sum():
    # Ring all-reduce on 4 ranks: after k reduce-scatter steps the chunk each rank just received sums k + 1 ranks;
    # after the reduce-scatter (3 steps) each rank owns one complete chunk, and at the end every copy sums all 4.
    sim = simulate("all_reduce", 4, elements=8)
    assert np.array_equal(sim.contributions(0), np.ones((4, 4), dtype=int))
    assert sorted(sim.contributions(3).max(axis=1)) == [4, 4, 4, 4]
    assert np.array_equal(sim.contributions(sim.step_count), np.full((4, 4), 4))
    assert np.array_equal(sim.contributions(3) == 4, sim.holdings(3))
    with pytest.raises(ValueError, match="no chunk contributions"):
        simulate("all_to_all", 2, algorithm="bruck").contributions(0)


# --- all-to-all: the transpose of the chunk matrix, and what each rank sends --------------------------------------


@pytest.mark.parametrize("algorithm", ["pairwise", "bruck"])
@pytest.mark.parametrize("p", [2, 3, 5, 8])
def test_all_to_all_is_the_transpose_of_the_chunk_matrix(algorithm, p):
    block = 3
    inputs = [np.arange(p * block) + 1000 * rank for rank in range(p)]
    sim = simulate("all_to_all", p, inputs, algorithm=algorithm)
    chunks = np.stack(inputs).reshape(p, p, block)  # [source, destination, element]
    expected = np.swapaxes(chunks, 0, 1)  # [destination, source, element]
    assert np.array_equal(np.stack(sim.outputs).reshape(p, p, block), expected)


@pytest.mark.parametrize("p", [2, 3, 5, 8])
def test_pairwise_all_to_all_steps_and_each_rank_sends_what_the_model_charges(p):
    # p − 1 steps; every rank sends one block of S/p to a different peer each step, (p − 1)/p·S in all: Q of the model.
    block = 4
    sim = simulate("all_to_all", p, algorithm="pairwise", elements=p * block)
    cost = collective_cost("all_to_all", p, sim.payload_bytes, "pairwise")
    assert sim.step_count == cost.phases == p - 1
    itemsize = sim.inputs[0].itemsize
    for rank in range(p):
        sent = [t for step in sim.steps for t in step if t.src == rank]
        assert sorted(t.dst for t in sent) == [peer for peer in range(p) if peer != rank]
        assert sum(t.elements for t in sent) * itemsize == cost.wire_bytes == (p - 1) / p * sim.payload_bytes
