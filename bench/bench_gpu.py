"""GPU training speed: MFU of our causal LM and tokens/s against torch.nn.Transformer (CUDA only).

Runs only where ``torch.cuda.is_available()``; elsewhere it prints
``{"status": "not measured: no GPU"}`` as its last line and exits 0.

For a ~25 M and a ~100 M parameter decoder-only model (``core.config.ModelConfig(kind=
"decoder-only")`` + ``core.model.Transformer``; pre-LN, GELU, learned positions, tied head, no
biases, dropout 0) one training step is: bf16 autocast forward, fp32 cross-entropy, backward,
gradient clipping, fused AdamW. Attention goes through ``F.scaled_dot_product_attention
(is_causal=True)`` with no explicit mask, so flash / cuDNN kernels are eligible (checked by
running one forward with only those backends allowed). Variants, timed alternately
(A B C D A B C D ...) in one process after a warm-up that includes compilation:

* ``ours_compiled``  — ``torch.compile`` of our model
* ``ours_eager``
* ``torch_eager``    — ``nn.TransformerEncoder`` (norm_first, GELU, causal mask, batch_first, no
                       bias) with the same embeddings, final LayerNorm and tied head, same optimiser
* ``torch_compiled`` — the same, compiled
* ``plain_eager`` / ``plain_compiled`` — :class:`PlainLM`, the plain reference (one fused QKV matrix, SDPA with
                       ``is_causal``, pre-LN without biases, GELU, tied head, nothing else): what "as fast as the best
                       plain implementation" is measured against (``ratio_best_ours_over_best_plain``, goal ≥ 1.0)

MFU = (6·N + 12·L·H·Q·T) · tokens/s / peak, N = parameters without the position embedding
(nanoGPT's estimate), peak = 989e12 bf16 dense FLOP/s (H100 SXM; ``--peak`` to change).

    python bench/bench_gpu.py [--sizes 25M 100M] [--rounds 5] [--steps 10] [--no-compile]
                              [--compile-scope forward|loss|step]

``--compile-scope``: what the compiled variants compile (:data:`SCOPES`; all three variants alike): ``forward``
(the default, the figures of record), ``loss`` (forward and cross-entropy in one graph), ``step`` (also the clip and
the optimiser step).

(after ``pip install -e .``; on a machine without the install, e.g. a lent GPU: ``PYTHONPATH=. python bench/bench_gpu.py``)

Last line: JSON.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

from core.config import ModelConfig
from core.model import Transformer

SIZES = {  # name: (d_model, heads, layers, d_ff, vocab, batch, seq_len)
    "25M": (512, 8, 8, 2048, 4096, 32, 1024),
    "100M": (768, 12, 12, 3072, 16384, 16, 1024),
}
GOALS = {"mfu": {"25M": 0.25, "100M": 0.35}, "ratio_vs_torch": 1.5}


class TorchLM(nn.Module):
    """A causal LM from torch.nn building blocks with the same shape as ours."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.tokens = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.positions = nn.Embedding(cfg.max_len, cfg.d_model)
        layer = nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, cfg.d_ff, dropout=cfg.dropout,
                                           activation="gelu", batch_first=True, norm_first=True, bias=cfg.bias)
        self.blocks = nn.TransformerEncoder(layer, cfg.n_decoder_layers, norm=nn.LayerNorm(cfg.d_model, bias=cfg.bias),
                                            enable_nested_tensor=False)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.tokens.weight

    def forward(self, ids):
        t = ids.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(t, device=ids.device)
        x = self.tokens(ids) + self.positions(torch.arange(t, device=ids.device))
        return self.lm_head(self.blocks(x, mask=mask, is_causal=True))


