"""course_lib.measure: real MPI jobs (MPICH from the mpich wheel, through mpi4py), no mocks.

Kept lean for a 2-core machine: few sizes, one or two iterations, every MPICH algorithm of every op in ~10 jobs per
rank count (each job sets one algorithm per op). The published logs are checked against their own columns.
"""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
import time
import uuid
import warnings
from pathlib import Path

import numpy as np
import pytest

from course_lib import collectives
from course_lib.measure import (
    MPICH_ALGORITHMS,
    SCHEDULES,
    MeasurementError,
    Measurements,
    Row,
    StepMeasurements,
    compare_algorithms,
    fit_alpha_beta,
    measure_step,
    parse_sizes,
    read_nccl_tests,
    run_collective_sweep,
    run_collective_sweeps,
)

ROOT = Path(__file__).resolve().parent.parent
NCCL_LOGS = ROOT / "course_lib" / "data" / "nccl_tests"
MPI_RUNS = ROOT / "course_lib" / "data" / "mpi"

# Each MPI job sets one algorithm per op (MPICH reads MPIR_CVAR_<OP>_INTRA_ALGORITHM at start).
JOBS = [[case for case in job if case] for job in itertools.zip_longest(*[[(op, a) for a in algorithms]
        for op, algorithms in MPICH_ALGORITHMS.items()])]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("ranks", [2, 3])
def test_every_mpich_algorithm_returns_correct_data(ranks):
    # The worker compares every result with the exact expected values and aborts the job otherwise, so a job that
    # completes proves the data; here we check every (op, algorithm) reported each size with sane times.
    sizes = [4, 4096]
    seen = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 3 ranks on 2 cores warns (tested below)
        for job in JOBS:
            table = run_collective_sweeps(job, ranks, sizes, iterations=1, warmup=1, timeout_s=60)
            for row in table:
                assert row.ranks == ranks and row.median_s > 0 and np.isfinite(row.median_s)
                seen.add((row.op, row.algorithm))
            assert len(table) == len(job) * len(sizes)
    assert seen == {(op, a) for op, algorithms in MPICH_ALGORITHMS.items() for a in algorithms}


@pytest.mark.slow
def test_fallback_is_marked_and_left_out_of_the_fit():
    # Recursive-doubling all-gather needs a power-of-two rank count: at 3 ranks MPICH falls back and says so.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = run_collective_sweep("all_gather", 3, [12, 1200], "recursive_doubling", iterations=1, warmup=1)
    assert all(row.fell_back for row in table)
    with pytest.raises(ValueError, match="rows where MPICH ran the algorithm"):
        fit_alpha_beta(table)


@pytest.mark.slow
def test_payloads_are_rounded_to_whole_elements_per_rank():
    table = run_collective_sweeps([("all_gather", "ring"), ("all_reduce", "ring")], 2, [10, 100], iterations=1)
    sizes = {(row.op, row.size_bytes) for row in table}
    # all_gather: S splits into 2 chunks of whole float32s (8 and 96 B); all_reduce: whole float32s (8 and 100 B).
    assert sizes == {("all_gather", 8), ("all_gather", 96), ("all_reduce", 8), ("all_reduce", 100)}


@pytest.mark.slow
def test_a_two_rank_sweep_gives_finite_times_that_grow_with_size():
    # 64× steps: on a shared machine the median of a size can jump a few-fold, not 64-fold
    table = run_collective_sweep("all_reduce", 2, [2**12, 2**18, 2**24], "ring", iterations=5, warmup=1)
    times = table.median_s
    assert np.all(np.isfinite(times)) and np.all(times > 0)
    assert np.all(table.p10_s <= times) and np.all(times <= table.p90_s)
    assert times[1] > times[0] and times[2] > times[1]
    assert table.conditions["ranks_exceed_cores"] is False or table.conditions["cores"] < 2
    assert table.conditions["mpi_library"].startswith("MPICH")
    # nccl-tests' definitions: algbw = S/t, busbw = algbw·2(p−1)/p = algbw at p = 2.
    np.testing.assert_allclose(table.algbw_bytes_per_s, table.size_bytes / times, rtol=1e-12)
    np.testing.assert_allclose(table.busbw_bytes_per_s, table.algbw_bytes_per_s * 1.0, rtol=1e-12)


