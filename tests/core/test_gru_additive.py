"""The two models added to the recurrence comparison: the GRU seq2seq (its gates read out step by step against
torch.nn.GRU and the update formula) and the LSTM with additive attention (Bahdanau et al. 2015: score =
vᵀ tanh(W s + U h), recomputed by hand); the shipped float16 weights reproduce their curves; a run of some models
merges into an earlier run's results without touching the others."""
import json
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from torch import nn

from core.io.tokenizer import BOS, EOS, PAD
from core.variants import recurrence

SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "recurrence"
pytestmark = pytest.mark.usefixtures("one_thread")


def test_gru_gates_rebuild_torchs_gru_by_the_update_formula():
    """Each recomputed h_t is torch.nn.GRU's own output, and it is (1 − z_t)·n_t + z_t·h_{t−1} with the gates read
    out: the kept share z_t and the new share 1 − z_t come from one gate."""
    torch.manual_seed(0)
    gru = nn.GRU(5, 7, batch_first=True)
    x, h0 = torch.randn(6, 5), torch.randn(7)
    trace = recurrence.gru_gates(gru, x, h0)
    with torch.no_grad():
        states, last = gru(x[None], h0.reshape(1, 1, 7))
    torch.testing.assert_close(trace.h, states[0], rtol=0, atol=1e-6)
    torch.testing.assert_close(trace.h[-1], last.reshape(7), rtol=0, atol=1e-6)
    before = torch.cat([h0[None], trace.h[:-1]])
    torch.testing.assert_close(trace.h, (1 - trace.z) * trace.n + trace.z * before, rtol=0, atol=1e-6)
    # the gates themselves, from torch's weights split in PyTorch's order r, z, n
    w_ir, w_iz, w_in = gru.weight_ih_l0.detach().chunk(3)
    w_hr, w_hz, w_hn = gru.weight_hh_l0.detach().chunk(3)
    b_ir, b_iz, b_in = gru.bias_ih_l0.detach().chunk(3)
    b_hr, b_hz, b_hn = gru.bias_hh_l0.detach().chunk(3)
    for t in range(6):
        h = before[t]
        r = torch.sigmoid(w_ir @ x[t] + b_ir + w_hr @ h + b_hr)
        z = torch.sigmoid(w_iz @ x[t] + b_iz + w_hz @ h + b_hz)
        n = torch.tanh(w_in @ x[t] + b_in + r * (w_hn @ h + b_hn))
        for got, want in ((trace.r[t], r), (trace.z[t], z), (trace.n[t], n)):
            torch.testing.assert_close(got, want, rtol=0, atol=1e-6)
    assert torch.equal(trace.h0, h0)
    with pytest.raises(ValueError, match="one-layer"):
        recurrence.gru_gates(nn.GRU(3, 4, num_layers=2), torch.randn(2, 3))


def test_a_gru_seq2seq_gate_trace_is_what_the_model_runs():
    torch.manual_seed(1)
    m = recurrence.GRUSeq2Seq(vocab_size=30, d_emb=8, hidden=12).eval()
    src = [7, 8, 9, 11, EOS]
    trace = recurrence.seq2seq_gates(m, src, 6)
    assert trace.encoder.z.shape == (5, 12) and trace.decoder.z.shape == (len(trace.produced), 12)
    out = m.greedy(torch.tensor([src]), 6)[0]
    assert trace.produced == (out + [EOS] if len(out) < 6 else out)
    assert torch.equal(trace.decoder.h0, trace.encoder.h[-1])
    assert recurrence.recomputed_gap(m, src, trace) < 1e-6
    with torch.no_grad():  # PAD after the source changes nothing: the GRU's final state is taken before it
        torch.testing.assert_close(m.encode(torch.tensor([src + [PAD, PAD]])), m.encode(torch.tensor([src])))


def test_additive_score_is_v_tanh_of_w_s_plus_u_h_by_hand():
    """One decoder step of the additive-attention LSTM recomputed from Bahdanau et al. (2015)'s score over the
    unpadded source states, then the same softmax, context and output as the Luong model."""
    torch.manual_seed(0)
    m = recurrence.LSTMAdditiveSeq2Seq(vocab_size=30, d_emb=8, hidden=16, attn_dim=6).eval()
    assert not hasattr(m, "w_a") and m.w.weight.shape == m.u.weight.shape == (6, 16) and m.v.weight.shape == (1, 6)
    src = torch.tensor([[7, 8, 9, 11, EOS, PAD]])
    with torch.no_grad():
        (h0, c0), states, pad = m.encode(src)
        h_t = m.decoder(m.embed(torch.tensor([[BOS]])), (h0, c0))[0][0, 0]
        v, w, u = m.v.weight[0], m.w.weight, m.u.weight
        score = torch.stack([v @ torch.tanh(w @ h_t + u @ states[0, s]) for s in range(5)])
        torch.testing.assert_close(m.score(h_t[None, None], states[:, :5])[0, 0], score, rtol=1e-5, atol=1e-6)
        alpha = torch.softmax(score, 0)
        context = (alpha[:, None] * states[0, :5]).sum(0)
        logits = m.out.weight @ torch.tanh(m.w_c.weight @ torch.cat([context, h_t])) + m.out.bias
        torch.testing.assert_close(m(src, torch.tensor([[BOS]]))[0, 0], logits, rtol=1e-5, atol=1e-6)
        out, align = m.align(src, max_new=6)
    torch.testing.assert_close(align[0, :5], alpha)
    assert torch.all(align[:, 5] == 0) and out == m.greedy(src, max_new=6)[0]


