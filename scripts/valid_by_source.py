"""chrF of translators on the valid pairs of one parallel-corpus release, split by where the pairs come from: the
sources a release added, and the sources before it. Valid only (for reading where a candidate's gain went, after a
decision; choosing is the decision rule's).

    PYTHONPATH=. python scripts/valid_by_source.py --release 3 en-fr /work/runs/s50/en-fr-r3

Prints one JSON object: per model (as named) and group, the pairs scored and their corpus chrF. The other sources'
pairs are an even sample of ``--others`` (600 by default); the added sources' pairs are all of them.
"""
from __future__ import annotations

import argparse

import sacrebleu

from core.data import parallel_for
from core.evaluate import translate_all
from core.io import jsonio, registry


def groups(task: str, release: int, others: int) -> dict[str, list[tuple[str, str]]]:
    """The valid pairs of ``release`` that come from the sources it added, and an even sample of the rest."""
    added = set(parallel_for(task, release).describe()["sources"]) - set(parallel_for(task, release - 1)
                                                                          .describe()["sources"])
    text = parallel_for(task, release)
    new = [p for s in sorted(added) for p in text.pairs("valid", source=s)]
    rest = [p for p in text.pairs("valid") if p not in set(new)]
    return {f"release {release}'s added sources": new,
            "the sources before it": rest[::max(1, len(rest) // others)][:others]}


def main(argv: list[str] | None = None) -> int:
    """Score every model named on both groups of its task's valid pairs."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--release", type=int, required=True, help="a release that added sources (2 or more)")
    ap.add_argument("--others", type=int, default=600)
    ap.add_argument("models", nargs="+", help="bundled names or checkpoint folders of one task")
    args = ap.parse_args(argv)
    out: dict[str, dict] = {}
    cks = [(m, registry.load(m)) for m in args.models]
    task = cks[0][1].meta["task"]
    if any(ck.meta["task"] != task for _, ck in cks):
        ap.error("the models must share one task")
    for name, rows in groups(task, args.release, args.others).items():
        for model, ck in cks:
            hyp = translate_all(ck, [a for a, _ in rows])
            out[f"{model} / {name}"] = {"n": len(rows),
                                        "chrf": round(sacrebleu.corpus_chrf(hyp, [[b for _, b in rows]]).score, 2)}
    print(jsonio.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
