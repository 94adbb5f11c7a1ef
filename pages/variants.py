"""Head importance & pruning, multi-query / grouped-query attention savings, speculative decoding."""
import streamlit as st

from app import coverage_view, figures
from app import variants_view as V
from app.shell import PRESETS, load_model, page_view, text_box
from app.text import md

st.title("Heads, GQA & speculative decoding")
view = page_view()
plot = dict(present=view.present, dark=view.dark)
cfg = view.ck.model.cfg

st.header("Which heads matter? Importance and pruning")
st.markdown("Michel et al. (2019): switch one head off (its output × 0) and measure how much worse the model does on "
            "held-out data — here by the drop of its **margin**, log p(reference token) − log p(best other token), "
            "which keeps moving where the loss is already ≈ 0. Then remove heads least-important-first and watch "
            "quality fall (Voita et al. 2019).")
try:
    imp_data, complete = V.importance_shown(view.name)
except ValueError as e:
    imp_data = None
    st.info(f"No held-out data for this model, so no importance ranking: {md(e)}")
if imp_data is not None:
    shipped = V.source(view.name)
    st.caption(f"Read from {shipped} (this model's weights; the same for every visitor)." if shipped else
               "Computed on this server for this model (no precomputed summary ships with it); cached afterwards.")
    imp, curve = imp_data["imp"], imp_data["curve"]
    st.caption(f"Evaluation: {imp_data['n']} held-out {imp_data['unit']}; with every head on: margin "
               f"{imp.base_margin:.2f} nats, loss {imp.base_loss:.4f} (token accuracy {imp.base_acc:.1%}). The loss "
               f"increase of one head off is at most {float(imp.delta.max()):.4f}. Each cell below: how much the "
               "reference token's log-probability margin drops when that head alone is switched off.")
    st.plotly_chart(figures.matrix(imp.margin_drop, [f"H{h}" for h in range(cfg.n_heads)], imp.names, diverging=True,
                                   title="Margin drop with this head alone switched off", x_title="head",
                                   y_title="attention",
                                   value_name="Δ margin", show_values=True, **plot), key="imp_heatmap")
    top = imp.ranking[:5]
    st.markdown("Most important: " + ", ".join(f"**{n} H{h}** ({d:+.3f} nats)" for n, h, d in top))
    kept = [p.kept for p in curve]
    series = {"loss": [p.loss for p in curve]}
    fig = figures.lines(series, kept, title="Pruning curve: loss vs heads kept",
                        x_title="heads kept", y_title="cross-entropy", **plot)
    fig.update_xaxes(autorange="reversed")
    st.plotly_chart(fig, key="prune_loss")
    quality = {"token accuracy": [p.acc for p in curve]}
    pts = [p for p in curve if p.metrics]
    if pts:
        quality = {"token accuracy": [p.acc for p in pts], "exact match (greedy)": [p.metrics["exact_match"] for p in pts],
                   "pronoun accuracy": [p.metrics["pronoun_accuracy"] for p in pts]}
        kept = [p.kept for p in pts]
    fig = figures.lines(quality, kept, title="Pruning curve: quality vs heads kept", x_title="heads kept",
                        y_title="accuracy", **plot)
    fig.update_xaxes(autorange="reversed")
    st.plotly_chart(fig, key="prune_quality")
    st.caption("Heads are removed least important first (by the margin drop above).")
    with st.expander("Removal order and every point"):
        st.dataframe([{"heads kept": p.kept, "last removed": "—" if not p.removed else f"{p.removed[-1][0]} H{p.removed[-1][1]}",
                       "loss": round(p.loss, 4), "token accuracy": round(p.acc, 4), **p.metrics} for p in curve],
                     key="prune_table")

st.header("Pruning weights by magnitude")
st.markdown("Whole heads are one way to make a model smaller; single weights are another. Gordon et al. (2020) "
            "found that 30 % of BERT's weights can be pruned by their magnitude without a significant loss. Here "
            "the weight matrices of every attention and feed-forward layer are ranked together by |w|, and the "
            "smallest are set to 0 — no retraining. Embeddings, the output layer, norms and biases stay whole.")
try:
    sparse, _done = V.sparsity_shown(view.name)
except ValueError as e:
    sparse = None
    st.info(f"No held-out data for this model, so no pruning curve: {md(e)}")
