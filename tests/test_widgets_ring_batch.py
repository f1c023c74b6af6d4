"""Labs 1 and 2 in-process (no browser, no kernel): every control swept over its range, each result checked against
the formula recomputed here by hand and against course_lib, the figure updated in place, the summary in units, and
the dependent controls never reaching an invalid combination."""

import matplotlib

matplotlib.use("Agg")

import io  # noqa: E402
import math  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import traitlets  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from PIL import Image  # noqa: E402

from course_lib import collectives, parallelism, simulate, units  # noqa: E402
from course_lib.viz.collectives import _level_colors  # noqa: E402
from course_lib.widgets.batch import (  # noqa: E402
    DATA_PARALLEL_SIZES,
    PARALLEL_SIZES,
    SEQ_LENS,
    SHOWN_DEVICES_PER_REPLICA,
    SHOWN_REPLICAS,
    global_batch_lab,
)
from course_lib.widgets.ring import (  # noqa: E402
    BANDWIDTHS_BYTES_PER_S,
    LATENCIES_S,
    MAX_STEP_RANKS,
    PAYLOADS_BYTES,
    RANKS,
    ring_allreduce_lab,
)

RING_RESULT_KEYS = {
    "time_s",
    "latency_term_s",
    "bandwidth_term_s",
    "algbw_bytes_per_s",
    "busbw_bytes_per_s",
    "crossover_bytes",
    "phases",
    "regime",
}
BATCH_RESULT_KEYS = {"global_batch", "tokens_per_step", "devices", "examples_per_replica_per_step"}
POWER_OF_TWO_ONLY = {"recursive_doubling", "rabenseifner"}


def sweep(values):
    """All values when there are at most 30, else the first, the last and 10 spread between them."""
    values = list(values)
    if len(values) <= 30:
        return values
    picks = np.linspace(0, len(values) - 1, 12).round().astype(int)
    return [values[i] for i in sorted(set(picks))]


def options(control):
    return (
        [value for _, value in control.options]
        if hasattr(control, "options")
        else list(range(control.min, control.max + 1))
    )


def plain_and_finite(result):
    for key, value in result.items():
        assert type(value) in (int, float, str, bool), f"{key} is a {type(value).__name__}, not a plain value"
        if isinstance(value, float):
            assert math.isfinite(value), f"{key} = {value}"


def png_pixels(data: bytes) -> np.ndarray:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGBA"))


# --- lab 1: ring all-reduce ------------------------------------------------------------------------------------


def alpha_beta_by_hand(p, size, algorithm):
    """(phases n, wire bytes Q) of each all-reduce algorithm, from lesson 02's table, computed here without
    course_lib: ring 2(p−1), 2(p−1)/p·S; binomial tree 2⌈lg p⌉, 2⌈lg p⌉·S; recursive doubling lg p, lg p·S;
    Rabenseifner 2 lg p, 2(p−1)/p·S; double binary tree 2⌊lg p⌋, 2S + ⌊lg p⌋·S/64 (64 chunks per tree)."""
    lg = math.ceil(math.log2(p))
    depth = math.floor(math.log2(p))
    return {
        "ring": (2 * (p - 1), 2 * (p - 1) / p * size),
        "binomial_tree": (2 * lg, 2 * lg * size),
        "recursive_doubling": (lg, lg * size),
        "rabenseifner": (2 * lg, 2 * (p - 1) / p * size),
        "double_binary_tree": (2 * depth, (2 + depth / 64) * size),
    }[algorithm]


