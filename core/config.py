"""One configuration object describes every model the lab can build.

Three kinds come out of the same code: ``encoder-decoder`` (translation, as in
Vaswani et al. 2017), ``decoder-only`` (a causal language model, GPT style) and
``encoder-only`` (BERT style, bidirectional, with a masked-LM head).
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
import numbers
import os
from dataclasses import dataclass

KINDS = ("encoder-decoder", "decoder-only", "encoder-only")
POSITIONAL = ("sinusoidal", "learned", "rope", "alibi", "none")
NORMS = ("post", "pre")
ACTIVATIONS = ("relu", "gelu", "swiglu")
GELU_APPROXIMATIONS = ("none", "tanh")

# Every field's type and range. A config is read from files anyone can edit (a user model's config.json), so each
# field is checked before anything is allocated: a float where an int belongs, a string outside its choices,
# 10,000 layers or max_len 4,000,000 are refused in one line.
INT_RANGES = {  # name: (lowest, highest)
    "vocab_size": (1, 2 ** 21), "d_model": (1, 2 ** 14), "n_heads": (1, 1024), "n_kv_heads": (1, 1024),
    "n_encoder_layers": (0, 256), "n_decoder_layers": (0, 256), "d_ff": (1, 2 ** 17), "max_len": (1, 2 ** 16),
    "window": (1, 2 ** 16), "type_vocab_size": (0, 1024), "pad_id": (0, 2 ** 21),
}
OPTIONAL = ("n_kv_heads", "window", "final_norm")  # may be None
BOOLS = ("final_norm", "bias", "tie_embeddings", "scale_embeddings", "embedding_norm", "nsp", "attention_only")
CHOICES = {"kind": KINDS, "pos_encoding": POSITIONAL, "norm": NORMS, "activation": ACTIVATIONS,
           "gelu_approximate": GELU_APPROXIMATIONS}
# A model's estimated memory (parameters and position tables, with the float64 scratch that builds them) must stay
# under this ceiling; ATTENTION_LAB_MAX_MODEL_BYTES raises it on a machine meant for bigger models.
DEFAULT_MAX_MODEL_BYTES = 2 * 2 ** 30
# Inside shapes_only() the ceiling is not applied: a config there only describes a shape (GPT-3's) to count by formula
# or to build on torch's meta device, where no memory is allocated.
_SHAPES_ONLY = contextvars.ContextVar("shapes_only", default=False)
# The groups of ModelConfig.parameter_groups, in the order charts stack them.
PARAMETER_GROUPS = ("embeddings", "attention", "feed-forward", "layer norms", "output head")


@contextlib.contextmanager
def shapes_only():
    """Within this block (this thread or task only) a config may describe a model of any size: for counting its
    parameters by formula or on torch's meta device. Never allocate real weights inside it."""
    token = _SHAPES_ONLY.set(True)
    try:
        yield
    finally:
        _SHAPES_ONLY.reset(token)


def max_model_bytes() -> int:
    """The model-size ceiling in bytes: ``ATTENTION_LAB_MAX_MODEL_BYTES`` when it is a plain number of up to
    19 digits, else :data:`DEFAULT_MAX_MODEL_BYTES` (2 GiB)."""
    raw = os.environ.get("ATTENTION_LAB_MAX_MODEL_BYTES", "")
    return int(raw) if raw.isascii() and raw.isdigit() and 0 < len(raw) < 20 else DEFAULT_MAX_MODEL_BYTES