@pytest.mark.slow
def test_compare_algorithms_pools_the_rounds():
    table = compare_algorithms("all_reduce", 2, [64, 4096], ["ring", "recursive_doubling"], rounds=2, iterations=2,
                               warmup=1)  # fmt: skip
    assert {(row.algorithm, row.size_bytes, row.iterations) for row in table} == {
        (a, s, 4) for a in ("ring", "recursive_doubling") for s in (64, 4096)
    }
    assert table.conditions["rounds"] == 2 and table.conditions["iterations"] == 4
    with pytest.raises(ValueError, match="without repeats"):
        compare_algorithms("all_reduce", 2, [64], ["ring", "ring"])
    with pytest.raises(ValueError, match="algorithm must be one of"):
        compare_algorithms("all_gather", 2, [64], ["ring", "rabenseifner"])


@pytest.mark.slow
def test_more_ranks_than_cores_warns_and_says_so_in_the_result():
    cores = len(__import__("os").sched_getaffinity(0))
    with pytest.warns(UserWarning, match="ranks on .* cores"):
        table = run_collective_sweep("all_reduce", cores + 1, [64], "auto", iterations=1, warmup=1)
    assert table.conditions["ranks_exceed_cores"] is True


def _fault(kind, where, tag):
    return {"rank": 1, "kind": kind, "where": where, "tag": tag}


def _workers_with(tag):
    hits = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if tag in (entry / "cmdline").read_bytes().decode(errors="replace"):
                hits.append(entry.name + " " + (entry / "stat").read_text())
        except OSError:
            continue
    return hits


@pytest.mark.slow
def test_a_wrong_result_raises_with_the_ranks_message():
    tag = uuid.uuid4().hex
    with pytest.raises(MeasurementError, match=r"rank 1: wrong result of all_reduce at 64 B: element 15 is 4.0"):
        run_collective_sweeps(
            [("all_reduce", "ring")], 2, [64], iterations=2, warmup=1, _fault=_fault("corrupt", 0, tag)
        )
    assert _workers_with(tag) == []


@pytest.mark.slow
def test_a_rank_that_dies_fails_the_sweep_with_its_stderr():
    tag = uuid.uuid4().hex
    with pytest.raises(MeasurementError, match=r"(?s)exit status.*rank 1: injected fault: exiting with status 7"):
        run_collective_sweeps([("all_reduce", "auto")], 2, [64], iterations=1, _fault=_fault("die", "start", tag))
    assert _workers_with(tag) == []


@pytest.mark.slow
def test_a_hanging_rank_is_killed_at_the_timeout_with_no_process_left():
    tag = uuid.uuid4().hex
    start = time.monotonic()
    with pytest.raises(MeasurementError, match=r"(?s)timeout_s=2 s.*rank 1: injected fault: hanging"):
        run_collective_sweeps(
            [("all_reduce", "auto")], 2, [64, 128], iterations=1, timeout_s=2, _fault=_fault("hang", 1, tag)
        )
    assert time.monotonic() - start < 10
    assert _workers_with(tag) == [], "worker processes were left behind after the timeout"


