"""The course's glossary, in one place: every term, abbreviation, symbol, hardware and software name and the plan
notation the lessons and labs use, each with a one-line definition, the notebook that introduces it and, where the
definition states a fact, its source.

``notebooks/glossary.ipynb`` shows ``markdown()`` (tests/test_glossary.py checks that it is the same text), one HTML
anchor per entry, so that a lesson can link ``glossary.ipynb#hbm`` at a term's first use. The same test reads the
lessons and labs in the order of the course and fails where a term is used before the cell that defines it (bold at
its definition, or a link to its entry), and where a symbol stands for two different things.

>>> entry = ENTRIES_BY_ANCHOR["hbm"]
>>> entry.term, entry.kind
('HBM', 'abbreviation')
>>> markdown().count('<a id="hbm"></a>')
1
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["KINDS", "Entry", "ENTRIES", "ENTRIES_BY_ANCHOR", "notebook_label", "markdown"]

# The kinds of entry, in the order the glossary shows them, with the heading of each section.
KINDS = {
    "term": "Terms",
    "abbreviation": "Abbreviations",
    "hardware": "Hardware and cloud instances",
    "software": "Software",
    "symbol": "Symbols",
    "notation": "Notation",
}
_ANCHOR = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
# Where a notebook lives, as a link from notebooks/ (the glossary's folder): a lesson or a lab's student version.
_NOTEBOOK = re.compile(r"(?:\d\d_\w+|\.\./labs/\d\d_\w+)\.ipynb")


@dataclass(frozen=True)
class Entry:
    """One glossary entry.

    ``term`` as the glossary prints it (markdown: a symbol in $...$); ``anchor`` its HTML id in the glossary notebook
    (lower case, hyphens); ``kind`` one of ``KINDS``; ``definition`` one line of markdown; ``introduced_in`` the
    notebook (a link from notebooks/: ``01_mac.ipynb``, ``../labs/05_measure_collectives.ipynb``) where a learner
    meets it first; ``aliases`` the regular expressions that find the term in a lesson's prose (case-sensitive; the
    test adds word boundaries; none for a symbol that the course map's notation table defines before any lesson);
    ``nouns`` for a symbol, the things it counts or indexes ("$k$ chunks", "rank $r$"), singular; ``code_name`` the
    course_lib name a symbol stands for; ``source`` where a stated fact comes from.

    >>> Entry("X", "x", "term", "A letter.", "01_mac.ipynb").anchor
    'x'
    >>> Entry("X", "X!", "term", "A letter.", "01_mac.ipynb")
    Traceback (most recent call last):
    ...
    ValueError: anchor must be lower-case words joined by hyphens (e.g. 'ring-all-reduce'), got 'X!'
    """

    term: str
    anchor: str
    kind: str
    definition: str
    introduced_in: str
    aliases: tuple[str, ...] = ()
    nouns: tuple[str, ...] = ()
    code_name: str = ""
    source: str = ""

    def __post_init__(self):
        if not _ANCHOR.fullmatch(self.anchor):
            raise ValueError(
                f"anchor must be lower-case words joined by hyphens (e.g. 'ring-all-reduce'), got {self.anchor!r}"
            )
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {sorted(KINDS)}, got {self.kind!r}")
        if not self.term or not self.definition or "\n" in self.definition or "|" in self.definition:
            raise ValueError(f"{self.anchor}: term and definition must be non-empty, one line, without '|'")
        if not _NOTEBOOK.fullmatch(self.introduced_in):
            raise ValueError(
                "introduced_in must be a lesson or lab as linked from notebooks/ ('01_mac.ipynb', "
                f"'../labs/01_ring_allreduce.ipynb'), got {self.introduced_in!r}"
            )
        for alias in self.aliases:
            re.compile(alias)  # a bad pattern fails here, where the entry is written


_NVIDIA_H100 = "NVIDIA H100 Tensor Core GPU datasheet and Hopper architecture whitepaper (2022)"
_NVIDIA_A100 = "NVIDIA A100 Tensor Core GPU architecture whitepaper (2020)"

ENTRIES: tuple[Entry, ...] = (
    # ---- terms ----
    Entry(
        "all-reduce, all-gather, reduce-scatter",
        "collectives",
        "term",
        "Collectives: every rank ends with the sum of all buffers; with all ranks' chunks; with one chunk of the sum.",
        "02_nccl.ipynb",
        source="MPI standard 4.0, chapter 6; NCCL documentation, Collective operations",
    ),
    Entry(
        "B/W split",
        "bw-split",
        "term",
        "Zero-bubble schedules split a micro-batch's backward pass into B, the input gradient the previous "
        "stage waits for, and W, the weight gradient nothing waits for, which the schedule moves into the "
        "bubble.",
        "06_sequences_and_experts.ipynb",
        (r"B/W split",),
        source="Qi et al. 2024, Zero Bubble Pipeline Parallelism, ICLR 2024, arXiv:2401.10241, §2",
    ),
    Entry(
        "Bruck",
        "bruck",
        "term",
        "Bruck et al.'s all-to-all: ⌈lg p⌉ steps, step k sending the blocks whose index has bit k set; fewer steps "
        "than the pairwise exchange's p − 1, about lg p / 2 times its bytes.",
        "07_measure.ipynb",
        (r"Bruck",),
        source="Bruck et al. 1997, Efficient algorithms for all-to-all communications in multiport message-passing "
        "systems, IEEE TPDS 8(11); course_lib.collectives.collective_cost",
    ),
    Entry(
        "capacity factor",
        "capacity-factor",
        "term",
        "When one is set, the multiple of its even share of a batch's routed tokens that each expert's buffer "
        "holds (padded to it, the tokens beyond it dropped): it bounds load imbalance, and the all-to-alls and "
        "the slowest rank's compute grow with it. Without one, routing is dropless (Megatron-Core's default).",
        "06_sequences_and_experts.ipynb",
        (r"capacity factors?",),
        source="Lepikhin et al. 2021, GShard, arXiv:2006.16668; Fedus et al. 2022, Switch Transformers, JMLR",
    ),
    Entry(
        "chunked prefill",
        "chunked-prefill",
        "term",
        "An engine's scheduling that cuts prompts into chunks sharing iterations with the decoding sequences, under a "
        "token budget per iteration (vLLM's max_num_batched_tokens), so a long prefill no longer stalls the decodes.",
        "10_serving.ipynb",
        (r"[Cc]hunked prefills?",),
        source="Agrawal et al. 2023, SARATHI, arXiv:2308.16369; vLLM documentation, Optimization and Tuning",
    ),
    Entry(
        "continuous batching",
        "continuous-batching",
        "term",
        "An engine's batching that rebuilds the batch every iteration: a finished sequence leaves and a waiting "
        "request joins at once, instead of the batch running until all its sequences end.",
        "10_serving.ipynb",
        (r"[Cc]ontinuous batching",),
        source="Yu et al. 2022, Orca, OSDI 2022 (iteration-level scheduling)",
    ),
    Entry(
        "context parallelism",
        "context-parallelism",
        "term",
        "Splitting the sequence dimension of every activation (attention included) across devices, each holding "
        "a slice of the tokens; Megatron-Core's CP.",
        "03_parallelism.ipynb",
        (r"[Cc]ontext[ -]parallel(?:ism)?",),
        source="NVIDIA Megatron-Core documentation, context parallelism; Liu et al. 2023, Ring Attention",
    ),
    Entry(
        "copy engine",
        "copy-engine",
        "term",
        "A GPU's DMA engine: it copies between memories (another GPU's, the host's) without using the SMs.",
        "07_measure.ipynb",
        (r"copy engines?",),
        source="NVIDIA CUDA C++ Programming Guide, asynchronous concurrent execution",
    ),
    Entry(
        "decode",
        "decode",
        "term",
        "The serving phase that generates one token per sequence per step, reading every weight and the KV cache "
        "once per step; prefill, the phase before it, processes the whole prompt at once.",
        "10_serving.ipynb",
        (r"[Dd]ecod(?:e|es|ing)",),
    ),
    Entry(
        "DeepSpeed-Ulysses",
        "deepspeed-ulysses",
        "term",
        "Context parallelism by all-to-alls: four per layer each way turn the sequence split into a head "
        "split (Q, K, V) and back (the output), so each rank computes whole heads over the whole sequence; "
        "the query and key/value heads of each tensor-parallel rank must divide by c.",
        "06_sequences_and_experts.ipynb",
        (r"(?:DeepSpeed[- ])?Ulysses",),
        source="Jacobs et al. 2023, DeepSpeed Ulysses, arXiv:2309.14509",
    ),
    Entry(
        "expert parallelism",
        "expert-parallelism",
        "term",
        "Spreading a mixture of experts' experts over e ranks; each MoE layer sends every token to its "
        "experts' ranks and back in two all-to-alls (dispatch and combine), forward and backward.",
        "06_sequences_and_experts.ipynb",
        (r"[Ee]xpert[ -]parallel(?:ism)?",),
        source="Lepikhin et al. 2021, GShard, arXiv:2006.16668; Megatron-Core documentation, MoE",
    ),
    Entry(
        "FlashAttention",
        "flashattention",
        "term",
        "Attention computed tile by tile in on-chip memory, never storing the $s \\times s$ score matrix in HBM, so "
        "attention's activation memory grows linearly in $s$.",
        "06_sequences_and_experts.ipynb",
        (r"Flash-?Attention(?:-\d)?",),
        source="Dao et al. 2022, FlashAttention, arXiv:2205.14135",
    ),
    Entry(
        "healthy run",
        "healthy-run",
        "term",
        "A measured run whose MFU is at least half of the best MFU measured for the same model on the same nodes "
        "(validation.healthy_runs); a gap to the model that grows with the nodes among the other runs only marks a "
        "sick cluster.",
        "08_model_meets_measurements.ipynb",
        (r"healthy runs?",),
        source="course_lib.validation (HEALTHY_SHARE)",
    ),
    Entry(
        "KV cache",
        "kv-cache",
        "term",
        "The keys and values of attention that a model serving a sequence keeps for every layer and every token so "
        "far, so that each decode step computes them only for its new token: 2 · l · n_kv · d_head values a token.",
        "10_serving.ipynb",
        (r"KV[ -]caches?",),
        source="Pope et al. 2022, Efficiently Scaling Transformer Inference, arXiv:2211.05102",
    ),
    Entry(
        "knee",
        "knee",
        "term",
        "The smallest concurrency of a serving sweep whose throughput reaches 90 % of the sweep's highest: past it "
        "more users add little throughput and mostly wait (this course's rule).",
        "10_serving.ipynb",
        (r"knee",),
        source="course_lib.serving.scheduler.KNEE_THROUGHPUT_FRACTION",
    ),
    Entry(
        "log-sum-exp",
        "log-sum-exp",
        "term",
        "$\\log \\sum_i e^{x_i}$, the softmax's normaliser in log space, computed stably by subtracting the "
        "largest $x_i$ first; FlashAttention keeps it per row to combine tiles.",
        "09_capstone.ipynb",
        (r"log-sum-exp", r"logsumexp"),
    ),
    Entry(
        "LL protocol",
        "ll-protocol",
        "term",
        "NCCL's low-latency protocol: each 8-byte store carries 4 bytes of data and a 4-byte flag the receiver "
        "polls, so it needs no separate synchronisation but delivers half the link's bandwidth (LL128: 120 of "
        "128 bytes).",
        "07_measure.ipynb",
        (r"LL(?:128)?(?: protocol)?",),
        source="NCCL source, src/include/device.h (NCCL_PROTO_LL, LL128); NCCL_PROTO in the NCCL documentation",
    ),
    Entry(
        "MoE",
        "moe",
        "term",
        "Mixture of experts: a layer whose MLP is several expert MLPs, a router sending each token to a few of them; "
        "the parameters grow with the experts, the FLOPs per token only with the experts a token visits.",
        "01_mac.ipynb",
        (r"MoE", r"[Mm]ixtures? of experts"),
        source="Shazeer et al. 2017, arXiv:1701.06538",
    ),
    Entry(
        "out-of-place",
        "out-of-place",
        "term",
        "A collective that writes its result into a separate output buffer; in-place reuses the input buffer. "
        "nccl-tests times both.",
        "02_nccl.ipynb",
        (r"out-of-place", r"in-place"),
        source="NCCL documentation, In-place operations; nccl-tests README",
    ),
    Entry(
        "prefill",
        "prefill",
        "term",
        "The serving phase that runs a request's whole prompt through the model at once (compute-bound, like a "
        "training forward pass), fills its KV cache and samples the first output token.",
        "10_serving.ipynb",
        (r"[Pp]refills?",),
        source="Pope et al. 2022, Efficiently Scaling Transformer Inference, arXiv:2211.05102",
    ),
    Entry(
        "paged KV cache",
        "paged-kv-cache",
        "term",
        "A KV cache cut into fixed blocks (16 tokens in vLLM) that a sequence takes as it grows, so memory is held "
        "only for tokens that exist; vLLM's PagedAttention.",
        "10_serving.ipynb",
        (r"[Pp]aged KV caches?", r"PagedAttention"),
        source="Kwon et al. 2023, PagedAttention, SOSP 2023, arXiv:2309.06180",
    ),
    Entry(
        "ring attention",
        "ring-attention",
        "term",
        "Context parallelism by a ring: each rank passes its K/V block to the next c − 1 times per layer "
        "while it computes attention against the block it holds, which hides the transfer.",
        "06_sequences_and_experts.ipynb",
        (r"[Rr]ing [Aa]ttention",),
        source="Liu et al. 2023, Ring Attention with Blockwise Transformers, arXiv:2310.01889",
    ),
    Entry(
        "RMSNorm",
        "rmsnorm",
        "term",
        "Root-mean-square normalisation: divides a vector by its RMS and scales it, without subtracting the mean "
        "(Llama's normalisation, in place of LayerNorm).",
        "09_capstone.ipynb",
        (r"RMSNorm",),
        source="Zhang & Sennrich 2019, Root Mean Square Layer Normalization, arXiv:1910.07467",
    ),
    Entry(
        "SwiGLU",
        "swiglu",
        "term",
        "The gated MLP of Llama: $(\\mathrm{Swish}(xW_1) \\odot xW_3)W_2$, three weight matrices instead of two.",
        "09_capstone.ipynb",
        (r"SwiGLU",),
        source="Shazeer 2020, GLU Variants Improve Transformer, arXiv:2002.05202",
    ),
    Entry(
        "ZB-H1, ZB-H2",
        "zb-h1",
        "term",
        "Qi et al.'s zero-bubble pipeline schedules: with the B/W split, ZB-H1 cuts 1F1B's bubble to (p − "
        "1)(t_F + t_B − t_W) while W is the shortest op, in general (p − 1)·max(t_F, t_B, t_F + t_B − t_W), at "
        "1F1B's first-stage memory; ZB-H2 removes it, holding 2p − 1 micro-batches.",
        "06_sequences_and_experts.ipynb",
        (r"ZB-H[12]",),
        source="Qi et al. 2024, Zero Bubble Pipeline Parallelism, ICLR 2024, arXiv:2401.10241, §2",
    ),
    Entry(
        "zig-zag split",
        "zig-zag-split",
        "term",
        "Context parallelism's cut of a sequence into 2c chunks, rank r holding chunks r and 2c − 1 − r, so "
        "that under the causal mask every rank does the same attention work.",
        "06_sequences_and_experts.ipynb",
        (r"[Zz]ig-?zag(?: split)?",),
        source="Megatron-Core documentation, context parallelism; Grattafiori et al. 2024, The Llama 3 Herd of "
        "Models, §3.3.2",
    ),
    # ---- abbreviations ----
    Entry(
        "1F1B",
        "one-f-one-b",
        "abbreviation",
        "One forward, one backward: the pipeline schedule in which each stage, once full, alternates one micro-batch's "
        "forward pass with another's backward pass, so it holds at most p micro-batches' activations.",
        "03_parallelism.ipynb",
        (r"1F1B",),
        source="Narayanan et al. 2021 (PipeDream-Flush), arXiv:2104.04473",
    ),
    Entry(
        "bf16, fp16, fp32",
        "number-formats",
        "abbreviation",
        "Number formats: bfloat16 (8 exponent, 7 mantissa bits), IEEE half (5, 10) and IEEE single precision "
        "(8, 23): 2, 2 and 4 bytes per number.",
        "01_mac.ipynb",
        (r"bf16", r"fp16", r"fp32", r"BF16", r"FP16", r"FP32"),
        source="IEEE 754-2008; Google Cloud, bfloat16: the secret to high performance on Cloud TPUs (2019)",
    ),
    Entry(
        "CP",
        "cp",
        "abbreviation",
        "Context parallelism: the sequence of each sample split over c ranks, for attention as well as the rest of the "
        "layer (ring attention, Llama 3's all-gather, DeepSpeed-Ulysses).",
        "06_sequences_and_experts.ipynb",
        (r"CP",),
    ),
    Entry(
        "DMA",
        "dma",
        "abbreviation",
        "Direct memory access: a device copies memory by itself, without a processor doing the loads and stores.",
        "07_measure.ipynb",
        (r"DMA",),
    ),
    Entry(
        "DP",
        "dp",
        "abbreviation",
        "Data parallelism: d replicas of the model, each on its own micro-batches, whose gradients are summed every "
        "step.",
        "03_parallelism.ipynb",
        (r"DP",),
    ),
    Entry(
        "EFA",
        "efa",
        "abbreviation",
        "Elastic Fabric Adapter, AWS's network interface for HPC and ML: 3,200 Gbps per p5.48xlarge, 400 Gbps per "
        "p4de.24xlarge.",
        "08_model_meets_measurements.ipynb",
        (r"EFA",),
        source="AWS EC2 P5 and P4 instance pages",
    ),
    Entry(
        "EP",
        "ep",
        "abbreviation",
        "Expert parallelism: a mixture-of-experts layer's experts spread over e ranks, tokens sent to their experts by "
        "an all-to-all.",
        "06_sequences_and_experts.ipynb",
        (r"EP",),
    ),
    Entry(
        "FFN",
        "ffn",
        "abbreviation",
        "Feed-forward network: the MLP block of a transformer layer ($h \\to 4h \\to h$ in GPT-3).",
        "08_model_meets_measurements.ipynb",
        (r"FFN",),
    ),
    Entry(
        "FP8",
        "fp8",
        "abbreviation",
        "8-bit floating point (E4M3 and E5M2): matrix multiplies at twice the bf16 peak on an H100, and 1 "
        "byte per stored or gathered number where a framework keeps it.",
        "06_sequences_and_experts.ipynb",
        (r"FP8",),
        source="Micikevicius et al. 2022, FP8 Formats for Deep Learning, arXiv:2209.05433; course_lib.parallelism.fp8",
    ),
    Entry(
        "FSDP",
        "fsdp",
        "abbreviation",
        "PyTorch's Fully Sharded Data Parallel (FSDP2 is its second version, `fully_shard`): data parallelism with "
        "parameters, gradients and optimizer state sharded, as in ZeRO stage 3.",
        "03_parallelism.ipynb",
        (r"FSDP2?",),
        source="Zhao et al. 2023, PyTorch FSDP, arXiv:2304.11277",
    ),
    Entry(
        "GeLU",
        "gelu",
        "abbreviation",
        "Gaussian error linear unit, x·Φ(x): GPT's activation function between the MLP's two matrix multiplies.",
        "03_parallelism.ipynb",
        (
            r"GeLU",
            r"GELU",
        ),
        source="Hendrycks and Gimpel 2016, arXiv:1606.08415",
    ),
    Entry(
        "GEMM",
        "gemm",
        "abbreviation",
        "General matrix multiply, $[M \\times K] \\cdot [K \\times N]$: $2MNK$ FLOPs.",
        "01_mac.ipynb",
        (r"GEMMs?",),
    ),
    Entry(
        "GPipe",
        "gpipe",
        "abbreviation",
        "The pipeline schedule that runs all m micro-batches' forward passes, then all their backward passes (all "
        "forward, all backward); it holds m micro-batches' activations.",
        "03_parallelism.ipynb",
        (r"GPipe",),
        source="Huang et al. 2019, arXiv:1811.06965",
    ),
    Entry(
        "GQA",
        "gqa",
        "abbreviation",
        "Grouped-query attention: groups of query heads share one key-value head, so the KV cache holds "
        "n_kv < a heads (8 for Llama 3.1 70B's 64).",
        "10_serving.ipynb",
        (r"GQA",),
        source="Ainslie et al. 2023, GQA, EMNLP 2023, arXiv:2305.13245",
    ),
    Entry(
        "HBM",
        "hbm",
        "abbreviation",
        "High Bandwidth Memory: the stacked DRAM beside an accelerator's die that holds its weights, activations "
        "and optimizer state (80 GB at 3.35 TB/s on an H100 SXM).",
        "00_course_map.ipynb",
        (r"HBM\d?e?",),
        source=_NVIDIA_H100,
    ),
    Entry(
        "HFU",
        "hfu",
        "abbreviation",
        "Hardware FLOPs utilization: every FLOP the GPUs ran (recomputation included) per second, over their peak.",
        "01_mac.ipynb",
        (r"HFU",),
        source="Chowdhery et al. 2022 (PaLM), appendix B",
    ),
    Entry(
        "MFU",
        "mfu",
        "abbreviation",
        "Model FLOPs utilization: the model's FLOPs per token (6P plus attention) times tokens per second, over the "
        "GPUs' peak; recomputation does not count.",
        "01_mac.ipynb",
        (r"MFU",),
        source="Chowdhery et al. 2022 (PaLM), appendix B",
    ),
    Entry(
        "MT-NLG",
        "mt-nlg",
        "abbreviation",
        "Megatron-Turing NLG 530B, the 530-billion-parameter model Microsoft and NVIDIA trained with DeepSpeed and "
        "Megatron-LM in 2021.",
        "03_parallelism.ipynb",
        (r"MT-NLG",),
        source="Smith et al. 2022, arXiv:2201.11990",
    ),
    Entry(
        "ITL",
        "itl",
        "abbreviation",
        "Inter-token latency: a request's time from its first to its last output token over its tokens after the "
        "first, the time per output token as serving benchmarks measure it (genai-perf, vLLM's benchmark).",
        "10_serving.ipynb",
        (r"ITL", r"[Ii]nter-token latency"),
        source="NVIDIA genai-perf documentation, metrics; vllm/benchmarks/serve.py",
    ),
    Entry(
        "NIC",
        "nic",
        "abbreviation",
        "Network interface card: the adapter between a node and the network (a DGX H100 has one 400 Gb/s "
        "InfiniBand NIC per GPU).",
        "02_nccl.ipynb",
        (r"NICs?",),
        source="NVIDIA DGX H100 user guide, network ports",
    ),
    Entry(
        "NVLS",
        "nvls",
        "abbreviation",
        "NVLink SHARP: NVSwitch reduces the data in the switch itself, so an all-reduce inside a node sends each byte "
        "once; NCCL's NVLS algorithms use it.",
        "02_nccl.ipynb",
        (r"NVLS",),
        source="NCCL 2.17 release notes; NVIDIA NVLink/NVSwitch documentation",
    ),
    Entry(
        "PP",
        "pp",
        "abbreviation",
        "Pipeline parallelism: the layers split into p stages on different ranks, micro-batches flowing through them.",
        "03_parallelism.ipynb",
        (r"PP",),
    ),
    Entry(
        "SM",
        "sm",
        "abbreviation",
        "Streaming multiprocessor, a GPU's unit of compute (132 on an H100 SXM, 108 on an A100); a kernel that "
        "runs a collective occupies some.",
        "09_capstone.ipynb",
        (r"SMs?",),
        source=f"{_NVIDIA_H100}; {_NVIDIA_A100}",
    ),
    Entry(
        "SP",
        "sp",
        "abbreviation",
        "Sequence parallelism (Megatron-LM's): the layer norms and dropouts between tensor-parallel blocks split along "
        "the sequence over the same t ranks.",
        "03_parallelism.ipynb",
        (r"SP",),
        source="Korthikanti et al. 2022, arXiv:2205.05198",
    ),
    Entry(
        "TP",
        "tp",
        "abbreviation",
        "Tensor parallelism: each layer's weight matrices split over t ranks, which all-reduce (or reduce-scatter and "
        "all-gather) the activations twice per layer.",
        "03_parallelism.ipynb",
        (r"TP",),
        source="Shoeybi et al. 2019, arXiv:1909.08053",
    ),
    Entry(
        "TPOT",
        "tpot",
        "abbreviation",
        "Time per output token: the time between two tokens of one sequence while it decodes, one decode step.",
        "10_serving.ipynb",
        (r"TPOT",),
    ),
    Entry(
        "TTFT",
        "ttft",
        "abbreviation",
        "Time to first token: from a request's arrival to its first output token, the prefill and any wait before it.",
        "10_serving.ipynb",
        (r"TTFT", r"[Tt]ime to first token"),
    ),
    Entry(
        "ZeRO",
        "zero",
        "abbreviation",
        "Zero Redundancy Optimizer: data parallelism that shards the optimizer state (stage 1), then the gradients "
        "(2), then the parameters (3) across the replicas.",
        "01_mac.ipynb",
        (r"ZeRO(?:-[0-3])?",),
        source="Rajbhandari et al. 2020, arXiv:1910.02054",
    ),
    # ---- hardware and instances ----
    Entry(
        "InfiniBand",
        "infiniband",
        "hardware",
        "A data-centre network with RDMA, between nodes; an NDR port carries 400 Gb/s (50 GB/s) each way.",
        "02_nccl.ipynb",
        (r"InfiniBand",),
        source="InfiniBand Trade Association roadmap; NVIDIA ConnectX-7 datasheet",
    ),
    Entry(
        "NVLink",
        "nvlink",
        "hardware",
        "NVIDIA's GPU-to-GPU link inside a node; NVLink 4 gives an H100 18 links, 900 GB/s two-way in total.",
        "02_nccl.ipynb",
        (r"NVLink(?: \d)?",),
        source=_NVIDIA_H100,
    ),
    Entry(
        "NVSwitch",
        "nvswitch",
        "hardware",
        "The switch chip that connects every GPU of a node by NVLink, so that any pair talks at full bandwidth.",
        "02_nccl.ipynb",
        (r"NVSwitch(?:es)?",),
        source=_NVIDIA_H100,
    ),
    Entry(
        "p4de, p5.48xlarge, a3-mega",
        "cloud-instances",
        "hardware",
        "Cloud nodes of 8 GPUs: AWS p4de.24xlarge (A100 80 GB, 400 Gbps EFA), AWS p5.48xlarge (H100, 3,200 Gbps "
        "EFA), Google Cloud a3-megagpu-8g (H100, 8 × 200 Gbps GPU NICs).",
        "02_nccl.ipynb",
        (r"p4de(?:\.24xlarge)?", r"p5(?:\.48xlarge)?", r"a3-mega(?:gpu-8g)?"),
        source="AWS EC2 P4 and P5 instance pages; Google Cloud accelerator-optimized machines (A3 Mega)",
    ),
    # ---- software ----
    Entry(
        "MPI, MPICH",
        "mpi",
        "software",
        "MPI, the Message Passing Interface standard for processes that exchange messages; MPICH, an open-source "
        "implementation of it.",
        "07_measure.ipynb",
        (r"MPICH", r"MPI"),
        source="MPI Forum, MPI 4.0 (2021); mpich.org",
    ),
    Entry(
        "NCCL",
        "nccl",
        "software",
        "NVIDIA Collective Communications Library: the collectives GPUs run over NVLink and the network; "
        "nccl-tests is its benchmark.",
        "02_nccl.ipynb",
        (r"NCCL",),
        source="github.com/NVIDIA/nccl",
    ),
    Entry(
        "nanotron, the framework",
        "framework",
        "software",
        "The framework is what runs a plan (its precision recipe, buckets, overlaps, the ZeRO stages and schedules it "
        "runs); the default calibrated model runs as Megatron-LM, and Hugging Face's nanotron is the library of the "
        "Ultra-Scale Playbook's runs (ZeRO-1 only, no interleaving).",
        "03_parallelism.ipynb",
        (r"nanotron", r"the framework"),
        source="github.com/huggingface/nanotron; course_lib.parallelism.frameworks",
    ),
    Entry(
        "calibration=None",
        "calibration",
        "software",
        "The ideal model (every byte and FLOP from the formulas, compute at an assumed efficiency $\\eta$); "
        "without it, course_lib applies the reference calibration that lesson 08 fits on published runs.",
        "08_model_meets_measurements.ipynb",
        (r"calibration=None", r"calibrated model"),
        code_name="calibration",
    ),
    # ---- symbols: the course map's notation table, then the lessons' own ----
    Entry(
        "$M, N, K$",
        "gemm-dims",
        "symbol",
        "GEMM dimensions: $[M\\times K]\\cdot[K\\times N]$.",
        "00_course_map.ipynb",
        code_name="m, n, k",
    ),
    Entry(
        "$b$ (or $b_\\text{micro}$)",
        "micro-batch",
        "symbol",
        "Sequences one replica processes at once (a micro-batch).",
        "00_course_map.ipynb",
        code_name="micro_batch, batch, sequences",
    ),
    Entry(
        "$B_\\text{global}$",
        "global-batch",
        "symbol",
        "Samples per optimizer step, $b \\cdot m \\cdot d$.",
        "00_course_map.ipynb",
        code_name="global_batch, batch",
    ),
    Entry("$s$", "seq-len", "symbol", "Sequence length, in tokens.", "00_course_map.ipynb", code_name="seq_len"),
    Entry("$h$", "hidden", "symbol", "Hidden size of the transformer.", "00_course_map.ipynb", code_name="hidden"),
    Entry("$a$", "heads", "symbol", "Attention heads.", "00_course_map.ipynb", code_name="heads", nouns=("head",)),
    Entry(
        "$l$", "layers", "symbol", "Transformer layers.", "00_course_map.ipynb", code_name="layers", nouns=("layer",)
    ),
    Entry("$V$", "vocab", "symbol", "Vocabulary size.", "00_course_map.ipynb", code_name="vocab"),
    Entry("$\\Psi$ (or $P$)", "params", "symbol", "Parameter count.", "00_course_map.ipynb", code_name="params"),
    Entry("$D$", "tokens", "symbol", "Training tokens.", "00_course_map.ipynb", code_name="tokens"),
    Entry(
        "$N_\\text{GPU}$",
        "gpus",
        "symbol",
        "Accelerators working on one run, $d \\cdot t \\cdot p$.",
        "00_course_map.ipynb",
        code_name="gpus, devices",
        nouns=("GPU", "device"),
    ),
    Entry(
        "$K_\\text{opt}$",
        "k-opt",
        "symbol",
        "Optimizer-state bytes per parameter (12 for mixed-precision Adam).",
        "00_course_map.ipynb",
        code_name="optimizer_bytes_per_param",
    ),
    Entry(
        "$I$",
        "intensity",
        "symbol",
        "Arithmetic intensity, FLOP per byte moved.",
        "00_course_map.ipynb",
        code_name="intensity_flops_per_byte",
    ),
    Entry(
        "$R$",
        "peak-rate",
        "symbol",
        "Peak FLOP rate of an accelerator (dense, one data type); $R_\\text{attainable}$ is the roofline's rate.",
        "00_course_map.ipynb",
        code_name="peak_flops_per_s",
    ),
    Entry(
        "$R_\\text{attainable}$",
        "attainable-rate",
        "symbol",
        "The FLOP rate the roofline allows a kernel of intensity $I$: $\\min(R, I \\cdot B_\\text{HBM})$.",
        "00_course_map.ipynb",
        code_name="attainable_flops_per_s",
    ),
    Entry(
        "$i$, $j$",
        "indices",
        "symbol",
        "An index: of a rank, a chunk or a measurement.",
        "00_course_map.ipynb",
        nouns=("index",),
    ),
    Entry(
        "$B_\\text{HBM}$",
        "hbm-bandwidth",
        "symbol",
        "HBM bandwidth of an accelerator, bytes/s.",
        "00_course_map.ipynb",
        code_name="memory_bandwidth_bytes_per_s",
    ),
    Entry(
        "$T_\\text{math}$, $T_\\text{mem}$",
        "roofline-times",
        "symbol",
        "Compute time and memory time of a kernel; the roofline takes the larger.",
        "00_course_map.ipynb",
        code_name="roofline_time",
    ),
    Entry(
        "$p$",
        "p",
        "symbol",
        "Ranks of a collective (lessons 02, 04 and 07) and pipeline stages (lesson 03 on): the one shared symbol.",
        "00_course_map.ipynb",
        code_name="ranks, pipeline_parallel, pp",
        nouns=("rank", "stage", "GPU", "device", "chunk", "micro-batch"),
    ),
    Entry(
        "$S$",
        "payload",
        "symbol",
        "A collective's buffer size in bytes, as nccl-tests defines it.",
        "00_course_map.ipynb",
        code_name="payload_bytes",
    ),
    Entry(
        "$n$",
        "phases",
        "symbol",
        "Latency-bearing steps (phases) of a collective.",
        "00_course_map.ipynb",
        code_name="phases",
        nouns=("phase", "step"),
    ),
    Entry(
        "$Q$",
        "wire-bytes",
        "symbol",
        "Bytes on a collective's critical path.",
        "00_course_map.ipynb",
        code_name="wire_bytes",
    ),
    Entry(
        "$\\alpha$",
        "alpha",
        "symbol",
        "Startup latency of one step of a collective, in seconds.",
        "00_course_map.ipynb",
        code_name="latency_s",
    ),
    Entry(
        "$B_\\text{eff}$ (or $B$)",
        "bandwidth",
        "symbol",
        "Effective one-way bandwidth per rank, bytes/s.",
        "00_course_map.ipynb",
        code_name="bandwidth_bytes_per_s",
    ),
    Entry(
        "$G$, $N_\\text{nodes}$",
        "nodes",
        "symbol",
        "GPUs per node, and nodes.",
        "00_course_map.ipynb",
        code_name="devices_per_node, nodes",
        nouns=("GPU", "node", "rank"),
    ),
    Entry(
        "$N_\\text{rails}$",
        "rails",
        "symbol",
        "Network rails a flat ring runs on, one ring each (lesson 02).",
        "00_course_map.ipynb",
        code_name="rails",
        nouns=("rail",),
    ),
    Entry(
        "$k$",
        "tree-chunks",
        "symbol",
        "Chunks a pipelined tree cuts the buffer into (lesson 02).",
        "00_course_map.ipynb",
        code_name="DOUBLE_BINARY_TREE_CHUNKS",
        nouns=("chunk",),
    ),
    Entry(
        "$\\gamma$",
        "gamma",
        "symbol",
        "Reduction cost, seconds per byte.",
        "00_course_map.ipynb",
        code_name="reduce_s_per_byte",
    ),
    Entry(
        "algbw, busbw",
        "algbw-busbw",
        "symbol",
        "nccl-tests' algorithm bandwidth ($S$ over the time) and bus bandwidth (algbw times a factor per collective).",
        "00_course_map.ipynb",
        code_name="algbw_bytes_per_s, busbw_bytes_per_s",
        source="nccl-tests, doc/PERFORMANCE.md",
    ),
    Entry(
        "$d$ (or $N_d$, $N_\\text{dp}$)",
        "data-parallel",
        "symbol",
        "Data-parallel replicas; $N_d$ in ZeRO's formulas, $N_\\text{dp}$ in the global batch.",
        "00_course_map.ipynb",
        (r"N_\\text\{dp\}", r"N_\{\\text\{dp\}\}"),
        nouns=("replica", "rank", "GPU", "device"),
        code_name="data_parallel",
    ),
    Entry(
        "$t$",
        "tensor-parallel",
        "symbol",
        "Tensor-parallel group size.",
        "00_course_map.ipynb",
        code_name="tensor_parallel, tp",
        nouns=("GPU", "rank", "device"),
    ),
    Entry(
        "$m$ (or $N_\\text{acc}$)",
        "grad-accum",
        "symbol",
        "Micro-batches per step (gradient accumulation).",
        "00_course_map.ipynb",
        code_name="grad_accum_steps",
        nouns=("micro-batch", "step"),
    ),
    Entry(
        "$v$",
        "virtual-stages",
        "symbol",
        "Model chunks per device (interleaved schedule).",
        "00_course_map.ipynb",
        code_name="virtual_stages",
        nouns=("chunk", "stage"),
    ),
    Entry(
        "$t_\\text{F}$, $t_\\text{bwd}$",
        "pass-times",
        "symbol",
        "Forward (F) and whole backward of one micro-batch through one pipeline stage; "
        "$t_\\text{bwd} = t_\\text{B} + t_\\text{W}$.",
        "00_course_map.ipynb",
        code_name="forward_time_s, backward_time_s",
    ),
    Entry(
        "$t_\\text{B}$, $t_\\text{W}$",
        "zero-bubble-passes",
        "symbol",
        "The backward's two passes: input gradient (B) and weight gradient (W), as zero-bubble schedules split it.",
        "00_course_map.ipynb",
        code_name="backward_input_time_s, backward_weight_time_s",
        source="Qi et al. 2024, §2",
    ),
    Entry(
        "$T_\\text{comm}$",
        "comm-time",
        "symbol",
        "Time of a collective, $n\\alpha + Q/B_\\text{eff}$.",
        "00_course_map.ipynb",
        code_name="comm_time, collective_time",
    ),
    Entry(
        "$r$",
        "rank-index",
        "symbol",
        "The index of a rank, $0 \\dots p-1$.",
        "02_nccl.ipynb",
        nouns=("index",),
        code_name="rank",
    ),
    Entry(
        "$t_\\text{pb}$, $t_\\text{id}$",
        "bubble-time",
        "symbol",
        "Narayanan et al.'s pipeline bubble time and ideal (bubble-free) time of a step; their ratio is the "
        "bubble fraction.",
        "03_parallelism.ipynb",
        (r"t_\\text\{pb\}", r"t_\\text\{id\}"),
        source="Narayanan et al. 2021, §2.2.1",
    ),
    Entry(
        "$n_{kv}$, $d_\\text{head}$",
        "kv-heads",
        "symbol",
        "Key-value heads (fewer than $a$ under grouped-query attention) and the size of one head, $h/a$.",
        "10_serving.ipynb",
        (r"n_\{kv\}", r"n_\\text\{kv\}", r"d_\\text\{head\}", r"d_\{\\text\{head\}\}"),
        code_name="kv_heads, head_dim",
        nouns=("head",),
    ),
    Entry(
        "$b_\\text{param}$, $b_\\text{grad}$, $b_\\text{opt}$",
        "bytes-per-param",
        "symbol",
        "Bytes per parameter of the weights, the gradients and the optimizer state, as the framework keeps them: "
        "2 (bf16 weights), 4 (fp32 gradients) and 12 (Adam) in Megatron-LM's recipe (and nanotron's), the "
        "calibrated model's.",
        "09_capstone.ipynb",
        (r"b_\\text\{param\}", r"b_\\text\{grad\}", r"b_\\text\{opt\}"),
        source="course_lib.parallelism.frameworks (PRECISION_RECIPES, MEGATRON_CORE)",
    ),
    Entry(
        "$M_\\text{logits}$, $M_\\text{framework}$",
        "memory-terms",
        "symbol",
        "Memory of the last stage's logits (bf16, the loss's fp32 copy and its fp32 gradient: 10 bytes per token and "
        "vocabulary entry), and what the model does "
        "not count (CUDA context, allocator caching, fragmentation; 2.86 GB fitted on the Playbook's runs).",
        "09_capstone.ipynb",
        (r"M_\\text\{logits\}", r"M_\\text\{framework\}"),
        source="course_lib.parallelism.frameworks (logits_bytes_per_element); calibration (framework_bytes)",
    ),
    Entry(
        "$T$, $T_\\text{step}$",
        "time",
        "symbol",
        "A time in seconds; with a subscript, the time of what it names. $T_\\text{step}$: one optimizer step.",
        "00_course_map.ipynb",
        code_name="time_s, step_time_s",
    ),
    Entry(
        "$C$",
        "training-compute",
        "symbol",
        "Training compute of a whole run, about $6PD$ FLOP (Kaplan et al.).",
        "01_mac.ipynb",
        code_name="training_flops",
        source="Kaplan et al. 2020, §2.1",
    ),
    Entry(
        "$F$, $F_\\text{GEMM}$, $F_\\text{layer}$, $F_\\text{fwd}$",
        "flops",
        "symbol",
        "FLOPs of a computation: a kernel, one GEMM, one transformer layer, a whole forward pass.",
        "01_mac.ipynb",
        code_name="flops, gemm_flops, transformer_layer_flops, transformer_forward_flops",
    ),
    Entry(
        "$M_\\text{states}$",
        "model-states",
        "symbol",
        "Bytes of the model states (weights, gradients, optimizer state), $(2 + 2 + K_\\text{opt})\\Psi$ unsharded.",
        "01_mac.ipynb",
        code_name="zero_model_state_bytes",
    ),
    Entry(
        "$B_\\text{node}$",
        "node-bandwidth",
        "symbol",
        "A node's network bandwidth, all its adapters together, one way, bytes/s.",
        "02_nccl.ipynb",
    ),
    Entry(
        "$T_\\text{ring}$, $T_\\text{RS}$, $T_\\text{AG}$, $T_\\text{hier}$",
        "collective-times",
        "symbol",
        "Times of a ring all-reduce, a reduce-scatter, an all-gather and the hierarchical all-reduce.",
        "02_nccl.ipynb",
    ),
    Entry(
        "$X$",
        "layer-input",
        "symbol",
        "The input activations of a layer, $[bs \\times h]$.",
        "03_parallelism.ipynb",
    ),
    Entry(
        "$A_\\text{layer}$",
        "activations-per-layer",
        "symbol",
        "Activation bytes one transformer layer stores for a micro-batch (Korthikanti et al.).",
        "03_parallelism.ipynb",
        code_name="activation_bytes_per_layer",
        source="Korthikanti et al. 2022, Eq. 1",
    ),
    Entry(
        "$P_{os}$, $P_{os+g}$, $P_{os+g+p}$",
        "zero-stages",
        "symbol",
        "ZeRO's names of its stages 1, 2 and 3: optimizer state, + gradients, + parameters partitioned.",
        "03_parallelism.ipynb",
        source="Rajbhandari et al. 2020, §5",
    ),
    Entry(
        "$T_\\text{TP}$, $T_\\text{PP}$, $T_\\text{DP, exposed}$",
        "comm-terms",
        "symbol",
        "Tensor- and pipeline-parallel communication of one micro-batch, and the data-parallel communication a "
        "step cannot hide.",
        "04_communication_budget.ipynb",
    ),
    Entry(
        "$T_\\text{exposed}$",
        "exposed-time",
        "symbol",
        "Communication time not hidden behind computation.",
        "04_communication_budget.ipynb",
        code_name="exposed_s",
    ),
    Entry(
        "$\\mu$",
        "memory-margin",
        "symbol",
        "Memory a plan must leave spare, a share of its predicted memory.",
        "04_communication_budget.ipynb",
        code_name="memory_margin",
    ),
    Entry(
        "$T_\\text{compute}$, $T_\\text{bubble}$",
        "compute-bubble-time",
        "symbol",
        "A step's compute time and its pipeline bubble.",
        "05_plan_search.ipynb",
    ),
    Entry(
        "$c$, $e$",
        "cp-ep",
        "symbol",
        "Context-parallel and expert-parallel group sizes.",
        "06_sequences_and_experts.ipynb",
        code_name="context_parallel, expert_parallel",
        nouns=("rank", "GPU"),
    ),
    Entry(
        "$E$, $k_E$",
        "experts",
        "symbol",
        "Experts of a MoE layer, and experts the router sends each token to.",
        "06_sequences_and_experts.ipynb",
        code_name="experts, experts_per_token",
        nouns=("expert",),
    ),
    Entry(
        "$n_\\text{tok}$, $S_\\text{dispatch}$",
        "dispatch",
        "symbol",
        "Tokens one rank routes in one all-to-all, and the bytes of that dispatch, $n_\\text{tok} k_E h \\cdot 2$.",
        "06_sequences_and_experts.ipynb",
        code_name="expert_dispatch_bytes, payload_bytes",
    ),
    Entry(
        "$M_\\text{B}$, $M_\\text{W}$",
        "zero-bubble-memory",
        "symbol",
        "What a micro-batch keeps per layer until its B (its activations) and until its W (only what W reads).",
        "06_sequences_and_experts.ipynb",
        source="Qi et al. 2024, Table 1",
    ),
    Entry(
        "$S_i$, $T_i$, $T_\\text{model}$",
        "fit-samples",
        "symbol",
        "The $i$-th measured size and time of a collective, and the model's time that a fit matches to them.",
        "07_measure.ipynb",
    ),
    Entry(
        "$T_\\text{compute alone}$",
        "compute-alone",
        "symbol",
        "A step's compute with no communication running beside it.",
        "07_measure.ipynb",
    ),
    Entry(
        "$M_\\text{device}$, $M_\\text{HBM}$",
        "device-memory",
        "symbol",
        "Memory one device needs for a plan ($M_\\text{device}(x)$ for plan $x$), and the HBM it has.",
        "09_capstone.ipynb",
        code_name="total, hbm_capacity_bytes",
    ),
    Entry(
        "$\\Psi_\\text{stage}$",
        "stage-params",
        "symbol",
        "Parameters of the heaviest pipeline stage.",
        "09_capstone.ipynb",
    ),
    Entry(
        "$z$, $d_{\\ge z}$ ($d_{\\ge 1}$, $d_{\\ge 2}$, $d_{\\ge 3}$)",
        "zero-stage",
        "symbol",
        "The ZeRO stage, and $d$ when the stage is at least $z$ (the state is sharded over the replicas), else 1.",
        "09_capstone.ipynb",
    ),
    Entry(
        "$x$, $y$, $\\sigma$",
        "plan",
        "symbol",
        "A plan (lesson 09; $x^\\ast$ the robust plan), and a scenario: a set of assumptions, with its own "
        "fastest plan.",
        "09_capstone.ipynb",
    ),
    Entry(
        "$T_\\text{slot}$",
        "slot",
        "symbol",
        "One micro-batch's slot in a step, $t_\\text{F} + t_\\text{bwd} + T_\\text{TP} + T_\\text{PP}$.",
        "09_capstone.ipynb",
    ),
    Entry(
        "$\\Lambda$",
        "worst-slowdown",
        "symbol",
        "Worst-case slowdown of a plan over scenarios (lesson 09).",
        "09_capstone.ipynb",
        code_name="worst_slowdown",
    ),
    Entry(
        "$h_\\text{ffn}$",
        "ffn-hidden",
        "symbol",
        "Inner width of the MLP (FFN): $4h$ in GPT, about $3.5h$ for a gated MLP.",
        "09_capstone.ipynb",
        code_name="ffn_hidden",
    ),
    # ---- notation ----
    Entry(
        "2·1·4 ZeRO-1 b1×128",
        "plan-notation",
        "notation",
        "A plan as $d \\cdot t \\cdot p$, its ZeRO stage and $b \\times m$: 2 replicas, no tensor parallelism, "
        "4 stages, ZeRO-1, micro-batch 1, 128 micro-batches per step.",
        "08_model_meets_measurements.ipynb",
        (r"\d+·\d+·\d+ ZeRO-\d(?: b\d+×\d+)?",),
    ),
)

ENTRIES_BY_ANCHOR = {entry.anchor: entry for entry in ENTRIES}


def notebook_label(introduced_in: str) -> str:
    """How the glossary names a notebook: 'lesson 03', 'lab 5' or 'course map'.

    >>> notebook_label("03_parallelism.ipynb"), notebook_label("../labs/05_measure_collectives.ipynb")
    ('lesson 03', 'lab 5')
    """
    stem = introduced_in.rsplit("/", 1)[-1]
    if introduced_in.startswith("../labs/"):
        return f"lab {int(stem[:2])}"
    return "course map" if stem.startswith("00_") else f"lesson {stem[:2]}"


def markdown() -> str:
    """The glossary as markdown: a section per kind, a table row per entry with its HTML anchor; the symbols in the
    order of the course map's notation table, then the lessons', every other kind alphabetically.

    >>> text = markdown()
    >>> text.splitlines()[0]
    '## Terms'
    >>> '| <a id="gemm"></a>GEMM | General matrix multiply' in text
    True
    """
    sections = []
    for kind, heading in KINDS.items():
        entries = [e for e in ENTRIES if e.kind == kind]
        if kind != "symbol":
            entries.sort(key=lambda e: e.term.lower())
        rows = [
            f'| <a id="{e.anchor}"></a>{e.term} | {e.definition} | [{notebook_label(e.introduced_in)}]'
            f"({e.introduced_in}) | {e.source} |"
            for e in entries
        ]
        sections.append(
            f"## {heading}\n\n| Term | Definition | Introduced in | Source |\n|---|---|---|---|\n" + "\n".join(rows)
        )
    return "\n\n".join(sections)
