"""core.probes.positions, .masking and .layers: exact checks behind the Positional encoding, Masking and Layer outputs
pages."""
from __future__ import annotations

import threading

import pytest
import torch

from core import ModelConfig, Transformer
from reference_decoding import greedy_uncached
from core.probes import layers, masking, positions
from core.io import registry
from core.inference.decoding import Incremental
from core.inference.runner import forward_ids
from core.masks import additive, causal_mask, combine, window_mask
from core.positional import sinusoidal

KINDS = ("encoder-decoder", "decoder-only", "encoder-only")


def tiny(kind="encoder-decoder", seed=0, **kw) -> Transformer:
    base = dict(kind=kind, vocab_size=23, d_model=16, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=32,
                max_len=32, dropout=0.0)
    base.update(kw)
    torch.manual_seed(seed)
    return Transformer(ModelConfig(**base)).eval()


SRC = [5, 9, 7, 11, 6, 3]
TGT = [2, 8, 12, 14, 10]


def logits(model, src=SRC, tgt=TGT):
    return forward_ids(model, src, tgt).logits


# --------------------------------------------------------------------- positions
@pytest.mark.parametrize("n, d, k, base", [(64, 64, 3, 10000.0), (256, 512, 100, 10000.0), (50, 8, 49, 10.0),
                                           (128, 32, 0, 1e6)])
def test_shift_is_a_rotation(n, d, k, base):
    sc = positions.shift_check(n, d, k, base)
    assert sc["rotated"].shape == sc["direct"].shape == (n - k, d)
    assert sc["max_error"] < 1e-5
    torch.testing.assert_close(sc["direct"], sinusoidal(n, d, base)[k:])


def test_shift_rejects_out_of_range():
    with pytest.raises(ValueError, match="shift"):
        positions.shift_check(10, 8, 10)


def test_sinusoidal_similarity_depends_on_offset_only():
    pe = sinusoidal(80, 64)
    assert positions.offset_spread(positions.position_similarity(pe, "cosine")) < 1e-5
    dot = positions.position_similarity(pe, "dot")
    assert positions.offset_spread(dot) < 1e-4 * 32  # |PE·PE| ≤ d/2 = 32
    curves = positions.by_offset(dot, [0, 10, 40])
    assert {len(v) for v in curves.values()} == {40}
    torch.testing.assert_close(curves[0], curves[40], atol=1e-4, rtol=0)
    # a random table does not have that property
    assert positions.offset_spread(positions.position_similarity(torch.randn(80, 64), "cosine")) > 0.1
    causal_alibi = positions.alibi_matrix(4, 9, 1, causal=True)  # −∞ above the diagonal, as the Positional page reads it
    assert positions.offset_spread(causal_alibi.nan_to_num(neginf=-1e9)) == 0.0
    broken = causal_alibi.clone()
    broken[5, 2] += 0.25
    assert positions.offset_spread(broken.nan_to_num(neginf=-1e9)) == pytest.approx(0.25)


def test_rope_scores_depend_on_offset_only():
    s = positions.rope_scores(16, 40, seed=3)
    assert s.shape == (40, 40)
    assert positions.offset_spread(s) < 1e-4
    assert not torch.allclose(s[0, 0], s[0, 5])


def test_alibi_matrix():
    m = positions.alibi_matrix(4, 5, 0)
    assert m[2, 2] == 0 and m[0, 3] == m[3, 0] < 0
    c = positions.alibi_matrix(4, 5, 0, causal=True)
    assert torch.isinf(c[0, 3]) and c[3, 0] == m[3, 0]


def test_positional_kinds_reads_bundled_configs():
    kinds = positions.positional_kinds()
    assert set(kinds) == set(registry.bundled())
    assert all(k in ("sinusoidal", "learned", "rope", "alibi", "none") for k in kinds.values())


