"""Pre-train, then fine-tune (core.training.finetune): the split keeps the test adjectives unseen, the classifier reads the
vector for "it", the shared model is never changed, runs repeat exactly, and the pre-trained encoder transfers
to adjectives it was never given a label for while a random start does not."""
import pytest
import torch

from core.training import finetune as ft
from core.io import registry
from core.data.translation import ADJECTIVES


@pytest.fixture(scope="module")
def ck():
    return registry.load("mlm")


def test_the_test_sentences_use_only_adjectives_that_are_never_labelled():
    pool, test = ft.split()
    assert {ft.adjective(s) for s in pool} == set(ft.TRAIN_ADJECTIVES)
    assert not {ft.adjective(s) for s in test} & set(ft.TRAIN_ADJECTIVES)
    assert len(test) == 200 and len(set(test)) == 200
    for s in pool[:50] + test:
        assert ft.label(s) == (ADJECTIVES[ft.adjective(s)].kind == "place")
        assert " because it was too " in s
    assert 0 < sum(map(ft.label, test)) < len(test)  # both answers occur


def test_the_classifier_reads_the_encoders_vector_for_it(ck):
    tok = ck.tokenizer
    text = "The dog didn't cross the river because it was too sick."
    ids, pos = ft.encode(tok, [text])
    assert tok.display(ids[0].tolist())[int(pos[0])] == "it"
    torch.manual_seed(0)
    clf = ft.ItClassifier(ck.model).eval()
    with torch.no_grad():
        expect = clf.head(ck.model(ids).hidden[0, int(pos[0])])
        torch.testing.assert_close(clf(ids, pos)[0], expect)
    with pytest.raises(ValueError, match="no “it”"):
        ft.encode(tok, ["The dog was sick."])


def test_fine_tuning_leaves_the_shared_model_alone_and_repeats_exactly(ck):
    before = {k: v.clone() for k, v in ck.model.state_dict().items()}
    pool, test = ft.split(n_test=40)
    a = ft.finetune(ck.model, ck.tokenizer, pool[:8], test, steps=6, eval_every=3)
    b = ft.finetune(ck.model, ck.tokenizer, pool[:8], test, steps=6, eval_every=3)
    assert a.steps == [0, 3, 6] and a.accuracy == b.accuracy
    after = ck.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert not ck.model.training
    p = a.classify(ck.tokenizer, test[0])
    assert len(p) == 2 and sum(p) == pytest.approx(1.0, abs=1e-6)


def test_compare_checks_its_arguments(ck):
    with pytest.raises(ValueError, match="encoder-only"):
        ft.compare(registry.load("lm").model, ck.tokenizer)
    with pytest.raises(ValueError, match="labelled"):
        ft.compare(ck.model, ck.tokenizer, n_labelled=0)
    with pytest.raises(ValueError):
        ft.finetune(ck.model, ck.tokenizer, [], ["x"], steps=1)


@pytest.mark.slow
def test_pre_training_transfers_to_unseen_adjectives_and_a_random_start_does_not(ck):
    result = ft.compare(ck.model, ck.tokenizer)  # 32 labelled sentences, 80 steps, seed 0
    test = result["test"]
    places = sum(map(ft.label, test))
    majority = max(places, len(test) - places) / len(test)
    pre, rnd = result["pre-trained"], result["random"]
    assert pre.final >= majority + 0.15, (pre.accuracy, majority)
    assert rnd.final <= majority + 0.05, (rnd.accuracy, majority)
    assert {ft.adjective(s) for s in result["labelled"]} <= set(ft.TRAIN_ADJECTIVES)
