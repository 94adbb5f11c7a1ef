"""Efficient attention on the live sentence: Performer, LSH buckets, sliding window, FlashAttention tiles, cost."""
import json
import os
from datetime import datetime
from pathlib import Path

import streamlit as st
import torch

from app import efficient_view as EV
from app import figures
from app.shell import page_run
from app.text import code, md
from core.variants import attention_cost as cost
from core.variants import efficient as E
from core.probes import compress as SP

COST_JSON = Path(os.environ.get("ATTENTION_COST_JSON", Path(__file__).resolve().parents[1] / "docs" / "attention_cost.json"))
FEATURES = list(EV.FEATURES)

st.title("Efficient attention & cost")
st.caption("Exact attention costs O(T²) time and memory. Three ways around it, on your sentence's real queries and "
           "keys.")
view, res = page_run()
kind = "encoder" if "encoder" in res.trace.kinds() else "decoder"
causal = kind == "decoder"
tokens = res.tokens(kind)[0]
n_heads = res.trace.attention(kind, 0).shape[1]
c1, c2 = st.columns(2)
layer = c1.selectbox("Layer", range(res.trace.n_layers(kind)), key="eff_layer")
head = c2.selectbox("Head", range(n_heads), key="eff_head")
q, k, v = E.head_qkv(res.trace, kind, layer, head)
exact, _ = E.softmax_attention(q, k, v, causal=causal)
stack = "Encoder" if kind == "encoder" else "Decoder (causal)"
if E.gap(exact, res.trace.attention(kind, layer)[0, head])["max"] > 1e-4:
    st.info("This model adds a bias or mask to the scores that the approximations below leave out; "
            "“exact” here is softmax(QKᵀ/√d) of its real queries and keys.")
plot = dict(present=view.present, dark=view.dark)


def heat(matrix, title):
    return figures.heatmap(matrix, tokens, tokens, title=title, **plot)


st.header("Performer: random features for the softmax kernel")
st.markdown(r"FAVOR+ (Choromanski et al. 2021): $\phi(x)=e^{\omega^\top x-\lVert x\rVert^2/2}/\sqrt m$ with random "
            r"$\omega\sim\mathcal N(0,I)$ gives $\mathbb E[\phi(q)^\top\phi(k)]=e^{q\cdot k}$, so "
            r"$\mathrm{out}\approx\phi(Q)\,(\phi(K)^\top V)\,/\,\phi(Q)\,(\phi(K)^\top\mathbf 1)$ — linear in T.")
p1, p2, p3 = st.columns(3)
m = p1.select_slider("Random features m", FEATURES, value=64, key="favor_features")
seed = p2.number_input("Seed", 0, 10_000, 0, key="favor_seed")
orthogonal = p3.toggle("Orthogonal features", True, key="favor_orth", help="FAVOR+: orthogonal ω, lower variance")
fav = E.favor_attention(q, k, v, m, int(seed), causal, orthogonal=orthogonal)
err = E.gap(fav.weights, exact)
a, b = st.columns(2)
a.plotly_chart(heat(exact, f"{stack} L{layer} H{head} · exact softmax"), key="favor_exact")
b.plotly_chart(heat(fav.weights, f"Performer approximation · m = {m}"), key="favor_approx")
st.markdown(f"Mean |error| **{err['mean']:.4f}**, max **{err['max']:.4f}** (a weight is at most 1).")
norm = E.favor_reach(q, k)
st.caption(f"Each kernel value's relative error is about √(e^‖x+y‖² / m) with x = q/d^¼, y = k/d^¼ (Choromanski "
           f"et al., Lemma 2); here ‖x‖ + ‖y‖ reaches {norm:.1f}, so sharp heads (large scores) need very many features.")
