"""course_lib.widgets.measure: lab 8's widget shows a recorded table, and its Run button runs a real MPI sweep."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from lab_checks import decoded

from course_lib.measure import Measurements, fit_alpha_beta
from course_lib.widgets.measure import ALGORITHMS, measure_lab

MPI_RUNS = Path(__file__).resolve().parent.parent / "course_lib" / "data" / "mpi"


def test_a_recorded_table_is_fitted_and_drawn():
    table = Measurements.from_csv(next(MPI_RUNS.glob("*_all_reduce.csv"))).select(algorithm="ring")
    lab = measure_lab(recorded=table)
    fit = fit_alpha_beta(table)
    assert lab.result["latency_s"] == fit.latency_s and lab.result["bandwidth_bytes_per_s"] == fit.bandwidth_bytes_per_s
    assert bytes(lab.image.value).startswith(b"\x89PNG") and "α = " in lab.numbers.value


def test_a_second_table_replaces_the_first_in_the_figure():
    # The lab's SweepFigure draws each table anew: after ring, recursive doubling shows as in a lab that opened on it
    # (the same limits, and the legend's "measured" entry once). Pixels up to a sub-pixel shift: the constrained
    # layout places the axes a few millionths of the figure apart after one draw or two.
    table = Measurements.from_csv(next(MPI_RUNS.glob("*_all_reduce.csv")))
    ring, doubling = table.select(algorithm="ring"), table.select(algorithm="recursive_doubling")
    lab = measure_lab(recorded=ring)
    lab.show(doubling)
    fresh = measure_lab(recorded=doubling)
    ax, fresh_ax = lab.sweep_figure.ax, fresh.sweep_figure.ax
    assert lab.result["latency_s"] == fresh.result["latency_s"]
    assert ax.get_xlim() == pytest.approx(fresh_ax.get_xlim()) and ax.get_ylim() == pytest.approx(fresh_ax.get_ylim())
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert legend == [text.get_text() for text in fresh_ax.get_legend().get_texts()]
    assert legend.count("measured: median, p10–p90") == 1
    shown, expected = decoded(lab.image.value), decoded(fresh.image.value)
    assert (np.abs(shown - expected).max(axis=2) > 40).mean() < 0.001


def test_run_measures_with_the_controls_settings():
    lab = measure_lab(algorithm="recursive_doubling", largest_bytes=2**16, iterations=3)
    lab.button.click()
    table = lab.result["table"]
    assert table.algorithm == "recursive_doubling" and table.ranks == 2
    assert table.size_bytes.tolist() == [8 * 4**k for k in range(7)]  # 8 B … 32 KiB, every fourth power of two
    assert lab.result["fit"].algorithm == "recursive_doubling"


def test_controls_offer_only_algorithms_with_a_cost_model():
    assert ALGORITHMS == ("ring", "recursive_doubling", "reduce_scatter_allgather")
    with pytest.raises(Exception):  # noqa: B017 (ipywidgets raises TraitError for a value off the list)
        measure_lab(algorithm="tree")


def test_the_summary_follows_the_controls_before_any_run():
    # 4 ranks, up to 64 MiB: sizes 8·4^k ≤ 2^26 → k = 0..11, 8 B to 32 MiB; nothing is measured until Run.
    lab = measure_lab()
    assert "course-lab-summary" in lab.summary._dom_classes and lab.summary in lab.children
    assert bytes(lab.image.value).startswith(b"\x89PNG") and lab.result == {}
    lab.controls["ranks"].value = 4
    lab.controls["largest_bytes"].value = 2**26
    assert "<b>4 ranks</b>" in lab.summary.value and "12 sizes from 8 B to 32 MiB" in lab.summary.value
    assert lab.result == {}


def test_the_result_is_one_frozen_sweep_result_and_its_dict_is_as_before():
    import dataclasses

    from course_lib.widgets.measure import SweepResult

    table = Measurements.from_csv(next(MPI_RUNS.glob("*_all_reduce.csv"))).select(algorithm="ring")
    lab = measure_lab()
    assert lab.typed_result is None and lab.result == {}
    lab.show(table, ["a note from the run"])
    r = lab.typed_result
    assert isinstance(r, SweepResult) and r.table is table and r.notes == ("a note from the run",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.notes = ()  # pyright: ignore[reportAttributeAccessIssue]
    with pytest.raises(ValueError, match="notes must be a tuple of strings"):
        dataclasses.replace(r, notes=["a list"])
    with pytest.raises(ValueError, match="fit must be of the table's op and ranks"):
        dataclasses.replace(r, fit=dataclasses.replace(r.fit, ranks=4))
    fit = fit_alpha_beta(table)  # lab.result as the lab built it before it had a typed result
    expected = {
        "table": table,
        "fit": fit,
        "latency_s": fit.latency_s,
        "bandwidth_bytes_per_s": fit.bandwidth_bytes_per_s,
        "crossover_bytes": fit.crossover_bytes,
        "median_relative_residual": fit.median_relative_residual,
    }
    assert list(lab.result) == list(expected) and lab.result["table"] is table
    assert {k: v for k, v in lab.result.items() if k not in ("table", "fit")} == {
        k: v for k, v in expected.items() if k not in ("table", "fit")
    }
    assert "a note from the run" in lab.numbers.value  # the notes come with the result, not from the lab
