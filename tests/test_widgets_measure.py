"""course_lib.widgets.measure: lab 5's widget shows a recorded table, and its Run button runs a real MPI sweep."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pytest

from course_lib.measure import Measurements, fit_alpha_beta
from course_lib.widgets.measure import ALGORITHMS, measure_lab

MPI_RUNS = Path(__file__).resolve().parent.parent / "data" / "mpi"


def test_a_recorded_table_is_fitted_and_drawn():
    table = Measurements.from_csv(next(MPI_RUNS.glob("*_all_reduce.csv"))).select(algorithm="ring")
    lab = measure_lab(recorded=table)
    fit = fit_alpha_beta(table)
    assert lab.result["latency_s"] == fit.latency_s and lab.result["bandwidth_bytes_per_s"] == fit.bandwidth_bytes_per_s
    assert bytes(lab.image.value).startswith(b"\x89PNG") and "α = " in lab.numbers.value


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
