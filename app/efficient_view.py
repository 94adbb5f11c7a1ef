"""The Efficient page's costly parts, computed once per sentence and head (``app.cache.bounded``), not on every rerun.

The Performer error curves draw 4 seeds × 10 feature counts for orthogonal and i.i.d. ω, and trig features on the
orthogonal ones (≈ 3 s for a 104-token sentence on one core before the trig features; the trig features and their
normaliser shares about double the time: 0.43 s → 0.92 s for a 99-token en-fr sentence, one thread); a soak of 20 sessions with long sentences
(bench/soak.py) timed /efficient out 7 times in 8 minutes while it recomputed the curve on every widget change."""
from __future__ import annotations

import math

from app.cache import bounded
from core.variants import efficient as E
from core.probes import compress as SP

FEATURES = (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)
MAX_DEFAULT_TILES = 8  # the tile slider starts where the followed query reads at most this many key blocks


TRIG_LABEL = "trig features (orthogonal ω)"
POSITIVE_LABEL = "positive features (orthogonal ω)"  # the table's "positive" column is this line


@bounded(spinner="Drawing random features for the error curve…")
def favor_curves(name: str, text: str, tgt: str | None, kind: str, layer: int, head: int, causal: bool) -> dict:
    """Mean |Performer − exact| per number of random features (mean of 4 seeds), for one head of the traced run of
    ``text`` on model ``name``: ``"curves"`` holds positive features with orthogonal and i.i.d. ω and trigonometric
    features on the same orthogonal ω; ``"study"`` is :func:`core.variants.efficient.feature_study` (errors and
    the shares of rows with a normaliser ≤ 0 or tiny, per kind of feature)."""
    from app.shell import traced
    q, k, _ = E.head_qkv(traced(name, text, tgt).trace, kind, layer, head)
    study = E.feature_study(q, k, list(FEATURES), seeds=range(4), causal=causal)  # one ω draw for both kinds
    curves = {POSITIVE_LABEL: study["positive"]["error"],
              "positive features (i.i.d. ω)": E.favor_error_curve(q, k, list(FEATURES), seeds=range(4), causal=causal,
                                                     orthogonal=False),
              TRIG_LABEL: study["trig"]["error"]}
    return {"curves": curves, "study": study}


def feature_table(study: dict, counts) -> dict:
    """Columns for the page's table of :func:`core.variants.efficient.feature_study`: per number of random vectors
    m, each kind's mean |error| and its shares of rows with a normaliser ≤ 0 and below a tenth of the true one."""
    pos, trig = study["positive"], study["trig"]
    pct = _percents  # shares of rows, written as the reading writes them
    return {"random ω (m)": list(counts),
            "mean |error|, positive": [f"{x:.3g}" for x in pos["error"]],
            "mean |error|, trig": [f"{x:.3g}" for x in trig["error"]],
            "normaliser ≤ 0, positive": pct(pos["nonpositive"]), "normaliser ≤ 0, trig": pct(trig["nonpositive"]),
            f"normaliser < {E.TINY:g}× true, positive": pct(pos["tiny"]),
            f"normaliser < {E.TINY:g}× true, trig": pct(trig["tiny"])}


