"""nccl: NCCL's model of its own collectives against hand values from tuning.cc's constants, its own properties, bad
input, and every nccl-tests log the course ships (data/nccl_tests/), predicted from the machines' datasheets alone."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from course_lib import hardware, measure, nccl
from course_lib.hardware import AWS_P4DE, AWS_P5, DGX_A100, DGX_H100, GCP_A3_HIGH, GCP_A3_MEGA, NEBIUS_H100_IB
from course_lib.units import GB, MiB

US = 1e-6
FLOOR = 4.8 * US  # hardware.LAUNCH_FLOOR_S, added to every call's time
TWO_H100_NODES = NEBIUS_H100_IB  # 2 × 8 H100, NVLink 4, InfiniBand NDR 8 × 400 Gb/s, Intel hosts


def _pick(op, cluster, ranks, nodes, size, **override):
    call = nccl.estimate(op, cluster, ranks, nodes, size, **override)
    return call.algorithm, call.protocol, call.latency_s, call.time_s


def test_small_messages_match_the_worked_latencies_of_ncclS_constants():
    # shared/data/nccl_tuning_constants.md, "Worked α examples": one node of 8 H100, ring/LL 6.6 + 14 × 0.6 = 15.0 µs;
    # the tree/LL inside a node is a chain, 6.8 + 2 × 7 × 0.6 = 15.2 µs: no faster than the ring.
    algorithm, protocol, latency, _ = _pick("all_reduce", DGX_H100, 8, 1, 8)
    assert (algorithm, protocol, latency) == ("ring", "LL", pytest.approx(15.0 * US))
    assert _pick("all_reduce", DGX_H100, 8, 1, 8, algorithm="tree")[2] == pytest.approx(15.2 * US)
    # Two nodes of 8 H100 on InfiniBand (Intel hosts): tree/LL 6.8 + 2 × (7 × 0.6 + 5.0) = 25.2 µs; ring/LL
    # 6.6 + 28 × max(0.6, 1.0) + 2 × 2.7 = 40.0 µs; NCCL picks the tree.
    algorithm, protocol, latency, _ = _pick("all_reduce", TWO_H100_NODES, 16, 2, 8)
    assert (algorithm, protocol, latency) == ("tree", "LL", pytest.approx(25.2 * US))
    assert _pick("all_reduce", TWO_H100_NODES, 16, 2, 8, algorithm="ring")[2] == pytest.approx(40.0 * US)
    # AWS p5 (AMD hosts, EFA adding 20 µs per network step): tree/LL 6.8 + 2 × (7 × 0.6 + 5.0 + 20) = 65.2 µs;
    # ring/LL 6.6 + 28 × 2.0 (AMD's net overhead) + 2 × (2.7 + 20) = 108 µs.
    assert _pick("all_reduce", AWS_P5, 16, 2, 8)[:3] == ("tree", "LL", pytest.approx(65.2 * US))
    assert _pick("all_reduce", AWS_P5, 16, 2, 8, algorithm="ring", protocol="LL")[2] == pytest.approx(108.0 * US)


def test_large_messages_by_hand():
    # One node of 8 A100 (no NVLink SHARP): the ring with Simple, (8.4 + 14 × 3.4) µs + S / (240 GB/s × 8/14).
    algorithm, protocol, latency, time = _pick("all_reduce", DGX_A100, 8, 1, 16 * GB)
    assert (algorithm, protocol) == ("ring", "Simple")
    assert time == pytest.approx(FLOOR + 56.0 * US + 16 * GB / (240 * GB * 8 / 14))
    # Two H100 nodes: NVLink SHARP inside, a tree between: 25 + 2 × 20.9 µs, bus bandwidth 370.8 × 0.85 × 15/16 × 2
    # (the network's 2 × 400 GB/s does not bind), algorithm bandwidth × 16/30.
    algorithm, _, latency, time = _pick("all_reduce", TWO_H100_NODES, 16, 2, 16 * GB)
    assert algorithm == "nvls_tree" and latency == pytest.approx(66.8 * US)
    assert time == pytest.approx(FLOOR + 66.8 * US + 16 * GB / (370.8 * GB * 0.85 * 15 / 16 * 2 * 16 / 30))
    # The same forced to the flat ring with Simple: bus bandwidth min(370.8, 400) GB/s × 16/30; latency 8.4 + 28 ×
    # max(3.4, 3 × 1.0) + 2 × 14 µs, × 1.4 (NCCL's "plateau effect of ring" across nodes).
    ring = nccl.estimate("all_reduce", TWO_H100_NODES, 16, 2, 16 * GB, algorithm="ring", protocol="Simple")
    assert ring.latency_s == pytest.approx(1.4 * (8.4 + 28 * 3.4 + 28) * US)
    assert ring.bandwidth_bytes_per_s == pytest.approx(370.8 * GB * 16 / 30)


def test_pat_serves_one_gpu_per_node():
    # 4 ranks on 4 nodes, all-gather of 1 MiB: PAT, 8 + log2(4) × 14 / 3.5 + 2.8 × 4 = 27.2 µs at 0.75 × 50 GB/s,
    # against the ring's 8.4 + 3 × 14 µs at 50 GB/s × 4/3. At 1 GiB the ring's bandwidth wins.
    cluster = dataclasses.replace(TWO_H100_NODES, nodes=4)
    algorithm, _, latency, time = _pick("all_gather", cluster, 4, 4, MiB)
    assert algorithm == "pat" and latency == pytest.approx(27.2 * US)
    assert time == pytest.approx(FLOOR + 27.2 * US + MiB / (0.75 * 50 * GB))
    assert _pick("all_gather", cluster, 4, 4, 1024 * MiB)[0] == "ring"


def test_the_tuner_picks_the_fastest_and_candidates_list_them_all():
    rows = nccl.candidates("all_reduce", TWO_H100_NODES, 16, 2, 64 * MiB)
    times = [row["time_s"] for row in rows]
    assert times == sorted(times)
    assert {(row["algorithm"], row["protocol"]) for row in rows} == {
        *(("ring", p) for p in nccl.PROTOCOLS),
        *(("tree", p) for p in nccl.PROTOCOLS),
        ("nvls_tree", "Simple"),
    }  # NVLS alone needs one node
    best = nccl.estimate("all_reduce", TWO_H100_NODES, 16, 2, 64 * MiB)
    assert (best.algorithm, best.protocol, best.time_s) == (rows[0]["algorithm"], rows[0]["protocol"], FLOOR + times[0])


def test_arrays_agree_with_one_call_at_a_time_and_time_grows_with_size():
    sizes = np.logspace(0, 11, 400)
    for cluster, ranks, nodes in ((DGX_H100, 8, 1), (TWO_H100_NODES, 16, 2), (AWS_P4DE, 2, 2), (DGX_A100, 4, 1)):
        bulk = nccl.estimate("all_reduce", cluster, ranks, nodes, sizes)
        assert np.all(np.diff(bulk.time_s) >= 0), cluster.name  # a larger message never takes less time
        for i in (0, 150, 399):
            one = nccl.estimate("all_reduce", cluster, ranks, nodes, float(sizes[i]))
            assert (one.algorithm, one.protocol) == (bulk.algorithm[i], bulk.protocol[i])
            assert one.time_s == pytest.approx(bulk.time_s[i], rel=1e-12)
    groups = nccl.estimate("all_gather", TWO_H100_NODES, np.array([2, 8, 16]), np.array([1, 1, 2]), 1e8)
    assert groups.time_s.shape == (3,) and groups.time_s[2] > groups.time_s[1]


def test_one_rank_or_no_bytes_take_no_time():
    assert nccl.estimate("all_reduce", DGX_H100, 1, 1, 1e9).time_s == 0.0
    assert nccl.estimate("reduce_scatter", DGX_H100, 8, 1, 0).time_s == 0.0


@pytest.mark.parametrize(
    ("arguments", "override", "message"),
    [
        (("broadcast", DGX_H100, 8, 1, 1e6), {}, "op must be one of"),
        (("all_reduce", DGX_H100, 24, 2, 1e6), {}, "ranks / nodes must be at most the cluster's 8"),
        (("all_reduce", DGX_H100, 2, 3, 1e6), {}, "nodes must be at most ranks"),
        (("all_reduce", DGX_H100, 0, 1, 1e6), {}, "ranks"),
        (("all_reduce", DGX_H100, 8, 1, -1.0), {}, "payload_bytes"),
        (("all_reduce", DGX_H100, 8, 1, 1e6), {"algorithm": "pat"}, "algorithm must be one of"),
        (("all_reduce", DGX_H100, 8, 1, 1e6), {"algorithm": "nvls", "protocol": "LL"}, "protocol must be 'Simple'"),
        (("all_reduce", DGX_A100, 8, 1, 1e6), {"algorithm": "nvls"}, "does not run all_reduce on this group"),
        (("all_reduce", DGX_H100, 8, 1, 1e6), {"protocol": "LL64"}, "protocol must be one of"),
        (("all_reduce", "DGX H100", 8, 1, 1e6), {}, "cluster must be a hardware.Cluster"),
    ],
)
def test_bad_input_names_the_argument(arguments, override, message):
    with pytest.raises(ValueError, match=message):
        nccl.estimate(*arguments, **override)


def test_accelerators_nccl_has_no_tables_for_are_refused():
    tpu = hardware.Cluster("TPU", hardware.TPU_V5E, 4, 1, hardware.ICI_V5E, hardware.ICI_V5E)
    with pytest.raises(ValueError, match="architecture one of Ampere, Hopper, Blackwell.*'TPU v5e'"):
        nccl.estimate("all_reduce", tpu, 4, 1, 1e6)
    with pytest.raises(ValueError, match="ranks must be one number for candidates"):
        nccl.candidates("all_reduce", DGX_H100, np.array([2, 4]), 1, 1e6)


# The logs and the machines they ran on, from their header lines (data/README.md): presets built from datasheets.
# nccl-tests' logs: (cluster, nodes, ranks or None to read them from the log).
LOGS = {
    "aws_2x_p5_16xH100_efa_all_reduce.txt": (AWS_P5, 2, None),
    "nebius_2x8xH100_ib_all_reduce.txt": (NEBIUS_H100_IB, 2, None),
    "aws_p5_1node_8xH100_nvlink_all_reduce.txt": (AWS_P5, 1, None),
    "aws_2x_p4de_16xA100_efa_all_reduce.txt": (AWS_P4DE, 2, None),
    "mleng_1x8xA100_nvlink_all_reduce_massaged.txt": (DGX_A100, 1, None),
    "gcp_a3mega_2x8xH100_tcpxo_all_gather.txt": (GCP_A3_MEGA, 2, None),
    "gcp_a3high_2x8xH100_tcpx_all_gather.txt": (GCP_A3_HIGH, 2, None),
    "liplus_1x8xA100_nvlink_sendrecv.txt": (DGX_A100, 1, 8),
}
# other_allreduce_sweeps/: torch.distributed all-reduces timed one call at a time between two CUDA events on an idle
# device (all_reduce_bench.py at the snapshot, 744d01e1), so each call pays PyTorch's host overhead: the floor is
# hardware.TORCH_EAGER_LAUNCH_FLOOR_S. AWS P6-B200 (8 × B200, "8x 50GBps EFA v4 out", Intel Xeon hosts) has no preset:
# DGX B200 with EFA's 3,200 Gb/s and the aws-ofi-nccl plugin's P5 fabric latency (its P6 figure is not cited).
_TORCH = {"launch_floor_s": hardware.TORCH_EAGER_LAUNCH_FLOOR_S}
_P6_B200 = dataclasses.replace(hardware.DGX_B200, nodes=4, inter_node_link=hardware.EFA_P5, **_TORCH)
SWEEPS = {
    "8xH200 1 node": (dataclasses.replace(hardware.DGX_H200, **_TORCH), 8, 1),
    "8xB200 1 node": (dataclasses.replace(hardware.DGX_B200, **_TORCH), 8, 1),
    "8xB200 4 nodes": (_P6_B200, 32, 4),
}
_SWEEPS_FILE = "mleng_all_reduce_bench_8xH200_and_B200_1v4nodes.txt"
_OPTIMISTIC = (
    "NCCL's cost model is optimistic in the bandwidth regime: it gives NVLink SHARP 0.85 × 15/16 of NCCL's NVLink "
    "figure (591 GB/s of bus bandwidth on 8 H100s) where the logs reach 483 GB/s on one node and 467–487 GB/s on two, "
    "and it has no pipeline-fill cost, which the logs show as a 150–440 µs intercept of time against size above "
    "256 MiB; not a launch floor, which moves only the smallest of these sizes"
)
_TCPX = (
    "GPUDirect-TCPX moves data through the hosts' TCP stacks: the log plateaus at 50 GB/s of bus bandwidth, half of "
    "the four 200 Gb/s NICs' 100 GB/s that the datasheet (and NCCL's model) offers; predicted ÷ measured 0.17–0.53"
)
_ONE_PROCESS = (
    "the log was run as one process driving all 8 GPUs (all_reduce_perf -g 8): 43.8 µs at 32 KiB where NCCL's model "
    "and the launch floor, for one process per GPU, expect 20.5 µs; predicted ÷ measured 0.38–0.47 from 32 KiB to "
    "1 MiB, a ratio rather than an offset (the gap grows from 23 to 61 µs), so no per-call floor closes it"
)
_WARM_UP = (
    "the log's first row, 128 MiB, runs at 110.8 GB/s where the next three run at 188.6–195.1 GB/s: a first size "
    "slower than its successor, which no model monotone in size follows; predicted ÷ measured 0.47 there"
)
_SKEW = (
    "the 4-node sweep's small calls take 6.3 ms at 32 KiB, about 130× the one-node time at that size, and "
    "predicted ÷ measured stays below 0.5 up to 8 MiB (0.02 at 32 KiB): the script timed one call per trial after a "
    "barrier, so each call most likely waited for the last rank to leave it, and the ranks' skew across four nodes "
    "is timed with the all-reduce; no per-call floor follows a cost that falls from 6.3 ms to a few hundred µs"
)
_B200_NVLS = (
    "NCCL's cost model offers NVLink SHARP on 8 B200s 2 × 0.74 × 15/16 × 721.8 = 1,001 GB/s of bus bandwidth where "
    "the sweep reaches 741 GB/s at 4 GiB (845 GB/s at 16 GiB): predicted ÷ measured 0.56–0.74 from 4 MiB to 4 GiB, "
    "the bandwidth regime, which a launch floor does not move (median error 27.5 %)"
)
_B200_SKEW_TAIL = (
    "the one-call-per-trial timing above still weighs from 1 to 32 MiB, where the measured time is about twice the "
    "model's (predicted ÷ measured 0.47–0.57); from 512 MiB up the model is within 9 % (median error 28.2 %)"
)
MEDIAN_MISSES = {
    "aws_2x_p5_16xH100_efa_all_reduce.txt": _OPTIMISTIC + " (median error 25.2 %)",
    "nebius_2x8xH100_ib_all_reduce.txt": _OPTIMISTIC + " (median error 25.8 %)",
    "gcp_a3high_2x8xH100_tcpx_all_gather.txt": _TCPX + " (median error 50.1 %)",
}
WITHIN_2X_MISSES = {
    "gcp_a3high_2x8xH100_tcpx_all_gather.txt": _TCPX,
    "mleng_1x8xA100_nvlink_all_reduce_massaged.txt": _ONE_PROCESS,
    "liplus_1x8xA100_nvlink_sendrecv.txt": _WARM_UP,
}
SWEEP_MEDIAN_MISSES = {"8xB200 1 node": _B200_NVLS, "8xB200 4 nodes": _B200_SKEW_TAIL}
SWEEP_WITHIN_2X_MISSES = {"8xB200 4 nodes": _SKEW}


def _log_table(name):
    _cluster, nodes, ranks = LOGS[name]
    text = (Path(measure.DATA_DIR) / "nccl_tests" / name).read_text()
    return measure.read_nccl_tests(text, ranks=ranks, nodes=nodes)


def _model(cluster, op, ranks, nodes, sizes):
    if op == "send_recv":
        return nccl.send_recv(cluster, ranks, nodes, sizes).time_s
    return nccl.estimate(op, cluster, ranks, nodes, sizes).time_s


def _predicted_over_measured(name, **cluster_fields):
    cluster = dataclasses.replace(LOGS[name][0], **cluster_fields)
    table = _log_table(name)
    sizes, measured = table.column("size_bytes").astype(float), table.column("median_s")
    return sizes, _model(cluster, table.op, table.ranks, table.nodes, sizes) / measured


def _sweep(label):
    """(sizes B, measured s) of one of the torch.distributed sweeps: its busbw column read back to a time with
    nccl-tests' all-reduce factor 2(n − 1)/n, as the sweep computed it."""
    text = (Path(measure.DATA_DIR) / "other_allreduce_sweeps" / _SWEEPS_FILE).read_text()
    _cluster, ranks, nodes = SWEEPS[label]
    column = {"8xH200 1 node": 1, "8xB200 1 node": 1, "8xB200 4 nodes": 2}[label]
    block = text.split("4 nodes    | slowdown")[0] if label == "8xH200 1 node" else text.split("slowdown |")[1]
    units = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
    sizes, busbw = [], []
    for line in block.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0][-3:] in units and cells[0][:-3].isdigit():
            sizes.append(int(cells[0][:-3]) * units[cells[0][-3:]])
            busbw.append(float(cells[column].removesuffix("GBps")) * GB)
    sizes = np.array(sizes, dtype=float)
    return sizes, sizes * (2 * (ranks - 1) / ranks) / np.array(busbw)


