"""Activation patching (core.probes.patch) and attributions (core.probes.attribution) against independent recomputations:
every head from B gives B's decision, the residual stream at the decision position gives B's decision,
one patched head recomputed by hand from the trace and the weights, value-weighted attention by hand, and
gradient × input against finite differences. Runs on a bundled translator (the tiny ones when present)."""
from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

from core.hooks import all_heads
from core.probes import coref, patch, patch_board
from core.io import registry
from core.probes.attribution import gradient_x_input, value_norms, value_weighted

pytestmark = pytest.mark.usefixtures("one_thread")


def translator(lang: str) -> str:
    """The bundled translator to test the mechanism on: ``en-fr-tiny`` when it exists, else ``en-fr``."""
    names = registry.bundled()
    return next(n for n in (f"en-{lang}-tiny", f"en-{lang}") if n in names)


@pytest.fixture(scope="module", params=["fr", "de"])
def ck(request):
    return registry.load(translator(request.param))


@pytest.fixture(scope="module")
def pair(ck):
    return patch.probe_set(ck)[0]


@pytest.fixture(scope="module")
def clean(ck, pair):
    return patch.clean(ck, *pair)


def test_the_seed_pair_is_set_up_at_the_pronoun(ck, pair, clean):
    s = clean.setup
    assert s.dec_a == s.dec_b  # the references agree up to the pronoun
    tok = ck.tokenizer
    assert tok.display([s.tok_a])[0].lstrip("▁") == pair[0].tgt_pronoun
    assert tok.display([s.tok_b])[0].lstrip("▁") == pair[1].tgt_pronoun
    assert clean.right and clean.ld_a > 0 > clean.ld_b
    # the decision really is the log-probability difference at that position
    with torch.no_grad():
        out = ck.model(torch.tensor([s.src_a]), torch.tensor([s.dec_a])).logits[0, -1].log_softmax(-1)
    assert float(out[s.tok_a] - out[s.tok_b]) == pytest.approx(clean.ld_a, abs=1e-4)


def test_patching_every_head_reproduces_the_other_sentence(ck, clean):
    model = ck.model
    everything = patch._selection(model, [all_heads(model)])
    ab = patch.patched_ld(model, clean.setup, True, clean.b, heads=everything)
    ba = patch.patched_ld(model, clean.setup, False, clean.a, heads=everything)
    assert float(ab[0]) == pytest.approx(clean.ld_b, abs=1e-5)
    assert float(ba[0]) == pytest.approx(clean.ld_a, abs=1e-5)


def test_patching_a_head_from_its_own_run_changes_nothing(ck, clean):
    model = ck.model
    sel = patch._selection(model, [[u] for u in all_heads(model)])
    same = patch.patched_ld(model, clean.setup, True, clean.a, heads=sel)
    torch.testing.assert_close(same, torch.full_like(same, clean.ld_a), rtol=0, atol=1e-5)


@torch.no_grad()
def test_one_patched_head_recomputed_by_hand(ck, clean):
    """The last decoder layer's cross-attention head 1 from B, the rest of the layer rebuilt from A's trace and
    the weights: Σ heads·W_O + b, LayerNorm(resid + ·), FFN, LayerNorm, output projection."""
    model, s = ck.model, clean.setup
    last = len(model.decoder.layers) - 1
    name, head = f"decoder.{last}.cross_attn", 1
    tr = model(torch.tensor([s.src_a]), torch.tensor([s.dec_a]), trace=True).trace
    layer = model.decoder.layers[last]
    heads = tr[f"{name}.heads"].clone()
    heads[:, head] = clean.b[f"{name}.heads"][:, head]
    w = layer.cross_attn.out.weight
    cross = sum(heads[0, i] @ w[:, i * heads.shape[-1]:(i + 1) * heads.shape[-1]].T for i in range(heads.shape[1]))
    cross = cross + layer.cross_attn.out.bias
    assert layer.cross_res.pre is False  # the bundled translators are post-LN
    x = layer.cross_res.norm(tr[f"decoder.{last}.resid_mid"][0] + cross)
    f = layer.ffn.w2(F.relu(layer.ffn.w1(x)))
    x = layer.ffn_res.norm(x + f)
    if model.decoder.norm is not None:
        x = model.decoder.norm(x)
    z = model.lm_head(x)[-1]
    by_hand = float(z[s.tok_a] - z[s.tok_b])
    sel = patch._selection(model, [[(name, head)]])
    assert float(patch.patched_ld(model, s, True, clean.b, heads=sel)[0]) == pytest.approx(by_hand, abs=1e-4)
    # and the sweep's row for that head is the same number
    sweep = patch.head_sweep(model, clean)
    row = all_heads(model).index((name, head))
    assert float(sweep["ld_ab"][row]) == pytest.approx(by_hand, abs=1e-4)


