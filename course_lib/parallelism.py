"""Parallelism: how a training step is split across devices, and what each split costs in memory and traffic.

Four ways to split, often combined (Narayanan et al. 2021 call the sizes d, t, p with d·t·p = n):
data parallel (each replica sees different examples; gradients are averaged), tensor parallel (each matrix
multiply is split; partial results are combined inside every layer), pipeline parallel (groups of layers on
different devices; activations flow between stages) and state sharding (ZeRO: parameters, gradients and
optimizer state partitioned across the data-parallel group instead of replicated).

Numeric fields of ``ParallelPlan`` (and the numeric arguments of every function here) may be numpy arrays, to
evaluate many plans at once; the plan search does that. Bytes are decimal, counts are whole numbers.

>>> global_batch(8, 16, 64)   # micro-batch 8, 16 accumulation steps, 64 data-parallel replicas
8192
>>> format_bytes(zero_model_state_bytes(7.5e9, 64, stage=1))   # ZeRO §5: P_os with N_d = 64
'31.4 GB'
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from . import _check, collectives, hardware
from .compute import RECOMPUTE_OPTIONS

__all__ = [
    "TransformerModel",
    "ParallelPlan",
    "MemoryBreakdown",
    "BoundaryTransfer",
    "SCHEDULES",
    "ZERO_STAGES",
    "ACTIVATION_BYTES",
    "PARAM_BYTES",
    "GRAD_BYTES",
    "ADAM_OPTIMIZER_BYTES_PER_PARAM",
    "global_batch",
    "zero_model_state_breakdown",
    "zero_model_state_bytes",
    "activation_bytes_per_layer",
    "StoredActivation",
    "STORED_ACTIVATIONS",
    "stored_activation_bytes",
    "pipeline_in_flight_microbatches",
    "memory_breakdown",
    "calibrated_memory_breakdown",
    "pipeline_bubble_fraction",
    "step_transfers",
    "boundary_tensors",
    "communication_volume_per_step",
    "splits_evenly",
    "check_tensor_split",
    "check_pipeline_split",
    "check_plan_for_model",
    "ATTENTION_OPTIONS",
    "PRECISION_RECIPES",
    "Calibration",
    "PLAYBOOK_CALIBRATION",
    "default_calibration",
    "resolve_calibration",
    "stage_layers",
    "activation_bytes_per_token_per_layer",
    "GPT2_1_5B",
    "MEGATRON_7_5B",
    "MEGATRON_22B",
    "GPT3_175B",
    "MT_NLG_530B",
    "MEGATRON_1T",
    "LLAMA32_1B",
    "LLAMA32_3B",
    "LLAMA3_8B",
    "LLAMA3_70B",
    "LLAMA3_405B",
    "PLAYBOOK_1B",
    "PLAYBOOK_3B",
    "PLAYBOOK_8B",
    "PLAYBOOK_80B",
    "ARCHITECTURE_STYLES",
    "MODELS",
    "LLAMA_MODELS",
    "PLAYBOOK_MODELS",
]

ZERO_STAGES = (0, 1, 2, 3)
SCHEDULES = ("gpipe", "1f1b", "interleaved")
# Mixed-precision Adam (ZeRO §3.1): fp16/bf16 parameters 2Ψ and gradients 2Ψ; fp32 master parameters, momentum
# and variance 4Ψ + 4Ψ + 4Ψ = KΨ with K = 12. In total 16 bytes per parameter.
PARAM_BYTES = 2
GRAD_BYTES = 2
ADAM_OPTIMIZER_BYTES_PER_PARAM = 12
ACTIVATION_BYTES = 2  # activations exchanged between devices are 16-bit


ARCHITECTURE_STYLES = ("gpt", "llama")
# "standard" attention stores the softmax of the s × s scores (Korthikanti et al. 2022 Eq. (1)); "flash" attention
# (Dao et al. 2022, FlashAttention) recomputes the scores tile by tile in the backward and stores only the output and
# one fp32 log-sum-exp per head and token. It is an option of its own, distinct from selective recomputation.
ATTENTION_OPTIONS = ("standard", "flash")
# Bytes per parameter: (16-bit parameters, 16-bit gradients, fp32 gradient buffer, optimizer state). "fp16-zero" is
# ZeRO's recipe (Rajbhandari et al. 2020 §3.1: 2 + 2 + 12 = 16 B). "bf16-fp32-grads" is the recipe of Megatron-LM
# and nanotron in bf16: gradients accumulated and reduced in an fp32 main-gradient buffer (4 B) beside the bf16
# gradient, fp32 master weights, momentum and variance (12 B): 20 B per parameter.
PRECISION_RECIPES = {"fp16-zero": (2, 2, 0, 12), "bf16-fp32-grads": (2, 2, 4, 12)}


@dataclass(frozen=True)
class TransformerModel:
    """A decoder-only transformer: its shape (layers l, hidden h, heads a, vocabulary V, sequence s) and architecture.

    The defaults describe GPT as Narayanan et al. 2021 and Korthikanti et al. 2022 model it: an MLP of hidden size
    4h (``ffn_hidden=None``), multi-head attention (``kv_heads=None``: as many key/value heads as heads), a plain
    two-matrix MLP, tied input and output embeddings, and ``style="gpt"``: biases on every linear layer, LayerNorm
    (weight and bias) and learned position embeddings. Llama-style models set ``style="llama"`` (no biases, RMSNorm
    with a weight only, rotary positions with no parameters), a gated SwiGLU MLP (``gated_mlp=True``: three h × f
    matrices), grouped-query attention (``kv_heads`` < ``heads``) and often untied embeddings.

    >>> LLAMA3_8B.params, LLAMA3_8B.kv_heads, LLAMA3_8B.head_dim
    (8030261248, 8, 128)
    """

    name: str
    layers: int
    hidden: int
    heads: int
    vocab: int
    seq_len: int
    ffn_hidden: int | None = None
    kv_heads: int | None = None
    gated_mlp: bool = False
    tied_embeddings: bool = True
    style: str = "gpt"

    def __post_init__(self):
        for name in ("layers", "hidden", "heads", "vocab", "seq_len"):
            _check.count(name, getattr(self, name))
        if self.hidden % self.heads:
            raise ValueError(f"heads must divide hidden ({self.hidden}), got {self.heads}")
        ffn = 4 * self.hidden if self.ffn_hidden is None else _check.count("ffn_hidden", self.ffn_hidden)
        kv = self.heads if self.kv_heads is None else _check.count("kv_heads", self.kv_heads)
        if self.heads % kv:
            raise ValueError(f"kv_heads must divide heads ({self.heads}) for grouped-query attention, got {kv}")
        object.__setattr__(self, "ffn_hidden", ffn)
        object.__setattr__(self, "kv_heads", kv)
        _check.flag("gated_mlp", self.gated_mlp)
        _check.flag("tied_embeddings", self.tied_embeddings)
        _check.choice("style", self.style, ARCHITECTURE_STYLES)

    @property
    def head_dim(self) -> int:
        """h / a: the size of one attention head."""
        return self.hidden // self.heads

    @property
    def matmul_weights_per_layer(self) -> int:
        """Weights of one layer's matrix multiplies: W_Q and W_O h × h, W_K and W_V h × (kv_heads · head_dim), and
        the MLP's two h × f matrices (three when gated). Each costs 2 FLOPs per token in the forward pass.

        >>> LLAMA3_8B.matmul_weights_per_layer   # 2·4096² + 2·4096·1024 + 3·4096·14336
        218103808
        """
        h, kv_width = self.hidden, self.kv_heads * self.head_dim
        return 2 * h * h + 2 * h * kv_width + (3 if self.gated_mlp else 2) * h * self.ffn_hidden

    @property
    def params_per_layer(self) -> int:
        """Parameters of one transformer layer: attention, MLP, their biases (GPT) and the two norms.

        Attention: W_Q and W_O are h × h, W_K and W_V h × (kv_heads · head_dim). MLP: two h × f matrices, three when
        gated. GPT adds a bias to each of them and two LayerNorms of 2h; Llama has two RMSNorms of h.

        >>> GPT3_175B.params_per_layer == 12 * 12288**2 + 13 * 12288   # Narayanan et al. 2021 Eq. (2), per layer
        True
        """
        h, f, kv_width = self.hidden, self.ffn_hidden, self.kv_heads * self.head_dim
        matrices = self.matmul_weights_per_layer
        if self.style == "llama":
            return matrices + 2 * h
        biases = (2 * h + 2 * kv_width) + ((2 if self.gated_mlp else 1) * f + h)
        return matrices + biases + 2 * 2 * h

    @property
    def embedding_params(self) -> int:
        """Input embedding V·h, a separate output head V·h when untied, learned positions s·h (GPT), final norm.

        As Narayanan et al. 2021 Eq. (2), the GPT count leaves out the final LayerNorm (2h, a negligible share).
        """
        h = self.hidden
        embedding = self.vocab * h * (1 if self.tied_embeddings else 2)
        return embedding + (self.seq_len * h if self.style == "gpt" else h)

    @property
    def params(self) -> int:
        """Parameter count: l · params_per_layer + embedding_params (Narayanan et al. 2021 Eq. (2) for GPT).

        >>> round(GPT3_175B.params / 1e9, 1)
        174.6
        """
        return self.layers * self.params_per_layer + self.embedding_params


# Configurations: Narayanan et al. 2021 Table 1 (7.5B, 1T; V = 51,200, s = 2048) and Korthikanti et al. 2022
# Table 3 (22B, 175B, 530B, 1T). GPT-2 XL (Radford et al. 2019) is the 1.5B model ZeRO §3 uses as its example.
GPT2_1_5B = TransformerModel("GPT-2 1.5B", 48, 1600, 25, 50257, 1024)
MEGATRON_7_5B = TransformerModel("GPT 7.5B (Megatron)", 36, 4096, 32, 51200, 2048)
MEGATRON_22B = TransformerModel("GPT 22B (Megatron)", 48, 6144, 64, 51200, 2048)
GPT3_175B = TransformerModel("GPT-3 175B", 96, 12288, 96, 51200, 2048)
MT_NLG_530B = TransformerModel("MT-NLG 530B", 105, 20480, 128, 51200, 2048)
MEGATRON_1T = TransformerModel("GPT 1T (Megatron)", 128, 25600, 160, 51200, 2048)


def _llama(name, layers, hidden, heads, kv_heads, ffn_hidden, vocab, seq_len, tied_embeddings):
    return TransformerModel(
        name,
        layers,
        hidden,
        heads,
        vocab,
        seq_len,
        ffn_hidden=ffn_hidden,
        kv_heads=kv_heads,
        gated_mlp=True,
        tied_embeddings=tied_embeddings,
        style="llama",
    )


# Llama 3 (Grattafiori et al. 2024, "The Llama 3 Herd of Models", Table 3) and Llama 3.2 (Meta's model cards): the
# published configurations (config.json of meta-llama/Llama-3.1-8B, -70B, -405B, Llama-3.2-1B, -3B), trained at 8,192
# tokens. Parameter counts equal the published ones to the parameter (8,030,261,248 for 8B; tests/test_parallelism).
LLAMA32_1B = _llama("Llama 3.2 1B", 16, 2048, 32, 8, 8192, 128256, 8192, tied_embeddings=True)
LLAMA32_3B = _llama("Llama 3.2 3B", 28, 3072, 24, 8, 8192, 128256, 8192, tied_embeddings=True)
LLAMA3_8B = _llama("Llama 3.1 8B", 32, 4096, 32, 8, 14336, 128256, 8192, tied_embeddings=False)
LLAMA3_70B = _llama("Llama 3.1 70B", 80, 8192, 64, 8, 28672, 128256, 8192, tied_embeddings=False)
LLAMA3_405B = _llama("Llama 3.1 405B", 126, 16384, 128, 8, 53248, 128256, 8192, tied_embeddings=False)
# The Ultra-Scale Playbook's benchmark models (Tazi et al. 2025; nanotron scripts/scaling_benchmarks.py): Llama
# architecture without grouped-query attention, vocabulary 131,072, sequence 4,096; embeddings tied below an MLP of
# 10,000 (1B, 3B). The script estimates 1.34B, 3.57B, 8.86B and about 80B parameters.
PLAYBOOK_1B = _llama("Playbook 1B", 16, 2048, 32, 32, 8192, 131072, 4096, tied_embeddings=True)
PLAYBOOK_3B = _llama("Playbook 3B", 28, 3072, 32, 32, 8192, 131072, 4096, tied_embeddings=True)
PLAYBOOK_8B = _llama("Playbook 8B", 32, 4096, 32, 32, 14336, 131072, 4096, tied_embeddings=False)
PLAYBOOK_80B = _llama("Playbook 80B", 80, 8192, 64, 64, 28672, 131072, 4096, tied_embeddings=False)
# The GPT presets (the memory lab's models); the Llama-style presets; the Playbook's benchmark models.
MODELS = {m.name: m for m in (GPT2_1_5B, MEGATRON_7_5B, MEGATRON_22B, GPT3_175B, MT_NLG_530B, MEGATRON_1T)}
LLAMA_MODELS = {m.name: m for m in (LLAMA32_1B, LLAMA32_3B, LLAMA3_8B, LLAMA3_70B, LLAMA3_405B)}
PLAYBOOK_MODELS = {m.name: m for m in (PLAYBOOK_1B, PLAYBOOK_3B, PLAYBOOK_8B, PLAYBOOK_80B)}


@dataclass(frozen=True, eq=False)
class ParallelPlan:
    """How one training step is split: parallel sizes, ZeRO stage, batch shape, recomputation, schedule.

    devices = data_parallel × tensor_parallel × pipeline_parallel; the global batch is
    micro_batch × grad_accum_steps × data_parallel (tensor and pipeline groups share the same examples).
    ``grad_accum_steps`` is also the number of micro-batches m each pipeline processes per step.
    ``virtual_stages`` (v) > 1 needs ``schedule="interleaved"``.

    >>> plan = ParallelPlan(data_parallel=64, tensor_parallel=8, pipeline_parallel=4, micro_batch=2, grad_accum_steps=8)
    >>> plan.devices, plan.global_batch
    (2048, 1024)
    """

    data_parallel: int = 1
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    zero_stage: int = 0
    micro_batch: int = 1
    grad_accum_steps: int = 1
    recompute: str = "none"
    sequence_parallel: bool = False
    schedule: str = "1f1b"
    virtual_stages: int = 1
    attention: str = "standard"

    def __post_init__(self):
        _check.choice("attention", self.attention, ATTENTION_OPTIONS)
        for name in (
            "data_parallel",
            "tensor_parallel",
            "pipeline_parallel",
            "micro_batch",
            "grad_accum_steps",
            "virtual_stages",
        ):
            object.__setattr__(self, name, _check.count(name, getattr(self, name)))
        _check.choice("zero_stage", self.zero_stage, ZERO_STAGES)
        _check.choice("recompute", self.recompute, RECOMPUTE_OPTIONS)
        _check.flag("sequence_parallel", self.sequence_parallel)
        _check.choice("schedule", self.schedule, SCHEDULES)
        if self.schedule == "interleaved":
            if np.any(np.asarray(self.virtual_stages) < 2):
                raise ValueError("virtual_stages must be ≥ 2 with schedule='interleaved'")
            if np.any(np.asarray(self.grad_accum_steps) % np.asarray(self.pipeline_parallel)):
                raise ValueError(
                    "grad_accum_steps (micro-batches) must be a multiple of pipeline_parallel for the "
                    "interleaved schedule (Narayanan et al. 2021 §2.2.2)"
                )
        elif np.any(np.asarray(self.virtual_stages) != 1):
            raise ValueError(f"virtual_stages must be 1 unless schedule='interleaved', got {self.virtual_stages}")

    @property
    def devices(self):
        """d·t·p devices."""
        return self.data_parallel * self.tensor_parallel * self.pipeline_parallel

    @property
    def sizes(self):
        """(t, p, d, b, m, v): tensor, pipeline and data sizes, micro-batch, micro-batches per step, virtual stages.

        >>> ParallelPlan(data_parallel=4, tensor_parallel=2, grad_accum_steps=8).sizes
        (2, 1, 4, 1, 8, 1)
        """
        return (
            self.tensor_parallel,
            self.pipeline_parallel,
            self.data_parallel,
            self.micro_batch,
            self.grad_accum_steps,
            self.virtual_stages,
        )

    @property
    def global_batch(self):
        """Samples per optimizer step."""
        return global_batch(self.micro_batch, self.grad_accum_steps, self.data_parallel)

    def replace(self, **changes) -> ParallelPlan:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per device by component (for the first pipeline stage, which holds the most activations; with a
    ``Calibration``, for the heaviest stage). ``logits`` (the output layer's logits and their loss buffers) and
    ``framework`` (CUDA context, allocator) are counted only with a ``Calibration``; otherwise 0."""

    parameters: float
    gradients: float
    optimizer_state: float
    activations: float
    logits: float = 0.0
    framework: float = 0.0

    @property
    def model_states(self):
        """Parameters + gradients + optimizer state (what ZeRO partitions)."""
        return self.parameters + self.gradients + self.optimizer_state

    @property
    def total(self):
        """Everything counted here (without a ``Calibration``, temporary buffers and fragmentation are not)."""
        return self.model_states + self.activations + self.logits + self.framework


