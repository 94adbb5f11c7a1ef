"""The "Heads that language models grow" page's shared part: cached measurements of :mod:`core.find_heads`, the
layers × heads score maps, the traced repeated-random-sequence example and the ablation of induction heads.

Everything is computed from the chosen model: the score maps on a batch of repeated random sequences (previous-token
optionally on the sidebar sentence), the attention maps on the sidebar sentence (the shared traced run) or on one
repeated random sequence, the losses with the heads the user switches off.
"""
from __future__ import annotations

import streamlit as st
import torch

from app import figures
from app.cache import bounded
from app.shell import load_model
from app.text import md
from core import find_heads as fh
from core.io.budget import max_positions
from core.io.tokenizer import normalize_text
from core.trace import Trace

TITLES = {"previous_token": "Previous-token score", "duplicate_token": "Duplicate-token score",
          "induction": "Induction score"}
WHAT = {"previous_token": "mean attention from each token to the one just before it",
        "duplicate_token": "attention from a token of the second copy to the same token in the first copy",
        "induction": "attention from a token of the second copy to the token that followed it in the first copy"}
BATCH = 16  # random sequences the scores and losses average over


def usable(cfg) -> bool:
    """Does the page apply to a model of this config (one self-attention stack: decoder-only or encoder-only)?"""
    return cfg.kind in ("decoder-only", "encoder-only")


