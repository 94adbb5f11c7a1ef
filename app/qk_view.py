"""The Q·K walkthrough page's section "Attention as a Hopfield update": the chosen head's keys as the stored
patterns of a modern Hopfield network (Ramsauer et al. 2020), its query as the state, updated a few times with the
transformer's β = 1/√d_k and with larger ones (:func:`core.probes.analysis.hopfield_updates`)."""
from __future__ import annotations

import math

import streamlit as st
import torch

from app import figures
from app.text import md
from core.probes.analysis import hopfield_updates

MULTIPLIERS = (1, 4, 16)  # β = m/√d_k; m = 1 is the transformer's own scale


def hopfield_runs(row: dict, steps: int) -> dict:
    """Per multiplier m of :data:`MULTIPLIERS`, :func:`core.probes.analysis.hopfield_updates` of the row's keys
    (those the mask keeps) from its query q, with β = m/√d_k."""
    d_k = row["q"].shape[0]
    visible = row["mask"] == 0
    return {m: hopfield_updates(row["k"], row["q"], m / math.sqrt(d_k), steps, visible) for m in MULTIPLIERS}


def _beta(m: int, d_k: int) -> str:
    return f"{m}/√{d_k}" if m != 1 else f"1/√{d_k}"


def hopfield_reading(runs: dict, k_tokens, d_k: int, n_stored: int, top_score: int) -> str:
    """What the runs show, in words, from their numbers: where one update with the transformer's β lands (one
    stored key or a mix of several), where the state is after the last update, and where the larger βs end.
    ``k_tokens``: the key tokens already escaped for Markdown (:func:`app.text.md`)."""
    first = runs[1]
    w1 = first["weights"][0]
    n1, top = first["keys_90"][0], int(w1.argmax())  # top_score's key unless an ALiBi bias moved the weights
    steps = len(first["keys_90"])
    said = (f"With the transformer's β = 1/√{d_k}, one update gives its largest weight, {float(w1[top]):.2f}, to "
            f"“{k_tokens[top]}”; {n1} of the {n_stored} stored keys {'holds' if n1 == 1 else 'hold'} 90 % of the "
            "weight. ")
    if n1 == 1:
        said += "The first update already lands on one stored key: retrieval. "
    else:
        said += (f"So one update lands on an average of {n1} keys, a metastable state in Ramsauer et al.'s terms, "
                 "not on one stored key. ")
    last = first["keys_90"][-1]
    end = int(first["weights"][-1].argmax())
    if last == 1:
        said += f"Updated {steps} times, the state settles on “{k_tokens[end]}”. "
    else:
        said += f"After {steps} updates it still mixes {last} keys. "
    for m in MULTIPLIERS[1:]:
        run = runs[m]
        single = next((s + 1 for s, n in enumerate(run["keys_90"]) if n == 1), None)
        where = int(run["weights"][-1].argmax())
        if single is None:
            said += f"With β = {_beta(m, d_k)} the state still mixes {run['keys_90'][-1]} keys after {steps} updates. "
        elif run["keys_90"][-1] == 1:
            said += (f"With β = {_beta(m, d_k)} one key first holds 90 % of the weight at update {single}; the "
                     f"state ends on “{k_tokens[where]}”. ")
        else:
            said += (f"With β = {_beta(m, d_k)} one key first holds 90 % of the weight at update {single}, but "
                     f"after {steps} updates the state mixes {run['keys_90'][-1]} keys again. ")
    big = runs[MULTIPLIERS[-1]]
    landed = int(big["weights"][-1].argmax())
    if big["keys_90"][-1] == 1 and landed == top_score:
        said += "That is the key with the largest q·k: a large β retrieves the nearest stored key."
    elif big["keys_90"][-1] == 1:
        said += (f"The key with the largest q·k is “{k_tokens[top_score]}”; the updates moved on from it. At a "
                 "large β each update jumps to the key with the largest k·ξ, and from a key k_a that can be another "
                 "key k_b (k_a·k_b > k_a·k_a: k_b longer and pointing nearly the same way).")
    return "**Reading.** " + said


