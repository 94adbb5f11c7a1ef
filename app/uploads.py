"""Texts a learner uploads on the Training page to train a language model on: checked, kept while a run needs them.

:func:`save_upload` validates the bytes (size, UTF-8, not binary, not empty, no "word" longer than :data:`MAX_WORD`:
:func:`check_text`) and keeps them as ``uploads/<uuid>.txt`` in the data folder. An upload lives only as long as it
is needed: the job that trained on it deletes it when it ends (:func:`release_upload`), and the folder is capped
(:func:`prune_uploads`: the oldest file no running job needs goes first; any unused one older than
:data:`UPLOAD_MAX_AGE_S` goes at the next upload).

Which uploads a running job still needs is known to the job registry (:mod:`app.training_jobs`), which imports this
module; so that this module does not import it back, the registry names a function that lists them
(:func:`register_in_use`) and :func:`in_use` asks every such function.
"""
from __future__ import annotations

import os
import re
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

from core.io import registry

MAX_UPLOAD = 2_000_000  # bytes of uploaded LM text
# The longest run of characters without whitespace an uploaded text may hold. The tokenizer's BPE training takes time
# growing with the longest "word" (2 MB of text, 2 cores: 100,000-character words 94 s, one 400 kB word 98 s), and
# stays within seconds up to this length (2 MB of 1,000-character words over a 2- to 26-letter alphabet: 3.6-6.5 s).
MAX_WORD = 1000
MAX_UPLOADS_BYTES = 20 * MAX_UPLOAD
UPLOAD_MAX_AGE_S = 6 * 3600.0

_in_use_providers: dict[str, Callable[[], Iterable[str | Path]]] = {}


def register_in_use(name: str, provider: Callable[[], Iterable[str | Path]]) -> None:
    """Name ``provider``, a function that returns the paths of the uploads still needed now (the texts of running
    jobs), under ``name``: none of them is pruned or released while it lists them. Registering a name again (a module
    imported twice) replaces its provider."""
    _in_use_providers[name] = provider


def in_use() -> set[Path]:
    """The resolved paths every registered provider says are still needed."""
    return {Path(p).resolve() for provider in list(_in_use_providers.values()) for p in provider()}


def uploads_dir() -> Path:
    """The folder the uploaded texts are kept in: ``uploads/`` in the data folder."""
    return registry.data_dir() / "uploads"


def prune_uploads(incoming: int = 0) -> None:
    """Delete uploads no running job needs: every one older than :data:`UPLOAD_MAX_AGE_S`, then the oldest while the
    folder (plus ``incoming`` bytes) is over :data:`MAX_UPLOADS_BYTES`. Temporary ``.part`` files of a save that is
    still being written are left alone unless they are old."""
    folder = uploads_dir()
    if not folder.is_dir():
        return
    needed, now = in_use(), time.time()
    files = []
    for p in folder.iterdir():
        try:
            st_ = p.stat()
        except FileNotFoundError:
            continue
        if p.is_file() and p.resolve() not in needed:
            files.append((st_.st_mtime, st_.st_size, p))
    total = sum(size for _, size, _ in files) + sum(p.stat().st_size for p in needed if p.is_file()) + incoming
    for mtime, size, p in sorted(files):
        old = now - mtime > UPLOAD_MAX_AGE_S
        if old or (total > MAX_UPLOADS_BYTES and p.suffix == ".txt"):
            p.unlink(missing_ok=True)
            total -= size


def release_upload(path) -> None:
    """Delete an uploaded text once the job that needed it has ended (only a file inside the uploads folder, and
    only when no running job still needs it)."""
    if not path:
        return
    p = Path(path).resolve()
    if p.parent == uploads_dir().resolve() and p.suffix == ".txt" and p not in in_use():
        p.unlink(missing_ok=True)


def check_text(text: str, shown_name: str = "the text") -> None:
    """Refuse (ValueError, a sentence for the learner) a text whose tokenizer training would not be bounded: a run of
    more than :data:`MAX_WORD` characters without a space or line break."""
    long = re.search(r"\S{%d}" % (MAX_WORD + 1), text)
    if long:
        line = text.count("\n", 0, long.start()) + 1
        end = re.compile(r"\s").search(text, long.start())
        length = (end.start() if end else len(text)) - long.start()
        raise ValueError(f"{shown_name} has a 'word' of {length:,} characters with no space or line break in it (line "
                         f"{line:,}); the limit is {MAX_WORD:,}. The trainer learns from prose: words separated by "
                         "spaces, one text per line.")


def save_upload(data: bytes, shown_name: str = "the file") -> Path:
    """Validate uploaded LM text and keep it under ``uploads/`` with a generated name, until the job that uses it
    ends (:func:`release_upload`); the folder is capped (:func:`prune_uploads`).

    Raises ValueError with a readable message (too large, empty, binary, not UTF-8, a "word" longer than
    :data:`MAX_WORD` characters (:func:`check_text`), the server's upload space is full); then nothing is kept.
    """
    from core.data.lm import load_text

    if len(data) > MAX_UPLOAD:
        raise ValueError(f"{shown_name} is {len(data):,} bytes; the limit is {MAX_UPLOAD:,} bytes.")
    folder = uploads_dir()
    folder.mkdir(parents=True, exist_ok=True)
    prune_uploads(incoming=len(data))
    used = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    if used + len(data) > MAX_UPLOADS_BYTES:
        raise ValueError(f"The server holds {used:,} bytes of texts that running trainings still need; "
                         f"{shown_name} does not fit. Try again when a run has finished.")
    fd, tmp_name = tempfile.mkstemp(prefix=".upload-", suffix=".part", dir=folder)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        try:
            check_text(load_text(tmp, max_bytes=MAX_UPLOAD), shown_name)
        except ValueError as e:
            raise ValueError(str(e).replace(tmp.name, shown_name)) from None
        final = folder / f"{uuid.uuid4().hex}.txt"
        os.replace(tmp, final)
        return final
    finally:
        tmp.unlink(missing_ok=True)
