"""Human translations from Debian packages: English→French and English→German sentence pairs, frozen.

Sources (each fetched by ``apt-get download`` + ``dpkg -x`` into a cache folder: nothing is installed; only
:func:`rebuild` reads them, everything else reads the frozen copy in ``assets/corpora/parallel-<lang>/``):

=====================  ==========================================================  ==========================
source                 what it is and how it aligns                                licence
=====================  ==========================================================  ==========================
``libreoffice-help``   LibreOffice help pages; every paragraph, heading, cell and   MPL-2.0
                       list item carries the same ``id`` in each language: pairs
                       by (file, id)
``wesnoth``            dialogue, story and unit descriptions of The Battle for      GPL-2.0-or-later
                       Wesnoth's campaigns: gettext catalogs, msgid → msgstr
``debian-handbook``    The Debian Administrator's Handbook: the same chapter files  GPL-2.0+ or CC-BY-SA-3.0
                       with the same ``<div class="para">`` order in each language
``tuxpaint-stamps``    a sentence describing each Tux Paint stamp, one line per     GPL-2.0-or-later
                       language in the stamp's ``.txt``
``ding``               (German only) example sentences inside the Ding entries of   GPL-2.0-or-later
                       dict-freedict-eng-deu: an English line and its German
=====================  ==========================================================  ==========================

A paragraph pair is cut into sentence pairs when both sides have the same number of sentences. Every pair then
passes the filters of :data:`FILTERS` in order (untranslated, markup and placeholders, length, length ratio,
duplicates); :func:`filter_table` counts the pairs per source before and after each, for the model card.

Splits are **by document** (a help page, a handbook chapter, a campaign, a stamp, a Ding entry), by a stable hash of
its key (90 / 5 / 5 %) — except Wesnoth, whose 18 catalogs are too few to hash: two whole campaigns are held out
(:data:`WESNOTH_HELD_OUT`). A sentence whose normalised English appears in valid or test is removed from train, so no
near-identical sentence sits on both sides.
"""
from __future__ import annotations

import gettext
import gzip
import hashlib
import html
import re
import subprocess
import unicodedata
from functools import lru_cache
from html.parser import HTMLParser
from pathlib import Path

from . import frozen

LANGS = ("fr", "de")
SPLITS = ("train", "valid", "test")
CACHE = Path.home() / ".cache" / "attention-lab" / "debs"
LO_LANG = {"fr": "fr", "de": "de"}
HANDBOOK_LANG = {"fr": "fr-FR", "de": "de-DE"}
WESNOTH_DOMAINS = ("did", "dm", "dw", "ei", "httt", "l", "low", "nr", "sof", "sota", "sotbe", "tb", "thot", "trow",
                   "tsg", "tutorial", "utbs", "units")
WESNOTH_HELD_OUT = {"wesnoth-tsg": "valid", "wesnoth-dw": "test"}  # chosen by size (mid-sized campaigns), not by score
PACKAGES = {
    "libreoffice-help": ["libreoffice-help-en-us", "libreoffice-help-fr", "libreoffice-help-de"],
    "wesnoth": ["wesnoth-1.16-data"] + [f"wesnoth-1.16-{d}" for d in WESNOTH_DOMAINS if d not in ("units", "tutorial", "tb")],
    "debian-handbook": ["debian-handbook"],
    "tuxpaint-stamps": ["tuxpaint-stamps-default"],
    "ding": ["dict-freedict-eng-deu"],
}
SOURCES = {
    "libreoffice-help": {"description": "LibreOffice 7.4 help (libreoffice-help-en-us / -fr / -de)",
                         "licence": "MPL-2.0", "aligned_by": "file + element id"},
    "wesnoth": {"description": "The Battle for Wesnoth 1.16 campaigns and units (wesnoth-1.16-*)",
                "licence": "GPL-2.0-or-later", "aligned_by": "gettext msgid"},
    "debian-handbook": {"description": "The Debian Administrator's Handbook (debian-handbook)",
                        "licence": "GPL-2.0+ or CC-BY-SA-3.0", "aligned_by": "chapter file + paragraph order"},
    "tuxpaint-stamps": {"description": "Tux Paint stamp descriptions (tuxpaint-stamps-default)",
                        "licence": "GPL-2.0-or-later", "aligned_by": "stamp file"},
    "ding": {"description": "Ding example sentences (dict-freedict-eng-deu), German only",
             "licence": "GPL-2.0-or-later", "aligned_by": "dictionary entry"},
}
MAX_WORDS = 40  # a side longer than this is too long for the model (positions and batches)
MIN_RATIO, MAX_RATIO = 0.5, 2.2  # target / source characters (French runs ≈ 1.15× English, German ≈ 1.2×)


