"""Coreference probe: cached scoreboards, the pronoun→candidate grid figure, ablation evidence."""
from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st
import torch

from app.figures import _style, label
from app.shell import load_model
from core import coref
from core.data import translation
from core.runner import run


def probe_items(lang: str = "fr") -> list[tuple[coref.ProbeItem, coref.ProbeItem]]:
    """The built-in probe set: minimal pairs whose adjective flips the referent of "it"."""
    return [tuple(coref.ProbeItem(p.src, p.antecedent, p.candidates) for p in pair)
            for pair in translation.probe_pairs(lang)]


def item_for(text: str) -> coref.ProbeItem | None:
    """Antecedent and candidates of an in-grammar sentence (None when the grammar does not cover it)."""
    try:
        p = translation.pair_for(text, "fr")
    except ValueError:
        return None
    if not p.antecedent or len(p.candidates) < 2:
        return None
    return coref.ProbeItem(p.src if p.src.rstrip(".") == text.strip().rstrip(".") else text, p.antecedent, p.candidates)


@st.cache_resource(max_entries=8, show_spinner="Scoring every head on the probe set…")
def scoreboard(model_name: str) -> dict:
    items = [it for pair in probe_items() for it in pair]
    return coref.scoreboard(load_model(model_name), items)


def grid_figure(lk: torch.Tensor, candidates, antecedent: str, *, title: str, present=False, dark=False,
                resolving=None) -> go.Figure:
    """Cells: weight(it → first candidate) − weight(it → second); ✓ marks heads that resolve the pair."""
    diff = (lk[..., 0] - lk[..., 1]).tolist()
    n_l, n_h = lk.shape[:2]
    hover = [[f"layer {l} head {h}<br>" + "<br>".join(f"it → {label(c)}: {float(lk[l, h, i]):.4f}"
                                                       for i, c in enumerate(candidates))
              for h in range(n_h)] for l in range(n_l)]
    text = [["✓" if resolving is not None and resolving[l][h] else "" for h in range(n_h)] for l in range(n_l)]
    fig = go.Figure(go.Heatmap(z=diff, x=list(range(n_h)), y=list(range(n_l)), colorscale="RdBu", zmid=0,
                               text=text, texttemplate="%{text}", customdata=hover,
                               hovertemplate="%{customdata}<extra></extra>",
                               colorbar=dict(title=f"{label(candidates[0])} − {label(candidates[1])}")))
    fig.update_xaxes(title="head", tickvals=list(range(n_h)))
    fig.update_yaxes(title="layer", tickvals=list(range(n_l)), autorange="reversed")
    fig.update_layout(title=f"{title} (antecedent: {label(antecedent)})")
    return _style(fig, present, height=180 + 45 * n_l, dark=dark)


def share_figure(share: torch.Tensor, *, title: str, present=False, dark=False) -> go.Figure:
    fig = go.Figure(go.Heatmap(z=share.tolist(), zmin=0, zmax=1, colorscale="Viridis", texttemplate="%{z:.2f}",
                               hovertemplate="layer %{y} head %{x}: %{z:.3f}<extra></extra>"))
    fig.update_xaxes(title="head", tickvals=list(range(share.shape[1])))
    fig.update_yaxes(title="layer", tickvals=list(range(share.shape[0])), autorange="reversed")
    fig.update_layout(title=title)
    return _style(fig, present, height=180 + 45 * share.shape[0], dark=dark)


def links_for(model_name: str, item: coref.ProbeItem):
    res = run(load_model(model_name), item.text)
    return coref.links(res, item)
