"""Every public function refuses bad input with a ValueError that names the parameter.

Each entry gives a valid call and, per parameter, the kind of value it takes; the test then tries the bad values
of that kind (zero, negative, non-integer, NaN, infinite, unknown names) one parameter at a time.
"""

import functools
import math

import numpy as np
import pytest

from course_lib import budget, collectives, compute, hardware, nccl, parallelism, serving, validation
from course_lib.parallelism import GPT3_175B, LLAMA3_8B, MIXTRAL_8X7B, ParallelPlan

BAD = {
    "count": [0, -1, 2.5, math.nan, math.inf, "8", True, None],
    "count0": [-1, 2.5, math.nan, math.inf],  # counts that may be zero
    "positive": [0, -1.0, math.nan, math.inf, "1e9", None],
    "nonnegative": [-1e-6, math.nan, math.inf],
    "fraction": [0, 1.5, math.nan, -0.1],
    "share0": [1.5, math.nan, -0.1, "half", None],  # a share that may be zero: [0, 1]
    "op": ["allreduce", "", 3],
    "algorithm": ["tree", "Ring"],
    "stage": [4, -1, "1", 1.0],
    "recompute": ["partial", True and "yes"],
    "flag": ["yes", 1, None],
    "schedule": ["zero-bubble"],
    "stages": [(4,), (1, 1), 1, [0, 1], None],  # a tuple of distinct ZeRO stages
    "schedules": [("zero-bubble",), ("1f1b", "1f1b"), "1f1b", None],  # a tuple of distinct schedules
    "dtype": ["fp64"],
    "rails": [0, -1, 2.5, math.nan, math.inf, "8", True, 9],  # rails of an 8-device node: 1..8, or None
    "attention": ["paged", ""],
    "object": [None, "GPT-3 175B", 1],  # a preset object (model, plan, accelerator), not its name
    "host_cpu": ["ARM", "intel", None],
    "architecture": ["Hopper100", "Volta", None],
    "optional_positive": [0, -1.0, math.nan, math.inf],  # None means "not given"
    "context_parallel_kind": ["ulysses", "Ring", None],
    "capacity_factor": [0.99, 0, -1.0, math.nan, math.inf, "1.25"],  # None (dropless) or at least 1
    "split": ["striped", "Zigzag", None],
    "capacity_policy": ["GUARANTEED_NO_EVICT", "max-utilization", None],
    "precision": ["fp64", "FP8", None],  # a named precision of serving.engine
    "engine": ["sglang", "VLLM", None],  # an engine of serving.engine.ENGINES
}

# The arguments of the two-level all-reduces (hierarchical and multi-rail flat ring): one DGX H100 cluster.
TWO_LEVEL = dict(
    payload_bytes=1e9,
    nodes=4,
    devices_per_node=8,
    intra_bandwidth_bytes_per_s=4.5e11,
    intra_latency_s=1e-6,
    inter_bandwidth_bytes_per_s=5e10,
    inter_latency_s=5e-6,
)
TWO_LEVEL_KINDS = dict(
    payload_bytes="positive",
    nodes="count",
    devices_per_node="count",
    intra_bandwidth_bytes_per_s="positive",
    intra_latency_s="nonnegative",
    inter_bandwidth_bytes_per_s="positive",
    inter_latency_s="nonnegative",
)

# A serving replica of Llama 3.1 8B (t = p = 2) and the arguments the serving functions share.
_SPLIT = dict(tensor_parallel=2, pipeline_parallel=2)
_SPLIT_KINDS = dict(tensor_parallel="count", pipeline_parallel="count")
_REPLICA = dict(model=LLAMA3_8B, **_SPLIT)
_REPLICA_KINDS = _SPLIT_KINDS
_KV = dict(layers=32, kv_heads=8, head_dim=128, context_len=1024, sequences=4, bytes_per_element=2)
_KV_KINDS = {**{name: "count" for name in _KV}, "bytes_per_element": "positive"}
_BYTES = dict(bytes_per_param=2, kv_bytes_per_element=2)
_BYTES_KINDS = dict(bytes_per_param="positive", kv_bytes_per_element="positive")
_DECODE = {
    **_REPLICA,
    "cluster": hardware.DGX_H100,
    "context_len": 1024,
    "batches_in_flight": 2,
    **_BYTES,
    "dtype": "bf16",
}
_DECODE_KINDS = {
    **_REPLICA_KINDS,
    "context_len": "count",
    "batches_in_flight": "count",
    **_BYTES_KINDS,
    "dtype": "dtype",
}


def _iteration_s(prefill_tokens, _attended, decode_sequences, _context):
    """An engine iteration's cost for the scheduler's cases: 10 ms + 10 µs a prompt token + 0.1 ms a decode."""
    return 0.010 + 1e-5 * prefill_tokens + 1e-4 * decode_sequences


# A small closed-loop run of the scheduler and the kinds of its arguments.
_ENGINE = dict(iteration_time=_iteration_s, kv_blocks=64, prompt_tokens=100, output_tokens=20, requests=4)
_ENGINE_KINDS = dict(kv_blocks="count", prompt_tokens="count", output_tokens="count", requests="count")
_SCHEDULER = dict(
    block_size_tokens=16,
    max_num_seqs=8,
    max_num_batched_tokens=512,
    chunked_prefill=True,
    capacity_policy="guaranteed_no_evict",
)
_SCHEDULER_KINDS = dict(
    block_size_tokens="count",
    max_num_seqs="count",
    max_num_batched_tokens="count",
    chunked_prefill="flag",
    capacity_policy="capacity_policy",
)


