"""First visit of every page on a fresh server: seconds from opening the URL to the page fully drawn, in Chromium.

    python bench/bench_cold_pages.py [--model en-fr] [--pages coreference,variants] [--warm] [--serve]

Per page: a fresh ``streamlit run app/main.py`` (load_test.start_server: headless, 127.0.0.1, its own data folder),
so no cache of any kind is warm; the clock starts when the server answers ``/_stcore/health`` and the browser opens
``/<page>?model=<model>`` in a fresh context of an already running Chromium. "Drawn": the page's title (h1) is in
the DOM and Streamlit's script state is ``notRunning`` and stays so for 1 s (a rerun the page triggers itself is
waited for). ``--warm`` also reloads the same page on the same server and times it again (the caches then full),
so the difference is what a first visit pays that a later one does not. ``--serve`` starts each server the way the
README does, ``python -m app.serve``, and starts the clock once its warm-up has visited every page (a class opening
pages after the teacher started the server); the warm-up's own seconds are printed too.

The Start page (``home``) is the baseline every page pays on a fresh server: importing torch and the core and loading
the model. Absolute seconds depend on the machine's load; compare pages measured in one run.
Prints one line per page, then one JSON line: ``{"model", "pages": {path: seconds}, "warm": {...}, "errors": {...}}``.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import load_test  # bench/'s own neighbour: bench/ is on sys.path when a script in it runs

ROOT = Path(__file__).resolve().parent.parent

STATE = ("() => { const a = document.querySelector('[data-testid=stApp]');"
         " return a ? [a.dataset.testScriptState, !!document.querySelector('h1'),"
         " document.querySelectorAll('[data-testid=stException]').length,"
         " [...document.querySelectorAll('[data-testid=stAlertContentError]')].map(e => e.innerText)] : null; }")


def drawn_after(page, t0: float, timeout: float, settle: float = 1.0) -> tuple[float, list[str]]:
    """Seconds from ``t0`` until the page first reached "drawn" for ``settle`` seconds; the error texts shown."""
    since = None
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        st = page.evaluate(STATE)
        now = time.perf_counter()
        if st and st[0] == "notRunning" and st[1]:
            since = since or now
            if now - since >= settle:
                errors = [f"exception x{st[2]}"] * bool(st[2]) + list(st[3])
                return since - t0, errors
        else:
            since = None
        page.wait_for_timeout(50)
    raise TimeoutError(f"page not drawn within {timeout:.0f} s")


def cold_page(browser, path: str, model: str, log_dir: Path, warm: bool, timeout: float, serve: bool = False) -> dict:
    log = log_dir / f"{path or 'home'}.log"
    t_start = time.perf_counter()
    proc, base = load_test.start_server(log_dir / f"data-{path or 'home'}", log, warm=serve)
    warmup_s = time.perf_counter() - t_start
    try:
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = ctx.new_page()
        t0 = time.perf_counter()
        page.goto(f"{base}/{path}?model={model}")
        cold, errors = drawn_after(page, t0, timeout)
        out = {"cold_s": round(cold, 2), "errors": errors}
        if serve:
            out["warmup_s"] = round(warmup_s, 1)
        if warm:
            t0 = time.perf_counter()
            page.reload()
            out["warm_s"] = round(drawn_after(page, t0, timeout)[0], 2)
        ctx.close()
        return out
    finally:
        load_test.stop_server(proc)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="en-fr")
    ap.add_argument("--pages", help="comma-separated URL paths (default: every registered page; '' is the Start page)")
    ap.add_argument("--warm", action="store_true", help="also time a reload on the same server")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--serve", action="store_true", help="start servers with python -m app.serve (warm-up first)")
    args = ap.parse_args(argv)
    from app import nav
    launch = load_test.from_tests("browser").launch

    every = ["home"] + [e[3] for entries in nav.SECTIONS.values() for e in entries if (ROOT / "pages" / e[0]).exists()]
    paths = every if args.pages is None else [p.strip() for p in args.pages.split(",")]
    paths = ["home" if p == "" else p for p in paths]
    result: dict = {"model": args.model, "serve": args.serve, "pages": {}, "warm": {}, "warmup_s": {}, "errors": {}}
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as tmp, launch() as browser:
        for path in paths:
            try:
                r = cold_page(browser, "" if path == "home" else path, args.model, Path(tmp), args.warm, args.timeout,
                              args.serve)
            except (TimeoutError, RuntimeError) as e:
                r = {"cold_s": None, "errors": [str(e)[:300]]}
            result["pages"][path] = r["cold_s"]
            if "warm_s" in r:
                result["warm"][path] = r["warm_s"]
            if "warmup_s" in r:
                result["warmup_s"][path] = r["warmup_s"]
            if r["errors"]:
                result["errors"][path] = r["errors"]
            print(f"{path:>14}: cold {r['cold_s']} s" + (f", warm {r['warm_s']} s" if "warm_s" in r else "")
                  + (f" (server start + warm-up {r['warmup_s']} s)" if "warmup_s" in r else "")
                  + (f"  errors: {r['errors']}" if r["errors"] else ""), flush=True)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
