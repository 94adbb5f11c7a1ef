"""Sentence BLEU and chrF of one output against a reference (core.inference.quality), the Decode page's table:
our own implementations, checked against sacrebleu's sentence_bleu / sentence_chrf with their defaults and against
Papineni et al.'s worked example."""
import math
import random

import pytest
import sacrebleu
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

from core.inference import quality

PAIRS = [
    ("the the the the the the the", "the cat is on the mat"),
    ("L'animal n'a pas traversé la rue parce qu'il était trop fatigué.",
     "L'animal n'a pas traversé la route car il était très fatigué."),
    ("Le chat dort.", "Le chat dort sur le tapis, près de la fenêtre."),  # shorter: BP < 1
    ("Die Katze schläft auf dem Sofa, weil sie müde ist.", "Die Katze schläft, weil sie müde ist."),
    ("Il a payé 3,50 euros (environ 3.80 $) le 12-05.", "Il a payé 3,50 € le 12-05 !"),  # numbers, symbols
    ("a b c d", "a b x d"),  # orders 3 and 4 have no match: smoothed
    ("x y z", "a b c"),  # no match at all
    ("un", "un"),  # one token: effective order 1
    ("", "le chat"),  # empty output
    ("6 5 4 3 2 1", "6 5 4 3 2 1"),
]


@pytest.mark.parametrize("hyp, ref", PAIRS)
def test_sentence_bleu_and_chrf_equal_sacrebleu(hyp, ref):
    ours = quality.sentence_bleu(hyp, ref)
    theirs = sacrebleu.sentence_bleu(hyp, [ref])
    assert ours["bleu"] == pytest.approx(theirs.score, abs=1e-9)
    assert ours["bp"] == pytest.approx(theirs.bp, abs=1e-12)
    assert (ours["hyp_len"], ours["ref_len"]) == (theirs.sys_len, theirs.ref_len)
    assert [r["matched"] for r in ours["rows"]] == list(theirs.counts)
    assert [r["total"] for r in ours["rows"]] == list(theirs.totals)
    assert quality.sentence_chrf(hyp, ref) == pytest.approx(sacrebleu.sentence_chrf(hyp, [ref]).score, abs=1e-9)


def test_random_sentences_score_as_sacrebleu_does():
    rng = random.Random(0)
    words = "le la chat chien est sur tapis grand petit . , un une 3.5 1,000 ( ) - ' l'".split()
    for _ in range(300):
        hyp = " ".join(rng.choice(words) for _ in range(rng.randint(0, 12)))
        ref = " ".join(rng.choice(words) for _ in range(rng.randint(1, 12)))
        assert quality.sentence_bleu(hyp, ref)["bleu"] == pytest.approx(sacrebleu.sentence_bleu(hyp, [ref]).score,
                                                                        abs=1e-9), (hyp, ref)
        assert quality.sentence_chrf(hyp, ref) == pytest.approx(sacrebleu.sentence_chrf(hyp, [ref]).score,
                                                                abs=1e-9), (hyp, ref)


def test_tokens_follow_the_13a_rules():
    tok = Tokenizer13a()
    rng = random.Random(1)
    chars = [chr(c) for c in range(32, 127)] + list("éà€—“”…\n\t")
    for _ in range(3000):
        text = "".join(rng.choice(chars) for _ in range(rng.randint(0, 15)))
        assert quality.words_13a(text) == tok(text.rstrip()).split(), repr(text)
    assert quality.words_13a("didn't cross, 3.5 km.") == ["didn't", "cross", ",", "3.5", "km", "."]


def test_papineni_clipped_unigram_precision_is_two_sevenths():
    """Papineni et al. 2002, sec. 2.1: seven "the" against a reference with two: the modified precision is 2/7."""
    row = quality.sentence_bleu("the the the the the the the", "the cat is on the mat")["rows"][0]
    assert (row["matched"], row["total"]) == (2, 7)
    assert row["precision"] == pytest.approx(2 / 7)


def test_bleu_is_the_brevity_penalised_geometric_mean_with_exp_smoothing():
    """"a b c d" against "a b x d": p1 = 3/4, p2 = 1/3; no 3-gram or 4-gram matches, so the first such order counts
    as 1/(2·2) and the second as 1/(4·1). Output and reference have the same length: BP = 1."""
    got = quality.sentence_bleu("a b c d", "a b x d")
    assert [r["used"] for r in got["rows"]] == pytest.approx([3 / 4, 1 / 3, 1 / 4, 1 / 4])
    want = 100 * math.exp((math.log(3 / 4) + math.log(1 / 3) + math.log(1 / 4) + math.log(1 / 4)) / 4)
    assert got["bleu"] == pytest.approx(want)
    short = quality.sentence_bleu("a b", "a b c d")  # c = 2, r = 4: BP = exp(1 − 4/2); orders 3, 4 left out
    assert short["bp"] == pytest.approx(math.exp(-1))
    assert short["bleu"] == pytest.approx(100 * math.exp(-1))
    assert [r["used"] for r in short["rows"]][2:] == [None, None]


def test_chrf_is_the_f2_of_mean_character_precision_and_recall():
    """"ab" against "abc" (spaces removed): 1-grams P = 1, R = 2/3; 2-grams P = 1, R = 1/2; orders 3-6: the output
    has none, so they are left out. F2 = 5·P·R / (4·P + R) with P = 1, R = 7/12."""
    p, r = 1.0, (2 / 3 + 1 / 2) / 2
    assert quality.sentence_chrf("a b", "abc") == pytest.approx(100 * 5 * p * r / (4 * p + r))
    assert quality.sentence_chrf("", "abc") == 0.0
