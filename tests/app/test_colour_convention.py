"""One colour convention (issue 33): every signed quantity on every page is red where positive and blue where
negative (the Coreference page's attention difference and patching effect, pre-softmax scores, diverging
matrices), and every weight in [0, 1] follows the theme (Blues, or background → ink in presentation mode)."""
import plotly.colors as pc
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
        strip = figures.token_strip(["a", "b"], [5, 6], present=True, dark=dark)
        want = [tuple(x) for x in theme.heat_scale(dark)]
        assert [tuple(x) for x in fig.data[0].colorscale] == want
        assert [tuple(x) for x in strip.data[0].colorscale] == want
    assert figures.grid(w, list("abc"), list("abc")).data[0].colorscale[-1][1] == \
        figures.heatmap(w[0, 0], list("abc"), list("abc")).data[0].colorscale[-1][1]
