"""Images as tokens: a small Vision Transformer (Dosovitskiy et al. 2021, "An Image is Worth 16x16 Words") on a
procedural shape task that needs no download.

The task: ``SIZE × SIZE`` grayscale images (16 × 16), each one shape of :data:`SHAPES` (filled square, disk, ring,
triangle, cross) of random size at a random place, plus Gaussian noise, drawn from a seeded ``torch.Generator``
(:func:`shape_mask` states each shape's pixels; :func:`draw` makes one image, :func:`sample` a batch).

The model reads an image as a sentence of patches. :func:`patchify` cuts it into ``P × P`` patches (4 × 4: a 4 × 4
grid of 16 patches) read row by row, each flattened row by row into a vector of ``P²`` pixels; a linear map (the
patch embedding) turns each into a ``d_model`` vector, a token. A learned ``[CLS]`` token goes in front, a learned
position embedding is added to every one of the ``N + 1`` tokens, and the result runs through the lab's own
pre-LN encoder stack (:class:`core.model.Stack` of :class:`core.model.EncoderLayer`, the same multi-head
attention, FFN and LayerNorm as the text models); a linear head on ``[CLS]``'s output names the shape. Nothing in
the encoder knows it reads an image: only the position embeddings say where a patch came from, so without them the
model sees a *bag* of patches (:func:`shuffle`: a jigsaw of the same patches gives exactly the same prediction).

Every traced tensor has a name (:class:`core.trace.Trace`): ``embed.patches`` ``[B, N, P²]``, ``embed.tokens``
(``[CLS]`` then the projected patches, ``[B, N + 1, d]``), ``embed.positions`` ``[N + 1, d]``, ``embed.out``, then
``encoder.L.…`` as in the text models (``encoder.L.self_attn.weights`` ``[B, H, N + 1, N + 1]``), ``encoder.output``
and ``logits``. :func:`cls_attention` reads ``[CLS]``'s attention to every patch back onto the patch grid;
:func:`rollout` composes the layers (Abnar & Zuidema 2020).

Axial attention (Ho et al. 2019; TimeSformer's divided space-time attention, Bertasius et al. 2021, cuts video the
same way along time and space): instead of every patch with every patch (n² pairs), a row pass (each patch with its
grid row) then a column pass (with its grid column), n · (rows + cols) pairs, and still every patch reaches every
patch in the two steps. :func:`axial_maps` builds both passes from a real layer's own queries and keys (the same
weights, masked to the axis), :func:`axial_view` and :func:`agreement` set one patch's maps beside full
attention's, :func:`axial_pairs` counts the pairs and :func:`axial_predict` runs the model with chosen layers
switched to row-then-column attention, which it was never trained for.

CLI: ``python -m core.variants.vision --out assets/vision`` trains the model and writes ``vit.safetensors`` (the
weights) and ``results.json`` (config, command, time, held-out accuracy) there; :func:`load` reads them back.
"""
from __future__ import annotations

import dataclasses
import math
import time
from datetime import datetime
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_model, save_model
from torch import nn

from ..config import ModelConfig
from ..hooks import Hooks
from ..model import EncoderLayer, RunContext, Stack
from ..trace import Trace

SHAPES = ("square", "disk", "ring", "triangle", "cross")
SIZE = 16  # image side in pixels
WEIGHTS = "vit.safetensors"
RESULTS = "results.json"


