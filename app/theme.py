"""Presentation mode and the dark theme: the type sizes a projector needs, for the page (CSS) and for the charts
(plotly layout, set on every figure by :func:`app.figures.style`).

Sizes are what a room reads from the back at 1024×768 and 1280×800 (checked in real Chromium by
tests/e2e/test_presentation_browser.py): page title ≥ 40 px, body ≥ 22 px, chart titles ≥ 24 px, axis titles, tick
labels, legends and colour bars ≥ 18 px; heatmap cell text at 18 px, or hidden (the value stays in the hover) where
a cell is too narrow to hold it.

The dark theme is Streamlit's own (``[theme.light]`` / ``[theme.dark]`` in .streamlit/config.toml): Streamlit has
no per-session call to change it, so the page asks the browser to reload with Streamlit's ``embed_options`` URL
switch (:func:`switch_script`); ``?theme=dark`` in a link does the same.
"""
from __future__ import annotations

import json
import re

import plotly.graph_objects as go
import plotly.io as pio

# presentation sizes in px (chart) — the page sizes are in PAGE_CSS
TITLE, AXIS_TITLE, TICK, CELL = 26, 20, 18, 18
MIN_CELL_PX = 44    # narrowest heatmap cell that holds a short value ("0.25", "−∞", "100%") at CELL px
PLOT_WIDTH = 936    # a full-width chart at 1024×768 in presentation mode (sidebar closed, 2 rem margins)
# the heatmap area of the narrowest chart in one of two columns: 460 px (PAGE_CSS: a narrower column wraps to full
# width) less ≈ 150 px of row labels and colour bar; "-1.44" at CELL px overprinted in 10 columns of it (Masking)
HALF_WIDTH = 310

# Streamlit's rem is the html font size: 22 px makes body text 22 px and scales headings, widgets and spacing with
# it. Labels that Streamlit draws smaller (captions, widget labels, the navigation, tables) are raised to 1 rem, and
# labels wrap instead of being cut with an ellipsis.
PAGE_CSS = """<style>
html { font-size: 22px; }
h1 { font-size: 2.3rem !important; line-height: 1.2 !important; padding: 0 0 0.5rem 0 !important; }
h2 { font-size: 1.6rem !important; padding-top: 0.6rem !important; }
h3 { font-size: 1.3rem !important; }
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p,
[data-testid="stWidgetLabel"] p, [data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li,
[data-testid="stMarkdownContainer"] td, [data-testid="stMarkdownContainer"] th, [data-testid="stText"],
[data-testid="stAlertContentInfo"] p, [data-testid="stExpander"] summary p, [data-testid="stTab"] p,
[data-testid="stMetricLabel"] p, [data-testid="stSidebarNav"] span, [data-testid="stSidebarNav"] header,
[data-testid="stNavSectionHeader"], [data-testid="stPageLink"] p, [data-testid="stPageLink"] span,
.stSelectbox div[data-baseweb="select"] div, .stRadio label p, .stCheckbox label p, button p,
[data-baseweb="tag"] span, [data-testid="stMultiSelectTagsContainer"] span, textarea, input {
  font-size: 1rem !important;
}
[data-testid="stSidebarNav"] a span, [data-testid="stWidgetLabel"] p, [data-testid="stPageLink"] p,
[data-testid="stPageLink"] span, [data-testid="stTab"] p, button p {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
}
/* a metric's value is Markdown inside: the 1 rem rule above shrank it to body text; it keeps its own 2.25 rem */
[data-testid="stMetricValue"] [data-testid="stMarkdownContainer"] p { font-size: inherit !important; }
[data-testid="stSidebarNav"] a { height: auto !important; min-height: 2rem; }
[data-testid="stCaptionContainer"] { opacity: 1 !important; }
/* the title just under the header's sidebar button: the first screen is for the page's figure */
[data-testid="stMainBlockContainer"] { padding: 2.6rem 2rem 4rem 2rem !important; }
/* charts side by side only where each gets room for its title (TITLE_CHARS at TITLE px): else one under another */
[data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] [data-testid="stPlotlyChart"]) { flex-wrap: wrap; }
[data-testid="stColumn"]:has([data-testid="stPlotlyChart"]) { min-width: 460px !important; }
button kbd { display: none !important; }  /* the step caption names the keys; the faded hint is too pale */
</style>"""

