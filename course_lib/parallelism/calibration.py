"""The calibration, in one place: the assumptions and fitted constants of the calibrated model (``Calibration``), the
default a learner plans with (``REFERENCE_CALIBRATION``: Megatron-Core on DGX H100 nodes with NDR InfiniBand, fitted on
published well-tuned runs; ``default_calibration`` carries it over to other clusters), the Ultra-Scale Playbook's
cluster as a case study of a real one (``PLAYBOOK_CALIBRATION``, fitted on its 1B and 3B runs), how a
``calibration`` argument resolves (``resolve_calibration``) and the cluster a calibration implies
(``calibrated_cluster``).

The models that apply a calibration keep the calibrated formula next to the ideal one they default to:
``memory.calibrated_memory_breakdown`` (``memory_breakdown``) and ``budget.step.calibrated_step_time``
(``budget.step_time``). This module sits between ``plan`` (whose ZeRO stages it checks) and ``memory``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .. import _check, hardware
from ..hardware import Cluster, Link
from .frameworks import GENERIC, MEGATRON_CORE, NANOTRON, Framework, resolve_framework

__all__ = [
    "Calibration",
    "PLAYBOOK_NVLINK",
    "PLAYBOOK_EFA",
    "PLAYBOOK_CALIBRATION",
    "REFERENCE_INFINIBAND",
    "REFERENCE_CLUSTER",
    "REFERENCE_CALIBRATION",
    "default_calibration",
    "resolve_calibration",
    "calibrated_cluster",
]


@dataclass(frozen=True)
class Calibration:
    """The assumptions and constants of the calibrated model (``memory_breakdown``, ``budget.step_time``).

    Stated assumptions (not fitted): ``framework`` (how the plan is run: its precision recipe, buckets, overlaps and
    what it combines, each cited: ``frameworks``), ``overlap_slowdown`` (compute runs this much slower while a
    collective shares the GPU's memory and SMs), the links (``None``: the cluster's; measured links from
    ``measure.calibrate_cluster`` on the cluster's nccl-tests logs, as ``PLAYBOOK_CALIBRATION`` has) and the network's
    α, ``network_latency_s`` (``None``: the inter-node link's). ``network_efficiency`` is a what-if, never fitted: the
    share of the network's bandwidth to assume (1 in every shipped calibration; "what if the network ran at half its
    rate?").

    Fitted constants (``validation.fit_playbook_calibration`` documents the rows): ``gemm_efficiency`` (the share of
    peak at which the layers' FLOPs run), ``layer_overhead_s`` (a fixed cost per layer and micro-batch, forward and
    backward: kernel launches, synchronisation) and ``framework_bytes`` (memory the model does not count: CUDA context,
    NCCL buffers, allocator caching and fragmentation). ``gemm_half_flops`` is an option of the model, not fitted (0 in
    the shipped calibration): the per-GPU forward FLOPs of one layer's micro-batch at which the efficiency would be
    half of ``gemm_efficiency`` (small GEMMs below the big-GEMM efficiency; 0 means no size effect).

    Measured uncertainty (``validation`` derives both from the Playbook's runs; ``budget.search_plans`` ranks with
    them): ``memory_margin``, the share of its predicted memory a plan must leave spare to be counted as fitting
    (``validation.memory_margin``), and ``step_time_band``, the spread of measured / predicted step time: rows
    ``(min_model_parallel, low, high)``, one per range of model-parallel sizes t·p, ascending from 1
    (``validation.step_time_band``); empty: no band was measured, a step time is a point estimate.

    The defaults are the uncalibrated physics: efficiency 0.5 (the course's default), no size effect, no overheads,
    the cluster's links, no margin, no band.

    >>> Calibration().framework.precision, Calibration().framework.bucket_bytes
    ('bf16-fp32-grads', 25000000.0)
    """

    name: str = "uncalibrated"
    framework: Framework = GENERIC
    overlap_slowdown: float = 0.0
    intra_node_link: Link | None = None
    inter_node_link: Link | None = None
    gemm_efficiency: float = 0.5
    gemm_half_flops: float = 0.0
    layer_overhead_s: float = 0.0
    network_efficiency: float = 1.0
    network_latency_s: float | None = None
    framework_bytes: float = 0.0
    memory_margin: float = 0.0
    step_time_band: tuple = ()

    def __post_init__(self):
        if not isinstance(self.framework, Framework):
            raise ValueError(f"framework must be a parallelism.Framework, got {self.framework!r}")
        _check.nonnegative("overlap_slowdown", self.overlap_slowdown)
        _check.fraction("gemm_efficiency", self.gemm_efficiency)
        _check.nonnegative("gemm_half_flops", self.gemm_half_flops)
        _check.nonnegative("layer_overhead_s", self.layer_overhead_s)
        _check.fraction("network_efficiency", self.network_efficiency)
        if self.network_latency_s is not None:
            _check.nonnegative("network_latency_s", self.network_latency_s)
        _check.nonnegative("framework_bytes", self.framework_bytes)
        _check.nonnegative("memory_margin", self.memory_margin)
        _check_band(self.step_time_band)

    def step_time_ratios(self, model_parallel):
        """The band's (low, high) ratios of measured to predicted step time for plans whose model replica spans
        ``model_parallel`` = t·p GPUs (arrays give arrays): the row whose ``min_model_parallel`` is the largest not
        above it; (1, 1) without a band.

        >>> band = ((1, 0.8, 3.0), (8, 1.1, 9.0))
        >>> Calibration(step_time_band=band).step_time_ratios([1, 4, 8, 64])
        (array([0.8, 0.8, 1.1, 1.1]), array([3., 3., 9., 9.]))
        """
        size = np.asarray(_check.count("model_parallel", model_parallel))
        if not self.step_time_band:
            return np.ones(size.shape), np.ones(size.shape)
        starts, low, high = (np.array(column, dtype=float) for column in zip(*self.step_time_band, strict=True))
        row = np.searchsorted(starts, size, side="right") - 1
        return low[row], high[row]


def _check_band(band):
    """Check a ``step_time_band``: rows (min_model_parallel, low, high), starting at 1 and ascending, 0 < low ≤
    high."""
    if not isinstance(band, tuple) or any(not isinstance(row, tuple) or len(row) != 3 for row in band):
        raise ValueError(f"step_time_band must be a tuple of (min_model_parallel, low, high) rows, got {band!r}")
    starts = [_check.count("step_time_band", row[0]) for row in band]
    if band and (starts[0] != 1 or starts != sorted(set(starts))):
        raise ValueError(f"step_time_band's min_model_parallel must start at 1 and ascend, got {starts}")
    for _, low, high in band:
        if not _check.positive("step_time_band", low) <= _check.positive("step_time_band", high):
            raise ValueError(f"step_time_band's rows must have low ≤ high, got {low!r} > {high!r}")


# The Playbook cluster's links as measured, not fitted to training runs: ``measure.calibrate_cluster`` on the shipped
# nccl-tests logs of AWS p5 nodes (``data/nccl_tests/aws_p5_1node_8xH100_nvlink_all_reduce.txt`` inside a node,
# ``aws_2x_p5_16xH100_efa_all_reduce.txt`` across two nodes; ``validation.playbook_measured_cluster`` runs that fit and
# test_validation checks these figures equal its output). Inside a node NCCL reaches 274 GB/s per GPU one way (its
# topology counts 370.8), with no latency per NVLink hop beyond NCCL's table and the launch floor; across nodes each
# network step costs 24.7 µs beyond NCCL's table, and the log does not tell EFA's bandwidth from the datasheet's
# 400 GB/s per node (NVLink bounds every size of it).
PLAYBOOK_NVLINK = replace(
    hardware.NVLINK4,
    name="NVLink 4, measured (nccl-tests, one p5 node)",
    bandwidth_bytes_per_s=274.48e9,
    direction="one-way",
    basis="measured",
    source="measure.calibrate_cluster on data/nccl_tests/aws_p5_1node_8xH100_nvlink_all_reduce.txt",
    note="B = 274 GB/s one-way per GPU, no latency per NVLink hop beyond NCCL's table and the launch floor",
    nccl_bandwidth_bytes_per_s=274.48e9,
    fabric_latency_s=0.0,
)
PLAYBOOK_EFA = replace(
    hardware.EFA_P5,
    name="AWS EFA (p5), measured (nccl-tests, two p5 nodes)",
    basis="measured",
    source="measure.calibrate_cluster on data/nccl_tests/aws_2x_p5_16xH100_efa_all_reduce.txt",
    note="fabric latency 24.7 µs per network step; bandwidth the datasheet's 400 GB/s per node, which the log cannot "
    "tell from its best fit, 232 GB/s (within 0.1 %)",
    fabric_latency_s=24.71e-6,
)
# The calibration for nanotron on the Playbook's cluster (8 × H100 per node, NVLink 4, AWS EFA): the framework's traits
# (``frameworks.NANOTRON``, each cited) and the measured links as stated inputs; three constants fitted on the 1B and
# 3B runs only (``validation.fit_playbook_calibration``; the 8B and 80B runs are never seen by the fit). The case study
# of a real cluster (lesson 08), passed explicitly: the default is ``REFERENCE_CALIBRATION``.
PLAYBOOK_CALIBRATION = Calibration(
    name="nanotron on 8 × H100 + EFA (Ultra-Scale Playbook), fitted on the 1B and 3B runs",
    framework=NANOTRON,
    intra_node_link=PLAYBOOK_NVLINK,
    inter_node_link=PLAYBOOK_EFA,
    # Fitted by fit_playbook_calibration (test_validation checks the fit returns these), each checked outside the runs
    # it was fitted on (tests/test_validation.py): the step-time pair on the 56 one-node 1B and 3B runs, where no
    # network is involved: the layers' FLOPs at 55 % of the 989 TFLOP/s peak (below the 80 % the best cuBLAS bf16
    # GEMM reaches on an H100, which bounds it) and 1.6 ms per layer and micro-batch (forward + backward) of fixed
    # cost (kernel launches, nanotron's host-synchronising pipeline sends, everything the FLOP count leaves out),
    # judged on the two-node runs; the two trade along a valley of the fit's loss (lesson 08 shows the reference
    # fit's). Memory: 2.86 GB per GPU the model does not count (CUDA context, NCCL buffers, allocator caching), the
    # median over the 1B and 3B runs, judged on the 8B and 80B runs' memory.
    gemm_efficiency=0.55,
    layer_overhead_s=1.6e-3,
    framework_bytes=2861158144.0,
    # Measured, not fitted (test_validation derives both from the shipped runs): the 90th percentile of measured /
    # predicted memory on the 1B and 3B runs, less 1 (``validation.memory_margin``); the 10th and 90th percentiles of
    # measured / predicted step time on the held-out 8B and 80B runs, by the GPUs a model replica spans, t·p: within a
    # node, one node, two, four or more (``validation.step_time_band``).
    memory_margin=0.384,
    step_time_band=((1, 0.891, 2.931), (8, 0.897, 7.384), (16, 0.921, 12.262), (32, 1.315, 33.576)),
)
# The reference cluster's network as measured, not fitted to training runs: ``measure.calibrate_cluster`` on the
# shipped nccl-tests logs of one p5 node (NVLink: the same 8 × H100 SXM board and NVSwitch as a DGX H100, hence
# ``PLAYBOOK_NVLINK``) and of two Nebius nodes with 8 × 400 Gb/s NDR InfiniBand
# (``data/nccl_tests/nebius_2x8xH100_ib_all_reduce.txt``); test_validation checks these figures equal its output.
REFERENCE_INFINIBAND = replace(
    hardware.INFINIBAND_NDR_8X,
    name="InfiniBand NDR 8 × 400 Gb/s, latency measured (nccl-tests, two Nebius H100 nodes)",
    basis="measured",
    source="measure.calibrate_cluster on data/nccl_tests/nebius_2x8xH100_ib_all_reduce.txt (with the p5 node's log)",
    note="fabric latency 2.07 µs per network step beyond NCCL's table; bandwidth the datasheet's 400 GB/s per node: "
    "on two nodes NVLink bounds every size, and the log fits its best, 210 GB/s, hardly better (median error at "
    "≥ 1 MiB 11.1 % against 11.7 %): it cannot tell the NICs' rate",
    fabric_latency_s=2.065089803812798e-06,
)
# The reference cluster: DGX H100 nodes (8 × H100 SXM 80 GB, NVLink 4 / NVSwitch, 8 × 400 Gb/s NDR InfiniBand per
# node), one node here (``dataclasses.replace(REFERENCE_CLUSTER, nodes=n)`` for more), with its measured links.
REFERENCE_CLUSTER = replace(
    hardware.DGX_H100,
    name="DGX H100 + NDR InfiniBand, measured links (one node)",
    intra_node_link=PLAYBOOK_NVLINK,
    inter_node_link=REFERENCE_INFINIBAND,
)
# The default a learner plans with: Megatron-Core (``frameworks.MEGATRON_CORE``, each behaviour cited; change the
# framework here and every lesson's plans, the labs' framework-less defaults and the capstone's recommendation follow)
# on the reference cluster's measured links, fitted on published well-tuned runs (``published_runs``,
# ``validation.fit_reference_calibration`` names the fitted and the held-out rows).
REFERENCE_CALIBRATION = Calibration(
    name="Megatron-Core on DGX H100 + NDR InfiniBand (the reference), fitted on published runs",
    framework=MEGATRON_CORE,
    intra_node_link=PLAYBOOK_NVLINK,
    inter_node_link=REFERENCE_INFINIBAND,
    # Fitted by published_runs.fit_reference_calibration on the 23 GPT-family rows only (Megatron-LM's weak scaling,
    # NeMo's and DGX Cloud's GPT-3; test_reference checks the fit returns these): the layers' FLOPs at 62 % of the
    # 989 TFLOP/s peak (below the 80 % of the best cuBLAS bf16 GEMM) and 1.5 ms per layer and micro-batch, forward and
    # backward, of fixed cost (what the FLOP count leaves out: norms, activations, softmax, kernel launches); the two
    # trade along a valley of the fit's loss.
    gemm_efficiency=0.62,
    layer_overhead_s=1.5e-3,
    # No published run reports its memory: the framework memory is the Playbook's fit (CUDA context, NCCL buffers,
    # allocator caching, on H100s), carried over, and the margin the 90th percentile of measured / predicted memory
    # on the Playbook's healthy held-out runs, less 1 (``validation.memory_margin(..., healthy=True)``).
    framework_bytes=PLAYBOOK_CALIBRATION.framework_bytes,
    memory_margin=0.521,
    # Measured, not fitted: the 10th and 90th percentiles of measured / predicted step time over the held-out
    # published runs the model replays (``published_runs.reference_step_time_band``): one row for every size.
    step_time_band=((1, 0.898, 1.152),),
)


def default_calibration(cluster) -> Calibration:
    """The calibration a learner plans with on ``cluster``: ``REFERENCE_CALIBRATION`` on the reference's machine
    (H100 nodes with the datasheet's NVLink 4 and NDR InfiniBand, as ``hardware.DGX_H100`` describes them: the
    reference plans them on its measured links), else that calibration carried over by what belongs to the software
    and what to the machine: a cluster with links of its own (another machine's datasheet, or a
    ``measure.calibrate_cluster`` fit of its nccl-tests logs) is planned on them.

    Carried over unchanged: the framework (Megatron-Core: its precision recipe, buckets, overlaps and what it runs),
    the fixed costs and the memory margin, which belong to the software stack, and the efficiency (a share of the
    device's bf16 peak; the best cuBLAS GEMM reaches a similar share on an A100, 86 %, as on an H100, 80 %). Not
    carried over: the links, measured on H100 nodes: another cluster runs on its own links (its datasheet's, or a
    ``measure.calibrate_cluster`` fit of its nccl-tests logs); nor the step-time band: elsewhere a step time is a point
    estimate until runs there measure its band. The Playbook's cluster is no exception: its own calibration
    (``PLAYBOOK_CALIBRATION``, nanotron on EFA) is its case study, passed explicitly.

    >>> from dataclasses import replace
    >>> from course_lib import hardware
    >>> default_calibration(hardware.DGX_H100) is REFERENCE_CALIBRATION
    True
    >>> measured = replace(hardware.DGX_H100, inter_node_link=replace(hardware.INFINIBAND_NDR_8X, latency_s=9e-6))
    >>> default_calibration(measured).inter_node_link is None   # its own links
    True
    >>> carried = default_calibration(hardware.DGX_A100)
    >>> carried.inter_node_link is None, carried.framework.short_name, carried.name
    (True, 'Megatron-LM', 'the reference calibration carried over to DGX A100 (one node) (its own links)')
    """
    if not isinstance(cluster, hardware.Cluster):
        raise ValueError(f"cluster must be a hardware.Cluster, got {cluster!r}")
    datasheet = hardware.DGX_H100
    if (cluster.accelerator, cluster.intra_node_link, cluster.inter_node_link) == (
        datasheet.accelerator,
        datasheet.intra_node_link,
        datasheet.inter_node_link,
    ):
        return REFERENCE_CALIBRATION
    return replace(
        REFERENCE_CALIBRATION,
        name=f"the reference calibration carried over to {cluster.name} (its own links)",
        intra_node_link=None,
        inter_node_link=None,
        step_time_band=(),
    )


def resolve_calibration(calibration, cluster=None, framework=None) -> Calibration | None:
    """The one place that maps the ``calibration`` and ``framework`` arguments to the model that runs: "default" →
    ``default_calibration(cluster)`` (without a cluster, as for memory, ``REFERENCE_CALIBRATION``: the memory terms do
    not depend on the cluster), None → None (the ideal, uncalibrated model), a ``Calibration`` → itself; then a
    ``framework`` (a ``Framework`` or a key of ``FRAMEWORKS``; None: the calibration's own) replaces the
    calibration's. The ideal model has no framework: it is the textbook's rule (lessons 03 and 04).

    >>> resolve_calibration("default") is REFERENCE_CALIBRATION, resolve_calibration(None)
    (True, None)
    >>> resolve_calibration("default", framework="deepspeed").framework.precision
    'fp16-zero'
    >>> resolve_calibration("playbook")
    Traceback (most recent call last):
    ...
    ValueError: calibration must be "default", None (the ideal model) or a parallelism.Calibration, got 'playbook'
    """
    if isinstance(calibration, str) and calibration == "default":
        calibration = REFERENCE_CALIBRATION if cluster is None else default_calibration(cluster)
    elif calibration is not None and not isinstance(calibration, Calibration):
        raise ValueError(
            f'calibration must be "default", None (the ideal model) or a parallelism.Calibration, got {calibration!r}'
        )
    if framework is None:
        return calibration
    framework = resolve_framework(framework)
    if calibration is None:
        raise ValueError(
            "framework needs the calibrated model: calibration=None is the ideal model, which has no framework "
            '(pass calibration="default" or a parallelism.Calibration)'
        )
    return replace(calibration, framework=framework)


def calibrated_cluster(cluster: Cluster, calibration: Calibration) -> Cluster:
    """``cluster`` with the calibration's links (when set), its network at ``network_efficiency`` of their rate.

    >>> from course_lib.hardware import DGX_H100
    >>> from course_lib.units import format_bandwidth
    >>> format_bandwidth(calibrated_cluster(DGX_H100, Calibration(network_efficiency=0.5)).inter_bandwidth_bytes_per_s)
    '25 GB/s'
    """
    intra = calibration.intra_node_link or cluster.intra_node_link
    inter = calibration.inter_node_link or cluster.inter_node_link
    if calibration.network_efficiency != 1.0:
        inter = replace(
            inter,
            name=f"{inter.name} at {calibration.network_efficiency:.0%}",
            bandwidth_bytes_per_s=inter.bandwidth_bytes_per_s * calibration.network_efficiency,
        )
    if calibration.network_latency_s is not None:
        inter = replace(inter, latency_s=calibration.network_latency_s)
    return replace(cluster, intra_node_link=intra, inter_node_link=inter)
