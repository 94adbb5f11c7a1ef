"""How close a training step of our decoder-only model comes to this CPU's matmul limit.

Peak: the measured fp32 throughput of a square matmul (default 2048³, ``torch.mm`` into a
preallocated output) at the same thread count. Achieved: model FLOPs of one training step
(forward + backward + gradient clipping + AdamW, as in ``core/training/trainer.py``) divided by its time,
with nanoGPT's estimate

    flops/token = 6·N + 12·L·H·Q·T          (L layers, H heads, Q head dim, T sequence length)

where N is every parameter except the learned position embedding (nanoGPT's
``get_num_params(non_embedding=True)``; the tied token embedding counts once, it is the output
matmul). The fraction with N = all parameters is printed too. The attention term counts the full
T×T matrices, as nanoGPT does, although half of them are masked.

Peak and each model are timed alternately (P A P B P A P B ...) in one process; the fraction is
taken per round (each step against the peak measured right before it) and the median reported.
One step per model is then profiled with torch.profiler: the share of time in GEMMs, the number
of operator calls, the top operators. Also measured: matmul throughput at the shapes the models
actually use, as a fraction of the square peak measured just before (the "small matmul" effect),
and the same step with AdamW's per-parameter for-loop instead of ``fused=True`` (which
``core/training/trainer.py`` uses on CPU and CUDA), plus ``opt.step()`` alone both ways. With ``--threads 2 1`` (the default) the whole
measurement is also made at 1 thread, interleaved with the 2-thread rounds, as a diagnostic of
threading overhead on many small operators; the headline is the first thread count.

    python bench/bench_mfu_cpu.py [--threads 2 1] [--rounds 5] [--steps 2]

Last line: JSON.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F
from core import ModelConfig, Transformer

MODELS = {  # name: (d_model, heads, layers, d_ff, vocab, batch, seq_len)
    "1M": (128, 4, 4, 512, 1000, 32, 128),
    "10M": (320, 5, 8, 1280, 1000, 16, 128),
}
GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::matmul", "aten::linear", "aten::baddbmm")


def build(name, dropout, fused_adamw=True):
    """Model, batch and one training step as ``core/training/trainer.py`` runs it on CPU (``fused_adamw=True``)."""
    d, h, layers, d_ff, vocab, batch, t = MODELS[name]
    cfg = ModelConfig(kind="decoder-only", vocab_size=vocab, d_model=d, n_heads=h, n_decoder_layers=layers,
                      d_ff=d_ff, dropout=dropout, norm="pre", activation="gelu", pos_encoding="learned",
                      scale_embeddings=False, max_len=t)
    torch.manual_seed(0)
    model = Transformer(cfg).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9, weight_decay=0.01,
                            fused=fused_adamw)
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(1, vocab, (batch, t + 1), generator=gen)
    x, y = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()

    def step():
        logits = model(x).logits
        loss = F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=0, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    n_all = model.num_parameters()
    n = n_all - model.embed.positions.weight.numel()
    attn = 12 * layers * h * (d // h) * t
    info = {"d_model": d, "heads": h, "layers": layers, "d_ff": d_ff, "vocab": vocab, "batch": batch, "seq_len": t,
            "params_all": n_all, "params_N": n, "flops_per_token": 6 * n + attn,
            "flops_per_token_all_params": 6 * n_all + attn, "tokens_per_step": batch * t}
    return step, info


def shapes_of(info):
    d, bt = info["d_model"], info["batch"] * info["seq_len"]
    return {f"{bt}x{d}x{3 * d} (qkv)": (bt, d, 3 * d), f"{bt}x{d}x{info['d_ff']} (ffn up)": (bt, d, info["d_ff"]),
            f"{bt}x{info['d_ff']}x{d} (ffn down)": (bt, info["d_ff"], d),
            f"{bt}x{d}x{info['vocab']} (lm head)": (bt, d, info["vocab"])}


def optimizer_step_ms(name, rounds=7):
    """opt.step() alone on random gradients: AdamW for-loop vs fused=True (core/training/trainer.py)."""
    opts = {}
    for kind in ("default", "fused"):
        torch.manual_seed(0)
        d, h, layers, d_ff, vocab, _, t = MODELS[name]
        model = Transformer(ModelConfig(kind="decoder-only", vocab_size=vocab, d_model=d, n_heads=h,
                                        n_decoder_layers=layers, d_ff=d_ff, norm="pre", activation="gelu",
                                        pos_encoding="learned", max_len=t))
        for p in model.parameters():
            p.grad = torch.randn_like(p)
        opts[kind] = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9, weight_decay=0.01,
                                       fused=kind == "fused")
        opts[kind].step()
    times = {k: [] for k in opts}
    for _ in range(rounds):
        for k, o in opts.items():  # A B A B
            t0 = time.perf_counter()
            o.step()
            times[k].append(time.perf_counter() - t0)
    return {k: 1000 * statistics.median(v) for k, v in times.items()}


def matmul_gflops(m, k, n, reps=3):
    a, b = torch.randn(m, k), torch.randn(k, n)
    out = torch.empty(m, n)
    torch.mm(a, b, out=out)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        torch.mm(a, b, out=out)
        ts.append(time.perf_counter() - t0)
    return 2 * m * k * n / statistics.median(ts) / 1e9


def timed(fn, steps):
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    return (time.perf_counter() - t0) / steps


def profile_step(step):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    gemm = sum(e.self_cpu_time_total for e in events if e.key in GEMM_OPS)
    calls = sum(e.count for e in events if e.key.startswith("aten::"))
    top = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:8]
    return {"gemm_share_of_self_cpu": gemm / total, "aten_calls": calls, "profiled_ms": total / 1000,
            "top": [{"op": e.key, "self_ms": round(e.self_cpu_time_total / 1000, 2), "calls": e.count,
                     "share": round(e.self_cpu_time_total / total, 3)} for e in top]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[2, 1],
                    help="thread counts, alternated; the first is the headline (the app's trainer uses 2)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=2, help="training steps per round")
    ap.add_argument("--peak-n", type=int, default=2048, help="square matmul size for the peak")
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    args = ap.parse_args(argv)
    n = args.peak_n
    threads = args.threads

    variants = {(name, opt): build(name, args.dropout, fused_adamw=opt == "fused")
                for name in args.models for opt in ("default", "fused")}
    for th in threads:
        torch.set_num_threads(th)
        matmul_gflops(n, n, n, reps=2)  # warm-up
        for step, _ in variants.values():
            step(), step()
    peaks = {th: [] for th in threads}
    rounds = {(key, th): [] for key in variants for th in threads}
    shape_ratios = {name: {} for name in args.models}
    for _ in range(args.rounds):  # P A P B P A P B ..., each thread count in turn
        for th in threads:
            torch.set_num_threads(th)
            for key, (step, info) in variants.items():
                peak = matmul_gflops(n, n, n)
                dt = timed(step, args.steps)
                peaks[th].append(peak)
                rounds[key, th].append((peak, dt))
                if th == threads[0] and key[1] == "fused":  # the model's own matmul shapes, vs this peak
                    for label, mkn in shapes_of(info).items():
                        shape_ratios[key[0]].setdefault(label, []).append(matmul_gflops(*mkn) / peak)
    torch.set_num_threads(threads[0])

    def summary(key, th):
        info = variants[key][1]
        fpt, tok = info["flops_per_token"], info["tokens_per_step"]
        dts = [dt for _, dt in rounds[key, th]]
        fractions = [fpt * tok / dt / 1e9 / p for p, dt in rounds[key, th]]
        return {"step_ms_median": 1000 * statistics.median(dts), "tokens_per_s": tok / statistics.median(dts),
                "achieved_gflops_median": statistics.median(fpt * tok / dt / 1e9 for dt in dts),
                "mfu_cpu_median": statistics.median(fractions),
                "mfu_cpu_all_params_median": statistics.median(
                    info["flops_per_token_all_params"] * tok / dt / 1e9 / p for p, dt in rounds[key, th]),
                "mfu_cpu_per_round": [round(f, 4) for f in fractions]}

    th0 = threads[0]
    result = {"torch": torch.__version__, "threads": th0, "peak_matmul": f"{n}x{n}x{n} fp32",
              "peak_gflops_median": statistics.median(peaks[th0]), "peak_gflops_min": min(peaks[th0]),
              "peak_gflops_max": max(peaks[th0]), "dropout": args.dropout,
              "optimizer": "AdamW(fused=True), as core/training/trainer.py builds it on CPU",
              "other_threads": {th: {"peak_gflops_median": statistics.median(peaks[th]),
                                     "models": {name: summary((name, "fused"), th) for name in args.models}}
                                for th in threads[1:]},
              "models": {}}
    for name in args.models:
        step, info = variants[name, "fused"]
        result["models"][name] = info | summary((name, "fused"), th0) | {
            "with_adamw_for_loop": summary((name, "default"), th0),
            "optimizer_step_ms": optimizer_step_ms(name),
            "shape_gflops_over_peak": {k: round(statistics.median(v), 3) for k, v in shape_ratios[name].items()},
            "profile": profile_step(step)}

    print(f"torch {torch.__version__}, {result['threads']} threads, {args.rounds} alternating rounds")
    print(f"peak {result['peak_matmul']}: median {result['peak_gflops_median']:.1f} GFLOP/s "
          f"(min {result['peak_gflops_min']:.1f}, max {result['peak_gflops_max']:.1f})")
    for name, r in result["models"].items():
        print(f"\n{name}: d_model {r['d_model']}, {r['layers']} layers, {r['heads']} heads, d_ff {r['d_ff']}, "
              f"vocab {r['vocab']}, batch {r['batch']} x T {r['seq_len']}; N = {r['params_N']:,} "
              f"(all {r['params_all']:,})")
        print(f"  step {r['step_ms_median']:.1f} ms, {r['tokens_per_s']:,.0f} tokens/s, "
              f"{r['achieved_gflops_median']:.1f} GFLOP/s achieved")
        print(f"  fraction of peak (median of per-round ratios): {r['mfu_cpu_median']:.3f}  "
              f"[N = all params: {r['mfu_cpu_all_params_median']:.3f}]")
        f = r["with_adamw_for_loop"]
        print(f"  same step with AdamW's for-loop: {f['step_ms_median']:.1f} ms, {f['tokens_per_s']:,.0f} tokens/s, "
              f"fraction {f['mfu_cpu_median']:.3f}; opt.step() alone: "
              + ", ".join(f"{k} {v:.1f} ms" for k, v in r["optimizer_step_ms"].items()))
        print("  matmul at model shapes / square peak: "
              + ", ".join(f"{k} {v:.2f}" for k, v in r["shape_gflops_over_peak"].items()))
        p = r["profile"]
        print(f"  profile (1 step): GEMM share of self CPU {p['gemm_share_of_self_cpu']:.2f}, "
              f"{p['aten_calls']} aten calls")
        for e in p["top"]:
            print(f"    {e['op']:<45}{e['self_ms']:>9.2f} ms{e['calls']:>6} calls{e['share']:>7.1%}")
    for th, o in result["other_threads"].items():
        print(f"\nsame models at {th} thread(s), alternated with the above: peak {o['peak_gflops_median']:.1f} GFLOP/s; "
              + ", ".join(f"{k}: {v['tokens_per_s']:,.0f} tokens/s, fraction {v['mfu_cpu_median']:.3f}"
                          for k, v in o["models"].items()))
    print(json.dumps(result, separators=(",", ":")))
    return result


if __name__ == "__main__":
    main()
