"""Checkpoints: bit-exact round trips, every kind of bad folder refused with a clear reason, no unpickling,
and the atomic folder swap (a failure midway keeps the old folder; ``recover`` undoes a half swap)."""
from __future__ import annotations

import io
import json
import os
import pickle

import pytest
import torch

from core import ModelConfig, Transformer
from core.io import checkpoint
from core.io.checkpoint import CONFIG, TOKENIZER, WEIGHTS, CheckpointError, recover, write_dir_atomically
from core.io.tokenizer import Tokenizer

SYMBOLS = [str(d) for d in range(10)] + list("abcdefghij")


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.from_symbols(SYMBOLS)


def make_model(tok, seed=0, **kw):
    base = dict(kind="encoder-decoder", vocab_size=tok.vocab_size, d_model=32, n_heads=4, n_encoder_layers=1,
                n_decoder_layers=1, d_ff=64, max_len=24, dropout=0.0)
    base.update(kw)
    torch.manual_seed(seed)
    model = Transformer(ModelConfig(**base))
    # perturb biases / norms too, so that a load that silently kept the defaults would be caught
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    return model.eval()


def _inputs(model, seed=1):
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(5, model.cfg.vocab_size, (3, 7), generator=gen)
    tgt = torch.randint(5, model.cfg.vocab_size, (3, 5), generator=gen)
    return src, tgt


def _outputs(model):
    src, tgt = _inputs(model)
    with torch.no_grad():
        return model(src, tgt).logits if model.cfg.kind == "encoder-decoder" else model(src).logits


def _edit_config(folder, **model_fields):
    config = json.loads((folder / CONFIG).read_text())
    config["model"].update(model_fields)
    (folder / CONFIG).write_text(json.dumps(config))


# ------------------------------------------------------------------ round trip
@pytest.mark.parametrize("kw", [
    dict(kind="encoder-decoder"),
    dict(kind="decoder-only", pos_encoding="rope", n_kv_heads=2, norm="pre"),
    dict(kind="encoder-only", pos_encoding="learned", activation="gelu"),
    dict(kind="encoder-decoder", tie_embeddings=False, activation="swiglu", pos_encoding="alibi"),
], ids=["enc-dec", "dec-only-rope-gqa", "enc-only-learned", "untied-swiglu-alibi"])
def test_save_load_round_trip_is_bit_exact(tmp_path, tok, kw):
    model = make_model(tok, **kw)
    meta = {"task": "copy", "step": 17, "metrics": {"exact_match": 0.5}}
    out = checkpoint.save(tmp_path / "ckpt", model, tok, meta=meta, card="# hello\n",
                          extra_files={checkpoint.STATE_WEIGHTS: b"\x00\x01payload"})
    assert out == tmp_path / "ckpt"
    assert sorted(p.name for p in out.iterdir()) == sorted([WEIGHTS, CONFIG, TOKENIZER, "card.md",
                                                            checkpoint.STATE_WEIGHTS])
    assert (out / checkpoint.STATE_WEIGHTS).read_bytes() == b"\x00\x01payload"
    assert (out / "card.md").read_text() == "# hello\n"
    # nothing but the folder itself is left in its parent (no temporary or .old folders)
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt"]

    ck = checkpoint.load(out)
    assert ck.path == out
    assert ck.meta == meta
    assert ck.model.cfg.to_dict() == model.cfg.to_dict()
    assert not ck.model.training
    theirs = ck.model.state_dict()
    ours = model.state_dict()
    assert set(theirs) == set(ours)
    for name, tensor in ours.items():
        assert theirs[name].dtype == tensor.dtype, name
        assert torch.equal(theirs[name], tensor), name
    if model.cfg.tie_embeddings:
        assert ck.model.lm_head.weight is ck.model.embed.tokens.weight  # still tied after loading
    assert torch.equal(_outputs(ck.model), _outputs(model))
    assert ck.tokenizer.to_str() == tok.to_str()
    assert ck.tokenizer.encode("1 2 a b") == tok.encode("1 2 a b")


def test_tied_head_is_stored_once(tmp_path, tok):
    from safetensors.torch import load_file
    model = make_model(tok)
    checkpoint.save(tmp_path / "c", model, tok)
    stored = load_file(str(tmp_path / "c" / WEIGHTS))
    assert "lm_head.weight" not in stored and "embed.tokens.weight" in stored


