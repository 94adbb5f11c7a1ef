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
from core.probes import compress
from core.probes import heads as H
from core.probes import summaries
from core.variants import speculative as S
from core.io.budget import max_positions
from core.io.checkpoint import Checkpoint
from core.inference.decoding import decoder_prefix, generate, token_budget
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


@bounded(ignore=("progress",))
def _live_sparsity(name: str, progress=None) -> list:
    return compress.sparsity_curve(load_model(name), n=EVAL_N, progress=progress)


def sparsity_shown(name: str) -> tuple[list | None, bool]:
    """The held-out quality of the model pruned by weight magnitude at each of ``compress.LEVELS``: shipped
    (scripts/precompute.py), else computed here under a progress bar with a Stop button: ``(points, complete)``."""
    shipped = summaries.weights_summary(load_model(name), name, n=EVAL_N)
    if shipped is not None:
        return shipped, True
    label = f"Pruning {name}'s weights to {len(compress.LEVELS)} sparsities"
    return progress_bar.run(f"weights_sparsity_{name}", label, lambda tell: _live_sparsity(name, progress=tell))


def sparsity_reading(points: list) -> str:
    """Two sentences that read a sparsity curve: the loss at 30 % against none, and the first level where it has
    risen by more than 10 % and by more than 0.01 nats (10 % of a loss near 0 is rounding, not damage)."""
    base = points[0].loss
    at = {round(100 * p.sparsity): p for p in points}
    text = ""
    if 30 in at:
        p = at[30]
        rise = round(p.loss - base, 3) + 0.0  # + 0.0: a rise that rounds to 0 reads +0.000, not -0.000
        text = (f"At 30 % pruned the held-out loss is **{p.loss:.3f}** against {base:.3f} with every weight "
                f"({rise:+.3f} nats; token accuracy {p.acc:.1%} against {points[0].acc:.1%}). ")
    worse = next((p for p in points if p.loss > 1.1 * base and p.loss - base > 0.01), None)
    if worse is None:
        return text + "Up to the last level measured the loss stays within 10 % (or 0.01 nats) of the unpruned model's."
    return text + (f"The loss first rises by more than 10 % (and 0.01 nats) at **{round(100 * worse.sparsity)} %** "
                   f"pruned ({worse.loss:.3f}).")


@bounded
def share_table(name: str, sparsity: float):
    """``compress.share_table`` of the model (rows, columns, shares), cut where the page's levels cut."""
    levels = [round(x, 6) for x in compress.LEVELS]
    cut = _cuts(name)[levels.index(round(sparsity, 6))] if round(sparsity, 6) in levels else None
    return compress.share_table(load_model(name).model, sparsity, cut)


@bounded(spinner="Pruning the weights at ten levels and reading your text with each…")
def read_pruned(name: str, text: str) -> list[str]:
    """What the model makes of ``text`` when pruned to each of ``compress.LEVELS`` (``compress.read_with``)."""
    ck = load_model(name)
    levels = compress.pruned_levels(ck.model, compress.LEVELS, _cuts(name))
    return [compress.read_with(ck, model, text) for _, model in levels]


@bounded
def _cuts(name: str) -> list:
    """Where each sparsity level cuts this model's weights (``compress.cuts``: one sort, a few numbers)."""
    return compress.cuts(load_model(name).model, compress.LEVELS)


@bounded
def draft(name: str, n_layers: int = 1):
    return S.truncated_draft(load_model(name).model, n_layers)


@st.cache_data(max_entries=32, show_spinner="Drafting and verifying…")
def speculative(name: str, text: str, k: int, max_new: int) -> dict:
    ck = load_model(name)
    prompt = _prompt(ck, text)
    res = S.speculative_generate(ck.model, draft(name), prompt=prompt, k=k, max_new=max_new)
    plain = generate(ck.model, prompt=prompt, max_new=max_new)
    greedy = plain.ids
    cov, notices = coverage_notices(ck, text, name)
    show = ck.tokenizer.display
    steps = [{"proposed": show(s.proposed) if s.proposed else [], "accepted": s.accepted,
              "target": None if s.target_token is None else show([s.target_token])[0],
              "target_choice": show(s.target_choice) if s.target_choice else []} for s in res.steps]
    why_empty = ("" if res.ids else
                 "the model's first choice was the end of the text — a prompt that closes a sentence often closes a "
                 "paragraph in its training text; leave off the final full stop")
    return {"ids": res.ids, "greedy": greedy, "why_empty": why_empty, "text": ck.tokenizer.decode(res.ids), "steps": steps,
            "window": window_notice(ck, text, max_new, name),
            "target_passes": res.target_passes, "draft_passes": res.draft_passes, "proposed": res.proposed,
            "accepted": res.accepted, "rate": res.acceptance_rate,
            "greedy_passes": len(plain.steps),  # one pass per token chosen, the end of text included
            "notices": notices, "outside": coverage.outside_label(ck) if cov and cov["unknown_words"] else ""}


def timing(name: str, text: str, k: int, max_new: int, repeats: int = 5) -> dict:
    ck = load_model(name)
    prompt = _prompt(ck, text)
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


SAMPLE_N = 500  # draws of each sampler in the first-token check: a fraction of a second on the lm


def _prompt(ck, text: str) -> list[int]:
    """The prompt's ids as the speculative panel reads them: at most the model's positions less two ([BOS] and
    room for one new token)."""
    return ck.tokenizer.encode(text)[: max_positions(ck.model) - 2]


