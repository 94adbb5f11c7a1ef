"""The Positional encoding page's "Variants of the formula" section: the ways the seeds write the sinusoidal table
differently from the paper, each computed and checked with the page's own d_model, positions, base and shift; the
ALiBi tab's sign check against the Wikipedia seed's B[i, j] = j − i; section 1's binary-counter expander; and its
"Longer than training" section: five small LMs trained on 64 tokens, scored position by position on 256
(:mod:`core.variants.extrapolation`)."""
from __future__ import annotations

import math
from pathlib import Path

import streamlit as st

from app import figures
from app.cache import bounded
from app.shell import text_box
from app.text import md, quoted
from core.positional import wavelengths
from core.probes import positions
from core.variants import extrapolation

LAYOUTS = {"interleaved": "interleaved: sin, cos, sin, cos … (the paper, this app)",
           "halves": "all sines, then all cosines (the lecture slides' figure)"}


@bounded
def layout_study(n_pos: int, d_model: int, base: int) -> dict:
    """:func:`core.probes.positions.layout_check`, once per table size and base (not on every rerun)."""
    return positions.layout_check(n_pos, d_model, float(base))


@bounded
def indexing_study(n_pos: int, d_model: int, k: int, base: int) -> dict:
    """:func:`core.probes.positions.indexing_check`, once per table size, shift and base."""
    return positions.indexing_check(n_pos, d_model, k, float(base))


def formula_variants(number: int, d_model: int, n_pos: int, base: int, k: int, **P) -> None:
    """Draw the section: the layout radio with its table and dot-product check, the per-dimension formula with its
    rotation check, and the wavelength range for this d_model."""
    st.header(f"{number}. Variants of the formula")
    st.markdown("The seeds write the sinusoidal table in three ways that differ from the paper (Vaswani et al.). "
                f"Each is computed here with section 1's settings (d_model = {d_model}, {n_pos} positions, "
                f"N = {base:,}) and section 3's shift (k = {k}).")

    st.subheader("All sines first, then all cosines")
    st.markdown("The lecture slides show a table split in half: sines on the left, cosines on the right. The paper "
                "interleaves them: sine on even dimensions, cosine on odd ones.")
    # the slides' layout first: the paper's interleaved table is section 1's picture already
    layout = st.radio("Layout of the dimensions", list(LAYOUTS), format_func=LAYOUTS.get, horizontal=True,
                      index=1, key="pe_layout")
    lc = layout_study(n_pos, d_model, base)
    st.plotly_chart(figures.matrix(lc[layout], x_title="dimension", y_title="position", value_name="PE", diverging=True,
                                   title=f"PE, {'sines then cosines' if layout == 'halves' else 'interleaved'}: "
                                         f"{n_pos} positions × {d_model} dimensions", **P), key="pe_layout_table")
    c1, c2 = st.columns(2)
    c1.metric("Largest |difference| of PE(i)·PE(j), the two layouts", f"{lc['gram_diff']:.1e}")
    c2.metric("Largest |difference| of the tables, columns reordered", f"{lc['permutation_diff']:.1e}")
    st.caption("Sines-then-cosines is the paper's table with its columns reordered: dimension 2i moves to i and "
               "2i + 1 to d_model/2 + i. A dot product adds the same products in another order, so every "
               "PE(i)·PE(j) stays the same (measured above). The picture changes; the geometry does not.")

    st.subheader("One frequency per dimension instead of per pair")
    st.markdown("The Stärk survey (appendix A) indexes the frequency by the dimension i, not by the pair:")
    st.latex(r"PE_{(pos,i)}=\sin\!\left(pos/N^{2i/d_{model}}\right)\ (i\text{ even}),\quad"
             r"\cos\!\left(pos/N^{2i/d_{model}}\right)\ (i\text{ odd})")
    if k < 1:
        st.info("With shift k = 0 every check is exact. Pick a shift k of 1 or more in section 3.")
    else:
        ic = indexing_study(n_pos, d_model, k, base)
        c1, c2, c3 = st.columns(3)
        c1.metric(f"Paper: largest |R_k·PE(pos) − PE(pos+{k})|", f"{ic['paper']:.1e}")
        c2.metric("Per dimension: the same check", f"{ic['per_dimension']:.2f}")
        c3.metric("Per dimension: best 2×2 map per pair", f"{ic['per_dimension_best']:.2f}",
                  help="For each pair of dimensions (2i, 2i + 1), the 2×2 matrix that best sends every position to "
                       f"the one {k} later (least squares); the largest error left.")
        second = float(base) ** (-2 / d_model)
        st.caption(f"Indexed per dimension, the table differs from the paper's by up to {ic['table_diff']:.2f}. In "
                   "the paper, dimensions 2i and 2i + 1 hold the sine and cosine of one angle, so a shift turns each "
                   f"pair by a fixed angle. Per dimension, the sine of dimension 0 runs at frequency 1 and the cosine "
                   f"of dimension 1 at {second:.4f}: no rotation, and no other 2×2 matrix per pair, shifts every "
                   "position. Section 3's property needs the paper's per-pair indexing.")

    lam = wavelengths(d_model, float(base))
    bound = 2 * math.pi * base
    told = (f"**Wavelengths.** Pair i repeats every λᵢ = 2π·N^(2i/d_model) positions. With d_model = {d_model} and "
            f"N = {base:,} they run from {float(lam[0]):.3f} (2π) to {float(lam[-1]):,.0f} (i = {d_model // 2 - 1}), "
            f"{float(lam[-1]) / bound:.0%} of N·2π = {bound:,.0f}. The paper's “from 2π to 10000·2π” names the bound "
            "that the longest wavelength approaches as d_model grows.")
    if base == 10000:
        told += (f" The CSE 589 paper writes 10000·π = {math.pi * base:,.0f}, half of that bound; the longest "
                 f"wavelength here is {float(lam[-1]) / (math.pi * base):.2f} times its value.")
    st.markdown(told)