# Streamlit draws captions in the text colour at 60 % opacity: 3.7:1 on white, under the 4.5:1 WCAG AA asks of
# body text. Both themes get a caption colour that passes (checked in the browser test).
# A slider's value, a chosen pill / segment and the open tab's name are written in the accent red: 5.2:1 on white but 3.9:1 on the dark
# background; a lighter red there.
CONTRAST_CSS = """<style>
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p { color: %s !important; }
[data-testid="stSliderThumbValue"], [data-testid="stSliderThumbValue"] p,
[data-testid^="stBaseButton-"][data-testid$="Active"] p,
[data-testid="stTab"][aria-selected="true"] p, [data-baseweb="tab"][aria-selected="true"] p,
button[role="tab"][aria-selected="true"] p { color: %s !important; }
</style>"""
CAPTION = {"light": "#4a4c57", "dark": "#c4c6cc"}
ACCENT_TEXT = {"light": "#c53948", "dark": "#ff8f8f"}


def page_css(present: bool, dark: bool) -> str:
    """The CSS the shell puts on every page (trusted: ours, no user text)."""
    mode = "dark" if dark else "light"
    css = CONTRAST_CSS % (CAPTION[mode], ACCENT_TEXT[mode])
    if present:  # one <style> block: Markdown ends an HTML block at the line that closes it
        css = css.replace("</style>", "") + PAGE_CSS.replace("<style>", "")
    return css


def switch_script(theme: str) -> str:
    """A script that reloads the page in Streamlit's ``theme`` ("light" / "dark") theme, keeping the link's view.
    ``embed_options=<theme>_theme`` is read by Streamlit's front end when the page loads; ``theme`` is ours (it
    survives a page switch, when Streamlit drops ``embed_options``)."""
    if theme not in ("light", "dark"):
        raise ValueError(f"unknown theme {theme!r}")
    return ("<script>(function(){const u=new URL(window.location.href);"
            f"u.searchParams.set('embed_options',{json.dumps(theme + '_theme', allow_nan=False)});"
            f"u.searchParams.set('theme',{json.dumps(theme, allow_nan=False)});"
            "if(u.href!==window.location.href){window.location.replace(u.href);}})();</script>")


def heat_scale(dark: bool) -> list:
    """Presentation heatmap scale: weight 0 is the background, weight 1 is full ink (black on white, white on
    dark), so the strongest link is the most visible in either theme."""
    return [[0, "#0e1117"], [1, "#ffffff"]] if dark else [[0, "#ffffff"], [1, "#000000"]]


def _n_columns(trace: dict) -> int:
    z = trace.get("z")
    try:
        return max(len(row) for row in z) if z is not None and len(z) and hasattr(z[0], "__len__") else 1
    except TypeError:
        return 1


# A figure is styled as a plain dict, plotly's own JSON form ({"data": [traces, each with its "type"], "layout":
# {...}}), and made a go.Figure once, at the end (app.figures.style). plotly validates a go.Figure on every update:
# 3-6 ms a call, ten calls to style one chart (40-60 ms a chart, most of a Lesson step's run); the dict is checked
# once, when the go.Figure is made (docs/BENCHMARKS.md §13).
COLORBAR_TRACES = ("heatmap", "contour", "histogram2d", "histogram2dcontour", "surface")  # a colorbar of their own


