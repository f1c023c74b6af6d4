"""`make bench`: the speed figures the issues ask for, measured on this machine and printed (never asserted).

Run: .venv/bin/python benchmarks/bench.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

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
    print(f"import course_lib: median {statistics.median(times) * 1e3:.0f} ms, best {min(times) * 1e3:.0f} ms "
          f"over {repeat} fresh interpreters (target < 300 ms); heavy modules imported: {heavy or 'none'}")


def bench_simulation():
    from course_lib.simulate import simulate
    from course_lib.units import format_time

    import numpy as np

    cases = (("all_reduce", "ring", 8, 1_048_576), ("all_reduce", "ring", 64, 262_144),
             ("all_gather", "recursive_doubling", 64, 262_144), ("all_to_all", "pairwise", 16, 262_144))
    for op, algorithm, ranks, elements in cases:
        rng = np.random.default_rng(0)
        per_rank = elements // ranks if op == "all_gather" else elements
        inputs = [rng.integers(0, 100, per_rank) for _ in range(ranks)]  # made once, outside the timing
        median, best, result = timed(lambda: simulate(op, ranks, inputs=inputs, algorithm=algorithm), 3)
        moved = sum(t.elements for step in result.steps for t in step) * 8  # int64 elements
        print(f"simulate {op:<10} {algorithm:<18} p={ranks:<3} {elements:>9,d} elements: {result.step_count:>3} steps "
              f"in {format_time(median)} (median of 3), {moved / median / 1e9:.2f} GB moved per second")


def bench_search():
    from course_lib.budget import search_plans
    from course_lib.hardware import SELENE_3072
    from course_lib.parallelism import MEGATRON_1T
    from course_lib.units import format_time

    median, best, found = timed(lambda: search_plans(MEGATRON_1T, SELENE_3072, 3072), 5)
    top = found.row(0)
    print(f"plan search, 1T model on 3072 A100s, global batch 3072: {found.evaluated:,d} plans evaluated "
          f"({int(found.feasible.sum()):,d} feasible; rejected {found.rejected}) in {format_time(median)} "
          f"(median of 5, best {format_time(best)}), {found.evaluated / median:,.0f} plans/s (target < 1 s)")
    print(f"  fastest: d={top['data_parallel']} t={top['tensor_parallel']} p={top['pipeline_parallel']} "
          f"ZeRO-{top['zero_stage']} b={top['micro_batch']} m={top['grad_accum_steps']} recompute={top['recompute']} "
          f"SP={top['sequence_parallel']} v={top['virtual_stages']}: {format_time(top['step_time_s'])} per step, "
          f"bound by {top['binding_constraint']}")


def bench_notebooks():
    """Execute every lesson and lab headless with nbclient, as nbval does, in a temporary copy of their folders
    (the repository's files are never rewritten); the kernel and its settings are those of `make notebooks`."""
    import importlib.util
    import shutil
    import tempfile
    from pathlib import Path

    import nbformat

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("execute_notebooks", root / "tools" / "execute_notebooks.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    totals, counts = {"notebooks": 0.0, "labs": 0.0}, {"notebooks": 0, "labs": 0}
    with tempfile.TemporaryDirectory() as scratch:
        for folder in totals:
            if (root / folder).is_dir():  # labs/source/ (the graded masters) is not run
                shutil.copytree(root / folder, Path(scratch) / folder,
                                ignore=shutil.ignore_patterns(".ipynb_checkpoints", "source"))
        for copy in sorted(Path(scratch).glob("notebooks/*.ipynb")) + sorted(Path(scratch).glob("labs/*.ipynb")):
            name = copy.relative_to(scratch).as_posix()
            try:
                seconds = tool.execute(nbformat.read(copy, as_version=4), copy.parent)
            except tool.CellFailed as failure:
                print(f"notebook {name}: FAILED, {failure}")
                continue
            totals[copy.parent.name] += seconds
            counts[copy.parent.name] += 1
            print(f"notebook {name}: {seconds:.1f} s (kernel start included)")
    print(f"all {counts['notebooks']} lessons together: {totals['notebooks']:.1f} s (target: all lessons together "
          f"< 60 s); all {counts['labs']} labs together: {totals['labs']:.1f} s")


if __name__ == "__main__":
    print(f"python {sys.version.split()[0]} on {sys.platform}")
    bench_import()
    bench_simulation()
    bench_search()
    bench_notebooks()