def alibi_sign(n_heads: int, n_tokens: int, head: int) -> None:
    """The ALiBi tab's sign check: this app's −s·|i − j| against the Wikipedia seed's s·(j − i), for the sentence's
    length and the chosen head's slope (:func:`core.probes.positions.alibi_sign_check`): a two-row table and a
    caption with the measured difference below and above the diagonal."""
    st.markdown("**The sign in the Wikipedia seed.** It writes ALiBi as softmax(QKᵀ/√d_k + s·B) with "
                "B[i, j] = j − i. This page adds −s·|i − j|. Below the diagonal (keys before the query) the two are "
                "the same; above it they have opposite signs.")
    if n_tokens < 2:
        st.info("One token has no later key to compare. Type a sentence of two tokens or more.")
        return
    sc = positions.alibi_sign_check(n_heads, n_tokens, head)
    forms = {"app": "−s·|i − j| (this app)", "seed": "s·(j − i) (Wikipedia seed)"}
    far_bias = {"app": float(sc["app"][0, -1]), "seed": float(sc["seed"][0, -1])}
    st.dataframe([{"bias": label, "token 0 → last: bias": f"{far_bias[f]:+.3g}".replace("-", "−"),
                   "token 0 → last: weight": f"{sc['far'][f]:.3g}",
                   "token 0 → itself: weight": f"{sc['self'][f]:.3g}",
                   "on later keys (mean)": f"{sc['future'][f]:.3g}"} for f, label in forms.items()],
                 hide_index=True, width="stretch")
    s = sc["slope"]
    st.caption(f"Head {head}, slope s = {s:g}, {n_tokens} tokens, no mask (an encoder). Every q·k is set equal, so "
               "the bias alone sets the weights. Seed − app is 2·s·(j − i) above the diagonal and 0 elsewhere: "
               f"measured {sc['below']:.1f} on and below it, at most {sc['above']:.4g} above it "
               f"(2·s·(t − 1) = {2 * s * (n_tokens - 1):.4g}). With a causal mask the upper triangle is never used, "
               "and the two give the same weights (largest difference "
               + (f"{sc['causal_gap']:.1e}" if sc["causal_gap"] else "0") + "). Without a mask, "
               "the seed's B gives each later key a bonus that grows with distance, so the first token looks "
               "hardest at the last one. “On later keys” is the weight a query gives to the keys after it, averaged "
               "over the queries. The minus-absolute-value form keeps “nearer keys count more” both ways.")


