"""Published training runs: well-tuned throughputs that frameworks and papers report, one row per run with its source.

``course_lib/data/published_runs.csv`` holds them, transcribed cell by cell from NeMo's and Megatron-Bridge's
performance summaries, NVIDIA's DGX Cloud benchmarking recipes (DGX H100 reference architecture), Megatron-LM's
weak-scaling table, torchtitan's benchmarks, and the Llama 3 and DeepSeek-V3 papers
(``course_lib/data/published_runs.README.md`` gives every source, its version and its caveats). A cell the source
does not state is empty (NaN here); a cell derived from others (say, dp = gpus / (tp · pp · cp)) is named in the row's
``derived`` column. Nothing is modelled: these are the measurements the course's step model is judged on,
fitted on one model family and held out on the others (``FIT_FAMILIES``).

>>> runs = load_published_runs()
>>> len(runs), len(set(runs["source"])), len(set(runs["family"]))
(152, 11, 8)
>>> row = runs.row("nemo2407-llama3-70b")
>>> row["tokens_per_s_per_gpu"], row["flops_per_s_per_gpu"], row["cp"]
(1524.0, 734000000000000.0, 2)
"""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import _check

__all__ = [
    "PUBLISHED_RUNS_CSV",
    "FIT_FAMILIES",
    "PublishedRuns",
    "load_published_runs",
    "PublishedReplay",
    "replay_published_runs",
    "REFERENCE_FIT_GRID",
    "reference_fit_surface",
    "fit_reference_calibration",
    "reference_step_time_band",
    "KIND_LABELS",
    "MEDIAN_ERROR_TARGET",
    "published_figures",
    "published_report",
]

# Package data, found where course_lib is installed (as validation.PLAYBOOK_CSV).
PUBLISHED_RUNS_CSV = Path(str(importlib.resources.files("course_lib") / "data" / "published_runs.csv"))
# The proposed split (published_runs.README.md, "Fitted and held-out rows"): fit on the GPT family (Megatron-LM's
# weak scaling, NeMo's and DGX Cloud's GPT-3 175B: Megatron-Core on H100, BF16 and FP8), hold out every other family.
FIT_FAMILIES = ("gpt",)

_TEXT = ("id", "source", "source_detail", "framework", "model", "family", "gpu", "precision", "recompute", "derived",
         "notes")  # fmt: skip
_INT = ("gpus", "nodes", "tp", "pp", "cp", "ep", "dp")  # every row states or derives these
_OPTIONAL = ("seq_len", "global_batch", "micro_batch", "vp", "fsdp")  # NaN where the source is silent
_FLAGS = ("moe", "distributed_optimizer")  # "true" / "false" / empty (not stated)


@dataclass(frozen=True, eq=False)
class PublishedRuns:
    """Published runs as columns (numpy arrays, one row per run); a cell the source leaves out is NaN (or "").

    Measurements in SI units: ``tokens_per_s_per_gpu`` (tokens/s), ``flops_per_s_per_gpu`` (model FLOP/s per GPU, as
    each source counts them: see the README), ``mfu`` (a fraction), ``step_time_s``.
    """

    columns: dict

    def __len__(self):
        return len(self.columns["id"])

    def __getitem__(self, name):
        return self.columns[name]

    def row(self, run_id: str) -> dict:
        """One run's cells by its ``id``; integers as ``int``, measurements as ``float`` (NaN when not stated)."""
        where = np.flatnonzero(self.columns["id"] == run_id)
        if where.size != 1:
            raise ValueError(f"run_id must be one of the {len(self)} ids in the file, got {run_id!r}")
        return {name: column[where[0]].item() for name, column in self.columns.items()}

    @property
    def is_fp8(self) -> np.ndarray:
        """True where the run computes its matrix multiplies in FP8 (any recipe)."""
        return np.char.startswith(self.columns["precision"].astype(str), "fp8")

    @property
    def is_context_parallel(self) -> np.ndarray:
        """True where the sequence is split over c > 1 GPUs."""
        return self.columns["cp"] > 1

    @property
    def is_moe(self) -> np.ndarray:
        """True where the model is a mixture of experts."""
        return self.columns["moe"] == 1.0

    def subset(self, rows) -> PublishedRuns:
        """The runs where ``rows`` (a boolean mask) is True."""
        rows = np.asarray(rows, dtype=bool)
        return PublishedRuns({name: column[rows] for name, column in self.columns.items()})

    @property
    def held_out(self) -> np.ndarray:
        """True for the rows outside ``FIT_FAMILIES``: the ones a calibration fitted on the rest is judged on."""
        return ~np.isin(self.columns["family"], FIT_FAMILIES)


