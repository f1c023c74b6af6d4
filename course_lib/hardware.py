"""Hardware: accelerator, link and cluster presets, each with its source and its bandwidth semantics.

A bandwidth figure means nothing until you know its *direction* (one-way, or both directions added: "two-way"),
its *scope* (per link, per GPU or per node) and its *basis* (a nominal datasheet number, or a measured one). The
α–β formulas in ``collectives`` need the **one-way bandwidth per device**; ``Link.one_way_bytes_per_s_per_device``
converts any preset to that. TPU ICI is quoted per link, and a chip has several (six on TPU v4, two per torus
axis): a ring on one torus axis runs in both directions at once and so drives two links per chip
(``links_per_device=2``), a collective over all three axes six. FLOP/s figures are dense (no 2:4 sparsity).
Capacities are the marketed decimal figures (an "80 GB" GPU reports 81920 MiB ≈ 85.9 GB; the marketed figure
leaves headroom for the CUDA context and fragmentation, so a plan that fits it fits the device).

>>> from course_lib.units import format_bandwidth
>>> format_bandwidth(NVLINK4.one_way_bytes_per_s_per_device())
'450 GB/s'
>>> format_bandwidth(INFINIBAND_NDR_8X.one_way_bytes_per_s_per_device(devices_per_node=8))
'50 GB/s'
>>> DGX_H100.devices
8
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

from . import _check
from .units import GB, GBIT, TB, US

__all__ = [
    "Accelerator",
    "Link",
    "Cluster",
    "LINK_FAMILIES",
    "ACCELERATORS",
    "LINKS",
    "CLUSTERS",
    "NODE_TYPES",
    "A100",
    "H100",
    "H200",
    "B200",
    "TPU_V5E",
    "TPU_V5P",
    "NVLINK3",
    "NVLINK4",
    "NVLINK4_MEASURED",
    "NVLINK5",
    "INFINIBAND_HDR_8X",
    "INFINIBAND_NDR_8X",
    "ICI_V4",
    "EFA_P5",
    "EFA_P4DE",
    "TCPX_A3_HIGH",
    "TCPXO_A3_MEGA",
    "ICI_V5E",
    "ICI_V5P",
    "NCCL_BASE_LATENCY_S",
    "NCCL_NVLINK_HOP_LATENCY_S",
    "LAUNCH_FLOOR_S",
    "TORCH_EAGER_LAUNCH_FLOOR_S",
    "DGX_A100",
    "DGX_H100",
    "DGX_H200",
    "DGX_B200",
    "SELENE_3072",
    "AWS_P5",
    "AWS_P4DE",
    "NEBIUS_H100_IB",
    "GCP_A3_HIGH",
    "GCP_A3_MEGA",
    "ARCHITECTURES",
    "HOST_CPUS",
]

DIRECTIONS = ("one-way", "two-way")
SCOPES = ("per link", "per GPU", "per node")
BASES = ("nominal", "measured")
# The interconnect a link belongs to: NVIDIA's GPU-to-GPU links inside a node, the networks between nodes (InfiniBand,
# AWS's Elastic Fabric Adapter, plain or RoCE Ethernet), Google's TPU inter-chip interconnect; "other" for the rest.
LINK_FAMILIES = ("NVLink", "InfiniBand", "EFA", "Ethernet", "ICI", "other")
ARCHITECTURES = ("", "Ampere", "Hopper", "Blackwell")  # NVIDIA generations NCCL's tuning tables have rows for
HOST_CPUS = ("Intel", "AMD")  # the host CPU vendor: NCCL's tuner picks its LL bandwidth cap and net overhead by it
# The per-call launch floor (``Cluster.launch_floor_s``): what one NCCL call costs beyond NCCL's own cost model, the
# same at every size. A fit, not physics: the median of (measured − NCCL's model) at 8 B–1 KiB on two of the shipped
# nccl-tests logs (Nebius 2 × 8 H100 on InfiniBand, AWS p5 one node: 16 rows, 4.8 µs; tests/test_nccl.py refits it).
# It absorbs the kernel launch and the host's enqueue as nccl-tests times them (back-to-back calls, one process per
# GPU), nccl-tests' own timing, and across nodes the network proxy's steps NCCL's table leaves out: 0.6 µs on one node,
# 5.2 µs on two. Held out, the AWS p5 pair's small sizes sit 5.8 µs above NCCL's model.
LAUNCH_FLOOR_S = 4.8 * US
# A PyTorch eager call on an idle device, its caller waiting on the result (torch.distributed.all_reduce between two
# CUDA events): "PyTorch's per-call host overhead of some 20-30us" (stas00/ml-engineering @ 0cc3de50,
# network/benchmarks/all_reduce_bench.py:29), the middle of that range. Not the default: a training loop's host runs
# ahead of the device and hides it.
TORCH_EAGER_LAUNCH_FLOOR_S = 25 * US

_SCALING_BOOK_GPUS = "JAX scaling book, gpus.md (commit 1a55377, 2025-08-18)"
_SCALING_BOOK_TPUS = "JAX scaling book, tpus.md (commit 0819a7d, 2025-02-18 snapshot)"
_NVIDIA = "NVIDIA datasheet"


@dataclass(frozen=True)
class Accelerator:
    """One accelerator: dense peak FLOP/s by data type, HBM capacity and HBM bandwidth, with sources."""

    name: str
    # compared, not hashed (a mapping has no hash): equal accelerators still hash alike, so a Cluster can key a cache
    peak_flops_per_s: MappingProxyType = field(hash=False)
    hbm_capacity_bytes: float
    hbm_bandwidth_bytes_per_s: float
    source: str
    note: str = ""
    # NVIDIA's GPU generation ("Ampere", "Hopper", "Blackwell"): which row of NCCL's tuning tables applies
    # (``nccl``); "" for accelerators NCCL does not run on.
    architecture: str = field(default="", kw_only=True)

    def __post_init__(self):
        _check.choice("architecture", self.architecture, ARCHITECTURES)

    def peak(self, dtype: str = "bf16") -> float:
        """Dense peak FLOP/s for ``dtype``.

        >>> H100.peak("bf16") / 1e12
        989.0
        """
        _check.choice("dtype", dtype, tuple(self.peak_flops_per_s))
        return self.peak_flops_per_s[dtype]


@dataclass(frozen=True)
class Link:
    """A kind of link, with the bandwidth exactly as published and what that number means.

    ``family`` (keyword only) is the interconnect it belongs to, one of ``LINK_FAMILIES``: what a figure or a table
    calls the link in one word. A link built without it is "other" (every preset names its own).

    Two keyword-only fields feed NCCL's model (``nccl``): ``nccl_bandwidth_bytes_per_s``, the one-way bandwidth per
    device NCCL's topology assigns the link when it differs from the datasheet (NVLink: NCCL counts 20.6 GB/s per
    NVLink 4 link where the datasheet says 25), ``None`` for "the datasheet's"; ``fabric_latency_s``, the latency
    the link adds to every step over it beyond NCCL's own table: on a network the time a step takes on it (0 for
    InfiniBand, whose transport is built into NCCL and in its table; a measured figure for a plugin's network, which
    may differ from the ``latencyInter`` the plugin reports to NCCL to steer its choice: ``EFA_P5``); inside a node
    0 on every preset, a per-hop latency ``measure.calibrate_cluster`` fits from a measurement. The α–β paths of
    ``budget`` (MPI, point-to-point) add it to ``latency_s``.

    >>> NVLINK4.family, INFINIBAND_NDR_8X.family, EFA_P5.family
    ('NVLink', 'InfiniBand', 'EFA')
    """

    name: str
    bandwidth_bytes_per_s: float
    direction: str
    scope: str
    basis: str
    latency_s: float
    source: str
    latency_source: str
    note: str = ""
    family: str = field(default="other", kw_only=True)
    nccl_bandwidth_bytes_per_s: float | None = field(default=None, kw_only=True)
    fabric_latency_s: float = field(default=0.0, kw_only=True)

    def __post_init__(self):
        _check.positive("bandwidth_bytes_per_s", self.bandwidth_bytes_per_s)
        if self.nccl_bandwidth_bytes_per_s is not None:
            _check.positive("nccl_bandwidth_bytes_per_s", self.nccl_bandwidth_bytes_per_s)
        _check.nonnegative("fabric_latency_s", self.fabric_latency_s)
        _check.nonnegative("latency_s", self.latency_s)
        _check.choice("direction", self.direction, DIRECTIONS)
        _check.choice("scope", self.scope, SCOPES)
        _check.choice("basis", self.basis, BASES)
        _check.choice("family", self.family, LINK_FAMILIES)

    def one_way_bytes_per_s_per_device(self, devices_per_node: int | None = None, links_per_device: int = 1) -> float:
        """The bandwidth the α–β formulas need: one direction, one device's share.

        A two-way figure is halved; a per-node figure is divided among the node's ``devices_per_node`` devices, which
        a per-node figure therefore requires (no default: a silent "one GPU per node" would hand one GPU the whole
        node's network). A per-link figure (TPU ICI) is multiplied by ``links_per_device``, the links a collective
        drives at once out of each device: 1 for a ring in one direction, 2 for a ring on one torus axis run in both
        directions at once (half the data each way, to both neighbours), 2 × axes for a collective over several
        torus axes. Other scopes already count every link of the device, so they accept only 1.

        >>> from course_lib.units import format_bandwidth
        >>> format_bandwidth(NVLINK3.one_way_bytes_per_s_per_device())
        '300 GB/s'
        >>> format_bandwidth(ICI_V4.one_way_bytes_per_s_per_device(links_per_device=2))   # one torus axis
        '100 GB/s'
        >>> INFINIBAND_NDR_8X.one_way_bytes_per_s_per_device()
        Traceback (most recent call last):
        ...
        ValueError: devices_per_node is required for a per-node figure (InfiniBand NDR, 8 × 400 Gb/s per node): \
the number of devices (an integer ≥ 1) that share the node's network, e.g. 8 on a DGX H100
        """
        if devices_per_node is None:
            if self.scope == "per node":
                raise ValueError(
                    f"devices_per_node is required for a per-node figure ({self.name}): the number of devices "
                    "(an integer ≥ 1) that share the node's network, e.g. 8 on a DGX H100"
                )
            devices_per_node = 1  # not used: only a per-node figure is shared among the node's devices
        devices_per_node = _check.count("devices_per_node", devices_per_node)
        links = _check.count("links_per_device", links_per_device)
        if self.scope != "per link" and links != 1:
            raise ValueError(f"links_per_device must be 1 for a {self.scope} figure ({self.name}), got {links!r}")
        one_way = self.bandwidth_bytes_per_s / (2 if self.direction == "two-way" else 1)
        if self.scope == "per node":
            return one_way / devices_per_node
        return one_way * links if self.scope == "per link" else one_way


@dataclass(frozen=True)
class Cluster:
    """Nodes of identical devices: a fast link inside each node and a network between nodes.

    ``host_cpu`` (keyword only, "Intel" or "AMD") is the nodes' CPU vendor, which NCCL's tuner reads (``nccl``).
    ``launch_floor_s`` (keyword only, s ≥ 0) is what each NCCL call costs beyond NCCL's cost model, at every size: the
    host's enqueue, the kernel launch and the timing's own cost (``LAUNCH_FLOOR_S``, fitted on nccl-tests logs;
    ``TORCH_EAGER_LAUNCH_FLOOR_S`` for a PyTorch call waited on). ``nccl`` adds it to every call's time; NCCL's tuner
    chooses without it.

    >>> DGX_H100.launch_floor_s == LAUNCH_FLOOR_S
    True
    """

    name: str
    accelerator: Accelerator
    devices_per_node: int
    nodes: int
    intra_node_link: Link
    inter_node_link: Link
    source: str = field(default="")
    host_cpu: str = field(default="Intel", kw_only=True)
    launch_floor_s: float = field(default=LAUNCH_FLOOR_S, kw_only=True)

    def __post_init__(self):
        _check.count("devices_per_node", self.devices_per_node)
        _check.count("nodes", self.nodes)
        _check.choice("host_cpu", self.host_cpu, HOST_CPUS)
        _check.nonnegative("launch_floor_s", self.launch_floor_s)

    @property
    def devices(self) -> int:
        """Total devices: nodes × devices_per_node."""
        return self.nodes * self.devices_per_node

    @property
    def intra_bandwidth_bytes_per_s(self) -> float:
        """One-way bandwidth per device inside a node."""
        return self.intra_node_link.one_way_bytes_per_s_per_device(self.devices_per_node)

    @property
    def inter_bandwidth_bytes_per_s(self) -> float:
        """One-way bandwidth per device between nodes (its share of the node's network links).

        >>> from course_lib.units import format_bandwidth
        >>> format_bandwidth(SELENE_3072.inter_bandwidth_bytes_per_s)
        '25 GB/s'
        """
        return self.inter_node_link.one_way_bytes_per_s_per_device(self.devices_per_node)

    @property
    def nccl_intra_bandwidth_bytes_per_s(self) -> float:
        """One-way bandwidth per device inside a node as NCCL's topology counts it (``Link.nccl_bandwidth_bytes_per_s``,
        else the datasheet's).

        >>> from course_lib.units import format_bandwidth
        >>> format_bandwidth(DGX_H100.nccl_intra_bandwidth_bytes_per_s)   # 18 NVLinks × 20.6 GB/s
        '371 GB/s'
        """
        link = self.intra_node_link
        return link.nccl_bandwidth_bytes_per_s or self.intra_bandwidth_bytes_per_s


def _flops(**by_dtype: float) -> MappingProxyType:
    return MappingProxyType(dict(by_dtype))


# Accelerators. Dense (non-sparse) peak rates.
A100 = Accelerator(
    "A100 SXM 80GB",
    _flops(fp32=19.5e12, tf32=156e12, bf16=312e12, fp16=312e12, int8=624e12),
    80 * GB,
    2.039 * TB,
    f"{_NVIDIA} (A100 80GB SXM); 312 TFLOP/s 16-bit as in Narayanan et al. 2021 §5",
    "scaling book rounds HBM bandwidth to 2.0e12 B/s",
    architecture="Ampere",
)
H100 = Accelerator(
    "H100 SXM 80GB",
    _flops(fp32=67e12, tf32=494.5e12, bf16=989e12, fp16=989e12, fp8=1979e12, int8=1979e12),
    80 * GB,
    3.35 * TB,
    f"{_NVIDIA} (H100 SXM5, dense); {_SCALING_BOOK_GPUS}: 9.9e14 bf16, 3.35 TB/s",
    "1979 TFLOP/s bf16 is the sparse figure; the dense one is half",
    architecture="Hopper",
)
H200 = Accelerator(
    "H200 SXM 141GB",
    _flops(fp32=67e12, tf32=494.5e12, bf16=989e12, fp16=989e12, fp8=1979e12, int8=1979e12),
    141 * GB,
    4.8 * TB,
    f"{_NVIDIA} (H200 SXM); {_SCALING_BOOK_GPUS}: 141 GB, 4.8e12 B/s",
    "same compute as H100",
    architecture="Hopper",
)
B200 = Accelerator(
    "B200",
    _flops(bf16=2.25e15, fp16=2.25e15, fp8=4.5e15, fp4=9e15),
    192 * GB,
    8 * TB,
    f"{_SCALING_BOOK_GPUS}: 192 GB, 8.0e12 B/s, 2.3e15 bf16 (NVIDIA HGX B200: 2.25 PFLOP/s dense bf16)",
    "DGX B200 lists 180 GB usable per GPU; the scaling book's prose says 9 TB/s, its table 8e12",
    architecture="Blackwell",
)
TPU_V5E = Accelerator(
    "TPU v5e",
    _flops(bf16=1.97e14, int8=3.94e14),
    16 * GB,
    8.1e11,
    _SCALING_BOOK_TPUS,
    "roofline.md uses 8.2e11 B/s for the same chip",
)
TPU_V5P = Accelerator(
    "TPU v5p",
    _flops(bf16=4.59e14, int8=9.18e14),
    96 * GB,
    2.8e12,
    _SCALING_BOOK_TPUS,
    "the text elsewhere says 2.5e12 B/s",
)

# Links. α (latency_s) is the startup cost of one step of a collective.
# NCCL's tuning model (src/graph/tuning.cc, ring, LL protocol): 6.6 µs per call + 0.6 µs per NVLink hop. An 8-GPU
# ring all-reduce has 2(8−1) = 14 hops: (6.6 + 14 × 0.6) / 14 = 1.07 µs per step, which the presets round to 1 µs.
# Taken from the source, not fitted: lesson 02 checks it against a measured nccl-tests time it was not derived from.
NCCL_BASE_LATENCY_S = 6.6 * US
NCCL_NVLINK_HOP_LATENCY_S = 0.6 * US
_NVLINK_ALPHA = (
    "≈1 µs per step: NCCL's tuning model (src/graph/tuning.cc, ring, LL protocol) charges 6.6 µs per call plus "
    "0.6 µs per NVLink hop, (6.6 + 14 × 0.6) µs over the 14 steps of an 8-GPU ring all-reduce = 1.07 µs per step"
)
# NCCL's topology counts each NVLink at its own figure (src/graph/topo.h at v2.30.7-1: SM80_NVLINK_BW 20.0,
# SM90_NVLINK_BW 20.6, SM100_NVLINK_BW 40.1 GB/s), not the datasheet's 25 or 50 GB/s each way: an 8-GPU H100 ring
# runs at 18 × 20.6 = 371 GB/s of bus bandwidth, what nccl-tests measures (≈ 370 GB/s, JAX scaling book, gpus.md).
_AWS_OFI_NCCL = "aws/aws-ofi-nccl @ 2daf7d3 (2026-08-21)"
_NCCL_TOPO = "NVIDIA/nccl src/graph/topo.h (v2.30.7-1)"
_NET_ALPHA = (
    "5 µs per step: NCCL's model parameter for a network hop (src/graph/tuning.cc, hwLat[NET][TREE][LL] "
    "= 5.0 µs); the course's card example uses the same 5 µs"
)
NVLINK3 = Link(
    "NVLink 3 (A100)",
    600 * GB,
    "two-way",
    "per GPU",
    "nominal",
    1 * US,
    f"{_NVIDIA}: 600 GB/s; {_SCALING_BOOK_GPUS}: 12 links × 25 GB/s each way = 300 GB/s",
    _NVLINK_ALPHA,
    f"NCCL counts 12 × 20.0 GB/s = 240 GB/s ({_NCCL_TOPO}, SM80_NVLINK_BW)",
    family="NVLink",
    nccl_bandwidth_bytes_per_s=12 * 20.0 * GB,
)
NVLINK4 = Link(
    "NVLink 4 (H100/H200)",
    900 * GB,
    "two-way",
    "per GPU",
    "nominal",
    1 * US,
    f"{_NVIDIA}: 900 GB/s; {_SCALING_BOOK_GPUS}: 18 links × 25 GB/s each way = 450 GB/s",
    _NVLINK_ALPHA,
    f"NCCL counts 18 × 20.6 GB/s = 370.8 GB/s ({_NCCL_TOPO}, SM90_NVLINK_BW)",
    family="NVLink",
    nccl_bandwidth_bytes_per_s=18 * 20.6 * GB,
)
NVLINK4_MEASURED = Link(
    "NVLink 4, ring all-reduce busbw (measured)",
    370 * GB,
    "one-way",
    "per GPU",
    "measured",
    1 * US,
    f"{_SCALING_BOOK_GPUS}: 8×H100 all-reduce bus bandwidth ≈ 370 GB/s; NVIDIA/nccl-tests issue #212",
    _NVLINK_ALPHA,
    "busbw is one-way per GPU by construction; NVLS (NVLink SHARP) runs report ≈480 GB/s",
    family="NVLink",
)
NVLINK5 = Link(
    "NVLink 5 (B200)",
    1800 * GB,
    "two-way",
    "per GPU",
    "nominal",
    1 * US,
    f"{_NVIDIA}: 1.8 TB/s; {_SCALING_BOOK_GPUS}: 18 links × 50 GB/s each way = 900 GB/s",
    _NVLINK_ALPHA,
    f"NCCL counts 18 × 40.1 GB/s = 721.8 GB/s ({_NCCL_TOPO}, SM100_NVLINK_BW)",
    family="NVLink",
    nccl_bandwidth_bytes_per_s=18 * 40.1 * GB,
)
INFINIBAND_HDR_8X = Link(
    "InfiniBand HDR, 8 × 200 Gb/s per node",
    8 * 200 * GBIT,
    "one-way",
    "per node",
    "nominal",
    5 * US,
    "Narayanan et al. 2021 §5 (Selene: eight 200 Gbps HDR HCAs per node for compute)",
    _NET_ALPHA,
    family="InfiniBand",
)
INFINIBAND_NDR_8X = Link(
    "InfiniBand NDR, 8 × 400 Gb/s per node",
    8 * 400 * GBIT,
    "one-way",
    "per node",
    "nominal",
    5 * US,
    f"{_SCALING_BOOK_GPUS}: H100 node egress 400e9 B/s (8 × 400 Gbps ConnectX-7)",
    _NET_ALPHA,
    family="InfiniBand",
)
ICI_V4 = Link(
    "ICI (TPU v4)",
    50 * GB,
    "one-way",
    "per link",
    "nominal",
    1 * US,
    "Jouppi et al. 2023 (ISCA, 'TPU v4: An Optically Reconfigurable Supercomputer ...'): six ICI links per chip, "
    "400 Gb/s = 50 GB/s each way per link, chips in a 3D torus of 4×4×4 cubes joined by optical circuit switches; "
    f"{_SCALING_BOOK_TPUS} lists 4.5e10 one-way per link for v4p",
    "scaling book sharding.md: ICI per-hop latency 'typically around 1us'",
    "per link: a ring on one torus axis runs both ways at once and gets 2 links' worth per chip (links_per_device=2)",
    family="ICI",
)
EFA_P5 = Link(
    "AWS EFA, 3,200 Gb/s per node (p5)",
    3200 * GBIT,
    "one-way",
    "per node",
    "nominal",
    5 * US,
    "AWS EC2 P5 instances: 3,200 Gbps of EFA networking per 8 × H100 node; the cluster of the Ultra-Scale "
    "Playbook's runs (Tazi et al. 2025)",
    _NET_ALPHA,
    f"fabric latency 20 µs, a measured time per network step: {_AWS_OFI_NCCL}, src/tuner/nccl_ofi_model.cpp:15, the "
    "plugin tuner's P5 model parameter net_lat = 20.0 ('2 nodes, 8B RDMA w/imm lat'), which the shipped two-node p5 "
    "log supports (measure.calibrate_cluster fits 26.5 µs, parallelism.PLAYBOOK_EFA). It is not NCCL's latencyInter: "
    "the plugin reports 75 µs to NCCL for p5 (src/platform-aws.cpp:133-137, the p5/p5e entry's latency = 75.0, "
    "passed on as props->latency in src/nccl_ofi_net.cpp:481; include/nccl_ofi_param.h:277-285 says the tuner's "
    "parameter differs 'by design'), a figure chosen to steer NCCL's algorithm choice ('NCCL's internal tuner choices "
    "work better with this value', platform-aws.cpp:775-782), which as a time would put the log's 64 B all-reduce at "
    "2.7× its measurement",
    family="EFA",
    fabric_latency_s=20 * US,
)
EFA_P4DE = Link(
    "AWS EFA, 400 Gb/s per node (p4de)",
    400 * GBIT,
    "one-way",
    "per node",
    "nominal",
    5 * US,
    "AWS EC2 P4de instances: 4 × 100 Gbps EFA per 8 × A100 80GB node",
    _NET_ALPHA,
    f"fabric latency 75 µs: {_AWS_OFI_NCCL}, src/platform-aws.cpp, the latency the plugin reports to NCCL for "
    "p4de.24xlarge (its tuner has no measured figure for p4de's first-generation EFA, which also lacks RDMA write)",
    family="EFA",
    fabric_latency_s=75 * US,
)
TCPX_A3_HIGH = Link(
    "GCP GPUDirect-TCPX, 4 × 200 Gb/s per node (a3-highgpu-8g)",
    4 * 200 * GBIT,
    "one-way",
    "per node",
    "nominal",
    5 * US,
    "Google Cloud A3 High (a3-highgpu-8g): four 200 Gbps GPU NICs with GPUDirect-TCPX (1 Tbps with the host NIC)",
    _NET_ALPHA,
    family="Ethernet",
)
TCPXO_A3_MEGA = Link(
    "GCP GPUDirect-TCPXO, 8 × 200 Gb/s per node (a3-megagpu-8g)",
    8 * 200 * GBIT,
    "one-way",
    "per node",
    "nominal",
    5 * US,
    "Google Cloud A3 Mega (a3-megagpu-8g): eight 200 Gbps GPU NICs with GPUDirect-TCPXO (1.8 Tbps with the host NIC)",
    _NET_ALPHA,
    family="Ethernet",
)
ICI_V5E = Link(
    "ICI (TPU v5e)",
    4.5e10,
    "one-way",
    "per link",
    "nominal",
    1 * US,
    f"{_SCALING_BOOK_TPUS}: 4.5e10 one-way, 9e10 bidirectional per link (a later version says 5e10)",
    "scaling book sharding.md: ICI per-hop latency 'typically around 1us'",
    family="ICI",
)
ICI_V5P = Link(
    "ICI (TPU v5p)",
    9e10,
    "one-way",
    "per link",
    "nominal",
    1 * US,
    f"{_SCALING_BOOK_TPUS}: 9e10 one-way, 1.8e11 bidirectional per link (a later version says 1e11)",
    "scaling book sharding.md: ICI per-hop latency 'typically around 1us'",
    family="ICI",
)

# Clusters.
DGX_A100 = Cluster("DGX A100 (one node)", A100, 8, 1, NVLINK3, INFINIBAND_HDR_8X, "NVIDIA DGX A100")
DGX_H100 = Cluster("DGX H100 (one node)", H100, 8, 1, NVLINK4, INFINIBAND_NDR_8X, "NVIDIA DGX H100")
DGX_H200 = Cluster("DGX H200 (one node)", H200, 8, 1, NVLINK4, INFINIBAND_NDR_8X, "NVIDIA DGX H200")
DGX_B200 = Cluster("DGX B200 (one node)", B200, 8, 1, NVLINK5, INFINIBAND_NDR_8X, "NVIDIA DGX B200")
SELENE_3072 = Cluster(
    "Selene, 384 DGX A100 nodes (Narayanan et al. 2021)",
    A100,
    8,
    384,
    NVLINK3,
    INFINIBAND_HDR_8X,
    "Narayanan et al. 2021 §5: 3072 A100 80GB GPUs for the 1T-parameter model",
)
# The machines of the nccl-tests logs in data/nccl_tests/ (two nodes each; ``dataclasses.replace(..., nodes=n)``
# for other sizes), from their datasheets: what ``nccl`` is checked against.
AWS_P5 = Cluster(
    "2 × AWS p5.48xlarge (8 × H100, EFA)",
    H100,
    8,
    2,
    NVLINK4,
    EFA_P5,
    "AWS EC2 P5: 8 × H100 SXM, NVLink 4 / NVSwitch, 3,200 Gbps EFA, 3rd-generation AMD EPYC hosts",
    host_cpu="AMD",
)
AWS_P4DE = Cluster(
    "2 × AWS p4de.24xlarge (8 × A100, EFA)",
    A100,
    8,
    2,
    NVLINK3,
    EFA_P4DE,
    "AWS EC2 P4de: 8 × A100 80GB SXM, NVLink 3 / NVSwitch, 400 Gbps EFA, Intel Xeon (Cascade Lake) hosts",
)
NEBIUS_H100_IB = Cluster(
    "2 × Nebius 8 × H100 (InfiniBand)",
    H100,
    8,
    2,
    NVLINK4,
    INFINIBAND_NDR_8X,
    "Nebius AI Cloud H100 nodes: 8 × H100 SXM, NVLink 4 / NVSwitch, 8 × 400 Gb/s NDR InfiniBand, Intel Xeon hosts",
)
GCP_A3_HIGH = Cluster(
    "2 × GCP a3-highgpu-8g (8 × H100, TCPX)",
    H100,
    8,
    2,
    NVLINK4,
    TCPX_A3_HIGH,
    "Google Cloud A3 High: 8 × H100 SXM, NVLink 4 / NVSwitch, 4 × 200 Gbps GPUDirect-TCPX, Intel Xeon hosts",
)
GCP_A3_MEGA = Cluster(
    "2 × GCP a3-megagpu-8g (8 × H100, TCPXO)",
    H100,
    8,
    2,
    NVLINK4,
    TCPXO_A3_MEGA,
    "Google Cloud A3 Mega: 8 × H100 SXM, NVLink 4 / NVSwitch, 8 × 200 Gbps GPUDirect-TCPXO, Intel Xeon hosts",
)

ACCELERATORS = MappingProxyType({a.name: a for a in (A100, H100, H200, B200, TPU_V5E, TPU_V5P)})
LINKS = MappingProxyType(
    {
        link.name: link
        for link in (
            NVLINK3,
            NVLINK4,
            NVLINK4_MEASURED,
            NVLINK5,
            INFINIBAND_HDR_8X,
            INFINIBAND_NDR_8X,
            EFA_P5,
            EFA_P4DE,
            TCPX_A3_HIGH,
            TCPXO_A3_MEGA,
            ICI_V4,
            ICI_V5E,
            ICI_V5P,
        )
    }
)
CLUSTERS = MappingProxyType(
    {
        c.name: c
        for c in (
            DGX_A100,
            DGX_H100,
            DGX_H200,
            DGX_B200,
            SELENE_3072,
            AWS_P5,
            AWS_P4DE,
            NEBIUS_H100_IB,
            GCP_A3_HIGH,
            GCP_A3_MEGA,
        )
    }
)
# The node types the labs offer, one list for every lab (the partition explorer's cluster control, the serving lab's
# device control): a label and one node of 8 accelerators. The explorer's default is named where it is set
# (``widgets.partition``), never "whichever comes first".
NODE_TYPES = MappingProxyType(
    {
        "nodes of 8 A100 (NVLink 3, InfiniBand HDR)": DGX_A100,
        "nodes of 8 H100 (NVLink 4, InfiniBand NDR)": DGX_H100,
        "nodes of 8 H200 (NVLink 4, InfiniBand NDR)": DGX_H200,
        "nodes of 8 B200 (NVLink 5, InfiniBand NDR)": DGX_B200,
    }
)
