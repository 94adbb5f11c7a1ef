"""Start page: what Attention Lab shows and where each idea of the transformer papers lives."""
import streamlit as st

from app import nav
from app.shell import known_summary
from app.text import md

st.title("Attention Lab")
st.markdown(
    "Type a sentence in the box at the top of any page and look inside a real, trained transformer while it reads it. "
    "Every figure is computed live from the selected model on your sentence.")
st.caption(known_summary())
view = st.session_state.get("view")
if view is not None:
    st.info(f"Current model: **{md(view.name)}** ({view.kind}). Change the model in the sidebar, the sentence in the box at the top of each page.")

IDEAS = {  # url path → the ideas of the papers that page shows
    "lesson": "The whole path, in order, for a class: tokens → embeddings → positions → one head by hand → heads → "
              "layers → decoder → output → “it”",
    "attention": "Multi-head attention: every head of every layer; encoder self, masked decoder self, "
                 "cross-attention",
    "qk": "Scaled dot-product attention, softmax(QKᵀ/√d_k + M)V, one row by hand, and why the √d_k; attention as "
          "one update of a Hopfield network",
    "positional": "Positional encoding: sinusoids (a binary counter?), the rotation (shift) property, learned "
                  "positions, RoPE, ALiBi and its sign; the formula's variants; train short, test long (which "
                  "positions read past their training length)",
    "masking": "Masking: causal (no peeking at the future), padding, sliding window, your own mask; teacher forcing "
               "and the decoder's shifted input",
    "decode": "Autoregressive decoding: greedy, beam search, sampling with temperature / top-k / top-p; BLEU and "
              "chrF against your own reference; is a language model quoting its training text?",
    "mlm": "BERT: masked-LM pre-training (fill in [MASK] from both sides vs a left-to-right LM, the 15 % / 80-10-10 "
           "recipe, T5's span corruption), next-sentence prediction and token types, then fine-tuning vs training "
           "from scratch; can BERT write?",
    "vision": "Vision Transformers: an image cut into patches, each patch flattened into a token; a [CLS] token, "
              "learned positions and the same encoder; where [CLS] looks, what shuffling the patches does, and "
              "axial attention (rows, then columns)",
    "coreference": "Coreference: does “it” attend to “animal” (too tired) or “street” (too wide)? Patching says "
                   "which heads carry the choice",
    "variants": "Which heads matter (importance, pruning), weights pruned by magnitude, multi-query / grouped-query "
                "attention, speculative decoding and sampling",
    "lm-heads": "Heads that language models grow: previous-token and induction heads; GPT's task stated as text "
                "(few-shot prompts) and Winograd by likelihood; positional and verb→object heads in a translator's "
                "encoder, replaced by fixed patterns",
    "layers": "Residual stream, LayerNorm, feed-forward layers, logit lens, switching heads off; static vs contextual "
              "embeddings (one word in two sentences)",
    "bertviz": "bertviz's head view and model view of the same run, offline",
    "training": "Training: the warmup learning-rate schedule, label smoothing, watching attention form; how many "
                "parameters and where they sit (GPT, BERT, GPT-2, GPT-3, ALBERT)",
    "efficient": "Attention's quadratic cost and its remedies: Performer, linear attention, Reformer's LSH, "
                 "Longformer's window + global tokens, FlashAttention's tiles and online softmax, adaptive span, "
                 "reversible layers, fast weights, α-entmax; the maximum path length between two tokens; "
                 "Performer's trig features against its positive ones",
    "recurrence": "Transformer-XL's segment memory, how far back it reaches and how much faster it reads, and a "
                  "learned bias per distance (relative positions); pre-LN vs "
                  "post-LN and warmup; ReLU, GELU or SwiGLU, and averaging checkpoints; recurrence vs attention: an "
                  "LSTM, a GRU, LSTMs with attention (Luong, Bahdanau) and a Transformer, where each looks on symbols "
                  "you type, the LSTM's and the GRU's gates, and how far one "
                  "input symbol reaches; counting and nesting (PARITY, balanced brackets) on strings longer than "
                  "training",
}
keep = {k: st.query_params[k] for k in ("model", "text", "tgt", "present", "theme") if k in st.query_params}
for section, pages in nav.sections().items():
    if not section:
        continue
    st.subheader(f"{section} — {nav.WHO[section]}")
    for page in pages:
        link, what = st.columns([2, 5], vertical_alignment="center")
        link.page_link(page, query_params=keep)
        what.markdown(md(IDEAS.get(page.url_path, "")))
st.caption("A real pretrained BERT encoder (all-MiniLM-L6-v2), run by our own code, works on every page: pick "
           "`minilm` in the sidebar. Every link keeps your model and sentence.")
