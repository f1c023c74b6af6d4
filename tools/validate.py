"""`make validate`: the step-time and memory model against the Ultra-Scale Playbook's measured runs.

Prints, for the runs a calibration may see (the 1B and 3B models) and for the held-out runs (8B and 80B), the figures
tests/test_validation.py judges, with issue 10's targets beside them, and the runs the model refused: before (the
uncalibrated course model, ``calibration=None``) and after (``validation.PLAYBOOK_CALIBRATION``), with the fitted
constants.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from course_lib import units, validation

TARGETS = (
    ("memory_median_abs_error", "per-GPU memory, median |error|", "≤ 20 %", lambda x: x <= 0.20),
    ("fit_agreement", "predicted fits vs measured ran", "≥ 90 %", lambda x: x >= 0.90),
    ("mfu_spearman", "MFU rank correlation (Spearman)", "≥ 0.85", lambda x: x >= 0.85),
    ("mfu_median_abs_error", "MFU median |error|", "≤ 30 %", lambda x: x <= 0.30),
    ("best_pick_share", "cells whose predicted best is within 10 %", "≥ 50 %", lambda x: x >= 0.50),
)
SPLITS = tuple(
    (f"{kind} ({', '.join(models)})", models)
    for kind, models in (("fitted on", validation.FIT_MODELS), ("held out", validation.HELD_OUT_MODELS))
)


def _shown(name: str, value: float) -> str:
    return f"{value:.2f}" if name == "mfu_spearman" else units.format_percent(value)


def _report(label: str, runs, calibration) -> None:
    started = time.perf_counter()
    replay = validation.replay_runs(runs, calibration=calibration)
    elapsed = time.perf_counter() - started
    figures = {name: validation.validation_figures(replay, np.isin(runs["model"], models)) for name, models in SPLITS}
    print(f"== {label}: replayed in {elapsed:.2f} s")
    refused = ", ".join(f"{count} runs ({reason})" for reason, count in replay.refused.items()) or "none"
    print(f"refused: {refused}")
    header = f"{'figure':<44}{'target':>9}" + "".join(f"{name:>22}" for name, _ in SPLITS)
    print(header)
    print("-" * len(header))
    for name, text, target, _ in TARGETS:
        cells = "".join(f"{_shown(name, figures[split][name]):>22}" for split, _ in SPLITS)
        print(f"{text:<44}{target:>9}{cells}")
    for split, _ in SPLITS:
        per_model = ", ".join(f"{m} {rho:.2f}" for m, rho in figures[split]["mfu_spearman_per_model"].items())
        ratios = ", ".join(
            f"{nodes}: {ratio:.2f}×" for nodes, ratio in figures[split]["mfu_ratio_median_by_nodes"].items()
        )
        print(f"{split}: Spearman per model {per_model} (target ≥ 0.80); predicted/measured MFU by nodes {ratios}")
        print(f"{split}: {figures[split]['runs']} runs, {figures[split]['cells']} (model, nodes) cells")
    held = figures[SPLITS[1][0]]
    met = sum(check(held[name]) for name, _, _, check in TARGETS)
    print(f"held-out targets met: {met} of {len(TARGETS)}")


def main() -> int:
    runs = validation.load_playbook_runs()
    print(f"Ultra-Scale Playbook runs: {len(runs)} ({int(runs.succeeded.sum())} ran)")
    _report("before: the uncalibrated course model (calibration=None)", runs, None)
    calibration = validation.PLAYBOOK_CALIBRATION
    print(f"fitted on the 1B and 3B runs only ({calibration.name}):")
    print(
        f"  gemm_efficiency {calibration.gemm_efficiency}, gemm_half_flops {calibration.gemm_half_flops:.3g} FLOP, "
        f"layer_overhead_s {units.format_time(calibration.layer_overhead_s)}, network_efficiency "
        f"{calibration.network_efficiency}, framework_bytes {units.format_bytes(calibration.framework_bytes)}"
    )
    _report("after: the calibrated model (validation.PLAYBOOK_CALIBRATION)", runs, calibration)
    return 0


if __name__ == "__main__":
    sys.exit(main())
