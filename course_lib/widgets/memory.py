"""Lab 3 · the memory budget of one device: model states and activations against the device's capacity.

Every number comes from one call, ``parallelism.memory_budget_report(model, plan, device, framework=...)``, for the
``ParallelPlan`` the controls (``CONTROLS``) describe, under each ZeRO stage, against the device's HBM. The
``framework`` control chooses the model: "ideal" (the default: lesson 03's accounting, ``memory_breakdown`` with
``calibration=None``, the first pipeline stage under 1F1B, which the explore questions and the graded questions check)
or a framework of ``FRAMEWORK_LABELS`` (the calibrated model as that framework runs the plan: its precision recipe, the
logits, the fitted framework memory, the heaviest pipeline stage). A ZeRO stage the framework does not run with the plan
(nanotron and ZeRO-2; Megatron-LM and ZeRO-2 with p > 1) has no breakdown: an empty, labelled slot in the figure, None
in the dict view. ``compute`` returns that ``MemoryBudgetReport``, which alone the figure and the summary read and
``lab.typed_result`` holds; ``lab.result`` shows it as a plain dict (the model, the plan, each component's bytes of the
selected stage, ``total_bytes``, ``capacity_bytes``, ``fits``, ``headroom_bytes``, ``memory_margin``,
``fits_with_margin``, ``zero<k>_<component>_bytes`` for every stage k, then the framework, whether it runs the selected
stage and each stage, and why not). The margin (``MEMORY_MARGIN``) is the calibrated model's,
``REFERENCE_CALIBRATION.memory_margin`` (+52.1 %: the 90th percentile of measured/predicted memory on the Playbook's
healthy held-out runs); the ideal model misses more (no framework memory, no logits),
so a plan that fits only without the margin is a gamble. The figure, ``viz.memory_budget.MemoryBudgetFigure``, has two
panels: on the left, the same plan under ZeRO stages 0–3 as stacked bars on a linear axis that ends at twice the
device's capacity (the selected stage is outlined; a bar above the axis gets an arrow and its total; a hatched band
under the capacity marks the margin); on the right, each component of the selected plan on a log axis from 100 kB to 100
TB, so a 20 kB shard and a 40 TB replica are both readable.

Only valid plans are reachable: the tensor-parallel slider offers the divisors of the model's heads (≤ 64) and the
pipeline slider the divisors of its layers (≤ 128); changing the model moves both to the nearest valid value (their
specs' stops depend on the model: ``Lab.sync_choices``).

>>> from course_lib import units
>>> lab = memory_budget_lab()
>>> units.format_bytes(lab.result["total_bytes"]), lab.result["fits"]
('25.3 GB', True)
>>> lab.controls["model"].value = "GPT-2 1.5B"
>>> lab.controls["tensor_parallel"].options
(('1', 1), ('5', 5), ('25', 25))

"""

from __future__ import annotations

import html

from matplotlib.figure import Figure

from .. import hardware, parallelism, units
from ..viz.memory_budget import MEMORY_COMPONENTS, MODEL_MEMORY_COMPONENTS, MemoryBudgetFigure, memory_components_of
from ..viz.style import COLORS, FIT_COLOR
from ._base import ControlSpec, Lab, control_defaults, model_split_specs, plan_from

__all__ = [
    "MemoryBudgetLab",
    "memory_budget_lab",
    "CONTROLS",
    "DEFAULTS",
    "DATA_PARALLEL_SIZES",
    "GRAD_ACCUM_STEPS",
    "MAX_TENSOR_PARALLEL",
    "MAX_PIPELINE_PARALLEL",
    "MEMORY_MARGIN",
    "FRAMEWORK_LABELS",
    "framework_label",
    "tensor_parallel_options",
    "pipeline_parallel_options",
]

