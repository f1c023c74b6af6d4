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

import numpy as np

from .. import _check
from ..pipeline import SIMULATED_SCHEDULES, ZERO_BUBBLE_SCHEDULES
from .fp8 import FP8_RECIPES, Fp8Recipe
from .plan import ZERO_STAGES, ParallelPlan

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
# The pipeline schedules a framework runs unless its preset says fewer: the ones every pipeline engine of this course's
# presets but nanotron's and DeepSpeed's offers (the zero-bubble ones need a split backward: ``Framework.schedules``).
_CLASSIC_SCHEDULES = ("gpipe", "1f1b", "interleaved")


@dataclass(frozen=True)
class Framework:
    """How one training framework runs a plan, each behaviour cited in ``sources`` ({field: citation}).

    What it stores: ``precision`` (a ``PRECISION_RECIPES`` key); ``logits_bytes_per_element`` (bytes per vocabulary
    entry and token of the last stage's logits: bf16 logits 2 B + the fp32 copy the loss takes 4 B + its fp32 gradient
    4 B = 10 B).

    What it runs (``runs``, ``refusal``): ``zero_stages`` (the ZeRO stages it has at all); ``max_zero_stage_with_
    pipeline`` (the highest of them it combines with pipeline parallelism); ``schedules`` (the pipeline schedules it
    runs, ``pipeline.SIMULATED_SCHEDULES`` keys; empty: no pipeline parallelism at all). ``split_backward`` follows:
    whether one of them is a zero-bubble schedule, which runs the backward as two passes, B and W.

    How it communicates: ``bucket_bytes`` (the size of a data-parallel gradient or parameter bucket; None: one
    collective per layer, as FSDP2 issues one per ``fully_shard`` unit and torchtitan makes each transformer block a
    unit); ``reshard_with_pipeline`` (False: with a pipeline, ZeRO-3 keeps a stage's 16-bit parameters and fp32
    gradients whole through the step, gathering once and reduce-scattering once per step, as torchtitan runs FSDP2).

    What it overlaps: ``overlap_grad_reduce`` (the ZeRO stages under which a gradient bucket is reduced while the
    backward pass computes earlier layers' gradients); ``prefetch_parameter_gathers`` (the ZeRO stages under which a
    parameter all-gather runs while the previous layer computes, or the next step's first forward; the rest gather
    on the critical path); ``tensor_parallel_overlap`` (a ``TENSOR_PARALLEL_OVERLAPS`` choice); ``pipeline_overlap``
    (whether a stage's sends and receives run while it computes another micro-batch, as interleaved schedules with
    overlapped P2P do); ``fp8`` (None: bf16 GEMMs; an ``Fp8Recipe``, e.g. from ``FP8_RECIPES``: the linear layers'
    GEMMs in FP8 as that recipe runs them, module ``fp8``; no preset has one: ``replace(MEGATRON_CORE, fp8=TE_FP8)``
    opts in).

    >>> MEGATRON_CORE.precision, PRECISION_RECIPES[MEGATRON_CORE.precision]
    ('fp32-main-grads', (2, 0, 4, 12))
    >>> [f.name for f in FRAMEWORKS.values() if f.max_zero_stage_with_pipeline == 3]
    ['PyTorch FSDP2 with pipelining (torchtitan)']
    >>> NANOTRON.zero_stages, NANOTRON.schedules, DEEPSPEED.overlap_grad_reduce
    ((0, 1), ('gpipe', '1f1b'), (3,))
    >>> from dataclasses import replace
    >>> from course_lib.parallelism import FP8_RECIPES
    >>> replace(MEGATRON_CORE, fp8=FP8_RECIPES["te-param-gather"]).fp8.gather_bytes
    1.0
    """

    name: str
    precision: str = "bf16-fp32-grads"
    logits_bytes_per_element: float = 10.0
    bucket_bytes: float | None = 25e6
    zero_stages: tuple[int, ...] = ZERO_STAGES
    max_zero_stage_with_pipeline: int = 1
    schedules: tuple[str, ...] = _CLASSIC_SCHEDULES
    reshard_with_pipeline: bool = True
    overlap_grad_reduce: tuple[int, ...] = ZERO_STAGES
    prefetch_parameter_gathers: tuple[int, ...] = ZERO_STAGES
    tensor_parallel_overlap: str = "none"
    pipeline_overlap: bool = False
    sources: tuple[tuple[str, str], ...] = ()
    fp8: Fp8Recipe | None = None

    def __post_init__(self):
        if self.fp8 is not None and not isinstance(self.fp8, Fp8Recipe):
            choices = ", ".join(repr(key) for key in FP8_RECIPES)
            raise ValueError(f"fp8 must be None or a parallelism.Fp8Recipe (FP8_RECIPES: {choices}), got {self.fp8!r}")
        _check.choice("precision", self.precision, tuple(PRECISION_RECIPES))
        _check.nonnegative("logits_bytes_per_element", self.logits_bytes_per_element)
        if self.bucket_bytes is not None:
            _check.positive("bucket_bytes", self.bucket_bytes)
        for name in ("zero_stages", "overlap_grad_reduce", "prefetch_parameter_gathers"):
            _check_subset(name, getattr(self, name), ZERO_STAGES)
        if not self.zero_stages:
            raise ValueError("zero_stages must name at least one ZeRO stage (0 is plain data parallelism)")
        _check.choice("max_zero_stage_with_pipeline", self.max_zero_stage_with_pipeline, ZERO_STAGES)
        _check_subset("schedules", self.schedules, SIMULATED_SCHEDULES)
        _check.flag("reshard_with_pipeline", self.reshard_with_pipeline)
        _check.choice("tensor_parallel_overlap", self.tensor_parallel_overlap, TENSOR_PARALLEL_OVERLAPS)
        _check.flag("pipeline_overlap", self.pipeline_overlap)

    @property
    def split_backward(self) -> bool:
        """Whether its pipeline runs the backward as two passes, B and W: one of its ``schedules`` is zero-bubble."""
        return any(schedule in ZERO_BUBBLE_SCHEDULES for schedule in self.schedules)

    @property
    def zero_stages_with_pipeline(self) -> tuple[int, ...]:
        """The ZeRO stages it runs with p > 1 (none without a pipeline schedule): ``runs``'s rule for p > 1.

        >>> NANOTRON.zero_stages_with_pipeline, MEGATRON_CORE.zero_stages_with_pipeline, FSDP2.zero_stages_with_pipeline
        ((0, 1), (0, 1), ())
        """
        if not self.schedules:
            return ()
        return tuple(stage for stage in self.zero_stages if stage <= self.max_zero_stage_with_pipeline)

    @property
    def short_name(self) -> str:
        """The name without its parenthesis: "Megatron-LM", "nanotron"."""
        return self.name.split(" (")[0]

    def runs(self, zero_stage, pipeline_parallel, schedule="1f1b"):
        """Whether it runs ZeRO ``zero_stage`` with ``pipeline_parallel`` stages under ``schedule`` (arrays give
        arrays): a stage it has (``zero_stages``); with p > 1 also at most ``max_zero_stage_with_pipeline`` and a
        schedule it runs (``schedules``). ``refusal`` says why not; ``check_plan_for_model`` raises it.

        >>> NANOTRON.runs(1, 8), NANOTRON.runs(2, 1), NANOTRON.runs(1, 8, "interleaved"), FSDP2_PIPELINE.runs(3, 8)
        (True, False, False, True)
        """
        stage, p = np.asarray(zero_stage), np.asarray(pipeline_parallel)
        runs = np.isin(stage, self.zero_stages) & (
            (p == 1) | ((stage <= self.max_zero_stage_with_pipeline) & (schedule in self.schedules))
        )
        return runs if np.ndim(runs) else bool(runs)

    def refusal(self, plan: ParallelPlan) -> str:
        """Why it does not run ``plan``, with the rule's citation ("" when it does): the one statement of the rule
        ``runs`` checks, which ``check_plan_for_model``, the reports and the labs all give.

        >>> from course_lib.parallelism import ParallelPlan
        >>> NANOTRON.refusal(ParallelPlan(pipeline_parallel=4, zero_stage=1))
        ''
        >>> print(NANOTRON.refusal(ParallelPlan(data_parallel=8, zero_stage=2)))  # doctest: +ELLIPSIS
        zero_stage=2 is not run by nanotron: it runs ZeRO-0 and ZeRO-1 only (huggingface/nanotron@2411b02 README...)
        """
        stage, p = plan.zero_stage, np.asarray(plan.pipeline_parallel)
        name = self.short_name
        if stage not in self.zero_stages:
            stages = " and ".join(f"ZeRO-{s}" for s in self.zero_stages)
            return f"zero_stage={stage} is not run by {name}: it runs {stages} only{self._because('zero_stages')}"
        if not np.any(p > 1):
            return ""
        if not self.schedules:
            return (
                f"pipeline_parallel={plan.pipeline_parallel} is not run by {name}: it has no pipeline parallelism"
                f"{self._because('schedules')}"
            )
        if stage > self.max_zero_stage_with_pipeline:
            return (
                f"zero_stage={stage} with pipeline_parallel={plan.pipeline_parallel} is not run by {name}: it combines "
                f"no ZeRO stage above {self.max_zero_stage_with_pipeline} with a pipeline"
                f"{self._because('max_zero_stage_with_pipeline')}"
            )
        if plan.schedule not in self.schedules:
            offered = ", ".join(repr(s) for s in self.schedules)
            return (
                f"schedule={plan.schedule!r} is not run by {name}: its pipeline schedules are {offered}"
                f"{self._because('schedules')}"
            )
        return ""

    def hides_grad_reduce(self, zero_stage) -> bool:
        """Whether ZeRO ``zero_stage``'s gradient buckets are reduced behind the backward (``overlap_grad_reduce``)."""
        return zero_stage in self.overlap_grad_reduce

    def prefetches_gathers(self, zero_stage) -> bool:
        """Whether ZeRO ``zero_stage``'s parameter gathers run behind compute (``prefetch_parameter_gathers``)."""
        return zero_stage in self.prefetch_parameter_gathers

    def cited(self, field: str) -> str:
        """The citation of ``field``'s value ("" for a field the preset leaves at the default)."""
        return dict(self.sources).get(field, "")

    def _because(self, field: str) -> str:
        """ " (<citation>)" for a refusal's sentence, "" for a field without one."""
        cited = self.cited(field)
        return f" ({cited})" if cited else ""


