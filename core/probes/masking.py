"""Masks applied to real scores, and the model re-run with its masks or heads changed (pure PyTorch), behind the
Masking page, the Lesson and the Coreference page's ablations.

An additive mask on one head's scores with the checks a learner wants (exact zeros, rows that sum to 1, fully masked
rows), padded batches, and :func:`patched`: the model with an *extra* mask, without its causal mask, or with heads
switched off, through the model's one hook mechanism (:meth:`core.model.Transformer.hooks`; masks go through
the ``{attention}.mask`` hook points), never editing :mod:`core.model`.
"""
from __future__ import annotations

import time
from contextlib import contextmanager

import torch
import torch.nn.functional as F

from ..attention import full_mask
from ..hooks import ablate, merge
from ..hooks import mask as mask_hooks
from ..inference.decoding import Incremental, greedy_batch
from ..inference.runner import forward_ids
from ..io.budget import max_positions
from ..io.tokenizer import BOS, EOS
from ..masks import additive, padding_mask
from ..model import Transformer
from ..trace import Trace


def allowed_of(mask: torch.Tensor | None, t_q: int, t_k: int) -> torch.Tensor:
    """Boolean ``[t_q, t_k]`` view of an additive mask (None = everything allowed)."""
    if mask is None:
        return torch.ones(t_q, t_k, dtype=torch.bool)
    m = mask.float()
    while m.dim() > 2:
        m = m[0]
    return torch.isfinite(torch.broadcast_to(m, (t_q, t_k)))


def busiest_key(weights: torch.Tensor, allowed: torch.Tensor) -> int | None:
    """The key column of ``weights [Tq, Tk]`` that receives the most attention in total and can be blocked for every
    query without leaving a query with no key at all (a fully masked row is NaN); None if there is none."""
    ok = [j for j in range(weights.shape[-1]) if bool((allowed & ~_column(allowed, j)).any(-1).all())]
    return max(ok, key=lambda j: float(weights[:, j].sum())) if ok else None


def _column(allowed: torch.Tensor, j: int) -> torch.Tensor:
    only = torch.zeros_like(allowed)
    only[:, j] = True
    return only


def model_mask(trace: Trace, name: str) -> torch.Tensor:
    """The additive ``[Tq, Tk]`` mask the model itself added in attention ``name`` (zeros if none)."""
    w = trace[f"{name}.weights"]
    t_q, t_k = w.shape[-2:]
    return additive(allowed_of(trace[f"{name}.mask"] if f"{name}.mask" in trace else None, t_q, t_k))


def apply_mask(scores: torch.Tensor, mask: torch.Tensor, bias: torch.Tensor | None = None,
               extra: torch.Tensor | None = None) -> dict:
    """``softmax(scores + bias + mask)`` for one head ``[Tq, Tk]``, with the checks a learner wants to see.

    ``extra`` is a further additive mask added to ``mask`` (the combined mask is returned as ``mask``).
    ``masked_max`` is the largest weight that landed on a masked entry (0.0 exactly), ``row_masked_max``
    the same per query row (None where nothing is masked or the whole row is);
    ``row_sums`` the sum of every row; ``empty_rows`` the queries with every key masked (their
    softmax is 0/0 = NaN)."""
    scores = scores.float()
    mask = torch.broadcast_to(mask.float(), scores.shape)
    if extra is not None:
        mask = mask + extra.float()
    logits = scores + (0.0 if bias is None else bias.float()) + mask
    weights = torch.softmax(logits, dim=-1)
    allowed = torch.isfinite(mask)
    empty = ~allowed.any(-1)
    hidden = ~allowed & ~empty[:, None]
    masked_max = float(weights[hidden].max()) if bool(hidden.any()) else 0.0
    row_masked_max = [float(w[h].max()) if bool(h.any()) else None for w, h in zip(weights, hidden)]
    return {"scores": scores, "mask": mask, "logits": logits, "weights": weights, "row_sums": weights.sum(-1),
            "masked_max": masked_max, "row_masked_max": row_masked_max,
            "empty_rows": empty.nonzero().flatten().tolist(), "allowed": allowed}


