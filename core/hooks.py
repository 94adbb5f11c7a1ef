"""One hook mechanism, keyed by the Trace's names: how a run records, ablates and patches.

Every tensor the :class:`~core.trace.Trace` names (``encoder.0.self_attn.heads``,
``decoder.1.resid_post``, ``logits``, …; see :mod:`core.trace`) passes through a *hook point* in
the forward pass. A hook is a function ``fn(tensor, name) -> tensor | None`` registered for a name:
it may look at the tensor (return None) or replace it (return a tensor of the same shape), and the
run continues with what it returned. The Trace is the hook that keeps a copy of each; head
ablation (``model(..., ablate={"encoder.0.self_attn": [1]})``) is a hook on ``….heads`` that
multiplies a head by 0; activation patching (:mod:`core.probes.patch`) is a hook that writes another
run's values into chosen heads or positions. Names are checked against :func:`hook_names`.

Three ways to pass hooks (TransformerLens's ``run_with_hooks`` / ``hooks`` context)::

    model(src, tgt, hooks={"decoder.1.cross_attn.heads": fn})
    model.run_with_hooks(src, tgt, hooks={...})
    with model.hooks({...}):          # also reaches encode/decode, e.g. greedy decoding
        ...

The context manager is per thread: another thread using the same (shared, cached) model is not
affected. Without hooks and without a trace the forward pass calls nothing at the hook points.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

import torch

from .trace import Trace

# what the Trace names under one attention ({stack}.L.self_attn / decoder.L.cross_attn) and one layer
ATTENTION_POINTS = ("q", "k", "v", "heads")
LAYER_POINTS = ("attn_out", "resid_mid", "ffn.act", "ffn_out", "resid_post")
CROSS_POINTS = ("cross_out", "resid_cross")
EMBED_POINTS = ("tokens", "positions", "out")

_local = threading.local()


Head = tuple[str, int]  # one head: (attention name, head index), e.g. ("decoder.1.cross_attn", 2)


def all_heads(model) -> list[Head]:
    """Every head of ``model``, attention by attention (:meth:`Transformer.attention_names` order)."""
    return [(name, h) for name in model.attention_names() for h in range(model.cfg.n_heads)]


def as_ablation(heads) -> dict[str, list[int]]:
    """Heads to switch off, ``[(attention name, head), …]``, as the ``ablate=`` dict every pass and decoder takes:
    ``{attention name: [head, …]}`` (heads in the order given)."""
    out: dict[str, list[int]] = {}
    for name, h in heads:
        out.setdefault(name, []).append(int(h))
    return out


def hook_names(model) -> list[str]:
    """Every hook point of a :class:`~core.model.Transformer`, in the order a forward pass reaches them."""
    names = []
    for stack in ("encoder", "decoder"):
        mod = getattr(model, stack, None)
        if mod is None:
            continue
        additive = model.embed.position_table() is not None  # RoPE / ALiBi / none add no position vectors
        names += [f"{stack}.embed.{p}" for p in EMBED_POINTS if additive or p != "positions"]
        for i, layer in enumerate(mod.layers):
            pre = f"{stack}.{i}"
            names += [f"{pre}.self_attn.{p}" for p in ATTENTION_POINTS] + [f"{pre}.attn_out", f"{pre}.resid_mid"]
            if hasattr(layer, "cross_attn"):
                names += [f"{pre}.cross_attn.{p}" for p in ATTENTION_POINTS] + [f"{pre}.{p}" for p in CROSS_POINTS]
            names += [f"{pre}.ffn.act", f"{pre}.ffn_out", f"{pre}.resid_post"]
        names.append(f"{stack}.output")
    return names + ["logits"]


def _as_lists(fns) -> dict[str, list]:
    out: dict[str, list] = {}
    for name, fn in (fns or {}).items():
        out.setdefault(name, []).extend(fn if isinstance(fn, (list, tuple)) else [fn])
    return out


def check(model, fns) -> None:
    """Raise ValueError for a hook name that is no hook point of ``model`` (a typo would otherwise do nothing)."""
    if not fns:
        return
    valid = set(hook_names(model))
    for name in fns:
        if name not in valid:
            close = sorted(n for n in valid if n.rsplit(".", 1)[0] == name.rsplit(".", 1)[0]) or sorted(valid)[:8]
            raise ValueError(f"no hook point {name!r}; e.g. {', '.join(close[:8])}")


def active(model) -> dict[str, list]:
    """Hooks registered for ``model`` by :func:`hooked` contexts of the calling thread (outermost first)."""
    merged: dict[str, list] = {}
    for owner, fns in getattr(_local, "stack", ()):
        if owner is model:
            for name, lst in fns.items():
                merged.setdefault(name, []).extend(lst)
    return merged


@contextmanager
def hooked(model, fns: dict):
    """Run every forward / encode / decode of ``model`` in this thread with ``fns`` ({name: fn or [fn, …]})."""
    check(model, fns)
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    entry = (model, _as_lists(fns))
    stack.append(entry)
    try:
        yield model
    finally:
        stack.remove(entry)


class Hooks:
    """What one pass calls at every hook point: the registered functions, then the Trace (if any) records.

    ``point(name, t)`` returns the tensor the pass continues with. ``live`` is False when there is
    nothing to call, so the fused path builds no names."""

    def __init__(self, fns: dict | None = None, trace: Trace | None = None):
        self.fns = _as_lists(fns)
        self.trace = trace
        self.live = bool(self.fns) or trace is not None

    @classmethod
    def of(cls, trace=None, fns=None) -> "Hooks":
        """A Hooks from a Trace, a Hooks (returned as is), or None."""
        if isinstance(trace, Hooks):
            return trace if not fns else cls({**trace.fns, **_as_lists(fns)}, trace.trace)
        if trace is None and not fns:
            return NO_HOOKS
        return cls(fns, trace)

    def wants(self, name: str) -> bool:
        """Does anything look at ``name`` (a hook point, or a prefix the Trace captures)?"""
        if not self.live:
            return False
        if self.trace is not None and self.trace.wants(name):
            return True
        return any(n == name or n.startswith(name + ".") for n in self.fns)

    def point(self, name: str, tensor: torch.Tensor) -> torch.Tensor:
        if not self.live:
            return tensor
        for fn in self.fns.get(name, ()):
            new = fn(tensor, name)
            if new is not None:
                if new.shape != tensor.shape:
                    raise ValueError(f"hook on {name} returned shape {tuple(new.shape)}, expected {tuple(tensor.shape)}")
                tensor = new
        if self.trace is not None:
            prefix, _, key = name.rpartition(".")
            self.trace.record(prefix, **{key: tensor})
        return tensor


NO_HOOKS = Hooks()


# ------------------------------------------------------------------ hook functions the core uses
def scale_heads(multipliers: torch.Tensor):
    """A ``….heads`` hook multiplying head h by ``multipliers[h]`` (ablation: 0 switches a head off)."""
    def fn(t, name):
        return t * multipliers.to(t.device, t.dtype)[None, :, None, None]
    return fn
