"""Training: ``python -m core.train --task TASK --out DIR [--steps N] [--max-seconds S] [--seed S] [--resume]``.

The command line only: one flag per :class:`~core.training.trainer.TrainConfig` field, one ``error:`` line
for a bad flag or setting (exit 2), the JSON summary as the last line printed. Progress goes to stderr: a tqdm bar
(step, loss, tokens/s) on a terminal, with the ``core.train`` log lines printed above it; only the log lines when
stderr is a file or a pipe. The training itself (schedule,
checkpoints, exact resume, DistributedDataParallel under ``torchrun``) is :mod:`core.training.trainer`.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys

from .io import checkpoint, cli, jsonio
from .training.trainer import TrainConfig, train


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, like every other refusal (argparse would print the usage first)
        self.exit(2, f"error: {message} (see python -m core.train --help)\n")


def parse_args(argv=None) -> TrainConfig:
    """The :class:`TrainConfig` the command-line flags ``argv`` ask for (a bad flag: one ``error:`` line, exit 2)."""
    p = cli.add_fields(_Parser(prog="python -m core.train", description=__doc__.split("\n")[0]), TrainConfig,
                       skip=("history",))
    return TrainConfig(**vars(p.parse_args(argv)))


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
        cfg = parse_args(argv)
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
