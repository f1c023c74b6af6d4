"""Lab 3 · the memory budget of one device: model states and activations against the device's capacity.

Every number comes from ``parallelism.memory_breakdown`` (the ideal model, ``calibration=None``) on a ``ParallelPlan``
(the first pipeline stage, which holds the most activations, under the 1F1B schedule). The figure,
``viz.memory_budget.MemoryBudgetFigure``, has two panels: on the left, the same plan under ZeRO stages 0–3 as stacked
bars on a linear axis that ends at twice the device's capacity (the selected stage is outlined; a bar above the axis
gets an arrow and its total); on the right, each component of the selected plan on a log axis from 100 kB to 100 TB,
so a 20 kB shard and a 40 TB replica are both readable.

Only valid plans are reachable: the tensor-parallel slider offers the divisors of the model's heads (≤ 64) and the
pipeline slider the divisors of its layers (≤ 128); changing the model moves both to the nearest valid value.

>>> from course_lib import units
>>> lab = memory_budget_lab()
>>> units.format_bytes(lab.result["total_bytes"]), lab.result["fits"]
('25.3 GB', True)
>>> lab.controls["model"].value = "GPT-2 1.5B"
>>> lab.controls["tensor_parallel"].options
(('1', 1), ('5', 5), ('25', 25))
"""

from __future__ import annotations

import ipywidgets as widgets
from matplotlib.figure import Figure

from .. import hardware, parallelism, units
from ..viz.memory_budget import MemoryBudgetFigure
from ..viz.style import COLORS, FIT_COLOR
from ._base import (
    CONTROL_LAYOUT,
    CONTROL_STYLE,
    Lab,
    check_choices,
    choice_buttons,
    dropdown,
    initial_values,
    int_slider,
    nearest_option,
    option_slider,
    plan_from,
    set_options,
)

__all__ = [
    "MemoryBudgetLab",
    "memory_budget_lab",
    "DEFAULTS",
    "DATA_PARALLEL_SIZES",
    "GRAD_ACCUM_STEPS",
    "MAX_TENSOR_PARALLEL",
    "MAX_PIPELINE_PARALLEL",
    "tensor_parallel_options",
    "pipeline_parallel_options",
]

# GPT-3 175B as Korthikanti et al. 2022 train it (t = 8, p = 8, selective recomputation + SP), with d = 8 and
# ZeRO-1: the plan the lesson ends on, which fits an 80 GB A100.
DEFAULTS = {
    "model": parallelism.GPT3_175B.name,
    "zero_stage": 1,
    "data_parallel": 8,
    "tensor_parallel": 8,
    "pipeline_parallel": 8,
    "recompute": "selective",
    "sequence_parallel": True,
    "micro_batch": 1,
    "grad_accum_steps": 64,
    "device": hardware.A100.name,
}
# 1 … 1024: powers of two and three times them (Megatron's 1T plan uses d = 6 on 3072 GPUs)
DATA_PARALLEL_SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
GRAD_ACCUM_STEPS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
MAX_TENSOR_PARALLEL = 64  # one tensor-parallel group rarely spans more than a few NVLink domains
MAX_PIPELINE_PARALLEL = 128
ZERO_NAMES = {stage: f"ZeRO-{stage}" for stage in parallelism.ZERO_STAGES}
LOG_AXIS_BYTES = (100 * units.KB, 100 * units.TB)  # the right panel's fixed range
MISS_COLOR = COLORS["exposed"]


def tensor_parallel_options(model: parallelism.TransformerModel) -> tuple:
    """Tensor-parallel sizes the lab offers for ``model``: divisors of its heads, at most 64.

    >>> from course_lib import parallelism
    >>> tensor_parallel_options(parallelism.GPT3_175B)
    (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48)
    """
    return tuple(t for t in range(1, MAX_TENSOR_PARALLEL + 1) if parallelism.splits_evenly(model, tensor_parallel=t))


def pipeline_parallel_options(model: parallelism.TransformerModel) -> tuple:
    """Pipeline-parallel sizes the lab offers for ``model``: divisors of its layers, at most 128.

    >>> from course_lib import parallelism
    >>> pipeline_parallel_options(parallelism.MT_NLG_530B)
    (1, 3, 5, 7, 15, 21, 35, 105)
    """
    return tuple(
        p for p in range(1, MAX_PIPELINE_PARALLEL + 1) if parallelism.splits_evenly(model, pipeline_parallel=p)
    )


