"""The plan: how one training step is split across devices (``ParallelPlan``), the global batch and the pipeline
bubble that follow from the split (``global_batch``, ``GlobalBatchReport``, ``pipeline_bubble_fraction``), and the
checks that a split fits a model (``splits_evenly``, ``check_*``).

A plan's numeric fields, like the numeric arguments of the functions here, may be numpy arrays: one plan object
then holds many plans, as the plan search uses it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from .. import _check
from ..compute import RECOMPUTE_OPTIONS
from ..pipeline import SIMULATED_SCHEDULES, ZERO_BUBBLE_SCHEDULES, ZERO_BUBBLE_WARMUP, zero_bubble_min_microbatches
from .models import TransformerModel

if TYPE_CHECKING:  # for the annotation only: calibration.py imports this module (ZERO_STAGES)
    from .calibration import Calibration

__all__ = [
    "ParallelPlan",
    "ZERO_STAGES",
    "ATTENTION_OPTIONS",
    "CONTEXT_PARALLEL_KINDS",
    "global_batch",
    "GlobalBatchReport",
    "global_batch_report",
    "pipeline_bubble_fraction",
    "splits_evenly",
    "splits_context_and_experts",
    "CONTEXT_SPLITS",
    "causal_attention_shares",
    "check_capacity_factor",
    "capacity_padding",
    "check_tensor_split",
    "check_pipeline_split",
    "check_plan_for_model",
    "stage_layers",
    "kv_heads_per_tensor_rank",
]

ZERO_STAGES = (0, 1, 2, 3)
# "standard" attention stores the softmax of the s × s scores (Korthikanti et al. 2022 Eq. (1)); "flash" attention
# (Dao et al. 2022, FlashAttention) recomputes the scores tile by tile in the backward and stores only the output and
# one fp32 log-sum-exp per head and token. It is an option of its own, distinct from selective recomputation.
ATTENTION_OPTIONS = ("standard", "flash")
# Context parallelism's three forms, as Megatron-Core names them (cp_comm_type, NVIDIA/Megatron-LM@core_v0.19.0
# megatron/core/transformer/transformer_config.py:987-1001) and Transformer Engine runs them: "ring" ("p2p") passes K/V
# blocks around the c ranks (Liu et al. 2023, Ring Attention); "all_gather" gathers every rank's K and V before
# attention, exposed (Llama 3, arXiv 2407.21783 §3.3.2); "all_to_all" ("a2a") re-splits the heads across them
# (Jacobs et al. 2023, DeepSpeed-Ulysses).
CONTEXT_PARALLEL_KINDS = ("ring", "all_gather", "all_to_all")
# How a sequence is cut among the c ranks of a context group: "contiguous" (rank r holds the r-th of c equal chunks)
# or "zigzag" (2c chunks, rank r holds chunks r and 2c − 1 − r: Megatron-Core's context parallelism, Llama 3 §3.3.2).
CONTEXT_SPLITS = ("contiguous", "zigzag")


@dataclass(frozen=True, eq=False)
class ParallelPlan:
    """How one training step is split: parallel sizes, ZeRO stage, batch shape, recomputation, schedule.

    devices = data_parallel × tensor_parallel × pipeline_parallel × context_parallel; the global batch is
    micro_batch × grad_accum_steps × data_parallel (tensor, pipeline and context groups share the same examples).
    ``grad_accum_steps`` is also the number of micro-batches m each pipeline processes per step.
    ``schedule`` is one of ``pipeline.SIMULATED_SCHEDULES``: "gpipe", "1f1b", "interleaved" (``virtual_stages`` (v)
    > 1 needs it), or the zero-bubble "zb-h1" and "zb-h2" of Qi et al. 2024 (the backward split into B and W; v = 1
    and m ≥ ``pipeline.zero_bubble_min_microbatches``: p for ZB-H1, 2p − 1 for ZB-H2). ``optimizer_sync`` (default
    True) says the optimizer step synchronises the stages (gradient clipping all-reduces the norm across them:
    Megatron-Core core_v0.19.0 megatron/core/optimizer/clip_grads.py:132-134, torchtitan@b5bcd76
    torchtitan/distributed/utils.py:663-665); False is Qi et al. §4's post-validation, the condition of ZB-H2's zero
    bubble (``parallelism.pipeline_bubble_time``), which only the ideal model takes; it changes nothing for the other
    schedules.

    ``context_parallel`` (c) splits each sequence into c parts, one per rank of a context group
    (``context_parallel_kind``: "ring" or "all_to_all", ``CONTEXT_PARALLEL_KINDS``). ``expert_parallel`` (e) spreads
    a mixture of experts' experts over e ranks carved out of the d·c data- and context-parallel ranks, as
    Megatron-Core does (megatron/core/parallel_state.py, ``initialize_model_parallel``: the expert ranks are generated
    over the world / (t·p) ranks the dense layers use for data and context parallelism), so e must divide d·c and
    adds no devices. ``capacity_factor`` (default None) is dropless routing, every token reaching its experts
    with no capacity and no padding: Megatron-Core's default (``moe_expert_capacity_factor: Optional[float] = None``,
    "None means no token will be dropped", NVIDIA/Megatron-LM@core_v0.19.0 megatron/core/transformer/
    transformer_config.py:888-890), as DeepSeek-V3 trained (arXiv 2412.19437 §2.1.2, "no token-dropping");
    the course's router is then balanced. A number (≥ 1) sizes each expert's buffer at that multiple of its even
    share of the routed tokens, padded to it (GShard, Lepikhin et al. 2021; Switch, Fedus et al. 2022; Megatron-Core's
    ``--moe-expert-capacity-factor`` with ``--moe-pad-expert-input-to-capacity``, lines 892-895): the all-to-all
    payloads, the experts' activations and the slowest rank's expert compute all scale with it
    (``capacity_padding``), so it is also the bound on load imbalance the step time charges. It is a plan field, not
    a model's: the same model trains with different factors.

    >>> plan = ParallelPlan(data_parallel=64, tensor_parallel=8, pipeline_parallel=4, micro_batch=2, grad_accum_steps=8)
    >>> plan.devices, plan.global_batch
    (2048, 1024)
    """

    data_parallel: _check.IntOrArray = 1
    tensor_parallel: _check.IntOrArray = 1
    pipeline_parallel: _check.IntOrArray = 1
    zero_stage: int = 0
    micro_batch: _check.IntOrArray = 1
    grad_accum_steps: _check.IntOrArray = 1
    recompute: str = "none"
    sequence_parallel: bool = False
    schedule: str = "1f1b"
    virtual_stages: _check.IntOrArray = 1
    attention: str = "standard"
    context_parallel: _check.IntOrArray = 1
    context_parallel_kind: str = "ring"
    expert_parallel: _check.IntOrArray = 1
    capacity_factor: float | None = None
    optimizer_sync: bool = True

    def __post_init__(self):
        _check.choice("attention", self.attention, ATTENTION_OPTIONS)
        for name in (
            "data_parallel",
            "tensor_parallel",
            "pipeline_parallel",
            "micro_batch",
            "grad_accum_steps",
            "virtual_stages",
            "context_parallel",
            "expert_parallel",
        ):
            object.__setattr__(self, name, _check.count(name, getattr(self, name)))
        _check.choice("context_parallel_kind", self.context_parallel_kind, CONTEXT_PARALLEL_KINDS)
        object.__setattr__(self, "capacity_factor", check_capacity_factor(self.capacity_factor))
        if np.any(_data_and_context(self) % np.asarray(self.expert_parallel)):
            raise ValueError(
                "expert_parallel must divide data_parallel × context_parallel (Megatron-Core carves the expert ranks "
                f"out of them), got {self.expert_parallel} for {self.data_parallel} × {self.context_parallel}"
            )
        _check.choice("zero_stage", self.zero_stage, ZERO_STAGES)
        _check.choice("recompute", self.recompute, RECOMPUTE_OPTIONS)
        _check.flag("sequence_parallel", self.sequence_parallel)
        _check_schedule_fields(self)

    @property
    def devices(self):
        """d·t·p·c devices (expert parallelism adds none: its ranks are data- and context-parallel ranks)."""
        return self.data_parallel * self.tensor_parallel * self.pipeline_parallel * self.context_parallel

    @property
    def sizes(self):
        """(t, p, d, b, m, v): tensor, pipeline and data sizes, micro-batch, micro-batches per step, virtual stages.

        >>> ParallelPlan(data_parallel=4, tensor_parallel=2, grad_accum_steps=8).sizes
        (2, 1, 4, 1, 8, 1)
        """
        return (
            self.tensor_parallel,
            self.pipeline_parallel,
            self.data_parallel,
            self.micro_batch,
            self.grad_accum_steps,
            self.virtual_stages,
        )

    @property
    def global_batch(self):
        """Samples per optimizer step."""
        return global_batch(self.micro_batch, self.grad_accum_steps, self.data_parallel)

    def replace(self, **changes) -> ParallelPlan:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)


def _check_schedule_fields(plan: ParallelPlan) -> None:
    """``ParallelPlan``'s schedule rules: v ≥ 2 and p dividing m with "interleaved", v = 1 otherwise, and enough
    micro-batches for a zero-bubble schedule's warm-up."""
    _check.choice("schedule", plan.schedule, SIMULATED_SCHEDULES)
    _check.flag("optimizer_sync", plan.optimizer_sync)
    m, p = np.asarray(plan.grad_accum_steps), np.asarray(plan.pipeline_parallel)
    if plan.schedule == "interleaved":
        if np.any(np.asarray(plan.virtual_stages) < 2):
            raise ValueError("virtual_stages must be ≥ 2 with schedule='interleaved'")
        if np.any(m % p):
            raise ValueError(
                "grad_accum_steps (micro-batches) must be a multiple of pipeline_parallel for the "
                "interleaved schedule (Narayanan et al. 2021 §2.2.2)"
            )
    elif np.any(np.asarray(plan.virtual_stages) != 1):
        raise ValueError(f"virtual_stages must be 1 unless schedule='interleaved', got {plan.virtual_stages}")
    if plan.schedule in ZERO_BUBBLE_SCHEDULES:
        k = ZERO_BUBBLE_WARMUP[plan.schedule]
        fewest = zero_bubble_min_microbatches(plan.pipeline_parallel, plan.schedule)
        if np.any(m < fewest):
            raise ValueError(
                f"grad_accum_steps (micro-batches) must be ≥ {k}(p − 1) + 1 = {fewest} with schedule="
                f"{plan.schedule!r} and pipeline_parallel = {plan.pipeline_parallel} (stage 0 runs {k}(p − 1) warm-up "
                f"forwards and one more before its first B; Qi et al. 2024 §2), got {plan.grad_accum_steps}"
            )


