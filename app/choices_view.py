"""Two training choices of the seeds, measured (:mod:`core.training.choices`): ReLU, GELU or SwiGLU in the
feed-forward layers, and the paper's average of the last checkpoints. Drawn from the shipped results file; nothing
trains when the page opens."""
from __future__ import annotations

import os
import re
from pathlib import Path

import streamlit as st

from app import figures
from app.text import code
from core.io import jsonio
from core.training import choices

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(os.environ.get("ATTENTION_CHOICES_JSON", ROOT / "assets" / "choices" / "results.json"))
SMOOTH = 50  # steps in the training curves' running mean
NAMES = {"relu": "ReLU", "gelu": "GELU", "swiglu": "SwiGLU"}


@st.cache_data(max_entries=2, show_spinner=False)
def _read(path: str, when: float) -> dict:
    return jsonio.loads(Path(path).read_text(encoding="utf-8"))


def results() -> dict | None:
    """The shipped results (None if the file is missing)."""
    return _read(str(RESULTS), RESULTS.stat().st_mtime) if RESULTS.exists() else None


def running_mean(values: list[float], width: int) -> list[float]:
    """The mean of each window of ``width`` values ending at each step (shorter windows at the start)."""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= width:
            total -= values[i - width]
        out.append(total / min(i + 1, width))
    return out


def reading(res: dict) -> str:
    """What the runs show, in words, from the numbers in ``res``."""
    runs = {r["activation"]: r for r in res["runs"]}
    last = {a: r["held_out"]["last weights"] for a, r in runs.items()}
    best, worst = min(last, key=last.get), max(last, key=last.get)
    gains = {a: choices.best_average(r) for a, r in runs.items()}
    k = res["config"]["snapshots"]
    every = res["config"]["snapshot_every"]
    helped = [a for a, (_, g) in gains.items() if g > 0]
    spread = last[worst] - last[best]
    gain_lo, gain_hi = min(g for _, g in gains.values()), max(g for _, g in gains.values())
    text = (f"**Activation.** {NAMES.get(best, best)} ended lowest on held-out text "
            f"({last[best]:.3f} nats a token), {NAMES.get(worst, worst)} highest "
            f"({last[worst]:.3f}): a spread of {spread:.3f}, from one seed each, so differences this small may not "
            "hold for another seed. ")
    paper = [r["held_out"]["last weights"] - r["held_out"]["mean of the last 5"] for r in runs.values()]
    names = sorted({name for name, g in gains.values() if g > 0})
    if helped:
        text += (f"**Averaging.** The best of the averages tried ({', '.join(names)}) lowered the held-out loss of "
                 f"{len(helped)} of {len(runs)} runs, by {gain_lo:.3f} to {gain_hi:.3f} nats (the paper's mean of "
                 + (f"the last 5 lowered it by {min(paper):.3f} to {max(paper):.3f}" if min(paper) > 0 else
                    f"the last 5 changed it by {-max(paper):+.3f} to {-min(paper):+.3f}") + ") — "
                 + ("more than the choice of activation changed it" if gain_lo > spread else
                    "less than the choice of activation changed it" if gain_hi < spread else
                    "about as much as the choice of activation")
                 + f". The mean of copies of the weights taken {every} steps apart (up to {k}) is a model no step of "
                 "training visited, and it scored better than the last one. One reading: while the learning rate "
                 "is still large, the last steps scatter around a lower point, and their mean lands nearer it.")
    else:
        text += "**Averaging** did not lower the held-out loss of any run here."
    return text


def section(plot: dict) -> None:
    """The page section: the training curves, the held-out table, the reading and the command."""
    st.header("Activation and checkpoint averaging, measured")
    st.markdown("The paper's feed-forward layers use ReLU; later models use GELU (BERT, GPT) or SwiGLU (Shazeer "
                "2020: a gated layer, `(xW ⊙ swish(xV))W₂`). The paper's base models were also not its last "
                "weights but “a single model obtained by averaging the last 5 checkpoints”. Three small language "
                "models test both, on the lm's English text: the same seed, the same batches, the paper's learning "
                "rate schedule, and the same number of parameters within 0.3 % (SwiGLU has three matrices, so its "
                "inner width is two thirds of the others').")
    res = results()
    if res is None:
        st.info(f"No results at {RESULTS}. Run `python -m core.training.choices --out assets/choices/results.json` "
                "(about 6 CPU minutes on one thread).")
        return
    cfg = res["config"]
    curves = {r["activation"]: running_mean(r["train_loss"], SMOOTH) for r in res["runs"]}
    start = cfg["steps"] // 4  # the first steps' loss falls from 6 and would flatten the rest
    steps = list(range(start + 1, cfg["steps"] + 1))
    st.plotly_chart(figures.lines({a: c[start:] for a, c in curves.items()}, steps,
                                  title=f"Training loss, mean of {SMOOTH} steps", x_title="step",
                                  y_title="loss (nats a token)", **plot), key="choices_curves")
    rows = [{"activation": r["activation"], "parameters": f"{r['parameters']:,}", "inner width": r["d_ff"],
             **{name: round(v, 4) for name, v in r["held_out"].items()}} for r in res["runs"]]
    st.dataframe(rows, hide_index=True, key="choices_table")
    st.caption(f"Held-out loss (nats a token) on {cfg['eval_windows']} windows of {cfg['seq_len']} tokens of the "
               f"valid split: the last weights, and the mean of the last 2, 5 and {cfg['snapshots']} snapshots "
               f"taken every {cfg['snapshot_every']} steps up to step {cfg['steps']}.")
    st.markdown(reading(res))  # md: trusted (activation names and numbers)
    st.caption(f"{code(res.get('command', '?'))} — {cfg['layers']} layers, d_model {cfg['d_model']}, "
               f"{cfg['heads']} heads, batch {cfg['batch_size']}; "
               f"{code(re.sub(r'[0-9]{4,}', lambda m: f'{int(m.group()):,}', res.get('data', '')))}; "
               + ", ".join(f"{r['activation']} {r['cpu_seconds']} CPU s" for r in res["runs"]) + ".")