@pytest.mark.parametrize("kind", KINDS)
def test_embedding_parts_add_up(kind):
    model = tiny(kind)
    tr = forward_ids(model, SRC, TGT).trace
    stack = "decoder" if kind == "decoder-only" else "encoder"
    parts = positions.embedding_parts(tr, stack)
    torch.testing.assert_close(parts["sum"], parts["tokens"] + parts["positions"])
    assert parts["other"] < 1e-6 and parts["norms"]["sum"].shape == (len(SRC),)
    assert positions.embedding_parts(forward_ids(tiny(kind, pos_encoding="rope"), SRC, TGT).trace, stack)["positions"] is None


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("pos", ["sinusoidal", "learned", "rope", "alibi"])
def test_permutation_equivariance_without_positions(kind, pos):
    model = tiny(kind, pos_encoding=pos)
    if pos == "learned":  # the default init is tiny (std 0.02); make the positions matter
        torch.nn.init.normal_(model.embed.positions.weight, std=1.0)
    perm = positions.shuffle_order(len(SRC), seed=1)
    assert sorted(perm) == list(range(len(SRC))) and perm != list(range(len(SRC)))
    out = positions.permutation_test(model, SRC, perm)
    assert out["without"]["max_diff"] < 1e-5
    assert out["with"]["max_diff"] > 1e-3
    assert out["terms"]


def test_permutation_without_any_positional_information():
    out = positions.permutation_test(tiny("encoder-only", pos_encoding="none"), SRC, positions.shuffle_order(len(SRC)))
    assert out["terms"] == []
    assert out["with"]["max_diff"] < 1e-5  # nothing positional, nothing to break equivariance


# --------------------------------------------------------------------- masks
def test_apply_mask_gives_exact_zeros_and_unit_rows():
    torch.manual_seed(0)
    scores = torch.randn(6, 6) * 5
    m = masking.apply_mask(scores, causal_mask(6), extra=window_mask(6, 2))
    assert m["masked_max"] == 0.0
    assert bool((m["weights"][~m["allowed"]] == 0).all())
    assert (m["row_sums"] - 1).abs().max() < 1e-6
    assert m["empty_rows"] == []
    assert m["row_masked_max"][0] == 0.0 and m["row_masked_max"][5] == 0.0
    # the allowed pattern is causal AND within the window
    assert m["allowed"].tolist() == [[0 <= i - j < 2 for j in range(6)] for i in range(6)]


def test_apply_mask_reports_fully_masked_rows():
    allowed = torch.ones(4, 4, dtype=torch.bool)
    allowed[2] = False
    m = masking.apply_mask(torch.randn(4, 4), additive(allowed))
    assert m["empty_rows"] == [2]
    assert torch.isnan(m["weights"][2]).all() and m["row_masked_max"][2] is None
    assert (m["row_sums"][[0, 1, 3]] - 1).abs().max() < 1e-6


def test_additive_and_allowed_round_trip():
    allowed = torch.rand(5, 5) > 0.5
    add = additive(allowed)
    assert set(add[allowed].tolist()) <= {0.0} and bool(torch.isneginf(add[~allowed]).all())
    assert torch.equal(masking.allowed_of(add, 5, 5), allowed)
    assert masking.allowed_of(None, 2, 3).all()


@pytest.mark.parametrize("kind", KINDS)
def test_padding_demo(kind):
    model = tiny(kind)
    out = masking.padding_demo(model, SRC, SRC[:3])
    assert out["ids"][1] == SRC[:3] + [0, 0, 0]
    assert out["mask"].shape == (2, 1, 1, len(SRC)) and out["square"].shape == (2, len(SRC), len(SRC))
    assert out["pad_weight"] == 0.0
    assert out["max_diff"] < 1e-5


@pytest.mark.parametrize("kind", KINDS)
def test_extra_mask_all_zero_changes_nothing(kind):
    model = tiny(kind)
    stack = "decoder" if kind == "decoder-only" else "encoder"
    names = [f"{stack}.{i}.self_attn" for i in range(2)]
    zero = torch.zeros(len(SRC), len(SRC))
    patched = masking.run_patched(model, SRC, TGT, masks={n: zero for n in names})
    torch.testing.assert_close(patched.logits, logits(model), rtol=0, atol=0)


