"""Can BERT write? (core.inference.mlm, Wang & Cho 2019): left-to-right writing against a hand-written loop over
``fill``, Gibbs sampling's first fill and seeds, the judge's and the pseudo-log-likelihood's bits per byte against
direct computations with the models' logits, and the judge telling shuffled words from the text they came from."""
import math
from types import SimpleNamespace

import pytest
import torch

from core.inference import mlm
from core.io import registry
from core.io.tokenizer import BOS, EOS, MASK, SPECIALS

PROMPT = "The dog saw a sheep in the path."  # the page's default (app.mlm_view.WRITE_PROMPT)

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def models():
    return registry.load("mlm"), registry.load("lm-tiny"), registry.load("lm")


def best_ordinary(fill_: mlm.Fill) -> int:
    return next(i for i in fill_.ids if i >= len(SPECIALS))


def test_greedy_left_to_right_is_fill_called_once_per_position(models):
    ck = models[0]
    tok = ck.tokenizer
    prompt = tok.encode(PROMPT)
    ids = list(prompt)
    for _ in range(8):  # by hand: one [MASK] after the text so far, the best ordinary token, again
        res = mlm.fill(ck, tok.frame(ids + [MASK]), top_k=tok.vocab_size)
        assert [f.position for f in res.fills] == [len(ids)]
        ids.append(best_ordinary(res.fills[0]))
    g = mlm.write_left_to_right(ck, prompt, 8, temperature=0.0)
    assert g.ids == ids[len(prompt):] and g.prompt == prompt
    assert g.full == tok.decode(ids) and g.full == tok.decode(prompt) + g.text and g.text.startswith(" ")


def test_the_mask_goes_inside_the_models_frame(models):
    """A BERT-style frame ([CLS] … [SEP]; here [BOS] … [EOS] around our tokenizer): the mask is written before the
    closing token, and the written tokens are read at the frame's positions."""
    ck = models[0]

    class Framed:
        def __init__(self, tok):
            self.tok = tok

        def __getattr__(self, key):
            return getattr(self.tok, key)

        def frame(self, ids):
            return [BOS, *ids, EOS]

    framed = SimpleNamespace(model=ck.model, tokenizer=Framed(ck.tokenizer))
    prompt = ck.tokenizer.encode(PROMPT)
    ids = list(prompt)
    for _ in range(5):
        res = mlm.fill(ck, [BOS, *ids, MASK, EOS], top_k=ck.tokenizer.vocab_size)
        assert [f.position for f in res.fills] == [len(ids) + 1]
        ids.append(best_ordinary(res.fills[0]))
    assert mlm.write_left_to_right(framed, prompt, 5).ids == ids[len(prompt):]
    res = mlm.fill(ck, [BOS, *prompt, *[MASK] * 4, EOS], top_k=ck.tokenizer.vocab_size)
    assert mlm.write_gibbs(framed, prompt, 4, sweeps=0, temperature=0.0).ids == [best_ordinary(f) for f in res.fills]


def test_gibbs_without_sweeps_is_its_first_fill(models):
    ck = models[0]
    tok = ck.tokenizer
    prompt = tok.encode(PROMPT)
    res = mlm.fill(ck, tok.frame(prompt + [MASK] * 6), top_k=tok.vocab_size)  # every mask at once, one pass
    greedy = mlm.write_gibbs(ck, prompt, 6, sweeps=0, temperature=0.0)
    assert greedy.ids == greedy.initial == [best_ordinary(f) for f in res.fills]
    for seed in range(3):
        first = mlm.write_gibbs(ck, prompt, 6, sweeps=0, temperature=1.0, seed=seed)
        later = mlm.write_gibbs(ck, prompt, 6, sweeps=4, temperature=1.0, seed=seed)
        assert first.ids == first.initial == later.initial
        assert not set(later.ids) & set(range(len(SPECIALS)))


def test_every_writer_is_a_function_of_its_seed(models):
    ck, tiny, _ = models
    prompt = ck.tokenizer.encode("The dog")
    writers = [lambda s: mlm.write_left_to_right(ck, prompt, 10, temperature=1.0, seed=s),
               lambda s: mlm.write_gibbs(ck, prompt, 10, sweeps=2, temperature=1.0, seed=s),
               lambda s: mlm.write_causal(tiny, tiny.tokenizer.encode("The dog"), 10, temperature=1.0, seed=s)]
    for write in writers:
        assert write(3) == write(3)
        assert len({tuple(write(s).ids) for s in range(6)}) > 1  # a sampler, not a constant
        assert len(write(0).ids) == 10
    assert mlm.can_bert_write(*models, "The dog", n=6, sweeps=1, seed=5) == \
        mlm.can_bert_write(*models, "The dog", n=6, sweeps=1, seed=5)


