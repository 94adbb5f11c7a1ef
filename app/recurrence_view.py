"""The recurrence page's "How far one input symbol reaches" section: the gradient of every output of the three shipped
copy models on every source symbol the user typed, that gradient against the steps between reading and writing, and
the outputs one substituted symbol changes (core.variants.recurrence.input_sensitivity, perturbation_effect).

Everything here is measured on the user's symbols: three backward passes and three batched forward passes of models
with 0.2 M parameters, about 30 ms on one core, kept (:func:`measured`) so that a rerun for another widget does not
measure again.

Also the page's last section, "Counting and nesting: where attention needs help" (:func:`counting_section`): the
shipped accuracy-by-length curves of core.variants.hierarchy's four models (a causal Transformer and an LSTM, on
PARITY and on balanced brackets) and the learner's own two strings read by all four."""
from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from app import figures
from app.cache import bounded
from app.shell import text_box
from app.text import code, md
from core.variants import hierarchy, recurrence

SHORT = {"lstm": "plain LSTM", "lstm-attention": "LSTM + attention", "transformer": "Transformer",
         "gru": "plain GRU", "lstm-additive": "LSTM + additive attention"}
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
    """Draw the section for the trained models and ``demo`` (core.variants.recurrence.copy_demo's result);
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
               "and EOS read, then the outputs written). Only the plain LSTM and the plain GRU must walk this path "
               "step by step. The LSTMs with attention also read every encoder state directly, and the Transformer "
               "reaches any source "
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


def runs_caption(rec: dict) -> str:
    """The caption under the accuracy curves: each run behind ``rec`` (the shipped results) with its command, the
    models it trained and its seconds, the float16 rounding of the models stored so, the settings and sizes."""
    short = {name: SHORT[key] for key, name in recurrence.NAMES.items()}

    def listed(names) -> str:
        named = [md(short.get(n, n)) for n in names]
        return ", ".join(named[:-1]) + " and " + named[-1] if len(named) > 1 else "".join(named)
    runs = "; ".join(f"the {listed(r['models'])} by {code(r.get('command') or '?')} in {r.get('seconds', '?')} s"
                     for r in recurrence.runs_of(rec))
    shift = rec.get("rounding_shift", {})
    half = (f" The {listed(shift)} are stored in float16; their curves were measured with the rounded weights, "
            f"which moved no point by more than {max(shift.values()):.1%}." if shift else "")
    sizes = "; ".join(f"{md(k)}: {v:,} parameters" for k, v in rec["params"].items())
    c = rec["config"]
    return (f"Trained on CPU: {runs}.{half} {c['steps']} steps, batch {c['batch_size']}, same batches and seed for "
            f"all; {sizes}; held-out sequences.")


def curves_reading(rec: dict) -> str:
    """What the shipped exact-match curves say about the two models without attention and the two LSTMs with it,
    read from their numbers (``rec``: the shipped results)."""
    lengths, longest = rec["lengths"], rec["lengths"][-1]
    exact = {k: rec["curves"][n]["exact_match"] for k, n in recurrence.NAMES.items() if n in rec["curves"]}
    below = {k: next((n for n, v in zip(lengths, c) if v < 0.5), None) for k, c in exact.items()}
    told = [f"Exact match at {longest} symbols: " + ", ".join(f"{SHORT[k]} {c[-1]:.0%}" for k, c in exact.items())
            + "."]
    if {"lstm", "gru"} <= set(exact) and below["lstm"] and below["gru"]:
        told.append(f"Without attention both gated cells lose the copy as it grows: exact match first falls below "
                    f"half at {below['lstm']} symbols for the plain LSTM and at {below['gru']} for the plain GRU"
                    + (" (the GRU, with about as many parameters, sooner)" if below["gru"] < below["lstm"] else
                       " (the GRU later)" if below["gru"] > below["lstm"] else "")
                    + ". Both must carry the whole source in one state vector.")
    if {"lstm-attention", "lstm-additive"} <= set(exact):
        mean = {k: sum(exact[k]) / len(lengths) for k in ("lstm-attention", "lstm-additive")}
        held = all(below[k] is None for k in mean)
        told.append(("With attention both LSTMs stay above half at every length" if held else
                     "With attention the LSTMs do much better")
                    + f"; over all lengths the Luong score averages {mean['lstm-attention']:.0%} exact and the "
                      f"additive score {mean['lstm-additive']:.0%}: "
                    + ("a small gap, from one seed each." if abs(mean["lstm-attention"] - mean["lstm-additive"]) < 0.05
                       else f"here the {'Luong' if mean['lstm-attention'] > mean['lstm-additive'] else 'additive'} "
                            "score does better (one seed each)."))
    return " ".join(told)


def additive_reading(demo: dict, task, attn_dim: int) -> str:
    """One sentence on the two LSTMs' score functions, then how much of each output's attention each puts on the
    symbol it copies, measured on ``demo`` (core.variants.recurrence.copy_demo's result)."""
    told = ("The two LSTMs differ only in how they score an encoder state h̄_s against the decoder state h_t: "
            "Luong's score is one matrix product, h_tᵀ W_a h̄_s, while the additive score of Bahdanau et al. (2015), "
            f"vᵀ tanh(W h_t + U h̄_s), is a small network with one hidden layer of {attn_dim} tanh units.")
    own = recurrence.copied_from(task.name, len(demo["symbols"]))
    maps = {k: demo[m] for k, m in (("lstm-attention", "alignment"), ("lstm-additive", "additive_alignment"))
            if m in demo}
    if own is None or len(maps) < 2:
        return told
    on = {k: recurrence.weight_on_own(w, own) for k, w in maps.items()}
    top = {k: sum(int(w[t].argmax()) == own[t] for t in range(min(len(own), len(w)))) for k, w in maps.items()}
    right = {k: demo["outputs"][k] == demo["target"] for k in maps}
    told += (f" On your symbols the Luong model puts {on['lstm-attention']:.0%} of each output's attention on the "
             f"symbol it copies, the additive one {on['lstm-additive']:.0%} (mean over the outputs); the largest "
             f"weight falls on that symbol for {top['lstm-attention']} and {top['lstm-additive']} of the "
             f"{len(own)} outputs. " + ("The additive map is the softer one: it spreads weight over the neighbours. "
                                        if on["lstm-additive"] < on["lstm-attention"] - 0.1 else
                                        "The Luong map is the softer one here. "
                                        if on["lstm-attention"] < on["lstm-additive"] - 0.1 else ""))
    if all(right.values()):
        told += "Both write the right answer: on this task either score finds the symbol to copy."
    else:
        told += ("Right answers: " + ", ".join(f"{SHORT[k]} {'yes' if r else 'no'}" for k, r in right.items())
                 + ".")
    return told


def gru_section(demo: dict, trained: dict, plot: dict) -> None:
    """Draw "Inside the GRU: its update gate on your symbols": the shipped GRU's update gate z_t on the symbols of
    ``demo`` (core.variants.recurrence.copy_demo's ``gru_gates``), and the kept share plus the new share of the GRU
    (1 by construction) against the plain LSTM's f_t + i_t (free)."""
    if "gru_gates" not in demo or "lstm" not in demo.get("gates", {}):
        return
    st.subheader("Inside the GRU: its update gate on your symbols")
    st.markdown(
        r"Cho et al. (2014). A GRU has no cell. At step $t$ the **update gate** $z_t$ (a sigmoid) sets, unit by "
        r"unit, how much of the old state to keep; the new candidate $n_t$ gets the rest: "
        r"$h_t = (1 - z_t) \odot n_t + z_t \odot h_{t-1}$. So the share taken in is always $1 - z_t$. The LSTM has "
        r"two separate gates for this, the forget gate $f_t$ (kept) and the input gate $i_t$ (taken in), and "
        r"nothing ties their sum to 1. Below, the shipped GRU seq2seq (no attention, about as many parameters as "
        "the plain LSTM) reads your symbols and writes its answer; every gate is recomputed from its weights.")
    gru, lstm = demo["gru_gates"], demo["gates"]["lstm"]
    z = gru.steps("z")  # [encoder steps + decoder steps, hidden]
    names = demo["symbols"] + ["[EOS]"]
    wrote = demo["outputs"]["gru"] + ["[EOS]"]
    steps = ([f"read {t + 1}: {s}" for t, s in enumerate(names)]
             + [f"wrote {t + 1}: {s}" for t, s in enumerate(wrote)])[:len(z)]
    st.plotly_chart(figures.lines({"kept: z_t": z.mean(1).tolist(), "new: 1 − z_t": (1 - z).mean(1).tolist()},
                                  [figures.label(s) for s in steps], title="GRU update gate per step",
                                  x_title="step", y_title=f"mean over all {z.shape[1]} units", y_range=[0, 1],
                                  **plot), key="rec_gru_update")
    gru_sum = (z + (1 - z))
    lstm_sum = lstm.steps("f") + lstm.steps("i")
    series = {"GRU: z_t + (1 − z_t), lowest unit": (list(range(1, len(z) + 1)), gru_sum.min(1).values.tolist()),
              "GRU: highest unit": (list(range(1, len(z) + 1)), gru_sum.max(1).values.tolist()),
              "plain LSTM: f_t + i_t, lowest unit": (list(range(1, len(lstm_sum) + 1)),
                                                    lstm_sum.min(1).values.tolist()),
              "plain LSTM: mean over units": (list(range(1, len(lstm_sum) + 1)), lstm_sum.mean(1).tolist()),
              "plain LSTM: highest unit": (list(range(1, len(lstm_sum) + 1)), lstm_sum.max(1).values.tolist())}
    st.plotly_chart(figures.lines({}, points=series, title="Share kept + share taken in, per step",
                                  x_title=f"step ({len(names)} read, then written)",
                                  y_title="kept + taken in", y_range=[0, 2], **plot), key="rec_gru_sum")
    gap = recurrence.recomputed_gap(trained["gru"], demo["source"], gru)
    near = float(((lstm_sum - 1).abs() <= 0.1).double().mean())
    off = float((gru_sum - 1).abs().max())
    told = (f"For the GRU, kept + taken in is 1 at every step and unit ("
            + (f"largest difference from 1: {off:.1e}, float rounding" if off else "exactly, in every unit")
            + "), and the recomputed states match the model's "
            f"own GRU layers to {gap:.1e}: one gate really sets both shares. The plain LSTM's f_t + i_t runs from "
            f"{float(lstm_sum.min()):.2f} to {float(lstm_sum.max()):.2f} over its {lstm_sum.shape[1]} units and "
            f"{len(lstm_sum)} steps, and is within 0.1 of 1 for {near:.0%} of these pairs: "
            + ("its two gates are free, and it does not use them as one." if near < 0.5 else
               "its gates are free, yet here it mostly keeps their sum near 1, as a GRU must.") + " "
            f"The GRU keeps {float(gru.encoder.z.mean()):.3f} of its state per step on average while reading, the "
            f"LSTM {float(lstm.encoder.f.mean()):.3f} of its cell.")
    st.markdown(md(told))
    st.caption("Step numbers: the encoder's steps first, then the decoder's; the two models may write answers of "
               "different lengths. In the lower chart the GRU's two lines lie on top of each other at 1.")


def _others(task, token: int) -> list[int]:
    """Every symbol of the task except ``token``, starting from the one after it (the default substitute)."""
    i = task.ids.index(token)
    return task.ids[i + 1:] + task.ids[:i]


# ------------------------------------------------------------------ counting and nesting (core.variants.hierarchy)
HIERARCHY_KINDS = {"transformer": "Transformer", "lstm": "LSTM"}
MEASURES = (("parity", "accuracy", "PARITY: even or odd"), ("brackets", "accuracy", "Balanced brackets: yes or no"),
            ("brackets", "depth", "Bracket depth at each position"))


def hierarchy_folder() -> Path:
    """Where the four counting models live: ``ATTENTION_HIERARCHY_DIR`` or ``assets/hierarchy``."""
    return Path(os.environ.get("ATTENTION_HIERARCHY_DIR", Path(__file__).resolve().parents[1] / "assets" / "hierarchy"))


def hierarchy_stamp(folder: Path) -> float | None:
    """When the results in ``folder`` were written (a new run is loaded anew), or None when they are missing."""
    path = folder / hierarchy.RESULTS
    return path.stat().st_mtime if path.exists() else None


@st.cache_resource(show_spinner="Loading the four counting models…", max_entries=2)
def load_hierarchy(folder: str, when: float):
    """The models and results of :func:`core.variants.hierarchy.load` (``when``: part of the key only)."""
    return hierarchy.load(folder)


@bounded
def answered(folder: str, when: float, task: str, text: str) -> dict:
    """Each model of ``task`` on one parsed string: ``{kind: core.variants.hierarchy.predict's row}``."""
    models, _ = load_hierarchy(folder, when)
    return {kind: {k: (v[0] if v is not None else None) for k, v in hierarchy.predict(m, [text]).items()}
            for kind, m in models[task].items()}


def length_means(results: dict) -> tuple[list[str], dict]:
    """The evaluated lengths cut in three ranges (the training lengths, then the rest in two halves) and, per
    (task, measure, kind), the mean of the curve over each: ``(range names, {(task, measure, kind): [3 means]})``."""
    cfg = hierarchy.config_of(results["config"])
    lengths, mid = results["lengths"], (cfg.train_len + cfg.eval_len) // 2
    bands = [(lo, hi) for lo, hi in ((2, cfg.train_len), (cfg.train_len + 1, mid), (mid + 1, cfg.eval_len))]
    names = [f"{min(n for n in lengths if lo <= n <= hi)}–{hi} characters" for lo, hi in bands]
    means = {}
    for task, measure, _ in MEASURES:
        for kind, curve in results["curves"][task].items():
            values = curve[measure]
            means[task, measure, kind] = [sum(v for n, v in zip(lengths, values) if lo <= n <= hi)
                                          / sum(1 for n in lengths if lo <= n <= hi) for lo, hi in bands]
    return names, means


def _verdict(seen: float, far: float, chance: float | None) -> str:
    """One clause on a model's mean over the training lengths (``seen``) and over the longest (``far``)."""
    if seen < 0.9:
        return "it did not learn the task well even at the training lengths"
    if far >= 0.95:
        return "it keeps that up on the longest strings"
    if chance is not None and far < chance + 0.1:
        return "on the longest strings it is no better than chance"
    return "it loses part of that on the longest strings"


def deeper_share(cfg: hierarchy.HierarchyConfig) -> tuple[int, float]:
    """How deep a balanced training string can nest (``train_len`` // 2) and the share of the balanced test strings
    of the longest length (``eval_len``) that nest deeper than that."""
    long = [s for s in hierarchy.eval_strings("brackets", cfg.eval_len, cfg.eval_n, cfg.eval_seed)
            if hierarchy.is_balanced(s)]
    return cfg.train_len // 2, sum(max(hierarchy.depths(s)) > cfg.train_len // 2 for s in long) / max(1, len(long))


def first_below(lengths: list[int], values: list[float], level: float) -> int | None:
    """The first length whose value is below ``level`` (None: none is)."""
    return next((n for n, v in zip(lengths, values) if v < level), None)


def hierarchy_reading(results: dict) -> str:
    """What the shipped curves show, said from their numbers."""
    cfg = hierarchy.config_of(results["config"])
    names, means = length_means(results)
    told = []
    for task, measure, title in MEASURES:
        chance = 0.5 if measure == "accuracy" else None
        parts = []
        for kind, short in HIERARCHY_KINDS.items():
            seen, _, far = means[task, measure, kind]
            unit = "positions" if measure == "depth" else "strings"
            parts.append(f"the {short} gets {seen:.0%} of the {unit} right on {names[0]} and {far:.0%} on "
                         f"{names[2]}: " + _verdict(seen, far, chance))
        told.append(f"**{title}.** " + parts[0][0].upper() + parts[0][1:] + "; " + parts[1] + ".")
    t, l = (means["parity", "accuracy", k][2] for k in ("transformer", "lstm"))
    if t < 0.6 and l >= 0.9:
        told.append(f"On PARITY the LSTM carries one bit from step to step, and that works at every length measured, "
                    f"up to {cfg.eval_len}. The Transformer found a rule that holds only near the lengths it saw, as "
                    "Hahn's result leads one to expect.")
    elif t >= 0.9:
        told.append("On PARITY the Transformer generalises here: this run does not show the limit Hahn proves.")
    bt, bl = (means["brackets", "accuracy", k][2] for k in ("transformer", "lstm"))
    drops = {short: first_below(results["lengths"], results["curves"]["brackets"][kind]["accuracy"], 0.95)
             for kind, short in HIERARCHY_KINDS.items()}
    where = (f"at {drops['Transformer']} characters for both" if len(set(drops.values())) == 1 else
             " and ".join(f"at {n} characters for the {k}" if n else f"nowhere for the {k}" for k, n in drops.items()))
    dt, dl = (means["brackets", "depth", k][2] for k in ("transformer", "lstm"))
    if abs(bt - bl) < 0.1 and (bl - bt >= 0.02 or dl - dt >= 0.02):
        told.append(f"On balanced brackets both answer almost perfectly until well past the training length, then "
                    f"drop (accuracy first falls below 95 %: {where}). On {names[2]} the LSTM is a little ahead: "
                    f"{bl:.0%} against {bt:.0%} of the answers and {dl:.0%} against {dt:.0%} of the depths, from one "
                    "seed each, a small lead in the direction Tran et al. found for hierarchical data. One kind of "
                    "bracket needs only a counter, not a stack; Hahn's bracket theorem is about two kinds (Dyck-2).")
    elif abs(bt - bl) < 0.1:
        told.append(f"On balanced brackets neither model is clearly better: both answer almost perfectly until well "
                    f"past the training length, then drop (accuracy first falls below 95 %: {where}), and their "
                    f"depths at each position are as close ({dl:.0%} and {dt:.0%} on {names[2]}). Recurrence gives "
                    "no clear advantage here. One kind of bracket needs only a counter, not a stack; Hahn's bracket "
                    "theorem is about two kinds (Dyck-2).")
    elif bl > bt:
        told.append(f"On balanced brackets the LSTM holds up better than the Transformer on the longest strings "
                    f"(accuracy first falls below 95 %: {where}), in the direction Tran et al. found for "
                    "hierarchical data.")
    else:
        told.append(f"On balanced brackets the Transformer holds up better than the LSTM on the longest strings "
                    f"(accuracy first falls below 95 %: {where}): recurrence gives no advantage here. One kind of "
                    "bracket needs only a counter, not a stack; Hahn's bracket theorem is about two kinds (Dyck-2).")
    if min(bt, bl) < 0.9:
        deep, share = deeper_share(cfg)
        told.append(f"Long strings are also deeper: a balanced training string nests at most {deep} deep, and "
                    f"{share:.0%} of the balanced test strings of {cfg.eval_len} characters nest deeper. So the drop "
                    "at the longest lengths may come from depths never seen as much as from length.")
    told.append(f"Hahn's theorem is about exact answers at every length by a model of fixed size. These are one "
                f"small model of each kind, one seed and one recipe: a failure here does not prove the theorem, and "
                f"success up to {cfg.eval_len} characters would not refute it.")
    return "  \n".join(told)


@bounded
def hierarchy_summary(folder: str, when: float) -> dict:
    """The table of means by length range and the reading (:func:`length_means`, :func:`hierarchy_reading`), once
    per run of the models."""
    _, results = load_hierarchy(folder, when)
    names, means = length_means(results)
    rows = [{"task": title, "model": HIERARCHY_KINDS[kind], **{n: f"{v:.1%}" for n, v in zip(names, vals)}}
            for task, measure, title in MEASURES for kind in HIERARCHY_KINDS for vals in [means[task, measure, kind]]]
    return {"rows": rows, "reading": hierarchy_reading(results)}


def _accuracy_chart(results: dict, task: str, measure: str, title: str, plot: dict):
    """One measure by length for both kinds, the longest training string marked (and chance, for an answer)."""
    cfg = hierarchy.config_of(results["config"])
    fig = figures.lines({HIERARCHY_KINDS[k]: c[measure] for k, c in results["curves"][task].items()},
                        results["lengths"], title=f"{title}, by length", x_title="string length (characters)",
                        y_title="share of positions right" if measure == "depth" else "accuracy",
                        y_range=[0, 1.02], **plot)
    fig.add_vline(x=cfg.train_len, line_dash="dot", annotation_text="longest training string",
                  annotation_position="bottom right")
    if measure == "accuracy":
        fig.add_hline(y=0.5, line_dash="dash", line_color="grey", annotation_text="chance",
                      annotation_position="bottom left")  # at the left the curves are near 1, far from the label
    return fig


def _n(count: int, word: str) -> str:
    """``count`` and ``word``, plural unless one: "1 character", "3 ones"."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def _answers_table(task: str, text: str, got: dict) -> None:
    """The models' answers to one string beside the rule's."""
    truth = hierarchy.label(task, text)
    st.dataframe([{"model": HIERARCHY_KINDS[k], "answer": hierarchy.ANSWERS[task][int(r["answer"])],
                   "confidence": f"{r['confidence']:.1%}", "right": "yes" if r["answer"] == truth else "no"}
                  for k, r in got.items()], hide_index=True, width="stretch", key=f"hier_{task}_table")
    if task == "parity":
        ones = text.count("1")
        st.caption(f"The rule: {_n(ones, 'one')}, so {hierarchy.ANSWERS[task][int(truth)]}; "
                   f"{_n(len(text), 'character')}.")
    else:
        ds = hierarchy.depths(text)
        why = ("the depth ends at 0 and never goes below it" if truth else
               f"the depth goes below 0 at character {next(i for i, d in enumerate(ds) if d < 0) + 1}"
               if min(ds) < 0 else f"the depth ends at {ds[-1]}, not 0")
        st.caption(f"The rule: {hierarchy.ANSWERS[task][int(truth)]}, because {why}; {_n(len(text), 'character')}.")


def counting_section(plot: dict) -> None:
    """Draw "Counting and nesting: where attention needs help": the shipped accuracy-by-length curves of the four
    models of core.variants.hierarchy with their reading, then the learner's bit string and bracket string read
    now by every model."""
    st.header("Counting and nesting: where attention needs help")
    folder = hierarchy_folder()
    when = hierarchy_stamp(folder)
    if when is None:
        st.info(f"The counting models are not in {md(folder)}. Train them with "
                "`python -m core.variants.hierarchy --out assets/hierarchy`.")
        return
    try:
        results = load_hierarchy(str(folder), when)[1]
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        st.warning(f"The counting models in {md(folder)} could not be read: {md(e)}")
        return
    cfg = hierarchy.config_of(results["config"])
    params = {k: m["params"] for k, m in results["models"].items()}
    st.markdown(
        "The seeds cite Hahn (2020): self-attention cannot recognise PARITY (is the number of 1s even?) or nested "
        "brackets at every length unless the model grows with the input; and Tran et al. (2018): recurrent models "
        "did better than Transformers where the data is hierarchical. Here both kinds of model learn two small "
        f"languages on strings of 1 to {cfg.train_len} characters, then read strings of up to {cfg.eval_len}. "
        f"The Transformer is the lab's own decoder stack ({cfg.layers} layers, d_model = {cfg.d_model}, "
        f"{cfg.heads} heads) with a causal mask and no position encoding; the LSTM has {cfg.lstm_hidden} hidden "
        f"units. Both have {min(params.values()):,}–{max(params.values()):,} parameters, see the same "
        "strings in the same order, and give an answer at the last character. For brackets they also give the "
        "depth after each one: the number of ( minus the number of ) so far. A string is balanced when the depth "
        "never drops below 0 and ends at 0.")
    c1, c2 = st.columns(2)
    for where, (task, measure, title) in zip((c1, c2, st), MEASURES):
        where.plotly_chart(_accuracy_chart(results, task, measure, title, plot), key=f"hier_{task}_{measure}")
    summary = hierarchy_summary(str(folder), when)
    st.dataframe(summary["rows"], hide_index=True, width="stretch", key="hier_means")
    st.markdown("**What these curves show.**  \n" + summary["reading"])
    seconds = max(m["cpu_seconds"] for m in results["models"].values())
    shift = max(m["rounding_shift"] for m in results["models"].values())
    st.caption(f"{code(results.get('command', '?'))} — {cfg.steps:,} steps of {cfg.batch_size} strings per model, "
               f"at most {seconds:.0f} s of CPU each on one thread; {cfg.eval_n} fresh strings per even length "
               "(balanced or not with equal odds for brackets), measured with the shipped weights"
               + (f" (float16: rounding moved no point of a curve by more than {shift:.1%})." if cfg.half else "."))

    st.subheader("Your own strings, read by all four models")
    b1, b2 = st.columns(2)
    longest = cfg.eval_len
    typed = {"parity": text_box(f"Bits: 0 and 1, up to {longest} characters", "1101001", key="hier_bits",
                                limit=longest + 100, where=b1),
             "brackets": text_box(f"Brackets: ( and ), up to {longest} characters", "(()(()))", key="hier_brackets",
                                  limit=longest + 100, where=b2)}
    got = {}
    for where, (task, raw) in zip((b1, b2), typed.items()):
        with where:
            try:
                text = hierarchy.parse(raw, task, longest)
            except ValueError as e:
                st.warning(md(e))
                continue
            got[task] = (text, answered(str(folder), when, task, text))
            _answers_table(task, text, got[task][1])
    if "brackets" in got:
        text, answers = got["brackets"]
        truth = hierarchy.depths(text)
        series = {"the rule": truth} | {HIERARCHY_KINDS[k]: r["depth"] for k, r in answers.items()}
        st.plotly_chart(figures.lines(series, [f"{i + 1} {c}" for i, c in enumerate(text)],
                                      title="Depth after each bracket: the rule and each model",
                                      x_title="character", y_title="depth", **plot), key="hier_depth")
        right = {HIERARCHY_KINDS[k]: sum(round(p) == t for p, t in zip(r["depth"], truth)) for k, r in answers.items()}
        st.caption("The lines show each model's number before rounding. Rounded to the nearest whole number, the "
                   "depth is right at "
                   + " and ".join(f"{n} of {_n(len(text), 'character')} for the {k}" for k, n in right.items())
                   + f". Your string is {_n(len(text), 'character')} long; the models trained on at most "
                     f"{cfg.train_len}.")
