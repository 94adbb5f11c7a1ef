"""How many parameters a Transformer has, and where they sit.

* Our model: :meth:`core.config.ModelConfig.parameter_groups` gives the count by formula; :func:`meta_count` builds
  :class:`core.model.Transformer` on torch's ``meta`` device (shapes only, no memory) and sums ``numel``.
* Published shapes (:data:`FAMOUS`): GPT, BERT, GPT-2, GPT-3 and the base Transformer, each written as one of our own
  :class:`~core.config.ModelConfig` s, so both counts apply to them; :func:`differences` says what our other options
  (sinusoidal positions, an untied output layer, no biases, SwiGLU, one key/value head) would change.
* ALBERT (Lan et al. 2020): a factorised embedding (V·E + E·H instead of V·H) and one layer's weights used by every
  layer. :func:`albert_groups` counts it by formula; :func:`albertise` rebuilds one of our encoder-only models that
  way (a new instance: the Transformer class is unchanged), so :func:`meta_count` counts it too.
"""
from __future__ import annotations

import dataclasses

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from ..config import PARAMETER_GROUPS, ModelConfig, shapes_only
from ..model import Transformer

_GPT2 = dict(kind="decoder-only", vocab_size=50257, max_len=1024, pos_encoding="learned", norm="pre",
             activation="gelu", gelu_approximate="tanh", scale_embeddings=False, dropout=0.0)
_BERT = dict(kind="encoder-only", vocab_size=30522, max_len=512, pos_encoding="learned", norm="post",
             activation="gelu", type_vocab_size=2, embedding_norm=True, nsp=True, scale_embeddings=False,
             layer_norm_eps=1e-12, dropout=0.0)


def _shape(layers: int, d: int, heads: int, **rest) -> dict:
    """One published shape: ``layers`` blocks of width ``d`` with ``heads`` heads and d_ff = 4·d unless given."""
    out = dict(d_model=d, n_heads=heads, d_ff=4 * d, **rest)
    out["n_decoder_layers" if rest["kind"] == "decoder-only" else "n_encoder_layers"] = layers
    if rest["kind"] == "encoder-decoder":
        out["n_decoder_layers"] = layers
    return out


# name -> the ModelConfig fields of a published model: its sizes, learned or sinusoidal positions, norm placement,
# BERT's token types, embedding norm, MLM head and next-sentence head; the output layer tied to the token embedding
# in all of them (Vaswani et al. 2017 sec. 3.4; GPT; BERT; GPT-2).
FAMOUS: dict[str, dict] = {
    "Transformer base": _shape(6, 512, 8, kind="encoder-decoder", vocab_size=37000, max_len=512,
                               pos_encoding="sinusoidal", dropout=0.0),
    "GPT": _shape(12, 768, 12, kind="decoder-only", vocab_size=40478, max_len=512, pos_encoding="learned",
                  norm="post", activation="gelu", scale_embeddings=False, dropout=0.0),
    "BERT-base": _shape(12, 768, 12, **_BERT),
    "BERT-large": _shape(24, 1024, 16, **_BERT),
    "GPT-2 small": _shape(12, 768, 12, **_GPT2),
    "GPT-2 medium": _shape(24, 1024, 16, **_GPT2),
    "GPT-2 large": _shape(36, 1280, 20, **_GPT2),
    "GPT-2 XL": _shape(48, 1600, 25, **_GPT2),
    "GPT-3": _shape(96, 12288, 96, **{**_GPT2, "max_len": 2048}),
}
# What the seed text says of these sizes (S0 section 6), to set beside our counts.
SEED_SAYS = {"GPT": 110e6, "BERT-large": 340e6, "GPT-2 XL": 1.5e9, "GPT-3": 175e9}

# ALBERT's shapes (Lan et al. 2020, table 1): vocabulary 30,000, embedding size E = 128, BERT's positions, token types
# and heads; each beside the BERT of the same width and depth (with ALBERT's vocabulary, so that only the two ideas
# differ).
ALBERT_EMBEDDING = 128
ALBERT: dict[str, dict] = {
    "base": _shape(12, 768, 12, **{**_BERT, "vocab_size": 30000}),
    "large": _shape(24, 1024, 16, **{**_BERT, "vocab_size": 30000}),
    "xlarge": _shape(24, 2048, 16, **{**_BERT, "vocab_size": 30000}),
    "xxlarge": _shape(12, 4096, 64, **{**_BERT, "vocab_size": 30000}),
}


