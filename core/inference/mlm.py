"""Masked-LM inference: fill the ``[MASK]`` positions of a sentence with an encoder-only model, and measure
how much of each masked position's attention goes to the words on its *right* — the context a left-to-right
language model never sees (BERT, Devlin et al. 2019).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import torch

from ..io.budget import max_positions
from ..io.checkpoint import Checkpoint
from ..io.tokenizer import BOS, MASK, SPECIALS, normalize_text
from ..trace import Trace
from . import coverage

MASK_TEXT = re.compile(r"\[mask\]", re.IGNORECASE)


def encode_masked(tok, text: str) -> list[int]:
    """Token ids of ``text`` with each typed ``[MASK]`` (any case) read as the mask token.

    A mask takes the place of a whole word, word marker included: in training, a masked word's leading
    ``▁`` went with it. Encoded as is, "dog [MASK] tired" would put a lone ``▁`` token in front of the mask,
    an input the model never saw; "too [MASK]." one after it (the text after a special token is encoded as if
    it began a word). A lone marker next to a mask is dropped.
    """
    ids = tok.encode(MASK_TEXT.sub("[MASK]", text))
    marker = tok.token_to_id("▁")
    return [t for i, t in enumerate(ids)
            if not (t == marker and MASK in (ids[i - 1] if i else None, ids[i + 1] if i + 1 < len(ids) else None))]


def mask_positions(ids, positions) -> list[int]:
    """``ids`` with the tokens at ``positions`` replaced by ``[MASK]`` (out-of-range positions are an error)."""
    ids = list(ids)
    for p in positions:
        if not 0 <= p < len(ids):
            raise ValueError(f"position {p} is outside the sentence (0 … {len(ids) - 1})")
        ids[p] = MASK
    return ids


@dataclass
class Fill:
    """The top-k candidates at one predicted position (ids and probabilities, most probable first) and the
    token that was there, when known."""
    position: int
    original: int | None  # the token that was there before masking, when known
    ids: list[int]  # top-k candidate ids, most probable first
    probs: list[float]


@dataclass
class FillResult:
    """One masked-LM pass: the input ids (masks included), the candidates at each predicted position, the trace."""
    ids: list[int]  # the model's input, masks included
    fills: list[Fill]
    trace: Trace

    def best(self) -> list[int]:
        """The input with every mask replaced by its most probable token (all filled at once, as BERT predicts)."""
        ids = list(self.ids)
        for f in self.fills:
            ids[f.position] = f.ids[0]
        return ids


@torch.no_grad()
def fill(ck: Checkpoint, ids: list[int], originals: dict[int, int] | None = None, top_k: int = 10,
         positions: list[int] | None = None) -> FillResult:
    """One traced forward pass of an encoder-only model; the top-``k`` tokens at every ``[MASK]`` (or at
    ``positions``: BERT also predicts the chosen tokens it left unchanged or swapped for a random one)."""
    model = ck.model
    if model.cfg.kind != "encoder-only":
        raise ValueError("filling masks needs an encoder-only (BERT-style) model")
    if not ids:
        raise ValueError("the sentence is empty")
    if len(ids) > max_positions(model):
        raise ValueError(f"the sentence has {len(ids)} tokens; this model reads at most {max_positions(model)}")
    model.eval()
    device = model.device
    out = model(torch.tensor([ids], device=device), trace=True)
    probs = out.logits[0].float().softmax(-1).cpu()
    fills = []
    for p in positions if positions is not None else [i for i, t in enumerate(ids) if t == MASK]:
        top = probs[p].topk(min(top_k, probs.shape[-1]))
        fills.append(Fill(p, (originals or {}).get(p), top.indices.tolist(), top.values.tolist()))
    return FillResult(list(ids), fills, out.trace.to("cpu"))


def right_share(trace: Trace, position: int) -> torch.Tensor:
    """``[layers, heads]``: the share of ``position``'s self-attention that goes to tokens after it.

    A causal (left-to-right) model's share is exactly 0 by construction; a bidirectional encoder is free
    to look both ways.
    """
    return trace.stacked("encoder")[:, 0, :, position, position + 1:].sum(-1)


@torch.no_grad()
def left_only(lm: Checkpoint, prefix_ids: list[int], top_k: int = 10) -> tuple[list[int], list[float]]:
    """What a causal LM predicts at the same place, reading only the words before it (``[BOS]`` + prefix)."""
    if lm.model.cfg.kind != "decoder-only":
        raise ValueError("the left-only comparison needs a decoder-only (GPT-style) model")
    lm.model.eval()
    ids = [BOS] + list(prefix_ids)[-(max_positions(lm.model) - 1):]
    device = lm.model.device
    probs = lm.model(torch.tensor([ids], device=device)).logits[0, -1].float().softmax(-1).cpu()
    top = probs.topk(min(top_k, probs.shape[-1]))
    return top.indices.tolist(), top.values.tolist()


@torch.no_grad()
def both_sides_score(ck: Checkpoint, rows: list[list[int]], lm: Checkpoint | None = None, seed: int = 0,
                     progress=None) -> dict:
    """How much the words right of a hidden word help: one random word of each row (rows of at least 6 tokens;
    never the first or the last three) is masked and predicted three ways — by the masked LM reading the whole
    row, by the masked LM reading the row cut after the mask, and (``lm``) by a causal LM reading the words
    before it. Returns top-1 accuracies and the mean gain in log-probability of the hidden word from reading the
    right side (nats). ``progress(k, n, partial)`` is called after each usable row (``partial``: the result over
    the first k rows, the same keys as the return value)."""
    model = ck.model.eval()
    device = model.device
    gen = torch.Generator().manual_seed(seed)

    def probs(m, ids, at):
        return m(torch.tensor([ids], device=device)).logits[0, at].float().log_softmax(-1).cpu()

    full = cut = left = 0
    gains = []
    usable = [r for r in rows if len(r) >= 6]

    def result(n):
        out = {"n": n, "full": full / n, "cut": cut / n, "gain": sum(gains) / n}
        if lm is not None:
            out["left_lm"] = left / n
        return out

    for row in usable:
        pos = int(torch.randint(1, len(row) - 3, (1,), generator=gen))
        a = probs(model, mask_positions(row, [pos]), pos)
        b = probs(model, mask_positions(row[:pos + 1], [pos]), pos)
        full += int(a.argmax()) == row[pos]
        cut += int(b.argmax()) == row[pos]
        gains.append(float(a[row[pos]] - b[row[pos]]))
        if lm is not None:
            prefix = lm.tokenizer.encode(ck.tokenizer.decode(row[:pos]))
            guess, _ = left_only(lm, prefix, top_k=1)
            left += lm.tokenizer.id_to_token(guess[0]) == ck.tokenizer.id_to_token(row[pos])
        if progress is not None:
            progress(len(gains), len(usable), result(len(gains)))
    n = len(gains)
    if not n:
        raise ValueError("no row has the 6 tokens this measurement needs")
    return result(n)


@dataclass
class PairResult:
    """BERT's next-sentence prediction for one pair: input ids and segment types, ``p(B follows A)``, the
    trace, and whether the pair was cut to fit."""
    ids: list[int]  # [BOS] A [EOS] B [EOS]
    types: list[int]  # 0 for [BOS] A [EOS], 1 for B [EOS]
    p_next: float  # probability that B follows A
    trace: Trace
    cut: bool  # the pair was longer than the model reads


@torch.no_grad()
def next_sentence(ck: Checkpoint, a: str, b: str) -> PairResult:
    """BERT's next-sentence prediction: does sentence ``b`` follow ``a``? (A model with ``cfg.nsp``.)"""
    from ..training.tasks import pair_row
    model = ck.model
    if not model.cfg.nsp:
        raise ValueError("this model has no next-sentence head")
    ta, tb = encode_masked(ck.tokenizer, a), encode_masked(ck.tokenizer, b)
    if not ta or not tb:
        raise ValueError("both sentences need at least one word")
    ids, types = pair_row(ta, tb, max_positions(model))
    model.eval()
    device = model.device
    out = model(torch.tensor([ids], device=device), token_types=torch.tensor([types], device=device), trace=True)
    p = float(out.next_sentence[0].float().softmax(-1)[0])
    return PairResult(ids, types, p, out.trace.to("cpu"), len(ta) + len(tb) + 3 > len(ids))


