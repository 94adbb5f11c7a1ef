"""Masked LM (BERT): fill in hidden words from both sides, compare with a left-to-right LM, see how BERT
makes its training examples (15 % chosen; 80 % [MASK], 10 % random, 10 % unchanged), fine-tune the
pre-trained encoder against a random start, and ask whether sentence B follows sentence A."""
import streamlit as st
import torch

from app import coverage_view, figures
from app import mlm_view as mv
from app import progress as progress_bar
from app.shell import PRESETS, note_broken, page_view, shown_model, text_box
from app.text import code, md
from core.inference import coverage, mlm
from core.io.budget import max_positions
from core.training.finetune import LABELS
from core.inference.runner import coverage_notices
from core.io.tokenizer import MASK

st.title("Masked language model (BERT)")
st.markdown("BERT is pre-trained by hiding words and asking the encoder to predict them. Its attention has no "
            "causal mask, so the prediction for a hidden word uses the words on **both** sides; a GPT-style "
            "language model reads left to right and sees only what came before (Devlin et al. 2019, sec. 3.1).")
st.latex(r"\mathcal{L}_{\mathrm{MLM}} = -\sum_{i \in \mathcal{M}} \log p_\theta\!\left(x_i \mid \tilde{x}\right),"
         r"\qquad \tilde{x} = x \text{ with the positions } \mathcal{M} \text{ corrupted}")
view = page_view(sentence=False)  # this page has its own sentence boxes
names = mv.masked_lm_names()
note_broken()
if not names:
    st.error("No masked-LM model is installed: train one on the Training page (task “mlm”).")
    st.stop()
default = view.name if view.name in names else names[0]
name = st.selectbox("Masked LM", names, index=names.index(default), key="mlm_model",
                    help="models trained with the masked-LM objective: the bundled mlm and your own")
ck = shown_model(name)
tok, P = ck.tokenizer, dict(present=view.present, dark=view.dark)
held = ck.meta.get("heldout", {})
if "masked_accuracy" in held:
    st.caption(f"Model **{md(name)}**: {ck.model.cfg.n_encoder_layers} layers × {ck.model.cfg.n_heads} heads, "
               f"bidirectional encoder. On held-out lines it recovers {held['masked_accuracy']:.1%} of the words "
               f"shown as [MASK] ({held.get('n_targets', '?')} targets; scripts/bundle.py).")
if view.name not in names:
    st.caption(f"The sidebar's model {md(view.name)} is not a masked LM, so this page uses {md(name)}.")

