"""Lab 8's widget: run an MPI all-reduce sweep with a chosen MPICH algorithm, see it against its α–β fit.

Unlike the other labs' widgets, moving a control computes nothing: a measurement takes seconds, so the *Run* button
starts it (``course_lib.measure.run_collective_sweep``), and the figure and ``.result`` update when it is done.
``measure_lab(recorded=table)`` opens on a recorded table instead of a live run. The controls (``CONTROLS``) are
``ranks`` (2–4), ``algorithm`` (the MPICH algorithms with a cost model), ``largest_bytes`` (64 KiB–64 MiB) and
``iterations`` (3–20); the summary says what *Run* will measure with them.

``compute`` makes one call, ``measure.fit_alpha_beta(table)`` on the table shown, and returns a ``SweepResult``
(the table, its ``AlphaBetaFit`` and the warnings the run raised), or None before any table is shown; the figure and
the numbers under the button read only it. ``lab.result`` shows it as a dict: ``table`` and ``fit`` as they are, and
``latency_s``, ``bandwidth_bytes_per_s``, ``crossover_bytes`` and ``median_relative_residual`` ({} before a table).

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
from dataclasses import dataclass

import ipywidgets as widgets
from matplotlib.figure import Figure

from .. import measure, units
from ..viz.measure import SweepFigure
from ._base import ControlSpec, Lab, control_defaults

__all__ = ["MeasureLab", "measure_lab", "SweepResult", "CONTROLS", "DEFAULTS", "ALGORITHMS", "LARGEST"]

# The all-reduce algorithms of MPICH that have a cost model in the course (MPICH's name → the model's).
ALGORITHMS = tuple(name for name, model in measure.MPICH_ALGORITHMS["all_reduce"].items() if model)
LARGEST = tuple(2**k for k in range(16, 27, 2))  # 64 KiB … 64 MiB
CONTROLS = (
    ControlSpec("ranks", "ranks p", range(2, 5), 2, kind="int slider"),
    ControlSpec("algorithm", "algorithm", ALGORITHMS, "ring", kind="buttons"),
    ControlSpec("largest_bytes", "up to", LARGEST, 2**22, lambda size: units.format_bytes(size, binary=True)),
    ControlSpec("iterations", "iterations", range(3, 21), 5, kind="int slider"),
)
DEFAULTS = control_defaults(CONTROLS)


@dataclass(frozen=True, eq=False)
class SweepResult:
    """A sweep shown by lab 8: its ``table`` (one op, algorithm and rank count), the ``fit`` of α and B to it
    (``measure.fit_alpha_beta``) and the ``notes`` (warnings) its run raised.

    >>> from course_lib.measure import Measurements, Row, fit_alpha_beta
    >>> table = Measurements(tuple(Row("all_reduce", "ring", 2, s, 1e-5 + s / 1e9, 0, 0, 0, 0, 5, False)
    ...                            for s in (8, 4096, 2**20)))
    >>> SweepResult(table, fit_alpha_beta(table)).fit.ranks
    2
    >>> SweepResult(table, None)
    Traceback (most recent call last):
    ValueError: fit must be a measure.AlphaBetaFit, got None
    """

    table: measure.Measurements
    fit: measure.AlphaBetaFit
    notes: tuple[str, ...] = ()

    def __post_init__(self):
        if not isinstance(self.table, measure.Measurements):
            raise ValueError(f"table must be a measure.Measurements, got {type(self.table).__name__}")
        if not isinstance(self.fit, measure.AlphaBetaFit):
            raise ValueError(f"fit must be a measure.AlphaBetaFit, got {self.fit!r}")
        if (self.fit.op, self.fit.ranks) != (self.table.op, self.table.ranks):
            raise ValueError(
                f"fit must be of the table's op and ranks {(self.table.op, self.table.ranks)}, got "
                f"{(self.fit.op, self.fit.ranks)}"
            )
        if not (isinstance(self.notes, tuple) and all(isinstance(note, str) for note in self.notes)):
            raise ValueError(f"notes must be a tuple of strings, got {self.notes!r}")


class MeasureLab(Lab):
    """Controls (ranks, algorithm, largest size, iterations), a Run button, the numbers and the sweep figure.

    The summary says what *Run* will measure and follows the controls at once; ``.result`` (the fitted table) and
    the figure change only when a sweep has run (``run``) or a recorded table is shown (``show``).
    """

    CONTROLS = CONTROLS  # the module's, above

    def __init__(self, recorded=None, **initial):
        controls = self.build_controls(self.start_values(initial))
        self.button = widgets.Button(description="Run", button_style="primary", tooltip="run the MPI sweep")
        self.button.on_click(lambda _: self.run())
        self.numbers = widgets.HTML("<i>No sweep yet: press Run.</i>")
        figure = Figure(figsize=(8, 4.5), layout="constrained")
        self.sweep_figure = SweepFigure(figure.add_subplot())
        self._shown = None  # (table, notes) of the last sweep run or recorded table shown: compute's input
        super().__init__("Lab 8 · measure an all-reduce", controls, figure, extra_children=(self.button, self.numbers))
        if recorded is not None:
            self.show(recorded)

    def _on_change(self, _change) -> None:
        # A control changes only what the next Run measures: the summary, not the result or the figure.
        self.summary.value = self.summary_html(self.typed_result)

    def sizes_bytes(self) -> list:
        """The sizes *Run* measures: 8 B × 4^k up to the largest size chosen."""
        return [8 * 4**k for k in range(20) if 8 * 4**k <= self.controls["largest_bytes"].value]

    def compute(self, _values: dict) -> SweepResult | None:
        """One ``measure.fit_alpha_beta`` of the table shown (None before any)."""
        if self._shown is None:
            return None
        table, notes = self._shown
        return SweepResult(table, measure.fit_alpha_beta(table), notes)

    def result_dict(self, r: SweepResult | None) -> dict:
        """``result``: the table and its fit as they are, and the fit's numbers ({} before any table)."""
        if r is None:
            return {}
        fit = r.fit
        return {
            "table": r.table,
            "fit": fit,
            "latency_s": fit.latency_s,
            "bandwidth_bytes_per_s": fit.bandwidth_bytes_per_s,
            "crossover_bytes": fit.crossover_bytes,
            "median_relative_residual": fit.median_relative_residual,
        }

    def draw(self, r: SweepResult | None) -> None:
        if r is None:
            return
        fit = r.fit
        self.sweep_figure.update((r.table, fit))
        self.numbers.value = "<br>".join(
            [
                f"α = {units.format_time(fit.latency_s)}, B = {units.format_bandwidth(fit.bandwidth_bytes_per_s)}, "
                f"crossover {units.format_bytes(fit.crossover_bytes)}, median |residual| "
                f"{units.format_percent(fit.median_relative_residual)}",
                *r.notes,
            ]
        )

    def summary_html(self, _result: SweepResult | None) -> str:
        """What *Run* will measure: the controls' settings, not a result (a run changes the result, a control not)."""
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
    """Lab 8's widget; ``recorded`` (a ``Measurements`` of one algorithm) is shown without running anything,
    ``initial`` sets the controls (``DEFAULTS`` lists the names); a value a control does not offer raises ValueError.

    >>> measure_lab(largest_bytes=1000)
    Traceback (most recent call last):
    ValueError: largest_bytes must be one of [65536, 262144, 1048576, 4194304, 16777216, 67108864], got 1000
    """
    return MeasureLab(recorded, **initial)
