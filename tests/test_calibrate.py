"""measure.calibrate_cluster: a cluster fitted to measured collective times, and read_nccl_tests' placement (nodes).

The fit is checked three ways: on tables the model itself made (it must give the parameters back), on two published
nccl-tests logs (the calibrated model must follow them), and on a live MPI sweep of this machine (fit the all-reduce,
predict the other collectives).
"""

import dataclasses
import math
import warnings
from types import MappingProxyType

import numpy as np
import pytest

from course_lib import budget, hardware, measure, parallelism, serving
from course_lib.measure import DATA_DIR, CalibrationWarning, Measurements, Row, calibrate_cluster, read_nccl_tests
from course_lib.units import GB, US, MiB

LOGS = DATA_DIR / "nccl_tests"
SIZES = 2.0 ** np.arange(3, 34, 1)  # 8 B – 8 GiB, as nccl-tests' -b 8 -e 8G -f 2


def model_table(cluster, op, ranks, nodes, sizes=SIZES):
    """A table whose times are the model's own (``budget.group_collective_time``) for ``ranks`` on ``nodes``."""
    stride = cluster.devices_per_node // (ranks // nodes)
    times = budget.group_collective_time(op, cluster, ranks, stride, np.asarray(sizes, dtype=float))
    rows = tuple(Row(op, "model", ranks, int(s), float(t), float(t), float(t), s / t, s / t, 1, False)
                 for s, t in zip(sizes, times, strict=True))  # fmt: skip
    return Measurements(rows, {"source": "the model", "nodes": nodes})


def with_links(cluster, intra=None, inter=None):
    return dataclasses.replace(
        cluster, intra_node_link=intra or cluster.intra_node_link, inter_node_link=inter or cluster.inter_node_link
    )


def log(name, nodes):
    return read_nccl_tests((LOGS / name).read_text(), nodes=nodes)


def errors(cluster, table):
    """(sizes, relative errors) of the cluster's model on a table's rows, placed as calibrate_cluster places them."""
    stride = cluster.devices_per_node // (table.ranks // table.nodes)
    sizes = table.size_bytes.astype(float)
    predicted = budget.group_collective_time(table.op, cluster, table.ranks, stride, sizes)
    return sizes, (predicted - table.median_s) / table.median_s


# A cluster for this machine: two CPU cores on one node, talking through MPICH's shared memory. Not an NVIDIA GPU
# (architecture ""), so budget runs MPI's flat α–β ring on it. The starting figures are guesses the fit replaces.
VM_CORE = hardware.Accelerator(
    "course VM core", MappingProxyType({"fp32": 5e10}), 8 * GB, 10 * GB, "guess: one core of the course's VM"
)
SHARED_MEMORY = hardware.Link("shared memory", 10 * GB, "one-way", "per GPU", "nominal", 1 * US, "guess", "guess")
NO_NETWORK = hardware.Link("no network", 1 * GB, "one-way", "per node", "nominal", 10 * US, "guess", "guess")
VM = hardware.Cluster("the course's VM, 2 cores", VM_CORE, 2, 1, SHARED_MEMORY, NO_NETWORK)


# --- read_nccl_tests knows its placement ----------------------------------------------------------------------------

RANK_LINES = """#  Rank  0 Group  0 Pid  11 on node-a device  0 [0x1b] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  12 on node-a device  1 [0x2c] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid  21 on node-b device  0 [0x1b] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid  22 on node-b device  1 [0x2c] NVIDIA H100 80GB HBM3
#       size    count   type  redop  root    time  algbw  busbw #wrong    time  algbw  busbw #wrong
        1024      256  float    sum    -1   20.00   0.05   0.08      0   20.00   0.05   0.08      0
"""


def test_nodes_are_read_from_the_rank_lines_or_given():
    table = read_nccl_tests(RANK_LINES, op="all_reduce")
    assert (table.ranks, table.nodes, table.conditions["nodes"]) == (4, 2, 2)
    assert read_nccl_tests(RANK_LINES, op="all_reduce", nodes=2).nodes == 2
    shipped = (LOGS / "nebius_2x8xH100_ib_all_reduce.txt").read_text()  # no rank lines: unknown unless given
    assert read_nccl_tests(shipped).nodes is None
    assert read_nccl_tests(shipped, nodes=2).nodes == 2
    assert read_nccl_tests(shipped, nodes=16).nodes == 16


