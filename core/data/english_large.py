"""A larger corpus of real English prose (≈ 45 MB), for training a larger language model: ``english-large``.

The same machinery as :mod:`core.data.english` (its prose filter, its split by document, its deduplication, its
fingerprint and card check: :class:`core.data.english.ProseCorpus`), over more Debian packages, frozen in
``assets/corpora/english-large/``. The corpus ``english`` (what the shipped lm was trained and measured on) is a
part of it and is not changed by it: its pages keep their split here (the split is a hash of ``source/path``), so
the lm's valid and test pages are never training text of this corpus either.

Rebuild (nothing is installed: the packages are downloaded with ``apt-get download`` and unpacked with
``dpkg -x`` into ``DEBS/root``, their versions read from the ``.deb`` names)::

    python -m core.data.english_large --debs /tmp/debs [--write]
    python -m core.data.english_large --root / [--write]     # the packages installed on this machine

:data:`SOURCES` lists each source with its packages and licence. Every source is reduced to paragraphs of running
prose, one a line, in document order: ``<p>`` elements of HTML pages (``pre``/``table`` dropped), the prose of
reStructuredText (:func:`core.data.english.rst_paragraphs`), the text paragraphs of POD (verbatim blocks and
commands dropped), the translatable strings of Wesnoth's campaign files in file order (dialogue and story), and the
King James Bible's verses grouped into paragraphs (each ends at a sentence end past :data:`BIBLE_PARAGRAPH`
characters). Every paragraph then passes :func:`core.data.english.is_prose` (≥ 8 words, mostly letters, a
sentence) and is dropped when it is licence text (:data:`LICENCE_TEXT`; whole pages of licence terms:
:data:`LICENCE_DOCUMENT`). The Handbook is read from its
``<div class="para">`` elements (:func:`core.data.parallel.handbook_paragraphs`): its pages hold no ``<p>``, so the
corpus ``english`` has one Handbook paragraph only (left as it is: the lm was measured on it).

:data:`lines`, :data:`describe`, :data:`fingerprint`, :data:`card_mismatch` are those of :data:`CORPUS`.
"""
from __future__ import annotations

import html
import re
import subprocess
from pathlib import Path

from . import english, frozen, parallel

NAME = "english-large"
REBUILD = "python -m core.data.english_large --debs /tmp/debs"
SPLITS = english.SPLITS
BIBLE_PARAGRAPH = 600  # characters: consecutive verses of a chapter are joined until a sentence ends past this
WESNOTH_CAMPAIGNS = {
    "did": "Descent_Into_Darkness", "dm": "Delfadors_Memoirs", "dw": "Dead_Water", "ei": "Eastern_Invasion",
    "httt": "Heir_To_The_Throne", "l": "Liberty", "low": "Legend_of_Wesmere", "nr": "Northern_Rebirth",
    "sof": "Sceptre_of_Fire", "sota": "Secrets_of_the_Ancients", "sotbe": "Son_Of_The_Black_Eye",
    "thot": "The_Hammer_of_Thursagan", "trow": "The_Rise_Of_Wesnoth", "tsg": "The_South_Guard",
    "ttb": "Two_Brothers", "utbs": "Under_the_Burning_Suns",
}

