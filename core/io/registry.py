"""Where models live: bundled ones in ``assets/models/<name>/``, user-trained ones in the data folder."""
from __future__ import annotations

import functools
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # core/io/registry.py -> the repository
BUNDLED = ROOT / "assets" / "models"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def data_dir() -> Path:
    """The app's writable folder (``ATTENTION_LAB_DATA``, default ``./data``)."""
    return Path(os.environ.get("ATTENTION_LAB_DATA", ROOT / "data")).resolve()


def user_dir() -> Path:
    """The folder of user-trained models: ``models`` in :func:`data_dir`."""
    return data_dir() / "models"


def _listed(folder: Path) -> list[str]:
    """The model folders in ``folder`` that the pages can open: a ``config.json`` and a valid name, and not another
    architecture's checkpoint (the Transformer-XL folder has its own page). A folder whose config cannot be read
    stays listed, so choosing it shows why it cannot be loaded."""
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if (p / "config.json").exists() and NAME.match(p.name)
                  and _architecture(p / "config.json") in (None, "transformer"))


@functools.lru_cache(maxsize=256)
def _architecture_at(config: Path, mtime_ns: int) -> str | None:
    from . import checkpoint
    return checkpoint.architecture(config.parent)


def _architecture(config: Path) -> str | None:
    try:
        return _architecture_at(config, config.stat().st_mtime_ns)
    except OSError:
        return None


def bundled() -> list[str]:
    """Names of the models shipped in ``assets/models/`` that the pages can open."""
    return _listed(BUNDLED)


def user_models() -> list[str]:
    """The user's models, except any whose name is a built-in one (it could never be opened: the built-in wins)."""
    return [n for n in _listed(user_dir()) if not reserved(n)]


def valid_name(name: str) -> bool:
    """Whether ``name`` can name a model folder: a letter or digit, then up to 63 letters, digits or
    ``_ . -``, and no ``..``."""
    return bool(NAME.match(name or "")) and ".." not in name


PRETRAINED = ("minilm",)  # loaded from an installed package by core.io.pretrained, not from a folder
# Every name a built-in model has or will have (shipped folders, pretrained packages, installed or not): a user
# model may not take one, in any letter case, or :func:`load` would open the built-in instead.
BUILTIN = ("en-fr", "en-de", "en-fr-tiny", "en-de-tiny", "lm", "lm-tiny", "mlm", "copy", "reverse", "xl") + PRETRAINED


def reserved(name: str) -> bool:
    """True when ``name`` (in any letter case) belongs to a built-in model: :data:`BUILTIN`, :data:`PRETRAINED`, or
    a folder shipped in ``assets/models/``."""
    key = (name or "").lower()
    shipped = {p.name.lower() for p in BUNDLED.iterdir() if p.is_dir()} if BUNDLED.is_dir() else set()
    return key in {n.lower() for n in BUILTIN} or key in shipped


def built_in() -> list[str]:
    """The bundled models and the pretrained ones installed on this machine: everyone's, on every server."""
    from . import pretrained
    return bundled() + [n for n in PRETRAINED if pretrained.installed(n)]


def available() -> list[str]:
    """Every short name that :func:`load` accepts: bundled, pretrained (if installed), user-trained."""
    names = built_in()
    return names + [n for n in user_models() if n not in names]


def load(name: str, allow_path: bool = True, device="cpu"):
    """A :class:`core.io.checkpoint.Checkpoint` for a short name (or, for CLIs, a checkpoint folder)."""
    from . import checkpoint, pretrained
    if name in PRETRAINED:
        return pretrained.load(name, device=device)
    return checkpoint.load(resolve(name, allow_path), device=device)


def resolve(name: str, allow_path: bool = True) -> Path:
    """A short name (bundled first, then user-trained) or, for CLIs, a checkpoint folder path."""
    if valid_name(name):
        for folder in (BUNDLED,) if reserved(name) else (BUNDLED, user_dir()):  # a built-in name is never a user's
            if (folder / name / "config.json").exists():
                return folder / name
    if allow_path and name and Path(name).is_dir():
        return Path(name)
    # the built-in names only: a model saved on the Training page may be private to the browser that trained it
    known = ", ".join(built_in()) or "none"
    saved = len(user_models())
    raise ValueError(f"unknown model {name!r}; built-in models: {known}"
                     + (f"; {saved} saved on this server (open one by its exact name)" if saved else ""))
