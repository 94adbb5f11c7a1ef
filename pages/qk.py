"""Q·K walkthrough: one row of softmax(QKᵀ/√d_k + M)V, number by number (bertviz's neuron view, for our models)."""
import math

import streamlit as st

from app import figures, qk_view
from app.shell import page_run, sync_url, url_int
from app.text import md
from core.probes.analysis import attention_row, scaling_experiment, softmax_sharpness as sharpness
from core.probes.coref import default_query
from core.trace import KIND_NAMES

scaling_experiment_cached = st.cache_data(scaling_experiment, max_entries=64)

st.title("Q·K walkthrough")
st.latex(r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}+M\right)V"
         r"\qquad\text{(Vaswani et al. 2017, eq. 1)}")
view, res = page_run()
kinds = res.trace.kinds()
labels = {"encoder": "Encoder self", "decoder": "Decoder self", "cross": "Cross"}
c1, c2, c3, c4 = st.columns(4)
kind = c1.selectbox("Attention", kinds, format_func=labels.get)
n_layers, n_heads = res.trace.n_layers(kind), res.trace.attention(kind, 0).shape[1]
layer = c2.selectbox("Layer", range(n_layers), index=url_int("layer", n_layers))
head = c3.selectbox("Head", range(n_heads), index=url_int("head", n_heads))
q_tokens, k_tokens = res.tokens(kind)
qi = c4.selectbox("Query token", range(len(q_tokens)), format_func=lambda i: f"{i}: {q_tokens[i]}",
                  index=default_query(res, kind, view.ck.tokenizer))
sync_url(layer=layer, head=head)
row = attention_row(res.trace, KIND_NAMES[kind].format(layer), head, qi)
d_k = row["q"].shape[0]

st.markdown(f"**1. The query** q = x·W_Q for “{md(q_tokens[qi])}” (d_k = {d_k}):")
st.plotly_chart(figures.bars(row["q"], [str(i) for i in range(d_k)], title="q, one bar per dimension",
                             x_title="dimension of q", y_title="value", present=view.present, dark=view.dark), key="q")
st.markdown("**The keys** k_j = x_j·W_K and **values** v_j = x_j·W_V of every token this query can look at:")
kc, vc = st.columns(2)
for col, key, what in ((kc, "k", "keys"), (vc, "v", "values")):
    col.plotly_chart(figures.matrix(row[key], None, k_tokens, title=f"{what} ({key}), one row per token",
                                    x_title="dimension", y_title="token", value_name=key, diverging=True,
                                    present=view.present, dark=view.dark), key=f"qk_{key}")
table = []
for j, tok in enumerate(k_tokens):
    table.append({"key": tok, "q·k": float(row["dots"][j]), f"÷√{d_k} = score": float(row["scaled"][j]),
                  "bias (ALiBi)": float(row["bias"][j]), "mask M": "−∞" if math.isinf(float(row["mask"][j])) else "0",
                  "softmax weight": float(row["weights"][j])})
st.markdown("**2–4. Dot product with every key, scaled by 1/√d_k, mask added, softmax** (a masked key gets exactly 0):")
st.dataframe(table, hide_index=True, width="stretch")
st.plotly_chart(figures.bars(row["weights"], k_tokens, title="softmax weights (this row sums to "
                             f"{float(row['weights'].sum()):.6f})", x_title="key token", y_title="weight", present=view.present, dark=view.dark,
                             highlight=int(row["weights"].argmax())), key="w")
st.markdown("**5. The weighted sum of the values**, Σⱼ wⱼ vⱼ — this head's output for the query:")
st.plotly_chart(figures.bars(row["output"], [str(i) for i in range(d_k)], title="Σ w·v", x_title="dimension of the output",
                             y_title="value", present=view.present,
                             dark=view.dark), key="out")
diff = float((row["weights"] - row["traced_weights"]).abs().max())
st.caption(f"Recomputed by hand here vs the model's own traced weights: max |difference| = {diff:.2e}.")

st.subheader("6. Why divide by √d_k?")
st.markdown(
    "If the components of q and k were independent, with mean 0 and variance 1, q·k would be a sum of d_k such "
    "products: mean 0, **variance d_k** (Vaswani et al. 2017, footnote 4). Large scores push softmax towards a single "
    "weight of 1, where its gradient ∂w/∂s = diag(w) − w wᵀ all but vanishes and learning stalls; dividing by √d_k "
    "brings the variance back to 1, whatever the width of the heads.")
live = row["mask"] == 0
sharp = {name: sharpness(s + row["bias"] + row["mask"])
         for name, s in ((f"÷√{d_k} (the model)", row["scaled"]), ("not divided", row["dots"]))}
st.plotly_chart(figures.grouped_bars({name: v["weights"] for name, v in sharp.items()}, k_tokens,
                                     title=f"This row's softmax, with and without the 1/√{d_k}", x_title="key token",
                                     y_title="weight", present=view.present, dark=view.dark), key="qk_unscaled")
st.dataframe([{"scores": name, "largest weight": float(v["max_weight"]), "entropy (nats)": float(v["entropy"]),
               "‖∂w/∂s‖ (gradient size)": float(v["grad_norm"])} for name, v in sharp.items()],
             hide_index=True, width="stretch")
if int(live.sum()) > 1:
    st.caption(f"On this row, the dot products q·k spread with a standard deviation of "
               f"{float(row['dots'][live].std()):.3f}, the scores q·k/√{d_k} of "
               f"{float(row['scaled'][live].std()):.3f}.")

st.markdown("**Measured on random vectors**: q and k with independent standard normal components, 256 queries "
            "against a number of keys, for each width d_k (computed now, seeded).")
n_keys = st.slider("Keys per query", 2, 64, max(2, min(64, int(live.sum()))), key="qk_n_keys")
d_ks = [2 ** i for i in range(2, 11)]
exp = scaling_experiment_cached(tuple(d_ks), n_keys)
v1, v2 = st.columns(2)
v1.plotly_chart(figures.lines({"q·k": exp["var_raw"], "q·k / √d_k": exp["var_scaled"]}, d_ks, log="xy",
                              title="Variance of the scores: d_k, then 1", x_title="d_k", y_title="variance",
                              present=view.present, dark=view.dark), key="qk_var")
v2.plotly_chart(figures.lines({"largest weight, not divided": exp["max_raw"],
                               "largest weight, ÷√d_k": exp["max_scaled"],
                               "‖∂w/∂s‖, not divided": exp["grad_raw"], "‖∂w/∂s‖, ÷√d_k": exp["grad_scaled"]},
                              d_ks, log="x", title="Unscaled, softmax saturates as d_k grows", x_title="d_k",
                              y_title="mean over queries", present=view.present, dark=view.dark), key="qk_sat")
at = d_ks.index(d_k) if d_k in d_ks else None
if at is not None:
    st.caption(f"At this model's d_k = {d_k}: variance {exp['var_raw'][at]:.1f} unscaled, {exp['var_scaled'][at]:.3f} "
               f"scaled; the largest weight {exp['max_raw'][at]:.3f} against {exp['max_scaled'][at]:.3f} "
               f"(1/{n_keys} = {1 / n_keys:.3f} would be uniform).")

qk_view.hopfield_section(7, row, k_tokens, q_tokens[qi], present=view.present, dark=view.dark)
