"""Training tasks: what a batch is and how a model is scored.

* ``copy`` / ``reverse`` / ``sort``: random symbol sequences (the Annotated Transformer's first experiment).
* ``en-fr`` / ``en-de``: the broad dictionary corpus (``core.data.broad``); ``-tiny``: the 97-word grammar
  (``core.data.translation``).
* ``lm``: a causal LM on real English prose (``core.data.english``) or on a user's UTF-8 text file; ``lm-tiny``: on
  the generated stories (``core.data.lm``).
* ``mlm``: BERT's masked-language-model objective on the generated English corpus (an encoder-only model).
* ``induction``: a causal LM on a random sequence repeated twice, where induction heads form.

Batches are a pure function of (seed, step, rank), so a resumed run sees exactly the data an
uninterrupted one would have seen.
"""
from __future__ import annotations

import bisect
import functools
import math
import re
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.utils.data import DistributedSampler

from ..data import PROSE, prose_for, reference_scores
from ..io.tokenizer import BOS, EOS, MASK, PAD, SPECIALS, Tokenizer
from .batching import epoch_size, token_batches

SYMBOLS = [str(d) for d in range(10)] + [chr(c) for c in range(ord("a"), ord("k"))]
SYNTHETIC = ("copy", "reverse", "sort")
TRANSLATION = ("en-fr", "en-de", "en-fr-tiny", "en-de-tiny")
BROAD = ("en-fr", "en-de")  # the translation tasks of the broad corpus (and the human translations)  # broad corpus; the 97-word grammar
# real English prose (core.data.english, …_large, …_xl); generated stories
LM_TASKS = ("lm", "lm-large", "lm-xl", "lm-tiny")
REAL_LM = PROSE  # task → the frozen prose corpus it reads (core.data.prose_for)
TASKS = SYNTHETIC + TRANSLATION + LM_TASKS + ("mlm", "induction")
# the induction task's tokens: 70 syllables (ba, be, … zu), so a repeated random sequence reads aloud
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
TEXT_TASKS = ("lm", "mlm")  # can train on a user's text file
SIMPLE_REPEAT = 12
BROAD_MAX_LEN, BROAD_DECODE_LEN = 128, 64  # broad translators: positions, and the longest translation evaluated
REAL_TEST_N = 1000  # pairs of the human translations' test split a card reads (an even sample: CI re-measures it)
REAL_MAX_TOKENS = 96  # a human-translated pair longer than this (either side, in BPE tokens) is left out of training


def model_kind(task: str) -> str:
    """The model kind a task trains (without building the task): translation and synthetic tasks an
    encoder-decoder, ``lm`` a decoder-only (GPT) model, ``mlm`` an encoder-only (BERT) model."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")
    return {**dict.fromkeys(LM_TASKS, LMTask), "mlm": MLMTask, "induction": InductionTask}.get(task, Task).model_kind


@dataclass
class Batch:
    """One training batch: source ``[B, Ts]`` (None for an LM), decoder input and targets ``[B, T]``, and
    BERT's token types ``[B, T]`` and next-sentence labels ``[B]`` when present."""
    src: torch.Tensor | None  # [B, Ts] (None for an LM)
    tgt_in: torch.Tensor  # [B, T] decoder input (starts with BOS)
    tgt_out: torch.Tensor  # [B, T] what to predict (PAD = ignored)
    every_input: bool = False  # count every input token as processed (masked LM: most tokens predict nothing)
    token_types: torch.Tensor | None = None  # [B, T] segment of each token (BERT sentence pairs)
    next_sentence: torch.Tensor | None = None  # [B] 0 = B follows A, 1 = B is random, -100 = no pair (ignored)

    def to(self, device):
        def move(t):
            return None if t is None else t.to(device)
        return Batch(move(self.src), self.tgt_in.to(device), self.tgt_out.to(device), self.every_input,
                     move(self.token_types), move(self.next_sentence))

    def n_tokens(self) -> int:
        n = int((self.tgt_in if self.every_input else self.tgt_out).ne(PAD).sum())
        return n + (0 if self.src is None else int(self.src.ne(PAD).sum()))


def pad_rows(rows: list[list[int]]) -> torch.Tensor:
    """Rows of token ids right-padded with ``PAD`` to the longest, as a long tensor ``[len(rows), T]``."""
    width = max(len(r) for r in rows)
    return torch.tensor([r + [PAD] * (width - len(r)) for r in rows], dtype=torch.long)


def seq2seq_batch(pairs: list[tuple[list[int], list[int]]]) -> Batch:
    """Source ``x … EOS``; decoder input ``BOS y …``; target ``y … EOS`` (teacher forcing)."""
    return Batch(pad_rows([s + [EOS] for s, _ in pairs]), pad_rows([[BOS] + t for _, t in pairs]),
                 pad_rows([t + [EOS] for _, t in pairs]))


def step_generator(seed: int, step: int, rank: int = 0) -> torch.Generator:
    """The generator of ``step``'s batch on ``rank`` for a run with ``seed`` (a resumed run draws the same data)."""
    return torch.Generator().manual_seed((seed * 1_000_003 + step) * 97 + rank)


class Task:
    """Base of every training task: its batches (a pure function of seed, step and rank), its evaluation, its
    tokenizer and the model kind it trains."""
    name: str
    description: str = ""
    model_kind = "encoder-decoder"
    tokenizer: Tokenizer
    max_len: int

    def batch(self, step: int, batch_size: int, seed: int, rank: int = 0, world: int = 1) -> Batch:
        raise NotImplementedError

    def evaluate(self, model, n: int = 200) -> dict:
        raise NotImplementedError

    def source_words(self) -> set[str]:
        """The lower-cased words of the training source text (``core.inference.coverage``: a checkpoint's
        ``words.json``)."""
        raise NotImplementedError


