"""Results shared by every session, bounded in bytes, not entries.

``st.cache_resource(max_entries=64)`` bounded the number of cached runs, not their size: one long minilm run held
≈256 MB, so 64 of them could exceed the machine. Every cached result of ``@bounded`` counts its real size
(:func:`nbytes`: tensors, traces, strings, containers) against one budget for the whole server
(:data:`CACHE_BYTES`); the least recently used results go first, and a result larger than a quarter of the budget is
returned but not kept. With the per-request bounds of core.io.budget this bounds the server's memory above idle,
whatever the input, URL or sequence of requests.

Which result goes first when the budget is full weighs what it cost against what it holds (GreedyDual-Size, Cao &
Irani 1997): each result's priority is ``L + seconds / bytes``, where ``seconds`` is how long it took to compute
(at least :data:`MIN_COST_S`) and ``L`` the priority of the last result evicted, so priorities age. The lowest goes
first; among equals, the least recently used. Plain LRU let a class visiting the heavy pages (3 MB traces that take
0.1 s) push out the classroom's patching results (40 kB that take 1 s) and the generated probe pairs (1.2 s), so the
Coreference page and the Lesson's payoff were recomputed mid-lesson (``bench/bench_cache_policy.py`` compares the two
policies in one run; ``ATTENTION_LAB_CACHE_POLICY=lru`` restores the old one).
"""
from __future__ import annotations

import dataclasses
import functools
import os
import sys
import threading
import time
from collections import OrderedDict

import numpy as np
import streamlit as st
import torch

from core.trace import Trace

CACHE_BYTES = int(os.environ.get("ATTENTION_LAB_CACHE_BYTES", 768 << 20))  # every @bounded result together
POLICY = os.environ.get("ATTENTION_LAB_CACHE_POLICY", "cost")  # "cost": GreedyDual-Size; "lru": recency only
MIN_COST_S = 0.01  # a result's cost is at least this: below it, timing noise would order the cheap ones at random

_lock = threading.Lock()
_entries: OrderedDict = OrderedDict()  # (function, key) -> (value, bytes), least recently used first
_priority: dict = {}  # (function, key) -> (priority, cost per byte)
_floor = 0.0  # L: the priority of the last result evicted
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
    global _total, _floor
    with _lock:
        _entries.clear()
        _priority.clear()
        _total, _floor = 0, 0.0


def forget(value) -> None:
    """Drop every cached result computed with ``value`` among its arguments (a model name whose folder was deleted or
    replaced: a new model may take the name)."""
    with _lock:
        for k in [k for k in _entries if any(a == value for a in k[1]) or any(v == value for _, v in k[2])]:
            _drop(k)


def _drop(key) -> int:
    """Remove one entry (the lock held); returns its bytes."""
    global _total
    freed = _entries.pop(key)[1]
    _priority.pop(key, None)
    _total -= freed
    return freed


def _victim():
    """The entry to evict (the lock held): the lowest priority, the least recently used among equals; under the
    "lru" policy, simply the least recently used."""
    if POLICY == "lru":
        return next(iter(_entries))
    return min(_entries, key=lambda k: _priority[k][0])  # min keeps the first of equals: the oldest


def _touch(key) -> None:
    """A hit: the entry becomes the most recently used, and its priority is renewed from today's floor."""
    _entries.move_to_end(key)
    _priority[key] = (_floor + _priority[key][1], _priority[key][1])


def _put(key, value, size: int, seconds: float = MIN_COST_S) -> None:
    global _total, _floor
    with _lock:
        if key in _entries:
            _drop(key)
        per_byte = max(seconds, MIN_COST_S) / max(size, 1)
        _entries[key] = (value, size)
        _priority[key] = (_floor + per_byte, per_byte)
        _total += size
        while _total > CACHE_BYTES and _entries:
            victim = _victim()
            _floor = max(_floor, _priority[victim][0])
            _drop(victim)


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
                _touch(key)
                return hit[0]
        start = time.perf_counter()
        if spinner:
            with st.spinner(spinner):
                value = fn(*args, **kwargs)
        else:
            value = fn(*args, **kwargs)
        seconds = time.perf_counter() - start
        size = nbytes(value)
        if size <= CACHE_BYTES // 4:
            _put(key, value, size, seconds)
        return value

    def clear_fn():
        with _lock:
            for k in [k for k in _entries if k[0] == name]:
                _drop(k)

    wrapper.clear = clear_fn
    return wrapper
