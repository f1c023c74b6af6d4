"""Record the MPI runs shipped in course_lib/data/mpi/ (lesson 07 and lab 08 analyse them; nbval checks the numbers).

Run: .venv/bin/python -m tools.record_measurements [--out course_lib/data/mpi]
Each file names the machine, the MPI library and its version in its ``# key: value`` header lines.
"""

from __future__ import annotations

import argparse
import re
import socket
from pathlib import Path

from course_lib.measure import compare_algorithms, measure_step

ALGORITHMS = ("ring", "recursive_doubling", "reduce_scatter_allgather", "auto")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="course_lib/data/mpi")
    parser.add_argument("--ranks", type=int, default=2)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    # 4 rounds of 5 iterations, the algorithms in turn within each round: a busy spell hits them all alike
    table = compare_algorithms("all_reduce", args.ranks, "8B:64MB", ALGORITHMS, rounds=4, iterations=5, progress=True)
    library = re.sub(r"\W+", "-", table.conditions["mpi_library"].replace("Version:", "")).strip("-").lower()
    stem = f"{socket.gethostname()}_{library}_{args.ranks}ranks"
    table.to_csv(out / f"{stem}_all_reduce.csv")
    print(table.to_text())
    # The backward pass on the ranks' cores (they compute and copy), then on a modelled 40 GFLOP/s accelerator.
    for name, rate in (("cpu", None), ("device", 40e9)):
        step = measure_step(args.ranks, device_flops_per_s=rate, iterations=20, progress=True)
        step.to_csv(out / f"{stem}_step_{name}.csv")
        print(name, step.to_text(), sep="\n")


if __name__ == "__main__":
    main()
