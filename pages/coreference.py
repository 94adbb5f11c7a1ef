"""Coreference probe: which heads link "it" to its antecedent, and does switching them off change il/elle?"""
import streamlit as st
import torch

from app import coref_view as cv
from app import coverage_view
from app import patch_view as pv
from app.figures import label
from app.shell import model_load_error, note_broken, page_view, text_box, usable_models
from app.text import md
from app.theme import nobreak
from core.probes import coref
from core.inference import coverage

st.title("Coreference probe")
st.markdown("“The animal didn't cross the street because **it** was too *tired*” — *it* is the animal. "
            "Change one word, “too *wide*”, and *it* is the street. A translator into French must know: "
            "*il* (l'animal) or *elle* (la rue). Which attention heads link *it* to the right noun?")
view = page_view()
typed = cv.typed_pair(view.text, view.name)  # the typed sentence's pair, built, or the nearest (said why)
entries = cv.pair_entries(view.name)  # the classroom's pairs first, then the generated probe set
yours = typed.how != "nearest"
labels = ([f"Your sentence: {typed.pair[0].text} / …{cv.cue(typed.pair[0].text, typed.pair[1].text)}"] if yours
          else []) + [text for text, _ in entries]
pairs = ([typed.pair] if yours else []) + [pair for _, pair in entries]
choice = st.selectbox("Minimal pair", range(len(pairs)),
                      index=0 if yours else next(i for i, p in enumerate(pairs) if p == typed.pair),
                      format_func=labels.__getitem__, label_visibility="collapsed" if view.present else "visible")
first, second = pairs[choice]
# on a projector the two editable sentences fold away (the pair above names them), so the first chart is on screen
with st.expander("Edit sentence A and B") if view.present else st.container():
    a = text_box("Sentence A", first.text, key=f"coref_a_{choice}_{first.text}")
    b = text_box("Sentence B", second.text, key=f"coref_b_{choice}_{first.text}")
if not yours:
    st.info(md(typed.note))  # the typed sentence is not what these panels show: said, with the reason
elif choice == 0:
    st.caption(md(typed.note))
if blank := [n for n, s in (("Sentence A", a), ("Sentence B", b)) if not s.strip()]:
    st.info(f"{' and '.join(blank)} {'is' if len(blank) == 1 else 'are'} empty: type a sentence, or pick a minimal "
            "pair above.")
    st.stop()
coverage_view.notices(list(dict.fromkeys(n for s in (a, b) for n in (coverage.language_notice(view.ck, s, view.name),
                                                                     coverage.special_notice(view.ck, s, view.name))
                                         if n)))
unknown = [w for s in (a, b) for w in (coverage.for_checkpoint(view.ck, s) or {}).get("unknown_words", [])]
if unknown:
    coverage_view.notices([f"Unknown to {view.name}: {', '.join(dict.fromkeys(unknown))}. These sentences are "
                           f"outside what {view.name} was trained on, so which noun its heads link “it” to would "
                           "mean nothing here" + (" (and its output would not be a translation)"
                                                  if coverage.is_translation(view.ck) else "")
                           + ". Pick a minimal pair above, or write sentences in words this model knows."])
    st.stop()
patched = None  # the patching result of this pair: the ablation below switches off the heads it names
if pv.language_ok(view):
    st.subheader("Which heads carry the decision? Activation patching")
    how = ("Run sentence A, but take **one head's output from sentence B**, and watch how far the choice between the "
           "two pronouns moves (Vig et al. 2020). A head whose patch moves it is a head that carries the decision — "
           "causal evidence, not a correlation.")
    if not view.present:
        st.markdown(how)
    patched = pv.draw_pair(view, a, b)
    if view.present:  # after the chart on a projector: the first screen shows the chart
        st.markdown(how)
items = [cv.item_for(a, view.name), cv.item_for(b, view.name)]
if None in items or items[0].candidates != items[1].candidates:
    st.warning("These sentences are outside the built-in grammar, so the antecedent cannot be read off automatically. "
               "Use sentences of the form “The ⟨animal⟩ didn't cross the ⟨place⟩ because it was too ⟨adjective⟩.”")
    st.stop()

kinds = coref.kinds_for(view.ck)
cands = items[0].candidates
if len(kinds) > 1:
    st.markdown("A translator can resolve *it* in two places: in the **encoder**, where “it” attends to the other "
                "English words, or in the **decoder**, where the position about to write *il*/*elle* looks back at "
                "the English sentence through **cross-attention**. Both are shown.")
