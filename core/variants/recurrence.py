"""Recurrence vs attention: an LSTM seq2seq baseline (no attention) against a small Transformer.

Sutskever et al. (2014)-style encoder-decoder: the encoder LSTM reads ``x … EOS``; its final
``(h, c)`` is the *only* thing the decoder LSTM gets about the source. Everything must pass through
that one state vector. The Transformer's decoder instead reads any source position directly through
cross-attention.

The task is the lab's synthetic ``copy`` (or ``reverse``) from :mod:`core.training.tasks`, with the same
token interface (``PAD``/``BOS``/``EOS`` from :mod:`core.io.tokenizer`, batches from
:func:`core.training.tasks.seq2seq_batch`). For ``copy`` of a length-``n`` sequence, every symbol is read at
encoder step ``i`` and written at decoder step ``i``, so ``n`` recurrent steps separate where a token is
read from where it is needed — the distance is exactly the length. :func:`run` trains both models on
the same batches for the same steps from the same seed and returns accuracy per length.

CLI: ``python -m core.variants.recurrence --out assets/recurrence/results.json`` (the page reads that file).
"""
from __future__ import annotations

import dataclasses
import time

import torch
import torch.nn.functional as F
from torch import nn

from ..config import ModelConfig
from ..io.tokenizer import BOS, EOS, PAD
from ..model import Transformer
from ..training import experiment
from ..training.tasks import SyntheticTask, seq2seq_batch


class LSTMSeq2Seq(nn.Module):
    """Plain LSTM encoder-decoder: the encoder's final (h, c) initialises the decoder; no attention."""

    def __init__(self, vocab_size: int, d_emb: int = 64, hidden: int = 128, layers: int = 1, max_len: int = 128):
        super().__init__()
        self.vocab_size, self.max_len = vocab_size, max_len
        self.embed = nn.Embedding(vocab_size, d_emb, padding_idx=PAD)
        self.encoder = nn.LSTM(d_emb, hidden, layers, batch_first=True)
        self.decoder = nn.LSTM(d_emb, hidden, layers, batch_first=True)
        self.out = nn.Linear(hidden, vocab_size)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def encode(self, src: torch.Tensor):
        """Final (h, c) of the encoder, taken at each row's last non-PAD token (PAD never enters the state)."""
        lengths = src.ne(PAD).sum(1).clamp(min=1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(src), lengths, batch_first=True, enforce_sorted=False)
        _, state = self.encoder(packed)
        return state

    def decode(self, tgt: torch.Tensor, state):
        hidden, state = self.decoder(self.embed(tgt), state)
        return self.out(hidden), state

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: logits ``[B, T, vocab]`` for decoder input ``tgt`` (``BOS y …``)."""
        return self.decode(tgt, self.encode(src))[0]

    @torch.no_grad()
    def greedy(self, src: torch.Tensor, max_new: int | None = None) -> list[list[int]]:
        self.eval()
        state = self.encode(src)
        tok = torch.full((src.shape[0], 1), BOS, dtype=torch.long, device=src.device)
        outs, done = [], torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        for _ in range(max_new or self.max_len):
            logits, state = self.decode(tok, state)
            tok = logits[:, -1].argmax(-1, keepdim=True)
            outs.append(tok)
            done |= tok[:, 0].eq(EOS)
            if bool(done.all()):
                break
        rows = torch.cat(outs, 1).tolist()
        return [r[:r.index(EOS)] if EOS in r else r for r in rows]


@dataclasses.dataclass
class RecurrenceConfig:
    """Settings of the LSTM-vs-Transformer comparison: task and lengths, training, both models' sizes,
    evaluation."""
    task: str = "copy"  # "copy" (distance = length for every token) or "reverse"
    min_len: int = 2
    max_len: int = 16
    steps: int = 1500
    batch_size: int = 32
    lr: float = 2e-3
    # LSTM: ~ the Transformer's parameter budget
    lstm_emb: int = 64
    lstm_hidden: int = 112
    # Transformer (encoder-decoder, pre-LN, no dropout)
    d_model: int = 64
    heads: int = 4
    layers: int = 2
    d_ff: int = 128
    eval_per_length: int = 100
    seed: int = 0
    threads: int | None = 1


def build_models(cfg: RecurrenceConfig, vocab_size: int):
    """The LSTM seq2seq and the encoder-decoder Transformer of ``cfg``, each initialised from ``cfg.seed``."""
    torch.manual_seed(cfg.seed)
    lstm = LSTMSeq2Seq(vocab_size, cfg.lstm_emb, cfg.lstm_hidden, max_len=cfg.max_len + 4)
    torch.manual_seed(cfg.seed)
    tf = Transformer(ModelConfig(kind="encoder-decoder", vocab_size=vocab_size, d_model=cfg.d_model,
                                 n_heads=cfg.heads, n_encoder_layers=cfg.layers, n_decoder_layers=cfg.layers,
                                 d_ff=cfg.d_ff, dropout=0.0, max_len=cfg.max_len + 8, norm="pre"))
    return lstm, tf


def _logits(model, src, tgt_in):
    return model(src, tgt_in) if isinstance(model, LSTMSeq2Seq) else model(src, tgt_in).logits


def train_model(model, task: SyntheticTask, cfg: RecurrenceConfig) -> list[float]:
    """Adam, constant lr, clip 1.0; batch ``s`` is the task's batch for (seed, s): the same for both models."""
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    losses = []
    model.train()
    for step in range(cfg.steps):
        b = task.batch(step, cfg.batch_size, cfg.seed)
        logits = _logits(model, b.src, b.tgt_in)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), b.tgt_out.reshape(-1), ignore_index=PAD)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(round(loss.item(), 4))
    return losses


