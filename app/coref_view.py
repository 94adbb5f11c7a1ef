"""Coreference probe: cached scoreboards, the pronoun→candidate grid figure, ablation evidence."""
from __future__ import annotations

import re
from dataclasses import dataclass

import plotly.graph_objects as go
import streamlit as st
import torch

from app import progress as progress_bar
from app.cache import bounded
from app.figures import DIVERGING, label, spec, style, symmetric_range, table
from app.shell import load_model
from app.text import md, quoted
from core.probes import coref, summaries
from core.data import broad, translation
from core.inference import coverage

# the language a translation model writes, and the pronouns that can translate "it" into it
TARGET_WORDS = {"fr": ("French", "il or elle", "il/elle"), "de": ("German", "er, sie or es", "er/sie/es")}


def target_words(ck) -> tuple[str, str, str]:
    """``(language, "il or elle", "il/elle")`` for the model's target language (French when it has none)."""
    return TARGET_WORDS.get(coref.language(ck) or "fr", TARGET_WORDS["fr"])


KIND_TITLES = {"self": "Encoder self-attention from “it”",
               "cross": "Cross-attention from the decoder position that writes the pronoun"}


def _corpus(model_name: str | None):
    """(corpus module, language) of a translation model; the tiny grammar in French for any other model."""
    ck = load_model(model_name) if model_name else None
    data = coref.corpus(ck) if ck is not None else None
    return (data, coref.language(ck)) if data is not None else (translation, "fr")


def probe_items(model_name: str | None = None) -> list[tuple[coref.ProbeItem, coref.ProbeItem]]:
    """The probe set: minimal pairs whose cue word flips the referent of "it" (a translator's own corpus's, drawn
    from its test split; the tiny grammar's for other models)."""
    data, lang = _corpus(model_name)
    return [tuple(coref.ProbeItem(p.src, p.antecedent, p.candidates) for p in pair)
            for pair in data.probe_pairs(lang)]


def own_pair(text: str, model_name: str | None = None) -> tuple[str, str] | None:
    """``text`` and its minimal twin (the cue word flipped, so "it" names the other noun), when the model's corpus
    parses it and has such a twin (the broad grammar's ``minimal_pair``); None otherwise."""
    data, lang = _corpus(model_name)
    make = getattr(data, "minimal_pair", None)
    pair = make(text.strip(), lang) if make is not None and text.strip() else None
    return None if pair is None else (text.strip(), pair[1].src)


def item_for(text: str, model_name: str | None = None) -> coref.ProbeItem | None:
    """Antecedent and candidates of a sentence the model's corpus covers (None when its grammar does not)."""
    data, lang = _corpus(model_name)
    try:
        p = data.pair_for(text, lang)
    except (ValueError, KeyError):
        return None
    if not p.antecedent or len(p.candidates) < 2:
        return None
    return coref.ProbeItem(p.src if p.src.rstrip(".") == text.strip().rstrip(".") else text, p.antecedent, p.candidates)


def cue(first: str, second: str) -> str:
    """The words of ``second`` that differ from ``first``, word by word ("wide" for the animal pair); the whole of
    ``second`` when they differ in length."""
    a, b = first.split(), second.split()
    if len(a) != len(b):
        return second
    return " ".join(y for x, y in zip(a, b) if x != y).rstrip(".")


def _is_pair(items) -> bool:
    """Both sentences parsed, the same two candidate nouns, a different antecedent: a minimal pair."""
    return None not in items and items[0].candidates == items[1].candidates and items[0].antecedent != items[1].antecedent


@bounded
def classroom_items(model_name: str | None = None) -> list[tuple[coref.ProbeItem, coref.ProbeItem]]:
    """The classroom's pairs (``core.probes.coref.CLASSROOM_PAIRS``: the Winograd classics first) that the model's
    grammar parses as minimal pairs; a model trained on the tiny grammar has none."""
    pairs = [(item_for(a, model_name), item_for(b, model_name)) for a, b in coref.CLASSROOM_PAIRS]
    return [p for p in pairs if _is_pair(p)]


