"""Heads that language models grow: previous-token, duplicate-token and induction heads, found by measurement.

``python -m core.find_heads --model MODEL [--seq-len N] [--seed S] [--batch B] [--text TEXT]`` prints one strict
JSON object on its last line: per kind a ``layers × heads`` list of scores (``previous_token``, ``duplicate_token``,
``induction``), ``induction_loss`` (the next-token loss on each copy of a repeated sequence), the top heads of each
kind, and the in-context loss with the induction heads switched off (and, as a control, as many of the least
induction-like heads switched off).

The standard test (Olsson et al. 2022, "In-context learning and induction heads") feeds the model a sequence of
``L`` random tokens ``r_0 … r_{L-1}`` read twice, ``[BOS] r r`` (BERT: ``[CLS] r r [SEP]``). The tokens of one row
are distinct, so every token of the second copy occurs exactly once before. With ``o`` the position of ``r_0``
(1 after ``[BOS]``) and ``A[q, k]`` a head's attention weight from query ``q`` to key ``k``, averaged over the batch:

* previous-token score = mean over queries ``q ≥ 1`` of ``A[q, q-1]`` (on ``text_ids`` when given, otherwise on the
  repeated sequence): a head that always looks one token back scores 1;
* duplicate-token score = mean over second-copy queries ``q`` of ``A[q, q-L]``: the earlier occurrence of the same
  token;
* induction score = mean over second-copy queries ``q`` of ``A[q, q-L+1]``: the token that *followed* the earlier
  occurrence — the head that completes ``[A][B] … [A] → [B]``;
* induction loss = the mean next-token cross-entropy of ``r_1 … r_{L-1}`` in the first copy (random tokens: about
  ``log V`` for a model that cannot know them) and the same tokens in the second copy (low when the model copies from
  context). ``r_0`` is left out of both: nothing before it tells it.

Every score is a mean of attention weights, so it lies in [0, 1]; uniform causal attention gives ``1/(q+1)`` at
query ``q``. Scores come from the Trace (:mod:`core.trace`); switching heads off uses the model's one hook mechanism
(``model(..., ablate=...)`` puts :func:`core.hooks.scale_heads` on ``….self_attn.heads``).

Encoder-only models (BERT, minilm, mlm) attend in both directions. Previous-token and duplicate-token scores mean
the same there. The induction score is still computed, but a bidirectional head can reach ``q-L+1`` without any
induction mechanism (e.g. by looking at the next token's first copy directly), so it is "attention to the position
an induction head would read", not evidence of in-context copying; and there is no next-token loss, so
``induction_loss`` is ``{"first_copy": None, "second_copy": None}``. Encoder-decoder models are refused here.

A translator's encoder (Raganato et al. 2020, "Fixed encoder self-attention patterns in Transformer-based machine
translation") is read by the functions of the last sections, not by the command line: :func:`offset_shares` (how
much of each head's attention goes one token back, to the token itself, one token on), :func:`fixed_pattern_hooks`
and :func:`replacement_study` (each head's map replaced by its best one-hot pattern through the attention's mask hook
point, and the held-out loss measured), :func:`verb_object_scores` (attention from a verb to its direct object in
generated sentences whose roles the grammar knows). :func:`encoder_heads` measures all of it for a shipped translator
(``python scripts/precompute.py --model en-fr --parts encoder_heads`` stores it in ``summaries.json``).
"""
from __future__ import annotations

import math
import re
import sys

import torch
import torch.nn.functional as F

from . import hooks
from .io import cli, jsonio, registry
from .io.budget import max_positions
from .io.tokenizer import BOS, EOS, SPECIALS, normalize_text
from .trace import Trace

KINDS = ("previous_token", "duplicate_token", "induction")


# ------------------------------------------------------------------ the model's one attention stack
def stack_of(model) -> str:
    """The stack whose self-attention is scored: ``decoder`` for a decoder-only model, ``encoder`` for an encoder-only
    one (ValueError for an encoder-decoder model, which has two and a cross-attention)."""
    kind = model.cfg.kind
    if kind == "decoder-only":
        return "decoder"
    if kind == "encoder-only":
        return "encoder"
    raise ValueError(f"head finding reads one self-attention stack: choose a decoder-only (GPT) or encoder-only (BERT) "
                     f"model; this one is {kind}")


def _n_layers(model) -> int:
    return model.cfg.n_layers(stack_of(model))


def framing(ck) -> dict:
    """The keyword arguments :func:`head_scores` needs for a checkpoint's tokenizer: the lowest id of an ordinary token
    (``vocab_low``) and the tokens put around the sequence (``bos``, ``eos``). Ours: specials are ids 0-4, a
    decoder-only model reads ``[BOS]`` first; BERT's WordPiece (minilm): ``[CLS] … [SEP]``, and its ``[unusedN]``
    slots, never trained, are skipped too."""
    tok = ck.tokenizer
    if hasattr(tok, "cls_id"):
        bracketed = [i for i in range(min(tok.vocab_size, 5000))
                     if (t := tok.id_to_token(i)).startswith("[") and t.endswith("]") and len(t) > 2]
        return {"vocab_low": max(bracketed) + 1, "bos": tok.cls_id, "eos": tok.sep_id}
    return {"vocab_low": len(SPECIALS), "bos": BOS if ck.model.cfg.kind == "decoder-only" else None, "eos": None}