# ---- extraction (rebuild only) ---------------------------------------------------------------------------------

def fetch(packages: list[str], cache: Path = CACHE) -> Path:
    """``apt-get download`` each package not in ``cache`` yet and ``dpkg -x`` it into ``cache/root``."""
    cache.mkdir(parents=True, exist_ok=True)
    root = cache / "root"
    for pkg in packages:
        if list(cache.glob(f"{pkg}_*.deb")):
            continue
        subprocess.run(["apt-get", "download", pkg], cwd=cache, check=True, capture_output=True)
        deb = next(cache.glob(f"{pkg}_*.deb"))
        subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True)
    return root


def deb_versions(cache: Path = CACHE) -> dict[str, str]:
    """The version of each downloaded package, from its file name (``name_version_arch.deb``)."""
    out = {}
    for deb in sorted(cache.glob("*.deb")):
        name, version = deb.name.split("_")[:2]
        out[name] = version.replace("%3a", ":")
    return out


class _IdParser(HTMLParser):
    """The text of every element whose id looks like LibreOffice's ``par_id…`` / ``hd_id…``, inline tags flattened."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.items: dict[str, str] = {}
        self._open: list[tuple[str, str, list[str]]] = []  # (tag, id, text) of the elements being read

    def handle_starttag(self, tag, attrs):
        ident = dict(attrs).get("id") or ""
        if re.match(r"(par|hd)_id\d", ident):
            self._open.append((tag, ident, []))
        elif tag == "br" and self._open:
            self._open[-1][2].append(" ")

    def handle_endtag(self, tag):
        if self._open and self._open[-1][0] == tag:
            _, ident, buf = self._open.pop()
            self.items.setdefault(ident, re.sub(r"\s+", " ", "".join(buf)).strip())

    def handle_data(self, data):
        if self._open:
            self._open[-1][2].append(data)


def _ids(path: Path) -> dict[str, str]:
    p = _IdParser()
    p.feed(path.read_text(encoding="utf-8", errors="replace"))
    return p.items


def libreoffice_documents(root: Path, lang: str) -> list[frozen.Document]:
    """Every help page present in both languages: its elements paired by id (those with text on both sides)."""
    base = root / "usr/share/libreoffice/help"
    docs = []
    for en_path in sorted((base / "en-US").rglob("*.html")):
        rel = en_path.relative_to(base / "en-US")
        other = base / LO_LANG[lang] / rel
        if not other.exists():
            continue
        en, tr = _ids(en_path), _ids(other)
        pairs = tuple(f"{en[k]}\t{tr[k]}" for k in en if k in tr and en[k] and tr[k])
        if pairs:
            docs.append(frozen.Document("libreoffice-help", str(rel), pairs))
    return docs


def wesnoth_documents(root: Path, lang: str) -> list[frozen.Document]:
    """One document per catalog (a campaign, the units, the tutorial): every translated msgid."""
    base = root / "usr/share/games/wesnoth/1.16/locale" / lang / "LC_MESSAGES"
    docs = []
    for d in WESNOTH_DOMAINS:
        mo = base / f"wesnoth-{d}.mo"
        if not mo.exists():
            continue
        with open(mo, "rb") as f:
            catalog = gettext.GNUTranslations(f)._catalog
        pairs = tuple(_tab(k, v) for k, v in sorted(catalog.items(), key=lambda kv: str(kv[0]))
                      if isinstance(k, str) and k and isinstance(v, str) and v)
        docs.append(frozen.Document("wesnoth", f"wesnoth-{d}", pairs))
    return docs


def _tab(en: str, tr: str) -> str:
    """One pair as ``english<TAB>translation`` on one line (newlines inside a string become spaces)."""
    return " ".join(en.split()) + "\t" + " ".join(tr.split())


class _ParaParser(HTMLParser):
    """The text of each ``<div class="para">`` of a handbook page, in order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.paras: list[str] = []
        self._depth = 0
        self._buf: list[str] = []

    def handle_starttag(self, tag, attrs):
        if self._depth:
            self._depth += tag == "div"
        elif tag == "div" and dict(attrs).get("class") == "para":
            self._depth, self._buf = 1, []

    def handle_endtag(self, tag):
        if self._depth and tag == "div":
            self._depth -= 1
            if not self._depth:
                self.paras.append(re.sub(r"\s+", " ", "".join(self._buf)).strip())

    def handle_data(self, data):
        if self._depth:
            self._buf.append(data)