st.markdown(r"**Trigonometric features.** The Wikipedia seed says Performer uses Random Feature Attention's "
            r"features, $\phi(x)=e^{\lVert x\rVert^2/2}[\sin(Wx),\cos(Wx)]/\sqrt m$ on the same ω. They are "
            r"unbiased for $e^{x\cdot y}$ too, but a term can be negative. The Performer paper uses positive features "
            "instead. Both kinds are drawn below (trig uses 2m numbers per token, a sine and a cosine per ω).")
curve = EV.favor_curves(view.name, view.text, view.tgt, kind, layer, head, causal)
st.plotly_chart(figures.lines(curve["curves"], FEATURES,
                              title="Mean |approx − exact| vs number of features (mean of 4 seeds)",
                              x_title="random features m", y_title="mean absolute error", log="xy", **plot),
                key="favor_curve")
st.dataframe(EV.feature_table(curve["study"], FEATURES), hide_index=True, width="stretch", key="favor_kinds")
st.markdown(EV.feature_reading(curve["study"], FEATURES))
with st.expander("Linear attention (elu + 1 features, Katharopoulos et al. 2020)"):
    lin = E.linear_attention_weights(q, k, causal=causal)
    st.plotly_chart(heat(lin, "Linear attention φ(q)·φ(k), φ = elu + 1"), key="linear_map")
    st.caption(f"A different kernel, not an approximation of this model's softmax: mean |difference| "
               f"{E.gap(lin, exact)['mean']:.4f}. It runs in O(T) memory through φ(K)ᵀV.")
    w_fast, read = E.fast_weights(q, k, v)
    unnormalised = (E.elu_feature(q) @ E.elu_feature(k).transpose(-2, -1)).tril() @ v
    st.markdown(r"**The same thing as fast weights** (Schmidhuber 1992): read causally and without its normaliser, "
                r"linear attention is a memory matrix $W_t = W_{t-1} + v_t\,\varphi(k_t)^\top$ written with one outer "
                r"product per token and read with the query, $\text{out}_t = W_t\,\varphi(q_t)$. On this head: max "
                rf"$|W_t\varphi(q_t) - \sum_{{j\le t}}(\varphi(q_t)\cdot\varphi(k_j))\,v_j|$ = "
                rf"{float((read - unnormalised).abs().max()):.1e} over all {len(tokens)} tokens.")
    st.plotly_chart(figures.lines({"‖W_t‖ (Frobenius)": w_fast.flatten(-2).norm(dim=-1).tolist()},
                                  list(range(len(tokens))), title="Fast-weight memory as tokens are written",
                                  x_title="token position t", y_title="‖W_t‖", **plot), key="fast_weights")

st.header("Reformer: LSH buckets")
st.markdown(r"Random rotation $R$, bucket $h(x)=\arg\max[xR;\,-xR]$: a query only attends to keys in its own bucket.")
l1, l2, l3, l4 = st.columns(4)
n_buckets = l1.select_slider("Buckets", [1, 2, 4, 8, 16], value=4, key="lsh_buckets")
rounds = l2.number_input("Hash rounds", 1, 4, 1, key="lsh_rounds")
lsh_seed = l3.number_input("Seed", 0, 10_000, 0, key="lsh_seed")
shared = l4.toggle("Shared QK (Reformer)", False, key="lsh_shared", help="Keys = normalised queries; no self-attention")
lsh = E.lsh_attention(q, k, v, n_buckets, int(lsh_seed), shared_qk=shared, causal=causal, n_rounds=int(rounds))
st.dataframe({"token": tokens, **{f"query bucket (round {r})": lsh.q_buckets[r].tolist() for r in range(int(rounds))},
              **({} if shared else {f"key bucket (round {r})": lsh.k_buckets[r].tolist() for r in range(int(rounds))}),
              "attention mass kept": [round(float(x), 3) for x in lsh.kept]}, key="lsh_table")