def _sweep_predicted_over_measured(label):
    cluster, ranks, nodes = SWEEPS[label]
    sizes, measured = _sweep(label)
    return sizes, nccl.estimate("all_reduce", cluster, ranks, nodes, sizes).time_s / measured


def _marked(names, misses):
    return [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=misses[n])) if n in misses else n for n in names
    ]


def _median_error_from_1_mib(sizes, ratio):
    return float(np.median(np.abs(ratio[sizes >= MiB] - 1)))


def _assert_within_2x(label, sizes, ratio):
    worst = int(np.argmax(np.abs(np.log(ratio))))
    assert 0.5 <= ratio.min() and ratio.max() <= 2, (
        f"{label}: predicted/measured {ratio[worst]:.2f} at {sizes[worst]:.0f} B"
    )


@pytest.mark.parametrize("name", _marked(LOGS, MEDIAN_MISSES))
def test_median_error_from_1_mib_at_most_25_percent(name):
    sizes, ratio = _predicted_over_measured(name)
    error = _median_error_from_1_mib(sizes, ratio)
    assert error <= 0.25, f"{name}: median |predicted/measured − 1| = {error:.1%} at ≥ 1 MiB"


@pytest.mark.parametrize("name", _marked(LOGS, WITHIN_2X_MISSES))
def test_every_size_within_a_factor_of_2(name):
    _assert_within_2x(name, *_predicted_over_measured(name))


