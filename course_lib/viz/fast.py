"""Fast drawing for the labs: a figure re-rendered in well under 30 ms on a 2-core machine.

Redrawing a whole matplotlib figure on each slider move takes 100–300 ms, most of it text (1–10 ms for each tick
label, legend entry and title). The labs therefore redraw only what changes:

- ``PartialRedraw`` keeps pictures of the static part of a figure and draws only the *animated* artists over them;
  ``Lab.enable_partial_redraw`` switches a lab to it. The static part can be cut into ``Panel`` strips whose
  static artists depend on the controls (one picture per key);
- ``png_bytes`` encodes the canvas about twice as fast as PIL or ``savefig``, and re-compresses only the bands of
  rows that changed since the last image of its size;
- ``LiveFigure``: the base of the course's live figures, built once on their axes and changed by ``update(result)``
  (a lab is its controls, one call into the formula layer, and ``figure.update(result)``); ``ResultArtists`` keeps
  what one update drew, for a figure that draws each result anew;
- two kinds of fast text for the animated artists. ``CachedText`` is a ``Text`` (any ``Text`` option, several
  lines, a box) pasted from a bitmap cached per string: the cheapest when the same strings come back, as tick
  labels do. ``FastText`` (and ``FastTextGroup``, many labels in one draw) is a one-line label built from its glyphs'
  outlines, about 0.2 ms for any new string, and pasted from a bitmap kept per string (0.03 ms): for text that
  changes on every update.

``figure.savefig`` still draws every artist, so a lab's figure stays an ordinary, complete matplotlib Figure.
"""

from __future__ import annotations

import functools
import math
import struct
import zlib
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.container import Container
from matplotlib.font_manager import FontProperties, findfont, get_font
from matplotlib.ft2font import LoadFlags
from matplotlib.patches import PathPatch
from matplotlib.path import Path
from matplotlib.text import Text
from matplotlib.textpath import TextPath
from matplotlib.transforms import Bbox, IdentityTransform

__all__ = [
    "LiveFigure",
    "ResultArtists",
    "PartialRedraw",
    "Panel",
    "png_bytes",
    "CachedText",
    "FastText",
    "FastTextGroup",
    "cached_pictures",
]


_PNG_BAND_ROWS = 16  # rows per independently compressed band: small enough that a label's change spares most bands
_previous_bands: dict = {}  # (width, height) -> [(raw band, its deflate blocks)] of the last image of that size


def png_bytes(rgba) -> bytes:
    """Encode an (height, width, 4) uint8 RGBA buffer as PNG: no row filters, zlib level 1.

    About 4 ms for a 648 × 288 figure where Pillow takes 10 (its adaptive row filters cost more than the
    compression), for a file of about the same size (30 KB). The image is deflated in bands of
    ``_PNG_BAND_ROWS`` rows, each by a fresh compressor ended with a sync flush (RFC 1951: a block boundary on a byte,
    nothing referred to across it), so a band equal to the same band of the previous image of that size reuses its
    compressed bytes: a slider that changes a label re-compresses a few bands, not the picture.

    >>> import zlib
    >>> import numpy as np
    >>> png = png_bytes(np.full((2, 3, 4), 255, dtype=np.uint8))
    >>> png[1:4], len(zlib.decompress(png[41:-16]))  # the rows: each a filter byte and 3 RGBA pixels
    (b'PNG', 26)
    """
    pixels = np.asarray(rgba, dtype=np.uint8)
    height, width = pixels.shape[:2]
    rows = np.zeros((height, 1 + 4 * width), dtype=np.uint8)  # each row starts with its filter type, 0 (none)
    rows[:, 1:] = pixels.reshape(height, -1)
    raw = rows.tobytes()
    stride = _PNG_BAND_ROWS * rows.shape[1]
    previous = _previous_bands.get((width, height), [])
    bands = []
    for index, start in enumerate(range(0, len(raw), stride)):
        band = raw[start : start + stride]
        if index < len(previous) and previous[index][0] == band:
            bands.append(previous[index])
        else:
            compressor = zlib.compressobj(1, zlib.DEFLATED, -15)  # raw deflate: the zlib wrapper is written below
            bands.append((band, compressor.compress(band) + compressor.flush(zlib.Z_SYNC_FLUSH)))
    _previous_bands[width, height] = bands
    # RFC 1950: header 78 01 (deflate, 32 KiB window, fastest), the blocks, a final empty block, Adler-32 of the rows
    stream = b"\x78\x01" + b"".join(blocks for _, blocks in bands) + b"\x03\x00" + struct.pack(">I", zlib.adler32(raw))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)  # 8 bits per channel, RGBA
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", stream) + chunk(b"IEND", b"")


