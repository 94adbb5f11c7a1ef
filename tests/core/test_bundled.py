"""The shipped checkpoints load, reproduce their model cards' held-out metrics, and translate the seeds."""
import pytest

from core.io import registry
from core.evaluate import translate_all
from core.training.tasks import CARD_SAMPLE_EVERY, card_mismatches, heldout_metrics

# a little under what the shipped en-fr / en-de measured (cards: test pronoun 0.998 / 1.000, exact 0.992 / 0.995,
# BLEU 99.3 / 99.9, held-out nouns 0.984 / 0.996); the hand-written set's floor is issue 16's target, which both
# now meet (0.915 / 0.915, 65 of 71 each)
FLOORS = {"pronoun_accuracy": 0.99, "exact_match": 0.98, "bleu": 95.0, "heldout_noun_pronoun_accuracy": 0.98,
          "handwritten_pronoun_accuracy": 0.90}
# A translator that also read human translations (--real-share): its generated held-out nouns may sit lower. Set in
# stop 39 AFTER reading the first such card (en-fr 0.951, en-de 0.999; the generated-only en-fr it replaced: 0.984),
# so it records a trade accepted for chrF 9 -> 66 on human translations, not a target (issue 31's note).
REAL_FLOORS = FLOORS | {"heldout_noun_pronoun_accuracy": 0.95}
EXPECTED = {"copy", "reverse", "en-fr", "en-de", "en-fr-tiny", "en-de-tiny", "lm", "lm-tiny", "mlm"}
BROAD = {  # the sentences people try first (issue 16), with the reference translations of core.data.broad
    "en-fr": {"The trophy doesn't fit in the suitcase because it is too big.":
              "Le trophée ne rentre pas dans la valise parce qu'il est trop grand.",
              "The trophy doesn't fit in the suitcase because it is too small.":
              "Le trophée ne rentre pas dans la valise parce qu'elle est trop petite.",
              "My sister bought a new car because it was cheap.":
              "Ma sœur a acheté une nouvelle voiture parce qu'elle était bon marché.",
              "The animal didn't cross the street because it was too tired.":
              "L'animal n'a pas traversé la rue parce qu'il était trop fatigué.",
              "The animal didn't cross the street because it was too wide.":
              "L'animal n'a pas traversé la rue parce qu'elle était trop large."},
    "en-de": {"The trophy doesn't fit in the suitcase because it is too big.":
              "Der Pokal passt nicht in den Koffer, weil er zu groß ist.",
              "The trophy doesn't fit in the suitcase because it is too small.":
              "Der Pokal passt nicht in den Koffer, weil er zu klein ist.",
              "My sister bought a new car because it was cheap.":
              "Meine Schwester kaufte ein neues Auto, weil es billig war.",
              "The animal didn't cross the street because it was too tired.":
              "Das Tier überquerte die Straße nicht, weil es zu müde war.",
              "The animal didn't cross the street because it was too wide.":
              "Das Tier überquerte die Straße nicht, weil sie zu breit war."},
}
SEEDS = {
    "en-fr-tiny": {"The animal didn't cross the street because it was too tired.":
              "L'animal n'a pas traversé la rue parce qu'il était trop fatigué.",
              "The animal didn't cross the street because it was too wide.":
              "L'animal n'a pas traversé la rue parce qu'elle était trop large.",
              "I am happy.": "Je suis heureux."},
    "en-de-tiny": {"I am happy.": "Ich bin froh.",
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
    """Every card's held-out metrics, re-measured; a translator's on its card's sample (every 10th held-out sentence,
    ``meta.heldout_sample``, measured with the card by scripts/bundle.py): a broad one's whole card decodes about
    12,000 sentences, 200 s of the suite's time each, a tiny one's 4,545, 40 s; ``python scripts/bundle.py --check``
    re-measures all of it."""
    ck = registry.load(name)
    card = ck.meta["heldout"]
    assert "python -m core.train" in ck.meta["command"]
    assert (ck.path / "card.md").read_text().count("Held-out evaluation") == 1
    if "corpus" in ck.meta:  # a real-English lm: its text is the frozen extraction in assets/corpora/
        from core.data import prose_for
        mismatch = prose_for(ck.meta["task"]).card_mismatch(name, ck.meta["corpus"])
        assert mismatch is None, mismatch
    if ck.meta.get("task") in CARD_SAMPLE_EVERY:
        card, every = dict(ck.meta["heldout_sample"]), CARD_SAMPLE_EVERY[ck.meta["task"]]
        assert card.pop("every") == every
        if "n" in card:  # a translator's sample is the card's own sentences: its counts are an every-th of the card's
            assert card["n"] == -(-ck.meta["heldout"]["n"] // every)
        else:  # an lm's: the same test stream, every every-th window
            assert card["test_tokens"] == ck.meta["heldout"]["test_tokens"]
        measured = heldout_metrics(ck, every=every)
    else:
        measured = heldout_metrics(ck)
    assert not card_mismatches(measured, card), card_mismatches(measured, card)


def test_the_lm_card_says_what_its_heads_do_as_the_weights_do():
    """The shipped lm's Heads section (``meta.heads``: the best induction and previous-token heads, the copy losses,
    the induction heads switched off, the in-context score on valid text), re-measured from the weights: what the
    Heads page shows of it is what the card says. The in-context score over the card's first
    ``find_heads.SAMPLE_WINDOWS`` windows (``meta.heads_sample``; the card's 256 took 96 s of the suite)."""
    from core import find_heads
    from core.training.tasks import LMTask
    ck = registry.load("lm")
    card = ck.meta["heads"]
    task = LMTask(tokenizer=ck.tokenizer, seq_len=ck.model.cfg.max_len, name=ck.meta["task"])
    got = find_heads.card_heads(ck, task.valid_stream, windows=find_heads.SAMPLE_WINDOWS)
    assert got.keys() == card.keys() and got["heads_off"] == card["heads_off"]
    assert got["in_context"]["windows"] == find_heads.SAMPLE_WINDOWS < card["in_context"]["windows"]
    for key, want in (("best_induction", card["best_induction"]), ("best_previous_token", card["best_previous_token"]),
                      ("in_context", ck.meta["heads_sample"]["in_context"])):
        assert got[key] == pytest.approx(want, rel=1e-4, abs=1e-5), key
    for key in ("first_copy_loss", "second_copy_loss", "second_copy_loss_heads_off", "chance_loss"):
        assert got[key] == pytest.approx(card[key], rel=1e-5), key
    text = (ck.path / "card.md").read_text()
    assert f"| best induction score (layer, head) | {card['best_induction']['score']:.3f} " in text


@pytest.mark.parametrize("name", ["en-fr", "en-de", "en-fr-tiny", "en-de-tiny"])
def test_the_splits_a_translator_card_read_are_still_generated_the_same(name):
    """A few seconds, where a changed generator otherwise shows as a card mismatch minutes later (issue 33)."""
    from core.data import release_of, split_digest
    meta = registry.load(name).meta
    digests, release = meta["corpus_digest"], release_of(meta, "generated")
    assert set(digests) == ({"test"} if name.endswith("-tiny") else {"test", "heldout"})
    moved = [split for split, digest in digests.items() if split_digest(name, split, release) != digest]
    assert not moved, (f"the generator now writes other {' and '.join(moved)} sentences for {name}: re-measure its "
                       f"card (python scripts/bundle.py assets/models/{name}) or retrain it")


def test_card_mismatches_holds_counts_exactly_and_losses_to_float32():
    card = {"exact_match": 0.5, "n": 6000, "valid_loss": 0.40557605}
    assert card_mismatches({"exact_match": 0.5, "n": 6000, "valid_loss": 0.40557602}, card) == []
    assert card_mismatches({"exact_match": 0.5 + 1 / 6000, "n": 6000, "valid_loss": 0.40557605}, card) == [
        f"exact_match: 0.5 → {0.5 + 1 / 6000}"]
    assert card_mismatches({"exact_match": 0.5, "n": 6000, "valid_loss": 0.4056}, card) == ["valid_loss: 0.40557605 → 0.4056"]
    assert card_mismatches({"exact_match": 0.5, "valid_loss": 0.40557605}, card) == ["n: 6000 → None"]
    # a perplexity is exp(loss): the lm's loss moved by 1.2e-6 (float32 rounding) moved its perplexity by that, relative
    lm = {"test_loss": 3.156253445533014, "perplexity": 23.482452627543765}
    assert card_mismatches({"test_loss": 3.1562546760805192, "perplexity": 23.48248152383504}, lm) == []
    assert card_mismatches({"test_loss": 3.156253445533014, "perplexity": 23.4830}, lm) == [
        "perplexity: 23.482452627543765 → 23.483"]


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_seed_sentences_translate_exactly(name):
    ck = registry.load(name)
    sources = list(SEEDS[name])
    assert translate_all(ck, sources) == [SEEDS[name][s] for s in sources]


@pytest.mark.parametrize("name", sorted(BROAD))
def test_broad_translators_translate_what_people_type_first(name):
    ck = registry.load(name)
    sources = list(BROAD[name])
    assert translate_all(ck, sources) == [BROAD[name][s] for s in sources]


@pytest.mark.parametrize("name", ["en-fr-tiny", "en-de-tiny"])
def test_tiny_translation_models_meet_their_targets(name):
    held = registry.load(name).meta["heldout"]
    assert held["exact_match"] >= 0.95
    assert held["pronoun_accuracy"] >= 0.99


@pytest.mark.parametrize("name", sorted(BROAD))
def test_broad_translators_card_floors(name):
    """The floors under which a retrained default translator must not ship (each card states the measured
    figures; the issue's targets and where they were missed are in the card and docs/BENCHMARKS.md)."""
    ck = registry.load(name)
    held, floors = ck.meta["heldout"], REAL_FLOORS if "--real-share" in ck.meta.get("command", "") else FLOORS
    assert held["n"] >= 5000 and held["heldout_noun_n"] >= 1000 and held["handwritten_n"] >= 40
    assert held["pronoun_accuracy"] >= floors["pronoun_accuracy"]
    assert held["exact_match"] >= floors["exact_match"] and held["bleu"] >= floors["bleu"]
    assert held["heldout_noun_pronoun_accuracy"] >= floors["heldout_noun_pronoun_accuracy"]
    assert held["handwritten_pronoun_accuracy"] >= floors["handwritten_pronoun_accuracy"]
    assert held["handwritten_unknown_rate"] <= 0.05
    if floors is REAL_FLOORS:  # issue 31's targets on held-out documents of human translation (the card's figures)
        assert held["real_test_n"] >= 1000 and held["real_test_chrf"] >= 50
        assert held["real_test_bleu"] >= {"en-fr": 25, "en-de": 20}[name]


def test_bundled_masked_lm_meets_its_target():
    held = registry.load("mlm").meta["heldout"]
    assert held["masked_accuracy"] >= 0.8 and held["n_lines"] == 300


def test_bundled_models_are_small():
    """The small models stay under 8 MB each; the two broad translators add at most 80 MB together, the English
    lm (10.2 M parameters in float16, BPE of 8,192; issue 32 allows up to ~25 M) at most 24 MB."""
    sizes = {name: sum(f.stat().st_size for f in (registry.BUNDLED / name).iterdir()) for name in registry.bundled()}
    for name, size in sizes.items():
        if name not in BROAD:
            assert size < (24_000_000 if name == "lm" else 8_000_000), f"{name} is {size} bytes"
    assert sum(sizes[n] for n in BROAD) <= 80_000_000, sizes


def test_bundled_lm_tiny_writes_english_from_its_corpus():
    """Continuations of a prompt, greedy and sampled (top-k 10), use only words of the training corpus, end on
    their own (EOS, as every corpus line does) and are sentences: capitalised, ending with a full stop."""
    from core.data.lm import generate_corpus
    from core.data.translation import words
    from core.inference.decoding import generate

    ck = registry.load("lm-tiny")
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


def test_english_lm_beats_its_n_gram_baselines_and_writes_english():
    """The card's held-out perplexity (test split, read once) is at most 0.6 × the interpolated bigram's on the same
    tokens (issue 18's goal; 70.6 / 140.7 = 0.50 measured), which is below the unigram's; sampled continuations are made
    of words its training text holds."""
    import re
    from core.inference.decoding import generate

    ck = registry.load("lm")
    held = ck.meta["heldout"]
    assert held["perplexity"] < held["bigram_perplexity"] < held["unigram_perplexity"]
    assert held["perplexity_vs_bigram"] == pytest.approx(held["perplexity"] / held["bigram_perplexity"])
    assert held["perplexity_vs_bigram"] <= 0.6
    known = set(ck.known_words)
    tok = ck.tokenizer
    words = []
    # six prompts of 60 tokens: the model often ends a paragraph early, and three short samples gave only 40 words, where
    # one invented name ("Contributed by Nanas Zijla") moved the share by 7 points (155 words: 98.1 %)
    prompts = ["The function returns", "You can use the", "Debian is", "The package", "If the file",
               "This module provides"]
    for seed, prompt in enumerate(prompts):
        r = generate(ck.model, prompt=tok.encode(prompt), method="sample", top_k=20, seed=seed, max_new=60)
        text = tok.decode(r.ids)
        assert "\ufffd" not in text, text
        words += re.findall(r"[a-z]+", text.lower())
    assert len(words) >= 100
    assert sum(w in known for w in words) / len(words) >= 0.95, words


def test_a_fine_tuned_translator_names_what_it_started_from_and_read():
    """The shipped en-fr was fine-tuned on a CPU from the GPU model (``core.train --init-from``): its meta and card
    name that model by its own training command, and everything that reads its corpus reads the releases it read."""
    from core.data import parallel_for, parallel_of, release_of
    from scripts.bundle import starting_point
    ck = registry.load("en-fr")
    init = ck.meta["init_from"]
    assert init["model"] == "en-fr" and "--max-seconds" in init["command"] and init["step"] > 0
    assert f"--init-from {init['model']}" in ck.meta["command"]
    card = (registry.BUNDLED / "en-fr" / "card.md").read_text()
    assert starting_point(ck).strip() in card and init["command"] in card
    assert release_of(ck.meta) == 2 and release_of(ck.meta, "generated") == 1
    release_2 = parallel_for("en-fr", 2)
    assert parallel_of(ck.meta).fingerprint() == release_2.fingerprint()
    assert f"train {release_2.describe()['splits']['train']['pairs']:,} pairs" in card


def test_a_translator_fine_tuned_twice_names_each_starting_point_back_to_the_first_run():
    """The shipped en-de was fine-tuned on a GPU from the first GPU model, then annealed on a CPU from that: its meta
    keeps the chain (``init_from.init_from``) and its card names both runs by their own commands, in order."""
    from scripts.bundle import starting_point
    ck = registry.load("en-de")
    first, second = ck.meta["init_from"]["init_from"], ck.meta["init_from"]
    assert first["model"] == "en-de" and "--init-from" not in first["command"]
    assert f"--init-from {first['model']}" in second["command"] and f"--init-from {second['model']}" in ck.meta["command"]
    card = (registry.BUNDLED / "en-de" / "card.md").read_text()
    section = starting_point(ck).strip()
    assert section in card and section.index(second["command"]) < section.index(first["command"])
