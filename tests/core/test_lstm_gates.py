"""The LSTM's gates recomputed from its own weights (core.variants.recurrence.lstm_gates): h and c equal what
nn.LSTM computes, for random weights and for the shipped models; the gates lie where σ and tanh put them; the cell
update holds exactly; the shipped decoder's recomputed states write the model's own greedy output."""
import copy
import json
from pathlib import Path

import pytest
import torch
from torch import nn

from core.io.tokenizer import BOS, EOS
from core.variants import recurrence

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "assets" / "recurrence"

pytestmark = pytest.mark.usefixtures("one_thread")


def stepwise(lstm: nn.LSTM, x: torch.Tensor, state=None):
    """nn.LSTM itself, one step at a time: its h_t and c_t after every step ``[T, hidden]``."""
    hs, cs = [], []
    with torch.no_grad():
        for t in range(x.shape[0]):
            _, state = lstm(x[None, t:t + 1], state)
            hs.append(state[0].reshape(-1))
            cs.append(state[1].reshape(-1))
    return torch.stack(hs), torch.stack(cs)


def check_cell_update_and_ranges(gates: recurrence.LSTMGates):
    """c_t = f_t ⊙ c_{t−1} + i_t ⊙ g_t and h_t = o_t ⊙ tanh(c_t), bit for bit; i, f, o in (0, 1), g in (−1, 1)."""
    before = torch.cat([gates.c0[None], gates.c[:-1]])
    assert torch.equal(gates.c, gates.f * before + gates.i * gates.g)
    assert torch.equal(gates.h, gates.o * torch.tanh(gates.c))
    for name in ("i", "f", "o"):
        v = getattr(gates, name)
        assert bool(((v > 0) & (v < 1)).all()), (name, v.min(), v.max())
    assert bool(((gates.g > -1) & (gates.g < 1)).all()), (gates.g.min(), gates.g.max())


@pytest.mark.parametrize("bias, with_state", [(True, False), (True, True), (False, True)])
def test_random_lstm_recomputed_step_by_step_equals_nn_lstm(bias, with_state):
    torch.manual_seed(0)
    lstm = nn.LSTM(6, 9, batch_first=True, bias=bias)
    x = torch.randn(11, 6)
    state = (torch.randn(1, 1, 9), torch.randn(1, 1, 9)) if with_state else None
    gates = recurrence.lstm_gates(lstm, x, state)
    assert gates.i.shape == gates.f.shape == gates.g.shape == gates.o.shape == gates.c.shape == (11, 9)
    with torch.no_grad():
        out, (h_n, c_n) = lstm(x[None], state)
    torch.testing.assert_close(gates.h, out[0], rtol=0, atol=1e-5)
    torch.testing.assert_close(gates.c[-1], c_n.reshape(-1), rtol=0, atol=1e-5)
    h_steps, c_steps = stepwise(lstm, x, state)
    torch.testing.assert_close(gates.h, h_steps, rtol=0, atol=1e-5)
    torch.testing.assert_close(gates.c, c_steps, rtol=0, atol=1e-5)
    if with_state:
        assert torch.equal(gates.h0, state[0].reshape(-1)) and torch.equal(gates.c0, state[1].reshape(-1))
    else:
        assert not gates.h0.any() and not gates.c0.any()
    check_cell_update_and_ranges(gates)


def test_the_comparison_catches_a_wrong_gate_order():
    """The same recomputation on weights with the i and f rows swapped no longer matches nn.LSTM: the check above
    would fail for a function that read PyTorch's gate order wrongly."""
    torch.manual_seed(1)
    lstm = nn.LSTM(4, 8, batch_first=True)
    swapped = copy.deepcopy(lstm)
    with torch.no_grad():
        for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
            i, f, g, o = getattr(lstm, name).chunk(4)
            getattr(swapped, name).copy_(torch.cat([f, i, g, o]))
        x = torch.randn(7, 4)
        own = lstm(x[None])[0][0]
    assert (recurrence.lstm_gates(swapped, x).h - own).abs().max() > 1e-3
    torch.testing.assert_close(recurrence.lstm_gates(lstm, x).h, own, rtol=0, atol=1e-5)