IDEAL_STEP = dict(
    model=GPT3_175B,
    plan=ParallelPlan(tensor_parallel=8),
    cluster=hardware.DGX_H100,
    compute_efficiency=0.5,
    dtype="bf16",
)
CASES = [
    (
        collectives.comm_time,
        dict(phases=4, latency_s=5e-6, payload_bytes=1e8, bandwidth_bytes_per_s=5e10),
        dict(phases="count0", latency_s="nonnegative", payload_bytes="nonnegative", bandwidth_bytes_per_s="positive"),
    ),
    (
        collectives.collective_cost,
        dict(op="all_reduce", ranks=8, payload_bytes=1e6, algorithm="ring"),
        dict(op="op", ranks="count", payload_bytes="positive", algorithm="algorithm"),
    ),
    (
        collectives.collective_time,
        dict(
            op="all_gather",
            ranks=8,
            payload_bytes=1e6,
            bandwidth_bytes_per_s=1e9,
            latency_s=1e-6,
            algorithm="ring",
            reduce_s_per_byte=0.0,
        ),
        dict(
            op="op",
            ranks="count",
            payload_bytes="positive",
            bandwidth_bytes_per_s="positive",
            latency_s="nonnegative",
            algorithm="algorithm",
            reduce_s_per_byte="nonnegative",
        ),
    ),
    (collectives.check_algorithm, dict(op="all_reduce", algorithm="ring"), dict(op="op", algorithm="algorithm")),
    (collectives.applicable_algorithms, dict(op="all_reduce", ranks=8), dict(op="op", ranks="count")),
    (
        collectives.time_terms,
        dict(
            op="all_reduce",
            ranks=8,
            payload_bytes=1e6,
            bandwidth_bytes_per_s=1e9,
            latency_s=1e-6,
            algorithm="ring",
            reduce_s_per_byte=0.0,
        ),
        dict(
            op="op",
            ranks="count",
            payload_bytes="positive",
            bandwidth_bytes_per_s="positive",
            latency_s="nonnegative",
            algorithm="algorithm",
            reduce_s_per_byte="nonnegative",
        ),
    ),
    (
        collectives.collective_report,
        dict(op="all_reduce", ranks=8, payload_bytes=1e6, bandwidth_bytes_per_s=1e9, latency_s=1e-6, algorithm="ring"),
        dict(
            op="op",
            ranks="count",
            payload_bytes="positive",
            bandwidth_bytes_per_s="positive",
            latency_s="nonnegative",
            algorithm="algorithm",
        ),
    ),
    (
        parallelism.check_tensor_split,
        dict(heads=96, tensor_parallel=8),
        dict(heads="count", tensor_parallel="count"),
    ),
    (
        parallelism.check_pipeline_split,
        dict(layers=96, pipeline_parallel=8, virtual_stages=2),
        dict(layers="count", pipeline_parallel="count", virtual_stages="count"),
    ),
    (
        serving.serves_with_tensor_parallel,
        dict(model=parallelism.LLAMA3_70B, tensor_parallel=8),
        dict(tensor_parallel="count"),
    ),
    (
        parallelism.splits_context_and_experts,
        dict(
            model=MIXTRAL_8X7B, tensor_parallel=1, context_parallel=2, context_parallel_kind="ring", expert_parallel=8
        ),
        dict(
            tensor_parallel="count",
            context_parallel="count",
            context_parallel_kind="context_parallel_kind",
            expert_parallel="count",
        ),
    ),
    (
        parallelism.expert_activation_bytes_per_token,
        dict(model=MIXTRAL_8X7B, capacity_factor=1.0),
        dict(capacity_factor="capacity_factor"),
    ),
    (parallelism.check_capacity_factor, dict(capacity_factor=1.0), dict(capacity_factor="capacity_factor")),
    (parallelism.capacity_padding, dict(capacity_factor=1.0), dict(capacity_factor="capacity_factor")),
    (parallelism.kv_heads_per_tensor_rank, dict(model=LLAMA3_8B, tensor_parallel=4), dict(tensor_parallel="count")),
    (
        parallelism.context_kv_bytes,
        dict(model=LLAMA3_8B, tokens=4096, tensor_parallel=4),
        dict(tokens="nonnegative", tensor_parallel="count"),
    ),
    (
        parallelism.weight_gradient_bytes_per_token_per_layer,
        dict(
            model=MIXTRAL_8X7B, tensor_parallel=1, sequence_parallel=False, capacity_factor=1.0, fp8_activations=False
        ),
        dict(
            tensor_parallel="count", sequence_parallel="flag", capacity_factor="capacity_factor", fp8_activations="flag"
        ),
    ),  # fmt: skip
    (
        parallelism.expert_dispatch_bytes,
        dict(model=MIXTRAL_8X7B, tokens=4096, tensor_parallel=1, capacity_factor=1.0),
        dict(tokens="nonnegative", tensor_parallel="count", capacity_factor="capacity_factor"),
    ),
    (
        parallelism.causal_attention_shares,
        dict(context_parallel=4, split="zigzag"),
        dict(context_parallel="count", split="split"),
    ),
    (
        parallelism.splits_evenly,
        dict(model=GPT3_175B, tensor_parallel=8, pipeline_parallel=8, virtual_stages=1),
        dict(tensor_parallel="count", pipeline_parallel="count", virtual_stages="count"),
    ),
    (
        collectives.ring_allreduce_time,
        dict(ranks=8, payload_bytes=1e6, bandwidth_bytes_per_s=1e9, latency_s=1e-6),
        dict(ranks="count", payload_bytes="positive", bandwidth_bytes_per_s="positive", latency_s="nonnegative"),
    ),
    (collectives.ring_allreduce_step_count, dict(ranks=8), dict(ranks="count")),
    (
        collectives.ring_step_phase,
        dict(op="all_reduce", ranks=8, step=7),
        dict(op="op", ranks="count", step="count0"),
    ),
    (collectives.busbw_factor, dict(op="all_reduce", ranks=8), dict(op="op", ranks="count")),
    (
        collectives.algbw_bytes_per_s,
        dict(payload_bytes=1e9, time_s=1e-3),
        dict(payload_bytes="positive", time_s="positive"),
    ),
    (
        collectives.busbw_bytes_per_s,
        dict(op="all_reduce", ranks=8, payload_bytes=1e9, time_s=1e-3),
        dict(op="op", ranks="count", payload_bytes="positive", time_s="positive"),
    ),
    (
        collectives.algbw_from_busbw,
        dict(op="all_reduce", ranks=8, busbw=1e11),
        dict(op="op", ranks="count", busbw="positive"),
    ),
    (
        collectives.latency_bandwidth_crossover_bytes,
        dict(op="all_reduce", ranks=8, bandwidth_bytes_per_s=1e9, latency_s=1e-6, algorithm="ring"),
        dict(op="op", ranks="count", bandwidth_bytes_per_s="positive", latency_s="nonnegative", algorithm="algorithm"),
    ),
    (collectives.hierarchical_allreduce_time, TWO_LEVEL, TWO_LEVEL_KINDS),
    (collectives.multirail_ring_allreduce_time, TWO_LEVEL | dict(rails=8), TWO_LEVEL_KINDS | dict(rails="rails")),
    (
        collectives.equal_time_payload_bytes,
        dict(
            op="all_reduce",
            ranks=64,
            bandwidth_bytes_per_s=5e10,
            latency_s=5e-6,
            algorithm="ring",
            other_algorithm="double_binary_tree",
        ),
        dict(
            op="op",
            ranks="count",
            bandwidth_bytes_per_s="positive",
            latency_s="nonnegative",
            algorithm="algorithm",
            other_algorithm="algorithm",
        ),
    ),
    (compute.gemm_flops, dict(m=2, n=3, k=4), dict(m="count", n="count", k="count")),
    (
        compute.gemm_bytes,
        dict(m=2, n=3, k=4, bytes_per_element=2),
        dict(m="count", n="count", k="count", bytes_per_element="positive"),
    ),
    (compute.arithmetic_intensity, dict(flops=1e9, bytes_moved=1e6), dict(flops="positive", bytes_moved="positive")),
    (
        compute.ridge_point_flops_per_byte,
        dict(peak_flops_per_s=1e15, memory_bandwidth_bytes_per_s=1e12),
        dict(peak_flops_per_s="positive", memory_bandwidth_bytes_per_s="positive"),
    ),
    (
        compute.roofline_time,
        dict(flops=1e9, bytes_moved=1e6, peak_flops_per_s=1e15, memory_bandwidth_bytes_per_s=1e12),
        dict(
            flops="positive",
            bytes_moved="positive",
            peak_flops_per_s="positive",
            memory_bandwidth_bytes_per_s="positive",
        ),
    ),
    (
        compute.attainable_flops_per_s,
        dict(intensity_flops_per_byte=100, peak_flops_per_s=1e15, memory_bandwidth_bytes_per_s=1e12),
        dict(intensity_flops_per_byte="positive", peak_flops_per_s="positive", memory_bandwidth_bytes_per_s="positive"),
    ),
    (compute.training_flops, dict(params=1e9, tokens=1e12), dict(params="positive", tokens="positive")),
    (
        compute.transformer_params,
        dict(layers=2, hidden=64, vocab=100, seq_len=16),
        dict(layers="count", hidden="count", vocab="count", seq_len="count"),
    ),
    (
        compute.transformer_layer_forward_flops,
        dict(batch=1, seq_len=16, hidden=64),
        dict(batch="count", seq_len="count", hidden="count"),
    ),
    (
        compute.transformer_forward_flops,
        dict(batch=1, seq_len=16, layers=2, hidden=64, vocab=100),
        dict(batch="count", seq_len="count", layers="count", hidden="count", vocab="count"),
    ),
    (
        compute.transformer_flops_per_iteration,
        dict(batch=1, seq_len=16, layers=2, hidden=64, vocab=100, recompute="none"),
        dict(batch="count", seq_len="count", layers="count", hidden="count", vocab="count", recompute="recompute"),
    ),
    (
        compute.transformer_flops_by_part,
        dict(batch=1, seq_len=16, layers=2, hidden=64, vocab=100, recompute="selective"),
        dict(batch="count", seq_len="count", layers="count", hidden="count", vocab="count", recompute="recompute"),
    ),
    (compute.recompute_option, dict(recompute="full"), dict(recompute="recompute")),
    (
        compute.training_time_s,
        dict(tokens=1e12, params=1e9, gpus=8, achieved_flops_per_s_per_gpu=1e14),
        dict(tokens="positive", params="positive", gpus="count", achieved_flops_per_s_per_gpu="positive"),
    ),
    (
        parallelism.global_batch,
        dict(micro_batch=8, grad_accum_steps=16, data_parallel=64),
        dict(micro_batch="count", grad_accum_steps="count", data_parallel="count"),
    ),
    (
        parallelism.global_batch_report,
        dict(
            micro_batch=8, grad_accum_steps=16, data_parallel=64, seq_len=2048, tensor_parallel=8, pipeline_parallel=2
        ),
        dict(
            micro_batch="count",
            grad_accum_steps="count",
            data_parallel="count",
            seq_len="count",
            tensor_parallel="count",
            pipeline_parallel="count",
        ),
    ),
    (
        parallelism.memory_budget_report,
        dict(model=GPT3_175B, plan=ParallelPlan(tensor_parallel=8), accelerator=hardware.H100, memory_margin=0.0),
        dict(model="object", plan="object", accelerator="object", memory_margin="nonnegative"),
    ),
    (
        parallelism.pipeline_schedule_report,
        dict(
            stages=4,
            microbatches=8,
            schedule="1f1b",
            virtual_stages=1,
            forward_time_s=1.0,
            backward_time_s=2.0,
            backward_weight_time_s=0.5,
        ),
        dict(
            stages="count",
            microbatches="count",
            schedule="schedule",
            virtual_stages="count",
            forward_time_s="positive",
            backward_time_s="positive",
            backward_weight_time_s="optional_positive",
        ),
    ),
    (
        parallelism.pipeline_bubble_time,
        dict(
            stages=4,
            microbatches=8,
            schedule="zb-h2",
            virtual_stages=1,
            forward_time_s=1.0,
            backward_time_s=2.0,
            backward_weight_time_s=0.5,
            optimizer_sync=False,
        ),
        dict(
            stages="count",
            microbatches="count",
            schedule="schedule",
            virtual_stages="count",
            forward_time_s="positive",
            backward_time_s="positive",
            backward_weight_time_s="optional_positive",
            optimizer_sync="flag",
        ),
    ),
    (
        parallelism.zero_bubble_stage_in_flight,
        dict(stages=4, schedule="zb-h2", stage=1, weight_pending_share=0.5),
        dict(stages="count", schedule="schedule", stage="count0", weight_pending_share="share0"),
    ),
    (
        parallelism.zero_model_state_bytes,
        dict(params=7.5e9, data_parallel=64, stage=1, optimizer_bytes_per_param=12),
        dict(params="positive", data_parallel="count", stage="stage", optimizer_bytes_per_param="nonnegative"),
    ),
    (
        parallelism.zero_model_state_breakdown,
        dict(params=7.5e9, data_parallel=64, stage=1),
        dict(params="positive", data_parallel="count", stage="stage"),
    ),
    (
        parallelism.activation_bytes_per_layer,
        dict(
            seq_len=2048,
            micro_batch=1,
            hidden=12288,
            heads=96,
            tensor_parallel=8,
            sequence_parallel=False,
            recompute="none",
        ),
        dict(
            seq_len="count",
            micro_batch="count",
            hidden="count",
            heads="count",
            tensor_parallel="count",
            sequence_parallel="flag",
            recompute="recompute",
        ),
    ),
    (
        parallelism.stored_activation_bytes,
        dict(seq_len=2048, micro_batch=1, hidden=12288, heads=96, tensor_parallel=8, sequence_parallel=False),
        dict(
            seq_len="count",
            micro_batch="count",
            hidden="count",
            heads="count",
            tensor_parallel="count",
            sequence_parallel="flag",
        ),
    ),
    (
        budget.binding_constraint,
        dict(compute_s=21.4, exposed_communication_s=1.73, bubble_s=1.67),
        dict(compute_s="nonnegative", exposed_communication_s="nonnegative", bubble_s="nonnegative"),
    ),
    (
        parallelism.pipeline_in_flight_microbatches,
        dict(stages=4, microbatches=8, schedule="1f1b", virtual_stages=1),
        dict(stages="count", microbatches="count", schedule="schedule", virtual_stages="count"),
    ),
    (
        parallelism.pipeline_bubble_fraction,
        dict(stages=4, microbatches=8, virtual_stages=1),
        dict(stages="count", microbatches="count", virtual_stages="count"),
    ),
    (
        ParallelPlan,
        dict(
            data_parallel=2,
            tensor_parallel=2,
            pipeline_parallel=2,
            zero_stage=1,
            micro_batch=1,
            grad_accum_steps=4,
            recompute="none",
            sequence_parallel=False,
            context_parallel=1,
            context_parallel_kind="ring",
            expert_parallel=1,
            capacity_factor=1.0,
        ),
        dict(
            data_parallel="count",
            tensor_parallel="count",
            pipeline_parallel="count",
            zero_stage="stage",
            micro_batch="count",
            grad_accum_steps="count",
            recompute="recompute",
            sequence_parallel="flag",
            context_parallel="count",
            context_parallel_kind="context_parallel_kind",
            expert_parallel="count",
            capacity_factor="capacity_factor",
            attention="attention",
            schedule="schedule",
            optimizer_sync="flag",
        ),
    ),
    (
        ParallelPlan,
        dict(pipeline_parallel=4, grad_accum_steps=7, schedule="zb-h2", optimizer_sync=False),
        dict(pipeline_parallel="count", grad_accum_steps="count", schedule="schedule", optimizer_sync="flag"),
    ),
    (
        parallelism.TransformerModel,
        dict(name="tiny", layers=2, hidden=64, heads=4, vocab=100, seq_len=16),
        dict(layers="count", hidden="count", heads="count", vocab="count", seq_len="count"),
    ),
    (
        parallelism.TransformerModel,
        dict(name="tiny MoE", layers=2, hidden=64, heads=4, vocab=100, seq_len=16, experts=4, experts_per_token=2),
        dict(experts="count", experts_per_token="count"),
    ),
    (
        budget.exposed_after_overlap,
        dict(communication_s=2e-3, overlap_window_s=1e-3),
        dict(communication_s="nonnegative", overlap_window_s="nonnegative"),
    ),
    (
        budget.group_collective_time,
        dict(op="all_reduce", cluster=hardware.DGX_H100, group_size=8, stride=1, payload_bytes=1e9),
        dict(op="op", group_size="count", stride="count", payload_bytes="nonnegative"),
    ),
    (
        budget.moe_layer_times,
        dict(
            model=MIXTRAL_8X7B,
            cluster=hardware.DGX_H100,
            expert_parallel=8,
            tokens=4096,
            stride=1,
            tensor_parallel=1,
            compute_efficiency=0.5,
        ),
        dict(
            expert_parallel="count",
            tokens="positive",
            stride="count",
            tensor_parallel="count",
            compute_efficiency="fraction",
        ),
    ),  # fmt: skip
    (
        budget.group_collective,
        dict(op="all_reduce", cluster=hardware.DGX_H100, group_size=16, stride=1, payload_bytes=1e9),
        dict(op="op", group_size="count", stride="count", payload_bytes="nonnegative"),
    ),
    (
        budget.group_placement,
        dict(cluster=hardware.DGX_H100, group_size=16, stride=1),
        dict(group_size="count", stride="count"),
    ),
    (
        nccl.estimate,
        dict(op="all_reduce", cluster=hardware.DGX_H100, ranks=8, nodes=1, payload_bytes=1e9),
        dict(op="op", ranks="count", nodes="count", payload_bytes="nonnegative"),
    ),
    (
        nccl.all_to_all,
        dict(cluster=hardware.DGX_H100, ranks=8, nodes=1, payload_bytes=1e9),
        dict(ranks="count", nodes="count", payload_bytes="nonnegative"),
    ),
    (
        budget.group_collective,
        dict(op="all_to_all", cluster=hardware.NEBIUS_H100_IB, group_size=16, stride=1, payload_bytes=1e9),
        dict(op="op", group_size="count", stride="count", payload_bytes="nonnegative"),
    ),
    (
        nccl.candidates,
        dict(op="all_reduce", cluster=hardware.DGX_H100, ranks=8, nodes=1, payload_bytes=1e9),
        dict(op="op", ranks="count", nodes="count", payload_bytes="nonnegative"),
    ),
    (budget.axis_stride, dict(axis="data", plan=ParallelPlan(tensor_parallel=8)), dict(axis="op")),
    # the ideal model's step (calibration=None: the calibrated one does not use compute_efficiency), its transfers
    *(
        (function, {**IDEAL_STEP, **extra}, dict(compute_efficiency="fraction", dtype="dtype"))
        for function, extra in (
            (budget.step_time, {"calibration": None}),
            (budget.transfer_table, {}),
            (budget.partition_report, {}),
        )
    ),
    (
        budget.search_plans,
        dict(model=parallelism.GPT2_1_5B, cluster=hardware.DGX_H100, global_batch=64),
        dict(global_batch="count", compute_efficiency="fraction", dtype="dtype"),
    ),
    (
        budget.search_plans,
        dict(model=parallelism.GPT2_1_5B, cluster=hardware.DGX_H100, global_batch=64, attention=("flash",)),
        dict(attention="attention"),
    ),
    (
        parallelism.activation_bytes_per_token_per_layer,
        dict(model=parallelism.PLAYBOOK_1B, tensor_parallel=2, sequence_parallel=True, recompute="none"),
        dict(
            tensor_parallel="count",
            sequence_parallel="flag",
            recompute="recompute",
            attention="attention",
            capacity_factor="capacity_factor",
        ),
    ),
    (parallelism.stage_layers, dict(layers=16, pipeline_parallel=3), dict(layers="count", pipeline_parallel="count")),
    (
        budget.bucketed_exposure,
        dict(total_s=1e-2, bucket_s=1e-3, window_s=4e-3, occurrences=2),
        dict(total_s="nonnegative", bucket_s="nonnegative", window_s="nonnegative", occurrences="count"),
    ),
    (
        budget.model_flops_per_step,
        dict(model=parallelism.PLAYBOOK_1B, plan=ParallelPlan(), recompute="full"),
        dict(recompute="recompute"),
    ),
    (
        parallelism.Calibration,
        dict(),
        dict(
            overlap_slowdown="nonnegative",
            gemm_efficiency="fraction",
            gemm_half_flops="nonnegative",
            layer_overhead_s="nonnegative",
            network_efficiency="fraction",
            framework_bytes="nonnegative",
        ),
    ),
    (
        parallelism.Framework,
        dict(name="a framework"),
        dict(
            logits_bytes_per_element="nonnegative",
            bucket_bytes="optional_positive",
            zero_stages="stages",
            max_zero_stage_with_pipeline="stage",
            schedules="schedules",
            overlap_grad_reduce="stages",
            prefetch_parameter_gathers="stages",
            pipeline_overlap="flag",
        ),
    ),
    (hardware.H100.peak, dict(dtype="bf16"), dict(dtype="dtype")),
    (
        hardware.INFINIBAND_NDR_8X.one_way_bytes_per_s_per_device,
        dict(devices_per_node=8),
        dict(devices_per_node="count"),
    ),
    (
        hardware.Cluster,
        dict(
            name="c",
            accelerator=hardware.H100,
            devices_per_node=8,
            nodes=2,
            intra_node_link=hardware.NVLINK4,
            inter_node_link=hardware.INFINIBAND_NDR_8X,
        ),
        dict(devices_per_node="count", nodes="count", host_cpu="host_cpu"),
    ),
    (
        hardware.Link,
        dict(
            name="l",
            bandwidth_bytes_per_s=1e11,
            direction="one-way",
            scope="per GPU",
            basis="nominal",
            latency_s=1e-6,
            source="-",
            latency_source="-",
            nccl_bandwidth_bytes_per_s=9e10,
            fabric_latency_s=2e-5,
        ),
        dict(
            bandwidth_bytes_per_s="positive",
            latency_s="nonnegative",
            nccl_bandwidth_bytes_per_s="optional_positive",
            fabric_latency_s="nonnegative",
        ),
    ),
    (
        hardware.Accelerator,
        dict(
            name="a",
            peak_flops_per_s={"bf16": 1e15},
            hbm_capacity_bytes=8e10,
            hbm_bandwidth_bytes_per_s=3e12,
            source="-",
            architecture="Hopper",
        ),
        dict(architecture="architecture"),
    ),
    (serving.kv_cache_bytes, _KV, _KV_KINDS),
    (serving.kv_cache_bytes_per_device, {**_KV, **_SPLIT}, {**_KV_KINDS, **_SPLIT_KINDS}),
    (
        serving.weight_bytes_per_device,
        dict(params=8e9, tensor_parallel=2, pipeline_parallel=2, bytes_per_param=2),
        dict(params="positive", tensor_parallel="count", pipeline_parallel="count", bytes_per_param="positive"),
    ),
    (
        serving.decode_activation_bytes,
        dict(
            sequences=4,
            hidden=4096,
            ffn_hidden=14336,
            vocab=128256,
            tensor_parallel=2,
            gated_mlp=True,
            bytes_per_element=2,
        ),
        dict(
            sequences="count",
            hidden="count",
            ffn_hidden="count",
            vocab="count",
            tensor_parallel="count",
            gated_mlp="flag",
            bytes_per_element="positive",
        ),
    ),
    (
        serving.max_sequences,
        dict(capacity_bytes=80e9, weight_bytes=16e9, kv_bytes_per_sequence=1e9, activation_bytes_per_sequence=1e6),
        dict(
            capacity_bytes="positive",
            weight_bytes="nonnegative",
            kv_bytes_per_sequence="positive",
            activation_bytes_per_sequence="nonnegative",
        ),
    ),
    (
        serving.serving_memory,
        {**_REPLICA, "sequences": 4, "context_len": 1024, **_BYTES},
        {**_REPLICA_KINDS, "sequences": "count", "context_len": "count", **_BYTES_KINDS},
    ),
    (
        serving.max_sequences_that_fit,
        {**_REPLICA, "accelerator": hardware.H100, "context_len": 1024, **_BYTES},
        {**_REPLICA_KINDS, "context_len": "count", **_BYTES_KINDS},
    ),
    (
        serving.prefill_flops,
        dict(model=LLAMA3_8B, prompt_len=1024, sequences=2),
        dict(prompt_len="count", sequences="count"),
    ),
    (
        serving.decode_flops,
        dict(model=LLAMA3_8B, sequences=2, context_len=1024),
        dict(sequences="count", context_len="count"),
    ),
    (
        serving.prefill,
        {**_REPLICA, "cluster": hardware.DGX_H100, "prompt_len": 1024, "sequences": 2, "compute_efficiency": 0.5},
        {
            **_REPLICA_KINDS,
            "prompt_len": "count",
            "sequences": "count",
            "compute_efficiency": "fraction",
            "dtype": "dtype",
        },
    ),
    (
        serving.decode_step_time_s,
        dict(
            weight_bytes=1e9,
            kv_bytes=1e8,
            matmul_flops=1e10,
            attention_flops=1e8,
            hbm_bandwidth_bytes_per_s=3.35e12,
            peak_flops_per_s=989e12,
        ),
        dict(
            weight_bytes="nonnegative",
            kv_bytes="nonnegative",
            matmul_flops="nonnegative",
            attention_flops="nonnegative",
            hbm_bandwidth_bytes_per_s="positive",
            peak_flops_per_s="positive",
        ),
    ),
    (serving.decode_step, {**_DECODE, "sequences": 4}, {**_DECODE_KINDS, "sequences": "count"}),
    (serving.latency_throughput_curve, _DECODE, _DECODE_KINDS),
    (
        serving.serving_report,
        {**_REPLICA, "cluster": hardware.DGX_H100, "sequences": 4, "prompt_len": 512, "generated_tokens": 64},
        {
            **_REPLICA_KINDS,
            "sequences": "count",
            "prompt_len": "count",
            "generated_tokens": "count",
            "compute_efficiency": "fraction",
            "curve_points": "count",
            "dtype": "dtype",
        },
    ),
    (
        serving.decode_compute_bound_sequences,
        dict(peak_flops_per_s=989e12, hbm_bandwidth_bytes_per_s=3.35e12, bytes_per_param=2),
        dict(peak_flops_per_s="positive", hbm_bandwidth_bytes_per_s="positive", bytes_per_param="positive"),
    ),
    (
        serving.simulate_engine,
        {**_ENGINE, **_SCHEDULER, "concurrency": 2},
        {**_ENGINE_KINDS, **_SCHEDULER_KINDS, "concurrency": "count"},
    ),
    (
        serving.simulate_engine,
        {**_ENGINE, "request_rate_per_s": 5.0, "seed": 3},
        {"request_rate_per_s": "positive", "seed": "count0"},
    ),
    (
        serving.concurrency_sweep_report,
        dict(
            model=LLAMA3_8B,
            cluster=hardware.DGX_H100,
            tensor_parallel=1,
            weights="fp8",
            kv_cache="fp8",
            prompt_tokens=1024,
            output_tokens=128,
            concurrency=8,
        ),  # fmt: skip
        dict(
            tensor_parallel="count",
            weights="precision",
            kv_cache="precision",
            prompt_tokens="count",
            output_tokens="count",
            concurrency="count",
        ),  # fmt: skip
    ),
    (
        serving.knee_concurrency,
        dict(concurrencies=[1, 2, 4], output_tokens_per_s=[100.0, 450.0, 900.0], fraction=0.9),
        dict(concurrencies="count", output_tokens_per_s="nonnegative", fraction="fraction"),
    ),
    (
        serving.concurrency_sweep,
        {**_ENGINE, **_SCHEDULER, "concurrencies": [1, 2]},
        {**_ENGINE_KINDS, **_SCHEDULER_KINDS, "concurrencies": "count", "requests": "optional_positive"},
    ),
    (
        serving.iteration_time,
        dict(
            model=MIXTRAL_8X7B,
            cluster=hardware.DGX_H100,
            tensor_parallel=2,
            pipeline_parallel=2,
            weights="fp8",
            kv_cache="fp8",
            engine="tensorrt-llm",
            expert_parallel=2,
        ),
        dict(
            tensor_parallel="count",
            pipeline_parallel="count",
            weights="precision",
            kv_cache="precision",
            engine="engine",
            expert_parallel="count",
        ),
    ),
    (
        serving.kv_cache_blocks,
        dict(
            model=LLAMA3_8B,
            accelerator=hardware.H100,
            tensor_parallel=2,
            pipeline_parallel=2,
            weights="int4",
            kv_cache="fp8",
            block_size_tokens=32,
            gpu_memory_utilization=0.8,
            free_gpu_memory_fraction=0.9,
            max_num_batched_tokens=4096,
        ),
        dict(
            tensor_parallel="count",
            pipeline_parallel="count",
            weights="precision",
            kv_cache="precision",
            block_size_tokens="count",
            free_gpu_memory_fraction="fraction",
            max_num_batched_tokens="count",
        ),
    ),
    (
        serving.kv_cache_blocks,
        dict(model=LLAMA3_8B, accelerator=hardware.H100, tensor_parallel=1, gpu_memory_utilization=0.8),
        dict(gpu_memory_utilization="fraction"),
    ),
    (
        serving.check_precisions,
        dict(accelerator=hardware.H100, weights="fp8", kv_cache="bf16"),
        dict(weights="precision", kv_cache="precision"),
    ),
    (
        serving.serving_weight_bytes_per_device,
        dict(model=LLAMA3_8B, tensor_parallel=2, pipeline_parallel=2, weights="int4"),
        dict(tensor_parallel="count", pipeline_parallel="count", weights="precision"),
    ),
    (
        serving.custom_all_reduce_time_s,
        dict(cluster=hardware.DGX_H100, tensor_parallel=4, payload_bytes=65536, engine="vllm"),
        dict(tensor_parallel="count", payload_bytes="nonnegative", engine="engine"),
    ),
    (
        serving.blocks_per_sequence,
        dict(tokens=100, block_size_tokens=16),
        dict(tokens="count", block_size_tokens="count"),
    ),
    (
        serving.max_sequences_in_blocks,
        dict(blocks=1000, tokens=100, block_size_tokens=16),
        dict(blocks="count0", tokens="count", block_size_tokens="count"),
    ),
    (
        serving.expected_experts_visited,
        dict(experts=8, experts_per_token=2, tokens=16),
        dict(experts="count", experts_per_token="count", tokens="nonnegative"),
    ),
    (
        serving.latency_optimal_tensor_parallel,
        dict(
            model=LLAMA3_8B, cluster=hardware.DGX_H100, sequences=1, context_len=1024, pipeline_parallel=2, dtype="bf16"
        ),
        dict(sequences="count", context_len="count", pipeline_parallel="count", dtype="dtype"),
    ),
    (
        serving.compare_training_and_serving,
        dict(
            model=LLAMA3_8B,
            plan=ParallelPlan(tensor_parallel=2, pipeline_parallel=2, grad_accum_steps=4),
            cluster=hardware.DGX_H100,
            sequences=2,
            context_len=1024,
            prompt_len=512,
            batches_in_flight=2,
            compute_efficiency=0.5,
            dtype="bf16",
        ),
        dict(
            sequences="count",
            context_len="count",
            prompt_len="count",
            batches_in_flight="count",
            compute_efficiency="fraction",
            dtype="dtype",
        ),
    ),
    (
        budget.worst_case_ranking,
        dict(
            searches={
                "x": budget.search_plans(
                    parallelism.GPT2_1_5B, hardware.DGX_H100, 64, micro_batch_sizes=(1,), calibration=None
                )
            },
            candidates=3,
        ),
        dict(candidates="count"),
    ),
]

