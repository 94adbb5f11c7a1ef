"""Heads that language models grow: previous-token, duplicate-token and induction heads, measured on the model."""
import streamlit as st

from app import coverage_view
from app import lm_heads_view as hv
from app.shell import note_broken, page_view, shown_model, traced, usable_models
from app.text import md
from core import find_heads as fh
from core.io.tokenizer import normalize_text

st.title("Heads that language models grow")
st.markdown("Language models trained on text grow the same few kinds of attention heads (Olsson et al. 2022): "
            "**previous-token heads** look one token back; **duplicate-token heads** look at an earlier copy of the "
            "current token; **induction heads** look at the token that *followed* that earlier copy, and so "
            "complete `[A][B] … [A] → [B]` — in-context copying. The test: feed random tokens twice. Nothing can "
            "predict the first copy; a model with induction heads predicts the second.")
view = page_view()
if hv.usable(view.ck.model.cfg):
    name, settings = view.name, st.columns(3)
else:
    names = usable_models(lambda m: hv.usable(m.cfg))
    note_broken()
    if not names:
        st.info("No GPT-style (decoder-only) or BERT-style (encoder-only) model can be loaded here.")
        st.stop()
    # one row with the settings, so the scores start on a projector's first screen; the label says why
    settings = st.columns(4)
    name = settings[0].selectbox(f"A language model ({md(view.name)} is a translator)", names,
                                 index=names.index("lm") if "lm" in names else 0, key="lm_heads_model",
                                 help=f"{md(view.name)} has an encoder and a decoder; this page reads one "
                                      "self-attention stack, so it uses a language model. Pick one here or in the "
                                      "sidebar. A translator's encoder is read in the page's last section.")
    settings = settings[1:]
ck = shown_model(name)
decoder = ck.model.cfg.kind == "decoder-only"
kind = "decoder" if decoder else "encoder"
present, dark = view.present, view.dark

c1, c2, c3 = settings
longest = hv.longest_copy(name)
seq_len = c1.slider("Random tokens per copy", min(4, longest), min(64, longest), min(24, longest),
                    key="lm_heads_len", help="L: the sequence is [BOS] r₀ … r_L−1 r₀ … r_L−1 (BERT: [CLS] … [SEP])")
seed = int(c2.number_input("Random seed", 0, 999_999, 0, key="lm_heads_seed",
                           help=f"Which {hv.BATCH} random sequences the scores average over"))
prev_on = c3.radio("Previous-token score on", ["your sentence", "the random sequences"], horizontal=True,
                   key="lm_heads_prev_on")
own_text = prev_on == "your sentence"
if own_text and not normalize_text(view.text):
    st.info("The sentence is empty, so the previous-token score is measured on the random sequences. Type a "
            "sentence in the box above to measure it on your own text.")
s = hv.scores(name, seq_len, seed, view.text if own_text and normalize_text(view.text) else None)
if own_text and normalize_text(view.text) and s["previous_token_on"] != "text":
    st.info("Your sentence is a single token, so the previous-token score is measured on the random sequences.")

st.subheader(f"Every head of {md(name)}, scored")
hv.draw_scores(s, present=present, dark=dark)
where = "your sentence" if s["previous_token_on"] == "text" else "the repeated random sequences"
st.caption(f"Scores are mean attention weights (0 to 1), on {hv.BATCH} sequences of {seq_len} random tokens read "
           f"twice; previous-token on {md(where)}. Uniform attention would score about 1/(position+1).")
if not decoder:
    hv.encoder_note(name)

st.subheader("Their attention, on your sentence or on a repeated sequence")
ranked = [(k, h) for k in fh.KINDS for h in s["top_heads"][k]]
n_layers, n_heads = len(s["induction"]), len(s["induction"][0])
options = [(h["layer"], h["head"]) for _, h in ranked]
options += [(li, hi) for li in range(n_layers) for hi in range(n_heads) if (li, hi) not in options]
labels = {}
for k, h in reversed(ranked):  # the best rank of a head names it
    labels[(h["layer"], h["head"])] = f"{hv.TITLES[k].split(' score')[0]} · score {h['score']:.2f}"
default = options.index((s["top_heads"]["induction" if decoder else "previous_token"][0]["layer"],
                         s["top_heads"]["induction" if decoder else "previous_token"][0]["head"]))
i1, i2 = st.columns([1, 2])
layer, head = i1.selectbox("Head", options, index=default, key="lm_heads_head",
                           format_func=lambda x: hv.head_name(*x) + (f" ({labels[x]})" if x in labels else ""))
source = i2.radio("Input", ["Your sentence", "Your sentence, twice", "Random tokens, twice"], horizontal=True,
                  key="lm_heads_input", help="A repeated sequence shows an induction head's stripe one click away")
