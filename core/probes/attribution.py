"""Attributions beyond raw attention weights, read from one traced run.

* **Value-weighted attention** (Kobayashi et al. 2020, "Attention is not only a weight"): what head h
  adds to query i from key j is ``α_ij · v_j W_O^h`` (v including its bias); its size
  ``‖α_ij · v_j W_O^h‖ = α_ij ‖v_j W_O^h‖`` says how much the link moves the output. A weight of 0.6 on a
  token whose transformed value is tiny moves little.
* **Gradient × input** (Shrikumar et al. 2017; Denil et al. 2014): ``Σ_d ∂f/∂e_jd · e_jd`` for each
  source token's embedding ``e_j`` (the encoder's ``embed.out`` hook point) and a scalar ``f``, here the
  pronoun decision of :mod:`core.probes.patch` (log p(A's pronoun) − log p(B's pronoun)).
"""
from __future__ import annotations

import torch

from ..trace import KIND_NAMES, Trace


def _module(model, name: str):
    stack, layer, sub = name.split(".")
    return getattr(getattr(model, stack).layers[int(layer)], sub)


def value_norms(model, trace: Trace, name: str) -> torch.Tensor:
    """``‖v_j W_O^h‖`` for every head and key: ``[B, H, Tk]`` (attention ``name``, e.g. ``decoder.1.cross_attn``)."""
    mha = _module(model, name)
    v = trace[f"{name}.v"].float()  # [B, G, Tk, d_head]
    h, g, d = mha.n_heads, v.shape[1], mha.d_head
    if g != h:
        v = v.repeat_interleave(h // g, dim=1)
    w_o = mha.out.weight.detach().float().cpu().T.reshape(h, d, -1)  # [H, d_head, d_model]: head h's rows of W_O
    return torch.einsum("bhtd,hde->bhte", v.cpu(), w_o).norm(dim=-1)


def value_weighted(model, trace: Trace, kind: str, layer: int) -> torch.Tensor:
    """``α_ij ‖v_j W_O^h‖`` for one attention kind (``encoder``, ``decoder``, ``cross``) and layer: ``[B, H, Tq, Tk]``."""
    name = KIND_NAMES[kind].format(layer)
    return trace[f"{name}.weights"].float().cpu() * value_norms(model, trace, name)[:, :, None, :]


def stacked_value_weighted(model, trace: Trace, kind: str) -> torch.Tensor:
    """All layers of one kind: ``[L, B, H, Tq, Tk]`` (like :meth:`Trace.stacked`)."""
    return torch.stack([value_weighted(model, trace, kind, i) for i in trace.layer_indices(kind)])


def gradient_x_input(model, src: list[int], dec: list[int], tok_a: int, tok_b: int) -> torch.Tensor:
    """Gradient × input of the decision ``logit(tok_a) − logit(tok_b)`` at the last decoder position, per
    source token (``[Ts]``): captured and differentiated at the ``encoder.embed.out`` hook point. The
    model's parameters get no gradient (``torch.autograd.grad`` on the embedding only)."""
    dev = model.device
    held = {}

    def grab(t, _name):
        held["x"] = t.detach().requires_grad_(True)
        return held["x"]

    with torch.enable_grad():
        logits = model(torch.tensor([src], device=dev), torch.tensor([dec], device=dev),
                       hooks={"encoder.embed.out": grab}).logits
        z = logits[0, -1].float()
        (grad,) = torch.autograd.grad(z[tok_a] - z[tok_b], [held["x"]])
    return (grad * held["x"].detach())[0].sum(-1).float().cpu()


ENGLISH_PRONOUNS = ("it", "they", "them", "he", "she")


@torch.no_grad()
def _traced(model, src, dec) -> Trace:
    dev = model.device
    return model(torch.tensor([src], device=dev), torch.tensor([dec], device=dev), trace=True).trace.to("cpu")


def decision_attributions(ck, a, b, heads: list[tuple[str, int]]) -> dict:
    """For sentence A of a pair (:class:`core.probes.patch.Sentence`) and each named head ``(attention name, head)``:
    where it looks from its query (cross and decoder self-attention: the decision position, whose next token
    is the pronoun; encoder self-attention: the English pronoun), as attention weights and as value-weighted
    attention, both as shares of their row; and gradient × input of the decision per source token.

    Returns ``{"heads": [{name, head, kind, query, keys, weights, value_weighted}], "grad_x_input":
    {tokens, values}}``; a head's ``weights`` is None when its query token is not found."""
    from .patch import prepare, row_label
    model = ck.model
    s = prepare(ck, a, b)
    tr = _traced(model, s.src_a, s.dec_a)
    out = []
    for name, h in heads:
        stack, layer, sub = name.split(".")
        kind = "cross" if sub == "cross_attn" else stack
        vw = value_weighted(model, tr, kind, int(layer))[0, h]
        w = tr[f"{name}.weights"][0, h].float()
        keys = s.dec_tokens if kind == "decoder" else s.src_tokens_a
        if kind == "encoder":
            q = next((i for i, t in enumerate(s.src_tokens_a) if t.lower().lstrip("▁") in ENGLISH_PRONOUNS), None)
            query = None if q is None else s.src_tokens_a[q]
        else:
            q, query = len(s.dec_a) - 1, s.dec_tokens[-1]
        share = (lambda row: row / row.sum().clamp_min(1e-12))  # noqa: E731
        out.append({"name": name, "head": h, "label": f"{row_label(name)} H{h}", "kind": kind, "query": query,
                    "keys": keys, "weights": None if q is None else share(w[q]),
                    "value_weighted": None if q is None else share(vw[q])})
    gxi = gradient_x_input(model, s.src_a, s.dec_a, s.tok_a, s.tok_b)
    return {"heads": out, "grad_x_input": {"tokens": s.src_tokens_a, "values": gxi}}
