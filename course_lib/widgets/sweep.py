"""Lab 6 · the concurrency sweep: time to first token, inter-token latency and throughput against concurrency.

Every number comes from one call, ``serving.concurrency_sweep_report``, for one configuration (model, device, t GPUs
in one node, the weights' and the KV cache's precision, prompt and output lengths) pointed at one concurrency: the
engine's scheduler simulated in the closed loop at each of ``serving.SWEEP_CONCURRENCIES`` (1 … 512 users), with one
engine iteration priced by ``serving.engine.iteration_time``. The sweep is simulated once per configuration and kept
(the report's cache), so moving only *concurrency* costs no simulation: it moves the stars. ``compute`` returns that
``ConcurrencySweepReport``, which alone the figure (``viz.serving.ConcurrencySweepFigure``) and the summary read.

The controls (``CONTROLS``) are ``model``, ``device``, ``tensor_parallel``, ``weights``, ``kv_cache``,
``prompt_tokens``, ``output_tokens`` and ``concurrency``. t takes the sizes in one node (≤ 8) that split the model's
heads evenly. A configuration the engine rejects (FP8 on an A100, weights that leave no room for the KV cache) is
drawn as the engine's reason, never raised.

>>> from course_lib.serving.sweep import SWEEP_CONCURRENCIES
>>> lab = concurrency_sweep_lab(model="Llama 3.1 8B", tensor_parallel=1, prompt_tokens=1024, output_tokens=128)
>>> lab.result["refusal"], lab.result["knee_concurrency"] in SWEEP_CONCURRENCIES
('', True)
>>> lab.controls["device"].value = "A100 SXM 80GB"; lab.controls["weights"].value = "fp8"
>>> lab.result["refusal"] != ""
True
"""

from __future__ import annotations

from matplotlib.figure import Figure

from .. import parallelism, serving, units
from ..serving.sweep import SWEEP_CONCURRENCIES
from ..viz.fast import Panel, PartialRedraw
from ..viz.serving import ConcurrencySweepFigure
from ..viz.style import COLORS
from ._base import ControlSpec, Lab, control_defaults
from .serving import NODES, replica_cluster

__all__ = [
    "ConcurrencySweepLab",
    "concurrency_sweep_lab",
    "CONTROLS",
    "DEFAULTS",
    "MODELS",
    "PROMPT_TOKENS",
    "OUTPUT_TOKENS",
    "WEIGHTS",
    "KV_CACHE",
    "MAX_TENSOR_PARALLEL",
    "tensor_parallel_options",
]

# Dense Llama 3.1 models and the Mixtral mixtures of experts.
MODELS = {
    model.name: model
    for model in (
        parallelism.LLAMA3_8B,
        parallelism.LLAMA3_70B,
        parallelism.LLAMA3_405B,
        parallelism.MIXTRAL_8X7B,
        parallelism.MIXTRAL_8X22B,
    )
}
MAX_TENSOR_PARALLEL = 8  # one node: engines keep a replica's tensor-parallel group on NVLink
PROMPT_TOKENS = tuple(2**k for k in range(7, 16))  # 128 … 32,768 tokens
OUTPUT_TOKENS = tuple(2**k for k in range(5, 10))  # 32 … 512 tokens: a sweep's iterations grow with the output
WEIGHTS = ("bf16", "fp8", "int4")
KV_CACHE = ("bf16", "fp8")


def tensor_parallel_options(model: parallelism.TransformerModel) -> tuple:
    """t values for ``model`` in one node: those that split its heads (and KV heads) evenly, ≤ 8.

    >>> from course_lib import parallelism
    >>> tensor_parallel_options(parallelism.MIXTRAL_8X7B)
    (1, 2, 4, 8)
    """
    return tuple(t for t in range(1, MAX_TENSOR_PARALLEL + 1) if serving.serves_with_tensor_parallel(model, t))


def _tokens(n) -> str:
    return f"{units.format_count(n)} tokens"


def _users(n) -> str:
    return f"{n} request{'s' if n > 1 else ''}"


# Llama 3.1 70B on one H100 node (t = 8), bf16, 1024-token prompts and 256 output tokens, 64 requests in flight.
CONTROLS = (
    ControlSpec("model", "model", tuple(MODELS), parallelism.LLAMA3_70B.name, kind="dropdown"),
    ControlSpec("device", "device", tuple(NODES), "H100 SXM 80GB", kind="dropdown"),
    ControlSpec(
        "tensor_parallel",
        "GPUs per replica t",
        lambda values: tensor_parallel_options(MODELS[values["model"]]),
        8,
        depends_on=("model",),
    ),
    ControlSpec("weights", "weights", WEIGHTS, "bf16", kind="buttons"),
    ControlSpec("kv_cache", "KV cache", KV_CACHE, "bf16", kind="buttons"),
    ControlSpec("prompt_tokens", "prompt (input)", PROMPT_TOKENS, 1024, _tokens),
    ControlSpec("output_tokens", "output", OUTPUT_TOKENS, 256, _tokens),
    ControlSpec("concurrency", "concurrency", SWEEP_CONCURRENCIES, 64, _users),
)
DEFAULTS = control_defaults(CONTROLS)


