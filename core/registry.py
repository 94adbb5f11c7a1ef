"""Where models live: bundled ones in ``assets/models/<name>/``, user-trained ones in the data folder."""
from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = ROOT / "assets" / "models"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def data_dir() -> Path:
    """The app's writable folder (``ATTENTION_LAB_DATA``, default ``./data``)."""
    return Path(os.environ.get("ATTENTION_LAB_DATA", ROOT / "data")).resolve()


def user_dir() -> Path:
    return data_dir() / "models"


def _listed(folder: Path) -> list[str]:
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if (p / "config.json").exists() and NAME.match(p.name))


def bundled() -> list[str]:
    return _listed(BUNDLED)


def user_models() -> list[str]:
    return _listed(user_dir())


def valid_name(name: str) -> bool:
    return bool(NAME.match(name or "")) and ".." not in name


PRETRAINED = ("minilm",)  # loaded from an installed package by core.pretrained, not from a folder


def available() -> list[str]:
    """Every short name that :func:`load` accepts: bundled, pretrained (if installed), user-trained."""
    from . import pretrained
    names = bundled() + [n for n in PRETRAINED if pretrained.installed(n)]
    return names + [n for n in user_models() if n not in names]


def load(name: str, allow_path: bool = True, device="cpu"):
    """A :class:`core.checkpoint.Checkpoint` for a short name (or, for CLIs, a checkpoint folder)."""
    from . import checkpoint, pretrained
    if name in PRETRAINED:
        return pretrained.load(name, device=device)
    return checkpoint.load(resolve(name, allow_path), device=device)


def resolve(name: str, allow_path: bool = True) -> Path:
    """A short name (bundled first, then user-trained) or, for CLIs, a checkpoint folder path."""
    if valid_name(name):
        for folder in (BUNDLED, user_dir()):
            if (folder / name / "config.json").exists():
                return folder / name
    if allow_path and name and Path(name).is_dir():
        return Path(name)
    known = ", ".join(available()) or "none"
    raise ValueError(f"unknown model {name!r}; known models: {known}")