PARAMS = [
    pytest.param(function, valid, name, bad, id=f"{getattr(function, '__qualname__', function)}-{name}-{bad!r}")
    for function, valid, kinds in CASES
    for name, kind in kinds.items()
    for bad in BAD[kind]
]


@pytest.mark.parametrize("function, valid", [(f, v) for f, v, _ in CASES])
def test_the_valid_call_works(function, valid):
    function(**valid)


@pytest.mark.parametrize("function, valid, name, bad", PARAMS)
def test_bad_value_raises_value_error_naming_the_parameter(function, valid, name, bad):
    with pytest.raises(ValueError) as error:
        function(**{**valid, name: bad})
    assert name in str(error.value)


def test_every_public_function_is_covered():
    covered = {getattr(f, "__name__", None) for f, _, _ in CASES}
    modules = (collectives, compute, parallelism, budget, serving)
    public = {
        name
        for module in modules
        for name in module.__all__
        if callable(getattr(module, name))
        and not isinstance(getattr(module, name), type)
        or name in ("ParallelPlan", "TransformerModel")
    }
    # Functions whose arguments are objects validated by the ones above, tested separately below.
    separately = {
        "count_matmul_operations",
        "memory_breakdown",
        "calibrated_memory_breakdown",
        "calibrated_step_time",
        "calibrated_cluster",
        "step_transfers",
        "boundary_tensors",
        "communication_volume_per_step",
        "check_plan_for_model",
        "transfer_time_per_call",
        "matmul_params",
        "forward_flops_per_token",
        "default_calibration",
        "resolve_calibration",
        "resolve_framework",
        "format_transfer_table",
        "fp8_peak",  # an Accelerator; tests/test_fp8.py checks the one without an FP8 peak
        "load_published_serving",  # a path; tests/test_published_serving.py checks a missing file and bad cells
        "fp8_linear_weights_per_layer",  # a model
        "context_gather_bytes",  # a model and a plan
        "fit_gemm_depth",  # rows of a measurement; tests/test_serving_engine.py fits it
    }
    assert public - separately <= covered, sorted(public - separately - covered)


