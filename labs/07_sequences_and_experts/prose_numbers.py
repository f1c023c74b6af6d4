"""The quantities in lab 7's prose that no output prints (CHECKED: what each is, what checks it) and check(), which
works out the explore answer and the lab's claims by moving the lab's controls; tests/test_lesson_numbers.py runs it."""

from course_lib import parallelism, units

CHECKED = {
    "1 GB": "the units the lab states (10^9 bytes): check()",
    "80 GB": "the H100's HBM: check()",
    "52.1 %": "the calibrated memory margin, REFERENCE_CALIBRATION.memory_margin: check()",
    "0 %": "the lab's paragraph: ZB-H2's bubble without the optimizer step's synchronisation, at the defaults",
    "55.8 GB": "the explore answer: the all-gather form's memory",
    "32": "the explore answer: Llama 3.1 8B's 32 query heads",
    "16": "the explore answer: the largest c the ring and the all-gather form offer, a setting's range",
}


def check():
    from course_lib.widgets import sequences_lab

    def lab(**settings):  # the lab at its defaults, then the controls moved as the question says
        moved = sequences_lab()
        for name, value in settings.items():
            moved.controls[name].value = value
        return moved.result

    b, pct = units.format_bytes, units.format_percent
    default = lab()
    assert b(1e9) == "1 GB" and b(default["capacity_bytes"]) == "80 GB"
    assert pct(parallelism.REFERENCE_CALIBRATION.memory_margin) == "52.1 %" == pct(default["memory_margin"])
    # the lab's paragraph: c divides the activations and, under ZeRO-1 over d·c ranks, the optimizer state
    alone, split = (sequences_lab(context_parallel=c).typed_result.memory for c in (1, 8))
    assert float(split.activations) * 8 == float(alone.activations) and split.parameters == alone.parameters
    # ZeRO-1 shards the optimizer state over d·c: 8 ranks at c = 1, 64 at c = 8
    assert float(split.optimizer_state) * 8 == float(alone.optimizer_state) and split.gradients == alone.gradients
    # the explore question: ring, all-gather or all-to-all
    assert lab(context_parallel_kind="all_to_all")["memory_bytes_per_device"] == default["memory_bytes_per_device"]
    assert b(lab(context_parallel_kind="all_gather")["memory_bytes_per_device"]) == "55.8 GB"

    def offered(lab_):
        return [value for _, value in lab_.controls["context_parallel"].options]

    llama = sequences_lab(
        model="Llama 3.1 8B", tensor_parallel=4, context_parallel_kind="all_to_all", context_parallel=1
    )
    assert (parallelism.LLAMA3_8B.heads, parallelism.LLAMA3_8B.kv_heads) == (32, 8)
    assert offered(llama) == [1, 2]  # 2 KV heads a tensor-parallel rank
    llama.controls["tensor_parallel"].value = 8
    assert offered(llama) == [1] and llama.result["longest_fitting_seq_len"] == 65536  # 1 KV head a rank
    for kind in ("ring", "all_gather"):
        llama.controls["context_parallel_kind"].value = kind
        assert offered(llama) == [1, 2, 4, 8, 16]
    llama.controls["context_parallel_kind"].value = "ring"
    llama.controls["context_parallel"].value = 8
    assert llama.result["longest_fitting_seq_len"] == 524288
    # the lab's paragraph: ZB-H2's bubble without the optimizer step's synchronisation
    h2 = lab(schedule="zb-h2")
    assert pct(h2["unsynchronised_bubble_fraction"]) == "0 %" and h2["bubble_fraction"] > 0
