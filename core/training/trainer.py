"""Training, the implementation behind ``python -m core.train`` (the command line itself is :mod:`core.train`).

AdamW (β = 0.9, 0.98, ε = 1e-9, as in the paper), the paper's learning-rate schedule
``lrate = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)`` (or cosine), label smoothing,
gradient clipping, periodic evaluation, atomic checkpoints and exact resume. Under
``torchrun --nproc_per_node=N`` it runs DistributedDataParallel with rank-0 logging and saving.
The last line printed is a JSON summary.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save

from ..config import ModelConfig
from ..data import releases
from ..io import checkpoint, jsonio
from ..io.tokenizer import PAD
from ..model import Transformer
from .tasks import BROAD, TASKS, make_task

STATE_WEIGHTS, STATE_JSON = checkpoint.STATE_WEIGHTS, checkpoint.STATE_JSON
LOG = logging.getLogger("core.train")  # progress; the CLI (core/train.py) sends it to stderr
MODEL_KEYS = ("layers", "d_model", "heads", "kv_heads", "d_ff", "pos_encoding", "norm", "activation", "dropout", "window")


@dataclass
class TrainConfig:
    """Every setting of a training run: task, model shape, optimisation, data and bookkeeping (one
    ``python -m core.train`` flag per field, ``history`` aside)."""
    task: str = "copy"
    out: str | None = None
    steps: int = 1000
    max_seconds: float | None = None
    seed: int = 0
    resume: bool = False
    # model
    layers: int = 2
    d_model: int = 128
    heads: int = 4
    kv_heads: int | None = None
    d_ff: int = 512
    pos_encoding: str = "sinusoidal"
    norm: str = "post"
    activation: str = "relu"
    dropout: float = 0.1
    window: int | None = None
    attention_only: bool = False  # no feed-forward sublayers
    unscaled_embeddings: bool = False  # GPT's convention: token embeddings not multiplied by sqrt(d_model), std 0.02
    # optimisation
    batch_size: int = 64
    batch_tokens: int | None = None  # translation: batches by length of <= N padded tokens a side (batch_size unused)
    schedule: str = "noam"  # noam (the paper) | cosine | constant
    lr: float = 1.0  # noam: multiplier of the paper's formula; cosine/constant: peak learning rate
    warmup: int = 200
    label_smoothing: float = 0.1
    clip: float = 1.0
    weight_decay: float = 0.01
    # data
    seq_len: int | None = None
    text: str | None = None  # lm: path of a UTF-8 text file
    real_share: float | None = None  # en-fr / en-de: share of training pairs that are human translations (parallel)
    parallel_release: int | None = None  # with real_share: their frozen release (None: 1)
    # en-fr / en-de: how the generated splits are drawn from the frames (core.data.corpus_for): None, the latest (2,
    # each frame from its own seed) for a new run, the run's own for --resume; 1 is the shipped translators' corpus
    generated_release: int | None = None
    vocab_size: int | None = None  # translation: the joint BPE's size (default 8,000; 1,200 for -tiny); lm, lm-large: 8,192
    # a checkpoint folder or a model's name (core.io.registry) whose weights and tokenizer the run starts from
    # instead of random weights and a new BPE: fine-tuning on more data. Its task and shape must be this run's.
    init_from: str | None = None
    # bookkeeping
    eval_every: int = 200
    ckpt_every: int = 100
    threads: int | None = None
    device: str = "auto"
    compile: bool = False  # torch.compile the training forward (a GPU recipe: fewer kernel launches)
    # bfloat16 autocast of the training forward on CPU as well (CUDA always has it): 1.26x the tokens per second of
    # float32 for the 4-layer lm on this machine's 2 cores, whose CPUs have AVX512-BF16 (bench/bench_cpu_bf16.py)
    cpu_bf16: bool = False
    quiet: bool = False
    history: list = field(default_factory=list, repr=False)

    def validate(self) -> None:
        """Every setting's type and range, as one line naming the flag (``--eval-every must be ...``)."""
        def flag(name):
            return "--" + name.replace("_", "-")

        for name, (lo, hi) in INT_FLAGS.items():
            v = getattr(self, name)
            if v is None and name in OPTIONAL_FLAGS:
                continue
            if not isinstance(v, int) or isinstance(v, bool):
                raise ValueError(f"{flag(name)} must be an integer, got {v!r}"[:200])
            if not lo <= v <= hi:
                raise ValueError(f"{flag(name)} must be between {lo:,} and {hi:,}, got {v:,}")
        for name, (lo, hi, lo_open, hi_open) in FLOAT_FLAGS.items():
            v = getattr(self, name)
            if v is None and name in OPTIONAL_FLAGS:
                continue
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
                raise ValueError(f"{flag(name)} must be a finite number, got {v!r}"[:200])
            if v < lo or (lo_open and v == lo) or v > hi or (hi_open and v == hi):
                raise ValueError(f"{flag(name)} must be in {'(' if lo_open else '['}{lo:g}, {hi:g}"
                                 f"{')' if hi_open else ']'}, got {v:g}")
        for name in ("task", "schedule", "pos_encoding", "norm", "activation", "device"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{flag(name)} must be a string, got {getattr(self, name)!r}"[:200])
        for name in ("out", "text", "init_from"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), str):
                raise ValueError(f"{flag(name)} must be a path, got {getattr(self, name)!r}"[:200])
        if self.task not in TASKS:
            raise ValueError(f"unknown task {self.task!r}; choose one of {', '.join(TASKS)}")
        if self.steps < 1:
            raise ValueError("steps must be >= 1")
        if self.schedule not in ("noam", "cosine", "constant"):
            raise ValueError(f"unknown schedule {self.schedule!r}; choose noam, cosine or constant")
        if not DEVICE.match(self.device):
            raise ValueError(f"unknown device {self.device!r}; choose auto, cpu, cuda, cuda:N or mps")
        if self.resume and not self.out:
            raise ValueError("--resume needs --out (the folder to resume from)")


