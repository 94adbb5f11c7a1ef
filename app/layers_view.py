"""The Layer outputs page's "Same word, two meanings" section: one word followed through two sentences, stage by
stage, on the sidebar's model (:func:`core.probes.layers.same_word`)."""
from __future__ import annotations

import streamlit as st

from app import figures
from app.cache import bounded
from app.shell import text_box
from app.text import code, md, quoted
from core.io import pretrained
from core.io.tokenizer import normalize_text
from core.probes import layers

# sentence A, sentence B (the same word in another meaning), sentence C (the meaning of A: a control)
DEFAULTS = ("She sat by the river bank.", "He put his money in the bank.",
            "The boat reached the muddy bank of the river.")
LIMIT = 300  # characters per sentence box
# English function words: they have no second meaning to tell apart, so the shared word picked first is another one
FUNCTION_WORDS = frozenset(
    "a an the and or but nor if so than then as of in on at to by for from with into onto over under up down out off "
    "about after before near this that these those it its he him his she her hers they them their we us our you your "
    "i me my is are was were be been being am do does did has have had will would shall should can could may might "
    "must not no there here what which who whom whose when where why how all any each some such".split())


def _model(name: str):
    from app.shell import load_model
    return load_model(name)


@bounded
def same_word(name: str, text_a: str, text_b: str, word: str, other: str | None, text_c: str | None) -> dict:
    """:func:`core.probes.layers.same_word` on model ``name``, cached per model and inputs."""
    ck = _model(name)
    return layers.same_word(ck.model, ck.tokenizer, text_a, text_b, word, other, text_c)


def _words(tok, text: str) -> list[str]:
    """The words of ``text`` with a letter or digit, lower case, each once, in order."""
    out = []
    for w, _ in layers.sentence_words(tok, text):
        if any(ch.isalnum() for ch in w) and w.casefold() not in out:
            out.append(w.casefold())
    return out


def _pieces(pieces: list[str]) -> str:
    return " · ".join(code(p) for p in pieces)


def default_word(shared: list[str]) -> str:
    """The shared word picked first: the longest that is not a function word (:data:`FUNCTION_WORDS`), else the
    longest."""
    content = [w for w in shared if w not in FUNCTION_WORDS]
    return max(content or shared, key=len)


