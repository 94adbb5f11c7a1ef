"""Efficient attention (core.variants.efficient): Performer, linear, LSH and sliding-window attention against exact softmax."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from core.variants import attention_cost as cost
from core.variants import efficient as E

ROOT = Path(__file__).resolve().parents[2]


def qkv(*lead, t=24, d=16, scale=1.0, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*lead, t, d, generator=g, dtype=dtype) * scale for _ in range(3))


@pytest.mark.parametrize("orthogonal", [True, False])
def test_favor_error_decreases_as_features_grow(orthogonal):
    q, k, _ = qkv(2, t=20, d=8, scale=0.7)
    err16, err1024 = E.favor_error_curve(q, k, [16, 1024], seeds=range(6), orthogonal=orthogonal)
    assert err1024 < err16 / 2.5, (err16, err1024)


def test_favor_kernel_is_unbiased():
    """E[φ(x)ᵀφ(y)] = exp(xᵀy): the mean of the unstabilised estimate over many draws approaches the kernel."""
    q, k, _ = qkv(t=5, d=8, scale=0.6)
    x, y = q * 8 ** -0.25, k * 8 ** -0.25
    exact = torch.exp(x @ y.T)
    for orthogonal in (True, False):
        est = torch.stack([E.performer_features(x, p) @ E.performer_features(y, p).T for p in
                           (E.random_projection(8, 16, s, orthogonal=orthogonal, dtype=torch.float64)
                            for s in range(3000))]).mean(0)
        rel = ((est - exact) / exact).abs()
        assert rel.mean() < 0.03 and rel.max() < 0.12, (orthogonal, rel.mean(), rel.max())


def test_favor_weights_average_to_exact_and_output_matches_weights():
    q, k, v = qkv(t=12, d=8, scale=0.7)
    exact, exact_out = E.softmax_attention(q, k, v)
    runs = [E.favor_attention(q, k, v, 64, s) for s in range(300)]
    mean_w = torch.stack([r.weights for r in runs]).mean(0)
    single = (runs[0].weights - exact).abs().mean()
    assert (mean_w - exact).abs().mean() < single / 4  # averaging draws removes most of the error
    for r in runs[:3]:
        torch.testing.assert_close(r.out, r.weights @ v)  # linear-time output = implied matrix × V
        torch.testing.assert_close(r.weights.sum(-1), torch.ones(12, dtype=torch.float64))
    assert runs[0].projection.shape == (64, 8)


def test_favor_causal_matches_its_masked_matrix():
    q, k, v = qkv(3, t=10, d=8, scale=0.7)
    r = E.favor_attention(q, k, v, 32, 1, causal=True)
    assert torch.all(r.weights.triu(1) == 0)
    torch.testing.assert_close(r.out, r.weights @ v)
    torch.testing.assert_close(r.weights.sum(-1), torch.ones(3, 10, dtype=torch.float64))


def test_favor_stays_finite_for_large_norms():
    """Trained heads can have ‖q‖/d^¼ ≈ 40 (scores in the thousands): the stabilised features must not overflow."""
    q, k, v = qkv(t=15, d=32, scale=40.0, dtype=torch.float32)
    for causal in (False, True):
        r = E.favor_attention(q, k, v, 64, 0, causal)
        assert torch.isfinite(r.weights).all() and torch.isfinite(r.out).all()
        torch.testing.assert_close(r.weights.sum(-1), torch.ones(15))


def test_random_projection_orthogonal_blocks():
    p = E.random_projection(8, 20, 3, dtype=torch.float64)
    block = p[:8] / p[:8].norm(dim=-1, keepdim=True)
    torch.testing.assert_close(block @ block.T, torch.eye(8, dtype=torch.float64))
    assert torch.equal(p, E.random_projection(8, 20, 3, dtype=torch.float64))  # seeded


@pytest.mark.parametrize("causal", [False, True])
def test_linear_attention_equals_its_quadratic_form(causal):
    q, k, v = qkv(2, 3, t=17, d=8)
    phi_q, phi_k = E.elu_feature(q), E.elu_feature(k)
    a = phi_q @ phi_k.transpose(-2, -1)
    if causal:
        a = a.tril()
    expected = (a / a.sum(-1, keepdim=True)) @ v
    torch.testing.assert_close(E.linear_attention(q, k, v, causal=causal), expected, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(E.linear_attention_weights(q, k, causal=causal) @ v, expected)
    assert torch.all(phi_q > 0)


def test_fast_weights_are_causal_linear_attention_written_one_outer_product_at_a_time():
    """W_t grows by exactly v_t φ(k_t)ᵀ, its read is the unnormalised causal linear attention, and dividing by
    φ(q_t)·Σφ(k_j) gives linear_attention(causal=True)."""
    q, k, v = qkv(2, t=13, d=6)
    w, out = E.fast_weights(q, k, v)
    phi_q, phi_k = E.elu_feature(q), E.elu_feature(k)
    assert w.shape == (2, 13, 6, 6)
    torch.testing.assert_close(w[:, 4] - w[:, 3], v[:, 4, :, None] * phi_k[:, 4, None, :])
    torch.testing.assert_close(out, (phi_q @ phi_k.transpose(-2, -1)).tril() @ v)
    norm = (phi_q * phi_k.cumsum(-2)).sum(-1, keepdim=True)
    torch.testing.assert_close(out / norm, E.linear_attention(q, k, v, causal=True), rtol=1e-6, atol=1e-6)
    assert not torch.allclose(out, E.linear_attention(q, k, v, causal=True))  # the normaliser matters


def test_lsh_buckets_range_and_scale_invariance():
    q, _, _ = qkv(t=40, d=16)
    b = E.lsh_buckets(q, 8, seed=2)
    assert b.shape == (40,) and b.min() >= 0 and b.max() < 8
    assert torch.equal(b, E.lsh_buckets(q * 3.0, 8, seed=2))  # angular: direction only
    assert torch.equal(E.lsh_buckets(q, 1), torch.zeros(40, dtype=torch.long))
    with pytest.raises(ValueError):
        E.lsh_buckets(q, 3)


@pytest.mark.parametrize("causal", [False, True])
def test_lsh_with_one_bucket_is_full_softmax(causal):
    q, k, v = qkv(2, t=15, d=8)
    exact, out = E.softmax_attention(q, k, v, causal=causal)
    r = E.lsh_attention(q, k, v, 1, causal=causal)
    torch.testing.assert_close(r.weights, exact)
    torch.testing.assert_close(r.out, out)
    torch.testing.assert_close(r.kept, torch.ones(2, 15, dtype=torch.float64))


@pytest.mark.parametrize("shared_qk", [False, True])
def test_lsh_attends_within_buckets_only(shared_qk):
    q, k, v = qkv(t=32, d=8, seed=4)
    r = E.lsh_attention(q, k, v, 8, seed=1, shared_qk=shared_qk)
    torch.testing.assert_close(r.weights.sum(-1), torch.ones(32, dtype=torch.float64))
    same = r.q_buckets[0][:, None] == r.k_buckets[0][None, :]
    fallback = ~same.any(-1)  # queries with no key in their bucket see their own position only
    assert torch.all(r.weights[~same & ~fallback[:, None]] == 0)
    assert torch.all((r.weights > 0) <= (same | torch.eye(32, dtype=torch.bool)))
    torch.testing.assert_close(r.kept, (r.full_weights * r.allowed).sum(-1))
    assert torch.all((r.kept > 0) & (r.kept <= 1 + 1e-12))
    if shared_qk:
        assert torch.equal(r.q_buckets, r.k_buckets)
        alone = same.sum(-1) == 1
        assert torch.all(r.weights.diagonal()[~alone] == 0)  # Reformer: no self-attention unless alone


def test_lsh_more_buckets_keep_less_mass():
    q, k, v = qkv(t=64, d=16, seed=5)
    kept = [float(torch.stack([E.lsh_attention(q, k, v, b, s).kept.mean() for s in range(5)]).mean())
            for b in (1, 2, 8, 32)]
    assert kept[0] == pytest.approx(1.0) and kept[0] > kept[1] > kept[2] > kept[3]


def test_sliding_window_mask_band_and_globals():
    m = E.sliding_window_mask(10, 2, global_tokens=[0, 7])
    i, j = torch.meshgrid(torch.arange(10), torch.arange(10), indexing="ij")
    assert torch.all(m[(i - j).abs() <= 2])
    assert torch.all(m[0]) and torch.all(m[:, 0]) and torch.all(m[7]) and torch.all(m[:, 7])
    assert not m[3, 9] and not m[9, 3]
    c = E.sliding_window_mask(10, 2, global_tokens=[0, 7], causal=True)
    assert torch.equal(c, m & torch.ones(10, 10, dtype=torch.bool).tril())


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("glob", [(), (0,), (0, 13, 40)])
@pytest.mark.parametrize("window,chunk", [(0, None), (3, None), (5, 4), (8, 8), (60, None)])
def test_sliding_window_chunked_equals_masked(causal, glob, window, chunk):
    q, k, v = qkv(2, 3, t=41, d=8, dtype=torch.float32)
    weights, out, allowed = E.sliding_window_attention(q, k, v, window, glob, causal=causal)
    fast = E.sliding_window_chunked(q, k, v, window, glob, causal=causal, chunk=chunk)
    assert (fast - out).abs().max() < 1e-5
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3, 41))
    assert torch.all(weights[..., ~allowed] == 0)


def test_global_tokens_see_everything():
    q, k, v = qkv(t=30, d=8)
    weights, out, _ = E.sliding_window_attention(q, k, v, 2, global_tokens=[0, 11])
    exact, exact_out = E.softmax_attention(q, k, v)
    torch.testing.assert_close(weights[[0, 11]], exact[[0, 11]])  # a global row is full attention
    assert torch.all(weights[:, [0, 11]] > 0)  # every token sees the global tokens
    torch.testing.assert_close(E.sliding_window_chunked(q, k, v, 2, [0, 11])[[0, 11]], exact_out[[0, 11]])


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("blocks", [(1, 1), (4, 4), (5, 3), (24, 24), (7, 100)])
def test_tiled_attention_is_exact(causal, blocks):
    # FlashAttention's tiles + online softmax give softmax(QKᵀ/√d + M)V exactly: against torch's fused kernel
    # and the explicit formula, with batch/head dimensions and block sizes that do not divide T
    q, k, v = qkv(2, 3, t=23, d=8, seed=3)
    res = E.tiled_attention(q, k, v, *blocks, causal=causal)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    torch.testing.assert_close(res.out, ref, rtol=0, atol=1e-12)
    torch.testing.assert_close(res.out, E.softmax_attention(q, k, v, causal=causal)[1], rtol=0, atol=1e-12)
    assert res.largest_scores == min(blocks[0], 23) * min(blocks[1], 23)


def test_tiled_attention_online_softmax_state_and_causal_skips():
    q, k, v = qkv(t=10, d=4, scale=2.0, seed=4)
    bq, bk, row = 3, 4, 7
    res = E.tiled_attention(q, k, v, bq, bk, causal=True, watch=row)
    s = (q @ k.T / 2.0)[row]  # √d = 2
    visible = row + 1  # causal: keys 0..7
    # keys 8..9 are invisible to row 7 but not to row 8 of its query block, so that tile is computed:
    # for row 7 it is all −∞ and changes nothing (rescale 1, same ℓ)
    assert [st["keys"] for st in res.steps] == [(0, 4), (4, 8), (8, 10)]
    last = res.steps[-1]
    assert float(last["block_max"]) == float("-inf") and float(last["rescale"]) == 1.0
    assert float(last["l"]) == float(res.steps[1]["l"])
    for st in res.steps:
        seen = s[:min(st["keys"][1], visible)]
        assert float(st["m"]) == pytest.approx(float(seen.max()), abs=1e-12)
        assert float(st["l"]) == pytest.approx(float(torch.exp(seen - seen.max()).sum()), rel=1e-12)
        w = torch.softmax(seen, 0)
        torch.testing.assert_close(st["estimate"], w @ v[:len(seen)], rtol=0, atol=1e-12)
    m0, m1 = float(res.steps[0]["m"]), float(res.steps[1]["m"])
    assert float(res.steps[1]["rescale"]) == pytest.approx(math.exp(m0 - m1), rel=1e-12)
    # tiles: query blocks [0,3) [3,6) [6,9) [9,10) × key blocks [0,4) [4,8) [8,10); causal keeps those
    # holding at least one visible key
    expected = sum(1 for qs in range(0, 10, bq) for ks in range(0, 10, bk) if ks <= min(qs + bq, 10) - 1)
    assert (res.blocks_computed, res.blocks_total) == (expected, 12) and expected == 9
    assert E.tiled_attention(q, k, v, bq, bk).blocks_computed == 12


def test_tiled_attention_rejects_bad_arguments():
    q, k, v = qkv(t=6, d=4)
    with pytest.raises(ValueError, match="block sizes must be >= 1"):
        E.tiled_attention(q, k, v, 0, 2)
    with pytest.raises(ValueError, match="watched query row 6 outside 0..5"):
        E.tiled_attention(q, k, v, watch=6)


def test_head_qkv_matches_the_traced_weights():
    from core.io import registry
    from core.inference.runner import run
    res = run(registry.load("en-fr"), "The animal didn't cross the street because it was too tired.")
    q, k, v = E.head_qkv(res.trace, "encoder", 1, 2)
    weights, _ = E.softmax_attention(q, k, v)
    torch.testing.assert_close(weights, res.trace.attention("encoder", 1)[0, 2])


def test_fit_exponent_and_cost_series():
    assert cost.fit_exponent([64, 128, 256], [1.0, 4.0, 16.0]) == pytest.approx(2.0)
    rows = [{"method": "a", "T": 1, "time_s": 1.0}, {"method": "a", "T": 2, "time_s": None},
            {"method": "b", "T": 2, "time_s": 3.0}]
    sizes, series = cost.cost_series(rows)
    assert sizes == [1, 2] and series["a"][0] == 1.0 and series["a"][1] != series["a"][1]  # NaN = skipped


def test_peak_allocated_sees_the_quadratic_matrix():
    q = torch.randn(1, 2, 256, 16)
    peak = cost.peak_allocated(lambda: E.softmax_attention(q, q, q))
    assert cost.explicit_bytes(256, 1, 2) <= peak < 1.5 * cost.explicit_bytes(256, 1, 2)


def test_bench_quick_writes_json(tmp_path):
    out = tmp_path / "cost.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_attention_cost.py"), "--quick",
                           "--threads", "1", "--out", str(out)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})  # core as `pip install -e .` would find it
    assert proc.returncode == 0, proc.stderr[-2000:]
    last = json.loads(proc.stdout.strip().splitlines()[-1])
    assert last == json.loads(out.read_text())
    assert {r["method"] for r in last["rows"]} == set(cost.METHODS)
    assert all(r["time_s"] > 0 for r in last["rows"]) and set(last["exponents"]) == set(cost.METHODS)


def test_gap_reach_and_step_gaps_are_the_numbers_the_page_prints():
    a = torch.tensor([[0.5, 0.5], [1.0, 0.0]])
    e = torch.tensor([[0.25, 0.75], [1.0, 0.0]])
    assert E.gap(a, e) == {"mean": 0.125, "max": 0.25}
    q = torch.tensor([[16.0, 0.0], [0.0, 1.0]])  # d = 2: norms / 2^0.25
    k = torch.tensor([[0.0, 3.0], [4.0, 0.0]])
    assert E.favor_reach(q, k) == pytest.approx((16 + 4) / 2 ** 0.25)
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 7, 4).unbind(0)
    tiled = E.tiled_attention(q, k, v, 2, 3, watch=5)
    _, exact = E.softmax_attention(q, k, v)
    gaps = E.step_gaps(tiled.steps, exact[5])
    assert len(gaps) == 3 and gaps[0] > 1e-3 and gaps[-1] < 1e-6  # after the last key block: exact


@pytest.mark.parametrize("radius", [0, 1, 3])
def test_the_efficient_page_window_and_the_model_window_are_one_band(radius):
    """The twins that disagreed (|i − j| < w on the Masking page and in models, ≤ w on the Efficient page) are
    now one band: the Efficient page's radius w is a model window of w + 1."""
    from core.masks import window_mask
    allowed = E.sliding_window_mask(9, radius)
    assert torch.equal(allowed, window_mask(9, radius + 1) == 0)
    assert torch.equal(allowed.sum(-1)[radius:9 - radius], torch.full((9 - 2 * radius,), 2 * radius + 1))