def segment_share(trace: Trace, types: list[int]) -> torch.Tensor:
    """``[layers, heads]``: the mean share of the second segment's attention that goes to the first segment
    (its [BOS] … [EOS] included) — how much sentence B reads sentence A."""
    t = torch.tensor(types)
    weights = trace.stacked("encoder")[:, 0]  # [L, H, T, T]
    return weights[:, :, t.eq(1)][..., t.eq(0)].sum(-1).mean(-1)


# --------------------------------------------------------------------------- can BERT write?
# Wang & Cho (2019), "BERT has a mouth, and it must speak: BERT as a Markov random field language model": a masked LM
# has no left-to-right factorisation p(x_t | x_<t), but it can be made to write, one [MASK] at a time at the end of
# the text or by Gibbs-style resampling of a block of masks. A third model judges what each generator wrote.

@dataclass
class Generated:
    """A continuation written by one generator: the prompt's and the new token ids (the generator's own tokenizer,
    no frame); ``full``, prompt and new tokens decoded as one text; ``text``, the continuation (``full`` less the
    decoded prompt, with the space in front of it when there is one); for Gibbs sampling, the first fill."""
    method: str
    prompt: list[int]
    ids: list[int]  # the generated tokens only
    text: str  # the continuation, its leading space kept: prompt + text reads as the whole
    full: str  # prompt + continuation, decoded as one text
    initial: list[int] | None = None  # Gibbs: the fill before the first sweep


