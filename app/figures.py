"""Figure builders: pure functions from tensors and tokens to plotly figures (testable without a browser).

Token labels are HTML-escaped (plotly renders a subset of HTML in labels) and placed by index,
so repeated tokens ("the" … "the") keep their own rows and columns.
"""
from __future__ import annotations

import functools
import html
import math

import numpy as np
import plotly.graph_objects as go
import torch

from app import theme

# One colour convention on every page: a signed value (pre-softmax scores, a patching effect, a difference of
# attention) is red where positive and blue where negative, white at zero; a weight in [0, 1] is light to dark
# (Blues; in presentation mode the theme's background-to-ink scale, readable on a projector in either theme).
DIVERGING = "RdBu_r"


def sequential_scale(present: bool, dark: bool):
    """The scale of a weight in [0, 1]: Blues, or in presentation mode the theme's background → full ink."""
    return theme.heat_scale(dark) if present else "Blues"


def label(tok: str) -> str:
    return html.escape(str(tok), quote=False)


def spec(*traces: dict, title: str = "", **layout) -> dict:
    """A figure as a plain dict (plotly's JSON form, styled by :func:`style`): ``traces``, each a dict with its
    ``type``, and layout properties, nested dicts (keys whose value is None left out of both, as plotly leaves them
    unset)."""
    return {"data": [{k: v for k, v in t.items() if v is not None} for t in traces],
            "layout": theme.merge({"title": {"text": title}}, layout)}


def style(fig: dict, present: bool, height: int | None = None, dark: bool = False,
          last: dict | None = None) -> go.Figure:
    """A :func:`spec` themed and sized, made a go.Figure (once: app/theme.py, "A figure is styled as a plain dict"):
    the title wrapped and given room above the plot (:func:`app.theme.title_layout`); in presentation mode every
    title, axis, legend and cell text at projector size. ``last``: layout properties merged in after all that (they
    win over the theme's). Call it last: a title set on the go.Figure afterwards is neither wrapped nor given room."""
    layout = fig.setdefault("layout", {})
    theme.merge(layout, {"font": {"size": 20 if present else 13},
                         "margin": {"l": 10, "r": 10, "t": 70 if present else 50, "b": 10}})
    if height:
        layout["height"] = height
    theme.text_colour(fig, dark)
    fig = theme.present_layout(fig) if present else theme.title_layout(fig, False)
    theme.merge(layout, last or {})
    layout["template"] = theme.TEMPLATE_SPEC["dark" if dark else "light"]
    for trace in fig.get("data", ()):
        for holder in (trace, trace.get("marker") or {}):
            if isinstance(holder.get("colorscale"), str):
                holder["colorscale"] = _named_scale(holder["colorscale"])
    return go.Figure(fig, _validate=VALIDATE)


# plotly checks a figure's every property as it makes the go.Figure (7-11 ms a chart, a tenth of a Lesson step's
# run). Our builders write the same properties on every call, and the tests make every builder's figure both ways
# and compare what the browser would get (tests/app/test_figure_specs.py); the app skips the check. The one thing
# the check changes is a named colour scale, which plotly.js does not know by plotly.py's names ("RdBu_r"), so
# style() spells it out, as the check would.
VALIDATE = False


@functools.lru_cache(maxsize=None)
def _named_scale(name: str) -> tuple:
    return go.Heatmap(colorscale=name).colorscale  # plotly's own reading of the name (its check, made once)


