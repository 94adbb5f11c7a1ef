"""How pages show honest coverage: the words a model never saw are named, and an output computed from a sentence
outside its training text is marked as such (core.coverage), never presented as a translation.

Everything a user typed (and what a model made of it) is shown as text: Markdown and HTML are escaped.
"""
from __future__ import annotations

import re

import streamlit as st

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:&=^\"'])")


def md_text(text) -> str:
    """``text`` for ``st.markdown`` / ``st.warning`` shown literally: every Markdown and HTML character escaped,
    lines kept as lines."""
    return "  \n".join(_MD_SPECIAL.sub(r"\\\1", line) for line in str(text).splitlines() or [""])


def notices(notes, container=st) -> None:
    """Notices (unknown words, truncation) as warnings, shown literally."""
    for note in notes:
        container.warning(md_text(note), icon="⚠️")


def output(what: str, text: str, outside_label: str = "", container=st) -> None:
    """One line ``what: text``; with ``outside_label`` (the sentence has words the model never saw) the line says
    so in red instead of presenting the text as a translation."""
    shown = md_text(text) if text else "∅"
    if outside_label:
        container.markdown(f"**{md_text(what)}** — :red[**{md_text(outside_label)}**]: {shown}")
    else:
        container.markdown(f"**{md_text(what)}:** {shown}")
