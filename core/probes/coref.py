"""Coreference probing: which heads link a pronoun ("it") to its antecedent, and does it matter?

Two probe kinds read attention to each candidate noun per layer × head:

* ``"self"`` (every model): self-attention **from the English "it"** to the candidates — the encoder
  (or, for a language model, the decoder) stack.
* ``"cross"`` (encoder-decoder models only): cross-attention **from the decoder position that
  predicts the target pronoun** to the English candidates. The decoder is teacher-forced with the
  reference translation (the corpus's ``translate``, :func:`corpus`); if the reference holds the pronoun
  at decoder-input index ``j`` (``[BOS] + target``, e.g. "… parce qu ' il …"), the query is
  ``j - 1``: the position whose next-token prediction *is* il/elle, i.e. where the translator
  decides, before it has seen the answer. :func:`pronoun_probabilities` reads its probabilities
  at the same position.

A head "gets a sentence right" when its link to the true antecedent is strictly stronger than to
every other candidate (a tie — typically no weight on either noun — counts as wrong); that is what the
probe-set scoreboards count, a rate read against chance. A single minimal pair has no such statistics, so a
head is said to *resolve* the pair (the pages' ✓) only when it picks the right noun in both sentences by at
least :data:`PICK_MARGIN` of attention weight. Ablation then tests whether heads are *used*: switch them off
and read the decision where it is made (teacher-forced on the reference, :func:`decision`), not only in a
greedy re-translation, whose pronoun also changes when the words before it break.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..inference.runner import Run, run
from ..io.budget import max_positions
from ..io.checkpoint import Checkpoint
from ..io.tokenizer import BOS, EOS, word_index
from .analysis import rollout

KINDS = ("self", "cross")
# Subject pronouns that refer back to an English "it" in the generated corpus.
TARGET_PRONOUNS = {"fr": ("il", "elle"), "de": ("er", "sie", "es")}
# The classroom's minimal pairs, shown before the generated ones: the Winograd classics (Levesque et al. 2012: the
# animal and the street, the trophy and the suitcase) and everyday nouns, each pair one cue word apart, written in
# the broad grammar's words so that the antecedent is read off by its parser, not written here. The shipped en-fr and
# en-de translate all fourteen sentences with the right pronoun (tests/app/test_coreference_page.py); the third
# classic, "The city councilmen refused the demonstrators a permit because they feared / advocated violence", is
# outside both the grammar and en-fr's vocabulary ("demonstrators"), so it is not offered.
CLASSROOM_PAIRS = (
    ("The animal didn't cross the street because it was too tired.",
     "The animal didn't cross the street because it was too wide."),
    ("The trophy doesn't fit in the suitcase because it is too big.",
     "The trophy doesn't fit in the suitcase because it is too small."),
    ("The dog didn't cross the road because it was too tired.", "The dog didn't cross the road because it was too wide."),
    ("The cat didn't cross the river because it was too scared.",
     "The cat didn't cross the river because it was too deep."),
    ("The cow didn't cross the field because it was too tired.", "The cow didn't cross the field because it was too wide."),
    ("The bottle doesn't fit in the bag because it is too big.", "The bottle doesn't fit in the bag because it is too small."),
    ("The horse didn't cross the street because it was too tired.",
     "The horse didn't cross the street because it was too wide."),
)
# words whose referent a minimal pair can change
PRONOUNS = ("it", "they", "he", "she")
# A head resolves a minimal pair (the ✓ on the Coreference page and in the Lesson) when, in both sentences, it puts
# at least this much more attention weight (a share of its row, which sums to 1) on the right noun than on the
# other: five hundredths of the row. Below it, differences such as +0.001 / -0.0003 are noise, not a pick.
PICK_MARGIN = 0.05


@dataclass(frozen=True)
class ProbeItem:
    """One coreference probe sentence: its text, the noun the pronoun refers to, the candidate nouns, the
    pronoun, and (cross probe) the reference translation."""
    text: str
    antecedent: str
    candidates: tuple[str, ...]
    pronoun: str = "it"
    reference: str | None = None  # the target translation for the cross probe (None: derived from the grammar)


def _norm(tok: str) -> str:
    return tok.lower().lstrip("▁").removeprefix("##")


def locate(tokens: list[str], word: str, start: int = 0) -> int | None:
    """Index of the first token equal to ``word`` (case-insensitive) at or after ``start``."""
    word = word.lower()
    for i in range(start, len(tokens)):
        if _norm(tokens[i]) == word:
            return i
    return None


def locate_word(tokens: list[str], word: str, start: int = 0) -> list[int] | None:
    """The indices of the tokens that spell ``word`` (case-insensitive) at or after ``start``: the first token equal
    to it, else the first run of consecutive pieces that concatenate to it ("trop" + "hy": trophy); None if neither."""
    first = locate(tokens, word, start)
    if first is not None:
        return [first]
    word = word.lower()
    for i in range(start, len(tokens)):
        spelled = ""
        for j in range(i, len(tokens)):
            spelled += _norm(tokens[j])
            if spelled == word:
                return list(range(i, j + 1))
            if not word.startswith(spelled):
                break
    return None


def locate_any(tokens: list[str], words, start: int = 0) -> int | None:
    """Index of the first token (at or after ``start``) equal to any of ``words``."""
    words = {w.lower() for w in words}
    return next((i for i in range(start, len(tokens)) if _norm(tokens[i]) in words), None)


QUERY_WORDS = ("it", "they", "he", "she")  # the English pronouns a page opens on, the first one found


def default_query(res: Run, kind: str, tok, words=QUERY_WORDS) -> int:
    """The query row a page opens on for attention ``kind`` ("encoder", "decoder", "cross"): the first of ``words``
    the sentence holds as a whole word (self-attention; "it", else "they", "he", "she"), or the decoder position that
    writes the target pronoun (cross-attention: the row whose next-token prediction is il/elle/er/sie/es); else the
    first token that is not special."""
    ids = res.src_ids if kind == "encoder" else res.tgt_ids
    if kind == "cross":
        j = target_pronoun(res)
        found = None if j is None else j - 1
    else:
        found = next((i for w in words if (i := word_index(tok, ids, w)) is not None), None)
    if found is not None:
        return found
    shown = tok.display(ids)
    return next((i for i, t in enumerate(shown) if not (t.startswith("[") and t.endswith("]"))), 0)


def self_kind(res: Run) -> str:
    """The trace kind of a run's self-attention: ``"decoder"`` for a decoder-only model, else ``"encoder"``."""
    return "decoder" if res.kind == "decoder-only" else "encoder"


