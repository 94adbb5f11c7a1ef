"""``python -m core.evaluate --model MODEL (--pairs FILE.tsv | --split valid|test [--corpus generated|real])``.

One evaluator for every translation model (en-fr, en-de and the ``-tiny`` ones, bundled or trained): it reads the
model's own corpus (:func:`core.data.corpus_for` of its task), so the broad translators' plural pronouns (ils / elles)
count, and the tiny ones are scored with their small grammar. Sources:

* ``--pairs FILE.tsv``: ``source<TAB>reference`` lines of your own (at most :data:`MAX_BYTES`);
* ``--split valid|test --corpus generated``: the generated corpus's split (``--n`` pairs, seed 7);
* ``--split valid|test --corpus real``: the human translations of :mod:`core.data.parallel` (broad models only).

Prints one line per sentence, then (last line) JSON: ``n``, sacrebleu ``bleu`` and ``chrf``, ``exact_match``,
``pronoun_accuracy`` with ``by_pronoun`` (reference pronoun → [right, of]), and an attention-based coreference score
where the corpus's grammar parses the sentence: per (layer, head) the share of sentences whose strongest link goes
to the correct antecedent — ``coreference`` from "it" through encoder self-attention, ``coreference_cross`` from the
decoder position that predicts the target pronoun through cross-attention (see core.probes.coref).
"""
from __future__ import annotations

import sys

import torch

from .data import corpus_for, corpus_of, lang_of, parallel_of, reference_scores
from .inference.decoding import greedy_many
from .io import checkpoint, cli, jsonio, registry
from .io.tokenizer import EOS
from .probes.coref import ProbeItem, scoreboards
from .training.tasks import TRANSLATION

MAX_BYTES = 10_000_000  # a pairs file larger than this is refused before it is read


def read_pairs(path) -> list[tuple[str, str]]:
    """The ``(source, reference)`` pairs of a ``source<TAB>reference`` file (blank lines skipped); ValueError
    for a malformed line, text that is not UTF-8, or a file with no pairs."""
    with open(path, "rb") as f:
        raw = f.read(MAX_BYTES + 1)  # bounded: /dev/zero or a huge file is refused, not read whole
    if len(raw) > MAX_BYTES:
        raise ValueError(f"{path} is larger than {MAX_BYTES:,} bytes; split it into smaller files")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text") from None
    pairs = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0].strip():
            raise ValueError(f"{path}:{n}: expected 'source<TAB>reference' (a line with one tab), got "
                             f"{len(parts)} column{'s' if len(parts) != 1 else ''}")
        pairs.append((parts[0].strip(), parts[1].strip()))
    if not pairs:
        raise ValueError(f"{path} holds no sentence pairs")
    return pairs


@torch.no_grad()
def translate_ids(ck, sources: list[str], batch: int = 64) -> list[list[int]]:
    """Greedy translations of ``sources`` by checkpoint ``ck`` as token ids (no BOS / EOS), ``batch`` sentences at
    a time (each source cut to fit ``max_len``)."""
    model, tok = ck.model, ck.tokenizer
    rows = [tok.encode(s)[: model.cfg.max_len - 1] + [EOS] for s in sources]
    return greedy_many(model, rows, max_new=model.cfg.max_len - 1, batch=batch)


def translate_all(ck, sources: list[str], batch: int = 64) -> list[str]:
    """Greedy translations of ``sources`` by checkpoint ``ck`` as text."""
    return [ck.tokenizer.decode(ids) for ids in translate_ids(ck, sources, batch)]


