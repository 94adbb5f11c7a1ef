"""Score translators on the hand-written DEVELOPMENT set (tests/data/winograd_dev.tsv), for choosing corpus and
recipe changes; the test set (tests/data/winograd.tsv) stays for the cards (scripts/bundle.py).

    python scripts/eval_dev.py en-fr en-de [--misses]

Prints one JSON line per model (pronoun accuracy, exact match, unknown-word rate on the dev set) and, with
--misses, each sentence whose pronoun is wrong.
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

DEV = ROOT / "tests" / "data" / "winograd_dev.tsv"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", help="bundled translators (en-fr, en-de)")
    ap.add_argument("--misses", action="store_true", help="also print the sentences whose pronoun is wrong")
    args = ap.parse_args(argv)
    rows = load(DEV)
    for name in args.models:
        ck = registry.load(name)
        task = TranslationTask(ck.meta["task"], tokenizer=ck.tokenizer, train=False)
        hyps = task.translate(ck.model, [r.en for r in rows])
        out = score(rows, task.lang, hyps, task.data, ck.known_words)
        print(jsonio.dumps({"model": name, "dev": str(DEV.relative_to(ROOT)), **out}))
        if args.misses:
            for r, h in zip(rows, hyps):
                got, want = task.data.pronoun_of(h, task.lang), r.reference(task.lang)[1]
                if got != want:
                    print(f"  {r.en}  ->  {h}  (want {want}, got {got})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
