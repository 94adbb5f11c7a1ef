"""Post-LN vs pre-LN, with and without learning-rate warmup (Xiong et al. 2020, "On Layer Normalization
in the Transformer Architecture").

Post-LN (the original Transformer) puts LayerNorm after the residual sum: ``LN(x + F(x))``; at
initialisation the expected gradients of the parameters near the output are large, so a large
learning rate from step 1 can throw the model into a bad region; the warmup stage is what makes it
train. Pre-LN (``x + F(LN(x))``) has well-behaved gradients at initialisation and trains without
warmup. :func:`run` trains the four combinations with the same peak learning rate through
:func:`core.training.trainer.train` and returns their loss curves.

CLI: ``python -m core.training.stability --out assets/stability/curves.json`` (the page reads that file).
"""
from __future__ import annotations

import dataclasses
import math
import time

from . import experiment
from .trainer import TrainConfig, train

VARIANTS = (("post", True), ("post", False), ("pre", True), ("pre", False))


@dataclasses.dataclass
class StabilityConfig:
    """Settings shared by the four runs (post-LN / pre-LN, with / without warmup): task, steps, peak learning
    rate, warmup length and model size."""
    task: str = "reverse"
    steps: int = 300
    lr: float = 1e-2  # the same peak learning rate for all four runs
    warmup: int = 100  # steps of linear warmup for the "with warmup" runs (0 for the others)
    layers: int = 4
    d_model: int = 64
    heads: int = 4
    d_ff: int = 128
    batch_size: int = 32
    seq_len: int = 12
    clip: float = 0.0  # no gradient clipping: clipping hides exactly the effect under study
    seed: int = 0
    threads: int | None = None

    def train_config(self, norm: str, warmup: bool) -> TrainConfig:
        return TrainConfig(task=self.task, steps=self.steps, seed=self.seed, layers=self.layers,
                           d_model=self.d_model, heads=self.heads, d_ff=self.d_ff, norm=norm, dropout=0.0,
                           batch_size=self.batch_size, schedule="constant", lr=self.lr,
                           warmup=self.warmup if warmup else 0, label_smoothing=0.0, clip=self.clip,
                           weight_decay=0.0, seq_len=self.seq_len, eval_every=10 ** 9, ckpt_every=10 ** 9,
                           threads=self.threads, device="cpu", quiet=True)


def label(norm: str, warmup: bool) -> str:
    """A run's name, e.g. ``"pre-LN, no warmup"``."""
    return f"{norm}-LN, {'warmup' if warmup else 'no warmup'}"


def run(cfg: StabilityConfig | None = None, variants=VARIANTS, on_progress=None) -> dict:
    """Train every (norm, warmup) variant; ``{"config", "curves": {label: [loss per step]},
    "final": {label: mean loss of the last 10 % of steps}, "metrics": {label: task metrics}, "seconds"}``.

    Deterministic for a seed: every run starts from ``torch.manual_seed(seed)`` and sees the same batches.
    """
    cfg = cfg or StabilityConfig()
    curves, final, metrics, t0 = {}, {}, {}, time.perf_counter()
    for i, (norm, warm) in enumerate(variants):
        name = label(norm, warm)
        summary = train(cfg.train_config(norm, warm))
        losses = [loss if math.isfinite(loss) else float("nan") for _, loss in summary["history"]]
        curves[name] = losses
        tail = [x for x in losses[-max(1, len(losses) // 10):] if math.isfinite(x)]
        final[name] = round(sum(tail) / len(tail), 4) if tail else float("nan")
        metrics[name] = summary["metrics"]
        if on_progress is not None:
            on_progress(i + 1, len(variants), name)
    return {"config": dataclasses.asdict(cfg), "curves": curves, "final": final, "metrics": metrics,
            "seconds": round(time.perf_counter() - t0, 1)}


def reading(final: dict) -> dict:
    """What four runs of :func:`run` say about Xiong et al.'s two claims, from their final losses (lower is better):
    ``pre_ln_better`` {"warmup": bool, "no warmup": bool} (pre-LN ends lower than post-LN), and
    ``warmup_helps`` {"post": bool, "pre": bool} (the run with warmup ends lower than the one without). The paper's
    picture is pre-LN better both ways and warmup needed by post-LN only."""
    return {"pre_ln_better": {w: final[label("pre", w == "warmup")] < final[label("post", w == "warmup")]
                              for w in ("warmup", "no warmup")},
            "warmup_helps": {n: final[label(n, True)] < final[label(n, False)] for n in ("post", "pre")}}


def command(cfg: StabilityConfig, out: str) -> str:
    """The command line that reruns ``cfg`` and writes the results to ``out``."""
    return experiment.command("core.training.stability", cfg, out)


def main(argv=None) -> int:
    """The ``python -m core.training.stability`` command line; returns the exit code."""
    return experiment.main("core.training.stability", "post-LN vs pre-LN × warmup curves", StabilityConfig, run,
                           ("final", "metrics", "seconds"), argv)


if __name__ == "__main__":
    raise SystemExit(main())
