"""core.probes.analysis.hopfield_updates / hopfield_energy (Ramsauer et al. 2020) against a real head's attention,
the paper's energy written out term by term, and the large-β limit; core.probes.positions.binary_check on hand
examples."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from core.inference.runner import run
from core.io import registry
from core.probes.analysis import hopfield_energy, hopfield_updates
from core.probes.positions import binary_check

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def reverse_run():
    ck = registry.load("reverse")
    return ck, run(ck, "3 1 4 1 5 9 2 6", None)


def _projected(attn, x: torch.Tensor, head: int):
    """q and k of one head from the layer's input x and its W_Q, W_K and their biases (not the trace)."""
    w = attn.head_weights(head)
    d, h = attn.d_head, attn.n_heads
    b = attn.qkv.bias
    return (F.linear(x, w["W_Q"].T, b[head * d:(head + 1) * d]),
            F.linear(x, w["W_K"].T, b[(h + head) * d:(h + head + 1) * d]))


@pytest.mark.parametrize("stack", ["encoder", "decoder"])
def test_first_update_is_the_heads_attention_row(reverse_run, stack):
    """ξ = q = x·W_Q + b_Q, K = x·W_K + b_K, β = 1/√d_k: the first softmax is the model's traced attention weights,
    for every head and query (decoder: causal mask, only the keys at or before the query are stored). A missing
    1/√d_k or a query that is not the projected one would not match (checked too)."""
    ck, res = reverse_run
    layer = getattr(ck.model, stack).layers[0]
    with torch.no_grad():
        x = res.trace[f"{stack}.embed.out"][0]  # post-norm: layer 0's attention reads the embeddings as they are
        traced = res.trace[f"{stack}.0.self_attn.weights"][0]
        t = x.shape[0]
        checked = 0
        for head in range(ck.model.cfg.n_heads):
            q, k = _projected(layer.self_attn, x, head)
            d_k = q.shape[-1]
            for i in range(t):
                visible = torch.arange(t) <= i if stack == "decoder" else torch.ones(t, dtype=torch.bool)
                if int(visible.sum()) < 2:
                    continue
                got = hopfield_updates(k, q[i], 1 / math.sqrt(d_k), 1, visible)["weights"][0]
                assert torch.allclose(got, traced[head, i].double(), atol=1e-5), (head, i)
                unscaled = hopfield_updates(k, q[i], 1.0, 1, visible)["weights"][0]
                other = hopfield_updates(k, k[i], 1 / math.sqrt(d_k), 1, visible)["weights"][0]
                assert (unscaled - traced[head, i]).abs().max() > 1e-3
                assert (other - traced[head, i]).abs().max() > 1e-3
                checked += 1
    assert checked >= 4 * (t - 1)


def test_energy_is_the_papers_formula_and_never_rises_on_random_patterns():
    g = torch.Generator().manual_seed(0)
    for n, d in ((2, 3), (12, 16), (40, 8)):
        k = torch.randn(n, d, generator=g, dtype=torch.float64) * torch.rand(n, 1, generator=g, dtype=torch.float64) * 3
        xi = torch.randn(d, generator=g, dtype=torch.float64) * 2
        for beta in (0.05, 0.3, 1.0, 8.0):
            out = hopfield_updates(k, xi, beta, steps=25)
            # E written term by term from the paper: −β⁻¹ log Σ exp(β kᵢ·ξ) + ½ ξ·ξ + β⁻¹ log N + ½ M²
            for s, state in enumerate(out["states"]):
                dots = [float(k[i] @ state) for i in range(n)]
                top = max(dots)
                lse = top + math.log(sum(math.exp(beta * (v - top)) for v in dots)) / beta
                want = (-lse + 0.5 * float(state @ state) + math.log(n) / beta
                        + 0.5 * max(float(r.norm()) for r in k) ** 2)
                assert out["energy"][s].item() == pytest.approx(want, rel=1e-9, abs=1e-9)
                if s:
                    assert torch.allclose(state, k.T @ torch.softmax(beta * (k @ out["states"][s - 1]), -1))
            rises = out["energy"][1:] - out["energy"][:-1]
            assert float(rises.max()) <= 1e-9 * (1 + float(out["energy"].abs().max())), (n, d, beta)
            assert float(out["energy"].min()) >= -1e-9  # the constants keep E ≥ 0
            for w, n90 in zip(out["weights"], out["keys_90"]):  # fewest keys whose weights reach 0.9
                ordered = sorted(w.tolist(), reverse=True)
                assert n90 == next(j + 1 for j in range(n) if sum(ordered[:j + 1]) >= 0.9 - 1e-12)


