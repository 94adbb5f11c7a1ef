"""The Training page's section "How many parameters, and where they sit": the run's model and published ones (the
Transformer, GPT, BERT, GPT-2, GPT-3) counted by formula from their shapes (:mod:`core.training.sizes`), on request
also by building each on torch's meta device; the groups they fall into; what our other options would change; and
ALBERT's two savings."""
from __future__ import annotations

from types import SimpleNamespace

import plotly.graph_objects as go
import streamlit as st

from app.figures import label, spec, style
from app.text import md
from core.config import PARAMETER_GROUPS, ModelConfig, shapes_only
from core.training import sizes
from core.training.tasks import SYNTHETIC, make_task, model_kind
from core.training.trainer import TrainConfig, model_config

# Tasks whose tokenizer is fixed (symbols, syllables): their vocabulary is read off the task itself, at no cost.
EXACT = SYNTHETIC + ("induction",)
# The vocabulary a corpus task's BPE tokenizer is asked for when a run starts (core/training/tasks.py); the trained
# one can hold fewer tokens.
VOCAB_ASKED = {"en-fr-tiny": 1200, "en-de-tiny": 1200, "lm-tiny": 1500, "lm": 8192, "mlm": 1500}


def fmt(n: float) -> str:
    """A count as people say it: 110.1 M, 1.56 B, 174.6 B, 96.3 k."""
    for size, unit, digits in ((1e11, "B", 1), (1e9, "B", 2), (1e6, "M", 1), (1e3, "k", 1)):
        if abs(n) >= size:
            return f"{n / (1e9 if unit == 'B' else size):,.{digits}f} {unit}"
    return f"{n:,.0f}"


def user_config(cfg: TrainConfig, vocab: int | None = None) -> ModelConfig:
    """The model a run of ``cfg`` builds: the task's own vocabulary and length where its tokenizer is fixed
    (:data:`EXACT`), else ``vocab`` tokens and 128 positions (what the run's tokenizer and corpus settle). Counted
    even past the memory ceiling: the page's own checks refuse to train such a model."""
    if cfg.task in EXACT:
        task = make_task(cfg.task, seq_len=cfg.seq_len)
    else:
        task = SimpleNamespace(model_kind=model_kind(cfg.task), max_len=128, sentence_pairs=cfg.task == "mlm",
                               tokenizer=SimpleNamespace(vocab_size=int(vocab or VOCAB_ASKED.get(cfg.task, 1000))))
    with shapes_only():
        return model_config(cfg, task)


def share_figure(rows: list[tuple[str, dict]], *, title: str, present: bool = False, dark: bool = False) -> go.Figure:
    """One horizontal bar per model, stacked by parameter group, each as a share of that model's total (the hover
    gives the count)."""
    names = [label(name) for name, _ in rows]
    traces = []
    for group in PARAMETER_GROUPS:
        shares = [100 * sizes.group_shares(g)[group] for _, g in rows]
        counts = [f"{g.get(group, 0):,}" for _, g in rows]
        traces.append(dict(type="bar", orientation="h", name=group, y=list(range(len(rows))), x=shares,
                           customdata=counts,
                           hovertemplate=f"{group}: %{{x:.1f}} % (%{{customdata}} parameters)<extra></extra>"))
    fig = spec(*traces, title=title, barmode="stack", showlegend=True, legend={"traceorder": "normal"},
               xaxis={"title": {"text": "share of the model's parameters (%)"}, "range": [0, 100]},
               yaxis={"title": {"text": "model"}, "tickvals": list(range(len(rows))), "ticktext": names,
                      "autorange": "reversed"})
    return style(fig, present, height=160 + 32 * len(rows), dark=dark)


@st.cache_data(show_spinner="Building each model on the meta device…")
def published_meta_counts() -> dict[str, int]:
    """``sum(numel)`` of each published model and each ALBERT built on torch's meta device (about a second, most of it
    GPT-3's 96 layers of modules; once per server process)."""
    out = {name: sizes.meta_count(sizes.famous(name)) for name in sizes.FAMOUS}
    for name, fields in sizes.ALBERT.items():
        out[f"ALBERT-{name}"] = sizes.meta_count(sizes.config(fields), sizes.ALBERT_EMBEDDING, shared=True)
    return out


@st.cache_data(show_spinner=False, max_entries=64)
def meta_count(fields: dict) -> int:
    """``sum(numel)`` of the model of config ``fields`` built on torch's meta device."""
    return sizes.meta_count(sizes.config(fields))