class CachedText(Text):
    """A ``Text`` that the Agg renderer pastes from a bitmap cached per (string, look, dpi); other renderers (PDF,
    SVG) draw it as usual. Matplotlib lays out and rasterises text glyph by glyph, about 0.2 ms a glyph on a
    2-core machine; a cached bitmap is pasted in about 0.1 ms. ``CachedText.add(ax, x, y, text, **kwargs)`` adds
    one with ``ax.text``'s defaults.
    A ``bbox`` around the text is kept if it lies within 4 pixels of it (its style is not part of the key).
    """

    _bitmaps: dict = {}  # key -> (RGBA rows bottom-up, dx, dy from the anchor in pixels)
    _scratch: dict = {}  # (width, height, dpi) -> an off-screen renderer to rasterise into
    _MAX_BITMAPS = 4096

    @classmethod
    def add(cls, ax, x, y, text="", **kwargs) -> CachedText:
        """Add a CachedText to ``ax`` as ``ax.text`` would (data coordinates unless ``transform``, not clipped)."""
        return ax._add_text(cls(x, y, text, **{"transform": ax.transData, "clip_on": False, **kwargs}))

    def draw(self, renderer):
        if not isinstance(renderer, RendererAgg) or not self.get_visible() or self.get_text() == "":
            return super().draw(renderer)
        key = (
            self.get_text(),
            self.get_color(),
            self.get_fontproperties(),
            self.get_horizontalalignment(),
            self.get_verticalalignment(),
            self.get_rotation(),
            self.get_alpha(),
            self.get_bbox_patch() is not None,
            renderer.dpi,
        )
        anchor = self.get_transform().transform(self.get_unitless_position())
        entry = self._bitmaps.get(key)
        if entry is None:
            if len(self._bitmaps) >= self._MAX_BITMAPS:
                self._bitmaps.clear()
            entry = self._bitmaps[key] = self._rasterise(renderer, anchor)
        pixels, dx, dy = entry
        if not pixels.size:  # entirely off the canvas
            return
        gc = renderer.new_gc()
        if self.get_clip_on() and self.clipbox is not None:
            gc.set_clip_rectangle(self.clipbox)
        renderer.draw_image(gc, round(anchor[0]) + dx, round(anchor[1]) + dy, pixels)
        gc.restore()
        self.stale = False

    def _rasterise(self, renderer, anchor):
        width, height = int(renderer.width), int(renderer.height)
        scratch = self._scratch.get((width, height, renderer.dpi))
        if scratch is None:
            scratch = self._scratch[width, height, renderer.dpi] = RendererAgg(width, height, renderer.dpi)
        scratch.clear()
        super().draw(scratch)
        box, pad = super().get_window_extent(scratch), 4
        x0, x1 = max(math.floor(box.x0) - pad, 0), max(min(math.ceil(box.x1) + pad, width), 0)
        y0, y1 = max(math.floor(box.y0) - pad, 0), max(min(math.ceil(box.y1) + pad, height), 0)
        x1, y1 = max(x1, x0), max(y1, y0)
        rows = np.asarray(scratch.buffer_rgba())[height - y1 : height - y0, x0:x1]
        return rows[::-1].copy(), x0 - round(anchor[0]), y0 - round(anchor[1])  # draw_image wants rows bottom-up


@functools.cache
def _glyph(char: str, size: float, weight: str) -> tuple[np.ndarray, np.ndarray, float]:
    """Outline (vertices, codes) of one character in points, and its advance width."""
    prop = FontProperties(size=size, weight=weight)
    font = get_font(findfont(prop))
    font.set_size(size, 72)  # 72 dpi: one pixel per point
    advance = font.load_char(ord(char), flags=LoadFlags.NO_HINTING).linearHoriAdvance / 65536
    if char.isspace():  # no outline (TextPath fails on a lone space)
        return np.zeros((0, 2)), np.zeros(0, dtype=Path.code_type), advance
    path = TextPath((0, 0), char, size=size, prop=prop)
    return path.vertices, path.codes, advance