def test_save_replaces_an_existing_checkpoint(tmp_path, tok):
    first, second = make_model(tok, seed=0), make_model(tok, seed=1)
    checkpoint.save(tmp_path / "c", first, tok, card="first")
    checkpoint.save(tmp_path / "c", second, tok)
    assert not (tmp_path / "c" / "card.md").exists()  # the old folder is gone, not merged
    assert torch.equal(_outputs(checkpoint.load(tmp_path / "c").model), _outputs(second))
    assert [p.name for p in tmp_path.iterdir()] == ["c"]


def test_save_refuses_vocabulary_mismatch(tmp_path, tok):
    model = make_model(tok, vocab_size=tok.vocab_size + 3)
    with pytest.raises(CheckpointError, match="tokenizer has 25 tokens but the model expects 28"):
        checkpoint.save(tmp_path / "c", model, tok)
    assert not (tmp_path / "c").exists()


# ------------------------------------------------------------------ refusals
@pytest.fixture
def saved(tmp_path, tok):
    return checkpoint.save(tmp_path / "ckpt", make_model(tok), tok)


def test_vocabulary_mismatch_refused(saved, tok):
    _edit_config(saved, vocab_size=tok.vocab_size + 1)
    with pytest.raises(CheckpointError, match="vocabulary") as info:
        checkpoint.load(saved)
    assert f"tokenizer.json has {tok.vocab_size} tokens" in str(info.value)
    assert f"config says {tok.vocab_size + 1}" in str(info.value)


def test_wrong_shape_refused_naming_the_tensor(tmp_path, tok):
    # a d_model=32 model's weights under a d_model=64 config
    folder = checkpoint.save(tmp_path / "c", make_model(tok, d_model=32), tok)
    _edit_config(folder, d_model=64)
    with pytest.raises(CheckpointError, match=r"shape mismatch for embed\.tokens\.weight: "
                                              r"file \(25, 32\), config expects \(25, 64\)"):
        checkpoint.load(folder)


def test_wrong_ffn_width_refused_naming_the_tensor(tmp_path, tok):
    folder = checkpoint.save(tmp_path / "c", make_model(tok, d_ff=64), tok)
    _edit_config(folder, d_ff=48)
    with pytest.raises(CheckpointError, match=r"shape mismatch for encoder\.layers\.0\.ffn\.w1\.weight: "
                                              r"file \(64, 32\), config expects \(48, 32\)"):
        checkpoint.load(folder)


def test_missing_layers_refused(tmp_path, tok):
    folder = checkpoint.save(tmp_path / "c", make_model(tok), tok)
    _edit_config(folder, n_encoder_layers=2)
    with pytest.raises(CheckpointError, match=r"weights do not match the config: missing \['encoder\.layers\.1\."):
        checkpoint.load(folder)


def test_invalid_model_config_refused(saved):
    _edit_config(saved, d_model=30)  # not divisible by 4 heads
    with pytest.raises(CheckpointError, match="invalid model config: d_model"):
        checkpoint.load(saved)
    _edit_config(saved, d_model=32, bogus_field=1)
    with pytest.raises(CheckpointError, match="unknown config field"):
        checkpoint.load(saved)


BAD_FIELDS = [  # (field, value, words of the one-line reason) -- each once crashed or allocated gigabytes
    ("d_model", 32.0, "d_model must be an integer"),
    ("d_model", "32", "d_model must be an integer"),
    ("n_heads", True, "n_heads must be an integer"),
    ("gelu_approximate", "bogus", "gelu_approximate must be one of none, tanh|unknown gelu_approximate"),
    ("activation", 3, "activation must be one of"),
    ("max_len", 4_000_000, "max_len must be between 1 and 65,536"),
    ("max_len", 20_000_000, "max_len must be between"),
    ("n_encoder_layers", 10_000, "n_encoder_layers must be between 0 and 256"),
    ("vocab_size", 2 ** 40, "vocab_size must be between"),
    ("d_ff", -5, "d_ff must be a positive integer"),
    ("dropout", float("nan"), "dropout must be a finite number"),
    ("pe_base", float("inf"), "pe_base must be a finite number"),
    ("layer_norm_eps", "tiny", "layer_norm_eps must be a finite number"),
    ("layer_norm_eps", 0, "layer_norm_eps must be in"),
    ("bias", "yes", "bias must be true or false"),
    ("window", 0, "window must be between"),
    ("n_kv_heads", 2.5, "n_kv_heads must be an integer"),
    ("pad_id", None, "pad_id must be an integer"),
]


