"""Computations on a Trace that the pages show: rollout, top-k links, one row of attention by hand, and that row read
as one update of a modern Hopfield network (Ramsauer et al. 2020)."""
from __future__ import annotations

import math

import torch


def rollout(weights: torch.Tensor, residual: float = 0.5) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema 2020) over layers ``[L, H, T, T]`` → ``[L, T, T]``.

    Each layer's head-mean attention is mixed with the identity for the residual path,
    ``Â = residual·I + (1 − residual)·A``, rows renormalised, then multiplied through depth:
    row i of layer l says how much of token i's representation there flows from each input token.
    """
    a = weights.float().mean(1)
    eye = torch.eye(a.shape[-1])
    a = residual * eye + (1 - residual) * a
    a = a / a.sum(-1, keepdim=True)
    out, acc = [], torch.eye(a.shape[-1])
    for layer in a:
        acc = layer @ acc
        out.append(acc)
    return torch.stack(out)


def top_k_only(matrix: torch.Tensor, k: int) -> torch.Tensor:
    """Keep each row's k largest entries, zero the rest (for long inputs)."""
    if k <= 0 or k >= matrix.shape[-1]:
        return matrix
    idx = matrix.topk(k, dim=-1).indices
    return torch.zeros_like(matrix).scatter(-1, idx, matrix.gather(-1, idx))


def attention_row(trace, name: str, head: int, query: int, batch: int = 0) -> dict:
    """Everything needed to follow one row of eq. 1 by hand, for attention ``name`` (e.g. ``decoder.0.cross_attn``).

    Returns q, each key k_j, the dot products q·k_j, the scaled scores q·k_j/√d_k, the bias and
    mask added, the softmax weights and the weighted sum of values.
    """
    q = trace[f"{name}.q"][batch, head, query].float()
    k = trace[f"{name}.k"][batch].float()
    v = trace[f"{name}.v"][batch].float()
    n_heads, n_kv = trace[f"{name}.q"].shape[1], k.shape[0]
    kv = head // (n_heads // n_kv)
    k, v = k[kv], v[kv]
    dots = k @ q
    scaled = dots / math.sqrt(q.shape[-1])
    t_k = k.shape[0]
    bias = trace[f"{name}.bias"][0, head, query].float() if f"{name}.bias" in trace else torch.zeros(t_k)
    if f"{name}.mask" in trace:
        m, w = trace[f"{name}.mask"], trace[f"{name}.weights"]
        mask = torch.broadcast_to(m, (w.shape[0], m.shape[1], w.shape[2], w.shape[3]))[batch, 0, query].float()
    else:
        mask = torch.zeros(t_k)
    weights = torch.softmax(scaled + bias + mask, dim=-1)
    return {"q": q, "k": k, "v": v, "dots": dots, "scaled": scaled, "bias": bias, "mask": mask,
            "weights": weights, "output": weights @ v, "traced_weights": trace[f"{name}.weights"][batch, head, query]}


def softmax_sharpness(scores: torch.Tensor) -> dict:
    """How peaked ``softmax(scores)`` is, along the last dimension (keys at −∞ get weight exactly 0): the weights,
    their entropy in nats, the largest weight, and the size of the softmax's gradient, the Frobenius norm of
    ∂w/∂s = diag(w) − w wᵀ, which falls to 0 as one weight nears 1 (why Vaswani et al. 2017, sec. 3.2.1, scale
    the dot products by 1/√d_k: large scores leave softmax "in regions where it has extremely small gradients")."""
    w = torch.softmax(scores.double(), dim=-1)
    entropy = -torch.where(w > 0, w * torch.log(w), torch.zeros_like(w)).sum(-1)
    jacobian = torch.diag_embed(w) - w.unsqueeze(-1) * w.unsqueeze(-2)
    return {"weights": w, "entropy": entropy, "max_weight": w.max(-1).values,
            "grad_norm": jacobian.flatten(-2).norm(dim=-1)}


def scaling_experiment(d_ks, n_keys: int = 16, rows: int = 256, seed: int = 0) -> dict:
    """Why the 1/√d_k (Vaswani et al. 2017, footnote 4), measured: for each d_k, ``rows`` queries and ``n_keys``
    keys with independent components of mean 0 and variance 1; q·k is then a sum of d_k such products, of variance
    d_k, and q·k/√d_k of variance 1. Returns, per d_k (lists in the order of ``d_ks``): the measured variance of the
    dot products unscaled and scaled, and the mean over rows of the softmax's largest weight, entropy and gradient
    norm (:func:`softmax_sharpness`) for each."""
    g = torch.Generator().manual_seed(seed)
    out = {key: [] for key in ("var_raw", "var_scaled", "max_raw", "max_scaled", "entropy_raw", "entropy_scaled",
                               "grad_raw", "grad_scaled")}
    for d_k in d_ks:
        q = torch.randn(rows, 1, d_k, generator=g)
        k = torch.randn(rows, n_keys, d_k, generator=g)
        dots = (k @ q.transpose(1, 2)).squeeze(-1).double()
        for kind, s in (("raw", dots), ("scaled", dots / math.sqrt(d_k))):
            sharp = softmax_sharpness(s)
            out[f"var_{kind}"].append(float(s.var()))
            out[f"max_{kind}"].append(float(sharp["max_weight"].mean()))
            out[f"entropy_{kind}"].append(float(sharp["entropy"].mean()))
            out[f"grad_{kind}"].append(float(sharp["grad_norm"].mean()))
    return out