@pytest.mark.parametrize("label", _marked(SWEEPS, SWEEP_MEDIAN_MISSES))
def test_torch_sweeps_median_error_from_1_mib_at_most_25_percent(label):
    sizes, ratio = _sweep_predicted_over_measured(label)
    error = _median_error_from_1_mib(sizes, ratio)
    assert error <= 0.25, f"{label}: median |predicted/measured − 1| = {error:.1%} at ≥ 1 MiB"


@pytest.mark.parametrize("label", _marked(SWEEPS, SWEEP_WITHIN_2X_MISSES))
def test_torch_sweeps_every_size_within_a_factor_of_2(label):
    _assert_within_2x(label, *_sweep_predicted_over_measured(label))


def test_the_sweeps_are_read_whole():
    # 20 sizes each, 32 KiB to 16 GiB; the H200's 32 KiB row: 1.44 GB/s busbw, 32 KiB × 14/8 / 1.44 GB/s = 39.8 µs.
    for label in SWEEPS:
        sizes, measured = _sweep(label)
        assert (sizes[0], sizes[-1], sizes.size) == (32 * 1024, 16 * 2**30, 20), label
    assert _sweep("8xH200 1 node")[1][0] == pytest.approx(32 * 1024 * 14 / 8 / (1.44 * GB))
    assert _sweep("8xB200 4 nodes")[1][-1] == pytest.approx(16 * 2**30 * 62 / 32 / (381.80 * GB))


