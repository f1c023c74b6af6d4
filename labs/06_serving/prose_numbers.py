"""The quantities in lab 6's prose that no output prints (CHECKED: what each is, what checks it) and check(), which
works out the explore answers by moving the lab's controls; tests/test_lesson_numbers.py runs it."""

import dataclasses
import warnings

from course_lib import hardware, measure, nccl, serving, units
from course_lib.parallelism import LLAMA3_70B

CHECKED = {
    "80 GB": "the H100's HBM: check()",
    "5 µs": "NCCL's network step of the tree with LL (and InfiniBand's α, hardware.INFINIBAND_NDR_8X): check()",
    "15 µs": "explore 1: one decode all-reduce, NCCL's ring with LL on 8 GPUs",
    "4.8 µs": "explore 1: the launch floor, hardware.LAUNCH_FLOOR_S",
    "359 ms": "explore 1",
    "291 ms": "explore 1",
    "68.4 ms": "explore 1",
    "8.74 ms": "explore 1 and 5",
    "5.19 ms": "explore 1",
    "3.17 ms": "explore 1",
    "2.99 s": "explore 1",
    "9.44 ms": "explore 1",
    "8.4 ms": "explore 2 and 4",
    "11.4 ms": "explore 2",
    "9 ms": "explore 2",
    "4.01 ms": "explore 2",
    "19.8 ms": "explore 2",
    "64.7 ms": "explore 2",
    "16 ms": "explore 2",
    "4.72 MB": "explore 3",
    "328 kB": "explore 3",
    "12.8 ms": "explore 4 (t = 4) and 6 (the KV reads)",
    "7.65 ms": "explore 4",
    "8.15 ms": "explore 4",
    "9.12 ms": "explore 4",
    "1.37 ms": "explore 4",
    "6.4 ms": "explore 4",
    "8.35 ms": "explore 4: t = 16 on the cluster calibrated to the logs",
    "8.44 ms": "explore 4: t = 8 on the cluster calibrated to the logs",
    "19.8 µs": "explore 4: 37.2 − 17.5 µs",
    "3.16 ms": "explore 4: 160 × 19.8 µs",
    "1 %": "explore 4: t = 16 against t = 8 on the calibrated cluster, 8.35 against 8.44 ms",
    "16 KiB": "explore 4: a decode all-reduce at b = 1 (2 bytes × 8192), the logs' row",
    "17.5 µs": "explore 4: the p5 log's 16 KiB all-reduce",
    "37.2 µs": "explore 4: the Nebius log's 16 KiB all-reduce",
    "8.77 ms": "explore 5",
    "344 GB": "explore 6",
    "43 GB": "explore 6",
    "90.5 s": "explore 6",
    "21.5 ms": "explore 6",
    "15.4 ms": "explore 8: the sweep's ITL at 64 requests with fp8 weights",
    "14.8 ms": "explore 8: the same with an fp8 KV cache too",
    "10.6 ms": "explore 9: the sweep's ITL at 8 requests with 32 output tokens",
    "88.1 ms": "explore 9: the same at 64 requests",
    "350 ms": "explore 9: the same at 256 requests",
    "1 GB": "the definition of a decimal gigabyte in the lab's conventions, 10^9 bytes",
    # bare numbers of the explore answers, each asserted by check() or check_sweep() below
    "8192": "explore 1's prompt, a control's setting; explore 7: vLLM's token budget per iteration (8 × 1024)",
    "8.3": "explore 1: 2.99 s over 359 ms, both asserted by check()",
    "160": "explore 1: 2 all-reduces per layer × Llama 3.1 70B's 80 layers",
    "96": "explore 3: GPT-3 175B's 96 heads (parallelism.GPT3_175B.heads)",
    "14.9": "explore 5: tokens/s per GPU at batch 1: check()",
    "699": "explore 5: tokens/s per GPU at batch 64: check()",
    "1620": "explore 5: tokens/s per GPU at batch 256: check()",
    "147.6": "explore 5: the ridge batch: check()",
    "148": "explore 5: the first compute-bound batch: check()",
    "1187": "explore 5: the sequences that fit: check()",
    "48": "explore 5: GPT-3 175B's sequences that fit: check()",
    "11": "explore 6: sequences of 131,072 tokens that fit: check()",
    "131,072": "explore 6's prompt length, a control's setting",
    "2.64": "explore 4: t = 16's weight reads in ms: check()",
    "28.5": "explore 5: tokens/s per GPU with p = 4: check()",
    "102,831": "explore 8: the KV blocks with fp8 weights: check_sweep()",
    "205,663": "explore 8: the KV blocks with fp8 weights and cache: check_sweep()",
    "2570": "explore 8: the requests the fp8 cache holds: check_sweep()",
    "5650": "explore 8: the most throughput with fp8 weights: check_sweep()",
    "5980": "explore 8: the most throughput with fp8 weights and cache: check_sweep()",
    "652": "explore 10: a sweep's throughput: check_sweep()",
    "708": "explore 10: a sweep's throughput: check_sweep()",
    "1420": "explore 10: the most throughput with int4 weights on an A100: check_sweep()",
}