@bounded
def pair_entries(model_name: str | None = None) -> list[tuple[str, tuple[coref.ProbeItem, coref.ProbeItem]]]:
    """``(label, pair)`` for the pair list: the classroom's pairs, then the generated probe set's (the test split's,
    in its own order, which the shipped patching scoreboard reads) that read as sense, each labelled by its first
    sentence and the word its second changes. Cached (the page and :func:`typed_pair` both read it on every run; do
    not mutate it)."""
    classroom = classroom_items(model_name)
    seen = {it.text for pair in classroom for it in pair}
    return ([(f"{a.text} / …{cue(a.text, b.text)}", (a, b)) for a, b in classroom]
            + [(f"generated: {a.text} / …{cue(a.text, b.text)}", (a, b)) for a, b in probe_items(model_name)
               if a.text not in seen and b.text not in seen and sensible_pair(a.text, b.text)])


def sensible_pair(a: str, b: str) -> bool:
    """Whether a generated pair may be listed: a reader's verdict where one exists
    (:func:`core.data.broad.pair_reads_sensibly`; every pair of the shipped translators' probe sets is read); for a
    pair no one has read, the two coarse filters on each sentence: the cue word fits the kind of only the noun "it"
    names (:func:`core.data.broad.cue_decides`: otherwise knowledge of the world decides, or it reads as nonsense),
    and nothing impossible happens (:func:`core.data.broad.reads_sensibly`: a carp crossing craters). None from a
    filter, "not a sentence of the grammar", is not a no."""
    verdict = broad.pair_reads_sensibly(a, b)
    if verdict is not None:
        return verdict
    return all(broad.cue_decides(t) is not False and broad.reads_sensibly(t) is not False for t in (a, b))


@dataclass(frozen=True)
class TypedPair:
    """The minimal pair a page shows for the typed sentence. ``how``: "listed" (the sentence is in the pair list;
    its partner from there), "built" (the partner built from it by the grammar: the cue word swapped for its
    opposite), "nearest" (the sentence has none; ``pair`` is the listed pair nearest to it in words). ``note``: what
    the page tells the reader, plain text (quote it through app.text.md)."""
    pair: tuple[coref.ProbeItem, coref.ProbeItem]
    how: str
    note: str


WORD = re.compile(r"[a-z']+")


def why_no_pair(text: str, model_name: str | None = None) -> str:
    """Why the typed sentence has no minimal partner for this model, in a phrase a student understands."""
    words = WORD.findall(text.lower())
    if not words:
        return "it is empty" if not text.strip() else "it holds no English word (letters a to z) to read"
    unknown = (coverage.for_checkpoint(load_model(model_name), text) or {}).get("unknown_words") if model_name else None
    if unknown:
        return f"{model_name} never saw {', '.join(unknown[:8])}, so its heads would say nothing meaningful about it"
    if not set(words) & set(coref.PRONOUNS):
        return "it holds no “it” (nor they / he / she) whose referent a changed word could move"
    if item_for(text, model_name) is None:
        return ("its shape is none of the grammar's coreference sentences, so which noun “it” names cannot be read "
                "off (a shape that works: “The ⟨animal⟩ didn't cross the ⟨place⟩ because it was too ⟨adjective⟩.”)")
    return "the grammar knows no word that, swapped for its cue word, would send “it” to the other noun"


def typed_pair(text: str, model_name: str | None = None) -> TypedPair:
    """The pair for the typed sentence: its listed partner, else one built from it, else the nearest listed pair
    with the reason it has none (never another sentence's pair without saying so)."""
    text = text.strip()
    entries = pair_entries(model_name)
    for _, (a, b) in entries:
        if text in (a.text, b.text):
            first, second = (a, b) if text == a.text else (b, a)
            return TypedPair((first, second), "listed", f"Sentence A is yours; B is its minimal partner: one word "
                                                        f"changed, “{cue(first.text, second.text)}”.")
    built = own_pair(text, model_name)
    items = (item_for(built[0], model_name), item_for(built[1], model_name)) if built else (None, None)
    if _is_pair(items):
        return TypedPair(items, "built", f"Sentence A is yours; B is built from it: “{cue(built[1], built[0])}” "
                                         f"swapped for “{cue(built[0], built[1])}”, so that “it” names the "
                                         f"{items[1].antecedent}, not the {items[0].antecedent}.")
    mine = set(WORD.findall(text.lower()))

    def overlap(entry) -> float:  # Jaccard over the words of the pair's first sentence
        theirs = set(WORD.findall(entry[1][0].text.lower()))
        return len(mine & theirs) / max(1, len(mine | theirs))

    best = max(entries, key=overlap)  # the first of the best: a classroom pair before a generated one
    near = overlap(best) >= NEAR
    pair = best[1] if near else entries[0][1]
    return TypedPair(pair, "nearest", f"Your sentence “{quoted(text)}” has no minimal partner here: "
                                      f"{why_no_pair(text, model_name)}. Shown instead, "
                                      + ("the nearest pair that works" if near else "the classic pair")
                                      + f": “{pair[0].text}” / “{pair[1].text}”")  # the quote ends the sentence


