"""Training on CPU in float32 against bfloat16 autocast (``core.train --cpu-bf16``), side by side in one run: the
optimiser steps of one model's config, the precisions alternated round by round (3 warm-up steps each, then 6 rounds
of 3 steps), one fixed batch of random tokens, the trainer's own loss and fused AdamW. Prints tokens per second of
each and their ratio; also the loss of the first step in each precision (bf16 must stay close).

    python bench/bench_cpu_bf16.py [CHECKPOINT_FOLDER] [--batch 8] [--seq-len 512] [--threads 2]
"""
import argparse
import statistics
import time

import torch

from core.io import checkpoint
from core.model import Transformer
from core.training.trainer import loss_fn


class _Batch:
    """The fields :func:`loss_fn` reads for a decoder-only model."""

    def __init__(self, ids):
        self.src, self.token_types, self.next_sentence = None, None, None
        self.tgt_in, self.tgt_out = ids[:, :-1], ids[:, 1:]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("folder", nargs="?", default="assets/models/lm")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=512)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    cfg = checkpoint.load(args.folder, "cpu").model.cfg
    gen = torch.Generator().manual_seed(0)
    batch = _Batch(torch.randint(5, cfg.vocab_size, (args.batch, args.seq_len + 1), generator=gen))
    runs = {}
    for name in ("float32", "bf16"):
        torch.manual_seed(0)
        model = Transformer(cfg).train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
        runs[name] = (model, opt, torch.autocast("cpu", dtype=torch.bfloat16, enabled=name == "bf16"))

    def step(name):
        model, opt, ctx = runs[name]
        with ctx:
            loss = loss_fn(model, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return float(loss.detach())

    first = {name: step(name) for name in runs}
    for name in runs:
        step(name), step(name)
    per_step = {name: [] for name in runs}
    for _ in range(6):
        for name in runs:
            t = time.perf_counter()
            for _ in range(3):
                step(name)
            per_step[name].append((time.perf_counter() - t) / 3)
    tokens = args.batch * args.seq_len
    tps = {name: tokens / statistics.median(v) for name, v in per_step.items()}
    print(f"{args.folder}: {sum(p.numel() for p in runs['float32'][0].parameters()):,} parameters, batch "
          f"{args.batch} x {args.seq_len}, {args.threads} threads")
    for name in runs:
        print(f"  {name:8s} {tps[name]:8,.0f} tokens/s (median of 6 rounds; min {tokens / max(per_step[name]):,.0f}), "
              f"first-step loss {first[name]:.4f}")
    print(f"  bf16 / float32: {tps['bf16'] / tps['float32']:.2f}x")


if __name__ == "__main__":
    main()
