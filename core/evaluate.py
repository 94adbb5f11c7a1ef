"""``python -m core.evaluate --model MODEL --pairs FILE.tsv``: translation quality and pronoun accuracy.

FILE.tsv holds ``source<TAB>reference`` lines. Prints one line per sentence, then (last line) JSON
with ``n``, ``bleu`` (sacrebleu), ``exact_match``, ``pronoun_accuracy`` and an attention-based
coreference score: per (layer, head) the share of sentences whose strongest link goes to the
correct antecedent — ``coreference`` from "it" through encoder self-attention, ``coreference_cross``
from the decoder position that predicts the target pronoun through cross-attention (see core.probes.coref).
"""
from __future__ import annotations

import argparse
import sys

import torch

from .data import translation
from .inference.decoding import greedy_batch
from .io import checkpoint, jsonio, registry
from .io.tokenizer import EOS
from .probes.coref import ProbeItem, scoreboards
from .training.tasks import pad_rows, translation_metrics


def read_pairs(path) -> list[tuple[str, str]]:
    """The ``(source, reference)`` pairs of a ``source<TAB>reference`` file (blank lines skipped); ValueError
    for a malformed line, text that is not UTF-8, or a file with no pairs."""
    try:
        text = open(path, encoding="utf-8").read()
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text") from None
    pairs = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0].strip():
            raise ValueError(f"{path}:{n}: expected 'source<TAB>reference', got {line[:60]!r}")
        pairs.append((parts[0].strip(), parts[1].strip()))
    if not pairs:
        raise ValueError(f"{path} holds no sentence pairs")
    return pairs


@torch.no_grad()
def translate_all(ck, sources: list[str], batch: int = 64) -> list[str]:
    """Greedy translations of ``sources`` by checkpoint ``ck``, ``batch`` sentences at a time (each source cut
    to fit ``max_len``)."""
    model, tok = ck.model, ck.tokenizer
    out = []
    for i in range(0, len(sources), batch):
        rows = [tok.encode(s)[: model.cfg.max_len - 1] + [EOS] for s in sources[i:i + batch]]
        out += [tok.decode(ids) for ids in greedy_batch(model, pad_rows(rows), max_new=model.cfg.max_len - 1)]
    return out


def evaluate(ck, pairs: list[tuple[str, str]], lang: str) -> tuple[list[dict], dict]:
    """Translate every pair with ``ck`` into ``lang``: per-sentence rows (source, reference, hypothesis, exact)
    and the metrics (exact match, pronoun accuracy, BLEU, coreference head scores where the grammar parses)."""
    import sacrebleu
    hyps = translate_all(ck, [s for s, _ in pairs])
    labelled, items = [], []
    for (src, ref), hyp in zip(pairs, hyps):
        try:
            p = translation.pair_for(src, lang)
        except ValueError:
            p = None
        pron = translation.pronoun_of(ref, lang)
        labelled.append(translation.Pair(src, ref, lang, p.frame if p else "?", None, None, (), pron, ()))
        if p and p.antecedent and len(p.candidates) > 1:
            items.append(ProbeItem(src, p.antecedent, p.candidates, reference=ref))
    metrics = translation_metrics(labelled, hyps, lang, translation)
    metrics["bleu"] = round(sacrebleu.corpus_bleu(hyps, [[r for _, r in pairs]]).score, 2)
    for kind, board in scoreboards(ck, items).items():
        if board["share"] is not None:
            metrics["coreference" if kind == "self" else f"coreference_{kind}"] = {
                "n": board["n"], "best_heads": board["best"],
                "share": [[round(float(x), 4) for x in row] for row in board["share"]],
                "rollout_share": [round(float(x), 4) for x in board["rollout_share"]]}
    rows = [{"source": s, "reference": r, "hypothesis": h, "exact": h == r} for (s, r), h in zip(pairs, hyps)]
    return rows, metrics


def main(argv=None) -> int:
    """The ``python -m core.evaluate`` command line: one line per sentence, then the metrics as JSON; returns
    the exit code (2 for an unusable model or file)."""
    ap = argparse.ArgumentParser(prog="python -m core.evaluate", description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="bundled short name (en-fr, en-de) or a checkpoint folder")
    ap.add_argument("--pairs", required=True, help="TSV file: source<TAB>reference per line")
    args = ap.parse_args(argv)
    try:
        ck = registry.load(args.model)
        if ck.model.cfg.kind != "encoder-decoder":
            raise ValueError(f"{args.model} is a {ck.model.cfg.kind} model; evaluation needs a translation model")
        lang = ck.meta.get("task", "en-fr").split("-")[-1]
        if lang not in translation.LANGS:
            raise ValueError(f"{args.model} was not trained on en-fr or en-de (task {ck.meta.get('task')!r})")
        rows, metrics = evaluate(ck, read_pairs(args.pairs), lang)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for r in rows:
        print(f"{'OK ' if r['exact'] else 'ERR'} {r['source']}\t{r['hypothesis']}")
    print(jsonio.dumps(metrics, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