def source_ids(tokenizer, model, text: str) -> list[int]:
    """Token ids of a sentence exactly as :func:`core.inference.runner.run` feeds the first stack (``model``: the model, or
    its config)."""
    ids = tokenizer.encode(text)
    cfg = getattr(model, "cfg", model)
    n = max_positions(model) if hasattr(model, "cfg") else cfg.max_len
    if cfg.kind == "encoder-decoder":
        return ids[: n - 1] + [EOS]
    if cfg.kind == "decoder-only":
        return [BOS] + ids[: n - 1]
    frame = getattr(tokenizer, "frame", list)  # BERT: [CLS] ids [SEP]; ours: the ids unchanged
    return frame(ids[: n - len(frame([]))])


@torch.no_grad()
def padding_demo(model: Transformer, long_ids: list[int], short_ids: list[int]) -> dict:
    """A batch of two sentences, the shorter one padded with [PAD], and the padding mask for it.

    Runs the first stack on the batch and on the short sentence alone: ``pad_weight`` is the largest
    attention weight any real token of the short sentence gives to a [PAD] key (0 exactly) and
    ``max_diff`` how far its outputs in the batch are from the outputs alone."""
    cfg = model.cfg
    t, n = max(len(long_ids), len(short_ids)), len(short_ids)
    rows = [list(long_ids) + [cfg.pad_id] * (t - len(long_ids)), list(short_ids) + [cfg.pad_id] * (t - n)]
    device = model.device
    batch = torch.tensor(rows, device=device)
    is_pad = batch.eq(cfg.pad_id)
    stack = "encoder" if model.encoder is not None else "decoder"

    def run(ids):
        tr = Trace(layers={0})
        h = model.encode(ids, trace=tr)[0] if stack == "encoder" else model.decode(ids, trace=tr)
        return h, tr

    hidden, tr = run(batch)
    alone, _ = run(batch[1:, :n])
    weights = tr[f"{stack}.0.self_attn.weights"]  # [B, H, T, T]
    pad_weight = float(weights[1, :, :n, n:].max()) if n < t else 0.0
    return {"ids": rows, "is_pad": is_pad.cpu(), "mask": padding_mask(is_pad).cpu(), "stack": stack,
            "square": padding_mask(is_pad).expand(len(rows), 1, t, t)[:, 0].cpu(),
            "weights": weights.cpu(), "pad_weight": pad_weight, "short_len": n,
            "max_diff": float((hidden[1, :n] - alone[0]).abs().max())}


def attention_module(model: Transformer, name: str):
    """The :class:`~core.attention.MultiHeadAttention` behind a trace name like ``decoder.1.self_attn``."""
    try:
        stack, i, sub = name.split(".")
        return getattr(getattr(model, stack).layers[int(i)], sub)
    except (ValueError, AttributeError, IndexError, TypeError):
        raise ValueError(f"no attention {name!r}; choose from {', '.join(model.attention_names())}") from None


@contextmanager
def patched(model: Transformer, masks: dict | None = None, uncausal=(), heads_off: dict | None = None):
    """Change chosen attentions' masks or switch heads off, for the calling thread only, then restore them.

    ``masks``: ``{"encoder.0.self_attn": additive [T, T]}`` added to the mask the model applies
    (self-attention only; during cached decoding the rows of the current positions are used);
    ``uncausal``: self-attention names whose causal mask is dropped (the decoder may look ahead);
    ``heads_off``: ``{name: [head, ...]}`` multiplies those heads' outputs by 0 (as ``forward(ablate=)`` does).
    All three are hooks of the model's one hook mechanism (:func:`core.hooks.mask`, :func:`core.hooks.ablate`
    under :meth:`Transformer.hooks`): the masks go through the ``{attention}.mask`` hook points. Calls from
    other threads (other users of a shared model) pass through untouched."""
    masks, heads_off, uncausal = dict(masks or {}), dict(heads_off or {}), set(uncausal)
    names = set(masks) | uncausal
    valid = set(model.attention_names())
    for name in names | set(heads_off):
        if name not in valid:
            raise ValueError(f"no attention {name!r}; choose from {', '.join(sorted(valid))}")
        if (name in masks or name in uncausal) and not name.endswith("self_attn"):
            raise ValueError(f"{name}: extra masks and causal changes apply to self-attention only")
    # the decoder's self-attentions are the causal ones; their mask without it is the model's window (if any)
    fns = [mask_hooks(name, _without_causal(model)) for name in sorted(uncausal) if name.startswith("decoder.")]
    fns += [mask_hooks(name, extra) for name, extra in masks.items()]
    with model.hooks(merge(*fns, ablate(heads_off))):
        yield model