@functools.lru_cache(maxsize=4096)
def _glyphs(text: str, size: float, weight: str) -> tuple[Path, float, float]:
    """The outline of ``text`` in points (baseline at y = 0), with its left and right ends.

    Built from cached outlines of its characters placed at their advance widths (no kerning): a new string costs
    a fraction of a millisecond instead of the 2–5 ms of a ``TextPath``.
    """
    vertices, codes, x = [], [], 0.0
    for char in text:
        char_vertices, char_codes, advance = _glyph(char, size, weight)
        if len(char_vertices):
            vertices.append(char_vertices + (x, 0.0))
            codes.append(char_codes)
        x += advance
    if not vertices:
        return Path(np.zeros((1, 2))), 0.0, 0.0
    all_vertices = np.concatenate(vertices)
    # The control points bound the outline (Path.get_extents solves for the curves' extrema: 50 times slower).
    return Path(all_vertices, np.concatenate(codes)), float(all_vertices[:, 0].min()), float(all_vertices[:, 0].max())


@functools.lru_cache(maxsize=64)
def _line_box(size: float, weight: str) -> tuple[float, float]:
    """Bottom and top (points from the baseline) of a line of text: the same for every string, so labels whose text
    changes do not jump up and down."""
    vertices = TextPath((0, 0), "Åg|", size=size, prop=FontProperties(size=size, weight=weight)).vertices
    return float(vertices[:, 1].min()), float(vertices[:, 1].max())


class FastText(PathPatch):
    """A one-line label drawn as the filled outline of its glyphs, for text that changes on every update.

    On this machine a ``Text`` costs 2–10 ms to draw (layout and rasterisation of each glyph); the same string as a
    path costs about 0.2 ms, and its outline is cached per string. ``xy`` is placed by ``transform`` (data
    coordinates by default), then shifted by ``offset`` points; ``ha`` is left/center/right and ``va``
    bottom/center/top/baseline of the line box. ``get_text``/``set_text``/``set_position`` work as for ``Text``.
    """

    def __init__(
        self,
        ax,
        xy,
        text="",
        *,
        size=9.0,
        ha="left",
        va="baseline",
        color="#222222",
        weight="normal",
        transform=None,
        offset=(0.0, 0.0),
        zorder=4,
    ):
        super().__init__(
            Path(np.zeros((1, 2))), facecolor=color, edgecolor="none", linewidth=0, zorder=zorder, clip_on=False
        )  # like a Text: a label may reach past its axes
        self._anchor = transform if transform is not None else ax.transData
        self._xy, self._offset = tuple(xy), tuple(offset)
        self._size, self._weight, self._ha, self._va = float(size), weight, ha, va
        self.set_text(text)
        ax.add_artist(self)

    def get_text(self) -> str:
        return self._text

    def set_text(self, text) -> None:
        self._text = str(text)
        self.stale = True

    def get_position(self) -> tuple:
        return self._xy

    def set_position(self, xy) -> None:
        self._xy = tuple(xy)
        self.stale = True

    def set_x(self, x) -> None:
        self.set_position((x, self._xy[1]))

    def set_offset(self, offset) -> None:
        self._offset = tuple(offset)
        self.stale = True

    def set_horizontalalignment(self, ha) -> None:
        self._ha = ha
        self.stale = True

    @property
    def size_pt(self) -> float:
        """The font size in points."""
        return self._size

    def text_boxes(self, renderer) -> list:
        """[(text, its box in display pixels)] for the label drawn (none when it is empty), as a ``Text``'s window
        extent: the line box's height, the glyphs' width (``course_lib.viz.figure_check`` reads it)."""
        if not self._text:
            return []
        x, y = self._anchor.transform(self._xy)
        return [(self._text, _label_box(self._text, self._size, self._weight, self._ha, self._va, renderer,
                                        (x + self._offset[0] * renderer.points_to_pixels(1.0),
                                         y + self._offset[1] * renderer.points_to_pixels(1.0))))]  # fmt: skip

    def draw(self, renderer):
        if not self.get_visible() or not self._text:
            return
        scale = renderer.points_to_pixels(1.0)
        x, y = self._anchor.transform(self._xy)
        anchor = (x + self._offset[0] * scale, y + self._offset[1] * scale)
        _draw_labels(self, renderer, [(anchor, self._text)], self._size, self._weight, self._ha, self._va)


