"""Cached calls into :mod:`core.probes.positions` / :mod:`~core.probes.masking` and small widgets for the Positional, Masking and Layers pages.

Results are cached per model and token ids (or text), so moving a slider does not re-run a model.
Masks travel as tuples of tuples of booleans, which are hashable cache keys.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st
import torch

from app.cache import bounded
from core.hooks import as_ablation
from core.masks import additive
from core.probes import masking, positions


def _model(name: str):
    from app.shell import load_model
    return load_model(name)


@st.cache_data(show_spinner=False, ttl=600)
def positional_kinds() -> dict:
    return positions.positional_kinds()


@bounded
def permutation(name: str, ids: tuple, seed: int) -> dict:
    return positions.permutation_test(_model(name).model, list(ids), positions.shuffle_order(len(ids), seed))


@bounded
def shifted(name: str, ids: tuple, shift: int) -> dict:
    return positions.shift_test(_model(name).model, list(ids), shift)


@bounded
def padding(name: str, ids: tuple, short_text: str) -> dict | None:
    ck = _model(name)
    short = masking.source_ids(ck.tokenizer, ck.model, short_text)
    if not short or len(short) > len(ids):
        return None
    return masking.padding_demo(ck.model, list(ids), short)


@bounded
def masked_run(name: str, src_ids: tuple, tgt_ids: tuple, attn_names: tuple, allowed: tuple):
    """The model re-run with an extra additive mask (from ``allowed``) in the given self-attentions."""
    extra = additive(torch.tensor(allowed, dtype=torch.bool))
    return masking.run_patched(_model(name).model, list(src_ids), list(tgt_ids), masks={n: extra for n in attn_names})


@bounded
def cheat(name: str, src_ids: tuple, tgt_ids: tuple) -> dict:
    return masking.cheat_demo(_model(name).model, list(src_ids), list(tgt_ids))


@bounded
def translation_ablated(name: str, src_ids: tuple, ablate: tuple) -> str:
    ck = _model(name)
    return ck.tokenizer.decode(masking.translate_ablated(ck.model, list(src_ids), as_ablation(ablate)))


def as_key(allowed: torch.Tensor) -> tuple:
    return tuple(tuple(bool(v) for v in row) for row in allowed.tolist())


def mask_editor(q_tokens, k_tokens, default: torch.Tensor, key: str, block=()) -> torch.Tensor:
    """A grid of checkboxes (rows = queries, columns = keys; ticked = may look) plus a quick
    "block these keys" picker, which starts on the keys ``block``. Returns the allowed pattern as a bool
    ``[Tq, Tk]`` tensor."""
    cols = [f"k{j}" for j in range(len(k_tokens))]  # stable names: edits survive a new sentence of the same length
    heads = [f"{j}: {t}" for j, t in enumerate(k_tokens)]
    rows = [f"{i}: {t}" for i, t in enumerate(q_tokens)]
    table = {c: [bool(default[i, j]) for i in range(len(rows))] for j, c in enumerate(cols)}
    frame = pd.DataFrame(table, index=rows)
    blocked = st.multiselect("Block these keys for every query", range(len(cols)), format_func=lambda j: heads[j],
                             default=list(block), key=f"{key}_block")
    edited = st.data_editor(frame, key=f"{key}_grid", width="stretch",
                            column_config={c: st.column_config.CheckboxColumn(h, width="small") for c, h in zip(cols, heads)})
    allowed = torch.tensor([[bool(edited[c].iloc[i]) for c in cols] for i in range(len(rows))], dtype=torch.bool)
    if blocked:
        allowed[:, list(blocked)] = False
    return allowed


def prediction_rows(tok, in_tokens, logits_a, logits_b, next_ids=None, names=("before", "after")) -> list[dict]:
    """One table row per position: its input token, both runs' top prediction and probability
    (and, with ``next_ids``, both runs' probability of the true next token)."""
    ia, pa = masking.predictions(logits_a)
    ib, pb = masking.predictions(logits_b)
    probs_a, probs_b = logits_a.float().softmax(-1), logits_b.float().softmax(-1)
    if probs_a.dim() == 3:
        probs_a, probs_b = probs_a[0], probs_b[0]
    out = []
    for i, t in enumerate(in_tokens):
        row = {"position": i, "input": t}
        if next_ids is not None:
            nxt = int(next_ids[i]) if i < len(next_ids) else None
            row["true next"] = tok.display([nxt])[0] if nxt is not None else "—"
        row[f"{names[0]}: top"] = tok.display([int(ia[i, 0])])[0]
        row[f"{names[0]}: p"] = float(pa[i, 0])
        row[f"{names[1]}: top"] = tok.display([int(ib[i, 0])])[0]
        row[f"{names[1]}: p"] = float(pb[i, 0])
        if next_ids is not None and i < len(next_ids):
            row[f"{names[0]}: p(true next)"] = float(probs_a[i, int(next_ids[i])])
            row[f"{names[1]}: p(true next)"] = float(probs_b[i, int(next_ids[i])])
        out.append(row)
    return out
