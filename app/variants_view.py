"""Cached computations for the "Heads, GQA & speculative decoding" page (pages/variants.py)."""
from __future__ import annotations

import time

import streamlit as st
import torch

from app import progress as progress_bar
from app.cache import bounded
from app.shell import load_model
from app.text import md
from core.inference import coverage
from core.probes import heads as H
from core.probes import summaries
from core.variants import speculative as S
from core.io.budget import max_positions
from core.io.checkpoint import Checkpoint
from core.inference.decoding import generate
from core.inference.runner import coverage_notices, run

EVAL_N = summaries.EVAL_N  # evaluation sentences / windows: small enough for a page, large enough to rank heads


@bounded(ignore=("progress",))
def _live_importance(name: str, progress=None) -> dict:
    return summaries.compute_heads(load_model(name), n=EVAL_N, progress=progress)


def importance(name: str, progress=None) -> dict:
    """Importance ranking and least-important-first pruning curve of a model (translation: + exact match): the
    summary shipped beside the model when it matches the weights (scripts/precompute.py), else computed here."""
    return summaries.heads_summary(load_model(name), name, n=EVAL_N) or _live_importance(name, progress=progress)


def importance_shown(name: str) -> tuple[dict | None, bool]:
    """:func:`importance` under a progress bar with a Stop button when it must be computed: ``(result, complete)``
    (a stopped ranking is not shown: it needs every head)."""
    return progress_bar.run(f"heads_importance_{name}", f"Switching every head of {name} off in turn",
                            lambda tell: importance(name, progress=tell))


def source(name: str) -> str | None:
    """Where the shipped head summary was read from and the command that made it (None: computed here)."""
    ck = load_model(name)
    return summaries.source(ck, name) if summaries.heads_summary(ck, name, n=EVAL_N) is not None else None


def gqa_table(cfg) -> list[dict]:
    rows = []
    mha = H.kv_savings(cfg, cfg.n_heads)
    for g in dict.fromkeys([cfg.n_heads, max(1, cfg.n_heads // 2), 1]):
        if cfg.n_heads % g:
            continue
        s = H.kv_savings(cfg, g)
        rows.append({"variant": s["kind"], "n_kv_heads": g, "query heads per K/V head": s["queries_per_kv"],
                     "parameters": s["parameters"], "parameters saved": mha["parameters"] - s["parameters"],
                     "KV cache bytes / token (fp32)": s["kv_bytes_per_token"],
                     "cross-attn KV bytes / source token": s["cross_kv_bytes_per_source_token"],
                     "KV cache vs MHA": f"{s['kv_cache_share']:.0%}"})
    return rows


@bounded
def gqa_model(name: str, g: int) -> Checkpoint:
    ck = load_model(name)
    if ck.model.cfg.kv_heads != ck.model.cfg.n_heads or g == ck.model.cfg.n_heads:
        return ck
    return Checkpoint(H.to_gqa(ck.model, g), ck.tokenizer, dict(ck.meta) | {"name": name}, None,
                      coverage.known_words(ck))  # the converted model read the same training text


@bounded
def gqa_run(name: str, g: int, text: str, tgt: str | None):
    return run(gqa_model(name, g), text, tgt)


@st.cache_data(max_entries=8, show_spinner=False)
def _live_gqa_loss(name: str, g: int) -> tuple[float, float]:
    ck = load_model(name)
    batch, _ = H.eval_batch(ck, n=EVAL_N)
    return H.batch_loss(gqa_model(name, g).model, batch)


def gqa_loss(name: str, g: int) -> tuple[float, float]:
    """Held-out (loss, token accuracy) after conversion to ``g`` key/value heads: shipped, else computed here."""
    return summaries.gqa_loss(load_model(name), name, g, n=EVAL_N) or _live_gqa_loss(name, g)


@bounded
def draft(name: str, n_layers: int = 1):
    return S.truncated_draft(load_model(name).model, n_layers)


@st.cache_data(max_entries=32, show_spinner="Drafting and verifying…")
def speculative(name: str, text: str, k: int, max_new: int) -> dict:
    ck = load_model(name)
    prompt = ck.tokenizer.encode(text)[: max_positions(ck.model) - 2]
    res = S.speculative_generate(ck.model, draft(name), prompt=prompt, k=k, max_new=max_new)
    greedy = generate(ck.model, prompt=prompt, max_new=max_new).ids
    cov, notices = coverage_notices(ck, text, name)
    show = ck.tokenizer.display
    steps = [{"proposed": show(s.proposed) if s.proposed else [], "accepted": s.accepted,
              "target": None if s.target_token is None else show([s.target_token])[0],
              "target_choice": show(s.target_choice) if s.target_choice else []} for s in res.steps]
    why_empty = ("" if res.ids else
                 f"the prompt already fills the model's window of {max_positions(ck.model)} positions"
                 if len(prompt) >= max_positions(ck.model) - 2 else
                 "the model's first choice was the end of the text — a prompt that closes a sentence often closes a "
                 "paragraph in its training text; leave off the final full stop")
    return {"ids": res.ids, "greedy": greedy, "why_empty": why_empty, "text": ck.tokenizer.decode(res.ids), "steps": steps,
            "target_passes": res.target_passes, "draft_passes": res.draft_passes, "proposed": res.proposed,
            "accepted": res.accepted, "rate": res.acceptance_rate, "greedy_passes": len(greedy) + 1,
            "notices": notices, "outside": coverage.outside_label(ck) if cov and cov["unknown_words"] else ""}


def timing(name: str, text: str, k: int, max_new: int, repeats: int = 5) -> dict:
    ck = load_model(name)
    prompt = ck.tokenizer.encode(text)[: max_positions(ck.model) - 2]
    t = time.perf_counter()
    out = S.compare_timing(ck.model, draft(name), [prompt], k=k, max_new=max_new, repeats=repeats)
    out["total_s"] = time.perf_counter() - t
    out["threads"] = torch.get_num_threads()
    return out


def step_html(step: dict) -> str:
    """One speculative step: accepted proposals green, rejected red struck through, the target's token bold."""
    def span(tok, style):
        return f"<span style='{style};padding:1px 4px;border-radius:4px;margin:1px'>{md(tok)}</span>"
    parts = []
    for i, tok in enumerate(step["proposed"]):
        if i < step["accepted"]:
            parts.append(span(tok, "background:#1e7b1e;color:white"))
        else:
            parts.append(span(tok, "background:#b22222;color:white;text-decoration:line-through"))
    if step["target"] is not None:
        parts.append("→ " + span(step["target"], "border:2px solid #1f77b4;font-weight:bold"))
    return " ".join(parts)