@dataclass(frozen=True)
class Calibration:
    """The assumptions and constants of the calibrated model (``memory_breakdown``, ``budget.step_time``).

    Stated assumptions (not fitted): ``precision`` (a ``PRECISION_RECIPES`` key), ``logits_bytes_per_element`` (bf16
    logits 2 B + their fp32 copy for the loss 4 B + the fp32 gradient of the loss 4 B = 10 B per vocabulary entry and
    token, on the last stage, vocabulary split over t), ``bucket_bytes`` (PyTorch DDP's default bucket, 25 MB),
    ``overlap_slowdown`` (compute runs this much slower while a collective shares the GPU's memory and SMs),
    ``max_zero_stage_with_pipeline`` (the highest ZeRO stage the framework combines with pipeline parallelism: 1
    in Megatron-LM, nanotron and DeepSpeed's pipeline engine), ``prefetch_parameter_gathers`` (whether the framework
    overlaps a ZeRO parameter all-gather with the previous layer's compute), the links (``None``: the cluster's) and
    the network's α, ``network_latency_s`` (``None``: the inter-node link's; a ``course_lib.measure`` fit or an
    nccl-tests log can supply it).

    Fitted constants (``validation.fit_playbook_calibration`` documents the rows): ``gemm_efficiency`` (the share of
    peak that large matrix multiplies reach), ``gemm_half_flops`` (the per-GPU forward FLOPs of one layer's
    micro-batch at which the efficiency is half of that: small GEMMs run below the big-GEMM efficiency; 0 means no
    size effect), ``layer_overhead_s`` (a fixed cost per layer and micro-batch, forward and backward: kernel
    launches, synchronisation), ``network_efficiency`` (the share of the network's nominal bandwidth NCCL reaches)
    and ``framework_bytes`` (memory the model does not count: CUDA context, allocator caching and fragmentation).

    The defaults are the uncalibrated physics: big-GEMM efficiency 0.5 (the course's default), no size effect, no
    overheads, nominal links.

    >>> Calibration().precision, Calibration().bucket_bytes
    ('bf16-fp32-grads', 25000000.0)
    """

    name: str = "uncalibrated"
    precision: str = "bf16-fp32-grads"
    logits_bytes_per_element: float = 10.0
    bucket_bytes: float = 25e6
    overlap_slowdown: float = 0.0
    max_zero_stage_with_pipeline: int = 1
    prefetch_parameter_gathers: bool = True
    intra_node_link: object = None
    inter_node_link: object = None
    gemm_efficiency: float = 0.5
    gemm_half_flops: float = 0.0
    layer_overhead_s: float = 0.0
    network_efficiency: float = 1.0
    network_latency_s: float | None = None
    framework_bytes: float = 0.0

    def __post_init__(self):
        _check.choice("precision", self.precision, tuple(PRECISION_RECIPES))
        _check.nonnegative("logits_bytes_per_element", self.logits_bytes_per_element)
        _check.positive("bucket_bytes", self.bucket_bytes)
        _check.nonnegative("overlap_slowdown", self.overlap_slowdown)
        _check.choice("max_zero_stage_with_pipeline", self.max_zero_stage_with_pipeline, ZERO_STAGES)
        _check.flag("prefetch_parameter_gathers", self.prefetch_parameter_gathers)
        _check.fraction("gemm_efficiency", self.gemm_efficiency)
        _check.nonnegative("gemm_half_flops", self.gemm_half_flops)
        _check.nonnegative("layer_overhead_s", self.layer_overhead_s)
        _check.fraction("network_efficiency", self.network_efficiency)
        if self.network_latency_s is not None:
            _check.nonnegative("network_latency_s", self.network_latency_s)
        _check.nonnegative("framework_bytes", self.framework_bytes)


