"""The "Heads that language models grow" page's shared part: cached measurements of :mod:`core.find_heads`, the
layers × heads score maps, the traced repeated-random-sequence example and the ablation of induction heads.

Everything is computed from the chosen model: the score maps on a batch of repeated random sequences (previous-token
optionally on the sidebar sentence), the attention maps on the sidebar sentence (the shared traced run) or on one
repeated random sequence, the losses with the heads the user switches off. The last section, "A task stated as text",
shows few-shot accuracy curves (shipped in summaries.json, or measured on request), the user's prompt with their
answers ranked by log p, and a Winograd pair scored by sentence likelihood (:mod:`core.inference.prompting`). The
very last, "Heads in a translator's encoder", reads a broad translator's encoder: the best fixed offset of each head
on the sentence (live) and on held-out sentences, attention from verbs to their objects, and heads replaced by fixed
patterns (those three from the model's summaries.json, :func:`core.find_heads.encoder_heads`).
"""
from __future__ import annotations

import streamlit as st
import torch

from app import coverage_view, figures
from app import progress as progress_bar
from app.cache import bounded
from app.shell import load_model, text_box, usable_models
from app.text import code, md
from core import find_heads as fh
from core.inference import coverage
from core.inference import prompting as pr
from core.io.budget import max_positions
from core.io.tokenizer import EOS, normalize_text
from core.probes import summaries
from core.trace import Trace

TITLES = {"previous_token": "Previous-token score", "duplicate_token": "Duplicate-token score",
          "induction": "Induction score"}
WHAT = {"previous_token": "mean attention from each token to the one just before it",
        "duplicate_token": "attention from a token of the second copy to the same token in the first copy",
        "induction": "attention from a token of the second copy to the token that followed it in the first copy"}
BATCH = 16  # random sequences the scores and losses average over


def usable(cfg) -> bool:
    """Does the page apply to a model of this config (one self-attention stack: decoder-only or encoder-only)?"""
    return cfg.kind in ("decoder-only", "encoder-only")