# ------------------------------------------------------------------ the images
def shape_masks(shape_ids: torch.Tensor, cx: torch.Tensor, cy: torch.Tensor, r: torch.Tensor,
                size: int = SIZE) -> torch.Tensor:
    """Bool ``[n, size, size]``: the pixels of shape ``SHAPES[shape_ids[k]]`` centred at ``(cx[k], cy[k])`` (column,
    row; pixel ``(i, j)`` sits at x = j, y = i) with half-size ``r[k]``. With ``dx = x − cx``, ``dy = y − cy``:

    * square: ``|dx| ≤ r`` and ``|dy| ≤ r`` (filled);
    * disk: ``dx² + dy² ≤ r²``;
    * ring: ``(r − 1.6)² ≤ dx² + dy² ≤ r²``;
    * triangle (apex up, base 2r, height 2r): ``−r ≤ dy ≤ r`` and ``|dx| ≤ (dy + r) / 2``;
    * cross: ``|dx| ≤ t`` and ``|dy| ≤ r``, or ``|dy| ≤ t`` and ``|dx| ≤ r``, with ``t = max(0.6, r / 4)``.
    """
    ys = torch.arange(size, dtype=torch.float32).view(1, size, 1)
    xs = torch.arange(size, dtype=torch.float32).view(1, 1, size)
    cx, cy, r = (torch.as_tensor(v, dtype=torch.float32).reshape(-1, 1, 1) for v in (cx, cy, r))
    dx, dy = xs - cx, ys - cy
    d2 = dx ** 2 + dy ** 2
    t = torch.clamp(r / 4, min=0.6)
    every = torch.stack([
        (dx.abs() <= r) & (dy.abs() <= r),
        d2 <= r ** 2,
        (d2 <= r ** 2) & (d2 >= (r - 1.6).clamp(min=0) ** 2),
        (dy >= -r) & (dy <= r) & (dx.abs() <= (dy + r) / 2),
        ((dx.abs() <= t) & (dy.abs() <= r)) | ((dy.abs() <= t) & (dx.abs() <= r)),
    ], dim=1)  # [n, shapes, size, size]
    ids = torch.as_tensor(shape_ids, dtype=torch.long).reshape(-1)
    return every[torch.arange(len(ids)), ids]


def shape_mask(shape: str, cx: float, cy: float, r: float, size: int = SIZE) -> torch.Tensor:
    """Bool ``[size, size]``: the pixels of one shape (``shape`` one of :data:`SHAPES`; see :func:`shape_masks`).
    Raises ValueError for an unknown shape."""
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; choose one of {', '.join(SHAPES)}")
    return shape_masks(torch.tensor([SHAPES.index(shape)]), torch.tensor([cx]), torch.tensor([cy]),
                       torch.tensor([r]), size)[0]


def draw(shape: str, cx: float, cy: float, r: float, noise: float = 0.0, seed: int = 0,
         size: int = SIZE) -> torch.Tensor:
    """One image ``[size, size]``: 1 on the shape's pixels (:func:`shape_mask`), 0 elsewhere, plus ``noise`` times
    standard Gaussian noise drawn from ``torch.Generator().manual_seed(seed)`` (the same image for the same
    arguments)."""
    gen = torch.Generator().manual_seed(int(seed))
    return shape_mask(shape, cx, cy, r, size).float() + float(noise) * torch.randn(size, size, generator=gen)


def sample(n: int, generator: torch.Generator, size: int = SIZE, r_range: tuple = (3.0, 6.0),
           max_noise: float = 0.4) -> tuple[torch.Tensor, torch.Tensor]:
    """``(images [n, size, size], labels [n])``: ``n`` random images of :func:`draw`, every number drawn from
    ``generator``: a shape (uniform over :data:`SHAPES`), a half-size uniform in ``r_range``, a centre uniform
    where the shape fits (``r ≤ cx, cy ≤ size − 1 − r``) and a noise level uniform in ``[0, max_noise]``."""
    labels = torch.randint(0, len(SHAPES), (n,), generator=generator)
    lo, hi = r_range
    r = lo + (hi - lo) * torch.rand(n, generator=generator)
    cx = r + (size - 1 - 2 * r) * torch.rand(n, generator=generator)
    cy = r + (size - 1 - 2 * r) * torch.rand(n, generator=generator)
    noise = max_noise * torch.rand(n, 1, 1, generator=generator)
    images = shape_masks(labels, cx, cy, r, size).float() + noise * torch.randn(n, size, size, generator=generator)
    return images, labels