@pytest.mark.parametrize("field,value,words", BAD_FIELDS, ids=[f"{f}={v!r}"[:40] for f, v, _ in BAD_FIELDS])
def test_every_config_field_is_type_and_range_checked_before_allocating(saved, field, value, words):
    config = json.loads((saved / CONFIG).read_text())
    config["model"][field] = value
    (saved / CONFIG).write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=f"invalid model config: ({words})") as e:
        checkpoint.load(saved)
    assert "\n" not in str(e.value) and len(str(e.value)) < 300


@pytest.mark.parametrize("fields", [
    dict(d_model=16384, n_heads=16, d_ff=65536, n_encoder_layers=64, n_decoder_layers=64),  # every field in range
    dict(vocab_size=2 ** 21, d_model=4096, n_heads=16),
    dict(max_len=65536, d_model=8192, n_heads=16, pos_encoding="sinusoidal"),
], ids=["deep-and-wide", "huge-vocabulary", "long-position-table"])
def test_a_config_whose_estimated_memory_is_over_the_ceiling_is_refused_before_allocating(saved, fields):
    import time
    _edit_config(saved, **fields)
    t0 = time.process_time()
    with pytest.raises(CheckpointError, match="would need about .* MiB .*the limit is 2,048 MiB"):
        checkpoint.load(saved)
    assert time.process_time() - t0 < 5  # refused from the arithmetic, nothing was built (a generous bound)


@pytest.mark.parametrize("kw", [
    dict(), dict(kind="decoder-only", pos_encoding="rope", n_kv_heads=2, norm="pre"),
    dict(kind="encoder-only", pos_encoding="learned", activation="gelu", type_vocab_size=2, nsp=True,
         embedding_norm=True),
    dict(tie_embeddings=False, activation="swiglu", pos_encoding="alibi", bias=False),
    dict(kind="decoder-only", n_kv_heads=1, tie_embeddings=False, final_norm=True),
    dict(kind="decoder-only", attention_only=True, norm="pre"), dict(attention_only=True),
])
def test_the_memory_estimate_counts_exactly_the_parameters_the_model_allocates(kw):
    cfg = ModelConfig(vocab_size=57, d_model=32, n_heads=4, d_ff=48, max_len=20, **kw)
    assert cfg.estimated_parameters() == Transformer(cfg).num_parameters()


def test_a_weights_file_larger_than_its_config_allows_is_refused_unread(saved):
    with open(saved / WEIGHTS, "ab") as f:
        f.truncate((saved / WEIGHTS).stat().st_size + 80 * 2 ** 20)  # a sparse 80 MB tail
    with pytest.raises(CheckpointError, match="more than a model of this config can hold"):
        checkpoint.load(saved)


@pytest.mark.parametrize("meta,words", [
    ("notadict", "meta must be a JSON object, got str"), ([1, 2], "meta must be a JSON object, got list"),
    ({"task": 5}, "'task' must be a string"), ({"metrics": "high"}, "'metrics' must be an object"),
    ({"step": 1.5}, "'step' must be an integer"), ({"heldout": [1]}, "'heldout' must be an object"),
    # issue 35 item 8: nested fields a page formats as numbers (/mlm broke on "high")
    ({"heldout": {"masked_accuracy": "high"}}, "heldout.masked_accuracy must be a finite number, got str"),
    ({"metrics": {"exact_match": True}}, "metrics.exact_match must be a finite number, got bool"),
    ({"heldout": {"n": {"x": 1}}}, "heldout.n must be a finite number, got dict"),
])
def test_meta_must_be_an_object_with_typed_fields(saved, meta, words):
    config = json.loads((saved / CONFIG).read_text())
    config["meta"] = meta
    (saved / CONFIG).write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=words):
        checkpoint.load(saved)


def test_an_oversized_config_file_is_refused_unread(saved):
    config = json.loads((saved / CONFIG).read_text())
    config["meta"]["padding"] = "x" * (checkpoint.MAX_CONFIG_BYTES + 1)
    (saved / CONFIG).write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="larger than"):
        checkpoint.load(saved)


@pytest.mark.parametrize("cut", ["half", "header"])
def test_truncated_weights_refused(saved, cut):
    data = (saved / WEIGHTS).read_bytes()
    size = len(data) // 2 if cut == "half" else 20
    (saved / WEIGHTS).write_bytes(data[:size])
    with pytest.raises(CheckpointError, match=f"{WEIGHTS} is truncated or corrupt"):
        checkpoint.load(saved)


