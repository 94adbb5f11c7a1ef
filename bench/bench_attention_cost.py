"""Attention's quadratic cost, measured (issue 9, benchmark 4).

Time and memory of one attention call (no grad, fp32, CPU) as the sequence length T grows:

- ``explicit``  softmax(QKᵀ/√d)V with the T×T scores and weights materialised (what tracing does)
- ``sdpa``      torch.nn.functional.scaled_dot_product_attention (fused kernel)
- ``window``    Longformer sliding window (one-sided radius w, chunked, O(T·w)), core.variants.efficient
- ``linear``    linear attention with elu+1 features (Katharopoulos et al.), O(T), core.variants.efficient
- ``lstm``      no attention: an LSTM layer as wide as the heads together (the recurrence the paper replaced:
                O(T·d²) work in T sequential steps, its table 1)

time: median of up to --reps calls after one warm-up (fewer for slow sizes, never under 2), on
--threads torch threads (1 by default: see --help).
memory: peak bytes live in torch's CPU allocator during one call, above what was live before it,
summed from the profiler's allocation events (torch.profiler, profile_memory=True); it counts every
tensor allocation, temporaries inside kernels included, and not Python objects or freed pages the
allocator keeps. The explicit path is skipped where its two B·H·T² fp32 matrices would exceed
--max-explicit-gb (2 GB by default: T = 8192 at B=1, H=4 needs 2.15 GB).
The exponent is the least-squares slope of log(time) on log(T), over all sizes and over T ≥ 512.

Prints a table, writes JSON to --out, and prints the JSON as the last line.

    python bench/bench_attention_cost.py [--threads N] [--out docs/attention_cost.json] [--quick]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
import time
from pathlib import Path

import torch

from core.variants.attention_cost import METHODS, measure_cost

ROOT = Path(__file__).resolve().parents[1]

FULL = (64, 128, 256, 512, 1024, 2048, 4096, 8192)
QUICK = (64, 128, 256, 512)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "attention_cost.json"))
    ap.add_argument("--quick", action="store_true", help="T = 64…512, 2 reps, no memory profile (for tests)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (default 1: on a shared 2-core machine, two threads stall on each other "
                         "whenever another process holds a core, and the timings stop meaning anything; 0 = torch's choice)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--max-explicit-gb", type=float, default=2.0)
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    sizes = QUICK if args.quick else FULL
    start = time.perf_counter()
    print(f"{'method':<9} {'T':>6} {'time ms':>10} {'peak MB':>9}  note", flush=True)

    def show(row):
        mem = "" if row["peak_bytes"] is None else f"{row['peak_bytes'] / 1e6:9.2f}"
        print(f"{row['method']:<9} {row['T']:>6} {row['time_s'] * 1e3:>10.3f} {mem:>9}", flush=True)

    res = measure_cost(sizes, batch=args.batch, heads=args.heads, d=args.d, window=args.window,
                       reps=2 if args.quick else args.reps, budget_s=0.2 if args.quick else 1.0,
                       max_explicit_bytes=args.max_explicit_gb * 1e9, memory=not args.quick, progress=show)
    for row in res["rows"]:
        if row["skipped"]:
            print(f"{row['method']:<9} {row['T']:>6} {'skipped':>10} {'':>9}  {row['skipped']}")
    print("\nfitted exponent of time vs T (log-log least squares):")
    for name, fit in res["exponents"].items():
        fmt = lambda x: "—" if x is None else f"{x:.2f}"  # noqa: E731
        print(f"  {name:<9} all sizes {fmt(fit['all'])}   T ≥ 512 {fmt(fit['large'])}   ({METHODS[name]})")
    result = {
        "benchmark": "attention_cost",
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": "python bench/bench_attention_cost.py" + (" " + " ".join(argv or sys.argv[1:])).rstrip(),
        "config": {"batch": args.batch, "heads": args.heads, "d_head": args.d, "window": args.window,
                   "dtype": "float32", "device": "cpu", "threads": torch.get_num_threads(),
                   "torch": torch.__version__, "machine": platform.machine(), "quick": args.quick,
                   "sizes": list(sizes), "max_explicit_gb": args.max_explicit_gb},
        "methods": METHODS,
        "time": "median seconds of one call (no grad) after a warm-up",
        "memory": "peak bytes live in torch's CPU allocator during one call above the inputs, from "
                  "torch.profiler allocation events (profile_memory=True); null in --quick runs",
        "rows": res["rows"],
        "exponents": res["exponents"],
        "seconds": round(time.perf_counter() - start, 1),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(result, ensure_ascii=False))
    return result


if __name__ == "__main__":
    main()
