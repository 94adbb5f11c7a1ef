"""Checkpoints: one folder = ``model.safetensors`` + ``config.json`` + ``tokenizer.json`` (+ ``card.md``)
(+ ``words.json``: the lower-cased words of the training source text, ``{"source": ..., "words": [sorted]}``,
which :mod:`core.inference.coverage` checks a user's sentence against).

Every model the lab writes uses this one format. ``config.json`` is ``{"format", "architecture", "model", "meta"}``:
``architecture`` names the class that reads ``model`` (``"transformer"``, :class:`core.model.Transformer`, the
default when absent; ``"transformer-xl"``, :class:`core.variants.xl.XLModel`), so a folder is never opened as
the wrong model and the model list (:mod:`core.io.registry`) shows only the ones the pages can run.

Nothing is ever unpickled. A folder is written next to its destination and swapped in by
renames, so a kill at any moment leaves either the old or the new checkpoint, whole.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from ..config import ModelConfig
from ..model import Transformer
from . import jsonio
from .tokenizer import Tokenizer

FORMAT = "attention-lab/1"
TRANSFORMER = "transformer"  # config.json's "architecture" when it has none
WEIGHTS, CONFIG, TOKENIZER, CARD = "model.safetensors", "config.json", "tokenizer.json", "card.md"
WORDS = "words.json"
PATCHING = "patching.json"  # core.probes.patch_board's scoreboard, kept beside the weights
STATE_WEIGHTS, STATE_JSON = "train_state.safetensors", "train_state.json"  # core.training.trainer's resume state
# Who sees a user model: {"sharing": "private" | "shared"}, written beside a run trained in the app (app/rooms.py);
# a folder without it (the CLI's, older runs) is shared.
SHARING = "sharing.json"
# Every file a checkpoint folder may hold. A folder holding anything else is not ours: nothing here renames,
# replaces or deletes it (see :func:`check_replaceable`).
OWN_FILES = frozenset({WEIGHTS, CONFIG, TOKENIZER, CARD, WORDS, PATCHING, STATE_WEIGHTS, STATE_JSON, SHARING})
# The file :func:`write_dir_atomically` writes into the folders it makes beside a checkpoint (``.NAME.tmp-PID-…``
# while it fills one, ``.NAME.old`` while it swaps): a leftover folder is ours to delete only when it holds this
# file, whatever else its file names look like (a Hugging Face folder has config.json + model.safetensors too).
LEFTOVER_MARKER = ".attention-lab-leftover"
PICKLE_MAGIC = (b"\x80", b"PK\x03\x04")
MAX_CONFIG_BYTES = 4 * 2 ** 20  # a config.json (model fields + meta) is a few kilobytes  # pickle protocol 2+, torch.save's zip container


class CheckpointError(ValueError):
    """A checkpoint that cannot be used; the message says why."""


@dataclass
class Checkpoint:
    """A loaded model with its tokenizer, metadata (``meta``), the folder it came from and the words of its
    training source text."""
    model: Transformer
    tokenizer: Tokenizer
    meta: dict = field(default_factory=dict)  # task, training summary, metrics
    path: Path | None = None
    known_words: frozenset | None = None  # words of the training source text (words.json); None: not recorded


def _weights(model: Transformer) -> dict[str, torch.Tensor]:
    state = model.state_dict()
    if model.cfg.tie_embeddings:
        state.pop("lm_head.weight", None)  # the same tensor as embed.tokens.weight
    return {k: v.detach().cpu().contiguous() for k, v in state.items()}


def _fsync_write(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _foreign(folder: Path) -> list[str]:
    """What in ``folder`` no Attention Lab checkpoint writes (sub-folders and links included); [] when it is ours."""
    out = []
    for p in sorted(folder.iterdir()):
        base = p.name[:-4].removeprefix(".") if p.name.endswith(".tmp") else None  # our write-then-rename names
        own = p.name in OWN_FILES or base in OWN_FILES or p.name == LEFTOVER_MARKER
        if not own or p.is_symlink() or not p.is_file():
            out.append(p.name + ("/" if p.is_dir() and not p.is_symlink() else ""))
    return out


def _is_our_config(folder: Path) -> bool:
    try:
        config = json.loads((folder / CONFIG).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(config, dict) and config.get("format") == FORMAT


def check_replaceable(dest) -> None:
    """Refuse (:class:`CheckpointError`) unless ``dest`` may be replaced by a checkpoint: it does not exist, or it is
    an empty folder, or it is one of our checkpoint folders (an Attention Lab ``config.json`` and nothing but
    :data:`OWN_FILES`). A file, a link or anyone else's folder is never renamed, replaced or deleted."""
    dest = Path(dest)
    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        raise CheckpointError(f"{dest} exists and is not a folder; refusing to replace it (choose a new folder)")
    if not dest.exists() or not any(dest.iterdir()):
        return
    foreign = _foreign(dest)
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise CheckpointError(f"{dest} is not an Attention Lab checkpoint folder (it holds {shown}); refusing to "
                              "replace it: choose a new or empty folder")
    if not _is_our_config(dest):
        raise CheckpointError(f"{dest} is not an Attention Lab checkpoint folder (no Attention Lab {CONFIG}); "
                              "refusing to replace it: choose a new or empty folder")


