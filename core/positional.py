"""Positional encodings: sinusoidal, learned, rotary (RoPE); ALiBi lives in ``masks``.

Attention is permutation-invariant, so order must be injected (Vaswani et al. sec. 3.5):

    PE(pos, 2i)   = sin(pos / N^(2i/d_model))
    PE(pos, 2i+1) = cos(pos / N^(2i/d_model))        with N = 10000 in the paper.

Two ways the seeds write it differently are here too: all sines before all cosines (:func:`sinusoidal_halves`, the
same table with its columns reordered) and one frequency per dimension instead of per pair
(:func:`sinusoidal_per_dimension`, a different table).
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


def wavelengths(d_model: int, base: float = 10000.0) -> torch.Tensor:
    """``λ_i = 2π / ω_i = 2π·base^(2i/d_model)``, in positions, for i = 0 .. d_model/2 - 1: a geometric progression
    from 2π towards (never reaching) base·2π."""
    return 2 * torch.pi / frequencies(d_model, base)


def halves_order(d_model: int) -> list[int]:
    """Column order that turns the paper's interleaved table into :func:`sinusoidal_halves`: the sine columns
    0, 2, 4, … first, then the cosine columns 1, 3, 5, …"""
    return list(range(0, d_model, 2)) + list(range(1, d_model, 2))


def sinusoidal_halves(n_positions: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The paper's sines and cosines laid out in two halves: ``[sin(pos·ω_0) … sin(pos·ω_{d/2-1}),
    cos(pos·ω_0) … cos(pos·ω_{d/2-1})]`` (the layout of a figure that is often reproduced; the paper interleaves)."""
    if d_model % 2:
        raise ValueError(f"sinusoidal encoding needs an even d_model, got {d_model}")
    angles = torch.arange(n_positions, dtype=torch.float64)[:, None] * frequencies(d_model, base)[None, :]
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1).float()


def sinusoidal_per_dimension(n_positions: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The formula indexed per *dimension* j instead of per pair: ``sin(pos / base^(2j/d_model))`` on even j,
    ``cos(pos / base^(2j/d_model))`` on odd j. A sine and its neighbouring cosine then have different frequencies,
    so a shift is no longer a rotation of each pair."""
    if d_model % 2:
        raise ValueError(f"sinusoidal encoding needs an even d_model, got {d_model}")
    j = torch.arange(d_model, dtype=torch.float64)
    angles = torch.arange(n_positions, dtype=torch.float64)[:, None] / base ** (2 * j / d_model)[None, :]
    return torch.where(j % 2 == 0, torch.sin(angles), torch.cos(angles)).float()


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
