"""bertviz's head view and model view of the live sentence, offline and escaped."""
import streamlit as st

from app.bertviz_embed import head_view_html, model_view_html
from app.shell import html_frame, page_run

st.title("bertviz views")
st.caption("bertviz (Vig 2019) draws every head as lines between tokens. Its JavaScript libraries are bundled "
           "with the app, so this works without internet.")
view, res = page_run()
tokens, attention = {}, {}
for kind in res.trace.kinds():
    attention[kind] = [res.trace.attention(kind, i) for i in res.trace.layer_indices(kind)]
if "encoder" in attention or "cross" in attention:
    tokens["encoder"] = res.src_tokens
if "decoder" in attention or "cross" in attention:
    tokens["decoder"] = res.tgt_tokens
which = st.radio("View", ["head view", "model view"], horizontal=True)
html = (head_view_html if which == "head view" else model_view_html)(tokens, attention)
html_frame(html, height=900 if which == "model view" else 650)
st.download_button("Download this view as HTML", html, f"attention-{which.replace(' ', '-')}.html", "text/html")
