"""What each layer outputs (pure PyTorch), behind the Layer outputs page and the Lesson.

The residual stream after every sublayer and what each sublayer adds, a 2-D PCA of the stream, the most active FFN
neurons, the logit lens, and for a model without a trained output head (MiniLM) a sentence-embedding lens. Everything
reads a :class:`~core.trace.Trace` of a real run on the user's sentence. :func:`same_word` follows one word through
two sentences, stage by stage (static token embedding, then contextual vectors).
"""
from __future__ import annotations

import torch

from ..io.budget import max_positions
from ..io.tokenizer import BOS, EOS, UNK, normalize_text
from ..model import Transformer
from ..trace import Trace


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


# ======================================================================= one word, two sentences
def sentence_words(tok, text: str) -> list[tuple[str, list[int]]]:
    """The words of ``text`` as the tokenizer splits it: ``(word as typed, indices of its tokens in
    tok.encode(text))``, in order. A word cut into several sub-word pieces has several indices; punctuation is a word
    of its own. ``tok`` is a :class:`core.io.tokenizer.Tokenizer` or :class:`core.io.pretrained.BertTokenizer`."""
    norm = normalize_text(text)
    enc = tok.hf.encode(norm, add_special_tokens=False)
    groups: dict[int, list[int]] = {}
    for i, w in enumerate(enc.word_ids):
        if w is not None:
            groups.setdefault(w, []).append(i)
    return [(norm[min(enc.offsets[i][0] for i in idx):max(enc.offsets[i][1] for i in idx)].strip(), idx)
            for idx in groups.values()]


def _is_word(word: str) -> bool:
    return any(ch.isalnum() for ch in word)


def shared_words(tok, text_a: str, text_b: str) -> list[str]:
    """The words (lower case, with a letter or digit) that both texts contain, in the order of ``text_a``."""
    in_b = {w.casefold() for w, _ in sentence_words(tok, text_b)}
    out = []
    for w, _ in sentence_words(tok, text_a):
        if _is_word(w) and w.casefold() in in_b and w.casefold() not in out:
            out.append(w.casefold())
    return out


def _framed(model: Transformer, tok, ids: list[int]) -> tuple[list[int], int]:
    """The ids the model's reading stack takes for one sentence, as :func:`core.inference.runner.run` frames them,
    and where ``ids`` start inside them."""
    kind = model.cfg.kind
    if kind == "encoder-decoder":
        return ids + [EOS], 0
    if kind == "decoder-only":
        return [BOS] + ids, 1
    framed = tok.frame(ids)
    return framed, next(k for k in range(len(framed) - len(ids) + 1) if framed[k:k + len(ids)] == ids)


def _cos(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double(), b.double()
    return float(a @ b / (a.norm() * b.norm()).clamp_min(1e-300))


@torch.no_grad()
def same_word(model: Transformer, tok, text_a: str, text_b: str, word: str, other: str | None = None,
              text_c: str | None = None) -> dict:
    """One word in two sentences: its vector at every stage of the stack that reads a sentence (the encoder; a
    decoder-only model's decoder): the token embedding, the embedding output (+ position; for BERT also the token
    type and a LayerNorm) and the output of every layer. A word cut into several tokens is the mean of its tokens'
    vectors; its first occurrence (case-insensitive) in each sentence is used.

    Returns ``stages`` (S names), ``same`` (S cosines between the word's vector in ``text_a`` and in ``text_b``),
    ``other`` (S cosines between the word and the word ``other`` of ``text_a``, or None), ``control`` (S cosines
    between the word in ``text_a`` and in ``text_c``, a sentence where it means the same as in ``text_a``, or None),
    the token strings of each word (``pieces_a``, ``pieces_b``, ``pieces_other``, ``pieces_c``), their ids
    (``ids_a`` …) and indices in the model's input (``index_a`` …),
    ``unknown`` (the chosen words that contain [UNK]) and the vectors ``a``, ``b`` ``[S, d]``. The token embedding
    of the same ids is the same row, so ``same[0]`` is 1 up to rounding. Raises ValueError (a message for the user)
    when a word is missing or a sentence is too long."""
    word = word.strip()
    unk = getattr(tok, "unk_id", UNK)
    kind = model.cfg.kind
    stack = "decoder" if kind == "decoder-only" else "encoder"
    wanted = [("a", text_a, word, "sentence A"), ("b", text_b, word, "sentence B")]
    if other:
        wanted.append(("other", text_a, other.strip(), "sentence A"))
    if text_c:
        wanted.append(("c", text_c, word, "sentence C"))
    runs, found = {}, {}
    for key, text, w, where in wanted:
        if text not in runs:
            ids = tok.encode(text)
            if not ids:
                raise ValueError(f"S{where[1:]} is empty: type a sentence.")
            framed, start = _framed(model, tok, ids)
            if len(framed) > max_positions(model):
                raise ValueError(f"S{where[1:]} has {len(framed)} tokens; this model reads at most "
                                 f"{max_positions(model)}. Shorten it.")
            trace = Trace()
            x = torch.tensor([framed], device=model.device)
            if stack == "decoder":
                model.decode(x, trace=trace)
            else:
                model.encode(x, trace=trace)
            layers = [trace[f"{stack}.{i}.resid_post"][0] for i in range(n_layers(trace, stack))]
            stages = [trace[f"{stack}.embed.tokens"][0], trace[f"{stack}.embed.out"][0], *layers]
            runs[text] = (sentence_words(tok, text), framed, start, torch.stack(stages).float().cpu())
        words, framed, start, stages = runs[text]
        hit = next((idx for t, idx in words if t.casefold() == w.casefold()), None)
        if hit is None:
            raise ValueError(f"“{w}” is not a word of {where}.")
        index = [start + i for i in hit]
        ids = [framed[i] for i in index]
        found[key] = {"index": index, "ids": ids, "pieces": tok.display(ids),
                      "unknown": unk in ids, "vector": stages[:, index].mean(1)}
    a, b = found["a"]["vector"], found["b"]["vector"]
    n_l = a.shape[0] - 2
    result = {"stack": stack, "stages": ["token", "+ position"] + [f"layer {i}" for i in range(n_l)],
              "same": [_cos(a[s], b[s]) for s in range(a.shape[0])], "other": None, "control": None, "a": a, "b": b,
              "unknown": [w for key, w in (("a", word), ("other", other)) if key in found and found[key]["unknown"]]}
    for key, name in (("other", "other"), ("c", "control")):
        if key in found:
            v = found[key]["vector"]
            result[name] = [_cos(a[s], v[s]) for s in range(a.shape[0])]
    for key, f in found.items():
        result[f"pieces_{key}"], result[f"index_{key}"], result[f"ids_{key}"] = f["pieces"], f["index"], f["ids"]
    return result
