"""What every lab shares: unit-labelled controls, a figure built once and shown as a PNG, and the update loop.

A lab is an ipywidgets ``VBox`` with three public attributes that tests and graders use:

- ``controls``: name → control widget (the names are fixed per lab);
- ``result``: the latest computed values, a plain dict of floats/ints/strings, updated synchronously whenever a
  control changes (a view of ``typed_result``, with fixed keys per lab);
- ``typed_result``: the same values as ``compute`` returned them: for a converted lab one frozen dataclass with named
  fields, the only thing its figure and summary read;
- ``figure``: the matplotlib Figure, built once; updates change its artists and never rebuild it.

The figure reaches the page as PNG bytes in an ``ipywidgets.Image``: this works the same in JupyterLab, on
Binder, in Voila and in a test process without a browser, and needs no matplotlib widget backend. A control
whose range spans decades is a ``SelectionSlider`` over log-spaced values whose labels carry the unit ("64 MB",
"5 µs"), so no position can hold a value outside the lab's range.
"""

from __future__ import annotations

import dataclasses
import io
import math

import ipywidgets as widgets
from matplotlib.figure import Figure

from .. import parallelism
from ..viz.fast import PartialRedraw

__all__ = [
    "Lab",
    "nice_values",
    "unit_slider",
    "option_slider",
    "dropdown",
    "choice_buttons",
    "int_slider",
    "nearest_option",
    "set_options",
    "check_choices",
    "initial_values",
    "plan_from",
]

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
    return x == y or (
        isinstance(x, (int, float)) and isinstance(y, (int, float)) and math.isclose(x, y, rel_tol=1e-9, abs_tol=0.0)
    )


def unit_slider(description: str, values, value, formatter, continuous_update: bool = True) -> widgets.SelectionSlider:
    """A slider over ``values`` whose readout is ``formatter(value)``; ``value`` snaps to the nearest option."""
    values = list(values)
    nearest = min(values, key=lambda v: abs(math.log(v / value)) if v > 0 and value > 0 else abs(v - value))
    return widgets.SelectionSlider(
        options=[(formatter(v), v) for v in values],
        value=nearest,
        description=description,
        continuous_update=continuous_update,
        style=CONTROL_STYLE,
        layout=CONTROL_LAYOUT,
    )


def option_slider(description: str, options, value) -> widgets.SelectionSlider:
    """A slider over a few numbers (sizes such as t, p, d, m), each labelled as written.

    >>> option_slider("tensor parallel t", (1, 2, 4, 8), 4).options[2]
    ('4', 4)
    """
    return unit_slider(description, options, value, str)


def dropdown(description: str, options, value) -> widgets.Dropdown:
    """A drop-down list of names (models, devices, clusters) with the labs' look."""
    return widgets.Dropdown(
        options=list(options), value=value, description=description, style=CONTROL_STYLE, layout=CONTROL_LAYOUT
    )


def nearest_option(options, value):
    """The option closest to ``value`` on a log scale (the smaller one on a tie): where a size slider lands when its
    options change under it (a new model has other divisors).

    >>> nearest_option((1, 2, 4, 8), 3), nearest_option((1, 3, 9), 100), nearest_option((2, 8), 4)
    (4, 9, 2)
    """
    return min(options, key=lambda option: (abs(math.log(option / value)), option))


def set_options(control, options, value, label=str) -> None:
    """Give a selection control the choices ``options`` and the value ``value``, each only if it changed. A control
    whose options are (label, value) pairs gets pairs labelled by ``label``, one of plain values plain values.

    >>> slider = option_slider("t", (1, 2, 4), 2)
    >>> set_options(slider, (1, 3), 3)
    >>> slider.options, slider.value
    ((('1', 1), ('3', 3)), 3)
    """
    options = tuple(options)
    current = tuple(option[1] if isinstance(option, tuple) else option for option in control.options)
    if current != options:
        labelled = bool(control.options) and isinstance(control.options[0], tuple)
        control.options = [(label(option), option) for option in options] if labelled else list(options)
    if control.value != value:
        control.value = value


