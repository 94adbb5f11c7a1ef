"""What a training job costs the pages beside it, one cause at a time (issue 35 item 7).

    python bench/bench_training_cost.py [--clients 4] [--seconds 60] [--out cost.json]

Starts ``python -m app.serve`` (127.0.0.1, a temporary data folder) and, once it is warm, runs three conditions one
after the other on the same server. In each, ``--clients`` students (app/visitor.py, websocket, no browser) render the
Attention page with the default en-fr, a new classroom sentence each time and no pause, for ``--seconds``:

- ``quiet``: nothing else;
- ``job``: a training job runs the whole time (the Training page's defaults, started again when it has saved), and
  the tab that started it is closed at once, so only the job's own process (nice 10, one thread) and the server's
  reader thread for its messages work;
- ``job+tab``: the same, with the tab left open on the Training page, whose live view reruns every second.

A browser drawing the live charts is left out on purpose: in a class it runs on the learner's own machine, while on
this bench machine it would share the same cores. Prints, per condition, the renders done, p50 / p95 of the time from
the new sentence to "script finished", and the training runs started; the last line is the summary as JSON.
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path

import load_test  # bench/'s own neighbour: the server and the sentences are the load test's

CONDITIONS = ("quiet", "job", "job+tab")


async def _renders(base: str, clients: int, seconds: float, counter) -> list[float]:
    from app import visitor
    end = time.monotonic() + seconds
    times: list[float] = []

    async def student(sid: int):
        client = visitor.Client(base, cookie=f"cost-{sid}", timeout_s=300)
        await client.connect()
        try:
            while time.monotonic() < end:
                text = load_test.SENTENCES[next(counter) % len(load_test.SENTENCES)][0]
                run = await client.open("attention", model=load_test.MODEL, text=text)
                if run.exceptions:
                    raise RuntimeError(run.exceptions[0])
                times.append(run.done_s)
        finally:
            await client.close()
    await asyncio.gather(*(student(s) for s in range(clients)))
    return times


async def _trainer(base: str, models_dir: Path, keep_tab: bool, stop: asyncio.Event, started: list) -> None:
    """Start a run with the Training page's defaults; close the tab unless ``keep_tab``; again once it has saved."""
    from app import visitor
    n = itertools.count()
    while not stop.is_set():
        before = set(models_dir.iterdir()) if models_dir.exists() else set()
        client = visitor.Client(base, cookie=f"cost-trainer-{next(n)}", timeout_s=300)
        await client.connect()
        try:
            await client.open("training")
            run = await client.click("training", "Start training")
            if run.exceptions:
                raise RuntimeError(run.exceptions[0])
            started.append(time.monotonic())
            if not keep_tab:
                await client.close()
            while not stop.is_set() and not (models_dir.exists() and set(models_dir.iterdir()) - before):
                await asyncio.sleep(1)
        finally:
            await client.close()


async def _condition(base: str, data: Path, name: str, clients: int, seconds: float, counter) -> dict:
    stop, started = asyncio.Event(), []
    models = data / "models"
    saved_before = len(list(models.iterdir())) if models.exists() else 0
    trainer = None
    if name != "quiet":
        trainer = asyncio.create_task(_trainer(base, data / "models", name == "job+tab", stop, started))
        await asyncio.sleep(8)  # the job's process starts and prepares before the clock runs
    try:
        times = await _renders(base, clients, seconds, counter)
    finally:
        stop.set()
        if trainer:
            await trainer
    return {"condition": name, "renders": len(times), "p50_s": load_test.percentile(times, 0.5),
            "p95_s": load_test.percentile(times, 0.95), "training_runs_started": len(started),
            "training_runs_saved": (len(list(models.iterdir())) if models.exists() else 0) - saved_before}


def run(clients: int = 4, seconds: float = 60) -> list[dict]:
    """Every condition of :data:`CONDITIONS` on one warm server; one summary row each."""
    work = Path(tempfile.mkdtemp(prefix="attention-lab-cost-"))
    proc, base = load_test.start_server(work / "data", work / "server.log", warm=True)
    counter = itertools.count()
    try:
        return [asyncio.run(_condition(base, work / "data", name, clients, seconds, counter)) for name in CONDITIONS]
    finally:
        load_test.stop_server(proc)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    rows = run(args.clients, args.seconds)
    for r in rows:
        print(f"{r['condition']:8s} {r['renders']:4d} renders  p50 {r['p50_s'] or 0:6.2f} s  p95 {r['p95_s'] or 0:6.2f} s"
              f"  training runs started {r['training_runs_started']}, saved {r['training_runs_saved']}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
