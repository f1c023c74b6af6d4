"""Parallelism: how a training step is split across devices, and what each split costs in memory and traffic.

Four ways to split, often combined (Narayanan et al. 2021 call the sizes d, t, p with d·t·p = n):
data parallel (each replica sees different examples; gradients are averaged), tensor parallel (each matrix
multiply is split; partial results are combined inside every layer), pipeline parallel (groups of layers on
different devices; activations flow between stages) and state sharding (ZeRO: parameters, gradients and
optimizer state partitioned across the data-parallel group instead of replicated). Two more axes for long
sequences and mixtures of experts: context parallel (c ranks each hold s/c tokens of every sequence; ring attention
or DeepSpeed-Ulysses' all-to-alls; d·t·p·c = n) and expert parallel (e of the d·c ranks share a layer's experts, and
tokens reach them in all-to-alls).

Numeric fields of ``ParallelPlan`` (and the numeric arguments of every function here) may be numpy arrays, to
evaluate many plans at once; the plan search does that. Bytes are decimal, counts are whole numbers.

One concept per module, each importing only the ones listed before it; this package re-exports the names in each
one's ``__all__``, so ``parallelism.X`` and ``from course_lib.parallelism import X`` work as they always did:

- ``models``: ``TransformerModel``, its presets and the catalogues ``MODELS``, ``LLAMA_MODELS``, ``PLAYBOOK_MODELS``,
  ``MOE_MODELS``, ``PUBLISHED_MODELS``; ``PUBLISHED_RUN_MODELS`` (each published run's model to its preset) and
  ``UNREPRESENTABLE_MODELS`` (the runs' models no preset describes, and why);
- ``plan``: ``ParallelPlan``, ``ZERO_STAGES``, ``ATTENTION_OPTIONS``, ``CONTEXT_PARALLEL_KINDS``, ``global_batch``
  (and ``global_batch_report``, lab 2's one call), ``pipeline_bubble_fraction`` and the split checks
  (``splits_evenly``, ``check_tensor_split``, ``check_pipeline_split``, ``check_plan_for_model``, ``stage_layers``;
  for c and e ``splits_context_and_experts`` and ``check_capacity_factor``; ``causal_attention_shares``, each context
  rank's share of causal attention under ``CONTEXT_SPLITS``); the schedules (``SCHEDULES``, and the zero-bubble ones
  a plan also takes, ``pipeline.ZERO_BUBBLE_SCHEDULES``) are ``pipeline``'s and the recomputation options
  (``RECOMPUTE_OPTIONS``) ``compute``'s;
- ``fp8``: FP8 training recipes, opt-in through a framework's ``fp8`` field (``Fp8Recipe``, the presets ``TE_FP8``,
  ``TE_FP8_PARAM_GATHER``, ``TORCHAO_FP8_FSDP``, ``FP8_RECIPES``, ``fp8_peak``);
- ``frameworks``: how a training framework runs a plan, each behaviour cited (``Framework``, ``PRECISION_RECIPES``,
  the presets ``MEGATRON_CORE``, ``DEEPSPEED``, ``FSDP2``, ``FSDP2_PIPELINE``, ``NANOTRON``, the bound ``EXPOSED``,
  ``FRAMEWORKS``, ``resolve_framework``; ``Framework.refusal`` states why a framework does not run a plan);
- ``calibration``: the one home of the calibrated model's fitted constants and its framework (``Calibration``,
  the default ``REFERENCE_CALIBRATION`` on ``REFERENCE_CLUSTER``, the case study ``PLAYBOOK_CALIBRATION``,
  ``default_calibration``, ``resolve_calibration``, ``calibrated_cluster``, which
  ``budget`` re-exports);
- ``memory``: ZeRO model states, stored activations, micro-batches in flight (``pipeline_in_flight_microbatches``, and
  per stage of a zero-bubble schedule ``zero_bubble_stage_in_flight``), ``memory_breakdown`` and
  ``calibrated_memory_breakdown``, and ``memory_budget_report`` (every ZeRO stage against a device, lab 3's one call);
- ``schedule``: ``pipeline_bubble_time``, the bubble of every simulated schedule by formula (ZB-H1 and ZB-H2 with
  and without the optimizer step's synchronisation), and ``pipeline_schedule_report``, a simulated pipeline step
  beside the formulas for its bubble and the micro-batches stage 0 holds (lab 4's one call);
- ``transfers``: ``BoundaryTransfer``, ``step_transfers``, ``boundary_tensors``, ``communication_volume_per_step``.

>>> from course_lib.units import format_bytes
>>> global_batch(8, 16, 64)   # micro-batch 8, 16 accumulation steps, 64 data-parallel replicas
8192
>>> format_bytes(zero_model_state_bytes(7.5e9, 64, stage=1))   # ZeRO §5: P_os with N_d = 64
'31.4 GB'
"""

from ..compute import RECOMPUTE_OPTIONS
from ..pipeline import SCHEDULES
from . import calibration, fp8, frameworks, memory, models, plan, schedule, transfers
from .calibration import *
from .fp8 import *
from .frameworks import *
from .memory import *
from .models import *
from .plan import *
from .schedule import *
from .transfers import *

__all__ = ["SCHEDULES", "RECOMPUTE_OPTIONS"]
__all__ += models.__all__
__all__ += plan.__all__
__all__ += fp8.__all__
__all__ += frameworks.__all__
__all__ += calibration.__all__
__all__ += memory.__all__
__all__ += schedule.__all__
__all__ += transfers.__all__
