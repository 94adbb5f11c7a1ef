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

**Release 2** (``release=2``, ``core.train --parallel-release 2``) reads these too, frozen apart in
``assets/corpora/parallel-extra-<lang>/`` so that release 1 — what the shipped translators read — stays as it was:

=====================  ==========================================================  ==========================
``gnome-help``         GNOME's help (gnome-user-docs, Mallard pages): a page's      CC-BY-SA-3.0
                       ``<title>``, ``<desc>``, ``<p>`` in order, when both
                       languages have as many
``debian-reference``   The Debian Reference: a chapter's ``<p>`` in order, when     GPL-2.0-or-later
                       both languages have as many
``freeciv``            Freeciv's nation legends, help and messages: gettext; each   GPL-2.0-or-later
                       message its own document
``widelands``          Widelands' scenario stories, tutorials, encyclopedia:        GPL-2.0-or-later
                       gettext, one document per catalog
=====================  ==========================================================  ==========================

**Release 3** (``release=3``) adds six games' gettext catalogs, frozen apart in
``assets/corpora/parallel-games-<lang>/`` (:data:`GAME_SOURCES`: Cataclysm DDA, Warzone 2100, Flare, SuperTuxKart,
Pingus, LinCity-NG; licences CC-BY-SA-3.0, GPL-2.0-or-later, CC-BY-SA-3.0-or-later, GPL-3.0-or-later). Their text is
what the help and manuals lack: everyday objects, second-person messages ("You feel cold."), dialogue. A ``.po``
message's document is the first file its ``#:`` line names; a ``.mo`` message is its own document.

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
# Release 2 adds these sources (frozen apart, in ``parallel-extra-<lang>``); release 1 is what the shipped translators
# read, unchanged. Each, like the sources above, measured before it was added (the stop-46 note): English words of
# its fr pairs ≈ 43 k (GNOME help), 41 k (Debian Reference), 89 k (Freeciv), 63 k (Widelands).
EXTRA_PACKAGES = {
    "gnome-help": ["gnome-user-docs"],
    "debian-reference": ["debian-reference-en", "debian-reference-fr", "debian-reference-de"],
    "freeciv": ["freeciv-data"],
    "widelands": ["widelands-data"],
}
EXTRA_SOURCES = {
    "gnome-help": {"description": "GNOME help (gnome-user-docs)", "licence": "CC-BY-SA-3.0",
                   "aligned_by": "page + element order"},
    "debian-reference": {"description": "The Debian Reference (debian-reference-en / -fr / -de)",
                         "licence": "GPL-2.0-or-later", "aligned_by": "chapter + paragraph order"},
    "freeciv": {"description": "Freeciv 3.0 nation legends, help and messages (freeciv-data)",
                "licence": "GPL-2.0-or-later", "aligned_by": "gettext msgid"},
    "widelands": {"description": "Widelands 1.1 scenarios, tutorials and encyclopedia (widelands-data)",
                  "licence": "GPL-2.0-or-later", "aligned_by": "gettext msgid"},
}
FREECIV_DOMAINS = ("freeciv-nations", "freeciv-core")
# Release 3 adds the text of six games (frozen apart, in ``parallel-games-<lang>``): item descriptions, dialogue,
# tutorials and menus, measured before they were added (the stop-50 note: English words of the pairs that pass the
# filters, fr / de): Cataclysm DDA 72 k / 152 k, Warzone 2100 14 k / 14 k, Flare 5.5 k / 4.8 k, SuperTuxKart
# 5.0 k / 4.8 k, Pingus 3.0 k / 4.3 k, LinCity-NG 1.7 k / 1.7 k.
GAME_PACKAGES = {
    "cataclysm-dda": ["cataclysm-dda-data"],
    "warzone2100": ["warzone2100-data"],
    "flare": ["flare-game"],
    "supertuxkart": ["supertuxkart-data"],
    "pingus": ["pingus-data"],
    "lincity-ng": ["lincity-ng-data"],
}
GAME_SOURCES = {
    "cataclysm-dda": {"description": "Cataclysm: Dark Days Ahead 0.F items, dialogue and messages (cataclysm-dda-data)",
                      "licence": "CC-BY-SA-3.0", "aligned_by": "gettext msgid"},
    "warzone2100": {"description": "Warzone 2100 4.3 campaign briefings and messages (warzone2100-data)",
                    "licence": "GPL-2.0-or-later", "aligned_by": "gettext msgid"},
    "flare": {"description": "Flare's Empyrean campaign: quests, dialogue, items (flare-game)",
              "licence": "CC-BY-SA-3.0-or-later", "aligned_by": "gettext msgid (.po)"},
    "supertuxkart": {"description": "SuperTuxKart 1.4 menus, tracks and story (supertuxkart-data)",
                     "licence": "GPL-3.0-or-later", "aligned_by": "gettext msgid (.po)"},
    "pingus": {"description": "Pingus level titles and descriptions, story (pingus-data)",
               "licence": "GPL-2.0-or-later", "aligned_by": "gettext msgid (.po)"},
    "lincity-ng": {"description": "LinCity-NG messages and help (lincity-ng-data)", "licence": "GPL-2.0-or-later",
                   "aligned_by": "gettext msgid (.po)"},
}
GAME_CATALOGS = {  # source → (catalogs under the package root, ``{lang}`` filled in): .mo or .po
    "cataclysm-dda": ("usr/share/locale/{lang}/LC_MESSAGES/cataclysm-dda.mo",),
    "warzone2100": ("usr/share/locale/{lang}/LC_MESSAGES/warzone2100.mo",),
    "flare": ("usr/share/games/flare/mods/empyrean_campaign/languages/data.{lang}.po",
              "usr/share/games/flare/mods/fantasycore/languages/data.{lang}.po"),
    "supertuxkart": ("usr/share/games/supertuxkart/data/po/{lang}.po",),
    "pingus": ("usr/share/games/pingus/data/po/{lang}.po",),
    "lincity-ng": ("usr/share/games/lincity-ng/locale/{lang}.po", "usr/share/games/lincity-ng/locale/gui/{lang}.po"),
}
# Release 4 adds the dialogue and story of four more games (frozen apart, in ``parallel-stories-<lang>``): people
# talking, which the help pages and item lists lack. Measured before they were added (the stop-51 note: English
# words of the pairs that pass the filters and are not in release 3, fr / de): FreedroidRPG 68 k / 68 k, Naev - / 99 k
# (no French catalog), Hedgewars 3.2 k / 12.7 k, SuperTux 3.5 k / 3.6 k.
STORY_PACKAGES = {
    "freedroidrpg": ["freedroidrpg-data"],
    "naev": ["naev-data"],
    "hedgewars": ["hedgewars-data"],
    "supertux": ["supertux-data"],
}
STORY_SOURCES = {
    "freedroidrpg": {"description": "FreedroidRPG 1.0 dialogues, items and messages (freedroidrpg-data)",
                     "licence": "GPL-2.0-or-later", "aligned_by": "gettext msgid"},
    "naev": {"description": "Naev 0.8 missions, news and dialogue, German only (naev-data)",
             "licence": "GPL-3.0-or-later", "aligned_by": "gettext msgid"},
    "hedgewars": {"description": "Hedgewars 1.0 missions and campaigns (hedgewars-data)", "licence": "GPL-2.0-only",
                  "aligned_by": "Lua table: English string → translation"},
    "supertux": {"description": "SuperTux 0.6 level texts and story (supertux-data)", "licence": "GPL-3.0-or-later",
                 "aligned_by": "gettext msgid (.po)"},
}
STORY_CATALOGS = {  # as GAME_CATALOGS; a pattern may hold a ``*``, and ``.lua`` is a Hedgewars locale table
    "freedroidrpg": tuple(f"usr/share/locale/{{lang}}/LC_MESSAGES/{d}.mo"
                          for d in ("freedroidrpg-dialogs", "freedroidrpg-data", "freedroidrpg")),
    "naev": ("usr/share/naev/dat/gettext/{lang}/LC_MESSAGES/naev.mo",),
    "hedgewars": ("usr/share/games/hedgewars/Data/Locale/{lang}.lua",),
    "supertux": ("usr/share/games/supertux2/levels/*/{lang}.po",),
}
RELEASES = {1: ("parallel",), 2: ("parallel", "parallel-extra"),  # the frozen corpora a release reads (+ "-<lang>")
            3: ("parallel", "parallel-extra", "parallel-games"),
            4: ("parallel", "parallel-extra", "parallel-games", "parallel-stories")}
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


