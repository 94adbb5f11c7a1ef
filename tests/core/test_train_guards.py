"""The training CLI refuses what it must not do: destroy a folder it did not create (``--out``), run with a flag
outside its range, save or print non-finite numbers, resume from a tampered state, leave temporaries behind after
a kill, or overwrite a finished run's card with empty figures.

Every run is tiny (copy, d_model 16, a few steps, one thread) and writes only under ``tmp_path``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli_run import run_main
from core.data import releases

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--task", "copy", "--steps", "2", "--d-model", "16", "--heads", "2", "--d-ff", "32", "--layers", "1",
        "--threads", "1", "--batch-size", "4", "--seq-len", "4", "--eval-every", "1000", "--warmup", "2"]


def train_cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "core.train", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ, OMP_NUM_THREADS="1"))


def train_here(*args):
    """``train_cli`` in this process (tests/cli_run.py): for runs that are refused or resumed, ~5 s less each."""
    return run_main("core.train", *args)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> subprocess.CompletedProcess:
    """One finished TINY run (its folder is ``.out``), trained once by the real command line;
    its stdout is the run's JSON summary. Tests copy the folder instead of training again."""
    out = tmp_path_factory.mktemp("trained") / "run"
    r = train_cli("--out", out, *TINY)
    assert r.returncode == 0, r.stderr[-2000:]
    r.out = out
    return r


def copy_of(trained, where: Path) -> Path:
    """A copy of the finished run at ``where`` (a run holds no path of its own: the copy resumes, test below)."""
    shutil.copytree(trained.out, where, symlinks=True)
    return where


def tree(root: Path):
    return sorted((str(p.relative_to(root)), p.read_bytes() if p.is_file() and not p.is_symlink() else None)
                  for p in root.rglob("*"))


def one_error_line(r) -> str:
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    return errors[0]


# ------------------------------------------------------------------ defect 1: --out never destroys a folder
@pytest.mark.parametrize("case", ["folder-with-files", "a-file", "foreign-model-folder"])
def test_out_refuses_a_folder_that_is_not_a_checkpoint_and_touches_nothing(tmp_path, case):
    victim = tmp_path / "victim"
    if case == "a-file":
        victim.write_text("thesis")
    elif case == "folder-with-files":
        (victim / "sub").mkdir(parents=True)
        (victim / "thesis.txt").write_text("thesis")
    else:
        victim.mkdir()
        (victim / "config.json").write_text('{"model_type": "bert"}')
        (victim / "model.safetensors").write_bytes(b"someone else's weights")
    before = tree(tmp_path)
    line = one_error_line(train_here("--out", victim, *TINY))
    assert "refusing" in line and str(victim) in line
    assert tree(tmp_path) == before  # nothing deleted, renamed (no .victim.old) or left behind


def test_out_replaces_an_existing_checkpoint_only_with_force(trained, tmp_path):
    """Issue 35 item 3: a second run with the same --out silently replaced the first run's model. It is refused
    (one line, exit 2, nothing touched); --resume continues it, --force replaces it."""
    out = copy_of(trained, tmp_path / "run")
    before = tree(tmp_path)
    line = one_error_line(train_here("--out", out, *TINY))
    assert "already holds a checkpoint" in line and "--force" in line and "--resume" in line, line
    assert tree(tmp_path) == before
    r = train_here("--out", out, *TINY, "--force")
    assert r.returncode == 0, r.stderr[-2000:]
    assert [p.name for p in tmp_path.iterdir()] == ["run"] and tree(tmp_path) != before


SHIPPED = sorted(p.name for p in (ROOT / "assets" / "models").iterdir() if p.is_dir())


@pytest.mark.parametrize("name", SHIPPED)
def test_out_never_replaces_a_shipped_model_without_force(name):
    """Issue 35 item 3: ``--out assets/models/copy`` (reverse, en-fr-tiny, lm-tiny, xl …) exited 0 and overwrote the
    shipped weights, config and tokenizer. The check runs before anything is built (read-only here)."""
    from core.train import check_out
    for out in (f"assets/models/{name}", ROOT / "assets" / "models" / name, f"assets/models/{name}/sub",
                f"assets/models/../models/{name}"):
        with pytest.raises(ValueError, match="shipped with Attention Lab.*--force"):
            check_out(str(out))
        with pytest.raises(ValueError, match="shipped"):
            check_out(str(out), resume=True)


