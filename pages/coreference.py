"""Coreference probe: which heads link "it" to its antecedent, and does switching them off change il/elle?"""
import streamlit as st

from app import coref_view as cv
from app.figures import label
from app.shell import load_model, models
from core.coref import ProbeItem, pronoun_probabilities
from core.data.translation import translate

st.title("Coreference probe")
st.markdown("“The animal didn't cross the street because **it** was too *tired*” — *it* is the animal. "
            "Change one word, “too *wide*”, and *it* is the street. A translator into French must know: "
            "*il* (l'animal) or *elle* (la rue). Which attention heads link *it* to the right noun?")
view = st.session_state.get("view")
if view is None:
    st.stop()
pairs = cv.probe_items()
choice = st.selectbox("Minimal pair", range(len(pairs)), format_func=lambda i: f"{pairs[i][0].text} / …{pairs[i][1].text.split()[-1]}")
a = st.text_input("Sentence A", pairs[choice][0].text, key=f"coref_a_{choice}")
b = st.text_input("Sentence B", pairs[choice][1].text, key=f"coref_b_{choice}")
items = [cv.item_for(a), cv.item_for(b)]
if None in items or items[0].candidates != items[1].candidates:
    st.warning("These sentences are outside the built-in grammar, so the antecedent cannot be read off automatically. "
               "Use sentences of the form “The ⟨animal⟩ didn't cross the ⟨place⟩ because it was too ⟨adjective⟩.”")
    st.stop()

st.subheader(f"Attention from “it”, model {view.name}")
lks = [cv.links_for(view.name, it) for it in items]
if lks[0] is None or lks[1] is None:
    st.info(f"The model {view.name} does not see “it” and both candidates as tokens of these sentences.")
    st.stop()
cands = items[0].candidates
want = [cands.index(it.antecedent) for it in items]
right = [(lk.argmax(-1) == w) for lk, w in zip(lks, want)]
resolving = (right[0] & right[1]).tolist()
cols = st.columns(2)
for col, it, lk in zip(cols, items, lks):
    col.plotly_chart(cv.grid_figure(lk, cands, it.antecedent, title=label(it.text), present=view.present,
                                    dark=view.dark, resolving=resolving), key=f"grid_{it.text}")
n_res = sum(map(sum, resolving))
st.caption(f"Blue: “it” attends more to {cands[0]}; red: more to {cands[1]}. ✓ = the head picks the right noun in "
           f"both sentences ({n_res} of {len(resolving) * len(resolving[0])} heads).")

st.subheader("Scoreboard over the probe set")
names = [m for m in models() if load_model(m).model.cfg.kind != "decoder-only" and m not in ("copy", "reverse")]
compare = st.multiselect("Models", names, default=[m for m in ("en-fr", "minilm") if m in names] or names[:1])
for col, name in zip(st.columns(max(1, len(compare))), compare):
    board = cv.scoreboard(name)
    if board["share"] is None:
        col.info(f"{name}: no probe sentence could be read.")
        continue
    col.plotly_chart(cv.share_figure(board["share"], title=f"{name}: share of {board['n']} sentences right",
                                     present=view.present, dark=view.dark), key=f"share_{name}")
    col.markdown("Best heads: " + ", ".join(f"L{b['layer']}H{b['head']} {b['share']:.0%}" for b in board["best"][:3]))
    col.markdown("Rollout, per layer: " + ", ".join(f"L{i} {float(s):.0%}" for i, s in enumerate(board["rollout_share"])))
    col.caption("Chance is about 50 % (two candidates).")

if view.kind == "encoder-decoder" and view.name.startswith("en-fr"):
    st.subheader("Evidence: switch the best heads off")
    board = cv.scoreboard(view.name)
    k = st.slider("Heads to switch off (best first)", 0, 8, 2)
    off = {}
    for b in board["best"][:k]:
        off.setdefault(f"encoder.{b['layer']}.self_attn", []).append(b["head"])
    rows = []
    for it in items:
        ref = translate(it.text, "fr")
        before = pronoun_probabilities(view.ck, it.text, ref, ("il", "elle"))
        after = pronoun_probabilities(view.ck, it.text, ref, ("il", "elle"), ablate=off or None)
        rows.append({"sentence": it.text, "reference": ref, "p(il) before": before.get("il"),
                     "p(elle) before": before.get("elle"), "p(il) after": after.get("il"),
                     "p(elle) after": after.get("elle")})
    st.dataframe(rows, hide_index=True)
    st.caption(f"Switched off: {', '.join(f'{n} heads {h}' for n, h in off.items()) or 'nothing'}. Pronoun "
               "probabilities are read with the reference translation as decoder input up to the pronoun.")

with st.expander("What attention does and does not prove"):
    st.markdown(
        "- A head that puts weight on *animal* is **correlated** with the right answer; it is not proof the model "
        "uses it. Information also flows through the residual stream and other heads (rollout tries to account "
        "for that, imperfectly).\n"
        "- Ablation is stronger evidence: if switching heads off flips *il*/*elle*, the model depends on them. "
        "If nothing changes, the information is redundant — other heads carry it too.\n"
        "- The pretrained MiniLM encoder was never trained to translate; whether its heads track coreference is "
        "an empirical question this page answers on the probe set, not an assumption.")