def merge(dst: dict, src: dict) -> dict:
    """``src`` merged into ``dst`` as plotly's ``update_layout`` merges: nested dicts key by key (copied, never
    shared between two places of a figure), anything else replaced, ``None`` removes the key."""
    for key, value in src.items():
        if value is None:
            dst.pop(key, None)
        elif isinstance(value, dict):
            if not isinstance(dst.get(key), dict):
                dst[key] = {}
            merge(dst[key], value)
        else:
            dst[key] = value
    return dst


def axes(spec: dict, letter: str) -> list[dict]:
    """Every x (``letter`` "x") or y axis of a figure spec, created empty where missing: plotly's ``update_xaxes``
    reaches the first axis whether or not the figure set it, and every numbered one it has."""
    layout = spec.setdefault("layout", {})
    names = [f"{letter}axis"] + sorted((k for k in layout if re.fullmatch(rf"{letter}axis\d+", k)),
                                       key=lambda k: int(k[5:]))
    return [layout.setdefault(name, {}) for name in names]


def cell_text(spec: dict, present: bool, width: int = PLOT_WIDTH) -> dict:
    """Heatmap cell text at a size the room can read: in presentation mode CELL px where a cell is at least
    MIN_CELL_PX wide, else hidden (the exact value stays in the hover). ``width``: the chart's width in px."""
    if not present:
        return spec
    subplots = len(axes(spec, "x"))
    for trace in spec.get("data", ()):
        if trace.get("type") != "heatmap" or (trace.get("texttemplate") in (None, "") and trace.get("text") is None):
            continue
        if width / subplots / _n_columns(trace) >= MIN_CELL_PX:
            trace.setdefault("textfont", {})["size"] = CELL  # a colour set by the builder stays
        else:
            trace["texttemplate"] = ""
            trace.pop("text", None)
    return spec


# The colour of each trace (a head, a layer, a model) in the order plotly hands them out: 16 colours per theme, each
# ≥ 3:1 against its theme's background (WCAG 1.4.11, graphics) and every pair ≥ 35 apart in CIELAB (ΔE*76), so a
# model's 12 heads (minilm) never share a colour. Picked greedily, farthest-first, from an HSL grid
# (tests/app/test_theme_palette.py checks both properties).
HEAD_COLOURS = {
    "light": ["#0000f5", "#00a300", "#ff1f4b", "#008fcc", "#63471d", "#ff1fd2", "#350a76", "#00a383", "#d671a3",
              "#cc6600", "#97970c", "#1f78ff", "#800026", "#1d3263", "#b647ff", "#32631d"],
    "dark": ["#781fff", "#1fff1f", "#f53100", "#2fc8ee", "#76760a", "#f47bc4", "#ffff1f", "#007af5", "#1fffbc",
             "#f49f7b", "#ff1fe9", "#0a7655", "#00a321", "#f50062", "#f5ab00", "#c2ea86"],
}
BACKGROUND = {"light": "#ffffff", "dark": "#0e1117"}  # Streamlit's page backgrounds

TRACE_TYPES = ("bar", "heatmap", "scatter")  # every kind of trace the app draws


def _template(name: str) -> go.layout.Template:
    """plotly's ``name`` template cut to its layout and the trace types the app draws. plotly deep-copies a
    figure's template into it: the whole plotly_white (defaults for ~40 trace types) cost 7 ms a figure, a fifth of
    an Attention or Lesson page's run, and this one 2 ms. Read once here, whole (plotly initialises a template's parts
    on first read, and two sessions' threads reading a cold one at once can race, plotly.py issue 3441)."""
    full = pio.templates[name]
    cut = go.layout.Template(layout=full.layout, data={k: full.data[k] for k in TRACE_TYPES})
    cut.to_plotly_json()
    for k in TRACE_TYPES:
        _ = [t.to_plotly_json() for t in cut.data[k]]
    return cut