class ConcurrencySweepLab(Lab):
    """One configuration's concurrency sweep (see the module docstring)."""

    CONTROLS = CONTROLS  # the module's, above

    def __init__(self, **initial):
        controls = self.build_controls(self.start_values(initial))
        self._build_figure()
        super().__init__("Lab 6 · The concurrency sweep: latency and throughput", controls, self.figure)

    def compute(self, values: dict) -> serving.ConcurrencySweepReport:
        """One ``serving.concurrency_sweep_report`` for the configuration the controls describe."""
        t = values["tensor_parallel"]
        return serving.concurrency_sweep_report(
            MODELS[values["model"]],
            replica_cluster(values["device"], t),
            t,
            weights=values["weights"],
            kv_cache=values["kv_cache"],
            prompt_tokens=values["prompt_tokens"],
            output_tokens=values["output_tokens"],
            concurrency=values["concurrency"],
        )

    def result_dict(self, r: serving.ConcurrencySweepReport) -> dict:
        """``result``: the configuration, and the sweep's figures at the concurrency and its knee (0 when refused,
        with ``refusal`` saying why; "" otherwise)."""
        refused = r.refusal is not None
        return {
            "model": r.model.name,
            "device": r.cluster.accelerator.name,
            "tensor_parallel": r.tensor_parallel,
            "weights": r.weights,
            "kv_cache": r.kv_cache,
            "prompt_tokens": r.prompt_tokens,
            "output_tokens": r.output_tokens,
            "concurrency": r.concurrency,
            "refusal": r.refusal or "",
            "kv_blocks": r.kv_blocks,
            "block_size_tokens": r.block_size_tokens,
            "requests_in_cache": r.requests_in_cache,
            "ttft_s": 0.0 if refused else r.ttft_s,
            "itl_s": 0.0 if refused else r.itl_s,
            "tokens_per_s": 0.0 if refused else r.tokens_per_s,
            "tokens_per_s_per_device": 0.0 if refused else r.tokens_per_s_per_device,
            "knee_concurrency": 0 if refused else r.knee_concurrency,
            "max_tokens_per_s": 0.0 if refused else float(r.output_tokens_per_s.max()),
        }

    def _build_figure(self) -> None:
        figure = Figure(figsize=(11.5, 4.2), dpi=self.dpi)
        figure.patch.set_facecolor("white")
        self.figure = figure
        self.sweep_figure = ConcurrencySweepFigure(
            figure.add_axes((0.09, 0.13, 0.375, 0.77)),
            figure.add_axes((0.595, 0.13, 0.38, 0.77)),
            SWEEP_CONCURRENCIES,
            snap=True,
        )

    def draw(self, r: serving.ConcurrencySweepReport) -> None:
        self.sweep_figure.update(r)

    def _y_limits(self):
        """(the latency axes' y limits, the throughput axes'): the static part of each panel."""
        return tuple(tuple(ax.get_ylim()) for ax in self.sweep_figure.axes)

    def render(self) -> None:
        """Draw the animated artists over a picture of each axes at its current y limits (the x axis is fixed),
        as the serving lab does: a picture is drawn once per limits in this process."""
        limits = self._y_limits()
        if self._redraw is None:

            def panel(index, x_range):
                ax = self.sweep_figure.axes[index]
                return Panel(
                    x_range, (ax,), lambda e: e[index], lambda e: ax.set_ylim(*e[index]), (limits,), layered=True
                )

            panels = [panel(0, (0.0, 0.5)), panel(1, (0.5, 1.0))]
            self._redraw = PartialRedraw(type(self).__qualname__, self.figure, self.sweep_figure.animated, panels)
        self._redraw.set_static_state(limits)
        super().render()

    def summary_html(self, r: serving.ConcurrencySweepReport) -> str:
        s, n = units.format_time, units.format_count
        head = (
            f"<b>{r.model.name}</b> on t = <b>{r.tensor_parallel}</b> {r.cluster.accelerator.name}, weights "
            f"{r.weights}, KV cache {r.kv_cache}; requests of {n(r.prompt_tokens)} + {n(r.output_tokens)} tokens.<br>"
        )
        if r.refusal is not None:
            return head + f"<b style='color:{COLORS['exposed']}'>Not served:</b> {r.refusal}."
        return head + (
            f"KV cache: {n(r.kv_blocks)} blocks of {r.block_size_tokens} tokens, whole requests for "
            f"{n(r.requests_in_cache)} at once.<br>"
            f"At <b>{r.concurrency}</b> concurrent requests: time to first token <b>{s(r.ttft_s)}</b> (median) · "
            f"inter-token latency <b>{s(r.itl_s)}</b> (median) · <b>{n(r.tokens_per_s)}</b> output tokens/s "
            f"({n(r.tokens_per_s_per_device)} per GPU).<br>"
            f"Knee at <b>{r.knee_concurrency}</b> requests: the first concurrency that reaches "
            f"{units.format_percent(r.knee_fraction, digits=2)} of the sweep's "
            f"most, {n(float(r.output_tokens_per_s.max()))} tokens/s.<br>"
            f"<small>Each concurrency is a closed-loop run: that many users, each sending its next request when its "
            f"last one ends. A new configuration is simulated once (seconds); moving only the concurrency "
            f"reuses it.</small>"
        )


def concurrency_sweep_lab(**initial) -> ConcurrencySweepLab:
    """The concurrency-sweep lab; keyword arguments set controls' initial values (``DEFAULTS`` lists the names).

    >>> lab = concurrency_sweep_lab(model="Llama 3.1 8B", tensor_parallel=1)
    >>> lab.controls["concurrency"].value = 1
    >>> lab.result["concurrency"], lab.result["ttft_s"] < lab.result["itl_s"] * 1000
    (1, True)
    """
    return ConcurrencySweepLab(**initial)
