"""Step-by-step decoding panel: the whole decode is computed once (deterministic for a seed) and revealed step by step."""
from __future__ import annotations

import streamlit as st

from app import coverage_view
from app import progress as progress_bar
from app.cache import bounded
from app.text import md
from core.inference import coverage, quality, verbatim
from core.io.budget import max_positions
from core.inference.decoding import beam_search, generate
from core.inference.runner import coverage_notices, forward_ids
from core.io.tokenizer import BOS, EOS
from core.probes import summaries


@bounded
def _decode(name, text, method, temperature, top_k, top_p, beams, seed):
    from app.shell import load_model
    ck = load_model(name)
    ids = ck.tokenizer.encode(text)
    limit = max_positions(ck.model) - (1 if ck.model.cfg.kind == "encoder-decoder" else 2)
    cov, notices = coverage_notices(ck, text, name)
    if len(ids) > limit:
        notices.append(f"The text has {len(ids)} tokens; this model reads at most {limit} here, so it was cut "
                       f"after token {limit}.")
    src = ids[:limit]
    args = dict(src=src + [EOS]) if ck.model.cfg.kind == "encoder-decoder" else dict(prompt=src)
    args["notices"] = notices
    args["outside"] = coverage.outside_label(ck) if cov and cov["unknown_words"] else ""
    max_new = 40 if ck.model.cfg.kind == "decoder-only" else max_positions(ck.model)
    inputs = {k: v for k, v in args.items() if k not in ("notices", "outside")}  # before "unsure" is added
    if method == "beam":
        result = beam_search(ck.model, beams=beams, max_new=max_new, **inputs)
    else:
        result = generate(ck.model, method=method, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed,
                          max_new=max_new, **inputs)
    # how sure the translator is of what it wrote, as on every page that shows a translation (core.inference.quality),
    # scored on the source it translated (cut above), not the whole text
    args["unsure"] = (quality.notice(ck.meta, quality.confidence_of_ids(ck.model, [args['src']], [result.ids])[0])
                      if ck.model.cfg.kind == "encoder-decoder" and not args["outside"] else None)
    return args, result


def candidate_names(tok, ids) -> list[str]:
    """Candidates as the figures show tokens (word marker dropped), except where two would look alike ("3" that
    starts a word and "3" inside one): those keep the marker as the tokenizer holds them (▁3, 3); a lone marker is
    named for what it is."""
    shown = tok.display(ids)
    names = [tok.id_to_token(i) if shown.count(s) > 1 else s for i, s in zip(ids, shown)]
    return ["▁ (a new word begins)" if n == "▁" else n for n in names]


