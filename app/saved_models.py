"""The models the Training page saves: their names, the caps on how many are kept, and deleting one.

A run trained on the Training page is saved as ``registry.user_dir()/<name>``. Its name must be free (:func:`name_taken`:
not a built-in name, not a saved model, not the target of a run still going; :func:`suggest_name` finds one). Each saved
model takes disk (up to 38.6 MB at the largest settings of :mod:`app.training_settings`) and is private to the session
that trained it until it shares it (app/rooms.py): at most :data:`MAX_SAVED_MODELS` on the server (≈ 2.3 GB of disk at
the largest settings) and :data:`MAX_SAVED_PER_SESSION` saved by one browser session; a run that would pass either is
refused before it starts (:func:`saved_limit_error`). A session may delete the models it saved (:func:`delete_model`);
nothing is deleted for it.

Which names running jobs will save is known to the job registry (:mod:`app.training_jobs`), which imports this module;
so that this module does not import it back, the registry names a function that lists them (:func:`register_pending`)
and :func:`pending` asks every such function.
"""
from __future__ import annotations

import itertools
import os
import shutil
import uuid
from collections.abc import Callable, Iterable

from core.io import checkpoint, registry

MAX_SAVED_MODELS = int(os.environ.get("ATTENTION_LAB_MAX_SAVED_MODELS", 60))
MAX_SAVED_PER_SESSION = int(os.environ.get("ATTENTION_LAB_MAX_SAVED_PER_SESSION", 5))

HOW_TO_DELETE = ("delete one of the models you saved in this browser session (“Your saved models” on the Training "
                 "page), or ask whoever runs the server to delete model folders in its data/models folder")

_pending_providers: dict[str, Callable[[], Iterable[str]]] = {}


def register_pending(name: str, provider: Callable[[], Iterable[str]]) -> None:
    """Name ``provider``, a function that returns the names of the models running jobs will save, under ``name``:
    those names count as taken and towards the caps, and cannot be deleted. Registering a name again (a module
    imported twice) replaces its provider."""
    _pending_providers[name] = provider


def pending() -> set[str]:
    """The names every registered provider says running jobs will save."""
    return {n for provider in list(_pending_providers.values()) for n in provider()}


def names() -> list[str]:
    """Every model folder in the user models folder, listed or not (a broken one takes disk too)."""
    folder = registry.user_dir()
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith("."))


def saved_limit_error(owned=(), running: set[str] | None = None) -> str | None:
    """Why a new run may not start now (its model could not be saved), or None: the server's saved models and
    running jobs (each will save one) at :data:`MAX_SAVED_MODELS`, or those of this browser session (``owned``: the
    names it trained) at :data:`MAX_SAVED_PER_SESSION`. ``running``: the names running jobs will save, for a caller
    that holds the job registry's lock; None asks :func:`pending`."""
    running = pending() if running is None else running
    on_disk = set(names())
    total = len(on_disk | running)
    if total >= MAX_SAVED_MODELS:
        return (f"This server already holds {total} saved models (the limit is {MAX_SAVED_MODELS}), so a new run "
                f"could not be saved: {HOW_TO_DELETE}.")
    mine = set(owned) & (on_disk | running)
    if len(mine) >= MAX_SAVED_PER_SESSION:
        return (f"This browser session has already saved {len(mine)} models (the limit is {MAX_SAVED_PER_SESSION} per "
                "session): delete one of them under “Your saved models” on the Training page, then start again.")
    return None


def delete_model(name: str) -> None:
    """Delete the user model ``name`` (a checkpoint folder of ours in the user models folder); ValueError otherwise.
    The page offers it only for the models its session saved."""
    if not registry.valid_name(name) or registry.reserved(name):
        raise ValueError(f"{name!r} is not a model you can delete.")
    folder = registry.user_dir() / name
    if not folder.is_dir() or folder.is_symlink():
        raise ValueError(f"There is no saved model called {name!r}.")
    if name in pending():
        raise ValueError(f"A run is still saving {name!r}; stop it or wait until it has finished.")
    checkpoint.check_replaceable(folder)  # only a checkpoint folder of ours, nothing anyone else put there
    aside = folder.with_name(f".{name}.deleted-{uuid.uuid4().hex}")
    os.replace(folder, aside)  # gone from every list at once, then removed
    shutil.rmtree(aside, ignore_errors=True)


def name_taken(name: str) -> bool:
    """True when ``name`` is a built-in name (bundled or pretrained, in any letter case), a saved model, or the
    target of a job that is still running."""
    if registry.reserved(name) or (registry.user_dir() / name).exists():
        return True
    return name in pending()


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a new model, as a sentence for the learner, or None when it can."""
    if not registry.valid_name(name):
        return ("The model name must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or "
                "digit (it becomes a folder name).")
    if registry.reserved(name):
        return f"{name!r} is the name of a built-in model; choose another name."
    if name_taken(name):
        return f"A model called {name!r} already exists; choose another name."
    return None


def suggest_name(task: str) -> str:
    """The first free ``<task>-<n>``."""
    for n in itertools.count(1):
        name = f"{task}-{n}"
        if not name_taken(name):
            return name
    raise AssertionError("unreachable")
