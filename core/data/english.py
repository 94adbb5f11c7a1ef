"""Real English prose for the bundled language model, extracted from two Debian documentation packages and frozen.

Everything reads the frozen extraction in ``assets/corpora/english/`` (:mod:`core.data.frozen`): a Debian point
release of a package cannot change what the shipped lm was trained and measured on. ``python -m core.data.english``
re-extracts from the installed packages and reports, per split, which documents a newer release changed; ``--write``
replaces the frozen copy (then re-measure the lm card: ``python scripts/bundle.py assets/models/lm``).

Sources (``apt-get install python3.11-doc debian-handbook``, needed only to rebuild; nothing is downloaded):

* **The Python 3.11 documentation** (package ``python3.11-doc``): the reStructuredText sources of the
  tutorial, library and language reference, HOWTOs and "What's New" under
  ``/usr/share/doc/python3.11/html/_sources``. Licence: the PSF License Agreement (Python 3.11
  documentation, © Python Software Foundation), which permits use, modification and redistribution of
  derived works.
* **The Debian Administrator's Handbook** (package ``debian-handbook``, English edition): the HTML
  chapters under ``/usr/share/doc/debian-handbook/html/en-US``. Licence: GPL-2.0+ or CC-BY-SA-3.0
  (Raphaël Hertzog and Roland Mas).

Only prose is kept: paragraphs of running text. Code blocks, interactive sessions, tables, directives,
headings, indexes and link targets are dropped; inline markup (``:func:`len```, ````x````, ``<code>``)
is replaced by its text. A paragraph becomes one line. The split is **by document**, so no page of the
validation or test split shares a paragraph with training: each source file goes to ``train`` / ``valid``
/ ``test`` by a stable hash of its path (90 / 5 / 5 %).

:func:`lines` returns a split's paragraphs; :func:`describe` the corpus's size, :func:`fingerprint` one digest per
split for a model card, and :func:`card_mismatch` says when a card no longer describes the frozen text.
"""

from __future__ import annotations

import hashlib
import html
import re
from functools import lru_cache
from html.parser import HTMLParser
from pathlib import Path

from . import frozen

PYTHON_DOCS = Path("/usr/share/doc/python3.11/html/_sources")
HANDBOOK = Path("/usr/share/doc/debian-handbook/html/en-US")
PACKAGES = "python3.11-doc debian-handbook"
NAME = "english"  # assets/corpora/english: the frozen extraction everything reads
REBUILD = "python -m core.data.english"
SOURCES = {
    "python-docs": "The Python 3.11 documentation (Debian package python3.11-doc), PSF License Agreement",
    "debian-handbook": "The Debian Administrator's Handbook, English (Debian package debian-handbook), "
                       "GPL-2.0+ or CC-BY-SA-3.0",
}
SPLITS = ("train", "valid", "test")
MIN_WORDS = 8
MAX_CHARS = 2000

_ROLE = re.compile(r":[\w:+.-]+:`([^`]*)`")          # :func:`~os.path.join` / :ref:`text <target>`
_LINK = re.compile(r"`([^`<]*?)\s*<[^>]*>`_{1,2}")  # `text <https://…>`_
_REF = re.compile(r"`([^`]+)`_{1,2}")               # `Name`_
_LITERAL = re.compile(r"``([^`]*)``")
_EMPH = re.compile(r"\*{1,2}([^*]+)\*{1,2}")
_FOOTNOTE = re.compile(r"\s*\[(#\w*|\d+|\*)\]_")
_SUBST = re.compile(r"\|(\w[\w -]*)\|")


def _role_text(m: re.Match) -> str:
    body = m.group(1)
    if "<" in body and body.endswith(">"):  # explicit title: :ref:`the tutorial <tut-intro>`
        body = body[:body.index("<")].strip()
    body = body.lstrip("~!")
    if "." in body and " " not in body:  # ~os.path.join → join (as Sphinx renders the ~ form)
        body = body.rsplit(".", 1)[-1] if m.group(0).find("~") >= 0 else body
    return body


