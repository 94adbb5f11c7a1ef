"""Two training choices of the seeds, measured on the same data: the feed-forward activation (ReLU, the paper's; GELU;
SwiGLU, Shazeer 2020) and averaging the last checkpoints (Vaswani et al. 2017, sec. 6.1: "a single model obtained by
averaging the last 5 checkpoints").

:func:`run` trains one small causal language model per activation through :func:`core.training.trainer.train_model`
on the lm's frozen English text (``task="lm"``, a small BPE), same seed, same batches, the paper's learning-rate
schedule ("noam"). The models are equal in size: SwiGLU's feed-forward has three matrices instead of two, so its
inner width is two thirds of the others' (:func:`ffn_width`). Every ``snapshot_every`` steps of the last
``snapshots`` × ``snapshot_every`` steps a copy of the weights is kept; :func:`average` is their element-wise mean.
Each run is scored on the same held-out windows of the valid split: its last weights, and the mean of its last 2, 5
and all snapshots.

CLI: ``python -m core.training.choices --out assets/choices/results.json`` (the Transformer-XL & training stability
page reads that file; nothing is trained when the page opens).
"""
from __future__ import annotations

import copy
import dataclasses
import time

import torch

from ..config import ACTIVATIONS
from . import experiment
from .tasks import make_task
from .trainer import TrainConfig, train_model

AVERAGED = (2, 5)  # "last k snapshots" rows besides the last weights and all snapshots


@dataclasses.dataclass
class ChoicesConfig:
    """Settings shared by the runs: data, model size, optimisation, snapshots and evaluation."""
    steps: int = 2000
    seq_len: int = 64
    vocab_size: int = 512
    layers: int = 2
    d_model: int = 64
    heads: int = 4
    d_ff: int = 256  # ReLU's and GELU's inner width; SwiGLU gets ffn_width() of it
    batch_size: int = 32
    lr: float = 1.0  # noam's multiplier
    warmup: int = 200
    snapshot_every: int = 50
    snapshots: int = 10
    eval_windows: int = 400
    seed: int = 0
    threads: int | None = 1

    def validate(self) -> None:
        """Refuse settings that leave nothing to average or score (ValueError, one line)."""
        if self.snapshots < max(AVERAGED) or self.snapshot_every < 1:
            raise ValueError(f"need at least {max(AVERAGED)} snapshots, at least one step apart")
        if self.snapshots * self.snapshot_every > self.steps:
            raise ValueError(f"{self.snapshots} snapshots every {self.snapshot_every} steps need at least "
                             f"{self.snapshots * self.snapshot_every} steps, not {self.steps}")
        if min(self.eval_windows, self.layers, self.batch_size) < 1:
            raise ValueError("eval_windows, layers and batch_size must be positive")


def ffn_width(d_ff: int, activation: str) -> int:
    """The feed-forward inner width that gives ``activation`` the parameters of a two-matrix ReLU layer of width
    ``d_ff``: SwiGLU (gate, value and output matrices) gets round(2/3 · d_ff), the others ``d_ff``."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}; choose one of {', '.join(ACTIVATIONS)}")
    return round(2 * d_ff / 3) if activation == "swiglu" else d_ff


def snapshot_steps(cfg: ChoicesConfig) -> list[int]:
    """The steps after which the weights are kept: the last ``snapshots`` multiples of ``snapshot_every``."""
    return [cfg.steps - i * cfg.snapshot_every for i in reversed(range(cfg.snapshots))]


def train_config(cfg: ChoicesConfig, activation: str) -> TrainConfig:
    """The trainer's settings for one activation: everything else equal."""
    return TrainConfig(task="lm", steps=cfg.steps, seed=cfg.seed, layers=cfg.layers, d_model=cfg.d_model,
                       heads=cfg.heads, d_ff=ffn_width(cfg.d_ff, activation), pos_encoding="sinusoidal", norm="pre",
                       activation=activation, dropout=0.0, batch_size=cfg.batch_size, schedule="noam", lr=cfg.lr,
                       warmup=cfg.warmup, label_smoothing=0.0, clip=1.0, weight_decay=0.01, seq_len=cfg.seq_len,
                       vocab_size=cfg.vocab_size, eval_every=10 ** 9, ckpt_every=10 ** 9, threads=cfg.threads,
                       device="cpu", quiet=True)


def average(states: list[dict]) -> dict:
    """The element-wise mean of state dicts with the same keys and shapes (floating tensors; others from the
    last)."""
    if not states:
        raise ValueError("nothing to average")
    out = {}
    for k, last in states[-1].items():
        if torch.is_floating_point(last):
            out[k] = torch.stack([s[k].float() for s in states]).mean(0).to(last.dtype)
        else:
            out[k] = last.clone()
    return out


def scored(model, state: dict, task, windows: int) -> float:
    """Held-out next-token loss (nats) of ``model`` carrying ``state``, on the first ``windows`` windows of the
    valid split (a copy of the model is used: ``model`` keeps its own weights)."""
    m = copy.deepcopy(model)
    m.load_state_dict(state)
    return round(task.evaluate(m, n=windows)["valid_loss"], 4)


def one_run(cfg: ChoicesConfig, activation: str, task) -> dict:
    """Train one activation's model, keep its snapshots, and score the last weights and the averages."""
    keep = set(snapshot_steps(cfg))
    states = []

    def on_step(info):
        if info["step"] in keep:
            states.append({k: v.detach().clone() for k, v in info["model"].state_dict().items()})

    t0, c0 = time.perf_counter(), time.process_time()
    trained = train_model(train_config(cfg, activation), on_step=on_step)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    model = trained.model
    losses = [round(loss, 4) for _, loss in trained.summary["history"]]
    rows = {"last weights": scored(model, states[-1], task, cfg.eval_windows)}
    for k in AVERAGED:
        rows[f"mean of the last {k}"] = scored(model, average(states[-k:]), task, cfg.eval_windows)
    rows[f"mean of all {len(states)}"] = scored(model, average(states), task, cfg.eval_windows)
    return {"activation": activation, "parameters": sum(p.numel() for p in model.parameters()),
            "d_ff": ffn_width(cfg.d_ff, activation), "train_loss": losses, "held_out": rows,
            "seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1)}


def run(cfg: ChoicesConfig | None = None, activations=ACTIVATIONS, log=None) -> dict:
    """Every activation's run (:func:`one_run`) on the same task, with the settings and the data's description."""
    cfg = cfg or ChoicesConfig()
    cfg.validate()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    task = make_task("lm", seq_len=cfg.seq_len, vocab_size=cfg.vocab_size)  # the BPE every run trains is this one
    runs = []
    for a in activations:
        runs.append(one_run(cfg, a, task))
        if log:
            log(f"{a}: {runs[-1]['held_out']} in {runs[-1]['seconds']} s")
    return {"config": dataclasses.asdict(cfg), "snapshot_steps": snapshot_steps(cfg), "runs": runs,
            "data": task.description}


def best_average(run_result: dict) -> tuple[str, float]:
    """The held-out row with the lowest loss and its gain over the last weights (nats; positive = better)."""
    rows = run_result["held_out"]
    name = min(rows, key=rows.get)
    return name, round(rows["last weights"] - rows[name], 4)


def main(argv=None) -> int:
    """``python -m core.training.choices --out FILE [--steps N …]``: train, score, write the results (one flag per
    :class:`ChoicesConfig` field)."""
    return experiment.main("core.training.choices", "ReLU vs GELU vs SwiGLU, and averaging the last checkpoints",
                           ChoicesConfig, run, ["data"], argv)


if __name__ == "__main__":
    raise SystemExit(main())
