"""Write ``words.json`` (the words of the training source text, see core/inference/coverage.py) into existing checkpoints.

    python scripts/add_words.py assets/models/copy assets/models/en-fr ...  [--force]

Models trained with ``python -m core.train`` get the file at training time; this gives it to checkpoints made
before that, without retraining: the training text is rebuilt from the task named in the checkpoint's
config (``meta.task``) with the checkpoint's own tokenizer. A checkpoint trained on a user's text file
(``--text`` in its command) is refused: that text is not kept with the model.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.io import checkpoint
from core.training.tasks import make_task
from core.io.tokenizer import Tokenizer


def add_words(folder: Path, force: bool = False) -> str:
    """Write ``folder/words.json``; return a one-line report."""
    if (folder / checkpoint.WORDS).exists() and not force:
        return f"{folder}: {checkpoint.WORDS} exists (--force to rewrite)"
    meta = checkpoint.read_config(folder).get("meta", {})
    name = meta.get("task")
    if not name:
        raise checkpoint.CheckpointError(f"{folder}: its config names no task")
    if "--text" in str(meta.get("command", "")):
        raise checkpoint.CheckpointError(f"{folder}: trained on a user's text file, which is not kept with the model")
    task = make_task(name, tokenizer=Tokenizer.load(folder / checkpoint.TOKENIZER))
    words = task.source_words()
    checkpoint.write_words(folder, words, f"training source text of {name}: {task.description}")
    return f"{folder}: {len(words)} words of task {name}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+", type=Path, help="checkpoint folders")
    ap.add_argument("--force", action="store_true", help="rewrite an existing words.json")
    args = ap.parse_args(argv)
    status = 0
    for folder in args.models:
        try:
            print(add_words(folder, args.force))
        except (ValueError, OSError) as e:
            print(f"error: {e}", file=sys.stderr)
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())
