"""Masking: causal, padding, sliding-window and hand-made masks on the live sentence, and what they do to the model."""
import streamlit as st
import torch

from app import figures, theme
from app.inspect_view import (as_key, cheat, mask_editor, masked_run, padding, prediction_rows,
                              teacher_forcing_section)
from app.shell import page_run, text_box
from app.text import md
from core.probes import layers, masking
from core.masks import additive, causal_mask, combine, window_mask
from core.trace import KIND_NAMES

st.title("Masking")
st.latex(r"\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}+M\right),\qquad M_{ij}=0\ \text{(may look)}"
         r"\quad\text{or}\quad -\infty\ \text{(masked: } e^{-\infty}=0\text{)}")
view, res = page_run()
model, tok = view.ck.model, view.ck.tokenizer
P = dict(present=view.present, dark=view.dark)
labels = {"encoder": "Encoder self-attention", "decoder": "Decoder self-attention"}
kinds = [k for k in res.trace.kinds() if k != "cross"]
c1, c2, c3 = st.columns(3)
kind = c1.selectbox("Attention", kinds, format_func=labels.get)
layer = c2.selectbox("Layer", range(res.trace.n_layers(kind)))
head = c3.selectbox("Head", range(res.trace.attention(kind, 0).shape[1]))
name = KIND_NAMES[kind].format(layer)
q_tokens, k_tokens = res.tokens(kind)
T, causal = len(q_tokens), kind == "decoder"
own = masking.model_mask(res.trace, name)

st.header("1. Four masks on your sentence")
t_causal, t_pad, t_win, t_custom = st.tabs(["Causal", "Padding", "Sliding window", "Custom"])
with t_causal:
    st.markdown("A decoder must not read ahead: query i sees keys 0…i (Vaswani et al. sec. 3.2.3).")
    st.plotly_chart(figures.mask_map(causal_mask(T), q_tokens, k_tokens, title="Causal mask", **P), key="m_causal")