# ------------------------------------------------------------------ maximum path length (Vaswani et al., table 1)
def dilated_layers(n: int, k: int) -> int:
    """⌈log_k n⌉ by the logarithm, nudged off exact powers of k (log(9, 3) = 2.0000000000000004)."""
    return math.ceil(math.log(n) / math.log(k) - 1e-9)


@pytest.mark.parametrize("n", [2, 3, 9, 17])
def test_path_length_is_read_from_the_jacobian_and_equals_table_1s_counts(n):
    """The measured layers before output n − 1 depends on input 0: 1 for self-attention, ⌈(n − 1)/r⌉ for a window
    of radius r, ⌈(n − 1)/(k − 1)⌉ for a causal convolution, ⌈log_k n⌉ for the dilated one (L layers reach back
    k^L − 1 positions), n steps for an LSTM; and the positions reached after each layer grow by exactly those
    steps."""
    for r in (1, 3):
        p = cost.path_length("window", n, radius=r)
        assert p.layers == math.ceil((n - 1) / r) == cost.path_formula("window", n, radius=r)
        assert p.reach == [min(n, 1 + layer * r) for layer in range(1, p.layers + 1)]
    for k in (2, 3):
        p = cost.path_length("conv", n, kernel=k)
        assert p.layers == math.ceil((n - 1) / (k - 1)) == cost.path_formula("conv", n, kernel=k)
        assert p.reach == [min(n, 1 + layer * (k - 1)) for layer in range(1, p.layers + 1)]
        p = cost.path_length("dilated", n, kernel=k)
        assert p.layers == dilated_layers(n, k) == cost.path_formula("dilated", n, kernel=k)
        assert p.reach == [min(n, k ** layer) for layer in range(1, p.layers + 1)]
    assert cost.path_length("attention", n).reach == [n]
    p = cost.path_length("lstm", n)
    assert p.layers == n == cost.path_formula("lstm", n) and p.reach == list(range(1, n + 1))


