# ---
# jupyter:
#   course:
#     track: depth
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Glossary
#
# Every term, abbreviation, symbol, hardware and software name and the plan notation that the lessons and labs use,
# with a one-line definition, the lesson or lab where you meet it first, and the source of any fact it states. A
# lesson links an entry at the term's first use (`glossary.ipynb#hbm`); the symbols are those of the
# [course map's notation table](00_course_map.ipynb#Notation), then the lessons' own. The table is written from
# `course_lib.glossary_entries`, and a test checks that every lesson and lab defines or links each term where a learner
# first meets it.

# %% [markdown]
# ## Terms
#
# | Term | Definition | Introduced in | Source |
# |---|---|---|---|
# | <a id="collectives"></a>all-reduce, all-gather, reduce-scatter | Collectives: every rank ends with the sum of all buffers; with all ranks' chunks; with one chunk of the sum. | [lesson 02](02_nccl.ipynb) | MPI standard 4.0, chapter 6; NCCL documentation, Collective operations |
# | <a id="bw-split"></a>B/W split | Zero-bubble schedules split a micro-batch's backward pass into B, the input gradient the previous stage waits for, and W, the weight gradient nothing waits for, which the schedule moves into the bubble. | [lesson 06](06_sequences_and_experts.ipynb) | Qi et al. 2024, Zero Bubble Pipeline Parallelism, ICLR 2024, arXiv:2401.10241, §2 |
# | <a id="bruck"></a>Bruck | Bruck et al.'s all-to-all: ⌈lg p⌉ steps, step k sending the blocks whose index has bit k set; fewer steps than the pairwise exchange's p − 1, about lg p / 2 times its bytes. | [lesson 07](07_measure.ipynb) | Bruck et al. 1997, Efficient algorithms for all-to-all communications in multiport message-passing systems, IEEE TPDS 8(11); course_lib.collectives.collective_cost |
# | <a id="capacity-factor"></a>capacity factor | When one is set, the multiple of its even share of a batch's routed tokens that each expert's buffer holds (padded to it, the tokens beyond it dropped): it bounds load imbalance, and the all-to-alls and the slowest rank's compute grow with it. Without one, routing is dropless (Megatron-Core's default). | [lesson 06](06_sequences_and_experts.ipynb) | Lepikhin et al. 2021, GShard, arXiv:2006.16668; Fedus et al. 2022, Switch Transformers, JMLR |
# | <a id="chunked-prefill"></a>chunked prefill | An engine's scheduling that cuts prompts into chunks sharing iterations with the decoding sequences, under a token budget per iteration (vLLM's max_num_batched_tokens), so a long prefill no longer stalls the decodes. | [lesson 10](10_serving.ipynb) | Agrawal et al. 2023, SARATHI, arXiv:2308.16369; vLLM documentation, Optimization and Tuning |
# | <a id="context-parallelism"></a>context parallelism | Splitting the sequence dimension of every activation (attention included) across devices, each holding a slice of the tokens; Megatron-Core's CP. | [lesson 03](03_parallelism.ipynb) | NVIDIA Megatron-Core documentation, context parallelism; Liu et al. 2023, Ring Attention |
# | <a id="continuous-batching"></a>continuous batching | An engine's batching that rebuilds the batch every iteration: a finished sequence leaves and a waiting request joins at once, instead of the batch running until all its sequences end. | [lesson 10](10_serving.ipynb) | Yu et al. 2022, Orca, OSDI 2022 (iteration-level scheduling) |
# | <a id="copy-engine"></a>copy engine | A GPU's DMA engine: it copies between memories (another GPU's, the host's) without using the SMs. | [lesson 07](07_measure.ipynb) | NVIDIA CUDA C++ Programming Guide, asynchronous concurrent execution |
# | <a id="decode"></a>decode | The serving phase that generates one token per sequence per step, reading every weight and the KV cache once per step; prefill, the phase before it, processes the whole prompt at once. | [lesson 10](10_serving.ipynb) |  |
# | <a id="deepspeed-ulysses"></a>DeepSpeed-Ulysses | Context parallelism by all-to-alls: four per layer each way turn the sequence split into a head split (Q, K, V) and back (the output), so each rank computes whole heads over the whole sequence; the query and key/value heads of each tensor-parallel rank must divide by c. | [lesson 06](06_sequences_and_experts.ipynb) | Jacobs et al. 2023, DeepSpeed Ulysses, arXiv:2309.14509 |
# | <a id="expert-parallelism"></a>expert parallelism | Spreading a mixture of experts' experts over e ranks; each MoE layer sends every token to its experts' ranks and back in two all-to-alls (dispatch and combine), forward and backward. | [lesson 06](06_sequences_and_experts.ipynb) | Lepikhin et al. 2021, GShard, arXiv:2006.16668; Megatron-Core documentation, MoE |
# | <a id="flashattention"></a>FlashAttention | Attention computed tile by tile in on-chip memory, never storing the $s \times s$ score matrix in HBM, so attention's activation memory grows linearly in $s$. | [lesson 06](06_sequences_and_experts.ipynb) | Dao et al. 2022, FlashAttention, arXiv:2205.14135 |
# | <a id="healthy-run"></a>healthy run | A measured run whose MFU is at least half of the best MFU measured for the same model on the same nodes (validation.healthy_runs); a gap to the model that grows with the nodes among the other runs only marks a sick cluster. | [lesson 08](08_model_meets_measurements.ipynb) | course_lib.validation (HEALTHY_SHARE) |
# | <a id="knee"></a>knee | The smallest concurrency of a serving sweep whose throughput reaches 90 % of the sweep's highest: past it more users add little throughput and mostly wait (this course's rule). | [lesson 10](10_serving.ipynb) | course_lib.serving.scheduler.KNEE_THROUGHPUT_FRACTION |
# | <a id="kv-cache"></a>KV cache | The keys and values of attention that a model serving a sequence keeps for every layer and every token so far, so that each decode step computes them only for its new token: 2 · l · n_kv · d_head values a token. | [lesson 10](10_serving.ipynb) | Pope et al. 2022, Efficiently Scaling Transformer Inference, arXiv:2211.05102 |
# | <a id="ll-protocol"></a>LL protocol | NCCL's low-latency protocol: each 8-byte store carries 4 bytes of data and a 4-byte flag the receiver polls, so it needs no separate synchronisation but delivers half the link's bandwidth (LL128: 120 of 128 bytes). | [lesson 07](07_measure.ipynb) | NCCL source, src/include/device.h (NCCL_PROTO_LL, LL128); NCCL_PROTO in the NCCL documentation |
# | <a id="log-sum-exp"></a>log-sum-exp | $\log \sum_i e^{x_i}$, the softmax's normaliser in log space, computed stably by subtracting the largest $x_i$ first; FlashAttention keeps it per row to combine tiles. | [lesson 09](09_capstone.ipynb) |  |
# | <a id="moe"></a>MoE | Mixture of experts: a layer whose MLP is several expert MLPs, a router sending each token to a few of them; the parameters grow with the experts, the FLOPs per token only with the experts a token visits. | [lesson 01](01_mac.ipynb) | Shazeer et al. 2017, arXiv:1701.06538 |
# | <a id="out-of-place"></a>out-of-place | A collective that writes its result into a separate output buffer; in-place reuses the input buffer. nccl-tests times both. | [lesson 02](02_nccl.ipynb) | NCCL documentation, In-place operations; nccl-tests README |
# | <a id="paged-kv-cache"></a>paged KV cache | A KV cache cut into fixed blocks (16 tokens in vLLM) that a sequence takes as it grows, so memory is held only for tokens that exist; vLLM's PagedAttention. | [lesson 10](10_serving.ipynb) | Kwon et al. 2023, PagedAttention, SOSP 2023, arXiv:2309.06180 |
# | <a id="prefill"></a>prefill | The serving phase that runs a request's whole prompt through the model at once (compute-bound, like a training forward pass), fills its KV cache and samples the first output token. | [lesson 10](10_serving.ipynb) | Pope et al. 2022, Efficiently Scaling Transformer Inference, arXiv:2211.05102 |
# | <a id="ring-attention"></a>ring attention | Context parallelism by a ring: each rank passes its K/V block to the next c − 1 times per layer while it computes attention against the block it holds, which hides the transfer. | [lesson 06](06_sequences_and_experts.ipynb) | Liu et al. 2023, Ring Attention with Blockwise Transformers, arXiv:2310.01889 |
# | <a id="rmsnorm"></a>RMSNorm | Root-mean-square normalisation: divides a vector by its RMS and scales it, without subtracting the mean (Llama's normalisation, in place of LayerNorm). | [lesson 09](09_capstone.ipynb) | Zhang & Sennrich 2019, Root Mean Square Layer Normalization, arXiv:1910.07467 |
# | <a id="swiglu"></a>SwiGLU | The gated MLP of Llama: $(\mathrm{Swish}(xW_1) \odot xW_3)W_2$, three weight matrices instead of two. | [lesson 09](09_capstone.ipynb) | Shazeer 2020, GLU Variants Improve Transformer, arXiv:2002.05202 |
# | <a id="zb-h1"></a>ZB-H1, ZB-H2 | Qi et al.'s zero-bubble pipeline schedules: with the B/W split, ZB-H1 cuts 1F1B's bubble to (p − 1)(t_F + t_B − t_W) while W is the shortest op, in general (p − 1)·max(t_F, t_B, t_F + t_B − t_W), at 1F1B's first-stage memory; ZB-H2 removes it, holding 2p − 1 micro-batches. | [lesson 06](06_sequences_and_experts.ipynb) | Qi et al. 2024, Zero Bubble Pipeline Parallelism, ICLR 2024, arXiv:2401.10241, §2 |
# | <a id="zig-zag-split"></a>zig-zag split | Context parallelism's cut of a sequence into 2c chunks, rank r holding chunks r and 2c − 1 − r, so that under the causal mask every rank does the same attention work. | [lesson 06](06_sequences_and_experts.ipynb) | Megatron-Core documentation, context parallelism; Grattafiori et al. 2024, The Llama 3 Herd of Models, §3.3.2 |
#
# ## Abbreviations
#
# | Term | Definition | Introduced in | Source |
# |---|---|---|---|
# | <a id="one-f-one-b"></a>1F1B | One forward, one backward: the pipeline schedule in which each stage, once full, alternates one micro-batch's forward pass with another's backward pass, so it holds at most p micro-batches' activations. | [lesson 03](03_parallelism.ipynb) | Narayanan et al. 2021 (PipeDream-Flush), arXiv:2104.04473 |
# | <a id="number-formats"></a>bf16, fp16, fp32 | Number formats: bfloat16 (8 exponent, 7 mantissa bits), IEEE half (5, 10) and IEEE single precision (8, 23): 2, 2 and 4 bytes per number. | [lesson 01](01_mac.ipynb) | IEEE 754-2008; Google Cloud, bfloat16: the secret to high performance on Cloud TPUs (2019) |
# | <a id="cp"></a>CP | Context parallelism: the sequence of each sample split over c ranks, for attention as well as the rest of the layer (ring attention, Llama 3's all-gather, DeepSpeed-Ulysses). | [lesson 06](06_sequences_and_experts.ipynb) |  |
# | <a id="dma"></a>DMA | Direct memory access: a device copies memory by itself, without a processor doing the loads and stores. | [lesson 07](07_measure.ipynb) |  |
# | <a id="dp"></a>DP | Data parallelism: d replicas of the model, each on its own micro-batches, whose gradients are summed every step. | [lesson 03](03_parallelism.ipynb) |  |
# | <a id="efa"></a>EFA | Elastic Fabric Adapter, AWS's network interface for HPC and ML: 3,200 Gbps per p5.48xlarge, 400 Gbps per p4de.24xlarge. | [lesson 08](08_model_meets_measurements.ipynb) | AWS EC2 P5 and P4 instance pages |
# | <a id="ep"></a>EP | Expert parallelism: a mixture-of-experts layer's experts spread over e ranks, tokens sent to their experts by an all-to-all. | [lesson 06](06_sequences_and_experts.ipynb) |  |
# | <a id="ffn"></a>FFN | Feed-forward network: the MLP block of a transformer layer ($h \to 4h \to h$ in GPT-3). | [lesson 08](08_model_meets_measurements.ipynb) |  |
# | <a id="fp8"></a>FP8 | 8-bit floating point (E4M3 and E5M2): matrix multiplies at twice the bf16 peak on an H100, and 1 byte per stored or gathered number where a framework keeps it. | [lesson 06](06_sequences_and_experts.ipynb) | Micikevicius et al. 2022, FP8 Formats for Deep Learning, arXiv:2209.05433; course_lib.parallelism.fp8 |
# | <a id="fsdp"></a>FSDP | PyTorch's Fully Sharded Data Parallel (FSDP2 is its second version, `fully_shard`): data parallelism with parameters, gradients and optimizer state sharded, as in ZeRO stage 3. | [lesson 03](03_parallelism.ipynb) | Zhao et al. 2023, PyTorch FSDP, arXiv:2304.11277 |
# | <a id="gelu"></a>GeLU | Gaussian error linear unit, x·Φ(x): GPT's activation function between the MLP's two matrix multiplies. | [lesson 03](03_parallelism.ipynb) | Hendrycks and Gimpel 2016, arXiv:1606.08415 |
# | <a id="gemm"></a>GEMM | General matrix multiply, $[M \times K] \cdot [K \times N]$: $2MNK$ FLOPs. | [lesson 01](01_mac.ipynb) |  |
# | <a id="gpipe"></a>GPipe | The pipeline schedule that runs all m micro-batches' forward passes, then all their backward passes (all forward, all backward); it holds m micro-batches' activations. | [lesson 03](03_parallelism.ipynb) | Huang et al. 2019, arXiv:1811.06965 |
# | <a id="gqa"></a>GQA | Grouped-query attention: groups of query heads share one key-value head, so the KV cache holds n_kv < a heads (8 for Llama 3.1 70B's 64). | [lesson 10](10_serving.ipynb) | Ainslie et al. 2023, GQA, EMNLP 2023, arXiv:2305.13245 |
# | <a id="hbm"></a>HBM | High Bandwidth Memory: the stacked DRAM beside an accelerator's die that holds its weights, activations and optimizer state (80 GB at 3.35 TB/s on an H100 SXM). | [course map](00_course_map.ipynb) | NVIDIA H100 Tensor Core GPU datasheet and Hopper architecture whitepaper (2022) |
# | <a id="hfu"></a>HFU | Hardware FLOPs utilization: every FLOP the GPUs ran (recomputation included) per second, over their peak. | [lesson 01](01_mac.ipynb) | Chowdhery et al. 2022 (PaLM), appendix B |
# | <a id="itl"></a>ITL | Inter-token latency: a request's time from its first to its last output token over its tokens after the first, the time per output token as serving benchmarks measure it (genai-perf, vLLM's benchmark). | [lesson 10](10_serving.ipynb) | NVIDIA genai-perf documentation, metrics; vllm/benchmarks/serve.py |
# | <a id="mfu"></a>MFU | Model FLOPs utilization: the model's FLOPs per token (6P plus attention) times tokens per second, over the GPUs' peak; recomputation does not count. | [lesson 01](01_mac.ipynb) | Chowdhery et al. 2022 (PaLM), appendix B |
# | <a id="mt-nlg"></a>MT-NLG | Megatron-Turing NLG 530B, the 530-billion-parameter model Microsoft and NVIDIA trained with DeepSpeed and Megatron-LM in 2021. | [lesson 03](03_parallelism.ipynb) | Smith et al. 2022, arXiv:2201.11990 |
# | <a id="nic"></a>NIC | Network interface card: the adapter between a node and the network (a DGX H100 has one 400 Gb/s InfiniBand NIC per GPU). | [lesson 02](02_nccl.ipynb) | NVIDIA DGX H100 user guide, network ports |
# | <a id="nvls"></a>NVLS | NVLink SHARP: NVSwitch reduces the data in the switch itself, so an all-reduce inside a node sends each byte once; NCCL's NVLS algorithms use it. | [lesson 02](02_nccl.ipynb) | NCCL 2.17 release notes; NVIDIA NVLink/NVSwitch documentation |
# | <a id="pp"></a>PP | Pipeline parallelism: the layers split into p stages on different ranks, micro-batches flowing through them. | [lesson 03](03_parallelism.ipynb) |  |
# | <a id="sm"></a>SM | Streaming multiprocessor, a GPU's unit of compute (132 on an H100 SXM, 108 on an A100); a kernel that runs a collective occupies some. | [lesson 09](09_capstone.ipynb) | NVIDIA H100 Tensor Core GPU datasheet and Hopper architecture whitepaper (2022); NVIDIA A100 Tensor Core GPU architecture whitepaper (2020) |
# | <a id="sp"></a>SP | Sequence parallelism (Megatron-LM's): the layer norms and dropouts between tensor-parallel blocks split along the sequence over the same t ranks. | [lesson 03](03_parallelism.ipynb) | Korthikanti et al. 2022, arXiv:2205.05198 |
# | <a id="tp"></a>TP | Tensor parallelism: each layer's weight matrices split over t ranks, which all-reduce (or reduce-scatter and all-gather) the activations twice per layer. | [lesson 03](03_parallelism.ipynb) | Shoeybi et al. 2019, arXiv:1909.08053 |
# | <a id="tpot"></a>TPOT | Time per output token: the time between two tokens of one sequence while it decodes, one decode step. | [lesson 10](10_serving.ipynb) |  |
# | <a id="ttft"></a>TTFT | Time to first token: from a request's arrival to its first output token, the prefill and any wait before it. | [lesson 10](10_serving.ipynb) |  |
# | <a id="zero"></a>ZeRO | Zero Redundancy Optimizer: data parallelism that shards the optimizer state (stage 1), then the gradients (2), then the parameters (3) across the replicas. | [lesson 01](01_mac.ipynb) | Rajbhandari et al. 2020, arXiv:1910.02054 |
#
# ## Hardware and cloud instances
#
# | Term | Definition | Introduced in | Source |
# |---|---|---|---|
# | <a id="infiniband"></a>InfiniBand | A data-centre network with RDMA, between nodes; an NDR port carries 400 Gb/s (50 GB/s) each way. | [lesson 02](02_nccl.ipynb) | InfiniBand Trade Association roadmap; NVIDIA ConnectX-7 datasheet |
# | <a id="nvlink"></a>NVLink | NVIDIA's GPU-to-GPU link inside a node; NVLink 4 gives an H100 18 links, 900 GB/s two-way in total. | [lesson 02](02_nccl.ipynb) | NVIDIA H100 Tensor Core GPU datasheet and Hopper architecture whitepaper (2022) |
# | <a id="nvswitch"></a>NVSwitch | The switch chip that connects every GPU of a node by NVLink, so that any pair talks at full bandwidth. | [lesson 02](02_nccl.ipynb) | NVIDIA H100 Tensor Core GPU datasheet and Hopper architecture whitepaper (2022) |
# | <a id="cloud-instances"></a>p4de, p5.48xlarge, a3-mega | Cloud nodes of 8 GPUs: AWS p4de.24xlarge (A100 80 GB, 400 Gbps EFA), AWS p5.48xlarge (H100, 3,200 Gbps EFA), Google Cloud a3-megagpu-8g (H100, 8 × 200 Gbps GPU NICs). | [lesson 02](02_nccl.ipynb) | AWS EC2 P4 and P5 instance pages; Google Cloud accelerator-optimized machines (A3 Mega) |
#
# ## Software
#
# | Term | Definition | Introduced in | Source |
# |---|---|---|---|
# | <a id="calibration"></a>calibration=None | The ideal model (every byte and FLOP from the formulas, compute at an assumed efficiency $\eta$); without it, course_lib applies the reference calibration that lesson 08 fits on published runs. | [lesson 08](08_model_meets_measurements.ipynb) |  |
# | <a id="mpi"></a>MPI, MPICH | MPI, the Message Passing Interface standard for processes that exchange messages; MPICH, an open-source implementation of it. | [lesson 07](07_measure.ipynb) | MPI Forum, MPI 4.0 (2021); mpich.org |
# | <a id="framework"></a>nanotron, the framework | The framework is what runs a plan (its precision recipe, buckets, overlaps, the ZeRO stages and schedules it runs); the default calibrated model runs as Megatron-LM, and Hugging Face's nanotron is the library of the Ultra-Scale Playbook's runs (ZeRO-1 only, no interleaving). | [lesson 03](03_parallelism.ipynb) | github.com/huggingface/nanotron; course_lib.parallelism.frameworks |
# | <a id="nccl"></a>NCCL | NVIDIA Collective Communications Library: the collectives GPUs run over NVLink and the network; nccl-tests is its benchmark. | [lesson 02](02_nccl.ipynb) | github.com/NVIDIA/nccl |
#
# ## Symbols
#
# | Term | Definition | Introduced in | Source |
# |---|---|---|---|
# | <a id="gemm-dims"></a>$M, N, K$ | GEMM dimensions: $[M\times K]\cdot[K\times N]$. | [course map](00_course_map.ipynb) |  |
# | <a id="micro-batch"></a>$b$ (or $b_\text{micro}$) | Sequences one replica processes at once (a micro-batch). | [course map](00_course_map.ipynb) |  |
# | <a id="global-batch"></a>$B_\text{global}$ | Samples per optimizer step, $b \cdot m \cdot d$. | [course map](00_course_map.ipynb) |  |
# | <a id="seq-len"></a>$s$ | Sequence length, in tokens. | [course map](00_course_map.ipynb) |  |
# | <a id="hidden"></a>$h$ | Hidden size of the transformer. | [course map](00_course_map.ipynb) |  |
# | <a id="heads"></a>$a$ | Attention heads. | [course map](00_course_map.ipynb) |  |
# | <a id="layers"></a>$l$ | Transformer layers. | [course map](00_course_map.ipynb) |  |
# | <a id="vocab"></a>$V$ | Vocabulary size. | [course map](00_course_map.ipynb) |  |
# | <a id="params"></a>$\Psi$ (or $P$) | Parameter count. | [course map](00_course_map.ipynb) |  |
# | <a id="tokens"></a>$D$ | Training tokens. | [course map](00_course_map.ipynb) |  |
# | <a id="gpus"></a>$N_\text{GPU}$ | Accelerators working on one run, $d \cdot t \cdot p$. | [course map](00_course_map.ipynb) |  |
# | <a id="k-opt"></a>$K_\text{opt}$ | Optimizer-state bytes per parameter (12 for mixed-precision Adam). | [course map](00_course_map.ipynb) |  |
# | <a id="intensity"></a>$I$ | Arithmetic intensity, FLOP per byte moved. | [course map](00_course_map.ipynb) |  |
# | <a id="peak-rate"></a>$R$ | Peak FLOP rate of an accelerator (dense, one data type); $R_\text{attainable}$ is the roofline's rate. | [course map](00_course_map.ipynb) |  |
# | <a id="attainable-rate"></a>$R_\text{attainable}$ | The FLOP rate the roofline allows a kernel of intensity $I$: $\min(R, I \cdot B_\text{HBM})$. | [course map](00_course_map.ipynb) |  |
# | <a id="indices"></a>$i$, $j$ | An index: of a rank, a chunk or a measurement. | [course map](00_course_map.ipynb) |  |
# | <a id="hbm-bandwidth"></a>$B_\text{HBM}$ | HBM bandwidth of an accelerator, bytes/s. | [course map](00_course_map.ipynb) |  |
# | <a id="roofline-times"></a>$T_\text{math}$, $T_\text{mem}$ | Compute time and memory time of a kernel; the roofline takes the larger. | [course map](00_course_map.ipynb) |  |
# | <a id="p"></a>$p$ | Ranks of a collective (lessons 02, 04 and 07) and pipeline stages (lesson 03 on): the one shared symbol. | [course map](00_course_map.ipynb) |  |
# | <a id="payload"></a>$S$ | A collective's buffer size in bytes, as nccl-tests defines it. | [course map](00_course_map.ipynb) |  |
# | <a id="phases"></a>$n$ | Latency-bearing steps (phases) of a collective. | [course map](00_course_map.ipynb) |  |
# | <a id="wire-bytes"></a>$Q$ | Bytes on a collective's critical path. | [course map](00_course_map.ipynb) |  |
# | <a id="alpha"></a>$\alpha$ | Startup latency of one step of a collective, in seconds. | [course map](00_course_map.ipynb) |  |
# | <a id="bandwidth"></a>$B_\text{eff}$ (or $B$) | Effective one-way bandwidth per rank, bytes/s. | [course map](00_course_map.ipynb) |  |
# | <a id="nodes"></a>$G$, $N_\text{nodes}$ | GPUs per node, and nodes. | [course map](00_course_map.ipynb) |  |
# | <a id="rails"></a>$N_\text{rails}$ | Network rails a flat ring runs on, one ring each (lesson 02). | [course map](00_course_map.ipynb) |  |
# | <a id="tree-chunks"></a>$k$ | Chunks a pipelined tree cuts the buffer into (lesson 02). | [course map](00_course_map.ipynb) |  |
# | <a id="gamma"></a>$\gamma$ | Reduction cost, seconds per byte. | [course map](00_course_map.ipynb) |  |
# | <a id="algbw-busbw"></a>algbw, busbw | nccl-tests' algorithm bandwidth ($S$ over the time) and bus bandwidth (algbw times a factor per collective). | [course map](00_course_map.ipynb) | nccl-tests, doc/PERFORMANCE.md |
# | <a id="data-parallel"></a>$d$ (or $N_d$, $N_\text{dp}$) | Data-parallel replicas; $N_d$ in ZeRO's formulas, $N_\text{dp}$ in the global batch. | [course map](00_course_map.ipynb) |  |
# | <a id="tensor-parallel"></a>$t$ | Tensor-parallel group size. | [course map](00_course_map.ipynb) |  |
# | <a id="grad-accum"></a>$m$ (or $N_\text{acc}$) | Micro-batches per step (gradient accumulation). | [course map](00_course_map.ipynb) |  |
# | <a id="virtual-stages"></a>$v$ | Model chunks per device (interleaved schedule). | [course map](00_course_map.ipynb) |  |
# | <a id="pass-times"></a>$t_\text{F}$, $t_\text{bwd}$ | Forward (F) and whole backward of one micro-batch through one pipeline stage; $t_\text{bwd} = t_\text{B} + t_\text{W}$. | [course map](00_course_map.ipynb) |  |
# | <a id="zero-bubble-passes"></a>$t_\text{B}$, $t_\text{W}$ | The backward's two passes: input gradient (B) and weight gradient (W), as zero-bubble schedules split it. | [course map](00_course_map.ipynb) | Qi et al. 2024, §2 |
# | <a id="comm-time"></a>$T_\text{comm}$ | Time of a collective, $n\alpha + Q/B_\text{eff}$. | [course map](00_course_map.ipynb) |  |
# | <a id="rank-index"></a>$r$ | The index of a rank, $0 \dots p-1$. | [lesson 02](02_nccl.ipynb) |  |
# | <a id="bubble-time"></a>$t_\text{pb}$, $t_\text{id}$ | Narayanan et al.'s pipeline bubble time and ideal (bubble-free) time of a step; their ratio is the bubble fraction. | [lesson 03](03_parallelism.ipynb) | Narayanan et al. 2021, §2.2.1 |
# | <a id="kv-heads"></a>$n_{kv}$, $d_\text{head}$ | Key-value heads (fewer than $a$ under grouped-query attention) and the size of one head, $h/a$. | [lesson 10](10_serving.ipynb) |  |
# | <a id="bytes-per-param"></a>$b_\text{param}$, $b_\text{grad}$, $b_\text{opt}$ | Bytes per parameter of the weights, the gradients and the optimizer state, as the framework keeps them: 2 (bf16 weights), 4 (fp32 gradients) and 12 (Adam) in Megatron-LM's recipe (and nanotron's), the calibrated model's. | [lesson 09](09_capstone.ipynb) | course_lib.parallelism.frameworks (PRECISION_RECIPES, MEGATRON_CORE) |
# | <a id="memory-terms"></a>$M_\text{logits}$, $M_\text{framework}$ | Memory of the last stage's logits (bf16, the loss's fp32 copy and its fp32 gradient: 10 bytes per token and vocabulary entry), and what the model does not count (CUDA context, allocator caching, fragmentation; 2.86 GB fitted on the Playbook's runs). | [lesson 09](09_capstone.ipynb) | course_lib.parallelism.frameworks (logits_bytes_per_element); calibration (framework_bytes) |
# | <a id="time"></a>$T$, $T_\text{step}$ | A time in seconds; with a subscript, the time of what it names. $T_\text{step}$: one optimizer step. | [course map](00_course_map.ipynb) |  |
# | <a id="training-compute"></a>$C$ | Training compute of a whole run, about $6PD$ FLOP (Kaplan et al.). | [lesson 01](01_mac.ipynb) | Kaplan et al. 2020, §2.1 |
# | <a id="flops"></a>$F$, $F_\text{GEMM}$, $F_\text{layer}$, $F_\text{fwd}$ | FLOPs of a computation: a kernel, one GEMM, one transformer layer, a whole forward pass. | [lesson 01](01_mac.ipynb) |  |
# | <a id="model-states"></a>$M_\text{states}$ | Bytes of the model states (weights, gradients, optimizer state), $(2 + 2 + K_\text{opt})\Psi$ unsharded. | [lesson 01](01_mac.ipynb) |  |
# | <a id="node-bandwidth"></a>$B_\text{node}$ | A node's network bandwidth, all its adapters together, one way, bytes/s. | [lesson 02](02_nccl.ipynb) |  |
# | <a id="collective-times"></a>$T_\text{ring}$, $T_\text{RS}$, $T_\text{AG}$, $T_\text{hier}$ | Times of a ring all-reduce, a reduce-scatter, an all-gather and the hierarchical all-reduce. | [lesson 02](02_nccl.ipynb) |  |
# | <a id="layer-input"></a>$X$ | The input activations of a layer, $[bs \times h]$. | [lesson 03](03_parallelism.ipynb) |  |
# | <a id="activations-per-layer"></a>$A_\text{layer}$ | Activation bytes one transformer layer stores for a micro-batch (Korthikanti et al.). | [lesson 03](03_parallelism.ipynb) | Korthikanti et al. 2022, Eq. 1 |
# | <a id="zero-stages"></a>$P_{os}$, $P_{os+g}$, $P_{os+g+p}$ | ZeRO's names of its stages 1, 2 and 3: optimizer state, + gradients, + parameters partitioned. | [lesson 03](03_parallelism.ipynb) | Rajbhandari et al. 2020, §5 |
# | <a id="comm-terms"></a>$T_\text{TP}$, $T_\text{PP}$, $T_\text{DP, exposed}$ | Tensor- and pipeline-parallel communication of one micro-batch, and the data-parallel communication a step cannot hide. | [lesson 04](04_communication_budget.ipynb) |  |
# | <a id="exposed-time"></a>$T_\text{exposed}$ | Communication time not hidden behind computation. | [lesson 04](04_communication_budget.ipynb) |  |
# | <a id="memory-margin"></a>$\mu$ | Memory a plan must leave spare, a share of its predicted memory. | [lesson 04](04_communication_budget.ipynb) |  |
# | <a id="compute-bubble-time"></a>$T_\text{compute}$, $T_\text{bubble}$ | A step's compute time and its pipeline bubble. | [lesson 05](05_plan_search.ipynb) |  |
# | <a id="cp-ep"></a>$c$, $e$ | Context-parallel and expert-parallel group sizes. | [lesson 06](06_sequences_and_experts.ipynb) |  |
# | <a id="experts"></a>$E$, $k_E$ | Experts of a MoE layer, and experts the router sends each token to. | [lesson 06](06_sequences_and_experts.ipynb) |  |
# | <a id="dispatch"></a>$n_\text{tok}$, $S_\text{dispatch}$ | Tokens one rank routes in one all-to-all, and the bytes of that dispatch, $n_\text{tok} k_E h \cdot 2$. | [lesson 06](06_sequences_and_experts.ipynb) |  |
# | <a id="zero-bubble-memory"></a>$M_\text{B}$, $M_\text{W}$ | What a micro-batch keeps per layer until its B (its activations) and until its W (only what W reads). | [lesson 06](06_sequences_and_experts.ipynb) | Qi et al. 2024, Table 1 |
# | <a id="fit-samples"></a>$S_i$, $T_i$, $T_\text{model}$ | The $i$-th measured size and time of a collective, and the model's time that a fit matches to them. | [lesson 07](07_measure.ipynb) |  |
# | <a id="compute-alone"></a>$T_\text{compute alone}$ | A step's compute with no communication running beside it. | [lesson 07](07_measure.ipynb) |  |
# | <a id="device-memory"></a>$M_\text{device}$, $M_\text{HBM}$ | Memory one device needs for a plan ($M_\text{device}(x)$ for plan $x$), and the HBM it has. | [lesson 09](09_capstone.ipynb) |  |
# | <a id="stage-params"></a>$\Psi_\text{stage}$ | Parameters of the heaviest pipeline stage. | [lesson 09](09_capstone.ipynb) |  |
# | <a id="zero-stage"></a>$z$, $d_{\ge z}$ ($d_{\ge 1}$, $d_{\ge 2}$, $d_{\ge 3}$) | The ZeRO stage, and $d$ when the stage is at least $z$ (the state is sharded over the replicas), else 1. | [lesson 09](09_capstone.ipynb) |  |
# | <a id="plan"></a>$x$, $y$, $\sigma$ | A plan (lesson 09; $x^\ast$ the robust plan), and a scenario: a set of assumptions, with its own fastest plan. | [lesson 09](09_capstone.ipynb) |  |
# | <a id="slot"></a>$T_\text{slot}$ | One micro-batch's slot in a step, $t_\text{F} + t_\text{bwd} + T_\text{TP} + T_\text{PP}$. | [lesson 09](09_capstone.ipynb) |  |
# | <a id="worst-slowdown"></a>$\Lambda$ | Worst-case slowdown of a plan over scenarios (lesson 09). | [lesson 09](09_capstone.ipynb) |  |
# | <a id="ffn-hidden"></a>$h_\text{ffn}$ | Inner width of the MLP (FFN): $4h$ in GPT, about $3.5h$ for a gated MLP. | [lesson 09](09_capstone.ipynb) |  |
#
# ## Notation
#
# | Term | Definition | Introduced in | Source |
# |---|---|---|---|
# | <a id="plan-notation"></a>2·1·4 ZeRO-1 b1×128 | A plan as $d \cdot t \cdot p$, its ZeRO stage and $b \times m$: 2 replicas, no tensor parallelism, 4 stages, ZeRO-1, micro-batch 1, 128 micro-batches per step. | [lesson 08](08_model_meets_measurements.ipynb) |  |
