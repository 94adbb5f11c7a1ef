"""Transformer-XL segment recurrence (Dai et al. 2019), small and explicit.

The token stream is cut into segments of length ``L``. Layer ``n`` of segment ``τ+1`` attends over
``[memory; current]`` where the memory is the *input* of layer ``n`` (= output of layer ``n-1``) over
the last ``mem_len`` positions of segment ``τ``, **detached** (``SG(·)`` in the paper, eq. in sec. 3.2:
no gradient flows into the previous segment). Queries come from the current segment only; keys and
values from the concatenation; the causal mask is aligned so that query ``i`` (absolute position
``M + i`` in the concatenation) sees keys ``j <= M + i``.

Relative positions, kept simple: instead of the paper's sinusoidal ``R_{i-j}`` with the ``u``/``v``
terms, every head adds a **learned scalar bias ``b_h[i - j]``** to its score, for distance
``i - j = 0 … max_distance`` (farther keys share the last entry). The table starts as ALiBi
(``b_h[d] = -s_h·d``, Press et al. 2022), so a fresh model with no memory is exactly a decoder-only
:class:`core.model.Transformer` with ``pos_encoding="alibi"``; training then reshapes the biases. No
absolute positions are used anywhere, which is what lets cached states be reused at new offsets.

The layer pieces are the lab's own: :class:`core.attention.MultiHeadAttention` (its cross-attention
path, with ``memory = [mem; x]``), :class:`core.model.FeedForward`, :class:`core.model.Residual`.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from ..attention import MultiHeadAttention
from ..config import ModelConfig
from ..io import jsonio
from ..masks import alibi_slopes
from ..model import Embeddings, FeedForward, Residual
from ..trace import Trace


@dataclass
class XLConfig:
    """Settings of a Transformer-XL model: sizes, segment and memory lengths, and the farthest distance with
    a bias of its own."""
    vocab_size: int = 400
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 256
    seg_len: int = 16
    mem_len: int = 16
    max_distance: int = 64  # distances beyond this share one learned bias
    dropout: float = 0.0
    norm: str = "pre"

    def __post_init__(self):
        if self.seg_len < 1 or self.mem_len < 0 or self.max_distance < 1:
            raise ValueError("need seg_len >= 1, mem_len >= 0, max_distance >= 1")
        self.model_config()  # validates the rest

    def model_config(self) -> ModelConfig:
        """The equivalent plain decoder-only config (ALiBi positions), used for the shared pieces."""
        return ModelConfig(kind="decoder-only", vocab_size=self.vocab_size, d_model=self.d_model,
                           n_heads=self.n_heads, n_decoder_layers=self.n_layers, d_ff=self.d_ff,
                           dropout=self.dropout, max_len=max(self.seg_len, 128), pos_encoding="alibi",
                           norm=self.norm)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class XLOutput:
    """One segment's forward pass: ``logits [B, T, V]``, the new memory of each layer and, when asked, each
    layer's attention weights."""
    logits: torch.Tensor  # [B, T, V]
    memory: list  # new memory per layer, each [B, <=mem_len, d] (detached)
    weights: list = field(default_factory=list)  # per layer [B, H, T, M+T] when asked


def relative_distance(t: int, m: int, device=None) -> torch.Tensor:
    """``[t, m+t]`` distance ``i - j`` between query i (at position m+i of the concatenation) and key j."""
    i = torch.arange(t, device=device)[:, None] + m
    j = torch.arange(m + t, device=device)[None, :]
    return i - j


