"""Finish a trained checkpoint for shipping: drop the resume state, measure held-out metrics, write them
into config.json (``meta.heldout``; a translator or an lm of english-large also ``meta.heldout_sample``, every n-th
held-out sentence or window (``CARD_SAMPLE_EVERY``), which tests/core/test_bundled.py re-measures, and an lm its heads
(``meta.heads``) with the in-context score of fewer windows (``meta.heads_sample``) for the same test; a translator
``meta.corpus_digest``, the digests of the splits its card reads) and the model card.

    python scripts/bundle.py assets/models/en-fr
    python scripts/bundle.py --float16 assets/models/lm   # the weights rewritten in half precision first, then measured
    python scripts/bundle.py --check assets/models/en-fr assets/models/en-de   # re-measure whole cards; exit 1 if one moved
    python scripts/bundle.py --samples assets/models/lm   # only the samples the suite re-measures, written anew
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from core.io import checkpoint, jsonio
from core.training.tasks import CARD_SAMPLE_EVERY, REAL_LM, card_mismatches, heldout_metrics
from core.training.trainer import STATE_JSON, STATE_WEIGHTS


def limits(ck) -> str:
    """What a broad translator does not know, in the card's words (computed from its own training vocabulary)."""
    task = ck.meta.get("task", "")
    if task in REAL_LM:
        return lm_limits(task)
    if task not in ("en-fr", "en-de"):
        return ""
    if "--real-share" in ck.meta.get("command", ""):
        return real_limits(ck)
    from core.data import broad
    lex = broad.lexicon()
    n_words = len(ck.known_words or ())
    return (f"\n\n## What it does not know\n\nIt has read {n_words} distinct English words, all from "
            f"{len(broad.frame_names(task[-2:]))} sentence frames over {len(lex.nouns)} nouns, {len(lex.adjectives)} "
            "adjectives and "
            f"{len(lex.verbs)} verbs (`words.json` lists them). Any other word is unknown to it: every page names such "
            "words and marks the output \"outside what this model was trained on — not a translation\". Sentences "
            "in other shapes (questions other than yes/no and where, subordinate clauses other than the frames', "
            "pronouns other than it / they / he / she, the second person, most tenses beyond simple present, past "
            "and future) are outside what it learned even when every word is known; it then often produces a "
            "fluent but wrong sentence. Its French and German are the generator's fixed choices (passé composé / "
            "Präteritum for the past, même si / obwohl for although).")


def starting_point(ck) -> str:
    """A fine-tuned model (``core.train --init-from``): the card section naming the model it started from as it was
    then, by that model's own training command (the name may since mean another model), and so on back to the first
    run when that model was itself fine-tuned; else ''."""
    init = ck.meta.get("init_from")
    if not init:
        return ""
    parts = []
    while init:
        parts.append(f"`{init['model']}` as it was then, itself trained by\n\n```\n{init.get('command')}\n```\n\n"
                     f"({init.get('step') or 0:,} steps; human translations of release "
                     f"{init.get('parallel_release', 1)})")
        init = init.get("init_from")
    return ("\n\n## Starting point\n\nFine-tuned: the run started from the weights and tokenizer of "
            + ". That one started from the weights and tokenizer of ".join(parts)
            + ". Its figures below are this model's own.")