# 1 … 1024: powers of two and three times them (Megatron's 1T plan uses d = 6 on 3072 GPUs)
DATA_PARALLEL_SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
GRAD_ACCUM_STEPS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
MAX_TENSOR_PARALLEL = 64  # one tensor-parallel group rarely spans more than a few NVLink domains
MAX_PIPELINE_PARALLEL = 128
ZERO_NAMES = {stage: f"ZeRO-{stage}" for stage in parallelism.ZERO_STAGES}
LOG_AXIS_BYTES = (100 * units.KB, 100 * units.TB)  # the right panel's fixed range
MEMORY_MARGIN = parallelism.REFERENCE_CALIBRATION.memory_margin
MISS_COLOR = COLORS["exposed"]
# The framework control: "ideal" (lesson 03's model) or a key of parallelism.FRAMEWORKS, with the names the lab shows.
FRAMEWORK_LABELS = {
    "ideal": "ideal model",
    "nanotron": "nanotron",
    "megatron": "Megatron-LM",
    "deepspeed": "DeepSpeed",
    "fsdp2": "FSDP2",
    "fsdp2-pipeline": "FSDP2 + pipelining",
}


def framework_label(framework: parallelism.Framework | None) -> str:
    """The lab's name of a report's framework: "ideal model" for None, a preset's short name, else its own name.

    >>> from course_lib import parallelism
    >>> framework_label(None), framework_label(parallelism.MEGATRON_CORE)
    ('ideal model', 'Megatron-LM')
    """
    if framework is None:
        return FRAMEWORK_LABELS["ideal"]
    keys = [key for key, preset in parallelism.FRAMEWORKS.items() if preset is framework and key in FRAMEWORK_LABELS]
    return FRAMEWORK_LABELS[keys[0]] if keys else framework.name


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


# GPT-3 175B as Korthikanti et al. 2022 train it (t = 8, p = 8, selective recomputation + SP), with d = 8 and
# ZeRO-1: the plan the lesson ends on, which fits an 80 GB A100. t and p run over the model's divisors.
CONTROLS = (
    ControlSpec("model", "model", tuple(parallelism.MODELS), parallelism.GPT3_175B.name, kind="dropdown"),
    ControlSpec("framework", "framework", tuple(FRAMEWORK_LABELS), "ideal", FRAMEWORK_LABELS.__getitem__, "dropdown"),
    ControlSpec("zero_stage", "ZeRO stage", parallelism.ZERO_STAGES, 1, kind="buttons"),
    ControlSpec("data_parallel", "data parallel d", DATA_PARALLEL_SIZES, 8),
    *model_split_specs(parallelism.MODELS, tensor_parallel_options, pipeline_parallel_options, 8, 8),
    ControlSpec("recompute", "recomputation", parallelism.RECOMPUTE_OPTIONS, "selective", kind="buttons"),
    ControlSpec("sequence_parallel", "sequence parallel (no effect when t = 1)", (False, True), True, kind="checkbox"),
    ControlSpec("micro_batch", "micro-batch b (seq.)", range(1, 65), 1, kind="int slider"),
    ControlSpec("grad_accum_steps", "micro-batches m", GRAD_ACCUM_STEPS, 64),
    ControlSpec("device", "device", tuple(hardware.ACCELERATORS), hardware.A100.name, kind="dropdown"),
)
DEFAULTS = control_defaults(CONTROLS)