def decode_panel(view, figures) -> None:
    ck = view.ck
    c1, c2, c3, c4, c5, c6 = st.columns(6)  # one row: the step's chart starts on a projector's first screen
    method = c1.selectbox("Method", ["greedy", "beam", "sample"])
    beams = c2.number_input("Beams", 1, 8, 4, disabled=method != "beam")
    temperature = c3.number_input("Temperature", 0.05, 5.0, 1.0, 0.05, disabled=method != "sample")
    top_k = c4.number_input("Top-k (0 = off)", 0, 200, 0, disabled=method != "sample")
    seed = c5.number_input("Seed", 0, 10_000, 0, disabled=method != "sample")
    top_p = c6.slider("Top-p (nucleus)", 0.05, 1.0, 1.0, disabled=method != "sample")
    if not view.text.strip():
        st.info("Type a sentence first: the text is empty.")
        return
    try:
        args, result = _decode(view.name, view.text, method, float(temperature), int(top_k), float(top_p),
                               int(beams), int(seed))
    except ValueError as e:
        st.info(md(e))
        return
    coverage_view.notices(args["notices"])
    tok = ck.tokenizer
    shown = tok.decode(args["src"] if "src" in args else args["prompt"])
    st.markdown(f"**{'Source' if 'src' in args else 'Prompt'}** ({len(args.get('src', args.get('prompt')))} tokens): "
                f"{md(shown)}")
    total = len(result.steps)
    first = min(1, total)  # the page opens on the first step's candidates, not on an empty panel
    key = (view.name, view.text, method, beams, temperature, top_k, top_p, seed)
    if st.session_state.get("decode_key") != key:
        st.session_state["decode_key"], st.session_state["decode_n"] = key, first
    b1, b2, b3 = st.columns(3)
    if b1.button("Next step", type="primary", disabled=st.session_state["decode_n"] >= total):
        st.session_state["decode_n"] += 1
    if b2.button("Run to end"):
        st.session_state["decode_n"] = total
    if b3.button("Back to step 1"):
        st.session_state["decode_n"] = first
    n = st.session_state["decode_n"]
    st.progress(n / max(total, 1), text=f"step {n} of {total}")
    if n == 0:
        st.info("Nothing to decode: the model stopped before its first token.")
        return
    step = result.steps[n - 1]
    chosen_ids = [s.chosen for s in result.steps[:n] if s.chosen != EOS]
    if method == "beam":
        chosen_ids = [t for t in result.beams[n - 1][0].ids if t != EOS] if result.beams[n - 1] else chosen_ids
    so_far = tok.decode(chosen_ids)
    coverage_view.output("Output so far", so_far, args["outside"])
    names = candidate_names(tok, [i for i, _ in step.top])
    chosen_pos = next((i for i, (t, _) in enumerate(step.top) if t == step.chosen), None)
    chosen_name = names[chosen_pos] if chosen_pos is not None else candidate_names(tok, [step.chosen])[0]
    st.plotly_chart(figures.bars([p for _, p in step.top], names, title=f"Step {n}: top candidates "
                                 f"(chosen: {figures.label(chosen_name)})", x_title="candidate token",
                                 y_title="probability", present=view.present, dark=view.dark, highlight=chosen_pos), key="cands")
    st.caption("Probabilities: " + ", ".join(f"{md(name)} {p:.3g}" for name, (_, p) in zip(names, step.top)) +
               " — a bar near 1 means the model had no doubt at this step; the others are still its runners-up.")
    if method == "beam":
        st.markdown("**Live beams after this step** (sum of log-probabilities):")
        st.dataframe([{"beam": tok.decode(b.ids) or "∅", "score": b.score, "finished": b.finished}
                      for b in result.beams[n - 1]], hide_index=True)
    prefix = ([BOS] if ck.model.cfg.kind == "encoder-decoder" else [BOS] + args["prompt"]) + chosen_ids[:n - 1]
    prefix = prefix[: max_positions(ck.model)]
    trace = forward_ids(ck.model, args.get("src"), prefix).trace.to("cpu")
    kind = "cross" if ck.model.cfg.kind == "encoder-decoder" else "decoder"
    keys = tok.display(args["src"]) if kind == "cross" else tok.display(prefix)
    layer = st.selectbox("Layer", range(trace.n_layers(kind)), index=trace.n_layers(kind) - 1)
    row = trace.attention(kind, layer)[0, :, -1].mean(0)
    st.plotly_chart(figures.bars(row, keys, title=f"{'Cross' if kind == 'cross' else 'Self'}-attention of this step "
                                 f"(layer {layer}, mean over heads)", x_title="key token", y_title="weight", present=view.present,
                                 dark=view.dark, highlight=int(row.argmax())), key="row")
    if n == total and args["outside"]:
        coverage_view.output("Finished", tok.decode(result.ids), args["outside"])
    elif n == total and args["unsure"]:
        st.warning(f"Finished: {md(tok.decode(result.ids))} — {md(args['unsure'])}")
    elif n == total:
        st.success(f"Finished: {md(tok.decode(result.ids))}")
    if ck.model.cfg.kind == "encoder-decoder":
        reference_panel(view.tgt, tok.decode(result.ids), n == total)
    else:
        verbatim_panel(view, args["prompt"], result.ids, n == total)


