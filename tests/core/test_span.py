"""Attention spans (core.probes.compress): the radius that holds a share of a query's attention, per-head span
masks through the mask hook, and the held-out cut."""
import pytest
import torch

from core.config import ModelConfig
from core.io import registry
from core.model import Transformer
from core.probes import heads as H
from core.probes import compress as S

pytestmark = pytest.mark.usefixtures("one_thread")


def tiny(kind="encoder-decoder") -> Transformer:
    torch.manual_seed(0)
    cfg = ModelConfig(kind=kind, vocab_size=23, d_model=16, n_heads=4, n_encoder_layers=2, n_decoder_layers=2,
                      d_ff=32, max_len=32, dropout=0.0)
    return Transformer(cfg).eval()


def test_a_querys_span_is_the_smallest_radius_holding_the_mass():
    w = torch.tensor([[0.85, 0.05, 0.05, 0.05],
                      [0.30, 0.60, 0.05, 0.05],
                      [0.05, 0.10, 0.70, 0.15],
                      [0.97, 0.01, 0.01, 0.01]])
    cum = S.radius_mass(w)
    assert cum[2].tolist() == pytest.approx([0.70, 0.95, 1.00, 1.00])  # |2-1| = |2-3| = 1, |2-0| = 2
    assert cum[:, -1].tolist() == pytest.approx([1.0] * 4)
    assert S.query_spans(w, 0.9).tolist() == [1, 1, 1, 3]
    assert S.query_spans(w, 0.96).tolist() == [3, 2, 2, 3]
    assert S.query_spans(w, 0.5).tolist() == [0, 0, 0, 3]


@pytest.mark.parametrize("kind", ["encoder-decoder", "decoder-only", "encoder-only"])
def test_each_head_sees_only_keys_within_its_own_span(kind):
    model = tiny(kind)
    x = torch.randint(5, 23, (2, 9), generator=torch.Generator().manual_seed(1))
    name = S.self_attentions(model)[-1]
    radii = torch.tensor([0, 1, 3, 30])
    with model.hooks(S.span_hooks({name: radii})):
        out = model(x, x, trace=True) if kind == "encoder-decoder" else model(x, trace=True)
    w = out.trace[f"{name}.weights"]  # [B, H, T, T]
    dist = (torch.arange(9)[:, None] - torch.arange(9)[None, :]).abs()
    for h, r in enumerate(radii.tolist()):
        assert float(w[:, h][:, dist > r].abs().sum()) == 0.0
        assert w[:, h].sum(-1).allclose(torch.ones(2, 9))
    if not name.startswith("decoder"):  # radius 0 without a causal mask: each token attends to itself only
        assert torch.equal(w[:, 0], torch.eye(9).expand(2, 9, 9))
    causal = name.startswith("decoder")
    if causal:  # the causal mask still holds under the span
        assert float(w[..., dist.tril().ne(dist)].abs().max()) == 0.0
    else:  # the widest head is untouched: whole attention
        whole = (model(x, x, trace=True) if kind == "encoder-decoder" else model(x, trace=True)).trace
        assert torch.allclose(w[:, 3], whole[f"{name}.weights"][:, 3], atol=1e-6)


def test_only_a_mask_may_come_back_with_one_map_per_head():
    model = tiny("decoder-only")
    x = torch.randint(5, 23, (1, 6), generator=torch.Generator().manual_seed(2))
    with pytest.raises(ValueError, match="returned shape"):
        with model.hooks({"decoder.0.self_attn.heads": [lambda t, _n: t[:, :1]]}):
            model(x)
    with pytest.raises(ValueError, match="returned shape"):  # a mask of another length is refused too
        with model.hooks({"decoder.0.self_attn.mask": [lambda m, _n: m[..., :-1]]}):
            model(x)


def test_the_cut_on_held_out_text_keeps_its_promise():
    """lm-tiny: spans wide enough leave the loss as it was; the spans measured keep ≥ 90 % of the attention for
    ≥ 90 % of the queries; the uniform radius computes about as many pairs as the per-head spans."""
    ck = registry.load("lm-tiny")
    batch, _ = H.eval_batch(ck, n=8)
    wide = {n: torch.full((ck.model.cfg.n_heads,), 10_000) for n in S.self_attentions(ck.model)}
    base = H.batch_loss(ck.model, batch)
    with ck.model.hooks(S.span_hooks(wide)):
        assert H.batch_loss(ck.model, batch)[0] == pytest.approx(base[0], abs=1e-6)
    spans = S.head_spans(ck.model, batch)
    trace = ck.model(batch.tgt_in, trace=True).trace
    for name, radii in spans.items():
        w = trace[f"{name}.weights"]
        for h, r in enumerate(radii.tolist()):
            within = S.radius_mass(w[:, h])[..., r]  # [B, T]
            assert float((within >= 0.9 - 1e-6).float().mean()) >= 0.9
            if r > 0:  # and it is the smallest such radius
                assert float((S.radius_mass(w[:, h])[..., r - 1] >= 0.9 - 1e-6).float().mean()) < 0.9
    res = S.span_experiment(ck, n=8)
    assert res.full == pytest.approx(base)
    assert 0 < res.cut_share <= 1 and abs(res.uniform_share - res.cut_share) < 0.05
    t = batch.tgt_in.shape[1]
    assert S.pairs(t, t, causal=True) == t * (t + 1) // 2 and S.pairs(t, 0, causal=False) == t


@pytest.mark.parametrize("name", ["en-fr", "lm", "mlm"])
def test_shipped_span_study_is_what_these_weights_give(name):
    """summaries.json's spans (python scripts/precompute.py --parts spans): each head's span re-measured from the
    weights, and for mlm the whole cut again."""
    from core.probes import summaries
    ck = registry.load(name)
    shipped = summaries.spans_summary(ck, name)
    assert shipped is not None, f"python scripts/precompute.py --model {name} --parts spans"
    batch, _ = H.eval_batch(ck, n=summaries.EVAL_N)
    again = S.head_spans(ck.model, batch)
    assert {k: v.tolist() for k, v in again.items()} == {k: v.tolist() for k, v in shipped.spans.items()}
    assert shipped.full == pytest.approx(H.batch_loss(ck.model, batch), abs=1e-4)
    if name == "mlm":
        res = S.span_experiment(ck)
        assert (res.cut, res.uniform, res.uniform_radius) == (pytest.approx(shipped.cut, abs=1e-4),
                                                              pytest.approx(shipped.uniform, abs=1e-4),
                                                              shipped.uniform_radius)