def fill_in_the_blank():
    """Sections 1-3: they need a sentence with a hidden word; the sections after them do not."""
    st.header("1. Fill in the blank")
    if "mlm_text" not in st.session_state:
        st.session_state["mlm_text"] = view.text if mlm.MASK_TEXT.search(view.text or "") else PRESETS["mlm"][0]
    elif view.text != st.session_state.get("_mlm_sidebar") and mlm.MASK_TEXT.search(view.text or ""):
        st.session_state["mlm_text"] = view.text  # a new shared sentence with a [MASK] drives this box
    st.session_state["_mlm_sidebar"] = view.text
    st.caption("The sentence typed on the other pages is copied here when it has a [MASK] in it; a sentence without "
               "one has nothing to fill in, so this box keeps its own.")
    text = text_box("Sentence — write [MASK] where a word is hidden", key="mlm_text", area=True, height=80)
    ids = mlm.encode_masked(tok, text)
    if not ids:
        st.warning("Type a sentence first: the text is empty.")
        return
    cov, notes = coverage_notices(ck, mlm.MASK_TEXT.sub(" ", text), name)
    coverage_view.notices(notes)
    shown = tok.display(ids)
    hide = st.multiselect("…or hide words of it", [i for i, t in enumerate(ids) if t != MASK],
                          format_func=lambda i: f"{i}: {shown[i]}", key=f"mlm_hide_{hash(tuple(ids))}")
    originals = {i: ids[i] for i in hide}
    ids = mlm.mask_positions(ids, hide)
    if MASK not in ids:
        st.info("Nothing is hidden yet: write [MASK] in the sentence or pick words to hide above.")
        return
    try:
        res = mv.fill(name, tuple(ids), tuple(sorted(originals.items())))
    except ValueError as e:
        st.error(f"{md(e)}. Shorten the sentence.")
        return
    tokens = tok.display(ids)
    st.markdown("**Model input:** " + " ".join(code(t) for t in tokens))
    coverage_view.output("Best guess for every mask at once", tok.decode(res.best()),
                         coverage.outside_label(ck) if cov and cov["unknown_words"] else "")
    if len(res.fills) > 8:
        st.caption(f"{len(res.fills)} masks; the first 8 are charted.")
    cols = st.columns(min(2, len(res.fills)))
    for n, f in enumerate(res.fills[:8]):
        cands = tok.display(f.ids)
        hit = f.ids.index(f.original) if f.original in f.ids else None
        was = f" (hidden word: “{figures.label(tok.display([f.original])[0])}”)" if f.original is not None else ""
        cols[n % len(cols)].plotly_chart(
            figures.bars(f.probs, cands, title=f"[MASK] at position {f.position}{was}", y_title="probability",
                         x_title="candidate token",
                         highlight=hit, **P), key=f"mlm_fill_{n}")

    st.header("2. Both sides, or the left side only")
    pos = st.selectbox("Mask", [f.position for f in res.fills], format_func=lambda p: f"position {p}", key="mlm_pos")
    f = next(x for x in res.fills if x.position == pos)
    left = mv.prefix_text(tok, res, pos)
    cut = mv.fill(name, tuple(res.best()[:pos] + [MASK]))
    gpt = mv.left_only(name, left)
    c1, c2, c3 = st.columns(3)


    def top5(col, title, cands, probs, key):
        col.plotly_chart(figures.bars(probs[:5], cands[:5], title=title, x_title="candidate token",
                                      y_title="probability", **P), key=key)


    top5(c1, "This model, whole sentence", tok.display(f.ids), f.probs, "mlm_both")
    top5(c2, "This model, right side cut", tok.display(cut.fills[-1].ids), cut.fills[-1].probs, "mlm_cut")
    if gpt is None:
        c3.info("The bundled causal LM (lm) is not installed, so there is no left-to-right comparison.")
    else:
        top5(c3, "Causal LM, left to right", gpt[0], gpt[1], "mlm_gpt")
    st.caption(f"The first two: this model; the third: the bundled causal LM (lm), reading left to right. "
               f"All three read “{md(left)} …” before the mask (earlier masks filled with the best "
               "guesses); only the first also reads what follows. Where the right side decides the word, the first "
               "chart differs from the other two.")

    share = mlm.right_share(res.trace, pos)
    n_right = len(ids) - pos - 1
    st.plotly_chart(figures.matrix(share, [f"head {h}" for h in range(share.shape[1])],
                                   [f"layer {lay}" for lay in range(share.shape[0])], value_name="share",
                                   x_title="head", y_title="layer", title=f"Share of the mask's attention on the {n_right} token(s) to its right",
                                   show_values=True, zmin=0, zmax=1, **P), key="mlm_right")
    st.caption(f"Uniform attention would give {n_right / len(ids):.2f} to the right; a causal (GPT) model gives "
               f"exactly 0 — its mask sets those scores to −∞. Here: mean {float(share.mean()):.2f}, largest "
               f"{float(share.max()):.2f}.")
    layer = st.slider("Layer", 0, share.shape[0] - 1, share.shape[0] - 1, key="mlm_layer")
    weights = res.trace.attention("encoder", layer)[0, :, pos]
    st.plotly_chart(figures.query_bars(weights, tokens, f"[MASK] at {pos}", **P), key="mlm_row")

    st.header("3. How BERT makes a training example")
    st.markdown("Training never shows the model a hand-picked blank. Each token is *chosen* with probability 15 %; a "
                "chosen token becomes [MASK] 80 % of the time, a random token 10 %, and stays as it is 10 % — so the "
                "model cannot assume that only [MASK] positions matter and must keep a good representation of every "
                "word. The loss is taken at the chosen positions only. Below: the same recipe the bundled model was "
                "trained with (core.training.tasks.bert_corrupt), on your sentence with its masks filled in.")
    clean = res.best()
    seed = st.number_input("Draw", 0, 1_000_000, 0, key="mlm_seed", help="another seed, another corruption")
    draw = mv.corruption(name, tuple(clean), int(seed))
    rows = [{"position": i, "token": tok.display([clean[i]])[0], "chosen as": how,
             "model input": tok.display([draw["inputs"][i]])[0], "model predicts": tok.display([g])[0],
             "p": round(p, 3), "right": "✓" if g == clean[i] else "✗"}
            for i, how, g, p in zip(draw["chosen"], draw["how"], draw["guess"], draw["p_guess"])]
    st.dataframe(rows, hide_index=True)
    rates = mv.corruption_rates(name, tuple(clean))
    n_tok = len(clean)
    expect = 0.15 + 0.85 ** n_tok / n_tok
    m = st.columns(4)
    m[0].metric("Chosen", f"{rates['chosen']:.1%}", help=f"expected {expect:.1%}: 15 %, plus one forced choice when a "
                f"sentence of {n_tok} tokens draws none (0.85^{n_tok}/{n_tok})")
    m[1].metric("→ [MASK]", f"{rates['mask']:.1%}", help="expected 80 %")
    m[2].metric("→ random token", f"{rates['random']:.1%}", help="expected 10 %, less the draws that hit the same word")
    m[3].metric("→ unchanged", f"{rates['same']:.1%}", help="expected 10 %, plus random draws that hit the same word")
    st.caption(f"Measured over 2,000 corruptions of this sentence ({rates['n']:,} chosen tokens).")

    st.subheader("T5's version: spans, not single tokens")
    words = tok.decode(clean).split()
    if len(words) < 2:
        st.caption("T5's corruption needs a sentence of two words or more.")
    else:
        st.markdown("T5 (Raffel et al. 2020) drops **spans**: 15 % of the tokens, in runs of 3 on average; each "
                    "dropped run becomes one sentinel in the input, and the target is only the sentinels with what "
                    "they replaced — shorter than the sentence, where BERT predicts at every chosen position. Its "
                    "example: *Thank you ⟨X⟩ me to your party ⟨Y⟩ week.* → *⟨X⟩ for inviting ⟨Y⟩ last ⟨Z⟩*. "
                    "Here on your sentence's words (T5 counts its own sub-word tokens; no model of ours was trained "
                    "this way).")
        t5_seed = st.number_input("Draw", 0, 1_000_000, 0, key="t5_seed", help="another seed, other spans")
        t5_in, t5_out = mv.t5_example(words, int(t5_seed))
        st.markdown(f"**Input:** {md(t5_in)}  \n**Target:** {md(t5_out)}")