def _number(text: str) -> float:
    return float(text) if text else np.nan


def _flag(name: str, text: str) -> float:
    if text not in ("true", "false", ""):
        raise ValueError(f"{name} must be true, false or empty, got {text!r}")
    return {"true": 1.0, "false": 0.0, "": np.nan}[text]


def load_published_runs(path=None) -> PublishedRuns:
    """Read ``PUBLISHED_RUNS_CSV`` (course_lib/data/published_runs.csv), or ``path``, into columns in SI units.

    ``flops_per_s_per_gpu`` and ``mfu_peak_flops_per_s`` (the peak a source's MFU divides by, where it says) are the
    published TFLOP/s × 10¹²; ``mfu`` a fraction; ``step_time_s``, ``tokens_per_s`` (the whole job) and
    ``flops_per_sequence`` (a source's model FLOPs for one sequence) as published; flags (``moe``,
    ``distributed_optimizer``) 1.0, 0.0 or NaN (not stated).

    >>> runs = load_published_runs()
    >>> int(runs.is_moe.sum()), int(runs.is_context_parallel.sum()), int(runs.held_out.sum())
    (17, 52, 129)
    """
    path = PUBLISHED_RUNS_CSV if path is None else path
    rows = _check.csv_rows(path, what="the published runs CSV", column="tokens_per_s_per_gpu")
    columns = {name: np.array([row[name] for row in rows]) for name in _TEXT}
    for name in _INT:
        columns[name] = np.array([int(row[name]) for row in rows], dtype=np.int64)
    for name in _OPTIONAL:
        columns[name] = np.array([_number(row[name]) for row in rows])
    for name in _FLAGS:
        columns[name] = np.array([_flag(name, row[name]) for row in rows])
    columns["tokens_per_s_per_gpu"] = np.array([_number(row["tokens_per_s_per_gpu"]) for row in rows])
    columns["flops_per_s_per_gpu"] = np.array([_number(row["tflops_per_s_per_gpu"]) for row in rows]) * 1e12
    columns["mfu"] = np.array([_number(row["mfu"]) for row in rows])
    columns["mfu_peak_flops_per_s"] = np.array([_number(row["mfu_peak_tflops_per_s"]) for row in rows]) * 1e12
    for name in ("step_time_s", "tokens_per_s", "flops_per_sequence"):
        columns[name] = np.array([_number(row[name]) for row in rows])
    if len(set(columns["id"])) != len(rows):
        raise ValueError(f"id must be unique; {path} repeats one")
    return PublishedRuns(columns)


# ---- replaying the runs through the step model -------------------------------------------------------------------

# Which attention FLOPs a source's "model TFLOP/s" counts (published_runs.README.md, "How each source counts FLOPs"):
# Megatron-Bridge and DGX Cloud's Grok-1 recipe count the causal half of QKᵀ and AV; NeMo 24.07, the other DGX Cloud
# recipes and Megatron-LM the whole square (the course's ``forward_flops_per_token``). The Llama 3 paper does not say:
# its rows are read with the whole square, as the course's MFU counts.
_CAUSAL_SOURCES = ("megatron-bridge-25.09", "megatron-bridge-25.11", "megatron-bridge-26.04.01")
_CAUSAL_MODELS = ("Grok 1 314B",)
# The frameworks the rows name, as the course's presets (``frameworks``): Megatron-Core under NeMo and
# Megatron-Bridge; torchtitan's FSDP2 (with pipelining when p > 1); Meta's Llama 3 stack ran FSDP with pipelining,
# parameters kept whole after the forward (Llama 3 §3.3.2), as torchtitan's FSDP2 with pipelining does.
_MEGATRON_FRAMEWORKS = ("megatron-core", "nemo", "megatron-bridge")
_PIPELINED_FSDP_FRAMEWORKS = ("torchtitan", "meta-4d")
# The devices replayed as the reference's H100 SXM 80 GB: "H100" (Megatron-LM does not say which form factor; its
# MFU divides by the SXM's dense bf16 peak). torchtitan's 96 GB HBM2e parts at 500 W and DeepSeek's H800 are other
# devices: refused, not replayed at a peak they do not reach.
_H100_SXM = ("H100-SXM-80GB", "H100")


