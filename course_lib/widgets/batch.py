"""Lab 2, global batch: which parallel axes multiply the examples of a step, and which only add devices.

``global_batch_lab()`` returns a ``GlobalBatchLab``. Its controls are ``micro_batch`` (b, 1–64 examples),
``grad_accum_steps`` (N_acc, 1–128), ``data_parallel`` (d, 1–1024 replicas), ``tensor_parallel`` (t, 1–64),
``pipeline_parallel`` (p, 1–64 stages) and ``seq_len`` (128–131072 tokens). Every number comes from
``course_lib.parallelism``:

- ``global_batch`` = ``parallelism.global_batch(b, N_acc, d)`` = b × N_acc × d examples per optimizer step;
- ``tokens_per_step`` = global_batch × seq_len;
- ``devices`` = ``ParallelPlan(...).devices`` = d × t × p;
- ``examples_per_replica_per_step`` = ``global_batch(b, N_acc, 1)`` = b × N_acc: what each data-parallel replica, and
  so each of its t × p devices, works through in one step; ``devices_per_replica`` = t × p.

Tensor- and pipeline-parallel groups split the work on the *same* examples, so t and p multiply the devices but not
the examples. The figure shows both: on the left the devices, one row per data-parallel replica (t × p cells,
shaded by pipeline stage) with the range of examples each replica works on; on the right two log-scale bars built
from their factors, devices = d · t · p and examples = b · N_acc · d, with the shared factor d in the same colour.

>>> lab = global_batch_lab()
>>> lab.result["global_batch"], lab.result["devices"], units.format_count(lab.result["tokens_per_step"])
(8192, 64, '16.8 million')
>>> lab.controls["tensor_parallel"].value = 8
>>> lab.result["global_batch"], lab.result["devices"]
(8192, 512)
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.collections import PatchCollection
from matplotlib.colors import to_rgb, to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from .. import _validate, parallelism, units
from ..viz._style import AXIS_COLORS
from ..viz.collectives import RANK_COLORS
from ._base import Lab, int_slider, stops_with, unit_slider
from ._fast import FastText, FastTextGroup

__all__ = [
    "global_batch_lab",
    "GlobalBatchLab",
    "PARALLEL_SIZES",
    "DATA_PARALLEL_SIZES",
    "SEQ_LENS",
    "SHOWN_REPLICAS",
    "SHOWN_DEVICES_PER_REPLICA",
]

# Group sizes practitioners use: every size up to 8, then the steps of 1.5× and 2× (12, 16, 24, 32, ...).
PARALLEL_SIZES = (1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 48, 64)
DATA_PARALLEL_SIZES = PARALLEL_SIZES + (96, 128, 192, 256, 384, 512, 768, 1024)
SEQ_LENS = tuple(2**k for k in range(7, 18))  # 128 … 131072 tokens
LIMITS = {
    "micro_batch": (1, 64),
    "grad_accum_steps": (1, 128),
    "data_parallel": (1, 1024),
    "tensor_parallel": (1, 64),
    "pipeline_parallel": (1, 64),
    "seq_len": (128, 131072),
}
# The card's example (lesson 03): 8 examples per micro-batch × 16 accumulation steps × 64 replicas = 8192.
DEFAULTS = {
    "micro_batch": 8,
    "grad_accum_steps": 16,
    "data_parallel": 64,
    "tensor_parallel": 1,
    "pipeline_parallel": 1,
    "seq_len": 2048,
}

SHOWN_REPLICAS = 8  # rows of the device picture
SHOWN_DEVICES_PER_REPLICA = 16  # columns of the device picture
# Devices ≤ 1024·64·64 ≈ 4.2 million, examples ≤ 64·128·1024 ≈ 8.4 million; room above for the totals.
_BAR_LIMITS = (1.0, 4e7)
_STAGE_SHADE = 0.22  # odd pipeline stages are this much darker, so the stages of a replica can be told apart
_FACTOR_COLORS = {
    "b": "#9DB4CF",
    "acc": "#5C7FA8",
    "d": AXIS_COLORS["data"],
    "t": AXIS_COLORS["tensor"],
    "p": AXIS_COLORS["pipeline"],
}
_TRANSPARENT = (0.0, 0.0, 0.0, 0.0)


def _darker(color, share: float) -> tuple:
    red, green, blue = to_rgb(color)
    return (red * (1 - share), green * (1 - share), blue * (1 - share), 1.0)


_REPLICA_SHADES = tuple((to_rgba(color), _darker(color, _STAGE_SHADE)) for color in RANK_COLORS)


def _plural(count: int, noun: str) -> str:
    return f"{units.format_count(count)} {noun}" + ("" if count == 1 else "s")


def _tokens_label(value) -> str:
    return f"{value} tokens"


def _count_label(value, _position=None) -> str:
    """Tick label of the log bar axis: 1, 10, 100, 1000, 10k, 100k, 1M, 10M."""
    return {1e4: "10k", 1e5: "100k", 1e6: "1M", 1e7: "10M"}.get(value, f"{value:.0f}")


class GlobalBatchLab(Lab):
    """The global batch lab (see the module docstring); build it with ``global_batch_lab(**initial)``."""

    def __init__(self, **initial):
        unknown = sorted(set(initial) - set(DEFAULTS))
        if unknown:
            raise ValueError(
                f"unknown control(s) {', '.join(map(repr, unknown))}; the controls are {', '.join(map(repr, DEFAULTS))}"
            )
        start = {**DEFAULTS, **initial}
        for name, (low, high) in LIMITS.items():
            value = _validate.count(name, start[name])
            if not low <= value <= high:
                raise ValueError(f"{name} must be an integer in {low}..{high}, got {start[name]!r}")
            start[name] = value
        controls = {
            "micro_batch": int_slider("micro-batch b", *LIMITS["micro_batch"], start["micro_batch"]),
            "grad_accum_steps": int_slider(
                "accumulation N_acc", *LIMITS["grad_accum_steps"], start["grad_accum_steps"]
            ),
            "data_parallel": unit_slider(
                "data parallel d", stops_with(DATA_PARALLEL_SIZES, start["data_parallel"]), start["data_parallel"], str
            ),
            "tensor_parallel": unit_slider(
                "tensor parallel t", stops_with(PARALLEL_SIZES, start["tensor_parallel"]), start["tensor_parallel"], str
            ),
            "pipeline_parallel": unit_slider(
                "pipeline parallel p",
                stops_with(PARALLEL_SIZES, start["pipeline_parallel"]),
                start["pipeline_parallel"],
                str,
            ),
            "seq_len": unit_slider(
                "sequence length s", stops_with(SEQ_LENS, start["seq_len"]), start["seq_len"], _tokens_label
            ),
        }
        super().__init__("Global batch: which splits multiply the examples", controls, self._build_figure())

    # --- the three methods of a lab ------------------------------------------------------------------------

    def compute(self, values: dict) -> dict:
        b, acc = int(values["micro_batch"]), int(values["grad_accum_steps"])
        d, t, p = int(values["data_parallel"]), int(values["tensor_parallel"]), int(values["pipeline_parallel"])
        seq_len = int(values["seq_len"])
        plan = parallelism.ParallelPlan(
            data_parallel=d, tensor_parallel=t, pipeline_parallel=p, micro_batch=b, grad_accum_steps=acc
        )
        batch = parallelism.global_batch(b, acc, d)
        return {
            "global_batch": batch,
            "tokens_per_step": batch * seq_len,
            "devices": int(plan.devices),
            "examples_per_replica_per_step": parallelism.global_batch(b, acc, 1),
            "devices_per_replica": int(plan.replace(data_parallel=1).devices),
            "micro_batch": b,
            "grad_accum_steps": acc,
            "data_parallel": d,
            "tensor_parallel": t,
            "pipeline_parallel": p,
            "seq_len": seq_len,
        }

    def summary_html(self, r: dict) -> str:
        count = units.format_count
        b, acc, d, t, p = (
            r[k] for k in ("micro_batch", "grad_accum_steps", "data_parallel", "tensor_parallel", "pipeline_parallel")
        )
        return (
            f"<b>global batch B = b × N_acc × d = {b} × {acc} × {d} = {count(r['global_batch'])} examples</b> "
            f"= {count(r['tokens_per_step'])} tokens per step at {r['seq_len']} tokens each"
            f"<br><b>devices = d × t × p = {d} × {t} × {p} = {count(r['devices'])}</b>: in each replica, t × p = "
            f"{_plural(r['devices_per_replica'], 'device')} "
            f"{'works' if r['devices_per_replica'] == 1 else 'work together'} on the same "
            f"{count(r['examples_per_replica_per_step'])} examples (b × N_acc), so t and p add devices, not examples"
        )

    # --- the figure: built once ---------------------------------------------------------------------------

    def _build_figure(self) -> Figure:
        fig = Figure(figsize=(9, 4), dpi=self.dpi)
        grid_ax = fig.add_axes((0.0, 0.0, 0.6, 1.0))
        bars_ax = fig.add_axes((0.66, 0.2, 0.32, 0.68))
        self._build_grid_panel(grid_ax)
        self._build_bars_panel(bars_ax)
        animated = [
            self._cells,
            self._brackets,
            self._row_labels,
            self._example_labels,
            self._stage_labels,
            self._examples_header,
            self._grid_title,
            self._grid_subtitle,
            *self._grid_notes,
            *self._segments.values(),
            self._segment_labels,
            self._devices_total,
            self._examples_total,
            self._tokens_note,
        ]
        self.enable_partial_redraw(fig, animated)
        return fig

    def _build_grid_panel(self, ax) -> None:
        ax.set_axis_off()
        ax.set_autoscale_on(False)
        # Data units: one cell per device; x from the row labels to the examples' labels, y downwards.
        ax.set_xlim(-4.2, SHOWN_DEVICES_PER_REPLICA + 6.6)
        ax.set_ylim(SHOWN_REPLICAS + 2.4, -2.6)
        cells = [
            Rectangle((column + 0.06, row + 0.1), 0.88, 0.8)
            for row in range(SHOWN_REPLICAS)
            for column in range(SHOWN_DEVICES_PER_REPLICA)
        ]
        self._cells = ax.add_collection(PatchCollection(cells, facecolors="none", edgecolors="none"), autolim=False)
        (self._brackets,) = ax.plot([], [], color="#444444", linewidth=1.1)
        # Labels of one style are one path each (FastTextGroup): the replicas, their examples, the pipeline stages.
        self._row_labels = FastTextGroup(ax, ha="right", va="center", size=8)
        self._example_labels = FastTextGroup(ax, ha="left", va="center", size=8)
        self._stage_labels = FastTextGroup(ax, ha="center", va="bottom", size=7, color="#555555")
        self._examples_header = FastText(
            ax, (0.0, -0.15), "its examples", ha="left", va="bottom", size=7, color="#555555"
        )
        self._grid_title = FastText(ax, (0.02, 0.985), "", transform=ax.transAxes, ha="left", va="top", size=10)
        self._grid_subtitle = FastText(
            ax, (0.02, 0.92), "", transform=ax.transAxes, ha="left", va="top", size=8, color="#444444"
        )
        self._grid_notes = [
            FastText(
                ax,
                (0.02, 0.09 - 0.055 * line),
                "",
                transform=ax.transAxes,
                ha="left",
                va="center",
                size=8,
                color="#444444",
            )
            for line in range(2)
        ]

    def _build_bars_panel(self, ax) -> None:
        ax.set_yscale("log")
        ax.set_autoscale_on(False)
        ax.set_xlim(-0.6, 1.6)
        ax.set_ylim(*_BAR_LIMITS)
        ax.yaxis.set_major_locator(FixedLocator([10.0**k for k in range(8)]))
        ax.yaxis.set_major_formatter(FuncFormatter(_count_label))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_locator(FixedLocator([0, 1]))
        ax.xaxis.set_major_formatter(
            FuncFormatter(lambda x, _pos: ("devices\nd · t · p", "examples per step\nb · N_acc · d")[int(round(x))])
        )
        ax.tick_params(labelsize=8)
        ax.grid(True, axis="y", alpha=0.25)
        ax.set_title("log scale: each factor is one segment", fontsize=9)
        self._segments = {}
        for bar, factors in ((0, ("d", "t", "p")), (1, ("b", "acc", "d"))):
            for factor in factors:
                self._segments[bar, factor] = ax.add_patch(
                    Rectangle(
                        (bar - 0.35, 1.0), 0.7, 0.0, linewidth=0.6, edgecolor="white", facecolor=_FACTOR_COLORS[factor]
                    )
                )
        self._segment_labels = FastTextGroup(
            ax, ha="center", va="center", size=7.5, color="white", weight="bold", zorder=5
        )
        self._devices_total = FastText(ax, (0, 1.0), "", ha="center", va="bottom", size=8.5, offset=(0, 2))
        self._examples_total = FastText(ax, (1, 1.0), "", ha="center", va="bottom", size=8.5, offset=(0, 2))
        self._tokens_note = FastText(
            ax, (0.4, -0.2), "", transform=ax.transAxes, ha="center", va="top", size=8, color="#444444"
        )

    # --- updating the artists -------------------------------------------------------------------------------

    def draw(self, r: dict) -> None:
        self._draw_grid(r)
        self._draw_bars(r)

    def _draw_grid(self, r: dict) -> None:
        d, t, p = r["data_parallel"], r["tensor_parallel"], r["pipeline_parallel"]
        per_replica, examples = r["devices_per_replica"], r["examples_per_replica_per_step"]
        rows, columns = min(d, SHOWN_REPLICAS), min(per_replica, SHOWN_DEVICES_PER_REPLICA)
        faces = []
        for row in range(SHOWN_REPLICAS):
            shades = _REPLICA_SHADES[row % len(_REPLICA_SHADES)]
            for column in range(SHOWN_DEVICES_PER_REPLICA):
                # Columns run stage by stage: stage column // t holds tensor ranks 0 … t − 1.
                visible = row < rows and column < columns
                faces.append(shades[(column // t) % 2] if visible else _TRANSPARENT)
        self._cells.set_facecolor(faces)

        right = columns + 0.25
        xs, ys = [], []
        for row in range(rows):
            xs += [right, right + 0.3, right + 0.3, right, np.nan]
            ys += [row + 0.1, row + 0.1, row + 0.9, row + 0.9, np.nan]
        self._brackets.set_data(xs, ys)
        self._row_labels.set_texts(((-0.3, row + 0.5), f"replica {row}") for row in range(rows))
        self._example_labels.set_texts(
            ((right + 0.55, row + 0.5), f"{row * examples + 1}–{(row + 1) * examples}") for row in range(rows)
        )
        # One label per pipeline stage, centred over its t columns (when there is more than one stage).
        self._stage_labels.set_texts(
            ((column + min(t, columns - column) / 2, -0.15), f"s{column // t}")
            for column in range(0, columns, t)
            if p > 1
        )

        self._grid_title.set_text(
            f"{_plural(r['devices'], 'device')} = {_plural(d, 'replica')} × {_plural(per_replica, 'device')} each"
        )
        self._examples_header.set_position((right + 0.55, -0.15))
        self._grid_subtitle.set_text(
            f"a row is one data-parallel replica: t × p = {t} × {p} devices, the same examples"
            if per_replica > 1
            else "a row is one data-parallel replica, here one device (t = p = 1)"
        )
        notes = []
        if d > rows:
            notes.append(
                f"showing the first {rows} of {d} replicas; all {d} together: "
                f"{units.format_count(r['global_batch'])} examples"
            )
        if per_replica > columns:
            notes.append(f"showing {columns} of the {per_replica} devices of each replica (t × p = {t} × {p})")
        if p > 1 and not notes:
            notes.append("shades alternate by pipeline stage (s0, s1, …)")
        for note, text in zip(self._grid_notes, notes + ["", ""], strict=False):
            note.set_text(text)

    def _draw_bars(self, r: dict) -> None:
        factors = {
            (0, "d"): r["data_parallel"],
            (0, "t"): r["tensor_parallel"],
            (0, "p"): r["pipeline_parallel"],
            (1, "b"): r["micro_batch"],
            (1, "acc"): r["grad_accum_steps"],
            (1, "d"): r["data_parallel"],
        }
        names = {"d": "d", "t": "t", "p": "p", "b": "b", "acc": "N_acc"}
        bottoms, labels = {0: 1.0, 1: 1.0}, []
        for (bar, factor), value in factors.items():
            bottom = bottoms[bar]
            top = bottom * value
            self._segments[bar, factor].set_y(bottom)
            self._segments[bar, factor].set_height(top - bottom)
            if math.log10(value) >= 0.45:  # room for a line of text in the segment
                labels.append(((bar, math.sqrt(bottom * top)), f"{names[factor]} = {value}"))
            bottoms[bar] = top
        self._segment_labels.set_texts(labels)
        self._devices_total.set_position((0, r["devices"]))
        self._devices_total.set_text(units.format_count(r["devices"]))
        self._examples_total.set_position((1, r["global_batch"]))
        self._examples_total.set_text(units.format_count(r["global_batch"]))
        self._tokens_note.set_text(
            f"× s = {r['seq_len']} tokens: {units.format_count(r['tokens_per_step'])} tokens per step"
        )


def global_batch_lab(**initial) -> GlobalBatchLab:
    """The global batch lab; ``initial`` sets controls by name (defaults: the card's b = 8, N_acc = 16, d = 64, with
    t = p = 1 and 2048-token sequences). A value off a slider's stops is added to them; one outside its range raises
    ValueError.

    >>> lab = global_batch_lab(tensor_parallel=8, pipeline_parallel=4)
    >>> lab.result["global_batch"], lab.result["devices"], lab.result["devices_per_replica"]
    (8192, 2048, 32)
    """
    return GlobalBatchLab(**initial)
