"""Tests for core.data.translation and core.data.lm."""

from __future__ import annotations

from collections import Counter

import pytest

from core.data.lm import generate_corpus, load_text
from core.data.translation import (
    ADJECTIVES,
    BEINGS,
    FRAMES,
    LANGS,
    PLACES,
    SPLITS,
    Pair,
    generate,
    probe_pairs,
    pronoun_of,
    translate,
    words,
)

SEED_TIRED = "The animal didn't cross the street because it was too tired."
SEED_WIDE = "The animal didn't cross the street because it was too wide."


# ----------------------------------------------------------------- translate

def test_seed_sentences_french():
    assert translate(SEED_TIRED, "fr") == (
        "L'animal n'a pas traversé la rue parce qu'il était trop fatigué.")
    assert translate(SEED_WIDE, "fr") == (
        "L'animal n'a pas traversé la rue parce qu'elle était trop large.")


def test_seed_sentences_german():
    assert translate(SEED_TIRED, "de") == (
        "Das Tier hat die Straße nicht überquert, weil es zu müde war.")
    assert translate(SEED_WIDE, "de") == (
        "Das Tier hat die Straße nicht überquert, weil sie zu breit war.")


def test_simple_sentences():
    assert translate("I am happy.", "de") == "Ich bin froh."
    assert translate("I am happy.", "fr") == "Je suis heureux."
    assert translate("We are happy.", "fr") == "Nous sommes heureux."
    assert translate("She is tired.", "fr") == "Elle est fatiguée."
    assert translate("The dog is tired.", "de") == "Der Hund ist müde."
    assert translate("The street is wide.", "fr") == "La rue est large."
    assert translate("The cow is slow.", "fr") == "La vache est lente."


# English adjective -> (French masculine, French feminine, German)
ADJECTIVE_FORMS = {
    "tired": ("fatigué", "fatiguée", "müde"), "scared": ("effrayé", "effrayée", "ängstlich"),
    "hungry": ("affamé", "affamée", "hungrig"), "slow": ("lent", "lente", "langsam"),
    "weak": ("faible", "faible", "schwach"), "sick": ("malade", "malade", "krank"),
    "lazy": ("paresseux", "paresseuse", "faul"), "angry": ("en colère", "en colère", "wütend"),
    "wide": ("large", "large", "breit"), "long": ("long", "longue", "lang"),
    "deep": ("profond", "profonde", "tief"), "narrow": ("étroit", "étroite", "schmal"),
    "high": ("haut", "haute", "hoch"), "steep": ("raide", "raide", "steil"),
    "crowded": ("bondé", "bondée", "überfüllt"), "muddy": ("boueux", "boueuse", "schlammig"),
    "dark": ("sombre", "sombre", "dunkel"), "empty": ("vide", "vide", "leer"),
}


@pytest.mark.parametrize("adjective", sorted(ADJECTIVE_FORMS))
def test_adjective_agreement(adjective):
    masculine, feminine, german = ADJECTIVE_FORMS[adjective]
    kind = ADJECTIVES[adjective].kind
    m_noun, f_noun = ("dog", "cow") if kind == "being" else ("lake", "street")
    assert translate(f"The {m_noun} is {adjective}.", "fr").endswith(f" est {masculine}.")
    assert translate(f"The {f_noun} is {adjective}.", "fr").endswith(f" est {feminine}.")
    assert translate(f"The {m_noun} is {adjective}.", "de").endswith(f" ist {german}.")
    trop = translate(f"The {f_noun if kind == 'being' else 'dog'} didn't cross the "
                     f"{'road' if kind == 'place' else 'lake'} because it was too "
                     f"{adjective}.", "fr")
    assert trop.endswith(f" trop {feminine}."), trop


@pytest.mark.parametrize("variant", [
    "The animal didn't cross the street because it was too tired",
    "the animal didn't cross the street because it was too tired.",
    "  The animal   did not cross the street because it was too tired. ",
    "The animal didn\u2019t cross the street because it was too tired.",
])
def test_translate_tolerates_surface_variants(variant):
    assert translate(variant, "fr") == translate(SEED_TIRED, "fr")


