"""Positional encodings: sinusoidal table and its shift property, RoPE relativity, ALiBi biases and slopes."""
from __future__ import annotations

import math

import pytest
import torch

from core import ModelConfig, Transformer
from core.masks import alibi_bias, alibi_slopes, causal_mask
from core.positional import apply_rope, frequencies, rope_cache, shift_matrix, sinusoidal


def _formula(n_pos, d, base):
    pe = torch.empty(n_pos, d, dtype=torch.float64)
    for pos in range(n_pos):
        for i in range(d // 2):
            angle = pos / base ** (2 * i / d)
            pe[pos, 2 * i] = math.sin(angle)
            pe[pos, 2 * i + 1] = math.cos(angle)
    return pe


# --------------------------------------------------------------------- sinusoidal
@pytest.mark.parametrize("base", [10000.0, 100.0, 10.0, 500000.0])
@pytest.mark.parametrize("d", [8, 32])
def test_sinusoidal_equals_formula(base, d):
    pe = sinusoidal(60, d, base)
    assert pe.shape == (60, d) and pe.dtype == torch.float32
    torch.testing.assert_close(pe.double(), _formula(60, d, base), rtol=0, atol=1e-6)


def test_sinusoidal_default_base_is_10000():
    torch.testing.assert_close(sinusoidal(20, 16).double(), _formula(20, 16, 10000.0), rtol=0, atol=1e-6)
    assert not torch.allclose(sinusoidal(20, 16), sinusoidal(20, 16, 100.0))


def test_sinusoidal_known_values():
    pe = sinusoidal(3, 4)
    # position 0: sin 0 = 0 on even dims, cos 0 = 1 on odd dims
    assert pe[0].tolist() == [0.0, 1.0, 0.0, 1.0]
    # dimension pair 0 has frequency 1: PE(1, 0) = sin(1)
    assert pe[1, 0].item() == pytest.approx(math.sin(1.0), abs=1e-7)
    # pair 1 has frequency 1/10000^(2/4) = 1/100
    assert pe[2, 2].item() == pytest.approx(math.sin(0.02), abs=1e-7)
    assert pe[2, 3].item() == pytest.approx(math.cos(0.02), abs=1e-7)


def test_sinusoidal_rejects_odd_width():
    with pytest.raises(ValueError, match="even"):
        sinusoidal(4, 7)


def test_frequencies():
    f = frequencies(8, 10000.0)
    expected = torch.tensor([1.0, 10000 ** -0.25, 10000 ** -0.5, 10000 ** -0.75], dtype=torch.float64)
    torch.testing.assert_close(f, expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize("k", [1, 2, 5, 17, 40, -3])
@pytest.mark.parametrize("base", [10000.0, 50.0])
def test_shift_matrix_moves_positions(k, base):
    d, n = 32, 100
    pe = sinusoidal(n, d, base)
    r = shift_matrix(k, d, base)
    assert r.shape == (d, d)
    src = pe[max(0, -k):n - max(0, k)]
    dst = pe[max(0, k):n + min(0, k)]
    shifted = (r @ src.T).T
    torch.testing.assert_close(shifted, dst, rtol=0, atol=1e-5)
    # a shift by a different amount does not land on the same rows
    other = (shift_matrix(k + 1, d, base) @ src.T).T
    assert not torch.allclose(other, dst, atol=1e-3)


def test_shift_matrix_is_orthogonal_and_composes():
    d = 16
    r3, r4, r7 = shift_matrix(3, d), shift_matrix(4, d), shift_matrix(7, d)
    torch.testing.assert_close(r3 @ r3.T, torch.eye(d), rtol=0, atol=1e-6)
    torch.testing.assert_close(r3 @ r4, r7, rtol=0, atol=1e-6)
    torch.testing.assert_close(shift_matrix(0, d), torch.eye(d), rtol=0, atol=0)


# --------------------------------------------------------------------- RoPE
def _rotated(x, pos, d, base=10000.0):
    cos, sin = rope_cache(pos + 1, d, base)
    return apply_rope(x, cos[pos:pos + 1], sin[pos:pos + 1])


def test_rope_dot_product_depends_only_on_offset():
    torch.manual_seed(0)
    d = 16
    q, k = torch.randn(1, d), torch.randn(1, d)

    def dot(m, n):
        return (_rotated(q, m, d) * _rotated(k, n, d)).sum().item()

    for offset in (0, 1, 3, -2, 7):
        pairs = [(m, m - offset) for m in (10, 25, 40, 63) if m - offset >= 0]
        values = [dot(m, n) for m, n in pairs]
        assert max(values) - min(values) < 1e-4, (offset, values)
    # different offsets give different products
    by_offset = [dot(20, 20 - o) for o in (0, 1, 2, 5, 9)]
    for a in range(len(by_offset)):
        for b in range(a + 1, len(by_offset)):
            assert abs(by_offset[a] - by_offset[b]) > 1e-3


def test_rope_preserves_norm_and_is_identity_at_zero():
    torch.manual_seed(1)
    x = torch.randn(2, 3, 5, 8)
    cos, sin = rope_cache(5, 8)
    y = apply_rope(x, cos, sin)
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1), rtol=0, atol=1e-5)
    torch.testing.assert_close(y[..., 0, :], x[..., 0, :], rtol=0, atol=0)
    assert not torch.allclose(y[..., 1:, :], x[..., 1:, :])


