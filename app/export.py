"""Raw attention of a run as JSON (``[layer][head][query][key]`` per kind) or long-format CSV.

Built only when a learner asks (the Attention page passes these functions to ``st.download_button``, which calls
them on click), as UTF-8 bytes, and only when :func:`estimate` says the file fits ``core.io.budget.EXPORT_BYTES``:
the token limit (core.io.budget) keeps a run with ordinary tokens within it, and this check covers long tokens.
"""
from __future__ import annotations

import csv
import io

from core.io import budget, jsonio
from core.inference.runner import Run


def _weights(res: Run) -> int:
    return sum(res.trace.stacked(kind)[:, 0].numel() for kind in res.trace.kinds())


def _csv_field_bytes(token: str) -> int:
    """The UTF-8 bytes ``csv.writer`` (minimal quoting) writes for ``token`` as one field: the token itself, or, when
    it holds a comma, a quote or a line break, the token with its quotes doubled, between two quotes."""
    if any(c in token for c in ',"\r\n'):
        return len(token.encode()) + token.count('"') + 2
    return len(token.encode())


def estimate(res: Run) -> dict:
    """Upper bounds, in bytes, of the JSON and CSV exports of ``res`` (no file is built): the CSV's token fields
    exactly, its other fields at their widest."""
    out = {"json": 0, "csv": 0}
    for kind in res.trace.kinds():
        q_tokens, k_tokens = res.tokens(kind)
        n = res.trace.stacked(kind)[:, 0].shape[:2].numel()  # layers × heads
        tq, tk = len(q_tokens), len(k_tokens)
        q_bytes = sum(_csv_field_bytes(t) for t in q_tokens)
        k_bytes = sum(_csv_field_bytes(t) for t in k_tokens)
        out["json"] += n * tq * tk * budget.JSON_VALUE_BYTES
        out["csv"] += n * (tq * tk * budget.CSV_ROW_BYTES + tk * q_bytes + tq * k_bytes)
    tokens = sum(len(t.encode()) * 6 + 4 for t in [*res.src_tokens, *res.tgt_tokens])  # JSON escapes: \\uXXXX
    out["json"] += tokens + 6 * len(res.output.encode()) + 256
    return out


def too_large(res: Run) -> str | None:
    """Why this run is not offered for export, or None when both files fit the budget."""
    size = max(estimate(res).values())
    if size <= budget.EXPORT_BYTES:
        return None
    return (f"This run's attention export would be about {size / 2 ** 20:,.0f} MB, over the "
            f"{budget.EXPORT_BYTES / 2 ** 20:,.0f} MB the server builds per file. Shorten the sentence to export it.")


def attention_dict(res: Run) -> dict:
    out = {"source_tokens": res.src_tokens, "target_tokens": res.tgt_tokens, "output": res.output, "attention": {}}
    for kind in res.trace.kinds():
        out["attention"][kind] = [[[[round(float(x), 7) for x in row] for row in head] for head in layer[0].tolist()]
                                  for layer in res.trace.stacked(kind)]
    return out


def _check(res: Run) -> None:
    why = too_large(res)
    if why:
        raise ValueError(why)


def attention_json(res: Run) -> bytes:
    _check(res)
    return jsonio.dumps(attention_dict(res), ensure_ascii=False).encode()  # strict JSON (a NaN would be null)


def attention_csv(res: Run) -> bytes:
    _check(res)
    raw = io.BytesIO()
    buf = io.TextIOWrapper(raw, encoding="utf-8", newline="")
    w = csv.writer(buf)
    w.writerow(["kind", "layer", "head", "query_index", "query_token", "key_index", "key_token", "weight"])
    for kind in res.trace.kinds():
        q_tokens, k_tokens = res.tokens(kind)
        for li, layer in enumerate(res.trace.stacked(kind)):
            for h, head in enumerate(layer[0]):
                for i, row in enumerate(head.tolist()):
                    w.writerows([kind, li, h, i, q_tokens[i], j, k_tokens[j], f"{x:.7f}"] for j, x in enumerate(row))
    buf.flush()
    return raw.getvalue()