def test_matrices_must_be_conformable_and_two_dimensional():
    with pytest.raises(ValueError, match="b must have as many rows"):
        compute.count_matmul_operations(np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="2-D"):
        compute.count_matmul_operations(np.ones(3), np.ones((3, 2)))


@pytest.mark.parametrize(
    "function",
    [
        functools.partial(parallelism.memory_breakdown, calibration=None),  # the ideal model splits evenly only
        parallelism.step_transfers,
        parallelism.boundary_tensors,
        parallelism.communication_volume_per_step,
        parallelism.check_plan_for_model,
        lambda model, plan: budget.transfer_table(model, plan, hardware.DGX_H100),
        # checked once, in its step time (its memory trusts that check)
        lambda model, plan: budget.partition_report(model, plan, hardware.DGX_H100),
    ],
)
def test_plans_that_do_not_divide_the_model_are_refused(function):
    with pytest.raises(ValueError, match="tensor_parallel must divide heads"):
        function(GPT3_175B, ParallelPlan(tensor_parallel=5))
    with pytest.raises(ValueError, match="pipeline_parallel"):
        function(GPT3_175B, ParallelPlan(pipeline_parallel=7))


def test_calibrated_model_refuses_what_it_cannot_represent():
    cal = parallelism.Calibration()
    for function in (parallelism.memory_breakdown, budget.calibrated_step_time):
        args = (hardware.DGX_H100, cal) if function is budget.calibrated_step_time else ()
        kwargs = {} if args else {"calibration": cal}
        with pytest.raises(ValueError, match="tensor_parallel must divide heads"):
            function(GPT3_175B, ParallelPlan(tensor_parallel=5), *args, **kwargs)
        with pytest.raises(
            ValueError,
            match=r"zero_stage=3 with pipeline_parallel=2 is not run by generic: it combines no ZeRO stage above 1 "
            "with a pipeline$",
        ):
            function(GPT3_175B, ParallelPlan(pipeline_parallel=2, zero_stage=3), *args, **kwargs)
    # An uneven pipeline (7 stages for 96 layers) is representable: the heaviest stage holds 14 layers.
    assert parallelism.memory_breakdown(GPT3_175B, ParallelPlan(pipeline_parallel=7), calibration=cal).total > 0