class FastTextGroup(PathPatch):
    """Several one-line labels of one style (``FastText``'s) drawn as a single path: one draw for all of them.

    ``set_texts([(xy, text), ...])`` replaces the labels (``xy`` placed by ``transform``, data coordinates by
    default); ``get_texts()`` returns their strings in order.
    """

    def __init__(
        self, ax, *, size=9.0, ha="left", va="baseline", color="#222222", weight="normal", transform=None, zorder=4
    ):
        super().__init__(
            Path(np.zeros((1, 2))), facecolor=color, edgecolor="none", linewidth=0, zorder=zorder, clip_on=False
        )
        self._anchor = transform if transform is not None else ax.transData
        self._size, self._weight, self._ha, self._va = float(size), weight, ha, va
        self._entries: tuple = ()
        ax.add_artist(self)

    def set_texts(self, entries) -> None:
        self._entries = tuple((tuple(xy), str(text)) for xy, text in entries if str(text))
        self.stale = True

    def get_texts(self) -> list[str]:
        return [text for _, text in self._entries]

    def get_positions(self) -> list[tuple]:
        return [xy for xy, _ in self._entries]

    @property
    def size_pt(self) -> float:
        """The font size in points (every label's)."""
        return self._size

    def text_boxes(self, renderer) -> list:
        """[(text, its box in display pixels)] of every label, as ``FastText.text_boxes``."""
        anchors = self._anchor.transform(np.array([xy for xy, _ in self._entries], dtype=float).reshape(-1, 2))
        return [
            (text, _label_box(text, self._size, self._weight, self._ha, self._va, renderer, anchor))
            for anchor, (_, text) in zip(anchors, self._entries, strict=True)
        ]

    def draw(self, renderer):
        if not self.get_visible() or not self._entries:
            return
        anchors = self._anchor.transform(np.array([xy for xy, _ in self._entries], dtype=float))
        labels = [(anchor, text) for anchor, (_, text) in zip(anchors, self._entries, strict=True)]
        _draw_labels(self, renderer, labels, self._size, self._weight, self._ha, self._va)


_label_bitmaps: dict = {}  # (text, look, fraction of a pixel) -> (RGBA rows bottom-up, dx, dy from the anchor)
_MAX_LABEL_BITMAPS = 8192


def _draw_labels(patch: PathPatch, renderer, labels, size: float, weight: str, ha: str, va: str) -> None:
    """Draw one-line ``labels`` [(anchor in display pixels, text)] as ``patch`` draws a path (its colour, no edge).

    On Agg each label is pasted from a bitmap of its outline, kept per (text, look, dpi, the anchor's fraction of a
    pixel, to 1/64): within 4 levels of 255 of filling the outline in place (Agg's coverage moves with a whole-pixel
    shift; blending twice rounds twice), about 0.03 ms where rasterising a label takes 0.1–0.5 ms. Every label is
    pasted, the first time too, so what a figure shows does not depend on what it showed before; the labels met for
    the first time are rasterised together, in one path. Other renderers (PDF, SVG) fill the outlines.
    """
    if not isinstance(renderer, RendererAgg):
        _fill_outlines(patch, renderer, labels, size, weight, ha, va)
        return
    look = (size, weight, ha, va, tuple(patch.get_facecolor()), renderer.dpi)
    placed = []
    for (x, y), text in labels:
        whole_x, whole_y = math.floor(x), math.floor(y)
        fraction = (round((x - whole_x) * 64) / 64, round((y - whole_y) * 64) / 64)
        placed.append(((text, look, fraction), whole_x, whole_y))
    missing = list(dict.fromkeys(key for key, _, _ in placed if key not in _label_bitmaps))
    if missing:
        if len(_label_bitmaps) + len(missing) > _MAX_LABEL_BITMAPS:
            _label_bitmaps.clear()
        _label_bitmaps.update(zip(missing, _rasterise_labels(patch, renderer, missing), strict=True))
    gc = renderer.new_gc()
    for key, whole_x, whole_y in placed:
        pixels, dx, dy = _label_bitmaps[key]
        renderer.draw_image(gc, whole_x + dx, whole_y + dy, pixels)
    gc.restore()
    patch.stale = False