def heatmap(matrix: torch.Tensor, q_tokens, k_tokens, *, title: str = "", value_name: str = "weight",
            present: bool = False, dark: bool = False, scores: bool = False, compact: bool = False) -> go.Figure:
    """One attention map: rows = queries, columns = keys (named under the map: labels drawn on top, rotated, reached
    into the title, app.theme.title_layout); hover shows both tokens and the exact value. ``compact``: one of a row
    of small maps (the Training page's snapshots): 300 px high, no colour bar, no axis titles, narrow margins."""
    qs, ks = [label(t) for t in q_tokens], [label(t) for t in k_tokens]
    zlist = _cells(matrix)
    custom = _hover_cells(qs, ks) if len(qs) * len(ks) <= HOVER_CELLS else None
    where = "query %{customdata[0]} → key %{customdata[1]}" if custom is not None else "query %{y} → key %{x}"
    colorscale = DIVERGING if scores else sequential_scale(present, dark)
    hm = dict(type="heatmap", z=zlist, x=list(range(len(ks))), y=list(range(len(qs))), customdata=custom,
              colorscale=colorscale, zmid=0 if scores else None, zmin=None if scores else 0,
              hovertemplate=f"{where}<br>{value_name} %{{z:.6f}}<extra></extra>",
              colorbar={"title": {"text": value_name}})
    fig = spec(hm, title=title, xaxis={"tickvals": list(range(len(ks))), "ticktext": ks, "title": {"text": "key"}},
               yaxis={"tickvals": list(range(len(qs))), "ticktext": qs, "autorange": "reversed",
                      "title": {"text": "query"}})
    n = max(len(qs), 4)
    if compact:
        fig["data"][0]["showscale"] = False
    small = {"height": 300, "margin": {"l": 5, "r": 5, "t": 60, "b": 5}, "xaxis": {"title": None},
             "yaxis": {"title": None}}
    return style(fig, present, height=min(900, 160 + n * (34 if present else 26)), dark=dark,
                 last=small if compact else None)


def heatmap_row(maps: dict, q_tokens, k_tokens, *, title: str, value_name: str = "weight", present: bool = False,
                dark: bool = False, gap: float = 0.03) -> go.Figure:
    """Attention maps side by side in one figure, ``{name: weights [Tq, Tk]}``: panels of equal width on one 0-1
    scale with a single colour bar (three figures in columns gave the last one the bar's width, narrower than the
    others, and its key labels overprinted); each panel is named under its keys, the queries named once, at the
    left. In presentation mode the panels are stacked, each the full width (a third of the width cannot hold the
    key labels at projector size), named beside their queries, the keys named once, under the last."""
    qs, ks = [label(t) for t in q_tokens], [label(t) for t in k_tokens]
    custom = _hover_cells(qs, ks) if len(qs) * len(ks) <= HOVER_CELLS else None
    where = "query %{customdata[0]} → key %{customdata[1]}" if custom is not None else "query %{y} → key %{x}"
    size = (1 - gap * (len(maps) - 1)) / len(maps)
    traces, axes = [], {}
    for i, (name, weights) in enumerate(maps.items()):
        n = "" if i == 0 else str(i + 1)
        last = i == len(maps) - 1
        traces.append(dict(type="heatmap", z=_cells(weights), x=list(range(len(ks))), y=list(range(len(qs))),
                           xaxis=f"x{n}", yaxis=f"y{n}", customdata=custom, colorscale=sequential_scale(present, dark),
                           zmin=0, zmax=1, showscale=last, colorbar={"title": {"text": value_name}},
                           hovertemplate=f"{label(name)}<br>{where}<br>{value_name} %{{z:.6f}}<extra></extra>"))
        keys = {"tickvals": list(range(len(ks))), "ticktext": ks}
        queries = {"tickvals": list(range(len(qs))), "ticktext": qs, "autorange": "reversed"}
        if present:  # stacked, top to bottom
            axes[f"xaxis{n}"] = {"anchor": f"y{n}", **({**keys, "title": {"text": "key"}} if last else
                                                       {"matches": "x", "showticklabels": False})}
            axes[f"yaxis{n}"] = {"anchor": f"x{n}", "domain": [1 - i * (size + gap) - size, 1 - i * (size + gap)],
                                 **queries, "title": {"text": f"{label(name)} · query"}}
        else:
            axes[f"xaxis{n}"] = {"anchor": f"y{n}", "domain": [i * (size + gap), i * (size + gap) + size], **keys,
                                 "title": {"text": f"{label(name)} · key"}}
            axes[f"yaxis{n}"] = {"anchor": f"x{n}", **({**queries, "title": {"text": "query"}} if i == 0 else
                                                       {"matches": "y", "showticklabels": False,
                                                        "autorange": "reversed"})}
    fig = spec(*traces, title=title, **axes)
    height = 160 + max(len(qs), 4) * (34 * len(maps) if present else 26)
    return style(fig, present, height=min(900 * (len(maps) if present else 1), height), dark=dark)