def config(fields: dict) -> ModelConfig:
    """A :class:`ModelConfig` of any size (e.g. GPT-3's), for counting only: the memory ceiling is not applied."""
    with shapes_only():
        return ModelConfig(**fields)


def famous(name: str) -> ModelConfig:
    """The config of the published model ``name`` (a key of :data:`FAMOUS`)."""
    if name not in FAMOUS:
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(FAMOUS)}")
    return config(FAMOUS[name])


def albertise(model: Transformer, embedding_dim: int | None = None, shared: bool = False) -> Transformer:
    """Turn ``model`` (a freshly built encoder-only Transformer, e.g. on the meta device) into ALBERT's layout, in
    place, and return it. ``embedding_dim`` E: token, position and type tables of width E, their LayerNorm over E,
    then one E -> d_model projection after the embedding dropout; the MLM head maps d_model -> E, normalises over E
    and reads the vocabulary off the same V×E table. ``shared``: every encoder layer is the first one (one set of
    weights applied L times). Only this instance changes."""
    cfg = model.cfg
    if cfg.kind != "encoder-only":
        raise ValueError("ALBERT's changes apply to an encoder-only (BERT-style) model")
    if shared:
        first = model.encoder.layers[0]
        model.encoder.layers = nn.ModuleList([first] * cfg.n_encoder_layers)
    if embedding_dim is not None:
        e, d, dev = int(embedding_dim), cfg.d_model, model.device
        if not 1 <= e <= d:
            raise ValueError(f"the embedding size must be between 1 and d_model ({d}), got {embedding_dim}")
        emb = model.embed

        def norm(width):
            return nn.LayerNorm(width, eps=cfg.layer_norm_eps, bias=cfg.bias, device=dev)

        emb.tokens = nn.Embedding(cfg.vocab_size, e, device=dev)
        if cfg.pos_encoding == "learned":
            emb.positions = nn.Embedding(cfg.max_len, e, device=dev)
        if emb.token_types is not None:
            emb.token_types = nn.Embedding(cfg.type_vocab_size, e, device=dev)
        if emb.norm is not None:
            emb.norm = norm(e)
        emb.drop = nn.Sequential(emb.drop, nn.Linear(e, d, device=dev))
        model.mlm_dense = nn.Linear(d, e, device=dev)
        model.mlm_norm = norm(e)
        model.lm_head = nn.Linear(e, cfg.vocab_size, bias=True, device=dev)
        if cfg.tie_embeddings:
            model.lm_head.weight = emb.tokens.weight
    return model