def test_head_effects_report(ck, pair):
    res = patch.head_effects(ck, *pair)
    n_attn, n_heads = len(ck.model.attention_names()), ck.model.cfg.n_heads
    assert res["effect"].shape == (n_attn, n_heads) and len(res["ranked"]) == n_attn * n_heads
    effects = [r["effect"] for r in res["ranked"]]
    assert effects == sorted(effects, reverse=True)
    assert res["aligned"]  # the seed pair differs in one word: every position has its twin
    assert res["carry"][-1].item() == pytest.approx(1.0, abs=1e-4)  # every head together: all of the effect
    assert res["k"] is not None and res["carry"][res["k"] - 1] >= 0.5 > (res["carry"][res["k"] - 2] if res["k"] > 1 else -1)
    # the mean of both directions, each normalised by its own total effect
    torch.testing.assert_close(res["effect"], (res["effect_ab"] + res["effect_ba"]) / 2)
    torch.testing.assert_close(res["effect_ab"], res["ie_ab"] / res["total"])
    # encoder heads of layer 0 see only the sentence: no head of a decoder stack acts before the source differs,
    # but the decoder's self-attention in layer 0 reads identical prefixes → exactly no effect
    r0 = res["names"].index("decoder.0.self_attn")
    assert res["effect"][r0].abs().max() < 1e-5


def test_residual_stream_at_the_cue_and_at_the_decision(ck, pair):
    res = patch.stream_effects(ck, *pair)
    enc, dec = res["encoder"], res["decoder"]
    toks = enc["tokens"]
    s = patch.prepare(ck, *pair)
    cue = next(i for i, (x, y) in enumerate(zip(s.src_tokens_a, s.src_tokens_b)) if x != y)
    # the embedding of the one differing word carries everything (the rest of the input is the same)
    assert float(enc["effect"][0, cue]) == pytest.approx(1.0, abs=1e-4)
    assert float(enc["effect"][0, :cue].abs().max()) < 1e-5
    # the decoder's last stage at the decision position is the decision
    assert float(dec["effect"][-1, -1]) == pytest.approx(1.0, abs=1e-4)
    assert len(toks) == enc["effect"].shape[1]


@torch.no_grad()
def test_value_weighted_by_hand(ck, clean):
    model, s = ck.model, clean.setup
    tr = model(torch.tensor([s.src_a]), torch.tensor([s.dec_a]), trace=True).trace
    kind, layer = "cross", len(model.decoder.layers) - 1
    vw = value_weighted(model, tr, kind, layer)
    name = f"decoder.{layer}.cross_attn"
    mha = model.decoder.layers[layer].cross_attn
    alpha, v = tr[f"{name}.weights"][0], tr[f"{name}.v"][0]
    d = mha.d_head
    for h in (0, mha.n_heads - 1):
        w_o = mha.head_weights(h)["W_O"]  # [d_head, d_model]
        for i in (0, alpha.shape[1] - 1):
            for j in range(alpha.shape[2]):
                want = float(torch.linalg.vector_norm(alpha[h, i, j] * (v[h, j] @ w_o)))
                assert float(vw[0, h, i, j]) == pytest.approx(want, rel=1e-4, abs=1e-6)
    assert value_norms(model, tr, name).shape == (1, mha.n_heads, len(s.src_a))
    assert d * mha.n_heads == model.cfg.d_model


