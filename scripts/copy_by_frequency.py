"""What the second-copy target of issue 32 is made of: the loss on repeated random tokens, split by how often each
token occurs in the lm's training text.

    PYTHONPATH=. python scripts/copy_by_frequency.py [MODEL] [--seq-len 100] [--batch 32]

The target (second copy ≤ 0.5 × first) draws its random tokens uniformly from the whole vocabulary, as Olsson et
al. do. Most of a BPE vocabulary's ids are rare in the text a small model read, and a model that copies still has
to *say* the token it copies. So, on the same measure as the card (``core.find_heads.head_scores``, ``MODEL``
default ``lm``), this prints:

* ``by_count``: the mean second-copy loss of the tokens whose training-text count falls in each decade
  (0, 1-9, 10-99, …), and how many of the measured tokens fall there;
* ``pools``: first-copy loss, second-copy loss and their ratio when the random tokens are drawn from every id
  (the target's measure), or only from the ids seen at least 1,000 or 10,000 times in the training text.

Counting tokenizes the training split of the model's corpus (about a minute for ``lm-large`` on two cores).
Last line: JSON.
"""
from __future__ import annotations

import argparse
import math
import sys

import torch
import torch.nn.functional as F

from core import find_heads
from core.io import jsonio, registry
from core.training.tasks import LMTask

FLOORS = (1_000, 10_000)


def decade(count: int) -> str:
    """The label of a training-text count's decade: "0", "1-9", "10-99", "100-999", …"""
    if count <= 0:
        return "0"
    lo = 10 ** int(math.log10(count))
    return f"{lo}-{10 * lo - 1}"


def second_copy_by_count(model, counts: torch.Tensor, *, seq_len: int, batch: int, frame: dict) -> dict:
    """Mean second-copy loss (tokens r_1 … r_{L-1}) per decade of training-text count: ``{decade: {"tokens", "loss"}}``."""
    ids = find_heads.repeated_tokens(model.cfg.vocab_size, seq_len=seq_len, batch=batch, vocab_low=frame["vocab_low"],
                                     bos=frame["bos"])
    o = 0 if frame["bos"] is None else 1
    with torch.no_grad():
        logits = model(ids.to(model.device)).logits.float().cpu()
    targets = torch.arange(o + seq_len + 1, o + 2 * seq_len)
    nll = -F.log_softmax(logits[:, targets - 1], dim=-1).gather(-1, ids[:, targets, None])[..., 0]
    sums: dict[str, list[float]] = {}
    for tok, loss in zip(ids[:, targets].flatten().tolist(), nll.flatten().tolist()):
        sums.setdefault(decade(int(counts[tok])), []).append(loss)
    order = sorted(sums, key=lambda k: int(k.split("-")[0]))
    return {k: {"tokens": len(sums[k]), "loss": sum(sums[k]) / len(sums[k])} for k in order}


def main(argv: list[str] | None = None) -> int:
    """Count, measure, print."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default="lm")
    ap.add_argument("--seq-len", type=int, default=100)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args(argv)
    ck = registry.load(args.model)
    model = ck.model.eval()
    name = ck.meta.get("task", "lm-large")
    task = LMTask(tokenizer=ck.tokenizer, seq_len=model.cfg.max_len, name=name)
    counts = torch.bincount(task.train_stream, minlength=model.cfg.vocab_size)
    frame = find_heads.framing(ck)
    out = {"model": args.model, "corpus": name, "training_tokens": int(counts.sum()), "seq_len": args.seq_len,
           "batch": args.batch,
           "by_count": second_copy_by_count(model, counts, seq_len=args.seq_len, batch=args.batch, frame=frame),
           "pools": {}}
    ordinary = torch.arange(frame["vocab_low"], model.cfg.vocab_size)
    for label, pool in [("every id", None)] + [(f"seen >= {f:,} times", ordinary[counts[ordinary] >= f]) for f in FLOORS]:
        loss = find_heads.head_scores(model, seq_len=args.seq_len, batch=args.batch, vocab_low=frame["vocab_low"],
                                      bos=frame["bos"], pool=pool)["induction_loss"]
        out["pools"][label] = {"ids": int(len(ordinary) if pool is None else len(pool)), **loss,
                               "ratio": loss["second_copy"] / loss["first_copy"]}
    for k, v in out["by_count"].items():
        print(f"count {k:>13}: {v['tokens']:5d} tokens, second-copy loss {v['loss']:.2f}")
    for k, v in out["pools"].items():
        print(f"{k:>20} ({v['ids']:,} ids): first {v['first_copy']:.2f}, second {v['second_copy']:.2f}, "
              f"ratio {v['ratio']:.2f}")
    print(jsonio.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