def check_ring_result(lab):
    values, result = lab.values(), lab.result
    p, size = values["ranks"], values["payload_bytes"]
    bandwidth, latency, algorithm = values["bandwidth_bytes_per_s"], values["latency_s"], values["algorithm"]
    phases, wire = alpha_beta_by_hand(p, size, algorithm)
    time_s = phases * latency + wire / bandwidth
    assert RING_RESULT_KEYS <= set(result)
    plain_and_finite(result)
    assert result["phases"] == phases
    assert result["latency_term_s"] == pytest.approx(phases * latency, rel=1e-12)
    assert result["bandwidth_term_s"] == pytest.approx(wire / bandwidth, rel=1e-12)
    assert result["time_s"] == pytest.approx(time_s, rel=1e-12)
    assert result["algbw_bytes_per_s"] == pytest.approx(size / time_s, rel=1e-12)
    assert result["busbw_bytes_per_s"] == pytest.approx(size / time_s * 2 * (p - 1) / p, rel=1e-12)
    assert result["crossover_bytes"] == pytest.approx(phases * latency * bandwidth / (wire / size), rel=1e-12)
    latency_term, bandwidth_term = phases * latency, wire / bandwidth
    tie = math.isclose(latency_term, bandwidth_term, rel_tol=1e-9)  # at the crossover: bandwidth-bound from there up
    assert result["regime"] == ("latency-bound" if latency_term > bandwidth_term and not tie else "bandwidth-bound")
    # ... and exactly what course_lib says.
    assert result["time_s"] == collectives.collective_time("all_reduce", p, size, bandwidth, latency, algorithm)
    assert result["busbw_bytes_per_s"] == collectives.busbw_bytes_per_s("all_reduce", p, size, result["time_s"])
    assert result["crossover_bytes"] == collectives.latency_bandwidth_crossover_bytes(
        "all_reduce", p, bandwidth, latency, algorithm
    )
    times = {
        a: collectives.collective_time("all_reduce", p, size, bandwidth, latency, a)
        for a in collectives.ALGORITHMS["all_reduce"]
        if a not in POWER_OF_TWO_ONLY or p & (p - 1) == 0
    }
    assert result["fastest_algorithm"] == min(times, key=times.get)