fill_in_the_blank()

st.header("4. Over many sentences")
st.markdown("One sentence is an anecdote. Hide one random word in each of 300 held-out lines (lines of the corpus "
            "generated with another seed, never seen in training) and predict it three ways.")
score = None
if st.button("Measure on 300 held-out lines", key="mlm_measure") or st.session_state.get("mlm_measured") == name:
    st.session_state["mlm_measured"] = name
    score, _ = progress_bar.run(f"mlm_measure_{name}", "Scoring held-out lines",
                                lambda tell: mv.held_out_sides(name, progress=tell))
if st.session_state.get("mlm_measured") == name and score is not None:
    m = st.columns(4)
    m[0].metric("Whole line (this model)", f"{score['full']:.1%}", help="top-1 accuracy")
    m[1].metric("Cut after the mask", f"{score['cut']:.1%}", help="the same model, the words to the right removed")
    if "left_lm" in score:
        m[2].metric("Causal LM (lm), left only", f"{score['left_lm']:.1%}")
    m[3].metric("Gain from the right side", f"{score['gain']:.2f} nats",
                help="mean of log p(hidden word | whole line) − log p(hidden word | line cut after the mask)")
    st.caption(f"{score['n']} lines (6 tokens or more), one hidden word each, never the first word or the last three; "
               "core.inference.mlm.both_sides_score.")

st.header("5. Pre-train, then fine-tune")
st.markdown("BERT's second step: take the pre-trained encoder, add a small output layer, and train everything "
            "briefly on a labelled task. Our task is this app's question — in “The ⟨animal⟩ didn't cross the "
            "⟨place⟩ because **it** was too ⟨adjective⟩”, is *it* the animal or the place? A linear layer reads the "
            "encoder's final vector for *it*. Only sentences with four adjectives are labelled; the test sentences "
            "use the **other** adjectives, so the labels alone cannot tell. The control is the same network from a "
            "random start, trained with the same sentences, steps and learning rate.")
ft_cols = st.columns(3)
n_lab = ft_cols[0].number_input("Labelled sentences", 4, 128, 32, key="mlm_ft_n")
ft_steps = ft_cols[1].number_input("Fine-tuning steps", 10, 300, 80, 10, key="mlm_ft_steps")
ft_seed = ft_cols[2].number_input("Seed", 0, 1000, 0, key="mlm_ft_seed")
st.caption(mv.finetune_caption())
ft_key = (name, int(n_lab), int(ft_steps), int(ft_seed))
if st.button("Fine-tune both", key="mlm_ft_go") or st.session_state.get("mlm_ft_done") == ft_key:
    st.session_state["mlm_ft_done"] = ft_key
    result, ft_complete = progress_bar.run("mlm_ft_" + "_".join(map(str, ft_key)), "Fine-tuning steps (both models)",
                                           lambda tell: mv.finetuned(*ft_key, progress=tell))
