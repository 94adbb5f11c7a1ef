"""How sure a translator is of its own output, and when to say "probably not a correct translation".

A model that read real text cannot be judged by whether a sentence fits a list of generated shapes. What it can
tell is how probable it finds the translation it wrote: the mean log-probability per token of its greedy output
(EOS included), read off the same forward pass that draws the attention. Low confidence is a standard quality
estimate for machine translation (no reference needed). Whether it separates right from wrong translations is
measured, per model, on dev sets by ``scripts/calibrate_quality.py``, which stores the threshold and the measured
rates in the checkpoint's ``meta.quality``; pages show the notice only for a model so calibrated.
"""
from __future__ import annotations

import torch

from ..io.tokenizer import BOS, EOS, PAD


def confidence_from_logits(logits: torch.Tensor, out_ids: list[int]) -> float:
    """Mean log-probability of ``out_ids`` followed by EOS, from the decoder's logits ``[T, V]`` for the input
    ``[BOS] + out_ids`` (row t predicts token t + 1)."""
    targets = torch.tensor(list(out_ids) + [EOS], device=logits.device)
    logp = logits[: len(targets)].float().log_softmax(-1)
    return float(logp.gather(-1, targets[:, None]).mean())


@torch.no_grad()
def confidence(model, tokenizer, sources: list[str], outputs: list[list[int]], batch: int = 64) -> list[float]:
    """:func:`confidence_from_logits` of each ``outputs[i]`` (token ids, no BOS / EOS) as the translation of
    ``sources[i]``, batched (padding never counts)."""
    scores = []
    max_len = model.cfg.max_len
    for i in range(0, len(sources), batch):
        src_rows = [tokenizer.encode(s)[: max_len - 1] + [EOS] for s in sources[i:i + batch]]
        outs = [list(o)[: max_len - 1] for o in outputs[i:i + batch]]
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
