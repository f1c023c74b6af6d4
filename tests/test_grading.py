"""The graded labs with the real otter-grader 7 and bubblewrap (no mocks): masters, student versions, hidden tests,
`make grade` in its sandbox, and a hostile class.

- One session fixture builds every assignment into a temporary folder with tools/assignments.py (`otter assign`,
  without otter's own test run: the graded submissions below check the masters' solutions).
- Every plausible wrong answer in WRONG is run against the autograder's tests in this process, with otter's own
  test-file runner: it must fail its question and leave every other question at full marks.
- One batch of synthetic submissions, made from the student versions, is graded end to end by tools/grade.py
  (`otter run` in a bubblewrap sandbox per notebook, two at a time). Honest ones: full marks, zero for the untouched
  student versions, exactly the wrong questions' points lost (questions 1 and 3 of each lab), a raising cell,
  deleted cells and reordered cells graded normally. In the same batch, the hostile class (HOSTILE: one notebook
  per kind of cheat or harm of issue 12) and files that are not submissions (a symlink to /etc/passwd, a
  dot-folder, a nested folder, a misnamed notebook): each cheat scores 0 or is flagged, the honest notebooks keep
  their marks, feedback leaks nothing, and afterwards the submissions, the build folder and the repository are
  unchanged and no process of the batch is left. A second folder, graded alongside with a 45 s timeout, holds an
  endless loop and an unreadable notebook.

About 4 minutes on 2 idle cores: 4 `otter assign` and about 35 sandboxed `otter run`, most of it in processes and
kernels starting and importing otter.
"""

from __future__ import annotations

import copy
import csv
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import jupytext
import nbformat
import pytest

from tools import assignments, grade
from tools import grading_sandbox as sandbox
from tools import grading_scan as scan

ROOT = Path(__file__).resolve().parents[1]
MASTERS = ROOT / "labs" / "source"
LABS = assignments.lab_names()
ANSWER_TAG, SOLUTION_TAG = "otter_answer_cell", "otter_assign_solution_cell"