pio.templates["attention-lab-light"] = _template("plotly_white")
pio.templates["attention-lab-dark"] = _template("plotly_dark")
pio.templates.default = "attention-lab-light"  # what go.Figure() copies in before a page's theme is set
TEMPLATE = {"light": "attention-lab-light", "dark": "attention-lab-dark"}
# Each as plotly's JSON form, what app.figures.style puts in a figure spec: plotly checks a template given by name and
# deep-copies it (14 ms a figure), a dict it only checks (7 ms). Named, not left to plotly's default: importing
# Streamlit's plotly_chart module sets that default to Streamlit's own template, whenever it happens to be imported.
TEMPLATE_SPEC = {mode: pio.templates[name].to_plotly_json() for mode, name in TEMPLATE.items()}
# Figures are written out (Streamlit's plotly_chart, pio.to_json) by the standard json module, not orjson: orjson
# (3.8.3 here) cannot write a numpy array of Python objects (our cell tables, app.figures.table) and, failing, keeps
# a reference to it, so every chart's tables stayed in memory for good (50 MB per thousand Lesson figures; the soak
# read 86-126 MB per 100 visits). plotly then retries with a slower cleaning pass anyway: json is faster here too.
pio.json.config.default_engine = "json"

TEXT = {"light": "#31333f", "dark": "#fafafa"}  # Streamlit's own text colours: 12.6:1 and 17:1 on its backgrounds


def text_colour(spec: dict, dark: bool) -> dict:
    """Chart text in the page's text colour (Streamlit's chart theme draws ticks and axis titles in a grey that
    reads 3.7:1 on white; WCAG AA asks 4.5:1), and traces in :data:`HEAD_COLOURS`."""
    colour = TEXT["dark" if dark else "light"]
    merge(spec.setdefault("layout", {}), {
        "colorway": list(HEAD_COLOURS["dark" if dark else "light"]), "font": {"color": colour},
        "title": {"font": {"color": colour}},
        "legend": {"font": {"color": colour}, "title": {"font": {"color": colour}}}})
    for axis in axes(spec, "x") + axes(spec, "y"):
        merge(axis, {"tickfont": {"color": colour}, "title": {"font": {"color": colour}}})
    return spec


TITLE_CHARS = 32  # a chart title line at TITLE px that fits half the page at 1024×768 (≈ 13 px a character)
TITLE_PLAIN = 18  # chart title px out of presentation mode (plotly's own: 1.4 × the 13 px chart font)
TITLE_CHARS_PLAIN = 44  # a title line at TITLE_PLAIN px that fits half the main area beside the open sidebar at 1280×800
MAX_TITLE_LINES = 2  # a longer title is shortened where it is made, its detail said in a caption
TITLE_PAD = 10  # px above the title


NBSP = "\u00a0"  # a space wrap_title never breaks at (plotly draws it as a space)


def nobreak(phrase: str) -> str:
    """``phrase`` with its spaces made non-breaking, so :func:`wrap_title` keeps it on one line (a formula such as
    "PE(pos, 2i+1) = cos(…)", or "share of 182 right" that must not leave its last word alone on a line)."""
    return phrase.replace(" ", NBSP)


def wrap_title(title: str, width: int = TITLE_CHARS) -> str:
    """Break an (already escaped) plotly title into ``<br>`` lines of at most ``width`` visible characters, at plain
    spaces only (see :func:`nobreak`); its own line breaks and tags stay as they are. Plotly titles do not wrap: a
    long one is cut at the chart's edge."""
    out = []
    for line in str(title).split("<br>"):
        words, cur, n = line.split(" "), [], 0
        for word in words:
            size = len(re.sub(r"<[^>]*>", "", word))
            if cur and n + 1 + size > width:
                out.append(" ".join(cur))
                cur, n = [], 0
            cur.append(word)
            n += size + (1 if n else 0)
        out.append(" ".join(cur))
    return "<br>".join(out)


def _top_axis(spec: dict) -> bool:
    return any(axis.get("side") == "top" for axis in axes(spec, "x"))