def feature_reading(study: dict, counts) -> str:
    """What :func:`feature_table` shows, in numbers: how each kind's error moves from the fewest to the most features,
    how often trig rows get a normaliser ≤ 0, and whether that supports the seed audit's point."""
    pos, trig = study["positive"], study["trig"]
    lo, hi = counts[0], counts[-1]
    worst = max(trig["nonpositive"])
    never = (f"**{0:.0%}** at every m (each term is positive)" if max(pos["nonpositive"]) == 0
             else f"up to **{max(pos['nonpositive']):.0%}** (every feature of a row underflowed to 0)")
    text = (f"Mean of 4 seeds, the same orthogonal ω for both kinds. **Positive features**: the mean |error| "
            f"{_trend(pos['error'])}, from {pos['error'][0]:.3g} at m = {lo} to {pos['error'][-1]:.3g} at m = {hi}; "
            f"rows with a normaliser ≤ 0: {never}. "
            f"**Trig features**: the mean |error| {_trend(trig['error'])}, from {trig['error'][0]:.3g} to "
            f"{trig['error'][-1]:.3g}{_between(trig['error'])}; "
            f"**{min(trig['nonpositive']):.0%} to {worst:.0%}** of the rows have a "
            "normaliser ≤ 0, and there the row's weights flip sign. ")
    if pos["tiny"][0] > 0.05:
        text += (f"Positive features are not exact either: at m = {lo}, {pos['tiny'][0]:.0%} of the rows get less "
                 f"than a tenth of the true normaliser; at m = {hi}, {pos['tiny'][-1]:.0%}. ")
    if worst > 0 and trig["error"][-1] > pos["error"][-1]:
        text += ("On this head the seed audit's point holds: trig features are unbiased too, but their estimates "
                 "of small kernel values swing to both signs (their relative error grows with ‖x − y‖, Choromanski "
                 "et al., Lemma 2), so the normaliser can vanish or turn negative. "
                 "Positive features cannot, which is why FAVOR+ uses them.")
    else:
        text += ("On this head the measurement does not show trig features doing worse at the largest m; the "
                 "argument for positive features rests on the rows whose normaliser goes ≤ 0.")
    return text


def _between(errors) -> str:
    """The swing between the ends, when one in between is over twice the larger end (a first/last comparison alone
    hid a spike of 3.28 between 0.61 and 0.64); else nothing."""
    peak = max(errors)
    if peak <= 2 * max(errors[0], errors[-1]):
        return ""
    return f", not falling with m: in between it reaches {peak:.3g}"


def _percents(shares) -> list[str]:
    return [f"{x:.0%}" for x in shares]


def _trend(errors) -> str:
    """How the last error compares with the first: "falls 2.0×", "rises 1.3×", or "stays about the same" (within
    a factor 1.25)."""
    ratio = errors[0] / max(errors[-1], 1e-30)
    if not math.isfinite(ratio):
        return "cannot be compared (a normaliser of exactly 0)"
    if ratio >= 1.25:
        return f"falls {ratio:.1f}×"
    return f"rises {1 / ratio:.1f}×" if ratio <= 0.8 else "stays about the same"