def asymmetry(weights: torch.Tensor) -> dict:
    """How far a square self-attention map ``[T, T]`` is from symmetric: A[i, j] (how much i reads j) and
    A[j, i] come from different projections (q_i·k_j against q_j·k_i, W_Q ≠ W_K) and each row is normalised on
    its own. Returns the largest |A[i, j] − A[j, i]| and its pair (i, j) with A[i, j] the larger, and
    ‖A − Aᵀ‖ / ‖A + Aᵀ‖ (0: symmetric; 1: every link one-way)."""
    a = weights.double()
    diff = a - a.T
    i, j = divmod(int(diff.argmax()), a.shape[1])
    return {"max_diff": float(diff[i, j]), "pair": (i, j),
            "relative": float(diff.norm() / (a + a.T).norm().clamp_min(1e-300))}


def hopfield_energy(patterns: torch.Tensor, state: torch.Tensor, beta: float) -> torch.Tensor:
    """The energy of a modern continuous Hopfield network (Ramsauer et al. 2020, "Hopfield Networks is All You
    Need", eq. 2) whose stored patterns are the rows k_j of ``patterns`` ``[N, d]``, at ``state`` ξ ``[..., d]``:
    E(ξ) = −lse(β, Kξ) + ½ ξᵀξ + β⁻¹ log N + ½ M², with lse(β, z) = β⁻¹ log Σⱼ exp(β zⱼ) and M the largest ‖k_j‖.
    The two constants keep E ≥ 0; they change no difference between two states. In float64."""
    k, xi = patterns.double(), state.double()
    n = k.shape[0]
    lse = torch.logsumexp(beta * (xi @ k.T), dim=-1) / beta
    return -lse + 0.5 * (xi * xi).sum(-1) + math.log(n) / beta + 0.5 * float(k.norm(dim=-1).max()) ** 2


def hopfield_updates(patterns: torch.Tensor, query: torch.Tensor, beta: float, steps: int = 5,
                     visible: torch.Tensor | None = None) -> dict:
    """Ramsauer et al. 2020's update ξ ← Kᵀ softmax(β K ξ), ``steps`` times from ξ = ``query`` ``[d]``. The stored
    patterns K are the rows of ``patterns`` ``[T, d]`` where ``visible`` (bool ``[T]``, default all) is True; the
    others are not stored and get weight 0. Started at a head's query q with its keys and β = 1/√d_k, the first
    softmax is that head's attention row (without a mask or an ALiBi bias: give ``visible`` for the mask).

    Returns, in float64: ``weights`` ``[steps, T]`` (row s: the softmax of update s + 1), ``states``
    ``[steps + 1, d]`` (the query first), ``energy`` ``[steps + 1]`` (:func:`hopfield_energy` of each state; it
    never rises, Ramsauer et al.'s Theorem 1), ``keys_90`` (per update, how many patterns hold 90 % of the weight)
    and ``nearest``: the index of the pattern with the largest k·ξ for the last state."""
    if steps < 1:
        raise ValueError(f"steps must be 1 or more, got {steps}")
    if not beta > 0:
        raise ValueError(f"beta must be positive, got {beta}")
    k, xi = patterns.double(), query.double()
    keep = torch.ones(k.shape[0], dtype=torch.bool) if visible is None else visible.bool()
    if not bool(keep.any()):
        raise ValueError("no pattern is stored: every key is masked")
    stored = k[keep]
    weights, states = [], [xi]
    for _ in range(steps):
        w = torch.softmax(beta * (stored @ xi), dim=-1)
        xi = stored.T @ w
        full = torch.zeros(k.shape[0], dtype=torch.float64)
        full[keep] = w
        weights.append(full)
        states.append(xi)
    weights, states = torch.stack(weights), torch.stack(states)
    ordered = weights.sort(dim=-1, descending=True).values.cumsum(-1)
    keys_90 = [int((row < 0.9 - 1e-12).sum()) + 1 for row in ordered]
    scores = (k @ xi).masked_fill(~keep, float("-inf"))
    return {"weights": weights, "states": states, "energy": hopfield_energy(stored, states, beta),
            "keys_90": keys_90, "nearest": int(scores.argmax())}