NEAR = 0.5  # word overlap (Jaccard) from which a listed pair counts as near the typed sentence


def _flat_items(model_name: str | None = None) -> list[coref.ProbeItem]:
    return [it for pair in probe_items(model_name) for it in pair]


@bounded(ignore=("progress",))
def _live_boards(model_name: str, progress=None) -> dict[str, dict]:
    return coref.scoreboards(load_model(model_name), _flat_items(model_name), progress=progress)


def shipped_boards(model_name: str) -> dict[str, dict] | None:
    """The scoreboards shipped beside the model (scripts/precompute.py), when made for exactly these weights and
    this probe set."""
    return summaries.coref_boards(load_model(model_name), model_name, _flat_items(model_name))


def boards_source(model_name: str) -> str | None:
    """Where the shipped scoreboards were read from and the command that made them (None: computed here)."""
    return summaries.source(load_model(model_name), model_name) if shipped_boards(model_name) is not None else None


def scoreboards(model_name: str, progress=None) -> dict[str, dict]:
    """Every probe kind the model supports (``self``; ``cross`` too for encoder-decoder models): read from the
    shipped summaries when they match the weights, else computed (and cached) here."""
    return shipped_boards(model_name) or _live_boards(model_name, progress=progress)


def scoreboards_shown(model_name: str, container=None) -> tuple[dict | None, bool]:
    """:func:`scoreboards` under a progress bar with a Stop button (app.progress) when it must be computed:
    ``(boards, complete)``; after a Stop, the boards over the sentences done (None if none)."""
    return progress_bar.run(f"coref_boards_{model_name}", f"Scoring every head of {model_name} on the probe set",
                            lambda tell: scoreboards(model_name, progress=tell), container)


def shared_range(lks) -> float:
    """One symmetric colour range for the panels of a minimal pair (first − second candidate's weight)."""
    return symmetric_range(*[lk[..., 0] - lk[..., 1] for lk in lks])


def scoreboard(model_name: str, kind: str = "self") -> dict:
    """One kind's board: ``n``, ``best`` [{layer, head, share, name}], ``share`` [L, H], ``rollout_share`` [L]."""
    return scoreboards(model_name)[kind]


def grid_figure(lk: torch.Tensor, candidates, antecedent: str, *, title: str, present=False, dark=False,
                resolving=None, query: str = "it", zmax: float | None = None) -> go.Figure:
    """Cells: weight(query → first candidate) − weight(query → second); ✓ marks heads that resolve the pair.
    ``title``: a short name ("Sentence A"; the sentence itself belongs in a caption: a whole sentence as a title ran
    to four lines over the plot, tests/e2e/overprint.js). ``zmax``: the symmetric colour range (pass :func:`shared_range` of both sentences so the panels compare)."""
    diff = (lk[..., 0] - lk[..., 1]).tolist()
    n_l, n_h = lk.shape[:2]
    hover = [[f"layer {l} head {h}<br>" + "<br>".join(f"{label(query)} → {label(c)}: {float(lk[l, h, i]):.4f}"
                                                       for i, c in enumerate(candidates))
              for h in range(n_h)] for l in range(n_l)]
    text = [["✓" if resolving is not None and resolving[l][h] else "" for h in range(n_h)] for l in range(n_l)]
    zmax = zmax or symmetric_range(lk[..., 0] - lk[..., 1])
    hm = dict(type="heatmap", z=table(diff), x=list(range(n_h)), y=list(range(n_l)), colorscale=DIVERGING, zmin=-zmax,
              zmax=zmax, text=table(text), texttemplate="%{text}", customdata=table(hover),
              hovertemplate="%{customdata}<extra></extra>",
              colorbar={"title": {"text": f"{label(candidates[0])} − {label(candidates[1])}"}})
    fig = spec(hm, title=f"{title} · antecedent: {label(antecedent)}",  # short: the sentence goes in a caption
               xaxis={"title": {"text": "head"}, "tickvals": list(range(n_h))},
               yaxis={"title": {"text": "layer"}, "tickvals": list(range(n_l)), "autorange": "reversed"})
    return style(fig, present, height=220 + 45 * n_l, dark=dark)


