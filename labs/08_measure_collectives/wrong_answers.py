"""Lab 8's plausible wrong answers, {question: [(mistake, source of the answer cell), ...]}: tests/test_grading.py
checks that each scores zero on its question and leaves the others at full marks."""

WRONG = {
    "q1": [
        (
            "lg p phases (recursive doubling's) for the ring",
            """
def fit_ring_alpha_beta(ranks, sizes_bytes, times_s):
    sizes, times = np.asarray(sizes_bytes, dtype=float), np.asarray(times_s, dtype=float)
    design = np.column_stack([np.full_like(sizes, np.log2(ranks)), 2 * (ranks - 1) / ranks * sizes]) / times[:, None]
    (alpha, inverse_b), *_ = np.linalg.lstsq(design, np.ones_like(times), rcond=None)
    return float(alpha), float(1 / inverse_b)
""",
        ),
        (
            "absolute errors instead of relative",
            """
def fit_ring_alpha_beta(ranks, sizes_bytes, times_s):
    sizes, times = np.asarray(sizes_bytes, dtype=float), np.asarray(times_s, dtype=float)
    design = np.column_stack([np.full_like(sizes, 2 * (ranks - 1)), 2 * (ranks - 1) / ranks * sizes])
    (alpha, inverse_b), *_ = np.linalg.lstsq(design, times, rcond=None)
    return float(alpha), float(1 / inverse_b)
""",
        ),
        (
            "Q = S, without 2(p-1)/p (right only at p = 2)",
            """
def fit_ring_alpha_beta(ranks, sizes_bytes, times_s):
    sizes, times = np.asarray(sizes_bytes, dtype=float), np.asarray(times_s, dtype=float)
    design = np.column_stack([np.full_like(sizes, 2 * (ranks - 1)), sizes]) / times[:, None]
    (alpha, inverse_b), *_ = np.linalg.lstsq(design, np.ones_like(times), rcond=None)
    return float(alpha), float(1 / inverse_b)
""",
        ),
    ],
    "q2": [
        (
            "algbw taken for busbw",
            """
def busbw_bytes_per_s(op, ranks, size_bytes, time_s):
    return size_bytes / time_s
""",
        ),
        (
            "the all-reduce factor for every collective",
            """
def busbw_bytes_per_s(op, ranks, size_bytes, time_s):
    return size_bytes / time_s * 2 * (ranks - 1) / ranks
""",
        ),
    ],
    "q3": [
        (
            "the lowest p10",
            """
def fastest_algorithm(table, size_bytes):
    return min((r for r in table if r["size_bytes"] == size_bytes), key=lambda r: r["p10_s"])["algorithm"]
""",
        ),
        (
            "the lowest p90",
            """
def fastest_algorithm(table, size_bytes):
    return min((r for r in table if r["size_bytes"] == size_bytes), key=lambda r: r["p90_s"])["algorithm"]
""",
        ),
    ],
    "q4": [
        (
            "the mean over ranks",
            """
def exposed_communication_s(step_times_s, compute_times_s):
    return float(np.median(np.mean(step_times_s, axis=1)) - np.median(np.mean(compute_times_s, axis=1)))
""",
        ),
        (
            "rank 0's time",
            """
def exposed_communication_s(step_times_s, compute_times_s):
    return float(np.median(np.asarray(step_times_s)[:, 0]) - np.median(np.asarray(compute_times_s)[:, 0]))
""",
        ),
        (
            "the mean over iterations",
            """
def exposed_communication_s(step_times_s, compute_times_s):
    return float(np.mean(np.max(step_times_s, axis=1)) - np.mean(np.max(compute_times_s, axis=1)))
""",
        ),
    ],
    "q5": [
        (
            "the datasheet's cluster: calibrated, then not used",
            """
def exposed_on_measured_network(log_text, log_nodes, cluster, model, plan):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", measure.CalibrationWarning)
        measure.calibrate_cluster(cluster, measure.read_nccl_tests(log_text, nodes=log_nodes))
    return budget.step_time(model, plan, cluster, calibration=None).exposed_communication_s
""",
        ),
        (
            "the cluster's node count taken for the log's",
            """
def exposed_on_measured_network(log_text, log_nodes, cluster, model, plan):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", measure.CalibrationWarning)
        measured = measure.calibrate_cluster(cluster, measure.read_nccl_tests(log_text, nodes=cluster.nodes))
    return budget.step_time(model, plan, measured, calibration=None).exposed_communication_s
""",
        ),
        (
            "the default calibration on top of the measured links",
            """
def exposed_on_measured_network(log_text, log_nodes, cluster, model, plan):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", measure.CalibrationWarning)
        measured = measure.calibrate_cluster(cluster, measure.read_nccl_tests(log_text, nodes=log_nodes))
    return budget.step_time(model, plan, measured).exposed_communication_s
""",
        ),
        (
            "the step's total time",
            """
def exposed_on_measured_network(log_text, log_nodes, cluster, model, plan):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", measure.CalibrationWarning)
        measured = measure.calibrate_cluster(cluster, measure.read_nccl_tests(log_text, nodes=log_nodes))
    return budget.step_time(model, plan, measured, calibration=None).total_s
""",
        ),
        (
            "the data-parallel exposure alone",
            """
def exposed_on_measured_network(log_text, log_nodes, cluster, model, plan):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", measure.CalibrationWarning)
        measured = measure.calibrate_cluster(cluster, measure.read_nccl_tests(log_text, nodes=log_nodes))
    return budget.step_time(model, plan, measured, calibration=None).exposed_s["data"]
""",
        ),
        (
            "the communication that overlap hides counted too",
            """
def exposed_on_measured_network(log_text, log_nodes, cluster, model, plan):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", measure.CalibrationWarning)
        measured = measure.calibrate_cluster(cluster, measure.read_nccl_tests(log_text, nodes=log_nodes))
    step = budget.step_time(model, plan, measured, calibration=None)
    return step.exposed_communication_s + sum(step.overlapped_s.values())
""",
        ),
        (
            "the log read without its node count (calibrate_cluster raises)",
            """
def exposed_on_measured_network(log_text, log_nodes, cluster, model, plan):
    measured = measure.calibrate_cluster(cluster, measure.read_nccl_tests(log_text))
    return budget.step_time(model, plan, measured, calibration=None).exposed_communication_s
""",
        ),
    ],
}
