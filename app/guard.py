"""No page ever shows a traceback or a server path: an exception that escapes a page is logged on the server with its
traceback, and the user sees one short message with a reference to find it in the log.

``app/main.py`` runs the sidebar and every page through :func:`run_guarded`; a fragment that reruns on its own is
wrapped with :func:`guarded`. Streamlit's own control flow (``st.stop``, ``st.rerun``, ``st.switch_page``) raises
``BaseException`` subclasses, which pass through untouched. ``.streamlit/config.toml`` sets
``client.showErrorDetails = "none"`` as the backstop for anything outside these (a widget callback).

Tests set ``ATTENTION_LAB_RAISE_ERRORS=1`` (tests/conftest.py) so that a page that fails still fails its test.
"""
from __future__ import annotations

import functools
import logging
import os
import re
import uuid

import streamlit as st

log = logging.getLogger("attention_lab.app")
MESSAGE = ("Something went wrong while drawing this page; it was logged on the server (reference {ref}). "
           "Try another sentence or model, or reload the page.")


_PATH = re.compile(r"(?<![\w.~:/])(?:[A-Za-z]:)?[/\\](?:[^\s/\\'\"():,;]+[/\\])+([^\s/\\'\"():,;]*)")


def public(message: str) -> str:
    """``message`` without server paths: an absolute path keeps only its last part (``/srv/…/x/model.safetensors``
    becomes ``model.safetensors``). For error text shown to a user (a model that cannot be loaded, a failed run)."""
    return _PATH.sub(lambda m: m.group(1) or "…", str(message))


def run_guarded(fn, where: str = "page"):
    """``fn()``; an exception is logged with its traceback and replaced by one short message (returns None)."""
    try:
        return fn()
    except Exception:
        if os.environ.get("ATTENTION_LAB_RAISE_ERRORS") == "1":
            raise
        ref = uuid.uuid4().hex[:8]
        log.exception("%s failed (reference %s)", where, ref)
        st.error(MESSAGE.format(ref=ref))
        return None


def guarded(fn):
    """``fn`` run through :func:`run_guarded` (for a fragment, which reruns without ``app/main.py``)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return run_guarded(lambda: fn(*args, **kwargs), getattr(fn, "__name__", "fragment"))
    return wrapper
