"""Entry point: ``streamlit run app/main.py``. Registers the pages in the top-level ``pages/`` folder.

Streamlit puts only app/ on the path; ``app`` and ``core`` are found as the installed package (``pip install
--no-deps -e .``, the README's first command) or, under ``python -m app.serve`` / ``python -m streamlit run``, in
the working directory, the repository."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from app import warmup  # (light: no torch)

ROOT = Path(__file__).resolve().parent.parent

st.set_page_config(page_title="Attention Lab", page_icon=str(ROOT / "assets" / "favicon.png"), layout="wide")
preload = warmup.preload_plotly()  # filled on the first run of a fresh server only; see app/warmup.py

from app.guard import run_guarded  # noqa: E402
from app.nav import sections as nav_sections  # noqa: E402
from app.shell import sidebar  # noqa: E402  (imports torch and the core)


nav = st.navigation(nav_sections(), expanded=True)  # grouped Learn / Probe / Build (app/nav.py), none hidden
warmup.done(preload, start_page=nav.url_path == "")
st.session_state["view"] = run_guarded(lambda: sidebar(nav.url_path), "sidebar")  # no traceback reaches a page
run_guarded(nav.run, "page")