a, b = st.columns(2)
a.plotly_chart(heat(lsh.weights, f"Attention within buckets · {n_buckets} buckets × {rounds} round(s)"), key="lsh_map")
b.plotly_chart(figures.bars(lsh.kept, tokens, title="Share of the full attention mass each query keeps",
                            x_title="query token", y_title="mass kept", **plot), key="lsh_kept")
st.markdown(f"On average the buckets keep **{lsh.kept.mean():.1%}** of the full attention mass.")

st.header("Longformer: sliding window + global tokens")
w1, w2 = st.columns(2)
window = w1.slider("Window radius w (query i sees keys |i − j| ≤ w)", 0, max(len(tokens) - 1, 1), 2, key="window")
glob = w2.multiselect("Global tokens", range(len(tokens)), default=[0], format_func=lambda i: f"{i}: {tokens[i]}",
                      key="window_global")
win, _, allowed = E.sliding_window_attention(q, k, v, window, glob, causal=causal)
st.plotly_chart(heat(win, f"Sliding window w = {window}, {len(glob)} global token(s)"), key="window_map")
st.markdown(f"{int(allowed.sum())} of {allowed.numel()} query–key pairs computed; they carry "
            f"**{E.mass_kept(exact, allowed).mean():.1%}** of the full attention mass on average.")

st.header("Adaptive span: how far each head looks")
st.markdown(r"Sukhbaatar et al. (2019) saw that many heads of a trained model attend only to nearby tokens, and gave "
            r"each head its own span, learned with a soft mask $m_z(x)=\min(1,\max(0,(R+z-x)/R))$ on the distance "
            r"$x$. Nothing is trained here: a head's **span** is measured as the smallest radius $r$ whose keys "
            r"$|i-j|\le r$ hold 90 % of a query's attention, taken at the 90th percentile of its queries.")
spans = EV.span_table(res, kind)
st.plotly_chart(figures.matrix(spans, [f"H{h}" for h in range(n_heads)], [f"L{i}" for i in range(len(spans))],
                               title=f"{stack} self-attention: span of each head on your text", x_title="head",
                               y_title="layer", value_name="span (tokens)", show_values=True, zmin=0,
                               zmax=max(len(tokens) - 1, 1), **plot), key="span_heads")
reach = SP.radius_mass(res.trace.attention(kind, layer)[0, head].float()).mean(0)
st.plotly_chart(figures.lines({f"L{layer} H{head}": reach.tolist()}, list(range(len(tokens))),
                              title=f"L{layer} H{head}: attention within radius r (mean of queries)",
                              x_title="radius r (tokens)", y_title="share of attention", y_range=[0, 1.02], **plot),
                key="span_reach")
st.caption(f"Layer {layer}, head {head} (the pickers at the top): its span on your text is "
           f"{int(spans[layer, head])} of at most {len(tokens) - 1} tokens — the radius nine queries in ten need. The "
           "curve is the mean over all queries, so it can cross 0.9 at a smaller radius.")
try:
    study = EV.span_study(view.name)
except ValueError as e:
    st.info(f"No held-out text for this model, so no cut: {md(e)}")
else:
    (fl, fa), (cl, ca), (ul, ua) = study.full, study.cut, study.uniform
    st.dataframe({"every self-attention head": ["whole", "cut to its own span", f"one radius, {study.uniform_radius}"],
                  "query–key pairs computed": ["100 %", f"{study.cut_share:.1%}", f"{study.uniform_share:.1%}"],
                  "held-out loss": [round(fl, 4), round(cl, 4), round(ul, 4)],
                  "token accuracy": [f"{fa:.1%}", f"{ca:.1%}", f"{ua:.1%}"]}, key="span_study")
    st.markdown(EV.span_reading(study))

st.header("Sparse attention: α-entmax")
st.markdown(r"Softmax never gives a key exactly zero weight. Correia et al. (2019) use α-entmax instead, "
            r"$\mathrm{entmax}_\alpha(z)_i=[(\alpha-1)z_i-\tau]_+^{1/(\alpha-1)}$ with $\tau$ set so the weights "
            r"sum to 1: α = 1 is softmax, α = 2 is sparsemax, and for α > 1 every key scored at most "
            r"$\tau/(\alpha-1)$ gets exactly 0. Here all three read the same scores: this head's real "
            r"$QK^\top/\sqrt d$ plus any bias and mask the model adds, with $\tau$ found by bisection.")
