"""The GPU recipe of the language model that reads the large English corpus (issue 32): candidates side by side on
one GPU, each as long as the device time allows, then the figures the Heads page claims, measured on the GPU.

    PYTHONPATH=. python3 scripts/gpu_lm_recipe.py --out DIR --budget SECONDS [--task lm-large|lm-xl]
        [--runs NAME=D_MODEL:LAYERS:HEADS:D_FF[:u] ...]

In order, inside ``--budget`` seconds of wall time:

1. **probe**: milliseconds per training step of each candidate (compiled, bf16 autocast, fused AdamW, clip, the loss
   read back as the trainer does) on random windows of ``--seq-len`` tokens, all candidates at once as they will run;
2. **train**: one ``python -m core.train --task TASK --compile`` per candidate in a process of its own, ``--steps``
   chosen from the probe to fill the time left (``--fill``), ``--max-seconds`` as a backstop, an evaluation and a
   checkpoint every eighth of the run;
3. **measure** (``--measure DIR``, each run at once): valid loss with float32 weights and with the same weights
   rounded to float16, the in-context score on valid text (loss at token 500 minus token 50,
   :func:`core.find_heads.in_context_score`), and ``core.find_heads``'s report on repeated random tokens (induction
   and previous-token score per head, the second copy's loss against the first, the induction heads switched off);
4. **pack**: float16 weights and the small files of each run in ``runs.tgz`` cut into 15 MiB parts, and
   ``summary.json`` (``scripts/gpu_recipe.py``'s packing).

Back on a machine with the repository: ``cat DIR/runs.tgz.* | tar xz -C /work/runs``; choose on valid, then
``python scripts/bundle.py`` reads test once for the card. ``--smoke`` runs every step on the CPU with a tiny model
and a few steps (the orchestration's own check, minutes on two cores).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from gpu_recipe import finish, sh

from core.io import jsonio

RUNS = ["lm-gpu-384ur=384:6:6:1536:ur", "lm-gpu-384x4ur=384:4:6:1536:ur", "lm-gpu-384u=384:6:6:1536:u"]
FLAGS = ["--pos-encoding", "learned", "--norm", "pre", "--activation", "gelu", "--dropout", "0.1",
         "--schedule", "cosine", "--lr", "0.001", "--warmup", "300", "--label-smoothing", "0.0", "--clip", "1.0",
         "--weight-decay", "0.1", "--seed", "0"]
BUILD_S, FINISH_S, POST_S, MARGIN_S = 90, 30, 90, 25  # estimates: data build, last evaluation + save, steps 3-4
VOCAB = 8192


def parse_run(spec: str) -> tuple[str, tuple]:
    """``NAME=D_MODEL:LAYERS:HEADS:D_FF[:LETTERS]`` → (name, dims); the letters: ``u`` trains with
    ``--unscaled-embeddings`` (GPT's convention), ``r`` with rotary positions instead of learned ones — the two
    changes that grew the shipped lm's induction head on CPU (docs/measurements/issue32-cpu.md)."""
    name, dims = spec.split("=")
    d_model, layers, heads, d_ff, *flag = dims.split(":")
    if len(flag) > 1 or (flag and (not flag[0] or set(flag[0]) - set("ur"))):
        raise ValueError(f"{spec}: the fifth field may only hold u (unscaled embeddings) and r (rotary positions)")
    return name, (int(d_model), int(layers), int(heads), int(d_ff), *flag)


def conventions(dims: tuple) -> tuple[bool, str]:
    """(unscaled embeddings, position encoding) of a candidate's dims."""
    letters = dims[4] if len(dims) > 4 else ""
    return "u" in letters, "rope" if "r" in letters else "learned"


def shape(dims: tuple) -> list[str]:
    """The ``core.train`` flags of a candidate's shape and conventions (after FLAGS: the last --pos-encoding wins)."""
    d_model, layers, heads, d_ff = dims[:4]
    unscaled, pos = conventions(dims)
    return (["--d-model", str(d_model), "--layers", str(layers), "--heads", str(heads), "--d-ff", str(d_ff),
             "--pos-encoding", pos] + (["--unscaled-embeddings"] if unscaled else []))


def probe(dims, batch: int, seq_len: int, device: str, steps: int, compile_: bool) -> dict:
    """Milliseconds per optimiser step of one candidate, as ``core.train --compile`` runs it."""
    import torch
    from core.model import Transformer
    from core.training.tasks import Batch
    from core.training.trainer import TrainConfig, loss_fn, model_config
    d_model, layers, heads, d_ff = dims[:4]
    unscaled, pos = conventions(dims)
    cfg = TrainConfig(layers=layers, d_model=d_model, heads=heads, d_ff=d_ff, pos_encoding=pos, norm="pre",
                      activation="gelu", dropout=0.1, unscaled_embeddings=unscaled)
    mcfg = model_config(cfg, kind="decoder-only", vocab_size=VOCAB)
    mcfg = type(mcfg)(**{**mcfg.__dict__, "max_len": max(seq_len, 128)})
    model = Transformer(mcfg).to(device).train()
    run = torch.compile(model) if compile_ else model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    gen = torch.Generator().manual_seed(0)

    def one():
        ids = torch.randint(4, VOCAB, (batch, seq_len + 1), generator=gen)
        b = Batch(None, ids[:, :-1], ids[:, 1:]).to(device)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device == "cuda"):
            loss = loss_fn(run, b)
        float(loss.detach())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    t = time.perf_counter()
    for _ in range(3):
        one()
    warm = time.perf_counter() - t
    if device == "cuda":
        torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(steps):
        one()
    if device == "cuda":
        torch.cuda.synchronize()
    ms = 1000 * (time.perf_counter() - t) / steps
    return {"ms_per_step": ms, "warmup_s": warm, "parameters": model.num_parameters(),
            "tokens_per_s": batch * seq_len / ms * 1000}