def test_the_path_stacks_are_torch_s_own_layers():
    """The layers the path is measured on compute what torch's modules compute with the same weights: the band
    attention is nn.MultiheadAttention with the band as attn_mask (and without a mask at full radius), the causal
    convolution is nn.Conv1d on the input padded on the left, and n LSTM sweeps are nn.LSTM run left to right."""
    from core.masks import band
    g = torch.Generator().manual_seed(1)
    n, width = 11, 4
    x = torch.randn(n, width, generator=g, dtype=torch.float64)
    w = cost.path_weights("window", 0, width=width, gen=g)
    mha = torch.nn.MultiheadAttention(width, 1).double()
    mha.load_state_dict(w)
    for radius in (1, 3, n - 1):
        want = mha(x, x, x, attn_mask=~band(n, radius), need_weights=False)[0]
        assert torch.allclose(cost.band_attention(x, w, radius), want, atol=1e-12), radius
    assert torch.allclose(cost.band_attention(x, w, n - 1), mha(x, x, x, need_weights=False)[0], atol=1e-12)
    for dilation in (1, 3):
        w = cost.path_weights("conv", 0, width=width, kernel=3, gen=g)
        conv = torch.nn.Conv1d(width, width, 3, dilation=dilation).double()
        conv.load_state_dict(w)
        want = torch.tanh(conv(torch.cat([torch.zeros(2 * dilation, width, dtype=torch.float64), x]).T)).T
        assert torch.allclose(cost.causal_conv(x, w, dilation), want, atol=1e-12)
    w = cost.path_weights("lstm", 0, width=width, gen=g)
    lstm = torch.nn.LSTM(width, width).double()
    lstm.load_state_dict({f"{name}_l0": p for name, p in w.items()})
    h = c = torch.zeros(n, width, dtype=torch.float64)
    for _ in range(n):
        h, c = cost.lstm_sweep(w, x, h, c)
    assert torch.allclose(h, lstm(x)[0], atol=1e-12)


