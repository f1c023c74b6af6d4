"""Lab 4 · pipeline schedules: the simulated timeline of one step, its bubble and the activations stage 0 holds.

The timeline comes from ``pipeline.pipeline_schedule`` (an event simulation that knows nothing of the bubble
formula); the lab shows next to it ``parallelism.pipeline_bubble_fraction`` (p − 1)/(v·m) and
``parallelism.pipeline_in_flight_microbatches``, so every position of the controls checks the formulas against
the simulation. Times are in units of the forward time t_f of one micro-batch through one stage (t_b = 2 t_f).

Only valid schedules are reachable: GPipe and 1F1B have v = 1; moving the virtual-stages slider above 1 selects
the interleaved schedule (and back to 1, 1F1B), and with interleaving the micro-batch slider moves in steps of p,
since m must be a multiple of p (Narayanan et al. 2021 §2.2.2).

>>> lab = pipeline_lab()
>>> lab.result["bubble_fraction"], lab.result["formula_bubble_fraction"], lab.result["total_time"]
(0.375, 0.375, 33.0)
>>> lab.controls["virtual_stages"].value = 2
>>> lab.controls["schedule"].value, units.format_percent(lab.result["bubble_fraction"])
('interleaved', '18.8 %')
"""

from __future__ import annotations

import math
from functools import lru_cache

import matplotlib.transforms as mtransforms
import numpy as np
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.markers import TICKDOWN, TICKLEFT
from matplotlib.patches import Patch, PathPatch, Rectangle
from matplotlib.path import Path
from matplotlib.ticker import MaxNLocator

from .. import parallelism, pipeline, units
from ..viz._style import COLORS
from ..viz.parallelism import SCHEDULE_NAMES, _chunk_color, _text_color
from ._base import Lab, choice_buttons, int_slider
from ._fast import CachedText

__all__ = [
    "PipelineLab",
    "pipeline_lab",
    "DEFAULTS",
    "MAX_STAGES",
    "MAX_MICROBATCHES",
    "MAX_VIRTUAL_STAGES",
    "LABEL_POOL",
]

DEFAULTS = {"stages": 4, "microbatches": 8, "virtual_stages": 1, "schedule": "1f1b"}
# Caps that keep the timeline legible and fast: at most 16 × 64 × 4 × 2 = 8192 boxes.
MAX_STAGES = 16
MAX_MICROBATCHES = 64
MAX_VIRTUAL_STAGES = 4
LABEL_POOL = 128  # micro-batch numbers are written in the boxes when there are at most this many and they fit
BACKWARD_OVER_FORWARD = 2.0  # t_b = 2 t_f (the backward pass computes two gradients per weight matrix)
_ROW = 0.78  # box height, in stage rows
_KINDS = ("forward", "backward")


@lru_cache(maxsize=32)
def _timeline(stages: int, microbatches: int, schedule: str, virtual_stages: int) -> pipeline.PipelineTimeline:
    """The simulated step (cached: the simulation is pure and takes up to ~50 ms at the caps)."""
    return pipeline.pipeline_schedule(
        stages, microbatches, schedule, virtual_stages, forward_time_s=1.0, backward_time_s=BACKWARD_OVER_FORWARD
    )


@lru_cache(maxsize=32)
def _measured(stages: int, microbatches: int, schedule: str, virtual_stages: int) -> dict:
    """What the simulated timeline measures (its properties scan every op, so they are read once and cached)."""
    timeline = _timeline(stages, microbatches, schedule, virtual_stages)
    total, bubble = float(timeline.total_s), float(timeline.bubble_s)
    return {
        "total_time": total,
        "ideal_time": float(timeline.ideal_s),
        "bubble_time": bubble,
        "bubble_fraction": float(timeline.bubble_fraction),
        "bubble_share_of_step": bubble / total,
        "peak_in_flight": float(timeline.peak_in_flight(0)),
        "ops": len(timeline.ops),
    }


