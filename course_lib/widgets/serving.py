"""Lab 7 · serving a model: memory per device, time to first token, time per output token and throughput.

Every number comes from ``course_lib.serving`` for one replica of t·p devices (tensor ranks innermost, 8 GPUs per
node, as many nodes as t·p needs): ``serving_memory`` (weights, KV cache, one decode step's activations) at the
context the last token sees (prompt + generated tokens), ``prefill`` (time to first token) and ``decode_step`` (time
per output token, at that same context: the slowest step of the request). The figure puts
``viz.serving.LatencyThroughputFigure`` (decode over every batch size that fits, the current batch marked) beside
``viz.serving.DecodeBreakdownFigure`` (where one token's time goes).

Only valid replicas are reachable: t takes the divisors of the model's heads that divide its KV heads or are a
multiple of them (≤ 64), p the divisors of its layers (≤ 16); changing the model moves both to the nearest valid
value.

>>> lab = serving_lab()
>>> units.format_bytes(lab.result["kv_cache_bytes"]), units.format_time(lab.result["time_per_output_token_s"])
('3.36 GB', '7.63 ms')
>>> lab.controls["model"].value = "Llama 3.2 3B"   # 24 heads, 8 KV heads
>>> lab.controls["tensor_parallel"].options
(('1', 1), ('2', 2), ('4', 4), ('8', 8), ('24', 24))
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure

from .. import hardware, parallelism, serving, units
from ..viz.fast import Panel, PartialRedraw
from ..viz.serving import DecodeBreakdownFigure, LatencyThroughputFigure
from ..viz.style import COLORS, FIT_COLOR
from ._base import (
    Lab,
    check_choices,
    dropdown,
    initial_values,
    nearest_option,
    option_slider,
    set_options,
    unit_slider,
)

__all__ = [
    "ServingLab",
    "serving_lab",
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
NODES = {
    node.accelerator.name: node for node in (hardware.DGX_A100, hardware.DGX_H100, hardware.DGX_H200, hardware.DGX_B200)
}
DEFAULTS = {
    "model": parallelism.LLAMA3_70B.name,
    "device": hardware.H100.name,
    "tensor_parallel": 8,
    "pipeline_parallel": 1,
    "sequences": 8,
    "prompt_len": 1024,
    "generated_tokens": 256,
}
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

    >>> tensor_parallel_options(parallelism.LLAMA3_70B)
    (1, 2, 4, 8, 16, 32, 64)
    """
    return tuple(t for t in range(1, MAX_TENSOR_PARALLEL + 1) if serving.serves_with_tensor_parallel(model, t))


