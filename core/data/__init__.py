"""Synthetic data sets for Attention Lab.

* :mod:`core.data.translation` - a small English→French / English→German
  parallel corpus built so that translating the pronoun "it" needs its
  antecedent (grammatical gender), with a compositional held-out split.
* :mod:`core.data.lm` - an English language-modelling corpus from the same
  lexicon, plus a safe loader for user-supplied text files.

Both modules are pure Python and deterministic.
"""