def test_rope_rotates_pairs_by_pos_times_frequency():
    d, pos = 8, 3
    x = torch.zeros(1, d)
    x[0, 2] = 1.0  # pair 1, first component
    y = _rotated(x, pos, d)
    angle = pos * 10000 ** (-2 / d)
    assert y[0, 2].item() == pytest.approx(math.cos(angle), abs=1e-6)
    assert y[0, 3].item() == pytest.approx(math.sin(angle), abs=1e-6)
    assert y[0, [0, 1, 4, 5, 6, 7]].abs().max().item() == 0.0


# --------------------------------------------------------------------- ALiBi
def test_alibi_slopes_eight_heads():
    assert alibi_slopes(8).tolist() == [2.0 ** -(h + 1) for h in range(8)]


def test_alibi_slopes_power_of_two():
    assert alibi_slopes(4).tolist() == [2.0 ** -(2 * (h + 1)) for h in range(4)]
    assert alibi_slopes(16).tolist() == pytest.approx([2.0 ** -(0.5 * (h + 1)) for h in range(16)], rel=1e-6)


def _reference_slopes(n):
    """Press et al.'s reference implementation (attention_with_linear_biases)."""
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + _reference_slopes(2 * closest)[0::2][: n - closest]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 6, 7, 12])
def test_alibi_slopes_non_power_of_two(n):
    s = alibi_slopes(n).tolist()
    assert len(s) == n
    assert len(set(s)) == n  # all distinct
    assert all(0.0 < x < 1.0 for x in s)
    assert s == pytest.approx(_reference_slopes(n), rel=1e-6)
    # the base block (closest power of two) and the interleaved extras each decrease strictly
    closest = 1 << (n.bit_length() - 1)
    head, extra = s[:closest], s[closest:]
    assert all(a > b for a, b in zip(head, head[1:]))
    assert all(a > b for a, b in zip(extra, extra[1:]))


def test_alibi_bias_under_causal_mask_is_slope_times_j_minus_i():
    h, t = 4, 6
    bias = alibi_bias(h, t)
    assert bias.shape == (1, h, t, t)
    slopes = alibi_slopes(h)
    for head in range(h):
        for i in range(t):
            for j in range(i + 1):
                want = (slopes[head] * (j - i)).item()
                assert bias[0, head, i, j].item() == want, (head, i, j)
    # with the causal mask added, the entries above the diagonal are -inf
    full = bias + causal_mask(t)
    assert torch.isneginf(full[0, :, torch.triu_indices(t, t, 1)[0], torch.triu_indices(t, t, 1)[1]]).all()


def test_alibi_bias_with_offset_matches_full_rows():
    full = alibi_bias(4, 7)
    last = alibi_bias(4, 2, t_k=7, offset=5)
    torch.testing.assert_close(last, full[:, :, 5:], rtol=0, atol=0)


def test_alibi_bias_recorded_in_decoder_trace():
    torch.manual_seed(0)
    cfg = ModelConfig(kind="decoder-only", vocab_size=20, d_model=16, n_heads=4, n_decoder_layers=1,
                      d_ff=32, max_len=16, pos_encoding="alibi", dropout=0.0)
    model = Transformer(cfg).eval()
    ids = torch.randint(1, 20, (1, 5))
    tr = model(ids, trace=True).trace
    bias = tr["decoder.0.self_attn.bias"]
    slopes = alibi_slopes(4)
    i, j = torch.tril_indices(5, 5)
    torch.testing.assert_close(bias[0][:, i, j], slopes[:, None] * (j - i).float(), rtol=0, atol=0)
    # the scores exclude the bias; the weights include it
    scores, w = tr["decoder.0.self_attn.scores"], tr["decoder.0.self_attn.weights"]
    torch.testing.assert_close(w, torch.softmax(scores + bias + causal_mask(5), -1), rtol=0, atol=1e-6)


# --------------------------------------------------------------------- shifted reads of a whole model
def _tiny(pos_encoding, kind="decoder-only"):
    torch.manual_seed(0)
    layers = {"n_decoder_layers": 2} if kind == "decoder-only" else {"n_encoder_layers": 2, "n_decoder_layers": 0}
    cfg = ModelConfig(kind=kind, vocab_size=30, d_model=16, n_heads=4, d_ff=32, max_len=40,
                      pos_encoding=pos_encoding, dropout=0.0, **layers)
    return Transformer(cfg).eval()


