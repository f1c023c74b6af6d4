"""The quantities in lab 1's prose that no output prints (CHECKED: what each is, what checks it) and check(), which
works out the explore answer by moving the lab's controls; tests/test_lesson_numbers.py runs it."""

from course_lib import hardware, units

CHECKED = {
    "1 kB": "the payload the explore question and question 2 set, not a result",
    "2 GB": "question 4's given gradients, not a result",
    "1 µs": "question 4's given NVLink α, not a result",
    "900 GB/s": "the DGX H100 datasheet's NVLink 4, hardware.NVLINK4: check()",
    "400 Gb/s": "the DGX H100 datasheet's ConnectX-7, hardware.INFINIBAND_NDR_8X: check()",
    "200 Gb/s": "question 4's HDR adapters, half of hardware.INFINIBAND_HDR_8X's eight: check()",
    "3.9 ms": "the explore answer",
    "9 %": "the explore answer",
    "150 µs": "the explore answer",
    "4 MB": "the explore answer: the crossover at 16 ranks",
    "16": "the explore question's ranks and question 4's 16 GPUs, settings, not results",
    "30": "the explore answer: the ring's 2(p − 1) steps at p = 16: check()",
    "1.75": "the explore answer: the bandwidth term's 2(p − 1)/p at p = 8: check()",
    "1.875": "the explore answer: the same at p = 16: check()",
}


def check():
    from course_lib.widgets import ring_allreduce_lab

    assert (2 * 7 / 8, 2 * 15 / 16) == (1.75, 1.875)  # the bandwidth term's 2(p − 1)/p at 8 and 16 ranks

    def run(**settings):  # the lab at its defaults (8 ranks, 100 MB, 50 GB/s, 5 µs, ring), then the controls moved
        lab = ring_allreduce_lab()
        for name, value in settings.items():
            lab.controls[name].value = value
        return lab.result

    def ms(r, key="time_s"):
        return units.format_time(r[key])

    assert hardware.NVLINK4.bandwidth_bytes_per_s == 900e9 and hardware.NVLINK4.direction == "two-way"
    assert hardware.INFINIBAND_NDR_8X.bandwidth_bytes_per_s == 8 * 400 * units.GBIT  # 8 adapters of 400 Gb/s
    assert hardware.INFINIBAND_HDR_8X.bandwidth_bytes_per_s == 8 * 200 * units.GBIT  # 8 adapters of 200 Gb/s
    # the explore question: double the ranks at 100 MB and at 1 kB, and the crossover moves with them
    default, doubled = run(), run(ranks=16)
    assert (ms(default), ms(doubled)) == ("3.57 ms", "3.9 ms")
    assert units.format_percent(doubled["time_s"] / default["time_s"] - 1, digits=1) == "9 %"
    assert (ms(run(payload_bytes=1e3)), ms(run(payload_bytes=1e3, ranks=16))) == ("70 µs", "150 µs")
    assert (default["phases"], doubled["phases"]) == (14, 30)  # the latency term's steps, 2(p − 1)
    assert units.format_bytes(default["crossover_bytes"]) == "2 MB"
    # each doubling (α, B or p) doubles the crossover
    for setting in ({"latency_s": 10 * units.US}, {"bandwidth_bytes_per_s": 100 * units.GB}, {"ranks": 16}):
        assert units.format_bytes(run(**setting)["crossover_bytes"]) == "4 MB"