# Each flag's type and range (a 0, a negative, NaN or inf never reaches the loop: --eval-every 0 divided by zero,
# --lr nan trained and saved a NaN model).
INT_FLAGS = {"steps": (1, 10 ** 9), "seed": (0, 2 ** 63 - 1), "layers": (1, 256), "d_model": (1, 2 ** 14),
             "heads": (1, 1024), "kv_heads": (1, 1024), "d_ff": (1, 2 ** 17), "window": (1, 2 ** 16),
             "batch_size": (1, 2 ** 20), "batch_tokens": (1, 2 ** 30), "warmup": (0, 10 ** 9),
             "seq_len": (1, 2 ** 16), "vocab_size": (64, 2 ** 17), "eval_every": (1, 10 ** 9), "ckpt_every": (1, 10 ** 9), "threads": (1, 1024),
             "parallel_release": (releases()[0], releases()[-1]),
             "generated_release": (releases("generated")[0], releases("generated")[-1])}
FLOAT_FLAGS = {  # name: (low, high, low excluded, high excluded)
    "max_seconds": (0.0, 1e9, True, False), "lr": (0.0, 1e6, True, False), "label_smoothing": (0.0, 1.0, False, True),
    "clip": (0.0, 1e9, False, False), "weight_decay": (0.0, 1e6, False, False), "dropout": (0.0, 1.0, False, True),
    "real_share": (0.0, 1.0, False, True)}
OPTIONAL_FLAGS = ("kv_heads", "window", "batch_tokens", "seq_len", "threads", "max_seconds", "real_share", "vocab_size",
                  "parallel_release", "init_from", "generated_release")
DEVICE = re.compile(r"\A(auto|cpu|mps|cuda(:[0-9]{1,2})?)\Z")


class NonFiniteError(ValueError):
    """The loss or the weights stopped being finite numbers; the run stops and keeps its last finite checkpoint."""


