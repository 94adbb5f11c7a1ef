"""Running a trained model on a user's text: traced runs, decoding, fill-mask, and the words it never saw.

* :mod:`~core.inference.runner` - one traced run of any checkpoint on a sentence (what every page shows);
* :mod:`~core.inference.decoding` - greedy, beam search and sampling, one token at a time with a key/value cache;
* :mod:`~core.inference.mlm` - fill-mask and next-sentence prediction with a masked language model;
* :mod:`~core.inference.coverage` - the input's words outside the model's training text (honest coverage).
* :mod:`~core.inference.prompting` - a task stated as text (few-shot prompts) and Winograd sentences, scored by
  a causal LM's log-probabilities.
* :mod:`~core.inference.verbatim` - the longest runs of a text found word for word in a language model's training
  stream (is it quoting its training text?).

May import: the model core, :mod:`core.io` and :mod:`core.data`. Inside a function (never at import time) it may
also import :mod:`core.training.tasks` - ``pair_row`` for next-sentence input, ``make_task`` to rebuild the known
words of a checkpoint saved without ``words.json``. Never probes or variants, app/, pages/ or streamlit.
"""
