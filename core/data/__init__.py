"""Generated data sets for Attention Lab (pure Python, deterministic).

* :mod:`core.data.broad` - the English→French / English→German corpus the default translators
  learn: a lexicon taken from real dictionaries (``core/data/lexicon.json``, rebuilt by
  ``scripts/build_lexicon.py``) in 30+ sentence frames, including the coreference frames where
  translating "it" needs its antecedent's gender.
* :mod:`core.data.translation` - the small 97-word grammar the ``*-tiny`` translators learn.
* :mod:`core.data.lm` - an English language-modelling corpus, plus a safe loader for user text.
* :mod:`core.data.parallel` - human English→French / English→German translations (frozen), which the broad
  translators may also read (``--real-share``).

A translation task's text comes through two functions, one per kind of text:

* :func:`corpus_for` ``(task)`` → a :class:`Corpus`, the task's *generated* sentences: both grammars are modules with
  its functions (``generate``, ``probe_pairs``, ``pronoun_of``, ``translate``, ``pair_for``);
* :func:`parallel_for` ``(task)`` → a :class:`ParallelText`, the task's *human translations*
  (:mod:`core.data.parallel`, ``pairs(split)``, ``describe()``, ``fingerprint()``): only the broad tasks have them;
  a ``*-tiny`` task is refused with a ValueError.

A real-English language-model task's prose comes through :func:`prose_for` ``(task)``.

They are two protocols, not one, because the two kinds of text answer different questions: a grammar can parse its
own sentences (a pronoun, an antecedent), human translations cannot; they only have pairs. Every caller outside this
package goes through these two functions (``tests/core/test_corpus_interface.py`` checks that each corpus takes what
its protocol promises and that nothing else imports :mod:`core.data.parallel`).

Pure Python: imports nothing else of :mod:`core` (and no torch), so every other package may import it.
"""
from typing import Protocol, runtime_checkable

TINY_SUFFIX = "-tiny"


@runtime_checkable
class Corpus(Protocol):
    """What a translation task, the evaluator and the probes read a generated corpus through: the broad grammar
    (:mod:`core.data.broad`) and the small one (:mod:`core.data.translation`) are modules with these functions. The
    human translations beside them have no grammar to parse (no pronoun or pair for a sentence): they are a
    :class:`ParallelText`."""

    def generate(self, lang: str, split: str, n: int | None = None, seed: int = 0) -> list:
        """The pairs of ``split`` in ``lang``: all of them shuffled by ``seed``, or a sample of ``n``."""

    def pair_for(self, sentence: str, lang: str):
        """The pair (reference translation, antecedent, pronoun) of one English sentence of the grammar."""

    def translate(self, sentence: str, lang: str) -> str:
        """The reference translation of one English sentence of the grammar."""

    def pronoun_of(self, translation: str, lang: str) -> str | None:
        """The pronoun in a translation that refers back to the antecedent, or None."""

    def probe_pairs(self, lang: str = "fr") -> list:
        """Minimal pairs whose cue word flips which noun "it" stands for."""


def corpus_for(task: str, release: int = 1) -> Corpus:
    """The generated corpus of a translation task: ``en-fr`` / ``en-de`` → :mod:`core.data.broad` as ``release``
    draws its splits (1: the module itself, one weighted draw over all frames, what the shipped translators read;
    2: :class:`core.data.broad.Drawn`, each frame from its own seed), ``en-fr-tiny`` / ``en-de-tiny`` →
    :mod:`core.data.translation` (which draws nothing: it enumerates its sentences; release 1 only)."""
    if task.endswith(TINY_SUFFIX):
        if release != 1:
            raise ValueError(f"{task} has one generated corpus (release 1), not release {release}")
        from . import translation
        return translation
    from . import broad
    return broad if release == 1 else broad.Drawn(release)


def corpus_of(meta: dict) -> Corpus:
    """The generated corpus a trained translator read, from its checkpoint's ``meta``: its task and
    ``release_of(meta, "generated")``."""
    return corpus_for(meta["task"], release_of(meta, "generated"))


@runtime_checkable
class ParallelText(Protocol):
    """What a translation task, the evaluator and the card scripts read a task's human translations through
    (:class:`core.data.parallel.HumanTranslations`): sentence pairs per split, with no grammar behind them."""

    def pairs(self, split: str = "train") -> list[tuple[str, str]]:
        """The ``(english, translation)`` pairs of ``split`` (``train``, ``valid`` or ``test``), in a fixed order."""

    def describe(self) -> dict:
        """Sizes per split and source, the filters each pair passed, sources, licences and versions: for a card."""

    def fingerprint(self) -> dict:
        """One digest per split of the pairs (what a card was measured on)."""


