"""The overprint probe (tests/e2e/overprint.js) on static plotly figures in real Chromium, offline: each check fails
on a figure built to overprint in that way, and a clean figure (a heatmap with text in its cells, a subplot title
above its panel) passes. plotly.js is the copy inside the plotly Python package (the version the page's figures are
built for); the page is a local file, nothing leaves the machine."""
from pathlib import Path

import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots

from browser import launch, offline_page, probe

pytestmark = pytest.mark.e2e
PROBE = probe("overprint.js")
TICKS = [f"token{i}" for i in range(8)]


def clean() -> go.Figure:
    """A heatmap with cell text, x ticks on top, a colour bar with a title: room for everything."""
    fig = go.Figure(go.Heatmap(z=[[i * j for j in range(8)] for i in range(6)], text=[[str(i * j) for j in range(8)]
                               for i in range(6)], texttemplate="%{text}", colorbar=dict(title="weight")))
    fig.update_xaxes(tickvals=list(range(8)), ticktext=TICKS, side="top", title="key")
    fig.update_yaxes(title="query", autorange="reversed")
    fig.update_layout(title="A clean chart<br>on two lines", margin=dict(t=170), height=500, width=800)
    return fig


def five_line_title() -> go.Figure:
    """Five title lines in a 40 px top margin, over the x tick labels drawn on top and over the plot."""
    fig = clean()
    fig.update_layout(title=dict(text="One<br>two<br>three<br>four<br>five", x=0.5, xanchor="center", y=0.97),
                      margin=dict(t=40))
    return fig


def title_over_axis_title_and_legend() -> go.Figure:
    """A legend and an x axis title drawn where the title is."""
    fig = go.Figure([go.Bar(x=TICKS, y=list(range(8)), name="a"), go.Bar(x=TICKS, y=list(range(8)), name="b")])
    fig.update_layout(title=dict(text="A title at the top of the chart", y=0.8, yanchor="middle",
                                 x=0.5, xanchor="center"),
                      legend=dict(orientation="h", x=0.3, y=1.1, yanchor="middle"), margin=dict(t=120),
                      xaxis=dict(side="top", title=dict(text="An x axis title under the chart title")),
                      height=450, width=800)
    return fig


def loose_annotations() -> go.Figure:
    """Two subplot titles on top of each other, a note on the tick labels, one on an axis title; the upper panel's
    axis title in the lower panel."""
    fig = make_subplots(rows=2, cols=1, subplot_titles=["Held-out metrics", "Loss"], vertical_spacing=0.05)
    fig.add_scatter(x=TICKS, y=list(range(8)), row=1, col=1)
    fig.add_scatter(x=TICKS, y=list(range(8)), row=2, col=1)
    fig.update_xaxes(title="step", row=1, col=1)
    fig.update_xaxes(title="tokens", row=2, col=1)
    fig.add_annotation(text="a note on the axis title", x=0.5, y=0, xref="paper", yref="paper", yanchor="top",
                       yshift=-32, showarrow=False)
    fig.add_annotation(text="Held-out metrics, again", x=0.5, y=fig.layout.annotations[0].y, xref="paper",
                       yref="paper", yanchor="bottom", showarrow=False)
    fig.add_annotation(text="on the ticks", x=3, y=-0.02, xref="x2", yref="paper", yanchor="top", showarrow=False)
    fig.update_layout(height=500, width=800, margin=dict(t=60), showlegend=False)
    return fig


def cell_annotations() -> go.Figure:
    """Annotations written inside the cells of a heatmap (inside the plot area): allowed."""
    fig = go.Figure(go.Heatmap(z=[[1, 2], [3, 4]], showscale=False))
    for i in range(2):
        for j in range(2):
            fig.add_annotation(x=j, y=i, text=f"{i}{j}", showarrow=False)
    fig.update_layout(title="Cells", height=400, width=600)
    return fig


FIGURES = {"clean": clean(), "five": five_line_title(), "legend": title_over_axis_title_and_legend(),
           "annotations": loose_annotations(), "cells": cell_annotations()}


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """{figure name: the probe's result on a page holding that figure alone}."""
    import plotly
    js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    folder = tmp_path_factory.mktemp("overprint")
    (folder / "plotly.min.js").write_bytes(js.read_bytes())
    out = {}
    with launch() as browser:
        page, log = offline_page(browser, viewport={"width": 1000, "height": 700})
        for name, fig in FIGURES.items():
            html = folder / f"{name}.html"
            html.write_text("<!doctype html><html><head><script src='plotly.min.js'></script></head><body>"
                            f"<div id=c class=main></div><script>const f = {fig.to_json()};"
                            "Plotly.newPlot('c', f.data, f.layout, {responsive: false});</script></body></html>")
            page.goto(html.as_uri())
            page.wait_for_selector(".js-plotly-plot .main-svg")
            # measured once the fonts are in and two frames are drawn: a fixed 200 ms under the full suite's load
            # measured a half-laid-out figure once (another check fired first)
            page.evaluate("() => document.fonts.ready.then(() => new Promise(r => requestAnimationFrame("
                          "() => requestAnimationFrame(r))))")
            page.wait_for_timeout(200)
            out[name] = page.evaluate(PROBE, {"scope": "body"})
        assert log.external == [] and log.errors == [], (log.external, log.errors)
    return out


def kinds(result: dict) -> str:
    return "\n".join(result["problems"])


def test_a_clean_chart_and_text_in_cells_pass(measured):
    assert measured["clean"]["problems"] == [], kinds(measured["clean"])
    assert measured["cells"]["problems"] == [], kinds(measured["cells"])
    assert measured["clean"]["charts"] == 1 and measured["clean"]["first_chart_top"] is not None


def test_a_long_title_in_a_small_margin_fails_every_title_check(measured):
    text = kinds(measured["five"])
    assert "title of 5 lines" in text, text
    assert "over tick label «token" in text, text
    assert "over the plot area" in text, text


def test_a_title_over_an_axis_title_or_the_legend_fails(measured):
    text = kinds(measured["legend"])
    assert "over axis title «An x axis title" in text, text
    assert "over the legend" in text, text


def test_annotations_over_each_other_ticks_or_axis_titles_fail(measured):
    text = kinds(measured["annotations"])
    assert "annotation «Held-out metrics» over annotation «Held-out metrics, again»" in text, text
    assert "annotation «on the ticks» over tick label" in text, text
    assert "annotation «a note on the axis title» over axis title «tokens»" in text, text
    assert "axis title «step» over a plot area" in text, text