class XLLayer(nn.Module):
    """Same parameter names as :class:`core.model.EncoderLayer` (so weights transfer both ways)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, bias=cfg.bias, dropout=cfg.dropout)
        self.attn_res = Residual(cfg)
        self.ffn = FeedForward(cfg)
        self.ffn_res = Residual(cfg)

    def forward(self, x, mem, bias, trace=None, name=""):
        pre = self.attn_res.pre

        def attend(h):
            m = mem if mem is None or not pre else self.attn_res.norm(mem)
            kv = h if m is None else torch.cat((m, h), 1)
            return self.self_attn(h, kv, bias=bias, is_causal=True, trace=trace, name=name)

        x, _ = self.attn_res(x, attend)
        x, _ = self.ffn_res(x, self.ffn)
        return x


class XLModel(nn.Module):
    """A decoder-only Transformer-XL: reads a segment ``ids [B, T]`` with the previous segment's memory at
    every layer, and a learned relative bias per head and distance."""
    def __init__(self, cfg: XLConfig):
        super().__init__()
        self.cfg = cfg
        mc = cfg.model_config()
        self.embed = Embeddings(mc)
        self.layers = nn.ModuleList(XLLayer(mc) for _ in range(cfg.n_layers))
        self.norm = nn.LayerNorm(cfg.d_model, eps=mc.layer_norm_eps, bias=mc.bias) if mc.use_final_norm else None
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.embed.tokens.weight
        slopes = alibi_slopes(cfg.n_heads)
        self.rel_bias = nn.Parameter(-slopes[:, None] * torch.arange(cfg.max_distance + 1).float()[None])

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    @property
    def device(self) -> torch.device:
        """Where the weights live, as :attr:`core.model.Transformer.device`."""
        return self.embed.tokens.weight.device

    def bias(self, t: int, m: int) -> torch.Tensor:
        """``[1, H, t, m+t]`` learned relative bias ``b_h[clip(i - j)]`` (masked entries are set by the causal mask)."""
        d = relative_distance(t, m, self.rel_bias.device).clamp(0, self.cfg.max_distance)
        return self.rel_bias[:, d][None]

    def forward(self, ids, memory=None, *, return_weights=False) -> XLOutput:
        """``ids [B, T]``; ``memory``: list (one per layer) of ``[B, M, d]`` or None (no memory)."""
        if memory is not None and len(memory) != len(self.layers):
            raise ValueError(f"memory must hold one tensor per layer ({len(self.layers)}), got {len(memory)}")
        b, t = ids.shape
        m = 0 if memory is None or memory[0] is None else memory[0].shape[1]
        bias = self.bias(t, m)
        trace = Trace() if return_weights else None
        x = self.embed(ids)
        new_mem, weights = [], []
        for i, layer in enumerate(self.layers):
            mem = None if m == 0 else memory[i]
            new_mem.append(self._next_memory(mem, x))
            x = layer(x, mem, bias, trace, f"layers.{i}")
            if trace is not None:
                weights.append(trace[f"layers.{i}.weights"])
        if self.norm is not None:
            x = self.norm(x)
        return XLOutput(self.lm_head(x), new_mem, weights)

    def _next_memory(self, mem, x):
        """The last ``mem_len`` positions of ``[mem; x]``, with the gradient stopped."""
        if self.cfg.mem_len == 0:
            return None
        full = x if mem is None else torch.cat((mem, x), 1)
        return full[:, -self.cfg.mem_len:].detach()


# ----------------------------------------------------------------------------- data
def stream_segments(stream: torch.Tensor, batch_size: int, seg_len: int):
    """Transformer-XL batching: the stream is cut into ``batch_size`` contiguous rows; segment ``s`` is
    columns ``s·L … s·L+L`` of every row, so row r's segment s+1 directly continues its segment s.
    Yields ``(x [B, L], y [B, L])`` with y the next tokens."""
    n = (len(stream) - 1) // batch_size
    rows_x = stream[:n * batch_size].view(batch_size, n)
    rows_y = stream[1:n * batch_size + 1].view(batch_size, n)
    for s in range(0, n - seg_len + 1, seg_len):
        yield rows_x[:, s:s + seg_len], rows_y[:, s:s + seg_len]


def lm_data(seg_len: int = 16):
    """The lab's generated English LM corpus: ``(task, train_stream, valid_stream)``."""
    from ..training.tasks import make_task
    task = make_task("lm-tiny", seq_len=seg_len)
    return task, task.train_stream, task.valid_stream


