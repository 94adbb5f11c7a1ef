"""Counting and nesting: two formal languages, a small causal Transformer against an LSTM of about the same size,
trained on short strings and measured on long ones.

Hahn (2020) proves that self-attention cannot recognise PARITY, or bracket languages with two kinds of brackets,
at every length unless the model grows with the input: with soft attention, flipping one input changes the output by
an amount that shrinks as the string grows. Tran et al. (2018) found recurrent models better than Transformers on
tasks with hierarchical structure. Here both are measured on two languages a learner can type:

* **PARITY** (:func:`is_even`): is the number of 1s in a bit string even?
* **Dyck-1**, balanced brackets (:func:`is_balanced`): does every ``(`` have its ``)``, none too early? The
  **depth** after each character (:func:`depths`) is the number of ``(`` minus the number of ``)`` read so far; a
  string is balanced when no depth is negative and the last one is 0. One kind of bracket needs only a counter, not
  a stack (Hahn's bracket result is about two kinds).

The data (:func:`sample`, :func:`eval_strings`): PARITY strings are uniform bits. A bracket string of even length is
balanced half the time (uniform over the balanced strings of that length, :func:`random_balanced`); the other half
are hard negatives (:func:`random_unbalanced`): a balanced string with one bracket flipped, a string with as many
``(`` as ``)`` that dips below zero, or a random string. Odd lengths cannot balance. Training lengths run from 1 to
``train_len`` (20); the evaluation reads every even length from 2 to ``eval_len`` (100), ``eval_n`` strings each, drawn
from their own seeded generator.

The models read ``[BOS]`` then one token per character and give, at every position, the logits of the answer (even /
balanced or not) and, for brackets, a number: the depth there. The answer is read at the last character, the depth
at each one (rounded to the nearest integer).

* :class:`CausalTransformer`: the lab's own decoder stack (:class:`core.model.Transformer`, decoder-only, pre-LN,
  GELU) with a causal mask and **no position encoding**: a learned table has no row past the training length, and
  sines at positions never seen are numbers the model never read; the causal mask alone tells a position what
  came before it.
* :class:`LSTMReader`: an embedding and a one-layer ``nn.LSTM`` with the same two read-outs, sized to about the
  Transformer's number of parameters.

CLI: ``python -m core.variants.hierarchy --out assets/hierarchy`` trains the four models (two tasks × two kinds) one
after the other on one thread and writes ``TASK-KIND.safetensors`` for each and ``results.json`` (config, command,
time per model, accuracy by length, a small check set with every model's answers); :func:`load` reads them back.
"""
from __future__ import annotations

import dataclasses
import math
import random
import time
from datetime import datetime
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import nn

from ..config import ModelConfig
from ..model import Transformer
from ..training import experiment

TASKS = ("parity", "brackets")
KINDS = ("transformer", "lstm")
SYMBOLS = {"parity": "01", "brackets": "()"}
PAD, BOS = 0, 1  # then the task's two symbols: ids 2 and 3
VOCAB = 4
LONGEST = 100  # the longest string the models are measured on, and the longest the page reads
RESULTS = "results.json"
TIED = "body.lm_head.weight"  # the decoder's language-model head: the token embedding itself, not used here
CHECK = {"parity": ["0", "1", "11", "1011", "0110100110010110", "1" * 19, "10" * 15 + "1", "0" * 40 + "1" * 40,
                    "1101" * 25],
         "brackets": ["()", ")(", "(()(()))", "(()", "())(()", "((()))" * 3, "(" * 12 + ")" * 12,
                      "()" * 30, "(" * 50 + ")" * 50, "(()" * 20 + "))" * 10]}


def weights_file(task: str, kind: str) -> str:
    """The file name of one model's weights: ``TASK-KIND.safetensors``."""
    return f"{task}-{kind}.safetensors"


# ------------------------------------------------------------------ the languages
def is_even(bits: str) -> bool:
    """PARITY's label: True when ``bits`` holds an even number of ``1`` (the empty string: True)."""
    return bits.count("1") % 2 == 0