def test_empty_weights_refused(saved):
    (saved / WEIGHTS).write_bytes(b"")
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        checkpoint.load(saved)


def test_missing_weights_refused_with_hint_about_pickles(saved):
    os.replace(saved / WEIGHTS, saved / "model.pt")
    with pytest.raises(CheckpointError, match=r"model\.safetensors is missing \(found model\.pt: "
                                              r"pickle formats are refused\)"):
        checkpoint.load(saved)


@pytest.mark.parametrize("content, pattern", [
    ("{not json", r"config\.json is not valid JSON"),
    ("", r"config\.json is not valid JSON"),
    ('{"format": "something-else/9", "model": {}}', "is not an Attention Lab config"),
    ('["a", "list"]', "is not an Attention Lab config"),
    ('{"format": "attention-lab/1", "model": 3}', "is not an Attention Lab config"),
])
def test_invalid_config_refused(saved, content, pattern):
    (saved / CONFIG).write_text(content)
    with pytest.raises(CheckpointError, match=pattern):
        checkpoint.load(saved)


def test_missing_config_or_folder_refused(tmp_path, saved):
    with pytest.raises(CheckpointError, match="no checkpoint folder"):
        checkpoint.load(tmp_path / "nowhere")
    (saved / CONFIG).unlink()
    with pytest.raises(CheckpointError, match=r"config\.json is missing"):
        checkpoint.load(saved)


def test_corrupt_tokenizer_refused(saved):
    (saved / TOKENIZER).write_text("{oops")
    with pytest.raises(ValueError, match=r"tokenizer\.json is not a valid tokenizer\.json"):
        checkpoint.load(saved)


# ------------------------------------------------------------------ pickles are never unpickled
class Exploit:
    """Unpickling this runs ``action(*args)``: the marker file appearing would prove the pickle was loaded."""

    def __init__(self, action, args):
        self.action, self.args = action, args

    def __reduce__(self):
        return self.action, self.args


def _exploits(marker):
    return {
        "open": Exploit(open, (str(marker), "w")),
        "os.system": Exploit(os.system, (f"touch {marker}",)),
    }


def _assert_exploit_works(payload: bytes, marker, loader):
    """Sanity check of the test itself: really loading the payload does create the marker."""
    assert not marker.exists()
    result = loader(payload)
    assert marker.exists(), "the exploit is broken, so the refusal test below would prove nothing"
    if hasattr(result, "close"):
        result.close()
    marker.unlink()


@pytest.mark.parametrize("how", ["open", "os.system"])
@pytest.mark.parametrize("protocol", [2, pickle.DEFAULT_PROTOCOL, pickle.HIGHEST_PROTOCOL])
def test_plain_pickle_refused_and_never_unpickled(saved, tmp_path, how, protocol):
    marker = tmp_path / f"pwned-{how}"
    payload = pickle.dumps({"embed.tokens.weight": _exploits(marker)[how]}, protocol=protocol)
    _assert_exploit_works(payload, marker, pickle.loads)
    (saved / WEIGHTS).write_bytes(payload)
    with pytest.raises(CheckpointError, match="pickle") as info:
        checkpoint.load(saved)
    assert "never unpickles" in str(info.value)
    assert not marker.exists(), "the refused pickle was unpickled"


@pytest.mark.parametrize("protocol", [0, 1])
def test_old_protocol_pickle_refused_and_never_unpickled(saved, tmp_path, protocol):
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_exploits(marker)["os.system"], protocol=protocol)
    _assert_exploit_works(payload, marker, pickle.loads)
    (saved / WEIGHTS).write_bytes(payload)
    with pytest.raises(CheckpointError):
        checkpoint.load(saved)
    assert not marker.exists(), "the refused pickle was unpickled"


def test_torch_save_state_dict_refused(saved, tok):
    buf = io.BytesIO()
    torch.save(make_model(tok).state_dict(), buf)
    (saved / WEIGHTS).write_bytes(buf.getvalue())
    assert buf.getvalue()[:4] == b"PK\x03\x04"
    with pytest.raises(CheckpointError, match=r"model\.safetensors is a pickle / torch\.save file"):
        checkpoint.load(saved)


@pytest.mark.parametrize("how", ["open", "os.system"])
def test_torch_save_exploit_refused_and_never_unpickled(saved, tmp_path, how):
    marker = tmp_path / f"pwned-{how}"
    buf = io.BytesIO()
    torch.save({"embed.tokens.weight": _exploits(marker)[how]}, buf)
    _assert_exploit_works(buf.getvalue(), marker, lambda b: torch.load(io.BytesIO(b), weights_only=False))
    (saved / WEIGHTS).write_bytes(buf.getvalue())
    with pytest.raises(CheckpointError, match="pickle"):
        checkpoint.load(saved)
    assert not marker.exists(), "the refused torch.save file was unpickled"