def test_calibration_arguments_name_what_they_accept():
    with pytest.raises(ValueError, match="cluster must be a hardware.Cluster"):
        parallelism.default_calibration("H100")
    for bad in ("playbook", 0.8, "Default"):
        with pytest.raises(ValueError, match='calibration must be "default", None'):
            parallelism.resolve_calibration(bad)
        with pytest.raises(ValueError, match='calibration must be "default", None'):
            budget.step_time(GPT3_175B, ParallelPlan(tensor_parallel=8), hardware.DGX_H100, calibration=bad)
        with pytest.raises(ValueError, match='calibration must be "default", None'):
            parallelism.memory_breakdown(GPT3_175B, ParallelPlan(tensor_parallel=8), calibration=bad)


def test_framework_arguments_name_what_they_accept():
    plan = ParallelPlan(tensor_parallel=8)
    for bad in ("jax", "Megatron", 3, None.__class__):
        with pytest.raises(ValueError, match="framework must be a parallelism.Framework or one of 'megatron'"):
            budget.step_time(GPT3_175B, plan, hardware.DGX_H100, framework=bad)
        with pytest.raises(ValueError, match="framework must be a parallelism.Framework or one of"):
            parallelism.memory_breakdown(GPT3_175B, plan, framework=bad)
        with pytest.raises(ValueError, match="framework must be a parallelism.Framework or one of 'megatron'"):
            parallelism.memory_budget_report(GPT3_175B, plan, hardware.H100, framework=bad)
    with pytest.raises(ValueError, match="framework needs the calibrated model"):
        budget.step_time(GPT3_175B, plan, hardware.DGX_H100, calibration=None, framework="megatron")
    # A framework that cannot run a plan says which and why (Megatron's distributed optimizer is ZeRO-1).
    with pytest.raises(
        ValueError,
        match=r"zero_stage=3 with pipeline_parallel=2 is not run by Megatron-LM: it combines no ZeRO stage above 1 "
        r"with a pipeline \(NVIDIA/Megatron-LM@core_v0.19.0 the distributed optimizer \(ZeRO-1\) runs with pipelines",
    ):
        parallelism.memory_breakdown(GPT3_175B, ParallelPlan(pipeline_parallel=2, zero_stage=3), framework="megatron")
    # nanotron has ZeRO-1 only, with or without a pipeline; its engines run AFAB (GPipe) and 1F1B, never interleaved.
    with pytest.raises(ValueError, match=r"zero_stage=2 is not run by nanotron: it runs ZeRO-0 and ZeRO-1 only \(hug"):
        parallelism.memory_breakdown(GPT3_175B, ParallelPlan(data_parallel=8, zero_stage=2), framework="nanotron")
    interleaved = ParallelPlan(pipeline_parallel=4, grad_accum_steps=8, schedule="interleaved", virtual_stages=2)
    with pytest.raises(ValueError, match=r"schedule='interleaved' is not run by nanotron: its pipeline schedules are "):
        budget.step_time(GPT3_175B, interleaved, hardware.DGX_H100, framework="nanotron")


