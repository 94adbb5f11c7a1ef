"""English prose release 2 (``english-xl``): the large corpus (:mod:`core.data.english_large`, unchanged) and the
documents of 19 more Debian packages, frozen apart in ``assets/corpora/english-more/``.

Why (issue 32, stop 49's finding): the shipped lm read its 9.95 M training tokens 19.6 times on a GPU, and the
≥ 500 M tokens the issue asks would be 50 passes: the lm's corpus is the limit, not the steps. Debian 12 main holds
about as much English prose again that the large corpus does not read; this release adds what a survey of it found
(narrative and tutorial prose first, then the largest manuals), measured before it was added (stop 52, English words
of running prose not already in english-large; the part's manifest says what was frozen):

* stories: four games' dialogue and story (Endless Sky's conversations and descriptions, the English messages of
  the Cataclysm: DDA, Naev and FreedroidRPG catalogs) and *Copyright Does Not Exist* (a history of hackers);
* tutorials and manuals: scikit-learn, SQLAlchemy, pandas, SciPy, SymPy, GHC, GnuCash, LilyPond, PNG, GAP, GCL,
  Erlang, Racket, and the Rust books.

Every document goes through the same reader and filter as the large corpus (``<p>`` elements,
:func:`core.data.english_large.clean`: running prose, no licence text; a game's string is judged past an opening
quote, :func:`is_prose`); a paragraph already in english-large (any
split) is dropped, so the first part's splits stay what the shipped lm was measured on and no paragraph of its valid
or test split becomes training text here. A game catalog (``.mo``) keeps no file names: its messages, sorted, go in
documents of :data:`CATALOG_DOCUMENT` consecutive messages (near-identical messages share a beginning, so they stay on
one side of the split).

Rebuild (downloads the packages with ``apt-get download`` into ``DIR`` and unpacks them into ``DIR/root``)::

    python -m core.data.english_xl --debs /tmp/debs [--write]

:data:`lines`, :data:`describe`, :data:`fingerprint`, :data:`card_mismatch` are those of :data:`CORPUS` (both parts);
:data:`PART` is the added part alone (what ``--write`` freezes).
"""
from __future__ import annotations

import re
from pathlib import Path

from . import english, english_large, frozen, parallel

NAME = "english-xl"
PART_NAME = "english-more"
REBUILD = "python -m core.data.english_xl --debs /tmp/debs"
SPLITS = english.SPLITS
CATALOG_DOCUMENT = 50  # messages of a .mo catalog per document, in msgid order

ADDED: dict[str, dict] = {
    "endless-sky": {"description": "Endless Sky 0.9.8: mission conversations and descriptions (the backquoted "
                                   "and `description` strings of its data files)",
                    "licence": "GPL-3.0-or-later", "packages": ["endless-sky-data"]},
    "cataclysm-dda": {"description": "Cataclysm: Dark Days Ahead 0.F: the English messages of its French and German "
                                     "catalogs (item descriptions, dialogue, messages)",
                      "licence": "CC-BY-SA-3.0", "packages": ["cataclysm-dda-data"]},
    "naev": {"description": "Naev 0.8: the English messages of its German catalog (missions, news, dialogue)",
             "licence": "GPL-3.0-or-later", "packages": ["naev-data"]},
    "freedroidrpg": {"description": "FreedroidRPG 1.0: the English messages of its French and German catalogs "
                                    "(dialogue, items, messages)",
                     "licence": "GPL-2.0-or-later", "packages": ["freedroidrpg-data"]},
    "cfi": {"description": "Copyright Does Not Exist (Linus Walleij), a history of hackers, English",
            "licence": "public domain", "packages": ["cfi-en"]},
    "sklearn-doc": {"description": "The scikit-learn 1.2 documentation", "licence": "BSD-3-Clause",
                    "packages": ["python-sklearn-doc"]},
    "sqlalchemy-doc": {"description": "The SQLAlchemy 1.4 documentation", "licence": "MIT (Expat)",
                       "packages": ["python-sqlalchemy-doc"]},
    "pandas-doc": {"description": "The pandas 1.5 documentation", "licence": "BSD-3-Clause",
                   "packages": ["python-pandas-doc"]},
    "scipy-doc": {"description": "The SciPy 1.10 documentation", "licence": "BSD-3-Clause",
                  "packages": ["python-scipy-doc"]},
    "sympy-doc": {"description": "The SymPy 1.11 documentation", "licence": "BSD-3-Clause",
                  "packages": ["python-sympy-doc"]},
    "ghc-doc": {"description": "The GHC 9.0 user's guide and library documentation", "licence": "BSD-3-Clause",
                "packages": ["ghc-doc"]},
    "gnucash-docs": {"description": "The GnuCash 4.13 tutorial guide and help manual, English",
                     "licence": "GFDL-1.1-or-later, no invariant sections", "packages": ["gnucash-docs"]},
    "lilypond-doc": {"description": "The LilyPond 2.24 manuals (HTML, split pages)", "licence": "GFDL-1.3-or-later",
                     "packages": ["lilypond-doc-html"]},
    "png-guide": {"description": "PNG: The Definitive Guide (Greg Roelofs)", "licence": "GFDL-1.1-or-later",
                  "packages": ["png-definitive-guide"]},
    "gap-doc": {"description": "The GAP 4.12 tutorial and reference manual", "licence": "GPL-2.0-or-later",
                "packages": ["gap-doc"]},
    "gcl-doc": {"description": "The GNU Common Lisp 2.6 manuals", "licence": "LGPL-2.0-or-later",
                "packages": ["gcl-doc"]},
    "erlang-doc": {"description": "The Erlang/OTP 25 documentation", "licence": "Apache-2.0",
                   "packages": ["erlang-doc"]},
    "racket-doc": {"description": "The Racket 8.7 guides and reference", "licence": "MIT or Apache-2.0 (Debian: also "
                                                                                    "LGPL-2.1-or-later)",
                   "packages": ["racket-doc"]},
    "rust-doc": {"description": "The Rust 1.63 books (the Book, the Reference, Rust by Example, the Rustonomicon, "
                                "the edition guide, the rustc book…; the API pages left out)",
                 "licence": "MIT or Apache-2.0", "packages": ["rust-doc"]},
}
PACKAGES = [p for s in ADDED.values() for p in s["packages"]]
SOURCES = {**english_large.SOURCES, **ADDED}  # both parts, for a card

