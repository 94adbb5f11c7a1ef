"""Long actions under a progress bar: "k of n", an estimate measured on this machine, and a Stop button.

    result, complete = progress.run("mlm_measure_mlm", "Scoring held-out lines",
                                    lambda tell: mv.held_out_sides(name, progress=tell))

``compute(tell)`` calls ``tell(k, n, partial)`` after each item (``partial``: what is done so far, or a function
returning it). The bar appears at the first call (a cached result returns at once and draws nothing); its text gives
the count, the seconds per item measured from the items done so far in this run, and the time left at that pace.

Stop: Streamlit reruns the page on a click, which interrupts the running script at its next Streamlit call (the
next ``tell``). The last ``partial`` was kept in the session, so the rerun finds the Stop click and returns
``(partial, False)`` instead of starting again; it keeps doing so (with a button to run to the end) until the same
``key`` is run to the end. Put the inputs in ``key`` (model, settings) so another input starts afresh.
"""
from __future__ import annotations

import time

import streamlit as st

from app.text import md

MIN_REDRAW_S = 0.25  # the bar is redrawn at most this often (and always at the last item)


def _state(key: str) -> dict:
    return st.session_state.setdefault(f"_progress_{key}", {})


def estimate_text(label: str, k: int, n: int, elapsed: float) -> str:
    """``"label: k of n · 0.42 s each on this machine · about 12 s left"`` (no estimate before the first item)."""
    if k <= 0:
        return f"{label}: 0 of {n} · measuring this machine's speed…"
    per = elapsed / k
    left = per * max(0, n - k)
    left_text = f"about {left:.0f} s left" if left >= 1 else "almost done"
    return f"{label}: {k} of {n} · {per:.2f} s each on this machine · {left_text}"


def stopped(key: str) -> bool:
    """True when this key's last run was stopped and not yet run to the end."""
    return bool(_state(key).get("stopped"))


def run(key: str, label: str, compute, container=None):
    """``(result, True)`` when ``compute`` ran to the end (or was cached); ``(partial, False)`` after a Stop click
    (``partial`` None when nothing was done yet). See the module docstring."""
    box = container or st
    state = _state(key)
    if st.session_state.get(f"{key}_stop") and state.get("running"):
        state.update(running=False, stopped=True)
    if state.get("stopped"):
        k, n = state.get("k", 0), state.get("n", 0)
        box.warning(f"Stopped after {k} of {n}. What is shown below covers those {k} only.")
        if not box.button("Run it to the end", key=f"{key}_again"):
            partial = state.get("partial")
            return (partial() if callable(partial) else partial), False
        state.clear()
    slot = box.empty()
    drawn: dict = {}

    def tell(k: int, n: int, partial=None) -> None:
        now = time.perf_counter()
        state.update(k=k, n=n, partial=partial, running=True)
        if "bar" not in drawn:
            with slot.container():
                drawn["bar"] = st.progress(0.0, text=md(estimate_text(label, 0, n, 0.0)))
                st.button("Stop", key=f"{key}_stop", help="keeps what is done so far")
            drawn["last"] = 0.0
        if now - drawn["last"] >= MIN_REDRAW_S or k >= n:
            drawn["bar"].progress(min(1.0, k / max(1, n)), text=md(estimate_text(label, k, n, now - drawn["start"])))
            drawn["last"] = now

    state["running"] = True
    drawn["start"] = time.perf_counter()  # the estimate counts the first item too
    try:
        result = compute(tell)
    except Exception:
        state.clear()
        slot.empty()
        raise
    state.clear()
    slot.empty()
    return result, True
