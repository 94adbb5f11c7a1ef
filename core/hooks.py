"""One hook mechanism, keyed by the Trace's names: how a run records, ablates, patches and masks.

Every tensor the :class:`~core.trace.Trace` names (``encoder.0.self_attn.heads``,
``decoder.1.resid_post``, ``logits``, …; see :mod:`core.trace`) passes through a *hook point* in
the forward pass. A hook is a function ``fn(tensor, name) -> tensor | None`` registered for a name:
it may look at the tensor (return None) or replace it (return a tensor of the same shape), and the
run continues with what it returned. The Trace is the hook that keeps a copy of each; head
ablation (``model(..., ablate={"encoder.0.self_attn": [1]})``) is a hook on ``….heads`` that
multiplies a head by 0; activation patching (:mod:`core.probes.patch`) is a hook that writes another
run's values into chosen heads or positions. Names are checked against :func:`hook_names`.

The mask an attention applies is a hook point too, ``{attention}.mask``: the additive mask
(0 = may look, ``-inf`` = may not) as a ``[B, 1, Tq, Tk]`` tensor, padding, window and causal mask
folded in (what the Trace keeps under the same name). A hook that returns a mask replaces it; the
attention then applies exactly that mask (and no causal mask of its own). It may return
``[B, H, Tq, Tk]`` instead: one mask per head (:func:`core.probes.compress.span_hooks` cuts each head to its
own span). The mask is built only when a hook is registered at that point: without one the attention runs as
before.

Three ways to pass hooks (TransformerLens's ``run_with_hooks`` / ``hooks`` context)::

    model(src, tgt, hooks={"decoder.1.cross_attn.heads": fn})
    model.run_with_hooks(src, tgt, hooks={...})
    with model.hooks({...}):          # also reaches encode/decode, e.g. greedy decoding
        ...

and helpers that build the dicts for the common interventions: :func:`ablate` (heads off),
:func:`patch` (another run's values written in), :func:`mask` (a mask changed); merge several with
``{**a, **b}`` when they touch different points, or :func:`merge`. Decoding with an intervention is the
ordinary decoder under the context, e.g. ``with model.hooks(ablate(heads)): greedy_batch(model, src)``.

The context manager is per thread: another thread using the same (shared, cached) model is not
affected. Without hooks and without a trace the forward pass calls nothing at the hook points.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

import torch

from .masks import additive
from .trace import Trace

# what the Trace names under one attention ({stack}.L.self_attn / decoder.L.cross_attn) and one layer
ATTENTION_POINTS = ("q", "k", "v", "mask", "heads")
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

    def has(self, name: str) -> bool:
        """Is a function registered at exactly the hook point ``name`` (the Trace alone does not count)?"""
        return self.live and name in self.fns

    def point(self, name: str, tensor: torch.Tensor) -> torch.Tensor:
        """The tensor the pass continues with after every function registered at ``name``; the Trace records it."""
        if not self.live:
            return tensor
        for fn in self.fns.get(name, ()):
            new = fn(tensor, name)
            if new is not None:
                if new.shape != tensor.shape and not _per_head_mask(name, new, tensor):
                    raise ValueError(f"hook on {name} returned shape {tuple(new.shape)}, expected {tuple(tensor.shape)}")
                tensor = new
        if self.trace is not None:
            prefix, _, key = name.rpartition(".")
            self.trace.record(prefix, **{key: tensor})
        return tensor


NO_HOOKS = Hooks()


def _per_head_mask(name: str, new: torch.Tensor, old: torch.Tensor) -> bool:
    """A mask hook may return ``[B, H, Tq, Tk]`` for the ``[B, 1, Tq, Tk]`` it was given: one mask per head."""
    return (name.endswith(".mask") and new.dim() == 4 and old.shape[1] == 1
            and new.shape[:1] + new.shape[2:] == old.shape[:1] + old.shape[2:])


# ------------------------------------------------------------------ hook functions the core uses
def scale_heads(multipliers: torch.Tensor):
    """A ``….heads`` hook multiplying head h by ``multipliers[h]`` (ablation: 0 switches a head off)."""
    def fn(t, name):
        return t * multipliers.to(t.device, t.dtype)[None, :, None, None]
    return fn


# ------------------------------------------------------------------ interventions: hook dicts for model.hooks(...)
def merge(*fns: dict) -> dict[str, list]:
    """Several hook dicts as one (``{name: [fn, …]}``); functions at one point run in the order given."""
    out: dict[str, list] = {}
    for d in fns:
        for name, lst in _as_lists(d).items():
            out.setdefault(name, []).extend(lst)
    return out


def ablate(heads) -> dict[str, list]:
    """Hooks that switch ``heads`` off, for ``model.hooks(...)`` or ``hooks=``: ``[(attention name, head), …]``, or
    the ``{attention name: [head, …]}`` dict ``model(ablate=)`` takes.

    Each head's output (``{attention}.heads``, before W_O) is multiplied by 0 and the others by 1: the same
    numbers as ``model(..., ablate=…)``. Attention names are checked when the hooks are registered; a head
    number the model does not have raises ValueError at the first pass."""
    off = heads if isinstance(heads, dict) else as_ablation(heads)
    return {f"{name}.heads": [_switch_off(name, [int(h) for h in hs])] for name, hs in off.items()}


def _switch_off(attention: str, heads: list[int]):
    def fn(t, _name):
        n = t.shape[1]
        m = torch.ones(n, device=t.device, dtype=t.dtype)
        for h in heads:
            if not 0 <= h < n:
                raise ValueError(f"head {h} does not exist in {attention} (heads 0..{n - 1})")
            m[h] = 0.0
        return t * m[None, :, None, None]
    return fn


def _sequence_dim(point: str) -> int:
    """Which dimension of a hook point's tensor runs over positions (queries, for a mask)."""
    key = point.rsplit(".", 1)[-1]
    if key in ATTENTION_POINTS:
        return 2  # q, k, v, heads [B, H, T, d]; mask [B, 1, Tq, Tk]
    return 0 if key == "positions" else 1  # the position table [T, d]; every stream [B, T, d]