@pytest.mark.parametrize("english, lang, expected", [
    ("The bee didn't enter the house because it was too scared.", "fr",
     "L'abeille n'est pas entrée dans la maison parce qu'elle était trop effrayée."),
    ("The horse didn't jump over the fence because it was too high.", "de",
     "Das Pferd ist nicht über den Zaun gesprungen, weil er zu hoch war."),
    ("The dog crossed the river although it was very deep.", "fr",
     "Le chien a traversé la rivière même si elle était très profonde."),
    ("The dog crossed the river although it was very tired.", "fr",
     "Le chien a traversé la rivière même s'il était très fatigué."),
    ("The cat never left the house when it was too dark.", "de",
     "Die Katze verließ das Haus nie, wenn es zu dunkel war."),
    ("The cat didn't climb the hill because it was too high.", "fr",
     "Le chat n'a pas escaladé la colline parce qu'elle était trop haute."),
    ("The goat never climbed the hill when it was too steep.", "fr",
     "La chèvre n'escaladait jamais la colline quand elle était trop raide."),
    ("The dog didn't cross the road next to the house because it was too tired.", "fr",
     "Le chien n'a pas traversé la route à côté de la maison parce qu'il était trop fatigué."),
    ("The dog didn't cross the road next to the park because it was too muddy.", "de",
     "Der Hund hat die Landstraße neben dem Park nicht überquert, weil sie zu schlammig war."),
    ("The dog didn't leave the bridge next to the street because it was too tired.", "de",
     "Der Hund hat die Brücke neben der Straße nicht verlassen, weil er zu müde war."),
    ("The dog saw the cat next to the river and wanted to cross it.", "fr",
     "Le chien a vu le chat à côté de la rivière et a voulu la traverser."),
    ("The dog saw the cat next to the river and wanted to chase it.", "de",
     "Der Hund hat die Katze neben dem Fluss gesehen und wollte sie jagen."),
    ("The fox saw the bird next to the field and wanted to visit it.", "de",
     "Der Fuchs hat den Vogel neben dem Feld gesehen und wollte es besuchen."),
])
def test_translate_frames(english, lang, expected):
    assert translate(english, lang) == expected


def test_translate_rejects_sentences_outside_grammar():
    with pytest.raises(ValueError, match="giraffe"):
        translate("The giraffe didn't cross the street because it was too tired.", "fr")
    with pytest.raises(ValueError, match="outside"):
        translate("The street didn't cross the dog.", "de")
    with pytest.raises(ValueError, match="outside"):
        translate("", "fr")
    with pytest.raises(ValueError, match="language"):
        translate(SEED_TIRED, "es")


def test_translate_agrees_with_generated_targets():
    for lang in LANGS:
        for split in SPLITS:
            for pair in generate(lang, split):
                assert translate(pair.src, lang) == pair.tgt, pair


# ------------------------------------------------------------- tokenisation

def test_words_splits_punctuation_and_french_elision():
    assert words("L'animal n'a pas traversé la rue parce qu'il était trop fatigué.") == [
        "L'", "animal", "n'", "a", "pas", "traversé", "la", "rue", "parce", "qu'",
        "il", "était", "trop", "fatigué", "."]
    assert words("The animal didn't cross the street, because it was.") == [
        "The", "animal", "didn't", "cross", "the", "street", ",", "because", "it",
        "was", "."]
    assert words("même s'il a sauté par-dessus") == [
        "même", "s'", "il", "a", "sauté", "par-dessus"]


# ----------------------------------------------------------------- generate

def test_seed_pair_labels():
    pair = probe_pairs("fr")[0][0]
    assert pair.src == SEED_TIRED
    assert pair.pronoun_index == 7
    assert words(pair.src)[pair.pronoun_index] == "it"
    assert pair.antecedent == "animal"
    assert pair.candidates == ("animal", "street")
    assert pair.tgt_pronoun == "il"
    assert pair.combo == ("animal", "tired", "because")


def test_generate_is_deterministic():
    first = generate("fr", "train", n=300, seed=1)
    assert first == generate("fr", "train", n=300, seed=1)
    assert first != generate("fr", "train", n=300, seed=2)
    assert len(first) == 300 and len(set(first)) == 300
    assert all(isinstance(p, Pair) and p.lang == "fr" for p in first)
    full = generate("de", "test", seed=1)
    assert full == generate("de", "test", seed=1)
    assert full != generate("de", "test", seed=2)
    assert set(full) == set(generate("de", "test", seed=2))


