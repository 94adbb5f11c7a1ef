"""The GPU recipe of the translators trained on human translations (issue 31): candidates side by side on one GPU,
each as long as the device time allows.

    PYTHONPATH=. python3 scripts/gpu_recipe.py --out DIR --budget SECONDS [--runs NAME=TASK:SHARE ...]

What it does, in order, all inside ``--budget`` seconds of wall time:

1. **probe**: milliseconds per training step of the shipped translator shape at the recipe's batch size, measured
   with as many processes at once as there are runs (a small model on a large GPU is bound by kernel launches on the
   CPU, so the runs share the GPU well and each step costs about what it costs alone);
2. **train**: one ``python -m core.train`` per run, each in a process of its own, with ``--steps`` chosen from the
   probe to fill the time left, ``--max-seconds`` as a backstop, and a checkpoint every eighth of the run (a run cut
   by the deadline keeps its last one);
3. **precision**: each model's valid figures (the trainer's own evaluation: 300 generated and 300 human-translated
   valid pairs) with its float32 weights and with the same weights rounded to float16;
4. **pack**: each model with float16 weights (config, tokenizer, words, card and training log beside them) in one
   ``runs.tgz`` cut into 15 MiB parts in DIR, and ``summary.json`` with every figure above.

Back on a machine with the repository: ``cat DIR/runs.tgz.* | tar xz -C /work/runs``. ``--smoke`` runs the same
steps on the CPU with a few tiny steps (the orchestration's own test, minutes on two cores).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from core.io import jsonio

DIMS = (256, 4, 1024)  # the shipped translators' d_model, layers (each side), d_ff; 8 heads


def shape(d_model: int, layers: int, d_ff: int) -> list[str]:
    """The ``core.train`` flags of the recipe's model shape."""
    return ["--layers", str(layers), "--d-model", str(d_model), "--heads", "8", "--d-ff", str(d_ff),
            "--pos-encoding", "sinusoidal", "--norm", "post", "--activation", "relu", "--dropout", "0.1"]


def parse_run(spec: str) -> tuple[str, str, str, tuple[int, int, int], list[str]]:
    """``NAME=TASK[@RELEASE]:SHARE[:D_MODEL:LAYERS:D_FF][+MODEL]`` → (name, task, share, dims, extra ``core.train``
    flags): ``en-fr@3`` reads release 3 of the human translations (``--parallel-release 3``;
    :data:`core.data.parallel.RELEASES`);
    ``+MODEL`` fine-tunes that model (``--init-from MODEL`` and :data:`FINE_TUNE`; the dims must be its own)."""
    name, rest = spec.split("=")
    rest, _, init = rest.partition("+")
    task, share, *dims = rest.split(":")
    task, _, release = task.partition("@")
    extra = (["--parallel-release", release] if release else []) + (["--init-from", init, *FINE_TUNE] if init else [])
    return name, task, share, tuple(int(d) for d in dims) if dims else DIMS, extra


OPTIM = ["--schedule", "cosine", "--lr", "0.001", "--warmup", "400", "--label-smoothing", "0.1", "--clip", "1.0",
         "--weight-decay", "0.01", "--vocab-size", "10000", "--seed", "0"]
# a fine-tune (``+MODEL``) after OPTIM (the last flag wins): a third of the peak rate, a short warm-up, and the
# generated corpus the starting model read (its test and held-out splits stay the ones its card was measured on)
FINE_TUNE = ["--lr", "0.0003", "--warmup", "100", "--generated-release", "1"]
RUNS = ["en-fr-gpu-40=en-fr:0.4", "en-fr-gpu-60=en-fr:0.6", "en-de-gpu-40=en-de:0.4"]
BUILD_S, FINISH_S, POST_S, MARGIN_S = 110, 35, 75, 25  # estimates: data build, last evaluation + save, steps 3-4


