"""Activation patching in the app: cached results of :mod:`core.probes.patch`, their figures and their sentences.

Used by the Coreference page (a pair the user picks or types, and the probe-set scoreboard) and by the
Lesson's payoff step. Every figure of effects uses one symmetric colour scale.
"""
from __future__ import annotations

import streamlit as st

from app import figures
from app.cache import bounded
from app.shell import load_model
from app.text import code, md
from core.probes import coref, patch, patch_board
from core.probes.attribution import decision_attributions

TOP = 3  # heads named and drawn side by side


def _pct(x: float) -> str:
    return f"{x:+.0%}"


@bounded(spinner="Patching every head from one sentence into the other…")
def _pair(model_name: str, a_text: str, b_text: str):
    ck = load_model(model_name)
    try:
        a, b = patch.sentence_for(ck, a_text), patch.sentence_for(ck, b_text)
        return patch.head_effects(ck, a, b), (a, b)
    except ValueError as e:
        return str(e), None


def pair_effects(model_name: str, a_text: str, b_text: str):
    """``(head_effects result, (Sentence A, Sentence B))``, or ``(reason, None)`` when the pair cannot be patched."""
    return _pair(model_name, a_text, b_text)


@bounded(spinner="Reading attention, value-weighted attention, gradient × input…")
def _attributions(model_name: str, a, b, heads: tuple):
    return decision_attributions(load_model(model_name), a, b, list(heads))


def probe_pairs(model_name: str) -> list:
    """The model's probe minimal pairs (``core.probes.patch.Sentence`` pairs from its corpus's test split)."""
    return patch.probe_set(load_model(model_name))


@bounded(spinner="Patching every head of every probe pair…")
def _board(model_name: str) -> dict:
    ck = load_model(model_name)
    return patch_board.saved_scoreboard(ck) or patch.scoreboard(ck, patch.probe_set(ck))


@bounded
def saved_board(model_name: str) -> dict | None:
    """The scoreboard shipped beside the weights (``python -m core.probes.patch --probe-set --save``), if any
    (cached: checking it hashes the weights file)."""
    return patch_board.saved_scoreboard(load_model(model_name))


def probe_board(model_name: str) -> dict:
    """:func:`core.probes.patch.scoreboard` over the model's probe set (the saved one when it matches the weights)."""
    return _board(model_name)


# ------------------------------------------------------------------ sentences
def decision_text(res: dict, a, b) -> str:
    pa, pb = res["pronouns"]
    right = ("The model gets both right" if res["right"] else
             "The model does **not** prefer each sentence's own pronoun, so there is no clean decision to explain")
    ref = "" if a.from_corpus and b.from_corpus else " (a sentence outside the corpus: its reference is the model's own translation)"
    return (f"Decision at the position that writes the pronoun: log p({pa}) − log p({pb}) = **{res['ld_a']:+.2f}** for A, "
            f"**{res['ld_b']:+.2f}** for B. {right}{ref}.")


def carry_text(res: dict, board: bool = False) -> str:
    """“These k heads carry X % of the effect” (patched together), or that no small set does."""
    k, share = res["k"], res["share"]
    ranked = res["ranked"]
    if k is None:
        return f"Even every head patched together does not carry {share:.0%} of the effect."
    names = ", ".join(r["label"] for r in ranked[:k])
    what = "on average over the probe pairs" if board else "of this pair's effect"
    verdict = ("" if k <= 4 else f" More than 4 heads: the decision is **spread** over many heads, not held by a few.")
    return f"**These {k} head{'s' if k > 1 else ''} carry {res['carried']:.0%}** {what} when patched together: {names}.{verdict}"


def top_text(res: dict, n: int = TOP) -> str:
    parts = []
    for r in res["ranked"][:n]:
        flips = (f", flips the pronoun alone in {r['flips']} of 2 directions" if "flips" in r and r["flips"]
                 else f", flips it alone in {r['flip_share']:.0%} of pairs × directions" if r.get("flip_share") else "")
        parts.append(f"**{r['label']}** {_pct(r['effect'])}{flips}")
    return "Top heads (share of the total effect each moves alone): " + "; ".join(parts) + "."


# ------------------------------------------------------------------ figures
def effect_figure(res: dict, *, title: str, present=False, dark=False, key: str = "effect"):
    flips = res.get("flips")
    return figures.effect_grid(res[key], res["rows"], title=title, flips=flips, value_name="share of effect",
                               present=present, dark=dark)


def attribution_figures(model_name: str, res: dict, a, b, *, present=False, dark=False) -> list:
    """For the top heads: attention weight vs value-weighted attention (each as shares of its row) from the head's
    query; then gradient × input over the English tokens."""
    heads = tuple((r["name"], r["head"]) for r in res["ranked"][:TOP])
    att = _attributions(model_name, a, b, heads)
    figs = []
    for h in att["heads"]:
        if h["weights"] is None:
            continue
        # short series names: on a projector a half-width chart gave 45 % of its width to a longer legend
        figs.append(figures.grouped_bars({"weight α": h["weights"], "‖α·v·W_O‖": h["value_weighted"]},
                                         h["keys"], title=f"{h['label']} from “{h['query']}”",
                                         x_title="key token", y_title="share of the row", present=present, dark=dark))
    g = att["grad_x_input"]
    pa, pb = res["pronouns"]
    figs.append(figures.bars(g["values"], g["tokens"], title=f"Gradient × input of log p({pa}) − log p({pb})",
                             x_title="source token (sentence A)", y_title="attribution", present=present, dark=dark))
    return figs


