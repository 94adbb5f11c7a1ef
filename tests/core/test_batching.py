"""Batches by length, sized in tokens (``core.training.batching.token_batches``) and their use by ``TranslationTask``:
every pair once per epoch, seeded, new order each epoch, within the token budget, disjoint DDP shards; and a
``python -m core.train --batch-tokens`` run whose loss falls (also under two gloo processes)."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from core.training.batching import epoch_size, padded_size, token_batches
from core.training.tasks import TASKS, TranslationTask
from core.io.tokenizer import PAD, SPECIALS

ROOT = Path(__file__).resolve().parents[2]
SAFETY_TIMEOUT = 300  # seconds; only to turn a hang into a failure


def lengths(n=3000, seed=0, lo=3, hi=40):
    rnd = random.Random(seed)
    return [rnd.randint(lo, hi) for _ in range(n)]


def flat(batches):
    return [i for b in batches for i in b]


# ------------------------------------------------------------------ core.training.batching.token_batches
@pytest.mark.parametrize("max_tokens", [40, 300, 2000])
def test_every_index_exactly_once_per_epoch(max_tokens):
    lens = lengths()
    for epoch in range(3):
        seen = flat(token_batches(lens, max_tokens, seed=5, epoch=epoch))
        assert sorted(seen) == list(range(len(lens)))


def test_deterministic_given_seed_and_epoch_and_different_across_epochs_and_seeds():
    lens = lengths()
    a = token_batches(lens, 500, seed=1, epoch=2)
    assert a == token_batches(list(lens), 500, seed=1, epoch=2)
    assert a != token_batches(lens, 500, seed=1, epoch=3)
    assert a != token_batches(lens, 500, seed=2, epoch=2)
    assert a != token_batches(lens, 500, seed=2, epoch=1)  # not seeded by seed + epoch alone
    # different epochs put different examples together, not just the same batches in another order
    assert {tuple(sorted(b)) for b in a} != {tuple(sorted(b)) for b in token_batches(lens, 500, seed=1, epoch=3)}


@pytest.mark.parametrize("max_tokens", [40, 300, 2000])
def test_no_batch_exceeds_the_budget_except_a_lone_overlong_example(max_tokens):
    lens = lengths(hi=60)  # some examples (up to 60) are longer than a budget of 40
    batches = token_batches(lens, max_tokens, seed=0, epoch=0)
    over = [b for b in batches if padded_size(b, lens) > max_tokens]
    assert all(len(b) == 1 and lens[b[0]] > max_tokens for b in over)
    assert len(over) == sum(n > max_tokens for n in lens)  # each over-long example alone, nothing else over


def test_similar_lengths_share_a_batch():
    lens = lengths()
    batches = token_batches(lens, 800, seed=0, epoch=0)
    real, slots = sum(lens), sum(padded_size(b, lens) for b in batches)
    assert real / slots > 0.9  # fixed batches of 20 random lengths in 3..40 fill ~60 %
    assert len(set(len(b) for b in batches)) > 5  # short examples come many to a batch, long ones few


@pytest.mark.parametrize("world", [2, 3])
def test_ranks_are_disjoint_equal_sized_and_drop_at_most_world_minus_one_batches(world):
    lens = lengths()
    single = token_batches(lens, 450, seed=3, epoch=1)
    shards = [token_batches(lens, 450, seed=3, epoch=1, rank=r, world=world) for r in range(world)]
    assert len({len(s) for s in shards}) == 1 and len(shards[0]) == len(single) // world
    assert all(len(s) == epoch_size(lens, 450, 3, 1, world) for s in shards)
    seen = [flat(s) for s in shards]
    for r in range(world):
        for q in range(r + 1, world):
            assert not set(seen[r]) & set(seen[q])
    union = flat(seen)
    assert len(union) == len(set(union))
    # what is missing is whole batches of the unsharded epoch, at most world - 1 of them
    kept = {tuple(b) for s in shards for b in s}
    dropped = [b for b in single if tuple(b) not in kept]
    assert len(dropped) == len(single) % world <= world - 1
    assert sorted(union + flat(dropped)) == list(range(len(lens)))


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        token_batches([3, 4], 0, 0, 0)
    with pytest.raises(ValueError):
        token_batches([3, 4], 10, 0, 0, rank=2, world=2)
    with pytest.raises(ValueError):
        token_batches([3, 0], 10, 0, 0)
    assert token_batches([], 10, 0, 0) == []


# ------------------------------------------------------------------ TranslationTask with batch_tokens
FIRST = len(SPECIALS)


def fake_task(n=500, batch_tokens=120, seed=0) -> TranslationTask:
    """A TranslationTask on a made-up ``train_ids`` list (its constructor builds the real corpus): pair ``i``'s
    source starts with token ``FIRST + i``, so a batch names the pairs it holds. Target lengths follow source
    lengths, as a translation's do."""
    rnd = random.Random(seed)
    task = TranslationTask.__new__(TranslationTask)
    src_lens = [rnd.randint(1, 13) for _ in range(n)]
    task.train_ids = [([FIRST + i] + [FIRST] * (k - 1), [FIRST] * (k + rnd.randint(0, 3)))
                      for i, k in enumerate(src_lens)]
    task._order = {}
    task.batch_tokens = batch_tokens
    return task


