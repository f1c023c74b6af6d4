"""Units: constants and formatters print what a learner expects to read."""

import math

import pytest

from course_lib import parallelism, units
from course_lib.units import (
    GB,
    GBIT,
    KB,
    MB,
    MS,
    TB,
    US,
    GiB,
    KiB,
    MiB,
    TiB,
    format_bandwidth,
    format_bytes,
    format_count,
    format_flops,
    format_flops_rate,
    format_percent,
    format_time,
)


def test_decimal_and_binary_prefixes():
    assert (KB, MB, GB, TB) == (1e3, 1e6, 1e9, 1e12)
    assert (KiB, MiB, GiB, TiB) == (1024, 1024**2, 1024**3, 1024**4)
    assert (US, MS) == (1e-6, 1e-3)
    assert 200 * GBIT == 25 * GB  # 200 Gb/s HDR InfiniBand carries 25 GB/s


def test_card_example_reads_2_02_ms():
    assert 100 * MB / (50 * GB) == pytest.approx(2 * MS)
    assert format_time(4 * 5 * US + 100 * MB / (50 * GB)) == "2.02 ms"


@pytest.mark.parametrize(
    "value, text",
    [
        (100e6, "100 MB"),
        (1e9, "1 GB"),
        (999.7e6, "1 GB"),
        (1536, "1.54 kB"),
        (0, "0 B"),
        (80e9, "80 GB"),
        (123456, "123 kB"),
    ],
)
def test_format_bytes(value, text):
    assert format_bytes(value) == text


def test_format_bytes_binary():
    assert format_bytes(80 * GiB, binary=True) == "80 GiB"
    assert format_bytes(140e9, binary=True) == "130 GiB"  # the playbook's "140 GB (= 133 GiB)" is 130.4 GiB
    assert format_bytes(1536, binary=True) == "1.5 KiB"


@pytest.mark.parametrize(
    "value, text",
    [
        (2.02e-3, "2.02 ms"),
        (5e-6, "5 µs"),
        (1.5e-9, "1.5 ns"),
        (42.0, "42 s"),
        (4000.0, "1.11 h"),
        (33.9 * 86400, "33.9 days"),
    ],
)
def test_format_time(value, text):
    assert format_time(value) == text


def test_rates_counts_and_percentages():
    assert format_bandwidth(50e9) == "50 GB/s"
    assert format_flops_rate(312e12) == "312 TFLOP/s"
    assert format_flops(6.3e24) == "6.3e24 FLOP"
    assert format_flops(137.4e9) == "137 GFLOP"
    assert format_count(175e9) == "175 billion"
    assert format_percent(0.052) == "5.2 %"


@pytest.mark.parametrize(
    "formatter",
    [format_bytes, format_time, format_bandwidth, format_flops, format_flops_rate, format_count, format_percent],
)
@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_formatters_refuse_non_finite(formatter, bad):
    with pytest.raises(ValueError, match="finite"):
        formatter(bad)


def test_all_names_exist():
    for name in units.__all__:
        assert hasattr(units, name)


def test_zero_stages_print_as_the_course_writes_them_and_refuse_other_values():
    assert units.format_zero_stages(parallelism.NANOTRON.zero_stages) == "ZeRO-0/1"
    assert units.format_zero_stages(parallelism.FSDP2.zero_stages_with_pipeline) == "none"
    for bad in ((4,), (-1,), (1.0,), (True,), ("1",)):
        with pytest.raises(ValueError, match=r"stages must be ZeRO stages \(whole numbers 0 to 3\)"):
            units.format_zero_stages(bad)
