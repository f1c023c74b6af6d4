"""The quantities in lab 1's prose that no output prints (CHECKED: what each is, what checks it) and check(), which
works out the explore answers by moving the lab's controls; tests/test_lesson_numbers.py runs it."""

from course_lib import hardware, units

CHECKED = {
    "1 kB": "the payload explore 2 and 4 and question 2 set, not a result",
    "1 GB": "the payload explore 5 sets, not a result",
    "10 µs": "explore 3's doubled α, not a result",
    "100 GB/s": "explore 3's doubled B, not a result",
    "2 GB": "question 4's given gradients, not a result",
    "1 µs": "question 4's given NVLink α, not a result",
    "900 GB/s": "the DGX H100 datasheet's NVLink 4, hardware.NVLINK4: check()",
    "400 Gb/s": "the DGX H100 datasheet's ConnectX-7, hardware.INFINIBAND_NDR_8X: check()",
    "200 Gb/s": "question 4's HDR adapters, half of hardware.INFINIBAND_HDR_8X's eight: check()",
    "3.5 MB": "explore 1",
    "140 µs": "explore 1",
    "3.9 ms": "explore 2",
    "9 %": "explore 2",
    "150 µs": "explore 2",
    "4 MB": "explore 3",
    "15.1 µs": "explore 4",
    "3.53 ms": "explore 4",
    "4.12 ms": "explore 4",
    "30 µs": "explore 4",
    "40.2 µs": "explore 4",
    "110 µs": "explore 4",
    "3.78 ms": "explore 4",
    "16 ms": "explore 4",
    "39.8 GB/s": "explore 5",
    "19.9 GB/s": "explore 5",
    "10.2 ms": "explore 5",
    "50.2 ms": "explore 5",
    "12": "explore 4's ranks, a setting, not a result",
    "64": "explore 5's ranks, a setting, not a result",
    "1024": "explore 5's widest ring, a setting: check()",
    "1.75": "explore 2: the bandwidth term's 2(p − 1)/p at p = 8: check()",
    "1.875": "explore 2: the same at p = 16: check()",
    "49.9": "explore 5: busbw at 8 ranks: check()",
    "49.2": "explore 5: busbw at 64 ranks: check()",
    "28.5": "explore 5: algbw at 8 ranks: check()",
    "25": "explore 5: algbw at 64 ranks: check()",
}


def check():
    from course_lib.widgets import ring_allreduce_lab

    assert (2 * 7 / 8, 2 * 15 / 16) == (1.75, 1.875)  # 2: the bandwidth term's 2(p − 1)/p at 8 and 16 ranks

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
    # 1: the payload where the two terms are equal
    equal = run(payload_bytes=2 * units.MB)
    assert ms(equal, "latency_term_s") == ms(equal, "bandwidth_term_s") == "70 µs"
    assert units.format_bytes(equal["wire_bytes"]) == "3.5 MB" and ms(equal) == "140 µs"
    # 2: double the ranks at 100 MB and at 1 kB
    default, doubled = run(), run(ranks=16)
    assert (ms(default), ms(doubled)) == ("3.57 ms", "3.9 ms")
    assert units.format_percent(doubled["time_s"] / default["time_s"] - 1, digits=1) == "9 %"
    assert (ms(run(payload_bytes=1e3)), ms(run(payload_bytes=1e3, ranks=16))) == ("70 µs", "150 µs")
    # 3: each doubling doubles the crossover
    for setting in ({"latency_s": 10 * units.US}, {"bandwidth_bytes_per_s": 100 * units.GB}, {"ranks": 16}):
        assert units.format_bytes(run(**setting)["crossover_bytes"]) == "4 MB"
    # 4: the fastest algorithm on 8 and on 12 ranks
    small = run(payload_bytes=1e3)
    assert small["fastest_algorithm"] == "recursive_doubling" and ms(small, "recursive_doubling_time_s") == "15.1 µs"
    assert default["fastest_algorithm"] == "rabenseifner" and ms(default, "rabenseifner_time_s") == "3.53 ms"
    assert ms(default, "double_binary_tree_time_s") == "4.12 ms"
    small = run(ranks=12, payload_bytes=1e3)
    assert small["fastest_algorithm"] == "double_binary_tree"
    assert [ms(small, f"{a}_time_s") for a in ("double_binary_tree", "binomial_tree", "ring")] == [
        "30 µs",
        "40.2 µs",
        "110 µs",
    ]
    large = run(ranks=12)
    assert large["fastest_algorithm"] == "ring"
    assert [ms(large, f"{a}_time_s") for a in ("ring", "double_binary_tree", "binomial_tree")] == [
        "3.78 ms",
        "4.12 ms",
        "16 ms",
    ]
    # 5: algbw against busbw at 1 GB ("busbw: 50, 49.9, 49.2 and 39.8 GB/s; algbw: 50, 28.5, 25 and 19.9 GB/s")
    rates = [run(payload_bytes=1 * units.GB, ranks=p) for p in (2, 8, 64)]
    assert [units.format_bandwidth(r["busbw_bytes_per_s"]) for r in rates] == ["50 GB/s", "49.9 GB/s", "49.2 GB/s"]
    assert [units.format_bandwidth(r["algbw_bytes_per_s"]) for r in rates] == ["50 GB/s", "28.5 GB/s", "25 GB/s"]
    widest = run(payload_bytes=1 * units.GB, ranks=1024)
    assert units.format_bandwidth(widest["busbw_bytes_per_s"]) == "39.8 GB/s"
    assert units.format_bandwidth(widest["algbw_bytes_per_s"]) == "19.9 GB/s"
    assert (ms(widest, "latency_term_s"), ms(widest)) == ("10.2 ms", "50.2 ms") and widest["phases"] == 2046
