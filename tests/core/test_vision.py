"""The Vision Transformer (core.variants.vision): images cut into patches and back exactly, the patch embedding and the
whole forward pass recomposed by hand, [CLS]'s attention over the patches, the procedural shapes' pixels, position
embeddings as the only thing that makes patch order matter, the shipped model's accuracy re-measured, and a short
training run that learns."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from core.io import jsonio
from core.variants import vision

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "assets" / "vision"
SMALL = vision.VisionConfig(d_model=16, heads=2, layers=2, d_ff=32, steps=5, batch_size=8, eval_images=50)


@pytest.fixture(scope="module")
def shipped():
    if not (SHIPPED / vision.WEIGHTS).exists():
        pytest.skip("the shipped ViT is not in assets/vision")
    return vision.load(SHIPPED)


def test_patchify_reads_patches_row_by_row_and_unpatchify_undoes_it_exactly():
    images = torch.randn(3, 16, 16)
    patches = vision.patchify(images, 4)
    assert patches.shape == (3, 16, 16)
    # patch k is the square at grid row k // 4, column k % 4, flattened row by row
    for k in range(16):
        r, c = divmod(k, 4)
        assert torch.equal(patches[:, k], images[:, 4 * r:4 * r + 4, 4 * c:4 * c + 4].reshape(3, 16))
    assert torch.equal(vision.unpatchify(patches, 4, 16, 16), images)
    rect = torch.randn(2, 8, 12)
    assert torch.equal(vision.unpatchify(vision.patchify(rect, 2), 2, 8, 12), rect)
    with pytest.raises(ValueError):
        vision.patchify(torch.zeros(15, 16), 4)


def test_shuffle_moves_whole_patches():
    image = torch.arange(256.0).reshape(16, 16)
    order = vision.permutation(16, 3)
    assert sorted(order) == list(range(16)) and order != list(range(16))
    jig = vision.shuffle(image, 4, order)
    for k, src in enumerate(order):
        assert torch.equal(vision.patchify(jig, 4)[k], vision.patchify(image, 4)[src])
    assert torch.equal(vision.shuffle(image, 4, range(16)), image)


def test_the_patch_embedding_is_the_linear_map_of_each_flattened_patch_by_hand():
    torch.manual_seed(0)
    model = vision.VisionTransformer(SMALL).eval()
    image = torch.randn(16, 16)
    tr = model(image, trace=True).trace
    w, b = model.patch_embed.weight, model.patch_embed.bias  # [d, 16], [d]
    for k in (0, 5, 15):
        r, c = divmod(k, 4)
        pixels = [float(image[4 * r + i, 4 * c + j]) for i in range(4) for j in range(4)]
        by_hand = torch.tensor([sum(w[o, p].item() * pixels[p] for p in range(16)) + b[o].item()
                                for o in range(SMALL.d_model)])
        torch.testing.assert_close(tr["embed.tokens"][0, k + 1], by_hand, rtol=0, atol=1e-5)
    assert torch.equal(tr["embed.tokens"][0, 0], model.cls.detach())
    torch.testing.assert_close(tr["embed.out"][0], tr["embed.tokens"][0] + model.positions.detach())


def _by_hand(model: vision.VisionTransformer, images: torch.Tensor, positions: bool = True) -> torch.Tensor:
    """The ViT's logits composed from its weights with plain torch ops: pre-LN blocks of softmax attention and a
    GELU FFN, a final LayerNorm, the head on [CLS]."""
    cfg = model.cfg
    x = torch.cat([model.cls.expand(len(images), 1, -1), model.patch_embed(vision.patchify(images, cfg.patch))], 1)
    if positions:
        x = x + model.positions
    h, d = cfg.heads, cfg.d_model // cfg.heads
    for layer in model.encoder.layers:
        a = layer.attn_res.norm(x)
        q, k, v = F.linear(a, layer.self_attn.qkv.weight, layer.self_attn.qkv.bias).split(cfg.d_model, -1)
        q, k, v = (t.reshape(len(x), -1, h, d).transpose(1, 2) for t in (q, k, v))
        weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), -1)
        heads = (weights @ v).transpose(1, 2).reshape(len(x), -1, cfg.d_model)
        x = x + layer.self_attn.out(heads)
        f = layer.ffn_res.norm(x)
        x = x + layer.ffn.w2(F.gelu(layer.ffn.w1(f)))
    return model.head(model.encoder.norm(x)[:, 0])


def test_the_forward_pass_equals_one_composed_by_hand_with_and_without_positions():
    torch.manual_seed(1)
    model = vision.VisionTransformer(SMALL).eval()
    images = torch.randn(4, 16, 16)
    with torch.no_grad():
        for positions in (True, False):
            torch.testing.assert_close(model(images, positions=positions).logits, _by_hand(model, images, positions),
                                       rtol=1e-4, atol=1e-5)


def test_cls_attends_over_itself_and_exactly_the_patches(shipped):
    model, _ = shipped
    image = vision.draw("ring", 5.0, 9.0, 4.0, noise=0.2, seed=1)
    tr = model(image, trace=True).trace
    for layer in range(model.cfg.layers):
        w = tr[f"encoder.{layer}.self_attn.weights"]
        assert w.shape == (1, model.cfg.heads, 17, 17)
        torch.testing.assert_close(w.sum(-1), torch.ones(1, model.cfg.heads, 17))
        for head in range(model.cfg.heads):
            grid = vision.cls_attention(tr, layer, head)
            assert grid.shape == (4, 4)
            assert torch.equal(grid.flatten(), w[0, head, 0, 1:])
            assert abs(float(grid.sum()) + float(w[0, head, 0, 0]) - 1) < 1e-5
        torch.testing.assert_close(vision.cls_attention(tr, layer), w[0, :, 0, 1:].mean(0).reshape(4, 4))
    roll = vision.rollout(tr, model.cfg.layers)
    torch.testing.assert_close(roll.sum(-1), torch.ones(17))
    assert torch.equal(vision.cls_rollout(tr, model.cfg.layers).flatten(), roll[0, 1:])


def test_the_images_are_deterministic_per_seed_and_each_shape_has_its_stated_pixels():
    a = vision.held_out(20, 7)
    b = vision.held_out(20, 7)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], vision.held_out(20, 8)[0])
    assert torch.equal(vision.draw("disk", 7, 7, 4, 0.3, seed=5), vision.draw("disk", 7, 7, 4, 0.3, seed=5))
    # each shape centred on column 8, row 7, half-size 3: rows 4 to 10 written out (worked from
    # shape_masks' rules: disk dx² + dy² ≤ 9; ring 1.4² ≤ dx² + dy² ≤ 9; triangle |dx| ≤ (dy + 3) / 2;
    # cross arm half-width 0.75)
    rows = {"square": [".....#######...."] * 7,
            "disk": ["........#.......", "......#####.....", "......#####.....", ".....#######....",
                     "......#####.....", "......#####.....", "........#......."],
            "ring": ["........#.......", "......#####.....", "......##.##.....", ".....##...##....",
                     "......##.##.....", "......#####.....", "........#......."],
            "triangle": ["........#.......", "........#.......", ".......###......", ".......###......",
                         "......#####.....", "......#####.....", ".....#######...."],
            "cross": ["........#......."] * 3 + [".....#######...."] + ["........#......."] * 3}
    for shape, want in rows.items():
        mask = vision.shape_mask(shape, 8.0, 7.0, 3.0)
        got = ["".join("#" if v else "." for v in row) for row in mask[4:11].tolist()]
        assert got == want, (shape, got)
        assert not mask[:4].any() and not mask[11:].any(), shape
        assert torch.equal(vision.draw(shape, 8.0, 7.0, 3.0), mask.float())
    with pytest.raises(ValueError):
        vision.shape_mask("star", 8, 8, 3)


def test_sampled_images_are_their_shape_plus_noise():
    images, labels = vision.held_out(30, 11)
    assert images.shape == (30, 16, 16) and set(labels.tolist()) <= set(range(len(vision.SHAPES)))
    clean, _ = vision.sample(30, torch.Generator().manual_seed(11), max_noise=0.0)
    assert set(clean.unique().tolist()) == {0.0, 1.0}
    assert (clean.sum((1, 2)) >= 9).all()  # every shape is on the image


def test_without_positions_the_model_sees_a_bag_of_patches(shipped):
    model, _ = shipped
    image = vision.draw("triangle", 6.0, 8.0, 5.0, noise=0.1, seed=2)
    jig = vision.shuffle(image, 4, vision.permutation(16, 0))
    with torch.no_grad():
        same = (model(image, positions=False).logits - model(jig, positions=False).logits).abs().max()
        moved = (model(image).logits - model(jig).logits).abs().max()
    assert float(same) < 1e-4  # the patch order changes nothing once the positions are gone
    assert float(moved) > 0.1  # with them, it does


def test_the_shipped_model_reaches_the_accuracy_its_results_state(shipped):
    model, results = shipped
    cfg = vision.config_of(results["config"])
    assert results["params"] == model.num_parameters()
    assert (SHIPPED / vision.WEIGHTS).stat().st_size < 1 << 20
    again = vision.evaluate(model, cfg.eval_images, cfg.eval_seed)  # the same held-out images, generated anew
    assert abs(again["accuracy"] - results["accuracy"]) <= 0.02, (again, results["accuracy"])
    other = vision.evaluate(model, 1000, cfg.eval_seed + 1)  # images it has never been scored on
    assert abs(other["accuracy"] - results["accuracy"]) <= 0.02, (other, results["accuracy"])
    assert results["accuracy"] >= 0.95
    assert results["command"].startswith("python -m core.variants.vision --out assets/vision")
    assert 0 < results["seconds"] < 120


def test_a_short_training_run_lowers_the_loss(tmp_path):
    cfg = vision.VisionConfig(d_model=32, heads=4, layers=2, d_ff=64, steps=150, batch_size=32, warmup=20,
                              eval_images=200)
    model, result = vision.run(cfg, str(tmp_path))
    losses = result["losses"]  # every 10th step
    assert sum(losses[-3:]) / 3 < 0.6 * sum(losses[:2]) / 2, losses
    assert result["accuracy"] > 0.5  # chance is 0.2
    loaded, saved = vision.load(tmp_path)
    assert saved == jsonio.loads((tmp_path / vision.RESULTS).read_text())
    images, _ = vision.held_out(8, 0)
    with torch.no_grad():
        assert torch.equal(loaded(images).logits, model(images).logits)


def test_the_command_line_refuses_a_bad_patch_size(tmp_path, capsys):
    assert vision.main(["--out", str(tmp_path), "--patch", "5"]) == 2
    assert capsys.readouterr().err.startswith("error: patch 5 does not divide")
    assert not any(tmp_path.iterdir())