def _specials(tok) -> list[int]:
    """Ids a generator never writes: every special token (ours: [PAD] … [MASK]; BERT's: [PAD] [UNK] [CLS] …)."""
    return sorted(getattr(tok, "special_ids", range(len(SPECIALS))))


def _mask_id(tok) -> int:
    return getattr(tok, "mask_id", MASK)


def _lead(tok) -> int:
    """How many tokens the tokenizer's frame puts before a sentence (ours 0, BERT's [CLS] 1)."""
    return tok.frame([-1]).index(-1)


def pick(logits: torch.Tensor, temperature: float, gen: torch.Generator | None, never=()) -> int:
    """One token from ``logits [vocab]``: the most probable (``temperature`` 0) or a draw from
    ``softmax(logits / temperature)`` with ``gen``; the ``never`` ids are excluded either way."""
    if temperature < 0:
        raise ValueError("temperature must be ≥ 0 (0: always the most probable token)")
    logits = logits.float().cpu().clone()
    logits[list(never)] = float("-inf")
    if temperature == 0:
        return int(logits.argmax())
    return int(torch.multinomial((logits / temperature).softmax(-1), 1, generator=gen))


def _written(tok, method: str, prompt: list[int], new: list[int], initial=None) -> Generated:
    full, head = tok.decode(list(prompt) + list(new)), tok.decode(list(prompt))
    text = full[len(head):] if full.startswith(head) else " " + tok.decode(list(new))
    return Generated(method, list(prompt), list(new), text if head else text.lstrip(), full, initial)


def _check_room(model, n_tokens: int) -> None:
    if n_tokens > max_positions(model):
        raise ValueError(f"prompt and continuation make {n_tokens} tokens; this model reads at most "
                         f"{max_positions(model)}: shorten the prompt or ask for fewer tokens")


def _encoder(ck: Checkpoint):
    if ck.model.cfg.kind != "encoder-only":
        raise ValueError("this needs an encoder-only (BERT-style) model")
    return ck.model.eval()


def _decoder(ck: Checkpoint):
    if ck.model.cfg.kind != "decoder-only":
        raise ValueError("this needs a decoder-only (GPT-style) model")
    return ck.model.eval()


def _logits_at(model, ids: list[int], positions: list[int]) -> torch.Tensor:
    """``[len(positions), vocab]``: an encoder-only model's output logits at ``positions`` of one input."""
    return model(torch.tensor([ids], device=model.device)).logits[0, positions].float().cpu()


