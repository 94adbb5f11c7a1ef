"""Reversible residual layers: recompute a layer's inputs during backpropagation instead of storing them.

The Reformer (Kitaev et al. 2020) replaces each residual sublayer pair with a *reversible* block (RevNet,
Gomez et al. 2017). The block reads two streams ``(x1, x2)`` and writes::

    y1 = x1 + F(x2)        F = the attention sublayer
    y2 = x2 + G(y1)        G = the feed-forward sublayer

and its inputs come back from its outputs, exactly in real arithmetic::

    x2 = y2 − G(y1)
    x1 = y1 − F(x2)

So a stack of N blocks need not keep any block's activations for the backward pass: it keeps only the stack's
output, and the backward walks the blocks from the top, rebuilding each block's inputs by inversion, running that one
block forward again with autograd on, and backpropagating through it (:class:`ReversibleStack` with
``reversible=True``, a custom :class:`torch.autograd.Function`). Only one block's activations exist at a time.

What is built here:

- :class:`ReversibleBlock`, :class:`ReversibleStack`: the block, its inverse, a stack and its memory-light backward;
- :class:`AttentionSublayer`, :class:`FeedForwardSublayer`: ``F`` and ``G`` made of a model layer's own
  LayerNorm + self-attention and LayerNorm + FFN (:func:`stack_from_model`), or of a freshly initialised model
  (:func:`random_stack`);
- :class:`SavedActivations`: counts the bytes autograd saves for backward (``saved_tensors_hooks``; weights left
  out, each storage once), so ordinary and reversible training memory are *counted*, not timed
  (:func:`saved_bytes`, :func:`measure`).

The blocks use a trained model's weights only to show the mechanism: our models were trained with ordinary residual
connections, so a reversible stack made of their layers does not compute what the model computes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from ..config import ModelConfig
from ..model import Transformer


# ------------------------------------------------------------------ F and G
class AttentionSublayer(nn.Module):
    """``F(x) = SelfAttention(LayerNorm(x))``: a layer's LayerNorm and self-attention, with the mask, bias and rotary
    tables the model gives a sequence of ``x``'s length (``terms``: ``t -> (mask, bias, rope)``), causal or not.

    The LayerNorm is applied before the attention (pre-LN) whatever the model does: in a post-LN model the same
    weights normalise ``x + sublayer(x)`` instead; here they keep every block's input in range."""

    def __init__(self, norm: nn.Module, attn: nn.Module, terms=None, causal: bool = False):
        super().__init__()
        self.norm, self.attn, self.causal = norm, attn, causal
        self.terms = terms  # a plain callable (e.g. a model's bound method), not a registered submodule

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The attention sublayer's output for ``x [B, T, d_model]``."""
        mask, bias, rope = self.terms(x.shape[1]) if self.terms is not None else (None, None, None)
        return self.attn(self.norm(x), mask=mask, bias=bias, is_causal=self.causal, rope=rope)


class FeedForwardSublayer(nn.Module):
    """``G(x) = FFN(LayerNorm(x))``: a layer's LayerNorm and feed-forward network; zero in an attention-only model
    (``ffn`` None), where the block's second half is the identity."""

    def __init__(self, norm: nn.Module | None, ffn: nn.Module | None):
        super().__init__()
        self.norm, self.ffn = norm, ffn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The feed-forward sublayer's output for ``x [B, T, d_model]``."""
        if self.ffn is None:
            return torch.zeros_like(x)
        return self.ffn(self.norm(x))


