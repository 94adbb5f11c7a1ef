"""Positional encoding: the sinusoidal table and its geometry, other schemes, the live sentence's embeddings, the
variants of the formula that the seeds write, and five small LMs read past their training length."""
import streamlit as st

from app import figures, positional_view
from app.inspect_view import permutation, positional_kinds, shifted
from app.shell import page_run
from app.text import code, md
from core.probes import positions
from core.masks import alibi_slopes
from core.positional import sinusoidal

st.title("Positional encoding")
st.latex(r"PE_{(pos,2i)}=\sin\!\left(pos/N^{2i/d_{model}}\right)\qquad PE_{(pos,2i+1)}=\cos\!\left(pos/N^{2i/d_{model}}\right)"
         r"\qquad\text{(Vaswani et al. 2017, sec. 3.5)}")
view, res = page_run()
model, cfg = view.ck.model, view.ck.model.cfg
P = dict(present=view.present, dark=view.dark)

st.header("1. The sinusoidal table")
c1, c2, c3 = st.columns(3)
d_model = c1.slider("d_model", 8, 512, min(512, cfg.d_model - cfg.d_model % 8) or 64, step=8, key="pe_d")
n_pos = c2.slider("Number of positions", 8, 256, 64, key="pe_n")
base = c3.select_slider("Base N", [10, 100, 1000, 10000, 100000, 1000000], value=10000, key="pe_base")
pe = sinusoidal(n_pos, d_model, float(base))
st.plotly_chart(figures.matrix(pe, x_title="dimension", y_title="position", value_name="PE", diverging=True,
                               title=f"PE for {n_pos} positions × {d_model} dimensions, N = {base}", **P), key="pe_table")
