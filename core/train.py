"""Training: ``python -m core.train --task TASK --out DIR [--steps N] [--max-seconds S] [--seed S] [--resume]``.

The command line only: one flag per :class:`~core.training.trainer.TrainConfig` field, one ``error:`` line
for a bad flag or setting (exit 2), the JSON summary as the last line printed. The training itself (schedule,
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


def main(argv=None) -> int:
    """Train as ``argv`` asks; print the JSON summary (rank 0). 0 on success, 2 with one ``error:`` line."""
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)  # progress lines
    try:
        cfg = parse_args(argv)
        summary = train(cfg)
    except (ValueError, checkpoint.CheckpointError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if int(os.environ.get("RANK", "0")) == 0:
        summary.pop("history", None)
        print(jsonio.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
