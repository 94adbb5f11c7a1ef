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
