"""Longer than training: five small causal language models that differ only in how they encode position, trained
on windows of 64 tokens and scored on 256.

ALiBi (Press et al. 2022) was proposed so that a model could be trained on short windows and read longer ones; the
sinusoidal table was hoped to let a model "extrapolate to sequence lengths longer than the ones encountered during
training" (Vaswani et al. 2017, sec. 3.5). Here the five schemes of :data:`core.config.POSITIONAL` (sinusoidal,
learned, RoPE, ALiBi, none) are trained the same way and measured position by position.

* The data: real English prose (the lm's corpus, :mod:`core.data.english`) through a byte-level BPE of 512 trained
  on its training split (:class:`core.training.tasks.LMTask`), in random windows of ``seq_len`` = 64 tokens.
* The models: the lab's decoder-only :class:`core.model.Transformer`, pre-LN, GELU, no dropout. Every weight they
  share starts from the same numbers (:func:`build`), every step reads the same batch, only ``pos_encoding``
  differs. The learned model has ``seq_len`` position vectors and no more: it cannot read position 64
  (:func:`position_losses` refuses with :class:`TableLimitError`). The four others compute their positions, so
  :func:`load` builds them for ``eval_len`` positions (256); their weights do not depend on that length.
* The measurement: :func:`position_losses` is the cross-entropy of the next token at every position of one text;
  :func:`curves` averages it over many windows of the test split (:func:`held_out_windows`), :func:`summary` splits it
  into positions inside and beyond the training length.

CLI: ``python -m core.variants.extrapolation --out assets/extrapolation`` trains the five models one after the
other and writes ``KIND.safetensors`` for each, ``tokenizer.json`` and ``results.json`` (config, command, time per
model, the held-out curves, a few held-out passages with their losses); :func:`load` reads them back.
"""
from __future__ import annotations

import dataclasses
import math
import time
from datetime import datetime
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from ..config import POSITIONAL, ModelConfig
from ..io.tokenizer import BOS, Tokenizer
from ..model import Transformer
from ..training import experiment

KINDS = POSITIONAL  # sinusoidal, learned, rope, alibi, none
RESULTS = "results.json"
TOKENIZER = "tokenizer.json"


def weights_file(kind: str) -> str:
    """The file name of one model's weights: ``KIND.safetensors``."""
    return f"{kind}.safetensors"


class TableLimitError(ValueError):
    """A text longer than a learned position table: the model has no vector for the positions past it."""


@dataclasses.dataclass
class ExtrapolationConfig:
    """The five models and their training: lengths, model sizes, optimisation, evaluation, storage."""
    seq_len: int = 64  # training length (and the learned table's size)
    eval_len: int = 256  # positions read when scoring
    vocab_size: int = 512
    d_model: int = 64
    heads: int = 4
    layers: int = 4
    d_ff: int = 256
    steps: int = 1600
    batch_size: int = 32
    lr: float = 3e-3
    warmup: int = 100
    passages: int = 6  # held-out passages shipped for the page
    half: bool = True  # store the weights in float16
    seed: int = 0
    threads: int | None = 1  # torch's threads while training and scoring (None: leave as is)

    def validate(self) -> None:
        """Refuse sizes the models cannot have (ValueError, one line)."""
        if not 2 <= self.seq_len <= self.eval_len <= 4096:
            raise ValueError(f"need 2 <= seq_len <= eval_len <= 4096, got {self.seq_len} and {self.eval_len}")
        if min(self.steps, self.batch_size, self.passages, self.layers) < 1 or self.lr <= 0:
            raise ValueError("steps, batch_size, passages, layers and lr must be positive")
        model_config(self, "rope")


def config_of(saved: dict) -> ExtrapolationConfig:
    """The config of a results file's ``config`` (fields it does not know are left out)."""
    return ExtrapolationConfig(**{k: v for k, v in saved.items() if k in ExtrapolationConfig.__dataclass_fields__})


def table_limit(kind: str, cfg: ExtrapolationConfig) -> int | None:
    """The positions a model of ``kind`` can read: ``seq_len`` for the learned table, None (no limit) for the
    schemes that compute their positions."""
    return cfg.seq_len if kind == "learned" else None