def inline_rst(text: str) -> str:
    """Inline reStructuredText markup replaced by the text a reader sees."""
    text = _ROLE.sub(_role_text, text)
    text = _LINK.sub(r"\1", text)
    text = _REF.sub(r"\1", text)
    text = _LITERAL.sub(r"\1", text)
    text = _EMPH.sub(r"\1", text)
    text = _FOOTNOTE.sub("", text)
    text = _SUBST.sub(r"\1", text)
    return re.sub(r"\s+", " ", text.replace("\\ ", "")).strip()


def is_prose(par: str) -> bool:
    """Running English text, not a code line, table row or list of names."""
    words = par.split()
    if len(words) < MIN_WORDS or len(par) > MAX_CHARS:
        return False
    letters = sum(ch.isalpha() or ch.isspace() for ch in par)
    if letters / len(par) < 0.85:
        return False
    if not par[0].isupper() or par[-1] not in ".:!?)\"'":
        return False
    plain = sum(w.strip(".,;:()\"'").isalpha() for w in words)
    return plain / len(words) >= 0.8


CODE_DIRECTIVES = {"code-block", "code", "sourcecode", "doctest", "testcode", "testoutput", "testsetup",
                   "testcleanup", "productionlist", "literalinclude", "highlight", "index", "toctree", "table",
                   "csv-table", "list-table", "image", "figure", "raw", "only", "include", "grammar-snippet",
                   "audit-event-table", "c:macro", "c:var", "opcode", "cmdoption", "option", "envvar", "program",
                   "moduleauthor", "sectionauthor", "module", "currentmodule", "impl-detail", "availability"}


def rst_paragraphs(text: str) -> list[str]:
    """The prose paragraphs of one reStructuredText file, each joined into a line.

    Kept: running text at any depth, including the bodies of descriptive directives (``.. function::``,
    ``.. note::``, ``.. versionchanged::`` …), whose text is documentation prose. Dropped: literal blocks (the
    indented block after a paragraph ending in ``::``), code and table directives with their bodies, directive
    and option lines, headings (a line followed by an underline of ``=-~*^"#``), and list markers."""
    out, block = [], []

    def flush():
        if block:
            par = inline_rst(" ".join(block))
            if par.endswith("::"):  # "For example::" introduces a code block; the sentence ends with ":"
                par = par[:-1]
            if is_prose(par):
                out.append(par)
            block.clear()

    lines = text.expandtabs().splitlines()
    skip_deeper_than = None  # inside a dropped block: skip lines indented more than this
    rule = re.compile(r"\s*([=\-~*^\"#+`'])\1{2,}\s*")
    for i, raw in enumerate(lines):
        indent = len(raw) - len(raw.lstrip())
        line = raw.strip()
        if skip_deeper_than is not None:
            if not line or indent > skip_deeper_than:
                continue
            skip_deeper_than = None
        if not line:
            flush()
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if rule.fullmatch(raw) or rule.fullmatch(nxt):
            flush()  # a heading or its over/underline
            continue
        directive = re.match(r"\.\.\s+([\w:-]+)::", line)
        if line.startswith(".."):
            flush()
            name = directive.group(1) if directive else ""
            if not directive or name in CODE_DIRECTIVES:  # comment, target or code: drop its body too
                skip_deeper_than = indent
            continue
        if re.match(r":[\w -]+:( |$)", line) or line.startswith(("|", "+", ">>>", "...", "$ ", "#")):
            flush()  # a field/option line, a line block, a table, an interactive session
            continue
        item = re.match(r"(?:[*\-+]|\d+\.|#\.|\(\w\))\s+", line)
        if item:
            flush()
            line = line[item.end():]
        block.append(line)
        if line.endswith("::"):  # the indented block that follows is literal (code)
            flush()
            skip_deeper_than = indent
    flush()
    return out


