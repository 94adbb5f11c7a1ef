"""Activation patching's results outside one call: the probe-set scoreboard kept beside a model's weights, and the
command line.

* :func:`save_scoreboard` writes a :func:`core.probes.patch.scoreboard` to ``patching.json`` in the checkpoint's
  folder, tied to its weights by :func:`fingerprint` (SHA-256 of the weights file); :func:`saved_scoreboard` reads it
  back (its grids as tensors again, NaN where JSON holds null) only when the weights are the same, else None. The
  app shows the saved board instead of computing it (app/patch_view.py).
* :func:`main` is the command: ``python -m core.probes.patch_board`` (``attention-lab patch``; the older
  ``python -m core.probes.patch`` runs it too). ``--model en-fr --a "…too tired." --b "…too wide."``: the head
  effects of one pair; ``--probe-set [--save]``: the scoreboard over the model's probe set, kept with ``--save``.
  Strict JSON on the last line of stdout.

The sweeps themselves are :mod:`core.probes.patch`.
"""
from __future__ import annotations

import json
import sys

import torch

from ..io import checkpoint, cli, jsonio
from ..io.checkpoint import Checkpoint
from . import patch

# ------------------------------------------------------------------ a probe-set scoreboard kept beside the weights
SAVED = checkpoint.PATCHING
_TENSORS = ("mean_effect", "flip_share", "carry")


def fingerprint(ck: Checkpoint) -> str | None:
    """SHA-256 of the checkpoint's weights file (None when it has no folder, e.g. a packaged model)."""
    import hashlib
    path = getattr(ck, "path", None)
    if path is None or not (path / checkpoint.WEIGHTS).exists():
        return None
    return hashlib.sha256((path / checkpoint.WEIGHTS).read_bytes()).hexdigest()


def save_scoreboard(ck: Checkpoint, board: dict) -> str:
    """Write ``board`` to ``patching.json`` in the checkpoint's folder, tied to its weights by :func:`fingerprint`."""
    fp = fingerprint(ck)
    if fp is None:
        raise ValueError("this model has no checkpoint folder to keep the scoreboard in")
    path = ck.path / SAVED
    body = {k: v for k, v in board.items() if k != "skipped"} | {"skipped": [list(s) for s in board["skipped"]]}
    path.write_text(json.dumps({"weights_sha256": fp, "board": jsonio.finite(body, digits=6)}, ensure_ascii=False,
                               indent=1, allow_nan=False) + "\n", encoding="utf-8")
    return str(path)


def saved_scoreboard(ck: Checkpoint) -> dict | None:
    """The scoreboard kept by :func:`save_scoreboard`, if it was computed on exactly these weights."""
    path = getattr(ck, "path", None)
    if path is None or not (path / SAVED).exists():
        return None
    try:
        raw = json.loads((path / SAVED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if raw.get("weights_sha256") != fingerprint(ck):
        return None
    board = raw["board"]
    for key in _TENSORS:
        if board.get(key) is not None:
            board[key] = torch.tensor([[float("nan") if v is None else v for v in row] for row in board[key]]
                                      if isinstance(board[key][0], list) else
                                      [float("nan") if v is None else v for v in board[key]])
    return board


# ------------------------------------------------------------------ CLI
def main(argv=None, prog: str = "python -m core.probes.patch_board") -> int:
    """The patching command line: head effects for one pair (``--a``, ``--b``) or the probe set's scoreboard,
    printed as JSON; returns the exit code. ``prog``: the command's name in its messages (the form it was run by)."""
    ap = cli.Parser(prog=prog, description=patch.__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="a translation model (en-fr, en-de, …)")
    ap.add_argument("--a", help="sentence A")
    ap.add_argument("--b", help="sentence B (its “it” needs the other pronoun)")
    ap.add_argument("--probe-set", action="store_true", help="score every head over the model's probe set instead")
    ap.add_argument("--save", action="store_true",
                    help="with --probe-set: keep the scoreboard in the model's folder (patching.json) for the app")
    ap.add_argument("--top", type=int, default=5, help="heads to list")
    args = ap.parse_args(argv)
    from ..io import registry
    try:
        ck = registry.load(args.model)
        if args.probe_set:
            board = patch.scoreboard(ck, patch.probe_set(ck))
            for r in board["ranked"][: args.top]:
                print(f"{r['label']:>14}  mean effect {r['effect']:+.3f}  flips alone {r['flip_share']:.0%}")
            print(f"pairs used {board['n']}, wrong {board['wrong']}, skipped {len(board['skipped'])}; "
                  f"smallest set carrying {board['share']:.0%}: {board['k']} heads", file=sys.stderr)
            if args.save:
                print(f"saved {save_scoreboard(ck, board)}", file=sys.stderr)
            result = {k: v for k, v in board.items() if k != "skipped"} | {"skipped": len(board["skipped"])}
        else:
            if not args.a or not args.b:
                ap.error("give --a and --b, or --probe-set")
            a, b = patch.sentence_for(ck, args.a), patch.sentence_for(ck, args.b)
            result = patch.head_effects(ck, a, b)
            for r in result["ranked"][: args.top]:
                print(f"{r['label']:>14}  effect {r['effect']:+.3f}  flips alone in {r['flips']} of 2 directions")
            result["references"] = (a.tgt, b.tgt)
    except ValueError as e:
        return cli.refuse(e)
    result = {"model": args.model, **result}
    print(json.dumps(jsonio.finite(result, digits=6), ensure_ascii=False, allow_nan=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
