"""Computations behind the Positional encoding, Masking and Layer outputs pages (pure PyTorch).

Everything here works on a real model and the user's token ids, or on a :class:`~core.trace.Trace`
of such a run; the pages only lay the results out.

Three groups:

* positions: similarity between encodings, the shift (rotation) property, RoPE's relative scores,
  the token / position / sum split of the embeddings, and a permutation test of the first layer;
* masks: applying an additive mask to real scores, padded batches, and running the model with an
  *extra* mask, without the causal mask, or with heads switched off (:func:`patched`), all without
  touching :mod:`core.model`;
* layers: the residual stream after every sublayer, what each sublayer adds, PCA, FFN neurons and
  the logit lens.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

import torch

from ..hooks import scale_heads
from ..inference.decoding import greedy_batch
from ..inference.runner import forward_ids
from ..io import registry
from ..io.budget import max_positions
from ..io.checkpoint import CheckpointError, read_config
from ..io.tokenizer import BOS, EOS
from ..masks import additive, alibi_bias, causal_mask, combine, padding_mask
from ..model import RunContext, Transformer
from ..positional import apply_rope, rope_cache, shift_matrix, sinusoidal
from ..trace import Trace


# ======================================================================= positions
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
    win, bias, rope = model._self_attention_terms(t, 0, src.device)
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


# ======================================================================= masks
def allowed_of(mask: torch.Tensor | None, t_q: int, t_k: int) -> torch.Tensor:
    """Boolean ``[t_q, t_k]`` view of an additive mask (None = everything allowed)."""
    if mask is None:
        return torch.ones(t_q, t_k, dtype=torch.bool)
    m = mask.float()
    while m.dim() > 2:
        m = m[0]
    return torch.isfinite(torch.broadcast_to(m, (t_q, t_k)))


def busiest_key(weights: torch.Tensor, allowed: torch.Tensor) -> int | None:
    """The key column of ``weights [Tq, Tk]`` that receives the most attention in total and can be blocked for every
    query without leaving a query with no key at all (a fully masked row is NaN); None if there is none."""
    ok = [j for j in range(weights.shape[-1]) if bool((allowed & ~_column(allowed, j)).any(-1).all())]
    return max(ok, key=lambda j: float(weights[:, j].sum())) if ok else None


def _column(allowed: torch.Tensor, j: int) -> torch.Tensor:
    only = torch.zeros_like(allowed)
    only[:, j] = True
    return only


def model_mask(trace: Trace, name: str) -> torch.Tensor:
    """The additive ``[Tq, Tk]`` mask the model itself added in attention ``name`` (zeros if none)."""
    w = trace[f"{name}.weights"]
    t_q, t_k = w.shape[-2:]
    return additive(allowed_of(trace[f"{name}.mask"] if f"{name}.mask" in trace else None, t_q, t_k))


def apply_mask(scores: torch.Tensor, mask: torch.Tensor, bias: torch.Tensor | None = None,
               extra: torch.Tensor | None = None) -> dict:
    """``softmax(scores + bias + mask)`` for one head ``[Tq, Tk]``, with the checks a learner wants to see.

    ``extra`` is a further additive mask added to ``mask`` (the combined mask is returned as ``mask``).
    ``masked_max`` is the largest weight that landed on a masked entry (0.0 exactly), ``row_masked_max``
    the same per query row (None where nothing is masked or the whole row is);
    ``row_sums`` the sum of every row; ``empty_rows`` the queries with every key masked (their
    softmax is 0/0 = NaN)."""
    scores = scores.float()
    mask = torch.broadcast_to(mask.float(), scores.shape)
    if extra is not None:
        mask = mask + extra.float()
    logits = scores + (0.0 if bias is None else bias.float()) + mask
    weights = torch.softmax(logits, dim=-1)
    allowed = torch.isfinite(mask)
    empty = ~allowed.any(-1)
    hidden = ~allowed & ~empty[:, None]
    masked_max = float(weights[hidden].max()) if bool(hidden.any()) else 0.0
    row_masked_max = [float(w[h].max()) if bool(h.any()) else None for w, h in zip(weights, hidden)]
    return {"scores": scores, "mask": mask, "logits": logits, "weights": weights, "row_sums": weights.sum(-1),
            "masked_max": masked_max, "row_masked_max": row_masked_max,
            "empty_rows": empty.nonzero().flatten().tolist(), "allowed": allowed}


def source_ids(tokenizer, model, text: str) -> list[int]:
    """Token ids of a sentence exactly as :func:`core.inference.runner.run` feeds the first stack (``model``: the model, or
    its config)."""
    ids = tokenizer.encode(text)
    cfg = getattr(model, "cfg", model)
    n = max_positions(model) if hasattr(model, "cfg") else cfg.max_len
    if cfg.kind == "encoder-decoder":
        return ids[: n - 1] + [EOS]
    if cfg.kind == "decoder-only":
        return [BOS] + ids[: n - 1]
    frame = getattr(tokenizer, "frame", list)  # BERT: [CLS] ids [SEP]; ours: the ids unchanged
    return frame(ids[: n - len(frame([]))])


@torch.no_grad()
def padding_demo(model: Transformer, long_ids: list[int], short_ids: list[int]) -> dict:
    """A batch of two sentences, the shorter one padded with [PAD], and the padding mask for it.

    Runs the first stack on the batch and on the short sentence alone: ``pad_weight`` is the largest
    attention weight any real token of the short sentence gives to a [PAD] key (0 exactly) and
    ``max_diff`` how far its outputs in the batch are from the outputs alone."""
    cfg = model.cfg
    t, n = max(len(long_ids), len(short_ids)), len(short_ids)
    rows = [list(long_ids) + [cfg.pad_id] * (t - len(long_ids)), list(short_ids) + [cfg.pad_id] * (t - n)]
    device = model.device
    batch = torch.tensor(rows, device=device)
    is_pad = batch.eq(cfg.pad_id)
    stack = "encoder" if model.encoder is not None else "decoder"

    def run(ids):
        tr = Trace(layers={0})
        h = model.encode(ids, trace=tr)[0] if stack == "encoder" else model.decode(ids, trace=tr)
        return h, tr

    hidden, tr = run(batch)
    alone, _ = run(batch[1:, :n])
    weights = tr[f"{stack}.0.self_attn.weights"]  # [B, H, T, T]
    pad_weight = float(weights[1, :, :n, n:].max()) if n < t else 0.0
    return {"ids": rows, "is_pad": is_pad.cpu(), "mask": padding_mask(is_pad).cpu(), "stack": stack,
            "square": padding_mask(is_pad).expand(len(rows), 1, t, t)[:, 0].cpu(),
            "weights": weights.cpu(), "pad_weight": pad_weight, "short_len": n,
            "max_diff": float((hidden[1, :n] - alone[0]).abs().max())}


def attention_module(model: Transformer, name: str):
    """The :class:`~core.attention.MultiHeadAttention` behind a trace name like ``decoder.1.self_attn``."""
    try:
        stack, i, sub = name.split(".")
        return getattr(getattr(model, stack).layers[int(i)], sub)
    except (ValueError, AttributeError, IndexError, TypeError):
        raise ValueError(f"no attention {name!r}; choose from {', '.join(model.attention_names())}") from None


def _fit(mask: torch.Tensor, rows: slice, t_k: int) -> torch.Tensor:
    """Rows ``rows`` and keys ``0..t_k`` of a ``[T, T]`` additive mask; positions beyond it are left open."""
    out = torch.zeros(rows.stop - rows.start, t_k, dtype=torch.float32, device=mask.device)
    part = mask[rows, :t_k]
    out[: part.shape[0], : part.shape[1]] = part
    return out


@contextmanager
def patched(model: Transformer, masks: dict | None = None, uncausal=(), heads_off: dict | None = None):
    """Change how chosen attention modules are called, for the calling thread only, then restore them.

    ``masks``: ``{"encoder.0.self_attn": additive [T, T]}`` added to the mask the model passes
    (self-attention only; during cached decoding the rows of the current positions are used);
    ``uncausal``: self-attention names whose causal mask is dropped (the decoder may look ahead);
    ``heads_off``: ``{name: [head, ...]}`` multiplies those heads' outputs by 0 (the model's own hook
    mechanism, :meth:`Transformer.hooks`, as ``forward(ablate=)`` does).
    The masks work through forward pre-hooks on the attention modules (they change its arguments, not
    a traced tensor). Calls from other threads (other users of a shared model) pass through untouched."""
    owner = threading.get_ident()
    masks, heads_off, uncausal = dict(masks or {}), dict(heads_off or {}), set(uncausal)
    names = set(masks) | uncausal
    valid = set(model.attention_names())
    for name in names | set(heads_off):
        if name not in valid:
            raise ValueError(f"no attention {name!r}; choose from {', '.join(sorted(valid))}")
        if (name in masks or name in uncausal) and not name.endswith("self_attn"):
            raise ValueError(f"{name}: extra masks and causal changes apply to self-attention only")

    def make_hook(name):
        def hook(module, args, kwargs):
            if threading.get_ident() != owner:
                return None
            kw = dict(kwargs)
            x = args[0] if args else kw["x"]
            if name in masks:
                cache = kw.get("cache")
                past = cache["k"].shape[2] if cache and "k" in cache else 0
                extra = _fit(masks[name].to(x.device), slice(past, past + x.shape[1]), past + x.shape[1])
                kw["mask"] = combine(kw.get("mask"), extra)
            if name in uncausal:
                kw["is_causal"] = False
            return args, kw
        return hook

    off = model._ablation(heads_off) or {}
    handles = [attention_module(model, n).register_forward_pre_hook(make_hook(n), with_kwargs=True) for n in names]
    try:
        with model.hooks({f"{n}.heads": scale_heads(m) for n, m in off.items()}):
            yield model
    finally:
        for h in handles:
            h.remove()


@torch.no_grad()
def run_patched(model: Transformer, src_ids, tgt_ids=None, **patch):
    """:func:`forward_ids` inside :func:`patched` (``masks``, ``uncausal``, ``heads_off``)."""
    with patched(model, **patch):
        out = forward_ids(model, src_ids, tgt_ids)
    out.trace.to("cpu")
    return out


def predictions(logits: torch.Tensor, k: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-k token ids and probabilities at every position of ``logits [.., T, V]`` (batch 0)."""
    probs = logits.float().softmax(-1)
    if probs.dim() == 3:
        probs = probs[0]
    p, i = probs.topk(min(k, probs.shape[-1]), dim=-1)
    return i, p


