"""What every lab shares: unit-labelled controls, a figure built once and shown as a PNG, and the update loop.

A lab is an ipywidgets ``VBox`` with three public attributes that tests and graders use:

- ``controls``: name → control widget (the names are fixed per lab);
- ``result``: the latest computed values, a plain dict of floats/ints/strings, updated synchronously whenever a
  control changes;
- ``figure``: the matplotlib Figure, built once; updates change its artists and never rebuild it.

The figure reaches the page as PNG bytes in an ``ipywidgets.Image``: this works the same in JupyterLab, on
Binder, in Voila and in a test process without a browser, and needs no matplotlib widget backend. A control
whose range spans decades is a ``SelectionSlider`` over log-spaced values whose labels carry the unit ("64 MB",
"5 µs"), so no position can hold a value outside the lab's range.
"""

from __future__ import annotations

import io
import math
import struct
import zlib

import ipywidgets as widgets
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

__all__ = ["Lab", "CachedText", "png_bytes", "nice_values", "unit_slider", "choice_buttons", "int_slider"]

CONTROL_STYLE = {"description_width": "150px"}
CONTROL_LAYOUT = widgets.Layout(width="460px")


def nice_values(low: float, high: float, mantissas=(1, 2, 5)) -> list:
    """Values m × 10^k within [low, high] for each mantissa m, plus both ends: the stops of a log slider.

    >>> nice_values(1e3, 1e4)
    [1000.0, 2000.0, 5000.0, 10000.0]
    >>> nice_values(1e-7, 1e-4, mantissas=(1, 2, 5))[:4]
    [1e-07, 2e-07, 5e-07, 1e-06]
    """
    values = {float(low), float(high)}
    for exponent in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1):
        for mantissa in mantissas:
            value = float(f"{mantissa * 10.0**exponent:.12g}")
            if low <= value <= high:
                values.add(value)
    return sorted(values)


def stops_with(values, value) -> list:
    """The slider stops ``values`` plus ``value``, so an initial value off the stops is kept exactly, not snapped
    (a value within rounding error of a stop, such as 5 × US for 5e-06, is that stop).

    >>> stops_with([1e-6, 5e-6, 1e-5], 5e-6) == [1e-6, 5e-6, 1e-5]
    True
    >>> stops_with([1e-6, 5e-6, 1e-5], 6e-6)
    [1e-06, 5e-06, 6e-06, 1e-05]
    """
    values = sorted(values)
    return values if any(same_stop(v, value) for v in values) else sorted([*values, value])


def same_stop(x, y) -> bool:
    """Equal up to rounding: 100 × US and 1e-4 name the same stop of a slider."""
    return x == y or (isinstance(x, (int, float)) and isinstance(y, (int, float))
                      and math.isclose(x, y, rel_tol=1e-9, abs_tol=0.0))


def unit_slider(description: str, values, value, formatter, continuous_update: bool = True) -> widgets.SelectionSlider:
    """A slider over ``values`` whose readout is ``formatter(value)``; ``value`` snaps to the nearest option."""
    values = list(values)
    nearest = min(values, key=lambda v: abs(math.log(v / value)) if v > 0 and value > 0 else abs(v - value))
    return widgets.SelectionSlider(options=[(formatter(v), v) for v in values], value=nearest,
                                   description=description, continuous_update=continuous_update,
                                   style=CONTROL_STYLE, layout=CONTROL_LAYOUT)


def int_slider(description: str, low: int, high: int, value: int, step: int = 1) -> widgets.IntSlider:
    """A plain integer slider with the labs' look."""
    return widgets.IntSlider(value=value, min=low, max=high, step=step, description=description,
                             style=CONTROL_STYLE, layout=CONTROL_LAYOUT)


def choice_buttons(description: str, options, value) -> widgets.ToggleButtons:
    """Toggle buttons for a small set of named choices (``options``: (label, value) pairs or values)."""
    return widgets.ToggleButtons(options=options, value=value, description=description, style=CONTROL_STYLE)


