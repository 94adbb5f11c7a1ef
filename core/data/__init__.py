"""Generated data sets for Attention Lab (pure Python, deterministic).

* :mod:`core.data.broad` - the English→French / English→German corpus the default translators
  learn: a lexicon taken from real dictionaries (``core/data/lexicon.json``, rebuilt by
  ``scripts/build_lexicon.py``) in 30+ sentence frames, including the coreference frames where
  translating "it" needs its antecedent's gender.
* :mod:`core.data.translation` - the small 97-word grammar the ``*-tiny`` translators learn.
* :mod:`core.data.lm` - an English language-modelling corpus, plus a safe loader for user text.

Both translation corpora expose the same functions (``generate``, ``probe_pairs``,
``pronoun_of``, ``translate``, ``pair_for``, ``words``); :func:`corpus_for` picks the one a task uses.

Pure Python: imports nothing else of :mod:`core` (and no torch), so every other package may import it.
"""

TINY_SUFFIX = "-tiny"


def corpus_for(task: str):
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