def bleu_rows(score: dict) -> list[dict]:
    """The table of :func:`core.inference.quality.sentence_bleu`: per n-gram order the clipped matches, the output's
    n-grams, the precision p_n and the value BLEU's mean uses."""
    names = {1: "words (1-grams)", 2: "word pairs (2-grams)", 3: "3-grams", 4: "4-grams"}
    rows = []
    for r in score["rows"]:
        if r["total"] == 0:
            used = "left out: the output is too short"
        elif r["matched"] == 0:
            used = f"{r['used']:.4f} (no match: smoothed)"
        else:
            used = f"{r['used']:.4f}"
        rows.append({"n": names.get(r["n"], f"{r['n']}-grams"), "matched (clipped)": r["matched"],
                     "in the output": r["total"],
                     "precision p_n": "—" if r["precision"] is None else f"{r['precision']:.4f}", "used in BLEU": used})
    return rows


def reference_panel(reference: str | None, output: str, finished: bool) -> None:
    """The finished output scored against the user's reference translation (the sidebar's Target): clipped n-gram
    precisions, brevity penalty, sentence BLEU and chrF (core.inference.quality), or a note saying what to type."""
    st.subheader("Score against your reference: BLEU and chrF")
    if not (reference or "").strip():
        st.info("To score the translation, type a reference translation (a correct translation of your sentence) "
                "in the sidebar's Target box (the arrow at the top left opens the sidebar). BLEU and chrF then "
                "compare the finished output with it.")
        return
    if not finished:
        st.caption("Click Run to end: the finished output is scored against your reference.")
        return
    b, chrf = quality.sentence_bleu(output, reference), quality.sentence_chrf(output, reference)
    st.markdown(f"**Reference** (the sidebar's Target): {md(reference)}")
    st.dataframe(bleu_rows(b), hide_index=True)
    c1, c2, c3 = st.columns(3)
    c1.metric("BLEU", f"{b['bleu']:.1f}", help="100 × BP × geometric mean of the values used (sacrebleu's sentence "
              "BLEU: 13a tokens, an order with no match counts as 1 / (2^k · n-grams))")
    c2.metric("Brevity penalty BP", f"{b['bp']:.3f}", help="1 when the output is at least as long as the reference, "
              "else exp(1 − reference length / output length)")
    c3.metric("chrF", f"{chrf:.1f}", help="F-score of character 1- to 6-grams, recall weighted twice (β = 2)")
    if not b["hyp_len"]:
        st.markdown("The output is empty, so BLEU and chrF are 0.")
        return
    p1 = b["rows"][0]
    length = ("as long as the reference or longer, so BP is 1" if b["bp"] == 1 else
              f"shorter than the reference ({b['hyp_len']} tokens against {b['ref_len']}), so BP is {b['bp']:.3f}")
    st.markdown(f"{p1['matched']} of the output's {p1['total']} token{'' if p1['total'] == 1 else 's'} also "
                f"appear{'s' if p1['matched'] == 1 else ''} in the reference (counted at most as often as there), and "
                f"the output is {length}. BLEU rewards exact word sequences; chrF compares "
                "characters, so a word with the right stem but the wrong ending still earns part of the credit.")


# ------------------------------------------------------------------ a language model: is it quoting its training text?
@st.cache_resource(show_spinner=False, max_entries=2)
def training_index(name: str, weights: str) -> verbatim.TrainingIndex:
    """The training stream of model ``name`` (``weights``: its fingerprint, so that a model trained again under
    the same name is indexed again), indexed by core.inference.verbatim: built once per server, kept on disk."""
    from app.shell import load_model
    return verbatim.training_index(load_model(name))


@bounded(ignore=("progress",))
def measured_comparison(name: str, weights: str, progress=None) -> dict:
    """:func:`core.inference.verbatim.compare` measured here (a model with no shipped comparison)."""
    from app.shell import load_model
    return verbatim.compare(load_model(name), training_index(name, weights), progress=progress)


def _share(found: int, total: int, n: int) -> str:
    return f"— (fewer than {n} tokens)" if not total else f"{found} of {total} ({100 * found / total:.0f} %)"


def verbatim_rows(parts: dict) -> list[dict]:
    """One table row per checked text (name → :func:`core.inference.verbatim.summary`)."""
    rows = []
    for label, s in parts.items():
        best = s["longest"]
        row = {"text": label, "tokens": s["tokens"], "longest verbatim span (tokens)": best.length if best else 0,
               "times that span occurs in training": best.count if best and best.length else 0}
        row.update({f"{n}-grams found in training": _share(*s["shares"][n], n) for n in verbatim.NS})
        rows.append(row)
    return rows


