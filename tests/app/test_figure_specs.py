"""Figures are built as plain dicts and made a go.Figure once (app/theme.py, "A figure is styled as a plain dict"):
the merge that replaces plotly's update calls, the template every figure carries whatever plotly's default is, the
arrays that plotly checks at once and writes as the same JSON as nested lists, and no builder updating a go.Figure
after making it (what made a chart cost 60 ms)."""
import copy
import json

import plotly.graph_objects as go
import plotly.io as pio
import pytest
import torch
from plotly.basedatatypes import BaseFigure, BasePlotlyType

from app import coref_view, figures, sizes_view, theme, vision_view

TOKENS = ["The", "<b>cat</b>", "sat", "."]


def test_merge_is_plotlys_update_nested_copied_and_none_removes():
    layout = {"title": {"text": "t", "font": {"size": 12}}, "height": 300}
    shared = {"font": {"color": "#000"}}
    theme.merge(layout, {"title": {"font": {"color": "red"}}, "xaxis": shared, "yaxis": shared, "height": None})
    assert layout == {"title": {"text": "t", "font": {"size": 12, "color": "red"}},
                      "xaxis": {"font": {"color": "#000"}}, "yaxis": {"font": {"color": "#000"}}}
    layout["xaxis"]["font"]["color"] = "blue"  # the two axes got copies, not one shared dict
    assert layout["yaxis"]["font"]["color"] == "#000" and shared["font"]["color"] == "#000"
    assert theme.merge({"title": "plain"}, {"title": {"text": "x"}}) == {"title": {"text": "x"}}


def test_axes_reaches_the_first_axis_and_every_numbered_one_in_order():
    spec = {"layout": {"xaxis10": {}, "xaxis2": {"side": "top"}, "yaxis": {"title": {"text": "y"}}}}
    assert [id(a) for a in theme.axes(spec, "x")] == [id(spec["layout"][k]) for k in ("xaxis", "xaxis2", "xaxis10")]
    assert theme.axes(spec, "y") == [{"title": {"text": "y"}}]


@pytest.mark.parametrize("dark", [False, True])
def test_every_figure_carries_our_template_whatever_plotlys_default(monkeypatch, dark):
    """Importing Streamlit's plotly_chart module sets plotly's default template to Streamlit's: a figure that relied on
    the default came out in Streamlit's placeholder colours (#000011 …) outside the app."""
    monkeypatch.setattr(pio.templates, "default", "plotly")
    before = copy.deepcopy(theme.TEMPLATE_SPEC)
    fig = figures.matrix(torch.rand(3, 4), None, TOKENS[:3], title="t", x_title="x", y_title="y", dark=dark)
    ours = pio.templates[theme.TEMPLATE["dark" if dark else "light"]].to_plotly_json()
    assert fig.to_dict()["layout"]["template"] == ours
    assert sorted(fig.to_dict()["layout"]["template"]["data"]) == sorted(theme.TRACE_TYPES)
    fig.layout.template.layout.font.color = "#123456"  # the figure's copy, not the shared one
    assert theme.TEMPLATE_SPEC == before


def test_a_table_is_written_as_the_same_json_as_nested_lists():
    z = [[0.25, None, -1.5], [3.0, 2.0, None]]
    custom = [[["a", "x"], ["b", "x"], ["c", "x"]], [["a", "y"], ["b", "y"], ["c", "y"]]]
    text = [["0", "−∞", ""], ["1", "2", "NaN"]]
    lists = go.Figure(go.Heatmap(z=z, customdata=custom, text=text))
    tables = go.Figure(go.Heatmap(z=figures.table(z), customdata=figures.table(custom), text=figures.table(text)))
    assert pio.to_json(tables.to_dict(), validate=False) == pio.to_json(lists.to_dict(), validate=False)
    assert figures.table(custom).shape == (2, 3, 2)