def depths(text: str) -> list[int]:
    """The depth after each character of a bracket string: ``(`` minus ``)`` read so far (negative after a ``)``
    with no ``(`` open)."""
    out, d = [], 0
    for ch in text:
        d += 1 if ch == "(" else -1
        out.append(d)
    return out


def is_balanced(text: str) -> bool:
    """Dyck-1's label: no depth below 0 and depth 0 at the end (:func:`depths`; the empty string: True)."""
    ds = depths(text)
    return min(ds, default=0) >= 0 and (ds[-1] if ds else 0) == 0


def label(task: str, text: str) -> bool:
    """The exact answer: :func:`is_even` for ``parity``, :func:`is_balanced` for ``brackets``."""
    return is_even(text) if task == "parity" else is_balanced(text)


ANSWERS = {"parity": ("odd", "even"), "brackets": ("not balanced", "balanced")}  # label False, True


def parse(text: str, task: str, longest: int = LONGEST) -> str:
    """A learner's string for ``task``, spaces and line breaks removed. Raises ValueError, in one sentence a page can
    show, for an empty string, a character that is not one of the task's two symbols, or more than ``longest``
    characters."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")
    a, b = SYMBOLS[task]
    kind = "bits" if task == "parity" else "brackets"
    s = "".join(str(text).split())
    if not s:
        raise ValueError(f"Type a string of {kind}: only {a} and {b}.")
    bad = sorted(set(s) - {a, b})
    if bad:
        shown = ", ".join(f"“{c}”" for c in bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        first = min(s.index(c) for c in bad) + 1
        raise ValueError(f"Only {a} and {b} can be read here ({kind}); found {shown}, first at character {first}.")
    if len(s) > longest:
        raise ValueError(f"{len(s)} characters: the models were measured on strings of at most {longest}. "
                         f"Shorten it by {len(s) - longest}.")
    return s


# ------------------------------------------------------------------ the data
def balanced_paths(steps: int, depth: int) -> int:
    """How many ways ``steps`` brackets can take depth ``depth`` down to 0 without going below 0 (the ballot
    numbers: C(steps, k) − C(steps, k − 1) with k = (steps − depth) / 2 closing moves beyond the matching ones)."""
    if depth < 0 or depth > steps or (steps - depth) % 2:
        return 0
    k = (steps - depth) // 2
    return math.comb(steps, k) - (math.comb(steps, k - 1) if k > 0 else 0)


def random_balanced(n: int, rng: random.Random) -> str:
    """A balanced string of even length ``n``, every one of them equally likely: each ``(`` is drawn with the share
    of balanced completions that begin with it (:func:`balanced_paths`)."""
    if n % 2:
        raise ValueError(f"no balanced string has odd length {n}")
    out, d = [], 0
    for left in range(n, 0, -1):
        up = balanced_paths(left - 1, d + 1)
        if rng.random() * balanced_paths(left, d) < up:
            out.append("(")
            d += 1
        else:
            out.append(")")
            d -= 1
    return "".join(out)


def random_unbalanced(n: int, rng: random.Random) -> str:
    """An unbalanced bracket string of length ``n``: for odd ``n`` a random one; for even ``n`` one of three kinds
    (equally often): a balanced string with one bracket flipped (the counts differ by 2), a shuffle of n/2 ``(`` and
    n/2 ``)`` that dips below zero (the counts agree, the order is wrong), or a random string that is unbalanced."""
    if n % 2:
        return "".join(rng.choice("()") for _ in range(n))
    way = rng.randrange(3)
    if way == 0:
        s = list(random_balanced(n, rng))
        i = rng.randrange(n)
        s[i] = "(" if s[i] == ")" else ")"
        return "".join(s)
    while True:
        if way == 1:
            s = list("(" * (n // 2) + ")" * (n // 2))
            rng.shuffle(s)
            s = "".join(s)
        else:
            s = "".join(rng.choice("()") for _ in range(n))
        if not is_balanced(s):
            return s


def sample(task: str, length: int, rng: random.Random) -> str:
    """One string of ``length``: uniform bits for ``parity``; for ``brackets`` balanced or not with equal odds at an
    even length (:func:`random_balanced`, :func:`random_unbalanced`), unbalanced at an odd one."""
    if task == "parity":
        return "".join(rng.choice("01") for _ in range(length))
    if length % 2 == 0 and rng.random() < 0.5:
        return random_balanced(length, rng)
    return random_unbalanced(length, rng)


def eval_strings(task: str, length: int, n: int, seed: int) -> list[str]:
    """The ``n`` evaluation strings of one length, from a generator of their own (the same for the same arguments,
    whatever was drawn before)."""
    rng = random.Random(seed * 1_000_003 + TASKS.index(task) * 1009 + length)
    return [sample(task, length, rng) for _ in range(n)]


def encode(strings: list[str], task: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids [B, 1 + longest], lengths [B])``: ``[BOS]`` then the ids of each string's characters (2 and 3 for the
    task's two symbols), padded on the right with ``PAD`` (a causal model's outputs at the real positions do not
    see it)."""
    a = SYMBOLS[task][0]
    longest = max((len(s) for s in strings), default=0)
    ids = torch.full((len(strings), 1 + longest), PAD, dtype=torch.long)
    ids[:, 0] = BOS
    for row, s in enumerate(strings):
        if s:
            ids[row, 1:1 + len(s)] = torch.tensor([2 if c == a else 3 for c in s])
    return ids, torch.tensor([len(s) for s in strings], dtype=torch.long)


# ------------------------------------------------------------------ the models
@dataclasses.dataclass
class HierarchyConfig:
    """Both kinds of model and their training: lengths, sizes, optimisation, evaluation, storage."""
    train_len: int = 20  # training strings have 1 … train_len characters
    eval_len: int = LONGEST  # evaluated on even lengths 2 … eval_len
    eval_n: int = 300  # strings per evaluated length
    d_model: int = 32
    heads: int = 4
    layers: int = 2
    d_ff: int = 64
    lstm_emb: int = 16
    lstm_hidden: int = 57  # about the Transformer's parameters
    steps: int = 3000
    batch_size: int = 64
    lr: float = 3e-3
    warmup: int = 100
    depth_weight: float = 0.1  # weight of the depth loss (mean squared error) beside the answer's cross-entropy
    half: bool = True  # store the weights in float16
    seed: int = 0
    eval_seed: int = 7
    threads: int | None = 1  # torch's threads while training and scoring (None: leave as is)

    def validate(self) -> None:
        """Refuse settings the run cannot use (ValueError, one line)."""
        if not 2 <= self.train_len <= self.eval_len <= 512:
            raise ValueError(f"need 2 <= train_len <= eval_len <= 512, got {self.train_len} and {self.eval_len}")
        if min(self.steps, self.batch_size, self.eval_n, self.layers, self.lstm_emb, self.lstm_hidden) < 1:
            raise ValueError("steps, batch_size, eval_n, layers, lstm_emb and lstm_hidden must be positive")
        if self.lr <= 0 or self.depth_weight < 0:
            raise ValueError("lr must be positive and depth_weight not negative")
        transformer_config(self)


def config_of(saved: dict) -> HierarchyConfig:
    """The config of a results file's ``config`` (fields it does not know are left out)."""
    return HierarchyConfig(**{k: v for k, v in saved.items() if k in HierarchyConfig.__dataclass_fields__})


def transformer_config(cfg: HierarchyConfig) -> ModelConfig:
    """The :class:`ModelConfig` of the Transformer's stack: decoder-only (causal), pre-LN, GELU, no dropout, no
    position encoding, room for ``[BOS]`` and ``eval_len`` characters."""
    return ModelConfig(kind="decoder-only", vocab_size=VOCAB, d_model=cfg.d_model, n_heads=cfg.heads,
                       n_encoder_layers=0, n_decoder_layers=cfg.layers, d_ff=cfg.d_ff, dropout=0.0,
                       max_len=cfg.eval_len + 1, pos_encoding="none", norm="pre", activation="gelu", pad_id=PAD)


class Reader(nn.Module):
    """What both kinds share: the read-outs. ``answer`` gives two logits at every position (label False, True),
    ``depth`` (brackets only) one number."""

    def __init__(self, width: int, task: str):
        super().__init__()
        self.task = task
        self.answer = nn.Linear(width, 2)
        self.depth = nn.Linear(width, 1) if task == "brackets" else None

    def num_parameters(self) -> int:
        """Every weight of the model."""
        return sum(p.numel() for p in self.parameters())

    def states(self, ids: torch.Tensor) -> torch.Tensor:
        """``[B, T, width]``: the hidden state at every position (each kind's own)."""
        raise NotImplementedError

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``ids [B, T]`` → (answer logits ``[B, T, 2]``, depth ``[B, T]`` or None)."""
        h = self.states(ids)
        return self.answer(h), (self.depth(h).squeeze(-1) if self.depth is not None else None)


class CausalTransformer(Reader):
    """The lab's decoder-only :class:`core.model.Transformer` (causal, no positions) and the read-outs on its
    final hidden states."""

    def __init__(self, cfg: HierarchyConfig, task: str):
        super().__init__(cfg.d_model, task)
        self.body = Transformer(transformer_config(cfg))

    def states(self, ids: torch.Tensor) -> torch.Tensor:
        """The decoder stack's output (after its final LayerNorm)."""
        return self.body.decode(ids)


class LSTMReader(Reader):
    """An embedding and a one-layer ``nn.LSTM``, read out at every step."""

    def __init__(self, cfg: HierarchyConfig, task: str):
        super().__init__(cfg.lstm_hidden, task)
        self.embed = nn.Embedding(VOCAB, cfg.lstm_emb)
        self.lstm = nn.LSTM(cfg.lstm_emb, cfg.lstm_hidden, batch_first=True)

    def states(self, ids: torch.Tensor) -> torch.Tensor:
        """The LSTM's hidden state after each token."""
        return self.lstm(self.embed(ids))[0]


def build(cfg: HierarchyConfig, task: str, kind: str) -> Reader:
    """A fresh model of ``kind`` for ``task``, drawn from ``cfg.seed``."""
    if task not in TASKS or kind not in KINDS:
        raise ValueError(f"unknown task or kind {task!r}, {kind!r}")
    torch.manual_seed(cfg.seed)
    return (CausalTransformer if kind == "transformer" else LSTMReader)(cfg, task)


@torch.no_grad()
def predict(model: Reader, strings: list[str], batch: int = 256) -> dict:
    """``model`` on ``strings`` of its task: ``{"p_true": [probability of label True], "answer": [bool],
    "confidence": [probability of that answer], "depth": [[the depth read at each character]] (brackets; else
    None)}``."""
    model.eval()
    p_true, depth = [], []
    for start in range(0, len(strings), batch):
        part = strings[start:start + batch]
        ids, lengths = encode(part, model.task)
        logits, d = model(ids)
        last = logits[torch.arange(len(part)), lengths]  # the position of each string's last character
        p_true += torch.softmax(last.float(), -1)[:, 1].tolist()
        if d is not None:
            depth += [d[row, 1:1 + n].tolist() for row, n in enumerate(lengths.tolist())]
    answer = [p >= 0.5 for p in p_true]
    return {"p_true": p_true, "answer": answer, "confidence": [p if a else 1 - p for p, a in zip(p_true, answer)],
            "depth": depth if model.task == "brackets" else None}


def scores(model: Reader, strings: list[str]) -> dict:
    """``{"accuracy": share of strings answered right, "depth": share of characters whose rounded depth is right
    (brackets; else None)}``."""
    got = predict(model, strings)
    right = sum(a == label(model.task, s) for a, s in zip(got["answer"], strings))
    out = {"accuracy": right / len(strings), "depth": None}
    if got["depth"] is not None:
        hits = sum(round(p) == t for s, ds in zip(strings, got["depth"]) for p, t in zip(ds, depths(s)))
        out["depth"] = hits / sum(len(s) for s in strings)
    return out


def lengths_of(cfg: HierarchyConfig) -> list[int]:
    """The evaluated lengths: every even length from 2 to ``eval_len``."""
    return list(range(2, cfg.eval_len + 1, 2))


def curves(model: Reader, cfg: HierarchyConfig) -> dict:
    """:func:`scores` at every length of :func:`lengths_of` on :func:`eval_strings` (``eval_n``, ``eval_seed``):
    ``{"accuracy": [...], "depth": [...] or None}``."""
    got = [scores(model, eval_strings(model.task, n, cfg.eval_n, cfg.eval_seed)) for n in lengths_of(cfg)]
    return {"accuracy": [g["accuracy"] for g in got],
            "depth": [g["depth"] for g in got] if model.task == "brackets" else None}


# ------------------------------------------------------------------ training
def batch(task: str, size: int, longest: int, rng: random.Random) -> list[str]:
    """``size`` training strings, each of a length drawn uniformly from 1 … ``longest`` (:func:`sample`)."""
    return [sample(task, rng.randint(1, longest), rng) for _ in range(size)]


def loss_of(model: Reader, strings: list[str], depth_weight: float) -> torch.Tensor:
    """Cross-entropy of the answer at each string's last character, plus ``depth_weight`` times the mean squared
    error of the depth over every character (brackets)."""
    ids, lengths = encode(strings, model.task)
    logits, d = model(ids)
    target = torch.tensor([label(model.task, s) for s in strings], dtype=torch.long)
    loss = F.cross_entropy(logits[torch.arange(len(strings)), lengths], target)
    if d is not None and depth_weight:
        real = torch.arange(ids.shape[1])[None, 1:] <= lengths[:, None]  # [B, T - 1]: the characters
        truth = torch.zeros(real.shape)
        for row, s in enumerate(strings):
            truth[row, :len(s)] = torch.tensor(depths(s), dtype=torch.float32)
        loss = loss + depth_weight * ((d[:, 1:] - truth) ** 2)[real].mean()
    return loss


def train(cfg: HierarchyConfig, task: str, kind: str) -> tuple[Reader, list[float], float, float]:
    """Train the model of ``kind`` on ``task`` with the small experiments' loop
    (:func:`core.training.experiment.fit`: AdamW, warmup then cosine, clipped gradients), on batches of
    :func:`batch` from ``random.Random(cfg.seed)`` (the same strings for both kinds). Returns the model (eval mode),
    the loss of every step, the seconds and the CPU seconds it took."""
    model = build(cfg, task, kind)
    rng = random.Random(cfg.seed)
    return experiment.fit(model, lambda step: loss_of(model, batch(task, cfg.batch_size, cfg.train_len, rng),
                                                      cfg.depth_weight), cfg)


def rounded(model: Reader, half: bool) -> dict:
    """The model's weights as shipped: float16 when ``half``, else float32 (copies; the Transformer's unused
    language-model head, tied to its token embedding, is left out)."""
    dtype = torch.float16 if half else torch.float32
    return {k: v.detach().to(dtype).clone() for k, v in model.state_dict().items() if k != TIED}


def reload(cfg: HierarchyConfig, task: str, kind: str, weights: dict) -> Reader:
    """A model of ``kind`` for ``task`` with ``weights`` in float32, eval mode."""
    model = build(cfg, task, kind)
    missing, unexpected = model.load_state_dict({k: v.float() for k, v in weights.items()}, strict=False)
    if unexpected or set(missing) - {TIED}:
        raise ValueError(f"the weights do not fit a {kind} for {task}: missing {sorted(set(missing) - {TIED})}, "
                         f"unexpected {sorted(unexpected)}")
    return model.eval()


def check_answers(models: dict, longest: int = LONGEST) -> dict:
    """Every model on the strings of :data:`CHECK` of at most ``longest`` characters: ``{task: {kind: {"strings",
    "p_true": [...], "accuracy"}}}`` (``models``: ``{task: {kind: model}}``)."""
    out = {}
    for task, kinds in models.items():
        out[task] = {}
        strings = [s for s in CHECK[task] if len(s) <= longest]
        for kind, model in kinds.items():
            got = predict(model, strings)
            right = sum(a == label(task, s) for a, s in zip(got["answer"], strings))
            out[task][kind] = {"strings": strings, "p_true": [round(p, 6) for p in got["p_true"]],
                               "accuracy": right / max(1, len(strings))}
    return out


def run(cfg: HierarchyConfig | None = None, out: str | None = None, tasks=TASKS, kinds=KINDS, log=None) -> dict:
    """Train every model of ``tasks`` × ``kinds`` one after the other (:func:`train`), score the shipped (rounded)
    weights by length (:func:`curves`), and with ``out`` write ``TASK-KIND.safetensors`` and ``results.json``;
    ``log(line)`` hears the progress (default: printed). Returns the results."""
    from ..io import cli, jsonio
    cfg = cfg or HierarchyConfig()
    cfg.validate()
    log = log or (lambda line: print(line, flush=True))
    before = torch.get_num_threads()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    models, per_model, curve = {}, {}, {}
    try:
        for task in tasks:
            models[task], curve[task] = {}, {}
            for kind in kinds:
                model, losses, seconds, cpu = train(cfg, task, kind)
                weights = rounded(model, cfg.half)
                full = curves(reload(cfg, task, kind, rounded(model, False)), cfg)
                shipped = models[task][kind] = reload(cfg, task, kind, weights)
                curve[task][kind] = curves(shipped, cfg)
                shift = max(abs(a - b) for key in ("accuracy", "depth") if full[key] is not None
                            for a, b in zip(full[key], curve[task][kind][key]))
                if out:
                    Path(out).mkdir(parents=True, exist_ok=True)
                    save_file(weights, str(Path(out) / weights_file(task, kind)))
                per_model[f"{task}-{kind}"] = {"seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1),
                                               "params": model.num_parameters(), "final_loss": losses[-1],
                                               "losses": losses[::25], "rounding_shift": shift}
                log(f"{task} {kind}: {seconds:.0f} s ({cpu:.0f} s of CPU), {model.num_parameters():,} parameters, "
                    f"last loss {losses[-1]:.3f}, rounding moved the curves by {shift:.4f}")
        check = check_answers(models, cfg.eval_len)
    finally:
        torch.set_num_threads(before)
    folder = out or "FOLDER"
    result = {"config": dataclasses.asdict(cfg), "tasks": list(tasks), "kinds": list(kinds),
              "lengths": lengths_of(cfg), "curves": curve, "models": per_model, "check": check,
              "threads": cfg.threads or before,
              "command": f"python -m core.variants.hierarchy --out {folder} {cli.as_flags(cfg)}",
              "date": datetime.now().isoformat(timespec="seconds")}
    if out:
        (Path(out) / RESULTS).write_text(jsonio.dumps(result), encoding="utf-8")
    return result


def load(folder) -> tuple[dict, dict]:
    """The models a run saved in ``folder`` (``{task: {kind: model}}``, eval mode, float32) and its results. Raises
    FileNotFoundError when a file is missing."""
    from ..io import jsonio
    folder = Path(folder)
    results = jsonio.loads((folder / RESULTS).read_text(encoding="utf-8"))
    cfg = config_of(results["config"])
    models = {}
    for task in results["tasks"]:
        models[task] = {}
        for kind in results["kinds"]:
            path = folder / weights_file(task, kind)
            if not path.exists():
                raise FileNotFoundError(f"no weights at {path}")
            models[task][kind] = reload(cfg, task, kind, load_file(str(path)))
    return models, results


def main(argv=None) -> int:
    """The ``python -m core.variants.hierarchy --out FOLDER`` command line; returns the exit code."""
    from ..io import cli, jsonio
    p = cli.Parser(prog="python -m core.variants.hierarchy",
                   description="Train a causal Transformer and an LSTM on PARITY and balanced brackets")
    p.add_argument("--out", required=True, help="folder for TASK-KIND.safetensors and results.json")
    cli.add_fields(p, HierarchyConfig)
    args = vars(p.parse_args(argv))
    out = args.pop("out")
    try:
        cfg = HierarchyConfig(**args)
        cfg.validate()
    except ValueError as e:
        return cli.refuse(e)
    result = run(cfg, out)
    print(jsonio.dumps({k: {"seconds": m["seconds"], "cpu_seconds": m["cpu_seconds"], "params": m["params"]}
                        for k, m in result["models"].items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