class _HandbookParser(HTMLParser):
    """Collects the text of ``<p>`` elements (outside the navigation bar), inline tags flattened."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.paragraphs: list[str] = []
        self._depth = 0
        self._buf: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        if tag == "p" and dict(attrs).get("id") != "title":
            self._depth += 1
        elif tag in ("pre", "script", "style", "table") and self._depth:
            self._skip += 1

    def handle_endtag(self, tag):
        if tag in ("pre", "script", "style", "table") and self._skip:
            self._skip -= 1
        elif tag == "p" and self._depth:
            self._depth -= 1
            if not self._depth:
                self.paragraphs.append(re.sub(r"\s+", " ", "".join(self._buf)).strip())
                self._buf = []

    def handle_data(self, data):
        if self._depth and not self._skip:
            self._buf.append(data)


def html_paragraphs(text: str) -> list[str]:
    """The prose paragraphs of one Handbook HTML page."""
    parser = _HandbookParser()
    parser.feed(text)
    return [p for p in (html.unescape(p) for p in parser.paragraphs) if is_prose(p)]


def split_of(name: str) -> str:
    """A source file's split, from a stable hash of its relative path: 90 % train, 5 % valid, 5 % test."""
    h = int(hashlib.sha256(name.encode()).hexdigest()[:8], 16) % 100
    return "valid" if h < 5 else "test" if h < 10 else "train"


def extract(python_docs: Path | None = None, handbook: Path | None = None) -> list[frozen.Document]:
    """Every source document read from the installed packages, in a fixed order (what :func:`rebuild` freezes)."""
    python_docs, handbook = python_docs or PYTHON_DOCS, handbook or HANDBOOK
    if not python_docs.is_dir() or not handbook.is_dir():
        raise FileNotFoundError(f"rebuilding the English corpus reads installed documentation: apt-get install "
                                f"{PACKAGES} (missing {python_docs if not python_docs.is_dir() else handbook})")
    docs = []
    for path in sorted(python_docs.rglob("*.rst.txt")):
        pars = rst_paragraphs(path.read_text(encoding="utf-8", errors="replace"))
        docs.append(frozen.Document("python-docs", str(path.relative_to(python_docs)), tuple(pars)))
    for path in sorted(handbook.glob("*.html")):
        pars = html_paragraphs(path.read_text(encoding="utf-8", errors="replace"))
        docs.append(frozen.Document("debian-handbook", path.name, tuple(pars)))
    return docs


def split_documents(documents: list[frozen.Document]) -> dict[str, tuple[str, ...]]:
    """The paragraphs of each split; a paragraph repeated across pages (boilerplate) is kept once, where first met."""
    out: dict[str, list[str]] = {s: [] for s in SPLITS}
    seen: set[str] = set()
    for doc in documents:
        split = split_of(doc.key)
        for p in doc.paragraphs:
            if p not in seen:
                seen.add(p)
                out[split].append(p)
    return {s: tuple(v) for s, v in out.items()}


@lru_cache(maxsize=8)
def _split_lines(name: str = NAME, root: Path = frozen.ROOT) -> dict[str, tuple[str, ...]]:
    return split_documents(frozen.read(name, root))


class _Fingerprinted:
    """What a prose corpus and a release of several share: a card's fingerprint checked against :meth:`fingerprint`."""

    def fingerprint(self, root: Path = frozen.ROOT) -> dict:
        """The sha256 of each split's text and the package versions it came from (each subclass computes it)."""
        raise NotImplementedError

    def card_mismatch(self, model: str, then: dict, root: Path = frozen.ROOT) -> str | None:
        """Why a card's corpus fingerprint ``then`` no longer describes the frozen corpus, or None when it does.

        The frozen copy changes only when someone rebuilds it with ``--write``; this names the splits whose text
        moved, the package versions before and after, and the command that re-measures the card."""
        now = self.fingerprint(root)
        changed = [s for s in SPLITS if now["sha256"][s] != then.get("sha256", {}).get(s)]
        if not changed:
            return None
        return (f"the {model} card was measured on other text: the frozen corpus's {', '.join(changed)} split"
                f"{'s' if len(changed) > 1 else ''} changed (packages then {then.get('packages')}, frozen now "
                f"{now['packages']}). Re-measure with `python scripts/bundle.py assets/models/{model}` and say in "
                "the card what changed")


