"""Lab 5 (course_lib.widgets.partition, the partition explorer), in process: the contract (.controls, .result,
.typed_result, .figure), the result checked against budget.partition_report recomputed here (``check``, which
tests/test_widgets_controls.py runs at every stop of every control), the dependent options, and the misconception
(t from 8 to 16 on a multi-node cluster). No browser and no kernel."""

from __future__ import annotations

import random
import re

import matplotlib

matplotlib.use("Agg")

import pytest
from lab_checks import assert_plain_and_finite, assert_png_matches_savefig, option_values

from course_lib import budget, parallelism, units
from course_lib.viz.partition import MAX_ROWS, expert_ranks
from course_lib.widgets import partition as partition_module
from course_lib.widgets import partition_lab

REQUIRED = (
    "memory_bytes_per_device",
    "fits",
    "step_time_s",
    "exposed_communication_s",
    "bubble_s",
    "binding_constraint",
    "tokens_per_s",
    "mfu",
)
# What the lab adds to PartitionReport.as_dict(): its own choices and the tensor-parallel link.
LAB_KEYS = ("cluster", "schedule", "recompute", "sequence_parallel", "tensor_link", "tensor_time_s")
TRANSFER_KEYS = {
    "axis",
    "tensor",
    "op",
    "payload_bytes",
    "calls_per_step",
    "link",
    "link_family",
    "time_s",
    "exposed_s",
}


def expected(values: dict) -> dict:
    model, cluster = partition_module.model_for(values), partition_module.cluster_for(values)
    plan = parallelism.ParallelPlan(
        **{
            k: values[k]
            for k in (
                "data_parallel",
                "tensor_parallel",
                "pipeline_parallel",
                "zero_stage",
                "micro_batch",
                "grad_accum_steps",
                "recompute",
                "sequence_parallel",
                "schedule",
                "virtual_stages",
                "context_parallel",
                "context_parallel_kind",
                "expert_parallel",
            )
        }
    )
    assert plan.devices <= cluster.devices
    framework = None if values["framework"] == partition_module.IDEAL else values["framework"]
    return budget.partition_report(model, plan, cluster, framework=framework)


def check(lab):
    values, result = lab.values(), lab.result
    assert_plain_and_finite(result)
    for key in REQUIRED:
        assert key in result, key
    # the typed result is the report; the plain result its as_dict() and the lab's choices
    report = lab.typed_result
    assert isinstance(report, budget.PartitionReport)
    assert {k: v for k, v in result.items() if k not in LAB_KEYS} == report.as_dict()
    assert {k: result[k] for k in LAB_KEYS} == {
        "cluster": values["cluster"],
        "schedule": values["schedule"],
        "recompute": values["recompute"],
        "sequence_parallel": values["sequence_parallel"],
        "tensor_link": report.tensor_link,
        "tensor_time_s": report.tensor_time_s,
    }
    want = expected(values).as_dict()
    for key in REQUIRED:
        assert result[key] == (pytest.approx(want[key], rel=1e-12) if isinstance(want[key], float) else want[key])
    assert len(result["transfers"]) == len(want["transfers"])
    for got, reference in zip(result["transfers"], want["transfers"], strict=True):
        assert TRANSFER_KEYS <= set(got)
        assert_plain_and_finite(got)
        assert got == reference
    # the figure holds the result: one table row per transfer, the step bar adds up to the step
    figure = lab.partition_figure
    listed = min(len(result["transfers"]), MAX_ROWS)
    assert figure.marker_numbers.get_texts() == [str(k) for k in range(1, listed + 1)]
    assert sum(box[2] for box in figure.step_segments.boxes) == pytest.approx(1.0, rel=1e-9)
    assert units.format_time(result["step_time_s"]) in lab.summary.value
    assert not re.search(r"\bnan\b", lab.summary.value.lower())  # "nanotron" is a name


@pytest.fixture(scope="module")
def shared_lab():
    return partition_lab()


def reset(lab):
    """Back to the defaults: the sizes down first (every size 1 is always offered), the nodes last."""
    for name in ("expert_parallel", "context_parallel", "data_parallel", "tensor_parallel", "pipeline_parallel"):
        lab.controls[name].value = 1
    defaults = dict(partition_module.DEFAULTS)
    nodes = defaults.pop("nodes")
    for name, value in defaults.items():
        lab.controls[name].value = value
    lab.controls["nodes"].value = nodes
    assert lab.values() == partition_module.DEFAULTS
    return lab


@pytest.fixture
def lab(shared_lab):
    return reset(shared_lab)


