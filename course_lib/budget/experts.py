"""Experts: one mixture-of-experts layer's all-to-alls against its experts' compute, for a group of e ranks placed on
a cluster (lab 7's question: should the expert ranks stay inside a node?).

A MoE layer sends each rank's tokens to the ranks that hold their k experts (the dispatch) and brings the results
back (the combine), forward and again backward (their gradients): four all-to-alls per layer and micro-batch, each
of a rank's tokens × k × h × 2 bytes (``parallelism.transfers``' expert rows, of which (e − 1)/e leaves the rank),
timed as NCCL runs them by ``placement.group_collective_time``. Against them, the experts' own work on those tokens:
each token visits k experts, 2 FLOPs per weight forward and 4 backward.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import _check
from ..hardware import Cluster
from ..parallelism.models import TransformerModel
from ..parallelism.transfers import expert_dispatch_bytes
from .placement import group_collective_time

__all__ = ["MoeLayerTimes", "moe_layer_times", "MOE_ALL_TO_ALLS_PER_LAYER"]

# Dispatch and combine, forward and backward (without recomputation): the expert rows of ``parallelism.step_transfers``.
MOE_ALL_TO_ALLS_PER_LAYER = 4


@dataclass(frozen=True)
class MoeLayerTimes:
    """One MoE layer of one micro-batch on one rank: ``all_to_all_s``, the seconds of its four all-to-alls (dispatch
    and combine, forward and backward), one of which is ``call_s``; ``expert_compute_s``, the seconds of its experts'
    forward and backward; ``payload_bytes``, one call's buffer S per rank (tokens × k × h × 2 bytes / t)."""

    call_s: float
    all_to_all_s: float
    expert_compute_s: float
    payload_bytes: float

    def __post_init__(self):
        for name in ("call_s", "all_to_all_s", "expert_compute_s", "payload_bytes"):
            object.__setattr__(self, name, float(_check.nonnegative(name, getattr(self, name))))

    @property
    def all_to_all_share(self) -> float:
        """all_to_all_s / (all_to_all_s + expert_compute_s): the layer's time spent moving tokens (0 without any)."""
        total = self.all_to_all_s + self.expert_compute_s
        return self.all_to_all_s / total if total > 0 else 0.0


def moe_layer_times(
    model: TransformerModel,
    cluster: Cluster,
    expert_parallel,
    tokens,
    stride=1,
    tensor_parallel=1,
    compute_efficiency=0.5,
) -> MoeLayerTimes:
    """One MoE layer of ``model`` for a rank holding ``tokens`` tokens, its expert group of ``expert_parallel`` ranks
    ``stride`` apart on ``cluster`` (stride 1: side by side, inside a node when e ≤ its GPUs; stride ≥ the GPUs per
    node: one rank per node): the four all-to-alls (``group_collective_time("all_to_all", ...)`` of tokens × k × h ×
    2 / t bytes each) and the experts' compute, 6 FLOPs per routed weight a token visits (2 forward, 4 backward),
    / t, at ``compute_efficiency`` × the bf16 peak.

    Mixtral 8×7B, 4096 tokens a rank, e = 8 on DGX H100 nodes: inside one node the all-to-alls add 4 % to the
    experts' compute; across eight nodes (one rank each) 27 %, on the critical path:

    >>> from dataclasses import replace
    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.parallelism import MIXTRAL_8X7B
    >>> from course_lib.units import format_time
    >>> eight = replace(DGX_H100, nodes=8)
    >>> inside, across = (moe_layer_times(MIXTRAL_8X7B, eight, 8, 4096, stride) for stride in (1, 8))
    >>> format_time(inside.all_to_all_s), format_time(across.all_to_all_s), format_time(inside.expert_compute_s)
    ('657 µs', '4.74 ms', '17.5 ms')
    """
    if not isinstance(model, TransformerModel):
        raise ValueError(f"model must be a parallelism.TransformerModel, got {model!r}")
    if model.experts == 1:
        raise ValueError(f"model must be a mixture of experts (experts > 1), got {model.name} with one MLP per layer")
    e = int(_check.count("expert_parallel", expert_parallel))
    if model.experts % e:
        raise ValueError(f"expert_parallel must divide the model's experts ({model.experts}), got {e}")
    tokens = float(_check.positive("tokens", tokens))
    t = int(_check.count("tensor_parallel", tensor_parallel))
    efficiency = float(_check.positive("compute_efficiency", compute_efficiency))
    if efficiency > 1:
        raise ValueError(f"compute_efficiency must be in (0, 1], got {efficiency}")
    payload = expert_dispatch_bytes(model, tokens, t)
    call = float(group_collective_time("all_to_all", cluster, e, stride, payload))
    routed_per_moe_layer = model.routed_matmul_weights_per_layer * model.layers / model.moe_layers
    flops = 6.0 * tokens * routed_per_moe_layer / t
    compute = flops / (efficiency * cluster.accelerator.peak("bf16"))
    return MoeLayerTimes(call, MOE_ALL_TO_ALLS_PER_LAYER * call, compute, payload)
