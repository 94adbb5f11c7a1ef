"""Looking inside a trained model: attention analysis, attributions, coreference, heads, patching.

* :mod:`~core.probes.positions` - positional encodings as the model uses them (offsets, rotation, RoPE, ALiBi, order),
  and the seeds' variants of the sinusoidal table checked against the paper's;
* :mod:`~core.probes.masking` - masks on real scores, and the model re-run with masks or heads changed (:func:`patched`);
* :mod:`~core.probes.layers` - what each layer outputs: residual stream, sublayers, PCA, FFN neurons, logit lens,
  one word followed through two sentences;
* :mod:`~core.probes.analysis` - computations on a Trace the pages show (rollout, top-k links, one row by hand,
  the row as a Hopfield update);
* :mod:`~core.probes.attribution` - per-head attributions of the pronoun decision;
* :mod:`~core.probes.coref` - which heads link a pronoun to its antecedent (scoreboards, ablation);
* :mod:`~core.probes.heads` - head importance and pruning, key/value-head savings;
* :mod:`~core.probes.compress` - weights pruned by magnitude; how far each head looks, and each head cut there;
* :mod:`~core.probes.patch` - activation patching between minimal pairs;
* :mod:`~core.probes.patch_board` - its probe-set scoreboard kept beside the weights, and its command line
  (``python -m core.probes.patch_board``, or ``python -m core.probes.patch`` as before);
* :mod:`~core.probes.lesson` - the guided lesson's arithmetic, redone step by step from a Trace.

May import: the model core, :mod:`core.io`, :mod:`core.inference`, :mod:`core.training` (tasks, for batches and
metrics) and :mod:`core.data`; never variants, app/, pages/ or streamlit.
"""