def window_notice(ck, text: str, max_new: int, name: str) -> str:
    """What the model's window leaves of the request, in numbers: "" when the whole prompt is read and all
    ``max_new`` tokens fit; else how many of its positions the prompt takes (and where a long one was cut) and how
    many new tokens fit."""
    n_tokens, prompt = len(ck.tokenizer.encode(text)), _prompt(ck, text)
    used = len(decoder_prefix(ck.model, None, prompt))
    fit = token_budget(ck.model, used, max_new)
    if fit >= max_new:
        return ""
    read = (f"[BOS] and the first {len(prompt)} of its {n_tokens} tokens" if len(prompt) < n_tokens else
            "[BOS] included")
    return (f"The prompt uses {used} of {name}'s {max_positions(ck.model)} positions ({read}): only {fit} new "
            f"token{'s' if fit != 1 else ''} fit{'s' if fit == 1 else ''}, not the {max_new} asked for. Shorten the "
            "prompt to let it write more.")


@st.cache_data(max_entries=32, show_spinner="Drafting, sampling and verifying…")
def speculative_sampled(name: str, text: str, k: int, max_new: int, temperature: float, seed: int) -> dict:
    """:func:`core.variants.speculative.speculative_sample` of ``name`` with its one-layer draft, for the page:
    every round's proposals (display strings) with q, p, min(1, p/q), u and the verdict, and one table row per
    proposal."""
    ck = load_model(name)
    prompt = _prompt(ck, text)
    res = S.speculative_sample(ck.model, draft(name), prompt=prompt, k=k, max_new=max_new, temperature=temperature,
                               seed=seed)
    show = ck.tokenizer.display
    steps, rows = [], []
    for i, s in enumerate(res.steps):
        shown = show(s.proposed) if s.proposed else []
        verdicts = ["kept" if j < s.accepted else "rejected" if j < len(s.uniforms) else "not checked"
                    for j in range(len(s.proposed))]
        steps.append({"proposed": shown, "accept_prob": s.accept_prob, "verdicts": verdicts, "accepted": s.accepted,
                      "target": None if s.target_token is None else show([s.target_token])[0],
                      "resampled": s.resampled})
        for j, tok in enumerate(shown):
            rows.append({"pass": i + 1, "position": j + 1, "proposal": tok, "q(x̃) draft": s.draft_prob[j],
                         "p(x̃) target": s.target_prob[j], "min(1, p/q)": s.accept_prob[j],
                         "u": s.uniforms[j] if j < len(s.uniforms) else None, "verdict": verdicts[j]})
    why_empty = ("" if res.ids else
                 "the first token drawn was the end of the text; try another seed, or leave off a final full stop")
    cov, notices = coverage_notices(ck, text, name)
    return {"ids": res.ids, "text": ck.tokenizer.decode(res.ids), "steps": steps, "rows": rows,
            "why_empty": why_empty, "target_passes": res.target_passes, "draft_passes": res.draft_passes,
            "proposed": res.proposed, "accepted": res.accepted, "rate": res.acceptance_rate,
            "resampled": sum(s.resampled for s in res.steps), "notices": notices,
            "plain_passes": plain_passes(ck, prompt, len(res.ids), max_new),
            "window": window_notice(ck, text, max_new, name),
            "outside": coverage.outside_label(ck) if cov and cov["unknown_words"] else ""}


def plain_passes(ck, prompt: list[int], n_tokens: int, max_new: int) -> int:
    """Forward passes plain decoding needs to write ``n_tokens`` tokens after ``prompt``: one a token, and one
    more for the end of text when it stopped before its budget (a run cut by ``max_new`` or the window has none)."""
    budget = token_budget(ck.model, len(decoder_prefix(ck.model, None, prompt)), max_new)
    return n_tokens + (n_tokens < budget)


@st.cache_data(max_entries=32, show_spinner="Sampling the first token 500 times each way…")
def first_token_check(name: str, text: str, temperature: float, seed: int, top: int = 8) -> dict:
    """:func:`core.variants.speculative.first_token_check` (:data:`SAMPLE_N` draws each) of ``name`` and its draft
    on ``text``: shares of the ``top`` most likely first tokens (and of all the others together) under the target's
    exact ``p``, plain target sampling and speculative sampling, and the total-variation distances."""
    ck = load_model(name)
    c = S.first_token_check(ck.model, draft(name), prompt=_prompt(ck, text), n=SAMPLE_N, temperature=temperature,
                            seed=seed)
    order = c["p"].argsort(descending=True)[:top].tolist()

    def shares(v) -> list[float]:
        v = v.double() / v.double().sum()
        return [float(v[i]) for i in order] + [float(1 - v[order].sum())]
    return {"tokens": ck.tokenizer.display(order) + ["all others"], "p": shares(c["p"]), "plain": shares(c["plain"]),
            "spec": shares(c["spec"]), "accepted": c["accepted"], "n": c["n"],
            **{key: v for key, v in c.items() if key.startswith("tv_")}}


def sample_step_html(step: dict) -> str:
    """One speculative-sampling round: each proposal with its min(1, p/q); kept green, rejected red struck
    through, never checked (after a rejection) grey; then the target's token boxed (residual draw or bonus)."""
    colours = {"kept": "background:#1e7b1e;color:white", "not checked": "background:#8a8a8a;color:white",
               "rejected": "background:#b22222;color:white;text-decoration:line-through"}
    parts = [f"<span style='{colours[v]};padding:1px 4px;border-radius:4px;margin:1px'>{md(tok)}"
             f"<sub style='margin-left:3px'>{a:.2f}</sub></span>"
             for tok, a, v in zip(step["proposed"], step["accept_prob"], step["verdicts"])]
    if step["target"] is not None:
        how = "residual" if step["resampled"] else "bonus"
        parts.append(f"→ <span style='border:2px solid #1f77b4;font-weight:bold;padding:1px 4px;border-radius:4px'>"
                     f"{md(step['target'])}</span> <small>({how})</small>")
    return " ".join(parts)
