"""``python -m app.serve [Streamlit's flags]``: the app, with every page visited once as soon as the server is up.

A fresh server pays, on the first visit of each page, for what no visit has needed before: importing torch and the
core, loading the models a page lists, building the broad grammar's parsers, reading the shipped summaries, the first
chart of each kind (docs/BENCHMARKS.md §10: 3.4 s for the Start page, up to 9.3 s for Coreference). Here, once the
server answers, one visitor with no browser (:mod:`app.visitor`) opens every page in turn with its defaults, so the
first student to open a page after the teacher started the server finds it warm. The visits are the pages' own runs:
nothing is warmed that a real visit would not use, and nothing is cached that a visit would not cache.

``--no-warm`` starts the server without the visits (what ``streamlit run app/main.py`` does). Progress goes to the
server's log, one line per page, then ``warm-up: N pages in S s (F failed); M objects frozen``; :data:`STATUS` holds
the same. The objects loaded by then are frozen out of Python's full garbage collections (:func:`freeze_what_is_loaded`:
in the reduced soak, 27 % of the server's time went to them before, 3.5 % after).
"""
from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAIN = ROOT / "app" / "main.py"
STATUS: dict = {"done": False, "pages": {}, "failed": {}, "seconds": None}
PAGE_TIMEOUT_S = 180.0
NO_FREEZE = "ATTENTION_LAB_NO_GC_FREEZE"  # "1": keep Python's collector walking everything (bench/bench_gc_freeze.py)


def _say(line: str) -> None:
    print(f"warm-up: {line}", file=sys.stderr, flush=True)


def _server_url(timeout_s: float = 300.0) -> str | None:
    """The running server's own address, once it answers its health check (None if it never does)."""
    from streamlit import config
    from streamlit.runtime import Runtime

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if Runtime.exists():  # created after the flags and config files are read: the port is the real one
            host = config.get_option("server.address") or "127.0.0.1"
            host = "127.0.0.1" if host in ("0.0.0.0", "::") else f"[{host}]" if ":" in host else host  # all interfaces
            base = (config.get_option("server.baseUrlPath") or "").strip("/")
            url = f"http://{host}:{config.get_option('server.port')}" + (f"/{base}" if base else "")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        return url
            except OSError:
                pass
        time.sleep(0.2)
    return None


async def _visit(url: str, page: str) -> tuple[float, str | None]:
    """Open ``page`` as a fresh visitor would (a new session, the page's defaults): seconds, and what went wrong."""
    from app.visitor import Client

    client = Client(url, cookie="warm-up", timeout_s=PAGE_TIMEOUT_S)
    t0 = time.perf_counter()
    try:
        await client.connect()
        run = await client.open(page)
        return time.perf_counter() - t0, (f"exception: {run.exceptions[0]}" if run.exceptions else None)
    except Exception as e:  # a page that fails here fails for a student too: say so, go on with the others
        return time.perf_counter() - t0, f"{type(e).__name__}: {e}"[:300]
    finally:
        await client.close()


def warm(url: str) -> dict:
    """Visit every registered page once, in the navigation's order; returns (and fills) :data:`STATUS`."""
    from app import nav

    pages = nav.url_paths()
    t0 = time.perf_counter()
    for k, page in enumerate(pages, 1):
        seconds, problem = asyncio.run(_visit(url, page))
        name = page or "home"
        STATUS["pages"][name] = round(seconds, 2)
        if problem:
            STATUS["failed"][name] = problem
        _say(f"{name} {seconds:.1f} s ({k} of {len(pages)})" + (f" FAILED: {problem}" if problem else ""))
    STATUS["seconds"] = round(time.perf_counter() - t0, 1)
    STATUS["frozen_objects"] = freeze_what_is_loaded() if os.environ.get(NO_FREEZE) != "1" else 0
    STATUS["done"] = True
    _say(f"{len(pages)} pages in {STATUS['seconds']} s ({len(STATUS['failed'])} failed); "
         f"{STATUS['frozen_objects']:,} objects frozen")
    return STATUS


def freeze_what_is_loaded() -> int:
    """Collect, then move every object the garbage collector tracks into its permanent generation (``gc.freeze``):
    the modules, models, lexicons and parsers every page loaded are there for the server's life, and Python's full
    collections, which a busy server runs every second or two, stop walking them. Objects are still freed when their
    last reference goes; only reference cycles among these objects would never be collected. Returns how many."""
    import gc
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def _warm_when_up() -> None:
    url = _server_url()
    if url is None:
        _say("the server did not answer its health check; no pages visited")
        return
    warm(url)


def main(argv: list[str] | None = None) -> int:
    """Start the warm-up thread (unless ``--no-warm``, or ``--help``: Streamlit then prints its help and starts no
    server), then Streamlit's ``run`` on app/main.py in this process."""
    args = list(sys.argv[1:] if argv is None else argv)
    warm_up = "--no-warm" not in args
    if not warm_up:
        args.remove("--no-warm")
    if "--help" in (args[: args.index("--")] if "--" in args else args):  # Streamlit prints its help: no server
        print(__doc__.split("\n")[0].replace("``", "`") + "\n\n  --no-warm  start without the warm-up visits\n\n"
              "The other flags are `streamlit run`'s:\n", flush=True)
        warm_up = False
    if warm_up:
        threading.Thread(target=_warm_when_up, name="warm-up", daemon=True).start()
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(MAIN), *args]
    return cli.main()


if __name__ == "__main__":
    sys.exit(main())
