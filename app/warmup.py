"""A faster first visit: the browser starts loading Plotly's front-end code while the server imports torch.

On a fresh server the first page run spends ~1 s importing torch before anything is drawn, and the
browser fetches and compiles Streamlit's Plotly component only when the first chart arrives (~1 s more).
An invisible empty chart sent *before* the import makes those two happen at the same time; it is
removed before the page draws. Later runs (torch already imported) skip all of this, but for a browser session's
first run of the Start page, which keeps the chart while the visitor reads it (:func:`done`).
(Measured with bench/bench_startup.py, A/B: docs/BENCHMARKS.md §7.)
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

import streamlit as st

KEY = "plotly-preload"
SESSION_KEY = "plotly-preloaded"  # session state: this browser session has had the chart on its Start page
_HIDE = (f"<style>.st-key-{KEY} {{position: absolute; width: 100%; height: 0; overflow: hidden; "
         "visibility: hidden; pointer-events: none;}</style>")


def preload_plotly(needed: bool | None = None):
    """Put the invisible chart on the page when ``needed`` (default: torch not imported yet in this process).
    Returns its placeholder (a :class:`Preload`), to pass to :func:`done` once the heavy imports are over.

    The placeholder is created on *every* run, filled or not: Streamlit matches a rerun's elements to the last
    run's by position, so a slot present only on the first run would shift every element of the page by one on
    the second, and for the length of that run the browser would show each widget twice (the stale copy and
    the new one)."""
    if needed is None:
        needed = "torch" not in sys.modules
    slot = st.empty()
    if needed:
        _fill(slot)
    return Preload(slot, needed)


@dataclass
class Preload:
    """The slot at the top of the page, and whether this run has put the invisible chart in it."""
    slot: object
    filled: bool


def _fill(slot) -> None:
    import plotly.graph_objects as go

    with slot.container(key=KEY):
        st.markdown(_HIDE, unsafe_allow_html=True)  # md: trusted (our CSS)
        st.plotly_chart(go.Figure(layout={"height": 10, "margin": {"l": 0, "r": 0, "t": 0, "b": 0}}),
                        config={"staticPlot": True, "displayModeBar": False})


def done(preload: Preload, start_page: bool = False) -> None:
    """Remove the invisible chart (the slot itself stays, empty, so positions match across runs) — except on a
    browser session's first run of the Start page (``start_page``), which draws no chart of its own: there the
    chart is put in (or kept) until the session's next run, so the browser fetches and compiles Plotly's code while
    the visitor reads the links, not after their first click. Measured with ``bench/bench_cold_pages.py --serve
    --visitor nav`` (the Start page, then every page by its sidebar link): without this, the first page with a
    chart drew it 2.8-3.6 s after the click and every later one within 1.3 s (docs/BENCHMARKS.md §10)."""
    if start_page and not st.session_state.get(SESSION_KEY):
        st.session_state[SESSION_KEY] = True
        if not preload.filled:  # a fresh server's first run has it already: a second one would repeat its key
            _fill(preload.slot)
        return
    preload.slot.empty()