def handbook_paragraphs(text: str) -> list[str]:
    """The text of each ``<div class="para">`` of a Debian Administrator's Handbook page, in order (unfiltered)."""
    p = _ParaParser()
    p.feed(text)
    return [html.unescape(x) for x in p.paras]


def _paras(path: Path) -> list[str]:
    return handbook_paragraphs(path.read_text(encoding="utf-8", errors="replace"))


def handbook_documents(root: Path, lang: str) -> list[frozen.Document]:
    """Chapters whose English and translated pages have as many paragraphs: paired in order (the unpacked package
    under ``root``, else the installed one)."""
    base = root / "usr/share/doc/debian-handbook/html"
    if not (base / "en-US").is_dir():
        base = Path("/usr/share/doc/debian-handbook/html")
    docs = []
    for en_path in sorted((base / "en-US").glob("*.html")):
        other = base / HANDBOOK_LANG[lang] / en_path.name
        if not other.exists():
            continue
        en, tr = _paras(en_path), _paras(other)
        if len(en) != len(tr):  # the structure differs: no safe alignment for this chapter
            continue
        pairs = tuple(_tab(e, t) for e, t in zip(en, tr) if e and t)
        if pairs:
            docs.append(frozen.Document("debian-handbook", en_path.name, pairs))
    return docs


def tuxpaint_documents(root: Path, lang: str) -> list[frozen.Document]:
    """One document per stamp: its first (English) line and its ``<lang>.utf8=`` line."""
    base = root / "usr/share/tuxpaint/stamps"
    docs = []
    for path in sorted(base.rglob("*.txt")):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        if not lines:
            continue
        tr = next((ln.split("=", 1)[1] for ln in lines[1:] if ln.startswith(f"{lang}.utf8=")), "")
        if lines[0].strip() and tr.strip():
            docs.append(frozen.Document("tuxpaint-stamps", str(path.relative_to(base)), (_tab(lines[0], tr),)))
    return docs


def ding_documents(lang: str, dictd: Path = Path("/usr/share/dictd")) -> list[frozen.Document]:
    """Ding's sentence entries: a head line ``English sentence. /IPA/`` and the German line under it."""
    if lang != "de":
        return []
    raw = gzip.open(dictd / "freedict-eng-deu.dict.dz").read().decode("utf-8")
    docs, seen = [], set()
    for entry in raw.split("\n\n"):
        lines = entry.strip("\n").split("\n")
        if len(lines) < 2:
            continue
        en = re.sub(r"\s*/[^/]*/\s*$", "", lines[0]).strip()
        de = lines[1].strip()
        if len(en.split()) >= 3 and en[-1:] in ".?!" and de[-1:] in ".?!" and en not in seen and en[0].isupper():
            seen.add(en)
            docs.append(frozen.Document("ding", en, (_tab(en, de),)))
    return docs


def extract(lang: str, cache: Path = CACHE) -> list[frozen.Document]:
    """Every aligned paragraph pair of ``lang`` from the packages (downloaded into ``cache`` when missing)."""
    root = fetch([p for src, pkgs in PACKAGES.items() if src not in ("debian-handbook", "ding") for p in pkgs], cache)
    if not Path("/usr/share/doc/debian-handbook/html/en-US").is_dir():
        root = fetch(PACKAGES["debian-handbook"], cache)
    return (libreoffice_documents(root, lang) + wesnoth_documents(root, lang) + handbook_documents(root, lang)
            + tuxpaint_documents(root, lang) + ding_documents(lang))


