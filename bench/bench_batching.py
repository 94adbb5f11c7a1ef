"""Real (non-PAD) training tokens per second: fixed 64-sentence batches against batches by length sized in tokens.

    python bench/bench_batching.py [--task en-fr-tiny] [--steps 120] [--chunk 10] [--threads 1] [--batch-size 64]

Same model (``core.train``'s default shape, that of the 1 M en-fr: encoder-decoder 2+2, d_model 128, 4 heads,
d_ff 512, dropout 0.1, post-norm, sinusoidal), same data (the task's training pairs, ``make_task(task).train_ids``;
by default the 97-word en-fr corpus, ``en-fr-tiny``, called ``en-fr`` before the broad corpus), same initial
weights, AdamW as in ``core.train``. Arm A: ``TranslationTask.batch`` with ``--batch-size`` pairs
(the shipped recipe's). Arm B: the same task with ``batch_tokens`` set (``core.training.batching.token_batches``), the
token budget calibrated so that B's batches have the same *mean padded size* as A's over one epoch (padded
size = source slots + target slots, ``B × Ts + B × Tt``). Each step's clock covers building the batch, forward,
backward, clipping and the optimizer step. The two arms alternate ``--chunk`` steps at a time (A B A B …) after
a warm-up, and the ratio is taken per A/B pair and overall. Reports real tokens/s (``Batch.n_tokens``: source +
target tokens that are not PAD), padded slots/s and the padding share of each. Last line: JSON.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import time

import torch

from core.training.batching import token_batches
from core.model import Transformer
from core.training.tasks import TASKS, make_task
from core.training.trainer import TrainConfig, loss_fn, model_config


DEFAULT_TASK = "en-fr-tiny" if "en-fr-tiny" in TASKS else "en-fr"


def padded(batch) -> int:
    return batch.src.numel() + batch.tgt_out.numel()


def fixed_epoch_mean(task, batch_size: int, seed: int) -> float:
    n = len(task.train_ids) // batch_size
    return statistics.mean(padded(task.batch(s, batch_size, seed)) for s in range(n))


def token_epoch_mean(task, max_tokens: int, seed: int) -> float:
    sizes = []
    for b in token_batches(task.token_lengths(), max_tokens, seed, 0):
        src = max(len(task.train_ids[i][0]) for i in b) + 1
        tgt = max(len(task.train_ids[i][1]) for i in b) + 1
        sizes.append(len(b) * (src + tgt))
    return statistics.mean(sizes)


def calibrate(task, target: float, seed: int) -> int:
    """The smallest token budget whose batches' mean padded size (one epoch) reaches ``target``."""
    lo, hi = 1, 4 * int(target)
    while lo < hi:
        mid = (lo + hi) // 2
        if token_epoch_mean(task, mid, seed) < target:
            lo = mid + 1
        else:
            hi = mid
    return lo


class Arm:
    def __init__(self, name, task, cfg, batch_size, seed):
        self.name, self.task, self.batch_size, self.seed, self.step = name, task, batch_size, seed, 0
        torch.manual_seed(0)
        self.model = Transformer(cfg).train()
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9,
                                     weight_decay=0.01, fused=True)
        self.secs = self.real = self.slots = 0.0
        self.rounds: list[float] = []  # real tokens/s of each timed chunk

    def run(self, steps: int, timed: bool = True):
        real = slots = 0
        t0 = time.perf_counter()
        for _ in range(steps):
            batch = self.task.batch(self.step, self.batch_size, self.seed)
            loss = loss_fn(self.model, batch)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.opt.step()
            self.step += 1
            real += batch.n_tokens()
            slots += padded(batch)
        dt = time.perf_counter() - t0
        if timed:
            self.secs += dt
            self.real += real
            self.slots += slots
            self.rounds.append(real / dt)
        self.last_loss = float(loss.detach())

    def summary(self) -> dict:
        return {"real_tokens_per_s": round(self.real / self.secs, 1),
                "padded_slots_per_s": round(self.slots / self.secs, 1),
                "padding_share": round(1 - self.real / self.slots, 4),
                "mean_padded_size": round(self.slots / self.steps, 1),
                "mean_real_tokens": round(self.real / self.steps, 1), "seconds": round(self.secs, 2),
                "steps_timed": self.steps, "final_loss": round(self.last_loss, 4)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default=DEFAULT_TASK)
    ap.add_argument("--steps", type=int, default=120, help="timed steps per arm")
    ap.add_argument("--chunk", type=int, default=10, help="steps of one arm before switching")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps per arm first")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    load0 = os.getloadavg()
    fixed = make_task(args.task)
    target = fixed_epoch_mean(fixed, args.batch_size, args.seed)
    tokens = copy.copy(fixed)
    tokens.batch_tokens = calibrate(fixed, target, args.seed)
    calibrated = token_epoch_mean(fixed, tokens.batch_tokens, args.seed)
    cfg = model_config(TrainConfig(), fixed)
    print(f"{args.task}: {len(fixed.train_ids)} training pairs; model {cfg.n_encoder_layers}+{cfg.n_decoder_layers} "
          f"layers, d_model {cfg.d_model}; torch threads {torch.get_num_threads()}; load {load0}", flush=True)
    print(f"A: {args.batch_size} pairs a batch, mean padded size {target:.1f} slots (src + tgt, one epoch)", flush=True)
    print(f"B: --batch-tokens {tokens.batch_tokens}, mean padded size {calibrated:.1f} slots", flush=True)
    arms = [Arm("fixed", fixed, cfg, args.batch_size, args.seed),
            Arm("tokens", tokens, cfg, args.batch_size, args.seed)]
    for arm in arms:
        arm.run(args.warmup, timed=False)
    for r in range(max(1, args.steps // args.chunk)):
        for arm in arms:
            arm.run(args.chunk)
        a, b = arms[0].rounds[-1], arms[1].rounds[-1]
        print(f"pair {r + 1:2d}: fixed {a:8.0f}  tokens {b:8.0f} real tok/s  ratio {b / a:.3f}", flush=True)
    for arm in arms:
        arm.steps = len(arm.rounds) * args.chunk
    fx, tk = arms[0].summary(), arms[1].summary()
    pair_ratios = [b / a for a, b in zip(arms[0].rounds, arms[1].rounds)]
    out = {"task": args.task, "threads": torch.get_num_threads(), "batch_size": args.batch_size,
           "batch_tokens": tokens.batch_tokens, "calibrated_mean_padded_size": {"fixed": round(target, 1),
                                                                               "tokens": round(calibrated, 1)},
           "fixed": fx, "tokens": tk,
           "ratio_real_tokens_per_s": round(tk["real_tokens_per_s"] / fx["real_tokens_per_s"], 3),
           "median_pair_ratio": round(statistics.median(pair_ratios), 3),
           "ratio_padded_slots_per_s": round(tk["padded_slots_per_s"] / fx["padded_slots_per_s"], 3),
           "pairs": len(pair_ratios), "load_before": [round(x, 2) for x in load0],
           "load_after": [round(x, 2) for x in os.getloadavg()]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