def grid(weights: torch.Tensor, q_tokens, k_tokens, *, title: str = "", present: bool = False,
         dark: bool = False, head_labels=None) -> go.Figure:
    """Small multiples: every layer (rows of tiles) × head (columns of tiles) of ``weights [L, H, Tq, Tk]``;
    ``head_labels``: the columns' names (default ``H0``, ``H1`` …).

    Drawn as one heatmap of tiles with a blank row and column between them, the axes naming layer and head, rather
    than as L × H subplots: plotly builds and styles each subplot's axes one by one in Python, which took 0.24 s for
    en-fr's 4 × 8 (most of an Attention page's run, and what limited a class of 30, docs/RELIABILITY.md); one
    trace takes 0.024 s (tests/app/test_grid_figure.py checks every tile against the weights)."""
    n_l, n_h, tq, tk = weights.shape
    step_q, step_k = tq + 1, tk + 1
    tiles = torch.full((n_l * step_q - 1, n_h * step_k - 1), float("nan"))
    for l in range(n_l):
        for h in range(n_h):
            tiles[l * step_q:l * step_q + tq, h * step_k:h * step_k + tk] = weights[l, h].detach().float().cpu()
    qs, ks = [label(t) for t in q_tokens], [label(t) for t in k_tokens]
    custom = _tile_hover(qs, ks, n_l, n_h) if tiles.numel() <= HOVER_CELLS else None
    where = "%{customdata[0]}<br>%{customdata[1]} → %{customdata[2]}" if custom is not None else "row %{y}, column %{x}"
    # the values go as one float32 array (sent as binary; nested lists are checked cell by cell); NaN between tiles
    hm = dict(type="heatmap", z=tiles.numpy(), colorscale=sequential_scale(present, dark), zmin=0, zmax=1,
              showscale=False, customdata=custom, hoverongaps=False,
              hovertemplate=f"{where}: %{{z:.4f}}<extra></extra>")
    heads = [label(n) for n in head_labels] if head_labels is not None else [f"H{h}" for h in range(n_h)]
    fig = spec(hm, title=title,
               xaxis={"title": {"text": "head"}, "tickvals": [h * step_k + (tk - 1) / 2 for h in range(n_h)],
                      "ticktext": heads, "showgrid": False, "zeroline": False},
               yaxis={"title": {"text": "layer"}, "tickvals": [l * step_q + (tq - 1) / 2 for l in range(n_l)],
                      "ticktext": [f"L{l}" for l in range(n_l)], "autorange": "reversed", "showgrid": False,
                      "zeroline": False})
    return style(fig, present, height=140 + 150 * n_l, dark=dark)


def _tile_hover(qs: list[str], ks: list[str], n_l: int, n_h: int):
    """Per cell of :func:`grid`'s tiles ``[layer and head, query, key]``, empty between tiles; built as one string
    array (plotly checks a nested list cell by cell: 50 ms for en-fr's 4 × 8 tiles of 9 tokens)."""
    tq, tk = len(qs), len(ks)
    l_r, i_r = np.divmod(np.arange(n_l * (tq + 1) - 1), tq + 1)
    h_c, j_c = np.divmod(np.arange(n_h * (tk + 1) - 1), tk + 1)
    gap = (i_r[:, None] == tq) | (j_c[None, :] == tk)
    where = np.char.add(np.char.add("layer ", l_r.astype(str))[:, None], np.char.add(" head ", h_c.astype(str))[None])
    query = np.broadcast_to(np.array(qs + [""], dtype=object)[i_r][:, None], gap.shape)
    key = np.broadcast_to(np.array(ks + [""], dtype=object)[j_c][None, :], gap.shape)
    custom = np.stack([where.astype(object), query, key], axis=-1)
    custom[gap] = ""
    return custom


