"""Start page: what Attention Lab shows and where each idea of the transformer papers lives."""
import streamlit as st

from app.shell import known_summary
from app.text import md

st.title("Attention Lab")
st.markdown(
    "Type a sentence in the sidebar and look inside a real, trained transformer while it reads it. "
    "Every figure is computed live from the selected model on your sentence.")
st.caption(known_summary())
view = st.session_state.get("view")
if view is not None:
    st.info(f"Current model: **{md(view.name)}** ({view.kind}). Change it, and the sentence, in the sidebar.")

st.subheader("Where to find each idea")
st.markdown("""
| Idea (from the papers) | Page |
|---|---|
| The whole path, in order, for a class: tokens → embeddings → positions → one head by hand → heads → layers → decoder → output → "it" | **Lesson** |
| Scaled dot-product attention, softmax(QKᵀ/√d_k + M)V, one row by hand | **Q·K walkthrough** |
| Multi-head attention: every head of every layer; encoder self, masked decoder self, cross-attention | **Attention**, **bertviz views** |
| Positional encoding: sinusoids, the rotation (shift) property, learned positions, RoPE, ALiBi | **Positional encoding** |
| Masking: causal (no peeking at the future), padding, sliding window, your own mask | **Masking** |
| Residual stream, LayerNorm, feed-forward layers, logit lens, switching heads off | **Layer outputs** |
| Autoregressive decoding: greedy, beam search, sampling with temperature / top-k / top-p | **Decode step by step** |
| Training: the warmup learning-rate schedule, label smoothing, watching attention form | **Training** |
| BERT: masked-LM pre-training (fill in [MASK] from both sides vs a left-to-right LM, the 15 % / 80-10-10 recipe), next-sentence prediction and token-type (segment) embeddings, then fine-tuning vs training from scratch | **Masked LM (BERT)** |
| Coreference: does "it" attend to "animal" (too tired) or "street" (too wide)? | **Coreference probe** |
| Attention's quadratic cost and its remedies: Performer random features, linear attention, Reformer's LSH buckets, Longformer's window + global tokens, FlashAttention's tiles and online softmax | **Efficient attention & cost** |
| Transformer-XL's segment memory and relative positions; pre-LN vs post-LN and warmup; recurrence vs attention | **Transformer-XL & training stability** |
| Which heads matter (importance, pruning), multi-query / grouped-query attention, speculative decoding | **Heads, GQA & speculative decoding** |
| BERT: a real pretrained encoder (all-MiniLM-L6-v2) run by our own code — pick `minilm` in the sidebar | every page |
""")
st.caption("Pages appear in the navigation on the left as they are available in this build.")
