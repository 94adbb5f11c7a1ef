"""Honest coverage: which words of a sentence a model never saw in training.

A model trained on a small generated corpus turns every other sentence into confident nonsense. Pages
and the inspect CLI say so: the words of the input that are not among the model's **known words** (the
lower-cased words of its own training *source* text, saved beside the weights as ``words.json``) are named,
and a translation of such a sentence is marked as outside what the model was trained on.

One word splitter serves both sides (the training text and the user's sentence): :func:`words`, built on the
corpus splitter ``core.data.translation.words`` — letter words only (numbers and punctuation are not counted),
case-insensitive, an English contraction ("didn't") one word, a hyphenated word one word.

Pure Python and torch; no streamlit.
"""
from __future__ import annotations

import re
import threading
from functools import lru_cache
from collections.abc import Iterable
from pathlib import Path

from ..data.translation import words as _split
from ..io.tokenizer import MASK, SPECIALS, UNK

# special tokens a user may type (``[MASK]`` for a masked LM): not words of the sentence
_SPECIAL_TEXT = re.compile(r"\[(?:PAD|UNK|BOS|EOS|MASK|CLS|SEP)\]", re.IGNORECASE)
OUTSIDE = "outside what this model was trained on — not a translation"
OUTSIDE_GENERIC = "outside what this model was trained on"
BROAD_ENGLISH = "pre-trained on broad English"


def words(text: str) -> list[str]:
    """The lower-cased letter words of ``text``, in order (repeats kept)."""
    text = _SPECIAL_TEXT.sub(" ", text or "")
    return [w.lower() for w in _split(text) if w[:1].isalpha()]


def words_of(texts: Iterable[str]) -> set[str]:
    """Every word of every text: the known-word set of a training text."""
    out: set[str] = set()
    for t in texts:
        out.update(words(t))
    return out


def coverage(text: str, known) -> dict:
    """``{"unknown_words": [...], "known_share": float}`` of ``text`` against the set ``known``.

    ``unknown_words`` are lower-cased, unique, in order of first appearance; ``known_share`` is the share of the
    text's word occurrences that are known (1.0 for a text without words).
    """
    ws = words(text)
    unknown = list(dict.fromkeys(w for w in ws if w not in known))
    n_known = sum(w in known for w in ws)
    return {"unknown_words": unknown, "known_share": n_known / len(ws) if ws else 1.0}


def is_translation(ck) -> bool:
    """A model trained to translate English (``en-fr``, ``en-de``, ``en-fr-tiny``, ...)."""
    return str(ck.meta.get("task", "")).startswith("en-")


def is_pretrained(ck) -> bool:
    """A model loaded from an installed package (:mod:`core.io.pretrained`, task ``pretrained``)."""
    return ck.meta.get("task") == "pretrained"


def model_name(ck) -> str:
    """The short name pages use for a checkpoint."""
    if ck.meta.get("name"):
        return str(ck.meta["name"])
    if is_pretrained(ck):
        return "minilm" if "minilm" in str(ck.meta.get("package", "")).lower() else "this model"
    return ck.path.name if ck.path is not None else "this model"


_DERIVED: dict[tuple[str, str], frozenset | None] = {}
_LOCK = threading.Lock()


def _trained_on_user_text(meta: dict) -> bool:
    return "--text" in str(meta.get("command", ""))


def derive_known_words(ck) -> frozenset | None:
    """Known words of a checkpoint without ``words.json``: the words of the training text of the task named in
    its meta, rebuilt with its own tokenizer (``None`` when that text cannot be rebuilt)."""
    from ..training.tasks import make_task
    task = ck.meta.get("task")
    if not task or is_pretrained(ck) or _trained_on_user_text(ck.meta):
        return None  # a user's text file is not kept with the model
    try:
        return frozenset(make_task(task, tokenizer=ck.tokenizer).source_words())
    except (ValueError, OSError, NotImplementedError, AttributeError):
        return None


def known_words(ck) -> frozenset | None:
    """The words a checkpoint's model saw in training: its ``words.json``, else derived once per checkpoint
    folder from the task in its meta (see :func:`derive_known_words`). ``None`` for a pretrained model (its
    vocabulary is checked piece by piece instead) or when the training text is unknown."""
    if getattr(ck, "known_words", None) is not None:
        return ck.known_words
    if ck.path is None or is_pretrained(ck):
        return None
    key = (str(Path(ck.path).resolve()), str(ck.meta.get("task")))
    with _LOCK:
        if key not in _DERIVED:
            _DERIVED[key] = derive_known_words(ck)
        return _DERIVED[key]


