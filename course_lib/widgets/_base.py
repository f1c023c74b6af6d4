"""What every lab shares: controls declared once, a figure built once and shown as a PNG, and the update loop.

A lab is an ipywidgets ``VBox`` with four public attributes that tests and graders use:

- ``controls``: name → control widget (the names are fixed per lab);
- ``typed_result``: what ``compute`` returned for the controls' values: one frozen dataclass with named fields that
  validates them on construction (a formula layer's report, such as ``parallelism.global_batch_report``'s
  ``GlobalBatchReport``, or a small result of the lab's own holding one), the only thing the figure and the summary
  read;
- ``result``: its plain dict view (``result_dict``), floats/ints/strings with fixed keys per lab, updated
  synchronously whenever a control changes;
- ``figure``: the matplotlib Figure, built once; updates change its artists and never rebuild it.

A lab declares its controls in ``CONTROLS``, a tuple of ``ControlSpec`` (name, label, stops, default, formatter,
kind): the base builds the widgets from it (``build_controls``), checks the values a learner passes to the lab's
factory against it (``start_values``: a ``ValueError`` naming the control and what it accepts), gives a control whose
stops depend on other controls its new stops when they move (``sync_choices``), and the generic tests sweep every
stop of every control of every lab from it.

The figure reaches the page as PNG bytes in an ``ipywidgets.Image``: this works the same in JupyterLab, on
Binder, in Voila and in a test process without a browser, and needs no matplotlib widget backend. The same PNG
goes into the lab's display bundle (``Lab._repr_mimebundle_``), so a notebook's stored output shows the figure where
no kernel runs the widget (GitHub, nbviewer). A control whose range spans decades is a ``SelectionSlider`` over
log-spaced values whose labels carry the unit ("64 MB", "5 µs"), so no position can hold a value outside the lab's
range.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import ipywidgets as widgets
from matplotlib.figure import Figure

from .. import _check, parallelism
from ..viz.fast import PartialRedraw

__all__ = [
    "Lab",
    "ControlSpec",
    "KINDS",
    "control_defaults",
    "model_split_specs",
    "nice_values",
    "unit_slider",
    "dropdown",
    "choice_buttons",
    "int_slider",
    "nearest_option",
    "set_options",
    "set_range",
    "plan_from",
]

CONTROL_STYLE = {"description_width": "150px"}
CONTROL_WIDTH = "460px"


def control_layout() -> widgets.Layout:
    """A control's layout: its own, so that a lab can hide one control (``layout.display``) and not the others."""
    return widgets.Layout(width=CONTROL_WIDTH)


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
        layout=control_layout(),
    )


