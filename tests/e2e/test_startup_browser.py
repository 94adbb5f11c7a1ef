"""A fresh server's first visit: app/warmup.py gets the browser fetching Plotly's front-end code while the
server still imports torch, then takes its invisible chart away; later visits send none. Ordering only,
no wall-clock thresholds (bench/bench_startup.py measures the time)."""
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
import load_test

pytestmark = pytest.mark.e2e
NOT_RUNNING = "[data-testid=stApp][data-test-script-state=notRunning]"
PAGE_PLOTS = ("() => [...document.querySelectorAll('.js-plotly-plot')]"
              ".filter(e => !e.closest('.st-key-plotly-preload')).length")


@pytest.fixture
def fresh_server(tmp_path):
    proc, base = load_test.start_server(tmp_path / "data", tmp_path / "streamlit.log")
    yield base
    load_test.stop_server(proc)


def test_first_visit_fetches_plotly_while_torch_imports(browser, fresh_server):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = ctx.new_page()
        events = []
        page.on("request", lambda r: events.append(("request", r.url, time.perf_counter())))
        page.goto(fresh_server + "/attention?model=en-fr")
        page.wait_for_selector(".st-key-plotly-preload", state="attached", timeout=60_000)
        page.wait_for_selector("h1", state="attached", timeout=60_000)
        t_title = time.perf_counter()
        chunk = [t for kind, url, t in events if "PlotlyChart" in url]
        # the chart code was asked for before the page (which needs torch) had even written its title
        assert chunk and chunk[0] < t_title, [u for _, u, _ in events]
        page.wait_for_selector(NOT_RUNNING, timeout=60_000)
        page.wait_for_function(f"() => ({PAGE_PLOTS})() >= 1", timeout=60_000)
        assert page.query_selector(".st-key-plotly-preload") is None

        again = ctx.new_page()  # torch is imported now: no warm-up chart
        again.goto(fresh_server + "/attention?model=en-fr")
        again.wait_for_selector("h1", state="attached", timeout=60_000)
        again.wait_for_selector(NOT_RUNNING, timeout=60_000)
        again.wait_for_function(f"() => ({PAGE_PLOTS})() >= 1", timeout=60_000)
        assert again.evaluate("() => document.querySelectorAll('.st-key-plotly-preload').length") == 0
    finally:
        ctx.close()


def test_the_rerun_after_a_fresh_first_run_never_shows_a_widget_twice(browser, fresh_server):
    """The warm-up slot sits at the same place on every run: were it there on the first run only, the second
    run's elements would land one position off and, until that run ended, each widget would appear twice
    (the load test's Training session once found two "Layers" boxes and failed)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = ctx.new_page()
        page.goto(fresh_server + "/training")
        page.wait_for_selector("input[aria-label=Layers]", state="attached", timeout=60_000)
        page.wait_for_selector(NOT_RUNNING, timeout=60_000)
        page.evaluate("""() => { window.__most = 0; window.__ran = false;
            const app = document.querySelector('[data-testid=stApp]');
            const look = () => { window.__most = Math.max(window.__most,
                document.querySelectorAll('input[aria-label=Layers]').length);
                window.__ran = window.__ran || app.dataset.testScriptState === 'running'; };
            look(); new MutationObserver(look).observe(document.body, {childList: true, subtree: true,
                                                                       attributes: true}); }""")
        box = page.get_by_label("d_model", exact=True)
        box.fill("16")
        box.press("Enter")
        page.wait_for_function("() => window.__ran && document.querySelector('[data-testid=stApp]')"
                               ".dataset.testScriptState === 'notRunning'", timeout=60_000)
        assert page.evaluate("() => window.__most") == 1
    finally:
        ctx.close()