def test_generate_sizes_and_sampling_limits():
    train = generate("fr", "train")
    assert len(set(p.src for p in train)) >= 5000
    for lang in LANGS:
        sizes = [len(generate(lang, split)) for split in SPLITS]
        assert sizes[0] > sizes[2] > 0 and sizes[1] > 0
    big = generate("fr", "train", n=len(train) + 50)
    assert len(big) == len(train) + 50
    assert set(big) == set(train)
    valid = generate("fr", "valid")
    assert len(generate("fr", "valid", n=len(valid) + 50)) == len(valid)
    assert generate("fr", "test", n=0) == []
    with pytest.raises(ValueError):
        generate("fr", "dev")
    with pytest.raises(ValueError):
        generate("xx", "train")
    with pytest.raises(ValueError):
        generate("fr", "train", n=-1)


def test_languages_share_sources_and_splits():
    for split in SPLITS:
        fr = generate("fr", split)
        de = generate("de", split)
        assert [p.src for p in fr] == [p.src for p in de]
        assert [p.combo for p in fr] == [p.combo for p in de]


@pytest.mark.parametrize("lang", LANGS)
def test_held_out_combos_never_seen_in_training(lang):
    combos = {split: {p.combo for p in generate(lang, split)} for split in SPLITS}
    assert combos["test"], "test split is empty"
    assert not combos["test"] & combos["train"]
    assert not combos["test"] & combos["valid"]
    assert not combos["valid"] & combos["train"]
    sources = {split: {p.src for p in generate(lang, split)} for split in SPLITS}
    assert not sources["test"] & (sources["train"] | sources["valid"])


@pytest.mark.parametrize("lang", LANGS)
def test_every_noun_adjective_and_frame_is_trained(lang):
    train = generate(lang, "train")
    train_words = {w.lower() for p in train for w in words(p.src)}
    missing_nouns = (set(BEINGS) | set(PLACES)) - train_words
    assert not missing_nouns
    assert not set(ADJECTIVES) - train_words
    assert {p.frame for p in train} == set(FRAMES)
    assert {p.frame for p in generate(lang, "test")} == set(FRAMES)
    # compositional: each held-out noun+adjective pair is trained in another frame
    train_pairs = {(p.combo[0], p.combo[1]) for p in train}
    multi_frame = Counter((c[0], c[1]) for c in {p.combo for split in SPLITS
                                                 for p in generate(lang, split)})
    train_combos = {p.combo for p in train}
    noun_frames = {(c[0], c[2]) for c in train_combos}
    cue_frames = {(c[1], c[2]) for c in train_combos}
    for pair in generate(lang, "test"):
        noun, cue, frame = pair.combo
        assert (noun, frame) in noun_frames, pair.combo
        assert (cue, frame) in cue_frames, pair.combo
        if multi_frame[(noun, cue)] > 1:
            assert (noun, cue) in train_pairs, pair.combo


# Spot-check genders: English noun -> (French subject pronoun, German subject pronoun).
GENDERS = {
    "animal": ("il", "es"), "dog": ("il", "er"), "cat": ("il", "sie"),
    "horse": ("il", "es"), "cow": ("elle", "sie"), "bee": ("elle", "sie"),
    "frog": ("elle", "er"), "bird": ("il", "er"), "street": ("elle", "sie"),
    "river": ("elle", "er"), "bridge": ("il", "sie"), "field": ("il", "es"),
    "house": ("elle", "es"), "hill": ("elle", "er"), "box": ("elle", "sie"),
    "lake": ("il", "er"), "wall": ("il", "sie"), "gate": ("il", "es"),
}
OBJECT_FORM = {"il": "le", "elle": "la", "er": "ihn", "sie": "sie", "es": "es"}


@pytest.mark.parametrize("lang", LANGS)
def test_target_pronouns_match_translation_and_gender(lang):
    checked = 0
    for split in SPLITS:
        for pair in generate(lang, split):
            if pair.pronoun_index is None:
                assert pair.tgt_pronoun is None and pair.antecedent is None
                assert pronoun_of(pair.tgt, lang) is None, pair.tgt
                continue
            assert words(pair.src)[pair.pronoun_index] == "it"
            assert pair.antecedent in pair.candidates
            assert pronoun_of(pair.tgt, lang) == pair.tgt_pronoun, pair
            if pair.antecedent in GENDERS:
                expected = GENDERS[pair.antecedent][LANGS.index(lang)]
                if pair.frame == "object":
                    expected = OBJECT_FORM[expected]
                assert pair.tgt_pronoun == expected, pair
                checked += 1
    assert checked > 1000


