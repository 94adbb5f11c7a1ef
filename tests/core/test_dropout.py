"""core.dropout: the cheap CPU dropout mask keeps what nn.Dropout promises (rate, scale, gradient,
independence, repeatability) and is what attention and the model use in training."""
import math

import pytest
import torch
import torch.nn.functional as F

from core import ModelConfig, Transformer
from core.attention import scaled_dot_product_attention
from core.dropout import Dropout, dropout, keep_mask


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5, 0.9])
def test_keep_rate_matches_p(p):
    torch.manual_seed(0)
    n = 1 << 22
    kept = keep_mask((n,), p).double().mean().item()
    expected = 1 - round(p * 65536) / 65536
    assert abs(expected - (1 - p)) < 1e-5
    # 5 binomial standard deviations
    assert abs(kept - expected) < 5 * math.sqrt(p * (1 - p) / n)


def test_neighbouring_elements_are_independent():
    # four elements share one 64-bit draw: no correlation between them, nor between draws
    torch.manual_seed(1)
    m = keep_mask((1 << 20, 4), 0.5).double()
    for i in range(4):
        for j in range(i + 1, 4):
            c = torch.corrcoef(torch.stack([m[:, i], m[:, j]]))[0, 1].item()
            assert abs(c) < 5 / math.sqrt(m.shape[0]), (i, j, c)
    joint = (m[:, 0] * m[:, 1] * m[:, 2] * m[:, 3]).mean().item()
    assert abs(joint - 1 / 16) < 5 * math.sqrt(1 / 16 * 15 / 16 / m.shape[0])


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 5, 7), (0, 4)])
def test_kept_values_scaled_dropped_zero(shape):
    torch.manual_seed(2)
    x = torch.randn(shape) + 5.0  # no zeros in x
    y = dropout(x, 0.25)
    assert y.shape == x.shape and y.dtype == x.dtype
    kept = y != 0
    torch.testing.assert_close(y[kept], x[kept] / 0.75, rtol=0, atol=1e-6)


def test_gradient_is_the_mask_times_scale():
    torch.manual_seed(3)
    x = torch.randn(64, 33, requires_grad=True)
    y = dropout(x, 0.2)
    y.backward(torch.ones_like(y))
    expected = (y != 0).float() / 0.8
    torch.testing.assert_close(x.grad, expected, rtol=0, atol=1e-6)


def test_same_seed_same_mask_and_successive_calls_differ():
    x = torch.ones(1000)
    torch.manual_seed(4)
    a, b = dropout(x, 0.5), dropout(x, 0.5)
    torch.manual_seed(4)
    assert torch.equal(dropout(x, 0.5), a)
    assert not torch.equal(a, b)


def test_eval_and_zero_rate_are_identity_and_dtype_is_kept():
    x = torch.randn(10, 10)
    assert dropout(x, 0.5, training=False) is x
    assert dropout(x, 0.0) is x
    m = Dropout(0.5).eval()
    assert m(x) is x
    h = torch.randn(100, dtype=torch.bfloat16)
    assert dropout(h, 0.5).dtype == torch.bfloat16
    with pytest.raises(ValueError, match="dropout probability"):
        Dropout(1.0)


def test_training_attention_drops_weights_with_the_same_mask():
    # CPU training attention with dropout: softmax(QKᵀ/√d + M) with the weights masked and scaled
    torch.manual_seed(5)
    q, k, v = torch.randn(2, 3, 4, 8), torch.randn(2, 3, 6, 8), torch.randn(2, 3, 6, 8)
    mask = torch.zeros(2, 1, 1, 6)
    mask[0, ..., 4:] = float("-inf")
    torch.manual_seed(6)
    out = scaled_dot_product_attention(q, k, v, mask=mask, dropout_p=0.3).out
    torch.manual_seed(6)
    keep = keep_mask((2, 3, 4, 6), 0.3)
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8) + mask, -1)
    torch.testing.assert_close(out, (w * keep / 0.7) @ v, rtol=1e-5, atol=1e-6)
    # without dropout the fused kernel runs and matches the same formula
    torch.testing.assert_close(scaled_dot_product_attention(q, k, v, mask=mask).out,
                               F.scaled_dot_product_attention(q, k, v, attn_mask=mask), rtol=1e-5, atol=1e-6)


def test_model_uses_it_in_training_only():
    cfg = ModelConfig(kind="decoder-only", vocab_size=50, d_model=32, n_heads=4, n_decoder_layers=1, d_ff=64,
                      dropout=0.3, max_len=16)
    model = Transformer(cfg)
    assert sum(isinstance(m, Dropout) for m in model.modules()) == 3  # embeddings, two residuals
    ids = torch.randint(1, 50, (2, 10))
    model.train()
    torch.manual_seed(7)
    a = model(ids).logits
    torch.manual_seed(7)
    assert torch.equal(model(ids).logits, a)
    b = model(ids).logits
    assert not torch.allclose(a, b)
    model.eval()
    assert torch.equal(model(ids).logits, model(ids).logits)