def rebuild(lang: str, write: bool = False, cache: Path = CACHE, root: Path = frozen.ROOT) -> dict:
    """Extract again and compare with the frozen copy; ``write`` replaces it."""
    new = extract(lang, cache)
    name = f"parallel-{lang}"
    try:
        old = frozen.read(name, root)
    except frozen.FrozenCorpusError:
        old = []
    report = {k: len(v) for k, v in frozen.diff(old, new).items()}
    report["documents"] = len(new)
    if write:
        versions = deb_versions(cache)
        frozen.write(name, new, sources=SOURCES, rebuild=f"python -m core.data.parallel --lang {lang}", root=root,
                     packages={p: versions.get(p) or frozen.package_version(p) for v in PACKAGES.values() for p in v})
        _pairs.cache_clear()
        report["written"] = str(root / name)
    return report


# ---- sentences, filters, splits ----------------------------------------------------------------------------------

_SENT = re.compile(r"(?<=[.!?…])[»\"”’)]?\s+(?=[«\"“‘(]?[A-ZÀ-ÖØ-Þ])")


def sentences(text: str) -> list[str]:
    """A paragraph cut after ``. ! ? …`` followed by a capital (an abbreviation such as "e.g. Writer" cuts too; such
    a cut rarely gives both sides the same count, and then the paragraph stays whole)."""
    return [s.strip() for s in _SENT.split(text) if s.strip()]


def sentence_pairs(en: str, tr: str) -> list[tuple[str, str]]:
    """A paragraph pair as sentence pairs when both sides have the same number of sentences, else whole."""
    a, b = sentences(en), sentences(tr)
    return list(zip(a, b)) if len(a) == len(b) else [(en, tr)]


_MARKUP = re.compile(r"%[sdif0-9]|\$[\w(]|\{\w*\}|<[^>]*>|[~_]\w|&\w+;|\[/?\w+\]|\\[nt]|@\w|\|")


def _untranslated(en, tr):
    return tr == en or not re.search(r"[A-Za-z]", en)


def _markup(en, tr):
    return bool(_MARKUP.search(en) or _MARKUP.search(tr))


def _length(en, tr):
    return not (1 <= len(en.split()) <= MAX_WORDS and 1 <= len(tr.split()) <= MAX_WORDS * 1.4)


def _ratio(en, tr):
    r = len(tr) / max(1, len(en))
    return not (MIN_RATIO <= r <= MAX_RATIO) and len(en) > 12  # very short strings vary too much to judge


FILTERS = (("untranslated", _untranslated), ("markup or placeholder", _markup), ("length", _length),
           ("length ratio", _ratio))


def normalise(text: str) -> str:
    """The key near-duplicates share: case, digits, punctuation and spacing ignored."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"\d+", "0", text)
    return re.sub(r"[\W_]+", " ", text).strip()


def split_of(key: str) -> str:
    """A document's split: Wesnoth's held-out campaigns, else a stable hash of its key (90 / 5 / 5 %)."""
    if key.startswith("wesnoth/"):
        return WESNOTH_HELD_OUT.get(key.split("/", 1)[1], "train")
    h = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % 100
    return "valid" if h < 5 else "test" if h < 10 else "train"


@lru_cache(maxsize=4)
def _pairs(lang: str, root: Path = frozen.ROOT) -> tuple[dict, dict]:
    """(pairs per split as ``(en, tr, source)``, counts per source before / after each filter)."""
    if lang not in LANGS:
        raise ValueError(f"no parallel corpus for {lang!r}; choose one of {', '.join(LANGS)}")
    docs = frozen.read(f"parallel-{lang}", root)
    table: dict[str, dict[str, int]] = {}
    kept: dict[str, list[tuple[str, str, str]]] = {s: [] for s in SPLITS}
    for doc in docs:
        row = table.setdefault(doc.source, {"paragraphs": 0, "sentence pairs": 0})
        row["paragraphs"] += len(doc.paragraphs)
        split = split_of(doc.key)
        for par in doc.paragraphs:
            en, tr = par.split("\t", 1)
            for a, b in sentence_pairs(html.unescape(en), html.unescape(tr)):
                row["sentence pairs"] += 1
                for name, bad in FILTERS:
                    if bad(a, b):
                        break
                    row[name] = row.get(name, 0) + 1
                else:
                    kept[split].append((a, b, doc.source))
    # duplicates: a normalised English sentence is kept once per split, and never in train when valid / test has it
    held = {normalise(a) for s in ("valid", "test") for a, _, _ in kept[s]}
    out: dict[str, list[tuple[str, str, str]]] = {}
    for split in ("test", "valid", "train"):
        seen: set[str] = set() if split != "train" else set(held)
        if split == "valid":
            seen = {normalise(a) for a, _, _ in out["test"]}
        out[split] = []
        for a, b, src in kept[split]:
            k = normalise(a)
            if k in seen:
                continue
            seen.add(k)
            out[split].append((a, b, src))
            table[src]["duplicates"] = table[src].get("duplicates", 0) + 1
    return {s: tuple(out[s]) for s in SPLITS}, table


def pairs(lang: str, split: str = "train", source: str | None = None) -> list[tuple[str, str]]:
    """The filtered sentence pairs ``(english, translation)`` of one split (optionally of one source)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    return [(a, b) for a, b, s in _pairs(lang)[0][split] if source is None or s == source]


