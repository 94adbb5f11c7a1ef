"""Presentation mode and the theme switch, without a browser: the sizes set on the figures themselves, cell text
sized or hidden, titles wrapped, the reload script, and the navigation holding every page exactly once.
(Real rendering, contrast and cut labels: tests/e2e/test_presentation_browser.py.)"""
from pathlib import Path

import plotly.graph_objects as go
import pytest
import torch

from app import figures, nav, theme

ROOT = Path(__file__).resolve().parents[2]

AXES = dict(title="t", x_title="x", y_title="y")  # every chart names its axes (figures requires them)


def test_presentation_sizes_are_set_on_the_figure_and_win_over_a_template():
    fig = figures.heatmap(torch.rand(5, 5), list("abcde"), list("abcde"), title="A title", present=True)
    lay = fig.layout
    assert lay.title.font.size == theme.TITLE >= 24
    assert lay.xaxis.tickfont.size == lay.yaxis.tickfont.size == theme.TICK >= 18
    assert lay.xaxis.title.font.size == theme.AXIS_TITLE >= 18
    assert fig.data[0].colorbar.tickfont.size == theme.TICK
    normal = figures.heatmap(torch.rand(5, 5), list("abcde"), list("abcde"), title="A title")
    assert normal.layout.title.font.size == theme.TITLE_PLAIN < theme.TITLE and normal.layout.xaxis.tickfont.size is None


def test_grid_labels_and_legends_are_projector_size():
    grid = figures.grid(torch.rand(2, 3, 4, 4), list("abcd"), list("abcd"), present=True)
    assert grid.layout.xaxis.tickfont.size == grid.layout.yaxis.tickfont.size == theme.TICK  # H0 … / L0 …
    bars = figures.query_bars(torch.rand(4, 5), list("abcde"), "it", present=True)
    assert bars.layout.legend.font.size == bars.layout.legend.title.font.size == theme.TICK
    assert bars.layout.legend.title.text == "head"


@pytest.mark.parametrize("dark,colour", [(False, "#31333f"), (True, "#fafafa")])
def test_chart_text_takes_the_page_text_colour(dark, colour):
    fig = figures.bars([0.2, 0.8], ["a", "b"], title="t", x_title="x", y_title="y", dark=dark)
    assert fig.layout.xaxis.tickfont.color == fig.layout.yaxis.title.font.color == colour


def test_cell_text_is_legible_or_hidden():
    few = figures.matrix(torch.rand(3, 4), **AXES, show_values=True, present=True)
    assert few.data[0].textfont.size == theme.CELL and few.data[0].texttemplate == "%{text}"
    many = figures.matrix(torch.rand(3, 40), **AXES, show_values=True, present=True)  # 936 px / 40 = 23 px a cell
    assert many.data[0].texttemplate == "" and many.data[0].text is None
    assert "%{z" in many.data[0].hovertemplate  # the value is still in the hover
    normal = figures.matrix(torch.rand(3, 40), **AXES, show_values=True)
    assert normal.data[0].texttemplate == "%{text}"
    mask = figures.mask_map(torch.zeros(30, 30), list("x" * 30), list("x" * 30), present=True)
    assert mask.data[0].texttemplate == ""
    # QA s58 item 7: a chart in one of two columns (the Masking page's section 2) says so; 15 columns overprinted there
    half = figures.matrix(torch.rand(15, 15), **AXES, show_values=True, present=True, width=theme.HALF_WIDTH)
    assert half.data[0].texttemplate == "" and half.data[0].text is None
    assert figures.matrix(torch.rand(15, 15), **AXES, show_values=True, present=True).data[0].texttemplate
    short = figures.matrix(torch.rand(4, 4), **AXES, show_values=True, present=True, width=theme.HALF_WIDTH)
    assert short.data[0].texttemplate == "%{text}" and short.data[0].textfont.size == theme.CELL
    assert figures.matrix(torch.rand(15, 15), **AXES, show_values=True, width=theme.HALF_WIDTH).data[0].texttemplate


def test_long_titles_wrap_and_keep_their_tags():
    assert theme.wrap_title("short") == "short"
    wrapped = theme.wrap_title("<b>one two three four five six seven eight nine ten</b>", width=14)
    assert wrapped == "<b>one two three<br>four five six<br>seven eight<br>nine ten</b>"
    assert theme.wrap_title("a<br>b c", width=1) == "a<br>b<br>c"
    fig = figures.lines({"x": [1, 2]}, title="A chart title that is far too long for half a projector page",
                        x_title="x", y_title="y", present=True)
    lines = fig.layout.title.text.split("<br>")
    assert len(lines) == 2 and all(len(x) <= theme.TITLE_CHARS for x in lines)
    assert fig.layout.margin.t >= 1.3 * theme.TITLE * 2  # room for both lines above the plot


