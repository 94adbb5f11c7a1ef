"""Positional encodings: sinusoidal, learned, rotary (RoPE); ALiBi lives in ``masks``.

Attention is permutation-invariant, so order must be injected (Vaswani et al. sec. 3.5):

    PE(pos, 2i)   = sin(pos / N^(2i/d_model))
    PE(pos, 2i+1) = cos(pos / N^(2i/d_model))        with N = 10000 in the paper.
"""
from __future__ import annotations

import torch


def frequencies(dim: int, base: float = 10000.0) -> torch.Tensor:
    """``ω_i = 1 / base^(2i/dim)`` for i = 0 .. dim/2 - 1."""
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))


def sinusoidal(n_positions: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """``[n_positions, d_model]`` table: sin on even dimensions, cos on odd ones."""
    if d_model % 2:
        raise ValueError(f"sinusoidal encoding needs an even d_model, got {d_model}")
    angles = torch.arange(n_positions, dtype=torch.float64)[:, None] * frequencies(d_model, base)[None, :]
    pe = torch.empty(n_positions, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe.float()


def shift_matrix(k: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """Block-diagonal rotation ``R_k`` with ``PE(pos + k) = R_k · PE(pos)`` for every pos.

    Each (sin, cos) pair of frequency ω turns by the angle k·ω:
    ``[sin(a+b), cos(a+b)] = [[cos b, sin b], [-sin b, cos b]] · [sin a, cos a]``.
    """
    theta = k * frequencies(d_model, base)
    c, s = torch.cos(theta), torch.sin(theta)
    r = torch.zeros(d_model, d_model, dtype=torch.float64)
    idx = torch.arange(0, d_model, 2)
    r[idx, idx], r[idx, idx + 1] = c, s
    r[idx + 1, idx], r[idx + 1, idx + 1] = -s, c
    return r.float()


def rope_cache(n_positions: int, d_head: int, base: float = 10000.0, device=None):
    """cos/sin tables ``[n_positions, d_head/2]`` for rotary embeddings (Su et al. 2021)."""
    angles = torch.arange(n_positions, dtype=torch.float64)[:, None] * frequencies(d_head, base)[None, :]
    return torch.cos(angles).float().to(device), torch.sin(angles).float().to(device)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each pair ``(x[2i], x[2i+1])`` of ``x [..., T, d_head]`` by the angle ``pos·ω_i``.

    ``cos``/``sin`` are ``[T, d_head/2]`` for the positions of x. Because both q and k are rotated,
    ``q_m · k_n`` depends on positions only through ``m - n``.
    """
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    return out.flatten(-2)
