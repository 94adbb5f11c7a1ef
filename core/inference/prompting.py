"""A task stated as text, and a sentence scored by its likelihood: what GPT and GPT-2 did with no task-specific
training (Radford et al. 2018, 2019).

- **Few-shot prompting.** The prompt shows ``k`` solved examples and then asks for one more:
  ``dog = dogs ; cat = cats ; horse =``. The model is never asked to write; each candidate answer is scored by the
  summed log-probability of its tokens after the prompt, ``log p(answer | prompt) = Σ_t log p(a_t | prompt, a_<t)``,
  and the best-scored candidate is its answer. :func:`few_shot_curve` measures the accuracy on a fixed held-out set
  of queries for ``k = 0, 1, 2, 4, 8`` (:data:`KS`); the examples come from a separate pool, never the queries.
- **Winograd by likelihood** (Trinh & Le 2018, GPT-2 §3.5): put each candidate noun in the place of "it" and
  compare the summed log-probabilities of the sentences (*full* scoring), or of the words after the substitution
  only (*partial* scoring).

Scores come from a causal (decoder-only) model: the tokens shared by every scored text are run once, with a KV
cache, and each candidate's remaining tokens after them, all in one batch. Tokenization is that of the whole text
(as :func:`core.inference.mlm.continuation_tokens` splits it): ``"horse = horses"`` is split as the model reads it.
"""
from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Mapping

import torch

from ..io import jsonio
from ..io.tokenizer import BOS, PAD, UNK, normalize_text

KS = (0, 1, 2, 4, 8)  # demonstrations per prompt on the curve
POOL = 16  # demonstrations are drawn from this many pairs; the queries are other pairs
QUERIES = 32  # held-out queries per task
SEED = 0
SEPARATORS = (("=", ";"), (",", "."))  # (word to answer, example to example): the first the tokenizer knows is used
MAX_ANSWERS = 5  # candidate answers a user may type
PRONOUN = re.compile(r"\bit\b", re.IGNORECASE)


@dataclass(frozen=True)
class Task:
    """A task given as (word, answer) pairs: ``pool`` supplies the demonstrations, ``queries`` are scored."""
    name: str
    title: str
    pool: tuple[tuple[str, str], ...]
    queries: tuple[tuple[str, str], ...]
    query_is_distractor: bool  # the query word itself is among the candidates (a model that only copies picks it)

    def candidates(self, i: int) -> list[str]:
        """The answers query ``i`` is ranked among: every query's answer (each once), then the query word itself
        when :attr:`query_is_distractor`; the right one is ``self.queries[i][1]``."""
        out = list(dict.fromkeys(a for _, a in self.queries))
        word = self.queries[i][0]
        if self.query_is_distractor and word not in out:
            out.append(word)
        return out


def _split(pairs: list[tuple[str, str]], seed: int) -> tuple[tuple, tuple]:
    """Shuffle ``pairs`` with ``seed`` and cut them into the demonstration pool and the held-out queries."""
    pairs = list(pairs)
    random.Random(seed).shuffle(pairs)
    if len(pairs) < POOL + QUERIES:
        raise ValueError(f"a task needs {POOL + QUERIES} pairs, got {len(pairs)}")
    return tuple(pairs[:POOL]), tuple(pairs[POOL:POOL + QUERIES])


@lru_cache(maxsize=4)
def tasks(seed: int = SEED) -> Mapping[str, Task]:
    """The tasks of the curve, from the lexicon (``core/data/lexicon.json``), on its most frequent nouns: the plural of
    countable nouns (the query word itself is a candidate, the answer a model that only copies gives), repeating the
    word (the in-context copy an induction head does), and the German for an English noun (GPT-2's "english =
    french" pairs)."""
    from ..data import broad  # the lexicon's module takes 60 ms to import: only when the tasks are first built
    lex = broad.lexicon()
    nouns = sorted((n for n in lex.nouns.values() if n.en_pl != n.en and n.en.isalpha() and n.en_pl.isalpha()),
                   key=lambda n: n.rank)[:POOL + QUERIES]
    german = sorted((n for n in lex.nouns.values() if n.en.isalpha() and n.de.isalpha()),
                    key=lambda n: n.rank)[:POOL + QUERIES]
    made = [("plural", "singular → plural", [(n.en, n.en_pl) for n in nouns], True),
            ("copy", "repeat the word", [(n.en, n.en) for n in nouns], False),
            ("german", "English → German", [(n.en, n.de) for n in german], True)]
    out = {}
    for name, title, pairs, distract in made:
        pool, queries = _split(pairs, seed)
        out[name] = Task(name, title, pool, queries, distract)
    return MappingProxyType(out)  # cached: read-only


