"""Efficient attention: the approximations and sparsity patterns that replace the T×T softmax.

All functions take ``q [..., Tq, d]``, ``k [..., Tk, d]``, ``v [..., Tk, d_v]`` (any leading batch /
head dimensions, the same for q, k and v) and compare against exact softmax attention

    A = softmax(QKᵀ/√d (+ causal mask)),   out = A V                        (Vaswani et al. 2017)

- **Performer / FAVOR+** (Choromanski et al. 2021): positive random features
  ``φ(x) = exp(ωᵢᵀx − ‖x‖²/2)/√m`` with ``ωᵢ ~ N(0, I_d)`` (optionally orthogonal) satisfy
  ``E[φ(x)ᵀφ(y)] = exp(xᵀy)``; with x = q/d^¼, y = k/d^¼ that is the softmax kernel exp(q·k/√d).
  ``out ≈ φ(Q)(φ(K)ᵀV) / φ(Q)(φ(K)ᵀ1)`` costs O(T·m·d) instead of O(T²·d).
- **Trigonometric features** (Random Feature Attention, Peng et al. 2021; the Performer paper's "trig" baseline):
  ``φ(x) = exp(‖x‖²/2)/√m · [sin(Wx), cos(Wx)]`` is also unbiased for exp(xᵀy), but its entries have both signs,
  so an estimated normaliser ``φ(q)ᵀΣφ(k)`` can be ≤ 0 (:func:`trig_features`, :func:`normaliser_ratio`).
- **Linear attention** (Katharopoulos et al. 2020): ``φ(x) = elu(x) + 1``,
  ``out_i = φ(q_i)ᵀ(Σ_j φ(k_j)v_jᵀ) / φ(q_i)ᵀ(Σ_j φ(k_j))`` — O(T) memory through ``φ(K)ᵀV``; causal and
  unnormalised, it is a fast-weight memory written one outer product per token (:func:`fast_weights`).
- **Reformer LSH attention** (Kitaev et al. 2020): ``h(x) = argmax([xR; −xR])`` with a random
  ``R ∈ ℝ^{d×b/2}``; a query attends only to keys in its own bucket.
- **Longformer sliding window** (Beltagy et al. 2020): query i sees key j iff ``|i − j| ≤ w``;
  global tokens see every token and are seen by every token.
- **FlashAttention** (Dao et al. 2022): *exact* attention computed tile by tile. Each block of
  queries walks the key blocks keeping a running maximum m, a running sum ℓ = Σ exp(s − m) and an
  unnormalised output; when a block raises the maximum the old sums are rescaled by exp(m_old − m_new)
  (the online softmax). No T×T matrix exists, only one block of scores at a time; with a causal mask
  the blocks wholly above the diagonal are never computed.
- **α-entmax** (Peters et al. 2019; Correia et al. 2019): ``[(α − 1)z − τ]_+^(1/(α−1))``, softmax at α = 1 and
  sparsemax at α = 2; above 1 it gives some keys exactly zero weight (:func:`entmax`, by bisection on τ).

How each form's time and memory grow with T is measured by :mod:`core.variants.attention_cost`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..masks import band

NEG_INF = float("-inf")


# --------------------------------------------------------------------------------------------- exact
def causal_allowed(t_q: int, t_k: int, device=None) -> torch.Tensor:
    """Bool ``[Tq, Tk]``: key j is visible from query i iff ``j ≤ i + (Tk − Tq)`` (KV-cache alignment)."""
    i = torch.arange(t_q, device=device)[:, None]
    j = torch.arange(t_k, device=device)[None, :]
    return j <= i + (t_k - t_q)


def softmax_attention(q, k, v, *, causal: bool = False, allowed: torch.Tensor | None = None):
    """Explicit attention ``A = softmax(QKᵀ/√d + M)``, ``out = AV``; returns ``(weights, out)``.

    ``allowed`` is a bool mask broadcastable to ``[..., Tq, Tk]`` (False → −∞ in M). Materialises the
    T×T matrix twice (scores and weights): O(T²) memory.
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        allowed = causal_allowed(q.shape[-2], k.shape[-2], q.device) if allowed is None else \
            allowed & causal_allowed(q.shape[-2], k.shape[-2], q.device)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, NEG_INF)
    weights = torch.softmax(scores, dim=-1)
    return weights, weights @ v