def test_nodes_survive_a_csv_round_trip():
    table = read_nccl_tests(RANK_LINES, op="all_reduce")
    assert Measurements.from_csv(table.to_csv()) == table
    assert Measurements.from_csv(table.to_csv()).nodes == 2


@pytest.mark.parametrize(
    "nodes, message",
    [
        (3, "nodes must divide ranks"),
        (0, "nodes must be an integer ≥ 1"),
        (1.5, "nodes must be an integer ≥ 1"),
        ("2", "nodes must be a number"),
        (4, "nodes must match the log, whose rank lines name 2 hosts"),
    ],
)
def test_bad_nodes_are_refused(nodes, message):
    with pytest.raises(ValueError, match=message):
        read_nccl_tests(RANK_LINES, op="all_reduce", nodes=nodes)


# --- the fit gives back the parameters of tables the model made ------------------------------------------------------


def test_round_trip_nvlink_bandwidth_and_hop_latency():
    link = dataclasses.replace(hardware.NVLINK4, nccl_bandwidth_bytes_per_s=250 * GB, fabric_latency_s=0.4 * US)
    truth = with_links(hardware.DGX_H100, intra=link)
    fitted = calibrate_cluster(hardware.DGX_H100, model_table(truth, "all_reduce", 8, 1))
    intra = fitted.intra_node_link
    assert intra.nccl_bandwidth_bytes_per_s == pytest.approx(250 * GB, rel=0.01)
    assert intra.fabric_latency_s == pytest.approx(0.4 * US, rel=0.01)
    assert (intra.basis, intra.direction, intra.scope) == ("measured", "one-way", "per GPU")
    assert fitted.inter_node_link == hardware.DGX_H100.inter_node_link  # no multi-node table: the network is kept
    assert fitted.name == "DGX H100 (one node), calibrated (in node)"


def test_round_trip_network_bandwidth_and_fabric_latency_from_two_placements():
    network = dataclasses.replace(hardware.INFINIBAND_NDR_8X, bandwidth_bytes_per_s=150 * GB, fabric_latency_s=12 * US)
    truth = with_links(hardware.NEBIUS_H100_IB, inter=network)
    tables = [model_table(truth, "all_reduce", 16, 2), model_table(truth, "all_gather", 2, 2, SIZES[:25])]
    fitted = calibrate_cluster(hardware.NEBIUS_H100_IB, tables)
    inter = fitted.inter_node_link
    assert inter.bandwidth_bytes_per_s == pytest.approx(150 * GB, rel=0.01)
    assert inter.fabric_latency_s == pytest.approx(12 * US, rel=0.01)
    assert (inter.basis, inter.direction, inter.scope) == ("measured", "one-way", "per node")
    assert fitted.intra_node_link == hardware.NEBIUS_H100_IB.intra_node_link
    assert "tables[0]: the model, all_reduce, 16 ranks on 2 nodes; tables[1]" in inter.source


def test_round_trip_alpha_and_bandwidth_of_the_mpi_ring():
    truth = with_links(VM, intra=dataclasses.replace(SHARED_MEMORY, bandwidth_bytes_per_s=2.5 * GB, latency_s=4 * US))
    fitted = calibrate_cluster(VM, model_table(truth, "all_reduce", 2, 1, SIZES[:24]))
    intra = fitted.intra_node_link
    assert intra.bandwidth_bytes_per_s == pytest.approx(2.5 * GB, rel=0.01)
    assert intra.latency_s == pytest.approx(4 * US, rel=0.01)
    assert intra.nccl_bandwidth_bytes_per_s is None and intra.fabric_latency_s == 0
    assert "α per step 4 µs" in intra.note and "relative error median 0.0%" in intra.note


def test_a_network_fit_on_a_one_node_cluster_sets_its_network():
    network = dataclasses.replace(hardware.INFINIBAND_NDR_8X, bandwidth_bytes_per_s=100 * GB)
    truth = with_links(hardware.NEBIUS_H100_IB, inter=network)
    one_node = dataclasses.replace(hardware.NEBIUS_H100_IB, nodes=1)
    fitted = calibrate_cluster(one_node, model_table(truth, "all_reduce", 16, 2))
    assert fitted.nodes == 1
    assert fitted.inter_node_link.bandwidth_bytes_per_s == pytest.approx(100 * GB, rel=0.01)


