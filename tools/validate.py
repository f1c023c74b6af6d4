"""`make validate`: the step-time and memory model against the Ultra-Scale Playbook's measured runs.

Prints, for the runs a calibration may see (the 1B and 3B models) and for the held-out runs (8B and 80B), the figures
tests/test_validation.py judges, with issue 10's targets beside them, and the runs the model refused; then Narayanan et
al. 2021's Table 1 and §5.2 (tests/test_narayanan.py): before (the uncalibrated course model, ``calibration=None``;
``validation.NARAYANAN_UNCALIBRATED`` for Narayanan's rows) and after (the default calibration:
``PLAYBOOK_CALIBRATION`` on the Playbook's cluster, ``parallelism.default_calibration`` on Selene), with the fitted
constants; then Narayanan's runs under the default calibration as the frameworks the paper used run them
(``validation.NARAYANAN_FRAMEWORKS``: the Megatron-LM and DeepSpeed presets); and the default model's picks on
the held-out cells, without and with the memory margin the fit split gives (``validation.memory_margin``): the
fastest pick, and the robust pick (the best worst case under the step-time band of the held-out runs,
``validation.step_time_band``), each against ``validation.PICK_TARGETS``.
"""

from __future__ import annotations

import sys
import time

from course_lib import units, validation


def _report(label: str, runs, calibration, selene_calibration) -> None:
    started = time.perf_counter()
    replay = validation.replay_runs(runs, calibration=calibration)
    elapsed = time.perf_counter() - started
    print(f"== {label}: replayed in {elapsed:.2f} s")
    print(validation.figures_report(replay))
    print(validation.narayanan_report(selene_calibration))


def _pick_line(label: str, figures: dict) -> str:
    shown = {"best_pick_share": units.format_percent(figures["best_pick_share"])}
    shown["picks_crashed"] = f"{figures['picks_crashed']} of {figures['cells']}"
    met = sum(check(figures[name]) for name, _, _, check in validation.PICK_TARGETS)
    targets = "; ".join(f"{text} {shown[name]} (target {target})" for name, text, target, _ in validation.PICK_TARGETS)
    return f"{label}: {targets}; {met} of {len(validation.PICK_TARGETS)} met"


def _picks(runs) -> None:
    """The default model's picks on the held-out cells: the fastest without and with the memory margin the fit
    split gives, and the robust pick (best worst case under the held-out step-time band) with the margin."""
    import numpy as np

    replay = validation.replay_runs(runs)
    held_out = np.isin(runs["model"], validation.HELD_OUT_MODELS)
    margin = validation.memory_margin(replay)
    band = validation.step_time_band(replay)
    print(f"== the picks, held out: a plan is picked only if it fits with a memory margin (the 1B and 3B runs' "
          f"90th percentile of measured/predicted memory: +{units.format_percent(margin)})")  # fmt: skip
    rows = ", ".join(f"t·p ≥ {start}: {low:.2f}–{high:.2f}×" for start, low, high in band)
    print(f"step-time band (p10–p90 of measured/predicted step time, held-out 8B and 80B runs): {rows}")
    for label, used in (("fastest, no margin", 0.0), (f"fastest, margin +{units.format_percent(margin)}", margin)):
        print(_pick_line(label, validation.validation_figures(replay, held_out, memory_margin=used)))
    robust = validation.validation_figures(replay, held_out, memory_margin=margin, step_time_band=band)
    print(_pick_line(f"robust (best p90 step), margin +{units.format_percent(margin)}", robust["robust_picks"]))
    figures = validation.validation_figures(replay, held_out)
    print(f"predicted fits vs measured ran {units.format_percent(figures['fit_agreement'])}, beside its base rate: "
          f"{units.format_percent(figures['crashed_share'])} of the held-out runs crashed")  # fmt: skip


def main() -> int:
    runs = validation.load_playbook_runs()
    print(f"Ultra-Scale Playbook runs: {len(runs)} ({int(runs.succeeded.sum())} ran)")
    _report(
        "before: the uncalibrated course model (calibration=None; Narayanan's rows: NARAYANAN_UNCALIBRATED)",
        runs,
        None,
        validation.NARAYANAN_UNCALIBRATED,
    )
    calibration = validation.PLAYBOOK_CALIBRATION
    print(f"fitted on the 1B and 3B runs only ({calibration.name}):")
    print(
        f"  fitted: gemm_efficiency {calibration.gemm_efficiency}, layer_overhead_s "
        f"{units.format_time(calibration.layer_overhead_s)} (both on the one-node runs), framework_bytes "
        f"{units.format_bytes(calibration.framework_bytes)}; measured, not fitted: {calibration.intra_node_link.note}; "
        f"{calibration.inter_node_link.note}"
    )
    _report('after: the default, calibrated model (calibration="default")', runs, "default", "default")
    _picks(runs)
    frameworks = ", ".join(f"{run}: {framework.name}" for run, framework in validation.NARAYANAN_FRAMEWORKS.items())
    print(f"== Narayanan's runs as their frameworks run them ({frameworks}), default calibration:")
    print(validation.narayanan_report("default", frameworks=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
