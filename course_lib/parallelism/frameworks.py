"""Training frameworks as the model sees them: how each one stores a parameter, what it overlaps with what, and
what it can combine (``Framework``, with the presets ``MEGATRON_CORE``, ``DEEPSPEED``, ``FSDP2``,
``FSDP2_PIPELINE`` and ``NANOTRON``, catalogued in ``FRAMEWORKS``).

A framework's behaviour is not physics and not a fit: each preset states its behaviours with the framework's own
documentation or source beside them (``Framework.sources``). The calibrated model (``budget.step_time``,
``memory_breakdown``, ``budget.search_plans``) runs a plan as its ``Calibration``'s framework would, or as the
``framework=`` argument says. ``EXPOSED`` is no framework: it is the pessimistic bound (nothing overlaps that could),
kept to show what the overlaps are worth.

This module sits between ``plan`` (whose ZeRO stages it checks) and ``calibration``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import _check
from .plan import ZERO_STAGES

__all__ = [
    "PRECISION_RECIPES",
    "TENSOR_PARALLEL_OVERLAPS",
    "Framework",
    "MEGATRON_CORE",
    "DEEPSPEED",
    "FSDP2",
    "FSDP2_PIPELINE",
    "NANOTRON",
    "GENERIC",
    "EXPOSED",
    "FRAMEWORKS",
    "resolve_framework",
]

# Bytes per parameter a device holds before any sharding: (16-bit parameters, 16-bit gradients, fp32 gradient
# buffer, optimizer state with the fp32 master weights). ZeRO-1 shards the last over d, ZeRO-2 also the two gradient
# terms, ZeRO-3 also the parameters (``memory.calibrated_memory_breakdown``).
# - "fp16-zero": ZeRO's recipe (Rajbhandari et al. 2020 §3.1): 2 + 2 + 12 = 16 B.
# - "bf16-fp32-grads": bf16 gradients accumulated into an fp32 buffer beside them: 2 + 2 + 4 + 12 = 20 B.
# - "fp32-main-grads": the bf16 gradient replaced by an fp32 main gradient (Megatron-LM's gradient accumulation
#   fusion writes the weight gradient straight into it): 2 + 4 + 12 = 18 B, "6 + 12/d" with the distributed optimizer.
PRECISION_RECIPES = {
    "fp16-zero": (2, 2, 0, 12),
    "bf16-fp32-grads": (2, 2, 4, 12),
    "fp32-main-grads": (2, 0, 4, 12),
}
# What a framework hides of the tensor-parallel collectives: "none" (all on the critical path); "backward" (the
# backward all-reduce of the input gradient runs while the weight-gradient GEMM computes); "all" (also the forward
# ones, the GEMMs split into chunks that alternate with their communication).
TENSOR_PARALLEL_OVERLAPS = ("none", "backward", "all")


@dataclass(frozen=True)
class Framework:
    """How one training framework runs a plan, each behaviour cited in ``sources`` ({field: citation}).

    ``precision`` (a ``PRECISION_RECIPES`` key); ``logits_bytes_per_element`` (bytes per vocabulary entry and token
    of the last stage's logits: bf16 logits 2 B + the fp32 copy the loss takes 4 B + its fp32 gradient 4 B = 10 B);
    ``bucket_bytes`` (the size of a data-parallel gradient or parameter bucket); ``max_zero_stage_with_pipeline`` (the
    highest ZeRO stage it combines with pipeline parallelism); ``overlap_grad_reduce`` (whether a gradient bucket is
    reduced while the backward pass computes earlier layers' gradients); ``prefetch_parameter_gathers`` (whether a
    ZeRO parameter all-gather runs while the previous layer computes, or the next step's first forward);
    ``tensor_parallel_overlap`` (a ``TENSOR_PARALLEL_OVERLAPS`` choice); ``pipeline_overlap`` (whether a stage's
    sends and receives run while it computes another micro-batch, as interleaved schedules with overlapped P2P do).

    >>> MEGATRON_CORE.precision, PRECISION_RECIPES[MEGATRON_CORE.precision]
    ('fp32-main-grads', (2, 0, 4, 12))
    >>> [f.name for f in FRAMEWORKS.values() if f.max_zero_stage_with_pipeline == 3]
    ['PyTorch FSDP2 with pipelining (torchtitan)']
    """

    name: str
    precision: str = "bf16-fp32-grads"
    logits_bytes_per_element: float = 10.0
    bucket_bytes: float = 25e6
    max_zero_stage_with_pipeline: int = 1
    overlap_grad_reduce: bool = True
    prefetch_parameter_gathers: bool = True
    tensor_parallel_overlap: str = "none"
    pipeline_overlap: bool = False
    sources: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        _check.choice("precision", self.precision, tuple(PRECISION_RECIPES))
        _check.nonnegative("logits_bytes_per_element", self.logits_bytes_per_element)
        _check.positive("bucket_bytes", self.bucket_bytes)
        _check.choice("max_zero_stage_with_pipeline", self.max_zero_stage_with_pipeline, ZERO_STAGES)
        _check.flag("overlap_grad_reduce", self.overlap_grad_reduce)
        _check.flag("prefetch_parameter_gathers", self.prefetch_parameter_gathers)
        _check.choice("tensor_parallel_overlap", self.tensor_parallel_overlap, TENSOR_PARALLEL_OVERLAPS)
        _check.flag("pipeline_overlap", self.pipeline_overlap)

    def cited(self, field: str) -> str:
        """The citation of ``field``'s value ("" for a field the preset leaves at the default)."""
        return dict(self.sources).get(field, "")


# The presets. Each cites the framework's source at a release (repository, path, line) or its documentation.
MEGATRON_CORE = Framework(
    name="Megatron-LM (Core)",
    precision="fp32-main-grads",
    bucket_bytes=40e6,
    max_zero_stage_with_pipeline=1,
    prefetch_parameter_gathers=True,
    tensor_parallel_overlap="backward",
    pipeline_overlap=True,
    sources=(),
)
DEEPSPEED = Framework(
    name="DeepSpeed (ZeRO)",
    precision="fp16-zero",
    bucket_bytes=5e8,
    max_zero_stage_with_pipeline=1,
    prefetch_parameter_gathers=True,
    tensor_parallel_overlap="none",
    pipeline_overlap=False,
    sources=(),
)
FSDP2 = Framework(
    name="PyTorch FSDP2",
    precision="fp16-zero",
    max_zero_stage_with_pipeline=0,
    prefetch_parameter_gathers=True,
    sources=(),
)
FSDP2_PIPELINE = replace(FSDP2, name="PyTorch FSDP2 with pipelining (torchtitan)", max_zero_stage_with_pipeline=3)
NANOTRON = Framework(
    name="nanotron",
    precision="bf16-fp32-grads",
    max_zero_stage_with_pipeline=1,
    prefetch_parameter_gathers=False,
    tensor_parallel_overlap="none",
    pipeline_overlap=False,
    sources=(),
)
# The defaults of a bare ``Calibration()``: no framework's in particular (ZeRO gathers prefetched, nothing else
# overlapped).
GENERIC = Framework(name="generic (ZeRO gathers prefetched, no tensor-parallel or P2P overlap)")
# The pessimistic bound: every transfer that some framework overlaps, exposed.
EXPOSED = replace(
    NANOTRON,
    name="exposed (no overlap: the pessimistic bound)",
    overlap_grad_reduce=False,
    prefetch_parameter_gathers=False,
    tensor_parallel_overlap="none",
    pipeline_overlap=False,
    sources=(),
)
FRAMEWORKS = {
    "megatron": MEGATRON_CORE,
    "deepspeed": DEEPSPEED,
    "fsdp2": FSDP2,
    "fsdp2-pipeline": FSDP2_PIPELINE,
    "nanotron": NANOTRON,
    "generic": GENERIC,
    "exposed": EXPOSED,
}


def resolve_framework(framework) -> Framework:
    """A ``Framework`` from a preset's key in ``FRAMEWORKS`` or a ``Framework`` itself.

    >>> resolve_framework("megatron") is MEGATRON_CORE
    True
    >>> resolve_framework("jax")
    Traceback (most recent call last):
    ...
    ValueError: framework must be a parallelism.Framework or one of 'megatron', 'deepspeed', 'fsdp2', \
'fsdp2-pipeline', 'nanotron', 'generic', 'exposed', got 'jax'
    """
    if isinstance(framework, Framework):
        return framework
    if isinstance(framework, str) and framework in FRAMEWORKS:
        return FRAMEWORKS[framework]
    choices = ", ".join(repr(key) for key in FRAMEWORKS)
    raise ValueError(f"framework must be a parallelism.Framework or one of {choices}, got {framework!r}")