dims = st.multiselect("Dimensions to follow over position", range(d_model), key=f"pe_dims_{d_model}",
                      default=[0, 1, d_model // 4, d_model // 2])
st.plotly_chart(figures.lines({f"dimension {i}": pe[:, i] for i in dims}, title="Low dimensions turn fast, high ones slowly",
                              x_title="position", y_title="PE", **P), key="pe_curves")
positional_view.binary_counter(d_model, base, **P)

st.header("2. Similarity depends on the offset only")
metric = st.radio("Similarity", ["dot", "cosine"], horizontal=True, format_func={"dot": "dot product", "cosine": "cosine"}.get)
sim = positions.position_similarity(pe, metric)
st.plotly_chart(figures.matrix(sim, x_title="position", y_title="position", value_name=metric,
                               title=f"PE(i)·PE(j) ({metric})", **P), key="pe_sim")
starts = [0, n_pos // 4, n_pos // 2]
st.plotly_chart(figures.lines({f"from position {m}": v for m, v in positions.by_offset(sim, starts).items()},
                              title="The same curve from every starting position", x_title="offset j − i",
                              y_title=metric, **P), key="pe_offset")
st.caption(f"Largest difference between two pairs (i, j) with the same offset j − i: {positions.offset_spread(sim):.2e} "
           "(float32 rounding): PE(i)·PE(j) = Σ cos((i − j)·ωₖ).")

st.header("3. Shifting is a rotation: PE(pos + k) = R_k · PE(pos)")
c1, c2 = st.columns(2)
k = c1.slider("Shift k", 0, n_pos // 2, 3, key="pe_k")
pos = c2.slider("Position pos", 0, n_pos - 1 - k, 0, key="pe_pos")
sc = positions.shift_check(n_pos, d_model, k, float(base))
st.plotly_chart(figures.lines({"PE(pos + k), from the table": sc["direct"][pos], "R_k · PE(pos), rotated": sc["rotated"][pos]},
                              title=f"Position {pos + k}, two ways", x_title="dimension", y_title="value", **P), key="pe_shift")
st.metric("Largest |R_k·PE(pos) − PE(pos+k)| over every position and dimension", f"{sc['max_error']:.2e}")
with st.expander("The rotation matrix R_k (block-diagonal 2×2 rotations)"):
    st.plotly_chart(figures.matrix(sc["matrix"], x_title="dimension", y_title="dimension", value_name="R_k",
                                   title=f"R_k for k = {k}", diverging=True, **P), key="pe_rot")

st.header("4. Other ways to encode position")
st.caption(f"The current model, {md(view.name)}, uses **{cfg.pos_encoding}** positions.")
t_learned, t_rope, t_alibi = st.tabs(["Learned", "RoPE", "ALiBi"])
with t_learned:
    if cfg.pos_encoding == "learned":
        full = model.embed.position_table().detach()
        n_show = st.slider("Positions shown", 8, len(full), min(128, len(full)), key="learned_n",
                           help=f"{md(view.name)} learned {len(full)} position vectors; the first 128 are drawn to begin with "
                                f"(a {len(full)} × {len(full)} similarity map takes seconds to draw).")
        table = full[:n_show]
        st.plotly_chart(figures.matrix(table, x_title="dimension", y_title="position", value_name="weight", diverging=True,
                                       title=f"Learned position vectors of {view.name}, positions 0–{n_show - 1} of "
                                             f"{len(full)}", **P), key="learned")
        lsim = positions.position_similarity(table, "cosine")
        st.plotly_chart(figures.matrix(lsim, x_title="position", y_title="position", value_name="cosine",
                                       title="Cosine similarity of the learned position vectors", **P), key="learned_sim")
        st.caption(f"Spread at equal offsets: {positions.offset_spread(lsim):.3f} — learned vectors need not depend on the offset only.")
    else:
        learned = [n for n, kind in positional_kinds().items() if kind == "learned"]
        st.info("This model has no learned position table. " + (f"Bundled models with learned positions: {', '.join(learned)}."
                if learned else "None of the bundled models uses learned positions."))
with t_rope:
    st.markdown("RoPE rotates q and k by their positions instead of adding a vector: q·k then depends on m − n only. "
                "Below, on random q and k; under the tabs, on your sentence and a whole model (" +
                (f"{md(view.name)} uses RoPE)." if cfg.pos_encoding == "rope" else "pick `lm`, which uses RoPE)."))
    rs = positions.rope_scores(max(2, cfg.d_head - cfg.d_head % 2), n_pos, float(base), seed=st.number_input("Random q, k seed", 0, 999, 0))
    c1, c2 = st.columns(2)
    c1.plotly_chart(figures.matrix(rs, x_title="key position n", y_title="query position m", value_name="q·k", diverging=True,
                                   title="RoPE(q, m) · RoPE(k, n)", **P), key="rope")
    c2.plotly_chart(figures.lines({f"m = {m}": v for m, v in positions.by_offset(rs, starts).items()}, x_title="offset n − m",
                                  y_title="q·k", title="Same offset, same score", **P), key="rope_offset")
    st.caption(f"Largest difference at equal offsets: {positions.offset_spread(rs):.2e}")
with t_alibi:
    toks = res.src_tokens if "encoder.embed.out" in res.trace else res.tgt_tokens
    slopes = alibi_slopes(cfg.n_heads)
    st.plotly_chart(figures.bars(slopes, [f"head {h}" for h in range(cfg.n_heads)], title="ALiBi slope per head",
                                 x_title="head", y_title="slope", **P), key="alibi_slopes")
    h = st.selectbox("Head", range(cfg.n_heads), key="alibi_head")
    bias = positions.alibi_matrix(cfg.n_heads, len(toks), h, causal=cfg.kind == "decoder-only")
    st.plotly_chart(figures.matrix(bias, toks, toks, x_title="key", y_title="query", value_name="bias", show_values=len(toks) <= 20,
                                   title=f"Bias −slope·|i − j| added to the scores, head {h}", **P), key="alibi_bias")
    drift = positions.offset_spread(bias.nan_to_num(neginf=-1e9))  # masked diagonals are masked all along
    st.caption("ALiBi is one case of *relative* position encodings: softmax(QKᵀ/√d_k + B)V with B a Toeplitz "
               f"matrix, B[i, j] depending on i − j only. Here two entries with the same i − j differ by at most {drift:.1e}. "
               "Transformer-XL learns such a bias per head (the Transformer-XL page).")
    positional_view.alibi_sign(cfg.n_heads, len(toks), h)

st.subheader("Absolute or relative? Your sentence, read from a later position")
room = model.max_positions - len(res.src_ids)
kinds = positional_kinds()
ADDED = ("learned", "sinusoidal")  # a vector added to each token; the others act inside attention, or are absent
others = ", ".join(f"{n} ({k})" for n, k in kinds.items()
                   if (k in ADDED) != (cfg.pos_encoding in ADDED) and n in ("lm", "lm-tiny", "mlm", "en-fr"))
if cfg.pos_encoding == "alibi" or cfg.window is not None:
    st.info("This model adds ALiBi's −slope·|i − j| or a window to its scores: relative by construction, so the test "
            "below is for models with added or rotary positions" + (f" (bundled: {others})." if others else "."))
elif room < 1:
    st.info(f"This sentence already fills the model's {model.max_positions} positions; shorten it to move it later.")
else:
    shift = st.slider("Read the sentence from position", 1, room, min(room, 20), key="pe_shift_start",
                      help="The same tokens, with positions shift, shift + 1, … instead of 0, 1, …")
    sh = shifted(view.name, tuple(res.src_ids), int(shift))
    same = max(sh["weights"]) < 1e-4
    st.markdown(f"**{md(view.name)}** ({cfg.pos_encoding} positions) read the sentence twice with its "
                f"{sh['stack']}: from position 0 and from position {shift}. " +
                ("Its attention is **the same** both times, up to float rounding: " +
                 ("it has no positions at all (only a decoder's causal mask orders it)." if cfg.pos_encoding == "none"
                  else "it sees how far apart two tokens are, never where they are.") if same else
                 "Its attention **changed**: a position vector is added to each token, so the model could learn to "
                 "use where a word is, not only how far apart two words are."))
    st.dataframe([{"layer": i, "largest |Δ weight|": w, "largest |Δ score|": sc}
                  for i, (w, sc) in enumerate(zip(sh["weights"], sh["scores"]))], hide_index=True, width="stretch")
    told = f"The {sh['stack']}'s output moved by up to {sh['output']:.1e} of its largest value"
    if "log_probs" in sh:
        first, later = sh["top"]
        changed = sum(a != b for a, b in zip(first, later))
        told += (f"; the predicted token changed at {changed} of {len(first)} positions (largest change of a "
                 f"log-probability: {sh['log_probs']:.1e})")
    st.caption(told + "." + (f" Compare a model of the other kind in the sidebar: {others}." if others else ""))

st.header("5. Your sentence: token + position = input")
stacks = [s for s in ("encoder", "decoder") if f"{s}.embed.out" in res.trace]
stack = st.radio("Stack", stacks, horizontal=True) if len(stacks) > 1 else stacks[0]
toks = res.src_tokens if stack == "encoder" else res.tgt_tokens
parts = positions.embedding_parts(res.trace, stack)
shown = {"token embedding (×√d)": parts["tokens"], "positional term": parts["positions"], "sum (layer input)": parts["sum"]}
tabs = st.tabs(list(shown))
for tab, (title, m) in zip(tabs, shown.items()):
    with tab:
        if m is None:
            st.info(f"{cfg.pos_encoding}: nothing is added to the embeddings; position enters inside attention.")
        else:
            st.plotly_chart(figures.matrix(m, None, toks, x_title="dimension", y_title="token", value_name="value",
                                           diverging=True, title=title, **P), key=f"emb_{title}")
norms = {k: v for k, v in parts["norms"].items() if v is not None}
st.plotly_chart(figures.grouped_bars(norms, toks, title="Vector norms per token", x_title="token",
                                     y_title="‖·‖", **P), key="emb_norms")
if parts["other"] > 1e-5:
    st.caption(f"The sum also includes token types or an embedding LayerNorm (differs from token + position by {parts['other']:.3f}).")

st.header("6. Without positions, attention cannot see order")
seed = st.number_input("Shuffle seed", 0, 9999, 0)
pt = permutation(view.name, tuple(res.src_ids), int(seed))
src_toks = res.src_tokens
st.markdown("Shuffled sentence: " + " ".join(code(src_toks[i]) for i in pt["perm"]))
c1, c2 = st.columns(2)
c1.metric("Without positional terms: max |layer(shuffled) − shuffled(layer)|", f"{pt['without']['max_diff']:.2e}")
c2.metric("With the model's positional terms", f"{pt['with']['max_diff']:.2e}")
st.plotly_chart(figures.grouped_bars({"without positions": pt["without"]["per_token"], "with positions": pt["with"]["per_token"]},
                                     [src_toks[i] for i in pt["perm"]], x_title="token (shuffled order)",
                                     y_title="‖difference‖", **P,
                                     title=f"{pt['stack'].capitalize()} layer 0: shuffled vs original order"), key="perm")
st.caption("Each bar: ‖a shuffled token's output − its twin's output in the original order‖. Positional terms of this model: " + ("; ".join(pt["terms"]) or "none — so the two runs are the same") +
           ". Without them the layer's outputs are the same vectors, just permuted (differences are float rounding).")

positional_view.formula_variants(7, d_model, n_pos, base, k, **P)
positional_view.extrapolation_section(8, **P)
