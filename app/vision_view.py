"""The Images-as-tokens (ViT) page's computations and its picture of an image on its patch grid: the shipped Vision
Transformer loaded once, one image made from the page's controls run through it (traced), the same image shuffled and
without positions, all cached per input."""
from __future__ import annotations

import os
from pathlib import Path

import streamlit as st
import torch

from app import figures
from app.cache import bounded
from core.variants import vision

ROOT = Path(__file__).resolve().parents[1]
FOLDER = Path(os.environ.get("ATTENTION_VISION_MODEL", ROOT / "assets" / "vision"))


def stamp(folder: Path = FOLDER) -> float | None:
    """When the shipped weights were written (a new run is loaded anew), or None when they are missing."""
    path = folder / vision.WEIGHTS
    return path.stat().st_mtime if path.exists() and (folder / vision.RESULTS).exists() else None


@st.cache_resource(show_spinner="Loading the Vision Transformer…", max_entries=2)
def load(folder: str, when: float):
    """The trained ViT of ``folder`` and its results (``when``: :func:`stamp`, part of the key only)."""
    return vision.load(folder)


@bounded
def look(folder: str, when: float, shape: str, cx: float, cy: float, r: float, noise: float, seed: int) -> dict:
    """One image from the controls (:func:`core.variants.vision.draw`) and what the page draws of it: ``image``,
    ``mask`` (the shape's pixels), ``probs`` (the model's class probabilities), ``trace`` (every tensor of the
    pass, attention maps computed)."""
    model, _ = load(folder, when)
    image = vision.draw(shape, cx, cy, r, noise, seed, model.cfg.image)
    with torch.no_grad():
        out = model(image, trace=True)
    out.trace.materialize()
    return {"image": image, "mask": vision.shape_mask(shape, cx, cy, r, model.cfg.image), "trace": out.trace,
            "probs": out.logits[0].softmax(-1)}


RUNS = ("your image", "shuffled", "your image, positions zeroed", "shuffled, positions zeroed")


@bounded
def shuffled(folder: str, when: float, shape: str, cx: float, cy: float, r: float, noise: float, seed: int,
             order_seed: int) -> dict:
    """The same image's patches in a random order (``order``, from ``order_seed``): the ``jigsaw`` image and the
    class probabilities of the four runs of :data:`RUNS` (``runs``: {run: probabilities})."""
    model, _ = load(folder, when)
    image = vision.draw(shape, cx, cy, r, noise, seed, model.cfg.image)
    order = vision.permutation(model.cfg.n_patches, order_seed)
    jigsaw = vision.shuffle(image, model.cfg.patch, order)
    probs = [vision.predict(model, x, positions=p) for p in (True, False) for x in (image, jigsaw)]
    return {"order": order, "jigsaw": jigsaw, "runs": dict(zip(RUNS, (probs[0], probs[1], probs[2], probs[3])))}


@bounded(spinner="Scoring held-out images with and without position embeddings…")
def accuracy_without_positions(folder: str, when: float, n: int = 1000) -> dict:
    """Held-out accuracy of the shipped ViT as trained and with its position embeddings zeroed (the same
    ``n`` images, the evaluation seed + 1)."""
    model, results = load(folder, when)
    seed = vision.config_of(results["config"]).eval_seed + 1
    return {"with": vision.evaluate(model, n, seed)["accuracy"],
            "without": vision.evaluate(model, n, seed, positions=False)["accuracy"], "images": n}