def _check_subset(name, values, choices) -> None:
    """Raise ValueError unless ``values`` is a tuple of distinct ``choices``."""
    if not isinstance(values, tuple) or len(set(values)) != len(values) or any(v not in choices for v in values):
        raise ValueError(f"{name} must be a tuple of distinct values from {choices}, got {values!r}")


# The presets. Each cites the framework's source at a release (repository@tag path:line) or its own documentation.
_MEGATRON = "NVIDIA/Megatron-LM@core_v0.19.0 "
_DEEPSPEED = "deepspeedai/DeepSpeed@v0.19.5 "
_TORCH = "pytorch/pytorch@v2.14.1 (5c48869) "
_TORCHTITAN = "pytorch/torchtitan@b5bcd76 "
_NANOTRON = "huggingface/nanotron@2411b02 "

MEGATRON_CORE = Framework(
    name="Megatron-LM (Core) with the distributed optimizer, --overlap-grad-reduce and --overlap-param-gather",
    precision="fp32-main-grads",
    bucket_bytes=160e6,
    max_zero_stage_with_pipeline=1,
    schedules=("1f1b", "interleaved"),
    tensor_parallel_overlap="backward",
    pipeline_overlap=True,
    sources=(
        (
            "precision",
            _MEGATRON + "docs/user-guide/features/dist_optimizer.md:14-20: bf16 parameters, fp32 "
            "gradients: 18 B per parameter, 6 + 12/d with the distributed optimizer; megatron/training/arguments.py:"
            "1181-1194: bf16 accumulates and reduces gradients in fp32; tensor_parallel/layers.py:679-681: the weight "
            "gradient GEMM accumulates into the fp32 main_grad",
        ),
        (
            "bucket_bytes",
            _MEGATRON + "megatron/core/distributed/distributed_data_parallel.py:68-72: buckets of "
            "max(40 M, 1 M × d) parameters when overlapping (160 MB of fp32 gradients up to d = 40); :95-106: one "
            "bucket on pipeline stages after the first",
        ),
        (
            "max_zero_stage_with_pipeline",
            _MEGATRON + "the distributed optimizer (ZeRO-1) runs with pipelines "
            "(functional test gpt3_mcore_te_tp1_pp4_vp1_dist_optimizer_overlap_grad_reduce_param_gather); "
            "arguments.py:997-1007: --use-torch-fsdp2 is not supported with pipeline parallelism",
        ),
        (
            "zero_stages",
            _MEGATRON + "docs/user-guide/features/dist_optimizer.md:14-20: the distributed optimizer is ZeRO-1; "
            "megatron/core/distributed/distributed_data_parallel_config.py: Megatron-FSDP's "
            "data_parallel_sharding_strategy 'no_shard', 'optim', 'optim_grads', 'optim_grads_params' (ZeRO-0 to 3)",
        ),
        (
            "overlap_grad_reduce",
            _MEGATRON + "distributed_data_parallel_config.py:18-22 (--overlap-grad-reduce); "
            "param_and_grad_buffer.py:863-879: buckets fire during the last micro-batch's backward only",
        ),
        (
            "prefetch_parameter_gathers",
            _MEGATRON + "distributed_data_parallel_config.py:18-22 "
            "(--overlap-param-gather: the all-gather overlaps the next forward, from a forward pre-hook, "
            "distributed_data_parallel.py:394-397)",
        ),
        (
            "tensor_parallel_overlap",
            _MEGATRON + "megatron/core/tensor_parallel/layers.py:775-790: the input "
            "gradient's all-reduce (reduce-scatter with sequence parallelism) runs asynchronously with the weight "
            "gradient GEMM; --tp-comm-overlap (forward too) needs sequence parallelism and is off by default",
        ),
        (
            "pipeline_overlap",
            _MEGATRON + "arguments.py:976-984 and :2965-2967: P2P overlap is on by default and "
            "switched off outside the interleaved schedule",
        ),
        (
            "schedules",
            _MEGATRON + "megatron/core/pipeline_parallel/schedules.py:156-163: get_forward_backward_func "
            "runs 1F1B, interleaved 1F1B or no pipeline (no GPipe), each backward whole; delay_wgrad_compute "
            "(transformer/transformer_config.py:2748-2752) defers weight gradients only to overlap the MoE "
            "all-to-alls (it requires overlap_moe_expert_parallel_comm), not as a pipeline schedule",
        ),
    ),
)
DEEPSPEED = Framework(
    name="DeepSpeed ZeRO (defaults of v0.19.5)",
    precision="fp16-zero",
    bucket_bytes=1e9,
    max_zero_stage_with_pipeline=1,
    schedules=("1f1b",),
    overlap_grad_reduce=(3,),
    prefetch_parameter_gathers=(3,),
    tensor_parallel_overlap="none",
    pipeline_overlap=False,
    sources=(
        (
            "precision",
            _DEEPSPEED + "deepspeed/runtime/engine.py:1444-1455: gradients accumulate in the model's "
            "dtype (bf16) unless grad_accum_dtype says fp32; zero/stage3.py:711-712: ZeRO-3's gradient partitions in "
            "that dtype; the fp32 gradient of a partition exists only during the step (stage_1_and_2.py:2335-2341): "
            "2 + 2 + 12 = 16 B, ZeRO's recipe (its memory estimators count 18, with that transient fp32 gradient)",
        ),
        (
            "bucket_bytes",
            _DEEPSPEED + "deepspeed/runtime/zero/config.py:113: reduce_bucket_size 5e8 elements "
            "(1 GB of bf16 gradients); :215 stage3_prefetch_bucket_size 5e7 (the documentation says 5e8)",
        ),
        (
            "max_zero_stage_with_pipeline",
            _DEEPSPEED + "deepspeed/runtime/pipe/engine.py:76-77: 'ZeRO-2 and "
            "ZeRO-3 are incompatible with pipeline parallelism'",
        ),
        (
            "overlap_grad_reduce",
            _DEEPSPEED + "zero/config.py:138, :384-385: overlap_comm defaults to False, and to True for "
            "ZeRO-3 only (the documentation says false): below stage 3 the gradients are reduced after the backward; "
            "the pipeline engine reduces after all micro-batches (pipe/schedule.py:237-241)",
        ),
        (
            "prefetch_parameter_gathers",
            _DEEPSPEED + "ZeRO-1/2: zero/stage_1_and_2.py:2367-2370, step() all-gathers the updated weights "
            "before it returns ('ready for next round forward'), on the critical path; ZeRO-3: "
            "zero/partitioned_param_coordinator.py:451-453, the next submodules' parameters are all-gathered ahead, "
            "in the order traced in the first step, up to stage3_prefetch_bucket_size elements",
        ),
        (
            "schedules",
            _DEEPSPEED + "deepspeed/runtime/pipe/schedule.py:189-241: TrainSchedule, the one training schedule, is "
            "1F1B-like (one ForwardPass and one BackwardPass instruction per micro-batch, each backward whole, "
            "BackwardPass :412); no interleaving, no split backward",
        ),
    ),
)
FSDP2 = Framework(
    name="PyTorch FSDP2 (fully_shard), without pipelining",
    precision="fp16-zero",
    bucket_bytes=None,
    max_zero_stage_with_pipeline=0,
    schedules=(),
    sources=(
        (
            "precision",
            _TORCH + "torch/distributed/fsdp/_fully_shard/_fsdp_api.py:21-31: the sharded parameter "
            "keeps its dtype (fp32) and the optimizer steps on it; _fsdp_collectives.py:596-600, :696: gradients "
            "reduce-scattered in fp32 into fp32 shards: 4 + 4 + 8 = 16 B per parameter over d, the total of ZeRO's "
            "recipe (torchtitan's defaults, torchtitan/config/configs.py:87-102: fp32 model, bf16 compute)",
        ),
        (
            "bucket_bytes",
            _TORCH + "_fsdp_param_group.py: one FSDPParamGroup per fully_shard call, its parameters all-gathered "
            "and their gradients reduce-scattered as one flat buffer (foreach_all_gather, foreach_reduce in "
            "_fsdp_collectives.py); " + _TORCHTITAN + "torchtitan/models/llama3/infra/parallelize.py apply_fsdp: "
            "fully_shard on each transformer block, so one collective per layer, however big",
        ),
        *(
            (
                field,
                "NVIDIA/Megatron-LM@core_v0.19.0 megatron/training/arguments.py:997-1007: "
                "'--use-torch-fsdp2 is not supported with pipeline parallelism': no pipeline at all (torchtitan "
                "combines them: FSDP2_PIPELINE)",
            )
            for field in ("max_zero_stage_with_pipeline", "schedules")
        ),
        (
            "overlap_grad_reduce",
            _TORCH + "_fsdp_param_group.py:88-93: a reduce-scatter stream of its own, beside the backward",
        ),
        (
            "prefetch_parameter_gathers",
            _TORCH + "_fsdp_param_group.py:88-93, :854-856: the next unit's "
            "all-gather is issued during the current unit's forward (the previous unit's during backward)",
        ),
    ),
)
FSDP2_PIPELINE = replace(
    FSDP2,
    name="PyTorch FSDP2 with pipelining (torchtitan)",
    max_zero_stage_with_pipeline=3,
    schedules=("gpipe", "1f1b", "interleaved", "zb-h1"),
    reshard_with_pipeline=False,
    sources=(
        *(source for source in FSDP2.sources if source[0] not in ("max_zero_stage_with_pipeline", "schedules")),
        (
            "max_zero_stage_with_pipeline",
            _TORCHTITAN + "torchtitan/models/llama3/parallelize.py:68-78: "
            "apply_fsdp_to_decoder(..., pp_enabled=...); Llama 3 (arXiv 2407.21783 §3.3.2) ran FSDP with pipeline "
            "parallelism, sharding optimizer states and gradients",
        ),
        (
            "reshard_with_pipeline",
            _TORCHTITAN + "torchtitan/distributed/fsdp.py:129-132: with pipelining, "
            "parameters are not resharded after forward; " + _TORCH + "torch/distributed/pipelining/stage.py:935-939, "
            ":1262-1275: no gradient sync and no reshard after backward until one reduce-scatter after the last "
            "micro-batch (the stage's bf16 parameters and fp32 gradients stay whole during the step)",
        ),
        (
            "schedules",
            _TORCHTITAN + "torchtitan/config/configs.py:216-223: any schedule of torch.distributed.pipelining "
            "by name (get_schedule_class); " + _TORCH + "torch/distributed/pipelining/schedules.py get_schedule_class "
            "maps GPipe, 1F1B, Interleaved1F1B, LoopedBFS, InterleavedZeroBubble ('the ZB1P schedule' of Qi et al. "
            "2024: ZB-H1's memory, the backward as BACKWARD_INPUT and BACKWARD_WEIGHT actions), ZBVZeroBubble and "
            "DualPipeV: no ZB-H2 (class docstrings read; line numbers not checked at v2.14.1)",
        ),
    ),
)
NANOTRON = Framework(
    name="nanotron",
    precision="fp32-main-grads",
    bucket_bytes=25e6,
    zero_stages=(0, 1),
    max_zero_stage_with_pipeline=1,
    schedules=("gpipe", "1f1b"),
    prefetch_parameter_gathers=(),
    tensor_parallel_overlap="none",
    pipeline_overlap=False,
    sources=(
        (
            "precision",
            _NANOTRON + "src/nanotron/optim/gradient_accumulator.py:66-95: accumulate_grad_in_fp32 "
            "keeps an fp32 gradient buffer for every parameter and fp32 master weights for the ones the rank updates "
            "(bf16 model, config.py:311-317): 2 + 4 + 12 = 18 B (read from the code; nanotron documents no table)",
        ),
        (
            "bucket_bytes",
            _NANOTRON + "src/nanotron/config/config.py:313: ddp_bucket_cap_mb 25 (MiB: 26.2 MB; the model takes 25 MB)",
        ),
        (
            "zero_stages",
            _NANOTRON + "README.md:172, :182: ZeRO-1 only (ZeRO-3 on the roadmap); optim/zero.py:26 "
            "(ZeroDistributedOptimizer shards the optimizer state only)",
        ),
        (
            "max_zero_stage_with_pipeline",
            _NANOTRON + "README.md:172, :182: ZeRO-1 only, with or without a pipeline",
        ),
        (
            "overlap_grad_reduce",
            _NANOTRON + "gradient_accumulator.py:335, :383-386: buckets all-reduced "
            "asynchronously during the last micro-batch's backward (parallel/pipeline_parallel/engine.py:112-116)",
        ),
        (
            "prefetch_parameter_gathers",
            _NANOTRON + "optim/zero.py:118-119: the updated parameters are all-gathered after the optimizer step",
        ),
        (
            "tensor_parallel_overlap",
            _NANOTRON + "parallel/tensor_parallel/functional.py:285-287: "
            "tp_linear_async_communication (off by default, parallelism_config.py:47-48) overlaps only the forward "
            "all-gather of a column linear with its local shard's GEMM",
        ),
        ("pipeline_overlap", _NANOTRON + "README.md:170, :185: AFAB and 1F1B engines, no interleaving"),
        (
            "schedules",
            _NANOTRON + "README.md:170, :185: AFAB (all forward, all backward: GPipe) and 1F1B only, no interleaving; "
            "parallel/pipeline_parallel/engine.py:175, :235: the two engines, each backward whole",
        ),
    ),
)
# The defaults of a bare ``Calibration()``: no framework's in particular (every ZeRO stage and classic schedule,
# gradient buckets reduced and ZeRO gathers prefetched behind compute, no tensor-parallel or P2P overlap).
GENERIC = Framework(name="generic (ZeRO gathers prefetched, no tensor-parallel or P2P overlap)")
# The pessimistic bound, no framework: every transfer that some framework overlaps, exposed. Its stored bytes are
# stated here, not borrowed from a preset: Megatron-LM's recipe (18 B per parameter) and nanotron's 25 MB buckets.
EXPOSED = Framework(
    name="exposed (no overlap: the pessimistic bound)",
    precision="fp32-main-grads",
    bucket_bytes=25e6,
    overlap_grad_reduce=(),
    prefetch_parameter_gathers=(),
    tensor_parallel_overlap="none",
    pipeline_overlap=False,
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