def test_pronoun_of_examples():
    assert pronoun_of("L'animal n'a pas traversé la rue parce qu'elle était trop large.",
                      "fr") == "elle"
    assert pronoun_of("Le chien a vu le chat à côté du parc et a voulu le saluer.",
                      "fr") == "le"
    assert pronoun_of("Das Tier hat die Straße nicht überquert, weil es zu müde war.",
                      "de") == "es"
    assert pronoun_of("Der Hund hat die Katze neben dem Park gesehen und wollte ihn jagen.",
                      "de") == "ihn"
    assert pronoun_of("Il est heureux.", "fr") is None
    assert pronoun_of("Sie sind froh.", "de") is None
    assert pronoun_of("", "de") is None


# -------------------------------------------------------------- probe pairs

@pytest.mark.parametrize("lang", LANGS)
def test_probe_pairs_are_minimal_and_flip_the_referent(lang):
    pairs = probe_pairs(lang)
    assert len(pairs) >= 20
    assert (pairs[0][0].src, pairs[0][1].src) == (SEED_TIRED, SEED_WIDE)
    assert len({(a.src, b.src) for a, b in pairs}) == len(pairs)
    for a, b in pairs:
        wa, wb = words(a.src), words(b.src)
        assert len(wa) == len(wb)
        assert sum(x != y for x, y in zip(wa, wb)) == 1, (a.src, b.src)
        assert a.antecedent != b.antecedent
        assert a.tgt_pronoun != b.tgt_pronoun
        assert a.lang == b.lang == lang
        assert a.pronoun_index == b.pronoun_index is not None
    assert probe_pairs(lang) == pairs


# ----------------------------------------------------------------------- lm

def test_generate_corpus_is_deterministic_and_counts_sentences():
    text = generate_corpus(500, seed=3)
    assert text == generate_corpus(500, seed=3)
    assert text != generate_corpus(500, seed=4)
    assert text.count(".") == 500
    lines = text.split("\n")
    per_line = [line.count(".") for line in lines]
    assert min(per_line) >= 1 and max(per_line) <= 4
    assert any(n == 1 for n in per_line) and any(n >= 2 for n in per_line)
    for line in lines:
        assert line[0].isupper() and line.endswith("."), line
        assert "  " not in line
    for n in (1, 2, 3, 5, 8, 13, 21):
        assert generate_corpus(n, seed=n).count(".") == n
    assert generate_corpus(0) == ""
    with pytest.raises(ValueError):
        generate_corpus(-1)


def test_generate_corpus_uses_the_lexicon():
    vocabulary = {w.lower() for w in words(generate_corpus(2000, seed=0))}
    assert set(BEINGS) <= vocabulary
    assert set(PLACES) <= vocabulary
    assert set(ADJECTIVES) <= vocabulary


def test_load_text_reads_utf8(tmp_path):
    path = tmp_path / "story.txt"
    path.write_bytes("\ufeffLa forêt était sombre.\r\nFin.\n".encode("utf-8"))
    assert load_text(path) == "La forêt était sombre.\nFin.\n"
    assert load_text(str(path)) == "La forêt était sombre.\nFin.\n"


def test_load_text_rejects_bad_files(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    blank = tmp_path / "blank.txt"
    blank.write_bytes(b"  \n\t \n")
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("forêt".encode("latin-1"))
    binary = tmp_path / "data.bin"
    binary.write_bytes(b"abc\x00def")
    large = tmp_path / "large.txt"
    large.write_bytes(b"a" * 101)
    with pytest.raises(ValueError, match="empty"):
        load_text(empty)
    with pytest.raises(ValueError, match="empty"):
        load_text(blank)
    with pytest.raises(ValueError, match="UTF-8"):
        load_text(latin1)
    with pytest.raises(ValueError, match="binary"):
        load_text(binary)
    with pytest.raises(ValueError, match="limit"):
        load_text(large, max_bytes=100)
    assert load_text(large, max_bytes=101) == "a" * 101
    with pytest.raises(ValueError, match="not a readable file"):
        load_text(tmp_path / "missing.txt")
    with pytest.raises(ValueError, match="not a readable file"):
        load_text(tmp_path)