def model_config(cfg: ExtrapolationConfig, kind: str, max_len: int | None = None) -> ModelConfig:
    """One model's :class:`ModelConfig`: all fields shared, ``pos_encoding=kind``. ``max_len``: the positions it is
    built for (default ``seq_len``); a learned model always has ``seq_len`` (its table is a weight)."""
    length = cfg.seq_len if kind == "learned" or max_len is None else max_len
    return ModelConfig(kind="decoder-only", vocab_size=cfg.vocab_size, d_model=cfg.d_model, n_heads=cfg.heads,
                       n_encoder_layers=1, n_decoder_layers=cfg.layers, d_ff=cfg.d_ff, dropout=0.0, max_len=length,
                       pos_encoding=kind, norm="pre", activation="gelu")


def build(cfg: ExtrapolationConfig, kind: str) -> Transformer:
    """A fresh model of ``kind``. The weights every kind has are drawn once from ``cfg.seed`` (a model without
    positions) and copied in, so the five start from the same numbers; the learned table is drawn from
    ``cfg.seed + 1``."""
    torch.manual_seed(cfg.seed)
    shared = Transformer(model_config(cfg, "none")).state_dict()
    torch.manual_seed(cfg.seed + 1)
    model = Transformer(model_config(cfg, kind))
    missing, unexpected = model.load_state_dict(shared, strict=False)
    assert not unexpected and set(missing) <= {"embed.positions.weight"}, (missing, unexpected)
    return model


# ------------------------------------------------------------------ the measurement
def position_losses(model: Transformer, ids) -> torch.Tensor:
    """The next-token loss at every position: ``ids`` ``[T]`` (or ``[N, T]``) token ids, the model reads
    ``ids[..., :-1]`` and position p's loss is ``−log p(ids[p + 1] | ids[0..p])``, the per-token
    ``F.cross_entropy`` (``[T − 1]`` or ``[N, T − 1]``, float32). Raises :class:`TableLimitError` when the model has
    fewer positions than the text (a learned table), ValueError for fewer than two tokens."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    one = ids.dim() == 1
    ids = ids[None] if one else ids
    if ids.dim() != 2 or ids.shape[1] < 2:
        raise ValueError("need at least two tokens: one to read and one to predict")
    if ids.shape[1] - 1 > model.max_positions:
        raise TableLimitError(
            f"this {model.cfg.pos_encoding} model has {model.max_positions} position vectors (positions 0–"
            f"{model.max_positions - 1}) and no vector for position {model.max_positions} or later: it cannot read "
            f"a text of {ids.shape[1] - 1} positions, so no loss is defined past position {model.max_positions - 1}")
    model.eval()
    with torch.no_grad():
        logits = model(ids[:, :-1]).logits.float()
    loss = F.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none")
    return loss[0] if one else loss


def losses_up_to_limit(model: Transformer, ids) -> list[float | None]:
    """:func:`position_losses` of one text ``[T]`` as a list, read up to the model's table and None past it (the
    learned model's positions beyond its table are undefined, not zero)."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    n = min(len(ids), model.max_positions + 1)
    return position_losses(model, ids[:n]).tolist() + [None] * (len(ids) - n)