with t_pad:
    words = view.text.split()
    short = text_box("A shorter sentence for the same batch", " ".join(words[: max(1, len(words) // 2)]))
    pd_ = padding(view.name, tuple(res.src_ids), short)
    if not short.strip():
        st.info("Type a shorter sentence in the box: it is empty.")
    elif pd_ is None:
        st.info("Give a sentence that is not longer than yours (in tokens).")
    else:
        st.dataframe([tok.display(r) for r in pd_["ids"]], hide_index=True)
        row_toks = tok.display(pd_["ids"][1])
        pad_title = theme.nobreak("Short sentence's padding_mask:") + " " + theme.nobreak("[PAD] keys are −∞")
        st.plotly_chart(figures.mask_map(pd_["square"][1], row_toks, row_toks, title=pad_title, **P), key="m_pad")
        c1, c2 = st.columns(2)
        c1.metric("Largest weight any real token gives a [PAD] key", repr(pd_["pad_weight"]))
        c2.metric(f"{pd_['stack']} output: batch vs alone, max |difference|", f"{pd_['max_diff']:.1e}")
with t_win:
    w = st.slider("Window: query i sees keys with |i − j| < window (radius window − 1, as the Efficient page's w)",
                  1, max(T, 2), min(3, T), key="window")
    win = combine(window_mask(T, w), causal_mask(T) if causal else None, batched=False)
    st.plotly_chart(figures.mask_map(win, q_tokens, k_tokens, title=f"Sliding window {w}" + (" + causal" if causal else ""),
                                     **P), key="m_win")
with t_custom:
    own_allowed = masking.allowed_of(own, T, T)
    busiest = masking.busiest_key(res.trace[f"{name}.weights"][0, head], own_allowed)
    st.markdown("Untick a box to forbid that query (row) from looking at that key (column)."
                + (" The decoder's causal mask still applies on top." if causal else "")
                + ("" if busiest is None else f" To start with, the key this head reads most, "
                                              f"“{md(k_tokens[busiest])}”, is blocked for every query."))
    allowed = mask_editor(q_tokens, k_tokens, own_allowed, key=f"custom_{kind}_{T}_{layer}_{head}",
                          block=() if busiest is None else (busiest,))
    custom = additive(allowed)
    st.plotly_chart(figures.mask_map(combine(own, custom, batched=False), q_tokens, k_tokens, title="Your mask (+ the model's own)", **P),
                    key="m_custom")

st.header(f"2. Scores → + mask → softmax (layer {layer}, head {head})")
masks = {"the model's own": None, "causal": causal_mask(T), "sliding window": win, "custom": custom}
choice = st.radio("Mask added on top of the model's own", list(masks), index=3, horizontal=True)
bias = res.trace[f"{name}.bias"][0, head] if f"{name}.bias" in res.trace else None
am = masking.apply_mask(res.trace[f"{name}.scores"][0, head], own, bias, masks[choice])
c1, c2 = st.columns(2)
# values in the cells of a short sentence; half a page wide on a projector, only where the cells hold them
small = dict(show_values=T <= 16, width=theme.HALF_WIDTH)
c1.plotly_chart(figures.matrix(am["scores"], k_tokens, q_tokens, title="QKᵀ/√d_k", x_title="key", y_title="query",
                               value_name="score", diverging=True, **small, **P), key="p_scores")
c2.plotly_chart(figures.mask_map(am["mask"], q_tokens, k_tokens, title="Additive mask M", **P), key="p_mask")
c1.plotly_chart(figures.matrix(am["logits"], k_tokens, q_tokens, title="Sum" + (" (+ ALiBi bias)" if bias is not None else ""),
                               x_title="key", y_title="query", value_name="score", diverging=True, **small, **P),
                key="p_sum")
c2.plotly_chart(figures.matrix(am["weights"], k_tokens, q_tokens, title="softmax → weights", x_title="key", y_title="query",
                               value_name="weight", zmin=0, zmax=1, **small, **P), key="p_weights")
empty = am["empty_rows"]
if empty:
    st.error("Every key is masked for query " + ", ".join(f"{i} ({md(q_tokens[i])})" for i in empty) +
             ": the softmax of a row of −∞ is 0/0, i.e. undefined (NaN), and the model would output NaN. "
             "Allow at least one key in every row.")
st.dataframe([{"query": f"{i}: {q}", "keys allowed": int(am["allowed"][i].sum()),
               "row sum": "undefined (all masked)" if i in empty else f"{float(am['row_sums'][i]):.7f}",
               "largest weight on a masked key": am["row_masked_max"][i]}
              for i, q in enumerate(q_tokens)], hide_index=True)
st.caption(f"Largest weight on any masked entry: {am['masked_max']!r} — e^(−∞) is exactly 0.")

st.header("3. Re-run the model with this mask")
scope = st.radio("Add the mask in", ["every layer of this stack", f"layer {layer} only"], horizontal=True)
names = tuple(KIND_NAMES[kind].format(i) for i in range(res.trace.n_layers(kind))) if scope.startswith("every") else (name,)
extra_allowed = masking.allowed_of(masks[choice], T, T)
if choice == "the model's own":
    st.info("Pick another mask above: the model's own mask is what the normal run already uses.")
elif empty:
    st.warning("Not run: a fully masked row would turn the model's output into NaN.")
else:
    out = masked_run(view.name, tuple(res.src_ids), tuple(res.tgt_ids), names, as_key(extra_allowed))
    after = out.trace[f"{name}.weights"][0, head]
    before_w = res.trace[f"{name}.weights"][0, head]
    st.plotly_chart(figures.matrix(after, k_tokens, q_tokens, title=f"Weights after the re-run (layer {layer}, head {head})",
                                   x_title="key", y_title="query", value_name="weight", zmin=0, zmax=1, **P), key="rerun_w")
    st.metric("Largest change of a weight in this head", f"{float((after - before_w).abs().max()):.4f}")
    in_toks = res.tgt_tokens if res.tgt_tokens else res.src_tokens
    if not layers.has_trained_head(view.ck):  # minilm: its masked-LM head is random; compare what it was trained for
        change = layers.embedding_change(res.trace, out.trace, layers.output_stack(model))
        st.markdown(f"{md(view.name)} has no trained output head, so instead of predictions: cosine similarity of the "
                    f"sentence embeddings, normal vs masked run, **{change['sentence_cos']:.4f}**.")
    else:
        st.markdown("**Predictions at every position** (same inputs, teacher-forced):")
        st.dataframe(prediction_rows(tok, in_toks, res.trace.logits, out.logits, names=("normal", "masked")),
                     hide_index=True)

st.header("4. Let the decoder cheat")
if "decoder" not in kinds:
    st.info("This model has no decoder: its self-attention already sees every position.")
else:
    src_note = "your target" if view.tgt else "the model's own translation; type a Target in the sidebar to change it"
    st.markdown("The causal mask is removed from every decoder self-attention and the decoder is fed the whole true "
                f"sequence ({src_note if model.cfg.kind == 'encoder-decoder' else 'your text'}): "
                "position i can now read token i + 1, the very token it must predict.")
    cd = cheat(view.name, tuple(res.src_ids), tuple(res.tgt_ids))
    c1, c2 = st.columns(2)
    c1.metric("Top prediction = true next token (causal)", f"{cd['normal']['hits']:.0%}")
    c2.metric("Top prediction = true next token (cheating)", f"{cd['cheat']['hits']:.0%}")
    st.dataframe(prediction_rows(tok, res.tgt_tokens, cd["normal"]["logits"], cd["cheat"]["logits"], cd["next_ids"],
                                 names=("causal", "cheating")), hide_index=True)
    dl = min(layer if kind == "decoder" else 0, len(cd["names"]) - 1)
    st.plotly_chart(figures.matrix(cd["cheat"]["weights"][dl, head], res.tgt_tokens, res.tgt_tokens, x_title="key",
                                   y_title="query", value_name="weight", zmin=0, zmax=1, **P,
                                   title=f"Decoder layer {dl}, head {head} without the causal mask"), key="cheat_w")
    st.caption("The model was trained never to see the future, so it was never taught what to do with it: "
               "the weight above the diagonal shows how much it now reads ahead.")

st.header("5. Teacher forcing: the shifted input, and why the decoder may see itself")
teacher_forcing_section(view, res)
