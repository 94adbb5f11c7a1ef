"""Speculative decoding with greedy verification (Leviathan et al. 2023; Chen et al. 2023).

A cheap *draft* model proposes ``k`` tokens one by one; the *target* model scores all of them in
ONE forward pass (its KV cache holds the accepted prefix). The longest prefix of proposals that
equals the target's own greedy choice is accepted, then the target's token at the first
disagreement (or, if all ``k`` agree, its next token) is appended for free. Every token that is
kept is the target's argmax given the tokens before it, so the output is exactly
``core.inference.decoding.generate(target, method="greedy")``'s — only the number of sequential target
passes changes (one per step instead of one per token).

The draft used by the app is *self-speculative*: :func:`truncated_draft` keeps the target's
embeddings, first decoder layer(s), final norm and output head (no training needed).

:func:`speculative_sample` is the stochastic version (speculative *sampling*): a proposal ``x̃ ~ q`` is kept with
probability ``min(1, p(x̃)/q(x̃))`` and the first rejected one is replaced by a draw from ``norm(max(0, p − q))``, so
every token is distributed as plain sampling from the target at the same temperature (:func:`output_distribution`
is that distribution computed from ``p`` and ``q``; :func:`first_token_check` measures it on a real model).
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import torch

from ..inference.decoding import token_budget, decoder_prefix, forbid
from ..io.tokenizer import EOS
from ..model import Transformer


def truncated_draft(model: Transformer, n_layers: int = 1) -> Transformer:
    """The target cut to its first ``n_layers`` decoder layers, sharing its weights' values
    (embeddings, those layers, final norm, head; an encoder-decoder keeps the whole encoder)."""
    if not 1 <= n_layers <= model.cfg.n_decoder_layers:
        raise ValueError(f"n_layers must be in 1..{model.cfg.n_decoder_layers}")
    draft = Transformer(dataclasses.replace(model.cfg, n_decoder_layers=n_layers))
    state = {k: v for k, v in model.state_dict().items()
             if not k.startswith("decoder.layers.") or int(k.split(".")[2]) < n_layers}
    draft.load_state_dict(state)
    draft.position_limit = getattr(model, "position_limit", None)  # reads no more than the model (core.io.budget)
    return draft.to(model.device).eval()


class _Cached:
    """A model with a KV cache that can be rolled back; ``n`` tokens of ``ids`` are cached."""

    def __init__(self, model: Transformer, src: torch.Tensor | None):
        self.model, self.n, self.caches = model, 0, model.new_caches()
        self.memory = self.pad = None
        if model.cfg.kind == "encoder-decoder":
            self.memory, self.pad = model.encode(src)
        self.passes = 0

    def feed(self, ids: list[int]) -> torch.Tensor:
        """Append ``ids``; forbidden-masked logits ``[len(ids), vocab]`` after each of them."""
        dev = self.model.device
        h = self.model.decode(torch.tensor([ids], device=dev), self.memory, self.pad, start=self.n, caches=self.caches)
        self.n += len(ids)
        self.passes += 1
        return forbid(self.model.project(h[0]).float())

    def rollback(self, n: int) -> None:
        for c in self.caches:
            c = c.get("self", c)
            if "k" in c:
                c["k"], c["v"] = c["k"][:, :, :n], c["v"][:, :, :n]
        self.n = n


def _argmax(logits: torch.Tensor) -> list[int]:
    """Greedy choice per row, computed as ``generate`` does (argmax of the softmax)."""
    return logits.softmax(-1).argmax(-1).tolist()


@dataclass
class SpecStep:
    """One round of speculative decoding: the draft's proposed tokens, how many the target accepted, the
    target's own next token, and its greedy choice at each proposed position."""
    proposed: list[int]  # the draft's tokens
    accepted: int  # how many of them the target agreed with (a prefix)
    target_token: int | None  # the target's own token appended after them (None: budget reached)
    target_choice: list[int] = field(default_factory=list)  # target's greedy token at each proposed position


@dataclass
class SpecResult:
    """What :func:`speculative_generate` returns: the generated ids (the same as greedy decoding), every round,
    and how many forward passes the target and the draft made."""
    ids: list[int]  # generated ids, without BOS / EOS (== greedy)
    steps: list[SpecStep]
    target_passes: int
    draft_passes: int

    @property
    def proposed(self) -> int:
        return sum(len(s.proposed) for s in self.steps)

    @property
    def accepted(self) -> int:
        return sum(s.accepted for s in self.steps)

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / max(1, self.proposed)