for kind in kinds:
    title = cv.KIND_TITLES[kind] if view.kind != "decoder-only" else "Masked self-attention from “it”"
    st.subheader(f"{title} — model {md(view.name)}")
    lks = [cv.links_for(view.name, it, kind) for it in items]
    if lks[0] is None or lks[1] is None:
        what = ("“it” and both candidates as tokens" if kind == "self"
                else "both candidates, or its translation holds no back-referring pronoun")
        st.info(f"The model {md(view.name)} does not see {md(what)} in these sentences.")
        continue
    resolving = coref.resolving_heads(lks, items)
    zmax = cv.shared_range(lks)  # both panels on one scale: a negligible difference stays pale
    queries = [cv.cross_query(view.name, it) if kind == "cross" else None for it in items]
    cols = st.columns(2)
    for col, name, it, lk, q in zip(cols, ("Sentence A", "Sentence B"), items, lks, queries):
        col.plotly_chart(cv.grid_figure(lk, cands, it.antecedent, title=name, present=view.present, dark=view.dark,
                                        resolving=resolving, query="it" if q is None else q[0], zmax=zmax),
                         key=f"grid_{kind}_{it.text}")
        col.caption(f"{md(name)}: “{md(it.text)}”" + ("" if q is None else
                                                   f" · query: “{md(label(q[0]))}” → next “{md(label(q[1]))}”"))
    if view.kind == "decoder-only" and all(torch.allclose(lks[0][..., i], lks[1][..., i]) for i in range(2)):
        st.info(f"{md(view.name)} reads left to right: when it reaches “it”, the word that decides (the one "
                "sentence B changes) is still ahead of it, so its attention from “it” is the same in both sentences "
                "— by construction, not a finding about its heads. An encoder (en-fr, mlm, minilm) reads both ways.")
    n_res = sum(map(sum, resolving))
    source = "“it”" if kind == "self" else "the query position"
    st.caption(f"Red: {md(source)} attends more to {md(cands[0])}; blue: more to {md(cands[1])}. {cv.RESOLVES} "
               f"({n_res} of {len(resolving) * len(resolving[0])} heads).")
    if kind == "cross":
        lang, either, _ = cv.target_words(view.ck)
        st.caption(f"The decoder is fed the reference {lang} translation (teacher forcing). The query is the position "
                   f"whose next-token prediction is the pronoun — where the model decides {either}, before it has "
                   "seen the answer. Its attention goes to the English tokens.")

if pv.language_ok(view):
    st.subheader(f"Patching scoreboard over the probe set — {md(view.name)}")
    pv.draw_board(view)
st.subheader("Attention scoreboard over the probe set")
names = [m for m in usable_models(lambda m: m.cfg.kind != "decoder-only") if m not in ("copy", "reverse")]
note_broken()
# the model in the sidebar first (the ablation below uses its heads), then the classic comparison
first = [view.name] if view.name in names else []
compare = st.multiselect("Models", names, default=first + [m for m in ("en-fr", "minilm") if m in names
                                                             and m not in first][:2 - len(first)] or names[:1])
shown_boards = {}
for col, name in zip(st.columns(max(1, len(compare))), compare):
    if (why := model_load_error(name)) is not None:  # what only a load finds (non-finite weights): this column only
        col.error(f"{md(name)} cannot be loaded: {md(why)}")
        continue
    boards, complete = cv.scoreboards_shown(name, col)
    if boards is None:
        continue
    shown_boards[name] = boards
    shipped = cv.boards_source(name)
    col.caption(f"Read from {shipped} (this model's weights; the same for every visitor)." if shipped else
                "Computed on this server (no precomputed scoreboard ships with this model); cached afterwards.")
    for kind, board in boards.items():
        what = "encoder self-attention" if kind == "self" else "cross-attention"
        if board["share"] is None:
            col.info(f"{md(name)}, {md(what)}: no probe sentence could be read.")
            continue
        right = nobreak(f"share of {board['n']} right")  # never "share of 182⏎right"
        col.plotly_chart(cv.share_figure(board["share"], title=f"{name}, {what}: {right}",
                                         present=view.present, dark=view.dark), key=f"share_{name}_{kind}")
        top = board["best"][:3]
        named = ", ".join(f"L{b['layer']}H{b['head']} {b['share']:.0%}" for b in top)
        col.markdown(f"Best heads: {named}" if coref.beats_chance(top[0]["share"], board["n"]) else
                     f"No head picks the antecedent clearly more often than chance over {board['n']} sentences "
                     f"(the highest: {named}).")
        col.markdown("Rollout, per layer: " + ", ".join(f"L{i} {float(share):.0%}" for i, share in enumerate(board["rollout_share"])))
    col.caption("Chance is about 50 % (two candidates).")

st.subheader("Evidence: switch the best heads off")
lang = coref.language(view.ck)
boards = None
if view.kind != "encoder-decoder":
    st.info(f"{md(view.name)} ({view.kind}) writes no translation, so there is no il/elle to flip. "
            "Pick a translation model (en-fr) for the ablation test.")
elif lang is None:
    st.info(f"{md(view.name)} was not trained to translate English into French or German, so its output has no "
            "pronoun to flip.")
else:
    boards = shown_boards.get(view.name) if view.name in compare else cv.scoreboards_shown(view.name)[0]
if boards is not None and view.kind == "encoder-decoder" and lang is not None:
    cv.ablation_section(view, items, boards, patched, lang)

with st.expander("What attention does and does not prove"):
    st.markdown(
        "- A head that puts weight on *animal* is **correlated** with the right answer; it is not proof the model "
        "uses it. Information also flows through the residual stream and other heads (rollout tries to account "
        "for that, imperfectly).\n"
        "- *Where* you look matters: a translator need not resolve “it” in the encoder at all. It can wait until "
        "the decoder is about to write il/elle and look up the antecedent then, through cross-attention. Compare "
        "the two scoreboards of a translation model.\n"
        "- Ablation is stronger evidence: if switching heads off flips *il*/*elle*, the model depends on them. "
        "If nothing changes, the information is redundant — other heads carry it too. If the whole translation "
        "falls apart, the heads did more than coreference, and the flip says little.\n"
        "- The pretrained MiniLM encoder was never trained to translate; whether its heads track coreference is "
        "an empirical question this page answers on the probe set, not an assumption.")
