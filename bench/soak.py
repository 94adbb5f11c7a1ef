"""A soak test: many sessions over every page with long inputs while the Training page trains and saves models.

    python bench/soak.py [--sessions 20] [--minutes 8] [--out soak.json]

Starts its own ``python -m app.serve`` (a free 127.0.0.1 port, headless, ATTENTION_LAB_DATA in a temporary folder) and
waits for its warm-up to have visited every page; with more than one model, one more visitor then opens every page
with each model once (short sentences), so that loading a model is not counted as growth. ``--sessions`` visitors
(app/visitor.py: Streamlit's websocket protocol, no browser, so 20 fit beside the app on 2 cores) cycle over every
page of the navigation, each visit a shared link with a bundled model and a sentence of about 2,000 characters no
visit used before (the worst case for every cache: nothing is ever reused). Meanwhile one more visitor keeps the
Training page busy: "Start training" with the page's defaults, again when the run has saved its model, until the
server's cap on saved models refuses the next one (that refusal is part of the test, not a failure). ``--uploads N``
(default 1) more learners, each in headless Chromium (an upload is a browser's HTTP request, which the websocket
visitors do not make), upload the worst text the Training page accepts — about 2 MB of random 1,000-character "words",
the longest a word may be — and train the language model on it with a few steps, again and again in fresh sessions;
each run (upload to "Saved as") is timed and any run that fails or is refused other than by the saved-model caps fails
the soak.

Every second the server's own resident memory (without the training job's process) is sampled. The run fails (exit
1) when a page shows an exception or does not finish, or when memory keeps growing after the caches are full. "Full"
is a point read from the run itself, not a share of its length: the moment every page has finished three visits
with a long sentence (in the reduced run, alone on the machine, the server's memory rose until about 35 s, two
visits a page, and more slowly until about 50 s; a fixed share of the run, as before, read a 40 s run's filling as
growth and failed three of the last five CI runs).
The run goes on for ``--after-fill`` seconds past that point (past ``--minutes`` if need be), and the growth is the
robust slope (Theil-Sen: the median of the slopes between every two points) of the memory's floor after the fill
point (its lowest sample in each 20 s: what it falls back to between visits), in MB per 100 visits; over
``--max-growth`` fails the run, and so does a run whose pages had not filled after 5
minutes (it then ends there). It prints p50 / p95 per page, the memory curve in 10 points and, as its last line, the
summary as JSON; ``--out`` writes every visit and every sample. tests/e2e/test_soak.py runs a reduced version (2
sessions, one model, about 3 minutes).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import string
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

import load_test  # bench/'s own neighbour (the server is started exactly as the load test starts it)

ROOT = Path(__file__).resolve().parent.parent

MODELS = ("en-fr", "en-de", "lm", "mlm", "en-fr-tiny")
WORDS = ("the cat sat on the mat and the dog did not cross the street because it was too tired while a small bird "
         "sang in the old tree near the river").split()


def long_sentence(i: int, chars: int = 2000) -> str:
    """A sentence of about ``chars`` characters that no other ``i`` gives (its words drawn in an order set by i)."""
    out, k = [str(i)], i
    while sum(len(w) + 1 for w in out) < chars:
        k = (k * 1103515245 + 12345) % 2 ** 31
        out.append(WORDS[k % len(WORDS)])
    return " ".join(out) + "."


def own_rss_mb(pid: int) -> float:
    """The server process's resident memory alone (a training job's process is its child and is left out)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def filled_at(visits: list[dict], pages: list[str], k: int = 3) -> float | None:
    """Seconds into the run when every page of ``pages`` had finished ``k`` visits without a problem (the caches'
    fill point), or None if some page never did."""
    names = {page or "home" for page in pages}
    done: dict[str, int] = {}
    for v in sorted(visits, key=lambda v: v["at"] + v["seconds"]):
        if v["problem"] is None and v["page"] in names:
            done[v["page"]] = done.get(v["page"], 0) + 1
            if len(done) == len(names) and min(done.values()) >= k:
                return round(v["at"] + v["seconds"], 1)
    return None