def binary_counter(d_model: int, base: int, **P) -> None:
    """Section 1's expander "The sines as a binary counter?": positions 0–15 in binary beside the sign of the sine
    dimension whose wavelength is closest to each bit's period (:func:`core.probes.positions.binary_check`), for
    section 1's d_model and base; a table of how often they agree and a reading written from those counts."""
    with st.expander("The sines as a binary counter?"):
        st.markdown("Count from 0 to 15 in binary. Bit i flips every 2^i positions, so it repeats every 2^(i+1). "
                    "The Stärk survey (appendix A) calls the sinusoidal table a continuous version of this. Below, "
                    "each bit sits beside the sine dimension of section 1's table whose wavelength is closest to the "
                    "bit's period, read as a bit: 1 where the sine is below zero, 0 elsewhere.")
        bc = positions.binary_check(d_model, float(base))
        n_pos, n_bits = bc["bits"].shape
        rows = [str(p) for p in range(n_pos)]
        c1, c2 = st.columns(2)
        c1.plotly_chart(figures.matrix(bc["bits"], [f"bit {i}" for i in range(n_bits)], rows,
                                       title="Position in binary", x_title="bit", y_title="position",
                                       value_name="bit", show_values=True, zmin=0, zmax=1, height=420, **P),
                        key="pe_bits")
        c2.plotly_chart(figures.matrix(bc["signs"], [f"dim {d}" for d in bc["dims"]], rows,
                                       title="Sine below zero (1) or not (0)", x_title="sine dimension",
                                       y_title="position", value_name="sine < 0", show_values=True, zmin=0, zmax=1,
                                       height=420, **P), key="pe_sign_bits")
        st.dataframe([{"bit": i, "period (positions)": bc["periods"][i], "closest sine dimension": bc["dims"][i],
                       "its wavelength": round(bc["wavelengths"][i], 2),
                       "positions that agree": f"{bc['matches'][i]} of {n_pos}"} for i in range(n_bits)],
                     hide_index=True, width="stretch")
        st.markdown(binary_reading(bc, d_model, base))


def binary_reading(bc: dict, d_model: int, base: int) -> str:
    """What :func:`core.probes.positions.binary_check`'s counts show, in words: the bits faster than the fastest
    sine, the bits matched at every position or nearly, and the factor between two wavelengths."""
    n_pos = bc["bits"].shape[0]
    fastest = 2 * math.pi
    fast = [i for i, p in enumerate(bc["periods"]) if p < fastest]
    slow = [i for i in range(len(bc["periods"])) if i not in fast]
    parts = []
    if fast:
        parts.append(f"No sine here turns faster than once per 2π ≈ {fastest:.2f} positions. So "
                     + " and ".join(f"bit {i} (period {bc['periods'][i]})" for i in fast)
                     + (" have" if len(fast) > 1 else " has") + " no counterpart: dimension 0, the closest, agrees at "
                     + " and ".join(f"{bc['matches'][i]}" for i in fast) + f" of {n_pos} positions, about what a "
                     "coin would do.")
    for i in slow:
        m, lam = bc["matches"][i], bc["wavelengths"][i]
        verdict = ("at every position" if m == n_pos else f"at {m} of {n_pos} positions" +
                   (": the sign changes a little early or late, as λ is not exactly the period" if m >= n_pos - 3
                    else ": the two drift apart"))
        parts.append(f"Bit {i} (period {bc['periods'][i]}) and dimension {bc['dims'][i]} (λ = {lam:.2f}) agree "
                     f"{verdict}.")
    step = float(base) ** (2 / d_model)
    if step < 2:
        between = "many dimensions lie between two bits" if step < 1.5 else "some bits share a dimension"
        parts.append(f"The wavelengths 2π·N^(2i/d_model) grow by a factor of {step:.3f} from one pair to the next, "
                     f"not by 2 as a bit's period does. A wavelength lands near a power of two by chance, and "
                     f"{between}.")
    else:
        parts.append(f"The wavelengths 2π·N^(2i/d_model) grow by a factor of {step:.3g} from one pair to the next, "
                     "more than the 2 between two bits' periods: with so few dimensions several bits have to share "
                     "the same one.")
    close = [i for i in slow if bc["matches"][i] >= n_pos - 3]
    if close and fast and len(close) < len(slow):
        held = " and ".join(f"bit {i}" for i in close)
        parts.append(f"So the analogy holds, roughly, for {held} only here; it fails for the other bits.")
    elif close and fast:
        parts.append("So the analogy holds, roughly, for the slower bits here; it fails for the fastest.")
    elif close:
        parts.append("So the analogy holds, roughly, for every bit here.")
    else:
        parts.append("So the analogy does not hold here: no bit is matched at most positions.")
    return "**Reading.** " + " ".join(parts)