def learning_rate(step: int, cfg: TrainConfig, d_model: int) -> float:
    """Learning rate for 1-based ``step``."""
    step = max(step, 1)
    if cfg.schedule == "noam":
        warm = max(cfg.warmup, 1)
        return cfg.lr * d_model ** -0.5 * min(step ** -0.5, step * warm ** -1.5)
    warm = cfg.lr * min(1.0, step / cfg.warmup) if cfg.warmup else cfg.lr
    if cfg.schedule == "constant" or step <= cfg.warmup:
        return warm
    progress = min(1.0, (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup))
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def pick_device(name: str = "auto") -> torch.device:
    """The torch device ``name`` names (``auto``, ``cpu``, ``cuda``, ``cuda:N``, ``mps``); ``auto`` picks CUDA,
    then MPS, then the CPU. ValueError for an unknown or unavailable device."""
    if not isinstance(name, str) or not DEVICE.match(name):
        raise ValueError(f"unknown device {name!r}; choose auto, cpu, cuda, cuda:N or mps")
    if name.startswith("cuda"):
        index = int(name.split(":")[1]) if ":" in name else 0
        if not torch.cuda.is_available() or index >= torch.cuda.device_count():
            raise ValueError(f"device {name} is not available here (CUDA devices: "
                             f"{torch.cuda.device_count() if torch.cuda.is_available() else 0})")
    if name == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise ValueError("device mps is not available here")
    if name != "auto":
        return torch.device(name)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def model_config(cfg: TrainConfig, task=None, *, kind: str | None = None, vocab_size: int = 100) -> ModelConfig:
    """The model a training run builds: the one mapping from :class:`TrainConfig` to :class:`ModelConfig`. With a
    ``task``, its vocabulary, length and model kind; without one (the Training page checking a form before any data
    is built), ``kind`` and a stand-in ``vocab_size``."""
    pairs = getattr(task, "sentence_pairs", False)  # BERT pre-training: segments A/B and the next-sentence head
    extra = {} if task is None else {"max_len": task.max_len}
    return ModelConfig(kind=task.model_kind if task is not None else kind,
                       vocab_size=task.tokenizer.vocab_size if task is not None else vocab_size, d_model=cfg.d_model,
                       n_heads=cfg.heads, n_kv_heads=cfg.kv_heads, n_encoder_layers=cfg.layers,
                       n_decoder_layers=cfg.layers, d_ff=cfg.d_ff, dropout=cfg.dropout,
                       pos_encoding=cfg.pos_encoding, norm=cfg.norm, activation=cfg.activation, window=cfg.window,
                       type_vocab_size=2 if pairs else 0, nsp=pairs, attention_only=cfg.attention_only,
                       scale_embeddings=not cfg.unscaled_embeddings, **extra)


def loss_fn(model, batch, label_smoothing=0.0):
    """Cross-entropy over the target tokens; for a BERT-style model with a next-sentence head, plus the
    next-sentence loss over the batch's sentence pairs (Devlin et al. 2019: the two pre-training losses add)."""
    if batch.src is not None:
        out = model(batch.src, batch.tgt_in)
    elif batch.token_types is not None:
        out = model(batch.tgt_in, token_types=batch.token_types)
    else:
        out = model(batch.tgt_in)
    loss = F.cross_entropy(out.logits.flatten(0, 1).float(), batch.tgt_out.flatten(), ignore_index=PAD,
                           label_smoothing=label_smoothing)
    if out.next_sentence is not None and batch.next_sentence is not None and bool(batch.next_sentence.ge(0).any()):
        loss = loss + F.cross_entropy(out.next_sentence.float(), batch.next_sentence, ignore_index=-100)
    return loss


def _opt_tensors(opt) -> dict[str, torch.Tensor]:
    out = {}
    for i, st in opt.state_dict()["state"].items():
        for k, v in st.items():
            out[f"opt.{i}.{k}"] = torch.as_tensor(v).detach().cpu().contiguous()
    return out


def _load_opt(opt, tensors):
    sd = opt.state_dict()
    state = {}
    for key, v in tensors.items():
        if key.startswith("opt."):
            _, i, k = key.split(".", 2)
            state.setdefault(int(i), {})[k] = v
    sd["state"] = state
    opt.load_state_dict(sd)


def _stopped(step: int, what: str, out: Path | None) -> str:
    """The one line a run stopped for non-finite numbers ends with: what happened, and what was kept."""
    kept = None
    if out is not None:
        try:
            kept = json.loads((out / STATE_JSON).read_text()).get("step")
        except (OSError, ValueError, AttributeError):
            kept = None
    where = (f"the last finite checkpoint (step {kept}) is kept in {out}" if kept is not None else
             "nothing was saved" if out is not None else "nothing is kept")
    return (f"stopped at step {step}: {what}; {where}. Lower --lr, or raise --warmup, or set --clip, "
            "and train again")


