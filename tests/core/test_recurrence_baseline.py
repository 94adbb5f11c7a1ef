"""The LSTM seq2seq baseline (no attention), the same with Luong attention, and the Transformer: shapes, PAD masking,
the attention step by its formulas, a tiny run, the JSON and the shipped weights."""
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


def test_luong_attention_step_by_the_formulas():
    """One decoder step of the attention LSTM recomputed from Luong et al. (2015), eq. 5-8 with the "general"
    score: score = h_tᵀ W_a h̄_s over unpadded source states, α = softmax, c_t = Σ α h̄_s, h̃_t = tanh(W_c[c_t; h_t]),
    logits = W_s h̃_t; and the greedy alignment is α at each output step."""
    torch.manual_seed(0)
    m = recurrence.LSTMAttnSeq2Seq(vocab_size=30, d_emb=8, hidden=16).eval()
    src = torch.tensor([[7, 8, 9, 11, EOS, PAD, PAD]])
    with torch.no_grad():
        (h0, c0), states, pad = m.encode(src)
        assert pad.tolist() == [[False] * 5 + [True] * 2] and torch.all(states[0, 5:] == 0)
        ref_states, (ref_h, _) = m.encoder(m.embed(src[:, :5]))  # the unpadded source, read plainly
        torch.testing.assert_close(states[:, :5], ref_states)
        torch.testing.assert_close(h0, ref_h)
        h_t = m.decoder(m.embed(torch.tensor([[BOS]])), (h0, c0))[0][0, 0]
        score = torch.stack([h_t @ m.w_a.weight @ states[0, s] for s in range(5)])
        alpha = torch.softmax(score, 0)
        context = (alpha[:, None] * states[0, :5]).sum(0)
        logits = m.out.weight @ torch.tanh(m.w_c.weight @ torch.cat([context, h_t])) + m.out.bias
        torch.testing.assert_close(m(src, torch.tensor([[BOS]]))[0, 0], logits, rtol=1e-5, atol=1e-6)
        out, align = m.align(src, max_new=6)
    assert align.shape == (len(out) + (len(out) < 6), 7) and torch.all(align[:, 5:] == 0)
    torch.testing.assert_close(align.sum(-1), torch.ones(align.shape[0]))
    torch.testing.assert_close(align[0, :5], alpha)
    assert out == m.greedy(src, max_new=6)[0]


def test_tiny_run_the_three_models_learn_short_copies_and_save_their_weights(tmp_path):
    cfg = recurrence.RecurrenceConfig(min_len=2, max_len=4, steps=150, batch_size=32, lstm_emb=32, lstm_hidden=48,
                                      d_model=32, heads=4, layers=1, d_ff=64, eval_per_length=40, lr=5e-3,
                                      weights=str(tmp_path))
    res = recurrence.run(cfg)
    assert res["lengths"] == [2, 3, 4]
    assert set(res["curves"]) == set(recurrence.NAMES.values())
    task, models = recurrence.load_models(tmp_path, cfg)
    assert set(models) == set(recurrence.NAMES)
    again = recurrence.accuracy_by_length(models["lstm-attention"], task, res["lengths"], 40)
    assert again == res["curves"][recurrence.NAMES["lstm-attention"]]  # the saved weights are the trained ones
    for name, c in res["curves"].items():
        assert len(c["token_accuracy"]) == len(c["exact_match"]) == 3
        assert c["token_accuracy"][0] > 0.9, (name, c)
        assert res["params"][name] > 0
    cfg.weights = None
    assert recurrence.run(cfg)["curves"] == res["curves"]  # deterministic for a seed
    assert "python -m core.variants.recurrence --out x.json" in recurrence.command(cfg, "x.json")


def test_precomputed_json_has_the_three_curves_and_the_command():
    data = json.loads((ROOT / "assets" / "recurrence" / "results.json").read_text(encoding="utf-8"))
    assert data["command"].startswith("python -m core.variants.recurrence")
    assert set(data["params"]) == set(data["curves"]) == set(recurrence.NAMES.values())
    for c in data["curves"].values():
        assert len(c["token_accuracy"]) == len(c["exact_match"]) == len(data["lengths"])