def test_retention_is_the_product_of_the_later_forget_gates():
    torch.manual_seed(2)
    gates = recurrence.lstm_gates(nn.LSTM(3, 5), torch.randn(6, 3))
    expected = torch.ones(5)
    for t in range(3, 6):
        expected = expected * gates.f[t]
    torch.testing.assert_close(gates.retention(2), expected)
    torch.testing.assert_close(gates.retention(2, 5), expected)
    assert torch.equal(gates.retention(4, 4), torch.ones(5))
    torch.testing.assert_close(gates.retention(), gates.f[1:].prod(0))
    assert bool((gates.retention(0) < gates.retention(3)).all())  # more steps, more forgetting


def test_more_than_one_layer_or_direction_is_refused():
    with pytest.raises(ValueError, match="one-layer"):
        recurrence.lstm_gates(nn.LSTM(3, 4, num_layers=2), torch.randn(2, 3))
    with pytest.raises(ValueError, match="one-direction"):
        recurrence.lstm_gates(nn.LSTM(3, 4, bidirectional=True), torch.randn(2, 3))


@pytest.fixture(scope="module")
def shipped():
    rec = json.loads((SHIPPED / "results.json").read_text(encoding="utf-8"))
    task, models = recurrence.load_models(SHIPPED, recurrence.config_of(rec["config"]))
    if not {"lstm", "lstm-attention"} <= set(models):
        pytest.skip("the shipped LSTM weights are not in assets/recurrence")
    return task, models


@pytest.mark.parametrize("key", ["lstm", "lstm-attention"])
def test_shipped_lstms_gates_reproduce_their_encoder_and_decoder(shipped, key):
    task, models = shipped
    model = models[key]
    src = [task.ids[k] for k in (3, 1, 4, 1, 5, 9, 2, 6, 5, 3)] + [EOS]
    trace = recurrence.seq2seq_gates(model, src, len(src) + 1)
    assert trace.encoder.f.shape == (len(src), model.encoder.hidden_size)
    with torch.no_grad():
        states, (h_n, c_n) = model.encoder(model.embed(torch.tensor([src])))
        torch.testing.assert_close(trace.encoder.h, states[0], rtol=0, atol=1e-5)
        torch.testing.assert_close(trace.encoder.c[-1], c_n.reshape(-1), rtol=0, atol=1e-5)
        _, c_steps = stepwise(model.encoder, model.embed(torch.tensor(src)))
        torch.testing.assert_close(trace.encoder.c, c_steps, rtol=0, atol=1e-5)
        # the decoder starts from the encoder's final state and reads BOS and what it wrote
        out = model.greedy(torch.tensor([src]), len(src) + 1)[0]
        assert trace.produced == out + [EOS] and len(out) == len(src) - 1  # its output, ended by EOS
        fed = torch.tensor([[BOS] + trace.produced[:-1]])
        dec_states, (_, dec_c) = model.decoder(model.embed(fed), (h_n, c_n))
        torch.testing.assert_close(trace.decoder.h, dec_states[0], rtol=0, atol=1e-5)
        torch.testing.assert_close(trace.decoder.c[-1], dec_c.reshape(-1), rtol=0, atol=1e-5)
        assert torch.equal(trace.decoder.h0, trace.encoder.h[-1]) and torch.equal(trace.decoder.c0, trace.encoder.c[-1])
        # the recomputed decoder states are the ones that wrote the output
        logits = model.out(trace.decoder.h) if key == "lstm" else model(torch.tensor([src]), fed)[0]
        assert logits.argmax(-1).tolist() == trace.produced
    check_cell_update_and_ranges(trace.encoder)
    check_cell_update_and_ranges(trace.decoder)
    f = trace.steps("f")
    assert f.shape == (2 * len(src), model.encoder.hidden_size)
    units = trace.most_varying(32)
    var = f.var(0, unbiased=False)
    assert len(set(units)) == 32 and var[units].min() >= var[[u for u in range(len(var)) if u not in units]].max()


def test_copy_demo_carries_both_lstms_gates(shipped):
    task, models = shipped
    demo = recurrence.copy_demo(task, models, "7 2 9 a", 20)
    assert set(demo["gates"]) == {"lstm", "lstm-attention"}
    for key, trace in demo["gates"].items():
        assert trace.encoder.f.shape[0] == 5
        assert len(trace.produced) == trace.decoder.f.shape[0]