def query_bars(weights: torch.Tensor, k_tokens, query_token: str, *, present: bool = False,
               dark: bool = False) -> go.Figure:
    """Attention of one query over all keys, one bar group per head: ``weights [H, Tk]``."""
    ks = [label(t) for t in k_tokens]
    fig = spec(*(dict(type="bar", name=f"head {h}", x=list(range(len(ks))), y=weights[h].float().tolist(),
                      customdata=ks, hovertemplate=f"head {h}: %{{customdata}} %{{y:.4f}}<extra></extra>")
                 for h in range(weights.shape[0])),
               title=f"Where “{label(query_token)}” looks, per head", barmode="group",
               xaxis={"tickvals": list(range(len(ks))), "ticktext": ks, "title": {"text": "key token"}},
               yaxis={"title": {"text": "weight"}}, legend={"title": {"text": "head"}})
    return style(fig, present, height=380, dark=dark)


def bars(values, names, *, title: str, x_title: str, y_title: str, present: bool = False, dark: bool = False,
         highlight: int | None = None) -> go.Figure:
    """Plain bar chart with escaped labels (probabilities, norms, one row of attention); both axes named."""
    vals = [float(v) for v in values]
    colors = ["#d62728" if i == highlight else "#1f77b4" for i in range(len(vals))]
    names = [label(n) for n in names]
    fig = spec(dict(type="bar", x=list(range(len(vals))), y=vals, marker={"color": colors}, customdata=names,
                    hovertemplate="%{customdata}: %{y:.6f}<extra></extra>"), title=title,
               xaxis={"tickvals": list(range(len(vals))), "ticktext": names, "title": {"text": x_title}},
               yaxis={"title": {"text": y_title}})
    return style(fig, present, height=340, dark=dark)


def lines(series: dict, x=None, *, title: str, x_title: str, y_title: str, present: bool = False,
          dark: bool = False, points: dict | None = None, legend: bool | None = None, y_range=None,
          log: str = "") -> go.Figure:
    """Lines over a shared ``x`` (default 0, 1, …), one per entry of ``series``; ``points``: more lines, each
    ``name: (xs, ys)`` on its own x, drawn with a marker at each point (measurements taken now and then);
    ``legend``: show the legend (default: plotly's, shown for two lines or more); ``y_range``: [low, high];
    ``log``: the axes drawn logarithmic, "x", "y" or "xy", their powers of ten written 1e-4 … 1e+3 (plotly's
    default writes SI prefixes, "100μ", which read as units); in presentation mode only the powers of ten are
    labelled (plotly writes the 2 and 5 between them at three quarters of the tick size, too small for a projector)."""
    traces = []
    for name, ys in series.items():
        ys = [float(v) for v in ys]
        traces.append(dict(type="scatter", x=list(x) if x is not None else list(range(len(ys))), y=ys, mode="lines",
                           name=label(name)))
    traces += [dict(type="scatter", x=list(px), y=list(py), mode="lines+markers", name=label(name))
               for name, (px, py) in (points or {}).items()]
    scale = {axis: {"type": "log", "dtick": 1 if present else None, "exponentformat": "e"} if axis[0] in log else {}
             for axis in ("xaxis", "yaxis")}
    fig = spec(*traces, title=title, showlegend=legend, xaxis={"title": {"text": x_title}, **scale["xaxis"]},
               yaxis={"title": {"text": y_title}, "range": list(y_range) if y_range is not None else None,
                      **scale["yaxis"]})
    return style(fig, present, height=360, dark=dark)


# Hover text naming both tokens is built per cell; past this many cells a heatmap's hover shows the row and column
# numbers instead (the axes keep their token labels): plotly checks every per-cell list in Python, seconds for a
# 512 x 512 map before anything is drawn.
HOVER_CELLS = 40_000


def table(rows: list) -> np.ndarray:
    """Nested lists (rows of cells; a cell may be a list) as one numpy array of the same Python objects: plotly checks
    and copies a nested list cell by cell (half of a chart's cost), an array at once, and writes both as the same
    JSON (numbers, strings, null)."""
    return np.array(rows, dtype=object)


def _cells(z: torch.Tensor) -> np.ndarray:
    """A heatmap's values as a :func:`table` of floats, non-finite ones (−∞ of a mask, NaN) as None, which plotly
    leaves blank (``tolist`` first: reading a tensor element by element cost seconds on a 512 × 384 table)."""
    return table([[v if math.isfinite(v) else None for v in row] for row in z.detach().double().cpu().tolist()])