def check_choices(values: dict, allowed: dict, context: str = "") -> None:
    """Raise ``ValueError`` unless each ``values[name]`` is one of ``allowed[name]`` (a bool only where the choices
    are bools: ``True`` is not the size 1). ``context`` ends the message (" (for GPT-3 175B)").

    >>> check_choices({"tensor_parallel": 8}, {"tensor_parallel": (1, 2, 4, 8)})
    >>> check_choices({"tensor_parallel": True}, {"tensor_parallel": (1, 2, 4, 8)}, " (for GPT-3 175B)")
    Traceback (most recent call last):
    ValueError: tensor_parallel must be one of [1, 2, 4, 8] (for GPT-3 175B), got True
    """
    for name, options in allowed.items():
        options = list(options)
        value = values[name]
        booleans = all(isinstance(option, bool) for option in options)
        if isinstance(value, bool) != booleans or value not in options:
            raise ValueError(f"{name} must be one of {options}{context}, got {value!r}")


def int_slider(description: str, low: int, high: int, value: int, step: int = 1) -> widgets.IntSlider:
    """A plain integer slider with the labs' look."""
    return widgets.IntSlider(
        value=value, min=low, max=high, step=step, description=description, style=CONTROL_STYLE, layout=CONTROL_LAYOUT
    )


def choice_buttons(description: str, options, value) -> widgets.ToggleButtons:
    """Toggle buttons for a small set of named choices (``options``: (label, value) pairs or values)."""
    return widgets.ToggleButtons(options=options, value=value, description=description, style=CONTROL_STYLE)


def labelled_row(control: widgets.Widget) -> widgets.Widget:
    """``control`` as shown in a lab. ipywidgets 8 puts a ToggleButtons' description on a line of its own, flush
    left; it goes instead into a label as wide as the sliders' descriptions and right-aligned like them, in a row
    with the buttons, so that every control's name lines up. (The control keeps no description of its own then.)
    """
    if not isinstance(control, widgets.ToggleButtons) or not control.description:
        return control
    label = widgets.Label(
        control.description,
        layout=widgets.Layout(
            width=CONTROL_STYLE["description_width"], justify_content="flex-end", margin="0 8px 0 0", flex="0 0 auto"
        ),
    )
    control.description = ""
    return widgets.HBox([label, control])


def initial_values(defaults: dict, initial: dict, lab: str) -> dict:
    """The lab's starting values: ``defaults`` updated with ``initial``; a preset object (a model, a device, a
    cluster) may stand for its name. An unknown control raises ``ValueError`` naming it and the lab's controls.

    >>> initial_values({"stages": 4, "schedule": "1f1b"}, {"stages": 8}, "pipeline lab")
    {'stages': 8, 'schedule': '1f1b'}
    >>> initial_values({"stages": 4}, {"stage": 8}, "pipeline lab")
    Traceback (most recent call last):
    ValueError: unknown control(s) ['stage']; the pipeline lab has ['stages']
    """
    unknown = sorted(set(initial) - set(defaults))
    if unknown:
        raise ValueError(f"unknown control(s) {unknown}; the {lab} has {sorted(defaults)}")
    return {**defaults, **{name: getattr(value, "name", value) for name, value in initial.items()}}


def plan_from(values: dict) -> parallelism.ParallelPlan:
    """The ``ParallelPlan`` a lab's controls describe: every plan field the lab has a control for (the others keep
    their defaults).

    >>> plan_from({"model": "GPT-3 175B", "tensor_parallel": 8, "zero_stage": 1}).sizes
    (8, 1, 1, 1, 1, 1)
    """
    fields = {field.name for field in dataclasses.fields(parallelism.ParallelPlan)}
    return parallelism.ParallelPlan(**{name: value for name, value in values.items() if name in fields})


