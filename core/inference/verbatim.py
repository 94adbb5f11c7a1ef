"""Does a language model quote its training text? Verbatim overlap between a token sequence and the training stream.

A decoder-only model of the lab learns from one long token stream, ``[BOS] paragraph [EOS]`` for every training
paragraph, each encoded with the model's own tokenizer (:class:`core.training.tasks.LMTask`). :class:`TrainingIndex`
holds that stream and all its positions sorted by the :data:`K` tokens that start there (a suffix array cut at depth
K). For one start ``i`` of a query it finds the longest run ``query[i:i+L]`` that occurs anywhere in the stream
(:meth:`TrainingIndex.longest_at`): a binary search finds the block of positions that share the query's first K
tokens, then the block is extended one token at a time while any position still agrees. The longest verbatim span
(:func:`longest`) and the share of the query's n-grams seen in training (:func:`ngram_shares`) follow from these
lengths. A query holds no [BOS] or [EOS], so a match never crosses from one paragraph into the next.

Tokenizing the shipped lm's training text takes about 40 s on one core, so :func:`training_index` keeps each built
index as ``.npy`` files in a cache folder (``$XDG_CACHE_HOME`` or ``~/.cache``, then ``attention-lab``) and maps them
back into memory on the next start. :func:`compare` measures greedy decoding against sampling on held-out prompts.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..data import english, frozen
from ..io import jsonio
from ..io.tokenizer import BOS, EOS
from . import decoding

K = 4  # tokens that order the positions (the depth of the cut suffix array)
BLOCK = 64  # every BLOCK-th sorted position keeps its key in memory, for the binary search
NS = (4, 8, 16)  # n-gram lengths whose share found in training is reported
VERSION = 1  # bump when the stream, the split or the file layout changes: older cached indexes are then rebuilt
FILES = ("tokens", "order", "starts", "doc_of", "sample")


@dataclass(frozen=True)
class Match:
    """The longest run of a query, from query token ``start``, that occurs in the training stream: ``length``
    tokens, first found at stream ``position`` (-1 when ``length`` is 0) and occurring ``count`` times there."""
    start: int
    length: int
    position: int
    count: int


@dataclass(frozen=True)
class Place:
    """Where a stream position lies: paragraph ``paragraph`` of the stream (from 0), which is paragraph ``number``
    (from 1) of document ``document``; ``offset`` tokens after the paragraph's first token."""
    paragraph: int
    document: str
    number: int
    offset: int


