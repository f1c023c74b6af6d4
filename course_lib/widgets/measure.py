"""Lab 5's widget: run an MPI all-reduce sweep with a chosen MPICH algorithm, see it against its α–β fit.

Unlike the other labs' widgets, moving a control computes nothing: a measurement takes seconds, so the *Run* button
starts it (``course_lib.measure.run_collective_sweep``), and the figure and ``.result`` update when it is done.
``measure_lab(recorded=table)`` opens on a recorded table instead of a live run.

>>> from course_lib import units
>>> from course_lib.measure import Measurements, Row
>>> times = {s: 5e-6 + s / 2e9 for s in (8, 4096, 2**20)}
>>> rows = tuple(Row("all_reduce", "ring", 2, s, t, t, t, s / t, s / t, 5, False) for s, t in times.items())
>>> lab = measure_lab(recorded=Measurements(rows))
>>> units.format_time(lab.result["latency_s"]), units.format_bandwidth(lab.result["bandwidth_bytes_per_s"])
('2.5 µs', '2 GB/s')
"""

from __future__ import annotations

import warnings

import ipywidgets as widgets
from matplotlib.figure import Figure

from .. import measure, units
from ..viz.measure import SweepFigure
from ._base import Lab, choice_buttons, int_slider, unit_slider

__all__ = ["MeasureLab", "measure_lab"]

# The all-reduce algorithms of MPICH that have a cost model in the course (MPICH's name → the model's).
ALGORITHMS = tuple(name for name, model in measure.MPICH_ALGORITHMS["all_reduce"].items() if model)
LARGEST = tuple(2**k for k in range(16, 27, 2))  # 64 KiB … 64 MiB


class MeasureLab(Lab):
    """Controls (ranks, algorithm, largest size, iterations), a Run button, the numbers and the sweep figure.

    The summary says what *Run* will measure and follows the controls at once; ``.result`` (the fitted table) and
    the figure change only when a sweep has run (``run``) or a recorded table is shown (``show``).
    """

    def __init__(self, recorded=None, ranks=2, algorithm="ring", largest_bytes=2**22, iterations=5):
        controls = {
            "ranks": int_slider("ranks p", 2, 4, ranks),
            "algorithm": choice_buttons("algorithm", ALGORITHMS, algorithm),
            "largest_bytes": unit_slider(
                "up to", LARGEST, largest_bytes, lambda size: units.format_bytes(size, binary=True)
            ),
            "iterations": int_slider("iterations", 3, 20, iterations),
        }
        self.button = widgets.Button(description="Run", button_style="primary", tooltip="run the MPI sweep")
        self.button.on_click(lambda _: self.run())
        self.numbers = widgets.HTML("<i>No sweep yet: press Run.</i>")
        figure = Figure(figsize=(8, 4.5), layout="constrained")
        self.sweep_figure = SweepFigure(figure.add_subplot())
        self._shown = None  # (table, notes) of the last sweep run or recorded table shown
        super().__init__("Lab 5 · measure an all-reduce", controls, figure, extra_children=(self.button, self.numbers))
        if recorded is not None:
            self.show(recorded)

    def _on_change(self, _change) -> None:
        # A control changes only what the next Run measures: the summary, not the result or the figure.
        self.summary.value = self.summary_html(self.result)

    def sizes_bytes(self) -> list:
        """The sizes *Run* measures: 8 B × 4^k up to the largest size chosen."""
        return [8 * 4**k for k in range(20) if 8 * 4**k <= self.controls["largest_bytes"].value]

    def compute(self, _values: dict) -> dict:
        if self._shown is None:
            return {}
        table, _ = self._shown
        fit = measure.fit_alpha_beta(table)
        return {
            "table": table,
            "fit": fit,
            "latency_s": fit.latency_s,
            "bandwidth_bytes_per_s": fit.bandwidth_bytes_per_s,
            "crossover_bytes": fit.crossover_bytes,
            "median_relative_residual": fit.median_relative_residual,
        }

    def draw(self, result: dict) -> None:
        if result:
            self.sweep_figure.update((result["table"], result["fit"]))
            fit = result["fit"]
            self.numbers.value = "<br>".join(
                [
                    f"α = {units.format_time(fit.latency_s)}, B = {units.format_bandwidth(fit.bandwidth_bytes_per_s)}, "
                    f"crossover {units.format_bytes(fit.crossover_bytes)}, median |residual| "
                    f"{units.format_percent(fit.median_relative_residual)}",
                    *self._shown[1],
                ]
            )

    def summary_html(self, _result: dict) -> str:
        c, sizes = self.values(), self.sizes_bytes()
        return (
            f"Run measures an all-reduce of float32 buffers on <b>{c['ranks']} ranks</b> with MPICH's "
            f"<b>{c['algorithm']}</b>: {len(sizes)} sizes from {units.format_bytes(sizes[0])} to "
            f"{units.format_bytes(sizes[-1], binary=True)}, {c['iterations']} timed iterations each (the maximum over "
            "ranks), then fits α and B."
        )

    def run(self):
        """Measure with the controls' settings (a real MPI job), then show it."""
        c = self.values()
        self.numbers.value = "<i>measuring…</i>"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                table = measure.run_collective_sweep(
                    "all_reduce", c["ranks"], self.sizes_bytes(), c["algorithm"], iterations=c["iterations"], warmup=3
                )
            except (ValueError, RuntimeError) as error:
                self.numbers.value = f"<b>failed:</b> {error}"
                return None
        self.show(table, [str(w.message) for w in caught])
        return table

    def show(self, table, notes=()):
        """Fit ``table`` (one algorithm, one rank count) and draw it."""
        self._shown = (table, tuple(notes))
        self.refresh()


def measure_lab(recorded=None, **initial) -> MeasureLab:
    """Lab 5's widget; ``recorded`` (a ``Measurements`` of one algorithm) is shown without running anything,
    ``initial`` sets the controls (ranks, algorithm, largest_bytes, iterations)."""
    return MeasureLab(recorded, **initial)