def test_energy_never_rises_on_a_real_heads_keys(reverse_run):
    ck, res = reverse_run
    for name in ("encoder.1.self_attn", "decoder.1.cross_attn"):
        q_all, k_all = res.trace[f"{name}.q"][0], res.trace[f"{name}.k"][0]
        d_k = q_all.shape[-1]
        for head in range(q_all.shape[0]):
            for m in (1, 4, 16):
                out = hopfield_updates(k_all[head], q_all[head, 0], m / math.sqrt(d_k), steps=12)
                rises = out["energy"][1:] - out["energy"][:-1]
                assert float(rises.max()) <= 1e-9 * (1 + float(out["energy"][0])), (name, head, m)
                assert float(out["energy"][-1]) < float(out["energy"][0])


def test_a_large_beta_retrieves_the_nearest_stored_key(reverse_run):
    """Keys of equal length: one update at a large β lands on the key with the largest k·ξ and stays there. A
    masked key is not stored, so the next best is retrieved."""
    g = torch.Generator().manual_seed(1)
    k = F.normalize(torch.randn(10, 6, generator=g, dtype=torch.float64), dim=-1) * 2
    for trial in range(5):
        xi = torch.randn(6, generator=g, dtype=torch.float64)
        best = int((k @ xi).argmax())
        out = hopfield_updates(k, xi, 200.0, steps=4)
        assert torch.allclose(out["states"][1], k[best], atol=1e-8) and torch.allclose(out["states"][-1], k[best])
        assert out["nearest"] == best and out["keys_90"] == [1, 1, 1, 1]
        hidden = torch.ones(10, dtype=torch.bool)
        hidden[best] = False
        second = int((k @ xi).masked_fill(~hidden, float("-inf")).argmax())
        out = hopfield_updates(k, xi, 200.0, steps=3, visible=hidden)
        assert torch.allclose(out["states"][-1], k[second], atol=1e-8) and out["weights"][:, best].max() == 0
    # a real head's keys (different lengths): the state ends on a stored key that is its own nearest key
    _, res = reverse_run
    q, keys = res.trace["encoder.1.self_attn.q"][0, 0, 2].double(), res.trace["encoder.1.self_attn.k"][0, 0].double()
    d_k = q.shape[0]
    out = hopfield_updates(keys, q, 64 / math.sqrt(d_k), steps=10)
    end = out["nearest"]
    assert torch.allclose(out["states"][-1], keys[end], atol=1e-6)
    assert int((keys @ keys[end]).argmax()) == end
    assert int(out["weights"][0].argmax()) == int((keys @ q).argmax())


def test_bad_arguments_are_refused():
    k = torch.randn(3, 2)
    with pytest.raises(ValueError, match="steps"):
        hopfield_updates(k, k[0], 1.0, steps=0)
    with pytest.raises(ValueError, match="beta"):
        hopfield_updates(k, k[0], 0.0)
    with pytest.raises(ValueError, match="masked"):
        hopfield_updates(k, k[0], 1.0, visible=torch.zeros(3, dtype=torch.bool))
    assert hopfield_energy(k, k, 1.0).shape == (3,)


def test_binary_check_on_hand_examples():
    # d_model = 2: one pair, ω = 1, λ = 2π; every bit is compared with sin(pos), below zero at 4–6 and 10–12
    bc = binary_check(2)
    assert bc["periods"] == [2, 4, 8, 16] and bc["dims"] == [0, 0, 0, 0]
    assert bc["bits"][11].tolist() == [1, 1, 0, 1] and bc["bits"][:, 3].tolist() == [0] * 8 + [1] * 8
    assert bc["signs"][:, 0].tolist() == [0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0]
    assert bc["matches"] == [6, 8, 10, 8]
    # d_model = 512, N = 10000: λ_j = 2π·10000^(j/256); 8 lies between j = 6 (7.80) and 7 (8.08), 16 near j = 26
    bc = binary_check(512, 10000.0)
    assert bc["dims"] == [0, 0, 14, 52]
    assert bc["wavelengths"][2] == pytest.approx(2 * math.pi * 10000 ** (7 / 256))
    signs = [[int(math.sin(p / 10000 ** (d / 512)) < 0) for d in bc["dims"]] for p in range(16)]
    assert bc["signs"].tolist() == signs
    assert bc["matches"] == [6, 8, 13, 15]
    assert binary_check(8, 10.0, n_positions=5)["bits"].shape == (5, 3)
    with pytest.raises(ValueError, match="even"):
        binary_check(7)