def picked(batch) -> list[int]:
    return (batch.src[:, 0] - FIRST).tolist()


def test_translation_task_token_batches_cover_each_epoch_within_budget():
    task = fake_task()
    got, step = [], 0
    for epoch in range(2):
        n = epoch_size(task.token_lengths(), task.batch_tokens, 0, epoch)
        seen = []
        for _ in range(n):
            b = task.batch(step, 64, seed=0)  # batch_size is not used
            assert b.src.numel() <= task.batch_tokens and b.tgt_out.numel() <= task.batch_tokens
            assert b.src.shape[0] == b.tgt_out.shape[0] >= 1
            seen += picked(b)
            step += 1
        assert sorted(seen) == list(range(500))
        got.append(seen)
    assert got[0] != got[1]
    real = slots = 0
    for s in range(10):
        b = task.batch(s, 64, seed=0)
        real += int(b.src.ne(PAD).sum() + b.tgt_out.ne(PAD).sum())
        slots += b.src.numel() + b.tgt_out.numel()
    assert real / slots > 0.8  # similar lengths together: little padding (fixed batches of 32: 56 % real)


def test_translation_task_token_batch_is_a_pure_function_of_seed_and_step():
    a, fresh = fake_task(), fake_task()
    steps = [a.batch(s, 64, seed=4) for s in range(60)]  # crosses an epoch boundary (about 40 a epoch)
    for s in (59, 0, 37, 41):  # a resumed run asks for any step first
        assert fresh.batch(s, 64, seed=4).src.equal(steps[s].src)
    assert [picked(fake_task().batch(s, 64, seed=5)) for s in range(10)] != [picked(b) for b in steps[:10]]


def test_translation_task_token_batches_shard_across_two_ranks():
    task = fake_task()
    n = epoch_size(task.token_lengths(), task.batch_tokens, 0, 0, world=2)
    ranks = [[i for s in range(n) for i in picked(task.batch(s, 64, 0, rank=r, world=2))] for r in range(2)]
    assert not set(ranks[0]) & set(ranks[1])
    missing = set(range(500)) - set(ranks[0]) - set(ranks[1])
    assert len(ranks[0]) + len(ranks[1]) + len(missing) == 500
    assert len(missing) <= 120 // 2  # at most one dropped batch (of >= 2 pairs, widths >= 2)


def test_fixed_size_batches_are_unchanged_without_batch_tokens():
    task = fake_task(batch_tokens=None)
    b = task.batch(0, 32, seed=0)
    assert b.src.shape[0] == 32


# ------------------------------------------------------------------ python -m core.train --batch-tokens
TRANSLATION_TASK = "en-fr-tiny" if "en-fr-tiny" in TASKS else "en-fr"  # the small corpus, fast to build
SMALL = ["--task", TRANSLATION_TASK, "--batch-tokens", "600", "--seed", "0", "--layers", "1", "--d-model", "64",
         "--heads", "4", "--d-ff", "128", "--dropout", "0", "--label-smoothing", "0", "--schedule", "cosine",
         "--lr", "0.003", "--warmup", "10", "--threads", "1", "--device", "cpu"]


def run_cli(*args, env=None, module=("-m", "core.train")):
    return subprocess.run([sys.executable, *module, *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=SAFETY_TIMEOUT, env=env)


@pytest.mark.slow
def test_cli_trains_with_token_batches_and_its_loss_falls(tmp_path):
    out = tmp_path / "run"
    r = run_cli("--out", out, "--steps", "40", "--eval-every", "1000", "--ckpt-every", "1000", *SMALL,
                env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    history = json.loads((out / "train_state.json").read_text())["history"]
    assert len(history) == 40
    first, last = sum(x for _, x in history[:5]) / 5, sum(x for _, x in history[-5:]) / 5
    assert last < 0.7 * first, (first, last)
    meta = json.loads((out / "config.json").read_text())["meta"]
    assert "--batch-tokens 600" in meta["command"] and summary["tokens_per_s"] > 0


@pytest.mark.slow
def test_two_gloo_processes_train_on_token_batches(tmp_path):
    out = tmp_path / "run"
    r = run_cli("--standalone", "--nproc_per_node=2", "-m", "core.train", "--out", out, "--steps", "6",
                "--eval-every", "1000", "--ckpt-every", "3", *SMALL, module=("-m", "torch.distributed.run"),
                env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "× 2 processes" in r.stderr
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["steps"] == 6
