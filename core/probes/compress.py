"""What a trained model can do without: weights pruned by magnitude, and heads cut to their own attention span.

**Weights** (Gordon et al. 2020: "30 % of BERT's weights can be pruned by their magnitude without a significant
loss in performance"). The weights considered are the matrices of the attention and feed-forward layers (every
``nn.Linear`` inside ``encoder.layers`` / ``decoder.layers``); embeddings, the output layer, norms and biases stay
whole. Pruning to sparsity ``s`` zeroes the ``round(s · N)`` of those ``N`` weights with the smallest absolute value,
one ranking over all matrices together (global magnitude pruning), ties broken by position. Nothing here trains: the
pruned model is the original with weights set to 0, which is what "without retraining" means in the figures.

**Spans** (Sukhbaatar et al. 2019, *Adaptive attention span*: many heads of a trained model attend only to a few
nearby tokens, so each head can be given its own span, learned in training through a soft mask
``m_z(x) = clamp((R + z − x)/R, 0, 1)`` on the distance x). Nothing here trains either. It measures what that
paper's observation rests on, and tries the consequence:

- **a query's span** (:func:`query_spans`): the smallest radius r such that the query's attention weights on keys
  with |i − j| ≤ r sum to at least ``mass`` (0.9 by default);
- **a head's span** (:func:`head_spans`): the ``quantile`` (0.9) of its queries' spans over a held-out batch —
  cut there, nine queries in ten keep at least 90 % of their attention;
- **the cut** (:func:`span_hooks`): every self-attention head restricted to keys within its own span (a mask hook,
  :func:`core.hooks.mask`), against one radius for every head that computes as many query–key pairs
  (:func:`span_experiment`).
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field

import torch
from torch import nn

from .. import hooks as K
from ..inference import mlm
from ..inference.decoding import generate
from ..io.budget import max_positions
from ..io.tokenizer import EOS, MASK, PAD
from ..masks import band
from . import heads as H

LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def prunable(model: nn.Module) -> list[tuple[str, torch.Tensor]]:
    """``(name, weight)`` of every weight matrix magnitude pruning may zero, in ``named_modules`` order."""
    return [(f"{name}.weight", m.weight) for name, m in model.named_modules()
            if isinstance(m, nn.Linear) and ".layers." in f".{name}"]


def cuts(model: nn.Module, levels) -> list[tuple[float, int]]:
    """Where each of ``levels`` cuts, from one sort of all :func:`prunable` magnitudes: ``(t, k)`` per level —
    every weight with |w| < t goes, and the first ``k`` (in :func:`prunable` order, then position) with |w| = t,
    so exactly ``round(s · N)`` go. A few numbers per level: a page keeps them per model and prunes again
    without sorting."""
    out = []
    for s in levels:
        if not 0.0 <= s <= 1.0:
            raise ValueError(f"sparsity must be between 0 and 1, not {s}")
    ordered = torch.sort(torch.cat([w.detach().abs().flatten().float().cpu() for _, w in prunable(model)])).values
    for s in levels:
        n_off = round(s * ordered.numel())
        if n_off == 0:
            out.append((0.0, 0))
            continue
        t = ordered[n_off - 1]
        out.append((float(t), n_off - int(torch.searchsorted(ordered, t, right=False))))
    return out


def _masks(weights, cut: tuple[float, int]) -> dict[str, torch.Tensor]:
    """Boolean masks (True = kept) of one :func:`cuts` entry over ``weights``."""
    t, k = cut
    masks, ties_before = {}, 0
    for name, w in weights:
        mag = w.detach().abs().float()
        off = mag < t
        if k:
            tie = (mag == t).flatten()
            first = tie & (tie.cumsum(0) + ties_before <= k)
            ties_before += int(tie.sum())
            off |= first.view_as(off)
        masks[name] = ~off
    return masks


def magnitude_masks(model: nn.Module, sparsity: float) -> dict[str, torch.Tensor]:
    """Boolean masks (True = kept) over :func:`prunable`'s weights that remove the ``round(sparsity · N)``
    smallest magnitudes of all of them together (ties in :func:`prunable` order, then position)."""
    return _masks(prunable(model), cuts(model, [sparsity])[0])


def pruned_levels(model: nn.Module, levels, cut_at: list | None = None):
    """``(sparsity, pruned copy)`` for each of ``levels``: one copy of ``model`` (eval mode) re-pruned from the
    original weights at each level (``cut_at``: :func:`cuts` of these levels, when already known). Use each copy
    before taking the next."""
    levels = list(levels)
    weights = prunable(model)
    cut_at = cuts(model, levels) if cut_at is None else cut_at
    out = copy.deepcopy(model).eval()
    mine = dict(prunable(out))
    for s, cut in zip(levels, cut_at):
        masks = _masks(weights, cut)
        with torch.no_grad():
            for name, w in weights:
                mine[name].copy_(w).masked_fill_(~masks[name].to(w.device), 0.0)
        yield s, out


def pruned(model: nn.Module, sparsity: float) -> nn.Module:
    """A copy of ``model`` (eval mode) with :func:`magnitude_masks`' weights set to zero; ``model`` is unchanged."""
    return next(pruned_levels(model, [sparsity]))[1]


