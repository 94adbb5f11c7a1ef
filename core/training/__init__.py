"""Training: the loop, the tasks it learns, their batches, and the experiments built on it.

* :mod:`~core.training.trainer` - ``train(TrainConfig)``: schedule, checkpoints, exact resume, DDP
  (the command line is :mod:`core.train`);
* :mod:`~core.training.tasks` - the tasks (copy, reverse, sort, translation, LM, MLM) with data and metrics;
* :mod:`~core.training.batching` - batches by length, sized in tokens;
* :mod:`~core.training.experiment` - the shared command line and JSON output of the small experiments;
* :mod:`~core.training.finetune` - pre-train, then fine-tune a classifier on the encoder;
* :mod:`~core.training.stability` - post-LN vs pre-LN × warmup loss curves;
* :mod:`~core.training.choices` - ReLU vs GELU vs SwiGLU at equal size, and averaging the last checkpoints;
* :mod:`~core.training.sizes` - parameter counts: published shapes (GPT, BERT, GPT-2, GPT-3), ALBERT's savings,
  models built on the meta device.

May import: the model core, :mod:`core.io`, :mod:`core.inference` (decoding for evaluation, coverage for the
known words) and :mod:`core.data`; never probes or variants, app/, pages/ or streamlit.
"""
