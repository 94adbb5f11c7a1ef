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