# The calibration for nanotron on the Playbook's cluster (8 × H100 per node, NVLink 4, AWS EFA): the framework's traits
# as stated assumptions, five constants fitted on the 1B and 3B runs only (``validation.fit_playbook_calibration``;
# the 8B and 80B runs are never seen by the fit). The default of ``memory_breakdown``, ``budget.step_time`` and
# ``budget.search_plans`` on that cluster (``default_calibration``).
PLAYBOOK_CALIBRATION = Calibration(
    name="nanotron on 8 × H100 + EFA (Ultra-Scale Playbook), fitted on the 1B and 3B runs",
    precision="bf16-fp32-grads",
    max_zero_stage_with_pipeline=1,
    prefetch_parameter_gathers=False,  # nanotron's ZeRO-1 all-gathers the updated parameters after the step
    # Fitted by fit_playbook_calibration on the 1,127 successful 1B and 3B runs (test_validation checks the fit
    # returns these): large GEMMs at 80 % of the 989 TFLOP/s peak; half of that at 0.3 TFLOP of forward work per layer
    # and GPU; 3.2 ms per layer and micro-batch (forward + backward) of fixed cost, the top of the fit's grid, so it
    # absorbs more than kernel launches (nanotron's unoverlapped pipeline and tensor-parallel bookkeeping);
    # NCCL over EFA at 20 % of the nominal 50 GB/s per GPU; 1.97 GB per GPU of framework memory.
    gemm_efficiency=0.8,
    gemm_half_flops=3e11,
    layer_overhead_s=3.2e-3,
    network_efficiency=0.2,
    framework_bytes=1968873984.0,
)
# The device the calibration was fitted on, and its peak (H100 SXM dense bf16, as the Playbook's MFU).
_PLAYBOOK_ACCELERATOR = hardware.H100
_PLAYBOOK_NETWORK = hardware.EFA_P5