def png_bytes(rgba) -> bytes:
    """Encode an (height, width, 4) uint8 RGBA buffer as PNG: no row filters, zlib level 1.

    About 4 ms for a 648 × 288 figure where Pillow takes 10 (its adaptive row filters cost more than the
    compression), for a file of about the same size (30 KB).
    """
    pixels = np.asarray(rgba, dtype=np.uint8)
    height, width = pixels.shape[:2]
    rows = np.zeros((height, 1 + 4 * width), dtype=np.uint8)  # each row starts with its filter type, 0 (none)
    rows[:, 1:] = pixels.reshape(height, -1)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)  # 8 bits per channel, RGBA
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows.tobytes(), 1))
            + chunk(b"IEND", b""))


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
    def add(cls, ax, x, y, text="", **kwargs) -> "CachedText":
        """Add a CachedText to ``ax`` as ``ax.text`` would (data coordinates unless ``transform``, not clipped)."""
        return ax._add_text(cls(x, y, text, **{"transform": ax.transData, "clip_on": False, **kwargs}))

    def draw(self, renderer):
        if not isinstance(renderer, RendererAgg) or not self.get_visible() or self.get_text() == "":
            return super().draw(renderer)
        key = (self.get_text(), self.get_color(), self.get_fontproperties(), self.get_horizontalalignment(),
               self.get_verticalalignment(), self.get_rotation(), self.get_alpha(), self.get_bbox_patch() is not None,
               renderer.dpi)
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
        rows = np.asarray(scratch.buffer_rgba())[height - y1:height - y0, x0:x1]
        return rows[::-1].copy(), x0 - round(anchor[0]), y0 - round(anchor[1])  # draw_image wants rows bottom-up


class Lab(widgets.VBox):
    """Base class: subclasses build ``controls`` and ``figure``, then implement ``compute`` and ``draw``.

    ``compute(values)`` takes {control name: value} and returns the result dict (pure: it calls course_lib and
    nothing else); ``draw(result)`` updates the figure's artists; ``summary_html(result)`` returns the HTML shown
    above the figure (quantities formatted with units). ``refresh()`` runs the three and renders the PNG.
    """

    dpi = 72
    # Opt-in fast rendering: artists (inside Axes) that ``draw`` changes, set by a subclass before Lab.__init__.
    # Everything else is drawn once into a cached background; see ``render``.
    animated: tuple = ()
    _background = None

    def __init__(self, title: str, controls: dict, figure: Figure, extra_children=()):
        self.controls = dict(controls)
        self.figure = figure
        self.result: dict = {}
        self.summary = widgets.HTML(layout=widgets.Layout(min_height="3em"))
        self.summary.add_class("course-lab-summary")
        # Shown at its own pixel size (not stretched to the box width, which blurs the text), shrunk on narrow pages.
        self.image = widgets.Image(format="png", layout=widgets.Layout(width="auto", max_width="100%",
                                                                       align_self="flex-start"))
        header = widgets.HTML(f"<h3 style='margin:0.2em 0'>{title}</h3>")
        super().__init__(children=[header, *self.controls.values(), *extra_children, self.summary, self.image])
        for control in self.controls.values():
            control.observe(self._on_change, names="value")
        self.refresh()

    # Subclasses implement these three.
    def compute(self, values: dict) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def draw(self, result: dict) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def summary_html(self, result: dict) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def values(self) -> dict:
        """The controls' current values."""
        return {name: control.value for name, control in self.controls.items()}

    def refresh(self) -> None:
        """Recompute the result from the controls, update the figure's artists and re-render the PNG."""
        self.result = self.compute(self.values())
        self.draw(self.result)
        self.summary.value = self.summary_html(self.result)
        self.render()

    def render(self) -> None:
        """Draw the figure to PNG bytes and hand them to the Image widget.

        With ``animated`` artists, the rest of the figure is drawn once into a background that each render pastes
        before drawing only those artists (a text costs about 1 ms on a 2-core machine, so redrawing every tick
        label and legend entry would exceed the labs' 30 ms). ``figure.savefig`` still draws every artist.
        """
        if not self.animated:
            buffer = io.BytesIO()
            self.figure.savefig(buffer, format="png", dpi=self.dpi)
            self.image.value = buffer.getvalue()
            return
        if self._background is None:
            canvas = FigureCanvasAgg(self.figure)  # a canvas of our own: its renderer and text caches persist
            for artist in self.animated:
                artist.set_animated(True)  # left out of canvas.draw(), still drawn by savefig
            canvas.draw()
            self._background = canvas.copy_from_bbox(self.figure.bbox)
        canvas = self.figure.canvas
        canvas.restore_region(self._background)
        renderer = canvas.get_renderer()
        for artist in self.animated:
            if artist.get_visible():
                artist.draw(renderer)
        self.image.value = png_bytes(canvas.buffer_rgba())

    def _on_change(self, _change) -> None:
        self.refresh()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(controls={sorted(self.controls)})"
