"""Layer outputs: the residual stream after every sublayer, FFN neurons, the logit lens and head ablation."""
import streamlit as st

from app import coverage_view, figures, layers_view
from app.inspect_view import translation_ablated
from app.shell import current_run, page_run
from app.text import md
from core.probes import layers

st.title("Layer outputs")
st.markdown("Each sublayer *adds* to a running vector per token, the **residual stream**: "
            "x ← x + Attention(x), then x ← x + FFN(x) (with a LayerNorm before or after, depending on the model).")
view, res = page_run()
model, tok = view.ck.model, view.ck.tokenizer
P = dict(present=view.present, dark=view.dark)
stacks = [s for s in ("encoder", "decoder") if f"{s}.embed.out" in res.trace]
stack = st.radio("Stack", stacks, horizontal=True) if len(stacks) > 1 else stacks[0]
toks = res.src_tokens if stack == "encoder" else res.tgt_tokens
stages = layers.residual_stages(res.trace, stack)
stage_names = [s for s, _ in stages]

st.header("1. The residual stream")
st.plotly_chart(figures.matrix(layers.stage_norms(stages), toks, stage_names, x_title="token", y_title="after", value_name="‖x‖",
                               title="Norm of each token's vector after every sublayer", **P), key="norms")
coords, share = layers.stream_pca(stages)
sel = st.select_slider("Stage shown in the PCA", options=range(len(stage_names)), value=len(stage_names) - 1,
                       format_func=lambda i: stage_names[i])
st.plotly_chart(figures.trajectories(coords, toks, stage_names, selected=sel, share=share,
                                     title=f"Token vectors after {stage_names[sel]}, 2 principal components", **P),
                key="pca")
st.caption("The components are fitted on all stages together; the faint lines are each token's path through them.")

st.header("2. What each sublayer adds")
c1, c2 = st.columns(2)
which = c1.selectbox("Token", [None] + list(range(len(toks))), format_func=lambda i: "mean over tokens" if i is None
                     else f"{i}: {toks[i]}")
relative = c2.toggle("Relative to the stream going in", value=True)
summary = layers.sublayer_summary(res.trace, stack, which, relative)
n_l = layers.n_layers(res.trace, stack)
st.plotly_chart(figures.grouped_bars(summary, [f"layer {i}" for i in range(n_l)], x_title="layer",
                                     y_title="‖added‖ / ‖stream‖" if relative
                                     else "‖added‖", title="Norm of attn_out, cross_out, ffn_out", **P), key="added")

st.header("3. FFN activations")
c1, c2 = st.columns(2)
if model.cfg.attention_only:
    st.info(f"{md(view.name)} is attention-only: its layers have no feed-forward sublayer, so there are no FFN "
            "neurons to show (ffn_out above is zero in every layer).")
else:
    fl = c1.selectbox("Layer", range(n_l), key="ffn_layer")
    act = res.trace[f"{stack}.{fl}.ffn.act"][0]
    k = c2.slider("Neurons shown (most active first)", 4, act.shape[-1], min(32, act.shape[-1]))
    idx, peak, cols, top_tok = layers.top_neurons(act, k)
    st.plotly_chart(figures.matrix(cols, [f"n{int(i)}" for i in idx], toks, x_title="neuron", y_title="token",
                                   value_name="activation", title=f"Layer {fl}: the {k} most active neurons "
                                   f"of {act.shape[-1]}", diverging=model.cfg.activation != "relu", **P),
                    key="ffn")
    st.caption("Strongest: " + ", ".join(f"n{int(i)} = {float(v):.2f} on “{md(toks[int(t)])}”"
                                         for i, v, t in zip(idx[:5], peak[:5], top_tok[:5])))

