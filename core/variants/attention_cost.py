"""What attention costs as the sequence grows: the explicit softmax(QKᵀ/√d)V (a T×T matrix), PyTorch's fused
``scaled_dot_product_attention``, a chunked sliding window and linear attention — and, for the comparison the
original paper makes (its table 1), an LSTM layer of the same width — each timed (median of a few runs)
and its peak allocator memory read from the profiler, at each T; and a least-squares fit of time ∝ T^k. The same
table's "maximum path length" is measured too: :func:`path_length` stacks random layers of each kind and reads from
the Jacobian how many it takes before the last position depends on the first.

Used by the Efficient attention page (a live measurement at small T) and ``bench/bench_attention_cost.py`` (the full
sweep). The attention forms themselves are in :mod:`core.variants.efficient`.
"""
from __future__ import annotations

import math
import os
import statistics
import sys
import time
from dataclasses import dataclass

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


# ----------------------------------------------------------------------- maximum path length (table 1)
PATH_KINDS = {"attention": "O(1)", "window": "O(n/r)", "conv": "O(n/k)", "dilated": "O(log_k(n))", "lstm": "O(n)"}
# Vaswani et al. 2017, table 1: self-attention, self-attention restricted to a neighbourhood of radius r, convolution
# of kernel k (contiguous; dilated), recurrent → the maximum path length between any two of n positions


@dataclass
class PathLength:
    """How many layers of one kind it takes before output ``n − 1`` depends on input 0 (:func:`path_length`)."""
    kind: str
    n: int
    layers: int  # the smallest L with ∂y⁽ᴸ⁾_{n−1} / ∂x_0 ≠ 0
    reach: list[int]  # after layer 1, 2, … layers: how many outputs depend on x_0 (they are positions 0 … reach − 1)


def path_weights(kind: str, index: int, *, width: int = 4, kernel: int = 3,
                 gen: torch.Generator | None = None) -> dict[str, torch.Tensor]:
    """Random float64 weights, N(0, 1/fan-in), for layer ``index`` of a :func:`path_length` stack, named as torch's
    own module names them (``torch.nn.MultiheadAttention`` of one head, ``Conv1d(width, width, kernel)``,
    ``LSTMCell(width, width)``), so a test can load them into that module. Drawn from ``gen``, not the global RNG
    (Streamlit sessions share it)."""
    gen = gen or torch.Generator().manual_seed(0)
    if kind in ("attention", "window"):
        shapes = {"in_proj_weight": (3 * width, width), "in_proj_bias": (3 * width,),
                  "out_proj.weight": (width, width), "out_proj.bias": (width,)}
    elif kind in ("conv", "dilated"):
        shapes = {"weight": (width, width, kernel), "bias": (width,)}
    elif kind == "lstm":
        shapes = {"weight_ih": (4 * width, width), "weight_hh": (4 * width, width), "bias_ih": (4 * width,),
                  "bias_hh": (4 * width,)}
    else:
        raise ValueError(f"unknown layer kind {kind!r}; choose from {', '.join(PATH_KINDS)}")
    return {name: torch.randn(shape, generator=gen, dtype=torch.float64)
            / math.sqrt(math.prod(shape[1:]) if len(shape) > 1 else width) for name, shape in shapes.items()}


def band_attention(x: torch.Tensor, w: dict, radius: int) -> torch.Tensor:
    """One attention head (weights ``w`` of :func:`path_weights`) in which query i reads only keys ``|i − j| ≤
    radius``, computed on the band alone: O(n·r) scores instead of the n × n matrix with −∞ outside. The same
    numbers as ``torch.nn.MultiheadAttention`` with those weights and ``attn_mask=~band(n, radius)``;
    ``radius ≥ n − 1`` is full self-attention. ``x [n, width]`` → ``[n, width]``."""
    n, width = x.shape
    scale = 1 / math.sqrt(width)
    q, k, v = (x @ w["in_proj_weight"].T + w["in_proj_bias"]).chunk(3, dim=-1)
    if radius >= n - 1:  # every key: the plain n × n product
        weights = torch.softmax(q @ k.T * scale, dim=-1)
        return weights @ v @ w["out_proj.weight"].T + w["out_proj.bias"]
    keys = torch.arange(n)[:, None] + torch.arange(-radius, radius + 1)[None]  # [n, 2r + 1]: the keys query i reads
    inside = (keys >= 0) & (keys < n)
    keys = keys.clamp(0, n - 1)
    scores = (q[:, None] * k[keys]).sum(-1) * scale
    weights = torch.softmax(scores.masked_fill(~inside, float("-inf")), dim=-1)
    return (weights[..., None] * v[keys]).sum(1) @ w["out_proj.weight"].T + w["out_proj.bias"]


def causal_conv(x: torch.Tensor, w: dict, dilation: int = 1) -> torch.Tensor:
    """``tanh`` of a Conv1d (weights ``w`` of :func:`path_weights`) padded on the left only, as in WaveNet: output t
    reads inputs t − (k − 1)·dilation, …, t − dilation, t. ``x [n, width]`` → ``[n, width]``."""
    pad = (w["weight"].shape[-1] - 1) * dilation
    return torch.tanh(F.conv1d(F.pad(x.T, (pad, 0)), w["weight"], w["bias"], dilation=dilation)).T


