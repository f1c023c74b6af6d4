"""Lab 6 · serving a model: memory per device, time to first token, time per output token and throughput.

Every number comes from one call, ``serving.serving_report``, for one replica of t·p devices (tensor ranks innermost,
8 GPUs per node, as many nodes as t·p needs): ``serving_memory`` (weights, KV cache, one decode step's activations)
at the context the last token sees (prompt + generated tokens), ``prefill`` (time to first token) and
``decode_step`` (time per output token, at that same context: the slowest step of the request; and over the batch
sizes of the curve). ``compute`` returns that ``ServingReport``, which alone the figure and the summary read and
``lab.typed_result`` holds; ``lab.result`` shows it as a plain dict. The figure puts
``viz.serving.LatencyThroughputFigure`` (decode over every batch size that fits, the current batch marked) beside
``viz.serving.DecodeBreakdownFigure`` (where one token's time goes).

The controls (``CONTROLS``) are ``model``, ``device``, ``tensor_parallel``, ``pipeline_parallel``, ``sequences``,
``prompt_len`` and ``generated_tokens``. Only valid replicas are reachable: t takes the divisors of the model's heads
that divide its KV heads or are a multiple of them (≤ 64), p the divisors of its layers (≤ 16); changing the model
moves both to the nearest valid value (their specs' stops depend on the model: ``Lab.sync_choices``).

>>> from course_lib import units
>>> lab = serving_lab()
>>> units.format_bytes(lab.result["kv_cache_bytes"]), units.format_time(lab.result["time_per_output_token_s"])
('3.36 GB', '8.74 ms')
>>> lab.controls["model"].value = "Llama 3.2 3B"   # 24 heads, 8 KV heads
>>> lab.controls["tensor_parallel"].options
(('1', 1), ('2', 2), ('4', 4), ('8', 8), ('24', 24))
"""

from __future__ import annotations

import math

from matplotlib.figure import Figure

from .. import hardware, parallelism, serving, units
from ..viz.fast import Panel, PartialRedraw
from ..viz.serving import DecodeBreakdownFigure, LatencyThroughputFigure
from ..viz.style import COLORS, FIT_COLOR
from ._base import ControlSpec, Lab, control_defaults, model_split_specs

__all__ = [
    "ServingLab",
    "serving_lab",
    "CONTROLS",
    "DEFAULTS",
    "MODELS",
    "NODES",
    "SEQUENCES",
    "PROMPT_LENGTHS",
    "GENERATED_TOKENS",
    "MAX_TENSOR_PARALLEL",
    "MAX_PIPELINE_PARALLEL",
    "COMPUTE_EFFICIENCY",
    "CURVE_POINTS",
    "tensor_parallel_options",
    "pipeline_parallel_options",
    "replica_cluster",
]

# The Llama 3 family (grouped-query attention, 8 KV heads) and GPT-3 175B (one KV head per query head).
MODELS = {**parallelism.LLAMA_MODELS, parallelism.GPT3_175B.name: parallelism.GPT3_175B}
# One 8-GPU node of each kind; a replica of t·p GPUs spans ⌈t·p/8⌉ of them.
NODES = {node.accelerator.name: node for node in hardware.NODE_TYPES.values()}
SEQUENCES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
PROMPT_LENGTHS = tuple(2**k for k in range(7, 18))  # 128 … 131,072 tokens (Llama 3.1's context)
GENERATED_TOKENS = tuple(2**k for k in range(0, 15))  # 1 … 16,384 tokens
MAX_TENSOR_PARALLEL = 64
MAX_PIPELINE_PARALLEL = 16
COMPUTE_EFFICIENCY = 0.5  # prefill's share of peak FLOP/s (serving.prefill's default)
MISS_COLOR = COLORS["exposed"]
CURVE_POINTS = 80  # batch sizes drawn on the latency–throughput curve (log-spaced up to the largest that fits)


def tensor_parallel_options(model: parallelism.TransformerModel) -> tuple:
    """t values for ``model``: divisors of its heads that divide its KV heads or are multiples of them, ≤ 64.

    >>> from course_lib import parallelism
    >>> tensor_parallel_options(parallelism.LLAMA3_70B)
    (1, 2, 4, 8, 16, 32, 64)
    """
    return tuple(t for t in range(1, MAX_TENSOR_PARALLEL + 1) if serving.serves_with_tensor_parallel(model, t))


def pipeline_parallel_options(model: parallelism.TransformerModel) -> tuple:
    """p values for ``model``: divisors of its layers, ≤ 16.

    >>> from course_lib import parallelism
    >>> pipeline_parallel_options(parallelism.LLAMA3_405B)
    (1, 2, 3, 6, 7, 9, 14)
    """
    return tuple(
        p for p in range(1, MAX_PIPELINE_PARALLEL + 1) if parallelism.splits_evenly(model, pipeline_parallel=p)
    )