# --- the launch floor ------------------------------------------------------------------------------------------------

_FLOOR_FITTED_ON = ("nebius_2x8xH100_ib_all_reduce.txt", "aws_p5_1node_8xH100_nvlink_all_reduce.txt")


def _small_size_gaps(name):
    """measured − NCCL's model without a floor (s), at the log's sizes ≤ 1 KiB."""
    table = _log_table(name)
    sizes, measured = table.column("size_bytes").astype(float), table.column("median_s")
    bare = dataclasses.replace(LOGS[name][0], launch_floor_s=0.0)
    gaps = measured - _model(bare, table.op, table.ranks, table.nodes, sizes)
    return gaps[sizes <= 1024]


def test_the_launch_floor_is_its_fit_on_two_logs_and_holds_on_a_third():
    gaps = np.concatenate([_small_size_gaps(name) for name in _FLOOR_FITTED_ON])
    assert gaps.size == 16
    assert hardware.LAUNCH_FLOOR_S == pytest.approx(np.median(gaps), abs=0.05 * US)  # 4.8 µs
    # Held out: the AWS p5 pair (EFA, AMD hosts) sits 5.8 µs above NCCL's model at 8 B–1 KiB.
    assert np.median(_small_size_gaps("aws_2x_p5_16xH100_efa_all_reduce.txt")) == pytest.approx(5.85 * US, abs=0.1 * US)
    # With the floor, its small sizes are within 10 % (0.88–0.98 without it at 8 B–1 KiB).
    sizes, ratio = _predicted_over_measured("aws_2x_p5_16xH100_efa_all_reduce.txt")
    assert np.all(np.abs(ratio[sizes <= 1024] - 1) <= 0.10)


