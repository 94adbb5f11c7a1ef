"""A training room per browser session: who sees the models trained on the Training page.

A run trained in the app is saved private: only the browser session that started it lists it in its Model list,
plus any session that opens it by its exact name (a link with ``?model=NAME``). Its session can share it with
everyone on the server (a teacher's run for the class) and make it private again. The flag lives beside the weights,
in ``sharing.json`` (``{"sharing": "private"}`` or ``{"sharing": "shared"}``, :data:`core.io.checkpoint.SHARING`);
a user model without one (put there by ``python -m core.train --out``, or saved before rooms existed) is shared, so
nothing that was listed disappears. Bundled and pretrained models are everyone's.

Ownership: the names a browser session trained (``st.session_state[OWNED_KEY]``, kept by pages/training.py) and,
so that a reload or a new tab keeps them, the runs saved under this browser's owner key: the browser holds a random
token in a cookie (:data:`OWNER_COOKIE`, written by the Training page), the folder holds only its SHA-256
(``"owner"`` in ``sharing.json``), so reading the server's folders gives nobody the right to share or delete. Another
browser, or one that cleared its cookies, is another owner.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import secrets
import threading
from collections.abc import Iterable
from pathlib import Path

from core.io import checkpoint, jsonio, registry

PRIVATE, SHARED = "private", "shared"
SHARING_FILE = checkpoint.SHARING
OWNED_KEY = "tr_owned"  # session_state: the names of the models this browser session trained (pages/training.py)
MAX_SHARING_BYTES = 4096  # a sharing.json is a few bytes; anything larger is not ours and reads as private
OWNER_COOKIE = "attention_lab_owner"  # the browser's owner token (pages/training.py writes it)
OWNER_COOKIE_DAYS = 365
_TOKEN = re.compile(r"[A-Za-z0-9_-]{32}")  # secrets.token_urlsafe(24)
_KEY = re.compile(r"[0-9a-f]{64}")
_write_lock = threading.Lock()  # one writer of a folder's temporary .sharing.json.tmp at a time in this server


def new_token() -> str:
    """A new browser owner token: 24 random bytes, URL-safe (32 characters)."""
    return secrets.token_urlsafe(24)


def valid_token(token) -> bool:
    """Whether ``token`` (a cookie's value: anything a browser sends) has the shape :func:`new_token` gives."""
    return isinstance(token, str) and _TOKEN.fullmatch(token) is not None


def owner_key(token: str) -> str:
    """What a saved run records of its owner: the SHA-256 (hex) of the browser's token. Raises ValueError for a
    token :func:`valid_token` refuses."""
    if not valid_token(token):
        raise ValueError("not an owner token")
    return hashlib.sha256(token.encode()).hexdigest()


def sharing_json(shared: bool, owner: str | None = None) -> bytes:
    """The bytes of a ``sharing.json``: ``{"sharing": "shared" | "private"}``, with ``"owner"``: an
    :func:`owner_key`, when the browser that trained it is known."""
    data = {"sharing": SHARED if shared else PRIVATE}
    if owner is not None:
        if not _KEY.fullmatch(owner):
            raise ValueError("not an owner key")
        data["owner"] = owner
    return (jsonio.dumps(data) + "\n").encode()


def write_sharing(folder, shared: bool, owner: str | None = None) -> Path:
    """Write ``folder/sharing.json`` (a model folder, or the temporary folder a run is saved from), replacing any
    earlier one at once: a reader sees the old flag or the new one, never half a file. ``owner``: the
    :func:`owner_key` of the browser that trained it, or None. Returns its path."""
    folder = Path(folder)
    final, tmp = folder / SHARING_FILE, folder / f".{SHARING_FILE}.tmp"  # the .tmp name checkpoint knows as its own
    data = sharing_json(shared, owner)
    with _write_lock:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    return final


@functools.lru_cache(maxsize=1024)
def _state_at(path: str, version: tuple) -> tuple[str, str | None]:
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_SHARING_BYTES + 1)
        data = jsonio.loads(raw) if len(raw) <= MAX_SHARING_BYTES else {}
        state, owner = data.get("sharing"), data.get("owner")
    except (OSError, ValueError, AttributeError):  # unreadable, not JSON, not an object
        return PRIVATE, None
    return (state if state in (PRIVATE, SHARED) else PRIVATE,
            owner if isinstance(owner, str) and _KEY.fullmatch(owner) else None)


def _read(name: str) -> tuple[str, str | None]:
    path = registry.user_dir() / name / SHARING_FILE
    try:
        st_ = path.lstat()
    except FileNotFoundError:
        return SHARED, None
    except OSError:
        return PRIVATE, None
    if not path.is_file() or path.is_symlink():
        return PRIVATE, None
    return _state_at(str(path), (st_.st_ino, st_.st_size, st_.st_mtime_ns))


def sharing(name: str) -> str:
    """Who sees user model ``name``: :data:`SHARED` (everyone on this server) or :data:`PRIVATE` (the session that
    trained it, and whoever opens it by name). A folder without ``sharing.json`` is shared; one whose file cannot be
    read as ours (not a regular file, not ``{"sharing": "private" | "shared"}``) is private. Read once per file
    version."""
    return _read(name)[0]


def owner_of(name: str) -> str | None:
    """The :func:`owner_key` recorded for user model ``name``, or None (a CLI model, an older run, a file not ours)."""
    return _read(name)[1]


def owned_by(token) -> list[str]:
    """The user models saved by the browser whose owner token is ``token`` (none for a token
    :func:`valid_token` refuses)."""
    if not valid_token(token):
        return []
    key = owner_key(token)
    return [n for n in registry.user_models() if owner_of(n) == key]


def is_shared(name: str) -> bool:
    """Whether user model ``name`` is in every session's Model list (:func:`sharing` is :data:`SHARED`)."""
    return sharing(name) == SHARED


def set_sharing(name: str, shared: bool, owned: Iterable[str]) -> None:
    """Share user model ``name`` with everyone on this server (``shared``) or make it private again, for the browser
    session whose trained models are ``owned``. Raises ValueError, a sentence for the learner, when that session did
    not train ``name`` or there is no such saved model."""
    if name not in set(owned or ()):
        raise ValueError(f"Only the browser session that trained {name!r} can share it or make it private.")
    if not registry.valid_name(name) or registry.reserved(name):
        raise ValueError(f"{name!r} is not a model trained on this server's Training page.")
    folder = registry.user_dir() / name
    if folder.is_symlink() or not (folder / checkpoint.CONFIG).is_file():
        raise ValueError(f"There is no saved model called {name!r} (it may have been deleted).")
    write_sharing(folder, shared, owner_of(name))  # its owner stays its owner


def visible_models(owned: Iterable[str] = (), opened: Iterable[str] = ()) -> list[str]:
    """The model names one browser session may list and open, in ``registry.available()``'s order (bundled, installed
    pretrained, then user models by name).

    Bundled and pretrained models are always in it; a user model is when it is shared with the server
    (:func:`sharing`; no ``sharing.json`` counts as shared), when this session trained it (``owned``: the names in
    ``st.session_state[OWNED_KEY]``), or when this session opened it by its exact name (``opened``: e.g. the
    ``?model=NAME`` of a link it arrived by, which must open a private model too). Names in ``owned`` or ``opened``
    that are no listed model are ignored, so a bad link adds nothing."""
    mine = set(owned or ()) | set(opened or ())
    users = set(registry.user_models())
    return [n for n in registry.available() if n not in users or n in mine or is_shared(n)]