# Plausible wrong answers: {lab: {question: [(mistake, source of the answer cell), ...]}}. The first one of each
# question is also graded end to end.
WRONG = {
    "01_ring_allreduce": {
        "q1": [
            (
                "2p steps instead of 2(p-1)",
                """
def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    return 2 * ranks * latency_s + 2 * (ranks - 1) / ranks * payload_bytes / bandwidth_bytes_per_s
""",
            ),
            (
                "two-way bandwidth",
                """
def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    steps = 2 * (ranks - 1)
    return steps * latency_s + steps * payload_bytes / ranks / (2 * bandwidth_bytes_per_s)
""",
            ),
            (
                "the whole payload in every step",
                """
def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    steps = 2 * (ranks - 1)
    return steps * latency_s + steps * payload_bytes / bandwidth_bytes_per_s
""",
            ),
            (
                "reduce-scatter only",
                """
def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    return (ranks - 1) * latency_s + (ranks - 1) / ranks * payload_bytes / bandwidth_bytes_per_s
""",
            ),
            (
                "latency once per phase",
                """
def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    return 2 * latency_s + 2 * (ranks - 1) / ranks * payload_bytes / bandwidth_bytes_per_s
""",
            ),
            (
                "calls course_lib's answer",
                """
def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    return collectives.ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s)
""",
            ),
        ],
        "q2": [
            (
                "the ring's own crossover p·α·B",
                """
def ring_beats_recursive_doubling_bytes(ranks, bandwidth_bytes_per_s, latency_s):
    return ranks * latency_s * bandwidth_bytes_per_s
""",
            ),
            (
                "a ring sending 2S instead of 2(p-1)/p·S",
                """
def ring_beats_recursive_doubling_bytes(ranks, bandwidth_bytes_per_s, latency_s):
    return (2 * (ranks - 1) - math.log2(ranks)) * latency_s * bandwidth_bytes_per_s / (math.log2(ranks) - 2)
""",
            ),
            (
                "Rabenseifner's 2 lg p steps for recursive doubling",
                """
def ring_beats_recursive_doubling_bytes(ranks, bandwidth_bytes_per_s, latency_s):
    lg = math.log2(ranks)
    return (2 * (ranks - 1) - 2 * lg) * latency_s * bandwidth_bytes_per_s / (lg - 2 * (ranks - 1) / ranks)
""",
            ),
            (
                "calls course_lib's answer",
                """
def ring_beats_recursive_doubling_bytes(ranks, bandwidth_bytes_per_s, latency_s):
    return collectives.equal_time_payload_bytes(
        "all_reduce", ranks, bandwidth_bytes_per_s, latency_s, "ring", "recursive_doubling"
    )
""",
            ),
        ],
        "q3": [
            (
                "the all-reduce factor for every collective",
                """
def busbw_bytes_per_s(op, ranks, size_bytes, time_s):
    return size_bytes / time_s * 2 * (ranks - 1) / ranks
""",
            ),
            (
                "(n-1)/n for all-reduce too",
                """
def busbw_bytes_per_s(op, ranks, size_bytes, time_s):
    return size_bytes / time_s * (1.0 if op == "broadcast" else (ranks - 1) / ranks)
""",
            ),
            (
                "the factor inverted",
                """
def busbw_bytes_per_s(op, ranks, size_bytes, time_s):
    factor = {"all_reduce": 2 * (ranks - 1) / ranks, "broadcast": 1.0}.get(op, (ranks - 1) / ranks)
    return size_bytes / time_s / factor
""",
            ),
            (
                "algbw, no factor",
                """
def busbw_bytes_per_s(op, ranks, size_bytes, time_s):
    return size_bytes / time_s
""",
            ),
        ],
        "q4": [
            (
                "NVLink's two-way figure",
                """
nvlink_allreduce_s = collectives.ring_allreduce_time(8, 2e9, 900e9, 1e-6)
infiniband_allreduce_s = collectives.ring_allreduce_time(16, 2e9, 50e9, 5e-6)
""",
            ),
            (
                "bits read as bytes",
                """
nvlink_allreduce_s = collectives.ring_allreduce_time(8, 2e9, 450e9, 1e-6)
infiniband_allreduce_s = collectives.ring_allreduce_time(16, 2e9, 400e9, 5e-6)
""",
            ),
            (
                "the network's latency for NVLink",
                """
nvlink_allreduce_s = collectives.ring_allreduce_time(8, 2e9, 450e9, 5e-6)
infiniband_allreduce_s = collectives.ring_allreduce_time(16, 2e9, 50e9, 5e-6)
""",
            ),
            (
                "the per-node InfiniBand preset given to one GPU",
                """
from course_lib import hardware

nvlink_allreduce_s = collectives.ring_allreduce_time(8, 2e9, 450e9, 1e-6)
infiniband = hardware.INFINIBAND_NDR_8X.one_way_bytes_per_s_per_device(devices_per_node=1)
infiniband_allreduce_s = collectives.ring_allreduce_time(16, 2e9, infiniband, 5e-6)
""",
            ),
            (
                "NVLink's preset figure as published",
                """
from course_lib import hardware

nvlink_allreduce_s = collectives.ring_allreduce_time(8, 2e9, hardware.NVLINK4.bandwidth_bytes_per_s, 1e-6)
infiniband_allreduce_s = collectives.ring_allreduce_time(16, 2e9, 50e9, 5e-6)
""",
            ),
        ],
    },
    "02_global_batch": {
        "q1": [
            (
                "tensor and pipeline sizes multiply the batch",
                """
def global_batch_samples(micro_batch, grad_accum_steps, devices, tensor_parallel, pipeline_parallel):
    if devices % (tensor_parallel * pipeline_parallel):
        raise ValueError("t·p must divide devices")
    return micro_batch * grad_accum_steps * devices
""",
            ),
            (
                "only the tensor size divides the devices",
                """
def global_batch_samples(micro_batch, grad_accum_steps, devices, tensor_parallel, pipeline_parallel):
    if devices % (tensor_parallel * pipeline_parallel):
        raise ValueError("t·p must divide devices")
    return micro_batch * grad_accum_steps * (devices // tensor_parallel)
""",
            ),
            (
                "no ValueError for an uneven split",
                """
def global_batch_samples(micro_batch, grad_accum_steps, devices, tensor_parallel, pipeline_parallel):
    return micro_batch * grad_accum_steps * (devices // (tensor_parallel * pipeline_parallel))
""",
            ),
        ],
        "q2": [
            (
                "tensor and pipeline sizes multiply the batch",
                """
def accumulation_steps(target_global_batch, micro_batch, devices, tensor_parallel, pipeline_parallel):
    steps, remainder = divmod(target_global_batch, micro_batch * devices)
    if remainder or steps < 1:
        raise ValueError("no whole number of steps")
    return steps
""",
            ),
            (
                "rounds up instead of raising",
                """
import math
def accumulation_steps(target_global_batch, micro_batch, devices, tensor_parallel, pipeline_parallel):
    return math.ceil(target_global_batch / (micro_batch * devices // (tensor_parallel * pipeline_parallel)))
""",
            ),
        ],
        "q3": [
            (
                "tokens counted as samples",
                """
run_accumulation_steps = 2**22 // (2 * 16)
run_bubble_fraction = parallelism.pipeline_bubble_fraction(8, run_accumulation_steps)
""",
            ),
            (
                "every device a replica",
                """
run_accumulation_steps = 2**22 // 2048 // (2 * 512)
run_bubble_fraction = parallelism.pipeline_bubble_fraction(8, run_accumulation_steps)
""",
            ),
            (
                "the bubble as a share of the step",
                """
run_accumulation_steps = 64
run_bubble_fraction = 7 / (64 + 7)
""",
            ),
        ],
    },
    "03_memory_budget": {
        "q1": [
            (
                "stage 1 also partitions the gradients",
                """
def model_state_bytes(params, data_parallel, stage):
    return (2 * params / (data_parallel if stage >= 3 else 1) + 2 * params / (data_parallel if stage >= 1 else 1)
            + 12 * params / (data_parallel if stage >= 1 else 1))
""",
            ),
            (
                "no fp32 master copy (K = 8)",
                """
def model_state_bytes(params, data_parallel, stage):
    return (2 * params / (data_parallel if stage >= 3 else 1) + 2 * params / (data_parallel if stage >= 2 else 1)
            + 8 * params / (data_parallel if stage >= 1 else 1))
""",
            ),
            (
                "stage 3 does not partition the parameters",
                """
def model_state_bytes(params, data_parallel, stage):
    return (2 * params + 2 * params / (data_parallel if stage >= 2 else 1)
            + 12 * params / (data_parallel if stage >= 1 else 1))
""",
            ),
            (
                "calls course_lib's answer",
                """
def model_state_bytes(params, data_parallel, stage):
    return parallelism.zero_model_state_bytes(params, data_parallel, stage)
""",
            ),
        ],
        "q2": [
            (
                "rounds down",
                """
def smallest_data_parallel(params, stage, capacity_bytes):
    floor = {0: 16, 1: 4, 2: 2, 3: 0}[stage] * params
    if floor > capacity_bytes or (stage > 0 and floor == capacity_bytes):
        return None
    if stage == 0:
        return 1
    return max(1, int((16 * params - floor) / (capacity_bytes - floor)))
""",
            ),
            (
                "must fit with room to spare (<)",
                """
def smallest_data_parallel(params, stage, capacity_bytes):
    floor = {0: 16, 1: 4, 2: 2, 3: 0}[stage] * params
    if floor >= capacity_bytes:
        return None
    replicas = 1
    while parallelism.zero_model_state_bytes(params, replicas, stage) >= capacity_bytes:
        replicas += 1
        if stage == 0:
            return None
    return replicas
""",
            ),
            (
                "ignores the floors",
                """
import math
def smallest_data_parallel(params, stage, capacity_bytes):
    return max(1, math.ceil(16 * params / capacity_bytes))
""",
            ),
        ],
        "q3": [
            (
                "one past the largest that fits",
                """
def largest_micro_batch(model, plan, capacity_bytes):
    micro_batch = 1
    plans = lambda b: plan.replace(micro_batch=b)
    while parallelism.memory_breakdown(model, plans(micro_batch), calibration=None).total <= capacity_bytes:
        micro_batch += 1
    return micro_batch
""",
            ),
            (
                "1 when nothing fits",
                """
def largest_micro_batch(model, plan, capacity_bytes):
    micro_batch = 1
    plans = lambda b: plan.replace(micro_batch=b)
    while parallelism.memory_breakdown(model, plans(micro_batch + 1), calibration=None).total <= capacity_bytes:
        micro_batch += 1
    return micro_batch
""",
            ),
        ],
    },
    "04_pipeline_schedule": {
        "q1": [
            (
                "the bubble as a share of the step",
                """
def bubble_fraction(stages, microbatches, virtual_stages=1):
    return (stages - 1) / (virtual_stages * microbatches + stages - 1)
""",
            ),
            (
                "ignores the virtual stages",
                """
def bubble_fraction(stages, microbatches, virtual_stages=1):
    return (stages - 1) / microbatches
""",
            ),
            (
                "p instead of p - 1",
                """
def bubble_fraction(stages, microbatches, virtual_stages=1):
    return stages / (virtual_stages * microbatches)
""",
            ),
        ],
        "q2": [
            (
                "strictly below the budget",
                """
def microbatches_for_bubble(stages, max_bubble, virtual_stages=1):
    step = stages if virtual_stages > 1 else 1
    microbatches = step
    while parallelism.pipeline_bubble_fraction(stages, microbatches, virtual_stages) >= max_bubble:
        microbatches += step
    return microbatches
""",
            ),
            (
                "ignores the multiple of p",
                """
def microbatches_for_bubble(stages, max_bubble, virtual_stages=1):
    microbatches = 1
    while (stages - 1) / (virtual_stages * microbatches) > max_bubble:
        microbatches += 1
    return microbatches
""",
            ),
            (
                "the bubble as a share of the step",
                """
def microbatches_for_bubble(stages, max_bubble, virtual_stages=1):
    step = stages if virtual_stages > 1 else 1
    microbatches = step
    while (stages - 1) / (virtual_stages * microbatches + stages - 1) > max_bubble:
        microbatches += step
    return microbatches
""",
            ),
        ],
        "q3": [
            (
                "no bubble",
                """
def step_time_s(stages, microbatches, forward_time_s, backward_time_s):
    return microbatches * (forward_time_s + backward_time_s)
""",
            ),
            (
                "m + p stage times",
                """
def step_time_s(stages, microbatches, forward_time_s, backward_time_s):
    return (microbatches + stages) * (forward_time_s + backward_time_s)
""",
            ),
        ],
        "q4": [
            (
                "1F1B always holds p",
                """
def in_flight_microbatches(stages, microbatches, schedule):
    return microbatches if schedule == "gpipe" else stages
""",
            ),
            (
                "GPipe and 1F1B swapped",
                """
def in_flight_microbatches(stages, microbatches, schedule):
    return microbatches if schedule == "1f1b" else min(stages, microbatches)
""",
            ),
        ],
    },
    "05_measure_collectives": {
        "q1": [
            (
                "lg p phases (recursive doubling's) for the ring",
                """
def fit_ring_alpha_beta(ranks, sizes_bytes, times_s):
    sizes, times = np.asarray(sizes_bytes, dtype=float), np.asarray(times_s, dtype=float)
    design = np.column_stack([np.full_like(sizes, np.log2(ranks)), 2 * (ranks - 1) / ranks * sizes]) / times[:, None]
    (alpha, inverse_b), *_ = np.linalg.lstsq(design, np.ones_like(times), rcond=None)
    return float(alpha), float(1 / inverse_b)
""",
            ),
            (
                "absolute errors instead of relative",
                """
def fit_ring_alpha_beta(ranks, sizes_bytes, times_s):
    sizes, times = np.asarray(sizes_bytes, dtype=float), np.asarray(times_s, dtype=float)
    design = np.column_stack([np.full_like(sizes, 2 * (ranks - 1)), 2 * (ranks - 1) / ranks * sizes])
    (alpha, inverse_b), *_ = np.linalg.lstsq(design, times, rcond=None)
    return float(alpha), float(1 / inverse_b)
""",
            ),
            (
                "Q = S, without 2(p-1)/p (right only at p = 2)",
                """
def fit_ring_alpha_beta(ranks, sizes_bytes, times_s):
    sizes, times = np.asarray(sizes_bytes, dtype=float), np.asarray(times_s, dtype=float)
    design = np.column_stack([np.full_like(sizes, 2 * (ranks - 1)), sizes]) / times[:, None]
    (alpha, inverse_b), *_ = np.linalg.lstsq(design, np.ones_like(times), rcond=None)
    return float(alpha), float(1 / inverse_b)
""",
            ),
        ],
        "q2": [
            (
                "algbw taken for busbw",
                """
def busbw_bytes_per_s(op, ranks, size_bytes, time_s):
    return size_bytes / time_s
""",
            ),
            (
                "the all-reduce factor for every collective",
                """
def busbw_bytes_per_s(op, ranks, size_bytes, time_s):
    return size_bytes / time_s * 2 * (ranks - 1) / ranks
""",
            ),
        ],
        "q3": [
            (
                "the lowest p10",
                """
def fastest_algorithm(table, size_bytes):
    return min((r for r in table if r["size_bytes"] == size_bytes), key=lambda r: r["p10_s"])["algorithm"]
""",
            ),
            (
                "the lowest p90",
                """
def fastest_algorithm(table, size_bytes):
    return min((r for r in table if r["size_bytes"] == size_bytes), key=lambda r: r["p90_s"])["algorithm"]
""",
            ),
        ],
        "q4": [
            (
                "the mean over ranks",
                """
def exposed_communication_s(step_times_s, compute_times_s):
    return float(np.median(np.mean(step_times_s, axis=1)) - np.median(np.mean(compute_times_s, axis=1)))
""",
            ),
            (
                "rank 0's time",
                """
def exposed_communication_s(step_times_s, compute_times_s):
    return float(np.median(np.asarray(step_times_s)[:, 0]) - np.median(np.asarray(compute_times_s)[:, 0]))
""",
            ),
            (
                "the mean over iterations",
                """
def exposed_communication_s(step_times_s, compute_times_s):
    return float(np.mean(np.max(step_times_s, axis=1)) - np.mean(np.max(compute_times_s, axis=1)))
""",
            ),
        ],
    },
    "06_partition_explorer": {
        "q1": [
            (
                "tensor-parallel all-reduces counted once per layer",
                """
def transfers_per_axis(model, plan):
    t, p, d, b, m, v = plan.sizes
    activation = 2 * b * model.seq_len * model.hidden
    calls = model.layers // p * m * (2 if plan.sequence_parallel else 1)
    return {"tensor": (activation, calls) if t > 1 else (0, 0),
            "pipeline": (activation / t, 2 * m * v) if p > 1 else (0, 0)}
""",
            ),
            (
                "pipeline sends counted in one direction only",
                """
def transfers_per_axis(model, plan):
    t, p, d, b, m, v = plan.sizes
    activation = 2 * b * model.seq_len * model.hidden
    pairs = model.layers // p * m
    calls = (2 * pairs * (2 if plan.recompute == "full" else 1) + 2 * pairs) * (2 if plan.sequence_parallel else 1)
    return {"tensor": (activation, calls) if t > 1 else (0, 0),
            "pipeline": (activation / t, m * v) if p > 1 else (0, 0)}
""",
            ),
            (
                "sequence parallelism counted as all-reduces (one call each)",
                """
def transfers_per_axis(model, plan):
    t, p, d, b, m, v = plan.sizes
    activation = 2 * b * model.seq_len * model.hidden
    pairs = model.layers // p * m
    calls = 2 * pairs * (2 if plan.recompute == "full" else 1) + 2 * pairs
    return {"tensor": (activation, calls) if t > 1 else (0, 0),
            "pipeline": (activation / t, 2 * m * v) if p > 1 else (0, 0)}
""",
            ),
            (
                "virtual stages ignored",
                """
def transfers_per_axis(model, plan):
    t, p, d, b, m, v = plan.sizes
    activation = 2 * b * model.seq_len * model.hidden
    pairs = model.layers // p * m
    calls = (2 * pairs * (2 if plan.recompute == "full" else 1) + 2 * pairs) * (2 if plan.sequence_parallel else 1)
    return {"tensor": (activation, calls) if t > 1 else (0, 0),
            "pipeline": (activation / t, 2 * m) if p > 1 else (0, 0)}
""",
            ),
            (
                "full recomputation does not repeat the forward collectives",
                """
def transfers_per_axis(model, plan):
    t, p, d, b, m, v = plan.sizes
    activation = 2 * b * model.seq_len * model.hidden
    calls = 4 * (model.layers // p) * m * (2 if plan.sequence_parallel else 1)
    return {"tensor": (activation, calls) if t > 1 else (0, 0),
            "pipeline": (activation / t, 2 * m * v) if p > 1 else (0, 0)}
""",
            ),
            (
                "calls course_lib's answer",
                """
def transfers_per_axis(model, plan):
    out = {"tensor": (0, 0), "pipeline": (0, 0)}
    for axis in out:
        rows = [x for x in parallelism.boundary_tensors(model, plan) if x.axis == axis]
        if rows:
            out[axis] = (rows[0].payload_bytes, sum(x.calls_per_step for x in rows))
    return out
""",
            ),
        ],
        "q2": [
            (
                "t > devices per node, the placement ignored",
                """
def tensor_group_leaves_node(tensor_parallel, data_parallel, devices_per_node, tensor_innermost):
    return tensor_parallel > devices_per_node
""",
            ),
            (
                "t ≥ devices per node (a full node counted as leaving it)",
                """
def tensor_group_leaves_node(tensor_parallel, data_parallel, devices_per_node, tensor_innermost):
    stride = 1 if tensor_innermost else data_parallel
    return tensor_parallel * stride >= devices_per_node
""",
            ),
        ],
        "q3": [
            (
                "rounds down",
                """
def micro_batches_to_hide(model, plan, cluster):
    import math
    gradients = next(x for x in parallelism.step_transfers(model, plan) if x.axis == "data" and x.tensor == "gradients")
    reduce_s = budget.transfer_time_per_call(gradients, plan, cluster)
    shape = (model.seq_len, model.layers, model.hidden, model.vocab)
    forward = compute.transformer_forward_flops(plan.micro_batch, *shape)
    iteration = compute.transformer_flops_per_iteration(plan.micro_batch, *shape, recompute=plan.recompute)
    rate = 0.5 * cluster.accelerator.peak("bf16")
    backward_s = (iteration - forward) / (plan.tensor_parallel * plan.pipeline_parallel) / rate
    return max(1, math.floor(reduce_s / backward_s))
""",
            ),
            (
                "the forward pass counted in the window",
                """
def micro_batches_to_hide(model, plan, cluster):
    import math
    gradients = next(x for x in parallelism.step_transfers(model, plan) if x.axis == "data" and x.tensor == "gradients")
    reduce_s = budget.transfer_time_per_call(gradients, plan, cluster)
    shape = (model.seq_len, model.layers, model.hidden, model.vocab)
    iteration = compute.transformer_flops_per_iteration(plan.micro_batch, *shape, recompute=plan.recompute)
    window_s = iteration / (plan.tensor_parallel * plan.pipeline_parallel) / (0.5 * cluster.accelerator.peak("bf16"))
    return max(1, math.ceil(reduce_s / window_s))
""",
            ),
            (
                "a node's aggregate network bandwidth for the reduce-scatter",
                """
def micro_batches_to_hide(model, plan, cluster):
    import math
    from dataclasses import replace
    aggregate = replace(cluster, inter_node_link=replace(cluster.inter_node_link, scope="per GPU"))
    gradients = next(x for x in parallelism.step_transfers(model, plan) if x.axis == "data" and x.tensor == "gradients")
    reduce_s = budget.transfer_time_per_call(gradients, plan, aggregate)
    shape = (model.seq_len, model.layers, model.hidden, model.vocab)
    forward = compute.transformer_forward_flops(plan.micro_batch, *shape)
    iteration = compute.transformer_flops_per_iteration(plan.micro_batch, *shape, recompute=plan.recompute)
    rate = 0.5 * cluster.accelerator.peak("bf16")
    backward_s = (iteration - forward) / (plan.tensor_parallel * plan.pipeline_parallel) / rate
    return max(1, math.ceil(reduce_s / backward_s))
""",
            ),
        ],
        "q4": [
            (
                "a node's aggregate network bandwidth for one collective",
                """
def critical_path_communication_s(model, plan, cluster):
    from dataclasses import replace
    aggregate = replace(cluster, inter_node_link=replace(cluster.inter_node_link, scope="per GPU"))
    return sum(x.calls_per_step * budget.transfer_time_per_call(x, plan, aggregate)
               for x in parallelism.boundary_tensors(model, plan) if x.phase == "none")
""",
            ),
            (
                "pipeline sends counted in one direction only",
                """
def critical_path_communication_s(model, plan, cluster):
    return sum(x.calls_per_step * budget.transfer_time_per_call(x, plan, cluster)
               for x in parallelism.boundary_tensors(model, plan)
               if x.phase == "none" and not (x.axis == "pipeline" and "backward" in x.tensor))
""",
            ),
            (
                "the parameter all-gather after the optimizer step left out",
                """
def critical_path_communication_s(model, plan, cluster):
    return sum(x.calls_per_step * budget.transfer_time_per_call(x, plan, cluster)
               for x in parallelism.boundary_tensors(model, plan) if x.axis in ("tensor", "pipeline"))
""",
            ),
            (
                "one call per transfer instead of its calls per step",
                """
def critical_path_communication_s(model, plan, cluster):
    return sum(budget.transfer_time_per_call(x, plan, cluster)
               for x in parallelism.boundary_tensors(model, plan) if x.phase == "none")
""",
            ),
            (
                "calls course_lib's answer",
                """
def critical_path_communication_s(model, plan, cluster):
    step = budget.step_time(model, plan, cluster, calibration=None)
    return step.exposed_s["tensor"] + step.exposed_s["pipeline"]
""",
            ),
        ],
    },
    "07_serving": {
        "q1": [
            (
                "K counted, V forgotten",
                """
def kv_cache_bytes(model, context_len, sequences, bytes_per_element=2):
    return model.layers * model.kv_heads * model.head_dim * context_len * sequences * bytes_per_element
""",
            ),
            (
                "all query heads instead of the KV heads",
                """
def kv_cache_bytes(model, context_len, sequences, bytes_per_element=2):
    return model.layers * 2 * model.heads * model.head_dim * context_len * sequences * bytes_per_element
""",
            ),
            (
                "2 bytes whatever bytes_per_element",
                """
def kv_cache_bytes(model, context_len, sequences, bytes_per_element=2):
    return model.layers * 2 * model.kv_heads * model.head_dim * context_len * sequences * 2
""",
            ),
        ],
        "q2": [
            (
                "rounded up: equal times counted as compute-bound",
                """
def compute_bound_batch(peak_flops_per_s, hbm_bandwidth_bytes_per_s, bytes_per_param):
    import math
    return math.ceil(peak_flops_per_s * bytes_per_param / (2 * hbm_bandwidth_bytes_per_s))
""",
            ),
            (
                "the ridge point in FLOPs per byte, not per parameter",
                """
def compute_bound_batch(peak_flops_per_s, hbm_bandwidth_bytes_per_s, bytes_per_param):
    return int(peak_flops_per_s // hbm_bandwidth_bytes_per_s) + 1
""",
            ),
            (
                "one FLOP per weight and sequence",
                """
def compute_bound_batch(peak_flops_per_s, hbm_bandwidth_bytes_per_s, bytes_per_param):
    return int(peak_flops_per_s * bytes_per_param // hbm_bandwidth_bytes_per_s) + 1
""",
            ),
        ],
        "q3": [
            (
                "memory not checked",
                """
def lowest_latency_t(model, cluster, sequences, context_len):
    usable = [
        t for t in range(1, cluster.devices + 1)
        if model.heads % t == 0 and (model.kv_heads % t == 0 or t % model.kv_heads == 0)
    ]
    return min(
        usable,
        key=lambda t: serving.decode_step(model, cluster, t, 1, sequences, context_len).time_per_output_token_s,
    )
""",
            ),
            (
                "powers of two only",
                """
def lowest_latency_t(model, cluster, sequences, context_len):
    best_t, best_s = None, None
    for t in (1, 2, 4, 8, 16, 32, 64, 128):
        if t > cluster.devices or model.heads % t or (model.kv_heads % t and t % model.kv_heads):
            continue
        if serving.serving_memory(model, t, 1, sequences, context_len).total > cluster.accelerator.hbm_capacity_bytes:
            continue
        seconds = serving.decode_step(model, cluster, t, 1, sequences, context_len).time_per_output_token_s
        if best_s is None or seconds < best_s:
            best_t, best_s = t, seconds
    return best_t
""",
            ),
            (
                "the most tokens/s per GPU instead of the lowest latency",
                """
def lowest_latency_t(model, cluster, sequences, context_len):
    best_t, best_rate = None, None
    for t in range(1, cluster.devices + 1):
        if model.heads % t or (model.kv_heads % t and t % model.kv_heads):
            continue
        if serving.serving_memory(model, t, 1, sequences, context_len).total > cluster.accelerator.hbm_capacity_bytes:
            continue
        rate = serving.decode_step(model, cluster, t, 1, sequences, context_len).tokens_per_s_per_device
        if best_rate is None or rate > best_rate:
            best_t, best_rate = t, rate
    return best_t
""",
            ),
        ],
        "q4": [
            (
                "one all-reduce per layer instead of two",
                """
def time_per_output_token(model, cluster, tensor_parallel, sequences, context_len):
    t, b = tensor_parallel, sequences
    bandwidth, peak = cluster.accelerator.hbm_bandwidth_bytes_per_s, cluster.accelerator.peak("bf16")
    params = serving.matmul_params(model) / t
    weights = max(2 * params / bandwidth, 2 * b * params / peak)
    cache = serving.kv_cache_bytes(model.layers, model.kv_heads, model.head_dim, context_len, b) / t
    attention = max(cache / bandwidth, 4 * b * model.layers * model.hidden * context_len / t / peak)
    one_all_reduce = budget.group_collective_time("all_reduce", cluster, t, 1, 2 * b * model.hidden)
    return weights + attention + model.layers * one_all_reduce
""",
            ),
            (
                "the cache counted once (K only)",
                """
def time_per_output_token(model, cluster, tensor_parallel, sequences, context_len):
    t, b = tensor_parallel, sequences
    bandwidth, peak = cluster.accelerator.hbm_bandwidth_bytes_per_s, cluster.accelerator.peak("bf16")
    params = serving.matmul_params(model) / t
    weights = max(2 * params / bandwidth, 2 * b * params / peak)
    cache = model.layers * model.kv_heads * model.head_dim * context_len * b * 2 / t
    attention = max(cache / bandwidth, 4 * b * model.layers * model.hidden * context_len / t / peak)
    one_all_reduce = budget.group_collective_time("all_reduce", cluster, t, 1, 2 * b * model.hidden)
    return weights + attention + 2 * model.layers * one_all_reduce
""",
            ),
            (
                "all query heads in the cache",
                """
def time_per_output_token(model, cluster, tensor_parallel, sequences, context_len):
    t, b = tensor_parallel, sequences
    bandwidth, peak = cluster.accelerator.hbm_bandwidth_bytes_per_s, cluster.accelerator.peak("bf16")
    params = serving.matmul_params(model) / t
    weights = max(2 * params / bandwidth, 2 * b * params / peak)
    cache = serving.kv_cache_bytes(model.layers, model.heads, model.head_dim, context_len, b) / t
    attention = max(cache / bandwidth, 4 * b * model.layers * model.hidden * context_len / t / peak)
    one_all_reduce = budget.group_collective_time("all_reduce", cluster, t, 1, 2 * b * model.hidden)
    return weights + attention + 2 * model.layers * one_all_reduce
""",
            ),
            (
                "memory rooflines only (the multiplies never bind)",
                """
def time_per_output_token(model, cluster, tensor_parallel, sequences, context_len):
    t, b = tensor_parallel, sequences
    bandwidth = cluster.accelerator.hbm_bandwidth_bytes_per_s
    cache = serving.kv_cache_bytes(model.layers, model.kv_heads, model.head_dim, context_len, b) / t
    reads = (2 * serving.matmul_params(model) / t + cache) / bandwidth
    one_all_reduce = budget.group_collective_time("all_reduce", cluster, t, 1, 2 * b * model.hidden)
    return reads + 2 * model.layers * one_all_reduce
""",
            ),
        ],
    },
}
WRONG_CASES = [
    (lab, question, mistake, source)
    for lab, by_question in WRONG.items()
    for question, variants in by_question.items()
    for mistake, source in variants
]


