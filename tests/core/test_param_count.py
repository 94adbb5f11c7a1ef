"""Parameter counts: the formula of ModelConfig.parameter_groups against the real model, group by group; the
published shapes built on the meta device against independent counts; ALBERT's factorised embedding and shared
layers by formula and as a built model."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from core.config import PARAMETER_GROUPS, ModelConfig, shapes_only
from core.model import Transformer
from core.training import sizes

# Counted with the transformers library (5.24), each model built on the meta device and its distinct parameters
# summed: GPT2LMHeadModel(GPT2Config()), BertForPreTraining(BertConfig()), OpenAIGPTLMHeadModel(OpenAIGPTConfig()),
# BertForPreTraining with BERT-large's sizes, GPT2LMHeadModel with GPT-2 XL's, and AlbertForPreTraining(vocab 30000,
# embedding 128, hidden 768, 12 layers, 12 heads, intermediate 3072).
LIBRARY = {"GPT-2 small": 124_439_808, "BERT-base": 110_106_428, "GPT": 116_534_784, "BERT-large": 336_226_108,
           "GPT-2 XL": 1_557_611_200}
LIBRARY_ALBERT_BASE = 11_813_810


def group_of(name: str) -> str:
    """The group of a parameter read off its name in the real model (independent of the formula)."""
    if "norm" in name:
        return "layer norms"
    if "attn" in name:
        return "attention"
    if ".ffn." in name:
        return "feed-forward"
    if name.startswith("embed."):
        return "embeddings"
    assert name.startswith(("lm_head", "mlm_dense", "pooler", "nsp_head")), name
    return "output head"


def counted(model: torch.nn.Module) -> dict[str, int]:
    out = dict.fromkeys(PARAMETER_GROUPS, 0)
    for name, p in model.named_parameters():  # a tied weight once, under its first name (the token table)
        out[group_of(name)] += p.numel()
    return out


TINY = dict(vocab_size=37, d_model=12, n_heads=3, n_encoder_layers=2, n_decoder_layers=3, d_ff=20, max_len=9)
CONFIGS = {
    "encoder-decoder tied": dict(kind="encoder-decoder"),
    "encoder-decoder untied, learned positions": dict(kind="encoder-decoder", tie_embeddings=False,
                                                      pos_encoding="learned"),
    "decoder-only pre-norm gelu": dict(kind="decoder-only", norm="pre", activation="gelu", pos_encoding="learned"),
    "decoder-only swiglu, grouped-query": dict(kind="decoder-only", activation="swiglu", n_heads=6, n_kv_heads=2),
    "decoder-only attention-only rope": dict(kind="decoder-only", attention_only=True, pos_encoding="rope",
                                             n_heads=6),
    "encoder-only BERT heads": dict(kind="encoder-only", type_vocab_size=2, nsp=True, embedding_norm=True,
                                    pos_encoding="learned", activation="gelu"),
    "encoder-only untied, no bias, final norm": dict(kind="encoder-only", tie_embeddings=False, bias=False,
                                                     final_norm=True),
    "encoder-decoder no bias, pre-norm": dict(kind="encoder-decoder", bias=False, norm="pre"),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_formula_equals_the_real_models_parameters_group_by_group(name):
    cfg = ModelConfig(**{**TINY, **CONFIGS[name]})
    model = Transformer(cfg)
    assert cfg.parameter_groups() == counted(model)
    assert cfg.estimated_parameters() == model.num_parameters() == sum(p.numel() for p in model.parameters())


def test_the_published_shapes_on_the_meta_device_match_the_formula_and_the_library():
    for name, n in LIBRARY.items():
        cfg = sizes.famous(name)
        assert cfg.estimated_parameters() == n, name
    assert sizes.meta_count(sizes.famous("GPT-2 small")) == LIBRARY["GPT-2 small"]
    assert sizes.meta_count(sizes.famous("BERT-base")) == LIBRARY["BERT-base"]
    assert sizes.meta_count(sizes.famous("Transformer base")) == sizes.famous("Transformer base").estimated_parameters()


def test_gpt3_by_the_closed_form():
    """GPT-2-style block: attention 4d² + 4d, feed-forward 8d² + 5d, two LayerNorms 4d; plus the token and position
    tables and the final LayerNorm."""
    cfg = sizes.famous("GPT-3")
    d, n_layers = 12288, 96
    assert cfg.estimated_parameters() == n_layers * (12 * d * d + 13 * d) + (50257 + 2048) * d + 2 * d
    assert 174e9 < cfg.estimated_parameters() < 175e9


def test_the_ceiling_is_lifted_only_inside_shapes_only():
    fields = sizes.FAMOUS["GPT-3"]
    with pytest.raises(ValueError, match="MiB"):
        ModelConfig(**fields)
    with shapes_only():
        ModelConfig(**fields)
    with pytest.raises(ValueError, match="MiB"):
        ModelConfig(**fields)


def test_albert_base_by_formula_by_the_built_model_and_by_the_library():
    cfg = sizes.config(sizes.ALBERT["base"])
    for e, shared in ((None, False), (128, False), (None, True), (128, True)):
        assert sum(sizes.albert_groups(cfg, e, shared).values()) == sizes.meta_count(cfg, e, shared), (e, shared)
    albert = sizes.albert_groups(cfg, 128, shared=True)
    assert sum(albert.values()) == LIBRARY_ALBERT_BASE
    v, e, h = 30000, 128, 768  # the factorisation itself: V·E + E·H (+ the projection's bias) instead of V·H
    bert = cfg.parameter_groups()
    assert bert["embeddings"] - sizes.albert_groups(cfg, 128)["embeddings"] == (v + 512 + 2) * (h - e) - e * h - h
    assert sizes.albert_groups(cfg, shared=True)["attention"] * 12 == bert["attention"]


def test_an_albertised_model_runs_and_the_model_class_is_unchanged():
    cfg = ModelConfig(**{**TINY, "kind": "encoder-only", "type_vocab_size": 2, "nsp": True, "embedding_norm": True,
                         "pos_encoding": "learned", "activation": "gelu", "dropout": 0.0})
    before = Transformer(cfg).num_parameters()
    torch.manual_seed(0)
    model = sizes.albertise(Transformer(cfg), embedding_dim=4, shared=True).eval()
    assert model.encoder.layers[0] is model.encoder.layers[1]
    assert model.lm_head.weight is model.embed.tokens.weight and model.embed.tokens.weight.shape == (37, 4)
    assert model.num_parameters() == sum(sizes.albert_groups(cfg, 4, shared=True).values())
    out = model(torch.randint(1, 37, (2, 5)), token_types=torch.zeros(2, 5, dtype=torch.long))
    assert out.logits.shape == (2, 5, 37) and out.next_sentence.shape == (2, 2)
    assert Transformer(cfg).num_parameters() == before


def test_differences_follow_the_formula():
    cfg = sizes.famous("GPT-2 small")
    rows = {r["change"].split()[0]: r["difference"] for r in sizes.differences(cfg)}
    assert rows["sinusoidal"] == -1024 * 768  # the learned position table
    assert rows["an"] == 50257 * 768  # an untied output layer
    assert rows["SwiGLU"] == 12 * (768 * 3072 + 3072)  # per layer a third d × d_ff matrix, with its bias
    with shapes_only():
        mqa = dataclasses.replace(cfg, n_kv_heads=1).estimated_parameters()
    assert rows["one"] == mqa - cfg.estimated_parameters() == -12 * 2 * (768 + 1) * (768 - 64)