@torch.no_grad()
def cheat_demo(model: Transformer, src_ids: list[int], tgt_ids: list[int]) -> dict:
    """Decoder self-attention with and without its causal mask, the true target as decoder input.

    For each position i < T-1 the next true token is ``tgt_ids[i+1]``. Reports both runs' top
    predictions and the probability of the true next token, how often the top prediction *is*
    the next token, and how much attention weight went to future positions (per layer and head)."""
    names = [n for n in model.attention_names() if n.startswith("decoder.") and n.endswith("self_attn")]
    dec_in = tgt_ids if model.cfg.kind == "encoder-decoder" else src_ids
    normal = forward_ids(model, src_ids, tgt_ids)
    cheat = run_patched(model, src_ids, tgt_ids, uncausal=names)
    t = len(dec_in)
    nxt = torch.tensor(dec_in[1:], dtype=torch.long)
    out = {"names": names, "next_ids": nxt}
    future = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
    for key, res in (("normal", normal), ("cheat", cheat)):
        probs = res.logits[0].float().softmax(-1).cpu()
        top_p, top_i = probs.max(-1)
        p_next = probs[:-1].gather(-1, nxt[:, None])[:, 0]
        weights = torch.stack([res.trace[f"{n}.weights"][0].cpu() for n in names])  # [L, H, T, T]
        out[key] = {"top_ids": top_i, "top_p": top_p, "p_next": p_next,
                    "hits": float((top_i[:-1] == nxt).float().mean()) if t > 1 else 0.0,
                    "future_mass": (weights * future).sum(-1), "weights": weights, "logits": res.logits[0].cpu()}
    return out


