"""Hardware presets: every number has a source and its semantics, and the conversions give what formulas need."""

from dataclasses import replace
from pathlib import Path

import pytest

from course_lib import hardware
from course_lib.collectives import collective_time, latency_bandwidth_crossover_bytes
from course_lib.compute import ridge_point_flops_per_byte
from course_lib.units import GB, US


def test_every_preset_names_its_source_and_semantics():
    for accelerator in hardware.ACCELERATORS.values():
        assert accelerator.source and accelerator.hbm_capacity_bytes > 0 and accelerator.hbm_bandwidth_bytes_per_s > 0
        assert accelerator.peak("bf16") > 0
    for link in hardware.LINKS.values():
        assert link.source and link.latency_source
        assert link.direction in ("one-way", "two-way") and link.scope in ("per link", "per GPU", "per node")
        assert link.basis in ("nominal", "measured")
    for name in ("A100", "H100", "H200", "B200", "TPU v5e", "TPU v5p"):
        assert any(a.name.startswith(name) for a in hardware.ACCELERATORS.values()), name


def test_every_link_preset_names_its_family():
    families = {
        "NVLink": (hardware.NVLINK3, hardware.NVLINK4, hardware.NVLINK4_MEASURED, hardware.NVLINK5),
        "InfiniBand": (hardware.INFINIBAND_HDR_8X, hardware.INFINIBAND_NDR_8X),
        "EFA": (hardware.EFA_P5, hardware.EFA_P4DE),
        "Ethernet": (hardware.TCPX_A3_HIGH, hardware.TCPXO_A3_MEGA),
        "ICI": (hardware.ICI_V4, hardware.ICI_V5E, hardware.ICI_V5P),
    }
    presets = {link.name: family for family, links in families.items() for link in links}
    assert set(presets) >= set(hardware.LINKS)  # every preset listed
    for family, links in families.items():
        assert [link.family for link in links] == [family] * len(links)
    networks = {"AWS_P5": "EFA", "AWS_P4DE": "EFA", "GCP_A3_HIGH": "Ethernet", "GCP_A3_MEGA": "Ethernet"}
    for name in ("DGX_A100", "DGX_H100", "DGX_H200", "DGX_B200", "SELENE_3072", "NEBIUS_H100_IB", *networks):
        cluster = getattr(hardware, name)  # NVLink inside every node; InfiniBand between DGX nodes, else its network
        assert cluster.name in hardware.CLUSTERS
        assert (cluster.intra_node_link.family, cluster.inter_node_link.family) == (
            "NVLink",
            networks.get(name, "InfiniBand"),
        )
    # A link built without one is "other"; the family is a keyword, so the positional fields keep their places.
    custom = hardware.Link("1 Gb/s", 0.125e9, "one-way", "per node", "nominal", 5e-6, "-", "-")
    assert custom.family == "other" and replace(custom, family="Ethernet").family == "Ethernet"
    with pytest.raises(ValueError, match="^family"):
        replace(hardware.NVLINK4, family="nvlink")


@pytest.mark.parametrize(
    "link, devices_per_node, one_way_gb_per_s",
    [
        (hardware.NVLINK3, 8, 300),  # 600 GB/s two-way per GPU
        (hardware.NVLINK4, 8, 450),  # 900 GB/s two-way per GPU; scaling book: 18 × 25 GB/s each way
        (hardware.NVLINK5, 8, 900),
        (hardware.NVLINK4_MEASURED, 8, 370),  # measured busbw is already one-way per GPU
        (hardware.INFINIBAND_HDR_8X, 8, 25),  # 8 × 200 Gb/s per node = 200 GB/s, 25 GB/s per GPU
        (hardware.INFINIBAND_NDR_8X, 8, 50),  # scaling book: node egress 400e9 B/s
        (hardware.ICI_V5E, 1, 45),
        (hardware.ICI_V4, 1, 50),  # Jouppi et al. 2023: 400 Gb/s each way per ICI link
    ],
)
def test_one_way_per_device_bandwidth(link, devices_per_node, one_way_gb_per_s):
    assert link.one_way_bytes_per_s_per_device(devices_per_node) == pytest.approx(one_way_gb_per_s * GB)


