"""Bits per byte of language models on the valid split of a frozen English corpus, side by side.

    python scripts/lm_bits.py --corpus lm-large assets/models/lm /work/runs/lm-cpu-2l [--split valid] [--threads 2]

Bits per byte do not depend on the tokenizer (core.training.tasks.LMTask.token_bytes), so models with different
BPEs compare on the same text; each model reads the corpus's split in non-overlapping windows of its own context
(``max_len``). Prints one JSON line per model: loss per token, tokens, bits per byte.
"""
from __future__ import annotations

import argparse
import time

import torch

from core.io import checkpoint, jsonio
from core.training.tasks import REAL_LM, LMTask


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+", help="checkpoint folders")
    ap.add_argument("--corpus", choices=sorted(REAL_LM), default="lm-large", help="the task whose prose is read")
    ap.add_argument("--split", choices=("valid", "test"), default="valid")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    for folder in args.models:
        t0 = time.perf_counter()
        ck = checkpoint.load(folder)
        task = LMTask(tokenizer=ck.tokenizer, seq_len=ck.model.cfg.max_len, name=args.corpus)
        stream = task.valid_stream if args.split == "valid" else task.test_stream()
        out = task.evaluate(ck.model, n=None, stream=stream)
        print(jsonio.dumps({"model": folder, "corpus": args.corpus, "split": args.split, "context": task.seq_len,
                            "tokens": len(stream), **out, "seconds": round(time.perf_counter() - t0, 1)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
