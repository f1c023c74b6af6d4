"""course_lib.viz.parallelism, lesson 03's diagrams (the four splits, one layer under tensor parallelism): what each
figure holds (patches, labels, texts), never pixels, and that its labels are the cost model's."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
from matplotlib.patches import FancyArrowPatch

from course_lib import parallelism
from course_lib.parallelism import ParallelPlan
from course_lib.viz.parallelism import plot_parallelism_splits, plot_tensor_parallel_layer

# ---- the four splits ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def split_axes():
    return plot_parallelism_splits()


def test_split_panels_mark_the_crossing_tensors_and_their_collectives(split_axes):
    axes = split_axes
    assert axes.shape == (2, 2)
    titles = [ax.get_title() for ax in axes.flat]
    assert [t.split()[0] for t in titles] == ["Data", "Tensor", "Pipeline", "ZeRO"]
    expected = [
        ["gradients: all-reduce"],
        ["partial sums: all-reduce ×2 per layer fwd, ×2 bwd"],
        ["activations fwd / gradients bwd: send/recv"],
        ["parameters: all-gather", "gradients: reduce-scatter"],
    ]
    for ax, wanted in zip(axes.flat, expected, strict=True):
        labels = [t.get_text() for t in ax.texts if t.get_gid() == "boundary-label"]
        assert len(labels) == 1
        for phrase in wanted:
            assert phrase in labels[0], (ax.get_title(), labels[0])
        arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch) and p.get_gid() == "boundary-arrow"]
        assert arrows
        assert {p.get_gid() for p in ax.patches} >= {"device-0", "device-1"}
    assert tuple(axes[0, 0].figure.get_size_inches()) == (11, 8)


def test_split_labels_come_from_the_cost_model(split_axes):
    # The ops named on the arrows are exactly those parallelism.boundary_tensors lists for 2-GPU plans.
    model = parallelism.TransformerModel("4-layer example", 4, 64, 4, 256, 32)
    plans = [
        ParallelPlan(data_parallel=2),
        ParallelPlan(tensor_parallel=2),
        ParallelPlan(pipeline_parallel=2),
        ParallelPlan(data_parallel=2, zero_stage=3),
    ]
    axes = split_axes
    names = {
        "all_reduce": "all-reduce",
        "all_gather": "all-gather",
        "reduce_scatter": "reduce-scatter",
        "send_recv": "send/recv",
    }
    for ax, plan in zip(axes.flat, plans, strict=True):
        label = next(t.get_text() for t in ax.texts if t.get_gid() == "boundary-label")
        ops = {names[t.op] for t in parallelism.boundary_tensors(model, plan)}
        assert ops == {name for name in names.values() if name in label}


def test_splits_on_given_axes_and_bad_axes():
    _, axes = plt.subplots(2, 2)
    returned = plot_parallelism_splits(axes)
    assert returned.shape == (2, 2) and returned[1, 1] is axes[1, 1]
    assert axes[1, 1].get_title().startswith("ZeRO")
    _, three = plt.subplots(1, 3)
    with pytest.raises(ValueError, match="axes"):
        plot_parallelism_splits(three)
    with pytest.raises(ValueError, match="axes"):
        plot_parallelism_splits(["a", "b", "c", "d"])


# ---- one layer under tensor parallelism ----------------------------------------------------------------------------


def _tp_boxes(ax):
    """(x, block, role, layout) of every box, left to right within each block."""
    boxes = []
    for patch in ax.patches:
        gid = str(patch.get_gid())
        if gid.startswith(("attention/", "MLP/")):
            block, role, layout = gid.split("/")
            boxes.append((round(patch.get_x(), 3), block, role, layout))
    return sorted(boxes)


@pytest.mark.parametrize("sequence_parallel", [False, True])
def test_tp_layer_draws_column_then_row_parallel_gemms_between_f_and_g(sequence_parallel):
    ax = plot_tensor_parallel_layer(sequence_parallel=sequence_parallel)
    boxes = _tp_boxes(ax)
    for block in ("attention", "MLP"):
        roles = [role for _, b, role, _ in boxes if b == block]
        assert roles == ["norm", "column-parallel", "core", "row-parallel", "residual"]
        layouts = {role: layout for _, b, role, layout in boxes if b == block}
        # the GEMMs and what lies between them are split over t either way
        assert {layouts[r] for r in ("column-parallel", "core", "row-parallel")} == {"tensor-split"}
        # LayerNorm, dropout and the residual: whole on every GPU, or sequence-sharded with SP
        outer = "sequence-split" if sequence_parallel else "replicated"
        assert layouts["norm"] == layouts["residual"] == outer
        names = [t.get_text() for t in ax.texts if t.get_gid() == f"name-{block}"]
        assert names == (["g", "ḡ"] if sequence_parallel else ["f", "g"])
        # each operator's label sits between the GEMMs it wraps: f before the column GEMM, g after the row GEMM
        xs = sorted(t.get_position()[0] for t in ax.texts if t.get_gid() == f"operator-{block}")
        column_x = next(x for x, b, role, _ in boxes if b == block and role == "column-parallel")
        row_x = next(x for x, b, role, _ in boxes if b == block and role == "row-parallel")
        assert xs[0] < column_x < row_x < xs[1]


def test_tp_layer_collectives_are_megatrons_and_the_cost_models():
    plain = plot_tensor_parallel_layer(sequence_parallel=False)
    labels = [t.get_text() for t in plain.texts if t.get_gid() == "operator-attention"]
    # Shoeybi et al. 2019 §3: f = identity forward, all-reduce backward; g = all-reduce forward, identity backward
    assert labels[0].startswith("fwd: identity\nbwd: all-reduce")
    assert labels[1].startswith("fwd: all-reduce\nbwd: identity")
    assert "partial sums" in labels[1]
    assert plain.get_title().endswith("2 all-reduces")
    sp = plot_tensor_parallel_layer(sequence_parallel=True)
    labels = [t.get_text() for t in sp.texts if t.get_gid() == "operator-attention"]
    # Korthikanti et al. 2022 §4.2.2: g = all-gather fwd / reduce-scatter bwd; ḡ = reduce-scatter fwd / all-gather bwd
    assert labels[0].startswith("fwd: all-gather\nbwd: reduce-scatter")
    assert labels[1].startswith("fwd: reduce-scatter\nbwd: all-gather")
    assert sp.get_title().endswith("2 all-gathers + 2 reduce-scatters")
    # the counts in the title are the cost model's: per layer and micro-batch, forward
    model = parallelism.TransformerModel("1 layer", 1, 64, 4, 256, 32)
    ops = [
        (t.op, t.calls_per_step)
        for t in parallelism.step_transfers(model, ParallelPlan(tensor_parallel=2, sequence_parallel=True))
        if t.axis == "tensor" and "forward" in t.tensor
    ]
    assert sorted(ops) == [("all_gather", 2), ("reduce_scatter", 2)]
    legend = [text.get_text() for text in sp.get_legend().get_texts()]
    assert any("sequence" in text for text in legend) and not any("replicated" in text for text in legend)


def test_tp_layer_text_is_readable_and_bad_input():
    ax = plot_tensor_parallel_layer()
    assert min(t.get_fontsize() for t in ax.texts) >= 8
    _, given = plt.subplots()
    assert plot_tensor_parallel_layer(True, ax=given) is given
    with pytest.raises(ValueError, match="sequence_parallel"):
        plot_tensor_parallel_layer(sequence_parallel="yes")