def held_out(n: int, seed: int, size: int = SIZE, max_noise: float = 0.4) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`sample` from a generator of its own seeded with ``seed`` (the evaluation set, generated anew)."""
    return sample(n, torch.Generator().manual_seed(int(seed)), size, max_noise=max_noise)


# ------------------------------------------------------------------ images as tokens
def patchify(images: torch.Tensor, patch: int) -> torch.Tensor:
    """``[..., H, W]`` → ``[..., N, patch²]``: the ``patch × patch`` squares of each image, read row by row over the
    grid (N = (H / patch) · (W / patch)), each flattened row by row. Raises ValueError when ``patch`` does not divide
    H and W."""
    *lead, h, w = images.shape
    if h % patch or w % patch:
        raise ValueError(f"a {h}×{w} image is not cut into whole {patch}×{patch} patches")
    gh, gw = h // patch, w // patch
    x = images.reshape(*lead, gh, patch, gw, patch).transpose(-3, -2)  # [..., gh, gw, patch, patch]
    return x.reshape(*lead, gh * gw, patch * patch)


def unpatchify(patches: torch.Tensor, patch: int, height: int, width: int) -> torch.Tensor:
    """The inverse of :func:`patchify`: ``[..., N, patch²]`` → ``[..., height, width]``."""
    *lead, n, _ = patches.shape
    gh, gw = height // patch, width // patch
    if n != gh * gw:
        raise ValueError(f"{n} patches do not make a {height}×{width} image of {patch}×{patch} patches")
    x = patches.reshape(*lead, gh, gw, patch, patch).transpose(-3, -2)
    return x.reshape(*lead, height, width)


def shuffle(image: torch.Tensor, patch: int, order) -> torch.Tensor:
    """The jigsaw of ``image`` ``[..., H, W]``: patch k of the result is patch ``order[k]`` of the image."""
    patches = patchify(image, patch)
    return unpatchify(patches[..., torch.as_tensor(list(order), dtype=torch.long), :], patch, *image.shape[-2:])


def permutation(n: int, seed: int) -> list[int]:
    """A random order of ``n`` patches from ``torch.Generator().manual_seed(seed)``."""
    return torch.randperm(n, generator=torch.Generator().manual_seed(int(seed))).tolist()


def shape_share(mask: torch.Tensor, patch: int) -> torch.Tensor:
    """``[H/patch, W/patch]``: the share of each patch's pixels that belong to the shape (``mask`` bool
    ``[H, W]``)."""
    return patchify(mask.float(), patch).mean(-1).reshape(mask.shape[0] // patch, mask.shape[1] // patch)


# ------------------------------------------------------------------ the model
@dataclasses.dataclass
class VisionConfig:
    """The ViT and its training: image and patch size, model sizes, steps, data, evaluation."""
    image: int = SIZE
    patch: int = 4
    d_model: int = 48
    heads: int = 4
    layers: int = 3
    d_ff: int = 96
    steps: int = 1500
    batch_size: int = 64
    lr: float = 3e-3
    warmup: int = 100
    max_noise: float = 0.4
    eval_images: int = 2000
    eval_seed: int = 1_000_003
    seed: int = 0
    threads: int | None = None  # torch's threads while training (None: leave as is)

    @property
    def grid(self) -> int:
        """Patches per side."""
        return self.image // self.patch

    @property
    def n_patches(self) -> int:
        return self.grid ** 2


def config_of(saved: dict) -> VisionConfig:
    """The VisionConfig of a results file's ``config`` (fields it does not know are left out)."""
    return VisionConfig(**{k: v for k, v in saved.items() if k in VisionConfig.__dataclass_fields__})