def _hover_cells(rows, cols, swap: bool = False) -> np.ndarray:
    """Per cell ``[row label, column label]`` (``swap``: ``[column, row]``), as a :func:`table`."""
    if swap:
        return table([[[c, r] for c in cols] for r in rows])
    return table([[[r, c] for c in cols] for r in rows])


def _ticks(labels, n):
    """Tick labels for an axis of length n: escaped strings, or None to keep plain numbers."""
    if labels is None:
        return None
    return [label(t) for t in labels][:n]


def matrix(z: torch.Tensor, x_labels=None, y_labels=None, *, title: str, x_title: str, y_title: str,
           value_name: str = "value", present: bool = False, dark: bool = False, diverging: bool = False,
           show_values: bool = False, zmin=None, zmax=None, height: int | None = None,
           width: int | None = None, text=None) -> go.Figure:
    """A general heatmap (rows = y, columns = x). Non-finite cells (−∞ of a mask, NaN) are left blank and,
    with ``show_values``, written as ``−∞`` / ``NaN`` so nothing is hidden; ``text`` (rows × columns of strings) is
    written in the cells instead, e.g. a value with what it is of. ``width``: the px its cells share when
    the chart is narrower than the page (one of two columns: :data:`app.theme.HALF_WIDTH`); in presentation mode the
    values are then hidden where its cells are too narrow for them (:func:`app.theme.cell_text`)."""
    fig = _matrix_spec(z, x_labels, y_labels, title=title, x_title=x_title, y_title=y_title, value_name=value_name,
                       present=present, dark=dark, diverging=diverging, show_values=show_values, zmin=zmin, zmax=zmax,
                       text=text)
    if width is not None:
        theme.cell_text(fig, present, width)
    return style(fig, present, height=height or _matrix_height(z.shape[0], present), dark=dark)


def _matrix_height(n_rows: int, present: bool) -> int:
    return min(900, 200 + max(n_rows, 4) * (30 if present else 24))


def _matrix_spec(z: torch.Tensor, x_labels, y_labels, *, title: str, x_title: str, y_title: str, value_name: str,
                 present: bool, dark: bool, diverging: bool, show_values: bool, zmin, zmax, text=None) -> dict:
    """:func:`matrix` as a spec, not yet styled."""
    n_y, n_x = z.shape
    zlist = _cells(z)
    xs, ys = _ticks(x_labels, n_x), _ticks(y_labels, n_y)
    custom = None
    if (xs or ys) and n_x * n_y <= HOVER_CELLS:
        custom = _hover_cells(ys or list(range(n_y)), xs or list(range(n_x)), swap=True)
    hover_x = "%{customdata[0]}" if custom is not None else "%{x}"
    hover_y = "%{customdata[1]}" if custom is not None else "%{y}"
    scale = DIVERGING if diverging else sequential_scale(present, dark)
    hm = dict(type="heatmap", z=zlist, x=list(range(n_x)), y=list(range(n_y)), customdata=custom, colorscale=scale,
              zmid=0 if diverging and zmin is None else None, zmin=zmin, zmax=zmax,
              hovertemplate=f"{y_title or 'row'} {hover_y}, {x_title or 'column'} {hover_x}"
                            f"<br>{value_name} %{{z:.6g}}<extra></extra>", colorbar={"title": {"text": value_name}})
    if show_values:
        places = 2 if z.is_floating_point() else 0  # counts (an integer tensor) are written as integers

        def cell(v):
            if v != v:
                return "NaN"
            return ("−∞" if v < 0 else "∞") if v in (float("inf"), float("-inf")) else f"{v:.{places}f}"
        hm["text"] = table([[cell(v) for v in row] for row in z.detach().float().cpu().tolist()])
        hm["texttemplate"] = "%{text}"
    if text is not None:
        hm["text"], hm["texttemplate"] = table(text), "%{text}"
    xaxis = {"tickvals": list(range(n_x)), "ticktext": xs} if xs else {}
    yaxis = {"tickvals": list(range(n_y)), "ticktext": ys} if ys else {}
    return spec(hm, title=title, xaxis={**xaxis, "title": {"text": x_title}},
                yaxis={**yaxis, "title": {"text": y_title}, "autorange": "reversed"})