def _rasterise_labels(patch: PathPatch, renderer, keys) -> list:
    """[(RGBA rows bottom-up, dx, dy)] of each label ``key`` (text, look, fraction): its outline filled by ``patch``
    on a transparent canvas, the anchor ``fraction`` of a pixel past (dx, dy) from the bitmap's lower left corner.
    The labels are stacked in one canvas, each in its own rows with a pixel to spare around its outline, and filled
    as one path."""
    scale, boxes, vertices, codes, height = renderer.points_to_pixels(1.0), [], [], [], 0
    for text, (size, weight, ha, va, *_), fraction in keys:
        glyph_vertices, glyph_codes, (low_x, low_y, high_x, high_y) = _aligned_glyphs(text, size, weight, ha, va)
        left, bottom = math.floor(low_x * scale + fraction[0]) - 1, math.floor(low_y * scale + fraction[1]) - 1
        right, top = math.ceil(high_x * scale + fraction[0]) + 1, math.ceil(high_y * scale + fraction[1]) + 1
        boxes.append((left, bottom, right - left, top - bottom, height))
        vertices.append(glyph_vertices * scale + (fraction[0] - left, fraction[1] - bottom + height))
        codes.append(glyph_codes)
        height += top - bottom
    width = max(box[2] for box in boxes)
    canvas = RendererAgg(width, height, renderer.dpi)
    patch._path = Path(np.concatenate(vertices), np.concatenate(codes))
    patch.set_transform(IdentityTransform())  # the vertices are in the canvas's pixels already
    PathPatch.draw(patch, canvas)
    rows = np.asarray(canvas.buffer_rgba())  # top row first
    return [
        (rows[height - (row + box_height) : height - row, :box_width][::-1].copy(), left, bottom)
        for left, bottom, box_width, box_height, row in boxes
    ]


def _fill_outlines(patch: PathPatch, renderer, labels, size: float, weight: str, ha: str, va: str) -> None:
    """Fill the outlines of ``labels`` [(anchor in display pixels, text)] with ``patch``, as one path."""
    scale, vertices, codes = renderer.points_to_pixels(1.0), [], []
    for anchor, text in labels:
        glyph_vertices, glyph_codes, _ = _aligned_glyphs(text, size, weight, ha, va)
        vertices.append(glyph_vertices * scale + anchor)
        codes.append(glyph_codes)
    patch._path = Path(np.concatenate(vertices), np.concatenate(codes))
    patch.set_transform(IdentityTransform())  # the vertices are in display coordinates already
    PathPatch.draw(patch, renderer)


def _label_box(text: str, size: float, weight: str, ha: str, va: str, renderer, anchor) -> Bbox:
    """The box of a one-line label in display pixels, as a ``Text``'s: its characters' advance widths (the space a
    reader needs around the glyphs), over the line box."""
    _, left, right = _glyphs(text, size, weight)
    advance = sum(_glyph(char, size, weight)[2] for char in text)
    bottom, top = _line_box(size, weight)
    dx = {"left": -left, "center": -(left + right) / 2, "right": -right}[ha]
    dy = {"baseline": 0.0, "bottom": -bottom, "center": -(bottom + top) / 2, "top": -top}[va]
    scale = renderer.points_to_pixels(1.0)
    x0, y0 = anchor[0] + dx * scale, anchor[1] + (bottom + dy) * scale
    return Bbox([[x0, y0], [x0 + advance * scale, y0 + (top - bottom) * scale]])


@functools.lru_cache(maxsize=4096)
def _aligned_glyphs(text: str, size: float, weight: str, ha: str, va: str) -> tuple[np.ndarray, np.ndarray, tuple]:
    """Vertices (points, relative to the anchor given by ``ha``/``va``) and codes of ``text``'s outline, and the
    vertices' (lowest x and y, highest x and y): the control points bound the outline. Cached: do not change them."""
    path, left, right = _glyphs(text, size, weight)
    bottom, top = _line_box(size, weight)
    dx = {"left": -left, "center": -(left + right) / 2, "right": -right}[ha]
    dy = {"baseline": 0.0, "bottom": -bottom, "center": -(bottom + top) / 2, "top": -top}[va]
    codes = path.codes if path.codes is not None else np.full(len(path.vertices), Path.MOVETO, dtype=Path.code_type)
    vertices = path.vertices + (dx, dy)
    vertices.flags.writeable = False  # shared by every caller (cached)
    return vertices, codes, (*vertices.min(axis=0), *vertices.max(axis=0))


