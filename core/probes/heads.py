"""Head importance and pruning (Michel et al. 2019, "Are Sixteen Heads Really Better than One?"),
and the parameter / KV-cache arithmetic of multi-query and grouped-query attention.

Importance of a head = how much worse the model does on a fixed held-out batch when that head alone is
switched off (its output multiplied by 0, ``model(..., ablate={"encoder.0.self_attn": [h]})``), by default
measured as the drop of the mean **log-probability margin** of the reference token,
``log p(reference) − max_{v ≠ reference} log p(v)`` (= the logit difference). A model that translates its
held-out set perfectly has a loss near 0 whichever single head is off (the loss saturates: every Δloss
reads 0.00), but its margins still shrink by different amounts; ``measure="loss"`` ranks by Δ loss.
Pruning removes heads least-important-first and re-measures quality after each removal: the
curve of quality vs heads kept. Everything runs in eval mode (no dropout), so it is deterministic.

GQA / MQA (Shazeer 2019; Ainslie et al. 2023): ``n_kv_heads = g`` key/value heads shared by
``n_heads / g`` query heads each; see :func:`kv_savings` for the formulas and :func:`to_gqa` for
the mean-pooling conversion of a trained MHA checkpoint.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from ..config import ModelConfig
from ..hooks import Head, all_heads, as_ablation
from ..hooks import ablate as switch_off
from ..io.budget import max_positions
from ..io.tokenizer import EOS, PAD
from ..model import Transformer
from ..inference.decoding import greedy_batch
from ..training.tasks import Batch, pad_rows, seq2seq_batch


# ------------------------------------------------------------------ evaluation data
def eval_batch(ck, n: int = 64, seed: int = 0, split: str = "valid") -> tuple[Batch, list]:
    """A fixed evaluation batch for a checkpoint and the raw items it came from.

    Translation (tasks en-fr / en-de and their -tiny): ``n`` pairs of the ``split`` split of the model's corpus
    (:func:`core.probes.coref.corpus`)
    (never seen in training for valid/test). LM: ``n`` consecutive windows of 64 tokens of the task's
    validation stream. Synthetic tasks: ``n`` held-out sequences (generator seed training never uses).
    Masked LM: ``n`` held-out lines with BERT's corruption (fixed seed); the loss is taken at the chosen tokens.
    """
    from ..training.tasks import REAL_LM, LMTask, MLMTask, SyntheticTask
    task = ck.meta.get("task", "")
    tok = ck.tokenizer
    from .coref import corpus, language
    data = corpus(ck)
    if data is not None:  # en-fr, en-de, en-fr-tiny, en-de-tiny: the corpus the model was trained on
        pairs = data.generate(language(ck), split, n=n, seed=seed)
        return seq2seq_batch([(tok.encode(p.src), tok.encode(p.tgt)) for p in pairs]), pairs
    if task in REAL_LM or ck.model.cfg.kind == "decoder-only":
        lm = LMTask(tokenizer=tok, seq_len=min(64, ck.model.cfg.max_len), name=task if task in REAL_LM else "lm-tiny")
        starts = list(range(0, len(lm.valid_stream) - lm.seq_len - 1, lm.seq_len))[:n]
        return lm.windows(lm.valid_stream, starts), []
    if task == "mlm":
        mlm = MLMTask(tokenizer=tok)
        return mlm.corrupt(mlm.valid_rows[:n], torch.Generator().manual_seed(123_456 + seed)), []
    if task in ("copy", "reverse", "sort"):
        syn = SyntheticTask(task, max_len=ck.model.cfg.max_len - 2, tokenizer=tok)
        pairs = syn.sample(torch.Generator().manual_seed(123_456 + seed), n)
        return seq2seq_batch(pairs), pairs
    raise ValueError(f"no evaluation data for task {task!r}")


@torch.no_grad()
def batch_scores(model: Transformer, batch: Batch, ablate=None) -> tuple[float, float, float]:
    """(mean cross-entropy per target token, next-token accuracy, mean log-probability margin of the reference
    token over the best other token), PAD ignored, teacher forcing."""
    model.eval()
    dev = model.device
    b = batch.to(dev)
    out = model(b.src, b.tgt_in, ablate=ablate) if b.src is not None else model(b.tgt_in, ablate=ablate)
    logits = out.logits.float()
    keep = b.tgt_out.ne(PAD)
    loss = F.cross_entropy(logits.flatten(0, 1), b.tgt_out.flatten(), ignore_index=PAD)
    acc = (logits.argmax(-1).eq(b.tgt_out) & keep).sum() / keep.sum().clamp(min=1)
    ref = logits.gather(-1, b.tgt_out.clamp(min=0)[..., None])[..., 0]
    other = logits.scatter(-1, b.tgt_out.clamp(min=0)[..., None], float("-inf")).max(-1).values
    margin = ((ref - other) * keep).sum() / keep.sum().clamp(min=1)
    return float(loss), float(acc), float(margin)


def batch_loss(model: Transformer, batch: Batch, ablate=None) -> tuple[float, float]:
    """(mean cross-entropy per target token, next-token accuracy), PAD ignored, teacher forcing."""
    return batch_scores(model, batch, ablate)[:2]


def batch_margin(model: Transformer, batch: Batch, ablate=None) -> float:
    """Mean ``log p(reference) − max_{v ≠ reference} log p(v)`` over the target tokens (not saturated: it keeps
    growing with confidence where the loss is already ~0)."""
    return batch_scores(model, batch, ablate)[2]


# ------------------------------------------------------------------ importance
MEASURES = ("margin", "loss")


@dataclass
class Importance:
    """Head importance on one batch: the scores with every head on and, per head off alone, the loss increase
    ``delta`` and the margin drop ``[n_attention, n_heads]``; ``ranking`` follows ``measure``."""
    base_loss: float
    base_acc: float
    names: list[str]  # attention names, rows of ``delta``
    delta: torch.Tensor  # [n_attention, n_heads] loss increase when that head alone is off
    ranking: list[tuple[str, int, float]]  # (name, head, score of ``measure``), most important first
    base_margin: float = 0.0  # mean log-probability margin of the reference token, every head on
    margin_drop: torch.Tensor | None = None  # [n_attention, n_heads] how much that margin falls with the head off
    measure: str = "margin"

    def least_first(self) -> list[Head]:
        return [(n, h) for n, h, _ in reversed(self.ranking)]

    @property
    def score(self) -> torch.Tensor:
        """The grid the ranking follows: ``margin_drop`` or ``delta``."""
        return self.margin_drop if self.measure == "margin" else self.delta


@torch.no_grad()
def head_importance(model: Transformer, batch: Batch, measure: str = "margin", progress=None) -> Importance:
    """Each head switched off alone: the loss increase (``delta``) and the drop of the mean log-probability margin
    of the reference (``margin_drop``); ranked by ``measure``, ties broken by position (deterministic).
    ``progress(k, n)`` is called after each head (k of n heads measured)."""
    if measure not in MEASURES:
        raise ValueError(f"unknown importance measure {measure!r}; choose one of {', '.join(MEASURES)}")
    base, acc, margin = batch_scores(model, batch)
    names = model.attention_names()
    delta = torch.zeros(len(names), model.cfg.n_heads)
    drop = torch.zeros(len(names), model.cfg.n_heads)
    for i, name in enumerate(names):
        for h in range(model.cfg.n_heads):
            loss, _, m = batch_scores(model, batch, {name: [h]})
            delta[i, h], drop[i, h] = loss - base, margin - m
            if progress is not None:
                progress(i * model.cfg.n_heads + h + 1, len(names) * model.cfg.n_heads)
    score = drop if measure == "margin" else delta
    order = sorted(((i, h) for i in range(len(names)) for h in range(model.cfg.n_heads)),
                   key=lambda ih: (-float(score[ih]), ih))
    return Importance(base, acc, names, delta, [(names[i], h, float(score[i, h])) for i, h in order],
                      margin, drop, measure)


# ------------------------------------------------------------------ pruning
@dataclass
class PrunePoint:
    """One point of a pruning curve: heads still on, heads removed so far (in order), loss, accuracy and
    translation metrics."""
    kept: int  # heads still on
    removed: list[Head]  # heads off, in removal order
    loss: float
    acc: float  # teacher-forced next-token accuracy
    metrics: dict = field(default_factory=dict)  # translation: exact_match, pronoun_accuracy (greedy decoding)


@torch.no_grad()
def translation_quality(ck, pairs, ablate=None, model: Transformer | None = None) -> dict:
    """Exact match and pronoun accuracy of greedy translations of ``pairs`` with ``ablate`` heads off."""
    from .coref import corpus
    from ..training.tasks import translation_metrics
    model = model or ck.model
    src = pad_rows([ck.tokenizer.encode(p.src) + [EOS] for p in pairs])
    with model.hooks(switch_off(ablate or {})):
        hyps = [ck.tokenizer.decode(ids) for ids in greedy_batch(model, src, max_new=max_positions(model))]
    m = translation_metrics(pairs, hyps, pairs[0].lang, corpus(ck))
    return {"exact_match": m["exact_match"], "pronoun_accuracy": m["pronoun_accuracy"]}


@torch.no_grad()
def prune_curve(model: Transformer, batch: Batch, order: list[Head] | None = None, *, greedy: bool = False,
                quality=None, every: int = 1, progress=None) -> list[PrunePoint]:
    """Switch heads off one after another and measure quality after each removal.

    ``order``: removal order (default: least important first by :func:`head_importance`).
    ``greedy=True``: at each step recompute and remove the head whose removal hurts least now
    (O(H²) passes). ``quality(ablate_dict) -> dict`` adds metrics per point (e.g. translation
    exact match), evaluated on every ``every``-th point and the last. The first point is the full model.
    ``progress(k, n)`` is called after each removal (k of n heads removed).
    """
    heads = all_heads(model)
    if order is None and not greedy:
        order = head_importance(model, batch).least_first()
    removed: list[Head] = []
    points = []

    def point():
        loss, acc = batch_loss(model, batch, as_ablation(removed) or None)
        k = len(heads) - len(removed)
        extra = quality(as_ablation(removed) or None) if quality and (len(removed) % every == 0 or k == 0) else {}
        points.append(PrunePoint(k, list(removed), loss, acc, extra))

    point()
    for step in range(len(heads)):
        if greedy:
            left = [h for h in heads if h not in removed]
            scores = [(batch_loss(model, batch, as_ablation(removed + [h]))[0], i) for i, h in enumerate(left)]
            removed.append(left[min(scores)[1]])
        else:
            removed.append(order[step])
        point()
        if progress is not None:
            progress(step + 1, len(heads))
    return points


# ------------------------------------------------------------------ GQA / MQA
def n_attention_modules(cfg: ModelConfig) -> dict[str, int]:
    """How many self- and cross-attention modules the config builds."""
    enc = cfg.n_encoder_layers if cfg.has_encoder else 0
    dec = cfg.n_decoder_layers if cfg.has_decoder else 0
    return {"self": enc + dec, "cross": dec if cfg.kind == "encoder-decoder" else 0, "decoder_self": dec}


def kv_savings(cfg: ModelConfig, n_kv_heads: int | None = None, bytes_per_value: int = 4) -> dict:
    """Parameters and KV-cache bytes of ``cfg`` with ``n_kv_heads`` key/value heads (None: cfg's own).

    With ``d = d_model``, ``h = n_heads``, ``g = n_kv_heads``, ``d_h = d / h``, ``β = 1`` if bias else 0:

    * one attention module: packed ``W_QKV`` is ``d × (h + 2g)·d_h`` (+ ``(h + 2g)·d_h`` bias), ``W_O`` is
      ``h·d_h × d`` (+ ``d``): ``attn_params = (d + β)(h + 2g)·d_h + (h·d_h + β)·d``;
      going from MHA (g = h) to g saves ``2 (h − g) d_h (d + β)`` per module.
    * ``parameters = total(cfg) − n_modules · 2 (h_kv(cfg) − g) d_h (d + β)`` (everything else unchanged).
    * KV cache per generated token: every decoder self-attention keeps one key and one value vector per
      KV head: ``kv_bytes_per_token = L_dec · 2 · g · d_h · bytes`` (MHA: ``L_dec · 2 · d``·bytes).
    * encoder-decoder: cross-attention keys/values are cached once per *source* token:
      ``cross_bytes_per_source_token = L_dec · 2 · g · d_h · bytes``.
    """
    g = cfg.kv_heads if n_kv_heads is None else int(n_kv_heads)
    h, d, dh, beta = cfg.n_heads, cfg.d_model, cfg.d_head, int(cfg.bias)
    if g < 1 or h % g:
        raise ValueError(f"n_kv_heads ({g}) must divide n_heads ({h})")
    mods = n_attention_modules(cfg)
    n_mod = mods["self"] + mods["cross"]
    attn = (d + beta) * (h + 2 * g) * dh + (h * dh + beta) * d
    params = count_parameters(cfg) - n_mod * 2 * (cfg.kv_heads - g) * dh * (d + beta)
    per_tok = mods["decoder_self"] * 2 * g * dh * bytes_per_value
    return {"n_kv_heads": g, "kind": "MHA" if g == h else "MQA" if g == 1 else "GQA",
            "queries_per_kv": h // g, "attention_params_per_module": attn, "attention_modules": n_mod,
            "parameters": params, "kv_bytes_per_token": per_tok,
            "cross_kv_bytes_per_source_token": mods["cross"] * 2 * g * dh * bytes_per_value,
            "kv_cache_share": g / h}


def count_parameters(cfg: ModelConfig) -> int:
    """Parameters of ``Transformer(cfg)``, by formula (no weights allocated); equals ``num_parameters()``."""
    d, h, g, dh, beta, ff = cfg.d_model, cfg.n_heads, cfg.kv_heads, cfg.d_head, int(cfg.bias), cfg.d_ff
    ln = (2 if cfg.bias else 1) * d  # LayerNorm gain (and bias)
    attn = (d + beta) * (h + 2 * g) * dh + (h * dh + beta) * d
    width = 2 * ff if cfg.activation == "swiglu" else ff
    ffn = d * width + beta * width + ff * d + beta * d
    enc_layer = attn + ffn + 2 * ln
    dec_layer = enc_layer + (attn + ln if cfg.kind == "encoder-decoder" else 0)
    n = cfg.vocab_size * d  # token embeddings
    n += cfg.max_len * d if cfg.pos_encoding == "learned" else 0
    n += cfg.type_vocab_size * d
    n += ln if cfg.embedding_norm else 0
    final = ln if cfg.use_final_norm else 0
    if cfg.has_encoder:
        n += cfg.n_encoder_layers * enc_layer + final
    if cfg.has_decoder:
        n += cfg.n_decoder_layers * dec_layer + final
    if cfg.kind == "encoder-only":
        n += d * d + d + ln + cfg.vocab_size  # MLM dense, norm, head bias
    if cfg.nsp:
        n += d * d + d + 2 * d + 2  # pooler, next-sentence head
    if not cfg.tie_embeddings:
        n += cfg.vocab_size * d
    return n


def cache_bytes(caches) -> int:
    """Bytes held by a list of KV caches (``Transformer.new_caches()`` after decoding)."""
    def walk(x):
        if isinstance(x, dict):
            return sum(walk(v) for v in x.values())
        return x.numel() * x.element_size() if torch.is_tensor(x) else 0
    return sum(walk(c) for c in caches)


def to_gqa(model: Transformer, n_kv_heads: int) -> Transformer:
    """A GQA/MQA copy of a trained MHA model: each group's key and value heads mean-pooled
    (Ainslie et al. 2023's checkpoint conversion, without the uptraining). Queries, W_O, FFN unchanged."""
    cfg = model.cfg
    if cfg.kv_heads != cfg.n_heads:
        raise ValueError("to_gqa converts a multi-head (n_kv_heads = n_heads) model")
    h, g, dh = cfg.n_heads, int(n_kv_heads), cfg.d_head
    new = Transformer(dataclasses.replace(cfg, n_kv_heads=g))
    state = model.state_dict()
    for key, t in list(state.items()):
        if key.endswith("qkv.weight") or key.endswith("qkv.bias"):
            q, k, v = t.split((h * dh, h * dh, h * dh), 0)
            pool = lambda z: z.reshape(g, h // g, dh, *z.shape[1:]).mean(1).reshape(g * dh, *z.shape[1:])  # noqa: E731
            state[key] = torch.cat((q, pool(k), pool(v)), 0)
    new.load_state_dict(state)
    new.position_limit = getattr(model, "position_limit", None)  # reads no more than the model (core.io.budget)
    return new.to(model.device).eval()