def test_path_length_refuses_what_has_no_path():
    for kind, kw in (("attention", {"n": 1}), ("window", {"n": 5, "radius": 0}), ("conv", {"n": 5, "kernel": 1}),
                     ("nope", {"n": 5})):
        with pytest.raises(ValueError):
            cost.path_length(kind, **kw)


# --------------------------------------------------------------------------------------- α-entmax
def sparsemax_by_sorting(z: torch.Tensor) -> torch.Tensor:
    """Martins & Astudillo (2016), algorithm 1: sort, k(z) = max{k : 1 + k z_(k) > Σ_{j≤k} z_(j)},
    τ = (Σ_{j≤k(z)} z_(j) − 1)/k(z), p = [z − τ]_+."""
    s, _ = z.sort(-1, descending=True)
    cums = s.cumsum(-1)
    ks = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype)
    support = (1 + ks * s > cums).sum(-1, keepdim=True)
    tau = (cums.gather(-1, support - 1) - 1) / support
    return (z - tau).clamp(min=0)


def test_entmax_at_two_is_sparsemax_and_near_one_is_softmax():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(4, 6, 9, generator=g, dtype=torch.float64) * 3
    assert torch.allclose(E.entmax(z, 2.0), sparsemax_by_sorting(z), atol=1e-6, rtol=0)
    assert torch.allclose(E.entmax(z, 2.0, dim=0), sparsemax_by_sorting(z.transpose(0, -1)).transpose(0, -1),
                          atol=1e-6, rtol=0)
    assert torch.equal(E.entmax(z, 1.0), torch.softmax(z, -1))
    near, nearer = ((E.entmax(z, a) - torch.softmax(z, -1)).abs().max() for a in (1.001, 1.0001))
    assert nearer < 1e-3 and nearer < near / 5  # the gap closes as α → 1


