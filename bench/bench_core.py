"""Speed of the core Transformer on CPU.

(a) Training throughput (forward + backward) of our encoder-decoder against ``torch.nn.Transformer``
    at the same size, both with token embeddings (×√d, sinusoidal positions), source padding masks,
    a causal target mask, a tied output projection and cross-entropy, so both do the same work.
    The two are timed alternately (A B A B ...) in one process after a warm-up, and the median of
    the rounds is reported. Dropout sits in the same places in both: the embedding + positional
    encoding sums and each sub-layer's output (the paper's sec. 5.4, "Residual Dropout"), and the
    attention weights (not in the paper; nn.MultiheadAttention applies it through its ``dropout``
    argument, and so does ours); ours draws its masks with ``core.dropout`` (four elements per 64-bit
    random draw), nn.Transformer with torch's ``bernoulli_`` (one draw per element).
(c) Decoder-only (causal LM): our ``kind="decoder-only"`` model (pre-LN, GELU, learned positions,
    tied head) against a compact nanoGPT-style causal LM written below (token + position
    embedding, pre-LN blocks with one fused qkv Linear and ``F.scaled_dot_product_attention
    (is_causal=True)``, GELU MLP, tied head) at the same size, also alternating A B A B.
(b) Inference cost of tracing: ``model(src, tgt, trace=True)`` (every tensor kept, attention maps
    deferred until read) and the same followed by reading every map (``Trace.materialize``: what a
    page drawing all layers costs) against the fused forward, eval mode, no grad, at several lengths.

Prints a table, then, as the last line, one JSON object with every figure.

(d) Optional (``--sizes 64 128 256``): (a) at other widths, dropout 0.1 and 0.

    python bench/bench_core.py [--threads 2] [--rounds 7] [--steps 8] [--trace-lengths 16 64 128 256 512] [--sizes ...]
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn
from core import ModelConfig, Transformer
from core.positional import sinusoidal

PAD = 0


class TorchBaseline(nn.Module):
    """nn.Transformer wrapped with the same embedding and output head as ours."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.tokens = nn.Embedding(cfg.vocab_size, cfg.d_model)
        nn.init.normal_(self.tokens.weight, std=cfg.d_model ** -0.5)
        self.register_buffer("pe", sinusoidal(cfg.max_len, cfg.d_model, cfg.pe_base), persistent=False)
        self.drop = nn.Dropout(cfg.dropout)
        self.core = nn.Transformer(d_model=cfg.d_model, nhead=cfg.n_heads, num_encoder_layers=cfg.n_encoder_layers,
                                   num_decoder_layers=cfg.n_decoder_layers, dim_feedforward=cfg.d_ff,
                                   dropout=cfg.dropout, activation=cfg.activation, batch_first=True,
                                   norm_first=cfg.norm == "pre")
        # Same dropout placement as ours: the paper's sec. 5.4 (each sub-layer's output before the residual
        # add and norm, and the embedding + positional-encoding sums) plus the attention weights, which the
        # paper does not mention but nn.MultiheadAttention and ours drop. nn.Transformer also drops the
        # FFN's hidden activation, which neither the paper nor ours does: switched off here.
        for layer in [*self.core.encoder.layers, *self.core.decoder.layers]:
            layer.dropout = nn.Identity()
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.tokens.weight
        self.scale = math.sqrt(cfg.d_model)

    def embed(self, ids):
        return self.drop(self.tokens(ids) * self.scale + self.pe[: ids.shape[1]])

    def forward(self, src, tgt):
        pad = src.eq(PAD)
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1], device=tgt.device)
        h = self.core(self.embed(src), self.embed(tgt), tgt_mask=causal, src_key_padding_mask=pad,
                      memory_key_padding_mask=pad, tgt_is_causal=True)
        return self.lm_head(h)


class NanoBlock(nn.Module):
    """nanoGPT's Block: x + attn(ln_1(x)); x + mlp(ln_2(x))."""

    def __init__(self, d, h, d_ff, dropout, bias):
        super().__init__()
        self.h, self.dropout = h, dropout
        self.ln_1 = nn.LayerNorm(d, bias=bias)
        self.c_attn = nn.Linear(d, 3 * d, bias=bias)
        self.c_proj = nn.Linear(d, d, bias=bias)
        self.ln_2 = nn.LayerNorm(d, bias=bias)
        self.c_fc = nn.Linear(d, d_ff, bias=bias)
        self.mlp_proj = nn.Linear(d_ff, d, bias=bias)
        self.drop = nn.Dropout(dropout)

    def attn(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.h, c // self.h).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
        return self.drop(self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c)))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.drop(self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)))))