def separators(tokenizer) -> tuple[str, str]:
    """The first pair of :data:`SEPARATORS` the tokenizer reads without [UNK] (lm-tiny never saw "=" or ";")."""
    for pair in SEPARATORS:
        if UNK not in tokenizer.encode(" ".join(pair)):
            return pair
    return SEPARATORS[0]


def build_prompt(demos, word: str, seps: tuple[str, str] = SEPARATORS[0]) -> str:
    """``"dog = dogs ; cat = cats ; horse ="``: each demonstration ``(x, y)`` as ``x = y``, joined by ``;``, then the
    query word and ``=`` (with ``seps`` = ``("=", ";")``). No demonstrations: just ``"horse ="``."""
    eq, sep = seps
    shown = [f"{x} {eq} {y} {sep}" for x, y in demos]
    return " ".join(shown + [f"{word} {eq}"])


def demonstrations(task: Task, i: int, k: int, seed: int = SEED) -> list[tuple[str, str]]:
    """The first ``k`` pairs of a fixed shuffle of the pool for query ``i``: a larger ``k`` adds examples and keeps
    the smaller one's, so the curve compares prompts that differ only in what was added."""
    order = list(task.pool)
    random.Random(f"{seed}:{task.name}:{i}").shuffle(order)
    return order[:k]


# ------------------------------------------------------------------ scoring texts with a causal model
class TooLong(ValueError):
    """The texts to score are longer than the model reads."""


@dataclass
class Scored:
    """The summed log-probability (nats) of the scored tokens of one text, and those tokens."""
    logp: float
    tokens: list[int]

    @property
    def per_token(self) -> float:
        """The mean log p per scored token."""
        return self.logp / max(1, len(self.tokens))


def _causal(model) -> None:
    if model.cfg.kind != "decoder-only":
        raise ValueError("scoring a text by its likelihood needs a GPT-style (decoder-only) model")


def _expand(caches, n: int):
    """Every cached tensor of a batch of one repeated ``n`` times (the shared prefix, for each candidate)."""
    def grow(d):
        for key in list(d):
            if isinstance(d[key], dict):
                grow(d[key])
            elif torch.is_tensor(d[key]):
                d[key] = d[key].expand(n, *d[key].shape[1:]).contiguous()
    for c in caches:
        grow(c)
    return caches


def _tokenize(tokenizer, items: list[tuple[str, str]]) -> tuple[list[list[int]], list[int]]:
    """``[BOS]`` + the tokens of each ``prompt + continuation``, and the index where the continuation's tokens start:
    after the leading tokens the whole text shares with the prompt's own tokens (a word that runs on from the prompt
    is scored whole). ValueError for an empty continuation."""
    if any(not normalize_text(c) for _, c in items):
        raise ValueError("a candidate is empty: type a word or a few")
    texts = [normalize_text(p + c) for p, c in items]
    heads = {p: tokenizer.encode(p) for p in dict.fromkeys(p for p, _ in items)}
    rows, starts = [], []
    for (prompt, _), enc in zip(items, tokenizer.hf.encode_batch(texts, add_special_tokens=False)):
        ids, head, k = enc.ids, heads[prompt], 0
        while k < min(len(ids), len(head)) and ids[k] == head[k]:
            k += 1
        if k == len(ids):
            raise ValueError("the candidate adds no token to the prompt")
        rows.append([BOS] + ids)
        starts.append(1 + k)  # index in the row of the first scored token
    return rows, starts


def _check_room(model, rows: list[list[int]]) -> None:
    longest = max(len(r) for r in rows)
    if longest > model.max_positions:
        raise TooLong(f"the text is {longest} tokens long; this model reads at most {model.max_positions} here")


@torch.no_grad()
def _token_logps(model, rows: list[list[int]], shared: int) -> torch.Tensor:
    """``[rows, width]``: column j holds log p of the token at index ``shared + j`` of each row given the tokens
    before it (0 past a row's end). The first ``shared`` tokens, the same in every row, are run once (KV cache);
    the rest of every row in one batch."""
    device = model.device
    caches = model.new_caches()
    h = model.decode(torch.tensor([rows[0][:shared]], device=device), start=0, caches=caches)
    first = model.project(h[:, -1]).float().log_softmax(-1)[0]  # predicts the token at index ``shared``
    rest = [r[shared:] for r in rows]
    batch = torch.full((len(rows), max(len(r) for r in rest)), PAD, dtype=torch.long, device=device)
    for b, r in enumerate(rest):
        batch[b, :len(r)] = torch.tensor(r, device=device)
    logp = model.project(model.decode(batch, start=shared, caches=_expand(caches, len(rows)))).float()
    logp = logp.log_softmax(-1)
    each = torch.cat([first[batch[:, :1]], logp[:, :-1].gather(-1, batch[:, 1:, None])[..., 0]], 1).double().cpu()
    for b, r in enumerate(rest):
        each[b, len(r):] = 0.0
    return each


