"""Which cache policy keeps the classroom's results (app/cache.py): the Coreference page opened by a class after the
heavy pages have filled the run cache, under plain LRU and under GreedyDual-Size, side by side in one process.

For each policy: clear the cache; open Coreference on en-fr (the classroom pair is patched and cached); visit the
heavy pages with N different sentences (their traces fill the cache); then a new session opens Coreference. Printed:
the CPU seconds of that last open, the bytes cached, and whether the classroom's patching result was still cached.

    python bench/bench_cache_policy.py --cache-mb 96 --n 6

The budget is reduced from the app's 768 MiB so that a few visits fill it (a class of 30 fills the full one).
Results: docs/BENCHMARKS.md, "Cache policy".
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("attention", "layers", "masking", "bertviz_views")
LONG = "The old gardener said that the children who played near the river were tired, and then they all went home. "


def _open(page: str, text: str | None = None):
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=600)
    at.query_params["model"] = "en-fr"
    if text is not None:
        at.query_params["text"] = text
    at.run()
    at.switch_page(f"../pages/{page}.py")
    start = time.process_time()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return time.process_time() - start


def one_policy(policy: str, n: int) -> dict:
    """The classroom's Coreference open after ``n`` sentences on the heavy pages, under ``policy``."""
    from app import cache
    cache.POLICY = policy
    cache.clear()
    first = _open("coreference")
    for k in range(n):
        for page in HEAVY:
            _open(page, f"{k} " + LONG * 3)
    kept = any(key[0] == "app.patch_view._pair" for key in cache._entries)
    last = _open("coreference")
    return {"policy": policy, "first_open_cpu_s": round(first, 2), "pair_still_cached": kept,
            "reopen_cpu_s": round(last, 2), "cached_mb": round(cache.used() / 2 ** 20, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache-mb", type=int, default=96, help="the run cache's budget for this bench")
    ap.add_argument("--n", type=int, default=6, help="sentences read on each heavy page between the two opens")
    args = ap.parse_args(argv)
    os.environ["ATTENTION_LAB_CACHE_BYTES"] = str(args.cache_mb << 20)
    import torch
    torch.set_num_threads(1)
    from app import cache
    cache.CACHE_BYTES = args.cache_mb << 20
    _open("coreference")  # imports, model loads, the generated probe pairs: paid once, before either policy
    rows = [one_policy(p, args.n) for p in ("lru", "cost")]
    for r in rows:
        print(r)
    print(f"re-open CPU, GreedyDual-Size / LRU: {rows[1]['reopen_cpu_s'] / max(rows[0]['reopen_cpu_s'], 1e-9):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
