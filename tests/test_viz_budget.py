"""course_lib.viz.budget, the figures of lesson 04: what each figure holds (artists, labels, scales, texts), never
pixels."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from course_lib import budget, hardware, units
from course_lib.parallelism import GPT2_1_5B, GPT3_175B, MEGATRON_1T, ParallelPlan
from course_lib.viz.budget import THIN_SEGMENT_SHARE, plot_plan_search, plot_step_timeline

CLUSTER_64 = hardware.Cluster("8 × DGX H100", hardware.H100, 8, 8, hardware.NVLINK4, hardware.INFINIBAND_NDR_8X)


# ---- step timeline ------------------------------------------------------------------------------------------------

STEPS = {
    "1T on Selene (bubble)": (
        MEGATRON_1T,
        ParallelPlan(
            data_parallel=6,
            tensor_parallel=8,
            pipeline_parallel=64,
            micro_batch=1,
            grad_accum_steps=512,
            recompute="full",
            schedule="interleaved",
            virtual_stages=2,
        ),
        hardware.SELENE_3072,
    ),
    "GPT-2 on one node": (
        GPT2_1_5B,
        ParallelPlan(data_parallel=8, micro_batch=4, grad_accum_steps=4),
        hardware.DGX_H100,
    ),
    "GPT-3 ZeRO-3": (
        GPT3_175B,
        ParallelPlan(data_parallel=64, zero_stage=3, grad_accum_steps=24, recompute="full"),
        CLUSTER_64,
    ),
}
CRITICAL = {
    "compute": lambda s: s.compute_s,
    "tensor parallel (exposed)": lambda s: s.exposed_s["tensor"],
    "pipeline parallel (exposed)": lambda s: s.exposed_s["pipeline"],
    "bubble": lambda s: s.bubble_s,
    "data parallel (exposed)": lambda s: s.exposed_s["data"],
}


@pytest.mark.parametrize("name", list(STEPS))
def test_step_timeline_segments_are_the_step_fields(name):
    step = budget.step_time(*STEPS[name], calibration=None)
    ax = plot_step_timeline(step)
    critical = [p for p in ax.patches if str(p.get_gid()).startswith("critical:")]
    hidden = [p for p in ax.patches if str(p.get_gid()).startswith("hidden:")]
    widths = {p.get_gid().split(":", 1)[1]: p.get_width() for p in critical}
    for label, field in CRITICAL.items():
        assert widths.get(label, 0.0) == pytest.approx(field(step), rel=1e-12, abs=0)
    assert sum(widths.values()) == pytest.approx(step.total_s, rel=1e-12)
    lefts = [p.get_x() for p in critical]
    assert lefts == pytest.approx(np.concatenate([[0], np.cumsum([p.get_width() for p in critical])[:-1]]))
    for patch in hidden:
        axis = patch.get_gid().split(":", 1)[1]
        assert patch.get_width() == pytest.approx(step.overlapped_s[axis])
    if hidden:  # hidden communication ends where the compute it hides under ends
        assert max(p.get_x() + p.get_width() for p in hidden) == pytest.approx(step.compute_s)
    assert len(hidden) == sum(v > 0 for v in step.overlapped_s.values())
    names = {"tensor": "tensor parallel", "pipeline": "pipeline parallel", "data": "data parallel"}
    drawn = {**widths, **{f"{names[p.get_gid().split(':')[1]]} (hidden)": p.get_width() for p in hidden}}
    # every segment is in the legend, or (too thin to see: under THIN_SEGMENT_SHARE of the axis) in the note
    thin = {name: seconds for name, seconds in drawn.items() if seconds < THIN_SEGMENT_SHARE * ax.get_xlim()[1]}
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [name for name in drawn if name not in thin]
    notes = [t.get_text() for t in ax.texts if t.get_gid() == "thin-segments"]
    assert notes == (
        ["too thin to see: " + ", ".join(f"{name} {units.format_time(seconds)}" for name, seconds in thin.items())]
        if thin
        else []
    )
    assert any(units.format_time(step.total_s) in t.get_text() for t in ax.texts)
    assert ax.get_xlabel() == "time (s)"
    assert step.binding_constraint in ax.get_title()


def test_step_timeline_title_and_bad_input():
    step = budget.step_time(*STEPS["GPT-2 on one node"], calibration=None)
    assert plot_step_timeline(step, title="GPT-2").get_title() == "GPT-2"
    with pytest.raises(ValueError, match="step"):
        plot_step_timeline({"compute_s": 1.0})
    arrays = budget.StepTime(
        np.ones(2),
        np.zeros(2),
        {"tensor": 0.0, "pipeline": 0.0, "data": 0.0},
        {"tensor": 0.0, "pipeline": 0.0, "data": 0.0},
        np.ones(2),
    )
    with pytest.raises(ValueError, match="step"):
        plot_step_timeline(arrays)
    with pytest.raises(ValueError, match="title"):
        plot_step_timeline(step, title=3)


# ---- plan search --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpt3_search():
    return budget.search_plans(GPT3_175B, CLUSTER_64, global_batch=1536, calibration=None)


def test_plan_search_scatter_has_every_row(gpt3_search):
    search = gpt3_search
    ax = plot_plan_search(search, highlight_rows=(0, 3))
    scatters = [c for c in ax.collections if str(c.get_gid()).startswith("plans:")]
    points = np.concatenate([c.get_offsets() for c in scatters])
    assert len(points) == len(search)
    expected = np.column_stack([search.columns["memory_bytes"], search.columns["step_time_s"]])
    np.testing.assert_allclose(points[np.lexsort(points.T[::-1])], expected[np.lexsort(expected.T[::-1])])
    for collection in scatters:
        constraint = collection.get_gid().split(":", 1)[1]
        assert len(collection.get_offsets()) == int(np.sum(search.columns["binding_constraint"] == constraint))
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    line = next(line for line in ax.lines if line.get_gid() == "capacity")
    assert list(line.get_xdata()) == [search.capacity_bytes] * 2 == [hardware.H100.hbm_capacity_bytes] * 2
    assert any(t.get_text().strip().startswith("HBM capacity") for t in ax.texts)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    present = set(search.columns["binding_constraint"])
    assert {text.rsplit(" (", 1)[0] for text in legend} == present
    counts = {text.rsplit(" (", 1)[0]: int(text.rsplit("(", 1)[1].rstrip(")")) for text in legend}
    assert sum(counts.values()) == len(search)
    marked = [c for c in ax.collections if str(c.get_gid()).startswith("highlight:")]
    np.testing.assert_allclose(np.concatenate([c.get_offsets() for c in marked]), expected[[0, 3]])
    assert len({c.get_paths()[0].vertices.tobytes() for c in marked}) == 2  # a marker of its own each
    notes = [t.get_text() for t in ax.figure.legends[0].get_texts()]
    best = search.row(0)
    assert notes[0] == (
        f"row 0: {units.format_time(best['step_time_s'])}\nd={best['data_parallel']} t={best['tensor_parallel']} "
        f"p={best['pipeline_parallel']} ZeRO-{best['zero_stage']} b={best['micro_batch']}"
        + notes[0].split(f"b={best['micro_batch']}", 1)[1]
    )
    assert notes[1].startswith(f"row 3: {units.format_time(search.row(3)['step_time_s'])}\n")
    labelled = plot_plan_search(search, highlight_rows=(3,), highlight_labels=("the paper's",))
    assert labelled.figure.legends[0].get_texts()[0].get_text().startswith("the paper's: ")
    assert "memory" in ax.get_xlabel() and "(s)" in ax.get_ylabel()


def test_plan_search_without_highlight_and_bad_input(gpt3_search):
    ax = plot_plan_search(gpt3_search, highlight_rows=())
    assert not [c for c in ax.collections if str(c.get_gid()).startswith("highlight")] and not ax.figure.legends
    for bad in [(len(gpt3_search),), (-1,), ("0",), (True,), 0, "0", (0, 1, 2, 3, 4)]:
        with pytest.raises(ValueError, match="highlight_rows"):
            plot_plan_search(gpt3_search, highlight_rows=bad)
    for bad in [("a", "b"), "ab", ("",), (3,)]:
        with pytest.raises(ValueError, match="highlight_labels"):
            plot_plan_search(gpt3_search, highlight_rows=(0,), highlight_labels=bad)
    with pytest.raises(ValueError, match="search"):
        plot_plan_search({"step_time_s": [1.0]})
