"""Longer than training (core.variants.extrapolation): the per-position loss is each token's cross-entropy, ALiBi's
bias past the training length is still −slope·|i − j| inside a real layer, a learned table refuses the positions it
does not have, the five models share every starting weight, and the shipped models give back their recorded
held-out figures."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from core.variants import extrapolation as ex

pytestmark = pytest.mark.usefixtures("one_thread")
ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "assets" / "extrapolation"
TINY = ex.ExtrapolationConfig(seq_len=8, eval_len=40, vocab_size=50, d_model=16, heads=4, layers=2, d_ff=32)


@pytest.fixture(scope="module")
def shipped():
    if not (SHIPPED / ex.RESULTS).exists():
        pytest.skip("the five models are not in assets/extrapolation")
    return ex.load(SHIPPED)


def tiny(kind: str) -> torch.nn.Module:
    """A random model of ``kind`` built for 40 positions (the learned one keeps its 8)."""
    return ex.reload(TINY, kind, ex.build(TINY, kind).state_dict())


@pytest.mark.parametrize("kind", ex.KINDS)
def test_the_loss_at_each_position_is_the_cross_entropy_of_the_next_token_given_the_prefix(kind):
    """Position p's loss is −log softmax(logits of a pass over ids[0..p] alone)[ids[p + 1]]: one pass per prefix,
    so a look at later tokens or a target shifted by one would show."""
    model = tiny(kind)
    ids = torch.randint(5, TINY.vocab_size, (9,), generator=torch.Generator().manual_seed(3))
    got = ex.position_losses(model, ids)
    assert got.shape == (8,)
    with torch.no_grad():
        want = [float(-F.log_softmax(model(ids[None, :p + 1]).logits[0, -1].double(), -1)[ids[p + 1]])
                for p in range(8)]
        flat = F.cross_entropy(model(ids[None, :-1]).logits[0], ids[1:], reduction="none")
    assert got.tolist() == pytest.approx(want, abs=1e-5)
    assert torch.allclose(got, flat, atol=1e-6)
    batch = torch.stack([ids, ids.flip(0)])
    assert torch.allclose(ex.position_losses(model, batch)[0], got, atol=1e-6)


def test_alibi_past_the_training_length_adds_minus_slope_times_distance_in_a_real_layer():
    """A model trained on 8 positions reads 40: layer 0's output equals softmax(q·kᵀ/√d − s_h·|i − j|, causal)·v
    with Press et al.'s slopes s_h = 2^(−8(h+1)/H), at every query past position 8 too."""
    model = tiny("alibi")
    ids = torch.randint(5, TINY.vocab_size, (1, 40), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        tr = model(ids, trace=True).trace
    q, k, v = (tr[f"decoder.0.self_attn.{n}"][0].double() for n in "qkv")  # [H, T, d]
    heads, t, d = q.shape
    slopes = torch.tensor([2.0 ** (-8 * (h + 1) / heads) for h in range(heads)], dtype=torch.float64)
    i, j = torch.arange(t)[:, None], torch.arange(t)[None, :]
    scores = q @ k.transpose(-1, -2) / d ** 0.5 - slopes[:, None, None] * (i - j).abs()
    scores = scores.masked_fill(j > i, float("-inf"))
    want = scores.softmax(-1) @ v
    got = tr["decoder.0.self_attn.heads"][0].double()
    assert torch.allclose(got[:, TINY.seq_len:], want[:, TINY.seq_len:], atol=1e-5)
    assert torch.allclose(got, want, atol=1e-5)
    losses = ex.position_losses(model, ids[0])
    assert losses.shape == (39,) and bool(torch.isfinite(losses).all())


def test_a_learned_table_refuses_the_positions_it_does_not_have_and_the_page_gets_none_there():
    model = tiny("learned")
    assert model.max_positions == TINY.seq_len == ex.table_limit("learned", TINY)
    ids = torch.randint(5, TINY.vocab_size, (12,), generator=torch.Generator().manual_seed(7))
    assert ex.position_losses(model, ids[:9]).shape == (8,)  # positions 0-7: its whole table
    with pytest.raises(ex.TableLimitError, match=r"has 8 position vectors .* no vector for position 8 or later"):
        ex.position_losses(model, ids)
    got = ex.score({"learned": model, "alibi": tiny("alibi")}, ids)
    assert got["losses"]["learned"][8:] == [None, None, None]
    assert got["losses"]["learned"][:8] == pytest.approx(ex.position_losses(model, ids[:9]).tolist())
    assert list(got["limits"]) == ["learned"] and "cannot read a text of 11 positions" in got["limits"]["learned"]
    assert None not in got["losses"]["alibi"] and ex.table_limit("alibi", TINY) is None
    row = ex.summary(got["losses"], TINY.seq_len)[0]
    assert row["beyond"] is None and row["ratio"] is None and row["inside"] is not None


def test_the_five_models_start_from_the_same_weights_and_differ_only_in_positions():
    built = {kind: ex.build(TINY, kind) for kind in ex.KINDS}
    ref = built["none"].state_dict()
    for kind, model in built.items():
        state = model.state_dict()
        assert set(state) - set(ref) == ({"embed.positions.weight"} if kind == "learned" else set())
        assert all(torch.equal(state[name], ref[name]) for name in ref), kind
        cfg = model.cfg.to_dict()
        assert {k for k in cfg if cfg[k] != built["none"].cfg.to_dict()[k]} <= {"pos_encoding"}


def test_a_text_is_bos_then_its_tokens_cut_or_repeated_to_the_length_read(shipped):
    _, tokenizer, _ = shipped
    short = ex.text_ids(tokenizer, "The kernel loads the module.", 256)
    assert short["ids"][0] == 2 and short["ids"][1:] == tokenizer.encode("The kernel loads the module.")
    assert not short["cut"] and short["tokens"] == len(short["ids"]) - 1
    filled = ex.text_ids(tokenizer, "The kernel loads the module.", 256, repeat=True)
    assert len(filled["ids"]) == 257 and filled["ids"][1:short["tokens"] + 1] == short["ids"][1:]
    long = ex.text_ids(tokenizer, "word " * 400, 256)
    assert long["cut"] and len(long["ids"]) == 257
    assert ex.running_mean([1, 3, None, 5], 2) == [1, 2, None, None]


def test_the_shipped_models_give_back_their_recorded_figures(shipped):
    models, tokenizer, results = shipped
    cfg = ex.config_of(results["config"])
    assert list(models) == list(ex.KINDS) and tokenizer.vocab_size == cfg.vocab_size
    assert all(m.num_parameters() <= 1_000_000 for m in models.values())
    assert results["command"].startswith("python -m core.variants.extrapolation --out assets/extrapolation")
    passage = results["passages"][0]
    got = ex.score(models, passage["ids"])
    assert len(passage["ids"]) == cfg.eval_len + 1 and list(got["limits"]) == ["learned"]
    for kind in ex.KINDS:
        want = passage["losses"][kind]
        assert [v is None for v in got["losses"][kind]] == [v is None for v in want], kind
        assert [v for v in got["losses"][kind] if v is not None] == pytest.approx(
            [v for v in want if v is not None], abs=1e-4), kind
    # the table is the curves' means
    for row in results["summary"]:
        values = results["curves"][row["model"]]
        assert row["inside"] == pytest.approx(sum(values[:cfg.seq_len]) / cfg.seq_len)
        assert (row["beyond"] is None) == (row["model"] == "learned")


def test_the_command_line_refuses_an_unknown_encoding(tmp_path, capsys):
    assert ex.main(["--out", str(tmp_path), "--kinds", "spiral"]) == 2
    assert "spiral" in capsys.readouterr().err and not any(tmp_path.iterdir())
