"""Lab 1, ring all-reduce: how ranks, payload, bandwidth and latency set the time of an all-reduce.

``ring_allreduce_lab()`` returns a ``RingAllReduceLab``. Its controls are ``ranks`` (2–1024), ``payload_bytes``
(1 kB–10 GB), ``bandwidth_bytes_per_s`` (1–1000 GB/s, one-way per rank), ``latency_s`` (α, 0.1–100 µs),
``algorithm`` (one of ``collectives.ALGORITHMS["all_reduce"]``) and ``step`` (the step of the ring drawn on the
right, 0 … 2(p − 1), enabled for rings of up to 8 ranks). Every number comes from ``course_lib.collectives``:

- ``time_s`` = ``collective_time("all_reduce", p, S, B, α, algorithm)`` = n·α + Q/B, split into ``latency_term_s``
  (n·α) and ``bandwidth_term_s`` (Q/B) with n and Q from ``collective_cost``;
- ``algbw_bytes_per_s`` = S/t and ``busbw_bytes_per_s`` = algbw × 2(p − 1)/p, as nccl-tests reports them;
- ``crossover_bytes`` = ``latency_bandwidth_crossover_bytes``: the payload where n·α = Q/B; ``regime`` says which term
  is larger at the chosen payload.

Recursive doubling and Rabenseifner need a power-of-two number of ranks: the ``algorithm`` buttons offer them only
then (moving ``ranks`` to a value that is not a power of two switches such a choice to the ring), so no position of
the controls asks ``course_lib`` for a cost it refuses to give. The figure is built once: the left panel holds the
time against payload of every applicable algorithm (log–log), the right panel the ring's chunks step by step (from
``course_lib.simulate``); an update only moves and recolours its artists.

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

import ipywidgets as widgets
import numpy as np
from matplotlib.collections import PatchCollection
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from .. import _validate, collectives, simulate, units
from ..viz._style import COLORS, seconds_formatter, seconds_label
from ..viz.collectives import _ALGORITHM_STYLES, EMPTY_COLOR, _contribution_counts, _level_colors
from ._base import Lab, choice_buttons, int_slider, nice_values, same_stop, stops_with, unit_slider
from ._fast import FastText, Panel

__all__ = [
    "ring_allreduce_lab",
    "RingAllReduceLab",
    "applicable_algorithms",
    "ring_steps",
    "RANKS",
    "PAYLOADS_BYTES",
    "BANDWIDTHS_BYTES_PER_S",
    "LATENCIES_S",
    "MAX_STEP_RANKS",
]

OP = "all_reduce"
ALGORITHM_LABELS = {
    "ring": "ring",
    "binomial_tree": "binomial tree",
    "recursive_doubling": "recursive doubling",
    "rabenseifner": "Rabenseifner",
    "double_binary_tree": "double binary tree",
}
POWER_OF_TWO_ONLY = tuple(a for a in collectives.ALGORITHMS[OP] if a in collectives.POWER_OF_TWO_ONLY)

# The ranges practitioners meet: 2 ranks to 1024, 1 kB (a small inference all-reduce) to 10 GB (a whole
# model's gradients), 1 GB/s to 1000 GB/s one-way, 0.1 µs to 100 µs of startup per step.
RANKS = (2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
# Ends written as decimal literals: 100 * US is 9.999999999999999e-05, and nice_values keeps the ends as given.
PAYLOADS_BYTES = tuple(nice_values(1e3, 1e10, mantissas=(1, 1.5, 2, 3, 4, 5, 6, 8)))  # 1 kB … 10 GB
BANDWIDTHS_BYTES_PER_S = tuple(nice_values(1e9, 1e12, mantissas=(1, 1.25, 1.5, 2, 2.5, 3, 4, 4.5, 5, 6, 8)))
LATENCIES_S = tuple(nice_values(1e-7, 1e-4, mantissas=(1, 2, 3, 5)))  # 0.1 µs … 100 µs
MAX_STEP_RANKS = 8  # the step-by-step grid stays readable up to 8 ranks × 8 chunks

DEFAULTS = {
    "ranks": 8,
    "payload_bytes": 100 * units.MB,
    "bandwidth_bytes_per_s": 50 * units.GB,
    "latency_s": 5 * units.US,
    "algorithm": "ring",
    "step": 0,
}  # the card's numbers (lesson 02)

_CURVE_PAYLOADS = np.logspace(3, 10, 71)  # 10 points a decade: the curves are sums of a constant and a line
_TIME_LIMITS_S = (1e-7, 1e3)  # fixed: the shortest (0.1 µs, 2 ranks) to the longest (1024 ranks, 1 GB/s, 10 GB)
_ROW_PITCH = 1.5  # vertical distance between ranks' rows in the step grid (room for the arrows between rows)
_RECEIVED_RGBA, _WHITE_RGBA, _EMPTY_RGBA = to_rgba(COLORS["latency"]), to_rgba("white"), to_rgba(EMPTY_COLOR)
# Where the step grid sits in its panel (axes fractions): the title and caption above, the key of shades below.
_GRID_TOP_AT, _GRID_BOTTOM_AT = 0.76, 0.1
_CHUNK_LABEL_Y = 0.1  # chunk labels sit this far (data units) above the first row


def _is_power_of_two(n: int) -> bool:
    return n & (n - 1) == 0


def applicable_algorithms(ranks: int) -> tuple[str, ...]:
    """The all-reduce algorithms ``collectives`` models for ``ranks`` ranks (the power-of-two-only ones only then).

    >>> applicable_algorithms(8)
    ('ring', 'binomial_tree', 'recursive_doubling', 'rabenseifner', 'double_binary_tree')
    >>> applicable_algorithms(12)
    ('ring', 'binomial_tree', 'double_binary_tree')
    """
    return collectives.applicable_algorithms(OP, ranks)


def ring_steps(ranks: int) -> int:
    """Steps of the ring all-reduce, 2(p − 1): the range of the ``step`` control."""
    return collectives.collective_cost(OP, ranks, 1.0, "ring").phases


@functools.cache
def _ring_simulation(ranks: int) -> simulate.Simulation:
    return simulate.simulate(OP, ranks, algorithm="ring", elements=ranks)


@functools.cache
def _step_view(ranks: int, step: int):
    """(contribution counts (p × p), received cells, transfers of this step) after ``step`` steps of the ring."""
    sim = _ring_simulation(ranks)
    counts = _contribution_counts(sim, step)
    transfers = sim.steps[step - 1] if step else ()
    received = frozenset((t.dst, c) for t in transfers for c in t.chunks)
    return counts, received, transfers


@functools.cache
def _levels(ranks: int) -> tuple:
    """RGBA shade of a chunk holding the sum of k = 1 … p ranks (lesson 02's colours)."""
    return tuple(to_rgba(color) for color in _level_colors(ranks))


def _regime(latency_term_s: float, bandwidth_term_s: float) -> str:
    """Which term is larger; from the crossover up (where the terms are equal up to rounding) bandwidth-bound."""
    tie = math.isclose(latency_term_s, bandwidth_term_s, rel_tol=1e-9)
    return "latency-bound" if latency_term_s > bandwidth_term_s and not tie else "bandwidth-bound"


def _at_crossover(result: dict) -> bool:
    return math.isclose(result["latency_term_s"], result["bandwidth_term_s"], rel_tol=1e-9)


def _step_phase(ranks: int, step: int) -> str:
    if ranks > MAX_STEP_RANKS:
        return f"not drawn (more than {MAX_STEP_RANKS} ranks)"
    if step == 0:
        return "before any transfer"
    return "reduce-scatter" if step <= ranks - 1 else "all-gather"


def _checked_option(name: str, value, low, high, integer: bool = False):
    """``value`` if it lies in [low, high] (a whole number if ``integer``), else ValueError naming the range."""
    checked = _validate.count(name, value) if integer else _validate.positive(name, value)
    if not low <= checked <= high:
        raise ValueError(f"{name} must be in {low}..{high}, got {value!r}")
    return checked


def _log_slider(description: str, stops, value, formatter):
    """``unit_slider`` over ``stops`` (plus ``value``) that also accepts a value within rounding error of a stop."""
    slider = unit_slider(description, stops_with(stops, value), value, formatter)
    slider.equals = same_stop  # ipywidgets' Selection compares with this predicate (default ==)
    return slider


def _bytes_label(value, _position=None):
    return units.format_bytes(value)


class RingAllReduceLab(Lab):
    """The ring all-reduce lab (see the module docstring); build it with ``ring_allreduce_lab(**initial)``."""

    _syncing = False

    def __init__(self, **initial):
        unknown = sorted(set(initial) - set(DEFAULTS))
        if unknown:
            raise ValueError(
                f"unknown control(s) {', '.join(map(repr, unknown))}; the controls are {', '.join(map(repr, DEFAULTS))}"
            )
        start = {**DEFAULTS, **initial}
        ranks = _checked_option("ranks", start["ranks"], RANKS[0], RANKS[-1], integer=True)
        payload = _checked_option("payload_bytes", start["payload_bytes"], PAYLOADS_BYTES[0], PAYLOADS_BYTES[-1])
        bandwidth = _checked_option(
            "bandwidth_bytes_per_s",
            start["bandwidth_bytes_per_s"],
            BANDWIDTHS_BYTES_PER_S[0],
            BANDWIDTHS_BYTES_PER_S[-1],
        )
        latency = _checked_option("latency_s", start["latency_s"], LATENCIES_S[0], LATENCIES_S[-1])
        allowed = applicable_algorithms(ranks)
        algorithm = _validate.choice("algorithm", start["algorithm"], collectives.ALGORITHMS[OP])
        if algorithm not in allowed:
            raise ValueError(f"algorithm={algorithm!r} needs a power-of-two number of ranks, got ranks={ranks}")
        step = _validate.count("step", start["step"], minimum=0)
        last_step = ring_steps(min(ranks, MAX_STEP_RANKS))
        if step > last_step:
            raise ValueError(
                f"step must be in 0..{last_step} (2(p − 1), drawn for p ≤ {MAX_STEP_RANKS}) for "
                f"ranks={ranks}, got {step!r}"
            )

        controls = {
            "ranks": unit_slider("ranks p", stops_with(RANKS, ranks), ranks, str),
            "payload_bytes": _log_slider("payload S", PAYLOADS_BYTES, payload, _bytes_label),
            "bandwidth_bytes_per_s": _log_slider(
                "bandwidth B", BANDWIDTHS_BYTES_PER_S, bandwidth, units.format_bandwidth
            ),
            "latency_s": _log_slider("latency α per step", LATENCIES_S, latency, seconds_label),
            "algorithm": choice_buttons("algorithm", self._algorithm_options(allowed), algorithm),
            "step": int_slider("ring step (right)", 0, last_step, step),
        }
        controls["algorithm"].style.button_width = "128px"
        controls["step"].disabled = ranks > MAX_STEP_RANKS
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

    @staticmethod
    def _algorithm_options(allowed):
        return [(ALGORITHM_LABELS[a], a) for a in allowed]

    def _on_change(self, change) -> None:
        if self._syncing:  # an option change made below: one refresh at the end is enough
            return
        self._syncing = True
        try:
            self._sync_dependent_controls()
        finally:
            self._syncing = False
        self.refresh()

    def _sync_dependent_controls(self) -> None:
        ranks = self.controls["ranks"].value
        algorithm = self.controls["algorithm"]
        allowed = applicable_algorithms(ranks)
        if tuple(value for _, value in algorithm.options) != allowed:
            chosen = algorithm.value
            algorithm.options = self._algorithm_options(allowed)  # resets the value to the first option
            algorithm.value = chosen if chosen in allowed else "ring"
        step = self.controls["step"]
        if ranks <= MAX_STEP_RANKS:
            step.max = ring_steps(ranks)  # clamps the value
        step.disabled = ranks > MAX_STEP_RANKS

    # --- the three methods of a lab ------------------------------------------------------------------------

    def compute(self, values: dict) -> dict:
        p, size = int(values["ranks"]), float(values["payload_bytes"])
        bandwidth, latency = float(values["bandwidth_bytes_per_s"]), float(values["latency_s"])
        algorithm, step = values["algorithm"], int(values["step"])
        cost = collectives.collective_cost(OP, p, size, algorithm)
        time_s = collectives.collective_time(OP, p, size, bandwidth, latency, algorithm)
        latency_term = collectives.comm_time(cost.phases, latency, 0.0, bandwidth)
        bandwidth_term = collectives.comm_time(0, latency, cost.wire_bytes, bandwidth)
        times = {a: collectives.collective_time(OP, p, size, bandwidth, latency, a) for a in applicable_algorithms(p)}
        result = {
            "time_s": time_s,
            "latency_term_s": latency_term,
            "bandwidth_term_s": bandwidth_term,
            "algbw_bytes_per_s": collectives.algbw_bytes_per_s(size, time_s),
            "busbw_bytes_per_s": collectives.busbw_bytes_per_s(OP, p, size, time_s),
            "busbw_factor": collectives.busbw_factor(OP, p),
            "crossover_bytes": collectives.latency_bandwidth_crossover_bytes(OP, p, bandwidth, latency, algorithm),
            "phases": int(cost.phases),
            "wire_bytes": float(cost.wire_bytes),
            "regime": _regime(latency_term, bandwidth_term),
            "fastest_algorithm": min(times, key=times.get),
            "ranks": p,
            "payload_bytes": size,
            "bandwidth_bytes_per_s": bandwidth,
            "latency_s": latency,
            "algorithm": algorithm,
            "step": step,
            "ring_steps": ring_steps(p),
            "step_phase": _step_phase(p, step),
        }
        result.update({f"{a}_time_s": t for a, t in times.items()})
        return result

    def summary_html(self, r: dict) -> str:
        t, fmt_b, fmt_bw = units.format_time, units.format_bytes, units.format_bandwidth
        p, name = r["ranks"], ALGORITHM_LABELS[r["algorithm"]]
        side_by_side = " · ".join(
            (
                f"<b>{ALGORITHM_LABELS[a]} {t(r[f'{a}_time_s'])}</b>"
                if a == r["fastest_algorithm"]
                else f"{ALGORITHM_LABELS[a]} {t(r[f'{a}_time_s'])}"
            )
            for a in applicable_algorithms(p)
        )
        return (
            f"<b>{name}, {p} ranks, {fmt_b(r['payload_bytes'])}: T = {t(r['time_s'])}</b> = latency term "
            f"{t(r['latency_term_s'])} (n·α = {r['phases']} × {t(r['latency_s'])}) + bandwidth term "
            f"{t(r['bandwidth_term_s'])} (Q/B = {fmt_b(r['wire_bytes'])} / {fmt_bw(r['bandwidth_bytes_per_s'])})"
            f"<br><b>{r['regime']}</b>"
            f"{' (at the crossover: the two terms are equal)' if _at_crossover(r) else ''}: the terms are equal at "
            f"S* = {fmt_b(r['crossover_bytes'])} · "
            f"algbw = S/T = {fmt_bw(r['algbw_bytes_per_s'])} · busbw = algbw × 2(p − 1)/p = algbw × "
            f"{r['busbw_factor']:.4g} = {fmt_bw(r['busbw_bytes_per_s'])}"
            f"<br>side by side at this payload (fastest in bold): {side_by_side}"
        )

    # --- the figure: built once ---------------------------------------------------------------------------

    def _build_figure(self) -> Figure:
        fig = Figure(figsize=(9, 4.3), dpi=self.dpi)
        time_ax = fig.add_axes((0.095, 0.3, 0.44, 0.63))
        ring_ax = fig.add_axes((0.56, 0.0, 0.44, 1.0))
        self._build_time_panel(time_ax)
        self._build_ring_panel(ring_ax)
        animated = [
            *self._curves.values(),
            self._latency_term,
            self._bandwidth_term,
            self._point,
            self._point_label,
            self._crossover,
            self._latency_region,
            self._bandwidth_region,
            self._latency_label,
            self._bandwidth_label,
            self._cells,
            self._shafts,
            self._heads,
            self._ring_title,
        ]
        # The legend depends on whether p is a power of two; the step grid's rows and labels on min(p, 9).
        time_keys = {_is_power_of_two(p): p for p in RANKS}
        ring_keys = {_ring_key(p): p for p in RANKS}
        self.enable_partial_redraw(
            fig,
            animated,
            [
                Panel((0.0, 0.58), (time_ax,), _is_power_of_two, self._draw_time_static, tuple(time_keys.values())),
                Panel((0.58, 1.0), (ring_ax,), _ring_key, self._draw_ring_static, tuple(ring_keys.values())),
            ],
        )
        return fig

    def _build_time_panel(self, ax) -> None:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_autoscale_on(False)
        ax.set_xlim(PAYLOADS_BYTES[0], PAYLOADS_BYTES[-1])
        ax.set_ylim(*_TIME_LIMITS_S)
        ax.xaxis.set_major_locator(FixedLocator([10.0**k for k in range(3, 11)]))
        ax.yaxis.set_major_locator(FixedLocator([10.0**k for k in range(-7, 4)]))
        ax.xaxis.set_major_formatter(FuncFormatter(_bytes_label))
        ax.yaxis.set_major_formatter(seconds_formatter)
        ax.xaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_minor_locator(NullLocator())
        ax.tick_params(labelsize=8)
        ax.grid(True, which="major", alpha=0.25)
        ax.set_xlabel("payload S", fontsize=9, labelpad=2)
        ax.set_ylabel("time T", fontsize=9, labelpad=2)
        ax.set_title("all-reduce time against payload (log–log)", fontsize=10)
        blend = ax.get_xaxis_transform()  # x in data (bytes), y in axes fraction
        # Every artist that changes sits above the grid and the frame (zorder > 2.5): drawn over the cached
        # background, it must also be drawn after them in a full draw, or savefig and the live PNG would differ.
        low, high = PAYLOADS_BYTES[0], PAYLOADS_BYTES[-1]
        self._latency_region = ax.add_patch(
            Rectangle(
                (low, 0),
                high - low,
                1,
                transform=blend,
                linewidth=0,
                facecolor=COLORS["latency"],
                alpha=0.08,
                zorder=2.6,
            )
        )
        self._bandwidth_region = ax.add_patch(
            Rectangle(
                (low, 0),
                high - low,
                1,
                transform=blend,
                linewidth=0,
                facecolor=COLORS["bandwidth"],
                alpha=0.08,
                zorder=2.6,
            )
        )
        self._latency_label = FastText(
            ax,
            (low, 0.02),
            "latency-bound",
            transform=blend,
            ha="center",
            va="bottom",
            size=9,
            color="#8A4B14",
            zorder=2.7,
        )
        self._bandwidth_label = FastText(
            ax,
            (high, 0.02),
            "bandwidth-bound",
            transform=blend,
            ha="center",
            va="bottom",
            size=9,
            color="#2B4A7A",
            zorder=2.7,
        )
        self._crossover = ax.add_line(
            Line2D(
                [low, low],
                [0, 1],
                transform=blend,
                color="#333333",
                linestyle="--",
                linewidth=1.1,
                label="crossover S*",
                zorder=2.8,
            )
        )
        self._curves = {}
        for algorithm in collectives.ALGORITHMS[OP]:
            color, style = _ALGORITHM_STYLES[algorithm]
            (self._curves[algorithm],) = ax.plot(
                _CURVE_PAYLOADS,
                np.ones_like(_CURVE_PAYLOADS),
                color=color,
                linestyle=style,
                linewidth=1.6,
                label=ALGORITHM_LABELS[algorithm],
                zorder=3,
            )
        (self._latency_term,) = ax.plot(
            _CURVE_PAYLOADS,
            np.ones_like(_CURVE_PAYLOADS),
            color=COLORS["latency"],
            linestyle=":",
            linewidth=1.5,
            label="n·α of the chosen",
            zorder=2.9,
        )
        (self._bandwidth_term,) = ax.plot(
            _CURVE_PAYLOADS,
            np.ones_like(_CURVE_PAYLOADS),
            color=COLORS["bandwidth"],
            linestyle=":",
            linewidth=1.5,
            label="Q/B of the chosen",
            zorder=2.9,
        )
        (self._point,) = ax.plot(
            [low], [1.0], marker="o", markersize=8, markeredgecolor="white", linestyle="none", zorder=5
        )
        self._point_label = FastText(ax, (low, 1.0), "", offset=(7, -4), size=9, ha="left", va="top", zorder=6)
        # The legend sits below the axes: the curves, redrawn on every update, never pass over it.
        handles = [*self._curves.values(), self._latency_term, self._bandwidth_term, self._crossover]
        self._legend = ax.legend(
            handles=handles,
            loc="upper left",
            bbox_to_anchor=(-0.15, -0.15),
            ncols=3,
            fontsize=7.5,
            frameon=False,
            handlelength=2.0,
            columnspacing=1.0,
        )
        self._legend_texts = dict(zip(self._curves, self._legend.get_texts(), strict=False))

    def _build_ring_panel(self, ax) -> None:
        ax.set_axis_off()
        ax.set_autoscale_on(False)
        self._ring_ax = ax
        cells = [
            Rectangle((c + 0.04, r * _ROW_PITCH), 0.92, 1.0)
            for r in range(MAX_STEP_RANKS)
            for c in range(MAX_STEP_RANKS)
        ]
        self._cells = ax.add_collection(
            PatchCollection(cells, facecolors="none", edgecolors="none", zorder=2), autolim=False
        )
        self._rank_labels = [
            FastText(ax, (-0.15, r * _ROW_PITCH + 0.5), f"rank {r}", ha="right", va="center", size=8.5, weight="bold")
            for r in range(MAX_STEP_RANKS)
        ]
        self._chunk_labels = [
            FastText(ax, (c + 0.5, -_CHUNK_LABEL_Y), f"c{c}", ha="center", va="bottom", size=8, color="#555555")
            for c in range(MAX_STEP_RANKS)
        ]
        # All of one step's arrows are one line (segments split by NaN) plus one line of arrowheads, all pointing
        # down: a chunk moves down its column to the next rank's row; the ring closes around the right side.
        (self._shafts,) = ax.plot([], [], color="#333333", linewidth=1.2, zorder=3)
        (self._heads,) = ax.plot([], [], color="#333333", marker="v", markersize=5, linestyle="none", zorder=3)
        # The key of shades sits at the bottom of the panel, in axes fractions, whatever the grid's size.
        swatches = [Rectangle((0.2 + k * 0.04, 0.02), 0.035, 0.035) for k in range(MAX_STEP_RANKS)]
        self._swatches = ax.add_collection(
            PatchCollection(swatches, facecolors="none", edgecolors="none", transform=ax.transAxes), autolim=False
        )
        self._swatch_label = FastText(ax, (0.2, 0.0375), "", transform=ax.transAxes, ha="left", va="center", size=8)
        self._ring_title = FastText(ax, (0.55, 0.985), "", transform=ax.transAxes, ha="center", va="top", size=10)
        caption = (
            "each step, every rank passes one chunk (column)",
            "to the next: reduce-scatter adds it in,",
            "all-gather copies it. Outlined: received",
        )
        self._ring_caption = [
            FastText(
                ax,
                (0.55, 0.94 - 0.037 * line),
                text,
                transform=ax.transAxes,
                ha="center",
                va="top",
                size=8,
                color="#444444",
            )
            for line, text in enumerate(caption)
        ]
        too_many = (
            f"step-by-step view for rings of up to {MAX_STEP_RANKS} ranks",
            f"(move ranks to {MAX_STEP_RANKS} or fewer)",
        )
        self._too_many = [
            FastText(
                ax,
                (0.55, 0.52 - 0.05 * line),
                text,
                transform=ax.transAxes,
                ha="center",
                va="center",
                size=10,
                color="#444444",
            )
            for line, text in enumerate(too_many)
        ]

    # --- updating the artists -------------------------------------------------------------------------------

    def _draw_time_static(self, ranks: int) -> None:
        """The legend greys out the algorithms that need a power-of-two p when p is not one."""
        allowed = applicable_algorithms(ranks)
        for algorithm, text in self._legend_texts.items():
            usable = algorithm in allowed
            text.set_text(ALGORITHM_LABELS[algorithm] + ("" if usable else " (2^k p)"))
            text.set_color("#222222" if usable else "#AAAAAA")

    def _draw_ring_static(self, ranks: int) -> None:
        """The step grid's labels, key of shades and limits for ``ranks`` ranks, or the note for larger rings."""
        shown = ranks <= MAX_STEP_RANKS
        for index, (rank_label, chunk_label) in enumerate(zip(self._rank_labels, self._chunk_labels, strict=True)):
            rank_label.set_visible(shown and index < ranks)
            chunk_label.set_visible(shown and index < ranks)
        for artist in (self._swatches, self._swatch_label, *self._ring_caption):
            artist.set_visible(shown)
        for artist in self._too_many:
            artist.set_visible(not shown)
        if shown:  # the grid fills the panel whatever p is
            levels = _levels(ranks)
            self._swatches.set_facecolor([levels[k] if k < ranks else (0, 0, 0, 0) for k in range(MAX_STEP_RANKS)])
            self._swatch_label.set_x(0.2 + ranks * 0.04 + 0.01)
            self._swatch_label.set_text(f"ranks summed: 1 … {ranks} (final)")
            self._ring_ax.set_xlim(*_span(0.0, ranks + 0.45, 0.2, 0.97))
            self._ring_ax.set_ylim(*_span(_grid_bottom(ranks), 0.0, _GRID_BOTTOM_AT, _GRID_TOP_AT))

    def draw(self, r: dict) -> None:
        self.set_static_state(r["ranks"])
        self._draw_times(r)
        self._draw_ring(r)

    def _draw_times(self, r: dict) -> None:
        p, bandwidth, latency, chosen = r["ranks"], r["bandwidth_bytes_per_s"], r["latency_s"], r["algorithm"]
        allowed = applicable_algorithms(p)
        for algorithm, line in self._curves.items():
            usable = algorithm in allowed
            line.set_visible(usable)
            if usable:
                line.set_ydata(collectives.collective_time(OP, p, _CURVE_PAYLOADS, bandwidth, latency, algorithm))
            line.set_linewidth(2.6 if algorithm == chosen else 1.4)
        cost = collectives.collective_cost(OP, p, _CURVE_PAYLOADS, chosen)
        self._latency_term.set_ydata(np.full_like(_CURVE_PAYLOADS, r["latency_term_s"]))
        self._bandwidth_term.set_ydata(collectives.comm_time(0, latency, cost.wire_bytes, bandwidth))
        self._point.set_data([r["payload_bytes"]], [r["time_s"]])
        self._point.set_markerfacecolor(_ALGORITHM_STYLES[chosen][0])
        self._point_label.set_position((r["payload_bytes"], r["time_s"]))
        right_half = r["payload_bytes"] > 1e8
        self._point_label.set_offset((-7, -4) if right_half else (7, -4))
        self._point_label.set_horizontalalignment("right" if right_half else "left")
        self._point_label.set_text(units.format_time(r["time_s"]))

        low, high = PAYLOADS_BYTES[0], PAYLOADS_BYTES[-1]
        crossover = r["crossover_bytes"]
        split = min(max(crossover, low), high)
        self._crossover.set_xdata([crossover, crossover])
        self._crossover.set_visible(low < crossover < high)
        self._latency_region.set_width(split - low)
        self._bandwidth_region.set_x(split)
        self._bandwidth_region.set_width(high - split)
        self._latency_label.set_visible(split > low * 10)
        self._latency_label.set_x(math.sqrt(low * split))
        self._bandwidth_label.set_visible(split < high / 10)
        self._bandwidth_label.set_x(math.sqrt(split * high))

    def _draw_ring(self, r: dict) -> None:
        p, step = r["ranks"], r["step"]
        shown = p <= MAX_STEP_RANKS
        for artist in (self._cells, self._shafts, self._heads):
            artist.set_visible(shown)
        if not shown:
            self._ring_title.set_text(f"ring all-reduce over {p} ranks: {ring_steps(p)} steps")
            return
        counts, received, transfers = _step_view(p, step)
        levels = _levels(p)
        faces, edges, widths = [], [], []
        for row in range(MAX_STEP_RANKS):
            for column in range(MAX_STEP_RANKS):
                if row < p and column < p:
                    count = int(counts[row, column])
                    faces.append(levels[count - 1] if count else _EMPTY_RGBA)
                    hit = (row, column) in received
                    edges.append(_RECEIVED_RGBA if hit else _WHITE_RGBA)
                    widths.append(2.4 if hit else 0.5)
                else:
                    faces.append((0, 0, 0, 0))
                    edges.append((0, 0, 0, 0))
                    widths.append(0.0)
        self._cells.set_facecolor(faces)
        self._cells.set_edgecolor(edges)
        self._cells.set_linewidth(widths)

        xs, ys, head_x, head_y = [], [], [], []
        loop_x = p + 0.3
        # Above the chunk labels: their height (in points, hence in data units that depend on p) plus a margin.
        points_per_unit = self.figure.get_figheight() * 72 * (_GRID_TOP_AT - _GRID_BOTTOM_AT) / _grid_bottom(p)
        label_height = 14 / points_per_unit
        for transfer in transfers:
            x = transfer.chunks[0] + 0.5
            src_bottom = transfer.src * _ROW_PITCH + 1.0
            dst_top = transfer.dst * _ROW_PITCH
            if transfer.dst == transfer.src + 1:
                xs += [x, x, np.nan]
                ys += [src_bottom, dst_top - 0.12, np.nan]
            else:  # the ring closes: down out of the last row, up the right side, down into the first row
                below, above = src_bottom + 0.25, dst_top - _CHUNK_LABEL_Y - label_height
                xs += [x, x, loop_x, loop_x, x + 0.25, x + 0.25, np.nan]
                ys += [src_bottom, below, below, above, above, dst_top - 0.12, np.nan]
                x += 0.25  # beside the chunk label, not through it
            head_x.append(x)
            head_y.append(dst_top - 0.12)
        self._shafts.set_data(xs, ys)
        self._heads.set_data(head_x, head_y)

        self._ring_title.set_text(f"ring step {step} of {ring_steps(p)}: {r['step_phase']}")


def _ring_key(ranks: int) -> int:
    """What the step grid's static artists depend on: its size, or "no grid" (MAX_STEP_RANKS + 1)."""
    return min(ranks, MAX_STEP_RANKS + 1)


def _grid_bottom(ranks: int) -> float:
    """Lowest data y of the step grid: the last row, plus the arrow that closes the ring below it."""
    return (ranks - 1) * _ROW_PITCH + 1.3


def _span(first: float, last: float, first_at: float, last_at: float) -> tuple[float, float]:
    """Axis limits that put data ``first`` at axes fraction ``first_at`` and ``last`` at ``last_at``."""
    per_fraction = (last - first) / (last_at - first_at)
    return first - first_at * per_fraction, first + (1 - first_at) * per_fraction


def ring_allreduce_lab(**initial) -> RingAllReduceLab:
    """The ring all-reduce lab; ``initial`` sets controls by name (defaults: the card's 8 ranks, 100 MB, 50 GB/s, 5 µs,
    ring, step 0). A value off a slider's stops is added to them; one outside its range raises ValueError.

    >>> lab = ring_allreduce_lab(ranks=4, payload_bytes=64 * units.MB)
    >>> units.format_time(lab.result["time_s"]), units.format_bandwidth(lab.result["busbw_bytes_per_s"])
    ('1.95 ms', '49.2 GB/s')
    """
    return RingAllReduceLab(**initial)
