"""The recurrence page's "How far one input symbol reaches" section: the gradient of every output of the three shipped
copy models on every source symbol the user typed, that gradient against the steps between reading and writing, and
the outputs one substituted symbol changes (core.variants.recurrence.input_sensitivity, perturbation_effect).

Everything here is measured on the user's symbols: three backward passes and three batched forward passes of models
with 0.2 M parameters, about 30 ms on one core, kept (:func:`measured`) so that a rerun for another widget does not
measure again."""
from __future__ import annotations

import streamlit as st

from app import figures
from app.cache import bounded
from app.text import md
from core.variants import recurrence

SHORT = {"lstm": "plain LSTM", "lstm-attention": "LSTM + attention", "transformer": "Transformer"}
LABEL = {k: v[0].upper() + v[1:] for k, v in SHORT.items()}  # at the start of a title, a tab, a table cell


def next_symbol(ids: list[int], token: int) -> int:
    """The symbol after ``token`` in the task's own order (0-9, then a-j, then 0 again): the substitute the
    overview uses for every position."""
    return ids[(ids.index(token) + 1) % len(ids)]


def measure(trained: dict, demo: dict, task, chosen: tuple[int, int]) -> dict:
    """Per model: ``"sensitivity" [T, S]``, ``"distance"`` (distances, means), ``"summary"``
    (:func:`core.variants.recurrence.reach_summary`), and the perturbation effect of each symbol replaced by
    :func:`next_symbol` (rows 0 … n−1) then of ``chosen`` = (position, token) (last row)."""
    src = demo["source"]
    n = len(src) - 1
    own = recurrence.copied_from(task.name, n)
    subs = [(j, next_symbol(task.ids, src[j])) for j in range(n)] + [chosen]
    out = {}
    for key, model in trained.items():
        written = demo["written"][key]
        sens = recurrence.input_sensitivity(model, src, written)
        out[key] = {"sensitivity": sens, "distance": recurrence.by_distance(sens, n),
                    "summary": recurrence.reach_summary(sens, n, own),
                    "effect": recurrence.perturbation_effect(model, src, written, subs)}
    return out


@bounded(ignore=("trained", "demo", "task"))
def measured(stamp: tuple, source: tuple, written: tuple, chosen: tuple, *, trained: dict, demo: dict, task) -> dict:
    """:func:`measure`, once per trained models (``stamp``: what names them, e.g. their folder and the date of their
    run), source symbols, what each model wrote (``written``: ``((key, ids), …)``) and substitution ``chosen``."""
    return measure(trained, demo, task, chosen)


def _rows(demo: dict, key: str) -> list[str]:
    """The output steps of model ``key`` as row labels: ``"1: 3"`` …, ``[EOS]`` last when it was written."""
    written = demo["outputs"][key] + ["[EOS]"] * (len(demo["written"][key]) - len(demo["outputs"][key]))
    return [f"{t + 1}: {s}" for t, s in enumerate(written)]


def _reading(got: dict, demo: dict, n: int) -> str:
    """What the measured numbers show, said against the seeds' claims."""
    told = []
    ratio = got["lstm"]["summary"]["first_vs_last"] if "lstm" in got else None
    if ratio is not None:
        told.append(f"The plain LSTM reads the first symbol {n - 1} step{'s' if n > 2 else ''} before the last one, "
                    f"yet the first moves its outputs {ratio:.2f}× as much as the last (mean gradient over all "
                    "outputs). " + ("Here the farther symbol counts much less: distant inputs fade, as the seeds' "
                                    "vanishing-gradient argument predicts." if ratio < 0.5 else
                                    "Here the farther symbol counts only somewhat less: a weak sign of fading at "
                                    "most." if ratio < 1 else
                                    "So over these distances its inputs do not fade, which is not what the seeds' "
                                    "vanishing-gradient argument predicts. The LSTM's gated cell was designed "
                                    "to keep gradients alive over many steps."))
    shares = {k: v["summary"]["own_share"] for k, v in got.items()}
    if shares and all(s is not None for s in shares.values()):
        told.append("Share of each output's gradient that lies on the symbol it copies: "
                    + ", ".join(f"{SHORT[k]} {s:.0%}" for k, s in shares.items()) + ".")
        if "lstm" in shares and shares["lstm"] == min(shares.values()):
            told.append("The plain LSTM is the least focused: each of its outputs leans on many source symbols.")
    first = {k: int(v["effect"]["changed"][0].sum()) for k, v in got.items()}
    told.append(f"Replacing the first symbol, {demo['symbols'][0]}, by the next symbol changes "
                + ", ".join(f"{first[k]} of the {len(demo['written'][k])} outputs of the {SHORT[k]}" for k in first)
                + ". On copy only one output should change.")
    if {"lstm", "transformer"} <= set(first):
        told.append("As the seeds say, one altered input reaches more outputs of the recurrent model than of the "
                    "Transformer." if first["lstm"] > first["transformer"] else
                    "Here the recurrent model is not hit harder than the Transformer, unlike the seeds' claim that "
                    "one altered input reaches every later recurrent state.")
    return " ".join(told)


