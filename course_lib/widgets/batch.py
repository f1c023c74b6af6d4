"""Lab 2, global batch: which parallel axes multiply the examples of a step, and which only add devices.

``global_batch_lab()`` returns a ``GlobalBatchLab``. Its controls (``CONTROLS``) are ``micro_batch`` (b, 1–64
examples), ``grad_accum_steps`` (N_acc, 1–128), ``data_parallel`` (d, 1–1024 replicas), ``tensor_parallel`` (t,
1–64), ``pipeline_parallel`` (p, 1–64 stages) and ``seq_len`` (128–131072 tokens). Every number comes from one call,
``parallelism.global_batch_report(b, N_acc, d, seq_len, t, p)``: ``compute`` returns its ``GlobalBatchReport``,
which alone the figure and the summary read and ``lab.typed_result`` holds. ``lab.result`` shows it as a plain dict:

- ``global_batch`` = ``parallelism.global_batch(b, N_acc, d)`` = b × N_acc × d examples per optimizer step;
- ``tokens_per_step`` = global_batch × seq_len;
- ``devices`` = ``ParallelPlan(...).devices`` = d × t × p;
- ``examples_per_replica_per_step`` = ``global_batch(b, N_acc, 1)`` = b × N_acc: what each data-parallel replica, and
  so each of its t × p devices, works through in one step; ``devices_per_replica`` = t × p;
- the six control values, under their names.

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

from .. import parallelism, units
from ..viz.global_batch import GlobalBatchFigure, count_of
from ._base import ControlSpec, Lab, control_defaults

__all__ = [
    "global_batch_lab",
    "GlobalBatchLab",
    "CONTROLS",
    "DEFAULTS",
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


def _tokens_label(value) -> str:
    return f"{value} tokens"


# The card's example (lesson 03): 8 examples per micro-batch × 16 accumulation steps × 64 replicas = 8192, with
# t = p = 1 and 2048-token sequences. A value between a slider's stops is kept (added to them).
CONTROLS = (
    ControlSpec("micro_batch", "micro-batch b", range(1, 65), 8, kind="int slider"),
    ControlSpec("grad_accum_steps", "accumulation N_acc", range(1, 129), 16, kind="int slider"),
    ControlSpec("data_parallel", "data parallel d", DATA_PARALLEL_SIZES, 64, kind="open slider"),
    ControlSpec("tensor_parallel", "tensor parallel t", PARALLEL_SIZES, 1, kind="open slider"),
    ControlSpec("pipeline_parallel", "pipeline parallel p", PARALLEL_SIZES, 1, kind="open slider"),
    ControlSpec("seq_len", "sequence length s", SEQ_LENS, 2048, _tokens_label, kind="open slider"),
)
DEFAULTS = control_defaults(CONTROLS)

SHOWN_REPLICAS = 8  # rows of the device picture
SHOWN_DEVICES_PER_REPLICA = 16  # columns of the device picture
# Devices ≤ 1024·64·64 ≈ 4.2 million, examples ≤ 64·128·1024 ≈ 8.4 million; room above for the totals.
_BAR_LIMITS = (1.0, 4e7)


class GlobalBatchLab(Lab):
    """The global batch lab (see the module docstring); build it with ``global_batch_lab(**initial)``."""

    CONTROLS = CONTROLS

    def __init__(self, **initial):
        controls = self.build_controls(self.start_values(initial))
        super().__init__("Global batch: which splits multiply the examples", controls, self._build_figure())

    # --- the four methods of a lab --------------------------------------------------------------------------

    def compute(self, values: dict) -> parallelism.GlobalBatchReport:
        """One ``parallelism.global_batch_report`` for the controls' sizes."""
        return parallelism.global_batch_report(
            values["micro_batch"],
            values["grad_accum_steps"],
            values["data_parallel"],
            values["seq_len"],
            values["tensor_parallel"],
            values["pipeline_parallel"],
        )

    def result_dict(self, r: parallelism.GlobalBatchReport) -> dict:
        """``result``: the report's counts, then the six control values."""
        plan = r.plan
        return {
            "global_batch": r.global_batch,
            "tokens_per_step": r.tokens_per_step,
            "devices": r.devices,
            "examples_per_replica_per_step": r.examples_per_replica_per_step,
            "devices_per_replica": r.devices_per_replica,
            "micro_batch": plan.micro_batch,
            "grad_accum_steps": plan.grad_accum_steps,
            "data_parallel": plan.data_parallel,
            "tensor_parallel": plan.tensor_parallel,
            "pipeline_parallel": plan.pipeline_parallel,
            "seq_len": r.seq_len,
        }

    def summary_html(self, r: parallelism.GlobalBatchReport) -> str:
        count = units.format_count
        plan = r.plan
        b, acc, d = plan.micro_batch, plan.grad_accum_steps, plan.data_parallel
        t, p = plan.tensor_parallel, plan.pipeline_parallel
        return (
            f"<b>global batch B<sub>global</sub> = b × N_acc × d = {b} × {acc} × {d} = "
            f"{count(r.global_batch)} examples</b> "
            f"= {count(r.tokens_per_step)} tokens per step at {r.seq_len} tokens each"
            f"<br><b>devices = d × t × p = {d} × {t} × {p} = {count(r.devices)}</b>: in each replica, t × p = "
            f"{count_of(r.devices_per_replica, 'device')} "
            f"{'works' if r.devices_per_replica == 1 else 'work together'} on the same "
            f"{count(r.examples_per_replica_per_step)} examples (b × N_acc), so t and p add devices, not examples"
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

    def draw(self, r: parallelism.GlobalBatchReport) -> None:
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
