"""bench/bench_cold_pages.py --visitor nav: after a click in the sidebar, a chart counts only once the new page's title
is drawn and only if it was not on the page left, so a page that keeps (or reuses) the old page's chart node is never
timed as drawn early. Checked on a static page in Chromium, the DOM shapes Streamlit draws."""
import pytest

from bench_cold_pages import MARK_OLD, NAV_STATE
from browser import launch

pytestmark = pytest.mark.e2e

PAGE = """<div data-testid="stApp" data-test-script-state="notRunning"><h1>Attention</h1>
<div id="old" class="js-plotly-plot"><svg class="main-svg"></svg></div></div>"""


def chart_seen(page) -> bool:
    return page.evaluate(NAV_STATE, "Attention")[4]


def test_a_chart_counts_only_on_the_new_page_and_only_if_new():
    with launch() as browser:
        page = browser.new_page()
        page.set_content(PAGE)
        assert page.evaluate(MARK_OLD) == "Attention"
        state = page.evaluate(NAV_STATE, "Attention")
        assert state[:2] == ["notRunning", False] and state[4] is False   # still the page left
        page.evaluate("() => document.querySelector('h1').innerText = 'Heads'")
        assert page.evaluate(NAV_STATE, "Attention")[1] is True
        assert not chart_seen(page)                                          # only the old chart is there
        page.evaluate("() => document.getElementById('old').innerHTML = '<svg class=\"main-svg\"><g/></svg>'")
        assert not chart_seen(page)                                          # a reused node: not counted
        add = """(where) => { const d = document.createElement('div'); d.className = 'js-plotly-plot';
                              d.innerHTML = '<svg class="main-svg"></svg>';
                              document.querySelector(where).appendChild(d); }"""
        page.evaluate("() => { const k = document.createElement('div'); k.className = 'st-key-plotly-preload';"
                      " document.querySelector('[data-testid=stApp]').appendChild(k); }")
        page.evaluate(add, ".st-key-plotly-preload")
        assert not chart_seen(page)                                          # app/warmup.py's invisible chart
        page.evaluate(add, "[data-testid=stApp]")
        assert chart_seen(page)
        page.evaluate("() => document.querySelector('h1').innerText = 'Attention'")
        assert not chart_seen(page)                                          # no title of its own yet: not there