def train_xl(cfg: XLConfig, stream: torch.Tensor, *, steps: int = 300, batch_size: int = 16, lr: float = 3e-3,
             warmup: int = 30, seed: int = 0, use_memory: bool = True, clip: float = 1.0, on_step=None,
             max_seconds: float | None = None):
    """Train on consecutive segments, carrying the (detached) memory from one step to the next.

    Returns ``(model, history)`` with history ``[[step, loss], …]``. ``use_memory=False`` trains the
    same model with the memory reset every segment (the vanilla, fragmented baseline)."""
    torch.manual_seed(seed)
    model = XLModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.01)
    history, step, t0 = [], 0, time.perf_counter()
    model.train()
    while step < steps:
        memory = None
        for x, y in stream_segments(stream, batch_size, cfg.seg_len):
            for g in opt.param_groups:
                g["lr"] = lr * min(1.0, (step + 1) / warmup) if warmup else lr
            out = model(x, memory if use_memory else None)
            loss = F.cross_entropy(out.logits.flatten(0, 1), y.flatten())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if clip:
                nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()
            memory = out.memory
            step += 1
            value = float(loss.detach())
            history.append([step, round(value, 5)])
            if on_step is not None:
                on_step(step, value)
            if step >= steps or (max_seconds is not None and time.perf_counter() - t0 > max_seconds):
                steps = step
                break
    model.eval()
    return model, history


@torch.no_grad()
def position_losses(model: XLModel, stream: torch.Tensor, *, batch_size: int = 8, max_segments: int | None = None):
    """Mean loss at every position of a segment, over consecutive segments of ``stream``:
    ``{"with_memory": [L floats], "without_memory": [L floats], "segments": n}``.

    Without memory each segment is read in isolation (context fragmentation: the first tokens of a
    segment have almost nothing to condition on); with memory the previous segment is visible."""
    model.eval()
    seg = model.cfg.seg_len
    tot = {"with_memory": torch.zeros(seg), "without_memory": torch.zeros(seg)}
    memory, n = None, 0
    for s, (x, y) in enumerate(stream_segments(stream, batch_size, seg)):
        if max_segments is not None and s >= max_segments:
            break
        out = model(x, memory)
        if s > 0:  # the first segment has no memory either way
            tot["with_memory"] += F.cross_entropy(out.logits.transpose(1, 2), y, reduction="none").mean(0)
            cold = model(x).logits
            tot["without_memory"] += F.cross_entropy(cold.transpose(1, 2), y, reduction="none").mean(0)
            n += 1
        memory = out.memory
    if n == 0:
        raise ValueError("the stream is too short for two consecutive segments")
    return {k: (v / n).tolist() for k, v in tot.items()} | {"segments": n}


def summarize(losses: dict, first: int = 4) -> dict:
    """Headline numbers: mean loss over the first ``first`` positions and over the whole segment."""
    out = {}
    for k in ("with_memory", "without_memory"):
        v = losses[k]
        out[f"{k}_first{first}"] = round(sum(v[:first]) / first, 4)
        out[f"{k}_all"] = round(sum(v) / len(v), 4)
        out[f"{k}_ppl_all"] = round(math.exp(out[f"{k}_all"]), 3)
    return out


# ----------------------------------------------------------------------------- attention over two segments
@torch.no_grad()
def two_segment_attention(model: XLModel, ids: list[int], split: int | None = None):
    """Split ``ids`` into a memory segment ``ids[:split]`` and a current one ``ids[split:]``; run the
    first to fill the memory, then the second with it. Returns ``(weights, n_mem)``: per layer
    ``[H, T_cur, n_mem + T_cur]`` attention of the current tokens over memory + current."""
    if len(ids) < 2:
        raise ValueError("need at least two tokens to make two segments")
    split = len(ids) // 2 if split is None else split
    if not 1 <= split < len(ids):
        raise ValueError(f"split must be in 1..{len(ids) - 1}")
    model.eval()
    first = torch.tensor([ids[:split]])
    second = torch.tensor([ids[split:]])
    mem = model(first).memory
    if model.cfg.mem_len == 0:
        mem = None
    out = model(second, mem, return_weights=True)
    n_mem = 0 if mem is None else mem[0].shape[1]
    return [w[0] for w in out.weights], n_mem


def memory_share(weights: torch.Tensor, n_mem: int) -> list[float]:
    """Per query, the attention mass (``weights [T_cur, n_mem + T_cur]`` of one head) on the memory keys."""
    return weights[:, :n_mem].sum(-1).tolist() if n_mem else [0.0] * weights.shape[0]


