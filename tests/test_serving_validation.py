"""The serving model against the published serving rows (issue 38, item 5): the targets on the held-out rows.

Fitted on Llama 3.1 8B's rows (``serving.validation.FIT_ROWS``); judged on every other model, GPU and engine version.
Targets (never loosened; a target the model misses is a strict xfail with its figure and cause): median |error| ≤ 20 %
on inter-token latency, on time to first token at concurrency 1 and on maximum (offline) throughput; the concurrency
at which throughput saturates within 2× of the published one.
"""

import numpy as np
import pytest

from course_lib.hardware import DGX_H100
from course_lib.parallelism import LLAMA3_8B
from course_lib.serving import engine, validation


@pytest.fixture(scope="module")
def replays():
    return (validation.replay_published_serving(efficiency=engine.UNCALIBRATED),
            validation.replay_published_serving())  # fmt: skip


@pytest.mark.parametrize(("kind", "label", "bound"), validation.SERVING_TARGETS)
def test_held_out_target(replays, kind, label, bound):
    _, after = replays
    error, rows = after.median_abs_error(kind, held_out=True)
    assert rows >= 5, f"{label}: only {rows} held-out rows"
    assert error <= bound, f"{label}: median |error| {error:.1%} over {rows} held-out rows (target ≤ {bound:.0%})"


@pytest.mark.parametrize("kind", validation.KINDS)
def test_the_engine_model_beats_the_old_one(replays, kind):
    before, after = replays
    assert after.median_abs_error(kind)[0] < before.median_abs_error(kind)[0]


def test_no_held_out_row_is_fitted(replays):
    _, after = replays
    fitted_rows = {after.rows[i] for i in after.row[after.fitted]}
    assert {r.model for r in fitted_rows} == {"Llama 3.1 8B"}
    assert {r.gpu for r in fitted_rows} == {"H100-SXM-80GB"}
    assert {r.source for r in fitted_rows} == {"nim-1.8.0", "trtllm-0.17-offline"}
    held = ~after.fitted & (after.reason == "")
    assert {after.rows[i].model for i in after.row[held]} >= {"Llama 3.3 70B", "Llama 3.1 405B", "Mixtral 8x7B"}


def test_every_row_is_replayed_or_says_why(replays):
    _, after = replays
    refused = after.reason != ""
    assert set(after.reason[refused]) <= {"more users than the KV cache holds: queueing (the scheduler's)"}
    assert refused.sum() < 0.05 * len(after.reason)


def test_steady_state_by_hand():
    """64 requests of 1000 + 1000 tokens: a cycle of 1000 iterations, each with 64 prompt tokens (the cycle's
    N·I·(I + 1)/2 attended tokens spread over its iterations) and 64 decoding sequences at 1500 cached tokens."""
    cost = engine.iteration_time(LLAMA3_8B, DGX_H100, 1, weights="fp8")
    state = validation.steady_state(cost, 64, 1000, 1000)
    seconds = cost(64, 64 * 1000 * 1001 / 2 / 1000, 64, 64 * 1500)
    assert state.iterations_per_cycle == 1000
    assert state.itl_s == pytest.approx(seconds)
    assert state.output_tokens_per_s == pytest.approx(64 / seconds)
    # a token budget too small for the cycle's tokens stretches it: 64 × 1010 tokens, 4096 a step: 16 steps, not 10
    short = validation.steady_state(cost, 64, 1000, 10, max_num_batched_tokens=4096)
    assert short.iterations_per_cycle == -(-64 * 1010 // 4096)


def test_time_to_first_token_in_chunks():
    cost = engine.iteration_time(LLAMA3_8B, DGX_H100, 1)
    whole = validation.time_to_first_token_s(cost, 8192)
    assert whole == pytest.approx(cost(8192, 8192 * 8193 // 2, 0, 0))
    two = validation.time_to_first_token_s(cost, 10000)
    assert two == pytest.approx(cost(8192, 8192 * 8193 // 2, 0, 0) + cost(1808, 1808 * 8192 + 1808 * 1809 // 2, 0, 0))


@pytest.mark.slow
def test_the_fit_gives_the_default():
    """The default's two fitted constants are the minimum of the fit on Llama 3.1 8B's rows, inside the grid."""
    best, (i, j) = validation.fit_serving_efficiency()
    assert best == engine.DEFAULT_EFFICIENCY
    assert 0 < i < len(validation.SERVING_FIT_GRID[0]) - 1 and 0 < j < len(validation.SERVING_FIT_GRID[1]) - 1


@pytest.fixture(scope="module")
def sweeps():
    return {(s.model, s.input_tokens, s.output_tokens): s for s in validation.saturation_sweeps()}


_HELD_OUT_SWEEPS = [("Llama 3.3 70B", 200, 200), ("Llama 3.3 70B", 500, 2000), ("Llama 3.3 70B", 1000, 1000),
                    ("Llama 3.3 70B", 5000, 500)]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("key", _HELD_OUT_SWEEPS)
def test_saturation_within_2x(sweeps, key):
    sweep = sweeps[key]
    assert not sweep.fitted
    ratio = sweep.knee_ratio
    target = validation.SATURATION_TARGET
    assert 1 / target <= ratio <= target, (
        f"{key}: knee {sweep.predicted_knee} predicted against {sweep.measured_knee} published"
    )


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="Llama 3.3 70B at 20,000 + 2,000 tokens: knee 5 predicted against 25 published (0.2×). The paged cache of "
    "2 H100s in FP8 holds 23 such sequences (16,009 blocks of 32 tokens); past it the scheduler preempts and "
    "recomputes, as vLLM does, and its throughput falls to 0.22× of NIM's, whose TensorRT-LLM reserves every "
    "request's blocks up front (GUARANTEED_NO_EVICT) and queues the rest; NIM's own rows there break Little's law "
    "by 4–10 % (published_serving.README.md, 'Suspicious cells').",
)
def test_saturation_long_prompts(sweeps):
    sweep = sweeps[("Llama 3.3 70B", 20000, 2000)]
    assert 1 / validation.SATURATION_TARGET <= sweep.knee_ratio <= validation.SATURATION_TARGET


def test_report_prints_before_and_after(replays):
    text = validation.serving_report(*replays)
    assert "before" in text and "after" in text
    for _, label, _ in validation.SERVING_TARGETS:
        assert label in text
    assert np.isfinite(replays[1].median_abs_error("itl")[0])
