"""Memory per new long sentence (issue 35 item 6): one process renders the given pages (AppTest) for N different
2,000-character sentences on one model and prints, after each sentence, the RSS before and after ``malloc_trim`` and
the bytes the run cache holds. Memory that keeps growing once the cache is at its budget is held by something else.

    python bench/bench_memory_growth.py --pages attention,layers,masking,bertviz_views --n 16 --model minilm
    ATTENTION_LAB_CACHE_BYTES=50000000 python bench/bench_memory_growth.py --pages bertviz_views --n 8

Measured 2026-11-26 (2 cores): before app.shell.html_frame, RSS minus cache grew 555 -> 1,057 MB over 16 sentences on
the four pages above; after, it stayed within 526-593 MB."""
from __future__ import annotations

import argparse
import ctypes
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LONG = "The cat sat on the mat, and the dog didn't cross the street because it was too tired. " * 24


def rss_mib() -> float:
    return int(re.search(r"VmRSS:\s+(\d+)", Path("/proc/self/status").read_text()).group(1)) / 1024


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", default="attention,layers,masking,bertviz_views", help="pages/<name>.py, comma-separated")
    ap.add_argument("--n", type=int, default=16, help="different sentences")
    ap.add_argument("--model", default="minilm")
    args = ap.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    from streamlit.testing.v1 import AppTest

    from app import cache
    libc = ctypes.CDLL("libc.so.6")
    for k in range(args.n):
        text = f"{k} {k * 7} " + LONG[:1990]
        for page in args.pages.split(","):
            at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=600)
            at.query_params["model"], at.query_params["text"] = args.model, text
            at.run()
            at.switch_page(f"../pages/{page}.py")
            at.run()
            assert not at.exception, [e.value for e in at.exception]
        del at
        before = rss_mib()
        libc.malloc_trim(0)
        after, held = rss_mib(), cache.used() / 2 ** 20
        print(json.dumps({"sentence": k, "rss_mib": round(before), "rss_after_trim_mib": round(after),
                          "cache_mib": round(held), "rss_minus_cache_mib": round(after - held)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