def replica_cluster(device: str, devices: int) -> hardware.Cluster:
    """The nodes of ``device`` (an accelerator name in ``NODES``) one replica of ``devices`` GPUs spans.

    >>> replica_cluster("H100 SXM 80GB", 16).nodes
    2
    """
    node = NODES[device]
    nodes = math.ceil(devices / node.devices_per_node)
    return hardware.Cluster(
        f"{nodes} × {node.name}",
        node.accelerator,
        node.devices_per_node,
        nodes,
        node.intra_node_link,
        node.inter_node_link,
        node.source,
    )


def _tokens(n) -> str:
    return f"{units.format_count(n)} tokens"


# Llama 3.1 70B on one H100 node (t = 8), a batch of 8 sequences of 1024 + 256 tokens. t and p run over the
# model's divisors.
CONTROLS = (
    ControlSpec("model", "model", tuple(MODELS), parallelism.LLAMA3_70B.name, kind="dropdown"),
    ControlSpec("device", "device", tuple(NODES), hardware.H100.name, kind="dropdown"),
    *model_split_specs(MODELS, tensor_parallel_options, pipeline_parallel_options, 8, 1),
    ControlSpec("sequences", "batch b (sequences)", SEQUENCES, 8),
    ControlSpec("prompt_len", "prompt length", PROMPT_LENGTHS, 1024, _tokens),
    ControlSpec("generated_tokens", "generated tokens", GENERATED_TOKENS, 256, _tokens),
)
DEFAULTS = control_defaults(CONTROLS)


