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
from app.shell import sidebar  # noqa: E402  (imports torch and the core)

PAGES = [  # (file, title, icon, url path); the first is the default page, served at "/"
    ("home.py", "Start here", ":material/home:", "home"),
    ("lesson.py", "Lesson (step by step)", ":material/school:", "lesson"),
    ("attention.py", "Attention", ":material/grid_on:", "attention"),
    ("qk.py", "Q·K walkthrough", ":material/calculate:", "qk"),
    ("bertviz_views.py", "bertviz views", ":material/hub:", "bertviz"),
    ("decode.py", "Decode step by step", ":material/skip_next:", "decode"),
    ("positional.py", "Positional encoding", ":material/waves:", "positional"),
    ("masking.py", "Masking", ":material/filter_alt:", "masking"),
    ("layers.py", "Layer outputs", ":material/stacked_line_chart:", "layers"),
    ("training.py", "Training", ":material/model_training:", "training"),
    ("mlm.py", "Masked LM (BERT)", ":material/format_strikethrough:", "mlm"),
    ("coreference.py", "Coreference probe", ":material/link:", "coreference"),
    ("efficient.py", "Efficient attention & cost", ":material/speed:", "efficient"),
    ("recurrence.py", "Transformer-XL & training stability", ":material/history:", "recurrence"),
    ("variants.py", "Heads, GQA & speculative decoding", ":material/tune:", "variants"),
]

warmup.done(preload)
pages = [st.Page(ROOT / "pages" / f, title=t, icon=i, url_path=u) for f, t, i, u in PAGES
         if (ROOT / "pages" / f).exists()]
nav = st.navigation(pages)
st.session_state["view"] = run_guarded(sidebar, "sidebar")  # no traceback or server path ever reaches a page
run_guarded(nav.run, "page")