def _mark(folder: Path) -> None:
    """Say, inside ``folder``, that it is a temporary or backup folder of ours (:data:`LEFTOVER_MARKER`)."""
    _fsync_write(folder / LEFTOVER_MARKER, f"made by core.io.checkpoint.write_dir_atomically (process {os.getpid()}); "
                                           "safe to delete\n".encode())


def _remove_marked(folder: Path) -> None:
    """Delete a folder of ours with its marker last: ``shutil.rmtree`` takes files in directory order, so a kill in
    the middle could leave a half-deleted ``.NAME.old`` without its marker, which the next write then refused as
    someone else's (seen once in the suite's random-SIGKILL test)."""
    for p in folder.iterdir():
        if p.name == LEFTOVER_MARKER:
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
    (folder / LEFTOVER_MARKER).unlink(missing_ok=True)
    try:
        folder.rmdir()
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)


def _ours_to_remove(folder: Path) -> bool:
    """A leftover folder of ours (a half-written temporary, a swapped-out old checkpoint): it holds the marker
    :func:`write_dir_atomically` wrote into it (a regular file, not a link) and nothing but our files. File names
    alone never decide: anyone's model folder can hold a config.json and a model.safetensors.

    An empty folder counts as ours too: deleting it loses nothing, and :func:`_remove_marked` must unlink the marker
    before the folder can go, so a kill between the two leaves exactly that (seen once in the suite's random-SIGKILL
    test, two stops after the marker was moved last)."""
    if not folder.is_dir() or folder.is_symlink():
        return False
    if not any(folder.iterdir()):
        return True
    marker = folder / LEFTOVER_MARKER
    return marker.is_file() and not marker.is_symlink() and not _foreign(folder)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def clean_temporaries(dest) -> list[Path]:
    """Remove the temporary folders a killed writer of ``dest`` left behind (``.NAME.tmp-PID-…`` whose process is
    gone) when they hold our marker (:data:`LEFTOVER_MARKER`) and only our files; any other folder of that name is
    left alone. Returns what was removed."""
    dest = Path(dest)
    removed = []
    if not dest.parent.is_dir():
        return removed
    for p in dest.parent.glob(f".{dest.name}.tmp-*"):
        pid = p.name[len(dest.name) + 6:].split("-", 1)[0]
        if pid.isascii() and pid.isdigit() and pid != "0" and "-" in p.name[len(dest.name) + 6:] \
                and _pid_alive(int(pid)):
            continue  # a writer that is still running
        if _ours_to_remove(p):
            _remove_marked(p)
            removed.append(p)
    return removed