# ------------------------------------------------------------------ atomic folder swap
OUR_CONFIG = json.dumps({"format": checkpoint.FORMAT, "model": {}})


def test_write_dir_atomically_failure_keeps_old_folder(tmp_path):
    dest = tmp_path / "run"
    dest.mkdir()
    (dest / WEIGHTS).write_text("old weights")
    (dest / CONFIG).write_text(OUR_CONFIG)

    def fill(tmp):
        (tmp / WEIGHTS).write_text("new weights")
        raise RuntimeError("disk full halfway")

    with pytest.raises(RuntimeError, match="disk full halfway"):
        write_dir_atomically(dest, fill)
    assert sorted(p.name for p in dest.iterdir()) == [CONFIG, WEIGHTS]
    assert (dest / WEIGHTS).read_text() == "old weights"
    assert (dest / CONFIG).read_text() == OUR_CONFIG
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # the temporary folder was cleaned up


def test_write_dir_atomically_success_swaps_in_new_folder(tmp_path):
    dest = tmp_path / "run"
    dest.mkdir()
    (dest / CONFIG).write_text(OUR_CONFIG)
    (dest / checkpoint.CARD).write_text("stale")

    def fill(tmp):
        (tmp / WEIGHTS).write_text("y")

    assert write_dir_atomically(dest, fill) == dest
    assert [p.name for p in dest.iterdir()] == [WEIGHTS]
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_write_dir_atomically_creates_parents(tmp_path):
    dest = tmp_path / "a" / "b" / "run"
    write_dir_atomically(dest, lambda tmp: (tmp / "f").write_text("z"))
    assert (dest / "f").read_text() == "z"


def test_kill_between_renames_then_recover(tmp_path, tok, monkeypatch):
    """The old folder has been renamed to ``.NAME.old`` but the new one not yet renamed in."""
    dest = checkpoint.save(tmp_path / "ckpt", make_model(tok, seed=0), tok)
    expected = _outputs(checkpoint.load(dest).model)
    real_replace, calls = os.replace, []

    def dying_replace(a, b):
        calls.append((a, b))
        if len(calls) == 2:
            raise KeyboardInterrupt("killed between the renames")
        return real_replace(a, b)

    monkeypatch.setattr(checkpoint.os, "replace", dying_replace)
    with pytest.raises(KeyboardInterrupt):
        checkpoint.save(dest, make_model(tok, seed=1), tok)
    monkeypatch.setattr(checkpoint.os, "replace", real_replace)
    old = tmp_path / ".ckpt.old"
    assert not dest.exists() and old.is_dir()
    # load() recovers by itself ...
    assert torch.equal(_outputs(checkpoint.load(dest).model), expected)
    assert dest.is_dir() and not old.exists()


def test_recover_restores_old_folder(tmp_path):
    old = tmp_path / ".ckpt.old"
    old.mkdir()
    (old / "config.json").write_text(OUR_CONFIG)
    assert recover(tmp_path / "ckpt") == tmp_path / "ckpt"
    assert (tmp_path / "ckpt" / "config.json").read_text() == OUR_CONFIG
    assert not old.exists()


def test_recover_leaves_a_complete_folder_alone(tmp_path):
    dest, old = tmp_path / "ckpt", tmp_path / ".ckpt.old"
    dest.mkdir()
    (dest / "new").write_text("new")
    old.mkdir()
    (old / "old").write_text("old")
    recover(dest)
    assert [p.name for p in dest.iterdir()] == ["new"]
    assert old.exists()  # not ours to delete here; the next save removes it
    recover(tmp_path / "missing")  # nothing to do, no error
    assert not (tmp_path / "missing").exists()


# ------------------------------------------------------------------ never rename or delete what is not ours
def _tree(root):
    return sorted((str(p.relative_to(root)), p.read_bytes() if p.is_file() else None) for p in root.rglob("*"))


@pytest.mark.parametrize("case", ["user-folder", "hidden-subfolder", "foreign-config", "a-file", "a-link",
                                  "our-names-plus-one"])
