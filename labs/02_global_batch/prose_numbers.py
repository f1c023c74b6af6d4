"""The numbers in lab 2's prose that no output prints (CHECKED: what each is, what checks it) and check(), which
works out the explore answer by moving the lab's controls; tests/test_lesson_numbers.py runs it."""

CHECKED = {
    "512": "the explore answer's devices at t = 8, and question 3's GPUs, given: check()",
    "2048": "the explore answer's devices at t = 8, p = 4: check()",
    "4,194,304": "question 3's target tokens per step, given",
}


def check():
    from course_lib.widgets import global_batch_lab

    def run(**settings):  # the lab with its controls set (defaults: b = 8, N_acc = 16, d = 64, t = p = 1, 2048 tokens)
        return global_batch_lab(**settings).result

    # the explore question: t = 8, then p = 4 on top: more devices, the same examples
    for settings, devices in (({"tensor_parallel": 8}, 512), ({"tensor_parallel": 8, "pipeline_parallel": 4}, 2048)):
        result = run(**settings)
        assert (result["devices"], result["global_batch"], result["examples_per_replica_per_step"]) == (
            devices,
            8192,
            128,
        )
        assert result["devices_per_replica"] == devices // 64