def default_calibration(cluster) -> Calibration:
    """The documented calibration for ``cluster``: ``PLAYBOOK_CALIBRATION`` on the Playbook's H100 + EFA cluster,
    else that calibration carried over by what is physics and what is the measured cluster.

    Carried over unchanged: the stated framework assumptions (precision recipe, logits, buckets, ZeRO with pipeline
    up to stage 1, no prefetch of ZeRO gathers) and the fixed costs (3.2 ms per layer and micro-batch, 1.97 GB of
    framework memory), which belong to the software stack, and the big-GEMM efficiency (0.8, a share of peak).
    Scaled: the half-efficiency GEMM size by the device's bf16 peak over the H100's (a GEMM of the same duration is
    as far from its launch and tail costs on either device). Not carried over: the network efficiency (0.2 of EFA's
    nominal rate), which measures nanotron's NCCL over AWS EFA (its SRD transport and libfabric plug-in), not
    InfiniBand or NVLink: other clusters' networks run at their nominal rate until a ``course_lib.measure`` fit or an
    nccl-tests log says otherwise.

    >>> default_calibration(hardware.DGX_H100).network_efficiency, default_calibration(hardware.DGX_H100).name
    (1.0, 'Playbook calibration carried over to DGX H100 (one node) (network at nominal)')
    >>> f"{default_calibration(hardware.SELENE_3072).gemm_half_flops:.3g}"
    '9.46e+10'
    """
    if not isinstance(cluster, hardware.Cluster):
        raise ValueError(f"cluster must be a hardware.Cluster, got {cluster!r}")
    if cluster.accelerator == _PLAYBOOK_ACCELERATOR and cluster.inter_node_link == _PLAYBOOK_NETWORK:
        return PLAYBOOK_CALIBRATION
    scale = cluster.accelerator.peak("bf16") / _PLAYBOOK_ACCELERATOR.peak("bf16")
    return replace(
        PLAYBOOK_CALIBRATION,
        name=f"Playbook calibration carried over to {cluster.name} (network at nominal)",
        gemm_half_flops=PLAYBOOK_CALIBRATION.gemm_half_flops * scale,
        network_efficiency=1.0,
    )


def resolve_calibration(calibration, cluster=None) -> Calibration | None:
    """The one place that maps a ``calibration`` argument to the model that runs: "default" →
    ``default_calibration(cluster)`` (without a cluster, as for memory, ``PLAYBOOK_CALIBRATION``: the memory terms do
    not depend on the cluster), None → None (the ideal, uncalibrated model), a ``Calibration`` → itself.

    >>> resolve_calibration("default") is PLAYBOOK_CALIBRATION, resolve_calibration(None)
    (True, None)
    >>> resolve_calibration("playbook")
    Traceback (most recent call last):
    ...
    ValueError: calibration must be "default", None (the ideal model) or a parallelism.Calibration, got 'playbook'
    """
    if calibration is None or isinstance(calibration, Calibration):
        return calibration
    if isinstance(calibration, str) and calibration == "default":
        return PLAYBOOK_CALIBRATION if cluster is None else default_calibration(cluster)
    raise ValueError(
        f'calibration must be "default", None (the ideal model) or a parallelism.Calibration, got {calibration!r}'
    )


def global_batch(micro_batch, grad_accum_steps, data_parallel):
    """B_global = b · m · d samples per optimizer step (micro-batch × micro-batches per step × replicas).

    Tensor- and pipeline-parallel groups work on the *same* samples, so they add devices but not examples.

    >>> global_batch(2, 4, 128)   # Ultra-Scale Playbook: 4M tokens at seq 4096 = 1024 samples
    1024
    """
    return (
        _check.count("micro_batch", micro_batch)
        * _check.count("grad_accum_steps", grad_accum_steps)
        * _check.count("data_parallel", data_parallel)
    )


def zero_model_state_breakdown(params, data_parallel, stage, optimizer_bytes_per_param=ADAM_OPTIMIZER_BYTES_PER_PARAM):
    """Per-device (parameters, gradients, optimizer state) bytes under ZeRO stage 0–3 (ZeRO §5).

    Stage 0 is plain data parallelism: everything replicated, (2 + 2 + K)Ψ. Stage 1 (P_os) partitions the
    optimizer state, stage 2 (P_os+g) also the gradients, stage 3 (P_os+g+p) also the parameters, each over the
    N_d data-parallel ranks.

    >>> [round(x / 1e9, 2) for x in zero_model_state_breakdown(7.5e9, 64, stage=2)]
    [15.0, 0.23, 1.41]
    """
    psi = _check.positive("params", params)
    n_d = _check.count("data_parallel", data_parallel)
    _check.choice("stage", stage, ZERO_STAGES)
    k = _check.nonnegative("optimizer_bytes_per_param", optimizer_bytes_per_param)
    parameters = PARAM_BYTES * psi / (n_d if stage >= 3 else 1)
    gradients = GRAD_BYTES * psi / (n_d if stage >= 2 else 1)
    optimizer = k * psi / (n_d if stage >= 1 else 1)
    return tuple(_check.as_result(x) for x in (parameters, gradients, optimizer))


def zero_model_state_bytes(params, data_parallel, stage, optimizer_bytes_per_param=ADAM_OPTIMIZER_BYTES_PER_PARAM):
    """Per-device model-state bytes: 16Ψ, 4Ψ + KΨ/N_d, 2Ψ + (2+K)Ψ/N_d, (4+K)Ψ/N_d for stages 0–3 (ZeRO §5).

    >>> format_bytes(zero_model_state_bytes(1e12, 1024, stage=3))   # ZeRO Table 1: 15.6 GB
    '15.6 GB'
    """
    return _check.as_result(sum(zero_model_state_breakdown(params, data_parallel, stage, optimizer_bytes_per_param)))


