"""What the Training page plots from a run: the learning-rate schedule it will follow, and the curves read from a
job's snapshot (:meth:`app.training_jobs.Job.snapshot`): training loss (optionally smoothed), held-out metrics and each
head's induction / previous-token score over steps."""
from __future__ import annotations

import math

from core.training.trainer import TrainConfig, learning_rate


def lr_curve(cfg: TrainConfig, points: int = 400) -> tuple[list[int], list[float]]:
    """The learning rate the run would use, sampled at up to ``points`` steps (1-based)."""
    stride = max(1, cfg.steps // points)
    steps = list(range(1, cfg.steps + 1, stride))
    if steps[-1] != cfg.steps:
        steps.append(cfg.steps)
    return steps, [learning_rate(s, cfg, cfg.d_model) for s in steps]


def smooth(values: list[float], weight: float = 0.9) -> list[float]:
    """Exponential moving average with bias correction (TensorBoard-style smoothing)."""
    out, avg = [], 0.0
    for i, v in enumerate(values, 1):
        avg = weight * avg + (1 - weight) * v
        out.append(avg / (1 - weight ** i))
    return out


def loss_series(snap: dict, smoothing: float = 0.0) -> tuple[list[int], list[float]]:
    """The training loss over steps, smoothed by :func:`smooth` when ``smoothing`` > 0."""
    steps = [r["step"] for r in snap["history"]]
    losses = [r["loss"] for r in snap["history"]]
    return steps, smooth(losses, smoothing) if smoothing else losses


def is_count(metric: str) -> bool:
    """A metric that counts items (``n``, ``n_pronoun``, ``n_pairs``…), not charted as a curve; a rate whose name
    merely starts with n (``next_sentence_accuracy``) is one."""
    return metric == "n" or metric.startswith("n_")


def head_score_series(snap: dict, kind: str) -> dict[str, tuple[list[int], list[float]]]:
    """One head score over steps (``kind``: induction or previous_token), per head: ``"L1 H2"`` → (steps, scores)."""
    out: dict[str, tuple[list[int], list[float]]] = {}
    for row in snap.get("head_scores", []):
        for layer, heads in enumerate(row.get(kind, [])):
            for head, v in enumerate(heads):
                xs, ys = out.setdefault(f"L{layer} H{head}", ([], []))
                xs.append(row["step"])
                ys.append(v)
    return out


def eval_series(snap: dict) -> dict[str, tuple[list[int], list[float]]]:
    """Held-out metrics over steps: name → (steps, values)."""
    out: dict[str, tuple[list[int], list[float]]] = {}
    for row in snap["evals"]:
        for k, v in row.items():
            if k != "step" and math.isfinite(v):
                out.setdefault(k, ([], []))
                out[k][0].append(row["step"])
                out[k][1].append(v)
    return out