# ------------------------------------------------------------------ longer than training
FOLDER = Path(__file__).resolve().parents[1] / "assets" / "extrapolation"
NAMES = {"sinusoidal": "sinusoidal", "learned": "learned", "rope": "RoPE", "alibi": "ALiBi",
         "none": "none (no positions)"}
SMOOTH = 16  # positions averaged in the one-passage chart
TEXT_LIMIT = 4000  # characters: well past the 256 tokens the models read


def extrapolation_stamp(folder: Path | None = None) -> float | None:
    """When the results in ``folder`` (default :data:`FOLDER`) were written (a new run is loaded anew), or None when
    they are missing."""
    path = (folder or FOLDER) / extrapolation.RESULTS
    return path.stat().st_mtime if path.exists() else None


@st.cache_resource(show_spinner="Loading the five small language models…", max_entries=2)
def load_extrapolation(folder: str, when: float):
    """The five models, their tokenizer and results (:func:`core.variants.extrapolation.load`; ``when``:
    :func:`extrapolation_stamp`, part of the key only)."""
    return extrapolation.load(folder)


@bounded
def scored(folder: str, when: float, ids: tuple) -> dict:
    """Every model's loss at each position of one text (:func:`core.variants.extrapolation.score`)."""
    models, _, _ = load_extrapolation(folder, when)
    return extrapolation.score(models, list(ids))


@bounded
def heldout_summary(folder: str, when: float) -> dict:
    """The held-out table's rows and its reading (:func:`_rows`, :func:`_reading`), once per run of the models."""
    _, _, results = load_extrapolation(folder, when)
    seq_len = extrapolation.config_of(results["config"]).seq_len
    rows, means = _rows(results["curves"], seq_len)
    return {"rows": rows, "reading": _reading(means, seq_len, results["curves"])}


@bounded
def passage_texts(folder: str, when: float) -> dict:
    """The held-out passages decoded once: ``labels`` (their start, for the picker), ``texts`` (whole) and
    ``words``: how many words the first passage's first training length of tokens holds."""
    _, tokenizer, results = load_extrapolation(folder, when)
    seq_len = extrapolation.config_of(results["config"]).seq_len
    passages = [p["ids"] for p in results["passages"]]
    return {"labels": [quoted(tokenizer.decode(ids[:24]), 70) for ids in passages],
            "texts": [tokenizer.decode(ids) for ids in passages],
            "words": len(tokenizer.decode(passages[0][:seq_len + 1]).split())}


@bounded
def typed_ids(folder: str, when: float, text: str, repeat: bool) -> dict:
    """:func:`core.variants.extrapolation.text_ids` of the user's text, once per text."""
    _, tokenizer, results = load_extrapolation(folder, when)
    return extrapolation.text_ids(tokenizer, text, extrapolation.config_of(results["config"]).eval_len, repeat)


@bounded
def live_summary(folder: str, when: float, ids: tuple) -> dict:
    """:func:`scored` with what the page draws from it: ``smooth`` (running mean of :data:`SMOOTH`), ``rows``
    (the table, None while the text stays inside the training length), ``limits`` and the range of single
    losses (``low``, ``high``)."""
    _, _, results = load_extrapolation(folder, when)
    seq_len = extrapolation.config_of(results["config"]).seq_len
    live = scored(folder, when, ids)
    every = [v for values in live["losses"].values() for v in values if v is not None]
    return {"smooth": {k: extrapolation.running_mean(v, SMOOTH) for k, v in live["losses"].items()},
            "rows": _rows(live["losses"], seq_len)[0] if len(ids) - 1 > seq_len else None,
            "limits": live["limits"], "low": min(every), "high": max(every)}


def _chart(curve: dict, seq_len: int, *, title: str, y_title: str, **P):
    """Loss against position, one line per model (a learned model's line stops at its table), the training length
    marked."""
    series = {NAMES[k]: [v for v in values if v is not None] for k, values in curve.items()}
    fig = figures.lines(series, title=title, x_title="position (the token read; the loss is of the next one)",
                        y_title=y_title, **P)
    fig.add_vline(x=seq_len - 0.5, line_dash="dash", annotation_text=f"trained on {seq_len} tokens")
    return fig


