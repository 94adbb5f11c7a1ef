"""app/warmup.py keeps the page's element positions the same whether or not it sends the warm-up chart:
Streamlit pairs a rerun's elements with the last run's by position, so a slot on the first run only would
show every widget twice during the second run."""
from streamlit.testing.v1 import AppTest


def _page(needed: bool):
    import streamlit as st

    from app import warmup

    slot = warmup.preload_plotly(needed)
    warmup.done(slot)
    st.title("Page")
    st.number_input("Layers", 1, 24, 2)


def _positions(needed: bool) -> dict:
    at = AppTest.from_function(_page, args=(needed,))
    at.run()
    assert not at.exception
    return {node.type: index for index, node in at.main.children.items() if node.type != "empty"}


def test_first_and_later_runs_put_the_page_at_the_same_positions():
    first, later = _positions(True), _positions(False)
    assert "number_input" in later
    assert first == later


def test_the_warm_up_chart_is_gone_after_done():
    at = AppTest.from_function(_page, args=(True,))
    at.run()
    assert len(at.get("plotly_chart")) == 0


def _preload_charts(at) -> int:
    import json
    return sum(json.loads(el.proto.spec)["layout"].get("height") == 10 for el in at.get("plotly_chart"))


def test_a_sessions_first_start_page_keeps_the_chart_until_its_next_run():
    """The Start page draws no chart: on a browser session's first run of it the invisible chart stays (the browser
    compiles Plotly's code while the visitor reads), on the session's next run it is gone; a session whose first
    run is a page with charts of its own does not get it (torch is imported: not a fresh server)."""
    from apptest import ROOT
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=120)
    at.run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == _preload_charts(at) == 1
    at.run()
    assert not at.get("plotly_chart")
    other = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=120)
    other.switch_page("../pages/qk.py")
    other.run()
    assert not other.exception
    assert other.get("plotly_chart") and _preload_charts(other) == 0


def _fresh_server_start_page():
    from app import warmup

    preload = warmup.preload_plotly(True)   # a fresh server: torch not imported yet
    warmup.done(preload, start_page=True)  # and the session's first run of the Start page keeps it


def test_a_fresh_servers_first_run_of_the_start_page_puts_the_chart_in_once():
    """Both reasons to send the chart in one run (a fresh server, a session's first Start page): one chart, no
    duplicate key (the first version filled the slot twice: every fresh server's first visitor got an error)."""
    at = AppTest.from_function(_fresh_server_start_page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert _preload_charts(at) == len(at.get("plotly_chart")) == 1