@pytest.fixture
def keep_threads():
    """main() in this process sets torch's thread count (--threads 1); later tests get theirs back."""
    import torch
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.usefixtures("keep_threads")
def test_a_shipped_model_stays_whole_and_force_rebuilds_it(tmp_path, monkeypatch, capsys):
    """The whole command on a copy of the shipped ``copy`` model (registry.BUNDLED pointed at it): refused with one
    line and exit 2, every file unchanged; with --force it is rebuilt (scripts/train_bundled.sh's use)."""
    import shutil
    from core import train as train_cli_module
    from core.io import registry
    bundled = tmp_path / "assets" / "models"
    shutil.copytree(ROOT / "assets" / "models" / "copy", bundled / "copy")
    monkeypatch.setattr(registry, "BUNDLED", bundled)
    before = tree(tmp_path)
    assert train_cli_module.main(["--out", str(bundled / "copy"), *TINY]) == 2
    assert "shipped with Attention Lab" in capsys.readouterr().err
    assert tree(tmp_path) == before
    assert train_cli_module.main(["--out", str(bundled / "copy"), *TINY, "--force"]) == 0
    assert tree(tmp_path) != before


@pytest.mark.usefixtures("keep_threads")
def test_out_beside_someone_elses_dot_old_and_tmp_folders_keeps_them(tmp_path, capsys):
    """Issue 35 item 4: ``--out …/bert`` with the user's ``.bert.old/`` (Hugging Face-style config.json +
    model.safetensors + tokenizer.json) and ``.bert.tmp-backup/card.md`` beside it exited 0 and both were gone. The
    .old one is in the way: refused before the first step; the .tmp one is not ours and stays."""
    from core import train as train_cli_module
    old, backup = tmp_path / ".bert.old", tmp_path / ".bert.tmp-backup"
    old.mkdir()
    (old / "config.json").write_text('{"model_type": "bert"}')
    (old / "model.safetensors").write_bytes(b"their weights")
    (old / "tokenizer.json").write_text("{}")
    backup.mkdir()
    (backup / "card.md").write_text("my notes")
    before = tree(tmp_path)
    assert train_cli_module.main(["--out", str(tmp_path / "bert"), *TINY]) == 2
    err = capsys.readouterr().err
    assert "refusing to delete" in err and ".bert.old" in err, err
    assert tree(tmp_path) == before
    (tmp_path / "elsewhere").mkdir()
    os.replace(old, tmp_path / "elsewhere" / ".bert.old")  # the user moves it away, as the message says
    assert train_cli_module.main(["--out", str(tmp_path / "bert"), *TINY]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [".bert.tmp-backup", "bert", "elsewhere"]
    assert (backup / "card.md").read_text() == "my notes"


# ------------------------------------------------------------------ defect 7: every flag checked, NaN never trained
@pytest.mark.parametrize("args,words", [
    (["--eval-every", "0"], "--eval-every must be between 1"), (["--ckpt-every", "0"], "--ckpt-every must be between 1"),
    (["--threads", "-1"], "--threads must be between 1"), (["--threads", "0"], "--threads must be between 1"),
    (["--device", "bogus"], "unknown device 'bogus'"), (["--device", "cuda:99"], "not available here"),
    (["--lr", "nan"], "--lr must be a finite number"), (["--lr", "inf"], "--lr must be a finite number"),
    (["--lr", "-1"], "--lr must be in (0"), (["--clip", "nan"], "--clip must be a finite number"),
    (["--weight-decay=-inf"], "--weight-decay must be a finite number"), (["--steps", "x"], "--steps: invalid int"),
    (["--steps", "\u0663"], "--steps: invalid int"),  # issue 35 item 8: an Arabic-Indic 3, which int() reads
    (["--label-smoothing", "1"], "--label-smoothing must be in [0, 1)"), (["--dropout", "nan"], "--dropout must be"),
    (["--max-seconds", "0"], "--max-seconds must be in (0"), (["--seed", "-3"], "--seed must be between 0"),
    (["--warmup", "-1"], "--warmup must be between 0"), (["--batch-size", "0"], "--batch-size must be between 1"),
    (["--seq-len", "0"], "--seq-len must be between 1"), (["--window", "0"], "--window must be between 1"),
    # one past the last release of each corpus (core.data.releases: the ranges follow the corpora)
    (["--parallel-release", str(releases()[-1] + 1)], f"--parallel-release must be between 1 and {releases()[-1]}"),
    (["--generated-release", str(releases("generated")[-1] + 1)],
     f"--generated-release must be between 1 and {releases('generated')[-1]}"),
    (["--parallel-release", "2"], "--parallel-release chooses the human translations that --real-share mixes in"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_every_flag_is_checked_with_one_line_and_nothing_written(tmp_path, args, words):
    line = one_error_line(train_here("--out", tmp_path / "run", *TINY, *args))
    assert words in line, line
    assert list(tmp_path.iterdir()) == []


def test_a_run_whose_loss_becomes_nan_stops_and_keeps_its_last_finite_checkpoint(tmp_path):
    out = tmp_path / "run"
    r = train_cli("--out", out, *TINY[:2], "--steps", "60", *TINY[4:], "--lr", "1000000", "--schedule", "constant",
                  "--warmup", "0", "--clip", "0", "--ckpt-every", "1")
    line = one_error_line(r)
    assert "the loss became nan" in line and "the last finite checkpoint (step" in line, line
    assert r.stdout.strip() == ""  # no summary (and never one with NaN in it)
    from core.io import checkpoint
    from core.training.trainer import STATE_JSON
    ck = checkpoint.load(out)  # whole, and finite (load refuses non-finite weights)
    kept = json.loads((out / STATE_JSON).read_text())["step"]
    assert f"(step {kept})" in line and ck.meta["step"] == kept
    for name, p in ck.model.state_dict().items():
        assert p.isfinite().all(), name


def _tamper(out: Path, how: str):
    from safetensors.torch import load_file, save_file
    from core.training.trainer import STATE_JSON, STATE_WEIGHTS
    state, weights = out / STATE_JSON, out / STATE_WEIGHTS
    if how == "empty-object":
        state.write_text("{}")
    elif how == "step-not-a-number":
        state.write_text(json.dumps(json.loads(state.read_text()) | {"step": "ten"}))
    elif how == "history-with-nan":
        state.write_text(json.dumps(json.loads(state.read_text()) | {"history": [[1, float("nan")]]}))
    elif how == "truncated-json":
        state.write_bytes(state.read_bytes()[:40])
    elif how == "truncated-tensors":
        weights.write_bytes(weights.read_bytes()[:100])
    elif how == "missing-tensors":
        weights.unlink()
    elif how == "no-rng":
        save_file({k: v for k, v in load_file(str(weights)).items() if not k.startswith("rng.")}, str(weights))
    elif how == "rng-wrong-type":
        save_file({k: (v.float() if k.startswith("rng.") else v) for k, v in load_file(str(weights)).items()},
                  str(weights))
    elif how == "optimizer-from-another-model":
        save_file({k: v for k, v in load_file(str(weights)).items() if not k.startswith("opt.")}
                  | {"opt.0.exp_avg": __import__("torch").zeros(3)}, str(weights))


@pytest.mark.parametrize("how", ["empty-object", "step-not-a-number", "history-with-nan", "truncated-json",
                                 "truncated-tensors", "missing-tensors", "no-rng", "rng-wrong-type",
                                 "optimizer-from-another-model"])
def test_resume_from_a_tampered_state_is_one_clear_line(trained, tmp_path, how):
    out = copy_of(trained, tmp_path / "run")
    _tamper(out, how)
    line = one_error_line(train_here("--out", out, *TINY[:2], "--steps", "4", *TINY[4:], "--resume"))
    assert "cannot resume" in line or "no training checkpoint" in line, line


def test_an_untampered_copy_resumes(trained, tmp_path):
    """The control for the test above: the copy it tampers with resumes when left alone."""
    out = copy_of(trained, tmp_path / "elsewhere" / "run")
    r = train_here("--out", out, *TINY[:2], "--steps", "4", *TINY[4:], "--resume")
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout)["steps"] == 4


# ------------------------------------------------------------------ defect 8: after a kill, and resuming a finished run
KILLED_WRITER = """
import os, signal, sys
from core.io import checkpoint
def fill(tmp):
    (tmp / "model.safetensors").write_bytes(b"half of the weights")
    os.kill(os.getpid(), signal.SIGKILL)
checkpoint.write_dir_atomically(sys.argv[1], fill)
"""


def test_the_next_run_removes_the_temporaries_a_killed_run_left_and_nothing_else(trained, tmp_path):
    out = copy_of(trained, tmp_path / "run")
    killed = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(out)], cwd=ROOT, capture_output=True)
    assert killed.returncode == -9
    # without our marker a folder is never ours, whatever its files are called (issue 35 item 4): neither an older
    # version's temporary nor someone else's folder of that name is deleted
    legacy = tmp_path / ".run.tmp-k3j9x_2a"  # the name an older version gave its temporary folder
    legacy.mkdir()
    (legacy / "config.json").write_text("{")
    mine = tmp_path / ".run.tmp-notes"  # not ours: the same prefix, someone else's file
    mine.mkdir()
    (mine / "thesis.txt").write_text("thesis")
    orphans = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".run.tmp-"))
    assert len(orphans) == 3, orphans
    r = train_here("--out", out, *TINY[:2], "--steps", "3", *TINY[4:], "--resume")
    assert r.returncode == 0, r.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".run.tmp-k3j9x_2a", ".run.tmp-notes", "run"]
    assert (mine / "thesis.txt").read_text() == "thesis"


