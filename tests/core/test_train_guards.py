"""The training CLI refuses what it must not do: destroy a folder it did not create (``--out``), run with a flag
outside its range, save or print non-finite numbers, resume from a tampered state, leave temporaries behind after
a kill, or overwrite a finished run's card with empty figures.

Every run is tiny (copy, d_model 16, a few steps, one thread) and writes only under ``tmp_path``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--task", "copy", "--steps", "2", "--d-model", "16", "--heads", "2", "--d-ff", "32", "--layers", "1",
        "--threads", "1", "--batch-size", "4", "--seq-len", "4", "--eval-every", "1000", "--warmup", "2"]


def train_cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "core.train", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ, OMP_NUM_THREADS="1"))


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
    line = one_error_line(train_cli("--out", victim, *TINY))
    assert "refusing" in line and str(victim) in line
    assert tree(tmp_path) == before  # nothing deleted, renamed (no .victim.old) or left behind


def test_out_replaces_its_own_checkpoint(tmp_path):
    out = tmp_path / "run"
    for _ in range(2):
        r = train_cli("--out", out, *TINY)
        assert r.returncode == 0, r.stderr[-2000:]
    assert [p.name for p in tmp_path.iterdir()] == ["run"]