@torch.no_grad()
def write_left_to_right(ck: Checkpoint, prompt: list[int], n: int, temperature: float = 0.0,
                        seed: int = 0) -> Generated:
    """A masked LM made to write left to right: put one ``[MASK]`` after the text so far (inside the model's frame,
    ``tok.frame``), fill it from the model's prediction there (:func:`pick`: the most probable token at
    ``temperature`` 0, else a draw seeded with ``seed``; never a special token), and repeat ``n`` times. Nothing is
    right of the mask, so the model predicts from the left side only — a view its training never gave it: every
    masked word it learnt from had the rest of its sentence around it (Wang & Cho 2019)."""
    model, tok = _encoder(ck), ck.tokenizer
    never, mask, lead = _specials(tok), _mask_id(tok), _lead(tok)
    _check_room(model, len(tok.frame(list(prompt) + [mask] * n)))
    gen = torch.Generator().manual_seed(seed)
    new: list[int] = []
    for _ in range(n):
        logits = _logits_at(model, tok.frame(list(prompt) + new + [mask]), [lead + len(prompt) + len(new)])[0]
        new.append(pick(logits, temperature, gen, never))
    return _written(tok, "left to right", prompt, new)


@torch.no_grad()
def write_gibbs(ck: Checkpoint, prompt: list[int], n: int, sweeps: int = 3, temperature: float = 1.0,
                seed: int = 0) -> Generated:
    """Wang & Cho's (2019) Gibbs-style sampling from a masked LM. The prompt followed by ``n`` ``[MASK]`` tokens
    (inside the model's frame) is first filled all at once from one pass, each mask from its own prediction (as
    :meth:`FillResult.best`, but picked with :func:`pick`): the ``initial`` fill. Then each of ``sweeps`` sweeps
    visits the ``n`` generated positions once, in a random order, and at each one masks it and redraws it from the
    model's conditional given every other token (the prompt and the other generated ones). ``temperature`` 1 draws
    from the model's own conditional (the Gibbs step), 0 takes its most probable token; one ``torch.Generator``
    seeded with ``seed`` makes both the order and the draws. ``sweeps`` 0 returns the initial fill."""
    if sweeps < 0:
        raise ValueError("the number of sweeps must be ≥ 0")
    model, tok = _encoder(ck), ck.tokenizer
    never, mask, lead = _specials(tok), _mask_id(tok), _lead(tok)
    ids = tok.frame(list(prompt) + [mask] * n)
    _check_room(model, len(ids))
    gen = torch.Generator().manual_seed(seed)
    block = list(range(lead + len(prompt), lead + len(prompt) + n))
    for p, logits in zip(block, _logits_at(model, ids, block)):
        ids[p] = pick(logits, temperature, gen, never)
    initial = [ids[p] for p in block]
    for _ in range(sweeps):
        for k in torch.randperm(n, generator=gen).tolist():
            ids[block[k]] = mask
            ids[block[k]] = pick(_logits_at(model, ids, [block[k]])[0], temperature, gen, never)
    return _written(tok, f"Gibbs, {sweeps} sweeps", prompt, [ids[p] for p in block], initial)


@torch.no_grad()
def write_causal(lm: Checkpoint, prompt: list[int], n: int, temperature: float = 0.0, seed: int = 0) -> Generated:
    """A decoder-only (GPT-style) model's ``n`` next tokens after ``[BOS]`` + ``prompt``, each picked by the same
    rule as the masked LM's (:func:`pick`, special tokens excluded, so it writes exactly ``n`` tokens too)."""
    model = _decoder(lm)
    _check_room(model, 1 + len(prompt) + n)
    gen = torch.Generator().manual_seed(seed)
    ids, never = [BOS] + list(prompt), _specials(lm.tokenizer)
    for _ in range(n):
        ids.append(pick(model(torch.tensor([ids], device=model.device)).logits[0, -1], temperature, gen, never))
    return _written(lm.tokenizer, "causal", prompt, ids[1 + len(prompt):])


