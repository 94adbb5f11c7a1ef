"""Strict JSON: every JSON document Attention Lab prints or writes is valid JSON (RFC 8259), which has no NaN or
Infinity. ``json.dumps`` writes them by default (as ``NaN``, ``Infinity``), which strict parsers and browsers refuse.

:func:`dumps` reports a non-finite number as ``null`` (the value is not a number) and then serialises with
``allow_nan=False``, so anything that slipped through raises instead of printing invalid JSON.
"""
from __future__ import annotations

import json
import math


def finite(obj):
    """``obj`` with every non-finite float (NaN, ±inf) replaced by ``None``; dicts, lists and tuples recursively."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def dumps(obj, **kw) -> str:
    """``json.dumps`` that never writes NaN or Infinity (they become ``null``)."""
    return json.dumps(finite(obj), allow_nan=False, **kw)
