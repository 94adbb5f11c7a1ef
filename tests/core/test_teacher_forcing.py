"""Teacher forcing on the Masking page (core.probes.masking): the decoder input is the target shifted right, one
causal pass gives what n step-by-step passes give, and a mask that also hides the diagonal leaves row 0 empty."""
from __future__ import annotations

import pytest
import torch

from core.inference.runner import forward_ids
from core.io.tokenizer import BOS
from core.masks import causal_mask
from core.probes import masking

from test_probes_pages import SRC, tiny  # the probe tests' tiny models (this folder is on sys.path)

pytestmark = pytest.mark.usefixtures("one_thread")
TARGET = [8, 12, 14, 10, 9, 3]  # y1 … yn (3 = EOS)


def test_the_decoder_input_is_the_target_shifted_right():
    assert masking.shifted_input(TARGET) == [BOS, 8, 12, 14, 10, 9]
    assert masking.shifted_input([3]) == [BOS]


@pytest.mark.parametrize("kind, extra", [("encoder-decoder", {}), ("decoder-only", {}),
                                         ("encoder-decoder", {"pos_encoding": "rope"}),
                                         ("decoder-only", {"pos_encoding": "alibi"})])
def test_one_causal_pass_equals_prefix_by_prefix_and_the_kv_cache(kind, extra):
    model = tiny(kind, **extra)
    src = SRC if kind == "encoder-decoder" else None
    out = masking.parallel_vs_sequential(model, src, TARGET)
    dec_in = [BOS] + TARGET[:-1]
    assert out["dec_in"] == dec_in and out["parallel"].shape == (len(TARGET), 23)
    # each prefix run here, independently, through the traced path: row t of the one pass is its last row
    for t in range(1, len(dec_in) + 1):
        alone = forward_ids(model, src, dec_in[:t]) if src else forward_ids(model, dec_in[:t])
        torch.testing.assert_close(out["parallel"][t - 1], alone.logits[0, -1].float(), atol=1e-5, rtol=0)
    assert out["max_diff_prefix"] < 1e-5 and out["max_diff_cached"] < 1e-5
    torch.testing.assert_close(out["prefix"], out["parallel"], atol=1e-5, rtol=0)
    assert set(out["seconds"]) == {"parallel", "prefix", "cached"}
    short = masking.parallel_vs_sequential(model, src, TARGET, limit=3)
    torch.testing.assert_close(short["parallel"], out["parallel"][:3], atol=1e-5, rtol=0)


def test_torch_transformer_decoder_one_pass_equals_prefix_passes():
    """The same property in an independent implementation: a random ``torch.nn.TransformerDecoder`` under
    ``generate_square_subsequent_mask`` gives, at every position, what a pass over that prefix alone gives; without
    the mask it does not."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerDecoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
    dec = torch.nn.TransformerDecoder(layer, 2).eval()
    tgt, memory = torch.randn(1, 7, 32), torch.randn(1, 5, 32)
    square = torch.nn.Transformer.generate_square_subsequent_mask
    with torch.no_grad():
        one = dec(tgt, memory, tgt_mask=square(7))
        prefix = torch.cat([dec(tgt[:, :t], memory, tgt_mask=square(t))[:, -1:] for t in range(1, 8)], 1)
        unmasked = dec(tgt, memory)
    torch.testing.assert_close(one, prefix, atol=1e-5, rtol=0)
    assert float((unmasked - prefix)[:, :-1].abs().max()) > 1e-2  # the last position sees everything either way
    torch.testing.assert_close(square(7), causal_mask(7))  # our causal mask is that mask


def test_a_mask_that_hides_the_diagonal_leaves_row_zero_empty_and_nan():
    t = 5
    strict = masking.strict_causal_mask(t)
    assert torch.isinf(strict[0]).all() and bool((strict[1:, 0] == 0).all())
    torch.testing.assert_close(strict, causal_mask(t) + torch.diag(torch.full((t,), float("-inf"))))
    torch.manual_seed(0)
    scores = torch.randn(t, t)
    w = torch.softmax(scores + strict, -1)
    assert torch.isnan(w[0]).all() and not torch.isnan(w[1:]).any()
    torch.testing.assert_close(w[1:].sum(-1), torch.ones(t - 1))
    assert masking.apply_mask(scores, strict)["empty_rows"] == [0]
    # the same in torch.nn.MultiheadAttention's softmax path (need_weights): row 0 is NaN, the others are numbers
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x = torch.randn(1, t, 8)
    with torch.no_grad():
        y, weights = mha(x, x, x, attn_mask=strict, need_weights=True)
    assert torch.isnan(weights[0, 0]).all() and not torch.isnan(weights[0, 1:]).any()
    assert torch.isnan(y[0, 0]).all() and not torch.isnan(y[0, 1:]).any()


@pytest.mark.parametrize("kind", ["encoder-decoder", "decoder-only"])
def test_the_strict_mask_on_a_model_gives_nan_weights_in_row_zero(kind):
    model = tiny(kind)
    out = masking.strict_demo(model, SRC if kind == "encoder-decoder" else None, TARGET)
    assert out["row0"].shape == (4, len(TARGET)) and torch.isnan(out["row0"]).all()
    assert out["n"] == len(TARGET) and 0 <= out["hits_strict"] <= out["n"] and 0 <= out["hits"] <= out["n"]
    assert len(out["nan_positions"]) == len(TARGET)
    # the fused kernel's row 0 is reported as it is: NaN, or the zeros recent PyTorch returns there
    assert out["kernel_nan"] or out["kernel_row0"] == 0.0