def write_dir_atomically(dest, fill) -> Path:
    """Create ``dest`` by calling ``fill(tmp_dir)`` on a sibling folder, then swapping it in.

    Only a missing or empty folder, or one of our checkpoint folders, is replaced (:func:`check_replaceable`);
    temporaries of an earlier, killed writer are removed first (:func:`clean_temporaries`)."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    recover(dest)
    check_replaceable(dest)
    check_leftovers(dest)
    old = dest.with_name(f".{dest.name}.old")
    clean_temporaries(dest)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-{os.getpid()}-", dir=dest.parent))
    try:
        _mark(tmp)  # first: a kill at any later moment leaves a folder the next writer knows as ours
        fill(tmp)
        if old.exists():
            _remove_marked(old)  # check_leftovers above: it is ours
        if dest.exists():
            os.replace(dest, old)
            _mark(old)  # a kill before this line leaves an unmarked .old: recover() still brings it back
        os.replace(tmp, dest)
        (dest / LEFTOVER_MARKER).unlink(missing_ok=True)
        if old.exists():
            _remove_marked(old)
    finally:
        if tmp.exists():
            _remove_marked(tmp)
    return dest


def check_leftovers(dest) -> None:
    """Refuse (:class:`CheckpointError`) when ``.NAME.old`` beside ``dest`` is in the way of a write and is not a
    leftover of ours (:func:`_ours_to_remove`): it is never deleted. A writer calls this before any work."""
    dest = Path(dest)
    old = dest.with_name(f".{dest.name}.old")
    if (old.exists() or old.is_symlink()) and not _ours_to_remove(old):
        raise CheckpointError(f"{old} is in the way and is not a folder this program left behind (it has no "
                              f"{LEFTOVER_MARKER}); refusing to delete it: move it away, or write the checkpoint elsewhere")


def recover(path) -> Path:
    """If a kill fell between the two renames of :func:`write_dir_atomically`, put the old folder back (only when
    it is one of ours)."""
    path = Path(path)
    old = path.with_name(f".{path.name}.old")
    if (not path.exists() and not path.is_symlink() and old.is_dir() and not old.is_symlink() and not _foreign(old)
            and _is_our_config(old)):  # a move, never a deletion: an unmarked .old of ours comes back too
        os.replace(old, path)
        (path / LEFTOVER_MARKER).unlink(missing_ok=True)
    return path


def words_json(words, source: str) -> bytes:
    """The bytes of a ``words.json``: ``{"source": source, "words": [sorted, lower-cased, unique]}``."""
    return json.dumps({"source": str(source), "words": sorted({str(w).lower() for w in words})},
                      ensure_ascii=False, indent=0, allow_nan=False).encode()


def write_words(path, words, source: str) -> Path:
    """Add (or replace) ``words.json`` in an existing checkpoint folder, atomically (a rename)."""
    path = Path(path)
    if not (path / CONFIG).is_file():
        raise CheckpointError(f"no checkpoint folder at {path}")
    tmp = path / f".{WORDS}.tmp"
    _fsync_write(tmp, words_json(words, source))
    os.replace(tmp, path / WORDS)
    return path / WORDS


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError(f"duplicate key {next(k for k in keys if keys.count(k) > 1)!r}")
    return dict(pairs)


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def read_words(path) -> frozenset | None:
    """The known words in a checkpoint folder's ``words.json`` (``None`` when it has none); a malformed file is
    refused with a :class:`CheckpointError`."""
    path = Path(path)
    try:
        raw = (path / WORDS).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as e:
        raise CheckpointError(f"{path.name}: {WORDS} is not UTF-8 ({e})") from None
    try:
        data = json.loads(raw, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except ValueError as e:
        raise CheckpointError(f"{path.name}: {WORDS} is not valid JSON ({e})") from None
    if (not isinstance(data, dict) or set(data) != {"source", "words"} or not isinstance(data["source"], str)
            or not isinstance(data["words"], list)
            or not all(isinstance(w, str) and w and not any(c.isspace() for c in w) for w in data["words"])):
        raise CheckpointError(f'{path.name}: {WORDS} must be {{"source": "<text>", "words": ["word", ...]}} '
                              "with each word a non-empty string without spaces")
    return frozenset(w.lower() for w in data["words"])


def save(path, model: Transformer, tokenizer: Tokenizer, meta: dict | None = None, card: str | None = None,
         extra_files: dict[str, bytes] | None = None, known_words=None, words_source: str = "") -> Path:
    """Write a checkpoint folder atomically. ``extra_files`` (name → bytes) travel with it (e.g. training state);
    ``known_words`` (the training source text's words; described by ``words_source``) go to ``words.json``."""
    if tokenizer.vocab_size != model.cfg.vocab_size:
        raise CheckpointError(f"tokenizer has {tokenizer.vocab_size} tokens but the model expects {model.cfg.vocab_size}")
    return write(path, _weights(model), model.cfg.to_dict(), tokenizer, meta, card, extra_files=extra_files,
                 known_words=known_words, words_source=words_source)


def write(path, weights: dict[str, torch.Tensor], model_config: dict, tokenizer: Tokenizer | None,
          meta: dict | None = None, card: str | None = None, *, architecture: str = TRANSFORMER,
          extra_files: dict[str, bytes] | None = None, known_words=None, words_source: str = "") -> Path:
    """The folder of any architecture's model: ``weights`` (name → tensor), its config's fields, tokenizer (if it
    has one), meta, card; written next to ``path`` and swapped in (:func:`write_dir_atomically`)."""
    config = {"format": FORMAT, "architecture": architecture, "model": model_config, "meta": meta or {}}
    foreign = sorted(set(extra_files or {}) - OWN_FILES)
    if foreign:
        raise CheckpointError(f"{', '.join(foreign)}: not a checkpoint file (a checkpoint holds only "
                              f"{', '.join(sorted(OWN_FILES))})")
    weights = {k: v.detach().cpu().contiguous() for k, v in weights.items()}

    def fill(tmp: Path):
        save_file(weights, str(tmp / WEIGHTS), metadata={"format": FORMAT})
        _fsync_write(tmp / CONFIG, jsonio.dumps(config, indent=2).encode())  # strict: a NaN metric is null
        if tokenizer is not None:
            _fsync_write(tmp / TOKENIZER, tokenizer.to_str().encode())
        if card:
            _fsync_write(tmp / CARD, card.encode())
        if known_words is not None:
            _fsync_write(tmp / WORDS, words_json(known_words, words_source))
        for name, data in (extra_files or {}).items():
            _fsync_write(tmp / name, data)

    return write_dir_atomically(path, fill)


def _refuse_pickle(path: Path) -> None:
    """A safetensors file starts with an 8-byte header length and then ``{``; a pickle never does."""
    with open(path, "rb") as f:
        head = f.read(9)
    if head[8:9] == b"{":
        return
    if any(head.startswith(m) for m in PICKLE_MAGIC):
        raise CheckpointError(f"{path.name} is a pickle / torch.save file; Attention Lab only loads safetensors "
                              "and never unpickles (that would run arbitrary code)")


def read_config(path, architecture: str = TRANSFORMER) -> dict:
    """The checked ``config.json`` of a folder holding a model of ``architecture``."""
    path = recover(path)
    if not path.is_dir():
        raise CheckpointError(f"no checkpoint folder at {path}")
    try:
        if (path / CONFIG).stat().st_size > MAX_CONFIG_BYTES:
            raise CheckpointError(f"{path.name}: {CONFIG} is larger than {MAX_CONFIG_BYTES:,} bytes")
        config = json.loads((path / CONFIG).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path.name}: {CONFIG} is missing") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path.name}: {CONFIG} is not valid JSON ({e})") from None
    if not isinstance(config, dict) or config.get("format") != FORMAT or not isinstance(config.get("model"), dict):
        raise CheckpointError(f"{path.name}: {CONFIG} is not an Attention Lab config (expected format {FORMAT!r})")
    found = config.get("architecture", TRANSFORMER)
    if found != architecture:
        where = OPENED_BY.get(found) if isinstance(found, str) else None
        raise CheckpointError(f"{path.name} holds a {found!r} model, not a {architecture!r} one"
                              + (f"; {where} opens it" if where else ""))
    return config


