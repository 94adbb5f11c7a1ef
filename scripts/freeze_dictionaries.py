"""Freeze the dictionaries the lexicon's checks read, so that a Debian point release cannot turn CI red.

* **hunspell** (hunspell-fr-classical, hunspell-de-de; 4 files, 0.6 MB xz): every generated French / German word and
  every lexicon form is checked against it. Frozen whole in ``assets/corpora/hunspell``; the checks read that copy.
* **FreeDict and WordNet** (6 dict-freedict-* packages, wordnet-base; 60 MB, too large to commit): only the review
  (scripts/apply_review.py) reads them. Their versions and the SHA-256 of each file read are recorded in
  ``core/data/review/dictionaries.json``; tests/core/test_lexicon.py reproduces lexicon.json byte for byte when the
  installed files are those, and otherwise says which package moved instead of failing on the changed entries.

    python scripts/freeze_dictionaries.py           # report what differs from the frozen / recorded state
    python scripts/freeze_dictionaries.py --write   # freeze hunspell again and record the installed digests
"""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from core.data import frozen

ROOT = Path(__file__).resolve().parent.parent

HUNSPELL = Path("/usr/share/hunspell")
HUNSPELL_FILES = ("fr.aff", "fr.dic", "de_DE.aff", "de_DE.dic")
HUNSPELL_PACKAGES = ["hunspell-fr-classical", "hunspell-de-de"]
HUNSPELL_SOURCES = {
    "fr": {"package": "hunspell-fr-classical", "licence": "MPL-2.0 (Dicollecte, Olivier R.)"},
    "de_DE": {"package": "hunspell-de-de", "licence": "GPL-2.0 or GPL-3.0 or OASIS-0.1 (igerman98, Björn Jacke)"},
}
FREEDICT = ("eng-fra", "fra-eng", "eng-deu", "deu-eng", "fra-deu", "deu-fra")
REVIEW_FILES = tuple(f"/usr/share/dictd/freedict-{d}.{ext}" for d in FREEDICT for ext in ("dict.dz", "index")) + tuple(
    f"/usr/share/wordnet/{f}" for f in ("data.noun", "index.noun", "cntlist.rev", "noun.exc"))
REVIEW_PACKAGES = [f"dict-freedict-{d}" for d in FREEDICT] + ["wordnet-base"]
RECORD = ROOT / "core" / "data" / "review" / "dictionaries.json"


def _sha(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def review_state() -> dict:
    """The installed versions and digests of what the review reads."""
    return {"packages": {p: frozen.package_version(p) for p in REVIEW_PACKAGES},
            "files": {f: _sha(Path(f)) for f in REVIEW_FILES}}


def review_drift(recorded: dict | None = None) -> list[str]:
    """The recorded review files whose installed digest differs (missing ones included), each with its package."""
    recorded = recorded or json.loads(RECORD.read_text())
    now = review_state()
    return [f"{f} ({recorded['packages'].get(_package_of(f))} -> {now['packages'].get(_package_of(f))})"
            for f, digest in recorded["files"].items() if now["files"].get(f) != digest]


def _package_of(path: str) -> str:
    name = Path(path).name
    return "wordnet-base" if "/wordnet/" in path else "dict-freedict-" + name.split("-", 1)[1].split(".")[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="freeze hunspell again and record the review's dictionaries")
    args = ap.parse_args(argv)
    missing = [str(HUNSPELL / f) for f in HUNSPELL_FILES if not (HUNSPELL / f).exists()]
    missing += [f for f in REVIEW_FILES if not Path(f).exists()]
    if missing:
        print(f"error: missing {missing}: apt-get install {' '.join(HUNSPELL_PACKAGES + REVIEW_PACKAGES)}")
        return 2
    try:
        old = frozen.manifest("hunspell")["files"]
    except frozen.FrozenCorpusError:
        old = {}
    report = {"hunspell_changed": sorted(f for f in HUNSPELL_FILES if old.get(f) != _sha(HUNSPELL / f)),
              "review_changed": review_drift() if RECORD.exists() else "no record yet"}
    if args.write:
        frozen.write_files("hunspell", {f: HUNSPELL / f for f in HUNSPELL_FILES}, sources=HUNSPELL_SOURCES,
                           packages=HUNSPELL_PACKAGES, rebuild="python scripts/freeze_dictionaries.py --write")
        RECORD.write_text(json.dumps(review_state(), indent=1, allow_nan=False) + "\n")
        report["written"] = [str(frozen.ROOT / "hunspell"), str(RECORD.relative_to(ROOT))]
    print(json.dumps(report, indent=1, allow_nan=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