def test_contract_and_defaults(lab):
    assert set(lab.controls) == set(partition_module.DEFAULTS)
    check(lab)
    assert lab.result["tensor_link"] == "NVLink"
    # the tensor-parallel collectives by hand: 2 all-reduces forward and 2 backward per layer and micro-batch,
    # 12 layers per stage × 64 micro-batches; per step the sum of the report's tensor rows
    rows = [x for x in lab.result["transfers"] if x["axis"] == "tensor"]
    assert [x["calls_per_step"] for x in rows] == [2 * 12 * 64] * 2
    assert lab.result["tensor_time_s"] == pytest.approx(sum(x["time_s"] for x in rows), rel=1e-12)
    assert units.format_time(lab.result["step_time_s"]) == "17.3 s"
    assert_png_matches_savefig(lab)


def test_dependent_options_keep_every_position_valid(lab):
    controls = lab.controls
    controls["schedule"].value = "interleaved"
    assert option_values(controls["virtual_stages"]) == [2, 3, 4, 6]  # divisors ≥ 2 of the 12 layers per stage
    assert all(m % controls["pipeline_parallel"].value == 0 for m in option_values(controls["grad_accum_steps"]))
    check(lab)
    controls["pipeline_parallel"].value = 1  # no interleaving on one stage
    assert "interleaved" not in controls["schedule"].options and controls["virtual_stages"].value == 1
    check(lab)
    controls["model"].value = parallelism.LLAMA3_8B.name  # 32 heads: t ≤ 32
    assert max(option_values(controls["tensor_parallel"])) == 32
    controls["tensor_parallel"].value = 32
    assert controls["nodes"].value * 8 >= 32 * controls["data_parallel"].value * controls["pipeline_parallel"].value
    check(lab)
    controls["model"].value = partition_module.CUSTOM
    controls["hidden"].value = 5120  # 40 heads divide it; 96 does not
    assert 96 not in option_values(controls["heads"]) and 40 in option_values(controls["heads"])
    check(lab)


def test_the_custom_model_sliders_show_only_for_the_custom_model(lab):
    custom = ("layers", "hidden", "heads")
    assert [lab.controls[name].layout.display for name in custom] == ["none"] * 3
    assert lab.controls["tensor_parallel"].layout.display != "none"  # each control has a layout of its own
    lab.controls["model"].value = partition_module.CUSTOM
    assert [lab.controls[name].layout.display for name in custom] == [""] * 3
    assert "shows sliders for its layers, hidden size and heads" in lab.summary.value
    lab.controls["model"].value = parallelism.LLAMA3_8B.name
    assert [lab.controls[name].layout.display for name in custom] == ["none"] * 3


def test_random_walk_never_raises(lab):
    rng = random.Random(6)
    names = list(partition_module.DEFAULTS)
    for _ in range(60):
        name = rng.choice(names)
        options = option_values(lab.controls[name])
        lab.controls[name].value = rng.choice(options)
        values = lab.values()
        devices = values["data_parallel"] * values["tensor_parallel"] * values["pipeline_parallel"]
        assert devices * values["context_parallel"] <= values["nodes"] * 8
        assert (values["data_parallel"] * values["context_parallel"]) % values["expert_parallel"] == 0
        assert_plain_and_finite(lab.result)
    check(lab)


def test_tensor_parallel_past_the_node_moves_to_infiniband(lab):
    """The misconception: t from 8 to 16 on a multi-node cluster puts the tensor-parallel collectives on
    InfiniBand; their exposed time grows although each group has twice the GPUs."""
    before = dict(lab.result)
    lab.controls["tensor_parallel"].value = 16
    after = lab.result
    assert (before["tensor_link"], after["tensor_link"]) == ("NVLink", "InfiniBand")
    assert lab.controls["nodes"].value == 16  # 128 GPUs need 16 nodes
    assert after["exposed_communication_s"] > before["exposed_communication_s"]
    # 903 ms against 650 ms per row: NCCL's flat ring over 16 ranks with LL128 (588 µs a call) against its ring over 8
    # with Simple (423 µs)
    assert after["exposed_tensor_s"] / before["exposed_tensor_s"] == pytest.approx(1.39, rel=1e-2)
    assert lab.partition_figure.network_rows.get_texts()[:2] == ["InfiniBand", "InfiniBand"]
    # on the same 64 GPUs (p = 4) the step is slower than with t = 8
    lab.controls["pipeline_parallel"].value = 4
    assert lab.result["step_time_s"] > before["step_time_s"]