@torch.no_grad()
def context_reach(model: XLModel, ids: list[int], replacement: int) -> dict:
    """How far back the memory lets a segment see (Dai et al. 2019, sec. 3.2: the longest dependency grows as
    layers × memory length). ``ids`` is read in consecutive segments of ``seg_len`` tokens, each with the memory the
    previous one left; then read again once per earlier token, that token replaced by ``replacement``. Returns, per
    earlier position, the largest |change| of the last segment's log-probabilities (exactly 0 where the change
    cannot reach), the first position of the last segment, and the bound n_layers × mem_len before it: each layer's
    memory holds the previous segment's input to that layer, which itself saw one segment further back."""
    seg = model.cfg.seg_len
    if len(ids) < 2 * seg:
        raise ValueError(f"need at least two segments of {seg} tokens")
    n_seg = len(ids) // seg
    ids = ids[:n_seg * seg]
    model.eval()

    def last_segment(tokens: list[int]) -> torch.Tensor:
        memory = None
        for s in range(n_seg):
            out = model(torch.tensor([tokens[s * seg:(s + 1) * seg]]), memory)
            memory = out.memory if model.cfg.mem_len else None
        return torch.log_softmax(out.logits[0].double(), -1)

    base = last_segment(ids)
    last = (n_seg - 1) * seg
    effect = []
    for p in range(last):
        changed = list(ids)
        changed[p] = replacement if ids[p] != replacement else (replacement + 1) % model.cfg.vocab_size
        effect.append(float((last_segment(changed) - base).abs().max()))
    return {"effect": effect, "last_start": last, "bound": model.cfg.n_layers * model.cfg.mem_len, "segments": n_seg}


