"""Tokenizers built with Hugging Face's ``tokenizers`` library, one convention everywhere.

Special tokens sit at fixed ids: ``[PAD]=0 [UNK]=1 [BOS]=2 [EOS]=3 [MASK]=4``. Words are marked
with a leading ``▁`` (so spaces survive a round trip) and punctuation is split off, so
``decode(encode(x)) == x`` for text in the tokenizer's normal form (whitespace collapsed).
"""
from __future__ import annotations

import json
import unicodedata
from pathlib import Path

from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

SPECIALS = ["[PAD]", "[UNK]", "[BOS]", "[EOS]", "[MASK]"]
PAD, UNK, BOS, EOS, MASK = range(5)
KINDS = ("bpe", "wordpiece", "word", "bytebpe")  # bytebpe: byte-level BPE (GPT-2's scheme), never [UNK]


def normalize_text(text: str) -> str:
    """The normal form every tokenizer here sees: NFC, control characters dropped, whitespace collapsed."""
    text = unicodedata.normalize("NFC", text)
    text = "".join(" " if ch.isspace() else ch for ch in text if ch.isspace() or unicodedata.category(ch)[0] != "C")
    return " ".join(text.split())


def _pre_tokenizer():
    return pre_tokenizers.Sequence([pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always"),
                                    pre_tokenizers.Punctuation(behavior="isolated")])


class VocabLookup:
    """Id ↔ token lookups over a Hugging Face tokenizer ``self.hf`` (ours and BERT's share them)."""

    def id_to_token(self, i: int) -> str:
        return self.hf.id_to_token(int(i)) or "[UNK]"

    def token_to_id(self, tok: str) -> int | None:
        return self.hf.token_to_id(tok)