def test_missing_mpiexec_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MeasurementError, match="pip install mpi4py mpich"):
        run_collective_sweep("all_reduce", 2, [64])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ranks": 1}, "ranks must be an integer ≥ 2"),
        ({"sizes_bytes": "8B:lots"}, "sizes must be sizes like"),
        ({"sizes_bytes": "1MB:1KB"}, "sizes must go from small to large"),
        ({"sizes_bytes": []}, "sizes must not be empty"),
        ({"algorithm": "bruck"}, "algorithm must be one of .* for op='all_reduce'; got 'bruck'"),
        ({"op": "allreduce"}, "op must be one of"),
        ({"iterations": 0}, "iterations must be an integer ≥ 1"),
        ({"timeout_s": 0}, "timeout_s must be finite and > 0"),
    ],
)
def test_bad_sweep_input_names_the_parameter(kwargs, message):
    arguments = {"op": "all_reduce", "ranks": 2, "sizes_bytes": [64], "algorithm": "ring"} | kwargs
    with pytest.raises(ValueError, match=message):
        run_collective_sweep(**arguments)


def test_parse_sizes_reads_nccl_tests_style_ranges():
    assert parse_sizes("8B:64MB") == tuple(2**k for k in range(3, 27))
    assert parse_sizes("1K,2KiB,3") == (1024, 2048, 3)


# --- CSV --------------------------------------------------------------------------------------------------------


def test_csv_round_trips_exactly(tmp_path):
    awkward = [0.1 + 0.2, 1 / 3, 2.0**-40, 123456789.123456789]
    rows = tuple(
        Row("all_gather", "recursive_doubling", 4, 2**k, t, t * 0.9, t * 1.1, 1 / t, 0.75 / t, 20, k % 2 == 0)
        for k, t in enumerate(awkward)
    )
    table = Measurements(rows, {"host": "h", "cores": 2, "ranks_exceed_cores": True, "note": 'comma, "quote"'})
    path = tmp_path / "t.csv"
    table.to_csv(path)
    assert Measurements.from_csv(path) == table
    assert Measurements.from_csv(path.read_text()).rows[1].median_s == 1 / 3


