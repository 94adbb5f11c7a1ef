"""``python -m core.inspect --model MODEL --src TEXT [--tgt TEXT] [--out FILE.json [--force]]``: a Trace as JSON.

Writes the tokens (source and target), the attention weights of each kind present
(``encoder``, ``decoder``, ``cross``) as nested lists ``[layer][head][query][key]``, and the output
(the translation, or the next-token top-k for a language model), and ``coverage``: the input's words the model
never saw in training, ``{"unknown_words": [...], "known_share": float}`` (``null`` when they cannot be told).
"""
from __future__ import annotations

import sys
from pathlib import Path

from .inference.runner import run
from .io import cli, jsonio, registry


def trace_json(ck, src: str, tgt: str | None = None) -> dict:
    """The JSON-ready dict of a traced run of ``src`` (and ``tgt``) through ``ck``: tokens, output, notices,
    coverage and, per attention kind, the weights ``[layer][head][query][key]``."""
    res = run(ck, src, tgt)
    out = {"model_kind": res.kind, "source_tokens": res.src_tokens, "target_tokens": res.tgt_tokens,
           "output": res.output, "next_token_top_k": [{"token": t, "p": p} for t, p in res.top_next],
           "notices": res.notices, "coverage": res.coverage, "attention": {}}
    for kind in res.trace.kinds():
        out["attention"][kind] = res.trace.stacked(kind)[:, 0].tolist()
    return out


def main(argv=None) -> int:
    """The ``python -m core.inspect`` command line: :func:`trace_json` to ``--out`` or stdout; returns the
    exit code."""
    ap = cli.Parser(prog="python -m core.inspect", description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--tgt", default=None)
    ap.add_argument("--out", default=None, help="write JSON here instead of stdout (a new file, unless --force)")
    ap.add_argument("--force", action="store_true", help="replace the file --out names if it exists")
    args = ap.parse_args(argv)
    try:
        if args.out and (Path(args.out).exists() or Path(args.out).is_symlink()) and not args.force:
            raise ValueError(f"{args.out} exists; refusing to replace it (choose a new --out, or pass --force)")
        data = trace_json(registry.load(args.model), args.src, args.tgt)
        text = jsonio.dumps(data, ensure_ascii=False)  # strict JSON: a NaN would be printed as null
        if args.out:
            Path(args.out).write_text(text, encoding="utf-8")
        else:
            print(text)
    except (ValueError, OSError) as e:
        return cli.refuse(e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