def _without_causal(model: Transformer):
    """A ``….mask`` hook for a decoder self-attention: the mask it would apply with no causal mask (its window)."""
    def fn(m, _name):
        t_q, t_k = m.shape[-2:]
        win = model.self_attention_terms(t_q, t_k - t_q, m.device)[0]
        return full_mask(win, False, m.shape[0], t_q, t_k, m.device)
    return fn


@torch.no_grad()
def run_patched(model: Transformer, src_ids, tgt_ids=None, **patch):
    """:func:`forward_ids` inside :func:`patched` (``masks``, ``uncausal``, ``heads_off``)."""
    with patched(model, **patch):
        out = forward_ids(model, src_ids, tgt_ids)
    out.trace.to("cpu")
    return out


def predictions(logits: torch.Tensor, k: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-k token ids and probabilities at every position of ``logits [.., T, V]`` (batch 0)."""
    probs = logits.float().softmax(-1)
    if probs.dim() == 3:
        probs = probs[0]
    p, i = probs.topk(min(k, probs.shape[-1]), dim=-1)
    return i, p


@torch.no_grad()
def cheat_demo(model: Transformer, src_ids: list[int], tgt_ids: list[int]) -> dict:
    """Decoder self-attention with and without its causal mask, the true target as decoder input.

    For each position i < T-1 the next true token is ``tgt_ids[i+1]``. Reports both runs' top
    predictions and the probability of the true next token, how often the top prediction *is*
    the next token, and how much attention weight went to future positions (per layer and head)."""
    names = [n for n in model.attention_names() if n.startswith("decoder.") and n.endswith("self_attn")]
    dec_in = tgt_ids if model.cfg.kind == "encoder-decoder" else src_ids
    normal = forward_ids(model, src_ids, tgt_ids)
    cheat = run_patched(model, src_ids, tgt_ids, uncausal=names)
    t = len(dec_in)
    nxt = torch.tensor(dec_in[1:], dtype=torch.long)
    out = {"names": names, "next_ids": nxt}
    future = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
    for key, res in (("normal", normal), ("cheat", cheat)):
        probs = res.logits[0].float().softmax(-1).cpu()
        top_p, top_i = probs.max(-1)
        p_next = probs[:-1].gather(-1, nxt[:, None])[:, 0]
        weights = torch.stack([res.trace[f"{n}.weights"][0].cpu() for n in names])  # [L, H, T, T]
        out[key] = {"top_ids": top_i, "top_p": top_p, "p_next": p_next,
                    "hits": float((top_i[:-1] == nxt).float().mean()) if t > 1 else 0.0,
                    "future_mass": (weights * future).sum(-1), "weights": weights, "logits": res.logits[0].cpu()}
    return out


@torch.no_grad()
def translate_ablated(model: Transformer, src_ids: list[int], heads_off: dict) -> list[int]:
    """Greedy translation of ``src_ids`` with heads switched off everywhere (encoder, decoder and cross):
    :func:`~core.inference.decoding.greedy_batch` under ``model.hooks(ablate(heads_off))``."""
    src = torch.tensor([src_ids], device=model.device)
    with model.hooks(ablate(heads_off)):
        return greedy_batch(model, src, max_new=max_positions(model) - 1)[0]


# ---------------------------------------------------------------- teacher forcing: one masked pass = n decoding steps
def shifted_input(target_ids: list[int]) -> list[int]:
    """The decoder input that teaches ``target_ids`` y1 … yn: the same tokens shifted one place right,
    ``[BOS] y1 … y(n−1)``, so position i reads y(i) (counting BOS as y0) and must predict y(i+1)."""
    return [BOS] + list(target_ids[:-1])


@torch.no_grad()
def parallel_vs_sequential(model: Transformer, src_ids: list[int] | None, target_ids: list[int],
                           limit: int | None = None) -> dict:
    """Teacher forcing: one causal pass over the shifted input against decoding it position by position.

    ``src_ids``: the encoder's ids (None for a decoder-only model); ``target_ids``: y1 … yn, what the decoder must
    produce (a translation and EOS, or a language model's text). Three ways to get the logits of every position:
    ``parallel``, one pass over ``[BOS] y1 … y(n−1)`` under the causal mask (how a model trains); ``prefix``, n passes
    from scratch, the t-th over the first t inputs only, keeping its last row; ``cached``, n steps of one token each
    with a KV cache (:class:`~core.inference.decoding.Incremental`, how a model generates). Returns the three
    ``[n, vocab]`` logits, the largest |difference| of each sequential way from the one pass, and the seconds each
    way took (one run each, after one warm-up pass; the model runs without a trace). ``limit``: compare the first
    ``limit`` positions only (the prefix passes grow with the square of the length)."""
    if not target_ids:
        raise ValueError("nothing to predict: the target is empty")
    encdec = model.cfg.kind == "encoder-decoder"
    if encdec and not src_ids:
        raise ValueError("nothing to translate: the source is empty")
    if model.cfg.kind == "encoder-only":
        raise ValueError("an encoder-only model has no decoder to teach")
    model.eval()
    target_ids = list(target_ids)[:limit]
    dec_in = shifted_input(target_ids)
    n, dev = len(dec_in), model.device
    tgt = torch.tensor([dec_in], device=dev)
    src = torch.tensor([src_ids], device=dev) if encdec else None

    def last_rows(ids):
        return (model(src, ids) if encdec else model(ids)).logits[0].float()

    def parallel():
        return last_rows(tgt)

    def prefix():
        return torch.stack([last_rows(tgt[:, :t])[-1] for t in range(1, n + 1)])

    def cached():
        inc = Incremental(model, src)
        return torch.stack([inc.feed(tgt[:, t:t + 1])[0] for t in range(n)])

    parallel()  # warm-up: the first call of a process pays one-off costs that are not the method's
    out, seconds = {}, {}
    for key, fn in (("parallel", parallel), ("prefix", prefix), ("cached", cached)):
        t0 = time.perf_counter()
        out[key] = fn().cpu()
        seconds[key] = time.perf_counter() - t0
    return {"dec_in": dec_in, "targets": list(target_ids), **out, "seconds": seconds,
            "max_diff_prefix": float((out["prefix"] - out["parallel"]).abs().max()),
            "max_diff_cached": float((out["cached"] - out["parallel"]).abs().max()),
            "top_ids": out["parallel"].argmax(-1).tolist()}


def strict_causal_mask(t: int) -> torch.Tensor:
    """Additive ``[t, t]`` mask that hides the diagonal too: query i may look at keys j < i only. Row 0 is all −∞."""
    return additive(torch.ones(t, t, dtype=torch.bool).tril(-1))


@torch.no_grad()
def strict_demo(model: Transformer, src_ids: list[int] | None, target_ids: list[int]) -> dict:
    """What a decoder mask that hides each position from itself (keys j < i only) does to a real model.

    The diagonal is masked on top of the model's causal mask in every decoder self-attention and the model re-run
    on the shifted input of ``target_ids`` (:func:`shifted_input`). Returns ``row0``: decoder layer 0's weights of
    query 0 by eq. 1, per head ``[H, t]`` (NaN: every key of that row is −∞ and its softmax is 0/0); ``kernel_row0``:
    the largest |value| of that row's output from ``F.scaled_dot_product_attention`` (the fused kernel the model
    runs on) on the same q, k, v and mask, and ``kernel_nan`` whether it is NaN (recent PyTorch returns zeros there);
    ``nan_positions``: whether each position's logits hold a NaN; ``hits`` / ``hits_strict``: positions whose top
    prediction is their target, with the model's own mask and with the strict one."""
    names = [n for n in model.attention_names() if n.startswith("decoder.") and n.endswith("self_attn")]
    dec_in = shifted_input(target_ids)
    t = len(dec_in)
    diagonal = additive(~torch.eye(t, dtype=torch.bool)).to(model.device)  # with the causal mask: j < i only
    src = src_ids if model.cfg.kind == "encoder-decoder" else None
    normal = forward_ids(model, src, dec_in)
    out = run_patched(model, src, dec_in, masks={n: diagonal for n in names})
    first = names[0]
    q, k, v = (out.trace[f"{first}.{x}"].float() for x in ("q", "k", "v"))
    mask = out.trace[f"{first}.mask"].float()
    row = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.broadcast_to(mask, (*q.shape[:3], t)))[0, :, 0]
    logits = out.logits[0].float().cpu()
    want = torch.tensor(list(target_ids))

    def hits(lg):
        return int((lg.argmax(-1) == want).sum())
    return {"names": names, "row0": out.trace[f"{first}.weights"][0, :, 0].float().cpu(),
            "kernel_row0": float(row.abs().max()), "kernel_nan": bool(torch.isnan(row).any()),
            "nan_positions": torch.isnan(logits).any(-1).tolist(), "hits": hits(normal.logits[0].float().cpu()),
            "hits_strict": hits(logits), "n": t}