BUILDERS = {  # each with presentation mode on or off
    "heatmap": lambda p: figures.heatmap(torch.rand(4, 4), TOKENS, TOKENS, title="w", present=p),
    "heatmap_row": lambda p: figures.heatmap_row({"a": torch.rand(4, 4), "<b>b</b>": torch.rand(4, 4)}, TOKENS, TOKENS,
                                                 title="r", present=p),
    "grid": lambda p: figures.grid(torch.rand(2, 2, 3, 3), TOKENS[:3], TOKENS[:3], title="g", present=p),
    "query_bars": lambda p: figures.query_bars(torch.rand(2, 4), TOKENS, "it", present=p),
    "bars": lambda p: figures.bars([0.1, 0.2], ["a", "b"], title="b", x_title="x", y_title="y", highlight=0,
                                   present=p),
    "lines": lambda p: figures.lines({"loss": [3, 2]}, title="l", x_title="x", y_title="y", present=p),
    "matrix": lambda p: figures.matrix(torch.randn(4, 5), None, TOKENS, title="Q", x_title="d", y_title="t",
                                       show_values=True, diverging=True, present=p),
    "token_strip": lambda p: figures.token_strip(["a", "b"], [7, 8], [True, False], title="s", present=p),
    "mask_map": lambda p: figures.mask_map(torch.zeros(3, 3), TOKENS[:3], TOKENS[:3], title="m", present=p),
    "grouped_bars": lambda p: figures.grouped_bars({"e": [1, 2]}, ["h0", "h1"], title="g", x_title="x",
                                                   y_title="y", present=p),
    "trajectories": lambda p: figures.trajectories(torch.randn(2, 3, 2), TOKENS[:3], ["a", "b"], selected=1,
                                                   present=p),
    "effect_grid": lambda p: figures.effect_grid(torch.randn(2, 3), ["enc L0", "dec L0"], title="e", present=p),
    "coref_grid": lambda p: coref_view.grid_figure(torch.rand(2, 3, 2), ["animal", "street"], "animal", title="A",
                                                   present=p),
    "coref_share": lambda p: coref_view.share_figure(torch.rand(2, 3), title="s", present=p),
    "vision_patches": lambda p: vision_view.patch_figure(torch.rand(8, 8), 4, title="v", value_name="pixel",
                                                         outline=torch.rand(8, 8) > 0.5, present=p),
    "training_metrics": lambda p: figures.lines({}, title="m", x_title="step", y_title="acc", present=p, legend=True,
                                                points={"exact": ([1, 2], [0.1, 0.2])}, y_range=[0, 1]),
    "training_snapshot": lambda p: figures.heatmap(torch.rand(3, 3), TOKENS[:3], TOKENS[:3], title="step 5",
                                                   compact=True, present=p),
    "parameter_shares": lambda p: sizes_view.share_figure([("a", {"attention": 3, "embeddings": 1}), ("<b>", {})],
                                                          title="s", present=p),
}


@pytest.mark.parametrize("present", [False, True])
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_every_builder_makes_its_figure_once_and_never_updates_it(monkeypatch, name, present):
    made = []
    init = BaseFigure.__init__

    def counted(self, *args, **kwargs):
        made.append(1)
        return init(self, *args, **kwargs)

    def refuse(*args, **kwargs):
        raise AssertionError("a go.Figure updated after it was made: build the spec, then style() it")

    monkeypatch.setattr(BaseFigure, "__init__", counted)
    for where, method in ((BaseFigure, "update"), (BaseFigure, "update_layout"), (BaseFigure, "add_trace"),
                          (BaseFigure, "update_traces"), (BasePlotlyType, "update")):
        monkeypatch.setattr(where, method, refuse)
    fig = BUILDERS[name](present)
    assert isinstance(fig, go.Figure) and len(made) == 1, (name, len(made))
    json.loads(pio.to_json(fig, validate=False))  # and it still writes out


