"""Lab 1, ring all-reduce: how ranks, payload, bandwidth and latency set the time of an all-reduce.

``ring_allreduce_lab()`` returns a ``RingAllReduceLab``. Its controls (``CONTROLS``) are ``ranks`` (2–1024),
``payload_bytes`` (1 kB–10 GB), ``bandwidth_bytes_per_s`` (1–1000 GB/s, one-way per rank), ``latency_s`` (α,
0.1–100 µs), ``algorithm`` (one of ``collectives.ALGORITHMS["all_reduce"]`` that applies to p ranks) and ``step``
(the step of the ring drawn on the right, 0 … 2(p − 1), enabled for rings of up to 8 ranks). Every number comes
from one call, ``collectives.collective_report("all_reduce", p, S, B, α, algorithm)``: ``compute`` returns a
``RingResult`` (that ``CollectiveReport`` as ``report``, the ``step``, ``busbw_factor``), which alone the figure and
the summary read and ``lab.typed_result`` holds. ``lab.result`` shows it as a plain dict:

- ``time_s`` = n·α + Q/B, split into ``latency_term_s`` (n·α) and ``bandwidth_term_s`` (Q/B);
- ``algbw_bytes_per_s`` = S/t and ``busbw_bytes_per_s`` = algbw × 2(p − 1)/p, as nccl-tests reports them;
- ``crossover_bytes``: the payload where n·α = Q/B; ``regime`` says which term is larger at the chosen payload;
- ``<algorithm>_time_s``: the time of every algorithm that applies to p ranks, and ``fastest_algorithm``.

Recursive doubling and Rabenseifner need a power-of-two number of ranks: the ``algorithm`` buttons offer them only
then (moving ``ranks`` to a value that is not a power of two switches such a choice to the ring), so no position of
the controls asks ``course_lib`` for a cost it refuses to give. The figure is built once from two live figures of
``course_lib.viz``: on the left ``collectives.CollectiveTimeFigure`` (time against payload of every applicable
algorithm, log–log), on the right ``RingStepFigure`` (the ring's chunks step by step, from ``course_lib.simulate``);
an update only moves and recolours their artists.

>>> from course_lib import units
>>> lab = ring_allreduce_lab()
>>> units.format_time(lab.result["time_s"]), units.format_bytes(lab.result["crossover_bytes"]), lab.result["regime"]
('3.57 ms', '2 MB', 'bandwidth-bound')
>>> lab.controls["ranks"].value = 6
>>> lab.controls["algorithm"].options   # power-of-two-only algorithms are not offered for 6 ranks
(('ring', 'ring'), ('binomial tree', 'binomial_tree'), ('double binary tree', 'double_binary_tree'))
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import ipywidgets as widgets
from matplotlib.figure import Figure

from .. import collectives, units
from ..viz.collectives import CollectiveTimeFigure, algorithm_label
from ..viz.fast import Panel
from ..viz.ring_allreduce import RingStepFigure
from ..viz.style import seconds_label
from ._base import ControlSpec, Lab, control_defaults, nice_values

__all__ = [
    "ring_allreduce_lab",
    "RingAllReduceLab",
    "RingResult",
    "CONTROLS",
    "DEFAULTS",
    "ring_steps",
    "RANKS",
    "PAYLOADS_BYTES",
    "BANDWIDTHS_BYTES_PER_S",
    "LATENCIES_S",
    "MAX_STEP_RANKS",
]

OP = "all_reduce"

# The ranges practitioners meet: 2 ranks to 1024, 1 kB (a small inference all-reduce) to 10 GB (a whole
# model's gradients), 1 GB/s to 1000 GB/s one-way, 0.1 µs to 100 µs of startup per step.
RANKS = (2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
# Ends written as decimal literals: 100 * US is 9.999999999999999e-05, and nice_values keeps the ends as given.
PAYLOADS_BYTES = tuple(nice_values(1e3, 1e10, mantissas=(1, 1.5, 2, 3, 4, 5, 6, 8)))  # 1 kB … 10 GB
BANDWIDTHS_BYTES_PER_S = tuple(nice_values(1e9, 1e12, mantissas=(1, 1.25, 1.5, 2, 2.5, 3, 4, 4.5, 5, 6, 8)))
LATENCIES_S = tuple(nice_values(1e-7, 1e-4, mantissas=(1, 2, 3, 5)))  # 0.1 µs … 100 µs
MAX_STEP_RANKS = 8  # the step-by-step grid stays readable up to 8 ranks × 8 chunks

_TIME_LIMITS_S = (1e-7, 1e3)  # fixed: the shortest (0.1 µs, 2 ranks) to the longest (1024 ranks, 1 GB/s, 10 GB)
# The time plot's place (figure fractions): beside the step grid, or the whole width when there is no grid (p > 8).
_TIME_AXES_BESIDE_GRID = (0.095, 0.3, 0.44, 0.63)
_TIME_AXES_ALONE = (0.095, 0.3, 0.86, 0.63)


ring_steps = collectives.ring_allreduce_step_count  # the range of the ``step`` control: 2(p − 1)


def _step_phase(ranks: int, step: int) -> str:
    if ranks > MAX_STEP_RANKS:
        return f"not drawn (more than {MAX_STEP_RANKS} ranks)"
    return collectives.ring_step_phase(OP, ranks, step)


# Lesson 02's synthetic example: 100 MB at 50 GB/s, α = 5 µs, on a ring of 8 ranks. A value between a slider's stops
# is kept (added to them); the algorithms that apply and the steps of the ring depend on p.
CONTROLS = (
    ControlSpec("ranks", "ranks p", RANKS, 8, kind="open slider"),
    ControlSpec("payload_bytes", "payload S", PAYLOADS_BYTES, 100 * units.MB, units.format_bytes, kind="open slider"),
    ControlSpec(
        "bandwidth_bytes_per_s",
        "bandwidth B",
        BANDWIDTHS_BYTES_PER_S,
        50 * units.GB,
        units.format_bandwidth,
        kind="open slider",
    ),
    ControlSpec("latency_s", "latency α per step", LATENCIES_S, 5 * units.US, seconds_label, kind="open slider"),
    ControlSpec(
        "algorithm",
        "algorithm",
        lambda values: collectives.applicable_algorithms(OP, values["ranks"]),
        "ring",
        algorithm_label,
        kind="buttons",
        depends_on=("ranks",),
    ),
    ControlSpec(  # the grid is drawn up to MAX_STEP_RANKS; past it the slider keeps that many steps, disabled
        "step",
        "ring step (right)",
        lambda values: range(ring_steps(min(values["ranks"], MAX_STEP_RANKS)) + 1),
        0,
        kind="int slider",
        depends_on=("ranks",),
    ),
)
DEFAULTS = control_defaults(CONTROLS)


@dataclass(frozen=True)
class RingResult:
    """What one refresh of the ring lab computes: ``collectives.collective_report``'s ``report`` (as it returns it)
    and the ``step`` of the ring drawn on the right (0 … 2(p − 1)), with ``busbw_factor`` = 2(p − 1)/p.

    >>> from course_lib import collectives, units
    >>> r = RingResult(collectives.collective_report(OP, 4, 64 * units.MB, 50 * units.GB, 5 * units.US), 3, 1.5)
    >>> r.ring_steps, r.step_phase, r.fastest_algorithm
    (6, 'reduce-scatter', 'rabenseifner')
    >>> RingResult(r.report, 7, 1.5)
    Traceback (most recent call last):
    ValueError: step must be in 0..6 (2(p − 1) for ranks=4), got 7
    """

    report: collectives.CollectiveReport
    step: int
    busbw_factor: float

    def __post_init__(self):
        if self.report.op != OP:
            raise ValueError(f"report must be of an {OP}, got one of {self.report.op!r}")
        last_step = ring_steps(self.report.ranks)
        if not (isinstance(self.step, int) and 0 <= self.step <= last_step):
            raise ValueError(
                f"step must be in 0..{last_step} (2(p − 1) for ranks={self.report.ranks}), got {self.step!r}"
            )

    @property
    def ring_steps(self) -> int:
        """2(p − 1): the last step of the ring."""
        return ring_steps(self.report.ranks)

    @property
    def step_phase(self) -> str:
        """The phase ``step`` belongs to ("reduce-scatter", "all-gather", …), or why it is not drawn."""
        return _step_phase(self.report.ranks, self.step)

    @property
    def fastest_algorithm(self) -> str:
        """The algorithm with the shortest time of ``report.times_by_algorithm`` (the first one on a tie)."""
        times = self.report.times_by_algorithm
        return min(times, key=times.get)


class RingAllReduceLab(Lab):
    """The ring all-reduce lab (see the module docstring); build it with ``ring_allreduce_lab(**initial)``."""

    CONTROLS = CONTROLS  # the module's, above

    def __init__(self, **initial):
        start = self.start_values(initial)
        controls = self.build_controls(start)
        controls["algorithm"].style.button_width = "128px"
        controls["step"].disabled = start["ranks"] > MAX_STEP_RANKS
        note = widgets.HTML(
            "<small>Recursive doubling and Rabenseifner need a power-of-two number of ranks: they are offered only "
            "then, and a choice of them falls back to the ring when <i>p</i> is not one. The step-by-step view (the "
            f"<i>ring step</i> slider) is drawn for rings of up to {MAX_STEP_RANKS} ranks. <i>B</i> is the one-way "
            "bandwidth of each rank's link; α the startup cost of one step.</small>"
        )
        super().__init__(
            "Ring all-reduce: latency plus payload transfer", controls, self._build_figure(), extra_children=[note]
        )

    # --- controls whose options depend on another control ---------------------------------------------------

    def sync_controls(self, changed) -> None:
        """The algorithms and the steps follow p (their specs); the step slider is disabled past 8 ranks."""
        super().sync_controls(changed)
        self.controls["step"].disabled = self.controls["ranks"].value > MAX_STEP_RANKS

    # --- the four methods of a lab ------------------------------------------------------------------------

    def compute(self, values: dict) -> RingResult:
        """One ``collectives.collective_report``, with the step of the ring drawn on the right."""
        p, step = int(values["ranks"]), int(values["step"])
        report = collectives.collective_report(
            OP,
            p,
            float(values["payload_bytes"]),
            float(values["bandwidth_bytes_per_s"]),
            float(values["latency_s"]),
            values["algorithm"],
        )
        return RingResult(report, step, _busbw_factor(p))

    def result_dict(self, r: RingResult) -> dict:
        """``result``: the report's numbers as plain values, then one ``<algorithm>_time_s`` per algorithm."""
        report = r.report
        return {
            "time_s": report.time_s,
            "latency_term_s": report.latency_term_s,
            "bandwidth_term_s": report.bandwidth_term_s,
            "algbw_bytes_per_s": report.algbw_bytes_per_s,
            "busbw_bytes_per_s": report.busbw_bytes_per_s,
            "busbw_factor": r.busbw_factor,
            "crossover_bytes": report.crossover_bytes,
            "phases": int(report.phases),
            "wire_bytes": float(report.wire_bytes),
            "regime": report.regime,
            "fastest_algorithm": r.fastest_algorithm,
            "ranks": report.ranks,
            "payload_bytes": report.payload_bytes,
            "bandwidth_bytes_per_s": report.bandwidth_bytes_per_s,
            "latency_s": report.latency_s,
            "algorithm": report.algorithm,
            "step": r.step,
            "ring_steps": r.ring_steps,
            "step_phase": r.step_phase,
            **{f"{a}_time_s": t for a, t in report.times_by_algorithm.items()},
        }

    def summary_html(self, r: RingResult) -> str:
        t, fmt_b, fmt_bw = units.format_time, units.format_bytes, units.format_bandwidth
        report = r.report
        name = algorithm_label(report.algorithm)
        side_by_side = " · ".join(
            (
                f"<b>{algorithm_label(a)} {t(time_s)}</b>"
                if a == r.fastest_algorithm
                else f"{algorithm_label(a)} {t(time_s)}"
            )
            for a, time_s in report.times_by_algorithm.items()
        )
        at_crossover = math.isclose(report.latency_term_s, report.bandwidth_term_s, rel_tol=1e-9)
        return (
            f"<b>{name}, {report.ranks} ranks, {fmt_b(report.payload_bytes)}: T = {t(report.time_s)}</b> = latency "
            f"term {t(report.latency_term_s)} (n·α = {int(report.phases)} × {t(report.latency_s)}) + bandwidth term "
            f"{t(report.bandwidth_term_s)} (Q/B = {fmt_b(float(report.wire_bytes))} / "
            f"{fmt_bw(report.bandwidth_bytes_per_s)})"
            f"<br><b>{report.regime}</b>"
            f"{' (at the crossover: the two terms are equal)' if at_crossover else ''}: the terms are equal at "
            f"S* = {fmt_b(report.crossover_bytes)} · "
            f"algbw = S/T = {fmt_bw(report.algbw_bytes_per_s)} · busbw = algbw × 2(p − 1)/p = algbw × "
            f"{r.busbw_factor:.4g} = {fmt_bw(report.busbw_bytes_per_s)}"
            f"<br>side by side at this payload (fastest in bold): {side_by_side}"
        )

    # --- the figure: two live figures, built once -------------------------------------------------------------

    def _build_figure(self) -> Figure:
        fig = Figure(figsize=(9, 4.3), dpi=self.dpi)
        time_ax = fig.add_axes(_TIME_AXES_BESIDE_GRID)
        self.time_figure = CollectiveTimeFigure(
            time_ax,
            OP,
            payload_range_bytes=(PAYLOADS_BYTES[0], PAYLOADS_BYTES[-1]),
            time_range_s=_TIME_LIMITS_S,
            ranks_options=RANKS,
        )
        step_ax = fig.add_axes((0.56, 0.0, 0.44, 1.0))
        self.step_figure = RingStepFigure(step_ax, MAX_STEP_RANKS, ranks_options=RANKS)

        # The legend depends on which algorithms apply to p, the step grid's rows and labels on min(p, 9); above
        # MAX_STEP_RANKS there is no grid, and the time plot takes the whole width. One panel, the whole figure.
        def key(ranks):
            return self.time_figure.static_key(ranks), self.step_figure.static_key(ranks)

        def set_static(ranks):
            self.time_figure.set_static(ranks)
            self.step_figure.set_static(ranks)
            grid = ranks <= MAX_STEP_RANKS
            place = _TIME_AXES_BESIDE_GRID if grid else _TIME_AXES_ALONE
            time_ax.set_position(place)
            # The legend below the plot keeps its place in the figure (its anchor is in axes fractions).
            anchor_x = -0.15 * _TIME_AXES_BESIDE_GRID[2] / place[2]
            time_ax.get_legend().set_bbox_to_anchor((anchor_x, -0.15), transform=time_ax.transAxes)
            step_ax.set_visible(grid)

        examples = tuple({key(p): p for p in RANKS}.values())
        self.enable_partial_redraw(
            fig,
            [*self.time_figure.animated, *self.step_figure.animated],
            [Panel((0.0, 1.0), (time_ax, step_ax), key, set_static, examples)],
        )
        return fig

    def draw(self, r: RingResult) -> None:
        ranks = r.report.ranks
        self.set_static_state(ranks)
        self.time_figure.update(r.report)
        self.step_figure.update(ranks, r.step)
        self.step_figure.title.set_visible(ranks <= MAX_STEP_RANKS)  # no grid: the summary gives the steps


@functools.cache
def _busbw_factor(ranks: int) -> float:
    return collectives.busbw_factor(OP, ranks)


def ring_allreduce_lab(**initial) -> RingAllReduceLab:
    """The ring all-reduce lab; ``initial`` sets controls by name (defaults: 8 ranks and lesson 02's 100 MB,
    50 GB/s, 5 µs, ring, step 0). A value off a slider's stops is added to them; one outside its range
    raises ValueError.

    >>> from course_lib import units
    >>> lab = ring_allreduce_lab(ranks=4, payload_bytes=64 * units.MB)
    >>> units.format_time(lab.result["time_s"]), units.format_bandwidth(lab.result["busbw_bytes_per_s"])
    ('1.95 ms', '49.2 GB/s')
    """
    return RingAllReduceLab(**initial)