sparse = EV.entmax_study(view.name, view.text, view.tgt, kind, layer, head)
st.plotly_chart(figures.heatmap_row(sparse["maps"], tokens, tokens, title=f"L{layer} H{head}: softmax, 1.5-entmax "
                                     "and sparsemax of the same scores", **plot), key="entmax_maps")
st.plotly_chart(figures.grouped_bars(sparse["zeros"], tokens, title="Keys each query gives exactly zero weight",
                                     x_title="query token", y_title="keys at zero", **plot), key="entmax_zeros")
st.markdown(sparse["reading"])
st.caption("The model was trained with softmax, so the entmax maps re-read scores it learned for softmax; a model "
           "trained with entmax (Correia et al. also learn α per head) would learn other scores. Which keys reach "
           "zero depends on the gaps between the scores: the larger the gaps, the more zeros.")

st.header("FlashAttention: exact attention, one tile at a time")
st.markdown(r"Dao et al. (2022) never build the T×T matrix: a block of queries walks the key blocks keeping, per "
            r"row, a running maximum $m$, a running sum $\ell=\sum_j e^{s_j-m}$ and an unnormalised output. When a "
            r"block raises the maximum, what was summed so far is rescaled by $e^{m_{old}-m_{new}}$ (the *online "
            r"softmax*); at the end $\text{out}=\text{acc}/\ell$ — the same numbers as softmax(QKᵀ/√d)V.")
f1, f2 = st.columns(2)
block = f1.slider("Tile size (queries × keys)", 1, max(len(tokens), 1), EV.default_tile(len(tokens)), key="flash_block")
row = f2.selectbox("Follow query", range(len(tokens)), index=len(tokens) - 1, format_func=lambda i: f"{i}: {tokens[i]}",
                   key="flash_row")
tiled = E.tiled_attention(q, k, v, block, block, causal=causal, watch=row)
_, exact_out = E.softmax_attention(q, k, v, causal=causal)
gaps = E.step_gaps(tiled.steps, exact_out[row])
st.dataframe({"key block": [" ".join(figures.label(t) for t in tokens[a:b]) for a, b in (x["keys"] for x in tiled.steps)],
              "block max score": [float(x["block_max"]) for x in tiled.steps],
              "running max m": [float(x["m"]) for x in tiled.steps],
              "rescale e^(m_old − m)": [float(x["rescale"]) for x in tiled.steps],
              "running sum ℓ": [float(x["l"]) for x in tiled.steps],
              "|output so far − exact|": gaps}, key="flash_steps")
fig = figures.lines({f"query {row}: {figures.label(tokens[row])}": gaps}, list(range(1, len(gaps) + 1)),
                    title="How far the output is from exact after each key block", x_title="key blocks read",
                    y_title="max |difference|", **plot)
fig.update_xaxes(dtick=1)
st.plotly_chart(fig, key="flash_curve")
skipped = tiled.blocks_total - tiled.blocks_computed
st.markdown(f"All rows: max |tiled − exact| **{E.gap(tiled.out, exact_out)['max']:.1e}**. Largest score buffer held: "
            f"**{tiled.largest_scores}** numbers (one tile) instead of {len(tokens)}×{len(tokens)} = "
            f"{len(tokens) ** 2}. Tiles computed: {tiled.blocks_computed} of {tiled.blocks_total}"
            + (f" — the causal mask lets {skipped} tile(s) wholly above the diagonal be skipped." if causal else "."))
