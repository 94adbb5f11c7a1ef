"""How far each head looks: attention spans measured on a trained model, and each head cut to its own span.

Sukhbaatar et al. (2019), *Adaptive attention span*: many heads of a trained model attend only to a few nearby
tokens, so each head can be given its own span, learned during training through a soft mask
``m_z(x) = clamp((R + z − x)/R, 0, 1)`` on the distance x. Nothing here trains. It measures, on a trained model,
what that paper's observation rests on, and tries the consequence:

- **a query's span** (:func:`query_spans`): the smallest radius r such that the query's attention weights on keys
  with |i − j| ≤ r sum to at least ``mass`` (0.9 by default);
- **a head's span** (:func:`head_spans`): the ``quantile`` (0.9) of its queries' spans over a held-out batch —
  cut there, nine queries in ten keep at least 90 % of their attention;
- **the cut** (:func:`span_hooks`): every self-attention head restricted to keys within its own span (a mask hook,
  :func:`core.hooks.mask`), against one radius for every head that computes as many query–key pairs
  (:func:`span_experiment`).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import hooks as K
from ..io.tokenizer import PAD
from ..masks import band
from ..probes import heads as H


def radius_mass(weights: torch.Tensor) -> torch.Tensor:
    """``[..., Tq, Tk]`` attention weights (queries and keys at the same positions) → ``[..., Tq, Tk]``: entry r is
    the weight query i puts on keys with ``|i − j| ≤ r``."""
    t_q, t_k = weights.shape[-2:]
    dist = (torch.arange(t_q)[:, None] - torch.arange(t_k)[None, :]).abs().to(weights.device)
    bins = torch.zeros_like(weights).scatter_add_(-1, dist.expand_as(weights), weights)
    return bins.cumsum(-1)


def query_spans(weights: torch.Tensor, mass: float = 0.9) -> torch.Tensor:
    """Per query ``[..., Tq]`` (int64), the smallest radius r whose keys ``|i − j| ≤ r`` hold ``mass`` of its
    attention (float rounding forgiven by 1e-6)."""
    return (radius_mass(weights) < mass - 1e-6).sum(-1)


def self_attentions(model) -> list[str]:
    """The model's self-attention names (``encoder.0.self_attn``, …); cross-attention has no distance."""
    return [n for n in model.attention_names() if n.endswith(".self_attn")]


def _valid_queries(batch, name: str) -> torch.Tensor:
    """``[B, T]`` True at the positions of real tokens of the stack ``name`` reads (PAD excluded)."""
    ids = batch.tgt_in if name.startswith("decoder") or batch.src is None else batch.src
    return ids.ne(PAD)


@torch.no_grad()
def head_spans(model, batch, mass: float = 0.9, quantile: float = 0.9) -> dict[str, torch.Tensor]:
    """Per self-attention, ``[H]`` (int64): the ``quantile`` of :func:`query_spans` over the batch's real queries,
    one traced teacher-forced pass."""
    model.eval()
    b = batch.to(model.device)
    out = model(b.src, b.tgt_in, trace=True) if b.src is not None else model(b.tgt_in, trace=True)
    spans = {}
    for name in self_attentions(model):
        per_query = query_spans(out.trace[f"{name}.weights"].float(), mass)  # [B, H, T]
        keep = _valid_queries(b, name)
        rows = per_query.permute(1, 0, 2)[:, keep]  # [H, real queries]
        spans[name] = torch.quantile(rows.float(), quantile, dim=1, interpolation="higher").long().cpu()
    return spans


def span_hooks(spans: dict[str, torch.Tensor]) -> dict[str, list]:
    """Mask hooks (``model.hooks(...)``) that let head h of each attention in ``spans`` see only keys with
    ``|i − j| ≤ spans[name][h]``, on top of the mask it already applies (causal included)."""
    def cut(radii: torch.Tensor):
        def fn(m, _name):
            t_q, t_k = m.shape[-2:]
            allowed = torch.stack([band(t_q, int(r), t_k, t_k - t_q, m.device) for r in radii])  # [H, Tq, Tk]
            return m + torch.zeros(allowed.shape, device=m.device).masked_fill_(~allowed, float("-inf"))[None]
        return fn
    return K.merge(*(K.mask(name, cut(r)) for name, r in spans.items()))


def pairs(t: int, radius: int, causal: bool) -> int:
    """Query–key pairs a T-token self-attention computes with keys ``|i − j| ≤ radius`` (and j ≤ i if causal)."""
    allowed = band(t, radius)
    return int((allowed.tril() if causal else allowed).sum())


@dataclass
class SpanResult:
    """:func:`span_experiment`: the spans, the held-out (loss, token accuracy) with every head whole, with each
    head cut to its span, and with one radius for all (``uniform``, chosen to compute as many pairs); ``*_share``:
    the query–key pairs each computes, as a share of full attention's (at the batch's padded ``length``)."""
    spans: dict
    mass: float
    quantile: float
    full: tuple[float, float]
    cut: tuple[float, float]
    cut_share: float
    uniform_radius: int
    uniform: tuple[float, float]
    uniform_share: float
    length: int


def span_experiment(ck, n: int = 32, mass: float = 0.9, quantile: float = 0.9) -> SpanResult:
    """Measure every self-attention head's span on the model's held-out batch (:func:`heads.eval_batch`), then
    the batch's loss with each head cut to its span, and with one radius for every head that computes about as
    many query–key pairs."""
    model = ck.model
    batch, _ = H.eval_batch(ck, n=n)
    spans = head_spans(model, batch, mass, quantile)
    length = {nm: batch.tgt_in.shape[1] if nm.startswith("decoder") or batch.src is None else batch.src.shape[1]
              for nm in spans}

    def count(name, radius):
        return pairs(length[name], radius, name.startswith("decoder"))

    def uniform_pairs(radius):
        return sum(count(nm, radius) * len(r) for nm, r in spans.items())
    full_pairs = uniform_pairs(max(length.values()))
    cut_pairs = sum(count(nm, int(x)) for nm, r in spans.items() for x in r)
    radius = min(range(max(length.values())), key=lambda w: (abs(uniform_pairs(w) - cut_pairs), w))
    full = H.batch_loss(model, batch)
    with model.hooks(span_hooks(spans)):
        cut = H.batch_loss(model, batch)
    with model.hooks(span_hooks({nm: torch.full_like(r, radius) for nm, r in spans.items()})):
        uniform = H.batch_loss(model, batch)
    return SpanResult(spans, mass, quantile, full, cut, cut_pairs / full_pairs, radius, uniform,
                      uniform_pairs(radius) / full_pairs, max(length.values()))
