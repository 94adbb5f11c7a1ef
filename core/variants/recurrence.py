"""Recurrence vs attention: an LSTM seq2seq baseline (no attention), the same with attention (Luong et al. 2015),
a small Transformer, and two more: a GRU seq2seq (no attention) and the LSTM with additive attention (Bahdanau et al.
2015).

Sutskever et al. (2014)-style encoder-decoder: the encoder LSTM reads ``x … EOS``; its final
``(h, c)`` is the *only* thing the decoder LSTM gets about the source. Everything must pass through
that one state vector. The Transformer's decoder instead reads any source position directly through
cross-attention.

The task is the lab's synthetic ``copy`` (or ``reverse``) from :mod:`core.training.tasks`, with the same
token interface (``PAD``/``BOS``/``EOS`` from :mod:`core.io.tokenizer`, batches from
:func:`core.training.tasks.seq2seq_batch`). For ``copy`` of a length-``n`` sequence, every symbol is read at
encoder step ``i`` and written at decoder step ``i``, so ``n`` recurrent steps separate where a token is
read from where it is needed — the distance is exactly the length. :func:`run` trains the models (all five, or
the ones of ``--only``, merged into an earlier run's results with ``--merge``) on the same batches for the same steps
from the same seed and returns accuracy per length. :func:`lstm_gates`
recomputes an LSTM's gates and states step by step from its own weights; :func:`seq2seq_gates` does it for a
trained model's encoder and decoder on one source; :func:`gru_gates` does the same for a GRU (its one update gate).
:func:`input_sensitivity` (the gradient of each output on each source embedding) and :func:`perturbation_effect`
(the outputs one substituted source token changes) measure how far one input token reaches in each model.

CLI: ``python -m core.variants.recurrence --out assets/recurrence/results.json`` (the page reads that file). The GRU
and the additive-attention LSTM were added later, trained alone and merged into the shipped results, their weights
stored in float16: ``python -m core.variants.recurrence --out assets/recurrence/results.json --only
gru,lstm-additive --merge assets/recurrence/results.json --weights assets/recurrence --half``.
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_model, save_model
from torch import nn

from ..config import ModelConfig
from ..io import cli, jsonio
from ..io.tokenizer import BOS, EOS, PAD
from ..model import Transformer
from ..training import experiment
from ..training.tasks import SyntheticTask, seq2seq_batch


class LSTMSeq2Seq(nn.Module):
    """Plain LSTM encoder-decoder: the encoder's final (h, c) initialises the decoder; no attention. ``cell``: the
    recurrent layer of both (:class:`GRUSeq2Seq` swaps in ``nn.GRU``; its state is h alone)."""
    cell = nn.LSTM

    def __init__(self, vocab_size: int, d_emb: int = 64, hidden: int = 128, layers: int = 1, max_len: int = 128):
        super().__init__()
        self.vocab_size, self.max_len = vocab_size, max_len
        self.embed = nn.Embedding(vocab_size, d_emb, padding_idx=PAD)
        self.encoder = self.cell(d_emb, hidden, layers, batch_first=True)
        self.decoder = self.cell(d_emb, hidden, layers, batch_first=True)
        self.out = nn.Linear(hidden, vocab_size)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def encode(self, src: torch.Tensor):
        """Final (h, c) of the encoder (h for a GRU), taken at each row's last non-PAD token (PAD never enters the
        state)."""
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


class GRUSeq2Seq(LSTMSeq2Seq):
    """The plain encoder-decoder with GRUs (Cho et al. 2014) instead of LSTMs: no cell, and one update gate z_t where
    the LSTM has a forget and an input gate (:func:`gru_gates`). No attention."""
    cell = nn.GRU


class LSTMAttnSeq2Seq(LSTMSeq2Seq):
    """The same LSTM encoder-decoder, plus attention over every encoder state (Luong et al. 2015, "global"
    attention with the "general" score; Bahdanau et al. 2014 is the additive form of the same idea). At decoder step
    t, with decoder state h_t and encoder states h̄_s:

        score(h_t, h̄_s) = h_tᵀ W_a h̄_s,   α_t = softmax_s(score),   c_t = Σ_s α_ts h̄_s,
        h̃_t = tanh(W_c [c_t; h_t]),       p(y_t | …) = softmax(W_s h̃_t).

    No input feeding (h̃_t is not fed to the next step), so a teacher-forced pass runs the decoder LSTM at once."""

    def __init__(self, vocab_size: int, d_emb: int = 64, hidden: int = 128, layers: int = 1, max_len: int = 128):
        super().__init__(vocab_size, d_emb, hidden, layers, max_len)
        self.w_a = nn.Linear(hidden, hidden, bias=False)
        self.w_c = nn.Linear(2 * hidden, hidden, bias=False)

    def encode(self, src: torch.Tensor):
        """(final (h, c), every encoder state ``[B, S, hidden]``, key padding ``[B, S]``)."""
        lengths = src.ne(PAD).sum(1).clamp(min=1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(src), lengths, batch_first=True, enforce_sorted=False)
        states, final = self.encoder(packed)
        states = nn.utils.rnn.pad_packed_sequence(states, batch_first=True, total_length=src.shape[1])[0]
        return final, states, src.eq(PAD)

    def decode(self, tgt: torch.Tensor, state, alignments: list | None = None):
        final, states, pad = state
        hidden, final = self.decoder(self.embed(tgt), final)
        scores = self.score(hidden, states)
        alpha = torch.softmax(scores.masked_fill(pad[:, None, :], float("-inf")), dim=-1)
        if alignments is not None:
            alignments.append(alpha)
        context = alpha @ states
        attentional = torch.tanh(self.w_c(torch.cat([context, hidden], dim=-1)))
        return self.out(attentional), (final, states, pad)

    def score(self, hidden: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
        """``[B, T, S]``: score(h_t, h̄_s) = h_tᵀ W_a h̄_s for decoder states ``hidden [B, T, H]`` and encoder states
        ``states [B, S, H]``."""
        return hidden @ self.w_a(states).transpose(1, 2)

    @torch.no_grad()
    def align(self, src: torch.Tensor, max_new: int | None = None) -> tuple[list[int], torch.Tensor]:
        """Greedy output for one source ``[1, S]`` and its alignment ``[steps, S]``: α_t over the source at each
        output step (the picture of Bahdanau et al. 2014, fig. 3)."""
        self.eval()
        state, tok, out, alphas = self.encode(src), torch.tensor([[BOS]]), [], []
        for _ in range(max_new or self.max_len):
            logits, state = self.decode(tok, state, alphas)
            tok = logits[:, -1].argmax(-1, keepdim=True)
            out.append(int(tok))
            if out[-1] == EOS:
                break
        return out[:-1] if out and out[-1] == EOS else out, torch.cat(alphas, 1)[0]


class LSTMAdditiveSeq2Seq(LSTMAttnSeq2Seq):
    """:class:`LSTMAttnSeq2Seq` with the additive score of Bahdanau et al. (2015), a one-hidden-layer network:

        score(h_t, h̄_s) = vᵀ tanh(W h_t + U h̄_s)    (W, U: ``attn_dim`` × hidden; v: ``attn_dim``; no biases),

    in place of h_tᵀ W_a h̄_s. Everything else is the Luong model's (α = softmax, c_t, h̃_t = tanh(W_c [c_t; h_t]),
    no input feeding), so the two differ only in the score. (Bahdanau et al. also score with the previous decoder
    state and feed c_t into the decoder RNN; here the score is theirs, the rest is kept equal.)"""

    def __init__(self, vocab_size: int, d_emb: int = 64, hidden: int = 128, layers: int = 1, max_len: int = 128,
                 attn_dim: int | None = None):
        LSTMSeq2Seq.__init__(self, vocab_size, d_emb, hidden, layers, max_len)  # no W_a
        attn_dim = attn_dim or hidden // 2  # 2·H·d + d ≈ H²: about as many weights as W_a
        self.w = nn.Linear(hidden, attn_dim, bias=False)
        self.u = nn.Linear(hidden, attn_dim, bias=False)
        self.v = nn.Linear(attn_dim, 1, bias=False)
        self.w_c = nn.Linear(2 * hidden, hidden, bias=False)

    def score(self, hidden: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
        """``[B, T, S]``: vᵀ tanh(W h_t + U h̄_s) for every decoder state of ``hidden [B, T, H]`` and encoder state of
        ``states [B, S, H]``."""
        return self.v(torch.tanh(self.w(hidden)[:, :, None, :] + self.u(states)[:, None, :, :])).squeeze(-1)


GATES = ("i", "f", "g", "o", "c", "h")


@dataclasses.dataclass
class LSTMGates:
    """Every step of a one-layer ``nn.LSTM`` recomputed from its weights (:func:`lstm_gates`), one row per step
    ``[T, hidden]``: input gate ``i``, forget gate ``f``, candidate ``g``, output gate ``o`` (σ, σ, tanh, σ), the cell
    ``c`` and the hidden state ``h`` after the step; ``c0``, ``h0`` ``[hidden]``: the state before step 0."""
    i: torch.Tensor
    f: torch.Tensor
    g: torch.Tensor
    o: torch.Tensor
    c: torch.Tensor
    h: torch.Tensor
    c0: torch.Tensor
    h0: torch.Tensor

    def retention(self, start: int = 0, end: int | None = None) -> torch.Tensor:
        """Per unit ``[hidden]``, ∏ f_t over the steps ``start < t ≤ end`` (default: the last step): the share of the
        cell ``c_start`` that the cell's own path, c_t = f_t ⊙ c_{t−1} + i_t ⊙ g_t, still carries in ``c_end``
        (what reaches it again through h and the gates is not counted). 1 for ``end == start``."""
        end = len(self.f) - 1 if end is None else end
        return self.f[start + 1:end + 1].prod(0) if end > start else torch.ones_like(self.c0)


def lstm_gates(lstm: nn.LSTM, x: torch.Tensor, state: tuple | None = None) -> LSTMGates:
    """Run a one-layer, one-direction ``nn.LSTM`` over ``x [T, input]`` step by step from its own weights
    (``weight_ih_l0``, ``weight_hh_l0``, ``bias_ih_l0``, ``bias_hh_l0``; PyTorch's gate order i, f, g, o):

        i_t, f_t, g_t, o_t = σ, σ, tanh, σ of (W_ih x_t + b_ih + W_hh h_{t−1} + b_hh), split in four,
        c_t = f_t ⊙ c_{t−1} + i_t ⊙ g_t,   h_t = o_t ⊙ tanh(c_t).

    ``state``: ``(h0, c0)`` as ``nn.LSTM`` takes it (``[1, 1, hidden]`` or ``[hidden]``), default zeros. Returns
    every gate and state (:class:`LSTMGates`); ``h`` and ``c`` are what ``nn.LSTM`` itself computes (to float
    rounding; tests/core/test_lstm_gates.py). Raises ValueError for more layers, two directions or a projection."""
    if lstm.num_layers != 1 or lstm.bidirectional or lstm.proj_size:
        raise ValueError("lstm_gates reads a one-layer, one-direction LSTM without projection")
    hidden = lstm.hidden_size
    w_ih, w_hh = lstm.weight_ih_l0.detach(), lstm.weight_hh_l0.detach()
    bias = (lstm.bias_ih_l0.detach() + lstm.bias_hh_l0.detach()) if lstm.bias else torch.zeros(4 * hidden)
    x = x.detach().to(w_ih.dtype)
    if state is None:
        h, c = torch.zeros(hidden, dtype=w_ih.dtype), torch.zeros(hidden, dtype=w_ih.dtype)
    else:
        h, c = (s.detach().reshape(hidden).to(w_ih.dtype) for s in state)
    h0, c0, rows = h, c, {k: [] for k in GATES}
    pre = x @ w_ih.T + bias  # the input's part of every step at once
    for t in range(x.shape[0]):
        zi, zf, zg, zo = (pre[t] + w_hh @ h).chunk(4)
        i, f, g, o = torch.sigmoid(zi), torch.sigmoid(zf), torch.tanh(zg), torch.sigmoid(zo)
        c = f * c + i * g
        h = o * torch.tanh(c)
        for k, v in zip(GATES, (i, f, g, o, c, h)):
            rows[k].append(v)
    empty = torch.zeros(0, hidden, dtype=w_ih.dtype)
    return LSTMGates(**{k: torch.stack(v) if v else empty for k, v in rows.items()}, c0=c0, h0=h0)


@dataclasses.dataclass
class GRUGates:
    """Every step of a one-layer ``nn.GRU`` recomputed from its weights (:func:`gru_gates`), one row per step
    ``[T, hidden]``: reset gate ``r``, update gate ``z`` (σ, σ), the candidate ``n`` (tanh) and the hidden state ``h``
    after the step; ``h0`` ``[hidden]``: the state before step 0. ``z`` is the share of h_{t−1} each unit keeps and
    ``1 − z`` the share of the candidate it takes in: one gate sets both."""
    r: torch.Tensor
    z: torch.Tensor
    n: torch.Tensor
    h: torch.Tensor
    h0: torch.Tensor


def gru_gates(gru: nn.GRU, x: torch.Tensor, state: torch.Tensor | None = None) -> GRUGates:
    """Run a one-layer, one-direction ``nn.GRU`` over ``x [T, input]`` step by step from its own weights
    (``weight_ih_l0``, ``weight_hh_l0``, ``bias_ih_l0``, ``bias_hh_l0``; PyTorch's gate order r, z, n):

        r_t = σ(W_ir x_t + b_ir + W_hr h_{t−1} + b_hr),   z_t = σ(W_iz x_t + b_iz + W_hz h_{t−1} + b_hz),
        n_t = tanh(W_in x_t + b_in + r_t ⊙ (W_hn h_{t−1} + b_hn)),   h_t = (1 − z_t) ⊙ n_t + z_t ⊙ h_{t−1}.

    ``state``: h0 as ``nn.GRU`` takes it (``[1, 1, hidden]`` or ``[hidden]``), default zeros. Returns every gate and
    state (:class:`GRUGates`); ``h`` is what ``nn.GRU`` itself computes (to float rounding). Raises ValueError for
    more layers or two directions."""
    if gru.num_layers != 1 or gru.bidirectional:
        raise ValueError("gru_gates reads a one-layer, one-direction GRU")
    hidden = gru.hidden_size
    w_ih, w_hh = gru.weight_ih_l0.detach(), gru.weight_hh_l0.detach()
    zeros = torch.zeros(3 * hidden, dtype=w_ih.dtype)
    b_ih, b_hh = (gru.bias_ih_l0.detach(), gru.bias_hh_l0.detach()) if gru.bias else (zeros, zeros)
    x = x.detach().to(w_ih.dtype)
    h = torch.zeros(hidden, dtype=w_ih.dtype) if state is None else state.detach().reshape(hidden).to(w_ih.dtype)
    h0, rows = h, {k: [] for k in ("r", "z", "n", "h")}
    pre = x @ w_ih.T + b_ih  # the input's part of every step at once
    for t in range(x.shape[0]):
        xr, xz, xn = pre[t].chunk(3)
        hr, hz, hn = (w_hh @ h + b_hh).chunk(3)
        r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
        n = torch.tanh(xn + r * hn)
        h = (1 - z) * n + z * h
        for k, v in zip("rznh", (r, z, n, h)):
            rows[k].append(v)
    empty = torch.zeros(0, hidden, dtype=w_ih.dtype)
    return GRUGates(**{k: torch.stack(v) if v else empty for k, v in rows.items()}, h0=h0)


@dataclasses.dataclass
class Seq2SeqGates:
    """The gates of an LSTM (or GRU) seq2seq on one source (:func:`seq2seq_gates`): the ``encoder`` reading the
    source, then the ``decoder``, started from the encoder's final state, fed BOS and its own greedy output;
    ``produced``: the token each decoder step wrote (EOS last when it was reached)."""
    encoder: LSTMGates | GRUGates
    decoder: LSTMGates | GRUGates
    produced: list[int]

    def steps(self, name: str) -> torch.Tensor:
        """Gate or state ``name`` (one of :data:`GATES`; r, z, n, h for a GRU) of every encoder step, then every
        decoder step, ``[T_enc + T_dec, hidden]``."""
        return torch.cat([getattr(self.encoder, name), getattr(self.decoder, name)])

    def most_varying(self, k: int, name: str = "f") -> list[int]:
        """The ``k`` units whose ``name`` gate varies most over all steps (largest variance first)."""
        var = self.steps(name).var(0, unbiased=False)
        return var.topk(min(k, len(var))).indices.tolist()


@torch.no_grad()
def seq2seq_gates(model: LSTMSeq2Seq, src: list[int], max_new: int | None = None) -> Seq2SeqGates:
    """Gates of ``model``'s encoder LSTM reading ``src`` (the source ids as the encoder reads them: symbols then
    EOS, no PAD) and of its decoder LSTM while it writes its greedy output (:meth:`LSTMSeq2Seq.greedy`, at most
    ``max_new`` tokens): the decoder's inputs are BOS and the tokens it wrote (neither model feeds anything else
    to its decoder LSTM; the attention model's context enters after the LSTM), so both are :func:`lstm_gates`
    (:func:`gru_gates` for a :class:`GRUSeq2Seq`)."""
    model.eval()
    src_t = torch.tensor([src])
    gru = isinstance(model.encoder, nn.GRU)
    encoder = (gru_gates if gru else lstm_gates)(model.encoder, model.embed(src_t)[0])
    out = model.greedy(src_t, max_new)[0]
    produced = out + [EOS] if len(out) < (max_new or model.max_len) else out
    fed = model.embed(torch.tensor([[BOS] + produced[:-1]]))[0]
    decoder = (gru_gates(model.decoder, fed, encoder.h[-1]) if gru
               else lstm_gates(model.decoder, fed, (encoder.h[-1], encoder.c[-1])))
    return Seq2SeqGates(encoder, decoder, produced)


@torch.no_grad()
def recomputed_gap(model: LSTMSeq2Seq, src: list[int], trace: Seq2SeqGates) -> float:
    """The largest |h − h'| over every encoder and decoder step and unit between the hidden states ``trace``
    recomputed (:func:`seq2seq_gates`) and those the model's own ``nn.LSTM`` / ``nn.GRU`` layers compute on the same
    inputs: float rounding when the written-out formulas are the ones the model runs."""
    enc, final = model.encoder(model.embed(torch.tensor([src])))
    dec, _ = model.decoder(model.embed(torch.tensor([[BOS] + trace.produced[:-1]])), final)
    return float(torch.cat([(enc[0] - trace.encoder.h).abs().flatten(), (dec[0] - trace.decoder.h).abs().flatten()])
                 .max())


@dataclasses.dataclass
class RecurrenceConfig:
    """Settings of the LSTM-vs-Transformer comparison: task and lengths, training, the models' sizes, evaluation,
    which models to train and where their results and weights go."""
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
    weights: str | None = None  # a folder: each trained model's weights saved there (MODEL_FILES), for the page
    gru_hidden: int | None = None  # None: the GRU size whose parameter count is nearest the LSTM's (gru_size)
    attn_dim: int | None = None  # of the additive score vᵀ tanh(W s + U h); None: lstm_hidden // 2, ~ W_a's weights
    only: str | None = None  # comma-separated keys of NAMES to train; None: all of them
    merge: str | None = None  # an earlier results file of the same settings: its other models are kept
    half: bool = False  # store this run's weights in float16 and measure its curves with the rounded weights

    def keys(self) -> list[str]:
        """The keys of :data:`NAMES` this run trains, in that order; ValueError for a key it does not know."""
        if self.only is None:
            return list(NAMES)
        asked = [k.strip() for k in self.only.split(",") if k.strip()]
        unknown = [k for k in asked if k not in NAMES]
        if unknown or not asked:
            raise ValueError(f"--only takes keys of {', '.join(NAMES)}, separated by commas; not {self.only!r}")
        return [k for k in NAMES if k in asked]


NAMES = {"lstm": "LSTM seq2seq (no attention)", "lstm-attention": "LSTM seq2seq + attention (Luong et al. 2015)",
         "transformer": "Transformer (attention)", "gru": "GRU seq2seq (no attention)",
         "lstm-additive": "LSTM seq2seq + additive attention (Bahdanau et al. 2015)"}
MODEL_FILES = {key: f"{key}.safetensors" for key in NAMES}


def gru_size(vocab_size: int, d_emb: int, lstm_hidden: int) -> int:
    """The GRU hidden size whose :class:`GRUSeq2Seq` has the parameter count nearest the :class:`LSTMSeq2Seq` of
    ``lstm_hidden`` (a GRU layer has 3 weight blocks where an LSTM has 4), the smaller on a tie."""
    def count(blocks: int, h: int) -> int:  # embedding, encoder and decoder layers, output layer
        return vocab_size * d_emb + 2 * blocks * (h * d_emb + h * h + 2 * h) + (h + 1) * vocab_size
    target = count(4, lstm_hidden)
    return min(range(1, 2 * lstm_hidden + 1), key=lambda h: (abs(count(3, h) - target), h))


def build_models(cfg: RecurrenceConfig, vocab_size: int) -> dict:
    """``{key of NAMES: model}``: the LSTM seq2seq, the same with attention, the encoder-decoder Transformer, the GRU
    seq2seq and the LSTM with additive attention of ``cfg``, each initialised from ``cfg.seed``."""
    torch.manual_seed(cfg.seed)
    lstm = LSTMSeq2Seq(vocab_size, cfg.lstm_emb, cfg.lstm_hidden, max_len=cfg.max_len + 4)
    torch.manual_seed(cfg.seed)
    attn = LSTMAttnSeq2Seq(vocab_size, cfg.lstm_emb, cfg.lstm_hidden, max_len=cfg.max_len + 4)
    torch.manual_seed(cfg.seed)
    tf = Transformer(ModelConfig(kind="encoder-decoder", vocab_size=vocab_size, d_model=cfg.d_model,
                                 n_heads=cfg.heads, n_encoder_layers=cfg.layers, n_decoder_layers=cfg.layers,
                                 d_ff=cfg.d_ff, dropout=0.0, max_len=cfg.max_len + 8, norm="pre"))
    torch.manual_seed(cfg.seed)
    gru = GRUSeq2Seq(vocab_size, cfg.lstm_emb, cfg.gru_hidden or gru_size(vocab_size, cfg.lstm_emb, cfg.lstm_hidden),
                     max_len=cfg.max_len + 4)
    torch.manual_seed(cfg.seed)
    additive = LSTMAdditiveSeq2Seq(vocab_size, cfg.lstm_emb, cfg.lstm_hidden, max_len=cfg.max_len + 4,
                                   attn_dim=cfg.attn_dim)
    return {"lstm": lstm, "lstm-attention": attn, "transformer": tf, "gru": gru, "lstm-additive": additive}


def config_of(saved: dict) -> RecurrenceConfig:
    """The RecurrenceConfig of a results file's ``config`` (fields it does not know are left out)."""
    return RecurrenceConfig(**{k: v for k, v in saved.items() if k in RecurrenceConfig.__dataclass_fields__})


def load_models(folder, cfg: RecurrenceConfig) -> tuple[SyntheticTask, dict]:
    """The task and the trained models a run saved in ``folder`` (``cfg.weights``), in eval mode; a model whose
    file is missing is left out."""
    task = SyntheticTask(cfg.task, min_len=cfg.min_len, max_len=cfg.max_len)
    models = {}
    for key, model in build_models(cfg, task.tokenizer.vocab_size).items():
        path = Path(folder) / MODEL_FILES[key]
        if path.exists():
            load_model(model, str(path))
            models[key] = model.eval()
    return task, models


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
    """Train the models of ``cfg.keys()`` (default: all of NAMES); ``{"config", "lengths", "params", "curves":
    {model: {metric: [...]}}, "losses", "seconds", "models": the names trained, "rounding_shift": {name: the largest
    change float16 weights made to a point of its curves} (with ``half``)}``, merged with ``cfg.merge``'s other
    models (:func:`merge`). Deterministic for a seed (same init seed, same batches)."""
    cfg = cfg or RecurrenceConfig()
    keys = cfg.keys()
    earlier = jsonio.loads(Path(cfg.merge).read_text(encoding="utf-8")) if cfg.merge else None
    if earlier is not None:
        same(earlier["config"], cfg)
    before = torch.get_num_threads()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    try:
        t0 = time.perf_counter()
        task = SyntheticTask(cfg.task, min_len=cfg.min_len, max_len=cfg.max_len)
        models = {k: m for k, m in build_models(cfg, task.tokenizer.vocab_size).items() if k in keys}
        lengths = list(range(cfg.min_len, cfg.max_len + 1))
        curves, losses, params, shift = {}, {}, {}, {}
        for i, (key, model) in enumerate(models.items()):
            name = NAMES[key]
            torch.manual_seed(cfg.seed)
            losses[name] = train_model(model, task, cfg)
            if cfg.half:  # measured with the weights as shipped: rounded to float16, computed in float32
                full = accuracy_by_length(model, task, lengths, cfg.eval_per_length)
                model.half().float()
            curves[name] = accuracy_by_length(model, task, lengths, cfg.eval_per_length)
            if cfg.half:
                shift[name] = round(max(abs(a - b) for m in full for a, b in zip(full[m], curves[name][m])), 4)
            params[name] = model.num_parameters()
            if cfg.weights:
                Path(cfg.weights).mkdir(parents=True, exist_ok=True)
                # tied weights stored once
                save_model(model.half() if cfg.half else model, str(Path(cfg.weights) / MODEL_FILES[key]))
                model.float()
            if on_progress is not None:
                on_progress(i + 1, len(models), name)
    finally:
        torch.set_num_threads(before)
    result = {"config": dataclasses.asdict(cfg), "lengths": lengths, "params": params, "curves": curves,
              "losses": losses, "seconds": round(time.perf_counter() - t0, 1), "models": list(curves)}
    if shift:
        result["rounding_shift"] = shift
    return merge(earlier, result) if earlier is not None else result


KEPT_EQUAL = ("task", "min_len", "max_len", "steps", "batch_size", "lr", "lstm_emb", "lstm_hidden", "d_model",
              "heads", "layers", "d_ff", "eval_per_length", "seed")


def same(saved: dict, cfg: RecurrenceConfig) -> None:
    """Raise ValueError when an earlier run's ``config`` differs from ``cfg`` in a setting that the models of both
    must share (:data:`KEPT_EQUAL`) to be compared."""
    differ = [k for k in KEPT_EQUAL if k in saved and saved[k] != getattr(cfg, k)]
    if differ:
        raise ValueError("the results to merge were trained with other settings: "
                         + ", ".join(f"{k} {saved[k]} (here {getattr(cfg, k)})" for k in differ))


def runs_of(results: dict) -> list[dict]:
    """Every run behind a results file, earliest first: ``{"models", "command", "date", "seconds"}`` (a file written
    by one run of every model is one run)."""
    earlier = results.get("runs", [])
    done = {m for r in earlier for m in r["models"]}
    latest = results.get("models") or [n for n in results["curves"] if n not in done]
    return earlier + [{"models": latest, **{k: results.get(k) for k in ("command", "date", "seconds")}}]


def merge(earlier: dict, result: dict) -> dict:
    """``result`` (of :func:`run`) with ``earlier``'s curves, losses, parameter counts and rounding shifts of the
    models it did not train, in :data:`NAMES` order; ``"runs"``: the runs behind ``earlier`` that still own a model
    (:func:`runs_of`), the top-level command, date and seconds staying those of ``result``'s run."""
    mine = set(result["curves"])
    order = [n for n in NAMES.values() if n in mine or n in earlier["curves"]]
    out = dict(result)
    for field in ("params", "curves", "losses", "rounding_shift"):
        both = earlier.get(field, {}) | result.get(field, {})
        if both:
            out[field] = {n: both[n] for n in order if n in both}
    runs = [r | {"models": [m for m in r["models"] if m not in mine]} for r in runs_of(earlier)]
    out["runs"] = [r for r in runs if r["models"]]
    return out


GATE_KEYS = ("lstm", "lstm-attention")  # the LSTMs whose gates copy_demo reads (the page draws these two)


def copy_demo(task: SyntheticTask, models: dict, text: str, longest: int) -> dict:
    """The symbols of ``text`` (space-separated) through each trained model of :func:`load_models`, greedily:
    ``{"symbols", "target", "outputs": {key: symbols}, "alignment": α [steps, S] of the attention LSTM,
    "additive_alignment": the same of the additive-attention LSTM, "cross": the Transformer's last-layer
    cross-attention, mean over heads [steps, S], "gates": {key: the :class:`Seq2SeqGates` of each LSTM of
    :data:`GATE_KEYS`}, "gru_gates": the GRU's, "source": the source ids (symbols, EOS), "written": {key: the ids
    each model wrote, EOS last when reached}}`` (S: the symbols and EOS; each row: the output step it produced, EOS
    last when reached); a model ``models`` lacks is left out. Raises ValueError, saying what is allowed, for a symbol
    the task does not have or more than ``longest`` symbols."""
    from ..inference.decoding import greedy_batch
    vocab = {task.tokenizer.id_to_token(i).lstrip("▁"): i for i in task.ids}
    symbols = text.split()
    unknown = sorted({s for s in symbols if s not in vocab})
    if unknown:
        raise ValueError(f"Not symbols of this task: {', '.join(unknown[:5])}. It knows {' '.join(vocab)}, "
                         "separated by spaces")  # the user's text not first: an alert takes a leading emoji as icon
    if not 1 <= len(symbols) <= longest:
        raise ValueError(f"{len(symbols)} symbols: type 1 to {longest}, separated by spaces")
    ids = [vocab[s] for s in symbols]
    name = {i: s for s, i in vocab.items()}
    src = torch.tensor([ids + [EOS]])
    outputs, result = {}, {"symbols": symbols, "target": [name[i] for i in task.target(ids)], "source": ids + [EOS]}
    with torch.no_grad():
        for key, model in models.items():
            if key == "lstm-attention":
                out, result["alignment"] = model.align(src, len(ids) + 2)
            elif key == "lstm-additive":
                out, result["additive_alignment"] = model.align(src, len(ids) + 2)
            elif isinstance(model, LSTMSeq2Seq):
                out = model.greedy(src, len(ids) + 2)[0]
            else:
                out = greedy_batch(model, src, max_new=len(ids) + 2)[0]
                trace = model(src, torch.tensor([[BOS] + out]), trace=True).trace
                last = model.cfg.n_decoder_layers - 1
                result["cross"] = trace[f"decoder.{last}.cross_attn.weights"][0].mean(0)
            if key in GATE_KEYS:
                result.setdefault("gates", {})[key] = seq2seq_gates(model, ids + [EOS], len(ids) + 2)
            elif key == "gru":
                result["gru_gates"] = seq2seq_gates(model, ids + [EOS], len(ids) + 2)
            outputs[key] = [name.get(i, task.tokenizer.id_to_token(i)) for i in out]
            result.setdefault("written", {})[key] = out + [EOS] if len(out) < len(ids) + 2 else out
    return result | {"outputs": outputs}


def gradient_norms(outputs, x: torch.Tensor, n_out: int) -> torch.Tensor:
    """``[T, S]`` (``T = n_out``): the length ‖∂ y_t / ∂ x_j‖ of the gradient of each scalar output ``y_t`` with
    respect to each input vector ``x_j``. ``x [S, d]``; ``outputs`` maps a batch ``[B, S, d]`` to ``[B, T]``, each row
    computed from its own batch row only. Row ``t`` of a batch of ``T`` copies of ``x`` gives the gradient of ``y_t``,
    so one backward pass serves every output."""
    with torch.enable_grad():
        xs = x.detach().unsqueeze(0).repeat(n_out, 1, 1).requires_grad_(True)
        y = outputs(xs)
        grad, = torch.autograd.grad(y.diagonal().sum(), xs, allow_unused=True)
    return torch.zeros(xs.shape[:2], dtype=x.dtype) if grad is None else grad.norm(dim=-1)


def _source_embedding(model) -> nn.Embedding:
    """The token table that reads the source: the LSTMs' ``embed``, the Transformer's ``embed.tokens`` (before its
    ×√d_model and positions)."""
    return model.embed if isinstance(model.embed, nn.Embedding) else model.embed.tokens


def _written_log_probs(model, src: torch.Tensor, written: list[int]) -> torch.Tensor:
    """``[B, T]``: log p of each written token, teacher forced on ``BOS`` and the tokens written before it."""
    tgt = torch.tensor([[BOS] + written[:-1]] * src.shape[0])
    logp = torch.log_softmax(_logits(model, src, tgt), -1)
    return logp[:, torch.arange(len(written)), torch.tensor(written)]


def input_sensitivity(model, src: list[int], written: list[int]) -> torch.Tensor:
    """``[T, S]``: for each output step ``t`` and source position ``j``, ‖∂ log p(y_t) / ∂ e(x_j)‖, the length of
    the gradient of the log-probability of the token the model wrote at step ``t`` (teacher forced on what it wrote
    before) with respect to the embedding of the source token ``x_j``, the row of its token table (the
    :func:`_source_embedding`). ``src``: the source ids (symbols, EOS); ``written``: the tokens written (copy_demo's
    ``written``). Only the source's embeddings move; the decoder's own inputs keep theirs, even in a shared table."""
    src_t = torch.tensor([src])
    table = _source_embedding(model)
    with torch.no_grad():
        base = table(src_t)[0]
    batch, given = {}, {}

    def swap(module, args, out):  # the embedding of the source (never of the decoder's input) replaced by the batch
        if args[0] is batch.get("src"):
            return given["x"]

    def outputs(xs):
        batch["src"], given["x"] = src_t.expand(xs.shape[0], -1).clone(), xs
        return _written_log_probs(model, batch["src"], written)

    handle = table.register_forward_hook(swap)
    try:
        return gradient_norms(outputs, base, len(written))
    finally:
        handle.remove()


@torch.no_grad()
def perturbation_effect(model, src: list[int], written: list[int], substitutions) -> dict:
    """What replacing one source token does to each output step, teacher forced on the tokens ``written``: for
    each ``(position, token)`` of ``substitutions``, ``"delta" [P, T]``: |Δ log p| of the token written at each step,
    and ``"changed" [P, T]``: whether the step's most likely token is no longer the one it is without the change."""
    rows = torch.tensor([src] * (len(substitutions) + 1))
    for r, (j, token) in enumerate(substitutions, start=1):
        rows[r, j] = token
    tgt = torch.tensor([[BOS] + written[:-1]] * rows.shape[0])
    logp = torch.log_softmax(_logits(model, rows, tgt), -1)
    picked = logp[:, torch.arange(len(written)), torch.tensor(written)]
    best = logp.argmax(-1)
    return {"delta": (picked[1:] - picked[0]).abs(), "changed": best[1:].ne(best[0])}


def by_distance(sensitivity: torch.Tensor, n: int) -> tuple[list[int], list[float]]:
    """Mean of ``sensitivity [T, S]`` over the pairs (t, j) at each distance ``n − j + t``, the steps between the
    encoder reading source token ``j`` and the decoder writing output ``t`` (``n``: the symbols before EOS; on
    copy, each symbol's own output is ``n`` steps away). Returns (distances, means), distances ascending."""
    t, j = torch.meshgrid(torch.arange(sensitivity.shape[0]), torch.arange(sensitivity.shape[1]), indexing="ij")
    dist = (n - j + t).flatten()
    values = sensitivity.flatten().double()
    ds = sorted(set(dist.tolist()))
    return ds, [float(values[dist == d].mean()) for d in ds]


def copied_from(task_name: str, n: int) -> list[int] | None:
    """For each of the ``n`` symbol outputs, the source position it copies (copy: itself; reverse: its mirror);
    None for a task whose outputs are not tied to fixed positions (sort)."""
    return list(range(n)) if task_name == "copy" else list(range(n))[::-1] if task_name == "reverse" else None


def weight_on_own(weights: torch.Tensor, own: list[int]) -> float:
    """The mean, over the first ``len(own)`` output steps (those that exist), of the attention weight ``weights
    [steps, S]`` that each output step puts on the source position it copies (``own``: :func:`copied_from`)."""
    rows = range(min(len(own), len(weights)))
    return sum(float(weights[t, own[t]]) for t in rows) / len(rows) if rows else float("nan")


def reach_summary(sensitivity: torch.Tensor, n: int, own: list[int] | None) -> dict:
    """Two numbers read off an input-sensitivity map ``[T, S]`` (:func:`input_sensitivity`) of ``n`` source symbols:
    ``"first_vs_last"``: the mean gradient on the first symbol over the mean on the last one, over all outputs (the
    first is read ``n − 1`` steps earlier; a recurrent path that loses ``r`` per step would make this about
    ``r^(n−1)``), None for one symbol; ``"own_share"``: the mean, over the symbol outputs, of the share of each
    output's gradient that lies on the source symbol it copies (``own``: :func:`copied_from`; None without it)."""
    last = float(sensitivity[:, n - 1].mean()) if n > 1 else 0.0
    first_vs_last = float(sensitivity[:, 0].mean()) / last if last > 0 else None
    shares = [float(sensitivity[t, own[t]] / sensitivity[t].sum()) for t in range(min(len(own or []), len(sensitivity)))
              if float(sensitivity[t].sum()) > 0]
    return {"first_vs_last": first_vs_last, "own_share": sum(shares) / len(shares) if shares else None}


def command(cfg: RecurrenceConfig, out: str) -> str:
    """The command line that reruns ``cfg`` and writes the results to ``out``."""
    return experiment.command("core.variants.recurrence", cfg, out)


def main(argv=None) -> int:
    """The ``python -m core.variants.recurrence`` command line; returns the exit code."""
    try:
        return experiment.main("core.variants.recurrence", "LSTM and GRU seq2seq vs Transformer by length",
                               RecurrenceConfig, run, ("params", "lengths", "curves", "seconds"), argv)
    except (ValueError, OSError) as e:  # --only with an unknown key, --merge of other settings or of no file
        return cli.refuse(e)


if __name__ == "__main__":
    raise SystemExit(main())
