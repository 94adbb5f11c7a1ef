"""The Transformer of Vaswani et al. (2017) and its two halves, built from one ``ModelConfig``.

* ``encoder-decoder``: translation; encoder self-attention, masked decoder self-attention,
  cross-attention (sec. 3.1).
* ``decoder-only``: a causal language model (GPT): decoder layers without cross-attention.
* ``encoder-only``: BERT: bidirectional encoder with a masked-LM head.

``model(src, tgt)`` runs the fused path and keeps nothing; ``model(src, tgt, trace=True)``
returns every intermediate tensor in ``Output.trace`` (attention maps computed when first read).
Every traced tensor is also a hook point (:mod:`core.hooks`): ``model(src, tgt, hooks={name: fn})``
reads or replaces it; the Trace, head ablation (``ablate=``) and patching (:mod:`core.probes.patch`) all
go through those points.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .attention import MultiHeadAttention
from .config import ModelConfig
from .dropout import Dropout
from .hooks import NO_HOOKS, Hooks, active, check, scale_heads
from .masks import alibi_bias, combine, padding_mask, window_mask
from .positional import rope_cache, sinusoidal
from .trace import Trace


@dataclass
class Output:
    """A forward pass's results: ``logits [B, T, vocab]``, the last stack's output ``hidden [B, T, d_model]``,
    the encoder ``memory``, the trace when asked, and next-sentence logits ``[B, 2]`` (``cfg.nsp``)."""
    logits: torch.Tensor
    hidden: torch.Tensor  # last stack's output
    memory: torch.Tensor | None = None  # encoder output (encoder-decoder)
    trace: Trace | None = None
    next_sentence: torch.Tensor | None = None  # [B, 2] IsNext / NotNext logits (encoder-only with cfg.nsp)


class Embeddings(nn.Module):
    """Token embedding ×√d_model (sec. 3.4) plus positional encoding (sec. 3.5)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.tokens = nn.Embedding(cfg.vocab_size, cfg.d_model)
        nn.init.normal_(self.tokens.weight, std=cfg.d_model ** -0.5 if cfg.scale_embeddings else 0.02)
        self.scale = math.sqrt(cfg.d_model) if cfg.scale_embeddings else 1.0
        if cfg.pos_encoding == "learned":
            self.positions = nn.Embedding(cfg.max_len, cfg.d_model)
            nn.init.normal_(self.positions.weight, std=0.02)
        elif cfg.pos_encoding == "sinusoidal":
            self.register_buffer("pe", sinusoidal(cfg.max_len, cfg.d_model, cfg.pe_base), persistent=False)
        self.token_types = nn.Embedding(cfg.type_vocab_size, cfg.d_model) if cfg.type_vocab_size else None
        self.norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps, bias=cfg.bias) if cfg.embedding_norm else None
        self.drop = Dropout(cfg.dropout)

    def position_table(self) -> torch.Tensor | None:
        """The additive positional term for every position ``[max_len, d_model]`` (None for RoPE/ALiBi/none)."""
        if self.cfg.pos_encoding == "learned":
            return self.positions.weight
        if self.cfg.pos_encoding == "sinusoidal":
            return self.pe
        return None

    def forward(self, ids, *, start=0, token_types=None, trace=None, name=""):
        hooks = Hooks.of(trace)  # hook points name.tokens, name.positions, name.out
        x = self.tokens(ids)
        if self.scale != 1.0:
            x = x * self.scale
        x = hooks.point(f"{name}.tokens", x)
        table = self.position_table()
        pos = None if table is None else table[start:start + ids.shape[1]]
        if pos is not None:
            pos = hooks.point(f"{name}.positions", pos)
        out = x if pos is None else x + pos
        if self.token_types is not None:
            out = out + self.token_types(torch.zeros_like(ids) if token_types is None else token_types)
        if self.norm is not None:
            out = self.norm(out)
        return self.drop(hooks.point(f"{name}.out", out))