@torch.no_grad()
def translate_ablated(model: Transformer, src_ids: list[int], heads_off: dict) -> list[int]:
    """Greedy translation of ``src_ids`` with heads switched off everywhere (encoder, decoder and cross)."""
    device = model.device
    with patched(model, heads_off=heads_off):
        return greedy_batch(model, torch.tensor([src_ids], device=device), max_new=max_positions(model) - 1)[0]


# ======================================================================= layers
def n_layers(trace: Trace, stack: str) -> int:
    """How many layers of ``stack`` (``"encoder"``, ``"decoder"``) ``trace`` recorded."""
    n = 0
    while f"{stack}.{n}.resid_post" in trace:
        n += 1
    return n


def residual_stages(trace: Trace, stack: str) -> list[tuple[str, torch.Tensor]]:
    """The residual stream of one stack after the embedding and after every sublayer: ``(label, [T, d])``."""
    stages = [("embed", trace[f"{stack}.embed.out"][0].float())]
    for i in range(n_layers(trace, stack)):
        stages.append((f"L{i} +attn", trace[f"{stack}.{i}.resid_mid"][0].float()))
        if f"{stack}.{i}.resid_cross" in trace:
            stages.append((f"L{i} +cross", trace[f"{stack}.{i}.resid_cross"][0].float()))
        stages.append((f"L{i} +ffn", trace[f"{stack}.{i}.resid_post"][0].float()))
    return stages


