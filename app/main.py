"""Entry point: ``streamlit run app/main.py``. Registers the pages in the top-level ``pages/`` folder."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # streamlit puts only app/ on the path
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from app import warmup  # noqa: E402  (light: no torch)

st.set_page_config(page_title="Attention Lab", page_icon=str(ROOT / "assets" / "favicon.png"), layout="wide")
preload = warmup.preload_plotly()  # filled on the first run of a fresh server only; see app/warmup.py

from app.guard import run_guarded  # noqa: E402
from app.nav import sections as nav_sections  # noqa: E402
from app.shell import sidebar  # noqa: E402  (imports torch and the core)


warmup.done(preload)
nav = st.navigation(nav_sections(), expanded=True)  # grouped Learn / Probe / Build (app/nav.py), none hidden
st.session_state["view"] = run_guarded(sidebar, "sidebar")  # no traceback or server path ever reaches a page
run_guarded(nav.run, "page")