class Lab(widgets.VBox):
    """Base class: subclasses build ``controls`` and ``figure``, then implement ``compute`` and ``draw``.

    ``compute(values)`` takes {control name: value}, makes one call into the formula layer and returns one frozen
    dataclass (the lab's result type, whose fields name its quantities and hold the formula layer's typed results
    as they come); ``draw(result)`` updates the figure's live figures (``course_lib.viz``, ``figure.update(...)``)
    and ``summary_html(result)`` returns the HTML shown above the figure (quantities formatted with units), both
    from that result alone; ``result_dict(result)`` is the plain dict ``result`` shows. ``refresh()`` runs the four
    and renders the PNG. (A lab whose ``compute`` still returns a plain dict shows that dict as it is.)
    """

    dpi = 72
    _redraw = None  # a PartialRedraw once the subclass calls enable_partial_redraw
    _syncing = False  # True while sync_controls moves controls: their changes wait for the one refresh after it

    def __init__(self, title: str, controls: dict, figure: Figure, extra_children=()):
        self.controls = dict(controls)
        self.figure = figure
        self.typed_result = None
        self.result: dict = {}
        self.summary = widgets.HTML(layout=widgets.Layout(min_height="3em"))
        self.summary.add_class("course-lab-summary")
        # Shown at its own pixel size (not stretched to the box width, which blurs the text), shrunk on narrow pages.
        self.image = widgets.Image(
            format="png", layout=widgets.Layout(width="auto", max_width="100%", align_self="flex-start")
        )
        header = widgets.HTML(f"<h3 style='margin:0.2em 0'>{title}</h3>")
        rows = [labelled_row(control) for control in self.controls.values()]
        super().__init__(children=[header, *rows, *extra_children, self.summary, self.image])
        for control in self.controls.values():
            control.observe(self._on_change, names="value")
        self.refresh()

    # Subclasses implement these three, and result_dict if compute returns a dataclass.
    def compute(self, values: dict):  # pragma: no cover - abstract
        raise NotImplementedError

    def draw(self, result) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def summary_html(self, result) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def result_dict(self, result) -> dict:
        """The plain dict ``self.result`` shows for ``compute``'s result: the result itself if it is a dict."""
        if isinstance(result, dict):
            return result
        raise NotImplementedError(f"{type(self).__name__} must say how its {type(result).__name__} reads as a dict")

    def values(self) -> dict:
        """The controls' current values."""
        return {name: control.value for name, control in self.controls.items()}

    def refresh(self) -> None:
        """Recompute the result from the controls, update the figure's artists and re-render the PNG."""
        self.typed_result = result = self.compute(self.values())
        self.result = self.result_dict(result)
        self.draw(result)
        self.summary.value = self.summary_html(result)
        self.render()

    def enable_partial_redraw(self, figure, animated, panels=None) -> None:
        """Render by drawing only the ``animated`` artists (those ``draw`` changes, inside Axes) over pictures of the
        rest of ``figure``, cut into ``panels`` if its static part depends on the controls (see
        ``course_lib.viz.fast``). Call it once the figure is built; until then ``render`` draws the whole figure."""
        self._redraw = PartialRedraw(type(self).__qualname__, figure, animated, panels)

    def set_static_state(self, example) -> None:
        """Set the static artists of every panel for ``example`` (see ``PartialRedraw.set_static_state``)."""
        self._redraw.set_static_state(example)

    def render(self) -> None:
        """Draw the figure to PNG bytes and hand them to the Image widget."""
        if self._redraw is not None:
            self.image.value = self._redraw.png()
            return
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=self.dpi)
        self.image.value = buffer.getvalue()

    def sync_controls(self, changed: str) -> None:
        """Give the controls that depend on control ``changed`` their new options or values (none by default).

        A subclass whose choices depend on other controls (a model's divisors, the algorithms that apply to p ranks)
        implements it; the changes it makes cause no refresh of their own, one follows it."""

    def _on_change(self, change) -> None:
        if self._syncing:  # a control moved by sync_controls: refresh once, after it
            return
        self._syncing = True
        try:
            self.sync_controls(next(name for name, control in self.controls.items() if control is change["owner"]))
        finally:
            self._syncing = False
        self.refresh()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(controls={sorted(self.controls)})"