def test_resuming_a_finished_run_rewrites_nothing_and_prints_its_summary(trained, tmp_path):
    out, first = copy_of(trained, tmp_path / "run"), trained
    before = tree(tmp_path)
    again = train_here("--out", out, *TINY, "--resume")
    assert again.returncode == 0, again.stderr[-2000:]
    assert "nothing to do" in again.stderr
    assert tree(tmp_path) == before  # card, weights, config and state untouched
    card = (out / "card.md").read_text()
    assert "training time 0.0 s" not in card and "nan" not in card.lower()
    summary, recorded = (json.loads(r.stdout.splitlines()[-1]) for r in (again, first))
    assert summary.pop("checkpoint") == str(out) and recorded.pop("checkpoint") == str(trained.out)  # where it is now
    assert summary == recorded


def test_a_resumed_runs_card_counts_the_whole_run(trained, tmp_path):
    from core.training.trainer import STATE_JSON
    out = copy_of(trained, tmp_path / "run")
    first = json.loads((out / STATE_JSON).read_text())
    r = train_here("--out", out, *TINY[:2], "--steps", "3", *TINY[4:], "--resume")
    assert r.returncode == 0, r.stderr[-2000:]
    second = json.loads((out / STATE_JSON).read_text())
    assert second["tokens"] > first["tokens"] > 0 and second["seconds"] >= first["seconds"] > 0
    summary = json.loads(r.stdout.splitlines()[-1], parse_constant=lambda c: pytest.fail(f"{c} in the summary"))
    assert summary["steps"] == 3 and summary["seconds"] >= first["seconds"] and summary["tokens_per_s"] > 0