# ------------------------------------------------------------------ the repeated random sequence
def repeated_tokens(vocab_size: int, *, seq_len: int = 24, repeats: int = 2, batch: int = 16, seed: int = 0,
                    vocab_low: int = 5, bos: int | None = BOS, eos: int | None = None,
                    pool=None) -> torch.Tensor:
    """``[batch, T]`` ids: per row ``seq_len`` distinct random tokens from ``vocab_low .. vocab_size-1``, read
    ``repeats`` times, after ``bos`` and before ``eos`` (either None: left out). The same seed gives the same ids.
    ``pool``: draw from these ids instead (distinct ids, e.g. the tokens a model's training text holds often)."""
    if seq_len < 2 or repeats < 2 or batch < 1:
        raise ValueError(f"need seq_len >= 2, repeats >= 2 and batch >= 1 (got {seq_len}, {repeats}, {batch})")
    gen = torch.Generator().manual_seed(int(seed))
    if pool is not None:
        pool = torch.as_tensor(pool, dtype=torch.long).unique()
        if len(pool) < seq_len or int(pool.min()) < 0 or int(pool.max()) >= vocab_size:
            raise ValueError(f"cannot draw {seq_len} distinct tokens from a pool of {len(pool)} ids in 0..{vocab_size - 1}")
        rows = pool[torch.rand(batch, len(pool), generator=gen).argsort(dim=1)[:, :seq_len]]
    elif not 1 <= vocab_low < vocab_size or vocab_size - vocab_low < seq_len:
        raise ValueError(f"cannot draw {seq_len} distinct tokens from ids {vocab_low}..{vocab_size - 1}")
    else:
        rows = torch.rand(batch, vocab_size - vocab_low, generator=gen).argsort(dim=1)[:, :seq_len] + vocab_low
    parts = ([torch.full((batch, 1), bos)] if bos is not None else []) + [rows] * repeats
    parts += [torch.full((batch, 1), eos)] if eos is not None else []
    return torch.cat(parts, dim=1)


def _offset(bos) -> int:
    return 0 if bos is None else 1


def _check_length(model, length: int, what: str) -> None:
    limit = max_positions(model)
    if length > limit:
        raise ValueError(f"the {what} has {length} positions; this model reads at most {limit}")