@pytest.mark.parametrize("alpha", [1.25, 1.5, 2.0, 3.0])
def test_entmax_is_a_distribution_with_one_threshold(alpha):
    """Rows sum to 1, nothing is negative, keys at −∞ get 0, and every weight is [(α − 1)z_i − τ]_+^(1/(α − 1))
    for one τ per row: on the support p_i^(α−1) − (α − 1)z_i is the same number, off it (α − 1)z_i ≤ −that."""
    g = torch.Generator().manual_seed(2)
    z = torch.randn(5, 8, generator=g, dtype=torch.float64) * 2
    z[1, 3] = z[4, 0] = float("-inf")
    p = E.entmax(z, alpha)
    assert torch.allclose(p.sum(-1), torch.ones(5, dtype=torch.float64), atol=1e-12) and (p >= 0).all()
    assert p[1, 3] == 0 and p[4, 0] == 0
    assert (p == 0).sum() > 2  # sparse: some finite scores got exactly zero as well
    tau = (alpha - 1) * z - p.pow(alpha - 1)  # = τ on the support
    for row, zrow, trow in zip(p, z, tau):
        on = row > 0
        assert trow[on].max() - trow[on].min() < 1e-8
        assert ((alpha - 1) * zrow[~on] <= trow[on].mean() + 1e-8).all()


