"""Where lab 5's graded questions are taught: the names and facts each needs, with the lesson (or "intro") that
teaches it; tests/test_taught.py explains the format and checks it."""

TAUGHT = {
    "q1": {
        "model.hidden": "03_parallelism",
        "model.layers": "03_parallelism",
        "model.seq_len": "03_parallelism",
        "plan.recompute": "03_parallelism",
        "plan.sequence_parallel": "03_parallelism",
        "plan.sizes": "intro",
        "With sequence parallelism each all-reduce becomes a reduce-scatter plus an all-gather": "03_parallelism",
        "full recomputation repeats the forward tensor-parallel collectives": "04_communication_budget",
    },
    "q2": {"tensor-parallel ranks are adjacent": "04_communication_budget"},
    "q3": {
        "budget.transfer_time_per_call": "04_communication_budget",
        "cluster.accelerator.peak": "04_communication_budget",
        "compute.transformer_flops_per_iteration": "01_mac",
        "compute.transformer_forward_flops": "01_mac",
        "model.hidden": "03_parallelism",
        "model.layers": "03_parallelism",
        "model.seq_len": "03_parallelism",
        "model.vocab": "01_mac",
        "parallelism.step_transfers": "04_communication_budget",
        "plan.micro_batch": "03_parallelism",
        "plan.pipeline_parallel": "03_parallelism",
        "plan.recompute": "03_parallelism",
        "plan.tensor_parallel": "03_parallelism",
        "x.axis": "04_communication_budget",
        "x.tensor": "03_parallelism",
        "window: one micro-batch's backward": "04_communication_budget",
        "the last micro-batch's backward pass": "04_communication_budget",
    },
    "q4": {
        "budget.transfer_time_per_call": "04_communication_budget",
        "parallelism.boundary_tensors": "03_parallelism",
        "transfer.calls_per_step": "03_parallelism",
        "transfer.phase": "03_parallelism",
        "tensor-parallel collectives sit on the critical path": "04_communication_budget",
    },
}