@torch.no_grad()
def evaluation_cost(model: XLModel, ids: list[int], repeats: int = 3) -> dict:
    """Reading ``ids`` token by token with as much context as the XL model holds (seg_len + mem_len tokens): with
    the memory, each segment once (the cached states of the previous segment reused); without it, one forward pass
    over the last seg_len + mem_len tokens for every prediction, the way a model without a cache slides its window
    (Dai et al. 2019, sec. 4: evaluation up to 1,800× faster at their lengths). Median seconds of ``repeats`` each,
    and the tokens each way pushed through the model."""
    seg, ctx = model.cfg.seg_len, model.cfg.seg_len + model.cfg.mem_len
    model.eval()

    def cached():
        memory = None
        for s in range(0, len(ids), seg):
            memory = model(torch.tensor([ids[s:s + seg]]), memory).memory

    def sliding():
        for t in range(1, len(ids) + 1):
            model(torch.tensor([ids[max(0, t - ctx):t]]))

    times = {}
    for name, fn in (("with memory", cached), ("sliding window", sliding)):
        runs = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - start)
        times[name] = sorted(runs)[len(runs) // 2]
    return {"seconds": times, "tokens": {"with memory": len(ids),
                                         "sliding window": sum(min(t, ctx) for t in range(1, len(ids) + 1))}}


# ----------------------------------------------------------------------------- files
ARCHITECTURE = "transformer-xl"  # config.json's "architecture" (core.io.checkpoint: the one folder format)


def _weights(model: XLModel) -> dict[str, torch.Tensor]:
    return {k: v for k, v in model.state_dict().items() if k != "lm_head.weight"}  # tied to embed.tokens


def save(model: XLModel, folder, *, meta: dict, tokenizer=None, card: str | None = None):
    """The lab's checkpoint folder (core.io.checkpoint: safetensors + ``config.json`` + ``tokenizer.json`` +
    ``card.md``, written atomically; no pickle) with ``"architecture": "transformer-xl"``."""
    from ..io import checkpoint
    return checkpoint.write(folder, _weights(model), model.cfg.to_dict(), tokenizer, meta, card,
                            architecture=ARCHITECTURE)


def load(folder):
    """``(model, tokenizer or None, meta)`` from :func:`save`'s folder; a folder that is not a Transformer-XL
    checkpoint, or whose files disagree with its config, raises :class:`core.io.checkpoint.CheckpointError`."""
    from pathlib import Path

    from ..io import checkpoint
    from ..io.tokenizer import Tokenizer
    folder = Path(folder)
    config = checkpoint.read_config(folder, architecture=ARCHITECTURE)
    try:
        model = XLModel(XLConfig(**config["model"]))
    except (TypeError, ValueError) as e:
        raise checkpoint.CheckpointError(f"{folder.name}: invalid Transformer-XL config: {e}") from None
    meta = checkpoint.check_meta(config.get("meta", {}), f"{folder.name}: {checkpoint.CONFIG} meta")
    expected = _weights(model)
    state = checkpoint.read_weights(folder, sum(v.numel() for v in expected.values()))
    checkpoint.check_matches(folder, state, expected)
    state["lm_head.weight"] = state["embed.tokens.weight"]
    model.load_state_dict(state)
    model.eval()
    tok = Tokenizer.load(folder / checkpoint.TOKENIZER) if (folder / checkpoint.TOKENIZER).exists() else None
    return model, tok, meta


@dataclass
class XLRun:
    """One ``python -m core.variants.xl`` run: where to save and the settings the card quotes (one flag per field,
    built by :func:`core.io.cli.add_fields`)."""
    out: str = ""
    steps: int = 300
    seg_len: int = 16
    mem_len: int = 16
    d_model: int = 64
    layers: int = 2
    batch_size: int = 16
    lr: float = 3e-3
    seed: int = 0

    def command(self) -> str:
        """The command line that reproduces this run (quoted in the card)."""
        from ..io import cli
        return "python -m core.variants.xl " + cli.as_flags(self)


def main(argv=None) -> int:
    """``python -m core.variants.xl --out assets/models/xl [--steps 300]``: train, measure, save with a card."""
    from ..io import checkpoint, cli
    p = cli.add_fields(cli.Parser(prog="python -m core.variants.xl", description="Train the small Transformer-XL LM"),
                       XLRun)
    a = XLRun(**vars(p.parse_args(argv)))
    try:
        if not a.out:
            raise ValueError("--out FOLDER is required (where the model is saved)")
        checkpoint.check_replaceable(a.out)  # before training, not after
    except (ValueError, checkpoint.CheckpointError) as e:
        return cli.refuse(e)
    task, train_stream, valid_stream = lm_data(a.seg_len)
    cfg = XLConfig(vocab_size=task.tokenizer.vocab_size, d_model=a.d_model, n_heads=4, n_layers=a.layers,
                   d_ff=4 * a.d_model, seg_len=a.seg_len, mem_len=a.mem_len)
    t0 = time.perf_counter()
    model, history = train_xl(cfg, train_stream, steps=a.steps, batch_size=a.batch_size, lr=a.lr, seed=a.seed)
    secs = time.perf_counter() - t0
    losses = position_losses(model, valid_stream)
    metrics = summarize(losses)
    command = a.command()
    meta = {"command": command, "steps": len(history), "train_seconds": round(secs, 1),
            "final_train_loss": history[-1][1], "metrics": metrics, "position_losses": losses,
            "history": history[:: max(1, len(history) // 100)], "data": task.description}
    card = (f"# Transformer-XL LM (segment recurrence)\n\nTrained with\n\n```\n{command}\n```\n\n"
            f"- data: {task.description}; consecutive segments of {a.seg_len}, memory {a.mem_len} per layer\n"
            f"- parameters: {model.num_parameters():,}\n- steps: {len(history)} ({secs:.0f} s, CPU)\n"
            f"- final training loss: {history[-1][1]:.4f}\n"
            f"- validation loss per position ({losses['segments']} segment batches), first 4 positions: "
            f"with memory {metrics['with_memory_first4']:.3f}, without {metrics['without_memory_first4']:.3f}; "
            f"whole segment: with {metrics['with_memory_all']:.3f}, without {metrics['without_memory_all']:.3f}\n"
            f"- metrics: `{jsonio.dumps(metrics)}`\n")
    save(model, a.out, meta=meta, tokenizer=task.tokenizer, card=card)
    print(jsonio.dumps(metrics))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