def continuation_tokens(tok, prompt: str, continuation: str) -> tuple[list[int], int, int]:
    """How a model's tokenizer splits ``prompt + continuation`` for scoring: (its token ids of the whole text, ``k``,
    bytes): the continuation is the tokens from ``k`` on, after the leading tokens the text shares with the
    prompt's own tokens, and ``bytes`` counts the UTF-8 bytes of the text those tokens cover, the space in front of
    the first included (so the count does not depend on the tokenizer when the continuation starts a word)."""
    text = normalize_text(prompt + continuation)
    enc = tok.hf.encode(text, add_special_tokens=False)
    ids, head = enc.ids, tok.encode(prompt)
    k = 0
    while k < min(len(ids), len(head)) and ids[k] == head[k]:
        k += 1
    if k == len(ids):
        raise ValueError("there is no continuation to score")
    start = enc.offsets[k][0]
    start -= start > 0 and text[start - 1] == " "
    return ids, k, len(text[start:].encode("utf-8"))


@torch.no_grad()
def judge_bits_per_byte(judge: Checkpoint, prompt: str, continuation: str) -> dict:
    """How surprised a causal LM, the judge, is by ``continuation`` after ``prompt``: it reads ``[BOS]`` and its own
    tokens of ``prompt + continuation``; the continuation's tokens are split off as in :func:`continuation_tokens`.
    Returns their summed −log₂ p, each token given all before it, prompt included (``bits``), the UTF-8 ``bytes``
    they cover, ``bits_per_byte`` = bits / bytes and ``tokens``. Bits per byte do not depend on any tokenizer, so
    texts written by models with other tokenizers compare."""
    model = _decoder(judge)
    ids, k, n_bytes = continuation_tokens(judge.tokenizer, prompt, continuation)
    _check_room(model, 1 + len(ids))
    logp = model(torch.tensor([[BOS] + ids], device=model.device)).logits[0, :-1].float().log_softmax(-1).cpu()
    bits = -float(logp[torch.arange(k, len(ids)), torch.tensor(ids[k:])].sum()) / math.log(2)
    return {"bits": bits, "bytes": n_bytes, "bits_per_byte": bits / n_bytes, "tokens": len(ids) - k}


@torch.no_grad()
def pseudo_bits_per_byte(ck: Checkpoint, prompt: str, continuation: str) -> dict:
    """A masked LM's pseudo-log-likelihood (Salazar et al. 2020) of ``continuation`` after ``prompt``: each
    continuation token (the model's own tokens, split off as in :func:`continuation_tokens`) masked in turn and
    predicted from all the other tokens; −log₂ of the product of those probabilities, per UTF-8 byte (the keys of
    :func:`judge_bits_per_byte`). Not a judge between generators: Gibbs sampling draws from exactly these
    conditionals, so the masked LM grades its own kind of text."""
    model, tok = _encoder(ck), ck.tokenizer
    ids, k, n_bytes = continuation_tokens(tok, prompt, continuation)
    framed, lead = tok.frame(ids), _lead(tok)
    _check_room(model, len(framed))
    at = torch.arange(lead + k, lead + len(ids))
    rows = torch.tensor([framed] * len(at))
    rows[torch.arange(len(at)), at] = _mask_id(tok)
    logp = model(rows.to(model.device)).logits.float().log_softmax(-1).cpu()
    bits = -float(logp[torch.arange(len(at)), at, torch.tensor(ids[k:])].sum()) / math.log(2)
    return {"bits": bits, "bytes": n_bytes, "bits_per_byte": bits / n_bytes, "tokens": len(ids) - k}


def shuffle_words(text: str, seed: int = 0) -> str:
    """``text``'s words (split at spaces; punctuation stays on its word) in a random order drawn with ``seed``,
    another order than the given one whenever the words are not all the same."""
    words = text.split()
    gen = torch.Generator().manual_seed(seed)
    out = words
    for _ in range(100):
        out = [words[i] for i in torch.randperm(len(words), generator=gen).tolist()]
        if out != words or len(set(words)) < 2:
            break
    return " ".join(out)


WRITERS = ("causal LM", "BERT, left to right", "BERT, Gibbs", "shuffled words", "the judge's own")
ONE_PASS = "BERT, one pass"  # the third writer's name at 0 sweeps: the block filled at once, no Gibbs step taken


def typed_specials(tok, text: str) -> list[str]:
    """:func:`core.inference.coverage.typed_specials`: the special tokens that ``tok`` makes of the literal ``text``,
    each once ([UNK] left out). One check for every page; this one refuses a prompt that holds any."""
    return coverage.typed_specials(tok, text)


