"""Issue 33 item 2: the broad corpus's release 2 draws each frame from its own seed, so adding or reweighting one
frame leaves every other frame's sentences (and their order) as they were; release 1, one weighted draw over all
frames, is kept for the translators that read it (their cards' digests, tests/core/test_bundled.py)."""
import collections
import dataclasses
import inspect

import pytest

from core.data import Corpus, broad, corpus_for, corpus_of, release_of, split_digest

SPLIT = "valid"


@pytest.fixture
def fresh_caches():
    """The samplers are cached per split; a test that changes the frames clears them before and after."""
    caches = (broad._frame_specs, broad._per_frame_specs, broad._joint_specs, broad._pools)
    for c in caches:
        c.cache_clear()
    yield
    for c in caches:
        c.cache_clear()


def by_frame(specs) -> dict[str, list]:
    out = collections.defaultdict(list)
    for s in specs:
        out[s.frame].append(s)
    return out


def test_a_new_frame_and_a_reweighted_one_leave_every_other_frames_sentences_identical(monkeypatch, fresh_caches):
    before = {r: broad._specs(SPLIT, None, "fr", r) for r in (1, 2)}
    frames = list(broad.FRAMES_LIST)
    heavier = frames[3].name
    copy = dataclasses.replace(frames[0], name="a_new_frame")
    changed = [dataclasses.replace(f, weight=f.weight * 2) if f.name == heavier else f for f in frames] + [copy]
    monkeypatch.setattr(broad, "FRAMES_LIST", changed)
    monkeypatch.setattr(broad, "FRAMES", {f.name: f for f in changed})
    for c in (broad._frame_specs, broad._per_frame_specs, broad._joint_specs):
        c.cache_clear()
    after = {r: broad._specs(SPLIT, None, "fr", r) for r in (1, 2)}
    old, new = by_frame(before[2]), by_frame(after[2])
    others = set(old) - {heavier}
    assert all(new[name] == old[name] for name in others)  # the same sentences of every other frame, same order
    assert [s for s in after[2] if s.frame in others] == [s for s in before[2] if s.frame in others]
    assert len(new["a_new_frame"]) > 0 and new[heavier][:len(old[heavier])] == old[heavier]
    assert len(new[heavier]) > len(old[heavier])  # twice the weight: more of that frame, the first ones kept
    # what release 1 did: the same change moves most other frames' sentences
    old1, new1 = by_frame(before[1]), by_frame(after[1])
    assert sum(new1[name] != old1[name] for name in others) > len(others) // 2


def test_each_frame_gets_its_weights_share_and_a_prefix_starts_every_frame():
    whole = broad._specs("train", None, "fr", 2)
    prefix = broad._specs("train", 30_000, "fr", 2)
    kept = set(prefix)  # the start of every frame's stream, in the whole split's order
    assert 28_000 <= len(prefix) <= 30_000 and kept <= set(whole) and [s for s in whole if s in kept] == list(prefix)
    quotas = broad._quotas("train", "fr")
    got = collections.Counter(s.frame for s in whole)
    assert set(got) == set(broad.frame_names("fr"))
    full = [name for name, q in quotas.items() if got[name] == q]
    assert len(full) >= len(quotas) - 6, {n: (got[n], q) for n, q in quotas.items() if got[n] != q}
    assert all(quotas[n] == round(broad.FRAMES[n].weight * broad._PER_WEIGHT["train"]) for n in quotas)
    share = 30_000 / sum(quotas.values())  # evenly spread: that share of the split is that share of each frame
    seen = collections.Counter(s.frame for s in prefix)
    assert all(abs(seen[n] - quotas[n] * share) <= 1 for n in full), {n: (seen[n], quotas[n] * share) for n in full}
    assert {broad._split_of(s) for s in whole} == {"train"}
    heldout = broad._specs("heldout", None, "fr", 2)
    assert all(any(s.get(r) in broad.heldout_nouns() for r in broad.FRAMES[s.frame].roles) for s in heldout)


def test_the_release_travels_with_the_corpus_and_the_model():
    drawn = corpus_for("en-fr", 2)
    assert isinstance(drawn, Corpus) and isinstance(drawn, broad.Drawn) and drawn.release == 2
    assert corpus_for("en-fr") is broad and corpus_for("en-de", 1) is broad
    for name in ("generate", "probe_pairs"):
        promised = [p for p in inspect.signature(getattr(Corpus, name)).parameters if p != "self"]
        assert all(p in inspect.signature(getattr(drawn, name)).parameters for p in promised)
    assert drawn.lexicon is broad.lexicon and drawn.pronoun_of is broad.pronoun_of
    with pytest.raises(AttributeError):
        drawn.no_such_thing
    v1, v2 = broad.generate("fr", SPLIT, release=1), drawn.generate("fr", SPLIT)
    assert {p.src for p in v1} != {p.src for p in v2}
    assert [p.src for p in corpus_of({"task": "en-fr", "generated_release": 2}).generate("fr", SPLIT)] == [p.src for p in v2]
    assert release_of({"task": "en-fr"}, "generated") == 1 and corpus_of({"task": "en-fr"}) is broad
    assert split_digest("en-fr", "test", 2) != split_digest("en-fr", "test", 1)
    pairs = drawn.probe_pairs("fr")
    assert pairs[0][0].src.startswith("The animal didn't cross the street") and len(pairs) == 120
    assert {a.spec for a, _ in pairs[1:]} <= set(broad._specs("test", None, "fr", 2))
    for bad in (lambda: corpus_for("en-fr-tiny", 2), lambda: corpus_for("en-fr", 3),
                lambda: broad.generate("fr", SPLIT, release=0), lambda: release_of({"task": "en-fr"}, "lexicon")):
        with pytest.raises(ValueError, match="release|kind of text"):
            bad()


def test_a_new_broad_run_draws_the_latest_release_records_it_and_a_resume_keeps_its_own(tmp_path, monkeypatch):
    """The trainer's part, without building 300,000 sentences: the task factory is replaced by one that records what
    it was asked for and hands back a tiny copy task."""
    import json

    from core.io import checkpoint
    from core.training import trainer
    asked, real = [], trainer.make_task

    def fake_task(name, **kw):
        asked.append(kw.get("generated_release"))
        return real("copy", seq_len=4)
    monkeypatch.setattr(trainer, "make_task", fake_task)
    tiny = dict(task="en-fr", steps=1, layers=1, d_model=16, heads=2, d_ff=32, batch_size=4, eval_every=1000,
                warmup=1, threads=1, quiet=True)
    out = tmp_path / "run"
    trainer.train(trainer.TrainConfig(out=str(out), **tiny))
    meta = checkpoint.load(out).meta
    assert asked == [broad.LATEST_GENERATED] == [2] and meta["generated_release"] == 2
    assert "--generated-release 2" in meta["command"] and release_of(meta, "generated") == 2
    state = out / checkpoint.STATE_JSON  # a run from before release 2: its state names none
    st = json.loads(state.read_text())
    del st["train_config"]["generated_release"]
    state.write_text(json.dumps(st))
    trainer.train(trainer.TrainConfig(out=str(out), resume=True, **(tiny | {"steps": 2})))
    assert asked[-1] == 1 and checkpoint.load(out).meta["generated_release"] == 1
    with pytest.raises(ValueError, match="generated_release differ"):
        trainer.train(trainer.TrainConfig(out=str(out), resume=True, generated_release=2, **(tiny | {"steps": 3})))