_SPHINX_SKIP = r"^(_modules|_sources|_downloads|_images|_static|genindex|search|py-modindex)"
# source -> (folder under the root, glob, paths left out (regex on the relative path)); each file read by
# :func:`core.data.english_large.html_pages`
HTML = {
    "cfi": ("usr/share/doc/cfi-en/html", "*.htm*", None),
    "sklearn-doc": ("usr/share/doc/python-sklearn-doc/html", "**/*.html", _SPHINX_SKIP),
    "sqlalchemy-doc": ("usr/share/doc/python-sqlalchemy-doc/html", "**/*.html", _SPHINX_SKIP),
    "pandas-doc": ("usr/share/doc/python-pandas-doc/html", "**/*.html", _SPHINX_SKIP),
    "scipy-doc": ("usr/share/doc/python-scipy-doc/html", "**/*.html", _SPHINX_SKIP),
    "sympy-doc": ("usr/share/doc/python-sympy-doc/html", "**/*.html", _SPHINX_SKIP),
    "ghc-doc": ("usr/share/doc/ghc-doc/html", "**/*.html", r"(^|/)(src|doc-index[^/]*|index-\w+)(/|\.html$)"),
    "gnucash-docs": ("usr/share/doc/gnucash-docs", "gnucash-*-en/**/*.html", None),
    "lilypond-doc": ("usr/share/doc/lilypond/html", "**/*.html", r"-big-page\.html$"),
    "png-guide": ("usr/share/doc/png-definitive-guide/html", "*.html", None),
    "gap-doc": ("usr/share/gap/doc", "**/*.html", None),
    "gcl-doc": ("usr/share/doc/gcl-doc", "**/*.html", None),
    "erlang-doc": ("usr/share/doc/erlang-doc", "**/*.html", None),
    "racket-doc": ("usr/share/doc/racket", "**/*.html", None),
    "rust-doc": ("usr/share/doc/rust-doc/html", "**/*.html", r"^(std|core|alloc|proc_macro|test)/"),
}
# source -> the catalogs whose English messages it reads (patterns under the root; every language given)
CATALOGS = {
    "cataclysm-dda": ("usr/share/locale/{lang}/LC_MESSAGES/cataclysm-dda.mo", ("fr", "de")),
    "naev": ("usr/share/naev/dat/gettext/{lang}/LC_MESSAGES/naev.mo", ("de",)),
    "freedroidrpg": ("usr/share/locale/{lang}/LC_MESSAGES/freedroidrpg*.mo", ("fr", "de")),
}
ENDLESS_SKY = "usr/share/games/endless-sky/data"
_BACKQUOTED = re.compile(r"`([^`]*)`")
_DESCRIPTION = re.compile(r'^\s*description\s+"([^"]*)"', re.M)


_OPENING = "\"“‘'(*"  # what a line of dialogue or a stage direction may open with, before its first capital


def is_prose(par: str) -> bool:
    """:func:`core.data.english.is_prose` and no licence text, judged past an opening quote or parenthesis (that
    filter wants a capital first, which would drop every line of dialogue: ``"You took your time," he says.``)."""
    return bool(par.lstrip(_OPENING)) and bool(english_large.clean([par.lstrip(_OPENING)]))