class ProseCorpus(_Fingerprinted):
    """A frozen corpus of English prose paragraphs, split by document (:func:`split_of`) and deduplicated
    (:func:`split_documents`): what :mod:`core.data.english` and :mod:`core.data.english_large` share.

    ``extract(**paths)`` re-reads the Debian packages (``paths`` as the rebuild command passes them) and
    ``versions(**paths)`` gives the version of each package it read, for the manifest."""

    def __init__(self, name: str, sources: dict, rebuild_command: str, extract, versions):
        self.name, self.sources, self.rebuild_command = name, sources, rebuild_command
        self.extract, self.versions = extract, versions

    def lines(self, split: str = "train", root: Path = frozen.ROOT) -> list[str]:
        """The paragraphs of one split (``train``, ``valid`` or ``test``) of the frozen corpus, one per line."""
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
        return list(_split_lines(self.name, root)[split])

    def fingerprint(self, root: Path = frozen.ROOT) -> dict:
        """What a model card's figures were measured on: the sha256 of each split's text (first 16 hex digits)
        and the Debian versions the frozen copy was extracted from (not what happens to be installed)."""
        split = _split_lines(self.name, root)
        return {"sha256": {s: hashlib.sha256("\n".join(split[s]).encode()).hexdigest()[:16] for s in SPLITS},
                "packages": frozen.manifest(self.name, root)["packages"]}

    def describe(self, root: Path = frozen.ROOT) -> dict:
        """Size of the corpus per split (paragraphs, characters, words) and where it came from, for a model
        card."""
        meta = frozen.manifest(self.name, root)
        out = {"sources": self.sources, "packages": meta["packages"], "compressed_bytes": meta["data_bytes"],
               "frozen": [self.name], "splits": {}}
        for s, ls in _split_lines(self.name, root).items():
            out["splits"][s] = {"paragraphs": len(ls), "chars": sum(len(x) for x in ls),
                                "words": sum(len(x.split()) for x in ls)}
        return out

    def rebuild(self, write: bool = False, root: Path = frozen.ROOT, **paths) -> dict:
        """Extract the corpus again from the packages and compare it with the frozen copy, per split; with
        ``write`` the new extraction replaces the frozen copy (then re-measure the cards measured on it)."""
        new = self.extract(**paths)
        try:
            old = frozen.read(self.name, root)
            old_packages = frozen.manifest(self.name, root)["packages"]
        except frozen.FrozenCorpusError:
            old, old_packages = [], None
        changes = frozen.diff(old, new)
        versions = self.versions(**paths)
        report = {"packages_frozen": old_packages,
                  "packages_installed": versions,
                  "documents": len(new),
                  **{k: [f"{split_of(x)}: {x}" for x in v] for k, v in changes.items()},
                  "splits_changed": sorted({split_of(x) for v in changes.values() for x in v})}
        if write:
            frozen.write(self.name, new, sources=self.sources, packages=versions, rebuild=self.rebuild_command,
                         root=root)
            _split_lines.cache_clear()
            report["written"] = str(root / self.name)
        return report