def probe(batch_tokens: int, device: str, steps: int, dims=DIMS) -> dict:
    """Milliseconds per optimiser step (forward, backward, clip, fused AdamW, the loss read back as the trainer
    does) of the recipe's model on random sentences about as long as the corpus's (24 tokens a side)."""
    import torch
    from core.training.trainer import TrainConfig, loss_fn, model_config
    from core.training.tasks import Batch
    from core.model import Transformer
    cfg = TrainConfig(layers=dims[1], d_model=dims[0], heads=8, d_ff=dims[2])
    model = Transformer(model_config(cfg, kind="encoder-decoder", vocab_size=10000)).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9, fused=True)
    rows = max(1, batch_tokens // 24)
    gen = torch.Generator().manual_seed(0)

    def one():
        ids = torch.randint(4, 10000, (3, rows, 24), generator=gen)
        batch = Batch(ids[0], ids[1], ids[2]).to(device)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device == "cuda"):
            loss = loss_fn(model, batch, 0.1)
        float(loss.detach())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    for _ in range(5):
        one()
    if device == "cuda":
        torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(steps):
        one()
    if device == "cuda":
        torch.cuda.synchronize()
    return {"ms_per_step": 1000 * (time.perf_counter() - t) / steps, "rows": rows, "parameters": model.num_parameters()}


def precision(folder: str, device: str, smoke: bool = False) -> dict:
    """The trainer's valid evaluation of the model in ``folder`` with float32 and with float16-rounded weights, and
    the decision rule's valid figures (docs/measurements/issue31-decision-rule.md) with the float32 weights: the
    commands ``python -m core.evaluate --split valid --corpus real --n 1000`` and ``--corpus generated`` and
    ``python scripts/eval_dev.py`` run, here on the GPU."""
    import torch
    from core import evaluate
    from core.data import release_of
    from core.io import checkpoint
    from scripts.eval_dev import DEV_SETS, evaluate as eval_dev
    from core.training.tasks import REAL_MAX_TOKENS, TranslationTask
    ck = checkpoint.load(folder, device)
    tc = json.loads((Path(folder) / "train_state.json").read_text())["train_config"]
    task = TranslationTask(tc["task"], tokenizer=ck.tokenizer, train=False, real_share=tc["real_share"],
                           parallel_release=release_of(ck.meta), generated_release=release_of(ck.meta, "generated"))
    task.decode_len = REAL_MAX_TOKENS + 8  # as the trainer's own evaluation decodes
    out = {"rule": {}}
    n_eval = 20 if smoke else 300
    n_real = 20 if smoke else 1000
    # release 1's valid pairs too when the run read another release: the pairs the shipped models were chosen on
    checks = [("real", None), ("generated", None)] + ([("real", 1)] if release_of(ck.meta) != 1 else [])
    for corpus, release in checks:
        pairs = evaluate.corpus_pairs(ck.meta, "valid", corpus, n_real if corpus == "real" else n_eval, release=release)
        _, metrics = evaluate.evaluate(ck, pairs)
        out["rule"][f"{corpus}_valid" + (f"_release{release}" if release else "")] = {
            k: v for k, v in metrics.items() if not k.startswith("coreference")}
    out["rule"]["dev"] = [{k: v for k, v in r.items() if k != "model"} for r in eval_dev(folder, device=device,
                                                                             **({"dev_sets": DEV_SETS[:1]} if smoke else {}))]
    with torch.no_grad():
        out["float32"] = task.evaluate(ck.model, n=n_eval)
        for p in ck.model.parameters():
            p.copy_(p.half().float())
        out["float16"] = task.evaluate(ck.model, n=n_eval)
    return out


