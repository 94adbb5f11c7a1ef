"""Tokenizers: round trips in normal form, fixed special ids, save/load, bad files, unknown words."""
from __future__ import annotations

import json

import pytest
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import models

from core.io.tokenizer import BOS, EOS, KINDS, MASK, PAD, SPECIALS, UNK, Tokenizer, normalize_text

SENTENCES = [
    "The cat sat on the mat.",
    "Hello, world: it's a test-case (really)!",
    "L'homme a mangé une pomme, et elle l'a vue.",
    "Où est l'école ? Je ne sais pas.",
    "Ça coûte 3,50 € ; c'est cher, n'est-ce pas ?",
    "J'aime l'été à Montréal, près du lac.",
    "Il a dit « bonjour » à la fenêtre... puis il est parti.",
    "Élise et Noël s'étaient déjà rencontrés à Besançon.",
]
# Repeating the corpus gives the BPE / WordPiece trainers enough counts to learn whole words.
CORPUS = SENTENCES * 3


@pytest.fixture(scope="module", params=KINDS)
def trained(request):
    return request.param, Tokenizer.train(CORPUS, kind=request.param, vocab_size=400)


# ------------------------------------------------------------------ round trips and specials
@pytest.mark.parametrize("sentence", SENTENCES)
def test_round_trip_in_normal_form(trained, sentence):
    kind, tok = trained
    ids = tok.encode(sentence)
    assert ids, f"{kind}: nothing encoded"
    assert UNK not in ids, f"{kind}: {sentence!r} produced [UNK] although every word is in the corpus"
    assert tok.decode(ids) == sentence


def test_round_trip_normalises_whitespace(trained):
    _, tok = trained
    messy = "  L'homme   a\tmangé\n une   pomme, et  elle l'a vue.  "
    assert tok.decode(tok.encode(messy)) == normalize_text(messy) == "L'homme a mangé une pomme, et elle l'a vue."


def test_decomposed_accents_are_composed(trained):
    _, tok = trained
    decomposed = "Ou\u0300 est l'e\u0301cole ? Je ne sais pas."  # combining grave / acute accents
    assert decomposed != SENTENCES[3]
    assert tok.encode(decomposed) == tok.encode(SENTENCES[3])
    assert tok.decode(tok.encode(decomposed)) == SENTENCES[3]


def test_specials_at_fixed_ids(trained):
    kind, tok = trained
    assert (PAD, UNK, BOS, EOS, MASK) == (0, 1, 2, 3, 4)
    for i, name in enumerate(SPECIALS):
        assert tok.token_to_id(name) == i, kind
        assert tok.id_to_token(i) == name, kind
    assert SPECIALS == ["[PAD]", "[UNK]", "[BOS]", "[EOS]", "[MASK]"]


def test_specials_skipped_or_kept_on_decode(trained):
    _, tok = trained
    ids = [BOS] + tok.encode("The cat sat on the mat.") + [EOS, PAD, PAD]
    assert tok.decode(ids) == "The cat sat on the mat."
    kept = tok.decode(ids, skip_special=False)
    assert "[BOS]" in kept and "[EOS]" in kept and "[PAD]" in kept


def test_word_level_has_one_id_per_word_and_punctuation():
    tok = Tokenizer.train(CORPUS, kind="word", vocab_size=400)
    # "L'homme" splits at the apostrophe: L, ', homme; the final "." is its own token.
    assert len(tok.encode("L'homme a mangé.")) == 6
    assert tok.display(tok.encode("L'homme a mangé.")) == ["L", "'", "homme", "a", "mangé", "."]


def test_subword_tokenizers_split_unseen_words_into_known_pieces():
    for kind in ("bpe", "wordpiece"):
        tok = Tokenizer.train(CORPUS, kind=kind, vocab_size=400)
        word = "pommes"  # only "pomme" is in the corpus
        ids = tok.encode(word)
        assert UNK not in ids, kind
        assert tok.decode(ids) == word, kind


def test_from_symbols():
    tok = Tokenizer.from_symbols(["a", "b", "7"])
    assert tok.vocab_size == len(SPECIALS) + 3
    ids = tok.encode("a 7 b b")
    assert ids == [5, 7, 6, 6]
    assert tok.decode(ids) == "a 7 b b"
    assert tok.display([BOS] + ids) == ["[BOS]", "a", "7", "b", "b"]


def test_train_refuses_bad_input():
    with pytest.raises(ValueError, match="unknown tokenizer kind"):
        Tokenizer.train(CORPUS, kind="sentencepiece")
    with pytest.raises(ValueError, match="empty corpus"):
        Tokenizer.train(["", "  \n "], kind="bpe")


