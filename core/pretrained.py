"""Pretrained encoders loaded from installed packages into our own Transformer (placeholder; see issue 7)."""
from __future__ import annotations


def installed(name: str) -> bool:
    return False


def load(name: str, device="cpu"):
    raise ValueError(f"pretrained model {name!r} is not available")