class _BlockParser(HTMLParser):
    """The text of every block element ``match(tag, attrs)`` accepts, in document order, inline tags flattened (a
    block nested in a matched one counts as part of it)."""

    def __init__(self, match):
        super().__init__(convert_charrefs=True)
        self.match = match
        self.paras: list[str] = []
        self._tag, self._depth = "", 0
        self._buf: list[str] = []

    def handle_starttag(self, tag, attrs):
        if self._depth:
            self._depth += tag == self._tag
        elif self.match(tag, dict(attrs)):
            self._tag, self._depth, self._buf = tag, 1, []

    def handle_endtag(self, tag):
        if self._depth and tag == self._tag:
            self._depth -= 1
            if not self._depth:
                self.paras.append(re.sub(r"\s+", " ", "".join(self._buf)).strip())

    def handle_data(self, data):
        if self._depth:
            self._buf.append(data)


def blocks(text: str, match) -> list[str]:
    """The text of each block element of an HTML or XML page that ``match(tag, attrs)`` accepts, in order
    (unfiltered, entities decoded)."""
    p = _BlockParser(match)
    p.feed(text)
    return [html.unescape(x) for x in p.paras]


def handbook_paragraphs(text: str) -> list[str]:
    """The text of each ``<div class="para">`` of a Debian Administrator's Handbook page, in order (unfiltered)."""
    return blocks(text, _handbook_para)


