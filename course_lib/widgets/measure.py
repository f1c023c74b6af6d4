"""Lab 5's widget: run an MPI all-reduce sweep with a chosen MPICH algorithm, see it against its α–β fit.

Unlike the other labs' widgets, moving a control computes nothing: a measurement takes seconds, so the *Run* button
starts it (``course_lib.measure.run_collective_sweep``), and the figure and ``.result`` update when it is done.
``measure_lab(recorded=table)`` opens on a recorded table instead of a live run.

>>> from course_lib.measure import Measurements, Row
>>> times = {s: 5e-6 + s / 2e9 for s in (8, 4096, 2**20)}
>>> rows = tuple(Row("all_reduce", "ring", 2, s, t, t, t, s / t, s / t, 5, False) for s, t in times.items())
>>> lab = measure_lab(recorded=Measurements(rows))
>>> units.format_time(lab.result["latency_s"]), units.format_bandwidth(lab.result["bandwidth_bytes_per_s"])
('2.5 µs', '2 GB/s')
"""

from __future__ import annotations

import io
import warnings

import ipywidgets as widgets
import matplotlib.pyplot as plt

from .. import measure, units
from ..viz.measure import SweepFigure

__all__ = ["MeasureLab", "measure_lab"]

# The all-reduce algorithms of MPICH that have a cost model in the course (MPICH's name → the model's).
ALGORITHMS = tuple(name for name, model in measure.MPICH_ALGORITHMS["all_reduce"].items() if model)
LARGEST = tuple(2**k for k in range(16, 27, 2))  # 64 KiB … 64 MiB


class MeasureLab(widgets.VBox):
    """Controls (ranks, algorithm, largest size, iterations), a Run button, the numbers and the sweep figure."""

    def __init__(self, recorded=None, ranks=2, algorithm="ring", largest_bytes=2**22, iterations=5):
        self.controls = {
            "ranks": widgets.IntSlider(value=ranks, min=2, max=4, description="ranks p"),
            "algorithm": widgets.Dropdown(options=ALGORITHMS, value=algorithm, description="algorithm"),
            "largest_bytes": widgets.SelectionSlider(
                options=[(units.format_bytes(s, binary=True), s) for s in LARGEST],
                value=largest_bytes,
                description="up to",
            ),  # fmt: skip
            "iterations": widgets.IntSlider(value=iterations, min=3, max=20, description="iterations"),
        }
        self.button = widgets.Button(description="Run", button_style="primary", tooltip="run the MPI sweep")
        self.button.on_click(lambda _: self.run())
        # The summary (what Run will measure) follows the controls at once; the numbers and the figure follow a run.
        self.summary = widgets.HTML()
        self.summary.add_class("course-lab-summary")
        self.numbers = widgets.HTML("<i>No sweep yet: press Run.</i>")
        self.image = widgets.Image(format="png")
        with plt.ioff():
            self.figure, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
        self.sweep_figure = SweepFigure()
        self.sweep_figure.build(ax)
        self.result = {}
        for control in self.controls.values():
            control.observe(self._describe, names="value")
        self._describe()
        super().__init__([widgets.HBox([*self.controls.values(), self.button]), self.summary, self.numbers, self.image])
        if recorded is not None:
            self.show(recorded)
        else:
            self._render()

    def _sizes(self) -> list:
        return [8 * 4**k for k in range(20) if 8 * 4**k <= self.controls["largest_bytes"].value]

    def _describe(self, _change=None):
        c = {name: control.value for name, control in self.controls.items()}
        sizes = self._sizes()
        self.summary.value = (
            f"Run measures an all-reduce of float32 buffers on <b>{c['ranks']} ranks</b> with MPICH's "
            f"<b>{c['algorithm']}</b>: {len(sizes)} sizes from {units.format_bytes(sizes[0])} to "
            f"{units.format_bytes(sizes[-1], binary=True)}, {c['iterations']} timed iterations each (the maximum over "
            "ranks), then fits α and B."
        )

    def _render(self):
        png = io.BytesIO()
        self.figure.savefig(png, format="png", dpi=90)
        self.image.value = png.getvalue()

    def run(self):
        """Measure with the controls' settings (a real MPI job), then show it."""
        c = {name: control.value for name, control in self.controls.items()}
        sizes = self._sizes()
        self.numbers.value = "<i>measuring…</i>"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                table = measure.run_collective_sweep(
                    "all_reduce", c["ranks"], sizes, c["algorithm"], iterations=c["iterations"], warmup=3
                )
            except (ValueError, RuntimeError) as error:
                self.numbers.value = f"<b>failed:</b> {error}"
                return None
        self.show(table, [str(w.message) for w in caught])
        return table

    def show(self, table, notes=()):
        """Fit ``table`` (one algorithm, one rank count) and draw it."""
        fit = measure.fit_alpha_beta(table)
        self.result = {
            "table": table,
            "fit": fit,
            "latency_s": fit.latency_s,
            "bandwidth_bytes_per_s": fit.bandwidth_bytes_per_s,
            "crossover_bytes": fit.crossover_bytes,
            "median_relative_residual": fit.median_relative_residual,
        }
        self.numbers.value = "<br>".join(
            [
                f"α = {units.format_time(fit.latency_s)}, B = {units.format_bandwidth(fit.bandwidth_bytes_per_s)}, "
                f"crossover {units.format_bytes(fit.crossover_bytes)}, median |residual| "
                f"{units.format_percent(fit.median_relative_residual)}",
                *notes,
            ]
        )
        self.sweep_figure.update((table, fit))
        self._render()


def measure_lab(recorded=None, **initial) -> MeasureLab:
    """Lab 5's widget; ``recorded`` (a ``Measurements`` of one algorithm) is shown without running anything,
    ``initial`` sets the controls (ranks, algorithm, largest_bytes, iterations)."""
    return MeasureLab(recorded, **initial)
