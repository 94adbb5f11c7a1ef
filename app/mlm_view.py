"""The Masked LM page's computations, cached per model and input: fills, the left-only comparisons, and
BERT's 80/10/10 corruption applied to the learner's sentence."""
from __future__ import annotations

import torch

from app.cache import bounded
from app.shell import load_model, models, usable_models
from core.training import finetune
from core.inference import mlm
from core.training.tasks import MLMTask, bert_corrupt, span_corrupt
from core.io.tokenizer import MASK

LEFT_ONLY_LM = "lm-tiny"  # the bundled causal LM trained on the same generated English corpus as mlm


def masked_lm_names() -> list[str]:
    """Models trained with the masked-LM objective (bundled ``mlm`` and the learner's own)."""
    return usable_models(lambda m: m.meta.get("task") == "mlm")  # read from each folder; a broken one is skipped


@bounded
def fill(name: str, ids: tuple, originals: tuple = (), positions: tuple | None = None) -> mlm.FillResult:
    return mlm.fill(load_model(name), list(ids), dict(originals),
                    positions=None if positions is None else list(positions))


@bounded
def left_only(name: str, prefix_text: str) -> tuple[list[str], list[float]] | None:
    """The bundled causal LM's next-token candidates after ``prefix_text`` (None if it is not installed)."""
    if LEFT_ONLY_LM not in models():
        return None
    lm = load_model(LEFT_ONLY_LM)
    ids, probs = mlm.left_only(lm, lm.tokenizer.encode(prefix_text) if prefix_text.strip() else [])
    return lm.tokenizer.display(ids), probs


def prefix_text(tok, result: mlm.FillResult, position: int) -> str:
    """The words left of ``position``, earlier masks filled with the masked LM's best guesses."""
    return tok.decode(result.best()[:position])


@bounded
def corruption(name: str, ids: tuple, seed: int) -> dict:
    """One draw of BERT's corruption of ``ids`` and what the model predicts at every chosen position."""
    ck = load_model(name)
    inputs, targets = bert_corrupt(torch.tensor([list(ids)]), torch.Generator().manual_seed(seed),
                                   ck.tokenizer.vocab_size)
    inputs, targets = inputs[0].tolist(), targets[0].tolist()
    chosen = [i for i, t in enumerate(targets) if t != 0]
    res = mlm.fill(ck, inputs, positions=chosen, top_k=1)
    how = ["[MASK]" if inputs[i] == MASK else "unchanged" if inputs[i] == ids[i] else "random token" for i in chosen]
    return {"inputs": inputs, "chosen": chosen, "how": how, "guess": [f.ids[0] for f in res.fills],
            "p_guess": [f.probs[0] for f in res.fills]}


SENTINELS = [f"⟨{c}⟩" for c in "XYZ"] + [f"⟨S{i}⟩" for i in range(4, 100)]


def t5_example(words: list[str], seed: int) -> tuple[str, str]:
    """T5's span corruption (core.training.tasks.span_corrupt) of ``words``: the input with a sentinel for each
    dropped span, and the target (each sentinel, what it replaced, a closing sentinel)."""
    spans = span_corrupt(len(words), torch.Generator().manual_seed(seed))
    inputs, target, at = [], [], 0
    for k, (start, end) in enumerate(spans):
        inputs += words[at:start] + [SENTINELS[k]]
        target += [SENTINELS[k]] + words[start:end]
        at = end
    return " ".join(inputs + words[at:]), " ".join(target + [SENTINELS[len(spans)]])


@bounded
def corruption_rates(name: str, ids: tuple, draws: int = 2000) -> dict:
    """Fractions over ``draws`` corruptions of the sentence (seeded): chosen share, and how the chosen changed."""
    ck = load_model(name)
    batch = torch.tensor([list(ids)] * draws)
    inputs, targets = bert_corrupt(batch, torch.Generator().manual_seed(0), ck.tokenizer.vocab_size)
    chosen = targets.ne(0)
    n = int(chosen.sum())
    masked = int((chosen & inputs.eq(MASK)).sum())
    same = int((chosen & inputs.eq(batch)).sum())
    return {"chosen": n / batch.numel(), "mask": masked / n, "random": (n - masked - same) / n, "same": same / n,
            "n": n, "tokens": batch.numel()}