def sh(cmd: list[str], log: Path | None = None, **kw) -> subprocess.Popen:
    """``cmd`` started in the repository, its output to ``log`` (or a pipe)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.Popen(cmd, cwd=ROOT, stdout=open(log, "w") if log else subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, **kw)


def wait_all(procs: dict, deadline: float) -> dict:
    """Wait for every process until ``deadline`` (time.time()); those still running then are killed."""
    codes = {}
    for name, p in procs.items():
        try:
            codes[name] = p.wait(timeout=max(1.0, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            codes[name] = "killed at the deadline"
    return codes


def collect(procs: dict, work: Path, summary: dict, deadline: float) -> None:
    """Wait for the training processes (:func:`wait_all`), then put each run's exit, log tail and card meta in
    ``summary["runs"][name]`` and its log beside its weights as ``train.log``."""
    for name, code in wait_all(procs, deadline).items():
        r = summary["runs"][name]
        log = (work / f"{name}.log").read_text(errors="replace")
        (work / name / "train.log").write_text(log)
        r.update(exit=code, log_tail=log.splitlines()[-4:])
        cfg = work / name / "config.json"
        if cfg.exists():
            r["meta"] = json.loads(cfg.read_text())["meta"]


def post_all(me: list[str], flag: str, work: Path, names, summary: dict, deadline: float) -> None:
    """``me flag work/NAME`` for every run that saved weights, all at once; each one's last line (JSON) goes to
    ``summary["runs"][NAME][flag without dashes]``, or "not measured in time" when ``deadline`` passes first."""
    key = flag.lstrip("-")
    post = {n: sh(me + [flag, str(work / n)]) for n in names if (work / n / "model.safetensors").exists()}
    for n, p in post.items():
        try:
            text, _ = p.communicate(timeout=max(1.0, deadline - time.time()))
            summary["runs"][n][key] = json.loads(text.strip().splitlines()[-1])
        except (subprocess.TimeoutExpired, ValueError, IndexError):
            p.kill()
            summary["runs"][n][key] = "not measured in time"


def finish(procs: dict, me: list[str], flag: str, work: Path, out: Path, summary: dict, t0: float,
           train_deadline: float, post_deadline: float, weights: bool) -> None:
    """Both recipes' last steps: wait for the training processes (:func:`collect`), run ``me flag work/NAME`` for
    every run at once (:func:`post_all`), pack (:func:`pack`) and print the summary's tail."""
    collect(procs, work, summary, train_deadline)
    summary["train_done_s"] = round(time.time() - t0, 1)
    post_all(me, flag, work, procs, summary, post_deadline)
    summary[f"{flag.lstrip('-')}_done_s"] = round(time.time() - t0, 1)
    pack(work, out, summary, weights=weights)
    print(jsonio.dumps(summary, indent=1)[-9000:])