def encoder_config(cfg: VisionConfig) -> ModelConfig:
    """The :class:`ModelConfig` of the ViT's encoder stack: pre-LN, GELU, no dropout, no positions of its own (the
    ViT adds learned ones to the patch tokens)."""
    return ModelConfig(kind="encoder-only", vocab_size=1, d_model=cfg.d_model, n_heads=cfg.heads,
                       n_encoder_layers=cfg.layers, n_decoder_layers=0, d_ff=cfg.d_ff, dropout=0.0,
                       max_len=cfg.n_patches + 1, pos_encoding="none", norm="pre", activation="gelu")


@dataclasses.dataclass
class VisionOutput:
    """A forward pass: ``logits [B, classes]``, the stack's output ``hidden [B, N + 1, d]``, the trace when asked."""
    logits: torch.Tensor
    hidden: torch.Tensor
    trace: Trace | None = None


class VisionTransformer(nn.Module):
    """ViT: patch embedding (a linear map of each flattened patch), ``[CLS]``, learned positions, the lab's encoder
    stack, a linear head on ``[CLS]``."""

    def __init__(self, cfg: VisionConfig):
        super().__init__()
        if cfg.image % cfg.patch:
            raise ValueError(f"patch {cfg.patch} does not divide the image side {cfg.image}")
        self.cfg = cfg
        self.patch_embed = nn.Linear(cfg.patch ** 2, cfg.d_model)
        self.cls = nn.Parameter(torch.randn(cfg.d_model) * 0.02)
        self.positions = nn.Parameter(torch.randn(cfg.n_patches + 1, cfg.d_model) * 0.02)
        self.encoder = Stack(encoder_config(cfg), EncoderLayer, cfg.layers)
        self.head = nn.Linear(cfg.d_model, len(SHAPES))

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def embed(self, images: torch.Tensor, positions: bool = True, hooks: Hooks | None = None) -> torch.Tensor:
        """``[B, H, W]`` → the tokens the encoder reads ``[B, N + 1, d]``: ``[CLS]``, then each patch's embedding
        ``patch · Wᵀ + b``, plus the position embeddings (left out with ``positions=False``)."""
        hk = hooks or Hooks.of(None)
        patches = hk.point("embed.patches", patchify(images, self.cfg.patch))
        cls = self.cls.expand(images.shape[0], 1, -1)
        tokens = hk.point("embed.tokens", torch.cat([cls, self.patch_embed(patches)], dim=1))
        table = self.positions if positions else torch.zeros_like(self.positions)
        table = hk.point("embed.positions", table)
        return hk.point("embed.out", tokens + table)

    def forward(self, images: torch.Tensor, *, trace=False, positions: bool = True, hooks=None) -> VisionOutput:
        """``images [B, H, W]`` (or one ``[H, W]``). ``trace``: True (or a :class:`Trace`) keeps every
        intermediate tensor; ``positions=False`` runs with the position embeddings zeroed; ``hooks``: ``{name: fn}``
        as for the text models (:mod:`core.hooks`)."""
        if images.dim() == 2:
            images = images.unsqueeze(0)
        if images.shape[-2:] != (self.cfg.image, self.cfg.image):
            raise ValueError(f"images must be {self.cfg.image}×{self.cfg.image}, got {tuple(images.shape[-2:])}")
        tr = Trace() if trace is True else (trace or None)
        hk = Hooks.of(tr, hooks)
        x = self.embed(images.float(), positions, hk)
        hidden = hk.point("encoder.output", self.encoder(x, RunContext(hk), "encoder"))
        logits = hk.point("logits", self.head(hidden[:, 0]))
        return VisionOutput(logits, hidden, tr)


def build(cfg: VisionConfig) -> VisionTransformer:
    """A ViT of ``cfg`` initialised from ``cfg.seed``."""
    torch.manual_seed(cfg.seed)
    return VisionTransformer(cfg)