def hopfield_section(number: int, row: dict, k_tokens, q_token: str, **P) -> None:
    """Draw the section for one row of attention (:func:`core.probes.analysis.attention_row`): per β a heatmap of
    the softmax weights per update, the energy after each update, a table and a reading; a message instead when the
    query sees fewer than two keys."""
    st.subheader(f"{number}. Attention as a Hopfield update")
    d_k = row["q"].shape[0]
    st.markdown(
        "Ramsauer et al. (2020, “Hopfield Networks is All You Need”) read attention as a memory. A modern Hopfield "
        "network stores patterns: here this head's keys k_j, one per token the query can see. From a state ξ it "
        f"moves to a weighted mean of the stored keys. We start at ξ = q, the query of “{md(q_token)}” (x·W_Q). "
        f"With β = 1/√{d_k} the first softmax is this head's attention row above. A large β makes the softmax pick "
        "one key (retrieval); a small one mixes several (a metastable state). Each update must lower the energy E "
        "or leave it as it is (their Theorem 1).")
    st.latex(r"\xi^{\mathrm{new}}=K^\top\mathrm{softmax}(\beta K\xi)\qquad "
             r"E(\xi)=-\beta^{-1}\log\sum_j e^{\beta\,k_j\cdot\xi}+\tfrac12\,\xi^\top\xi+\beta^{-1}\log N"
             r"+\tfrac12 M^2")
    st.caption("The real head returns Σⱼ wⱼ vⱼ, with values from a separate projection W_V. Here the keys serve as "
               "the values, so the state stays among the keys and can be updated again: pure retrieval, not what "
               "the head outputs. N is the number of stored keys, M the largest ‖k_j‖.")
    visible = row["mask"] == 0
    n_stored = int(visible.sum())
    if n_stored < 2:
        st.info("This query sees one key only, so the update has nothing to choose from. Type a sentence of two "
                "tokens or more, or, in a decoder, pick a later query token.")
        return
    steps = st.slider("Updates", 2, 12, 5, key="qk_hop_steps")
    runs = hopfield_runs(row, steps)
    # two maps a row: three side by side left about 90 px a map beside the sidebar at 1280 px, too little for the keys
    cols = [c for _ in range(0, len(runs), 2) for c in st.columns(2)]
    step_names = [f"update {s + 1}" for s in range(steps)]
    for col, (m, run) in zip(cols, runs.items()):
        z = run["weights"].masked_fill(~visible, float("nan"))
        col.plotly_chart(figures.matrix(z, k_tokens, step_names, title=f"β = {_beta(m, d_k)}: weights per update",
                                        x_title="stored key", y_title="update", value_name="weight", zmin=0, zmax=1,
                                        height=200 + 24 * max(steps, 4), **P), key=f"qk_hop_{m}")
    st.plotly_chart(figures.lines({f"β = {_beta(m, d_k)}": run["energy"] for m, run in runs.items()},
                                  list(range(steps + 1)), title="Energy E(ξ) after each update",
                                  x_title="update (0: ξ = q)", y_title="E(ξ)", **P), key="qk_hop_energy")
    rows = []
    for m, run in runs.items():
        w, e = run["weights"], run["energy"]
        rise = float((e[1:] - e[:-1]).max())
        rows.append({"β": f"{_beta(m, d_k)} = {m / math.sqrt(d_k):.3f}",
                     **{f"update {u + 1}": f"{float(w[u].max()):.2f} on {k_tokens[int(w[u].argmax())]}, "
                                          f"{run['keys_90'][u]} for 90 %" for u in (0, steps - 1)},
                     "energy E": f"{float(e[0]):.2f} → {float(e[-1]):.2f}",
                     "E rose?": f"yes, by {rise:.1e}" if rise > 1e-9 else "no"})
    st.dataframe(rows, hide_index=True, width="stretch")
    scores = (row["k"] @ row["q"]).masked_fill(~visible, float("-inf"))
    st.markdown(hopfield_reading(runs, [md(t) for t in k_tokens], d_k, n_stored, int(scores.argmax())))
    first = runs[1]["weights"][0]
    diff = float((first - row["traced_weights"].double())[visible].abs().max())
    told = (f"Update 1 with β = 1/√{d_k} against the head's own weights (the model's trace): max |difference| = "
            f"{diff:.1e}.")
    if float(row["bias"].abs().max()) > 0:
        told += " This model also adds an ALiBi bias to its scores; the Hopfield update leaves it out."
    st.caption(told + " Each update cell: the largest weight, its key and how many keys hold 90 % of the weight. "
               "A rise of E would break the theorem; “no” allows rises below 1e-9, float rounding.")
