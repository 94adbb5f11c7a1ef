"""The Efficient page's costly parts, computed once per sentence and head (``app.cache.bounded``), not on every rerun.

The Performer error curve draws 4 seeds × 10 feature counts × 2 kinds of features (≈ 3 s for a 104-token sentence on
one core); a soak of 20 sessions with long sentences (bench/soak.py) timed /efficient out 7 times in 8 minutes while it
recomputed the curve on every widget change."""
from __future__ import annotations

from app.cache import bounded
from core.variants import efficient as E
from core.probes import compress as SP

FEATURES = (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)
MAX_DEFAULT_TILES = 8  # the tile slider starts where the followed query reads at most this many key blocks


@bounded(spinner="Drawing random features for the error curve…")
def favor_curves(name: str, text: str, tgt: str | None, kind: str, layer: int, head: int, causal: bool) -> dict:
    """Mean |Performer − exact| per number of random features, orthogonal and i.i.d. (mean of 4 seeds), for one head
    of the traced run of ``text`` on model ``name``."""
    from app.shell import traced
    q, k, _ = E.head_qkv(traced(name, text, tgt).trace, kind, layer, head)
    return {label: E.favor_error_curve(q, k, list(FEATURES), seeds=range(4), causal=causal, orthogonal=o)
            for label, o in (("orthogonal features", True), ("i.i.d. features", False))}


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