# ------------------------------------------------------------------ drawn on a page
def draw_pair(view, a_text: str, b_text: str, container=st) -> dict | None:
    """The patching result for a pair, first: the heatmap, the decision, the top heads, what they carry, and
    attention / value-weighted attention / gradient × input for the named heads. Returns the result (None if
    the pair cannot be patched: the reason is shown)."""
    res, pair = pair_effects(view.name, a_text, b_text)
    if pair is None:
        container.info(f"Patching needs two sentences whose “it” is translated by different pronouns: {md(res)}")
        return None
    a, b = pair
    container.markdown(decision_text(res, a, b))  # md: trusted (head labels, the task's pronouns, numbers)
    container.plotly_chart(effect_figure(res, title="Share of the decision each head moves",
                                         present=view.present, dark=view.dark), key="patch_pair_grid")
    container.caption("Each cell: the share of the decision a head moves when it alone is patched from the other "
                      "sentence, the mean of A←B and B←A; ↻ = patched alone, it flips the pronoun.")
    container.markdown(top_text(res) + " " + carry_text(res))  # md: trusted (head labels and numbers)
    if not res["aligned"]:
        container.caption("The two sentences differ in length, so the positions in between have no twin and are "
                          "not patched: all heads together need not reproduce the other sentence.")
    container.markdown("**The named heads, three ways.** Attention weight α says where a head looks; value-weighted "
                       "attention ‖α·v·W_O‖ (Kobayashi et al. 2020) how much each link moves its output; gradient × "
                       "input which English words move the decision. “from” names the query the head is read at: "
                       "“it” for an encoder head; for a decoder or cross-attention head, the output token just "
                       "before the pronoun (in French often the “'” of qu'), where the model decides which pronoun "
                       "comes next.")
    figs = attribution_figures(view.name, res, a, b, present=view.present, dark=view.dark)
    for row in range(0, len(figs), 2):  # row by row: the heads in the order named above, also where columns stack
        for col, (i, fig) in zip(container.columns(2), enumerate(figs[row:row + 2], row)):
            col.plotly_chart(fig, key=f"patch_attr_{i}")
    return res


def spread_text(board: dict) -> str:
    best = board["best"]
    if board["spread"]:
        return (f"**No single head matters much**: the best one, {best['label']}, moves the decision "
                f"{best['effect']:.0%} of the way on average, and it takes "
                + (f"{board['k']} heads together" if board["k"] else "more than every head")
                + f" to carry {board['share']:.0%}. The effect is spread over many heads: that is a finding, not a failure.")
    return (f"Best single head: **{best['label']}**, {best['effect']:.0%} of the effect on average; patched alone it "
            f"flips the pronoun in {best['flip_share']:.0%} of the pairs × directions.")


def draw_board(view, container=st) -> dict | None:
    """The patching scoreboard over the model's probe set (computed on request unless saved beside the weights)."""
    board = saved_board(view.name)
    if board is None:
        n = len(probe_pairs(view.name))
        if not container.button(f"Patch every head over the {n} probe pairs", key="patch_board"):
            container.caption("Runs the head sweep on every pair of the probe set (test split) once; cached afterwards.")
            return None
        board = probe_board(view.name)
    if not board["n"]:
        container.info(f"No probe pair could be used ({board['wrong']} decided wrongly, {len(board['skipped'])} "
                       "could not be set up).")
        return board
    zmax = figures.symmetric_range(board["mean_effect"])
    c1, c2 = container.columns(2)
    c1.plotly_chart(figures.effect_grid(board["mean_effect"], board["rows"], zmax=zmax, value_name="mean effect",
                                        title=f"Mean share of the effect, {board['n']} pairs", present=view.present,
                                        dark=view.dark), key="patch_board_mean")
    c2.plotly_chart(figures.matrix(board["flip_share"], None, board["rows"],
                                   title="Patched alone, flips the pronoun<br>(share of pairs × directions)",
                                   x_title="head", y_title="attention, layer", value_name="flips", zmin=0, zmax=1, show_values=True,
                                   present=view.present, dark=view.dark, height=150 + 30 * len(board["rows"])),
                    key="patch_board_flips")
    container.markdown(spread_text(board) + " " + carry_text(board, board=True))
    command = code(f"python -m core.probes.patch --model {view.name} --probe-set --save")
    made = (f" Read from {md(view.name)}/{patch_board.SAVED}, made with {command} on these weights."
            if saved_board(view.name) is not None else " Computed on this server; cached afterwards.")
    container.caption(f"Probe pairs used: {board['n']} (test split); decided wrongly by the model: {board['wrong']}; "
                      f"not usable: {len(board['skipped'])}." + made)
    return board


def language_ok(view) -> bool:
    return coref.language(view.ck) is not None
