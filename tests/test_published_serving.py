"""The published serving benchmarks (course_lib/data/published_serving.csv): every row is cited, in SI units, unique,
of a model and GPU the course can represent (or listed as not), with the columns its mode needs; its latencies and
throughput agree with each other where the source gives several, and no throughput beats the physics of its GPUs."""

import csv
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from course_lib.serving.published import (
    PUBLISHED_SERVING_CSV,
    PUBLISHED_SERVING_GPUS,
    PUBLISHED_SERVING_MODELS,
    SERVING_MODES,
    UNREPRESENTABLE_SERVING_MODELS,
    load_published_serving,
)

ROWS = load_published_serving()
README = Path(PUBLISHED_SERVING_CSV).with_name("published_serving.README.md")

# Bytes per stored weight of each precision the CSV names (bf16/fp16: 2 bytes; fp8/int8: 1; int4/fp4: half a byte).
WEIGHT_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5, "fp4": 0.5}
# The dense peak a matrix multiply of that precision runs at (hardware.Accelerator.peak's dtype names).
PEAK_DTYPE = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "int8": "int8", "int4": "int8", "fp4": "fp8"}

# A citation is a repository file at a full commit (owner/name@40-hex:path, then #anchor or :line) or a web page.
CITATION = re.compile(r"^([\w.-]+/[\w.-]+@[0-9a-f]{40}:[\w./-]+(#[\w-]+|:\d+(-\d+)?)?|https://\S+)$")


def key(row):
    """What one measurement is: the same key twice would be the same measurement transcribed twice."""
    return (row.source, row.model, row.gpu, row.gpus, row.tensor_parallel, row.pipeline_parallel, row.weights,
            row.kv_cache, row.input_tokens, row.output_tokens, row.mode, row.concurrency, row.request_rate_per_s,
            row.batch)  # fmt: skip


def test_every_row_is_cited_and_every_source_is_described():
    assert len(ROWS) >= 40 and len({r.engine for r in ROWS}) >= 2 and len({r.source for r in ROWS}) >= 3
    for row in ROWS:
        assert CITATION.match(row.citation), row
        assert row.notes, row
    # The README's source table states each source's row count; it must be the CSV's.
    text = README.read_text()
    stated = dict(re.findall(r"^\| `([\w.-]+)` \| (\d+) \|", text, flags=re.MULTILINE))
    assert {s: int(n) for s, n in stated.items()} == dict(Counter(r.source for r in ROWS))


def test_a_missing_file_or_a_bad_cell_is_refused_naming_it(tmp_path):
    with pytest.raises(ValueError, match="path must be the published serving CSV"):
        load_published_serving(tmp_path / "none.csv")
    header, first = PUBLISHED_SERVING_CSV.read_text().splitlines()[:2]
    columns = header.split(",")
    for column, bad in (("mode", "closed-loop"), ("weights", "fp6"), ("kv_cache", "int4")):
        cells = next(csv.reader([first]))
        cells[columns.index(column)] = bad
        path = tmp_path / f"{column}.csv"
        with path.open("w", newline="") as handle:
            csv.writer(handle).writerows([columns, cells])
        with pytest.raises(ValueError, match=f"{column} must be one of"):
            load_published_serving(path)


def test_no_measurement_is_transcribed_twice():
    counts = Counter(key(r) for r in ROWS)
    assert [k for k, n in counts.items() if n > 1] == []