# source -> what it is, its licence (from the package's /usr/share/doc/<package>/copyright), the packages it reads,
# and where: (folder under the root, file pattern, reader). The order is the order of the frozen documents.
SOURCES: dict[str, dict] = {
    "python-docs": {"description": "The Python 3.11 documentation (reStructuredText sources)",
                    "licence": "PSF-2.0 (PSF License Agreement)", "packages": ["python3.11-doc"]},
    "debian-handbook": {"description": "The Debian Administrator's Handbook, English", "licence":
                        "GPL-2.0+ or CC-BY-SA-3.0", "packages": ["debian-handbook"]},
    "linux-doc": {"description": "The Linux 6.1 kernel documentation (reStructuredText sources, translations "
                                 "left out)", "licence": "GPL-2.0", "packages": ["linux-doc-6.1"]},
    "postgresql-doc": {"description": "The PostgreSQL 15 manual", "licence": "PostgreSQL",
                       "packages": ["postgresql-doc-15"]},
    "perl-doc": {"description": "Perl 5.36's manual pages (perl*.pod)", "licence": "GPL-1.0+ or Artistic-1.0",
                 "packages": ["perl-doc"]},
    "bible-kjv": {"description": "The King James Bible (1611), verses grouped into paragraphs; read with the "
                                 "package's own `bible` program", "licence": "public domain (text); the reader "
                  "program GPL-2.0+", "packages": ["bible-kjv-text", "bible-kjv"]},
    "libreoffice-help": {"description": "LibreOffice 7.4 help, English", "licence": "MPL-2.0",
                         "packages": ["libreoffice-help-en-us"]},
    "django-doc": {"description": "The Django 3.2 documentation", "licence": "BSD-3-Clause",
                   "packages": ["python-django-doc"]},
    "git-doc": {"description": "Git 2.39's manual pages and guides (HTML)", "licence": "GPL-2.0",
                "packages": ["git-doc"]},
    "sqlite-doc": {"description": "The SQLite 3.40 documentation", "licence": "public domain",
                   "packages": ["sqlite3-doc"]},
    "cmake-doc": {"description": "The CMake 3.25 documentation", "licence": "BSD-3-Clause (copyright file of "
                  "cmake-data, which cmake-doc's doc folder links to)", "packages": ["cmake-doc"]},
    "apache-doc": {"description": "The Apache HTTP Server 2.4 manual, English", "licence": "Apache-2.0",
                   "packages": ["apache2-doc"]},
    "gimp-help": {"description": "The GIMP 2.10 user manual, English", "licence": "GFDL-1.2+, no invariant "
                  "sections (copyright file of gimp-help-common)", "packages": ["gimp-help-en"]},
    "wesnoth": {"description": "The Battle for Wesnoth 1.16's mainline campaigns: story and dialogue (the "
                               "translatable strings of the campaign files, in file order)",
                "licence": "GPL-2.0+", "packages": [f"wesnoth-1.16-{c}" for c in WESNOTH_CAMPAIGNS]},
    "r-doc": {"description": "The R 4.2 manuals (HTML)", "licence": "GPL-2.0", "packages": ["r-doc-html"]},
    "debian-policy": {"description": "The Debian Policy Manual and its sub-policies", "licence": "GPL-2.0+",
                      "packages": ["debian-policy"]},
    "bash-doc": {"description": "The Bash 5.2 reference manual", "licence": "GFDL-1.3+, no invariant sections",
                 "packages": ["bash-doc"]},
    "gnome-help": {"description": "The GNOME 43 desktop help (Mallard pages, C locale)", "licence": "CC-BY-SA-3.0",
                   "packages": ["gnome-user-docs"]},
    "debian-reference": {"description": "Debian Reference, English", "licence": "GPL-2.0+",
                         "packages": ["debian-reference-en"]},
    "developers-reference": {"description": "Debian Developer's Reference", "licence": "GPL-2.0",
                             "packages": ["developers-reference"]},
    "maint-guide": {"description": "Debian New Maintainers' Guide, English", "licence": "GPL-2.0+ or MIT",
                    "packages": ["maint-guide"]},
}
PACKAGES = [p for s in SOURCES.values() for p in s["packages"]]

# licence text: a paragraph speaking of "this License" / "the Licensee" / warranties is a licence, not the manual
LICENCE_TEXT = re.compile(r"\b(this|the) License\b|\bLicens(or|ee)\b|WITHOUT ANY WARRANTY|"
                          r"Permission is (hereby )?granted|GNU (Free Documentation|General Public) License|"
                          r"Invariant Sections|Cover Texts")