@bounded(ignore=("progress",))
def held_out_sides(name: str, n: int = 300, progress=None) -> dict:
    """core.inference.mlm.both_sides_score on the held-out lines of the generated English corpus, in the model's own
    tokenization (a model trained on a user's text meets words it never saw there)."""
    ck = load_model(name)
    rows = MLMTask(tokenizer=ck.tokenizer).valid_rows[:n]
    lm = load_model(LEFT_ONLY_LM) if LEFT_ONLY_LM in models() else None
    return mlm.both_sides_score(ck, rows, lm=lm, progress=progress)


@bounded(ignore=("progress",))
def finetuned(name: str, n_labelled: int, steps: int, seed: int, progress=None) -> dict:
    """core.training.finetune.compare on the model's encoder (a copy: the shared model is left as it is);
    ``progress(k, 2 * steps, partial)`` as there."""
    ck = load_model(name)
    return finetune.compare(ck.model, ck.tokenizer, n_labelled=n_labelled, steps=steps, seed=seed, progress=progress)


def finetune_caption() -> str:
    pool, test = finetune.split()
    unseen = sorted({finetune.adjective(s) for s in test})
    seen = ", ".join(f"{a} ({finetune.LABELS[finetune.label(next(s for s in pool if finetune.adjective(s) == a))]})"
                     for a in finetune.TRAIN_ADJECTIVES)
    return f"Labelled adjectives: {seen}. Test adjectives, never labelled: {', '.join(unseen)}."


def majority_share(test: list[str]) -> float:
    places = sum(finetune.label(s) for s in test)
    return max(places, len(test) - places) / len(test)


@bounded
def pair(name: str, a: str, b: str) -> mlm.PairResult:
    return mlm.next_sentence(load_model(name), a, b)


JUDGE = "lm"  # scores section 7's continuations; it wrote none of them (GPT-style, trained on real English prose)
WRITE_PROMPT = "The dog saw a sheep in the path."


@bounded
def bert_writes(name: str, prompt: str, n: int, sweeps: int, temperature: float, seed: int) -> dict | None:
    """core.inference.mlm.can_bert_write: the masked LM ``name`` and the causal LM trained on the same generated
    English (lm-tiny) continue ``prompt``; the bundled lm judges. None when lm-tiny or lm is not installed."""
    if LEFT_ONLY_LM not in models() or JUDGE not in models():
        return None
    return mlm.can_bert_write(load_model(name), load_model(LEFT_ONLY_LM), load_model(JUDGE), prompt, n=n,
                              sweeps=sweeps, temperature=temperature, seed=seed)


def _than(a: float, b: float) -> str:
    """``a`` against ``b`` in words (bits per byte: lower is better), the difference in per cent of ``b``."""
    change = (a - b) / b
    if abs(change) < 0.005:
        return "the same"
    return f"{abs(change):.0%} {'lower (better)' if change < 0 else 'higher (worse)'}"


def writes_reading(result: dict) -> str:
    """Section 7's numbers read in words: each of BERT's two texts against the causal LM's under the judge (by how
    much, in per cent), the most predictable of the three, and the shuffled words for scale; every number computed.
    At 0 sweeps BERT's second text is its one-pass fill, and is called so (no Gibbs sampling took place)."""
    causal, l2r, gibbs, shuffled = (r["judge_bits_per_byte"] for r in result["rows"][:4])
    second, by = (("Gibbs text", "BERT with Gibbs sampling") if result["sweeps"] else
                  ("one-pass fill (0 sweeps: no Gibbs sampling)", "BERT in one pass"))
    best = min(("the causal LM", causal), ("BERT left to right", l2r), (by, gibbs), key=lambda x: x[1])[0]
    return (f"The judge needs {l2r:.2f} bits per byte for BERT's left-to-right text and {gibbs:.2f} for its {second}, "
            f"against {causal:.2f} for the causal LM's: {_than(l2r, causal)} and {_than(gibbs, causal)}. "
            f"Most predictable of the three: {best}. Shuffling the causal LM's words makes it {shuffled:.2f} "
            f"({(shuffled - causal) / causal:+.0%}): "
            + ("the judge does read word order." if shuffled > causal else
               "here the judge does not tell the shuffled words from the text."))