TOKEN_KINDS = ("special token", "starts a word", "continues a word")
_KIND_COLOURS = ("#9e9e9e", "#4c78a8", "#f58518")  # grey, blue, orange: distinct in light and dark themes
# the text in them, in either theme: black reads 7.8:1 on the grey, 4.6:1 on the blue, 8.3:1 on the orange (plotly's
# own choice drew "[EOS] 3" grey on the grey cell)
_KIND_TEXT = "#000000"


def token_kinds(ids, starts) -> list[int]:
    """Per token, an index into :data:`TOKEN_KINDS`: a special token (id below 5: [PAD] [UNK] [BOS] [EOS] [MASK]),
    a piece that starts a word, or a piece that continues the word before it (``starts``: the tokenizer's
    ``word_starts``)."""
    return [0 if int(i) < 5 else 1 if s else 2 for i, s in zip(ids, starts)]


def token_strip(tokens, ids, starts=None, *, title: str = "", present: bool = False, dark: bool = False) -> go.Figure:
    """The tokenizer's output as one strip of cells: each piece with its vocabulary id written in it, coloured by
    what it is (:data:`TOKEN_KINDS`: a special token, a piece that starts a word, a piece that continues one), so
    a word cut into sub-word pieces shows as one blue cell followed by orange ones. Without ``starts`` every
    non-special piece counts as a word start."""
    toks = [label(t) for t in tokens]
    kinds = token_kinds(ids, starts if starts is not None else [True] * len(ids))
    scale = [[pos, c] for k, c in enumerate(_KIND_COLOURS) for pos in (k / 3, (k + 1) / 3)]
    fig = spec(dict(type="heatmap", z=[[k + 0.5 for k in kinds]], x=list(range(len(toks))), y=[0], zmin=0, zmax=3,
                    text=[[f"{t}<br>{int(i)}" for t, i in zip(toks, ids)]], texttemplate="%{text}",
                    textfont={"color": _KIND_TEXT},
                    customdata=[[TOKEN_KINDS[k] for k in kinds]], colorscale=scale, showscale=False,
                    hovertemplate="%{text}<br>%{customdata}<extra></extra>"), title=title,
               xaxis={"tickvals": list(range(len(toks))), "ticktext": toks, "title": {"text": "token (position)"}},
               yaxis={"visible": False})
    return style(fig, present, height=200 if not present else 260, dark=dark)


def mask_map(mask: torch.Tensor, q_tokens, k_tokens, *, title: str = "", present: bool = False,
             dark: bool = False) -> go.Figure:
    """An additive mask as a picture: dark = the query may look at the key (0), light = masked (−∞)."""
    allowed = torch.isfinite(mask.float()).float()
    fig = _matrix_spec(allowed, k_tokens, q_tokens, title=title, x_title="key", y_title="query", value_name="allowed",
                       present=present, dark=dark, diverging=False, zmin=0, zmax=1, show_values=False)
    n_q, n_k = allowed.shape
    if n_q * n_k <= 900:
        fig["data"][0]["text"] = table([["0" if a else "−∞" for a in row] for row in allowed.bool().tolist()])
        fig["data"][0]["texttemplate"] = "%{text}"
    fig["data"][0]["showscale"] = False
    return style(fig, present, height=_matrix_height(n_q, present), dark=dark)


def grouped_bars(series: dict, names, *, title: str, x_title: str, y_title: str, present: bool = False,
                 dark: bool = False) -> go.Figure:
    """One bar group per name (token, layer), one colour per series, named in the legend; both axes named."""
    xs = [label(n) for n in names]
    fig = spec(*(dict(type="bar", name=label(key), x=list(range(len(xs))), y=[float(v) for v in values], customdata=xs,
                      hovertemplate=f"{label(key)} · %{{customdata}}: %{{y:.6f}}<extra></extra>")
                 for key, values in series.items()),
               title=title, barmode="group", showlegend=True,
               xaxis={"tickvals": list(range(len(xs))), "ticktext": xs, "title": {"text": x_title}},
               yaxis={"title": {"text": y_title}})
    return style(fig, present, height=360, dark=dark)