def real_limits(ck) -> str:
    """A translator that read human translations: its corpus per source (licences, filters, splits), and its
    limits."""
    from core.data import broad, parallel_of
    lang = ck.meta["task"][-2:]
    d = parallel_of(ck.meta).describe()
    names = d["filter_order"]
    head = "| source | licence | paragraphs | sentence pairs | " + " | ".join(f"after {n}" for n in names) + " |"
    rows = "\n".join(f"| {src} | {d['sources'][src]['licence']} | {row['paragraphs']:,} | {row['sentence pairs']:,} | "
                     + " | ".join(f"{row.get(n, 0):,}" for n in names) + " |" for src, row in d["filters"].items())
    splits = ", ".join(f"{s} {v['pairs']:,} pairs ({v['en_words']:,} English words)" for s, v in d["splits"].items())
    versions = ", ".join(f"{p} {v}" for p, v in d["packages"].items() if v)
    lex = broad.lexicon()
    return (f"\n\n## Corpus\n\nTwo kinds of text, mixed as `--real-share` says: the generated sentences of "
            f"`core.data.broad` ({len(broad.frame_names(lang))} frames over {len(lex.nouns)} dictionary nouns, the "
            "coreference cases) and **human translations** from Debian packages (`core.data.parallel`), frozen in "
            + " and ".join(f"`assets/corpora/{name}/`" for name in d["corpora"])
            + f" ({d['compressed_bytes'] / 1e6:.1f} MB xz; from {versions}). "
            "Pairs per source before and after each filter, in order:\n\n" + head + "\n|" + "---|" * (len(names) + 4)
            + "\n" + rows + f"\n\nSplits by document (a help page, a handbook chapter, a campaign, a stamp): {splits}. "
            "No normalised English sentence of valid or test occurs in train.\n\n## What it does not know\n\n"
            "Its human translations are software help (most of them), fantasy-game dialogue, system administration "
            "and short descriptions of everyday things; everyday conversation is thin in them. Words it never read "
            "in training are named on every page (`words.json`); a translation it is unsure of (mean log-probability "
            "per token below the threshold calibrated on its dev sets, `meta.quality`) is marked \"probably not a "
            "correct translation\".")


LM_READ = {"lm": "It has read technical documentation only: software, operating systems, programming. Stories, "
                 "conversation, news and most everyday words are rare or absent in its training text, so on such "
                 "prompts it drifts back to documentation prose.",
           "lm-large": "It has read mostly technical documentation (software, operating systems, programming), with "
                       "the King James Bible and a fantasy game's dialogue and story as its only narrative text. "
                       "Conversation, news and many everyday words are rare in its training text.",
           "lm-xl": "It has read mostly technical documentation (software, operating systems, programming, "
                    "mathematics), with the King James Bible, a history of hackers and five games' dialogue, story "
                    "and item descriptions as its narrative text. Conversation, news and many everyday words are rare "
                    "in its training text."}


def lm_limits(task: str) -> str:
    """A real-English lm's corpus, its sources and licences, and what it has not read."""
    from core.data import prose_for
    corpus = prose_for(task)
    d = corpus.describe()
    size = sum(x["chars"] for x in d["splits"].values())
    rows = "\n".join(f"| {s} | {x['paragraphs']:,} | {x['words']:,} | {x['chars']:,} |" for s, x in d["splits"].items())
    srcs = "\n".join(f"- {v}" if isinstance(v, str) else  # english: one line each; english-large: its fields
                     f"- {v['description']} ({', '.join(v['packages'])}), {v['licence']}" for v in d["sources"].values())
    versions = ", ".join(f"{p} {v}" for p, v in d["packages"].items())
    return (f"\n\n## Corpus\n\n{size / 1e6:.1f} MB of English prose after cleaning, frozen in "
            f"{' and '.join(f'`assets/corpora/{f}/`' for f in d['frozen'])} "
            f"({d['compressed_bytes'] / 1e6:.1f} MB xz; extracted from {versions}, so "
            f"a Debian point release cannot change it; `python -m {corpus.__name__}` re-extracts and reports what "
            f"changed):\n\n{srcs}\n\nOnly running text is "
            "kept (code, tables, directives and headings are dropped); each source document goes whole to one split."
            "\n\n| split | paragraphs | words | characters |\n|---|---|---|---|\n" + rows +
            f"\n\n## What it does not know\n\n{LM_READ[task]} Its byte-level tokenizer never "
            "maps a word to [UNK], but words it never read are cut into many small pieces; every page names the "
            "words of your text that its training text does not contain (`words.json`).")


def sampled(ck) -> bool:
    """Whether the suite re-measures a sample of ``ck``'s card rather than all of it: a translator's (a broad one's
    card decodes about 12,000 sentences: 100 s alone, 200 s beside the rest of the suite; a tiny one's 4,545, 40 s
    beside the rest; an lm of english-large's test split, 2.5 MB of text)."""
    return ck.meta.get("task") in CARD_SAMPLE_EVERY


def valid_stream(ck):
    """The valid split of a real-English lm's own corpus, as token ids (what its card's in-context score reads)."""
    from core.training.tasks import LMTask
    return LMTask(tokenizer=ck.tokenizer, seq_len=ck.model.cfg.max_len, name=ck.meta["task"]).valid_stream


