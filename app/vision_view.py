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