def filter_table(lang: str) -> dict[str, dict[str, int]]:
    """Per source: paragraphs, sentence pairs, and pairs left after each filter in :data:`FILTERS` and after
    duplicates (``duplicates`` counts what survived it), for the model card."""
    return _pairs(lang)[1]


def describe(lang: str) -> dict:
    """Sizes per split and source, the filter table (``filter_order``: its steps in the order they apply) and the
    package versions, for a model card."""
    split_pairs = _pairs(lang)[0]
    meta = frozen.manifest(f"parallel-{lang}")
    return {"packages": meta["packages"], "sources": meta["sources"], "compressed_bytes": meta["data_bytes"],
            "filters": filter_table(lang), "filter_order": [name for name, _ in FILTERS] + ["duplicates"],
            "splits": {s: {"pairs": len(v), "en_words": sum(len(a.split()) for a, _, _ in v)}
                       for s, v in split_pairs.items()}}


def fingerprint(lang: str) -> dict:
    """One digest per split of the filtered pairs (what a card was measured on)."""
    return {s: hashlib.sha256("\n".join(f"{a}\t{b}" for a, b, _ in v).encode()).hexdigest()[:16]
            for s, v in _pairs(lang)[0].items()}


class HumanTranslations:
    """The human translations of one language as a :class:`core.data.ParallelText`: what
    :func:`core.data.parallel_for` gives a broad translation task (``en-fr`` → ``HumanTranslations("fr")``)."""

    def __init__(self, lang: str):
        """``lang``: one of :data:`LANGS` (ValueError otherwise)."""
        if lang not in LANGS:
            raise ValueError(f"no parallel corpus for {lang!r}; choose one of {', '.join(LANGS)}")
        self.lang = lang

    def __repr__(self) -> str:
        return f"HumanTranslations({self.lang!r})"

    def pairs(self, split: str = "train", source: str | None = None) -> list[tuple[str, str]]:
        """The filtered sentence pairs ``(english, translation)`` of one split (:func:`pairs`)."""
        return pairs(self.lang, split, source)

    def describe(self) -> dict:
        """Sizes, filter table and package versions for a model card (:func:`describe`)."""
        return describe(self.lang)

    def fingerprint(self) -> dict:
        """One digest per split of the filtered pairs (:func:`fingerprint`)."""
        return fingerprint(self.lang)


def main(argv: list[str] | None = None) -> int:
    """``python -m core.data.parallel --lang fr|de [--write]``: download, align, compare; the report as JSON."""
    import argparse
    import json
    ap = argparse.ArgumentParser(prog="python -m core.data.parallel", description=(
        "Download the packages, align and compare with the frozen parallel corpus (nothing written without --write)."))
    ap.add_argument("--lang", choices=LANGS, required=True)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    report = rebuild(args.lang, write=args.write)
    if args.write:
        report["describe"] = describe(args.lang)
    print(json.dumps(report, indent=1, ensure_ascii=False, allow_nan=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