def trajectories(coords: torch.Tensor, tokens, stages, *, selected: int, share=None, title: str = "",
                 present: bool = False, dark: bool = False) -> go.Figure:
    """2-D PCA of token vectors ``coords [S, T, 2]``: every token's path through the stages (faint)
    and the tokens at stage ``selected`` (labelled)."""
    toks = [label(t) for t in tokens]
    traces = [dict(type="scatter", x=coords[:, t, 0].tolist(), y=coords[:, t, 1].tolist(), mode="lines", opacity=0.25,
                   line={"width": 1}, showlegend=False, hoverinfo="skip") for t in range(len(toks))]
    sel = coords[selected]
    traces.append(dict(type="scatter", x=sel[:, 0].tolist(), y=sel[:, 1].tolist(), mode="markers+text", text=toks,
                       textposition="top center", marker={"size": 12 if present else 9}, name=label(stages[selected]),
                       customdata=[[i, n] for i, n in enumerate(toks)],
                       hovertemplate="%{customdata[1]} (token %{customdata[0]})<br>PC1 %{x:.3f}, PC2 %{y:.3f}"
                                     "<extra></extra>"))
    axes = ["PC1", "PC2"]
    if share is not None:
        axes = [f"PC{i + 1} ({float(s) * 100:.0f}% of variance)" for i, s in enumerate(share)]
    fig = spec(*traces, title=title, xaxis={"title": {"text": axes[0]}}, yaxis={"title": {"text": axes[1]}})
    return style(fig, present, height=480, dark=dark)


def wrap(text: str, width: int = 44) -> str:
    """Escaped ``text`` broken into ``<br>``-separated lines of at most ``width`` characters (plotly titles do not
    wrap, and a title wider than its panel is cut off)."""
    lines, line = [], ""
    for word in str(text).split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return "<br>".join(label(x) for x in lines)


def symmetric_range(*tensors) -> float:
    """One colour range for several diverging panels: the largest |value| over all of them (1e-9 if all are 0), so
    the panels of a minimal pair share the scale ``[-r, r]`` and a negligible cell stays pale."""
    r = max((float(torch.nan_to_num(torch.as_tensor(t).float()).abs().max()) for t in tensors if t is not None),
            default=0.0)
    return max(r, 1e-9)


def effect_grid(effect: torch.Tensor, rows, *, title: str = "", zmax: float | None = None, flips=None,
                value_name: str = "effect", present: bool = False, dark: bool = False,
                height: int | None = None) -> go.Figure:
    """Attention rows (e.g. ``encoder L0`` … ``cross L3``) × heads of a patching effect, on a symmetric diverging
    scale ``[-zmax, zmax]`` (default: this grid's own largest |value|; pass one shared value for panels that are
    compared). Each cell is written as a percentage; ``flips`` (same shape) adds a mark where the head alone flips."""
    z = effect.detach().float().cpu()
    zmax = zmax or symmetric_range(z)
    n_r, n_h = z.shape
    rows = [label(r) for r in rows]
    text = [[("" if v != v else f"{(v if abs(v) >= 0.005 else 0.0):.0%}")  # no "-0%"
             + ("↻" if flips is not None and float(flips[i][j]) > 0 else "")
             for j, v in enumerate(row.tolist())] for i, row in enumerate(z)]
    custom = [[rows[i]] * n_h for i in range(n_r)]
    hm = dict(type="heatmap", z=table([[None if v != v else v for v in row] for row in z.tolist()]), x=list(range(n_h)),
              y=list(range(n_r)), zmin=-zmax, zmax=zmax, zmid=0, colorscale=DIVERGING, text=table(text),
              texttemplate="%{text}", customdata=table(custom),
              hovertemplate=f"%{{customdata}} head %{{x}}<br>{value_name} %{{z:.4f}}<extra></extra>",
              colorbar={"title": {"text": value_name}})
    fig = spec(hm, title=title, xaxis={"title": {"text": "head"}, "tickvals": list(range(n_h))},
               yaxis={"title": {"text": "attention, layer"}, "tickvals": list(range(n_r)), "ticktext": rows,
                      "autorange": "reversed"})
    return style(fig, present, height=height or 150 + 30 * n_r, dark=dark)
