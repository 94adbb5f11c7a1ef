"""Scaled dot-product attention and multi-head attention (Vaswani et al. 2017, sec. 3.2).

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k + M) V                                   (eq. 1)
    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_O,  head_i = Attention(Q W_Qi, K W_Ki, V W_Vi)

Two paths behind one function: the *explicit* path computes and returns the pre-softmax
scores and the weights (:func:`attention_maps`, what the app draws); the *fused* path calls
``torch.nn.functional.scaled_dot_product_attention`` and keeps nothing. A traced forward runs the
fused path too and leaves the maps to the Trace, which computes a layer's maps from its recorded
q and k when they are first read (the same explicit code, so the same numbers).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .dropout import dropout
from .hooks import Hooks
from .masks import causal_mask, combine
from .positional import apply_rope


@dataclass
class AttentionResult:
    """What :func:`scaled_dot_product_attention` returns: the output ``[B, H, Tq, d_v]``, plus the scores,
    the mask and the weights on the explicit path (None on the fused path)."""
    out: torch.Tensor  # [B, H, Tq, d_v]
    scores: torch.Tensor | None = None  # Q Kᵀ / √d_k, [B, H, Tq, Tk]
    mask: torch.Tensor | None = None  # the additive mask actually added (broadcastable)
    weights: torch.Tensor | None = None  # softmax(scores + bias + mask)


def scaled_dot_product_attention(q, k, v, *, mask=None, bias=None, is_causal=False,
                                 explicit=False, dropout_p=0.0) -> AttentionResult:
    """``softmax(QKᵀ/√d_k + bias + mask) V`` for ``q [B,H,Tq,d]``, ``k, v [B,G,Tk,d]`` (G divides H).

    ``mask`` is additive (0 / -inf), ``bias`` an additive real bias such as ALiBi, ``is_causal``
    adds the causal mask (aligned so the last query sees the last key, as with a KV cache).
    """
    n_heads, n_kv = q.shape[1], k.shape[1]
    # With dropout on CPU, F.scaled_dot_product_attention takes its unfused math path and draws the
    # mask with bernoulli_; the explicit path below does the same math with the cheaper mask.
    if not explicit and not (dropout_p > 0 and q.device.type == "cpu"):
        extra = combine(bias, mask)
        if is_causal and (extra is not None or q.shape[2] != k.shape[2]):
            extra = combine(extra, causal_mask(q.shape[2], k.shape[2], k.shape[2] - q.shape[2], q.device))
            is_causal = False
        if extra is not None:
            extra = extra.to(q.dtype)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=extra, dropout_p=dropout_p,
                                             is_causal=is_causal, enable_gqa=n_kv != n_heads)
        return AttentionResult(out)
    scores, mask, weights = attention_maps(q, k, mask=mask, bias=bias, is_causal=is_causal)
    if n_kv != n_heads:
        v = v.repeat_interleave(n_heads // n_kv, dim=1)
    dropped = dropout(weights, dropout_p)
    return AttentionResult(dropped @ v, scores, mask, weights)


def attention_maps(q, k, *, mask=None, bias=None, is_causal=False):
    """The maps of eq. 1 for ``q [B,H,Tq,d]``, ``k [B,G,Tk,d]``: ``(scores, mask, weights)``.

    ``scores`` = QKᵀ/√d_k, ``mask`` the additive mask actually added (the causal one folded in when
    ``is_causal``; None when nothing was masked), ``weights`` = softmax(scores + bias + mask).
    """
    n_heads, n_kv = q.shape[1], k.shape[1]
    if n_kv != n_heads:
        k = k.repeat_interleave(n_heads // n_kv, dim=1)
    # Divided in place: the same numbers as QKᵀ / √d_k without a second fresh Tq×Tk buffer.
    scores = (q @ k.transpose(-2, -1)).div_(math.sqrt(q.shape[-1]))
    if is_causal:
        mask = combine(mask, causal_mask(q.shape[2], k.shape[2], k.shape[2] - q.shape[2], q.device))
    logits = scores if bias is None else scores + bias
    if mask is not None:
        logits = logits + mask.to(logits.dtype)
    if logits is not scores and not (torch.is_grad_enabled() and logits.requires_grad):
        # Inference: the softmax overwrites the logits, which nothing keeps, instead of filling a fresh
        # Tq×Tk buffer (at T = 512 most of a fresh buffer's cost is the operating system handing over
        # its pages).
        weights = torch.softmax(logits, dim=-1, out=logits)
    else:
        weights = torch.softmax(logits, dim=-1)
    return scores, mask, weights


def full_mask(mask, is_causal: bool, batch: int, t_q: int, t_k: int, device) -> torch.Tensor:
    """The additive mask an attention applies, as one ``[batch, 1, t_q, t_k]`` float32 tensor: ``mask``
    (broadcastable, or None) plus the causal mask when ``is_causal`` (the last query sees the last key, as
    with a KV cache). What the ``{attention}.mask`` hook point carries (:mod:`core.hooks`)."""
    out = torch.zeros(batch, 1, t_q, t_k, dtype=torch.float32, device=device)
    if is_causal:
        out = out + causal_mask(t_q, t_k, t_k - t_q, device)
    return out if mask is None else out + mask


class MultiHeadAttention(nn.Module):
    """Multi-head attention with ``n_kv_heads`` key/value heads (MHA, GQA, MQA).

    The projections are packed in one matrix ``qkv.weight = [W_Q; W_K; W_V]`` (one matmul
    for self-attention); :meth:`head_weights` returns the per-head ``W_Q``, ``W_K``, ``W_V``.
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int | None = None, *,
                 bias: bool = True, dropout: float = 0.0):
        super().__init__()
        self.n_heads, self.n_kv = n_heads, n_kv_heads or n_heads
        self.d_head = d_model // n_heads
        self.qkv = nn.Linear(d_model, (self.n_heads + 2 * self.n_kv) * self.d_head, bias=bias)
        self.out = nn.Linear(n_heads * self.d_head, d_model, bias=bias)
        self.dropout = dropout

    def head_weights(self, head: int) -> dict[str, torch.Tensor]:
        """``W_Q``, ``W_K``, ``W_V`` of one head, each ``[d_model, d_head]`` (x @ W gives q, k, v)."""
        d, h, g = self.d_head, self.n_heads, self.n_kv
        kv = head // (h // g)
        w = self.qkv.weight
        return {"W_Q": w[head * d:(head + 1) * d].T,
                "W_K": w[(h + kv) * d:(h + kv + 1) * d].T,
                "W_V": w[(h + g + kv) * d:(h + g + kv + 1) * d].T,
                "W_O": self.out.weight[:, head * d:(head + 1) * d].T}

    def forward(self, x, memory=None, *, mask=None, bias=None, is_causal=False, rope=None,
                cache=None, trace=None, name=""):
        """Self-attention when ``memory`` is None, otherwise cross-attention to ``memory``.

        ``rope``: (cos, sin) for the positions of x; ``cache``: a dict holding past keys and
        values (self-attention: extended in place; cross-attention: computed once, reused).
        ``trace``: a :class:`~core.trace.Trace` or a :class:`~core.hooks.Hooks`; ``name.q``, ``.k``,
        ``.v`` (after RoPE and the cache), ``.mask`` (:func:`full_mask`, built only when a hook is registered
        there) and ``.heads`` (``[B, H, Tq, d_head]``, before W_O) are hook points, so a hook can read, switch
        off or replace a head, or change what it may look at (:mod:`core.hooks`).
        """
        hooks = Hooks.of(trace)
        b, t, _ = x.shape
        h, g, d = self.n_heads, self.n_kv, self.d_head
        if memory is None:
            q, k, v = self.qkv(x).split((h * d, g * d, g * d), dim=-1)
            k = k.view(b, t, g, d).transpose(1, 2)
            v = v.view(b, t, g, d).transpose(1, 2)
        else:
            w, bb = self.qkv.weight, self.qkv.bias
            q = F.linear(x, w[:h * d], None if bb is None else bb[:h * d])
            if cache is not None and "k" in cache:
                k, v = cache["k"], cache["v"]
            else:
                kv = F.linear(memory, w[h * d:], None if bb is None else bb[h * d:])
                k, v = (z.view(b, memory.shape[1], g, d).transpose(1, 2) for z in kv.split((g * d, g * d), -1))
                if cache is not None:
                    cache["k"], cache["v"] = k, v
        q = q.view(b, t, h, d).transpose(1, 2)
        if rope is not None:
            q, k = apply_rope(q, *rope), apply_rope(k, *rope)
        if memory is None and cache is not None:
            if "k" in cache:
                k, v = torch.cat((cache["k"], k), 2), torch.cat((cache["v"], v), 2)
            cache["k"], cache["v"] = k, v
        trace = hooks.trace
        traced = trace is not None and trace.wants(name)
        if hooks.live:
            q, k, v = (hooks.point(f"{name}.{key}", z) for key, z in (("q", q), ("k", k), ("v", v)))
            if hooks.has(f"{name}.mask"):  # built only for a hook: the one mask applied from here on
                mask = hooks.point(f"{name}.mask", full_mask(mask, is_causal, q.shape[0], q.shape[2], k.shape[2],
                                                             q.device))
                is_causal = False
        p = self.dropout if self.training else 0.0
        # A traced pass computes its output with the fused kernel like any other; the maps are computed
        # from the recorded q and k when something reads them (a page usually reads one layer). Only with
        # attention dropout do the weights that made the output need to be the ones kept.
        res = scaled_dot_product_attention(q, k, v, mask=mask, bias=bias, is_causal=is_causal,
                                           explicit=traced and p > 0, dropout_p=p)
        out = hooks.point(f"{name}.heads", res.out)
        if traced:
            if bias is not None:
                trace.record(name, bias=bias)
            if res.weights is not None:
                trace.record(name, scores=res.scores, weights=res.weights)
                if res.mask is not None:
                    trace.record(name, mask=res.mask)
            else:
                keys = ("scores", "mask", "weights") if mask is not None or is_causal else ("scores", "weights")
                trace.defer(name, keys, _maps_later(q.detach(), k.detach(), mask, bias, is_causal))
        return self.out(out.transpose(1, 2).reshape(b, t, h * d))


def _maps_later(q, k, mask, bias, is_causal):
    """What :meth:`Trace.defer` calls when a traced pass's scores, mask or weights are first read."""
    def maps():
        with torch.no_grad():
            scores, used, weights = attention_maps(q, k, mask=mask, bias=bias, is_causal=is_causal)
        return {"scores": scores, "weights": weights} | ({} if used is None else {"mask": used})
    return maps
