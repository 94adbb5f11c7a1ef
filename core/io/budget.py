"""Bounded work per request: how many tokens the app lets one model read, so that the largest trace it can keep and
the largest attention export built from it stay within a stated memory budget.

A model's traced forward pass holds tensors whose sizes are polynomials in the sequence length T (attention maps
``H·T²`` per layer and kind, Q/K/V, residual streams and FFN activations ``∝ T``, logits ``T·V``). :func:`profile`
measures that polynomial exactly, from three tiny traced runs, and :func:`token_limit` picks the largest T (at most
the model's own ``max_len``) whose trace fits :data:`TRACE_BYTES` and whose CSV export fits :data:`EXPORT_BYTES`
(for tokens of :data:`TYPICAL_TOKEN_BYTES`; an export with longer tokens is measured exactly before it is built,
:func:`export_bytes`). :func:`limit_positions` makes a loaded model read at most that many positions: every
clipping path in core and app reads ``model.max_positions``, and the model's own input check refuses more.

The budget is for one request; caches that keep runs are bounded in bytes (app.cache), so the server's memory
above idle is bounded by the sum of those budgets, whatever the input, URL or sequence of requests.
"""
from __future__ import annotations

import os

import torch

MiB = 1 << 20
TRACE_BYTES = int(os.environ.get("ATTENTION_LAB_MAX_TRACE_BYTES", 64 * MiB))  # one run's full trace
EXPORT_BYTES = int(os.environ.get("ATTENTION_LAB_MAX_EXPORT_BYTES", 64 * MiB))  # one JSON or CSV export (UTF-8)
CSV_ROW_BYTES = 48  # a CSV row without its two tokens: kind, layer, head, indices, 7-decimal weight, commas, CRLF
JSON_VALUE_BYTES = 12  # one weight in the JSON export: up to 10 characters (round(x, 7)) and ", " (or "], [")
TYPICAL_TOKEN_BYTES = 8  # what the token limit assumes for each token in a CSV row


def _poly(ts, ys):
    """Exact quadratic through three points (c + b·t + a·t²)."""
    (t0, t1, t2), (y0, y1, y2) = ts, ys
    a = ((y2 - y1) / (t2 - t1) - (y1 - y0) / (t1 - t0)) / (t2 - t0)
    b = (y1 - y0) / (t1 - t0) - a * (t1 + t0)
    c = y0 - b * t0 - a * t0 * t0
    return c, b, a


@torch.no_grad()
def _measure(model, n: int) -> tuple[int, int]:
    """(trace bytes, attention weights) of one traced run whose sequences are all ``n`` long."""
    from core.trace import Trace
    device = model.device
    ids = torch.full((1, n), min(5, model.cfg.vocab_size - 1), dtype=torch.long, device=device)
    trace = Trace()
    was = model.training
    model.eval()
    try:
        if model.cfg.kind == "encoder-decoder":
            model(ids, ids, trace=trace)
        else:
            model(ids, trace=trace)
    finally:
        model.train(was)
    trace.materialize()
    weights = sum(t.numel() for k, t in trace.tensors.items() if k.endswith(".weights"))
    return trace.nbytes(), weights


def profile(model) -> dict:
    """``{"trace": (c, b, a), "weights": (c, b, a)}``: trace bytes and attention weights as polynomials in T, measured
    on three short runs (kept on the model)."""
    cached = getattr(model, "_budget_profile", None)
    if cached is not None:
        return cached
    ts = (4, 8, 12) if model.cfg.max_len >= 12 else (1, 2, 3)
    ts = tuple(t for t in ts if t <= model.cfg.max_len)
    runs = [_measure(model, t) for t in ts]
    if len(ts) < 3:  # a model of one or two positions: nothing to bound
        prof = {"trace": (0, 0, 0), "weights": (0, 0, 0)}
    else:
        prof = {"trace": _poly(ts, [r[0] for r in runs]), "weights": _poly(ts, [r[1] for r in runs])}
    model._budget_profile = prof
    return prof


def _at(coef, t):
    c, b, a = coef
    return c + b * t + a * t * t


def estimate(model, t: int, token_bytes: int = TYPICAL_TOKEN_BYTES) -> dict:
    """Bytes of a full trace and of the JSON/CSV exports of a run whose sequences are ``t`` long."""
    prof = profile(model)
    weights = _at(prof["weights"], t)
    return {"trace": int(_at(prof["trace"], t)), "weights": int(weights),
            "json": int(weights * JSON_VALUE_BYTES), "csv": int(weights * (CSV_ROW_BYTES + 2 * token_bytes))}


def token_limit(model) -> int:
    """The most positions the app lets ``model`` read: at most ``cfg.max_len``, and the largest length whose trace
    fits TRACE_BYTES and whose exports fit EXPORT_BYTES."""
    hi = model.cfg.max_len
    fits = lambda t: (lambda e: e["trace"] <= TRACE_BYTES and max(e["json"], e["csv"]) <= EXPORT_BYTES)(  # noqa: E731
        estimate(model, t))
    if fits(hi):
        return hi
    lo = 1
    while lo < hi:  # largest t that fits (the estimates grow with t)
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return max(lo, 2)


def limit_positions(model) -> int:
    """Make ``model`` read at most :func:`token_limit` positions (``model.max_positions``); returns the limit."""
    limit = token_limit(model)
    model.position_limit = limit
    return limit


def export_bytes(weights: int, q_token_bytes: float, k_token_bytes: float) -> dict:
    """Upper bound of the JSON and CSV exports of ``weights`` attention weights whose rows carry tokens of these
    mean UTF-8 lengths."""
    return {"json": int(weights * JSON_VALUE_BYTES), "csv": int(weights * (CSV_ROW_BYTES + q_token_bytes + k_token_bytes))}


def max_positions(model) -> int:
    """Positions ``model`` reads now: its ``max_positions`` (a Transformer, limited or not), else ``cfg.max_len``."""
    return getattr(model, "max_positions", None) or model.cfg.max_len