class PlainBlock(nn.Module):
    """One pre-LN decoder block written the plain way: one fused QKV matrix, SDPA with ``is_causal``, GELU MLP."""

    def __init__(self, d: int, heads: int, d_ff: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d, bias=False), nn.LayerNorm(d, bias=False)
        self.qkv, self.proj = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
        self.up, self.down = nn.Linear(d, d_ff, bias=False), nn.Linear(d_ff, d, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class PlainLM(nn.Module):
    """The reference a GPU path is held to: the smallest causal LM of the same shape as ours, with nothing but the
    tensors it needs (no hooks, no trace, no masks, no dropout modules, logits returned as a bare tensor)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.tokens = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.positions = nn.Embedding(cfg.max_len, cfg.d_model)
        self.blocks = nn.ModuleList(PlainBlock(cfg.d_model, cfg.n_heads, cfg.d_ff) for _ in range(cfg.n_decoder_layers))
        self.ln = nn.LayerNorm(cfg.d_model, bias=False)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.tokens.weight

    def forward(self, ids):
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln(x))


def config(name: str) -> ModelConfig:
    d, h, layers, d_ff, vocab, _, t = SIZES[name]
    return ModelConfig(kind="decoder-only", vocab_size=vocab, d_model=d, n_heads=h, n_decoder_layers=layers,
                       d_ff=d_ff, dropout=0.0, norm="pre", activation="gelu", pos_encoding="learned",
                       scale_embeddings=False, bias=False, max_len=t)


# what ``torch.compile`` covers in a compiled variant's step (``--compile-scope``): the forward only (loss, clip and
# optimiser eager: the measurement of record until stop 49), the forward and the cross-entropy (no float32 logits
# written out and read back by separate kernels), or the whole update too (clip and a foreach AdamW compiled into
# one graph in place of the fused AdamW kernel)
SCOPES = ("forward", "loss", "step")


def make_step(forward, params, x, y, vocab, scope: str | None = None, backend: str = "inductor"):
    """One training step of ``forward`` (ids → logits) on ``x`` → ``y``: bf16 autocast forward, fp32 cross-entropy,
    backward, clip at 1.0, AdamW (lr 3e-4, betas 0.9 / 0.95, weight decay 0.1). ``scope``: None, nothing compiled
    (an eager variant); else what ``torch.compile`` (``backend``) covers, one of :data:`SCOPES`. The arithmetic is
    the same in every scope (tests/bench/test_bench_gpu_reference.py)."""
    if scope is not None and scope not in SCOPES:
        raise ValueError(f"unknown compile scope {scope!r}; choose one of {', '.join(SCOPES)}")
    whole = scope == "step"
    opt = torch.optim.AdamW(params, lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1,
                            **({"foreach": True} if whole else {"fused": True}))
    device_type = x.device.type
    if scope == "forward":
        forward = torch.compile(forward, backend=backend)

    def loss_of(ids, targets):
        with torch.autocast(device_type, dtype=torch.bfloat16):
            logits = forward(ids)
        return F.cross_entropy(logits.float().view(-1, vocab), targets.view(-1))

    def update():
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()

    if scope in ("loss", "step"):
        loss_of = torch.compile(loss_of, backend=backend)
    if whole:
        update = torch.compile(update, backend=backend)

    def step():
        loss = loss_of(x, y)
        loss.backward()
        update()
        opt.zero_grad(set_to_none=True)
        return loss
    return step


def fused_sdpa_ok(model, x) -> bool:
    """Does our forward run with only the flash / cuDNN SDPA kernels allowed?"""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    try:
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16), \
                sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION]):
            model(x[:2])
        return True
    except RuntimeError:
        return False


def bench_size(name, args, device):
    d, h, layers, d_ff, vocab, batch, t = SIZES[name]
    cfg = config(name)
    torch.manual_seed(0)
    ours = Transformer(cfg).to(device).train()
    ref = TorchLM(cfg).to(device).train()
    plain = PlainLM(cfg).to(device).train()
    gen = torch.Generator(device="cpu").manual_seed(1)
    ids = torch.randint(1, vocab, (batch, t + 1), generator=gen).to(device)
    x, y = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()
    ours_params, ref_params, plain_params = list(ours.parameters()), list(ref.parameters()), list(plain.parameters())

    def ours_fwd(z):
        return ours(z).logits

    forwards = {"ours": (ours_fwd, ours_params), "torch": (ref, ref_params), "plain": (plain, plain_params)}
    steps = {}
    for k, (f, p) in forwards.items():
        if not args.no_compile:
            steps[f"{k}_compiled"] = make_step(f, p, x, y, vocab, scope=args.compile_scope)
    for k, (f, p) in forwards.items():
        steps[f"{k}_eager"] = make_step(f, p, x, y, vocab)
    compile_s = {}
    for k, step in steps.items():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(args.warmup):
            step()
        torch.cuda.synchronize()
        compile_s[k] = time.perf_counter() - t0
    times = {k: [] for k in steps}
    for _ in range(args.rounds):  # A B C D A B C D ...
        for k, step in steps.items():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(args.steps):
                step()
            torch.cuda.synchronize()
            times[k].append((time.perf_counter() - t0) / args.steps)

    n_all = sum(p.numel() for p in ours_params)
    n = n_all - ours.embed.positions.weight.numel()
    fpt = 6 * n + 12 * layers * h * (d // h) * t
    tokens = batch * t
    out = {"config": {"d_model": d, "heads": h, "layers": layers, "d_ff": d_ff, "vocab": vocab, "batch": batch,
                      "seq_len": t}, "params_all": n_all, "params_N": n, "flops_per_token": fpt,
           "fused_sdpa_flash_or_cudnn": fused_sdpa_ok(ours, x), "warmup_s": {k: round(v, 1) for k, v in compile_s.items()},
           "peak_mem_gib": torch.cuda.max_memory_allocated() / 2 ** 30, "variants": {}}
    for k, ts in times.items():
        tps = tokens / statistics.median(ts)
        out["variants"][k] = {"tokens_per_s": tps, "step_ms_median": 1000 * statistics.median(ts),
                              "mfu": fpt * tps / args.peak}
    v = out["variants"]
    best_ours = max(v[k]["tokens_per_s"] for k in v if k.startswith("ours"))
    best_torch = max(v[k]["tokens_per_s"] for k in v if k.startswith("torch"))
    out["mfu"] = max(v[k]["mfu"] for k in v if k.startswith("ours"))
    out["ratio_best_ours_over_best_torch"] = best_ours / best_torch
    best_plain = max(v[k]["tokens_per_s"] for k in v if k.startswith("plain"))
    out["ratio_best_ours_over_best_plain"] = best_ours / best_plain
    out["ratio_eager"] = v["ours_eager"]["tokens_per_s"] / v["torch_eager"]["tokens_per_s"]
    if "ours_compiled" in v:
        out["ratio_compiled"] = v["ours_compiled"]["tokens_per_s"] / v["torch_compiled"]["tokens_per_s"]
    out["goal_mfu"] = GOALS["mfu"][name]
    out["goal_met"] = out["mfu"] >= GOALS["mfu"][name] and out["ratio_best_ours_over_best_torch"] >= GOALS["ratio_vs_torch"]
    del ours, ref, plain, steps, forwards
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10, help="steps per round")
    ap.add_argument("--warmup", type=int, default=3, help="steps before timing (includes compilation)")
    ap.add_argument("--peak", type=float, default=989e12, help="bf16 dense peak FLOP/s (H100 SXM: 989e12)")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--compile-scope", choices=SCOPES, default="forward",
                    help="what torch.compile covers in the compiled variants (same for all three)")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA device: nothing measured")
        print(json.dumps({"status": "not measured: no GPU"}))
        return None
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    device = torch.device("cuda")
    result = {"status": "measured", "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "peak_flops": args.peak, "compile": not args.no_compile,
              "compile_scope": None if args.no_compile else args.compile_scope, "sizes": {}}
    for name in args.sizes:
        r = result["sizes"][name] = bench_size(name, args, device)
        print(f"\n{name}: {r['params_all'] / 1e6:.1f} M params (N {r['params_N'] / 1e6:.1f} M), "
              f"batch {r['config']['batch']} x T {r['config']['seq_len']}, fused SDPA {r['fused_sdpa_flash_or_cudnn']}, "
              f"peak memory {r['peak_mem_gib']:.1f} GiB")
        for k, v in r["variants"].items():
            print(f"  {k:<15}{v['tokens_per_s']:>14,.0f} tokens/s{v['step_ms_median']:>10.1f} ms/step   MFU {v['mfu']:.3f}")
        print(f"  best ours / best plain reference: {r['ratio_best_ours_over_best_plain']:.2f}x (goal >= 1.0)")
        print(f"  best ours / best torch: {r['ratio_best_ours_over_best_torch']:.2f}x; MFU {r['mfu']:.3f} "
              f"(goal {r['goal_mfu']:.2f}; ratio goal {GOALS['ratio_vs_torch']}x): "
              f"{'met' if r['goal_met'] else 'not met'}")
    try:
        from torch._dynamo.utils import counters
        result["graph_breaks"] = sum(counters["graph_break"].values())
    except Exception:  # noqa: BLE001 - diagnostics only
        pass
    print(json.dumps(result, separators=(",", ":")))
    return result


if __name__ == "__main__":
    main()