# ---- notebooks as data ---------------------------------------------------------------------------------------------


def answer_cells(notebook, tag=ANSWER_TAG) -> dict[str, list[int]]:
    """{question: indices of its answer cells}: the tagged cells before each `grader.check("qN")` cell."""
    found, pending = {}, []
    for index, cell in enumerate(notebook.cells):
        if tag in cell.metadata.get("tags", []):
            pending.append(index)
        elif cell.cell_type == "code" and cell.source.strip().startswith("grader.check("):
            found[cell.source.strip()[len('grader.check("') : -2]] = pending
            pending = []
    return found


def filled(student, sources: dict[str, list[str]]):
    """A copy of the student notebook with the answer cells of each question in ``sources`` replaced."""
    notebook = copy.deepcopy(student)
    for question, indices in answer_cells(notebook).items():
        for index, source in zip(indices, sources.get(question, []), strict=True):
            notebook.cells[index].source = source.strip()
    return notebook


def code_without_otter(notebook) -> str:
    """The notebook's code as one script: no otter cells (init, checks) and no cells otter ignores (the widget)."""
    keep = [
        cell.source
        for cell in notebook.cells
        if cell.cell_type == "code"
        and "otter_ignore" not in cell.metadata.get("tags", [])
        and "grader" not in cell.source
    ]
    return "\n\n".join(keep)