def measure(folder: str, device: str, smoke: bool = False) -> dict:
    """Valid loss (float32, then float16-rounded weights), the in-context score on valid text and the head report."""
    import torch
    from core import find_heads
    from core.io import checkpoint
    from core.training.tasks import LMTask
    ck = checkpoint.load(folder, device)
    task = LMTask(tokenizer=ck.tokenizer, seq_len=ck.model.cfg.max_len, name=ck.meta.get("task", "lm-large"))
    n = 8 if smoke else None
    out = {"float32": task.evaluate(ck.model, n=n)}
    out["in_context"] = find_heads.card_in_context(ck.model, task.valid_stream, windows=8 if smoke else None)
    out["heads"] = find_heads.report(ck, seq_len=16 if smoke else 100, batch=4 if smoke else 32)
    with torch.no_grad():
        for p in ck.model.parameters():
            p.copy_(p.half().float())
        out["float16"] = task.evaluate(ck.model, n=n)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT"))
    ap.add_argument("--budget", type=float, default=560.0, help="seconds of wall time for everything")
    ap.add_argument("--runs", nargs="*", default=RUNS, help="NAME=D_MODEL:LAYERS:HEADS:D_FF[:LETTERS] (u: --unscaled-embeddings, r: rotary positions)")
    ap.add_argument("--task", choices=("lm-large", "lm-xl"), default="lm-large",
                    help="the prose read: english-large, or its release 2 (english-xl, stop 52)")
    ap.add_argument("--batch", type=int, default=64, help="windows per step")
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--fill", type=float, default=0.6, help="share of the probe's step count to ask for")
    ap.add_argument("--no-weights", action="store_true", help="bring back figures and logs only")
    ap.add_argument("--work", default="/tmp/gpu-lm-runs")
    ap.add_argument("--smoke", action="store_true", help="CPU, a tiny model, a few steps: the orchestration only")
    ap.add_argument("--probe", help=argparse.SUPPRESS)
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    args = ap.parse_args()
    import torch
    device = "cuda" if torch.cuda.is_available() and not args.smoke else "cpu"  # --measure also serves CPU runs
    batch, seq_len = (2, 64) if args.smoke else (args.batch, args.seq_len)
    if args.probe:
        dims = parse_run("probe=" + args.probe)[1]
        print(jsonio.dumps(probe(dims, batch, seq_len, device, 2 if args.smoke else 20, compile_=not args.smoke)))
        return 0
    if args.measure:
        print(jsonio.dumps(measure(args.measure, device, args.smoke)))
        return 0
    t0 = time.time()
    end = t0 + args.budget
    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    runs = [parse_run(spec) for spec in (["lm-smoke=32:2:2:64:ur"] if args.smoke else args.runs)]
    summary: dict = {"budget_s": args.budget, "batch": batch, "seq_len": seq_len, "runs": {}}
    if not args.smoke:
        summary["gpu"] = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                                         "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()

    # 1. probe, all candidates at once
    me = [sys.executable, str(Path(__file__).resolve())] + (["--smoke"] if args.smoke else [])
    probes = {name: sh(me + ["--probe", ":".join(map(str, dims)), "--batch", str(batch), "--seq-len", str(seq_len)])
              for name, dims in runs}
    for name, p in probes.items():
        text, _ = p.communicate(timeout=max(1.0, end - time.time()))
        try:
            summary["runs"][name] = {"probe": json.loads(text.strip().splitlines()[-1])}
        except (ValueError, IndexError):
            summary["runs"][name] = {"probe": None, "probe_output": text[-2000:]}
    summary["probe_s"] = round(time.time() - t0, 1)

    # 2. train
    train_s = end - time.time() - BUILD_S - FINISH_S - POST_S - MARGIN_S
    procs = {}
    for name, dims in runs:
        ms = (summary["runs"][name]["probe"] or {}).get("ms_per_step", 500.0)
        steps = 4 if args.smoke else max(300, int(args.fill * train_s * 1000 / ms))
        folder = work / name
        cmd = [sys.executable, "-m", "core.train", "--out", str(folder), "--task", args.task, *FLAGS, *shape(dims),
               "--steps", str(steps), "--batch-size", str(batch), "--seq-len", str(seq_len), "--eval-every", str(max(1, steps // 8)),
               "--ckpt-every", str(max(1, steps // 8)), "--max-seconds", str(round(max(train_s, 30), 1)),
               "--device", device, "--threads", "4"] + ([] if args.smoke else ["--compile"])
        folder.mkdir(parents=True, exist_ok=True)
        procs[name] = sh(cmd, work / f"{name}.log")
        summary["runs"][name].update(command=" ".join(cmd[1:]), steps=steps, tokens=steps * batch * seq_len)
    summary["train_budget_s"] = round(train_s, 1)
    (out / "summary.json").write_text(jsonio.dumps(summary, indent=1))  # what comes back if the rest never ends
    # 3. measure, all runs at once; 4. pack
    finish(procs, me, "--measure", work, out, summary, t0, end - POST_S, end - 20, not args.no_weights)
    return 0


if __name__ == "__main__":
    sys.exit(main())
