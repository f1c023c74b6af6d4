"""Plan search: every plan that uses all of a cluster's devices, checked for fit and ranked by step time
(``search_plans``, ``PlanSearch``), and the plans that stay fast across several scenarios (``worst_case_ranking``).
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _check, units
from ..compute import RECOMPUTE_OPTIONS
from ..hardware import Cluster
from ..parallelism.calibration import Calibration, resolve_calibration
from ..parallelism.memory import memory_breakdown
from ..parallelism.models import TransformerModel
from ..parallelism.plan import (
    ATTENTION_OPTIONS,
    CONTEXT_PARALLEL_KINDS,
    ZERO_STAGES,
    ParallelPlan,
    check_capacity_factor,
    splits_context_and_experts,
    splits_evenly,
)
from ..pipeline import ZERO_BUBBLE_SCHEDULES, zero_bubble_min_microbatches
from .step import binding_constraint, step_time

__all__ = [
    "PlanSearch",
    "search_plans",
    "worst_case_ranking",
    "PLAN_FIELDS",
    "AXIS_FIELDS",
    "BINDING_CONSTRAINTS",
]

# The fields that name one plan of a search (the schedule follows from virtual_stages, unless the search enumerates the
# zero-bubble schedules: ``_plan_fields``).
PLAN_FIELDS = (
    "data_parallel",
    "tensor_parallel",
    "pipeline_parallel",
    "zero_stage",
    "micro_batch",
    "grad_accum_steps",
    "recompute",
    "sequence_parallel",
    "virtual_stages",
    "attention",
)
# The fields of the context and expert axes: columns of a search (and fields of its plans) only when it enumerates
# them (``search_plans``' ``context_parallel`` or ``expert_parallel`` beyond 1, or a ``capacity_factor``), so
# a search without them reads as it always did.
AXIS_FIELDS = ("context_parallel", "context_parallel_kind", "expert_parallel", "capacity_factor")
_KIND_LABELS = {"ring": "ring", "all_gather": "ag", "all_to_all": "a2a"}  # ``table``'s short names
BINDING_CONSTRAINTS = ("compute", "exposed communication", "bubble", "memory", "batch divisibility")


@dataclass(frozen=True, eq=False)
class PlanSearch:
    """Every plan considered, as columns (numpy arrays, one row per plan), ranked: feasible plans first, fastest
    first. ``rejected`` counts plans by reason ("partition", "batch divisibility", "memory"). A plan is feasible
    ("fits") when its memory × (1 + ``memory_margin``) is within ``capacity_bytes``; ``step_time_band`` (a
    ``Calibration.step_time_band``; empty: none) set the columns ``step_time_low_s`` and ``step_time_high_s``."""

    columns: dict
    evaluated: int
    rejected: dict
    capacity_bytes: float
    memory_margin: float = 0.0
    step_time_band: tuple = ()

    def __len__(self):
        return len(self.columns["step_time_s"])

    @property
    def feasible(self):
        """Boolean mask of the rows that fit in memory."""
        return self.columns["fits"]

    def row(self, row: int) -> dict:
        """One row as plain Python values."""
        return {name: values[row].item() for name, values in self.columns.items()}

    def plan(self, row: int) -> ParallelPlan:
        """The ParallelPlan of one row (row 0 is the best feasible plan)."""
        c = self.columns
        axes = {name: _cell(c[name][row]) for name in AXIS_FIELDS if name in c}
        return ParallelPlan(
            **axes,
            data_parallel=int(c["data_parallel"][row]),
            tensor_parallel=int(c["tensor_parallel"][row]),
            pipeline_parallel=int(c["pipeline_parallel"][row]),
            zero_stage=int(c["zero_stage"][row]),
            micro_batch=int(c["micro_batch"][row]),
            grad_accum_steps=int(c["grad_accum_steps"][row]),
            recompute=str(c["recompute"][row]),
            sequence_parallel=bool(c["sequence_parallel"][row]),
            schedule=str(c["schedule"][row]),
            virtual_stages=int(c["virtual_stages"][row]),
            attention=str(c["attention"][row]),
        )

    def fastest(self) -> int:
        """The row of the fastest plan that fits with the margin (row 0). Raises ValueError if none fits."""
        if not np.any(self.feasible):
            raise ValueError(f"no plan fits in {units.format_bytes(self.capacity_bytes)} with the memory margin")
        return 0

    def robust(self) -> int:
        """The row of the robust plan: the best worst case, the smallest high end of the step-time band
        (``step_time_high_s``) among the plans that fit with the margin; the fastest when there is no band.
        Raises ValueError if none fits.

        A band that widens with the model-parallel size (the Playbook's cluster, its own calibration: nanotron on
        EFA) moves the pick to a plan whose replica spans fewer GPUs; under a band of one row (the reference's) the
        robust plan is the fastest.

        >>> from dataclasses import replace
        >>> from course_lib.parallelism import LLAMA3_70B, PLAYBOOK_CALIBRATION
        >>> from course_lib.validation import PLAYBOOK_CLUSTER_NODE
        >>> four_nodes = replace(PLAYBOOK_CLUSTER_NODE, nodes=4)
        >>> found = search_plans(LLAMA3_70B, four_nodes, 256, attention=("flash",), calibration=PLAYBOOK_CALIBRATION)
        >>> print(found.table([found.fastest(), found.robust()]))   # doctest: +ELLIPSIS
        fits: memory × (1 + 38.4 %) ≤ 80 GB; step (p10–p90): the band of measured/predicted step times
         row    d   t   p ZeRO  b    m  v recompute  SP   memory                    step  exposed   bubble  binding
           0    1   4   8    0  1  256  1      full  no  56.8 GB       97 s (2.1–54 min)   7.89 s   2.58 s  compute
          14    2   8   2    1  1  128  1      full yes  57.8 GB   1.93 min (1.8–24 min)   28.8 s   896 ms  compute
        """
        self.fastest()
        high = np.where(self.feasible, self.columns["step_time_high_s"], np.inf)
        return int(np.argmin(high))

    def best(self, count: int = 5) -> list:
        """The ``count`` fastest feasible plans."""
        count = _check.count("count", count)
        return [self.plan(row) for row in range(min(count, int(np.sum(self.feasible))))]

    def fastest_within(self, memory_bytes) -> int:
        """The row of the fastest plan that needs at most ``memory_bytes`` per device (e.g. the capacity less some
        headroom); re-ranks this search without evaluating any plan again. Raises ValueError if none does.

        >>> from course_lib.hardware import DGX_H100
        >>> from course_lib.parallelism import GPT2_1_5B
        >>> from course_lib.units import GB, format_bytes
        >>> found = search_plans(GPT2_1_5B, DGX_H100, global_batch=512, calibration=None)   # the ideal model
        >>> found.fastest_within(80 * GB), found.fastest_within(10 * GB)   # row 0 needs 21 GB (see ``table``)
        (0, 81)
        >>> found.row(81)["recompute"], format_bytes(found.row(81)["memory_bytes"])
        ('selective', '8.46 GB')
        """
        limit = _check.positive("memory_bytes", memory_bytes)
        rows = np.flatnonzero(self.feasible & (self.columns["memory_bytes"] <= limit))
        if len(rows) == 0:
            raise ValueError(f"memory_bytes must leave room for at least one plan; no plan needs {limit:.3g} B or less")
        return int(rows[0])

    def fastest_with_margin(self, memory_margin) -> int:
        """The row of the fastest plan that fits with ``memory_margin`` of its memory to spare (memory × (1 + margin)
        within the device's): a margin other than the search's own (``memory_margin``, the calibration's: the
        default calibration's margin is the 90th percentile of the Playbook's healthy held-out runs, ``make
        validate``), without searching again.

        >>> from course_lib.hardware import DGX_H100
        >>> from course_lib.parallelism import LLAMA3_8B
        >>> found = search_plans(LLAMA3_8B, DGX_H100, global_batch=256)
        >>> found.memory_margin, found.fastest_with_margin(0.384), found.fastest_with_margin(0.8) > 0
        (0.521, 0, True)
        """
        margin = _check.nonnegative("memory_margin", memory_margin)
        return self.fastest_within(self.capacity_bytes / (1 + margin))

    def fields(self, row: int) -> dict:
        """The ``PLAN_FIELDS`` of one row (and the ``AXIS_FIELDS`` the search has), as plain Python values: what
        ``find`` needs to find the plan again."""
        return {name: _cell(self.columns[name][row]) for name in _plan_fields(self)}

    def find(self, **fields) -> int:
        """The one row whose columns equal ``fields`` (e.g. ``tensor_parallel=8, zero_stage=0``).

        Raises ValueError naming the fields when no row or several rows match, or a field is not a column.

        >>> from course_lib.hardware import DGX_H100
        >>> from course_lib.parallelism import GPT2_1_5B
        >>> found = search_plans(GPT2_1_5B, DGX_H100, global_batch=512, calibration=None)
        >>> found.find(data_parallel=8, zero_stage=2, micro_batch=1, recompute="none")
        6
        >>> found.find(data_parallel=8, zero_stage=3)
        Traceback (most recent call last):
        ...
        ValueError: 12 plans match data_parallel=8, zero_stage=3 (rows 0, 2, 5, 81, ...); name more fields
        """
        if not fields:
            raise ValueError(f"find needs at least one field; the fields are {', '.join(self.columns)}")
        unknown = sorted(set(fields) - set(self.columns))
        if unknown:
            raise ValueError(
                f"{', '.join(unknown)} is not a field of the search; the fields are {', '.join(self.columns)}"
            )
        match = np.ones(len(self), dtype=bool)
        for name, value in fields.items():
            column = self.columns[name]
            match &= np.isnan(column) if name == "capacity_factor" and value is None else column == value
        rows = np.flatnonzero(match)
        wanted = ", ".join(f"{name}={value!r}" for name, value in fields.items())
        if len(rows) == 0:
            raise ValueError(
                f"no plan matches {wanted} (the columns hold only plans that partition the model and the batch)"
            )
        if len(rows) > 1:
            shown = ", ".join(str(row) for row in rows[:4]) + (", ..." if len(rows) > 4 else "")
            raise ValueError(f"{len(rows)} plans match {wanted} (rows {shown}); name more fields")
        return int(rows[0])

    def table(self, rows=range(5)) -> str:
        """Rows of the search as a text table, under a line that says how "fits" and the band were judged: the plan
        (d, t, p, ZeRO stage, b, m, v, recomputation, sequence parallelism), its memory per device, step time with
        its band (p10–p90, when the calibration has one), exposed communication, bubble and binding constraint; the
        context-parallel size c and its kind ("ring" or "a2a") and the expert-parallel size e when the search has
        plans that use them.

        >>> from course_lib.hardware import DGX_H100
        >>> from course_lib.parallelism import GPT2_1_5B
        >>> print(search_plans(GPT2_1_5B, DGX_H100, global_batch=512, calibration=None).table([0, 7]))
        fits: memory ≤ 80 GB (no margin); step: a point estimate (no measured band)
         row    d   t   p ZeRO  b    m  v recompute  SP   memory                    step  exposed   bubble  binding
           0    8   1   1    3  2   32  1      none  no    21 GB                  1.36 s      0 s      0 s  compute
           7    8   1   1    1  1   64  1      none  no  17.5 GB                  1.37 s  7.39 ms      0 s  compute
        """
        rows = [_check.count("rows", row, minimum=0) for row in rows]
        for row in rows:
            if row >= len(self):
                raise ValueError(f"rows must be row numbers in 0..{len(self) - 1}, got {row}")
        columns = self.columns
        context = "context_parallel" in columns and bool(np.any(columns["context_parallel"] > 1))
        expert = "expert_parallel" in columns and bool(np.any(columns["expert_parallel"] > 1))
        axes_head = (f" {'c':>3} {'CP':>4}" if context else "") + (f" {'e':>3}" if expert else "")
        capacity = units.format_bytes(self.capacity_bytes)
        fits = (
            f"memory × (1 + {units.format_percent(self.memory_margin)}) ≤ {capacity}"
            if self.memory_margin
            else f"memory ≤ {capacity} (no margin)"
        )
        band = (
            "step (p10–p90): the band of measured/predicted step times"
            if self.step_time_band
            else "step: a point estimate (no measured band)"
        )
        lines = [
            f"fits: {fits}; {band}",
            f"{'row':>4} {'d':>4} {'t':>3} {'p':>3}{axes_head} {'ZeRO':>4} {'b':>2} {'m':>4} {'v':>2} {'recompute':>9} "
            f"{'SP':>3} {'memory':>8} {'step':>23} {'exposed':>8} {'bubble':>8}  binding",
        ]
        for row in rows:
            r = self.row(row)
            kind = _KIND_LABELS[r["context_parallel_kind"]] if context else ""
            axes = (
                f" {r['context_parallel']:>3} {kind if r['context_parallel'] > 1 else '-':>4}" if context else ""
            ) + (f" {r['expert_parallel']:>3}" if expert else "")
            step = units.format_time_band(r["step_time_s"], r["step_time_low_s"], r["step_time_high_s"])
            lines.append(
                f"{row:>4} {r['data_parallel']:>4} {r['tensor_parallel']:>3} {r['pipeline_parallel']:>3}{axes} "
                f"{r['zero_stage']:>4} {r['micro_batch']:>2} {r['grad_accum_steps']:>4} {r['virtual_stages']:>2} "
                f"{r['recompute']:>9} {'yes' if r['sequence_parallel'] else 'no':>3} "
                f"{units.format_bytes(r['memory_bytes']):>8} {step:>23} "
                f"{units.format_time(r['exposed_communication_s']):>8} {units.format_time(r['bubble_s']):>8}  "
                f"{r['binding_constraint']}"
            )
        return "\n".join(lines)


def worst_case_ranking(searches: dict, candidates: int = 10) -> list[dict]:
    """The plans of several searches of one model and cluster (one per scenario: calibration, efficiency, ...),
    ranked by their worst slowdown: in each scenario a plan's step time over that scenario's fastest feasible plan.

    The candidates are the ``candidates`` fastest feasible plans of every search. A plan a scenario does not hold,
    or that does not fit there, counts as infinitely slow in it. Each row: the plan's ``PLAN_FIELDS``,
    ``step_time_s`` and ``slowdown`` (dicts by scenario), ``worst_slowdown`` and ``worst_scenario``. The first row
    is the plan with the best worst case (minimax regret): rarely the fastest anywhere, never far from it.

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import GPT2_1_5B
    >>> searches = {f"η = {eta}": search_plans(GPT2_1_5B, DGX_H100, 512, compute_efficiency=eta, calibration=None)
    ...             for eta in (0.3, 0.6)}
    >>> [(round(row["worst_slowdown"], 4), row["worst_scenario"]) for row in worst_case_ranking(searches, 3)][-2:]
    [(1.0, 'η = 0.3'), (1.2502, 'η = 0.6')]
    """
    count = _check.count("candidates", candidates)
    if not searches:
        raise ValueError("searches must hold at least one PlanSearch, by scenario name")
    names = list(searches)
    empty = [name for name, search in searches.items() if not np.any(search.feasible)]
    if empty:
        raise ValueError(f"searches must each hold a plan that fits; {', '.join(map(repr, empty))} holds none")
    fields = _plan_fields(searches[names[0]])
    if any(_plan_fields(search) != fields for search in searches.values()):
        raise ValueError("searches must enumerate the same axes (their context and expert fields differ)")
    index = {}
    for name, search in searches.items():
        keys = zip(*(search.columns[field].tolist() for field in fields), strict=True)
        index[name] = {key: row for row, key in enumerate(keys) if search.feasible[row]}
    pool = {}
    for search in searches.values():
        for row in range(min(count, int(np.sum(search.feasible)))):
            pool.setdefault(tuple(search.fields(row).values()), None)
    fastest = {name: float(searches[name].columns["step_time_s"][0]) for name in names}
    ranked = []
    for key in pool:
        times = {
            name: float(searches[name].columns["step_time_s"][index[name][key]]) if key in index[name] else np.inf
            for name in names
        }
        slowdown = {name: times[name] / fastest[name] for name in names}
        worst = max(names, key=lambda name: slowdown[name])
        ranked.append(
            dict(zip(fields, key, strict=True))
            | {"step_time_s": times, "slowdown": slowdown, "worst_slowdown": slowdown[worst], "worst_scenario": worst}
        )
    ranked.sort(key=lambda row: row["worst_slowdown"])  # stable: ties keep the first search's order
    return ranked


def _batch_plan(sizes: dict, fixed: dict, virtual_stages, keep) -> ParallelPlan:
    """One ParallelPlan holding the plans of the rows ``keep`` selects: ``sizes`` arrays, ``fixed`` fields."""
    rows = {name: values[keep] for name, values in sizes.items()}
    return ParallelPlan(**rows, **fixed, virtual_stages=np.full(int(np.sum(keep)), virtual_stages))


def _cell(value) -> Any:
    """A column's cell as a plain Python value; a capacity factor's NaN (dropless) as None."""
    plain = value.item()
    return None if isinstance(plain, float) and math.isnan(plain) else plain


def _plan_fields(search: PlanSearch) -> tuple[str, ...]:
    """``PLAN_FIELDS``, the ``AXIS_FIELDS`` the search has as columns, and "schedule" when it holds zero-bubble
    plans (``search_plans``' ``zero_bubble``: there v = 1 no longer names the schedule)."""
    zero_bubble = "schedule" in search.columns and np.isin(search.columns["schedule"], ZERO_BUBBLE_SCHEDULES).any()
    return (
        PLAN_FIELDS
        + tuple(name for name in AXIS_FIELDS if name in search.columns)
        + (("schedule",) if zero_bubble else ())
    )


def _axis_options(model: TransformerModel, devices: int, context_parallel, expert_parallel):
    """The context- and expert-parallel sizes to enumerate: "auto" gives every divisor of the device count that
    divides the sequence (c), and every divisor of the experts (e; 1 for a dense model)."""
    if context_parallel == "auto":
        context_parallel = [c for c in range(1, devices + 1) if devices % c == 0 and model.seq_len % c == 0]
    if expert_parallel == "auto":
        expert_parallel = [e for e in range(1, model.experts + 1) if model.experts % e == 0]
    contexts = _options("context_parallel", context_parallel, lambda v: _check.count("context_parallel", v))
    experts = _options("expert_parallel", expert_parallel, lambda v: _check.count("expert_parallel", v))
    return contexts, experts


def _factorisations(devices: int):
    """All (d, t, p) with d·t·p = devices."""
    divisors = [x for x in range(1, devices + 1) if devices % x == 0]
    return [(devices // (t * p), t, p) for t in divisors for p in divisors if (devices // t) % p == 0]


def _schedule_options(virtual_stages, zero_bubble) -> tuple[tuple, ...]:
    """(v, schedule) pairs to enumerate: each of ``virtual_stages`` (v = 1: 1F1B, v > 1: interleaved), then each of
    ``zero_bubble`` (may be empty) with v = 1."""
    stages = _options("virtual_stages", virtual_stages, lambda v: _check.count("virtual_stages", v))
    pairs = tuple((v, "interleaved" if v > 1 else "1f1b") for v in stages)
    if hasattr(zero_bubble, "__len__") and not isinstance(zero_bubble, (str, bytes)) and len(zero_bubble) == 0:
        return pairs
    zero = _options("zero_bubble", zero_bubble, lambda v: _check.choice("zero_bubble", v, ZERO_BUBBLE_SCHEDULES))
    return pairs + tuple((1, schedule) for schedule in zero)


def _options(name, values, check):
    """Check a non-empty collection of options, each with ``check``; return them without repeats, in order."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{name} must be a list of options, got {values!r}")
    checked = tuple(dict.fromkeys(check(v) for v in values))
    if not checked:
        raise ValueError(f"{name} must not be empty")
    return checked


def search_plans(
    model: TransformerModel,
    cluster: Cluster,
    global_batch,
    *,
    micro_batch_sizes=(1, 2, 4, 8),
    zero_stages=ZERO_STAGES,
    recompute=RECOMPUTE_OPTIONS,
    sequence_parallel=(False, True),
    virtual_stages=(1, 2, 4),
    compute_efficiency=0.5,
    dtype="bf16",
    calibration="default",
    attention=("standard",),
    framework=None,
    context_parallel=(1,),
    context_parallel_kind=("ring",),
    expert_parallel="auto",
    capacity_factor=None,
    memory_margin=None,
    step_time_band=None,
    zero_bubble=(),
) -> PlanSearch:
    """Enumerate plans that use every device of ``cluster`` and rank those that fit.

    Plans: every factorisation d·t·p of the device count, × micro-batch sizes × ZeRO stages × recomputation ×
    sequence parallelism (only with t > 1) × virtual stages (v = 1 is 1F1B; v > 1 the interleaved schedule, only
    with p > 1). Rejected: "partition" (t does not divide the heads, or p·v the layers), "batch divisibility"
    (b·d does not divide the global batch, or m is not a multiple of p when interleaving), "memory" (the first
    stage's memory exceeds the device's HBM). The rest are ranked by step time; plans rejected for memory are kept
    in the columns (``fits`` False) so a figure can show them. Every row has its MFU and HFU (``StepTime``).

    ``calibration`` and ``framework`` as in ``step_time`` (default "default", the calibration's own framework; None:
    the ideal model). Calibrated, the calibrated memory and step time rank the plans, p·v need not divide the
    layers, and plans combining p > 1 with a ZeRO stage above the framework's ``max_zero_stage_with_pipeline``
    are rejected as "framework". ``attention`` lists the attention options ("standard", "flash") to consider.
    ``zero_bubble`` (default none) lists zero-bubble schedules ("zb-h1", "zb-h2") to consider besides, each with
    v = 1 and p > 1; a plan with fewer micro-batches than the schedule's warm-up needs
    (``pipeline.zero_bubble_min_microbatches``) is rejected for "batch divisibility", and, calibrated, every one
    under a framework without ``split_backward`` for "framework".

    Context and expert parallelism: ``context_parallel`` lists the sizes c to consider (default 1; "auto": every
    divisor of the device count that divides the sequence), each with every ``context_parallel_kind`` listed (default
    "ring"; ``parallelism.CONTEXT_PARALLEL_KINDS``); then d·t·p·c = devices. ``expert_parallel`` lists the sizes e
    (default "auto": every divisor of the experts, so 1 for a dense model), e dividing d·c; every plan has the MoE
    ``capacity_factor`` (default None: dropless; its column holds NaN for it). Plans whose c or e does not split
    the model (``parallelism.splits_context_and_experts``) are rejected as "partition".
    Plans with c or e > 1 are pruned before their step is timed: those that do not fit in memory (with the margin
    below) are counted as "memory" and not kept as rows. The columns ``AXIS_FIELDS`` exist only when the search
    enumerates c or e beyond 1 or runs at a capacity factor (``table`` then shows c and e where a plan uses
    them).

    The search ranks with the model's measured uncertainty. ``memory_margin`` (None: the calibration's
    ``memory_margin``; 0 for the ideal model, whose errors no runs measured here): a plan fits only if its memory
    × (1 + margin) is within the device's, else it is rejected for "memory". ``step_time_band`` (None: the
    calibration's, measured on the Playbook's cluster only; none for the ideal model): every row's
    ``step_time_low_s`` and ``step_time_high_s``; ``PlanSearch.robust`` is the plan with the best worst
    case. Every row holds the ``memory_margin`` it was judged with.

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import GPT2_1_5B
    >>> found = search_plans(GPT2_1_5B, DGX_H100, global_batch=512, calibration=None)
    >>> found.evaluated, found.rejected
    (1632, {'partition': 1200, 'batch divisibility': 0, 'memory': 23})
    >>> best = found.row(0)   # GPT-2's 25 heads rule out tensor parallelism; NVLink hides ZeRO-3's gathers
    >>> best["data_parallel"], best["tensor_parallel"], best["zero_stage"], best["binding_constraint"]
    (8, 1, 3, 'compute')
    """
    batch = _check.count("global_batch", global_batch)
    micro_batch_sizes = _options("micro_batch_sizes", micro_batch_sizes, lambda v: _check.count("micro_batch_sizes", v))
    zero_stages = _options("zero_stages", zero_stages, lambda v: _check.choice("zero_stages", v, ZERO_STAGES))
    recompute = _options("recompute", recompute, lambda v: _check.choice("recompute", v, RECOMPUTE_OPTIONS))
    sequence_parallel = _options("sequence_parallel", sequence_parallel, lambda v: _check.flag("sequence_parallel", v))
    schedules = _schedule_options(virtual_stages, zero_bubble)
    attention = _options("attention", attention, lambda v: _check.choice("attention", v, ATTENTION_OPTIONS))
    contexts, experts = _axis_options(model, cluster.devices, context_parallel, expert_parallel)
    kinds = _options(
        "context_parallel_kind",
        context_parallel_kind,
        lambda v: _check.choice("context_parallel_kind", v, CONTEXT_PARALLEL_KINDS),
    )
    factor = check_capacity_factor(capacity_factor)
    with_axes = contexts != (1,) or experts != (1,) or factor is not None
    _check.fraction("compute_efficiency", compute_efficiency)
    cluster.accelerator.peak(dtype)
    calibration = resolve_calibration(calibration, cluster, framework)
    uncertainty = calibration or Calibration()  # the ideal model: no margin, no band
    if memory_margin is not None or step_time_band is not None:
        uncertainty = Calibration(
            memory_margin=uncertainty.memory_margin if memory_margin is None else memory_margin,
            step_time_band=uncertainty.step_time_band if step_time_band is None else step_time_band,
        )
    rejected = {"partition": 0, "batch divisibility": 0, "memory": 0}
    if calibration is not None:
        rejected = {"partition": 0, "framework": 0, "batch divisibility": 0, "memory": 0}
    rows = {
        name: []
        for name in (
            *(AXIS_FIELDS if with_axes else ()),
            "data_parallel",
            "tensor_parallel",
            "pipeline_parallel",
            "zero_stage",
            "micro_batch",
            "grad_accum_steps",
            "recompute",
            "sequence_parallel",
            "schedule",
            "virtual_stages",
            "attention",
            "memory_bytes",
            "compute_s",
            "bubble_s",
            "exposed_communication_s",
            "step_time_s",
            "mfu",
            "hfu",
        )
    }
    evaluated, pruned = 0, 0
    shapes = np.array(
        [
            (d, t, p, c, e, b)
            for c in contexts
            if cluster.devices % c == 0
            for (d, t, p) in _factorisations(int(cluster.devices // c))
            for e in experts
            for b in micro_batch_sizes
        ],
        dtype=np.int64,
    ).reshape(-1, 6)
    d, t, p, c, e, b = shapes.T
    for stage, rc, sp, (v, schedule), attn, kind in itertools.product(
        zero_stages, recompute, sequence_parallel, schedules, attention, kinds
    ):
        considered = (t > 1) | (not sp)
        considered &= (p > 1) | (schedule == "1f1b")  # interleaved and zero-bubble schedules need a pipeline
        considered &= (c > 1) | (kind == kinds[0])  # without context parallelism its kind makes no plan of its own
        evaluated += int(considered.sum())
        if with_axes:
            axes_ok = considered & ((d * c) % e == 0) & splits_context_and_experts(model, t, c, kind, e)
            rejected["partition"] += int((considered & ~axes_ok).sum())
            considered = axes_ok
        if calibration is None:
            partition_ok = considered & splits_evenly(model, t, p, v)
            rejected["partition"] += int((considered & ~partition_ok).sum())
        else:
            split_ok = considered & splits_evenly(model, t)
            rejected["partition"] += int((considered & ~split_ok).sum())
            partition_ok = split_ok & calibration.framework.runs(stage, p, schedule)
            rejected["framework"] += int((split_ok & ~partition_ok).sum())
        m = np.where(batch % (b * d) == 0, batch // (b * d), 0)
        batch_ok = partition_ok & (m > 0) & ((v == 1) | (m % p == 0))
        if schedule in ZERO_BUBBLE_SCHEDULES:  # the warm-up's k(p − 1) + 1 micro-batches
            batch_ok &= m >= zero_bubble_min_microbatches(p, schedule)
        rejected["batch divisibility"] += int((partition_ok & ~batch_ok).sum())
        if not batch_ok.any():
            continue
        keep = batch_ok
        sizes = dict(data_parallel=d, tensor_parallel=t, pipeline_parallel=p, micro_batch=b, grad_accum_steps=m)
        if with_axes:
            sizes |= dict(context_parallel=c, expert_parallel=e)
        fixed = dict(
            zero_stage=stage,
            recompute=rc,
            sequence_parallel=sp,
            schedule=schedule,
            attention=attn,
            context_parallel_kind=kind,
            capacity_factor=factor,
        )
        plan_of = functools.partial(_batch_plan, sizes, fixed, v)
        plan = plan_of(keep)
        memory = np.broadcast_to(memory_breakdown(model, plan, calibration=calibration).total, d[keep].shape)
        if with_axes:  # prune what cannot fit before timing it
            fits_with_margin = memory * (1 + uncertainty.memory_margin) <= cluster.accelerator.hbm_capacity_bytes
            kept = fits_with_margin | ((c[keep] == 1) & (e[keep] == 1))
            pruned += int((~kept).sum())
            if not kept.any():
                continue
            keep = keep.copy()
            keep[keep] = kept
            plan, memory = plan_of(keep), memory[kept]
        step = step_time(model, plan, cluster, compute_efficiency, dtype, calibration)
        size = len(memory)
        axis_columns = (
            (("context_parallel", c[keep]), ("context_parallel_kind", np.full(size, kind)), ("expert_parallel",
             e[keep]), ("capacity_factor", np.full(size, np.nan if factor is None else factor))) if with_axes else ()
        )  # fmt: skip
        for name, values in (
            *axis_columns,
            ("data_parallel", d[keep]),
            ("tensor_parallel", t[keep]),
            ("pipeline_parallel", p[keep]),
            ("zero_stage", np.full(size, stage)),
            ("micro_batch", b[keep]),
            ("grad_accum_steps", m[keep]),
            ("recompute", np.full(size, rc)),
            ("sequence_parallel", np.full(size, sp)),
            ("schedule", np.full(size, schedule)),
            ("virtual_stages", np.full(size, v)),
            ("attention", np.full(size, attn)),
            ("memory_bytes", memory),
            ("compute_s", np.broadcast_to(step.compute_s, (size,))),
            ("bubble_s", np.broadcast_to(step.bubble_s, (size,))),
            ("exposed_communication_s", np.broadcast_to(step.exposed_communication_s, (size,))),
            ("step_time_s", np.broadcast_to(step.total_s, (size,))),
            ("mfu", np.broadcast_to(step.mfu, (size,))),
            ("hfu", np.broadcast_to(step.hfu, (size,))),
        ):
            rows[name].append(values)
    columns = {name: np.concatenate(parts) if parts else np.array([]) for name, parts in rows.items()}
    capacity = cluster.accelerator.hbm_capacity_bytes
    margin = uncertainty.memory_margin
    fits = columns["memory_bytes"] * (1 + margin) <= capacity
    low, high = uncertainty.step_time_ratios(columns["tensor_parallel"] * columns["pipeline_parallel"])
    columns["step_time_low_s"] = columns["step_time_s"] * low
    columns["step_time_high_s"] = columns["step_time_s"] * high
    columns["memory_margin"] = np.full(len(fits), margin)
    rejected["memory"] = int((~fits).sum()) + pruned
    # Feasible first, then fastest; equal times (to 1 ns) go to the plan with more memory headroom.
    order = np.lexsort((columns["memory_bytes"], np.round(columns["step_time_s"], 9), ~fits))
    columns = {name: values[order] for name, values in columns.items()}
    columns["fits"] = fits[order]
    binding = binding_constraint(columns["compute_s"], columns["exposed_communication_s"], columns["bubble_s"])
    columns["binding_constraint"] = np.where(columns["fits"], binding, "memory")
    return PlanSearch(columns, evaluated, rejected, capacity, margin, uncertainty.step_time_band)