@dataclass(frozen=True, eq=False)
class PublishedReplay:
    """The step model's predictions for every published run, aligned with ``runs``: NaN where a run was refused,
    with the reason in ``refused`` ({reason: count}) and ``reason`` (one per row, "" for a replayed one).

    ``measured_tokens_per_s_per_gpu`` is each run's throughput: its published tokens/s, else its published TFLOP/s
    over the model's FLOPs per token counted as that source counts them. ``error`` is predicted / measured − 1.
    """

    runs: PublishedRuns
    predicted_tokens_per_s_per_gpu: np.ndarray
    measured_tokens_per_s_per_gpu: np.ndarray
    reason: np.ndarray
    plans: tuple

    @property
    def replayed(self) -> np.ndarray:
        """True for the runs the model replayed."""
        return self.reason == ""

    @property
    def error(self) -> np.ndarray:
        """predicted / measured − 1 (NaN where refused)."""
        return self.predicted_tokens_per_s_per_gpu / self.measured_tokens_per_s_per_gpu - 1

    @property
    def refused(self) -> dict:
        """{reason: how many runs} for the runs not replayed."""
        reasons, counts = np.unique(self.reason[~self.replayed], return_counts=True)
        return {str(r): int(n) for r, n in zip(reasons, counts, strict=True)}

    def median_abs_error(self, rows) -> float:
        """The median |predicted / measured − 1| over the replayed runs among ``rows`` (a boolean mask)."""
        chosen = np.asarray(rows, dtype=bool) & self.replayed
        return float(np.median(np.abs(self.error[chosen]))) if chosen.any() else float("nan")


def _counted_flops_per_token(model, source: str) -> float:
    """Training FLOPs per token as ``source`` counts them: 3 × forward, attention's square whole or its causal half."""
    from .budget.step import forward_flops_per_token

    layer, head, core = forward_flops_per_token(model)
    causal = source in _CAUSAL_SOURCES or model.name in _CAUSAL_MODELS
    return 3.0 * (model.layers * (layer - (core / 2 if causal else 0.0)) + head)


def _framework(row: dict, pipeline_parallel: int):
    """The course's preset for the row's framework and precision, or a reason it has none."""
    from dataclasses import replace

    from .parallelism import FP8_RECIPES, FSDP2, FSDP2_PIPELINE, MEGATRON_CORE

    precision = row["precision"]
    if not precision and row["source"] == "megatron-lm-weak-scaling":
        # Megatron-LM's weak-scaling table states no precision; its MFU divides by the dense BF16 peak, and 41–47 %
        # of it (410–470 TFLOP/s) is a BF16 rate: as FP8 it would be 21–24 % of FP8's peak, far below every FP8 row.
        precision = "bf16"
    if not precision:
        return None, "precision not stated"
    fp8 = precision.startswith("fp8")
    if row["framework"] in _MEGATRON_FRAMEWORKS:
        framework = MEGATRON_CORE
        recipe = FP8_RECIPES["te"]  # Transformer Engine's FP8 (delayed or current scaling: the same bytes and peak)
    elif row["framework"] in _PIPELINED_FSDP_FRAMEWORKS:
        framework = FSDP2_PIPELINE if pipeline_parallel > 1 or row["framework"] == "meta-4d" else FSDP2
        recipe = FP8_RECIPES["torchao-fsdp"]
    else:
        return None, f"framework {row['framework']} has no preset"
    if "--tp-comm-overlap" in row["notes"]:
        # A row whose flags say so (Megatron-LM's weak scaling) overlaps the forward tensor-parallel collectives too:
        # --tp-comm-overlap splits the GEMMs into chunks that alternate with their communication (Megatron's preset
        # cites it as off by default).
        framework = replace(framework, name=f"{framework.name}, --tp-comm-overlap", tensor_parallel_overlap="all")
    return (replace(framework, fp8=recipe) if fp8 else framework), ""