st.caption("On a GPU the tiles live in fast on-chip memory, which is where FlashAttention's speed comes from; here "
           "the tiling is shown on this head's real queries, keys and values. The model itself runs torch's fused "
           "scaled_dot_product_attention, timed against the explicit form in the chart below.")

st.header("Reversible layers: recompute instead of store")
st.markdown(r"The Reformer (Kitaev et al. 2020) makes its layers invertible with reversible residual connections "
            r"(Gomez et al. 2017). A block reads two streams and writes $y_1=x_1+F(x_2)$, $y_2=x_2+G(y_1)$, with "
            r"$F$ the attention and $G$ the feed-forward sublayer; its inputs come back from its outputs as "
            r"$x_2=y_2-G(y_1)$, then $x_1=y_1-F(x_2)$. So training need not store them: the backward pass rebuilds "
            r"each block's inputs from the block above and keeps one block's activations at a time.")
rev = EV.reversible_study(view.name, view.text, view.tgt, kind)
rev_mb = {"ordinary autograd": [b / 1e6 for b in rev.ordinary],
          "reversible (output only)": [b / 1e6 for b in rev.reversible]}
st.plotly_chart(figures.lines(rev_mb, rev.depths, title="Activations saved for the backward vs depth",
                              x_title="reversible blocks N", y_title="saved MB", **plot), key="rev_memory")
st.markdown(EV.reversible_reading(rev))
st.dataframe({"blocks N": rev.depths, "ordinary autograd (MB)": [round(b / 1e6, 4) for b in rev.ordinary],
              "reversible (MB)": [round(b / 1e6, 4) for b in rev.reversible],
              "max |x − x̂| after the inverse": [float(f"{e:.2e}") for e in rev.error]}, key="rev_table")
ours = rev.source == "model"
used = (f"this model's own {kind} layers (block i uses layer i mod {rev.layers}; each LayerNorm is applied before "
        "its sublayer)" if ours else "a freshly initialised two-layer stack of this model's width (seed 0): it is "
        "not a Transformer of ours, so it has no layers to lend")
st.caption(f"F and G come from {used}; both streams start as your sentence's embeddings, as in the Reformer. Our "
           "models were trained with ordinary residual connections, not reversible ones, so these blocks borrow the "
           "weights only to show the mechanism: they do not compute what the model computes. Memory is counted, not "
           "timed: the bytes of every tensor autograd saves for the backward (torch's saved_tensors_hooks), each "
           "buffer once, weights left out.")

st.header("Cost as the sequence grows")
data = json.loads(COST_JSON.read_text(encoding="utf-8")) if COST_JSON.exists() else st.session_state.get("cost_live")
if data is None:
    st.info("No measurement found in docs/attention_cost.json. Run `python bench/bench_attention_cost.py` for the "
            "full one (T = 64…8192), or a quick one here.")
    if st.button("Run a quick measurement (T = 64…1024)", key="cost_run"):
        with st.spinner("Timing four attention implementations and an LSTM…"):
            live = cost.measure_cost((64, 128, 256, 512, 1024), reps=3, budget_s=0.3, memory=True)
        data = st.session_state["cost_live"] = {**live, "date": datetime.now().isoformat(timespec="seconds"),
                                                "command": "quick measurement in the app",
                                                "config": {"threads": torch.get_num_threads()}}
