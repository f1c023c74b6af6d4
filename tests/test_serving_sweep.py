"""serving.concurrency_sweep_report (course_lib/serving/sweep.py): the sweep a configuration gives, kept per
configuration, each point the scheduler's own run at that concurrency, and a configuration the engine refuses
reported with the engine's reason."""

from __future__ import annotations

import pytest

from course_lib import hardware, serving
from course_lib.parallelism import LLAMA3_8B, LLAMA3_70B

CONFIG = dict(prompt_tokens=512, output_tokens=64)


def report(concurrency=8, **changes):
    settings = {**CONFIG, **changes}
    return serving.concurrency_sweep_report(LLAMA3_8B, hardware.DGX_H100, 1, concurrency=concurrency, **settings)


def test_each_point_is_the_schedulers_run_at_that_concurrency():
    r = report()
    cost = serving.engine.iteration_time(LLAMA3_8B, hardware.DGX_H100, 1)
    blocks = serving.engine.kv_cache_blocks(LLAMA3_8B, hardware.H100, 1, block_size_tokens=16)
    assert r.kv_blocks == blocks
    for index, concurrency in ((0, 1), (4, 16), (9, 512)):
        run = serving.scheduler.simulate_engine(
            cost,
            kv_blocks=blocks,
            block_size_tokens=16,
            prompt_tokens=512,
            output_tokens=64,
            requests=max(4 * concurrency, 16),  # the scheduler's default per concurrency
            concurrency=concurrency,
        )
        assert r.concurrencies[index] == concurrency
        assert r.median_ttft_s[index] == run.median_ttft_s
        assert r.median_itl_s[index] == run.median_itl_s
        assert r.output_tokens_per_s[index] == run.output_tokens_per_s


def test_the_point_is_the_sweeps_at_the_concurrency_and_the_sweep_is_kept():
    at_8, at_64 = report(8), report(64)
    assert at_8.sweep is at_64.sweep  # one simulation per configuration
    assert (at_8.ttft_s, at_64.tokens_per_s) == (at_8.median_ttft_s[3], at_64.output_tokens_per_s[6])
    assert at_64.tokens_per_s_per_device == at_64.tokens_per_s  # t = 1
    assert report(8, output_tokens=32).sweep is not at_8.sweep


def test_the_knee_is_the_first_concurrency_reaching_ninety_percent_of_the_most():
    r = report()
    top = max(r.output_tokens_per_s)
    first = next(c for c, rate in zip(r.concurrencies, r.output_tokens_per_s, strict=True) if rate >= 0.9 * top)
    assert r.knee_concurrency == first and r.knee_threshold_tokens_per_s == 0.9 * top


def test_blocks_per_request_and_requests_in_cache_by_hand():
    r = report(prompt_tokens=1000, output_tokens=64)
    assert r.blocks_per_request == 67  # ⌈1064 / 16⌉
    assert r.requests_in_cache == r.kv_blocks // 67


def test_a_refused_configuration_carries_the_engines_reason():
    with pytest.raises(ValueError) as engine_says:
        serving.engine.iteration_time(LLAMA3_70B, hardware.DGX_A100, 8, weights="fp8")
    r = serving.concurrency_sweep_report(LLAMA3_70B, hardware.DGX_A100, 8, weights="fp8", concurrency=1, **CONFIG)
    assert r.refusal == str(engine_says.value) and r.sweep is None and r.kv_blocks == 0
    with pytest.raises(ValueError, match="refused"):
        _ = r.ttft_s


@pytest.mark.parametrize(
    "changes, name",
    [({"concurrency": 3}, "concurrency"), ({"concurrency": 0}, "concurrency"), ({"prompt_tokens": 0}, "prompt_tokens")],
)
def test_bad_input_names_the_parameter(changes, name):
    settings = {"concurrency": 8, **CONFIG, **changes}
    with pytest.raises(ValueError, match=name):
        serving.concurrency_sweep_report(LLAMA3_8B, hardware.DGX_H100, 1, **settings)
