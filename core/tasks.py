"""Training tasks: what a batch is and how a model is scored.

* ``copy`` / ``reverse`` / ``sort``: random symbol sequences (the Annotated Transformer's first experiment).
* ``en-fr`` / ``en-de``: the generated coreference-aware translation corpus (``core.data.translation``).
* ``lm``: a causal LM on the generated English corpus or on a user's UTF-8 text file.

Batches are a pure function of (seed, step, rank), so a resumed run sees exactly the data an
uninterrupted one would have seen.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.utils.data import DistributedSampler

from .tokenizer import BOS, EOS, PAD, Tokenizer

SYMBOLS = [str(d) for d in range(10)] + [chr(c) for c in range(ord("a"), ord("k"))]
SYNTHETIC = ("copy", "reverse", "sort")
TRANSLATION = ("en-fr", "en-de")
TASKS = SYNTHETIC + TRANSLATION + ("lm",)
SIMPLE_REPEAT = 12


@dataclass
class Batch:
    src: torch.Tensor | None  # [B, Ts] (None for an LM)
    tgt_in: torch.Tensor  # [B, T] decoder input (starts with BOS)
    tgt_out: torch.Tensor  # [B, T] what to predict (PAD = ignored)

    def to(self, device):
        return Batch(None if self.src is None else self.src.to(device), self.tgt_in.to(device), self.tgt_out.to(device))

    def n_tokens(self) -> int:
        n = int(self.tgt_out.ne(PAD).sum())
        return n + (0 if self.src is None else int(self.src.ne(PAD).sum()))


def pad_rows(rows: list[list[int]]) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([r + [PAD] * (width - len(r)) for r in rows], dtype=torch.long)


def seq2seq_batch(pairs: list[tuple[list[int], list[int]]]) -> Batch:
    """Source ``x … EOS``; decoder input ``BOS y …``; target ``y … EOS`` (teacher forcing)."""
    return Batch(pad_rows([s + [EOS] for s, _ in pairs]), pad_rows([[BOS] + t for _, t in pairs]),
                 pad_rows([t + [EOS] for _, t in pairs]))


def step_generator(seed: int, step: int, rank: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed((seed * 1_000_003 + step) * 97 + rank)


class Task:
    name: str
    description: str = ""
    model_kind = "encoder-decoder"
    tokenizer: Tokenizer
    max_len: int

    def batch(self, step: int, batch_size: int, seed: int, rank: int = 0, world: int = 1) -> Batch:
        raise NotImplementedError

    def evaluate(self, model, n: int = 200) -> dict:
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
        self.max_len = max_len + 2
        self.description = (f"random sequences of {min_len}-{max_len} symbols from {len(SYMBOLS)} "
                            f"(digits 0-9, letters a-j); target = the {name} of the input")

    def target(self, seq: list[int]) -> list[int]:
        return list(seq) if self.name == "copy" else seq[::-1] if self.name == "reverse" else sorted(seq)

    def sample(self, gen: torch.Generator, n: int) -> list[tuple[list[int], list[int]]]:
        lens = torch.randint(self.min_len, self.seq_len + 1, (n,), generator=gen).tolist()
        pairs = []
        for length in lens:
            seq = [self.ids[i] for i in torch.randint(0, len(self.ids), (length,), generator=gen).tolist()]
            pairs.append((seq, self.target(seq)))
        return pairs

    def batch(self, step, batch_size, seed, rank=0, world=1):
        return seq2seq_batch(self.sample(step_generator(seed, step, rank), batch_size))

    def evaluate(self, model, n=200):
        from .decoding import greedy_batch
        pairs = self.sample(torch.Generator().manual_seed(123_456), n)  # held out: a seed training never uses
        device = model.embed.tokens.weight.device
        b = seq2seq_batch(pairs)
        out = greedy_batch(model, b.src.to(device), max_new=self.max_len)
        exact = sum(o == t for o, (_, t) in zip(out, pairs)) / n
        return {"exact_match": exact}


class TranslationTask(Task):
    """English → French or German on the generated corpus; pronoun accuracy is the headline metric."""

    def __init__(self, lang: str, tokenizer: Tokenizer | None = None, vocab_size: int = 1200):
        from .data import translation
        self.name, self.lang, self.data = f"en-{lang}", lang, translation
        train = translation.generate(lang, "train")
        self.tokenizer = tokenizer or Tokenizer.train([p.src for p in train] + [p.tgt for p in train], "bpe", vocab_size)
        # Simple sentences ("I am happy.") are ~1 % of the corpus; repeat them so the model learns them too.
        pool = train + [p for p in train if p.frame == "simple"] * (SIMPLE_REPEAT - 1)
        self.train_ids = [(self.tokenizer.encode(p.src), self.tokenizer.encode(p.tgt)) for p in pool]
        self.max_len = max(max(len(s), len(t)) for s, t in self.train_ids) + 8
        self._order: dict[tuple, list[int]] = {}
        self.description = (f"core.data.translation: {len(train)} generated English→{lang} training pairs, simple "
                            f"sentences repeated ×{SIMPLE_REPEAT} (coreference frames; held-out noun–adjective–frame "
                            "combinations); BPE vocabulary "
                            f"of {self.tokenizer.vocab_size}")

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
        return seq2seq_batch([self.train_ids[i] for i in self._indices(step, batch_size, seed, rank, world)])

    def evaluate(self, model, n=300, split="test"):
        from .decoding import greedy_batch
        pairs = self.data.generate(self.lang, split, n=n, seed=7)
        device = model.embed.tokens.weight.device
        hyps = []
        for i in range(0, len(pairs), 100):
            chunk = pairs[i:i + 100]
            src = pad_rows([self.tokenizer.encode(p.src) + [EOS] for p in chunk]).to(device)
            hyps += [self.tokenizer.decode(o) for o in greedy_batch(model, src, max_new=self.max_len)]
        return translation_metrics(pairs, hyps, self.lang, self.data)


def translation_metrics(pairs, hyps, lang, data) -> dict:
    exact = sum(h == p.tgt for h, p in zip(hyps, pairs)) / len(pairs)
    with_pron = [(h, p) for h, p in zip(hyps, pairs) if p.tgt_pronoun]
    pron = sum(data.pronoun_of(h, lang) == p.tgt_pronoun for h, p in with_pron) / max(1, len(with_pron))
    return {"exact_match": exact, "pronoun_accuracy": pron, "n": len(pairs), "n_pronoun": len(with_pron)}


class LMTask(Task):
    """Next-token prediction on one long token stream (``BOS line EOS`` per line), in random windows of ``seq_len``."""

    model_kind = "decoder-only"

    def __init__(self, text: str | None = None, seq_len: int = 64, tokenizer: Tokenizer | None = None,
                 vocab_size: int = 1500):
        from .data import lm
        self.name = "lm"
        source = "a user text file" if text is not None else "the generated English corpus (core.data.lm, 4000 sentences)"
        text = text if text is not None else lm.generate_corpus(4000, seed=0)
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if not lines:
            raise ValueError("the training text is empty")
        self.tokenizer = tokenizer or Tokenizer.train(lines, "bpe", vocab_size)
        # Each line is one text, BOS … EOS: generation starts as a line does and ends where a line ends. (With
        # BOS alone between lines, decoding — which never emits BOS — had no way to end a text and ran on.)
        stream = []
        for ln in lines:
            stream += [BOS] + self.tokenizer.encode(ln) + [EOS]
        cut = int(len(stream) * 0.95)
        self.train_stream = torch.tensor(stream[:cut])
        self.valid_stream = torch.tensor(stream[cut:])
        self.seq_len = seq_len
        if len(self.train_stream) < seq_len + 2 or len(self.valid_stream) < seq_len + 2:
            raise ValueError(f"the training text is too short: {len(stream)} tokens; need at least "
                             f"{int(2 * (seq_len + 2) / 0.05)} for windows of {seq_len}")
        self.max_len = max(seq_len, 128)
        self.description = (f"{source}: "
                            f"{len(stream)} tokens, BPE vocabulary of {self.tokenizer.vocab_size}, windows of {seq_len}")

    def _windows(self, stream, starts):
        x = torch.stack([stream[s:s + self.seq_len] for s in starts])
        y = torch.stack([stream[s + 1:s + 1 + self.seq_len] for s in starts])
        return Batch(None, x, y)

    def batch(self, step, batch_size, seed, rank=0, world=1):
        gen = step_generator(seed, step, rank)
        starts = torch.randint(0, len(self.train_stream) - self.seq_len - 1, (batch_size,), generator=gen).tolist()
        return self._windows(self.train_stream, starts)

    @torch.no_grad()
    def evaluate(self, model, n=64):
        model.eval()
        device = model.embed.tokens.weight.device
        starts = list(range(0, len(self.valid_stream) - self.seq_len - 1, self.seq_len))[:n]
        b = self._windows(self.valid_stream, starts).to(device)
        logits = model(b.tgt_in).logits
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), b.tgt_out.flatten())
        return {"valid_loss": float(loss), "perplexity": math.exp(min(float(loss), 50.0))}


def make_task(name: str, *, text: str | None = None, seq_len: int | None = None,
              tokenizer: Tokenizer | None = None) -> Task:
    if name in SYNTHETIC:
        return SyntheticTask(name, max_len=seq_len or 12, tokenizer=tokenizer)
    if name in TRANSLATION:
        return TranslationTask(name.split("-")[1], tokenizer=tokenizer)
    if name == "lm":
        return LMTask(text, seq_len=seq_len or 64, tokenizer=tokenizer)
    raise ValueError(f"unknown task {name!r}; choose one of {', '.join(TASKS)}")


def heldout_metrics(ck) -> dict:
    """The metrics a bundled model's card reports, on data training never saw.

    Translation: the whole held-out test split (combinations never seen in training).
    Synthetic: 1000 sequences from a generator seed training never uses. LM: validation loss.
    """
    task_name = ck.meta.get("task", "")
    if task_name in TRANSLATION:
        task = TranslationTask(task_name.split("-")[1], tokenizer=ck.tokenizer)
        return task.evaluate(ck.model, n=None)
    if task_name in SYNTHETIC:
        cfg_len = ck.model.cfg.max_len - 2
        return SyntheticTask(task_name, max_len=cfg_len, tokenizer=ck.tokenizer).evaluate(ck.model, n=1000)
    if task_name == "lm":
        return LMTask(tokenizer=ck.tokenizer, seq_len=64).evaluate(ck.model)
    raise ValueError(f"no held-out evaluation for task {task_name!r}")