@pytest.mark.parametrize("kind", KINDS)
def test_extra_mask_changes_output_and_is_traced(kind):
    model = tiny(kind)
    stack = "decoder" if kind == "decoder-only" else "encoder"
    name = f"{stack}.0.self_attn"
    allowed = torch.ones(len(SRC), len(SRC), dtype=torch.bool)
    allowed[:, 1] = False
    allowed[1, 1] = True
    out = masking.run_patched(model, SRC, TGT, masks={name: additive(allowed)})
    assert (out.logits - logits(model)).abs().max() > 1e-4
    w = out.trace[f"{name}.weights"][0]
    assert bool((w[:, torch.arange(len(SRC)) != 1][:, :, 1] == 0).all())
    assert (w.sum(-1) - 1).abs().max() < 1e-5
    # the hooks are gone afterwards
    torch.testing.assert_close(logits(model), forward_ids(model, SRC, TGT).logits, rtol=0, atol=0)


def test_extra_mask_follows_cached_decoding():
    model = tiny("decoder-only")
    ids = torch.tensor([SRC])
    extra = {f"decoder.{i}.self_attn": window_mask(len(SRC), 2) for i in range(2)}
    with masking.patched(model, masks=extra):
        full = model(ids).logits[0]
        inc = Incremental(model)
        steps = torch.stack([inc.feed(ids[:, i:i + 1])[0] for i in range(len(SRC))])
    torch.testing.assert_close(steps, full, atol=1e-5, rtol=1e-5)
    assert (full - model(ids).logits[0]).abs().max() > 1e-4


def test_patch_only_affects_the_calling_thread():
    model = tiny("encoder-only")
    clean = logits(model)
    seen = {}
    with masking.patched(model, masks={"encoder.0.self_attn": window_mask(len(SRC), 1)}):
        worker = threading.Thread(target=lambda: seen.setdefault("x", logits(model)))
        worker.start()
        worker.join()
        mine = logits(model)
    # another thread may reduce in another order (its own intra-op pool): equal up to float rounding,
    # while the patch itself moves the logits by far more
    torch.testing.assert_close(seen["x"], clean, rtol=0, atol=1e-5)
    assert (mine - clean).abs().max() > 1e-3


def test_patch_rejects_unknown_and_cross_names():
    model = tiny()
    with pytest.raises(ValueError, match="no attention"):
        with masking.patched(model, masks={"encoder.9.self_attn": torch.zeros(2, 2)}):
            pass
    with pytest.raises(ValueError, match="self-attention only"):
        with masking.patched(model, uncausal=["decoder.0.cross_attn"]):
            pass


@pytest.mark.parametrize("kind", KINDS)
def test_heads_off_matches_model_ablation(kind):
    model = tiny(kind)
    ablate = {model.attention_names()[0]: [1, 3], model.attention_names()[-1]: [0]}
    mine = masking.run_patched(model, SRC, TGT, heads_off=ablate).logits
    src = torch.tensor([SRC])
    theirs = model(src, torch.tensor([TGT]), ablate=ablate).logits if kind == "encoder-decoder" else \
        model(src, ablate=ablate).logits
    torch.testing.assert_close(mine, theirs, atol=1e-6, rtol=0)
    assert (mine - logits(model)).abs().max() > 1e-5


def test_translate_ablated_is_greedy_decoding_with_those_heads_off_everywhere():
    model = tiny()
    some = {model.attention_names()[0]: [1, 3], "decoder.1.cross_attn": [0, 2]}
    every = {n: [0, 1, 2, 3] for n in model.attention_names()}
    results = [masking.translate_ablated(model, SRC, off) for off in ({}, some, every)]
    for off, got in zip(({}, some, every), results):
        # the cached decoder with heads off = one full forward per token with model(ablate=...)
        assert got == greedy_uncached(model, SRC, len(got), ablate=off)
    assert len({tuple(r) for r in results}) > 1  # switching heads off changed the translation


