"""Attention explorer: every head's map for encoder self, decoder self and cross attention."""
import streamlit as st

from app import coverage_view, export, figures
from app.shell import page_run, sync_url, url_int
from app.text import md
from core.probes.analysis import asymmetry, rollout, top_k_only
from core.probes.coref import default_query
from core.probes.attribution import stacked_value_weighted

st.title("Attention")
view, res = page_run()
if res.output:
    coverage_view.output("Model output", res.output, res.outside_label)

kinds = res.trace.kinds()
kind_titles = {"encoder": "Encoder self-attention", "decoder": "Decoder self-attention (masked)", "cross": "Cross-attention"}
url_kind = st.query_params.get("kind")
kind = st.radio("Attention", kinds, format_func=kind_titles.get, horizontal=True,
                index=kinds.index(url_kind) if url_kind in kinds else 0)
n_layers, n_heads = res.trace.n_layers(kind), res.trace.attention(kind, 0).shape[1]
q_tokens, k_tokens = res.tokens(kind)
# in presentation mode the map comes first, its settings under it: on a projector the first screen shows the figure
figure_slot = st.container() if view.present else st

c1, c2, c3, c4 = st.columns(4)
layer = c1.selectbox("Layer", range(n_layers), index=url_int("layer", n_layers))
head = c2.selectbox("Head", range(n_heads), index=url_int("head", n_heads))
what = c3.radio("Show", ["weights", "value-weighted", "scores"], horizontal=True, key="attention_show",
                help="weights = softmax(scores + mask); value-weighted = ‖α·v·W_O‖, how much each link moves the head's "
                     "output (Kobayashi et al. 2020); scores = QKᵀ/√d_k before the mask and softmax")
k_top = c4.number_input("Top-k links per row (0 = all)", 0, 64, 0)
t1, t2, t3 = st.columns(3)
mean_heads = t1.toggle("Mean over heads")
use_rollout = t2.toggle("Attention rollout", disabled=kind == "cross", help="Abnar & Zuidema 2020: flows through the residual stream")
hide_special = t3.toggle("Hide special tokens")
sync_url(kind=kind, layer=layer, head=head)

stack = (stacked_value_weighted(view.ck.model, res.trace, kind) if what == "value-weighted"
         else res.trace.stacked(kind, what))[:, 0]  # [L, H, Tq, Tk]
if use_rollout and kind != "cross":
    matrix, title = rollout(res.trace.stacked(kind)[:, 0])[layer], f"Rollout up to layer {layer}"
elif mean_heads:
    matrix, title = stack[layer].mean(0), f"Layer {layer}, mean of {n_heads} heads"
else:
    matrix, title = stack[layer, head], f"Layer {layer}, head {head}"
matrix = top_k_only(matrix, int(k_top)) if what != "scores" else matrix
keep_q = [i for i, t in enumerate(q_tokens) if not (hide_special and t.startswith("[") and t.endswith("]"))] or [0]
keep_k = [i for i, t in enumerate(k_tokens) if not (hide_special and t.startswith("[") and t.endswith("]"))] or [0]
shown = matrix[keep_q][:, keep_k]
figure_slot.plotly_chart(figures.heatmap(shown, [q_tokens[i] for i in keep_q], [k_tokens[i] for i in keep_k],
                                         title=f"{kind_titles[kind]} · {title} · {what}", value_name=what,
                                         present=view.present, dark=view.dark, scores=what == "scores"), key="heatmap")

if kind == "encoder" and what == "weights" and not use_rollout and int(k_top) == 0 and len(keep_q) > 1:
    asym = asymmetry(matrix[keep_q][:, keep_q])
    i, j = (keep_q[p] for p in asym["pair"])
    st.caption(f"Not symmetric: “{md(q_tokens[i])}” reads “{md(k_tokens[j])}” with weight {float(matrix[i, j]):.3f}, "
               f"“{md(q_tokens[j])}” reads “{md(k_tokens[i])}” with {float(matrix[j, i]):.3f} — q_i·k_j and q_j·k_i "
               f"use different projections (W_Q ≠ W_K) and each row is its own softmax. ‖A − Aᵀ‖ / ‖A + Aᵀ‖ = "
               f"{asym['relative']:.2f} on this map (0 would be symmetric).")

st.subheader("One query token, every head of this layer")
qi = st.selectbox("Query token", range(len(q_tokens)), format_func=lambda i: f"{i}: {q_tokens[i]}",
                  index=default_query(res, kind, view.ck.tokenizer))
st.plotly_chart(figures.query_bars(res.trace.attention(kind, layer)[0, :, qi], k_tokens, q_tokens[qi],
                                   present=view.present, dark=view.dark), key="bars")

with st.expander("Overview: all layers × heads", expanded=False):
    st.plotly_chart(figures.grid(res.trace.stacked(kind)[:, 0], q_tokens, k_tokens, present=view.present,
                                 title=f"{kind_titles[kind]}: every layer (rows) × head (columns)",
                                 dark=view.dark), key="grid")

st.subheader("Export")
too_large = export.too_large(res)  # the files are built on click (core.io.budget bounds their size)
if too_large:
    st.info(too_large)
else:
    e1, e2 = st.columns(2)
    e1.download_button("Attention as JSON", lambda: export.attention_json(res), "attention.json", "application/json",
                       on_click="ignore")
    e2.download_button("Attention as CSV", lambda: export.attention_csv(res), "attention.csv", "text/csv",
                       on_click="ignore")
st.caption("The camera icon on each figure saves it as PNG (works offline).")