def longest_copy(name: str) -> int:
    """The longest random sequence two copies of which (with [BOS] / [CLS] … [SEP]) the model reads here."""
    ck = load_model(name)
    frame = fh.framing(ck)
    extra = (frame["bos"] is not None) + (frame["eos"] is not None)
    return max(2, min((max_positions(ck.model) - extra) // 2, ck.model.cfg.vocab_size - frame["vocab_low"]))


def _text_ids(ck, text: str) -> list[int] | None:
    """The sentence as the model reads it ([BOS] first, or [CLS] … [SEP]), clipped to what it reads; None if empty."""
    if not normalize_text(text or ""):
        return None
    frame = fh.framing(ck)
    extra = (frame["bos"] is not None) + (frame["eos"] is not None)
    body = ck.tokenizer.encode(text)[:max_positions(ck.model) - extra]
    ids = ([frame["bos"]] if frame["bos"] is not None else []) + body + ([frame["eos"]] if frame["eos"] is not None
                                                                         else [])
    return ids if len(ids) >= 2 else None


@bounded(spinner="Measuring every head on repeated random sequences…")
def scores(name: str, seq_len: int, seed: int, text: str | None) -> dict:
    """:func:`core.find_heads.head_scores` for a model (previous-token on ``text`` when given and at least two
    tokens long), with its framing, the top heads per kind and where the previous-token score was measured."""
    ck = load_model(name)
    frame = fh.framing(ck)
    text_ids = _text_ids(ck, text) if text is not None else None
    out = fh.head_scores(ck.model, seq_len=seq_len, seed=seed, batch=BATCH, text_ids=text_ids, **frame)
    out["top_heads"] = {kind: fh.top_heads(out[kind], 3) for kind in fh.KINDS}
    out["previous_token_on"] = "text" if text_ids is not None else "random"
    return out


@bounded
def repeated_example(name: str, seq_len: int, seed: int) -> tuple[torch.Tensor, list[str]]:
    """One repeated random sequence through the model: ``([layers, heads, T, T] attention weights, tokens)``."""
    ck = load_model(name)
    frame = fh.framing(ck)
    ids = fh.repeated_tokens(ck.model.cfg.vocab_size, seq_len=seq_len, batch=1, seed=seed, **frame)
    stack = fh.stack_of(ck.model)
    trace = Trace()
    with torch.no_grad():
        ck.model(ids.to(ck.model.device), trace=trace)
    n = ck.model.cfg.n_layers(stack)
    weights = torch.stack([trace[f"{stack}.{i}.self_attn.weights"][0] for i in range(n)]).float().cpu()
    return weights, ck.tokenizer.display(ids[0].tolist())


@bounded(spinner="Running the repeated sequences with those heads switched off…")
def ablation(name: str, heads: tuple, seq_len: int, seed: int) -> dict:
    """Copy losses and the loss at every position, with ``heads`` ((layer, head) pairs) switched off."""
    ck = load_model(name)
    kw = dict(seq_len=seq_len, seed=seed, batch=BATCH, **fh.framing(ck))
    return {"copies": fh.ablate_heads_loss(ck.model, list(heads), **kw),
            "curve": fh.loss_by_position(ck.model, list(heads), **kw)}


def head_name(layer: int, head: int) -> str:
    return f"L{layer}H{head}"


def score_figure(grid, kind: str, *, present: bool, dark: bool):
    """A layers × heads map of one score (0-1 colour scale, the value written in each cell)."""
    z = torch.tensor(grid, dtype=torch.float32)
    n_layers, n_heads = z.shape
    fig = figures.matrix(z, [f"H{h}" for h in range(n_heads)], [f"L{i}" for i in range(n_layers)],
                          title=TITLES[kind], x_title="head", y_title="layer", value_name="score",
                          present=present, dark=dark, show_values=True, zmin=0.0, zmax=1.0,
                          height=160 + n_layers * (48 if present else 38))
    return fig.update_xaxes(side="bottom")  # on top, the axis title would run into the figure's title


def top_line(s: dict, kind: str) -> str:
    """The three best heads of one kind, named with their scores (Markdown: our own names and numbers only)."""
    return ", ".join(f"**{head_name(h['layer'], h['head'])}** {h['score']:.2f}" for h in s["top_heads"][kind])


def draw_scores(s: dict, *, present: bool, dark: bool) -> None:
    """The three score maps side by side (one under the other in presentation mode), each with its top heads."""
    cols = [st.container() for _ in fh.KINDS] if present else st.columns(3)
    for col, kind in zip(cols, fh.KINDS):
        col.plotly_chart(score_figure(s[kind], kind, present=present, dark=dark), key=f"lm_heads_{kind}")
        col.markdown(f"Top: {top_line(s, kind)}")
        col.caption(WHAT[kind].capitalize() + ".")


def attention_figure(weights: torch.Tensor, tokens: list[str], layer: int, head: int, what: str, *, present: bool,
                     dark: bool):
    """One head's attention map on the tokens shown."""
    return figures.heatmap(weights, tokens, tokens, title=f"{head_name(layer, head)} — {what}", present=present,
                           dark=dark)


def loss_figure(before: list[float], after: list[float], seq_len: int, offset: int, off_label: str, *, present: bool,
                dark: bool):
    """Next-token loss at each position of the repeated sequence, with every head and with the chosen heads off;
    the second copy starts at position ``offset + seq_len``."""
    x = list(range(1, len(before) + 1))
    fig = figures.lines({"all heads": before, off_label: after}, x, title="Next-token loss at each position",
                        x_title="position of the predicted token", y_title="loss (nats)", present=present, dark=dark)
    fig.add_vline(x=offset + seq_len - 0.5, line_dash="dash", annotation_text="second copy starts")
    return fig


def heads_text(heads) -> str:
    return ", ".join(head_name(layer, head) for layer, head in heads) or "none"


def encoder_note(name: str) -> None:
    st.info(f"{md(name)} is an encoder: every token sees the whole sequence, both copies at once. Previous-token and "
            "duplicate-token scores mean what they mean in a GPT (BERT-style models grow previous-token heads too). "
            "The induction score is still measured, but a head can reach “the token after the first occurrence” "
            "without copying from context (it can simply look there), so it is not evidence of an induction "
            "mechanism; and an encoder predicts no next token, so there is no in-context loss to compare or to "
            "ablate.")