def check_ring_figure(lab, figure):
    r = lab.result
    assert lab.figure is figure, "the figure was rebuilt"
    np.testing.assert_allclose(np.ravel(lab._point.get_data()), [r["payload_bytes"], r["time_s"]])
    assert lab._point_label.get_text() == units.format_time(r["time_s"])
    curve = lab._curves[r["algorithm"]]
    assert curve.get_visible()
    np.testing.assert_allclose(
        curve.get_ydata(),
        collectives.collective_time(
            "all_reduce", r["ranks"], curve.get_xdata(), r["bandwidth_bytes_per_s"], r["latency_s"], r["algorithm"]
        ),
    )
    for algorithm, line in lab._curves.items():
        assert line.get_visible() == (algorithm not in POWER_OF_TWO_ONLY or r["ranks"] & (r["ranks"] - 1) == 0)
    inside = PAYLOADS_BYTES[0] < r["crossover_bytes"] < PAYLOADS_BYTES[-1]
    assert lab._crossover.get_visible() == inside
    if inside:
        assert list(lab._crossover.get_xdata()) == [r["crossover_bytes"]] * 2
    summary = lab.summary.value
    for key in ("time_s", "latency_term_s", "bandwidth_term_s"):
        assert units.format_time(r[key]) in summary
    for key in ("algbw_bytes_per_s", "busbw_bytes_per_s"):
        assert units.format_bandwidth(r[key]) in summary
    assert units.format_bytes(r["crossover_bytes"]) in summary and r["regime"] in summary
    assert "nan" not in summary.lower()
    assert lab.image.value[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def ring():
    return ring_allreduce_lab()


def test_ring_defaults_are_the_cards_numbers(ring):
    values = ring.values()
    assert (values["algorithm"], values["ranks"], values["step"]) == ("ring", 8, 0)
    assert [values["payload_bytes"], values["bandwidth_bytes_per_s"], values["latency_s"]] == pytest.approx(
        [100 * units.MB, 50 * units.GB, 5 * units.US], rel=1e-12
    )
    r = ring.result
    assert units.format_time(r["time_s"]) == "3.57 ms"
    assert units.format_time(r["latency_term_s"]) == "70 µs" and units.format_time(r["bandwidth_term_s"]) == "3.5 ms"
    assert units.format_bytes(r["crossover_bytes"]) == "2 MB"  # p·α·B = 8 × 5 µs × 50 GB/s
    assert units.format_bandwidth(r["busbw_bytes_per_s"]) == "49 GB/s"
    assert r["regime"] == "bandwidth-bound" and r["phases"] == 14


@pytest.mark.parametrize(
    "name, stops, low, high",
    [
        ("ranks", RANKS, 2, 1024),
        ("payload_bytes", PAYLOADS_BYTES, 1e3, 1e10),
        ("bandwidth_bytes_per_s", BANDWIDTHS_BYTES_PER_S, 1e9, 1e12),
        ("latency_s", LATENCIES_S, 1e-7, 1e-4),
    ],
)
def test_ring_control_ranges_and_unit_readouts(ring, name, stops, low, high):
    control = ring.controls[name]
    assert options(control)[0] == pytest.approx(low) and options(control)[-1] == pytest.approx(high)
    assert options(control) == sorted(options(control))
    labels = [label for label, _ in control.options]
    if name == "payload_bytes":
        assert "100 MB" in labels and "1 kB" in labels and "10 GB" in labels
    if name == "latency_s":
        assert "5 µs" in labels and "100 ns" in labels and "100 µs" in labels
    if name == "bandwidth_bytes_per_s":
        assert "50 GB/s" in labels and "1 TB/s" in labels


@pytest.mark.parametrize("name", ["payload_bytes", "bandwidth_bytes_per_s", "latency_s", "ranks", "step"])
def test_ring_sweep_each_control(ring, name):
    figure = ring.figure
    control = ring.controls[name]
    start = control.value
    for value in sweep(options(control)):
        control.value = value
        check_ring_result(ring)
        check_ring_figure(ring, figure)
    control.value = start


@pytest.mark.parametrize("ranks", RANKS)
def test_ring_every_algorithm_offered_for_every_rank_count(ring, ranks):
    figure = ring.figure
    ring.controls["ranks"].value = ranks
    offered = options(ring.controls["algorithm"])
    power_of_two = ranks & (ranks - 1) == 0
    assert offered == [a for a in collectives.ALGORITHMS["all_reduce"] if power_of_two or a not in POWER_OF_TWO_ONLY]
    for algorithm, payload in zip(offered, (PAYLOADS_BYTES[0], PAYLOADS_BYTES[-1], 1e6, 1e8), strict=False):
        ring.controls["algorithm"].value = algorithm
        ring.controls["payload_bytes"].value = payload
        check_ring_result(ring)
        check_ring_figure(ring, figure)
    step = ring.controls["step"]
    assert step.disabled == (ranks > MAX_STEP_RANKS)
    if ranks <= MAX_STEP_RANKS:
        assert step.max == 2 * (ranks - 1)
    ring.controls["algorithm"].value = "ring"
    ring.controls["payload_bytes"].value = 100 * units.MB


def test_ring_power_of_two_choice_falls_back_to_the_ring():
    lab = ring_allreduce_lab(algorithm="rabenseifner")
    lab.controls["ranks"].value = 6
    assert lab.controls["algorithm"].value == "ring" and lab.result["algorithm"] == "ring"
    check_ring_result(lab)
    with pytest.raises(traitlets.TraitError):  # not among the offered options: unreachable
        lab.controls["algorithm"].value = "recursive_doubling"
    lab.controls["ranks"].value = 16
    lab.controls["algorithm"].value = "recursive_doubling"
    check_ring_result(lab)
    assert "power-of-two" in lab.children[-3].value  # the note under the controls says why


def test_ring_step_view_follows_the_simulation():
    lab = ring_allreduce_lab(ranks=4)
    sim = simulate.simulate("all_reduce", 4, algorithm="ring", elements=4)
    levels = [to_rgba(c) for c in _level_colors(4)]
    for step in range(0, 7):
        lab.controls["step"].value = step
        faces = lab._cells.get_facecolor().reshape(MAX_STEP_RANKS, MAX_STEP_RANKS, 4)
        final = sim.holdings(step)
        for r in range(4):
            for c in range(4):
                if final[r, c]:
                    np.testing.assert_allclose(faces[r, c], levels[-1])  # the darkest shade: summed over all 4
        assert faces[4:, :, 3].max() == 0 and faces[:, 4:, 3].max() == 0  # unused cells hidden
        heads = lab._heads.get_xdata()
        assert len(heads) == (0 if step == 0 else 4)  # one transfer per rank per step
        assert lab.result["step_phase"] == (
            "before any transfer" if step == 0 else "reduce-scatter" if step <= 3 else "all-gather"
        )
        assert lab._ring_title.get_text().startswith(f"ring step {step} of 6")
    assert sim.holdings(6).all()
    lab.controls["ranks"].value = 16
    assert not lab._cells.get_visible() and all(text.get_visible() for text in lab._too_many)
    assert "up to 8 ranks" in " ".join(text.get_text() for text in lab._too_many)


def test_ring_partial_redraw_matches_a_full_draw():
    lab = ring_allreduce_lab()
    # Each change of ranks swaps the cached background of both panels (legend, grid labels); a stale one shows here.
    for changes in ({"ranks": 6, "step": 7}, {"ranks": 64, "payload_bytes": 1e3}, {"ranks": 2, "latency_s": 1e-4}):
        for name, value in changes.items():
            lab.controls[name].value = value
        blitted = png_pixels(lab.image.value).astype(int)
        buffer = io.BytesIO()
        lab.figure.savefig(buffer, format="png")
        full = png_pixels(buffer.getvalue()).astype(int)
        assert blitted.shape == full.shape
        assert np.abs(blitted - full).max() <= 2, f"stale background after {changes}"


def test_ring_regime_flips_at_the_crossover():
    lab = ring_allreduce_lab(payload_bytes=2 * units.MB)  # S* = p·α·B = 8 × 5 µs × 50 GB/s
    assert lab.result["regime"] == "bandwidth-bound" and "at the crossover" in lab.summary.value
    assert units.format_time(lab.result["latency_term_s"]) == units.format_time(lab.result["bandwidth_term_s"])
    lab.controls["payload_bytes"].value = 1.5 * units.MB
    assert lab.result["regime"] == "latency-bound" and "at the crossover" not in lab.summary.value


def test_ring_values_within_rounding_error_name_the_same_stop():
    lab = ring_allreduce_lab(latency_s=100 * units.US)  # 9.999999999999999e-05, the 1e-4 stop
    assert lab.values()["latency_s"] == 1e-4
    assert options(lab.controls["latency_s"]).count(1e-4) == 1
    lab.controls["latency_s"].value = 5 * units.US
    assert lab.controls["latency_s"].label == "5 µs"
    check_ring_result(lab)
    with pytest.raises(traitlets.TraitError):  # a payload between the stops is not a position of the slider
        lab.controls["payload_bytes"].value = 64.5 * units.MB


def test_ring_initial_values():
    lab = ring_allreduce_lab(ranks=10, payload_bytes=64 * units.MB, latency_s=1.5 * units.US)
    assert lab.values()["ranks"] == 10 and lab.values()["payload_bytes"] == 64 * units.MB  # kept, not snapped
    check_ring_result(lab)
    for bad in (
        {"ranks": 1},
        {"ranks": 2048},
        {"payload_bytes": 0},
        {"bandwidth_bytes_per_s": 1e13},
        {"latency_s": -1e-6},
        {"algorithm": "rabenseifner", "ranks": 6},
        {"algorithm": "tree"},
        {"step": 15},
        {"colour": "red"},
    ):
        with pytest.raises(ValueError):
            ring_allreduce_lab(**bad)


# --- lab 2: global batch ---------------------------------------------------------------------------------------


def check_batch_result(lab):
    v, r = lab.values(), lab.result
    b, acc, d, t, p, s = (
        v[k]
        for k in ("micro_batch", "grad_accum_steps", "data_parallel", "tensor_parallel", "pipeline_parallel", "seq_len")
    )
    assert BATCH_RESULT_KEYS <= set(r)
    plain_and_finite(r)
    assert r["global_batch"] == b * acc * d == parallelism.global_batch(b, acc, d)
    assert r["tokens_per_step"] == b * acc * d * s
    assert r["devices"] == d * t * p
    assert r["examples_per_replica_per_step"] == b * acc and r["devices_per_replica"] == t * p
    for value in (r["global_batch"], r["tokens_per_step"], r["devices"]):
        assert units.format_count(value) in lab.summary.value


def check_batch_figure(lab, figure):
    r = lab.result
    assert lab.figure is figure, "the figure was rebuilt"
    devices_top = lab._segments[0, "p"]
    examples_top = lab._segments[1, "d"]
    assert devices_top.get_y() + devices_top.get_height() == pytest.approx(r["devices"])
    assert examples_top.get_y() + examples_top.get_height() == pytest.approx(r["global_batch"])
    assert lab._devices_total.get_text() == units.format_count(r["devices"])
    assert lab._examples_total.get_text() == units.format_count(r["global_batch"])
    rows = min(r["data_parallel"], SHOWN_REPLICAS)
    columns = min(r["devices_per_replica"], SHOWN_DEVICES_PER_REPLICA)
    alpha = lab._cells.get_facecolor()[:, 3].reshape(SHOWN_REPLICAS, SHOWN_DEVICES_PER_REPLICA)
    assert (alpha > 0).sum() == rows * columns
    assert alpha[:rows, :columns].min() > 0
    examples = r["examples_per_replica_per_step"]
    assert lab._example_labels.get_texts() == [f"{row * examples + 1}–{(row + 1) * examples}" for row in range(rows)]
    assert lab._row_labels.get_texts() == [f"replica {row}" for row in range(rows)]
    stages = r["pipeline_parallel"] if r["pipeline_parallel"] > 1 else 0
    assert len(lab._stage_labels.get_texts()) == min(stages, -(-columns // r["tensor_parallel"]))
    notes = " ".join(note.get_text() for note in lab._grid_notes)
    assert (f"showing the first {SHOWN_REPLICAS} of {r['data_parallel']} replicas" in notes) == (
        r["data_parallel"] > SHOWN_REPLICAS
    )
    assert lab.image.value[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def batch():
    return global_batch_lab()


def test_batch_defaults_are_the_cards_example(batch):
    assert batch.values() == {
        "micro_batch": 8,
        "grad_accum_steps": 16,
        "data_parallel": 64,
        "tensor_parallel": 1,
        "pipeline_parallel": 1,
        "seq_len": 2048,
    }
    assert batch.result["global_batch"] == 8192 and batch.result["devices"] == 64
    assert batch.result["tokens_per_step"] == 8192 * 2048


@pytest.mark.parametrize(
    "name, low, high, count",
    [
        ("micro_batch", 1, 64, 64),
        ("grad_accum_steps", 1, 128, 128),
        ("data_parallel", 1, 1024, len(DATA_PARALLEL_SIZES)),
        ("tensor_parallel", 1, 64, len(PARALLEL_SIZES)),
        ("pipeline_parallel", 1, 64, len(PARALLEL_SIZES)),
        ("seq_len", 128, 131072, len(SEQ_LENS)),
    ],
)
def test_batch_sweep_each_control(batch, name, low, high, count):
    figure = batch.figure
    control = batch.controls[name]
    stops = options(control)
    assert (stops[0], stops[-1], len(stops)) == (low, high, count)
    start = control.value
    for value in sweep(stops):
        control.value = value
        check_batch_result(batch)
        check_batch_figure(batch, figure)
    control.value = start


def test_batch_tensor_and_pipeline_add_devices_not_examples(batch):
    figure = batch.figure
    before = dict(batch.result)
    for t, p in ((8, 1), (8, 4), (64, 64), (1, 1)):
        batch.controls["tensor_parallel"].value = t
        batch.controls["pipeline_parallel"].value = p
        check_batch_result(batch)
        check_batch_figure(batch, figure)
        assert batch.result["global_batch"] == before["global_batch"]
        assert batch.result["devices"] == before["devices"] * t * p
    batch.controls["data_parallel"].value = 128
    assert batch.result["global_batch"] == 2 * before["global_batch"]
    batch.controls["data_parallel"].value = 64


def test_batch_extremes_and_partial_redraw():
    lab = global_batch_lab(
        micro_batch=64,
        grad_accum_steps=128,
        data_parallel=1024,
        tensor_parallel=64,
        pipeline_parallel=64,
        seq_len=131072,
    )
    check_batch_result(lab)
    check_batch_figure(lab, lab.figure)
    assert lab.result["devices"] == 4194304 and lab.result["global_batch"] == 8388608
    notes = " ".join(note.get_text() for note in lab._grid_notes)
    assert f"showing {SHOWN_DEVICES_PER_REPLICA} of the 4096 devices" in notes
    for name in lab.controls:
        lab.controls[name].value = options(lab.controls[name])[0]
    check_batch_result(lab)
    assert lab.result["devices"] == 1 and lab.result["global_batch"] == 1
    blitted = png_pixels(lab.image.value).astype(int)
    buffer = io.BytesIO()
    lab.figure.savefig(buffer, format="png")
    assert np.abs(blitted - png_pixels(buffer.getvalue()).astype(int)).max() <= 2


def test_batch_initial_values():
    lab = global_batch_lab(data_parallel=10, seq_len=3000)
    assert lab.values()["data_parallel"] == 10 and lab.values()["seq_len"] == 3000
    check_batch_result(lab)
    for bad in (
        {"micro_batch": 0},
        {"grad_accum_steps": 129},
        {"data_parallel": 2048},
        {"tensor_parallel": 1.5},
        {"seq_len": 64},
        {"zero_stage": 1},
    ):
        with pytest.raises(ValueError):
            global_batch_lab(**bad)