# The floor's window: the server's memory rises and falls by 100-200 MB as pages' working memory comes and goes (a
# saw of 30-60 s in the reduced run). On a 690 s run with no growth (0.7 MB / 100 visits over it), the Theil-Sen slope
# of every sample over a 150 s span read -98 to +155 MB / 100 visits depending on where the span began (sd 60), the
# slope of 20 s minima -65 to +72 (sd 35) (`python bench/soak.py --replay docs/measurements/soak-690s-2026-11-28.json`);
# one CI run read 137 on the old measure against a bound of 120.
FLOOR_WINDOW_S = 20.0


def slope(samples: list[tuple[float, float]]) -> float:
    """Theil-Sen slope of ``samples`` (seconds, MB): the median of the slopes between every two of them, which a
    few spikes (a page's transient working memory) do not move."""
    slopes = sorted((m2 - m1) / (t2 - t1) for i, (t1, m1) in enumerate(samples)
                    for t2, m2 in samples[i + 1:] if t2 > t1)
    return slopes[len(slopes) // 2]


def floor(samples: list[tuple[float, float]], since: float, window_s: float) -> list[tuple[float, float]]:
    """The memory's floor after ``since``: the lowest sample of each whole ``window_s`` window (its time and MB).
    Between two visits' transient working memory the server's memory falls back to what it keeps; a leak raises
    that floor, a page's peak does not."""
    windows: dict[int, list[tuple[float, float]]] = {}
    for t, m in samples:
        if t >= since:
            windows.setdefault(int((t - since) // window_s), []).append((t, m))
    end = max((t for t, _ in samples), default=since)  # a window the run ended early in is not whole
    return [min(w, key=lambda s: s[1]) for k, w in sorted(windows.items()) if end >= since + (k + 0.8) * window_s]


def growth_per_100_visits(samples: list[tuple[float, float]], visits: list[dict], since: float | None,
                          min_span_s: float = 45.0, window_s: float = FLOOR_WINDOW_S) -> float | None:
    """Memory growth after ``since`` (the fill point) in MB per 100 visits: the slope of the memory's floor from then
    on (:func:`floor`, Theil-Sen) times the seconds a visit took on average in that span. None when there is no fill
    point or less than ``min_span_s`` of samples after it (too short to tell a slope from a page's transient memory)."""
    if since is None:
        return None
    after = [(t, m) for t, m in samples if t >= since]
    if len(after) < 2 or after[-1][0] - after[0][0] < min_span_s:
        return None
    span = after[-1][0] - after[0][0]
    n = sum(1 for v in visits if since < v["at"] + v["seconds"] <= after[-1][0])
    low = floor(after, since, window_s)
    return round(slope(low) * span / max(n, 1) * 100, 1) if len(low) >= 2 else None


def _in_own_thread(coroutine):
    """``asyncio.run(coroutine)`` in a thread of its own: a test worker that drove Playwright before has an event loop
    running in its main thread, where ``asyncio.run`` refuses to start."""
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


async def _load_every_model(base: str, pages: list[str], models, timeout_s: float) -> None:
    from app import visitor
    client = visitor.Client(base, cookie="soak-warm", timeout_s=timeout_s)
    await client.connect()
    try:
        for model in models:
            for page in pages:
                await client.open(page, model=model, text="The cat sat on the mat.")
    finally:
        await client.close()


def worst_upload(path: Path, size: int = 1_990_000, word: int = 1000, seed: int = 0) -> Path:
    """Write the worst text the Training page accepts to ``path``: ``size`` bytes of random lowercase ``word``-character
    words (app/uploads: at most 2,000,000 bytes, no word over 1,000 characters; BPE time grows with the
    longest word)."""
    rng = random.Random(seed)
    words = ["".join(rng.choices(string.ascii_lowercase, k=word)) for _ in range(size // (word + 1))]
    path.write_text(" ".join(words) + "\n", encoding="utf-8")
    return path


def upload_session(base: str, end: Callable[[], float], text: Path, runs: list[dict], steps: int = 20) -> None:
    """One learner in Chromium until ``end()`` (time.monotonic; the soak may move it): a fresh session on the
    Training page, task lm, their own text file ``text``, ``steps`` steps, Start training, until "Saved as" (status
    "done"), "Training failed" (error) or the saved-model cap's refusal ("capped"); appended to ``runs`` with the
    seconds from choosing the file."""
    launch = load_test.from_tests("browser").launch
    with launch() as browser:
        while time.monotonic() < end():
            log = load_test.SessionLog("uploader")
            context, page = load_test.open_context(browser, base, log)
            run = {"status": "unfinished", "seconds": None}
            try:
                page.goto(f"{base}/training")
                load_test.settle(page)
                page.locator("[data-testid=stSelectbox]", has_text="Task").locator("input").click()
                page.get_by_role("option", name="lm", exact=True).click()
                load_test.settle(page)
                page.get_by_text("My own UTF-8 text file", exact=True).click()
                load_test.settle(page)
                t0 = time.monotonic()
                page.locator("[data-testid=stFileUploader] input[type=file]").set_input_files(str(text))
                page.get_by_text(text.name).first.wait_for(timeout=120_000)
                load_test.settle(page)
                if page.get_by_text("This file cannot be used").count():
                    raise RuntimeError(page.get_by_text("This file cannot be used").first.inner_text()[:300])
                load_test.set_number(page, "Steps", steps)
                name = page.get_by_label("Save as", exact=True).input_value()
                page.get_by_role("button", name="Start training").click()
                while time.monotonic() < end() + 300:
                    if page.locator("[data-testid=stAlertContentSuccess]", has_text=f"Saved as {name}").count():
                        run["status"] = "done"
                        break
                    errors = page.locator("[data-testid=stAlertContentError]")
                    if errors.count():
                        said = errors.first.inner_text()[:300]
                        run["status"] = "capped" if "saved models" in said else f"error: {said}"
                        break
                    page.wait_for_timeout(500)
                run["seconds"] = round(time.monotonic() - t0, 1)
            except Exception as e:
                run["status"] = f"error: {type(e).__name__}: {e}"[:400]
            finally:
                run["problems"] = log.page_errors + log.st_exceptions + [f"external: {u}" for u in log.external]
                runs.append(run)
                context.close()
            if run["status"] == "capped":
                return


def run_soak(sessions: int = 20, seconds: float = 480, pages: list[str] | None = None, models=MODELS,
             timeout_s: float = 300, train: bool = True, cache_mb: int | None = None, uploads: int = 1,
             after_fill_s: float = 60, fill_limit_s: float = 300, env: dict | None = None) -> dict:
    """Run the soak (see the module's docstring) and return its record: ``visits`` (session, page, model, seconds,
    problem), ``samples`` (seconds, MB), ``saved_models``, ``uploads`` (one row per upload run) and the ``summary``.
    ``cache_mb``: the run cache's budget (``ATTENTION_LAB_CACHE_BYTES``; the app's own is 768 MiB): a small one
    fills within a short run. ``uploads``: learners uploading the worst accepted text (:func:`upload_session`).
    The run lasts ``seconds``, or until ``after_fill_s`` past the caches' fill point (:func:`filled_at`) if that is
    later; a run whose pages have not filled ``fill_limit_s`` in (a slow machine) ends then, without a growth. ``env``:
    more environment variables for the server. The record's ``t0_monotonic`` is the samples' zero on
    ``time.monotonic()``'s clock."""
    from app import nav, visitor

    pages = pages if pages is not None else nav.url_paths()
    work = Path(tempfile.mkdtemp(prefix="attention-lab-soak-"))
    env = {**({"ATTENTION_LAB_CACHE_BYTES": str(cache_mb << 20)} if cache_mb else {}), **(env or {})}
    # python -m app.serve: every page visited once before the soak starts, so its first visits load no model
    proc, base = load_test.start_server(work / "data", work / "server.log", warm=True, env=env)
    visits: list[dict] = []
    samples: list[tuple[float, float]] = []
    if len(models) > 1:  # every model on every page once (a short sentence) before the clock starts: a bundled model
        _in_own_thread(_load_every_model(base, pages, models, timeout_s))  # stays loaded for good: not growth
    t0 = time.monotonic()
    deadline = {"at": t0 + max(seconds, fill_limit_s), "filled": None}

    def end() -> float:
        return deadline["at"]

    def visited(visit: dict) -> None:
        visits.append(visit)
        if deadline["filled"] is None and time.monotonic() < deadline["at"]:
            deadline["filled"] = filled_at(visits, pages)
            if deadline["filled"] is not None:
                deadline["at"] = t0 + max(seconds, deadline["filled"] + after_fill_s)
    halt = threading.Event()
    counter = iter(range(10 ** 9))
    training = {"starts": 0, "errors": []}

    def sample():
        while not halt.wait(1.0):
            samples.append((round(time.monotonic() - t0, 1), round(own_rss_mb(proc.pid), 1)))

    async def session(sid: int):
        client = visitor.Client(base, cookie=f"soak-{sid}", timeout_s=timeout_s)
        await client.connect()
        try:
            k = sid * max(1, len(pages) // sessions)  # a few sessions start far apart in the page list
            while time.monotonic() < end():
                page, model, i = pages[k % len(pages)], models[k % len(models)], next(counter)
                k += 1
                began = time.monotonic()
                try:
                    run = await client.open(page, model=model, text=long_sentence(i))
                    problem = f"exception: {run.exceptions[0]}" if run.exceptions else None
                except Exception as e:  # a run that did not finish in timeout_s, or a dropped connection
                    problem = f"{type(e).__name__}: {e}"[:300]
                    await client.close()
                    client = visitor.Client(base, cookie=f"soak-{sid}", timeout_s=timeout_s)
                    await client.connect()
                visited({"session": sid, "page": page or "home", "model": model,
                               "seconds": round(time.monotonic() - began, 3), "at": round(began - t0, 1),
                               "problem": problem})
        finally:
            await client.close()

    async def trainer():
        client = visitor.Client(base, cookie="soak-trainer", timeout_s=timeout_s)
        await client.connect()
        models_dir = work / "data" / "models"
        try:
            while time.monotonic() < end():
                before = set(models_dir.iterdir()) if models_dir.exists() else set()
                run = await client.open("training")
                if "Start training" not in client.widgets:
                    training["errors"].append("no Start training button")
                    return
                run = await client.click("training", "Start training")
                training["errors"] += run.exceptions
                training["starts"] += 1
                while time.monotonic() < end():  # until the run saved its model (or the soak ends)
                    await asyncio.sleep(2)
                    if models_dir.exists() and set(models_dir.iterdir()) - before:
                        break
        finally:
            await client.close()

    async def everyone():
        await asyncio.gather(*(session(s) for s in range(sessions)), *([trainer()] if train else []))

    upload_runs: list[dict] = []
    text = worst_upload(work / "worst-upload.txt") if uploads else None
    uploaders = [threading.Thread(target=upload_session, args=(base, end, text, upload_runs), daemon=True)
                 for _ in range(uploads)]
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        for u in uploaders:
            u.start()
        _in_own_thread(everyone())
        for u in uploaders:
            u.join(timeout=600)
    finally:
        halt.set()
        load_test.stop_server(proc)
    saved = sorted(p.name for p in (work / "data" / "models").iterdir()) if (work / "data" / "models").exists() else []
    times = [v["seconds"] for v in visits if not v["problem"]]
    per_page = {}
    for page in dict.fromkeys(v["page"] for v in visits):
        mine = [v["seconds"] for v in visits if v["page"] == page and not v["problem"]]
        per_page[page] = {"visits": len(mine), "p50_s": load_test.percentile(mine, 0.5),
                          "p95_s": load_test.percentile(mine, 0.95)}
    curve = [samples[int(q * (len(samples) - 1))] for q in [i / 9 for i in range(10)]] if samples else []
    summary = {"sessions": sessions, "seconds": round(samples[-1][0] if samples else 0.0, 1), "visits": len(visits),
               "failed": [v for v in visits if v["problem"]][:20],
               "n_failed": sum(1 for v in visits if v["problem"]),
               "p50_s": load_test.percentile(times, 0.5), "p95_s": load_test.percentile(times, 0.95),
               "per_page": per_page, "rss_mb_curve": curve,
               "peak_rss_mb": max((m for _, m in samples), default=None), "filled_at_s": deadline["filled"],
               "growth_mb_per_100_visits": growth_per_100_visits(samples, visits, deadline["filled"]),
               "training_starts": training["starts"], "training_errors": training["errors"], "saved_models": saved,
               "upload_runs": len(upload_runs),
               "upload_runs_done": sum(1 for r in upload_runs if r["status"] == "done"),
               "upload_seconds": [r["seconds"] for r in upload_runs if r["status"] == "done"],
               "upload_errors": [r for r in upload_runs
                                 if r["status"] not in ("done", "capped", "unfinished") or r["problems"]]}
    return {"visits": visits, "samples": samples, "uploads": upload_runs, "summary": summary, "t0_monotonic": t0}


def spans(record: dict, span_s: float, step_s: float = 5.0) -> dict:
    """How steady the growth measure is on a recorded run (``--out``): the growth over every ``span_s`` span that
    starts ``step_s`` apart after the fill point, on the memory's floor (this module's measure) and on every sample
    (the measure before it), with their least, greatest and standard deviation."""
    import statistics

    samples, visits, fill = record["samples"], record["visits"], record["summary"]["filled_at_s"]
    out = {}
    for name, window in (("floor", FLOOR_WINDOW_S), ("every sample", 0.1)):  # a window shorter than the
        # sampling period (1 s) keeps every sample as its own floor
        got = []
        start = fill
        while start + span_s <= samples[-1][0]:
            got.append(growth_per_100_visits([x for x in samples if x[0] <= start + span_s], visits, start,
                                             window_s=window))
            start += step_s
        out[name] = {"spans": len(got), "min": min(got), "max": max(got), "sd": round(statistics.pstdev(got), 1)}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--minutes", type=float, default=8.0)
    ap.add_argument("--after-fill", type=float, default=120.0,
                    help="seconds the run goes on after every page's caches filled (past --minutes if need be)")
    ap.add_argument("--max-growth", type=float, default=120.0,
                    help="memory growth after the caches are full, MB per 100 visits, that fails the run")
    ap.add_argument("--no-train", action="store_true")
    ap.add_argument("--uploads", type=int, default=1, help="learners in Chromium uploading the worst accepted text")
    ap.add_argument("--models", nargs="+", default=list(MODELS), help="the models the visits cycle through")
    ap.add_argument("--cache-mb", type=int, help="the run cache's budget (the app's default: 768)")
    ap.add_argument("--out", type=Path, help="write every visit and every memory sample here")
    ap.add_argument("--replay", type=Path, help="run nothing: read a record --out wrote and print, for every --span "
                    "seconds after its fill point (5 s apart), the growth on the floor and on every sample")
    ap.add_argument("--span", type=float, default=150.0, help="with --replay: the span measured (the suite's: 150)")
    args = ap.parse_args(argv)
    if args.replay:
        print(json.dumps(spans(json.loads(args.replay.read_text()), args.span)))
        return 0
    record = run_soak(args.sessions, args.minutes * 60, train=not args.no_train, models=tuple(args.models),
                      cache_mb=args.cache_mb, uploads=args.uploads, after_fill_s=args.after_fill)
    s = record["summary"]
    for page, p in s["per_page"].items():
        print(f"{page:12s} {p['visits']:4d} visits  p50 {p['p50_s'] or 0:6.2f} s  p95 {p['p95_s'] or 0:6.2f} s")
    print("memory (s, MB):", " ".join(f"{t:.0f}:{m:.0f}" for t, m in s["rss_mb_curve"]))
    print(f"{s['visits']} visits, {s['n_failed']} failed; p50 {s['p50_s']} s, p95 {s['p95_s']} s; peak "
          f"{s['peak_rss_mb']} MB, caches full at {s['filled_at_s']} s, growth after "
          f"{s['growth_mb_per_100_visits']} MB per 100 visits; "
          f"{s['training_starts']} training runs started, saved: {len(s['saved_models'])}; uploads: "
          f"{s['upload_runs_done']} of {s['upload_runs']} runs saved, seconds {s['upload_seconds']}, "
          f"errors {s['upload_errors']}")
    if args.out:
        args.out.write_text(json.dumps(record, indent=1))
    print(json.dumps(s))
    grew = s["growth_mb_per_100_visits"] is None or s["growth_mb_per_100_visits"] > args.max_growth
    return 1 if s["n_failed"] or s["training_errors"] or s["upload_errors"] or grew else 0


if __name__ == "__main__":
    sys.exit(main())