else:
    result, ft_complete = None, False
if result is not None and result.get("pre-trained") is not None:
    pre, rnd = result["pre-trained"], result["random"]
    majority = mv.majority_share(result["test"])
    curves = {"pre-trained (mlm)": pre.accuracy}
    if rnd is not None:
        curves["random start"] = rnd.accuracy
    steps_x = pre.steps if rnd is None or len(pre.steps) >= len(rnd.steps) else rnd.steps
    curves["always the more common answer"] = [majority] * len(steps_x)
    st.plotly_chart(figures.lines(curves, steps_x,
                                  title=f"Accuracy on {len(result['test'])} sentences with unseen adjectives",
                                  x_title="fine-tuning step", y_title="accuracy", **P), key="mlm_ft_curve")
    r = st.columns(3)
    r[0].metric("Pre-trained, fine-tuned", f"{pre.final:.1%}", help=f"{pre.seconds:.1f} s of fine-tuning")
    if rnd is not None:
        r[1].metric("Random start, same training", f"{rnd.final:.1%}", help=f"{rnd.seconds:.1f} s")
    r[2].metric("Always the more common answer", f"{majority:.1%}")
if ft_complete and result is not None:
    probe = text_box("Try a sentence with “it”", "The dog didn't cross the river because it was too sick.",
                     key="mlm_ft_try", limit=300)
    try:
        rows = [{"model": run.start, **{f"p(it = {lab})": round(p, 3)
                                        for lab, p in zip(LABELS, run.classify(tok, probe))}} for run in (pre, rnd)]
        st.dataframe(rows, hide_index=True)
    except ValueError:
        st.info("Write a sentence with the word “it” in it: the classifier reads the encoder's vector for “it”.")

st.header("6. Next sentence prediction")
st.markdown("BERT's second pre-training task (Devlin et al. 2019, sec. 3.1): read two sentences as one input, "
            "`[CLS] A [SEP] B [SEP]` (ours: [BOS] A [EOS] B [EOS]), with a **token-type** (segment) embedding added "
            "to every token — 0 for A, 1 for B — and say from the first position's vector whether B is the sentence "
            "that followed A in the text or a random one. It gives the model a reason to relate sentences.")
if not ck.model.cfg.nsp:
    st.info(f"The model {md(name)} was trained without next-sentence prediction (it has no next-sentence head).")
    st.stop()
if "next_sentence_accuracy" in held:
    st.caption(f"Held-out: {held['next_sentence_accuracy']:.1%} of {held['n_pairs']} sentence pairs classified "
               "right (half true next sentences, half random; scripts/bundle.py).")
a_text = text_box("Sentence A", "The dog saw a sheep in the path.", key="mlm_nsp_a", limit=500)
nc = st.columns(2)
b_texts = [text_box("Sentence B — what came next", "It chased the sheep across the path.", key="mlm_nsp_b1",
                    limit=500, where=nc[0]),
           text_box("Sentence B — something else", "The lake was deep and dark.", key="mlm_nsp_b2", limit=500,
                    where=nc[1])]
pairs = []
for col, b_text in zip(nc, b_texts):
    try:
        pr = mv.pair(name, a_text, b_text)
    except ValueError as e:
        col.info(md(f"{str(e)[:1].upper()}{str(e)[1:]}."))
        pairs.append(None)
        continue
    col.metric("p(B follows A)", f"{pr.p_next:.1%}")
    if pr.cut:
        col.caption(f"The pair was cut to the {max_positions(ck.model)} tokens this model reads.")
    pairs.append(pr)
first = next((p for p in pairs if p is not None), None)
if first is not None:
    seg = mlm.segment_share(first.trace, first.types)
    st.plotly_chart(figures.matrix(torch.tensor([first.types]), tok.display(first.ids), ["token type"],
                                   value_name="segment", x_title="token", y_title="segment", title="Token types of the first pair: 0 = A, 1 = B",
                                   show_values=True, zmin=0, zmax=1, height=230, **P), key="mlm_nsp_types")
    st.plotly_chart(figures.matrix(seg, [f"head {h}" for h in range(seg.shape[1])],
                                   [f"layer {lay}" for lay in range(seg.shape[0])], value_name="share",
                                   x_title="head", y_title="layer", title="Share of B's attention on sentence A",
                                   show_values=True, zmin=0, zmax=1, **P), key="mlm_nsp_share")
    n_a = first.types.count(0)
    st.caption(f"First pair; mean over B's {first.types.count(1)} tokens; uniform attention would give "
               f"{n_a / len(first.types):.2f} to A.")