def _shape_row(name: str, c: ModelConfig, count: int, meta: dict | None) -> dict:
    seed = sizes.SEED_SAYS.get(name)
    layers = {"encoder-only": f"{c.n_encoder_layers}", "decoder-only": f"{c.n_decoder_layers}"}.get(
        c.kind, f"{c.n_encoder_layers} + {c.n_decoder_layers}")
    row = {"model": name, "kind": c.kind, "layers": layers, "d_model": c.d_model, "heads": c.n_heads, "d_ff": c.d_ff,
           "vocabulary": c.vocab_size, "positions": f"{c.max_len} {c.pos_encoding}", "parameters": f"{count:,}",
           "about": fmt(count), "the seed says": fmt(seed) if seed else "",
           "ours ÷ seed": f"{count / seed:.3f}" if seed else ""}
    if meta is not None:
        row["meta device"] = f"{meta[name]:,}" if name in meta else ""
        row["same"] = "yes" if meta.get(name) == count else "NO"
    return row


def section(cfg: TrainConfig, present: bool = False, dark: bool = False) -> None:
    """Draw the section for the run settings ``cfg`` (their model is counted if it can be built at all, even past
    this server's training limits)."""
    st.caption("Every count here comes from the model's shape by formula (core.config.ModelConfig."
               "parameter_groups): token and position tables, attention W_Q, W_K, W_V, W_O with their biases, "
               "feed-forward layers, LayerNorms and the output head. The tests check it against torch's own count, "
               "sum(p.numel()), on real models of every kind.")
    user, vocab = None, None
    if cfg.task not in EXACT:
        vocab = st.number_input("Vocabulary size of your run", 8, 2 ** 17, VOCAB_ASKED.get(cfg.task, 1000),
                                key=f"tr_vocab_{cfg.task}",
                                help="This task's tokenizer is trained when the run starts; it is asked for this "
                                     "many tokens and can hold fewer. Learned positions: 128 rows assumed.")
    try:
        user = user_config(cfg, vocab)
    except ValueError as e:
        st.info(f"Your model cannot be counted until its settings are fixed ({md(e)}); the published models are "
                "below.")
    meta_on = st.toggle("Also count by building each model on torch's meta device", key="tr_meta_count",
                        help="torch records shapes and allocates no memory: every model below, GPT-3 included, in "
                             "about a second")
    meta = None
    if meta_on:
        meta = dict(published_meta_counts())
        if user is not None:
            meta["your model"] = meta_count(user.to_dict())

    rows, groups = [], []
    if user is not None:
        g = user.parameter_groups()
        total = sum(g.values())
        parts = ", ".join(f"{k} {100 * v / total:.1f} %" for k, v in g.items() if v)
        st.markdown(f"**Your model** ({md(cfg.task)}, {md(user.kind)}, vocabulary {user.vocab_size:,}): "
                    f"**{total:,}** parameters — {parts}.")
        groups.append(("your model", g))
        rows.append(_shape_row("your model", user, total, meta))
    for name in sizes.FAMOUS:
        c = sizes.famous(name)
        g = c.parameter_groups()
        groups.append((name, g))
        rows.append(_shape_row(name, c, sum(g.values()), meta))
    for name, fields in sizes.ALBERT.items():
        if name in ("base", "xlarge"):
            groups.append((f"ALBERT-{name}", sizes.albert_groups(sizes.config(fields), sizes.ALBERT_EMBEDDING,
                                                                 shared=True)))
    st.dataframe(rows, hide_index=True)
    st.plotly_chart(share_figure(groups, title="Where the parameters sit: share of each model's total",
                                 present=present, dark=dark), key="tr_param_shares")
    _seed_prose()
    _differences()
    _albert(meta)


