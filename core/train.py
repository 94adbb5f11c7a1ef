"""Training: ``python -m core.train --task TASK --out DIR [--steps N] [--max-seconds S] [--seed S] [--resume | --force]``.

The command line only: one flag per :class:`~core.training.trainer.TrainConfig` field, one ``error:`` line
for a bad flag or setting (exit 2), the JSON summary as the last line printed. Progress goes to stderr: a tqdm bar
(step, loss, tokens/s) on a terminal, with the ``core.train`` log lines printed above it; only the log lines when
stderr is a file or a pipe. ``--out`` never replaces an existing checkpoint (nor a model shipped in ``assets/models/``)
unless asked: ``--resume`` continues it, ``--force`` replaces it (:func:`check_out`). The training itself (schedule,
checkpoints, exact resume, DistributedDataParallel under ``torchrun``) is :mod:`core.training.trainer`.
"""
from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from .io import checkpoint, cli, jsonio
from .training.trainer import TrainConfig, train


def _parser() -> cli.Parser:
    p = cli.add_fields(cli.Parser(prog="python -m core.train", description=__doc__.split("\n")[0]), TrainConfig,
                       skip=("history",))
    p.add_argument("--force", action="store_true",
                   help="replace the checkpoint already in --out (a model shipped in assets/models/ included); "
                        "without it (or --resume) an existing checkpoint is refused")
    return p


def parse_args(argv=None) -> TrainConfig:
    """The :class:`TrainConfig` the command-line flags ``argv`` ask for (a bad flag: one ``error:`` line, exit 2)."""
    args = vars(_parser().parse_args(argv))
    args.pop("force")
    return TrainConfig(**args)


def check_out(out, resume: bool = False, force: bool = False) -> None:
    """Refuse (ValueError, one line) an ``--out`` whose contents this run would replace without being asked to: a
    model shipped in ``assets/models/`` (or a folder inside one) unless ``--force``; any other existing checkpoint
    unless ``--resume`` (continue it) or ``--force``; a ``.NAME.old`` beside it that this program did not leave
    behind, always. Checked before the first step; a folder that is not a checkpoint at all is refused later by
    :func:`core.io.checkpoint.check_replaceable`, ``--force`` or not."""
    if out is None:
        return
    from .io import registry
    path = Path(out)
    try:
        inside = path.resolve().relative_to(registry.BUNDLED.resolve()).parts
    except ValueError:
        inside = ()
    if inside and (registry.BUNDLED / inside[0]).is_dir() and not force:
        raise ValueError(f"{out} is the model {inside[0]!r} shipped with Attention Lab (assets/models/); refusing to "
                         "replace it: choose a new --out, or pass --force to rebuild the shipped model")
    checkpoint.recover(path)
    if path.is_dir() and not path.is_symlink() and any(path.iterdir()) and not (resume or force):
        checkpoint.check_replaceable(path)  # someone else's folder: that message, not an offer to --force it
        raise ValueError(f"{out} already holds a checkpoint; refusing to replace it: choose a new --out, continue "
                         "that run with --resume, or pass --force to replace it")
    checkpoint.check_leftovers(path)


class _Bar:
    """``on_step`` for :func:`train`: a tqdm bar on stderr, opened at the first step (a resumed run starts part-way)."""

    def __init__(self, enabled: bool):
        self.enabled, self.bar = enabled, None

    def __call__(self, info: dict) -> None:
        if not self.enabled:
            return
        from tqdm import tqdm
        if self.bar is None:
            self.bar = tqdm(total=info["steps"], initial=info["step"] - 1, unit="step", file=sys.stderr,
                            dynamic_ncols=True)
        self.bar.update(1)
        self.bar.set_postfix(loss=f"{info['loss']:.4f}", tok_s=f"{info['tokens_per_s']:.0f}", refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def main(argv=None) -> int:
    """Train as ``argv`` asks; print the JSON summary (rank 0). 0 on success, 2 with one ``error:`` line."""
    from tqdm.contrib.logging import logging_redirect_tqdm
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)  # progress lines
    bar = _Bar(sys.stderr.isatty() and int(os.environ.get("RANK", "0")) == 0)
    try:
        force = _parser().parse_args(argv).force
        cfg = parse_args(argv)
        check_out(cfg.out, resume=cfg.resume, force=force)
        with logging_redirect_tqdm():  # the root handler basicConfig made, so log lines print above the bar
            summary = train(cfg, on_step=bar)
    except (ValueError, checkpoint.CheckpointError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        bar.close()
    if int(os.environ.get("RANK", "0")) == 0:
        summary.pop("history", None)
        print(jsonio.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