class SyntheticTask(Task):
    """Sequences of ``min_len..max_len`` random symbols; the target is the copy, the reverse or the sorted list."""

    def __init__(self, name: str, min_len: int = 4, max_len: int = 12, tokenizer: Tokenizer | None = None):
        if name not in SYNTHETIC:
            raise ValueError(f"unknown synthetic task {name!r}")
        if not 1 <= min_len <= max_len:
            raise ValueError("need 1 <= min_len <= max_len")
        self.name, self.min_len, self.seq_len = name, min_len, max_len
        self.tokenizer = tokenizer or Tokenizer.from_symbols(SYMBOLS)
        self.ids = [self.tokenizer.token_to_id("▁" + s) for s in SYMBOLS]
        self.missing = [s for s, i in zip(SYMBOLS, self.ids) if i is None]  # a checkpoint's tokenizer of other words
        self.max_len = max_len + 2
        self.description = (f"random sequences of {min_len}-{max_len} symbols from {len(SYMBOLS)} "
                            f"(digits 0-9, letters a-j); target = the {name} of the input")

    def source_words(self) -> set[str]:
        """The words a model of this task can read: its letter symbols (digits are not words)."""
        from ..inference.coverage import words_of
        return words_of(SYMBOLS)

    def target(self, seq: list[int]) -> list[int]:
        return list(seq) if self.name == "copy" else seq[::-1] if self.name == "reverse" else sorted(seq)

    def sample(self, gen: torch.Generator, n: int) -> list[tuple[list[int], list[int]]]:
        """``n`` random (source, target) id sequences; ValueError naming the symbols the tokenizer lacks, if any (its
        source words are still the task's: :meth:`source_words` needs no sequence)."""
        if self.missing:
            raise ValueError(f"this model's tokenizer lacks {len(self.missing)} of the {len(SYMBOLS)} symbols of the "
                             f"{self.name} task ({' '.join(self.missing[:10])}"
                             f"{' …' if len(self.missing) > 10 else ''}), so no {self.name} sequences can be written "
                             "for it")
        lens = torch.randint(self.min_len, self.seq_len + 1, (n,), generator=gen).tolist()
        pairs = []
        for length in lens:
            seq = [self.ids[i] for i in torch.randint(0, len(self.ids), (length,), generator=gen).tolist()]
            pairs.append((seq, self.target(seq)))
        return pairs

    def batch(self, step, batch_size, seed, rank=0, world=1):
        return seq2seq_batch(self.sample(step_generator(seed, step, rank), batch_size))

    def evaluate(self, model, n=200):
        from ..inference.decoding import greedy_batch
        pairs = self.sample(torch.Generator().manual_seed(123_456), n)  # held out: a seed training never uses
        device = model.device
        b = seq2seq_batch(pairs)
        out = greedy_batch(model, b.src.to(device), max_new=self.max_len)
        exact = sum(o == t for o, (_, t) in zip(out, pairs)) / n
        return {"exact_match": exact}