@pytest.mark.parametrize(
    "initial, message",
    [
        ({"tensor_parallel": 5}, r"tensor_parallel must be one of \[1, 2, 4, 8, 16, 24, 32, 48\] \(for model="),
        # values that crashed inside the old joint settle (an empty min(), a None times an int, log of -1)
        ({"data_parallel": 1000}, r"data_parallel must be one of \[1, 2, .*, 64\] \(for tensor_parallel=8, context"),
        ({"data_parallel": None}, r"data_parallel must be one of .*got None"),
        ({"tensor_parallel": -1}, r"tensor_parallel must be one of .*got -1"),
        ({"data_parallel": 512, "pipeline_parallel": 96}, r"data_parallel must be one of \[1, 2, 3, 4\] "),
        ({"tensor_parallel": 16, "nodes": 8}, r"nodes must be one of \[16, 24, .*got 8"),
        ({"model": "custom", "hidden": 5120, "heads": 96}, r"heads must be one of \[8, 16, 32, 40, 64, 128, 160\]"),
        ({"schedule": "interleaved", "pipeline_parallel": 1}, r"schedule must be one of \['1f1b', 'gpipe'\]"),
        ({"gpus": 8}, r"unknown control\(s\) \['gpus'\]"),
    ],
)
def test_bad_initial_values_are_refused(initial, message):
    with pytest.raises(ValueError, match=message):
        partition_lab(**initial)


def test_a_default_the_given_values_rule_out_moves_as_its_control_would():
    """Only the learner's own values are held to the stops: a default they rule out moves as the slider would."""
    lab = partition_lab(tensor_parallel=16)  # 128 GPUs: the default 8 nodes grow to 16
    assert (lab.values()["nodes"], lab.result["devices"], lab.result["tensor_link"]) == (16, 128, "InfiniBand")
    lab = partition_lab(schedule="interleaved", pipeline_parallel=16)  # v from 1 to 2 of 2, 3, 6 (6 layers per stage)
    assert (lab.values()["virtual_stages"], lab.values()["grad_accum_steps"]) == (2, 64)
    with pytest.raises(ValueError, match=r"virtual_stages must be one of \[2, 3, 6\]"):
        partition_lab(schedule="interleaved", pipeline_parallel=16, virtual_stages=1)


def test_a_move_pushes_every_control_that_depends_on_it(lab):
    """t up on a plan of 4096 GPUs pushes d down (d·t·p ≤ 4096), which the node count then follows; p down to 1
    takes the interleaved schedule away, and with it v and the multiples of p."""
    controls = lab.controls
    controls["data_parallel"].value = 64  # 64 · 8 · 8 = 4096 GPUs on 512 nodes
    assert controls["nodes"].value == 512
    controls["tensor_parallel"].value = 16
    assert (controls["data_parallel"].value, controls["nodes"].value) == (32, 512)
    check(lab)
    controls["schedule"].value = "interleaved"
    controls["virtual_stages"].value = 4
    controls["pipeline_parallel"].value = 1
    assert (controls["schedule"].value, controls["virtual_stages"].value) == ("1f1b", 1)
    assert option_values(controls["grad_accum_steps"]) == list(partition_module.GRAD_ACCUM_STEPS)
    check(lab)


def test_one_refresh_evaluates_the_model_once(lab):
    """Moving t runs the plan check, the memory and the step once each: one partition_report, nothing beside it."""
    import sys

    calls = {}
    watched = {"partition_report", "check_plan_for_model", "_ideal_memory_breakdown", "_ideal_step_time"}

    def watch(frame, event, _arg):
        if event == "call" and frame.f_code.co_name in watched:
            calls[frame.f_code.co_name] = calls.get(frame.f_code.co_name, 0) + 1

    sys.setprofile(watch)
    try:
        lab.controls["tensor_parallel"].value = 4
    finally:
        sys.setprofile(None)
    assert calls == dict.fromkeys(watched, 1)


def test_cluster_choice_inverts_cluster_for():
    for choice in partition_module.CLUSTERS:
        for nodes in (1, 16):
            cluster = partition_module.cluster_for({"cluster": choice, "nodes": nodes})
            assert partition_module.cluster_choice(cluster) == choice


# ---- experts and the sequence split (issue 26 item 6) ------------------------------------------------------------