def test_the_torch_floor_predicts_the_h200_sweeps_small_sizes():
    # 25 µs (PyTorch's host overhead, cited) + NCCL's ring/LL 15.0 µs on 8 GPUs = 40.0 µs against 39.8 µs measured
    # at 32 KiB; without it the model is 2.6× too fast there.
    sizes, ratio = _sweep_predicted_over_measured("8xH200 1 node")
    assert ratio[0] == pytest.approx(1.01, abs=0.02)
    cluster, ranks, nodes = SWEEPS["8xH200 1 node"]
    bare = dataclasses.replace(cluster, launch_floor_s=0.0)
    measured = _sweep("8xH200 1 node")[1]
    assert nccl.estimate("all_reduce", bare, ranks, nodes, sizes[0]).time_s / measured[0] == pytest.approx(
        0.39, abs=0.02
    )


def test_the_floor_is_charged_once_per_call_and_the_tuner_chooses_without_it():
    for size in (8, 64 * 1024, 1e9):
        call = nccl.estimate("all_reduce", TWO_H100_NODES, 16, 2, size)
        best = nccl.candidates("all_reduce", TWO_H100_NODES, 16, 2, size)[0]
        assert (call.algorithm, call.protocol) == (best["algorithm"], best["protocol"])
        assert call.launch_floor_s == hardware.LAUNCH_FLOOR_S
        assert call.time_s == pytest.approx(best["time_s"] + FLOOR, rel=1e-12)
        slow = nccl.estimate("all_reduce", dataclasses.replace(TWO_H100_NODES, launch_floor_s=1.0), 16, 2, size)
        assert (slow.algorithm, slow.protocol) == (call.algorithm, call.protocol)  # even a 1 s floor changes no pick
    a2a = nccl.all_to_all(TWO_H100_NODES, 8, 1, 1e9)
    assert a2a.time_s == pytest.approx(FLOOR + 1 * US + 7 / 8 * 1e9 / (370.8 * GB))
    sr = nccl.send_recv(TWO_H100_NODES, 16, 2, 1e9)
    assert (sr.op, sr.algorithm, sr.protocol) == ("send_recv", "p2p", "Simple")
    assert sr.time_s == pytest.approx(FLOOR + 5 * US + 1e9 / (50 * GB))
    assert nccl.send_recv(TWO_H100_NODES, 8, 1, 1e9).time_s == pytest.approx(FLOOR + 1 * US + 1e9 / (370.8 * GB))
    assert nccl.send_recv(TWO_H100_NODES, 1, 1, 1e9).time_s == 0.0
    with pytest.raises(ValueError, match="launch_floor_s must be finite and ≥ 0"):
        dataclasses.replace(TWO_H100_NODES, launch_floor_s=-1e-6)