# a whole page of licence terms (python's license.rst, the kernel's fdl-appendix, perlgpl.pod, apache's license.html)
LICENCE_DOCUMENT = re.compile(r"(^|/)(copyright|licen[cs]e|legalnotice|fdl-appendix|gfdl[^/]*|perlgpl|perlartistic)"
                              r"\.", re.I)


def clean(paragraphs) -> list[str]:
    """The paragraphs that are running prose (:func:`core.data.english.is_prose`) and not licence text."""
    return [p for p in paragraphs if english.is_prose(p) and not LICENCE_TEXT.search(p)]


_POD_CODES = (
    (re.compile(r"[XZ]<[^<>]*>"), lambda m: ""),                                 # index entries, zero-width
    (re.compile(r"E<(\w+)>"), lambda m: {"lt": "<", "gt": ">", "verbar": "|", "sol": "/"}.get(
        m.group(1), html.unescape(f"&{m.group(1)};") if not m.group(1).isdigit() else chr(int(m.group(1))))),
    (re.compile(r"L<([^<>|]*)\|[^<>]*>"), lambda m: m.group(1)),                 # L<text|target>
    (re.compile(r"L<\"?([^<>\"]*)\"?>"), lambda m: m.group(1).split("/")[-1].strip('"')),
    (re.compile(r"[BCIFS]<([^<>]*)>"), lambda m: m.group(1)),
    (re.compile(r"[BCIFSL]<<+\s(.*?)\s>>+", re.S), lambda m: m.group(1)),      # C<< $a <=> $b >>
)


def inline_pod(text: str) -> str:
    """POD formatting codes (``C<len>``, ``L<perlfunc/open>``, ``E<gt>`` …) replaced by the text a reader sees."""
    for _ in range(6):  # nested codes: innermost first
        before = text
        for pattern, repl in _POD_CODES:
            text = pattern.sub(repl, text)
        if text == before:
            break
    return " ".join(text.split())


def pod_paragraphs(text: str) -> list[str]:
    """The text paragraphs of a POD file: commands (``=head1``, ``=item`` …), verbatim (indented, code) blocks and
    ``=begin``…``=end`` / ``=for`` blocks dropped."""
    out, skip = [], False
    for block in re.split(r"\n[ \t]*\n", text.expandtabs()):
        if not block.strip():
            continue
        if block.startswith("="):
            cmd = block.split()[0]
            skip = cmd == "=begin" or (skip and cmd != "=end")
            continue
        if not skip and block[0] not in " \t":
            out.append(inline_pod(block))
    return clean(out)


_WML_STRING = re.compile(r'(?<![\w"])_\s*"((?:[^"]|"")*)"')


def wml_paragraphs(text: str) -> list[str]:
    """The translatable strings (``_ "…"``) of a Wesnoth WML file in file order, split at blank lines, with Pango
    markup removed; a string holding a variable (``$x``) or a macro (``{X}``) is dropped."""
    out = []
    for m in _WML_STRING.finditer(text):
        s = re.sub(r"<[^<>]*>", "", m.group(1).replace('""', '"'))
        if "$" in s or "{" in s:
            continue
        out += [" ".join(p.split()) for p in re.split(r"\n\s*\n", s)]
    return clean(out)


def html_pages(text: str) -> list[str]:
    """The prose of an HTML (or Mallard XML) page's ``<p>`` elements (:func:`core.data.english.html_paragraphs`)."""
    return clean(english.html_paragraphs(text))


def rst_pages(text: str) -> list[str]:
    """The prose of a reStructuredText file (:func:`core.data.english.rst_paragraphs`), licence text dropped."""
    return clean(english.rst_paragraphs(text))