def test_gradient_x_input_against_finite_differences(ck, clean):
    """Σ_j gradient × input ≈ f(x) − f(0·x) is not exact (non-linear), but the directional derivative along the
    input is: d/dε f((1+ε)x) at ε = 0 equals Σ_j g_j·x_j."""
    model, s = ck.model, clean.setup
    gxi = gradient_x_input(model, s.src_a, s.dec_a, s.tok_a, s.tok_b)
    assert gxi.shape == (len(s.src_a),)
    assert all(p.grad is None for p in model.parameters())

    @torch.no_grad()
    def f(scale):
        z = model(torch.tensor([s.src_a]), torch.tensor([s.dec_a]),
                  hooks={"encoder.embed.out": lambda t, _n: t * scale}).logits[0, -1].double()
        return float(z[s.tok_a] - z[s.tok_b])
    eps = 1e-3
    numeric = (f(1 + eps) - f(1 - eps)) / (2 * eps)
    assert float(gxi.sum()) == pytest.approx(numeric, rel=2e-2, abs=2e-3)


def test_scoreboard_and_cli(ck, capsys):
    pairs = patch.probe_set(ck)[:3]
    board = patch.scoreboard(ck, pairs)
    assert board["n"] + board["wrong"] + len(board["skipped"]) == 3
    assert board["mean_effect"].shape == (len(ck.model.attention_names()), ck.model.cfg.n_heads)
    assert 0 <= float(board["flip_share"].min()) and float(board["flip_share"].max()) <= 1
    assert board["carry"].shape == (board["mean_effect"].numel(),)
    # the mean effect is the mean of the per-pair sweeps
    one = [patch.head_effects(ck, *p)["effect"] for p in pairs]
    torch.testing.assert_close(board["mean_effect"], torch.stack(one).mean(0), rtol=0, atol=1e-5)
    a, b = pairs[0]
    assert patch_board.main(["--model", translator(coref.language(ck)), "--a", a.src, "--b", b.src]) == 0
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last["model"] == translator(coref.language(ck)) and len(last["ranked"]) == one[0].numel()


def test_pairs_that_cannot_be_patched_say_why(ck):
    a, b = patch.probe_set(ck)[0]
    with pytest.raises(ValueError, match="no decision"):
        patch.prepare(ck, a, a)
    assert patch.align(list("abcde"), list("abXde")) == ([0, 1, 2, 3, 4], [0, 1, 2, 3, 4])
    assert patch.align(list("abcde"), list("abXYde")) == ([0, 1, 3, 4], [0, 1, 4, 5])


def test_saved_scoreboard_is_tied_to_the_weights(ck, tmp_path):
    import shutil
    folder = tmp_path / "m"
    shutil.copytree(ck.path, folder)
    copy = registry.load(str(folder))
    board = patch.scoreboard(copy, patch.probe_set(copy)[:2])
    patch_board.save_scoreboard(copy, board)
    back = patch_board.saved_scoreboard(copy)
    torch.testing.assert_close(back["mean_effect"], board["mean_effect"], rtol=0, atol=1e-6)
    torch.testing.assert_close(back["carry"], board["carry"], rtol=0, atol=1e-6)
    assert back["k"] == board["k"] and back["ranked"][0]["label"] == board["ranked"][0]["label"]
    with open(folder / "model.safetensors", "ab") as f:  # other weights: the saved board no longer applies
        f.write(b"\0")
    assert patch_board.saved_scoreboard(copy) is None


def test_decision_attributions_name_the_heads(ck, pair):
    from core.probes.attribution import decision_attributions
    res = patch.head_effects(ck, *pair)
    heads = [(r["name"], r["head"]) for r in res["ranked"][:3]]
    att = decision_attributions(ck, *pair, heads)
    assert [(h["name"], h["head"]) for h in att["heads"]] == heads
    for h in att["heads"]:
        if h["weights"] is not None:
            assert float(h["weights"].sum()) == pytest.approx(1.0, abs=1e-5)
            assert float(h["value_weighted"].sum()) == pytest.approx(1.0, abs=1e-5)
            assert len(h["keys"]) == len(h["weights"])
    assert len(att["grad_x_input"]["tokens"]) == len(att["grad_x_input"]["values"])


def test_a_tiny_grammar_model_gets_the_tiny_corpus(ck):
    """The bundled small translators know only the 97-word grammar's words: their probe set is that grammar's, even
    while their task still reads ``en-fr`` / ``en-de`` (before the broad corpus's models replace them)."""
    from core.data import translation
    assert coref.corpus(ck) is translation
    assert len(patch.probe_set(ck)) == len(translation.probe_pairs(coref.language(ck)))