def test_the_logs_are_all_checked():
    shipped = {path.name for path in (Path(measure.DATA_DIR) / "nccl_tests").glob("*.txt")}
    assert shipped == set(LOGS)


# --- all-to-all: grouped point-to-point, not the tuner (enqueue.cc, ncclFuncAlltoAll) ---------------------------------


def test_all_to_all_by_hand():
    # NVLink 4 at NCCL's 370.8 GB/s per GPU and 1 µs; InfiniBand NDR 50 GB/s per GPU and 5 µs; S = 1 GB.
    one_node = nccl.all_to_all(TWO_H100_NODES, 8, 1, 1e9)
    assert (one_node.op, one_node.algorithm, one_node.protocol) == ("all_to_all", "p2p", "Simple")
    assert one_node.latency_s == pytest.approx(1 * US)
    assert one_node.time_s == pytest.approx(FLOOR + 1 * US + 7 / 8 * 1e9 / (370.8 * GB))
    # 16 ranks on 2 nodes: 7/16 of S over NVLink and 8/16 over the network at once; the network binds.
    two_nodes = nccl.all_to_all(TWO_H100_NODES, 16, 2, 1e9)
    assert two_nodes.time_s == pytest.approx(FLOOR + 5 * US + 8 / 16 * 1e9 / (50 * GB))
    assert two_nodes.bandwidth_bytes_per_s == pytest.approx(100 * GB)  # S / (T − floor − α)
    # One GPU per node: all but the own block leaves through the GPU's NIC share.
    spread = nccl.all_to_all(dataclasses.replace(TWO_H100_NODES, nodes=4), 4, 4, 1e9)
    assert spread.time_s == pytest.approx(FLOOR + 5 * US + 3 / 4 * 1e9 / (50 * GB))
    # 64 KiB on 8 ranks: 8 KiB per peer ≤ 16 KiB, NCCL's LL protocol (its time modelled as Simple's).
    small = nccl.all_to_all(TWO_H100_NODES, 8, 1, 64 * 1024)
    assert small.protocol == "LL"
    assert small.time_s == pytest.approx(FLOOR + 1 * US + 7 / 8 * 64 * 1024 / (370.8 * GB))
    assert nccl.all_to_all(TWO_H100_NODES, 8, 1, 8 * 16384 + 8).protocol == "Simple"