def check_capacity_factor(capacity_factor) -> float | None:
    """``capacity_factor`` as a float, None (dropless: no capacity, no padding) as None, or ValueError unless it is a
    finite number ≥ 1.

    >>> check_capacity_factor(1.25), check_capacity_factor(None)
    (1.25, None)
    >>> check_capacity_factor(0.5)
    Traceback (most recent call last):
    ...
    ValueError: capacity_factor must be None (dropless) or a number ≥ 1 (1: a perfectly balanced router), got 0.5
    """
    factor = capacity_factor
    if factor is None:
        return None
    if not (_check.is_number(factor) and math.isfinite(factor) and factor >= 1):
        raise ValueError(
            f"capacity_factor must be None (dropless) or a number ≥ 1 (1: a perfectly balanced router), got {factor!r}"
        )
    return float(factor)


def capacity_padding(capacity_factor) -> float:
    """The multiple of its even share of the routed tokens each expert computes and the all-to-alls carry: the
    capacity factor when one is set (each expert's buffer padded to it, Megatron-Core's
    ``moe_pad_expert_input_to_capacity``), 1 when dropless (None: every token routed, nothing padded; the course's
    router is balanced).

    >>> capacity_padding(None), capacity_padding(1.5)
    (1.0, 1.5)
    """
    factor = check_capacity_factor(capacity_factor)
    return 1.0 if factor is None else factor