if sparse:
    levels = [round(100 * p.sparsity) for p in sparse]
    quality = {"token accuracy": [p.acc for p in sparse]}
    for key, label in (("exact_match", "exact match (greedy)"), ("pronoun_accuracy", "pronoun accuracy")):
        if all(key in p.metrics for p in sparse):
            quality[label] = [p.metrics[key] for p in sparse]
    a, b = st.columns(2)
    a.plotly_chart(figures.lines({"loss": [p.loss for p in sparse]}, levels, title="Held-out loss vs weights pruned",
                                 x_title="weights pruned (%)", y_title="cross-entropy", **plot), key="wprune_loss")
    b.plotly_chart(figures.lines(quality, levels, title="Quality vs weights pruned", x_title="weights pruned (%)",
                                 y_title="accuracy", **plot), key="wprune_quality")
    st.markdown(V.sparsity_reading(sparse))
    pick = st.select_slider("Sparsity for the table and the map below (%)", levels, value=50, key="wprune_level")
    rows, cols, share = V.share_table(view.name, pick / 100)
    st.plotly_chart(figures.matrix(share, cols, rows, title=f"Share of each matrix pruned at {pick} %",
                                   x_title="matrix", y_title="layer", value_name="share pruned", show_values=True,
                                   zmin=0, zmax=1, **plot), key="wprune_share")
    st.caption("One ranking for all matrices, so a matrix of small weights loses more than its share. NaN: a layer "
               "without that matrix (an encoder layer has no cross-attention).")
    read = st.toggle("Read your text at every level", False, key="wprune_read",
                     help="prunes the model ten times and runs it on your text each time: a second or more")
    try:
        outputs = V.read_pruned(view.name, view.text) if read else None
    except ValueError as e:
        st.info(f"Your sentence with the pruned weights: {md(e)}")
    else:
        if outputs is None:
            st.caption("Switch on “Read your text at every level” to see what the pruned models make of your text.")
            outputs = []
        if outputs:
            st.table([{"weights pruned": f"{lv} %",
                       "what the model makes of your text": md(out) if out else "(nothing: it ends at once)"}
                      for lv, out in zip(levels, outputs)])

st.header("Multi-query and grouped-query attention")
st.markdown(r"GQA (Ainslie et al. 2023) lets $h/g$ query heads share one key/value head; MQA (Shazeer 2019) is "
            r"$g = 1$. Per attention module $W_{QKV}$ shrinks from $3hd_h$ to $(h+2g)d_h$ columns, and the KV cache "
            r"per generated token is $L_{dec}\cdot 2\cdot g\cdot d_h$ numbers instead of $L_{dec}\cdot 2d$.")
st.dataframe(V.gqa_table(cfg), key="gqa_table")
st.caption("Formulas in core.probes.heads.kv_savings; tested against Transformer(cfg).num_parameters() and the real "
           "core.inference.decoding.Incremental caches. Cross-attention keys/values are cached once per source token.")
