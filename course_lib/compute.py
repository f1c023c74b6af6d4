"""Compute: counting the work (FLOPs), arithmetic intensity and the roofline.

A multiply-accumulate (MAC) is two floating-point operations, so multiplying an [m×k] matrix by a [k×n] matrix
costs m·n·k MACs = 2mnk FLOPs (Narayanan et al. 2021, appendix: "2m×k×n FLOPs (factor of 2 needed to account
for multiplies and adds)"). A FLOP is counted regardless of precision.

>>> from course_lib.units import format_flops
>>> format_flops(gemm_flops(4096, 4096, 4096))
'137 GFLOP'
>>> format_flops(training_flops(70e9, 15e12))   # LLaMA-3 70B on 15T tokens (scaling book: 6.3e24)
'6.3e24 FLOP'
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _check

__all__ = [
    "gemm_flops",
    "gemm_bytes",
    "count_matmul_operations",
    "arithmetic_intensity",
    "ridge_point_flops_per_byte",
    "roofline_time",
    "attainable_flops_per_s",
    "training_flops",
    "transformer_params",
    "transformer_layer_forward_flops",
    "transformer_forward_flops",
    "transformer_flops_per_iteration",
    "recompute_option",
    "PartFlops",
    "transformer_flops_by_part",
    "training_time_s",
    "RECOMPUTE_OPTIONS",
]

RECOMPUTE_OPTIONS = ("none", "selective", "full")


def gemm_flops(m, n, k):
    """FLOPs of an [m×k]·[k×n] matrix product: m·n·k multiply-accumulates = 2mnk FLOPs.

    >>> gemm_flops(2, 3, 4)
    48
    """
    m, n, k = (_check.count(name, v) for name, v in (("m", m), ("n", n), ("k", k)))
    return 2 * m * n * k


def count_matmul_operations(a, b):
    """Multiply [m×k] by [k×n] the schoolbook way and count every scalar multiply and add.

    Returns ``(product, multiplies, adds)``. Each output element needs k multiplies and k − 1 adds, so the exact
    count is mn(2k − 1); the 2mnk convention counts each multiply-accumulate as two FLOPs (the first add is
    against zero). This is the lesson's tiny-matrix demonstration of the rule, not a fast matmul.

    >>> import numpy as np
    >>> product, multiplies, adds = count_matmul_operations(np.ones((2, 4)), np.ones((4, 3)))
    >>> multiplies, adds, multiplies + adds, gemm_flops(2, 3, 4)
    (24, 18, 42, 48)
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.ndim != 2 or b.ndim != 2 or a.size == 0 or b.size == 0:
        raise ValueError(f"a and b must be non-empty 2-D matrices, got shapes {a.shape} and {b.shape}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"b must have as many rows as a has columns ({a.shape[1]}), got {b.shape[0]}")
    m, k = a.shape
    n = b.shape[1]
    product = np.zeros((m, n))
    multiplies = adds = 0
    for i in range(m):
        for j in range(n):
            total = a[i, 0] * b[0, j]
            multiplies += 1
            for p in range(1, k):
                total += a[i, p] * b[p, j]
                multiplies += 1
                adds += 1
            product[i, j] = total
    return product, multiplies, adds


def gemm_bytes(m, n, k, bytes_per_element=2):
    """Bytes a GEMM must move at least once: read A [m×k] and B [k×n], write C [m×n].

    >>> gemm_bytes(4096, 4096, 4096)   # bf16
    100663296
    """
    m, n, k = (_check.count(name, v) for name, v in (("m", m), ("n", n), ("k", k)))
    bytes_per_element = _check.positive("bytes_per_element", bytes_per_element)
    total = bytes_per_element * (m * k + k * n + m * n)
    return int(total) if float(total).is_integer() else total


def arithmetic_intensity(flops, bytes_moved):
    """Arithmetic intensity in FLOP/byte: work done per byte moved to or from memory.

    >>> round(arithmetic_intensity(gemm_flops(4096, 4096, 4096), gemm_bytes(4096, 4096, 4096)))
    1365
    """
    return _check.as_result(_check.positive("flops", flops) / _check.positive("bytes_moved", bytes_moved))


def ridge_point_flops_per_byte(peak_flops_per_s, memory_bandwidth_bytes_per_s):
    """The roofline's ridge point: the intensity above which a kernel is compute-bound (peak / bandwidth).

    >>> round(ridge_point_flops_per_byte(990e12, 3.35e12))   # H100 bf16 (scaling book: 295)
    296
    """
    return _check.as_result(
        _check.positive("peak_flops_per_s", peak_flops_per_s)
        / _check.positive("memory_bandwidth_bytes_per_s", memory_bandwidth_bytes_per_s)
    )


def roofline_time(flops, bytes_moved, peak_flops_per_s, memory_bandwidth_bytes_per_s):
    """T = max(T_math, T_mem) = max(flops / peak, bytes / bandwidth): the roofline's lower bound on time.

    >>> from course_lib.units import format_time
    >>> format_time(roofline_time(1e12, 1e9, 990e12, 3.35e12))   # 1 TFLOP on an H100: compute-bound
    '1.01 ms'
    """
    t_math = _check.positive("flops", flops) / _check.positive("peak_flops_per_s", peak_flops_per_s)
    t_mem = _check.positive("bytes_moved", bytes_moved) / _check.positive(
        "memory_bandwidth_bytes_per_s", memory_bandwidth_bytes_per_s
    )
    return _check.as_result(np.maximum(t_math, t_mem))


def attainable_flops_per_s(intensity_flops_per_byte, peak_flops_per_s, memory_bandwidth_bytes_per_s):
    """Attainable rate = min(peak, intensity × bandwidth): the roofline itself.

    >>> attainable_flops_per_s(100, 990e12, 3.35e12) / 1e12   # TFLOP/s, memory-bound
    335.0
    """
    intensity = _check.positive("intensity_flops_per_byte", intensity_flops_per_byte)
    peak = _check.positive("peak_flops_per_s", peak_flops_per_s)
    bandwidth = _check.positive("memory_bandwidth_bytes_per_s", memory_bandwidth_bytes_per_s)
    return _check.as_result(np.minimum(peak, intensity * bandwidth))


def training_flops(params, tokens):
    """C ≈ 6·P·D: 2PD forward + 4PD backward (Kaplan et al. 2020 §2.1; Transformer Math 101).

    >>> training_flops(175e9, 300e9)
    3.15e+23
    """
    return _check.as_result(6 * _check.positive("params", params) * _check.positive("tokens", tokens))


def transformer_params(layers, hidden, vocab, seq_len):
    """Parameters of a GPT-style transformer, Narayanan et al. 2021 Eq. (2): P = 12lh²(1 + 13/(12h) + (V+s)/(12lh)).

    Counts attention and MLP (h → 4h → h) weights and biases, LayerNorms, word and learned position embeddings.

    >>> from course_lib.units import format_count
    >>> format_count(transformer_params(128, 25600, 51200, 2048))   # the paper's 1T model: 1008.0B
    '1.01 trillion'
    """
    l = _check.count("layers", layers)
    h = _check.count("hidden", hidden)
    v = _check.count("vocab", vocab)
    s = _check.count("seq_len", seq_len)
    return _check.as_result(12.0 * l * h**2 * (1 + 13 / (12 * h) + (v + s) / (12 * l * h)))


def transformer_layer_forward_flops(batch, seq_len, hidden):
    """Forward FLOPs of one transformer layer: 24bsh² + 4bs²h (Narayanan et al. 2021, appendix).

    QKV projections 6bsh², scores QKᵀ 2bs²h, attention over values 2bs²h, output projection 2bsh², MLP 16bsh².

    >>> transformer_layer_forward_flops(1, 2048, 4096) == 24 * 2048 * 4096**2 + 4 * 2048**2 * 4096
    True
    """
    b = _check.count("batch", batch)
    s = _check.count("seq_len", seq_len)
    h = _check.count("hidden", hidden)
    return _check.as_result(24.0 * b * s * h**2 + 4.0 * b * s**2 * h)


def transformer_forward_flops(batch, seq_len, layers, hidden, vocab):
    """Forward FLOPs of the whole model: l·(24bsh² + 4bs²h) + 2bshV (the logit layer).

    >>> from course_lib.units import format_flops
    >>> format_flops(transformer_forward_flops(1, 2048, 96, 12288, 51200))   # GPT-3, one sequence
    '735 TFLOP'
    """
    b = _check.count("batch", batch)
    s = _check.count("seq_len", seq_len)
    h = _check.count("hidden", hidden)
    l = _check.count("layers", layers)
    v = _check.count("vocab", vocab)
    return _check.as_result(l * transformer_layer_forward_flops(b, s, h) + 2.0 * b * s * h * v)


def transformer_flops_per_iteration(batch, seq_len, layers, hidden, vocab, recompute: bool | str = True):
    """FLOPs of one training iteration (forward, backward, and any recomputation) over a global batch.

    ``recompute=True`` (or "full") is Narayanan et al. 2021 Eq. (3), F = 96Bslh²(1 + s/(6h) + V/(16lh)): the
    backward pass costs twice the forward and full activation recomputation adds one more forward per layer.
    ``recompute=False`` (or "none") is the appendix's count without recomputation, 72Bslh²(1 + s/(6h) + V/(12lh)).
    ``"selective"`` recomputes only the attention scores and their product with V (Korthikanti et al. 2022),
    adding one forward of those two s×s products, 4Bs²h per layer, to the no-recomputation count. (The paper's
    "2.7 % extra FLOPs" for GPT-3 is s/(6h) of the iteration, the attention core's forward and backward together;
    one recomputed forward is a third of that.) The logit layer (6BshV) is never recomputed.

    >>> from course_lib.units import format_flops
    >>> format_flops(transformer_flops_per_iteration(1536, 2048, 96, 12288, 51200))   # GPT-3 175B, batch 1536
    '4.51 EFLOP'
    """
    recompute = recompute_option(recompute)
    b = _check.count("batch", batch)
    s = _check.count("seq_len", seq_len)
    l = _check.count("layers", layers)
    h = _check.count("hidden", hidden)
    extra_forward = {"none": 0.0, "selective": 4.0 * b * s**2 * h, "full": transformer_layer_forward_flops(b, s, h)}[
        recompute
    ]
    # Backward = 2 × forward (Narayanan et al. 2021, appendix), logits included; recomputation is per layer.
    return _check.as_result(3 * transformer_forward_flops(b, s, l, h, vocab) + l * extra_forward)


def recompute_option(recompute) -> str:
    """The name in ``RECOMPUTE_OPTIONS`` of the recomputation ``recompute`` asks for: True is "full", False "none".

    >>> recompute_option(True), recompute_option("selective")
    ('full', 'selective')
    """
    if isinstance(recompute, (bool, np.bool_)):
        return "full" if recompute else "none"
    return _check.choice("recompute", recompute, RECOMPUTE_OPTIONS)


class PartFlops(NamedTuple):
    """The FLOPs of one part of the model in one training iteration, by pass (``transformer_flops_by_part``)."""

    part: str
    forward_flops: int
    backward_flops: int
    recompute_flops: int

    @property
    def total_flops(self) -> int:
        """Forward, backward and recomputed forward together."""
        return self.forward_flops + self.backward_flops + self.recompute_flops


def transformer_flops_by_part(batch, seq_len, layers, hidden, vocab, recompute=True) -> tuple[PartFlops, ...]:
    """The FLOPs of one training iteration over a global batch, by part of the model and by pass.

    The parts of Narayanan et al. 2021's appendix, each a sum of ``gemm_flops`` (forward, all ``layers`` together):
    ``qkv_projections`` 6bsh²·l, ``attention_scores`` (QKᵀ) 2bs²h·l, ``attention_over_values`` 2bs²h·l,
    ``output_projection`` 2bsh²·l, ``mlp`` (h → 4h → h) 16bsh²·l, and ``logits`` 2bshV. The backward pass costs twice
    the forward; recomputation (``recompute_option``) adds one more forward of every layer part ("full"), of the two
    s × s products only ("selective", Korthikanti et al. 2022) or of nothing ("none"); the logits are never
    recomputed. Exact integers, so the forward FLOPs add up to ``transformer_forward_flops`` and everything to
    ``transformer_flops_per_iteration`` with the same arguments. Each size must be a single integer.

    >>> parts = transformer_flops_by_part(batch=1, seq_len=4, layers=2, hidden=8, vocab=16, recompute="selective")
    >>> [(part.part, part.forward_flops, part.recompute_flops) for part in parts]   # doctest: +NORMALIZE_WHITESPACE
    [('qkv_projections', 3072, 0), ('attention_scores', 512, 512), ('attention_over_values', 512, 512),
     ('output_projection', 1024, 0), ('mlp', 8192, 0), ('logits', 1024, 0)]
    >>> sum(part.total_flops for part in parts) == transformer_flops_per_iteration(1, 4, 2, 8, 16, "selective")
    True
    """
    recompute = recompute_option(recompute)
    sizes = []
    for name, value in (
        ("batch", batch),
        ("seq_len", seq_len),
        ("layers", layers),
        ("hidden", hidden),
        ("vocab", vocab),
    ):
        size = _check.count(name, value)
        if not isinstance(size, int):  # Python ints: exact, where int64 would overflow for a 1T model's iteration
            raise ValueError(f"{name} must be a single integer, got {value!r}")
        sizes.append(size)
    b, s, l, h, v = sizes
    layer_parts = ("qkv_projections", "attention_scores", "attention_over_values", "output_projection", "mlp")
    recomputed = {"none": (), "selective": layer_parts[1:3], "full": layer_parts}[recompute]
    forward = {
        "qkv_projections": l * gemm_flops(b * s, 3 * h, h),
        "attention_scores": l * b * gemm_flops(s, s, h),
        "attention_over_values": l * b * gemm_flops(s, h, s),
        "output_projection": l * gemm_flops(b * s, h, h),
        "mlp": l * (gemm_flops(b * s, 4 * h, h) + gemm_flops(b * s, h, 4 * h)),
        "logits": gemm_flops(b * s, v, h),
    }
    return tuple(
        PartFlops(part, flops, 2 * flops, flops if part in recomputed else 0) for part, flops in forward.items()
    )


def training_time_s(tokens, params, gpus, achieved_flops_per_s_per_gpu):
    """End-to-end training time ≈ 8TP/(nX), Narayanan et al. 2021 Eq. (4) (full recomputation: 8 = 2 + 4 + 2).

    >>> from course_lib.units import format_time
    >>> format_time(training_time_s(300e9, 175e9, 1024, 140e12))   # the paper's "34 days" for GPT-3
    '33.9 days'
    """
    t = _check.positive("tokens", tokens)
    p = _check.positive("params", params)
    n = _check.count("gpus", gpus)
    x = _check.positive("achieved_flops_per_s_per_gpu", achieved_flops_per_s_per_gpu)
    return _check.as_result(8 * t * p / (n * x))
