"""First visit of every page: seconds from opening the URL to the page's first chart, and to the page fully drawn,
in Chromium at 1280×800.

    python bench/bench_cold_pages.py [--model en-fr] [--pages coreference,variants] [--warm] [--serve] [--passes 2]

Cold (default): per page a fresh ``streamlit run app/main.py`` (load_test.start_server: headless, 127.0.0.1, its own
data folder), so no cache of any kind is warm; the clock starts when the server answers ``/_stcore/health`` and the
browser opens ``/<page>?model=<model>`` in a fresh context of an already running Chromium. ``--serve``: the README's
way, ``python -m app.serve``, one server per pass, the clock started once its warm-up has visited every page (a class
opening pages after the teacher started the server); every page is then a first visit of a new browser context
(a new visitor) on that server. Per page two times: **first chart** (the first plotly chart drawn, ``.main-svg``, or
the bertviz frame; not app/warmup.py's invisible one; none on a page that draws no chart at first, the Start page)
and **drawn** (the title is in the DOM and Streamlit's script state is ``notRunning`` and stays so for 1 s: a rerun
the page triggers itself is waited for). ``--warm`` also reloads the same page on the same server and times it again. ``--passes N`` repeats the
whole sweep (a fresh server each time). ``--visitor one`` (with ``--serve``): one visitor's browser opens the pages one
after another, as a student does, instead of a new browser per page (``each``, the default: nothing in the browser's
cache, the worst case). ``--visitor nav`` (with ``--serve``): one visitor opens the Start page, then reaches every
other page by clicking its link in the sidebar, as a class does after the teacher's URL: the app's own navigation,
no reload, so the front-end code (Plotly's included) is compiled once; the clock starts at the click.

The Start page (``home``) is the baseline every cold page pays on a fresh server: importing torch and the core and
loading the model. Absolute seconds depend on the machine's load; compare pages measured in one run.
Prints one line per page, then one JSON line: ``{"model", "passes": [{"pages": {path: seconds to drawn},
"chart": {path: seconds to the first chart}, "warm": {...}, "errors": {...}}, ...], "worst_chart_s"}``.
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
         " [...document.querySelectorAll('[data-testid=stAlertContentError]')].map(e => e.innerText),"
         " [...document.querySelectorAll('.js-plotly-plot .main-svg, [data-testid=stIFrame], iframe')]"
         ".some(e => !e.closest('.st-key-plotly-preload'))] : null; }")


# After a click in the sidebar: the page counts as there once its title differs from the page left (``old``), and a
# chart counts only if it was not on the page left (those are marked ``data-bench-old`` before the click; a chart
# node Streamlit reused for the new page is then not counted, so a reuse can only delay the figure, never flatter it).
NAV_STATE = ("(old) => { const a = document.querySelector('[data-testid=stApp]'); if (!a) return null;"
             " const h = document.querySelector('h1'); const fresh = !!h && h.innerText !== old;"
             " return [a.dataset.testScriptState, fresh,"
             " document.querySelectorAll('[data-testid=stException]').length,"
             " [...document.querySelectorAll('[data-testid=stAlertContentError]')].map(e => e.innerText),"
             " fresh && [...document.querySelectorAll('.js-plotly-plot:not([data-bench-old]) .main-svg,"
             " iframe:not([data-bench-old])')].some(e => !e.closest('.st-key-plotly-preload'))]; }")
MARK_OLD = ("() => { document.querySelectorAll('.js-plotly-plot, iframe').forEach(e => e.dataset.benchOld = '1');"
            " const h = document.querySelector('h1'); return h ? h.innerText : ''; }")


def drawn_after(page, t0: float, timeout: float, settle: float = 1.0, chart_grace: float = 10.0,
                old_title: str | None = None) -> tuple[float, float | None, list[str]]:
    """Seconds from ``t0`` until the page first reached "drawn" for ``settle`` seconds, seconds until its first chart
    (None: none within ``chart_grace`` seconds after "drawn": the browser draws a plotly chart after the script has
    finished), and the error texts shown. ``old_title``: the page was reached from another in the app, whose title
    this was (:data:`NAV_STATE`)."""
    since = chart = drawn = None
    errors: list[str] = []
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        st = page.evaluate(STATE) if old_title is None else page.evaluate(NAV_STATE, old_title)
        now = time.perf_counter()
        if st and st[4] and chart is None:
            chart = now - t0
        if drawn is None:
            if st and st[0] == "notRunning" and st[1]:
                since = since or now
                if now - since >= settle:
                    drawn, errors = since - t0, [f"exception x{st[2]}"] * bool(st[2]) + list(st[3])
            else:
                since = None
        if drawn is not None and (chart is not None or now - t0 > drawn + settle + chart_grace):
            return drawn, chart, errors
        page.wait_for_timeout(25)
    raise TimeoutError(f"page not drawn within {timeout:.0f} s")


def timings(drawn: float, chart: float | None, errors: list[str]) -> dict:
    """One visit's record: seconds to drawn and to the first chart (rounded), the errors shown."""
    return {"cold_s": round(drawn, 2), "chart_s": None if chart is None else round(chart, 2), "errors": errors}