def test_the_gru_and_the_score_network_match_the_lstm_and_luong_in_size():
    cfg = recurrence.RecurrenceConfig()
    models = recurrence.build_models(cfg, 25)
    n = {k: m.num_parameters() for k, m in models.items()}
    assert abs(n["gru"] - n["lstm"]) / n["lstm"] < 0.005
    for h in (models["gru"].encoder.hidden_size - 1, models["gru"].encoder.hidden_size + 1):  # no closer size
        other = recurrence.GRUSeq2Seq(25, cfg.lstm_emb, h).num_parameters()
        assert abs(other - n["lstm"]) > abs(n["gru"] - n["lstm"])
    assert abs(n["lstm-additive"] - n["lstm-attention"]) / n["lstm-attention"] < 0.005


def test_merge_keeps_the_other_models_and_the_run_that_trained_them(tmp_path):
    names = recurrence.NAMES
    old = ("lstm", "lstm-attention", "transformer")
    first = {"config": {"task": "copy", "steps": 1500},
             "curves": {names[k]: {"exact_match": [i]} for i, k in enumerate(old)},
             "params": {names["lstm"]: 1, names["lstm-attention"]: 2, names["transformer"]: 3},
             "losses": {names["lstm"]: [9.0]}, "command": "python first", "date": "d1", "seconds": 131.0}
    second = {"curves": {names["gru"]: {"exact_match": [7]}, names["lstm-attention"]: {"exact_match": [8]}},
              "params": {names["gru"]: 4, names["lstm-attention"]: 5}, "losses": {},
              "models": [names["lstm-attention"], names["gru"]], "rounding_shift": {names["gru"]: 0.01},
              "seconds": 2.0}
    got = recurrence.merge(first, second)
    assert list(got["curves"]) == [names[k] for k in ("lstm", "lstm-attention", "transformer", "gru")]
    assert got["curves"][names["lstm-attention"]] == {"exact_match": [8]}  # retrained: the new run's
    assert got["curves"][names["transformer"]] == {"exact_match": [2]} and got["params"][names["lstm"]] == 1
    assert got["runs"] == [{"models": [names["lstm"], names["transformer"]], "command": "python first", "date": "d1",
                            "seconds": 131.0}]
    got |= {"command": "python second", "date": "d2"}
    assert [r["command"] for r in recurrence.runs_of(got)] == ["python first", "python second"]
    assert recurrence.runs_of(got)[-1]["models"] == [names["lstm-attention"], names["gru"]]
    with pytest.raises(ValueError, match="steps 1500 \\(here 10\\)"):
        recurrence.same(first["config"], recurrence.RecurrenceConfig(steps=10))
    with pytest.raises(ValueError, match="--only takes keys"):
        recurrence.RecurrenceConfig(only="gru,lstmm").keys()
    assert recurrence.RecurrenceConfig(only="lstm-additive, gru").keys() == ["gru", "lstm-additive"]
    assert recurrence.main(["--out", str(tmp_path / "x.json"), "--only", "nope"]) == 2
    assert not (tmp_path / "x.json").exists()


@pytest.fixture(scope="module")
def shipped():
    rec = json.loads((SHIPPED / "results.json").read_text(encoding="utf-8"))
    if not all((SHIPPED / f).exists() for f in recurrence.MODEL_FILES.values()):
        pytest.skip("the shipped weights are not in assets/recurrence")
    task, models = recurrence.load_models(SHIPPED, recurrence.config_of(rec["config"]))
    return rec, task, models


@pytest.mark.parametrize("key", list(recurrence.NAMES))
def test_shipped_curves_reproduce_from_the_shipped_weights(shipped, key):
    """Two lengths of each model's curves, measured again from the files beside them (the new models' float16
    weights as they are stored), give the shipped numbers exactly."""
    rec, task, models = shipped
    curve = rec["curves"][recurrence.NAMES[key]]
    at = [0, len(rec["lengths"]) // 2]
    again = recurrence.accuracy_by_length(models[key], task, [rec["lengths"][i] for i in at],
                                          rec["config"]["eval_per_length"])
    assert again == {m: [curve[m][i] for i in at] for m in curve}
    with safe_open(str(SHIPPED / recurrence.MODEL_FILES[key]), "pt") as f:
        dtypes = {f.get_tensor(k).dtype for k in f.keys()}
    assert dtypes == ({torch.float16} if recurrence.NAMES[key] in rec.get("rounding_shift", {}) else {torch.float32})


def test_the_shipped_results_name_the_run_behind_every_model(shipped):
    rec, _, _ = shipped
    runs = recurrence.runs_of(rec)
    trained = [m for r in runs for m in r["models"]]
    assert sorted(trained) == sorted(recurrence.NAMES.values()) and len(set(trained)) == len(trained)
    assert all(r["command"].startswith("python -m core.variants.recurrence") for r in runs)