def test_scaling_book_in_node_all_gather_example():
    # gpus.md: AllGather of bf16[1024, 16384] on 8×H100 ≈ 75 µs, "more precisely, 65us" (× 7/8 at 450 GB/s).
    size = 1024 * 16384 * 2
    time = collective_time("all_gather", 8, size, hardware.DGX_H100.intra_bandwidth_bytes_per_s, 0.0)
    assert time == pytest.approx(65.2 * US, abs=0.1 * US)


def test_scaling_book_ici_latency_bound_threshold():
    # sharding.md: "TPU v5e with 4.5e10 unidirectional ICI bandwidth, sending any buffer under 4.5e10 * 1e-6 = 45kB
    # will be latency bound": one hop's α equals its bandwidth term at 45 kB.
    link = hardware.ICI_V5E
    assert latency_bandwidth_crossover_bytes(
        "send_recv", 2, link.bandwidth_bytes_per_s, link.latency_s
    ) == pytest.approx(45e3)


def test_critical_intensities():
    # gpus.md quiz: H100 990e12 / 3.35e12 = 295, B200 2250e12 / 8e12 = 281; tpus.md: v5e 1.97e14 / 8.1e11 ≈ 243.
    for accelerator, value in ((hardware.H100, 295), (hardware.B200, 281), (hardware.TPU_V5E, 243)):
        assert (
            round(ridge_point_flops_per_byte(accelerator.peak("bf16"), accelerator.hbm_bandwidth_bytes_per_s)) == value
        )


def test_selene_matches_narayanan():
    c = hardware.SELENE_3072
    assert c.devices == 3072 and c.devices_per_node == 8
    assert c.accelerator.peak("bf16") == 312e12  # "A100 peak with 16-bit precision = 312 teraFLOP/s"
    assert c.inter_bandwidth_bytes_per_s == 25 * GB


@pytest.mark.parametrize("link", [hardware.INFINIBAND_HDR_8X, hardware.INFINIBAND_NDR_8X, hardware.EFA_P5])
def test_a_per_node_figure_needs_the_nodes_device_count(link):
    # No silent "one GPU per node": that default handed one GPU the whole node's 400 GB/s of NDR (issue 15).
    assert link.scope == "per node"
    with pytest.raises(ValueError, match="devices_per_node is required for a per-node figure"):
        link.one_way_bytes_per_s_per_device()
    assert link.one_way_bytes_per_s_per_device(devices_per_node=8) == pytest.approx(link.bandwidth_bytes_per_s / 8)
    # A per-GPU figure does not depend on the node's count.
    assert hardware.NVLINK4.one_way_bytes_per_s_per_device() == hardware.NVLINK4.one_way_bytes_per_s_per_device(8)


def test_ici_is_per_link_and_a_torus_axis_ring_uses_two_links():
    # A ring on one torus axis sends both ways at once, to both neighbours: 2 links' worth per chip.
    assert hardware.ICI_V4.scope == "per link"
    assert hardware.ICI_V4.one_way_bytes_per_s_per_device(links_per_device=2) == pytest.approx(100 * GB)
    assert hardware.ICI_V4.one_way_bytes_per_s_per_device(links_per_device=6) == pytest.approx(300 * GB)  # 3 axes
    with pytest.raises(ValueError, match="links_per_device must be 1"):
        hardware.NVLINK4.one_way_bytes_per_s_per_device(links_per_device=2)
    with pytest.raises(ValueError, match="links_per_device"):
        hardware.ICI_V4.one_way_bytes_per_s_per_device(links_per_device=0)


