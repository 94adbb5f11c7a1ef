"""Scaled dot-product attention and MultiHeadAttention against hand-written and PyTorch references."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from core.attention import MultiHeadAttention, scaled_dot_product_attention
from core.masks import alibi_bias, causal_mask, combine, padding_mask, window_mask
from core.hooks import Hooks, scale_heads
from core.trace import Trace

ATOL = 1e-5


def _qkv(b=2, h=4, g=None, tq=5, tk=None, d=8, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    g = h if g is None else g
    tk = tq if tk is None else tk
    q = torch.randn(b, h, tq, d, generator=gen, dtype=dtype)
    k = torch.randn(b, g, tk, d, generator=gen, dtype=dtype)
    v = torch.randn(b, g, tk, d, generator=gen, dtype=dtype)
    return q, k, v


def _reference(q, k, v, additive=None):
    """softmax(Q Kᵀ / √d_k + M) V written out in float64, with K/V heads shared across query groups."""
    q, k, v = q.double(), k.double(), v.double()
    rep = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(rep, dim=1)
    v = v.repeat_interleave(rep, dim=1)
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.shape[-1])
    logits = scores if additive is None else scores + additive.double()
    e = torch.exp(logits - logits.amax(-1, keepdim=True))
    w = e / e.sum(-1, keepdim=True)
    return torch.einsum("bhqk,bhkd->bhqd", w, v), scores, w


def _pad(b, t, lengths):
    return torch.arange(t)[None, :] >= torch.tensor(lengths)[:, None]


# --------------------------------------------------------------------- explicit path vs formula
def test_explicit_matches_formula_float64():
    q, k, v = _qkv(dtype=torch.float64)
    res = scaled_dot_product_attention(q, k, v, explicit=True)
    out, scores, w = _reference(q, k, v)
    torch.testing.assert_close(res.scores, scores, rtol=0, atol=1e-12)
    torch.testing.assert_close(res.weights, w, rtol=0, atol=1e-12)
    torch.testing.assert_close(res.out, out, rtol=0, atol=1e-12)


def test_explicit_matches_formula_with_mask_and_bias():
    q, k, v = _qkv(dtype=torch.float64, tq=6)
    pad = _pad(2, 6, [6, 4])
    m = combine(padding_mask(pad), causal_mask(6))
    bias = alibi_bias(4, 6)
    res = scaled_dot_product_attention(q, k, v, mask=padding_mask(pad), bias=bias, is_causal=True, explicit=True)
    out, _, w = _reference(q, k, v, m + bias)
    torch.testing.assert_close(res.weights, w, rtol=0, atol=1e-12)
    torch.testing.assert_close(res.out, out, rtol=0, atol=1e-12)
    # scores are the raw QKᵀ/√d_k: neither bias nor mask is folded in
    _, raw, _ = _reference(q, k, v)
    torch.testing.assert_close(res.scores, raw, rtol=0, atol=1e-12)


def test_explicit_path_gradients_match_formula():
    # the path training takes on CPU when attention dropout is on (here p = 0): autograd through it,
    # and inference's in-place softmax must not touch what a backward pass needs
    q, k, v = (t.requires_grad_() for t in _qkv(dtype=torch.float64, tq=6))
    m = combine(padding_mask(_pad(2, 6, [6, 3])), causal_mask(6))
    up = torch.randn(2, 4, 6, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(9))
    res = scaled_dot_product_attention(q, k, v, mask=m, explicit=True)
    mine = torch.autograd.grad((res.out * up).sum(), (q, k, v))
    ref = torch.autograd.grad((_reference(q, k, v, m)[0] * up).sum(), (q, k, v))
    for a, b in zip(mine, ref):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)
    with torch.no_grad():
        again = scaled_dot_product_attention(q, k, v, mask=m, explicit=True)
    torch.testing.assert_close(again.weights, res.weights, rtol=0, atol=1e-12)
    assert again.scores.data_ptr() != again.weights.data_ptr()


def test_explicit_fp32_close_to_float64_reference():
    q, k, v = _qkv(tq=7, tk=9)
    res = scaled_dot_product_attention(q, k, v, explicit=True)
    out, _, w = _reference(q, k, v)
    torch.testing.assert_close(res.out.double(), out, rtol=0, atol=ATOL)
    torch.testing.assert_close(res.weights.double(), w, rtol=0, atol=ATOL)


def test_scale_is_inverse_sqrt_dk():
    # with identical keys except one, the weight ratio reveals the scale exactly
    q = torch.zeros(1, 1, 1, 16, dtype=torch.float64)
    q[..., 0] = 1.0
    k = torch.zeros(1, 1, 2, 16, dtype=torch.float64)
    k[0, 0, 0, 0] = 4.0  # q·k0 = 4, q·k1 = 0
    v = torch.zeros(1, 1, 2, 16, dtype=torch.float64)
    w = scaled_dot_product_attention(q, k, v, explicit=True).weights[0, 0, 0]
    assert math.log(w[0] / w[1]) == pytest.approx(4.0 / math.sqrt(16), abs=1e-12)


# --------------------------------------------------------------------- explicit vs fused
CASES = {
    "plain": dict(),
    "causal": dict(is_causal=True),
    "padding": dict(pad=[5, 3]),
    "padding+causal": dict(pad=[5, 3], is_causal=True),
    "alibi": dict(alibi=True),
    "alibi+causal+padding": dict(alibi=True, is_causal=True, pad=[5, 2]),
    "window": dict(window=2),
    "window+causal": dict(window=2, is_causal=True),
    "gqa": dict(g=2),
    "mqa+causal": dict(g=1, is_causal=True),
    "gqa+alibi+padding": dict(g=2, alibi=True, pad=[4, 5]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_fused_equals_explicit(case):
    c = CASES[case]
    t = 5
    q, k, v = _qkv(g=c.get("g"), tq=t, seed=sorted(CASES).index(case))
    mask = None
    if "pad" in c:
        mask = padding_mask(_pad(2, t, c["pad"]))
    if "window" in c:
        mask = combine(mask, window_mask(t, c["window"]))
    bias = alibi_bias(4, t) if c.get("alibi") else None
    kw = dict(mask=mask, bias=bias, is_causal=c.get("is_causal", False))
    fused = scaled_dot_product_attention(q, k, v, **kw)
    expl = scaled_dot_product_attention(q, k, v, explicit=True, **kw)
    assert fused.weights is None and fused.scores is None
    assert expl.weights is not None
    torch.testing.assert_close(fused.out, expl.out, rtol=0, atol=ATOL)
    # and both agree with the float64 formula
    full = torch.zeros(1, 1, t, t)
    if mask is not None:
        full = full + mask
    if kw["is_causal"]:
        full = full + causal_mask(t)
    if bias is not None:
        full = full + bias
    ref, _, _ = _reference(q, k, v, full)
    torch.testing.assert_close(expl.out.double(), ref, rtol=0, atol=ATOL)


@pytest.mark.parametrize("g", [4, 2, 1])
@pytest.mark.parametrize("with_pad", [False, True])
def test_cached_queries_shorter_than_keys(g, with_pad):
    """KV-cache step: 2 new queries at positions 5, 6 against 7 keys; causal aligns to the end."""
    q, k, v = _qkv(g=g, tq=2, tk=7, seed=3)
    mask = padding_mask(_pad(2, 7, [7, 6])) if with_pad else None
    fused = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=True)
    expl = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=True, explicit=True)
    torch.testing.assert_close(fused.out, expl.out, rtol=0, atol=ATOL)
    w = expl.weights
    # query 0 sits at absolute position 5: key 6 hidden, keys 0..5 visible
    assert (w[:, :, 0, 6] == 0.0).all()
    assert (w[0, :, 0, :6] > 0).all()
    assert (w[0, :, 1, :] > 0).all()
    # the result equals running the full 7-step causal attention and keeping its last 2 rows
    q_full = torch.cat((torch.randn(2, 4, 5, 8), q), dim=2)
    full = scaled_dot_product_attention(q_full, k, v, mask=mask, is_causal=True, explicit=True)
    torch.testing.assert_close(full.out[:, :, 5:], expl.out, rtol=0, atol=ATOL)


# --------------------------------------------------------------------- weight properties
def test_rows_sum_to_one():
    q, k, v = _qkv(tq=6, tk=6)
    pad = _pad(2, 6, [6, 3])
    for kw in (dict(), dict(is_causal=True), dict(mask=padding_mask(pad)), dict(bias=alibi_bias(4, 6), is_causal=True)):
        w = scaled_dot_product_attention(q, k, v, explicit=True, **kw).weights
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]), rtol=0, atol=1e-6)
        assert (w >= 0).all()


def test_causal_zero_above_diagonal_exactly():
    q, k, v = _qkv(tq=8, seed=5)
    w = scaled_dot_product_attention(q, k, v, is_causal=True, explicit=True).weights
    upper = torch.triu(torch.ones(8, 8, dtype=torch.bool), diagonal=1)
    assert (w[..., upper] == 0.0).all()
    assert (w[..., ~upper] > 0.0).all()
    # without the mask the same entries are not zero
    w_free = scaled_dot_product_attention(q, k, v, explicit=True).weights
    assert (w_free[..., upper] != 0.0).all()


def test_padded_keys_get_exactly_zero():
    q, k, v = _qkv(tq=6, seed=7)
    pad = _pad(2, 6, [6, 4])
    res = scaled_dot_product_attention(q, k, v, mask=padding_mask(pad), explicit=True)
    assert (res.weights[1, :, :, 4:] == 0.0).all()
    assert (res.weights[1, :, :, :4] > 0.0).all()
    assert (res.weights[0] > 0.0).all()
    # padded values do not leak: changing them changes nothing for sample 1
    v2 = v.clone()
    v2[:, :, 4:] = 1e3  # both samples; only sample 0 may see positions 4, 5
    res2 = scaled_dot_product_attention(q, k, v2, mask=padding_mask(pad), explicit=True)
    torch.testing.assert_close(res2.out[1], res.out[1], rtol=0, atol=0)
    assert not torch.allclose(res2.out[0], res.out[0])


@pytest.mark.parametrize("window", [1, 2, 3, 10])
def test_window_mask_band(window):
    t = 7
    m = window_mask(t, window)
    assert m.shape == (t, t)
    for i in range(t):
        for j in range(t):
            expected = 0.0 if abs(i - j) < window else float("-inf")
            assert m[i, j].item() == expected, (i, j)
    q, k, v = _qkv(tq=t, seed=window)
    w = scaled_dot_product_attention(q, k, v, mask=m, explicit=True).weights
    i, j = torch.meshgrid(torch.arange(t), torch.arange(t), indexing="ij")
    outside = (i - j).abs() >= window
    assert (w[..., outside] == 0.0).all()
    assert (w[..., ~outside] > 0.0).all()
    # with the causal mask: only j in (i - window, i]
    wc = scaled_dot_product_attention(q, k, v, mask=m, is_causal=True, explicit=True).weights
    band = (j <= i) & (i - j < window)
    assert (wc[..., ~band] == 0.0).all()
    assert (wc[..., band] > 0.0).all()


def test_window_mask_with_offset():
    # 2 queries at absolute positions 4, 5 against 6 keys, window 2
    m = window_mask(2, 2, t_k=6, offset=4)
    allowed = (m == 0)
    assert allowed.tolist() == [[False, False, False, True, True, True],
                                [False, False, False, False, True, True]]


# --------------------------------------------------------------------- MultiHeadAttention vs nn.MultiheadAttention
def _pair(d_model=16, n_heads=4, seed=0):
    torch.manual_seed(seed)
    ours = MultiHeadAttention(d_model, n_heads).eval()
    ref = nn.MultiheadAttention(d_model, n_heads, batch_first=True).eval()
    with torch.no_grad():
        ref.in_proj_weight.normal_(0, 0.3)
        ref.in_proj_bias.normal_(0, 0.3)
        ref.out_proj.bias.normal_(0, 0.3)
        ours.qkv.weight.copy_(ref.in_proj_weight)
        ours.qkv.bias.copy_(ref.in_proj_bias)
        ours.out.weight.copy_(ref.out_proj.weight)
        ours.out.bias.copy_(ref.out_proj.bias)
    return ours, ref


@pytest.mark.parametrize("traced", [False, True])
def test_self_attention_matches_torch_mha(traced):
    ours, ref = _pair()
    x = torch.randn(3, 6, 16)
    pad = _pad(3, 6, [6, 4, 1])
    tr = Trace() if traced else None
    got = ours(x, mask=padding_mask(pad), trace=tr, name="a")
    want, want_w = ref(x, x, x, key_padding_mask=pad, average_attn_weights=False)
    torch.testing.assert_close(got, want, rtol=0, atol=ATOL)
    if traced:
        assert tr["a.weights"].shape == (3, 4, 6, 6)
        torch.testing.assert_close(tr["a.weights"], want_w, rtol=0, atol=ATOL)
        assert (tr["a.weights"][2, :, :, 1:] == 0.0).all()


@pytest.mark.parametrize("traced", [False, True])
def test_causal_self_attention_matches_torch_mha(traced):
    ours, ref = _pair(seed=1)
    x = torch.randn(2, 5, 16)
    tr = Trace() if traced else None
    got = ours(x, is_causal=True, trace=tr, name="a")
    bool_mask = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
    want, want_w = ref(x, x, x, attn_mask=bool_mask, average_attn_weights=False)
    torch.testing.assert_close(got, want, rtol=0, atol=ATOL)
    if traced:
        torch.testing.assert_close(tr["a.weights"], want_w, rtol=0, atol=ATOL)


@pytest.mark.parametrize("traced", [False, True])
def test_cross_attention_matches_torch_mha(traced):
    ours, ref = _pair(seed=2)
    x = torch.randn(2, 3, 16)  # 3 queries
    mem = torch.randn(2, 7, 16)  # 7 keys
    pad = _pad(2, 7, [7, 5])
    tr = Trace() if traced else None
    got = ours(x, mem, mask=padding_mask(pad), trace=tr, name="c")
    want, want_w = ref(x, mem, mem, key_padding_mask=pad, average_attn_weights=False)
    assert got.shape == (2, 3, 16)
    torch.testing.assert_close(got, want, rtol=0, atol=ATOL)
    if traced:
        assert tr["c.q"].shape == (2, 4, 3, 4)
        assert tr["c.k"].shape == (2, 4, 7, 4)
        assert tr["c.weights"].shape == (2, 4, 3, 7)
        torch.testing.assert_close(tr["c.weights"], want_w, rtol=0, atol=ATOL)


def test_cross_attention_cache_reuses_keys():
    ours, _ = _pair(seed=3)
    x, mem = torch.randn(1, 2, 16), torch.randn(1, 5, 16)
    cache = {}
    first = ours(x, mem, cache=cache)
    assert cache["k"].shape == (1, 4, 5, 4)
    # the cached keys are used even if a different memory is passed later
    again = ours(x, torch.zeros_like(mem), cache=cache)
    torch.testing.assert_close(again, first, rtol=0, atol=0)


def test_self_attention_cache_matches_full_pass():
    torch.manual_seed(4)
    mha = MultiHeadAttention(16, 4, 2).eval()
    x = torch.randn(1, 6, 16)
    full = mha(x, is_causal=True)
    cache = {}
    steps = [mha(x[:, i:i + 1], is_causal=True, cache=cache) for i in range(6)]
    torch.testing.assert_close(torch.cat(steps, 1), full, rtol=0, atol=ATOL)
    assert cache["k"].shape == (1, 2, 6, 4)


# --------------------------------------------------------------------- GQA / MQA
@pytest.mark.parametrize("n_kv", [4, 2, 1])
def test_gqa_trace_shapes_and_parameter_count(n_kv):
    d_model, h, d = 32, 4, 8
    mha = MultiHeadAttention(d_model, h, n_kv)
    n_params = sum(p.numel() for p in mha.parameters())
    qkv_out = (h + 2 * n_kv) * d
    assert n_params == qkv_out * d_model + qkv_out + d_model * d_model + d_model
    tr = Trace()
    x = torch.randn(2, 5, d_model)
    y = mha(x, trace=tr, name="s")
    assert y.shape == (2, 5, d_model)
    assert tr["s.q"].shape == (2, h, 5, d)
    assert tr["s.k"].shape == (2, n_kv, 5, d)
    assert tr["s.v"].shape == (2, n_kv, 5, d)
    assert tr["s.weights"].shape == (2, h, 5, 5)
    assert tr["s.heads"].shape == (2, h, 5, d)
    # heads in the same group share keys: their weights differ only through q
    y_fused = mha(x)
    torch.testing.assert_close(y_fused, y, rtol=0, atol=ATOL)


def test_gqa_fewer_parameters_than_mha():
    sizes = [sum(p.numel() for p in MultiHeadAttention(32, 4, g).parameters()) for g in (4, 2, 1)]
    assert sizes[0] > sizes[1] > sizes[2]


def test_gqa_group_sharing():
    """With GQA, heads h and h' in one group see the same k; a head uses k of group h // (H/G)."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(32, 4, 2)
    tr = Trace()
    x = torch.randn(1, 5, 32)
    mha(x, trace=tr, name="s")
    q, k = tr["s.q"], tr["s.k"]
    for head in range(4):
        scores = q[:, head] @ k[:, head // 2].transpose(-2, -1) / math.sqrt(8)
        torch.testing.assert_close(tr["s.scores"][:, head], scores, rtol=0, atol=ATOL)
    # and not the other group's keys
    wrong = q[:, 0] @ k[:, 1].transpose(-2, -1) / math.sqrt(8)
    assert not torch.allclose(tr["s.scores"][:, 0], wrong, atol=1e-3)


@pytest.mark.parametrize("n_kv", [4, 2, 1])
def test_head_weights_reproduce_trace(n_kv):
    torch.manual_seed(n_kv)
    d_model, h, d = 32, 4, 8
    mha = MultiHeadAttention(d_model, h, n_kv)
    tr = Trace()
    x = torch.randn(2, 5, d_model)
    mha(x, trace=tr, name="s")
    b = mha.qkv.bias
    for head in range(h):
        w = mha.head_weights(head)
        assert w["W_Q"].shape == (d_model, d) and w["W_O"].shape == (d, d_model)
        g = head // (h // n_kv)
        q = x @ w["W_Q"] + b[head * d:(head + 1) * d]
        k = x @ w["W_K"] + b[(h + g) * d:(h + g + 1) * d]
        v = x @ w["W_V"] + b[(h + n_kv + g) * d:(h + n_kv + g + 1) * d]
        torch.testing.assert_close(q, tr["s.q"][:, head], rtol=0, atol=ATOL)
        torch.testing.assert_close(k, tr["s.k"][:, g], rtol=0, atol=ATOL)
        torch.testing.assert_close(v, tr["s.v"][:, g], rtol=0, atol=ATOL)
    # output projection: the sum over heads of heads_i @ W_O_i (+ bias) is the layer output
    y = mha(x)
    heads = tr["s.heads"]
    rebuilt = sum(heads[:, i] @ mha.head_weights(i)["W_O"] for i in range(h)) + mha.out.bias
    torch.testing.assert_close(rebuilt, y, rtol=0, atol=ATOL)


def test_head_mask_zeros_one_head():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4)
    x = torch.randn(1, 4, 16)
    tr = Trace()
    hm = torch.tensor([1.0, 0.0, 1.0, 1.0])
    y = mha(x, trace=Hooks({"s.heads": scale_heads(hm)}, tr), name="s")  # ablation is a hook on s.heads
    assert (tr["s.heads"][:, 1] == 0).all()
    assert (tr["s.heads"][:, 0] != 0).any()
    heads = tr["s.heads"]
    rebuilt = sum(heads[:, i] @ mha.head_weights(i)["W_O"] for i in (0, 2, 3)) + mha.out.bias
    torch.testing.assert_close(rebuilt, y, rtol=0, atol=ATOL)
    assert not torch.allclose(mha(x), y, atol=1e-4)
