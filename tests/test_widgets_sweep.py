"""Lab 6's concurrency sweep (course_lib.widgets.sweep), in process: the lab against course_lib.serving called here,
its knee against the rule worked out from the throughputs, a move of the concurrency alone that simulates nothing,
the states the engine refuses drawn as their reason, and the figure's artists against the result. No browser and no
kernel."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from lab_checks import assert_plain_and_finite, assert_png_matches_savefig

from course_lib import hardware, serving
from course_lib.widgets import concurrency_sweep_lab
from course_lib.widgets import sweep as lab_module

SMALL = dict(model="Llama 3.1 8B", tensor_parallel=1, prompt_tokens=512, output_tokens=64)


def knee_by_hand(concurrencies, rates, fraction=0.9) -> int:
    """The first concurrency whose throughput reaches ``fraction`` of the most (the rule, written out)."""
    top = max(rates)
    return next(int(c) for c, rate in zip(concurrencies, rates, strict=True) if rate >= fraction * top)


def check_sweep_lab(lab) -> None:
    """What the lab shows at any position: the report of its controls, read the same way by the figure."""
    r, result, figure = lab.typed_result, lab.result, lab.sweep_figure
    assert_plain_and_finite(result)
    values = lab.values()
    assert (result["model"], result["concurrency"]) == (values["model"], values["concurrency"])
    if r.refusal is not None:
        assert result["refusal"] == r.refusal != "" and result["kv_blocks"] == 0
        assert len(figure.ttft.get_xdata()) == 0 and len(figure.throughput.get_xdata()) == 0
        assert "".join(figure.message.get_texts()).replace(" ", "").startswith("Notserved:")
        return
    assert result["refusal"] == "" and figure.message.get_texts() == []
    assert result["knee_concurrency"] == knee_by_hand(r.concurrencies, r.output_tokens_per_s)
    index = list(r.concurrencies).index(values["concurrency"])
    assert result["ttft_s"] == r.median_ttft_s[index] and result["itl_s"] == r.median_itl_s[index]
    assert result["tokens_per_s_per_device"] * values["tensor_parallel"] == pytest.approx(result["tokens_per_s"])
    assert np.array_equal(figure.ttft.get_ydata(), r.median_ttft_s)
    assert np.array_equal(figure.throughput.get_ydata(), r.output_tokens_per_s)
    assert list(figure.current.get_xdata()) == [values["concurrency"]] * 2
    assert list(figure.current.get_ydata()) == [result["ttft_s"], result["itl_s"]]
    assert list(figure.current_throughput.get_ydata()) == [result["tokens_per_s"]]
    assert [line.get_xdata()[0] for line in figure.knee_lines] == [result["knee_concurrency"]] * 2
    low, high = figure.latency_ax.get_ylim()
    assert low <= min(r.median_itl_s) and max(r.median_ttft_s) <= high  # every point in view
    assert max(r.output_tokens_per_s) <= figure.throughput_ax.get_ylim()[1]


def test_the_lab_shows_the_report_of_its_controls():
    lab = concurrency_sweep_lab(**SMALL)
    check_sweep_lab(lab)
    values = lab.values()
    node = lab_module.NODES[values["device"]]
    cluster = hardware.Cluster("replica", node.accelerator, 8, 1, node.intra_node_link, node.inter_node_link)
    report = serving.concurrency_sweep_report(
        lab_module.MODELS[values["model"]],
        cluster,
        1,
        prompt_tokens=512,
        output_tokens=64,
        concurrency=values["concurrency"],
    )
    assert np.array_equal(report.output_tokens_per_s, lab.typed_result.output_tokens_per_s)
    assert report.knee_concurrency == lab.result["knee_concurrency"]


def test_moving_only_the_concurrency_simulates_nothing(monkeypatch):
    lab = concurrency_sweep_lab(**SMALL)
    runs = []
    original = serving.scheduler.simulate_engine
    monkeypatch.setattr(
        serving.scheduler, "simulate_engine", lambda *a, **k: runs.append(k["concurrency"]) or original(*a, **k)
    )
    before = lab.typed_result.sweep
    for concurrency in (1, 512, 8, 64):
        lab.controls["concurrency"].value = concurrency
        check_sweep_lab(lab)
        assert lab.typed_result.sweep is before
    assert runs == []
    lab.controls["output_tokens"].value = 32  # a new configuration: one run per concurrency
    assert sorted(runs) == sorted(serving.SWEEP_CONCURRENCIES)


@pytest.mark.parametrize(
    "state, reason",
    [
        ({"device": "A100 SXM 80GB", "weights": "fp8"}, "fp8"),  # the A100 has no FP8 arithmetic
        ({"device": "A100 SXM 80GB", "kv_cache": "fp8"}, "fp8"),
        ({"model": "Llama 3.1 405B", "tensor_parallel": 1}, ""),  # 810 GB of weights on one GPU
    ],
)
def test_a_configuration_the_engine_refuses_is_drawn_not_raised(state, reason):
    lab = concurrency_sweep_lab(**state)
    check_sweep_lab(lab)
    assert lab.result["refusal"] and reason in lab.result["refusal"]
    assert lab.result["knee_concurrency"] == 0 and lab.result["tokens_per_s"] == 0.0
    lab.controls["concurrency"].value = 1  # still no exception, still the reason
    check_sweep_lab(lab)
    assert_png_matches_savefig(lab)


def test_a_request_longer_than_the_whole_cache_is_refused_with_the_block_count():
    # the lab's first bf16 replica whose cache holds fewer blocks than one of its longest requests needs:
    # 32,768 + 512 tokens, ⌈33,280 / 16⌉ = 2,080 blocks (Llama 3.1 70B on 2 H100s at the engine's defaults)
    def held(name, t):
        try:
            return serving.engine.kv_cache_blocks(lab_module.MODELS[name], hardware.H100, t, block_size_tokens=16)
        except ValueError:  # the weights alone do not fit: refused by the engine, another test's case
            return 0

    short = [
        (name, t, held(name, t))
        for name, model in lab_module.MODELS.items()
        for t in lab_module.tensor_parallel_options(model)
        if 0 < held(name, t) < 2080
    ]
    assert short, "no configuration of the lab runs out of KV blocks for its longest request"
    name, t, blocks = short[0]
    lab = concurrency_sweep_lab(model=name, tensor_parallel=t, prompt_tokens=32768, output_tokens=512)
    check_sweep_lab(lab)
    assert lab.result["refusal"] == (
        f"one request of 33,280 tokens needs 2,080 KV blocks of 16 tokens; the memory left after the weights holds "
        f"{blocks:,}"
    )


def test_tensor_parallel_stays_in_one_node_and_splits_the_heads():
    for name, model in lab_module.MODELS.items():
        options = lab_module.tensor_parallel_options(model)
        assert options and max(options) <= 8, name
        assert all(model.heads % t == 0 for t in options), name
    lab = concurrency_sweep_lab(**SMALL)
    assert [value for _, value in lab.controls["tensor_parallel"].options] == [1, 2, 4, 8]