def test_a_parameter_the_tables_do_not_constrain_keeps_the_clusters_value():
    # On two nodes of DGX H100 the datasheet's 400 GB/s network never binds an all-reduce (NVLink does): a table the
    # model made there cannot say what the network's bandwidth is, only that it is at least what NVLink allows.
    fitted = calibrate_cluster(hardware.NEBIUS_H100_IB, model_table(hardware.NEBIUS_H100_IB, "all_reduce", 16, 2))
    inter = fitted.inter_node_link
    assert inter.bandwidth_bytes_per_s == pytest.approx(400 * GB)
    assert "(the cluster's: the tables do not tell it from the best fit" in inter.note


def test_the_fit_evaluates_the_model_about_30_times_per_scope(monkeypatch):
    # The fit's speed is its model evaluations (about 1.5 ms each on 30 rows): `make bench` times it, this counts them.
    calls = []
    original = budget.group_collective_time
    monkeypatch.setattr(budget, "group_collective_time", lambda *a: calls.append(1) or original(*a))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        calibrate_cluster(hardware.AWS_P5, log("aws_p5_1node_8xH100_nvlink_all_reduce.txt", 1))
    assert len(calls) <= 30, len(calls)


# --- on the shipped logs ------------------------------------------------------------------------------------------


def test_nebius_and_p5_logs_calibrate_a_cluster_that_follows_them():
    nebius = log("nebius_2x8xH100_ib_all_reduce.txt", 2)
    p5 = log("aws_p5_1node_8xH100_nvlink_all_reduce.txt", 1)
    with pytest.warns(CalibrationWarning) as caught:
        fitted = calibrate_cluster(hardware.NEBIUS_H100_IB, [nebius, p5])
    intra, inter = fitted.intra_node_link, fitted.inter_node_link
    figures = (
        f"NVLink {intra.nccl_bandwidth_bytes_per_s / GB:.0f} GB/s per GPU + {intra.fabric_latency_s / US:.3f} µs per "
        f"hop; network {inter.bandwidth_bytes_per_s / GB:.0f} GB/s per node + {inter.fabric_latency_s / US:.2f} µs "
        f"per step\n{intra.note}\n{inter.note}"
    )
    residuals = {name: errors(fitted, table) for name, table in (("nebius", nebius), ("p5", p5))}
    large = np.concatenate([np.abs(r[s >= MiB]) for s, r in residuals.values()])
    medians = {name: float(np.median(np.abs(r[s >= MiB]))) for name, (s, r) in residuals.items()}
    assert np.median(large) <= 0.25, f"median |error| at ≥ 1 MiB {np.median(large):.1%}, {medians}; {figures}"
    assert max(medians.values()) <= 0.25, f"{medians}; {figures}"
    # What the fit found (figures in the messages): NVLink below NCCL's 370.8 GB/s count, which the p5 log's large
    # sizes set (274 GB/s); a few µs of fabric latency per network step (2.1 µs). With the launch floor in the model
    # the network's bandwidth is no longer flat in the error: the fit lowers it to 210 GB/s per node, below the
    # datasheet's 400, which slows the tree's 512 KiB–8 MiB calls that NCCL's model gives too fast (a fit absorbing
    # that, not a measurement of the NICs).
    assert 200 * GB < intra.nccl_bandwidth_bytes_per_s < 370.8 * GB, figures
    assert 150 * GB < inter.bandwidth_bytes_per_s < 400 * GB and "the tables do not tell it" not in inter.note, figures
    assert 1 * US < inter.fabric_latency_s < 10 * US, figures
    assert any("-26% at 16 MiB" in str(w.message) for w in caught), [str(w.message) for w in caught]


def test_a_send_recv_table_is_read_and_fitted():
    # nccl-tests' sendrecv_perf on one node of 8 A100s (li-plus/playground, data/README.md): busbw = algbw, so the
    # log gives no rank count; each rank sends to the next over NVLink, the model nccl.send_recv on p2p_link.
    text = (LOGS / "liplus_1x8xA100_nvlink_sendrecv.txt").read_text()
    with pytest.raises(ValueError, match="ranks must be given for send_recv"):
        read_nccl_tests(text)
    table = read_nccl_tests(text, ranks=8, nodes=1)
    assert (table.op, table.ranks, table.nodes, len(table)) == ("send_recv", 8, 1, 4)
    assert table.busbw_bytes_per_s[-1] == table.algbw_bytes_per_s[-1] == 195.10 * GB
    before = np.median(np.abs(errors(hardware.DGX_A100, table)[1]))  # NCCL's 240 GB/s NVLink count: 0.47–0.81
    fitted = calibrate_cluster(hardware.DGX_A100, table)
    after = errors(fitted, table)[1]
    link = fitted.intra_node_link
    figures = f"{link.nccl_bandwidth_bytes_per_s / GB:.1f} GB/s, {before:.1%} → {np.median(np.abs(after)):.1%}"
    # 1 GiB in 5.50 ms at the fitted bandwidth: B ≈ 195 GB/s × (1 − α/T); the fit weighs the slow first row too.
    assert 190 * GB < link.nccl_bandwidth_bytes_per_s < 240 * GB, figures
    assert before == pytest.approx(0.20, abs=0.01) and np.median(np.abs(after)) < 0.12, figures
    assert link.basis == "measured" and "send_recv" in link.source