def test_all_to_all_where_nvlink_binds():
    # A network as fast as NVLink per GPU: 7/16 of S over NVLink at 370.8 GB/s against 8/16 over 3 × 370.8 GB/s.
    fast = dataclasses.replace(
        TWO_H100_NODES,
        inter_node_link=dataclasses.replace(
            TWO_H100_NODES.inter_node_link,
            bandwidth_bytes_per_s=TWO_H100_NODES.inter_node_link.bandwidth_bytes_per_s * 3 * 370.8 / 50,
        ),
    )
    assert fast.inter_bandwidth_bytes_per_s == pytest.approx(3 * 370.8 * GB)
    assert nccl.all_to_all(fast, 16, 2, 1e9).time_s == pytest.approx(FLOOR + 5 * US + 7 / 16 * 1e9 / (370.8 * GB))


def test_all_to_all_busbw_on_one_node_tends_to_nvlink():
    # nccl-tests' busbw = (n − 1)/n · S / T (alltoall.cu, AlltoAllGetBw): on one node it tends to NVLink's bandwidth.
    from course_lib.collectives import busbw_bytes_per_s

    call = nccl.all_to_all(TWO_H100_NODES, 8, 1, 100 * GB)
    assert busbw_bytes_per_s("all_to_all", 8, 100 * GB, call.time_s) == pytest.approx(370.8 * GB, rel=1e-4)