def _aligned(en_path: Path, tr_path: Path, match) -> tuple[str, ...]:
    """The blocks ``match`` accepts of an English page and its translation, paired in order (those with text on both
    sides); none when the two have different counts: their structure differs, so no alignment is safe."""
    en, tr = (blocks(x.read_text(encoding="utf-8", errors="replace"), match) for x in (en_path, tr_path))
    return tuple(_tab(e, t) for e, t in zip(en, tr) if e and t) if len(en) == len(tr) else ()


def _handbook_para(tag, attrs) -> bool:
    return tag == "div" and attrs.get("class") == "para"


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
        pairs = _aligned(en_path, other, _handbook_para)
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


def _mo(path: Path) -> dict[str, str]:
    """A gettext catalog's singular messages, msgid → msgstr (a message's context, ``ctx\x04``, dropped)."""
    with open(path, "rb") as f:
        catalog = gettext.GNUTranslations(f)._catalog
    return {k.split("\x04")[-1]: v for k, v in catalog.items() if isinstance(k, str) and k and isinstance(v, str) and v}


def gnome_help_documents(root: Path, lang: str) -> list[frozen.Document]:
    """GNOME's help (Mallard pages): a page's ``<title>``, ``<desc>`` and ``<p>`` elements paired in order when
    the English and translated page have as many (else the page is skipped: no safe alignment)."""
    base = root / "usr/share/help"
    docs = []
    for en_path in sorted((base / "C").rglob("*.page")):
        rel = en_path.relative_to(base / "C")
        other = base / lang / rel
        if not other.exists():
            continue
        pairs = _aligned(en_path, other, lambda tag, attrs: tag in ("p", "title", "desc"))
        if pairs:
            docs.append(frozen.Document("gnome-help", str(rel), pairs))
    return docs


def debian_reference_documents(root: Path, lang: str) -> list[frozen.Document]:
    """The Debian Reference: a chapter's ``<p>`` elements paired in order when both languages have as many."""
    base = root / "usr/share/debian-reference"
    docs = []
    for en_path in sorted(base.glob("*.en.html")):
        other = base / en_path.name.replace(".en.html", f".{lang}.html")
        if not other.exists():
            continue
        pairs = _aligned(en_path, other, lambda tag, attrs: tag == "p")
        if pairs:
            docs.append(frozen.Document("debian-reference", en_path.name.replace(".en.html", ""), pairs))
    return docs


def freeciv_documents(root: Path, lang: str) -> list[frozen.Document]:
    """Freeciv's nation legends and its help and game messages (gettext): each message a document of its own, as
    the messages are independent texts (a nation's history, one help entry)."""
    base = root / "usr/share/locale" / lang / "LC_MESSAGES"
    docs = []
    for domain in FREECIV_DOMAINS:
        if not (base / f"{domain}.mo").exists():
            continue
        catalog = _mo(base / f"{domain}.mo")
        docs += [frozen.Document("freeciv", f"{domain}/{hashlib.sha256(k.encode()).hexdigest()[:16]}", (_tab(k, v),))
                 for k, v in sorted(catalog.items())]
    return docs