@pytest.mark.parametrize("alpha", [1.5, 2.0])
def test_entmax_gradients_are_the_exact_jacobian(alpha):
    z = torch.randn(3, 6, generator=torch.Generator().manual_seed(3), dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: E.entmax(t, alpha), (z,))
    with pytest.raises(ValueError):
        E.entmax(z, 0.5)


# ------------------------------------------------------------- trigonometric features (the Wikipedia seed's RFA)
def test_trig_kernel_is_unbiased_for_exp_xy():
    """E[φ(x)ᵀφ(y)] = exp(xᵀy) for φ(x) = exp(‖x‖²/2)/√m·[sin(Wx), cos(Wx)]. With u = x − y, cos(ωᵀu) has mean
    exp(−‖u‖²/2) and variance (1 − exp(−‖u‖²))²/2, so one i.i.d. draw of m features has standard deviation
    exp((‖x‖² + ‖y‖²)/2)·(1 − exp(−‖u‖²))/√(2m). The mean of n draws must land within 5 standard errors of the
    kernel (a normal mean misses that by chance about once in 1.7 million); orthogonal ω only lower the variance."""
    q, k, _ = qkv(t=5, d=8, scale=0.6)
    x, y = q * 8 ** -0.25, k * 8 ** -0.25
    exact = torch.exp(x @ y.T)
    n, m = 1500, 16
    hx, hy = (x * x).sum(-1) / 2, (y * y).sum(-1) / 2
    sd = torch.exp(hx[:, None] + hy[None, :]) * (1 - torch.exp(-torch.cdist(x, y) ** 2)) / math.sqrt(2 * m)
    for orthogonal in (True, False):
        est = torch.stack([E.trig_features(x, p) @ E.trig_features(y, p).T for p in
                           (E.random_projection(8, m, s, orthogonal=orthogonal, dtype=torch.float64)
                            for s in range(n))]).mean(0)
        z = (est - exact).abs() / (sd / math.sqrt(n))
        assert z.max() < 5, (orthogonal, z.max())
        assert ((est - exact) / exact).abs().max() < 0.05, orthogonal