def test_every_model_and_gpu_is_a_preset_or_listed_with_a_reason():
    for model in {r.model for r in ROWS}:
        assert (model in PUBLISHED_SERVING_MODELS) != (model in UNREPRESENTABLE_SERVING_MODELS), model
    assert all(len(reason) > 20 for reason in UNREPRESENTABLE_SERVING_MODELS.values())
    assert {r.gpu for r in ROWS} <= set(PUBLISHED_SERVING_GPUS)
    # The preset is the named model: its parameter count (billions) is within 10 % of the size in the name
    # (Mixtral's names count 8 experts of 7B / 22B: 46.7B and 141B; Llama 3.1 70B is 70.6B).
    sizes = {"Mixtral 8x7B": 46.7, "Mixtral 8x22B": 141}
    for name, preset in PUBLISHED_SERVING_MODELS.items():
        billions = sizes.get(name) or float(re.search(r"(\d+)B$", name).group(1))
        assert preset.params / 1e9 == pytest.approx(billions, rel=0.1), name


def test_each_mode_has_the_columns_it_needs():
    assert {r.mode for r in ROWS} <= set(SERVING_MODES)
    for row in ROWS:
        assert row.gpus % (row.tensor_parallel * row.pipeline_parallel) == 0, row
        assert row.input_tokens > 0 and row.output_tokens > 0, row
        assert row.output_tokens_per_s is not None or row.requests_per_s is not None or row.e2e_latency_s, row
        if row.mode == "concurrency":
            assert row.concurrency and row.concurrency > 0 and row.request_rate_per_s is None, row
        elif row.mode == "rate":
            assert row.request_rate_per_s and row.request_rate_per_s > 0 and row.concurrency is None, row
        elif row.mode == "latency_batch":
            assert row.batch and row.batch > 0 and row.e2e_latency_s, row
        else:  # offline: everything queued at once, no load parameter
            assert row.concurrency is None and row.request_rate_per_s is None, row
        if row.ttft_s is not None or row.itl_s is not None:
            assert row.latency_statistic, row  # a latency is a mean, a median or a percentile: the row says which


def test_latencies_are_seconds_and_ordered():
    for row in ROWS:
        for name in ("ttft_s", "itl_s", "e2e_latency_s"):
            value = getattr(row, name)
            assert value is None or 1e-4 < value < 2e3, (name, row)  # 0.1 ms … 33 min: seconds, not ms
        if row.itl_s is not None:
            assert row.itl_s < 1.0, row  # no engine here takes a second per token
        if row.ttft_s is not None and row.e2e_latency_s is not None:
            assert row.ttft_s < row.e2e_latency_s, row


def e2e_from_parts_s(row):
    """A request's end-to-end latency from its parts: the first token, then output − 1 gaps of one ITL."""
    return row.ttft_s + (row.output_tokens - 1) * row.itl_s


def test_ttft_plus_itl_per_token_is_the_end_to_end_latency_where_all_three_are_given():
    # Published latencies carry 3–5 significant figures; 2 % covers their rounding, not a mismatch.
    complete = [r for r in ROWS if None not in (r.ttft_s, r.itl_s, r.e2e_latency_s)]
    for row in complete:
        assert e2e_from_parts_s(row) == pytest.approx(row.e2e_latency_s, rel=0.02), row
    # The check tells a wrong row from a right one.
    made_up = replace(ROWS[0], ttft_s=0.1, itl_s=0.01, output_tokens=101, e2e_latency_s=1.1)
    assert e2e_from_parts_s(made_up) == pytest.approx(1.1)
    assert e2e_from_parts_s(replace(made_up, itl_s=0.02)) != pytest.approx(1.1, rel=0.02)


# Closed-loop rows whose throughput the latencies do not give within 1.5 % (README, "Suspicious cells"): NIM's
# 20,000-token prompts from 25 users up, where a request outlives much of the measurement window; off by ≤ 11 %.
LITTLE_EXCEPTIONS = {("Llama 3.3 70B", 20000, c) for c in (25, 50, 100, 150, 200, 250)}
LITTLE_EXCEPTIONS |= {("Llama 3.1 8B", 20000, c) for c in (50, 100, 150, 200, 250)}