def test_writes_refuse_a_destination_that_is_not_ours_and_touch_nothing(tmp_path, tok, case):
    """The class: any writer (checkpoint.save, the app's copy of a trained model) swaps folders with
    write_dir_atomically; it renames and deletes only a checkpoint folder of ours."""
    dest = tmp_path / "victim"
    if case == "a-file":
        dest.write_text("thesis")
    elif case == "a-link":
        (tmp_path / "target").mkdir()
        (tmp_path / "target" / "thesis.txt").write_text("thesis")
        dest.symlink_to(tmp_path / "target")
    else:
        dest.mkdir()
        if case == "user-folder":
            (dest / "thesis.txt").write_text("thesis")
            (dest / "sub").mkdir()
        elif case == "hidden-subfolder":
            (dest / ".git").mkdir()
            (dest / ".git" / "HEAD").write_text("ref")
        elif case == "foreign-config":  # e.g. another library's model folder: the same file names, not ours
            (dest / CONFIG).write_text('{"model_type": "bert"}')
            (dest / WEIGHTS).write_bytes(b"their weights")
        else:
            (dest / CONFIG).write_text(OUR_CONFIG)
            (dest / "notes.md").write_text("mine")
    before = _tree(tmp_path)
    with pytest.raises(CheckpointError, match="refusing"):
        checkpoint.save(dest, make_model(tok), tok)
    with pytest.raises(CheckpointError, match="refusing"):
        write_dir_atomically(dest, lambda tmp: (tmp / WEIGHTS).write_text("x"))
    assert _tree(tmp_path) == before  # nothing renamed, replaced, deleted or left behind


def test_a_user_folder_named_like_our_old_folder_is_never_deleted_or_restored(tmp_path, tok):
    """``.NAME.old`` is only ever ours when it holds a checkpoint; anyone else's is neither removed nor renamed."""
    old = tmp_path / ".ckpt.old"
    old.mkdir()
    (old / "thesis.txt").write_text("thesis")
    before = _tree(tmp_path)
    recover(tmp_path / "ckpt")
    assert _tree(tmp_path) == before
    with pytest.raises(CheckpointError, match="refusing to delete"):
        checkpoint.save(tmp_path / "ckpt", make_model(tok), tok)
    assert _tree(tmp_path) == before


def _hugging_face_folder(folder):
    """Someone's own model folder, whose file names are all checkpoint names (issue 35 item 4)."""
    folder.mkdir()
    (folder / CONFIG).write_text('{"model_type": "bert"}')
    (folder / WEIGHTS).write_bytes(b"their weights")
    (folder / TOKENIZER).write_text('{"version": "1.0"}')


@pytest.mark.parametrize("leftover", [".ckpt.old", ".ckpt.tmp-backup", ".ckpt.tmp-99999999-x", ".ckpt.tmp-card"])
def test_a_folder_named_like_our_leftovers_is_judged_by_our_marker_not_by_its_file_names(tmp_path, tok, leftover):
    """Issue 35 item 4: ``.bert.old/`` (config.json + model.safetensors + tokenizer.json) and ``.bert.tmp-backup/``
    (card.md) beside a new checkpoint were deleted because their file names looked like ours. Only a folder holding
    the marker that write_dir_atomically writes into its own temporaries is ever deleted."""
    folder = tmp_path / leftover
    if leftover.endswith("card"):
        folder.mkdir()
        (folder / checkpoint.CARD).write_text("my notes")
    else:
        _hugging_face_folder(folder)
    before = _tree(tmp_path)
    if leftover.endswith(".old"):
        with pytest.raises(CheckpointError, match="refusing to delete"):
            checkpoint.save(tmp_path / "ckpt", make_model(tok), tok)
        assert _tree(tmp_path) == before
    else:
        checkpoint.save(tmp_path / "ckpt", make_model(tok), tok)
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([leftover, "ckpt"])
        assert [t for t in _tree(tmp_path) if t[0].startswith(leftover)] == before
    assert checkpoint.clean_temporaries(tmp_path / "ckpt") == []