st.header("7. Can BERT write?")
st.markdown("A language model writes by predicting the next word from the ones before it; BERT was trained to fill "
            "in hidden words from both sides, so nothing in its training says how to go on. It can still be made to "
            "write (Wang & Cho 2019, *BERT has a mouth, and it must speak*): **left to right**, one [MASK] after "
            "the text at a time, or by **Gibbs sampling**: the prompt and a block of [MASK]s filled at once, then "
            "every position of the block masked and redrawn in turn, given all the others, for a few sweeps. A third "
            "model judges the texts: lm, a GPT-style model trained on real English prose, which wrote none of them.")
w_prompt = text_box("Prompt", mv.WRITE_PROMPT, key="mlm_write_prompt", limit=300)
coverage_view.notices([n for n in [coverage.language_notice(ck, w_prompt, name)] if n])  # all three write English
wc = st.columns(4)
w_n = wc[0].slider("Tokens to write", 4, 32, 12, key="mlm_write_n")
w_sweeps = wc[1].slider("Gibbs sweeps", 0, 10, 3, key="mlm_write_sweeps",
                        help="each sweep masks and redraws every written position once, in a random order; at 0 no "
                             "Gibbs step is taken and BERT's block is only filled at once, in one pass")
w_temp = wc[2].slider("Temperature", 0.0, 1.5, 0.7, 0.1, key="mlm_write_temp",
                      help="0: always the most probable token; the same for every writer")
w_seed = wc[3].number_input("Seed", 0, 1_000_000, 0, key="mlm_write_seed")
written = None
try:
    written = mv.bert_writes(name, w_prompt, int(w_n), int(w_sweeps), round(float(w_temp), 2), int(w_seed))
    if written is None:
        st.info(f"This section needs the bundled causal LMs {mv.LEFT_ONLY_LM} (a writer) and {mv.JUDGE} "
                "(the judge).")
except ValueError as e:
    st.error(md(f"{str(e)[:1].upper()}{str(e)[1:]}."))
if written is not None:
    rows_w = written["rows"]
    same_text = "trained on the same generated sentences with the same tokenizer, so the two differ in their " \
                "training objective only" if name == "mlm" else "trained on the bundled generated sentences"
    wcols = st.columns(3)
    for col, row in zip(wcols, rows_w[:3]):
        col.markdown(f"**{md(row['name'])}**  \n{md(written['prompt'])} **{md(row['text'].strip())}**")
        col.metric("Judge: bits per byte", f"{row['judge_bits_per_byte']:.3f}")
        if row["mlm_bits_per_byte"] is not None:
            col.caption(f"{md(name)}'s pseudo bits per byte: {row['mlm_bits_per_byte']:.3f}")
    st.caption(f"Causal LM: {mv.LEFT_ONLY_LM}, GPT-style, {same_text}. All three pick each token by one rule "
               f"(temperature {w_temp:.1f}, seed {int(w_seed)}; no special tokens) and write {int(w_n)} tokens.")
    st.plotly_chart(figures.bars([r["judge_bits_per_byte"] for r in rows_w], [r["name"] for r in rows_w],
                                 title="Judge (lm): bits per byte of each continuation", x_title="writer",
                                 y_title="bits per byte (lower: likelier)", **P), key="mlm_write_bars")
    st.markdown(md(mv.writes_reading(written)))
    st.markdown("  \n".join(f"**{md(r['name'])}** ({r['judge_bits_per_byte']:.3f}): {md(written['prompt'])} "
                            f"**{md(r['text'].strip())}**" for r in rows_w[3:]))
    st.caption("Judge: −log₂ p of the continuation's tokens under lm, each given the prompt and the tokens before it "
               "(lm's own tokenizer), divided by the continuation's UTF-8 bytes, so no writer's tokenizer matters "
               "(core.inference.mlm.can_bert_write). References, not writers: the causal LM's words shuffled (same "
               "words, order lost) and lm's own continuation (its own sample under its own measure). Lower means more "
               "predictable, and repetitive text is predictable too: read the texts. Pseudo bits per byte: the masked "
               "LM's pseudo-log-likelihood (each token masked in turn), a second opinion that favours BERT's texts.")