class Panel(NamedTuple):
    """A vertical strip of a figure, drawn apart: its axes' static artists depend on the controls only via ``key``.

    ``x_range`` is the strip in figure fractions; ``draw_static(example)`` sets the static artists of ``axes`` for
    ``key(example)``; ``examples`` hold one example of each key, drawn at construction (a key first met in
    ``set_static_state`` is drawn then). ``axes`` None: the whole figure (every artist that is not animated).

    ``layered``: the static artists of the panel's one axes depend on ``key`` only through its x and y limits (each
    axis' ticks, labels and grid through its own limits). A key's picture is then put together from a picture of
    each axis drawn alone, cached per its limits, over the axes' background and under the rest (spines, title,
    legend), drawn once: a new key costs the drawing of only the axis whose limits are new (a third of a full
    draw) and a key whose limits were all seen before costs none.
    """

    x_range: tuple[float, float]
    axes: tuple | None
    key: Callable
    draw_static: Callable
    examples: tuple
    layered: bool = False


class LiveFigure:
    """A figure drawn once on its axes and changed in place: the constructor builds every artist, ``update(result)``
    changes only the ``animated`` ones (data, colours, texts), never the axes' scales or legend.

    A figure whose static artists depend on the result (a legend greying out what does not apply, a grid of p
    rows) says so with ``static_key(example)`` (the same key, the same static artists), ``set_static(example)``
    and ``static_examples`` (one example of each key); ``panel(x_range)`` is then its strip for ``PartialRedraw``.
    A figure that a lab updates only when a new measurement arrives (lesson 07's, lesson 08's) may instead draw
    each result anew, legend and limits included: its ``animated`` are then what the last update drew
    (``ResultArtists``), and it is redrawn in full, never by ``PartialRedraw``.
    Subclasses set ``animated`` and implement ``update``; ``ax`` is the first of their ``axes`` (for most, the one).
    """

    animated: tuple = ()
    static_examples: tuple = (None,)

    def __init__(self, *axes):
        self.axes = tuple(axes)
        self.ax = self.axes[0] if self.axes else None

    def update(self, result) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def static_key(self, _example):
        """What the static artists depend on (None: nothing; they never change)."""
        return None

    def set_static(self, example) -> None:
        """Set the static artists for ``example`` (called only when ``static_key`` changes)."""

    def panel(self, x_range) -> Panel:
        """This figure as a ``Panel`` of ``PartialRedraw``: the strip ``x_range`` (figure fractions) of its axes."""
        return Panel(tuple(x_range), self.axes, self.static_key, self.set_static, tuple(self.static_examples))


class ResultArtists:
    """What a live figure's ``update`` drew for one result on ``ax``, for a figure that draws each result anew.

    ``add(*items)`` keeps artists, or containers (an errorbar's, a bar chart's) with their artists; ``clear()``
    removes them all and gives the axes back the data limits and autoscaling they had when this was made
    (at the end of the figure's constructor), so that the next update draws on the axes as a fresh figure's;
    ``artists`` are the artists kept, containers' included.

    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> drawn = ResultArtists(ax)
    >>> drawn.add(ax.bar([0, 1], [5.0, 9.0]))
    >>> len(drawn.artists), len(ax.containers), float(ax.get_ylim()[1])
    (2, 1, 9.45)
    >>> drawn.clear()
    >>> drawn.add(*ax.plot([0, 1], [1.0, 2.0]))  # the limits follow the line alone, as on a fresh axes
    >>> len(ax.patches), len(ax.containers), float(ax.get_ylim()[1])
    (0, 0, 2.05)
    """

    def __init__(self, ax):
        self.ax = ax
        self.items: list = []
        self._autoscale = (ax.get_autoscalex_on(), ax.get_autoscaley_on())

    def add(self, *items) -> None:
        self.items.extend(items)

    @property
    def artists(self) -> tuple:
        return tuple(
            artist
            for item in self.items
            for artist in (item.get_children() if isinstance(item, Container) else (item,))
            if artist is not None
        )

    def clear(self) -> None:
        if not self.items:  # the axes are as the constructor left them
            return
        for item in self.items:
            item.remove()
        self.items = []
        self.ax.relim()  # the data limits of what is left: what the constructor drew
        for axis, on in zip("xy", self._autoscale, strict=True):
            self.ax.autoscale(on, axis=axis)


