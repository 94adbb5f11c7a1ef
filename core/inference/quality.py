"""How sure a translator is of its own output, and when to say "probably not a correct translation".

A model that read real text cannot be judged by whether a sentence fits a list of generated shapes. What it can
tell is how probable it finds the translation it wrote: the mean log-probability per token of its greedy output
(EOS included), read off the same forward pass that draws the attention. Low confidence is a standard quality
estimate for machine translation (no reference needed). Whether it separates right from wrong translations is
measured, per model, on dev sets by ``scripts/calibrate_quality.py``, which stores the threshold and the measured
rates in the checkpoint's ``meta.quality``; pages show the notice only for a model so calibrated.

With a reference translation, :func:`sentence_bleu` and :func:`sentence_chrf` score one output against it, n-gram by
n-gram (the Decode page's table).
"""
from __future__ import annotations

import math
import re
from collections import Counter

import torch

from ..io.budget import max_positions
from ..io.tokenizer import BOS, EOS, PAD


def confidence_from_logits(logits: torch.Tensor, out_ids: list[int]) -> float:
    """Mean log-probability of ``out_ids`` followed by EOS, from the decoder's logits ``[T, V]`` for the input
    ``[BOS] + out_ids`` (row t predicts token t + 1)."""
    targets = torch.tensor(list(out_ids) + [EOS], device=logits.device)
    logp = logits[: len(targets)].float().log_softmax(-1)
    return float(logp.gather(-1, targets[:, None]).mean())


def confidence(model, tokenizer, sources: list[str], outputs: list[list[int]], batch: int = 64) -> list[float]:
    """:func:`confidence_from_logits` of each ``outputs[i]`` (token ids, no BOS / EOS) as the translation of
    ``sources[i]``, batched (padding never counts). A source longer than the model reads now
    (:func:`core.io.budget.max_positions`, the memory budget included) is cut there, as every page cuts it."""
    limit = max_positions(model) - 1
    return confidence_of_ids(model, [tokenizer.encode(s)[:limit] + [EOS] for s in sources], outputs, batch)


@torch.no_grad()
def confidence_of_ids(model, sources: list[list[int]], outputs: list[list[int]], batch: int = 64) -> list[float]:
    """:func:`confidence` of sources given as the token ids the encoder reads (EOS included, already cut), so that
    the score is of exactly the source that was translated."""
    scores = []
    limit = max_positions(model)
    for i in range(0, len(sources), batch):
        src_rows = [list(s) for s in sources[i:i + batch]]  # the model refuses a row longer than it reads
        outs = [list(o)[: limit - 1] for o in outputs[i:i + batch]]
        s = _pad(src_rows).to(model.device)
        t = _pad([[BOS] + o for o in outs]).to(model.device)
        logits = model(s, t).logits
        scores += [confidence_from_logits(logits[k], o) for k, o in enumerate(outs)]
    return scores


def _pad(rows: list[list[int]]) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([r + [PAD] * (width - len(r)) for r in rows])


def notice(meta: dict, score: float) -> str | None:
    """The sentence a page shows under a translation whose confidence is below the model's calibrated threshold
    (``None`` when it is not, or when the model was never calibrated)."""
    q = meta.get("quality")
    if not isinstance(q, dict) or not isinstance(q.get("threshold"), (int, float)) or score >= q["threshold"]:
        return None
    return (f"Probably not a correct translation: the model gives its own output a mean log-probability of "
            f"{score:.2f} per token, below {q['threshold']:.2f}. On its dev sets, outputs below that line were wrong "
            f"{q.get('precision_wrong', 0):.0%} of the time (it flags {q.get('flag_wrong', 0):.0%} of the wrong "
            f"translations and {q.get('flag_right', 0):.0%} of the right ones).")


def curve(scores: list[float], right: list[bool]) -> list[dict]:
    """For each candidate threshold (every distinct score, and above the highest), the share of wrong and of
    right translations it would flag (``score < threshold``), and how many flagged ones are wrong."""
    n_wrong = sum(not r for r in right) or 1
    n_right = sum(right) or 1
    out = []
    for t in sorted(set(scores)) + [max(scores) + 1e-6]:
        flagged = [r for s, r in zip(scores, right) if s < t]
        out.append({"threshold": t, "flag_wrong": sum(not r for r in flagged) / n_wrong,
                    "flag_right": sum(flagged) / n_right,
                    "precision_wrong": sum(not r for r in flagged) / len(flagged) if flagged else 1.0})
    return out


def choose(points: list[dict], want_wrong: float = 0.8, max_right: float = 0.2) -> dict:
    """The threshold that flags the most wrong translations while flagging at most ``max_right`` of the right
    ones; ``meets`` says whether it also flags ``want_wrong`` of the wrong ones (the issue's target)."""
    ok = [p for p in points if p["flag_right"] <= max_right]
    best = max(ok, key=lambda p: (p["flag_wrong"], -p["flag_right"])) if ok else min(points, key=lambda p: p["flag_right"])
    return best | {"meets": best["flag_wrong"] >= want_wrong and best["flag_right"] <= max_right}


