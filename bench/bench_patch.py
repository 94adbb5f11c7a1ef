"""Cost of activation patching (core.probes.patch) against one forward pass, on CPU.

For each model: one plain forward of the pair's sentence A (batch 1, no grad, the fused path) against
(1) the head sweep — every head patched alone from B into A and from A into B, two batched passes of one
row per head (``patch.head_sweep``) — and (2) everything the Coreference page computes for a pair
(``patch.head_effects``: both clean runs, the sweep, and the joint top-k curve). Timed alternately
(A B A B …) after a warm-up; medians and the ratio to one forward are printed, then one JSON line.

Models: the bundled translators named with ``--models`` (their corpus's seed probe pair), and
``--shape default``: a randomly initialised model of the default translators' recipe
(scripts/train_bundled.sh: 4+4 layers, d_model 256, 8 heads, d_ff 1024) with 24 source and 24 decoder
tokens, so the ≤ 3 s target can be checked before the trained models exist.

    OMP_NUM_THREADS=1 python bench/bench_patch.py [--models en-fr en-de] [--shape default] [--rounds 7] [--threads 1]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
from core.hooks import all_heads
from core import ModelConfig, Transformer
from core.probes import patch
from core.io import registry


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def synthetic(vocab: int = 8000, t_src: int = 24, t_dec: int = 24):
    """A default-shaped random model and a made-up pair: the sources differ in one token, the decoder prefix
    is shared, the two 'pronouns' are two vocabulary ids."""
    torch.manual_seed(0)
    cfg = ModelConfig(kind="encoder-decoder", vocab_size=vocab, d_model=256, n_heads=8, n_encoder_layers=4,
                      n_decoder_layers=4, d_ff=1024, max_len=64, dropout=0.1)
    model = Transformer(cfg).eval()
    g = torch.Generator().manual_seed(1)
    src_a = torch.randint(5, vocab, (t_src,), generator=g).tolist()
    src_b = list(src_a)
    src_b[t_src // 2] = (src_a[t_src // 2] + 1) % vocab or 5
    dec = [2] + torch.randint(5, vocab, (t_dec - 1,), generator=g).tolist()
    s = patch.Sentence("a", "a", "x")
    setup = patch.Setup(s, patch.Sentence("b", "b", "y"), src_a, src_b, dec, dec, 7, 8,
                        patch.align(src_a, src_b), patch.align(dec, dec), [], [], [])
    ta, la = patch.clean_run(model, src_a, dec)
    tb, lb = patch.clean_run(model, src_b, dec)
    c = patch.Clean(setup, ta, tb, float(patch._ld(la, t_dec - 1, 7, 8)[0]), float(patch._ld(lb, t_dec - 1, 7, 8)[0]))
    return model, c, None


def bundled(name: str):
    ck = registry.load(name)
    a, b = patch.probe_set(ck)[0]
    return ck.model, patch.clean(ck, a, b), (ck, a, b)


@torch.no_grad()
def measure(model, c: patch.Clean, full, rounds: int) -> dict:
    s = c.setup
    src, dec = torch.tensor([s.src_a]), torch.tensor([s.dec_a])
    arms = {"forward": lambda: model(src, dec), "sweep": lambda: patch.head_sweep(model, c)}
    if full is not None:
        ck, a, b = full
        arms["head_effects"] = lambda: patch.head_effects(ck, a, b)
    else:  # the same work from the pair's ids: both clean runs, the sweep, the joint top-k curve
        def page():
            ta, la = patch.clean_run(model, s.src_a, s.dec_a)
            tb, lb = patch.clean_run(model, s.src_b, s.dec_b)
            patch.effects(model, patch.Clean(s, ta, tb, c.ld_a, c.ld_b))
        arms["head_effects"] = page
    for fn in arms.values():  # warm-up
        fn()
    times = {k: [] for k in arms}
    for _ in range(rounds):
        for k, fn in arms.items():
            times[k].append(_timed(fn))
    med = {k: statistics.median(v) for k, v in times.items()}
    heads = len(all_heads(model))
    out = {"heads": heads, "src_len": len(s.src_a), "dec_len": len(s.dec_a),
           "parameters": model.num_parameters(), **{f"{k}_s": round(v, 5) for k, v in med.items()},
           "sweep_over_forward": round(med["sweep"] / med["forward"], 2)}
    if "head_effects" in med:
        out["head_effects_over_forward"] = round(med["head_effects"] / med["forward"], 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", nargs="*", default=None, help="bundled translators (default: en-fr, en-de and the -tiny ones present)")
    ap.add_argument("--shape", choices=["default", "none"], default="default")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    names = args.models if args.models is not None else [
        n for n in ("en-fr", "en-de", "en-fr-tiny", "en-de-tiny") if n in registry.bundled()]
    results = {}
    runs = [(n, lambda n=n: bundled(n)) for n in names]
    if args.shape == "default":
        runs.append(("random 4+4 d256 h8 (default shape)", synthetic))
    print(f"{'model':<36} {'heads':>5} {'Ts/Td':>7} {'forward':>9} {'sweep':>9} {'ratio':>7} {'page':>9} {'ratio':>7}")
    for name, build in runs:
        model, c, full = build()
        r = measure(model, c, full, args.rounds)
        results[name] = r
        page = r.get("head_effects_s")
        print(f"{name:<36} {r['heads']:>5} {r['src_len']:>3}/{r['dec_len']:<3} {r['forward_s'] * 1e3:>7.2f}ms "
              f"{r['sweep_s'] * 1e3:>7.1f}ms {r['sweep_over_forward']:>6.1f}x "
              + (f"{page * 1e3:>7.1f}ms {r['head_effects_over_forward']:>6.1f}x" if page else f"{'—':>9} {'—':>7}"))
    print(json.dumps({"threads": args.threads, "rounds": args.rounds, "results": results}))


if __name__ == "__main__":
    main()