def check():
    check_sweep()
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
    assert units.format_time(nccl.estimate("all_reduce", hardware.DGX_H100, 16, 2, 8, algorithm="tree").latency_s
                             - nccl.estimate("all_reduce", hardware.DGX_H100, 8, 1, 8, algorithm="tree").latency_s) \
        == "10 µs"  # one more level of the tree between nodes: two network steps of 5 µs  # fmt: skip
    # 1: prefill against decode, then 8192-token prompts
    assert (ms(default, "time_to_first_token_s"), ms(default, "prefill_compute_s")) == ("359 ms", "291 ms")
    assert ms(default, "prefill_all_reduce_s") == "68.4 ms" and ms(default, "time_per_output_token_s") == "8.74 ms"
    assert (ms(default, "weight_read_s"), ms(default, "all_reduce_latency_s")) == ("5.19 ms", "3.17 ms")
    assert units.format_time(hardware.LAUNCH_FLOOR_S) == "4.8 µs"
    one_call = nccl.estimate("all_reduce", hardware.DGX_H100, 8, 1, 2 * 8 * 8192)
    assert (one_call.algorithm, one_call.protocol, units.format_time(one_call.latency_s)) == ("ring", "LL", "15 µs")
    long_prompt = serve(prompt_len=8192)
    assert (ms(long_prompt, "time_to_first_token_s"), ms(long_prompt, "time_per_output_token_s")) == (
        "2.99 s",
        "9.44 ms",
    )
    # 2: batching
    assert ms(serve(sequences=1), "time_per_output_token_s") == "8.4 ms"
    assert ms(serve(sequences=64), "time_per_output_token_s") == "11.4 ms"
    assert serve(sequences=128)["bound"] == serve(sequences=192)["bound"] == "memory"  # the multiplies: 148 on
    at_192 = serve(sequences=192)
    assert at_192["matmul_compute_s"] > at_192["weight_read_s"]  # already compute-bound multiplies
    at_256 = serve(sequences=256)
    assert ms(at_256, "time_per_output_token_s") == "19.8 ms" and at_256["bound"] == "compute"
    assert (ms(at_256, "matmul_compute_s"), ms(at_256, "kv_read_s")) == ("9 ms", "4.01 ms")
    at_1024 = serve(sequences=1024)
    assert (ms(at_1024, "time_per_output_token_s"), ms(at_1024, "kv_read_s")) == ("64.7 ms", "16 ms")
    # 3: grouped-query attention against GPT-3's full multi-head cache
    gpt3 = serve(model="GPT-3 175B")
    assert units.format_bytes(gpt3["kv_cache_bytes_per_sequence_token"]) == "4.72 MB"
    assert units.format_bytes(default["kv_cache_bytes_per_sequence_token"]) == "328 kB"
    # 4: the tensor-parallel degree at batch 1
    times = {t: ms(serve(sequences=1, tensor_parallel=t), "time_per_output_token_s") for t in (4, 8, 16, 32, 64)}
    assert times == {4: "12.8 ms", 8: "8.4 ms", 16: "7.65 ms", 32: "8.15 ms", 64: "9.12 ms"}
    for t, weights, latency in ((16, "2.64 ms", "4.8 ms"), (32, "1.37 ms", "6.4 ms")):  # beyond the optimum
        r = serve(sequences=1, tensor_parallel=t)
        assert (ms(r, "weight_read_s"), ms(r, "all_reduce_latency_s")) == (weights, latency)
    # 4, continued: on a cluster calibrated to the p5 and Nebius logs (lesson 07, step 5), t = 16 and 8 within 1 %;
    # the logs themselves decide for t = 8
    logs = measure.DATA_DIR / "nccl_tests"
    p5 = measure.read_nccl_tests((logs / "aws_p5_1node_8xH100_nvlink_all_reduce.txt").read_text(), nodes=1)
    nebius = measure.read_nccl_tests((logs / "nebius_2x8xH100_ib_all_reduce.txt").read_text(), nodes=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", measure.CalibrationWarning)
        measured = dataclasses.replace(measure.calibrate_cluster(hardware.NEBIUS_H100_IB, [p5, nebius]), nodes=4)
    decode = {t: serving.decode_step(LLAMA3_70B, measured, t, 1, 1, 4096).time_per_output_token_s for t in (8, 16)}
    assert (units.format_time(decode[8]), units.format_time(decode[16])) == ("8.44 ms", "8.35 ms")
    assert units.format_percent(1 - decode[16] / decode[8], digits=1) == "1 %"
    assert units.format_time(p5.select(size_bytes=16384).rows[0].median_s) == "17.5 µs"
    assert units.format_time(nebius.select(size_bytes=16384).rows[0].median_s) == "37.2 µs"
    gap = nebius.select(size_bytes=16384).rows[0].median_s - p5.select(size_bytes=16384).rows[0].median_s
    assert units.format_time(gap) == "19.8 µs" and units.format_time(160 * gap) == "3.16 ms"
    assert 160 * gap > default["weight_read_s"] / 2  # t = 16 pays more than it saves
    # 5: a pipeline of 4 stages
    assert ms(serve(pipeline_parallel=4), "time_per_output_token_s") == "8.77 ms"
    # the answers' unitless counts: tokens/s per GPU, the ridge point and the sequences that fit
    rates = {b: units.format_count(serve(sequences=b)["tokens_per_s_per_device"]) for b in (1, 64, 256, 1024)}
    assert rates == {1: "14.9", 64: "699", 256: "1620", 1024: "1980"}, rates
    ridge = default["compute_bound_sequences"]  # the multiplies equal the weight reads at 147.6: from 148 on longer
    assert f"{ridge:.1f}" == "147.6" and int(ridge) + 1 == 148 and default["max_sequences"] == 1187
    assert gpt3["max_sequences"] == 48 and serve(prompt_len=131072)["max_sequences"] == 11
    assert units.format_count(default["tokens_per_s_per_device"]) == "114"
    assert units.format_count(serve(pipeline_parallel=4)["tokens_per_s_per_device"]) == "28.5"
    # 6: 131,072-token prompts
    longest = serve(prompt_len=131072)
    assert units.format_bytes(longest["kv_cache_bytes"]) == "344 GB"
    assert units.format_bytes(longest["kv_cache_bytes_per_device"]) == "43 GB"
    assert (ms(longest, "time_to_first_token_s"), ms(longest, "time_per_output_token_s")) == ("90.5 s", "21.5 ms")
    assert (ms(longest, "kv_read_s"), ms(longest, "weight_read_s")) == ("12.8 ms", "5.19 ms")


def check_sweep():
    """Explore 7–10, the concurrency sweep's answers, by moving its controls."""
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

    # 7: the defaults, 1 to 512 requests
    default = sweep()
    assert at(default, 1) == ("48.8 ms", "9.64 ms", "102") and at(default, 512) == ("17.4 s", "65.5 ms", "3830")
    assert at(default, 8)[0] == "348 ms" and all(0.9 < default.median_ttft_s[i] / 0.348 < 1.02 for i in range(3, 9))
    assert default.knee_concurrency == 256 and at(default, 256)[2] == "3820"
    assert units.format_percent(default.knee_fraction, digits=2) == "90 %"
    assert default.requests_in_cache == 1122 and default.block_size_tokens == 16
    # 8: fp8 weights, then an fp8 KV cache too
    fp8 = sweep(weights="fp8")
    assert (at(default, 64)[1], at(fp8, 64)[1], units.format_count(max(fp8.output_tokens_per_s))) == (
        "22.6 ms",
        "15.4 ms",
        "5650",
    )
    assert (default.kv_blocks, fp8.kv_blocks, fp8.knee_concurrency) == (89_775, 102_831, 256)
    both = sweep(weights="fp8", kv_cache="fp8")
    assert (both.kv_blocks, both.requests_in_cache, at(both, 64)[1]) == (205_663, 2570, "14.8 ms")
    assert units.format_count(max(both.output_tokens_per_s)) == "5980" and both.knee_concurrency == 256
    # 9: 32 output tokens
    short = sweep(output_tokens=32)
    assert short.knee_concurrency == 64 and (at(short, 64)[2], units.format_count(max(short.output_tokens_per_s))) == (
        "652",
        "708",
    )
    assert [at(short, c)[1] for c in (8, 64, 256)] == ["10.6 ms", "88.1 ms", "350 ms"]
    # 10: the A100 refuses fp8 weights and runs int4
    assert "fp8" in sweep(device="A100 SXM 80GB", weights="fp8").refusal
    int4 = sweep(device="A100 SXM 80GB", weights="int4")
    assert int4.refusal is None and int4.knee_concurrency == 64
    assert units.format_count(max(int4.output_tokens_per_s)) == "1420"