def test_trig_attention_error_falls_as_features_grow_and_the_study_is_the_curve():
    q, k, _ = qkv(2, t=20, d=8, scale=0.5)
    err16, err1024 = E.favor_error_curve(q, k, [16, 1024], seeds=range(6), features="trig")
    assert err1024 < err16 / 2.5, (err16, err1024)  # the error ∝ 1/√m: 8× smaller in expectation
    study = E.feature_study(q, k, [16, 1024], seeds=range(6))
    assert study["trig"]["error"] == [err16, err1024]  # the page's table is the curve's numbers
    assert study["positive"]["error"] == E.favor_error_curve(q, k, [16, 1024], seeds=range(6))
    with pytest.raises(ValueError):
        E.favor_attention(q, k, k, 16, features="cosine")


@pytest.mark.parametrize("causal", [False, True])
def test_normaliser_ratio_is_the_estimate_over_the_true_sum(causal):
    """Log-space ratio against the plain float64 sums Σ_j φ(x_i)ᵀφ(y_j) / Σ_j exp(x_i·y_j) at moderate norms."""
    q, k, _ = qkv(t=9, d=8, scale=1.2)
    x, y = q * 8 ** -0.25, k * 8 ** -0.25
    keep = E.causal_allowed(9, 9) if causal else torch.ones(9, 9, dtype=torch.bool)
    for kind, phi in E.FEATURE_KINDS.items():
        p = E.random_projection(8, 32, 5, dtype=torch.float64)
        plain = ((phi(x, p) @ phi(y, p).T) * keep).sum(-1) / (torch.exp(x @ y.T) * keep).sum(-1)
        torch.testing.assert_close(E.normaliser_ratio(q, k, p, features=kind, causal=causal), plain,
                                   rtol=1e-10, atol=1e-12)