def stage_norms(stages) -> torch.Tensor:
    """``[stages, T]`` Euclidean norm of every token's vector at every stage."""
    return torch.stack([x.norm(dim=-1) for _, x in stages])


def sublayer_norms(trace: Trace, stack: str) -> dict:
    """Per layer and token, the norm of what each sublayer adds (``attn``, ``cross``, ``ffn``: ``[L, T]``)
    and the same relative to the norm of the stream that went into that sublayer."""
    absolute, relative = {}, {}
    prev = trace[f"{stack}.embed.out"][0].float()
    for i in range(n_layers(trace, stack)):
        for part, out_name, stream_name in (("attn", "attn_out", "resid_mid"), ("cross", "cross_out", "resid_cross"),
                                            ("ffn", "ffn_out", "resid_post")):
            if f"{stack}.{i}.{out_name}" not in trace:
                continue
            added = trace[f"{stack}.{i}.{out_name}"][0].float().norm(dim=-1)
            absolute.setdefault(part, []).append(added)
            relative.setdefault(part, []).append(added / prev.norm(dim=-1).clamp_min(1e-12))
            prev = trace[f"{stack}.{i}.{stream_name}"][0].float()
    return {"absolute": {k: torch.stack(v) for k, v in absolute.items()},
            "relative": {k: torch.stack(v) for k, v in relative.items()}}


def sublayer_summary(trace: Trace, stack: str, token: int | None = None, relative: bool = True) -> dict:
    """``{part: [L]}``: what each sublayer adds, for one token or averaged over the tokens."""
    norms = sublayer_norms(trace, stack)["relative" if relative else "absolute"]
    return {k: (v.mean(-1) if token is None else v[:, token]) for k, v in norms.items()}