@torch.no_grad()
def accuracy_by_length(model, task: SyntheticTask, lengths, n: int = 100, seed: int = 123_456) -> dict:
    """Per length: teacher-forced token accuracy (symbols + EOS) and greedy exact match, on held-out data."""
    from ..inference.decoding import greedy_batch
    model.eval()
    token, exact = [], []
    for length in lengths:
        gen = torch.Generator().manual_seed(seed + length)
        pairs = []
        for _ in range(n):
            seq = [task.ids[i] for i in torch.randint(0, len(task.ids), (length,), generator=gen).tolist()]
            pairs.append((seq, task.target(seq)))
        b = seq2seq_batch(pairs)
        pred = _logits(model, b.src, b.tgt_in).argmax(-1)
        keep = b.tgt_out.ne(PAD)
        token.append(round(float(pred.eq(b.tgt_out)[keep].float().mean()), 4))
        out = (model.greedy(b.src, length + 2) if isinstance(model, LSTMSeq2Seq)
               else greedy_batch(model, b.src, max_new=length + 2))
        exact.append(round(sum(o == t for o, (_, t) in zip(out, pairs)) / n, 4))
    return {"token_accuracy": token, "exact_match": exact}


def run(cfg: RecurrenceConfig | None = None, on_progress=None) -> dict:
    """Train the LSTM and the Transformer; ``{"config", "lengths", "params", "curves": {model: {metric: [...]}},
    "losses", "seconds"}``. Deterministic for a seed (same init seed, same batches)."""
    cfg = cfg or RecurrenceConfig()
    before = torch.get_num_threads()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    try:
        t0 = time.perf_counter()
        task = SyntheticTask(cfg.task, min_len=cfg.min_len, max_len=cfg.max_len)
        lstm, tf = build_models(cfg, task.tokenizer.vocab_size)
        lengths = list(range(cfg.min_len, cfg.max_len + 1))
        models = {"LSTM seq2seq (no attention)": lstm, "Transformer (attention)": tf}
        curves, losses, params = {}, {}, {}
        for i, (name, model) in enumerate(models.items()):
            torch.manual_seed(cfg.seed)
            losses[name] = train_model(model, task, cfg)
            curves[name] = accuracy_by_length(model, task, lengths, cfg.eval_per_length)
            params[name] = model.num_parameters()
            if on_progress is not None:
                on_progress(i + 1, len(models), name)
    finally:
        torch.set_num_threads(before)
    return {"config": dataclasses.asdict(cfg), "lengths": lengths, "params": params, "curves": curves,
            "losses": losses, "seconds": round(time.perf_counter() - t0, 1)}


def command(cfg: RecurrenceConfig, out: str) -> str:
    """The command line that reruns ``cfg`` and writes the results to ``out``."""
    return experiment.command("core.variants.recurrence", cfg, out)


def main(argv=None) -> int:
    """The ``python -m core.variants.recurrence`` command line; returns the exit code."""
    return experiment.main("core.variants.recurrence", "LSTM seq2seq vs Transformer by length", RecurrenceConfig, run,
                           ("params", "lengths", "curves", "seconds"), argv)


if __name__ == "__main__":
    raise SystemExit(main())
