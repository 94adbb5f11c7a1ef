"""Speculative decoding: output identical to the target's greedy decoding, whatever the draft."""
import pytest
import torch

from core.io import registry
from core.inference.decoding import generate
from core.model import Transformer
from core.variants.speculative import speculative_generate, truncated_draft
from core.io.tokenizer import EOS


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def lm():
    ck = registry.load("lm-tiny")
    torch.manual_seed(0)
    drafts = {"truncated": truncated_draft(ck.model, 1), "random": Transformer(truncated_draft(ck.model, 1).cfg).eval(),
              "target": ck.model}
    return ck, drafts


PROMPTS = ["The dog was hungry.", "The animal didn't cross the street because it", "The cat", ""]


@pytest.mark.parametrize("k", [1, 2, 4])
@pytest.mark.parametrize("draft", ["truncated", "random", "target"])
def test_output_is_identical_to_greedy(lm, k, draft):
    ck, drafts = lm
    for text in PROMPTS:
        prompt = ck.tokenizer.encode(text)
        plain = generate(ck.model, prompt=prompt, max_new=24)
        greedy = plain.ids
        res = speculative_generate(ck.model, drafts[draft], prompt=prompt, k=k, max_new=24)
        assert res.ids == greedy, (text, k, draft)
        kept = [t for s in res.steps for t in s.proposed[:s.accepted] + ([] if s.target_token is None else [s.target_token])]
        assert kept[:len(greedy)] == greedy
        assert res.target_passes == len(res.steps)
        if draft == "target":  # a draft identical to the target: every proposal accepted, k + 1 tokens per pass
            assert res.acceptance_rate == 1.0
            produced = len(greedy) + (plain.steps[-1].chosen == EOS)  # a text that ends also produced its EOS
            assert res.target_passes == -(-produced // (k + 1))
        if draft == "random":
            assert res.acceptance_rate < 0.5


def test_stops_at_eos_and_respects_the_budget_and_max_len(lm):
    ck, drafts = lm
    prompt = ck.tokenizer.encode("The dog was hungry.")
    for max_new in (1, 3, 7):
        res = speculative_generate(ck.model, drafts["truncated"], prompt=prompt, k=4, max_new=max_new)
        assert res.ids == generate(ck.model, prompt=prompt, max_new=max_new).ids and len(res.ids) <= max_new
    long = prompt * 20
    long = long[:ck.model.cfg.max_len - 3]
    assert speculative_generate(ck.model, drafts["target"], prompt=long, k=4).ids == \
        generate(ck.model, prompt=long).ids
    assert EOS not in speculative_generate(ck.model, drafts["random"], prompt=prompt, k=2, max_new=30).ids


def test_translation_model_with_a_truncated_decoder_draft():
    ck = registry.load("en-fr")
    draft = truncated_draft(ck.model, 1)
    for text in ("The animal didn't cross the street because it was too tired.", "I am happy."):
        src = ck.tokenizer.encode(text) + [EOS]
        greedy = generate(ck.model, src=src).ids
        for k in (1, 3):
            assert speculative_generate(ck.model, draft, src=src, k=k).ids == greedy


def test_bad_arguments(lm):
    ck, drafts = lm
    with pytest.raises(ValueError):
        speculative_generate(ck.model, drafts["target"], prompt=[5], k=0)
    with pytest.raises(ValueError):
        truncated_draft(ck.model, 3)
    other = registry.load("en-fr").model
    with pytest.raises(ValueError):
        speculative_generate(ck.model, other, prompt=[5])