def test_positive_normalisers_stay_positive_and_trig_ones_can_turn_negative():
    """Constructed: one ω = (π/a, 0, 0, 0), x = (a, 0, 0, 0), y = 0 (d = 4, so q = √2·x). Trig: the only term is
    e^{a²/2}·cos(π) = −e^{a²/2} against the true e^0 = 1. Positive: e^{π − a²/2} > 0. Then on random heads."""
    a = 1.3
    q = torch.tensor([[a * math.sqrt(2), 0, 0, 0]], dtype=torch.float64)
    k = torch.zeros(1, 4, dtype=torch.float64)
    w = torch.tensor([[math.pi / a, 0, 0, 0]], dtype=torch.float64)
    assert E.normaliser_ratio(q, k, w, features="trig").item() == pytest.approx(-math.exp(a * a / 2), rel=1e-12)
    assert E.normaliser_ratio(q, k, w).item() == pytest.approx(math.exp(math.pi - a * a / 2), rel=1e-12)
    q, k, _ = qkv(3, t=12, d=16, scale=2.0)
    study = E.feature_study(q, k, [4, 64], seeds=range(8))
    assert study["positive"]["nonpositive"] == [0.0, 0.0]
    assert min(study["trig"]["nonpositive"]) > 0.05, study["trig"]
    ratios = torch.stack([E.normaliser_ratio(q, k, E.random_projection(16, 64, s, dtype=torch.float64))
                          for s in range(8)])
    assert (ratios > 0).all()


# ------------------------------------------------------------- ALiBi: the app's −s·|i − j| against the seed's s·(j − i)
@pytest.mark.parametrize("n_heads,t,head", [(8, 15, 0), (8, 15, 7), (6, 9, 4), (4, 2, 1)])
def test_alibi_seed_sign_differs_by_twice_slope_times_the_forward_distance(n_heads, t, head):
    """s·(j − i) − (−s·|i − j|) = s·((j − i) + |j − i|) = 2·s·max(j − i, 0): exactly 0 on and below the diagonal
    (the keys a causal mask keeps, so the forms agree there), 2·s·(j − i) above it, largest 2·s·(t − 1). With
    equal content scores, token 0's weight on the last token is a geometric-series term under each form."""
    from core.masks import alibi_slopes
    from core.probes import positions
    sc = positions.alibi_sign_check(n_heads, t, head)
    s = alibi_slopes(n_heads)[head]
    ahead = (torch.arange(t)[None, :] - torch.arange(t)[:, None]).float()  # the seed's B: B[i, j] = j − i
    assert torch.equal(sc["seed"], s * ahead) and torch.equal(sc["app"], -s * ahead.abs())
    assert torch.equal(sc["diff"], 2 * s * ahead.clamp(min=0))
    assert sc["below"] == 0.0 and sc["above"] == float(2 * s * (t - 1)) and sc["causal_gap"] == 0.0
    r = math.exp(float(s))
    for form, ratio in (("seed", r), ("app", 1 / r)):  # row 0: weights ∝ ratio^j, j = 0 … t − 1
        total = sum(ratio ** j for j in range(t))
        assert sc["far"][form] == pytest.approx(ratio ** (t - 1) / total, rel=1e-12)
        assert sc["self"][form] == pytest.approx(1 / total, rel=1e-12)
    assert sc["far"]["seed"] > sc["far"]["app"] and sc["future"]["seed"] > sc["future"]["app"]
