"""The quantities in lab 7's prose that no output prints (CHECKED: what each is, what checks it) and check(), which
works out the explore answers by moving the lab's controls; tests/test_lesson_numbers.py runs it."""

from course_lib import hardware, parallelism, units

CHECKED = {
    "1 GB": "the units the lab states (10^9 bytes): check()",
    "80 GB": "the H100's HBM: check()",
    "52.1 %": "the calibrated memory margin, REFERENCE_CALIBRATION.memory_margin: check()",
    "345 GB": "explore 1: c = 1 at 32k tokens",
    "314 GB": "explore 1: the activations at c = 1",
    "39.2 GB": "explore 1: the activations at c = 8",
    "17.6 GB": "explore 1: the optimizer state at c = 1 (ZeRO-1 over d = 8)",
    "2.2 GB": "explore 1: the optimizer state at c = 8 (ZeRO-1 over d·c = 64)",
    "55.8 GB": "explore 2: the all-gather form's memory",
    "70.9 GB": "explore 1: c = 1 at 4k tokens",
    "3.8 %": "explore 3: the all-to-alls in one node over the experts' compute",
    "27 %": "explore 3: the all-to-alls across eight nodes over the experts' compute",
    "50 GB/s": "explore 3: an H100's share of its node's InfiniBand NICs (hardware.INFINIBAND_NDR_8X)",
    "102 µs": "explore 3 at 4096 tokens",
    "626 µs": "explore 3 at 4096 tokens",
    "2.19 ms": "explore 3 at 4096 tokens",
    "3.12 %": "explore 4 at m = 32",
    "9.38 %": "explore 4 at m = 32",
    "0 %": "explore 4: ZB-H2 unsynchronised",
    "43.9 GB": "explore 5: c = 16",
    "71.3 GB": "explore 5: c = 8",
    "32": "explore 2: Llama 3.1 8B's 32 query heads, and Mixtral's 32 layers (explore 1)",
    "64": "explore 1: ZeRO-1 over d · c = 64 ranks, and 64k tokens with c = 16",
    "16": "explore 2: the largest c the ring and the all-gather form offer, a setting's range",
    "512": "explore 2 and 3: 512k tokens with the ring at c = 8, and 4096 tokens over 8 ranks; not yet in check()",
}


def check():
    from course_lib.widgets import sequences_lab

    def lab(**settings):  # the lab at its defaults, then the controls moved as the question says
        moved = sequences_lab()
        for name, value in settings.items():
            moved.controls[name].value = value
        return moved.result

    b, s, pct = units.format_bytes, units.format_time, units.format_percent
    default = lab()
    assert b(1e9) == "1 GB" and b(default["capacity_bytes"]) == "80 GB"
    assert pct(parallelism.REFERENCE_CALIBRATION.memory_margin) == "52.1 %" == pct(default["memory_margin"])
    # 1: context parallelism and memory
    assert b(lab(context_parallel=1)["memory_bytes_per_device"]) == "345 GB"
    short = lab(context_parallel=1, seq_len=4096)
    assert b(short["memory_bytes_per_device"]) == "70.9 GB" and short["fits"] and not short["fits_with_margin"]
    assert (default["longest_fitting_seq_len"], default["longest_fitting_seq_len_without_c"]) == (32768, 4096)
    assert b(default["memory_bytes_per_device"]) == "55.5 GB" and default["fits"] and not default["fits_with_margin"]
    assert lab(context_parallel=16)["longest_fitting_seq_len"] == 65536
    alone, split = (sequences_lab(context_parallel=c).typed_result.memory for c in (1, 8))
    assert float(split.activations) * 8 == float(alone.activations) and split.parameters == alone.parameters
    assert (b(alone.activations), b(split.activations)) == ("314 GB", "39.2 GB")
    # ZeRO-1 shards the optimizer state over d·c: 8 ranks at c = 1, 64 at c = 8
    assert float(split.optimizer_state) * 8 == float(alone.optimizer_state) and split.gradients == alone.gradients
    assert (b(alone.optimizer_state), b(split.optimizer_state)) == ("17.6 GB", "2.2 GB")
    # 2: ring, all-gather or all-to-all
    assert lab(context_parallel_kind="all_to_all")["memory_bytes_per_device"] == default["memory_bytes_per_device"]
    assert b(lab(context_parallel_kind="all_gather")["memory_bytes_per_device"]) == "55.8 GB"

    def offered(lab_):
        return [value for _, value in lab_.controls["context_parallel"].options]

    llama = sequences_lab(
        model="Llama 3.1 8B", tensor_parallel=4, context_parallel_kind="all_to_all", context_parallel=1
    )
    assert offered(llama) == [1, 2]  # 2 KV heads a tensor-parallel rank
    llama.controls["tensor_parallel"].value = 8
    assert offered(llama) == [1] and llama.result["longest_fitting_seq_len"] == 65536  # 1 KV head a rank
    for kind in ("ring", "all_gather"):
        llama.controls["context_parallel_kind"].value = kind
        assert offered(llama) == [1, 2, 4, 8, 16]
    llama.controls["context_parallel_kind"].value = "ring"
    llama.controls["context_parallel"].value = 8
    assert llama.result["longest_fitting_seq_len"] == 524288
    # 3: the experts in one node or across nodes
    inside, across, compute = (default[k] for k in ("all_to_all_inside_s", "all_to_all_across_s", "expert_compute_s"))
    assert (s(inside), s(across), s(compute)) == ("657 µs", "4.74 ms", "17.5 ms")
    assert (pct(inside / compute, digits=2), pct(across / compute, digits=2)) == ("3.8 %", "27 %")
    assert units.format_bandwidth(hardware.INFINIBAND_NDR_8X.bandwidth_bytes_per_s / 8) == "50 GB/s"
    small = lab(seq_len=4096)
    assert tuple(s(small[k]) for k in ("all_to_all_inside_s", "all_to_all_across_s", "expert_compute_s")) == (
        "102 µs",
        "626 µs",
        "2.19 ms",
    )
    # 4: zero-bubble schedules
    assert (pct(default["bubble_fraction"]), pct(default["bubble_fraction_1f1b"])) == ("12.5 %", "37.5 %")
    longer = lab(microbatches=32)
    assert (pct(longer["bubble_fraction"]), pct(longer["bubble_fraction_1f1b"])) == ("3.12 %", "9.38 %")
    h2 = lab(schedule="zb-h2")
    assert pct(h2["bubble_fraction"]) == "12.5 %" and pct(h2["unsynchronised_bubble_fraction"]) == "0 %"
    # 5: Llama 3.1 70B at 128k tokens
    at = {c: lab(model="Llama 3.1 70B", tensor_parallel=8, seq_len=131072, context_parallel=c) for c in (1, 8, 16)}
    assert b(at[16]["memory_bytes_per_device"]) == "43.9 GB" and at[16]["fits_with_margin"]
    assert b(at[8]["memory_bytes_per_device"]) == "71.3 GB" and at[8]["fits"] and not at[8]["fits_with_margin"]
    assert at[1]["longest_fitting_seq_len_without_c"] == 16384
