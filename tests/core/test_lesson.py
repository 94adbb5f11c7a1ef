"""The lesson's hand computations equal the paper's formulas computed here from the weights, independently."""
import math

import pytest
import torch

from core.probes import lesson
from core.config import ModelConfig
from core.model import Transformer

SRC = [[5, 9, 7, 11, 6, 8]]
TGT = [[2, 12, 13, 14]]


def model(**kw):
    torch.manual_seed(0)
    cfg = dict(kind="encoder-decoder", vocab_size=30, d_model=32, n_heads=4, n_encoder_layers=2, n_decoder_layers=2,
               d_ff=64, dropout=0.0, max_len=16)
    cfg.update(kw)
    return Transformer(ModelConfig(**cfg)).eval()


def formula(m, x, head, memory=None, causal=False):
    """softmax(QKᵀ/√d_k + M)V for one head, straight from the module's weights (Vaswani et al. eq. 1)."""
    attn = m
    w = attn.head_weights(head)
    d, h, g = attn.d_head, attn.n_heads, attn.n_kv
    b = attn.qkv.bias
    kv = head // (h // g)
    bq, bk, bv = b[head * d:(head + 1) * d], b[(h + kv) * d:(h + kv + 1) * d], b[(h + g + kv) * d:(h + g + kv + 1) * d]
    src = x if memory is None else memory
    q, k, v = x @ w["W_Q"] + bq, src @ w["W_K"] + bk, src @ w["W_V"] + bv
    s = q @ k.T / math.sqrt(d)
    if causal:
        s = s + torch.full(s.shape, float("-inf")).triu(1)
    a = s.softmax(-1)
    return a, a @ v


@pytest.mark.parametrize("kv_heads", [None, 2, 1])
@pytest.mark.parametrize("head", [0, 3])
def test_head_by_hand_is_equation_one(kv_heads, head):
    m = model(n_kv_heads=kv_heads)
    out = m(torch.tensor(SRC), torch.tensor(TGT), trace=True)
    tr = out.trace
    with torch.no_grad():
        x_enc = tr["encoder.embed.out"][0]
        a, o = formula(m.encoder.layers[0].self_attn, x_enc, head)
        hb = lesson.head_by_hand(tr, "encoder.0.self_attn", head)
        torch.testing.assert_close(hb["weights"], a, atol=1e-5, rtol=0)
        torch.testing.assert_close(hb["out"], o, atol=1e-5, rtol=0)
        assert hb["weights_error"] < 1e-6 and hb["out_error"] < 1e-6
        x_dec = tr["decoder.embed.out"][0]
        a, o = formula(m.decoder.layers[0].self_attn, x_dec, head, causal=True)
        hb = lesson.head_by_hand(tr, "decoder.0.self_attn", head)
        torch.testing.assert_close(hb["weights"], a, atol=1e-5, rtol=0)
        assert (hb["weights"].triu(1) == 0).all()  # the future gets exactly 0
        assert torch.isinf(hb["mask"].triu(1)[0, 1:]).all()
        mid = tr["decoder.0.resid_mid"][0]
        a, o = formula(m.decoder.layers[0].cross_attn, mid, head, memory=out.memory[0])
        hb = lesson.head_by_hand(tr, "decoder.0.cross_attn", head)
        torch.testing.assert_close(hb["out"], o, atol=1e-5, rtol=0)


def test_merge_heads_is_concat_times_w_o_and_notices_a_wrong_w_o():
    m = model()
    tr = m(torch.tensor(SRC), torch.tensor(TGT), trace=True).trace
    for name in ("encoder.1.self_attn", "decoder.0.self_attn", "decoder.1.cross_attn"):
        merged = lesson.merge_heads(m, tr, name)
        assert merged["concat"].shape == (tr[f"{name}.q"].shape[2], 32)
        assert merged["error"] < 1e-5
    with torch.no_grad():
        m.encoder.layers[1].self_attn.out.weight.mul_(1.5)  # the recorded output no longer matches
    assert lesson.merge_heads(m, tr, "encoder.1.self_attn")["error"] > 1e-3


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_add_and_norm_matches_the_stream(norm):
    m = model(norm=norm)
    tr = m(torch.tensor(SRC), torch.tensor(TGT), trace=True).trace
    for stack in ("encoder", "decoder"):
        for layer in (0, 1):
            res = lesson.add_and_norm(m, tr, stack, layer)
            assert res["pre_ln"] == (norm == "pre")
            assert res["error"] < 1e-5
    if norm == "post":  # LayerNorm output: zero mean, unit variance per token before the affine part
        after = lesson.add_and_norm(m, tr, "encoder", 0)["after"]
        ln = m.encoder.layers[0].attn_res.norm
        plain = (after - ln.bias.detach()) / ln.weight.detach()
        torch.testing.assert_close(plain.mean(-1), torch.zeros(len(SRC[0])), atol=1e-5, rtol=0)


def test_head_profile_on_known_patterns():
    t = 5
    eye = torch.eye(t)
    uniform = torch.full((t, t), 1 / t)
    prev = torch.zeros(t, t)
    prev[0, 0] = 1
    for i in range(1, t):
        prev[i, i - 1] = 1
    prof = lesson.head_profile(torch.stack([eye, uniform, prev]))
    torch.testing.assert_close(prof["entropy"], torch.tensor([0.0, math.log(t), 0.0]), atol=1e-6, rtol=0)
    torch.testing.assert_close(prof["diagonal"], torch.tensor([1.0, 1 / t, 1 / t]), atol=1e-6, rtol=0)
    torch.testing.assert_close(prof["distance"][[0, 2]], torch.tensor([0.0, (t - 1) / t]), atol=1e-6, rtol=0)


def test_next_token_distribution_is_a_distribution():
    m = model()
    tr = m(torch.tensor(SRC), torch.tensor(TGT), trace=True).trace
    p, ids, total = lesson.next_token_distribution(tr, k=5)
    assert math.isclose(total, 1.0, abs_tol=1e-5)
    assert (p[:-1] >= p[1:]).all() and int(ids[0]) == int(tr.logits[0, -1].argmax())
