"""The Trace: every intermediate tensor of one forward pass, under a stable dotted name.

Names (``L`` = layer index, stacks are ``encoder`` and ``decoder``)::

    {stack}.embed.tokens / .positions / .out      token embedding (scaled), positional term, their sum
    {stack}.L.self_attn.{q,k,v,scores,bias,mask,weights,heads}
    decoder.L.cross_attn.{q,k,v,scores,mask,weights,heads}
    {stack}.L.attn_out, .resid_mid              self-attention sublayer output, residual stream after it
    decoder.L.cross_out, .resid_cross           cross-attention sublayer output, residual stream after it
    {stack}.L.ffn.act, .ffn_out, .resid_post    FFN hidden activations, FFN output, stream after the layer
    {stack}.output                              stack output (after the final LayerNorm if any)
    logits

``q`` is ``[B, H, Tq, d_head]``, ``k``/``v`` ``[B, G, Tk, d_head]`` (G = key/value heads),
``scores`` (QKᵀ/√d_k) and ``weights`` ``[B, H, Tq, Tk]``; ``mask`` is the additive mask that was
added, broadcastable to the scores. Attention kinds: ``encoder`` (encoder self-attention),
``decoder`` (decoder self-attention), ``cross`` (decoder → encoder).

Every name except the attention maps (``scores``, ``weights``, ``bias``) is also a hook point
(:mod:`core.hooks`): the Trace is the hook that keeps a copy of each; ablation and patching replace them. ``mask`` is
both: the Trace computes it lazily when a page asks, and a hook registered at ``….mask`` (:func:`core.hooks.mask`)
receives the full ``[B, 1, Tq, Tk]`` mask and may replace it (built only when such a hook exists).
"""
from __future__ import annotations

import threading

import torch

KIND_NAMES = {"encoder": "encoder.{}.self_attn", "decoder": "decoder.{}.self_attn", "cross": "decoder.{}.cross_attn"}


class Trace:
    """Collects tensors during a forward pass; ``layers`` limits which layers are captured.

    Attention maps are *deferred*: the forward pass registers how to compute a layer's scores, mask
    and weights (:meth:`defer`), and the first read of any of them computes all three once. Reading
    behaves exactly as if they had been stored; :meth:`materialize` computes every pending map.
    """

    def __init__(self, layers=None):
        self.layers = None if layers is None else set(layers)
        self.tensors: dict[str, torch.Tensor] = {}
        self._pending: dict[str, object] = {}  # full name -> the function that computes it and its siblings
        self._lock = threading.Lock()  # a cached trace can be read by several sessions at once

    def wants(self, name: str) -> bool:
        if self.layers is None:
            return True
        parts = name.split(".")
        return len(parts) < 2 or not parts[1].isdigit() or int(parts[1]) in self.layers

    def record(self, prefix: str, **tensors) -> None:
        if not self.wants(prefix):
            return
        for key, value in tensors.items():
            self.tensors[f"{prefix}.{key}" if prefix else key] = value.detach()

    def defer(self, prefix: str, keys, compute) -> None:
        """Register ``prefix.key`` for each of ``keys``, filled by ``compute()`` (a dict by key) when first read."""
        if not self.wants(prefix):
            return
        entry = (prefix, compute)  # one object shared by the keys, so one read settles them all
        for key in keys:
            self._pending[f"{prefix}.{key}" if prefix else key] = entry

    def _resolve(self, name: str) -> None:
        with self._lock:
            entry = self._pending.get(name)
            if entry is None:
                return
            prefix, compute = entry
            self.record(prefix, **compute())
            for key in [n for n, e in self._pending.items() if e is entry]:
                del self._pending[key]

    def materialize(self) -> "Trace":
        """Compute every deferred map now (what a forward pass that stored all of them would have done)."""
        while self._pending:
            self._resolve(next(iter(self._pending)))
        return self

    def __getitem__(self, name: str) -> torch.Tensor:
        if name in self._pending:
            self._resolve(name)
        try:
            return self.tensors[name]
        except KeyError:
            raise KeyError(f"{name!r} was not traced; available: {', '.join(sorted(self.keys())[:12])} ...") from None

    def __contains__(self, name: str) -> bool:
        return name in self.tensors or name in self._pending

    def keys(self):
        return self.tensors.keys() | self._pending.keys()

    @property
    def logits(self) -> torch.Tensor:
        return self["logits"]

    def kinds(self) -> list[str]:
        """Attention kinds present, in the order encoder, decoder, cross."""
        return [k for k in KIND_NAMES if self.layer_indices(k)]

    def layer_indices(self, kind: str) -> list[int]:
        stack = KIND_NAMES[kind].split(".")[0]
        sub = KIND_NAMES[kind].split(".")[-1]
        found = {int(n.split(".")[1]) for n in self.keys()
                 if n.startswith(stack + ".") and n.endswith(f".{sub}.weights")}
        return sorted(found)

    def n_layers(self, kind: str) -> int:
        return len(self.layer_indices(kind))

    def attention(self, kind: str, layer: int, what: str = "weights") -> torch.Tensor:
        """``[B, H, Tq, Tk]`` weights (or ``scores``) of one attention kind and layer."""
        if kind not in KIND_NAMES:
            raise ValueError(f"unknown attention kind {kind!r}; choose one of {', '.join(KIND_NAMES)}")
        return self[f"{KIND_NAMES[kind].format(layer)}.{what}"]

    def stacked(self, kind: str, what: str = "weights") -> torch.Tensor:
        """All layers of one kind: ``[L, B, H, Tq, Tk]``."""
        return torch.stack([self.attention(kind, i, what) for i in self.layer_indices(kind)])

    def to(self, device) -> "Trace":
        self.materialize()
        self.tensors = {k: v.to(device) for k, v in self.tensors.items()}
        return self

    def nbytes(self) -> int:
        """Bytes held now (deferred maps count once they have been read or materialized)."""
        return sum(t.numel() * t.element_size() for t in list(self.tensors.values()))
