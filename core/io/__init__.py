"""Files in and out: checkpoints, tokenizers, pretrained encoders, model names, strict JSON, size budgets.

* :mod:`~core.io.checkpoint` - a trained model's folder (``config.json``, safetensors weights, ``tokenizer.json``,
  ``words.json``, card), written atomically and read with one clear error per bad file;
* :mod:`~core.io.tokenizer` - the lab's word-level / BPE tokenizer and its special tokens;
* :mod:`~core.io.pretrained` - pretrained encoders from installed packages, rebuilt as our own Transformer;
* :mod:`~core.io.registry` - short model names (``en-fr``, ``minilm``, a user's model) to checkpoints;
* :mod:`~core.io.jsonio` - strict JSON (a non-finite number is written as ``null``, never ``NaN``);
* :mod:`~core.io.budget` - how many tokens one request may trace and export within the memory budget.

May import: the model core (``core.config``, ``core.model``, ``core.trace``, ...) and :mod:`core.data`; never
inference, training, probes or variants, and never app/, pages/ or streamlit (the ``attention-lab`` command in
:mod:`~core.io.cli` names every command line, ``app.serve`` included, as a string and imports only the one run).
"""
