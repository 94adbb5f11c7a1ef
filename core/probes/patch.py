"""Activation patching: which heads *carry* the translator's il/elle decision (causal evidence per head).

Run sentence A ("… because it was too tired" → *il*) and sentence B ("… too wide" → *elle*). The
decision is read where the translator writes the pronoun: the decoder is teacher-forced on A's
reference translation up to the pronoun, and at that last position

    LD = log p(pronoun of A) − log p(pronoun of B)          (= the difference of the two logits)

is positive when the model prefers A's pronoun. Patching (Vig et al. 2020, causal mediation per
head; Meng et al. 2022, causal tracing per layer and position) re-runs A with one head's output
(its ``….heads`` slice, before W_O, at every aligned position) taken from B's run:

    indirect effect  IE(head) = LD(A, head from B) − LD(A)
    total effect     TE       = LD(B) − LD(A)
    normalised       IE / TE  (1: this head alone moves A's decision all the way to B's)

and the same the other way round (B with A's head, normalised by LD(A) − LD(B)); :func:`head_effects`
reports both directions and their mean. A patch *flips* the pronoun when the patched LD has the
source's sign. All heads of one direction are patched in **one batched forward pass** (a batch row per
head), through the model's hook points (:mod:`core.hooks`). :func:`stream_effects` patches the residual
stream (embedding and after each layer) one (layer, position) at a time, :func:`scoreboard` runs the
head sweep over a probe set.

Keeping a probe-set scoreboard beside the weights, and the command line (``python -m core.probes.patch --model en-fr
--a "…too tired." --b "…too wide."``, strict JSON last): :mod:`core.probes.patch_board`.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..hooks import all_heads
from ..io.budget import max_positions
from ..io.checkpoint import Checkpoint
from ..io.tokenizer import BOS, EOS

KIND_OF = {"self_attn": "encoder", "cross_attn": "cross"}


# ------------------------------------------------------------------ the two sentences
@dataclass(frozen=True)
class Sentence:
    """What patching needs of one sentence: the source, the reference translation, its back-referring pronoun."""
    src: str
    tgt: str
    tgt_pronoun: str
    antecedent: str | None = None
    candidates: tuple[str, ...] = ()
    from_corpus: bool = True  # False: the reference is the model's own greedy translation


@dataclass
class Setup:
    """Token ids of a pair, ready to run: both sources, the shared decoder prefix, the two pronoun tokens,
    and which positions of A and B correspond (for patching position by position)."""
    a: Sentence
    b: Sentence
    src_a: list[int]
    src_b: list[int]
    dec_a: list[int]  # BOS + reference up to (not including) the pronoun
    dec_b: list[int]
    tok_a: int  # vocabulary id of A's pronoun token at the decision position
    tok_b: int
    enc_align: tuple[list[int], list[int]]  # aligned (A position, B position) pairs of the source
    dec_align: tuple[list[int], list[int]]
    src_tokens_a: list[str]
    src_tokens_b: list[str]
    dec_tokens: list[str]  # A's decoder input tokens

    @property
    def aligned(self) -> bool:
        """Every position of both runs has its twin (else the differing middle is not patched)."""
        return all(len(x) == len(y) == n for (x, y), n in ((self.enc_align, len(self.src_a)),
                                                           (self.dec_align, len(self.dec_a))))

    @property
    def query(self) -> tuple[int, int]:
        """Decoder positions (in A, in B) whose next-token prediction is the pronoun."""
        return len(self.dec_a) - 1, len(self.dec_b) - 1


def _norm(tok: str) -> str:
    return tok.lower().lstrip("▁").removeprefix("##")


def align(x: list, y: list) -> tuple[list[int], list[int]]:
    """Corresponding positions of two token lists: one to one when equally long (a minimal pair that swaps a
    word for a word), else the common prefix and the common suffix (the differing middle is left out)."""
    if len(x) == len(y):
        return list(range(len(x))), list(range(len(y)))
    p = 0
    while p < min(len(x), len(y)) and x[p] == y[p]:
        p += 1
    s = 0
    while s < min(len(x), len(y)) - p and x[-1 - s] == y[-1 - s]:
        s += 1
    xs = list(range(p)) + list(range(len(x) - s, len(x)))
    ys = list(range(p)) + list(range(len(y) - s, len(y)))
    return xs, ys


def _decision(tok, tgt_a: str, tgt_b: str, pron_a: str, pron_b: str) -> tuple[list[int], list[int], int, int]:
    """Reference ids of A and B and the index of each one's pronoun token: the first token where the two
    references differ, when it is (the start of) each one's pronoun; else each pronoun's first occurrence
    after the first word."""
    ids_a, ids_b = tok.encode(tgt_a), tok.encode(tgt_b)
    disp_a, disp_b = tok.display(ids_a), tok.display(ids_b)
    j = next((i for i, (x, y) in enumerate(zip(ids_a, ids_b)) if x != y), None)
    ok = lambda t, p: bool(_norm(t)) and p.lower().startswith(_norm(t))  # noqa: E731 (a pronoun split in pieces)
    if j is not None and j >= 1 and ok(disp_a[j], pron_a) and ok(disp_b[j], pron_b):
        return ids_a, ids_b, j, j
    ja = next((i for i in range(1, len(disp_a)) if _norm(disp_a[i]) == pron_a.lower()), None)
    jb = next((i for i in range(1, len(disp_b)) if _norm(disp_b[i]) == pron_b.lower()), None)
    if ja is None or jb is None:
        raise ValueError(f"the reference translations do not hold their pronouns as tokens "
                         f"({pron_a!r} in {tgt_a!r}, {pron_b!r} in {tgt_b!r})")
    return ids_a, ids_b, ja, jb


def prepare(ck: Checkpoint, a: Sentence, b: Sentence) -> Setup:
    """Token ids and alignments of a pair; ValueError (with the reason) when it cannot be patched."""
    model, tok = ck.model, ck.tokenizer
    if model.cfg.kind != "encoder-decoder":
        raise ValueError("patching the pronoun decision needs a translation (encoder-decoder) model")
    if not a.tgt_pronoun or not b.tgt_pronoun:
        raise ValueError("both sentences need a pronoun that refers back in their translation")
    if a.tgt_pronoun.lower() == b.tgt_pronoun.lower():
        raise ValueError(f"both sentences translate “it” as {a.tgt_pronoun!r}: there is no decision between "
                         "two pronouns to patch; pick two sentences whose antecedents differ in gender")
    limit = max_positions(model) - 1
    src_a, src_b = tok.encode(a.src)[:limit] + [EOS], tok.encode(b.src)[:limit] + [EOS]
    ids_a, ids_b, ja, jb = _decision(tok, a.tgt, b.tgt, a.tgt_pronoun, b.tgt_pronoun)
    if max(ja, jb) + 1 > max_positions(model):
        raise ValueError("the pronoun comes after this model's maximum length")
    dec_a, dec_b = [BOS] + ids_a[:ja], [BOS] + ids_b[:jb]
    tok_a, tok_b = ids_a[ja], ids_b[jb]
    if tok_a == tok_b:
        raise ValueError("the two pronouns start with the same token; their logits cannot be told apart")
    return Setup(a, b, src_a, src_b, dec_a, dec_b, tok_a, tok_b, align(src_a, src_b), align(dec_a, dec_b),
                 tok.display(src_a), tok.display(src_b), tok.display(dec_a))


# ------------------------------------------------------------------ running, with and without patches
def _device(model):
    return model.device


def _tensor(rows, device):
    return torch.tensor(rows, dtype=torch.long, device=device)


def _ld(logits: torch.Tensor, q: int, tok_a: int, tok_b: int) -> torch.Tensor:
    """log p(a) − log p(b) at decoder position ``q`` of every batch row (the softmax normaliser cancels)."""
    z = logits[:, q].float()
    return z[:, tok_a] - z[:, tok_b]


@torch.no_grad()
def clean_run(model, src: list[int], dec: list[int]) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """One unpatched pass: every hook point's tensor (``{name: tensor}``, batch 1) and the logits."""
    keep: dict[str, torch.Tensor] = {}
    names = [n for n in model.hook_names() if n.endswith((".heads", "resid_post", "embed.out", "encoder.output"))]
    hooks = {n: (lambda t, name: keep.__setitem__(name, t)) for n in names}
    dev = _device(model)
    out = model(_tensor([src], dev), _tensor([dec], dev), hooks=hooks)
    return keep, out.logits


