"""A small experiment's command line: flags from its config dataclass, the result saved as JSON with the
exact command that produced it, a short summary printed as the last line; and the training loop the small
experiments of :mod:`core.variants` share (:func:`fit`), on the trainer's own cosine schedule."""
from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import torch

from ..io import cli, jsonio
from .trainer import TrainConfig, learning_rate


def command(module: str, cfg, out: str) -> str:
    """The command line that reproduces ``cfg`` (every non-None field as a flag)."""
    return f"python -m {module} --out {out} {cli.as_flags(cfg)}"


def main(module: str, description: str, config_cls, run, summary_keys, argv=None) -> int:
    """Parse ``argv`` into ``config_cls``, call ``run(cfg)``, write its dict (plus command and date) to
    ``--out`` and print ``summary_keys`` of it as JSON."""
    p = cli.Parser(prog=f"python -m {module}", description=description)
    p.add_argument("--out", required=True)
    cli.add_fields(p, config_cls)
    args = vars(p.parse_args(argv))
    out = args.pop("out")
    cfg = config_cls(**args)
    result = run(cfg)
    result |= {"command": command(module, cfg, out), "date": datetime.now().isoformat(timespec="seconds")}
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(jsonio.dumps(result))
    print(jsonio.dumps({k: result[k] for k in summary_keys}))
    return 0


def warmup_cosine(step: int, cfg) -> float:
    """The trainer's "cosine" schedule (linear warmup over ``cfg.warmup`` steps, then a cosine from ``cfg.lr`` down
    to a tenth of it at ``cfg.steps``) for a small experiment's settings; 1-based ``step``."""
    return learning_rate(step, TrainConfig(schedule="cosine", lr=cfg.lr, warmup=cfg.warmup, steps=cfg.steps), 1)


def fit(model: torch.nn.Module, loss_at, cfg, clip: float = 1.0) -> tuple[torch.nn.Module, list[float], float, float]:
    """Train ``model`` for ``cfg.steps`` steps: AdamW (β = 0.9, 0.98, weight decay 0.01) at :func:`warmup_cosine`,
    gradients clipped to norm ``clip``; ``loss_at(step)`` computes the loss of 1-based ``step`` (its batch chosen by
    the caller). Returns the model (eval mode), the loss of every step, the seconds it took and the CPU seconds this
    process used meanwhile (on a shared machine the first is longer; on one thread the second is what the run
    costs)."""
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.98), weight_decay=0.01)
    losses = []
    model.train()
    t0, c0 = time.perf_counter(), time.process_time()
    for step in range(1, cfg.steps + 1):
        for group in opt.param_groups:
            group["lr"] = warmup_cosine(step, cfg)
        loss = loss_at(step)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        losses.append(round(loss.item(), 4))
    return model.eval(), losses, time.perf_counter() - t0, time.process_time() - c0