def test_a_kill_while_the_old_copy_is_deleted_leaves_it_ours(trained, tmp_path, monkeypatch):
    """The suite's random-SIGKILL test once landed while ``.run.old`` was being deleted: ``shutil.rmtree`` had taken
    the marker first, and every later write refused the half-deleted folder as someone else's. The marker now goes
    last: a kill after any one deletion leaves a folder the next write still knows as its own."""
    from core.io import checkpoint
    out = copy_of(trained, tmp_path / "run")
    old = tmp_path / ".run.old"
    shutil.copytree(out, old)
    (old / checkpoint.LEFTOVER_MARKER).write_text("ours")
    deleted = []
    real_unlink = Path.unlink

    def killed_after_one(self, missing_ok=False):
        if deleted:
            raise KeyboardInterrupt("killed")  # the process ends here
        deleted.append(self.name)
        return real_unlink(self, missing_ok=missing_ok)
    monkeypatch.setattr(Path, "unlink", killed_after_one)
    with pytest.raises(KeyboardInterrupt):
        checkpoint._remove_marked(old)
    monkeypatch.undo()
    assert deleted and deleted[0] != checkpoint.LEFTOVER_MARKER and (old / checkpoint.LEFTOVER_MARKER).is_file()
    checkpoint.check_leftovers(out)  # still ours: no refusal
    r = train_here("--out", out, *TINY[:2], "--steps", "3", *TINY[4:], "--resume")
    assert r.returncode == 0, r.stderr[-2000:]
    assert not old.exists()


