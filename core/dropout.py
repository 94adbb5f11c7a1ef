"""Dropout (Srivastava et al. 2014) as the Transformer uses it (Vaswani et al. sec. 5.4), cheap on CPU.

``F.dropout`` on a CPU tensor draws its mask with ``bernoulli_``, one random draw per element, a visible
share of a small model's training step on a CPU (bench/bench_core.py compares whole steps with
``nn.Transformer``'s). Here one 64-bit draw from torch's CPU generator gives four 16-bit uniform integers, and an element is
kept when its integer is at or above the ``p`` quantile: keep probability ``1 − round(p·2¹⁶)/2¹⁶``
(0.9 ± 1e-5 for p = 0.1): a quarter of the random draws ``F.dropout`` makes. Kept
values are scaled by ``1 / (1 − p)`` as usual, so the expectation is unchanged. The mask comes from
the default generator, so ``torch.manual_seed`` makes a run repeatable. Other devices (CUDA's fused
kernel is already fast) use ``F.dropout``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

_LEVELS = 1 << 16
_INT16_MIN = -(1 << 15)
_INT64_MIN = -(1 << 63)


def keep_mask(shape, p: float, device=None) -> torch.Tensor:
    """Boolean tensor of ``shape``: True (keep) with probability ``1 − round(p·65536)/65536``."""
    n = 1
    for s in shape:
        n *= int(s)
    draws = torch.empty((n + 3) // 4, dtype=torch.int64, device=device).random_(_INT64_MIN, None)
    threshold = _INT16_MIN + round(p * _LEVELS)
    return draws.view(torch.int16)[:n].view(shape) >= threshold


def dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """Zero each element of ``x`` with probability ``p`` and scale the rest by ``1 / (1 − p)``."""
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu" or p >= 1.0:
        return F.dropout(x, p, True)
    keep = keep_mask(x.shape, p, x.device)
    scale = torch.where(keep, torch.tensor(1.0 / (1.0 - p), dtype=x.dtype), torch.tensor(0.0, dtype=x.dtype))
    return x * scale


class Dropout(nn.Module):
    """``nn.Dropout`` with the mask above."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout probability must be in [0, 1), got {p}")
        self.p = p

    def forward(self, x):
        return dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"