if cfg.kv_heads == cfg.n_heads and cfg.n_heads > 1:
    options = [g for g in dict.fromkeys([max(1, cfg.n_heads // 2), 1]) if cfg.n_heads % g == 0]
    g = st.radio("Convert this model to n_kv_heads =", options, horizontal=True, key="gqa_g",
                 format_func=lambda x: f"{x} ({'MQA' if x == 1 else 'GQA'})")
    st.caption("The checkpoint's key and value heads are mean-pooled within each group (Ainslie et al.'s conversion, "
               "without their uptraining): a tiny GQA model whose query heads are the originals.")
else:
    g = cfg.kv_heads
try:
    gres = V.gqa_run(view.name, g, view.text, view.tgt)
except ValueError as e:
    gres = None
    st.info(md(e))
if gres is not None:
    coverage_view.notices(gres.notices)
    kind = "encoder" if "encoder" in gres.trace.kinds() else "decoder"
    layer = st.selectbox("Layer", range(gres.trace.n_layers(kind)), key="gqa_layer")
    weights = gres.trace.attention(kind, layer)[0]
    toks = gres.tokens(kind)
    per = cfg.n_heads // g
    st.plotly_chart(figures.grid(weights[None], *toks, title=f"Layer {layer}: every query head and its K/V head",
                                 head_labels=[f"H{h} · K/V {h // per}" for h in range(cfg.n_heads)], **plot),
                    key="gqa_maps")
    st.caption(f"{kind.title()} self-attention, layer {layer}: heads with the same K/V head read the same keys "
               "and values but keep their own queries, so their maps still differ.")
    try:
        loss, acc = V.gqa_loss(view.name, g)
        if imp_data is not None:
            before = imp_data["imp"]
            st.markdown(f"Held-out loss after conversion: **{loss:.4f}** (MHA: {before.base_loss:.4f}); "
                        f"token accuracy {acc:.1%} (MHA: {before.base_acc:.1%}).")
    except ValueError:
        pass

st.header("Speculative decoding")
name = view.name if view.kind == "decoder-only" else "lm"
st.markdown("A draft proposes k tokens; the target checks all of them in **one** forward pass and keeps the longest "
            "prefix it accepts, plus one token of its own (Leviathan et al. 2023; greedy or sampled verification "
            "below). "
            f"Target: **{md(name)}**. Draft: the same model cut to its first decoder layer (self-speculative: shared "
            "embeddings, first layer, final norm and head; no training).")
try:
    ck = load_model(name)
except (ValueError, OSError) as e:
    st.info(f"Speculative decoding needs a decoder-only model ('lm'): {md(e)}")
    st.stop()
c1, c2 = st.columns(2)
k = c1.select_slider("Draft tokens per step k", [1, 2, 3, 4, 6, 8], value=4, key="spec_k")
max_new = c2.slider("Tokens to generate", 4, 64, 32, key="spec_new")
if view.kind == "decoder-only":
    text = view.text
else:  # the shared sentence is one to translate, which a language model would simply end
    text = text_box(f"Prompt for {md(name)} (the sentence above is for {md(view.name)})",
                    PRESETS[name][1] if name in PRESETS else PRESETS["lm"][1], key="spec_prompt")
if not text.strip():  # an empty page sentence (a decoder-only model) or prompt box: nothing to continue
    st.info("Type a prompt first: speculative decoding continues a text.")
    st.stop()
same_text = view.kind == "decoder-only"  # the page's own sentence: its notices are already at the top
mode = st.radio("Verification", ["Greedy", "Sampling"], horizontal=True, key="spec_mode",
                help="Greedy: keep the proposals equal to the target's own argmax. Sampling: draw the proposals and "
                     "keep each with probability min(1, p/q).")
if mode == "Sampling":  # speculative sampling; the greedy panel below (and its timing) is the other mode's
    c3, c4 = st.columns(2)
    temperature = c3.slider("Temperature T", 0.1, 2.0, 1.0, step=0.1, key="spec_temp")
    seed = c4.number_input("Seed", min_value=0, max_value=999_999, value=0, step=1, key="spec_seed")
    st.markdown(r"Sampling at temperature $T$: the draft **draws** each proposal $\tilde x \sim q$; the target "
                r"computes $p$ at all of them in one pass and keeps $\tilde x$ with probability "
                r"$\min(1, p(\tilde x)/q(\tilde x))$. The first rejected proposal is replaced by a draw from "
                r"$\mathrm{norm}(\max(0, p - q))$; when all are kept, a bonus token is drawn from $p$. Each token is "
                "then distributed exactly as the target's own sampling at $T$, whatever the draft (Leviathan et al. "
                "2023; Chen et al. 2023).")
    samp = V.speculative_sampled(name, text, int(k), int(max_new), float(temperature), int(seed))
    coverage_view.notices(([] if same_text else samp["notices"]) + [w for w in [samp["window"]] if w])
    coverage_view.output("Prompt", text)
    if not samp["ids"]:
        st.info(f"Nothing was generated: {md(samp['why_empty'])}.")
    else:
        greedy_rate = V.speculative(name, text, int(k), int(max_new))["rate"]
        a, b, c = st.columns(3)
        a.metric("Tokens generated", len(samp["ids"]))
        b.metric("Target passes", samp["target_passes"], delta=samp["target_passes"] - samp["plain_passes"],
                 delta_color="inverse", help=f"Plain sampling: {samp['plain_passes']} passes, one per token "
                                             "(and one for the end of text when it stops before the limit).")
        c.metric("Proposals kept", f"{samp['rate']:.0%}", help=f"{samp['accepted']} of {samp['proposed']} proposals; "
                 f"greedy verification keeps {greedy_rate:.0%} on this prompt.")
        coverage_view.output("Continuation", samp["text"], samp["outside"])
        st.plotly_chart(figures.grouped_bars({"proposed": [len(s["proposed"]) for s in samp["steps"]],
                                              "kept": [s["accepted"] for s in samp["steps"]]},
                                             [f"step {i + 1}" for i in range(len(samp["steps"]))],
                                             x_title="target pass", y_title="tokens",
                                             title="Per target pass: proposals drawn and kept", **plot),
                        key="spec_sample_bars")
        for i, s in enumerate(samp["steps"]):
            st.markdown(f"**{i + 1}.** " + V.sample_step_html(s), unsafe_allow_html=True)  # md: trusted (escaped)
        st.caption("Each proposal with its min(1, p/q): green kept (its uniform draw u fell below), red rejected, "
                   "grey never checked (after a rejection); boxed: the target's token, drawn from the residual "
                   "norm(max(0, p − q)) after a rejection or from p as a bonus when all were kept.")
        with st.expander("Every proposal: q, p, min(1, p/q) and the uniform draw u"):
            st.dataframe(samp["rows"], key="spec_sample_table")
    st.subheader("Is the output still the target's?")
    try:
        chk = V.first_token_check(name, text, float(temperature), int(seed))
    except ValueError as e:
        st.info(md(e))
        st.stop()
    n = chk["n"]
    st.plotly_chart(figures.grouped_bars({"target p (exact)": chk["p"], f"target sampling ×{n}": chk["plain"],
                                          f"speculative ×{n}": chk["spec"]}, chk["tokens"],
                                         title=f"First token: {n} draws each way", x_title="first generated token",
                                         y_title="share of draws", **plot), key="spec_dist")
    st.markdown(f"Total variation between the two histograms: **{chk['tv_spec_plain']:.3f}** (from the exact p: "
                f"speculative {chk['tv_spec_p']:.3f}, plain {chk['tv_plain_p']:.3f}). Two plain samples of "
                f"{n} are {chk['tv_plain_plain']:.3f} apart by chance alone, while {n} draws from the draft alone "
                f"(nothing checked) are {chk['tv_draft_p']:.3f} from p (its exact q: {chk['tv_q_p']:.3f}). "
                f"{chk['accepted']} of the {n} speculative first "
                "tokens were the draft's proposal kept, the others drawn from the residual; computed from p and q "
                f"themselves, the procedure's distribution is p to within {chk['tv_exact']:.0e}.")
    st.caption(f"Computed now from {md(name)} and its draft on this prompt at T = {temperature:.1f}: run i makes "
               f"exactly the draws of speculative_sample(…, max_new=1, seed={int(seed)} + i); plain sampling draws "
               "from softmax(logits / T) as generate(method=\"sample\") does.")
    st.stop()
st.markdown("Greedy verification: a proposal is kept while it equals the target's own most probable token (its "
            "argmax) at that position; at the first that differs, the target's argmax is written instead, and when "
            "all k match, the target adds its next argmax as a bonus. The output is exactly the target's greedy "
            "decoding, in fewer target passes.")
spec = V.speculative(name, text, int(k), int(max_new))
coverage_view.notices([w for w in [spec["window"]] if w])
if not spec["ids"]:
    coverage_view.output("Prompt", text)  # the prompt read, whole, as text, whatever the model made of it
    st.info(f"Nothing was generated: {md(spec['why_empty'])}. Change the sentence; acceptance and "
            "speed-up mean nothing for zero tokens.")
    st.button("Time greedy vs speculative", key="spec_time", disabled=True, help="Nothing to time: no token generated.")
    st.stop()
a, b, c = st.columns(3)
a.metric("Tokens generated", len(spec["ids"]))
b.metric("Target passes", spec["target_passes"], delta=spec["target_passes"] - spec["greedy_passes"],
         delta_color="inverse", help=f"Plain greedy: {spec['greedy_passes']} passes, one per token.")
c.metric("Draft tokens accepted", f"{spec['rate']:.0%}", help=f"{spec['accepted']} of {spec['proposed']} proposals")
if spec["ids"] == spec["greedy"]:
    st.success("Output identical to the target's greedy decoding ✓")
else:
    st.error("Output differs from greedy decoding")
coverage_view.notices([] if same_text else spec["notices"])
coverage_view.output("Prompt", text)
coverage_view.output("Continuation", spec["text"], spec["outside"])
st.plotly_chart(figures.grouped_bars({"proposed": [len(s["proposed"]) for s in spec["steps"]],
                                      "accepted": [s["accepted"] for s in spec["steps"]]},
                                     [f"step {i + 1}" for i in range(len(spec["steps"]))], x_title="target pass",
                                     title="Per target pass: draft tokens proposed and accepted", y_title="tokens",
                                     **plot), key="spec_bars")
for i, s in enumerate(spec["steps"]):
    st.markdown(f"**{i + 1}.** " + V.step_html(s), unsafe_allow_html=True)  # md: trusted (step_html escapes every token with md)
st.caption("Green: accepted draft tokens; red: rejected; boxed: the target's own token (the correction, "
           "or a bonus token when every proposal was accepted).")
if st.button("Time greedy vs speculative (A B A B, median of 5)", key="spec_time"):
    t = V.timing(name, text, int(k), int(max_new))
    (g0, g1), (s0, s1) = t["greedy_range"], t["speculative_range"]
    st.markdown(f"Medians of {t['repeats']} runs: greedy {t['greedy_s'] * 1e3:.1f} ms (range {g0 * 1e3:.1f}–"
                f"{g1 * 1e3:.1f}), speculative {t['speculative_s'] * 1e3:.1f} ms (range {s0 * 1e3:.1f}–{s1 * 1e3:.1f}): "
                f"speed-up **×{t['speedup']:.2f}** ({t['threads']} CPU threads; a busy machine widens the ranges).")