def _fmt(value, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _rows(curve: dict, seq_len: int) -> tuple[list[dict], dict]:
    """The table's rows (mean loss over positions 0 … seq_len − 1, over the last 16 of them, and beyond) and, per
    model, ``(end, beyond)``: the means the reading compares."""
    rows, means = [], {}
    for kind, values in curve.items():
        inside = extrapolation.mean_of(values, 0, seq_len)
        end = extrapolation.mean_of(values, seq_len - 16, seq_len)
        beyond = extrapolation.mean_of(values, seq_len, len(values))
        means[kind] = (end, beyond)
        rows.append({"model": NAMES[kind], f"positions 0–{seq_len - 1}": _fmt(inside),
                     f"positions {seq_len - 16}–{seq_len - 1}": _fmt(end),
                     f"positions {seq_len}–{len(values) - 1}": _fmt(beyond) if beyond is not None
                     else "— (no position vector)",
                     "beyond ÷ last 16 trained": _fmt(None if beyond is None else beyond / end, 2)})
    return rows, means


def _first_rise(values, seq_len: int, end: float, width: int = 16, factor: float = 1.1) -> int | None:
    """The first position p ≥ ``seq_len`` where the mean loss of positions p … p + width − 1 is above ``factor`` ×
    ``end`` (None if it never is, or the values stop)."""
    for p in range(seq_len, len(values) - width + 1):
        mean = extrapolation.mean_of(values, p, p + width)
        if mean is None:
            return None
        if mean > factor * end:
            return p
    return None


def _reading(means: dict, seq_len: int, curve: dict | None = None) -> str:
    """What the held-out table shows, in words, from its numbers (``curve``: also where each model's loss first
    rises by more than 10 %)."""
    scored_ = {k: v for k, v in means.items() if v[1] is not None}
    ratio = {k: beyond / end for k, (end, beyond) in scored_.items()}
    best = min(scored_, key=lambda k: scored_[k][1])
    parts = [f"Past position {seq_len - 1}, {NAMES[best]} has the lowest mean loss "
             f"({scored_[best][1]:.3f}, against {scored_[best][0]:.3f} on positions {seq_len - 16}–{seq_len - 1})."]
    if "alibi" in scored_:
        if best == "alibi" and ratio["alibi"] <= 1.02:
            parts.append(f"ALiBi's claim holds on this measurement: trained on {seq_len} tokens, it reads "
                         f"{len(curve['alibi']) if curve else 'more'} positions with no rise in loss, and with no "
                         "fine-tuning.")
        elif best == "alibi":
            parts.append(f"ALiBi is the best past the training length, but its loss still rises "
                         f"({ratio['alibi']:.2f}× the end of the trained range): the claim holds only in part here.")
        else:
            parts.append(f"ALiBi's claim does not hold on this measurement: {NAMES[best]} reads past the training "
                         f"length better (ALiBi: {scored_['alibi'][1]:.3f}).")
    groups = (("Within 2 % of the trained end", lambda r: r <= 1.02), ("2–10 % worse", lambda r: 1.02 < r <= 1.1),
              ("More than 10 % worse", lambda r: r > 1.1))
    for name, test in groups:
        members = [k for k in ratio if test(ratio[k]) and not (k == "alibi" and best == "alibi")]
        if members:
            parts.append(f"{name} past it: " + "; ".join(f"{NAMES[k]}, {ratio[k]:.2f}×" for k in members) + ".")
    rises = {k: _first_rise(curve[k], seq_len, scored_[k][0]) for k in scored_} if curve else {}
    rises = {k: p for k, p in rises.items() if p is not None}
    if rises:
        parts.append("The loss first climbs more than 10 % above the trained end (mean of the next 16 positions) at "
                     + ", ".join(f"position {p} for {NAMES[k]}" for k, p in rises.items()) + ".")
    if "sinusoidal" in ratio and ratio["sinusoidal"] > 1.1:
        parts.append("Bounded values were not enough for the sines: the lecture slides' hope that they "
                     "“can hopefully extrapolate to longer sequences” does not hold for this small model.")
    if any(v[1] is None for v in means.values()):
        parts.append(f"The learned model has {seq_len} position vectors and none after: its line stops.")
    return " ".join(parts)


def extrapolation_section(number: int, **P) -> None:
    """Draw "Longer than training": the held-out loss by position of the five shipped models with its table and
    reading, then one passage (held out, or the user's text) scored live."""
    st.header(f"{number}. Longer than training")
    when = extrapolation_stamp()
    if when is None:
        st.info(f"The five models are not in {md(FOLDER)}. Train them with "
                "`python -m core.variants.extrapolation --out assets/extrapolation`.")
        return
    results = load_extrapolation(str(FOLDER), when)[2]
    cfg = extrapolation.config_of(results["config"])
    seq_len, eval_len = cfg.seq_len, cfg.eval_len
    minutes = max(m.get("cpu_seconds", m["seconds"]) for m in results["models"].values()) / 60
    st.markdown(
        f"Five small language models ({cfg.layers} layers, d_model = {cfg.d_model}) differ only in how they encode "
        f"position. They start from the same weights, read the same English text (the lm's corpus: Python and "
        f"Debian documentation) in the same batches of {seq_len}-token windows, for {cfg.steps:,} steps (at most "
        f"{minutes:.1f} minutes of CPU each, on one thread). Then each reads {eval_len} tokens, with no fine-tuning. "
        f"ALiBi's paper is titled “Train short, test long”; the Wikipedia article says it allows training on short "
        f"windows, then fine-tuning on longer ones. Vaswani et al. chose the sines because they “may allow the "
        f"model to extrapolate” past the training length. Here ALiBi is the model's only position signal, as in "
        f"Press et al. We measure the loss of the next token at every position.")

    curve = results["curves"]
    st.plotly_chart(_chart(curve, seq_len, y_title="mean loss (nats)",
                           title=f"Loss by position, {results['test_windows']} held-out windows",
                           **P), key="ex_heldout")
    summary = heldout_summary(str(FOLDER), when)
    st.dataframe(summary["rows"], hide_index=True, width="stretch")
    st.markdown(summary["reading"])
    st.caption(f"Held out: the corpus's test split, none of it seen in training. Positions {seq_len - 16}–"
               f"{seq_len - 1} are the fair reference: with more text before it, a next token gets easier, so a "
               "model that reads long texts well keeps going down past the line. The ALiBi bias, −slope·|i − j|, "
               f"is the same formula at every distance; past {seq_len} the distances are only larger. A learned "
               f"table has no row for position {seq_len}; sines and RoPE angles there are values training never "
               "showed the model.")

    st.subheader("One passage, scored now")
    source = st.radio("Text", ["passage", "yours"], horizontal=True, key="ex_source",
                      format_func={"passage": "a held-out passage", "yours": "your text"}.get)
    passages, texts = results["passages"], passage_texts(str(FOLDER), when)
    if source == "passage":
        pick = st.selectbox("Passage", range(len(passages)), key="ex_passage", format_func=texts["labels"].__getitem__)
        ids = passages[pick]["ids"]
        with st.expander("The passage"):
            st.caption(md(texts["texts"][pick]))
    else:
        text = text_box(f"Your text (English; the models read up to {eval_len} tokens)", "", key="ex_text",
                        limit=TEXT_LIMIT, area=True)
        repeat = st.checkbox(f"Repeat my text until it fills {eval_len} tokens", key="ex_repeat",
                             help="After the first copy a model can copy, so its loss falls for a reason that is "
                                  "not position.")
        if not text.strip():
            st.info(f"Type or paste some English text: in the first held-out passage, {seq_len} tokens are "
                    f"{int(texts['words'])} words, so a text longer than that reaches past position {seq_len - 1} (or "
                    "tick the box to repeat a short one).")
            return
        got = typed_ids(str(FOLDER), when, text, repeat)
        ids = got["ids"]
        if got["cut"] and not repeat:
            st.info(f"Your text has {got['tokens']} tokens; the models read the first {eval_len}.")
        if len(ids) - 1 <= seq_len:
            st.info(f"Your text has {got['tokens']} tokens: the models predict them from positions 0–"
                    f"{len(ids) - 2} ([BOS] first), all inside the training length of {seq_len}. Paste a longer "
                    "text, or tick the box to repeat it.")
    if len(ids) < 2:
        st.info("Nothing to score: the text has no token to predict.")
        return
    live = live_summary(str(FOLDER), when, tuple(ids))
    st.plotly_chart(_chart(live["smooth"], seq_len, y_title=f"loss, mean of {SMOOTH} positions",
                           title=f"This text: loss by position, running mean of {SMOOTH}", **P), key="ex_live")
    if live["rows"]:
        st.dataframe(live["rows"], hide_index=True, width="stretch")
    for kind, message in live["limits"].items():
        st.caption(f"{NAMES[kind]}: {md(message)}.")
    st.caption(f"One text is noisy: here single tokens' losses run from {live['low']:.2f} to {live['high']:.1f}, hence "
               f"the running mean. Each point is the mean loss of that position and the {SMOOTH - 1} before it.")