def pca_2d(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact PCA of the rows of ``x [N, d]`` (SVD of the centred data): ``([N, 2] coordinates, [2] explained share)``.

    Signs are fixed (largest loading positive) so the picture does not flip between reruns."""
    x = x.double().reshape(-1, x.shape[-1])
    xc = x - x.mean(0, keepdim=True)
    _, s, vh = torch.linalg.svd(xc, full_matrices=False)
    k = min(2, vh.shape[0])
    comps = torch.zeros(2, x.shape[1], dtype=torch.float64)
    comps[:k] = vh[:k]
    sign = torch.sign(comps.gather(1, comps.abs().argmax(1, keepdim=True))).clamp_min(0) * 2 - 1
    comps = comps * sign
    var = torch.zeros(2, dtype=torch.float64)
    var[:k] = s[:k] ** 2
    total = float((s ** 2).sum())
    return (xc @ comps.T).float(), (var / total if total > 0 else var).float()


def stream_pca(stages) -> tuple[torch.Tensor, torch.Tensor]:
    """PCA fitted on every stage's token vectors at once, so all stages share axes: ``([S, T, 2], [2])``."""
    stacked = torch.stack([x for _, x in stages])  # [S, T, d]
    coords, share = pca_2d(stacked.reshape(-1, stacked.shape[-1]))
    return coords.reshape(stacked.shape[0], stacked.shape[1], 2), share


def top_neurons(act: torch.Tensor, k: int = 16) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The k FFN neurons with the largest activation on any token of ``act [T, d_ff]``:
    (indices, their peak values, their columns ``[T, k]``, the token where each peaks)."""
    act = act.float()
    peak, where = act.max(0)
    v, i = peak.topk(min(k, act.shape[-1]))
    return i, v, act[:, i], where[i]


def output_stack(model: Transformer) -> str:
    """The stack whose output becomes the logits."""
    return "encoder" if model.cfg.kind == "encoder-only" else "decoder"


@torch.no_grad()
def logit_lens(model: Transformer, trace: Trace, position: int, k: int = 5) -> list[dict]:
    """Read every stage of the output stack's residual stream as if it were the last one:
    final LayerNorm (if the model has one), then :meth:`Transformer.project`. The last stage gives
    exactly the model's own logits. Returns per stage the top-k ids and probabilities."""
    stack = output_stack(model)
    norm = getattr(model, stack).norm
    device = model.device
    rows = []
    for label, x in residual_stages(trace, stack):
        h = x[position].to(device)
        logits = model.project(norm(h) if norm is not None else h).float().cpu()
        p, i = logits.softmax(-1).topk(min(k, logits.numel()))
        rows.append({"stage": label, "logits": logits, "ids": i, "probs": p})
    final = int(rows[-1]["ids"][0])
    for row in rows:
        row["p_final"] = float(row["logits"].softmax(-1)[final])
    return rows


def compare_distributions(logits_a: torch.Tensor, logits_b: torch.Tensor, k: int = 8) -> dict:
    """Two next-token distributions side by side: the union of both top-k token ids with both
    probabilities, and the total variation distance ``½ Σ |p - q|``."""
    pa, pb = logits_a.float().softmax(-1), logits_b.float().softmax(-1)
    ids = []
    for i in pa.topk(min(k, pa.numel())).indices.tolist() + pb.topk(min(k, pb.numel())).indices.tolist():
        if i not in ids:
            ids.append(i)
    idx = torch.tensor(ids)
    return {"ids": ids, "a": pa[idx], "b": pb[idx], "tv": float((pa - pb).abs().sum() / 2),
            "top_a": int(pa.argmax()), "top_b": int(pb.argmax())}


# ======================================================================= readouts without a trained output head
def has_trained_head(ck) -> bool:
    """False for a model whose output layer was never trained (the packaged MiniLM has no masked-LM head; ours
    is left at its random initialisation): its logits are noise and must not be shown as the model's."""
    return ck.meta.get("mlm_head") != "untrained"


def _pooled(x: torch.Tensor) -> torch.Tensor:
    """Mean over the tokens of ``[T, d]``, unit length (sentence-transformers' mean pooling of one sentence)."""
    return torch.nn.functional.normalize(x.float().mean(0), dim=0)


def embedding_lens(trace: Trace, stack: str = "encoder") -> dict:
    """What the sentence-embedding model makes of each stage of its stream, read the way it was trained to be
    read: ``sentence_cos`` ``[S]``, the mean-pooled stage vector's cosine with the final sentence embedding (the
    last stage's, = what :func:`core.io.pretrained.sentence_embedding` returns), and ``token_cos`` ``[S, T]``, each
    token's cosine with its own final vector; ``stages`` names the S stages."""
    stages = residual_stages(trace, stack)
    final = stages[-1][1].float()
    emb = _pooled(final)
    return {"stages": [label for label, _ in stages],
            "sentence_cos": [float(_pooled(x) @ emb) for _, x in stages],
            "token_cos": torch.stack([torch.nn.functional.cosine_similarity(x.float(), final, dim=-1) for _, x in stages])}


def embedding_change(trace_a: Trace, trace_b: Trace, stack: str = "encoder") -> dict:
    """How far switching heads off moves a sentence-embedding model: cosine between the two sentence embeddings
    (mean-pooled final stream) and between each token's two final vectors."""
    a, b = trace_a[f"{stack}.output"][0].float(), trace_b[f"{stack}.output"][0].float()
    return {"sentence_cos": float(_pooled(a) @ _pooled(b)),
            "token_cos": torch.nn.functional.cosine_similarity(a, b, dim=-1)}