def patch_figure(values: torch.Tensor, patch: int, *, title: str, value_name: str, outline: torch.Tensor | None = None,
                 zmin: float | None = 0.0, zmax: float | None = None, present: bool = False,
                 dark: bool = False) -> "figures.go.Figure":
    """An image ``[H, W]`` (pixels, or one value per patch spread over its pixels) on its patch grid: grid lines
    between the ``patch × patch`` patches, axes numbering patch rows and columns, hover naming the patch (k = row ·
    columns + column, the order the model reads them), its pixel and the value; ``outline``: a bool ``[H, W]`` drawn
    as a contour line (the shape)."""
    h, w = values.shape
    gh, gw = h // patch, w // patch
    rows = [[f"patch {(i // patch) * gw + j // patch}, pixel ({i}, {j})" for j in range(w)] for i in range(h)]
    xs, ys = list(range(w)), list(range(h))
    traces = [dict(type="heatmap", z=figures.table(values.detach().float().tolist()), x=xs, y=ys,
                   customdata=figures.table(rows), colorscale=figures.sequential_scale(present, dark), zmin=zmin,
                   zmax=zmax, hovertemplate=f"%{{customdata}}<br>{value_name} %{{z:.4f}}<extra></extra>",
                   colorbar={"title": {"text": value_name}})]
    if outline is not None:
        traces.append(dict(type="contour", z=figures.table(outline.float().tolist()), x=xs, y=ys,
                           showscale=False, hoverinfo="skip", contours={"coloring": "none", "start": 0.5, "end": 0.5,
                                                                         "size": 1},
                           line={"color": "#d62728", "width": 3}))
    lines = [dict(type="line", x0=-0.5 + k * patch, x1=-0.5 + k * patch, y0=-0.5, y1=h - 0.5, xref="x", yref="y",
                  line={"color": "#ff7f0e", "width": 2}) for k in range(1, gw)]
    lines += [dict(type="line", y0=-0.5 + k * patch, y1=-0.5 + k * patch, x0=-0.5, x1=w - 0.5, xref="x", yref="y",
                   line={"color": "#ff7f0e", "width": 2}) for k in range(1, gh)]
    centres = [k * patch + (patch - 1) / 2 for k in range(max(gh, gw))]
    fig = figures.spec(*traces, title=title, shapes=lines,
                       xaxis={"tickvals": centres[:gw], "ticktext": [str(k) for k in range(gw)],
                              "title": {"text": "patch column"}, "showgrid": False, "zeroline": False,
                              "range": [-0.5, w - 0.5], "constrain": "domain"},
                       yaxis={"tickvals": centres[:gh], "ticktext": [str(k) for k in range(gh)],
                              "title": {"text": "patch row"}, "showgrid": False, "zeroline": False,
                              "range": [h - 0.5, -0.5], "scaleanchor": "x", "constrain": "domain"})
    return figures.style(fig, present, height=480 if present else 420, dark=dark)


def spread(grid: torch.Tensor, patch: int) -> torch.Tensor:
    """One value per patch ``[gh, gw]`` → the same value on each of its pixels ``[gh · patch, gw · patch]``."""
    return grid.repeat_interleave(patch, 0).repeat_interleave(patch, 1)


@bounded
def axial_probs(folder: str, when: float, shape: str, cx: float, cy: float, r: float, noise: float, seed: int,
                layer: int) -> dict:
    """The class probabilities for the controls' image with row-then-column attention in place of full attention
    (:func:`core.variants.vision.axial_predict`): ``{"layer": only ``layer`` switched, "all": every layer}``."""
    model, _ = load(folder, when)
    image = vision.draw(shape, cx, cy, r, noise, seed, model.cfg.image)
    return {"layer": vision.axial_predict(model, image, [layer]),
            "all": vision.axial_predict(model, image, range(model.cfg.layers))}


@bounded(spinner="Scoring held-out images with row-then-column attention…")
def axial_accuracy(folder: str, when: float, layer: int, n: int = 1000) -> dict:
    """Held-out accuracy of the shipped ViT as trained, with ``layer`` switched to row-then-column attention, and
    with every layer switched (the same ``n`` images, the evaluation seed + 1)."""
    model, results = load(folder, when)
    seed = vision.config_of(results["config"]).eval_seed + 1
    return {"full": vision.evaluate(model, n, seed)["accuracy"],
            "layer": vision.evaluate(model, n, seed, axial=[layer])["accuracy"],
            "all": vision.evaluate(model, n, seed, axial=range(model.cfg.layers))["accuracy"], "images": n}


# other grids for the pair-count table: (what, rows, columns); rows × columns tokens, one attention layer
PAIR_GRIDS = (("224×224 image, 16-pixel patches (ViT-B/16)", 14, 14),
              ("512×512 image, 16-pixel patches", 32, 32), ("1024×1024 image, 16-pixel patches", 64, 64),
              ("video: 8 frames × 196 patches (time × space)", 8, 196))


def pair_table(cfg: vision.VisionConfig, grids=PAIR_GRIDS) -> list[dict]:
    """One row for this ViT's grid (``cfg``), then one per grid of ``grids``: tokens n, the pairs full attention
    scores (n²), the pairs the two axial passes score (n · (rows + columns), :func:`core.variants.vision.axial_pairs`)
    and how many times fewer that is."""
    here = (f"this ViT: {cfg.image}×{cfg.image} image, {cfg.patch}-pixel patches", cfg.grid, cfg.grid)
    out = []
    for what, rows, cols in (here, *grids):
        c = vision.axial_pairs(rows, cols)
        out.append({"image": what, "grid": f"{rows} × {cols}", "tokens n": c["tokens"], "full: n²": c["full"],
                    "axial: n·(rows + columns)": c["axial"], "times fewer": round(c["ratio"], 1)})
    return out


def patch_box(patch: int, grid: int, size: int) -> torch.Tensor:
    """Bool ``[size, size]``: the pixels of patch ``patch`` on a ``grid × grid`` patch grid (for an outline)."""
    box = torch.zeros(grid, grid, dtype=torch.bool)
    box[patch // grid, patch % grid] = True
    return spread(box, size // grid)