def kinds_for(ck_or_kind) -> tuple[str, ...]:
    """Probe kinds a model supports: ``("self", "cross")`` for encoder-decoder, else ``("self",)``."""
    kind = ck_or_kind if isinstance(ck_or_kind, str) else ck_or_kind.model.cfg.kind
    return KINDS if kind == "encoder-decoder" else ("self",)


def attention_name(kind: str, res_kind: str, layer: int) -> str:
    """Module name to ablate a head of this probe kind (``decoder.1.cross_attn``, ``encoder.0.self_attn``)."""
    if kind == "cross":
        return f"decoder.{layer}.cross_attn"
    return f"{'decoder' if res_kind == 'decoder-only' else 'encoder'}.{layer}.self_attn"


def language(ck: Checkpoint) -> str | None:
    """Target language of a translation model (``fr``/``de``; tasks ``en-fr``, ``en-de-tiny``, …), or None."""
    if ck.model.cfg.kind != "encoder-decoder":
        return None
    from ..data import lang_of
    lang = lang_of(str(ck.meta.get("task", "")))
    return lang if lang in TARGET_PRONOUNS else None


def corpus(ck: Checkpoint):
    """The corpus module a translation model was trained on (:func:`core.data.corpus_for`), or None.

    A checkpoint trained before the broad corpus existed carries the task name ``en-fr`` / ``en-de`` but knows
    only the tiny grammar's words: when most of the broad probe sentences hold words it never saw (its
    ``words.json``) and the tiny grammar's do not, its corpus is the tiny grammar."""
    lang = language(ck)
    if lang is None:
        return None
    from ..data import corpus_for, release_of, translation
    mod = corpus_for(str(ck.meta.get("task", "")), release_of(ck.meta, "generated"))
    if mod is translation:
        return mod
    try:
        mod.lexicon()
    except (OSError, AttributeError):
        return translation
    return translation if _knows_only_the_tiny_grammar(ck, mod, lang) else mod


