"""Lab 4 · pipeline schedules: the simulated timeline of one step, its bubble and the activations the first stage
(stage 1) holds.

Every number comes from one call, ``parallelism.pipeline_schedule_report(p, m, schedule, v)``: the timeline of
``pipeline.pipeline_schedule`` (an event simulation that knows nothing of the bubble formula) beside
``parallelism.pipeline_bubble_fraction`` (p − 1)/(v·m) and ``parallelism.pipeline_in_flight_microbatches``, so every
position of the controls (``CONTROLS``) checks the formulas against the simulation. ``compute`` returns that
``PipelineScheduleReport`` (cached: the simulation takes up to ~50 ms at the caps), which alone the figure and the
summary read and ``lab.typed_result`` holds; ``lab.result`` shows it as a plain dict (the controls, ``total_time``,
``ideal_time``, ``bubble_time``, ``bubble_fraction``, ``bubble_share_of_step``, ``peak_in_flight``, ``ops`` and the
two ``formula_*`` values). The figure is ``viz.pipeline_schedule.PipelineScheduleFigure`` (the timeline) beside a
``ComparisonBarsFigure`` (simulated against formula). Times are in units of the forward time t_F of one micro-batch
through one stage (t_bwd = 2 t_F).

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

from functools import lru_cache

from matplotlib.figure import Figure

from .. import parallelism, units
from ..viz.fast import Panel
from ..viz.pipeline_schedule import SCHEDULE_NAMES, ComparisonBarsFigure, PipelineScheduleFigure
from ..viz.style import COLORS
from ._base import ControlSpec, Lab, control_defaults, set_range

__all__ = [
    "PipelineLab",
    "pipeline_lab",
    "CONTROLS",
    "DEFAULTS",
    "MAX_STAGES",
    "MAX_MICROBATCHES",
    "MAX_VIRTUAL_STAGES",
    "LABEL_POOL",
    "MIN_LABEL_SIZE",
]

# Caps that keep the timeline legible and fast: at most 16 × 64 × 4 × 2 = 8192 boxes.
MAX_STAGES = 16
MAX_MICROBATCHES = 64
MAX_VIRTUAL_STAGES = 4
LABEL_POOL = 128  # micro-batch numbers are written in the boxes when there are at most this many and they fit
MIN_LABEL_SIZE = 7.0  # points, at the lab's 72 dpi: smaller numbers are left out of the boxes
BACKWARD_OVER_FORWARD = 2.0  # t_bwd = 2 t_F (the backward pass computes two gradients per weight matrix)

# 1F1B with p = 4 and m = 8 (bubble 3/8). The combination is checked as a ParallelPlan checks it; moving a control
# keeps it valid (``PipelineLab._make_valid``).
CONTROLS = (
    ControlSpec("stages", "stages p", range(1, MAX_STAGES + 1), 4, kind="int slider"),
    ControlSpec("microbatches", "micro-batches m", range(1, MAX_MICROBATCHES + 1), 8, kind="int slider"),
    ControlSpec("virtual_stages", "virtual stages v", range(1, MAX_VIRTUAL_STAGES + 1), 1, kind="int slider"),
    ControlSpec("schedule", "schedule", parallelism.SCHEDULES, "1f1b", SCHEDULE_NAMES.__getitem__, kind="buttons"),
)
DEFAULTS = control_defaults(CONTROLS)


@lru_cache(maxsize=32)
def _report(stages: int, microbatches: int, schedule: str, virtual_stages: int) -> parallelism.PipelineScheduleReport:
    """The simulated step against the formulas (cached: the report is immutable and the simulation takes up to ~50 ms
    at the caps)."""
    return parallelism.pipeline_schedule_report(
        stages, microbatches, schedule, virtual_stages, forward_time_s=1.0, backward_time_s=BACKWARD_OVER_FORWARD
    )


class PipelineLab(Lab):
    """The pipeline schedule lab (see the module docstring)."""

    CONTROLS = CONTROLS  # the module's, above

    def __init__(self, **initial):
        values = self.start_values(initial)
        # Checks the combination the same way the simulation does (v ≥ 2 with interleaving, m a multiple of p).
        parallelism.ParallelPlan(
            pipeline_parallel=values["stages"],
            grad_accum_steps=values["microbatches"],
            virtual_stages=values["virtual_stages"],
            schedule=values["schedule"],
        )
        controls = self.build_controls(values)
        self._build_figure()
        self._make_valid(controls, None)
        super().__init__("Lab 4 · Pipeline schedules and the bubble", controls, self.figure)

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
        set_range(slider, low, high, step)
        slider.value = wanted

    def sync_controls(self, changed) -> None:
        self._make_valid(self.controls, changed)

    # ---- the three parts of a lab ---------------------------------------------------------------------------------

    def compute(self, values: dict) -> parallelism.PipelineScheduleReport:
        """One ``parallelism.pipeline_schedule_report`` (cached) for the schedule the controls describe."""
        return _report(values["stages"], values["microbatches"], values["schedule"], values["virtual_stages"])

    def result_dict(self, r: parallelism.PipelineScheduleReport) -> dict:
        """``result``: the controls, then the simulated numbers (times in units of t_F) and the formulas'."""
        timeline = r.timeline
        return {
            "stages": r.stages,
            "microbatches": r.microbatches,
            "virtual_stages": r.virtual_stages,
            "schedule": r.schedule,
            "time_unit": "t_F",
            "forward_time": float(timeline.forward_time_s),
            "backward_time": float(timeline.backward_time_s),
            "total_time": r.total_s,
            "ideal_time": r.ideal_s,
            "bubble_time": r.bubble_s,
            "bubble_fraction": r.bubble_fraction,
            "bubble_share_of_step": r.bubble_share_of_step,
            "peak_in_flight": r.peak_in_flight,
            "ops": len(timeline.ops),
            "formula_bubble_fraction": r.formula_bubble_fraction,
            "formula_peak_in_flight": r.formula_peak_in_flight,
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
            xlabel=(
                r"time in units of $t_\text{F}$, the forward time of one micro-batch through one stage "
                r"($t_\text{bwd} = 2\,t_\text{F}$)"
            ),
            min_label_size=MIN_LABEL_SIZE,
        )
        # Right: simulation against formula, the bubble on top, the activations stage 1 holds below.
        self.checks = ComparisonBarsFigure(
            [figure.add_axes((0.8, 0.6 - 0.42 * row, 0.17, 0.28)) for row in range(2)],
            ["bubble, % of the ideal time", "stage 1 holds (micro-batches)"],
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

    def draw(self, r: parallelism.PipelineScheduleReport) -> None:
        self.set_static_state(r.timeline)
        self.gantt.update(r.timeline)
        self.checks.update(
            [(r.bubble_fraction, r.formula_bubble_fraction), (r.peak_in_flight, r.formula_peak_in_flight)]
        )

    def summary_html(self, r: parallelism.PipelineScheduleReport) -> str:
        pct = units.format_percent

        def t(value):  # a time in units of t_F
            return units.format_quantity(value, "", digits=4, min_prefix="").rstrip() + " t<sub>F</sub>"

        count = _count
        p, m, v = r.stages, r.microbatches, r.virtual_stages
        match = "=" if r.bubble_matches else "≠"
        held = "=" if r.peak_in_flight_matches else "≠"
        formula = "(p − 1)/m" if v == 1 else "(p − 1)/(v·m)"
        return (
            f"<b>{SCHEDULE_NAMES[r.schedule]}</b>, p = {p} stages, m = {m} micro-batches"
            + (f", v = {v} chunks per device" if r.schedule == "interleaved" else "")
            + ". "
            f"Step {t(r.total_s)} against an ideal {t(r.ideal_s)} "
            f"(m·(t<sub>F</sub> + t<sub>bwd</sub>), t<sub>bwd</sub> = 2 t<sub>F</sub>): "
            f"bubble {t(r.bubble_s)} = <b>{pct(r.bubble_fraction)}</b> of the ideal "
            f"time ({pct(r.bubble_share_of_step)} of the step); formula {formula} = "
            f"{pct(r.formula_bubble_fraction)} {match} simulated.<br>"
            f"Stage 0 holds the activations of <b>{count(r.peak_in_flight)}</b> micro-batches at its peak "
            f"(formula: {count(r.formula_peak_in_flight)} {held} simulated).<br>"
            f"<small>Times in units of t<sub>F</sub>, the forward time of one micro-batch through one stage. "
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