class NanoGPT(nn.Module):
    """A compact nanoGPT-style causal LM (karpathy/nanoGPT model.py, same structure)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.wpe = nn.Embedding(cfg.max_len, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)
        self.h = nn.ModuleList(NanoBlock(cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.dropout, cfg.bias)
                               for _ in range(cfg.n_decoder_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model, bias=cfg.bias)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.drop(self.wte(ids) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def decoder_config(vocab=1000, d_model=128, heads=4, layers=4, d_ff=512, dropout=0.1, max_len=128):
    """A GPT-style config: pre-LN, GELU, learned positions, tied head, no embedding scaling."""
    return ModelConfig(kind="decoder-only", vocab_size=vocab, d_model=d_model, n_heads=heads,
                       n_decoder_layers=layers, d_ff=d_ff, dropout=dropout, norm="pre", activation="gelu",
                       pos_encoding="learned", scale_embeddings=False, max_len=max_len)


def bench_decoder_only(cfg, batch, length, rounds, steps, warmup):
    torch.manual_seed(0)
    ours = Transformer(cfg).train()
    ref = NanoGPT(cfg).train()
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(1, cfg.vocab_size, (batch, length + 1), generator=gen)
    x, y = ids[:, :-1], ids[:, 1:]
    ours_params, ref_params = list(ours.parameters()), list(ref.parameters())
    runs = {
        "ours": lambda: train_step(lambda s, _: ours(s).logits, x, None, y, ours_params),
        "nanogpt": lambda: train_step(lambda s, _: ref(s), x, None, y, ref_params),
    }
    times = alternate(runs, rounds, steps, warmup)
    tokens = batch * length
    result = {}
    for name, ts in times.items():
        result[name] = {"tokens_per_s": tokens / statistics.median(ts),
                        "step_ms_median": 1000 * statistics.median(ts), "step_ms_min": 1000 * min(ts)}
    result["ratio_ours_over_nanogpt"] = result["ours"]["tokens_per_s"] / result["nanogpt"]["tokens_per_s"]
    result["params"] = {"ours": ours.num_parameters(), "nanogpt": sum(p.numel() for p in ref.parameters())}
    result["config"] = {"d_model": cfg.d_model, "heads": cfg.n_heads, "layers": cfg.n_decoder_layers,
                        "d_ff": cfg.d_ff, "vocab": cfg.vocab_size, "batch": batch, "length": length}
    return result


def make_batch(cfg, batch, src_len, tgt_len, seed=0):
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(1, cfg.vocab_size, (batch, src_len), generator=gen)
    lengths = torch.randint(src_len // 2, src_len + 1, (batch,), generator=gen)
    src[torch.arange(src_len)[None, :] >= lengths[:, None]] = PAD
    tgt = torch.randint(1, cfg.vocab_size, (batch, tgt_len + 1), generator=gen)
    return src, tgt[:, :-1], tgt[:, 1:]


def train_step(fn, src, tgt_in, tgt_out, params):
    logits = fn(src, tgt_in)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1), ignore_index=PAD)
    loss.backward()
    for p in params:
        p.grad = None
    return loss


def timed(fn, steps):
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    return (time.perf_counter() - t0) / steps


def alternate(runs: dict, rounds: int, steps: int, warmup: int) -> dict[str, list[float]]:
    """Each of ``runs`` warmed up, then timed in turn (A B A B ...) for ``rounds`` rounds of ``steps`` calls."""
    for fn in runs.values():
        for _ in range(warmup):
            fn()
    times = {k: [] for k in runs}
    for _ in range(rounds):
        for name, fn in runs.items():
            times[name].append(timed(fn, steps))
    return times


def bench_training(cfg, batch, src_len, tgt_len, rounds, steps, warmup):
    torch.manual_seed(0)
    ours = Transformer(cfg).train()
    ref = TorchBaseline(cfg).train()
    src, tgt_in, tgt_out = make_batch(cfg, batch, src_len, tgt_len)
    ours_params, ref_params = list(ours.parameters()), list(ref.parameters())
    runs = {
        "ours": lambda: train_step(lambda s, t: ours(s, t).logits, src, tgt_in, tgt_out, ours_params),
        "torch": lambda: train_step(ref, src, tgt_in, tgt_out, ref_params),
    }
    times = alternate(runs, rounds, steps, warmup)
    tokens = batch * (src_len + tgt_len)
    result = {}
    for name, ts in times.items():
        result[name] = {"tokens_per_s": tokens / statistics.median(ts),
                        "step_ms_median": 1000 * statistics.median(ts),
                        "step_ms_min": 1000 * min(ts)}
    result["ratio_ours_over_torch"] = result["ours"]["tokens_per_s"] / result["torch"]["tokens_per_s"]
    result["params"] = {"ours": ours.num_parameters(), "torch": sum(p.numel() for p in ref.parameters())}
    return result


def bench_sizes(sizes, batch, length, rounds, steps, warmup):
    """Encoder-decoder ours / nn.Transformer across d_model (4 heads, 8 from 256 up; d_ff = 4·d_model), at
    dropout 0.1 and 0: the "≥ 1.0× everywhere" side of the comparison."""
    rows = []
    for d in sizes:
        for dropout in (0.1, 0.0):
            cfg = ModelConfig(kind="encoder-decoder", vocab_size=1000, d_model=d, n_heads=4 if d < 256 else 8,
                              n_encoder_layers=2, n_decoder_layers=2, d_ff=4 * d, dropout=dropout, norm="post",
                              final_norm=True, activation="relu", max_len=max(128, length))
            r = bench_training(cfg, batch, length, length, rounds, steps, warmup)
            rows.append({"d_model": d, "heads": cfg.n_heads, "dropout": dropout,
                         "ours_tokens_per_s": r["ours"]["tokens_per_s"],
                         "torch_tokens_per_s": r["torch"]["tokens_per_s"],
                         "ratio_ours_over_torch": r["ratio_ours_over_torch"]})
    return rows


@torch.no_grad()
def bench_trace(cfg, lengths, batch, rounds, steps):
    torch.manual_seed(0)
    model = Transformer(cfg).eval()
    out = []
    for t in lengths:
        src, tgt, _ = make_batch(cfg, batch, t, t, seed=t)
        runs = {"fused": lambda: model(src, tgt), "traced": lambda: model(src, tgt, trace=True),
                "all_maps": lambda: model(src, tgt, trace=True).trace.materialize()}
        for fn in runs.values():
            fn()
        times = {k: [] for k in runs}
        for _ in range(rounds):
            for name, fn in runs.items():
                times[name].append(timed(fn, steps))
        fused, traced, every = (statistics.median(times[k]) for k in runs)
        n_bytes = model(src, tgt, trace=True).trace.materialize().nbytes()
        out.append({"length": t, "batch": batch, "fused_ms": 1000 * fused, "traced_ms": 1000 * traced,
                    "all_maps_ms": 1000 * every, "ratio_traced_over_fused": traced / fused,
                    "ratio_all_maps_over_fused": every / fused, "trace_mib": n_bytes / 2 ** 20})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7, help="alternating timing rounds per model")
    ap.add_argument("--steps", type=int, default=8, help="training steps per round")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--len", type=int, default=24, dest="length", help="source and target length")
    ap.add_argument("--trace-lengths", type=int, nargs="+", default=[16, 64, 128, 256, 512])
    ap.add_argument("--trace-batch", type=int, default=8)
    ap.add_argument("--dec-len", type=int, default=48, help="decoder-only sequence length (batch x len tokens)")
    ap.add_argument("--sizes", type=int, nargs="*", default=[],
                    help="also compare the encoder-decoder at these d_model values (e.g. 64 128 256), "
                         "dropout 0.1 and 0")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)

    cfg = ModelConfig(kind="encoder-decoder", vocab_size=1000, d_model=128, n_heads=4, n_encoder_layers=2,
                      n_decoder_layers=2, d_ff=512, dropout=0.1, norm="post", final_norm=True,
                      activation="relu", max_len=max(128, args.length, *args.trace_lengths))
    train = bench_training(cfg, args.batch, args.length, args.length, args.rounds, args.steps, args.warmup)
    dec = bench_decoder_only(decoder_config(max_len=max(128, args.dec_len)), args.batch, args.dec_len,
                             args.rounds, args.steps, args.warmup)
    dec0 = bench_decoder_only(decoder_config(dropout=0.0, max_len=max(128, args.dec_len)), args.batch, args.dec_len,
                              args.rounds, args.steps, args.warmup)  # nanoGPT's default for pretraining
    trace = bench_trace(cfg, args.trace_lengths, args.trace_batch, max(3, args.rounds // 2), 3)
    sizes = bench_sizes(args.sizes, args.batch, args.length, args.rounds, args.steps, args.warmup)

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; d_model 128, 2+2 layers, 4 heads, "
          f"d_ff 512, dropout 0.1, post-LN, batch {args.batch}, src/tgt len {args.length}")
    print("\n(a) training, forward + backward (tokens = batch x (src + tgt))")
    print(f"{'model':<16}{'tokens/s':>12}{'step ms (median)':>20}{'step ms (min)':>16}{'params':>10}")
    for name, label in (("ours", "core.Transformer"), ("torch", "nn.Transformer")):
        r = train[name]
        print(f"{label:<16}{r['tokens_per_s']:>12,.0f}{r['step_ms_median']:>20.1f}{r['step_ms_min']:>16.1f}"
              f"{train['params'][name]:>10,}")
    print(f"ours / torch throughput: {train['ratio_ours_over_torch']:.3f}")
    c = dec["config"]
    print(f"\n(c) decoder-only causal LM, forward + backward: d_model {c['d_model']}, {c['layers']} layers, "
          f"{c['heads']} heads, d_ff {c['d_ff']}, pre-LN, GELU, learned positions, tied head, "
          f"batch {c['batch']}, len {c['length']}")
    print(f"{'model':<16}{'tokens/s':>12}{'step ms (median)':>20}{'step ms (min)':>16}{'params':>10}")
    for name, label in (("ours", "core decoder"), ("nanogpt", "nanoGPT-style")):
        r = dec[name]
        print(f"{label:<16}{r['tokens_per_s']:>12,.0f}{r['step_ms_median']:>20.1f}{r['step_ms_min']:>16.1f}"
              f"{dec['params'][name]:>10,}")
    print(f"ours / nanoGPT throughput: {dec['ratio_ours_over_nanogpt']:.3f} (dropout 0.1)")
    print(f"same with dropout 0.0: ours {dec0['ours']['tokens_per_s']:,.0f} tokens/s, nanoGPT-style "
          f"{dec0['nanogpt']['tokens_per_s']:,.0f} tokens/s, ours / nanoGPT {dec0['ratio_ours_over_nanogpt']:.3f}")
    print(f"\n(b) inference, eval + no_grad, batch {args.trace_batch}: traced (maps on demand) and traced with "
          "every map read, vs fused forward")
    print(f"{'length':>8}{'fused ms':>12}{'traced ms':>12}{'ratio':>8}{'all maps ms':>13}{'ratio':>8}{'trace MiB':>11}")
    for r in trace:
        print(f"{r['length']:>8}{r['fused_ms']:>12.2f}{r['traced_ms']:>12.2f}{r['ratio_traced_over_fused']:>8.2f}"
              f"{r['all_maps_ms']:>13.2f}{r['ratio_all_maps_over_fused']:>8.2f}{r['trace_mib']:>11.1f}")
    if sizes:
        print("\n(d) encoder-decoder across sizes, ours / nn.Transformer")
        print(f"{'d_model':>8}{'heads':>7}{'dropout':>9}{'ours tok/s':>12}{'torch tok/s':>13}{'ratio':>8}")
        for r in sizes:
            print(f"{r['d_model']:>8}{r['heads']:>7}{r['dropout']:>9}{r['ours_tokens_per_s']:>12,.0f}"
                  f"{r['torch_tokens_per_s']:>13,.0f}{r['ratio_ours_over_torch']:>8.3f}")
    summary = {"torch": torch.__version__, "threads": torch.get_num_threads(), "batch": args.batch,
               "length": args.length, "rounds": args.rounds, "steps_per_round": args.steps,
               "training": train, "decoder_only": dec, "decoder_only_dropout0": dec0,
               "trace": trace, "sizes": sizes}
    print(json.dumps(summary, separators=(",", ":")))
    return summary


if __name__ == "__main__":
    main()
