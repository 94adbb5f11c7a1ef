"""Variations on the architecture, each measured against the model core.

* :mod:`~core.variants.efficient` - Performer, linear, LSH and sliding-window attention against exact softmax, and
  α-entmax (sparse attention weights);
* :mod:`~core.variants.attention_cost` - what those forms cost in time and memory as the sequence grows (the
  Efficient page's live measurement and ``bench/bench_attention_cost.py``), and the maximum path length of
  Vaswani et al.'s table 1, read from the Jacobian of random stacks;
* :mod:`~core.variants.recurrence` - an LSTM seq2seq baseline by length (``python -m core.variants.recurrence``);
* :mod:`~core.variants.xl` - a small Transformer-XL language model with segment memory
  (``python -m core.variants.xl``);
* :mod:`~core.variants.speculative` - speculative decoding with a draft model, greedy and sampled;
* :mod:`~core.variants.reversible` - reversible residual blocks (RevNet / Reformer): inputs recomputed by
  inversion in the backward instead of stored;
* :mod:`~core.variants.vision` - images as tokens: a small Vision Transformer on procedural shapes
  (``python -m core.variants.vision``);
* :mod:`~core.variants.extrapolation` - longer than training: five small LMs, one per positional encoding, trained
  on 64 tokens and scored on 256 (``python -m core.variants.extrapolation``);
* :mod:`~core.variants.hierarchy` - counting and nesting: a causal Transformer against an LSTM on PARITY and balanced
  brackets, trained short and measured long (``python -m core.variants.hierarchy``).

May import: the model core, :mod:`core.io`, :mod:`core.inference`, :mod:`core.training` and :mod:`core.data`;
never probes, app/, pages/ or streamlit.
"""