def test_a_calibrated_cluster_runs_everywhere_a_cluster_does():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        fitted = calibrate_cluster(
            hardware.NEBIUS_H100_IB,
            [log("nebius_2x8xH100_ib_all_reduce.txt", 2), log("aws_p5_1node_8xH100_nvlink_all_reduce.txt", 1)],
        )
    model, plan = parallelism.LLAMA3_8B, parallelism.ParallelPlan(tensor_parallel=8, data_parallel=2)
    assert budget.group_collective_time("all_reduce", fitted, 16, 1, 1e9) > 0
    steps = [budget.step_time(model, plan, c, calibration=None).total_s for c in (hardware.NEBIUS_H100_IB, fitted)]
    assert steps[1] > steps[0]  # the measured NVLink is slower than NCCL's count of it
    found = budget.search_plans(model, fitted, 64, micro_batch_sizes=(1,))
    assert len(found) > 0 and found.plan(0).devices == 16
    assert budget.partition_report(model, plan, fitted).step.total_s > 0
    report = serving.serving_report(parallelism.LLAMA3_70B, fitted, 8, 1, 8, 1024, 64)
    assert report.step.time_per_output_token_s > 0


def test_a_fit_that_misses_a_large_size_warns_with_the_worst_size():
    # A bandwidth that halves from 64 MiB on (a cache running out): one B cannot follow both halves.
    sizes = 2.0 ** np.arange(10, 31)
    times = 5 * US + sizes / np.where(sizes < 64 * MiB, 20 * GB, 10 * GB)
    rows = tuple(
        Row("all_reduce", "x", 2, int(s), t, t, t, s / t, s / t, 1, False) for s, t in zip(sizes, times, strict=True)
    )
    with pytest.warns(CalibrationWarning, match=r"misses the measured time by [+-]\d+% at \d+ [MG]iB"):
        calibrate_cluster(VM, Measurements(rows, {"nodes": 1}))


# --- on this machine, with MPI ------------------------------------------------------------------------------------

MPI_SIZES = [8, 64, 1024, 16384, 131072] + [2**k for k in range(20, 27)]  # a few small ones, then 1 MiB – 64 MiB


