"""Attention masks, built explicitly so that a page can show exactly what was added.

Every mask here is *additive*: 0 where a query may look at a key, ``-inf`` where it
may not. Scaled dot-product attention adds it before the softmax
(``softmax(QKᵀ/√d_k + M)``), so a masked entry gets a weight of exactly 0.
Shapes broadcast against scores ``[batch, heads, query, key]``.
"""
from __future__ import annotations

import torch

NEG_INF = float("-inf")


def additive(allowed: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """0 where ``allowed`` is True, ``-inf`` where it is False: any boolean "may look" table as an additive mask."""
    allowed = allowed.bool()
    zero = torch.zeros((), dtype=dtype, device=allowed.device)
    return torch.where(allowed, zero, torch.full((), NEG_INF, dtype=dtype, device=allowed.device))


def causal_mask(t_q: int, t_k: int | None = None, offset: int = 0, device=None) -> torch.Tensor:
    """``[t_q, t_k]``: query i (at absolute position ``offset + i``) sees keys j <= offset + i.

    Vaswani et al. sec. 3.2.3: the decoder must not look at later positions.
    """
    t_k = t_q + offset if t_k is None else t_k
    i = torch.arange(t_q, device=device)[:, None] + offset
    j = torch.arange(t_k, device=device)[None, :]
    return additive(j <= i)


def padding_mask(key_is_pad: torch.Tensor) -> torch.Tensor:
    """``[batch, 1, 1, t_k]`` from a boolean ``[batch, t_k]`` (True = padding token)."""
    return additive(~key_is_pad)[:, None, None, :]


def band(t_q: int, radius: int, t_k: int | None = None, offset: int = 0, device=None) -> torch.Tensor:
    """Bool ``[t_q, t_k]``: query i (at position ``i + offset``) may see key j when ``|i - j| <= radius``. The one
    band every local-attention mask is built from (:func:`window_mask`, the Efficient page's Longformer window)."""
    t_k = t_q + offset if t_k is None else t_k
    i = torch.arange(t_q, device=device)[:, None] + offset
    j = torch.arange(t_k, device=device)[None, :]
    return (i - j).abs() <= radius


def window_mask(t_q: int, window: int, t_k: int | None = None, offset: int = 0, device=None) -> torch.Tensor:
    """``[t_q, t_k]`` additive band: query i sees keys j with ``|i - j| < window``, the :func:`band` of radius
    ``window - 1`` (a model's ``window`` setting; Longformer-style local attention)."""
    return additive(band(t_q, window - 1, t_k, offset, device))


def combine(*masks: torch.Tensor | None, batched: bool = True) -> torch.Tensor | None:
    """Sum of additive masks (``-inf`` wins); None when nothing is masked. A 2-D sum becomes ``[1, 1, t_q, t_k]``
    (scores' shape) unless ``batched`` is False (a page drawing the ``[t_q, t_k]`` table)."""
    out = None
    for m in masks:
        if m is None:
            continue
        out = m if out is None else out + m
    if batched and out is not None and out.dim() == 2:
        out = out[None, None]
    return out


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """Press et al. (2022): head h gets slope ``2^(-8(h+1)/n)`` for n a power of two;
    other counts take the power-of-two sequence and interleave the next one's odd terms."""
    def powers(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (k + 1) for k in range(n)]

    closest = 1 << (n_heads.bit_length() - 1)
    slopes = powers(closest)
    if closest != n_heads:
        slopes += powers(2 * closest)[0::2][: n_heads - closest]
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_bias(n_heads: int, t_q: int, t_k: int | None = None, offset: int = 0, device=None) -> torch.Tensor:
    """``[1, heads, t_q, t_k]`` linear bias ``-s_h·|i - j|``; under a causal mask this is exactly ``s_h·(j - i)``."""
    t_k = t_q + offset if t_k is None else t_k
    i = torch.arange(t_q, device=device)[:, None] + offset
    j = torch.arange(t_k, device=device)[None, :]
    dist = (i - j).abs().float()
    return (-alibi_slopes(n_heads).to(device)[:, None, None] * dist)[None]
