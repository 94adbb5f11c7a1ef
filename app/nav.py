"""The app's pages, grouped for its three users: a class learning the transformer, someone probing a trained model,
someone building and training one. ``app/main.py`` registers them with ``st.navigation``; the Start page links
every one of them.
"""
from __future__ import annotations

from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent.parent
HOME = ("home.py", "Start here", ":material/home:", "home")
# section → [(file in pages/, title, icon, url path)]; in the order a reader takes them
SECTIONS = {
    "Learn": [
        ("lesson.py", "Lesson, step by step", ":material/school:", "lesson"),
        ("attention.py", "Attention", ":material/grid_on:", "attention"),
        ("qk.py", "Q·K walkthrough", ":material/calculate:", "qk"),
        ("positional.py", "Positional encoding", ":material/waves:", "positional"),
        ("masking.py", "Masking", ":material/filter_alt:", "masking"),
        ("decode.py", "Decode step by step", ":material/skip_next:", "decode"),
        ("mlm.py", "Masked LM (BERT)", ":material/format_strikethrough:", "mlm"),
        ("vision.py", "Images as tokens (ViT)", ":material/image:", "vision"),
    ],
    "Probe": [
        ("coreference.py", "Coreference probe", ":material/link:", "coreference"),
        ("variants.py", "Heads, GQA & speculative decoding", ":material/tune:", "variants"),
        ("lm_heads.py", "Heads that language models grow", ":material/psychology:", "lm-heads"),
        ("layers.py", "Layer outputs", ":material/stacked_line_chart:", "layers"),
        ("bertviz_views.py", "bertviz views", ":material/hub:", "bertviz"),
    ],
    "Build": [
        ("training.py", "Training", ":material/model_training:", "training"),
        ("efficient.py", "Efficient attention & cost", ":material/speed:", "efficient"),
        ("recurrence.py", "Transformer-XL & training stability", ":material/history:", "recurrence"),
    ],
}
# a page's own URL parameters (read by the page, written by app.shell.sync_url): dropped from the link when the
# reader moves to a page that has no use for them
PAGE_PARAMS = {"attention": ("kind", "layer", "head"), "qk": ("layer", "head"), "lesson": ("step",)}
WHO = {"Learn": "for a class: the transformer one idea at a time",
       "Probe": "look inside trained models: which heads do what, and is it causal",
       "Build": "train a model, and what makes attention cheaper or training stable"}


def _page(entry, default: bool = False):
    file, title, icon, url = entry
    return st.Page(ROOT / "pages" / file, title=title, icon=icon, url_path=url, default=default)


def sections() -> dict:
    """``{section: [st.Page]}`` for ``st.navigation``; the Start page comes first, under no header. A page whose
    file is missing from this build is left out."""
    out = {"": [_page(HOME, default=True)]}
    for name, entries in SECTIONS.items():
        pages = [_page(e) for e in entries if (ROOT / "pages" / e[0]).exists()]
        if pages:
            out[name] = pages
    return out


def url_paths() -> list[str]:
    """Every registered page's URL path, Start page first ("" : it is served at "/")."""
    return [""] + [e[3] for entries in SECTIONS.values() for e in entries if (ROOT / "pages" / e[0]).exists()]