def _box_path(x0, x1, y, height) -> Path:
    """One compound path of n axis-aligned boxes (drawn in a single call, however many there are)."""
    top, bottom = y - height / 2, y + height / 2
    vertices = np.stack(
        [np.stack(corner, -1) for corner in ((x0, top), (x1, top), (x1, bottom), (x0, bottom), (x0, top))], axis=1
    ).reshape(-1, 2)
    codes = np.tile([Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY], len(x0))
    return Path(vertices, codes.astype(Path.code_type))


@lru_cache(maxsize=32)
def _gantt(stages: int, microbatches: int, schedule: str, virtual_stages: int) -> dict:
    """The timeline's boxes, one compound path per (kind, chunk), and the ops' label positions, for drawing."""
    ops = _timeline(stages, microbatches, schedule, virtual_stages).ops
    start, end = (np.array([getattr(op, name) for op in ops], float) for name in ("start_s", "end_s"))
    stage = np.array([op.stage for op in ops], float)
    kind = np.array([_KINDS.index(op.kind) for op in ops])
    chunk = np.array([op.chunk for op in ops])
    paths = {}
    for k in range(len(_KINDS)):
        for c in range(virtual_stages):
            mine = (kind == k) & (chunk == c)
            paths[k, c] = _box_path(start[mine], end[mine], stage[mine], _ROW)
    return {
        "paths": paths,
        "centre": (start + end) / 2,
        "stage": stage,
        "kind": kind,
        "chunk": chunk,
        "label": [str(op.microbatch + 1) for op in ops],
    }