@dataclass(frozen=True)
class StoredActivation:
    """One tensor a GPT layer stores for its backward pass (Korthikanti et al. 2022 §4.1): its bytes are
    ``sbh_bytes`` · s·b·h + ``as2b_bytes`` · a·s²·b (16-bit values, 1-byte dropout masks). ``split_by_tensor`` says
    whether tensor parallelism already splits it over t (it lies between a column- and a row-parallel GEMM);
    the others (LayerNorm and dropout, the GEMMs' inputs) are split only by sequence parallelism."""

    block: str
    tensor: str
    sbh_bytes: float
    as2b_bytes: float
    split_by_tensor: bool


# Korthikanti et al. 2022 §4.1, term by term: attention 11sbh + 5as²b, MLP 19sbh, the two LayerNorms 4sbh.
STORED_ACTIVATIONS = (
    StoredActivation("attention", "input of the Q, K, V projections", 2, 0, False),
    StoredActivation("attention", "Q and K (for QKᵀ)", 4, 0, True),
    StoredActivation("attention", "softmax output", 0, 2, True),
    StoredActivation("attention", "softmax dropout mask", 0, 1, True),
    StoredActivation("attention", "softmax dropout output (for × V)", 0, 2, True),
    StoredActivation("attention", "V (for × V)", 2, 0, True),
    StoredActivation("attention", "input of the output projection", 2, 0, True),
    StoredActivation("attention", "attention dropout mask", 1, 0, False),
    StoredActivation("MLP", "input of the first linear layer", 2, 0, False),
    StoredActivation("MLP", "GeLU input (4h wide)", 8, 0, True),
    StoredActivation("MLP", "input of the second linear layer (4h wide)", 8, 0, True),
    StoredActivation("MLP", "MLP dropout mask", 1, 0, False),
    StoredActivation("LayerNorm", "inputs of the two LayerNorms", 4, 0, False),
)
_LINEAR_SBH = sum(x.sbh_bytes for x in STORED_ACTIVATIONS)  # 34
_REPLICATED_SBH = sum(x.sbh_bytes for x in STORED_ACTIVATIONS if not x.split_by_tensor)  # 10
_SCORES_AS2B = sum(x.as2b_bytes for x in STORED_ACTIVATIONS)  # 5


def stored_activation_bytes(seq_len, micro_batch, hidden, heads, tensor_parallel=1, sequence_parallel=False):
    """Bytes per device of each tensor of ``STORED_ACTIVATIONS`` (no recomputation), in that order.

    Their sum is ``activation_bytes_per_layer``: sbh(34 + 5as/h) at t = 1 (Korthikanti et al. 2022 Eq. (1)).

    >>> rows = stored_activation_bytes(2048, 1, 12288, 96, tensor_parallel=8)
    >>> format_bytes(sum(rows)), format_bytes(rows[-1])   # the LayerNorm inputs stay whole without SP
    ('579 MB', '101 MB')
    """
    s = _check.count("seq_len", seq_len)
    b = _check.count("micro_batch", micro_batch)
    h = _check.count("hidden", hidden)
    a = _check.count("heads", heads)
    t = _check.count("tensor_parallel", tensor_parallel)
    sp = _check.flag("sequence_parallel", sequence_parallel)
    check_tensor_split(a, t)
    return tuple(
        _check.as_result(
            (x.sbh_bytes * s * b * h + x.as2b_bytes * a * s * s * b) / (t if x.split_by_tensor or sp else 1)
        )
        for x in STORED_ACTIVATIONS
    )


def activation_bytes_per_layer(
    seq_len, micro_batch, hidden, heads, tensor_parallel=1, sequence_parallel=False, recompute="none"
):
    """Activation bytes one transformer layer stores for the backward pass (Korthikanti et al. 2022, Table 2).

    With s = seq_len, b = micro_batch, h = hidden, a = heads, t = tensor_parallel (16-bit activations, 1-byte
    dropout masks, LayerNorm statistics and biases ignored):

    ==========================  =========================  =========================
    recompute                   sequence_parallel=False    sequence_parallel=True
    ==========================  =========================  =========================
    "none"                      sbh(10 + 24/t + 5as/(ht))  sbh(34/t + 5as/(ht))
    "selective"                 sbh(10 + 24/t)             sbh(34/t)
    "full"                      2sbh                       2sbh
    ==========================  =========================  =========================

    With t = 1 and no recomputation this is Eq. (1), sbh(34 + 5as/h): the sum of ``STORED_ACTIVATIONS``. Full
    recomputation keeps only each layer's input (2sbh, as the paper's Table 2 lists it; with sequence parallelism
    Megatron-LM can shard it further).

    >>> format_bytes(activation_bytes_per_layer(2048, 1, 12288, 96))   # GPT-3: 5as/h = 80 vs 34
    '2.87 GB'
    >>> format_percent(1 - activation_bytes_per_layer(2048, 1, 12288, 96, recompute="selective")
    ...                / activation_bytes_per_layer(2048, 1, 12288, 96))   # "saves 70%"
    '70.2 %'
    """
    s = _check.count("seq_len", seq_len)
    b = _check.count("micro_batch", micro_batch)
    h = _check.count("hidden", hidden)
    a = _check.count("heads", heads)
    t = _check.count("tensor_parallel", tensor_parallel)
    sp = _check.flag("sequence_parallel", sequence_parallel)
    _check.choice("recompute", recompute, RECOMPUTE_OPTIONS)
    check_tensor_split(a, t)
    sbh = 1.0 * s * b * h
    # STORED_ACTIVATIONS summed: softmax output, its dropout mask and dropout output, 5as²b / t; without SP the 10sbh
    # of LayerNorm, dropout and the GEMMs' inputs are not split, the other 24sbh are.
    attention_scores = _SCORES_AS2B * a * s / (h * t)
    replicated = _LINEAR_SBH / t if sp else _REPLICATED_SBH + (_LINEAR_SBH - _REPLICATED_SBH) / t
    per_layer = {
        "none": sbh * (replicated + attention_scores),
        "selective": sbh * replicated,
        "full": 2.0 * sbh + 0.0 * t,
    }[recompute]
    return _check.as_result(per_layer)


def pipeline_in_flight_microbatches(stages, microbatches, schedule="1f1b", virtual_stages=1):
    """Micro-batches whose activations the first pipeline stage holds at its peak.

    GPipe runs all m forwards first, so it holds m. 1F1B holds min(p, m) (Narayanan et al. 2021 §2.2.1). The
    interleaved schedule holds p·(1 + (p−1)/(p·v)) worth of full-stage micro-batches (Korthikanti et al. 2022 §4.2.3),
    or m when m is too small for the warm-up to finish (m = p); ``pipeline.pipeline_schedule`` simulates all three.

    >>> pipeline_in_flight_microbatches(8, 64), pipeline_in_flight_microbatches(8, 64, "gpipe")
    (8, 64)
    """
    p = _check.count("stages", stages)
    m = _check.count("microbatches", microbatches)
    _check.choice("schedule", schedule, SCHEDULES)
    v = _check.count("virtual_stages", virtual_stages)
    if schedule == "gpipe":
        return m
    if schedule == "interleaved":
        # Megatron-LM's warm-up on stage 0 runs 2(p−1) + (v−1)p chunk-forwards, then one more before the first
        # backward: p + (p−1)/v full-stage micro-batches; with m = p every forward fits in the warm-up, so m.
        return _check.as_result(np.minimum(m, p + (p - 1) / v))
    in_flight = np.minimum(p, m)
    return in_flight if np.ndim(in_flight) else int(in_flight)


