"""AppTest: the Images-as-tokens (ViT) page, computed live from the shipped Vision Transformer on the image the
controls make: its picture, prediction and [CLS] attention are the core model's on the same image."""
import json
from pathlib import Path

import pytest
import torch

from apptest import open_page
from core.variants import vision

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "assets" / "vision"

pytestmark = [pytest.mark.usefixtures("one_thread"),
              pytest.mark.skipif(not (SHIPPED / vision.WEIGHTS).exists(), reason="no shipped ViT in assets/vision")]


def charts(at) -> dict:
    """Chart spec by its key."""
    return {el.proto.id.split("-", 2)[-1]: json.loads(el.proto.spec) for el in at.get("plotly_chart")}


def controls(at) -> dict:
    return {k: at.session_state[k] for k in ("vit_shape", "vit_size", "vit_x", "vit_y", "vit_noise", "vit_seed")}


def core_run(c: dict):
    model, _ = vision.load(SHIPPED)
    image = vision.draw(c["vit_shape"], c["vit_x"], c["vit_y"], c["vit_size"], c["vit_noise"], c["vit_seed"])
    with torch.no_grad():
        out = model(image, trace=True)
    return model, image, out


@pytest.fixture(scope="module")
def page():
    return open_page("vision.py")


def test_the_page_draws_the_image_and_the_core_models_prediction(page):
    at = page
    figs = charts(at)
    assert {"vit_image", "vit_patches", "vit_tokens", "vit_probs", "vit_cls", "vit_rollout", "vit_jigsaw",
            "vit_runs"} <= set(figs), sorted(figs)
    model, image, out = core_run(controls(at))
    torch.testing.assert_close(torch.tensor(figs["vit_image"]["data"][0]["z"]), image)
    probs = out.logits[0].softmax(-1)
    torch.testing.assert_close(torch.tensor(figs["vit_probs"]["data"][0]["y"]), probs, rtol=0, atol=1e-6)
    best = vision.SHAPES[int(probs.argmax())]
    assert any(f"It says **{best}**" in m.value for m in at.markdown), [m.value for m in at.markdown]
    # the patch tokens are the image's patches, one column each
    torch.testing.assert_close(torch.tensor(figs["vit_patches"]["data"][0]["z"]), vision.patchify(image, 4).T)


def test_the_cls_attention_on_the_image_is_the_core_trace(page):
    at = page
    at.selectbox(key="vit_layer").set_value(1)
    at.selectbox(key="vit_head").set_value(2)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    _, _, out = core_run(controls(at))
    weights = out.trace["encoder.1.self_attn.weights"][0, 2, 0, 1:].reshape(4, 4)  # [CLS]'s row over the patches
    shown = torch.tensor(charts(at)["vit_cls"]["data"][0]["z"])  # each patch's weight on its 4 × 4 pixels
    torch.testing.assert_close(shown, weights.repeat_interleave(4, 0).repeat_interleave(4, 1), rtol=0, atol=1e-6)
    roll = vision.cls_rollout(out.trace, 3)
    torch.testing.assert_close(torch.tensor(charts(at)["vit_rollout"]["data"][0]["z"]),
                               roll.repeat_interleave(4, 0).repeat_interleave(4, 1), rtol=0, atol=1e-6)
    inside = vision.shape_share(vision.shape_mask(*[controls(at)[k] for k in ("vit_shape", "vit_x", "vit_y",
                                                                                "vit_size")]), 4) > 0
    told = next(m.value for m in at.markdown if "[CLS] gives them" in m.value)
    assert f"gives them {float(weights[inside].sum()):.0%}" in told, told


def test_changing_the_shape_changes_the_image_and_the_prediction(page):
    at = page
    before = charts(at)
    at.selectbox(key="vit_shape").set_value("cross")
    at.slider(key="vit_size").set_value(5.0)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    after = charts(at)
    assert after["vit_image"]["data"][0]["z"] != before["vit_image"]["data"][0]["z"]
    probs = after["vit_probs"]["data"][0]["y"]
    assert probs != before["vit_probs"]["data"][0]["y"]
    assert vision.SHAPES[max(range(len(probs)), key=probs.__getitem__)] == "cross"
    _, _, out = core_run(controls(at))
    torch.testing.assert_close(torch.tensor(probs), out.logits[0].softmax(-1), rtol=0, atol=1e-6)


def test_shuffled_patches_without_positions_give_the_same_prediction_computed_on_the_page(page):
    at = page
    at.slider(key="vit_order").set_value(7)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    c = controls(at)
    model, image, _ = core_run(c)
    jigsaw = vision.shuffle(image, 4, vision.permutation(16, 7))
    figs = charts(at)
    torch.testing.assert_close(torch.tensor(figs["vit_jigsaw"]["data"][0]["z"]), jigsaw)
    bars = {t["name"]: torch.tensor(t["y"]) for t in figs["vit_runs"]["data"]}
    torch.testing.assert_close(bars["shuffled"], vision.predict(model, jigsaw), rtol=0, atol=1e-6)
    torch.testing.assert_close(bars["shuffled, positions zeroed"], bars["your image, positions zeroed"],
                               rtol=0, atol=1e-5)
    torch.testing.assert_close(bars["your image, positions zeroed"], vision.predict(model, image, positions=False),
                               rtol=0, atol=1e-6)


def test_the_axial_section_draws_the_real_layers_row_column_and_two_step_maps(page):
    at = page
    at.selectbox(key="vit_axial_patch").set_value(6)
    at.selectbox(key="vit_axial_layer").set_value(1)
    at.selectbox(key="vit_axial_head").set_value(3)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    _, _, out = core_run(controls(at))
    q, k = (out.trace[f"encoder.1.self_attn.{x}"][0, 3, 1:] for x in ("q", "k"))  # head 3, the 16 patches
    scores = q @ k.T / 12 ** 0.5
    line = torch.arange(16)
    row = torch.softmax(scores.masked_fill(line[:, None] // 4 != line[None, :] // 4, float("-inf")), -1)
    col = torch.softmax(scores.masked_fill(line[:, None] % 4 != line[None, :] % 4, float("-inf")), -1)
    full = out.trace["encoder.1.self_attn.weights"][0, 3, 7, 1:]  # patch 6 is token 7
    want = {"full": full / full.sum(), "column": col[6], "composed": col[6] @ row}
    figs = charts(at)
    for name, grid in want.items():
        shown = torch.tensor(figs[f"vit_axial_{name}"]["data"][0]["z"])  # each patch's value on its 4 × 4 pixels
        torch.testing.assert_close(shown, grid.reshape(4, 4).repeat_interleave(4, 0).repeat_interleave(4, 1),
                                   rtol=0, atol=1e-6)
    rows = torch.tensor(figs["vit_axial_rows"]["data"][0]["z"])[::4, ::4]  # grid row i: patch (i, 2) reads its row
    torch.testing.assert_close(rows, torch.stack([row[4 * i + 2, 4 * i:4 * i + 4] for i in range(4)]),
                               rtol=0, atol=1e-6)
    tv = 0.5 * float((want["full"] - want["composed"]).abs().sum())
    told = next(m.value for m in at.markdown if "total variation distance" in m.value)
    assert f"from full attention is {tv:.2f}" in told, told
    table = at.dataframe[-1].value  # pair counts: n², n · (rows + columns)
    assert list(table["full: n²"]) == [256, 38416, 1048576, 16777216, 2458624]
    assert list(table["axial: n·(rows + columns)"]) == [128, 5488, 65536, 524288, 319872]
