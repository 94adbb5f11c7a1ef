"""Frozen corpora: the text a shipped model learned from and was measured on, committed in the repository.

Text read from an installed Debian package moves whenever Debian publishes a point release of that package (Debian
serves only the newest), so a model card measured on it stops reproducing on a fresh machine although nothing of ours
changed. A corpus is therefore extracted once, from the packages, into ``assets/corpora/<name>/``:

* ``documents.jsonl.xz`` — one JSON object per source document, ``{"source", "path", "paragraphs"}``, in a fixed
  order (xz: the stdlib's ``lzma``);
* ``manifest.json`` — the Debian package versions it came from, each source's licence, the sizes, the SHA-256 of
  the data file, and the command that rebuilds it.

Training, evaluation and tests read the frozen copy only: they need no package installed and cannot drift. The
rebuild command re-extracts from the installed packages and :func:`diff` reports what a newer release changed; only
``--write`` replaces the frozen copy, after which the cards measured on the old text must be re-measured (their
corpus fingerprint says so).
"""
from __future__ import annotations

import datetime
import hashlib
import json
import lzma
import os
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "assets" / "corpora"
DATA = "documents.jsonl.xz"
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Document:
    """One source document (a help page, a handbook chapter, a campaign) as extracted: its paragraphs in order."""
    source: str
    path: str
    paragraphs: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"{self.source}/{self.path}"


class FrozenCorpusError(RuntimeError):
    """The frozen copy is missing or does not match its manifest."""


def package_version(package: str, status: Path = Path("/var/lib/dpkg/status")) -> str | None:
    """The installed Debian version of ``package`` (from dpkg's status file), or None where it is not installed."""
    if not status.exists():
        return None
    for block in status.read_text(encoding="utf-8", errors="replace").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(" "))
        if fields.get("Package") == package and "installed" in fields.get("Status", ""):
            return fields.get("Version")
    return None


def _encode(documents: list[Document]) -> bytes:
    text = "".join(json.dumps({"source": d.source, "path": d.path, "paragraphs": list(d.paragraphs)},
                              ensure_ascii=False, sort_keys=True, allow_nan=False) + "\n" for d in documents)
    # a fixed preset and no timestamp in the xz container: the same documents give the same bytes
    return lzma.compress(text.encode("utf-8"), preset=9 | lzma.PRESET_EXTREME)


def write(name: str, documents: list[Document], *, sources: dict, packages: list[str] | dict[str, str | None],
          rebuild: str, root: Path = ROOT) -> dict:
    """Freeze ``documents`` as corpus ``name``; ``sources`` maps each source to its description and licence,
    ``packages`` are the Debian packages read: names (their installed versions go into the manifest) or a mapping
    name → version (for packages downloaded, not installed)."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    data = _encode(documents)
    manifest = {
        "name": name,
        "frozen_on": datetime.date.today().isoformat(),
        "packages": dict(packages) if isinstance(packages, dict) else {p: package_version(p) for p in packages},
        "sources": sources,
        "documents": len(documents),
        "paragraphs": sum(len(d.paragraphs) for d in documents),
        "chars": sum(len(p) for d in documents for p in d.paragraphs),
        "data_bytes": len(data),
        "data_sha256": hashlib.sha256(data).hexdigest(),
        "rebuild": rebuild,
    }
    tmp = folder / (DATA + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(folder / DATA)
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
                                    encoding="utf-8")
    return manifest


def manifest(name: str, root: Path = ROOT) -> dict:
    """The manifest of frozen corpus ``name`` (:class:`FrozenCorpusError` when there is none)."""
    path = root / name / MANIFEST
    if not path.exists():
        raise FrozenCorpusError(f"no frozen corpus {name!r} at {path.parent}: build it with its rebuild command")
    return json.loads(path.read_text(encoding="utf-8"))


def read(name: str, root: Path = ROOT) -> list[Document]:
    """The frozen documents of corpus ``name``, after checking the data file against its manifest's digest."""
    meta = manifest(name, root)
    data = (root / name / DATA).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != meta["data_sha256"]:
        raise FrozenCorpusError(f"{root / name / DATA} does not match its manifest (sha256 {digest[:16]}… against "
                                f"{meta['data_sha256'][:16]}…): restore it from git or rebuild it with "
                                f"`{meta['rebuild']} --write`")
    out = []
    for line in lzma.decompress(data).decode("utf-8").splitlines():
        d = json.loads(line)
        out.append(Document(d["source"], d["path"], tuple(d["paragraphs"])))
    return out


def diff(old: list[Document], new: list[Document]) -> dict[str, list[str]]:
    """Documents added, removed and changed between two extractions (by ``source/path``)."""
    a, b = {d.key: d.paragraphs for d in old}, {d.key: d.paragraphs for d in new}
    return {"added": sorted(b.keys() - a.keys()), "removed": sorted(a.keys() - b.keys()),
            "changed": sorted(k for k in a.keys() & b.keys() if a[k] != b[k])}


# ---- frozen files: dictionaries a program reads by path (hunspell's .aff / .dic) --------------------------------

def write_files(name: str, files: dict[str, Path], *, sources: dict[str, dict], packages: list[str], rebuild: str,
                root: Path = ROOT) -> dict:
    """Freeze whole files (each ``<name>.xz``) as corpus ``name``; the manifest holds each file's digest."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    digests = {}
    for dest, src in sorted(files.items()):
        raw = Path(src).read_bytes()
        (folder / f"{dest}.xz").write_bytes(lzma.compress(raw, preset=9 | lzma.PRESET_EXTREME))
        digests[dest] = hashlib.sha256(raw).hexdigest()
    meta = {"name": name, "frozen_on": datetime.date.today().isoformat(),
            "packages": {p: package_version(p) for p in packages}, "sources": sources, "files": digests,
            "rebuild": rebuild}
    (folder / MANIFEST).write_text(json.dumps(meta, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
                                    encoding="utf-8")
    return meta


def files(name: str, root: Path = ROOT, cache: Path | None = None) -> Path:
    """A folder holding the frozen files of ``name`` uncompressed (made once per content, in a cache folder), for
    programs that read a dictionary by path: ``hunspell -d <folder>/fr``."""
    meta = manifest(name, root)
    tag = hashlib.sha256(json.dumps(meta["files"], sort_keys=True, allow_nan=False).encode()).hexdigest()[:12]
    base = cache or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "attention-lab"
    out = base / f"{name}-{tag}"
    if all((out / f).exists() for f in meta["files"]):
        return out
    out.mkdir(parents=True, exist_ok=True)
    for dest, digest in meta["files"].items():
        raw = lzma.decompress((root / name / f"{dest}.xz").read_bytes())
        if hashlib.sha256(raw).hexdigest() != digest:
            raise FrozenCorpusError(f"{root / name / dest}.xz does not match its manifest: restore it from git or "
                                    f"rebuild it with `{meta['rebuild']}`")
        tmp = out / f".{dest}.{os.getpid()}.tmp"  # two test workers may unpack at once: each file lands whole
        tmp.write_bytes(raw)
        tmp.replace(out / dest)
    return out