def _data_and_context(plan: ParallelPlan):
    """d·c: the ranks that hold the same dense weights (Megatron-Core reduces gradients over data × context)."""
    return np.asarray(plan.data_parallel) * np.asarray(plan.context_parallel)


def global_batch(micro_batch, grad_accum_steps, data_parallel):
    """B_global = b · m · d samples per optimizer step (micro-batch × micro-batches per step × replicas).

    Tensor- and pipeline-parallel groups work on the *same* samples, so they add devices but not examples.

    >>> global_batch(2, 4, 128)   # Ultra-Scale Playbook: 4M tokens at seq 4096 = 1024 samples
    1024
    """
    return (
        _check.count("micro_batch", micro_batch)
        * _check.count("grad_accum_steps", grad_accum_steps)
        * _check.count("data_parallel", data_parallel)
    )


@dataclass(frozen=True)
class GlobalBatchReport:
    """What one plan's sizes make of a training step: ``plan`` (single sizes, not arrays) and the sequence length
    ``seq_len`` in tokens. The global batch b·m·d and the d·t·p devices follow, and per data-parallel replica the
    b·m examples its t·p devices work through together: tensor and pipeline groups add devices, not examples.

    >>> report = GlobalBatchReport(ParallelPlan(data_parallel=64, tensor_parallel=8, micro_batch=8,
    ...                                         grad_accum_steps=16), seq_len=2048)
    >>> report.global_batch, report.devices, report.examples_per_replica_per_step, report.tokens_per_step
    (8192, 512, 128, 16777216)
    >>> GlobalBatchReport(report.plan, seq_len=0)
    Traceback (most recent call last):
    ...
    ValueError: seq_len must be an integer ≥ 1, got 0
    """

    plan: ParallelPlan
    seq_len: int

    def __post_init__(self):
        if not isinstance(self.plan, ParallelPlan):
            raise ValueError(f"plan must be a ParallelPlan, got {type(self.plan).__name__}")
        if not all(isinstance(size, int) for size in self.plan.sizes):
            raise ValueError(f"plan must hold single sizes, not arrays, got sizes {self.plan.sizes}")
        if not isinstance(self.seq_len, int) or isinstance(self.seq_len, bool) or self.seq_len < 1:
            raise ValueError(f"seq_len must be an integer ≥ 1, got {self.seq_len!r}")

    @property
    def global_batch(self) -> int:
        """b·m·d examples per optimizer step (``global_batch``)."""
        return int(self.plan.global_batch)

    @property
    def tokens_per_step(self) -> int:
        """global_batch × seq_len."""
        return self.global_batch * self.seq_len

    @property
    def devices(self) -> int:
        """d·t·p."""
        return int(self.plan.devices)

    @property
    def examples_per_replica_per_step(self) -> int:
        """b·m: what each data-parallel replica, and so each of its t·p devices, works through in one step."""
        return int(global_batch(self.plan.micro_batch, self.plan.grad_accum_steps, 1))

    @property
    def devices_per_replica(self) -> int:
        """t·p·c: the devices of one data-parallel replica (expert parallelism adds none)."""
        return int(self.plan.replace(data_parallel=1, expert_parallel=1).devices)