@pytest.mark.parametrize("kind", ["encoder-decoder", "decoder-only"])
def test_cheat_demo(kind):
    model = tiny(kind)
    cd = masking.cheat_demo(model, SRC, TGT)
    assert cd["normal"]["future_mass"].abs().max() == 0.0
    assert cd["cheat"]["future_mass"].max() > 0.01
    dec_in = TGT if kind == "encoder-decoder" else SRC
    assert cd["next_ids"].tolist() == dec_in[1:]
    torch.testing.assert_close(cd["normal"]["logits"], logits(model)[0])
    assert (cd["cheat"]["logits"] - cd["normal"]["logits"]).abs().max() > 1e-4
    # with one layer the last position has no future to read: identical in both runs
    one = masking.cheat_demo(tiny(kind, n_decoder_layers=1), SRC, TGT)
    torch.testing.assert_close(one["cheat"]["logits"][-1], one["normal"]["logits"][-1], atol=1e-5, rtol=0)


def test_window_and_causal_combined_for_a_page():
    w = combine(window_mask(5, 2), causal_mask(5), batched=False)
    assert w.shape == (5, 5)
    assert torch.isfinite(w).tolist() == [[0 <= i - j < 2 for j in range(5)] for i in range(5)]
    assert combine(window_mask(5, 2), causal_mask(5)).shape == (1, 1, 5, 5)  # what scores broadcast against


# --------------------------------------------------------------------- layers
def test_pca_shape_and_variance():
    torch.manual_seed(0)
    x = torch.randn(30, 8) @ torch.diag(torch.tensor([5.0, 3, 1, 1, 1, 1, 1, 1]))
    coords, share = layers.pca_2d(x)
    assert coords.shape == (30, 2) and share.shape == (2,)
    assert 0 < float(share.sum()) <= 1 and share[0] >= share[1]
    xc = x - x.mean(0)
    total = float((xc ** 2).sum())
    torch.testing.assert_close(coords.pow(2).sum(0) / total, share, atol=1e-5, rtol=0)
    one, s1 = layers.pca_2d(torch.randn(1, 8))  # a single vector: all zeros, no division by zero
    assert one.shape == (1, 2) and torch.isfinite(s1).all()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("norm", ["post", "pre"])
def test_logit_lens_last_stage_is_the_model(kind, norm):
    model = tiny(kind, norm=norm)
    tr = forward_ids(model, SRC, TGT).trace
    t = len(TGT) if kind == "encoder-decoder" else len(SRC)
    for position in (0, t - 1):
        lens = layers.logit_lens(model, tr, position, k=3)
        stack = layers.output_stack(model)
        assert [r["stage"] for r in lens] == [s for s, _ in layers.residual_stages(tr, stack)]
        torch.testing.assert_close(lens[-1]["logits"], tr.logits[0, position], atol=1e-5, rtol=0)
        assert lens[-1]["p_final"] == pytest.approx(float(lens[-1]["probs"][0]))


@pytest.mark.parametrize("kind", KINDS)
def test_residual_stages_and_sublayers(kind):
    model = tiny(kind)
    tr = forward_ids(model, SRC, TGT).trace
    stack = "decoder" if kind != "encoder-only" else "encoder"
    stages = layers.residual_stages(tr, stack)
    per_layer = 3 if kind == "encoder-decoder" else 2
    assert len(stages) == 1 + 2 * per_layer and layers.n_layers(tr, stack) == 2
    t = stages[0][1].shape[0]
    assert layers.stage_norms(stages).shape == (len(stages), t)
    sn = layers.sublayer_norms(tr, stack)
    parts = {"attn", "cross", "ffn"} if kind == "encoder-decoder" else {"attn", "ffn"}
    assert set(sn["absolute"]) == parts and all(v.shape == (2, t) for v in sn["relative"].values())
    torch.testing.assert_close(sn["absolute"]["ffn"][1], tr[f"{stack}.1.ffn_out"][0].norm(dim=-1))
    summary = layers.sublayer_summary(tr, stack, token=None)
    assert all(v.shape == (2,) for v in summary.values())
    coords, share = layers.stream_pca(stages)
    assert coords.shape == (len(stages), t, 2)


