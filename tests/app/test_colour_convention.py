"""One colour convention (issue 33): every signed quantity on every page is red where positive and blue where
negative (the Coreference page's attention difference and patching effect, pre-softmax scores, diverging
matrices), and every weight in [0, 1] follows the theme (Blues, or background → ink in presentation mode)."""
import plotly.colors as pc
import pytest
import torch

from app import coref_view, figures, theme


def _ends(trace):
    """(colour at the lowest value, colour at the highest) of a heatmap trace, as (r, g, b)."""
    scale = trace.colorscale  # plotly resolves a named scale into [[position, colour], ...]
    rgb = [pc.unlabel_rgb(pc.convert_colors_to_same_type([c])[0][0]) if not c.startswith("#")
           else pc.hex_to_rgb(c) for _, c in (scale[0], scale[-1])]
    return rgb[0], rgb[-1]


def test_every_signed_figure_is_red_where_positive():
    z = torch.tensor([[-1.0, 0.0], [0.5, 1.0]])
    lk = torch.rand(2, 3, 2)
    figs = {
        "scores": figures.heatmap(z, ["a", "b"], ["c", "d"], scores=True),
        "matrix": figures.matrix(z, title="", x_title="", y_title="", diverging=True),
        "effect": figures.effect_grid(z, ["r0", "r1"]),
        "coreference": coref_view.grid_figure(lk, ["animal", "street"], "animal", title=""),
    }
    for name, fig in figs.items():
        low, high = _ends(fig.data[0])
        assert high[0] > high[2] and low[2] > low[0], (name, low, high)


def test_weights_follow_the_theme_in_presentation_mode():
    w = torch.rand(2, 2, 3, 3).softmax(-1)
    for dark in (False, True):
        fig = figures.grid(w, list("abc"), list("abc"), present=True, dark=dark)
        want = [tuple(x) for x in theme.heat_scale(dark)]
        assert [tuple(x) for x in fig.data[0].colorscale] == want
    assert figures.grid(w, list("abc"), list("abc")).data[0].colorscale[-1][1] == \
        figures.heatmap(w[0, 0], list("abc"), list("abc")).data[0].colorscale[-1][1]


def test_token_strip_colours_pieces_by_what_they_are_not_by_id():
    """The Lesson's first step coloured tokens by their vocabulary id, which means nothing; now a special token, a
    piece that starts a word and a piece that continues one each have their colour."""
    from core.io import registry
    tok = registry.load("en-fr").tokenizer
    ids = tok.encode("The students are reading.") + [3]
    strip = figures.token_strip(tok.display(ids), ids, tok.word_starts(ids))
    kinds = dict(zip(tok.display(ids), strip.data[0].customdata[0]))
    assert kinds["[EOS]"] == "special token" and kinds["The"] == "starts a word"
    assert "continues a word" in kinds.values()  # "students" is cut into pieces by this BPE
    colours = {k: strip.data[0].colorscale[int(z * 2)][1] for k, z in zip(strip.data[0].customdata[0], strip.data[0].z[0])}
    assert len(set(colours.values())) == 3


@pytest.mark.parametrize("present", [False, True])
@pytest.mark.parametrize("dark", [False, True])
def test_token_strip_text_reads_on_every_cell_colour(present, dark):
    """QA s58 item 16: the Lesson's first step drew "[EOS] 3" grey on its grey cell (plotly chose the text colour).
    The text has one colour, set by the strip and kept in presentation mode, at WCAG AA (4.5:1) on all three."""
    def luminance(hex_):
        rgb = [int(hex_[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    strip = figures.token_strip(["[EOS]", "The", "s"], [3, 40, 41], [True, True, False], present=present, dark=dark)
    text = strip.data[0].textfont.color
    assert text is not None and (strip.data[0].textfont.size is not None) == present
    for _, cell in strip.data[0].colorscale:
        hi, lo = sorted([luminance(text), luminance(cell)], reverse=True)
        assert (hi + 0.05) / (lo + 0.05) >= 4.5, (cell, text)