def evaluate(ck, pairs: list[tuple[str, str]], task: str | None = None) -> tuple[list[dict], dict]:
    """Translate every pair with ``ck``: per-sentence rows (source, reference, hypothesis, exact) and the metrics
    (BLEU, chrF, exact match, pronoun accuracy overall and per reference pronoun, coreference head scores where the
    model's corpus parses the sentence). ``task`` defaults to the model's own (``meta.task``)."""
    task = task or ck.meta.get("task", "")
    data, lang = corpus_for(task), lang_of(task)  # its grammar (pronoun_of, pair_for): the same in every release
    hyps = translate_all(ck, [s for s, _ in pairs])
    metrics = reference_scores([r for _, r in pairs], hyps)
    by: dict[str, list[int]] = {}
    items = []
    for (src, ref), hyp in zip(pairs, hyps):
        pron = data.pronoun_of(ref, lang)
        if pron:
            cell = by.setdefault(pron, [0, 0])
            cell[0] += data.pronoun_of(hyp, lang) == pron
            cell[1] += 1
        try:
            p = data.pair_for(src, lang)
        except ValueError:
            continue
        if p.antecedent and len(p.candidates) > 1:
            items.append(ProbeItem(src, p.antecedent, p.candidates, reference=ref))
    n_pron = sum(n for _, n in by.values())
    metrics.update(pronoun_accuracy=sum(r for r, _ in by.values()) / n_pron if n_pron else None, n_pronoun=n_pron,
                   by_pronoun=dict(sorted(by.items())))
    for kind, board in scoreboards(ck, items).items():
        if board["share"] is not None:
            metrics["coreference" if kind == "self" else f"coreference_{kind}"] = {
                "n": board["n"], "best_heads": board["best"],
                "share": [[round(float(x), 4) for x in row] for row in board["share"]],
                "rollout_share": [round(float(x), 4) for x in board["rollout_share"]]}
    rows = [{"source": s, "reference": r, "hypothesis": h, "exact": h == r} for (s, r), h in zip(pairs, hyps)]
    return rows, metrics


def corpus_pairs(meta: dict, split: str, corpus: str, n: int | None,
                 release: int | None = None) -> list[tuple[str, str]]:
    """``(source, reference)`` pairs of a model's own corpus (``meta``: its checkpoint's): the generated ``split``
    (``n`` pairs, seed 7) or the split of the human translations it read (every pair, or an even sample of ``n``);
    ``release`` another frozen release of them (to compare models that read different ones on the same pairs)."""
    task = meta["task"]
    lang = lang_of(task)
    if corpus == "generated":
        return [(p.src, p.tgt) for p in corpus_of(meta).generate(lang, split, n=n or 300, seed=7)]
    try:
        text = parallel_of(meta if release is None else {**meta, "parallel_release": release})
    except ValueError as e:
        raise ValueError(f"{e}; use --corpus generated") from None
    real = text.pairs(split)
    return real[::max(1, len(real) // n)][:n] if n else real


def main(argv=None) -> int:
    """The ``python -m core.evaluate`` command line: one line per sentence, then the metrics as JSON; returns
    the exit code (2 for an unusable model or file)."""
    ap = cli.Parser(prog="python -m core.evaluate", description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="bundled short name (en-fr, en-de-tiny...) or a checkpoint folder")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--pairs", help="TSV file: source<TAB>reference per line")
    src.add_argument("--split", choices=("valid", "test"), help="a split of the model's own corpus")
    ap.add_argument("--corpus", choices=("generated", "real"), default="generated",
                    help="with --split: the generated sentences or the human translations (default generated)")
    ap.add_argument("--n", type=int, default=None, help="with --split: evaluate this many pairs (default: generated "
                    "300, real all)")
    ap.add_argument("--parallel-release", type=int, default=None, help="with --corpus real: this frozen release of "
                    "the human translations instead of the one the model read (compare models on the same pairs)")
    args = ap.parse_args(argv)
    try:
        if args.n is not None and not 1 <= args.n <= 100_000:
            raise ValueError(f"--n must be between 1 and 100,000, got {args.n}")
        ck = registry.load(args.model)
        task = ck.meta.get("task", "")
        if ck.model.cfg.kind != "encoder-decoder" or task not in TRANSLATION:
            raise ValueError(f"{args.model} is a {ck.model.cfg.kind} model of task {task!r}; evaluation needs a "
                             f"translation model ({', '.join(TRANSLATION)})")
        if args.pairs:
            pairs = read_pairs(args.pairs)
        else:
            pairs = corpus_pairs(ck.meta, args.split, args.corpus, args.n, args.parallel_release)
        rows, metrics = evaluate(ck, pairs, task)
    except (ValueError, OSError, checkpoint.CheckpointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for r in rows:
        print(f"{'OK ' if r['exact'] else 'ERR'} {r['source']}\t{r['hypothesis']}")
    print(jsonio.dumps(metrics, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
