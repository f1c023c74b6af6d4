"""Lab 2, the global batch (course_lib.widgets.batch), in this process: each control swept over its range, the
examples and devices checked against b × N_acc × d and d × t × p worked out here, the figure updated in place and its
fast PNG against a full savefig."""

import matplotlib

matplotlib.use("Agg")

import io

import numpy as np
import pytest
from lab_checks import assert_plain_and_finite, assert_result_as_before, option_values, png_pixels

from course_lib import parallelism, units
from course_lib.widgets.batch import (
    DATA_PARALLEL_SIZES,
    DEFAULTS,
    PARALLEL_SIZES,
    SEQ_LENS,
    SHOWN_DEVICES_PER_REPLICA,
    SHOWN_REPLICAS,
    global_batch_lab,
)

BATCH_RESULT_KEYS = {"global_batch", "tokens_per_step", "devices", "examples_per_replica_per_step"}


# --- lab 2: global batch ---------------------------------------------------------------------------------------


def check_batch_result(lab):
    v, r = lab.values(), lab.result
    b, acc, d, t, p, s = (
        v[k]
        for k in ("micro_batch", "grad_accum_steps", "data_parallel", "tensor_parallel", "pipeline_parallel", "seq_len")
    )
    assert BATCH_RESULT_KEYS <= set(r)
    assert_plain_and_finite(r)
    assert r["global_batch"] == b * acc * d == parallelism.global_batch(b, acc, d)
    assert r["tokens_per_step"] == b * acc * d * s
    assert r["devices"] == d * t * p
    assert r["examples_per_replica_per_step"] == b * acc and r["devices_per_replica"] == t * p
    for value in (r["global_batch"], r["tokens_per_step"], r["devices"]):
        assert units.format_count(value) in lab.summary.value


def check_batch_figure(lab, figure):
    r = lab.result
    assert lab.figure is figure, "the figure was rebuilt"
    devices_top = lab.batch_figure.segments[0, "p"]
    examples_top = lab.batch_figure.segments[1, "d"]
    assert devices_top.get_y() + devices_top.get_height() == pytest.approx(r["devices"])
    assert examples_top.get_y() + examples_top.get_height() == pytest.approx(r["global_batch"])
    assert lab.batch_figure.devices_total.get_text() == units.format_count(r["devices"])
    assert lab.batch_figure.examples_total.get_text() == units.format_count(r["global_batch"])
    rows = min(r["data_parallel"], SHOWN_REPLICAS)
    columns = min(r["devices_per_replica"], SHOWN_DEVICES_PER_REPLICA)
    alpha = lab.batch_figure.cells.get_facecolor()[:, 3].reshape(SHOWN_REPLICAS, SHOWN_DEVICES_PER_REPLICA)
    assert (alpha > 0).sum() == rows * columns
    assert alpha[:rows, :columns].min() > 0
    examples = r["examples_per_replica_per_step"]
    assert lab.batch_figure.example_labels.get_texts() == [
        f"{row * examples + 1}–{(row + 1) * examples}" for row in range(rows)
    ]
    assert lab.batch_figure.row_labels.get_texts() == [f"replica {row}" for row in range(rows)]
    stages = r["pipeline_parallel"] if r["pipeline_parallel"] > 1 else 0
    assert len(lab.batch_figure.stage_labels.get_texts()) == min(stages, -(-columns // r["tensor_parallel"]))
    notes = " ".join(note.get_text() for note in lab.batch_figure.grid_notes)
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
def test_batch_control_ranges(batch, name, low, high, count):
    """The ranges of the card (every stop of each is swept in test_widgets_controls.py)."""
    stops = option_values(batch.controls[name])
    assert (stops[0], stops[-1], len(stops)) == (low, high, count)


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
    notes = " ".join(note.get_text() for note in lab.batch_figure.grid_notes)
    assert f"showing {SHOWN_DEVICES_PER_REPLICA} of the 4096 devices" in notes
    for name in lab.controls:
        lab.controls[name].value = option_values(lab.controls[name])[0]
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


# --- the typed result: one GlobalBatchReport per refresh, one model call, the same plain dict ----------------------


def batch_result_as_before(values: dict) -> dict:
    """``lab.result`` as the lab built it before it had a typed result, counted here by hand."""
    b, acc, d = values["micro_batch"], values["grad_accum_steps"], values["data_parallel"]
    t, p, seq_len = values["tensor_parallel"], values["pipeline_parallel"], values["seq_len"]
    return {
        "global_batch": b * acc * d,
        "tokens_per_step": b * acc * d * seq_len,
        "devices": d * t * p,
        "examples_per_replica_per_step": b * acc,
        "devices_per_replica": t * p,
        **{"micro_batch": b, "grad_accum_steps": acc, "data_parallel": d, "tensor_parallel": t},
        **{"pipeline_parallel": p, "seq_len": seq_len},
    }


def test_batch_result_is_one_frozen_global_batch_report(batch):
    import dataclasses

    report = batch.typed_result
    assert isinstance(report, parallelism.GlobalBatchReport) and isinstance(report.plan, parallelism.ParallelPlan)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.seq_len = 1  # pyright: ignore[reportAttributeAccessIssue]
    with pytest.raises(ValueError, match="seq_len must be an integer ≥ 1, got 0"):
        dataclasses.replace(report, seq_len=0)
    with pytest.raises(ValueError, match="plan must hold single sizes"):
        dataclasses.replace(report, plan=parallelism.ParallelPlan(data_parallel=np.array([1, 2])))
    assert not {"plan", "report", "batch"} & set(vars(batch))  # no side channel: the figure reads typed_result


def test_batch_dict_view_is_what_it_was_for_many_settings():
    lab = global_batch_lab()
    assert_result_as_before(lab, batch_result_as_before, moves=60, seed=2)
    assert [type(v) for v in lab.result.values()] == [int] * len(lab.result)


def test_batch_refresh_calls_the_model_once(batch):
    from unittest import mock

    with mock.patch.object(parallelism, "global_batch_report", wraps=parallelism.global_batch_report) as report:
        for name, value in (("micro_batch", 4), ("data_parallel", 128), ("seq_len", 4096)):
            report.reset_mock()
            batch.controls[name].value = value
            assert report.call_count == 1, name
    for name, value in DEFAULTS.items():
        batch.controls[name].value = value
