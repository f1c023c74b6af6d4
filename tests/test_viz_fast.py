"""course_lib.viz.fast's layered panels: a picture put together from each axis drawn alone shows what a full draw
shows, and a key whose limits were all seen before draws nothing."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from lab_checks import decoded
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from course_lib.viz import fast


def build(owner):
    """A two-panel figure: a log–log axes with a grid, a title and a legend (left), a bar axis (right)."""
    figure = Figure(figsize=(8, 3), dpi=72)
    figure.patch.set_facecolor("white")
    left = figure.add_axes((0.1, 0.2, 0.35, 0.65))
    (line,) = left.plot([20, 50], [2e-2, 5e-2], label="curve")  # inside every range, clear of spines and legend
    left.set_xscale("log")
    left.set_yscale("log")
    left.grid(True, which="both", alpha=0.25)
    left.set_title("static title")
    left.set_xlabel("x label")
    left.set_ylabel("y label")
    left.legend(loc="lower right")
    right = figure.add_axes((0.6, 0.4, 0.35, 0.3))
    (bar,) = right.barh(0, 0.3, 0.6).patches
    right.set_yticks([])
    right.spines["left"].set_visible(False)  # the bar (animated, drawn over the static picture) would cover it

    def set_limits(example, panel):
        if panel == 0:
            left.set_xlim(*example[0][:2])
            left.set_ylim(*example[0][2:])
        else:
            right.set_xlim(0, example[1])

    panels = [
        fast.Panel((0.0, 0.5), (left,), lambda e: e[0], lambda e: set_limits(e, 0), (), layered=True),
        fast.Panel((0.5, 1.0), (right,), lambda e: e[1], lambda e: set_limits(e, 1), (), layered=True),
    ]
    return figure, fast.PartialRedraw(owner, figure, [line, bar], panels), line


def assert_same_as_savefig(figure, png):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=72)
    shown, full = decoded(png), decoded(buffer.getvalue())
    assert shown.shape == full.shape
    # Agg blends each artist into the canvas with rounding; the layers are blended in the same order: ±1 level.
    assert np.abs(shown - full).max() <= 2


@pytest.mark.parametrize(
    "limits",
    [
        ((1, 1e3, 1e-4, 1e-1), 0.5),
        ((1, 1e2, 1e-4, 1e-1), 0.5),
        ((1, 1e2, 1e-3, 1), 2.0),
        ((10, 1e4, 1e-2, 1), 0.05),
    ],
)
def test_layered_picture_matches_a_full_draw(limits):
    figure, redraw, line = build(f"test-layered-{limits}")
    redraw.set_static_state(limits)
    line.set_data([20, 40], [2e-2, 4e-2])
    assert_same_as_savefig(figure, redraw.png())


def test_a_key_of_seen_limits_draws_no_axis():
    owner = "test-layered-reuse"
    figure, redraw, line = build(owner)
    redraw.set_static_state(((1, 1e3, 1e-4, 1e-1), 0.5))
    redraw.set_static_state(((1, 1e2, 1e-3, 1), 0.5))
    before = fast.cached_pictures(owner)
    # x from the second key, y from the first: both axis pictures exist, only the composite is new.
    redraw.set_static_state(((1, 1e2, 1e-4, 1e-1), 0.5))
    assert fast.cached_pictures(owner) == before
    assert isinstance(redraw.backgrounds[0, (1, 1e2, 1e-4, 1e-1)], tuple)  # a composite, kept by this redraw
    assert_same_as_savefig(figure, redraw.png())
    # A new y range alone draws the y axis and no x axis.
    before = fast.cached_pictures(owner)
    redraw.set_static_state(((1, 1e2, 1e-5, 1e-1), 0.5))
    assert {key[2] for key in fast.cached_pictures(owner) - before} == {("axis", "y", (1e-5, 1e-1))}
    assert_same_as_savefig(figure, redraw.png())


def test_a_panel_with_static_artists_under_its_grid_is_drawn_whole():
    """Layers assume nothing static lies between the axes' background and its axis: otherwise a full draw."""
    figure = Figure(figsize=(4, 3), dpi=72)
    ax = figure.add_axes((0.15, 0.15, 0.8, 0.8))
    ax.axhspan(0.2, 0.4, color="0.8", zorder=0.5)  # static, under the grid
    (line,) = ax.plot([0.3, 0.6], [0.5, 0.7])
    ax.set_ylim(0, 1)
    ax.grid(True)
    panel = fast.Panel((0.0, 1.0), (ax,), lambda e: e, lambda e: ax.set_xlim(0, e), (1.0, 2.0), layered=True)
    redraw = fast.PartialRedraw("test-layered-fallback", figure, [line], [panel])
    assert not isinstance(redraw.backgrounds[0, 1.0], tuple)  # a copied region, not a composite
    redraw.set_static_state(2.0)
    assert_same_as_savefig(figure, redraw.png())