class InductionTask(Task):
    """A language model on ``[BOS] r r``: ``seq_len`` random syllables, then the same ones again (Olsson et al. 2022,
    sec. 2). The first copy cannot be predicted (loss ≈ ln 70); in the second, every token can be read off the token
    after the previous occurrence of the current one, which is what an induction head does. A small attention-only
    model sits on a plateau, then learns it suddenly (the phase change)."""
    model_kind = "decoder-only"

    def __init__(self, seq_len: int | None = None, tokenizer: Tokenizer | None = None):
        self.name, self.seq_len = "induction", seq_len or 16
        if not 2 <= self.seq_len <= 4096:
            raise ValueError(f"the induction task needs a sequence of 2 to 4096 tokens, got {self.seq_len}")
        self.tokenizer = tokenizer or Tokenizer.from_symbols(SYLLABLES)
        self.ids = torch.tensor([self.tokenizer.token_to_id("▁" + s) for s in SYLLABLES])
        self.max_len = 2 * self.seq_len + 1  # the whole row fits (head finders read all of it)
        self.description = (f"{self.seq_len} random syllables (of {len(SYLLABLES)}), then the same {self.seq_len} "
                            "again; loss on every next token")

    def source_words(self) -> set[str]:
        return set(SYLLABLES)

    def rows(self, gen: torch.Generator, n: int) -> torch.Tensor:
        """``n`` rows ``[BOS] r r`` (``2 * seq_len + 1`` ids)."""
        r = self.ids[torch.randint(0, len(self.ids), (n, self.seq_len), generator=gen)]
        return torch.cat([torch.full((n, 1), BOS), r, r], dim=1)

    def batch(self, step, batch_size, seed, rank=0, world=1):
        """Rows of ``[BOS] r r`` with ``len(r)`` drawn from ``seq_len/2 .. seq_len`` (padded): with one fixed length a
        head could find the earlier copy by position alone (attend ``seq_len − 1`` back), a one-layer shortcut
        that is not an induction head."""
        gen = step_generator(seed, step, rank)
        full = self.rows(gen, batch_size)
        lengths = torch.randint(max(1, self.seq_len // 2), self.seq_len + 1, (batch_size,), generator=gen).tolist()
        ids = pad_rows([[BOS] + 2 * row[1:1 + k] for row, k in zip(full.tolist(), lengths)])
        return Batch(None, ids[:, :-1], ids[:, 1:])

    @torch.no_grad()
    def evaluate(self, model, n=64):
        """Mean loss on the first copy's tokens and on the second copy's (its first token excluded: nothing
        announces it), on ``n`` held-out rows; ``copy_gain`` = first − second (≈ 0 before the phase change)."""
        ids = self.rows(torch.Generator().manual_seed(123_456), n).to(model.device)
        logits = model(ids[:, :-1]).logits.float()
        loss = F.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none")  # [n, 2 * seq_len]
        first, second = float(loss[:, :self.seq_len].mean()), float(loss[:, self.seq_len + 1:].mean())
        return {"valid_loss": float(loss.mean()), "first_copy_loss": first, "second_copy_loss": second,
                "copy_gain": first - second}


class TranslationTask(Task):
    """English → French or German on the generated corpus; pronoun accuracy is the headline metric."""

    batch_tokens: int | None = None  # set (make_task): batches by length of <= this many padded tokens a side

    def __init__(self, name: str, tokenizer: Tokenizer | None = None, vocab_size: int | None = None,
                 train: bool = True, real_share: float = 0.0, parallel_release: int = 1, generated_release: int = 1):
        """``train=False`` (with a tokenizer): only evaluate, without building the training split (broad corpus).
        ``real_share`` > 0 (broad only): that share of the training pairs are human translations
        (:mod:`core.data.parallel`, its train split repeated as often as the share needs), the rest generated; the
        BPE is then learned on both. ``parallel_release``: which frozen release of them (valid and test too);
        ``generated_release``: how the generated splits are drawn (:func:`core.data.corpus_for`)."""
        from ..data import corpus_for, lang_of
        self.name, self.lang, self.data = name, lang_of(name), corpus_for(name, generated_release)
        self.generated_release = generated_release
        self.real_share, self.parallel_release = real_share, parallel_release
        lang, tiny = self.lang, name.endswith("-tiny")
        if not train and not tiny and tokenizer is not None:
            self.tokenizer, self.max_len, self.decode_len = tokenizer, BROAD_MAX_LEN, BROAD_DECODE_LEN
            self.description = "core.data.broad (evaluation only)"
            return
        train = self.data.generate(lang, "train")
        real: list[tuple[str, str]] = []
        if real_share:
            from ..data import parallel_for
            real = parallel_for(name, parallel_release).pairs("train")
        self.train_pairs_text = [(p.src, p.tgt) for p in train] + real
        if tokenizer is None:
            # the tokenizer is trained on a fixed sample, so its merges do not depend on the training seed
            sample = train if tiny else self.data.generate(lang, "train", n=60_000, seed=0)
            tokenizer = Tokenizer.train([p.src for p in sample] + [p.tgt for p in sample]
                                        + [a for a, _ in real] + [b for _, b in real], "bpe",
                                        vocab_size or (1200 if tiny else 8000))
        self.tokenizer = tokenizer
        # Tiny corpus: simple sentences ("I am happy.") are ~1 % of it; repeat them so the model learns them too.
        pool = train + ([p for p in train if p.frame == "simple"] * (SIMPLE_REPEAT - 1) if tiny else [])
        self.train_ids = list(zip(self.tokenizer.encode_batch([p.src for p in pool]),
                                  self.tokenizer.encode_batch([p.tgt for p in pool])))
        self.n_real = 0
        if real:
            ids = [(s, t) for s, t in zip(self.tokenizer.encode_batch([a for a, _ in real]),
                                          self.tokenizer.encode_batch([b for _, b in real]))
                   if max(len(s), len(t)) <= REAL_MAX_TOKENS]
            self.n_real = round(real_share / (1 - real_share) * len(self.train_ids))
            self.train_ids += (ids * (self.n_real // len(ids) + 1))[:self.n_real]
        self.max_len = max(max(len(s), len(t)) for s, t in self.train_ids) + 8
        self.decode_len = self.max_len
        if not tiny:  # sinusoidal positions have no parameters: room for sentences longer than the corpus's
            self.max_len = max(self.max_len, BROAD_MAX_LEN)
            self.decode_len = REAL_MAX_TOKENS + 8 if real else BROAD_DECODE_LEN
        self._order: dict[tuple, list[int]] = {}
        if tiny:
            self.description = (f"core.data.translation: {len(train)} generated English→{lang} training pairs, simple "
                                f"sentences repeated ×{SIMPLE_REPEAT} (coreference frames; held-out noun–adjective–frame "
                                f"combinations); BPE vocabulary of {self.tokenizer.vocab_size}")
        else:
            lex = self.data.lexicon()
            self.description = (f"core.data.broad: {len(train)} generated English→{lang} training pairs in "
                                f"{len(self.data.frame_names(lang))} frames over a dictionary lexicon "
                                f"({len(lex.nouns)} nouns, "
                                f"{len(lex.adjectives)} adjectives, {len(lex.verbs)} verbs; core/data/LEXICON.md); "
                                f"held-out combinations and held-out nouns; BPE vocabulary of {self.tokenizer.vocab_size}")
            if real:
                sources = ", ".join(parallel_for(name, parallel_release).describe()["filters"])  # release's own
                self.description += (f"; mixed with {len(real):,} human-translated sentence pairs (core.data.parallel"
                                     f" release {parallel_release}: {sources}), {self.n_real:,} of "
                                     f"{len(self.train_ids):,} training pairs per epoch ({real_share:.0%})")

    def _indices(self, step, batch_size, seed, rank, world):
        """Epochs of a ``DistributedSampler`` over the training pairs, cut into batches by step."""
        sampler = DistributedSampler(range(len(self.train_ids)), num_replicas=world, rank=rank, shuffle=True,
                                     seed=seed, drop_last=True)
        per_epoch = max(1, len(sampler) // batch_size)
        epoch, b = divmod(step, per_epoch)
        key = (epoch, seed, rank, world)
        if key not in self._order:
            sampler.set_epoch(epoch)
            self._order = {key: list(sampler)}
        return self._order[key][b * batch_size:(b + 1) * batch_size]

    def batch(self, step, batch_size, seed, rank=0, world=1):
        """The step-th batch: ``batch_size`` pairs, or with ``batch_tokens`` set, the step-th of the epochs' token
        batches (``batch_size`` unused)."""
        pick = (self._token_indices(step, seed, rank, world) if self.batch_tokens
                else self._indices(step, batch_size, seed, rank, world))
        return seq2seq_batch([self.train_ids[i] for i in pick])

    def token_lengths(self) -> list[int]:
        """Each training pair's length for token batching: its wider side once padded, ``max(len(src) + 1,
        len(tgt) + 1)`` (EOS on the source, BOS / EOS on the target), as fairseq counts ``--max-tokens``. A batch of
        ``B`` pairs then pads to at most ``batch_tokens`` source slots and ``batch_tokens`` target slots."""
        key = (id(self.train_ids), len(self.train_ids))
        if getattr(self, "_lengths_key", None) != key:
            self._lengths = [max(len(s), len(t)) + 1 for s, t in self.train_ids]
            self._lengths_key = key
        return self._lengths

    def _token_epoch(self, step, seed, world) -> tuple[int, int]:
        """(epoch, batch within it) of ``step``: epochs of token batches differ in length by a batch or two, so
        the step is placed by the running total of the epochs before it (counted once, then cached)."""
        key = (seed, world, self.batch_tokens, len(self.train_ids))
        cache = getattr(self, "_token_ends", None)
        if cache is None or cache[0] != key:
            cache = self._token_ends = (key, [])
        ends = cache[1]  # ends[e] = steps in epochs 0..e
        while not ends or ends[-1] <= step:
            n = epoch_size(self.token_lengths(), self.batch_tokens, seed, len(ends), world)
            if n == 0:
                raise ValueError(f"{len(self.train_ids)} training pairs make fewer token batches of "
                                 f"{self.batch_tokens} than there are processes ({world})")
            ends.append((ends[-1] if ends else 0) + n)
        epoch = bisect.bisect_right(ends, step)
        return epoch, step - (ends[epoch - 1] if epoch else 0)

    def _token_indices(self, step, seed, rank, world):
        """The step-th batch of :func:`core.training.batching.token_batches` over the epochs: a pure function of
        (seed, step, rank, world, batch_tokens)."""
        epoch, b = self._token_epoch(step, seed, world)
        key = (epoch, seed, rank, world, self.batch_tokens, len(self.train_ids))
        cached = getattr(self, "_token_order", None)
        if cached is None or cached[0] != key:
            cached = self._token_order = (key, token_batches(self.token_lengths(), self.batch_tokens, seed, epoch,
                                                             rank, world))
        return cached[1][b]

    def evaluate(self, model, n=300, split="valid", every: int = 1):
        """Greedy translations of ``n`` pairs of ``split`` (every ``every``-th of them) scored against the references.
        Training reads the valid split only; the test and held-out-noun splits are read once, for the card
        (:func:`heldout_metrics`). A model that reads human translations is also scored (chrF, BLEU) on the first
        ``n`` valid real pairs."""
        pairs = self.data.generate(self.lang, split, n=n, seed=7)[::every]
        out = translation_metrics(pairs, self.translate(model, [p.src for p in pairs]), self.lang, self.data)
        if getattr(self, "real_share", 0.0) and split == "valid":
            from ..data import parallel_for
            real = parallel_for(self.name, self.parallel_release).pairs("valid")
            real = real[::max(1, len(real) // n)][:n]
            out.update({f"real_{k}": v for k, v in reference_scores([b for _, b in real],
                                                               self.translate(model, [a for a, _ in real])).items()})
        return out

    def translate(self, model, sources: list[str]) -> list[str]:
        from ..inference.decoding import greedy_many
        rows = [ids + [EOS] for ids in self.tokenizer.encode_batch(sources)]
        return [self.tokenizer.decode(o) for o in greedy_many(model, rows, max_new=self.decode_len)]

    def source_words(self) -> set[str]:
        """The words of the training SOURCE (English) sentences, lower-cased: what the model learned to read. Words
        seen only in the target language do not count. Reads ``train_pairs_text`` ((source, target) strings or
        pairs with ``.src``) when the task keeps it, else regenerates the training split."""
        from ..inference.coverage import words_of
        pairs = getattr(self, "train_pairs_text", None)
        if pairs is None:
            from ..data import corpus_for
            data = getattr(self, "data", None) or corpus_for(self.name, getattr(self, "generated_release", 1))
            pairs = data.generate(self.lang, "train")
        return words_of(p[0] if isinstance(p, (tuple, list)) else p.src for p in pairs)


def translation_metrics(pairs, hyps, lang, data, bleu: bool = False) -> dict:
    """Exact match, pronoun accuracy (the pronoun that stands for "it" / "they", found by ``data.pronoun_of``) and,
    with ``bleu``, corpus BLEU (sacrebleu, its default 13a tokenisation) against the references."""
    exact = sum(h == p.tgt for h, p in zip(hyps, pairs)) / len(pairs)
    with_pron = [(h, p) for h, p in zip(hyps, pairs) if p.tgt_pronoun]
    pron = sum(data.pronoun_of(h, lang) == p.tgt_pronoun for h, p in with_pron) / max(1, len(with_pron))
    out = {"exact_match": exact, "pronoun_accuracy": pron, "n": len(pairs), "n_pronoun": len(with_pron)}
    if bleu:  # the one BLEU (core.evaluate and the cards read the same function)
        out["bleu"] = reference_scores([p.tgt for p in pairs], hyps)["bleu"]
    return out


def broad_heldout_metrics(task: "TranslationTask", model, known_words=None, real: bool = False, every: int = 1) -> dict:
    """A broad translator's card: the test split (exact match, pronoun accuracy, BLEU), the held-out-noun split
    (coreference sentences on nouns no training coreference sentence used), and the hand-written Winograd-style
    set in ``tests/data/winograd.tsv`` (pronoun accuracy, unknown-word rate); with ``real`` (a model trained on human
    translations, ``--real-share``) also an even sample of :data:`REAL_TEST_N` pairs of their test split (BLEU, chrF)
    and the ordinary sentences of ``tests/data/ordinary.tsv``. Flat keys, so a test can compare each. ``every``:
    only every ``every``-th sentence of the test, held-out-noun and human-translation samples (the hand-written sets
    whole) — the card's sample that the suite re-measures, a fraction of the time."""
    from pathlib import Path
    test = task.data.generate(task.lang, "test", seed=7)[::every]
    out = translation_metrics(test, task.translate(model, [p.src for p in test]), task.lang, task.data, bleu=True)
    held = [p for p in task.data.generate(task.lang, "heldout", seed=7) if p.tgt_pronoun][::every]
    m = translation_metrics(held, task.translate(model, [p.src for p in held]), task.lang, task.data)
    out.update(heldout_noun_pronoun_accuracy=m["pronoun_accuracy"], heldout_noun_exact_match=m["exact_match"],
               heldout_noun_n=m["n"])
    data_dir = Path(__file__).resolve().parents[2] / "tests" / "data"
    path = data_dir / "winograd.tsv"
    if path.exists():
        from ..data.winograd import load, score
        out.update(score(load(path), task.lang, task.translate(model, [r.en for r in load(path)]), task.data,
                         known_words))
    if real:  # a model that read human translations: their test split and the ordinary sentences
        from ..data import parallel_for
        from ..data.winograd import load_ordinary, score_ordinary
        test = parallel_for(task.name, task.parallel_release).pairs("test")
        test = test[::max(1, len(test) // REAL_TEST_N)][:REAL_TEST_N][::every]
        out.update({f"real_test_{k}": v for k, v in reference_scores([b for _, b in test],
                                                                task.translate(model, [a for a, _ in test])).items()})
        rows = load_ordinary(data_dir / "ordinary.tsv")
        out.update(score_ordinary(rows, task.lang, task.translate(model, [r.en for r in rows]), task.data))
    return out


class LMTask(Task):
    """Next-token prediction on one long token stream (``BOS line EOS`` per line), in random windows of ``seq_len``.

    ``lm`` reads real English prose (:mod:`core.data.english`: its train split to learn, valid to choose, test for
    the card) with a byte-level BPE of 8,192 (``vocab_size`` to change it); ``lm-large`` the same way the ≥ 40 MB
    corpus of :mod:`core.data.english_large`, ``lm-xl`` its release 2 (:mod:`core.data.english_xl`); ``lm-tiny`` the
    generated stories of :mod:`core.data.lm` (its last 5 % held out); a user's text file likewise (its last 5 %)."""

    model_kind = "decoder-only"
    ENGLISH_VOCAB = 8192

    def __init__(self, text: str | None = None, seq_len: int = 64, tokenizer: Tokenizer | None = None,
                 vocab_size: int | None = None, name: str = "lm-tiny"):
        self.name = name if text is None else "lm"
        self.seq_len = seq_len
        real = text is None and name in REAL_LM
        if real:
            # The streams are tokenized when first read (train_stream, valid_stream below): a bundled lm's card
            # sample or its evaluation windows need neither the 46 MB of english-large's training text.
            self.tokenizer = tokenizer or Tokenizer.train(self.train_lines, "bytebpe",
                                                          vocab_size or self.ENGLISH_VOCAB, min_frequency=2)
        else:
            from ..data import lm
            source = "a user text file" if text is not None else "the generated English corpus (core.data.lm, 4000 sentences)"
            text = text if text is not None else lm.generate_corpus(4000, seed=0)
            lines = [ln for ln in text.splitlines() if ln.strip()]
            if not lines:
                raise ValueError("the training text is empty")
            self.tokenizer = tokenizer or Tokenizer.train(lines, "bpe", vocab_size or 1500)
            # Each line is one text, BOS … EOS: generation starts as a line does and ends where a line ends. (With
            # BOS alone between lines, decoding — which never emits BOS — had no way to end a text and ran on.)
            stream, starts = [], []
            for ln in lines:
                starts.append(len(stream))
                stream += [BOS] + self.tokenizer.encode(ln) + [EOS]
            cut = int(len(stream) * 0.95)
            self.train_lines = [ln for ln, s in zip(lines, starts) if s < cut]  # lines (partly) in the training stream
            self.train_stream = torch.tensor(stream[:cut])
            self.valid_stream = torch.tensor(stream[cut:])
            n_tokens = len(stream)
            if len(self.train_stream) < seq_len + 2 or len(self.valid_stream) < seq_len + 2:
                raise ValueError(f"the training text is too short: {len(stream)} tokens; need at least "
                                 f"{int(2 * (seq_len + 2) / 0.05)} for windows of {seq_len}")
        self.max_len = max(seq_len, 128)
        if not real:
            self.description = (f"{source}: {n_tokens} tokens, BPE vocabulary of {self.tokenizer.vocab_size}, "
                                f"windows of {seq_len}")

    @functools.cached_property
    def train_lines(self) -> list[str]:
        """A real-English task's training paragraphs (the other tasks set them when built)."""
        return self.corpus().lines("train")

    @functools.cached_property
    def train_stream(self) -> torch.Tensor:
        return self._stream(self.train_lines)

    @functools.cached_property
    def valid_stream(self) -> torch.Tensor:
        return self._stream(self.corpus().lines("valid"))

    @functools.cached_property
    def description(self) -> str:
        """What a real-English task reads, for the card (the other tasks set it when built)."""
        corpus = self.corpus()
        source = (f"real English prose (core.data.{REAL_LM[self.name]}: "
                  + ("the Python 3.11 documentation and the Debian Administrator's Handbook" if self.name == "lm" else
                     f"{len(corpus.SOURCES)} sources of Debian documentation and stories") + ", split by document)")
        n_tokens = len(self.train_stream) + len(self.valid_stream)
        return (f"{source}: {n_tokens} tokens, BPE vocabulary of {self.tokenizer.vocab_size}, windows of "
                f"{self.seq_len}")

    def _stream(self, lines: list[str]) -> torch.Tensor:
        """``BOS line EOS`` for every line, concatenated."""
        out = []
        for ids in self.tokenizer.encode_batch(lines):
            out += [BOS] + ids + [EOS]
        return torch.tensor(out)

    def corpus(self):
        """The frozen prose corpus module a real-English task reads (core.data.english or core.data.english_large)."""
        return prose_for(self.name)

    def test_stream(self) -> torch.Tensor:
        """The English corpus's test split as a stream (read once, for the card)."""
        return self._stream(self.corpus().lines("test"))

    def source_words(self) -> set[str]:
        """The words of the training text (the lines of the training stream), lower-cased."""
        from ..inference.coverage import words_of
        return words_of(self.train_lines)

    def windows(self, stream, starts):
        """Windows of ``seq_len`` tokens of ``stream`` at ``starts``, with their next tokens as targets (a Batch)."""
        x = torch.stack([stream[s:s + self.seq_len] for s in starts])
        y = torch.stack([stream[s + 1:s + 1 + self.seq_len] for s in starts])
        return Batch(None, x, y)

    def batch(self, step, batch_size, seed, rank=0, world=1):
        gen = step_generator(seed, step, rank)
        starts = torch.randint(0, len(self.train_stream) - self.seq_len - 1, (batch_size,), generator=gen).tolist()
        return self.windows(self.train_stream, starts)

    def token_bytes(self) -> torch.Tensor | None:
        """The bytes of text each token id stands for, with a byte-level tokenizer (``None`` otherwise): a token's
        string holds one character per byte (GPT-2's byte ↔ character map); specials stand for none. A line of
        ``n`` bytes then counts ``n + 1``: the space the tokenizer puts in front of each line stands for the line
        break. Dividing a loss by these makes models with different tokenizers of the same text comparable (bits per
        byte)."""
        if not self.tokenizer.byte_level:
            return None
        vocab = self.tokenizer.vocab_size
        return torch.tensor([0 if i < len(SPECIALS) else len(self.tokenizer.id_to_token(i)) for i in range(vocab)])

    @torch.no_grad()
    def evaluate(self, model, n=64, stream: torch.Tensor | None = None, batch: int = 32, every: int = 1):
        """Mean next-token loss and perplexity over ``n`` non-overlapping windows of the valid stream (``n=None``:
        all of them; ``stream``: another stream, e.g. :meth:`test_stream`; ``every`` > 1: every ``every``-th of those
        windows, a card's sample); with a byte-level tokenizer also
        ``bits_per_byte``: the summed loss in bits over the bytes of text the predicted tokens stand for."""
        model.eval()
        device = model.device
        stream = self.valid_stream if stream is None else stream
        starts = list(range(0, len(stream) - self.seq_len - 1, self.seq_len))[::every][:n]
        sizes = self.token_bytes()
        total, count, n_bytes = 0.0, 0, 0
        for i in range(0, len(starts), batch):
            b = self.windows(stream, starts[i:i + batch]).to(device)
            logits = model(b.tgt_in).logits
            total += float(torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), b.tgt_out.flatten(),
                                                             reduction="sum"))
            count += b.tgt_out.numel()
            n_bytes += 0 if sizes is None else int(sizes[b.tgt_out.cpu()].sum())
        loss = total / count
        out = {"valid_loss": loss, "perplexity": math.exp(min(loss, 50.0))}
        if sizes is not None:
            out["bits_per_byte"] = total / math.log(2) / n_bytes
        return out


def ngram_perplexities(train: torch.Tensor, valid: torch.Tensor, test: torch.Tensor, vocab_size: int) -> dict:
    """Unigram and bigram baselines for a language model's card, on the same tokens the model is scored on.

    Unigram: add-one counts of the training stream. Bigram: the maximum-likelihood bigram interpolated with that
    unigram, ``p(b|a) = λ·c(a,b)/c(a) + (1-λ)·p(b)`` (Jelinek & Mercer 1980), λ chosen on ``valid``. Both predict
    every token of ``test`` after its first, as the model does inside its windows."""
    uni = torch.bincount(train, minlength=vocab_size).double() + 1.0
    p_uni = uni / uni.sum()
    pair = train[:-1] * vocab_size + train[1:]
    keys, counts = torch.unique(pair, return_counts=True)
    table = dict(zip(keys.tolist(), counts.double().tolist()))
    ctx = torch.bincount(train[:-1], minlength=vocab_size).double()

    def nll(stream, lam):
        a, b = stream[:-1], stream[1:]
        c_ab = torch.tensor([table.get(k, 0.0) for k in (a * vocab_size + b).tolist()], dtype=torch.double)
        c_a = ctx[a]
        p_bi = torch.where(c_a > 0, c_ab / c_a.clamp(min=1), torch.zeros_like(c_ab))
        p = lam * p_bi + (1 - lam) * p_uni[b]
        return float(-p.log().mean())

    lam = min((x / 20 for x in range(1, 20)), key=lambda x: nll(valid, x))
    uni_nll = float(-p_uni[test[1:]].log().mean())
    return {"unigram_perplexity": math.exp(uni_nll), "bigram_perplexity": math.exp(nll(test, lam)),
            "bigram_lambda": lam}


def bert_corrupt(ids: torch.Tensor, gen: torch.Generator, vocab_size: int, rate: float = 0.15,
                 p_mask: float = 0.8, p_random: float = 0.1) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masked-LM corruption (Devlin et al. 2019, sec. 3.1) of a ``[B, T]`` batch of token ids.

    Each real token (not a special, not padding) becomes a prediction target with probability ``rate``,
    and every row with a real token gets at least one target. A target is replaced by ``[MASK]`` with
    probability ``p_mask``, by a uniformly random ordinary token with ``p_random``, and otherwise left as
    it is, so the model cannot learn that only ``[MASK]`` positions matter. Returns ``(inputs, targets)``;
    ``targets`` holds the original id at target positions and ``PAD`` (ignored by the loss) elsewhere.
    """
    if not 0 < rate <= 1 or p_mask < 0 or p_random < 0 or p_mask + p_random > 1:
        raise ValueError("need 0 < rate <= 1 and p_mask, p_random >= 0 with p_mask + p_random <= 1")
    first = len(SPECIALS)
    if vocab_size <= first:
        raise ValueError(f"vocab_size must exceed the {first} special tokens")
    real = ids >= first
    draw = torch.rand(ids.shape, generator=gen)
    chosen = real & (draw < rate)
    # a row with no target yet: its real token with the smallest draw becomes one
    lowest = torch.where(real, draw, 2.0).argmin(dim=1, keepdim=True)
    none = ~chosen.any(dim=1, keepdim=True) & real.any(dim=1, keepdim=True)
    chosen |= none & torch.zeros_like(chosen).scatter_(1, lowest, True)
    how = torch.rand(ids.shape, generator=gen)
    noise = torch.randint(first, vocab_size, ids.shape, generator=gen)
    inputs = torch.where(chosen & (how < p_mask), MASK, ids)
    inputs = torch.where(chosen & (how >= p_mask) & (how < p_mask + p_random), noise, inputs)
    return inputs, torch.where(chosen, ids, PAD)


def span_corrupt(n: int, gen: torch.Generator, density: float = 0.15, mean_span: float = 3.0) -> list[tuple[int, int]]:
    """T5's span corruption (Raffel et al. 2020, sec. 3.1.4 and 3.3.4) of a sequence of ``n`` tokens: which
    ``[start, end)`` spans to drop. round(n · density) tokens (at least 1, fewer than n) are dropped, in
    round(dropped / mean_span) spans (at least 1); the dropped tokens are split at random into that many non-empty
    runs, the kept ones into one run more, each non-empty but the first and the last (a span may open or close the
    sequence), and the runs alternate, a kept run first. In the input each dropped span becomes one sentinel (<X>,
    <Y>, …); the target lists each sentinel followed by what it replaced."""
    if n < 2:
        raise ValueError("span corruption needs at least two tokens")
    noise = min(max(1, round(n * density)), n - 1)
    spans = max(1, min(round(noise / mean_span), noise, n - noise))

    def split(total: int, parts: int) -> list[int]:  # ``total`` as ``parts`` positive lengths, uniformly at random
        cuts = sorted((torch.randperm(total - 1, generator=gen)[:parts - 1] + 1).tolist())
        return [b - a for a, b in zip([0] + cuts, cuts + [total])]

    dropped, kept = split(noise, spans), split(n - noise + 2, spans + 1)
    kept[0], kept[-1] = kept[0] - 1, kept[-1] - 1  # the outer kept runs may be empty
    out, at = [], 0
    for keep, drop in zip(kept, dropped):
        at += keep
        out.append((at, at + drop))
        at += drop
    return out


def sentences_of(line: str) -> list[str]:
    """A line cut after each ``.``, ``!`` or ``?`` that a space follows."""
    return [x for x in re.split(r"(?<=[.!?])\s+", line.strip()) if x]


def pair_row(a: list[int], b: list[int], max_len: int) -> tuple[list[int], list[int]]:
    """BERT's sentence-pair input ``[CLS] A [SEP] B [SEP]`` (ours: ``[BOS] A [EOS] B [EOS]``) and its token
    types (0 for the first segment, 1 for the second), cut to ``max_len``."""
    ids = [BOS] + a + [EOS] + b + [EOS]
    types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    return ids[:max_len], types[:max_len]


class MLMTask(Task):
    """BERT pre-training of an encoder-only model: masked LM and next-sentence prediction.

    Half of each batch is single lines (15 % of their tokens to predict from both sides); the other half is
    sentence pairs ``[BOS] A [EOS] B [EOS]`` with token types 0/1, where B is the sentence that follows A (label 0)
    or, half of the time, a random sentence (label 1); their tokens are masked too. Held out: lines of the corpus
    generated with another seed that the training corpus does not contain (a user's text: its last 5 % of lines).
    Next sentences come from inside a line (a story); in a user's text also from the following line.
    """

    model_kind = "encoder-only"
    sentence_pairs = True
    HELD_OUT_SEED = 1

    def __init__(self, text: str | None = None, tokenizer: Tokenizer | None = None, vocab_size: int = 1500,
                 n_valid: int = 300):
        from ..data import lm
        self.name = "mlm"
        if text is None:
            lines = [ln for ln in lm.generate_corpus(4000, seed=0).splitlines() if ln.strip()]
            seen = set(lines)
            valid = [ln for ln in lm.generate_corpus(4000, seed=self.HELD_OUT_SEED).splitlines()
                     if ln.strip() and ln not in seen][:n_valid]
            source = "the generated English corpus (core.data.lm, 4000 sentences)"
        else:
            lines = [ln for ln in text.splitlines() if ln.strip()]
            if len(lines) < 20:
                raise ValueError(f"the training text is too short: {len(lines)} non-empty lines; a masked LM needs at "
                                 "least 20 (one text per line; the last 5 % are held out)")
            cut = int(len(lines) * 0.95)
            lines, valid = lines[:cut], lines[cut:][:n_valid]
            source = "a user text file"
        self.tokenizer = tokenizer or Tokenizer.train(lines, "bpe", vocab_size)
        self.train_lines = lines
        self.max_len = 128
        self.train_rows = [r[:self.max_len] for r in (self.tokenizer.encode(ln) for ln in lines) if r]
        self.valid_rows = [r[:self.max_len] for r in (self.tokenizer.encode(ln) for ln in valid) if r]
        self.train_pairs, self.train_sentences = self._pairs(lines, across_lines=text is not None)
        self.valid_pairs, self.valid_sentences = self._pairs(valid, across_lines=text is not None)
        if not self.train_pairs:
            raise ValueError("the training text has no two sentences in a row for next-sentence prediction")
        n_tok = sum(map(len, self.train_rows))
        self.description = (f"{source}: {len(self.train_rows)} lines, {n_tok} tokens, BPE vocabulary of "
                            f"{self.tokenizer.vocab_size}; 15 % of tokens to predict (80 % [MASK], 10 % random, "
                            f"10 % unchanged); next-sentence prediction on {len(self.train_pairs)} sentence pairs")

    def source_words(self) -> set[str]:
        """The words of the training lines, lower-cased (the held-out lines do not count)."""
        from ..inference.coverage import words_of
        return words_of(self.train_lines)

    def _pairs(self, lines, across_lines: bool) -> tuple[list[tuple[list[int], list[int]]], list[list[int]]]:
        """(consecutive sentence pairs, every sentence), as token ids."""
        enc = [[self.tokenizer.encode(x) for x in sentences_of(ln)] for ln in lines]
        pairs = [(a, b) for sents in enc for a, b in zip(sents, sents[1:])]
        if across_lines:
            pairs += [(x[-1], y[0]) for x, y in zip(enc, enc[1:]) if x and y]
        return pairs, [x for sents in enc for x in sents]

    def pair_batch(self, pairs, sentences, gen: torch.Generator) -> tuple[list, list, list[int]]:
        """Rows, token types and labels: each pair keeps its true next sentence or, with probability 1/2, gets a
        random sentence instead (label 1)."""
        rows, types, labels = [], [], []
        swap = torch.rand(len(pairs), generator=gen).lt(0.5).tolist()
        other = torch.randint(0, len(sentences), (len(pairs),), generator=gen).tolist()
        for (a, b), s, o in zip(pairs, swap, other):
            ids, tt = pair_row(a, sentences[o] if s else b, self.max_len)
            rows.append(ids)
            types.append(tt)
            labels.append(int(s))
        return rows, types, labels

    def corrupt(self, rows: list[list[int]], gen: torch.Generator, types=None, labels=None) -> Batch:
        inputs, targets = bert_corrupt(pad_rows(rows), gen, self.tokenizer.vocab_size)
        return Batch(None, inputs, targets, every_input=True,
                     token_types=None if types is None else pad_rows(types),
                     next_sentence=None if labels is None else torch.tensor(labels))

    def batch(self, step, batch_size, seed, rank=0, world=1):
        gen = step_generator(seed, step, rank)
        n_pairs = batch_size // 2
        pick = torch.randint(0, len(self.train_rows), (batch_size - n_pairs,), generator=gen).tolist()
        rows = [self.train_rows[i] for i in pick]
        which = torch.randint(0, len(self.train_pairs), (n_pairs,), generator=gen).tolist()
        p_rows, p_types, p_labels = self.pair_batch([self.train_pairs[i] for i in which], self.train_sentences, gen)
        types = [[0] * len(r) for r in rows] + p_types
        return self.corrupt(rows + p_rows, gen, types, [-100] * len(rows) + p_labels)

    @torch.no_grad()
    def evaluate(self, model, n=None):
        """Loss and top-1 accuracy over the held-out lines' targets, with one fixed corruption; the accuracy on
        the targets shown as ``[MASK]`` alone (the fill-in-the-blank score); and, for a model with a next-sentence
        head, its accuracy on held-out sentence pairs (half true next sentences, half random; nothing masked)."""
        model.eval()
        device = model.device
        rows = self.valid_rows[:n]
        b = self.corrupt(rows, torch.Generator().manual_seed(123_456))
        logits = model(b.tgt_in.to(device)).logits.float().cpu()
        target = b.tgt_out.ne(PAD)
        loss = torch.nn.functional.cross_entropy(logits[target], b.tgt_out[target])
        right = logits.argmax(-1).eq(b.tgt_out) & target
        masked = target & b.tgt_in.eq(MASK)
        out = {"valid_loss": float(loss), "accuracy": float(right.sum() / target.sum()),
               "masked_accuracy": float((right & masked).sum() / masked.sum()), "n_targets": int(target.sum()),
               "n_lines": len(rows)}
        if model.cfg.nsp and self.valid_pairs:
            pairs = self.valid_pairs[:n]
            p_rows, p_types, labels = self.pair_batch(pairs, self.valid_sentences, torch.Generator().manual_seed(7))
            guess = model(pad_rows(p_rows).to(device), token_types=pad_rows(p_types).to(device)).next_sentence
            out["next_sentence_accuracy"] = float(guess.argmax(-1).cpu().eq(torch.tensor(labels)).float().mean())
            out["n_pairs"] = len(pairs)
        return out


def make_task(name: str, *, text: str | None = None, seq_len: int | None = None,
              tokenizer: Tokenizer | None = None, batch_tokens: int | None = None, real_share: float | None = None,
              vocab_size: int | None = None, parallel_release: int | None = None,
              generated_release: int | None = None) -> Task:
    """``batch_tokens``: a translation task's batches by length, sized in padded tokens (``core.training.batching``);
    ``real_share``: the share of a broad translator's training pairs that are human translations
    (:mod:`core.data.parallel`), ``parallel_release`` the frozen release they come from (default 1);
    ``generated_release``: how a broad translator's generated splits are drawn (default 1; ``core.data.corpus_for``);
    ``vocab_size``: a translation task's BPE size."""
    if batch_tokens is not None and name not in TRANSLATION:
        raise ValueError(f"--batch-tokens needs a translation task ({', '.join(TRANSLATION)}), not {name!r}")
    if real_share and name not in ("en-fr", "en-de"):
        raise ValueError(f"--real-share needs a broad translation task (en-fr, en-de), not {name!r}")
    if generated_release is not None and name not in BROAD:
        raise ValueError(f"--generated-release chooses how the broad corpus is drawn ({', '.join(BROAD)}), not {name!r}")
    if parallel_release is not None and not real_share:
        raise ValueError("--parallel-release chooses the human translations that --real-share mixes in: give both")
    if vocab_size is not None and name not in TRANSLATION + tuple(REAL_LM):
        raise ValueError(f"--vocab-size needs a translation task ({', '.join(TRANSLATION)}) or "
                         f"{' / '.join(REAL_LM)}, not {name!r}")
    if batch_tokens is not None and batch_tokens < 1:
        raise ValueError(f"batch_tokens must be >= 1, got {batch_tokens}")
    if name in SYNTHETIC:
        return SyntheticTask(name, max_len=seq_len or 12, tokenizer=tokenizer)
    if name in TRANSLATION:
        task = TranslationTask(name, tokenizer=tokenizer, vocab_size=vocab_size, real_share=real_share or 0.0,
                               parallel_release=parallel_release or 1, generated_release=generated_release or 1)
        task.batch_tokens = batch_tokens
        return task
    if name in LM_TASKS:
        return LMTask(text, seq_len=seq_len or 64, tokenizer=tokenizer, name=name,
                      vocab_size=vocab_size if name in REAL_LM else None)
    if name == "mlm":
        return MLMTask(text, tokenizer=tokenizer)
    if name == "induction":
        return InductionTask(seq_len, tokenizer=tokenizer)
    raise ValueError(f"unknown task {name!r}; choose one of {', '.join(TASKS)}")


# What the suite re-measures of a card (meta.heldout_sample): every n-th held-out sentence of a translator, every n-th
# test window of an lm of real English. Sized to the suite's 30 minutes on 2 cores: at 10 for all, on a machine of 120
# GFLOP/s (2026-11-28), the lm's sample took 112 s and each broad translator's 70 s of a 28-minute suite.
CARD_SAMPLE_EVERY = {"en-fr": 20, "en-de": 20, "en-fr-tiny": 10, "en-de-tiny": 10, **{t: 40 for t in REAL_LM}}
_FLOAT_METRICS = ("valid_loss", "test_loss", "perplexity", "bits_per_byte", "unigram_perplexity", "bigram_perplexity",
                  "perplexity_vs_bigram")


def card_mismatches(measured: dict, card: dict) -> list[str]:
    """The keys of ``card`` whose value ``measured`` does not reproduce, each as ``key: card → measured``.

    Counts and accuracies are ratios of integers: exact (to 1e-9). A loss is a float32 mean whose last bits depend on
    the CPU's kernels (the mlm card's 0.40557605, written on an earlier machine, measures 0.40557602 on this one at 1, 2
    or 4 threads): losses are held to float32 precision (relative 1e-6). A perplexity is exp(loss): a loss moved by
    δ moves it by δ relative, so for losses up to 10 nats it is held to relative 1e-5 (the lm's 23.482453 measured
    23.482482 on a fresh machine of 2026-11-29, its loss 3.1562535 → 3.1562547, within 1e-6)."""
    out = []
    for key, want in card.items():
        got = measured.get(key)
        tol = ((1e-5 if "perplexity" in key else 1e-6) * abs(want)) if key in _FLOAT_METRICS else 1e-9
        if not isinstance(got, (int, float)) or abs(got - want) > tol:
            out.append(f"{key}: {want} → {got}")
    return out


def heldout_metrics(ck, every: int = 1) -> dict:
    """The metrics a bundled model's card reports, on data training never saw.

    Translation: the whole held-out test split (combinations never seen in training); with ``every`` > 1, every
    ``every``-th sentence of it (a broad translator: :func:`broad_heldout_metrics`; the card's ``heldout_sample``).
    Synthetic: 1000 sequences from a generator seed training never uses. LM on generated stories: validation
    loss. LM on real English: the test split's loss, perplexity and bits per byte, with the n-gram baselines (with
    ``every`` > 1: every ``every``-th window, without the baselines).
    MLM: 300 held-out lines with one fixed corruption.
    """
    task_name = ck.meta.get("task", "")
    if task_name in TRANSLATION:
        from ..data import release_of
        task = TranslationTask(task_name, tokenizer=ck.tokenizer, train=False, parallel_release=release_of(ck.meta),
                               generated_release=release_of(ck.meta, "generated"))
        if task_name.endswith("-tiny"):
            return task.evaluate(ck.model, n=None, split="test", every=every)
        task.decode_len = REAL_MAX_TOKENS + 8 if "--real-share" in ck.meta.get("command", "") else task.decode_len
        return broad_heldout_metrics(task, ck.model, getattr(ck, "known_words", None),
                                     real="--real-share" in ck.meta.get("command", ""), every=every)
    if task_name in SYNTHETIC:
        cfg_len = ck.model.cfg.max_len - 2
        return SyntheticTask(task_name, max_len=cfg_len, tokenizer=ck.tokenizer).evaluate(ck.model, n=1000)
    if task_name == "lm-tiny":
        return LMTask(tokenizer=ck.tokenizer, seq_len=64).evaluate(ck.model)
    if task_name in REAL_LM:
        task = LMTask(tokenizer=ck.tokenizer, seq_len=ck.model.cfg.max_len, name=task_name)
        test = task.test_stream()
        out = task.evaluate(ck.model, n=None, stream=test, every=every)
        out = {"test_loss": out["valid_loss"], "perplexity": out["perplexity"], "test_tokens": len(test),
               "bits_per_byte": out["bits_per_byte"]}
        if every == 1:  # the n-gram baselines read the whole training stream: the card's, not its sample's
            out.update(ngram_perplexities(task.train_stream, task.valid_stream, test, ck.tokenizer.vocab_size))
            out["perplexity_vs_bigram"] = out["perplexity"] / out["bigram_perplexity"]
        return out
    if task_name == "mlm":
        return MLMTask(tokenizer=ck.tokenizer).evaluate(ck.model)
    if task_name == "induction":
        return InductionTask(ck.model.cfg.max_len // 2, tokenizer=ck.tokenizer).evaluate(ck.model, n=1000)
    raise ValueError(f"no held-out evaluation for task {task_name!r}")
