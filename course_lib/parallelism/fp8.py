"""FP8 training recipes: what running the linear layers' GEMMs in FP8 changes in a step (``Fp8Recipe``, with the
presets ``TE_FP8``, ``TE_FP8_PARAM_GATHER`` and ``TORCHAO_FP8_FSDP``, catalogued in ``FP8_RECIPES``).

A recipe is opt-in: a ``Framework`` runs one when its ``fp8`` field holds it (``with_fp8``); the presets in
``FRAMEWORKS`` hold none, so every bf16 number stays as it was. What the model assumes, as the frameworks run it:
- compute: the GEMMs of the transformer layers' linear layers (Q, K, V, the attention output projection, the MLP
  or the experts) run at the device's FP8 peak; the router, the attention core (QKᵀ and the product with V), the
  normalisations, the output layer and the optimizer stay in bf16/fp32 (Transformer Engine's ``fp8_autocast``
  covers its Linear, LayerNormLinear and LayerNormMLP modules; the router is none of them: Megatron-Core computes
  its logits with ``router_gating_linear``, a plain bf16 matmul returning the router's dtype,
  NVIDIA/Megatron-LM@core_v0.19.0 megatron/core/transformer/moe/router.py:87-108 and moe/moe_utils.py:1377-1383;
  Micikevicius et al. 2022, arXiv 2209.05433 §4, keep the non-GEMM operations in higher precision; DeepSeek-V3,
  arXiv 2412.19437 §3.3.2, keeps the embedding, the output head, the gating, the normalisations and attention in
  BF16/FP32). An efficiency (the calibration's GEMM efficiency, or ``compute_efficiency``) is a fraction of the
  peak at the dtype the GEMM runs in: the same fraction of the FP8 peak for the FP8 GEMMs (an optimistic
  assumption: FP8 GEMMs often reach a smaller fraction);
- memory: ``weight_copy_bytes`` per linear-layer parameter beside the framework's precision recipe (the FP8 weight
  and its transpose a device caches), the linear layers' saved inputs in 1 byte when ``fp8_activations``; master
  weights, gradients and optimizer state as the framework's recipe says;
- bytes moved: ZeRO/FSDP parameter all-gathers move ``gather_bytes`` per linear-layer parameter; with sequence
  parallelism the tensor-parallel all-gathers move ``tensor_parallel_gather_bytes`` per element (the layer-norm
  outputs before W_QKV and the MLP's first matrices forward, the output gradients before W_O and the last matrix
  backward: Transformer Engine quantises before it gathers), the reduce-scatters (GEMM outputs) and pipeline
  activations stay 16-bit; gradients are reduced in the recipe's dtype; with ``fp8_dispatch`` the
  expert-parallel dispatch all-to-all forward (and its counterpart backward, the gradient sent to the experts'
  down-projections) carries 1 byte per element, the combine stays bf16 (DeepSeek-V3 §3.3.3).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import _check
from ..hardware import ACCELERATORS, Accelerator

__all__ = [
    "Fp8Recipe",
    "TE_FP8",
    "TE_FP8_PARAM_GATHER",
    "TORCHAO_FP8_FSDP",
    "FP8_RECIPES",
    "fp8_peak",
    "fp8_linear_weights_per_layer",
]

_TE = "NVIDIA/TransformerEngine "
_TE_TAG = "NVIDIA/TransformerEngine@v2.18 "
_MEGATRON = "NVIDIA/Megatron-LM@core_v0.19.0 "


@dataclass(frozen=True)
class Fp8Recipe:
    """How a framework runs FP8 training, each behaviour cited in ``sources`` ({field: citation}).

    ``weight_copy_bytes`` (bytes per linear-layer parameter a device holds beyond the precision recipe's:
    Transformer Engine caches an FP8 weight and its FP8 transpose, 2 B); ``gather_bytes`` (bytes per linear-layer
    parameter of a ZeRO/FSDP parameter all-gather: 2 in bf16, 1 in FP8); ``tensor_parallel_gather_bytes`` (bytes
    per element of sequence parallelism's tensor-parallel all-gathers: 2 in bf16, 1 when the recipe quantises before
    gathering); ``fp8_activations`` (whether the inputs of the linear layers are saved for the backward in FP8, 1 B
    instead of 2); ``fp8_dispatch`` (whether the expert-parallel dispatch all-to-all moves FP8, as DeepSeek-V3 does;
    off in every preset).

    >>> TE_FP8.weight_copy_bytes, TE_FP8.gather_bytes, TE_FP8_PARAM_GATHER.gather_bytes
    (2.0, 2.0, 1.0)
    >>> TE_FP8.tensor_parallel_gather_bytes
    1.0
    >>> Fp8Recipe("bad", gather_bytes=4)
    Traceback (most recent call last):
    ...
    ValueError: gather_bytes must be 1 (FP8) or 2 (bf16), got 4
    """

    name: str
    weight_copy_bytes: float = 2.0
    gather_bytes: float = 2.0
    tensor_parallel_gather_bytes: float = 2.0
    fp8_activations: bool = True
    fp8_dispatch: bool = False
    sources: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        _check.nonnegative("weight_copy_bytes", self.weight_copy_bytes)
        for name in ("gather_bytes", "tensor_parallel_gather_bytes"):
            if getattr(self, name) not in (1, 2):
                raise ValueError(f"{name} must be 1 (FP8) or 2 (bf16), got {getattr(self, name)!r}")
        _check.flag("fp8_activations", self.fp8_activations)
        _check.flag("fp8_dispatch", self.fp8_dispatch)

    def cited(self, field: str) -> str:
        """The citation of ``field``'s value ("" for a field the preset leaves at the default)."""
        return dict(self.sources).get(field, "")