def test_our_own_leftovers_carry_the_marker_and_are_removed(tmp_path, tok, monkeypatch):
    """The folders write_dir_atomically leaves when killed hold the marker: the next write removes them (and the
    checkpoint it swaps in does not keep the marker)."""
    dest = checkpoint.save(tmp_path / "ckpt", make_model(tok, seed=0), tok)
    calls = []

    def dying_removal(path, *a, **k):  # killed after the swap, before the old folder was deleted
        calls.append(path)
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(checkpoint, "_remove_marked", dying_removal)
    with pytest.raises(KeyboardInterrupt):
        checkpoint.save(dest, make_model(tok, seed=1), tok)
    monkeypatch.undo()
    assert calls == [tmp_path / ".ckpt.old"]
    old = tmp_path / ".ckpt.old"
    assert (old / checkpoint.LEFTOVER_MARKER).is_file()
    assert checkpoint.LEFTOVER_MARKER not in [p.name for p in dest.iterdir()]
    stale = tmp_path / ".ckpt.tmp-99999999-abc"  # a killed writer's temporary (process gone)
    stale.mkdir()
    (stale / WEIGHTS).write_text("half")
    (stale / checkpoint.LEFTOVER_MARKER).write_text("x")
    checkpoint.save(dest, make_model(tok, seed=2), tok)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]
    assert sorted(p.name for p in dest.iterdir()) == [CONFIG, WEIGHTS, TOKENIZER]


def test_an_empty_folder_or_our_own_checkpoint_is_replaced(tmp_path, tok):
    (tmp_path / "empty").mkdir()
    checkpoint.save(tmp_path / "empty", make_model(tok), tok)
    checkpoint.save(tmp_path / "ours", make_model(tok), tok, card="x", extra_files={checkpoint.STATE_JSON: b"{}"})
    checkpoint.save(tmp_path / "ours", make_model(tok, seed=1), tok)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "ours"]


def test_a_checkpoint_holding_a_half_written_file_of_ours_is_still_ours(tmp_path, tok):
    """``write_words`` writes ``.words.json.tmp``, scripts/bundle.py ``config.json.tmp``: a kill leaves them."""
    dest = checkpoint.save(tmp_path / "c", make_model(tok), tok)
    (dest / ".words.json.tmp").write_text("{")
    (dest / "config.json.tmp").write_text("{")
    checkpoint.save(dest, make_model(tok, seed=1), tok)
    assert sorted(p.name for p in dest.iterdir()) == sorted([WEIGHTS, CONFIG, TOKENIZER])


def test_save_refuses_a_file_that_is_not_a_checkpoint_file(tmp_path, tok):
    with pytest.raises(CheckpointError, match="not a checkpoint file"):
        checkpoint.save(tmp_path / "c", make_model(tok), tok, extra_files={"notes.txt": b"x"})
    assert not (tmp_path / "c").exists()


def test_patch_scoreboard_is_one_of_our_files():
    from core.probes import patch_board
    assert patch_board.SAVED in checkpoint.OWN_FILES


# ------------------------------------------------------------------ describe: a load's checks without the weights
def _pickle_weights(folder, tok):
    torch.save({"x": torch.zeros(2)}, folder / WEIGHTS)


def _append(folder, tok):
    with open(folder / WEIGHTS, "ab") as f:
        f.write(b"\0" * 64)


def _set_meta(folder, tok):
    config = json.loads((folder / CONFIG).read_text())
    config["meta"] = {"task": 5}
    (folder / CONFIG).write_text(json.dumps(config))


BROKEN = {
    "vocabulary": lambda f, tok: _edit_config(f, vocab_size=tok.vocab_size + 1),
    "shape": lambda f, tok: _edit_config(f, d_model=64),
    "ffn-width": lambda f, tok: _edit_config(f, d_ff=48),
    "missing-layer": lambda f, tok: _edit_config(f, n_encoder_layers=2),
    "config-range": lambda f, tok: _edit_config(f, d_ff=10 ** 15),
    "meta-type": _set_meta,
    "truncated": lambda f, tok: (f / WEIGHTS).write_bytes((f / WEIGHTS).read_bytes()[:1000]),
    "header-only": lambda f, tok: (f / WEIGHTS).write_bytes((f / WEIGHTS).read_bytes()[:20]),
    "empty": lambda f, tok: (f / WEIGHTS).write_bytes(b""),
    "bytes-appended": _append,
    "sparse-80MB-tail": lambda f, tok: os.truncate(f / WEIGHTS, (f / WEIGHTS).stat().st_size + 80 * 2 ** 20),
    "weights-missing": lambda f, tok: os.replace(f / WEIGHTS, f / "model.pt"),
    "pickle": _pickle_weights,
    "tokenizer": lambda f, tok: (f / TOKENIZER).write_text("{oops"),
    "config-json": lambda f, tok: (f / CONFIG).write_text("{not json"),
}


