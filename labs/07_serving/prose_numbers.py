"""The quantities in lab 7's prose that no output prints (CHECKED: what each is, what checks it) and check(), which
works out the explore answers by moving the lab's controls; tests/test_lesson_numbers.py runs it."""

from course_lib import hardware, units

CHECKED = {
    "80 GB": "the H100's HBM: check()",
    "5 µs": "InfiniBand's α, hardware.INFINIBAND_NDR_8X: check()",
    "291 ms": "explore 1",
    "85.8 ms": "explore 1",
    "5.19 ms": "explore 1",
    "2.24 ms": "explore 1",
    "3.15 s": "explore 1",
    "8.33 ms": "explore 1",
    "9.08 ms": "explore 2",
    "14 ms": "explore 2",
    "18.9 ms": "explore 2",
    "46.7 ms": "explore 2",
    "16 ms": "explore 2",
    "4.72 MB": "explore 3",
    "328 kB": "explore 3",
    "11.4 ms": "explore 4",
    "7.45 ms": "explore 2 and 4",
    "6.52 ms": "explore 4",
    "8.45 ms": "explore 4",
    "14.2 ms": "explore 4",
    "1.37 ms": "explore 4",
    "7.04 ms": "explore 4",
    "7.65 ms": "explore 5",
    "344 GB": "explore 6",
    "43 GB": "explore 6",
    "93.1 s": "explore 6",
    "20.4 ms": "explore 6",
    "12.8 ms": "explore 6",
}


def check():
    from course_lib.widgets import serving_lab

    def serve(**settings):  # the lab at its defaults, then the controls moved as the question says
        lab = serving_lab()
        for name, value in settings.items():
            lab.controls[name].value = value
        return lab.result

    def ms(r, key):
        return units.format_time(r[key])

    default = serve()
    assert units.format_bytes(default["capacity_bytes"]) == "80 GB"
    assert units.format_time(hardware.INFINIBAND_NDR_8X.latency_s) == "5 µs"
    # 1: prefill against decode, then 8192-token prompts
    assert (ms(default, "prefill_compute_s"), ms(default, "prefill_all_reduce_s")) == ("291 ms", "85.8 ms")
    assert (ms(default, "weight_read_s"), ms(default, "all_reduce_latency_s")) == ("5.19 ms", "2.24 ms")
    long_prompt = serve(prompt_len=8192)
    assert (ms(long_prompt, "time_to_first_token_s"), ms(long_prompt, "time_per_output_token_s")) == (
        "3.15 s",
        "8.33 ms",
    )
    # 2: batching
    assert ms(serve(sequences=64), "time_per_output_token_s") == "9.08 ms"
    assert ms(serve(sequences=256), "time_per_output_token_s") == "14 ms" and serve(sequences=256)["bound"] == "memory"
    at_384 = serve(sequences=384)
    assert ms(at_384, "time_per_output_token_s") == "18.9 ms" and at_384["bound"] == "compute"
    at_1024 = serve(sequences=1024)
    assert (ms(at_1024, "time_per_output_token_s"), ms(at_1024, "kv_read_s")) == ("46.7 ms", "16 ms")
    # 3: grouped-query attention against GPT-3's full multi-head cache
    gpt3 = serve(model="GPT-3 175B")
    assert units.format_bytes(gpt3["kv_cache_bytes_per_sequence_token"]) == "4.72 MB"
    assert units.format_bytes(default["kv_cache_bytes_per_sequence_token"]) == "328 kB"
    # 4: the tensor-parallel degree at batch 1
    times = {t: ms(serve(sequences=1, tensor_parallel=t), "time_per_output_token_s") for t in (4, 8, 16, 32, 64)}
    assert times == {4: "11.4 ms", 8: "7.45 ms", 16: "6.52 ms", 32: "8.45 ms", 64: "14.2 ms"}
    for t, weights, latency in ((16, "2.64 ms", "3.84 ms"), (32, "1.37 ms", "7.04 ms")):  # beyond the optimum
        r = serve(sequences=1, tensor_parallel=t)
        assert (ms(r, "weight_read_s"), ms(r, "all_reduce_latency_s")) == (weights, latency)
    # 5: a pipeline of 4 stages
    assert ms(serve(pipeline_parallel=4), "time_per_output_token_s") == "7.65 ms"
    # the answers' unitless counts: tokens/s per GPU, the ridge point and the sequences that fit
    rates = {b: units.format_count(serve(sequences=b)["tokens_per_s_per_device"]) for b in (1, 64, 384, 1024)}
    assert rates == {1: "16.8", 64: "881", 384: "2540", 1024: "2740"}, rates
    assert round(default["compute_bound_sequences"]) == 295 and default["max_sequences"] == 1187
    assert gpt3["max_sequences"] == 48 and serve(prompt_len=131072)["max_sequences"] == 11
    assert units.format_count(serve(pipeline_parallel=4)["tokens_per_s_per_device"]) == "32.7"
    # 6: 131,072-token prompts
    longest = serve(prompt_len=131072)
    assert units.format_bytes(longest["kv_cache_bytes"]) == "344 GB"
    assert units.format_bytes(longest["kv_cache_bytes_per_device"]) == "43 GB"
    assert (ms(longest, "time_to_first_token_s"), ms(longest, "time_per_output_token_s")) == ("93.1 s", "20.4 ms")
    assert (ms(longest, "kv_read_s"), ms(longest, "weight_read_s")) == ("12.8 ms", "5.19 ms")
