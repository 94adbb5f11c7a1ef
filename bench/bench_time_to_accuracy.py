"""Seconds to reach >= 99 % held-out pronoun accuracy for en-fr from scratch, with the shipped recipe.

    python bench/bench_time_to_accuracy.py [--threads 2] [--target 0.99] [--every 50] [--model en-fr]

The recipe is read back from the bundled model's card (``meta.command`` in its config.json), so this
measures exactly what ships; only the output folder, the evaluation interval and the thread count
are replaced. Every ``--every`` steps the model greedily translates 300 held-out sentences; the
clock includes those evaluations, so it slightly overstates pure training time. When the sample
reaches the target, the whole held-out split (4,545 sentences) is translated too, off the clock,
to show the sample did not flatter the model. Last line: JSON.
"""
from __future__ import annotations

import argparse
import json
import shlex
import threading
import time

from core.io import registry
from core.training.tasks import make_task
from core.training.trainer import train_model
from core.train import parse_args


def shipped_recipe(name: str, every: int, threads: int, device: str):
    """The bundled model's training command, minus its output folder, as a TrainConfig."""
    command = registry.load(name).meta["command"]
    argv = shlex.split(command.split("core.train", 1)[1])
    cfg = parse_args(argv)
    cfg.out, cfg.eval_every, cfg.ckpt_every, cfg.threads, cfg.device, cfg.quiet = None, every, 10**9, threads, device, True
    return command, cfg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="en-fr")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--target", type=float, default=0.99)
    ap.add_argument("--every", type=int, default=50)
    ap.add_argument("--device", default="auto")
    args = ap.parse_args()
    command, cfg = shipped_recipe(args.model, args.every, args.threads, args.device)
    print(f"recipe: {command}", flush=True)
    state = {"hit": None, "curve": [], "model": None}
    stop = threading.Event()

    def on_step(info):
        if info["metrics"] and info["step"] % args.every == 0:
            acc = info["metrics"]["pronoun_accuracy"]
            state["curve"].append([info["step"], round(info["elapsed"], 1), acc, info["metrics"]["exact_match"]])
            print(f"step {info['step']:5d}  {info['elapsed']:7.1f} s  pronoun {acc:.4f}  "
                  f"exact {info['metrics']['exact_match']:.4f}  {info['tokens_per_s']:.0f} tok/s", flush=True)
            if acc >= args.target and state["hit"] is None:
                state["hit"] = (info["step"], info["elapsed"], info["tokens_per_s"])
                state["model"] = info["model"]
                stop.set()

    t0 = time.perf_counter()
    trained = train_model(cfg, on_step=on_step, stop=stop)
    summary = trained.summary
    total = time.perf_counter() - t0
    full = None
    if state["model"] is not None:
        full = make_task(cfg.task, tokenizer=trained.tokenizer).evaluate(state["model"].eval(), n=None)
    hit = state["hit"]
    out = {"model": args.model, "target": args.target, "threads": args.threads, "device": summary["device"],
           "reached": hit is not None, "steps": hit[0] if hit else None,
           "seconds_including_eval": round(hit[1], 1) if hit else None,
           "tokens_per_s": round(hit[2]) if hit else None, "full_heldout_at_hit": full,
           "wall_s": round(total, 1), "recipe_steps": cfg.steps, "curve": state["curve"]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