def visit(browser, base: str, path: str, model: str, warm: bool, timeout: float, ctx=None) -> dict:
    """One first visit of ``/<path>`` (and, ``warm``, a reload): by a new browser context, or in ``ctx``, a visitor's
    browser that has opened other pages before (its cache holds the front-end code they loaded)."""
    own = ctx is None
    ctx = ctx or browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = ctx.new_page()
        t0 = time.perf_counter()
        page.goto(f"{base}/{path}?model={model}")
        out = timings(*drawn_after(page, t0, timeout))
        if warm:
            t0 = time.perf_counter()
            page.reload()
            out["warm_s"] = round(drawn_after(page, t0, timeout)[0], 2)
        return out
    finally:
        page.close() if not own else ctx.close()


def navigate(page, path: str, timeout: float) -> dict:
    """Clicks the sidebar link to ``/<path>`` in ``page`` (a visitor already in the app) and times the page reached."""
    old_title = page.evaluate(MARK_OLD)
    link = page.locator(f'[data-testid=stSidebarNav] a[href$="/{path}"]')
    if not link.is_visible():
        more = page.locator("[data-testid=stSidebarNavViewButton]")
        if more.is_visible():
            more.click()
    t0 = time.perf_counter()
    link.click()
    return timings(*drawn_after(page, t0, timeout, old_title=old_title))


def cold_page(browser, path: str, model: str, log_dir: Path, warm: bool, timeout: float) -> dict:
    """The first visit of ``/<path>`` on a server of its own, started for it (nothing cached)."""
    proc, base = load_test.start_server(log_dir / f"data-{path or 'home'}", log_dir / f"{path or 'home'}.log")
    try:
        return visit(browser, base, path, model, warm, timeout)
    finally:
        load_test.stop_server(proc)


def one_pass(browser, paths: list[str], args, tmp: Path, number: int) -> dict:
    """Every page of ``paths`` once: cold (a server each) or, ``--serve``, on one warmed server."""
    result: dict = {"pages": {}, "chart": {}, "warm": {}, "errors": {}}
    server = None
    if args.serve:
        t_start = time.perf_counter()
        server = load_test.start_server(tmp / f"data-{number}", tmp / f"serve-{number}.log", warm=True)
        result["warmup_s"] = round(time.perf_counter() - t_start, 1)
        print(f"pass {number}: server start + warm-up {result['warmup_s']} s", flush=True)
    visitor = browser.new_context(viewport={"width": 1280, "height": 800}) if args.visitor != "each" else None
    tab = None
    try:
        for path in paths:
            url_path = "" if path == "home" else path
            try:
                if args.visitor == "nav" and tab is not None and path != "home":
                    r = navigate(tab, url_path, args.timeout)
                elif args.visitor == "nav":
                    tab = visitor.new_page()
                    t0 = time.perf_counter()
                    tab.goto(f"{server[1]}/{url_path}?model={args.model}")
                    r = timings(*drawn_after(tab, t0, args.timeout))
                else:
                    r = (visit(browser, server[1], url_path, args.model, args.warm, args.timeout, visitor) if server
                         else cold_page(browser, url_path, args.model, tmp, args.warm, args.timeout))
            except (TimeoutError, RuntimeError) as e:
                r = {"cold_s": None, "chart_s": None, "errors": [str(e)[:300]]}
            result["pages"][path], result["chart"][path] = r["cold_s"], r["chart_s"]
            if "warm_s" in r:
                result["warm"][path] = r["warm_s"]
            if r["errors"]:
                result["errors"][path] = r["errors"]
            print(f"pass {number} {path:>14}: first chart {r['chart_s']} s, drawn {r['cold_s']} s"
                  + (f", warm {r['warm_s']} s" if "warm_s" in r else "")
                  + (f"  errors: {r['errors']}" if r["errors"] else ""), flush=True)
    finally:
        if visitor is not None:
            visitor.close()
        if server:
            load_test.stop_server(server[0])
    return result


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="en-fr")
    ap.add_argument("--pages", help="comma-separated URL paths (default: every registered page; '' is the Start page)")
    ap.add_argument("--warm", action="store_true", help="also time a reload on the same server")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--serve", action="store_true", help="one server per pass, started with python -m app.serve "
                    "(warm-up first)")
    ap.add_argument("--passes", type=int, default=1, help="sweeps of every page, each on fresh servers")
    ap.add_argument("--visitor", choices=("each", "one", "nav"), default="each",
                    help="--serve: every page opened by a new browser (each: nothing cached in the browser), one "
                         "visitor opening the pages' URLs one after another (one: the front-end code cached after "
                         "the first page), or one visitor clicking from page to page in the sidebar (nav: the "
                         "first page by its URL, the rest without a reload)")
    args = ap.parse_args(argv)
    if args.visitor != "each" and not args.serve:
        ap.error("--visitor one / nav needs --serve (one warmed server the visitor stays on)")
    from app import nav
    launch = load_test.from_tests("browser").launch

    every = ["home"] + [e[3] for entries in nav.SECTIONS.values() for e in entries if (ROOT / "pages" / e[0]).exists()]
    paths = every if args.pages is None else [p.strip() for p in args.pages.split(",")]
    paths = ["home" if p == "" else p for p in paths]
    result: dict = {"model": args.model, "serve": args.serve, "passes": []}
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as tmp, launch() as browser:
        for number in range(1, args.passes + 1):
            result["passes"].append(one_pass(browser, paths, args, Path(tmp), number))
    charts = [(s, p) for r in result["passes"] for p, s in r["chart"].items() if s is not None]
    result["worst_chart_s"] = max(charts) if charts else None
    print(f"worst first chart: {result['worst_chart_s']}", flush=True)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
