"""How far one input token reaches (core.variants.recurrence): the gradient of each output on each source embedding
against central finite differences, the exact |w|^(T−j) of a one-unit linear RNN, and the outputs one substituted
token changes on hand-made models whose answers are known."""
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from core.config import ModelConfig
from core.io.tokenizer import BOS, EOS
from core.model import Transformer
from core.variants import recurrence

pytestmark = pytest.mark.usefixtures("one_thread")

V = 14
SRC = [5, 6, 7, 8, EOS]
WRITTEN = [9, 10, 11, 12, EOS]  # the decoder reads BOS 9 10 11 12: no source symbol, so a row of the table is x_j


def tiny(kind: str) -> tuple[nn.Module, torch.Tensor]:
    """A random tiny model in float64 and its source token table."""
    torch.manual_seed(0)
    if kind == "transformer":
        m = Transformer(ModelConfig(kind="encoder-decoder", vocab_size=V, d_model=8, n_heads=2, n_encoder_layers=1,
                                    n_decoder_layers=1, d_ff=16, dropout=0.0, max_len=16, tie_embeddings=False))
        m = m.double().eval()
        return m, m.embed.tokens.weight
    cls = recurrence.LSTMAttnSeq2Seq if kind == "lstm-attention" else recurrence.LSTMSeq2Seq
    m = cls(V, d_emb=4, hidden=6).double().eval()
    return m, m.embed.weight


def log_p_written(model) -> torch.Tensor:
    """log p of each written token, teacher forced, straight from the model's forward (no hook)."""
    out = model(torch.tensor([SRC]), torch.tensor([[BOS] + WRITTEN[:-1]]))
    logits = out if isinstance(out, torch.Tensor) else out.logits
    return torch.log_softmax(logits[0], -1)[torch.arange(len(WRITTEN)), torch.tensor(WRITTEN)]


@pytest.mark.parametrize("kind", ["lstm", "lstm-attention", "transformer"])
def test_sensitivity_equals_central_finite_differences(kind):
    """‖∂ log p(y_t) / ∂ e(x_j)‖ against (f(e + h) − f(e − h)) / 2h on every coordinate of each source symbol's row
    of the token table, in float64 (each source symbol appears once and never in the decoder's input)."""
    model, table = tiny(kind)
    got = recurrence.input_sensitivity(model, SRC, WRITTEN)
    h = 1e-6
    grad = torch.zeros(len(WRITTEN), len(SRC), table.shape[1], dtype=torch.float64)
    with torch.no_grad():
        for j, token in enumerate(SRC):
            for k in range(table.shape[1]):
                table[token, k] += h
                up = log_p_written(model)
                table[token, k] -= 2 * h
                down = log_p_written(model)
                table[token, k] += h
                grad[:, j, k] = (up - down) / (2 * h)
    assert got.shape == (len(WRITTEN), len(SRC)) and float(got.min()) > 0
    torch.testing.assert_close(got, grad.norm(dim=-1), rtol=1e-6, atol=1e-9)


def test_one_unit_linear_rnn_sensitivity_is_a_power_of_w():
    """h_t = w·h_(t−1) + x_t with one unit: ∂h_T/∂x_j = w^(T−j), so the sensitivity is exactly |w|^(T−j) for
    j ≤ T, and 0 for inputs not yet read."""
    w = torch.tensor(-0.7, dtype=torch.float64)
    x = torch.randn(9, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(1))

    def states(xs):  # [B, S, 1] → [B, S]: h_0 … h_(S−1)
        h, out = torch.zeros(xs.shape[0], dtype=xs.dtype), []
        for t in range(xs.shape[1]):
            h = w * h + xs[:, t, 0]
            out.append(h)
        return torch.stack(out, 1)

    got = recurrence.gradient_norms(states, x, 9)
    want = torch.tensor([[abs(w.item()) ** (t - j) if j <= t else 0.0 for j in range(9)] for t in range(9)],
                        dtype=torch.float64)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=0)
    assert got[8, 0].item() == pytest.approx(0.7 ** 8, rel=1e-12)


class Reader(nn.Module):
    """Output step t puts logit 10 on source symbol ``pick(t)`` and 0 on every other symbol."""

    def __init__(self, pick):
        super().__init__()
        self.pick = pick

    def forward(self, src, tgt):
        cols = torch.tensor([self.pick(t) for t in range(tgt.shape[1])])
        return SimpleNamespace(logits=10.0 * nn.functional.one_hot(src[:, cols], V).double())


def test_perturbation_counts_the_outputs_that_change_on_hand_made_models():
    """A copier (step t reads source t): replacing one symbol changes exactly that step, and the log p of what it
    wrote drops by exactly 10 (the logit it loses). A reader of the first symbol only: replacing the first symbol
    changes every step, any other symbol none."""
    copier = recurrence.perturbation_effect(Reader(lambda t: t), SRC, [5, 6, 7, 8, EOS], [(2, 13), (0, 6), (4, 9)])
    assert copier["changed"].tolist() == [[False, False, True, False, False], [True, False, False, False, False],
                                          [False, False, False, False, True]]
    want = torch.zeros(3, 5, dtype=torch.float64)
    want[0, 2] = want[1, 0] = want[2, 4] = 10.0
    torch.testing.assert_close(copier["delta"], want, rtol=0, atol=1e-9)
    first = recurrence.perturbation_effect(Reader(lambda t: 0), SRC, [5] * 5, [(0, 13), (3, 13)])
    assert first["changed"].sum(1).tolist() == [5, 0]
    assert first["delta"][1].abs().max().item() == 0.0


def test_distance_means_shares_and_what_each_output_copies():
    """by_distance averages the pairs n − j + t steps apart; reach_summary's ratio and share on a made-up map."""
    sens = torch.tensor([[4.0, 1.0, 1.0], [2.0, 2.0, 4.0]])  # 2 outputs × (2 symbols + EOS), n = 2
    ds, means = recurrence.by_distance(sens, 2)
    # pairs (t, j) → 2 − j + t: (0,0) 2, (0,1) 1, (0,2) 0, (1,0) 3, (1,1) 2, (1,2) 1
    assert ds == [0, 1, 2, 3] and means == [1.0, 2.5, 3.0, 2.0]
    summary = recurrence.reach_summary(sens, 2, recurrence.copied_from("copy", 2))
    assert summary["first_vs_last"] == pytest.approx(3.0 / 1.5)
    assert summary["own_share"] == pytest.approx((4 / 6 + 2 / 8) / 2)
    assert recurrence.copied_from("reverse", 3) == [2, 1, 0] and recurrence.copied_from("sort", 3) is None
    assert recurrence.reach_summary(sens, 1, None) == {"first_vs_last": None, "own_share": None}  # one symbol