def dropdown(description: str, options, value) -> widgets.Dropdown:
    """A drop-down list of names (models, devices, clusters) with the labs' look."""
    return widgets.Dropdown(
        options=list(options), value=value, description=description, style=CONTROL_STYLE, layout=control_layout()
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

    >>> slider = unit_slider("t", (1, 2, 4), 2, str)
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


def check_choice(name: str, value, choices, context: str = "") -> None:
    """Raise ``ValueError`` unless ``value`` is one of ``choices`` (a bool only where the choices are bools: ``True``
    is not the size 1). ``context`` ends the message (" (for model='GPT-3 175B')").

    >>> check_choice("tensor_parallel", 8, (1, 2, 4, 8))
    >>> check_choice("tensor_parallel", True, (1, 2, 4, 8), " (for model='GPT-3 175B')")
    Traceback (most recent call last):
    ValueError: tensor_parallel must be one of [1, 2, 4, 8] (for model='GPT-3 175B'), got True
    """
    choices = list(choices)
    booleans = all(isinstance(choice, bool) for choice in choices)
    if isinstance(value, bool) != booleans or value not in choices:
        raise ValueError(f"{name} must be one of {choices}{context}, got {value!r}")


def int_slider(description: str, low: int, high: int, value: int, step: int = 1) -> widgets.IntSlider:
    """A plain integer slider with the labs' look."""
    return widgets.IntSlider(
        value=value, min=low, max=high, step=step, description=description, style=CONTROL_STYLE, layout=control_layout()
    )


def set_range(slider: widgets.IntSlider, low: int, high: int, step: int = 1) -> None:
    """Give an integer slider the range ``low``..``high`` in steps of ``step``, in an order that never sets its
    minimum above its maximum (ipywidgets refuses that); its value is clamped into the new range.

    >>> slider = int_slider("m", 1, 8, 6)
    >>> set_range(slider, 12, 64, 4)
    >>> slider.min, slider.max, slider.step, slider.value
    (12, 64, 4, 12)
    """
    slider.step = step
    if low > slider.max:
        slider.max, slider.min = high, low
    else:
        slider.min, slider.max = low, high


def choice_buttons(description: str, options, value) -> widgets.ToggleButtons:
    """Toggle buttons for a small set of named choices (``options``: (label, value) pairs or values)."""
    return widgets.ToggleButtons(options=options, value=value, description=description, style=CONTROL_STYLE)


KINDS = ("slider", "open slider", "int slider", "dropdown", "buttons", "checkbox")


@dataclasses.dataclass(frozen=True)
class ControlSpec:
    """One control of a lab, declared once: the lab's widget, the check of a starting value and the generic sweep
    tests all come from it.

    ``name`` is the control's key (in ``lab.controls`` and the factory's keyword arguments); ``label`` what the page
    shows beside it; ``stops`` the values it offers (a ``range`` for an int slider), or, for a control whose stops
    depend on others (a model's divisors), a function of the lab's values (a dict) that reads only the controls named
    in ``depends_on``, which come before it; ``default`` its starting value; ``formatter`` the label of a stop
    ("64 MB", "5 µs"). ``kind`` is one of

    - ``"slider"``: a slider over the stops; a value must be one of them;
    - ``"open slider"``: a slider over the stops that also takes any value between the first and the last, kept as a
      stop of its own (not snapped); an integer if every stop is one;
    - ``"int slider"``: a slider over every integer of the ``range`` of stops;
    - ``"dropdown"`` or ``"buttons"``: a drop-down list or toggle buttons of the stops (names, stages, algorithms);
    - ``"checkbox"``: a yes/no switch (stops ``(False, True)``).

    >>> seq_len = ControlSpec("seq_len", "sequence length s", (128, 256, 512), 256, lambda n: f"{n} tokens",
    ...                       kind="open slider")
    >>> seq_len.checked(300, {}), seq_len.widget(300, {}).label
    (300, '300 tokens')
    >>> seq_len.checked(64, {})
    Traceback (most recent call last):
    ValueError: seq_len must be an integer in 128 tokens..512 tokens, got 64
    >>> t = ControlSpec("tensor_parallel", "tensor parallel t", lambda v: (1, 2, 4, 8)[: len(v["model"])], 1,
    ...                 depends_on=("model",))
    >>> t.choices({"model": "abc"})
    (1, 2, 4)
    >>> t.checked(8, {"model": "abc"})
    Traceback (most recent call last):
    ValueError: tensor_parallel must be one of [1, 2, 4] (for model='abc'), got 8
    """

    name: str
    label: str
    stops: Sequence | Callable[[dict], Sequence]
    default: Any
    formatter: Callable[[Any], str] = str
    kind: str = "slider"
    depends_on: tuple[str, ...] = ()

    def __post_init__(self):
        if not (isinstance(self.name, str) and self.name.isidentifier()):
            raise ValueError(f"name must be a Python identifier, got {self.name!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {list(KINDS)}, got {self.kind!r}")
        if not callable(self.formatter):
            raise ValueError(f"formatter of {self.name} must be a function of a stop, got {self.formatter!r}")
        if callable(self.stops) != bool(self.depends_on):
            raise ValueError(
                f"stops of {self.name} must be a function of the values exactly when depends_on names the controls "
                f"it reads, got stops={self.stops!r}, depends_on={self.depends_on!r}"
            )
        if not callable(self.stops):
            object.__setattr__(self, "stops", self._valid(self.stops))

    def _valid(self, stops):
        if self.kind == "int slider":
            if not isinstance(stops, range) or not stops:
                raise ValueError(f"stops of {self.name} must be a non-empty range (an int slider), got {stops!r}")
            return stops
        stops = tuple(stops)
        if not stops:
            raise ValueError(f"stops of {self.name} must not be empty")
        return stops

    def choices(self, values: dict):
        """The stops with the other controls at ``values`` (a tuple, or a range for an int slider)."""
        return self._valid(self.stops(values)) if callable(self.stops) else self.stops

    def _context(self, values: dict) -> str:
        named = ", ".join(f"{name}={values[name]!r}" for name in self.depends_on)
        return f" (for {named})" if named else ""

    def checked(self, value, values: dict):
        """``value`` as the control holds it (an int, or a float for an open slider over floats) if the control
        accepts it with the other controls at ``values``; else ``ValueError`` naming the control and what it takes."""
        choices, context = self.choices(values), self._context(values)
        if self.kind == "int slider":
            if not _check.is_integer(value) or value not in choices:
                steps = f" in steps of {choices.step}" if choices.step != 1 else ""
                raise ValueError(
                    f"{self.name} must be an integer in {choices[0]}..{choices[-1]}{steps}{context}, got {value!r}"
                )
            return int(value)
        if self.kind == "open slider":
            integer = all(_check.is_integer(stop) for stop in choices)
            low, high = min(choices), max(choices)
            if not (_check.is_integer(value) if integer else _check.is_number(value)) or not low <= value <= high:
                kind = "an integer" if integer else "a number"
                span = f"{self.formatter(low)}..{self.formatter(high)}"
                raise ValueError(f"{self.name} must be {kind} in {span}{context}, got {value!r}")
            return int(value) if integer else float(value)
        check_choice(self.name, value, choices, context)
        return value

    def settled(self, value, values: dict):
        """Where the control at ``value`` goes when the controls it depends on are at ``values``: it stays while its
        stops still offer it; else a number moves to the nearest stop (on a log scale: sizes) and a name to the
        first stop.

        >>> t = ControlSpec("tensor_parallel", "t", lambda v: (1, 2, 4, 8)[: v["heads"]], 1, depends_on=("heads",))
        >>> t.settled(8, {"heads": 4}), t.settled(8, {"heads": 3})
        (8, 4)
        """
        choices = self.choices(values)
        if value in choices:
            return value
        if self.kind == "int slider":
            return min(choices, key=lambda stop: (abs(stop - value), stop))
        return nearest_option(choices, value) if _check.is_number(value) else choices[0]

    def widget(self, value, values: dict) -> widgets.Widget:
        """The control at ``value`` (checked), with the other controls at ``values``."""
        choices = self.choices(values)
        if self.kind == "int slider":
            return int_slider(self.label, choices[0], choices[-1], value, choices.step)
        if self.kind == "checkbox":
            return widgets.Checkbox(value=value, description=self.label, style=CONTROL_STYLE, layout=control_layout())
        labelled = [(self.formatter(stop), stop) for stop in choices]
        if self.kind == "dropdown":
            return dropdown(self.label, labelled, value)
        if self.kind == "buttons":
            return choice_buttons(self.label, labelled, value)
        if self.kind == "slider":
            return unit_slider(self.label, choices, value, self.formatter)
        slider = unit_slider(self.label, stops_with(choices, value), value, self.formatter)
        slider.equals = same_stop  # ipywidgets' Selection compares with this predicate (default ==)
        return slider


def model_split_specs(models: dict, tensor_options, pipeline_options, tensor_parallel: int, pipeline_parallel: int):
    """The ``tensor_parallel`` and ``pipeline_parallel`` controls of a lab whose sizes run over what the model chosen
    in its ``model`` control allows (``tensor_options(model)``, ``pipeline_options(model)``: divisors of its heads and
    layers), starting at ``tensor_parallel`` and ``pipeline_parallel``.

    >>> t, p = model_split_specs({"m": "model m"}, lambda model: (1, 2, 4), lambda model: (1, 3), 4, 1)
    >>> t.choices({"model": "m"}), p.depends_on
    ((1, 2, 4), ('model',))
    """

    def of_model(options):
        return lambda values: options(models[values["model"]])

    return (
        ControlSpec(
            "tensor_parallel", "tensor parallel t", of_model(tensor_options), tensor_parallel, depends_on=("model",)
        ),
        ControlSpec(
            "pipeline_parallel",
            "pipeline parallel p",
            of_model(pipeline_options),
            pipeline_parallel,
            depends_on=("model",),
        ),
    )


def control_defaults(specs) -> dict:
    """{name: default} of a lab's ``CONTROLS``, in their order (a lab module's ``DEFAULTS``).

    >>> control_defaults((ControlSpec("stages", "stages p", range(1, 17), 4, kind="int slider"),))
    {'stages': 4}
    """
    return {spec.name: spec.default for spec in specs}


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


def with_defaults(defaults: dict, initial: dict, lab: str) -> dict:
    """The lab's starting values: ``defaults`` updated with ``initial``; a preset object (a model, a device, a
    cluster) may stand for its name. An unknown control raises ``ValueError`` naming it and the lab's controls.

    >>> with_defaults({"stages": 4, "schedule": "1f1b"}, {"stages": 8}, "pipeline lab")
    {'stages': 8, 'schedule': '1f1b'}
    >>> with_defaults({"stages": 4}, {"stage": 8}, "pipeline lab")
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
    """Base class: a subclass declares ``CONTROLS`` and builds its ``figure``, then implements ``compute``,
    ``result_dict``, ``draw`` and ``summary_html``.

    ``compute(values)`` takes {control name: value}, makes one call into the formula layer and returns one frozen
    dataclass (the lab's result type, whose fields name its quantities and hold the formula layer's typed results
    as they come); ``result_dict(result)`` is the plain dict ``result`` shows; ``draw(result)`` updates the
    figure's live figures (``course_lib.viz``, ``figure.update(...)``) and ``summary_html(result)`` returns the HTML
    shown above the figure (quantities formatted with units), both from that result alone. ``refresh()`` runs the
    four and renders the PNG. A subclass's ``__init__`` reads ``start_values(initial)`` (the defaults of
    ``CONTROLS`` updated with the factory's keyword arguments, each checked) and passes ``build_controls(values)``
    to ``Lab.__init__``.
    """

    CONTROLS: ClassVar[tuple[ControlSpec, ...]] = ()
    dpi = 96
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

    # ---- controls from CONTROLS ----------------------------------------------------------------------------------

    @classmethod
    def control_spec(cls, name: str) -> ControlSpec:
        """The ``ControlSpec`` of control ``name``."""
        return next(spec for spec in cls.CONTROLS if spec.name == name)

    @classmethod
    def start_values(cls, initial: dict) -> dict:
        """The controls' starting values: the defaults of ``CONTROLS`` updated with ``initial`` (a preset object may
        stand for its name), each checked against its spec in order. An unknown name or a value a control does not
        offer raises ``ValueError`` naming the control and what it accepts. A default the other values rule out
        moves as the control would (``ControlSpec.settled``): lab 5 started at t = 16 starts on 16 nodes, not 8."""
        values = with_defaults(control_defaults(cls.CONTROLS), initial, cls.__name__)
        checked = set()
        for spec in cls.CONTROLS:
            if not checked.issuperset(spec.depends_on):
                raise ValueError(f"{cls.__name__}.CONTROLS must list {spec.depends_on} before {spec.name}")
            if spec.name not in initial:
                values[spec.name] = spec.settled(values[spec.name], values)
            values[spec.name] = spec.checked(values[spec.name], values)
            checked.add(spec.name)
        return values

    def build_controls(self, values: dict) -> dict:
        """name → widget of every control of ``CONTROLS``, at ``values`` (from ``start_values``)."""
        return {spec.name: spec.widget(values[spec.name], values) for spec in self.CONTROLS}

    def sync_choices(self, changed: str) -> None:
        """Give each control whose stops depend on control ``changed`` (its spec's ``depends_on``), or on a control
        this moved, its stops for the current values, in the order of ``CONTROLS`` (each after those it depends
        on). It keeps its value if that is still a stop; otherwise it moves to the nearest stop on a log scale (a
        size) or to the first (a name). An int slider's range is its stops'."""
        values, moved = self.values(), {changed}
        for spec in self.CONTROLS:
            if moved.isdisjoint(spec.depends_on):
                continue
            control, choices = self.controls[spec.name], spec.choices(values)
            if isinstance(control, widgets.IntSlider):
                set_range(control, choices[0], choices[-1], choices.step)
            else:
                set_options(control, choices, spec.settled(control.value, values), label=spec.formatter)
            if control.value != values[spec.name]:
                moved.add(spec.name)
                values[spec.name] = control.value

    # ---- what a subclass implements ----------------------------------------------------------------------------
    def compute(self, values: dict):  # pragma: no cover - abstract
        raise NotImplementedError

    def draw(self, result) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def summary_html(self, result) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def result_dict(self, result) -> dict:  # pragma: no cover - abstract
        """The plain dict ``self.result`` shows for ``compute``'s result."""
        raise NotImplementedError

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
        """Give the controls that depend on control ``changed`` their new options or values: by default those whose
        spec's stops depend on it (``sync_choices``).

        A subclass with other rules (a schedule that needs v ≥ 2, a step control disabled past 8 ranks) extends it;
        the changes it makes cause no refresh of their own, one follows it."""
        self.sync_choices(changed)

    def _on_change(self, change) -> None:
        if self._syncing:  # a control moved by sync_controls: refresh once, after it
            return
        self._syncing = True
        try:
            self.sync_controls(next(name for name, control in self.controls.items() if control is change["owner"]))
        finally:
            self._syncing = False
        self.refresh()

    def _repr_mimebundle_(self, **kwargs) -> dict:
        """The widget's bundle (its view and its text) plus a PNG of the figure as it is now.

        A front end that runs the widget shows the live lab (the widget view ranks first); one without a kernel or
        widget state (GitHub, nbviewer, a static site: nbconvert skips a view whose state is not stored) shows the
        picture instead of the bare repr, so a notebook's stored output reads as the lab's figure at display time.

        >>> import base64
        >>> from course_lib.widgets import pipeline_lab
        >>> bundle = pipeline_lab()._repr_mimebundle_()
        >>> sorted(bundle), base64.b64decode(bundle["image/png"])[1:4]
        (['application/vnd.jupyter.widget-view+json', 'image/png', 'text/plain'], b'PNG')
        """
        bundle = super()._repr_mimebundle_(**kwargs)
        return {**bundle, "image/png": base64.b64encode(self.image.value).decode("ascii")}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(controls={sorted(self.controls)})"
