"""The Transformer against torch.nn.Transformer, traced vs fused paths, ablation, Trace, config checks."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from core import ModelConfig, Trace, Transformer
from core.config import POSITIONAL

ATOL = 1e-5
# nn.Transformer(norm_first=True) warns that it cannot use nested tensors; irrelevant here
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning")
KINDS = ("encoder-decoder", "decoder-only", "encoder-only")


def tiny(**kw) -> ModelConfig:
    base = dict(vocab_size=23, d_model=16, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=32,
                max_len=32, dropout=0.0)
    base.update(kw)
    return ModelConfig(**base)


def _ids(b, t, vocab=23, seed=0, lengths=None):
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, vocab, (b, t), generator=gen)
    if lengths is not None:
        for row, n in enumerate(lengths):
            ids[row, n:] = 0  # pad_id
    return ids


def _run(model, kind, src, tgt, **kw):
    if kind == "encoder-decoder":
        return model(src, tgt, **kw)
    return model(src, **kw)


# --------------------------------------------------------------------- parity with torch.nn.Transformer
def _copy_mha(ours, theirs):
    ours.qkv.weight.copy_(theirs.in_proj_weight)
    ours.qkv.bias.copy_(theirs.in_proj_bias)
    ours.out.weight.copy_(theirs.out_proj.weight)
    ours.out.bias.copy_(theirs.out_proj.bias)


def _copy_ln(ours, theirs):
    ours.weight.copy_(theirs.weight)
    ours.bias.copy_(theirs.bias)


def _copy_ffn(ours, layer):
    ours.w1.weight.copy_(layer.linear1.weight)
    ours.w1.bias.copy_(layer.linear1.bias)
    ours.w2.weight.copy_(layer.linear2.weight)
    ours.w2.bias.copy_(layer.linear2.bias)


def _paired(norm: str, seed: int = 0):
    torch.manual_seed(seed)
    cfg = tiny(kind="encoder-decoder", norm=norm, final_norm=True, activation="relu")
    ours = Transformer(cfg).eval()
    ref = nn.Transformer(d_model=16, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=32,
                         dropout=0.0, activation="relu", batch_first=True, norm_first=norm == "pre").eval()
    with torch.no_grad():
        for p in ref.parameters():  # move LayerNorm affine params away from (1, 0) so a mix-up shows
            p.add_(0.1 * torch.randn_like(p))
        for ol, rl in zip(ours.encoder.layers, ref.encoder.layers):
            _copy_mha(ol.self_attn, rl.self_attn)
            _copy_ffn(ol.ffn, rl)
            _copy_ln(ol.attn_res.norm, rl.norm1)
            _copy_ln(ol.ffn_res.norm, rl.norm2)
        for ol, rl in zip(ours.decoder.layers, ref.decoder.layers):
            _copy_mha(ol.self_attn, rl.self_attn)
            _copy_mha(ol.cross_attn, rl.multihead_attn)
            _copy_ffn(ol.ffn, rl)
            _copy_ln(ol.attn_res.norm, rl.norm1)
            _copy_ln(ol.cross_res.norm, rl.norm2)
            _copy_ln(ol.ffn_res.norm, rl.norm3)
        _copy_ln(ours.encoder.norm, ref.encoder.norm)
        _copy_ln(ours.decoder.norm, ref.decoder.norm)
    return ours, ref


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("traced", [False, True])
def test_matches_torch_transformer(norm, traced):
    ours, ref = _paired(norm, seed=1 if norm == "pre" else 0)
    src = _ids(3, 9, seed=1, lengths=[9, 6, 2])
    tgt = _ids(3, 7, seed=2)
    pad = src.eq(0)
    out = ours(src, tgt, trace=traced)
    # same embedded inputs for both models (ours adds √d scaling and sinusoids, reused verbatim)
    x_src = ours.embed(src)
    x_tgt = ours.embed(tgt)
    causal = nn.Transformer.generate_square_subsequent_mask(7)
    # grad mode stays on, so nn.TransformerEncoder takes its regular (non nested-tensor) path
    memory = ref.encoder(x_src, src_key_padding_mask=pad)
    hidden = ref.decoder(x_tgt, memory, tgt_mask=causal, memory_key_padding_mask=pad)
    full = ref(x_src, x_tgt, tgt_mask=causal, src_key_padding_mask=pad, memory_key_padding_mask=pad)
    torch.testing.assert_close(full, hidden, rtol=0, atol=ATOL)
    keep = ~pad
    torch.testing.assert_close(out.memory[keep], memory[keep], rtol=0, atol=ATOL)
    torch.testing.assert_close(out.hidden, hidden.detach(), rtol=0, atol=ATOL)
    torch.testing.assert_close(out.logits, ours.lm_head(hidden).detach(), rtol=0, atol=ATOL)
    if traced:
        torch.testing.assert_close(out.trace["encoder.output"][keep], memory[keep].detach(), rtol=0, atol=ATOL)
        torch.testing.assert_close(out.trace["decoder.output"], hidden.detach(), rtol=0, atol=ATOL)


def test_parity_detects_wrong_norm_placement():
    """The parity check above is not vacuous: post-LN weights in a pre-LN reference disagree."""
    ours, _ = _paired("post")
    _, ref_pre = _paired("pre")
    src, tgt = _ids(2, 5, seed=3), _ids(2, 4, seed=4)
    x_src, x_tgt = ours.embed(src), ours.embed(tgt)
    with torch.no_grad():
        theirs = ref_pre(x_src, x_tgt, tgt_mask=nn.Transformer.generate_square_subsequent_mask(4))
    assert not torch.allclose(ours(src, tgt).hidden, theirs, atol=1e-3)


# --------------------------------------------------------------------- traced vs fused
@pytest.mark.parametrize("pe", POSITIONAL)
@pytest.mark.parametrize("kind", KINDS)
def test_traced_equals_untraced(kind, pe):
    torch.manual_seed(0)
    model = Transformer(tiny(kind=kind, pos_encoding=pe, n_encoder_layers=1, n_decoder_layers=2)).eval()
    src = _ids(2, 8, seed=5, lengths=[8, 5] if kind != "decoder-only" else None)
    tgt = _ids(2, 6, seed=6)
    with torch.no_grad():
        plain = _run(model, kind, src, tgt)
        traced = _run(model, kind, src, tgt, trace=True)
    assert plain.trace is None
    assert traced.trace is not None and "logits" in traced.trace
    torch.testing.assert_close(traced.logits, plain.logits, rtol=0, atol=ATOL)
    torch.testing.assert_close(traced.trace.logits, plain.logits, rtol=0, atol=ATOL)


@pytest.mark.parametrize("kind", KINDS)
def test_traced_equals_untraced_gqa_window_pre(kind):
    torch.manual_seed(1)
    model = Transformer(tiny(kind=kind, n_kv_heads=2, window=3, norm="pre", activation="swiglu",
                             pos_encoding="rope")).eval()
    src, tgt = _ids(2, 9, seed=7), _ids(2, 5, seed=8)
    with torch.no_grad():
        a = _run(model, kind, src, tgt)
        b = _run(model, kind, src, tgt, trace=True)
    torch.testing.assert_close(b.logits, a.logits, rtol=0, atol=ATOL)
    name = "encoder.0.self_attn" if kind != "decoder-only" else "decoder.0.self_attn"
    assert b.trace[f"{name}.k"].shape[1] == 2
    w = b.trace[f"{name}.weights"]
    i, j = torch.meshgrid(torch.arange(w.shape[-2]), torch.arange(w.shape[-1]), indexing="ij")
    assert (w[..., (i - j).abs() >= 3] == 0.0).all()


def test_kv_cache_decoding_matches_full_pass():
    torch.manual_seed(2)
    for kind in ("decoder-only", "encoder-decoder"):
        for pe, window in (("sinusoidal", None), ("rope", 2), ("alibi", None), ("learned", 3)):
            model = Transformer(tiny(kind=kind, pos_encoding=pe, n_kv_heads=2, window=window)).eval()
            src, tgt = _ids(1, 6, seed=9), _ids(1, 5, seed=10)
            with torch.no_grad():
                memory, pad = (model.encode(src) if kind == "encoder-decoder" else (None, None))
                full = model.decode(tgt, memory, pad)
                caches = model.new_caches()
                steps = [model.decode(tgt[:, i:i + 1], memory, pad, start=i, caches=caches) for i in range(5)]
            torch.testing.assert_close(torch.cat(steps, 1), full, rtol=0, atol=ATOL, msg=f"{kind}/{pe}")


# --------------------------------------------------------------------- ablation
@pytest.mark.parametrize("kind", KINDS)
def test_ablation(kind):
    torch.manual_seed(3)
    model = Transformer(tiny(kind=kind)).eval()
    src, tgt = _ids(2, 7, seed=11), _ids(2, 5, seed=12)
    with torch.no_grad():
        base = _run(model, kind, src, tgt).logits
        none = _run(model, kind, src, tgt, ablate={}).logits
        torch.testing.assert_close(none, base, rtol=0, atol=0)
        for name in model.attention_names():
            off = _run(model, kind, src, tgt, ablate={name: [1]})
            assert not torch.allclose(off.logits, base, atol=1e-5), name
            traced = _run(model, kind, src, tgt, ablate={name: [1]}, trace=True)
            torch.testing.assert_close(traced.logits, off.logits, rtol=0, atol=ATOL)
            heads = traced.trace[f"{name}.heads"]
            assert (heads[:, 1] == 0).all()
            assert (heads[:, 0] != 0).any()
            # the weights of the switched-off head are still computed (the app shows them)
            assert traced.trace[f"{name}.weights"][:, 1].sum() > 0


def test_ablation_names_listed():
    ed = Transformer(tiny(kind="encoder-decoder"))
    assert ed.attention_names() == ["encoder.0.self_attn", "encoder.1.self_attn", "decoder.0.self_attn",
                                    "decoder.0.cross_attn", "decoder.1.self_attn", "decoder.1.cross_attn"]
    assert Transformer(tiny(kind="decoder-only")).attention_names() == ["decoder.0.self_attn", "decoder.1.self_attn"]
    assert Transformer(tiny(kind="encoder-only")).attention_names() == ["encoder.0.self_attn", "encoder.1.self_attn"]


def test_ablating_all_heads_of_a_layer_equals_zeroing_its_output_projection_input():
    torch.manual_seed(4)
    model = Transformer(tiny(kind="decoder-only")).eval()
    ids = _ids(1, 6, seed=13)
    with torch.no_grad():
        off = model(ids, ablate={"decoder.0.self_attn": [0, 1, 2, 3]}, trace=True)
    torch.testing.assert_close(off.trace["decoder.0.attn_out"],
                               model.decoder.layers[0].self_attn.out.bias.expand(1, 6, 16), rtol=0, atol=0)


@pytest.mark.parametrize("ablate, match", [
    ({"encoder.0.self_attn": [4]}, "head 4"),
    ({"encoder.0.self_attn": [-1]}, "head -1"),
    ({"encoder.5.self_attn": [0]}, "no such attention"),
    ({"encoder.0.cross_attn": [0]}, "no such attention"),
    ({"decoder.0.ffn": [0]}, "no such attention"),
])
def test_bad_ablation_raises(ablate, match):
    model = Transformer(tiny(kind="encoder-decoder")).eval()
    with pytest.raises(ValueError, match=match):
        model(_ids(1, 4), _ids(1, 4), ablate=ablate)


def test_cross_attention_ablation_rejected_for_decoder_only():
    model = Transformer(tiny(kind="decoder-only")).eval()
    with pytest.raises(ValueError, match="no such attention"):
        model(_ids(1, 4), ablate={"decoder.0.cross_attn": [0]})


# --------------------------------------------------------------------- Trace
def test_trace_names_present_and_shaped():
    torch.manual_seed(5)
    model = Transformer(tiny(kind="encoder-decoder")).eval()
    src, tgt = _ids(2, 7, seed=14, lengths=[7, 4]), _ids(2, 5, seed=15)
    tr = model(src, tgt, trace=True).trace
    for name in ("encoder.embed.tokens", "encoder.embed.positions", "encoder.embed.out",
                 "encoder.0.self_attn.q", "encoder.0.self_attn.weights", "encoder.0.self_attn.scores",
                 "encoder.0.self_attn.mask", "encoder.0.attn_out", "encoder.0.resid_mid", "encoder.0.ffn.act",
                 "encoder.0.ffn_out", "encoder.1.resid_post", "encoder.output",
                 "decoder.0.self_attn.weights", "decoder.0.self_attn.mask", "decoder.1.cross_attn.weights",
                 "decoder.1.cross_attn.mask", "decoder.0.cross_out", "decoder.0.resid_cross",
                 "decoder.0.ffn.act", "decoder.1.resid_post", "decoder.output", "logits"):
        assert name in tr, name
    assert "encoder.0.self_attn.bias" not in tr  # sinusoidal: no ALiBi bias
    assert tr["encoder.0.self_attn.weights"].shape == (2, 4, 7, 7)
    assert tr["decoder.0.self_attn.weights"].shape == (2, 4, 5, 5)
    assert tr["decoder.1.cross_attn.weights"].shape == (2, 4, 5, 7)
    assert tr["decoder.0.ffn.act"].shape == (2, 5, 32)
    assert tr["encoder.0.resid_mid"].shape == (2, 7, 16)
    assert tr.logits.shape == (2, 5, 23)
    assert tr.kinds() == ["encoder", "decoder", "cross"]
    assert tr.n_layers("cross") == 2
    assert tr.stacked("encoder").shape == (2, 2, 4, 7, 7)
    torch.testing.assert_close(tr.attention("cross", 1), tr["decoder.1.cross_attn.weights"], rtol=0, atol=0)
    # cross-attention never looks at padded source tokens
    assert (tr["decoder.1.cross_attn.weights"][1, :, :, 4:] == 0.0).all()
    # ffn.act is relu of the first linear layer: non-negative with some exact zeros
    assert (tr["decoder.0.ffn.act"] >= 0).all() and (tr["decoder.0.ffn.act"] == 0).any()
    # the residual streams chain: resid_mid = LN(embed + attn_out) for post-LN layer 0
    layer = model.encoder.layers[0]
    torch.testing.assert_close(tr["encoder.0.resid_mid"],
                               layer.attn_res.norm(tr["encoder.embed.out"] + tr["encoder.0.attn_out"]),
                               rtol=0, atol=ATOL)
    assert all(not t.requires_grad for t in tr.tensors.values())
    with pytest.raises(KeyError, match="not traced"):
        tr["encoder.9.self_attn.weights"]
    with pytest.raises(ValueError, match="unknown attention kind"):
        tr.attention("sideways", 0)


def test_trace_layer_filter():
    torch.manual_seed(6)
    model = Transformer(tiny(kind="encoder-decoder", n_encoder_layers=3, n_decoder_layers=3)).eval()
    src, tgt = _ids(1, 6, seed=16), _ids(1, 4, seed=17)
    tr = Trace(layers={1})
    with torch.no_grad():
        out = model(src, tgt, trace=tr)
        plain = model(src, tgt)
    assert out.trace is tr
    torch.testing.assert_close(out.logits, plain.logits, rtol=0, atol=ATOL)
    layered = [n for n in tr.keys() if n.split(".")[1:2] and n.split(".")[1].isdigit()]
    assert layered, "nothing per-layer was captured"
    assert {int(n.split(".")[1]) for n in layered} == {1}
    for name in ("encoder.1.self_attn.weights", "decoder.1.self_attn.weights", "decoder.1.cross_attn.weights",
                 "decoder.1.ffn.act", "encoder.1.resid_post"):
        assert name in tr
    assert "encoder.0.self_attn.weights" not in tr and "decoder.2.ffn.act" not in tr
    assert tr.layer_indices("encoder") == [1]


def test_trace_memory_smaller_with_layer_filter():
    model = Transformer(tiny(kind="decoder-only", n_decoder_layers=3)).eval()
    ids = _ids(1, 8)
    with torch.no_grad():
        everything = model(ids, trace=True).trace
        one = model(ids, trace=Trace(layers={0})).trace
    assert 0 < one.nbytes() < everything.nbytes()


def _maps_by_hand(tr, name):
    """softmax(QKᵀ/√d_k + bias + mask) from the recorded q and k, written out in float64 (GQA: shared k)."""
    q, k = tr[f"{name}.q"].double(), tr[f"{name}.k"].double()
    k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    logits = scores + (tr[f"{name}.bias"].double() if f"{name}.bias" in tr else 0)
    logits = logits + (tr[f"{name}.mask"].double() if f"{name}.mask" in tr else 0)
    return scores, torch.softmax(logits, -1)


@pytest.mark.parametrize("kw", [dict(kind="encoder-decoder"), dict(kind="decoder-only", pos_encoding="alibi"),
                                dict(kind="encoder-decoder", n_kv_heads=2, window=3)])
def test_trace_defers_attention_maps_until_read(kw):
    # the traced forward keeps q, k, v and the heads; a layer's scores, mask and weights are computed
    # from them on the first read, and equal the formula; the heads equal weights · v
    torch.manual_seed(7)
    model = Transformer(tiny(**kw)).eval()
    src, tgt = _ids(2, 7, seed=31, lengths=[7, 5]), _ids(2, 6, seed=32)
    with torch.no_grad():
        tr = _run(model, kw["kind"], src, tgt, trace=True).trace
    names = [n.rsplit(".", 1)[0] for n in tr.keys() if n.endswith(".weights")]
    assert len(names) == (6 if kw["kind"] == "encoder-decoder" else 2)
    assert not any(n.endswith((".weights", ".scores")) for n in tr.tensors), "maps were computed eagerly"
    held = tr.nbytes()
    first = names[-1]
    w = tr[f"{first}.weights"]
    computed = {n.rsplit(".", 1)[0] for n in tr.tensors if n.endswith(".weights")}
    assert computed == {first}, "reading one layer computed others"
    assert tr.nbytes() > held
    scores = tr[f"{first}.scores"]
    assert tr[f"{first}.weights"] is w and tr[f"{first}.scores"] is scores  # one computation for the three
    for name in names:
        scores, weights = _maps_by_hand(tr, name)
        torch.testing.assert_close(tr[f"{name}.scores"].double(), scores, rtol=0, atol=1e-5)
        torch.testing.assert_close(tr[f"{name}.weights"].double(), weights, rtol=0, atol=1e-6)
        v = tr[f"{name}.v"].repeat_interleave(tr[f"{name}.q"].shape[1] // tr[f"{name}.v"].shape[1], dim=1)
        torch.testing.assert_close(tr[f"{name}.heads"], tr[f"{name}.weights"] @ v, rtol=0, atol=1e-5)
    assert not tr._pending


def test_trace_materialize_and_layer_filter_with_deferred_maps():
    torch.manual_seed(8)
    model = Transformer(tiny(kind="encoder-decoder")).eval()
    src, tgt = _ids(1, 6, seed=33), _ids(1, 5, seed=34)
    tr = model(src, tgt, trace=Trace(layers={1})).trace
    assert tr.layer_indices("cross") == [1] and tr.kinds() == ["encoder", "decoder", "cross"]
    assert tr.materialize() is tr and not tr._pending
    assert {n for n in tr.tensors if n.endswith(".weights")} == {
        "encoder.1.self_attn.weights", "decoder.1.self_attn.weights", "decoder.1.cross_attn.weights"}
    assert all(not t.requires_grad for t in tr.tensors.values())
    moved = model(src, tgt, trace=True).trace.to("cpu")  # moving a trace computes what it defers first
    assert not moved._pending and "decoder.0.cross_attn.weights" in moved.tensors


def test_deferred_maps_read_from_many_threads_are_computed_once():
    # the app caches traces and serves them to several sessions at once
    import threading

    tr, calls = Trace(), []

    def compute():
        calls.append(1)
        return {"scores": torch.ones(2), "weights": torch.full((2,), 0.5)}

    tr.defer("encoder.0.self_attn", ("scores", "weights"), compute)
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(tr["encoder.0.self_attn.weights"])) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and all(s is seen[0] for s in seen)
    assert tr["encoder.0.self_attn.scores"].tolist() == [1.0, 1.0] and len(calls) == 1


def test_trace_keeps_the_weights_that_made_the_output_when_attention_dropout_is_on():
    # with dropout in training, weights computed later could not be the ones the output used:
    # the traced pass then stores them as it computes them
    torch.manual_seed(9)
    model = Transformer(tiny(kind="decoder-only", dropout=0.5)).train()
    tr = model(_ids(1, 6, seed=35), trace=True).trace
    assert not tr._pending and "decoder.0.self_attn.weights" in tr.tensors
    _, weights = _maps_by_hand(tr, "decoder.0.self_attn")
    torch.testing.assert_close(tr["decoder.0.self_attn.weights"].double(), weights, rtol=0, atol=1e-6)


# --------------------------------------------------------------------- kinds
def test_decoder_only_is_causal():
    torch.manual_seed(7)
    model = Transformer(tiny(kind="decoder-only")).eval()
    ids = _ids(1, 8, seed=18)
    changed = ids.clone()
    changed[0, 5:] = (changed[0, 5:] % 22) + 1  # alter the future only
    with torch.no_grad():
        a, b = model(ids).logits, model(changed).logits
    torch.testing.assert_close(a[:, :5], b[:, :5], rtol=0, atol=ATOL)
    assert not torch.allclose(a[:, 5:], b[:, 5:], atol=1e-4)
    assert model.encoder is None
    assert a.shape == (1, 8, 23)


def test_encoder_only_is_bidirectional_with_mlm_head():
    torch.manual_seed(8)
    model = Transformer(tiny(kind="encoder-only", activation="gelu", type_vocab_size=2, embedding_norm=True)).eval()
    ids = _ids(1, 8, seed=19)
    changed = ids.clone()
    changed[0, 7] = ids[0, 7] % 22 + 1
    with torch.no_grad():
        a = model(ids, token_types=torch.zeros_like(ids)).logits
        b = model(changed, token_types=torch.zeros_like(ids)).logits
        c = model(ids, token_types=torch.ones_like(ids)).logits
    assert not torch.allclose(a[:, 0], b[:, 0], atol=1e-5)  # position 0 sees position 7
    assert not torch.allclose(a, c, atol=1e-5)  # token types matter
    assert model.decoder is None and a.shape == (1, 8, 23)
    assert model.lm_head.bias is not None


def test_encoder_decoder_target_does_not_change_memory():
    torch.manual_seed(9)
    model = Transformer(tiny(kind="encoder-decoder")).eval()
    src = _ids(2, 6, seed=20)
    with torch.no_grad():
        a = model(src, _ids(2, 4, seed=21))
        b = model(src, _ids(2, 4, seed=22))
    torch.testing.assert_close(a.memory, b.memory, rtol=0, atol=0)
    assert not torch.allclose(a.logits, b.logits)


def test_weight_tying():
    torch.manual_seed(10)
    model = Transformer(tiny(kind="decoder-only"))
    assert model.lm_head.weight is model.embed.tokens.weight
    untied = Transformer(tiny(kind="decoder-only", tie_embeddings=False))
    assert untied.lm_head.weight is not untied.embed.tokens.weight
    assert model.num_parameters() == untied.num_parameters() - 23 * 16
    # tying survives a training step
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ids = _ids(2, 6, seed=23)
    loss = model(ids).logits.logsumexp(-1).mean()
    loss.backward()
    opt.step()
    torch.testing.assert_close(model.lm_head.weight, model.embed.tokens.weight, rtol=0, atol=0)
    assert model.lm_head.weight.data_ptr() == model.embed.tokens.weight.data_ptr()


def test_dropout_active_only_in_training():
    torch.manual_seed(11)
    model = Transformer(tiny(kind="decoder-only", dropout=0.3))
    ids = _ids(1, 6, seed=24)
    model.train()
    assert not torch.allclose(model(ids).logits, model(ids).logits)
    model.eval()
    torch.testing.assert_close(model(ids).logits, model(ids).logits, rtol=0, atol=0)


# --------------------------------------------------------------------- configuration errors
@pytest.mark.parametrize("kw, match", [
    (dict(d_model=30, n_heads=4), r"d_model \(30\) must be divisible by n_heads \(4\)"),
    (dict(pos_encoding="spiral"), r"unknown positional encoding 'spiral'.*sinusoidal"),
    (dict(n_heads=4, n_kv_heads=3), r"n_kv_heads \(3\) must divide n_heads \(4\)"),
    (dict(n_kv_heads=0), "n_kv_heads must be between 1 and"),
    (dict(kind="encoder-ish"), "unknown model kind"),
    (dict(norm="middle"), "unknown norm placement"),
    (dict(activation="tanh"), "unknown activation"),
    (dict(d_model=12, n_heads=4, pos_encoding="rope"), "RoPE needs an even head dimension"),
    (dict(dropout=1.0), "dropout must be in"),
    (dict(n_heads=0), "n_heads must be a positive integer"),
    (dict(pad_id=99), "pad_id 99 outside the vocabulary"),
    (dict(window=0), "window must be between 1 and"),
])
def test_bad_config_raises(kw, match):
    with pytest.raises(ValueError, match=match):
        tiny(**kw)


def test_config_from_dict_rejects_unknown_fields():
    with pytest.raises(ValueError, match="unknown config field.*colour"):
        ModelConfig.from_dict({"colour": "blue"})
    assert ModelConfig.from_dict(tiny().to_dict()) == tiny()


def test_too_long_and_empty_inputs_raise():
    model = Transformer(tiny(kind="encoder-decoder", max_len=8)).eval()
    ok = _ids(1, 8)
    with pytest.raises(ValueError, match="src has 9 positions; this model's maximum is 8"):
        model(_ids(1, 9), ok)
    with pytest.raises(ValueError, match="tgt has 9 positions"):
        model(ok, _ids(1, 9))
    with pytest.raises(ValueError, match="src is empty"):
        model(torch.zeros(1, 0, dtype=torch.long), ok)
    with pytest.raises(ValueError, match="tgt is empty"):
        model(ok, torch.zeros(1, 0, dtype=torch.long))
    with pytest.raises(ValueError, match="tgt is required"):
        model(ok)
    with pytest.raises(ValueError, match=r"\[batch, length\]"):
        model(ok[0], ok)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model(ok, torch.full((1, 3), 23))
    assert model(ok, ok).logits.shape == (1, 8, 23)  # exactly max_len is fine
    with pytest.raises(ValueError, match="maximum is 8"):
        model.decode(_ids(1, 2), model.encode(ok)[0], start=7)
