"""Axial attention on the ViT's patch grid (core.variants.vision): the row and column masks, the pair counts, the
masked softmax against the layer's own attention and torch's MultiheadAttention, the row-then-column composition,
one patch's maps as the page draws them, the agreement measures, and the model run with axial layers against a
forward pass composed by hand."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from core.variants import vision

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "assets" / "vision"
SMALL = vision.VisionConfig(d_model=16, heads=2, layers=2, d_ff=32)


@pytest.fixture(scope="module")
def shipped():
    if not (SHIPPED / vision.WEIGHTS).exists():
        pytest.skip("the shipped ViT is not in assets/vision")
    model, _ = vision.load(SHIPPED)
    image = vision.draw("ring", 9.0, 6.0, 4.5, noise=0.2, seed=3)
    with torch.no_grad():
        return model, image, model(image, trace=True).trace


def small_model(seed: int = 0) -> vision.VisionTransformer:
    torch.manual_seed(seed)
    return vision.VisionTransformer(SMALL).eval()


@pytest.mark.parametrize("rows, cols", [(4, 4), (3, 5), (1, 6)])
def test_an_axial_mask_allows_exactly_the_pairs_in_one_row_or_one_column(rows, cols):
    n = rows * cols
    where = [divmod(k, cols) for k in range(n)]  # patch k at (grid row, grid column), read row by row
    row, column = vision.axial_mask(rows, cols, "row"), vision.axial_mask(rows, cols, "column")
    assert row.shape == column.shape == (n, n) and row.dtype == torch.bool
    for i in range(n):
        for j in range(n):
            assert bool(row[i, j]) == (where[i][0] == where[j][0]), (i, j)
            assert bool(column[i, j]) == (where[i][1] == where[j][1]), (i, j)
    assert torch.equal(row & column, torch.eye(n, dtype=torch.bool))  # only a patch itself is on both lines
    for axis in ("diagonal", "rows"):
        with pytest.raises(ValueError):
            vision.axial_mask(rows, cols, axis)
    with pytest.raises(ValueError):
        vision.axial_mask(0, cols, "row")


@pytest.mark.parametrize("rows, cols", [(4, 4), (3, 5), (14, 14), (8, 196)])
def test_the_pair_counts_equal_the_formula_and_the_masks(rows, cols):
    c = vision.axial_pairs(rows, cols)
    n = rows * cols
    assert c["tokens"] == n and c["full"] == n * n
    assert c["row"] == n * cols == int(vision.axial_mask(rows, cols, "row").sum())
    assert c["column"] == n * rows == int(vision.axial_mask(rows, cols, "column").sum())
    assert c["axial"] == c["row"] + c["column"] == n * (rows + cols)
    assert c["ratio"] == pytest.approx(c["full"] / c["axial"])
    if (rows, cols) == (14, 14):  # ViT-B/16 on a 224 × 224 image, worked by hand: 196² and 196 · 28
        assert (c["full"], c["axial"]) == (38416, 5488)


@pytest.mark.parametrize("which", ["small", "shipped"])
def test_with_every_key_allowed_the_masked_softmax_is_the_layers_own_attention(which, request):
    if which == "shipped":
        model, image, trace = request.getfixturevalue("shipped")
    else:
        model, image = small_model(), torch.randn(16, 16)
        with torch.no_grad():
            trace = model(image, trace=True).trace
    t = model.cfg.n_patches + 1
    for layer in range(model.cfg.layers):
        q, k, v = (trace[f"encoder.{layer}.self_attn.{x}"] for x in ("q", "k", "v"))
        weights = vision.masked_weights(q, k, torch.ones(t, t, dtype=torch.bool))
        torch.testing.assert_close(weights, trace[f"encoder.{layer}.self_attn.weights"], rtol=0, atol=1e-6)
        torch.testing.assert_close(weights @ v, trace[f"encoder.{layer}.self_attn.heads"], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError):
        vision.masked_weights(q, k, torch.zeros(t, t, dtype=torch.bool))


def test_the_row_pass_is_torch_multihead_attention_with_the_same_mask(shipped):
    """torch.nn.MultiheadAttention loaded with the layer's weights, fed the layer's normalised input (patches only),
    with the cross-row pairs masked out: the same weights and the same head outputs as the axial row pass."""
    model, _, trace = shipped
    cfg = model.cfg
    for layer in range(cfg.layers):
        block = model.encoder.layers[layer]
        before = trace["embed.out"] if layer == 0 else trace[f"encoder.{layer - 1}.resid_post"]
        x = block.attn_res.norm(before)[:, 1:]  # [1, N, d], [CLS] left out
        mha = torch.nn.MultiheadAttention(cfg.d_model, cfg.heads, batch_first=True)
        with torch.no_grad():
            mha.in_proj_weight.copy_(block.self_attn.qkv.weight)
            mha.in_proj_bias.copy_(block.self_attn.qkv.bias)
            mha.out_proj.weight.copy_(block.self_attn.out.weight)
            mha.out_proj.bias.copy_(block.self_attn.out.bias)
            for axis in vision.AXES:
                blocked = ~vision.axial_mask(cfg.grid, cfg.grid, axis)  # True: may not look
                out, want = mha(x, x, x, attn_mask=blocked, need_weights=True, average_attn_weights=False)
                q, k, v = (trace[f"encoder.{layer}.self_attn.{n}"][:, :, 1:] for n in ("q", "k", "v"))
                got = vision.axial_weights(q, k)[axis]
                torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
                heads = (got @ v).transpose(1, 2).reshape(1, cfg.n_patches, cfg.d_model)
                torch.testing.assert_close(block.self_attn.out(heads), out, rtol=1e-4, atol=1e-5)


def test_row_then_column_reaches_every_patch_in_two_steps_and_is_the_product_of_the_two_maps(shipped):
    _, _, trace = shipped
    g = 4
    torch.manual_seed(5)
    for q, k in [(torch.randn(3, 16, 8), torch.randn(3, 16, 8)),
                 (trace["encoder.1.self_attn.q"][0, :, 1:], trace["encoder.1.self_attn.k"][0, :, 1:])]:
        maps = vision.axial_weights(q, k)
        row, column, composed = maps["row"], maps["column"], maps["composed"]
        for m in (row, column, composed):
            torch.testing.assert_close(m.sum(-1), torch.ones(m.shape[:-1]))
        same_row = torch.tensor([[i // g == j // g for j in range(16)] for i in range(16)])
        same_col = torch.tensor([[i % g == j % g for j in range(16)] for i in range(16)])
        assert bool((row[..., ~same_row] == 0).all() and (row[..., same_row] > 0).all())
        assert bool((column[..., ~same_col] == 0).all() and (column[..., same_col] > 0).all())
        # one step reaches only a line; two steps (rows, then the column) reach every patch
        assert not bool((row > 0).all()) and not bool((column > 0).all())
        assert bool((composed > 0).all())
        product = torch.zeros_like(composed)
        for p in range(16):
            for j in range(16):
                product[..., p, j] = sum(column[..., p, m] * row[..., m, j] for m in range(16))
                # the one path: through the patch on j's grid row and p's grid column
                via = (j // g) * g + p % g
                torch.testing.assert_close(composed[..., p, j], column[..., p, via] * row[..., via, j])
        torch.testing.assert_close(composed, product)


def test_one_patchs_view_is_its_rows_its_column_and_their_product(shipped):
    _, _, trace = shipped
    maps = vision.axial_maps(trace, 2)
    w = trace["encoder.2.self_attn.weights"][0]
    for patch, head in [(9, None), (6, 3), (0, 1)]:
        view = vision.axial_view(maps, patch, head)
        heads = range(4) if head is None else [head]
        c = patch % 4
        full = torch.stack([w[h, 1 + patch, 1:] for h in heads]).mean(0)
        torch.testing.assert_close(view["full"].flatten(), full / full.sum())
        assert view["cls"] == pytest.approx(float(torch.stack([w[h, 1 + patch, 0] for h in heads]).mean()))
        for i in range(4):  # grid row i: the row map of the patch at (i, c), the patch p reads in step 2
            m = i * 4 + c
            torch.testing.assert_close(view["rows"][i], torch.stack([maps["row"][h, m, 4 * i:4 * i + 4]
                                                                     for h in heads]).mean(0))
        torch.testing.assert_close(view["column"][:, c], torch.stack([maps["column"][h, patch, c::4]
                                                                      for h in heads]).mean(0))
        others = [j for j in range(4) if j != c]
        assert float(view["column"].sum()) == pytest.approx(1.0) and not view["column"][:, others].any()
        if head is not None:  # one head: p's reach is its column weight times that row's map
            torch.testing.assert_close(view["composed"], view["column"][:, c:c + 1] * view["rows"])
    with pytest.raises(ValueError):
        vision.axial_view(maps, 16)


def test_agreement_is_total_variation_and_top_overlap_worked_by_hand():
    full = torch.tensor([0.5, 0.3, 0.1, 0.1])
    other = torch.tensor([0.1, 0.3, 0.5, 0.1])
    a = vision.agreement(full, other, 2)
    assert a["tv"] == pytest.approx(0.4)  # ½ (0.4 + 0 + 0.4 + 0)
    assert a["uniform_tv"] == pytest.approx(0.3)  # ½ (0.25 + 0.05 + 0.15 + 0.15)
    assert a["overlap"] == 0.5  # top 2: {0, 1} and {2, 1}
    same = vision.agreement(full, full, 2)
    assert same["tv"] == 0 and same["overlap"] == 1.0
    apart = vision.agreement(torch.tensor([1.0, 0, 0, 0]), torch.tensor([0, 0, 0, 1.0]), 1)
    assert apart["tv"] == pytest.approx(1.0) and apart["overlap"] == 0


def _axial_by_hand(model: vision.VisionTransformer, image: torch.Tensor, layers) -> torch.Tensor:
    """The ViT's logits composed from its weights with plain torch ops, the patches of each layer in ``layers`` mixing
    values row by row and then column by column (scores masked by grid coordinates), [CLS] attending to all."""
    cfg = model.cfg
    g, h, d = cfg.grid, cfg.heads, cfg.d_model // cfg.heads
    x = torch.cat([model.cls.view(1, 1, -1), model.patch_embed(vision.patchify(image[None], cfg.patch))], 1)
    x = x + model.positions
    coords = [divmod(k, g) for k in range(g * g)]
    for i, layer in enumerate(model.encoder.layers):
        a = layer.attn_res.norm(x)
        q, k, v = F.linear(a, layer.self_attn.qkv.weight, layer.self_attn.qkv.bias).split(cfg.d_model, -1)
        q, k, v = (t.reshape(1, -1, h, d).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d)
        heads = torch.softmax(scores, -1) @ v
        if i in layers:
            s = scores[:, :, 1:, 1:]
            line = {ax: torch.tensor([[coords[p][ax] == coords[j][ax] for j in range(g * g)] for p in range(g * g)])
                    for ax in (0, 1)}
            row = torch.softmax(s.masked_fill(~line[0], -1e9), -1)
            col = torch.softmax(s.masked_fill(~line[1], -1e9), -1)
            after_rows = row @ v[:, :, 1:]
            heads = torch.cat([heads[:, :, :1], col @ after_rows], 2)
        x = x + layer.self_attn.out(heads.transpose(1, 2).reshape(1, -1, cfg.d_model))
        x = x + layer.ffn.w2(F.gelu(layer.ffn.w1(layer.ffn_res.norm(x))))
    return model.head(model.encoder.norm(x)[:, 0])[0]


def test_the_model_with_axial_layers_is_a_forward_pass_composed_by_hand():
    model = small_model(2)
    image = torch.randn(16, 16)
    with torch.no_grad():
        torch.testing.assert_close(vision.axial_predict(model, image, []), vision.predict(model, image))
        for layers in ([0], [1], [0, 1]):
            want = torch.softmax(_axial_by_hand(model, image, layers), -1)
            got = vision.axial_predict(model, image, layers)
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)
            moved = float((got - vision.predict(model, image)).abs().max())
            # [CLS] keeps its full attention, and the head reads only [CLS]: the last layer's patches reach nothing
            assert moved == 0 if layers == [1] else moved > 1e-4, (layers, moved)