def score_pairs(model, tokenizer, items: list[tuple[str, str]]) -> list[Scored]:
    """For each ``(prompt, continuation)``: the summed log p of the continuation's tokens, each given ``[BOS]``, the
    prompt and the tokens before it. The model reads ``[BOS]`` and the tokens of ``prompt + continuation``; tokens
    every text shares are run once (KV cache), the rest in one batch. ValueError: an empty continuation, a
    non-causal model, or texts longer than the model reads."""
    _causal(model)
    if not items:
        return []
    rows, starts = _tokenize(tokenizer, items)
    _check_room(model, rows)
    shared = min(starts)  # never share a scored token: its prediction must come from the row's own tokens
    for r in rows[1:]:
        while shared > 1 and r[:shared] != rows[0][:shared]:
            shared -= 1
    each = _token_logps(model, rows, shared)
    return [Scored(float(each[b, s - shared:len(r) - shared].sum()), r[s:])
            for b, (r, s) in enumerate(zip(rows, starts))]


def score_answers(model, tokenizer, prompt: str, answers: list[str]) -> list[Scored]:
    """Each answer's summed log p after ``prompt`` (a space between them, as a new word)."""
    return score_pairs(model, tokenizer, [(prompt, " " + a.strip()) for a in answers])


def parse_answers(text: str, limit: int = MAX_ANSWERS) -> list[str]:
    """Comma-separated answers, blanks dropped, each once, in order. ValueError: none, or more than ``limit``."""
    out = list(dict.fromkeys(a for a in (normalize_text(x) for x in (text or "").split(",")) if a))
    if not out:
        raise ValueError("type at least one candidate answer (several are separated by commas)")
    if len(out) > limit:
        raise ValueError(f"type at most {limit} candidate answers; you typed {len(out)}")
    return out


# ------------------------------------------------------------------ accuracy
def best(scores: list[float]) -> int:
    """The index of the highest score (the first of equal ones)."""
    return max(range(len(scores)), key=scores.__getitem__)


def rank_of(scores: list[float], right: int) -> int:
    """1 + the number of other candidates scoring at least as high as ``scores[right]`` (a tie counts against it:
    a model that scores every candidate alike is never right)."""
    return 1 + sum(s >= scores[right] for j, s in enumerate(scores) if j != right)


def accuracy(rows: list[tuple[list[float], int]]) -> dict:
    """Top-1 accuracy and mean rank of ``(scores, index of the right answer)`` rows; chance is the mean of
    1 / (number of candidates)."""
    ranks = [rank_of(s, r) for s, r in rows]
    n = len(rows)
    return {"accuracy": sum(r == 1 for r in ranks) / n, "mean_rank": sum(ranks) / n,
            "chance": sum(1 / len(s) for s, _ in rows) / n, "n": n, "ranks": ranks}


def model_scorer(model, tokenizer):
    """``scorer(prompt, candidates) -> summed log p of each``: :func:`score_answers` with this model."""
    return lambda prompt, cands: [s.logp for s in score_answers(model, tokenizer, prompt, cands)]


def few_shot_curve(scorer, task: Task, ks=KS, seps: tuple[str, str] = SEPARATORS[0], seed: int = SEED,
                   progress=None) -> dict:
    """Accuracy and mean rank over ``task.queries`` for each ``k`` in ``ks``: each query's prompt holds ``k``
    demonstrations (:func:`demonstrations`), and its candidates (:meth:`Task.candidates`) are ranked by
    ``scorer(prompt, candidates)``. A ``k`` whose prompts are longer than the model reads (:class:`TooLong`) gets
    ``accuracy`` None. ``progress(done, total)`` after each prompt."""
    points, total, done = [], len(ks) * len(task.queries), 0
    for k in ks:
        rows = []
        try:
            for i, (word, answer) in enumerate(task.queries):
                cands = task.candidates(i)
                prompt = build_prompt(demonstrations(task, i, k, seed), word, seps)
                rows.append((list(scorer(prompt, cands)), cands.index(answer)))
                done += 1
                if progress:
                    progress(done, total)
        except TooLong:
            points.append({"k": k, "accuracy": None, "mean_rank": None, "chance": None, "n": 0, "ranks": [],
                           "picks": []})
            continue
        picks = [task.candidates(i)[best(scores)] for i, (scores, _) in enumerate(rows)]
        points.append({"k": k} | accuracy(rows) | {"picks": picks})
    return {"task": task.name, "title": task.title, "separators": list(seps), "points": points,
            "example": build_prompt(demonstrations(task, 0, max(ks), seed), task.queries[0][0], seps),
            "example_answer": task.queries[0][1]}


