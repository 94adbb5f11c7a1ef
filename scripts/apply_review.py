"""Apply the hand review to the dictionary-derived lexicon (second step of the rebuild).

    python scripts/apply_review.py [--out PATH]

``scripts/build_lexicon.py`` derives a lexicon from the Debian dictionaries; automatic sense choice still picks
wrong senses (bucket → "Löffel", hat → "Deckel"). Its output at one point was read, entry by entry, by reviewers
who know the three languages; ``core/data/review/`` keeps what was read and what was decided, and this script
turns the two into ``core/data/lexicon.json`` (what the corpus uses):

* ``derived.json`` — the builder's output as it was read (the builder has changed since; rerunning it gives a
  table nobody has read, so it is not what ships).
* ``additions.jsonl`` — whole noun entries written by hand where the builder missed an everyday word (bridge,
  pear, teacher...).
* ``candidates.json`` — nouns the builder found with a class and a German translation but no French that its
  small French dictionary attests (``build_lexicon.py --candidates``; the first 1,600 by frequency, as read), and
  ``french.jsonl`` — a reviewer's decision for each: ``{"en", "action": "add", "fr", "fr_g", "fr_pl", <fixes>}``
  or ``{"en", "action": "drop", "why"}``.
* ``nouns.jsonl``, ``adjectives.jsonl``, ``verbs.jsonl`` — one decision per line for each entry that was not right
  as derived: ``{"en": ..., "action": "fix", <field>: <value>, ...}`` or ``{"en": ..., "action": "drop", "why": ...}``.

Every hand-written or hand-completed noun must pass ``Checker.check``: hunspell-fr gives the French its gender and
plural, hunspell-de knows both German forms, and Ding pairs the English word with that German word and gender (or
the French–German dictionary pairs the French and German words); a noun that fails is left out and counted.

Prints what it did, last line JSON.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

# build_lexicon is this script's neighbour: scripts/ is on sys.path when a script in it runs
from build_lexicon import (GENDER_DE, HUN_DE, HUN_FR, Dicts, dump, fr_elides, fr_gender, fr_plural_candidates,  # noqa: E501
                           fr_plurals, german_weak, hunspell_analyse, hunspell_unknown, person_sex)

ROOT = Path(__file__).resolve().parent.parent
LEXICON = ROOT / "core" / "data" / "lexicon.json"
REVIEW = ROOT / "core" / "data" / "review"
REVIEWED_MARK = " Every entry then read by a reviewer; decisions in core/data/review/ (scripts/apply_review.py)."
CLASSES = {"animal", "person", "food", "drink", "plant", "vehicle", "building", "furniture", "clothing", "tool",
           "instrument", "container", "vessel", "object", "place", "obstacle"}
FR_WORD = re.compile(r"[a-zàâäçéèêëîïôöùûüœæ-]+")
DE_WORD = re.compile(r"[A-ZÄÖÜ][a-zäöüßé-]*[a-zäöüßé]|[A-Z]-[A-Z][a-zäöüß]+")


def decisions(name: str, actions=("fix", "drop")) -> dict[str, dict]:
    path = REVIEW / name
    out: dict[str, dict] = {}
    if not path.exists():
        return out
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        d = json.loads(line)
        if d.get("action") not in actions or not isinstance(d.get("en"), str):
            raise ValueError(f"{path}:{number}: each line needs en and action {'|'.join(actions)}")
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


def completed(counts: dict) -> list[dict]:
    """The builder's French-less candidates that a reviewer kept, with the French they wrote and any fixes."""
    path = REVIEW / "candidates.json"
    if not path.exists():
        return []
    cands = {c["en"]: c for c in json.loads(path.read_text(encoding="utf-8"))["candidates"]}
    review = decisions("french.jsonl", ("add", "drop"))
    missing = set(review) - set(cands)
    if missing:
        raise ValueError(f"french.jsonl names nouns that are not in candidates.json: {sorted(missing)[:5]}")
    out = []
    for en, d in review.items():
        if d["action"] != "add":
            counts["candidates_dropped"] += 1
            continue
        c = {k: v for k, v in cands[en].items() if k not in ("why", "freedict_fr", "gloss")}
        out.append({**c, **{k: v for k, v in d.items() if k not in ("action", "why")}, "rank": 10_000 + c["rank"]})
    return out


