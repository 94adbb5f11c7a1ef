"""The hand-written Winograd-style test set (``tests/data/winograd.tsv``): sentences written by a person, in
everyday words, that the generator does not produce verbatim, each with French and German references and
the pronoun that translates "it" / "they". A translator is scored on the pronoun it writes (read back by the
corpus's ``pronoun_of``) and on how many of the sentences' words it never saw in training.

TSV columns: ``en  fr  fr_pronoun  de  de_pronoun`` (a header line; ``#`` starts a comment line).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

COLUMNS = ("en", "fr", "fr_pronoun", "de", "de_pronoun")


@dataclass(frozen=True)
class Row:
    """One test sentence: the English, and the French and German references with the pronoun each writes for
    "it" / "they"."""
    en: str
    fr: str
    fr_pronoun: str
    de: str
    de_pronoun: str

    def reference(self, lang: str) -> tuple[str, str]:
        return (self.fr, self.fr_pronoun) if lang == "fr" else (self.de, self.de_pronoun)


def load(path: str | Path) -> list[Row]:
    """The rows of the TSV file at ``path`` (blank and ``#`` lines skipped); ValueError on a wrong header or
    a line with the wrong number of cells."""
    rows = []
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    if tuple(header) != COLUMNS:
        raise ValueError(f"{path}: header must be {' / '.join(COLUMNS)}, got {header}")
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if len(cells) != len(COLUMNS):
            raise ValueError(f"{path}:{number}: expected {len(COLUMNS)} tab-separated cells, got {len(cells)}")
        rows.append(Row(*(c.strip() for c in cells)))
    return rows


def score(rows: list[Row], lang: str, hyps: list[str], data, known_words=None) -> dict:
    """Pronoun accuracy of ``hyps`` (the model's translations of ``rows``) and, given the model's training
    words, the share of the English words it never saw."""
    right = sum(data.pronoun_of(h, lang) == r.reference(lang)[1] for r, h in zip(rows, hyps))
    out = {"handwritten_pronoun_accuracy": right / len(rows), "handwritten_n": len(rows),
           "handwritten_exact_match": sum(h == r.reference(lang)[0] for r, h in zip(rows, hyps)) / len(rows)}
    if known_words is not None:
        from .translation import words
        ws = [w.lower() for r in rows for w in words(r.en) if w[:1].isalpha()]
        out["handwritten_unknown_rate"] = sum(w not in known_words for w in ws) / len(ws)
    return out


# ---- the ordinary set (tests/data/ordinary.tsv): what a student types first ---------------------------------------

@dataclass(frozen=True)
class Ordinary:
    """One ordinary sentence with its French and German references and, where "it" / "they" stands for a noun,
    the pronoun each language needs (``{"fr": "elle", "de": "sie"}``)."""
    en: str
    fr: str
    de: str
    pronouns: dict


def load_ordinary(path: str | Path) -> list[Ordinary]:
    """The rows of ``en  fr  de  pronoun_note`` lines (``# `` lines are comments; the note is empty or
    ``fr=elle;de=sie``); ValueError on a line with the wrong number of cells or a malformed note."""
    rows = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if len(cells) != 4:
            raise ValueError(f"{path}:{number}: expected 4 tab-separated cells, got {len(cells)}")
        note = {}
        for part in filter(None, cells[3].strip().split(";")):
            lang, _, pron = part.partition("=")
            if lang not in ("fr", "de") or not pron:
                raise ValueError(f"{path}:{number}: a pronoun note reads fr=<pronoun>;de=<pronoun>")
            note[lang] = pron
        rows.append(Ordinary(cells[0].strip(), cells[1].strip(), cells[2].strip(), note))
    return rows


def score_ordinary(rows: list[Ordinary], lang: str, hyps: list[str], data) -> dict:
    """chrF and BLEU (sacrebleu) and exact match of ``hyps`` against the references, and pronoun accuracy on the
    rows with a note (the pronoun read back by the corpus's ``pronoun_of``)."""
    from . import reference_scores
    refs = [getattr(r, lang) for r in rows]
    noted = [(r.pronouns[lang], h) for r, h in zip(rows, hyps) if lang in r.pronouns]
    scores = reference_scores(refs, hyps)
    return {"ordinary_chrf": scores["chrf"], "ordinary_bleu": scores["bleu"],
            "ordinary_exact_match": scores["exact_match"], "ordinary_n": len(rows),
            "ordinary_pronoun_accuracy": sum(data.pronoun_of(h, lang) == p for p, h in noted) / max(1, len(noted)),
            "ordinary_n_pronoun": len(noted)}
