"""Command line: ``python -m course_lib.measure all_reduce --ranks 4 --sizes 8B:256MB --algorithm ring --out x.csv``.

Also the entry point of each MPI rank (``python -m course_lib.measure worker SPEC``, started by
``course_lib.measure.jobs``).
"""

from __future__ import annotations

import argparse
import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["worker"]:
        from .worker import main as worker_main

        worker_main(argv[1])
        return 0
    from . import MPICH_ALGORITHMS, OPS, fit_alpha_beta, run_collective_sweep

    parser = argparse.ArgumentParser(
        prog="python -m course_lib.measure",
        description="Time an MPI collective (MPICH through mpi4py) over a range of sizes and save the table as CSV.",
    )
    parser.add_argument("op", choices=OPS)
    parser.add_argument("--ranks", type=int, default=2, help="MPI processes (default 2)")
    parser.add_argument("--sizes", default="8B:64MB", help="start:end (doubling) or a list, K/M/G binary (8B:64MB)")
    parser.add_argument("--algorithm", default="auto", help="MPICH's name: " + "; ".join(
        f"{op}: {', '.join(names)}" for op, names in MPICH_ALGORITHMS.items()))  # fmt: skip
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before the job is killed")
    parser.add_argument("--out", help="CSV file to write (default: print the table)")
    args = parser.parse_args(argv)
    try:
        table = run_collective_sweep(
            args.op, args.ranks, args.sizes, args.algorithm, iterations=args.iterations, warmup=args.warmup,
            timeout_s=args.timeout, progress=True,
        )  # fmt: skip
    except (ValueError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(table.to_text())
    try:
        print(fit_alpha_beta(table))
    except ValueError as error:
        print(f"(no α–β fit: {error})")
    if args.out:
        table.to_csv(args.out)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