@torch.no_grad()
def can_bert_write(masked: Checkpoint, causal: Checkpoint, judge: Checkpoint, prompt: str, n: int = 12,
                   sweeps: int = 3, temperature: float = 0.7, seed: int = 0) -> dict:
    """Wang & Cho's question, measured: continue ``prompt`` by ``n`` tokens with a causal LM (``causal``) and with a
    masked LM (``masked``: :func:`write_left_to_right` and :func:`write_gibbs` with ``sweeps``), all with the same
    :func:`pick` rule (``temperature``, ``seed``), and have a third model, the ``judge``, score what each wrote.

    Measured: the judge's bits per byte of each continuation given the prompt (:func:`judge_bits_per_byte`) — how
    many bits per UTF-8 byte a causal LM needs to encode the continuation, reading its own tokens of the text left to
    right. Lower: more predictable, more like the English the judge has read. Fair: the judge wrote none of the
    three texts, one judge scores them all with the same rule, and bits per byte do not depend on a generator's
    tokenizer. (With ``causal`` trained on the masked LM's text and tokenizer — the bundled lm-tiny for mlm — the
    two generators differ in their training objective only.) Two references bracket the scale: the causal
    continuation's words shuffled (the same words, the order lost: a working judge scores it worse) and the judge's
    own continuation (its own sample under its own measure, the score it expects of text it would write itself; not
    a competitor). Caveat: the judge rewards predictable text, and repetitive text is predictable; read the texts.
    ``mlm_bits_per_byte``: the masked LM's pseudo-log-likelihood per byte (:func:`pseudo_bits_per_byte`), a second
    opinion that favours the masked LM's own texts (``None`` when a text is longer than the masked LM reads).

    The prompt is literal text for all three models: one that any of their tokenizers reads as a special token (a
    typed "[MASK]", "[CLS]", …) raises ValueError rather than reaching one model as a hidden word and another as
    letters. At ``sweeps`` 0 no Gibbs step is taken: the third writer is named :data:`ONE_PASS`, not "BERT, Gibbs".

    Returns ``{"prompt", "n", "sweeps", "temperature", "seed", "rows"}``; ``rows`` in the order of :data:`WRITERS`,
    each ``{"name", "text" (the continuation, leading space kept), "judge_bits_per_byte", "judge_bytes",
    "mlm_bits_per_byte", "reference" (True for the two references)}``."""
    prompt = normalize_text(prompt)
    typed = list(dict.fromkeys(t for ck in (masked, causal, judge) for t in typed_specials(ck.tokenizer, prompt)))
    if typed:
        raise ValueError(f"the prompt contains {', '.join(typed)}, which a model reads as its special token, not as "
                         "text: here the prompt is plain text for three models to continue (a [MASK] that hides a "
                         "word belongs in the sentence of section 1, Fill in the blank); write the words themselves")
    written = [write_causal(causal, causal.tokenizer.encode(prompt), n, temperature, seed),
               write_left_to_right(masked, masked.tokenizer.encode(prompt), n, temperature, seed),
               write_gibbs(masked, masked.tokenizer.encode(prompt), n, sweeps, temperature, seed)]
    texts = [g.text for g in written]
    texts.append((" " if prompt else "") + shuffle_words(texts[0], seed))
    texts.append(write_causal(judge, judge.tokenizer.encode(prompt), n, temperature, seed).text)
    rows = []
    names = WRITERS[:2] + ((WRITERS[2] if sweeps else ONE_PASS),) + WRITERS[3:]
    for name, text in zip(names, texts):
        score = judge_bits_per_byte(judge, prompt, text)
        try:
            pll = pseudo_bits_per_byte(masked, prompt, text)["bits_per_byte"]
        except ValueError:
            pll = None
        rows.append({"name": name, "text": text, "judge_bits_per_byte": score["bits_per_byte"],
                     "judge_bytes": score["bytes"], "mlm_bits_per_byte": pll, "reference": name in WRITERS[3:]})
    return {"prompt": prompt, "n": n, "sweeps": sweeps, "temperature": temperature, "seed": seed, "rows": rows}