def passage_markdown(p: dict) -> str:
    """The training passage as a quote, the copied span highlighted (all of it shown as text, md())."""
    span = p["span"]
    lead, trail = span[:len(span) - len(span.lstrip())], span[len(span.rstrip()):]
    return (f"> {'… ' if p['cut_before'] else ''}{md(p['before'] + lead)}:orange-background[**{md(span.strip())}**]"
            f"{md(trail + p['after'])}{' …' if p['cut_after'] else ''}")


def comparison_rows(entry: dict) -> list[dict]:
    """The greedy-against-sampling table (:func:`core.inference.verbatim.compare`) as shown."""
    return [{"continuation": r["kind"], "texts": r["continuations"], "tokens": r["tokens"],
             "mean longest span": round(r["longest_mean"], 1), "largest longest span": r["longest_max"],
             **{f"{n}-grams found": _share(r["found"][str(n)], r["total"][str(n)], n) for n in verbatim.NS}}
            for r in entry["rows"]]


def comparison_finding(entry: dict) -> str:
    """What the greedy-against-sampling table shows, in words, from its numbers: short phrases (4-grams), greedy
    against sampling; longer runs (8-grams), the model against the real held-out text."""
    by = {r["kind"]: r for r in entry["rows"]}

    def pct(kind: str, n: int) -> float:
        r = by[kind]
        return 100 * r["found"][str(n)] / max(1, r["total"][str(n)])
    real = "held-out text (the real continuation)"
    g4, s4, g8, s8, h8 = pct("greedy", 4), pct("sampling", 4), pct("greedy", 8), pct("sampling", 8), pct(real, 8)
    short = (f"Greedy decoding reuses short training phrases more than sampling does (4-grams found: {g4:.0f} % "
             f"against {s4:.0f} %)" if g4 > s4 else
             f"Greedy decoding does not reuse short training phrases more than sampling does (4-grams found: "
             f"{g4:.0f} % against {s4:.0f} %)")
    over = [k for k, v in (("greedy", g8), ("sampling", s8)) if v > h8]
    if not over:
        long = (f"; neither copies longer runs more often than the real text, which the model never read, shares "
                f"with its training text (8-grams found: {g8:.0f} % greedy, {s8:.0f} % sampling, {h8:.0f} % real "
                "text).")
    else:
        long = (f"; at 8 tokens {' and '.join(over)} copies more than the real text does (8-grams found: {g8:.0f} % "
                f"greedy, {s8:.0f} % sampling, {h8:.0f} % real text).")
    return short + long + f" {entry['spec']['prompts']} prompts are few: read a gap of a few points as noise."


def verbatim_panel(view, prompt: list[int], output: list[int], finished: bool) -> None:
    """A decoder-only model's prompt and finished continuation checked against its training text: the longest
    span found word for word (with the training passage it came from) and the share of 4-, 8- and 16-grams found;
    then greedy decoding against sampling on held-out prompts (shipped in summaries.json, or measured on request)."""
    st.subheader("Is it quoting its training text?")
    if not st.toggle("Check against the training text", key="verbatim_on"):
        st.caption("Switch this on to look for the longest run of tokens of your prompt and of the model's "
                   "continuation that appears word for word in the text the model was trained on. The first check "
                   "on a server reads and indexes that whole text: about a second for lm-tiny, one to two minutes "
                   "for the lm (then it is kept on disk).")
        return
    try:
        with st.spinner("Indexing the training text (once per server)…"):
            index = training_index(view.name, summaries.fingerprint(view.ck.model))
    except (ValueError, OSError) as e:
        st.info(f"This model's training text cannot be checked: {md(e)}")
        return
    tok = view.ck.tokenizer
    st.caption(f"Training text: {len(index.tokens):,} tokens in {len(index.starts):,} paragraphs of "
               f"{len(index.docs):,} document{'' if len(index.docs) == 1 else 's'}, in the model's own tokens.")
    texts = {"your prompt": list(prompt)}
    if finished:
        texts["the model's continuation"] = list(output)
    parts = {label: verbatim.summary(index, ids) for label, ids in texts.items()}
    st.dataframe(verbatim_rows(parts), hide_index=True)
    if not finished:
        st.caption("Click Run to end: the finished continuation is checked too.")
    for label, s in parts.items():
        best = s["longest"]
        if best is None or not best.length:
            st.markdown(f"No token of {md(label)} occurs in the training text.")
            continue
        shown = tok.decode(texts[label][best.start:best.start + best.length])
        p = verbatim.passage(index, tok, best)
        times = "once" if best.count == 1 else f"{best.count:,} times"
        st.markdown(f"**Longest span of {md(label)}**: {best.length} token{'' if best.length == 1 else 's'}, "
                    f"{md(shown)} — in the training text {times}. First found in {md(p['document'])}, "
                    f"paragraph {p['number']:,} of the text the corpus kept from it:")
        st.markdown(passage_markdown(p))
    shipped = summaries.verbatim_summary(view.ck, view.name)
    if finished:
        st.markdown(continuation_verdict(parts["the model's continuation"], shipped))
    comparison_panel(view.name, view.ck, shipped)