def parallel_for(task: str, release: int = 1) -> ParallelText:
    """The human translations of a broad translation task: ``en-fr`` / ``en-de`` → the French / German sentence
    pairs of :mod:`core.data.parallel`, of one frozen ``release`` (:func:`releases`; each adds sources to the one
    before). ValueError for a ``*-tiny`` task (it never read any), a task with no parallel corpus, or an unknown
    release."""
    if task.endswith(TINY_SUFFIX):
        raise ValueError(f"{task} never read human translations")
    from . import parallel
    broad = [f"en-{lang}" for lang in parallel.LANGS]
    if task not in broad:
        raise ValueError(f"{task!r} has no human translations; only {', '.join(broad)} do")
    return parallel.HumanTranslations(lang_of(task), release)


def releases(kind: str = "parallel") -> tuple[int, ...]:
    """The releases there are of a translator's text: of the human translations (``kind`` "parallel") or of the
    generated sentences ("generated"), in order."""
    if kind == "parallel":
        from . import parallel
        return tuple(sorted(parallel.RELEASES))
    if kind == "generated":
        from . import broad
        return tuple(broad.GENERATED_RELEASES)
    raise ValueError(f"unknown kind of text {kind!r}; expected 'parallel' or 'generated'")


def release_of(meta: dict, kind: str = "parallel") -> int:
    """The release of a trained translator's text, from its checkpoint's ``meta``: of the human translations it read
    (``kind`` "parallel": ``meta.parallel_release``) or of how its generated sentences were drawn ("generated":
    ``meta.generated_release``); 1 where the meta has none: every translator trained before a release 2 existed."""
    if kind not in ("parallel", "generated"):
        raise ValueError(f"unknown kind of text {kind!r}; expected 'parallel' or 'generated'")
    return int(meta.get(f"{kind}_release", 1))


def parallel_of(meta: dict) -> ParallelText:
    """The human translations a trained translator read, from its checkpoint's ``meta``: its task and
    :func:`release_of`."""
    return parallel_for(meta["task"], release_of(meta))


PROSE = {"lm": "english", "lm-large": "english_large", "lm-xl": "english_xl"}  # a real-English lm task → its prose


def prose_for(task: str):
    """The frozen English prose a language-model task reads: ``lm`` → :mod:`core.data.english`, ``lm-large`` →
    :mod:`core.data.english_large`, ``lm-xl`` → :mod:`core.data.english_xl` (release 2: the large corpus and more).
    Each module gives ``lines(split)``, ``describe()``, ``fingerprint()``, ``card_mismatch(...)`` and ``SOURCES``
    (:class:`core.data.english.ProseCorpus`, or :class:`~core.data.english.ProseUnion` for a release of several
    frozen parts). ValueError for any other task."""
    if task not in PROSE:
        raise ValueError(f"{task!r} reads no frozen English prose; only {', '.join(PROSE)} do")
    import importlib
    return importlib.import_module(f".{PROSE[task]}", __package__)


def split_digest(task: str, split: str, release: int = 1) -> str:
    """The first 16 hex digits of the SHA-256 of a translation task's ``split`` as its generator writes it now: every
    pair's source and target, in the split's order (``generate(lang, split)``, default seed). A card records the
    digests of the splits it was measured on, so a test can say "the corpus changed: re-measure" at once."""
    import hashlib
    h = hashlib.sha256()
    for p in corpus_for(task, release).generate(lang_of(task), split):
        h.update(f"{p.src}\t{p.tgt}\n".encode())
    return h.hexdigest()[:16]


def lang_of(task: str) -> str:
    """``en-fr`` / ``en-de-tiny`` → ``fr`` / ``de``."""
    return task.removesuffix(TINY_SUFFIX).split("-")[-1]


def reference_scores(refs: list[str], hyps: list[str]) -> dict:
    """Corpus BLEU and chrF (sacrebleu with its defaults: 13a tokenisation) and the exact-match share of ``hyps``
    against human references, BLEU and chrF rounded to 4 places: the one place the cards, ``core.evaluate`` and the
    ordinary-sentence scores compute them."""
    import sacrebleu
    return {"bleu": round(sacrebleu.corpus_bleu(list(hyps), [list(refs)]).score, 4),
            "chrf": round(sacrebleu.corpus_chrf(list(hyps), [list(refs)]).score, 4),
            "exact_match": sum(h == r for h, r in zip(hyps, refs)) / max(1, len(refs)), "n": len(refs)}
