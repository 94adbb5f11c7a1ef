"""Figure builders: pure functions from tensors and tokens to plotly figures (testable without a browser).

Token labels are HTML-escaped (plotly renders a subset of HTML in labels) and placed by index,
so repeated tokens ("the" … "the") keep their own rows and columns.
"""
from __future__ import annotations

import html

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

SCALES = {"normal": "Blues", "present": "Greys", "scores": "RdBu"}


def label(tok: str) -> str:
    return html.escape(str(tok), quote=False)


def _style(fig: go.Figure, present: bool, height: int | None = None, dark: bool = False) -> go.Figure:
    fig.update_layout(template="plotly_dark" if dark else "plotly_white",
                      font=dict(size=20 if present else 13), margin=dict(l=10, r=10, t=50, b=10))
    if height:
        fig.update_layout(height=height)
    return fig


def heatmap(matrix: torch.Tensor, q_tokens, k_tokens, *, title: str = "", value_name: str = "weight",
            present: bool = False, dark: bool = False, scores: bool = False) -> go.Figure:
    """One attention map: rows = queries, columns = keys; hover shows both tokens and the exact value."""
    z = matrix.detach().float().cpu()
    finite = torch.isfinite(z)
    qs, ks = [label(t) for t in q_tokens], [label(t) for t in k_tokens]
    custom = [[[qs[i], ks[j]] for j in range(len(ks))] for i in range(len(qs))]
    zlist = [[(float(v) if ok else None) for v, ok in zip(row, okrow)] for row, okrow in zip(z, finite)]
    colorscale = SCALES["scores"] if scores else SCALES["present" if present else "normal"]
    if present and not scores:
        colorscale = [[0, "#ffffff"], [1, "#000000"]]
    hm = go.Heatmap(z=zlist, x=list(range(len(ks))), y=list(range(len(qs))), customdata=custom,
                    colorscale=colorscale, zmid=0 if scores else None, zmin=None if scores else 0,
                    hovertemplate=f"query %{{customdata[0]}} → key %{{customdata[1]}}<br>{value_name} %{{z:.6f}}"
                                  "<extra></extra>", colorbar=dict(title=value_name))
    fig = go.Figure(hm)
    fig.update_xaxes(tickvals=list(range(len(ks))), ticktext=ks, side="top", title="key")
    fig.update_yaxes(tickvals=list(range(len(qs))), ticktext=qs, autorange="reversed", title="query")
    fig.update_layout(title=title)
    n = max(len(qs), 4)
    return _style(fig, present, height=min(900, 160 + n * (34 if present else 26)), dark=dark)


def grid(weights: torch.Tensor, q_tokens, k_tokens, *, title: str = "", present: bool = False,
         dark: bool = False) -> go.Figure:
    """Small multiples: every layer (rows) × head (columns) of ``weights [L, H, Tq, Tk]``."""
    n_l, n_h = weights.shape[:2]
    fig = make_subplots(rows=n_l, cols=n_h, horizontal_spacing=0.01, vertical_spacing=0.02,
                        subplot_titles=[f"L{l} H{h}" for l in range(n_l) for h in range(n_h)])
    qs, ks = [label(t) for t in q_tokens], [label(t) for t in k_tokens]
    custom = [[[qs[i], ks[j]] for j in range(len(ks))] for i in range(len(qs))]
    for l in range(n_l):
        for h in range(n_h):
            fig.add_trace(go.Heatmap(z=weights[l, h].float().tolist(), colorscale="Greys" if present else "Blues",
                                     zmin=0, zmax=1, showscale=False, customdata=custom,
                                     hovertemplate=f"layer {l} head {h}<br>%{{customdata[0]}} → %{{customdata[1]}}"
                                                   ": %{z:.4f}<extra></extra>"), row=l + 1, col=h + 1)
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False, autorange="reversed")
    fig.update_layout(title=title)
    return _style(fig, present, height=140 + 150 * n_l, dark=dark)


def query_bars(weights: torch.Tensor, k_tokens, query_token: str, *, present: bool = False,
               dark: bool = False) -> go.Figure:
    """Attention of one query over all keys, one bar group per head: ``weights [H, Tk]``."""
    ks = [label(t) for t in k_tokens]
    fig = go.Figure()
    for h in range(weights.shape[0]):
        fig.add_bar(name=f"head {h}", x=list(range(len(ks))), y=weights[h].float().tolist(), customdata=ks,
                    hovertemplate=f"head {h}: %{{customdata}} %{{y:.4f}}<extra></extra>")
    fig.update_xaxes(tickvals=list(range(len(ks))), ticktext=ks)
    fig.update_layout(barmode="group", title=f"Where “{label(query_token)}” looks, per head", yaxis_title="weight")
    return _style(fig, present, height=380, dark=dark)


def bars(values, names, *, title: str = "", y_title: str = "", present: bool = False, dark: bool = False,
         highlight: int | None = None) -> go.Figure:
    """Plain bar chart with escaped labels (probabilities, norms, one row of attention)."""
    vals = [float(v) for v in values]
    colors = ["#d62728" if i == highlight else "#1f77b4" for i in range(len(vals))]
    fig = go.Figure(go.Bar(x=list(range(len(vals))), y=vals, marker_color=colors,
                           customdata=[label(n) for n in names],
                           hovertemplate="%{customdata}: %{y:.6f}<extra></extra>"))
    fig.update_xaxes(tickvals=list(range(len(vals))), ticktext=[label(n) for n in names])
    fig.update_layout(title=title, yaxis_title=y_title)
    return _style(fig, present, height=340, dark=dark)


def lines(series: dict, x=None, *, title: str = "", x_title: str = "", y_title: str = "",
          present: bool = False, dark: bool = False) -> go.Figure:
    fig = go.Figure()
    for name, ys in series.items():
        ys = [float(v) for v in ys]
        fig.add_scatter(x=list(x) if x is not None else list(range(len(ys))), y=ys, mode="lines", name=label(name))
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title)
    return _style(fig, present, height=360, dark=dark)