def share_figure(share: torch.Tensor, *, title: str, present=False, dark=False) -> go.Figure:
    fig = spec(dict(type="heatmap", z=share.tolist(), zmin=0, zmax=1, colorscale="Viridis", texttemplate="%{z:.2f}",
                    hovertemplate="layer %{y} head %{x}: %{z:.3f}<extra></extra>"), title=title,
               xaxis={"title": {"text": "head"}, "tickvals": list(range(share.shape[1]))},
               yaxis={"title": {"text": "layer"}, "tickvals": list(range(share.shape[0])), "autorange": "reversed"})
    return style(fig, present, height=180 + 45 * share.shape[0], dark=dark)


@bounded
def _probe_run(model_name: str, text: str, antecedent: str, candidates: tuple, reference: str | None):
    return coref.probe_run(load_model(model_name), coref.ProbeItem(text, antecedent, candidates, reference=reference))


def probe_run(model_name: str, item: coref.ProbeItem):
    """The traced run both probe kinds read (teacher-forced with the reference translation, if any)."""
    return _probe_run(model_name, item.text, item.antecedent, tuple(item.candidates), item.reference)


def _choices(model_name: str):
    return coref.TARGET_PRONOUNS.get(coref.language(load_model(model_name)) or "")


def links_for(model_name: str, item: coref.ProbeItem, kind: str = "self"):
    """``[layers, heads, candidates]`` attention of one probe kind, or None if a word is missing."""
    return coref.links(probe_run(model_name, item), item, kind, _choices(model_name))


def cross_query(model_name: str, item: coref.ProbeItem) -> tuple[str, str] | None:
    """(the decoder token at the cross probe's query position, the pronoun it predicts next)."""
    res = probe_run(model_name, item)
    pos = coref.cross_positions(res, item, _choices(model_name))
    if pos is None:
        return None
    return res.tgt_tokens[pos[0]], res.tgt_tokens[pos[0] + 1]


def heads_text(off: dict) -> str:
    return "; ".join(f"{n} heads {', '.join(map(str, h))}" for n, h in off.items()) or "nothing"


def _key(off: dict) -> tuple:
    return tuple(sorted((n, int(h)) for n, hs in off.items() for h in hs))


def _pack(items: list[coref.ProbeItem]) -> tuple:
    """Probe items as a hashable cache key; :func:`_unpack` turns it back."""
    return tuple((it.text, it.antecedent, tuple(it.candidates)) for it in items)


def _unpack(texts: tuple) -> list[coref.ProbeItem]:
    return [coref.ProbeItem(t, a, c) for t, a, c in texts]


@bounded(spinner="Re-translating with those heads off…")
def _effect(model_name: str, texts: tuple, heads: tuple) -> dict:
    off: dict[str, list[int]] = {}
    for n, h in heads:
        off.setdefault(n, []).append(h)
    return coref.ablation_effect(load_model(model_name), _unpack(texts), off)


def ablation_effect(model_name: str, items: list[coref.ProbeItem], off: dict) -> dict:
    """Cached :func:`core.probes.coref.ablation_effect` (re-translations and pronoun probabilities, heads off)."""
    return _effect(model_name, _pack(items), _key(off))


@bounded(spinner="Switching heads off one at a time…")
def _fewest(model_name: str, texts: tuple, ranked: tuple) -> tuple[int | None, dict]:
    board = {"ranked": [{"name": n, "head": h} for n, h in ranked]}
    return coref.fewest_heads_to_change(load_model(model_name), _unpack(texts), board)


def fewest_heads_to_change(model_name: str, items: list[coref.ProbeItem], board: dict) -> tuple[int | None, dict]:
    """Cached :func:`core.probes.coref.fewest_heads_to_change` in the order of ``board`` (a scoreboard of
    :func:`scoreboard`, or :func:`patch_ranking`)."""
    ranked = tuple((b.get("name") or coref.attention_name(board.get("kind", "self"), "encoder-decoder", b["layer"]),
                    int(b["head"])) for b in board.get("ranked") or board["best"])
    return _fewest(model_name, _pack(items), ranked)