@pytest.mark.slow
def test_cli_writes_a_csv_that_loads_back_equal(tmp_path):
    out = tmp_path / "sweep.csv"
    command = [sys.executable, "-m", "course_lib.measure", "all_reduce", "--ranks", "2", "--sizes", "1KB:4KB",
               "--algorithm", "ring", "--iterations", "2", "--warmup", "1", "--out", str(out)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    table = Measurements.from_csv(out)
    assert table.size_bytes.tolist() == [1024, 2048, 4096]
    assert Measurements.from_csv(table.to_csv()) == table and table.to_csv() == out.read_text()
    assert "3/3" in done.stderr  # the progress bar reached the end
    # the printed table shows the same medians as the file
    for row in table:
        assert re.search(rf"\b{row.size_bytes // 1024} KiB\s+\S+ \S+", done.stdout)


def test_cli_reports_bad_input_without_a_traceback():
    command = [sys.executable, "-m", "course_lib.measure", "all_reduce", "--ranks", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "ranks must be an integer ≥ 2" in done.stderr and "Traceback" not in done.stderr


# --- fitting ----------------------------------------------------------------------------------------------------


def _model_table(op, algorithm, ranks, latency_s, bandwidth, noise=None):
    sizes = [2**k for k in range(3, 29, 2)]
    rows = []
    for i, size in enumerate(sizes):
        t = collectives.collective_time(op, ranks, size, bandwidth, latency_s, algorithm)
        if noise:
            t *= 1 + noise * (-1) ** i
        rows.append(Row(op, algorithm, ranks, size, t, t, t, size / t, size / t, 1, False))
    return Measurements(tuple(rows))


@pytest.mark.parametrize(
    ("op", "algorithm", "ranks"),
    [("all_reduce", "ring", 2), ("all_reduce", "recursive_doubling", 8), ("all_reduce", "rabenseifner", 16),
     ("all_gather", "ring", 5), ("reduce_scatter", "recursive_halving", 4), ("broadcast", "binomial_tree", 6),
     ("all_to_all", "bruck", 8)],
)  # fmt: skip
def test_fit_recovers_alpha_and_b_built_with_the_cost_model(op, algorithm, ranks):
    table = _model_table(op, algorithm, ranks, 7e-6, 12e9)
    fit = fit_alpha_beta(table, algorithm)
    assert fit.latency_s == pytest.approx(7e-6, rel=0.01)
    assert fit.bandwidth_bytes_per_s == pytest.approx(12e9, rel=0.01)
    assert fit.median_relative_residual < 1e-9
    # the crossover: n·α = Q/B
    cost = collectives.collective_cost(op, ranks, fit.crossover_bytes, algorithm)
    assert cost.phases * fit.latency_s == pytest.approx(cost.wire_bytes / fit.bandwidth_bytes_per_s, rel=1e-9)


def test_fit_with_noise_stays_within_a_percent_and_weights_small_sizes():
    fit = fit_alpha_beta(_model_table("all_reduce", "ring", 4, 20e-6, 5e9, noise=0.005))
    assert fit.latency_s == pytest.approx(20e-6, rel=0.01)
    assert fit.bandwidth_bytes_per_s == pytest.approx(5e9, rel=0.01)
    assert fit.median_relative_residual == pytest.approx(0.005, rel=0.05)


def test_fit_on_a_size_range_uses_only_those_sizes():
    table = _model_table("all_reduce", "ring", 4, 20e-6, 5e9)
    # spoil the small sizes: a fit restricted to ≥ 1 MiB must not see them
    spoiled = Measurements(tuple(r._replace(median_s=r.median_s * 3) if r.size_bytes < 2**20 else r for r in table))
    fit = fit_alpha_beta(spoiled, size_range_bytes=(2**20, 2**30))
    assert fit.sizes_bytes.min() >= 2**20
    assert fit.bandwidth_bytes_per_s == pytest.approx(5e9, rel=0.01)
    with pytest.raises(ValueError, match="size_range_bytes must satisfy"):
        fit_alpha_beta(table, size_range_bytes=(10, 1))
    with pytest.raises(ValueError, match="at least three different sizes"):
        fit_alpha_beta(table, size_range_bytes=(2**27, 2**30))


def test_fit_with_the_wrong_phase_count_gets_a_different_alpha():
    # Ring all-reduce at 8 ranks has 2(p−1) = 14 phases; recursive doubling's model has lg 8 = 3.
    table = _model_table("all_reduce", "ring", 8, 5e-6, 50e9)
    wrong = fit_alpha_beta(table, "recursive_doubling")
    assert wrong.latency_s == pytest.approx(5e-6 * 14 / 3, rel=0.05)


def test_fit_bad_input():
    good = _model_table("all_reduce", "ring", 4, 5e-6, 50e9)
    with pytest.raises(ValueError, match="at least three different sizes"):
        fit_alpha_beta(Measurements(good.rows[:2]))
    bad_time = good.rows[0]._replace(median_s=0.0)
    with pytest.raises(ValueError, match="times must be finite and > 0"):
        fit_alpha_beta(Measurements((bad_time,) + good.rows[1:]))
    for field, value in (("op", "all_gather"), ("algorithm", "recursive_doubling"), ("ranks", 8)):
        mixed = Measurements(good.rows[:-1] + (good.rows[-1]._replace(**{field: value}),))
        with pytest.raises(ValueError, match=f"mix several values of {field}"):
            fit_alpha_beta(mixed)
    with pytest.raises(ValueError, match="algorithm must be given"):
        fit_alpha_beta(Measurements(tuple(r._replace(algorithm="auto") for r in good.rows)))
    with pytest.raises(ValueError, match="algorithm must be one of"):
        fit_alpha_beta(good, "bruck")
    with pytest.raises(ValueError, match="measurements must be a Measurements"):
        fit_alpha_beta([1, 2, 3])


# --- published logs ---------------------------------------------------------------------------------------------

# Row counts, op and ranks as the data README states them (from each log's header and busbw/algbw).
SHIPPED = {
    "aws_p5_1node_8xH100_nvlink_all_reduce.txt": (32, "all_reduce", 8),
    "mleng_1x8xA100_nvlink_all_reduce_massaged.txt": (20, "all_reduce", 8),
    "aws_2x_p5_16xH100_efa_all_reduce.txt": (32, "all_reduce", 16),
    "aws_2x_p4de_16xA100_efa_all_reduce.txt": (29, "all_reduce", 16),
    "nebius_2x8xH100_ib_all_reduce.txt": (31, "all_reduce", 16),
    "gcp_a3mega_2x8xH100_tcpxo_all_gather.txt": (11, "all_gather", 16),
    "gcp_a3high_2x8xH100_tcpx_all_gather.txt": (11, "all_gather", 16),
}


def _own_columns(text):
    """(size, time µs, busbw GB/s) of each data row, read by splitting on spaces (independently of the parser)."""
    rows = []
    for line in text.splitlines():
        fields = re.sub(r"^\s*(\[\d+,\d+\]<stdout>:|\d+:\s)", "", line).split()
        if fields and fields[0].replace("_", "").isdigit():
            size = int(fields[0].replace("_", ""))
            rows.append((size, float(fields[5]), float(fields[7])) if len(fields) >= 13 else
                        (size, float(fields[1]), float(fields[3])))  # fmt: skip
    return rows


@pytest.mark.parametrize("name", SHIPPED)
def test_each_shipped_log_parses(name):
    text = (NCCL_LOGS / name).read_text()
    count, op, ranks = SHIPPED[name]
    table = read_nccl_tests(text)
    assert (len(table), table.op, table.ranks) == (count, op, ranks)
    own = _own_columns(text)
    assert table.size_bytes.tolist() == [size for size, _, _ in own]
    assert table.busbw_bytes_per_s.tolist() == [busbw * 1e9 for _, _, busbw in own]
    assert table.median_s.tolist() == [t * 1e-6 for _, t, _ in own]
    # busbw = S/t · busbw_factor(op, n), within the log's rounding, where busbw has 3+ significant digits
    big = table.busbw_bytes_per_s >= 10e9
    expected = table.size_bytes / table.median_s * collectives.busbw_factor(op, ranks)
    np.testing.assert_allclose(table.busbw_bytes_per_s[big], expected[big], rtol=0.01)


def test_in_place_columns_and_wrong_results():
    text = (NCCL_LOGS / "aws_p5_1node_8xH100_nvlink_all_reduce.txt").read_text()
    in_place = read_nccl_tests(text, placement="in_place")
    assert in_place.median_s[0] == pytest.approx(12.87e-6) and in_place.median_s[-1] == pytest.approx(62200e-6)
    wrong = text.replace("12.90    0.00    0.00      0", "12.90    0.00    0.00      3")
    with pytest.raises(ValueError, match="reports wrong results"):
        read_nccl_tests(wrong)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nothing here\n", "op must be given"),
        ("all_reduce_perf\n# size count\n", "no nccl-tests data rows"),
        ("all_reduce_perf\n    8    2  float  sum  -1  12.90  0.00\n", "line 2 looks like a data row"),
        (b"bytes", "text must be the log's text"),
    ],
)
def test_malformed_logs_fail_clearly(text, message):
    with pytest.raises(ValueError, match=message):
        read_nccl_tests(text)


