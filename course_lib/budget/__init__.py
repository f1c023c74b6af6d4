"""Budget: the time of one training step of a plan on a cluster, what is exposed, and a search over plans.

One concept per module, each importing only the ones listed before it; this package re-exports the names in each
one's ``__all__``, so ``budget.X`` and ``from course_lib.budget import X`` work as they always did:

- ``placement``: where a plan's groups of ranks sit on a cluster (Megatron-LM's rank order) and what one collective
  call by such a group costs, as NCCL runs it (``group_collective``, ``group_collective_time``, ``axis_stride``,
  ``transfer_time_per_call``);
- ``step``: the step time and its terms, the ideal model or the calibrated one (``step_time``,
  ``calibrated_step_time``, ``StepTime``, ``exposed_after_overlap``, ``bucketed_exposure``, ``binding_constraint``,
  ``model_flops_per_step``, ``forward_flops_per_token``);
- ``search``: the plan search (``search_plans``, ``PlanSearch``, ``PLAN_FIELDS``, ``BINDING_CONSTRAINTS``,
  ``worst_case_ranking``);
- ``experts``: one mixture-of-experts layer's all-to-alls against its experts' compute, for a group of e ranks
  placed on a cluster (``moe_layer_times``, ``MoeLayerTimes``);
- ``report``: a plan's boundary transfers as a table and the partition explorer's report (``transfer_table``,
  ``format_transfer_table``, ``partition_report`` and its ``PartitionReport`` of ``TimedTransfer`` rows).

The calibration the step time applies lives in ``parallelism.calibration``; ``calibrated_cluster`` is re-exported
here, as before.
"""

from ..parallelism.calibration import calibrated_cluster
from . import experts, placement, report, search, step
from .experts import *
from .placement import *
from .report import *
from .search import *
from .step import *

__all__ = ["calibrated_cluster"]
__all__ += placement.__all__
__all__ += step.__all__
__all__ += search.__all__
__all__ += report.__all__
__all__ += experts.__all__
