"""Translate / generate one step at a time: candidates, probabilities, the chosen token, its cross-attention."""
import streamlit as st

from app import figures
from app.decode_view import decode_panel
from app.shell import page_view

st.title("Decode step by step")
view = page_view()
if view.kind == "encoder-only":
    st.info("This is an encoder-only model: it does not generate text. Pick a translation model or the LM.")
    st.stop()
decode_panel(view, figures)
