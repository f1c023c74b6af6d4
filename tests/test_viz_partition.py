"""course_lib.viz.partition.PartitionFigure: what the figure holds after update(report), a budget.PartitionReport,
for several plans."""

from dataclasses import replace

import matplotlib

matplotlib.use("Agg")

import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text

from course_lib import budget, hardware, parallelism, units
from course_lib.viz.partition import (
    KEYED_SEGMENTS,
    MAX_STAGES_DRAWN,
    STEP_SEGMENTS,
    PartitionFigure,
    drawn_stages,
    figure_texts,
    sequence_halves,
    transfer_row,
)

A100_X16 = replace(hardware.DGX_A100, nodes=16)
PLANS = [
    parallelism.ParallelPlan(tensor_parallel=8, pipeline_parallel=8, grad_accum_steps=64, zero_stage=1),
    parallelism.ParallelPlan(
        data_parallel=2, tensor_parallel=16, pipeline_parallel=4, grad_accum_steps=32, sequence_parallel=True
    ),
    parallelism.ParallelPlan(
        data_parallel=4, tensor_parallel=2, pipeline_parallel=16, grad_accum_steps=32, zero_stage=3
    ),
    parallelism.ParallelPlan(data_parallel=16, grad_accum_steps=4, zero_stage=3),
]


@pytest.fixture(scope="module")
def live():
    return PartitionFigure(Figure(figsize=(10, 5.0), dpi=72))