@torch.no_grad()
def speculative_generate(target: Transformer, draft: Transformer, src: list[int] | None = None,
                         prompt: list[int] | None = None, *, k: int = 4, max_new: int = 64) -> SpecResult:
    """Greedy decoding of ``target`` accelerated by ``draft`` proposals (same vocabulary); see module doc."""
    if k < 1:
        raise ValueError("k must be >= 1")
    if draft.cfg.vocab_size != target.cfg.vocab_size or draft.cfg.kind != target.cfg.kind:
        raise ValueError("the draft must be the same kind of model with the same vocabulary as the target")
    target.eval()
    draft.eval()
    ids = decoder_prefix(target, src, prompt)
    n_prefix = len(ids)
    budget = min(token_budget(target, n_prefix, max_new), token_budget(draft, n_prefix, max_new))
    dev = target.device
    src_t = torch.tensor([src], device=dev) if target.cfg.kind == "encoder-decoder" else None
    tgt, drf = _Cached(target, src_t), _Cached(draft, None if src_t is None else src_t.to(
        draft.device))
    steps = []
    while len(ids) - n_prefix < budget:
        room = budget - (len(ids) - n_prefix)
        proposed: list[int] = []
        for _ in range(min(k, room)):  # draft: k sequential cheap passes
            tok = _argmax(drf.feed((ids + proposed)[drf.n:])[-1:])[0]
            proposed.append(tok)
            if tok == EOS:
                break
        choice = _argmax(tgt.feed((ids + proposed)[tgt.n:]))  # target: one pass; row j predicts after proposed[:j]
        choice = choice[-(len(proposed) + 1):]
        a = 0
        while a < len(proposed) and proposed[a] == choice[a]:
            a += 1
        accepted = proposed[:a]
        extra = choice[a] if len(ids) - n_prefix + a < budget else None
        steps.append(SpecStep(proposed, a, extra, choice[:len(proposed)]))
        new = accepted + ([] if extra is None else [extra])
        if EOS in new:
            ids += new[:new.index(EOS)]
            break
        base = len(ids)
        ids += new
        tgt.rollback(base + a)  # keep the prefix and the accepted proposals; the target's own token is fed next
        drf.rollback(min(drf.n, base + a))
    return SpecResult(ids[n_prefix:], steps, tgt.passes, drf.passes)


def compare_timing(target: Transformer, draft: Transformer, prompts: list[list[int]], *, k: int = 4,
                   max_new: int = 48, repeats: int = 5) -> dict:
    """Wall time of plain greedy (``generate``) vs speculative decoding, alternated A B A B; medians."""
    from statistics import median

    from ..inference.decoding import generate
    greedy_t, spec_t = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for p in prompts:
            generate(target, prompt=p, max_new=max_new)
        t1 = time.perf_counter()
        for p in prompts:
            speculative_generate(target, draft, prompt=p, k=k, max_new=max_new)
        t2 = time.perf_counter()
        greedy_t.append(t1 - t0)
        spec_t.append(t2 - t1)
    g, s = median(greedy_t), median(spec_t)
    return {"greedy_s": g, "speculative_s": s, "speedup": g / s, "repeats": repeats, "k": k,
            "greedy_range": (min(greedy_t), max(greedy_t)), "speculative_range": (min(spec_t), max(spec_t))}


