"""Strict JSON: every JSON document Attention Lab prints or writes is valid JSON (RFC 8259), which has no NaN or
Infinity. ``json.dumps`` writes them by default (as ``NaN``, ``Infinity``), which strict parsers and browsers refuse.

:func:`dumps` reports a non-finite number as ``null`` (the value is not a number) and then serialises with
``allow_nan=False``, so anything that slipped through raises instead of printing invalid JSON.
"""
from __future__ import annotations

import json
import math


def finite(obj, digits: int | None = None):
    """``obj`` made JSON-safe, the one cleaner every writer uses: every non-finite float (NaN, ±inf) becomes ``None``,
    tensors and arrays become lists, dict keys strings; dicts, lists and tuples recursively. With ``digits``, floats
    are rounded to that many decimals (a board written to a file, not a figure a card re-measures)."""
    if isinstance(obj, float):
        return (obj if digits is None else round(obj, digits)) if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): finite(v, digits) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v, digits) for v in obj]
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):  # a tensor or an array (a 0-d one: a number)
        return finite(obj.tolist(), digits)
    return obj


def dumps(obj, **kw) -> str:
    """``json.dumps`` that never writes NaN or Infinity (they become ``null``)."""
    return json.dumps(finite(obj), allow_nan=False, **kw)


def loads(text: str | bytes):
    """``json.loads`` that reads strict JSON only: ``NaN``, ``Infinity`` and ``-Infinity`` (which :func:`dumps` never
    writes) raise ValueError (``json.JSONDecodeError`` for any other invalid document, a ValueError too)."""
    def refuse(token):
        raise ValueError(f"{token} is not valid JSON")
    return json.loads(text, parse_constant=refuse)