def _seed_prose() -> None:
    n = {name: sizes.famous(name).estimated_parameters() for name in sizes.FAMOUS}
    worst = max(abs(n[k] / v - 1) for k, v in sizes.SEED_SAYS.items())
    gpt3 = sizes.famous("GPT-3").parameter_groups()
    layers = gpt3["attention"] + gpt3["feed-forward"]
    st.markdown(
        f"**What the seed says.** GPT 110 M, BERT-large 340 M, GPT-2 1.5 B, GPT-3 175 B. Counted from each "
        f"published shape: GPT {fmt(n['GPT'])}, {100 * (n['GPT'] / 110e6 - 1):.0f} % more. The 110 M is the "
        f"figure the BERT paper gives for BERT-base, sized to match GPT; that shape counts {fmt(n['BERT-base'])} "
        f"here. BERT-large {fmt(n['BERT-large'])}; GPT-2 (its largest size) {fmt(n['GPT-2 XL'])}; GPT-3 "
        f"{fmt(n['GPT-3'])}, {100 * (1 - n['GPT-3'] / 175e9):.1f} % under 175 B. The GPT-2 paper lists 117 M, "
        f"345 M, 762 M and 1,542 M for its four sizes, a little under what the released shapes hold (GPT-2 small: "
        f"{fmt(n['GPT-2 small'])}). So the seed's sizes hold to within {100 * worst:.0f} %. In GPT-3, "
        f"{100 * layers / n['GPT-3']:.1f} % of the parameters are attention and feed-forward weights, 12·L·d² "
        f"plus biases ({100 * gpt3['feed-forward'] / layers:.0f} % of them feed-forward); the embeddings are "
        f"{100 * gpt3['embeddings'] / n['GPT-3']:.2f} %.")
    st.caption("Each published model is one of our configs: learned or sinusoidal positions, norm before or after "
               "each sublayer, BERT's token types, embedding norm, MLM and next-sentence heads, the output layer tied "
               "to the token table. So our model of each shape holds exactly that architecture's parameters; the "
               "tests compare five of them, and ALBERT-base, with counts taken from the transformers library's "
               "models. GPT-3 alternates dense and locally banded attention: banding limits which keys a query "
               "reads, not the weights.")


def _differences() -> None:
    name = st.selectbox("Where our other options would make it differ", list(sizes.FAMOUS),
                        index=list(sizes.FAMOUS).index("GPT-2 small"), key="tr_param_variant")
    c = sizes.famous(name)
    base = c.estimated_parameters()
    st.dataframe([{"change to " + name: r["change"], "parameters": f"{r['parameters']:,}",
                   "difference": f"{r['difference']:+,}", "difference (%)": f"{100 * r['difference'] / base:+.2f}"}
                  for r in sizes.differences(c)], hide_index=True)


def _albert(meta: dict | None) -> None:
    rows = sizes.albert_rows()
    st.markdown("**ALBERT: a smaller embedding, and one layer's weights used by every layer** (Lan et al. 2020). "
                f"The token table V·H becomes V·E + E·H with E = {sizes.ALBERT_EMBEDDING}; the L layers share one "
                f"set of weights. Each BERT below has ALBERT's shape and vocabulary "
                f"({sizes.ALBERT['base']['vocab_size']:,}), so only the two ideas differ.")
    table = []
    for r in rows:
        row = {"shape": r["shape"], "layers": r["layers"], "d_model": r["d_model"], "BERT": f"{r['bert']:,}",
               "+ factorised embedding": f"{r['factorised']:,}", "+ shared layers = ALBERT": f"{r['albert']:,}",
               "BERT ÷ ALBERT": f"{r['bert'] / r['albert']:.1f}",
               "attention + FFN weights per token": f"{r['per_token']:,}"}
        if meta is not None:
            got = meta.get(f"ALBERT-{r['shape']}")
            row["ALBERT on the meta device"] = f"{got:,}" if got is not None else ""
        table.append(row)
    st.dataframe(table, hide_index=True)
    by = {r["shape"]: r for r in rows}
    base, large, xl = by["base"], sizes.famous("BERT-large").estimated_parameters(), by["xlarge"]
    st.markdown(
        f"Measured: the factorised embedding alone saves {fmt(base['bert'] - base['factorised'])} in the base "
        f"shape ({100 * (1 - base['factorised'] / base['bert']):.0f} %); sharing the layers saves far more, "
        f"{fmt(base['factorised'] - base['albert'])}. The base-shaped BERT is {base['bert'] / base['albert']:.1f}× "
        f"ALBERT-base. The seed's \"about five times\" fits "
        f"BERT-large ({fmt(large)}) against ALBERT-xlarge ({fmt(xl['albert'])}): {large / xl['albert']:.1f}×. "
        "Sharing saves memory, not computation: the shared layer still runs L times. ALBERT-xlarge passes each "
        f"token through {fmt(xl['per_token'])} attention and feed-forward weights, BERT-large through "
        f"{fmt(by['large']['per_token'])}: {xl['per_token'] / by['large']['per_token']:.1f}× the work. Whether "
        "the smaller model keeps BERT's accuracy is not measured here; in the ALBERT paper's own comparison "
        "ALBERT-base scores below BERT-base, and ALBERT-xlarge about as well as BERT-large while training more "
        "slowly.")