def default_tile(n_tokens: int) -> int:
    """The tile slider's first value: 2 for a short sentence (each online-softmax step visible), larger for a long one
    so the table has at most :data:`MAX_DEFAULT_TILES` rows (a 104-token sentence at tile 2 walked 2,704 tiles)."""
    return max(min(2, n_tokens), -(-n_tokens // MAX_DEFAULT_TILES))


def span_table(res, kind: str, mass: float = 0.9, quantile: float = 0.9):
    """``[layers, heads]`` spans of one stack's self-attention on the traced sentence (``span.query_spans`` of
    every query, the ``quantile`` over them per head)."""
    import torch
    rows = []
    for layer in range(res.trace.n_layers(kind)):
        per_query = SP.query_spans(res.trace.attention(kind, layer)[0].float(), mass)  # [H, T]
        rows.append(torch.quantile(per_query.float(), quantile, dim=1, interpolation="higher"))
    return torch.stack(rows).long()  # a radius in tokens


@bounded(spinner="Measuring every head's span on held-out text, then cutting each head there…")
def span_study(name: str) -> SP.SpanResult:
    """``compress.span_experiment`` on the model's held-out batch (the one the Heads page ranks heads on): shipped
    beside the weights (scripts/precompute.py), else computed here."""
    from app.shell import load_model
    from core.probes import summaries
    ck = load_model(name)
    return summaries.spans_summary(ck, name) or SP.span_experiment(ck)


def span_reading(study: SP.SpanResult) -> str:
    """What the held-out cut shows, in numbers: each head cut to its span against one radius for all."""
    full, cut, uniform = study.full[0], study.cut[0], study.uniform[0]
    heads = sum(len(r) for r in study.spans.values())
    shortest = min(((int(x), n, h) for n, r in study.spans.items() for h, x in enumerate(r)))
    text = (f"On held-out {'windows' if study.length > 32 else 'sentences'} of up to {study.length} tokens, the "
            f"{heads} heads' spans run from **{shortest[0]}** ({shortest[1]} H{shortest[2]}) to "
            f"**{max(int(x) for r in study.spans.values() for x in r)}** tokens. Cut to them, the model computes "
            f"{study.cut_share:.0%} of the pairs and its loss moves by **{cut - full:+.4f}** nats; one radius for "
            f"every head with as many pairs moves it by **{uniform - full:+.4f}**.")
    if uniform - full > 1.5 * max(cut - full, 1e-4) and uniform - full > 0.01:  # 0.01 nats: not rounding noise
        text += " Heads differ in how far they look, so a span per head loses less than one window for all."
    elif max(uniform, cut) - full < 0.01:
        text += (" Both cuts move the loss by less than 0.01 nats: on the held-out text neither costs anything "
                 "measurable.")
    return text


@bounded(spinner="Counting what ordinary and reversible blocks keep for the backward…")
def reversible_study(name: str, text: str, tgt: str | None, kind: str):
    """``core.variants.reversible.model_report`` on the sentence's embeddings (``{kind}.embed.out`` of the traced
    run of ``text`` on model ``name``), with reversible blocks made of the model's own ``kind`` layers: counts of
    saved activations, reconstruction errors and the gradient check for 1 to 8 blocks."""
    from app.shell import load_model, traced
    from core.variants import reversible as RV
    x = traced(name, text, tgt).trace[f"{kind}.embed.out"]
    return RV.model_report(load_model(name).model, x, kind)


def reversible_reading(rep) -> str:
    """What the counts of a ``reversible.ReversibleReport`` show, in numbers: memory at the deepest stack, ordinary
    against reversible, the one block rebuilt in the backward, the reconstruction error and the gradient check."""
    n, (_, t, d) = rep.depths[-1], rep.shape
    ordinary, reversible, one = rep.ordinary[-1] / 1e6, rep.reversible[-1] / 1e6, rep.rebuild[-1] / 1e6
    grad = max(rep.gradients["input"], rep.gradients["parameters"]) / max(rep.gradients["scale"], 1e-30)
    return (f"With N = {n} blocks ordinary autograd keeps **{ordinary:.3f} MB** of activations for the backward "
            f"({rep.ordinary[-1] / rep.ordinary[0]:.1f}× the {rep.ordinary[0] / 1e6:.3f} MB of one block), the "
            f"reversible stack **{reversible:.3f} MB** at every depth — only its output, two streams of {t} × {d} "
            f"numbers — plus {one:.3f} MB while the backward rebuilds one block at a time; forward through {n} "
            f"blocks and inverted back, the embeddings return to within **{rep.error[-1]:.1e}** (float32 rounding: "
            f"their largest entry is {rep.scale:.2f}, the streams' grows to {rep.output_scale:.1f}), and the rebuilt "
            f"backward's gradients differ from ordinary autograd's by at most {grad:.1e} of the largest gradient.")


ENTMAX_ALPHAS = {"softmax (α = 1)": 1.0, "1.5-entmax": 1.5, "sparsemax (α = 2)": 2.0}


def entmax_maps(trace, kind: str, layer: int, head: int) -> tuple[dict, "torch.Tensor"]:
    """One head's real pre-softmax scores (QKᵀ/√d plus the bias and mask the model added, ``lesson.head_by_hand``)
    read by each of :data:`ENTMAX_ALPHAS` (``efficient.entmax``): ``({label: weights [Tq, Tk]}, scores)``. The
    softmax map is the model's own attention."""
    from core.probes.lesson import head_by_hand
    from core.trace import KIND_NAMES
    parts = head_by_hand(trace, KIND_NAMES[kind].format(layer), head)
    scores = parts["scaled"] + parts["bias"] + parts["mask"]
    return {name: E.entmax(scores, alpha) for name, alpha in ENTMAX_ALPHAS.items()}, scores


@bounded
def entmax_study(name: str, text: str, tgt: str | None, kind: str, layer: int, head: int) -> dict:
    """:func:`entmax_maps` of one head of the traced run of ``text`` on model ``name``, once per sentence and head:
    ``maps``, ``scores``, ``zeros`` (per choice, the keys each query gives exactly zero weight) and ``reading``
    (:func:`entmax_reading`)."""
    from app.shell import traced
    maps, scores = entmax_maps(traced(name, text, tgt).trace, kind, layer, head)
    return {"maps": maps, "scores": scores, "zeros": {k: E.zero_keys(w, scores).tolist() for k, w in maps.items()},
            "reading": entmax_reading(maps, scores)}


def entmax_reading(maps: dict, scores) -> str:
    """What the maps show, in numbers: how many of the pairs the head can see each choice sets to exactly zero, and
    how many keys a query keeps under sparsemax."""
    import torch
    seen = int(torch.isfinite(scores).sum())
    zeros = {name: int(E.zero_keys(w, scores).sum()) for name, w in maps.items()}
    (soft, z_soft), (mid, z_mid), (sparse, z_sparse) = zeros.items()
    low, high = int((maps[sparse] > 0).sum(-1).min()), int((maps[sparse] > 0).sum(-1).max())
    kept = f"{low} to {high} keys" if low < high else _count(low, "key")
    return (f"Of the {seen} query–key pairs this head can see, {soft} gives **{z_soft}** exactly zero weight, {mid} "
            f"**{z_mid}** ({z_mid / seen:.0%}) and {sparse} **{z_sparse}** ({z_sparse / seen:.0%}). Under sparsemax "
            f"each query keeps {kept}.")


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


@bounded(spinner="Stacking random layers until the last token depends on the first…")
def path_study(n: int, radius: int, kernel: int) -> dict:
    """``attention_cost.path_length`` of every layer kind at sentence length ``n`` (one result per n, r and k: at
    n = 512 the window and LSTM stacks take about a second each)."""
    from core.variants import attention_cost as cost
    return {kind: cost.path_length(kind, n, radius=radius, kernel=kernel) for kind in cost.PATH_KINDS}


def path_table(study: dict, radius: int, kernel: int) -> dict:
    """Columns for the page's table: the layer type, the paper's order, the exact count at this n written out, and
    the count measured from the Jacobian."""
    from core.variants import attention_cost as cost
    n = next(iter(study.values())).n
    exact = {kind: cost.path_formula(kind, n, radius=radius, kernel=kernel) for kind in study}
    written = {"attention": "1", "window": f"⌈(n − 1)/r⌉ = ⌈{n - 1}/{radius}⌉", "conv": f"⌈(n − 1)/(k − 1)⌉ = "
               f"⌈{n - 1}/{kernel - 1}⌉", "dilated": f"⌈log_k(n)⌉ = ⌈log_{kernel}({n})⌉", "lstm": "n"}
    names = {"attention": "Self-attention", "window": f"Self-attention, window radius r = {radius}",
             "conv": f"Causal convolution, kernel k = {kernel}", "dilated": f"Dilated convolution, k = {kernel}, "
             f"dilation k^layer", "lstm": "Recurrent (LSTM), one step per token"}
    return {"layer type": [names[k] for k in study],
            "maximum path length (Vaswani et al.)": [cost.PATH_KINDS[k] for k in study],
            "exact count": [f"{written[k]} = {exact[k]}" if written[k] != "1" else "1" for k in study],
            "measured layers": [study[k].layers for k in study]}


def path_reading(study: dict, radius: int, kernel: int) -> str:
    """The measured counts in a sentence, and whether each equals its exact count."""
    from core.variants import attention_cost as cost
    n = next(iter(study.values())).n
    wrong = [k for k, p in study.items() if p.layers != cost.path_formula(k, n, radius=radius, kernel=kernel)]
    words = {"attention": "self-attention layer", "window": "windowed attention layer", "conv": "convolution",
             "dilated": "dilated convolution", "lstm": "LSTM step"}
    said = {kind: f"**{_count(p.layers, words[kind])}**" for kind, p in study.items()}
    text = (f"On your {n} tokens the last token first depends on the first after {said['attention']}, "
            f"{said['window']} (r = {radius}), {said['conv']} (k = {kernel}), {said['dilated']} or {said['lstm']}. ")
    if wrong:
        return text + f"The measurement differs from the exact count for {', '.join(wrong)}."
    return text + "Each count equals the exact count from the layer's shape."