def widelands_documents(root: Path, lang: str) -> list[frozen.Document]:
    """Widelands' catalogs (a scenario's story, a tribe's encyclopedia, the tutorials): one document per catalog."""
    base = root / "usr/share/games/widelands/data/locale" / lang / "LC_MESSAGES"
    docs = []
    for mo in sorted(base.glob("*.mo")):
        pairs = tuple(_tab(k, v) for k, v in sorted(_mo(mo).items()))
        if pairs:
            docs.append(frozen.Document("widelands", mo.stem, pairs))
    return docs


_PO_KEYWORD = re.compile(r'^(msgctxt|msgid|msgid_plural|msgstr|msgstr\[\d+\])\s+"(.*)"$')
_PO_ESCAPE = {"n": "\n", "t": "\t", "r": "\r"}


def _po_unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: _PO_ESCAPE.get(m.group(1), m.group(1)), text)


def _po(path: Path) -> list[tuple[str, str, str]]:
    """A ``.po`` catalog's translated singular messages as ``(msgid, msgstr, first source file)``, in file order;
    fuzzy entries (a translator's unchecked guess), obsolete ones (``#~``) and the header are left out."""
    out: list[tuple[str, str, str]] = []
    entry: dict[str, str] = {}
    field, flags, ref = None, "", ""
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines() + [""]:
        line = line.strip()
        if not line or (line.startswith(("#", "msgctxt", "msgid ")) and any(k.startswith("msgstr") for k in entry)):
            msgstr = entry.get("msgstr", entry.get("msgstr[0]", ""))
            if entry.get("msgid") and msgstr and "fuzzy" not in flags:
                out.append((entry["msgid"], msgstr, ref))
            entry, field, flags, ref = {}, None, "", ""
            if not line:
                continue
        m = _PO_KEYWORD.match(line)
        if line.startswith("#,"):
            flags += line
        elif line.startswith("#:") and not ref and len(line.split()) > 1:
            ref = line.split()[1].rsplit(":", 1)[0]
        elif m:
            field = m.group(1)
            entry[field] = _po_unescape(m.group(2))
        elif line.startswith('"') and line.endswith('"') and field:
            entry[field] += _po_unescape(line[1:-1])
    return out


_LUA_ENTRY = re.compile(r'^\[\s*"((?:[^"\\]|\\.)*)"\s*\]\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?\s*(?:--\s*(.*))?$')


def _lua(path: Path) -> list[tuple[str, str, str]]:
    """A Hedgewars locale table's translated entries as ``(english, translation, first mission named)``: each line
    ``["English"] = "translation", -- Mission_a, Mission_b``; commented-out lines (untranslated) are left out."""
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        m = _LUA_ENTRY.match(line.strip())
        if m and m.group(2):
            ref = (m.group(3) or "").split(",")[0].strip()
            out.append((_po_unescape(m.group(1)), _po_unescape(m.group(2)), ref))
    return out


def catalog_messages(path: Path) -> list[str]:
    """The English messages (msgids) of one catalog: a gettext ``.mo`` or ``.po``, or a Hedgewars ``.lua`` table,
    translated ones only (a ``.mo`` holds no others), in the catalog's order."""
    if path.suffix == ".mo":
        return list(_mo(path))
    return [en for en, tr, _ in (_lua if path.suffix == ".lua" else _po)(path) if tr]


def catalog_documents(root: Path, lang: str, catalogs: dict[str, tuple[str, ...]]) -> list[frozen.Document]:
    """The documents of ``catalogs`` (source → patterns under ``root``, ``{lang}`` filled in). A ``.po`` or ``.lua``
    message belongs to the document of the first file or mission it names (a level, a quest, a mission:
    near-identical strings of one level stay on one side of the split); a ``.mo`` keeps no file names, so each of
    its messages is a document of its own (as Freeciv's), once per source."""
    docs = []
    for source, patterns in catalogs.items():
        seen: set[str] = set()
        for pattern in patterns:
            for path in sorted(root.glob(pattern.format(lang=lang))):
                if path.suffix == ".mo":
                    messages = [(k, v) for k, v in sorted(_mo(path).items()) if k not in seen]
                    seen.update(k for k, _ in messages)
                    docs += [frozen.Document(source, hashlib.sha256(k.encode()).hexdigest()[:16], (_tab(k, v),))
                             for k, v in messages]
                    continue
                by_file: dict[str, list[str]] = {}
                for en, tr, ref in (_lua if path.suffix == ".lua" else _po)(path):
                    by_file.setdefault(ref or path.name, []).append(_tab(en, tr))
                docs += [frozen.Document(source, f"{path.parent.name}/{ref}", tuple(pars))
                         for ref, pars in by_file.items()]
    return docs