def global_batch_report(micro_batch, grad_accum_steps, data_parallel, seq_len, tensor_parallel=1, pipeline_parallel=1):
    """The examples, tokens and devices of one training step (``GlobalBatchReport``): micro-batch b,
    ``grad_accum_steps`` m (micro-batches per step), ``data_parallel`` d, ``seq_len`` tokens per example, and the
    tensor- and pipeline-parallel sizes t and p, which multiply the devices but not the examples.

    >>> report = global_batch_report(8, 16, 64, seq_len=2048, tensor_parallel=8, pipeline_parallel=4)
    >>> report.global_batch, report.devices, report.devices_per_replica
    (8192, 2048, 32)
    """
    plan = ParallelPlan(
        data_parallel=data_parallel,
        tensor_parallel=tensor_parallel,
        pipeline_parallel=pipeline_parallel,
        micro_batch=micro_batch,
        grad_accum_steps=grad_accum_steps,
    )
    tokens = _check.count("seq_len", seq_len)
    for name in ("micro_batch", "grad_accum_steps", "data_parallel", "tensor_parallel", "pipeline_parallel"):
        if not isinstance(getattr(plan, name), int):
            raise ValueError(f"{name} must be a single integer, not an array")
    if not isinstance(tokens, int):
        raise ValueError("seq_len must be a single integer, not an array")
    return GlobalBatchReport(plan, tokens)


