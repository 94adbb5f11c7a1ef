"""Apply the hand review to the dictionary-derived lexicon (second step of the rebuild).

    python scripts/apply_review.py

``scripts/build_lexicon.py`` derives a lexicon from the Debian dictionaries; automatic sense choice still picks
wrong senses (bucket → "Löffel", hat → "Deckel"). Its output at one point was read, entry by entry, by reviewers
who know the three languages; ``core/data/review/`` keeps what was read and what was decided, and this script
turns the two into ``core/data/lexicon.json`` (what the corpus uses):

* ``derived.json`` — the builder's output as it was read (the builder has changed since; rerunning it gives a
  table nobody has read, so it is not what ships).
* ``additions.jsonl`` — whole noun entries written by hand where the builder missed an everyday word (bridge).
* ``nouns.jsonl``, ``adjectives.jsonl``, ``verbs.jsonl`` — one decision per line for each entry that was not right
  as derived: ``{"en": ..., "action": "fix", <field>: <value>, ...}`` or ``{"en": ..., "action": "drop", "why": ...}``.

Prints what it did, last line JSON.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEXICON = ROOT / "core" / "data" / "lexicon.json"
REVIEW = ROOT / "core" / "data" / "review"
REVIEWED_MARK = " Every entry then read by a reviewer; decisions in core/data/review/ (scripts/apply_review.py)."
sys.path.insert(0, str(ROOT / "scripts"))
from build_lexicon import dump, fr_elides  # noqa: E402  (the same one-entry-per-line layout; elision rule)


def decisions(name: str) -> dict[str, dict]:
    path = REVIEW / name
    out: dict[str, dict] = {}
    if not path.exists():
        return out
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        d = json.loads(line)
        if d.get("action") not in ("fix", "drop") or not isinstance(d.get("en"), str):
            raise ValueError(f"{path}:{number}: each line needs en and action fix|drop")
        out.setdefault(d["en"], {}).update(d)
    return out


def apply(entries: list[dict], review: dict[str, dict], counts: dict, kind: str) -> list:
    missing = set(review) - {e["en"] for e in entries}
    if missing:
        raise ValueError(f"review names {kind} that are not in derived.json: {sorted(missing)[:5]}")
    keep = []
    for e in entries:
        d = review.get(e["en"])
        if d and d["action"] == "drop":
            counts[f"{kind}_dropped"] += 1
            continue
        if d:
            unknown = set(d) - set(e) - {"action", "why"}
            if unknown:
                raise ValueError(f"review of {kind} {e['en']!r} names unknown fields {sorted(unknown)}")
            e = {**e, **{k: v for k, v in d.items() if k not in ("action", "why")}}
            for key in ("applies", "classes", "subj", "obj"):  # a reviewer may write a list as "a,b"
                if isinstance(e.get(key), str):
                    e[key] = [c.strip() for c in e[key].split(",") if c.strip()]
            if kind == "nouns" and "fr" in d and "fr_elide" not in d:  # a new French word: its own elision
                elide = fr_elides(e["fr"])
                if elide is None:
                    counts["nouns_dropped"] += 1
                    continue
                e["fr_elide"] = elide
            counts[f"{kind}_fixed"] += 1
        if kind == "nouns" and not e["classes"]:  # nothing the frames can do with it (stair, pillar)
            counts["nouns_dropped"] += 1
            continue
        keep.append(e)
    return keep


def main() -> int:
    lex = json.loads((REVIEW / "derived.json").read_text(encoding="utf-8"))
    counts = {f"{k}_{w}": 0 for k in ("nouns", "adjectives", "verbs") for w in ("fixed", "dropped")}
    for kind in ("nouns", "adjectives", "verbs"):
        lex[kind] = apply(lex[kind], decisions(f"{kind}.jsonl"), counts, kind)
    added = [json.loads(ln) for ln in (REVIEW / "additions.jsonl").read_text(encoding="utf-8").splitlines() if ln.strip()]
    lex["nouns"] += [n for n in added if n["en"] not in {m["en"] for m in lex["nouns"]}]
    counts["nouns_added"] = len(added)
    seen = set()
    lex["nouns"] = [n for n in lex["nouns"] if not (n["en"] in seen or seen.add(n["en"]))]
    lex["source"] += REVIEWED_MARK
    LEXICON.write_text(dump(lex), encoding="utf-8")
    counts.update(nouns=len(lex["nouns"]), adjectives=len(lex["adjectives"]), verbs=len(lex["verbs"]))
    print(json.dumps(counts, allow_nan=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
