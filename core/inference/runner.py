"""Text in, Trace out: what every page and the inspect CLI run on the user's sentence."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..io.budget import max_positions
from ..io.checkpoint import Checkpoint
from ..io.tokenizer import BOS, EOS, normalize_text
from ..trace import Trace
from . import coverage, mlm, quality
from .decoding import greedy_batch


@dataclass
class Run:
    """Everything a page shows about one input: source and target ids and tokens, the trace, the output and
    next-token candidates, notices for the user, and the coverage of the input's words."""
    kind: str
    src_ids: list[int]
    tgt_ids: list[int]  # decoder input (starts with BOS); empty for encoder-only
    src_tokens: list[str]
    tgt_tokens: list[str]
    trace: Trace
    output: str = ""  # translation, or the predicted next token
    top_next: list[tuple[str, float]] = field(default_factory=list)  # next-token candidates after the input
    notices: list[str] = field(default_factory=list)  # truncation, unknown words: shown to the user
    # core.inference.coverage: {"unknown_words": [...], "known_share": float}; None: not known
    coverage: dict | None = None
    outside: bool = False  # the input has words the model never saw: its output is not a translation
    outside_label: str = ""  # how pages mark the output when outside ("outside what … — not a translation")

    def tokens(self, kind: str) -> tuple[list[str], list[str]]:
        """(query tokens, key tokens) of an attention kind."""
        if kind == "encoder":
            return self.src_tokens, self.src_tokens
        if kind == "decoder":
            return self.tgt_tokens, self.tgt_tokens
        return self.tgt_tokens, self.src_tokens


def vocabulary_notices(tok, text: str) -> list[str]:
    """Characters or words the tokenizer reads as [UNK] (which words the model never saw in training is
    :func:`coverage_notices`)."""
    unknown = tok.unknown_words(text)
    return ["Not in this model's vocabulary (shown as [UNK]): " + ", ".join(unknown[:10])] if unknown else []


def coverage_notices(ck: Checkpoint, text: str, name: str | None = None) -> tuple[dict | None, list[str]]:
    """(:func:`core.inference.coverage.for_checkpoint` of ``text``, the notices a page shows): a text that looks
    French or German named as such; the words of ``text`` the model never saw in training, named; for a
    broad-corpus translator, a sentence of known words in a shape it never saw; the written form of a special token
    ("[MASK]", "[EOS]") that the tokenizer turns into that token; and any remaining [UNK] pieces."""
    cov = coverage.for_checkpoint(ck, text)
    notices = [n for n in (coverage.language_notice(ck, text, name), coverage.notice(ck, cov, name),
                           coverage.shape_notice(ck, text, cov, name), coverage.special_notice(ck, text, name)) if n]
    named = set(cov["unknown_words"]) if cov else set()
    unk = [w for w in ck.tokenizer.unknown_words(text)  # what is left: symbols, emoji
           if not any(w.lower() in word for word in named)]
    if unk:
        notices.append("Not in this model's vocabulary (shown as [UNK]): " + ", ".join(unk[:10]))
    return cov, notices


def _clip(ids, limit, what, notices):
    if len(ids) > limit:
        notices.append(f"The {what} has {len(ids)} tokens; this model reads at most {limit}, "
                       f"so it was cut after token {limit}.")
        return ids[:limit]
    return ids


@torch.no_grad()
def run(ck: Checkpoint, src: str, tgt: str | None = None, *, ablate=None, layers=None) -> Run:
    """Tokenize, (translate if no target is given), and run one traced forward pass."""
    model, tok, cfg = ck.model, ck.tokenizer, ck.model.cfg
    model.eval()
    device = model.device
    if not normalize_text(src or ""):
        raise ValueError("Type a sentence first: the text is empty.")
    cov, notices = coverage_notices(ck, src)
    trace = Trace(layers)
    if cfg.kind == "encoder-decoder":
        src_ids = _clip(tok.encode(src), max_positions(model) - 1, "sentence", notices) + [EOS]
        s = torch.tensor([src_ids], device=device)
        if tgt and normalize_text(tgt):
            out_ids = _clip(tok.encode(tgt), max_positions(model) - 1, "target", notices)
        else:
            out_ids = greedy_batch(model, s, max_new=max_positions(model) - 1)[0]
        tgt_ids = [BOS] + out_ids
        out = model(s, torch.tensor([tgt_ids], device=device), trace=trace, ablate=ablate)
        probs = out.logits[0, -1].float().softmax(-1)
        output = tok.decode(out_ids)
        if not (tgt and normalize_text(tgt)) and ablate is None:  # the model's own translation: how sure is it?
            unsure = quality.notice(ck.meta, quality.confidence_from_logits(out.logits[0], out_ids))
            if unsure:
                notices.append(unsure)
    elif cfg.kind == "decoder-only":
        src_ids = [BOS] + _clip(tok.encode(src), max_positions(model) - 1, "text", notices)
        tgt_ids = src_ids
        out = model(torch.tensor([src_ids], device=device), trace=trace, ablate=ablate)
        probs = out.logits[0, -1].float().softmax(-1)
        output = tok.decode([int(probs.argmax())])
    else:
        ids = mlm.encode_masked(tok, src) if ck.meta.get("task") == "mlm" else tok.encode(src)  # typed [MASK]s
        src_ids = tok.frame(_clip(ids, max_positions(model) - (len(tok.frame([])) or 0), "sentence", notices))
        tgt_ids = []
        out = model(torch.tensor([src_ids], device=device), trace=trace, ablate=ablate)
        probs = None
        output = ""
    top = []
    if probs is not None:
        p, i = probs.topk(min(10, probs.numel()))
        top = [(tok.display([int(a)])[0], float(b)) for a, b in zip(i, p)]
    trace.to("cpu")
    src_tokens = tok.display(src_ids)
    tgt_tokens = tok.display(tgt_ids)
    if cfg.kind == "decoder-only":
        src_tokens = tgt_tokens
    outside = bool(cov and cov["unknown_words"])
    return Run(cfg.kind, src_ids, tgt_ids, src_tokens, tgt_tokens, trace, output, top, notices, cov, outside,
               coverage.outside_label(ck) if outside else "")


@torch.no_grad()
def forward_ids(model, src_ids: list[int] | None, tgt_ids: list[int] | None = None):
    """The traced forward pass (:class:`core.model.Output`, ``.trace`` filled) on one sentence's explicit ids: an
    encoder-decoder reads both; a one-stack model (GPT, BERT) reads its one sequence, ``src_ids`` or, when that is
    None, ``tgt_ids`` (a decoding prefix). The one place the lab runs a model on given ids with its trace."""
    device = model.device
    if model.cfg.kind == "encoder-decoder":
        return model(torch.tensor([src_ids], device=device), torch.tensor([tgt_ids], device=device), trace=True)
    return model(torch.tensor([src_ids if src_ids is not None else tgt_ids], device=device), trace=True)