TE_FP8 = Fp8Recipe(
    name="Transformer Engine FP8 (Megatron-LM --fp8-format hybrid: E4M3 forward, E5M2 gradients)",
    weight_copy_bytes=2.0,
    gather_bytes=2.0,
    tensor_parallel_gather_bytes=1.0,
    fp8_activations=True,
    sources=(
        (
            "weight_copy_bytes",
            _TE + "docs 'Using FP8 with Transformer Engine' (FP8 weight caching: the FP8 weights are cast once and "
            "reused over the micro-batches, is_first_microbatch); transformer_engine/pytorch/module/base.py "
            "get_weight_workspace: the cached FP8 weight in _fp8_workspaces with its rowwise and columnwise usage; "
            "docs features/low_precision_training/performance_considerations 'Handling transposes': on Hopper FP8 "
            "GEMMs need the weight transposed for the backward: 1 B + 1 B beside the bf16 parameter",
        ),
        (
            "gather_bytes",
            _MEGATRON + "without --fp8-param-gather the distributed optimizer all-gathers the bf16 parameters",
        ),
        (
            "tensor_parallel_gather_bytes",
            _TE_TAG + "with sequence parallelism the forward's all-gather runs on the quantized layer-norm output "
            "(transformer_engine/pytorch/module/layernorm_linear.py:279-300, gather_along_first_dim(ln_out, tp_group, "
            "quantizer=quantizer): the inputs of Megatron-Core's layer-norm linears linear_qkv and linear_fc1, "
            "gpt_layer_specs.py:145), and the backward's all-gather of a row-parallel layer's output gradient runs "
            "quantized too (module/base.py:1655-1684, grad_output_preprocess: gather_along_first_dim(grad_output, "
            "..., quantizer=quantizer) "
            "for W_O and the MLP's last matrix); the reduce-scatters carry the GEMMs' bf16 outputs",
        ),
        (
            "fp8_activations",
            _TE + "transformer_engine/pytorch/module/linear.py _Linear.forward: the quantized input, its row-wise "
            "data discarded ('not needed in backward pass'), is the saved_inputmat; 'Weight with column-wise usage is "
            "needed for dgrad GEMM'; DeepSeek-V3 (arXiv 2412.19437 §3.3.3) caches the Linear inputs in FP8 likewise",
        ),
    ),
)
TE_FP8_PARAM_GATHER = Fp8Recipe(
    name="Transformer Engine FP8 with Megatron-LM's --fp8-param-gather (FP8 parameters, fp32 master weights)",
    weight_copy_bytes=0.0,
    gather_bytes=1.0,
    tensor_parallel_gather_bytes=1.0,
    fp8_activations=True,
    sources=(
        (
            "weight_copy_bytes",
            _MEGATRON + "--fp8-param-gather builds the model under Transformer Engine's fp8_model_init "
            "(megatron/training/training.py, pretrain_gpt.py model_provider): the parameter itself is FP8 (1 B) with "
            "its transpose (1 B), in place of the 2 B bf16 parameter; the fp32 master copy stays in the optimizer",
        ),
        (
            "gather_bytes",
            _MEGATRON + "--fp8-param-gather: the distributed optimizer all-gathers the updated parameters in FP8",
        ),
        ("tensor_parallel_gather_bytes", TE_FP8.cited("tensor_parallel_gather_bytes")),
        ("fp8_activations", TE_FP8.cited("fp8_activations")),
    ),
)
TORCHAO_FP8_FSDP = Fp8Recipe(
    name="torchao float8 training with FSDP2's float8 all-gather (torchtitan --float8.enable_fsdp_float8_all_gather)",
    weight_copy_bytes=0.0,
    gather_bytes=1.0,
    tensor_parallel_gather_bytes=1.0,
    fp8_activations=False,
    sources=(
        (
            "weight_copy_bytes",
            "pytorch/ao torchao/float8/float8_linear.py: tensorwise dynamic scaling casts the weight to float8 in "
            "every forward (a transient copy, none kept across micro-batches)",
        ),
        (
            "gather_bytes",
            "pytorch/torchtitan docs/float8.md: enable_fsdp_float8_all_gather casts Float8Linear.weight to float8 "
            "before the FSDP all-gather 'so we can communicate in float8 to save bandwidth'",
        ),
        (
            "tensor_parallel_gather_bytes",
            "pytorch/torchtitan docs/float8.md: 'For parallelisms, we support float8 all-gather for FSDP (optional) "
            "and for TP (by default for Float8Linear)' (tensorwise scaling: torchao/float8/float8_tensor_parallel.py "
            "casts the module input to float8 before its redistribution, and the output gradient in the backward)",
        ),
        (
            "fp8_activations",
            "pytorch/ao torchao/float8/float8_linear.py: matmul_with_hp_or_float8_args saves input_hp (the high "
            "precision input) for the backward and casts it again there",
        ),
    ),
)
FP8_RECIPES = {"te": TE_FP8, "te-param-gather": TE_FP8_PARAM_GATHER, "torchao-fsdp": TORCHAO_FP8_FSDP}