def message_paragraphs(messages) -> list[str]:
    """Game strings as paragraphs: each split at blank lines, its whitespace collapsed, then :func:`is_prose`."""
    pars = [" ".join(x.split()) for m in messages for x in re.split(r"\n\s*\n", m)]
    return [p for p in pars if is_prose(p)]


def endless_sky_paragraphs(text: str) -> list[str]:
    """The prose of one Endless Sky data file: its backquoted strings (conversation lines, choices, mission
    text) and its quoted ``description`` lines, in file order."""
    found = sorted([(m.start(), m.group(1)) for m in _BACKQUOTED.finditer(text)]
                   + [(m.start(), m.group(1)) for m in _DESCRIPTION.finditer(text)])
    return message_paragraphs(s for _, s in found)


def catalog_messages(tree: Path, pattern: str, langs) -> list[str]:
    """The English messages (msgids) of the catalogs matching ``pattern`` in each of ``langs``, once each, sorted."""
    found: set[str] = set()
    for lang in langs:
        for path in sorted(tree.glob(pattern.format(lang=lang))):
            found.update(parallel.catalog_messages(path))
    return sorted(found)


def source_documents(source: str, tree: Path) -> list[frozen.Document]:
    """Every document of one added source read under ``tree``, in path order (documents with no prose left out);
    :class:`FileNotFoundError` naming the packages when its files are missing."""
    missing = FileNotFoundError(f"{source} is not under {tree}: apt-get download "
                                f"{' '.join(ADDED[source]['packages'])} (or rebuild with --debs DIR)")
    if source in CATALOGS:
        messages = catalog_messages(tree, *CATALOGS[source])
        if not messages:
            raise missing
        chunks = [messages[i:i + CATALOG_DOCUMENT] for i in range(0, len(messages), CATALOG_DOCUMENT)]
        docs = [frozen.Document(source, f"messages-{i:05d}", tuple(message_paragraphs(c)))
                for i, c in enumerate(chunks)]
    else:
        folder, pattern, leave_out, reader = ((ENDLESS_SKY, "**/*.txt", None, endless_sky_paragraphs)
                                              if source == "endless-sky" else (*HTML[source], english_large.html_pages))
        base = tree / folder
        if not base.is_dir():
            raise missing
        docs = []
        for path in sorted(base.glob(pattern)):
            rel = str(path.relative_to(base))
            if not path.is_file() or (leave_out and re.search(leave_out, rel)) or \
                    english_large.LICENCE_DOCUMENT.search(rel):
                continue
            docs.append(frozen.Document(source, rel, tuple(reader(path.read_text(encoding="utf-8", errors="replace")))))
    return [d for d in docs if d.paragraphs]


def extract(tree: Path = Path("/"), debs: Path | None = None) -> list[frozen.Document]:
    """The added part: every document of every added source (order of :data:`ADDED`), each paragraph already in
    english-large (any split) or in an earlier document of this part dropped; read under ``tree`` or, with ``debs``,
    under ``debs/root`` after downloading the missing packages there."""
    if debs is not None:
        tree = parallel.fetch(PACKAGES, Path(debs))
    seen = {p for s in SPLITS for p in english_large.lines(s)}
    out = []
    for source in ADDED:
        for doc in source_documents(source, Path(tree)):
            kept = []
            for p in doc.paragraphs:
                if p not in seen:
                    seen.add(p)
                    kept.append(p)
            if kept:
                out.append(frozen.Document(doc.source, doc.path, tuple(kept)))
    return out


def versions(tree: Path = Path("/"), debs: Path | None = None) -> dict[str, str | None]:
    """The version of every package the added part reads (:func:`core.data.english_large.package_versions`)."""
    return english_large.package_versions(PACKAGES, tree, debs)


PART = english.ProseCorpus(PART_NAME, ADDED, REBUILD, extract, versions)
CORPUS = english.ProseUnion(NAME, (english_large.CORPUS, PART))
lines = CORPUS.lines
describe = CORPUS.describe
fingerprint = CORPUS.fingerprint
card_mismatch = CORPUS.card_mismatch


def rebuild(write: bool = False, root: Path = frozen.ROOT, **paths) -> dict:
    """Extract the added part again (``paths``: ``tree`` or ``debs`` for :func:`extract`) and compare it with its
    frozen copy in ``root``/english-more, per split; ``write`` replaces the frozen copy."""
    return PART.rebuild(write, root, **paths)


def main(argv: list[str] | None = None) -> int:
    """``python -m core.data.english_xl [--debs DIR | --root DIR] [--write]``: the rebuild report as JSON."""
    return english_large.run_debs_rebuild("python -m core.data.english_xl", (
        "Re-extract the part of English prose release 2 that english-large does not hold and report what changed "
        "against the frozen copy in assets/corpora/english-more (nothing is written without --write)."), rebuild, argv)


if __name__ == "__main__":
    raise SystemExit(main())