_TINY_ONLY: dict[tuple[int, str], bool] = {}


def _knows_only_the_tiny_grammar(ck: Checkpoint, mod, lang: str) -> bool:
    key = (id(ck.model), lang)
    if key not in _TINY_ONLY:
        from ..inference.coverage import coverage, known_words
        from ..data import translation
        known = known_words(ck)
        if known is None:
            _TINY_ONLY[key] = False
        else:
            def unknown_share(pairs):
                texts = [p.src for pair in pairs for p in pair]
                return sum(bool(coverage(t, known)["unknown_words"]) for t in texts) / max(1, len(texts))
            _TINY_ONLY[key] = (unknown_share(mod.probe_pairs(lang)) > 0.5
                               and unknown_share(translation.probe_pairs(lang)) == 0)
    return _TINY_ONLY[key]


def reference(ck: Checkpoint, item: ProbeItem) -> str | None:
    """The reference translation the decoder is teacher-forced with (None: outside the grammar / not a translator)."""
    if item.reference:
        return item.reference
    lang = language(ck)
    if lang is None:
        return None
    try:
        return corpus(ck).translate(item.text, lang)
    except (ValueError, KeyError):
        return None


def probe_run(ck: Checkpoint, item: ProbeItem) -> Run:
    """One traced run that serves both kinds: teacher-forced with the reference where there is one
    (encoder attention does not depend on the target), else the model's own greedy output."""
    return run(ck, item.text, reference(ck, item))


def word_positions(res: Run, item: ProbeItem) -> tuple[int, list[list[int]]] | None:
    """(pronoun position, each candidate's token positions — several where the tokenizer cut the noun into pieces) in
    the run's tokens, or None if a word is missing."""
    tokens = res.tgt_tokens if res.kind == "decoder-only" else res.src_tokens
    spans = [locate_word(tokens, c) for c in item.candidates]
    if any(s is None for s in spans):
        return None
    p = locate(tokens, item.pronoun, max(s[-1] for s in spans) + 1)
    return None if p is None else (p, spans)


def positions(res: Run, item: ProbeItem) -> tuple[int, list[int]] | None:
    """(pronoun position, each candidate's first token position) in the run's tokens, or None if a word is missing."""
    pos = word_positions(res, item)
    return None if pos is None else (pos[0], [s[0] for s in pos[1]])


def to_words(weights: torch.Tensor, spans: list[list[int]]) -> torch.Tensor:
    """``[..., tokens]`` → ``[..., candidates]``: the weight on each candidate word, summed over its pieces."""
    return torch.stack([weights[..., s].sum(-1) for s in spans], -1)


def target_pronoun(res: Run, choices=None) -> int | None:
    """Decoder-input index of the target pronoun (first of ``choices`` after BOS and the first word)."""
    if res.kind != "encoder-decoder":
        return None
    choices = choices or {w for ws in TARGET_PRONOUNS.values() for w in ws}
    return locate_any(res.tgt_tokens, choices, start=2)