def longest_copy(name: str) -> int:
    """The longest random sequence two copies of which (with [BOS] / [CLS] … [SEP]) the model reads here."""
    ck = load_model(name)
    frame = fh.framing(ck)
    extra = (frame["bos"] is not None) + (frame["eos"] is not None)
    return max(2, min((max_positions(ck.model) - extra) // 2, ck.model.cfg.vocab_size - frame["vocab_low"]))


def _text_ids(ck, text: str) -> list[int] | None:
    """The sentence as the model reads it ([BOS] first, or [CLS] … [SEP]), clipped to what it reads; None if empty."""
    if not normalize_text(text or ""):
        return None
    frame = fh.framing(ck)
    extra = (frame["bos"] is not None) + (frame["eos"] is not None)
    body = ck.tokenizer.encode(text)[:max_positions(ck.model) - extra]
    ids = ([frame["bos"]] if frame["bos"] is not None else []) + body + ([frame["eos"]] if frame["eos"] is not None
                                                                         else [])
    return ids if len(ids) >= 2 else None


@bounded(spinner="Measuring every head on repeated random sequences…")
def scores(name: str, seq_len: int, seed: int, text: str | None) -> dict:
    """:func:`core.find_heads.head_scores` for a model (previous-token on ``text`` when given and at least two
    tokens long), with its framing, the top heads per kind and where the previous-token score was measured."""
    ck = load_model(name)
    frame = fh.framing(ck)
    text_ids = _text_ids(ck, text) if text is not None else None
    out = fh.head_scores(ck.model, seq_len=seq_len, seed=seed, batch=BATCH, text_ids=text_ids, **frame)
    out["top_heads"] = {kind: fh.top_heads(out[kind], 3) for kind in fh.KINDS}
    out["previous_token_on"] = "text" if text_ids is not None else "random"
    return out


@bounded
def repeated_example(name: str, seq_len: int, seed: int) -> tuple[torch.Tensor, list[str]]:
    """One repeated random sequence through the model: ``([layers, heads, T, T] attention weights, tokens)``."""
    ck = load_model(name)
    frame = fh.framing(ck)
    ids = fh.repeated_tokens(ck.model.cfg.vocab_size, seq_len=seq_len, batch=1, seed=seed, **frame)
    stack = fh.stack_of(ck.model)
    trace = Trace()
    with torch.no_grad():
        ck.model(ids.to(ck.model.device), trace=trace)
    n = ck.model.cfg.n_layers(stack)
    weights = torch.stack([trace[f"{stack}.{i}.self_attn.weights"][0] for i in range(n)]).float().cpu()
    return weights, ck.tokenizer.display(ids[0].tolist())


@bounded(spinner="Running the repeated sequences with those heads switched off…")
def ablation(name: str, heads: tuple, seq_len: int, seed: int) -> dict:
    """Copy losses and the loss at every position, with ``heads`` ((layer, head) pairs) switched off."""
    ck = load_model(name)
    kw = dict(seq_len=seq_len, seed=seed, batch=BATCH, **fh.framing(ck))
    return {"copies": fh.ablate_heads_loss(ck.model, list(heads), **kw),
            "curve": fh.loss_by_position(ck.model, list(heads), **kw)}


def head_name(layer: int, head: int) -> str:
    return f"L{layer}H{head}"


def score_figure(grid, kind: str, *, present: bool, dark: bool):
    """A layers × heads map of one score (0-1 colour scale, the value written in each cell)."""
    z = torch.tensor(grid, dtype=torch.float32)
    n_layers, n_heads = z.shape
    fig = figures.matrix(z, [f"H{h}" for h in range(n_heads)], [f"L{i}" for i in range(n_layers)],
                          title=TITLES[kind], x_title="head", y_title="layer", value_name="score",
                          present=present, dark=dark, show_values=True, zmin=0.0, zmax=1.0,
                          height=160 + n_layers * (48 if present else 38))
    return fig.update_xaxes(side="bottom")  # on top, the axis title would run into the figure's title


def top_line(s: dict, kind: str) -> str:
    """The three best heads of one kind, named with their scores (Markdown: our own names and numbers only)."""
    return ", ".join(f"**{head_name(h['layer'], h['head'])}** {h['score']:.2f}" for h in s["top_heads"][kind])


def draw_scores(s: dict, *, present: bool, dark: bool) -> None:
    """The three score maps side by side (one under the other in presentation mode), each with its top heads."""
    cols = [st.container() for _ in fh.KINDS] if present else st.columns(3)
    for col, kind in zip(cols, fh.KINDS):
        col.plotly_chart(score_figure(s[kind], kind, present=present, dark=dark), key=f"lm_heads_{kind}")
        col.markdown(f"Top: {top_line(s, kind)}")
        col.caption(WHAT[kind].capitalize() + ".")


def attention_figure(weights: torch.Tensor, tokens: list[str], layer: int, head: int, what: str, *, present: bool,
                     dark: bool):
    """One head's attention map on the tokens shown."""
    return figures.heatmap(weights, tokens, tokens, title=f"{head_name(layer, head)} — {what}", present=present,
                           dark=dark)


def loss_figure(before: list[float], after: list[float], seq_len: int, offset: int, off_label: str, *, present: bool,
                dark: bool):
    """Next-token loss at each position of the repeated sequence, with every head and with the chosen heads off;
    the second copy starts at position ``offset + seq_len``."""
    x = list(range(1, len(before) + 1))
    fig = figures.lines({"all heads": before, off_label: after}, x, title="Next-token loss at each position",
                        x_title="position of the predicted token", y_title="loss (nats)", present=present, dark=dark)
    fig.add_vline(x=offset + seq_len - 0.5, line_dash="dash", annotation_text="second copy starts")
    return fig


def heads_text(heads) -> str:
    return ", ".join(head_name(layer, head) for layer, head in heads) or "none"


def encoder_note(name: str) -> None:
    st.info(f"{md(name)} is an encoder: every token sees the whole sequence, both copies at once. Previous-token and "
            "duplicate-token scores mean what they mean in a GPT (BERT-style models grow previous-token heads too). "
            "The induction score is still measured, but a head can reach “the token after the first occurrence” "
            "without copying from context (it can simply look there), so it is not evidence of an induction "
            "mechanism; and an encoder predicts no next token, so there is no in-context loss to compare or to "
            "ablate.")


# ------------------------------------------------------------------ a task stated as text (GPT-2's zero-/few-shot)
WINOGRAD = ("The animal didn't cross the street because it was too tired.",
            "The animal didn't cross the street because it was too wide.")
WINOGRAD_ANSWERS = ("the animal", "the street")  # what a reader picks for each
WINOGRAD_WORDS = ("tired", "wide")  # the one word that differs


def shipped_curves(name: str) -> tuple[dict | None, str | None]:
    """The few-shot curves shipped in the model's summaries.json for exactly these weights and tasks, and where they
    were read from (None, None: not shipped)."""
    ck = load_model(name)
    found = summaries.prompting_summary(ck, name)
    return (found, summaries.source(ck, name)) if found is not None else (None, None)


@bounded(ignore=("progress",))
def measured_curves(name: str, progress=None) -> dict:
    """:func:`core.inference.prompting.all_curves` measured here (a model with no shipped curves)."""
    ck = load_model(name)
    return pr.all_curves(ck.model, ck.tokenizer, progress=progress)


@bounded
def answer_scores(name: str, prompt: str, answers: tuple) -> list[dict]:
    """Each answer's summed log p after the prompt, its token count and its rank (1 = the model's answer)."""
    ck = load_model(name)
    scored = pr.score_answers(ck.model, ck.tokenizer, prompt, list(answers))
    logps = [s.logp for s in scored]
    return [{"answer": a, "tokens": readable_pieces(ck.tokenizer, s.tokens), "log p (sum)": s.logp,
             "log p per token": s.per_token, "rank": 1 + sum(x > s.logp for x in logps)}
            for a, s in zip(answers, scored)]


def readable_pieces(tokenizer, ids) -> str:
    """The tokens of an answer as text, joined by " · ". A byte-level tokenizer cuts a character it has no token for
    (an emoji, most Arabic letters) into byte tokens that are not text one by one: those are joined back into the
    character and their number said ("😀 (4 tokens)"); a token that is only a space is written ␣."""
    ids = [int(i) for i in ids]
    if not getattr(tokenizer, "byte_level", False):
        return " · ".join(tokenizer.display(ids))
    groups, held = [], []
    for i in ids:
        held.append(i)
        text = tokenizer.hf.decode(held, skip_special_tokens=False)
        if "\ufffd" in text and len(held) < 4:  # an unfinished UTF-8 character: at most 4 bytes
            continue
        groups.append((text, len(held)))
        held = []
    if held:
        groups.append((tokenizer.hf.decode(held, skip_special_tokens=False), len(held)))
    return " · ".join((text.strip() or "␣") + (f" ({n} tokens)" if n > 1 else "") for text, n in groups)


@bounded
def winograd_scores(name: str, sentences: tuple, candidates: tuple) -> list[list[dict]]:
    """:func:`core.inference.prompting.winograd` of the sentences (one batched pass)."""
    ck = load_model(name)
    return pr.winograd(ck.model, ck.tokenizer, list(sentences), list(candidates))


def curve_figure(curves: dict, name: str, *, present: bool, dark: bool):
    """Accuracy (%) against the number of examples in the prompt, one line per task, and chance (the highest of the
    tasks': one over the fewest candidates)."""
    points = {}
    for c in curves["curves"]:
        fit = [p for p in c["points"] if p["accuracy"] is not None]
        points[c["title"]] = ([p["k"] for p in fit], [100 * p["accuracy"] for p in fit])
    chance = max(p["chance"] for c in curves["curves"] for p in c["points"] if p["chance"] is not None)
    ks = curves["spec"]["ks"]
    return figures.lines({f"chance (≈ {100 * chance:.0f} %)": [100 * chance] * len(ks)}, ks,
                         title=f"Few-shot accuracy of {name}", x_title="examples in the prompt (k)",
                         y_title="accuracy (%)", points=points, legend=True, y_range=[0, 100], present=present,
                         dark=dark)


def _odds(p: float) -> str:
    return "less than 0.1 %" if p < 0.001 else f"{100 * p:.1f} %" if p < 0.1 else f"{100 * p:.0f} %"


def curve_summary(curves: dict, name: str) -> list[str]:
    """One line per task (no examples, most examples, best, chance level or not) and one on whether examples helped,
    in words, from the measured points."""
    lines, rose, noise, fell = [], [], [], []
    for c in curves["curves"]:
        fit = [p for p in c["points"] if p["accuracy"] is not None]
        first, last = fit[0], fit[-1]
        top = max(fit, key=lambda p: p["accuracy"])
        odds = pr.binomial_tail(round(top["accuracy"] * top["n"]), top["n"], top["chance"])
        level = ("no better than chance" if top["accuracy"] <= top["chance"] else
                 f"above chance: guessing does as well {_odds(odds)} of the time" if odds < 0.05 else
                 f"chance level: guessing does as well {_odds(odds)} of the time")
        missing = [p["k"] for p in c["points"] if p["accuracy"] is None]
        cut = f" (with k = {', '.join(map(str, missing))} the prompt is longer than {name} reads)" if missing else ""
        lines.append(f"**{md(c['title'])}**: {first['accuracy']:.0%} with no example, {last['accuracy']:.0%} with "
                     f"k = {last['k']}{cut}. Best: {top['accuracy']:.0%} at k = {top['k']} ({level}).")
        task = pr.tasks()[c["task"]]
        if task.query_is_distractor:
            copied = [sum(pick == word for pick, (word, _) in zip(p["picks"], task.queries)) / p["n"]
                      for p in (first, last)]
            lines[-1] += (f" It picks the query word itself, unchanged, for {copied[0]:.0%} of the queries with no "
                          f"example and {copied[1]:.0%} with k = {last['k']}.")
        last_odds = pr.binomial_tail(round(last["accuracy"] * last["n"]), last["n"], last["chance"])
        first_odds = pr.binomial_tail(round(first["accuracy"] * first["n"]), first["n"], first["chance"])
        if last["accuracy"] > first["accuracy"]:
            (rose if last_odds < 0.05 else noise).append(c["title"])
        elif last["accuracy"] < first["accuracy"] and first_odds < 0.05:
            fell.append(c["title"])
    if rose:
        lines.append(f"More examples raised the accuracy above chance for: {md(', '.join(rose))}.")
    else:
        lines.append(f"No task rose above chance with more examples: {md(name)} does not learn these tasks from the "
                     "examples in its prompt" + (f" ({md(', '.join(noise))} rose, but stayed at chance level)."
                                                 if noise else "."))
    if fell:
        lines.append(f"More examples lowered an accuracy that was above chance without them: {md(', '.join(fell))}.")
    return lines


def picks_table(curves: dict, k_low: int, k_high: int) -> list[dict]:
    """The first queries of each task: the right answer and what the model picked with ``k_low`` and ``k_high``
    examples."""
    rows = []
    for c in curves["curves"]:
        by_k = {p["k"]: p for p in c["points"] if p["picks"]}
        if k_low not in by_k:
            continue
        task = pr.tasks()[c["task"]]
        for i, (word, answer) in enumerate(task.queries[:4]):
            rows.append({"task": c["title"], "query": word, "right answer": answer,
                         f"picked, k = {k_low}": by_k[k_low]["picks"][i],
                         f"picked, k = {k_high}": by_k[k_high]["picks"][i] if k_high in by_k else "(does not fit)"})
    return rows


def _known_share(ck, task: pr.Task) -> float | None:
    known = coverage.known_words(ck)
    if known is None:
        return None
    words = [w.lower() for pair in task.queries for w in pair]
    return sum(w in known for w in words) / len(words)


def _curves_part(name: str, ck, *, present: bool, dark: bool) -> None:
    curves, source = shipped_curves(name)
    if curves is None:
        n = sum(len(pr.KS) * len(t.queries) for t in pr.tasks().values())
        st.info(f"No few-shot curve is shipped for {md(name)}: measuring it scores {n} prompts.")
        if not st.toggle("Measure the few-shot curve on this model", key=f"lm_heads_fewshot_{name}"):
            return
        curves, complete = progress_bar.run(f"lm_heads_fewshot_{name}", f"Scoring few-shot prompts on {name}",
                                            lambda tell: measured_curves(name, progress=tell))
        if not complete:
            st.info("Stopped: the curve needs every prompt; run it to the end to see it.")
            return
    st.plotly_chart(curve_figure(curves, name, present=present, dark=dark), key="lm_heads_fewshot_curve")
    spec = curves["spec"]
    example = curves["curves"][0]
    origin = f" Read from {source}." if source is not None else " Measured here."  # md: trusted (path, `command`)
    sizes = sorted({round(1 / p["chance"]) for c in curves["curves"] for p in c["points"] if p["chance"]})
    st.caption(f"Each task: {spec['queries']} held-out queries; the k examples come from {spec['pool']} other pairs. "
               "Every query's answer is ranked among all the task's answers (and the query word itself, where that "
               f"is wrong): {sizes[0]} to {sizes[-1]} candidates, so chance is about {100 / sizes[-1]:.0f} %. A "
               f"prompt with k = {spec['ks'][-1]}: {code(example['example'])} → {code(example['example_answer'])}."
               + origin)
    st.markdown("\n".join(f"- {line}" for line in curve_summary(curves, name)))
    unknown = [(c["title"], share) for c in curves["curves"]
               if (share := _known_share(ck, pr.tasks()[c["task"]])) is not None and share < 0.5]
    if unknown:
        st.markdown(f"Most of these words are not in {md(name)}'s training text. Share of the query words and answers "
                    "it read: " + "; ".join(f"{md(t)} {s:.0%}" for t, s in unknown) + ".")
    with st.expander("What the model picked"):
        st.dataframe(picks_table(curves, spec["ks"][0], spec["ks"][-1]), hide_index=True)


def _own_prompt_part(name: str, ck, *, present: bool, dark: bool) -> None:
    seps = pr.separators(ck.tokenizer)
    default = pr.build_prompt([("dog", "dogs"), ("cat", "cats")], "horse", seps)
    st.markdown("**Your own prompt.** Type a prompt and up to five answers. Each answer is scored by the summed "
                "log-probability of its tokens after the prompt.")
    c1, c2 = (st.container(), st.container()) if present else st.columns([3, 2])
    prompt = text_box("Prompt", default, key=f"lm_heads_prompt_{seps[0]}", where=c1)
    typed = text_box(f"Answers (comma-separated, at most {pr.MAX_ANSWERS})", "horses, horse, cows",
                     key="lm_heads_answers", where=c2)
    if not normalize_text(prompt):
        st.info("The prompt is empty. Type a task as text, e.g. a few solved examples and a question.")
        return
    try:
        answers = pr.parse_answers(typed)
        rows = answer_scores(name, normalize_text(prompt), tuple(answers))
    except ValueError as e:
        st.info(md(str(e)[:1].upper() + str(e)[1:] + "."))
        return
    coverage_view.notices(dict.fromkeys(note for text in (prompt, ", ".join(answers))
                                        if (note := coverage.special_notice(ck, text, name))))
    top = min(range(len(rows)), key=lambda i: rows[i]["rank"])
    st.markdown(f"{md(name)} picks {code(rows[top]['answer'])}.")
    st.dataframe(rows, hide_index=True)
    st.plotly_chart(figures.bars([r["log p (sum)"] for r in rows], [r["answer"] for r in rows],
                                 title="Summed log-probability of each answer", x_title="answer",
                                 y_title="log p (nats)", highlight=top, present=present, dark=dark),
                    key="lm_heads_answer_bars")
    st.caption("A sum over tokens favours short answers: each extra token costs probability. The mean per token is in "
               "the table; the ranking uses the sum, as the curve above does.")


def _winograd_part(name: str, ck, *, present: bool, dark: bool) -> None:
    st.markdown("**Winograd by likelihood.** GPT-2 resolved “it” without being taught to: put each candidate in "
                "the place of “it” and ask which whole sentence the model finds more probable (*full* scoring), or "
                "which makes the words after it more probable (*partial* scoring, Trinh & Le 2018).")
    c1, c2 = (st.container(), st.container()) if present else st.columns(2)
    first = text_box("Sentence", WINOGRAD[0], key="lm_heads_wino_a", where=c1)
    second = text_box("Its twin (one word changed)", WINOGRAD[1], key="lm_heads_wino_b", where=c2)
    typed = text_box("Candidates for “it” (comma-separated)", ", ".join(pr.candidate_phrases(WINOGRAD[0])),
                     key="lm_heads_wino_cands")
    try:
        cands = pr.parse_answers(typed)
    except ValueError:
        cands = []
    if len(cands) < 2:
        st.info(f"Type two to {pr.MAX_ANSWERS} different candidates, separated by commas (e.g. the animal, the "
                "street).")
        return
    usable = {}
    for col, sentence in zip((c1, c2), (first, second)):
        try:
            pr.substitute(sentence, cands)
        except ValueError as e:
            col.info(md(str(e)[:1].upper() + str(e)[1:] + ". Type a sentence with “it”."))
        else:
            usable[col] = normalize_text(sentence)
    try:
        scored = winograd_scores(name, tuple(usable.values()), tuple(cands)) if usable else []
    except ValueError as e:
        st.info(md(str(e)[:1].upper() + str(e)[1:] + "."))
        return
    picks = {}
    for (col, sentence), rows in zip(usable.items(), scored):
        full = max(rows, key=lambda r: r["full"])["candidate"]
        after = [r for r in rows if r["partial"] is not None]
        part = max(after, key=lambda r: r["partial"])["candidate"] if after else None
        picks[sentence] = (full, part)
        col.dataframe([{"candidate": r["candidate"], "sentence": r["sentence"], "full log p": r["full"],
                        "partial log p": r["partial"]} for r in rows], hide_index=True)
        col.markdown(f"Full scoring picks {code(full)}"
                     + (f"; partial scoring picks {code(part)}." if part else "; nothing follows “it” to score."))
    if len(picks) == 2:
        (fa, pa), (fb, pb) = picks.values()
        moved = [what for what, a, b in (("full", fa, fb), ("partial", pa, pb)) if a is not None and a != b]
        st.markdown("A model that resolves “it” changes its pick when the one word changes. "
                    + (f"Here the pick changes under {' and '.join(moved)} scoring." if moved else
                       "Here it does not: the model picks the same candidate for both sentences, so it is not "
                       "resolving “it” from the changed word."))
        if tuple(picks) == WINOGRAD and set(WINOGRAD_ANSWERS) <= set(cands):
            st.markdown("A reader picks “the animal” for *tired* and “the street” for *wide*. "  # md: trusted
                        + winograd_verdict(name, {"full": (fa, fb), "partial": (pa, pb)}))  # escapes its words
    st.caption("Full scoring compares sentences that differ in the candidate's own tokens too: a candidate the model "
               "finds rare loses probability before “it” is even resolved. Partial scoring avoids that.")


def winograd_verdict(name: str, picks: dict) -> str:
    """The model's picks on the shipped pair against a reader's (:data:`WINOGRAD_ANSWERS`), in words: the scorings
    that get both sentences right, and for the others which sentence each gets right and which wrong. ``picks``:
    ``{scoring: (pick for the first sentence, pick for the second)}``, a pick None where nothing follows “it”."""
    both = [kind for kind, pair in picks.items() if tuple(pair) == WINOGRAD_ANSWERS]
    groups = {}  # (a, b) -> the scorings that pick it
    for kind, (a, b) in picks.items():
        if kind not in both and a is not None and b is not None:
            groups.setdefault((a, b), []).append(kind)
    said = []
    for (a, b), kinds in groups.items():
        marks = [(word, "right" if pick == want else "wrong")
                 for pick, want, word in zip((a, b), WINOGRAD_ANSWERS, WINOGRAD_WORDS)]
        if a == b:
            right = [f"*{w}*" for w, m in marks if m == "right"]
            wrong = [f"*{w}*" for w, m in marks if m == "wrong"]
            how = (f"right for {right[0]}, wrong for {wrong[0]}" if right and wrong else
                   "wrong for both" if wrong else "right for both")
            what = f"{code(a)} for both sentences ({how})"
        else:
            what = " and ".join(f"{code(p)} for *{w}* ({m})" for p, (w, m) in zip((a, b), marks))
        said.append(f"under {' and '.join(kinds)} scoring, {md(name)} picks {what}")
    if both:
        head = f"{md(name)} gets both right with {' and '.join(both)} scoring"
        return head + (". " + "; ".join(said)[:1].upper() + "; ".join(said)[1:] if said else "") + "."
    return "Neither scoring gets both right" + (": " + "; ".join(said) if said else "") + "."


def prompting_section(name: str, *, present: bool, dark: bool) -> None:
    """The page's "A task stated as text" section: the shipped (or measured) few-shot curves, the user's prompt with
    their answers ranked by log p, and a Winograd pair scored by sentence likelihood."""
    st.subheader("A task stated as text: few-shot prompts and Winograd")
    ck = load_model(name)
    if ck.model.cfg.kind != "decoder-only":
        st.info(f"{md(name)} is not a GPT-style model: scoring a text by its likelihood needs a model that predicts "
                "the next token. Pick lm or lm-tiny.")
        return
    st.markdown("GPT-2 was not trained on any task; it was given one as text: a few solved examples, then a "
                "question (Radford et al. 2019). Nothing is generated here. Each candidate answer gets the summed "
                "log-probability of its tokens after the prompt, and the highest one is the model's answer. Copying "
                "what followed an earlier match is what an induction head does, so this is where such heads could "
                f"show up as a skill. {md(name)} has {ck.model.num_parameters() / 1e6:.1f} M parameters; GPT-2 had "
                "up to 1,500 M. Read the numbers as a tiny model's.")
    _curves_part(name, ck, present=present, dark=dark)
    _own_prompt_part(name, ck, present=present, dark=dark)
    _winograd_part(name, ck, present=present, dark=dark)


# ------------------------------------------------------------------ a translator's encoder: position and syntax
ENCODER_TASKS = ("en-fr", "en-de")  # the broad translators, whose generated sentences know their verbs and objects
SIGNS = {-1: "−1", 0: "0", 1: "+1"}
# the groups of heads replaced at once (core.find_heads.replacement_study's "together")
GROUPS = {"share": "the heads with share ≥ {t:.1f}", "quarter": "the most positional quarter", "all": "every head"}


def translators() -> list[str]:
    """The translators trained on the broad English→French / English→German corpus that can be loaded here."""
    return usable_models(lambda m: m.cfg.kind == "encoder-decoder" and str(m.meta.get("task", "")) in ENCODER_TASKS)


@bounded
def sentence_offsets(name: str, text: str) -> dict:
    """The sentence through a translator's encoder (``… [EOS]``, clipped to what it reads): its tokens, the offset
    shares of every head (:func:`core.find_heads.offset_shares`, ``[layers, heads, 4]``), the maps ``[layers, heads,
    T, T]`` and whether it was clipped."""
    ck = load_model(name)
    body = ck.tokenizer.encode(text)
    limit = max_positions(ck.model) - 1
    ids = body[:limit] + [EOS]
    weights = fh.encoder_maps(ck.model, torch.tensor([ids]))
    return {"tokens": ck.tokenizer.display(ids), "shares": fh.offset_shares(weights), "weights": weights[:, 0],
            "clipped": len(body) > limit}


@bounded(ignore=("progress",))
def measured_encoder_heads(name: str, progress=None) -> dict:
    """:func:`core.find_heads.encoder_heads` measured here (a translator with nothing shipped)."""
    return fh.encoder_heads(load_model(name), progress=progress)


def offsets_figure(shares, title: str, *, present: bool, dark: bool):
    """A layers × heads map of each head's best fixed offset (written in the cell) and the share of its attention
    that offset gets (the colour, 0-1)."""
    best, share = fh.best_patterns(torch.as_tensor(shares))
    n_layers, n_heads = share.shape
    text = [[f"{SIGNS[int(o)]}<br>{s:.2f}" for o, s in zip(orow, srow)]  # two short lines fit a narrow cell
            for orow, srow in zip(best.tolist(), share.tolist())]
    fig = figures.matrix(share, [f"H{h}" for h in range(n_heads)], [f"L{i}" for i in range(n_layers)], title=title,
                         x_title="head", y_title="layer", value_name="share", present=present, dark=dark, zmin=0.0,
                         zmax=1.0, text=text, height=160 + n_layers * (48 if present else 38))
    return fig.update_xaxes(side="bottom")  # as score_figure: on top, the axis title would meet the title


def verb_object_figure(grid, *, present: bool, dark: bool):
    """A layers × heads map of the verb → object score (0-1, the value in each cell)."""
    z = torch.tensor(grid, dtype=torch.float32)
    fig = figures.matrix(z, [f"H{h}" for h in range(z.shape[1])], [f"L{i}" for i in range(z.shape[0])],
                         title="Attention from a verb to its object", x_title="head", y_title="layer",
                         value_name="score", present=present, dark=dark, show_values=True, zmin=0.0, zmax=1.0,
                         height=160 + z.shape[0] * (48 if present else 38))
    return fig.update_xaxes(side="bottom")


def positional_lines(shares, threshold: float) -> list[str]:
    """The offsets map in words: how many heads give at least ``threshold`` of their attention to one fixed offset
    (by pattern), the most positional head, the mean share left to other positions, and whether that bears out
    "most encoder heads are positional"."""
    shares = torch.as_tensor(shares)
    best, share = fh.best_patterns(shares)
    n = share.numel()
    strong = share >= threshold
    by = ", ".join(f"{fh.PATTERNS[o]}: {int((strong & (best == o)).sum())}" for o in fh.OFFSETS)
    li, hi = divmod(int(share.argmax()), share.shape[1])
    k = int(strong.sum())
    lines = [f"**{k} of {n}** {'heads gives' if k == 1 else 'heads give'} at least {threshold:.0%} of "
             f"{'its' if k == 1 else 'their'} attention to one fixed offset ({by}).",
             f"The most positional head, {head_name(li, hi)}, gives {float(share[li, hi]):.0%} of its attention to the "
             f"{fh.PATTERNS[int(best[li, hi])]}. On average a head gives {float(shares[..., 3].mean()):.0%} of its "
             "attention to positions other than these three."]
    if int(strong.sum()) * 2 > n:
        lines.append("Most heads here are positional, as Raganato et al. found for their translators.")
    else:
        lines.append("So this translator does not bear out the claim that most encoder heads are positional: most of "
                     "its heads spread their attention over several positions.")
    return lines


def _dl(r: dict | None, base: dict) -> float | None:
    return None if r is None else r["loss"] - base["loss"]


def _dl4(r: dict | None, base: dict) -> float | None:
    """:func:`_dl` to the 4 decimals a table shows, −0.0 as 0.0 (a cell of "−0.0000" read as a loss)."""
    d = _dl(r, base)
    return None if d is None else round(d, 4) + 0.0


# how the two replacement tables show their numbers (the cells stay numbers: sorting, tests)
TABLE_FORMAT = {"share": st.column_config.NumberColumn(format="percent"),
                **{c: st.column_config.NumberColumn(format="%+.4f") for c in ("Δ loss, pattern", "Δ loss, head off",
                                                                             "Δ loss, heads off")},
                **{c: st.column_config.NumberColumn(format="%.1f %%") for c in ("accuracy, pattern",
                                                                                "accuracy, head off",
                                                                                "accuracy, heads off")},
                "loss, pattern": st.column_config.NumberColumn(format="%.3f")}


def _signed(x: float) -> str:
    """``x`` to 4 decimals with its sign, and no sign on a value that rounds to zero ("-0.0000" read as a loss)."""
    return "0.0000" if round(x, 4) == 0 else f"{x:+.4f}".replace("-", "−")


def replacement_rows(study: dict) -> list[dict]:
    """One row per head, most positional first: its best pattern and share, and the held-out loss and token accuracy
    with its map replaced by that pattern and with the head switched off."""
    base = study["base"]
    rows = sorted(study["heads"], key=lambda r: (-r["share"], r["layer"], r["head"]))
    return [{"head": head_name(r["layer"], r["head"]), "best pattern": fh.PATTERNS[r["offset"]], "share": r["share"],
             "Δ loss, pattern": _dl4(r["fixed"], base), "accuracy, pattern": 100 * r["fixed"]["accuracy"],
             "Δ loss, head off": _dl4(r["off"], base), "accuracy, head off": 100 * r["off"]["accuracy"]}
            for r in rows]


def group_rows(study: dict) -> list[dict]:
    """One row per group replaced at once (:func:`core.find_heads.replacement_study`'s ``together``); a group with no
    head (no head reaches the share) has no row: the reading says so."""
    base, out = study["base"], []
    for g in study["together"]:
        if g["fixed"] is None:
            continue
        label = GROUPS[g["group"]].format(t=study["threshold"])
        out.append({"heads replaced together": f"{label} ({len(g['heads'])})",
                    "loss, pattern": None if g["fixed"] is None else g["fixed"]["loss"],
                    "Δ loss, pattern": _dl4(g["fixed"], base),
                    "accuracy, pattern": None if g["fixed"] is None else 100 * g["fixed"]["accuracy"],
                    "Δ loss, heads off": _dl4(g["off"], base),
                    "accuracy, heads off": None if g["off"] is None else 100 * g["off"]["accuracy"]})
    return out


def replacement_lines(study: dict) -> list[str]:
    """The replacement table in words: one head at a time, the groups, and patterns against switching off."""
    base = study["base"]
    deltas = [_dl(r["fixed"], base) for r in study["heads"]]
    off = [_dl(r["off"], base) for r in study["heads"]]
    lines = [f"With every head as trained: loss **{base['loss']:.3f}**, token accuracy {base['accuracy']:.1%}.",
             f"One head at a time, its best pattern changes the loss by {_signed(min(deltas))} to "
             f"{_signed(max(deltas))} (mean {_signed(sum(deltas) / len(deltas))}); switching the head off instead, "
             f"{_signed(min(off))} to {_signed(max(off))}."]
    groups = {g["group"]: g for g in study["together"]}
    if groups["share"]["fixed"] is None:
        lines.append(f"No head reaches a share of {study['threshold']:.0%}, so there is no group of positional heads "
                     "to replace.")
    for key in ("share", "quarter"):
        g = groups[key]
        if g["fixed"] is not None:
            lines.append(f"{GROUPS[key].format(t=study['threshold']).capitalize()} ({heads_text(g['heads'])}) replaced "
                         f"at once: Δ loss {_signed(_dl(g['fixed'], base))}; switched off at once: "
                         f"{_signed(_dl(g['off'], base))}.")
    every = groups["all"]
    worse = "more" if every["fixed"]["loss"] > every["off"]["loss"] else "less"
    lines.append(f"All {len(every['heads'])} heads replaced at once: loss {every['fixed']['loss']:.3f}, accuracy "
                 f"{every['fixed']['accuracy']:.1%}; all switched off: loss {every['off']['loss']:.3f}, accuracy "
                 f"{every['off']['accuracy']:.1%}. Fixed patterns cost {worse} than no self-attention at all.")
    return lines


def verb_object_lines(vo: dict) -> list[str]:
    """The verb → object map in words: the best head, its score on each side, against even attention; the heads that
    give the object at least twice what even attention gives on both sides of the verb (only then is a fixed distance
    ruled out), and those that do so only where the object follows the verb."""
    z = torch.tensor(vo["score"])
    li, hi = divmod(int(z.argmax()), z.shape[1])
    sides = [f"{vo[side][li][hi]:.2f} when the object {word} the verb (even attention: {vo['uniform_' + side]:.2f}, "
             f"{vo['n_' + side]} sentence{'' if vo['n_' + side] == 1 else 's'})"
             for side, word in (("after", "follows"), ("before", "comes before")) if side in vo]
    ratio = float(z[li, hi]) / vo["uniform"]
    lines = [f"Best head: **{head_name(li, hi)}**, score {float(z[li, hi]):.2f}: " + "; ".join(sides) + ".",
             f"That is {ratio:.1f} times what a head spreading its attention evenly would score ({vo['uniform']:.2f})."]
    present = [side for side in ("after", "before") if side in vo]
    every = [(a, b) for a in range(z.shape[0]) for b in range(z.shape[1])]

    def twice(h, side):
        return vo[side][h[0]][h[1]] >= 2 * vo["uniform_" + side]
    both = [h for h in every if all(twice(h, side) for side in present)] if len(present) == 2 else []
    ahead = [h for h in every if "after" in vo and twice(h, "after") and h not in both]
    if both:
        lines.append(f"{heads_text(both)}: at least twice what even attention gives, on each side of the verb. They "
                     "find the object by grammar, not at a fixed distance.")
    elif len(present) == 2:
        lines.append("No head gives the object twice what even attention would on both sides of the verb: none stands "
                     "out here as a verb → object head.")
    else:
        lines.append("Every object here is on one side of its verb, so a fixed distance could explain any head's "
                     "score.")
    if ahead:
        lines.append(f"{heads_text(ahead)} reach twice even attention only where the object follows the verb; a head "
                     "that looks a fixed distance ahead would too.")
    return lines


def _example_maps(name: str, vo: dict, *, present: bool, dark: bool) -> None:
    z = torch.tensor(vo["score"])
    n_layers, n_heads = z.shape
    every = [(li, hi) for li in range(n_layers) for hi in range(n_heads)]
    best = divmod(int(z.argmax()), n_heads)
    pick = st.container() if present else st.columns([1, 2])[0]
    layer, head = pick.selectbox("Head shown on the examples", every, index=every.index(best), key="lm_heads_enc_head",
                                 format_func=lambda x: f"{head_name(*x)} (score {float(z[x]):.2f})")
    cols = [st.container() for _ in vo["examples"]] if present else st.columns(max(1, len(vo["examples"])))
    for col, ex in zip(cols, vo["examples"]):
        run = sentence_offsets(name, ex["text"])
        what = "object after the verb" if ex["after"] else "object before the verb"
        col.plotly_chart(attention_figure(run["weights"][layer, head], run["tokens"], layer, head, what,
                                          present=present, dark=dark), key=f"lm_heads_enc_example_{ex['after']}")
        verb = " ".join(run["tokens"][i] for i in ex["verb"])
        obj = "".join(run["tokens"][i] for i in ex["object"])
        got = float(run["weights"][layer, head][ex["verb"]][:, ex["object"]].sum(-1).mean())
        col.caption(f"{code(ex['text'])}: the row of {code(verb)} (the verb) gives {got:.2f} to {code(obj)} (its "
                    "object).")


def encoder_section(shown: str, text: str, *, present: bool, dark: bool) -> None:
    """The page's last section: offset shares of a broad translator's encoder heads on the sentence and on held-out
    sentences, attention from verbs to their objects, and each head replaced by its best fixed pattern (Raganato et
    al. 2020). The held-out measurements come from the model's summaries.json, or are measured on request."""
    st.subheader("Heads in a translator's encoder: position and syntax")
    st.markdown("Raganato et al. (2020) found that most encoder heads of their translators attend by position: to the "
                "previous token, the token itself or the next one. They replaced such heads by fixed patterns with "
                "little loss in quality. Other heads are said to follow grammar, e.g. from a verb to its direct "
                "object. Here both are measured in a shipped translator's encoder.")
    names = translators()
    if not names:
        st.info("No English→French or English→German translator (en-fr, en-de) can be loaded here.")
        return
    default = shown if shown in names else "en-fr" if "en-fr" in names else names[0]
    pick = st.container() if present else st.columns([1, 2])[0]
    name = pick.selectbox("Translator", names, index=names.index(default), key="lm_heads_enc_model",
                          help="Its encoder is read here: self-attention in which every token sees every other")
    ck = load_model(name)
    found = fh.shipped_encoder_heads(ck, name)
    origin = summaries.source(ck, name) if found is not None else None
    threshold = fh.POSITIONAL_SHARE
    cols = [st.container(), st.container()] if present else st.columns(2)
    if normalize_text(text or ""):
        mine = sentence_offsets(name, normalize_text(text))
        cols[0].plotly_chart(offsets_figure(mine["shares"], "Best fixed offset: your sentence", present=present,
                                            dark=dark), key="lm_heads_enc_offsets_text")
        best, share = fh.best_patterns(mine["shares"])
        k = int((share >= threshold).sum())
        cols[0].caption(f"{k} of {share.numel()} {'heads gives' if k == 1 else 'heads give'} at least {threshold:.0%} "
                        f"to one offset on your sentence ({len(mine['tokens'])} tokens with [EOS])."
                        + (" It was cut to what the model reads." if mine["clipped"] else ""))
    else:
        cols[0].info("The sentence is empty. Type one in the box above to see its offsets.")
    if found is None:
        heads = ck.model.cfg.n_layers("encoder") * ck.model.cfg.n_heads
        cols[1].info(f"No measurement of {md(name)}'s encoder on held-out sentences is shipped. Measuring it runs at "
                     f"most {2 * heads + 7} passes over {fh.ENCODER_SPEC['first']} sentence pairs.")
        if not cols[1].toggle("Measure it here", key=f"lm_heads_enc_measure_{name}"):
            return
        found, complete = progress_bar.run(f"lm_heads_enc_{name}", f"Measuring {name}'s encoder heads",
                                           lambda tell: measured_encoder_heads(name, progress=tell))
        if not complete:
            st.info("Stopped: the measurement needs every pass; run it to the end to see it.")
            return
    spec = found["spec"]
    cols[1].plotly_chart(offsets_figure(found["shares"], f"Best fixed offset: {spec['first']} held-out sentences",
                                        present=present, dark=dark), key="lm_heads_enc_offsets_heldout")
    cols[1].caption("Each cell: the offset (−1 previous token, 0 itself, +1 next token) that gets the largest share "
                    "of the head's attention, and that share, averaged over every token.")
    st.markdown("\n".join(f"- {line}" for line in positional_lines(found["shares"], threshold)))

    st.markdown("**Verbs and their objects.** Generated sentences know their roles: in “The dog ate the apple.” the "
                "verb is *ate* and its object *apple*; in “The apple that I ate was red.” the object comes first. "
                "Score: the attention from the verb to its object, averaged over each kind of sentence, the two kinds "
                "weighing half each, so a head that only looks two tokens ahead cannot reach 1.")
    vo = found["verb_object"]
    st.plotly_chart(verb_object_figure(vo["score"], present=present, dark=dark), key="lm_heads_enc_verb_object")
    st.markdown("\n".join(f"- {line}" for line in verb_object_lines(vo)))
    if vo["examples"]:
        _example_maps(name, vo, present=present, dark=dark)

    st.markdown("**Replacing heads by fixed patterns.** Each head's map is replaced by its best fixed offset (all the "
                "weight on that one token) and the loss is measured on the held-out sentences, teacher forcing. "
                "Raganato et al. trained their models with the patterns fixed; here the trained model gets no chance "
                "to adapt. As a yardstick, the head is also switched off (its output multiplied by 0).")
    study = found["replacement"]
    st.dataframe(group_rows(study), hide_index=True, column_config=TABLE_FORMAT)
    st.markdown("\n".join(f"- {line}" for line in replacement_lines(study)))
    with st.expander("Every head, replaced on its own"):
        st.dataframe(replacement_rows(study), hide_index=True, column_config=TABLE_FORMAT)
    st.caption(f"Held-out: the first {spec['first']} sentence pairs of {md(name)}'s {spec['split']} split (never "
               f"trained on); loss in nats per target token. Verbs and objects: {vo['n_after'] + vo['n_before']} "
               f"sentences of the {spec['verb_object_split']} split."
               + (f" Read from {origin}." if origin else " Measured here."))  # md: trusted (path, `command`)