def pack(runs: Path, out: Path, summary: dict, weights: bool = True) -> None:
    """Float16 weights (unless ``weights`` is false) and the small files of every run, one tar.gz cut into 15 MiB
    parts; summary.json beside."""
    from safetensors.torch import load_file, save_file
    keep = ("config.json", "tokenizer.json", "words.json", "card.md", "train.log", "train_state.json")
    tgz = runs / "runs.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        for run in sorted(p for p in runs.iterdir() if p.is_dir()):
            if run.name.startswith(".") or not (run / "model.safetensors").exists():
                continue  # a save cut by the deadline leaves a hidden temporary folder: not a run
            if weights:
                half = runs / f"{run.name}.f16.safetensors"
                save_file({k: v.half() if v.is_floating_point() else v
                           for k, v in load_file(str(run / "model.safetensors")).items()}, str(half))
                tar.add(half, f"{run.name}/model.safetensors")
            for name in keep:
                if (run / name).exists():
                    tar.add(run / name, f"{run.name}/{name}")
    data, part = tgz.read_bytes(), 15 * 2 ** 20
    for i in range(0, len(data), part):
        (out / f"runs.tgz.{i // part:02d}").write_bytes(data[i:i + part])
    summary["packed_bytes"] = len(data)
    (out / "summary.json").write_text(jsonio.dumps(summary, indent=1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT"))
    ap.add_argument("--budget", type=float, default=560.0, help="seconds of wall time for everything")
    ap.add_argument("--runs", nargs="*", default=RUNS, help="NAME=TASK[@RELEASE]:SHARE[:D_MODEL:LAYERS:D_FF]")
    ap.add_argument("--fill", type=float, default=0.85, help="share of the probe's step count to ask for")
    ap.add_argument("--no-weights", action="store_true", help="bring back figures and logs only")
    ap.add_argument("--build-s", type=float, default=BUILD_S, help="seconds set aside for the data build")
    ap.add_argument("--post-s", type=float, default=POST_S, help="seconds set aside for steps 3-4")
    ap.add_argument("--dims", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--batch-tokens", type=int, default=12000)
    ap.add_argument("--work", default="/tmp/gpu-runs")
    ap.add_argument("--smoke", action="store_true", help="CPU, tiny batches, a few steps: the orchestration only")
    ap.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--precision", help=argparse.SUPPRESS)
    args = ap.parse_args()
    device = "cpu" if args.smoke else "cuda"
    if args.probe:
        dims = tuple(int(d) for d in args.dims.split(":")) if args.dims else DIMS
        print(jsonio.dumps(probe(args.batch_tokens, device, 3 if args.smoke else 40, dims)))
        return 0
    if args.precision:
        print(jsonio.dumps(precision(args.precision, device, args.smoke)))
        return 0
    t0 = time.time()
    end = t0 + args.budget
    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    summary: dict = {"budget_s": args.budget, "batch_tokens": args.batch_tokens, "runs": {}}
    if not args.smoke:
        summary["gpu"] = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                                         "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    import torch
    summary["torch"] = torch.__version__
    del torch

    # 1. probe, as many at once as there will be runs
    me = [sys.executable, str(Path(__file__).resolve())] + (["--smoke"] if args.smoke else [])
    batch_tokens = 500 if args.smoke else args.batch_tokens
    runs = [parse_run(spec) for spec in args.runs]
    probes = [sh(me + ["--probe", "--batch-tokens", str(batch_tokens), "--dims", ":".join(map(str, dims))])
              for _, _, _, dims, _ in runs]
    results = []
    for p in probes:
        text, _ = p.communicate(timeout=max(1.0, end - time.time()))
        try:
            results.append(json.loads(text.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            print("probe failed:", text[-2000:])
    ms = max((r["ms_per_step"] for r in results), default=150.0)
    summary["probe"] = {"ms_per_step_max": round(ms, 2), "each": results, "seconds": round(time.time() - t0, 1)}

    # 2. train
    train_s = end - time.time() - args.build_s - FINISH_S - args.post_s - MARGIN_S
    steps = 4 if args.smoke else max(500, int(args.fill * train_s * 1000 / ms))
    summary.update(train_budget_s=round(train_s, 1), steps=steps)
    (out / "summary.json").write_text(jsonio.dumps(summary, indent=1))  # what comes back if the rest never ends
    print(f"probe {ms:.1f} ms/step with {len(args.runs)} at once; {train_s:.0f} s to train -> {steps} steps", flush=True)
    procs = {}
    for name, task, share, dims, release in runs:
        folder = work / name
        cmd = [sys.executable, "-m", "core.train", "--out", str(folder), "--task", task, "--real-share", share,
               "--steps", str(steps), "--batch-tokens", str(batch_tokens),
               "--eval-every", str(steps if args.smoke else max(1, steps // 2)), "--ckpt-every", str(max(1, steps // 8)),
               "--max-seconds", str(round(max(train_s, 30), 1)), "--device", device, "--threads", "4",
               *shape(*dims), *OPTIM, *release]
        folder.mkdir(parents=True, exist_ok=True)
        procs[name] = sh(cmd, work / f"{name}.log")
        summary["runs"][name] = {"command": " ".join(cmd[1:])}
    # 3. precision: float32 vs float16 weights on valid, all runs at once; 4. pack
    finish(procs, me, "--precision", work, out, summary, t0, end - args.post_s, end - 25, not args.no_weights)
    return 0


if __name__ == "__main__":
    sys.exit(main())
