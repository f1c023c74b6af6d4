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
the examples. The figure, ``viz.global_batch.GlobalBatchFigure``, shows both: on the left the devices, one row per
data-parallel replica (t × p cells, shaded by pipeline stage) with the range of examples each replica works on; on
the right two log-scale bars built from their factors, devices = d · t · p and examples = b · N_acc · d, with the
shared factor d in the same colour.

>>> from course_lib import units
>>> lab = global_batch_lab()
>>> lab.result["global_batch"], lab.result["devices"], units.format_count(lab.result["tokens_per_step"])
(8192, 64, '16.8 million')
>>> lab.controls["tensor_parallel"].value = 8
>>> lab.result["global_batch"], lab.result["devices"]
(8192, 512)
"""

from __future__ import annotations

from matplotlib.figure import Figure

from .. import _check, parallelism, units
from ..viz.global_batch import GlobalBatchFigure, count_of
from ._base import Lab, initial_values, int_slider, stops_with, unit_slider

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


def _tokens_label(value) -> str:
    return f"{value} tokens"


class GlobalBatchLab(Lab):
    """The global batch lab (see the module docstring); build it with ``global_batch_lab(**initial)``."""

    def __init__(self, **initial):
        start = initial_values(DEFAULTS, initial, "global batch lab")
        for name, (low, high) in LIMITS.items():
            value = _check.count(name, start[name])
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
            f"<b>global batch B<sub>global</sub> = b × N_acc × d = {b} × {acc} × {d} = "
            f"{count(r['global_batch'])} examples</b> "
            f"= {count(r['tokens_per_step'])} tokens per step at {r['seq_len']} tokens each"
            f"<br><b>devices = d × t × p = {d} × {t} × {p} = {count(r['devices'])}</b>: in each replica, t × p = "
            f"{count_of(r['devices_per_replica'], 'device')} "
            f"{'works' if r['devices_per_replica'] == 1 else 'work together'} on the same "
            f"{count(r['examples_per_replica_per_step'])} examples (b × N_acc), so t and p add devices, not examples"
        )

    # --- the figure: built once ---------------------------------------------------------------------------

    def _build_figure(self) -> Figure:
        fig = Figure(figsize=(9, 4), dpi=self.dpi)
        self.batch_figure = GlobalBatchFigure(
            fig.add_axes((0.0, 0.0, 0.6, 1.0)),
            fig.add_axes((0.66, 0.2, 0.32, 0.68)),
            SHOWN_REPLICAS,
            SHOWN_DEVICES_PER_REPLICA,
            _BAR_LIMITS,
        )
        self.enable_partial_redraw(fig, self.batch_figure.animated)
        return fig

    def draw(self, r: dict) -> None:
        self.batch_figure.update(r)


def global_batch_lab(**initial) -> GlobalBatchLab:
    """The global batch lab; ``initial`` sets controls by name (defaults: the card's b = 8, N_acc = 16, d = 64, with
    t = p = 1 and 2048-token sequences). A value off a slider's stops is added to them; one outside its range raises
    ValueError.

    >>> lab = global_batch_lab(tensor_parallel=8, pipeline_parallel=4)
    >>> lab.result["global_batch"], lab.result["devices"], lab.result["devices_per_replica"]
    (8192, 2048, 32)
    """
    return GlobalBatchLab(**initial)