def test_tensor_parallel_must_divide_heads():
    with pytest.raises(ValueError, match="tensor_parallel must divide heads"):
        parallelism.activation_bytes_per_layer(2048, 1, 12288, 96, tensor_parallel=5)
    with pytest.raises(ValueError, match=r"tensor_parallel must divide heads \(96\), got 5"):
        parallelism.stored_activation_bytes(2048, 1, 12288, 96, tensor_parallel=5)
    with pytest.raises(ValueError, match=r"must divide layers \(96\), got 5 × 2"):
        parallelism.check_pipeline_split(96, 5, 2)
    parallelism.check_tensor_split(96, 8)  # 8 divides 96: no error
    parallelism.check_pipeline_split(96, 12, 2)


def test_schedule_rules():
    with pytest.raises(ValueError, match="virtual_stages"):
        ParallelPlan(pipeline_parallel=4, grad_accum_steps=8, virtual_stages=2)  # needs schedule="interleaved"
    with pytest.raises(ValueError, match="grad_accum_steps"):
        ParallelPlan(pipeline_parallel=4, grad_accum_steps=6, schedule="interleaved", virtual_stages=2)
    with pytest.raises(ValueError, match="schedule"):
        ParallelPlan(schedule="zero-bubble")


def test_zero_bubble_plan_rules():
    # ZB-H1 needs m ≥ p, ZB-H2 m ≥ 2p − 1 (Qi et al. 2024 §2's warm-up), and v = 1.
    ParallelPlan(pipeline_parallel=4, grad_accum_steps=4, schedule="zb-h1")
    ParallelPlan(pipeline_parallel=4, grad_accum_steps=7, schedule="zb-h2")
    with pytest.raises(ValueError, match=r"grad_accum_steps .* ≥ 1\(p − 1\) \+ 1 = 4 with schedule='zb-h1'.*got 3"):
        ParallelPlan(pipeline_parallel=4, grad_accum_steps=3, schedule="zb-h1")
    with pytest.raises(ValueError, match=r"grad_accum_steps .* ≥ 2\(p − 1\) \+ 1 = 7 with schedule='zb-h2'.*got 6"):
        ParallelPlan(pipeline_parallel=4, grad_accum_steps=6, schedule="zb-h2")
    with pytest.raises(ValueError, match="grad_accum_steps"):  # arrays: one plan too short is enough
        ParallelPlan(pipeline_parallel=np.array([2, 8]), grad_accum_steps=8, schedule="zb-h2")
    with pytest.raises(ValueError, match="virtual_stages must be 1 unless schedule='interleaved'"):
        ParallelPlan(pipeline_parallel=4, grad_accum_steps=8, schedule="zb-h1", virtual_stages=2)


