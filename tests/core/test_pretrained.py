"""all-MiniLM-L6-v2 run by our core equals transformers' BertModel (the independent oracle) on the same files."""
from __future__ import annotations

import pytest
import torch

from core.io import pretrained, registry
from core.inference.runner import run

transformers = pytest.importorskip("transformers")

SENTENCES = [
    "The animal didn't cross the street because it was too tired.",
    "The animal didn't cross the street because it was too wide.",
    "I am happy.",
    "a",
    "Attention is all you need, said Vaswani et al. in 2017!",
    "Transformer-XL keeps a memory of the previous segment; BERT reads both directions.",
    "Unbelievably, the hyperparameterisation of the tokenizer's word-pieces worked.",
    "Le chat est sur la table.",
    "数字 1234 and emoji 🙂 mixed with CJK 漢字.",
    "The trophy doesn't fit into the brown suitcase because it is too large.",
    "[PAD] [CLS] [MASK] typed by a user are plain text here.",
    " ".join(["word"] * 60),
]


@pytest.fixture(scope="module")
def ours():
    pretrained.clear_cache()  # a fresh copy: the app's load_model sets a position budget on the cached one
    return registry.load("minilm")


@pytest.fixture(scope="module")
def oracle():
    folder = pretrained.model_dir("minilm")
    model = transformers.BertModel.from_pretrained(str(folder), attn_implementation="eager", add_pooling_layer=False)
    tok = transformers.AutoTokenizer.from_pretrained(str(folder))
    return model.eval(), tok


def test_minilm_is_listed_and_bert_shaped(ours):
    assert "minilm" in registry.available()
    cfg = ours.model.cfg
    assert (cfg.kind, cfg.n_encoder_layers, cfg.n_heads, cfg.d_model) == ("encoder-only", 6, 12, 384)
    assert (cfg.norm, cfg.activation, cfg.pos_encoding, cfg.layer_norm_eps) == ("post", "gelu", "learned", 1e-12)
    assert cfg.type_vocab_size == 2 and cfg.embedding_norm


@pytest.mark.parametrize("text", SENTENCES)
def test_tokens_match_the_reference_tokenizer_without_padding(ours, oracle, text):
    ids = run(ours, text).src_ids
    ref = oracle[1](text, truncation=True, max_length=512, split_special_tokens=True)["input_ids"]
    assert ids == ref
    assert ours.tokenizer.pad_id not in ids  # the packaged tokenizer pads to 128: turned off


@pytest.mark.parametrize("text", SENTENCES)
def test_hidden_states_and_attention_equal_bertmodel(ours, oracle, text):
    r = run(ours, text)
    ids = torch.tensor([r.src_ids])
    with torch.no_grad():
        ref = oracle[0](ids, output_hidden_states=True, output_attentions=True)
    assert len(ref.attentions) == 6
    for layer in range(6):
        mine = r.trace.attention("encoder", layer)
        assert mine.shape == ref.attentions[layer].shape == (1, 12, len(r.src_ids), len(r.src_ids))
        assert (mine - ref.attentions[layer]).abs().max() <= 1e-4, f"attention, layer {layer}"
        hidden = r.trace[f"encoder.{layer}.resid_post"]
        assert (hidden - ref.hidden_states[layer + 1]).abs().max() <= 1e-4, f"hidden state, layer {layer}"
    assert (r.trace["encoder.embed.out"] - ref.hidden_states[0]).abs().max() <= 1e-4


def test_sentence_embedding_matches_the_sentence_transformers_recipe(ours, oracle):
    model, tok = oracle
    batch = tok(SENTENCES, padding=True, truncation=True, max_length=256, split_special_tokens=True, return_tensors="pt")
    assert (batch["attention_mask"] == 0).any()  # the batch really is padded
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    m = batch["attention_mask"][..., None].float()
    ref = torch.nn.functional.normalize((hidden * m).sum(1) / m.sum(1), dim=1)
    mine = pretrained.sentence_embedding(ours, SENTENCES, batch_size=5)  # batches of mixed lengths
    assert mine.shape == (len(SENTENCES), 384)
    assert (mine - ref).abs().max() <= 1e-4
    assert torch.allclose(mine.norm(dim=1), torch.ones(len(SENTENCES)), atol=1e-5)
    # paraphrases land closer than unrelated sentences
    a, b, c = pretrained.sentence_embedding(ours, ["A dog runs in the park.", "A puppy is running through the park.",
                                                   "Quarterly tax forms are due in April."])
    assert float(a @ b) > float(a @ c) + 0.3


def test_typed_special_tokens_are_plain_text(ours):
    ids = run(ours, "[PAD] [MASK]").src_ids
    tok = ours.tokenizer
    assert ids[0] == tok.cls_id and ids[-1] == tok.sep_id
    assert not set(ids[1:-1]) & {tok.pad_id, tok.mask_id, tok.cls_id, tok.sep_id}


def test_long_input_is_cut_with_a_notice(ours):
    r = run(ours, "word " * 700)
    assert len(r.src_ids) == 512 and r.src_ids[-1] == ours.tokenizer.sep_id
    assert any("at most" in n for n in r.notices)


def test_unknown_pretrained_name_is_refused():
    with pytest.raises(ValueError, match="unknown pretrained model"):
        pretrained.load("gpt-17")


@pytest.mark.usefixtures("one_thread")  # the last test here: 20 ms an oracle call, not 0.2-3 s on a shared machine
def test_one_word_in_two_sentences_follows_bertmodel(ours, oracle):
    """core.probes.layers.same_word on minilm: the stages after the token embedding are BertModel's hidden states at
    the word's tokens (a word cut into pieces: their mean), and its cosines are those of the oracle's vectors."""
    from core.probes import layers
    a, b = "The tokenizer split the river bank.", "A tokenizer reads money."  # "tokenizer": token ##izer
    r = layers.same_word(ours.model, ours.tokenizer, a, b, "tokenizer", "bank")
    assert r["pieces_a"] == ["token", "##izer"] and r["index_a"] == r["index_b"] == [2, 3]
    tok, hidden = ours.tokenizer, {}
    for text in (a, b):
        ids = torch.tensor([tok.frame(tok.encode(text))])  # [CLS] pieces [SEP]
        with torch.no_grad():  # hidden states: the embeddings, then each of the 6 layers
            hidden[text] = oracle[0](ids, output_hidden_states=True).hidden_states
    vectors = {key: torch.stack([h[0, idx].mean(0) for h in hidden[text]]).double()
               for key, text, idx in (("a", a, r["index_a"]), ("b", b, r["index_b"]), ("other", a, r["index_other"]))}
    assert (r["a"][1:] - vectors["a"]).abs().max() <= 1e-4
    assert (r["b"][1:] - vectors["b"]).abs().max() <= 1e-4
    cos = torch.nn.functional.cosine_similarity
    assert r["same"][1:] == pytest.approx(cos(vectors["a"], vectors["b"], dim=-1).tolist(), abs=1e-5)
    assert r["other"][1:] == pytest.approx(cos(vectors["a"], vectors["other"], dim=-1).tolist(), abs=1e-5)
    assert torch.equal(r["a"][0], r["b"][0]) and r["same"][0] == pytest.approx(1.0, abs=1e-12)
