"""What Python's full garbage collections cost a busy server, with and without app/serve.py's ``gc.freeze``.

    python bench/bench_gc_freeze.py [--after-fill 150] [--repeats 1] [--out gc.json]

Runs the reduced soak of tests/e2e/test_soak.py (bench/soak.py: 2 sessions over every page with 2,000-character
sentences no visit used before, while the Training page trains) against a fresh ``python -m app.serve``, once with
``ATTENTION_LAB_NO_GC_FREEZE=1`` (the collector walks every object the warm-up loaded) and once as shipped (those
objects frozen once the warm-up is done), alternating ``--repeats`` times, in one run. A ``sitecustomize`` module put
on the server's ``PYTHONPATH`` logs every full (generation 2) collection: when it ended and how long it took. Printed
per run, over the soak's span: visits, visits per second, p50 / p95 seconds a visit, full collections, their seconds
in all and as a share of the span, the median collection, the soak's fill point and growth; ``--out`` writes it all.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import soak  # bench/'s own neighbour

HOOK = '''import gc, json, os, time
_log = open(os.environ["ATTENTION_LAB_GC_LOG"], "a", buffering=1)
_began = {}
def _full(phase, info):
    if info["generation"] == 2:
        if phase == "start":
            _began["t"] = time.monotonic()
        elif "t" in _began:
            now = time.monotonic()
            _log.write(json.dumps({"pid": os.getpid(), "end": now, "seconds": now - _began.pop("t")}) + "\\n")
gc.callbacks.append(_full)
'''


def collections_during(log: Path, t0: float, span_s: float) -> list[float]:
    """Seconds of each full collection the server process (the pid with the most of them: a training job is a
    process of its own) ended within ``span_s`` after ``t0``."""
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    if not rows:
        return []
    pids = [r["pid"] for r in rows]
    server = max(set(pids), key=pids.count)
    return [r["seconds"] for r in rows if r["pid"] == server and 0 < r["end"] - t0 <= span_s]


def one_run(frozen: bool, after_fill_s: float, work: Path, k: int) -> dict:
    """One reduced soak, the collector's log read back over its span."""
    log = work / f"gc-{k}.jsonl"
    env = {"PYTHONPATH": str(work), "ATTENTION_LAB_GC_LOG": str(log)}
    if not frozen:
        env["ATTENTION_LAB_NO_GC_FREEZE"] = "1"
    record = soak.run_soak(sessions=2, seconds=40, models=("en-fr",), cache_mb=48, uploads=0,
                           after_fill_s=after_fill_s, env=env)
    s = record["summary"]
    full = collections_during(log, record["t0_monotonic"], s["seconds"])
    return {"frozen": frozen, "visits": s["visits"], "seconds": s["seconds"],
            "visits_per_s": round(s["visits"] / s["seconds"], 3), "p50_s": s["p50_s"], "p95_s": s["p95_s"],
            "failed": s["n_failed"], "full_collections": len(full), "full_collection_s": round(sum(full), 1),
            "share_of_span": round(sum(full) / s["seconds"], 3),
            "median_collection_ms": round(1000 * statistics.median(full), 1) if full else None,
            "filled_at_s": s["filled_at_s"], "growth_mb_per_100_visits": s["growth_mb_per_100_visits"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--after-fill", type=float, default=150.0, help="seconds each soak goes on past its fill point")
    ap.add_argument("--repeats", type=int, default=1, help="pairs of runs (not frozen, frozen)")
    ap.add_argument("--out", type=Path, help="write every run as JSON here")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="attention-lab-gc-"))
    (work / "sitecustomize.py").write_text(HOOK)
    runs = []
    for k in range(2 * args.repeats):
        runs.append(one_run(frozen=k % 2 == 1, after_fill_s=args.after_fill, work=work, k=k))
        r = runs[-1]
        print(f"{'frozen' if r['frozen'] else 'not frozen':11s} {r['visits']:4d} visits in {r['seconds']:6.1f} s "
              f"({r['visits_per_s']:.2f}/s), p50 {r['p50_s']:.2f} s, p95 {r['p95_s']:.2f} s; "
              f"{r['full_collections']} full collections, {r['full_collection_s']} s "
              f"({100 * r['share_of_span']:.1f} % of the span, median {r['median_collection_ms']} ms); "
              f"filled at {r['filled_at_s']} s, growth {r['growth_mb_per_100_visits']} MB / 100 visits", flush=True)
    if args.out:
        args.out.write_text(json.dumps({"command": "python bench/bench_gc_freeze.py " + " ".join(argv or sys.argv[1:]),
                                        "runs": runs}, indent=2))
    print(json.dumps(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