def share_pruned(model: nn.Module, sparsity: float, cut: tuple[float, int] | None = None) -> dict[str, float]:
    """Per weight matrix, the share of its entries the global ranking zeroes at ``sparsity`` (``cut``: its
    :func:`cuts` entry, when already known)."""
    masks = magnitude_masks(model, sparsity) if cut is None else _masks(prunable(model), cut)
    return {name: 1.0 - float(m.float().mean()) for name, m in masks.items()}


def share_table(model: nn.Module, sparsity: float,
                cut: tuple[float, int] | None = None) -> tuple[list[str], list[str], torch.Tensor]:
    """:func:`share_pruned` as a table: rows are layers (``encoder 0``, ``decoder 1``, …), columns the matrices
    of a layer (``self_attn.qkv``, ``ffn.w1``, …); a cell a layer does not have is NaN."""
    cells: dict[tuple[str, str], float] = {}
    for name, share in share_pruned(model, sparsity, cut).items():
        stack, _, layer, *rest = name.removesuffix(".weight").split(".")
        cells[(f"{stack} {layer}", ".".join(rest))] = share
    rows = list(dict.fromkeys(r for r, _ in cells))
    cols = list(dict.fromkeys(c for _, c in cells))
    table = torch.full((len(rows), len(cols)), float("nan"))
    for (r, c), share in cells.items():
        table[rows.index(r), cols.index(c)] = share
    return rows, cols, table


@dataclass
class SparsityPoint:
    """The model pruned to ``sparsity``: held-out loss and token accuracy (teacher forcing), and for
    translators greedy exact match and pronoun accuracy."""
    sparsity: float
    loss: float
    acc: float
    metrics: dict = field(default_factory=dict)


def sparsity_curve(ck, levels=LEVELS, n: int = 32, progress=None) -> list[SparsityPoint]:
    """:class:`SparsityPoint` at each of ``levels`` on the model's held-out batch (:func:`heads.eval_batch`,
    ``n`` items, the batch the head-pruning curve uses). ``progress(k, total, points so far)`` after each level."""
    batch, pairs = H.eval_batch(ck, n=n)
    translation = bool(pairs) and hasattr(pairs[0], "tgt_pronoun")
    points = []
    for k, (s, model) in enumerate(pruned_levels(ck.model, levels)):
        loss, acc = H.batch_loss(model, batch)
        metrics = H.translation_quality(ck, pairs, model=model) if translation else {}
        points.append(SparsityPoint(float(s), loss, acc, metrics))
        if progress:
            progress(k + 1, len(levels), list(points))  # what is done so far, for a Stop click
    return points


@torch.no_grad()
def read_with(ck, model: nn.Module, text: str, max_new: int = 12) -> str:
    """What ``model`` (``ck``'s model or a pruned copy) makes of ``text``: a translator's greedy translation, a
    language model's greedy continuation (``max_new`` tokens), a masked LM's input with every ``[MASK]`` filled
    (its most probable word at each, all at once)."""
    tok, cfg = ck.tokenizer, model.cfg
    limit = max_positions(model)
    if cfg.kind == "encoder-decoder":
        src = tok.encode(text)[:limit - 1] + [EOS]  # a broken model may babble: at most twice the source, plus 8
        return tok.decode(generate(model, src=src, max_new=min(limit - 1, 2 * len(src) + 8)).ids)
    if cfg.kind == "decoder-only":
        prompt = tok.encode(text)[:limit - 2]
        return tok.decode(generate(model, prompt=prompt, max_new=max_new).ids)
    if ck.meta.get("task") != "mlm":
        raise ValueError("this encoder-only model has no masked-word head of ours to read its output from")
    ids = tok.frame(mlm.encode_masked(tok, text)[:limit - len(tok.frame([]))])
    if MASK not in ids:
        raise ValueError("type [MASK] where a word should be filled in, e.g. “The dog [MASK] the ball.”")
    return tok.decode(mlm.fill(dataclasses.replace(ck, model=model), ids, top_k=1).best())


# ------------------------------------------------------------------ attention spans
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