def test_the_published_h100_log_fits_a_sensible_alpha_and_b():
    table = read_nccl_tests((NCCL_LOGS / "aws_p5_1node_8xH100_nvlink_all_reduce.txt").read_text())
    fit = fit_alpha_beta(table, "ring")
    # per-step α of a microsecond or so, B between the ring-only ~370 GB/s and NVLS's 480 GB/s busbw
    assert 0.3e-6 < fit.latency_s < 3e-6 and 300e9 < fit.bandwidth_bytes_per_s < 500e9


# --- recorded runs and the step ---------------------------------------------------------------------------------


def test_the_recorded_runs_load_and_name_their_machine():
    (sweep,) = MPI_RUNS.glob("*_all_reduce.csv")
    table = Measurements.from_csv(sweep)
    assert {"host", "cpu", "cores", "mpi_library", "mpi4py"} <= table.conditions.keys()
    assert table.conditions["mpi_library"].startswith("MPICH Version:")
    assert {row.algorithm for row in table} == {"ring", "recursive_doubling", "reduce_scatter_allgather", "auto"}
    for algorithm in ("ring", "recursive_doubling"):
        fit = fit_alpha_beta(table.select(algorithm=algorithm))
        assert fit.latency_s > 0 and fit.bandwidth_bytes_per_s > 0
    for kind in ("cpu", "device"):
        (step_file,) = MPI_RUNS.glob(f"*_step_{kind}.csv")
        step = StepMeasurements.from_csv(step_file)
        assert tuple(step.median_s) == SCHEDULES and StepMeasurements.from_csv(step.to_csv()) == step
        assert step.conditions["mpi_library"].startswith("MPICH Version:")


