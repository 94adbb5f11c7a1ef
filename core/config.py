"""One configuration object describes every model the lab can build.

Three kinds come out of the same code: ``encoder-decoder`` (translation, as in
Vaswani et al. 2017), ``decoder-only`` (a causal language model, GPT style) and
``encoder-only`` (BERT style, bidirectional, with a masked-LM head).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

KINDS = ("encoder-decoder", "decoder-only", "encoder-only")
POSITIONAL = ("sinusoidal", "learned", "rope", "alibi", "none")
NORMS = ("post", "pre")
ACTIVATIONS = ("relu", "gelu", "swiglu")


@dataclass
class ModelConfig:
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
    bias: bool = True
    tie_embeddings: bool = True
    scale_embeddings: bool = True  # multiply token embeddings by sqrt(d_model) (paper, sec. 3.4)
    embedding_norm: bool = False  # BERT: LayerNorm right after the embedding sum
    type_vocab_size: int = 0  # BERT token-type (segment) embeddings; 0 = none
    nsp: bool = False  # BERT's next-sentence head: pooler (dense, tanh) on position 0, then two classes
    pad_id: int = 0
    gelu_approximate: str = "none"

    def __post_init__(self) -> None:
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

        need(self.kind in KINDS, f"unknown model kind {self.kind!r}; choose one of {', '.join(KINDS)}")
        need(self.pos_encoding in POSITIONAL,
             f"unknown positional encoding {self.pos_encoding!r}; choose one of {', '.join(POSITIONAL)}")
        need(self.norm in NORMS, f"unknown norm placement {self.norm!r}; choose 'post' or 'pre'")
        need(self.activation in ACTIVATIONS,
             f"unknown activation {self.activation!r}; choose one of {', '.join(ACTIVATIONS)}")
        for name in ("vocab_size", "d_model", "n_heads", "d_ff", "max_len"):
            need(int(getattr(self, name)) > 0, f"{name} must be a positive integer, got {getattr(self, name)!r}")
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
