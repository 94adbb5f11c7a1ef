"""Masked-LM inference: fill the ``[MASK]`` positions of a sentence with an encoder-only model, and measure
how much of each masked position's attention goes to the words on its *right* — the context a left-to-right
language model never sees (BERT, Devlin et al. 2019).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from ..io.budget import max_positions
from ..io.checkpoint import Checkpoint
from ..io.tokenizer import BOS, MASK
from ..trace import Trace

MASK_TEXT = re.compile(r"\[mask\]", re.IGNORECASE)


def encode_masked(tok, text: str) -> list[int]:
    """Token ids of ``text`` with each typed ``[MASK]`` (any case) read as the mask token.

    A mask takes the place of a whole word, word marker included: in training, a masked word's leading
    ``▁`` went with it. Encoded as is, "dog [MASK] tired" would put a lone ``▁`` token in front of the mask,
    an input the model never saw; "too [MASK]." one after it (the text after a special token is encoded as if
    it began a word). A lone marker next to a mask is dropped.
    """
    ids = tok.encode(MASK_TEXT.sub("[MASK]", text))
    marker = tok.token_to_id("▁")
    return [t for i, t in enumerate(ids)
            if not (t == marker and MASK in (ids[i - 1] if i else None, ids[i + 1] if i + 1 < len(ids) else None))]


def mask_positions(ids, positions) -> list[int]:
    """``ids`` with the tokens at ``positions`` replaced by ``[MASK]`` (out-of-range positions are an error)."""
    ids = list(ids)
    for p in positions:
        if not 0 <= p < len(ids):
            raise ValueError(f"position {p} is outside the sentence (0 … {len(ids) - 1})")
        ids[p] = MASK
    return ids


@dataclass
class Fill:
    """The top-k candidates at one predicted position (ids and probabilities, most probable first) and the
    token that was there, when known."""
    position: int
    original: int | None  # the token that was there before masking, when known
    ids: list[int]  # top-k candidate ids, most probable first
    probs: list[float]


@dataclass
class FillResult:
    """One masked-LM pass: the input ids (masks included), the candidates at each predicted position, the trace."""
    ids: list[int]  # the model's input, masks included
    fills: list[Fill]
    trace: Trace

    def best(self) -> list[int]:
        """The input with every mask replaced by its most probable token (all filled at once, as BERT predicts)."""
        ids = list(self.ids)
        for f in self.fills:
            ids[f.position] = f.ids[0]
        return ids


@torch.no_grad()
def fill(ck: Checkpoint, ids: list[int], originals: dict[int, int] | None = None, top_k: int = 10,
         positions: list[int] | None = None) -> FillResult:
    """One traced forward pass of an encoder-only model; the top-``k`` tokens at every ``[MASK]`` (or at
    ``positions``: BERT also predicts the chosen tokens it left unchanged or swapped for a random one)."""
    model = ck.model
    if model.cfg.kind != "encoder-only":
        raise ValueError("filling masks needs an encoder-only (BERT-style) model")
    if not ids:
        raise ValueError("the sentence is empty")
    if len(ids) > max_positions(model):
        raise ValueError(f"the sentence has {len(ids)} tokens; this model reads at most {max_positions(model)}")
    model.eval()
    device = model.device
    out = model(torch.tensor([ids], device=device), trace=True)
    probs = out.logits[0].float().softmax(-1).cpu()
    fills = []
    for p in positions if positions is not None else [i for i, t in enumerate(ids) if t == MASK]:
        top = probs[p].topk(min(top_k, probs.shape[-1]))
        fills.append(Fill(p, (originals or {}).get(p), top.indices.tolist(), top.values.tolist()))
    return FillResult(list(ids), fills, out.trace.to("cpu"))


def right_share(trace: Trace, position: int) -> torch.Tensor:
    """``[layers, heads]``: the share of ``position``'s self-attention that goes to tokens after it.

    A causal (left-to-right) model's share is exactly 0 by construction; a bidirectional encoder is free
    to look both ways.
    """
    return trace.stacked("encoder")[:, 0, :, position, position + 1:].sum(-1)


@torch.no_grad()
def left_only(lm: Checkpoint, prefix_ids: list[int], top_k: int = 10) -> tuple[list[int], list[float]]:
    """What a causal LM predicts at the same place, reading only the words before it (``[BOS]`` + prefix)."""
    if lm.model.cfg.kind != "decoder-only":
        raise ValueError("the left-only comparison needs a decoder-only (GPT-style) model")
    lm.model.eval()
    ids = [BOS] + list(prefix_ids)[-(max_positions(lm.model) - 1):]
    device = lm.model.device
    probs = lm.model(torch.tensor([ids], device=device)).logits[0, -1].float().softmax(-1).cpu()
    top = probs.topk(min(top_k, probs.shape[-1]))
    return top.indices.tolist(), top.values.tolist()


@torch.no_grad()
def both_sides_score(ck: Checkpoint, rows: list[list[int]], lm: Checkpoint | None = None, seed: int = 0,
                     progress=None) -> dict:
    """How much the words right of a hidden word help: one random word of each row (rows of at least 6 tokens;
    never the first or the last three) is masked and predicted three ways — by the masked LM reading the whole
    row, by the masked LM reading the row cut after the mask, and (``lm``) by a causal LM reading the words
    before it. Returns top-1 accuracies and the mean gain in log-probability of the hidden word from reading the
    right side (nats). ``progress(k, n, partial)`` is called after each usable row (``partial``: the result over
    the first k rows, the same keys as the return value)."""
    model = ck.model.eval()
    device = model.device
    gen = torch.Generator().manual_seed(seed)

    def probs(m, ids, at):
        return m(torch.tensor([ids], device=device)).logits[0, at].float().log_softmax(-1).cpu()

    full = cut = left = 0
    gains = []
    usable = [r for r in rows if len(r) >= 6]

    def result(n):
        out = {"n": n, "full": full / n, "cut": cut / n, "gain": sum(gains) / n}
        if lm is not None:
            out["left_lm"] = left / n
        return out

    for row in usable:
        pos = int(torch.randint(1, len(row) - 3, (1,), generator=gen))
        a = probs(model, mask_positions(row, [pos]), pos)
        b = probs(model, mask_positions(row[:pos + 1], [pos]), pos)
        full += int(a.argmax()) == row[pos]
        cut += int(b.argmax()) == row[pos]
        gains.append(float(a[row[pos]] - b[row[pos]]))
        if lm is not None:
            prefix = lm.tokenizer.encode(ck.tokenizer.decode(row[:pos]))
            guess, _ = left_only(lm, prefix, top_k=1)
            left += lm.tokenizer.id_to_token(guess[0]) == ck.tokenizer.id_to_token(row[pos])
        if progress is not None:
            progress(len(gains), len(usable), result(len(gains)))
    n = len(gains)
    if not n:
        raise ValueError("no row has the 6 tokens this measurement needs")
    return result(n)


@dataclass
class PairResult:
    """BERT's next-sentence prediction for one pair: input ids and segment types, ``p(B follows A)``, the
    trace, and whether the pair was cut to fit."""
    ids: list[int]  # [BOS] A [EOS] B [EOS]
    types: list[int]  # 0 for [BOS] A [EOS], 1 for B [EOS]
    p_next: float  # probability that B follows A
    trace: Trace
    cut: bool  # the pair was longer than the model reads


@torch.no_grad()
def next_sentence(ck: Checkpoint, a: str, b: str) -> PairResult:
    """BERT's next-sentence prediction: does sentence ``b`` follow ``a``? (A model with ``cfg.nsp``.)"""
    from ..training.tasks import pair_row
    model = ck.model
    if not model.cfg.nsp:
        raise ValueError("this model has no next-sentence head")
    ta, tb = encode_masked(ck.tokenizer, a), encode_masked(ck.tokenizer, b)
    if not ta or not tb:
        raise ValueError("both sentences need at least one word")
    ids, types = pair_row(ta, tb, max_positions(model))
    model.eval()
    device = model.device
    out = model(torch.tensor([ids], device=device), token_types=torch.tensor([types], device=device), trace=True)
    p = float(out.next_sentence[0].float().softmax(-1)[0])
    return PairResult(ids, types, p, out.trace.to("cpu"), len(ta) + len(tb) + 3 > len(ids))


def segment_share(trace: Trace, types: list[int]) -> torch.Tensor:
    """``[layers, heads]``: the mean share of the second segment's attention that goes to the first segment
    (its [BOS] … [EOS] included) — how much sentence B reads sentence A."""
    t = torch.tensor(types)
    weights = trace.stacked("encoder")[:, 0]  # [L, H, T, T]
    return weights[:, :, t.eq(1)][..., t.eq(0)].sum(-1).mean(-1)
