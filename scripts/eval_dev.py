"""Score translators on the hand-written DEVELOPMENT sets (tests/data/winograd_dev*.tsv), for choosing corpus and
recipe changes; the test set (tests/data/winograd.tsv) stays for the cards (scripts/bundle.py).

    python scripts/eval_dev.py en-fr en-de [--dev tests/data/winograd_dev2.tsv] [--misses] [--shapes]

Prints one JSON line per model and dev set (pronoun accuracy, exact match, unknown-word rate, and per reference
pronoun how many rows it has and how many the model got right) and, with --misses, each sentence whose pronoun is
wrong. A model is a bundled name or a checkpoint folder. --shapes first prints, per dev set and without any model,
how close it sits to the generator: the share of its sentences inside the grammar's frames (``broad.parse`` accepts
them) and how many occur verbatim in the training split. A dev set far inside the grammar flatters the models.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.data.winograd import load, score
from core.io import jsonio, registry
from core.training.tasks import TranslationTask

ROOT = Path(__file__).resolve().parent.parent

DEV_SETS = tuple(sorted((ROOT / "tests" / "data").glob("winograd_dev*.tsv")))


def evaluate(model: str, dev_sets=DEV_SETS, misses: bool = False, device: str = "cpu") -> list[dict]:
    """One result per dev set for ``model`` (its misses listed under "misses" when asked), run on ``device``."""
    ck = registry.load(model, device=device)
    task = TranslationTask(ck.meta["task"], tokenizer=ck.tokenizer, train=False)
    out = []
    for dev in dev_sets:
        rows = load(dev)
        hyps = task.translate(ck.model, [r.en for r in rows])
        res = {"model": model, "dev": Path(dev).name, **score(rows, task.lang, hyps, task.data, ck.known_words)}
        wanted_got = [(r.reference(task.lang)[1], task.data.pronoun_of(h, task.lang)) for r, h in zip(rows, hyps)]
        res["by_pronoun"] = {want: [sum(w == want for w, _ in wanted_got), sum(w == want == g for w, g in wanted_got)]
                             for want in sorted({w for w, _ in wanted_got})}
        if misses:
            res["misses"] = [f"{r.en}  ->  {h}  (want {want}, got {got})"
                             for r, h, (want, got) in zip(rows, hyps, wanted_got) if got != want]
        out.append(res)
    return out


def shapes(dev_sets=DEV_SETS) -> list[dict]:
    """Per dev set: its size, the share of its sentences ``broad.parse`` accepts (inside the generator's frames) and
    how many occur verbatim in the training split. No model involved."""
    from core.data import broad
    train = set(broad.english_sentences("train"))
    out = []
    for dev in dev_sets:
        rows = load(dev)
        inside = 0
        for r in rows:
            try:
                broad.parse(r.en)
                inside += 1
            except ValueError:
                pass
        out.append({"dev": Path(dev).name, "n": len(rows), "in_grammar": round(inside / len(rows), 4),
                    "in_train": sum(r.en in train for r in rows)})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", help="bundled translators (en-fr, en-de) or checkpoint folders")
    ap.add_argument("--dev", nargs="+", default=[str(p) for p in DEV_SETS],
                    help="development TSV files (default: every tests/data/winograd_dev*.tsv)")
    ap.add_argument("--misses", action="store_true", help="also print the sentences whose pronoun is wrong")
    ap.add_argument("--shapes", action="store_true",
                    help="first print each dev set's share inside the grammar and its count verbatim in train")
    args = ap.parse_args(argv)
    if args.shapes:
        for res in shapes(args.dev):
            print(jsonio.dumps(res))
    for name in args.models:
        for res in evaluate(name, args.dev, args.misses):
            wrong = res.pop("misses", [])
            print(jsonio.dumps(res))
            for line in wrong:
                print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
