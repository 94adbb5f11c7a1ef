"""Time from submitting a sentence to all its heatmaps visible in Chromium, and the traced forward alone.

    python bench/bench_app_latency.py [--model en-fr] [--n 20] [--forward-only]

Prints a table, then one JSON line: median/p95 seconds to render (Chromium), and per bundled model
the median traced-forward milliseconds (the model's own work for one sentence).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import torch

from core.io import registry
from core.inference.runner import run
from load_test import from_tests  # bench/'s own neighbour

ROOT = Path(__file__).resolve().parent.parent

SENTENCES = [f"The {a} didn't cross the {p} because it was too {j}." for a, p, j in [
    ("dog", "road", "tired"), ("cat", "river", "wide"), ("horse", "bridge", "scared"), ("bird", "field", "muddy"),
    ("cow", "square", "hungry"), ("goat", "park", "crowded"), ("mouse", "forest", "dark"), ("sheep", "wall", "high"),
    ("fox", "garden", "weak"), ("duck", "lake", "deep"), ("hen", "path", "narrow"), ("frog", "fence", "sick"),
    ("turtle", "hill", "steep"), ("bee", "house", "empty"), ("wolf", "street", "lazy"), ("animal", "road", "long"),
    ("dog", "river", "angry"), ("cat", "bridge", "slow"), ("horse", "field", "wide"), ("bird", "square", "tired")]]


TWENTY_WORDS = ("My sister saw the small brown dog next to the old house and the dog didn't cross the wide "
                "street.")  # 20 words: issue 16's latency target is a traced forward of the default en-fr on these


def traced_forward_ms(name: str, reps: int = 30, text: str | None = None) -> float:
    ck = registry.load(name)
    text = text or "The animal didn't cross the street because it was too tired."
    if ck.model.cfg.kind == "encoder-decoder" and name in ("copy", "reverse"):
        text = "3 1 4 1 5 9 2 6"
    res = run(ck, text)  # warm-up, and the decoder input for encoder-decoder models
    src = torch.tensor([res.src_ids])
    tgt = torch.tensor([res.tgt_ids]) if res.tgt_ids else None
    times = []
    with torch.no_grad():
        for _ in range(reps):
            t0 = time.perf_counter()
            if ck.model.cfg.kind == "encoder-decoder":
                ck.model(src, tgt, trace=True)
            else:
                ck.model(src, trace=True)
            times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def browser_latency(model: str, n: int) -> list[float]:
    launch = from_tests("browser").launch
    port = 8765
    log = open(ROOT / "bench" / ".latency-server.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app/main.py"), "--server.headless",
                             "true", "--server.address", "127.0.0.1", "--server.port", str(port)],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if urllib.request.urlopen(base + "/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.2)
        times = []
        with launch() as b:
            page = b.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{base}/attention?model={model}")
            page.wait_for_selector(".js-plotly-plot .xtick text", timeout=120_000)
            for s in SENTENCES[:n]:
                word = s.split()[1]
                box = page.get_by_label("Sentence")
                box.fill(s)
                t0 = time.perf_counter()
                box.press("Control+Enter")
                page.wait_for_function(
                    "w => { const p = [...document.querySelectorAll('.js-plotly-plot')];"
                    " return p.length >= 2 && [...p[0].querySelectorAll('.xtick text')].some(e => e.textContent === w); }",
                    arg=word, timeout=60_000)
                times.append(time.perf_counter() - t0)
        return times
    finally:
        proc.terminate()
        proc.wait(10)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="en-fr")
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--forward-only", action="store_true", help="time the traced forwards only (no Chromium)")
    args = ap.parse_args()
    torch.set_num_threads(2)
    forward = {name: round(traced_forward_ms(name), 2) for name in registry.available()}
    twenty = {name: round(traced_forward_ms(name, text=TWENTY_WORDS), 2) for name in registry.available()
              if name.startswith(("en-fr", "en-de"))}
    if args.forward_only:
        print(json.dumps({"traced_forward_ms": forward, "traced_forward_20_words_ms": twenty}))
        return
    lat = browser_latency(args.model, args.n)
    lat_sorted = sorted(lat)
    out = {"model": args.model, "n": len(lat), "render_median_s": round(statistics.median(lat), 3),
           "render_p95_s": round(lat_sorted[max(0, int(0.95 * len(lat)) - 1)], 3), "traced_forward_ms": forward,
           "traced_forward_20_words_ms": twenty}
    for k, v in forward.items():
        print(f"traced forward {k:>10}: {v:7.2f} ms")
    print(f"submit → heatmaps visible ({args.model}, n={len(lat)}): median {out['render_median_s']} s, p95 {out['render_p95_s']} s")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