H100_NODES = "nodes of 8 H100 (NVLink 4, InfiniBand NDR)"
MIXTRAL_ONE_NODE = dict(  # e = 8 at t = 1: the expert ranks are 8 neighbouring GPUs
    model="Mixtral 8x7B", cluster=H100_NODES, tensor_parallel=1, pipeline_parallel=4, expert_parallel=8,
    data_parallel=8, nodes=4, grad_accum_steps=16, recompute="full",
)  # fmt: skip
# t = 2 on the same 32 GPUs: the expert ranks sit 2 apart (Megatron-Core's tp-ep order), over 16 GPUs, two nodes
MIXTRAL_TWO_NODES = {**MIXTRAL_ONE_NODE, "tensor_parallel": 2, "pipeline_parallel": 2, "sequence_parallel": True}


def expert_rows(lab):
    return [x for x in lab.result["transfers"] if x["axis"] == "expert"]


def test_moe_models_offer_the_expert_ranks_they_allow(lab):
    controls = lab.controls
    assert {parallelism.MIXTRAL_8X7B.name, parallelism.MIXTRAL_8X22B.name} <= set(option_values(controls["model"]))
    assert option_values(controls["expert_parallel"]) == [1]  # GPT-3 is dense
    controls["model"].value = parallelism.MIXTRAL_8X7B.name
    assert option_values(controls["expert_parallel"]) == [1, 2, 4, 8]  # the divisors of its 8 experts
    controls["expert_parallel"].value = 8  # e must divide d·c: d moves from 1 to 8, the nodes to 64 GPUs' worth
    assert controls["data_parallel"].value == 8 and all(d % 8 == 0 for d in option_values(controls["data_parallel"]))
    assert controls["nodes"].value * 8 >= 8 * 8 * 8
    check(lab)
    controls["context_parallel"].value = 2  # now d·c = 2d: d = 4 is enough for e = 8
    assert 4 in option_values(controls["data_parallel"])
    check(lab)
    controls["model"].value = parallelism.DEEPSEEK_MOE_16B.name  # 64 experts
    assert option_values(controls["expert_parallel"])[-1] == 64
    check(lab)


def test_all_to_all_rows_carry_the_tokens_times_k_times_h():
    """Each all-to-all moves a rank's tokens × k × h × 2 bytes (capacity factor 1), (e − 1)/e of which leave the GPU:
    Mixtral 8x7B (s = 32,768, k = 2, h = 4096) with b = 1 at t = 1: 32768 · 2 · 4096 · 2 B = 537 MB per call."""
    lab = partition_lab(**MIXTRAL_ONE_NODE)
    rows = expert_rows(lab)
    assert [x["tensor"] for x in rows] == [
        "expert dispatch (all-to-all), forward",
        "expert combine (all-to-all), forward",
        "expert dispatch (all-to-all), backward",
        "expert combine (all-to-all), backward",
    ]
    payload = 32768 * 2 * 4096 * 2
    assert {x["payload_bytes"] for x in rows} == {payload}
    # 8 layers per stage × 16 micro-batches, the forward twice (full recomputation)
    assert [x["calls_per_step"] for x in rows] == [256, 256, 128, 128]
    transfer = next(x for x in lab.typed_result.transfers if x.transfer.axis == "expert").transfer
    assert transfer.bytes_sent_per_device / transfer.calls_per_step == pytest.approx(payload * 7 / 8, rel=1e-12)
    assert {x["group_size"] for x in rows} == {8}
    assert lab.result["exposed_expert_s"] == pytest.approx(sum(x["exposed_s"] for x in rows), rel=1e-12)
    # with t = 2 each tensor-parallel rank dispatches half of its tokens' rows
    assert {x["payload_bytes"] for x in expert_rows(partition_lab(**MIXTRAL_TWO_NODES))} == {payload / 2}


def test_the_all_to_all_moves_to_the_network_when_the_expert_ranks_span_two_nodes():
    one, two = partition_lab(**MIXTRAL_ONE_NODE), partition_lab(**MIXTRAL_TWO_NODES)
    assert {(x["levels"], x["link_family"]) for x in expert_rows(one)} == {("in node", "NVLink")}
    assert {(x["levels"], x["link_family"]) for x in expert_rows(two)} == {("in node + across nodes", "InfiniBand")}
    # half the bytes per call, yet each call takes longer: 1.27 ms on NVLink against 2.69 ms over InfiniBand
    per_call = [units.format_time(expert_rows(lab)[0]["time_per_call_s"]) for lab in (one, two)]
    assert per_call == ["1.27 ms", "2.69 ms"]
    # the figure: the 8 experts on ranks 0-7, a red cut between ranks 3 and 4 only when they span two nodes
    assert expert_ranks(8, 8, 2, 8)[3:5] == [(3, 0), (4, 1)]
    assert len(one.partition_figure.expert_cuts.get_segments()) == 0
    assert len(two.partition_figure.expert_cuts.get_segments()) == 1
    assert one.partition_figure.expert_label.get_text() == "e = 8 ranks on node 0: all-to-all on NVLink"
    assert two.partition_figure.expert_label.get_text() == "e = 8 ranks on nodes 0–1: all-to-all on InfiniBand"
    assert "expert all-to-alls on <b>InfiniBand</b>: 4.14 s per step" in two.summary.value
    assert_png_matches_savefig(two)


