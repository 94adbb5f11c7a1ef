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
"""
from __future__ import annotations

import torch

KIND_NAMES = {"encoder": "encoder.{}.self_attn", "decoder": "decoder.{}.self_attn", "cross": "decoder.{}.cross_attn"}


class Trace:
    """Collects tensors during a forward pass; ``layers`` limits which layers are captured."""

    def __init__(self, layers=None):
        self.layers = None if layers is None else set(layers)
        self.tensors: dict[str, torch.Tensor] = {}

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

    def __getitem__(self, name: str) -> torch.Tensor:
        try:
            return self.tensors[name]
        except KeyError:
            raise KeyError(f"{name!r} was not traced; available: {', '.join(sorted(self.tensors)[:12])} ...") from None

    def __contains__(self, name: str) -> bool:
        return name in self.tensors

    def keys(self):
        return self.tensors.keys()

    @property
    def logits(self) -> torch.Tensor:
        return self["logits"]

    def kinds(self) -> list[str]:
        """Attention kinds present, in the order encoder, decoder, cross."""
        return [k for k in KIND_NAMES if self.layer_indices(k)]

    def layer_indices(self, kind: str) -> list[int]:
        stack = KIND_NAMES[kind].split(".")[0]
        sub = KIND_NAMES[kind].split(".")[-1]
        found = {int(n.split(".")[1]) for n in self.tensors
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
        self.tensors = {k: v.to(device) for k, v in self.tensors.items()}
        return self

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.tensors.values())