def test_closed_loop_throughput_is_littles_law_of_its_latencies():
    """N users each waiting for their request: throughput = N · output tokens / (TTFT + (output − 1) · ITL)."""
    checked = 0
    for row in ROWS:
        if row.mode != "concurrency" or None in (row.ttft_s, row.itl_s, row.output_tokens_per_s):
            continue
        expected = row.concurrency * row.output_tokens / e2e_from_parts_s(row)
        exception = (row.model, row.input_tokens, row.concurrency) in LITTLE_EXCEPTIONS
        tolerance = 0.11 if exception else 0.015
        assert row.output_tokens_per_s == pytest.approx(expected, rel=tolerance), row
        checked += 1
    assert checked >= 60


def test_rate_rows_requests_and_tokens_agree():
    """Output tokens/s = requests/s × output tokens per request, with requests/s printed as a whole number (± 0.5)
    and requests that stop early (TensorRT-LLM 0.14's 467/256 rows average 249 output tokens: up to 3 % fewer)."""
    checked = 0
    for row in ROWS:
        if row.requests_per_s is None or row.output_tokens_per_s is None:
            continue
        per_request = row.output_tokens_per_s / row.requests_per_s
        slack = 0.5 / row.requests_per_s  # a printed integer rounds the true value by up to half a request
        assert row.output_tokens * (1 - slack) * 0.97 <= per_request <= row.output_tokens * (1 + slack), row
        checked += 1
    assert checked >= 60


def active_weight_bytes(row):
    """The bytes of weights one forward pass must read at least once: the active parameters at the row's precision."""
    return PUBLISHED_SERVING_MODELS[row.model].active_params * WEIGHT_BYTES[row.weights]


def test_no_throughput_beats_the_gpus_compute():
    """Each request costs at least 2 FLOPs per active weight per token (prompt and output), run at the dense peak of
    its precision on every GPU: output tokens/s ≤ GPUs · peak / (2 N) · output / (input + output)."""
    for row in ROWS:
        if row.output_tokens_per_s is None or row.model not in PUBLISHED_SERVING_MODELS:
            continue
        peak = PUBLISHED_SERVING_GPUS[row.gpu].peak(PEAK_DTYPE[row.weights])
        share = row.output_tokens / (row.input_tokens + row.output_tokens)
        bound = row.gpus * peak / (2 * PUBLISHED_SERVING_MODELS[row.model].active_params) * share
        assert row.output_tokens_per_s <= bound, (row, bound)


def test_no_throughput_beats_the_gpus_memory_bandwidth_at_its_batch():
    """A decode step reads every active weight once at the datasheet's HBM bandwidth and yields at most one token per
    running sequence (≤ the concurrency or the batch): output tokens/s ≤ batch · GPUs · bandwidth / weight bytes."""
    checked = 0
    for row in ROWS:
        batch = row.concurrency or row.batch
        if batch is None or row.output_tokens_per_s is None or row.model not in PUBLISHED_SERVING_MODELS:
            continue
        bandwidth = PUBLISHED_SERVING_GPUS[row.gpu].hbm_bandwidth_bytes_per_s
        bound = batch * row.gpus * bandwidth / active_weight_bytes(row)
        assert row.output_tokens_per_s <= bound, (row, bound)
        checked += 1
    assert checked >= 60


def test_no_batch_finishes_faster_than_reading_its_weights_once_per_output_token():
    """A fixed batch decodes its output tokens in as many steps, each reading every active weight once:
    end-to-end latency ≥ output tokens × weight bytes / (GPUs · bandwidth)."""
    rows = [r for r in ROWS if r.e2e_latency_s is not None and r.model in PUBLISHED_SERVING_MODELS]
    for row in rows:
        bandwidth = PUBLISHED_SERVING_GPUS[row.gpu].hbm_bandwidth_bytes_per_s
        floor_s = row.output_tokens * active_weight_bytes(row) / (row.gpus * bandwidth)
        assert row.e2e_latency_s >= floor_s, (row, floor_s)
    assert len(rows) >= 9