class FeedForward(nn.Module):
    """FFN(x) = act(x W_1 + b_1) W_2 + b_2 (sec. 3.3); SwiGLU: (swish(x W_1) ⊙ x W_3) W_2.

    No dropout inside: the paper drops out each sub-layer's output (sec. 5.4, done by ``Residual``), not
    the hidden activation (which nn.Transformer and the Annotated Transformer drop as well); on CPU that
    extra mask over B·T·d_ff values cost our decoder-only model ~20 % of its training throughput.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.activation = cfg.activation
        self.approximate = cfg.gelu_approximate
        width = 2 * cfg.d_ff if cfg.activation == "swiglu" else cfg.d_ff
        self.w1 = nn.Linear(cfg.d_model, width, bias=cfg.bias)
        self.w2 = nn.Linear(cfg.d_ff, cfg.d_model, bias=cfg.bias)

    def forward(self, x, trace=None, name=""):
        h = self.w1(x)
        if self.activation == "relu":
            a = F.relu(h)
        elif self.activation == "gelu":
            a = F.gelu(h, approximate=self.approximate)
        else:
            gate, up = h.chunk(2, dim=-1)
            a = F.silu(gate) * up
        if trace is not None:
            a = Hooks.of(trace).point(f"{name}.act", a)
        return self.w2(a)


class Residual(nn.Module):
    """Residual connection around a sublayer with LayerNorm after (post-LN, the paper:
    ``LayerNorm(x + Sublayer(x))``) or before (pre-LN: ``x + Sublayer(LayerNorm(x))``)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.pre = cfg.norm == "pre"
        self.norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps, bias=cfg.bias)
        self.drop = Dropout(cfg.dropout)

    def forward(self, x, sublayer, hooks=NO_HOOKS, out="", stream=""):
        """``(stream after, sublayer output)``; ``out`` / ``stream`` name their hook points."""
        y = self.drop(sublayer(self.norm(x) if self.pre else x))
        if hooks.live:
            y = hooks.point(out, y)
        z = x + y if self.pre else self.norm(x + y)
        return (hooks.point(stream, z) if hooks.live else z), y


class EncoderLayer(nn.Module):
    """Self-attention + FFN. Also the decoder-only (GPT) block, with a causal mask."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.kv_heads, bias=cfg.bias, dropout=cfg.dropout)
        self.attn_res = Residual(cfg)
        # attention-only (cfg.attention_only): no FFN; its hook points still exist (zero width / zero output), so
        # every view of a layer reads the same names
        self.ffn = None if cfg.attention_only else FeedForward(cfg)
        self.ffn_res = None if cfg.attention_only else Residual(cfg)

    def forward(self, x, ctx, name, cache=None):
        return self.feed_forward(self.self_attention(x, ctx, name, cache), ctx.hooks, name)

    def self_attention(self, x, ctx, name, cache=None):
        """The (masked) self-attention sublayer with its residual connection."""
        hk = ctx.hooks
        x, _ = self.attn_res(x, lambda h: self.self_attn(h, trace=hk, name=f"{name}.self_attn", cache=cache,
                                                         **ctx.self_kwargs()), hk, f"{name}.attn_out", f"{name}.resid_mid")
        return x

    def feed_forward(self, x, hk, name):
        """The FFN sublayer with its residual connection (the identity in an attention-only model)."""
        if self.ffn is None:
            if hk.live:
                hk.point(f"{name}.ffn.act", x.new_zeros(*x.shape[:-1], 0))
                x = hk.point(f"{name}.resid_post", x + hk.point(f"{name}.ffn_out", torch.zeros_like(x)))
            return x
        x, _ = self.ffn_res(x, lambda h: self.ffn(h, hk if hk.live else None, f"{name}.ffn"),
                            hk, f"{name}.ffn_out", f"{name}.resid_post")
        return x


class DecoderLayer(EncoderLayer):
    """Masked self-attention, cross-attention to the encoder output, FFN (sec. 3.1)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__(cfg)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.kv_heads, bias=cfg.bias, dropout=cfg.dropout)
        self.cross_res = Residual(cfg)

    def forward(self, x, ctx, name, cache=None):
        hk = ctx.hooks
        x = self.self_attention(x, ctx, name, None if cache is None else cache["self"])
        x, _ = self.cross_res(x, lambda h: self.cross_attn(
            h, ctx.memory, mask=ctx.cross_mask, trace=hk, name=f"{name}.cross_attn",
            cache=None if cache is None else cache["cross"]), hk, f"{name}.cross_out", f"{name}.resid_cross")
        return self.feed_forward(x, hk, name)