def games_documents(root: Path, lang: str) -> list[frozen.Document]:
    """Release 3's game catalogs (:data:`GAME_CATALOGS`, read by :func:`catalog_documents`)."""
    return catalog_documents(root, lang, GAME_CATALOGS)


def stories_documents(root: Path, lang: str) -> list[frozen.Document]:
    """Release 4's dialogue and story catalogs (:data:`STORY_CATALOGS`, read by :func:`catalog_documents`)."""
    return catalog_documents(root, lang, STORY_CATALOGS)


def extract_extra(lang: str, cache: Path = CACHE) -> list[frozen.Document]:
    """Release 2's added documents (:data:`EXTRA_PACKAGES`), downloaded into ``cache`` when missing."""
    root = fetch([p for pkgs in EXTRA_PACKAGES.values() for p in pkgs], cache)
    return (gnome_help_documents(root, lang) + debian_reference_documents(root, lang) + freeciv_documents(root, lang)
            + widelands_documents(root, lang))


def extract(lang: str, cache: Path = CACHE) -> list[frozen.Document]:
    """Every aligned paragraph pair of ``lang`` from the packages (downloaded into ``cache`` when missing)."""
    root = fetch([p for src, pkgs in PACKAGES.items() if src not in ("debian-handbook", "ding") for p in pkgs], cache)
    if not Path("/usr/share/doc/debian-handbook/html/en-US").is_dir():
        root = fetch(PACKAGES["debian-handbook"], cache)
    return (libreoffice_documents(root, lang) + wesnoth_documents(root, lang) + handbook_documents(root, lang)
            + tuxpaint_documents(root, lang) + ding_documents(lang))


def extract_games(lang: str, cache: Path = CACHE) -> list[frozen.Document]:
    """Release 3's added documents (:data:`GAME_PACKAGES`), downloaded into ``cache`` when missing."""
    return games_documents(fetch([p for pkgs in GAME_PACKAGES.values() for p in pkgs], cache), lang)


def extract_stories(lang: str, cache: Path = CACHE) -> list[frozen.Document]:
    """Release 4's added documents (:data:`STORY_PACKAGES`), downloaded into ``cache`` when missing."""
    return stories_documents(fetch([p for pkgs in STORY_PACKAGES.values() for p in pkgs], cache), lang)


# each frozen part: (its packages, its sources, its extractor, the rebuild command's flag)
PARTS = {"parallel": (PACKAGES, SOURCES, extract, ""),
         "parallel-extra": (EXTRA_PACKAGES, EXTRA_SOURCES, extract_extra, " --extra"),
         "parallel-games": (GAME_PACKAGES, GAME_SOURCES, extract_games, " --games"),
         "parallel-stories": (STORY_PACKAGES, STORY_SOURCES, extract_stories, " --stories")}


def rebuild(lang: str, write: bool = False, cache: Path = CACHE, root: Path = frozen.ROOT,
            part: str = "parallel") -> dict:
    """Extract one frozen part again and compare with its frozen copy; ``write`` replaces it. ``part``: one of
    :data:`PARTS` (``parallel`` = release 1's sources, ``parallel-extra`` = release 2's added ones,
    ``parallel-games`` = release 3's, ``parallel-stories`` = release 4's)."""
    packages, sources, extractor, flag = PARTS[part]
    new = extractor(lang, cache)
    name = f"{part}-{lang}"
    try:
        old = frozen.read(name, root)
    except frozen.FrozenCorpusError:
        old = []
    report = {k: len(v) for k, v in frozen.diff(old, new).items()}
    report["documents"] = len(new)
    if write:
        versions = deb_versions(cache)
        frozen.write(name, new, sources=sources, root=root, rebuild=f"python -m core.data.parallel --lang {lang}{flag}",
                     packages={p: versions.get(p) or frozen.package_version(p) for v in packages.values() for p in v})
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


def _check(lang: str, release: int) -> None:
    if lang not in LANGS:
        raise ValueError(f"no parallel corpus for {lang!r}; choose one of {', '.join(LANGS)}")
    if release not in RELEASES:
        raise ValueError(f"no release {release!r} of the parallel corpus; choose one of {', '.join(map(str, RELEASES))}")


@lru_cache(maxsize=4)
def _pairs(lang: str, root: Path = frozen.ROOT, release: int = 1) -> tuple[dict, dict]:
    """(pairs per split as ``(en, tr, source)``, counts per source before / after each filter) of one release: the
    documents of every frozen corpus it reads, through the same filters, splits and duplicate removal."""
    _check(lang, release)
    docs = [d for name in RELEASES[release] for d in frozen.read(f"{name}-{lang}", root)]
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