def continuation_verdict(s: dict, shipped: dict | None) -> str:
    """What the longest match of the finished continuation (a :func:`core.inference.verbatim.summary`) says, with
    the held-out text's mean longest match as the scale when the comparison is shipped."""
    best = s["longest"]
    length = best.length if best else 0
    if not s["tokens"]:
        return "The model wrote nothing before it stopped: there is no continuation to check."
    if length == s["tokens"]:
        verdict = (f"The whole continuation ({length} token{'' if length == 1 else 's'}) appears word for word in "
                   "the training text.")
    else:
        verdict = (f"The longest run of the continuation found word for word in the training text is {length} "
                   f"token{'' if length == 1 else 's'}.")
    real = next((r for r in (shipped or {}).get("rows", []) if r["kind"].startswith("held-out")), None)
    if real is not None:
        scale = (f" For scale: real held-out text, which the model never read, has a longest run of "
                 f"{real['longest_mean']:.1f} tokens in the training text on average (the table below)")
        if length <= real["longest_mean"]:
            return verdict + scale + ": this run is no longer, so by itself it does not show memorisation."
        return verdict + scale + ": this run is longer, a sign that the model is reproducing its training text."
    if length >= 16:
        return verdict + " A run that long is very likely a quote of the training text."
    if length >= 8:
        return verdict + " That is longer than most common phrases: read the passage above to judge."
    return verdict + " Runs this short are common phrases that much English shares, not a quote."


def comparison_panel(name: str, ck, entry: dict | None) -> None:
    """Greedy decoding against sampling on held-out prompts, with the real held-out continuation as a baseline:
    ``entry`` as shipped (summaries.verbatim_summary), else measured on request."""
    st.markdown("**Greedy against sampling, on held-out prompts**")
    source = summaries.source(ck, name) if entry is not None else None
    if entry is None:
        spec = verbatim.compare_spec(ck.meta.get("task", ""))
        st.info(f"No comparison is shipped for {md(name)}: measuring it writes "
                f"{spec['prompts'] * (1 + spec['samples'])} continuations of {spec['new_tokens']} tokens.")
        if not st.toggle("Measure greedy against sampling on this model", key=f"verbatim_compare_{name}"):
            return
        entry, complete = progress_bar.run(f"verbatim_compare_{name}", f"Decoding held-out prompts with {name}",
                                           lambda tell: measured_comparison(name, summaries.fingerprint(ck.model),
                                                                            progress=tell))
        if not complete:
            st.info("Stopped: the table needs every prompt; run it to the end to see it.")
            return
    spec = entry["spec"]
    st.dataframe(comparison_rows(entry), hide_index=True)
    st.markdown(f"The first {spec['prompt_tokens']} tokens of {spec['prompts']} held-out paragraphs (text the model "
                f"never trained on), continued for up to {spec['new_tokens']} tokens: greedily, by sampling at "
                f"temperature {spec['temperature']:g} ({spec['samples']} seeds each), and by the paragraph itself. "
                + comparison_finding(entry))
    origin = f"Read from {source}." if source is not None else "Measured here."  # md: trusted (path, `command`)
    st.caption(origin)
