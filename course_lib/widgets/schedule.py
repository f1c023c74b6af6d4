"""Lab 4 · pipeline schedules: the simulated timeline of one step, its bubble and the activations stage 0 holds.

The timeline comes from ``pipeline.pipeline_schedule`` (an event simulation that knows nothing of the bubble
formula); the lab shows next to it ``parallelism.pipeline_bubble_fraction`` (p − 1)/(v·m) and
``parallelism.pipeline_in_flight_microbatches``, so every position of the controls checks the formulas against the
simulation. The figure is ``viz.pipeline_schedule.PipelineScheduleFigure`` (the timeline) beside a
``ComparisonBarsFigure`` (simulated against formula). Times are in units of the forward time t_f of one micro-batch
through one stage (t_b = 2 t_f).

Only valid schedules are reachable: GPipe and 1F1B have v = 1; moving the virtual-stages slider above 1 selects
the interleaved schedule (and back to 1, 1F1B), and with interleaving the micro-batch slider moves in steps of p,
since m must be a multiple of p (Narayanan et al. 2021 §2.2.2).

>>> from course_lib import units
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

import numpy as np
from matplotlib.figure import Figure

from .. import parallelism, pipeline, units
from ..viz.fast import Panel
from ..viz.pipeline_schedule import SCHEDULE_NAMES, ComparisonBarsFigure, PipelineScheduleFigure
from ..viz.style import COLORS
from ._base import Lab, choice_buttons, initial_values, int_slider

__all__ = [
    "PipelineLab",
    "pipeline_lab",
    "DEFAULTS",
    "MAX_STAGES",
    "MAX_MICROBATCHES",
    "MAX_VIRTUAL_STAGES",
    "LABEL_POOL",
    "MIN_LABEL_SIZE",
]

DEFAULTS = {"stages": 4, "microbatches": 8, "virtual_stages": 1, "schedule": "1f1b"}
# Caps that keep the timeline legible and fast: at most 16 × 64 × 4 × 2 = 8192 boxes.
MAX_STAGES = 16
MAX_MICROBATCHES = 64
MAX_VIRTUAL_STAGES = 4
LABEL_POOL = 128  # micro-batch numbers are written in the boxes when there are at most this many and they fit
MIN_LABEL_SIZE = 7.0  # points, at the lab's 72 dpi: smaller numbers are left out of the boxes
BACKWARD_OVER_FORWARD = 2.0  # t_b = 2 t_f (the backward pass computes two gradients per weight matrix)


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


class PipelineLab(Lab):
    """The pipeline schedule lab (see the module docstring)."""

    def __init__(self, **initial):
        values = initial_values(DEFAULTS, initial, "pipeline lab")
        self._check_initial(values)
        controls = {
            "stages": int_slider("stages p", 1, MAX_STAGES, values["stages"]),
            "microbatches": int_slider("micro-batches m", 1, MAX_MICROBATCHES, values["microbatches"]),
            "virtual_stages": int_slider("virtual stages v", 1, MAX_VIRTUAL_STAGES, values["virtual_stages"]),
            "schedule": choice_buttons(
                "schedule", [(SCHEDULE_NAMES[s], s) for s in parallelism.SCHEDULES], values["schedule"]
            ),
        }
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

    def sync_controls(self, changed) -> None:
        self._make_valid(self.controls, changed)

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
        self.gantt = PipelineScheduleFigure(
            figure.add_axes((0.09, 0.25, 0.63, 0.64)),
            MAX_STAGES,
            MAX_VIRTUAL_STAGES,
            LABEL_POOL,
            xlabel=r"time in units of $t_f$, the forward time of one micro-batch through one stage ($t_b = 2\,t_f$)",
            min_label_size=MIN_LABEL_SIZE,
        )
        # Right: simulation against formula, the bubble on top, the activations stage 0 holds below.
        self.checks = ComparisonBarsFigure(
            [figure.add_axes((0.8, 0.6 - 0.42 * row, 0.17, 0.28)) for row in range(2)],
            ["bubble, % of the ideal time", "stage 0 holds (micro-batches)"],
            [(COLORS["bubble"], "#888888"), (COLORS["activations"], "#E39A9C")],
            [units.format_percent, _count],
        )
        # The legend has one shade per chunk: one picture of the static figure for each v.
        gantt = self.gantt
        self.enable_partial_redraw(
            self.figure,
            (*gantt.animated, *self.checks.animated),
            [Panel((0.0, 1.0), None, gantt.static_key, gantt.set_static, gantt.static_examples)],
        )

    def draw(self, result: dict) -> None:
        p, m, v, schedule = result["stages"], result["microbatches"], result["virtual_stages"], result["schedule"]
        timeline = _timeline(p, m, schedule, v)
        self.set_static_state(timeline)
        self.gantt.update(timeline)
        self.checks.update(
            [
                (result["bubble_fraction"], result["formula_bubble_fraction"]),
                (result["peak_in_flight"], result["formula_peak_in_flight"]),
            ]
        )

    def summary_html(self, result: dict) -> str:
        pct = units.format_percent

        def t(value):  # a time in units of t_f
            return units.format_quantity(value, "", digits=4, min_prefix="").rstrip() + " t<sub>f</sub>"

        count = _count
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


def _count(value) -> str:
    return units.format_count(value, digits=4)


def pipeline_lab(**initial) -> PipelineLab:
    """The pipeline schedule lab; keyword arguments set controls' initial values (``DEFAULTS`` lists the names).

    >>> lab = pipeline_lab(schedule="gpipe", stages=8, microbatches=32)
    >>> lab.result["bubble_fraction"], lab.result["peak_in_flight"]
    (0.21875, 32.0)
    """
    return PipelineLab(**initial)