def pipeline_parallel_options(model: parallelism.TransformerModel) -> tuple:
    """p values for ``model``: divisors of its layers, ≤ 16.

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


class ServingLab(Lab):
    """One serving replica's memory, prefill and decode (see the module docstring)."""

    def __init__(self, **initial):
        values = initial_values(DEFAULTS, initial, "serving lab")
        self._check_initial(values)
        model = MODELS[values["model"]]
        controls = {
            "model": dropdown("model", MODELS, values["model"]),
            "device": dropdown("device", NODES, values["device"]),
            "tensor_parallel": option_slider(
                "tensor parallel t", tensor_parallel_options(model), values["tensor_parallel"]
            ),
            "pipeline_parallel": option_slider(
                "pipeline parallel p", pipeline_parallel_options(model), values["pipeline_parallel"]
            ),
            "sequences": option_slider("batch b (sequences)", SEQUENCES, values["sequences"]),
            "prompt_len": unit_slider("prompt length", PROMPT_LENGTHS, values["prompt_len"], _tokens),
            "generated_tokens": unit_slider("generated tokens", GENERATED_TOKENS, values["generated_tokens"], _tokens),
        }
        self._build_figure()
        super().__init__("Lab 7 · Serving: prefill, decode and the KV cache", controls, self.figure)

    @staticmethod
    def _check_initial(values):
        if values["model"] not in MODELS:
            raise ValueError(f"model must be one of {list(MODELS)}, got {values['model']!r}")
        if values["device"] not in NODES:
            raise ValueError(f"device must be one of {list(NODES)}, got {values['device']!r}")
        model = MODELS[values["model"]]
        allowed = {
            "tensor_parallel": tensor_parallel_options(model),
            "pipeline_parallel": pipeline_parallel_options(model),
            "sequences": SEQUENCES,
            "prompt_len": PROMPT_LENGTHS,
            "generated_tokens": GENERATED_TOKENS,
        }
        check_choices(values, allowed, f" (for {model.name})")

    # ---- dependent options --------------------------------------------------------------------------------------

    def sync_controls(self, changed) -> None:
        if changed == "model":  # t and p run over the new model's divisors
            model = MODELS[self.controls["model"].value]
            for name, options in (
                ("tensor_parallel", tensor_parallel_options(model)),
                ("pipeline_parallel", pipeline_parallel_options(model)),
            ):
                set_options(self.controls[name], options, nearest_option(options, self.controls[name].value))

    # ---- the three parts of a lab ---------------------------------------------------------------------------------

    def compute(self, values: dict) -> dict:
        model = MODELS[values["model"]]
        t, p, b = values["tensor_parallel"], values["pipeline_parallel"], values["sequences"]
        prompt, generated = values["prompt_len"], values["generated_tokens"]
        context = prompt + generated  # the cache the last token reads
        cluster = replica_cluster(values["device"], t * p)
        device = cluster.accelerator
        memory = serving.serving_memory(model, t, p, b, context)
        largest = serving.max_sequences_that_fit(model, device, t, p, context)
        pre = serving.prefill(model, cluster, t, p, prompt, b, COMPUTE_EFFICIENCY)
        step = serving.decode_step(model, cluster, t, p, b, context)
        batches = np.unique(np.geomspace(1, max(largest, 1), CURVE_POINTS).round().astype(np.int64))
        self.step, self.curve = step, serving.decode_step(model, cluster, t, p, batches, context)
        capacity = float(device.hbm_capacity_bytes)
        total = float(memory.total)
        ttft, tpot = float(pre.time_to_first_token_s), float(step.time_per_output_token_s)
        return {
            "model": model.name,
            "device": device.name,
            "tensor_parallel": t,
            "pipeline_parallel": p,
            "devices": t * p,
            "nodes": cluster.nodes,
            "sequences": b,
            "prompt_len": prompt,
            "generated_tokens": generated,
            "context_len": context,
            "kv_heads": model.kv_heads,
            "weights_bytes": float(memory.weights),
            "kv_cache_bytes_per_device": float(memory.kv_cache),
            "activations_bytes": float(memory.activations),
            "total_bytes": total,
            "capacity_bytes": capacity,
            "fits": bool(total <= capacity),
            "headroom_bytes": capacity - total,
            "max_sequences": int(largest),
            "kv_cache_bytes": float(serving.kv_cache_bytes(model.layers, model.kv_heads, model.head_dim, context, b)),
            "kv_cache_bytes_per_sequence_token": float(
                serving.kv_cache_bytes(model.layers, model.kv_heads, model.head_dim, 1, 1)
            ),
            "prefill_compute_s": float(pre.compute_s),
            "prefill_all_reduce_s": float(pre.all_reduce_s),
            "time_to_first_token_s": ttft,
            "weight_read_s": float(step.weight_read_s),
            "matmul_compute_s": float(step.matmul_compute_s),
            "kv_read_s": float(step.kv_read_s),
            "attention_compute_s": float(step.attention_compute_s),
            "all_reduce_latency_s": float(step.all_reduce_latency_s),
            "all_reduce_bandwidth_s": float(step.all_reduce_bandwidth_s),
            "pipeline_hop_s": float(step.pipeline_hop_s),
            "time_per_output_token_s": tpot,
            "bound": step.bound,
            "compute_bound_sequences": float(
                serving.decode_compute_bound_sequences(device.peak("bf16"), device.hbm_bandwidth_bytes_per_s)
            ),
            "tokens_per_s_per_replica": float(step.tokens_per_s_per_replica),
            "tokens_per_s_per_device": float(step.tokens_per_s_per_device),
            # The first token comes from the prefill, the other g − 1 from decode steps (each at most tpot).
            "request_time_s": ttft + (generated - 1) * tpot,
        }

    def _build_figure(self) -> None:
        figure = Figure(figsize=(11.5, 4.2), dpi=self.dpi)
        figure.patch.set_facecolor("white")
        self.figure = figure
        # Axis limits snap to decades (the curve) and to 1, 2, 5 × 10^k (the bar), so most moves keep them: the
        # figure is then redrawn from cached pictures of each panel's axes (see render).
        self.curve_figure = LatencyThroughputFigure(figure.add_axes((0.07, 0.13, 0.4, 0.77)), snap=True)
        self.breakdown_figure = DecodeBreakdownFigure(figure.add_axes((0.54, 0.5, 0.44, 0.3)), snap=True)

    def draw(self, _result: dict) -> None:
        self.curve_figure.update((self.curve, self.step))
        self.breakdown_figure.update(self.step)

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

    def summary_html(self, result: dict) -> str:
        b, s = units.format_bytes, units.format_time
        if result["fits"]:
            verdict = f"<b style='color:{FIT_COLOR}'>fits</b>, {b(result['headroom_bytes'])} headroom"
        else:
            verdict = f"<b style='color:{COLORS['exposed']}'>does not fit</b> by {b(-result['headroom_bytes'])}"
        largest = result["max_sequences"]
        room = f"up to {largest} sequences fit" if largest else "not even one sequence fits"
        return (
            f"<b>{result['model']}</b> ({result['kv_heads']} KV heads) on t·p = {result['tensor_parallel']} · "
            f"{result['pipeline_parallel']} = <b>{result['devices']}</b> {result['device']} "
            f"({result['nodes']} node{'s' if result['nodes'] > 1 else ''}), {result['sequences']} sequences of "
            f"{units.format_count(result['context_len'])} tokens.<br>"
            f"Per device: weights {b(result['weights_bytes'])} · KV cache {b(result['kv_cache_bytes_per_device'])} "
            f"· activations {b(result['activations_bytes'])} = <b>{b(result['total_bytes'])}</b> of "
            f"{b(result['capacity_bytes'])}: {verdict} ({room}). KV cache of the batch, whole replica: "
            f"{b(result['kv_cache_bytes'])}.<br>"
            f"Time to first token <b>{s(result['time_to_first_token_s'])}</b> · time per output token "
            f"<b>{s(result['time_per_output_token_s'])}</b> ({result['bound']}-bound; compute-bound from "
            f"b ≈ {result['compute_bound_sequences']:.0f}) · "
            f"{units.format_count(result['tokens_per_s_per_replica'])} tokens/s per replica, "
            f"{units.format_count(result['tokens_per_s_per_device'])} per device · whole request "
            f"{s(result['request_time_s'])}.<br>"
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
