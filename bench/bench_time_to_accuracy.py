"""Seconds to reach >= 99 % held-out pronoun accuracy for en-fr from scratch, with the shipped recipe.

    python bench/bench_time_to_accuracy.py [--threads 2] [--target 0.99] [--every 250] [--max-steps 4000]

The clock includes the periodic evaluations (greedy decoding of 300 held-out sentences every
``--every`` steps), so it slightly overstates pure training time. Last line: JSON.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.train import TrainConfig, train  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--target", type=float, default=0.99)
    ap.add_argument("--every", type=int, default=250)
    ap.add_argument("--max-steps", type=int, default=4000)
    ap.add_argument("--device", default="auto")
    args = ap.parse_args()
    cfg = TrainConfig(task="en-fr", steps=args.max_steps, seed=0, layers=2, d_model=128, heads=4, d_ff=512,
                      dropout=0.1, lr=2.0, warmup=300, eval_every=args.every, threads=args.threads,
                      device=args.device, quiet=True)
    state = {"hit": None, "curve": []}
    stop = threading.Event()

    def on_step(info):
        if info["metrics"] and info["step"] % args.every == 0:
            acc = info["metrics"]["pronoun_accuracy"]
            state["curve"].append([info["step"], round(info["elapsed"], 1), acc, info["metrics"]["exact_match"]])
            print(f"step {info['step']:5d}  {info['elapsed']:7.1f} s  pronoun {acc:.4f}  "
                  f"exact {info['metrics']['exact_match']:.4f}  {info['tokens_per_s']:.0f} tok/s", flush=True)
            if acc >= args.target and state["hit"] is None:
                state["hit"] = (info["step"], info["elapsed"], info["tokens_per_s"])
                stop.set()

    t0 = time.perf_counter()
    summary = train(cfg, on_step=on_step, stop=stop)
    total = time.perf_counter() - t0
    out = {"target": args.target, "threads": args.threads, "device": summary["device"],
           "reached": state["hit"] is not None,
           "steps": state["hit"][0] if state["hit"] else None,
           "seconds_including_eval": round(state["hit"][1], 1) if state["hit"] else None,
           "tokens_per_s": round(state["hit"][2]) if state["hit"] else None,
           "wall_s": round(total, 1), "curve": state["curve"]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