# Where each architecture's folders are opened, for the message that refuses a folder opened as another one.
OPENED_BY = {TRANSFORMER: "core.io.checkpoint.load (every page's model list)",
             "transformer-xl": "the Transformer-XL page (core.variants.xl.load)"}


def architecture(path) -> str | None:
    """The architecture a checkpoint folder's ``config.json`` names (``"transformer"`` when it names none), or
    ``None`` when there is no readable Attention Lab config."""
    try:
        config = json.loads((Path(path) / CONFIG).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        return None
    found = config.get("architecture", TRANSFORMER)
    return found if isinstance(found, str) else None


# The meta fields something reads, and their types; other fields may hold any JSON value.
META_TYPES = {"task": str, "command": str, "name": str, "package": str, "mlm_head": str, "pooling": str,
              "step": int, "parameters": int, "max_seq_length": int, "metrics": dict, "summary": dict,
              "heldout": dict}
_TYPE_WORDS = {str: "a string", int: "an integer", dict: "an object"}
# sections of meta whose every value a page formats as a number (/mlm's "held-out masked accuracy 61.2 %")
NUMERIC_META = ("heldout", "metrics")


def check_meta(meta, where: str = "meta") -> dict:
    """``meta`` (a config.json's ``"meta"``) when it is an object whose known fields have their types; otherwise
    :class:`CheckpointError` naming the field."""
    if not isinstance(meta, dict):
        raise CheckpointError(f"{where} must be a JSON object, got {type(meta).__name__}")
    for key, want in META_TYPES.items():
        if key in meta and meta[key] is not None and (
                not isinstance(meta[key], want) or (want is int and isinstance(meta[key], bool))):
            raise CheckpointError(f"{where}: {key!r} must be {_TYPE_WORDS[want]}, got {type(meta[key]).__name__}")
    for section in NUMERIC_META:
        for key, value in (meta.get(section) or {}).items():
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not math.isfinite(value)):
                shown = value if isinstance(value, float) else type(value).__name__
                raise CheckpointError(f"{where}: {section}.{key} must be a finite number, got {shown}")
    return meta


