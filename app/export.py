"""Raw attention of a run as JSON (``[layer][head][query][key]`` per kind) or long-format CSV."""
from __future__ import annotations

import csv
import io

from core import jsonio
from core.runner import Run


def attention_dict(res: Run) -> dict:
    out = {"source_tokens": res.src_tokens, "target_tokens": res.tgt_tokens, "output": res.output, "attention": {}}
    for kind in res.trace.kinds():
        out["attention"][kind] = [[[[round(float(x), 7) for x in row] for row in head] for head in layer[0]]
                                  for layer in res.trace.stacked(kind)]
    return out


def attention_json(res: Run) -> str:
    return jsonio.dumps(attention_dict(res), ensure_ascii=False)  # strict JSON (a NaN would be null)


def attention_csv(res: Run) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["kind", "layer", "head", "query_index", "query_token", "key_index", "key_token", "weight"])
    for kind in res.trace.kinds():
        q_tokens, k_tokens = res.tokens(kind)
        for li, layer in enumerate(res.trace.stacked(kind)):
            for h, head in enumerate(layer[0]):
                for i, row in enumerate(head.tolist()):
                    for j, x in enumerate(row):
                        w.writerow([kind, li, h, i, q_tokens[i], j, k_tokens[j], f"{x:.7f}"])
    return buf.getvalue()
