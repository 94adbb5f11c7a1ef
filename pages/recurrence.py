"""Transformer-XL segment recurrence on the live sentence, post-LN vs pre-LN training stability, and recurrence vs
attention (an LSTM, the same with attention, a Transformer) on symbols the user types; last, counting and nesting
(PARITY and balanced brackets) by length, a causal Transformer against an LSTM."""
import json
import os
from pathlib import Path

import streamlit as st

from app import choices_view, coverage_view, figures, recurrence_view
from app.shell import sentence_box, text_box
from app.text import code, md
from core.inference import coverage
from core.training import stability
from core.variants import recurrence, xl
from core.io import jsonio
from core.io.tokenizer import BOS, UNK

ROOT = Path(__file__).resolve().parents[1]
XL_DIR = Path(os.environ.get("ATTENTION_XL_MODEL", ROOT / "assets" / "models" / "xl"))
CURVES = Path(os.environ.get("ATTENTION_STABILITY_JSON", ROOT / "assets" / "stability" / "curves.json"))
FALLBACK = "The dog saw a sheep in the path. It chased the sheep across the path."


@st.cache_resource(show_spinner="Loading the Transformer-XL model…")
def load_xl(path: str):
    return xl.load(path)


@st.cache_data(show_spinner="Replacing one token at a time…", max_entries=32)
def xl_reach(path: str, stream: tuple) -> dict:
    return xl.context_reach(load_xl(path)[0], list(stream), UNK)


@st.cache_resource(show_spinner="Loading the recurrence models…", max_entries=2)
def load_recurrence(folder: str, config: str, date: str):
    """The trained models beside the results of the run of ``date`` (a new run is loaded anew)."""
    return recurrence.load_models(folder, recurrence.config_of(json.loads(config)))


view = st.session_state.get("view")
plot = dict(present=bool(view and view.present), dark=bool(view and view.dark))
st.title("Transformer-XL & training stability")
if view is not None:
    sentence_box(view)  # the XL model reads the shared sentence

st.header("Segment recurrence (Transformer-XL)")
st.markdown("Dai et al. (2019): a language model reads a long text in segments. Each layer keeps its hidden "
            "states of the previous segment as extra keys and values — the **memory**, with no gradient through "
            "it — and positions are *relative* (here a learned per-head bias on the distance i − j, started "
            "as ALiBi), so the cached states stay valid at new offsets.")
if not (XL_DIR / "config.json").exists():
    st.info(f"No Transformer-XL model at {XL_DIR}. Train one with `python -m core.variants.xl --out assets/models/xl`.")