def fp8_peak(accelerator: Accelerator) -> float:
    """The dense FP8 peak FLOP/s of ``accelerator`` (an ``hardware.Accelerator``); a ``ValueError`` naming the
    accelerators that have one when it has none.

    >>> from course_lib.hardware import A100, H100
    >>> fp8_peak(H100) / 1e12
    1979.0
    >>> fp8_peak(A100)
    Traceback (most recent call last):
    ...
    ValueError: framework.fp8 needs an accelerator with an FP8 peak (H100 SXM 80GB, H200 SXM 141GB, B200), got \
A100 SXM 80GB
    """
    if "fp8" in accelerator.peak_flops_per_s:
        return accelerator.peak("fp8")
    having = ", ".join(name for name, a in ACCELERATORS.items() if "fp8" in a.peak_flops_per_s)
    raise ValueError(f"framework.fp8 needs an accelerator with an FP8 peak ({having}), got {accelerator.name}")


def fp8_linear_weights_per_layer(model) -> float:
    """The weights per layer (every expert, the mean over the layers) whose GEMMs an FP8 recipe runs in FP8, caches
    an FP8 copy of and may gather in FP8: the linear layers' (``model.stored_matmul_weights_per_layer``) without the
    router's h × E (kept in higher precision, as the module docstring cites).

    >>> from course_lib.parallelism import LLAMA3_8B, MIXTRAL_8X7B
    >>> fp8_linear_weights_per_layer(LLAMA3_8B) == LLAMA3_8B.stored_matmul_weights_per_layer
    True
    >>> MIXTRAL_8X7B.stored_matmul_weights_per_layer - fp8_linear_weights_per_layer(MIXTRAL_8X7B)   # 4096 · 8
    32768
    """
    return model.stored_matmul_weights_per_layer - model.router_weights_per_layer
