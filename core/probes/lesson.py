"""The arithmetic behind the guided lesson, redone from a Trace so a class can check every step.

Each function recomputes one stage of the Transformer by hand from the tensors the model itself
recorded, and reports how far the hand computation is from the model's own numbers (it should be
float rounding). Nothing here draws; :mod:`app.lesson` turns the results into figures.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..model import Transformer
from ..trace import Trace


def head_by_hand(trace: Trace, name: str, head: int) -> dict:
    """One head of attention ``name`` (e.g. ``encoder.0.self_attn``), eq. 1 of Vaswani et al. step by step.

    Returns ``Q [Tq, d_k]``, ``K``, ``V [Tk, d_k]``, ``QK = Q Kᵀ``, ``scaled = QK / √d_k``, the additive
    ``mask`` (and ALiBi ``bias``) the model used, ``weights = softmax(scaled + bias + mask)``,
    ``out = weights V``, and the largest differences from the traced weights and head output.
    """
    q = trace[f"{name}.q"][0, head].float()
    n_heads, n_kv = trace[f"{name}.q"].shape[1], trace[f"{name}.k"].shape[1]
    kv = head // (n_heads // n_kv)  # grouped-query attention: heads share key/value heads
    k, v = trace[f"{name}.k"][0, kv].float(), trace[f"{name}.v"][0, kv].float()
    qk = q @ k.T
    scaled = qk / math.sqrt(q.shape[-1])
    shape = scaled.shape
    mask = trace[f"{name}.mask"].float() if f"{name}.mask" in trace else torch.zeros(shape)
    mask = torch.broadcast_to(mask, (1, n_heads, *shape) if mask.dim() == 4 else shape)
    mask = mask[0, head] if mask.dim() == 4 else mask
    bias = trace[f"{name}.bias"][0, head].float() if f"{name}.bias" in trace else torch.zeros(shape)
    weights = torch.softmax(scaled + bias + mask, dim=-1)
    out = weights @ v
    return {"Q": q, "K": k, "V": v, "QK": qk, "scaled": scaled, "mask": mask, "bias": bias, "weights": weights,
            "out": out, "d_k": q.shape[-1],
            "weights_error": float((weights - trace[f"{name}.weights"][0, head].float()).abs().max()),
            "out_error": float((out - trace[f"{name}.heads"][0, head].float()).abs().max())}


def merge_heads(model: Transformer, trace: Trace, name: str) -> dict:
    """MultiHead(Q, K, V) = Concat(head_1, …, head_h) W_O (sec. 3.2.2), recomputed from the traced heads.

    Returns the concatenation ``[T, h·d_k]``, the projected output ``[T, d_model]`` and its largest
    difference from the sublayer output the model recorded."""
    stack, layer, which = name.split(".")
    module = getattr(getattr(model, stack).layers[int(layer)], which)
    heads = trace[f"{name}.heads"][0].float()  # [H, T, d_k]
    concat = heads.transpose(0, 1).reshape(heads.shape[1], -1)
    w = module.out.weight.detach().float().cpu()
    b = None if module.out.bias is None else module.out.bias.detach().float().cpu()
    out = F.linear(concat, w, b)
    recorded = trace[f"{stack}.{layer}.{'cross_out' if which == 'cross_attn' else 'attn_out'}"][0].float()
    return {"concat": concat, "out": out, "error": float((out - recorded).abs().max()), "W_O": w}


def head_profile(weights: torch.Tensor) -> dict:
    """How the heads of one layer differ: per head ``[H]`` the mean entropy of its rows (nats; low = sharp),
    the mean distance |i − j| it looks over (weighted), and the share of weight on the diagonal."""
    w = weights.float().clamp_min(0)  # [H, Tq, Tk]
    entropy = -(w * torch.log(w.clamp_min(1e-12))).sum(-1).mean(-1)
    tq, tk = w.shape[-2:]
    dist = (torch.arange(tq)[:, None] - torch.arange(tk)[None, :]).abs().float()
    distance = (w * dist).sum(-1).mean(-1)
    n = min(tq, tk)
    diagonal = w[:, torch.arange(n), torch.arange(n)].sum(-1) / tq
    return {"entropy": entropy, "distance": distance, "diagonal": diagonal}


def add_and_norm(model: Transformer, trace: Trace, stack: str, layer: int) -> dict:
    """The first residual + LayerNorm of a layer by hand: ``LayerNorm(x + Sublayer(x))`` (post-LN, sec. 3.1)
    or ``x + Sublayer(LayerNorm(x))`` (pre-LN). Returns the stream before, what the sublayer added, the
    result, and the largest difference from the traced stream."""
    block = getattr(model, stack).layers[layer]
    before = (trace[f"{stack}.{layer - 1}.resid_post"] if layer else trace[f"{stack}.embed.out"])[0].float()
    added = trace[f"{stack}.{layer}.attn_out"][0].float()
    norm = block.attn_res.norm
    total = before + added
    if block.attn_res.pre:
        after = total
    else:
        mu = total.mean(-1, keepdim=True)
        var = total.var(-1, unbiased=False, keepdim=True)
        after = (total - mu) / torch.sqrt(var + norm.eps) * norm.weight.detach().float().cpu() \
            + norm.bias.detach().float().cpu()
    recorded = trace[f"{stack}.{layer}.resid_mid"][0].float()
    return {"before": before, "added": added, "after": after, "pre_ln": block.attn_res.pre,
            "error": float((after - recorded).abs().max())}


def next_token_distribution(trace: Trace, k: int = 10) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Linear + softmax at the last position: (top-k probabilities, their ids, the total probability)."""
    probs = trace.logits[0, -1].float().softmax(-1)
    p, i = probs.topk(min(k, probs.numel()))
    return p, i, float(probs.sum())
