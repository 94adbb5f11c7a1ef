"""Recipe and corpus choice on the development sets: train several translators side by side (seeds, step counts),
then score each on tests/data/winograd_dev*.tsv and the valid split (never the test set).

    python scripts/dev_sweep.py --tasks en-fr en-de --seeds 0 1 2 --steps 2200 3300 --work /tmp/sweep --jobs 8

Each run is the shipped model's own training command (``meta.command`` of assets/models/TASK, as
scripts/train_bundled.sh wrote it) with its seed and step count, one thread; on a GPU machine the runs share the one
GPU (``--device auto``). Prints one JSON line per run and, last, a table of the means per (task, steps).
"""
from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _recipe(task: str) -> list[str]:
    """The flags of the shipped ``task`` model's training command (its card's ``meta.command``)."""
    meta = json.loads((ROOT / "assets" / "models" / task / "config.json").read_text())["meta"]
    return shlex.split(meta["command"].split("core.train", 1)[1])


def _train(task: str, seed: int, steps: int, work: Path) -> dict:
    out = work / f"{task}-s{seed}-n{steps}"
    t0 = time.time()
    proc = subprocess.run([sys.executable, "-m", "core.train", *_recipe(task), "--out", str(out), "--seed", str(seed),
                           "--steps", str(steps), "--threads", "1"], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode:
        return {"task": task, "seed": seed, "steps": steps, "error": proc.stderr[-2000:]}
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"task": task, "seed": seed, "steps": steps, "out": str(out), "train_s": round(time.time() - t0, 1),
            "valid": summary.get("metrics")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", nargs="+", default=["en-fr", "en-de"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--steps", nargs="+", type=int, default=[2200])
    ap.add_argument("--work", default="/tmp/dev_sweep")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--report", help="also write the JSON lines here")
    args = ap.parse_args(argv)
    from core.io import jsonio
    from eval_dev import evaluate  # scripts/ is on sys.path when run as a script
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    runs = [(t, s, n) for t in args.tasks for n in args.steps for s in args.seeds]
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda r: _train(*r, work), runs))
    lines = []
    for res in results:
        if "error" not in res:
            res["dev"] = {d["dev"]: round(d["handwritten_pronoun_accuracy"], 4) for d in evaluate(res["out"])}
        lines.append(jsonio.dumps(res))
        print(lines[-1], flush=True)
    if args.report:
        Path(args.report).write_text("\n".join(lines) + "\n")
    print("\ntask    steps  dev set              mean    per seed")
    for t in args.tasks:
        for n in args.steps:
            done = [r for r in results if r["task"] == t and r["steps"] == n and "dev" in r]
            for dev in (done[0]["dev"] if done else {}):
                accs = [r["dev"][dev] for r in done]
                print(f"{t:7} {n:6} {dev:20} {statistics.mean(accs):.3f}  "
                      + " ".join(f"s{r['seed']}={r['dev'][dev]:.3f}" for r in done))
    return 0


if __name__ == "__main__":
    sys.exit(main())