class ProseUnion(_Fingerprinted):
    """Frozen prose corpora read as one (a later release of a corpus: the first part unchanged, the documents added
    frozen apart, none of their paragraphs already in an earlier part): the same ``lines`` / ``fingerprint`` /
    ``card_mismatch`` / ``describe`` as :class:`ProseCorpus`, each split the parts' splits in order."""

    def __init__(self, name: str, parts: tuple[ProseCorpus, ...]):
        self.name, self.parts = name, parts
        self.sources = {k: v for part in parts for k, v in part.sources.items()}

    def lines(self, split: str = "train", root: Path = frozen.ROOT) -> list[str]:
        """The paragraphs of one split of every part, part after part."""
        return [p for part in self.parts for p in part.lines(split, root)]

    def fingerprint(self, root: Path = frozen.ROOT) -> dict:
        """As :meth:`ProseCorpus.fingerprint`, over the joined splits and every part's packages."""
        return {"sha256": {s: hashlib.sha256("\n".join(self.lines(s, root)).encode()).hexdigest()[:16]
                           for s in SPLITS},
                "packages": {k: v for part in self.parts
                             for k, v in frozen.manifest(part.name, root)["packages"].items()}}

    def describe(self, root: Path = frozen.ROOT) -> dict:
        """As :meth:`ProseCorpus.describe`: sizes per split summed over the parts, every part's sources and
        packages, and the frozen folders read."""
        parts = [part.describe(root) for part in self.parts]
        return {"sources": self.sources, "packages": {k: v for d in parts for k, v in d["packages"].items()},
                "compressed_bytes": sum(d["compressed_bytes"] for d in parts),
                "frozen": [f for d in parts for f in d["frozen"]],
                "splits": {s: {k: sum(d["splits"][s][k] for d in parts) for k in ("paragraphs", "chars", "words")}
                           for s in SPLITS}}


def _installed_versions(**_paths) -> dict[str, str | None]:
    return {p: frozen.package_version(p) for p in PACKAGES.split()}


CORPUS = ProseCorpus(NAME, SOURCES, REBUILD, lambda **paths: extract(**paths), _installed_versions)


def lines(split: str = "train", root: Path = frozen.ROOT) -> list[str]:
    """The paragraphs of one split (``train``, ``valid`` or ``test``) of the frozen corpus, one per line."""
    return CORPUS.lines(split, root)


def package_version(package: str) -> str | None:
    """The installed Debian version of ``package``, or None (see :func:`core.data.frozen.package_version`)."""
    return frozen.package_version(package)


def fingerprint(root: Path = frozen.ROOT) -> dict:
    """The English corpus's fingerprint for a model card (:meth:`ProseCorpus.fingerprint`)."""
    return CORPUS.fingerprint(root)


def card_mismatch(model: str, then: dict, root: Path = frozen.ROOT) -> str | None:
    """Why a card's fingerprint ``then`` no longer describes the English corpus (:meth:`ProseCorpus.card_mismatch`),
    or None."""
    return CORPUS.card_mismatch(model, then, root)


def describe(root: Path = frozen.ROOT) -> dict:
    """Size of the English corpus per split and where it came from (:meth:`ProseCorpus.describe`)."""
    return CORPUS.describe(root)


def rebuild(write: bool = False, root: Path = frozen.ROOT, **paths) -> dict:
    """Extract the corpus again from the installed packages and compare it with the frozen copy, per split; with
    ``write`` the new extraction replaces the frozen copy (then re-measure the lm card)."""
    return CORPUS.rebuild(write, root, **paths)


def run_rebuild(prog: str, description: str, rebuild_fn, argv: list[str] | None = None, extra_args=()) -> int:
    """A corpus's rebuild command line: parse ``--write`` (and ``extra_args``: ``(flag, kwargs)`` pairs for
    argparse), call ``rebuild_fn(write=…, **extra)`` and print its report as JSON; 2 when the packages are
    missing."""
    import argparse
    import json
    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("--write", action="store_true", help="replace the frozen copy with the new extraction")
    for flag, kwargs in extra_args:
        ap.add_argument(flag, **kwargs)
    args = vars(ap.parse_args(argv))
    try:
        report = rebuild_fn(**args)
    except FileNotFoundError as e:
        print(f"error: {e}")
        return 2
    print(json.dumps(report, indent=1, ensure_ascii=False, allow_nan=False))
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m core.data.english [--write]``: the rebuild report as JSON; 2 when the packages are missing."""
    return run_rebuild("python -m core.data.english", (
        "Re-extract the English corpus from the installed Debian packages and report what changed against the "
        "frozen copy in assets/corpora/english (nothing is written without --write)."), rebuild, argv)


if __name__ == "__main__":
    raise SystemExit(main())
