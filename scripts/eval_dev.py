"""Score translators on the hand-written DEVELOPMENT sets (tests/data/winograd_dev*.tsv), for choosing corpus and
recipe changes; the test set (tests/data/winograd.tsv) stays for the cards (scripts/bundle.py).

    python scripts/eval_dev.py en-fr en-de [--dev tests/data/winograd_dev2.tsv] [--misses]

Prints one JSON line per model and dev set (pronoun accuracy, exact match, unknown-word rate) and, with --misses,
each sentence whose pronoun is wrong. A model is a bundled name or a checkpoint folder.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.data.winograd import load, score  # noqa: E402
from core.io import jsonio, registry  # noqa: E402
from core.training.tasks import TranslationTask  # noqa: E402

DEV_SETS = (ROOT / "tests" / "data" / "winograd_dev.tsv", ROOT / "tests" / "data" / "winograd_dev2.tsv")


def evaluate(model: str, dev_sets=DEV_SETS, misses: bool = False) -> list[dict]:
    """One result per dev set for ``model`` (its misses listed under "misses" when asked)."""
    ck = registry.load(model)
    task = TranslationTask(ck.meta["task"], tokenizer=ck.tokenizer, train=False)
    out = []
    for dev in dev_sets:
        rows = load(dev)
        hyps = task.translate(ck.model, [r.en for r in rows])
        res = {"model": model, "dev": Path(dev).name, **score(rows, task.lang, hyps, task.data, ck.known_words)}
        if misses:
            wanted_got = [(r.reference(task.lang)[1], task.data.pronoun_of(h, task.lang)) for r, h in zip(rows, hyps)]
            res["misses"] = [f"{r.en}  ->  {h}  (want {want}, got {got})"
                             for r, h, (want, got) in zip(rows, hyps, wanted_got) if got != want]
        out.append(res)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", help="bundled translators (en-fr, en-de) or checkpoint folders")
    ap.add_argument("--dev", nargs="+", default=[str(p) for p in DEV_SETS if p.exists()],
                    help="development TSV files (default: every tests/data/winograd_dev*.tsv)")
    ap.add_argument("--misses", action="store_true", help="also print the sentences whose pronoun is wrong")
    args = ap.parse_args(argv)
    for name in args.models:
        for res in evaluate(name, args.dev, args.misses):
            wrong = res.pop("misses", [])
            print(jsonio.dumps(res))
            for line in wrong:
                print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