@pytest.mark.parametrize("plan", PLANS, ids=lambda p: f"d{p.data_parallel}t{p.tensor_parallel}p{p.pipeline_parallel}")
def test_figure_holds_the_report(live, plan):
    model = parallelism.GPT3_175B if plan.tensor_parallel * plan.pipeline_parallel > 1 else parallelism.GPT2_1_5B
    report = budget.partition_report(model, plan, A100_X16)
    live.update(report)
    rows = [transfer_row(k, x) for k, x in enumerate(report.transfers, start=1)]
    assert len(rows) == len(report.transfers) > 0
    # every boundary tensor is a row: op, payload per call, calls per step, link, time per step, exposed
    for column in (0, 1, 2, 3, 4, 5, 7, 8):
        assert live.columns[column] == [row[column] for row in rows]
    drawn_texts = live.table_left.get_texts() + live.table_right.get_texts()
    for column in (2, 3, 4, 7):
        assert all(text in drawn_texts for text in live.columns[column])
    links = live.nvlink_rows.get_texts() + live.network_rows.get_texts()
    assert sorted(links) == sorted(row[6] for row in rows)
    assert live.network_rows.get_texts() == [row[6] for row in rows if row[6] == "InfiniBand"]
    # one numbered marker per boundary tensor, in the axis colour
    assert live.marker_numbers.get_texts() == [str(k) for k in range(1, len(rows) + 1)]
    for axis, line in live.marker_colors.items():
        assert len(line.get_xdata()) == sum(x.transfer.axis == axis for x in report.transfers)
    # the model: one box per drawn stage, t slices inside each (at most 16 drawn), node cuts when t > 8
    p, t = plan.pipeline_parallel, plan.tensor_parallel
    drawn = [s for s in drawn_stages(p) if s is not None]
    assert len(live.stage_bounds) == len(drawn) <= MAX_STAGES_DRAWN
    assert len(live.model_boxes.boxes) == len(drawn) + 2  # and the embedding and the head
    assert len(live.stripes.get_segments()) == len(drawn) * (min(t, 16) - 1)
    assert len(live.node_cuts.get_segments()) == len(drawn) * max(t // 8 - 1, 0)
    assert len(live.replicas.boxes) == min(plan.data_parallel - 1, 3)
    # memory bars: each component's share of the capacity
    capacity = hardware.A100.hbm_capacity_bytes
    start = 0.0  # the axis ends at twice the capacity: what lies beyond is cut
    # every component the memory bars stack (logits and framework are 0 in the ideal model the explorer uses)
    components = ("parameters", "gradients", "optimizer_state", "activations", "logits", "framework")
    assert report.memory.logits == report.memory.framework == 0.0
    for component, (x, _, width, _) in zip(components, live.memory_segments.boxes, strict=True):
        share = getattr(report.memory, component) / capacity
        assert x == pytest.approx(min(start, 2.0), rel=1e-9)
        assert width == pytest.approx(max(0.0, min(share, 2.0 - start)), rel=1e-9, abs=1e-12)
        start += share
    assert ("fits" if report.memory.total <= capacity else "does not fit") in live.memory_text.get_text()
    # step bar: the five terms as shares of the step, adding up to the whole
    step = report.step
    terms = (
        step.compute_s,
        step.bubble_s,
        step.exposed_s["tensor"],
        step.exposed_s["data"],
        step.exposed_s["pipeline"],
        0.0,  # no context or expert parallelism in these plans
        0.0,
    )
    assert [label for label, _, _ in STEP_SEGMENTS] == [
        "compute",
        "bubble",
        "exposed tensor parallel",
        "exposed data parallel",
        "pipeline sends",
        "exposed context parallel",
        "exposed expert parallel",
    ]
    assert [seconds(step) for _, _, seconds in STEP_SEGMENTS] == list(terms)
    widths = [box[2] for box in live.step_segments.boxes]
    assert widths == pytest.approx([term / step.total_s for term in terms], rel=1e-9)
    assert sum(widths) == pytest.approx(1.0, rel=1e-9)
    assert live.step_values.get_texts() == [units.format_time(term) for term in terms[:KEYED_SEGMENTS]]
    # a dense plan without c draws no sequence split and no experts
    assert live.sequence_cells.boxes == [] and live.expert_cells.boxes == []
    assert [text.get_text() for text in live.step_extra] == ["", ""]
    texts = figure_texts(live)
    assert units.format_time(step.total_s) in " ".join(texts)


def test_tensor_link_changes_with_t_past_the_node(live):
    plan = PLANS[0]
    live.update(budget.partition_report(parallelism.GPT3_175B, plan, A100_X16))
    assert (
        live.nvlink_rows.get_texts()[:2] == ["NVLink", "NVLink"] and "inside one node" in live.tensor_label.get_text()
    )
    live.update(budget.partition_report(parallelism.GPT3_175B, plan.replace(tensor_parallel=16), A100_X16))
    assert live.network_rows.get_texts()[:2] == ["InfiniBand", "InfiniBand"]
    assert "2 nodes" in live.tensor_label.get_text()


def test_labels_are_readable(live):
    # every text at least 8 pt
    live.update(budget.partition_report(parallelism.GPT3_175B, PLANS[1], A100_X16))
    for ax in live.axes:
        for text in ax.findobj(Text):
            if text.get_text():
                assert text.get_fontsize() >= 8, text.get_text()
    for artist in live.animated:
        if hasattr(artist, "_size"):
            assert artist._size >= 8


def test_update_takes_a_partition_report_only(live):
    report = budget.partition_report(parallelism.GPT3_175B, PLANS[0], A100_X16)
    with pytest.raises(ValueError, match="report must be a budget.PartitionReport, got a dict"):
        live.update(report.as_dict())


def test_the_margin_band_is_drawn_once_for_the_figures_margin():
    live = PartitionFigure(Figure(figsize=(10, 5.0), dpi=72), memory_margin=0.421)
    zone = live.margin_zone  # capacity / 1.421 up to the capacity, on the axis in units of the capacity
    assert zone.get_x() == pytest.approx(1 / 1.421) and zone.get_x() + zone.get_width() == pytest.approx(1.0)
    assert zone not in live.animated  # static: drawn with the frames, not on every update
    report = budget.partition_report(parallelism.GPT3_175B, PLANS[0], A100_X16, memory_margin=0.421)
    live.update(report)  # 99.2 GB: does not fit, and needs 141 GB with the margin
    assert units.format_bytes(report.memory.total * 1.421) == "141 GB" and "no: 141 GB" in figure_texts(live)
    small = PLANS[0].replace(data_parallel=2, recompute="full")  # 32.1 GB, 45.6 GB with the margin
    fits = budget.partition_report(parallelism.GPT3_175B, small, A100_X16, memory_margin=0.421)
    live.update(fits)
    assert fits.fits_with_margin and f"yes: {units.format_bytes(fits.memory.total * 1.421)}" in figure_texts(live)
    with pytest.raises(ValueError, match="memory_margin must be the figure's 0.421"):
        live.update(budget.partition_report(parallelism.GPT3_175B, PLANS[0], A100_X16))
    with pytest.raises(ValueError, match="memory_margin"):
        PartitionFigure(Figure(), memory_margin=-1)


H100_X4 = replace(hardware.DGX_H100, nodes=4)
MIXTRAL_E8 = parallelism.ParallelPlan(  # 32 GPUs: the 8 expert ranks neighbours (t = 1) or 2 apart (t = 2)
    data_parallel=8, pipeline_parallel=4, expert_parallel=8, grad_accum_steps=16, recompute="full"
)


@pytest.mark.parametrize("t, p, link, cuts", [(1, 4, "NVLink", 0), (2, 2, "InfiniBand", 1)])
def test_the_experts_are_drawn_by_the_rank_that_holds_them(live, t, p, link, cuts):
    plan = MIXTRAL_E8.replace(tensor_parallel=t, pipeline_parallel=p)
    report = budget.partition_report(parallelism.MIXTRAL_8X7B, plan, H100_X4)
    live.update(report)
    assert len(live.expert_cells.boxes) == 8  # one box per expert, coloured by its rank (8 ranks: 8 colours)
    assert len(set(map(tuple, live.expert_cells.get_facecolor()))) == 8
    assert live.expert_numbers.get_texts() == [str(k) for k in range(8)]
    assert len(live.expert_cuts.get_segments()) == cuts  # the red line where the expert ranks change node
    assert live.expert_label.get_text().endswith(f"all-to-all on {link}")
    assert len(live.expert_bracket.get_segments()) == 1 + 8  # the all-to-all joins the 8 ranks
    rows = [x for x in report.transfers if x.transfer.axis == "expert"]
    assert {transfer_row(1, x)[1:4] for x in rows} == {("EP", x.transfer.tensor, "all-to-all") for x in rows}
    assert {transfer_row(1, x)[6] for x in rows} == {link}
    assert len(live.marker_colors["expert"].get_xdata()) == 4
    seconds = sum(x.exposed_s for x in rows)
    assert seconds == pytest.approx(report.step.exposed_s["expert"], rel=1e-12)
    assert [text.get_text() for text in live.step_extra] == ["", f"EP {units.format_time(seconds)}"]
    assert live.step_segments.boxes[-1][2] == pytest.approx(seconds / report.step.total_s, rel=1e-9)


@pytest.mark.parametrize("kind, cells", [("ring", [0, 1, 2, 3, 3, 2, 1, 0]), ("all_to_all", [0, 1, 2, 3])])
def test_the_sequence_split_is_drawn_in_c_bands_and_its_halves(live, kind, cells):
    plan = PLANS[0].replace(context_parallel=4, context_parallel_kind=kind)
    report = budget.partition_report(parallelism.GPT3_175B, plan, replace(hardware.DGX_A100, nodes=32))
    live.update(report)
    assert sequence_halves(4, kind) == cells
    assert live.sequence_numbers.get_texts() == [str(rank) for rank in cells]
    assert len(live.sequence_cells.boxes) == len(cells)
    assert len(live.sequence_cuts.get_segments()) == 8 * 3  # c − 1 cuts across each of the 8 stages
    assert live.sequence_label.get_text().startswith("s = 2048, ")
    rows = [x for x in report.transfers if x.transfer.axis == "context"]
    assert len(rows) == (2 if kind == "ring" else 4) == len(live.marker_colors["context"].get_xdata())
    assert {transfer_row(1, x)[1] for x in rows} == {"CP"}
    assert "d·c·t·p = 1·4·8·8 = 256" in live.title.get_text()