def lstm_sweep(w: dict, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor):
    """One step of an LSTM (weights ``w`` of :func:`path_weights`, torch's gate order i, f, g, o) at every position
    at once: position t reads its input ``x[t]`` and the state that the previous sweep left at position t − 1
    (zeros before position 0). ``x, h, c [n, width]``; returns the new ``(h, c)``. After n sweeps from zero states
    ``h`` is exactly the LSTM run left to right (sweep s finishes position s − 1), so the unrolled LSTM is a stack
    of n such steps (checked against ``torch.nn.LSTM`` in the tests)."""
    def shift(z):
        return torch.cat([torch.zeros_like(z[:1]), z[:-1]])
    gates = x @ w["weight_ih"].T + w["bias_ih"] + shift(h) @ w["weight_hh"].T + w["bias_hh"]
    i, f, g, o = gates.chunk(4, dim=-1)
    c = torch.sigmoid(f) * shift(c) + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def path_length(kind: str, n: int, *, radius: int = 2, kernel: int = 3, width: int = 4, seed: int = 0,
                max_layers: int | None = None) -> PathLength:
    """Layers of a random stack of ``kind`` (:data:`PATH_KINDS`) before output ``n − 1`` depends on input 0, read
    from the Jacobian (Vaswani et al. 2017, table 1, "maximum path length").

    The stacks (random weights, :func:`path_weights`, new ones in every layer): full self-attention, one head, with
    a residual sum and a LayerNorm after it as in the Transformer; the same with query i seeing only keys
    ``|i − j| ≤ radius`` (:func:`band_attention`); a causal convolution of kernel ``kernel``
    (:func:`causal_conv`); the same with dilation ``kernel**l`` in layer l (0-based, as in WaveNet); an LSTM, whose
    "layers" are the steps of its recurrence (:func:`lstm_sweep`, one set of weights for every step).

    By the chain rule the Jacobian of L layers is the product of one Jacobian per layer, so output i depends on x_0
    after layer l iff it depends on some output that did after layer l − 1 (for random weights no sum of non-zero
    terms cancels exactly). Each layer is read as one Jacobian-vector product
    (``torch.autograd.functional.jvp``, autograd's double-backward trick) whose vector is random on exactly those
    positions (for the LSTM on x_0 as well, which every step reads again); the positions with a non-zero result are
    the new reach. A fresh vector per layer keeps the numbers near 1 however deep the stack (one vector carried
    through hundreds of random layers underflows); exact zeros come only from positions a layer cannot read (−∞ in
    the softmax, the convolution's zero padding, the state before position 0). Returns the count and the reach
    after every layer; ``max_layers`` (default 2n) bounds the search.
    """
    from torch.autograd.functional import jvp
    if n < 2:
        raise ValueError(f"a path needs two positions; got n = {n}")
    if kind == "window" and radius < 1:
        raise ValueError(f"a window of radius {radius} never reaches another position; use radius ≥ 1")
    if kind in ("conv", "dilated") and kernel < 2:
        raise ValueError(f"a kernel of size {kernel} never reaches another position; use kernel ≥ 2")
    if kind not in PATH_KINDS:
        raise ValueError(f"unknown layer kind {kind!r}; choose from {', '.join(PATH_KINDS)}")
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, width, generator=gen, dtype=torch.float64)
    h = c = torch.zeros(n, width, dtype=torch.float64)
    lstm = path_weights("lstm", 0, width=width, gen=gen) if kind == "lstm" else None
    # what depends on x_0 before the first layer: input position 0 itself; for the LSTM no state yet
    reached = torch.arange(n) == (0 if lstm is None else -1)
    first = torch.arange(n) == 0
    reach = []

    def vector(on: torch.Tensor) -> torch.Tensor:
        return torch.randn(n, width, generator=gen, dtype=torch.float64) * on[:, None]
    for index in range(max_layers or 2 * n):
        if lstm is not None:
            (h, c), (out, _) = jvp(lambda x_, h_, c_: lstm_sweep(lstm, x_, h_, c_), (x, h, c),
                                   (vector(first), vector(reached), vector(reached)))
        else:
            w = path_weights(kind, index, width=width, kernel=kernel, gen=gen)
            if kind in ("attention", "window"):
                # the residual sum and a LayerNorm, as in the Transformer: without it the stream grows layer by layer
                # until the softmax saturates to exact 0s and 1s and keys in the window no longer count
                def layer(z):
                    return F.layer_norm(z + band_attention(z, w, n - 1 if kind == "attention" else radius), (width,))
            else:
                def layer(z):
                    return causal_conv(z, w, kernel ** index if kind == "dilated" else 1)
            x, out = jvp(layer, x, vector(reached))
        reached = out.ne(0).any(-1)
        reach.append(int(reached.sum()))
        if reached[-1]:
            return PathLength(kind, n, index + 1, reach)
    raise RuntimeError(f"{kind}: output {n - 1} still does not depend on input 0 after {len(reach)} layers")


def path_formula(kind: str, n: int, *, radius: int = 2, kernel: int = 3) -> int:
    """The exact count :func:`path_length` measures, from the layers' shapes: 1 for full self-attention,
    ⌈(n − 1)/r⌉ for a window of radius r, ⌈(n − 1)/(k − 1)⌉ for a causal convolution, the smallest L with k^L ≥ n
    for the dilated one (L layers reach back k^L − 1 positions), and n steps for a recurrence (n − 1 hops from one
    position to the next, after the step that reads x_0)."""
    if kind == "attention":
        return 1
    if kind == "window":
        return -(-(n - 1) // radius)
    if kind == "conv":
        return -(-(n - 1) // (kernel - 1))
    if kind == "dilated":
        layers = 0
        while kernel ** layers < n:
            layers += 1
        return layers
    if kind == "lstm":
        return n
    raise ValueError(f"unknown layer kind {kind!r}; choose from {', '.join(PATH_KINDS)}")
