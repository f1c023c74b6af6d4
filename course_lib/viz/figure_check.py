"""A figure checked like prose: its text readable, its legend true, its numbers collected for the tests to compare.

``figure_problems(fig, dpi=..., bbox_inches=...)`` saves ``fig`` as the notebook or the lab stores it and lists what
a reader would trip on:

- two text elements (titles, axis labels, tick labels, legend texts, annotations, the labs' ``FastText`` labels)
  whose boxes overlap by more than ``tolerance_px`` pixels in both directions;
- a text cut by the image's edge, or by the axes it is clipped to;
- a text smaller than ``MIN_DISPLAY_PT`` at the displayed size. The rule: a notebook or a lab is read in a browser,
  which shows a PNG one image pixel per CSS pixel (JupyterLab, nbviewer and GitHub show it at its natural size when
  the column is wide enough), and a CSS point is 96/72 CSS pixels; so a text of ``s`` pt saved at ``dpi`` shows at
  ``s · dpi / 96`` pt: a lesson's 8 pt at 100 dpi at 8.3 pt, a lab's 8 pt at 72 dpi at 6 pt (8 pixels, capitals
  about 6 pixels tall). ``bbox_inches="tight"`` (the inline backend's default) crops the image and does not scale
  it, so it does not change the size; it does move the edge (the crop takes in every text, so none is cut by it);
- a bar cut by its axes' view (``bar_problems``): a stacked bar cut at the top hides its upper components;
- a legend entry with nothing drawn: the artist it labels (found by its label, or for a proxy handle by its colour,
  or for a marker alone by its shape, among the figure's artists) is invisible or has no data inside its axes' view
  (an error bar of zero length too). An entry the figure greys out as not applicable (its text's gid
  ``NOT_APPLICABLE``) is left out.

Only what the save draws counts: invisible artists, empty strings and tick labels outside the view are skipped.
``figure_numbers(fig)`` lists the numbers in a figure's text (tick labels left out: they are the scale), for the tests
that compare each with the computation (tests/test_figures.py).

>>> import matplotlib
>>> matplotlib.use("Agg")
>>> from matplotlib.figure import Figure
>>> fig = Figure(figsize=(4, 3), dpi=100)
>>> ax = fig.add_subplot()
>>> _ = ax.plot([0, 1], [0, 1], label="ideal")
>>> _ = ax.legend()
>>> _ = ax.set_title("1,024 GPUs: 25.4 s per step")
>>> figure_problems(fig, dpi=100, bbox_inches="tight")
[]
>>> _ = ax.text(0.5, 0.5, "tiny", fontsize=4)
>>> figure_problems(fig, dpi=100, bbox_inches="tight")
["text 'tiny' is 4.2 pt at its displayed size, below 7 pt"]
>>> figure_numbers(fig)
['1,024', '25.4 s']
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import Collection, LineCollection, PathCollection
from matplotlib.colors import to_rgba_array
from matplotlib.container import BarContainer, Container, ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.markers import MarkerStyle
from matplotlib.patches import Patch, Rectangle
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from .fast import CachedText, FastText, FastTextGroup

__all__ = [
    "MIN_DISPLAY_PT",
    "NOT_APPLICABLE",
    "TICK_GID",
    "DrawnText",
    "drawn_texts",
    "text_problems",
    "bar_problems",
    "legend_problems",
    "figure_problems",
    "figure_numbers",
    "figure_quantities",
    "NUMBER",
]

MIN_DISPLAY_PT = 7.0
# The gid of a legend text a figure greys out on purpose, for what does not apply to the state shown (lab 1's
# power-of-two algorithms at 6 ranks): its entry draws nothing, and says so.
NOT_APPLICABLE = "legend:not-applicable"
# The gid of a text a figure draws as a tick label of its own (a live figure whose scale changes with the result): a
# tick label, not a number to check against the computation.
TICK_GID = "tick"
# A number as the course prints one ("1,024", "25.4 s", "3.97 MB", "97 %"), with its unit if it has one; digits
# inside a word ("A100", "p90") are part of a name.
_UNITS = (
    r"ms|µs|ns|min|s|h|days|B|kB|MB|GB|TB|KiB|MiB|GiB|TiB|GB/s|TB/s|kB/s|MB/s|Gb/s|Tb/s|TFLOP/s|PFLOP/s|GFLOP/s"
    r"|EFLOP|PFLOP|TFLOP|GFLOP|FLOP/byte|FLOP|%|×"
)
# The course prints a unit after a space ("25.4 s", "37.5 %"), a factor without one ("2×"): "175B" or "80GB" is a name.
NUMBER = re.compile(r"(?<![\w.])[−-]?\d+(?:[.,]\d+)*(?:\s(?:" + _UNITS + r")(?![\w/])|×)?(?![\w])")


@dataclass(frozen=True)
class DrawnText:
    """One text as a save drew it: its string, its role, its box (pixels of the saved image) and its size there."""

    text: str
    role: str  # "title", "axis label", "tick label", "legend", or "text" (annotations, labels placed by a figure)
    box: Bbox
    displayed_pt: float
    clip_box: Bbox | None


def _roles(fig) -> dict[int, str]:
    """id(Text) → role, for the texts whose role is not "text"."""
    roles = {}
    for text in (getattr(fig, "_suptitle", None), getattr(fig, "_supxlabel", None), getattr(fig, "_supylabel", None)):
        if text is not None:
            roles[id(text)] = "title"
    for ax in fig.axes:
        for text in (ax.title, ax._left_title, ax._right_title):
            roles[id(text)] = "title"
        for axis in (ax.xaxis, ax.yaxis):
            roles[id(axis.label)] = "axis label"
            roles[id(axis.offsetText)] = "tick label"
            for tick in (*axis.majorTicks, *axis.minorTicks):
                roles[id(tick.label1)] = roles[id(tick.label2)] = "tick label"
    for legend in fig.findobj(Legend):
        for text in (*legend.get_texts(), legend.get_title()):
            roles[id(text)] = "legend"
    return roles


class _Recorder:
    """The texts each pass of a save draws (a tight save draws the figure twice: only its last pass is the image)."""

    def __init__(self):
        self.passes: list[tuple] = []  # (renderer, {id(artist): (artist, [(text, box), ...])})

    def start(self, renderer):
        self.passes.append((renderer, {}))

    def add(self, artist, renderer):
        if not self.passes or renderer is not self.passes[-1][0] or not artist.get_visible():
            return  # a CachedText's scratch renderer, or a draw outside a figure's
        if isinstance(artist, (FastText, FastTextGroup)):
            entries = artist.text_boxes(renderer)
        elif artist.get_text() == "":
            return
        else:  # Text's own box: an Annotation's would take in its arrow
            entries = [(artist.get_text(), Text.get_window_extent(artist, renderer))]
        clip = artist.clipbox if artist.get_clip_on() and artist.clipbox is not None else None
        clip_box = None if clip is None else Bbox(clip.get_points().copy())  # now: a tight save moves the axes
        self.passes[-1][1][id(artist)] = (
            artist,
            [(text, Bbox(box.get_points().copy())) for text, box in entries],
            clip_box,
        )


@contextlib.contextmanager
def _recording():
    """Wrap ``Figure.draw`` and the draw of every kind of text the course uses, so that a save reports what it drew."""
    recorder = _Recorder()
    originals = {cls: cls.draw for cls in (Figure, Text, CachedText, FastText, FastTextGroup)}

    def wrapped(cls):
        original = originals[cls]

        def draw(self, renderer, *args, **kwargs):
            if cls is Figure:
                recorder.start(renderer)
                return original(self, renderer, *args, **kwargs)
            result = original(self, renderer, *args, **kwargs)
            recorder.add(self, renderer)
            return result

        return draw

    for cls in originals:
        cls.draw = wrapped(cls)
    try:
        yield recorder
    finally:
        for cls, draw in originals.items():
            cls.draw = draw


def drawn_texts(fig, dpi=None, bbox_inches=None) -> tuple[list[DrawnText], Bbox]:
    """Every text that saving ``fig`` at ``dpi`` (default the figure's) with ``bbox_inches`` draws, and the image's
    box, both in pixels of the saved image."""
    dpi = float(fig.dpi if dpi is None else dpi)
    with _recording() as recorder:
        fig.savefig(io.BytesIO(), format="rgba", dpi=dpi, bbox_inches=bbox_inches)  # drawn, not compressed
    roles = _roles(fig)  # after the draw: an axis makes the ticks it needs as it draws
    renderer, drawn = recorder.passes[-1]
    texts = []
    for artist, entries, clip_box in drawn.values():
        size = artist.size_pt if isinstance(artist, (FastText, FastTextGroup)) else artist.get_fontsize()
        role = "tick label" if artist.get_gid() == TICK_GID else roles.get(id(artist), "text")
        texts.extend(DrawnText(text, role, box, float(size) * dpi / 96.0, clip_box) for text, box in entries)
    return texts, Bbox([[0.0, 0.0], [float(renderer.width), float(renderer.height)]])


def _overlap(a: Bbox, b: Bbox) -> tuple[float, float]:
    return min(a.x1, b.x1) - max(a.x0, b.x0), min(a.y1, b.y1) - max(a.y0, b.y0)


def _inside(box: Bbox, outer: Bbox, tolerance: float) -> bool:
    return (
        box.x0 >= outer.x0 - tolerance
        and box.y0 >= outer.y0 - tolerance
        and box.x1 <= outer.x1 + tolerance
        and box.y1 <= outer.y1 + tolerance
    )


def _short(text: str) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= 40 else one_line[:37] + "..."


def text_problems(texts, image: Bbox, tolerance_px: float = 1.0, min_pt: float = MIN_DISPLAY_PT) -> list[str]:
    """Overlapping, cut and too small texts among ``texts`` (``DrawnText``) in the image ``image``."""
    problems = []
    for text in texts:
        if text.displayed_pt < min_pt - 1e-9:
            problems.append(
                f"text {_short(text.text)!r} is {text.displayed_pt:.1f} pt at its displayed size, below {min_pt:g} pt"
            )
        if not _inside(text.box, image, tolerance_px):
            problems.append(f"text {_short(text.text)!r} is cut by the figure's edge")
        elif text.clip_box is not None and not _inside(text.box, text.clip_box, tolerance_px):
            problems.append(f"text {_short(text.text)!r} is cut by its axes")
    for i, first in enumerate(texts):
        for second in texts[i + 1 :]:
            dx, dy = _overlap(first.box, second.box)
            if dx > tolerance_px and dy > tolerance_px:
                problems.append(
                    f"{first.role} {_short(first.text)!r} overlaps {second.role} {_short(second.text)!r} "
                    f"({dx:.0f} × {dy:.0f} px)"
                )
    return problems


# ---- legend entries -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Item:
    """One thing an artist draws, in display pixels: a point (a marker), a segment (a line's piece, an arrow) or an
    area (a bar, a box), with its colours (RGB) and, for a marker, its shape."""

    box: Bbox
    kind: str
    colors: frozenset
    marker: tuple | None = None

    def shows_in(self, view: Bbox) -> bool:
        dx, dy = _overlap(self.box, view)
        if self.kind == "point":
            return dx >= 0 and dy >= 0
        if self.kind == "segment":
            return dx >= 0 and dy >= 0 and np.hypot(self.box.width, self.box.height) >= 1.0
        return dx > 0.5 and dy > 0.5  # an area at least half a pixel each way (a bar of height 0 shows nothing)


_NO_LINE = ("None", "none", "", " ")


def _rgb(colors, linewidth=1.0) -> frozenset:
    """RGB triples (rounded) of the colours in ``colors`` that are not transparent; none for a line of width 0."""
    if linewidth is not None and np.all(np.asarray(linewidth, dtype=float) == 0):
        return frozenset()
    with contextlib.suppress(ValueError, TypeError):
        return frozenset(tuple(np.round(color[:3], 3)) for color in to_rgba_array(colors) if color[3] > 0)
    return frozenset()


def _marker_key(marker) -> tuple | None:
    """A marker's shape as a hashable key (its unit path), or None for no marker."""
    if marker is None or (isinstance(marker, str) and marker in _NO_LINE):
        return None
    style = MarkerStyle(marker)
    path = style.get_path().transformed(style.get_transform())
    return _path_key(path)


def _path_key(path) -> tuple:
    vertices = np.asarray(path.vertices, dtype=float)
    scale = np.abs(vertices).max() or 1.0
    return tuple(np.round(vertices / scale, 2).ravel())


def _segments(xy, colors) -> list:
    xy = xy[np.all(np.isfinite(xy), axis=1)] if len(xy) else xy
    return [
        _Item(Bbox([np.minimum(a, b), np.maximum(a, b)]), "segment", colors)
        for a, b in zip(xy[:-1], xy[1:], strict=True)
    ]


def _line_items(line: Line2D) -> list:
    xy = line.get_transform().transform(np.column_stack(line.get_data()).astype(float))
    items = []
    marker = _marker_key(line.get_marker())
    if marker is not None:
        colors = _rgb([line.get_markerfacecolor(), line.get_markeredgecolor()])
        items += [_Item(Bbox([point, point]), "point", colors, marker) for point in xy if np.all(np.isfinite(point))]
    if line.get_linestyle() not in _NO_LINE:
        items += _segments(xy, _rgb(line.get_color(), line.get_linewidth()))
    return items


def _patch_items(patch: Patch, renderer) -> list:
    colors = _rgb(patch.get_facecolor()) | _rgb(patch.get_edgecolor(), patch.get_linewidth())
    kind = "area" if isinstance(patch, Rectangle) else "segment"  # an arrow or an outline may be thin
    return [_Item(patch.get_window_extent(renderer), kind, colors)]


def _cycled(colors, index):
    return colors[index % len(colors)] if len(colors) else None


def _collection_items(collection: Collection) -> list:
    faces, edges = collection.get_facecolor(), collection.get_edgecolor()
    widths = np.atleast_1d(collection.get_linewidth())
    items = []
    if isinstance(collection, PathCollection):  # a scatter: one marker at each offset
        paths = collection.get_paths()
        marker = _path_key(paths[0]) if len(paths) else None
        xy = collection.get_offset_transform().transform(np.asarray(collection.get_offsets(), dtype=float))
        for index, point in enumerate(xy):
            if np.all(np.isfinite(point)):
                colors = _rgb([c for c in (_cycled(faces, index), _cycled(edges, index)) if c is not None])
                items.append(_Item(Bbox([point, point]), "point", colors, marker))
        return items
    transform = collection.get_transform()
    for index, path in enumerate(collection.get_paths()):
        edge = _rgb([_cycled(edges, index)], _cycled(widths, index)) if len(edges) else frozenset()
        if isinstance(collection, LineCollection):
            items += _segments(transform.transform(np.asarray(path.vertices, dtype=float)), edge)
        else:
            face = _rgb([_cycled(faces, index)]) if len(faces) else frozenset()
            items.append(_Item(path.get_extents(transform), "area", face | edge))
    return items


def _items(artist, renderer) -> list:
    """What ``artist`` draws (nothing when it or a container's every part is hidden)."""
    if isinstance(artist, Container):
        return [item for child in artist.get_children() if child is not None for item in _items(child, renderer)]
    if not artist.get_visible():
        return []
    if isinstance(artist, Line2D):
        return _line_items(artist)
    if isinstance(artist, Patch):
        return _patch_items(artist, renderer)
    if isinstance(artist, Collection):
        return _collection_items(artist)
    return []


def _drawn_in_view(artist, ax, renderer) -> bool:
    """Whether ``artist`` draws something inside ``ax``'s view: an error bar both its marker and a bar at least a
    pixel long (its legend entry shows both)."""
    view = ax.get_window_extent()
    if isinstance(artist, ErrorbarContainer):
        line, _caps, bars = artist.lines
        parts = ([line] if line is not None else []) + list(bars)
        return all(any(item.shows_in(view) for item in _items(part, renderer)) for part in parts)
    return any(item.shows_in(view) for item in _items(artist, renderer))


_PLAIN = frozenset({(1.0, 1.0, 1.0), (0.0, 0.0, 0.0)})  # white and black: every figure has them


def _matches(handle, renderer):
    """A test of whether an item shows what a proxy handle promises: its shape for a marker alone (the points may
    be coloured by something else), else its colours (white and black only when it has no other)."""
    items = _items(handle, renderer) if isinstance(handle, (Line2D, Patch, Collection)) else []
    if isinstance(handle, Line2D) and handle.get_linestyle() in _NO_LINE and _marker_key(handle.get_marker()):
        marker = _marker_key(handle.get_marker())
        return lambda item: item.marker == marker
    if isinstance(handle, Line2D):
        wanted = _rgb(handle.get_color())
    else:
        wanted = frozenset().union(*(item.colors for item in items)) if items else frozenset()
    wanted = wanted - _PLAIN or wanted
    return lambda item: bool(wanted) and wanted <= item.colors


def _legend_entries(fig):
    """(label, (artist, its axes) or None for a proxy handle, the handle drawn in the legend) of every legend."""
    entries = []
    for legend in fig.findobj(Legend):  # an axes may hold several (``ax.add_artist`` keeps an earlier one)
        if not legend.get_visible():
            continue
        axes = [legend.axes] if legend.axes is not None else list(fig.axes)
        labelled = {}
        for ax in axes:
            for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                labelled.setdefault(label, (handle, ax))
        for text, shown in zip(legend.get_texts(), legend.legend_handles, strict=False):
            if text.get_gid() != NOT_APPLICABLE:
                entries.append((text.get_text(), labelled.get(text.get_text()), shown))
    return entries


def legend_problems(fig, renderer) -> list[str]:
    """Legend entries that nothing drawn in the view of their axes shows (for a proxy handle: of any axes)."""
    problems = []
    items = None
    for label, original, shown in _legend_entries(fig):
        drawn = original is not None and _drawn_in_view(original[0], original[1], renderer)
        # A proxy handle, or a labelled artist too small to see in its axes whose colour another panel shows (a
        # colour key holds for the whole figure); not an error bar, whose entry promises its bars.
        if not drawn and not (original is not None and isinstance(original[0], ErrorbarContainer)):
            if items is None:
                items = [
                    (item, ax.get_window_extent())
                    for ax in fig.axes
                    for artist in ax.get_children()
                    for item in _items(artist, renderer)
                    if isinstance(artist, (Line2D, Patch, Collection))
                    and not isinstance(artist, (FastText, FastTextGroup))
                    and artist is not ax.patch
                ]
            match = _matches(shown, renderer)
            drawn = any(match(item) and item.shows_in(view) for item, view in items)
        if not drawn:
            problems.append(f"legend entry {_short(label)!r} has nothing drawn in its axes")
    return problems


def figure_problems(fig, dpi=None, bbox_inches=None, tolerance_px: float = 1.0, min_pt: float = MIN_DISPLAY_PT):
    """What a reader would trip on in ``fig`` saved at ``dpi`` with ``bbox_inches`` (see the module's docstring): a
    list of sentences, empty for a readable figure. A notebook stores ``dpi=fig.dpi, bbox_inches="tight"``; a lab
    its own ``Lab.dpi`` and no crop."""
    texts, image = drawn_texts(fig, dpi=dpi, bbox_inches=bbox_inches)
    problems = text_problems(texts, image, tolerance_px, min_pt)
    if not hasattr(fig.canvas, "get_renderer"):  # a figure pyplot has closed keeps a bare canvas
        FigureCanvasAgg(fig)
    fig.canvas.draw()  # the legend check reads positions at the figure's own dpi, uncropped
    return problems + legend_problems(fig, fig.canvas.get_renderer()) + bar_problems(fig)


def bar_problems(fig) -> list[str]:
    """Bars (``ax.bar``'s containers) with a piece the axes' view leaves out: a stacked bar cut at the top shows only
    its lowest components, so a reader cannot see what the text says dominates it (issue 41: lesson 03's DP 64 bar
    showed only its parameters). A bar cut by the view, or a component wholly above or below it, is a problem.

    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> _ = ax.bar([0], [50], label="parameters"); _ = ax.bar([0], [900], bottom=[50], label="optimizer state")
    >>> _ = ax.set_ylim(0, 100)
    >>> bar_problems(ax.figure)
    ["bar 'optimizer state' at x = 0 is cut by its axes (50 to 950 against a view of 0 to 100)"]
    """
    problems = []
    for ax in fig.axes:
        low, high = sorted(ax.get_ylim())
        for container in ax.containers:
            if not isinstance(container, BarContainer) or container.orientation != "vertical":
                continue
            for bar in container.patches:
                bottom, top = sorted((bar.get_y(), bar.get_y() + bar.get_height()))
                span = high - low
                if not bar.get_visible() or top - bottom <= 1e-12 * span:
                    continue
                if top > high + 1e-9 * span or bottom < low - 1e-9 * span:
                    x = bar.get_x() + bar.get_width() / 2
                    problems.append(
                        f"bar {container.get_label()!r} at x = {x:g} is cut by its axes ({bottom:g} to {top:g} against "
                        f"a view of {low:g} to {high:g})"
                    )
    return problems


def figure_quantities(fig, ignore=()) -> list[str]:
    """The numbers with a unit among ``figure_numbers(fig, ignore)`` ("25.4 s", "80 GB", "37.5 %"): for a diagram
    whose bare numbers are names (ranks, micro-batches, chunks), the ones a computation gives."""
    return [number for number in figure_numbers(fig, ignore) if not number.replace(",", "").lstrip("−-").isdigit()]


def figure_numbers(fig, ignore=()) -> list[str]:
    """The numbers (with their units) in ``fig``'s titles, axis labels, legends and annotations, in drawing order;
    tick labels are left out. ``ignore``: names to skip wherever they occur ("GPT-3 175B", "A100")."""
    texts, _ = drawn_texts(fig)
    numbers = []
    for text in texts:
        if text.role == "tick label":
            continue
        string = text.text
        for name in sorted(ignore, key=len, reverse=True):
            string = string.replace(name, " ")
        numbers.extend(match.group(0) for match in NUMBER.finditer(string))
    return numbers
