"""course_lib.serving.scheduler against hand calculations, queueing laws and the paged cache's invariants.

Every expected number below is worked out by hand from the scheduler's rules (vLLM V1's ``Scheduler.schedule``,
V0's ``_schedule_default`` without chunked prefill: see the module's docstring) and an analytic iteration cost.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from course_lib import serving
from course_lib.serving import concurrency_sweep, simulate_engine

BIG_CACHE = 100_000  # blocks: never binding


def prefill_or_decode(prefill_s, decode_s):
    """A cost that is ``prefill_s`` for an iteration with prompt tokens, ``decode_s`` for one without."""
    return lambda prefill, *_: prefill_s if prefill else decode_s


def affine(a_s, per_prefill_token_s, per_decode_s):
    """a + b·prefill tokens + c·decoding sequences: the cost whose interference numbers are worked by hand."""
    return lambda prefill, _attended, decodes, _context: a_s + per_prefill_token_s * prefill + per_decode_s * decodes


# --- one user: every time is a hand sum ----------------------------------------------------------------------------


def test_concurrency_one_times_are_the_hand_sums():
    # 20 ms prefill, 5 ms decode, 11 output tokens: TTFT = 20 ms, ITL = 5 ms, e2e = 20 + 10 × 5 = 70 ms; each next
    # request arrives when the previous one finishes.
    run = simulate_engine(
        prefill_or_decode(0.020, 0.005), kv_blocks=100, prompt_tokens=100, output_tokens=11, requests=3, concurrency=1
    )
    assert run.ttft_s == pytest.approx([0.020] * 3)
    assert run.request_itl_s == pytest.approx([0.005] * 3)
    assert run.itl_s == pytest.approx([0.005] * 30)
    assert run.e2e_latency_s == pytest.approx([0.070] * 3)
    assert run.arrival_s == pytest.approx([0.0, 0.070, 0.140])
    assert run.finish_s == pytest.approx([0.070, 0.140, 0.210])
    assert run.output_tokens_per_s == pytest.approx(33 / 0.210)
    assert run.requests_per_s == pytest.approx(3 / 0.210)
    assert run.mean_batch_sequences == 1
    assert run.preemptions == 0


def test_attended_tokens_and_cached_context_reach_the_cost():
    # One request, prompt 10 in chunks of 4 (budget 4): chunks [0,4), [4,8), [8,10) attend 10, 4·4 + 10 = 26 and
    # 2·8 + 3 = 19 tokens; then 2 decodes with 11 and 12 tokens cached.
    calls = []

    def cost(prefill, attended, decodes, context):  # called with the iterations' arrays (or one at a time)
        calls.append(np.column_stack(np.broadcast_arrays(prefill, attended, decodes, context)))
        return np.full(np.shape(prefill), 0.001)

    simulate_engine(
        cost,
        kv_blocks=10,
        block_size_tokens=4,
        prompt_tokens=10,
        output_tokens=3,
        requests=1,
        concurrency=1,
        max_num_batched_tokens=4,
    )
    rows = np.concatenate(calls).tolist()
    assert rows == [[4, 10, 0, 0], [4, 26, 0, 0], [2, 19, 0, 0], [0, 0, 1, 11], [0, 0, 1, 12]]


# --- queueing ------------------------------------------------------------------------------------------------------


def open_loop(**arguments):
    """Poisson arrivals on an engine of 10 ms + 20 µs a prompt token + 0.1 ms a decode, the cache never binding."""
    return simulate_engine(affine(0.010, 2e-5, 1e-4), kv_blocks=BIG_CACHE, **arguments)


def test_littles_law_on_an_open_loop_run():
    # L (the time-averaged number waiting or running, from the iterations' records) = throughput × mean latency
    # (from the requests' own times): two bookkeepings that agree only if the simulation is consistent.
    run = open_loop(request_rate_per_s=20.0, prompt_tokens=512, output_tokens=64, requests=1000, seed=1)
    assert run.mean_in_system > 10  # a busy engine: the law is not checked on an empty one
    assert run.mean_in_system == pytest.approx(run.requests_per_s * run.e2e_latency_s.mean(), rel=0.01)


def test_below_saturation_throughput_is_the_arrival_rate_times_the_output():
    # 5 requests/s of 32 tokens on an engine that serves far more: every request is served as it comes, so the
    # output rate is the (realised) arrival rate × 32; the run ends one latency (about 0.35 s) after the last of
    # 80 s of arrivals.
    run = open_loop(request_rate_per_s=5.0, prompt_tokens=1024, output_tokens=32, requests=400)
    arrival_rate = (run.arrival_s.size - 1) / (run.arrival_s[-1] - run.arrival_s[0])
    assert arrival_rate == pytest.approx(5.0, rel=0.15)  # Poisson, 400 arrivals: within 3 standard deviations (5 %)
    assert run.output_tokens_per_s == pytest.approx(arrival_rate * 32, rel=0.01)
    assert run.median_ttft_s < 0.1  # no queue


def test_past_saturation_ttft_grows_with_the_queue():
    # 10 ms an iteration, at most 4 sequences, 10 output tokens: each slot serves a request every 10 iterations
    # (its prefill gives the first token), so the engine serves 4 / 0.1 s = 40 requests/s. At 120 requests/s the
    # k-th request waits about k (1/40 − 1/120) s: the median of N requests about N/2 × 16.7 ms.
    cost = prefill_or_decode(0.010, 0.010)
    runs = {
        n: simulate_engine(
            cost,
            kv_blocks=BIG_CACHE,
            prompt_tokens=16,
            output_tokens=10,
            requests=n,
            request_rate_per_s=120.0,
            max_num_seqs=4,
        )
        for n in (100, 200, 400)
    }
    ttft = {n: run.median_ttft_s for n, run in runs.items()}
    assert ttft[200] / ttft[100] == pytest.approx(2, rel=0.2)
    assert ttft[400] / ttft[200] == pytest.approx(2, rel=0.2)
    assert ttft[400] == pytest.approx(200 * (1 / 40 - 1 / 120), rel=0.1)
    assert runs[400].requests_per_s == pytest.approx(40, rel=0.02)  # the engine's rate, not the arrivals'


# --- the paged KV cache --------------------------------------------------------------------------------------------

lengths = st.lists(st.tuples(st.integers(1, 120), st.integers(1, 40)), min_size=1, max_size=12)


@given(
    lengths=lengths,
    block=st.sampled_from([1, 4, 16]),
    spare_blocks=st.integers(0, 20),
    concurrency=st.integers(1, 8),
    budget=st.integers(1, 300),
    chunked=st.booleans(),
    policy=st.sampled_from(serving.CAPACITY_POLICIES),
)
def test_blocks_never_exceed_the_cache_and_every_request_finishes(
    lengths, block, spare_blocks, concurrency, budget, chunked, policy
):
    prompts = np.array([p for p, _ in lengths])
    outputs = np.array([o for _, o in lengths])
    longest = int((prompts + outputs - 1).max())
    kv_blocks = -(-longest // block) + spare_blocks
    run = simulate_engine(
        affine(0.01, 1e-5, 1e-4),
        kv_blocks=kv_blocks,
        block_size_tokens=block,
        prompt_tokens=prompts,
        output_tokens=outputs,
        requests=prompts.size,
        concurrency=concurrency,
        chunked_prefill=chunked,
        max_num_batched_tokens=budget if chunked else max(budget, longest),
        capacity_policy=policy,
    )
    assert run.iteration_blocks_used.max() <= kv_blocks
    if policy == "guaranteed_no_evict":
        assert run.preemptions == 0
    assert np.all(run.arrival_s <= run.first_token_s) and np.all(run.first_token_s <= run.finish_s)
    assert np.all(run.itl_s > 0) and run.itl_s.size == int((outputs - 1).sum())
    assert run.iteration_sequences.max() <= concurrency


def two_users_10_ms(**lengths):
    """Two requests sent at once, blocks of 16 tokens, every iteration 10 ms."""
    return simulate_engine(prefill_or_decode(0.010, 0.010), block_size_tokens=16, requests=2, concurrency=2, **lengths)


def test_preemption_happens_exactly_when_the_blocks_run_out():
    # Two requests of 16 prompt tokens, 40 output tokens, blocks of 16, 4 blocks. Iteration j ≥ 2 computes token
    # j − 1's KV: after it each request caches 16 + j − 1 tokens, 2 blocks each up to j = 17 (32 tokens: the 4
    # blocks exactly). Iteration 18 needs a third block for each: the last admitted request (1) is preempted,
    # request 0 takes its blocks. Request 1 (33 tokens to recompute: 3 blocks) waits until request 0 finishes
    # (iteration 40, its cache then needs all 4 blocks), is recomputed in iteration 41 (token 18) and finishes in
    # iteration 63.
    run = two_users_10_ms(kv_blocks=4, prompt_tokens=16, output_tokens=40)
    assert run.preemptions == 1
    assert np.flatnonzero(run.iteration_preemptions).tolist() == [17]  # iteration 18
    assert run.iteration_blocks_used[:17].tolist() == [2] + [4] * 16
    assert run.finish_s == pytest.approx([0.40, 0.63])
    assert run.first_token_s == pytest.approx([0.010, 0.010])  # the recomputation brings token 18, not a first
    assert run.max_itl_s == pytest.approx([0.010, 0.41 - 0.17])  # token 17 at 0.17 s, token 18 at 0.41 s
    roomy = two_users_10_ms(kv_blocks=8, prompt_tokens=16, output_tokens=40)
    assert roomy.preemptions == 0 and roomy.finish_s == pytest.approx([0.40, 0.40])


def test_guaranteed_no_evict_reserves_the_whole_request_and_never_preempts():
    # The case above under TensorRT-LLM's default policy: each request reserves ⌈(16 + 40 − 1) / 16⌉ = 4 blocks, the
    # whole cache, so request 1 waits for request 0 (40 iterations) and runs its 40 after: first token at 0.41 s,
    # finish at 0.80 s, never preempted.
    run = two_users_10_ms(kv_blocks=4, prompt_tokens=16, output_tokens=40, capacity_policy="guaranteed_no_evict")
    assert run.preemptions == 0
    assert run.first_token_s == pytest.approx([0.010, 0.410])
    assert run.finish_s == pytest.approx([0.40, 0.80])
    assert run.iteration_blocks_used.tolist() == [4] * 80  # reserved from admission


def test_no_request_is_admitted_in_an_iteration_that_preempted():
    # 4 blocks of 16, budget 20 tokens. Iteration 1: request 0's prompt (16 tokens, 1 block) and 4 of request 1's
    # 32 (1 block); 2: request 0's decode (17 tokens: 2 blocks) and 19 more of request 1's (23: 2 blocks), the
    # cache full; 3: request 1's last 9 (32 tokens, its first token). Iteration 4: request 1 needs a third block,
    # none is free: it is preempted (its 2 blocks freed). Readmitting it at once (a 19-token chunk of its 33 tokens
    # fits those 2 blocks) is what vLLM does not do: ``if not preempted_reqs`` guards the waiting loop, so iteration
    # 4 runs request 0 alone and request 1 comes back in iteration 5.
    run = simulate_engine(
        prefill_or_decode(0.010, 0.010),
        kv_blocks=4,
        block_size_tokens=16,
        prompt_tokens=[16, 32],
        output_tokens=[40, 5],
        requests=2,
        concurrency=2,
        max_num_batched_tokens=20,
    )
    assert run.iteration_sequences[:5].tolist() == [2, 2, 2, 1, 2]
    assert run.iteration_preemptions[:5].tolist() == [0, 0, 0, 1, 0]
    assert run.iteration_blocks_used[:5].tolist() == [2, 4, 4, 2, 4]


def test_admission_waits_for_free_blocks():
    # 3 blocks of 16; prompts of 32 tokens (2 blocks each), 1 output token: the second request is admitted only
    # when the first has finished, although the budget and the sequence cap would allow both at once.
    run = two_users_10_ms(kv_blocks=3, prompt_tokens=32, output_tokens=1)
    assert run.first_token_s == pytest.approx([0.010, 0.020])


# --- chunked prefill -----------------------------------------------------------------------------------------------


def _interference(chunked):
    # Two users. Request 0: 16-token prompt, 100 output tokens; request 1: 16 and 10; when request 1 finishes (end
    # of iteration 10) its user sends request 2, a 4,096-token prompt with 2 output tokens, while request 0 decodes.
    # Cost: 10 ms + 10 µs a prompt token + 0.1 ms a decoding sequence.
    return simulate_engine(
        affine(0.010, 1e-5, 1e-4),
        kv_blocks=BIG_CACHE,
        prompt_tokens=[16, 16, 4096],
        output_tokens=[100, 10, 2],
        requests=3,
        concurrency=2,
        chunked_prefill=chunked,
        max_num_batched_tokens=512 if chunked else 8192,
    )


def test_a_long_prompt_stalls_decodes_without_chunked_prefill():
    # V0: iteration 11 prefills the 4,096 tokens alone (10 + 40.96 ms); request 0's next token comes after it and
    # iteration 12's decode (10 + 0.2 ms): a 61.16 ms gap, 6 times its usual 10.2 ms. Request 2's TTFT: 50.96 ms.
    run = _interference(chunked=False)
    assert run.max_itl_s[0] == pytest.approx(0.05096 + 0.0102)
    assert run.ttft_s[2] == pytest.approx(0.05096)


def test_chunked_prefill_spreads_the_long_prompt_over_decode_iterations():
    # Budget 512: request 0's decode takes 1 token, request 2's prompt 511 in each of iterations 11–18 (10 + 5.11
    # + 0.1 = 15.21 ms each), its last 8 tokens in iteration 19 (10.18 ms): request 0's longest gap is 15.21 ms,
    # request 2 waits 8 × 15.21 + 10.18 = 131.86 ms for its first token.
    run = _interference(chunked=True)
    assert run.max_itl_s[0] == pytest.approx(0.01521)
    assert run.ttft_s[2] == pytest.approx(8 * 0.01521 + 0.01018)
    assert run.max_itl_s[0] < _interference(chunked=False).max_itl_s[0] / 4


# --- the sweep and its knee ----------------------------------------------------------------------------------------


def test_knee_of_an_affine_cost_is_where_the_hand_solution_puts_it():
    # Cost 3 ms + 0.1 ms per sequence (a prompt of 16 tokens counts as one): b users in lockstep run b sequences
    # every iteration, one token each, so throughput = b / (0.003 + 0.0001 b) exactly (768 requests: whole rounds
    # at every level). The maximum of the sweep, at 256: 256 / 0.0286 = 8951 tokens/s; 90 % of it = 8056; b = 96
    # gives 7619 (85 %), b = 128 gives 8101 (90.5 %): the knee is 128 (b ≥ 230.4·30 / 55.6 = 124.3).
    levels = [1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256]
    cost = lambda prefill, _attended, decodes, _context: 0.003 + 1e-4 * (decodes + prefill / 16)  # noqa: E731
    sweep = concurrency_sweep(cost, levels, kv_blocks=BIG_CACHE, prompt_tokens=16, output_tokens=8, requests=768)
    b = np.array(levels)
    assert sweep.output_tokens_per_s == pytest.approx(b / (0.003 + 1e-4 * b))
    assert sweep.median_itl_s == pytest.approx(0.003 + 1e-4 * b)
    assert sweep.p99_itl_s == pytest.approx(0.003 + 1e-4 * b)  # lockstep: every gap is one iteration
    assert sweep.mean_batch_sequences == pytest.approx(b)
    assert sweep.knee_concurrency == 128
    assert sweep.concurrency.tolist() == levels


def test_knee_concurrency_by_hand():
    # Lab 6 q5's public cases, worked by hand: 900 is 90 % of 1000 (reaching it counts); 90 % of the maximum, not of
    # the last point; fraction 0.4 sets the threshold at 400; the concurrency is returned, not its position.
    knee = serving.knee_concurrency
    assert knee([1, 2, 4, 8], [100.0, 450.0, 900.0, 1000.0]) == 4
    assert knee([1, 2, 4, 8, 16], [200.0, 700.0, 1000.0, 950.0, 600.0]) == 4
    assert knee([1, 2, 4, 8], [100.0, 450.0, 900.0, 1000.0], 0.4) == 2
    assert knee([1, 3, 10, 30], [50.0, 140.0, 420.0, 460.0]) == 10
    assert knee([1, 2, 4, 8, 16], [100.0, 899.9, 950.0, 1000.0, 300.0]) == 4  # 899.9 falls just short of 900
    with pytest.raises(ValueError, match="output_tokens_per_s must hold one throughput per concurrency"):
        knee([1, 2, 4], [100.0, 200.0])
    with pytest.raises(ValueError, match="concurrencies must be an increasing sequence"):
        knee([1, 4, 2], [100.0, 200.0, 300.0])
    with pytest.raises(ValueError, match="concurrencies must not be empty"):
        knee([], [])


def test_sweep_runs_four_requests_per_user_by_default():
    sweep = concurrency_sweep(
        prefill_or_decode(0.01, 0.01), [2, 8, 64], kv_blocks=BIG_CACHE, prompt_tokens=16, output_tokens=2
    )
    assert sweep.requests.tolist() == [16, 32, 256]  # at least 16, else 4 a user


def test_sweep_refuses_unordered_levels():
    with pytest.raises(ValueError, match="concurrencies"):
        concurrency_sweep(prefill_or_decode(0.01, 0.01), [4, 2], kv_blocks=10, prompt_tokens=16, output_tokens=2)


# --- determinism and bad input -------------------------------------------------------------------------------------


def test_same_seed_same_run_other_seed_other_arrivals():
    arguments = dict(kv_blocks=BIG_CACHE, prompt_tokens=256, output_tokens=8, requests=300, request_rate_per_s=10.0)
    cost = affine(0.01, 1e-5, 1e-4)
    first, again = simulate_engine(cost, seed=7, **arguments), simulate_engine(cost, seed=7, **arguments)
    for name in ("arrival_s", "first_token_s", "finish_s", "itl_s", "iteration_time_s"):
        assert np.array_equal(getattr(first, name), getattr(again, name))
    assert not np.array_equal(first.arrival_s, simulate_engine(cost, seed=8, **arguments).arrival_s)
    assert np.diff(first.arrival_s).mean() == pytest.approx(0.1, rel=0.15)  # 1 / rate, 300 exponential gaps


@pytest.mark.parametrize(
    "changes, name",
    [
        (dict(concurrency=None), "request_rate_per_s"),  # neither
        (dict(request_rate_per_s=1.0), "request_rate_per_s"),  # both
        (dict(kv_blocks=4), "kv_blocks"),  # 100 + 20 − 1 tokens need 8 blocks of 16
        (dict(chunked_prefill=False, max_num_batched_tokens=64), "max_num_batched_tokens"),
        (dict(prompt_tokens=[100, 100]), "prompt_tokens"),  # 2 lengths for 3 requests
        (dict(iteration_time=0.01), "iteration_time"),
        (dict(capacity_policy="GUARANTEED_NO_EVICT"), "capacity_policy"),
    ],
)
def test_bad_input_names_the_parameter(changes, name):
    arguments = dict(
        iteration_time=affine(0.01, 1e-5, 1e-4),
        kv_blocks=100,
        prompt_tokens=100,
        output_tokens=20,
        requests=3,
        concurrency=2,
    )
    with pytest.raises(ValueError, match=name):
        simulate_engine(**{**arguments, **changes})


def test_public_names():
    assert {"simulate_engine", "EngineRun", "concurrency_sweep", "ConcurrencySweep"} <= set(serving.__all__)
