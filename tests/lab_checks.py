"""Checks the lab and figure tests share (tests/test_widgets_*.py, tests/test_viz_*.py): the values a control can
take, plain results, the fast PNG of a lab against a full ``savefig``, a figure's artists by their gid."""

import io
import math
import random

import numpy as np
from PIL import Image

# None: a quantity a lab has no number for (lab 3: a ZeRO stage the chosen framework does not run).
PLAIN = (int, float, str, bool, type(None))


def png_pixels(data: bytes) -> np.ndarray:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGBA"))


def option_values(control) -> list:
    """The values a control can take: its options, or every integer of a slider's range."""
    if hasattr(control, "options"):
        return [option[1] if isinstance(option, tuple) else option for option in control.options]
    if isinstance(control.value, bool):
        return [False, True]
    return list(range(control.min, control.max + 1, control.step))


def thinned(values) -> list:
    """All ``values`` when there are at most 30, else the ends and at least 8 between (as the issue asks)."""
    values = list(values)
    if len(values) <= 30:
        return values
    inner = [values[round(i * (len(values) - 1) / 10)] for i in range(1, 10)]
    return [values[0], *dict.fromkeys(inner), values[-1]]


def stops(control) -> list:
    """The values a control can take (``option_values``), ``thinned``."""
    return thinned(option_values(control))


def assert_plain_and_finite(result: dict, where: str = "result"):
    """Every value of ``result`` a plain Python int, float (finite), str, bool or None, or a list of such dicts
    (lab 5's ``transfers``, one dict per boundary tensor)."""
    for key, value in result.items():
        if type(value) is list:
            for index, row in enumerate(value):
                assert type(row) is dict, f"{where}[{key!r}][{index}] is a {type(row).__name__}, not a dict"
                assert_plain_and_finite(row, f"{where}[{key!r}][{index}]")
            continue
        assert type(value) in PLAIN, f"{where}[{key!r}] is a {type(value).__name__}, not a plain Python value"
        if isinstance(value, float):
            assert math.isfinite(value), f"{where}[{key!r}] = {value}"


def decoded(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA")).astype(int)


def assert_png_matches_savefig(lab):
    """The fast PNG (cached background + animated artists) shows what a full ``savefig`` draws."""
    shown, full = decoded(lab.image.value), figure_pixels(lab.figure, dpi=lab.dpi)
    assert shown.shape == full.shape
    differing = (np.abs(shown - full).max(axis=2) > 40).mean()
    assert differing < 0.005, f"{differing:.2%} of the pixels differ from savefig"


def figure_pixels(figure, dpi=None) -> np.ndarray:
    """``figure`` as ``savefig`` draws it (every artist) at ``dpi`` (default the figure's), as an RGBA array of ints.
    Saved as raw RGBA: the pixels a PNG would hold, without its compression (a third of the time)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="rgba", dpi=dpi)
    width, height = (figure.get_size_inches() * (figure.dpi if dpi is None else dpi)).astype(int)  # as Agg sizes it
    return np.frombuffer(buffer.getvalue(), dtype=np.uint8).reshape(height, width, 4).astype(int)


def assert_updates_match_a_fresh_build(build, first, second):
    """A live figure built by ``build()`` (returning (figure, live figure)) and updated by ``first`` then ``second``
    (functions of the live figure) draws exactly what one built and updated by ``second`` alone draws: an update
    leaves nothing of the previous result behind."""
    figure, live = build()
    first(live)
    second(live)
    fresh_figure, fresh = build()
    second(fresh)
    assert len(live.animated) == len(fresh.animated)
    for artist, fresh_artist in zip(live.animated, fresh.animated, strict=True):
        assert type(artist) is type(fresh_artist)
        assert artist.get_visible() == fresh_artist.get_visible()
    assert np.array_equal(figure_pixels(figure), figure_pixels(fresh_figure))


def by_gid(artists, prefix):
    """The artists whose gid starts with ``prefix``."""
    return [a for a in artists if (a.get_gid() or "").startswith(prefix)]


def assert_result_as_before(lab, as_before, moves: int, seed: int) -> None:
    """``moves`` random moves of ``lab``'s controls (seeded): after each, ``lab.result`` is the dict
    ``as_before(lab.values())`` builds as the lab built it before it had a typed result, keys in the same order and
    values of the same types."""
    rng = random.Random(seed)
    for _ in range(moves):
        control = lab.controls[rng.choice(list(lab.controls))]
        control.value = rng.choice(option_values(control))
        expected = as_before(lab.values())
        assert lab.result == expected and list(lab.result) == list(expected)
        assert [type(v) for v in lab.result.values()] == [type(v) for v in expected.values()]