def cross_positions(res: Run, item: ProbeItem, choices=None) -> tuple[int, list[list[int]]] | None:
    """(decoder query position, each English candidate's token positions) for the cross probe, or None.

    The query is the position whose next-token prediction is the target pronoun (one before it)."""
    pos = word_positions(res, item)
    j = target_pronoun(res, choices)
    if pos is None or j is None:
        return None
    return j - 1, pos[1]


def links(res: Run, item: ProbeItem, kind: str = "self", choices=None) -> torch.Tensor | None:
    """Attention from the pronoun (``self``) or the pronoun-predicting decoder position (``cross``)
    to each candidate: ``[layers, heads, candidates]``."""
    if kind == "cross":
        pos = cross_positions(res, item, choices)
        if pos is None:
            return None
        q, spans = pos
        return to_words(res.trace.stacked("cross")[:, 0][:, :, q], spans)
    if kind != "self":
        raise ValueError(f"unknown probe kind {kind!r}; choose one of {', '.join(KINDS)}")
    pos = word_positions(res, item)
    if pos is None:
        return None
    p, spans = pos
    w = res.trace.stacked(self_kind(res))[:, 0]  # [L, H, T, T]
    return to_words(w[:, :, p], spans)


def rollout_links(res: Run, item: ProbeItem, kind: str = "self", choices=None) -> torch.Tensor | None:
    """The same from attention rollout: ``[layers, candidates]``.

    For ``cross``, layer l's flow is decoder self-attention rollout up to l, then the head-mean
    cross-attention of l, then the full encoder rollout (how much of each English token reaches
    the query through all three)."""
    if kind == "cross":
        pos = cross_positions(res, item, choices)
        if pos is None:
            return None
        q, spans = pos
        enc = rollout(res.trace.stacked("encoder")[:, 0])[-1]  # [S, S]
        dec = rollout(res.trace.stacked("decoder")[:, 0])  # [L, T, T]
        cross = res.trace.stacked("cross")[:, 0].float().mean(1)  # [L, T, S]
        flow = torch.stack([dec[l] @ cross[l] @ enc for l in range(cross.shape[0])])
        return to_words(flow[:, q], spans)
    pos = word_positions(res, item)
    if pos is None:
        return None
    p, spans = pos
    return to_words(rollout(res.trace.stacked(self_kind(res))[:, 0])[:, p], spans)


def picks(lk: torch.Tensor, right: int, margin: float = 0.0) -> torch.Tensor:
    """``[..., candidates]`` links → bool ``[...]``: the antecedent ``right`` gets strictly the most weight, and
    (``margin`` > 0) at least ``margin`` more than any other candidate."""
    others = torch.cat([lk[..., :right], lk[..., right + 1:]], -1)
    lead = lk[..., right] - others.max(-1).values
    return lead >= margin if margin > 0 else lead > 0


def resolving_heads(lks: list[torch.Tensor], items: list[ProbeItem], margin: float = PICK_MARGIN) -> list[list[bool]]:
    """``[L][H]``: the heads whose links pick each item's antecedent in *every* item (a minimal pair: both), each
    time by at least ``margin`` of attention weight (:data:`PICK_MARGIN`)."""
    right = [picks(lk, it.candidates.index(it.antecedent), margin) for lk, it in zip(lks, items)]
    both = right[0]
    for r in right[1:]:
        both = both & r
    return both.tolist()


def _board(hits, roll_hits, used, skipped, kind, res_kind) -> dict:
    if not used:
        return {"kind": kind, "n": 0, "skipped": skipped, "share": None, "rollout_share": None, "best": [],
                "ranked": []}
    share = hits / used
    flat = [(float(share[l, h]), l, h) for l in range(share.shape[0]) for h in range(share.shape[1])]
    ranked = [{"layer": l, "head": h, "share": s, "name": attention_name(kind, res_kind, l)}
              for s, l, h in sorted(flat, key=lambda t: (-t[0], t[1], t[2]))]
    return {"kind": kind, "n": used, "skipped": skipped, "share": share, "rollout_share": roll_hits / used,
            "best": ranked[:5], "ranked": ranked}


