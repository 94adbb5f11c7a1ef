"""Results shared by every session, bounded in bytes, not entries.

``st.cache_resource(max_entries=64)`` bounded the number of cached runs, not their size: one long minilm run held
≈256 MB, so 64 of them could exceed the machine. Every cached result of ``@bounded`` counts its real size
(:func:`nbytes`: tensors, traces, strings, containers) against one budget for the whole server
(:data:`CACHE_BYTES`); the least recently used results go first, and a result larger than a quarter of the budget is
returned but not kept. With the per-request bounds of core.io.budget this bounds the server's memory above idle,
whatever the input, URL or sequence of requests.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import sys
import threading
from collections import OrderedDict

import numpy as np
import streamlit as st
import torch

from core.trace import Trace

CACHE_BYTES = int(os.environ.get("ATTENTION_LAB_CACHE_BYTES", 768 << 20))  # every @bounded result together

_lock = threading.Lock()
_entries: OrderedDict = OrderedDict()  # (function, key) -> (value, bytes), least recently used first
_total = 0


def nbytes(obj, _seen=None) -> int:
    """Bytes ``obj`` holds: tensors and arrays by their storage, a Trace by its tensors, strings, containers and
    dataclasses by their parts (each object once)."""
    seen = set() if _seen is None else _seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, torch.nn.Module):  # a converted model (GQA, a fine-tuned copy): its weights and buffers
        return sum(nbytes(t, seen) for t in [*obj.parameters(), *obj.buffers()])
    if isinstance(obj, Trace):
        obj.materialize()  # deferred maps count at their full size now, not when a page first reads them
        return obj.nbytes()
    if isinstance(obj, (str, bytes, bytearray, int, float, bool, type(None))):
        return sys.getsizeof(obj)
    if isinstance(obj, dict):
        return sys.getsizeof(obj) + sum(nbytes(k, seen) + nbytes(v, seen) for k, v in obj.items())
    if isinstance(obj, (list, tuple, set, frozenset)):
        return sys.getsizeof(obj) + sum(nbytes(v, seen) for v in obj)
    if dataclasses.is_dataclass(obj):
        return sys.getsizeof(obj) + sum(nbytes(getattr(obj, f.name), seen) for f in dataclasses.fields(obj))
    if hasattr(obj, "__dict__"):  # a plotly figure, a Checkpoint, a small result object
        return sys.getsizeof(obj) + nbytes(vars(obj), seen)
    return sys.getsizeof(obj)


def used() -> int:
    """Bytes held by every @bounded cache now."""
    return _total


def clear() -> None:
    global _total
    with _lock:
        _entries.clear()
        _total = 0


def forget(value) -> None:
    """Drop every cached result computed with ``value`` among its arguments (a model name whose folder was deleted or
    replaced: a new model may take the name)."""
    global _total
    with _lock:
        for k in [k for k in _entries if any(a == value for a in k[1]) or any(v == value for _, v in k[2])]:
            _total -= _entries.pop(k)[1]


def _put(key, value, size: int) -> None:
    global _total
    with _lock:
        if key in _entries:
            _total -= _entries.pop(key)[1]
        _entries[key] = (value, size)
        _total += size
        while _total > CACHE_BYTES and _entries:
            _, (_, freed) = _entries.popitem(last=False)
            _total -= freed


def bounded(fn=None, *, spinner: str | None = None, ignore: tuple = ()):
    """Like ``st.cache_resource`` (one result per arguments, shared by every session; do not mutate it), bounded in
    bytes across all such caches. Keyword arguments named in ``ignore`` (a ``progress`` callback) are passed on but
    are not part of the key; a run they interrupt (a Stop click) keeps nothing."""
    if fn is None:
        return functools.partial(bounded, spinner=spinner, ignore=ignore)
    name = f"{fn.__module__}.{fn.__qualname__}"

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        key = (name, args, tuple(sorted((k, v) for k, v in kwargs.items() if k not in ignore)))
        with _lock:
            hit = _entries.get(key)
            if hit is not None:
                _entries.move_to_end(key)
                return hit[0]
        if spinner:
            with st.spinner(spinner):
                value = fn(*args, **kwargs)
        else:
            value = fn(*args, **kwargs)
        size = nbytes(value)
        if size <= CACHE_BYTES // 4:
            _put(key, value, size)
        return value

    def clear_fn():
        global _total
        with _lock:
            for k in [k for k in _entries if k[0] == name]:
                _total -= _entries.pop(k)[1]

    wrapper.clear = clear_fn
    return wrapper