def test_all_to_all_arrays_agree_with_one_call_at_a_time():
    sizes = np.logspace(3, 10, 50)
    bulk = nccl.all_to_all(TWO_H100_NODES, 16, 2, sizes)
    assert np.all(np.diff(bulk.time_s) > 0)
    for i in (0, 20, 49):
        one = nccl.all_to_all(TWO_H100_NODES, 16, 2, float(sizes[i]))
        assert (one.algorithm, one.protocol) == (bulk.algorithm[i], bulk.protocol[i])
        assert one.time_s == pytest.approx(bulk.time_s[i], rel=1e-12)
    groups = nccl.all_to_all(TWO_H100_NODES, np.array([2, 8, 16]), np.array([1, 1, 2]), 1e9)
    assert groups.time_s.shape == (3,) and list(groups.protocol) == ["Simple"] * 3
    assert list(bulk.protocol[:3]) == ["LL"] * 3 and bulk.protocol[-1] == "Simple"
    assert groups.time_s[0] < groups.time_s[1] < groups.time_s[2]


def test_all_to_all_of_one_rank_or_no_bytes_takes_no_time():
    assert nccl.all_to_all(DGX_H100, 1, 1, 1e9).time_s == 0.0
    assert nccl.all_to_all(DGX_H100, 8, 1, 0).time_s == 0.0


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((DGX_H100, 24, 2, 1e6), "ranks / nodes must be at most the cluster's 8"),
        ((DGX_H100, 2, 3, 1e6), "nodes must be at most ranks"),
        ((DGX_H100, 0, 1, 1e6), "ranks"),
        ((DGX_H100, 8, 1, -1.0), "payload_bytes"),
        (("DGX H100", 8, 1, 1e6), "cluster must be a hardware.Cluster"),
    ],
)
def test_all_to_all_bad_input_names_the_argument(arguments, message):
    with pytest.raises(ValueError, match=message):
        nccl.all_to_all(*arguments)


def test_p2p_link_is_nvlink_inside_a_node_and_the_nic_share_across():
    assert nccl.p2p_link(TWO_H100_NODES, False) == (pytest.approx(1 * US), pytest.approx(370.8 * GB))
    assert nccl.p2p_link(TWO_H100_NODES, True) == (pytest.approx(5 * US), pytest.approx(50 * GB))
    with pytest.raises(ValueError, match="cluster must be a hardware.Cluster"):
        nccl.p2p_link("DGX H100", True)
