"""`make validate`: the serving model against published serving benchmarks, then the step-time and memory model
against published and measured training runs.

Serving first (issue 38): the published serving rows (``serving.published``) replayed by ``serving.validation``
before (the uncalibrated model) and after (the engine model fitted on Llama 3.1 8B's rows), the median |error| on the
held-out rows against the targets, and the published concurrency sweeps replayed through the scheduler.

First the default, the reference calibration (``parallelism.REFERENCE_CALIBRATION``: Megatron-Core on DGX H100 nodes
with NDR InfiniBand), against the published well-tuned runs (``published_runs``): fitted on the GPT family, judged on
the held-out rows by kind (dense, FP8, context-parallel, MoE) against issue 37's targets, Llama 3 405B's published
plans row by row, and the step-time band the held-out rows give (the capstone's band, p90 / p10). Then the Ultra-Scale
Playbook's cluster as a case study of a real one (``PLAYBOOK_CALIBRATION``, nanotron on EFA, fitted on its 1B and 3B
runs): the figures tests/test_validation.py judges, before (the uncalibrated course model, ``calibration=None``) and
after, on all held-out runs and on the healthy ones (``validation.healthy_runs``); the picks on the held-out cells
with the memory margin the fit split gives (``validation.memory_margin``) and the robust pick under the held-out
step-time band (``validation.step_time_band``), each against ``validation.PICK_TARGETS``; then Narayanan et al.
2021's Table 1 and §5.2 (tests/test_narayanan.py) under the default calibration, as the frameworks the paper used run
them (``validation.NARAYANAN_FRAMEWORKS``).
"""

from __future__ import annotations

import sys
import time

from course_lib import parallelism, published_runs, units, validation


def _report(label: str, runs, calibration) -> None:
    import numpy as np

    started = time.perf_counter()
    replay = validation.replay_runs(runs, calibration=calibration)
    elapsed = time.perf_counter() - started
    print(f"== {label}: replayed in {elapsed:.2f} s")
    print(validation.figures_report(replay))
    held_out = np.isin(runs["model"], validation.HELD_OUT_MODELS)
    healthy = validation.healthy_figures(replay, held_out)
    print(f"held out, healthy runs (MFU ≥ {units.format_percent(validation.HEALTHY_SHARE)} of their cell's best): "
          f"{healthy['healthy_runs']}")  # fmt: skip
    for name, text, target, check in validation.HEALTHY_TARGETS:
        value = f"{healthy[name]:.2f}" if "spearman" in name else units.format_percent(healthy[name])
        print(f"  {text}: {value} (target {target}: {'met' if check(healthy[name]) else 'NOT met'})")


def _reference() -> None:
    import numpy as np

    calibration = parallelism.REFERENCE_CALIBRATION
    started = time.perf_counter()
    replay = published_runs.replay_published_runs()
    elapsed = time.perf_counter() - started
    print(f"== the default: {calibration.name}; the published runs replayed in {elapsed:.2f} s")
    print(
        f"  fitted on the {', '.join(published_runs.FIT_FAMILIES)} rows: gemm_efficiency "
        f"{calibration.gemm_efficiency}, "
        f"layer_overhead_s {units.format_time(calibration.layer_overhead_s)}; framework_bytes "
        f"{units.format_bytes(calibration.framework_bytes)} and the memory margin "
        f"+{units.format_percent(calibration.memory_margin)} from the Playbook's memory (no published run reports it); "
        f"links measured: {calibration.intra_node_link.note}; {calibration.inter_node_link.note}"
    )
    print(published_runs.published_report(replay))
    runs = replay.runs
    for i in np.flatnonzero(runs["source"] == "llama3-paper"):
        predicted, published = replay.predicted_tokens_per_s_per_gpu[i], replay.measured_tokens_per_s_per_gpu[i]
        print(f"  Llama 3 405B, {runs['id'][i]}: predicted {predicted:.0f} tokens/s per GPU, published "
              f"{published:.0f} ({replay.error[i]:+.1%}; target ≤ 15 %)")  # fmt: skip
    ((_, low, high),) = calibration.step_time_band
    print(f"  step-time band (p10–p90 of measured/predicted, held-out rows): {low:.3f}–{high:.3f}×, p90/p10 = "
          f"{high / low:.2f} (target ≤ 1.5)")  # fmt: skip


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

    replay = validation.replay_runs(runs, calibration=validation.PLAYBOOK_CALIBRATION)
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


def _serving() -> None:
    """The serving model against the published serving rows (issue 38): before (the uncalibrated model: every byte at
    the datasheet's bandwidth, half of peak, NCCL) and after (the engine model), on the held-out rows; then the
    published concurrency sweeps replayed through the scheduler and their knees."""
    from course_lib.serving import engine
    from course_lib.serving import validation as serving_validation

    started = time.perf_counter()
    before = serving_validation.replay_published_serving(efficiency=engine.UNCALIBRATED)
    after = serving_validation.replay_published_serving()
    print(f"== serving: {len(after.rows)} published rows replayed in {time.perf_counter() - started:.2f} s "
          f"(before: {engine.UNCALIBRATED.name}; after: {engine.DEFAULT_EFFICIENCY.name})")  # fmt: skip
    print(serving_validation.serving_report(before, after))
    started = time.perf_counter()
    sweeps = serving_validation.saturation_sweeps()
    print(f"concurrency sweeps through the scheduler ({time.perf_counter() - started:.0f} s): the knee, where "
          f"throughput reaches 90 % of its sweep's maximum (target: within {serving_validation.SATURATION_TARGET:.0f}×"
          f" on the held-out sweeps)")  # fmt: skip
    for sweep in sweeps:
        ratio = sweep.knee_ratio
        met = 1 / serving_validation.SATURATION_TARGET <= ratio <= serving_validation.SATURATION_TARGET
        print(f"  {sweep.model} {sweep.input_tokens}/{sweep.output_tokens}{' (fitted)' if sweep.fitted else ''}: "
              f"knee {sweep.predicted_knee} predicted, {sweep.measured_knee} published ({ratio:.2f}×: "
              f"{'met' if met else 'NOT met'})")  # fmt: skip


def main() -> int:
    _serving()
    _reference()
    runs = validation.load_playbook_runs()
    print(f"== the Ultra-Scale Playbook's cluster, a case study: {len(runs)} runs ({int(runs.succeeded.sum())} ran)")
    _report("before: the uncalibrated course model (calibration=None)", runs, None)
    calibration = validation.PLAYBOOK_CALIBRATION
    print(f"fitted on the 1B and 3B runs only ({calibration.name}):")
    print(
        f"  fitted: gemm_efficiency {calibration.gemm_efficiency}, layer_overhead_s "
        f"{units.format_time(calibration.layer_overhead_s)} (both on the one-node runs), framework_bytes "
        f"{units.format_bytes(calibration.framework_bytes)}; measured, not fitted: {calibration.intra_node_link.note}; "
        f"{calibration.inter_node_link.note}"
    )
    _report("after: the Playbook's calibration (nanotron on its EFA cluster)", runs, calibration)
    _picks(runs)
    print("== Narayanan et al. 2021 on Selene: the uncalibrated model, then the default calibration")
    print(validation.narayanan_report(validation.NARAYANAN_UNCALIBRATED))
    frameworks = ", ".join(f"{run}: {framework.name}" for run, framework in validation.NARAYANAN_FRAMEWORKS.items())
    print(f"as their frameworks run them ({frameworks}):")
    print(validation.narayanan_report("default", frameworks=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
