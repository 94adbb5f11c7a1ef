"""Attention Lab's transformer core: pure PyTorch (no streamlit, plotly or transformers).

The model is the flat top level - the files to open first:

* :mod:`core.config` (``ModelConfig``), :mod:`core.model` (``Transformer``), :mod:`core.attention` (eq. 1),
  :mod:`core.masks`, :mod:`core.positional`, :mod:`core.dropout`, :mod:`core.trace` (every named tensor of a
  forward pass) and :mod:`core.hooks` (the hook points that tracing, ablation and patching share).
  These import only torch and each other.
* The command lines, thin entries that may import any package: ``python -m core.train`` (:mod:`core.train`),
  ``python -m core.evaluate`` (:mod:`core.evaluate`), ``python -m core.inspect`` (:mod:`core.inspect`).

Everything else sits in a package named for what it does (each ``__init__`` says what it may import):

* :mod:`core.io` - checkpoints, tokenizers, pretrained encoders, model names, strict JSON, size budgets;
* :mod:`core.inference` - traced runs, decoding, fill-mask, the words a model never saw;
* :mod:`core.training` - the training loop, tasks, batching, fine-tuning and the small experiments;
* :mod:`core.probes` - looking inside: positions, masking, layers, analysis, attribution, coreference, heads, patching, lesson;
* :mod:`core.variants` - efficient attention, the LSTM baseline, Transformer-XL, speculative decoding;
* :mod:`core.data` - the generated and collected corpora (pure Python).

Dependencies run one way: model core ← io ← inference ← training ← probes, variants (``core.data`` below all;
inference reaches ``core.training.tasks`` inside two functions only). ``tests/core/test_purity.py`` checks it.
"""
from .config import ModelConfig
from .model import Output, Transformer
from .trace import Trace

__all__ = ["ModelConfig", "Transformer", "Output", "Trace"]