def pairs(lang: str, split: str = "train", source: str | None = None, release: int = 1) -> list[tuple[str, str]]:
    """The filtered sentence pairs ``(english, translation)`` of one split (optionally of one source) of a release."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    return [(a, b) for a, b, s in _pairs(lang, release=release)[0][split] if source is None or s == source]


def filter_table(lang: str, release: int = 1) -> dict[str, dict[str, int]]:
    """Per source: paragraphs, sentence pairs, and pairs left after each filter in :data:`FILTERS` and after
    duplicates (``duplicates`` counts what survived it), for the model card."""
    return _pairs(lang, release=release)[1]


def describe(lang: str, release: int = 1) -> dict:
    """Sizes per split and source, the filter table (``filter_order``: its steps in the order they apply) and the
    package versions, for a model card (``corpora``: the frozen folders the release reads)."""
    split_pairs = _pairs(lang, release=release)[0]
    metas = [frozen.manifest(f"{name}-{lang}") for name in RELEASES[release]]
    return {"release": release, "corpora": [m["name"] for m in metas],
            "packages": {k: v for m in metas for k, v in m["packages"].items()},
            "sources": {k: v for m in metas for k, v in m["sources"].items()},
            "compressed_bytes": sum(m["data_bytes"] for m in metas),
            "filters": filter_table(lang, release), "filter_order": [name for name, _ in FILTERS] + ["duplicates"],
            "splits": {s: {"pairs": len(v), "en_words": sum(len(a.split()) for a, _, _ in v)}
                       for s, v in split_pairs.items()}}


def fingerprint(lang: str, release: int = 1) -> dict:
    """One digest per split of the filtered pairs (what a card was measured on)."""
    return {s: hashlib.sha256("\n".join(f"{a}\t{b}" for a, b, _ in v).encode()).hexdigest()[:16]
            for s, v in _pairs(lang, release=release)[0].items()}


class HumanTranslations:
    """The human translations of one language as a :class:`core.data.ParallelText`: what
    :func:`core.data.parallel_for` gives a broad translation task (``en-fr`` → ``HumanTranslations("fr")``)."""

    def __init__(self, lang: str, release: int = 1):
        """``lang``: one of :data:`LANGS`; ``release``: one of :data:`RELEASES` (ValueError otherwise)."""
        _check(lang, release)
        self.lang, self.release = lang, release

    def __repr__(self) -> str:
        return f"HumanTranslations({self.lang!r}" + (f", release={self.release})" if self.release != 1 else ")")

    def pairs(self, split: str = "train", source: str | None = None) -> list[tuple[str, str]]:
        """The filtered sentence pairs ``(english, translation)`` of one split (:func:`pairs`)."""
        return pairs(self.lang, split, source, self.release)

    def describe(self) -> dict:
        """Sizes, filter table and package versions for a model card (:func:`describe`)."""
        return describe(self.lang, self.release)

    def fingerprint(self) -> dict:
        """One digest per split of the filtered pairs (:func:`fingerprint`)."""
        return fingerprint(self.lang, self.release)


def main(argv: list[str] | None = None) -> int:
    """``python -m core.data.parallel --lang fr|de [--write]``: download, align, compare; the report as JSON."""
    import argparse
    import json
    ap = argparse.ArgumentParser(prog="python -m core.data.parallel", description=(
        "Download the packages, align and compare with the frozen parallel corpus (nothing written without --write)."))
    ap.add_argument("--lang", choices=LANGS, required=True)
    ap.add_argument("--write", action="store_true")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--extra", action="store_true", help="release 2's added sources (parallel-extra-<lang>)")
    which.add_argument("--games", action="store_true", help="release 3's added sources (parallel-games-<lang>)")
    which.add_argument("--stories", action="store_true", help="release 4's added sources (parallel-stories-<lang>)")
    args = ap.parse_args(argv)
    part = ("parallel-stories" if args.stories else "parallel-games" if args.games
            else "parallel-extra" if args.extra else "parallel")
    report = rebuild(args.lang, write=args.write, part=part)
    if args.write:
        report["describe"] = describe(args.lang, min(r for r, parts in RELEASES.items() if part in parts))
    print(json.dumps(report, indent=1, ensure_ascii=False, allow_nan=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