def test_top_neurons():
    act = torch.zeros(3, 10)
    act[1, 7], act[2, 4], act[0, 2] = 5.0, 3.0, 1.0
    idx, peak, cols, where = layers.top_neurons(act, 3)
    assert idx.tolist() == [7, 4, 2] and peak.tolist() == [5.0, 3.0, 1.0]
    assert cols.shape == (3, 3) and where.tolist() == [1, 2, 0]


def test_compare_distributions():
    a = torch.tensor([2.0, 1.0, 0.0, -1.0])
    same = layers.compare_distributions(a, a, k=2)
    assert same["tv"] == 0.0 and same["ids"] == [0, 1]
    other = layers.compare_distributions(a, a.flip(0), k=1)
    assert other["ids"] == [0, 3] and other["tv"] > 0.3 and other["top_b"] == 3


def test_source_ids_match_runner():
    from core.io import checkpoint
    from core.inference.runner import run
    name = registry.bundled()[0]
    ck = checkpoint.load(registry.resolve(name))
    text = "3 1 4 1 5"
    assert masking.source_ids(ck.tokenizer, ck.model.cfg, text) == run(ck, text).src_ids


def test_softmax_sharpness_against_autograd_and_torch_distributions():
    from core.probes.analysis import softmax_sharpness
    scores = torch.tensor([[2.0, -1.0, 0.5, float("-inf")], [30.0, 0.0, -4.0, 1.0]], dtype=torch.float64)
    got = softmax_sharpness(scores)
    for r in range(2):
        jac = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, -1), scores[r])
        assert torch.allclose(got["grad_norm"][r], jac.norm(), atol=1e-12)
        probs = torch.softmax(scores[r], -1)
        assert torch.allclose(got["entropy"][r], torch.distributions.Categorical(probs=probs).entropy(), atol=1e-12)
    assert got["weights"][0, 3] == 0 and torch.allclose(got["weights"].sum(-1), torch.ones(2, dtype=torch.float64))
    assert got["max_weight"][1] > 0.999999 and got["grad_norm"][1] < 1e-5  # saturated: no gradient left


def test_the_dot_products_have_variance_d_k_and_the_scaled_ones_1():
    """Vaswani et al. 2017, footnote 4: with independent unit-variance components, Var(q·k) = d_k; q·k/√d_k has
    variance 1, so the softmax does not saturate as the heads widen (measured on 4,096 samples each)."""
    from core.probes.analysis import scaling_experiment
    d_ks = [4, 64, 1024]
    exp = scaling_experiment(d_ks, n_keys=16)
    for d_k, raw, scaled in zip(d_ks, exp["var_raw"], exp["var_scaled"]):
        assert abs(raw / d_k - 1) < 0.12 and abs(scaled - 1) < 0.12, (d_k, raw, scaled)
    assert exp["max_raw"][0] < exp["max_raw"][1] < exp["max_raw"][2] and exp["max_raw"][2] > 0.9
    assert exp["grad_raw"][2] < exp["grad_raw"][0] / 3
    assert max(exp["max_scaled"]) - min(exp["max_scaled"]) < 0.05 and max(exp["max_scaled"]) < 0.4


def test_asymmetry_of_an_attention_map():
    from core.probes.analysis import asymmetry
    sym = torch.tensor([[0.5, 0.3, 0.2], [0.3, 0.4, 0.3], [0.2, 0.3, 0.5]])
    assert asymmetry(sym)["max_diff"] == 0 and asymmetry(sym)["relative"] == 0
    one_way = torch.tensor([[1.0, 0.0], [1.0, 0.0]])  # both tokens read token 0 only
    got = asymmetry(one_way)
    assert got["pair"] == (1, 0) and got["max_diff"] == 1.0
    assert abs(got["relative"] - 1 / 3 ** 0.5) < 1e-12  # ‖[[0, −1], [1, 0]]‖ / ‖[[2, 1], [1, 0]]‖ = √2 / √6