def pipeline_bubble_fraction(stages, microbatches, virtual_stages: _check.IntOrArray = 1):
    """Pipeline bubble as a fraction of the ideal time: (p−1)/(v·m) (Narayanan et al. 2021 §2.2).

    GPipe and 1F1B have the same bubble, (p−1)/m; interleaving v model chunks per device divides it by v, and
    needs m to be a multiple of p. The bubble is measured against the ideal time m·(t_F + t_bwd), so it exceeds 1
    when m < p − 1; as a share of the whole step it is (p−1)/(v·m + p − 1).

    >>> pipeline_bubble_fraction(8, 32), pipeline_bubble_fraction(8, 32, virtual_stages=2)
    (0.21875, 0.109375)
    """
    p = _check.count("stages", stages)
    m = _check.count("microbatches", microbatches)
    v = _check.count("virtual_stages", virtual_stages)
    if np.any((np.asarray(v) > 1) & (np.asarray(m) % np.asarray(p) != 0)):
        raise ValueError(f"microbatches must be a multiple of stages ({p}) when virtual_stages > 1, got {m}")
    return _check.as_result((p - 1) / (v * m))


def splits_evenly(
    model: TransformerModel,
    tensor_parallel: _check.IntOrArray = 1,
    pipeline_parallel: _check.IntOrArray = 1,
    virtual_stages: _check.IntOrArray = 1,
):
    """Whether a partition splits ``model`` evenly: t divides the attention heads and p·v divides the layers
    (``splits_context_and_experts`` checks c and e).

    The one home of the rule that ``check_plan_for_model``, ``budget.search_plans`` and the labs' options use.
    Vectorised: array arguments give a boolean array.

    >>> from course_lib.parallelism import GPT3_175B
    >>> splits_evenly(GPT3_175B, tensor_parallel=8, pipeline_parallel=8), splits_evenly(GPT3_175B, 5)
    (True, False)
    >>> splits_evenly(GPT3_175B, 8, pipeline_parallel=12, virtual_stages=2)   # 96 layers into 24 chunks
    True
    """
    t = _check.count("tensor_parallel", tensor_parallel)
    p = _check.count("pipeline_parallel", pipeline_parallel)
    v = _check.count("virtual_stages", virtual_stages)
    even = _divides(t, model.heads) & _divides(np.asarray(p) * np.asarray(v), model.layers)
    return bool(even) if even.ndim == 0 else even


def splits_context_and_experts(
    model: TransformerModel,
    tensor_parallel: _check.IntOrArray = 1,
    context_parallel: _check.IntOrArray = 1,
    context_parallel_kind: str = "ring",
    expert_parallel: _check.IntOrArray = 1,
):
    """Whether c and e split ``model`` evenly: c divides the sequence (and, for ``context_parallel_kind=
    "all_to_all"``, the query and the key/value heads each of the t tensor-parallel ranks holds: DeepSpeed-Ulysses
    gives each of the c ranks whole heads); e divides the experts, and e = 1 for a dense model. Vectorised.

    >>> from course_lib.parallelism import LLAMA3_405B, MIXTRAL_8X7B
    >>> from dataclasses import replace
    >>> splits_context_and_experts(replace(LLAMA3_405B, seq_len=131072), 8, 16)
    True
    >>> splits_context_and_experts(LLAMA3_405B, 8, 16, "all_to_all"), splits_context_and_experts(MIXTRAL_8X7B,
    ...     expert_parallel=8), splits_context_and_experts(LLAMA3_405B, expert_parallel=2)
    (False, True, False)
    >>> from course_lib.parallelism import LLAMA3_8B   # 8 KV heads: 2 a rank at t = 4, 1 at t = 8
    >>> [c for c in (1, 2, 4, 8) if splits_context_and_experts(LLAMA3_8B, 4, c, "all_to_all")]
    [1, 2]
    >>> [c for c in (1, 2, 4, 8) if splits_context_and_experts(LLAMA3_8B, 8, c, "all_to_all")]
    [1]
    """
    rules = _context_and_expert_errors(model, tensor_parallel, context_parallel, context_parallel_kind, expert_parallel)
    ok = ~np.any(np.stack(np.broadcast_arrays(*(bad for bad, _ in rules))), axis=0)
    return bool(ok) if ok.ndim == 0 else ok


