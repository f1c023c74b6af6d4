"""Models: a decoder-only transformer's shape and architecture (``TransformerModel``) and the presets the course
uses, in three catalogues: ``MODELS`` (GPT, as Narayanan et al. 2021 and Korthikanti et al. 2022 configure it),
``LLAMA_MODELS`` (Llama 3 and 3.2) and ``PLAYBOOK_MODELS`` (the Ultra-Scale Playbook's benchmark models).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import _check

__all__ = [
    "TransformerModel",
    "ARCHITECTURE_STYLES",
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
    "MODELS",
    "LLAMA_MODELS",
    "PLAYBOOK_MODELS",
]

ARCHITECTURE_STYLES = ("gpt", "llama")


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
        assert self.kv_heads is not None and self.ffn_hidden is not None  # __post_init__ resolved the defaults
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
        assert self.kv_heads is not None and self.ffn_hidden is not None  # __post_init__ resolved the defaults
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