def patch_ranking(res: dict) -> dict:
    """A pair's activation-patching result (app.patch_view.pair_effects) as a ranking of heads to switch off, in the
    shape :func:`core.probes.coref.heads_off` reads: every head by the share of the decision it moves when patched
    alone, best first; ``k``: how many of them carry half the effect together (None: no small set does)."""
    ranked = [{"name": r["name"], "head": r["head"], "layer": int(r["name"].split(".")[1]), "share": r["effect"],
               "label": r["label"]} for r in res["ranked"]]
    return {"kind": "patch", "ranked": ranked, "best": ranked[:5], "k": res["k"], "carried": res["carried"]}


RESOLVES = (f"✓ = the head puts at least {coref.PICK_MARGIN:.2f} more attention weight on the right noun than on the "
            "other, in both sentences")


def flip_text(effect: dict, names=("sentence A", "sentence B")) -> str:
    """Where the teacher-forced choice flipped with the heads off: “In sentence A, p(il) falls from 0.93 to 0.36,
    below p(elle) 0.49.” (empty when it flipped nowhere)."""
    parts = [f"{name}, p({r['ref pronoun']}) falls from {r['p(ref pronoun)']:.2f} to "
             f"{r['p(ref pronoun), heads off']:.2f}, below p({r['other pronoun']}) "
             f"{r['p(other pronoun), heads off']:.2f}"
             for name, r in zip(names, effect["rows"]) if r["decision flipped"]]
    return ("In " + "; in ".join(parts) + ".") if parts else ""


def greedy_text(effect: dict, names=("sentence A", "sentence B")) -> str:
    """What the greedy re-translations with the heads off show: words before the pronoun that changed (then the
    pronoun follows those words and says little about the decision), or a pronoun that changed with every word
    before it kept (a clean flip), or no change of pronoun."""
    broken = [(name, r) for name, r in zip(names, effect["rows"]) if r["words before kept"] is False]
    if broken:
        changes = {}  # the same change in both sentences is named once
        for name, r in broken:
            change = (r["before pronoun"], r["before pronoun, heads off"] or r["translation, heads off"])
            changes.setdefault(change, []).append(name)
        shown = "; ".join(f"{' and '.join(names)}: “{md(a)}…” → “{md(b)}…”" for (a, b), names in changes.items())
        return (f"The greedy re-translations also change words before the pronoun ({shown}): these heads do more than "
                "choose the pronoun, and a greedy pronoun that follows changed words says little about the choice. "
                "The probabilities read with the right words fed in are the cleaner test.")
    clean = [name for name, r in zip(names, effect["rows"])
             if r["words before kept"] and r["pronoun"] != r["pronoun, heads off"]]
    if clean:
        return (f"The greedy re-translation of {' and '.join(clean)} keeps every word before the pronoun and changes "
                "the pronoun: a clean flip.")
    return "The greedy re-translations keep their pronouns."


@bounded(ignore=("progress",))
def _set_effect(model_name: str, heads: tuple, progress=None) -> dict:
    off: dict[str, list[int]] = {}
    for n, h in heads:
        off.setdefault(n, []).append(h)
    return coref.ablation_effect(load_model(model_name), _flat_items(model_name), off, progress=progress)


def probe_set_effect(model_name: str, off: dict, progress=None) -> dict:
    """The same over the whole built-in probe set (both sentences of every pair); ``progress`` as in
    :func:`core.probes.coref.ablation_effect`."""
    return _set_effect(model_name, _key(off), progress=progress)


ABLATION_COLUMNS = ("pronoun", "pronoun, heads off", "p(ref pronoun)", "p(ref pronoun), heads off",
                    "p(other pronoun), heads off", "sentence", "translation", "translation, heads off")


def ablation_table(effect: dict) -> list[dict]:
    """The ablation rows with the deciding columns first (they stay in view at 1280 px), probabilities rounded."""
    return [{c: (round(r[c], 4) if isinstance(r[c], float) else r[c]) for c in ABLATION_COLUMNS} for r in effect["rows"]]


RANKINGS = {"patch": "the heads patching named (this pair)", "cross": "the cross-attention scoreboard",
            "self": "the encoder self-attention scoreboard"}