def _plan(row: dict, model, framework):
    """The row's plan as the course writes it, with the choices the source leaves open made as stated in
    ``replay_published_runs``; or a reason it cannot be written."""
    from .parallelism import ParallelPlan

    t, p, c, e, d = (int(row[k]) for k in ("tp", "pp", "cp", "ep", "dp"))
    if np.isnan(row["global_batch"]):
        return None, "global batch not stated"
    b = 1 if np.isnan(row["micro_batch"]) else int(row["micro_batch"])
    if np.isnan(row["micro_batch"]) and p == 1 and row["framework"] in _PIPELINED_FSDP_FRAMEWORKS:
        b = int(row["global_batch"]) // d  # torchtitan without a pipeline: one micro-batch, no accumulation
    m, rest = divmod(int(row["global_batch"]), b * d)
    if rest or m < 1:
        return None, "global batch is not micro-batch × data-parallel × accumulation"
    v = 1 if p == 1 else (min(8, -(-model.layers // p)) if np.isnan(row["vp"]) else int(row["vp"]))
    fsdp = 0 if np.isnan(row["fsdp"]) else int(row["fsdp"])
    zero = 3 if fsdp > 1 or row["framework"] in _PIPELINED_FSDP_FRAMEWORKS else 1
    schedule = "interleaved" if v > 1 else "1f1b"
    # Context parallelism as each stack runs it: Megatron-Core's default cp_comm_type "p2p" (the ring, transformer_
    # config.py), torchtitan's ring attention; Llama 3 all-gathers K and V (arXiv 2407.21783 §3.3.2).
    kind = "all_gather" if row["framework"] == "meta-4d" else "ring"
    try:
        plan = ParallelPlan(
            data_parallel=d, tensor_parallel=t, pipeline_parallel=p, context_parallel=c, expert_parallel=e,
            zero_stage=zero, micro_batch=b, grad_accum_steps=m, sequence_parallel=t > 1, attention="flash",
            schedule=schedule, virtual_stages=v, context_parallel_kind=kind,
        )  # fmt: skip
    except ValueError as error:
        return None, f"plan not representable ({str(error).split(':')[0]})"
    if framework.refusal(plan):
        return None, f"plan not run by {framework.short_name}"
    return plan, ""


def _recompute(row: dict) -> str:
    """The row's recomputation: as published, else none (Megatron-Core's default, ``--recompute-granularity`` unset;
    NeMo's and Megatron-Bridge's performance recipes recompute only where their tables say)."""
    stated = row["recompute"].split(" ")[0]
    return stated if stated in ("none", "selective", "full") else "none"


@dataclass(frozen=True)
class _PreparedRun:
    """One published run as the step model replays it, whatever the calibration: its measured tokens/s per GPU and
    its model, plan, cluster and framework (``plan`` None where it cannot be replayed, with ``reason``)."""

    measured: float
    model: Any = None  # a parallelism.TransformerModel
    plan: Any = None  # a parallelism.ParallelPlan
    cluster: Any = None  # a hardware.Cluster
    framework: Any = None  # a parallelism.Framework
    reason: str = ""

    def predicted_tokens_per_s_per_gpu(self, calibration) -> float:
        """The step model's tokens/s per GPU for this run with ``calibration`` (its framework replacing the
        calibration's), NaN for a run that cannot be replayed."""
        from dataclasses import replace

        from . import budget

        if self.plan is None:
            return np.nan
        step = budget.step_time(
            self.model, self.plan, self.cluster, calibration=replace(calibration, framework=self.framework)
        )
        return self.plan.global_batch * self.model.seq_len / step.total_s / self.plan.devices


def _prepare_row(row: dict, models) -> _PreparedRun:
    """One run of the CSV as ``replay_published_runs`` replays it, or why it cannot be."""
    from dataclasses import replace

    from . import parallelism

    base = models.get(row["model"])
    if base is None:
        return _PreparedRun(np.nan, reason="model not representable")
    if row["gpu"] not in _H100_SXM:
        return _PreparedRun(np.nan, reason=f"device {row['gpu']} is not the reference H100 SXM 80 GB")
    model = replace(base, seq_len=int(row["seq_len"]))
    measured = (
        row["tokens_per_s_per_gpu"]
        if not np.isnan(row["tokens_per_s_per_gpu"])
        else row["flops_per_s_per_gpu"] / _counted_flops_per_token(model, row["source"])
    )
    framework, reason = _framework(row, int(row["pp"]))
    if framework is None:
        return _PreparedRun(measured, reason=reason)
    plan, reason = _plan(row, model, framework)
    if plan is None:
        return _PreparedRun(measured, reason=reason)
    cluster = replace(parallelism.REFERENCE_CLUSTER, nodes=max(1, int(row["gpus"]) // 8))
    return _PreparedRun(measured, model, plan.replace(recompute=_recompute(row)), cluster, framework)


def _prepare_runs(runs: PublishedRuns, models) -> list[_PreparedRun]:
    return [
        _prepare_row({name: column[i].item() for name, column in runs.columns.items()}, models)
        for i in range(len(runs))
    ]


def replay_published_runs(runs: PublishedRuns | None = None, calibration=None, models=None) -> PublishedReplay:
    """Replay every published run through the calibrated step model on the reference cluster (as many DGX H100
    nodes as the run used), as its framework runs it (``_framework``: Megatron-Core for NeMo and Megatron-Bridge,
    FSDP2 for torchtitan, with the FP8 recipe of an FP8 row), and predict its tokens/s per GPU.

    ``calibration`` (default ``parallelism.REFERENCE_CALIBRATION``) supplies the constants and links; the row's
    framework replaces its framework. ``models`` maps the CSV's model names to presets (default
    ``parallelism.PUBLISHED_RUN_MODELS``). Choices a source leaves open, made here once for every row: micro-batch 1
    (torchtitan without a pipeline: the whole local batch), ZeRO-1 (Megatron's distributed optimizer) unless the row
    states FSDP (ZeRO-3), sequence parallelism with t > 1, FlashAttention, ring context parallelism (Llama 3's
    all-gather), v = min(8, ⌈l/p⌉) for an interleaved schedule of unstated v, and no recomputation unless stated
    (``_recompute``). A run refused
    (a model the course cannot represent, an unstated precision, a device other than an H100 SXM, a batch that does
    not divide, a plan the framework does not run) is NaN with its reason.

    >>> replay = replay_published_runs()
    >>> print(sorted(replay.refused)[0])
    device H100-HBM2e-96GB-500W is not the reference H100 SXM 80 GB
    """
    from . import parallelism

    runs = load_published_runs() if runs is None else runs
    calibration = parallelism.REFERENCE_CALIBRATION if calibration is None else calibration
    models = parallelism.PUBLISHED_RUN_MODELS if models is None else models
    prepared = _prepare_runs(runs, models)
    return PublishedReplay(
        runs,
        np.array([run.predicted_tokens_per_s_per_gpu(calibration) for run in prepared], dtype=float),
        np.array([run.measured for run in prepared], dtype=float),
        np.array([run.reason for run in prepared], dtype=object),
        tuple(run.plan for run in prepared),
    )


# The grid of the reference's step-time fit, (gemm_efficiency, layer_overhead_s): efficiencies from 40 % of peak to
# 86 % (above the 80 % the best cuBLAS bf16 GEMM reaches on an H100, ``validation.H100_BEST_GEMM_SHARE``), fixed costs
# from none to 3 ms per layer and micro-batch. The optimum must lie inside it (a test checks it is not on an edge).
REFERENCE_FIT_GRID = (
    tuple(round(0.40 + 0.02 * k, 2) for k in range(24)),
    tuple(round(1e-4 * k, 5) for k in range(31)),
)


def reference_fit_surface(runs: PublishedRuns | None = None, models=None) -> np.ndarray:
    """The reference fit's objective over ``REFERENCE_FIT_GRID``: for each (gemm_efficiency, layer_overhead_s) the
    mean |log(predicted / measured tokens/s)| over the fitted rows (``FIT_FAMILIES``) the model replays, the rest
    of ``parallelism.REFERENCE_CALIBRATION`` as it is. Rows: efficiencies; columns: overheads.

    The mean, not the median the Playbook's fit takes over its 56 runs: 10 of the 23 fitted rows are one
    configuration (DGX Cloud's GPT-3 175B) at five scales, and the median jumps between such clusters along the
    valley where efficiency and the fixed cost trade (from 0.56 to 0.82 of peak); the mean's valley has one minimum.
    """
    from dataclasses import replace

    from .parallelism import PUBLISHED_RUN_MODELS, REFERENCE_CALIBRATION

    runs = load_published_runs() if runs is None else runs
    # Each run's model, plan and cluster do not depend on the calibration: prepared once for the whole grid.
    fitted = [
        run
        for run in _prepare_runs(runs.subset(~runs.held_out), PUBLISHED_RUN_MODELS if models is None else models)
        if run.plan is not None
    ]
    measured = np.array([run.measured for run in fitted])
    surface = np.empty((len(REFERENCE_FIT_GRID[0]), len(REFERENCE_FIT_GRID[1])))
    for i, efficiency in enumerate(REFERENCE_FIT_GRID[0]):
        for j, overhead in enumerate(REFERENCE_FIT_GRID[1]):
            calibration = replace(REFERENCE_CALIBRATION, gemm_efficiency=efficiency, layer_overhead_s=overhead)
            predicted = np.array([run.predicted_tokens_per_s_per_gpu(calibration) for run in fitted])
            surface[i, j] = np.mean(np.abs(np.log(predicted / measured)))
    return surface


def fit_reference_calibration(runs: PublishedRuns | None = None, models=None, surface=None):
    """(gemm_efficiency, layer_overhead_s): the minimum of ``reference_fit_surface`` (pass ``surface`` if already
    computed), fitted on the ``FIT_FAMILIES`` rows only; never on a held-out row."""
    surface = reference_fit_surface(runs, models) if surface is None else np.asarray(surface)
    i, j = np.unravel_index(np.argmin(surface), surface.shape)
    return REFERENCE_FIT_GRID[0][i], REFERENCE_FIT_GRID[1][j]


def reference_step_time_band(replay: PublishedReplay) -> tuple:
    """The step-time band of the held-out runs: ((1, p10, p90),), the 10th and 90th percentiles of measured /
    predicted step time (= predicted / measured tokens/s) over the held-out runs ``replay`` replayed, rounded to 3
    decimals (``Calibration.step_time_band``'s form; one row for every model-parallel size)."""
    held = replay.runs.held_out & replay.replayed
    ratio = replay.predicted_tokens_per_s_per_gpu[held] / replay.measured_tokens_per_s_per_gpu[held]
    low, high = np.percentile(ratio, [10, 90])
    return ((1, round(float(low), 3), round(float(high), 3)),)


# Issue 37's targets for the published runs, judged on the held-out rows the model replays, by kind: (key, label,
# rows of that kind, target as printed, test). A run may be of several kinds (an FP8 context-parallel run).
def _kinds(runs: PublishedRuns) -> dict:
    bf16 = runs["precision"] == "bf16"
    return {
        "dense": bf16 & ~runs.is_context_parallel & ~runs.is_moe,
        "fp8": runs.is_fp8,
        "context_parallel": runs.is_context_parallel,
        "moe": runs.is_moe,
    }


KIND_LABELS = {
    "dense": "dense BF16 (no context parallelism, no experts)",
    "fp8": "FP8",
    "context_parallel": "context-parallel",
    "moe": "mixture of experts",
}
MEDIAN_ERROR_TARGET = 0.15


def published_figures(replay: PublishedReplay) -> dict:
    """{kind: (median |tokens/s error|, replayed held-out runs)} for each of ``KIND_LABELS``'s kinds, and "fitted"
    for the fitted rows, over the runs ``replay`` replayed.

    >>> figures = published_figures(replay_published_runs())
    >>> sorted(figures)
    ['context_parallel', 'dense', 'fitted', 'fp8', 'moe']
    """
    runs = replay.runs
    held = runs.held_out & replay.replayed
    out = {
        kind: (replay.median_abs_error(rows & held), int((rows & held).sum())) for kind, rows in _kinds(runs).items()
    }
    fitted = ~runs.held_out & replay.replayed
    out["fitted"] = (replay.median_abs_error(fitted), int(fitted.sum()))
    return out


def published_report(replay: PublishedReplay) -> str:
    """``published_figures`` as ``make validate`` prints them, with the refused runs by reason."""
    figures = published_figures(replay)
    lines = [f"published runs: {len(replay.runs)}; replayed {int(replay.replayed.sum())}; refused: "
             + "; ".join(f"{n} ({reason})" for reason, n in sorted(replay.refused.items()))]  # fmt: skip
    error, n = figures["fitted"]
    lines.append(f"fitted rows ({', '.join(FIT_FAMILIES)}): median |tokens/s error| {error:.1%} over {n} runs")
    for kind, label in KIND_LABELS.items():
        error, n = figures[kind]
        met = "met" if error <= MEDIAN_ERROR_TARGET else "NOT met"
        lines.append(f"held out, {label}: median |tokens/s error| {error:.1%} over {n} runs (target ≤ 15 %: {met})")
    return "\n".join(lines)