@pytest.fixture(scope="session")
def built(assigned_out):
    """Every lab, from the session's one build: {lab: (student notebook, autograder notebook, zip)}."""
    out = assigned_out
    result = {}
    for lab in LABS:
        zip_path = assignments.autograder_zip(lab, out)
        assert zip_path is not None, f"no autograder zip for {lab} in {out}"
        result[lab] = (
            nbformat.read(out / lab / "student" / f"{lab}.ipynb", as_version=4),
            nbformat.read(out / lab / "autograder" / f"{lab}.ipynb", as_version=4),
            zip_path,
        )
    result["out"] = out
    return result


def solution_sources(autograder) -> dict[str, list[str]]:
    return {
        question: [autograder.cells[i].source for i in indices]
        for question, indices in answer_cells(autograder, SOLUTION_TAG).items()
    }


def load_test_files(zip_path: Path):
    """{question: otter ExceptionTestFile} of an autograder zip (public and hidden test cases)."""
    import warnings
    import zipfile

    with warnings.catch_warnings():  # otter's imports trip a traitlets DeprecationWarning that is not ours to fix
        warnings.simplefilter("ignore", DeprecationWarning)
        from otter.test_files import ExceptionTestFile

    with zipfile.ZipFile(zip_path) as archive:
        return {
            Path(name).stem: ExceptionTestFile.from_string(archive.read(name).decode(), path=name)
            for name in archive.namelist()
            if name.startswith("tests/") and name.endswith(".py")
        }


# ---- the masters ---------------------------------------------------------------------------------------------------


def test_every_lab_has_a_master():
    assert LABS == [
        "01_ring_allreduce",
        "02_global_batch",
        "03_memory_budget",
        "04_pipeline_schedule",
        "05_measure_collectives",
        "06_partition_explorer",
        "07_serving",
    ]


