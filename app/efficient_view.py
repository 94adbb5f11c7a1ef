"""The Efficient page's costly parts, computed once per sentence and head (``app.cache.bounded``), not on every rerun.

The Performer error curve draws 4 seeds × 10 feature counts × 2 kinds of features (≈ 3 s for a 104-token sentence on
one core); a soak of 20 sessions with long sentences (bench/soak.py) timed /efficient out 7 times in 8 minutes while it
recomputed the curve on every widget change."""
from __future__ import annotations

from app.cache import bounded
from core.variants import efficient as E

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
