"""`make bench`: the speed figures the issues ask for, measured on this machine and printed (never asserted).

Run: .venv/bin/python benchmarks/bench.py
"""

from __future__ import annotations

import math
import os
import statistics
import subprocess
import sys
import time
from functools import partial

IMPORT_PROBE = """
import sys, time
start = time.perf_counter()
import course_lib
elapsed = time.perf_counter() - start
heavy = sorted(m for m in ("matplotlib", "ipywidgets") if m in sys.modules)
print(elapsed, ",".join(heavy))
"""


def timed(function, repeat):
    """Run ``function`` ``repeat`` times; return (median, best) wall time in seconds and the last result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), result


def bench_import(repeat=7):
    times, heavy = [], ""
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, check=True)
        seconds, heavy = out.stdout.split()[0], (out.stdout.split() + [""])[1]
        times.append(float(seconds))
    print(
        f"import course_lib: median {statistics.median(times) * 1e3:.0f} ms, best {min(times) * 1e3:.0f} ms "
        f"over {repeat} fresh interpreters (target < 300 ms); heavy modules imported: {heavy or 'none'}"
    )


def bench_simulation():
    import numpy as np

    from course_lib.simulate import simulate
    from course_lib.units import format_time

    cases = (
        ("all_reduce", "ring", 8, 1_048_576),
        ("all_reduce", "ring", 64, 262_144),
        ("all_gather", "recursive_doubling", 64, 262_144),
        ("all_to_all", "pairwise", 16, 262_144),
    )
    for op, algorithm, ranks, elements in cases:
        rng = np.random.default_rng(0)
        per_rank = elements // ranks if op == "all_gather" else elements
        inputs = [rng.integers(0, 100, per_rank) for _ in range(ranks)]  # made once, outside the timing
        median, best, result = timed(partial(simulate, op, ranks, inputs=inputs, algorithm=algorithm), 3)
        moved = sum(t.elements for step in result.steps for t in step) * 8  # int64 elements
        print(
            f"simulate {op:<10} {algorithm:<18} p={ranks:<3} {elements:>9,d} elements: {result.step_count:>3} steps "
            f"in {format_time(median)} (median of 3), {moved / median / 1e9:.2f} GB moved per second"
        )


def bench_collectives():
    """Issue 22: a group's collective time as NCCL runs it (``budget.group_collective_time``) over 1,000 sizes in one
    call (target < 5 ms), and one size at a time (what a lab's refresh pays per call)."""
    import numpy as np

    from course_lib.budget import group_collective_time
    from course_lib.hardware import NEBIUS_H100_IB
    from course_lib.units import format_time

    sizes = np.logspace(0, 11, 1000)
    median, best, _ = timed(lambda: group_collective_time("all_reduce", NEBIUS_H100_IB, 16, 1, sizes), 20)
    one, _, _ = timed(lambda: group_collective_time("all_reduce", NEBIUS_H100_IB, 16, 1, 1e6), 200)
    print(
        f"group_collective_time, all-reduce of 16 ranks on 2 nodes (NCCL's model): 1,000 sizes in "
        f"{format_time(median)} (median of 20, best {format_time(best)}; target < 5 ms); one size "
        f"{format_time(one)} (median of 200)"
    )


def bench_scheduler():
    """Issue 38: the scheduler's request-level simulation, 1,000 requests of 1,024 prompt and 128 output tokens at
    concurrency 64 (target < 1 s), with the engine's cost of Llama 3.1 70B on 8 H100s (its arrays called once per
    run, the closed loop's way) and its paged cache. Wall and CPU time both: the CPU time is the simulation's own
    when other processes share the cores."""
    from course_lib.hardware import DGX_H100, H100
    from course_lib.parallelism import LLAMA3_70B
    from course_lib.serving import iteration_time, kv_cache_blocks, simulate_engine
    from course_lib.units import format_time

    cost, blocks = iteration_time(LLAMA3_70B, DGX_H100, 8), kv_cache_blocks(LLAMA3_70B, H100, 8)
    run = partial(
        simulate_engine, cost, kv_blocks=blocks, prompt_tokens=1024, output_tokens=128, requests=1000, concurrency=64
    )
    cpu = time.process_time()
    median, best, result = timed(run, 3)
    cpu = (time.process_time() - cpu) / 3
    print(
        f"simulate_engine, Llama 3.1 70B on 8 H100s, 1,000 requests (1,024 + 128 tokens) at concurrency 64: "
        f"{result.iteration_time_s.size:,d} iterations in {format_time(median)} (median of 3, best "
        f"{format_time(best)}, CPU {format_time(cpu)} a run; target < 1 s)"
    )


def bench_engine():
    """Issue 38: one engine iteration's cost (``serving.iteration_time``) on arrays of 1,000 mixed iterations (target
    < 1 ms), and one iteration alone (what the open loop asks per step), Llama 3.1 70B in FP8 on 8 H100s."""
    import numpy as np

    from course_lib.hardware import DGX_H100
    from course_lib.parallelism import LLAMA3_70B
    from course_lib.serving import iteration_time
    from course_lib.units import format_time

    cost = iteration_time(LLAMA3_70B, DGX_H100, 8, weights="fp8", kv_cache="fp8")
    rng = np.random.default_rng(0)
    prefill, decode = rng.integers(0, 2048, 1000), rng.integers(1, 256, 1000)
    args = (prefill, prefill * (prefill + 1) // 2, decode, decode * 3000)
    median, best, _ = timed(lambda: cost(*args), 50)
    one, _, _ = timed(lambda: cost(512, 512 * 513 // 2, 64, 64 * 3000), 500)
    print(
        f"iteration_time, Llama 3.1 70B FP8 on 8 H100s: 1,000 iterations in {format_time(median)} (median of 50, "
        f"best {format_time(best)}; target < 1 ms); one iteration {format_time(one)} (median of 500)"
    )


def _plan_text(row: dict) -> str:
    return (
        f"d={row['data_parallel']} t={row['tensor_parallel']} p={row['pipeline_parallel']} ZeRO-{row['zero_stage']} "
        f"b={row['micro_batch']} m={row['grad_accum_steps']} recompute={row['recompute']} "
        f"SP={row['sequence_parallel']} v={row['virtual_stages']}"
    )


def bench_search():
    """Issues 10 and 24: the 1T plan search on 3,072 GPUs under 1 s: with the default (calibrated) model, which on
    Selene carries the memory margin but no measured band; with the Playbook's step-time band as well (issue 24's
    case: margin and band); and with the ideal model."""
    from course_lib.budget import search_plans
    from course_lib.hardware import SELENE_3072
    from course_lib.parallelism import MEGATRON_1T
    from course_lib.units import format_percent, format_time, format_time_band
    from course_lib.validation import PLAYBOOK_STEP_TIME_BAND

    cases = (
        ("default calibration: margin, no band", "default", None),
        ("default calibration + the Playbook's band", "default", PLAYBOOK_STEP_TIME_BAND),
        ("ideal model, calibration=None", None, None),
    )
    for label, calibration, band in cases:
        median, best, found = timed(
            lambda c=calibration, b=band: search_plans(MEGATRON_1T, SELENE_3072, 3072, calibration=c, step_time_band=b),
            5,
        )
        print(
            f"plan search ({label}), 1T model on 3072 A100s, global batch 3072: {found.evaluated:,d} plans evaluated "
            f"({int(found.feasible.sum()):,d} fit with the +{format_percent(found.memory_margin)} margin; rejected "
            f"{found.rejected}) in {format_time(median)} (median of 5, best {format_time(best)}), "
            f"{found.evaluated / median:,.0f} plans/s (target < 1 s)"
        )
        for name, row in (("fastest", found.fastest()), ("robust", found.robust())):
            r = found.row(row)
            step = format_time_band(r["step_time_s"], r["step_time_low_s"], r["step_time_high_s"])
            print(
                f"  {name} (row {row}): {_plan_text(r)}: {step} per step, MFU {r['mfu']:.0%}, HFU {r['hfu']:.0%}, "
                f"bound by {r['binding_constraint']}"
            )
    # Issue 26: the same search with the context-parallel axis (every c that divides the devices and the sequence,
    # ring attention), a mixture of experts' search with the expert-parallel axis (every e dividing its experts), and
    # the search with the zero-bubble schedules.
    from course_lib.parallelism import MIXTRAL_8X22B

    for label, model, axes, target in (
        ("context_parallel='auto'", MEGATRON_1T, dict(context_parallel="auto"), " (target < 1 s)"),
        ("expert_parallel='auto'", MIXTRAL_8X22B, {}, ""),
        (  # opt-in: the zero-bubble schedules, under the one preset that runs them
            "zero_bubble=('zb-h1', 'zb-h2'), framework='fsdp2-pipeline'",
            MEGATRON_1T,
            dict(zero_bubble=("zb-h1", "zb-h2"), framework="fsdp2-pipeline"),
            "",
        ),
    ):
        median, best, found = timed(lambda m=model, a=axes: search_plans(m, SELENE_3072, 3072, **a), 3)
        print(
            f"plan search with {label} (default calibration), {model.name} on 3072 A100s: {found.evaluated:,d} plans "
            f"evaluated ({int(found.feasible.sum()):,d} feasible) in {format_time(median)} (median of 3, best "
            f"{format_time(best)}){target}"
        )


def bench_validation():
    """Issues 10, 24 and 37: replaying all 3,306 Playbook runs and every published run (< 2 s each), and deriving
    the memory margin and the step-time band from the replay."""
    from course_lib import validation
    from course_lib.units import format_time

    runs = validation.load_playbook_runs()
    median, best, replay = timed(lambda: validation.replay_runs(runs), 5)
    print(
        f"replay of the {len(runs):,d} Playbook runs, calibrated model: {format_time(median)} (median of 5, best "
        f"{format_time(best)}; {int(replay.represented.sum()):,d} represented) (target < 2 s)"
    )
    median, _, _ = timed(lambda: (validation.memory_margin(replay), validation.step_time_band(replay)), 5)
    print(f"  memory margin and step-time band from the replay: {format_time(median)} (median of 5)")
    from course_lib import published_runs

    published = published_runs.load_published_runs()
    median, best, replayed = timed(lambda: published_runs.replay_published_runs(published), 5)
    print(
        f"replay of the {len(published):,d} published runs under the reference calibration: {format_time(median)} "
        f"(median of 5, best {format_time(best)}; {int(replayed.replayed.sum()):,d} replayed) (target < 2 s)"
    )


# The labs (course_lib.widgets): factory name and the module that defines it.
LABS = (
    ("ring_allreduce_lab", "ring"),
    ("global_batch_lab", "batch"),
    ("memory_budget_lab", "memory"),
    ("pipeline_lab", "schedule"),
    ("partition_lab", "partition"),
    ("serving_lab", "serving"),
    ("concurrency_sweep_lab", "sweep"),
    ("sequences_lab", "sequences"),
)
# The slider timed where it is not the lab's first: lab 5's first sliders shape the custom model, which a preset
# model ignores (its node count was the first slider until the controls were ordered by what depends on what).
# The sweep lab's concurrency: what a learner moves along one sweep (a configuration's sweep is simulated once, then
# kept; bench_sweep_simulation times a new one).
TIMED_SLIDER = {"partition_lab": "nodes", "concurrency_sweep_lab": "concurrency"}
LAB_TARGET_MEDIAN_MS, LAB_TARGET_P95_MS = 30.0, 60.0


def percentile(values, q):
    """The q-th percentile by the nearest-rank method (a value that occurred): p95 of 100 samples is the 95th."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def control_values(control) -> list:
    """Values to cycle ``control`` through: its options (selection widgets), or up to 9 stops of a slider's range,
    or both states of a checkbox or toggle."""
    import numpy as np

    if hasattr(control, "_options_values"):  # SelectionSlider, ToggleButtons, Dropdown, RadioButtons ...
        return list(control._options_values)
    if isinstance(control.value, bool):
        return [False, True]
    if hasattr(control, "base"):  # FloatLogSlider: min and max are exponents
        return [float(control.base**e) for e in np.linspace(control.min, control.max, 9)]
    if hasattr(control, "min") and hasattr(control, "max"):
        stops = np.linspace(control.min, control.max, 9)
        if isinstance(control.value, int):
            step = getattr(control, "step", 1) or 1
            return sorted({int(control.min + round((v - control.min) / step) * step) for v in stops})
        return [float(v) for v in stops]
    return []


def forget_remembered_updates():
    """Empty what an update remembers from the ones before it: NCCL's answer for a group call, each label's bitmap,
    the PNG's deflated bands. (The pictures of a figure's static part and the glyph outlines stay: they were kept
    before those three were added, and every bench figure since counts them warm.)"""
    from course_lib.budget import placement
    from course_lib.viz import fast

    placement._remembered_group_call.cache_clear()
    fast._label_bitmaps.clear()
    fast._previous_bands.clear()


def time_updates(lab, name, updates, warmup=5, forget=False):
    """Set ``lab.controls[name].value`` ``warmup + updates`` times, each time to a value other than the current one
    (back and forth through its values); return the ``updates`` timed ones in seconds. One update is the
    assignment: the observer recomputes the result, redraws the figure and renders the PNG before it returns.
    ``forget``: each update as if its state were new (``forget_remembered_updates`` before it, untimed)."""
    control = lab.controls[name]
    values = control_values(control)
    if len(values) < 2:
        raise ValueError(f"control {name!r} ({type(control).__name__}) has fewer than two values to cycle through")
    cycle = values + values[-2:0:-1]  # ping-pong: 0 1 2 ... n-1 n-2 ... 1
    position = next((i for i, v in enumerate(cycle) if v == control.value), -1)
    times = []
    for count in range(warmup + updates):
        position = (position + 1) % len(cycle)
        before = lab.result
        if forget:
            forget_remembered_updates()
        start = time.perf_counter()
        control.value = cycle[position]
        elapsed = time.perf_counter() - start
        if lab.result is before:
            raise RuntimeError(f"setting {name!r} to {cycle[position]!r} did not refresh the lab")
        if count >= warmup:
            times.append(elapsed)
    return times


def bench_widgets(updates=60):
    """Each lab's update time as the learner feels it: set a control, the callback runs, the figure is rendered
    to PNG. For each lab: ``updates`` changes of its first slider and ``updates`` of one other control."""
    import importlib
    import importlib.util

    import matplotlib

    matplotlib.use("Agg")  # before the labs import matplotlib's pyplot (if they do): no GUI or inline backend

    for factory_name, module_name in LABS:
        qualified = f"course_lib.widgets.{module_name}"
        if importlib.util.find_spec(qualified) is None:
            print(f"lab {factory_name}: skipped, {qualified.replace('.', '/')}.py does not exist yet")
            continue
        try:
            factory = getattr(importlib.import_module("course_lib.widgets"), factory_name)
            start = time.perf_counter()
            lab = factory()
            built = time.perf_counter() - start
            names = list(lab.controls)
            sliders = [n for n in names if "Slider" in type(lab.controls[n]).__name__]
            first = TIMED_SLIDER.get(factory_name, sliders[0] if sliders else names[0])
            # the other control: the first that is not a slider (a choice), else the second slider
            others = [n for n in names if n != first and control_values(lab.controls[n])]
            other = next((n for n in others if n not in sliders), others[0] if others else None)
            timed_controls = [first] + ([other] if other else [])
            per_control = {name: time_updates(lab, name, updates) for name in timed_controls}
        except Exception as error:  # one broken lab must not hide the others' figures
            print(f"lab {factory_name}: FAILED, {type(error).__name__}: {error}")
            continue
        every = [t for times in per_control.values() for t in times]
        median, p95 = statistics.median(every) * 1e3, percentile(every, 95) * 1e3
        verdict = "met" if median <= LAB_TARGET_MEDIAN_MS and p95 <= LAB_TARGET_P95_MS else "MISSED"
        detail = "; ".join(
            f"{name} ({type(lab.controls[name]).__name__}, {len(times)} updates): median "
            f"{statistics.median(times) * 1e3:.1f} ms, p95 {percentile(times, 95) * 1e3:.1f} ms"
            for name, times in per_control.items()
        )
        print(
            f"lab {factory_name}: update (set a control, callback, PNG rendered) median {median:.1f} ms, "
            f"p95 {p95:.1f} ms over {len(every)} updates (targets: median <= {LAB_TARGET_MEDIAN_MS:.0f} ms, "
            f"p95 <= {LAB_TARGET_P95_MS:.0f} ms: {verdict}); built in {built * 1e3:.0f} ms"
        )
        print(f"  {detail}")
        forgetful = [t for name in timed_controls for t in time_updates(lab, name, updates // 2, forget=True)]
        print(
            f"  each update a new state (what earlier updates remembered forgotten first): median "
            f"{statistics.median(forgetful) * 1e3:.1f} ms, p95 {percentile(forgetful, 95) * 1e3:.1f} ms over "
            f"{len(forgetful)} updates"
        )


def bench_sweep_simulation(repeat=3):
    """Issue 38: lab 6's concurrency sweep. A new configuration simulates the scheduler at each of the sweep's
    concurrencies (``serving.concurrency_sweep_report``, its kept sweeps forgotten first); moving only the concurrency
    reuses it (``bench_widgets`` times that move)."""
    from course_lib import hardware, serving
    from course_lib.parallelism import LLAMA3_70B
    from course_lib.serving import sweep
    from course_lib.units import format_time

    for output_tokens in (256, 512):  # the lab's default and longest output

        def simulate(out=output_tokens):
            sweep._sweep.cache_clear()
            return serving.concurrency_sweep_report(
                LLAMA3_70B, hardware.DGX_H100, 8, prompt_tokens=1024, output_tokens=out, concurrency=64
            )

        median, best, report = timed(simulate, repeat)
        requests = int(report.sweep.requests.sum())
        print(
            f"concurrency sweep, Llama 3.1 70B on 8 H100s, 1024 + {output_tokens} tokens: {len(report.concurrencies)} "
            f"concurrencies, {requests:,} requests simulated in {format_time(median)} (median of {repeat}, best "
            f"{format_time(best)}): what a new configuration of lab 6's sweep costs once; knee "
            f"{report.knee_concurrency}"
        )


def bench_notebooks():
    """Execute every lesson and lab headless with nbclient, as nbval does, in a temporary copy of their folders
    (the repository's files are never rewritten); the kernel and its settings are those of `make notebooks`."""
    import shutil
    import tempfile
    from pathlib import Path

    import nbformat

    from tools import execute_notebooks as tool

    root = Path(__file__).resolve().parents[1]
    totals, counts = {"notebooks": 0.0, "labs": 0.0}, {"notebooks": 0, "labs": 0}
    with tempfile.TemporaryDirectory() as scratch:
        for folder in (*totals, "tools"):  # tools/: a master imports the graded tests' helpers from there
            if (root / folder).is_dir():
                shutil.copytree(
                    root / folder, Path(scratch) / folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints")
                )
        # The labs as `make notebooks` runs them: the graded masters, with their solutions and tests (a student
        # version is the same notebook without them).
        masters = [path for path in sorted(Path(scratch).glob("labs/*/*.ipynb")) if path.stem == path.parent.name]
        copies = sorted(Path(scratch).glob("notebooks/*.ipynb")) + masters
        for copy in copies:
            name = copy.relative_to(scratch).as_posix()
            try:
                seconds = tool.execute(nbformat.read(copy, as_version=4), copy.parent)
            except tool.CellFailed as failure:
                print(f"notebook {name}: FAILED, {failure}")
                continue
            kind = "notebooks" if copy.parent.name == "notebooks" else "labs"
            totals[kind] += seconds
            counts[kind] += 1
            print(f"notebook {name}: {seconds:.1f} s (kernel start included)")
    print(
        f"all {counts['notebooks']} lessons together: {totals['notebooks']:.1f} s (target: all lessons together "
        f"< 60 s); all {counts['labs']} lab masters together: {totals['labs']:.1f} s"
    )


def bench_grading(per_lab=4):
    """`make grade` on 16 submissions (``per_lab`` of each lab: the autograder's copy of the master, with its
    solutions), once in the bubblewrap sandbox and once with --unsafe (no sandbox), as `make grade` runs them (one
    per core). Prints the seconds per notebook: the median of each notebook's own time and the batch's wall time
    divided by the number of notebooks. Needs `make assignments` (and bubblewrap for the sandboxed run)."""
    import re
    import shutil
    import tempfile
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    built = root / "build" / "assignments"
    from tools.assignments import autograder_zip, lab_names

    labs = [lab for lab in lab_names() if autograder_zip(lab, built) is not None]
    if not labs:
        print(f"grading: skipped, no autograder zip in {built.relative_to(root)} (run `make assignments`)")
        return
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as scratch:
        submissions = Path(scratch) / "submissions"
        for lab in labs:
            for index in range(per_lab):
                folder = submissions / f"student{index:02d}"
                folder.mkdir(parents=True, exist_ok=True)
                shutil.copy(built / lab / "autograder" / f"{lab}.ipynb", folder / f"{lab}.ipynb")
        count = len(labs) * per_lab
        for label, extra in (("sandbox (bubblewrap)", []), ("no sandbox (UNSAFE=1)", ["--unsafe"])):
            command = [sys.executable, "-m", "tools.grade", str(submissions), "--assignments", str(built)]
            start = time.perf_counter()
            done = subprocess.run(command + extra, capture_output=True, text=True)
            wall = time.perf_counter() - start
            each = [float(seconds) for seconds in re.findall(r": \S+ / \S+ in ([0-9.]+) s", done.stdout)]
            if done.returncode != 0 or len(each) != count:
                print(f"grading, {label}: failed (exit {done.returncode}): {(done.stdout + done.stderr)[-400:]}")
                continue
            rows = (Path(scratch) / "grades.csv").read_text(encoding="utf-8").splitlines()[1:]
            full = all(row.split(",")[3] == row.split(",")[4] and row.split(",")[5] == "graded" for row in rows)
            print(
                f"grading, {label}: {count} notebooks in {wall:.1f} s, {wall / count:.2f} s per notebook "
                f"(wall time / notebooks, {os.cpu_count() or 1} at once); each notebook "
                f"{statistics.median(each):.1f} s (median); all graded with full marks: {full}"
            )


def bench_measure():
    """Lesson 07's default live sweep (2 ranks, 8 B – 64 MB, ring and recursive doubling): wall time, α and B."""
    import warnings

    from course_lib.measure import fit_alpha_beta, run_collective_sweep
    from course_lib.units import format_bandwidth, format_percent, format_time

    for algorithm in ("ring", "recursive_doubling"):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = run_collective_sweep("all_reduce", 2, "8B:64MB", algorithm, iterations=10)
        wall = time.perf_counter() - start
        fit = fit_alpha_beta(table)
        large = fit_alpha_beta(table, size_range_bytes=(2**20, 2**26))
        print(
            f"measure all_reduce {algorithm:<18} p=2, 8 B–64 MB, 10 iterations: {wall:.1f} s wall "
            f"(target < 60 s); α = {format_time(fit.latency_s)}, B = {format_bandwidth(fit.bandwidth_bytes_per_s)}, "
            f"median |residual| {format_percent(fit.median_relative_residual)}; on ≥ 1 MiB only: "
            f"B = {format_bandwidth(large.bandwidth_bytes_per_s)}, |residual| "
            f"{format_percent(large.median_relative_residual)} ({table.conditions['mpi_library'].split()[-1]} MPICH, "
            f"{table.conditions['cores']} cores)"
        )


def bench_calibrate(repeat=7):
    """Issue 22: measure.calibrate_cluster fits a 30-row table (one scope) in < 50 ms."""
    import warnings

    from course_lib import hardware
    from course_lib.measure import DATA_DIR, calibrate_cluster, read_nccl_tests

    logs = DATA_DIR / "nccl_tests"
    p5 = read_nccl_tests((logs / "aws_p5_1node_8xH100_nvlink_all_reduce.txt").read_text(), nodes=1)
    nebius = read_nccl_tests((logs / "nebius_2x8xH100_ib_all_reduce.txt").read_text(), nodes=2)
    for label, tables in (("p5, 1 node (in node)", [p5]), ("Nebius, 2 nodes (network)", [nebius]),
                          ("both (two scopes)", [p5, nebius])):  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # both logs miss some mid size by > 25 %: CalibrationWarning
            median, best, _ = timed(partial(calibrate_cluster, hardware.NEBIUS_H100_IB, tables), repeat)
        rows = sum(len(table) for table in tables)
        print(
            f"calibrate_cluster on {label}, {rows} rows: median {median * 1e3:.0f} ms, best {best * 1e3:.0f} ms "
            f"(target < 50 ms per 30-row table)"
        )


def bench_site():
    """`make site` from a clean checkout: a fresh `git clone` of HEAD (no build/, no cache), then tools/site.py in it
    with this environment's Python, timed as a whole (Python's start and the imports included); and the largest page,
    its HTML and images (target: build < 2 min, every page < 3 MB)."""
    import tempfile
    from pathlib import Path

    from tools import site

    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as scratch:
        clone = Path(scratch) / "course"
        subprocess.run(["git", "clone", "--quiet", str(root), str(clone)], check=True)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "tools.site", "--out", "build/site"], cwd=clone, text=True,
                              capture_output=True)  # fmt: skip
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            print(f"make site from a clean checkout: FAILED after {seconds:.1f} s\n{done.stderr.strip()}")
            return
        sizes = site.page_bytes(clone / "build" / "site")
    largest = max(sizes, key=sizes.__getitem__)
    print(
        f"make site from a clean checkout (HEAD): {seconds:.1f} s for {len(sizes)} pages (target < 120 s); largest "
        f"page {largest}, {sizes[largest] / 1e6:.2f} MB with its images (target < 3 MB)"
    )


if __name__ == "__main__":
    print(f"python {sys.version.split()[0]} on {sys.platform}")
    bench_measure()
    bench_import()
    bench_simulation()
    bench_collectives()
    bench_engine()
    bench_scheduler()
    bench_search()
    bench_calibrate()
    bench_validation()
    bench_sweep_simulation()
    bench_widgets()
    bench_notebooks()
    bench_site()
    bench_grading()