# ---------------------------------------------------------------- scoring against a reference: sentence BLEU and chrF
# Our own implementations, checked against sacrebleu's sentence_bleu / sentence_chrf (its defaults) in
# tests/core/test_reference_scores.py. Tokenisation follows the "13a" rules of the WMT scoring script mteval-v13a.
_ALWAYS_SPLIT = re.compile(r"([{-~\[-` -&(-+:-@/])")  # ASCII punctuation except ' - . , (and letters, digits)
_POINT_AFTER = re.compile(r"([^0-9])([.,])")  # a period or comma after a non-digit
_POINT_BEFORE = re.compile(r"([.,])([^0-9])")  # ... or before one
_DASH_AFTER_DIGIT = re.compile(r"([0-9])(-)")


def words_13a(text: str) -> list[str]:
    """The tokens BLEU counts in ``text``: the "13a" rules (WMT's mteval-v13a) that set apart punctuation, periods
    and commas that are not inside a number, and a dash after a digit; apostrophes stay inside words ("didn't")."""
    line = text.rstrip().replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    for escaped, plain in (("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">")):
        line = line.replace(escaped, plain)
    line = _ALWAYS_SPLIT.sub(r" \1 ", f" {line} ")
    line = _POINT_AFTER.sub(r"\1 \2 ", line)
    line = _POINT_BEFORE.sub(r" \1 \2", line)
    line = _DASH_AFTER_DIGIT.sub(r"\1 \2 ", line)
    return line.split()


def ngrams(tokens: list, n: int) -> Counter:
    """How often each run of ``n`` consecutive tokens occurs in ``tokens``."""
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def sentence_bleu(hypothesis: str, reference: str, max_n: int = 4) -> dict:
    """BLEU of one output against one reference (Papineni et al. 2002), on a 0-100 scale.

    For n = 1..``max_n``: the clipped precision p_n = Σ min(count in output, count in reference) / n-grams in the
    output. BLEU = BP · exp(mean over n of log p_n) with the brevity penalty BP = min(1, exp(1 − r/c)) (c, r: output
    and reference lengths in tokens). A single sentence often has no matching 4-gram, so, like
    ``sacrebleu.sentence_bleu`` by default: an order with no match counts as 1 / (2^k · n-grams), the k-th such order
    (the "exp" smoothing of mteval); orders past the output's length are left out of the mean (effective order);
    no match of any order gives 0. Returns ``rows`` (n, matched, total, precision p_n, value used in the mean or
    None where left out), ``bp``, ``hyp_len``, ``ref_len``, ``bleu`` and the tokens of both."""
    hyp, ref = words_13a(hypothesis), words_13a(reference)
    c, r = len(hyp), len(ref)
    rows, halvings = [], 1.0
    for n in range(1, max_n + 1):
        got, want = ngrams(hyp, n), ngrams(ref, n)
        matched, total = sum(min(k, want[g]) for g, k in got.items()), max(0, c - n + 1)
        used = None
        if total:
            if matched:
                used = matched / total
            else:
                halvings *= 2
                used = 1 / (halvings * total)
        rows.append({"n": n, "matched": matched, "total": total, "precision": matched / total if total else None,
                     "used": used})
    bp = 1.0 if c >= r else (math.exp(1 - r / c) if c else 0.0)
    counted = [row["used"] for row in rows if row["used"] is not None]
    if not any(row["matched"] for row in rows) or not counted:
        bleu = 0.0
    else:
        bleu = 100 * bp * math.exp(sum(math.log(p) for p in counted) / len(counted))
    return {"rows": rows, "bp": bp, "hyp_len": c, "ref_len": r, "bleu": bleu, "hyp_tokens": hyp, "ref_tokens": ref}


def sentence_chrf(hypothesis: str, reference: str, max_n: int = 6, beta: float = 2.0) -> float:
    """chrF (Popović 2015) of one output against one reference, 0-100: character n-grams (n = 1..``max_n``, spaces
    removed), their precision P and recall R averaged over the orders both texts are long enough for, then
    F_β = (1 + β²)·P·R / (β²·P + R); β = 2 weighs recall twice as much as precision (sacrebleu's defaults)."""
    hyp, ref = "".join(hypothesis.split()), "".join(reference.split())
    precisions, recalls = [], []
    for n in range(1, max_n + 1):
        got, want = ngrams(list(hyp), n), ngrams(list(ref), n)
        n_got, n_want = sum(got.values()), sum(want.values())
        if n_got and n_want:
            matched = sum(min(k, want[g]) for g, k in got.items())
            precisions.append(matched / n_got)
            recalls.append(matched / n_want)
    if not precisions:
        return 0.0
    p, r = sum(precisions) / len(precisions), sum(recalls) / len(recalls)
    b2 = beta * beta
    return 100 * (1 + b2) * p * r / (b2 * p + r) if p + r else 0.0