def curve_spec(seed: int = SEED) -> dict:
    """What a shipped curve must have been measured on: k values, pool and query counts, seed, separators and the
    pairs (SHA-256)."""
    pairs = {t.name: [t.pool, t.queries] for t in tasks(seed).values()}
    sha = hashlib.sha256(jsonio.dumps(pairs, ensure_ascii=False).encode()).hexdigest()
    return {"ks": list(KS), "pool": POOL, "queries": QUERIES, "seed": seed, "separators": [list(p) for p in SEPARATORS],
            "pairs_sha256": sha}


def all_curves(model, tokenizer, seed: int = SEED, progress=None) -> dict:
    """:func:`few_shot_curve` of every task of :func:`tasks` with this model, under :func:`curve_spec`;
    ``progress(done, total)`` counts the prompts of every task together."""
    scorer, seps = model_scorer(model, tokenizer), separators(tokenizer)
    every = list(tasks(seed).values())
    total = sum(len(KS) * len(t.queries) for t in every)
    curves, before = [], 0
    for t in every:
        tell = None if progress is None else (lambda k, _n, b=before: progress(b + k, total))
        curves.append(few_shot_curve(scorer, t, seps=seps, seed=seed, progress=tell))
        before += len(KS) * len(t.queries)
    return {"spec": curve_spec(seed), "curves": curves}


def binomial_tail(hits: int, n: int, p: float) -> float:
    """P(X ≥ hits) for X ~ Binomial(n, p): how often guessing at chance ``p`` does at least this well."""
    from math import comb
    return sum(comb(n, j) * p ** j * (1 - p) ** (n - j) for j in range(max(0, hits), n + 1))


# ------------------------------------------------------------------ Winograd by likelihood
@dataclass
class Substituted:
    """The sentence with a candidate in the place of the pronoun, cut where the candidate ends."""
    candidate: str
    before: str  # up to and including the candidate
    after: str  # the rest of the sentence

    @property
    def text(self) -> str:
        """The whole substituted sentence."""
        return self.before + self.after


def substitute(sentence: str, candidates: list[str], pronoun: re.Pattern = PRONOUN) -> list[Substituted]:
    """Each candidate in the place of the first "it" of ``sentence`` (capitalised where "It" starts a sentence).
    ValueError when the sentence has no "it" or no candidate is given."""
    sentence = normalize_text(sentence)
    m = pronoun.search(sentence)
    if m is None:
        raise ValueError('the sentence has no "it" to replace')
    cands = [c for c in (normalize_text(c) for c in candidates) if c]
    if not cands:
        raise ValueError("type at least one candidate noun phrase")
    out = []
    for c in cands:
        shown = c[:1].upper() + c[1:] if m.group(0)[0].isupper() else c
        out.append(Substituted(c, sentence[:m.start()] + shown, sentence[m.end():]))
    return out


def candidate_phrases(sentence: str, limit: int = 4) -> list[str]:
    """Noun phrases "the X" (or "a X") of the sentence before its first "it", each once: the default candidates."""
    sentence = normalize_text(sentence)
    m = PRONOUN.search(sentence)
    head = sentence[:m.start()] if m else sentence
    found = re.findall(r"\b(?:the|a|an)\s+[A-Za-z]+", head, flags=re.IGNORECASE)
    return list(dict.fromkeys(f.lower() for f in found))[:limit]


def winograd(model, tokenizer, sentences: list[str], candidates: list[str]) -> list[list[dict]]:
    """For each sentence, for each candidate: the substituted sentence, its summed log p (*full*: every token after
    ``[BOS]``) and the summed log p of the words after the candidate (*partial*, Trinh & Le 2018; None when nothing
    follows), with their token counts. One batched pass for every sentence and candidate: the partial score is the
    tail of the full sentence's token log-probs."""
    _causal(model)
    subs = [substitute(sentence, candidates) for sentence in sentences]
    flat = [s for group in subs for s in group]
    rows, _ = _tokenize(tokenizer, [("", s.text) for s in flat])
    _check_room(model, rows)
    each = _token_logps(model, rows, 1)  # column j: the token at index 1 + j
    scored = []
    for b, (s, r) in enumerate(zip(flat, rows)):
        head, k = tokenizer.encode(s.before), 0
        while k < min(len(head), len(r) - 1) and r[1 + k] == head[k]:
            k += 1
        tail = len(r) - 1 - k  # the tokens after the candidate's
        scored.append({"candidate": s.candidate, "sentence": s.text, "full": float(each[b, :len(r) - 1].sum()),
                       "full_tokens": len(r) - 1, "partial": float(each[b, k:len(r) - 1].sum()) if tail else None,
                       "partial_tokens": tail})
    out, at = [], 0
    for group in subs:
        out.append(scored[at:at + len(group)])
        at += len(group)
    return out