def causal_attention_shares(context_parallel, split="zigzag"):
    """The share of a sequence's causal attention work (QKᵀ and the product with V) each of the c ranks does, rank
    0 first, when ``split`` (``CONTEXT_SPLITS``) cuts the sequence among them.

    Cut into n equal chunks, query chunk i attends to key chunks 0..i, the last of them half (the causal mask): its
    work is i + ½ chunk-pairs of n²/2. "contiguous" (n = c) gives rank r a share (2r + 1)/c², so the last rank does
    2 − 1/c times the mean; "zigzag" (n = 2c, chunks r and 2c − 1 − r) gives every rank 2c chunk-pairs, 1/c each.

    >>> causal_attention_shares(4, "contiguous")
    (0.0625, 0.1875, 0.3125, 0.4375)
    >>> causal_attention_shares(4)
    (0.25, 0.25, 0.25, 0.25)
    """
    c = _check.count("context_parallel", context_parallel)
    if np.ndim(c):
        raise ValueError(f"context_parallel must be one count, got {context_parallel!r}")
    split = _check.choice("split", split, CONTEXT_SPLITS)
    chunks = c if split == "contiguous" else 2 * c
    pairs = chunks * chunks / 2  # the causal half of the chunks × chunks score matrix
    held = [(r,) if split == "contiguous" else (r, 2 * c - 1 - r) for r in range(c)]
    return tuple(sum(i + 0.5 for i in mine) / pairs for mine in held)


def kv_heads_per_tensor_rank(model: TransformerModel, tensor_parallel: _check.IntOrArray = 1):
    """Key/value heads each of t tensor-parallel ranks holds: n_kv/t, or 1 when t > n_kv (Megatron-Core then gives
    each rank a copy of one: NVIDIA/Megatron-LM@core_v0.19.0 megatron/core/transformer/attention.py:353-366,
    ``num_query_groups_per_partition``). Vectorised.

    >>> from course_lib.parallelism import LLAMA3_8B   # 8 KV heads
    >>> [float(kv_heads_per_tensor_rank(LLAMA3_8B, t)) for t in (1, 4, 8, 16)]
    [8.0, 2.0, 1.0, 1.0]
    """
    assert model.kv_heads is not None  # TransformerModel resolved the default
    t = np.asarray(_check.count("tensor_parallel", tensor_parallel))
    return _check.as_result(np.where(t > model.kv_heads, 1.0, model.kv_heads / t))