_BACKGROUNDS: dict = {}  # (owner, panel index, key, width, height) → picture of the panel's static artists


def cached_pictures(owner: str) -> set:
    """The pictures of static artists kept for ``owner``'s figures, as (owner, panel index, key, width, height):
    labs of one class share them, so each is drawn once per process.

    >>> cached_pictures("no such lab")
    set()
    """
    return {key for key in _BACKGROUNDS if key[0] == owner}


class PartialRedraw:
    """Renders ``figure`` to PNG by drawing only its ``animated`` artists over cached pictures of the rest.

    ``panels`` cut the figure into vertical strips whose static artists may depend on the controls (a legend that
    greys out the algorithms that do not apply, a grid of p rows): one picture of each strip is kept per key, all
    drawn here, at construction, so that no update pays for one. Without ``panels`` the whole figure is one static
    picture. ``owner`` names what draws the figure (a lab class): labs of one class share their pictures.

    >>> from matplotlib.figure import Figure
    >>> figure = Figure(figsize=(2, 1), dpi=72)
    >>> line, = figure.add_axes((0.1, 0.1, 0.8, 0.8)).plot([0, 1], [0, 1])
    >>> redraw = PartialRedraw("example", figure, [line])
    >>> line.set_ydata([1, 0])  # an update changes only the animated artists ...
    >>> redraw.png()[1:4]  # ... and only they are drawn again, into a PNG
    b'PNG'
    """

    MAX_COMPOSITES = 32  # layered pictures kept per redraw besides those on show (each a strip, about 0.5 MB)

    def __init__(self, owner: str, figure, animated, panels=None):
        FigureCanvasAgg(figure)  # a canvas of our own: its renderer, and with it the text-layout caches, persist
        self.owner = owner
        self.figure = figure
        self.animated = sorted(animated, key=Artist.get_zorder)
        for artist in self.animated:
            artist.set_animated(True)  # left out of the background; savefig still draws it
        if panels is None:
            panels = [Panel((0.0, 1.0), None, lambda _example: None, lambda _example: None, (None,))]
        self.panels = tuple(panels)
        self.keys = [None] * len(self.panels)
        self.backgrounds = {}
        for index, panel in enumerate(self.panels):
            for example in panel.examples:
                self._draw_picture(index, example)

    def _columns(self, index: int) -> tuple[int, int]:
        """The panel's strip as canvas columns [x0, x1)."""
        width = self.figure.canvas.get_width_height()[0]
        return round(self.panels[index].x_range[0] * width), round(self.panels[index].x_range[1] * width)

    def _draw_picture(self, index: int, example) -> None:
        """Keep the picture of panel ``index``'s static artists for ``example`` (drawn unless one is cached)."""
        panel = self.panels[index]
        key = panel.key(example)
        width, height = self.figure.canvas.get_width_height()
        shared = (self.owner, index, key, width, height)
        if panel.layered and shared not in _BACKGROUNDS:
            self._set_panel_state(index, example)
            if self._layerable(panel):
                # A composite takes a few ms from cached layers: this redraw keeps the latest few, not every one.
                in_use = {(i, k) for i, k in enumerate(self.keys)}
                composites = [
                    name for name, kept in self.backgrounds.items() if isinstance(kept, tuple) and name not in in_use
                ]
                for name in composites[: max(0, len(composites) - self.MAX_COMPOSITES + 1)]:
                    del self.backgrounds[name]
                self.backgrounds[index, key] = self._layered_picture(index)
                return
        if shared not in _BACKGROUNDS:
            self._set_panel_state(index, example)
            renderer = self.figure.canvas.get_renderer()
            renderer.clear()
            # Not saving: the animated artists are left out.
            if panel.axes is None:
                self.figure.draw(renderer)
            else:
                self.figure.patch.draw(renderer)
                for ax in panel.axes:
                    ax.draw(renderer)
            x0, x1 = self._columns(index)
            _BACKGROUNDS[shared] = self.figure.canvas.copy_from_bbox(Bbox([[x0, 0], [x1, height]]))
        self.backgrounds[index, key] = _BACKGROUNDS[shared]

    @staticmethod
    def _layerable(panel) -> bool:
        """One axes, and nothing static drawn between its background and its axes (as the layers assume)."""
        if panel.axes is None or len(panel.axes) != 1:
            return False
        (ax,) = panel.axes
        lowest = min(ax.xaxis.get_zorder(), ax.yaxis.get_zorder())
        return not any(
            child.get_visible() and not child.get_animated() and child.get_zorder() <= lowest
            for child in ax.get_children()
            if child not in (ax.patch, ax.xaxis, ax.yaxis)
        )

    def _layer(self, index: int, name, draw) -> np.ndarray:
        """The panel's strip with only what ``draw(renderer)`` draws, on a transparent canvas (cached by ``name``)."""
        width, height = self.figure.canvas.get_width_height()
        shared = (self.owner, index, name, width, height)
        if shared not in _BACKGROUNDS:
            renderer = self.figure.canvas.get_renderer()
            renderer.clear()
            draw(renderer)
            x0, x1 = self._columns(index)
            _BACKGROUNDS[shared] = np.asarray(renderer.buffer_rgba())[:, x0:x1].copy()
        return _BACKGROUNDS[shared]

    def _layered_picture(self, index: int) -> tuple:
        """(x0, x1, RGBA rows): the background, the x axis, the y axis and the rest of the axes, composited in the
        order ``Axes.draw`` draws them (a straight-alpha "over", as Agg blends onto an opaque canvas)."""
        (ax,) = self.panels[index].axes

        def background(renderer):
            self.figure.patch.draw(renderer)
            if ax.axison and ax.get_frame_on():
                ax.patch.draw(renderer)

        def rest(renderer):
            hidden = [artist for artist in (ax.patch, ax.xaxis, ax.yaxis) if artist.get_visible()]
            for artist in hidden:
                artist.set_visible(False)
            try:
                ax.draw(renderer)
            finally:
                for artist in hidden:
                    artist.set_visible(True)

        axes_first = sorted((ax.xaxis, ax.yaxis), key=Artist.get_zorder)  # x before y on a tie, as Axes.draw does
        layers = [
            self._layer(index, ("axis", axis.axis_name, tuple(axis.get_view_interval())), axis.draw)
            for axis in axes_first
            if axis.get_visible()
        ]
        under = self._layer(index, "background", background)
        over = self._layer(index, "rest", rest)
        pixels = under.copy()
        for layer in (*layers, over):
            drawn = layer[..., 3] > 0  # a layer covers a few per cent of its strip: blend only those pixels
            source, target = layer[drawn].astype(np.float32), pixels[drawn].astype(np.float32)
            alpha = source[:, 3:] / 255.0
            target[:, :3] += (source[:, :3] - target[:, :3]) * alpha
            target[:, 3:] += (255.0 - target[:, 3:]) * alpha
            pixels[drawn] = np.rint(target)
        return (*self._columns(index), pixels)

    def _set_panel_state(self, index: int, example) -> None:
        panel = self.panels[index]
        key = panel.key(example)
        if key != self.keys[index]:
            panel.draw_static(example)
            self.keys[index] = key

    def set_static_state(self, example) -> None:
        """Set every panel's static artists for ``example`` (each only when its key changes), drawing the picture
        of a key not met before."""
        for index, panel in enumerate(self.panels):
            if (index, panel.key(example)) not in self.backgrounds:
                self._draw_picture(index, example)
            self._set_panel_state(index, example)

    def png(self) -> bytes:
        """Restore each strip's picture, draw the animated artists over it, and encode the canvas as PNG."""
        canvas = self.figure.canvas
        for index, key in enumerate(self.keys):
            picture = self.backgrounds[index, key]
            if isinstance(picture, tuple):  # a layered panel's composite: (x0, x1, RGBA rows)
                x0, x1, pixels = picture
                np.asarray(canvas.get_renderer().buffer_rgba())[:, x0:x1] = pixels  # (made if nothing drew yet)
            else:
                canvas.restore_region(picture)
        renderer = canvas.get_renderer()
        for artist in self.animated:
            if artist.get_visible():
                artist.draw(renderer)
        return png_bytes(canvas.buffer_rgba())