def _unk_coverage(text: str, tokenizer) -> dict:
    """Pretrained WordPiece: a word is unknown when its tokenization holds ``[UNK]``."""
    unk = getattr(tokenizer, "unk_id", None)
    ws = words(text)
    bad = {w for w in dict.fromkeys(ws) if unk is not None and unk in tokenizer.encode(w)}
    return {"unknown_words": [w for w in dict.fromkeys(ws) if w in bad],
            "known_share": sum(w not in bad for w in ws) / len(ws) if ws else 1.0}


def for_checkpoint(ck, text: str) -> dict | None:
    """:func:`coverage` of ``text`` for a checkpoint, or ``None`` when its known words cannot be told."""
    if is_pretrained(ck):
        return _unk_coverage(text, ck.tokenizer)
    known = known_words(ck)
    return None if known is None else coverage(text, known)


def notice(ck, cov: dict | None, name: str | None = None) -> str | None:
    """The sentence pages show when a text has unknown words (``None`` when it has none)."""
    if not cov or not cov["unknown_words"]:
        return None
    name = name or model_name(ck)
    unknown = cov["unknown_words"]
    shown = ", ".join(unknown[:12]) + (f" and {len(unknown) - 12} more" if len(unknown) > 12 else "")
    text = f"Unknown to {name}: {shown}."
    if is_pretrained(ck):
        return (text + f" This model was {BROAD_ENGLISH}, but its vocabulary has no pieces for "
                f"{'this word' if len(unknown) == 1 else 'these words'} (read as [UNK]).")
    text += (f" {'It' if len(unknown) == 1 else 'They'} never appeared in the text this model was trained on "
             f"({cov['known_share']:.0%} of the words here did).")
    if is_translation(ck):
        text += f" Its output for this sentence is {OUTSIDE}."
    else:
        text += f" What it computes for this sentence is {OUTSIDE_GENERIC}."
    return text


BROAD_TASKS = ("en-fr", "en-de")  # translators of the broad dictionary corpus (core.data.broad), whose frames are known


@lru_cache(maxsize=512)
def _in_frames(text: str, lang: str) -> bool:
    """Whether ``text`` is a sentence of one of ``lang``'s broad-corpus frames (a missing or different final stop
    forgiven). Cached: a page reruns on every widget change, and a refused sentence costs up to three full parses
    (about 0.1 s each for two sentences)."""
    from ..data import broad
    stripped = re.sub(r"[\s.!?]*$", "", text)
    for candidate in (text, stripped + ".", stripped + "?"):
        try:
            if broad.parse(candidate).frame in broad.frame_names(lang):
                return True
        except ValueError:
            continue
    return False


def shape_notice(ck, text: str, cov: dict | None, name: str | None = None) -> str | None:
    """For a broad-corpus translator, a sentence whose every word it knows but whose shape is none of the frames it
    was trained on (``None`` otherwise: unknown words have their own notice)."""
    task = ck.meta.get("task")
    if task not in BROAD_TASKS or _trained_on_user_text(ck.meta) or not cov or cov["unknown_words"]:
        return None
    if ck.meta.get("quality"):  # a model that read real text: its calibrated confidence notice replaces this one
        return None
    lang = task[-2:]
    if not words(text) or _in_frames(text, lang):
        return None
    from ..data import broad
    return (f"Every word here is known to {name or model_name(ck)}, but this sentence has none of the "
            f"{len(broad.frame_names(lang))} shapes it was trained on (its model card lists what it learned). "
            "Outside them it often writes a fluent but wrong sentence, and which noun a pronoun takes is close to "
            "a guess.")


# Function words of French and German that are not English words, or rarely ("die", "was", "on", "son", "pour",
# "ton" are left out; "den" stays):
# a sentence made of them was typed in the wrong language.
FOREIGN = {
    "French": frozenset(
        "le la les des du au aux est sont suis sommes êtes une et je tu nous vous ils elle elles dans avec qui "
        "que sur ce cette ces mon ma mes tes sa ses leur leurs pas très mais ou où être avoir il ont était "
        "aujourd'hui bonjour merci oui non chez quand parce c'est n'est j'ai qu'il qu'elle avait ne trop lui été "
        "fait".split()),
    "German": frozenset(
        "der das und ist nicht ich du wir ihr sie ein eine einen einem einer mit für auf dem den zu von im es sind "
        "bist haben auch aber oder wie wo wer heute danke ja nein sehr mein meine dein deine kein keine nach bei "
        "aus über unter schon noch nur gibt geht weil er waren wurde hatte konnte konnten dass sich wenn zum zur "
        "vom ins".split()),
}
ACCENTS = {"French": set("éèêëàâçùûôîïœ"), "German": set("äöüß")}
SYNTHETIC_TASKS = ("copy", "reverse", "sort")


