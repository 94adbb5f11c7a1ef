"""Coreference probing: which heads link a pronoun ("it") to its antecedent, and does it matter?

Attention from the pronoun to each candidate noun is read per layer × head; a head "gets a
sentence right" when its strongest link among the candidates goes to the true antecedent.
Ablation then tests whether those heads are *used*: switch them off and watch il/elle change.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .analysis import rollout
from .checkpoint import Checkpoint
from .runner import Run, run
from .tokenizer import BOS, EOS


@dataclass(frozen=True)
class ProbeItem:
    text: str
    antecedent: str
    candidates: tuple[str, ...]
    pronoun: str = "it"


def _norm(tok: str) -> str:
    return tok.lower().lstrip("▁").removeprefix("##")


def locate(tokens: list[str], word: str, start: int = 0) -> int | None:
    """Index of the first token equal to ``word`` (case-insensitive) at or after ``start``."""
    word = word.lower()
    for i in range(start, len(tokens)):
        if _norm(tokens[i]) == word:
            return i
    return None


def self_kind(res: Run) -> str:
    return "decoder" if res.kind == "decoder-only" else "encoder"


def positions(res: Run, item: ProbeItem) -> tuple[int, list[int]] | None:
    """(pronoun position, candidate positions) in the run's tokens, or None if a word is missing."""
    tokens = res.tgt_tokens if res.kind == "decoder-only" else res.src_tokens
    cands = [locate(tokens, c) for c in item.candidates]
    if any(c is None for c in cands):
        return None
    p = locate(tokens, item.pronoun, max(cands) + 1)
    return None if p is None else (p, cands)


def links(res: Run, item: ProbeItem) -> torch.Tensor | None:
    """Attention from the pronoun to each candidate: ``[layers, heads, candidates]``."""
    pos = positions(res, item)
    if pos is None:
        return None
    p, cands = pos
    w = res.trace.stacked(self_kind(res))[:, 0]  # [L, H, T, T]
    return w[:, :, p][:, :, cands]


def rollout_links(res: Run, item: ProbeItem) -> torch.Tensor | None:
    """The same from attention rollout: ``[layers, candidates]``."""
    pos = positions(res, item)
    if pos is None:
        return None
    p, cands = pos
    return rollout(res.trace.stacked(self_kind(res))[:, 0])[:, p][:, cands]


def scoreboard(ck: Checkpoint, items: list[ProbeItem]) -> dict:
    """Per (layer, head): the share of sentences whose strongest pronoun link is the antecedent."""
    hits, roll_hits, used, skipped = None, None, 0, []
    for item in items:
        res = run(ck, item.text)
        lk = links(res, item)
        if lk is None:
            skipped.append(item.text)
            continue
        right = item.candidates.index(item.antecedent)
        h = (lk.argmax(-1) == right).float()
        r = (rollout_links(res, item).argmax(-1) == right).float()
        hits = h if hits is None else hits + h
        roll_hits = r if roll_hits is None else roll_hits + r
        used += 1
    if not used:
        return {"n": 0, "skipped": skipped, "share": None, "rollout_share": None, "best": []}
    share = hits / used
    flat = [(float(share[l, h]), l, h) for l in range(share.shape[0]) for h in range(share.shape[1])]
    best = sorted(flat, key=lambda t: (-t[0], t[1], t[2]))[:5]
    return {"n": used, "skipped": skipped, "share": share, "rollout_share": roll_hits / used,
            "best": [{"layer": l, "head": h, "share": s} for s, l, h in best]}


@torch.no_grad()
def pronoun_probabilities(ck: Checkpoint, src: str, tgt: str, choices: tuple[str, ...], ablate=None) -> dict:
    """Teacher-force the reference translation ``tgt`` and read the probability of each pronoun in ``choices``
    at the position where the reference has one of them (e.g. il vs elle). Empty if none is found."""
    model, tok = ck.model, ck.tokenizer
    if model.cfg.kind != "encoder-decoder":
        raise ValueError("pronoun probabilities need a translation model")
    tgt_ids = tok.encode(tgt)
    shown = tok.display(tgt_ids)
    pos = next((i for i, t in enumerate(shown) if _norm(t) in choices), None)
    if pos is None:
        return {}
    device = model.embed.tokens.weight.device
    src_ids = tok.encode(src)[: model.cfg.max_len - 1] + [EOS]
    dec = torch.tensor([[BOS] + tgt_ids[:pos]], device=device)
    probs = model(torch.tensor([src_ids], device=device), dec, ablate=ablate).logits[0, -1].float().softmax(-1)
    out = {}
    for word in choices:
        ids = [tok.token_to_id("▁" + word), tok.token_to_id(word)]
        out[word] = float(sum(probs[i] for i in ids if i is not None))
    return out
