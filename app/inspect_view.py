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
from core.io.tokenizer import EOS
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
    """:func:`core.probes.masking.padding_demo` of the sentence ``ids`` and ``short_text`` in one batch; None when the
    short text is empty (it would be an [EOS] alone) or longer than the sentence."""
    ck = _model(name)
    short = masking.source_ids(ck.tokenizer, ck.model, short_text) if short_text.strip() else []
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


COMPARE_LIMIT = 32  # positions the teacher-forcing comparison decodes step by step (prefix passes grow as n²)


@bounded
def teacher_forcing(name: str, src_ids: tuple | None, target_ids: tuple, limit: int) -> dict:
    """:func:`core.probes.masking.parallel_vs_sequential` for the page: its differences and times, not its logits."""
    out = masking.parallel_vs_sequential(_model(name).model, None if src_ids is None else list(src_ids),
                                         list(target_ids), limit)
    return {k: v for k, v in out.items() if k not in ("parallel", "prefix", "cached")}


@bounded
def strict(name: str, src_ids: tuple | None, target_ids: tuple) -> dict:
    """:func:`core.probes.masking.strict_demo` (the diagonal masked too) on the page's sentence."""
    return masking.strict_demo(_model(name).model, None if src_ids is None else list(src_ids), list(target_ids))


def strict_reading(strict_hits: int, hits: int, n: int) -> str:
    """What the strict mask's count of right predictions shows against the model's own mask's, and why hiding the
    diagonal from attention does not hide a position's own token."""
    said = (f"The top prediction is the target at {strict_hits} of {n} positions with the strict mask, {hits} of {n} "
            "with the model's own")
    said += (": hiding the diagonal changes nothing here." if strict_hits == hits else
             f": hiding the diagonal costs {hits - strict_hits} here." if strict_hits < hits else
             ": here the strict mask does better.")
    return said + (" The mask hides each position's token from attention, not from the position: the residual "
                   "connection adds the position's own input to what attention returns, so the token still reaches "
                   "its output. Seeing itself is no leak either: with the shifted input, what a position holds is the "
                   "previous word, not the word it must predict.")


def teacher_forcing_section(view, res) -> None:
    """The Masking page's teacher-forcing section: the shifted decoder input above its targets, a mask that hides
    the diagonal too (row 0 all −∞), and, on request, one causal pass against n step-by-step passes."""
    kind = view.ck.model.cfg.kind
    if kind == "encoder-only":
        st.info("This model has no decoder, so there is no shifted input to show. Pick a translator (en-fr) or the "
                "language model (lm).")
        return
    tok = view.ck.tokenizer
    encdec = kind == "encoder-decoder"
    target = list(res.tgt_ids[1:]) + [EOS] if encdec else list(res.tgt_ids[1:])
    src = tuple(res.src_ids) if encdec else None
    if not target:
        st.info("Type a longer text: there is no token to predict.")
        return
    dec_in = masking.shifted_input(target)
    n = len(target)
    whose = ("your target" if (view.tgt or "").strip() else "the model's own translation") if encdec else "your text"
    st.markdown(f"In training, the decoder reads the true output ({whose}) shifted one place to the right, behind "
                "[BOS]: the position that reads [BOS] must predict the first token, the one that reads the first "
                "token must predict the second, and so on. So a position may attend to itself: it sees the word "
                "before, never the word it must predict. Some texts say the decoder \"cannot see the word itself\", "
                "others that a token attends to itself. The shift makes both true.")
    top = res.trace.logits[0, :n].float().argmax(-1).tolist()
    cells = {"decoder input (reads)": tok.display(dec_in), "target (must predict)": tok.display(target),
             "model's top prediction": tok.display(top)}
    st.dataframe([{"row": label, **{str(i): t for i, t in enumerate(toks)}} for label, toks in cells.items()],
                 hide_index=True)
    hits = sum(a == b for a, b in zip(top, target))
    st.caption(f"Columns are positions. All {n} predictions come from one forward pass; the top prediction is the "
               f"target at {hits} of {n} positions.")

    st.subheader("A stricter mask: hide the diagonal too")
    sd = strict(view.name, src, tuple(target))
    keys = tok.display(dec_in)[:8]
    head_rows = [{"head": h, **{f"{j}: {t}": f"{float(w):.3g}" for j, (t, w) in enumerate(zip(keys, row))}}
                 for h, row in enumerate(sd["row0"])]
    st.markdown("If position i could see only the positions before it, position 0 ([BOS]) would see nothing: its "
                "row of the mask is all −∞, and softmax of that row is 0/0, not a number (NaN). Query 0 in decoder "
                "layer 0 under that mask, by the formula above (first keys):")
    st.dataframe(head_rows, hide_index=True)
    nan_at = sum(sd["nan_positions"])
    if sd["kernel_nan"]:
        kernel = (f"PyTorch's fused attention, which runs this model, gives NaN there too; {nan_at} of {n} outputs "
                  "are NaN.")
    else:
        kernel = ("PyTorch's fused attention, which runs this model, returns a zero vector for such a row instead "
                  f"(largest |value| {sd['kernel_row0']:g}), so {nan_at} of {n} outputs are NaN: position 0 silently "
                  "reads nothing from the decoder.")
    st.markdown(f"{kernel} " + strict_reading(sd["hits_strict"], sd["hits"], n))

    st.subheader("One masked pass = n decoding steps")
    m = min(n, COMPARE_LIMIT)
    first = f" (the first {m} positions)" if m < n else ""
    if not st.toggle(f"Compare one pass with {m} step-by-step passes{first}: runs the model {2 * m + 2} times",
                     key="tf_compare"):
        st.caption("Off by default: the step-by-step runs take one to a few seconds on a long sentence.")
        return
    pv = teacher_forcing(view.name, src, tuple(target), COMPARE_LIMIT)
    s, n = pv["seconds"], m
    ratio = s["prefix"] / max(s["parallel"], 1e-9)
    c1, c2, c3 = st.columns(3)
    c1.metric("One causal pass", f"{1000 * s['parallel']:.1f} ms")
    c2.metric(f"{n} passes over growing prefixes", f"{1000 * s['prefix']:.1f} ms",
              help="The t-th pass reads the first t inputs, from scratch, and keeps its last position.")
    c3.metric(f"{n} one-token steps with a KV cache", f"{1000 * s['cached']:.1f} ms",
              help="How the model generates: each step feeds one token and reuses the keys and values before it.")
    st.markdown(f"Largest |logit difference| from the one pass: **{pv['max_diff_prefix']:.1e}** (prefixes), "
                f"**{pv['max_diff_cached']:.1e}** (KV cache). Under the causal mask no position reads anything after "
                "it, so one pass gives every step's result at once; the differences are float32 rounding. "
                + (f"Here the one pass was {ratio:.0f}× faster than the prefix passes." if ratio >= 1.5 else
                   "On an input this short the one pass is not much faster."))
    st.caption("Times: one run each on this server when first computed; they vary with its load.")
