"""A training room per browser session: who sees the models trained on the Training page (issue 34 item 5).

A run trained in the app is saved private: only the browser session that started it lists it in its Model list,
plus any session that opens it by its exact name (a link with ``?model=NAME``). Its session can share it with
everyone on the server (a teacher's run for the class) and make it private again. The flag lives beside the weights,
in ``sharing.json`` (``{"sharing": "private"}`` or ``{"sharing": "shared"}``, :data:`core.io.checkpoint.SHARING`);
a user model without one (put there by ``python -m core.train --out``, or saved before rooms existed) is shared, so
nothing that was listed disappears. Bundled and pretrained models are everyone's.

Ownership is the session's own list of the names it trained (``st.session_state[OWNED_KEY]``, kept by
pages/training.py), the list that also decides what the session may delete; nothing on disk names a session.
"""
from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterable
from pathlib import Path

from core.io import checkpoint, jsonio, registry

PRIVATE, SHARED = "private", "shared"
SHARING_FILE = checkpoint.SHARING
OWNED_KEY = "tr_owned"  # session_state: the names of the models this browser session trained (pages/training.py)
MAX_SHARING_BYTES = 4096  # a sharing.json is a few bytes; anything larger is not ours and reads as private
_write_lock = threading.Lock()  # one writer of a folder's temporary .sharing.json.tmp at a time in this server


def sharing_json(shared: bool) -> bytes:
    """The bytes of a ``sharing.json``: ``{"sharing": "shared"}`` or ``{"sharing": "private"}``."""
    return (jsonio.dumps({"sharing": SHARED if shared else PRIVATE}) + "\n").encode()


def write_sharing(folder, shared: bool) -> Path:
    """Write ``folder/sharing.json`` (a model folder, or the temporary folder a run is saved from), replacing any
    earlier one at once: a reader sees the old flag or the new one, never half a file. Returns its path."""
    folder = Path(folder)
    final, tmp = folder / SHARING_FILE, folder / f".{SHARING_FILE}.tmp"  # the .tmp name checkpoint knows as its own
    with _write_lock:
        with open(tmp, "wb") as f:
            f.write(sharing_json(shared))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    return final


@functools.lru_cache(maxsize=1024)
def _state_at(path: str, version: tuple) -> str:
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_SHARING_BYTES + 1)
        state = jsonio.loads(raw).get("sharing") if len(raw) <= MAX_SHARING_BYTES else None
    except (OSError, ValueError, AttributeError):  # unreadable, not JSON, not an object
        return PRIVATE
    return state if state in (PRIVATE, SHARED) else PRIVATE


def sharing(name: str) -> str:
    """Who sees user model ``name``: :data:`SHARED` (everyone on this server) or :data:`PRIVATE` (the session that
    trained it, and whoever opens it by name). A folder without ``sharing.json`` is shared; one whose file cannot be
    read as ours (not a regular file, not ``{"sharing": "private" | "shared"}``) is private. Read once per file
    version."""
    path = registry.user_dir() / name / SHARING_FILE
    try:
        st_ = path.lstat()
    except FileNotFoundError:
        return SHARED
    except OSError:
        return PRIVATE
    if not path.is_file() or path.is_symlink():
        return PRIVATE
    return _state_at(str(path), (st_.st_ino, st_.st_size, st_.st_mtime_ns))


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
    write_sharing(folder, shared)


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