def check_finite(state: dict[str, torch.Tensor], where: str) -> None:
    """Refuse weights holding NaN or infinity: every number a model computes from them (and every JSON printed from
    those numbers) would be meaningless."""
    bad = [k for k, v in state.items() if v.is_floating_point() and not bool(torch.isfinite(v).all())]
    if bad:
        raise CheckpointError(f"{where} holds non-finite weights (NaN or infinity) in {', '.join(sorted(bad)[:3])}"
                              + (f" and {len(bad) - 3} more tensors" if len(bad) > 3 else ""))


def read_weights(path: Path, parameters: int) -> dict[str, torch.Tensor]:
    """``model.safetensors`` of a folder whose config holds ``parameters`` numbers: never a pickle, never larger than
    such a model can be (float64 at most, plus the header), every number finite."""
    weights = path / WEIGHTS
    if not weights.exists():
        others = [p.name for p in path.iterdir() if p.suffix in (".pt", ".pth", ".bin", ".pkl", ".ckpt")]
        hint = f" (found {', '.join(others)}: pickle formats are refused)" if others else ""
        raise CheckpointError(f"{path.name}: {WEIGHTS} is missing{hint}")
    _refuse_pickle(weights)
    size, ceiling = weights.stat().st_size, 8 * parameters + 2 ** 26
    if size > ceiling:
        raise CheckpointError(f"{path.name}: {WEIGHTS} is {size:,} bytes, more than a model of this config can "
                              f"hold ({parameters:,} parameters)")
    try:
        state = load_file(str(weights))
    except (SafetensorError, OSError, ValueError) as e:
        raise CheckpointError(f"{path.name}: {WEIGHTS} is truncated or corrupt ({e})") from None
    check_finite(state, f"{path.name}: {WEIGHTS}")
    return state


def check_matches(path: Path, state: dict[str, torch.Tensor], expected: dict[str, torch.Tensor]) -> None:
    """Refuse weights whose names or shapes differ from what the config's model holds (``expected``)."""
    _check_shapes(path, {k: tuple(v.shape) for k, v in state.items()}, {k: tuple(v.shape) for k, v in expected.items()})


def _check_shapes(path: Path, found: dict[str, tuple], expected: dict[str, tuple]) -> None:
    missing = sorted(set(expected) - set(found))
    unexpected = sorted(set(found) - set(expected))
    if missing or unexpected:
        raise CheckpointError(f"{path.name}: weights do not match the config: "
                              f"missing {missing[:5]}, unexpected {unexpected[:5]}")
    for k, v in expected.items():
        if found[k] != v:
            raise CheckpointError(f"{path.name}: shape mismatch for {k}: file {found[k]}, config expects {v}")


