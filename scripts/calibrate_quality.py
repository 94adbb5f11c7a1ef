"""Calibrate a translator's "probably not a correct translation" notice on its DEV sets (core.inference.quality).

    python scripts/calibrate_quality.py assets/models/en-fr [--write]

Dev data: an even sample of 600 pairs of the human translations' valid split (core.data.parallel), 300 pairs of the
generated valid split, and the hand-written dev sets (tests/data/winograd_dev*.tsv). Each greedy translation is
"right" when it equals the reference or its sentence chrF against it is at least RIGHT_CHRF, else "wrong". The
confidence is the mean log-probability per output token. The threshold flags as many wrong translations as it can
while flagging at most 20 % of the right ones; the curve, the chosen point and whether it also flags 80 % of the
wrong ones (the issue's target) are printed, and with --write stored in config.json's meta.quality (what pages read).
Never reads a test split.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from core.data import corpus_of, lang_of, parallel_of
from core.data.winograd import load
from core.evaluate import translate_ids
from core.inference import quality
from core.io import checkpoint, jsonio

ROOT = Path(__file__).resolve().parent.parent

RIGHT_CHRF = 60.0
DEV_SETS = tuple(sorted((ROOT / "tests" / "data").glob("winograd_dev*.tsv")))


def dev_pairs(meta: dict) -> list[tuple[str, str, str]]:
    """(source, reference, which dev set) for every dev sentence of the language of a model (``meta``: its
    checkpoint's; the valid split of the human translations it read)."""
    task = meta["task"]
    lang = lang_of(task)
    real = parallel_of(meta).pairs("valid")
    out = [(a, b, "real-valid") for a, b in real[::max(1, len(real) // 600)][:600]]
    out += [(p.src, p.tgt, "generated-valid") for p in corpus_of(meta).generate(lang, "valid", n=300, seed=7)]
    for dev in DEV_SETS:
        out += [(r.en, r.reference(lang)[0], dev.name) for r in load(dev)]
    return out


def calibrate(folder: str) -> dict:
    import sacrebleu
    ck = checkpoint.load(folder)
    rows = dev_pairs(ck.meta)
    outs = translate_ids(ck, [s for s, _, _ in rows])
    hyps = [ck.tokenizer.decode(o) for o in outs]
    scores = quality.confidence(ck.model, ck.tokenizer, [s for s, _, _ in rows], outs)
    right = [h == ref or sacrebleu.sentence_chrf(h, [ref]).score >= RIGHT_CHRF for h, (_, ref, _) in zip(hyps, rows)]
    points = quality.curve(scores, right)
    best = quality.choose(points)
    per_set = {}
    for (_, _, name), s, r in zip(rows, scores, right):
        cell = per_set.setdefault(name, {"n": 0, "right": 0, "flagged_wrong": 0, "flagged_right": 0})
        cell["n"] += 1
        cell["right"] += r
        cell["flagged_wrong" if not r else "flagged_right"] += s < best["threshold"]
    step = max(1, len(points) // 25)
    return {"measure": "mean log-probability per output token (greedy output, EOS included)",
            "right": f"exact, or sentence chrF >= {RIGHT_CHRF:g} against the reference",
            "threshold": round(best["threshold"], 4), "flag_wrong": round(best["flag_wrong"], 4),
            "flag_right": round(best["flag_right"], 4), "precision_wrong": round(best["precision_wrong"], 4),
            "meets_target": best["meets"], "n": len(rows), "n_right": sum(right), "per_dev_set": per_set,
            "curve": [{k: round(v, 4) for k, v in p.items()} for p in points[::step]],
            "command": f"python scripts/calibrate_quality.py {folder} --write"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--write", action="store_true", help="store the result in the checkpoint's meta.quality")
    args = ap.parse_args(argv)
    q = calibrate(args.folder)
    if args.write:
        path = Path(args.folder) / "config.json"
        config = json.loads(path.read_text())
        config["meta"]["quality"] = q
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(jsonio.dumps(config, indent=2))
        tmp.replace(path)
    print(jsonio.dumps({k: v for k, v in q.items() if k != "curve"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