# ------------------------------------------------------------ speculative SAMPLING (Leviathan et al. 2023, sec. 2.3)
def acceptance_probs(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """``min(1, p(x) / q(x))`` for every token ``x`` (``p``, ``q``: the target's and the draft's distributions over
    the same vocabulary): the probability that a proposal ``x`` drawn from ``q`` is kept. A token the draft never
    proposes (``q(x) = 0``) gets 1; it is never drawn, so its value does not matter."""
    return torch.where(q > 0, (p / q.clamp(min=torch.finfo(q.dtype).tiny)).clamp(max=1.0), torch.ones_like(p))


def residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """``norm(max(0, p − q))``: what a rejected proposal is replaced by. Its mass is exactly the probability of a
    rejection, so kept proposals plus replacements are distributed as ``p``. Where ``p ≤ q`` everywhere (``p = q``:
    nothing is ever rejected) it is ``p`` itself."""
    r = (p - q).clamp(min=0)
    s = r.sum()
    return r / s if s > 0 else p


def output_distribution(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """The distribution of one speculative-sampling position, computed from ``p`` and ``q``: proposal ``x`` drawn
    from ``q`` and kept with probability :func:`acceptance_probs`, else a draw from :func:`residual`.
    Equals ``p`` (the theorem; tests/core/test_speculative.py checks it for random ``p``, ``q``)."""
    kept = q * acceptance_probs(p, q)
    return kept + (1 - kept.sum()).clamp(min=0) * residual(p, q)


def _probs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Rows of ``softmax(logits / T)`` on the CPU in float32, as ``generate(method="sample")`` draws from."""
    return (logits.cpu().float() / temperature).softmax(-1)


def _draw(probs: torch.Tensor, gen: torch.Generator) -> int:
    return int(torch.multinomial(probs, 1, generator=gen))


def _verify(p: torch.Tensor, q: torch.Tensor, x: int, gen: torch.Generator) -> tuple[bool, float, int | None]:
    """One proposal ``x ~ q`` checked against ``p``: ``(kept, u, replacement)``; ``u ~ U[0, 1)`` is kept when
    ``u < min(1, p(x) / q(x))``; a rejected ``x`` is replaced by a draw from :func:`residual` (computed in float64)."""
    p64, q64 = p.double(), q.double()
    u = float(torch.rand((), generator=gen, dtype=torch.float64))
    if u < float(acceptance_probs(p64[x:x + 1], q64[x:x + 1])[0]):
        return True, u, None
    return False, u, _draw(residual(p64, q64), gen)


@dataclass
class SampleStep:
    """One round of speculative sampling: the draft's proposals with ``q(x̃)`` and the target's ``p(x̃)`` (both at
    temperature T), ``min(1, p/q)`` for each, the uniform draw of each proposal checked, how many were kept (a
    prefix), and the target's token after them: drawn from the residual at the first rejection (``resampled``), a
    bonus draw from ``p`` when every proposal was kept, None when the budget was reached or a kept EOS ended the
    text."""
    proposed: list[int]
    draft_prob: list[float]  # q(x̃) for each proposal
    target_prob: list[float]  # p(x̃) for each proposal
    accept_prob: list[float]  # min(1, p(x̃) / q(x̃)) for each proposal (also those after a rejection: never checked)
    uniforms: list[float]  # u of each proposal checked (kept iff u < accept_prob)
    accepted: int
    target_token: int | None
    resampled: bool = False  # True: target_token replaced a rejected proposal; False: a bonus token (or None)


@dataclass
class SampleResult(SpecResult):
    """What :func:`speculative_sample` returns: :class:`SpecResult`'s fields with :class:`SampleStep` rounds, and
    the temperature and seed used."""
    temperature: float = 1.0
    seed: int | None = None


def _generator(seed: int | None, generator: torch.Generator | None) -> torch.Generator:
    if generator is not None:
        return generator
    return torch.Generator().manual_seed(0 if seed is None else int(seed))


def _eval(*models: Transformer) -> None:
    """Evaluation mode (no dropout); skipped where already set (``eval()`` walks every module: a fifth of a tiny
    model's sampling round)."""
    for m in models:
        if m.training:
            m.eval()


def _check(target: Transformer, draft: Transformer, k: int, temperature: float) -> None:
    if k < 1:
        raise ValueError("k must be >= 1")
    if not temperature > 0:
        raise ValueError("temperature must be > 0")
    if draft.cfg.vocab_size != target.cfg.vocab_size or draft.cfg.kind != target.cfg.kind:
        raise ValueError("the draft must be the same kind of model with the same vocabulary as the target")


@torch.no_grad()
def speculative_sample(target: Transformer, draft: Transformer, src: list[int] | None = None,
                       prompt: list[int] | None = None, *, k: int = 4, max_new: int = 64, temperature: float = 1.0,
                       seed: int | None = 0, generator: torch.Generator | None = None) -> SampleResult:
    """Sampling from ``target`` at ``temperature`` accelerated by ``draft`` (Leviathan et al. 2023; Chen et al.
    2023). Each round the draft draws up to ``k`` tokens ``x̃ ~ q`` one by one; the target computes ``p`` at all of
    them in ONE pass; proposal ``j`` is kept with probability ``min(1, p(x̃)/q(x̃))`` (the first rejection ends the
    round and is replaced by a draw from ``norm(max(0, p − q))``); when all are kept a bonus token is drawn from
    ``p``. Each generated token is then distributed exactly as plain sampling from the target would draw it
    (``generate(method="sample", temperature=T)``), whatever the draft. Deterministic for a ``seed`` (or a
    ``generator``, used as it is): the draws are made in the order proposals, uniforms, replacement / bonus."""
    _check(target, draft, k, temperature)
    _eval(target, draft)
    gen = _generator(seed, generator)
    ids = decoder_prefix(target, src, prompt)
    n_prefix = len(ids)
    budget = min(token_budget(target, n_prefix, max_new), token_budget(draft, n_prefix, max_new))
    src_t = torch.tensor([src], device=target.device) if target.cfg.kind == "encoder-decoder" else None
    tgt, drf = _Cached(target, src_t), _Cached(draft, None if src_t is None else src_t.to(draft.device))
    steps = []
    while len(ids) - n_prefix < budget:
        room = budget - (len(ids) - n_prefix)
        proposed, qs = [], []
        for _ in range(min(k, room)):  # draft: sequential cheap passes, each drawing x̃ ~ q
            q = _probs(drf.feed((ids + proposed)[drf.n:])[-1], temperature)
            proposed.append(_draw(q, gen))
            qs.append(q)
            if proposed[-1] == EOS:
                break
        ps = _probs(tgt.feed((ids + proposed)[tgt.n:])[-(len(proposed) + 1):], temperature)  # row j: after x̃[:j]
        a, us, extra, resampled = 0, [], None, False
        for j, x in enumerate(proposed):
            kept, u, replacement = _verify(ps[j], qs[j], x, gen)
            us.append(u)
            if not kept:
                extra, resampled = replacement, True
                break
            a += 1
        ended = a > 0 and proposed[a - 1] == EOS  # the text ends with a kept EOS: nothing comes after it
        if not resampled and not ended and len(ids) - n_prefix + a < budget:
            extra = _draw(ps[a], gen)  # every proposal kept: a bonus token from p
        steps.append(SampleStep(
            proposed, [float(qs[j][x]) for j, x in enumerate(proposed)],
            [float(ps[j][x]) for j, x in enumerate(proposed)],
            [float(acceptance_probs(ps[j][x:x + 1].double(), qs[j][x:x + 1].double())[0])
             for j, x in enumerate(proposed)], us, a, extra, resampled))
        new = proposed[:a] + ([] if extra is None else [extra])
        if EOS in new:
            ids += new[:new.index(EOS)]
            break
        base = len(ids)
        ids += new
        tgt.rollback(base + a)
        drf.rollback(min(drf.n, base + a))
    return SampleResult(ids[n_prefix:], steps, tgt.passes, drf.passes, temperature=temperature, seed=seed)


def total_variation(a: torch.Tensor, b: torch.Tensor) -> float:
    """``½ Σ |a − b|`` between two distributions (or normalised count vectors) over the same vocabulary."""
    a, b = a.double(), b.double()
    return 0.5 * float((a / a.sum() - b / b.sum()).abs().sum())


@torch.no_grad()
def first_token_check(target: Transformer, draft: Transformer, src: list[int] | None = None,
                      prompt: list[int] | None = None, *, n: int = 500, temperature: float = 1.0,
                      seed: int = 0) -> dict:
    """Is speculative sampling's first token distributed as the target's? The target's ``p`` and the draft's ``q``
    at the first generated position (one pass each), then ``n`` draws of: plain target sampling (as
    ``generate(method="sample")``), speculative sampling's first token — run ``i`` makes exactly the draws of
    ``speculative_sample(..., max_new=1, seed=seed + i)`` — and the draft alone (no verification). Returns ``p``,
    ``q``, the three count vectors ``[vocab]``, a second plain sample (``plain2``: the distance two honest samples
    of ``n`` are apart by chance) and the total-variation distances."""
    _check(target, draft, 1, temperature)
    _eval(target, draft)
    ids = decoder_prefix(target, src, prompt)
    if not token_budget(target, len(ids), 1) or not token_budget(draft, len(ids), 1):
        raise ValueError("the prompt already fills the model's positions: no first token to draw")
    src_t = torch.tensor([src], device=target.device) if target.cfg.kind == "encoder-decoder" else None
    p = _probs(_Cached(target, src_t).feed(ids)[-1], temperature)
    q = _probs(_Cached(draft, None if src_t is None else src_t.to(draft.device)).feed(ids)[-1], temperature)
    vocab = p.numel()
    gen = torch.Generator().manual_seed(int(seed))
    plain = torch.bincount(torch.multinomial(p, n, replacement=True, generator=gen), minlength=vocab)
    plain2 = torch.bincount(torch.multinomial(p, n, replacement=True, generator=gen), minlength=vocab)
    drafted = torch.bincount(torch.multinomial(q, n, replacement=True, generator=gen), minlength=vocab)
    spec = torch.zeros(vocab, dtype=torch.long)
    accepted = 0
    for i in range(n):
        g = torch.Generator().manual_seed(int(seed) + i)
        x = _draw(q, g)
        kept, _, replacement = _verify(p, q, x, g)
        spec[x if kept else replacement] += 1
        accepted += kept
    return {"p": p, "q": q, "plain": plain, "plain2": plain2, "spec": spec, "draft": drafted, "n": n,
            "accepted": accepted, "tv_spec_plain": total_variation(spec, plain),
            "tv_plain_plain": total_variation(plain, plain2), "tv_spec_p": total_variation(spec, p),
            "tv_plain_p": total_variation(plain, p), "tv_draft_p": total_variation(drafted, p),
            "tv_q_p": total_variation(q, p),
            "tv_exact": total_variation(output_distribution(p.double(), q.double()), p)}
