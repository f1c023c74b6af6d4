"""Models: a decoder-only transformer's shape and architecture (``TransformerModel``) and the presets the course
uses, in four catalogues: ``MODELS`` (GPT, as Narayanan et al. 2021 and Korthikanti et al. 2022 configure it),
``LLAMA_MODELS`` (Llama 3 and 3.2), ``PLAYBOOK_MODELS`` (the Ultra-Scale Playbook's benchmark models) and
``MOE_MODELS`` (mixtures of experts: Mixtral, DeepSeekMoE); and ``PUBLISHED_MODELS``, the further models of the
published training runs (``course_lib/data/published_runs.csv``), with ``PUBLISHED_RUN_MODELS`` mapping each run's
``model`` string to its preset and ``UNREPRESENTABLE_MODELS`` saying why the others have none.

>>> PUBLISHED_RUN_MODELS["Nemotron4 15B"] is NEMOTRON4_15B, NEMOTRON4_15B.kv_heads, round(NEMOTRON4_15B.params / 1e9, 1)
(True, 8, 15.6)
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
    "MIXTRAL_8X7B",
    "MIXTRAL_8X22B",
    "DEEPSEEK_MOE_16B",
    "LLAMA2_7B",
    "LLAMA2_13B",
    "LLAMA2_70B",
    "NEMO_GPT3_5B",
    "NEMO_GPT3_20B",
    "NEMOTRON3_8B",
    "NEMOTRON3_22B",
    "NEMOTRON4_15B",
    "NEMOTRON4_340B",
    "MEGATRON_WEAK_SCALING_MODELS",
    "GROK1_314B",
    "MODELS",
    "LLAMA_MODELS",
    "PLAYBOOK_MODELS",
    "MOE_MODELS",
    "PUBLISHED_MODELS",
    "PUBLISHED_RUN_MODELS",
    "UNREPRESENTABLE_MODELS",
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

    A mixture of experts (``experts`` E > 1) replaces the MLP of its last l − ``dense_layers`` layers by E expert MLPs
    of hidden size ``moe_ffn_hidden`` (f_e; ``ffn_hidden`` when None), a router (an h × E matrix, no bias) that sends
    each token to ``experts_per_token`` k of them, and ``shared_experts`` MLPs of size f_e that every token visits.
    ``params`` counts every expert (what memory stores); ``active_params`` the weights one token uses (k routed
    experts, the shared ones and the router); the two are equal for a dense model (E = 1, the default).

    >>> LLAMA3_8B.params, LLAMA3_8B.kv_heads, LLAMA3_8B.head_dim
    (8030261248, 8, 128)
    >>> MIXTRAL_8X7B.params, MIXTRAL_8X7B.active_params   # 46.7 B total, 12.9 B active (Mistral AI 2023)
    (46702792704, 12879925248)
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
    experts: int = 1
    experts_per_token: int = 1
    moe_ffn_hidden: int | None = None
    shared_experts: int = 0
    dense_layers: int = 0

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
        self._resolve_experts(ffn)

    def _resolve_experts(self, ffn: int):
        experts = _check.count("experts", self.experts)
        k = _check.count("experts_per_token", self.experts_per_token)
        if k > experts:
            raise ValueError(f"experts_per_token must be between 1 and experts ({experts}), got {k}")
        moe_ffn = ffn if self.moe_ffn_hidden is None else _check.count("moe_ffn_hidden", self.moe_ffn_hidden)
        shared = _check.count("shared_experts", self.shared_experts, minimum=0)
        dense = _check.count("dense_layers", self.dense_layers, minimum=0)
        if dense > self.layers:
            raise ValueError(f"dense_layers must be between 0 and layers ({self.layers}), got {dense}")
        if experts == 1 and (shared or dense):
            raise ValueError(f"shared_experts and dense_layers need experts > 1, got experts = {experts}")
        object.__setattr__(self, "moe_ffn_hidden", moe_ffn)

    @property
    def head_dim(self) -> int:
        """h / a: the size of one attention head."""
        return self.hidden // self.heads

    @property
    def moe_layers(self) -> int:
        """Layers whose MLP is a mixture of experts: l − dense_layers (0 for a dense model)."""
        return self.layers - self.dense_layers if self.experts > 1 else 0

    def _layer_sum(self, *, active: bool, params: bool) -> int:
        """Matrix weights (``params=False``) or parameters of all l layers: each expert as the token sees it."""
        assert self.kv_heads is not None and self.ffn_hidden is not None and self.moe_ffn_hidden is not None
        h, kv_width = self.hidden, self.kv_heads * self.head_dim
        attention = 2 * h * h + 2 * h * kv_width
        if params and self.style == "gpt":
            attention += 2 * h + 2 * kv_width + 2 * 2 * h  # biases of W_Q, W_K, W_V, W_O; two LayerNorms (2h each)
        elif params:
            attention += 2 * h  # two RMSNorms

        routed = self.experts_per_token if active else self.experts
        expert = self._mlp(self.moe_ffn_hidden, params=params)
        moe = (routed + self.shared_experts) * expert + h * self.experts  # the router: h × E
        dense_mlp = self._mlp(self.ffn_hidden, params=params)
        return self.layers * attention + (self.layers - self.moe_layers) * dense_mlp + self.moe_layers * moe

    def _mlp(self, ffn_hidden: int, *, params: bool) -> int:
        """Matrix weights (or parameters, with GPT's biases) of one MLP of hidden size ``ffn_hidden``."""
        h = self.hidden
        weights = (3 if self.gated_mlp else 2) * h * ffn_hidden
        biases = ((2 if self.gated_mlp else 1) * ffn_hidden + h) if params and self.style == "gpt" else 0
        return weights + biases

    @property
    def routed_matmul_weights_per_layer(self) -> int | float:
        """Weights of the k routed experts a token visits in one layer, the mean over the l layers (0 for a dense
        model): the part of ``matmul_weights_per_layer`` whose compute the capacity factor pads.

        >>> MIXTRAL_8X7B.routed_matmul_weights_per_layer   # 2 · 3·4096·14336
        352321536
        """
        assert self.moe_ffn_hidden is not None
        return self._per_layer(self.moe_layers * self.experts_per_token * self._mlp(self.moe_ffn_hidden, params=False))

    @property
    def router_weights_per_layer(self) -> int | float:
        """Weights of the router's h × E matrix, the mean over the l layers (0 for a dense model): a GEMM frameworks
        keep out of FP8 (``parallelism.fp8``).

        >>> MIXTRAL_8X7B.router_weights_per_layer   # 4096 · 8
        32768
        """
        return self._per_layer(self.moe_layers * self.hidden * self.experts)

    @property
    def routed_expert_params(self) -> int:
        """Parameters of the routed experts, every MoE layer: (l − dense_layers) · E · (one expert MLP). Expert
        parallelism splits these over e ranks; everything else (attention, router, shared experts, dense layers,
        embeddings) each rank of an expert group holds whole. 0 for a dense model.

        >>> MIXTRAL_8X7B.routed_expert_params   # 32 layers × 8 experts × 3·4096·14336
        45097156608
        """
        assert self.moe_ffn_hidden is not None
        return self.moe_layers * self.experts * self._mlp(self.moe_ffn_hidden, params=True)

    def _per_layer(self, total: int) -> int | float:
        return total // self.layers if total % self.layers == 0 else total / self.layers

    @property
    def matmul_weights_per_layer(self) -> int | float:
        """Weights of one layer's matrix multiplies that a token uses (the FLOPs per token count these): W_Q and W_O
        h × h, W_K and W_V h × (kv_heads · head_dim), and the MLP's two h × f matrices (three when gated); in a
        mixture of experts, the k experts a token visits, the shared experts and the h × E router. Each weight
        costs 2 FLOPs per token in the forward pass. The mean over the l layers: an integer unless dense and MoE
        layers mix. ``stored_matmul_weights_per_layer`` counts every expert.

        >>> LLAMA3_8B.matmul_weights_per_layer   # 2·4096² + 2·4096·1024 + 3·4096·14336
        218103808
        >>> MIXTRAL_8X7B.matmul_weights_per_layer   # 2·4096² + 2·4096·1024 + 2 · 3·4096·14336 + 4096·8
        394297344
        """
        return self._per_layer(self._layer_sum(active=True, params=False))

    @property
    def stored_matmul_weights_per_layer(self) -> int | float:
        """Weights of one layer's matrix multiplies with every expert (what memory holds): equals
        ``matmul_weights_per_layer`` for a dense model. The mean over the l layers.

        >>> MIXTRAL_8X7B.stored_matmul_weights_per_layer   # 2·4096² + 2·4096·1024 + 8 · 3·4096·14336 + 4096·8
        1451261952
        """
        return self._per_layer(self._layer_sum(active=False, params=False))

    @property
    def params_per_layer(self) -> int | float:
        """Parameters of one transformer layer, every expert included (what memory stores): attention, MLP (or
        experts and router), their biases (GPT) and the two norms. The mean over the l layers.

        Attention: W_Q and W_O are h × h, W_K and W_V h × (kv_heads · head_dim). MLP: two h × f matrices, three when
        gated. GPT adds a bias to each of them and two LayerNorms of 2h; Llama has two RMSNorms of h.

        >>> GPT3_175B.params_per_layer == 12 * 12288**2 + 13 * 12288   # Narayanan et al. 2021 Eq. (2), per layer
        True
        """
        return self._per_layer(self._layer_sum(active=False, params=True))

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
        """Parameter count, every expert included: the l layers + embedding_params (Narayanan et al. 2021 Eq. (2)
        for GPT).

        >>> round(GPT3_175B.params / 1e9, 1)
        174.6
        """
        return self._layer_sum(active=False, params=True) + self.embedding_params

    @property
    def active_params(self) -> int:
        """Parameters one token uses: ``params`` with only the k routed experts (plus shared ones and the router) of
        each MoE layer; the embeddings count whole, as Mistral AI counts Mixtral 8x7B's 12.9 B. Equals ``params``
        for a dense model.

        >>> LLAMA3_8B.active_params == LLAMA3_8B.params
        True
        """
        return self._layer_sum(active=True, params=True) + self.embedding_params


# Configurations: Narayanan et al. 2021 Table 1 (7.5B, 1T; V = 51,200, s = 2048) and Korthikanti et al. 2022
# Table 3 (22B, 175B, 530B, 1T). GPT-2 XL (Radford et al. 2019) is the 1.5B model ZeRO §3 uses as its example.
GPT2_1_5B = TransformerModel("GPT-2 1.5B", 48, 1600, 25, 50257, 1024)
MEGATRON_7_5B = TransformerModel("GPT 7.5B (Megatron)", 36, 4096, 32, 51200, 2048)
MEGATRON_22B = TransformerModel("GPT 22B (Megatron)", 48, 6144, 64, 51200, 2048)
GPT3_175B = TransformerModel("GPT-3 175B", 96, 12288, 96, 51200, 2048)
MT_NLG_530B = TransformerModel("MT-NLG 530B", 105, 20480, 128, 51200, 2048)
MEGATRON_1T = TransformerModel("GPT 1T (Megatron)", 128, 25600, 160, 51200, 2048)


def _llama(name, layers, hidden, heads, kv_heads, ffn_hidden, vocab, seq_len, tied_embeddings, **experts):
    """A Llama-style model (``experts``: a mixture of experts' fields; its experts' size is ``ffn_hidden``)."""
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
        **experts,
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
# Mixtral (Jiang et al. 2024, "Mixtral of Experts", arXiv 2401.04088, Table 1): Llama-style layers (SwiGLU, RMSNorm,
# rotary positions, no biases) whose MLP is 8 experts, top-2, untied embeddings. Fields from the config.json of
# mistralai/Mixtral-8x7B-v0.1 (num_hidden_layers 32, hidden_size 4096, num_attention_heads 32, num_key_value_heads 8,
# intermediate_size 14336, num_local_experts 8, num_experts_per_tok 2, vocab_size 32000, max_position_embeddings
# 32768, tie_word_embeddings false) and of mistralai/Mixtral-8x22B-v0.1 (56, 6144, 48, 8, 16384, 8, 2, 32000, 65536,
# false). Published counts: 46.7 B total, 12.9 B per token (Mistral AI, "Mixtral of experts", 11 December 2023; the
# paper, §2: 47 B and 13 B); 141 B and 39 B (Mistral AI, "Cheaper, Better, Faster, Stronger", 17 April 2024).
# tests/test_models checks them to that precision.
_MIXTRAL = dict(tied_embeddings=False, experts=8, experts_per_token=2)
MIXTRAL_8X7B = _llama("Mixtral 8x7B", 32, 4096, 32, 8, 14336, 32000, 32768, **_MIXTRAL)
MIXTRAL_8X22B = _llama("Mixtral 8x22B", 56, 6144, 48, 8, 16384, 32000, 65536, **_MIXTRAL)
# DeepSeekMoE 16B (Dai et al. 2024, "DeepSeekMoE", arXiv 2401.06066, §5: 16.4 B total, 2.8 B activated): fine-grained
# experts, 2 shared, a dense first layer. Fields from deepseek-ai/deepseek-moe-16b-base config.json: num_hidden_layers
# 28, hidden_size 2048, num_attention_heads 16, num_key_value_heads 16, intermediate_size 10944 (the dense layer),
# moe_intermediate_size 1408, n_routed_experts 64, num_experts_per_tok 6, n_shared_experts 2 (its code builds one MLP
# of 2 × 1408: the same weights), first_k_dense_replace 1, vocab_size 102400, max_position_embeddings 4096,
# tie_word_embeddings false; the gate is a 64 × 2048 weight with no bias (modeling_deepseek.py, MoEGate).
DEEPSEEK_MOE_16B = _llama(
    "DeepSeekMoE 16B", 28, 2048, 16, 16, 10944, 102400, 4096, tied_embeddings=False,
    experts=64, experts_per_token=6, moe_ffn_hidden=1408, shared_experts=2, dense_layers=1,
)  # fmt: skip
# The GPT presets (the memory lab's models); the Llama-style presets; the Playbook's benchmark models; the mixtures
# of experts.
MODELS = {m.name: m for m in (GPT2_1_5B, MEGATRON_7_5B, MEGATRON_22B, GPT3_175B, MT_NLG_530B, MEGATRON_1T)}
LLAMA_MODELS = {m.name: m for m in (LLAMA32_1B, LLAMA32_3B, LLAMA3_8B, LLAMA3_70B, LLAMA3_405B)}
PLAYBOOK_MODELS = {m.name: m for m in (PLAYBOOK_1B, PLAYBOOK_3B, PLAYBOOK_8B, PLAYBOOK_80B)}
MOE_MODELS = {m.name: m for m in (MIXTRAL_8X7B, MIXTRAL_8X22B, DEEPSEEK_MOE_16B)}


# The further models of the published training runs (course_lib/data/published_runs.csv; its README cites each run).
# Llama 2 (Touvron et al. 2023, arXiv 2307.09288, Table 1; config.json of meta-llama/Llama-2-7b-hf, -13b-hf, -70b-hf:
# num_hidden_layers 32/40/80, hidden_size 4096/5120/8192, num_attention_heads 32/40/64, num_key_value_heads 32/40/8,
# intermediate_size 11008/13824/28672, vocab_size 32000, max_position_embeddings 4096, tie_word_embeddings false).
# Counts equal the checkpoints' to the parameter: 6,738,415,616, 13,015,864,320 and 68,976,648,192 (tests/test_models).
LLAMA2_7B = _llama("Llama 2 7B", 32, 4096, 32, 32, 11008, 32000, 4096, tied_embeddings=False)
LLAMA2_13B = _llama("Llama 2 13B", 40, 5120, 40, 40, 13824, 32000, 4096, tied_embeddings=False)
LLAMA2_70B = _llama("Llama 2 70B", 80, 8192, 64, 8, 28672, 32000, 4096, tied_embeddings=False)
# NeMo's GPT-3 configurations (NVIDIA/NeMo nemo/collections/llm/gpt/model/base.py, GPTConfig5B: num_layers 24,
# hidden_size 4096, ffn_hidden_size 16384, num_attention_heads 32; GPTConfig20B: 44, 6144, 24576, 48; seq_length 2048;
# Megatron's GPT defaults: GeLU MLP, biases, LayerNorm, learned positions, tied embeddings). NeMo trains them on the
# GPT-2 BPE (50,257 tokens) padded by Megatron to a multiple of 128 · TP; the vocabulary here is GPT3_175B's 51,200,
# as the DGX Cloud recipes state for NeMo's GPT-3 (the unpadded 50,257 would lower the FLOPs per token by < 0.1 %).
NEMO_GPT3_5B = TransformerModel("GPT-3 5B (NeMo)", 24, 4096, 32, 51200, 2048)
NEMO_GPT3_20B = TransformerModel("GPT-3 20B (NeMo)", 44, 6144, 48, 51200, 2048)


def _nemotron(name, layers, hidden, heads, kv_heads, ffn_hidden):
    """A Nemotron model (NVIDIA/NeMo nemo/collections/llm/gpt/model/nemotron.py, NemotronConfig): squared-ReLU MLP of
    two matrices (gated_mlp=False: up and down projections, 4hf FLOPs per token, as the course counts any 2-matrix
    MLP), no biases (add_bias_linear False), rotary positions on half of each head (no parameters), untied embeddings,
    vocabulary 256,000, sequence 4,096. Style "llama" fits: no biases, no learned positions. Its LayerNorm1p has a
    bias as well as a weight (2h per norm where the course counts h): 2h per layer, under 10⁻⁵ of the count."""
    return TransformerModel(
        name, layers, hidden, heads, 256000, 4096, ffn_hidden=ffn_hidden, kv_heads=kv_heads, gated_mlp=False,
        tied_embeddings=False, style="llama",
    )  # fmt: skip


# NeMo 24.07's "Nemotron-8B" and "Nemotron-22B" are Nemotron-3 8B and 22B (nemotron.py, Nemotron3Config8B: 32 layers,
# hidden 4096, ffn 16384, 32 heads; Nemotron3Config22B: 40, 6144, 24576, 48; num_query_groups None: multi-head
# attention); their published FLOP/s ÷ tokens/s equal this count within 0.1 % (tests/test_models). Nemotron-4 15B
# (Parmar et al. 2024, arXiv 2402.16819, Table 1: 32 layers, hidden 6144, 48 heads, 8 KV heads, "3.2 billion embedding
# and 12.5 billion non-embedding parameters") and 340B (NVIDIA 2024, arXiv 2406.11704, Table 1: 96 layers, hidden
# 18432, 96 heads, 8 KV heads, "9.4 billion embedding and 331.6 billion non-embedding"); Nemotron4Config15B and
# Nemotron4Config340B give the same fields, ffn 24576 and 73728 (4h). NeMo 24.07's "Nemotron-340B" is Nemotron-4 340B.
NEMOTRON3_8B = _nemotron("Nemotron-3 8B", 32, 4096, 32, 32, 16384)
NEMOTRON3_22B = _nemotron("Nemotron-3 22B", 40, 6144, 48, 48, 24576)
NEMOTRON4_15B = _nemotron("Nemotron-4 15B", 32, 6144, 48, 8, 24576)
NEMOTRON4_340B = _nemotron("Nemotron-4 340B", 96, 18432, 96, 8, 73728)
# Megatron-LM's weak-scaling GPTs (NVIDIA/Megatron-LM@f2e5db402c README.md, "All models use a vocabulary size of
# 131,072 and a sequence length of 4096", and images/model_table.png: layers, hidden size and heads). Neither states
# the MLP, the attention or the embeddings: assumed Megatron's GPT defaults (MLP 4h with GeLU, multi-head attention,
# biases, LayerNorm, learned positions) and untied embeddings, the one choice whose counts give the table's sizes
# (7.13B, 16.1B, 69.8B, 177.2B with untied; 6.60B, 15.3B, 68.8B, 175.6B tied). Keyed by the published size.
MEGATRON_WEAK_SCALING_MODELS = {
    size: TransformerModel(f"GPT {size} (Megatron-LM weak scaling)", layers, hidden, heads, 131072, 4096,
                           tied_embeddings=False)
    for size, layers, hidden, heads in (
        ("1.7B", 24, 2048, 16), ("7.1B", 30, 4096, 32), ("16B", 32, 6144, 48), ("32B", 48, 7168, 56),
        ("70B", 84, 8192, 64), ("119B", 92, 10240, 80), ("177B", 96, 12288, 96), ("314B", 96, 16384, 128),
        ("462B", 112, 18432, 144),
    )
}  # fmt: skip
# Grok-1 (xai-org/grok-1 README: 314B parameters, 8 experts, 2 per token, 64 layers, 48 query and 8 key/value heads,
# embedding 6,144, vocabulary 131,072, context 8,192; run.py: emb_size 48 · 128, widening_factor 8, key_size 128;
# model.py ffn_size: int(8 · 6144) · 2 // 3 = 32,768, a gated GeLU MLP of three matrices (linear, linear_v,
# linear_1), no biases, RMSNorm, rotary positions, one embedding matrix for input and output (InOutEmbed): tied).
# Its four RMSNorms per layer (before and after attention and MoE) are 2h more per layer than the course counts.
# The count, 315.7 B, is 0.5 % above the README's "314B" (tests/test_models).
GROK1_314B = _llama("Grok-1 314B", 64, 6144, 48, 8, 32768, 131072, 8192, tied_embeddings=True,
                    experts=8, experts_per_token=2)  # fmt: skip
PUBLISHED_MODELS = {
    m.name: m
    for m in (LLAMA2_7B, LLAMA2_13B, LLAMA2_70B, NEMO_GPT3_5B, NEMO_GPT3_20B, NEMOTRON3_8B, NEMOTRON3_22B,
              NEMOTRON4_15B, NEMOTRON4_340B, *MEGATRON_WEAK_SCALING_MODELS.values(), GROK1_314B)
}  # fmt: skip

# Each published run's ``model`` string (published_runs.csv) to the preset of that architecture. Spellings differ by
# source: NeMo 24.07 ("GPT3-175B", "LLAMA3-8B"), Megatron-Bridge ("LLAMA3_70B", "LLAMA3.1_405B"), DGX Cloud
# ("GPT 3 175B", "Nemotron4 15B"), torchtitan ("Llama 3.1 8B"), the Llama 3 paper ("Llama 3 405B"). Llama 3 and 3.1
# share their shapes (config.json of meta-llama/Meta-Llama-3-8B and -70B); NeMo's and DGX Cloud's GPT-3 175B is
# GPT3_175B (vocabulary 51,200 as DGX Cloud states).
PUBLISHED_RUN_MODELS = {
    "GPT 3 175B": GPT3_175B,
    "GPT3-175B": GPT3_175B,
    "GPT3-5B": NEMO_GPT3_5B,
    "GPT3-20B": NEMO_GPT3_20B,
    **{m.name: m for m in MEGATRON_WEAK_SCALING_MODELS.values()},
    "LLAMA2-7B": LLAMA2_7B,
    "LLAMA2-13B": LLAMA2_13B,
    "LLAMA2-70B": LLAMA2_70B,
    "LLAMA3-8B": LLAMA3_8B,
    "LLAMA3_8B": LLAMA3_8B,
    "Llama 3.1 8B": LLAMA3_8B,
    "LLAMA3-70B": LLAMA3_70B,
    "LLAMA3_70B": LLAMA3_70B,
    "Llama 3.1 70B": LLAMA3_70B,
    "LLAMA3.1_405B": LLAMA3_405B,
    "Llama 3.1 405B": LLAMA3_405B,
    "Llama 3 405B": LLAMA3_405B,
    "Nemotron-8B": NEMOTRON3_8B,
    "Nemotron-22B": NEMOTRON3_22B,
    "Nemotron4 15B": NEMOTRON4_15B,
    "Nemotron-340B": NEMOTRON4_340B,
    "Nemotron4 340B": NEMOTRON4_340B,
    "Grok 1 314B": GROK1_314B,
}
# The runs' models a TransformerModel cannot describe, and why. Qwen3 and GPT-OSS set their head size apart from
# hidden / heads (config.json head_dim), so their attention projections are h × (a · head_dim), not h × h, and the
# attention scores cost 4s · a · head_dim per token, not 4sh: the course derives both from h (head_dim = h / a).
UNREPRESENTABLE_MODELS = {
    "Qwen3_30B_a3B": "attention wider than the model: 32 heads × head_dim 128 = 4096 ≠ hidden 2048 (Qwen/Qwen3-30B-A3B "
    "config.json), and QK-norm",
    "Qwen3_30B_a3B (tokendrop)": "as Qwen3_30B_a3B (the same model, trained with token dropping)",
    "Qwen3_235B_a22B": "attention wider than the model: 64 heads × head_dim 128 = 8192 ≠ hidden 4096 "
    "(Qwen/Qwen3-235B-A22B config.json), and QK-norm",
    "Qwen3_235B_a22B (tokendrop)": "as Qwen3_235B_a22B (the same model, trained with token dropping)",
    "GPT OSS 120B": "attention wider than the model (64 heads × head_dim 64 = 4096 ≠ hidden 2880), sliding-window "
    "attention (128 tokens) on every other layer, attention sinks and biases on the experts (openai/gpt-oss-120b "
    "config.json)",
    "DeepSeekV3 (dropless)": "multi-head latent attention (low-rank compressed K/V and queries, decoupled rotary "
    "heads) and a multi-token-prediction module (DeepSeek-V3 report, arXiv 2412.19437, §2.1-2.2)",
    "DeepSeek-V3 671B": "as DeepSeekV3 (dropless): multi-head latent attention and multi-token prediction",
    "Nemotron_3_Nano": "hybrid of Mamba-2 state-space layers, a few attention layers and MoE layers "
    "(nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B): no attention-only layer model applies",
}
