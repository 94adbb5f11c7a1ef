"""What attention costs as the sequence grows: the explicit softmax(QKᵀ/√d)V (a T×T matrix), PyTorch's fused
``scaled_dot_product_attention``, a chunked sliding window and linear attention — and, for the comparison the
original paper makes (its table 1), an LSTM layer of the same width — each timed (median of a few runs)
and its peak allocator memory read from the profiler, at each T; and a least-squares fit of time ∝ T^k.

Used by the Efficient attention page (a live measurement at small T) and ``bench/bench_attention_cost.py`` (the full
sweep). The attention forms themselves are in :mod:`core.variants.efficient`.
"""
from __future__ import annotations

import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from .efficient import linear_attention, sliding_window_chunked, softmax_attention

METHODS = {
    "explicit": "softmax(QKᵀ/√d)V with the T×T matrix materialised",
    "sdpa": "torch.nn.functional.scaled_dot_product_attention (fused)",
    "window": "sliding window, chunked O(T·w)",
    "linear": "linear attention, elu+1 features, O(T)",
    "lstm": "no attention: an LSTM layer as wide as the heads together, O(T·d²) in T sequential steps",
}


def _lstm(q: torch.Tensor) -> torch.Tensor:
    """The recurrent layer the attention forms replace (Vaswani et al. 2017, table 1: O(n·d²) per layer, O(n)
    sequential operations), on the queries laid out as one sequence of ``heads × d`` features."""
    b, h, t, d = q.shape
    if _LSTMS.get(h * d) is None:
        gen_state = torch.random.get_rng_state()
        torch.manual_seed(0)
        _LSTMS[h * d] = torch.nn.LSTM(h * d, h * d, batch_first=True)
        torch.random.set_rng_state(gen_state)
    return _LSTMS[h * d](q.transpose(1, 2).reshape(b, t, h * d))[0]


_LSTMS: dict = {}  # one layer per width, made once


def _method(name: str, window: int):
    if name == "explicit":
        return lambda q, k, v: softmax_attention(q, k, v)[1]
    if name == "sdpa":
        return lambda q, k, v: F.scaled_dot_product_attention(q, k, v)
    if name == "window":
        return lambda q, k, v: sliding_window_chunked(q, k, v, window)
    if name == "linear":
        return linear_attention
    if name == "lstm":
        return lambda q, k, v: _lstm(q)
    raise ValueError(f"unknown method {name!r}; choose from {', '.join(METHODS)}")


def peak_allocated(fn) -> int:
    """Peak bytes live in torch's CPU allocator during ``fn()`` above what was live before it, read from
    the profiler's allocation events (``profile_memory=True``: every alloc/free through c10, intra-op
    temporaries included; Python objects and the allocator's cached/freed pages are not counted)."""
    from torch._C._profiler import _EventType
    from torch.profiler import ProfilerActivity, profile
    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)  # the profiler backend prints start/stop lines on the C stderr
    try:
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            fn()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
    allocs = []

    def walk(node):
        if node.tag == _EventType.Allocation:
            allocs.append((node.start_time_ns, node.extra_fields.alloc_size))
        for child in node.children:
            walk(child)
    for root in prof.profiler.kineto_results.experimental_event_tree():
        walk(root)
    live = peak = 0
    for _, size in sorted(allocs):
        live += size
        peak = max(peak, live)
    return int(peak)


def explicit_bytes(t: int, batch: int, heads: int, itemsize: int = 4) -> int:
    """Bytes of the two B·H·T×T matrices the explicit path holds at once (scores and weights)."""
    return 2 * batch * heads * t * t * itemsize


def fit_exponent(ts, times) -> float | None:
    """Least-squares slope of log(time) against log(T): time ∝ T^slope."""
    pts = [(math.log(t), math.log(s)) for t, s in zip(ts, times) if s and s > 0]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx if sxx else None


def measure_cost(sizes=(64, 128, 256, 512, 1024, 2048, 4096, 8192), *, batch: int = 1, heads: int = 4, d: int = 32,
                 window: int = 64, reps: int = 5, budget_s: float = 1.5, max_explicit_bytes: float = 2e9,
                 methods=tuple(METHODS), memory: bool = True, progress=None) -> dict:
    """Time (median of up to ``reps`` runs after one warm-up, fewer once a size has used ``budget_s``) and
    peak allocator memory (:func:`peak_allocated`) of each method at each sequence length T.

    Returns ``{"rows": [{method, T, time_s, peak_bytes, skipped}], "exponents": {method: {all, large}}}``;
    ``large`` fits T ≥ 512 only (small T is dominated by fixed per-call overhead).
    """
    rows = []
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for t in sizes:
            q, k, v = (torch.randn(batch, heads, t, d, generator=gen) for _ in range(3))
            for name in methods:
                row = {"method": name, "T": t, "time_s": None, "peak_bytes": None, "skipped": None}
                if name == "explicit" and explicit_bytes(t, batch, heads) > max_explicit_bytes:
                    row["skipped"] = (f"needs {explicit_bytes(t, batch, heads) / 1e9:.2f} GB for the T×T scores "
                                      f"and weights (> {max_explicit_bytes / 1e9:.1f} GB limit)")
                    rows.append(row)
                    continue
                fn = _method(name, window)
                fn(q, k, v)  # warm-up
                times, start = [], time.perf_counter()
                while len(times) < reps and (len(times) < 2 or time.perf_counter() - start < budget_s):
                    t0 = time.perf_counter()
                    fn(q, k, v)
                    times.append(time.perf_counter() - t0)
                row["time_s"] = statistics.median(times)
                row["reps"] = len(times)
                if memory:
                    row["peak_bytes"] = peak_allocated(lambda: fn(q, k, v))
                rows.append(row)
                if progress:
                    progress(row)
    exponents = {}
    for name in methods:
        done = [(r["T"], r["time_s"]) for r in rows if r["method"] == name and r["time_s"]]
        large = [(t, s) for t, s in done if t >= 512]
        exponents[name] = {"all": fit_exponent(*zip(*done)) if len(done) > 1 else None,
                           "large": fit_exponent(*zip(*large)) if len(large) > 1 else None}
    return {"rows": rows, "exponents": exponents}


def cost_series(rows, key: str = "time_s") -> tuple[list[int], dict[str, list[float]]]:
    """Rows of :func:`measure_cost` as plot series: the sizes and, per method, the values (NaN = skipped)."""
    sizes = sorted({r["T"] for r in rows})
    series = {}
    for r in rows:
        series.setdefault(r["method"], {})[r["T"]] = r.get(key)
    return sizes, {m: [float("nan") if vals.get(t) is None else float(vals[t]) for t in sizes]
                   for m, vals in series.items()}