class Checker:
    """Checks hand-written nouns against the dictionaries the builder reads (one hunspell call per language)."""

    def __init__(self, nouns: list[dict], dicts: Dicts | None = None):
        self.D = dicts or Dicts()
        fr = {w for n in nouns for w in (n.get("fr"), n.get("fr_pl")) if isinstance(w, str) and FR_WORD.fullmatch(w)}
        self.hfr = hunspell_analyse(HUN_FR, fr)
        self.unk_de = hunspell_unknown(HUN_DE, {w for n in nouns for w in (n.get("de"), n.get("de_pl"))
                                                if isinstance(w, str)})

    def german_attested(self, n: dict) -> bool:
        """Ding (eng-deu, or deu-eng back) translates the English word by the German one with that gender, or
        its plural by the German plural (Ding lists some nouns only in the plural: toads / Kröten), or the
        French–German dictionary pairs the French and the German word. On those two routes the gender is the
        reviewer's alone: Ding's own gender tags are wrong for several of them (das Mammut, das Püree, der Lemming,
        der Tofu are tagged otherwise in deu-eng), so they cannot overrule it."""
        return (self.ding_pairs(n["en"], n["de"], n["de_g"])
                or any(w == n["de_pl"] and tag == "pl" for w, tag, *_ in self.D.ed_items(n["en_pl"]))
                or self.D.fr_de(n["fr"], n["de"]))

    def ding_pairs(self, en: str, de: str, gender: str) -> bool:
        if any(w == de and GENDER_DE.get(tag) == gender for w, tag, *_ in self.D.ed_items(en)):
            return True
        for tag, trans, _see, _ent in self.D.de_entries(de):
            t = [x.strip() for x in tag.split(",")]
            if t and GENDER_DE.get(t[0]) == gender and self.D.trans_has(trans, en):
                return True
        return False

    def check(self, n: dict) -> str | None:
        """None if the noun passes, else why not."""
        classes = n.get("classes") or []
        if not re.fullmatch(r"[a-z]+", n.get("en", "")) or not re.fullmatch(r"[a-z]+", n.get("en_pl", "")):
            return "en: not one lower-case word"
        if n["en"].endswith("s") and n["en_pl"] == n["en"]:
            return "en: a plural-only word (jeans, pliers): the frames need a singular"
        if not classes or not set(classes) <= CLASSES:
            return "classes: empty or unknown"
        fr, fr_pl, de, de_pl = n.get("fr", ""), n.get("fr_pl", ""), n.get("de", ""), n.get("de_pl", "")
        if not FR_WORD.fullmatch(fr) or not FR_WORD.fullmatch(fr_pl):
            return "fr: not one French word"
        if fr_gender(self.hfr, fr, n.get("fr_g"), "person" in classes) != n.get("fr_g"):
            return "fr: hunspell-fr gives another gender (or none)"
        mass = (n["en_pl"], fr_pl, de_pl) == (n["en"], fr, de)
        if not mass and fr_pl not in fr_plurals(self.hfr, fr) and not self.fr_other_plural(fr, fr_pl, n.get("fr_g")):
            return "fr: plural not confirmed by hunspell-fr"
        if fr_elides(fr) is None:
            return "fr: h/y-initial word with unknown aspiration"
        if not DE_WORD.fullmatch(de) or not DE_WORD.fullmatch(de_pl) or n.get("de_g") not in ("m", "f", "n"):
            return "de: not one German noun with a gender"
        if de in self.unk_de or de_pl in self.unk_de:
            return "de: unknown to hunspell-de"
        if not self.german_attested(n):
            return "de: no dictionary pairs the German word with the English (or French) one"
        return None

    def fr_other_plural(self, fr: str, fr_pl: str, gender: str) -> bool:
        """A plural hunspell-fr files under another stem: a hyphenated noun's (grand-père -> grands-pères), a
        feminine noun's (actrices: st:acteur), an invariable one (chasse-neige); it must be analysed as a plural
        (or invariable) noun of the same gender, and, unless hyphenated, follow the singular's regular pattern."""
        need = "is:fem" if gender == "f" else "is:mas"
        ok = any("po:nom" in a.split() and need in a.split() and ("is:pl" in a.split() or "is:inv" in a.split())
                 for a in self.hfr.get(fr_pl, []))
        return ok and ("-" in fr or fr_pl in fr_plural_candidates(fr))

    def complete(self, n: dict) -> dict:
        """The derived fields the builder computes itself: elision, weak masculine, a person's sex."""
        cs = set(n["classes"])
        return {**n, "fr_elide": fr_elides(n["fr"]), "de_weak": german_weak(n["de"], n["de_g"], n["de_pl"], cs),
                "sex": person_sex(n.get("sex"), cs, n["fr_g"], n["de_g"]), "classes": sorted(cs)}

    def attested_french(self, n: dict) -> bool:
        """A French dictionary (FreeDict en-fr / fr-en, or the French–German one) pairs the French word too."""
        return (any(it == n["fr"] for it, *_ in self.D.ef_items(n["en"])) or self.D.fe_gives(n["fr"], n["en"]) is not None
                or self.D.fr_de(n["fr"], n["de"]))