# source -> (folder under the root, glob, paths left out (regex on the relative path), reader of one file's text)
READERS = {
    "python-docs": ("usr/share/doc/python3.11/html/_sources", "**/*.rst.txt", None, rst_pages),
    "debian-handbook": ("usr/share/doc/debian-handbook/html/en-US", "*.html", None,
                        lambda t: clean(parallel.handbook_paragraphs(t))),  # <div class="para">, not <p>
    "linux-doc": ("usr/share/doc/linux-doc-6.1/html/_sources", "**/*.rst.txt", r"^translations/", rst_pages),
    "postgresql-doc": ("usr/share/doc/postgresql-doc-15/html", "*.html", None, html_pages),
    "perl-doc": ("usr/share/perl", "*/pod/*.pod", None, pod_paragraphs),
    "libreoffice-help": ("usr/share/libreoffice/help/en-US", "**/*.html", None, html_pages),
    "django-doc": ("usr/share/doc/python-django-doc/html", "**/*.html", r"^(_modules|genindex|search|py-modindex)",
                   html_pages),
    "git-doc": ("usr/share/doc/git-doc", "**/*.html", None, html_pages),
    "sqlite-doc": ("usr/share/doc/sqlite3", "**/*.html", None, html_pages),
    "cmake-doc": ("usr/share/doc/cmake-data/html", "**/*.html", r"^(_sources|genindex|search)", html_pages),
    "apache-doc": ("usr/share/doc/apache2-doc/manual/en", "**/*.html", None, html_pages),
    "gimp-help": ("usr/share/gimp/2.0/help/en", "**/*.html", None, html_pages),
    "wesnoth": ("usr/share/games/wesnoth/1.16/data/campaigns", "**/*.cfg",
                r"^(?!(" + "|".join(WESNOTH_CAMPAIGNS.values()) + ")/)", wml_paragraphs),
    "r-doc": ("usr/share/R/doc/manual", "*.html", None, html_pages),
    "debian-policy": ("usr/share/doc/debian-policy", "**/*.html", None, html_pages),
    "bash-doc": ("usr/share/doc/bash", "bashref.html", None, html_pages),
    "gnome-help": ("usr/share/help/C", "**/*.page", None, html_pages),
    "debian-reference": ("usr/share/debian-reference", "*.en.html", None, html_pages),
    "developers-reference": ("usr/share/developers-reference", "*.html", None, html_pages),
    "maint-guide": ("usr/share/doc/maint-guide/html", "*.en.html", None, html_pages),
}


def bible_documents(tree: Path = Path("/")) -> list[frozen.Document]:
    """The King James Bible, one document per chapter (``Ge 1`` …), its verses in order and joined into paragraphs
    (each ends at the first sentence end past :data:`BIBLE_PARAGRAPH` characters); read with the ``bible`` program
    of package bible-kjv from the compressed text of bible-kjv-text (both under ``tree``)."""
    program, data = tree / "usr/bin/bible", tree / "usr/lib"
    if not program.exists() or not (data / "bible.data").exists():
        raise FileNotFoundError(f"the King James Bible needs the packages bible-kjv and bible-kjv-text under {tree}")
    out = subprocess.run([str(program), "-f", "-p", str(data), "gen1:1-rev22:21"], check=True, capture_output=True,
                         text=True).stdout
    chapters: dict[str, list[str]] = {}
    for line in out.splitlines():
        m = re.match(r"(\d?[A-Za-z]+)(\d+):\d+ (.*)", line)
        if m:
            chapters.setdefault(f"{m.group(1)} {m.group(2)}", []).append(m.group(3).strip())
    docs = []
    for chapter, verses in chapters.items():
        pars, cur = [], ""
        for v in verses:  # a paragraph ends after a verse that ends a sentence, once it is long enough
            cur = f"{cur} {v}".strip()
            if len(cur) >= BIBLE_PARAGRAPH and cur[-1] in ".?!":
                pars.append(cur)
                cur = ""
        if cur:
            pars.append(cur)
        docs.append(frozen.Document("bible-kjv", chapter, tuple(clean(pars))))
    return docs