def test_zero_bubble_schedule_needs_a_framework_that_splits_the_backward():
    model, cluster = parallelism.GPT2_1_5B, hardware.DGX_H100
    plan = ParallelPlan(data_parallel=2, pipeline_parallel=4, grad_accum_steps=8, schedule="zb-h1")
    budget.step_time(model, plan, cluster, framework="fsdp2-pipeline")  # torchtitan runs PyTorch's ZB schedules
    budget.step_time(model, plan, cluster, calibration=None)  # the ideal model has no framework
    for framework in ("megatron", "deepspeed", "nanotron"):
        with pytest.raises(ValueError, match=r"schedule='zb-h1' is not run by .*: its pipeline schedules are"):
            budget.step_time(model, plan, cluster, framework=framework)
    with pytest.raises(ValueError, match="pipeline_parallel=4 is not run by PyTorch FSDP2: it has no pipeline"):
        budget.step_time(model, plan, cluster, framework="fsdp2")
    with pytest.raises(ValueError, match="schedule='zb-h2' is not run by PyTorch FSDP2 with pipelining"):
        budget.step_time(model, plan.replace(schedule="zb-h2", grad_accum_steps=8), cluster, framework="fsdp2-pipeline")
    with pytest.raises(ValueError, match="schedule='zb-h1'"):  # the default calibration runs Megatron-LM
        budget.step_time(model, plan, cluster)
    with pytest.raises(ValueError, match="schedule='zb-h1'"):
        parallelism.calibrated_memory_breakdown(model, plan, parallelism.default_calibration(cluster))
    unsynchronised = plan.replace(schedule="zb-h2", optimizer_sync=False)
    budget.step_time(model, unsynchronised, cluster, calibration=None)
    with pytest.raises(ValueError, match="schedule='zb-h2' is not run by PyTorch FSDP2 with pipelining"):
        budget.step_time(model, unsynchronised, cluster, framework="fsdp2-pipeline")
    with pytest.raises(ValueError, match="optimizer_sync must be True with a calibration"):
        budget.step_time(model, unsynchronised.replace(schedule="zb-h1"), cluster, framework="fsdp2-pipeline")