@pytest.mark.parametrize("how", BROKEN)
def test_describe_refuses_what_load_refuses_without_reading_the_weights(tmp_path, tok, how):
    """Issue 35 item 1: a model list (/mlm, /coreference, /lm-heads) loaded every listed model to learn its kind and
    task and to skip broken ones. checkpoint.describe reads config, meta, tokenizer and the weights file's header (names,
    shapes, exact size) and refuses every broken folder load refuses, with the same reason."""
    folder = checkpoint.save(tmp_path / "c", make_model(tok), tok)
    cfg, meta = checkpoint.describe(folder)
    assert cfg == checkpoint.load(folder).model.cfg and meta == {}
    BROKEN[how](folder, tok)
    with pytest.raises(ValueError) as loaded:
        checkpoint.load(folder)
    with pytest.raises(ValueError) as described:
        checkpoint.describe(folder)
    assert str(described.value).split(" (")[0] == str(loaded.value).split(" (")[0], (described.value, loaded.value)


def test_describe_reads_no_weights(tmp_path, tok, monkeypatch):
    folder = checkpoint.save(tmp_path / "c", make_model(tok), tok)
    monkeypatch.setattr(checkpoint, "load_file", lambda *a, **k: pytest.fail("describe read the weights"))
    cfg, _ = checkpoint.describe(folder)
    assert cfg.d_model == 32


# ------------------------------------------------------------------ non-finite weights and strict JSON
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
def test_non_finite_weights_are_refused_at_load(tmp_path, tok, value):
    from safetensors.torch import load_file, save_file
    saved = checkpoint.save(tmp_path / "ckpt", make_model(tok), tok)
    state = load_file(str(saved / WEIGHTS))
    state["encoder.layers.0.ffn.w1.weight"][3, 4] = value
    save_file(state, str(saved / WEIGHTS), metadata={"format": checkpoint.FORMAT})
    with pytest.raises(CheckpointError, match=r"non-finite weights \(NaN or infinity\) in encoder.layers.0.ffn.w1"):
        checkpoint.load(saved)


def test_a_non_finite_metric_is_written_as_null_never_as_nan(tmp_path, tok):
    meta = {"metrics": {"perplexity": float("inf"), "loss": float("nan"), "exact_match": 0.5}}
    saved = checkpoint.save(tmp_path / "ckpt", make_model(tok), tok, meta=meta)
    strict = json.loads((saved / CONFIG).read_text(), parse_constant=lambda c: pytest.fail(f"{c} in config.json"))
    assert strict["meta"]["metrics"] == {"perplexity": None, "loss": None, "exact_match": 0.5}


def test_every_json_we_print_or_write_is_strict():
    """The class: json.dump/json.dumps default to allow_nan=True and print NaN / Infinity (not JSON). Every call in
    core/, app/, pages/ and scripts/ passes allow_nan=False, or goes through core.io.jsonio.dumps (which does)."""
    import ast
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    loose = []
    for folder in ("core", "app", "pages", "scripts"):
        for f in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in ("dump", "dumps") and isinstance(node.func.value, ast.Name)
                        and node.func.value.id == "json"
                        and not any(k.arg == "allow_nan" and isinstance(k.value, ast.Constant) and k.value.value is False
                                    for k in node.keywords)):
                    loose.append(f"{f.relative_to(root)}:{node.lineno}")
    assert loose == [], f"json.dumps without allow_nan=False (use core.io.jsonio.dumps): {loose}"
    from core.io import jsonio
    assert jsonio.dumps({"a": [float("nan"), 1.5, float("-inf")]}) == '{"a": [null, 1.5, null]}'


def test_bundle_float16_rewrites_the_weights_as_half_and_the_model_loads_them_rounded(tmp_path, tok):
    """``scripts/bundle.py --float16``: a shipped model is measured as it ships. Every stored float tensor becomes
    float16 with the file's metadata kept, and the loaded model computes with exactly the half-rounded weights."""
    from safetensors import safe_open
    from scripts.bundle import to_float16
    model = make_model(tok, kind="decoder-only", pos_encoding="rope", norm="pre")
    checkpoint.save(tmp_path / "c", model, tok)
    to_float16(tmp_path / "c")
    with safe_open(str(tmp_path / "c" / WEIGHTS), "pt") as f:
        assert f.metadata() == {"format": checkpoint.FORMAT}
        assert {f.get_tensor(k).dtype for k in f.keys()} == {torch.float16}
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())
    assert torch.equal(_outputs(checkpoint.load(tmp_path / "c").model), _outputs(model))
    assert not list((tmp_path / "c").glob("*.tmp"))
