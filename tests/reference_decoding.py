"""Greedy decoding the slow way, as an independent check of ``core.inference.decoding``: no key/value cache, the
whole target prefix run again through ``model(src, prefix, **kw)`` at every step, so a hook, an ablation or a mask
reaches every position exactly as in a full forward pass."""
from __future__ import annotations

import torch

from core.io.tokenizer import BOS, EOS, MASK, PAD


def greedy_uncached(model, src_ids: list[int], max_new: int, **kw) -> list[int]:
    """Encoder-decoder ``model``: the greedy target for ``src_ids`` (without BOS, cut at EOS), one full forward per
    token with the keyword arguments ``kw`` (``ablate=``, ``hooks=``). Padding, BOS and MASK are never chosen."""
    src = torch.tensor([src_ids])
    out: list[int] = []
    with torch.no_grad():
        for _ in range(max_new):
            logits = model(src, torch.tensor([[BOS] + out]), **kw).logits[0, -1]
            logits[[PAD, BOS, MASK]] = float("-inf")
            nxt = int(logits.argmax())
            if nxt == EOS:
                break
            out.append(nxt)
    return out