def mass_kept(full_weights: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Share of each query's full softmax attention that falls on the allowed keys: ``Σ_{j allowed} A_ij``."""
    return (full_weights * allowed.to(full_weights.dtype)).sum(-1)


def head_qkv(trace, kind: str, layer: int, head: int, batch: int = 0):
    """``q [Tq, d]``, ``k [Tk, d]``, ``v [Tk, d]`` of one head of a traced attention (GQA: the head's kv group)."""
    from ..trace import KIND_NAMES
    name = KIND_NAMES[kind].format(layer)
    q, k, v = trace[f"{name}.q"], trace[f"{name}.k"], trace[f"{name}.v"]
    g = head // (q.shape[1] // k.shape[1])
    return q[batch, head].float(), k[batch, g].float(), v[batch, g].float()


# ----------------------------------------------------------------------------------- Performer FAVOR+
@dataclass
class FavorResult:
    """What :func:`favor_attention` returns: the implied weights ``[..., Tq, Tk]``, the output
    ``[..., Tq, d_v]`` computed without them, and the random features ``[m, d]``."""
    weights: torch.Tensor  # [..., Tq, Tk] the implied attention matrix φ(q_i)ᵀφ(k_j) / Σ_l φ(q_i)ᵀφ(k_l)
    out: torch.Tensor  # [..., Tq, d_v] computed the linear way, never through `weights`
    projection: torch.Tensor  # [m, d] the random features ω


def random_projection(d: int, n_features: int, seed: int = 0, *, orthogonal: bool = True,
                      dtype=torch.float32) -> torch.Tensor:
    """``[m, d]`` rows ``ωᵢ ~ N(0, I_d)``. Orthogonal: blocks of d mutually orthogonal directions (QR of a
    Gaussian matrix) with norms redrawn from the χ_d distribution of ‖N(0, I_d)‖ — each row is still
    marginally N(0, I_d), so the estimator stays unbiased, with lower variance (FAVOR+)."""
    gen = torch.Generator().manual_seed(int(seed))
    if not orthogonal:
        return torch.randn(n_features, d, generator=gen, dtype=torch.float64).to(dtype)
    blocks = []
    for _ in range(math.ceil(n_features / d)):
        qmat, r = torch.linalg.qr(torch.randn(d, d, generator=gen, dtype=torch.float64))
        blocks.append((qmat * torch.sign(torch.diagonal(r))).T)  # sign fix: Haar-distributed
    directions = torch.cat(blocks)[:n_features]
    norms = torch.randn(n_features, d, generator=gen, dtype=torch.float64).norm(dim=-1, keepdim=True)
    return (directions * norms).to(dtype)


def performer_features(x: torch.Tensor, projection: torch.Tensor, is_query: bool | None = None) -> torch.Tensor:
    """Positive random features ``φ(x) = exp(ωᵀx − ‖x‖²/2) / √m`` → ``[..., T, m]``.

    ``E_ω[φ(x)ᵀφ(y)] = exp(xᵀy)`` (Choromanski et al., Lemma 1). For numerical safety the exponent
    may be shifted: ``is_query=True`` subtracts each row's max (cancels in the row normalisation),
    ``False`` subtracts one max over all keys (a common factor, cancels too); ``None`` keeps the
    exact unbiased features.
    """
    expo = performer_log_features(x, projection)
    if is_query is True:
        expo = expo - expo.amax(-1, keepdim=True).detach()
    elif is_query is False:
        expo = expo - expo.amax(dim=(-2, -1), keepdim=True).detach()
    return torch.exp(expo)


def performer_log_features(x: torch.Tensor, projection: torch.Tensor) -> torch.Tensor:
    """``log φ(x) = ωᵀx − ‖x‖²/2 − ½·log m`` (never overflows)."""
    wx = x @ projection.T.to(x.dtype)
    return wx - (x * x).sum(-1, keepdim=True) / 2 - 0.5 * math.log(projection.shape[0])


def trig_features(x: torch.Tensor, projection: torch.Tensor, is_query: bool | None = None) -> torch.Tensor:
    """Trigonometric random features ``φ(x) = exp(‖x‖²/2)/√m · [sin(Wx), cos(Wx)]`` → ``[..., T, 2m]``
    (W = ``projection``, m rows).

    ``φ(x)ᵀφ(y) = exp((‖x‖² + ‖y‖²)/2) · (1/m) Σᵢ cos(ωᵢᵀ(x − y))`` and ``E[cos(ωᵀu)] = exp(−‖u‖²/2)`` for
    ω ~ N(0, I), so ``E[φ(x)ᵀφ(y)] = exp(xᵀy)``: unbiased like :func:`performer_features`, but a single estimate
    can be negative. Stabilising as there: ``is_query=True`` drops the row's positive factor exp(‖x‖²/2),
    ``False`` divides every key by the largest exp(‖y‖²/2); both cancel in the row normalisation and keep the
    sign. ``None`` keeps the exact unbiased features.
    """
    wx = x @ projection.T.to(x.dtype)
    half = (x * x).sum(-1, keepdim=True) / 2
    if is_query is True:
        half = torch.zeros_like(half)
    elif is_query is False:
        half = half - half.amax(dim=(-2, -1), keepdim=True)
    return torch.exp(half) / math.sqrt(projection.shape[0]) * torch.cat([torch.sin(wx), torch.cos(wx)], -1)


FEATURE_KINDS = {"positive": performer_features, "trig": trig_features}


def favor_attention(q, k, v, n_features: int = 256, seed: int = 0, causal: bool = False, *,
                    orthogonal: bool = True, features: str = "positive",
                    projection: torch.Tensor | None = None, linear_output: bool = True) -> FavorResult:
    """FAVOR+ approximation of ``softmax(QKᵀ/√d)V`` with ``m = n_features`` positive random features.

    With x = q/d^¼, y = k/d^¼:  ``out_i = φ(x_i)ᵀ Σ_j φ(y_j)v_jᵀ / φ(x_i)ᵀ Σ_j φ(y_j)`` (prefix sums
    over j ≤ i when causal). Numerator and denominator are unbiased for the exact ones and converge
    as m → ∞, so the approximation becomes exact. ``features="trig"`` uses :func:`trig_features` on the same
    m random vectors ω instead (2m numbers per token); its rows can have a normaliser ≤ 0, and are left so.
    ``projection`` ([m, d]) replaces the ω that ``n_features``, ``seed`` and ``orthogonal`` would draw.
    ``linear_output=False`` skips the linear-time output (then ``out = weights @ v``), for callers that read the
    weights only: with causal prefix sums it held a ``[T, m, d_v]`` tensor per draw.
    """
    if features not in FEATURE_KINDS:
        raise ValueError(f"features must be one of {sorted(FEATURE_KINDS)}, not {features!r}")
    phi = FEATURE_KINDS[features]
    d = q.shape[-1]
    proj = (random_projection(d, n_features, seed, orthogonal=orthogonal, dtype=q.dtype) if projection is None
            else projection.to(q.dtype)).to(q.device)
    scale = d ** -0.25
    qf = phi(q * scale, proj, is_query=True)
    kf = phi(k * scale, proj, is_query=False)
    implied = qf @ kf.transpose(-2, -1)
    if causal:
        implied = implied * causal_allowed(q.shape[-2], k.shape[-2], q.device)
    weights = implied / implied.sum(-1, keepdim=True)
    if not linear_output:
        out = weights @ v
    elif causal:
        kv = torch.cumsum(kf[..., :, :, None] * v[..., :, None, :], dim=-3)  # [..., Tk, m, d_v]
        z = torch.cumsum(kf, dim=-2)
        shift = k.shape[-2] - q.shape[-2]
        kv, z = kv[..., shift:, :, :], z[..., shift:, :]
        out = (qf[..., :, None, :] @ kv).squeeze(-2) / (qf * z).sum(-1, keepdim=True)
    else:
        out = (qf @ (kf.transpose(-2, -1) @ v)) / (qf @ kf.sum(-2)[..., :, None])
    bad = ~(torch.isfinite(weights).all(-1) & torch.isfinite(out).all(-1))
    if features == "positive" and bad.any():  # every feature of a row underflowed: redo it in log space
        logits = torch.logsumexp(performer_log_features(q * scale, proj)[..., :, None, :]
                                 + performer_log_features(k * scale, proj)[..., None, :, :], -1)
        if causal:
            logits = logits.masked_fill(~causal_allowed(q.shape[-2], k.shape[-2], q.device), NEG_INF)
        exact_math = torch.softmax(logits, -1)
        weights = torch.where(bad[..., None], exact_math, weights)
        out = torch.where(bad[..., None], exact_math @ v, out)
    return FavorResult(weights, out, proj)


def gap(approx: torch.Tensor, exact: torch.Tensor) -> dict[str, float]:
    """How far an approximation is from the exact result: ``{"mean": mean |a − e|, "max": max |a − e|}``."""
    diff = (approx.float() - exact.float()).abs()
    return {"mean": float(diff.mean()), "max": float(diff.max())}


def favor_reach(q: torch.Tensor, k: torch.Tensor) -> float:
    """``max‖x‖ + max‖y‖`` with ``x = q/d^¼``, ``y = k/d^¼``: the size that sets FAVOR+'s relative error, about
    ``√(e^‖x+y‖² / m)`` per kernel value (Choromanski et al. 2021, Lemma 2)."""
    return float((q.norm(dim=-1).max() + k.norm(dim=-1).max()) / q.shape[-1] ** 0.25)


def favor_error_curve(q, k, feature_counts, seeds=range(4), *, causal: bool = False,
                      orthogonal: bool = True, features: str = "positive") -> list[float]:
    """Mean |A_favor − A_exact| over all entries, averaged over ``seeds``, for each number of features."""
    exact, _ = softmax_attention(q, k, k, causal=causal)
    errors = []
    for m in feature_counts:
        errs = [gap(favor_attention(q, k, k, m, s, causal, orthogonal=orthogonal, features=features,
                                    linear_output=False).weights, exact)["mean"] for s in seeds]
        errors.append(sum(errs) / len(errs))
    return errors


def normaliser_ratio(q, k, projection: torch.Tensor, *, features: str = "positive",
                     causal: bool = False) -> torch.Tensor:
    """``[..., Tq]``: each query's estimated normaliser ``Σ_j φ(x_i)ᵀφ(y_j)`` over the exact ``Σ_j exp(x_i·y_j)``
    (x = q/d^¼, y = k/d^¼, j ≤ i when causal), in float64 and log space, so the ratio is the unstabilised
    estimator's own, whatever the norms; O(T·m) like the estimator. 1 is exact; positive features always give
    > 0; trig features can give ≤ 0 (the row's weights then change sign) or near 0 (they blow up)."""
    if features not in FEATURE_KINDS:
        raise ValueError(f"features must be one of {sorted(FEATURE_KINDS)}, not {features!r}")
    x, y = q.double() * q.shape[-1] ** -0.25, k.double() * q.shape[-1] ** -0.25
    proj = projection.double()
    shift = k.shape[-2] - q.shape[-2]
    logits = x @ y.transpose(-2, -1)
    if causal:
        logits = logits.masked_fill(~causal_allowed(q.shape[-2], k.shape[-2], q.device), NEG_INF)
    log_exact = torch.logsumexp(logits, -1)
    if features == "positive":  # Σ_j φ(y_j) in log space, then the dot product with φ(x_i) in log space too
        log_keys = performer_log_features(y, proj)
        log_keys = (torch.logcumsumexp(log_keys, -2)[..., shift:, :] if causal
                    else torch.logsumexp(log_keys, -2, keepdim=True))
        return torch.exp(torch.logsumexp(performer_log_features(x, proj) + log_keys, -1) - log_exact)
    # φ(x)ᵀφ(y) = exp(‖x‖²/2) · exp(‖y‖²/2) · (1/m) Σ cos(ωᵀ(x − y)): the keys' exponentials are divided by their
    # largest (trig_features(is_query=False)), the query's is kept aside; both are added back in log space
    keys = trig_features(y, proj, is_query=False)
    keys = torch.cumsum(keys, -2)[..., shift:, :] if causal else keys.sum(-2, keepdim=True)
    total = (trig_features(x, proj, is_query=True) * keys).sum(-1)  # its sign is the estimate's sign
    top = (y * y).sum(-1).amax(-1, keepdim=True) / 2
    log_size = torch.log(total.abs()) + (x * x).sum(-1) / 2 + top
    return torch.sign(total) * torch.exp(log_size - log_exact)


TINY = 0.1  # an estimated normaliser below a tenth of the true one: that row's weights come out ≥ 10× too large


def feature_study(q, k, feature_counts, seeds=range(4), *, causal: bool = False,
                  tiny: float = TINY) -> dict[str, dict[str, list[float]]]:
    """Positive and trigonometric features side by side on the same orthogonal ω (one draw per m and seed, as
    :func:`favor_attention` draws them). For each kind and each m, averaged over ``seeds``: ``"error"``, the mean
    |A_approx − A_exact| (the orthogonal line of :func:`favor_error_curve`); ``"nonpositive"``, the share of
    queries whose estimated normaliser is ≤ 0; ``"tiny"``, the share whose :func:`normaliser_ratio` is below
    ``tiny`` (≤ 0 included)."""
    exact, _ = softmax_attention(q, k, k, causal=causal)
    out = {kind: {"error": [], "nonpositive": [], "tiny": []} for kind in FEATURE_KINDS}
    for m in feature_counts:
        sums = {kind: [0.0, 0.0, 0.0] for kind in FEATURE_KINDS}
        for s in seeds:
            proj = random_projection(q.shape[-1], m, s, orthogonal=True, dtype=q.dtype)
            for kind, acc in sums.items():
                acc[0] += gap(favor_attention(q, k, k, causal=causal, features=kind, projection=proj,
                                              linear_output=False).weights, exact)["mean"]
                ratio = normaliser_ratio(q, k, proj, features=kind, causal=causal)
                acc[1] += float((ratio <= 0).double().mean())
                acc[2] += float((ratio < tiny).double().mean())
        for kind, acc in sums.items():
            for name, total in zip(("error", "nonpositive", "tiny"), acc):
                out[kind][name].append(total / len(seeds))
    return out


# ------------------------------------------------------------------------------------ linear attention
def elu_feature(x: torch.Tensor) -> torch.Tensor:
    """``φ(x) = elu(x) + 1`` (positive, Katharopoulos et al. 2020)."""
    return F.elu(x) + 1


def linear_attention(q, k, v, *, causal: bool = False, eps: float = 1e-6) -> torch.Tensor:
    """``out_i = φ(q_i)ᵀ S / φ(q_i)ᵀ z`` with ``S = Σ_j φ(k_j) v_jᵀ`` (d×d_v), ``z = Σ_j φ(k_j)``.

    Never forms the T×T matrix: O(T·d·d_v) time, O(d·d_v + T·d) memory (causal: prefix sums of
    S, O(T·d·d_v)).
    """
    qf, kf = elu_feature(q), elu_feature(k)
    if causal:
        s = torch.cumsum(kf[..., :, :, None] * v[..., :, None, :], dim=-3)
        z = torch.cumsum(kf, dim=-2)
        return (qf[..., :, None, :] @ s).squeeze(-2) / ((qf * z).sum(-1, keepdim=True) + eps)
    return (qf @ (kf.transpose(-2, -1) @ v)) / (qf @ kf.sum(-2)[..., :, None] + eps)


def fast_weights(q, k, v) -> tuple[torch.Tensor, torch.Tensor]:
    """Causal linear attention read as a fast-weight memory (Schmidhuber 1992; Schlag et al. 2021 showed the two
    equal): at token t the memory ``W_t = W_{t−1} + v_t φ(k_t)ᵀ`` (``d_v × d``) is written with one outer product,
    and read with the query, ``out_t = W_t φ(q_t)`` — the *unnormalised* linear attention
    ``Σ_{j≤t} (φ(q_t)·φ(k_j)) v_j``. Returns ``(W [..., T, d_v, d] after each token, out [..., T, d_v])``; dividing
    ``out_t`` by ``φ(q_t)·Σ_{j≤t} φ(k_j)`` gives :func:`linear_attention` (causal)."""
    qf, kf = elu_feature(q), elu_feature(k)
    w = torch.cumsum(v[..., :, :, None] * kf[..., :, None, :], dim=-3)
    return w, (w @ qf[..., :, :, None]).squeeze(-1)


def linear_attention_weights(q, k, *, causal: bool = False) -> torch.Tensor:
    """The quadratic form of linear attention: ``A_ij = φ(q_i)ᵀφ(k_j) / Σ_l φ(q_i)ᵀφ(k_l)`` (for display)."""
    a = elu_feature(q) @ elu_feature(k).transpose(-2, -1)
    if causal:
        a = a * causal_allowed(q.shape[-2], k.shape[-2], q.device)
    return a / a.sum(-1, keepdim=True)


# ------------------------------------------------------------------------------------- Reformer LSH
@dataclass
class LSHResult:
    """What :func:`lsh_attention` returns: the bucket-restricted weights and output, the keys each query may
    see, the buckets per round, the exact weights, and the share of them each query keeps."""
    weights: torch.Tensor  # [..., Tq, Tk] softmax restricted to the allowed (same-bucket) keys
    out: torch.Tensor
    allowed: torch.Tensor  # bool [..., Tq, Tk]
    q_buckets: torch.Tensor  # long [n_rounds, ..., Tq]
    k_buckets: torch.Tensor  # long [n_rounds, ..., Tk]
    full_weights: torch.Tensor  # the exact attention with the same keys (and causal mask)
    kept: torch.Tensor  # [..., Tq] share of the full attention mass each query keeps


def lsh_buckets(x: torch.Tensor, n_buckets: int, seed: int = 0) -> torch.Tensor:
    """Angular LSH (Reformer): ``h(x) = argmax([xR; −xR])``, ``R ∈ ℝ^{d×b/2}`` Gaussian → long ``[..., T]``.

    Vectors pointing in similar directions land in the same bucket with high probability. ``n_buckets``
    must be 1 (everything in bucket 0) or even.
    """
    if n_buckets == 1:
        return torch.zeros(x.shape[:-1], dtype=torch.long, device=x.device)
    if n_buckets < 1 or n_buckets % 2:
        raise ValueError(f"n_buckets must be 1 or even, got {n_buckets}")
    gen = torch.Generator().manual_seed(int(seed))
    rot = torch.randn(x.shape[-1], n_buckets // 2, generator=gen, dtype=torch.float64).to(x.dtype).to(x.device)
    xr = x @ rot
    return torch.cat([xr, -xr], dim=-1).argmax(-1)


def lsh_attention(q, k, v, n_buckets: int, seed: int = 0, *, shared_qk: bool = False, causal: bool = False,
                  n_rounds: int = 1) -> LSHResult:
    """Attention only within LSH buckets: query i sees key j iff ``h_r(q_i) = h_r(k_j)`` for some round r
    (round r uses rotation seed ``seed + r``).

    ``shared_qk`` (Reformer): keys are the unit-normalised queries ``k_j = q_j/‖q_j‖`` and a token does
    not attend to itself unless nothing else shares its bucket. A query whose bucket holds no key falls
    back to its own position (or, for Tq ≠ Tk, its best-scoring key), so every row sums to 1.
    ``kept_i = Σ_{j allowed} softmax(q_i·k/√d)_j``: how much of the full attention the buckets keep.
    """
    if shared_qk:
        k = q / q.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    qb = torch.stack([lsh_buckets(q, n_buckets, seed + r) for r in range(n_rounds)])
    kb = qb if shared_qk else torch.stack([lsh_buckets(k, n_buckets, seed + r) for r in range(n_rounds)])
    allowed = (qb[..., :, None] == kb[..., None, :]).any(0)
    t_q, t_k = q.shape[-2], k.shape[-2]
    causal_ok = causal_allowed(t_q, t_k, q.device) if causal else torch.ones(t_q, t_k, dtype=torch.bool)
    full_weights, _ = softmax_attention(q, k, v, causal=causal)
    if t_q == t_k:
        own = torch.eye(t_q, dtype=torch.bool, device=q.device)
    else:
        own = torch.zeros_like(full_weights, dtype=torch.bool).scatter(-1, full_weights.argmax(-1, keepdim=True), True)
    allowed = allowed & causal_ok
    if shared_qk:
        others = allowed & ~own
        allowed = torch.where(others.any(-1, keepdim=True), others, allowed)
    allowed = allowed | (own & ~allowed.any(-1, keepdim=True))
    weights, out = softmax_attention(q, k, v, allowed=allowed)
    return LSHResult(weights, out, allowed, qb, kb, full_weights, mass_kept(full_weights, allowed))


# ----------------------------------------------------------------------------- Longformer windows
def sliding_window_mask(t_q: int, window: int, global_tokens=(), *, causal: bool = False,
                        t_k: int | None = None) -> torch.Tensor:
    """Bool ``[Tq, Tk]``: ``|i − j| ≤ window``, plus full rows and columns for global tokens, ∧ causal."""
    t_k = t_q if t_k is None else t_k
    allowed = band(t_q, window, t_k)  # the same band as core.masks.window_mask(t_q, window + 1)
    glob = [g for g in global_tokens if 0 <= g < min(t_q, t_k)]
    if glob:
        g = torch.tensor(glob)
        allowed[g, :] = True
        allowed[:, g] = True
    if causal:
        allowed &= causal_allowed(t_q, t_k)
    return allowed


def sliding_window_attention(q, k, v, window: int, global_tokens=(), *, causal: bool = False):
    """Longformer attention through an explicit mask: returns ``(weights, out, allowed)`` (O(T²), for display)."""
    allowed = sliding_window_mask(q.shape[-2], window, global_tokens, causal=causal, t_k=k.shape[-2]).to(q.device)
    weights, out = softmax_attention(q, k, v, allowed=allowed)
    return weights, out, allowed


def sliding_window_chunked(q, k, v, window: int, global_tokens=(), *, causal: bool = False,
                           chunk: int | None = None) -> torch.Tensor:
    """The same output as :func:`sliding_window_attention` in O(T·w) memory (self-attention, Tq = Tk).

    Queries are cut into chunks of c rows; chunk n attends to keys ``[n·c − w, n·c + c + w)``, gathered
    with ``unfold`` (scores ``[T/c, c, c + 2w]``). Global keys are appended to every chunk (masked where
    the band already holds them); global query rows are recomputed in full (O(G·T)).
    """
    *lead, t, d = q.shape
    c = chunk or max(window, 16)
    n = -(-t // c)
    w = window
    qp = F.pad(q, (0, 0, 0, n * c - t))
    kp = F.pad(k, (0, 0, w, n * c - t + w))
    vp = F.pad(v, (0, 0, w, n * c - t + w))
    kc = kp.unfold(-2, c + 2 * w, c).transpose(-2, -1)  # [..., n, c+2w, d]
    vc = vp.unfold(-2, c + 2 * w, c).transpose(-2, -1)
    qc = qp.reshape(*lead, n, c, d)
    scale = 1 / math.sqrt(d)
    qi = (torch.arange(n)[:, None] * c + torch.arange(c)[None, :])[:, :, None]  # [n, c, 1]
    kj = (torch.arange(n)[:, None] * c - w + torch.arange(c + 2 * w)[None, :])[:, None, :]  # [n, 1, c+2w]
    band = ((qi - kj).abs() <= w) & (kj >= 0) & (kj < t)
    if causal:
        band &= kj <= qi
    band |= qi >= t  # padded query rows: anything, they are cut off
    scores = (qc @ kc.transpose(-2, -1)) * scale
    scores = scores.masked_fill(~band.to(q.device), NEG_INF)
    glob = sorted({g for g in global_tokens if 0 <= g < t})
    if not glob:
        out = torch.softmax(scores, -1) @ vc
        return out.reshape(*lead, n * c, -1)[..., :t, :]
    g = torch.tensor(glob, device=q.device)
    gk, gv = k.index_select(-2, g), v.index_select(-2, g)
    gs = (qc @ gk.transpose(-2, -1)[..., None, :, :]) * scale  # [..., n, c, G]
    gpos = g.cpu()[None, None, :]
    gallowed = ((qi - gpos).abs() > w) & (qi < t)
    if causal:
        gallowed &= gpos <= qi
    gs = gs.masked_fill(~gallowed.to(q.device), NEG_INF)
    probs = torch.softmax(torch.cat([scores, gs], -1), -1)
    out = probs[..., :c + 2 * w] @ vc + probs[..., c + 2 * w:] @ gv[..., None, :, :]
    out = out.reshape(*lead, n * c, -1)[..., :t, :].clone()
    _, gout = softmax_attention(q.index_select(-2, g), k, v, allowed=causal_allowed(t, t, q.device)[g] if causal else None)
    out[..., g, :] = gout
    return out


# --------------------------------------------------------------------------------- FlashAttention
@dataclass
class TiledResult:
    """What :func:`tiled_attention` returns: the exact output, the watched query's steps, the tiles computed
    out of the full grid, and the most score entries held at once."""
    out: torch.Tensor  # [..., Tq, d_v], equal to softmax(QKᵀ/√d + M)V up to rounding
    steps: list  # for the watched query row, one dict per key block it visited (see tiled_attention)
    blocks_computed: int  # (query block, key block) tiles whose scores were computed
    blocks_total: int  # tiles in the full grid
    largest_scores: int  # most score entries held at once (one tile): block_q × block_k


def tiled_attention(q, k, v, block_q: int = 4, block_k: int = 4, *, causal: bool = False,
                    watch: int | None = None) -> TiledResult:
    """Exact attention the FlashAttention way: query blocks × key blocks with an online softmax.

    For every query row: ``m ← max(m, max_j s_j)``, ``ℓ ← ℓ·e^{m_old − m} + Σ_j e^{s_j − m}``,
    ``acc ← acc·e^{m_old − m} + Σ_j e^{s_j − m} v_j`` over the key blocks; then ``out = acc / ℓ``.
    ``watch``: a query row whose state after each key block is reported in ``steps``: ``keys`` (range),
    ``block_max``, ``m``, ``rescale`` (e^{m_old − m}), ``l`` and ``estimate`` (acc / ℓ so far).
    Causal masking uses :func:`causal_allowed`'s alignment; tiles with no visible key are skipped.
    """
    if block_q < 1 or block_k < 1:
        raise ValueError(f"block sizes must be >= 1, got {block_q} × {block_k}")
    t_q, t_k, d = q.shape[-2], k.shape[-2], q.shape[-1]
    if watch is not None and not 0 <= watch < t_q:
        raise ValueError(f"watched query row {watch} outside 0..{t_q - 1}")
    scale = 1 / math.sqrt(d)
    out = torch.empty(*q.shape[:-1], v.shape[-1], dtype=q.dtype, device=q.device)
    steps, computed, largest = [], 0, 0
    n_q, n_k = -(-t_q // block_q), -(-t_k // block_k)
    for qs in range(0, t_q, block_q):
        qb = q[..., qs:qs + block_q, :]
        rows = qb.shape[-2]
        m = torch.full((*qb.shape[:-1],), NEG_INF, dtype=q.dtype, device=q.device)
        l = torch.zeros_like(m)
        acc = torch.zeros(*qb.shape[:-1], v.shape[-1], dtype=q.dtype, device=q.device)
        for ks in range(0, t_k, block_k):
            if causal and ks > qs + rows - 1 + (t_k - t_q):
                break  # this tile and every later one lies wholly above the diagonal
            kb, vb = k[..., ks:ks + block_k, :], v[..., ks:ks + block_k, :]
            s = (qb @ kb.transpose(-2, -1)) * scale
            if causal:
                visible = causal_allowed(t_q, t_k, q.device)[qs:qs + rows, ks:ks + kb.shape[-2]]
                s = s.masked_fill(~visible, NEG_INF)
            computed += 1
            largest = max(largest, s.shape[-2] * s.shape[-1])
            m_new = torch.maximum(m, s.amax(-1))
            base = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)  # rows with nothing seen yet
            p = torch.exp(s - base[..., None])
            rescale = torch.exp(m - base)
            l = l * rescale + p.sum(-1)
            acc = acc * rescale[..., None] + p @ vb
            m = m_new
            if watch is not None and qs <= watch < qs + rows:
                r = watch - qs
                steps.append({"keys": (ks, ks + kb.shape[-2]), "block_max": s[..., r, :].amax(-1),
                              "m": m[..., r].clone(), "rescale": rescale[..., r].clone(), "l": l[..., r].clone(),
                              "estimate": (acc[..., r, :] / l[..., r, None]).clone()})
        out[..., qs:qs + rows, :] = acc / l[..., None]
    return TiledResult(out, steps, computed, n_q * n_k, largest)


def step_gaps(steps: list[dict], exact_row: torch.Tensor) -> list[float]:
    """For a watched query (``tiled_attention(..., watch=i).steps``): max |output so far − exact| after each block."""
    return [gap(step["estimate"], exact_row)["max"] for step in steps]


# ------------------------------------------------------------------------------------ α-entmax
class _Entmax(torch.autograd.Function):
    """α-entmax along the last dimension, α > 1, by bisection on the threshold τ (float64 inside)."""

    @staticmethod
    def forward(ctx, scores: torch.Tensor, alpha: float, n_iter: int) -> torch.Tensor:
        power = 1 / (alpha - 1)
        z = scores.double() * (alpha - 1)
        top = z.amax(-1, keepdim=True)
        # Σ_i [z_i − τ]_+^power is 1 or more at τ = top − 1 (the top entry alone gives 1) and 1 or less at
        # τ = top − n^(1−α) (each of the n entries gives at most 1/n), and it falls as τ grows: halve the bracket
        lo, hi = top - 1, top - scores.shape[-1] ** (1 - alpha)
        for _ in range(n_iter):
            mid = (lo + hi) / 2
            over = (z - mid).clamp(min=0).pow(power).sum(-1, keepdim=True) >= 1
            lo, hi = torch.where(over, mid, lo), torch.where(over, hi, mid)
        p = (z - lo).clamp(min=0).pow(power)  # τ = lo keeps the sum ≥ 1; the division removes what is left
        p = (p / p.sum(-1, keepdim=True)).to(scores.dtype)
        ctx.alpha = alpha
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        # on the support p_i = ((α−1)z_i − τ)^(1/(α−1)), so dp_i = g_i (dz_i − dτ/(α−1)) with g_i = p_i^(2−α);
        # Σ dp_i = 0 fixes dτ/(α−1) = Σ g_j dz_j / Σ g_j: the Jacobian is diag(g) − g gᵀ / Σ g, symmetric
        (p,) = ctx.saved_tensors
        g = torch.where(p > 0, p.pow(2 - ctx.alpha), torch.zeros_like(p))
        gg = grad * g
        return gg - g * gg.sum(-1, keepdim=True) / g.sum(-1, keepdim=True), None, None


def entmax(scores: torch.Tensor, alpha: float = 1.5, dim: int = -1, n_iter: int = 60) -> torch.Tensor:
    """α-entmax of ``scores`` along ``dim`` (Peters, Niculae & Martins 2019; used for attention by Correia, Niculae &
    Martins 2019, "Adaptively sparse Transformers"):

        entmax_α(z)_i = [(α − 1) z_i − τ]_+ ^ (1/(α − 1)),   τ such that the entries sum to 1.

    α = 1 is softmax (returned as ``torch.softmax``), α = 2 is sparsemax (the Euclidean projection onto the
    simplex); for α > 1 every key whose score is at most τ/(α − 1) gets exactly zero weight. τ is found by
    ``n_iter`` halvings of a bracket no wider than 1, in float64 (60 reach its rounding), then the entries are
    divided by their sum. Keys at −∞ (a mask) get 0. The backward is the exact Jacobian
    ``diag(g) − g gᵀ/Σg`` with ``g = p^(2−α)`` on the support, not the bisection's steps."""
    if not alpha >= 1:
        raise ValueError(f"α-entmax needs α ≥ 1 (1 = softmax, 2 = sparsemax); got {alpha}")
    if alpha == 1:
        return torch.softmax(scores, dim=dim)
    return _Entmax.apply(scores.transpose(dim, -1), float(alpha), int(n_iter)).transpose(dim, -1)


def zero_keys(weights: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """Per query, how many keys it could see (finite score: not masked) get weight exactly 0."""
    return ((weights == 0) & torch.isfinite(scores)).sum(-1)