KEYS = ("en", "en_pl", "fr", "fr_g", "fr_pl", "fr_elide", "de", "de_g", "de_pl", "de_weak", "classes", "sex", "rank")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Apply the hand review: core/data/review/ -> core/data/lexicon.json")
    ap.add_argument("--out", default=str(LEXICON), help="where to write the lexicon (default: %(default)s)")
    out_path = Path(ap.parse_args(argv).out)
    lex = json.loads((REVIEW / "derived.json").read_text(encoding="utf-8"))
    counts = {f"{k}_{w}": 0 for k in ("nouns", "adjectives", "verbs") for w in ("fixed", "dropped")}
    for kind in ("nouns", "adjectives", "verbs"):
        lex[kind] = apply(lex[kind], decisions(f"{kind}.jsonl"), counts, kind)
    counts["candidates_dropped"] = 0
    added = [json.loads(ln) for ln in (REVIEW / "additions.jsonl").read_text(encoding="utf-8").splitlines() if ln.strip()]
    hand = completed(counts) + [{**n, "rank": n.get("rank", 20_000 + i)} for i, n in enumerate(added)]
    checker = Checker(hand)
    failed: dict[str, int] = {}
    have = {m["en"] for m in lex["nouns"]}
    for n in hand:
        if n["en"] in have:
            failed["en: already in the lexicon"] = failed.get("en: already in the lexicon", 0) + 1
            continue
        why = checker.check(n)
        if why:
            failed[why] = failed.get(why, 0) + 1
            print(f"left out {n['en']!r}: {why}", file=sys.stderr)
            continue
        n = checker.complete(n)
        lex["nouns"].append({k: n[k] for k in KEYS})
        have.add(n["en"])
        counts["nouns_added"] = counts.get("nouns_added", 0) + 1
        counts["nouns_added_french_attested"] = counts.get("nouns_added_french_attested", 0) + checker.attested_french(n)
    counts["hand_nouns_left_out"] = failed
    lex["nouns"].sort(key=lambda n: n["en"])
    lex["source"] += REVIEWED_MARK
    out_path.write_text(dump(lex), encoding="utf-8")
    counts.update(nouns=len(lex["nouns"]), adjectives=len(lex["adjectives"]), verbs=len(lex["verbs"]))
    print(json.dumps(counts, allow_nan=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
