"""The LSTM seq2seq baseline (no attention) against the Transformer: shapes, PAD masking, a tiny run, the JSON."""
import json
from pathlib import Path

import pytest
import torch

from core.variants import recurrence
from core.io.tokenizer import BOS, EOS, PAD

ROOT = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("one_thread")


def test_lstm_forward_shapes_and_pad_never_reaches_the_state():
    torch.manual_seed(0)
    m = recurrence.LSTMSeq2Seq(vocab_size=30, d_emb=8, hidden=16).eval()
    src = torch.tensor([[7, 8, 9, EOS], [7, 8, 9, EOS]])
    tgt = torch.tensor([[BOS, 7, 8], [BOS, 7, 8]])
    assert m(src, tgt).shape == (2, 3, 30)
    padded = torch.tensor([[7, 8, 9, EOS, PAD, PAD]])
    with torch.no_grad():
        h1, c1 = m.encode(src[:1])
        h2, c2 = m.encode(padded)
        assert torch.allclose(h1, h2) and torch.allclose(c1, c2)  # trailing PAD does not change the final state
        assert torch.allclose(m(src[:1], tgt[:1]), m(padded, tgt[:1]))
        other = m.encode(torch.tensor([[5, 8, 9, EOS]]))[0]
    assert not torch.allclose(h1, other)  # the state does depend on the (first) source token
    out = m.greedy(src, max_new=5)
    assert len(out) == 2 and all(len(r) <= 5 and EOS not in r for r in out)


def test_tiny_run_both_models_learn_short_copies():
    cfg = recurrence.RecurrenceConfig(min_len=2, max_len=4, steps=150, batch_size=32, lstm_emb=32, lstm_hidden=48,
                                      d_model=32, heads=4, layers=1, d_ff=64, eval_per_length=40, lr=5e-3)
    res = recurrence.run(cfg)
    assert res["lengths"] == [2, 3, 4]
    assert set(res["curves"]) == {"LSTM seq2seq (no attention)", "Transformer (attention)"}
    for name, c in res["curves"].items():
        assert len(c["token_accuracy"]) == len(c["exact_match"]) == 3
        assert c["token_accuracy"][0] > 0.9, (name, c)
        assert res["params"][name] > 0
    assert recurrence.run(cfg)["curves"] == res["curves"]  # deterministic for a seed
    assert "python -m core.variants.recurrence --out x.json" in recurrence.command(cfg, "x.json")


def test_precomputed_json_has_both_curves_and_the_command():
    data = json.loads((ROOT / "assets" / "recurrence" / "results.json").read_text(encoding="utf-8"))
    assert data["command"].startswith("python -m core.variants.recurrence")
    assert set(data["params"]) == set(data["curves"]) and len(data["curves"]) == 2
    for c in data["curves"].values():
        assert len(c["token_accuracy"]) == len(c["exact_match"]) == len(data["lengths"])
