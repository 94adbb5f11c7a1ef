"""Pre-train, then fine-tune: BERT's second step (Devlin et al. 2019, sec. 3.2), measured on our question.

The downstream task: in "The ⟨animal⟩ didn't ⟨verb⟩ the ⟨place⟩ because it was too ⟨adjective⟩.", does
*it* mean the animal or the place? A small classifier reads the encoder's final vector for *it*. Only a
few adjectives are labelled for fine-tuning; the test sentences use the *other* adjectives, so a model
can only beat "always the more common answer" if it already knows, from pre-training, which adjectives
describe animals ("scared", "sick") and which describe places ("steep", "crowded"). The same architecture trained from a
random start with the same labels, steps and learning rate is the control.
"""
from __future__ import annotations

import copy
import random
import time
from dataclasses import dataclass, field
from functools import lru_cache

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..model import Transformer
from .tasks import pad_rows

LABELS = ("the animal", "the place")
TRAIN_ADJECTIVES = ("tired", "hungry", "wide", "deep")  # two of each kind; every other adjective is unseen


def adjective(sentence: str) -> str:
    """The last word of ``sentence`` (final period dropped): the adjective of a "… because it was too …"
    sentence."""
    return sentence.rstrip(".").split()[-1]


@lru_cache(maxsize=1)
def sentences() -> tuple[str, ...]:
    """Every "didn't … because it was too …" sentence of the translation grammar (without "next to")."""
    from ..data.translation import english_sentences
    return tuple(s for s in english_sentences()
                 if " didn't " in s and " because it was too " in s and " next to " not in s)


def label(sentence: str) -> int:
    """0 when the adjective describes a being (*it* = the animal), 1 when it describes a place."""
    from ..data.translation import ADJECTIVES
    return int(ADJECTIVES[adjective(sentence)].kind == "place")


def split(train_adjectives=TRAIN_ADJECTIVES, n_test: int = 200, seed: int = 0) -> tuple[list[str], list[str]]:
    """(sentences with a training adjective, ``n_test`` sentences with any other adjective)."""
    pool, rest = [], []
    for s in sentences():
        (pool if adjective(s) in train_adjectives else rest).append(s)
    return pool, random.Random(seed).sample(rest, min(n_test, len(rest)))


def it_position(tok, ids: list[int]) -> int | None:
    """Index of the last token *it* (the pronoun to resolve), or None."""
    it = tok.encode("it")
    hits = [i for i, t in enumerate(ids) if len(it) == 1 and t == it[0]]
    return hits[-1] if hits else None


class ItClassifier(nn.Module):
    """An encoder-only Transformer and a linear layer on its final vector at *it*."""

    def __init__(self, encoder: Transformer):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(encoder.cfg.d_model, len(LABELS))

    def forward(self, ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder(ids).hidden
        return self.head(hidden[torch.arange(ids.shape[0], device=ids.device), positions])


def encode(tok, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids of ``texts`` padded ``[n, T]`` and the position of *it* in each ``[n]``; ValueError when a
    text has none."""
    rows = [tok.encode(t) for t in texts]
    pos = [it_position(tok, r) for r in rows]
    if None in pos:
        raise ValueError(f"no “it” in: {texts[pos.index(None)]!r}")
    return pad_rows(rows), torch.tensor(pos)


@dataclass
class Run:
    """One fine-tuning run from a pre-trained or random start: test accuracy at the recorded steps, the time
    taken and the trained classifier."""
    start: str  # "pre-trained" or "random"
    steps: list[int] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)  # on the unseen-adjective test set, at ``steps``
    seconds: float = 0.0
    model: ItClassifier | None = None

    @property
    def final(self) -> float:
        return self.accuracy[-1]

    @torch.no_grad()
    def classify(self, tok, text: str) -> list[float]:
        """Probabilities of :data:`LABELS` for one sentence."""
        ids, pos = encode(tok, [text])
        self.model.eval()
        return self.model(ids, pos)[0].softmax(-1).tolist()


@torch.no_grad()
def accuracy(model: ItClassifier, ids, pos, y, batch: int = 200) -> float:
    """The share of rows whose predicted label equals ``y``, scored ``batch`` rows at a time."""
    model.eval()
    right = sum(int((model(ids[i:i + batch], pos[i:i + batch]).argmax(-1) == y[i:i + batch]).sum())
                for i in range(0, len(y), batch))
    return right / len(y)


def finetune(encoder: Transformer, tok, labelled: list[str], test: list[str], *, steps: int = 100, lr: float = 1e-4,
             batch: int = 16, seed: int = 0, eval_every: int = 20, start: str = "", progress=None) -> Run:
    """Fine-tune every weight of ``encoder`` (a copy is made) plus a new head with AdamW on ``labelled``.
    ``progress(step, steps, run)`` is called after each step (``run``: the curve so far)."""
    if steps < 1 or not labelled:
        raise ValueError("need at least one step and one labelled sentence")
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = ItClassifier(copy.deepcopy(encoder))
        ids, pos = encode(tok, labelled)
        y = torch.tensor([label(s) for s in labelled])
        t_ids, t_pos = encode(tok, test)
        t_y = torch.tensor([label(s) for s in test])
        opt = torch.optim.AdamW(model.parameters(), lr=lr)
        run = Run(start, [0], [accuracy(model, t_ids, t_pos, t_y)])
        t0 = time.perf_counter()
        for step in range(1, steps + 1):
            model.train()
            pick = torch.randint(0, len(y), (min(batch, len(y)),), generator=gen)
            loss = F.cross_entropy(model(ids[pick], pos[pick]), y[pick])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if step % eval_every == 0 or step == steps:
                run.steps.append(step)
                run.accuracy.append(accuracy(model, t_ids, t_pos, t_y))
            if progress is not None:
                progress(step, steps, run)
        run.seconds = time.perf_counter() - t0
    run.model = model.eval()
    return run


def compare(pretrained: Transformer, tok, *, n_labelled: int = 32, steps: int = 80, lr: float = 1e-4,
            seed: int = 0, n_test: int = 200, progress=None) -> dict:
    """The pre-trained encoder and a randomly initialised twin, fine-tuned alike. Returns both runs, the labelled
    sentences and the test set. ``progress(k, 2 * steps, partial)`` is called after each step of either run
    (``partial``: the same keys, the runs so far; ``"random"`` None until its first step)."""
    if pretrained.cfg.kind != "encoder-only":
        raise ValueError("fine-tuning here needs an encoder-only (BERT-style) model")
    pool, test = split(n_test=n_test, seed=seed)
    if not 1 <= n_labelled <= len(pool):
        raise ValueError(f"the number of labelled sentences must be between 1 and {len(pool)}")
    labelled = random.Random(seed).sample(pool, n_labelled)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        scratch = Transformer(pretrained.cfg)
    kw = dict(steps=steps, lr=lr, seed=seed)
    done: dict = {"pre-trained": None, "random": None}

    def tell(offset, which):
        if progress is None:
            return None
        return lambda k, n, run: progress(offset + k, 2 * steps,
                                          {"labelled": labelled, "test": test, **done, which: run})

    done["pre-trained"] = finetune(pretrained, tok, labelled, test, start="pre-trained", progress=tell(0, "pre-trained"),
                                   **kw)
    done["random"] = finetune(scratch, tok, labelled, test, start="random", progress=tell(steps, "random"), **kw)
    return {"labelled": labelled, "test": test, **done}