# ------------------------------------------------------------------ scores
def _weights(model, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``([layers, B, H, T, T] attention weights, [B, T, V] logits)`` of one traced eval-mode pass."""
    stack = stack_of(model)
    trace = Trace()
    out = model(ids.to(model.device), trace=trace)
    w = torch.stack([trace[f"{stack}.{i}.self_attn.weights"] for i in range(_n_layers(model))])
    return w.float().cpu(), out.logits.float().cpu()


def diagonal_score(weights: torch.Tensor, queries, offset: int) -> torch.Tensor:
    """``[layers, heads]``: the mean over the batch and ``queries`` of ``weights[..., q, q - offset]`` for
    ``weights`` ``[layers, B, H, T, T]``."""
    q = torch.as_tensor(list(queries), dtype=torch.long)
    if q.numel() == 0 or int((q - offset).min()) < 0:
        raise ValueError("no query has a key at that offset")
    return weights[..., q, q - offset].mean(dim=(1, 3))


def _copy_losses(logits: torch.Tensor, ids: torch.Tensor, o: int, seq_len: int, repeats: int) -> list[float]:
    """Mean next-token loss of ``r_1 … r_{L-1}`` in each copy (copy c starts at position ``o + c·L``)."""
    logp = F.log_softmax(logits, dim=-1)
    out = []
    for c in range(repeats):
        targets = torch.arange(o + c * seq_len + 1, o + (c + 1) * seq_len)
        nll = -logp[:, targets - 1].gather(-1, ids[:, targets].unsqueeze(-1)).squeeze(-1)
        out.append(float(nll.mean()))
    return out


class _Eval:
    """Eval mode and no gradients for the measurement, the caller's mode (a model in training) restored after."""

    def __init__(self, model):
        self.model, self.was = model, model.training

    def __enter__(self):
        self.grad = torch.is_grad_enabled()
        torch.set_grad_enabled(False)
        self.model.eval()

    def __exit__(self, *exc):
        self.model.train(self.was)
        torch.set_grad_enabled(self.grad)


def head_scores(model, *, vocab_low: int = 5, seq_len: int = 24, repeats: int = 2, batch: int = 16, seed: int = 0,
                text_ids=None, bos: int | None = BOS, eos: int | None = None, pool=None) -> dict:
    """Previous-token, duplicate-token and induction score of every head (``layers × heads`` nested lists of floats in
    [0, 1]) and ``induction_loss`` ``{"first_copy", "second_copy"}`` (None for an encoder-only model), measured on
    ``batch`` rows of ``[bos] r × repeats [eos]`` with ``seq_len`` random tokens (see the module doc).

    ``text_ids``: a model input (ids as the model reads them, e.g. ``[BOS] + encode(text)``; a list, or a list of
    equal-length lists) on which the previous-token score is measured instead. A model in training mode is measured
    in eval mode (no dropout) and left in training mode. ``bos`` / ``eos`` / ``vocab_low``: see :func:`framing`;
    ``pool``: see :func:`repeated_tokens`.
    """
    stack_of(model)  # an encoder-decoder model is refused before anything else
    ids = repeated_tokens(model.cfg.vocab_size, seq_len=seq_len, repeats=repeats, batch=batch, seed=seed,
                          vocab_low=vocab_low, bos=bos, eos=eos, pool=pool)
    _check_length(model, ids.shape[1], "repeated sequence")
    o = _offset(bos)
    with _Eval(model):
        w, logits = _weights(model, ids)
        later = range(o + seq_len, o + repeats * seq_len)  # every query of the second and later copies
        scores = {"duplicate_token": diagonal_score(w, later, seq_len),
                  "induction": diagonal_score(w, later, seq_len - 1)}
        if text_ids is None:
            scores["previous_token"] = diagonal_score(w, range(1, ids.shape[1]), 1)
        else:
            text = torch.as_tensor(text_ids, dtype=torch.long)
            text = text[None] if text.dim() == 1 else text
            if text.shape[-1] < 2:
                raise ValueError("the text needs at least two tokens for a previous-token score")
            _check_length(model, text.shape[1], "text")
            scores["previous_token"] = diagonal_score(_weights(model, text)[0], range(1, text.shape[1]), 1)
        if model.cfg.kind == "decoder-only":
            losses = _copy_losses(logits, ids, o, seq_len, repeats)
        else:
            losses = [None] * repeats
    result = {k: scores[k].clamp(0.0, 1.0).tolist() for k in KINDS}
    result["induction_loss"] = {"first_copy": losses[0], "second_copy": losses[1]}
    if repeats > 2:
        result["induction_loss"]["per_copy"] = losses
    return result


def copy_twice(model, ids, *, bos: int | None = BOS) -> dict:
    """A text read twice, ``[bos] s s`` for the model input ``ids`` = s (at least two tokens), as the Lesson shows it:
    ``induction`` per head (``layers × heads``: mean attention from each token of the second copy to the token that
    followed it in the first copy, the offset :func:`head_scores` measures on random tokens), ``first_copy`` /
    ``second_copy`` (each copy's next-token loss of its tokens 2…n, per token and as the mean) and ``weights``
    ``[layers, heads, T, T]``. A decoder-only model only (the loss is next-token)."""
    if model.cfg.kind != "decoder-only":
        raise ValueError("reading a text twice to copy it needs a decoder-only model")
    s = [int(i) for i in ids]
    if len(s) < 2:
        raise ValueError("the text needs at least two tokens to be copied")
    n, o = len(s), _offset(bos)
    x = torch.tensor([([bos] if bos is not None else []) + s + s], dtype=torch.long)
    _check_length(model, x.shape[1], "text read twice")
    with _Eval(model):
        w, logits = _weights(model, x)
    nll = -F.log_softmax(logits[0, :-1], dim=-1).gather(-1, x[0, 1:, None]).squeeze(-1)  # position t predicts t + 1
    first, second = nll[o:o + n - 1], nll[o + n:o + 2 * n - 1]  # tokens 2..n of each copy
    return {"induction": diagonal_score(w, range(o + n, o + 2 * n), n - 1).clamp(0.0, 1.0).tolist(),
            "first_copy": {"per_token": first.tolist(), "mean": float(first.mean())},
            "second_copy": {"per_token": second.tolist(), "mean": float(second.mean())},
            "weights": w[:, 0], "offset": o, "length": n}


def _ablated_logits(model, heads, ids: torch.Tensor) -> torch.Tensor:
    """``[B, T, V]`` logits of an eval-mode pass with ``heads`` ((layer, head) pairs) switched off."""
    if model.cfg.kind != "decoder-only":
        raise ValueError("the in-context (next-token) loss needs a decoder-only model; an encoder reads both copies "
                         "at once")
    stack, n_layers, n_heads = stack_of(model), _n_layers(model), model.cfg.n_heads
    ablate: dict[str, list[int]] = {}
    for layer, head in heads:
        if not (0 <= int(layer) < n_layers and 0 <= int(head) < n_heads):
            raise ValueError(f"no head L{layer}H{head}: this model has {n_layers} layers of {n_heads} heads")
        ablate.setdefault(f"{stack}.{int(layer)}.self_attn", []).append(int(head))
    _check_length(model, ids.shape[1], "repeated sequence")
    with _Eval(model):
        return model(ids.to(model.device), ablate=ablate or None).logits.float().cpu()


def ablate_heads_loss(model, heads, *, vocab_low: int = 5, seq_len: int = 24, repeats: int = 2, batch: int = 16,
                      seed: int = 0, bos: int | None = BOS, eos: int | None = None) -> dict:
    """``{"first_copy", "second_copy"}``: the next-token loss on each copy of the same repeated sequence as
    :func:`head_scores` (same arguments, same ids), with ``heads`` — ``(layer, head)`` pairs — switched off through
    the model's ablation hooks (``model(ids, ablate={"decoder.L.self_attn": [h, …]})``). No heads: the loss of
    :func:`head_scores`. Decoder-only models only (an encoder has no next-token loss)."""
    ids = repeated_tokens(model.cfg.vocab_size, seq_len=seq_len, repeats=repeats, batch=batch, seed=seed,
                          vocab_low=vocab_low, bos=bos, eos=eos)
    losses = _copy_losses(_ablated_logits(model, heads, ids), ids, _offset(bos), seq_len, repeats)
    return {"first_copy": losses[0], "second_copy": losses[1]}


def loss_by_position(model, heads=(), *, vocab_low: int = 5, seq_len: int = 24, repeats: int = 2, batch: int = 16,
                     seed: int = 0, bos: int | None = BOS, eos: int | None = None) -> list[float]:
    """The next-token loss at every position of the repeated sequence (entry ``t-1``: predicting the token at ``t``,
    mean over the batch), ``heads`` switched off as in :func:`ablate_heads_loss`: the curve that drops where the
    second copy begins."""
    ids = repeated_tokens(model.cfg.vocab_size, seq_len=seq_len, repeats=repeats, batch=batch, seed=seed,
                          vocab_low=vocab_low, bos=bos, eos=eos)
    logp = F.log_softmax(_ablated_logits(model, heads, ids), dim=-1)
    nll = -logp[:, :-1].gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return nll.mean(0).tolist()


@torch.no_grad()
def in_context_score(model, stream: torch.Tensor, *, early: int = 50, late: int = 500, windows: int = 64,
                     batch: int = 16) -> dict:
    """Olsson et al.'s in-context learning score on real text: the mean next-token loss at token ``late`` of a
    context minus the loss at token ``early`` (negative: the model predicts better with more context), over
    ``windows`` non-overlapping windows of ``late + 1`` tokens of ``stream`` (a held-out token stream)."""
    if late <= early or late >= model.cfg.max_len:
        raise ValueError(f"need early < late < the model's {model.cfg.max_len} positions, got {early} and {late}")
    model.eval()
    n = late + 1
    starts = list(range(0, len(stream) - n - 1, n))[:windows]
    if not starts:
        raise ValueError(f"the stream holds {len(stream)} tokens, fewer than one window of {n + 1}")
    sums = torch.zeros(2)
    for i in range(0, len(starts), batch):
        rows = torch.stack([stream[s:s + n + 1] for s in starts[i:i + batch]]).to(model.device)
        logits = model(rows[:, :-1]).logits
        for j, t in enumerate((early, late)):  # logits at position t predict token t + 1; only these two normalised
            logp = F.log_softmax(logits[:, t].float(), dim=-1)
            sums[j] -= logp.gather(-1, rows[:, t + 1:t + 2]).sum().cpu()
    early_loss, late_loss = (sums / len(starts)).tolist()
    return {"early": early, "late": late, "windows": len(starts), "loss_early": early_loss, "loss_late": late_loss,
            "score": late_loss - early_loss}


# ------------------------------------------------------------------ naming heads
def top_heads(grid, k: int = 3) -> list[dict]:
    """The ``k`` highest-scoring heads of a ``layers × heads`` grid: ``[{"layer", "head", "score"}]``, best first
    (ties: lower layer, then lower head first)."""
    flat = [(float(s), li, hi) for li, row in enumerate(grid) for hi, s in enumerate(row)]
    flat.sort(key=lambda x: (-x[0], x[1], x[2]))
    return [{"layer": li, "head": hi, "score": s} for s, li, hi in flat[:max(0, k)]]


def induction_heads(grid, threshold: float = 0.4, at_most: int | None = None) -> list[tuple[int, int]]:
    """``(layer, head)`` of the heads whose induction score is at least ``threshold`` (best first, at most
    ``at_most``); when none reaches it, the single best head, so there is always something to switch off."""
    ranked = top_heads(grid, k=sum(len(r) for r in grid))
    chosen = [(h["layer"], h["head"]) for h in ranked if h["score"] >= threshold] or \
             [(h["layer"], h["head"]) for h in ranked[:1]]
    return chosen[:at_most] if at_most else chosen


def control_heads(grid, n: int) -> list[tuple[int, int]]:
    """The ``n`` heads with the lowest score of ``grid``: switching off as many heads that are not induction heads
    shows how much of a loss change is specific to the induction heads."""
    ranked = top_heads(grid, k=sum(len(r) for r in grid))
    return [(h["layer"], h["head"]) for h in reversed(ranked)][:n]


def report(ck, *, seq_len: int = 24, seed: int = 0, batch: int = 16, text: str | None = None, k: int = 3,
           threshold: float = 0.4) -> dict:
    """Everything the CLI prints for a checkpoint: the three score grids, ``induction_loss``, ``top_heads`` per kind,
    and (decoder-only) ``ablation``: the loss with the induction heads off and with as many control heads off."""
    frame = framing(ck)
    text_ids = None
    if text is not None:
        if not normalize_text(text):
            raise ValueError("the text is empty")
        body = ck.tokenizer.encode(text)
        text_ids = ([frame["bos"]] if frame["bos"] is not None else []) + body + \
                   ([frame["eos"]] if frame["eos"] is not None else [])
    out = head_scores(ck.model, seq_len=seq_len, seed=seed, batch=batch, text_ids=text_ids, **frame)
    out["top_heads"] = {kind: top_heads(out[kind], k) for kind in KINDS}
    out["model_kind"] = ck.model.cfg.kind
    out["settings"] = {"seq_len": seq_len, "seed": seed, "batch": batch, "repeats": 2,
                       "previous_token_on": "text" if text_ids is not None else "repeated sequence", **frame}
    if ck.model.cfg.kind == "decoder-only":
        off = induction_heads(out["induction"], threshold)
        ctrl = control_heads(out["induction"], len(off))
        kw = dict(seq_len=seq_len, seed=seed, batch=batch, **frame)
        out["ablation"] = {"threshold": threshold,
                           "induction_heads": [list(h) for h in off],
                           "induction_heads_off": ablate_heads_loss(ck.model, off, **kw),
                           "control_heads": [list(h) for h in ctrl],
                           "control_heads_off": ablate_heads_loss(ck.model, ctrl, **kw),
                           "chance_loss": math.log(ck.model.cfg.vocab_size - frame["vocab_low"])}
    else:
        out["ablation"] = None
    return out


# ------------------------------------------------------------------ a translator's encoder: position and syntax
# Raganato et al. 2020 ("Fixed encoder self-attention patterns in Transformer-based machine translation"): most
# encoder heads attend by position, and fixed patterns can stand in for them. Here: how much of each head's
# attention goes to the key one position back, the query's own position, one position on; what a head loses when
# its map is replaced by its best one-hot pattern (no retraining); and how much a head attends from a verb to its
# direct object in generated sentences whose roles the grammar knows.
OFFSETS = (-1, 0, 1)
PATTERNS = {-1: "previous token", 0: "same token", 1: "next token"}
POSITIONAL_SHARE = 0.5  # a head whose best fixed pattern gets at least this share of its attention counts as positional
ENCODER_SPEC = {"split": "valid", "first": 64, "verb_object_split": "test", "verb_object_first": 1500,
                "threshold": POSITIONAL_SHARE, "offsets": list(OFFSETS)}  # what a shipped summary was measured on


def encoder_maps(model, src: torch.Tensor, fns: dict | None = None) -> torch.Tensor:
    """``[layers, B, H, T, T]``: the encoder self-attention weights of one traced eval-mode encoder pass over ``src``
    ``[B, T]`` (padding: the model's pad id), with the hooks ``fns`` (:mod:`core.hooks`) applied."""
    if model.cfg.kind == "decoder-only":
        raise ValueError("a decoder-only model has no encoder")
    trace = Trace()
    with _Eval(model):
        model.encode(torch.as_tensor(src, dtype=torch.long).to(model.device), trace=trace, hooks=fns)
    n = model.cfg.n_layers("encoder")
    return torch.stack([trace[f"encoder.{i}.self_attn.weights"] for i in range(n)]).float().cpu()


def offset_shares(weights: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
    """``[layers, heads, 4]``: per head, the mean attention weight from a query to the key at offset −1, 0 and +1
    from it, and to every other key (``1 −`` the three), averaged over the real queries of ``weights``
    ``[layers, B, H, T, T]``. ``valid`` ``[B, T]``: True for a real token, False for padding (None: all real). A query
    with no key at an offset (the first has no previous token) counts 0 there."""
    n_layers, b, n_heads, t, _ = weights.shape
    valid = torch.ones(b, t, dtype=torch.bool) if valid is None else torch.as_tensor(valid).bool()
    q = torch.arange(t)
    cols = []
    for off in OFFSETS:
        k = q + off
        inside = (k >= 0) & (k < t)
        col = torch.zeros(n_layers, b, n_heads, t)
        col[..., inside] = weights.float()[..., q[inside], k[inside]]
        cols.append(col)
    at = torch.stack(cols, dim=-1) * valid[None, :, None, :, None]  # [L, B, H, T, 3], padding queries zeroed
    mean = at.sum(dim=(1, 3)) / valid.sum().clamp(min=1)
    return torch.cat([mean, (1.0 - mean.sum(-1, keepdim=True)).clamp(min=0.0)], dim=-1)


def best_patterns(shares: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(offset, share)``, each ``[layers, heads]``: the fixed pattern (−1, 0 or +1) that gets the largest share of
    each head's attention in ``shares`` (from :func:`offset_shares`) and that share (ties: the lower offset)."""
    idx = shares[..., :len(OFFSETS)].argmax(dim=-1)
    return torch.tensor(OFFSETS)[idx], shares.gather(-1, idx[..., None])[..., 0]


def fixed_pattern_hooks(model, patterns: dict, stack: str = "encoder") -> dict:
    """Hooks (for ``model.hooks(...)`` or ``hooks=``) that replace heads' attention maps by fixed patterns:
    ``patterns`` ``{(layer, head): offset}`` makes that head of ``{stack}.{layer}.self_attn`` give all its weight to
    the key ``offset`` positions from each query (−1 the previous token, 0 the query itself, +1 the next token).
    A query whose key at that offset does not exist or is masked (padding, the causal mask) attends to itself; one
    that may not attend to itself either (a padding query) keeps the head's own map.

    The replacement goes through the attention's mask hook point (one mask per head, :func:`core.hooks.mask`): every
    key but the chosen one gets −∞, so the softmax gives it exactly 1 whatever the head's scores; the values, W_O
    and every other head are untouched."""
    n_layers, n_heads = model.cfg.n_layers(stack), model.cfg.n_heads
    by_layer: dict[int, dict[int, int]] = {}
    for (layer, head), off in patterns.items():
        if not (0 <= int(layer) < n_layers and 0 <= int(head) < n_heads):
            raise ValueError(f"no head L{layer}H{head}: the {stack} has {n_layers} layers of {n_heads} heads")
        by_layer.setdefault(int(layer), {})[int(head)] = int(off)
    out: dict = {}
    for layer, heads in sorted(by_layer.items()):
        out.update(hooks.mask(f"{stack}.{layer}.self_attn", _one_hot_masks(heads, n_heads)))
    return out


def _one_hot_masks(heads: dict[int, int], n_heads: int):
    """The mask hook of :func:`fixed_pattern_hooks` for one attention: ``[B, 1, Tq, Tk]`` → ``[B, H, Tq, Tk]``."""
    def fn(m, _name):
        b, _, tq, tk = m.shape
        out = m.expand(b, n_heads, tq, tk).clone()
        allowed = m[:, 0] > float("-inf")  # [B, Tq, Tk]
        own = torch.arange(tq, device=m.device) + (tk - tq)  # a query's own key (after a cache's past keys)
        own_ok = allowed.gather(-1, own[None, :, None].expand(b, tq, 1))[..., 0]
        for head, off in heads.items():
            key = own + off
            inside = (key >= 0) & (key < tk)
            key = key.clamp(0, tk - 1)
            ok = inside[None] & allowed.gather(-1, key[None, :, None].expand(b, tq, 1))[..., 0]
            target = torch.where(ok, key[None].expand(b, tq), own[None].expand(b, tq))
            one_hot = torch.full((b, tq, tk), float("-inf"), dtype=m.dtype, device=m.device)
            one_hot.scatter_(-1, target[..., None], 0.0)
            out[:, head] = torch.where((ok | own_ok)[..., None], one_hot, out[:, head])
        return out
    return fn


def replacement_study(model, batch, shares: torch.Tensor, *, threshold: float = POSITIONAL_SHARE,
                      stack: str = "encoder", heads=None, progress=None) -> dict:
    """Raganato-style replacement, measured on a held-out ``batch`` (:class:`core.training.tasks.Batch`, teacher
    forcing): the loss and token accuracy with every head (``base``), and per head (all of them, or ``heads``
    ``[(layer, head), …]``) with its map replaced by its best fixed pattern (``fixed``, :func:`fixed_pattern_hooks`)
    and, as a yardstick, with the head switched off (``off``: its output × 0). ``together``: groups of heads
    replaced at once and switched off at once: every head whose best pattern holds at least ``threshold`` of its
    attention (``shares`` from :func:`offset_shares`; a group with no head is listed with ``fixed`` and ``off``
    None), the quarter of the heads with the largest such share, and every head. ``progress(k, n)`` after each
    pass."""
    from .probes.heads import batch_loss
    best, share = best_patterns(shares)
    n_layers, n_heads = best.shape
    every = [(li, hi) for li in range(n_layers) for hi in range(n_heads)]
    chosen = every if heads is None else [(int(li), int(hi)) for li, hi in heads]
    ranked = sorted(every, key=lambda h: (-float(share[h]), h))
    groups = [("share", [h for h in every if float(share[h]) >= threshold]),
              ("quarter", sorted(ranked[:max(1, len(every) // 4)])), ("all", every)]
    total = 1 + 2 * len(chosen) + 2 * sum(bool(g) for _, g in groups)
    done = [0]

    def measure(patterns=None, off=()):
        if patterns:
            with model.hooks(fixed_pattern_hooks(model, patterns, stack)):
                res = batch_loss(model, batch)
        else:
            res = batch_loss(model, batch, ablate=hooks.as_ablation((f"{stack}.{li}.self_attn", hi) for li, hi in off)
                             or None)
        done[0] += 1
        if progress is not None:
            progress(done[0], total)
        return {"loss": res[0], "accuracy": res[1]}

    base = measure()
    rows = [{"layer": li, "head": hi, "offset": int(best[li, hi]), "share": float(share[li, hi]),
             "fixed": measure({(li, hi): int(best[li, hi])}), "off": measure(off=[(li, hi)])} for li, hi in chosen]
    together = [{"group": name, "heads": [list(h) for h in group],
                 "fixed": measure({h: int(best[h]) for h in group}) if group else None,
                 "off": measure(off=group) if group else None} for name, group in groups]
    return {"base": base, "heads": rows, "together": together, "threshold": threshold}


# ------------------------------------------------------------------ verbs and their direct objects
def verb_object_frames(corpus) -> tuple[str, ...]:
    """The frames of a broad generated corpus (:mod:`core.data.broad`) whose template names a verb and its direct
    object: a ``{verb…}`` field and ``{B}`` / ``{Bpl}`` ("The {A} {verbpast} the {B}.", "The {B} that I {verbpast}
    was {adj}.")."""
    return tuple(name for name, f in corpus.FRAMES.items()
                 if "{verb" in f.en and ("{B}" in f.en or "{Bpl}" in f.en))


def _clean(word: str) -> str:
    return word.strip(".,!?;:«»\"").lower()


def role_positions(tokenizer, pair, corpus) -> dict | None:
    """Where the verb and its direct object are in one generated sentence ``pair`` (a :class:`core.data.broad.Pair`
    of a :func:`verb_object_frames` frame), read from its frame's template: ``{"text", "ids"`` (the encoder input,
    ``[EOS]`` last), ``"verb"`` (the token positions of the verb's first word: "looked" of "looked at"),
    ``"object"`` (the positions of the object noun's tokens), ``"after"`` (the object follows the verb),
    ``"frame"}``. The template's words before a field say which word of the sentence it is; each role word is checked
    against the lexicon's form, and a sentence where they differ gives None."""
    spec = pair.spec
    frame = corpus.FRAMES.get(getattr(spec, "frame", None) or "")
    if frame is None or spec.get("verb") is None or spec.get("B") is None:
        return None
    lex = corpus.lexicon()
    verb, noun = lex.verbs[spec["verb"]], lex.nouns[spec["B"]]
    words = frame.en.split()
    forms = {"{verbpast}": verb.en_past, "{verb3sg}": verb.en_3sg, "{verb}": verb.en}
    at_verb = next((i for i, w in enumerate(words) if _clean(w) in forms), None)
    at_obj = next((i for i, w in enumerate(words) if _clean(w) in ("{b}", "{bpl}")), None)
    if at_verb is None or at_obj is None:
        return None
    verb_form = forms[_clean(words[at_verb])].split()
    noun_form = noun.en_pl if _clean(words[at_obj]) == "{bpl}" else noun.en
    if at_obj > at_verb:  # a phrasal verb ("looked at") takes two words of the sentence
        at_obj += len(verb_form) - 1
    text = normalize_text(pair.src)
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    if max(at_verb, at_obj) >= len(spans) or _clean(text[slice(*spans[at_verb])]) != verb_form[0].lower() \
            or _clean(text[slice(*spans[at_obj])]) != noun_form.lower():
        return None
    enc = tokenizer.hf.encode(text, add_special_tokens=False)

    def tokens_of(word: int) -> list[int]:
        a, b = spans[word]
        raw = text[a:b]
        a += len(raw) - len(raw.lstrip(".,!?;:«»\""))
        b -= len(raw) - len(raw.rstrip(".,!?;:«»\""))
        return [i for i, (s, e) in enumerate(enc.offsets) if s < b and e > a]

    return {"text": text, "ids": list(enc.ids) + [EOS], "verb": tokens_of(at_verb), "object": tokens_of(at_obj),
            "after": at_obj > at_verb, "frame": frame.name}


def verb_object_items(tokenizer, corpus, lang: str, *, split: str = "test", first: int = 1500) -> list[dict]:
    """:func:`role_positions` of every verb–object sentence among the first ``first`` sentences of ``split`` of a
    broad ``corpus`` in ``lang`` (sentences never trained on when ``split`` is valid or test)."""
    frames = set(verb_object_frames(corpus))
    pairs = [p for p in corpus.generate(lang, split, first=first) if p.frame in frames]
    return [item for p in pairs if (item := role_positions(tokenizer, p, corpus)) is not None]


def verb_object_scores(model, items: list[dict], batch: int = 64) -> dict:
    """Per head (``layers × heads`` lists), the attention from a verb to its direct object: on each sentence of
    ``items`` (:func:`role_positions`) the weight from the verb's token(s) to the object's tokens, summed over the
    object's tokens and averaged over the verb's, then averaged over the sentences where the object follows the
    verb (``after``) and where it comes before (``before``: "The apple that I ate"); ``score`` is the mean of the two,
    so a head that only looks a fixed distance ahead cannot reach 1. ``n_after`` / ``n_before``: how many sentences
    of each kind (a side with none is left out of ``score``). ``uniform`` (and ``uniform_after`` /
    ``uniform_before``): what the same average gives a head that spreads its attention evenly over the sentence
    (object tokens ÷ sentence tokens, ``[EOS]`` included) — the level a head must beat to be said to find objects."""
    from .training.tasks import pad_rows
    n_layers, n_heads = model.cfg.n_layers("encoder"), model.cfg.n_heads
    sums = {True: torch.zeros(n_layers, n_heads), False: torch.zeros(n_layers, n_heads)}
    counts, even = {True: 0, False: 0}, {True: 0.0, False: 0.0}
    for start in range(0, len(items), batch):
        part = items[start:start + batch]
        w = encoder_maps(model, pad_rows([it["ids"] for it in part]))
        for i, it in enumerate(part):
            rows = w[:, i][:, :, it["verb"]][..., it["object"]]  # [L, H, verb tokens, object tokens]
            sums[it["after"]] += rows.sum(-1).mean(-1)
            counts[it["after"]] += 1
            even[it["after"]] += len(it["object"]) / len(it["ids"])
    sides = {side: key for side, key in (("after", True), ("before", False)) if counts[key]}
    if not sides:
        raise ValueError("no sentence with a verb and its object to measure")
    out = {"score": (sum(sums[k] / counts[k] for k in sides.values()) / len(sides)).tolist(),
           "uniform": sum(even[k] / counts[k] for k in sides.values()) / len(sides),
           "n_after": counts[True], "n_before": counts[False]}
    for side, key in sides.items():
        out[side], out[f"uniform_{side}"] = (sums[key] / counts[key]).tolist(), even[key] / counts[key]
    return out


# ------------------------------------------------------------------ the whole measurement, as shipped
def _broad_corpus(ck):
    """(corpus module, language) of a translator trained on the broad corpus (its checkpoint's task and release,
    :func:`core.data.corpus_of`); ValueError for any other model."""
    from .data import corpus_of, lang_of
    task = str(ck.meta.get("task", ""))
    if ck.model.cfg.kind != "encoder-decoder" or task not in ("en-fr", "en-de"):
        raise ValueError("this measurement reads a translator trained on the broad English→French or English→German "
                         "corpus (en-fr, en-de)")
    data, lang = corpus_of(ck.meta), lang_of(task)
    if not hasattr(data, "FRAMES"):
        raise ValueError("this measurement reads a translator trained on the broad English→French or English→German "
                         "corpus (en-fr, en-de)")
    return data, lang


def heldout_batch(ck, first: int | None = None):
    """The held-out batch of a broad translator (:class:`core.training.tasks.Batch`, source ``… [EOS]``): the first
    ``first`` (default :data:`ENCODER_SPEC`'s) sentence pairs of its own corpus's valid split, in the order the
    corpus draws them (sentences it never trained on)."""
    from .training.tasks import seq2seq_batch
    data, lang = _broad_corpus(ck)
    pairs = data.generate(lang, ENCODER_SPEC["split"], first=first or ENCODER_SPEC["first"])
    return seq2seq_batch([(ck.tokenizer.encode(p.src), ck.tokenizer.encode(p.tgt)) for p in pairs])


def encoder_heads(ck, progress=None) -> dict:
    """What the "Heads that language models grow" page shows about a broad translator's encoder, measured from its
    weights with :data:`ENCODER_SPEC`'s settings (the JSON entry ``encoder_heads`` of its ``summaries.json``): the
    offset shares of every head on the held-out batch (:func:`heldout_batch`), the verb → object scores on the test
    split's verb–object sentences with one example sentence of each kind, and the replacement study
    (:func:`replacement_study`). ``progress(k, n)``: replacement passes."""
    data, lang = _broad_corpus(ck)
    spec = ENCODER_SPEC
    batch = heldout_batch(ck)
    shares = offset_shares(encoder_maps(ck.model, batch.src), batch.src.ne(ck.model.cfg.pad_id))
    items = verb_object_items(ck.tokenizer, data, lang, split=spec["verb_object_split"],
                              first=spec["verb_object_first"])
    vo = verb_object_scores(ck.model, items)
    vo["examples"] = [{k: it[k] for k in ("text", "verb", "object", "after", "frame")}
                      for it in (next((x for x in items if x["after"]), None),
                                 next((x for x in items if not x["after"]), None)) if it is not None]
    study = replacement_study(ck.model, batch, shares, threshold=spec["threshold"], progress=progress)
    return {"spec": dict(spec), "shares": shares.tolist(), "verb_object": vo, "replacement": study}


def shipped_encoder_heads(ck, name: str) -> dict | None:
    """The ``encoder_heads`` entry of the model's ``summaries.json`` (:func:`encoder_heads`), when it was measured on
    exactly these weights with :data:`ENCODER_SPEC`; else None."""
    from .probes import summaries
    entry = summaries.part(ck, name, "encoder_heads")
    return entry if entry is not None and entry.get("spec") == ENCODER_SPEC else None


# ------------------------------------------------------------------ command line
CARD = {"seq_len": 100, "batch": 32, "seed": 0, "threshold": 0.4, "windows": 256}  # what an lm card measures


def card_heads(ck, stream: torch.Tensor | None = None, windows: int | None = None) -> dict:
    """What a language model's card says about its heads (Olsson et al. 2022's measures, ``CARD``'s settings): the
    best induction and previous-token heads (layer, head, score), the loss on the first and second copy of repeated
    random tokens, the second copy's loss with the induction heads (score ≥ the threshold, else the single best one)
    switched off, and, given a held-out ``stream``, the in-context score (loss at token 500 − at token 50, or the
    latest token the model's context allows) over ``windows`` windows of it (default: the card's)."""
    rep = report(ck, seq_len=CARD["seq_len"], batch=CARD["batch"], seed=CARD["seed"], k=1, threshold=CARD["threshold"])
    best = {kind: rep["top_heads"][kind][0] for kind in ("induction", "previous_token")}
    heads, off = rep["ablation"]["induction_heads"], rep["ablation"]["induction_heads_off"]
    if not heads:  # none reaches the threshold: the best one alone
        heads = [[best["induction"]["layer"], best["induction"]["head"]]]
        off = ablate_heads_loss(ck.model, heads, seq_len=CARD["seq_len"], batch=CARD["batch"], seed=CARD["seed"],
                                **framing(ck))
    out = {"settings": dict(CARD), "best_induction": best["induction"], "best_previous_token": best["previous_token"],
           "first_copy_loss": rep["induction_loss"]["first_copy"], "second_copy_loss": rep["induction_loss"]["second_copy"],
           "heads_off": [list(h) for h in heads], "second_copy_loss_heads_off": off["second_copy"],
           "chance_loss": math.log(ck.model.cfg.vocab_size - framing(ck)["vocab_low"])}
    if stream is not None:
        out["in_context"] = card_in_context(ck.model, stream, windows)
    return out


def card_in_context(model, stream: torch.Tensor, windows: int | None = None) -> dict:
    """The in-context score a card reports (:func:`in_context_score`): loss at token 500 − at token 50, or at the
    latest token ``model``'s context allows − at half of it, over ``windows`` windows of ``stream`` (default: the
    card's)."""
    late = min(500, model.cfg.max_len - 2)
    return in_context_score(model, stream, early=min(50, late // 2), late=late, windows=windows or CARD["windows"])


# The in-context score the suite re-measures of a card (meta.heads_sample): the first 64 of its windows, 13 s on one
# thread of a 120 GFLOP/s machine where the card's 256 take 53 s.
SAMPLE_WINDOWS = 64
MAX_BATCH = 1024
MAX_BYTES = 1 << 30  # what one measurement's traced batch may hold (core.io.budget's per-sequence estimate × batch)


def check_memory(ck, seq_len: int, batch: int) -> None:
    """Refuse (ValueError) a ``batch`` of repeated sequences whose traces would hold more than :data:`MAX_BYTES`;
    a sequence longer than the model reads is left to :func:`head_scores`' own message."""
    from .io import budget
    frame = framing(ck)
    t = (frame["bos"] is not None) + 2 * seq_len + (frame["eos"] is not None)
    if t > ck.model.cfg.max_len:
        return
    per_row = max(1, budget.estimate(ck.model, t)["trace"])
    if batch * per_row > MAX_BYTES:
        raise ValueError(f"--batch {batch:,} of {t}-token sequences would hold about {batch * per_row / 2 ** 30:.1f} "
                         f"GiB of attention traces; at --seq-len {seq_len} the most is --batch {MAX_BYTES // per_row:,}")


def main(argv=None) -> int:
    """Entry of ``python -m core.find_heads``: the JSON report on the last line; a bad input: one ``error:`` line,
    exit 2."""
    ap = cli.Parser(prog="python -m core.find_heads", description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="a model name (lm, minilm, …) or a checkpoint folder")
    ap.add_argument("--seq-len", type=cli.ascii_int, default=24, help="random tokens per copy (default 24)")
    ap.add_argument("--seed", type=cli.ascii_int, default=0)
    ap.add_argument("--batch", type=cli.ascii_int, default=16, help="random sequences averaged over (default 16)")
    ap.add_argument("--text", default=None, help="measure the previous-token score on this text instead")
    ap.add_argument("--top", type=cli.ascii_int, default=3, help="heads named per kind (default 3)")
    args = ap.parse_args(argv)
    try:
        for flag, value, (lo, hi) in (("--seq-len", args.seq_len, (2, 1 << 16)), ("--seed", args.seed, (0, 2 ** 63 - 1)),
                                      ("--batch", args.batch, (1, MAX_BATCH)), ("--top", args.top, (1, 1000))):
            if not lo <= value <= hi:
                raise ValueError(f"{flag} must be between {lo:,} and {hi:,}, got {value:,}")
        ck = registry.load(args.model)
        check_memory(ck, args.seq_len, args.batch)
        data = report(ck, seq_len=args.seq_len, seed=args.seed, batch=args.batch, text=args.text, k=args.top)
        print(jsonio.dumps(data, ensure_ascii=False))  # strict JSON: a NaN would be printed as null
    except (ValueError, OSError) as e:
        return cli.refuse(e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