def source_documents(source: str, tree: Path = Path("/")) -> list[frozen.Document]:
    """Every document of one source read under ``tree`` (``/`` for the installed packages, or an unpacked tree),
    in path order; :class:`FileNotFoundError` naming the packages when its folder is missing."""
    if source == "bible-kjv":
        return bible_documents(tree)
    folder, pattern, leave_out, reader = READERS[source]
    base = tree / folder
    if not base.is_dir():
        raise FileNotFoundError(f"{source} reads {base}: apt-get download {' '.join(SOURCES[source]['packages'])} "
                                "(or rebuild with --debs DIR, which downloads every package)")
    docs = []
    for path in sorted(base.glob(pattern)):
        rel = str(path.relative_to(base))
        if not path.is_file() or (leave_out and re.search(leave_out, rel)) or LICENCE_DOCUMENT.search(rel):
            continue
        pars = reader(path.read_text(encoding="utf-8", errors="replace"))
        docs.append(frozen.Document(source, rel, tuple(pars)))
    return docs


def extract(tree: Path = Path("/"), debs: Path | None = None) -> list[frozen.Document]:
    """Every document of every source, in the order of :data:`SOURCES` (what :func:`rebuild` freezes): read under
    ``tree`` (the root folder: ``/`` for the installed packages), or with ``debs`` under ``debs/root`` after
    downloading the missing packages there."""
    if debs is not None:
        tree = parallel.fetch(PACKAGES, Path(debs))
    return [d for source in SOURCES for d in source_documents(source, Path(tree))]


def package_versions(packages: list[str], tree: Path = Path("/"), debs: Path | None = None) -> dict[str, str | None]:
    """The version of each of ``packages``: from the ``.deb`` file names in ``debs``, else as installed (dpkg's
    status) when ``tree`` is ``/`` (None for an unpacked tree without its ``.deb`` files)."""
    found = parallel.deb_versions(Path(debs)) if debs is not None else {}
    if debs is None and Path(tree) == Path("/"):
        found = {p: frozen.package_version(p) for p in packages}
    return {p: found.get(p) for p in packages}


def versions(tree: Path = Path("/"), debs: Path | None = None) -> dict[str, str | None]:
    """The version of every package this corpus reads (:func:`package_versions`)."""
    return package_versions(PACKAGES, tree, debs)


CORPUS = english.ProseCorpus(NAME, SOURCES, REBUILD, extract, versions)
lines = CORPUS.lines
describe = CORPUS.describe
fingerprint = CORPUS.fingerprint
card_mismatch = CORPUS.card_mismatch


def rebuild(write: bool = False, root: Path = frozen.ROOT, **paths) -> dict:
    """Extract the corpus again (``paths``: ``tree`` or ``debs`` for :func:`extract`) and compare it with the frozen
    copy in ``root``/english-large, per split; ``write`` replaces the frozen copy."""
    return CORPUS.rebuild(write, root, **paths)


def run_debs_rebuild(prog: str, description: str, rebuild_fn, argv: list[str] | None = None) -> int:
    """The rebuild command line of a corpus read from downloaded or installed packages: ``--debs DIR`` (download
    into DIR and read ``DIR/root``) or ``--root DIR``, and ``--write`` (:func:`core.data.english.run_rebuild`)."""
    def run(write: bool, debs: str | None, root: str) -> dict:
        return rebuild_fn(write=write, **({"debs": Path(debs)} if debs else {"tree": Path(root)}))
    return english.run_rebuild(prog, description, run, argv, extra_args=(
        ("--debs", {"help": "download the packages into DIR (apt-get download) and read DIR/root"}),
        ("--root", {"default": "/", "help": "read the packages unpacked or installed under this folder"})))


def main(argv: list[str] | None = None) -> int:
    """``python -m core.data.english_large [--debs DIR | --root DIR] [--write]``: the rebuild report as JSON."""
    return run_debs_rebuild("python -m core.data.english_large", (
        "Re-extract the large English corpus from Debian packages and report what changed against the frozen copy "
        "in assets/corpora/english-large (nothing is written without --write)."), rebuild, argv)


if __name__ == "__main__":
    raise SystemExit(main())