if source == "Random tokens, twice":
    weights, tokens = hv.repeated_example(name, seq_len, seed)
    st.plotly_chart(hv.attention_figure(weights[layer, head], tokens, layer, head, f"{seq_len} random tokens, twice",
                                        present=present, dark=dark), key="lm_heads_attention")
    st.caption(f"An induction head draws a stripe {seq_len - 1} positions left of the diagonal in the second copy "
               f"(the token after the earlier copy); a duplicate-token head one {seq_len} to the left; a "
               "previous-token head the line just below the diagonal.")
else:
    text = view.text if source == "Your sentence" else f"{view.text} {view.text}"
    try:
        res = traced(name, text, None)
    except ValueError as e:
        st.info(md(e))
    else:
        coverage_view.notices(res.notices)
        tokens = res.tokens(kind)[0]
        st.plotly_chart(hv.attention_figure(res.trace.attention(kind, layer)[0, head], tokens, layer, head,
                                            source.lower(), present=present, dark=dark), key="lm_heads_attention")

if decoder:
    st.subheader("Switch the induction heads off")
    st.markdown("If the heads with a high induction score do the copying, switching them off (their output "
                "multiplied by 0) should bring the loss on the second copy back up towards the first copy's, while "
                "switching off as many other heads should not.")
    every = [(li, hi) for li in range(n_layers) for hi in range(n_heads)]
    found = fh.induction_heads(s["induction"], 0.4, at_most=4)
    chosen = st.multiselect("Induction heads to switch off", every, default=found, key="lm_heads_off",
                            format_func=lambda x: f"{hv.head_name(*x)} ({s['induction'][x[0]][x[1]]:.2f})",
                            help="By default the heads scoring at least 0.4 (at most four), else the best one")
    if st.toggle("Ablate the induction heads", key="lm_heads_ablate"):
        chosen = sorted(chosen)
        control = fh.control_heads(s["induction"], len(chosen))
        base = hv.ablation(name, (), seq_len, seed)
        off = hv.ablation(name, tuple(chosen), seq_len, seed)
        ctrl = hv.ablation(name, tuple(control), seq_len, seed)
        m1, m2, m3 = st.columns(3)
        m1.metric("Second copy, all heads", f"{base['copies']['second_copy']:.2f}",
                  help=f"First copy: {base['copies']['first_copy']:.2f}")
        m2.metric("Second copy, induction heads off", f"{off['copies']['second_copy']:.2f}",
                  f"{off['copies']['second_copy'] - base['copies']['second_copy']:+.2f}", delta_color="inverse")
        m3.metric(f"Second copy, {len(control)} other head{'' if len(control) == 1 else 's'} off",
                  f"{ctrl['copies']['second_copy']:.2f}",
                  f"{ctrl['copies']['second_copy'] - base['copies']['second_copy']:+.2f}", delta_color="inverse")
        st.dataframe([{"heads switched off": label, "first copy": r["copies"]["first_copy"],
                       "second copy": r["copies"]["second_copy"],
                       "drop from first to second": r["copies"]["first_copy"] - r["copies"]["second_copy"]}
                      for label, r in (("none", base), (hv.heads_text(chosen), off),
                                       (f"control: {hv.heads_text(control)}", ctrl))], hide_index=True)
        st.plotly_chart(hv.loss_figure(base["curve"], off["curve"], seq_len, 1,
                                       f"{hv.heads_text(chosen)} off", present=present, dark=dark),
                        key="lm_heads_loss")
        st.caption(f"Mean next-token loss (nats) over {hv.BATCH} sequences, on the tokens r₁ … r_L−1 of each copy. "
                   "The control switches off the heads with the lowest induction scores, as many as you chose.")
    else:
        b = s["induction_loss"]
        st.markdown(f"With every head on: loss **{b['first_copy']:.2f}** on the first copy, "
                    f"**{b['second_copy']:.2f}** on the second.")

with st.expander("How the scores are measured"):
    st.markdown("- Each row is [BOS] followed by L random tokens (all different), read twice. In the second copy, "
                "the token at position q first appeared at q − L; the token after it is at q − L + 1.\n"
                "- **Previous-token**: mean weight from q to q − 1 (on your sentence, or on the random sequences).\n"
                "- **Duplicate-token**: mean weight from each second-copy token to q − L.\n"
                "- **Induction**: mean weight from each second-copy token to q − L + 1.\n"
                "- **Loss**: next-token cross-entropy of r₁ … r_L−1 in each copy; r₀ is left out (nothing predicts it). "
                "Most ids of a model's vocabulary are rare in the text it read, and a random draw is mostly such ids: "
                "an induction head finds the token to copy, but the model puts little probability on a token it "
                "almost never had to say, so the second copy's loss stays well above zero even with a strong head "
                "(`python scripts/copy_by_frequency.py` splits it by how often each token occurs).\n"
                "- A head's score is evidence of what it attends to; switching heads off is evidence of what the "
                "model uses. The same measurement from a terminal: `python -m core.find_heads --model lm`.")

hv.prompting_section(name, present=present, dark=dark)
hv.encoder_section(view.name, view.text, present=present, dark=dark)