# ------------------------------------------------------------------ reading the attention
def cls_attention(trace: Trace, layer: int, head: int | None = None, item: int = 0) -> torch.Tensor:
    """``[CLS]``'s attention in ``layer`` to every patch, on the patch grid ``[grid, grid]`` (``head`` None: the
    mean over heads). The rest of the row, ``1 − sum``, is what ``[CLS]`` gives itself."""
    w = trace[f"encoder.{layer}.self_attn.weights"][item]  # [H, N + 1, N + 1]
    row = (w.mean(0) if head is None else w[head])[0, 1:]
    g = math.isqrt(row.numel())
    return row.reshape(g, g)


def rollout(trace: Trace, n_layers: int, item: int = 0) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema 2020) ``[N + 1, N + 1]``: per layer the heads' mean attention plus the
    identity (the residual path), rows renormalised, ``Â = ½ (A + I)``;
    the layers' product ``Â_{L−1} ··· Â_0``. Each row sums to 1."""
    out = None
    for layer in range(n_layers):
        a = trace[f"encoder.{layer}.self_attn.weights"][item].mean(0).double()
        a = 0.5 * (a + torch.eye(a.shape[0], dtype=a.dtype))
        a = a / a.sum(-1, keepdim=True)
        out = a if out is None else a @ out
    return out.float()


def cls_rollout(trace: Trace, n_layers: int, item: int = 0) -> torch.Tensor:
    """The ``[CLS]`` row of :func:`rollout` over the patches, on the grid ``[grid, grid]``."""
    row = rollout(trace, n_layers, item)[0, 1:]
    g = math.isqrt(row.numel())
    return row.reshape(g, g)


# ------------------------------------------------------------------ axial attention: rows, then columns
AXES = ("row", "column")


def axial_mask(rows: int, cols: int, axis: str) -> torch.Tensor:
    """Bool ``[n, n]`` over the ``n = rows · cols`` patches of a grid read row by row (patch k at grid row
    ``k // cols``, column ``k % cols``): True where patch i may look at patch j in one pass of axial attention,
    i.e. where both sit in the same grid row (``axis="row"``) or the same grid column (``axis="column"``). Raises
    ValueError for another axis or an empty grid."""
    if axis not in AXES:
        raise ValueError(f"unknown axis {axis!r}; choose row or column")
    if rows < 1 or cols < 1:
        raise ValueError(f"a grid needs at least one row and one column, got {rows}×{cols}")
    k = torch.arange(rows * cols)
    line = k // cols if axis == "row" else k % cols
    return line[:, None] == line[None, :]


def axial_pairs(rows: int, cols: int) -> dict:
    """The (query, key) pairs one attention layer scores over a ``rows × cols`` grid of ``n`` tokens: ``full`` n²
    (every token with every token), ``row`` n · cols (each token with its grid row), ``column`` n · rows, ``axial``
    n · (rows + cols) for the two passes together (a token meets itself in both), and ``ratio`` full / axial. The
    same count holds for video cut along time and space (rows = frames, cols = patches per frame)."""
    n = rows * cols
    return {"tokens": n, "full": n * n, "row": n * cols, "column": n * rows, "axial": n * (rows + cols),
            "ratio": n / (rows + cols)}


