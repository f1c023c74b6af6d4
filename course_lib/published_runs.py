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

import numpy as np

from . import _check

__all__ = ["PUBLISHED_RUNS_CSV", "FIT_FAMILIES", "PublishedRuns", "load_published_runs"]

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
