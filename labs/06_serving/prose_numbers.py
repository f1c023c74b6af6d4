"""The quantities in lab 6's prose that no output prints (CHECKED: what each is, what checks it) and check(), which
works out the explore answer by moving the lab's controls; tests/test_lesson_numbers.py runs it."""

import inspect

from course_lib import serving, units

CHECKED = {
    "1 GB": "the definition of a decimal gigabyte in the lab's conventions, 10^9 bytes",
    "16": "the paged KV cache's block of 16 tokens: check_sweep()",
    "8192": "the explore answer: vLLM's token budget per iteration (8 × 1024): check_sweep()",
}


def check():
    check_sweep()


def check_sweep():
    """The explore answer on the concurrency sweep, by moving its controls."""
    from course_lib.widgets import concurrency_sweep_lab

    def sweep(**settings):
        lab = concurrency_sweep_lab()
        for name, value in settings.items():
            lab.controls[name].value = value
        return lab.typed_result

    def at(r, concurrency):
        index = list(r.concurrencies).index(concurrency)
        return (
            units.format_time(r.median_ttft_s[index]),
            units.format_time(r.median_itl_s[index]),
            units.format_count(r.output_tokens_per_s[index]),
        )

    # the defaults, 1 to 512 requests
    default = sweep()
    assert at(default, 1) == ("48.8 ms", "9.64 ms", "102") and at(default, 512) == ("17.4 s", "65.5 ms", "3830")
    assert at(default, 8)[0] == "348 ms" and all(0.9 < default.median_ttft_s[i] / 0.348 < 1.02 for i in range(3, 9))
    assert default.knee_concurrency == 256 and at(default, 256)[2] == "3820"
    assert units.format_percent(default.knee_fraction, digits=2) == "90 %"
    assert default.requests_in_cache == 1122 and default.block_size_tokens == 16
    budget = inspect.signature(serving.simulate_engine).parameters["max_num_batched_tokens"].default
    assert budget == 8192 == 8 * 1024 and serving.ENGINES["vllm"].max_num_seqs == 256