def test_tpu_v4_torus_axis_all_reduce_by_hand():
    # 1 GB all-reduced over one 16-chip axis of the 16×16×16 TPU v4 pod, as a bidirectional ring: two rings of
    # S/2 in opposite directions, 2(p−1) = 30 steps of 1 µs; each chip sends 2·15/16·S over 2 × 50 GB/s.
    # Scaling book sharding.md: T(AllReduce) = 2·V/W_ICI with W_ICI bidirectional (here 100 GB/s) → 20 ms for large p.
    bandwidth = hardware.ICI_V4.one_way_bytes_per_s_per_device(links_per_device=2)
    time = collective_time("all_reduce", 16, 1 * GB, bandwidth, hardware.ICI_V4.latency_s)
    assert time == pytest.approx(30e-6 + 2 * 15 / 16 * 1e9 / 100e9)  # 18.78 ms
    assert time == pytest.approx(2 * 1e9 / 100e9, rel=0.07)


def test_nvlink_alpha_comes_from_nccl_tuning_model_not_from_the_measurement():
    # src/graph/tuning.cc (ring, LL): 6.6 µs per call + 0.6 µs per NVLink hop, 14 hops for 8 GPUs → 1.07 µs/step.
    per_step = (hardware.NCCL_BASE_LATENCY_S + 14 * hardware.NCCL_NVLINK_HOP_LATENCY_S) / 14
    assert per_step == pytest.approx(15.0 / 14 * US)
    assert hardware.NVLINK4.latency_s == pytest.approx(per_step, rel=0.1)  # the preset rounds it to 1 µs
    # Checked against a row it was not derived from: nccl-tests 8×H100 all_reduce of 8 B, 12.90 µs out-of-place
    # (aws-samples/awsome-distributed-training, p5 NVLink run): the model's 14 µs is within 10 %.
    model = collective_time("all_reduce", 8, 8, hardware.NVLINK4.one_way_bytes_per_s_per_device(), per_step)
    assert model == pytest.approx(15.0 * US, rel=1e-3)
    assert collective_time(
        "all_reduce", 8, 8, hardware.NVLINK4.one_way_bytes_per_s_per_device(), hardware.NVLINK4.latency_s
    ) == pytest.approx(12.90 * US, rel=0.10)


def test_efa_p5_fabric_latency_is_the_measured_step_not_the_latency_the_plugin_reports():
    """aws/aws-ofi-nccl@2daf7d3: the plugin's tuner models a P5 network step at net_lat = 20.0 µs
    (src/tuner/nccl_ofi_model.cpp:15, '2 nodes, 8B RDMA w/imm lat'), while it reports latency = 75.0 µs to NCCL for
    p5 (src/platform-aws.cpp:133-137, props->latency in src/nccl_ofi_net.cpp:481). The shipped two-node p5 nccl-tests
    log, fitted by measure.calibrate_cluster, gives 26.5 µs per step: the 20 µs time, not the 75 µs report."""
    from course_lib import measure, nccl
    from course_lib.parallelism import PLAYBOOK_EFA
    from course_lib.units import US

    link = hardware.EFA_P5
    assert link.fabric_latency_s == 20 * US
    assert "net_lat = 20.0" in link.note and "75.0" in link.note and "not NCCL's latencyInter" in link.note
    assert abs(PLAYBOOK_EFA.fabric_latency_s - 20 * US) < abs(PLAYBOOK_EFA.fabric_latency_s - 75 * US) / 5
    # as a time, 75 µs would overshoot the log's 64 B all-reduce 2.7-fold; 20 µs, with the 4.8 µs launch floor every
    # call now carries (hardware.LAUNCH_FLOOR_S), overshoots its worst size by 6.9 %
    log = measure.read_nccl_tests(
        (Path(measure.DATA_DIR) / "nccl_tests" / "aws_2x_p5_16xH100_efa_all_reduce.txt").read_text()
    )
    sizes, measured = log.column("size_bytes").astype(float), log.column("median_s")

    def worst_over_measured(latency_us):
        cluster = replace(hardware.AWS_P5, inter_node_link=replace(link, fabric_latency_s=latency_us * US))
        return (nccl.estimate("all_reduce", cluster, 16, 2, sizes).time_s / measured).max()

    assert worst_over_measured(20) <= 1.07 and worst_over_measured(75) > 2.6
