"""The guided lesson: one sentence through the whole transformer, ten steps, each a list of blocks (the tenth
reads the sentence with the bundled language model, whose induction head copies it).

A step is computed into plain blocks (markdown, figures, tables) so the same content can be drawn
on the Lesson page one screen at a time and written into a self-contained handout (HTML with
plotly.js inlined: print it to PDF, or save every figure as PNG, all offline).
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from app import coref_view, figures, lm_heads_view, patch_view
from app.decode_view import candidate_names
from app.shell import load_model, traced
from app.theme import nobreak
from app.text import md
from core import find_heads
from core.inference import coverage
from core.io import registry
from core.probes import coref, lesson
from core.probes import layers, positions
from core.io.budget import max_positions
from core.inference.decoding import generate
from core.evaluate import translate_all
from core.positional import sinusoidal
from core.io.tokenizer import EOS

# primary papers, cited by author, year and title; the seed documents follow as further reading
VASWANI = "Vaswani et al. (2017), *Attention Is All You Need*"
SOURCES = {
    "sennrich": "Sennrich, Haddow & Birch (2016), *Neural Machine Translation of Rare Words with Subword Units*",
    "ba": "Ba, Kiros & Hinton (2016), *Layer Normalization*",
    "he": "He et al. (2016), *Deep Residual Learning for Image Recognition*",
    "xiong": "Xiong et al. (2020), *On Layer Normalization in the Transformer Architecture*",
    "starke": "Stärk (2020), *Transformers* (survey)",
    "cse589": "Shah & Thornton (2020), *CSE 589 paper: the Transformer, BERT and Transformer-XL*",
    "wiki": "Wikipedia, *Transformer (deep learning architecture)*",
    "seita": "Seita (2019), *Transformer Networks for State of the Art Natural Language Processing*",
}


@dataclass
class Step:
    title: str
    text: str  # two or three sentences, markdown
    source: str  # where it comes from in the seed documents
    blocks: list = field(default_factory=list)  # ("md", str) | ("fig", Figure) | ("table", list[dict])


@dataclass
class Context:
    name: str  # the lesson's translation model
    text: str
    present: bool = False
    dark: bool = False

    @property
    def ck(self):
        return load_model(self.name)

    @property
    def run(self):
        return traced(self.name, self.text, None)

    def style(self) -> dict:
        return {"present": self.present, "dark": self.dark}


def outside_note(c: Context) -> str:
    """What the lesson says about a sentence with words its model never saw (``""`` when it has none)."""
    r = c.run
    if not r.outside:
        return ""
    words = ", ".join(r.coverage["unknown_words"][:12])
    language = coverage.language_notice(c.ck, c.text, c.name)
    return ((f"{language} " if language else "")
            + f"This sentence is outside what {c.name} was trained on (unknown to {c.name}: {words}). The steps "
            "still show how the transformer computes, but its output is not a translation, and the attention "
            "patterns say nothing about what the sentence means.")


def _tok(tokens):
    return [figures.label(t) for t in tokens]


# --------------------------------------------------------------------------- the steps
def tokens_step(c: Context) -> Step:
    r = c.run
    pieces = [{"position": i, "token": t, "id": i_} for i, (t, i_) in enumerate(zip(r.src_tokens, r.src_ids))]
    n_words = len(c.text.split())
    notes = [("md", f"**{n_words} words → {len(r.src_ids)} tokens** (the last one, `[EOS]`, marks the end).")]
    notes += [("md", f"⚠️ {md(n)}") for n in r.notices]
    return Step("1 · Text → tokens",
                "The model never sees letters. A tokenizer cuts the sentence into pieces from a fixed vocabulary "
                "and replaces each by its number. Sub-word pieces let a small vocabulary spell any word: a rare "
                "word becomes several known pieces instead of one unknown token.",
                f"{SOURCES['sennrich']} (byte-pair encoding); {VASWANI}, sec. 5.1 · further reading: {SOURCES['starke']}, "
                f"sec. 2; {SOURCES['wiki']}, “Tokenization”",
                notes + [("fig", figures.token_strip(
                    r.src_tokens, r.src_ids, c.ck.tokenizer.word_starts(r.src_ids),
                    title="Token pieces and their ids", **c.style())),
                         ("md", "Grey: a special token · blue: a piece that starts a word · orange: a piece that "
                                "continues the word before it."), ("table", pieces)])


def embedding_step(c: Context) -> Step:
    r, ck = c.run, c.ck
    parts = positions.embedding_parts(r.trace, "encoder")
    d = ck.model.cfg.d_model
    scale = ck.model.embed.scale
    raw = parts["tokens"] / scale
    fig = figures.matrix(parts["tokens"], None, r.src_tokens, title=f"Token embeddings × √{d} = {scale:.2f}",
                         x_title="dimension", y_title="token", value_name="value", diverging=True, **c.style())
    return Step("2 · Token embeddings",
                "Each token id picks one row of a learned table: a vector of d_model numbers. The paper multiplies "
                "it by √d_model so that it is not drowned by the positional encoding added next.",
                f"{VASWANI}, sec. 3.4 (Embeddings and Softmax) · further reading: {SOURCES['starke']}, sec. 2",
                [("md", f"Mean vector length before scaling: {float(raw.norm(dim=-1).mean()):.3f}; after: "
                        f"{float(parts['tokens'].norm(dim=-1).mean()):.3f} (d_model = {d})."), ("fig", fig)])


def positional_step(c: Context) -> Step:
    r, ck = c.run, c.ck
    cfg = ck.model.cfg
    parts = positions.embedding_parts(r.trace, "encoder")
    blocks = []
    if cfg.pos_encoding == "sinusoidal":
        pe = sinusoidal(len(r.src_ids), cfg.d_model, cfg.pe_base)
        formula = f"{nobreak('PE(pos, 2i) = sin(pos/N^(2i/d)),')} {nobreak('PE(pos, 2i+1) = cos(…)')}"  # unbroken
        blocks.append(("fig", figures.matrix(pe, None, list(range(len(r.src_ids))), title=formula,
                                             x_title="dimension", y_title="position",
                                             value_name="PE", diverging=True, **c.style())))
    if parts["positions"] is not None:
        blocks.append(("fig", figures.matrix(parts["sum"], None, r.src_tokens, x_title="dimension",
                                             title=f"{nobreak('Token embedding + PE:')} "
                                                   f"{nobreak('what the first layer reads')}",
                                             y_title="token", value_name="value", diverging=True, **c.style())))
    perm = positions.permutation_test(ck.model, r.src_ids, positions.shuffle_order(len(r.src_ids), 0))
    blocks.append(("md", f"**Shuffle the words** and run the first layer. Without positions the output is the same "
                         f"set of vectors, only reordered: largest difference "
                         f"**{perm['without']['max_diff']:.2e}**. With this model's positions "
                         f"({', '.join(perm['terms']) or 'none'}): **{perm['with']['max_diff']:.3f}** — order now "
                         "matters."))
    return Step("3 · Positional encoding",
                "Attention and the feed-forward layer treat the tokens as a bag: shuffle the sentence and they "
                "return the same vectors, shuffled. Adding a different vector for every position (sinusoids of "
                "many wavelengths) gives the model the word order back.",
                f"{VASWANI}, sec. 3.5 (Positional Encoding) · further reading: {SOURCES['starke']}, “Positional encoding”", blocks)


def one_head_step(c: Context, head: int = 0) -> Step:
    r = c.run
    name = "encoder.0.self_attn"
    hb = lesson.head_by_hand(r.trace, name, head)
    toks, st_ = r.src_tokens, c.style()
    blocks = [("md", f"Layer 0, head {head}, d_k = {hb['d_k']}. Q = X·W_Q, K = X·W_K, V = X·W_V:")]
    for key in ("Q", "K", "V"):
        blocks.append(("fig", figures.matrix(hb[key], None, toks, title=key, x_title="dimension", y_title="token",
                                             value_name=key, diverging=True, height=260 + 18 * len(toks), **st_)))
    blocks.append(("fig", figures.matrix(hb["scaled"], toks, toks, title=f"QKᵀ / √{hb['d_k']}", x_title="key",
                                         y_title="query", value_name="score", diverging=True, **st_)))
    blocks.append(("fig", figures.heatmap(hb["weights"], toks, toks,
                                          title="softmax(QKᵀ/√d_k): " + nobreak("each row sums to 1"), **st_)))
    blocks.append(("fig", figures.matrix(hb["out"], None, toks,
                                         title="softmax(…) × V: " + nobreak("this head's output"),
                                         x_title="dimension", y_title="token", value_name="value", diverging=True,
                                         **st_)))
    blocks.append(("md", f"Recomputed here by hand vs the model's own numbers: weights differ by at most "
                         f"{hb['weights_error']:.1e}, outputs by {hb['out_error']:.1e}."))
    return Step("4 · One attention head, by hand",
                "Every token asks a question (its query q), advertises what it holds (its key k) and what it "
                "passes on (its value v). The dot products q·k say how well each key answers; dividing by √d_k "
                "keeps them from growing with the dimension, softmax turns each row into weights, and the output "
                "is the weighted sum of the values.",
                f"{VASWANI}, sec. 3.2.1, eq. 1 and fig. 2 (left) · further reading: {SOURCES['starke']}, eq. 1; "
                f"{SOURCES['cse589']} (why √d_k)", blocks)


def multi_head_step(c: Context) -> Step:
    r, ck = c.run, c.ck
    w = r.trace.attention("encoder", 0)[0]  # [H, T, T]
    prof = lesson.head_profile(w)
    merged = lesson.merge_heads(ck.model, r.trace, "encoder.0.self_attn")
    n_h = w.shape[0]
    heads = [f"head {h}" for h in range(n_h)]
    return Step("5 · Multi-head attention",
                f"The layer runs {n_h} heads side by side, each with its own W_Q, W_K, W_V, so each can look for "
                "something different — a neighbour, the same word, the noun a pronoun stands for. Their outputs "
                "are concatenated and mixed back to d_model by W_O.",
                f"{VASWANI}, sec. 3.2.2 and fig. 2 (right) · further reading: {SOURCES['wiki']}, “Multiheaded attention”",
                [("fig", figures.grid(w[None], r.src_tokens, r.src_tokens, title="Layer 0: every head", **c.style())),
                 ("fig", figures.grouped_bars({"entropy (nats, low = sharp)": prof["entropy"],
                                               "mean distance |i − j|": prof["distance"]}, heads,
                                              title="What differs between the heads", x_title="head",
                                              y_title="nats / positions", **c.style())),
                 ("md", f"Concat(head₁…head_{n_h}) is {tuple(merged['concat'].shape)}; × W_Oᵀ "
                        f"{tuple(merged['W_O'].shape)} gives {tuple(merged['out'].shape)}, equal to the model's "
                        f"sublayer output to {merged['error']:.1e}.")])


def layers_step(c: Context) -> Step:
    r, ck = c.run, c.ck
    an = lesson.add_and_norm(ck.model, r.trace, "encoder", 0)
    stages = layers.residual_stages(r.trace, "encoder")
    norms = layers.stage_norms(stages)
    summary = layers.sublayer_summary(r.trace, "encoder")
    n_l = layers.n_layers(r.trace, "encoder")
    how = ("x + Sublayer(LayerNorm(x)) (pre-LN)" if an["pre_ln"] else "LayerNorm(x + Sublayer(x)) (post-LN, as "
           "in the paper)")
    return Step("6 · Residual, LayerNorm, feed-forward — and the stack",
                "Each sublayer's output is added to its input (the residual connection), then normalised. "
                "A feed-forward network, FFN(x) = max(0, xW₁ + b₁)W₂ + b₂, processes every token on its own. "
                "Stacking layers lets the representation of each token change step by step.",
                f"{VASWANI}, sec. 3.1 and 3.3, eq. 2; {SOURCES['he']} (residual); {SOURCES['ba']}; {SOURCES['xiong']} "
                f"(pre- vs post-LN) · further reading: {SOURCES['seita']}",
                [("md", f"Layer 0, after attention: {how}, recomputed by hand to {an['error']:.1e}."),
                 ("fig", figures.matrix(norms, r.src_tokens, [s for s, _ in stages], title="Length of every token's "
                                        "vector along the residual stream", x_title="token", y_title="stage",
                                        value_name="‖x‖", **c.style())),
                 ("fig", figures.grouped_bars(summary, [f"layer {i}" for i in range(n_l)],
                                              title="What each sublayer adds, relative to the stream it reads",
                                              x_title="encoder layer", y_title="‖added‖ / ‖input‖", **c.style()))])


def decoder_step(c: Context) -> Step:
    r = c.run
    tr, st_ = r.trace, c.style()
    mask = tr["decoder.0.self_attn.mask"][0, 0] if "decoder.0.self_attn.mask" in tr else None
    blocks = []
    if mask is not None:
        blocks.append(("fig", figures.mask_map(mask, r.tgt_tokens, r.tgt_tokens, **st_,
                                               title=f"Causal mask M: {nobreak('0 = may look,')} "
                                                     f"{nobreak('−∞ = the future')}")))
    blocks.append(("fig", figures.heatmap(tr.attention("decoder", 0)[0].mean(0), r.tgt_tokens, r.tgt_tokens,
                                          title=f"{nobreak('Decoder self-attention, layer 0:')} "
                                                f"{nobreak('nothing above the diagonal')}", **st_)))
    last = tr.n_layers("cross") - 1
    blocks.append(("fig", figures.heatmap(tr.attention("cross", last)[0].mean(0), r.tgt_tokens, r.src_tokens,
                                          title=f"{nobreak(f'Cross-attention, layer {last}:')} "
                                                f"{nobreak('what each output word reads')}", **st_)))
    blocks.append(("md", "Both maps are the mean of their layer's heads. In the second, each row is an output word "
                         "and each column an English token."))
    return Step("7 · The decoder: masked self-attention and cross-attention",
                "The decoder writes the translation one word at a time, so in training it must not peek at the "
                "words it is about to predict: the mask adds −∞ to every future position, and softmax turns that "
                "into a weight of exactly 0. Cross-attention then lets every output word read the encoder's "
                "vectors of the English sentence.",
                f"{VASWANI}, sec. 3.1 (decoder masking), 3.2.3 (encoder-decoder attention), fig. 1 · further reading: "
                f"{SOURCES['starke']}, sec. 2 (‘cheating’); {SOURCES['cse589']}, fig. 4; {SOURCES['wiki']}, masked "
                f"attention with M", blocks)


def output_step(c: Context) -> Step:
    r, ck = c.run, c.ck
    tok = ck.tokenizer
    src = r.src_ids
    res = generate(ck.model, src=src, max_new=max_positions(ck.model) - 1)
    rows, marked = [], False
    for n, s in enumerate(res.steps):
        names = candidate_names(tok, [i for i, _ in s.top[:3]])  # look-alikes keep their word-start mark ▁
        marked |= any(x.startswith("▁") and len(x) > 1 for x in names)
        top = ", ".join(f"{name} {p:.2f}" for name, (_, p) in zip(names, s.top[:3]))
        rows.append({"step": n + 1, "chosen": tok.display([s.chosen])[0], "probability": round(float(s.probs[s.chosen]), 4),
                     "top 3": top})
    first = res.steps[0]
    blocks = [("fig", figures.bars([p for _, p in first.top], candidate_names(tok, [i for i, _ in first.top]),
                                   title="Step 1: softmax over the whole vocabulary (top 10 shown)",
                                   x_title="candidate token", y_title="probability", highlight=0, **c.style())),
              ("table", rows)]
    if marked:
        blocks.append(("md", "Where two candidates look alike, ▁ marks the one that starts a new word; the other "
                             "continues the word before it. They are different tokens of the vocabulary."))
    blocks.append(("md", f"**Translation:** {md(tok.decode(res.ids))}" if not r.outside else
                   f"**Output** — **{md(r.outside_label)}** (unknown to {md(c.name)}: "
                   f"{md(', '.join(r.coverage['unknown_words'][:12]))}): {md(tok.decode(res.ids))}"))
    demos = [("en-de", ["The trophy doesn't fit in the suitcase because it is too big."]),
             ("en-fr", ["The animal didn't cross the street because it was too tired.",
                        "The animal didn't cross the street because it was too wide."])]
    for model, sentences in demos:
        try:
            out = translate_all(load_model(model), sentences)
        except ValueError:
            continue
        blocks += [("md", f"`{model}`: {md(s)} → **{md(o)}**") for s, o in zip(sentences, out)]
    return Step("8 · Output: linear + softmax, one word at a time",
                "The decoder's last vector is multiplied by the vocabulary matrix and softmax gives a probability "
                "for every word. Greedy decoding takes the most likely one, appends it to the decoder's input and "
                f"goes again until the end token {tok.display([EOS])[0]}.",
                f"{VASWANI}, sec. 3.4 (linear + softmax) and fig. 1 · further reading: {SOURCES['starke']}, sec. 2 "
                f"(‘I am happy’ → ‘Ich bin froh’)", blocks)


def patching_blocks(c: Context, pair) -> list:
    """The payoff's lead: which heads carry the decision for this pair (activation patching), or nothing when the
    model is no translator or the pair cannot be patched."""
    if coref.language(c.ck) is None:
        return []
    res, sentences = patch_view.pair_effects(c.name, pair[0].text, pair[1].text)
    if sentences is None:
        return [("md", f"Patching cannot be run on this pair: {md(res)}")]
    return [("md", "**Which heads carry the decision?** Run sentence A, but take one head's output from sentence B, "
                   "and measure how far the choice between the two pronouns moves — for every head, both ways "
                   "(activation patching, Vig et al. 2020). " + patch_view.decision_text(res, *sentences)),  # md: trusted
            ("fig", patch_view.effect_figure(res, title="Share of the decision each head moves (↻ = flips it alone)",
                                             **c.style())),
            ("md", patch_view.top_text(res) + " " + patch_view.carry_text(res)),  # md: trusted
            ("md", "**What attention weights show for the same pair.** Attention is a clue, not proof:")]


def payoff_step(c: Context) -> Step:
    typed = coref_view.typed_pair(c.text, c.name)  # the class's sentence and its partner, or the nearest pair, said
    pair = typed.pair
    kind = "cross" if "cross" in coref.kinds_for(c.ck) else "self"
    lks = [coref_view.links_for(c.name, it, kind) for it in pair]
    title = "9 · The payoff: what does “it” refer to?"
    source = (f"{VASWANI}, fig. 4 (two layer-5 heads resolve the anaphor “its”); Levesque, Davis & Morgenstern "
              "(2012), *The Winograd Schema Challenge*; Vig et al. (2020), *Investigating Gender Bias in Language "
              "Models Using Causal Mediation Analysis* (patching a head) · further reading: "
              f"{SOURCES['cse589']}, fig. 9 (“it” → animal / street)")
    instead = [("md", ("" if typed.how == "nearest" else "**Your sentence.** ") + md(typed.note))]
    if lks[0] is None or lks[1] is None:
        return Step(title, "This model does not see “it” and both nouns as tokens of these sentences.", source)
    cands = pair[0].candidates
    resolving = coref.resolving_heads(lks, list(pair))
    zmax = coref_view.shared_range(lks)  # both sentences on one colour scale
    blocks = instead + patching_blocks(c, pair)
    for name, it, lk in zip(("Sentence A", "Sentence B"), pair, lks):
        blocks += [("fig", coref_view.grid_figure(lk, cands, it.antecedent, title=name, resolving=resolving, zmax=zmax,
                                                  **c.style())),
                   ("md", f"{md(name)}: “{md(it.text)}”")]
    board = coref_view.scoreboard(c.name, kind)
    k_off, off = coref_view.fewest_heads_to_change(c.name, list(pair), board)
    effect = coref_view.ablation_effect(c.name, list(pair), off)
    lang, either, slash = coref_view.target_words(c.ck)
    where = (f"cross-attention from the {lang} word just before {slash} to the English nouns" if kind == "cross"
             else "self-attention from “it” to the nouns")
    n_both = sum(map(sum, resolving))
    pair_heads = (f"✓ marks the {n_both} head{'s' if n_both > 1 else ''} that pick the right noun in **both** "
                  f"sentences, by at least {coref.PICK_MARGIN:.2f} more attention weight than the other noun"
                  if n_both else "no head picks the right noun in **both** sentences of this pair by at least "
                  f"{coref.PICK_MARGIN:.2f} more attention weight than the other noun")
    blocks.append(("md", f"Read here: {where}. {pair_heads}; across the probe set, the best head picks the "
                         f"antecedent on {board['best'][0]['share']:.0%} of {board['n']} sentences."))
    n_ranked = len(board.get("ranked") or board["best"])
    heads = coref_view.heads_text(off)
    forced = f"feed the decoder the right {lang} up to the pronoun (teacher forcing)"
    if not any(r["decided right"] for r in effect["rows"]):
        switch = (f"**Switch the best heads off** and {forced}: with every head on, the model does not prefer the "
                  "right pronoun in either sentence, so there is no choice to flip.")
    elif k_off is None:
        switch = (f"**Switch off all {n_ranked} of them** ({heads}) and {forced}: the right pronoun stays the likelier "
                  f"in both sentences, so this model decides {slash} somewhere else.")
    else:  # a flip counts only where the choice itself flips, not where the words before the pronoun broke
        switch = (f"**Switch off the best heads one more at a time**, in the probe's order, and {forced}: the choice "
                  f"first flips with **{k_off} of {n_ranked}** off ({heads}). {coref_view.flip_text(effect)}"
                  + (" The few heads whose attention points at the noun are not enough: the decision is spread over "
                     "many heads." if k_off > 4 else ""))
    blocks.append(("md", f"{switch} {coref_view.greedy_text(effect)} Translated again, greedily, with those heads "
                         "off:"))
    blocks.append(("table", [{"sentence": r["sentence"], "translation": r["translation"],
                              "heads off": r["translation, heads off"],
                              "p(right pronoun)": r["p(ref pronoun)"],
                              "p(right pronoun), heads off": r["p(ref pronoun), heads off"],
                              "p(other pronoun), heads off": r["p(other pronoun), heads off"]}
                             for r in effect["rows"]]))
    return Step(title,
                f"Change one word — tired or wide — and “it” changes referent, so {lang} needs {either}. Which "
                "heads carry that decision? Patching a head's output from one sentence into the other answers it "
                "causally; attention weights and switching heads off come after, as clues and as a second test.",
                source, blocks)


LM = "lm"  # the bundled language model (GPT-style, real English) the last step reads the sentence with


def induction_step(c: Context) -> Step:
    """The class's sentence read twice by the language model: its best induction head on this sentence, where that
    head looks, and the loss per token of each copy (Olsson et al. 2022), computed live."""
    title = "10 · A language model copies: the induction head"
    source = ("Olsson et al. (2022), *In-context Learning and Induction Heads*; Radford et al. (2018), *Improving "
              "Language Understanding by Generative Pre-Training* (the decoder-only model) · more on the Heads page")
    if LM not in registry.available():
        return Step(title, f"This server has no language model {LM!r}: the Heads page names the models that have "
                           "induction heads.", source)
    ck = load_model(LM)
    bos = find_heads.framing(ck)["bos"]
    ids = ck.tokenizer.encode(c.text)[:(max_positions(ck.model) - (bos is not None)) // 2]
    if len(ids) < 2:
        return Step(title, "The sentence needs at least two tokens for the language model to copy.", source)
    r = find_heads.copy_twice(ck.model, ids, bos=bos)
    grid = r["induction"]
    layer, head = max(((li, hi) for li in range(len(grid)) for hi in range(len(grid[0]))),
                      key=lambda lh: grid[lh[0]][lh[1]])
    first, second = r["first_copy"], r["second_copy"]
    tokens = ck.tokenizer.display(([bos] if bos is not None else []) + ids + ids)
    name = lm_heads_view.head_name(layer, head)
    return Step(title,
                "The translator reads one sentence and writes another. A GPT-style language model has only the "
                "masked self-attention stack: it predicts the next token of the text it reads. Give it the class's "
                "sentence twice. In the second copy every token can be predicted by copying — and models trained "
                "on enough text grow a head for exactly that: an **induction head** attends from a token to the "
                "token that followed it last time, with the help of a previous-token head in an earlier layer.",
                source,
                [("fig", lm_heads_view.attention_figure(r["weights"][layer, head], tokens, layer, head,
                                                        "your sentence, twice", **c.style())),
                 ("md", f"**{md(name)}** of `{LM}` (its best induction head on this sentence) puts **{grid[layer][head]:.0%}"
                        "** of its attention, from each token of the second copy, on the token that followed it in "
                        f"the first copy: the stripe {r['length'] - 1} places left of the diagonal, lower right. "
                        f"The next-token loss falls from **{first['mean']:.2f}** nats a token on the first copy to "
                        f"**{second['mean']:.2f}** on the second."),
                 ("fig", figures.lines({"first copy": first["per_token"], "second copy": second["per_token"]},
                                       range(2, r["length"] + 1),
                                       title="Next-token loss on each token " + nobreak("of the sentence"),
                                       x_title="token of the sentence (its position in a copy)",
                                       y_title="loss (nats)", **c.style()))])


STEPS = [tokens_step, embedding_step, positional_step, one_head_step, multi_head_step, layers_step, decoder_step,
         output_step, payoff_step, induction_step]


def build(c: Context, index: int, **kw) -> Step:
    if not 0 <= index < len(STEPS):
        raise ValueError(f"the lesson has steps 1–{len(STEPS)}")
    return STEPS[index](c, **kw)


# --------------------------------------------------------------------------- handout
def _md_html(text: str) -> str:
    """The little markdown the steps use (bold, italics, code) as safe HTML; everything else is escaped."""
    # a backslash-escaped character (app.text.md: text a user or a model produced) becomes a character reference,
    # so neither the markup below nor the browser reads it as markup
    parts = re.split(r"(\\.)", text)
    out = "".join(f"&#{ord(p[1])};" if i % 2 else html.escape(p, quote=False) for i, p in enumerate(parts))
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    out = re.sub(r"\*(.+?)\*", r"<i>\1</i>", out)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", out)


def _table_html(rows: list[dict]) -> str:
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(str(k))}</th>" for k in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{html.escape('' if v is None else str(v))}</td>" for v in r.values())
                   + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


HANDOUT_SCRIPT = """
function savePngs() {
  document.querySelectorAll('.plotly-graph-div').forEach(function (div, i) {
    Plotly.downloadImage(div, {format: 'png', filename: 'lesson-figure-' + (i + 1), scale: 2});
  });
}
"""


def handout(c: Context, steps: list[Step] | None = None) -> str:
    """Every step as one self-contained HTML page (plotly.js inlined once, no network): print it to PDF,
    or press the button to save every figure as a PNG."""
    import plotly.io as pio
    steps = steps if steps is not None else [build(c, i) for i in range(len(STEPS))]
    parts, first = [], True
    for s in steps:
        parts.append(f"<section><h2>{_md_html(s.title)}</h2><p>{_md_html(s.text)}</p>"
                     f"<p class='src'>Source: {_md_html(s.source)}</p>")
        for kind, value in s.blocks:
            if kind == "md":
                parts.append(f"<p>{_md_html(value)}</p>")
            elif kind == "table":
                parts.append(_table_html(value))
            else:
                parts.append(pio.to_html(value, full_html=False, include_plotlyjs=first,
                                         config={"displaylogo": False}))
                first = False
        parts.append("</section>")
    title = f"Attention Lab lesson — {html.escape(c.text)} ({html.escape(c.name)})"
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'>"
            "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; script-src 'unsafe-inline' "
            "'unsafe-eval'; style-src 'unsafe-inline'; img-src data: blob:\">"
            f"<title>{title}</title><style>body{{font-family:sans-serif;max-width:1100px;margin:auto}}"
            "section{page-break-after:always}table{border-collapse:collapse}td,th{border:1px solid #999;"
            "padding:2px 6px}.src{color:#555;font-size:90%}@media print{button{display:none}}</style></head><body>"
            f"<h1>{title}</h1><button onclick='savePngs()'>Save every figure as PNG</button> "
            "<button onclick='window.print()'>Print / save as PDF</button>"
            + "".join(parts) + f"<script>{HANDOUT_SCRIPT}</script></body></html>")


def lesson_model(view_name: str, kind: str, available: list[str]) -> str | None:
    """The lesson needs a translation model: the current one if it is, else ``en-fr`` if present."""
    if kind == "encoder-decoder":
        return view_name
    return "en-fr" if "en-fr" in available else None