def scoreboards(ck: Checkpoint, items: list[ProbeItem], kinds=None, progress=None) -> dict[str, dict]:
    """Per probe kind and (layer, head): the share of sentences whose strongest link is the antecedent.

    One traced run per sentence serves every kind. Each board: ``kind``, ``n`` (sentences used),
    ``skipped`` (texts where a word was missing), ``share`` ``[L, H]``, ``rollout_share`` ``[L]``,
    ``ranked`` (every head, best first: ``layer``, ``head``, ``share``, ``name`` = the module to ablate)
    and ``best`` (its first 5). ``progress(k, n, partial)`` is called after each sentence (k of n done;
    ``partial``: a function returning the boards over those k)."""
    kinds = tuple(kinds or kinds_for(ck))
    for k in kinds:
        if k not in kinds_for(ck):
            raise ValueError(f"probe kind {k!r} needs an encoder-decoder model")
    choices = TARGET_PRONOUNS.get(language(ck) or "", None)
    acc = {k: [None, None, 0, []] for k in kinds}
    res_kind = ck.model.cfg.kind
    for i, item in enumerate(items):
        if progress is not None and i:
            progress(i, len(items), lambda: {k: _board(*acc[k], k, res_kind) for k in kinds})
        res = probe_run(ck, item)
        right = item.candidates.index(item.antecedent)
        for k in kinds:
            a = acc[k]
            lk = links(res, item, k, choices)
            if lk is None:
                a[3].append(item.text)
                continue
            h = picks(lk, right).float()
            r = picks(rollout_links(res, item, k, choices), right).float()
            a[0] = h if a[0] is None else a[0] + h
            a[1] = r if a[1] is None else a[1] + r
            a[2] += 1
    boards = {k: _board(*acc[k], k, res_kind) for k in kinds}
    if progress is not None and items:
        progress(len(items), len(items), lambda: boards)
    return boards


def scoreboard(ck: Checkpoint, items: list[ProbeItem], kind: str = "self") -> dict:
    """The board of one probe kind (see :func:`scoreboards`)."""
    return scoreboards(ck, items, (kind,))[kind]


def heads_off(board: dict, k: int | None = None, layer: int | None = None, module: str | None = None) -> dict:
    """Ablation dict ``{"decoder.1.cross_attn": [head, ...]}``: the board's ``k`` best heads, or (``layer``
    given) every head of that layer, or (``module`` given) every ranked head of that attention module."""
    ranked = board.get("ranked") or board["best"]
    if module is not None:
        chosen = [b for b in ranked if b.get("name") == module]
    elif layer is not None:
        chosen = [b for b in ranked if b["layer"] == layer]
    else:
        chosen = ranked[:k]
    off: dict[str, list[int]] = {}
    for b in chosen:
        name = b.get("name") or attention_name(board.get("kind", "self"), "encoder-decoder", b["layer"])
        off.setdefault(name, []).append(b["head"])
    return {n: sorted(h) for n, h in off.items()}


def best_layer(board: dict) -> int | None:
    """The layer that holds the board's best head (None for an empty board)."""
    return board["best"][0]["layer"] if board["best"] else None