def _positions(name: str, setup: Setup, base_is_a: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(positions in the base run, positions in the source run) aligned for the stack a hook point lives in."""
    xs, ys = setup.enc_align if name.startswith("encoder.") else setup.dec_align
    base, src = (xs, ys) if base_is_a else (ys, xs)
    return torch.tensor(base, dtype=torch.long), torch.tensor(src, dtype=torch.long)


def _head_hook(sel: torch.Tensor, source: torch.Tensor, pb: torch.Tensor, ps: torch.Tensor):
    """Rows × heads ``sel`` (bool ``[N, H]``): those heads take ``source [1, H, T', d]`` at the aligned positions."""
    def fn(t, _name):
        out = t.clone()
        m = sel.to(t.device)[:, :, None, None]
        out[:, :, pb] = torch.where(m, source[:, :, ps].to(t.dtype), t[:, :, pb])
        return out
    return fn


def _stream_hook(rows: list[int], base_pos: list[int], src_pos: list[int], source: torch.Tensor):
    r, pb, ps = (torch.tensor(v, dtype=torch.long) for v in (rows, base_pos, src_pos))

    def fn(t, _name):
        out = t.clone()
        out[r, pb] = source[0, ps].to(t.dtype)
        return out
    return fn


def _rows_hooks(heads, stream, setup, base_is_a, source, rows=None) -> dict[str, list]:
    """Hooks for the batch rows ``rows`` (None: all) of a patch: ``heads`` selections and ``stream`` entries."""
    hooks: dict[str, list] = {}
    for name, sel in (heads or {}).items():
        sub = sel if rows is None else sel[rows]
        if not bool(sub.any()):
            continue
        pb, ps = _positions(name, setup, base_is_a)
        hooks.setdefault(f"{name}.heads", []).append(_head_hook(sub, source[f"{name}.heads"], pb, ps))
    index = None if rows is None else {r: i for i, r in enumerate(rows)}
    by_point: dict[str, tuple[list, list, list]] = {}
    for row, (point, pb, ps) in enumerate(stream or []):
        if not point or (index is not None and row not in index):
            continue
        r = by_point.setdefault(point, ([], [], []))
        r[0].append(row if index is None else index[row]), r[1].append(pb), r[2].append(ps)
    for point, (rs, pb, ps) in by_point.items():
        hooks.setdefault(point, []).append(_stream_hook(rs, pb, ps, source[point]))
    return hooks


@torch.no_grad()
def patched_ld(model, setup: Setup, base_is_a: bool, source: dict, *, heads: dict[str, torch.Tensor] | None = None,
               stream: list[tuple[str, int, int]] | None = None, base: dict | None = None,
               n: int | None = None) -> torch.Tensor:
    """LD of the base sentence (A if ``base_is_a``) in ``n`` batch rows, patched from the other sentence's
    ``source`` tensors (:func:`clean_run`): ``heads`` = ``{attention name: bool [n, H]}`` (row i patches
    the heads marked in row i, at every aligned position) and/or ``stream`` = one ``(hook point, base
    position, source position)`` per row. Returns ``[n]``.

    With the base run's own clean tensors ``base``, rows that patch nothing in the encoder reuse its clean
    output instead of recomputing it, and only the decision position goes through the output projection."""
    src, dec = (setup.src_a, setup.dec_a) if base_is_a else (setup.src_b, setup.dec_b)
    n = n or (len(stream) if stream else next(iter(heads.values())).shape[0])
    dev = _device(model)
    enc_rows = set()
    for name, sel in (heads or {}).items():
        if name.startswith("encoder."):
            enc_rows |= set(sel.any(1).nonzero().flatten().tolist())
    enc_rows |= {r for r, (point, _, _) in enumerate(stream or []) if point.startswith("encoder.")}
    if base is None or "encoder.output" not in base:
        enc_rows = set(range(n))
    enc_rows = sorted(enc_rows)
    enc_heads = {k: v for k, v in (heads or {}).items() if k.startswith("encoder.")}
    dec_heads = {k: v for k, v in (heads or {}).items() if not k.startswith("encoder.")}
    enc_stream = [e if e[0].startswith("encoder.") else ("", 0, 0) for e in (stream or [])]
    dec_stream = [e if not e[0].startswith("encoder.") else ("", 0, 0) for e in (stream or [])]
    if len(enc_rows) == n:
        memory, _ = model.encode(_tensor([src], dev).expand(n, -1),
                                 hooks=_rows_hooks(enc_heads, enc_stream, setup, base_is_a, source))
    else:
        memory = base["encoder.output"].to(dev).expand(n, -1, -1).clone()
        if enc_rows:
            hooks = _rows_hooks(enc_heads, enc_stream, setup, base_is_a, source, enc_rows)
            memory[enc_rows] = model.encode(_tensor([src], dev).expand(len(enc_rows), -1), hooks=hooks)[0]
    hooks = _rows_hooks(dec_heads, dec_stream, setup, base_is_a, source)
    hidden = model.decode(_tensor([dec], dev).expand(n, -1), memory, None, hooks=hooks)
    logits = model.project(hidden[:, -1:])
    return _ld(logits, 0, setup.tok_a, setup.tok_b)


def _selection(model, sets: list[list[tuple[str, int]]]) -> dict[str, torch.Tensor]:
    """Rows of head sets → ``{attention name: bool [rows, H]}``."""
    names = model.attention_names()
    sel = {n: torch.zeros(len(sets), model.cfg.n_heads, dtype=torch.bool) for n in names}
    for r, chosen in enumerate(sets):
        for name, h in chosen:
            sel[name][r, h] = True
    return {n: m for n, m in sel.items() if bool(m.any())}


def row_label(name: str) -> str:
    """``encoder.1.self_attn`` → ``encoder L1``, ``decoder.0.self_attn`` → ``decoder L0``, ``decoder.0.cross_attn`` → ``cross L0``."""
    stack, layer, sub = name.split(".")
    return f"{'cross' if sub == 'cross_attn' else stack} L{layer}"


# ------------------------------------------------------------------ per pair
@dataclass
class Clean:
    """Both unpatched runs of a pair: their hook-point tensors and decisions."""
    setup: Setup
    a: dict
    b: dict
    ld_a: float
    ld_b: float

    @property
    def total(self) -> float:
        return self.ld_b - self.ld_a

    @property
    def right(self) -> bool:
        """The model prefers each sentence's own pronoun (LD(A) > 0 > LD(B))."""
        return self.ld_a > 0 > self.ld_b


def clean(ck: Checkpoint, a: Sentence, b: Sentence) -> Clean:
    """Both unpatched runs of the pair ``a``, ``b``: their hook-point tensors and each one's logit difference
    ``log p(A's pronoun) − log p(B's pronoun)`` at its decision position."""
    setup = prepare(ck, a, b)
    ta, la = clean_run(ck.model, setup.src_a, setup.dec_a)
    tb, lb = clean_run(ck.model, setup.src_b, setup.dec_b)
    qa, qb = setup.query
    return Clean(setup, ta, tb, float(_ld(la, qa, setup.tok_a, setup.tok_b)[0]),
                 float(_ld(lb, qb, setup.tok_a, setup.tok_b)[0]))


def _both_ways(model, c: Clean, *, heads=None, stream_ab=None, stream_ba=None) -> dict:
    """Patched LDs both ways and their normalised effects (``ab``: A with B's activations; ``ba``: the reverse)."""
    ld_ab = patched_ld(model, c.setup, True, c.b, heads=heads, stream=stream_ab, base=c.a)
    ld_ba = patched_ld(model, c.setup, False, c.a, heads=heads, stream=stream_ba, base=c.b)
    te = c.total
    norm = (lambda x: x / te) if abs(te) > 1e-6 else (lambda x: x * float("nan"))
    ie_ab, ie_ba = ld_ab - c.ld_a, ld_ba - c.ld_b
    e_ab, e_ba = norm(ie_ab), norm(-ie_ba)  # both directions: 1 = all the way to the other sentence's decision
    flips = ((ld_ab < 0) & (c.ld_a > 0) & (c.ld_b < 0)).int() + ((ld_ba > 0) & (c.ld_a > 0) & (c.ld_b < 0)).int()
    return {"ld_ab": ld_ab, "ld_ba": ld_ba, "ie_ab": ie_ab, "ie_ba": ie_ba, "effect_ab": e_ab, "effect_ba": e_ba,
            "effect": (e_ab + e_ba) / 2, "flips": flips}


def head_sweep(model, c: Clean) -> dict:
    """Every head patched alone, both ways: two batched passes (one row per head)."""
    us = all_heads(model)
    return _both_ways(model, c, heads=_selection(model, [[u] for u in us]))


def carry_curve(model, c: Clean, ranked: list[tuple[str, int]]) -> torch.Tensor:
    """Normalised effect (mean of both ways) of patching the first k heads of ``ranked`` *together*, k = 1..K."""
    sets = [ranked[:k] for k in range(1, len(ranked) + 1)]
    return _both_ways(model, c, heads=_selection(model, sets))["effect"]


def _grid(model, flat: torch.Tensor) -> torch.Tensor:
    return flat.reshape(len(model.attention_names()), model.cfg.n_heads)


def smallest_set(curve: torch.Tensor, share: float = 0.5) -> int | None:
    """The smallest k whose joint effect reaches ``share`` of the total (None: not even every head together)."""
    hit = (curve >= share).nonzero()
    return int(hit[0]) + 1 if len(hit) else None


@torch.no_grad()
def head_effects(ck: Checkpoint, a: Sentence, b: Sentence, *, share: float = 0.5) -> dict:
    """Per head, the normalised indirect effect on the pronoun decision, both ways, for one pair.

    Returns ``names`` (attention names, the grid's rows), ``rows`` (their labels, e.g. ``cross L1``),
    ``effect`` ``[attentions, H]`` (mean of both ways), ``effect_ab`` / ``effect_ba``, ``ie_ab`` / ``ie_ba``
    (raw LD changes), ``flips`` ``[attentions, H]`` (in how many of the 2 directions the head alone flips
    the pronoun), ``ld_a`` / ``ld_b`` / ``total``, ``right`` (the model picks both pronouns), ``ranked``
    (every head by effect: ``name``, ``head``, ``label``, ``effect``, ``flips``), ``carry`` (joint effect of
    the top-k heads, k = 1..K), ``k`` (smallest k carrying ``share`` of the effect, or None) and the tokens."""
    ck.model.eval()
    return effects(ck.model, clean(ck, a, b), share=share)


@torch.no_grad()
def effects(model, c: Clean, *, share: float = 0.5) -> dict:
    """:func:`head_effects` from a pair's clean runs."""
    a, b = c.setup.a, c.setup.b
    sweep = head_sweep(model, c)
    us = all_heads(model)
    order = sorted(range(len(us)), key=lambda i: (-float(torch.nan_to_num(sweep["effect"][i], nan=-1e9)), i))
    ranked = [us[i] for i in order]
    curve = carry_curve(model, c, ranked)
    k = smallest_set(curve, share)
    grid = {key: _grid(model, sweep[key]) for key in ("effect", "effect_ab", "effect_ba", "ie_ab", "ie_ba", "flips")}
    names = model.attention_names()
    s = c.setup
    return {"names": names, "rows": [row_label(n) for n in names], "n_heads": model.cfg.n_heads, **grid,
            "ld_a": c.ld_a, "ld_b": c.ld_b, "total": c.total, "right": c.right, "aligned": s.aligned,
            "pronouns": (a.tgt_pronoun, b.tgt_pronoun),
            "ranked": [{"name": us[i][0], "head": us[i][1], "label": f"{row_label(us[i][0])} H{us[i][1]}",
                        "effect": float(sweep["effect"][i]), "flips": int(sweep["flips"][i])} for i in order],
            "carry": curve, "k": k, "share": share, "carried": None if k is None else float(curve[k - 1]),
            "src_tokens": (s.src_tokens_a, s.src_tokens_b), "dec_tokens": s.dec_tokens, "query": s.query[0]}


@torch.no_grad()
def stream_effects(ck: Checkpoint, a: Sentence, b: Sentence) -> dict:
    """Causal tracing of the residual stream: patch one (layer, position) of the stream at a time (the
    embedding, then after every layer), both ways. Per stack: ``effect [stages, positions]`` (mean of both
    ways; NaN where the two sentences have no corresponding position), ``stages`` and ``tokens``."""
    model = ck.model
    model.eval()
    c = clean(ck, a, b)
    s = c.setup
    out = {"ld_a": c.ld_a, "ld_b": c.ld_b, "total": c.total, "right": c.right}
    for stack, (xs, ys), tokens in (("encoder", s.enc_align, s.src_tokens_a), ("decoder", s.dec_align, s.dec_tokens)):
        layers = len(getattr(model, stack).layers)
        points = [f"{stack}.embed.out"] + [f"{stack}.{i}.resid_post" for i in range(layers)]
        ab = [(p, x, y) for p in points for x, y in zip(xs, ys)]
        ba = [(p, y, x) for p in points for x, y in zip(xs, ys)]
        res = _both_ways(model, c, stream_ab=ab, stream_ba=ba)
        grid = torch.full((len(points), len(tokens)), float("nan"))
        for (p, x, _), e in zip(ab, res["effect"]):
            grid[points.index(p), x] = e
        out[stack] = {"effect": grid, "stages": ["embed"] + [f"after L{i}" for i in range(layers)], "tokens": tokens}
    return out


# ------------------------------------------------------------------ over a probe set
@torch.no_grad()
def scoreboard(ck: Checkpoint, pairs: list[tuple[Sentence, Sentence]], *, share: float = 0.5) -> dict:
    """The head sweep over a probe set of minimal pairs (use the test split).

    Pairs the model gets wrong (not LD(A) > 0 > LD(B)) or that cannot be set up are counted, not used.
    Returns ``mean_effect`` and ``flip_share`` ``[attentions, H]`` (share of used pairs × 2 directions in
    which patching that head alone flips the pronoun), ``ranked`` heads by mean effect, ``carry`` (mean joint
    effect of the top-k heads of that ranking, k = 1..K), ``k`` (smallest k carrying ``share``), ``best``
    (the best single head), ``spread`` (True when no single head carries 20 % and it takes more than 4 heads
    to carry ``share``: the decision is spread over many heads), ``n`` (pairs used), ``wrong``, ``skipped``."""
    model = ck.model
    model.eval()
    us = all_heads(model)
    cleans, skipped, wrong = [], [], 0
    for a, b in pairs:
        try:
            c = clean(ck, a, b)
        except ValueError as e:
            skipped.append((a.src, str(e)))
            continue
        if not c.right:
            wrong += 1
            continue
        cleans.append(c)
    names = model.attention_names()
    empty = {"n": 0, "wrong": wrong, "skipped": skipped, "names": names, "rows": [row_label(n) for n in names],
             "mean_effect": None, "flip_share": None, "ranked": [], "carry": None, "k": None, "best": None,
             "spread": None, "share": share}
    if not cleans:
        return empty
    effects, flips = [], []
    for c in cleans:
        sweep = head_sweep(model, c)
        effects.append(sweep["effect"])
        flips.append(sweep["flips"].float() / 2)
    mean = torch.stack(effects).mean(0)
    flip = torch.stack(flips).mean(0)
    order = sorted(range(len(us)), key=lambda i: (-float(mean[i]), i))
    ranked = [us[i] for i in order]
    curve = torch.stack([carry_curve(model, c, ranked) for c in cleans]).mean(0)
    k = smallest_set(curve, share)
    best = order[0]
    return {**empty, "n": len(cleans), "mean_effect": _grid(model, mean), "flip_share": _grid(model, flip),
            "ranked": [{"name": us[i][0], "head": us[i][1], "label": f"{row_label(us[i][0])} H{us[i][1]}",
                        "effect": float(mean[i]), "flip_share": float(flip[i])} for i in order],
            "carry": curve, "k": k, "carried": None if k is None else float(curve[k - 1]),
            "best": {"label": f"{row_label(us[best][0])} H{us[best][1]}", "effect": float(mean[best]),
                     "flip_share": float(flip[best]), "max_flip_share": float(flip.max())},
            "spread": bool(float(mean[best]) < 0.2 and (k is None or k > 4))}


# ------------------------------------------------------------------ sentences from text
def sentence_for(ck: Checkpoint, text: str) -> Sentence:
    """A :class:`Sentence` for typed English: the corpus's reference translation and pronoun when its grammar
    covers the text, else the model's own greedy translation and the pronoun found in it."""
    from . import coref
    from ..inference.decoding import greedy_batch
    corpus, lang = coref.corpus(ck), coref.language(ck)
    if corpus is None or lang is None:
        raise ValueError("patching the pronoun decision needs a model trained to translate English into French "
                         "or German")
    try:
        p = corpus.pair_for(text, lang)
        if p.tgt_pronoun:
            return Sentence(p.src, p.tgt, p.tgt_pronoun, p.antecedent, tuple(p.candidates))
    except (ValueError, KeyError):
        pass
    model, tok = ck.model, ck.tokenizer
    src = torch.tensor([tok.encode(text)[: max_positions(model) - 1] + [EOS]], device=_device(model))
    out = tok.decode(greedy_batch(model, src, max_new=max_positions(model) - 1)[0])
    pron = corpus.pronoun_of(out, lang)
    if pron is None:
        raise ValueError(f"the model's translation of {text!r} ({out!r}) holds no pronoun that refers back")
    return Sentence(text, out, pron, from_corpus=False)


def from_pair(p) -> Sentence:
    """A corpus ``Pair`` (``src``, ``tgt``, ``tgt_pronoun``, ``antecedent``, ``candidates``) as a Sentence."""
    return Sentence(p.src, p.tgt, p.tgt_pronoun or "", p.antecedent, tuple(p.candidates))


def probe_set(ck: Checkpoint) -> list[tuple[Sentence, Sentence]]:
    """The model's corpus's probe minimal pairs (drawn from its test split) as Sentences."""
    from . import coref
    corpus, lang = coref.corpus(ck), coref.language(ck)
    if corpus is None or lang is None:
        return []
    return [(from_pair(x), from_pair(y)) for x, y in corpus.probe_pairs(lang)]


if __name__ == "__main__":  # the command lives in patch_board; this form keeps working
    from .patch_board import main
    raise SystemExit(main(prog="python -m core.probes.patch"))