def patch(source, heads=None, points=None, positions=None) -> dict[str, list]:
    """Hooks that write another run's values into this one (activation patching), for ``model.hooks(...)`` or
    ``hooks=``.

    ``source``: the other run's tensors by hook-point name, a :class:`~core.trace.Trace`
    (``model(..., trace=True).trace``) or a dict ``{name: tensor}``. ``heads``: ``[(attention name, head), …]``
    whose outputs (``{attention}.heads``, before W_O) are taken from ``source``; ``points``: hook-point names
    (``"decoder.1.resid_post"``, ``"encoder.embed.out"``, …) taken from ``source`` whole. ``positions``: which
    positions are written (None: all, the two runs equally long); a list: the same positions in both runs; a
    dict ``{position here: position in source}`` pairs them when the runs differ. A source of batch 1 is written
    into every row of this run's batch."""
    if positions is None:
        here = there = slice(None)
    elif isinstance(positions, dict):
        here, there = (torch.tensor(list(v), dtype=torch.long) for v in (positions.keys(), positions.values()))
    else:
        here = there = torch.tensor(list(positions), dtype=torch.long)
    fns: dict[str, list] = {}
    for name, hs in (heads if isinstance(heads, dict) else as_ablation(heads or ())).items():
        point = f"{name}.heads"
        fns.setdefault(point, []).append(_writer(source[point], 2, hs, here, there))
    for point in points or ():
        fns.setdefault(point, []).append(_writer(source[point], _sequence_dim(point), None, here, there))
    return fns


def _writer(src: torch.Tensor, dim: int, heads, here, there):
    def at(pos, h=None):
        index = [slice(None)] * (dim + 1)
        index[dim] = pos
        if h is not None:
            index[1] = h
        return tuple(index)

    def fn(t, _name):
        out = t.clone()
        s = src.to(t.device, t.dtype)
        for h in heads if heads is not None else [None]:
            out[at(here, h)] = s[at(there, h)]
        return out
    return fn


def mask(names, fn_or_mask) -> dict[str, list]:
    """Hooks that change the mask of the attentions ``names`` (one or several: ``"encoder.0.self_attn"``, or the hook
    point itself, ``"encoder.0.self_attn.mask"``), for ``model.hooks(...)`` or ``hooks=``.

    ``fn_or_mask``: a function ``fn(mask, name) -> mask`` given the ``[B, 1, Tq, Tk]`` additive mask the attention
    would apply (causal mask included) and returning the one it applies instead; or a tensor added to that mask:
    an additive ``[T, T]`` table (0 / ``-inf``) or a boolean one (True = may look), indexed by absolute position:
    during cached decoding the rows of the current queries are used, keys beyond the table are left open
    (self-attention only: a cross-attention's query positions are unknown there). A tensor of another number of
    dimensions is added as it is (e.g. ``[1, 1, 1, Tk]`` to hide one key from every query)."""
    names = [names] if isinstance(names, str) else list(names)
    points = [n if n.endswith(".mask") else f"{n}.mask" for n in names]
    if callable(fn_or_mask):
        return {p: [fn_or_mask] for p in points}
    extra = fn_or_mask
    if extra.dtype == torch.bool:
        extra = additive(extra)
    if extra.dim() == 2:
        cross = [p for p in points if ".cross_attn." in p]
        if cross:
            raise ValueError(f"{cross[0]}: a [T, T] table applies to self-attention only; give a function or a mask "
                             "of shape [B, 1, Tq, Tk]")
    return {p: [_add_mask(extra)] for p in points}


def _add_mask(extra: torch.Tensor):
    def fn(m, _name):
        e = extra.to(m.device)
        if e.dim() == 2:  # rows past..past+Tq (the current queries), keys 0..Tk; beyond the table left open
            t_q, t_k = m.shape[-2:]
            past = t_k - t_q
            table = torch.zeros(t_q, t_k, dtype=torch.float32, device=m.device)
            part = e[past:past + t_q, :t_k]
            table[:part.shape[0], :part.shape[1]] = part
            e = table
        return m + e
    return fn