def test_a_kill_between_the_marker_and_the_folder_leaves_an_empty_dot_old_that_is_removed(trained, tmp_path):
    """The random-SIGKILL test failed in CI once more (stop 46's submission): the marker goes last, but it has to go
    before ``rmdir`` can, and a kill between the two left an empty ``.run.old`` that every later write refused. An
    empty folder holds nothing to lose: it is removed; one holding anything of someone else's is still refused."""
    from core.io import checkpoint
    out = copy_of(trained, tmp_path / "run")
    old = tmp_path / ".run.old"
    old.mkdir()  # what _remove_marked leaves when killed after its last unlink
    checkpoint.check_leftovers(out)
    r = train_here("--out", out, *TINY[:2], "--steps", "3", *TINY[4:], "--resume")
    assert r.returncode == 0, r.stderr[-2000:]
    assert not old.exists()
    old.mkdir()
    (old / "notes.txt").write_text("mine")
    with pytest.raises(checkpoint.CheckpointError, match="refusing to delete"):
        checkpoint.check_leftovers(out)
    assert (old / "notes.txt").read_text() == "mine"


def test_an_empty_temporary_of_a_dead_writer_is_cleaned(tmp_path):
    """``mkdtemp`` comes before the marker: a kill between them leaves an empty ``.NAME.tmp-PID-…`` that
    :func:`core.io.checkpoint.clean_temporaries` removes once that process is gone (never a live writer's)."""
    from core.io import checkpoint
    dead = tmp_path / ".run.tmp-999999999-abc"
    live = tmp_path / f".run.tmp-{os.getpid()}-abc"
    dead.mkdir(), live.mkdir()
    assert checkpoint.clean_temporaries(tmp_path / "run") == [dead]
    assert not dead.exists() and live.exists()


def test_init_from_starts_at_that_models_weights_and_tokenizer_and_says_so(trained, tmp_path):
    """``--init-from`` (fine-tuning on more data, issue 31's CPU recipe): with a vanishing learning rate the run ends
    where its starting model was, not where the same seed's random weights are; the meta and the quoted command name
    the starting point; another task or another shape is refused before any step."""
    import torch
    from core.io import checkpoint
    start = checkpoint.load(trained.out)
    still = ["--lr", "1e-12", "--schedule", "constant", "--warmup", "0"]
    assert TINY[-2] == "--warmup"
    args = TINY[:-2]
    r = train_here("--out", tmp_path / "tuned", *args, *still, "--init-from", trained.out)
    assert r.returncode == 0, r.stderr[-2000:]
    tuned = checkpoint.load(tmp_path / "tuned")
    for (name, a), b in zip(start.model.state_dict().items(), tuned.model.state_dict().values()):
        assert torch.allclose(a, b, atol=1e-6), name
    assert tuned.tokenizer.to_str() == start.tokenizer.to_str()
    assert tuned.meta["init_from"]["model"] == str(trained.out) and tuned.meta["init_from"]["step"] == 2
    assert f"--init-from {trained.out}" in tuned.meta["command"]
    r = train_here("--out", tmp_path / "fresh", *args, *still)
    fresh = checkpoint.load(tmp_path / "fresh")
    assert not torch.allclose(fresh.model.embed.tokens.weight, start.model.embed.tokens.weight)
    r = train_here("--out", tmp_path / "other", *TINY[2:], "--task", "reverse", "--init-from", trained.out)
    assert r.returncode == 2 and "is a 'copy' model; this run's task is 'reverse'" in r.stderr
    r = train_here("--out", tmp_path / "wide", *TINY, "--d-model", "24", "--init-from", trained.out)
    assert r.returncode == 2 and "has another shape: d_model 24 here, 16 there" in r.stderr, r.stderr