def lm_heads(ck) -> dict | None:
    """An lm of real English (english-large, english-xl): what its heads do, for the card and the Heads page's claims
    (:func:`core.find_heads.card_heads`, the in-context score on its corpus's valid split); None for other models."""
    if ck.meta.get("task") not in REAL_LM:
        return None
    from core import find_heads
    return find_heads.card_heads(ck, valid_stream(ck))


def samples(ck) -> dict:
    """What the suite re-measures of ``ck``'s card: ``heldout_sample`` (every ``CARD_SAMPLE_EVERY``-th held-out
    sentence or window) and, an lm of real English, ``heads_sample`` (the in-context score over
    ``find_heads.SAMPLE_WINDOWS`` windows); {} for a model the suite re-measures whole."""
    out = {}
    if sampled(ck):
        every = CARD_SAMPLE_EVERY[ck.meta["task"]]
        out["heldout_sample"] = {"every": every, **heldout_metrics(ck, every=every)}
    if ck.meta.get("task") in REAL_LM:
        from core import find_heads
        out["heads_sample"] = {"in_context": find_heads.card_in_context(ck.model, valid_stream(ck),
                                                                        windows=find_heads.SAMPLE_WINDOWS)}
    return out


def sample_sentence(ck, folder: str) -> str:
    """The card's sentence on what the suite re-measures of it."""
    if not sampled(ck):
        return "tests/core/test_bundled.py re-measures it on every CI run."
    return (f"tests/core/test_bundled.py re-measures every {CARD_SAMPLE_EVERY[ck.meta['task']]}th held-out sentence "
            "(or window) of it (`meta.heldout_sample` in config.json) on every CI run; `python scripts/bundle.py "
            f"--check {folder}` re-measures all of it.")


def write_config(path: Path, meta: dict) -> None:
    """``meta``'s keys written into ``path``'s config.json (atomically)."""
    config = json.loads((path / "config.json").read_text())
    config["meta"].update(meta)
    tmp = path / "config.json.tmp"
    tmp.write_text(jsonio.dumps(config, indent=2))
    tmp.replace(path / "config.json")


def refresh_samples(folder: str) -> None:
    """Re-measure and write only what the suite re-measures of a shipped card (:func:`samples`), and the card's
    sentence about it: the same weights, nothing chosen on it."""
    path = Path(folder)
    ck = checkpoint.load(path)
    measured = samples(ck)
    write_config(path, measured)
    card = (path / "card.md").read_text()
    start = card.index("tests/core/test_bundled.py re-measures", card.index("\n## Held-out evaluation"))
    card = card[:start] + sample_sentence(ck, folder) + card[card.index("\n\n```json", start):]
    (path / "card.md").write_text(card)
    print(jsonio.dumps({"model": path.name, **measured}))


def heads_section(h: dict | None) -> str:
    """The card's "Heads" section from :func:`lm_heads`."""
    if not h:
        return ""
    ind, prev, ic = h["best_induction"], h["best_previous_token"], h["in_context"]
    return ("\n\n## Heads\n\nMeasured on the weights with `core.find_heads.card_heads` (tests/core/test_bundled.py "
            "re-measures it on every CI run): repeated random tokens, "
            f"{h['settings']['batch']} sequences of {h['settings']['seq_len']} tokens, each twice.\n\n"
            "| measure | value |\n|---|---|\n"
            f"| best induction score (layer, head) | {ind['score']:.3f} ({ind['layer']}, {ind['head']}) |\n"
            f"| best previous-token score (layer, head) | {prev['score']:.3f} ({prev['layer']}, {prev['head']}) |\n"
            f"| loss on the first copy / the second copy (chance {h['chance_loss']:.2f}) | {h['first_copy_loss']:.2f} / "
            f"{h['second_copy_loss']:.2f} ({h['second_copy_loss'] / h['first_copy_loss']:.2f}×) |\n"
            f"| second copy with heads {h['heads_off']} off | {h['second_copy_loss_heads_off']:.2f} "
            f"({h['second_copy_loss_heads_off'] - h['second_copy_loss']:+.2f} nats) |\n"
            f"| in-context score on valid text: loss at token {ic['late']} − at token {ic['early']} "
            f"({ic['windows']} windows) | {ic['score']:+.3f} |")