class _NoFill(TorchFunctionMode):
    """Skips the initial random fill of meta tensors (they hold no values). torch fills a meta tensor through its
    reference implementations, whose first call imports torch._dynamo: seconds, and memory the app does not need."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        target = args[0] if args else kwargs.get("tensor")
        if (getattr(func, "__module__", None) == "torch.nn.init" or getattr(func, "__name__", "") in (
                "normal_", "uniform_")) and isinstance(target, torch.Tensor) and target.is_meta:
            return target
        return func(*args, **kwargs)


def meta_count(cfg: ModelConfig, embedding_dim: int | None = None, shared: bool = False) -> int:
    """``sum(p.numel())`` over the distinct parameters of ``Transformer(cfg)`` built on torch's meta device (no
    memory, no initial values), optionally in ALBERT's layout (:func:`albertise`): GPT-2 small's shape in a few
    hundredths of a second, GPT-3's in a few tenths (its 96 layers of modules). Sinusoidal and rotary tables are
    buffers, not parameters: the model is built without them (``pos_encoding="none"``; on the meta device their
    ``arange`` would import torch._dynamo too); the real-model tests show they change no count."""
    if cfg.pos_encoding in ("sinusoidal", "rope"):
        with shapes_only():
            cfg = dataclasses.replace(cfg, pos_encoding="none")
    with shapes_only(), torch.device("meta"), _NoFill():
        model = Transformer(cfg)
        if embedding_dim is not None or shared:
            albertise(model, embedding_dim, shared)
    return sum(p.numel() for p in model.parameters())


def albert_groups(cfg: ModelConfig, embedding_dim: int | None = None, shared: bool = False) -> dict[str, int]:
    """:meth:`ModelConfig.parameter_groups` of an encoder-only ``cfg`` with ALBERT's changes, by formula.

    Factorised (E = ``embedding_dim``, H = d_model, R = V + positions + token types table rows): the embedding tables
    hold R·E instead of R·H, plus the E·H + H projection; the embedding and MLM LayerNorms are over E; the MLM dense
    layer is H·E + E instead of H·H + H (and an untied output layer V·E). Shared: the L layers' attention,
    feed-forward and LayerNorm weights are counted once."""
    if cfg.kind != "encoder-only":
        raise ValueError("ALBERT's changes apply to an encoder-only (BERT-style) model")
    g = cfg.parameter_groups()
    h, n_layers, b = cfg.d_model, cfg.n_encoder_layers, int(cfg.bias)
    if shared:
        per_layer_norms = (1 if cfg.attention_only else 2) * (1 + b) * h
        g["attention"] //= n_layers
        g["feed-forward"] //= n_layers
        g["layer norms"] -= (n_layers - 1) * per_layer_norms
    if embedding_dim is not None:
        e = int(embedding_dim)
        rows = g["embeddings"] // h
        g["embeddings"] = rows * e + e * h + h
        g["layer norms"] -= (1 + int(cfg.embedding_norm)) * (1 + b) * (h - e)  # MLM norm, embedding norm
        g["output head"] -= (h * h + h) - (h * e + e) + (0 if cfg.tie_embeddings else cfg.vocab_size * (h - e))
    return g


def albert_rows() -> list[dict]:
    """For each ALBERT shape: the BERT of that shape, with the factorised embedding, and with shared layers too
    (= ALBERT), by formula; and the attention and feed-forward weights a token passes through (the layers are still
    applied L times, so sharing saves memory, not computation)."""
    rows = []
    for name, fields in ALBERT.items():
        cfg = config(fields)
        full = albert_groups(cfg)
        rows.append({"shape": name, "layers": cfg.n_encoder_layers, "d_model": cfg.d_model,
                     "bert": sum(full.values()),
                     "factorised": sum(albert_groups(cfg, ALBERT_EMBEDDING).values()),
                     "albert": sum(albert_groups(cfg, ALBERT_EMBEDDING, shared=True).values()),
                     "per_token": full["attention"] + full["feed-forward"]})
    return rows


def differences(cfg: ModelConfig) -> list[dict]:
    """What our other options would change in ``cfg``'s count, by formula: each row the option, the new count and
    the difference (new − ``cfg``'s). Options that ``cfg`` already uses are left out."""
    base = cfg.estimated_parameters()
    options = []
    if cfg.pos_encoding == "learned":
        options.append(("sinusoidal positions instead of learned ones", dict(pos_encoding="sinusoidal")))
    if cfg.tie_embeddings:
        options.append(("an output layer of its own (not tied to the token embedding)", dict(tie_embeddings=False)))
    if cfg.bias:
        options.append(("no biases in the linear layers and LayerNorms", dict(bias=False)))
    if cfg.activation != "swiglu" and not cfg.attention_only:
        options.append(("SwiGLU feed-forward at the same d_ff (a third weight matrix)", dict(activation="swiglu")))
    if cfg.kv_heads > 1:
        options.append(("one key/value head shared by all heads (multi-query)", dict(n_kv_heads=1)))
    rows = []
    with shapes_only():
        for what, change in options:
            n = dataclasses.replace(cfg, **change).estimated_parameters()
            rows.append({"change": what, "parameters": n, "difference": n - base})
    return rows


def group_shares(groups: dict[str, int]) -> dict[str, float]:
    """Each group's share of the total, in :data:`~core.config.PARAMETER_GROUPS` order."""
    total = sum(groups.values())
    return {k: groups.get(k, 0) / total if total else 0.0 for k in PARAMETER_GROUPS}