# ------------------------------------------------------------------ files
def test_save_load_gives_identical_encodings(trained, tmp_path):
    kind, tok = trained
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    back = Tokenizer.load(path)
    assert back.vocab_size == tok.vocab_size
    texts = SENTENCES + ["Unseen: zébulon xyzzy qqq!", "  spaces\tand\nnewlines  "]
    for text in texts:
        assert back.encode(text) == tok.encode(text), (kind, text)
        assert back.decode(back.encode(text)) == tok.decode(tok.encode(text))
    assert back.to_str() == tok.to_str()


def test_load_missing_file(tmp_path):
    with pytest.raises(ValueError, match="no tokenizer file"):
        Tokenizer.load(tmp_path / "nope.json")


@pytest.mark.parametrize("content, pattern", [
    (b"{ this is not json", r"tokenizer\.json is not a valid tokenizer\.json \(JSONDecodeError\)"),
    (b"\xff\xfe\x00garbage", r"tokenizer\.json is not a valid tokenizer\.json \(UnicodeDecodeError\)"),
    (json.dumps({"hello": "world"}).encode(), r"tokenizer\.json is not a valid tokenizer\.json: "),
    (b"[1, 2, 3]", r"tokenizer\.json is not a valid tokenizer\.json"),
])
def test_invalid_tokenizer_json_raises_value_error(tmp_path, content, pattern):
    path = tmp_path / "tokenizer.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=pattern) as info:
        Tokenizer.load(path)
    assert "\n" not in str(info.value).strip()  # one clear line, not a Rust backtrace


def test_tokenizer_with_specials_elsewhere_is_refused(tmp_path):
    vocab = {"hello": 0, "[PAD]": 1, "[UNK]": 2, "[BOS]": 3, "[EOS]": 4, "[MASK]": 5}
    hf = HFTokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    path = tmp_path / "tokenizer.json"
    path.write_text(hf.to_str(), encoding="utf-8")
    with pytest.raises(ValueError, match=r"must map \[PAD\] to id 0, found 1"):
        Tokenizer.load(path)


# ------------------------------------------------------------------ unknown words and normal form
def test_unknown_words_word_level():
    tok = Tokenizer.train(CORPUS, kind="word", vocab_size=400)
    assert tok.unknown_words("The cat sat on the mat.") == []
    assert tok.unknown_words("The zebra sat on the xylophone, the zebra!") == ["zebra", "xylophone"]


def test_unknown_words_wordpiece():
    tok = Tokenizer.train(CORPUS, kind="wordpiece", vocab_size=400)
    assert tok.unknown_words("The cat sat on the mat.") == []
    unknown = tok.unknown_words("The cat ate kiwis.")
    assert unknown == ["kiwis"]  # 'k' never occurs in the corpus, so the whole word is [UNK]
    assert "cat" not in unknown and "The" not in unknown


def test_unknown_characters_bpe():
    tok = Tokenizer.train(CORPUS, kind="bpe", vocab_size=400)
    assert tok.unknown_words("The cat sat on the mat.") == []
    unknown = tok.unknown_words("The cat sat on the mat 😀.")
    assert unknown == ["😀"]


@pytest.mark.parametrize("raw, expected", [
    ("a\x00b", "ab"),  # NUL dropped
    ("tab\there\nnew\r\nline", "tab here new line"),  # whitespace becomes one space
    ("  lots   of    space  ", "lots of space"),
    ("bell\x07 and \x1b escape", "bell and escape"),  # other control characters dropped
    ("zero\u200bwidth", "zerowidth"),  # format character (Cf) dropped
    ("e\u0301te\u0301", "été"),  # NFC
    ("\u00a0non\u2003breaking\u00a0", "non breaking"),  # unicode spaces collapse too
    ("", ""),
])
def test_normalize_text(raw, expected):
    assert normalize_text(raw) == expected


def test_encode_applies_normal_form(trained):
    _, tok = trained
    assert tok.encode("The\x00 cat\t\tsat on the mat.") == tok.encode("The cat sat on the mat.")


@pytest.mark.parametrize("name", ["en-fr", "lm", "mlm", "minilm"])
def test_word_index_finds_the_word_not_a_piece_of_another(name):
    """Sub-word splitting puts an "it" inside "fit" and "suitcase" for some vocabularies: the whole word is chosen."""
    from core.io import registry
    from core.io.tokenizer import word_index

    tok = registry.load(name).tokenizer
    text = "The trophy does not fit in the suitcase because it is too big"
    ids = tok.encode(text)
    i = word_index(tok, ids, "it")
    shown = tok.display(ids)
    # the word "it" is the 10th word: everything before it re-spells the first nine words
    assert i is not None and shown[i].lower().removeprefix("##") == "it"
    assert tok.decode(ids[:i]).lower().split() == text.lower().split()[:9]
    assert word_index(tok, tok.encode("its fit suit"), "it") is None