@pytest.mark.parametrize("kind", ["decoder-only", "encoder-only"])
@pytest.mark.parametrize("pos,relative", [("rope", True), ("none", True), ("learned", False), ("sinusoidal", False)])
def test_a_shifted_read_changes_nothing_only_where_positions_are_relative(kind, pos, relative):
    from core.probes.positions import shift_test
    model = _tiny(pos, kind)
    with torch.no_grad():  # added positions start their learned table from small values: make them count
        if pos == "learned":
            model.embed.positions.weight.normal_(0, 1)
    ids = [3, 7, 7, 12, 5, 9, 1, 22]
    got = shift_test(model, ids, 25)
    assert got["stack"] == ("decoder" if kind == "decoder-only" else "encoder") and len(got["weights"]) == 2
    if relative:
        assert max(got["weights"]) < 1e-5 and got["output"] < 1e-5 and got["log_probs"] < 1e-4
        assert got["top"][0] == got["top"][1]
    else:
        assert max(got["weights"]) > 1e-3 and got["output"] > 1e-3


def test_an_encoder_read_from_a_later_position_adds_those_positions():
    model = _tiny("sinusoidal", "encoder-only")
    from core.trace import Trace
    tr = Trace()
    model.encode(torch.tensor([[3, 4, 5]]), start=6, trace=tr)
    torch.testing.assert_close(tr["encoder.embed.positions"], sinusoidal(40, 16)[6:9])


def test_the_shift_test_refuses_what_it_cannot_shift():
    from core.probes.positions import shift_test
    with pytest.raises(ValueError, match="positions 0–39"):
        shift_test(_tiny("rope"), [1, 2, 3], 38)
    with pytest.raises(ValueError, match="added .* rotary"):
        shift_test(_tiny("alibi"), [1, 2, 3], 2)
    with pytest.raises(ValueError, match="added and rotary"):
        _tiny("alibi", "encoder-only").encode(torch.tensor([[1, 2]]), start=3)


# --------------------------------------------------------------------- formula variants the seeds write
def _per_dimension_formula(n_pos, d, base):
    """Seed 000, appendix A, literally: dimension j uses pos / base^(2j/d), sin on even j, cos on odd j."""
    pe = torch.empty(n_pos, d, dtype=torch.float64)
    for pos in range(n_pos):
        for j in range(d):
            angle = pos / base ** (2 * j / d)
            pe[pos, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return pe


@pytest.mark.parametrize("d", [4, 16, 64])
def test_sines_then_cosines_is_a_permutation_with_the_same_dot_products(d):
    from core.positional import halves_order, sinusoidal_halves
    from core.probes.positions import layout_check
    n, base = 40, 10000.0
    ref = _formula(n, d, base)
    halves = sinusoidal_halves(n, d, base)
    order = halves_order(d)
    assert sorted(order) == list(range(d)) and order[: d // 2] == list(range(0, d, 2))
    torch.testing.assert_close(halves[:, : d // 2].double(), ref[:, 0::2], rtol=0, atol=1e-6)  # all the sines
    torch.testing.assert_close(halves[:, d // 2:].double(), ref[:, 1::2], rtol=0, atol=1e-6)  # then the cosines
    assert not torch.allclose(halves, sinusoidal(n, d, base))  # another picture …
    torch.testing.assert_close(halves.double() @ halves.double().T, ref @ ref.T, rtol=0, atol=1e-5)  # … same Gram
    check = layout_check(n, d, base)
    assert check["permutation_diff"] == 0.0 and check["gram_diff"] < 1e-5


@pytest.mark.parametrize("d,n,k", [(8, 64, 3), (64, 40, 1), (512, 64, 3)])
def test_shift_is_a_rotation_per_pair_but_not_per_dimension(d, n, k):
    from core.positional import sinusoidal_per_dimension
    from core.probes.positions import indexing_check
    base = 10000.0
    per_dim = sinusoidal_per_dimension(n, d, base)
    torch.testing.assert_close(per_dim.double(), _per_dimension_formula(n, d, base), rtol=0, atol=1e-6)
    rot = shift_matrix(k, d, base).double()
    paper = _formula(n, d, base)
    assert (paper[: n - k] @ rot.T - paper[k:]).abs().max() < 1e-5  # PE(p + k) = R_k PE(p)
    assert (per_dim.double()[: n - k] @ rot.T - per_dim.double()[k:]).abs().max() > 0.1
    check = indexing_check(n, d, k, base)
    assert check["paper"] < 1e-5 and check["paper_best"] < 1e-5  # the fit finds R_k's blocks where they exist
    assert check["per_dimension"] > 0.1 and check["per_dimension_best"] > 0.1  # no 2×2 map per pair works
    assert check["table_diff"] > 1.0


def test_wavelengths_run_from_two_pi_towards_base_times_two_pi():
    from core.positional import wavelengths
    d, base = 512, 10000.0
    lam = wavelengths(d, base)
    assert lam[0].item() == pytest.approx(2 * math.pi, rel=1e-12)
    assert lam[-1].item() == pytest.approx(2 * math.pi * base ** ((d - 2) / d), rel=1e-12)
    assert 10000 * math.pi < lam[-1].item() < 10000 * 2 * math.pi  # above seed 001's 10000·π, below the paper's bound
    torch.testing.assert_close(lam * frequencies(d, base), torch.full((d // 2,), 2 * math.pi, dtype=torch.float64))
    ratio = lam[1:] / lam[:-1]  # a geometric progression: one ratio, base^(2/d)
    torch.testing.assert_close(ratio, torch.full_like(ratio, base ** (2 / d)), rtol=1e-12, atol=0)