@pytest.mark.slow
def test_measure_step_times_every_schedule():
    step = measure_step(2, backward_flops=4e8, gradient_bytes=2**20, buckets=2, iterations=2, warmup=1)
    assert tuple(step.median_s) == SCHEDULES
    assert all(np.isfinite(t) and t > 0 for t in step.median_s.values())
    assert step.exposed_s.keys() == {"blocking", "nonblocking", "nonblocking_test", "nonblocking_async"}
    assert step.exposed_s["blocking"] == step.median_s["blocking"] - step.median_s["compute"]
    assert step.backward_flops == 2 * 6 * 2 * 256**3  # 2 layers × 6 matmuls of 2·256³ FLOP ≈ 4e8


@pytest.mark.slow
def test_measure_step_on_a_modelled_accelerator():
    # 2 layers × 4 multiplies of 2·256³ FLOP at 1 GFLOP/s: the host waits 134 ms per step, its core free
    step = measure_step(2, 2.7e8, 2**16, 2, schedules=("compute", "nonblocking_test"), device_flops_per_s=1e9,
                        iterations=1, warmup=0)  # fmt: skip
    assert step.backward_flops == 2 * 4 * 2 * 256**3
    assert step.conditions["compute"] == "modelled accelerator"
    assert step.median_s["compute"] >= step.backward_flops / 1e9


def test_predicted_exposed_follows_the_budget_rules():
    fit = fit_alpha_beta(_model_table("all_reduce", "ring", 2, 10e-6, 1e9))
    step = StepMeasurements(2, 1e9, 4 * 2**20, 4, dict.fromkeys(SCHEDULES, 0.01), {}, {}, {})
    predicted = step.predicted_exposed_s(fit)
    whole, bucket = fit.predict_s(4 * 2**20), fit.predict_s(2**20)
    assert predicted["blocking"] == pytest.approx(whole)
    assert predicted["nonblocking"] == pytest.approx(4 * bucket)
    # 4 buckets of ~2.1 ms against 7.5 ms of hideable compute: only the last bucket stays exposed
    assert predicted["nonblocking_test"] == pytest.approx(bucket)


def test_measure_step_bad_input():
    with pytest.raises(ValueError, match="schedules must include 'compute'"):
        measure_step(2, schedules=("blocking",))
    with pytest.raises(ValueError, match="schedules must be one of"):
        measure_step(2, schedules=("compute", "overlap"))
    with pytest.raises(ValueError, match="backward_flops must be finite and > 0"):
        measure_step(2, backward_flops=0)
    with pytest.raises(ValueError, match="device_flops_per_s must be finite and > 0"):
        measure_step(2, device_flops_per_s=-1)