@torch.no_grad()
def pronoun_probabilities(ck: Checkpoint, src: str, tgt: str, choices: tuple[str, ...], ablate=None) -> dict:
    """Teacher-force the reference translation ``tgt`` and read the probability of each pronoun in ``choices``
    at the position where the reference has one of them (e.g. il vs elle; the first word is skipped, as a
    sentence-initial pronoun refers to nothing). That is the cross probe's query position. Empty if none is found."""
    model, tok = ck.model, ck.tokenizer
    if model.cfg.kind != "encoder-decoder":
        raise ValueError("pronoun probabilities need a translation model")
    tgt_ids = tok.encode(tgt)
    pos = locate_any(tok.display(tgt_ids), choices, start=1)
    if pos is None or pos + 1 > max_positions(model):  # no pronoun, or one beyond what the model reads
        return {}
    device = model.device
    src_ids = tok.encode(src)[: max_positions(model) - 1] + [EOS]
    dec = torch.tensor([[BOS] + tgt_ids[:pos]], device=device)
    probs = model(torch.tensor([src_ids], device=device), dec, ablate=ablate).logits[0, -1].float().softmax(-1)
    out = {}
    for word in choices:
        ids = {tok.token_to_id("▁" + word), tok.token_to_id(word)} - {None}
        out[word] = float(sum(probs[i] for i in ids))
    return out


def translated_pronoun(ck: Checkpoint, src: str, heads: dict | None = None) -> tuple[str, str | None]:
    """Greedy translation of ``src`` with ``heads`` switched off, and the back-referring pronoun in it."""
    from .masking import translate_ablated
    model, tok = ck.model, ck.tokenizer
    src_ids = tok.encode(src)[: max_positions(model) - 1] + [EOS]
    out = tok.decode(translate_ablated(model, src_ids, heads or {}))
    lang = language(ck)
    return out, (corpus(ck).pronoun_of(out, lang) if lang else None)


def decision(ck: Checkpoint, item: ProbeItem, heads: dict | None = None) -> dict | None:
    """The pronoun decision of ``item`` where it is made: the decoder is fed the reference translation up to the
    pronoun (teacher forcing, :func:`pronoun_probabilities`), with ``heads`` off. ``right`` (the reference's
    pronoun) and ``p_right``, ``other`` (the most probable of the other pronouns) and ``p_other``, ``holds``
    (``p_right > p_other``). None without a reference or a pronoun in it.

    Unlike a greedy re-translation, this reading does not move when the heads off break the words *before* the
    pronoun ("la rue" → "le rue" makes a greedy "il" agree with the broken article): it changes only when the
    choice itself changes."""
    lang = language(ck)
    ref = reference(ck, item) if lang else None
    want = corpus(ck).pronoun_of(ref, lang) if ref else None
    choices = TARGET_PRONOUNS.get(lang or "", ())
    if want not in choices:
        return None
    probs = pronoun_probabilities(ck, item.text, ref, choices, ablate=heads or None)
    if not probs:
        return None
    other = max((w for w in choices if w != want), key=probs.__getitem__)
    return {"right": want, "p_right": probs[want], "other": other, "p_other": probs[other],
            "holds": probs[want] > probs[other]}


def words_before_pronoun(ck: Checkpoint, translation: str, choices) -> str | None:
    """The start of a translation up to its first back-referring pronoun in ``choices`` (the first word skipped, as
    :func:`pronoun_probabilities` reads it), as the tokenizer decodes it; None when it holds none."""
    ids = ck.tokenizer.encode(translation)
    pos = locate_any(ck.tokenizer.display(ids), choices, start=1)
    return None if pos is None else ck.tokenizer.decode(ids[:pos])


def fewest_heads_to_change(ck: Checkpoint, items: list[ProbeItem], board: dict) -> tuple[int | None, dict]:
    """Switch off the board's best heads one more at a time (its ranking) and read each item's :func:`decision`:
    the smallest ``k`` at which, for some item the model decides right with every head on, the reference's pronoun
    is no longer the most probable (teacher-forced: the choice itself flips), with those heads.
    ``(None, all ranked heads)`` when even every ranked head off leaves each choice as it was (the decision lives
    elsewhere), or when no item has a reference pronoun to read."""
    ranked = board.get("ranked") or board["best"]
    decided = [it for it in items if (d := decision(ck, it)) is not None and d["holds"]]
    for k in range(1, len(ranked) + 1) if decided else ():
        off = heads_off(board, k)
        if any(not decision(ck, it, off)["holds"] for it in decided):
            return k, off
    return None, heads_off(board, len(ranked))