@dataclass
class ModelConfig:
    """Every setting of a model: kind, sizes, positions, normalisation, attention window and BERT extras;
    numpy numbers become plain Python ones and every field is checked on creation (:meth:`validate`)."""
    kind: str = "encoder-decoder"
    vocab_size: int = 1000
    d_model: int = 128
    n_heads: int = 4
    n_kv_heads: int | None = None  # None = n_heads (MHA); 1 = MQA; otherwise GQA
    n_encoder_layers: int = 2
    n_decoder_layers: int = 2
    d_ff: int = 512
    dropout: float = 0.1
    max_len: int = 128
    pos_encoding: str = "sinusoidal"
    pe_base: float = 10000.0
    norm: str = "post"  # "post" (original paper) or "pre" (GPT-2 style)
    final_norm: bool | None = None  # None: a final LayerNorm exactly when norm == "pre"
    activation: str = "relu"
    window: int | None = None  # sliding window: query i sees keys j with |i - j| < window
    layer_norm_eps: float = 1e-5
    bias: bool = True  # False: no bias in any Linear or LayerNorm (torch.nn.Transformer's bias=False)
    tie_embeddings: bool = True
    scale_embeddings: bool = True  # multiply token embeddings by sqrt(d_model) (paper, sec. 3.4)
    embedding_norm: bool = False  # BERT: LayerNorm right after the embedding sum
    type_vocab_size: int = 0  # BERT token-type (segment) embeddings; 0 = none
    nsp: bool = False  # BERT's next-sentence head: pooler (dense, tanh) on position 0, then two classes
    pad_id: int = 0
    gelu_approximate: str = "none"
    attention_only: bool = False  # no feed-forward sublayer (Elhage et al. 2021; Olsson et al. 2022's induction models)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # numpy integers and the like become plain Python numbers
            v = getattr(self, f.name)
            if isinstance(v, numbers.Integral) and not isinstance(v, (bool, int)):
                setattr(self, f.name, int(v))
            elif isinstance(v, numbers.Real) and not isinstance(v, (bool, int, float, numbers.Integral)):
                setattr(self, f.name, float(v))
        self.validate()

    @property
    def kv_heads(self) -> int:
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def use_final_norm(self) -> bool:
        return self.norm == "pre" if self.final_norm is None else self.final_norm

    @property
    def has_encoder(self) -> bool:
        return self.kind in ("encoder-decoder", "encoder-only")

    @property
    def has_decoder(self) -> bool:
        return self.kind in ("encoder-decoder", "decoder-only")

    def validate(self) -> None:
        def need(ok: bool, msg: str) -> None:
            if not ok:
                raise ValueError(msg)

        self._check_types()
        need(self.kind in KINDS, f"unknown model kind {self.kind!r}; choose one of {', '.join(KINDS)}")
        need(self.pos_encoding in POSITIONAL,
             f"unknown positional encoding {self.pos_encoding!r}; choose one of {', '.join(POSITIONAL)}")
        need(self.norm in NORMS, f"unknown norm placement {self.norm!r}; choose 'post' or 'pre'")
        need(self.activation in ACTIVATIONS,
             f"unknown activation {self.activation!r}; choose one of {', '.join(ACTIVATIONS)}")
        need(self.gelu_approximate in GELU_APPROXIMATIONS,
             f"unknown gelu_approximate {self.gelu_approximate!r}; choose 'none' or 'tanh'")
        for name in ("vocab_size", "d_model", "n_heads", "d_ff", "max_len"):
            need(getattr(self, name) > 0, f"{name} must be a positive integer, got {getattr(self, name)!r}")
        for name, (lo, hi) in INT_RANGES.items():
            v = getattr(self, name)
            need(v is None or lo <= v <= hi, f"{name} must be between {lo:,} and {hi:,}, got {v}")
        need(0.0 < self.layer_norm_eps < 1.0, f"layer_norm_eps must be in (0, 1), got {self.layer_norm_eps}")
        need(self.pe_base <= 1e12, f"pe_base must be at most 1e12, got {self.pe_base}")
        need(self.d_model % self.n_heads == 0,
             f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        need(self.kv_heads > 0, f"n_kv_heads must be positive, got {self.n_kv_heads}")
        need(self.n_heads % self.kv_heads == 0,
             f"n_kv_heads ({self.kv_heads}) must divide n_heads ({self.n_heads})")
        need(self.pos_encoding != "rope" or self.d_head % 2 == 0,
             f"RoPE needs an even head dimension, got d_model/n_heads = {self.d_head}")
        need(self.pos_encoding not in ("sinusoidal",) or self.d_model % 2 == 0,
             f"sinusoidal encoding needs an even d_model, got {self.d_model}")
        need(0.0 <= self.dropout < 1.0, f"dropout must be in [0, 1), got {self.dropout}")
        need(self.window is None or self.window >= 1, f"window must be >= 1, got {self.window}")
        need(self.pe_base > 1.0, f"pe_base must be > 1, got {self.pe_base}")
        if self.has_encoder:
            need(self.n_encoder_layers >= 1, "an encoder needs at least one layer")
        if self.has_decoder:
            need(self.n_decoder_layers >= 1, "a decoder needs at least one layer")
        need(0 <= self.pad_id < self.vocab_size, f"pad_id {self.pad_id} outside the vocabulary")
        need(not self.nsp or (self.kind == "encoder-only" and self.type_vocab_size >= 2),
             "a next-sentence head needs an encoder-only model with two or more token types")
        limit = max_model_bytes()
        need(_SHAPES_ONLY.get() or self.estimated_bytes() <= limit,
             f"this model would need about {self.estimated_bytes() / 2 ** 20:,.0f} MiB "
             f"({self.estimated_parameters():,} parameters plus position tables); the limit is "
             f"{limit / 2 ** 20:,.0f} MiB (ATTENTION_LAB_MAX_MODEL_BYTES)")

    def _check_types(self) -> None:
        """Every field has its type: ints are ints (not floats, not booleans), booleans are booleans, numbers are
        finite, choices are strings."""
        for f in dataclasses.fields(self):
            v, name = getattr(self, f.name), f.name
            if v is None and name in OPTIONAL:
                continue
            if name in BOOLS:
                ok, want = isinstance(v, bool), "true or false"
            elif name in INT_RANGES:
                ok, want = isinstance(v, int) and not isinstance(v, bool), "an integer"
            elif name in CHOICES:
                ok, want = isinstance(v, str), "one of " + ", ".join(CHOICES[name])
            else:  # dropout, pe_base, layer_norm_eps
                ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                want = "a finite number"
            if not ok:
                raise ValueError(f"{name} must be {want}, got {v!r}"[:200])

    def estimated_parameters(self) -> int:
        """The parameter count :class:`core.model.Transformer` will allocate, from the config alone."""
        return sum(self.parameter_groups().values())

    def parameter_groups(self) -> dict[str, int]:
        """Where the parameters of :class:`core.model.Transformer` sit, by formula (keys :data:`PARAMETER_GROUPS`).

        With d = d_model, h heads and g key/value heads of size d_h, b = 1 with biases (else 0):

        * embeddings: V·d token table (shared with the output layer when tied), plus max_len·d learned positions and
          one d-vector per token type;
        * attention: each self- or cross-attention (d + b)·(h + 2g)·d_h for W_Q, W_K, W_V and (h·d_h + b)·d for W_O;
        * feed-forward: d·w + b·w + d_ff·d + b·d per layer, w = d_ff (2·d_ff for SwiGLU's gate and up halves);
        * layer norms: (1 + b)·d each: one per sublayer, the final ones (pre-norm), BERT's embedding and MLM norms;
        * output head: the untied V·d output matrix; BERT's MLM dense layer and output bias, pooler, next-sentence
          layer.
        """
        d, h, g, dh, b = self.d_model, self.n_heads, self.kv_heads, self.d_head, int(self.bias)
        norm = (1 + b) * d  # LayerNorm's gain, and its bias unless bias=False (as torch.nn's layers read the flag)
        enc, dec = self.n_layers("encoder"), self.n_layers("decoder")
        cross = dec if self.kind == "encoder-decoder" else 0
        width = 2 * self.d_ff if self.activation == "swiglu" else self.d_ff
        ffn_layers = 0 if self.attention_only else enc + dec
        n_norms = (enc + dec) + ffn_layers + cross + (int(self.has_encoder) + int(self.has_decoder)) * int(
            self.use_final_norm) + int(self.embedding_norm) + int(self.kind == "encoder-only")
        head = 0 if self.tie_embeddings else self.vocab_size * d
        if self.kind == "encoder-only":  # MLM dense layer (always with a bias) and the output bias
            head += d * d + d + self.vocab_size
        if self.nsp:  # pooler and the two-way next-sentence layer
            head += d * d + d + 2 * d + 2
        return {"embeddings": (self.vocab_size + (self.max_len if self.pos_encoding == "learned" else 0)
                               + self.type_vocab_size) * d,
                "attention": (enc + dec + cross) * ((d + b) * (h + 2 * g) * dh + (h * dh + b) * d),
                "feed-forward": ffn_layers * (d * width + b * width + self.d_ff * d + b * d),
                "layer norms": n_norms * norm,
                "output head": head}

    def estimated_bytes(self) -> int:
        """Bytes to build the model: float32 parameters, plus the position tables (sinusoidal or rotary) and the
        float64 scratch they are computed in."""
        tables = 0
        if self.pos_encoding == "sinusoidal":
            tables = self.max_len * self.d_model * (4 + 8 + 8)
        elif self.pos_encoding == "rope":
            tables = self.max_len * (self.d_model // self.n_heads) * 2 * (4 + 8 + 8)
        return 4 * self.estimated_parameters() + tables

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "ModelConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown config field(s): {', '.join(unknown)}")
        return cls(**data)

    def n_layers(self, stack: str) -> int:
        """Layers of a stack: ``encoder`` or ``decoder``."""
        if stack == "encoder":
            return self.n_encoder_layers if self.has_encoder else 0
        return self.n_decoder_layers if self.has_decoder else 0
