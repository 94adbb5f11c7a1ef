"""Head importance, pruning curves and the GQA/MQA parameter and KV-cache arithmetic."""
import dataclasses

import pytest
import torch

from core.probes import heads as H
from core.io import registry
from core.config import ModelConfig
from core.inference.decoding import Incremental
from core.model import Transformer
from core.training.tasks import Batch
from core.io.tokenizer import MASK


pytestmark = pytest.mark.usefixtures("one_thread")
TRANSLATOR = next(n for n in ("en-fr-tiny", "en-fr") if n in registry.bundled())  # the small bundled translator


def signal_batch(model, n=6, t=10, seed=0):
    """Targets = the token head 1 pushes up the most: what only that head knows."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(5, model.cfg.vocab_size, (n, t), generator=g)
    with torch.no_grad():
        diff = model(x).logits - model(x, ablate={"decoder.0.self_attn": [1]}).logits
    return Batch(None, x, diff.argmax(-1))


def one_signal_head_model():
    """One layer, 4 heads; heads 0, 2, 3 have W_O = 0 (they carry nothing), head 1 is amplified."""
    torch.manual_seed(0)
    cfg = ModelConfig(kind="decoder-only", vocab_size=40, d_model=32, n_heads=4, n_decoder_layers=1, d_ff=32,
                      dropout=0.0, max_len=16, norm="pre", pos_encoding="learned")
    model = Transformer(cfg).eval()
    attn = model.decoder.layers[0].self_attn
    with torch.no_grad():
        w = attn.out.weight.view(32, 4, 8)
        w[:, [0, 2, 3]] = 0
        w[:, 1] *= 8
    return model


def test_the_head_that_carries_the_signal_ranks_first_and_silent_heads_change_nothing():
    model = one_signal_head_model()
    batch = signal_batch(model)
    imp = H.head_importance(model, batch)
    assert imp.ranking[0][:2] == ("decoder.0.self_attn", 1)
    assert imp.ranking[0][2] > 0.1
    for name, head, delta in imp.ranking[1:]:
        assert abs(delta) < 1e-5
        loss, _ = H.batch_loss(model, batch, {name: [head]})
        assert loss == pytest.approx(imp.base_loss, abs=1e-5)


def test_importance_ranking_and_curve_on_the_bundled_lm_are_deterministic():
    ck = registry.load("lm-tiny")
    batch, _ = H.eval_batch(ck, n=8)
    a, b = H.head_importance(ck.model, batch, "loss"), H.head_importance(ck.model, batch, "loss")
    assert a.ranking == b.ranking
    assert len(a.ranking) == 8 and a.delta.shape == (2, 4)
    base, acc = H.batch_loss(ck.model, batch)
    assert a.base_loss == base and a.base_acc == acc
    # the least important head barely moves the loss; switching it off gives exactly base + delta
    name, head, delta = a.ranking[-1]
    assert H.batch_loss(ck.model, batch, {name: [head]})[0] == pytest.approx(base + delta, abs=1e-6)
    assert abs(delta) <= abs(a.ranking[0][2]) + 1e-9 or delta < 0
    curve = H.prune_curve(ck.model, batch, a.least_first())
    assert [p.kept for p in curve] == list(range(8, -1, -1))
    assert curve[0].loss == pytest.approx(base) and curve[0].removed == []
    assert curve[-1].loss > curve[0].loss + 0.5  # no attention at all hurts a lot
    assert curve[1].removed == [a.least_first()[0]]


def test_the_masked_lm_is_ranked_on_its_own_held_out_objective():
    """The evaluation batch of the bundled mlm is the held-out corruption its card was scored on: same loss."""
    ck = registry.load("mlm")
    batch, items = H.eval_batch(ck, n=300)
    assert items == [] and batch.src is None and bool(batch.tgt_in.eq(MASK).any())
    loss, _ = H.batch_loss(ck.model, batch)
    assert loss == pytest.approx(ck.meta["heldout"]["valid_loss"], abs=1e-5)
    small, _ = H.eval_batch(ck, n=16)
    imp = H.head_importance(ck.model, small)
    assert float(imp.delta.max()) > 0.05  # some head matters for filling in words


def test_greedy_pruning_and_translation_quality_on_a_small_batch():
    ck = registry.load(TRANSLATOR)
    batch, pairs = H.eval_batch(ck, n=4)
    full = H.translation_quality(ck, pairs)
    assert set(full) == {"exact_match", "pronoun_accuracy"}
    assert full["exact_match"] >= 0.5  # the bundled model translates held-out sentences
    off = sorted(H.all_heads(ck.model))[:2]
    curve = H.prune_curve(ck.model, batch, off + [h for h in H.all_heads(ck.model) if h not in off],
                          quality=lambda a: H.translation_quality(ck, pairs, a), every=12)
    assert curve[0].metrics == full and curve[0].loss == pytest.approx(H.batch_loss(ck.model, batch)[0])
    assert curve[-1].metrics["exact_match"] == 0.0 and curve[12].metrics


@pytest.mark.parametrize("kw", [dict(), dict(kind="decoder-only", pos_encoding="learned", norm="pre"),
                                dict(kind="encoder-only", type_vocab_size=2, embedding_norm=True, bias=False),
                                dict(kind="encoder-only", type_vocab_size=2, nsp=True, pos_encoding="learned"),
                                dict(activation="swiglu", tie_embeddings=False)])
def test_parameter_formula_matches_real_models_for_mha_gqa_and_mqa(kw):
    base = ModelConfig(vocab_size=50, d_model=32, n_heads=4, d_ff=64, max_len=20, **kw)
    mha = Transformer(base).num_parameters()
    assert H.count_parameters(base) == mha
    for g in (4, 2, 1):
        real = Transformer(dataclasses.replace(base, n_kv_heads=g)).num_parameters()
        s = H.kv_savings(base, g)
        assert s["parameters"] == real
        assert mha - real == s["attention_modules"] * 2 * (4 - g) * base.d_head * (32 + int(base.bias))
    assert H.kv_savings(base, 1)["kind"] == "MQA" and H.kv_savings(base, 2)["kind"] == "GQA"
    with pytest.raises(ValueError):
        H.kv_savings(base, 3)


@pytest.mark.parametrize("kind", ["decoder-only", "encoder-decoder"])
def test_kv_cache_bytes_per_token_match_the_incremental_cache(kind):
    for g in (4, 2, 1):
        cfg = ModelConfig(kind=kind, vocab_size=50, d_model=32, n_heads=4, n_kv_heads=g, d_ff=64, max_len=32,
                          n_decoder_layers=3, dropout=0.0)
        model = Transformer(cfg).eval()
        src = torch.randint(5, 50, (1, 7)) if kind == "encoder-decoder" else None
        inc = Incremental(model, src)
        inc.feed(torch.randint(5, 50, (1, 5)))
        inc.feed(torch.randint(5, 50, (1, 4)))
        s = H.kv_savings(cfg)
        self_bytes = H.cache_bytes([c.get("self", c) for c in inc.caches])
        assert self_bytes == 9 * s["kv_bytes_per_token"] == 9 * 3 * 2 * g * 8 * 4
        if kind == "encoder-decoder":
            assert H.cache_bytes([c["cross"] for c in inc.caches]) == 7 * s["cross_kv_bytes_per_source_token"]
        else:
            assert s["cross_kv_bytes_per_source_token"] == 0


def test_to_gqa_mean_pools_kv_heads_and_is_exact_when_heads_already_share():
    torch.manual_seed(0)
    cfg = ModelConfig(kind="decoder-only", vocab_size=40, d_model=32, n_heads=4, d_ff=32, dropout=0.0, max_len=16)
    model = Transformer(cfg).eval()
    x = torch.randint(5, 40, (2, 9))
    with torch.no_grad():  # make K/V heads equal within pairs: GQA with 2 groups is then the same model
        for layer in model.decoder.layers:
            w = layer.self_attn.qkv.weight.view(12, 8, 32)
            bias = layer.self_attn.qkv.bias.view(12, 8)
            for t in (w, bias):
                t[5], t[7], t[9], t[11] = t[4], t[6], t[8], t[10]
    gqa = H.to_gqa(model, 2)
    assert gqa.cfg.kv_heads == 2 and gqa.num_parameters() == H.kv_savings(cfg, 2)["parameters"]
    assert torch.allclose(gqa(x).logits, model(x).logits, atol=1e-5)
    mqa = H.to_gqa(model, 1)
    assert not torch.allclose(mqa(x).logits, model(x).logits, atol=1e-3)
    tr = gqa(x, trace=True).trace
    k = tr.attention("decoder", 0, "k")
    assert k.shape[1] == 2  # two K/V heads shared by four query heads


def test_margin_is_not_saturated_where_the_loss_is():
    """The bundled translators' held-out loss is ~0 whichever single head is off (Δ loss reads 0.000 everywhere);
    the margin log p(reference) − max log p(other), recomputed here by hand, still separates the heads."""
    ck = registry.load(TRANSLATOR)
    batch, _ = H.eval_batch(ck, n=16)
    imp = H.head_importance(ck.model, batch)
    assert imp.measure == "margin" and imp.ranking[0][2] == pytest.approx(float(imp.margin_drop.max()))
    assert float(imp.delta.abs().max()) < 1e-3 < float(imp.margin_drop.max())
    with torch.no_grad():
        logits = ck.model(batch.src, batch.tgt_in).logits.float()
    keep = batch.tgt_out.ne(0)
    margins = []
    for row, t in zip(*keep.nonzero(as_tuple=True)):
        z = logits[row, t].clone()
        ref = int(batch.tgt_out[row, t])
        r = float(z[ref])
        z[ref] = float("-inf")
        margins.append(r - float(z.max()))
    assert imp.base_margin == pytest.approx(sum(margins) / len(margins), rel=1e-5)
    name, head, drop = imp.ranking[0]
    assert H.batch_margin(ck.model, batch, {name: [head]}) == pytest.approx(imp.base_margin - drop, abs=1e-5)
    with pytest.raises(ValueError, match="measure"):
        H.head_importance(ck.model, batch, "accuracy")