if data is not None:
    when = data.get("date", "?")
    cfg = data.get("config", {})
    st.caption(f"Measured with {code(data.get('command', 'python bench/bench_attention_cost.py'))} on {when} "
               f"(CPU, {cfg.get('threads', torch.get_num_threads())} thread(s), batch {cfg.get('batch', 1)}, "
               f"{cfg.get('heads', 4)} heads, d = {cfg.get('d_head', 32)}, window radius {cfg.get('window', 64)}). "
               "Time is the median of several calls; memory is the peak of torch's CPU allocations during one call.")
    sizes, times = cost.cost_series(data["rows"])
    _, mems = cost.cost_series(data["rows"], "peak_bytes")
    for key, series, y in (("cost_time", {n: [t * 1e3 for t in s] for n, s in times.items()}, "milliseconds"),
                           ("cost_mem", {n: [b / 1e6 for b in s] for n, s in mems.items()}, "peak MB")):
        st.plotly_chart(figures.lines(series, sizes, title=f"{y} vs sequence length T", x_title="T", y_title=y,
                                      log="xy", **plot), key=key)
    st.dataframe({"method": list(data["exponents"]),
                  "time ∝ T^k, all T": [e["all"] for e in data["exponents"].values()],
                  "time ∝ T^k, T ≥ 512": [e["large"] for e in data["exponents"].values()]}, key="cost_fit")
    if "lstm" in times and "explicit" in times:
        later = [t for t, a, r in zip(sizes, times["explicit"], times["lstm"]) if a == a and r == r and a > r]
        st.caption("The Transformer's own comparison (Vaswani et al. 2017, table 1): a recurrent layer costs O(T·d²) "
                   "in T steps that must run one after another, self-attention O(T²·d) in one parallel step. "
                   + (f"Here the explicit attention becomes slower than the LSTM from T = {later[0]:,} on "
                      f"(d = {cfg.get('heads', 4) * cfg.get('d_head', 32)} features), the fused one at "
                      + next((f"T = {t:,}" for t, a, r in zip(sizes, times["sdpa"], times["lstm"]) if a > r),
                             "no T measured")
                      + "; below that, attention is the faster: one parallel step against T steps in a chain "
                        "(and by the table's count, less arithmetic while T < d)."
                      if later else "At every T measured here attention was the faster of the two."))
    for row in data["rows"]:
        if row.get("skipped"):
            st.caption(f"{row['method']} at T = {row['T']} skipped: {row['skipped']}.")

st.header("Maximum path length between two tokens")
st.markdown("Vaswani et al. (2017, table 1) compare layer types by the longest path a signal takes between two "
            "positions: O(1) for self-attention, O(n/r) for attention restricted to a window of radius r, O(n/k) for "
            "convolutions of kernel k, O(log_k(n)) for dilated ones, O(n) for a recurrent layer. Here each is built as "
            "a stack of random layers at your sentence's length n, and the count is read from the Jacobian: the first "
            "layer after which output n − 1 changes when input 0 does (one Jacobian-vector product per layer; a "
            "position a layer cannot read gives an exact zero). The weights are random: the count comes from which "
            "positions each layer can read, not from anything learned.")
if len(tokens) < 2:
    st.info("A path needs two tokens: type a longer sentence.")
else:
    m1, m2 = st.columns(2)
    widest = max(len(tokens) - 1, 2)
    radius = m1.slider("Window radius r", 1, widest, min(3, widest), key="path_radius")
    kernel = m2.slider("Kernel size k", 2, 8, 3, key="path_kernel")
    paths = EV.path_study(len(tokens), radius, kernel)
    path_rows = EV.path_table(paths, radius, kernel)
    st.dataframe(path_rows, key="path_table")
    grown = {name: (list(range(1, p.layers + 1)), p.reach) for name, p in zip(path_rows["layer type"], paths.values())}
    st.plotly_chart(figures.lines({}, points=grown, title="Outputs that depend on input 0, after each layer",
                                  x_title="layers (LSTM: steps)", y_title="outputs that depend on input 0", **plot),
                    key="path_reach")
    st.markdown(EV.path_reading(paths, radius, kernel))
    st.caption("The convolutions are causal: output t reads inputs t − k + 1 … t (the dilated one: every k^l-th "
               "input in layer l, as in WaveNet). An LSTM is one layer whose steps must run one after another; "
               "unrolled, it is a stack of steps. Here step s updates every position from the states step s − 1 left, "
               "and n steps give exactly the LSTM run left to right. Output n − 1 needs all n: the step that reads "
               "input 0, then n − 1 hops from one position to the next.")