class Tokenizer(VocabLookup):
    """Wraps a ``tokenizers.Tokenizer``; ids exclude specials unless asked."""

    def __init__(self, hf: HFTokenizer):
        self.hf = hf
        self.byte_level = isinstance(hf.pre_tokenizer, pre_tokenizers.ByteLevel)
        for i, tok in enumerate(SPECIALS):
            if hf.token_to_id(tok) != i:
                raise ValueError(f"tokenizer must map {tok} to id {i}, found {hf.token_to_id(tok)}")

    # ------------------------------------------------------------ building
    @classmethod
    def train(cls, texts, kind: str = "bpe", vocab_size: int = 1000, min_frequency: int = 1) -> "Tokenizer":
        """Train a BPE, WordPiece, word-level or byte-level BPE tokenizer on an iterable of strings.

        ``bytebpe`` (Radford et al. 2019, sec. 2.2): BPE over the 256 byte values, so every text encodes without
        ``[UNK]``; a word's first piece carries the space before it (shown ``Ġ`` in the raw vocabulary)."""
        if kind not in KINDS:
            raise ValueError(f"unknown tokenizer kind {kind!r}; choose one of {', '.join(KINDS)}")
        texts = [normalize_text(t) for t in texts]
        if not any(texts):
            raise ValueError("cannot train a tokenizer on an empty corpus")
        if kind == "bytebpe":
            hf = HFTokenizer(models.BPE())
            hf.normalizer = normalizers.NFC()
            hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
            hf.decoder = decoders.ByteLevel()
            hf.train_from_iterator(texts, trainers.BpeTrainer(
                vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=SPECIALS,
                initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
            return cls(hf)
        if kind == "bpe":
            model = models.BPE(unk_token="[UNK]")
            trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=SPECIALS)
        elif kind == "wordpiece":
            model = models.WordPiece(unk_token="[UNK]", continuing_subword_prefix="##")
            trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                                special_tokens=SPECIALS, continuing_subword_prefix="##")
        else:
            model = models.WordLevel(unk_token="[UNK]")
            trainer = trainers.WordLevelTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=SPECIALS)
        hf = HFTokenizer(model)
        hf.normalizer = normalizers.NFC()
        hf.pre_tokenizer = _pre_tokenizer()
        hf.decoder = (decoders.Sequence([decoders.Replace("##", ""),
                                         decoders.Metaspace(replacement="▁", prepend_scheme="always")])
                      if kind == "wordpiece" else decoders.Metaspace(replacement="▁", prepend_scheme="always"))
        hf.train_from_iterator(texts, trainer)
        return cls(hf)

    @classmethod
    def from_symbols(cls, symbols) -> "Tokenizer":
        """A fixed word-level vocabulary (for the synthetic copy / reverse / sort tasks)."""
        vocab = {tok: i for i, tok in enumerate(SPECIALS)}
        for s in symbols:
            vocab.setdefault(f"▁{s}", len(vocab))
        hf = HFTokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
        hf.pre_tokenizer = _pre_tokenizer()
        hf.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
        return cls(hf)

    # ------------------------------------------------------------ files
    @classmethod
    def load(cls, path) -> "Tokenizer":
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
            json.loads(text)
            return cls(HFTokenizer.from_str(text))
        except FileNotFoundError:
            raise ValueError(f"no tokenizer file at {path}") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"{path.name} is not a valid tokenizer.json ({e.__class__.__name__})") from None
        except Exception as e:  # the Rust library raises plain Exceptions
            raise ValueError(f"{path.name} is not a valid tokenizer.json: {e}") from None

    def to_str(self) -> str:
        return self.hf.to_str()

    def save(self, path) -> None:
        Path(path).write_text(self.to_str(), encoding="utf-8")

    # ------------------------------------------------------------ use
    @property
    def vocab_size(self) -> int:
        return self.hf.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        return self.hf.encode(normalize_text(text), add_special_tokens=False).ids

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """``encode`` of many texts at once (the library's parallel batch encoder)."""
        return [e.ids for e in self.hf.encode_batch([normalize_text(t) for t in texts], add_special_tokens=False)]

    def frame(self, ids: list[int]) -> list[int]:
        """The ids an encoder-only model reads for one sentence (BERT adds [CLS] … [SEP]; ours adds nothing)."""
        return list(ids)

    def decode(self, ids, skip_special: bool = True) -> str:
        ids = [int(i) for i in ids if not (skip_special and int(i) < len(SPECIALS))]
        return self.hf.decode(ids, skip_special_tokens=False).strip()

    def display(self, ids) -> list[str]:
        """Token strings for figures: the word marker ``▁`` dropped, specials kept as ``[BOS]`` etc."""
        out = []
        for i in ids:
            tok = self.id_to_token(i)
            if self.byte_level and int(i) >= len(SPECIALS):  # bytes mapped to printable characters: show the text
                out.append(self.hf.decode([int(i)], skip_special_tokens=False).strip() or tok)
                continue
            out.append(tok if int(i) < len(SPECIALS) else (tok[1:] if tok.startswith("▁") and len(tok) > 1 else tok))
        return out

    def word_starts(self, ids) -> list[bool]:
        """True where a token begins a word: it carries the word marker (``▁``, or the byte-level space ``Ġ``), is a
        special token, or does not start with a letter or digit (punctuation split off)."""
        out = []
        for i in ids:
            tok = self.id_to_token(i)
            out.append(int(i) < len(SPECIALS) or tok[:1] in ("▁", "Ġ") or not tok[:1].isalnum())
        return out

    def split_words(self, text: str) -> list[str]:
        """Words of ``text`` the vocabulary does not hold whole, so they became several sub-word pieces."""
        norm = normalize_text(text)
        return split_words_of(self.hf.encode(norm, add_special_tokens=False), norm)

    def unknown_words(self, text: str) -> list[str]:
        """Words of ``text`` that map to [UNK] (the app warns about them)."""
        norm = normalize_text(text)
        return unknown_words_of(self.hf.encode(norm, add_special_tokens=False), norm, UNK)


def split_words_of(enc, norm: str) -> list[str]:
    """Words of an ``Encoding`` of ``norm`` that were cut into several pieces, in order, each once."""
    pieces: dict[int, int] = {}
    for w in enc.word_ids:
        if w is not None:
            pieces[w] = pieces.get(w, 0) + 1
    out = {}
    for w, count in pieces.items():
        if count > 1:
            a, b = enc.word_to_chars(w)
            out[norm[a:b].strip()] = True
    return list(out)


def unknown_words_of(enc, norm: str, unk_id: int) -> list[str]:
    """Text of the pieces of an ``Encoding`` of ``norm`` that became ``unk_id``, in order, each once."""
    words = {}
    for tid, (a, b) in zip(enc.ids, enc.offsets):
        if tid == unk_id:
            words[norm[a:b].strip()] = True
    return list(words)


def word_index(tok, ids, word: str, start: int = 0) -> int | None:
    """Index of the first token of ``ids`` (at or after ``start``) that is the whole word ``word``, case-insensitive:
    not the "it" inside "f|it" or "su|it|case", nor the "it" of "it|s". ``tok`` is any tokenizer with ``display``
    and ``word_starts`` (:class:`Tokenizer`, :class:`core.io.pretrained.BertTokenizer`)."""
    ids = [int(i) for i in ids]
    starts, shown = tok.word_starts(ids) + [True], tok.display(ids)
    return next((i for i in range(start, len(ids)) if starts[i] and starts[i + 1] and shown[i].lower() == word.lower()),
                None)