@pytest.fixture(scope="module")
def vm_sweeps():
    """All-reduce, all-gather and reduce-scatter on 2 ranks, MPICH's own choice of algorithm, in one MPI job."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # more ranks than cores, on a 1-core machine
        table = measure.run_collective_sweeps(
            [(op, "auto") for op in ("all_reduce", "all_gather", "reduce_scatter")], 2, MPI_SIZES, iterations=8
        )
    return {op: table.select(op=op) for op in ("all_reduce", "all_gather", "reduce_scatter")}


@pytest.mark.slow
def test_an_mpi_sweep_calibrates_the_vm(vm_sweeps):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        fitted = calibrate_cluster(VM, vm_sweeps["all_reduce"])
    intra = fitted.intra_node_link
    assert intra.basis == "measured" and "MPICH" in intra.source and "all_reduce, 2 ranks on 1 node" in intra.source
    assert 0.1 * GB < intra.bandwidth_bytes_per_s < 100 * GB and 0 < intra.latency_s < 1e-3, intra.note
    # The α–β ring moves the same bytes in an all-gather as in a reduce-scatter and has no reduction term, so it
    # predicts the two alike: half of the all-reduce's bandwidth time.
    sizes = vm_sweeps["all_gather"].size_bytes.astype(float)
    gather, scatter = (budget.group_collective_time(op, fitted, 2, 1, sizes) for op in ("all_gather", "reduce_scatter"))
    np.testing.assert_allclose(gather, scatter)


@pytest.mark.slow
@pytest.mark.xfail(
    raises=AssertionError,
    strict=False,
    reason="out of reach on the course VM, for two reasons. The model: the α–β ring budget runs for a CPU cluster "
    "has no reduction term, so a fit on the all-reduce predicts all-gather = reduce-scatter = half the all-reduce, "
    "while the reduce-scatter (which sums) takes 1.5–2.4× the all-gather (which copies). The machine: shared with "
    "other jobs, its large sizes vary 2× from run to run, so that even the all-reduce's own fit misses its sizes ≥ "
    "1 MiB by 12–57 %. Median |error| at ≥ 1 MiB over 19 runs: all-gather 16–66 %, reduce-scatter 12–66 %",
)
def test_an_all_reduce_fit_predicts_all_gather_and_reduce_scatter(vm_sweeps):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)
        fitted = calibrate_cluster(VM, vm_sweeps["all_reduce"])
    medians = {}
    for op in ("all_gather", "reduce_scatter"):
        sizes, relative = errors(fitted, vm_sweeps[op])
        medians[op] = float(np.median(np.abs(relative[sizes >= MiB])))
    assert max(medians.values()) <= 0.25, f"median |error| at ≥ 1 MiB: {medians}; {fitted.intra_node_link.note}"


# --- bad input ------------------------------------------------------------------------------------------------------


def _table(op="all_reduce", ranks=8, nodes=1, sizes=(1024, 2**20, 2**24), **conditions):
    rows = tuple(Row(op, "nccl", ranks, s, 1e-4 + s / 1e11, 0, 0, 1, 1, 1, False) for s in sizes)
    return Measurements(rows, ({} if nodes is None else {"nodes": nodes}) | conditions)


def _two_algorithms():
    rows = _table().rows
    return Measurements(rows + tuple(row._replace(algorithm="ring") for row in rows), {"nodes": 1})


# (cluster, tables, what the message must say), as tests/test_bad_input.py tables its cases
BAD = [
    (hardware.DGX_H100, _table(nodes=None), r"tables\[0\] .* has no placement"),
    (hardware.DGX_H100, [_table(), _table(ranks=16, nodes=None)], r"tables\[1\] .* has no placement"),
    (hardware.DGX_H100, _table(ranks=16, nodes=1), r"16 ranks per node, more than the cluster's devices_per_node"),
    (hardware.DGX_H100, _table(ranks=6, nodes=2), "3 ranks per node must divide the cluster's devices_per_node"),
    (hardware.DGX_H100, _table(ranks=8, nodes=3), "nodes=3, which does not divide its 8 ranks"),
    (hardware.DGX_H100, _table(sizes=(1024, 2**20)), "'in node' scope must hold at least 3 different sizes"),
    (hardware.DGX_H100, _table(ranks=16, nodes=2, sizes=(8, 8, 8)), "'across nodes' scope must hold at least 3"),
    (hardware.DGX_H100, _table(op="broadcast"), r"tables\[0\]: .*, broadcast, 8 ranks on 1 node measures 'broadcast'"),
    (hardware.DGX_H100, _table(op="all_to_all"), "measures 'all_to_all'"),
    (hardware.DGX_H100, [], "tables must be a Measurements or a non-empty sequence"),
    (hardware.DGX_H100, "log.txt", "tables must be a Measurements"),
    (hardware.DGX_H100, 3, "tables must be a Measurements"),
    (hardware.DGX_H100, Measurements(()), r"tables\[0\] has no rows"),
    (hardware.DGX_H100, _table(sizes=(0, 1024, 4096)), "sizes ≥ 1 byte and finite times > 0"),
    (hardware.DGX_H100, _table(nodes="two"), "nodes must be a number"),
    (hardware.DGX_H100, Measurements.concat([_table(), _table(op="all_gather")]), r"tables\[0\]: .* values of op"),
    (hardware.DGX_H100, Measurements.concat([_table(), _table(ranks=4)]), r"tables\[0\]: .* values of ranks"),
    (hardware.DGX_H100, [_table(), _two_algorithms()], r"tables\[1\]: .* values of algorithm"),
    ("DGX H100", _table(), "cluster must be a hardware.Cluster"),
]


@pytest.mark.parametrize("cluster, tables, message", BAD)
def test_bad_input_says_what_is_missing(cluster, tables, message):
    with pytest.raises(ValueError, match=message):
        calibrate_cluster(cluster, tables)


def test_a_nan_time_is_refused():
    times = {8: 1e-5, 64: math.nan, 512: 1e-5}
    rows = tuple(Row("all_reduce", "x", 2, s, t, 0, 0, 1, 1, 1, False) for s, t in times.items())
    with pytest.raises(ValueError, match="finite times > 0"):
        calibrate_cluster(VM, Measurements(rows, {"nodes": 1}))