def section(view, number: int, **P) -> None:
    """Draw the section: three sentence boxes, the shared word and a contrast word, the cosine per stage, a reading."""
    st.header(f"{number}. Same word, two meanings")
    st.markdown("A *static* embedding gives a word one vector, whatever the sentence. A Transformer's layers mix "
                "each token with its context, so the same word ends up with different vectors in different sentences. "
                "Below: the cosine similarity of one word's vector in two sentences, at every stage of the model.")
    if view.name != "minilm" and pretrained.installed("minilm"):
        st.caption("Best read with **minilm** (pick it in the sidebar): a pretrained BERT-architecture encoder that "
                   "knows real English. The small shipped models know fewer words.")
    c1, c2, c3 = st.columns(3)
    text_a = text_box("Sentence A", DEFAULTS[0], key="sw_a", limit=LIMIT, where=c1)
    text_b = text_box("Sentence B: the same word, another meaning", DEFAULTS[1], key="sw_b", limit=LIMIT, where=c2)
    text_c = text_box("Sentence C (optional): the same word, the meaning of A", DEFAULTS[2], key="sw_c", limit=LIMIT,
                      where=c3)
    if not normalize_text(text_a) or not normalize_text(text_b):
        st.info("Type two sentences, A and B, that share a word.")
        return
    tok = view.ck.tokenizer
    shared = layers.shared_words(tok, text_a, text_b)
    if not shared:
        st.info("Sentences A and B share no word. Type two sentences with one word in common, e.g. “bank”.")
        return
    c1, c2 = st.columns(2)
    word = c1.selectbox("Shared word", shared, index=shared.index(default_word(shared)),
                        format_func=lambda w: f"“{md(w)}”")
    function = word in FUNCTION_WORDS
    if function:
        st.caption(f"“{md(word)}” is a function word: it has one job, not two meanings, so sentences A and B only "
                   "give it two contexts. For two meanings, share a word like “bank”.")
    others = [w for w in _words(tok, text_a) if w != word]
    other = c2.selectbox("Another word of sentence A, for contrast", others or [None],
                         format_func=lambda w: "none" if w is None else f"“{md(w)}”")
    control = text_c if normalize_text(text_c) else None
    if control and word not in _words(tok, control):
        st.info(f"Sentence C has no “{md(word)}”, so the control line is left out.")
        control = None
    try:
        r = same_word(view.name, text_a, text_b, word, other, control)
    except ValueError as e:
        st.info(md(e))
        return
    blind = word in r["unknown"]  # the word itself is [UNK]: its numbers are those of the [UNK] vector
    if r["unknown"]:
        st.warning(f"{md(view.name)} reads " + " and ".join(f"“{md(w)}”" for w in r["unknown"]) + " as [UNK], a "
                   "token it never learned: every unknown word shares that one vector, so these numbers say nothing "
                   "about the word. Pick another model or other sentences.")
    split = [(k, r[f"pieces_{k}"]) for k in ("a", "other") if r.get(f"pieces_{k}") and len(r[f"pieces_{k}"]) > 1]
    for k, pieces in split:
        st.caption(f"{md(view.name)} cuts “{md(word if k == 'a' else other)}” into {len(pieces)} tokens, "
                   f"{_pieces(pieces)}: its vector at each stage is the mean of theirs.")
    series = {f"“{word}” in A vs in B": r["same"]}
    if r["control"] is not None:
        series[f"“{word}” in A vs in C" + ("" if function else " (same meaning)")] = r["control"]
    if r["other"] is not None:
        series[f"“{word}” vs “{other}”, both in A"] = r["other"]
    st.plotly_chart(figures.lines(series, r["stages"], x_title="stage", y_title="cosine similarity",
                                  title=f"“{figures.label(quoted(word, 24))}”: cosine similarity by stage",
                                  **P), key="same_word")
    same, stages = r["same"], r["stages"]
    c1, c2, c3 = st.columns(3)
    c1.metric("A vs B, token embedding", f"{same[0]:.4f}")
    c2.metric(f"A vs B, after {stages[-1]}", f"{same[-1]:.3f}")
    low = min(range(len(same)), key=same.__getitem__)
    c3.metric("A vs B, lowest", f"{same[low]:.3f}", help=f"at {stages[low]}")
    cfg = view.ck.model.cfg
    if r["ids_a"] == r["ids_b"]:
        told = [f"The token embedding is one row of the embedding table, the same in both sentences: cosine "
                f"{same[0]:.4f}. That is a static vector."]
    else:
        told = [f"{md(view.name)} cuts the word differently in A ({_pieces(r['pieces_a'])}) and in B "
                f"({_pieces(r['pieces_b'])}), so even its token embeddings differ: cosine {same[0]:.4f}."]
    pos_a, pos_b = r["index_a"][0], r["index_b"][0]
    if cfg.pos_encoding in ("learned", "sinusoidal"):
        told.append(f"“+ position” adds the vector of its position ({pos_a} in A, {pos_b} in B"
                    + ("; for this BERT-style model also a token-type vector and a LayerNorm" if cfg.embedding_norm
                       else "") + f"): cosine {same[1]:.3f}.")
    else:
        told.append(f"This model adds no position vector ({cfg.pos_encoding}: position acts inside attention), so "
                    "“+ position” equals the token embedding.")
    told.append(f"After {stages[-1]}, the cosine is {same[-1]:.3f}"
                + (": the context has moved the vector." if r["ids_a"] == r["ids_b"] and not blind else "."))
    if r["stack"] == "decoder":
        told.append("This model reads left to right: a word's vector sees only the words before it.")
    st.markdown(" ".join(told))
    if r["other"] is not None:
        st.caption(f"Contrast: “{md(word)}” and “{md(other)}” in the same sentence have cosine {r['other'][0]:.3f} "
                   f"as token embeddings and {r['other'][-1]:.3f} after {stages[-1]}. Compare with "
                   f"{same[-1]:.3f} for “{md(word)}” in two different sentences.")
    if r["control"] is not None:
        ctl = r["control"]
        layer_stages = range(2, len(stages))
        closer = sum(ctl[s] > same[s] for s in layer_stages)
        measured = (f"The cosine A vs C is higher than A vs B after {closer} of {len(layer_stages)} layers; after "
                    f"{stages[-1]} it is {ctl[-1]:.3f} against {same[-1]:.3f}")
        if blind:
            st.markdown(f"**Control.** {measured}. These are cosines of the [UNK] vector in three contexts: they say "
                        "nothing about the meaning of the word.")
        elif function:
            st.markdown(f"**Control.** {measured}. A function word has no second meaning to tell apart: sentence C "
                        "is only a third context.")
        else:
            verdict = (f"so, at the last layer, the same meaning is closer, by {ctl[-1] - same[-1]:.3f}"
                       if ctl[-1] > same[-1] else
                       "so, at the last layer, the same meaning is **not** closer: on these sentences this "
                       "measurement does not show the model telling the two meanings apart")
            st.markdown(f"**Control.** In sentence C the word has the meaning of A. {measured}, {verdict}. Any change "
                        "of context moves a vector; a lower cosine alone does not prove that the model separates "
                        "meanings.")
