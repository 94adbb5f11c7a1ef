"""Where a new visitor's first chart waits: one page opened by fresh Chromium browsers on a running server, the moments
its title, the page's script going idle, Plotly's front-end chunk and the first drawn chart arrive, in seconds.

    python -m app.serve --server.port 8599 &     # a warmed server (wait for "warm-up: 16 pages")
    python bench/first_chart_timeline.py --base http://127.0.0.1:8599 --path "attention?model=en-fr" [--runs 2]

Prints one JSON line per run: ``{"marks": {h1, notRunning, plotly_chunk, main_svg}}`` (docs/BENCHMARKS.md §10).
"""
from __future__ import annotations

import argparse
import json
import time

import load_test  # bench/'s own neighbour: bench/ is on sys.path when a script in it runs

PROBE = ("() => [!!document.querySelector('h1'), !!document.querySelector('.js-plotly-plot .main-svg'),"
         " document.querySelector('[data-testid=stApp]')?.dataset.testScriptState]")


def timeline(browser, url: str, timeout: float = 60) -> dict:
    """Seconds from opening ``url`` in a new browser context to each mark (absent: not reached in ``timeout``)."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = ctx.new_page()
        t0, marks = time.perf_counter(), {}

        def finished(request):
            if "PlotlyChart" in request.url and "plotly_chunk" not in marks:
                marks["plotly_chunk"] = round(time.perf_counter() - t0, 2)

        page.on("requestfinished", finished)
        page.goto(url)
        while time.perf_counter() - t0 < timeout and "main_svg" not in marks:
            h1, svg, state = page.evaluate(PROBE)
            now = round(time.perf_counter() - t0, 2)
            if h1:
                marks.setdefault("h1", now)
                if state == "notRunning":
                    marks.setdefault("notRunning", now)
            if svg:
                marks["main_svg"] = now
            page.wait_for_timeout(20)
        return marks
    finally:
        ctx.close()


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", default="http://127.0.0.1:8599")
    ap.add_argument("--path", default="attention?model=en-fr")
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args(argv)
    out = []
    with load_test.from_tests("browser").launch() as browser:
        for _ in range(args.runs):
            out.append({"marks": timeline(browser, f"{args.base}/{args.path}")})
            print(json.dumps(out[-1]), flush=True)
    return out


if __name__ == "__main__":
    main()