class RunContext:
    """What one pass through a stack needs besides x: masks, biases, rotary tables, and the
    :class:`~core.hooks.Hooks` (trace, ablation, patching) called at every hook point."""

    def __init__(self, hooks, mask=None, causal=False, bias=None, rope=None, memory=None, cross_mask=None):
        self.hooks = Hooks.of(hooks)
        self.mask, self.causal, self.bias, self.rope = mask, causal, bias, rope
        self.memory, self.cross_mask = memory, cross_mask

    def self_kwargs(self):
        return dict(mask=self.mask, bias=self.bias, is_causal=self.causal, rope=self.rope)


class Stack(nn.Module):
    """``n_layers`` layers of ``layer_cls`` run in order, then a final LayerNorm where the config asks for one."""
    def __init__(self, cfg: ModelConfig, layer_cls, n_layers: int):
        super().__init__()
        self.layers = nn.ModuleList(layer_cls(cfg) for _ in range(n_layers))
        self.norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps, bias=cfg.bias) if cfg.use_final_norm else None

    def forward(self, x, ctx, name, caches=None):
        for i, layer in enumerate(self.layers):
            x = layer(x, ctx, f"{name}.{i}", None if caches is None else caches[i])
        if self.norm is not None:
            x = self.norm(x)
        return x