@pytest.mark.parametrize("lab", LABS)
def test_master_matches_its_py_twin_and_ran_top_to_bottom(lab):
    master = MASTERS / f"{lab}.ipynb"
    assert assignments.check_twin(master) is None, assignments.check_twin(master)
    notebook = nbformat.read(master, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    counts = [cell.execution_count for cell in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{lab}: run the master top to bottom: make notebooks NOTEBOOKS=labs/source/{lab}.py"
    )
    errors = [cell.source.splitlines()[0] for cell in code for output in cell.outputs if output.output_type == "error"]
    assert not errors, f"{lab}: cells stored errors: {errors}"


@pytest.mark.parametrize("lab", LABS)
def test_master_keeps_otter_markers_through_jupytext(lab):
    """The py:percent twin round-trips otter's raw cells and the tags of the cells that build a lab widget: the
    autograder skips them all (otter_ignore: a widget grades nothing and costs time), nbval skips the live widget's
    output."""
    notebook = jupytext.read(MASTERS / f"{lab}.py")
    raw = [cell.source.splitlines()[0] for cell in notebook.cells if cell.cell_type == "raw"]
    assert raw[0] == "# ASSIGNMENT CONFIG"
    assert raw.count("# BEGIN QUESTION") == raw.count("# END QUESTION") == len(WRONG[lab]) >= 3
    builds_a_lab = [cell for cell in notebook.cells if cell.cell_type == "code" and "_lab()" in cell.source]
    ignored = [cell for cell in notebook.cells if "otter_ignore" in cell.metadata.get("tags", [])]
    assert len(builds_a_lab) == 2 and ignored == builds_a_lab, "the widget cell and the key figures' cell"
    assert "nbval-ignore-output" in builds_a_lab[0].metadata["tags"]


# ---- student versions and tests ------------------------------------------------------------------------------------


@pytest.mark.parametrize("lab", LABS)
def test_every_question_has_public_and_hidden_tests(built, lab):
    student, _, zip_path = built[lab]
    tests = load_test_files(zip_path)
    assert sorted(tests) == sorted(WRONG[lab]), "WRONG must give a plausible wrong answer for every question"
    for question, test_file in tests.items():
        hidden = [case.hidden for case in test_file.test_cases]
        assert any(hidden) and not all(hidden), f"{lab} {question}: needs public and hidden test cases"
        assert test_file.all_or_nothing, f"{lab} {question}: all_or_nothing, so a wrong answer loses all its points"
    assert sorted(answer_cells(student)) == sorted(tests)
    assert all(len(cells) == 1 for cells in answer_cells(student).values())


@pytest.mark.parametrize("lab", LABS)
def test_student_version_holds_no_solutions_and_no_hidden_tests(built, lab):
    student, autograder, zip_path = built[lab]
    text = json.dumps(student)
    for marker in ("ASSIGNMENT CONFIG", "BEGIN QUESTION", "BEGIN SOLUTION", "# SOLUTION", "# HIDDEN", "BEGIN TESTS"):
        assert marker not in text, f"{lab}: the student version contains {marker!r}"
    cells = "\n".join(cell.source for cell in student.cells)
    stubs = {line.strip() for line in cells.splitlines()}
    for question, sources in solution_sources(autograder).items():
        for source in sources:
            lines = [
                line.split("# SOLUTION")[0].strip()
                for line in source.splitlines()
                if not line.strip().startswith(("# BEGIN SOLUTION", "# END SOLUTION"))
            ]
            secret = [line for line in lines if line and line not in stubs]
            assert secret, f"{lab} {question}: the solution cell has nothing the student version lacks"
            leaked = [line for line in secret if line in cells]
            assert not leaked, f"{lab} {question}: solution lines in the student version: {leaked}"
    for question, test_file in load_test_files(zip_path).items():
        for case in test_file.test_cases:
            name = case.body.test_func.__name__
            assert (name in text) != case.hidden, f"{lab} {question}: test {name} (hidden={case.hidden})"
    public = student.metadata["otter"]["tests"]
    assert sorted(public) == sorted(WRONG[lab]) and student.metadata["otter"]["assignment_name"] == lab


@pytest.mark.parametrize("lab", LABS)
def test_committed_student_version_is_up_to_date(built, lab):
    committed = ROOT / "labs" / f"{lab}.ipynb"
    if not committed.exists() or "otter" not in json.loads(committed.read_text(encoding="utf-8"))["metadata"]:
        pytest.skip(f"labs/{lab}.ipynb is not a student version yet (make assignments)")
    fresh = built["out"] / lab / "student" / f"{lab}.ipynb"
    assert committed.read_bytes() == fresh.read_bytes(), (
        f"labs/{lab}.ipynb differs from what its master gives: run `make assignments`"
    )


# ---- wrong answers, in process -------------------------------------------------------------------------------------


def scores(test_files, environment) -> dict[str, tuple[float, float, bool]]:
    """{question: (score, possible, passed every public case)} with otter's own test-file runner."""
    result = {}
    for question, test_file in test_files.items():
        test_file.run(environment)
        result[question] = (test_file.score, test_file.possible, test_file.passed_all_public)
    return result


def run_answers(student, sources) -> dict:
    environment = {}
    exec(compile(code_without_otter(filled(student, sources)), "<submission>", "exec"), environment)
    return environment


@pytest.fixture(scope="module")
def lab_tests(built):
    return {lab: load_test_files(built[lab][2]) for lab in LABS}


@pytest.mark.parametrize("lab", LABS)
def test_master_solutions_pass_every_test(built, lab_tests, lab):
    student, autograder, _ = built[lab]
    result = scores(lab_tests[lab], run_answers(student, solution_sources(autograder)))
    assert all(score == possible > 0 for score, possible, _ in result.values()), result


@pytest.mark.parametrize(
    "lab, question, mistake, source",
    WRONG_CASES,
    ids=[f"{lab}-{question}-{mistake}" for lab, question, mistake, _ in WRONG_CASES],
)
def test_a_wrong_answer_loses_exactly_its_questions_points(built, lab_tests, lab, question, mistake, source):
    student, autograder, _ = built[lab]
    answers = solution_sources(autograder) | {question: [source]}
    result = scores(lab_tests[lab], run_answers(student, answers))
    assert result[question][0] == 0, f"{mistake!r} scored {result[question][0]} on {question}"
    others = {q: s for q, s in result.items() if q != question and s[0] != s[1]}
    assert not others, f"{mistake!r} in {question} changed other questions: {others}"


@pytest.mark.parametrize(
    "mistake",
    ["NVLink's two-way figure", "bits read as bytes", "the per-node InfiniBand preset given to one GPU"],
)
def test_lab1_q4_public_test_fails_the_classic_slips(built, lab_tests, mistake):
    """A self-learner sees only the public tests: the two bandwidth slips q4 is about must fail there (issue 15)."""
    student, autograder, _ = built["01_ring_allreduce"]
    (source,) = [source for name, source in WRONG["01_ring_allreduce"]["q4"] if name == mistake]
    result = scores(
        {"q4": lab_tests["01_ring_allreduce"]["q4"]},
        run_answers(student, solution_sources(autograder) | {"q4": [source]}),
    )
    assert not result["q4"][2], f"{mistake!r} passes q4's public test"


# Labs whose public tests catch every plausible mistake of WRONG (issue 15: a self-learner never sees the hidden
# tests, so a slip must not get a green check); the hidden tests then add other inputs, not other slips.
PUBLIC_TESTS_CATCH_EVERY_SLIP = {"02_global_batch", "03_memory_budget", "04_pipeline_schedule"}


def test_hidden_tests_catch_mistakes_the_public_ones_miss(built, lab_tests):
    """Which plausible mistakes pass every public test and fail only hidden ones: none in the labs of
    PUBLIC_TESTS_CATCH_EVERY_SLIP."""
    caught_by_hidden_only = []
    for lab, question, mistake, source in WRONG_CASES:
        student, autograder, _ = built[lab]
        result = scores(
            {question: lab_tests[lab][question]},
            run_answers(student, solution_sources(autograder) | {question: [source]}),
        )
        if result[question][2]:
            caught_by_hidden_only.append(f"{lab} {question}: {mistake}")
    print("caught only by hidden tests:", *caught_by_hidden_only, sep="\n  ")
    missed = [case for case in caught_by_hidden_only if case.split()[0] in PUBLIC_TESTS_CATCH_EVERY_SLIP]
    assert not missed, f"public tests let these slips pass: {missed}"


# ---- grading a folder of submissions end to end ----------------------------------------------------------------------


def questions_and_points(built, lab) -> dict[str, float]:
    return grade.questions(built[lab][2])


# ---- hostile submissions ---------------------------------------------------------------------------------------------
# What a hostile student tried (issue 12), one notebook per kind, graded in the same batch as the honest ones. Each is
# the student version with the masters' solutions (or blank answers) and some cells of its own. MARKER is in the
# command line of every process they leave behind, so that the test can look for survivors.

MARKER = "grading-test-leftover-7f3a"
LAB1, LAB2, LAB3, LAB4 = LABS[:4]  # the hostile cases target labs 1–4

PATCH_ISCLOSE = "import math\nmath.isclose = lambda *args, **kwargs: True"
PATCH_COURSE_LIB = """
from course_lib import collectives
collectives.ring_allreduce_time = lambda *args: 0.0
collectives.latency_bandwidth_crossover_bytes = lambda *args: 0.0
collectives.busbw_bytes_per_s = lambda *args: 0.0
"""
ALIAS = """
from course_lib.collectives import ring_allreduce_time as reference


def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    return reference(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s)
"""
PATCH_OTTER = """
from otter.test_files.abstract_test import TestFile
TestFile.score = property(lambda self: self.possible)
TestFile.passed_all = property(lambda self: True)
TestFile.passed_all_public = property(lambda self: True)
"""
PASSING_TEST = "OK_FORMAT = False\\nname = 'q1'\\npoints = 2\\ndef test_q1(env):\\n    pass\\n"
OVERWRITE_TESTS = f"""
import glob
for path in glob.glob("tests/*.py") + glob.glob("../source/tests/*.py") + glob.glob("../**/tests/*.py", recursive=True):
    with open(path, "w") as stream:
        stream.write("{PASSING_TEST}")
"""
LOOKALIKE_TESTS = f"""
import os
for folder in ("/tmp/tests", "tests_q1", "../tests"):
    try:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "q1.py"), "w") as stream:
            stream.write("{PASSING_TEST}")
    except OSError:
        pass
"""
FRAME_PEEK = """
import sys


def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    frame = sys._getframe(1)
    while frame is not None:
        if "want" in frame.f_locals:
            return frame.f_locals["want"]
        frame = frame.f_back
    return 0.0
"""
ALWAYS_EQUAL_CLASS = """
class Anything(float):
    def __eq__(self, other):
        return True

    __hash__ = float.__hash__

    def __lt__(self, other):
        return True

    __le__ = __gt__ = __ge__ = __lt__

    def __sub__(self, other):
        return Anything(0.0)

    __rsub__ = __sub__

    def __abs__(self):
        return Anything(0.0)

    def __bool__(self):
        return True


class AnyInt(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__
"""
ALWAYS_EQUAL_ANSWERS = {  # lab 4's answers, each a look-alike that claims to equal anything
    "q1": "def bubble_fraction(stages, microbatches, virtual_stages=1):\n    return Anything(0.0)",
    "q2": "def microbatches_for_bubble(stages, max_bubble, virtual_stages=1):\n    return AnyInt(0)",
    "q3": "def step_time_s(stages, microbatches, forward_time_s, backward_time_s):\n    return Anything(0.0)",
    "q4": "def in_flight_microbatches(stages, microbatches, schedule):\n    return AnyInt(0)",
}
ALWAYS_EQUAL_ANSWERS_3 = {
    "q1": "def model_state_bytes(params, data_parallel, stage):\n    return Anything(0.0)",
    "q2": "def smallest_data_parallel(params, stage, capacity_bytes):\n    return AnyInt(1)",
    "q3": "def largest_micro_batch(model, plan, capacity_bytes):\n    return AnyInt(1)",
}
# The runner's command line ends with the summary file's path; its parent is `otter run`'s process.
FORGE_RESULTS = """
import json, os, signal
command = open(f"/proc/{os.getppid()}/cmdline", "rb").read().decode().split("\\0")
summary = [part for part in command if part.endswith(".json")]
forged = {"score": 999, "possible": 999, "public": "forged", "hidden_passed": True}
for path in summary + ["../results/results.json", "results.json"]:
    with open(path, "w") as stream:
        questions = {q: forged for q in ("q1", "q2", "q3")}
        json.dump({"questions": questions, "tests": [{"name": "q1", "score": 999}]}, stream)
os.kill(os.getppid(), signal.SIGKILL)
"""
GARBAGE_RESULTS = """
import os, signal
command = open(f"/proc/{os.getppid()}/cmdline", "rb").read().decode().split("\\0")
for path in [part for part in command if part.endswith(".json")]:
    with open(path, "w") as stream:
        stream.write('{"questions": {"q1": {"score": NaN, ')
os.kill(os.getppid(), signal.SIGKILL)
"""
HARM = """
import os, subprocess, sys
targets = {targets!r}
found = []
for pid in os.listdir("/proc"):  # the grader's command line names SUBMISSIONS
    try:
        found += open(f"/proc/{{pid}}/cmdline", "rb").read().decode().split("\\0")
    except (OSError, ValueError):
        pass
for path in targets + [part for part in found if "submissions" in part]:
    try:
        with open(path, "w") as stream:
            stream.write("{{}}")
    except OSError:
        pass
code = (
    "import time\\nfor _ in range(120):\\n    time.sleep(0.5)\\n    for p in " + repr(targets)
    + ":\\n        try:\\n            open(p, 'w').write('HACKED')\\n        except OSError:\\n            pass"
)
subprocess.Popen([sys.executable, "-c", code, "{marker}"], start_new_session=True)
if os.fork() == 0:  # a double fork, detached from the kernel
    os.setsid()
    if os.fork() == 0:
        os.execv("/bin/sh", ["/bin/sh", "-c", "sleep 600", "{marker}"])
    os._exit(0)
"""
LEAK_HIDDEN = """
import inspect, sys


def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    if (ranks, payload_bytes) != (4, 100e6):  # the hidden tests: raise with their source
        raise RuntimeError(inspect.getsource(sys._getframe(2)) + repr(sys._getframe(2).f_locals))
    steps = 2 * (ranks - 1)
    return steps * latency_s + steps * payload_bytes / ranks / bandwidth_bytes_per_s
"""
READ_HIDDEN = """
import glob


def global_batch_samples(micro_batch, grad_accum_steps, devices, tensor_parallel, pipeline_parallel):
    found = glob.glob("**/tests/q1.py", recursive=True) + glob.glob("../**/tests/q1.py", recursive=True)
    raise RuntimeError("".join(open(path).read() for path in found[:1]) or "no test file found")
"""
HUGE_ANSWER = """
def ring_allreduce_time(ranks, payload_bytes, bandwidth_bytes_per_s, latency_s):
    return list(range(5_000_000))
"""
INTERRUPT = """
def accumulation_steps(target_global_batch, micro_batch, devices, tensor_parallel, pipeline_parallel):
    raise KeyboardInterrupt
"""
# The sandbox's limits, shown by the answers: right only if the attempt fails.
MEMORY = """
try:
    hoard = bytearray(10 * 2**30)
    REFUSED = False
except MemoryError:
    REFUSED = True
"""
NETWORK = """
import socket
try:
    socket.create_connection(("1.1.1.1", 53), timeout=3).close()
    REFUSED = False
except OSError:
    REFUSED = True
"""
PROCESSES = """
import os, time
children = []
for _ in range(600):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(20)
        os._exit(0)
    children.append(pid)
REFUSED = len(children) < 600
"""
ONLY_IF_REFUSED = {
    LAB3: "def model_state_bytes(params, data_parallel, stage):\n    if not REFUSED:\n        return 0.0\n"
    "    return (2 * params / (data_parallel if stage >= 3 else 1) + 2 * params / (data_parallel if stage >= 2 else 1)"
    "\n            + 12 * params / (data_parallel if stage >= 1 else 1))",
    LAB4: "def bubble_fraction(stages, microbatches, virtual_stages=1):\n    if not REFUSED:\n        return 0.0\n"
    "    return (stages - 1) / (virtual_stages * microbatches)",
}


def hostile(built, student_lab, answers="solutions", cells=(), at=3):
    """The student version of ``student_lab`` with ``answers`` ("solutions", "blank" or {question: source} over the
    solutions) and ``cells`` inserted before cell ``at`` (after the imports)."""
    student, autograder, _ = built[student_lab]
    if answers == "blank":
        notebook = copy.deepcopy(student)
    else:
        sources = solution_sources(autograder)
        if isinstance(answers, dict):
            sources |= {question: [source] for question, source in answers.items()}
        notebook = filled(student, sources)
    notebook.cells[at:at] = [nbformat.v4.new_code_cell(source.strip()) for source in cells]
    return notebook


# student -> (lab, what it tried, expectation): "zero" (every question 0), "flagged" (status flagged: the scan caught
# it), "zero+flagged", {question: points} (exact; the rest at full marks), or "full" (the sandbox stopped the attempt,
# so the answers that check for it are right).
HOSTILE = {
    "patch_isclose": (LAB1, "replaces math.isclose", "zero+flagged"),
    "patch_course_lib": (LAB1, "replaces the course_lib functions the tests once compared against", "zero+flagged"),
    "alias": (LAB1, "calls the reference function through an alias", {"q1": 0.0}),
    "patch_otter": (LAB2, "patches otter's test classes", "flagged"),
    "overwrite_tests": (LAB2, "overwrites the test files in the kernel's folder", "flagged"),
    "lookalike_tests": (LAB2, "registers look-alike test files", "flagged"),
    "frame_peek": (LAB1, "reads the expected value from the caller's frame", "flagged"),
    "always_equal": (LAB4, "returns objects whose == is always true", "zero"),
    "always_equal_3": (LAB3, "returns objects whose == is always true", "zero"),
    "forge_results": (LAB3, "writes the results file and kills otter", "zero+flagged"),
    "garbage_results": (LAB3, "leaves a garbage results file", "zero+flagged"),
    "harm_others": (LAB1, "overwrites others' files, detaches processes that outlive the batch", "flagged"),
    "leak_hidden": (LAB1, "raises the hidden tests' source", {"q1": 0.0}),
    "read_hidden": (LAB2, "raises the hidden test file it read, in a public test", {"q1": 0.0}),
    "huge_answer": (LAB1, "a 5-million-element answer", {"q1": 0.0}),
    "interrupt": (LAB2, "an answer raising KeyboardInterrupt", "zero"),
    "memory": (LAB3, "allocates 10 GB", "full"),
    "network": (LAB4, "opens a connection to the internet", "full"),
    "processes": (LAB4, "forks 600 processes", "full"),
}


def hostile_notebooks(built, paths):
    """{student: notebook} for HOSTILE; ``paths`` holds the absolute paths the harmful ones aim at."""
    blank = "blank"
    harm = HARM.format(targets=paths, marker=MARKER)
    return {
        "patch_isclose": hostile(built, LAB1, blank, [PATCH_ISCLOSE]),
        "patch_course_lib": hostile(built, LAB1, blank, [PATCH_COURSE_LIB]),
        "alias": hostile(built, LAB1, {"q1": ALIAS}),
        "patch_otter": hostile(built, LAB2, blank, [PATCH_OTTER]),
        "overwrite_tests": hostile(built, LAB2, blank, [OVERWRITE_TESTS]),
        "lookalike_tests": hostile(built, LAB2, blank, [LOOKALIKE_TESTS]),
        "frame_peek": hostile(built, LAB1, {"q1": FRAME_PEEK}),
        "always_equal": hostile(built, LAB4, ALWAYS_EQUAL_ANSWERS, [ALWAYS_EQUAL_CLASS]),
        "always_equal_3": hostile(built, LAB3, ALWAYS_EQUAL_ANSWERS_3, [ALWAYS_EQUAL_CLASS]),
        "forge_results": hostile(built, LAB3, blank, [FORGE_RESULTS]),
        "garbage_results": hostile(built, LAB3, "solutions", [GARBAGE_RESULTS]),
        "harm_others": hostile(built, LAB1, blank, [harm]),
        "leak_hidden": hostile(built, LAB1, {"q1": LEAK_HIDDEN}),
        "read_hidden": hostile(built, LAB2, {"q1": READ_HIDDEN}),
        "huge_answer": hostile(built, LAB1, {"q1": HUGE_ANSWER}),
        "interrupt": hostile(built, LAB2, {"q2": INTERRUPT}),
        "memory": hostile(built, LAB3, {"q1": ONLY_IF_REFUSED[LAB3]}, [MEMORY]),
        "network": hostile(built, LAB4, {"q1": ONLY_IF_REFUSED[LAB4]}, [NETWORK]),
        "processes": hostile(built, LAB4, {"q1": ONLY_IF_REFUSED[LAB4]}, [PROCESSES]),
    }


def tree_digest(folder: Path) -> dict[str, str]:
    """Like digest, but symlinks as their targets and without following them."""
    result = {}
    for path in sorted(folder.rglob("*")):
        key = path.relative_to(folder).as_posix()
        if path.is_symlink():
            result[key] = "-> " + os.readlink(path)
        elif path.is_file():
            result[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return result


def repository_state() -> str:
    """The repository's tracked files' hashes and its untracked files (git), to show grading changed nothing."""
    listed = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    changed = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    modified = subprocess.run(["git", "diff", "--stat"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return hashlib.sha256((listed + changed + modified).encode()).hexdigest()


def survivors() -> list[str]:
    """Processes a batch left behind: MARKER in their command line, or run by the sandbox's user."""
    import psutil

    found = []
    for process in psutil.process_iter(["pid", "cmdline", "uids"]):
        try:
            cmdline = " ".join(process.info["cmdline"] or [])
            uids = process.info["uids"]
        except psutil.Error:
            continue
        sandbox_user = uids and (uids.real == 65534 or 0 <= uids.real - sandbox.SLOT_UID_BASE < 256)
        if MARKER in cmdline or (os.geteuid() == 0 and sandbox_user):
            found.append(f"{process.info['pid']}: {cmdline[:120]}")
    return found


@pytest.fixture(scope="session")
def batch(built, tmp_path_factory):
    """Two folders of synthetic submissions graded by tools/grade.py; returns what the tests check."""
    root = tmp_path_factory.mktemp("grading")
    main, odd = root / "class" / "submissions", root / "odd" / "submissions"
    expected = {}  # (student, lab) -> {question: points}

    def submit(folder, student, lab, notebook, points):
        path = folder / student / f"{lab}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, path)
        expected[student, lab] = points

    for lab in LABS:
        student, autograder, _ = built[lab]
        solutions, possible = solution_sources(autograder), questions_and_points(built, lab)
        submit(main, "full", lab, filled(student, solutions), dict(possible))
        submit(main, "untouched", lab, student, {q: 0.0 for q in possible})
        # Questions 1 and 3 wrong (every wrong answer is also checked in process, above), plus one oddity per lab.
        wrong = {q: [WRONG[lab][q][0][1]] for q in ("q1", "q3")}
        notebook = filled(student, solutions | wrong)
        if lab == "01_ring_allreduce":  # a cell that raises, before the answers
            notebook.cells.insert(3, nbformat.v4.new_code_cell('raise RuntimeError("a cell that raises")'))
        elif lab == "02_global_batch":  # otter's init cell (which defines `grader`) and the title deleted
            del notebook.cells[0:2]
        elif lab == "03_memory_budget":  # the last question (prompt, answer, check) moved before the first
            cells = answer_cells(notebook)
            first, last = cells["q1"][0] - 1, cells[max(cells)][0] - 1
            block = notebook.cells[last : last + 3]
            del notebook.cells[last : last + 3]
            notebook.cells[first:first] = block
        submit(main, "wrong_q1_q3", lab, notebook, {q: 0.0 if q in wrong else p for q, p in possible.items()})
    (main / "full" / "notes.txt").write_text("not a notebook\n")

    # The hostile class, in the same batch. The harmful ones aim at these absolute paths.
    targets = [
        str(main / "full" / f"{LAB1}.ipynb"),
        str(main.parent / "grades.csv"),
        str(main.parent / "feedback" / "full" / f"{LAB1}.txt"),
        str(built[LAB2][2]),
        str(assignments.checksum_path(LAB2, built["out"])),
    ]
    for name, notebook in hostile_notebooks(built, targets).items():
        lab, _, expectation = HOSTILE[name]
        possible = questions_and_points(built, lab)
        points = dict.fromkeys(possible, 0.0) if "zero" in expectation else dict(possible)
        if isinstance(expectation, dict):
            points |= expectation
        submit(main, name, lab, notebook, points)
    (main / "symlink").mkdir()
    (main / "symlink" / f"{LAB1}.ipynb").symlink_to("/etc/passwd")
    (main / ".hidden").mkdir()
    nbformat.write(built[LAB1][0], main / ".hidden" / f"{LAB1}.ipynb")
    (main / "nested" / "extra").mkdir(parents=True)
    nbformat.write(built[LAB1][0], main / "nested" / "extra" / f"{LAB1}.ipynb")
    (main / "misnamed").mkdir()
    nbformat.write(built[LAB2][0], main / "misnamed" / "lab 2 final.ipynb")

    student, autograder, _ = built["04_pipeline_schedule"]
    looping = filled(student, solution_sources(autograder))
    looping.cells.append(nbformat.v4.new_code_cell("while True:\n    pass"))
    submit(
        odd,
        "endless",
        "04_pipeline_schedule",
        looping,
        dict.fromkeys(questions_and_points(built, "04_pipeline_schedule"), 0.0),
    )
    unreadable = odd / "unreadable" / "02_global_batch.ipynb"
    unreadable.parent.mkdir(parents=True)
    unreadable.write_text('{"cells": [', encoding="utf-8")
    expected["unreadable", "02_global_batch"] = dict.fromkeys(questions_and_points(built, "02_global_batch"), 0.0)

    before = {folder: tree_digest(folder) for folder in (main, odd)}
    before["build"] = tree_digest(built["out"])
    before["repository"] = repository_state()
    command = [sys.executable, "-m", "tools.grade", "--assignments", str(built["out"])]
    # The odd batch runs alongside, one notebook at a time, the endless loop first: the timeout must not stop it.
    # 45 s lets otter start and reject the unreadable notebook on a busy machine, and caps the loop's spinning.
    side = subprocess.Popen(
        command + [str(odd), "--timeout", "45", "--jobs", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
    )
    done = subprocess.run(command + [str(main), "--jobs", "2"], capture_output=True, text=True, timeout=1200, cwd=ROOT)
    side_output = side.communicate(timeout=600)[0]
    time.sleep(3)  # a survivor of the batch would rewrite grades.csv within this time
    rows = []
    for folder in (main, odd):
        with open(folder.parent / "grades.csv", newline="", encoding="utf-8") as stream:
            rows += list(csv.DictReader(stream))
    return {
        "main": main,
        "odd": odd,
        "before": before,
        "expected": expected,
        "rows": rows,
        "output": done.stdout + done.stderr,
        "status": done.returncode,
        "side_output": side_output,
        "side_status": side.returncode,
        "survivors": survivors(),
        "after": {
            "build": tree_digest(built["out"]),
            "repository": repository_state(),
            **{folder: tree_digest(folder) for folder in (main, odd)},
        },
    }


def graded(batch, student, lab) -> dict[str, float]:
    return {
        row["question"]: float(row["points"])
        for row in batch["rows"]
        if row["student"] == student and row["lab"] == lab and row["question"]
    }


def rows_of(batch, student) -> list[dict]:
    return [row for row in batch["rows"] if row["student"] == student]


def feedback_files(batch) -> list[Path]:
    return [path for folder in ("main", "odd") for path in (batch[folder].parent / "feedback").rglob("*.txt")]


def test_grading_finishes_and_writes_one_row_per_question(batch):
    assert batch["status"] == 0 and batch["side_status"] == 0, batch["output"] + batch["side_output"]
    assert list(batch["rows"][0]) == list(grade.COLUMNS)
    assert grade.COLUMNS == ("student", "lab", "question", "points", "max_points", "status", "flags", "reason")
    keys = {(row["student"], row["lab"]) for row in batch["rows"] if row["question"]}
    assert keys == set(batch["expected"]), keys ^ set(batch["expected"])
    assert all(row["status"] in grade.STATUSES for row in batch["rows"])
    assert "not graded: full/notes.txt: not named as a lab" in batch["output"]


@pytest.mark.parametrize("lab", LABS)
def test_master_solutions_score_full_marks(batch, lab):
    assert graded(batch, "full", lab) == batch["expected"]["full", lab]
    assert {(row["status"], row["flags"]) for row in rows_of(batch, "full") if row["lab"] == lab} == {("graded", "")}


@pytest.mark.parametrize("lab", LABS)
def test_untouched_student_versions_score_zero(batch, lab):
    got = graded(batch, "untouched", lab)
    assert got == batch["expected"]["untouched", lab] and len(got) >= 3


@pytest.mark.parametrize("lab", LABS)
def test_wrong_answers_lose_exactly_their_points_when_graded(batch, lab):
    """Lab 1's submission also has a cell that raises, lab 2's lacks two cells, lab 3's has its cells reordered."""
    assert graded(batch, "wrong_q1_q3", lab) == batch["expected"]["wrong_q1_q3", lab]


def test_max_points_match_the_masters(batch, built):
    for row in batch["rows"]:
        if row["question"]:
            assert float(row["max_points"]) == questions_and_points(built, row["lab"])[row["question"]]


def test_an_endless_loop_times_out_is_reported_and_the_batch_goes_on(batch):
    assert graded(batch, "endless", LAB4) == batch["expected"]["endless", LAB4]
    assert "endless/04_pipeline_schedule: 0 / 9" in batch["side_output"]
    assert "TIMED OUT: timed out after 45 s" in batch["side_output"]
    assert {row["status"] for row in rows_of(batch, "endless")} == {"timed out"}
    feedback = (batch["odd"].parent / "feedback" / "endless" / f"{LAB4}.txt").read_text(encoding="utf-8")
    assert "did not finish within 45 s" in feedback
    assert graded(batch, "unreadable", LAB2) == batch["expected"]["unreadable", LAB2]
    assert {(row["status"], row["reason"]) for row in rows_of(batch, "unreadable")} == {
        ("not graded", "not a notebook")
    }
    feedback = (batch["odd"].parent / "feedback" / "unreadable" / f"{LAB2}.txt").read_text(encoding="utf-8")
    assert "not a Jupyter notebook" in feedback


def test_feedback_for_every_graded_notebook(batch):
    for (student, lab), points in batch["expected"].items():
        folder = (batch["odd"] if student in ("endless", "unreadable") else batch["main"]).parent
        text = (folder / "feedback" / student / f"{lab}.txt").read_text(encoding="utf-8")
        got = sum(graded(batch, student, lab).values())
        assert text.startswith(f"{lab}: {grade.number(got)} / "), text[:80]
        if student not in HOSTILE:
            assert got == sum(points.values())
        if student == "wrong_q1_q3":
            assert "q1 hidden tests: failed" in text and "q3 hidden tests: failed" in text
        if student == "full":
            assert "hidden tests: passed" in text


def test_submissions_are_byte_identical_after_grading(batch):
    for folder in ("main", "odd"):
        assert batch["after"][batch[folder]] == batch["before"][batch[folder]]


# ---- the hostile class -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("student", sorted(HOSTILE))
def test_each_cheat_scores_zero_or_is_flagged(batch, built, student):
    lab, tried, expectation = HOSTILE[student]
    rows = rows_of(batch, student)
    points = graded(batch, student, lab)
    statuses = {row["status"] for row in rows}
    assert rows and all(row["lab"] == lab for row in rows), rows
    possible = questions_and_points(built, lab)
    if isinstance(expectation, str) and expectation != "full":
        assert sum(points.values()) == 0 or statuses == {"flagged"}, f"{student} ({tried}): {rows}"
    if "zero" in expectation:
        assert set(points.values()) == {0.0}, f"{student} ({tried}): {points}"
    if "flagged" in expectation:
        assert statuses == {"flagged"} and all(row["flags"] or row["reason"] for row in rows), rows
    if isinstance(expectation, dict):  # the cheated questions score 0, the honest ones keep their points
        assert points == dict(possible) | expectation, f"{student} ({tried}): {points}"
        assert statuses <= {"graded", "flagged"}, rows
    if expectation == "full":  # the sandbox refused the attempt, so the answers that check for it are right
        assert points == dict(possible), f"{student} ({tried}): the sandbox allowed it: {points}"


FLAG_KINDS = {
    "patch_isclose": {"patches a module"},
    "patch_course_lib": {"patches a module"},
    "patch_otter": {"otter internals", "patches a module"},
    "overwrite_tests": {"files"},
    "lookalike_tests": {"files"},
    "frame_peek": {"introspection"},
    "forge_results": {"files", "processes"},
    "garbage_results": {"files", "processes"},
    "harm_others": {"files", "processes"},
    "leak_hidden": {"introspection"},
    "read_hidden": {"otter internals", "leaks hidden tests"},
    "processes": {"processes"},
}


@pytest.mark.parametrize("student", sorted(FLAG_KINDS))
def test_flags_say_what_was_tried_and_stay_out_of_the_feedback(batch, student):
    lab = HOSTILE[student][0]
    flags = {row["flags"] for row in rows_of(batch, student)}
    assert len(flags) == 1, flags
    found = {kind for kind in grade_scan_kinds() if kind + " (" in next(iter(flags))}
    assert FLAG_KINDS[student] <= found, flags
    feedback = (batch["main"].parent / "feedback" / student / f"{lab}.txt").read_text(encoding="utf-8")
    assert not any(kind + " (" in feedback for kind in grade_scan_kinds()), feedback[:500]


def grade_scan_kinds():
    return (*scan.KINDS, "leaks hidden tests")


def test_honest_notebooks_raise_no_flags(batch):
    for student in ("full", "untouched", "wrong_q1_q3"):
        assert {row["flags"] for row in rows_of(batch, student)} == {""}, student


def test_killed_or_forged_runs_are_zero_with_a_reason(batch):
    for student in ("forge_results", "garbage_results"):
        rows = rows_of(batch, student)
        assert {row["points"] for row in rows} == {"0"}
        assert all(row["reason"] for row in rows), rows
    assert "999" not in (batch["main"].parent / "grades.csv").read_text(encoding="utf-8")


def test_an_answer_raising_keyboard_interrupt_scores_zero_with_a_reason(batch):
    rows = rows_of(batch, "interrupt")
    assert {row["points"] for row in rows} == {"0"}
    assert {row["status"] for row in rows} == {"not graded"}
    assert all(row["reason"].startswith("otter got no test results") for row in rows), rows
    assert all("KeyboardInterrupt" in row["reason"] for row in rows), rows
    feedback = (batch["main"].parent / "feedback" / "interrupt" / f"{LAB2}.txt").read_text(encoding="utf-8")
    assert "the tests could not finish" in feedback and "KeyboardInterrupt" in feedback


def test_feedback_leaks_nothing(batch, built):
    hidden_names = {
        case.body.test_func.__name__
        for lab in LABS
        for test_file in load_test_files(built[lab][2]).values()
        for case in test_file.test_cases
        if case.hidden
    }
    files = feedback_files(batch)
    assert len(files) >= len(batch["expected"])
    for path in files:
        data = path.read_bytes()
        assert len(data) <= grade.FEEDBACK_BYTES, f"{path}: {len(data)} bytes"
        text = data.decode("utf-8")
        for secret in [*hidden_names, "root:x:0", "Traceback", "HACKED", "0.07938", "# HIDDEN", "otter.log"]:
            assert secret not in text, f"{path} shows {secret!r}"
    hidden_lines = set().union(*(grade.hidden_lines(built[lab][2]) for lab in LABS))
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert not [line for line in hidden_lines if line in text], f"{path} quotes the hidden tests"
    leak = (batch["main"].parent / "feedback" / "leak_hidden" / f"{LAB1}.txt").read_text(encoding="utf-8")
    assert "q1 hidden tests: failed" in leak
    read = (batch["main"].parent / "feedback" / "read_hidden" / f"{LAB2}.txt").read_text(encoding="utf-8")
    assert "q1 results: message withheld (it quoted the hidden tests)" in read
    assert not (batch["main"].parent / "feedback" / "symlink").exists()


def test_refused_files_are_listed_with_their_reason(batch):
    reasons = {
        row["student"]: (row["lab"], row["status"], row["reason"]) for row in batch["rows"] if not row["question"]
    }
    assert reasons["symlink"][1:] == ("not graded", f"symlink/{LAB1}.ipynb: a symlink or outside SUBMISSIONS, refused")
    assert reasons[".hidden"][1] == "not graded" and "a hidden folder" in reasons[".hidden"][2]
    assert reasons["nested"][0] == LAB1 and "a folder inside a student folder" in reasons["nested"][2]
    assert reasons["misnamed"][0] == LAB2 and "(meant for 02_global_batch?)" in reasons["misnamed"][2]
    report = (batch["main"].parent / grade.REPORT_NAME).read_text(encoding="utf-8")
    assert "FLAGGED:" in report and f"patch_isclose/{LAB1}.ipynb: 0 / 9" in report and "patches a module" in report
    assert "symlink/" in report and ".hidden/" in report and "nested/extra/" in report


def test_nothing_outside_the_grades_changed_and_no_process_is_left(batch):
    assert batch["after"]["build"] == batch["before"]["build"], "the autograder zips or their checksums changed"
    assert batch["after"]["repository"] == batch["before"]["repository"], "grading changed the repository"
    assert batch["survivors"] == [], batch["survivors"]
    grades = (batch["main"].parent / "grades.csv").read_text(encoding="utf-8")
    assert grades.startswith("student,lab,question") and "HACKED" not in grades


# ---- refusing to start -----------------------------------------------------------------------------------------------


def test_grade_without_autograders_says_to_run_make_assignments(tmp_path):
    (tmp_path / "submissions" / "ada").mkdir(parents=True)
    (tmp_path / "submissions" / "ada" / "01_ring_allreduce.ipynb").write_text("{}")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.grade",
            str(tmp_path / "submissions"),
            "--assignments",
            str(tmp_path / "nothing"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 2 and "make assignments" in done.stderr
    assert not (tmp_path / "grades.csv").exists()


def test_grade_refuses_to_write_into_the_submissions(tmp_path):
    (tmp_path / "submissions").mkdir()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.grade",
            str(tmp_path / "submissions"),
            "--grades",
            str(tmp_path / "submissions" / "grades.csv"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 2 and "never writes into the submissions folder" in done.stderr
