"""Compute the model-level summaries the app shows every visitor and ship them beside the model (summaries.json).

    PYTHONPATH=. python scripts/precompute.py --model en-fr --model en-de --model minilm [--parts coref,coref_check,heads,gqa,weights,spans]
    PYTHONPATH=. python scripts/precompute.py --model lm --model lm-tiny --parts prompting
    PYTHONPATH=. python scripts/precompute.py --model en-fr --model en-de --parts encoder_heads
    PYTHONPATH=. python scripts/precompute.py --model lm --model lm-tiny --parts verbatim

What and why: core/probes/summaries.py. Run it again whenever a model's weights or its probe set change (a file for
other weights or sentences is ignored by the app, which then computes live and says so).
"""
from __future__ import annotations

import argparse
import time

import torch

from core import find_heads
from core.io import budget, jsonio, registry
from core.probes import summaries


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", action="append", required=True, help="a model name (repeat for several)")
    ap.add_argument("--parts", default=",".join(summaries.PARTS + ("encoder_heads",)),
                    help="comma-separated: coref, coref_check (8 sentences, for tests), heads, gqa, weights, spans, "
                         "prompting (few-shot curves of a GPT-style model), verbatim (its greedy and sampled "
                         "continuations of held-out prompts checked against its training text)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    parts = tuple(p.strip() for p in args.parts.split(",") if p.strip())
    for name in args.model:
        t0 = time.perf_counter()
        ck = registry.load(name, allow_path=False)
        budget.limit_positions(ck.model)  # exactly as the app loads it (app.shell.load_model)
        summary = summaries.build(ck, name, parts, log=lambda msg: print(f"{name}: {msg}", flush=True))
        if "encoder_heads" in parts and ck.model.cfg.kind == "encoder-decoder":  # measured by core.find_heads
            try:
                summary["encoder_heads"] = jsonio.finite(find_heads.encoder_heads(ck), digits=6)
                print(f"{name}: encoder_heads measured", flush=True)
            except ValueError as e:  # not a broad translator
                print(f"{name}: encoder_heads: skipped ({e})", flush=True)
        path = summaries.write(ck, name, summary)
        print(f"{name}: wrote {path} ({path.stat().st_size:,} bytes, {time.perf_counter() - t0:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
