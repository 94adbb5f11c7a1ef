"""The translation-confidence notice (core.inference.quality): the score, its batching, the threshold choice, and
the notice a page shows."""
import copy

import pytest
import torch

from core.evaluate import translate_ids
from core.inference import quality, runner
from core.io import registry
from core.io.tokenizer import BOS, EOS


def test_confidence_is_the_mean_log_probability_of_the_output_and_eos():
    torch.manual_seed(0)
    logits = torch.randn(4, 7)
    out = [3, 5, 1]
    want = sum(torch.log_softmax(logits[t], -1)[tok] for t, tok in enumerate(out + [EOS])) / 4
    assert quality.confidence_from_logits(logits, out) == pytest.approx(float(want), abs=1e-6)


def test_batched_confidence_equals_one_sentence_at_a_time_and_the_runs_own():
    ck = registry.load("en-fr-tiny")
    sources = ["I am happy.", "The animal didn't cross the street because it was too tired.", "The dog is big."]
    outs = translate_ids(ck, sources)
    batched = quality.confidence(ck.model, ck.tokenizer, sources, outs)
    single = [quality.confidence(ck.model, ck.tokenizer, [s], [o])[0] for s, o in zip(sources, outs)]
    assert batched == pytest.approx(single, abs=1e-5)
    assert all(s < 0 for s in batched)
    # the page's run reads the same number off its traced forward pass: a threshold just above it shows the notice,
    # one just below does not
    ck2 = copy.copy(ck)
    for above, shown in ((1e-4, True), (-1e-4, False)):
        ck2.meta = dict(ck.meta, quality={"threshold": single[1] + above, "flag_wrong": 0.8, "flag_right": 0.2,
                                          "precision_wrong": 0.9})
        notices = runner.run(ck2, sources[1]).notices
        assert any(n.startswith("Probably not a correct translation") for n in notices) == shown, notices


def test_threshold_flags_most_wrong_while_sparing_the_right():
    scores = [-3.0, -2.5, -2.0, -1.8, -0.4, -0.3, -0.2, -0.1, -1.9, -0.35]
    right = [False, False, False, False, True, True, True, True, True, False]
    best = quality.choose(quality.curve(scores, right))
    assert best["threshold"] == -0.4  # flags everything below -0.4: 4 of 5 wrong, 1 of 5 right
    assert best["flag_right"] <= 0.2 and best["flag_wrong"] == pytest.approx(0.8)
    assert best["meets"]
    # confidence that says nothing (right and wrong interleaved) cannot meet the target
    mixed = quality.choose(quality.curve([-1, -2, -3, -4, -5, -6], [True, False, True, False, True, False]))
    assert not mixed["meets"] and mixed["flag_right"] <= 0.2


def test_uncalibrated_models_show_no_confidence_notice():
    assert quality.notice({}, -9.0) is None
    assert quality.notice({"quality": {"threshold": "x"}}, -9.0) is None
    assert quality.notice({"quality": {"threshold": -1.0}}, -0.5) is None
    assert "below -1.00" in quality.notice({"quality": {"threshold": -1.0}}, -1.5)


def test_a_source_longer_than_the_model_reads_is_scored_cut_as_it_was_translated():
    """QA s58: the Decode page scored a 333-token paragraph whole while the model reads 104 tokens (its memory
    budget), and the model refused it. The score is of the source cut where every page cuts it."""
    ck = registry.load("en-fr-tiny")
    limited = copy.deepcopy(ck.model)
    limited.position_limit = 12  # what core.io.budget.limit_positions sets for a large model
    text = "The dog is big and the cat is small and the dog is tired. " * 3
    assert len(ck.tokenizer.encode(text)) > 12
    cut = ck.tokenizer.encode(text)[:11] + [EOS]
    out = translate_ids(ck, ["The dog is big."])[0][:8]
    score = quality.confidence(limited, ck.tokenizer, [text], [out])[0]
    # by hand, on the unlimited model: the mean log-probability of out + EOS given the cut source
    logp = ck.model(torch.tensor([cut]), torch.tensor([[BOS] + out])).logits[0].log_softmax(-1)
    want = float(sum(logp[t, tok] for t, tok in enumerate(out + [EOS])) / (len(out) + 1))
    assert score == pytest.approx(want, abs=1e-5)
    assert quality.confidence_of_ids(limited, [cut], [out])[0] == pytest.approx(want, abs=1e-5)
