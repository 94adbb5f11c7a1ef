"""The trace palette: every head of the largest shipped model gets its own colour, legible on both themes."""
import itertools
import math

import pytest
import torch

from app import figures, theme


def _linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _rgb(hex_: str):
    return [int(hex_[i:i + 2], 16) / 255 for i in (1, 3, 5)]


def _luminance(hex_: str) -> float:  # WCAG 2.1 relative luminance
    r, g, b = map(_linear, _rgb(hex_))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: str, b: str) -> float:
    hi, lo = sorted([_luminance(a), _luminance(b)], reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _lab(hex_: str):  # sRGB (D65) -> CIELAB
    r, g, b = map(_linear, _rgb(hex_))
    xyz = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b, \
        (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883
    f = [t ** (1 / 3) if t > (6 / 29) ** 3 else t / (3 * (6 / 29) ** 2) + 4 / 29 for t in xyz]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


@pytest.mark.parametrize("mode", ["light", "dark"])
def test_palette_distinct_and_legible(mode):
    colours = theme.HEAD_COLOURS[mode]
    assert len(colours) >= 12 and len(set(colours)) == len(colours)
    assert min(_contrast(c, theme.BACKGROUND[mode]) for c in colours) >= 3.0
    assert min(math.dist(_lab(a), _lab(b)) for a, b in itertools.combinations(colours, 2)) >= 35


@pytest.mark.parametrize("dark", [False, True])
def test_twelve_heads_get_twelve_colours(dark):
    fig = figures.query_bars(torch.rand(12, 5).softmax(-1), list("abcde"), "c", dark=dark)
    way = fig.layout.colorway
    assert len(fig.data) == 12 and len(way) >= 12
    # plotly hands colorway[i] to the i-th trace that sets no colour of its own
    assert all(t.marker.color is None for t in fig.data)
    assert len({way[i % len(way)] for i in range(12)}) == 12