def test_context_parallel_offers_the_all_to_all_form_only_where_heads_allow(lab):
    controls = lab.controls
    assert option_values(controls["context_parallel_kind"]) == ["ring"]  # c = 1
    controls["context_parallel"].value = 4  # GPT-3: 96 heads / t = 8 = 12 per rank, 4 divides them
    assert option_values(controls["context_parallel_kind"]) == ["ring", "all_gather", "all_to_all"]
    controls["context_parallel_kind"].value = "all_to_all"
    check(lab)
    rows = [x for x in lab.result["transfers"] if x["axis"] == "context"]
    assert len(rows) == 4 and {x["op"] for x in rows} == {"all_to_all"}
    controls["context_parallel"].value = 32  # 12 heads per rank: the ring and the all-gather form
    assert controls["context_parallel_kind"].value == "ring"
    assert option_values(controls["context_parallel_kind"]) == ["ring", "all_gather"]
    rows = [x for x in lab.result["transfers"] if x["axis"] == "context"]
    assert [x["op"] for x in rows] == ["send_recv", "send_recv"]
    controls["context_parallel_kind"].value = "all_gather"
    check(lab)
    rows = [x for x in lab.result["transfers"] if x["axis"] == "context"]
    assert [x["op"] for x in rows] == ["all_gather", "all_gather", "reduce_scatter"]
    controls["context_parallel_kind"].value = "ring"
    assert lab.values()["nodes"] * 8 >= 8 * 8 * 32  # t·c·p GPUs
    check(lab)


# ---- a framework (issue 24) -----------------------------------------------------------------------------------------


def test_the_framework_dropdown_runs_the_plan_as_that_framework(lab):
    controls = lab.controls
    assert option_values(controls["framework"]) == [partition_module.IDEAL, *parallelism.FRAMEWORKS]
    assert controls["framework"].value == "ideal" and lab.result["framework"] == "ideal model"
    ideal = dict(lab.result)
    controls["framework"].value = "megatron"
    check(lab)
    megatron = lab.result
    assert megatron["framework"] == parallelism.FRAMEWORKS["megatron"].name and megatron["not_run"] == ""
    # Megatron-LM hides the backward tensor-parallel all-reduces: half of the 1.31 s is exposed (forward only)
    rows = [x for x in megatron["transfers"] if x["axis"] == "tensor"]
    assert [x["exposed_s"] == x["time_s"] for x in rows] == [True, False]
    assert megatron["exposed_tensor_s"] == pytest.approx(rows[0]["time_s"], rel=1e-12)
    assert megatron["step_time_s"] != ideal["step_time_s"] and megatron["framework_bytes"] > 0
    assert "Megatron-LM hides 657 ms of the 1.35 s its transfers take: the backward tensor-parallel" in (
        lab.summary.value
    )
    assert "as Megatron-LM runs it" in lab.partition_figure.subtitle.get_text()
    controls["framework"].value = "nanotron"  # overlaps none of this plan's transfers (d = 1, 1F1B)
    assert "nanotron hides 0 s of the 1.35 s its transfers take (it overlaps none" in lab.summary.value


def test_a_plan_the_framework_does_not_run_is_a_state_not_an_error(lab):
    controls = lab.controls
    controls["framework"].value = "megatron"
    controls["zero_stage"].value = 3  # with p = 8: Megatron-LM has no ZeRO-3 with a pipeline
    check(lab)
    assert lab.result["not_run"].startswith("zero_stage=3 with pipeline_parallel=8 is not run by Megatron-LM: it ")
    assert lab.result["framework"] == "ideal model"
    assert "is not run by Megatron-LM" in lab.summary.value and "the ideal model's" in lab.summary.value
    assert "does not run this plan" in lab.partition_figure.subtitle.get_text()
    controls["framework"].value = "fsdp2-pipeline"  # torchtitan runs FSDP with pipelining
    assert lab.result["not_run"] == "" and lab.result["framework"].startswith("PyTorch FSDP2 with pipelining")
    check(lab)