VARIANTS = dict(BUILDERS, **{  # the colour scales that are named (plotly.py's names) or spelled out by the theme
    "heatmap_scores_dark": lambda p: figures.heatmap(torch.randn(4, 4), TOKENS, TOKENS, title="s", scores=True,
                                                     present=p, dark=True),
    "matrix_sequential_dark": lambda p: figures.matrix(torch.rand(3, 4), None, TOKENS[:3], title="w", x_title="k",
                                                       y_title="q", present=p, dark=True),
    "grid_dark_nonfinite": lambda p: figures.grid(torch.tensor([[[[0.5, float("nan")], [float("inf"), 0.1]]]]),
                                                  TOKENS[:2], TOKENS[:2], title="g", present=p, dark=True),
})


@pytest.mark.parametrize("present", [False, True])
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_the_browser_gets_what_plotlys_checks_would_have_made(monkeypatch, name, present):
    """The app makes its figures without plotly's property checks (app/figures.py, VALIDATE); each builder's figure,
    made with the checks and with the colour scale left by its name as before, writes out the very same JSON."""
    torch.manual_seed(0)
    fast = pio.to_json(VARIANTS[name](present), validate=False)
    monkeypatch.setattr(figures, "VALIDATE", True)
    monkeypatch.setattr(figures, "_named_scale", lambda scale: scale)
    torch.manual_seed(0)
    checked = pio.to_json(VARIANTS[name](present), validate=False)
    assert json.loads(fast) == json.loads(checked)


@pytest.mark.parametrize("present", [False, True])
def test_the_training_pages_small_maps_and_measured_lines(present):
    """The Training page's snapshots (no colour bar, no axis titles, 300 px, narrow margins: set after the theme, so
    they win over its title room) and its held-out metrics and head scores (each measurement series on its own x,
    with markers; the legend; a fixed y range)."""
    snap = figures.heatmap(torch.rand(3, 3), TOKENS[:3], TOKENS[:3], title="step 5", compact=True, present=present)
    d = snap.to_dict()
    assert d["data"][0]["showscale"] is False and d["layout"]["height"] == 300
    assert d["layout"]["margin"] == {"l": 5, "r": 5, "t": 60, "b": 5}
    assert all("text" not in (d["layout"][axis].get("title") or {}) for axis in ("xaxis", "yaxis"))
    full = figures.heatmap(torch.rand(3, 3), TOKENS[:3], TOKENS[:3], title="step 5", present=present).to_dict()
    assert full["layout"]["xaxis"]["title"]["text"] == "key" and full["layout"]["height"] != 300
    evals = {"exact <match>": ([10, 20, 30], [0.1, 0.5, 0.9]), "pronouns": ([15], [0.4])}
    fig = figures.lines({"loss": [3.0, 2.0]}, [1, 2], title="t", x_title="step", y_title="y", points=evals,
                        legend=True, y_range=[0, 1], present=present).to_dict()
    assert [(t["mode"], t["name"], list(t["x"])) for t in fig["data"]] == [
        ("lines", "loss", [1, 2]), ("lines+markers", "exact &lt;match&gt;", [10, 20, 30]),
        ("lines+markers", "pronouns", [15])]
    assert fig["layout"]["showlegend"] is True and list(fig["layout"]["yaxis"]["range"]) == [0, 1]
    plain = figures.lines({"loss": [3.0]}, title="t", x_title="x", y_title="y", present=present).to_dict()
    assert "showlegend" not in plain["layout"] and "range" not in plain["layout"]["yaxis"]


def test_writing_a_figure_out_keeps_no_reference_to_its_tables():
    """Streamlit writes every chart with pio.to_json; with orjson as plotly's engine, a failed attempt on an object
    array kept a reference to it, and each chart's cell tables stayed in memory for good (the soak's growth)."""
    import sys
    fig = figures.matrix(torch.rand(4, 6), None, TOKENS, title="Q", x_title="d", y_title="t", show_values=True)
    d = fig.to_dict()
    tables = [d["data"][0][k] for k in ("z", "customdata", "text")]
    assert all(getattr(t, "dtype", None) == object for t in tables)
    before = [sys.getrefcount(t) for t in tables]
    for _ in range(3):
        pio.to_json(d, validate=False)
    assert [sys.getrefcount(t) for t in tables] == before