def test_a_second_figure_drawing_nothing_new_renders():
    """A second figure of the same owner finds every picture cached (its canvas never drew) and still renders."""
    limits = ((1, 1e3, 1e-4, 1e-1), 0.5)
    for _ in range(2):
        figure, redraw, _line = build("test-layered-second")
        redraw.set_static_state(limits)
        assert_same_as_savefig(figure, redraw.png())


def test_a_redraw_keeps_a_bounded_number_of_composites():
    figure, redraw, _line = build("test-layered-bounded")
    for upper in range(1, redraw.MAX_COMPOSITES + 10):
        redraw.set_static_state(((1, 1e3, 1e-4, 1e-1), float(upper)))
    composites = [name for name, kept in redraw.backgrounds.items() if isinstance(kept, tuple)]
    assert len(composites) == redraw.MAX_COMPOSITES + 1  # and the left panel's, on show (never dropped)
    assert (1, float(redraw.MAX_COMPOSITES + 9)) in composites  # the latest is kept ...
    redraw.set_static_state(((1, 1e3, 1e-4, 1e-1), 1.0))  # ... and one dropped is put together again
    assert_same_as_savefig(figure, redraw.png())


def test_png_bytes_reusing_bands_decodes_to_each_image():
    """png_bytes deflates bands of rows apart and reuses a band equal to the last image's: every image, including
    one that changes a single band, one of a new size and one whose height is not a whole number of bands, decodes
    to its pixels exactly."""
    rng = np.random.default_rng(0)
    first = rng.integers(0, 256, (5 * fast._PNG_BAND_ROWS + 3, 41, 4), dtype=np.uint8)
    one_band_changed = first.copy()
    one_band_changed[2 * fast._PNG_BAND_ROWS + 1, 7] = (1, 2, 3, 4)
    smaller = first[: fast._PNG_BAND_ROWS, :20].copy()
    for image in (first, one_band_changed, first, smaller, one_band_changed):
        assert np.array_equal(decoded(fast.png_bytes(image)), image)
    fast.png_bytes(first)
    previous = fast._previous_bands[41, first.shape[0]]
    fast.png_bytes(one_band_changed)
    current = fast._previous_bands[41, first.shape[0]]
    reused = [now is before for now, before in zip(current, previous, strict=True)]
    assert reused == [True, True, False, True, True, True]  # 5 whole bands and 3 rows: only band 2 is deflated again


def test_a_label_pasted_from_its_bitmap_matches_its_outline_filled_in_place():
    """FastText on Agg pastes a bitmap of the label's outline, the first time too: at a fractional anchor and past
    the canvas's edge, the pasted labels differ from their outlines filled in place (what PDF and SVG get) by Agg's
    blending rounding only (at most 4 levels of 255), and a second draw shows exactly what the first showed."""
    figure = Figure(figsize=(3, 1), dpi=100)
    figure.patch.set_facecolor("white")
    ax = figure.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    texts = ("2.02 ms · Ψ (a test label)", "past the edge (a test label)")
    labels = [
        fast.FastText(ax, (0.0133, 0.4071), texts[0], size=11, color="#1f77b4", transform=ax.transAxes),
        fast.FastText(ax, (0.97, 0.9), texts[1], size=9, transform=ax.transAxes),  # runs off the right side
    ]
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    pasted = np.asarray(canvas.buffer_rgba()).astype(int)
    assert len([key for key in fast._label_bitmaps if key[0] in texts]) == 2
    canvas.draw()
    assert np.array_equal(np.asarray(canvas.buffer_rgba()), pasted)

    renderer = canvas.get_renderer()
    renderer.clear()
    figure.patch.draw(renderer)
    for label in labels:
        anchor = label._anchor.transform(label._xy)
        fast._fill_outlines(label, renderer, [(anchor, label._text)], label._size, label._weight, "left", "baseline")
    filled = np.asarray(canvas.buffer_rgba()).astype(int)
    assert (filled != 255).any(axis=2).sum() > 200  # the labels drew something
    assert np.abs(pasted - filled).max() <= 4


def test_labels_rasterised_together_are_the_labels_rasterised_alone():
    """A label's bitmap does not depend on the labels rasterised with it in one canvas (each has its own rows)."""
    figure = Figure(figsize=(3, 1), dpi=100)
    ax = figure.add_axes((0, 0, 1, 1))
    patch = fast.FastText(ax, (0, 0), "", size=9)
    renderer = FigureCanvasAgg(figure).get_renderer()
    look = (9.0, "normal", "center", "baseline", tuple(patch.get_facecolor()), renderer.dpi)
    keys = [("1.5 GB", look, (0.25, 0.5)), ("Ψ = 175B, g", look, (0.0, 0.984375)), (" ", look, (0.5, 0.0))]
    together = fast._rasterise_labels(patch, renderer, keys)
    for key, (pixels, dx, dy) in zip(keys, together, strict=True):
        ((alone, alone_dx, alone_dy),) = fast._rasterise_labels(patch, renderer, [key])
        assert (dx, dy) == (alone_dx, alone_dy) and np.array_equal(pixels, alone)
    assert together[0][0][..., 3].any() and not together[2][0][..., 3].any()  # the space draws nothing