def splits_evenly(model: TransformerModel, tensor_parallel=1, pipeline_parallel=1, virtual_stages=1):
    """Whether a partition splits ``model`` evenly: t divides the attention heads and p·v divides the layers.

    The one home of the rule that ``check_plan_for_model``, ``budget.search_plans`` and the labs' options use.
    Vectorised: array arguments give a boolean array.

    >>> splits_evenly(GPT3_175B, tensor_parallel=8, pipeline_parallel=8), splits_evenly(GPT3_175B, 5)
    (True, False)
    >>> splits_evenly(GPT3_175B, 8, pipeline_parallel=12, virtual_stages=2)   # 96 layers into 24 chunks
    True
    """
    t = _check.count("tensor_parallel", tensor_parallel)
    p = _check.count("pipeline_parallel", pipeline_parallel)
    v = _check.count("virtual_stages", virtual_stages)
    even = _divides(t, model.heads) & _divides(np.asarray(p) * np.asarray(v), model.layers)
    return bool(even) if even.ndim == 0 else even


def _divides(parts, whole):
    """Whether ``parts`` divides ``whole`` (element-wise)."""
    return np.asarray(whole) % np.asarray(parts) == 0


def check_tensor_split(heads, tensor_parallel) -> None:
    """Raise ValueError unless t divides the attention heads: ``splits_evenly``'s first half, on raw numbers, for the
    formulas that take the head count rather than a model.

    >>> check_tensor_split(96, 8)
    >>> check_tensor_split(96, 5)
    Traceback (most recent call last):
    ...
    ValueError: tensor_parallel must divide heads (96), got 5
    """
    a = _check.count("heads", heads)
    t = _check.count("tensor_parallel", tensor_parallel)
    if not np.all(_divides(t, a)):
        raise ValueError(f"tensor_parallel must divide heads ({a}), got {t}")


def check_pipeline_split(layers, pipeline_parallel, virtual_stages=1) -> None:
    """Raise ValueError unless p·v divides the layers: ``splits_evenly``'s second half, on raw numbers.

    >>> check_pipeline_split(96, 8, 2)
    >>> check_pipeline_split(80, 3)
    Traceback (most recent call last):
    ...
    ValueError: pipeline_parallel × virtual_stages must divide layers (80), got 3 × 1
    """
    n = _check.count("layers", layers)
    p = _check.count("pipeline_parallel", pipeline_parallel)
    v = _check.count("virtual_stages", virtual_stages)
    if not np.all(_divides(np.asarray(p) * np.asarray(v), n)):
        raise ValueError(f"pipeline_parallel × virtual_stages must divide layers ({n}), got {p} × {v}")


def check_plan_for_model(model: TransformerModel, plan: ParallelPlan, calibration: Calibration | None = None) -> None:
    """Raise ValueError if the plan cannot split this model (heads, layers and virtual stages must divide evenly).

    With a ``Calibration`` the pipeline may split the layers unevenly (as Megatron-LM and nanotron allow; the heaviest
    stage sets memory and time; nanotron even runs more stages than layers, its embedding and output layer being
    stages of their own), and ZeRO above the calibration's ``max_zero_stage_with_pipeline`` is refused with p > 1.

    >>> check_plan_for_model(GPT3_175B, ParallelPlan(tensor_parallel=5))
    Traceback (most recent call last):
    ...
    ValueError: tensor_parallel must divide heads (96), got 5
    """
    check_tensor_split(model.heads, plan.tensor_parallel)
    if calibration is None:
        check_pipeline_split(model.layers, plan.pipeline_parallel, plan.virtual_stages)
    else:
        limit = calibration.max_zero_stage_with_pipeline
        if np.any((np.asarray(plan.pipeline_parallel) > 1) & (np.asarray(plan.zero_stage) > limit)):
            raise ValueError(
                f"zero_stage must be at most {limit} with pipeline_parallel > 1 (the calibration's "
                f"max_zero_stage_with_pipeline), got {plan.zero_stage}"
            )