def input_reach(trained: dict, demo: dict, task, plot: dict, stamp: tuple) -> None:
    """Draw the section for the three trained models and ``demo`` (core.variants.recurrence.copy_demo's result);
    ``stamp`` names the models for the cache (:func:`measured`)."""
    st.subheader("How far one input symbol reaches")
    st.markdown("The seeds argue that a recurrent model must carry a token through every step between reading it "
                "and using it, so distant inputs fade (vanishing gradients), while attention gives every pair of "
                "positions a path of length one. Here each model reads your symbols. At each output step we take "
                "the log-probability of the symbol the model wrote there (its own answer, right or wrong) and "
                "measure ‖∂ log p / ∂ e(x_j)‖: the length of its gradient with respect to the embedding of each "
                "source symbol x_j. A long gradient means a small nudge to x_j moves that output a lot.")
    symbols = demo["symbols"]
    n = len(symbols)
    src_labels = symbols + ["[EOS]"]
    c1, c2 = st.columns(2)
    at = c1.selectbox("Symbol to replace", range(n), format_func=lambda j: f"{j + 1}: {symbols[j]}",
                      key=f"rec_reach_at_{n}")
    options = _others(task, demo["source"][at])
    names = {i: task.tokenizer.id_to_token(i).lstrip("▁") for i in task.ids}
    to = c2.selectbox("Replace it by", options, format_func=names.get, key=f"rec_reach_to_{at}_{symbols[at]}")
    written = tuple((k, tuple(v)) for k, v in demo["written"].items())
    got = measured(stamp, tuple(demo["source"]), written, (at, to), trained=trained, demo=demo, task=task)

    tabs = st.tabs([LABEL[k] for k in got])
    for tab, (key, m) in zip(tabs, got.items()):
        tab.plotly_chart(figures.matrix(m["sensitivity"].log10(), src_labels, _rows(demo, key),
                                        title=f"Log10 gradient length, {SHORT[key]}",
                                        x_title="source symbol x_j", y_title="output step y_t",
                                        value_name="log10 length", **plot), key=f"rec_reach_map_{key}")
    st.caption("Rows: what each output step wrote, right or wrong; columns: the source symbols. Each model has its "
               "own colour scale. On copy, a model that reads the right symbol draws a bright diagonal.")

    fig = figures.lines({}, points={LABEL[k]: m["distance"] for k, m in got.items()}, log="y",
                        title="Mean gradient length by steps from reading to writing",
                        x_title="steps from reading x_j to writing y_t (n − j + t)",
                        y_title="mean ‖∂ log p / ∂ e(x_j)‖", **plot)
    if task.name == "copy":
        fig.add_vline(x=n, line_dash="dot", annotation_text="each symbol's own output",
                      annotation_position="bottom right")  # at the top it sat on the Transformer's peak
    st.plotly_chart(fig, key="rec_reach_distance")
    st.caption(f"Each point: the mean over all (output, source) pairs that are that many steps apart ({n} symbols "
               "and EOS read, then the outputs written). Only the plain LSTM must walk this path step by step. The "
               "LSTM with attention also reads every encoder state directly, and the Transformer reaches any source "
               "position in one attention step per layer. Heights differ between models mostly because a confident "
               "output has a flat log p and so a short gradient everywhere. Compare the shapes of the lines.")

    last = len(next(iter(got.values()))["effect"]["changed"]) - 1  # the chosen substitution's row
    st.dataframe([{"model": LABEL[k], "outputs changed": f"{int(m['effect']['changed'][last].sum())} of "
                                                          f"{len(demo['written'][k])}",
                   "steps that changed": ", ".join(str(t + 1) for t in
                                                   m["effect"]["changed"][last].nonzero().flatten().tolist()) or "none",
                   "largest |Δ log p|": round(float(m["effect"]["delta"][last].max()), 3)}
                  for k, m in got.items()], hide_index=True, width="stretch", key="rec_reach_table")
    st.caption(md(f"Symbol {at + 1} ({symbols[at]}) replaced by {names[to]}. Each output step is read again with "
                  "the same earlier outputs (teacher forcing). A step changed if its most likely symbol is now a "
                  "different one. |Δ log p|: how much the log-probability of what the model wrote moved."))
    st.plotly_chart(figures.grouped_bars({LABEL[k]: m["effect"]["changed"][:n].sum(1).tolist() for k, m in got.items()},
                                         [f"{j + 1}: {s}" for j, s in enumerate(symbols)],
                                         title="Outputs changed when one symbol is replaced by the next one",
                                         x_title="replaced source symbol", y_title="outputs changed", **plot),
                    key="rec_reach_changed")
    st.markdown("**What these numbers show.** " + md(_reading(got, demo, n)))


def _others(task, token: int) -> list[int]:
    """Every symbol of the task except ``token``, starting from the one after it (the default substitute)."""
    i = task.ids.index(token)
    return task.ids[i + 1:] + task.ids[:i]
