"""How pages show honest coverage: the words a model never saw are named, and an output computed from a sentence
outside its training text is marked as such (core.inference.coverage), never presented as a translation.

Everything a user typed (and what a model made of it) is shown as text: Markdown and HTML are escaped (app.text.md).
"""
from __future__ import annotations

import streamlit as st

from app.text import md


def notices(notes, container=st) -> None:
    """Notices (unknown words, truncation) as warnings, shown literally."""
    for note in notes:
        container.warning(md(note), icon="⚠️")


def output(what: str, text: str, outside_label: str = "", container=st) -> None:
    """One line ``what: text``; with ``outside_label`` (the sentence has words the model never saw) the line says
    so in red instead of presenting the text as a translation."""
    shown = md(text) if text else "∅"
    if outside_label:
        container.markdown(f"**{md(what)}** — :red[**{md(outside_label)}**]: {shown}")
    else:
        container.markdown(f"**{md(what)}:** {shown}")