class TrainingIndex:
    """The training stream and its positions sorted by their first :data:`K` tokens.

    ``tokens``: the stream (1-D integer array); ``starts``: the stream position of each paragraph's [BOS]
    (ascending); ``doc_of``: each paragraph's index into ``docs``, the document names; ``vocab``: the tokenizer's
    size (every token id is below it; at most 65,535). ``order`` and ``sample`` are built when not given."""

    def __init__(self, tokens, starts, doc_of, docs: list[str], vocab: int, order=None, sample=None,
                 block: int = BLOCK):
        self.tokens, self.starts, self.doc_of = tokens, np.asarray(starts), np.asarray(doc_of)
        self.docs, self.vocab, self.block = list(docs), int(vocab), int(block)
        self.bits = max(1, self.vocab.bit_length())  # token + 1 ranges over 0 … vocab (0: past the stream's end)
        if self.bits * K > 64:
            raise ValueError(f"a vocabulary of {vocab} does not fit {K} tokens in one 64-bit key")
        if len(tokens) and int(np.max(tokens)) >= self.vocab:
            raise ValueError(f"the stream holds token id {int(np.max(tokens))}, not below the vocabulary {vocab}")
        if order is None:
            keys = np.empty(len(tokens), dtype=np.uint64)
            for a in range(0, len(tokens), 1 << 20):  # in slices: no second full-size temporary per token of K
                keys[a:a + (1 << 20)] = self._keys_at(np.arange(a, min(a + (1 << 20), len(tokens))))
            order = np.argsort(keys, kind="stable").astype(np.int32 if len(tokens) < 2 ** 31 else np.int64)
            sample = keys[order[::self.block]]
            del keys
        self.order = order
        self.sample = sample if sample is not None else self._keys_at(np.asarray(order[::self.block]))

    # ------------------------------------------------------------ sorted keys
    def _keys_at(self, positions) -> np.ndarray:
        """The key of each stream position: its next K tokens (+1 each, 0 past the end), packed high to low."""
        positions = np.asarray(positions, dtype=np.int64)
        n = len(self.tokens)
        key = np.zeros(len(positions), dtype=np.uint64)
        for t in range(K):
            idx = positions + t
            inside = idx < n
            vals = np.zeros(len(positions), dtype=np.uint64)
            vals[inside] = np.asarray(self.tokens[idx[inside]], dtype=np.uint64) + np.uint64(1)
            key = (key << np.uint64(self.bits)) | vals
        return key

    def _pack(self, prefix) -> int:
        """The smallest key of a position that starts with ``prefix`` (at most K token ids)."""
        key = 0
        for t in range(K):
            key = (key << self.bits) | (int(prefix[t]) + 1 if t < len(prefix) else 0)
        return key

    def _count_below(self, key: int) -> int:
        """How many sorted positions have a key below ``key``: the sample narrows it to one block, searched then."""
        if key >= 1 << 64:  # the upper bound of the largest prefix: every key is below it
            return len(self.order)
        b = int(np.searchsorted(self.sample, np.uint64(key), side="left"))
        if b == 0:
            return 0
        lo, hi = (b - 1) * self.block, min(b * self.block, len(self.order))
        return lo + int(np.searchsorted(self._keys_at(self.order[lo:hi]), np.uint64(key), side="left"))

    def _range(self, prefix) -> tuple[int, int]:
        """The slice of ``order`` whose positions start with ``prefix`` (1 to K token ids)."""
        low = self._pack(prefix)
        return self._count_below(low), self._count_below(low + (1 << self.bits * (K - len(prefix))))

    # ------------------------------------------------------------ matches
    def longest_at(self, query, i: int) -> Match:
        """The longest run of ``query`` from token ``i`` that occurs in the stream (:class:`Match`)."""
        q = np.asarray(query, dtype=np.int64)
        r = 0
        while i + r < len(q) and 0 <= q[i + r] < self.vocab:  # an id outside the vocabulary matches nothing
            r += 1
        if r == 0 or not len(self.order):
            return Match(i, 0, -1, 0)
        j = min(K, r)
        lo, hi = self._range(q[i:i + j])
        while lo == hi and j > 1:
            j -= 1
            lo, hi = self._range(q[i:i + j])
        if lo == hi:
            return Match(i, 0, -1, 0)
        cand = np.asarray(self.order[lo:hi], dtype=np.int64)
        length, n = j, len(self.tokens)
        if j == min(K, r):  # all K first tokens found: extend while some occurrence still agrees
            while length < r:
                idx = cand + length
                inside = idx < n
                cand_in, idx = cand[inside], idx[inside]
                keep = cand_in[np.asarray(self.tokens[idx]) == q[i + length]]
                if not len(keep):
                    break
                cand, length = keep, length + 1
        return Match(i, length, int(cand.min()), len(cand))

    def matches(self, query) -> list[Match]:
        """:meth:`longest_at` for every start of ``query``."""
        return [self.longest_at(query, i) for i in range(len(query))]

    # ------------------------------------------------------------ where a match lies
    def locate(self, position: int) -> Place:
        """The paragraph and document holding stream ``position``."""
        p = int(np.searchsorted(self.starts, position, side="right")) - 1
        d = int(self.doc_of[p])  # documents are numbered in stream order: their paragraphs are consecutive
        first = int(np.searchsorted(self.doc_of, d, side="left"))
        return Place(p, self.docs[d], p - first + 1, int(position - self.starts[p] - 1))

    def paragraph(self, p: int) -> np.ndarray:
        """The token ids of paragraph ``p`` (its [BOS] and [EOS] left out)."""
        end = int(self.starts[p + 1]) if p + 1 < len(self.starts) else len(self.tokens)
        ids = np.asarray(self.tokens[int(self.starts[p]) + 1:end], dtype=np.int64)
        return ids[:-1] if len(ids) and ids[-1] == EOS else ids

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays (mapped from a file, they are read from disk as needed)."""
        return sum(np.asarray(getattr(self, f)).nbytes for f in FILES)

    # ------------------------------------------------------------ files
    def save(self, folder: Path) -> None:
        """Write the arrays as ``.npy`` files and the names as ``index.json`` into ``folder``."""
        folder.mkdir(parents=True, exist_ok=True)
        for f in FILES:
            np.save(folder / f"{f}.npy", np.asarray(getattr(self, f)), allow_pickle=False)
        (folder / "index.json").write_text(jsonio.dumps({"docs": self.docs, "vocab": self.vocab, "block": self.block,
                                                         "k": K, "version": VERSION}), encoding="utf-8")

    @classmethod
    def open(cls, folder: Path) -> "TrainingIndex":
        """An index saved by :meth:`save`, its arrays mapped from disk (ValueError when it is not complete)."""
        try:
            meta = jsonio.loads((folder / "index.json").read_text(encoding="utf-8"))
            arrays = {f: np.load(folder / f"{f}.npy", mmap_mode="r", allow_pickle=False) for f in FILES}
        except (OSError, ValueError) as e:
            raise ValueError(f"no complete index in {folder}: {e}") from None
        if meta.get("k") != K or meta.get("version") != VERSION:
            raise ValueError(f"the index in {folder} was built by another version")
        return cls(arrays["tokens"], arrays["starts"], arrays["doc_of"], meta["docs"], meta["vocab"],
                   order=arrays["order"], sample=np.asarray(arrays["sample"]), block=meta["block"])


def longest(matches: list[Match]) -> Match | None:
    """The longest of ``matches`` (the first of equals); None for an empty query."""
    return max(matches, key=lambda m: (m.length, -m.start)) if matches else None


def ngram_shares(matches: list[Match], ns=NS) -> dict[int, tuple[int, int]]:
    """For each n: (n-grams of the query found verbatim in training, n-grams of the query). The n-gram from token
    i is in training exactly when the longest match from i is at least n tokens long."""
    out = {}
    for n in ns:
        total = max(0, len(matches) - n + 1)
        out[n] = (sum(m.length >= n for m in matches[:total]), total)
    return out


# ------------------------------------------------------------------ building one from a model's training text
def stream_of(tokenizer, paragraphs: list[str], chunk: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """``[BOS] paragraph [EOS]`` for every paragraph, as :class:`core.training.tasks.LMTask` builds its stream:
    (the stream as uint16, or int32 for a vocabulary above 65,535; each paragraph's [BOS] position)."""
    dtype = np.uint16 if tokenizer.vocab_size <= 65535 else np.int32
    parts, starts, n = [], [], 0
    for a in range(0, len(paragraphs), chunk):
        buf: list[int] = []
        for ids in tokenizer.encode_batch(paragraphs[a:a + chunk]):
            starts.append(n + len(buf))
            buf += [BOS, *ids, EOS]
        parts.append(np.array(buf, dtype=dtype))
        n += len(buf)
    tokens = np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
    return tokens, np.array(starts, dtype=np.int64)


def _arrays_of(tokenizer, documents: list[tuple[str, list[str]]]) -> tuple:
    """(stream, paragraph starts, each paragraph's document, document names) of ``documents``."""
    doc_of = np.repeat(np.arange(len(documents), dtype=np.int32), [len(ps) for _, ps in documents])
    tokens, starts = stream_of(tokenizer, [p for _, ps in documents for p in ps])
    return tokens, starts, doc_of, [name for name, _ in documents]


def from_documents(tokenizer, documents: list[tuple[str, list[str]]]) -> TrainingIndex:
    """The index of ``documents`` (name, paragraphs), in order, each paragraph a text of the stream."""
    return TrainingIndex(*_arrays_of(tokenizer, documents), tokenizer.vocab_size)


def train_documents(corpus) -> list[tuple[str, list[str]]]:
    """The training paragraphs of a frozen prose corpus (:class:`core.data.english.ProseCorpus`, or a
    :class:`~core.data.english.ProseUnion` of several), each with the document (``source/path``) it came from, in
    the order of ``corpus.lines("train")``: a document's split is :func:`core.data.english.split_of` its key, and a
    paragraph met before in the same frozen part (in any split) is left out, as
    :func:`core.data.english.split_documents` does."""
    out = []
    for part in getattr(corpus, "parts", (corpus,)):
        seen: set[str] = set()
        for doc in frozen.read(part.name):
            train = english.split_of(doc.key) == "train"
            kept = []
            for p in doc.paragraphs:
                if p not in seen:
                    seen.add(p)
                    if train:
                        kept.append(p)
            if kept:
                out.append((doc.key, kept))
    return out


def cache_root() -> Path:
    """Where built indexes are kept: ``$XDG_CACHE_HOME/attention-lab`` (default ``~/.cache/attention-lab``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "attention-lab"


def _prose(ck):
    """The frozen prose corpus (``CORPUS`` of its core.data module) of a real-English lm, else None."""
    from ..data import PROSE, prose_for
    task = ck.meta.get("task")
    return prose_for(task).CORPUS if task in PROSE else None


def _known_text(ck) -> str:
    """The checkpoint's task, or ValueError when its training text cannot be rebuilt here."""
    task = ck.meta.get("task")
    if ck.model.cfg.kind != "decoder-only":
        raise ValueError("only a decoder-only language model writes text from its training stream")
    if "--text" in str(ck.meta.get("command", "")):
        raise ValueError("this model was trained on a user's text file, which is not kept with the model")
    if not task:
        raise ValueError("this model's checkpoint does not name the task it was trained on")
    return task


def cache_folder(ck, root: Path | None = None) -> Path:
    """The folder of a real-English lm's index: named by its task and a digest of its tokenizer and of the frozen
    corpus files it reads (a new tokenizer or a rebuilt corpus gets a new folder)."""
    corpus = _prose(ck)
    h = hashlib.sha256(f"{VERSION} {K} {ck.meta['task']}\n{ck.tokenizer.to_str()}".encode())
    for part in getattr(corpus, "parts", (corpus,)):
        h.update(frozen.manifest(part.name)["data_sha256"].encode())
    return (root or cache_root()) / f"verbatim-{ck.meta['task']}-{h.hexdigest()[:12]}"


def training_index(ck, root: Path | None = None, log=None) -> TrainingIndex:
    """The :class:`TrainingIndex` of a decoder-only checkpoint's training stream: for a real-English lm its frozen
    corpus's train split, document by document (kept in :func:`cache_folder` once built); for ``lm-tiny`` the
    generated stories of its training stream, one document (built in memory: about 40 k tokens). ValueError when the
    training text cannot be rebuilt (a user's text file, an unnamed task)."""
    say = log or (lambda msg: None)
    task = _known_text(ck)
    corpus = _prose(ck)
    if corpus is None:
        from ..training.tasks import make_task  # inside the function: inference never imports training at load
        try:
            lm_task = make_task(task, tokenizer=ck.tokenizer)
            stream = lm_task.train_stream.numpy()
        except (ValueError, AttributeError, NotImplementedError) as e:
            raise ValueError(f"the training text of task {task!r} cannot be rebuilt here ({e})") from None
        starts = np.flatnonzero(stream == BOS)
        if not len(starts) or starts[0] != 0:
            raise ValueError(f"the training stream of task {task!r} does not start with [BOS]")
        name = lm_task.description.split(":")[0]  # "the generated English corpus (core.data.lm, …)"
        return TrainingIndex(stream.astype(np.uint16 if ck.tokenizer.vocab_size <= 65535 else np.int32), starts,
                             np.zeros(len(starts), dtype=np.int32), [name], ck.tokenizer.vocab_size)
    folder = cache_folder(ck, root)
    try:
        return TrainingIndex.open(folder)
    except ValueError:
        pass
    say(f"reading the frozen corpus of {task}")
    documents = train_documents(corpus)  # the same lines as corpus.lines("train") (tests/core/test_verbatim.py)
    say(f"tokenizing {sum(len(ps) for _, ps in documents):,} paragraphs of {len(documents):,} documents")
    arrays = _arrays_of(ck.tokenizer, documents)
    del documents  # the text (≈ 100 MB as Python strings) is not needed while the positions are sorted
    say(f"sorting the positions of {len(arrays[0]):,} tokens")
    index = TrainingIndex(*arrays, ck.tokenizer.vocab_size)
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    try:
        index.save(tmp)
        os.replace(tmp, folder)  # whole or not at all: two servers may build at once
    except OSError as e:  # a read-only cache folder, or another process was first (its folder holds the same index)
        shutil.rmtree(tmp, ignore_errors=True)
        say(f"kept in memory only: {e}")
    try:
        return TrainingIndex.open(folder)
    except ValueError:
        return index


# ------------------------------------------------------------------ where a match came from, as text
def passage(index: TrainingIndex, tokenizer, match: Match, context: int = 240) -> dict:
    """The training paragraph around ``match``: its document, its number there, and the text before the copied
    span, the span, and after it (each side cut to about ``context`` characters at a space; ``cut_before`` /
    ``cut_after`` say whether it was cut)."""
    place = index.locate(match.position)
    ids = index.paragraph(place.paragraph)
    a, b = place.offset, place.offset + match.length
    before, upto, whole = (tokenizer.decode(ids[:a].tolist()), tokenizer.decode(ids[:b].tolist()),
                           tokenizer.decode(ids.tolist()))
    if upto.startswith(before) and whole.startswith(upto):
        span, after = upto[len(before):], whole[len(upto):]
    else:  # a piece that does not decode as a prefix (a character split across tokens): decode the parts apart
        span, after = " " + tokenizer.decode(ids[a:b].tolist()), " " + tokenizer.decode(ids[b:].tolist())
    cut_before, cut_after = len(before) > context, len(after) > context
    if cut_before:
        before = before[-context:]
        before = before[before.find(" ") + 1:] if " " in before else before
    if cut_after:
        after = after[:context]
        after = after[:after.rfind(" ")] if " " in after.strip() else after
    return {"document": place.document, "paragraph": place.paragraph, "number": place.number, "offset": place.offset,
            "before": before,
            "span": span, "after": after, "cut_before": cut_before, "cut_after": cut_after}


def summary(index: TrainingIndex, ids) -> dict:
    """Everything the page shows of one token sequence: its length, the longest match (a :class:`Match`, None for
    an empty sequence) and :func:`ngram_shares`."""
    ms = index.matches(list(ids))
    return {"tokens": len(ms), "longest": longest(ms), "shares": ngram_shares(ms)}


# ------------------------------------------------------------------ greedy against sampling, on held-out prompts
def compare_spec(task: str) -> dict:
    """The settings of :func:`compare` for a task (short prompts for the tiny generated stories)."""
    from ..data import PROSE
    tiny = task not in PROSE
    return {"task": task, "prompts": 16, "prompt_tokens": 4 if tiny else 16, "new_tokens": 24 if tiny else 40,
            "samples": 3, "temperature": 1.0, "ns": list(NS), "version": VERSION}


def heldout_paragraphs(ck) -> list[str]:
    """Held-out text of the model's task: a real-English lm's test split, else the lines after the 95 % cut of the
    training stream (:class:`core.training.tasks.LMTask`)."""
    corpus = _prose(ck)
    if corpus is not None:
        return corpus.lines("test")
    from ..training.tasks import make_task
    task = make_task(_known_text(ck), tokenizer=ck.tokenizer)
    from ..data import lm
    lines = [ln for ln in lm.generate_corpus(4000, seed=0).splitlines() if ln.strip()]
    return lines[len(task.train_lines):]


def compare(ck, index: TrainingIndex, spec: dict | None = None, progress=None) -> dict:
    """How much of what the model writes occurs verbatim in its training text, for three kinds of continuation of
    the same held-out prompts (the first ``prompt_tokens`` of ``prompts`` held-out paragraphs long enough, evenly
    spread): the paragraph's real next ``new_tokens`` (a baseline: text the model never read), greedy decoding,
    and sampling at ``temperature`` (``samples`` seeds each). Per kind: continuations, their tokens, the mean and
    largest longest-match, and the n-grams found / in total, pooled."""
    spec = spec or compare_spec(ck.meta.get("task", ""))
    p, new = spec["prompt_tokens"], spec["new_tokens"]
    rows = [ids for ids in ck.tokenizer.encode_batch(heldout_paragraphs(ck)) if len(ids) >= p + new]
    if not rows:
        raise ValueError("no held-out paragraph is long enough for these prompts")
    step = max(1, len(rows) // spec["prompts"])
    rows = rows[::step][:spec["prompts"]]
    kinds = {"held-out text (the real continuation)": [], "greedy": [], "sampling": []}
    with torch.no_grad():
        for k, ids in enumerate(rows):
            prompt = ids[:p]
            kinds["held-out text (the real continuation)"].append(ids[p:p + new])
            kinds["greedy"].append(decoding.generate(ck.model, prompt=prompt, method="greedy", max_new=new).ids)
            for s in range(spec["samples"]):
                kinds["sampling"].append(decoding.generate(ck.model, prompt=prompt, method="sample", max_new=new,
                                                           temperature=spec["temperature"], seed=s).ids)
            if progress:
                progress(k + 1, len(rows))
    out = []
    for kind, conts in kinds.items():
        found = {n: 0 for n in NS}
        total = {n: 0 for n in NS}
        longs = []
        for c in conts:
            s = summary(index, c)
            longs.append(s["longest"].length if s["longest"] else 0)
            for n, (f, t) in s["shares"].items():
                found[n] += f
                total[n] += t
        out.append({"kind": kind, "continuations": len(conts), "tokens": sum(len(c) for c in conts),
                    "longest_mean": float(np.mean(longs)), "longest_max": int(max(longs)),
                    "found": {str(n): found[n] for n in NS}, "total": {str(n): total[n] for n in NS}})
    return {"spec": spec, "rows": out}