def _context_and_expert_errors(model, tensor_parallel, context_parallel, context_parallel_kind, expert_parallel):
    """[(where c or e fails one rule (a boolean array), a function giving the rule's ValueError message)]: the one
    home of the rules.

    Ulysses ("all_to_all") gives each of the c ranks whole heads of those its tensor-parallel rank holds, the key/value
    heads included: Transformer Engine, which Megatron-Core's cp_comm_type "a2a" runs, asserts it
    (NVIDIA/TransformerEngine@v2.18 transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py:
    4243-4246, "requires num_heads % cp_size == 0 for Q, K, V", on the heads of one tensor-parallel rank). So c must
    divide a/t and ``kv_heads_per_tensor_rank``; the course refuses any other c, as TE does (no replication)."""
    t = np.asarray(_check.count("tensor_parallel", tensor_parallel))
    c = np.asarray(_check.count("context_parallel", context_parallel))
    e = np.asarray(_check.count("expert_parallel", expert_parallel))
    kind = _check.choice("context_parallel_kind", context_parallel_kind, CONTEXT_PARALLEL_KINDS)
    heads_here = np.where(model.heads % t == 0, model.heads // t, 0)
    kv_here = np.asarray(kv_heads_per_tensor_rank(model, t))
    kv_whole = np.where(kv_here == np.floor(kv_here), kv_here, 0).astype(int)
    ulysses = kind == "all_to_all"
    return [
        (~_divides(c, model.seq_len), lambda: f"context_parallel must divide seq_len ({model.seq_len}), got {c}"),
        (
            ulysses & ~(_divides(c, heads_here) & (heads_here > 0) & _divides(c, kv_whole) & (kv_whole > 0)),
            lambda: (
                f"context_parallel must divide the heads each tensor-parallel rank holds, {model.heads} / {t} query "
                f"heads and {model.kv_heads} / {t} key/value heads ({_shown(kv_here)} a rank), with "
                f"context_parallel_kind='all_to_all' (DeepSpeed-Ulysses gives each context rank whole Q, K and V "
                f"heads; Transformer Engine asserts num_heads % cp_size == 0 for Q, K and V), got {c}"
            ),
        ),
        ((e > 1) & (model.experts == 1), lambda: f"expert_parallel must be 1 for a dense model (experts = 1), got {e}"),
        (~_divides(e, model.experts), lambda: f"expert_parallel must divide experts ({model.experts}), got {e}"),
    ]


def _shown(values) -> str:
    """Numbers as a message shows them: 2 rather than 2.0, an array as a list."""
    return np.array2string(np.asarray(values, dtype=float), formatter={"float_kind": lambda x: f"{x:g}"})


def _divides(parts, whole):
    """Whether ``parts`` divides ``whole`` (element-wise)."""
    return np.asarray(whole) % np.asarray(parts) == 0


def check_tensor_split(heads, tensor_parallel) -> None:
    """Raise ValueError unless t divides the attention heads: ``splits_evenly``'s first half, on raw numbers, for the
    formulas that take the head count rather than a model.

    >>> check_tensor_split(96, 8)
    >>> check_tensor_split(96, 5)
    Traceback (most recent call last):
    ...
    ValueError: tensor_parallel must divide heads (96), got 5
    """
    a = _check.count("heads", heads)
    t = _check.count("tensor_parallel", tensor_parallel)
    if not np.all(_divides(t, a)):
        raise ValueError(f"tensor_parallel must divide heads ({a}), got {t}")


def check_pipeline_split(layers, pipeline_parallel, virtual_stages: _check.IntOrArray = 1) -> None:
    """Raise ValueError unless p·v divides the layers: ``splits_evenly``'s second half, on raw numbers.

    >>> check_pipeline_split(96, 8, 2)
    >>> check_pipeline_split(80, 3)
    Traceback (most recent call last):
    ...
    ValueError: pipeline_parallel × virtual_stages must divide layers (80), got 3 × 1
    """
    n = _check.count("layers", layers)
    p = _check.count("pipeline_parallel", pipeline_parallel)
    v = _check.count("virtual_stages", virtual_stages)
    if not np.all(_divides(np.asarray(p) * np.asarray(v), n)):
        raise ValueError(f"pipeline_parallel × virtual_stages must divide layers ({n}), got {p} × {v}")


def check_plan_for_model(model: TransformerModel, plan: ParallelPlan, calibration: Calibration | None = None) -> None:
    """Raise ValueError if the plan cannot split this model (heads, layers and virtual stages must divide evenly).

    With a ``Calibration`` the pipeline may split the layers unevenly (as Megatron-LM and nanotron allow; the heaviest
    stage sets memory and time; nanotron even runs more stages than layers, its embedding and output layer being
    stages of their own), and a plan its framework does not run is refused with the framework's cited rule
    (``Framework.refusal``: a ZeRO stage it lacks, or combines with no pipeline, a schedule it lacks), as is
    ``optimizer_sync=False`` (no preset skips the optimizer step's synchronisation). The ideal model (no calibration)
    has no framework and allows all of them.

    >>> from course_lib.parallelism import GPT3_175B
    >>> check_plan_for_model(GPT3_175B, ParallelPlan(tensor_parallel=5))
    Traceback (most recent call last):
    ...
    ValueError: tensor_parallel must divide heads (96), got 5
    """
    check_tensor_split(model.heads, plan.tensor_parallel)
    if calibration is not None:
        refusal = calibration.framework.refusal(plan)
        if refusal:
            raise ValueError(refusal)
        if not plan.optimizer_sync:
            raise ValueError(
                "optimizer_sync must be True with a calibration: the framework presets synchronise the pipeline "
                "stages at the optimizer step (gradient clipping all-reduces the norm across them); Qi et al. 2024 "
                "§4's post-validation is in their own fork. The ideal model (calibration=None) takes False"
            )
    for bad, message in _context_and_expert_errors(
        model, plan.tensor_parallel, plan.context_parallel, plan.context_parallel_kind, plan.expert_parallel
    ):
        if np.any(bad):
            raise ValueError(message())
    if calibration is None:
        check_pipeline_split(model.layers, plan.pipeline_parallel, plan.virtual_stages)


def stage_layers(layers, pipeline_parallel):
    """Layers on the heaviest pipeline stage: ⌈l/p⌉ (an uneven split puts one more layer on some stages).

    >>> stage_layers(16, 3), stage_layers(96, 8)
    (6, 12)
    """
    l = _check.count("layers", layers)
    p = _check.count("pipeline_parallel", pipeline_parallel)
    return -(-l // p)
