"""Simulate: run each collective step by step on numpy arrays, one array per rank — the check of ``collectives``.

The machine is the one of the α–β model in ``collectives``: p single-ported ranks, so in one step each rank sends
at most one message and receives at most one. A *step* is a set of concurrent point-to-point ``Transfer``s; the
receiver either overwrites its copy of the data or adds the data into it (``reduce``). The simulation records every
transfer, so a lesson can draw which chunk moves on which link at each step, and its counts can be set against
``collective_cost``: ``step_count`` against n, ``critical_path_elements × itemsize`` against Q and
``reduced_elements_per_rank × itemsize`` against R.

Buffers and chunks. ``elements`` is the payload S of ``collective_cost`` counted in array elements, exactly as
nccl-tests defines it, and the buffer of S elements is split into p chunks with ``np.array_split`` (chunk c is
``np.array_split(buffer, p)[c]``, so the first S mod p chunks are one element longer):

- all_reduce, reduce, broadcast: every rank's input is the whole buffer. all_reduce leaves the sum on every rank;
  reduce leaves it on the root, and the other ranks' outputs are their inputs, unchanged; broadcast leaves the
  root's input on every rank (the other ranks' input values are overwritten, never used).
- reduce_scatter: every rank's input is the whole buffer; rank r's output is chunk r of the sum.
- all_gather: rank r's input is chunk r (all inputs the same length, so S must be a multiple of p); every
  rank's output is the whole gathered buffer.
- all_to_all: rank s's input is split into p blocks, block d going to rank d; chunk index ``s·p + d`` names
  that (source, destination) block. Rank d's output is block d of every rank's input, in source order.
- send_recv: every rank sends its whole buffer to rank r + 1 mod p (a ring shift, as nccl-tests' sendrecv).

Wherever a reduce-scatter phase ends, rank r holds chunk r, as in NCCL's ring (``src/device/all_reduce.h``,
``runRing``), so that ring all-reduce is literally ring reduce-scatter followed by ring all-gather. Reductions
are exact for integer dtypes (integer overflow wraps identically in any order); with floats the order of the
additions differs from ``np.sum``'s.

>>> import numpy as np
>>> sim = simulate("all_reduce", 4, elements=8)
>>> sim.step_count, sim.critical_path_elements, sim.reduced_elements_per_rank
(6, 12, 6)
>>> all(np.array_equal(out, ref) for out, ref in zip(sim.outputs, reference("all_reduce", sim.inputs)))
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import _check
from .collectives import OPS, applicable_algorithms, check_algorithm

__all__ = ["Transfer", "Simulation", "simulate", "reference", "NOT_SIMULATED"]

# Algorithms whose cost model assumes pipelining the step-by-step simulation does not run: NCCL's double binary
# tree streams chunks through two trees at once (``collectives.collective_cost``); its cost is not simulated.
NOT_SIMULATED = frozenset({"double_binary_tree"})

# Collectives whose result is a sum over ranks (their holdings are complete when every rank has contributed).
_REDUCING_OPS = ("all_reduce", "reduce_scatter", "reduce")
# Values of the default inputs: two digits, so a sum over a few ranks stays readable in a lesson.
_DEFAULT_VALUE_LIMIT = 100


@dataclass(frozen=True)
class Transfer:
    """One message of a step: ``src`` sends ``elements`` array elements (the chunks ``chunks``) to ``dst``.

    ``chunks`` lists the chunk indices moved, in message order (for all_to_all, block indices source·p + destination);
    ``reduce`` is True when ``dst`` adds the data into its own copy, False when it overwrites its copy.

    >>> simulate("all_reduce", 4, elements=8).steps[0][0]   # first step of the ring: rank 0 sends chunk 3 to 1
    Transfer(src=0, dst=1, chunks=(3,), elements=2, reduce=True)
    """

    src: int
    dst: int
    chunks: tuple[int, ...]
    elements: int
    reduce: bool


@dataclass(frozen=True, eq=False)
class Simulation:
    """The record of one simulated collective: its inputs and outputs (one array per rank) and every step.

    ``steps[t]`` is the tuple of transfers that run concurrently in step t. ``outputs`` are read-only.

    >>> sim = simulate("reduce_scatter", 4, elements=8, algorithm="recursive_halving")
    >>> sim
    Simulation(op='reduce_scatter', algorithm='recursive_halving', ranks=4, root=0)
    >>> sim.step_count, sim.critical_path_elements, sim.reduced_elements_per_rank
    (2, 6, 6)
    """

    op: str
    algorithm: str
    ranks: int
    inputs: tuple[np.ndarray, ...] = field(repr=False)
    outputs: tuple[np.ndarray, ...] = field(repr=False)
    steps: tuple[tuple[Transfer, ...], ...] = field(repr=False)
    root: int = 0

    @property
    def step_count(self) -> int:
        """Number of steps, the n of n·α in ``collective_cost``.

        >>> simulate("all_gather", 8, elements=16).step_count
        7
        """
        return len(self.steps)

    @property
    def critical_path_elements(self) -> int:
        """Σ over steps of the largest message in the step, in elements (Q of ``collective_cost`` ÷ itemsize).

        >>> simulate("broadcast", 4, elements=8, algorithm="binomial_tree").critical_path_elements   # 2 steps × 8
        16
        """
        return sum(max((transfer.elements for transfer in step), default=0) for step in self.steps)

    @property
    def reduced_elements_per_rank(self) -> int:
        """Largest number of elements any one rank adds into its buffer (R of ``collective_cost`` ÷ itemsize).

        >>> simulate("reduce", 4, elements=8, algorithm="binomial_tree").reduced_elements_per_rank   # root: 2 × 8
        16
        """
        reduced = [0] * self.ranks
        for step in self.steps:
            for transfer in step:
                if transfer.reduce:
                    reduced[transfer.dst] += transfer.elements
        return max(reduced)

    @property
    def payload_bytes(self) -> int:
        """The payload S in bytes as nccl-tests defines it (the ``payload_bytes`` of ``collective_cost``).

        For all_gather the whole gathered buffer (ranks × one input), otherwise one rank's input.

        >>> simulate("all_gather", 4, elements=8).payload_bytes   # 8 int64 elements
        64
        """
        one_input = self.inputs[0]
        copies = self.ranks if self.op == "all_gather" else 1
        return copies * one_input.size * one_input.itemsize

    def holdings(self, step) -> np.ndarray:
        """Which chunks each rank holds in final form after the first ``step`` steps: a (ranks, ranks) bool array.

        Entry [r, c] is True when rank r's working copy of chunk c is final: summed over every rank (all_reduce,
        reduce_scatter, reduce), chunk c of the gathered buffer (all_gather), the root's chunk c (broadcast), or
        rank r − 1's chunk c (send_recv). ``step=0`` is before any transfer, ``step=step_count`` the end. It
        is worked out from the recorded transfers alone (which ranks' data each copy contains), not from the
        arrays. Not defined for all_to_all, whose chunks are (source, destination) blocks.

        >>> simulate("all_reduce", 3, elements=6).holdings(2).astype(int)   # after the ring reduce-scatter
        array([[1, 0, 0],
               [0, 1, 0],
               [0, 0, 1]])
        """
        contributors = self._contributors(step, "holdings")
        return np.all(contributors == _final_contributors(self.op, self.ranks, self.root), axis=2)

    def contributions(self, step) -> np.ndarray:
        """How many ranks' data each rank's copy of each chunk holds after the first ``step`` steps.

        A (ranks, ranks) int array: entry [r, c] counts the ranks whose data rank r's copy of chunk c contains (a
        partial sum over that many ranks, for the reducing collectives). Like ``holdings``, it is worked out from
        the recorded transfers alone, and is not defined for all_to_all.

        >>> simulate("all_reduce", 3, elements=6).contributions(1)   # one ring step: each sent chunk now sums two
        array([[1, 2, 1],
               [1, 1, 2],
               [2, 1, 1]])
        """
        return self._contributors(step, "contributions").sum(axis=2)

    def _contributors(self, step, asked: str) -> np.ndarray:
        if self.op == "all_to_all":
            raise ValueError(f"op='all_to_all' has no chunk {asked}: its chunks are (source, destination) blocks")
        step = _check.count("step", step, minimum=0)
        if not isinstance(step, int) or step > self.step_count:
            raise ValueError(f"step must be an integer in 0..{self.step_count} (the step count), got {step!r}")
        contributors = _initial_contributors(self.op, self.ranks)
        for transfers in self.steps[:step]:
            _replay_contributors(contributors, transfers)
        return contributors


# --- holdings: which ranks' data each copy of each chunk contains ---------------------------------------------
# contributors[r, c, s] is True when rank r's copy of chunk c contains rank s's data.


def _initial_contributors(op: str, p: int) -> np.ndarray:
    contributors = np.zeros((p, p, p), dtype=bool)
    ranks = np.arange(p)
    if op == "all_gather":
        contributors[ranks, ranks, ranks] = True  # rank r starts with its own chunk only
    else:
        contributors[ranks, :, ranks] = True  # rank r starts with its whole input
    return contributors


def _final_contributors(op: str, p: int, root: int) -> np.ndarray:
    final = np.zeros((p, p, p), dtype=bool)
    ranks = np.arange(p)
    if op in _REDUCING_OPS:
        final[:] = True
    elif op == "all_gather":
        final[:, ranks, ranks] = True
    elif op == "broadcast":
        final[:, :, root] = True
    else:  # send_recv: rank r ends with rank r − 1's buffer
        final[ranks, :, (ranks - 1) % p] = True
    return final


def _replay_contributors(contributors: np.ndarray, transfers) -> None:
    messages = [contributors[t.src, list(t.chunks)] for t in transfers]  # read all before writing: one step
    for transfer, message in zip(transfers, messages, strict=True):
        chunks = list(transfer.chunks)
        if transfer.reduce:
            contributors[transfer.dst, chunks] |= message
        else:
            contributors[transfer.dst, chunks] = message


# --- schedules: one function per algorithm; each returns a list of steps (tuples of Transfers) ----------------
# ``sizes[c]`` is the number of elements in chunk c. Tree algorithms number ranks relative to the root.


def _lg(p: int) -> int:
    """⌈lg p⌉, the number of steps of a binomial tree over p ranks."""
    return (p - 1).bit_length()


def _transfer(src: int, dst: int, chunks, sizes, reduce: bool = False) -> Transfer:
    chunks = tuple(int(c) for c in chunks)
    return Transfer(int(src), int(dst), chunks, int(sum(sizes[c] for c in chunks)), reduce)


def _ring_reduce_scatter(p, sizes):
    # NCCL runRing (src/device/all_reduce.h), first p − 1 steps: at step t rank r sends chunk (r − 1 − t) mod p to
    # r + 1, which adds it in; after step p − 2 rank r holds chunk r summed over all ranks.
    return [
        tuple(_transfer(r, (r + 1) % p, [(r - 1 - t) % p], sizes, reduce=True) for r in range(p)) for t in range(p - 1)
    ]


def _ring_all_gather(p, sizes):
    # MPICH allgather_intra_ring.c / NCCL runRing, last p − 1 steps: rank r starts with chunk r and at step t
    # forwards chunk (r − t) mod p to r + 1.
    return [tuple(_transfer(r, (r + 1) % p, [(r - t) % p], sizes) for r in range(p)) for t in range(p - 1)]


def _recursive_halving_reduce_scatter(p, sizes):
    # MPICH reduce_scatter_intra_recursive_halving.c: partner r XOR mask for mask = p/2, p/4, ..., 1; each rank
    # sends the half of its current window that holds the partner's chunks (the partner adds it in) and keeps
    # the half that holds its own, so the data halves each step and rank r ends with chunk r.
    steps = []
    mask = p // 2
    while mask:
        step = []
        for r in range(p):
            partner = r ^ mask
            first = partner & ~(mask - 1)  # the mask-aligned block of chunks that contains the partner's chunk
            step.append(_transfer(r, partner, range(first, first + mask), sizes, reduce=True))
        steps.append(tuple(step))
        mask //= 2
    return steps


def _recursive_doubling_all_gather(p, sizes):
    # MPICH allgather_intra_recursive_doubling.c: partner r XOR mask for mask = 1, 2, ..., p/2; each rank sends
    # the mask chunks it holds (the mask-aligned block around chunk r), so the data doubles each step.
    steps = []
    mask = 1
    while mask < p:
        steps.append(
            tuple(_transfer(r, r ^ mask, range(r & ~(mask - 1), (r & ~(mask - 1)) + mask), sizes) for r in range(p))
        )
        mask *= 2
    return steps


def _recursive_doubling_all_reduce(p, sizes):
    # MPICH allreduce_intra_recursive_doubling.c: partner r XOR mask for mask = 1, 2, ..., p/2; both partners
    # exchange the whole buffer and add what they receive.
    steps = []
    mask = 1
    while mask < p:
        steps.append(tuple(_transfer(r, r ^ mask, range(p), sizes, reduce=True) for r in range(p)))
        mask *= 2
    return steps


def _absolute(relative: int, root: int, p: int) -> int:
    return (relative + root) % p


def _binomial_reduce(p, sizes, root):
    # MPICH reduce_intra_binomial.c: at step k, every relative rank whose lowest set bit is k (i = 2^k, 3·2^k, ...)
    # sends its partial sum of the whole buffer to i − 2^k, which adds it in.
    steps = []
    for k in range(_lg(p)):
        mask = 1 << k
        steps.append(
            tuple(
                _transfer(_absolute(i, root, p), _absolute(i - mask, root, p), range(p), sizes, reduce=True)
                for i in range(mask, p, 2 * mask)
            )
        )
    return steps


def _binomial_broadcast(p, sizes, root):
    # MPICH bcast_intra_binomial.c: masks from the largest power of two below p down to 1; at mask m every
    # relative rank i that is a multiple of 2m sends the whole buffer to i + m (if it exists).
    steps = []
    for k in reversed(range(_lg(p))):
        mask = 1 << k
        steps.append(
            tuple(
                _transfer(_absolute(i, root, p), _absolute(i + mask, root, p), range(p), sizes)
                for i in range(0, p - mask, 2 * mask)
            )
        )
    return steps


def _subtree_chunks(first: int, mask: int, root: int, p: int):
    """Chunks owned by relative ranks first .. first + mask − 1 (capped at p); rank r owns chunk r."""
    return [_absolute(i, root, p) for i in range(first, min(first + mask, p))]


def _binomial_scatter(p, sizes, root):
    # MPICH bcast_utils.c (MPII_Scatter_for_bcast): the binomial broadcast pattern, but relative rank i + m
    # receives only the chunks of its subtree, relative ranks i + m .. i + 2m − 1; rank r ends with chunk r.
    steps = []
    for k in reversed(range(_lg(p))):
        mask = 1 << k
        steps.append(
            tuple(
                _transfer(
                    _absolute(i, root, p), _absolute(i + mask, root, p), _subtree_chunks(i + mask, mask, root, p), sizes
                )
                for i in range(0, p - mask, 2 * mask)
            )
        )
    return steps


def _binomial_gather(p, sizes, root):
    # MPICH gather_intra_binomial.c (the gather phase of reduce_intra_reduce_scatter_gather.c): the binomial
    # reduce pattern, but relative rank i sends the chunks it has collected from its subtree, i .. i + 2^k − 1.
    steps = []
    for k in range(_lg(p)):
        mask = 1 << k
        steps.append(
            tuple(
                _transfer(_absolute(i, root, p), _absolute(i - mask, root, p), _subtree_chunks(i, mask, root, p), sizes)
                for i in range(mask, p, 2 * mask)
            )
        )
    return steps


def _pairwise_all_to_all(p, block_sizes):
    # MPICH alltoall_intra_pairwise.c: at step k = 1 .. p − 1 rank r sends its block for rank (r + k) mod p
    # straight to it (and receives from (r − k) mod p). Block index = source·p + destination.
    return [tuple(_transfer(r, (r + k) % p, [r * p + (r + k) % p], block_sizes) for r in range(p)) for k in range(1, p)]


def _bruck_all_to_all(p, block_sizes):
    # MPICH alltoall_intra_brucks.c (Bruck et al. 1997). Phase 1, local: rotate so that rank r's slot i holds its
    # block for rank (r + i) mod p. Phase 2: at step k rank r sends every slot whose index has bit k set to
    # rank (r + 2^k) mod p, which stores them in the same slots; a block in slot i thus travels i ranks in all.
    # Phase 3, local: slot i of rank d now holds the block from rank (d − i) mod p; the inverse rotation puts them
    # in source order (the simulator's output assembly).
    slots = [[r * p + (r + i) % p for i in range(p)] for r in range(p)]
    steps = []
    for k in range(_lg(p)):
        distance = 1 << k
        moving = [i for i in range(p) if i & distance]
        steps.append(
            tuple(_transfer(r, (r + distance) % p, [slots[r][i] for i in moving], block_sizes) for r in range(p))
        )
        received = [list(rank_slots) for rank_slots in slots]
        for r in range(p):
            for i in moving:
                received[(r + distance) % p][i] = slots[r][i]
        slots = received
    return steps


def _ring_send_recv(p, sizes):
    # nccl-tests sendrecv.cu: rank r sends its buffer to r + 1 and receives from r − 1, in one step.
    return [tuple(_transfer(r, (r + 1) % p, range(p), sizes) for r in range(p))] if p > 1 else []


def _schedule(op: str, algorithm: str, p: int, sizes, root: int):
    """The steps of (op, algorithm), composed as in the table of ``collectives.collective_cost``."""
    if op == "all_reduce":
        if algorithm == "ring":  # ring reduce-scatter + ring all-gather (Patarasuk & Yuan 2009)
            return _ring_reduce_scatter(p, sizes) + _ring_all_gather(p, sizes)
        if algorithm == "binomial_tree":  # binomial reduce to rank 0 + binomial broadcast from rank 0
            return _binomial_reduce(p, sizes, 0) + _binomial_broadcast(p, sizes, 0)
        if algorithm == "recursive_doubling":
            return _recursive_doubling_all_reduce(p, sizes)
        # Rabenseifner (MPICH allreduce_intra_reduce_scatter_allgather.c, in Thakur et al.'s order of partners)
        return _recursive_halving_reduce_scatter(p, sizes) + _recursive_doubling_all_gather(p, sizes)
    if op == "reduce_scatter":
        return _ring_reduce_scatter(p, sizes) if algorithm == "ring" else _recursive_halving_reduce_scatter(p, sizes)
    if op == "all_gather":
        return _ring_all_gather(p, sizes) if algorithm == "ring" else _recursive_doubling_all_gather(p, sizes)
    if op == "broadcast":
        if algorithm == "binomial_tree":
            return _binomial_broadcast(p, sizes, root)
        # MPICH bcast_intra_scatter_ring_allgather.c: binomial scatter of the chunks, then ring all-gather
        return _binomial_scatter(p, sizes, root) + _ring_all_gather(p, sizes)
    if op == "reduce":
        if algorithm == "binomial_tree":
            return _binomial_reduce(p, sizes, root)
        if algorithm == "ring":  # the time-reverse of broadcast "ring": ring reduce-scatter, binomial gather
            return _ring_reduce_scatter(p, sizes) + _binomial_gather(p, sizes, root)
        # MPICH reduce_intra_reduce_scatter_gather.c: recursive-halving reduce-scatter, binomial gather
        return _recursive_halving_reduce_scatter(p, sizes) + _binomial_gather(p, sizes, root)
    if op == "all_to_all":
        block_sizes = [sizes[d] for _source in range(p) for d in range(p)]  # indexed by source·p + destination
        return _pairwise_all_to_all(p, block_sizes) if algorithm == "pairwise" else _bruck_all_to_all(p, block_sizes)
    return _ring_send_recv(p, sizes)


# --- executing a schedule on the arrays -----------------------------------------------------------------------


def _chunk_bounds(elements: int, p: int) -> np.ndarray:
    """Offsets of the p chunks np.array_split makes of ``elements`` elements: chunk c is [bounds[c], bounds[c+1])."""
    sizes = np.full(p, elements // p, dtype=np.int64)
    sizes[: elements % p] += 1
    return np.concatenate(([0], np.cumsum(sizes)))


def _element_ranges(chunks, bounds):
    """(start, stop) element ranges covering ``chunks`` in message order, consecutive chunks merged."""
    ranges = []
    for chunk in chunks:
        start, stop = int(bounds[chunk]), int(bounds[chunk + 1])
        if ranges and ranges[-1][1] == start:
            ranges[-1] = (ranges[-1][0], stop)
        else:
            ranges.append((start, stop))
    return ranges


def _run_on_buffers(buffers: np.ndarray, bounds: np.ndarray, steps) -> None:
    """Apply the steps to ``buffers`` (one row per rank), each step as if all its messages were sent at once."""
    for step in steps:
        written = {(t.dst, chunk) for t in step for chunk in t.chunks}
        read_is_overwritten = any((t.src, chunk) in written for t in step for chunk in t.chunks)
        # Messages are views of the senders' rows unless the step overwrites data it also sends (an exchange,
        # a ring shift): then they are copied first. Copying every message makes a large ring ~5 times slower.
        messages = [
            [
                (a, b, buffers[t.src, a:b].copy() if read_is_overwritten else buffers[t.src, a:b])
                for a, b in _element_ranges(t.chunks, bounds)
            ]
            for t in step
        ]
        for transfer, pieces in zip(step, messages, strict=True):
            for a, b, piece in pieces:
                if transfer.reduce:
                    buffers[transfer.dst, a:b] += piece
                else:
                    buffers[transfer.dst, a:b] = piece


def _run_all_to_all(arrays, p: int, steps) -> tuple[np.ndarray, ...]:
    """Move the (source, destination) blocks along the steps; a rank can only send blocks it holds."""
    bounds = _chunk_bounds(arrays[0].size, p)
    held = [{s * p + d: arrays[s][bounds[d] : bounds[d + 1]] for d in range(p)} for s in range(p)]
    for step in steps:
        messages = [[held[t.src][block] for block in t.chunks] for t in step]  # KeyError: sent a block not held
        for transfer, blocks in zip(step, messages, strict=True):
            held[transfer.dst].update(zip(transfer.chunks, blocks, strict=True))
    return tuple(np.concatenate([held[d][s * p + d] for s in range(p)]) for d in range(p))


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


def _outputs(op: str, arrays, p: int, steps, root: int) -> tuple[np.ndarray, ...]:
    if op == "all_to_all":
        return tuple(_read_only(out) for out in _run_all_to_all(arrays, p, steps))
    if op == "all_gather":
        chunk = arrays[0].size
        buffers = np.zeros((p, p * chunk), dtype=arrays[0].dtype)
        for r, array in enumerate(arrays):
            buffers[r, r * chunk : (r + 1) * chunk] = array  # the rest is filled only by transfers
    else:
        buffers = np.stack(arrays)  # a copy: the inputs are never written
    bounds = _chunk_bounds(buffers.shape[1], p)
    _run_on_buffers(buffers, bounds, steps)
    buffers.flags.writeable = False
    if op == "reduce_scatter":
        return tuple(buffers[r, bounds[r] : bounds[r + 1]] for r in range(p))
    if op == "reduce":  # the sum lands on the root; the others' outputs are their inputs, unchanged
        return tuple(buffers[r] if r == root else _read_only(arrays[r]) for r in range(p))
    return tuple(buffers)


# --- arguments --------------------------------------------------------------------------------------------------


def _checked_ranks(op: str, ranks, algorithm: str) -> int:
    p = _check.count("ranks", ranks)
    if algorithm not in applicable_algorithms(op, p):  # refuses an array of ranks too
        raise ValueError(f"ranks must be a power of two for algorithm={algorithm!r}, got {p!r}")
    assert isinstance(p, int)  # applicable_algorithms has refused an array
    return p


def _checked_root(root, p: int) -> int:
    root = _check.count("root", root, minimum=0)
    if not isinstance(root, int) or root >= p:
        raise ValueError(f"root must be an integer in 0..{p - 1} (ranks − 1), got {root!r}")
    return root


def _checked_inputs(inputs, ranks: int | None = None) -> tuple[np.ndarray, ...]:
    """Check ``inputs`` is one non-empty 1-D numeric array per rank, all of one shape and dtype."""
    if inputs is None or isinstance(inputs, (str, bytes)):
        raise ValueError(f"inputs must be a sequence of 1-D arrays, one per rank; got {inputs!r}")
    try:
        arrays = tuple(np.asarray(array) for array in inputs)
    except (TypeError, ValueError) as error:
        raise ValueError(f"inputs must be a sequence of 1-D arrays, one per rank; got {inputs!r}") from error
    if ranks is not None and len(arrays) != ranks:
        raise ValueError(f"inputs must hold one array per rank: got {len(arrays)} arrays for ranks={ranks}")
    if not arrays:
        raise ValueError("inputs must hold at least one array")
    for r, array in enumerate(arrays):
        if array.ndim != 1 or array.size == 0:
            raise ValueError(f"inputs[{r}] must be a non-empty 1-D array, got shape {array.shape}")
        if array.dtype == bool or not np.issubdtype(array.dtype, np.number):
            raise ValueError(f"inputs[{r}] must hold numbers, got dtype {array.dtype}")
        if array.shape != arrays[0].shape or array.dtype != arrays[0].dtype:
            raise ValueError(
                f"inputs must share one shape and dtype: inputs[0] is {arrays[0].shape} "
                f"{arrays[0].dtype}, inputs[{r}] is {array.shape} {array.dtype}"
            )
    return arrays


def _payload_elements(op: str, arrays) -> int:
    return len(arrays) * arrays[0].size if op == "all_gather" else arrays[0].size


def _default_inputs(op: str, p: int, elements, seed) -> tuple[np.ndarray, ...]:
    """Deterministic int64 inputs (integers 0..99 drawn with ``seed``), S = ``elements`` elements of payload."""
    if elements is None:
        elements = p * p * 2 if op == "all_to_all" else p * 3
    elements = _check.count("elements", elements)
    seed = _check.count("seed", seed, minimum=0)
    if op == "all_gather" and elements % p:
        raise ValueError(
            f"elements must be a multiple of ranks={p} for all_gather (one equal chunk per rank), got {elements}"
        )
    per_rank = elements // p if op == "all_gather" else elements
    data = np.random.default_rng(seed).integers(0, _DEFAULT_VALUE_LIMIT, size=(p, per_rank), dtype=np.int64)
    data.flags.writeable = False
    return tuple(data)


# --- public functions -------------------------------------------------------------------------------------------


def simulate(op, ranks, inputs=None, algorithm="ring", root=0, elements=None, seed=0) -> Simulation:
    """Run collective ``op`` with ``algorithm`` over ``ranks`` ranks on numpy arrays, recording every step.

    ``inputs`` holds one 1-D array per rank (see the module docstring for what each op expects; all_gather takes
    each rank's own chunk). Without ``inputs``, rank r gets deterministic int64 integers 0..99 drawn with ``seed``,
    ``elements`` of payload S (default 3·ranks, and 2·ranks² for all_to_all). ``root`` is the root of broadcast
    and reduce; the binomial-tree all-reduce always reduces to rank 0. The arguments are checked like
    ``collective_cost``'s: recursive doubling/halving and Rabenseifner need a power-of-two ``ranks``; the pipelined
    double binary tree (``NOT_SIMULATED``) is refused.

    >>> import numpy as np
    >>> inputs = [np.array([1, 2, 3]), np.array([10, 20, 30]), np.array([100, 200, 300])]
    >>> sim = simulate("all_reduce", 3, inputs)
    >>> sim.outputs[2]
    array([111, 222, 333])
    >>> [(t.src, t.dst, t.chunks) for t in sim.steps[0]]   # step 0: rank r sends chunk r − 1 to rank r + 1
    [(0, 1, (2,)), (1, 2, (0,)), (2, 0, (1,))]
    >>> simulate("broadcast", 3, inputs, algorithm="binomial_tree", root=1).outputs
    (array([10, 20, 30]), array([10, 20, 30]), array([10, 20, 30]))
    """
    check_algorithm(op, algorithm)
    if algorithm in NOT_SIMULATED:
        raise ValueError(
            f"algorithm must be one the simulation runs, not {algorithm!r} (pipelined; its cost is modelled in "
            "collectives.collective_cost, not simulated)"
        )
    p = _checked_ranks(op, ranks, algorithm)
    root = _checked_root(root, p)
    if inputs is None:
        arrays = _default_inputs(op, p, elements, seed)
    else:
        arrays = tuple(_read_only(array) for array in _checked_inputs(inputs, p))
        if elements is not None and _check.count("elements", elements) != _payload_elements(op, arrays):
            raise ValueError(
                f"elements must match the inputs' payload of {_payload_elements(op, arrays)} "
                f"elements (or be None), got {elements!r}"
            )
    bounds = _chunk_bounds(_payload_elements(op, arrays), p)
    steps = _schedule(op, algorithm, p, np.diff(bounds).tolist(), root)
    outputs = _outputs(op, arrays, p, steps, root)
    return Simulation(op, algorithm, p, arrays, outputs, tuple(steps), root)


def reference(op, inputs, root=0) -> tuple[np.ndarray, ...]:
    """The outputs ``op`` must produce, computed directly with numpy (one input array per rank, as ``simulate``).

    all_reduce: the sum on every rank; reduce_scatter: chunk r of the sum on rank r; all_gather: the
    concatenation on every rank; broadcast: the root's input on every rank; reduce: the sum on the root, the
    other ranks' inputs unchanged; all_to_all: block d of every input, in source order, on rank d;
    send_recv: rank r − 1's input on rank r. Sums keep the inputs' dtype.

    >>> import numpy as np
    >>> inputs = [np.array([1, 2, 3, 4]), np.array([10, 20, 30, 40])]
    >>> reference("reduce_scatter", inputs)
    (array([11, 22]), array([33, 44]))
    >>> reference("all_to_all", inputs)
    (array([ 1,  2, 10, 20]), array([ 3,  4, 30, 40]))
    >>> reference("reduce", inputs, root=1)
    (array([1, 2, 3, 4]), array([11, 22, 33, 44]))
    """
    _check.choice("op", op, OPS)
    arrays = _checked_inputs(inputs)
    p = len(arrays)
    root = _checked_root(root, p)
    stacked = np.stack(arrays)
    total = stacked.sum(axis=0, dtype=stacked.dtype)
    if op == "all_reduce":
        return tuple(total.copy() for _ in range(p))
    if op == "reduce_scatter":
        return tuple(np.array_split(total, p))
    if op == "all_gather":
        return tuple(np.concatenate(arrays) for _ in range(p))
    if op == "broadcast":
        return tuple(arrays[root].copy() for _ in range(p))
    if op == "reduce":
        return tuple(total if r == root else arrays[r].copy() for r in range(p))
    if op == "all_to_all":
        blocks = [np.array_split(array, p) for array in arrays]
        return tuple(np.concatenate([blocks[s][d] for s in range(p)]) for d in range(p))
    return tuple(arrays[(r - 1) % p].copy() for r in range(p))