def title_layout(spec: dict, present: bool) -> dict:
    """The chart title wrapped to the narrowest chart of its mode (TITLE_CHARS at TITLE px in presentation mode,
    TITLE_CHARS_PLAIN at TITLE_PLAIN px out of it) and hung from the top of the figure, with a top margin that holds
    every line above the plot. Plotly's own place for a title is the middle of the top margin whatever its number of
    lines: a third line reached into the plot, and x tick labels drawn on top (grown by the axis's automargin, which
    does not know the title) reached up into it. Axes of the app's charts are therefore drawn at the bottom and
    left, where automargin grows the margin freely; a figure that keeps an axis on top gets room for one line of tick
    labels and its title (a rotated label needs more: keep such axes at the bottom)."""
    layout = spec.setdefault("layout", {})
    size = TITLE if present else TITLE_PLAIN
    lines = 0
    title = layout.get("title") or {}
    if title.get("text"):
        title["text"] = wrap_title(title["text"], TITLE_CHARS if present else TITLE_CHARS_PLAIN)
        lines = title["text"].count("<br>") + 1
    axis = (AXIS_TITLE + TICK if present else 2 * TITLE_PLAIN) + 24 if _top_axis(spec) else 0
    top = TITLE_PAD + round(1.3 * size * lines) + 14 + axis
    # plotly hangs a title of several lines 0.7 em higher than one of a single line (its first line then starts
    # above the figure, cut): pushed down by as much
    pad = TITLE_PAD + (round(0.7 * size) if lines > 1 else 0)
    merge(layout, {"title": {"font": {"size": size}, "yref": "container", "y": 1, "yanchor": "top", "pad": {"t": pad}},
                   "margin": {"t": max(top, 40)}})
    for axis in axes(spec, "x") + axes(spec, "y"):
        axis["automargin"] = True
    return _room_for_y_title(spec, present, max(top, 40))


def _room_for_y_title(spec: dict, present: bool, top: int) -> dict:
    """A figure of one plot, tall enough that its y axis title (written upright, centred on the plot) is no longer
    than the plot: a longer one reaches up into the chart title (the Training page's "Held-out metrics", a bar chart
    340 px high under a title of two lines)."""
    ys = axes(spec, "y")
    title = (ys[0].get("title") or {}).get("text") if len(ys) == 1 else None
    height = spec["layout"].get("height")
    if not (title and height):
        return spec
    axis = AXIS_TITLE if present else 14
    need = 0.6 * axis * len(re.sub(r"<[^>]*>", "", str(title)))  # ≈ 0.55 em a character, and some air
    bottom = (2 * (TICK + AXIS_TITLE) if present else 60) + 10  # x tick labels and title under the plot
    if height - top - bottom < need:
        spec["layout"]["height"] = round(top + bottom + need)
    return spec


def present_layout(spec: dict) -> dict:
    """Presentation sizes set on the figure itself (explicit layout values win over any template, Streamlit's
    included): chart title (and its room: :func:`title_layout`), every axis's title and ticks, legend, colour bars,
    annotations (subplot titles)."""
    title_layout(spec, True)
    layout = spec["layout"]
    merge(layout, {"font": {"size": TICK}, "legend": {"font": {"size": TICK}, "title": {"font": {"size": TICK}}},
                   "hoverlabel": {"font": {"size": TICK}}})
    for axis in axes(spec, "x") + axes(spec, "y"):
        merge(axis, {"tickfont": {"size": TICK}, "title": {"font": {"size": AXIS_TITLE}}, "automargin": True})
    for ann in layout.get("annotations") or ():
        ann["font"] = {"size": max(TICK, (ann.get("font") or {}).get("size") or 0)}
    for trace in spec.get("data", ()):
        if trace.get("type") in COLORBAR_TRACES and trace.get("showscale") is not False:
            bar = trace.setdefault("colorbar", {})
            bar["tickfont"] = {"size": TICK}
            bar.setdefault("title", {})["font"] = {"size": TICK}
    return cell_text(spec, True)