@pytest.mark.parametrize("present", [True, False])
def test_a_title_hangs_from_the_top_with_room_for_its_lines_and_axes_are_not_on_top(present):
    """Plotly's own place for a title, the middle of the top margin, put a third line into the plot and under x tick
    labels drawn on top; the browser test (tests/e2e/overprint.js) measures the result on every page."""
    size = theme.TITLE if present else theme.TITLE_PLAIN
    one = figures.heatmap(torch.rand(3, 3), "abc", "abc", title="Short", present=present)
    two = figures.heatmap(torch.rand(3, 3), "abc", "abc", title="A title long enough to need two lines " * 2,
                          present=present)
    for fig in (one, two):
        assert fig.layout.title.yref == "container" and fig.layout.title.yanchor == "top"
        assert fig.layout.xaxis.side != "top" and fig.layout.xaxis.automargin
    lines = two.layout.title.text.count("<br>") + 1
    assert lines > 1 and two.layout.margin.t >= 1.3 * size * lines + theme.TITLE_PAD
    assert two.layout.title.pad.t > one.layout.title.pad.t  # plotly hangs several lines higher than one


def test_a_long_y_axis_title_gets_a_plot_as_tall_as_itself():
    fig = figures.bars([0.1, 0.2], ["a", "b"], title="Held-out metrics", x_title="step",
                       y_title="exact match, pronoun accuracy, perplexity", present=True)
    assert fig.layout.height > 340  # bars' own height


def test_log_axes_label_only_decades_in_presentation_mode():
    fig = figures.lines({"x": [1, 10, 100]}, [1, 10, 100], **AXES, present=True, log="xy")
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "log" and fig.layout.xaxis.dtick == 1
    plain = figures.lines({"x": [1, 10]}, [1, 10], **AXES, log="x")
    assert plain.layout.xaxis.type == "log" and plain.layout.xaxis.dtick is None and plain.layout.yaxis.type is None


def test_dark_presentation_heatmap_puts_the_strongest_weight_in_full_ink():
    light = figures.heatmap(torch.eye(3), "abc", "abc", present=True).data[0].colorscale
    dark = figures.heatmap(torch.eye(3), "abc", "abc", present=True, dark=True).data[0].colorscale
    assert light[-1][1] == "#000000" and dark[-1][1] == "#ffffff"


def test_switch_script_reloads_into_the_asked_theme_only():
    script = theme.switch_script("dark")
    assert "'embed_options',\"dark_theme\"" in script and "'theme',\"dark\"" in script
    assert "location.replace" in script
    with pytest.raises(ValueError):
        theme.switch_script("</script><script>alert(1)")


def test_page_css_is_projector_size_only_in_presentation_mode():
    assert "font-size: 22px" in theme.page_css(True, False)
    assert "font-size: 22px" not in theme.page_css(False, True)
    assert theme.CAPTION["dark"] in theme.page_css(False, True)


def test_a_metrics_value_keeps_its_own_size_in_presentation_mode():
    """QA finding: st.metric values were body-sized in presentation mode. Streamlit 1.67 writes the value as Markdown
    (``stMetricValue > stMarkdownContainer > p``), so the rule raising Markdown paragraphs to 1 rem caught it; a more
    specific rule gives it back its own size (2.25 rem: 49.5 px at 22 px, measured in Chromium)."""
    import re
    css = theme.page_css(True, False)
    rule = re.search(r'\[data-testid="stMetricValue"\] \[data-testid="stMarkdownContainer"\] p \{([^}]*)\}', css)
    assert rule and rule.group(1).strip() == "font-size: inherit !important;"
    assert css.index(rule.group(0)) > css.index('[data-testid="stMarkdownContainer"] p,')  # after the 1 rem rule
    assert "stMetricValue" not in theme.page_css(False, False)


def test_navigation_holds_every_page_once_in_its_group():
    files = [e[0] for entries in nav.SECTIONS.values() for e in entries] + [nav.HOME[0]]
    assert len(files) == len(set(files))
    on_disk = {p.name for p in (ROOT / "pages").glob("*.py")}
    assert on_disk <= set(files), on_disk - set(files)  # a new page must be placed in a group
    learn, probe, build = (nav.SECTIONS[k] for k in ("Learn", "Probe", "Build"))
    assert learn[0][0] == "lesson.py" and probe[0][0] == "coreference.py" and build[0][0] == "training.py"
    urls = [e[3] for entries in nav.SECTIONS.values() for e in entries]
    assert len(urls) == len(set(urls))