class PipelineLab(Lab):
    """The pipeline schedule lab (see the module docstring)."""

    def __init__(self, **initial):
        values = dict(DEFAULTS)
        unknown = sorted(set(initial) - set(DEFAULTS))
        if unknown:
            raise ValueError(f"unknown control(s) {unknown}; the pipeline lab has {sorted(DEFAULTS)}")
        values.update(initial)
        self._check_initial(values)
        controls = {
            "stages": int_slider("stages p", 1, MAX_STAGES, values["stages"]),
            "microbatches": int_slider("micro-batches m", 1, MAX_MICROBATCHES, values["microbatches"]),
            "virtual_stages": int_slider("virtual stages v", 1, MAX_VIRTUAL_STAGES, values["virtual_stages"]),
            "schedule": choice_buttons(
                "schedule", [(SCHEDULE_NAMES[s], s) for s in parallelism.SCHEDULES], values["schedule"]
            ),
        }
        self._syncing = False
        self._build_figure()
        self._make_valid(controls, None)
        super().__init__("Lab 4 · Pipeline schedules and the bubble", controls, self.figure)

    @staticmethod
    def _check_initial(values):
        limits = {"stages": MAX_STAGES, "microbatches": MAX_MICROBATCHES, "virtual_stages": MAX_VIRTUAL_STAGES}
        for name, largest in limits.items():
            value = values[name]
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= largest:
                raise ValueError(f"{name} must be an integer in 1..{largest}, got {value!r}")
        if values["schedule"] not in parallelism.SCHEDULES:
            raise ValueError(f"schedule must be one of {list(parallelism.SCHEDULES)}, got {values['schedule']!r}")
        # Checks the combination the same way the simulation does (v ≥ 2 with interleaving, m a multiple of p).
        parallelism.ParallelPlan(
            pipeline_parallel=values["stages"],
            grad_accum_steps=values["microbatches"],
            virtual_stages=values["virtual_stages"],
            schedule=values["schedule"],
        )

    # ---- dependent options --------------------------------------------------------------------------------------

    @staticmethod
    def _make_valid(controls, changed) -> None:
        """Adjust the other controls so the combination is a valid schedule; ``changed`` is the control moved."""
        schedule, virtual = controls["schedule"], controls["virtual_stages"]
        if changed == "virtual_stages":  # the v slider chooses between 1F1B (v = 1) and interleaving (v ≥ 2)
            if virtual.value >= 2 and schedule.value != "interleaved":
                schedule.value = "interleaved"
            elif virtual.value == 1 and schedule.value == "interleaved":
                schedule.value = "1f1b"
        if schedule.value == "interleaved":
            virtual.value = max(virtual.value, 2)
        else:
            virtual.value = 1
        # With interleaving, m runs over the multiples of p; otherwise over 1 … 64.
        slider, p = controls["microbatches"], controls["stages"].value
        low, step = (p, p) if schedule.value == "interleaved" else (1, 1)
        high = MAX_MICROBATCHES // step * step
        wanted = min(max(int(round(slider.value / step)) * step, low), high)
        slider.step = step
        if low > slider.max:
            slider.max, slider.min = high, low
        else:
            slider.min, slider.max = low, high
        slider.value = wanted

    def _on_change(self, change) -> None:
        if self._syncing:  # a dependent control moved by _make_valid: refresh once, at the end
            return
        self._syncing = True
        try:
            changed = next(name for name, control in self.controls.items() if control is change["owner"])
            self._make_valid(self.controls, changed)
        finally:
            self._syncing = False
        self.refresh()

    # ---- the three parts of a lab ---------------------------------------------------------------------------------

    def compute(self, values: dict) -> dict:
        p, m, v, schedule = values["stages"], values["microbatches"], values["virtual_stages"], values["schedule"]
        timeline = _timeline(p, m, schedule, v)
        return {
            "stages": p,
            "microbatches": m,
            "virtual_stages": v,
            "schedule": schedule,
            "time_unit": "t_f",
            "forward_time": float(timeline.forward_time_s),
            "backward_time": float(timeline.backward_time_s),
            **_measured(p, m, schedule, v),
            "formula_bubble_fraction": float(parallelism.pipeline_bubble_fraction(p, m, v)),
            "formula_peak_in_flight": float(parallelism.pipeline_in_flight_microbatches(p, m, schedule, v)),
        }

    def _build_figure(self) -> None:
        figure = Figure(figsize=(9, 4), dpi=self.dpi)
        self.figure = figure
        figure.patch.set_facecolor("white")
        ax = self.gantt_axes = figure.add_axes((0.09, 0.25, 0.63, 0.64))
        self.idle = ax.add_patch(
            PathPatch(Path(np.zeros((1, 2))), facecolor=COLORS["bubble"], edgecolor="none", alpha=0.6, zorder=1)
        )
        # One compound path per (kind, chunk): forward/backward boxes of each model chunk.
        self.boxes = {
            (k, c): ax.add_patch(
                PathPatch(Path(np.zeros((1, 2))), edgecolor="white", linewidth=0.6, zorder=2, visible=False)
            )
            for k in range(len(_KINDS))
            for c in range(MAX_VIRTUAL_STAGES)
        }
        # RGBA of each (kind, chunk) for each v; later chunks of an interleaved stage are lighter.
        self._colors = {
            v: np.array([[to_rgba(_chunk_color(kind, chunk, v)) for chunk in range(v)] for kind in _KINDS])
            for v in range(1, MAX_VIRTUAL_STAGES + 1)
        }
        self._text_colors = {
            v: [[_text_color(_chunk_color(kind, chunk, v)) for chunk in range(v)] for kind in _KINDS]
            for v in range(1, MAX_VIRTUAL_STAGES + 1)
        }
        self.labels = [
            CachedText.add(ax, 0, 0, ha="center", va="center", fontsize=7, zorder=3, visible=False)
            for _ in range(LABEL_POOL)
        ]
        # Both scales change with the controls, so the ticks are drawn here and redrawn with the boxes.
        below = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
        left = mtransforms.blended_transform_factory(ax.transAxes, ax.transData)
        tick = dict(linestyle="none", color="black", markersize=3.5, markeredgewidth=0.8, clip_on=False)
        self.x_tick_marks = ax.add_artist(Line2D([], [], transform=below, marker=TICKDOWN, **tick))
        self.y_tick_marks = ax.add_artist(Line2D([], [], transform=left, marker=TICKLEFT, **tick))
        self.x_tick_labels = [
            CachedText.add(ax, 0, -0.03, transform=below, ha="center", va="top", fontsize=8) for _ in range(16)
        ]
        self.y_tick_labels = [
            CachedText.add(ax, -0.012, 0, transform=left, ha="right", va="center", fontsize=8)
            for _ in range(MAX_STAGES)
        ]
        ax.set_xticks([])
        ax.set_yticks([])
        ax.text(
            0.5,
            -0.11,
            "time in units of t_f, the forward time of one micro-batch through one stage (t_b = 2 t_f)",
            transform=ax.transAxes,
            ha="center",
            va="top",
            fontsize=8,
        )
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        self.title = CachedText.add(ax, 0.5, 1.03, transform=ax.transAxes, ha="center", va="bottom", fontsize=10)
        handles = [
            Patch(facecolor=COLORS["forward"], label="forward"),
            Patch(facecolor=COLORS["backward"], label="backward"),
            Patch(facecolor=COLORS["bubble"], alpha=0.6, label="idle (bubble)"),
            Patch(facecolor=_chunk_color("forward", 1, 2), label="later chunk (interleaved)"),
        ]
        ax.legend(
            handles=handles,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.18),
            ncol=4,
            frameon=False,
            fontsize=8,
            handlelength=1.2,
            columnspacing=1.0,
        )

        # Right: simulation against formula, the bubble on top, the activations stage 0 holds below.
        self.check_axes, self.check_bars, self.check_texts = [], [], []
        for row, (title, colors) in enumerate(
            (
                ("bubble, % of the ideal time", (COLORS["bubble"], "#888888")),
                ("stage 0 holds (micro-batches)", (COLORS["activations"], "#E39A9C")),
            )
        ):
            ax = figure.add_axes((0.8, 0.6 - 0.42 * row, 0.17, 0.28))
            bars = [ax.add_patch(Rectangle((i - 0.3, 0), 0.6, 0, facecolor=color)) for i, color in enumerate(colors)]
            texts = [CachedText.add(ax, i, 0, ha="center", va="bottom", fontsize=8) for i in range(2)]
            ax.set_xlim(-0.6, 1.6)
            ax.set_xticks([0, 1], ["simulated", "formula"], fontsize=8)
            ax.set_yticks([])
            ax.set_title(title, fontsize=8)
            for side in ("top", "right", "left"):
                ax.spines[side].set_visible(False)
            self.check_axes.append(ax)
            self.check_bars.append(bars)
            self.check_texts.append(texts)
        self.enable_partial_redraw(
            self.figure,
            (
                self.idle,
                *self.boxes.values(),
                *self.labels,
                self.x_tick_marks,
                self.y_tick_marks,
                *self.x_tick_labels,
                *self.y_tick_labels,
                self.title,
                *[bar for bars in self.check_bars for bar in bars],
                *[text for texts in self.check_texts for text in texts],
            ),
        )
        self._shown_rows = None

    def draw(self, result: dict) -> None:
        p, m, v, schedule = result["stages"], result["microbatches"], result["virtual_stages"], result["schedule"]
        gantt = _gantt(p, m, schedule, v)
        end = result["total_time"]  # in units of t_f (the simulation runs with t_f = 1)
        ax = self.gantt_axes
        self.idle.set_path(_box_path(np.zeros(p), np.full(p, end), np.arange(p, dtype=float), _ROW))
        ax.set_xlim(0, end * 1.005)
        ticks = [t for t in MaxNLocator(nbins=10, integer=True).tick_values(0, end) if 0 <= t <= end]
        self.x_tick_marks.set_data(ticks, [0.0] * len(ticks))
        for index, label in enumerate(self.x_tick_labels):
            label.set_visible(index < len(ticks))
            if index < len(ticks):
                label.set_x(ticks[index])
                label.set_text(f"{ticks[index]:g}")
        if p != self._shown_rows:
            ax.set_ylim(p - 0.5, -0.5)  # stage 0 on top
            self.y_tick_marks.set_data([0.0] * p, list(range(p)))
            for stage, label in enumerate(self.y_tick_labels):
                label.set_visible(stage < p)
                label.set_y(stage)
                label.set_text(f"stage {stage}")
            self._shown_rows = p
        # Box edges and labels only where they fit (sizes in pixels of the fixed axes).
        box = ax.get_position()
        width_px = box.width * self.figure.get_figwidth() * self.dpi
        row_px = box.height * self.figure.get_figheight() * self.dpi / p
        chunk_px = width_px / (v * end)  # a chunk's forward, the narrowest box
        edge = 0.6 if chunk_px >= 4 else 0.3 if chunk_px >= 2 else 0.0  # white gaps between boxes
        for (k, c), patch in self.boxes.items():
            patch.set_visible(c < v)
            if c < v:
                patch.set_path(gantt["paths"][k, c])
                patch.set_facecolor(self._colors[v][k, c])
                patch.set_linewidth(edge)
        count = len(gantt["label"])
        show = count <= LABEL_POOL and chunk_px >= 5 * len(str(m)) + 3 and row_px >= 9
        colors = self._text_colors[v]
        for i, label in enumerate(self.labels):
            if show and i < count:
                label.set_position((gantt["centre"][i], gantt["stage"][i]))
                label.set_text(gantt["label"][i])
                label.set_color(colors[gantt["kind"][i]][gantt["chunk"][i]])
                label.set_visible(True)
            elif label.get_visible():
                label.set_visible(False)
        title = f"{SCHEDULE_NAMES[schedule]}, p = {p}" + (f", v = {v}" if schedule == "interleaved" else "")
        self.title.set_text(f"{title}, m = {m}: bubble {units.format_percent(result['bubble_fraction'])}")

        def count(value):
            return units.format_count(value, digits=4)

        checks = (
            (result["bubble_fraction"], result["formula_bubble_fraction"], units.format_percent),
            (result["peak_in_flight"], result["formula_peak_in_flight"], count),
        )
        for ax, bars, texts, (simulated, formula, fmt) in zip(
            self.check_axes, self.check_bars, self.check_texts, checks, strict=True
        ):
            top = max(simulated, formula)
            ax.set_ylim(0, 1.35 * top if top > 0 else 1.0)
            for bar, text, value in zip(bars, texts, (simulated, formula), strict=True):
                bar.set_height(value)
                text.set_y(value)
                text.set_text(fmt(value))

    def summary_html(self, result: dict) -> str:
        pct = units.format_percent

        def t(value):  # a time in units of t_f
            return units.format_quantity(value, "", digits=4, min_prefix="").rstrip() + " t<sub>f</sub>"

        def count(value):
            return units.format_count(value, digits=4)

        p, m, v = result["stages"], result["microbatches"], result["virtual_stages"]
        same = math.isclose(result["bubble_fraction"], result["formula_bubble_fraction"], abs_tol=1e-12)
        match = "=" if same else "≠"
        held = "=" if math.isclose(result["peak_in_flight"], result["formula_peak_in_flight"]) else "≠"
        formula = "(p − 1)/m" if v == 1 else "(p − 1)/(v·m)"
        return (
            f"<b>{SCHEDULE_NAMES[result['schedule']]}</b>, p = {p} stages, m = {m} micro-batches"
            + (f", v = {v} chunks per device" if result["schedule"] == "interleaved" else "")
            + ". "
            f"Step {t(result['total_time'])} against an ideal {t(result['ideal_time'])} "
            f"(m·(t<sub>f</sub> + t<sub>b</sub>), t<sub>b</sub> = 2 t<sub>f</sub>): "
            f"bubble {t(result['bubble_time'])} = <b>{pct(result['bubble_fraction'])}</b> of the ideal "
            f"time ({pct(result['bubble_share_of_step'])} of the step); formula {formula} = "
            f"{pct(result['formula_bubble_fraction'])} {match} simulated.<br>"
            f"Stage 0 holds the activations of <b>{count(result['peak_in_flight'])}</b> micro-batches at its peak "
            f"(formula: {count(result['formula_peak_in_flight'])} {held} simulated).<br>"
            f"<small>Times in units of t<sub>f</sub>, the forward time of one micro-batch through one stage. "
            f"GPipe and 1F1B have v = 1: moving v above 1 selects the interleaved schedule, which needs m to be a "
            f"multiple of p, so m then moves in steps of p.</small>"
        )


def pipeline_lab(**initial) -> PipelineLab:
    """The pipeline schedule lab; keyword arguments set controls' initial values (``DEFAULTS`` lists the names).

    >>> lab = pipeline_lab(schedule="gpipe", stages=8, microbatches=32)
    >>> lab.result["bubble_fraction"], lab.result["peak_in_flight"]
    (0.21875, 32.0)
    """
    return PipelineLab(**initial)
