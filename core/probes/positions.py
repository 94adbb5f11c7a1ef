"""Positional encodings as the model uses them (pure PyTorch), behind the Positional encoding page and the Lesson.

Similarity between encodings and its dependence on the offset only, the shift as a rotation, RoPE's relative scores,
ALiBi's distance bias, the token / position / sum split of the embeddings, and a permutation test of the first layer
(without positions, attention cannot see order). Everything runs on a real model or the user's token ids. Two ways
the seeds write the sinusoidal table are checked against the paper's: the layout (:func:`layout_check`) and the
frequency indexed per dimension (:func:`indexing_check`); the table read as a binary counter (:func:`binary_check`);
and ALiBi's −s·|i − j| against the Wikipedia seed's s·(j − i) (:func:`alibi_sign_check`).
"""
from __future__ import annotations

import torch

from ..io import registry
from ..io.checkpoint import CheckpointError, read_config
from ..masks import alibi_bias, alibi_slopes, causal_mask
from ..model import RunContext, Transformer
from ..positional import (apply_rope, halves_order, rope_cache, shift_matrix, sinusoidal, sinusoidal_halves,
                          sinusoidal_per_dimension, wavelengths)
from ..trace import Trace


def position_similarity(pe: torch.Tensor, metric: str = "dot") -> torch.Tensor:
    """``[P, P]`` dot products (or cosine similarities) between the rows of a position table."""
    x = pe.double()
    if metric == "cosine":
        x = x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    elif metric != "dot":
        raise ValueError(f"unknown similarity {metric!r}; choose 'dot' or 'cosine'")
    return (x @ x.T).float()


def by_offset(matrix: torch.Tensor, starts) -> dict[int, torch.Tensor]:
    """For each start position m: ``matrix[m, m + o]`` for offsets o = 0, 1, … (same length for every m).

    If the matrix depends on the offset only, all these curves coincide."""
    n = matrix.shape[-1]
    starts = [int(m) for m in starts if 0 <= int(m) < n]
    length = n - max(starts)
    return {m: torch.stack([matrix[m, m + o] for o in range(length)]) for m in starts}


def offset_spread(matrix: torch.Tensor) -> float:
    """Largest difference between two entries with the same offset ``j - i`` (0 = depends on the offset only)."""
    n = matrix.shape[-1]
    worst = 0.0
    for o in range(-(n - 1), n):
        d = torch.diagonal(matrix.double(), offset=o)
        worst = max(worst, float(d.max() - d.min()))
    return worst


def shift_check(n_positions: int, d_model: int, k: int, base: float = 10000.0) -> dict:
    """``PE(pos + k)`` two ways: the rotation ``shift_matrix(k) @ PE(pos)`` and the table itself.

    Returns both ``[n_positions - k, d_model]`` tables (row = pos) and the largest absolute difference."""
    if not 0 <= k < n_positions:
        raise ValueError(f"shift k must be between 0 and {n_positions - 1}, got {k}")
    pe = sinusoidal(n_positions, d_model, base)
    rot = shift_matrix(k, d_model, base)
    rotated = pe[: n_positions - k] @ rot.T  # row-vector form of R_k · PE(pos)
    direct = pe[k:]
    return {"rotated": rotated, "direct": direct, "matrix": rot, "max_error": float((rotated - direct).abs().max())}


def layout_check(n_positions: int, d_model: int, base: float = 10000.0) -> dict:
    """The paper's interleaved table against the sines-then-cosines layout: both tables (``interleaved``,
    ``halves``), the largest difference between the halves table and the interleaved one with its columns reordered
    (``permutation_diff``) and between their dot products ``PE(i)·PE(j)`` (``gram_diff``)."""
    pe, halves = sinusoidal(n_positions, d_model, base), sinusoidal_halves(n_positions, d_model, base)
    gram = position_similarity(pe).double() - position_similarity(halves).double()
    return {"interleaved": pe, "halves": halves, "order": halves_order(d_model),
            "permutation_diff": float((pe[:, halves_order(d_model)] - halves).abs().max()),
            "gram_diff": float(gram.abs().max())}


