"""Model-level summaries that are the same for every visitor, computed once per model and shipped beside it.

A page that ranks every head of a model over a fixed set of sentences (the coreference probe set's attention
scoreboards; head importance on a held-out batch with its pruning curve; the held-out loss after a GQA / MQA
conversion; the same batch's quality with the weights pruned by magnitude, and with each head cut to its span; a
GPT-style model's few-shot accuracy curves) would otherwise redo minutes of forward passes on a fresh server. They
depend only on the weights and on those fixed sentences, so ``python scripts/precompute.py --model NAME`` computes
them once and writes ``summaries.json``: in the model's folder (``assets/models/NAME/``), or
``assets/precomputed/NAME/`` for a model loaded from an installed package (minilm).

Each part is tied to the weights (SHA-256 of every parameter, :func:`fingerprint`) and to its inputs (SHA-256 of the
probe sentences, the evaluation batch's settings): a file made for other weights or other sentences is ignored and
the page computes live instead — a stale number is never shown. A sentence the user types is always computed live.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import weakref
from pathlib import Path

import torch

from ..inference import prompting, verbatim
from ..io import jsonio
from . import compress, coref
from . import heads as H

FILE = "summaries.json"
COMMAND = "python scripts/precompute.py --model {name}"
EVAL_N = 32  # evaluation sentences / windows of the head-importance batch
CHECK_ITEMS = 8  # probe sentences of the small scoreboard shipped for tests to recompute (``coref_check``)
PACKAGED = Path(__file__).resolve().parents[2] / "assets" / "precomputed"  # models without a folder of their own

_prints: "weakref.WeakKeyDictionary[torch.nn.Module, str]" = weakref.WeakKeyDictionary()
_files: dict[tuple[str, float], dict] = {}  # (path, mtime) -> parsed file


# ------------------------------------------------------------------ where, and for which weights
def folder(ck, name: str) -> Path:
    """Where the model's summaries live: its checkpoint folder, or ``assets/precomputed/<name>`` for a model that
    came from an installed package."""
    path = getattr(ck, "path", None)
    if ck.meta.get("task") != "pretrained" and path is not None and (Path(path) / "config.json").exists():
        return Path(path)
    return PACKAGED / name  # an installed package's folder is not ours to write in (nor shipped with the app)


def fingerprint(model: torch.nn.Module) -> str:
    """SHA-256 over the model's parameters (names, shapes and float32 values, in name order); cached per model."""
    if model not in _prints:
        h = hashlib.sha256()
        for key, t in sorted(model.state_dict(keep_vars=False).items()):
            if not torch.is_floating_point(t):
                continue
            h.update(key.encode())
            h.update(str(tuple(t.shape)).encode())
            h.update(t.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
        _prints[model] = h.hexdigest()
    return _prints[model]


def texts_sha(texts) -> str:
    """SHA-256 of a list of strings (the inputs a summary was computed on)."""
    return hashlib.sha256(json.dumps(list(texts), ensure_ascii=False, allow_nan=False).encode()).hexdigest()


def _read(ck, name: str) -> dict | None:
    path = folder(ck, name) / FILE
    try:
        key = (str(path), path.stat().st_mtime)
    except OSError:
        return None
    if key not in _files:
        try:
            _files[key] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
    raw = _files[key]
    return raw if raw.get("weights_sha256") == fingerprint(ck.model) else None


def source(ck, name: str) -> str | None:
    """``"assets/…/summaries.json, made with `python scripts/precompute.py --model en-fr`"`` when a summary file for
    exactly these weights exists (for a page to say where a number was read from)."""
    raw = _read(ck, name)
    if raw is None:
        return None
    path = folder(ck, name) / FILE
    try:
        shown = path.relative_to(PACKAGED.parents[1])
    except ValueError:
        shown = path.name
    return f"{shown}, made with `{raw.get('command') or COMMAND.format(name=name)}`"


def part(ck, name: str, key: str) -> dict | None:
    """The entry ``key`` of the model's summaries file as stored, when the file was made for exactly these weights
    (None: no file, other weights, or no such entry). For a part another module computes and checks (its own spec),
    e.g. :func:`core.find_heads.shipped_encoder_heads`."""
    entry = (_read(ck, name) or {}).get(key)
    return entry if isinstance(entry, dict) else None


# ------------------------------------------------------------------ JSON both ways
def _tensor(v):
    if v is None:
        return None
    nan = float("nan")
    if v and isinstance(v[0], list):
        return torch.tensor([[nan if x is None else x for x in row] for row in v])
    return torch.tensor([nan if x is None else x for x in v])


# ------------------------------------------------------------------ the coreference probe set
def probe_items(ck) -> list[coref.ProbeItem]:
    """Both sentences of every probe pair: a translator's own corpus's (test split), the tiny grammar's in French
    for any other model — the set the Coreference page scores."""
    data, lang = coref.corpus(ck), coref.language(ck)
    if data is None:
        from ..data import translation
        data, lang = translation, "fr"
    return [coref.ProbeItem(p.src, p.antecedent, p.candidates) for pair in data.probe_pairs(lang) for p in pair]


def coref_to_json(boards: dict, items) -> dict:
    """The ``coref`` entry of ``summaries.json``: the scoreboards as JSON with the SHA-256 and count of the
    probe sentences they were computed on."""
    return {"items_sha256": texts_sha(it.text for it in items), "n_items": len(items), "boards": jsonio.finite(boards)}


def coref_from_json(entry: dict) -> dict:
    """The scoreboards of a ``coref`` entry, ``share`` and ``rollout_share`` as tensors again (null → NaN)."""
    boards = {}
    for kind, b in entry["boards"].items():
        boards[kind] = dict(b) | {"share": _tensor(b["share"]), "rollout_share": _tensor(b["rollout_share"])}
    return boards


def coref_boards(ck, name: str, items) -> dict | None:
    """The shipped :func:`core.probes.coref.scoreboards` of ``items`` (None: no file for these weights and these
    sentences)."""
    raw = _read(ck, name)
    entry = (raw or {}).get("coref")
    if entry is None or entry.get("items_sha256") != texts_sha(it.text for it in items):
        return None
    return coref_from_json(entry)


# ------------------------------------------------------------------ head importance and pruning
def eval_spec(n: int = EVAL_N) -> dict:
    """The settings of the head-importance batch (``n`` items, seed 0, valid split, margin) a shipped summary
    must match."""
    return {"n": n, "seed": 0, "split": "valid", "measure": "margin"}


def compute_heads(ck, n: int = EVAL_N, progress=None) -> dict:
    """Importance of every head on the model's held-out batch (:func:`core.probes.heads.eval_batch`, ``n`` items)
    and the least-important-first pruning curve (translators: exact match and pronoun accuracy every ~1/6 of the
    heads). ``progress(k, n)``: k of the 2 × heads passes done."""
    batch, pairs = H.eval_batch(ck, n=n)
    total = len(H.all_heads(ck.model))
    tell = (lambda off: (lambda k, _n: progress(off + k, 2 * total))) if progress else (lambda off: None)
    imp = H.head_importance(ck.model, batch, progress=tell(0))
    quality = (lambda a: H.translation_quality(ck, pairs, a)) if pairs and hasattr(pairs[0], "tgt_pronoun") else None
    every = max(1, len(imp.ranking) // 6)
    curve = H.prune_curve(ck.model, batch, imp.least_first(), quality=quality, every=every, progress=tell(total))
    task = ck.meta.get("task", "")
    unit = ("sentence pairs" if quality is not None else "lines, 15 % of their tokens hidden" if task == "mlm"
            else "sequences" if pairs else "windows")
    return {"imp": imp, "curve": curve, "n": len(pairs) or batch.tgt_in.shape[0], "translation": quality is not None,
            "unit": unit}


def heads_to_json(res: dict, n: int = EVAL_N) -> dict:
    """The ``heads`` entry of ``summaries.json`` for a :func:`compute_heads` result: the importance and the
    pruning curve as JSON (each curve point keeps only the head it removed)."""
    imp = dataclasses.asdict(res["imp"])
    return {"spec": eval_spec(n), "n": res["n"], "unit": res["unit"], "translation": res["translation"],
            "importance": jsonio.finite(imp),  # each point stores the head it removed; the removed list is rebuilt
            "curve": jsonio.finite([{"kept": p.kept, "last": list(p.removed[-1]) if p.removed else None, "loss": p.loss,
                                 "acc": p.acc, "metrics": p.metrics} for p in res["curve"]])}


def heads_from_json(entry: dict) -> dict:
    """The :func:`compute_heads` result of a ``heads`` entry: tensors, :class:`~core.probes.heads.Importance`
    and the pruning curve with every point's removed list rebuilt."""
    imp = dict(entry["importance"])
    imp["delta"], imp["margin_drop"] = _tensor(imp["delta"]), _tensor(imp["margin_drop"])
    imp["ranking"] = [(n, int(h), float(s)) for n, h, s in imp["ranking"]]
    curve, removed = [], []
    for p in entry["curve"]:
        if p["last"] is not None:
            removed.append((p["last"][0], int(p["last"][1])))
        curve.append(H.PrunePoint(p["kept"], list(removed), p["loss"], p["acc"], p["metrics"]))
    return {"imp": H.Importance(**imp), "curve": curve, "n": entry["n"], "translation": entry["translation"],
            "unit": entry["unit"]}


def heads_summary(ck, name: str, n: int = EVAL_N) -> dict | None:
    """The shipped :func:`compute_heads` (None: no file for these weights and this evaluation batch)."""
    entry = (_read(ck, name) or {}).get("heads")
    if entry is None or entry.get("spec") != eval_spec(n):
        return None
    return heads_from_json(entry)


# ------------------------------------------------------------------ GQA / MQA conversion
def gqa_options(cfg) -> list[int]:
    """The key/value head counts the Heads page offers a multi-head model (half the heads, and one)."""
    if cfg.kv_heads != cfg.n_heads or cfg.n_heads <= 1:
        return []
    return [g for g in dict.fromkeys([max(1, cfg.n_heads // 2), 1]) if cfg.n_heads % g == 0]


def compute_gqa(ck, g: int, n: int = EVAL_N) -> tuple[float, float]:
    """Held-out (loss, token accuracy) of the model converted to ``g`` key/value heads (mean-pooled)."""
    batch, _ = H.eval_batch(ck, n=n)
    return H.batch_loss(H.to_gqa(ck.model, g), batch)


def gqa_loss(ck, name: str, g: int, n: int = EVAL_N) -> tuple[float, float] | None:
    """The shipped :func:`compute_gqa` (None when not shipped for these weights)."""
    entry = (_read(ck, name) or {}).get("gqa")
    if entry is None or entry.get("spec") != eval_spec(n) or str(g) not in entry["loss"]:
        return None
    loss, acc = entry["loss"][str(g)]
    return float(loss), float(acc)


# ------------------------------------------------------------------ magnitude pruning of the weights
def weights_spec(n: int = EVAL_N) -> dict:
    """The settings a shipped sparsity curve must match: the head-importance batch and the sparsity levels."""
    return eval_spec(n) | {"levels": list(compress.LEVELS)}


def weights_to_json(points: list, n: int = EVAL_N) -> dict:
    """The ``weights`` entry of ``summaries.json`` for a :func:`compress.sparsity_curve` result."""
    return {"spec": weights_spec(n), "curve": jsonio.finite([dataclasses.asdict(p) for p in points])}


def weights_summary(ck, name: str, n: int = EVAL_N) -> list | None:
    """The shipped :func:`compress.sparsity_curve` (None when not shipped for these weights and this batch)."""
    entry = (_read(ck, name) or {}).get("weights")
    if entry is None or entry.get("spec") != weights_spec(n):
        return None
    return [compress.SparsityPoint(**p) for p in entry["curve"]]


def spans_spec(n: int = EVAL_N, mass: float = 0.9, quantile: float = 0.9) -> dict:
    """The settings a shipped span study must match: the head-importance batch, the mass and the quantile."""
    return eval_spec(n) | {"mass": mass, "quantile": quantile}


def spans_to_json(res, n: int = EVAL_N) -> dict:
    """The ``spans`` entry of ``summaries.json`` for a :func:`compress.span_experiment` result."""
    body = dataclasses.asdict(res) | {"spans": {name: r.tolist() for name, r in res.spans.items()}}
    return {"spec": spans_spec(n, res.mass, res.quantile), "result": jsonio.finite(body)}


def spans_summary(ck, name: str, n: int = EVAL_N):
    """The shipped :func:`compress.span_experiment` (None when not shipped for these weights and this batch)."""
    entry = (_read(ck, name) or {}).get("spans")
    if entry is None or entry.get("spec") != spans_spec(n):
        return None
    r = dict(entry["result"])
    r["spans"] = {k: torch.tensor(v, dtype=torch.long) for k, v in r["spans"].items()}
    for key in ("full", "cut", "uniform"):
        r[key] = tuple(r[key])
    return compress.SpanResult(**r)


# ------------------------------------------------------------------ few-shot prompting (a GPT-style model)
def prompting_summary(ck, name: str) -> dict | None:
    """The shipped :func:`core.inference.prompting.all_curves` (None when not shipped for these weights and these
    tasks)."""
    entry = (_read(ck, name) or {}).get("prompting")
    if entry is None or entry.get("spec") != prompting.curve_spec():
        return None
    return entry


# ------------------------------------------------------------------ verbatim copying (a GPT-style model)
def verbatim_summary(ck, name: str) -> dict | None:
    """The shipped :func:`core.inference.verbatim.compare` (greedy against sampling on held-out prompts), or None
    when not shipped for these weights and these settings."""
    entry = (_read(ck, name) or {}).get("verbatim")
    if entry is None or entry.get("spec") != verbatim.compare_spec(ck.meta.get("task", "")):
        return None
    return entry


# ------------------------------------------------------------------ building the file
PARTS = ("coref", "coref_check", "heads", "gqa", "weights", "spans", "prompting", "verbatim")


def build(ck, name: str, parts=PARTS, log=None) -> dict:
    """Every summary of ``parts`` the model supports, as the JSON object :func:`write` stores."""
    say = log or (lambda msg: None)
    out: dict = {"weights_sha256": fingerprint(ck.model), "command": COMMAND.format(name=name)}
    if "coref_check" in parts and ck.model.cfg.kind != "decoder-only":  # a small part a test recomputes
        few = probe_items(ck)[:CHECK_ITEMS]
        out["coref_check"] = coref_to_json(coref.scoreboards(ck, few), few)
    if "coref" in parts and ck.model.cfg.kind != "decoder-only":
        items = probe_items(ck)

        def tick(k, n, _partial=None):
            if k % 20 == 0 or k == n:
                say(f"coref: {k} of {n} probe sentences")
        out["coref"] = coref_to_json(coref.scoreboards(ck, items, progress=tick), items)
    if "heads" in parts:
        try:
            def tick(k, n):
                if k % 16 == 0 or k == n:
                    say(f"heads: {k} of {n} passes")
            out["heads"] = heads_to_json(compute_heads(ck, progress=tick))
        except ValueError as e:  # no evaluation data for this task
            say(f"heads: skipped ({e})")
    if "gqa" in parts and gqa_options(ck.model.cfg):
        try:
            out["gqa"] = {"spec": eval_spec(), "loss": {str(g): list(compute_gqa(ck, g))
                                                        for g in gqa_options(ck.model.cfg)}}
        except ValueError as e:
            say(f"gqa: skipped ({e})")
    if "weights" in parts:
        try:
            out["weights"] = weights_to_json(compress.sparsity_curve(ck, n=EVAL_N))
        except ValueError as e:
            say(f"weights: skipped ({e})")
    if "spans" in parts:
        try:
            out["spans"] = spans_to_json(compress.span_experiment(ck, n=EVAL_N))
        except ValueError as e:
            say(f"spans: skipped ({e})")
    if "prompting" in parts and ck.model.cfg.kind == "decoder-only":
        def tick(k, n):
            if k % 80 == 0 or k == n:
                say(f"prompting: {k} of {n} prompts")
        out["prompting"] = jsonio.finite(prompting.all_curves(ck.model, ck.tokenizer, progress=tick))
    if "verbatim" in parts and ck.model.cfg.kind == "decoder-only":
        try:
            index = verbatim.training_index(ck, log=lambda msg: say(f"verbatim: {msg}"))
            out["verbatim"] = jsonio.finite(verbatim.compare(ck, index, progress=lambda k, n: say(
                f"verbatim: {k} of {n} prompts") if k % 4 == 0 or k == n else None))
        except ValueError as e:
            say(f"verbatim: skipped ({e})")
    return out


def write(ck, name: str, summary: dict) -> Path:
    """Store ``summary`` (from :func:`build`) as ``summaries.json`` in :func:`folder`; the parts of a file already
    there for the same weights that ``summary`` does not recompute are kept."""
    path = folder(ck, name) / FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        old = {}
    if old.get("weights_sha256") == summary.get("weights_sha256"):
        summary = old | summary
    path.write_text(json.dumps(jsonio.finite(summary), ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8")
    return path