def ablation_effect(ck: Checkpoint, items: list[ProbeItem], heads: dict, progress=None) -> dict:
    """Re-translate every item with ``heads`` off. Counts: ``flipped`` (the pronoun swapped for another
    one, e.g. il → elle), ``changed`` (any change, losing the pronoun included), ``right_before`` /
    ``right_after`` (the reference's pronoun produced), ``decisions_flipped`` (teacher-forced, the reference's
    pronoun was the most probable before and is not after: :func:`decision`). ``rows``: per sentence both
    translations, their pronouns, the teacher-forced probability of the reference pronoun and of the likeliest
    other pronoun (after) before / after, ``decided right`` (teacher-forced, with every head on, the reference's
    pronoun is the most probable), ``decision flipped``, and the greedy translations' words before their
    pronoun (``before pronoun``, ``before pronoun, heads off``; :func:`words_before_pronoun`) with ``words before
    kept`` (None when the translation holds no pronoun): a greedy pronoun that changes after those words changed
    follows the broken words, not the decision.
    ``progress(k, n, partial)`` is called after each item (``partial``: a function returning the result over those k)."""
    lang = language(ck)
    if lang is None:
        raise ValueError("ablation evidence needs a model trained on en-fr or en-de")
    data = corpus(ck)
    rows, flipped, changed, right_before, right_after, decisions = [], 0, 0, 0, 0, 0

    def result():
        return {"n": len(rows), "flipped": flipped, "changed": changed, "right_before": right_before,
                "right_after": right_after, "decisions_flipped": decisions, "heads": heads, "rows": list(rows)}

    for item in items:
        ref = reference(ck, item)
        want = data.pronoun_of(ref, lang) if ref else None
        out0, p0 = translated_pronoun(ck, item.text)
        out1, p1 = translated_pronoun(ck, item.text, heads)
        choices = TARGET_PRONOUNS[lang]
        before = pronoun_probabilities(ck, item.text, ref, choices) if ref else {}
        after = pronoun_probabilities(ck, item.text, ref, choices, ablate=heads) if ref else {}
        changed += p0 != p1
        flipped += p0 != p1 and p0 is not None and p1 is not None
        right_before += want is not None and p0 == want
        right_after += want is not None and p1 == want
        holds = [bool(p) and want in p and p[want] > max(p[w] for w in choices if w != want) for p in (before, after)]
        other = max((w for w in choices if w != want), key=after.__getitem__) if want in after else None
        flip = holds[0] and not holds[1]
        w0, w1 = (words_before_pronoun(ck, out, choices) for out in (out0, out1))
        decisions += flip
        rows.append({"sentence": item.text, "reference": ref, "translation": out0, "translation, heads off": out1,
                     "pronoun": p0, "pronoun, heads off": p1,
                     "p(ref pronoun)": before.get(want), "p(ref pronoun), heads off": after.get(want),
                     "ref pronoun": want, "other pronoun": other, "p(other pronoun)": before.get(other),
                     "p(other pronoun), heads off": after.get(other), "decided right": holds[0],
                     "decision flipped": flip,
                     "before pronoun": w0, "before pronoun, heads off": w1,
                     "words before kept": None if w0 is None else w0 == w1})
        if progress is not None:
            progress(len(rows), len(items), result)
    return result()


def beats_chance(share: float, n: int, z: float = 1.96) -> bool:
    """Whether a head that picks the right antecedent on ``share`` of ``n`` sentences does so more often than a coin
    (two candidates: 50 %): the lower end of the Wilson score interval (95 % for z = 1.96) lies above 0.5."""
    if n <= 0:
        return False
    centre = share + z * z / (2 * n)
    spread = z * (share * (1 - share) / n + z * z / (4 * n * n)) ** 0.5
    return (centre - spread) / (1 + z * z / n) > 0.5