def recipes_section(ck) -> str:
    """The card's "Recipes" section from ``meta.recipes`` (a list of ``{"name", "command", "result"}``: the ways this
    model's task was trained and what each reached, this model's own first), or '' when the meta has none."""
    rows = ck.meta.get("recipes")
    if not rows:
        return ""
    return "\n\n## Recipes\n\n" + "\n\n".join(f"**{r['name']}.** {r['result']}\n\n```\n{r['command']}\n```"
                                               for r in rows)


def card_splits(ck) -> dict:
    """The digests of the corpus splits a translator's card is measured on (``meta.corpus_digest``), else {}."""
    from core.data import release_of, split_digest
    task = ck.meta.get("task", "")
    if task not in ("en-fr", "en-de", "en-fr-tiny", "en-de-tiny"):
        return {}
    release = release_of(ck.meta, "generated")
    return {split: split_digest(task, split, release) for split in (("test",) if task.endswith("-tiny") else ("test", "heldout"))}


def check(folder: str) -> bool:
    """Re-measure the whole card of ``folder`` (and its sample); print what moved. True when nothing did."""
    ck = checkpoint.load(Path(folder))
    t0 = time.perf_counter()
    bad = card_mismatches(heldout_metrics(ck), ck.meta["heldout"])
    if sampled(ck):
        sample = dict(ck.meta["heldout_sample"])  # the stride it was measured with
        bad += [f"sample {m}" for m in card_mismatches(heldout_metrics(ck, every=sample.pop("every")), sample)]
    print(f"{folder}: {'reproduced' if not bad else 'MOVED: ' + '; '.join(bad)} ({time.perf_counter() - t0:.0f} s)")
    return not bad


def to_float16(path: Path) -> None:
    """Rewrite a checkpoint's floating-point weights in half precision, in place (a shipped model is measured as it
    ships: the card's numbers are those of the float16 weights)."""
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file
    weights = path / checkpoint.WEIGHTS
    with safe_open(str(weights), "pt") as f:
        metadata = f.metadata()
    tensors = {k: v.half() if v.is_floating_point() else v for k, v in load_file(str(weights)).items()}
    tmp = weights.with_name(weights.name + ".tmp")
    save_file(tensors, str(tmp), metadata=metadata)
    tmp.replace(weights)


def main(folder: str, float16: bool = False) -> None:
    path = Path(folder)
    if float16:
        to_float16(path)
    ck = checkpoint.load(path)
    t0 = time.perf_counter()
    metrics = heldout_metrics(ck)
    secs = time.perf_counter() - t0
    meta = {"heldout": metrics, **samples(ck)}
    for name in (STATE_WEIGHTS, STATE_JSON):
        (path / name).unlink(missing_ok=True)
    if card_splits(ck):  # tests/core/test_bundled.py says at once when the generator has changed them
        meta["corpus_digest"] = card_splits(ck)
    if ck.meta.get("task") in REAL_LM:  # the frozen corpus it was measured on (test_bundled compares the card with it)
        from core.data import prose_for
        meta["corpus"] = prose_for(ck.meta["task"]).fingerprint()
    heads = lm_heads(ck)
    if heads:
        meta["heads"] = heads
    write_config(path, meta)
    card = (path / "card.md").read_text()
    for section in ("\n## Starting point", "\n## Recipes", "\n## Corpus", "\n## What it does not know", "\n## Heads",
                    "\n## Held-out evaluation"):  # written below
        card = card.split(section)[0]
    card = card.rstrip("\n") + starting_point(ck) + recipes_section(ck) + limits(ck) + heads_section(heads)
    command = "python scripts/bundle.py " + ("--float16 " if float16 else "") + folder
    card += ("\n\n## Held-out evaluation\n\nMeasured with `" + command + f"` ({secs:.0f} s); "
             + sample_sentence(ck, folder) + "\n\n```json\n"
             + jsonio.dumps(metrics, indent=2) + "\n```\n")
    (path / "card.md").write_text(card)
    print(jsonio.dumps({"model": path.name, **metrics}))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--check"]:
        sys.exit(0 if all([check(arg) for arg in sys.argv[2:]]) else 1)
    if sys.argv[1:2] == ["--samples"]:
        for arg in sys.argv[2:]:
            refresh_samples(arg)
        sys.exit(0)
    half = "--float16" in sys.argv[1:]
    for arg in sys.argv[1:]:
        if arg != "--float16":
            main(arg, float16=half)