out_stack = layers.output_stack(model)
out_toks = res.src_tokens if out_stack == "encoder" else res.tgt_tokens
trained_head = layers.has_trained_head(view.ck)
if not trained_head:  # e.g. minilm: never show an untrained output head's guesses as the model's
    st.header("4. Sentence-embedding lens")
    st.info(f"{md(view.name)} ships without an output (masked-LM) head; the one our code attaches is random, so reading "
            "the stream through it would print noise, not what the model knows. Sections 4 and 6 read what "
            f"{md(view.name)} was trained for instead: its **sentence embedding** (the mean of the last layer's token "
            "vectors), compared by cosine similarity.")
    lens = layers.embedding_lens(res.trace, out_stack)
    st.plotly_chart(figures.lines({"cosine with the sentence embedding": lens["sentence_cos"]}, lens["stages"],
                                  x_title="after", y_title="cosine", **P,
                                  title="Mean-pooled stream after every sublayer vs the final sentence embedding"),
                    key="emb_lens")
    st.plotly_chart(figures.matrix(lens["token_cos"], out_toks, lens["stages"], zmin=-1, zmax=1,
                                   x_title="token", y_title="after", value_name="cosine", diverging=True, **P,
                                   title="Each token's vector vs its own final vector"), key="emb_tokens")
else:
    st.header("4. Logit lens")
    st.markdown(f"Read the {out_stack}'s stream after every sublayer as if it were the last one: final LayerNorm "
                f"({'yes' if getattr(model, out_stack).norm is not None else 'none in this model'}), then the output "
                "layer.")
    pos = st.selectbox("Position", range(len(out_toks)), index=len(out_toks) - 1,
                       format_func=lambda i: f"{i}: {out_toks[i]}")
    lens = layers.logit_lens(model, res.trace, pos, k=10)
    st.dataframe([{"after": r["stage"], **{f"#{j + 1}": f"{tok.display([int(i)])[0]}  {float(p):.3f}"
                                         for j, (i, p) in enumerate(zip(r["ids"][:5], r["probs"][:5]))},
                   "p(final choice)": r["p_final"]} for r in lens], hide_index=True)
    final = lens[-1]
    st.plotly_chart(figures.bars(final["probs"], tok.display(final["ids"].tolist()), y_title="probability",
                                 x_title="candidate token",
                                 highlight=0, title=f"Final distribution at position {pos} "
                                 f"(“{figures.label(out_toks[pos])}”)", **P), key="final")

layers_view.section(view, 5, **P)

st.header("6. Switch heads off")
n_heads = model.cfg.n_heads
options = [(a, h) for a in model.attention_names() for h in range(n_heads)]
chosen = st.multiselect("Heads to ablate (their output is multiplied by 0)", options, key="ablate",
                        format_func=lambda o: f"{o[0]} · head {o[1]}")
if not chosen:
    st.info("Pick one or more heads to compare the model with and without them.")
    st.stop()
ablated = current_run(view, ablate=tuple(sorted(chosen)))
if ablated is None:
    st.stop()
if not trained_head:
    change = layers.embedding_change(res.trace, ablated.trace, out_stack)
    st.metric("Cosine similarity of the sentence embeddings, all heads vs heads off", f"{change['sentence_cos']:.4f}")
    st.plotly_chart(figures.bars(change["token_cos"], out_toks, x_title="token", y_title="cosine", title="Each token's final vector, "
                                 f"all heads vs {len(chosen)} head(s) off", **P), key="emb_ablation")
    st.stop()
cmp = layers.compare_distributions(res.trace.logits[0, pos], ablated.trace.logits[0, pos])
c1, c2, c3 = st.columns(3)
c1.metric("Top token, all heads", md(tok.display([cmp["top_a"]])[0]))  # a metric's value is Markdown
c2.metric("Top token, heads off", md(tok.display([cmp["top_b"]])[0]))
c3.metric("Total variation distance", f"{cmp['tv']:.3g}")
if model.cfg.kind == "encoder-decoder":
    coverage_view.output("Translation, all heads", res.output, res.outside_label)
    coverage_view.output("Translation with these heads off (greedy, re-decoded)",
                         translation_ablated(view.name, tuple(res.src_ids), tuple(sorted(chosen))), res.outside_label)
elif model.cfg.kind == "decoder-only":
    coverage_view.output("Next token, all heads", res.output, res.outside_label)
    coverage_view.output("Next token, heads off", ablated.output, res.outside_label)
st.plotly_chart(figures.grouped_bars({"all heads": cmp["a"], "heads off": cmp["b"]}, tok.display(cmp["ids"]),
                                     x_title="candidate token", y_title="probability", title=f"Position {pos}: probabilities with and without "
                                     f"{len(chosen)} head(s)", **P), key="ablation")