else:
    model, tok, meta = load_xl(str(XL_DIR))
    text = (view.text if view else "") or FALLBACK
    ids = [BOS] + tok.encode(text)
    if len(ids) < 6:
        st.caption("Your sentence is very short; showing a generated text instead.")
        ids = [BOS] + tok.encode(FALLBACK)
    else:  # the user's own text is read: one in French or German is named, as on the other pages
        foreign = coverage.foreign_notice(text, "this Transformer-XL reads English (it was trained on generated "
                                                "English sentences)")
        coverage_view.notices([foreign] if foreign else [])
    ids = ids[:48]
    tokens = tok.display(ids)
    c1, c2 = st.columns(2)
    split = c1.slider("Segment boundary (first token of the current segment)", 1, len(ids) - 1, len(ids) // 2,
                      key="xl_split")
    head = c2.selectbox("Head", range(model.cfg.n_heads), key="xl_head")
    weights, n_mem = xl.two_segment_attention(model, ids, split)
    layer = len(weights) - 1
    mem_tokens = tokens[:split][-n_mem:] if n_mem else []
    keys = [f"{t} (mem)" for t in mem_tokens] + tokens[split:]
    fig = figures.heatmap(weights[layer][head], tokens[split:], keys,
                          title=f"Last layer (L{layer}) head {head}: current segment over [memory; current]", **plot)
    if n_mem:
        fig.add_vrect(x0=-0.5, x1=n_mem - 0.5, fillcolor="orange", opacity=0.15, line_width=0,
                      annotation_text="memory (previous segment, no gradient)", annotation_position="bottom left")
    st.plotly_chart(fig, key="xl_attention")
    share = xl.memory_share(weights[layer][head], n_mem)
    st.plotly_chart(figures.bars(share, tokens[split:], title="Share of each query's attention that reaches into "
                                 "the memory", x_title="query token", y_title="attention mass on memory", **plot), key="xl_mem_share")
    st.subheader("How far back does the memory reach?")
    stream = (ids * (1 + 5 * model.cfg.seg_len // len(ids)))[:5 * model.cfg.seg_len]
    reach = xl_reach(str(XL_DIR), tuple(stream))
    effect, last, bound = reach["effect"], reach["last_start"], reach["bound"]
    st.markdown(f"Your text, repeated to fill {reach['segments']} segments of {model.cfg.seg_len} tokens, read "
                "segment after segment with the memory; then again with one earlier token replaced by [UNK] at a "
                "time. Each bar: how much that one token changes the last segment's predictions.")
    st.plotly_chart(figures.bars(effect, [f"{p}: {t}" for p, t in enumerate(tok.display(stream[:last]))],
                                 title="Effect on the last segment, per token replaced",
                                 x_title="position of the replaced token", y_title="largest |Δ log p|",
                                 highlight=last - bound, **plot), key="xl_reach")
    seen = [p for p, e in enumerate(effect) if e > 0]
    st.caption(f"Tokens before position {seen[0] if seen else last} change nothing at all (largest change "
               f"{max(effect[:seen[0]] if seen else effect, default=0.0):.1e}); from there on they do. Dai et al.'s "
               f"bound: {model.cfg.n_layers} layers × {model.cfg.mem_len} memory positions = {bound} tokens before "
               f"the last segment (position {last}) — each layer's memory holds the previous segment's input to "
               "that layer, which itself had read one segment further back. More layers reach further.")
    if st.button("Time reading 96 tokens with and without the memory", key="xl_time"):
        with st.spinner("Reading the text twice…"):
            cost = xl.evaluation_cost(model, (stream * 2)[:96], repeats=1)
        sec, counts = cost["seconds"], cost["tokens"]
        st.markdown(f"With the memory: **{sec['with memory'] * 1e3:.0f} ms** ({counts['with memory']} tokens through "
                    f"the model, each once). Without it, sliding a window of {model.cfg.seg_len + model.cfg.mem_len} "
                    f"tokens for every prediction: **{sec['sliding window'] * 1e3:.0f} ms** "
                    f"({counts['sliding window']:,} tokens) — {sec['sliding window'] / sec['with memory']:.0f}× "
                    "longer, measured now on this server. Dai et al. report up to 1,800× at their lengths.")

    st.subheader("Context fragmentation: loss at each position of a segment")
    losses = meta.get("position_losses")
    if losses:
        seg = list(range(len(losses["with_memory"])))
        st.plotly_chart(figures.lines({"with memory": losses["with_memory"],
                                       "without memory (segment read alone)": losses["without_memory"]}, seg,
                                      title="Validation loss by position within a segment", x_title="position",
                                      y_title="cross-entropy (nats)", **plot), key="xl_losses")
        m = meta["metrics"]
        st.markdown(f"First 4 positions: **{m['with_memory_first4']:.3f}** with memory vs "
                    f"**{m['without_memory_first4']:.3f}** without; whole segment {m['with_memory_all']:.3f} vs "
                    f"{m['without_memory_all']:.3f}. Without memory the first tokens of a segment have nothing "
                    "to condition on; with it, the loss is flat across the segment.")
        st.caption(f"Model: {code(meta.get('command', '?'))} — {model.num_parameters():,} parameters, "
                   f"{meta.get('steps', '?')} steps; {losses['segments']} validation segment batches.")

st.header("Pre-LN, post-LN and warmup (Xiong et al. 2020)")
st.markdown("Post-LN (the original paper) normalises after the residual sum, `LN(x + F(x))`; pre-LN normalises "
            "the sublayer input, `x + F(LN(x))`. Xiong et al. show post-LN's gradients near the output are large "
            "at initialisation, so it needs a learning-rate warmup, and that pre-LN can train without one. Four "
            "runs test it: the same peak learning rate, the same data and seed.")
data = json.loads(CURVES.read_text(encoding="utf-8")) if CURVES.exists() else st.session_state.get("stability_live")
if data is None:
    st.info(f"No precomputed curves at {CURVES}. Run `python -m core.training.stability --out assets/stability/curves.json`, "
            "or a quick small run here (2 layers, 60 steps).")
    if st.button("Run the four quick trainings", key="stability_run"):
        cfg = stability.StabilityConfig(steps=60, layers=2, warmup=30, lr=5e-3, d_model=32, d_ff=64, batch_size=16)
        bar = st.progress(0.0)
        with st.spinner("Training post-LN and pre-LN, with and without warmup…"):
            live = stability.run(cfg, on_progress=lambda i, n, name: bar.progress(i / n, text=md(name)))
        data = st.session_state["stability_live"] = live | {"command": "quick run in the app"}
if data is not None:
    curves = data["curves"]
    steps = list(range(1, len(next(iter(curves.values()))) + 1))
    st.plotly_chart(figures.lines(curves, steps, title=f"Training loss, {data['config']['task']} task, "
                                  f"peak lr {data['config']['lr']}", x_title="step", y_title="loss", **plot),
                    key="stability_curves")
    st.dataframe({"run": list(data["final"]), "final loss (last 10 % of steps)": list(data["final"].values()),
                  "exact match": [data["metrics"][k].get("exact_match") for k in data["final"]]}, key="stability_table")
    c, r, f = data["config"], stability.reading(data["final"]), data["final"]
    both = all(r["pre_ln_better"].values())
    told = [("Pre-LN ended lower than post-LN both with and without warmup"
             if both else "Pre-LN did not end lower than post-LN in both settings")
            + f" ({f['pre-LN, warmup']:.2f} against {f['post-LN, warmup']:.2f} with warmup, "
              f"{f['pre-LN, no warmup']:.2f} against {f['post-LN, no warmup']:.2f} without): "
            + ("as the paper finds." if both else "not the paper's finding."),
            "Warmup " + ("helped pre-LN too here" if r["warmup_helps"]["pre"] else "did not help pre-LN here")
            + f" ({f['pre-LN, warmup']:.2f} with, {f['pre-LN, no warmup']:.2f} without)"
            + (f": at a peak learning rate of {c['lr']} and {c['steps']} steps this small run does not show pre-LN "
               "doing without warmup, only doing better than post-LN; Xiong et al.'s runs are larger and longer, "
               "and their claim is about how high a rate pre-LN tolerates unwarmed."
               if r["warmup_helps"]["pre"] else ", as the paper finds.")]
    st.markdown("**What these runs show.** " + " ".join(told))
    st.caption(f"{code(data.get('command', '?'))} — {c['layers']}+{c['layers']} layers, d_model {c['d_model']}, "
               f"batch {c['batch_size']}, warmup {c['warmup']} steps, no gradient clipping; {md(data['seconds'])} s.")

choices_view.section(plot)

st.header("Recurrence vs attention: accuracy against distance")
st.markdown("The seeds' core argument. An LSTM encoder-decoder with no attention (Sutskever et al. 2014) must "
            "carry the whole source through one state vector, so every extra step between reading a token and "
            "writing it is another chance to lose it; the Transformer's decoder reads any source position "
            "directly through cross-attention, one step away whatever the length. On *copy* of n symbols, "
            "n recurrent steps separate each input token from its output, so length = distance. A GRU "
            "encoder-decoder (Cho et al. 2014), the LSTM's simpler gated cousin, faces the same bottleneck.")
REC = Path(os.environ.get("ATTENTION_RECURRENCE_JSON", ROOT / "assets" / "recurrence" / "results.json"))
if not REC.exists():
    st.info(f"No precomputed results at {REC}. Run `python -m core.variants.recurrence --out assets/recurrence/results.json`.")
else:
    rec = json.loads(REC.read_text(encoding="utf-8"))
    for metric, label in (("token_accuracy", "token accuracy (teacher forced)"), ("exact_match", "exact match (greedy)")):
        st.plotly_chart(figures.lines({k: v[metric] for k, v in rec["curves"].items()}, rec["lengths"],
                                      title=f"{label.capitalize()} vs distance, {rec['config']['task']} task",
                                      x_title="sequence length = distance (steps)", y_title=label, **plot),
                        key=f"rec_{metric}")
    st.caption(recurrence_view.runs_caption(rec))
    st.markdown("**Reading the curves.** " + md(recurrence_view.curves_reading(rec)))

    st.subheader("Attention before the Transformer (Luong et al. 2015)")
    st.markdown(
        "Is it attention or the Transformer that removes the bottleneck? The LSTM with attention is the same LSTM "
        "encoder-decoder plus attention: at output step t its state h_t scores every encoder state h̄_s, "
        "score = h_tᵀ W_a h̄_s, the softmax of the scores is the **alignment** α_t, the context c_t = Σ_s α_ts h̄_s "
        "joins h_t in h̃_t = tanh(W_c [c_t; h_t]), which predicts the next symbol. Bahdanau et al. (2015) score with "
        "a small network instead, score = vᵀ tanh(W h_t + U h̄_s): the LSTM with additive attention is the same "
        "model with that score. The Transformer then dropped the recurrence and kept the attention.")
    cfg = recurrence.config_of(rec["config"])
    task, trained = load_recurrence(str(REC.parent), jsonio.dumps(rec["config"]), rec.get("date", ""))
    if set(trained) != set(recurrence.NAMES):
        st.info(f"The trained models are not in {REC.parent}: rerun {code(rec.get('command', ''))} with "
                f"`--weights {REC.parent}`.")
    else:
        longest = cfg.max_len + 4
        typed = text_box(f"Symbols to {cfg.task} (0-9 and a-j, separated by spaces; trained on {cfg.min_len} to "
                         f"{cfg.max_len})", "3 1 4 1 5 9 2 6 5 3 5 8", key="rec_symbols", limit=4 * longest)
        try:
            demo = recurrence.copy_demo(task, trained, typed, longest)
        except ValueError as e:
            st.error(md(e))
        else:
            if len(demo["symbols"]) > cfg.max_len:
                st.warning(f"{len(demo['symbols'])} symbols: longer than anything these models were trained on "
                           f"(at most {cfg.max_len}).")
            st.dataframe([{"model": recurrence.NAMES[k], "output": " ".join(out),
                           "right": "yes" if out == demo["target"] else "no"}
                          for k, out in demo["outputs"].items()], hide_index=True, width="stretch")
            src = demo["symbols"] + ["[EOS]"]
            (a1, a3), (a2, note) = st.columns(2), st.columns(2)  # the two LSTMs side by side, the Transformer below
            for col, key, what, weights in (
                    (a1, "lstm-attention", "LSTM + attention: the alignment α", demo["alignment"]),
                    (a3, "lstm-additive", "LSTM + additive attention: the alignment α", demo["additive_alignment"]),
                    (a2, "transformer", "Transformer: cross-attention (last layer, heads' mean)",
                     demo["cross"])):
                produced = demo["outputs"][key]
                rows = [f"{i + 1}: {t}" for i, t in enumerate(produced)] + ["[EOS]"] * (len(weights) - len(produced))
                # one colour scale, 0 to 1, for the three maps: which one is softer is then a fair look
                col.plotly_chart(figures.heatmap(weights, rows, src, title=what, **plot).update_traces(zmax=1),
                                 key=f"rec_align_{key}")
            note.caption("Rows: each output step (what it wrote); columns: the source symbols. On copy a model that "
                         "reads the right source symbol at each step draws the diagonal; the plain LSTM and GRU have "
                         "no such picture to draw — they only have their final state.")
            note.markdown(md(recurrence_view.additive_reading(demo, task, trained["lstm-additive"].v.in_features)))

            st.subheader("Inside the LSTM: its gates on your symbols")
            st.markdown(
                r"Hochreiter & Schmidhuber (1997), with the forget gate of Gers et al. (2000). At step $t$ four "
                r"layers read $x_t$ and $h_{t-1}$: three sigmoids, the **input gate** $i_t$, the **forget gate** "
                r"$f_t$ and the **output gate** $o_t$, each between 0 and 1, and a tanh, the candidate $g_t$. The "
                r"cell keeps $f_t$ of what it held and adds $i_t$ of the candidate, "
                r"$c_t = f_t \odot c_{t-1} + i_t \odot g_t$; the hidden state shows $o_t$ of it, "
                r"$h_t = o_t \odot \tanh(c_t)$. Here every gate is recomputed from the shipped "
                "model's own weights, step by step, on your symbols: the encoder reading them, then the decoder, "
                "started from the encoder's final (h, c), writing its answer.")
            lstms = [k for k in ("lstm", "lstm-attention") if k in demo["gates"]]
            which = st.radio("LSTM", lstms, format_func=recurrence.NAMES.get, horizontal=True, key="rec_gates_model")
            gates = demo["gates"][which]
            units = gates.most_varying(32)
            forget = gates.steps("f")  # [encoder steps + decoder steps, hidden]
            steps = ([f"read {t + 1}: {s}" for t, s in enumerate(src)]
                     + [f"wrote {t + 1}: {s}" for t, s in enumerate(demo["outputs"][which] + ["[EOS]"])])
            steps = steps[:len(forget)]  # no [EOS] when the decoder ran out of steps
            st.plotly_chart(figures.matrix(forget[:, units].T, steps, [f"unit {u}" for u in units],
                                           title=f"Forget gate f_t, {len(units)} most varying units",
                                           x_title="step", y_title="hidden unit", value_name="f_t", zmin=0, zmax=1,
                                           **plot), key="rec_gates_forget")
            hidden = forget.shape[1]
            st.caption(f"Rows: the {len(units)} of the {hidden} hidden units whose forget gate varies most over "
                       "these steps (largest variance first); columns: each step, what the encoder read, then what "
                       "the decoder wrote. Top of the colour bar (f near 1): the unit keeps its cell; bottom: it "
                       "clears it.")
            means = {f"{name} gate {k}_t": gates.steps(k).mean(1).tolist()
                     for k, name in (("f", "forget"), ("i", "input"), ("o", "output"))}
            st.plotly_chart(figures.lines(means, [figures.label(s) for s in steps], title="Mean gate per step",
                                          x_title="step", y_title=f"mean over all {hidden} units", y_range=[0, 1],
                                          **plot), key="rec_gates_means")
            kept = {k: t.encoder.retention(0) for k, t in demo["gates"].items()}
            mean_f = means["forget gate f_t"]
            low = min(range(1, len(steps)), key=mean_f.__getitem__)  # step 0 has an empty cell to forget
            told = (f"Between reading the first symbol, {demo['symbols'][0]}, and the final state handed to the "
                    f"decoder, {len(src) - 1} more step{'s multiply' if len(src) > 2 else ' multiplies'} this "
                    "LSTM's cell by their forget gates: "
                    f"∏ f_t lets through {float(kept[which].mean()):.3f} of it, the mean over its {hidden} units "
                    f"of each unit's product ({int((kept[which] > 0.5).sum())} units keep more than half). Its mean "
                    f"forget gate is lowest at “{steps[low]}” ({mean_f[low]:.3f}), where it clears the most.")
            if len(kept) == 2:
                other = next(k for k in kept if k != which)
                told += (f" Over the same steps the {'plain LSTM' if other == 'lstm' else 'LSTM with attention'} "
                         f"keeps {float(kept[other].mean()):.3f}"
                         + (": the one with attention can look the source up again instead of carrying it."
                            if float(kept["lstm-attention"].mean()) < float(kept["lstm"].mean()) else "."))
            st.markdown(md(told))
            recurrence_view.gru_section(demo, trained, plot)  # the GRU's one update gate against f_t and i_t

            recurrence_view.input_reach(trained, demo, task, plot,
                                        (str(REC.parent), jsonio.dumps(rec["config"]), rec.get("date", "")))

recurrence_view.counting_section(plot)  # PARITY and balanced brackets: a causal Transformer against an LSTM