def test_algorithm_must_apply_to_the_op():
    with pytest.raises(ValueError, match="algorithm must be one of 'pairwise', 'bruck' for op='all_to_all'"):
        collectives.collective_time("all_to_all", 8, 1e6, 1e9, 1e-6)


def test_link_semantics_are_checked():
    with pytest.raises(ValueError, match="direction"):
        hardware.Link("x", 1e9, "both", "per GPU", "nominal", 1e-6, "-", "-")
    with pytest.raises(ValueError, match="bandwidth_bytes_per_s"):
        hardware.Link("x", 0, "one-way", "per GPU", "nominal", 1e-6, "-", "-")
    with pytest.raises(ValueError, match="^family must be one of 'NVLink', 'InfiniBand'"):
        hardware.Link("x", 1e9, "one-way", "per GPU", "nominal", 1e-6, "-", "-", family="NVlink")


def test_search_options_are_checked():
    for name, bad in (
        ("micro_batch_sizes", (0,)),
        ("micro_batch_sizes", ()),
        ("zero_stages", (5,)),
        ("recompute", ("some",)),
        ("virtual_stages", (1.5,)),
        ("zero_bubble", ("zb-h3",)),
        ("zero_bubble", "zb-h1"),
        ("sequence_parallel", ("no",)),
        ("memory_margin", -0.1),
        ("memory_margin", float("nan")),
        ("step_time_band", ((2, 0.8, 3.0),)),
        ("step_time_band", ((1, 3.0, 0.8),)),
        ("step_time_band", ((1, 0.0, 3.0),)),
        ("step_time_band", (1, 0.8, 3.0)),
    ):
        with pytest.raises(ValueError, match=name):
            budget.search_plans(parallelism.GPT2_1_5B, hardware.DGX_H100, 64, **{name: bad})


def test_band_quantiles_and_margins_are_checked():
    replay = validation.replay_runs(validation.load_playbook_runs())
    for quantiles in ((0.0, 0.9), (0.1, 1.0), (0.9, 0.1), (0.5,), (-0.1, 0.9)):
        with pytest.raises(ValueError, match="quantiles"):
            validation.step_time_band(replay, quantiles=quantiles)
    with pytest.raises(ValueError, match="quantile"):
        validation.memory_margin(replay, quantile=1.5)
    with pytest.raises(ValueError, match="memory_margin"):
        parallelism.Calibration(memory_margin=-0.421)


def test_arrays_with_one_bad_element_are_refused():
    with pytest.raises(ValueError, match="payload_bytes"):
        collectives.ring_allreduce_time(8, np.array([1e6, -1.0]), 1e9, 1e-6)
    with pytest.raises(ValueError, match="ranks"):
        collectives.ring_allreduce_time(np.array([8, 0]), 1e6, 1e9, 1e-6)