class Transformer(nn.Module):
    """The encoder-decoder, decoder-only or encoder-only Transformer of a :class:`ModelConfig`; traced,
    ablated or hooked through :meth:`forward`'s keyword arguments."""
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        cfg.validate()
        self.cfg = cfg
        self.embed = Embeddings(cfg)
        self.encoder = Stack(cfg, EncoderLayer, cfg.n_encoder_layers) if cfg.has_encoder else None
        if cfg.kind == "encoder-decoder":
            self.decoder = Stack(cfg, DecoderLayer, cfg.n_decoder_layers)
        elif cfg.kind == "decoder-only":
            self.decoder = Stack(cfg, EncoderLayer, cfg.n_decoder_layers)
        else:
            self.decoder = None
        if cfg.kind == "encoder-only":  # BERT's masked-LM head: dense, activation, LayerNorm, vocabulary
            self.mlm_dense = nn.Linear(cfg.d_model, cfg.d_model)
            self.mlm_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps, bias=cfg.bias)
        if cfg.nsp:  # BERT's next-sentence prediction: pooler on the first token, IsNext / NotNext
            self.pooler = nn.Linear(cfg.d_model, cfg.d_model)
            self.nsp_head = nn.Linear(cfg.d_model, 2)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=cfg.kind == "encoder-only")
        if cfg.tie_embeddings:
            self.lm_head.weight = self.embed.tokens.weight
        if cfg.pos_encoding == "rope":
            cos, sin = rope_cache(cfg.max_len, cfg.d_head, cfg.pe_base)
            self.register_buffer("rope_cos", cos, persistent=False)
            self.register_buffer("rope_sin", sin, persistent=False)

    # ----------------------------------------------------------------- helpers
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    @property
    def device(self) -> torch.device:
        """Where the weights live (inputs go there)."""
        return self.embed.tokens.weight.device

    @property
    def max_positions(self) -> int:
        """Positions this model reads: ``cfg.max_len``, or fewer where the app bounds the work of one request
        (``position_limit``, set by :func:`core.io.budget.limit_positions`)."""
        limit = getattr(self, "position_limit", None)
        return self.cfg.max_len if limit is None else min(limit, self.cfg.max_len)

    def _check(self, ids, what, start=0):
        if ids is None:
            raise ValueError(f"{what} is required for a {self.cfg.kind} model")
        if ids.dim() != 2:
            raise ValueError(f"{what} must be a [batch, length] tensor of token ids, got shape {tuple(ids.shape)}")
        if ids.shape[1] == 0:
            raise ValueError(f"{what} is empty: give at least one token")
        if start + ids.shape[1] > self.max_positions:
            raise ValueError(f"{what} has {start + ids.shape[1]} positions; this model's maximum is {self.max_positions}"
                             + ("" if self.max_positions == self.cfg.max_len else " here (the memory budget per request)"))
        if not self.training and ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.cfg.vocab_size):
            raise ValueError(f"{what} holds token ids outside the vocabulary (size {self.cfg.vocab_size})")

    def ablation_masks(self, ablate):
        """``{"decoder.1.cross_attn": [0, 2]}`` -> per-attention head multipliers (1 keep, 0 off)."""
        if not ablate:
            return None
        masks = {}
        valid = self.attention_names()
        for name, heads in ablate.items():
            if torch.is_tensor(heads):  # already converted
                masks[name] = heads
                continue
            if name not in valid:
                raise ValueError(f"cannot ablate {name!r}: no such attention; choose from {', '.join(valid)}")
            m = torch.ones(self.cfg.n_heads, device=self.device)
            for h in heads:
                if not 0 <= int(h) < self.cfg.n_heads:
                    raise ValueError(f"head {h} does not exist in {name} (heads 0..{self.cfg.n_heads - 1})")
                m[int(h)] = 0.0
            masks[name] = m
        return masks

    def _hooks(self, trace, ablate, hooks) -> Hooks:
        """One pass's :class:`~core.hooks.Hooks`: ablation first, then this thread's :meth:`hooks`
        contexts, then ``hooks``; the Trace records what they leave. A Hooks passed as ``trace`` is used as is."""
        if isinstance(trace, Hooks):
            return trace
        check(self, hooks)
        fns: dict[str, list] = {}
        for name, m in (self.ablation_masks(ablate) or {}).items():
            fns.setdefault(f"{name}.heads", []).append(scale_heads(m))
        for source in (active(self), hooks or {}):
            for name, fn in source.items():
                fns.setdefault(name, []).extend(fn if isinstance(fn, (list, tuple)) else [fn])
        return Hooks.of(trace, fns)

    def hooks(self, fns: dict):
        """Context manager: every pass of this model in this thread calls ``fns`` ({hook name: fn}) —
        forward, and encode/decode too (greedy decoding). See :mod:`core.hooks`."""
        from .hooks import hooked
        return hooked(self, fns)

    def hook_names(self) -> list[str]:
        from .hooks import hook_names
        return hook_names(self)

    def run_with_hooks(self, *args, hooks: dict | None = None, **kwargs) -> "Output":
        """``forward`` with ``hooks`` = {hook name: fn(tensor, name) -> tensor or None}."""
        return self(*args, hooks=hooks, **kwargs)

    def attention_names(self) -> list[str]:
        names = []
        for stack, mod in (("encoder", self.encoder), ("decoder", self.decoder)):
            for i, layer in enumerate(mod.layers if mod is not None else []):
                names.append(f"{stack}.{i}.self_attn")
                if isinstance(layer, DecoderLayer):
                    names.append(f"{stack}.{i}.cross_attn")
        return names

    def self_attention_terms(self, t, start, device):
        """Window mask, ALiBi bias and rotary tables shared by every layer of a stack."""
        cfg = self.cfg
        win = None if cfg.window is None else window_mask(t, cfg.window, t + start, start, device)
        bias = alibi_bias(cfg.n_heads, t, t + start, start, device) if cfg.pos_encoding == "alibi" else None
        rope = None
        if cfg.pos_encoding == "rope":
            rope = (self.rope_cos[start:start + t], self.rope_sin[start:start + t])
        return win, bias, rope

    @staticmethod
    def _as_trace(trace):
        if trace is True:
            return Trace()
        return trace or None

    # ----------------------------------------------------------------- passes
    def encode(self, src, *, start=0, token_types=None, trace=None, ablate=None, hooks=None):
        """Encoder stack: returns (memory ``[B, Ts, d]``, key-padding bool ``[B, Ts]`` or None). ``start``: the
        position of the first token (0; another only to show what positions do, core.probes.positions.shift_test)."""
        self._check(src, "src", start)
        if start and (self.cfg.window is not None or self.cfg.pos_encoding == "alibi"):
            raise ValueError("an encoder pass from a later position is defined for added and rotary positions only")
        hk = self._hooks(trace, ablate, hooks)
        pad = src.eq(self.cfg.pad_id)
        pad = pad if bool(pad.any()) else None
        win, bias, rope = self.self_attention_terms(src.shape[1], start, src.device)
        mask = combine(None if pad is None else padding_mask(pad), win)
        ctx = RunContext(hk, mask=mask, bias=bias, rope=rope)
        x = self.embed(src, start=start, token_types=token_types, trace=hk, name="encoder.embed")
        x = hk.point("encoder.output", self.encoder(x, ctx, "encoder"))
        return x, pad

    def decode(self, tgt, memory=None, src_pad=None, *, start=0, caches=None, trace=None, ablate=None, hooks=None):
        """Decoder stack (causal). ``caches``/``start`` for incremental decoding with a KV cache."""
        self._check(tgt, "tgt", start)
        hk = self._hooks(trace, ablate, hooks)
        win, bias, rope = self.self_attention_terms(tgt.shape[1], start, tgt.device)
        cross_mask = None if src_pad is None else padding_mask(src_pad)
        ctx = RunContext(hk, mask=win, causal=True, bias=bias, rope=rope, memory=memory, cross_mask=cross_mask)
        x = self.embed(tgt, start=start, trace=hk, name="decoder.embed")
        return hk.point("decoder.output", self.decoder(x, ctx, "decoder", caches))

    def project(self, hidden):
        """Final linear layer to vocabulary logits (BERT: through the MLM transform first)."""
        if self.cfg.kind == "encoder-only":
            h = self.mlm_dense(hidden)
            h = F.gelu(h, approximate=self.cfg.gelu_approximate) if self.cfg.activation != "relu" else F.relu(h)
            hidden = self.mlm_norm(h)
        return self.lm_head(hidden)

    def next_sentence_logits(self, hidden):
        """``[B, 2]`` logits (IsNext, NotNext) from the encoder output at the first position (BERT's [CLS];
        here [BOS])."""
        if not self.cfg.nsp:
            raise ValueError("this model has no next-sentence head")
        return self.nsp_head(torch.tanh(self.pooler(hidden[:, 0])))

    def new_caches(self):
        """Empty KV caches, one per decoder layer, for :meth:`decode` with ``start``."""
        if self.cfg.kind == "encoder-decoder":
            return [{"self": {}, "cross": {}} for _ in self.decoder.layers]
        return [{} for _ in self.decoder.layers]

    def forward(self, src=None, tgt=None, *, token_types=None, trace=False, ablate=None, hooks=None) -> Output:
        """Encoder-decoder: ``model(src, tgt)``; decoder-only: ``model(ids)``; encoder-only: ``model(ids)``.

        ``trace``: True (or a :class:`Trace` to fill, e.g. ``Trace(layers={0})``) captures everything.
        ``ablate``: ``{"encoder.0.self_attn": [1, 3]}`` switches those heads off for this run.
        ``hooks``: ``{"decoder.1.cross_attn.heads": fn}``, see :mod:`core.hooks`.
        """
        tr = self._as_trace(trace)
        hk = self._hooks(tr, ablate, hooks)  # validated once, reused by both stacks
        memory = None
        if self.cfg.kind == "decoder-only":
            hidden = self.decode(src if tgt is None else tgt, trace=hk)
        elif self.cfg.kind == "encoder-only":
            hidden, _ = self.encode(src, token_types=token_types, trace=hk)
        else:
            self._check(tgt, "tgt")
            memory, pad = self.encode(src, trace=hk)
            hidden = self.decode(tgt, memory, pad, trace=hk)
        logits = hk.point("logits", self.project(hidden))
        nsp = self.next_sentence_logits(hidden) if self.cfg.nsp else None
        return Output(logits, hidden, memory, tr, nsp)