def _best_pair_maps(table: torch.Tensor, k: int) -> float:
    """Largest error left by the best 2×2 linear map per pair of dimensions (2i, 2i+1) that sends every row pos of
    ``table`` to row pos + k (least squares over the positions)."""
    x = table.double()
    n, d = x.shape
    src = x[: n - k].reshape(n - k, d // 2, 2).transpose(0, 1)  # [pairs, positions, 2]
    dst = x[k:].reshape(n - k, d // 2, 2).transpose(0, 1)
    fit = torch.linalg.lstsq(src, dst).solution  # [pairs, 2, 2]
    return float((src @ fit - dst).abs().max())


def indexing_check(n_positions: int, d_model: int, k: int, base: float = 10000.0) -> dict:
    """The shift-is-a-rotation property, ``PE(pos + k) = R_k · PE(pos)``, for the paper's table (frequency per pair)
    and for the table indexed per dimension: the largest error of the paper's ``R_k`` on each (``paper``,
    ``per_dimension``), the largest error of the best 2×2 map per pair fitted to the per-dimension table
    (``per_dimension_best``; any rotation included), and the largest difference between the two tables."""
    if not 0 <= k < n_positions - 2:
        raise ValueError(f"shift k must be between 0 and {n_positions - 3}, got {k}")
    rot = shift_matrix(k, d_model, base).double()
    out = {}
    for key, table in (("paper", sinusoidal(n_positions, d_model, base)),
                       ("per_dimension", sinusoidal_per_dimension(n_positions, d_model, base))):
        x = table.double()
        out[key] = float((x[: n_positions - k] @ rot.T - x[k:]).abs().max())
        out[f"{key}_best"] = _best_pair_maps(table, k)
    out["table_diff"] = float((sinusoidal(n_positions, d_model, base)
                               - sinusoidal_per_dimension(n_positions, d_model, base)).abs().max())
    return out


def binary_check(d_model: int, base: float = 10000.0, n_positions: int = 16) -> dict:
    """The sinusoidal table read as a smooth binary counter (the Stärk survey, appendix A): bit i of the position
    flips every 2^i positions, so it repeats every 2^(i+1); for each bit, the sine dimension 2j whose wavelength
    λ_j = 2π·base^(2j/d_model) is closest to 2^(i+1), read as a bit: 1 where the sine is negative (its second
    half-wave, as a bit's second half-period is 1), 0 elsewhere.

    Returns ``bits`` and ``signs`` (``[n_positions, n_bits]`` integer tables, n_bits = the bits that count to
    n_positions − 1), ``periods`` (2^(i+1)), ``dims`` (the sine dimension picked per bit), ``wavelengths`` (its
    λ) and ``matches`` (per bit, at how many positions the sign's bit equals the real bit)."""
    if d_model < 2 or d_model % 2:
        raise ValueError(f"sinusoidal encoding needs an even d_model of 2 or more, got {d_model}")
    if n_positions < 2:
        raise ValueError(f"need 2 positions or more, got {n_positions}")
    n_bits = (n_positions - 1).bit_length()
    pos = torch.arange(n_positions)
    bits = torch.stack([(pos >> i) & 1 for i in range(n_bits)], dim=1)
    lam = wavelengths(d_model, base)
    periods = [2 ** (i + 1) for i in range(n_bits)]
    pairs = [int((lam - p).abs().argmin()) for p in periods]
    pe = sinusoidal(n_positions, d_model, base)
    signs = torch.stack([(pe[:, 2 * j] < 0).long() for j in pairs], dim=1)
    return {"bits": bits, "signs": signs, "periods": periods, "dims": [2 * j for j in pairs],
            "wavelengths": [float(lam[j]) for j in pairs], "matches": [int(m) for m in (bits == signs).sum(0)]}


def rope_scores(d_head: int, n_positions: int, base: float = 10000.0, seed: int = 0) -> torch.Tensor:
    """``[P, P]``: ``RoPE(q, m) · RoPE(k, n)`` for one fixed random pair q, k placed at every m, n."""
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(d_head, generator=gen), torch.randn(d_head, generator=gen)
    cos, sin = rope_cache(n_positions, d_head, base)
    rq = apply_rope(q.expand(n_positions, d_head), cos, sin)
    rk = apply_rope(k.expand(n_positions, d_head), cos, sin)
    return rq @ rk.T


def alibi_matrix(n_heads: int, t: int, head: int, causal: bool = False) -> torch.Tensor:
    """``[t, t]`` ALiBi bias of one head (``-slope·|i - j|``), with −∞ above the diagonal if ``causal``."""
    bias = alibi_bias(n_heads, t)[0, head]
    return bias + causal_mask(t) if causal else bias


def alibi_sign_check(n_heads: int, t: int, head: int) -> dict:
    """ALiBi as this app adds it, ``-s·|i - j|``, against the Wikipedia seed's ``s·B`` with ``B[i, j] = j - i``, for
    head ``head``'s slope s and ``t`` tokens.

    Their difference is ``s·(j - i) + s·|i - j| = 2·s·max(j - i, 0)``: zero on and below the diagonal (the keys a
    causal mask keeps), ``2·s·(j - i)`` above it. Returns both ``[t, t]`` matrices (``"app"``, ``"seed"``), the
    difference (``"diff"``), its largest ``|·|`` on and below the diagonal (``"below"``) and its largest value above
    (``"above"``, 0 for one token); then, with every content score q·k equal so that the bias alone sets the
    weights: ``"weights"`` per form (bidirectional softmax of each bias row), ``"far"`` per form (token 0's weight
    on the last token, its farthest future key), ``"self"`` per form (token 0's weight on itself), ``"future"`` per
    form (the mean over queries of the weight on keys j > i), and ``"causal_gap"``, the largest |weight difference|
    once a causal mask is added (0: the forms agree there)."""
    slope = alibi_slopes(n_heads)[head]
    app = alibi_bias(n_heads, t)[0, head]
    offset = (torch.arange(t)[None, :] - torch.arange(t)[:, None]).float()  # j - i
    seed = slope * offset
    diff = seed - app
    upper = offset > 0
    weights = {"app": torch.softmax(app.double(), -1), "seed": torch.softmax(seed.double(), -1)}
    mask = causal_mask(t).double()
    causal = [torch.softmax(b.double() + mask, -1) for b in (app, seed)]
    return {"slope": float(slope), "app": app, "seed": seed, "diff": diff,
            "below": float(diff[~upper].abs().max()), "above": float(diff[upper].max()) if t > 1 else 0.0,
            "weights": weights, "far": {f: float(w[0, -1]) for f, w in weights.items()},
            "self": {f: float(w[0, 0]) for f, w in weights.items()},
            "future": {f: float((w * upper).sum(-1).mean()) for f, w in weights.items()},
            "causal_gap": float((causal[0] - causal[1]).abs().max())}


def positional_kinds() -> dict[str, str]:
    """``{bundled model: pos_encoding}``, read from the config files only (no weights are loaded)."""
    out = {}
    for name in registry.bundled():
        try:
            out[name] = read_config(registry.BUNDLED / name)["model"].get("pos_encoding", "sinusoidal")
        except (CheckpointError, KeyError):
            continue
    return out


def embedding_parts(trace: Trace, stack: str) -> dict:
    """The embedding of each token split into the (scaled) token vector, the positional term and the sum.

    ``positions`` is None when the model adds none (RoPE, ALiBi, none); ``other`` is the largest
    difference between the traced sum and tokens + positions (token types, embedding LayerNorm)."""
    tokens = trace[f"{stack}.embed.tokens"][0].float()
    name = f"{stack}.embed.positions"
    positions = trace[name][0 if trace[name].dim() == 3 else slice(None)].float() if name in trace else None
    out = trace[f"{stack}.embed.out"][0].float()
    plain = tokens if positions is None else tokens + positions
    return {"tokens": tokens, "positions": positions, "sum": out,
            "norms": {"token": tokens.norm(dim=-1), "position": None if positions is None else positions.norm(dim=-1),
                      "sum": out.norm(dim=-1)},
            "other": float((out - plain).abs().max())}


def shuffle_order(n: int, seed: int = 0) -> list[int]:
    """A seeded permutation of ``range(n)`` that moves something whenever n > 1."""
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()
    if n > 1 and perm == list(range(n)):
        perm = perm[1:] + perm[:1]
    return perm


@torch.no_grad()
def permutation_test(model: Transformer, ids: list[int], perm: list[int]) -> dict:
    """Run the first layer of the model's first stack on the sentence and on a shuffled copy.

    *Without* positional information (no added encoding, no RoPE / ALiBi, no window or causal mask)
    self-attention and the FFN treat tokens as a set, so ``layer(x[perm]) == layer(x)[perm]``.
    *With* the model's own positional terms that no longer holds. Returns the largest difference
    for both, the per-token differences, and which positional terms the model has."""
    cfg = model.cfg
    stack_name = "encoder" if model.encoder is not None else "decoder"
    layer = getattr(model, stack_name).layers[0]
    emb = model.embed
    t = len(ids)
    src = torch.tensor([ids], device=emb.tokens.weight.device)
    x = emb.tokens(src) * emb.scale
    if emb.token_types is not None:
        x = x + emb.token_types(torch.zeros_like(src))
    table = emb.position_table()
    win, bias, rope = model.self_attention_terms(t, 0, src.device)
    terms = []
    if table is not None:
        terms.append(f"{cfg.pos_encoding} position vectors added to the embeddings")
    if rope is not None:
        terms.append("rotary embeddings (RoPE) on q and k")
    if bias is not None:
        terms.append("ALiBi distance bias on the scores")
    if win is not None:
        terms.append(f"sliding-window mask (window {cfg.window})")
    causal = stack_name == "decoder"
    if causal:
        terms.append("causal mask")

    def run(inp, positional: bool):
        h = inp + table[:t] if positional and table is not None else inp
        if emb.norm is not None:
            h = emb.norm(h)
        ctx = RunContext(None, mask=win if positional else None, causal=causal and positional,
                   bias=bias if positional else None, rope=rope if positional else None)
        return layer(h, ctx, f"{stack_name}.0")[0]

    p = torch.tensor(perm, device=src.device)
    out = {"stack": stack_name, "terms": terms, "perm": list(perm)}
    for key, positional in (("without", False), ("with", True)):
        y, y_shuffled = run(x, positional), run(x[:, p], positional)
        diff = (y_shuffled - y[p]).norm(dim=-1)  # token i of the shuffled sentence vs its original twin
        out[key] = {"max_diff": float((y_shuffled - y[p]).abs().max()), "per_token": diff.cpu()}
    return out




def shift_test(model: Transformer, ids: list[int], shift: int) -> dict:
    """The same token ids read twice, from position 0 and from position ``shift``, by the stack that reads a
    sentence (the encoder; a decoder-only model's decoder). Where the attention sees positions only relative to
    each other (RoPE) both reads compute the same scores, weights and outputs, up to rounding; where a position
    vector is added to each token (learned, sinusoidal), they differ — the model was free to use where a word is,
    not only how far apart two words are. Returns, per layer, the largest |difference| of the attention weights
    (every head, query and key) and of the layer-wise scores, the largest |difference| of the stack's output
    relative to its largest value, and for models with an output over the vocabulary (encoder-only,
    decoder-only) the largest |difference| of the log-probabilities and each read's top token at each position.
    Models with ALiBi or a window (their masks are built for a cache) are refused: ALiBi adds −slope·|i − j|,
    relative by construction."""
    cfg = model.cfg
    if cfg.pos_encoding == "alibi" or cfg.window is not None:
        raise ValueError("the shift test runs on models with added (learned, sinusoidal), rotary or no positions")
    if shift < 0 or shift + len(ids) > model.max_positions:
        raise ValueError(f"read from position {shift}, the {len(ids)} tokens would reach position "
                         f"{shift + len(ids) - 1}; this model has positions 0–{model.max_positions - 1}")
    x = torch.tensor([ids])
    reads = []
    with torch.no_grad():
        for start in (0, shift):
            tr = Trace()
            if cfg.kind == "decoder-only":
                out, stack = model.decode(x, start=start, trace=tr), "decoder"
            else:
                out, stack = model.encode(x, start=start, trace=tr)[0], "encoder"
            logp = torch.log_softmax(model.project(out).double(), -1)[0] if cfg.kind != "encoder-decoder" else None
            reads.append((tr, out[0].double(), logp))
    (t0, o0, l0), (t1, o1, l1) = reads
    layers = range(cfg.n_layers(stack))
    name = f"{stack}.{{}}.self_attn"
    result = {"stack": stack, "shift": shift,
              "weights": [float((t0[name.format(i) + ".weights"] - t1[name.format(i) + ".weights"]).abs().max())
                          for i in layers],
              "scores": [float((t0[name.format(i) + ".scores"] - t1[name.format(i) + ".scores"])
                               .nan_to_num(0.0, 0.0, 0.0).abs().max()) for i in layers],
              "output": float((o0 - o1).abs().max() / o0.abs().max().clamp_min(1e-12))}
    if l0 is not None:
        result |= {"log_probs": float((l0 - l1).abs().max()), "top": (l0.argmax(-1).tolist(), l1.argmax(-1).tolist())}
    return result