def stage_layers(layers, pipeline_parallel):
    """Layers on the heaviest pipeline stage: ⌈l/p⌉ (an uneven split puts one more layer on some stages).

    >>> stage_layers(16, 3), stage_layers(96, 8)
    (6, 12)
    """
    l = _check.count("layers", layers)
    p = _check.count("pipeline_parallel", pipeline_parallel)
    return -(-l // p)


def activation_bytes_per_token_per_layer(
    model: TransformerModel, tensor_parallel=1, sequence_parallel=False, recompute="none", attention="standard"
):
    """Bytes one layer stores for the backward, per token of the micro-batch, term by term (16-bit activations).

    Korthikanti et al. 2022 §4's counting, generalised to the architecture (h hidden, f MLP, k = kv_heads·head_dim,
    a heads, s sequence):
    - the residual side: the two norms' inputs 2h + 2h, the attention and MLP inputs 2h + 2h, and (GPT) the two
      dropout masks h + h (1 byte each): split over t only with sequence parallelism;
    - attention: Q 2h, K and V 2k + 2k, the output (input of the output projection) 2h; standard attention adds the
      softmax 2as (GPT: + its dropout mask as + dropout output 2as = 5as); FlashAttention stores no scores, only an
      fp32 log-sum-exp per head, 4a; selective recomputation drops the scores;
    - MLP: the activation's input and output 2f + 2f; a gated MLP also the up projection and the product, 8f in all.
    Full recomputation keeps only the layer's input, 2h. For GPT with f = 4h this is Korthikanti's 34h + 5as
    (Eq. (1) per token); with t and sequence parallelism, everything divided by t.

    >>> activation_bytes_per_token_per_layer(GPT3_175B) * 2048 == activation_bytes_per_layer(2048, 1, 12288, 96)
    True
    >>> activation_bytes_per_token_per_layer(PLAYBOOK_1B, attention="flash")   # 12h + 4k + 8f + 4a
    98432.0
    """
    t = _check.count("tensor_parallel", tensor_parallel)
    sp = _check.flag("sequence_parallel", sequence_parallel)
    _check.choice("recompute", recompute, RECOMPUTE_OPTIONS)
    _check.choice("attention", attention, ATTENTION_OPTIONS)
    check_tensor_split(model.heads, t)
    h, f, a, s = model.hidden, model.ffn_hidden, model.heads, model.seq_len
    kv_width = model.kv_heads * model.head_dim
    gpt = model.style == "gpt"
    residual = 8.0 * h + (2.0 * h if gpt else 0.0)
    attention_linear = 2.0 * h + 4.0 * kv_width + 2.0 * h
    mlp = (8.0 if model.gated_mlp else 4.0) * f
    if attention == "flash":
        scores = 4.0 * a
    elif recompute == "selective":
        scores = 0.0
    else:
        scores = (5.0 if gpt else 2.0) * a * s
    split = residual / t if sp else residual
    per_token = split + (attention_linear + mlp + scores) / t
    if recompute == "full":
        per_token = 2.0 * h / t if sp else 2.0 * h
    return _check.as_result(per_token + 0.0 * t)


def memory_breakdown(
    model: TransformerModel,
    plan: ParallelPlan,
    optimizer_bytes_per_param=ADAM_OPTIMIZER_BYTES_PER_PARAM,
    calibration="default",
) -> MemoryBreakdown:
    """Per-device memory of a plan: by default the documented calibration (``calibration="default"``:
    ``calibrated_memory_breakdown`` under ``PLAYBOOK_CALIBRATION``'s memory assumptions), with ``calibration=None``
    the ideal model of lessons 03 and 04 below, or under any ``Calibration``.

    The ideal model, the first pipeline stage: model states and stored activations. Model states: the device's Ψ/(t·p)
    parameters (an even split; the embedding's imbalance is ignored) under ZeRO over the d data-parallel ranks.
    Activations: ``activation_bytes_per_layer`` × L/p layers × the micro-batches in flight
    (``pipeline_in_flight_microbatches``). Not counted: temporary buffers, the logits, fragmentation and the framework's
    own memory, so leave headroom.

    >>> mem = memory_breakdown(GPT3_175B, ParallelPlan(data_parallel=8, tensor_parallel=8, pipeline_parallel=8,
    ...                        zero_stage=1, micro_batch=1, grad_accum_steps=64, recompute="selective",
    ...                        sequence_parallel=True), calibration=None)
    >>> format_bytes(mem.model_states), format_bytes(mem.activations)
    ('15 GB', '10.3 GB')

    The calibrated model (``calibrated_memory_breakdown``) is architecture-aware and counts the precision recipe
    (fp32 main gradients: 26.6 GB of model states here), the logits, the framework's memory and uneven splits.
    """
    calibration = resolve_calibration(calibration)
    if calibration is not None:
        return calibrated_memory_breakdown(model, plan, calibration)
    check_plan_for_model(model, plan)
    params_per_device = model.params / (plan.tensor_parallel * plan.pipeline_parallel)
    parameters, gradients, optimizer = zero_model_state_breakdown(
        params_per_device, plan.data_parallel, plan.zero_stage, optimizer_bytes_per_param
    )
    per_layer = activation_bytes_per_layer(
        model.seq_len,
        plan.micro_batch,
        model.hidden,
        model.heads,
        plan.tensor_parallel,
        plan.sequence_parallel,
        plan.recompute,
    )
    in_flight = pipeline_in_flight_microbatches(
        plan.pipeline_parallel, plan.grad_accum_steps, plan.schedule, plan.virtual_stages
    )
    activations = per_layer * (model.layers / plan.pipeline_parallel) * in_flight
    return MemoryBreakdown(parameters, gradients, optimizer, _check.as_result(activations))


def calibrated_memory_breakdown(
    model: TransformerModel, plan: ParallelPlan, calibration: Calibration
) -> MemoryBreakdown:
    """Per-device memory of the heaviest pipeline stage under ``calibration``'s assumptions.

    Two stages can be the heaviest: the first holds ⌈l/p⌉ layers, the input embedding V·h/t and min(p, m)
    micro-batches of activations (1F1B); the last holds ⌈l/p⌉ layers, the output layer V·h/t (a copy when tied
    and p > 1) and one micro-batch, plus the logits b·s·V/t × ``logits_bytes_per_element``. With p = 1 they are
    the same device. Model states follow ``calibration.precision``: ZeRO-1 shards the optimizer state over d,
    ZeRO-2 also the gradients and their fp32 buffer, ZeRO-3 also the parameters. Activations per layer:
    ``activation_bytes_per_token_per_layer`` × b·s. ``framework_bytes`` is added once.

    >>> plan = ParallelPlan(data_parallel=8, micro_batch=1, grad_accum_steps=32, attention="flash")
    >>> mem = memory_breakdown(PLAYBOOK_1B, plan, calibration=Calibration())
    >>> format_bytes(mem.model_states), format_bytes(mem.activations), format_bytes(mem.logits)
    ('26.8 GB', '6.45 GB', '5.37 GB')
    """
    check_plan_for_model(model, plan, calibration)
    t, p, d, b, m, _ = plan.sizes
    h, vocab = model.hidden, model.vocab
    layers = stage_layers(model.layers, p)
    embedding = 1.0 * vocab * h
    single = np.asarray(p) == 1
    # p = 1: every layer, the embedding, the output layer when untied and the final norm on one device.
    first_params = layers * model.params_per_layer + embedding + np.where(single, model.embedding_params - embedding, 0)
    last_params = layers * model.params_per_layer + embedding + h
    param_b, grad_b, buffer_b, optimizer_b = PRECISION_RECIPES[calibration.precision]
    stage = plan.zero_stage

    def states(params):
        per_device = params / t
        parameters = param_b * per_device / (d if stage >= 3 else 1)
        gradients = (grad_b + buffer_b) * per_device / (d if stage >= 2 else 1)
        optimizer = optimizer_b * per_device / (d if stage >= 1 else 1)
        return parameters, gradients, optimizer

    tokens = 1.0 * b * model.seq_len
    per_layer = tokens * activation_bytes_per_token_per_layer(
        model, t, plan.sequence_parallel, plan.recompute, plan.attention
    )
    in_flight = pipeline_in_flight_microbatches(p, m, plan.schedule, plan.virtual_stages)
    logits = tokens * vocab / t * calibration.logits_bytes_per_element
    first = states(first_params) + (per_layer * layers * in_flight, np.where(single, logits, 0.0))
    last = states(last_params) + (per_layer * layers, logits)
    first_total, last_total = sum(first), sum(last)
    heaviest = [np.where(first_total >= last_total, a, z) for a, z in zip(first, last, strict=True)]
    framework = calibration.framework_bytes + 0.0 * first_total
    return MemoryBreakdown(*(_check.as_result(x) for x in (*heaviest, framework)))


def pipeline_bubble_fraction(stages, microbatches, virtual_stages=1):
    """Pipeline bubble as a fraction of the ideal time: (p−1)/(v·m) (Narayanan et al. 2021 §2.2).

    GPipe and 1F1B have the same bubble, (p−1)/m; interleaving v model chunks per device divides it by v, and
    needs m to be a multiple of p. The bubble is measured against the ideal time m·(t_f + t_b), so it exceeds 1
    when m < p − 1; as a share of the whole step it is (p−1)/(v·m + p − 1).

    >>> pipeline_bubble_fraction(8, 32), pipeline_bubble_fraction(8, 32, virtual_stages=2)
    (0.21875, 0.109375)
    """
    p = _check.count("stages", stages)
    m = _check.count("microbatches", microbatches)
    v = _check.count("virtual_stages", virtual_stages)
    if np.any((np.asarray(v) > 1) & (np.asarray(m) % np.asarray(p) != 0)):
        raise ValueError(f"microbatches must be a multiple of stages ({p}) when virtual_stages > 1, got {m}")
    return _check.as_result((p - 1) / (v * m))


@dataclass(frozen=True, eq=False)
class BoundaryTransfer:
    """One kind of tensor that crosses device boundaries during a training step.

    ``payload_bytes`` is S for one call of ``op`` (nccl-tests' convention), exchanged among ``group_size`` ranks,
    ``calls_per_step`` times per step. ``phase`` says which compute it can hide behind: "forward" or "backward" of
    the same micro-batch, "last backward" (the final micro-batch's backward), or "none" when the consumer waits for
    it (on the critical path).
    """

    axis: str
    tensor: str
    op: str
    payload_bytes: float
    group_size: int
    calls_per_step: int
    phase: str

    @property
    def on_critical_path(self) -> bool:
        """True when no independent compute can hide it."""
        return self.phase == "none"

    @property
    def crosses_boundary(self) -> bool:
        """True when the group has more than one rank and the transfer happens at least once per step."""
        return bool(np.all(np.asarray(self.group_size) > 1) and np.all(np.asarray(self.calls_per_step) > 0))

    @property
    def bytes_sent_per_device(self):
        """Bytes each device sends per step (ring algorithms; 0 for a group of one).

        >>> BoundaryTransfer("data", "gradients", "all_reduce", 1e9, 4, 1, "last backward").bytes_sent_per_device
        1500000000.0
        """
        cost = collectives.collective_cost(self.op, self.group_size, self.payload_bytes)
        return _check.as_result(cost.wire_bytes * self.calls_per_step)


def step_transfers(model: TransformerModel, plan: ParallelPlan) -> tuple[BoundaryTransfer, ...]:
    """Every tensor that crosses a device boundary in one step, with its collective, size and count.

    Tensor parallel (Megatron-LM, per layer and micro-batch): 2 all-reduces of the b·s·h activations forward and 2
    backward; full recomputation repeats the 2 forward ones. With sequence parallelism each all-reduce becomes a
    reduce-scatter plus an all-gather of the same tensor (the same bytes). All on the critical path.
    Pipeline parallel: per micro-batch, the stage boundary's activations forward and their gradients backward
    (b·s·h/t per device with Megatron's scatter/gather, §4.1), v times more with interleaving; on the critical path.
    Data parallel: stage 0 all-reduces gradients once per step; stage 1 reduce-scatters gradients and all-gathers
    updated parameters; stage 2 reduce-scatters gradients every micro-batch (they are partitioned); stage 3
    also all-gathers parameters for every forward and backward (ZeRO §7: 2Ψ, 2Ψ, 2Ψ, 3Ψ at one micro-batch).
    Groups of one rank are listed too and cost nothing: ``boundary_tensors`` leaves them out.

    >>> [t.tensor for t in boundary_tensors(GPT3_175B, ParallelPlan(data_parallel=2, tensor_parallel=8))]
    ['layer outputs (partial sums), forward', 'input gradients (partial sums), backward', 'gradients']
    """
    check_plan_for_model(model, plan)
    t, p, d, b, m, v = plan.sizes
    activation = ACTIVATION_BYTES * b * model.seq_len * model.hidden  # one b×s×h tensor
    layers_here = model.layers // p
    per_mb = layers_here * m  # layer-micro-batch pairs per step on a device
    forward_calls = 2 * per_mb * (2 if plan.recompute == "full" else 1)
    transfers = []
    if plan.sequence_parallel:
        transfers += [
            BoundaryTransfer(
                "tensor",
                "sequence-sharded activations gathered, forward",
                "all_gather",
                activation,
                t,
                forward_calls,
                "none",
            ),
            BoundaryTransfer(
                "tensor",
                "layer outputs reduce-scattered, forward",
                "reduce_scatter",
                activation,
                t,
                forward_calls,
                "none",
            ),
            BoundaryTransfer(
                "tensor", "activation gradients gathered, backward", "all_gather", activation, t, 2 * per_mb, "none"
            ),
            BoundaryTransfer(
                "tensor",
                "input gradients reduce-scattered, backward",
                "reduce_scatter",
                activation,
                t,
                2 * per_mb,
                "none",
            ),
        ]
    else:
        transfers += [
            BoundaryTransfer(
                "tensor", "layer outputs (partial sums), forward", "all_reduce", activation, t, forward_calls, "none"
            ),
            BoundaryTransfer(
                "tensor", "input gradients (partial sums), backward", "all_reduce", activation, t, 2 * per_mb, "none"
            ),
        ]
    stage_hops = (p > 1) * m * v  # v chunks per device: v times the stage crossings
    transfers += [
        BoundaryTransfer(
            "pipeline", "stage-boundary activations, forward", "send_recv", activation / t, p, stage_hops, "none"
        ),
        BoundaryTransfer(
            "pipeline",
            "stage-boundary activation gradients, backward",
            "send_recv",
            activation / t,
            p,
            stage_hops,
            "none",
        ),
    ]
    params_here = model.params / (t * p)
    grads, weights = GRAD_BYTES * params_here, PARAM_BYTES * params_here
    stage = plan.zero_stage
    if stage == 0:
        transfers.append(BoundaryTransfer("data", "gradients", "all_reduce", grads, d, 1 + 0 * m, "last backward"))
    elif stage == 1:
        transfers += [
            BoundaryTransfer("data", "gradients", "reduce_scatter", grads, d, 1 + 0 * m, "last backward"),
            BoundaryTransfer("data", "updated parameters", "all_gather", weights, d, 1 + 0 * m, "none"),
        ]
    elif stage == 2:
        transfers += [
            BoundaryTransfer("data", "gradients", "reduce_scatter", grads, d, m, "backward"),
            BoundaryTransfer("data", "updated parameters", "all_gather", weights, d, 1 + 0 * m, "none"),
        ]
    else:
        transfers += [
            BoundaryTransfer("data", "parameters for the forward", "all_gather", weights, d, m, "forward"),
            BoundaryTransfer("data", "parameters for the backward", "all_gather", weights, d, m, "backward"),
            BoundaryTransfer("data", "gradients", "reduce_scatter", grads, d, m, "backward"),
        ]
    return tuple(transfers)


def boundary_tensors(model: TransformerModel, plan: ParallelPlan) -> tuple[BoundaryTransfer, ...]:
    """The transfers of ``step_transfers`` that actually cross a boundary (group of more than one rank).

    >>> [(t.axis, t.op) for t in boundary_tensors(GPT3_175B, ParallelPlan(pipeline_parallel=4, grad_accum_steps=4))]
    [('pipeline', 'send_recv'), ('pipeline', 'send_recv')]
    """
    return tuple(x for x in step_transfers(model, plan) if x.crosses_boundary)


def communication_volume_per_step(model: TransformerModel, plan: ParallelPlan) -> dict:
    """Bytes each device sends per step on each axis ("data", "tensor", "pipeline"), ring algorithms.

    >>> volume = communication_volume_per_step(GPT3_175B, ParallelPlan(data_parallel=64))
    >>> format_bytes(volume["data"])   # 2(d−1)/d × 2 bytes × Ψ
    '688 GB'
    """
    volume = {"data": 0.0, "tensor": 0.0, "pipeline": 0.0}
    for transfer in step_transfers(model, plan):
        volume[transfer.axis] = volume[transfer.axis] + transfer.bytes_sent_per_device
    return volume