# ------------------------------------------------------------------ the block and the stack
class ReversibleBlock(nn.Module):
    """``(x1, x2) -> (y1, y2) = (x1 + F(x2), x2 + G(y1))`` and its exact inverse (RevNet, Gomez et al. 2017)."""

    def __init__(self, f: nn.Module, g: nn.Module):
        super().__init__()
        self.f, self.g = f, g

    def forward(self, x1: torch.Tensor, x2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``y1 = x1 + F(x2)``, ``y2 = x2 + G(y1)``."""
        y1 = x1 + self.f(x2)
        return y1, x2 + self.g(y1)

    def inverse(self, y1: torch.Tensor, y2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The block's inputs from its outputs: ``x2 = y2 − G(y1)`` first (``y1`` is known), then
        ``x1 = y1 − F(x2)``."""
        x2 = y2 - self.g(y1)
        return y1 - self.f(x2), x2

    def backward_step(self, y1, y2, dy1, dy2):
        """One block of the memory-light backward: rebuild the inputs with :meth:`inverse`, run the block forward again
        on them with autograd on (its activations exist only now), and backpropagate ``(dy1, dy2)`` through it.
        Returns ``(x1, x2, dx1, dx2, {parameter: gradient})``."""
        with torch.no_grad():
            x1, x2 = self.inverse(y1, y2)
        with torch.enable_grad():
            x1, x2 = x1.detach().requires_grad_(True), x2.detach().requires_grad_(True)
            o1, o2 = self(x1, x2)
            params = [p for p in self.parameters() if p.requires_grad]
            grads = torch.autograd.grad((o1, o2), (x1, x2, *params), (dy1, dy2), allow_unused=True)
        return x1.detach(), x2.detach(), grads[0], grads[1], dict(zip(params, grads[2:]))


class _Reversible(torch.autograd.Function):
    """The stack's forward without a graph, keeping only its output; the backward inverts block by block."""

    @staticmethod
    def forward(ctx, x1, x2, stack, meter, *params):
        with torch.no_grad():
            y1, y2 = x1, x2
            for block in stack.blocks:
                y1, y2 = block(y1, y2)
        ctx.stack, ctx.meter, ctx.params = stack, meter, params
        ctx.save_for_backward(y1, y2)  # the only activations kept until the backward
        return y1, y2

    @staticmethod
    def backward(ctx, dy1, dy2):
        y1, y2 = ctx.saved_tensors
        total = {id(p): None for p in ctx.params}
        for block in reversed(ctx.stack.blocks):
            if ctx.meter is None:
                y1, y2, dy1, dy2, grads = block.backward_step(y1, y2, dy1, dy2)
            else:
                with SavedActivations(ctx.stack.weights()) as counted:
                    y1, y2, dy1, dy2, grads = block.backward_step(y1, y2, dy1, dy2)
                ctx.meter.append(counted.bytes)
            for p, g in grads.items():
                if g is not None and id(p) in total:
                    total[id(p)] = g if total[id(p)] is None else total[id(p)] + g
        return (dy1, dy2, None, None, *(total[id(p)] for p in ctx.params))


class ReversibleStack(nn.Module):
    """``blocks`` run in order on ``(x1, x2)``; :meth:`forward` with ``reversible=True`` keeps only the output for
    the backward and rebuilds every block's inputs there by inversion (Reformer, RevNet).

    ``frozen``: tensors outside the blocks that they read as weights (a model's rotary tables): left out of the
    saved-activation count with the blocks' parameters and buffers."""

    def __init__(self, blocks, frozen=()):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.frozen = tuple(frozen)  # a plain tuple: not registered, not this stack's parameters

    def weights(self) -> list[torch.Tensor]:
        """Every tensor that is a weight, not an activation: the blocks' parameters and buffers and :attr:`frozen`."""
        return [*self.parameters(), *self.buffers(), *self.frozen]

    def forward(self, x1, x2=None, *, reversible: bool = False, meter: list | None = None):
        """``(y1, y2)`` after every block; ``x2`` None: both streams start as ``x1`` (Reformer duplicates its input).
        ``reversible``: through :class:`_Reversible` (only the output saved); otherwise ordinary autograd keeps every
        block's activations. ``meter`` (a list, reversible only): gets the bytes saved while each block is rebuilt in
        the backward, top block first."""
        x2 = x1 if x2 is None else x2
        if not reversible:
            for block in self.blocks:
                x1, x2 = block(x1, x2)
            return x1, x2
        params = [p for p in self.parameters() if p.requires_grad]
        return _Reversible.apply(x1, x2, self, meter, *params)

    def inverse(self, y1, y2) -> tuple[torch.Tensor, torch.Tensor]:
        """The stack's inputs from its outputs: every block's :meth:`ReversibleBlock.inverse`, top block first."""
        for block in reversed(self.blocks):
            y1, y2 = block.inverse(y1, y2)
        return y1, y2


def stack_from_model(model: Transformer, kind: str, depth: int) -> ReversibleStack:
    """``depth`` reversible blocks made of the model's own ``kind`` stack (``encoder`` or ``decoder``; the decoder of
    an encoder-decoder keeps its self-attention and FFN, not its cross-attention): block i uses layer ``i mod L``'s
    LayerNorm + self-attention as F (causal in a decoder, with the model's window, ALiBi or rotary terms) and its
    LayerNorm + FFN as G. The weights are the model's own tensors, shared, not copied."""
    if not isinstance(model, Transformer):
        raise TypeError(f"reversible blocks are built from a core.model.Transformer, not {type(model).__name__}")
    stack = model.encoder if kind == "encoder" else model.decoder
    if stack is None or not len(stack.layers):
        raise ValueError(f"this model has no {kind} layers")
    if depth < 1:
        raise ValueError("a reversible stack needs at least one block")

    def terms(t):
        return model.self_attention_terms(t, 0, model.device)

    blocks = []
    for i in range(depth):
        layer = stack.layers[i % len(stack.layers)]
        f = AttentionSublayer(layer.attn_res.norm, layer.self_attn, terms, causal=kind == "decoder")
        g = FeedForwardSublayer(None if layer.ffn is None else layer.ffn_res.norm, layer.ffn)
        blocks.append(ReversibleBlock(f, g))
    return ReversibleStack(blocks, frozen=[*model.parameters(), *model.buffers()])


def random_model(d_model: int = 32, n_heads: int = 4, n_layers: int = 2, *, d_ff: int | None = None,
                 causal: bool = False, pos_encoding: str = "sinusoidal", seed: int = 0,
                 dtype=torch.float32) -> Transformer:
    """A freshly initialised one-stack Transformer (decoder-only when ``causal``, else encoder-only; no dropout)
    whose LayerNorm weights and biases are drawn at random too, so that F and G are not near the identity's
    neighbours. What the tests and a page without a model of ours build reversible blocks from."""
    gen = torch.Generator().manual_seed(seed)
    cfg = ModelConfig(kind="decoder-only" if causal else "encoder-only", vocab_size=16, d_model=d_model,
                      n_heads=n_heads, n_encoder_layers=0 if causal else n_layers,
                      n_decoder_layers=n_layers if causal else 0, d_ff=d_ff or 4 * d_model, dropout=0.0,
                      max_len=512, pos_encoding=pos_encoding, activation="gelu")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Transformer(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.2 * torch.randn(p.shape, generator=gen))
    return model.to(dtype).eval()


def random_stack(depth: int, **kwargs) -> ReversibleStack:
    """:func:`stack_from_model` of a :func:`random_model` (``kwargs``: its settings) with ``depth`` blocks."""
    model = random_model(**kwargs)
    return stack_from_model(model, "decoder" if kwargs.get("causal") else "encoder", depth)


# ------------------------------------------------------------------ counting what autograd saves
class SavedActivations:
    """Context manager: every tensor autograd saves for backward while it is open (``saved_tensors_hooks``), counted
    by its storage — each storage once (q, k and v cut from one projection are one buffer), the storages of
    ``weights`` (parameters, buffers: kept in any case) left out. :attr:`bytes` is what the graph holds for the
    backward; deterministic, no allocator or clock involved."""

    def __init__(self, weights=()):
        self.skip = {w.untyped_storage().data_ptr() for w in weights}
        self.storages: dict[int, tuple[torch.Tensor, int]] = {}  # pointer -> (a tensor holding it alive, bytes)
        self._hooks = None

    def _pack(self, t: torch.Tensor):
        storage = t.untyped_storage()
        key = storage.data_ptr()
        if key not in self.skip and key not in self.storages:
            self.storages[key] = (t, storage.nbytes())  # held, so no later allocation can reuse the pointer
        return t

    def __enter__(self) -> "SavedActivations":
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._hooks.__exit__(*exc)

    @property
    def bytes(self) -> int:
        """Bytes of the distinct activation storages saved so far."""
        return sum(n for _, n in self.storages.values())


def saved_bytes(stack: ReversibleStack, x: torch.Tensor, *, reversible: bool) -> int:
    """Bytes of activations autograd keeps for the backward after ``stack``'s forward on ``x`` (both streams start
    as ``x``; it is made to require a gradient as in training), ordinary or reversible."""
    x = x.detach().clone().requires_grad_(True)
    with torch.enable_grad(), SavedActivations(stack.weights()) as counted:
        out = stack(x, reversible=reversible)
    del out
    return counted.bytes


def max_error(a: torch.Tensor, b: torch.Tensor) -> float:
    """``max |a − b|`` as a float."""
    return float((a - b).abs().max())


@torch.no_grad()
def reconstruction_error(stack: ReversibleStack, x: torch.Tensor) -> float:
    """``max |x − x̂|`` over both streams, where ``x̂`` is ``x`` run forward through every block and back through
    every inverse (0 in exact arithmetic; rounding grows with depth)."""
    y1, y2 = stack(x)
    x1, x2 = stack.inverse(y1, y2)
    return max(max_error(x1, x), max_error(x2, x))


def gradient_gap(stack: ReversibleStack, x: torch.Tensor, seed: int = 0) -> dict[str, float]:
    """The reversible backward against ordinary autograd on the same blocks: for the loss
    ``Σ r1·y1 + r2·y2`` (``r`` drawn with ``seed``), ``max |difference|`` of the gradient of the input (``input``)
    and of every parameter together (``parameters``), and the largest gradient entry (``scale``). Uses
    ``torch.autograd.grad``: no parameter's ``.grad`` is touched."""
    gen = torch.Generator().manual_seed(seed)
    r1, r2 = (torch.randn(x.shape, generator=gen, dtype=torch.float64).to(x) for _ in range(2))
    params = [p for p in stack.parameters() if p.requires_grad]
    grads = []
    for reversible in (False, True):
        xi = x.detach().clone().requires_grad_(True)
        with torch.enable_grad():
            y1, y2 = stack(xi, reversible=reversible)
            grads.append(torch.autograd.grad((y1 * r1).sum() + (y2 * r2).sum(), (xi, *params), allow_unused=True))
    (a, *pa), (b, *pb) = grads
    pairs = [(u, v) for u, v in zip(pa, pb) if u is not None or v is not None]
    for u, v in pairs:
        if u is None or v is None:
            return {"input": max_error(a, b), "parameters": float("inf"), "scale": float(a.abs().max())}
    return {"input": max_error(a, b), "parameters": max((max_error(u, v) for u, v in pairs), default=0.0),
            "scale": max([float(a.abs().max())] + [float(u.abs().max()) for u, _ in pairs])}


@dataclass
class ReversibleReport:
    """:func:`measure` on one input: per depth (``depths``), the activation bytes ordinary autograd and the reversible
    stack keep for the backward, the bytes one block's rebuild saves in the reversible backward (the most it holds
    besides the output), and ``max |x − x̂|`` after forward and inverse; the gradient check at the deepest stack;
    the input's largest entry (``scale``), its shape, the stack it came from, and the largest entry of any block's
    output (``output_scale``: float32 rounding in the inverse is relative to the streams' size, not the input's)."""
    depths: list[int]
    ordinary: list[int]
    reversible: list[int]
    rebuild: list[int]
    error: list[float]
    gradients: dict[str, float] = field(default_factory=dict)
    scale: float = 0.0
    shape: tuple = ()
    source: str = ""  # "model": the model's own layers; "random": a freshly initialised stack of the same width
    layers: int = 0  # the layers the blocks cycle through (block i uses layer i mod layers)
    output_scale: float = 0.0


def prefix(stack: ReversibleStack, depth: int) -> ReversibleStack:
    """The stack of ``stack``'s first ``depth`` blocks (the same modules, not copies)."""
    return ReversibleStack(list(stack.blocks[:depth]), stack.frozen)


def measure(stack: ReversibleStack, x: torch.Tensor, depths=None, source: str = "",
            layers: int = 0) -> ReversibleReport:
    """Count and check the first ``depth`` blocks of ``stack`` (:func:`prefix`) for each of ``depths`` (default: 1
    to all of them) on the input ``x`` ``[B, T, d_model]`` (both streams start as ``x``):

    - ``ordinary``: activation bytes ordinary autograd saves (one counted forward through the deepest prefix, read
      after each block: the first d blocks save exactly what the depth-d stack saves);
    - ``reversible``: bytes the reversible stack saves (:func:`saved_bytes`, each depth on its own);
    - ``rebuild``: the most bytes saved while one block is run again in the reversible backward (one metered
      backward through the deepest prefix, the largest over a prefix's blocks);
    - ``error``: :func:`reconstruction_error` of each prefix;
    - ``gradients``: :func:`gradient_gap` of the deepest prefix."""
    x = x.detach().clone()
    depths = [int(d) for d in (depths or range(1, len(stack.blocks) + 1))]
    top = max(depths)
    if top > len(stack.blocks) or min(depths) < 1:
        raise ValueError(f"depths must lie in 1..{len(stack.blocks)}")
    deepest = prefix(stack, top)
    xi = x.clone().requires_grad_(True)
    ordinary = []
    with torch.enable_grad(), SavedActivations(deepest.weights()) as counted:
        a, b = xi, xi
        for block in deepest.blocks:
            a, b = block(a, b)
            ordinary.append(counted.bytes)
    del a, b, counted
    meter: list[int] = []
    xi = x.clone().requires_grad_(True)
    with torch.enable_grad():
        y1, y2 = deepest(xi, reversible=True, meter=meter)
        torch.autograd.grad(y1.sum() + y2.sum(), xi)
    meter.reverse()  # bottom block first
    with torch.no_grad():
        outputs, a, b = [], x, x
        for block in deepest.blocks:
            a, b = block(a, b)
            outputs.append((a, b))
    error = []
    for d in depths:
        with torch.no_grad():
            x1, x2 = prefix(stack, d).inverse(*outputs[d - 1])
        error.append(max(max_error(x1, x), max_error(x2, x)))
    return ReversibleReport(depths, [ordinary[d - 1] for d in depths],
                            [saved_bytes(prefix(stack, d), x, reversible=True) for d in depths],
                            [max(meter[:d]) for d in depths], error, gradient_gap(deepest, x),
                            float(x.abs().max()), tuple(x.shape), source, layers,
                            max(float(t.abs().max()) for pair in outputs for t in pair))


def rebuild_bytes(stack: ReversibleStack, x: torch.Tensor) -> int:
    """The most activation bytes saved at once in the reversible backward besides the output: while one block is
    run again on its rebuilt inputs (the largest over the blocks; each block's graph is freed before the next)."""
    meter: list[int] = []
    xi = x.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        y1, y2 = stack(xi, reversible=True, meter=meter)
        torch.autograd.grad(y1.sum() + y2.sum(), xi)
    return max(meter)


DEPTHS = tuple(range(1, 9))  # the depths a model's report counts (its layers reused in turn past its own depth)


def model_report(model, x: torch.Tensor, kind: str, depths=DEPTHS) -> ReversibleReport:
    """:func:`measure` on ``x`` (a sentence's embeddings ``[1, T, d_model]``, the ``{kind}.embed.out`` of its trace)
    with blocks made of ``model``'s own ``kind`` layers (:func:`stack_from_model`, ``source`` "model"); a model
    that is not a :class:`~core.model.Transformer` with such layers gets a :func:`random_model` of the same width
    and two layers (``source`` "random", seed 0)."""
    x = x.detach().to(torch.float32)
    stack = getattr(model, "encoder" if kind == "encoder" else "decoder", None)
    if isinstance(model, Transformer) and stack is not None and len(stack.layers):
        x = x.to(model.device, next(model.parameters()).dtype)
        return measure(stack_from_model(model, kind, max(depths)), x, depths, "model", len(stack.layers))
    d = x.shape[-1]
    heads = next(h for h in (8, 4, 2, 1) if d % h == 0)
    fresh = random_model(d, heads, 2, causal=kind == "decoder")
    return measure(stack_from_model(fresh, "decoder" if kind == "decoder" else "encoder", max(depths)), x, depths,
                   "random", 2)