def foreign_language(text: str) -> tuple[str, list[str]] | None:
    """``(language, its function words found)`` when ``text`` reads as French or German rather than English: at
    least two of the language's function words that English lacks, making up ≥ 25 % of the words (one is enough
    with an accented letter of that language). None otherwise."""
    ws = words(text)
    best = None
    for lang, vocab in FOREIGN.items():
        hits = [w for w in ws if w in vocab]
        accented = any(c in ACCENTS[lang] for c in text.lower())
        if (len(hits) >= 2 or (hits and accented)) and len(hits) >= 0.25 * len(ws):
            if best is None or len(hits) > len(best[1]):
                best = (lang, list(dict.fromkeys(hits)))
    return best


def foreign_notice(text: str, reads: str) -> str | None:
    """The notice for a ``text`` that looks French or German (:func:`foreign_language`), given to a model that
    ``reads`` English (e.g. "lm reads English"); None for English. For models that are no Checkpoint too (the
    Recurrence page's Transformer-XL)."""
    found = foreign_language(text)
    if found is None:
        return None
    lang, hits = found
    return (f"This looks like {lang} ({', '.join(hits[:4])}), not English: {reads}, so what it makes of this "
            "text says little. Type an English sentence.")


def language_notice(ck, text: str, name: str | None = None) -> str | None:
    """For a model that reads English, a text that looks French or German: say so and what the model reads."""
    if ck.meta.get("task") in SYNTHETIC_TASKS or foreign_language(text) is None:
        return None
    name = name or model_name(ck)
    target = {"fr": "French", "de": "German"}.get(str(ck.meta.get("task", ""))[-2:]) if is_translation(ck) else None
    return foreign_notice(text, f"{name} translates English into {target}" if target else f"{name} reads English")


# what each special token stands for, said beside it when a user types one
SPECIAL_ROLES = {"[PAD]": "filler after a short sentence", "[BOS]": "the start of a text",
                 "[EOS]": "the end of a sentence", "[MASK]": "a hidden word", "[CLS]": "BERT's start token",
                 "[SEP]": "BERT's separator"}


def typed_specials(tok, text: str) -> list[str]:
    """The special tokens that ``tok`` makes of the literal ``text`` (a typed "[MASK]" becomes the mask token, not
    the six characters), each once; [UNK] is left out, as it also stands for any character the tokenizer lacks."""
    specials, unk = set(getattr(tok, "special_ids", range(len(SPECIALS)))), getattr(tok, "unk_id", UNK)
    ids = [i for i in tok.encode(text) if i in specials and i != unk]
    return list(dict.fromkeys(tok.display(ids)))


def special_notice(ck, text: str, name: str | None = None) -> str | None:
    """A text holding the written form of a special token ("[MASK]", "[EOS]" …) that the model's tokenizer turns into
    that token: said, not refused (a page may use one on purpose). A masked LM's own [MASK] is what it reads
    sentences with, so it is not named for one."""
    tok = ck.tokenizer
    typed = typed_specials(tok, text)
    if ck.meta.get("task") == "mlm":
        mask = tok.display([getattr(tok, "mask_id", MASK)])[0]
        typed = [t for t in typed if t != mask]
    if not typed:
        return None
    one = len(typed) == 1
    roles = "; ".join(f"{t}: {SPECIAL_ROLES[t]}" for t in typed if t in SPECIAL_ROLES)
    what = "its own special token" if one else "its own special tokens"
    return (f"{name or model_name(ck)} reads {', '.join(typed)} in this text as {what}"
            f"{f' ({roles})' if roles else ''}, not as the letters typed. Remove {'it' if one else 'them'} to "
            "read the text as plain words.")


def outside_label(ck) -> str:
    """How a page marks the output of a sentence with unknown words."""
    return OUTSIDE if is_translation(ck) else OUTSIDE_GENERIC