def score(models: dict, ids) -> dict:
    """Every model on one text ``[T]``: ``{"losses": {kind: :func:`losses_up_to_limit`}, "limits": {kind: the
    :class:`TableLimitError` message}}`` (``limits`` names only the models the text is too long for)."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    losses, limits = {}, {}
    for kind, model in models.items():
        try:
            losses[kind] = position_losses(model, ids).tolist()
        except TableLimitError as e:
            limits[kind] = str(e)
            losses[kind] = losses_up_to_limit(model, ids)
    return {"losses": losses, "limits": limits}


def curves(models: dict, windows: torch.Tensor, batch: int = 64) -> dict:
    """``{kind: [mean loss at position p over the windows]}`` for ``windows`` ``[N, T]``: T − 1 positions, None
    where a model has no position vector."""
    out = {}
    for kind, model in models.items():
        n = min(windows.shape[1], model.max_positions + 1)
        total = torch.zeros(n - 1, dtype=torch.float64)
        for chunk in windows[:, :n].split(batch):
            total += position_losses(model, chunk).double().sum(0)
        out[kind] = (total / len(windows)).tolist() + [None] * (windows.shape[1] - n)
    return out


def mean_of(values, lo: int, hi: int) -> float | None:
    """The mean of ``values[lo:hi]``; None when any of them is None (undefined) or the range is empty."""
    part = list(values[lo:hi])
    if not part or any(v is None for v in part):
        return None
    return sum(part) / len(part)


def summary(curve: dict, seq_len: int) -> list[dict]:
    """One row per model: ``{"model", "inside", "beyond", "ratio"}``: the mean loss over positions ``0 … seq_len −
    1`` (those it was trained on) and over ``seq_len …`` the end (None where undefined), and beyond / inside."""
    rows = []
    for kind, values in curve.items():
        inside, beyond = mean_of(values, 0, seq_len), mean_of(values, seq_len, len(values))
        ratio = beyond / inside if inside and beyond is not None else None
        rows.append({"model": kind, "inside": inside, "beyond": beyond, "ratio": ratio})
    return rows


def text_ids(tokenizer: Tokenizer, text: str, length: int, repeat: bool = False) -> dict:
    """A user's text as the models read it: ``[BOS]`` then its tokens, at most ``length`` + 1 ids (``length``
    positions and the last target). ``repeat``: the text written again and again (a space between copies) until
    it fills them. Returns ``{"ids", "tokens" (the text's token count before cutting or repeating), "cut"}``."""
    own = tokenizer.encode(text)
    ids = [BOS] + own
    if repeat and own:
        copies = math.ceil((length + 1) / (len(own) + 1)) + 1
        ids = [BOS] + tokenizer.encode(" ".join([text] * copies))
    return {"ids": ids[:length + 1], "tokens": len(own), "cut": len(ids) > length + 1}


def running_mean(values, width: int) -> list[float | None]:
    """The mean of each value and the ``width − 1`` before it (fewer at the start); None where any is None."""
    out = []
    for i in range(len(values)):
        part = values[max(0, i - width + 1):i + 1]
        out.append(None if any(v is None for v in part) else sum(part) / len(part))
    return out


# ------------------------------------------------------------------ training
def train(cfg: ExtrapolationConfig, kind: str, task) -> tuple[Transformer, list[float], float, float]:
    """Train the model of ``kind`` on ``task`` (an :class:`~core.training.tasks.LMTask` with ``seq_len``) with the
    small experiments' loop (:func:`core.training.experiment.fit`: AdamW, warmup then cosine, clipped gradients),
    step s reading ``task.batch(s, batch_size, seed)`` (the same windows for every kind). Returns the model (eval
    mode), the loss of every step, the seconds and the CPU seconds it took."""
    model = build(cfg, kind)

    def loss_at(step: int) -> torch.Tensor:
        b = task.batch(step, cfg.batch_size, cfg.seed)
        return F.cross_entropy(model(b.tgt_in).logits.flatten(0, 1), b.tgt_out.flatten())

    return experiment.fit(model, loss_at, cfg)


def held_out_windows(stream: torch.Tensor, length: int) -> torch.Tensor:
    """Every non-overlapping window of ``length`` + 1 tokens of ``stream``, ``[N, length + 1]``."""
    n = (len(stream) - 1) // (length + 1)
    return stream[:n * (length + 1)].reshape(n, length + 1)


def rounded(model: Transformer, half: bool) -> dict:
    """The model's weights as shipped: float16 when ``half``, else float32 (contiguous copies)."""
    dtype = torch.float16 if half else torch.float32
    return {k: v.detach().to(dtype).contiguous() for k, v in model.state_dict().items()}


def reload(cfg: ExtrapolationConfig, kind: str, weights: dict) -> Transformer:
    """A model of ``kind`` built for ``eval_len`` positions (``seq_len`` if learned) with ``weights`` in float32."""
    model = Transformer(model_config(cfg, kind, cfg.eval_len))
    model.load_state_dict({k: v.float() for k, v in weights.items()})
    return model.eval()


def run(cfg: ExtrapolationConfig | None = None, out: str | None = None, kinds=KINDS, log=None) -> dict:
    """Train the models of ``kinds`` one after the other (:func:`train`), score them on the test split
    (:func:`curves` on :func:`held_out_windows` of ``eval_len``) with their shipped (rounded) weights, and with
    ``out`` write ``KIND.safetensors``, ``tokenizer.json`` and ``results.json``; ``log(line)`` hears the progress
    (default: printed). Returns the results."""
    from ..io import cli, jsonio
    from ..training.tasks import LMTask
    cfg = cfg or ExtrapolationConfig()
    cfg.validate()
    log = log or (lambda line: print(line, flush=True))
    before = torch.get_num_threads()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    try:
        t0 = time.perf_counter()
        task = LMTask(seq_len=cfg.seq_len, vocab_size=cfg.vocab_size, name="lm")
        windows = held_out_windows(task.test_stream(), cfg.eval_len)
        log(f"data: {len(task.train_stream):,} training tokens, {len(windows)} test windows "
            f"({time.perf_counter() - t0:.0f} s)")
        picks = torch.linspace(0, len(windows) - 1, cfg.passages).round().long().tolist()
        models, per_model = {}, {}
        for kind in kinds:
            model, losses, seconds, cpu = train(cfg, kind, task)
            weights = rounded(model, cfg.half)
            full = curves({kind: reload(cfg, kind, rounded(model, False))}, windows)[kind]
            models[kind] = reload(cfg, kind, weights)
            if out:
                Path(out).mkdir(parents=True, exist_ok=True)
                save_file(weights, str(Path(out) / weights_file(kind)))
            per_model[kind] = {"seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1),
                               "tokens_per_s": round(cfg.steps * cfg.batch_size * cfg.seq_len / seconds),
                               "params": model.num_parameters(), "final_loss": losses[-1], "losses": losses[::20],
                               "float32_curve": full}
            log(f"{kind}: {seconds:.0f} s ({cpu:.0f} s of CPU), last training loss {losses[-1]:.3f}")
        curve = curves(models, windows)
        for kind in kinds:  # how far rounding the weights moved the figures
            f32 = per_model[kind].pop("float32_curve")
            per_model[kind]["rounding_shift"] = max(abs(a - b) for a, b in zip(curve[kind], f32) if a is not None)
        passages = [{"window": i, "ids": windows[i].tolist(),
                     "losses": {k: losses_up_to_limit(m, windows[i]) for k, m in models.items()}} for i in picks]
    finally:
        torch.set_num_threads(before)
    folder = out or "FOLDER"
    result = {"config": dataclasses.asdict(cfg), "kinds": list(kinds), "data": task.description,
              "test_windows": len(windows), "models": per_model, "curves": curve,
              "summary": summary(curve, cfg.seq_len), "passages": passages,
              "command": f"python -m core.variants.extrapolation --out {folder} {cli.as_flags(cfg)}"
                         + ("" if tuple(kinds) == KINDS else f" --kinds {','.join(kinds)}"),
              "date": datetime.now().isoformat(timespec="seconds")}
    if out:
        task.tokenizer.save(Path(out) / TOKENIZER)
        (Path(out) / RESULTS).write_text(jsonio.dumps(result), encoding="utf-8")
    return result


def load(folder) -> tuple[dict, Tokenizer, dict]:
    """The models a run saved in ``folder`` (``{kind: model}``, eval mode, float32, built for ``eval_len``
    positions except the learned one), its tokenizer and its results. Raises FileNotFoundError when a file is
    missing."""
    from ..io import jsonio
    folder = Path(folder)
    results = jsonio.loads((folder / RESULTS).read_text(encoding="utf-8"))
    cfg = config_of(results["config"])
    tokenizer = Tokenizer.load(folder / TOKENIZER)
    models = {}
    for kind in results["kinds"]:
        path = folder / weights_file(kind)
        if not path.exists():
            raise FileNotFoundError(f"no weights at {path}")
        models[kind] = reload(cfg, kind, load_file(str(path)))
    return models, tokenizer, results


def main(argv=None) -> int:
    """The ``python -m core.variants.extrapolation --out FOLDER`` command line; returns the exit code."""
    from ..io import cli, jsonio
    p = cli.Parser(prog="python -m core.variants.extrapolation",
                   description="Train five small LMs that differ only in positional encoding, score them on 256")
    p.add_argument("--out", required=True, help="folder for KIND.safetensors, tokenizer.json and results.json")
    p.add_argument("--kinds", default=",".join(KINDS), help="comma-separated positional encodings to train")
    cli.add_fields(p, ExtrapolationConfig)
    args = vars(p.parse_args(argv))
    out, kinds = args.pop("out"), tuple(k.strip() for k in args.pop("kinds").split(",") if k.strip())
    try:
        cfg = ExtrapolationConfig(**args)
        cfg.validate()
        bad = [k for k in kinds if k not in KINDS]
        if bad or not kinds:
            raise ValueError(f"unknown positional encoding(s) {', '.join(bad) or '(none given)'}; choose from "
                             f"{', '.join(KINDS)}")
    except ValueError as e:
        return cli.refuse(e)
    result = run(cfg, out, kinds)
    print(jsonio.dumps({"summary": result["summary"],
                        "seconds": {k: [m["seconds"], m["cpu_seconds"]] for k, m in result["models"].items()}}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