def _config_meta_tokenizer(path: Path) -> tuple[ModelConfig, dict, Tokenizer]:
    """A folder's checked config (field by field: :class:`ModelConfig`), meta (typed fields) and tokenizer (its
    vocabulary the config's size)."""
    config = read_config(path)
    try:
        cfg = ModelConfig.from_dict(config["model"])
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{path.name}: invalid model config: {e}") from None
    meta = check_meta(config.get("meta", {}), f"{path.name}: {CONFIG} meta")
    tokenizer = Tokenizer.load(path / TOKENIZER)
    if tokenizer.vocab_size != cfg.vocab_size:
        raise CheckpointError(f"{path.name}: vocabulary mismatch: tokenizer.json has {tokenizer.vocab_size} tokens, "
                              f"the config says {cfg.vocab_size}")
    return cfg, meta, tokenizer


MAX_HEADER_BYTES = 2 ** 26  # a safetensors header (names, shapes, offsets) is a few kilobytes


def _weight_shapes(path: Path) -> dict[str, tuple]:
    """The tensor names and shapes in ``model.safetensors``, read from its header alone; refuses a pickle and a file
    whose size is not exactly what its header describes (truncated, or bytes appended)."""
    weights = path / WEIGHTS
    _refuse_pickle(weights)
    size = weights.stat().st_size
    try:
        with open(weights, "rb") as f:
            head = f.read(8)
            n = int.from_bytes(head, "little") if len(head) == 8 else -1
            if not 0 < n <= min(MAX_HEADER_BYTES, size - 8):
                raise ValueError(f"a header of {n:,} bytes in a file of {size:,}")
            header = json.loads(f.read(n))
        header.pop("__metadata__", None)
        shapes = {k: tuple(int(d) for d in v["shape"]) for k, v in header.items()}
        end = max((int(v["data_offsets"][1]) for v in header.values()), default=0)
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError) as e:
        raise CheckpointError(f"{path.name}: {WEIGHTS} is truncated or corrupt ({e})") from None
    if 8 + n + end != size:
        raise CheckpointError(f"{path.name}: {WEIGHTS} is truncated or corrupt (its header describes "
                              f"{8 + n + end:,} bytes, the file holds {size:,})")
    return shapes


def describe(path) -> tuple[ModelConfig, dict]:
    """A checkpoint folder's config and meta, checked as :func:`load` checks them (config, meta, tokenizer, the
    weights' names, shapes and file size, from the file's header) without reading or allocating the weights: what a
    model list needs to offer a model. Only non-finite weights are left for :func:`load` to find."""
    path = Path(path)
    cfg, meta, _ = _config_meta_tokenizer(path)
    if not (path / WEIGHTS).exists() or (path / WEIGHTS).stat().st_size > 8 * cfg.estimated_parameters() + 2 ** 26:
        read_weights(path, cfg.estimated_parameters())  # its messages: missing, or larger than this config can hold
    found = _weight_shapes(path)
    with torch.device("meta"):  # shapes only: nothing is allocated
        model = Transformer(cfg)
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()
                if not (cfg.tie_embeddings and k == "lm_head.weight")}
    _check_shapes(path, found, expected)
    return cfg, meta


def load(path, device: str | torch.device = "cpu") -> Checkpoint:
    """Load and verify a checkpoint folder; any mismatch raises :class:`CheckpointError` naming it.

    The config is checked field by field (types, ranges, an estimated memory ceiling: :class:`ModelConfig`), the meta
    is an object with typed fields, and the weights file may not be larger than the config's model, all before
    anything is allocated; non-finite weights are refused."""
    path = Path(path)
    cfg, meta, tokenizer = _config_meta_tokenizer(path)
    state = read_weights(path, cfg.estimated_parameters())
    model = Transformer(cfg)
    check_matches(path, state, _weights(model))
    known = read_words(path)
    model.load_state_dict(state, strict=not cfg.tie_embeddings)
    model.to(device).eval()
    return Checkpoint(model, tokenizer, meta, path, known)
