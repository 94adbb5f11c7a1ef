"""The generated minimal pairs of a translator's probe set that no one has read yet, for the Coreference page's pair
list (:func:`core.data.broad.pair_reads_sensibly`; a pair without a verdict falls back to the coarse word-class
filters, which let "The gerbils didn't cross the volcanoes" through).

    PYTHONPATH=. python scripts/review_pairs.py en-fr en-de > /tmp/unread.jsonl

One JSON line per unread pair: both sentences and the noun each one's pronoun is meant to name. A reader adds
``{"a", "b", "sensible", "why"}`` for each to ``core/data/review/pair_sense.jsonl`` (sensible: both sentences
describe something ordinary, and a person resolves each pronoun to its noun because of the changed word). Exit
status 1 when some pair is unread, so ``&&`` can chain it.
"""
from __future__ import annotations

import argparse
import sys

from core.data import broad
from core.io import jsonio, registry
from core.probes import coref


def unread(model: str) -> list[dict]:
    """The probe pairs of ``model`` (a bundled name or a folder) that ``pair_sense.jsonl`` holds no verdict on."""
    ck = registry.load(model)
    data, lang = coref.corpus(ck), coref.language(ck)
    if data is None:
        raise SystemExit(f"{model} is not a translator of the broad grammar; its pair list is the tiny grammar's")
    rows = []
    for a, b in data.probe_pairs(lang):
        if broad.pair_reads_sensibly(a.src, b.src) is None:
            rows.append({"a": a.src, "a_refers_to": a.antecedent, "b": b.src, "b_refers_to": b.antecedent})
    return rows


def main(argv: list[str] | None = None) -> int:
    """Print the unread pairs of each model named, one JSON line each."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+", help="bundled model names or checkpoint folders")
    args = ap.parse_args(argv)
    seen, count = set(), 0
    for model in args.models:
        for row in unread(model):
            if (row["a"], row["b"]) not in seen:
                seen.add((row["a"], row["b"]))
                print(jsonio.dumps(row))
                count += 1
    print(f"{count} unread pair(s)", file=sys.stderr)
    return 1 if count else 0


if __name__ == "__main__":
    sys.exit(main())
