"""The numbers in lab 2's prose that no output prints (CHECKED: what each is, what checks it) and check(), which
works out the explore answers by moving the lab's controls; tests/test_lesson_numbers.py runs it."""

from course_lib import units

CHECKED = {
    "32": "explore 3's data parallel d, a setting, and explore 5's 32 GPUs",
    "4096": "explore 4's sequence length, quoted from the Ultra-Scale Playbook, a setting",
    "512": "explore 4's replicas, a setting, and question 3's GPUs, given",
    "1024": "explore 4: the examples per step, 4 × 2 × 128 = 1 × 2 × 512: check()",
    "4.19": "explore 4: 1024 × 4096 tokens in millions: check()",
    "4,194,304": "explore 4: 1024 × 4096 tokens, and question 3's target, given: check()",
    "256": "explore 5: the examples per step of both layouts, 4 × 8 × 8 and 1 × 64 × 4: check()",
}


def check():
    from course_lib.widgets import global_batch_lab

    def run(**settings):  # the lab with its controls set (defaults: b = 8, N_acc = 16, d = 64, t = p = 1, 2048 tokens)
        return global_batch_lab(**settings).result

    # 4: 4096-token sequences, micro-batch 2: N_acc = 4 with 128 replicas and 1 with 512
    for replicas, accumulation in ((128, 4), (512, 1)):
        result = run(seq_len=4096, micro_batch=2, data_parallel=replicas, grad_accum_steps=accumulation)
        assert result["global_batch"] == 1024 and result["tokens_per_step"] == 4_194_304
    assert units.format_count(4_194_304) == "4.19 million"
    # 5: the Playbook's two layouts of 32 GPUs
    for layout in (
        {"data_parallel": 8, "tensor_parallel": 4, "pipeline_parallel": 1, "micro_batch": 4, "grad_accum_steps": 8},
        {"data_parallel": 4, "tensor_parallel": 1, "pipeline_parallel": 8, "micro_batch": 1, "grad_accum_steps": 64},
    ):
        result = run(**layout)
        assert (result["devices"], result["global_batch"]) == (32, 256)
