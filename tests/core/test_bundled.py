"""The shipped checkpoints load, reproduce their model cards' held-out metrics, and translate the seeds."""
import pytest

from core import registry
from core.evaluate import translate_all
from core.tasks import heldout_metrics

EXPECTED = {"copy", "reverse", "en-fr", "en-de", "lm", "mlm"}
SEEDS = {
    "en-fr": {"The animal didn't cross the street because it was too tired.":
              "L'animal n'a pas traversé la rue parce qu'il était trop fatigué.",
              "The animal didn't cross the street because it was too wide.":
              "L'animal n'a pas traversé la rue parce qu'elle était trop large.",
              "I am happy.": "Je suis heureux."},
    "en-de": {"I am happy.": "Ich bin froh.",
              "The animal didn't cross the street because it was too tired.":
              "Das Tier hat die Straße nicht überquert, weil es zu müde war.",
              "The animal didn't cross the street because it was too wide.":
              "Das Tier hat die Straße nicht überquert, weil sie zu breit war."},
}


def test_every_promised_model_is_bundled():
    missing = EXPECTED - set(registry.bundled())
    assert not missing, f"not bundled: {missing}"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(registry.bundled())))
def test_bundled_model_reproduces_its_card(name):
    ck = registry.load(name)
    card = ck.meta["heldout"]
    assert "python -m core.train" in ck.meta["command"]
    assert (ck.path / "card.md").read_text().count("Held-out evaluation") == 1
    measured = heldout_metrics(ck)
    for key, value in card.items():
        # counts and accuracies are ratios of integers: exact. A loss is a float32 mean whose last bits
        # depend on the CPU's kernels: the mlm card's 0.40557605 (written on an earlier machine) measures
        # 0.40557602 on this one, every run, at 1, 2 or 4 threads. So losses are held to float32 precision.
        tol = dict(rel=1e-6) if key in ("valid_loss", "perplexity") else dict(abs=1e-9)
        assert measured[key] == pytest.approx(value, **tol), key


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_seed_sentences_translate_exactly(name):
    ck = registry.load(name)
    sources = list(SEEDS[name])
    assert translate_all(ck, sources) == [SEEDS[name][s] for s in sources]


@pytest.mark.parametrize("name", ["en-fr", "en-de"])
def test_translation_models_meet_their_targets(name):
    held = registry.load(name).meta["heldout"]
    assert held["exact_match"] >= 0.95
    assert held["pronoun_accuracy"] >= 0.99


def test_bundled_masked_lm_meets_its_target():
    held = registry.load("mlm").meta["heldout"]
    assert held["masked_accuracy"] >= 0.8 and held["n_lines"] == 300


def test_bundled_models_are_small():
    for name in registry.bundled():
        size = sum(f.stat().st_size for f in (registry.BUNDLED / name).iterdir())
        assert size < 8_000_000, f"{name} is {size} bytes"


def test_bundled_lm_writes_english_from_its_corpus():
    """Continuations of a prompt, greedy and sampled (top-k 10), use only words of the training corpus, end on
    their own (EOS, as every corpus line does) and are sentences: capitalised, ending with a full stop."""
    from core.data.lm import generate_corpus
    from core.data.translation import words
    from core.decoding import generate

    ck = registry.load("lm")
    tok = ck.tokenizer
    corpus_words = {w.lower() for w in words(generate_corpus(4000, seed=0))}
    texts = []
    for prompt in ("The dog", "The cat", "A bird", "The river was"):
        runs = [generate(ck.model, prompt=tok.encode(prompt), max_new=100)]
        runs += [generate(ck.model, prompt=tok.encode(prompt), method="sample", top_k=10, seed=s, max_new=100)
                 for s in range(5)]
        for r in runs:
            assert len(r.ids) < 100, "the text did not end on its own"
            texts.append(tok.decode(tok.encode(prompt) + r.ids))
    unknown = [w for t in texts for w in words(t) if w.lower() not in corpus_words]
    assert not unknown, (unknown, texts)
    for t in texts:
        assert t.endswith("."), t
        for sentence in t[:-1].split(". "):
            assert sentence[:1].isupper(), (sentence, t)