def read_state(out: Path) -> tuple[dict, dict]:
    """The resume state in ``out`` (``train_state.json`` and ``train_state.safetensors``), checked; a missing,
    truncated or tampered file is one :class:`~core.io.checkpoint.CheckpointError` line."""
    def bad(why):
        return checkpoint.CheckpointError(f"cannot resume from {out}: {why}")

    try:
        state = json.loads((out / STATE_JSON).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise bad(f"{STATE_JSON} is unreadable or not JSON ({' '.join(str(e).split())[:120]})") from None
    if not isinstance(state, dict) or not isinstance(state.get("train_config"), dict):
        raise bad(f"{STATE_JSON} must be an object with step, history and train_config")
    step, history = state.get("step"), state.get("history")
    if not isinstance(step, int) or isinstance(step, bool) or not 0 <= step <= INT_FLAGS["steps"][1]:
        raise bad(f"{STATE_JSON}: step must be a whole number of steps, got {step!r}"[:200])
    if not isinstance(history, list) or not all(
            isinstance(h, list) and len(h) == 2 and isinstance(h[0], int) and isinstance(h[1], (int, float))
            and not isinstance(h[1], bool) and math.isfinite(h[1]) for h in history):
        raise bad(f"{STATE_JSON}: history must be a list of [step, finite loss] pairs")
    for key in ("seconds", "tokens"):
        if key in state and (not isinstance(state[key], (int, float)) or isinstance(state[key], bool)
                             or not math.isfinite(state[key]) or state[key] < 0):
            raise bad(f"{STATE_JSON}: {key} must be a finite number >= 0")
    try:
        tensors = load_file(str(out / STATE_WEIGHTS))
    except Exception as e:  # safetensors raises its own error types for a truncated or garbled file
        raise bad(f"{STATE_WEIGHTS} is missing, truncated or corrupt ({' '.join(str(e).split())[:120]})") from None
    rng = [k for k in tensors if k == "rng.torch" or k.startswith(("rng.torch.", "rng.cuda."))]
    if "rng.torch" not in tensors or any(tensors[k].dtype != torch.uint8 or tensors[k].dim() != 1 for k in rng):
        raise bad(f"{STATE_WEIGHTS} has no valid random-number state (rng.torch)")
    bad_keys = [k for k in tensors if k not in rng and not re.fullmatch(r"opt\.[0-9]{1,6}\.[A-Za-z_]{1,32}", k)]
    if bad_keys:
        raise bad(f"{STATE_WEIGHTS} holds unexpected tensors ({', '.join(sorted(bad_keys)[:3])})")
    return state, tensors


def starting_point(cfg: TrainConfig):
    """The checkpoint ``--init-from`` names (a folder, or a model's name), checked: the same task as this run, and no
    ``--vocab-size`` other than its tokenizer's (the run keeps its tokenizer, so its vocabulary cannot change)."""
    from ..io import registry
    try:
        ck = registry.load(cfg.init_from)
    except (checkpoint.CheckpointError, FileNotFoundError, ValueError) as e:
        raise ValueError(f"--init-from {cfg.init_from}: {e}") from None
    if ck.meta.get("task") != cfg.task:
        raise ValueError(f"--init-from {cfg.init_from} is a {ck.meta.get('task')!r} model; this run's task is "
                         f"{cfg.task!r}")
    if cfg.vocab_size is not None and cfg.vocab_size != ck.tokenizer.vocab_size:
        raise ValueError(f"--vocab-size {cfg.vocab_size}: --init-from {cfg.init_from} keeps its tokenizer of "
                         f"{ck.tokenizer.vocab_size} tokens; leave --vocab-size out")
    return ck


def check_same_shape(ours, theirs, name: str) -> None:
    """Refuse (``ValueError``) to start from a model whose configuration differs from this run's, naming the flags'
    fields that differ."""
    a, b = ours.to_dict(), theirs.to_dict()
    differ = [f"{k} {a.get(k)!r} here, {b.get(k)!r} there" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    if differ:
        raise ValueError(f"--init-from {name} has another shape: {'; '.join(differ)}")


def command_line(cfg: TrainConfig) -> str:
    """The exact command that reproduces a run (every setting that affects the result)."""
    skip = {"history", "resume", "quiet", "device", "threads", "out", "compile"}
    flags = []
    for k, v in dataclasses.asdict(cfg).items():
        if k in skip or v is None or v is False:
            continue
        flags.append(f"--{k.replace('_', '-')}" + ("" if v is True else f" {v}"))
    return f"python -m core.train --out {cfg.out} " + " ".join(flags)


def _finished_summary(ck, state: dict, out: Path) -> dict:
    """The summary of a run that has already finished, as its final save recorded it (nothing is recomputed), naming
    the folder it is in now (a run folder that was moved or copied printed its old path)."""
    summary = dict(ck.meta.get("summary") or {})
    if not summary:  # its checkpoint is a periodic one past the --steps asked for now
        history = state["history"]
        summary = {"task": ck.meta.get("task"), "steps": state["step"], "seconds": state.get("seconds"),
                   "final_loss": history[-1][1] if history else None, "metrics": ck.meta.get("metrics", {}),
                   "parameters": ck.model.num_parameters(), "checkpoint": str(out)}
    return summary | {"history": state["history"], "checkpoint": str(out)}


def _card(cfg: TrainConfig, summary: dict, n_params: int, data: str) -> str:
    loss = summary["final_loss"]
    return (f"# {cfg.task} model\n\nTrained with\n\n```\n{command_line(cfg)}\n```\n\n"
            f"- data: {data}\n- parameters: {n_params:,}\n- steps: {summary['steps']}\n"
            f"- training time: {summary['seconds']:.1f} s on {summary['device']}\n"
            f"- tokens/s: {summary['tokens_per_s']:.0f}\n"
            f"- final training loss: {f'{loss:.4f}' if math.isfinite(loss) else 'not measured (no step ran)'}\n"
            f"- metrics at the end of training: `{jsonio.dumps(summary['metrics'])}`\n")


class _Dist:
    """torchrun's environment, if any."""

    def __init__(self, device):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.active = "RANK" in os.environ and self.world > 1
        self.device = device
        if self.active and not torch.distributed.is_initialized():
            torch.distributed.init_process_group("nccl" if device.type == "cuda" else "gloo")

    @property
    def main(self):
        return self.rank == 0

    def gather(self, tensor: torch.Tensor) -> list[torch.Tensor]:
        """``tensor`` of every process, in rank order (just ``[tensor]`` without torchrun)."""
        if not self.active:
            return [tensor]
        out = [None] * self.world
        torch.distributed.all_gather_object(out, tensor.cpu())
        return out

    def all_true(self, ok: bool) -> bool:
        """``ok`` on every process (without torchrun just ``ok``): every rank stops together."""
        if not self.active:
            return bool(ok)
        flag = torch.tensor([1 if ok else 0], dtype=torch.int32, device=self.device)
        torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MIN)
        return bool(flag.item())

    def barrier(self):
        if self.active:
            torch.distributed.barrier()

    def close(self):
        if self.active and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()


@dataclass
class Trained:
    """What :func:`train_model` returns: the summary (also the CLI's last line), the model and its tokenizer."""
    summary: dict
    model: Transformer
    tokenizer: object


def train(cfg: TrainConfig, on_step=None, stop=None, log=None) -> dict:
    """Train; ``on_step(info)`` is called after every step, ``stop`` (a threading.Event) ends early. Returns the
    summary dict (the CLI's last line); the model is in ``summary['checkpoint']`` (a folder) when ``cfg.out`` is set.
    :func:`train_model` also returns the model and tokenizer."""
    return train_model(cfg, on_step=on_step, stop=stop, log=log).summary


def train_model(cfg: TrainConfig, on_step=None, stop=None, log=None) -> Trained:
    """:func:`train`, returning the trained model and tokenizer with the summary. The steps: check the output folder
    and what a resumed run left (:meth:`_Run.open`), build the task, model and optimiser (:meth:`_Run.build`), take
    optimiser steps with evaluations and checkpoints (:meth:`_Run.loop`), then evaluate and save (:meth:`_Run.finish`).
    Progress goes to ``log`` (default: the ``core.train`` logger)."""
    cfg.validate()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    run = _Run(cfg, log)
    try:
        run.open()
        run.build()
        if run.finished_already():
            return Trained(_finished_summary(run.resumed, run.state, run.out), run.model, run.task.tokenizer)
        run.loop(on_step, stop)
        return Trained(run.finish(), run.model, run.task.tokenizer)
    finally:
        run.dist.close()


class _Run:
    """One training run's state, shared by its steps."""

    def __init__(self, cfg: TrainConfig, log=None):
        self.cfg = cfg
        self.device = pick_device(cfg.device)
        self.dist = _Dist(self.device)
        self.say = log or LOG.info
        if not self.dist.main or cfg.quiet:
            self.say = lambda msg: None
        self.out = Path(cfg.out) if cfg.out else None
        self.resumed, self.state, self.tensors = None, {}, {}
        self.start, self.history, self.step, self.tokens, self.metrics = 0, [], 0, 0, {}
        self.known_words: list = []  # the training source text's words (words.json), collected at the first save
        self.last_loss = float("nan")

    # ---------------------------------------------------------------- open: output folder, resume
    def open(self) -> None:
        """Make the output folder safe to write (recover, refuse a foreign folder, clear temporaries) and, for
        ``--resume``, read the run to continue and refuse one whose settings differ."""
        cfg, out = self.cfg, self.out
        if out is not None and self.dist.main:
            checkpoint.recover(out)
            checkpoint.check_replaceable(out)  # before any training: never rename or delete a folder that is not ours
            checkpoint.clean_temporaries(out)  # what a killed earlier run left half-written
        if cfg.resume and not (checkpoint.recover(out) / STATE_JSON).exists():
            raise ValueError(f"--resume: there is no training checkpoint to resume in {out}")
        if cfg.resume:
            self.resumed = checkpoint.load(out, self.device)
            self.state, self.tensors = read_state(out)
            saved = dict(self.state["train_config"])
            if cfg.task in BROAD:  # a run from before release 2 says nothing: it drew release 1
                saved["generated_release"] = saved.get("generated_release") or 1
                if cfg.generated_release is None:  # not given: the run's own
                    cfg.generated_release = saved["generated_release"]
            kept = MODEL_KEYS + ("task", "seed", "batch_size", "batch_tokens", "real_share", "vocab_size", "parallel_release",
                                 "init_from", "generated_release")
            changed = [k for k in kept if saved.get(k) != getattr(cfg, k)]
            if changed:
                raise ValueError(f"cannot resume: {', '.join(changed)} differ from the run in {out}")

    # ---------------------------------------------------------------- build: task, model, optimiser
    def build(self) -> None:
        """The task (data and tokenizer), the model and AdamW; a resumed run's optimiser and random state."""
        cfg, resumed, device, dist = self.cfg, self.resumed, self.device, self.dist
        if cfg.generated_release is None and cfg.task in BROAD and not resumed:
            from ..data.broad import LATEST_GENERATED
            cfg.generated_release = LATEST_GENERATED  # a new run draws the latest way, and says so in its command
        text, init = None, None
        if cfg.init_from and not resumed:
            init = starting_point(cfg)
        if cfg.text:
            from ..data.lm import load_text
            text = load_text(cfg.text)
        self.task = make_task(cfg.task, text=text, seq_len=cfg.seq_len,
                              tokenizer=resumed.tokenizer if resumed else init.tokenizer if init else None,
                              batch_tokens=cfg.batch_tokens,
                              real_share=cfg.real_share, vocab_size=cfg.vocab_size,
                              parallel_release=cfg.parallel_release, generated_release=cfg.generated_release)
        torch.manual_seed(cfg.seed)
        if resumed:
            self.model = resumed.model.train()
        else:
            self.model = Transformer(model_config(cfg, self.task)).to(device)
            if init:
                check_same_shape(self.model.cfg, init.model.cfg, cfg.init_from)
                self.model.load_state_dict(init.model.state_dict())  # cast to this model's float32
        # what the run started from, in its meta: the name given, that model's own command and step, and (a model
        # that was itself fine-tuned) where that one started, so the chain back to the first run stays readable
        self.init_record = (resumed.meta.get("init_from") if resumed else
                            {"model": cfg.init_from, "command": init.meta.get("command"), "step": init.meta.get("step"),
                             "parallel_release": init.meta.get("parallel_release", 1),
                             **({"init_from": init.meta["init_from"]} if init.meta.get("init_from") else {})}
                            if init else None)
        # fused on CPU too: 46.6 -> 1.2 ms per optimizer step for 1 M parameters (docs/BENCHMARKS.md sec. 2)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9,
                                     weight_decay=cfg.weight_decay, fused=device.type in ("cuda", "cpu"))
        if resumed:
            try:
                _load_opt(self.opt, self.tensors)
                # every process gets its own random state back (dropout differs per rank); older checkpoints hold one
                torch.set_rng_state(self.tensors.get(f"rng.torch.{dist.rank}", self.tensors["rng.torch"]))
                if device.type == "cuda" and f"rng.cuda.{dist.rank}" in self.tensors:
                    torch.cuda.set_rng_state(self.tensors[f"rng.cuda.{dist.rank}"], device)
            except (RuntimeError, ValueError, KeyError, IndexError, TypeError) as e:
                raise checkpoint.CheckpointError(
                    f"cannot resume from {self.out}: {STATE_WEIGHTS} does not fit this run's optimiser or random "
                    f"state ({' '.join(str(e).split())[:160]})") from None
            self.start, self.history = self.state["step"], self.state["history"]
        self.ddp = torch.nn.parallel.DistributedDataParallel(self.model) if dist.active else self.model
        if cfg.compile:  # the training forward only: evaluation, saving and tracing use the plain module
            self.ddp = torch.compile(self.ddp)
        self.autocast = (torch.autocast(device.type, dtype=torch.bfloat16)
                         if device.type == "cuda" or (device.type == "cpu" and cfg.cpu_bf16) else None)
        self.n_params = self.model.num_parameters()

    def finished_already(self) -> bool:
        """A resumed run that already reached ``--steps``: its card, summary and weights stay as they are."""
        if self.resumed and self.start >= self.cfg.steps:
            self.say(f"{self.out} has already trained {self.start} steps (--steps {self.cfg.steps}); nothing to do, "
                     "nothing rewritten")
            return True
        if self.resumed:
            self.say(f"resuming {self.cfg.task} from step {self.start}")
        return False

    # ---------------------------------------------------------------- loop
    def _totals(self) -> tuple[float, int]:
        """Seconds and tokens of the whole run (a resumed run's earlier parts are in its state)."""
        return (float(self.state.get("seconds", 0.0)) + time.perf_counter() - self.t0,
                int(self.state.get("tokens", 0)) + self.tokens)

    def _one_step(self) -> float:
        """One optimiser step on the next batch; returns its learning rate."""
        cfg, model, opt = self.cfg, self.model, self.opt
        model.train()
        batch = self.task.batch(self.step, cfg.batch_size, cfg.seed, self.dist.rank, self.dist.world).to(self.device)
        lr = learning_rate(self.step + 1, cfg, model.cfg.d_model)
        for g in opt.param_groups:
            g["lr"] = lr
        if self.autocast is not None:
            with self.autocast:
                loss = loss_fn(self.ddp, batch, cfg.label_smoothing)
        else:
            loss = loss_fn(self.ddp, batch, cfg.label_smoothing)
        loss_value = float(loss.detach())
        if not self.dist.all_true(math.isfinite(loss_value)):
            raise NonFiniteError(_stopped(self.step + 1, f"the loss became {loss_value}", self.out))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
        opt.step()
        self.step += 1
        self.tokens += batch.n_tokens()
        self.last_loss = loss_value
        self.history.append([self.step, round(loss_value, 6)])
        return lr

    def loop(self, on_step=None, stop=None) -> None:
        """Steps until ``--steps``, ``--max-seconds`` or ``stop``; evaluations, progress and checkpoints on the way."""
        cfg, dist = self.cfg, self.dist
        self.say(f"{cfg.task}: {self.n_params:,} parameters on {self.device}"
                 + (f" × {dist.world} processes" if dist.active else ""))
        self.t0, self.step = time.perf_counter(), self.start
        self.last_loss = float(self.history[-1][1]) if self.history else float("nan")
        while self.step < cfg.steps:
            if stop is not None and stop.is_set():
                break
            if cfg.max_seconds is not None and time.perf_counter() - self.t0 > cfg.max_seconds:
                break
            lr = self._one_step()
            step = self.step
            if step % cfg.eval_every == 0 or step == cfg.steps:
                self.metrics = self.task.evaluate(self.model) if dist.main else {}
            elapsed = time.perf_counter() - self.t0
            info = {"step": step, "steps": cfg.steps, "loss": self.last_loss, "lr": lr, "metrics": self.metrics,
                    "elapsed": elapsed, "tokens_per_s": self.tokens * dist.world / elapsed}
            if on_step is not None:
                on_step(info | {"model": self.model, "tokenizer": self.task.tokenizer})
            if step % max(1, cfg.steps // 20) == 0 or step == cfg.steps:
                self.say(f"step {step}/{cfg.steps} ({step / cfg.steps:.0%}) loss {self.last_loss:.4f} lr {lr:.2e} "
                         f"{info['tokens_per_s']:.0f} tok/s {jsonio.dumps(self.metrics) if self.metrics else ''}")
            if self.out is not None and step % cfg.ckpt_every == 0 and step < cfg.steps:
                self.save(self.metrics)
                dist.barrier()

    # ---------------------------------------------------------------- save and finish
    def summary(self) -> dict:
        """The run's figures as the card, the checkpoint's meta and the CLI's last line show them."""
        secs, toks = self._totals()
        return {"task": self.cfg.task, "steps": self.step, "seconds": round(secs, 2),
                "tokens_per_s": round(toks * self.dist.world / max(secs, 1e-9), 1), "final_loss": self.last_loss,
                "metrics": self.metrics, "parameters": self.n_params, "device": str(self.device),
                "checkpoint": str(self.out) if self.out else None}

    def save(self, metrics=None, summary=None) -> None:
        """An atomic checkpoint (weights, tokenizer, optimiser and random state; the card with ``summary``)."""
        cfg, model, out, dist = self.cfg, self.model, self.out, self.dist
        if out is None:
            return
        if not dist.all_true(all(bool(torch.isfinite(p).all()) for p in model.parameters())):
            raise NonFiniteError(_stopped(self.step, "the weights became non-finite", out))
        rng = {f"rng.torch.{r}": t for r, t in enumerate(dist.gather(torch.get_rng_state()))}  # all ranks take part
        if self.device.type == "cuda":
            rng |= {f"rng.cuda.{r}": t for r, t in enumerate(dist.gather(torch.cuda.get_rng_state(self.device)))}
        if not dist.main:
            return
        secs, toks = self._totals()
        st = {"step": self.step, "history": self.history, "train_config": dataclasses.asdict(cfg) | {"history": []},
              "seconds": round(secs, 3), "tokens": toks}
        tensors = _opt_tensors(self.opt) | {"rng.torch": torch.get_rng_state()} | rng
        meta = {"task": cfg.task, "command": command_line(cfg), "step": self.step, "metrics": metrics or {},
                "parameters": self.n_params}
        if cfg.parallel_release:  # read back by core.data.parallel_of (absent: release 1)
            meta["parallel_release"] = cfg.parallel_release
        if cfg.generated_release:  # read back by core.data.corpus_of (absent: release 1)
            meta["generated_release"] = cfg.generated_release
        if cfg.init_from:
            meta["init_from"] = self.init_record
        if not self.known_words:
            self.known_words.append(self.task.source_words())
        checkpoint.save(out, model, self.task.tokenizer, meta=meta | ({"summary": summary} if summary else {}),
                        card=_card(cfg, summary, self.n_params, self.task.description) if summary else None,
                        extra_files={STATE_WEIGHTS: save(tensors), STATE_JSON: jsonio.dumps(st).encode()},
                        known_words=self.known_words[0],
                        words_source=f"training source text of {cfg.task}: {self.task.description}")

    def finish(self) -> dict:
        """The last evaluation and the final save; the summary with the loss history."""
        cfg, step = self.cfg, self.step
        if self.dist.main and (not self.metrics or (step % cfg.eval_every and step != cfg.steps)):
            self.metrics = self.task.evaluate(self.model)
        summary = self.summary()  # the one the card, the checkpoint's meta and the printed line all show
        self.save(self.metrics, summary=summary)
        self.dist.barrier()
        return dict(summary) | {"history": self.history}
