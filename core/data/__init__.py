"""Generated data sets for Attention Lab (pure Python, deterministic).

* :mod:`core.data.broad` - the English→French / English→German corpus the default translators
  learn: a lexicon taken from real dictionaries (``core/data/lexicon.json``, rebuilt by
  ``scripts/build_lexicon.py``) in 30+ sentence frames, including the coreference frames where
  translating "it" needs its antecedent's gender.
* :mod:`core.data.translation` - the small 97-word grammar the ``*-tiny`` translators learn.
* :mod:`core.data.lm` - an English language-modelling corpus, plus a safe loader for user text.

Both translation corpora are modules with the functions of :class:`Corpus` (``generate``, ``probe_pairs``,
``pronoun_of``, ``translate``, ``pair_for``); :func:`corpus_for` picks the one a task uses, and
``tests/core/test_corpus_interface.py`` checks that both still take what the protocol promises.

Pure Python: imports nothing else of :mod:`core` (and no torch), so every other package may import it.
"""
from typing import Protocol, runtime_checkable

TINY_SUFFIX = "-tiny"


@runtime_checkable
class Corpus(Protocol):
    """What a translation task, the evaluator and the probes read a generated corpus through: the broad grammar
    (:mod:`core.data.broad`) and the small one (:mod:`core.data.translation`) are modules with these functions. The
    human translations beside them are frozen documents (:mod:`core.data.frozen`, :mod:`core.data.parallel`) with no
    grammar to parse: they have no pronoun or pair for a sentence."""

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


def corpus_for(task: str) -> Corpus:
    """The corpus module of a translation task: ``en-fr`` / ``en-de`` → :mod:`core.data.broad`,
    ``en-fr-tiny`` / ``en-de-tiny`` → :mod:`core.data.translation`."""
    if task.endswith(TINY_SUFFIX):
        from . import translation
        return translation
    from . import broad
    return broad


def split_digest(task: str, split: str) -> str:
    """The first 16 hex digits of the SHA-256 of a translation task's ``split`` as its generator writes it now: every
    pair's source and target, in the split's order (``generate(lang, split)``, default seed). A card records the
    digests of the splits it was measured on, so a test can say "the corpus changed: re-measure" at once."""
    import hashlib
    h = hashlib.sha256()
    for p in corpus_for(task).generate(lang_of(task), split):
        h.update(f"{p.src}\t{p.tgt}\n".encode())
    return h.hexdigest()[:16]


def lang_of(task: str) -> str:
    """``en-fr`` / ``en-de-tiny`` → ``fr`` / ``de``."""
    return task.removesuffix(TINY_SUFFIX).split("-")[-1]