def masked_weights(q: torch.Tensor, k: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """``softmax(q kᵀ / √d)`` with each query's softmax taken over the keys ``allowed`` (bool ``[Tq, Tk]``, True:
    may look) only: ``q [..., Tq, d]``, ``k [..., Tk, d]`` → ``[..., Tq, Tk]``, exactly 0 on every other key. With
    every key allowed it is the layer's own attention. Raises ValueError when a query is allowed no key."""
    if not bool(allowed.any(-1).all()):
        raise ValueError("every query needs at least one key it may look at")
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return torch.softmax(scores.masked_fill(~allowed, float("-inf")), -1)


def axial_weights(q: torch.Tensor, k: torch.Tensor) -> dict:
    """Row-then-column attention among the patch tokens of one layer: ``q, k [..., N, d]`` of the N patches (no
    ``[CLS]``) on a square grid, each ``[..., N, N]``: ``row`` (:func:`masked_weights` within each grid row),
    ``column`` (within each grid column) and ``composed = column @ row``: a row pass followed by a column pass, so
    patch p reads the patches m of its column, each of which has read its own row,
    ``composed[p, j] = Σ_m column[p, m] · row[m, j]``. Exactly one m (grid row of j, grid column of p) lies on both
    lines, so every patch reaches every patch in the two steps. Raises ValueError when N is not a square."""
    n = q.shape[-2]
    g = math.isqrt(n)
    if g * g != n:
        raise ValueError(f"{n} patches do not make a square grid")
    row = masked_weights(q, k, axial_mask(g, g, "row").to(q.device))
    column = masked_weights(q, k, axial_mask(g, g, "column").to(q.device))
    return {"row": row, "column": column, "composed": column @ row}


def axial_maps(trace: Trace, layer: int, item: int = 0) -> dict:
    """Axial attention of the real ``layer`` on an image: :func:`axial_weights` of the layer's own queries and keys
    (``encoder.L.self_attn.q`` / ``.k`` of the patches), per head ``[H, N, N]`` (``row``, ``column``, ``composed``),
    next to the model's full attention: ``full`` ``[H, N, N]`` (each patch's weights on the patches) and
    ``full_cls`` ``[H, N]`` (what each patch gives ``[CLS]``, the rest of its row)."""
    q = trace[f"encoder.{layer}.self_attn.q"][item, :, 1:].float()
    k = trace[f"encoder.{layer}.self_attn.k"][item, :, 1:].float()
    w = trace[f"encoder.{layer}.self_attn.weights"][item]
    return {**axial_weights(q, k), "full": w[:, 1:, 1:], "full_cls": w[:, 1:, 0]}


def axial_view(maps: dict, patch: int, head: int | None = None) -> dict:
    """What the page draws for one patch p from :func:`axial_maps`, each on the grid ``[g, g]`` (``head`` None: the
    mean of the heads' maps): ``full`` (p's full attention over the patches, renormalised to sum to 1 without
    ``[CLS]``), ``rows`` (step 1: grid row i holds the row map of the patch at row i of p's column, the patches whose
    results p reads next; each grid row sums to 1), ``column`` (step 2: p's weights on its column), ``composed``
    (p's reach after both steps), and ``cls`` (the share full attention gives ``[CLS]``)."""
    def pick(t):
        return t.mean(0) if head is None else t[head]
    n = maps["row"].shape[-1]
    g = math.isqrt(n)
    if not 0 <= patch < n:
        raise ValueError(f"patch {patch} is not one of the {n} patches")
    col_of_p = patch % g
    rows = torch.stack([pick(maps["row"][:, i * g + col_of_p]).reshape(g, g)[i] for i in range(g)])
    full = pick(maps["full"][:, patch])
    return {"full": (full / full.sum()).reshape(g, g), "rows": rows,
            "column": pick(maps["column"][:, patch]).reshape(g, g),
            "composed": pick(maps["composed"][:, patch]).reshape(g, g),
            "cls": float(pick(maps["full_cls"][:, patch]))}


def agreement(full: torch.Tensor, other: torch.Tensor, top: int) -> dict:
    """How close a map over the patches is to full attention's (any shapes with N values each, both summing to 1):
    ``tv`` the total variation distance ½ Σ |full − other| (0: the same map, 1: no weight in common), ``uniform_tv``
    the same for an even spread over the N patches (a baseline: a map that knows nothing), and ``overlap`` the
    share of full attention's ``top`` largest patches that are also among ``other``'s ``top`` largest."""
    a, b = full.flatten().double(), other.flatten().double()
    top = max(1, min(int(top), a.numel()))
    common = set(a.topk(top).indices.tolist()) & set(b.topk(top).indices.tolist())
    return {"tv": 0.5 * float((a - b).abs().sum()), "uniform_tv": 0.5 * float((a - 1 / a.numel()).abs().sum()),
            "overlap": len(common) / top, "top": top}



def agreement_over_patches(maps: dict, head: int | None = None, top: int | None = None) -> dict:
    """:func:`agreement` of full and composed attention (:func:`axial_view`) averaged over every patch as the query:
    mean ``tv``, ``uniform_tv`` and ``overlap`` (``top``: the grid side when None), and ``closer`` the number of
    patches whose composed map is nearer full attention's than an even spread is, of ``patches``."""
    n = maps["row"].shape[-1]
    top = top or math.isqrt(n)
    each = []
    for p in range(n):
        view = axial_view(maps, p, head)
        each.append(agreement(view["full"], view["composed"], top))
    return {"tv": sum(a["tv"] for a in each) / n, "uniform_tv": sum(a["uniform_tv"] for a in each) / n,
            "overlap": sum(a["overlap"] for a in each) / n, "closer": sum(a["tv"] < a["uniform_tv"] for a in each),
            "patches": n, "top": top}

def axial_hooks(layers) -> dict:
    """Hooks (:mod:`core.hooks`) that replace the attention of each encoder layer in ``layers`` by row-then-column
    attention built from that layer's own q, k, v: every patch's head output becomes ``composed @ v`` over the
    patches (:func:`axial_weights`; patches no longer read ``[CLS]``), while ``[CLS]`` keeps its full attention."""
    seen: dict = {}

    def keep(t, name):
        seen[name] = t

    def swap(t, name):
        base = name.rpartition(".")[0]
        q, k, v = (seen[f"{base}.{x}"][:, :, 1:] for x in ("q", "k", "v"))
        out = t.clone()
        out[:, :, 1:] = axial_weights(q, k)["composed"] @ v
        return out
    fns = {}
    for layer in layers:
        base = f"encoder.{int(layer)}.self_attn"
        fns |= {f"{base}.q": keep, f"{base}.k": keep, f"{base}.v": keep, f"{base}.heads": swap}
    return fns


@torch.no_grad()
def axial_predict(model: VisionTransformer, image: torch.Tensor, layers) -> torch.Tensor:
    """Class probabilities ``[len(SHAPES)]`` for one image with the attention of each layer in ``layers`` replaced by
    row-then-column attention (:func:`axial_hooks`). The model was trained with full attention, not this."""
    model.eval()
    return torch.softmax(model(image, hooks=axial_hooks(layers)).logits[0], -1)


@torch.no_grad()
def predict(model: VisionTransformer, image: torch.Tensor, positions: bool = True) -> torch.Tensor:
    """Class probabilities ``[len(SHAPES)]`` for one image ``[H, W]``."""
    model.eval()
    return torch.softmax(model(image, positions=positions).logits[0], -1)


# ------------------------------------------------------------------ training and evaluation
def train(cfg: VisionConfig, on_progress=None) -> tuple[VisionTransformer, list[float]]:
    """Train a ViT of ``cfg`` on fresh images every step (:func:`sample` from a generator seeded with ``cfg.seed``):
    AdamW, linear warmup then cosine decay, clip 1.0. Returns the model (eval mode) and the loss of every step;
    ``on_progress(step, steps)`` is called every 100 steps."""
    model = build(cfg)
    gen = torch.Generator().manual_seed(cfg.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)

    def factor(step):
        if step < cfg.warmup:
            return (step + 1) / cfg.warmup
        return 0.5 * (1 + math.cos(math.pi * (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    losses = []
    model.train()
    for step in range(cfg.steps):
        images, labels = sample(cfg.batch_size, gen, cfg.image, max_noise=cfg.max_noise)
        loss = F.cross_entropy(model(images).logits, labels)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(round(loss.item(), 4))
        if on_progress is not None and (step + 1) % 100 == 0:
            on_progress(step + 1, cfg.steps)
    return model.eval(), losses


@torch.no_grad()
def evaluate(model: VisionTransformer, n: int, seed: int, positions: bool = True, axial=()) -> dict:
    """Accuracy on ``n`` held-out images (:func:`held_out` of ``seed``): ``{"accuracy", "per_class": {shape:
    accuracy}, "images"}``; ``axial``: layers whose attention is replaced by row-then-column (:func:`axial_hooks`)."""
    model.eval()
    images, labels = held_out(n, seed, model.cfg.image, model.cfg.max_noise)
    hooks = axial_hooks(axial) if axial else None
    pred = torch.cat([model(chunk, positions=positions, hooks=hooks).logits.argmax(-1)
                      for chunk in images.split(500)])
    right = pred.eq(labels)
    per = {s: round(float(right[labels == i].float().mean()), 4) for i, s in enumerate(SHAPES)}
    return {"accuracy": round(float(right.float().mean()), 4), "per_class": per, "images": n}


def run(cfg: VisionConfig | None = None, out: str | None = None, on_progress=None) -> tuple[VisionTransformer, dict]:
    """Train (:func:`train`), measure on held-out images (:func:`evaluate`) and, with ``out``, save the weights
    (``out/vit.safetensors``) and the results (``out/results.json``). Returns the model and the results:
    ``{"config", "params", "accuracy", "per_class", "eval_images", "seconds", "losses", "command", "date"}``
    (``seconds``: training time; ``losses``: every 10th step's)."""
    from ..io import cli, jsonio
    cfg = cfg or VisionConfig()
    before = torch.get_num_threads()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    try:
        t0 = time.perf_counter()
        model, losses = train(cfg, on_progress)
        seconds = time.perf_counter() - t0
        score = evaluate(model, cfg.eval_images, cfg.eval_seed)
    finally:
        torch.set_num_threads(before)
    folder = out or "FOLDER"
    result = {"config": dataclasses.asdict(cfg), "params": model.num_parameters(), "accuracy": score["accuracy"],
              "per_class": score["per_class"], "eval_images": score["images"], "seconds": round(seconds, 1),
              "threads": cfg.threads or before, "losses": losses[::10],
              "command": f"python -m core.variants.vision --out {folder} {cli.as_flags(cfg)}",
              "date": datetime.now().isoformat(timespec="seconds")}
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        save_model(model, str(Path(out) / WEIGHTS))
        (Path(out) / RESULTS).write_text(jsonio.dumps(result), encoding="utf-8")
    return model, result


def load(folder) -> tuple[VisionTransformer, dict]:
    """The trained ViT a run saved in ``folder`` (eval mode) and its results. Raises FileNotFoundError when either
    file is missing."""
    from ..io import jsonio
    folder = Path(folder)
    results = jsonio.loads((folder / RESULTS).read_text(encoding="utf-8"))
    model = VisionTransformer(config_of(results["config"]))
    load_model(model, str(folder / WEIGHTS))
    return model.eval(), results


def main(argv=None) -> int:
    """The ``python -m core.variants.vision --out FOLDER`` command line; returns the exit code."""
    from ..io import cli, jsonio
    p = cli.Parser(prog="python -m core.variants.vision",
                   description="Train the small Vision Transformer on procedural shapes")
    p.add_argument("--out", required=True, help="folder for vit.safetensors and results.json")
    cli.add_fields(p, VisionConfig)
    args = vars(p.parse_args(argv))
    out = args.pop("out")
    try:
        cfg = VisionConfig(**args)
        VisionTransformer(cfg)  # refuse a bad size before training
    except ValueError as e:
        return cli.refuse(e)
    _, result = run(cfg, out)
    print(jsonio.dumps({k: result[k] for k in ("params", "accuracy", "per_class", "seconds")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