RANKED_BY = {"patch": "Ranked by activation patching of this pair (the top of the page): each head by the share of the "
                      "decision it moves when patched alone. That is causal evidence.",
             "cross": "Ranked by the attention scoreboard over the probe set: how often a head's attention picks the "
                      "antecedent. That is a correlation.",
             "self": "Ranked by the attention scoreboard over the probe set: how often a head's attention picks the "
                     "antecedent. That is a correlation."}


def ablation_section(view, items: list[coref.ProbeItem], boards: dict, patched: dict | None, lang: str) -> None:
    """The Coreference page's “switch the best heads off”: by default the heads activation patching named for this
    pair (``patched``, app.patch_view.draw_pair's result; the ``k`` that carry half the effect), else or on request
    an attention scoreboard's ranking. The re-translations, the teacher-forced choice (a flip counts where the
    choice itself flips, :func:`core.probes.coref.decision`), and the count over the probe set on request."""
    sources = (["patch"] if patched is not None else []) + list(boards)
    kind = st.radio("Rank the heads by", sources, format_func=RANKINGS.__getitem__, horizontal=True,
                    key="coref_ablate_kind")
    board = patch_ranking(patched) if kind == "patch" else boards[kind]
    n_total = len(board["ranked"])
    st.caption(RANKED_BY[kind])
    mode = st.radio("Switch off", ["the best heads", "the fewest best heads that flip the decision",
                                   "every head of the best head's layer"], horizontal=True, key="coref_ablate_mode")
    if mode == "the best heads":
        default = board.get("k") or 2  # patching: the heads that carry half the effect together
        k = st.slider("Heads to switch off (best first)", 0, max(1, n_total), min(default, n_total),
                      key=f"coref_ablate_k_{kind}")
        off = coref.heads_off(board, k)
    elif mode.startswith("the fewest"):
        k, off = fewest_heads_to_change(view.name, items, board)
        st.markdown(f"Best heads switched off one more at a time, the reference translation fed in up to the pronoun: "
                    f"the choice first flips with **{k} of {n_total}** off." if k else
                    f"Even with all {n_total} ranked heads off, the choice of this pair does not flip.")
    elif kind == "patch":
        off = coref.heads_off(board, module=board["best"][0]["name"]) if board["best"] else {}
    else:
        off = coref.heads_off(board, layer=coref.best_layer(board)) if board["best"] else {}
    named = (kind == "patch" and mode == "the best heads" and board.get("k") == k
             and f" (the {k} head{'s' if k > 1 else ''} that carry {board['carried']:.0%} of this pair's effect when "
                 "patched together)")
    st.markdown(f"Switched off: **{heads_text(off)}**{named or ''}")
    effect = ablation_effect(view.name, items, off)
    st.dataframe(ablation_table(effect), hide_index=True)
    pron = "/".join(coref.TARGET_PRONOUNS[lang])
    n = len(effect["rows"])
    flips = [r for r in effect["rows"] if r["pronoun"] != r["pronoun, heads off"]]
    st.markdown(f"In this pair, the greedy re-translation's pronoun ({md(pron)}) changes in **{len(flips)} of {n}**. "
                f"Fed the reference translation up to the pronoun (teacher forcing: *p(ref pronoun)*), the choice "
                f"flips in **{effect['decisions_flipped']} of {n}**. "
                + " ".join(t for t in (flip_text(effect), greedy_text(effect)) if t))
    if kind == "patch" and not effect["decisions_flipped"] and off:
        st.caption("Switching a head off is not patching it: patching puts the other sentence's output in its place, "
                   "switching off leaves nothing there, and the other heads can still choose right. "
                   "“The fewest best heads that flip the decision” finds how many it takes.")
    flips_key = f"coref_flips_{view.name}_{heads_text(off)}"
    if st.button("Count flips over the whole probe set", key="coref_probe_set") or progress_bar.stopped(flips_key):
        total, complete = progress_bar.run(flips_key, "Re-translating the probe set with those heads off",
                                           lambda tell: probe_set_effect(view.name, off, progress=tell))
    else:
        total = None
    if total is not None and total["n"]:
        st.markdown(f"Over {total['n']} probe sentences: the greedy pronoun **flips in {total['flipped']}** "
                    f"(changes at all, incl. disappearing, in {total['changed']}); teacher-forced, the choice flips "
                    f"in {total['decisions_flipped']}; right before: {total['right_before']}, right with the heads "
                    f"off: {total['right_after']}.")