def test_the_judge_is_bits_per_byte_of_the_continuation_from_the_lms_logits(models):
    judge = models[2]
    tok = judge.tokenizer
    prompt, cont = "The dog saw a sheep.", " It ran to the café."
    head, tail = tok.encode(prompt), tok.encode(cont.strip())  # byte-level: the word's space is in its first token
    assert tok.encode(prompt + cont) == head + tail
    with torch.no_grad():
        logp = judge.model(torch.tensor([[BOS] + head + tail])).logits[0].float().log_softmax(-1)
    nats = -sum(float(logp[len(head) + j, t]) for j, t in enumerate(tail))  # logits at i predict token i + 1
    n_bytes = len(cont.encode("utf-8"))  # the space in front counted; é is 2 bytes
    got = mlm.judge_bits_per_byte(judge, prompt, cont)
    assert got["bytes"] == n_bytes == 21 and got["tokens"] == len(tail)
    assert got["bits"] == pytest.approx(nats / math.log(2), rel=1e-5)
    assert got["bits_per_byte"] == pytest.approx(nats / math.log(2) / n_bytes, rel=1e-5)
    # a continuation that finishes the prompt's last word: the merged token is scored, and the bytes it covers
    # ("The ca" is "The", "ca"; "The cat ran." is "The", "cat", …): the prompt's text inside it is scored too
    split = mlm.judge_bits_per_byte(judge, "The ca", "t ran.")
    assert tok.display(tok.encode("The ca"))[1] == "ca" and tok.display(tok.encode("The cat"))[1] == "cat"
    assert split["bytes"] == len(" cat ran.") and split["tokens"] == len(tok.encode("The cat ran.")) - 1


def test_the_pseudo_log_likelihood_masks_each_continuation_token_in_turn(models):
    ck = models[0]
    tok = ck.tokenizer
    prompt, cont = "The dog saw a sheep.", " It chased the sheep."
    ids = tok.encode(prompt + cont)
    k = len(tok.encode(prompt))
    nats = 0.0
    with torch.no_grad():
        for p in range(k, len(ids)):
            row = list(ids)
            row[p] = MASK
            nats -= float(ck.model(torch.tensor([row])).logits[0, p].float().log_softmax(-1)[ids[p]])
    got = mlm.pseudo_bits_per_byte(ck, prompt, cont)
    assert got["tokens"] == len(ids) - k and got["bytes"] == len(cont)
    assert got["bits_per_byte"] == pytest.approx(nats / math.log(2) / len(cont), rel=1e-5)


def test_the_judge_scores_shuffled_words_worse_than_the_text_they_came_from(models):
    """A real property of the judge: on the default prompt, the causal LM's continuation with its words shuffled is
    less predictable than the continuation itself, and than the judge's own; if not, the judge is broken."""
    for seed in range(3):
        res = mlm.can_bert_write(*models, PROMPT, n=12, sweeps=3, temperature=0.7, seed=seed)
        score = {r["name"]: r["judge_bits_per_byte"] for r in res["rows"]}
        assert [r["name"] for r in res["rows"]] == list(mlm.WRITERS)
        causal, shuffled = res["rows"][0]["text"], res["rows"][3]["text"]
        assert sorted(causal.split()) == sorted(shuffled.split()) and causal.split() != shuffled.split()
        assert score["shuffled words"] > 1.2 * score["causal LM"]
        assert score["shuffled words"] > score["the judge's own"]
        assert all(0 < v < 20 for v in score.values())
        assert [r["reference"] for r in res["rows"]] == [False, False, False, True, True]


def test_writers_refuse_the_wrong_kind_of_model_and_texts_too_long(models):
    ck, tiny, _ = models
    with pytest.raises(ValueError, match="encoder-only"):
        mlm.write_gibbs(tiny, [5, 6], 3)
    with pytest.raises(ValueError, match="decoder-only"):
        mlm.write_causal(ck, [5, 6], 3)
    with pytest.raises(ValueError, match="reads at most"):
        mlm.write_left_to_right(ck, [7] * 120, 12)
    with pytest.raises(ValueError, match="temperature"):
        mlm.pick(torch.zeros(5), -1.0, None)