class MemoryBudgetLab(Lab):
    """Per-device memory of a parallel plan against the device's capacity (see the module docstring)."""

    def __init__(self, **initial):
        values = initial_values(DEFAULTS, initial, "memory budget lab")
        self._check_initial(values)
        model = parallelism.MODELS[values["model"]]
        controls = {
            "model": dropdown("model", parallelism.MODELS, values["model"]),
            "zero_stage": choice_buttons(
                "ZeRO stage", [(str(k), k) for k in parallelism.ZERO_STAGES], values["zero_stage"]
            ),
            "data_parallel": option_slider("data parallel d", DATA_PARALLEL_SIZES, values["data_parallel"]),
            "tensor_parallel": option_slider(
                "tensor parallel t", tensor_parallel_options(model), values["tensor_parallel"]
            ),
            "pipeline_parallel": option_slider(
                "pipeline parallel p", pipeline_parallel_options(model), values["pipeline_parallel"]
            ),
            "recompute": choice_buttons("recomputation", list(parallelism.RECOMPUTE_OPTIONS), values["recompute"]),
            "sequence_parallel": widgets.Checkbox(
                value=values["sequence_parallel"],
                description="sequence parallel (no effect when t = 1)",
                style=CONTROL_STYLE,
                layout=CONTROL_LAYOUT,
            ),
            "micro_batch": int_slider("micro-batch b (seq.)", 1, 64, values["micro_batch"]),
            "grad_accum_steps": option_slider("micro-batches m", GRAD_ACCUM_STEPS, values["grad_accum_steps"]),
            "device": dropdown("device", hardware.ACCELERATORS, values["device"]),
        }
        self._build_figure()
        super().__init__("Lab 3 · Memory budget of one device", controls, self.figure)

    @staticmethod
    def _check_initial(values):
        if values["model"] not in parallelism.MODELS:
            raise ValueError(f"model must be one of {list(parallelism.MODELS)}, got {values['model']!r}")
        if values["device"] not in hardware.ACCELERATORS:
            raise ValueError(f"device must be one of {list(hardware.ACCELERATORS)}, got {values['device']!r}")
        model = parallelism.MODELS[values["model"]]
        allowed = {
            "zero_stage": parallelism.ZERO_STAGES,
            "data_parallel": DATA_PARALLEL_SIZES,
            "tensor_parallel": tensor_parallel_options(model),
            "pipeline_parallel": pipeline_parallel_options(model),
            "recompute": parallelism.RECOMPUTE_OPTIONS,
            "sequence_parallel": (True, False),
            "micro_batch": tuple(range(1, 65)),
            "grad_accum_steps": GRAD_ACCUM_STEPS,
        }
        check_choices(values, allowed, f" (for {model.name})")

    # ---- dependent options --------------------------------------------------------------------------------------

    def sync_controls(self, changed) -> None:
        if changed == "model":  # t and p run over the new model's divisors
            model = parallelism.MODELS[self.controls["model"].value]
            for name, options in (
                ("tensor_parallel", tensor_parallel_options(model)),
                ("pipeline_parallel", pipeline_parallel_options(model)),
            ):
                set_options(self.controls[name], options, nearest_option(options, self.controls[name].value))

    # ---- the three parts of a lab ---------------------------------------------------------------------------------

    def compute(self, values: dict) -> dict:
        model = parallelism.MODELS[values["model"]]
        device = hardware.ACCELERATORS[values["device"]]
        plan = plan_from(values)
        # The same plan under every ZeRO stage, for the comparison bars (activations do not depend on the stage).
        self.breakdowns = [
            parallelism.memory_breakdown(model, plan.replace(zero_stage=stage), calibration=None)
            for stage in parallelism.ZERO_STAGES
        ]
        memory = self.breakdowns[plan.zero_stage]
        capacity = float(device.hbm_capacity_bytes)
        total = float(memory.total)
        result = {
            "model": model.name,
            "params": float(model.params),
            "layers": model.layers,
            "heads": model.heads,
            "device": device.name,
            "data_parallel": plan.data_parallel,
            "tensor_parallel": plan.tensor_parallel,
            "pipeline_parallel": plan.pipeline_parallel,
            "devices": int(plan.devices),
            "global_batch": int(plan.global_batch),
            "zero_stage": plan.zero_stage,
            "schedule": plan.schedule,
            "in_flight_microbatches": float(
                parallelism.pipeline_in_flight_microbatches(
                    plan.pipeline_parallel, plan.grad_accum_steps, plan.schedule, plan.virtual_stages
                )
            ),
            "parameters_bytes": float(memory.parameters),
            "gradients_bytes": float(memory.gradients),
            "optimizer_state_bytes": float(memory.optimizer_state),
            "activations_bytes": float(memory.activations),
            "model_states_bytes": float(memory.model_states),
            "total_bytes": total,
            "capacity_bytes": capacity,
            "fits": bool(total <= capacity),
            "headroom_bytes": capacity - total,
        }
        for stage, other in zip(parallelism.ZERO_STAGES, self.breakdowns, strict=True):
            for field in ("parameters", "gradients", "optimizer_state", "total"):
                result[f"zero{stage}_{field}_bytes"] = float(getattr(other, field))
        return result

    def _build_figure(self) -> None:
        figure = Figure(figsize=(9, 4), dpi=self.dpi)
        self.figure = figure
        figure.patch.set_facecolor("white")
        self.memory_figure = MemoryBudgetFigure(
            figure.add_axes((0.1, 0.2, 0.44, 0.63)),
            figure.add_axes((0.71, 0.2, 0.26, 0.63)),
            [ZERO_NAMES[stage] for stage in parallelism.ZERO_STAGES],
            LOG_AXIS_BYTES,
            stack_title="the same plan under each ZeRO stage (selected: outlined)",
        )
        self.enable_partial_redraw(figure, self.memory_figure.animated)

    def draw(self, result: dict) -> None:
        self.memory_figure.update(self.breakdowns, result["zero_stage"], result["capacity_bytes"])

    def summary_html(self, result: dict) -> str:
        b = units.format_bytes
        if result["fits"]:
            verdict = f"<b style='color:{FIT_COLOR}'>fits</b>, {b(result['headroom_bytes'])} headroom"
        else:
            verdict = f"<b style='color:{MISS_COLOR}'>does not fit</b> by {b(-result['headroom_bytes'])}"
        return (
            f"<b>{result['model']}</b> ({units.format_count(result['params'])} parameters, {result['layers']} layers, "
            f"{result['heads']} heads) on d·t·p = {result['data_parallel']} · {result['tensor_parallel']} · "
            f"{result['pipeline_parallel']} = <b>{result['devices']}</b> devices, global batch "
            f"{result['global_batch']} sequences.<br>"
            f"Per device (first pipeline stage, 1F1B schedule, micro-batches in flight: "
            f"{units.format_count(result['in_flight_microbatches'], digits=4)}): "
            f"parameters {b(result['parameters_bytes'])} · gradients {b(result['gradients_bytes'])} · "
            f"optimizer state {b(result['optimizer_state_bytes'])} · activations {b(result['activations_bytes'])} "
            f"= <b>{b(result['total_bytes'])}</b> of {b(result['capacity_bytes'])}: {verdict}.<br>"
            f"<small>t takes only divisors of the {result['heads']} heads (≤ {MAX_TENSOR_PARALLEL}) and p only "
            f"divisors of the {result['layers']} layers (≤ {MAX_PIPELINE_PARALLEL}): every position is a valid plan. "
            f"Not counted: temporary buffers, logits, fragmentation: leave headroom.</small>"
        )


def memory_budget_lab(**initial) -> MemoryBudgetLab:
    """The memory budget lab; keyword arguments set controls' initial values (``DEFAULTS`` lists the names).

    >>> from course_lib import units
    >>> lab = memory_budget_lab(model="GPT-2 1.5B", tensor_parallel=1, pipeline_parallel=1, data_parallel=1,
    ...                         zero_stage=0, recompute="full", sequence_parallel=False)
    >>> units.format_bytes(lab.result["model_states_bytes"])   # 16 bytes × 1.56 billion parameters
    '24.9 GB'
    """
    return MemoryBudgetLab(**initial)