class MemoryBudgetLab(Lab):
    """Per-device memory of a parallel plan against the device's capacity (see the module docstring)."""

    CONTROLS = CONTROLS  # the module's, above

    def __init__(self, **initial):
        controls = self.build_controls(self.start_values(initial))
        self._build_figure()
        super().__init__("Lab 3 · Memory budget of one device", controls, self.figure)

    # ---- the four parts of a lab ----------------------------------------------------------------------------------

    def compute(self, values: dict) -> parallelism.MemoryBudgetReport:
        """One ``parallelism.memory_budget_report`` for the plan the controls describe."""
        framework = values["framework"]
        return parallelism.memory_budget_report(
            parallelism.MODELS[values["model"]],
            plan_from(values),
            hardware.ACCELERATORS[values["device"]],
            memory_margin=MEMORY_MARGIN,
            framework=None if framework == "ideal" else framework,
        )

    def result_dict(self, r: parallelism.MemoryBudgetReport) -> dict:
        """``result``: the model, the plan, the selected stage's bytes against the capacity, then every stage's, then
        the framework and what it runs. A stage the framework does not run has None for its bytes."""
        model, plan, memory = r.model, r.plan, r.memory

        def bytes_of(breakdown, field):
            return None if breakdown is None else float(getattr(breakdown, field))

        result = {
            "model": model.name,
            "params": float(model.params),
            "layers": model.layers,
            "heads": model.heads,
            "device": r.accelerator.name,
            "data_parallel": plan.data_parallel,
            "tensor_parallel": plan.tensor_parallel,
            "pipeline_parallel": plan.pipeline_parallel,
            "devices": int(plan.devices),
            "global_batch": int(plan.global_batch),
            "zero_stage": plan.zero_stage,
            "schedule": plan.schedule,
            "in_flight_microbatches": r.in_flight_microbatches,
            **{f"{field}_bytes": bytes_of(memory, field) for field in (*MODEL_MEMORY_COMPONENTS, "model_states")},
            "total_bytes": bytes_of(memory, "total"),
            "capacity_bytes": r.capacity_bytes,
            "fits": r.fits,
            "headroom_bytes": r.headroom_bytes,
            "memory_margin": r.memory_margin,
            "fits_with_margin": r.fits_with_margin,
        }
        for stage, other in zip(parallelism.ZERO_STAGES, r.by_zero_stage, strict=True):
            for field in ("parameters", "gradients", "optimizer_state", "total"):
                result[f"zero{stage}_{field}_bytes"] = bytes_of(other, field)
        result.update(
            framework=framework_label(r.framework),
            logits_bytes=bytes_of(memory, "logits"),
            framework_bytes=bytes_of(memory, "framework"),
            runs=r.runs,
            not_run_reason=r.reason,
        )
        for stage, supported in zip(parallelism.ZERO_STAGES, r.supported, strict=True):
            result[f"zero{stage}_runs"] = supported
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
            components=tuple(MEMORY_COMPONENTS),
            memory_margin=MEMORY_MARGIN,
            legend_columns=4,
        )
        # The legend greys out the components no bar holds (the ideal model's logits and framework memory): one
        # picture of the static figure per set of components held.
        self.enable_partial_redraw(figure, self.memory_figure.animated, [self.memory_figure.panel((0.0, 1.0))])

    def draw(self, r: parallelism.MemoryBudgetReport) -> None:
        self.set_static_state(memory_components_of([b for b in r.by_zero_stage if b is not None]))
        self.memory_figure.update(r.by_zero_stage, r.plan.zero_stage, r.capacity_bytes, not_run_label(r))

    def summary_html(self, r: parallelism.MemoryBudgetReport) -> str:
        model, plan = r.model, r.plan
        devices = (
            f"<b>{model.name}</b> ({units.format_count(float(model.params))} parameters, {model.layers} layers, "
            f"{model.heads} heads) on d·t·p = {plan.data_parallel} · {plan.tensor_parallel} · "
            f"{plan.pipeline_parallel} = <b>{int(plan.devices)}</b> devices, global batch "
            f"{int(plan.global_batch)} sequences.<br>"
        )
        choices = (
            f"<small>t takes only divisors of the {model.heads} heads (≤ {MAX_TENSOR_PARALLEL}) and p only "
            f"divisors of the {model.layers} layers (≤ {MAX_PIPELINE_PARALLEL}): every position is a plan the model "
            f"can be split into. "
        )
        return devices + self._memory_html(r) + choices + self._counted_html(r) + "</small>"

    def _memory_html(self, r: parallelism.MemoryBudgetReport) -> str:
        """The selected stage's components against the capacity, and the verdict; or why it is not run."""
        b = units.format_bytes
        memory, name = r.memory, framework_label(r.framework)
        if memory is None:
            return (
                f"<b>Not run by {name}</b>: {html.escape(r.reason)}. The model gives no number for a plan the "
                f"framework does not run: choose a ZeRO stage it runs, p = 1, or another framework.<br>"
            )
        margin = f"+{units.format_percent(r.memory_margin)} margin"
        if r.fits_with_margin:
            verdict = f"<b style='color:{FIT_COLOR}'>fits</b>, {b(r.headroom_bytes)} headroom, also with the {margin}"
        elif r.fits:
            verdict = (
                f"<b style='color:{FIT_COLOR}'>fits</b>, {b(r.headroom_bytes)} headroom, but not with the {margin} "
                f"(it needs {b(float(memory.total) * (1 + r.memory_margin))})"
            )
        else:
            verdict = f"<b style='color:{MISS_COLOR}'>does not fit</b> by {b(-float(r.headroom_bytes or 0.0))}"
        fields = MODEL_MEMORY_COMPONENTS if r.framework is None else tuple(MEMORY_COMPONENTS)
        parts = " · ".join(f"{MEMORY_COMPONENTS[field]} {b(float(getattr(memory, field)))}" for field in fields)
        stage = "first pipeline stage" if r.framework is None else f"as {name} runs it, the heaviest pipeline stage"
        if r.framework is not None and r.plan.pipeline_parallel > 1 and float(memory.logits) == 0:
            parts += " (the logits are on the last stage, which holds less)"
        return (
            f"Per device ({stage}, 1F1B schedule, micro-batches in flight: "
            f"{units.format_count(r.in_flight_microbatches, digits=4)}): {parts} "
            f"= <b>{b(float(memory.total))}</b> of {b(r.capacity_bytes)}: {verdict}.<br>"
        )

    def _counted_html(self, r: parallelism.MemoryBudgetReport) -> str:
        """What the model counts and what not, and the margin."""
        margin = (
            f"The hatched band is the +{units.format_percent(r.memory_margin)} margin the calibrated model needed on "
            "the Playbook's healthy measured runs it was not fitted on"
        )
        if r.framework is None:
            return (
                "The ideal model: 16 B per parameter (2 + 2 + 12). Not counted: temporary buffers, logits, "
                f"fragmentation, the framework's own memory: leave headroom. {margin}."
            )
        param, grad, buffer, optimizer = parallelism.PRECISION_RECIPES[r.framework.precision]
        framework_bytes = units.format_bytes(parallelism.REFERENCE_CALIBRATION.framework_bytes)
        logits = units.format_count(r.framework.logits_bytes_per_element)
        return (
            f"{framework_label(r.framework)} stores {param + grad + buffer + optimizer} B per parameter before ZeRO "
            f"shards it ({param} + {grad + buffer} + {optimizer}: parameters, gradients, optimizer state; recipe "
            f"“{r.framework.precision}”), the last stage's logits ({logits} B per vocabulary entry and token) and "
            f"{framework_bytes} of framework memory, a constant fitted on "
            f"the Playbook's nanotron runs (CUDA context, NCCL buffers, allocator cache), not physics. {margin}."
        )


def not_run_label(r: parallelism.MemoryBudgetReport) -> str:
    """The label of an empty slot: "not run by <framework>", and "with a pipeline" when the pipeline is why (every
    stage not run is one the framework has)."""
    name = framework_label(r.framework)
    if r.framework is None or any(
        stage not in r.framework.zero_stages
        for stage, runs in zip(parallelism.ZERO_STAGES, r.supported, strict=True)
        if not runs
    ):
        return f"not run by {name}"
    return f"not run by {name}\nwith a pipeline"


def memory_budget_lab(**initial) -> MemoryBudgetLab:
    """The memory budget lab; keyword arguments set controls' initial values (``DEFAULTS`` lists the names).

    >>> from course_lib import units
    >>> lab = memory_budget_lab(model="GPT-2 1.5B", tensor_parallel=1, pipeline_parallel=1, data_parallel=1,
    ...                         zero_stage=0, recompute="full", sequence_parallel=False)
    >>> units.format_bytes(lab.result["model_states_bytes"])   # 16 bytes × 1.56 billion parameters
    '24.9 GB'
    """
    return MemoryBudgetLab(**initial)
