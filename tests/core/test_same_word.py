"""One word in two sentences (core.probes.layers.same_word): the token stage is one embedding row, so its cosine is 1;
words cut into pieces are averaged, missing words and [UNK] are named. minilm's later stages are checked against
transformers' BertModel in tests/core/test_pretrained.py (it loads that oracle once)."""
from __future__ import annotations

import pytest
import torch

from core.io import registry
from core.probes import layers

pytestmark = pytest.mark.usefixtures("one_thread")

A, B = "She sat by the river bank.", "He put his money in the bank."


@pytest.fixture(scope="module")
def tiny():
    return registry.load("lm-tiny")


def test_token_stage_is_the_same_embedding_row_so_cosine_one(tiny):
    model, tok = tiny.model, tiny.tokenizer
    r = layers.same_word(model, tok, A, B, "bank", "sat")
    assert r["pieces_a"] == r["pieces_b"] == ["b", "a", "n", "k"]  # four sub-word tokens: averaged
    assert r["index_a"] != r["index_b"]  # other positions, other contexts
    assert torch.equal(r["a"][0], r["b"][0])
    rows = model.embed.tokens.weight[[tok.encode(A)[i - 1] for i in r["index_a"]]]  # after [BOS]
    assert torch.allclose(r["a"][0], (rows * model.embed.scale).mean(0).detach(), rtol=0, atol=1e-6)
    assert r["same"][0] == pytest.approx(1.0, abs=1e-12)
    assert r["same"][1] < 1 - 1e-3  # learned positions 10-13 vs 11-14: "+ position" already differs
    assert len(r["stages"]) == len(r["same"]) == len(r["other"]) == 2 + model.cfg.n_decoder_layers
    assert r["other"][0] < 0.99 and r["control"] is None


def test_words_split_missing_unknown_and_shared(tiny):
    tok = tiny.tokenizer
    words = dict(layers.sentence_words(tok, "He put money in the bank."))
    assert list(words) == ["He", "put", "money", "in", "the", "bank", "."] and len(words["bank"]) == 4
    assert layers.shared_words(tok, A, B) == ["the", "bank"]
    with pytest.raises(ValueError, match="not a word of sentence B"):
        layers.same_word(tiny.model, tok, A, "No such word here.", "bank")
    with pytest.raises(ValueError, match="not a word of sentence A"):
        layers.same_word(tiny.model, tok, A, B, "bank", "money")
    r = layers.same_word(tiny.model, tok, B, A, "bank", "he", "The bank was muddy.")
    assert r["unknown"] == ["he"]  # lm-tiny never saw a capital H
    assert len(r["control"]) == len(r["same"]) and r["control"][0] == pytest.approx(1.0, abs=1e-12)