class ServingLab(Lab):
    """One serving replica's memory, prefill and decode (see the module docstring)."""

    CONTROLS = CONTROLS  # the module's, above

    def __init__(self, **initial):
        controls = self.build_controls(self.start_values(initial))
        self._build_figure()
        super().__init__("Lab 6 · Serving: prefill, decode and the KV cache", controls, self.figure)

    # ---- the four parts of a lab ---------------------------------------------------------------------------------

    def compute(self, values: dict) -> serving.ServingReport:
        """One ``serving.serving_report`` for the replica of t·p devices the controls describe."""
        t, p = values["tensor_parallel"], values["pipeline_parallel"]
        return serving.serving_report(
            MODELS[values["model"]],
            replica_cluster(values["device"], t * p),
            t,
            p,
            values["sequences"],
            values["prompt_len"],
            values["generated_tokens"],
            COMPUTE_EFFICIENCY,
            CURVE_POINTS,
        )

    def result_dict(self, r: serving.ServingReport) -> dict:
        """``result``: the report's numbers as plain values (the decode step's at the batch, not the curve)."""
        memory, step, model = r.memory, r.step, r.model
        return {
            "model": model.name,
            "device": r.cluster.accelerator.name,
            "tensor_parallel": r.tensor_parallel,
            "pipeline_parallel": r.pipeline_parallel,
            "devices": r.devices,
            "nodes": r.cluster.nodes,
            "sequences": r.sequences,
            "prompt_len": r.prompt_len,
            "generated_tokens": r.generated_tokens,
            "context_len": r.context_len,
            "kv_heads": model.kv_heads,
            "weights_bytes": float(memory.weights),
            "kv_cache_bytes_per_device": float(memory.kv_cache),
            "activations_bytes": float(memory.activations),
            "total_bytes": float(memory.total),
            "capacity_bytes": r.capacity_bytes,
            "fits": r.fits,
            "headroom_bytes": r.headroom_bytes,
            "max_sequences": r.max_sequences,
            "kv_cache_bytes": r.kv_cache_bytes,
            "kv_cache_bytes_per_sequence_token": r.kv_cache_bytes_per_sequence_token,
            "prefill_compute_s": float(r.prefill.compute_s),
            "prefill_all_reduce_s": float(r.prefill.all_reduce_s),
            "time_to_first_token_s": float(r.prefill.time_to_first_token_s),
            **{
                name: float(getattr(step, name))
                for name in (
                    "weight_read_s",
                    "matmul_compute_s",
                    "kv_read_s",
                    "attention_compute_s",
                    "all_reduce_latency_s",
                    "all_reduce_bandwidth_s",
                    "pipeline_hop_s",
                    "time_per_output_token_s",
                )
            },
            "bound": step.bound,
            "compute_bound_sequences": r.compute_bound_sequences,
            "tokens_per_s_per_replica": float(step.tokens_per_s_per_replica),
            "tokens_per_s_per_device": float(step.tokens_per_s_per_device),
            "request_time_s": r.request_time_s,
        }

    def _build_figure(self) -> None:
        figure = Figure(figsize=(11.5, 4.2), dpi=self.dpi)
        figure.patch.set_facecolor("white")
        self.figure = figure
        # Axis limits snap to decades (the curve) and to 1, 2, 5 × 10^k (the bar), so most moves keep them: the
        # figure is then redrawn from cached pictures of each panel's axes (see render).
        self.curve_figure = LatencyThroughputFigure(figure.add_axes((0.07, 0.13, 0.4, 0.77)), snap=True)
        self.breakdown_figure = DecodeBreakdownFigure(figure.add_axes((0.54, 0.5, 0.42, 0.3)), snap=True)

    def draw(self, r: serving.ServingReport) -> None:
        self.curve_figure.update((r.curve, r.step))
        self.breakdown_figure.update(r.step)

    def _axis_limits(self):
        """(curve's x and y limits, the bar's upper limit): the static part of each panel."""
        ax = self.curve_figure.ax
        return (tuple(ax.get_xlim()) + tuple(ax.get_ylim()), float(self.breakdown_figure.ax.get_xlim()[1]))

    def _set_limits(self, limits, panel) -> None:
        if self._axis_limits()[panel] == limits[panel]:  # as the figures' update left them (the usual case)
            return
        if panel == 0:
            self.curve_figure.ax.set_xlim(*limits[0][:2])
            self.curve_figure.ax.set_ylim(*limits[0][2:])
        else:
            self.breakdown_figure.ax.set_xlim(0, limits[1])

    def render(self) -> None:
        """Draw the animated artists over a picture of each panel's axes at their current limits. A panel's picture
        is put together from a picture of each of its axes' x and y axis, drawn once per limits in this process
        (shared by every serving lab), so new limits cost the drawing of one axis, not of the whole panel."""
        limits = self._axis_limits()
        if self._redraw is None:
            panels = [
                Panel(
                    (0.0, 0.5),
                    (self.curve_figure.ax,),
                    lambda e: e[0],
                    lambda e: self._set_limits(e, 0),
                    (limits,),
                    layered=True,
                ),
                Panel(
                    (0.5, 1.0),
                    (self.breakdown_figure.ax,),
                    lambda e: e[1],
                    lambda e: self._set_limits(e, 1),
                    (limits,),
                    layered=True,
                ),
            ]
            animated = [*self.curve_figure.animated, *self.breakdown_figure.animated]
            self._redraw = PartialRedraw(type(self).__qualname__, self.figure, animated, panels)
        self._redraw.set_static_state(limits)
        super().render()

    def summary_html(self, r: serving.ServingReport) -> str:
        b, s = units.format_bytes, units.format_time
        if r.fits:
            verdict = f"<b style='color:{FIT_COLOR}'>fits</b>, {b(r.headroom_bytes)} headroom"
        else:
            verdict = f"<b style='color:{COLORS['exposed']}'>does not fit</b> by {b(-r.headroom_bytes)}"
        room = f"up to {r.max_sequences} sequences fit" if r.max_sequences else "not even one sequence fits"
        memory, step, nodes = r.memory, r.step, r.cluster.nodes
        return (
            f"<b>{r.model.name}</b> ({r.model.kv_heads} KV heads) on t·p = {r.tensor_parallel} · "
            f"{r.pipeline_parallel} = <b>{r.devices}</b> {r.cluster.accelerator.name} "
            f"({nodes} node{'s' if nodes > 1 else ''}), {r.sequences} sequences of "
            f"{units.format_count(r.context_len)} tokens.<br>"
            f"Per device: weights {b(float(memory.weights))} · KV cache {b(float(memory.kv_cache))} "
            f"· activations {b(float(memory.activations))} = <b>{b(float(memory.total))}</b> of "
            f"{b(r.capacity_bytes)}: {verdict} ({room}). KV cache of the batch, whole replica: "
            f"{b(r.kv_cache_bytes)}.<br>"
            f"Time to first token <b>{s(float(r.prefill.time_to_first_token_s))}</b> · time per output token "
            f"<b>{s(float(step.time_per_output_token_s))}</b> ({step.bound}-bound; multiplies compute-bound from "
            f"b ≈ {r.compute_bound_sequences:.0f}) · "
            f"{units.format_count(float(step.tokens_per_s_per_replica))} tokens/s per replica, "
            f"{units.format_count(float(step.tokens_per_s_per_device))} per device · whole request "
            f"{s(r.request_time_s)}.<br>"
            f"<small>Decode is timed at the last token's context (prompt + generated), the slowest step. t takes only "
            f"divisors of the heads that split the KV heads evenly (or copy them); p only divisors of the layers: "
            f"every position is a valid replica.</small>"
        )


def serving_lab(**initial) -> ServingLab:
    """The serving lab; keyword arguments set controls' initial values (``DEFAULTS`` lists the names).

    >>> lab = serving_lab(model="Llama 3.1 8B", tensor_parallel=1, sequences=1, prompt_len=128, generated_tokens=1)
    >>> lab.result["fits"], lab.result["bound"]
    (True, 'memory')
    """
    return ServingLab(**initial)
